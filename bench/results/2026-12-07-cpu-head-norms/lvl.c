/* lvl.c: the AVX2 nibble level (cpu_q8n_avx2) over the default model's head,
 * one thread, the final hidden rows of the first 256 tokens of a prompt as
 * the head's inputs: time of a pass with lists (best and mean of all
 * passes), for 1 token (every 9th position) and 4 (positions t..t+3),
 * without (argv[3] 0) and with (1) the group norms; groups kept and passed
 * over a token. */
#include <time.h>
#include "rows.h"
#include "backend/cpu/cpu_screen_nib.h"
#include "backend/cpu/cpu_screen_q8.h"

static double now_s(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }

int main(int argc, char **argv)
{
    const char *mp = argv[1], *idp = argv[2];
    const int cut = atoi(argv[3]);
    head_rows hr;
    if (head_rows_load(mp, idp, 256, &hr))
        return 1;
    const int n = hr.n, D = hr.D, V = hr.V, nbk = D / 32;
    const uint8_t *W = hr.W, *act = hr.act;
    const size_t rb = (size_t)nbk * 34;
    cpu_q8s s; cpu_q8n sn;
    if (cpu_q8s_build(&s, W, rb, V, D) || cpu_q8n_build(&sn, W, rb, V, D)) return 1;
    float *dx = malloc(4 * nbk * n), *dh = malloc(4 * nbk * n), *tb = malloc(4 * nbk * n), *e2f = malloc(4 * n), *xn = malloc(4 * n);
    int32_t *cx = malloc(4 * nbk * n), *sx = malloc(4 * nbk * n);
    for (int t = 0; t < n; t++) {
        double e2 = cpu_q8s_token(&s, act + t * rb, dx + t * nbk, cx + t * nbk);
        e2f[t] = cpu_q8n_token(&sn, act + t * rb, e2, dh + t * nbk, sx + t * nbk, tb + t * nbk);
        xn[t] = cpu_q8n_token_norm(&sn, act + t * rb);
    }
    static int32_t grp[4][4096];
    static float up[4][4096];
    for (int nt = 1; nt <= 4; nt += 3) {
        double best = 1e30, sum = 0;
        long kept = 0, passed = 0;
        int reps = 0;
        for (int rep = 0; rep < 5; rep++)
            for (int t0 = 0; t0 + nt <= n; t0 += 9) {
                cpu_q8n_list l[4];
                for (int t = 0; t < nt; t++) cpu_q8n_list_init(&l[t], grp[t], up[t], 4096, NULL);
                double a = now_s();
                cpu_q8n_avx2(&sn, 0, sn.ng, act + t0 * rb, rb, nt, dh + t0 * nbk, sx + t0 * nbk, tb + t0 * nbk, e2f + t0,
                             cut ? xn + t0 : NULL, l, NULL, 0, NULL, NULL, 0);
                double dt = now_s() - a;
                best = fmin(best, dt); sum += dt; reps++;
                for (int t = 0; t < nt; t++) kept += l[t].n;
                passed += l[0].passed;
            }
        printf("norms %d, %d token%s: best %.3f ms, mean %.3f ms; groups kept a token %.1f, passed over %.1f of %lld\n",
               cut, nt, nt > 1 ? "s" : "", 1e3 * best, 1e3 * sum / reps, (double)kept / reps / nt,
               (double)passed / reps, (long long)sn.ng);
    }
    return 0;
}
