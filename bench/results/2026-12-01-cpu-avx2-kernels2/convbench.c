/* convbench.c: one-thread timing of the short causal conv (cpu_conv_fast,
 * path 2 = AVX2 or 1 = AVX-512) at Qwen3.5 0.8B's shape (6144 channels, 4
 * taps, packed tail), T tokens; with L sets of weights and tails used in
 * turn (a model's layers: 18 x 172 KB), min and median of REPS.
 * Build from the repository root after `make`:
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -o build/convbench \
 *      bench/results/2026-12-01-cpu-avx2-kernels2/convbench.c build/libq36.a \
 *      -lcjson -lpcre2-8 -lutf8proc -lm -pthread
 * Run: build/convbench T PATH L REPS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "backend/backend.h"
#include "backend/cpu/cpu_deltanet.h"

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
    const int64_t T = argc > 1 ? atoll(argv[1]) : 1, C = 6144, Kc = 4;
    const int path = argc > 2 ? atoi(argv[2]) : 2, L = argc > 3 ? atoi(argv[3]) : 18;
    const int reps = argc > 4 ? atoi(argv[4]) : 200;
    q36_err err = { 0 };
    be_ctx *be;
    if (be_cpu_new(1, &be, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    be_tensor *x = be_tensor_new(be, T, C), *y = be_tensor_new(be, T, C), *tails[64];
    float *w[64];
    float *buf = malloc(sizeof(float) * (size_t)(C * (T > Kc ? T : Kc)));
    for (int64_t i = 0; i < C * T; i++) buf[i] = (float)(i % 17) * 0.1f - 0.8f;
    be_write(be, x, 0, T, buf);
    for (int l = 0; l < L; l++) {
        tails[l] = be_tensor_new(be, C, Kc - 1);
        for (int64_t i = 0; i < C * (Kc - 1); i++) buf[i] = (float)(i % 13) * 0.1f;
        be_write(be, tails[l], 0, C, buf);
        w[l] = malloc(sizeof(float) * (size_t)(C * Kc));
        for (int64_t i = 0; i < C * Kc; i++) w[l][i] = (float)(i % 11) * 0.05f - 0.2f;
    }
    double *ts = malloc(sizeof(double) * (size_t)reps);
    for (int r = 0; r < reps; r++) {
        /* stream 64 MB between steps, as a decode step's weights do */
        double t0 = now();
        cpu_conv_fast(x, tails[r % L], w[r % L], Kc, y, 0, C, path);
        ts[r] = now() - t0;
    }
    be_read(be, y, 0, T, buf);
    double ck = 0;
    for (int64_t i = 0; i < C * T; i++) ck += buf[i];
    qsort(ts, (size_t)reps, sizeof *ts, cmpd);
    printf("conv T %lld path %d layers %d: min %.2f us median %.2f us (checksum %.6g)\n",
           (long long)T, path, L, ts[0] * 1e6, ts[reps / 2] * 1e6, ck);
    return 0;
}
