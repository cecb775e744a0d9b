/* kbench.c (2026-12-01-cpu-avx2-kernels/kbench.c, copied unchanged but for
 * this comment): one-thread timing of the tile kernel cpu_gemm_*() picks
 * for a weight type, through an N x T matmul as cpu_matmul.c's mm_task goes
 * (16-row items, 64-token tiles; T = 1: one call over all rows, as a
 * decode step's long runs), min of REPS; prints ns and TSC ticks per row,
 * block and token (a block: 32 elements for Q8_0, 256 for the K-quants).
 * Build from the repository root after `make`:
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -o build/kbench \
 *      bench/results/2026-12-01-cpu-avx2-kernels2/kbench.c build/libq36.a \
 *      -lcjson -lpcre2-8 -lutf8proc -lm -pthread
 * Run: [Q36_QUANT_PATH_MAX=avx2] build/kbench q8|q8loop|q4|q6 K N T REPS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <x86intrin.h>
#include "backend/cpu/cpu_gemm.h"
#include "backend/cpu/cpu_gemm_q8.h"
#include "backend/cpu/cpu_internal.h"
#include "quant/quant.h"
#include "quant/fp16.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t nx(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

static void run_mm(cpu_tile_fn fn, int64_t K, int64_t N, const uint8_t *w, uint64_t wrb,
                   const uint8_t *a, uint64_t arb, int64_t T, float *y)
{
    if (T == 1) { fn(K, w, wrb, N, a, arb, 1, y, N); return; }
    for (int64_t n0 = 0; n0 < N; n0 += 16) {
        const int64_t n1 = N - n0 < 16 ? N : n0 + 16;
        for (int64_t t0 = 0; t0 < T; t0 += 64) {
            const int64_t t1 = T - t0 < 64 ? T : t0 + 64;
            fn(K, w + (uint64_t)n0 * wrb, wrb, n1 - n0, a + (uint64_t)t0 * arb, arb, t1 - t0, y + t0 * N + n0, N);
        }
    }
}

static void loopfn(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr, const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    quant_dot_fn dot = quant_vec_dot_fn_path(QT_Q8_0, QUANT_PATH_AVX2);
    for (int64_t r = 0; r < nr; r++) for (int64_t t = 0; t < nt; t++) y[t * ldy + r] = dot(K, w + r * wrb, a + t * arb);
}
int main(int argc, char **argv)
{
    cpu_fdot_init();
    const char *kind = argc > 1 ? argv[1] : "q8";
    int64_t K = argc > 2 ? atoll(argv[2]) : 1024, N = argc > 3 ? atoll(argv[3]) : 3584, T = argc > 4 ? atoll(argv[4]) : 64;
    int reps = argc > 5 ? atoi(argv[5]) : 20;
    cpu_tile_fn fn; uint64_t wrb, arb; int bs; uint32_t wt, at;
    if (!strcmp(kind, "q8")) { fn = cpu_gemm_q8_0(); wt = QT_Q8_0; at = QT_Q8_0; bs = 32; }
    else if (!strcmp(kind, "q8ref")) { fn = cpu_gemm_q8_0_avx2; wt = QT_Q8_0; at = QT_Q8_0; bs = 32; }
    else if (!strcmp(kind, "q8loop")) { fn = loopfn; wt = QT_Q8_0; at = QT_Q8_0; bs = 32; }
    else if (!strcmp(kind, "q4")) { fn = cpu_gemm_q4_K(); wt = QT_Q4_K; at = QT_Q8_K; bs = 256; }
    else if (!strcmp(kind, "q6")) { fn = cpu_gemm_q6_K(); wt = QT_Q6_K; at = QT_Q8_K; bs = 256; }
    else { fprintf(stderr, "kind?\n"); return 1; }
    wrb = (uint64_t)(K / bs) * (wt == QT_Q8_0 ? 34 : wt == QT_Q4_K ? 144 : 210);
    arb = (uint64_t)(K / bs) * (at == QT_Q8_0 ? 34 : 292);
    uint8_t *w = malloc(wrb * N), *a = malloc(arb * T);
    for (uint64_t i = 0; i < wrb * N; i++) w[i] = (uint8_t)nx();
    /* sane scales */
    float *x = malloc(sizeof(float) * K);
    for (int64_t t = 0; t < T; t++) {
        for (int64_t k = 0; k < K; k++) x[k] = (float)((int64_t)(nx() % 2001) - 1000) / 1000.f;
        quant_act_quantize(at, x, a + t * arb, K);
    }
    for (int64_t r = 0; r < N; r++) for (int64_t b = 0; b < K / bs; b++) {
        uint8_t *p = w + r * wrb + b * (wrb / (K / bs));
        uint16_t h = quant_f32_to_f16(0.01f);
        if (wt == QT_Q6_K) memcpy(p + 208, &h, 2); else { memcpy(p, &h, 2); if (wt == QT_Q4_K) memcpy(p + 2, &h, 2); }
    }
    float *y = malloc(sizeof(float) * N * T);
    double best = 1e30; uint64_t bc = ~0ull;
    for (int i = 0; i < reps; i++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        uint64_t c0 = __rdtsc();
        run_mm(fn, K, N, w, wrb, a, arb, T, y);
        uint64_t c1 = __rdtsc();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double dt = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
        if (dt < best) best = dt;
        if (c1 - c0 < bc) bc = c1 - c0;
    }
    double u = (double)N * (K / bs) * T;
    double cs = 0; for (int64_t i = 0; i < N * T; i++) cs += y[i];
    printf("%s K=%lld N=%lld T=%lld: %.3f ms, %.3f ns / row.block.token, %.2f tsc cycles  (chk %g)\n", kind,
           (long long)K, (long long)N, (long long)T, best * 1e3, best * 1e9 / u, bc / u, cs);
    return 0;
}
