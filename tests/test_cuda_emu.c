/* test_cuda_emu.c: CUDA kernels checked on the CPU through their host
 * emulations (built only when the CUDA backend is: the Makefile leaves
 * tests/test_cuda_*.c out otherwise). The kernels are phase functions
 * that run on the device and on the host; the emulation runs the same
 * code block by block, phase by phase, every thread index in turn, with
 * shared memory filled with NaN first. What the GPU alone can show (the
 * device's rounding, races, launch limits) is left to
 * tests/gpu/test_backend_cuda.c.
 *
 * The grouped expert products (cuda_moe.h): every (token, rank) row's
 * outputs against the product in double of the same f32 weights and rows.
 * Each output is a sequential f32 sum of K rounded products, so its error
 * is at most (K + 2) u sum_k |w_k x_k| (u = 2^-24, first order); a row
 * sent to the wrong expert, output or tile gives errors of the order of
 * that sum. Shapes: experts with no rows, with one tile and with several
 * (64 and 65 rows), outputs and K not multiples of the tiles, top-1/3/8,
 * one x row per token or per (token, rank), ids outside [0, E) (read as
 * expert 0, as on the device). (The chunked delta rule's emulation is
 * checked in tests/test_deltanet_chunk.c.) */
#include "test.h"

#include <stdbool.h>

#include "backend/cuda/cuda_moe.h"

#define U 0x1p-24

/* sel: T x k draws of distinct experts, or (split > 0, k = 1) the first
 * `split` rows on expert 0 and the rest on expert 1; bad: every 7th id
 * replaced by -1 or E */
static void test_moe(int64_t K, int64_t N, int64_t E, int64_t k, int64_t T, bool per_rank,
                     int split, bool bad)
{
    char name[128];
    snprintf(name, sizeof name, "cuda_emu.moe_gemm_k%lld_n%lld_e%lld_top%lld_t%lld%s%s%s",
             (long long)K, (long long)N, (long long)E, (long long)k, (long long)T,
             per_rank ? "_rank_rows" : "", split ? "_split" : "", bad ? "_bad_ids" : "");
    t_rng r = t_rng_named(name);
    const int64_t Q = T * k, XR = per_rank ? Q : T;
    float *W = t_randv(&r, E * N * K, 1), *x = t_randv(&r, XR * K, 1);
    float *y = malloc(sizeof(float) * (size_t)(Q * N));
    int32_t *sel = malloc(sizeof(int32_t) * (size_t)Q);
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < k; i++) {
            int32_t e;
            bool again;
            do {
                e = split ? (t < split ? 0 : 1) : (int32_t)(t_next(&r) % (uint64_t)E);
                again = false;
                for (int64_t j = 0; j < i; j++)
                    again |= sel[t * k + j] == e;
            } while (again && !split);
            sel[t * k + i] = e;
        }
    if (bad)
        for (int64_t q = 3; q < Q; q += 7)
            sel[q] = q % 2 ? -1 : (int32_t)E;
    for (int64_t i = 0; i < Q * N; i++)
        y[i] = NAN;
    const int rc = cuda_moe_emulate(W, K, N, E, x, XR, K, sel, k, k, T, y, N);
    double worst = 0;
    int64_t at = 0;
    for (int64_t q = 0; q < Q && !rc; q++) {
        const int64_t e = sel[q] < 0 || sel[q] >= E ? 0 : sel[q];
        const float *xr = x + (per_rank || k == 1 ? q : q / k) * K;
        for (int64_t n = 0; n < N; n++) {
            const float *wr = W + (e * N + n) * K;
            double s = 0, mag = 0;
            for (int64_t i = 0; i < K; i++) {
                s += (double)wr[i] * xr[i];
                mag += fabs((double)wr[i] * xr[i]);
            }
            const double got = y[q * N + n];
            const double d = isnan(got) ? INFINITY : fabs(got - s) / ((double)(K + 2) * U * mag);
            if (d > worst) {
                worst = d;
                at = q * N + n;
            }
        }
    }
    if (rc)
        t_fail(name, "the emulation returned %d", rc);
    else
        t_check(name, worst <= 1.0, "output (row %lld, %lld): %.9g, %.3g of the bound",
                (long long)(at / N), (long long)(at % N), y[at], worst);
    printf("#   worst error %.3g of the bound\n", worst);
    free(W);
    free(x);
    free(y);
    free(sel);
}

int main(void)
{
    test_moe(256, 96, 8, 8, 9, false, 0, false);        /* every expert, 72 rows */
    test_moe(512, 64, 64, 8, 33, false, 0, false);
    test_moe(256, 33, 256, 8, 10, false, 0, false);     /* most experts without rows */
    test_moe(2048, 512, 16, 8, 200, false, 0, false);   /* ~100 rows an expert: 2 tiles */
    test_moe(512, 2048, 16, 8, 70, true, 0, false);     /* down: a row per (token, rank) */
    test_moe(40, 31, 3, 1, 100, false, 0, false);       /* top-1, K not a multiple of 32 */
    test_moe(96, 50, 4, 3, 30, false, 0, true);         /* ids outside [0, E) */
    test_moe(64, 65, 2, 1, 129, false, 64, false);      /* 64 and 65 rows: tile edges */
    return t_exit();
}
