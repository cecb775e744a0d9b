/* attnbench.c: timing of the tiled attention (cpu_attention_path, the best
 * path this CPU runs: AVX2 under Q36_QUANT_PATH_MAX=avx2) at Qwen3.5 0.8B's
 * shape (8 query heads over 2 KV heads, head 256, f16 caches), T query rows
 * at cache depth D, THREADS threads; min and median of REPS wall times,
 * ns per (query head, key) score. With "parts" (decode, T = 1): the four
 * AVX2 kernels alone on one KV head (4 queries over D keys), one thread.
 * Build from the repository root after `make`:
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -o build/attnbench \
 *      bench/results/2026-12-01-cpu-avx2-kernels2/attnbench.c build/libq36.a \
 *      -lcjson -lpcre2-8 -lutf8proc -lm -pthread
 * (-DOLD -I<old tree>/src and the old libq36.a: the tree before pv_rows.)
 * Env: Q36_BENCH_HEADS (query heads, default 8), Q36_BENCH_LAYERS (below).
 * Run: Q36_QUANT_PATH_MAX=avx2 build/attnbench T D THREADS REPS [parts[NQ]]
 * (partsNQ: NQ queries per KV head, as a prompt tile; default 4) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "backend/backend.h"
#include "backend/cpu/cpu_attn.h"

static uint64_t rng = 88172645463325252ull;
static float rnd(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((int64_t)(rng % 2001) - 1000) / 500.0f;
}
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int64_t T = argc > 1 ? atoll(argv[1]) : 1, D = argc > 2 ? atoll(argv[2]) : 4096;
    int th = argc > 3 ? atoi(argv[3]) : 1, reps = argc > 4 ? atoi(argv[4]) : 20;
    int parts = argc > 5 && !strncmp(argv[5], "parts", 5);
    const int64_t nq = parts && argv[5][5] ? atoll(argv[5] + 5) : 4;
    const int64_t H = getenv("Q36_BENCH_HEADS") ? atoll(getenv("Q36_BENCH_HEADS")) : 8, HKV = 2,
                  hd = 256, n = D + T;
    q36_err err = { 0 };
    be_ctx *be;
    if (be_cpu_new(th, &be, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    float *x = malloc(sizeof(float) * (size_t)(n * HKV * hd > T * H * hd ? n * HKV * hd : T * H * hd));
    /* LAYERS caches used in turn (Q36_BENCH_LAYERS, default 1): 8 at depth
     * 4096 are 64 MiB, past the L3, as a model's layers are */
    const int L = getenv("Q36_BENCH_LAYERS") ? atoi(getenv("Q36_BENCH_LAYERS")) : 1;
    be_tensor *kcs[64], *vcs[64];
    for (int l = 0; l < L; l++) {
        kcs[l] = be_tensor_new_f16(be, n, HKV * hd);
        vcs[l] = be_tensor_new_f16(be, n, HKV * hd);
    }
    be_tensor *kc = kcs[0], *vc = vcs[0];
    be_tensor *q = be_tensor_new(be, T, H * hd), *out = be_tensor_new(be, T, H * hd);
    for (int64_t i = 0; i < n * HKV * hd; i++) x[i] = rnd();
    for (int l = 0; l < L; l++)
        be_write(be, kcs[l], 0, n, x);
    for (int64_t i = 0; i < n * HKV * hd; i++) x[i] = rnd() * 0.5f;
    for (int l = 0; l < L; l++)
        be_write(be, vcs[l], 0, n, x);
    for (int64_t i = 0; i < T * H * hd; i++) x[i] = rnd();
    be_write(be, q, 0, T, x);
    double *ts = malloc(sizeof(double) * reps);
    const int path = cpu_attn_best_path();
    if (!parts) {
        be_shape s = { 0 };
        (void)s;
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            cpu_attention_path(be, path, q, kcs[r % L], vcs[r % L], D, H, HKV, hd, 1.0f / 16, out);
            ts[r] = now() - t0;
        }
        be_read(be, out, 0, T, x);
        double ck = 0; for (int64_t i = 0; i < T * H * hd; i++) ck += x[i] * (double)(i % 7 + 1);
        qsort(ts, reps, sizeof *ts, cmpd);
        double sc = (double)T * H * (D + (T + 1) / 2.0);
        printf("path %d T %lld D %lld threads %d: min %.3f ms median %.3f ms, %.2f ns/score (min), checksum %.9g\n",
               path, (long long)T, (long long)D, th, ts[0] * 1e3, ts[reps / 2] * 1e3, ts[0] * 1e9 / sc, ck);
        return 0;
    }
    /* the parts, one KV head: nq queries over n keys */
    const cpu_attn_kernels *ks = &cpu_attn256_kernels;
    const int64_t sld = (n + CPU_ATTN_KB - 1) / CPU_ATTN_KB * CPU_ATTN_KB + 16;
    float *Q = malloc(sizeof(float) * nq * hd), *S = malloc(sizeof(float) * nq * sld);
    float *B = malloc(sizeof(float) * CPU_ATTN_KB * hd), *A = malloc(sizeof(float) * nq * hd * 8);
    for (int64_t i = 0; i < nq * hd; i++) Q[i] = rnd();
    const uint16_t *K = kc->data, *V = vc->data;
    const char *nm[4] = { "scores", "softmax", "vt", "pv" };
    for (int ph = 0; ph < 4; ph++) {
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            for (int64_t p0 = 0; p0 < n; p0 += CPU_ATTN_KB) {
                const int64_t nb = n - p0 < CPU_ATTN_KB ? n - p0 : CPU_ATTN_KB;
                if (ph == 0)
                    ks->scores(hd, nq, Q, K + p0 * kc->ld, kc->ld, 1, nb, 0.0625f, S + p0, sld);
                else if (ph == 2 || ph == 3) {
                    int64_t nv[64];
                    for (int i = 0; i < 64; i++) nv[i] = nb;
#ifdef OLD      /* built against the tree before pv_rows */
                    if (ph == 2 || p0 == 0)
                        ks->vt(nb, hd, V + p0 * vc->ld, vc->ld, 1, B);
                    if (ph == 3)
                        ks->pv(nq, hd, S + p0, sld, nv, B, A, nq);
#else
                    if (ph == 3)
                        ks->pv_rows(nq, hd, S + p0, sld, nv, V + p0 * vc->ld, vc->ld, 1, A);
#endif
                }
            }
            if (ph == 1)
                for (int64_t i = 0; i < nq; i++) ks->softmax(n, S + i * sld, 1);
            ts[r] = now() - t0;
        }
        qsort(ts, reps, sizeof *ts, cmpd);
        printf("%-8s min %.3f ms median %.3f ms (%lld keys, %lld queries)\n", nm[ph], ts[0] * 1e3,
               ts[reps / 2] * 1e3, (long long)n, (long long)nq);
    }
    return 0;
}
