/* test_cpu_gemm_k6.c: the Q6_K tile kernels of cpu_gemm.h (cpu_gemm_k6.c)
 * give, for every output, the bits of cpu_dot_q6_K_ggml, the per-output
 * dot that cpu_matmul.c's pick_dot takes for Q6_K (ggml's x86 order):
 *
 *   gemm_k6.q6_K_K<K>_<nr>x<nt>[_padded|_extreme]_dot_ref
 *       the plain C order (cpu_dot_q6_K_ggml_ref) equals cpu_dot_q6_K_ggml
 *   ..._<kernel>   (ref, avx2, avx512vnni, picked)
 *       every output of the tile equals cpu_dot_q6_K_ggml of its row and
 *       token bit for bit (so also batch-invariant), and the padding of a
 *       wider output stride stays untouched
 *
 * over the reduction lengths of the Qwen3.5/3.6 files (1024, 2048, 3584,
 * 512) and 256, tiles of 1..13 rows x 1..20 tokens that are not multiples
 * of any kernel's register block (one token included), padded weight,
 * activation and output strides, and an extreme case (every code 63,
 * scales -128 and 127, activations at +-127 and -128) at the integer
 * limits the kernels' 16-bit pair sums must hold. A kernel this CPU lacks
 * is named on a "note" line and not run.
 *
 * `test_cpu_gemm_k6 bench` prints (does not assert) one-thread timings of
 * the tile kernel against the per-output dot on the FFN shapes, looped as
 * cpu_matmul.c's mm_task does (16-row items, 64-token tiles); noisy. */
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "backend/cpu/cpu_gemm.h"
#include "backend/cpu/cpu_internal.h"
#include "quant/fp16.h"
#include "quant/quant.h"

#define WB 210      /* Q6_K block */
#define AB 292      /* Q8_K block */

/* n weight rows of K elements, stride bytes apart: random bytes (every
 * code and scale) with f16 scales of both signs over five decades; extreme:
 * every code 63, sub-block scales alternately -128 and 127. */
static uint8_t *w_rows(t_rng *r, int64_t K, int64_t n, uint64_t stride, int extreme)
{
    uint8_t *m = malloc(stride * (uint64_t)n);
    for (uint64_t i = 0; i < stride * (uint64_t)n; i++)
        m[i] = (uint8_t)t_next(r);
    for (int64_t i = 0; i < n; i++)
        for (int64_t b = 0; b < K / 256; b++) {
            uint8_t *blk = m + (uint64_t)i * stride + (uint64_t)b * WB;
            if (extreme) {
                memset(blk, 0xFF, 192);
                for (int k = 0; k < 16; k++)
                    blk[192 + k] = (uint8_t)(k & 1 ? 127 : 0x80);
            }
            const float d = powf(10.0f, 5.0f * t_uniform(r) - 6.0f);
            const uint16_t h = quant_f32_to_f16(t_next(r) & 1 ? -d : d);
            memcpy(blk + 208, &h, 2);
        }
    return m;
}

/* n activation rows: quant_act_quantize (Q8_K) of gaussian rows of varied
 * scale, as cpu_matmul.c makes them; extreme: values of +-1 with one -1.01
 * per 64 (codes +-127 and -128) */
static uint8_t *a_rows(t_rng *r, int64_t K, int64_t n, uint64_t stride, int extreme)
{
    uint8_t *m = malloc(stride * (uint64_t)n);
    float *x = malloc(sizeof(float) * (size_t)K);
    memset(m, 0xA5, stride * (uint64_t)n);
    for (int64_t i = 0; i < n; i++) {
        const float s = powf(10.0f, 4.0f * t_uniform(r) - 2.0f);
        for (int64_t k = 0; k < K; k++)
            x[k] = extreme ? (k % 64 == 5 ? -1.01f : (t_next(r) & 1 ? 1.0f : -1.0f)) : s * t_gauss(r);
        quant_act_quantize(QT_Q8_K, x, m + (uint64_t)i * stride, K);
    }
    free(x);
    return m;
}

#define LDY_PAD 3
#define SENTINEL 0x7FC0DEADu      /* a NaN payload no kernel writes */

/* Runs fn into a fresh padded output and compares with want (nt x nr). */
static void check_tile(const char *name, cpu_tile_fn fn, int64_t K, const uint8_t *w, uint64_t wrb,
                       int64_t nr, const uint8_t *a, uint64_t arb, int64_t nt, const float *want)
{
    const int64_t ldy = nr + LDY_PAD;
    uint32_t *y = malloc(sizeof(float) * (size_t)(ldy * nt));
    for (int64_t i = 0; i < ldy * nt; i++)
        y[i] = SENTINEL;
    fn(K, w, wrb, nr, a, arb, nt, (float *)y, ldy);
    int64_t bad = 0, first_t = -1, first_r = -1, pad_hit = 0;
    for (int64_t t = 0; t < nt; t++) {
        for (int64_t r = 0; r < nr; r++)
            if (y[t * ldy + r] != quant_f32_bits(want[t * nr + r]) && bad++ == 0) {
                first_t = t;
                first_r = r;
            }
        for (int64_t r = nr; r < ldy; r++)
            pad_hit += y[t * ldy + r] != SENTINEL;
    }
    if (bad)
        t_fail(name, "%lld of %lld outputs differ; first (token %lld, row %lld): %.9g, want %.9g",
               (long long)bad, (long long)(nr * nt), (long long)first_t, (long long)first_r,
               quant_bits_f32(y[first_t * ldy + first_r]), want[first_t * nr + first_r]);
    else if (pad_hit)
        t_fail(name, "%lld padding floats of y written", (long long)pad_hit);
    else
        t_ok(name);
    free(y);
}

typedef struct {
    const char *isa;
    cpu_tile_fn fn;            /* NULL: this CPU lacks it */
} kernel;

/* pad: extra bytes in the weight and activation row strides (odd, so rows
 * start unaligned); extreme: w_rows/a_rows' integer-limit data */
static void test_q6_K(int64_t K, int64_t nr, int64_t nt, int pad, int extreme)
{
    char name[128], cname[160];
    snprintf(name, sizeof name, "gemm_k6.q6_K_K%lld_%lldx%lld%s%s", (long long)K, (long long)nr,
             (long long)nt, pad ? "_padded" : "", extreme ? "_extreme" : "");
    t_rng rng = t_rng_named(name);
    const uint64_t wrb = (uint64_t)K / 256 * WB + (uint64_t)pad * 7,
                   arb = (uint64_t)K / 256 * AB + (uint64_t)pad * 13;
    uint8_t *w = w_rows(&rng, K, nr, wrb, extreme), *a = a_rows(&rng, K, nt, arb, extreme);
    float *want = malloc(sizeof(float) * (size_t)(nr * nt));
    int64_t ref_bad = 0;
    for (int64_t t = 0; t < nt; t++)
        for (int64_t r = 0; r < nr; r++) {
            const uint8_t *wr = w + (uint64_t)r * wrb, *at = a + (uint64_t)t * arb;
            want[t * nr + r] = cpu_dot_q6_K_ggml(K, wr, at);
            ref_bad += quant_f32_bits(cpu_dot_q6_K_ggml_ref(K, wr, at)) != quant_f32_bits(want[t * nr + r]);
        }
    snprintf(cname, sizeof cname, "%s_dot_ref", name);
    t_check(cname, ref_bad == 0, "%lld outputs of cpu_dot_q6_K_ggml_ref differ from cpu_dot_q6_K_ggml",
            (long long)ref_bad);
    const kernel ks[] = {
        { "ref", cpu_gemm_q6_K_ref },
        { "avx2", quant_path_available(QUANT_PATH_AVX2) ? cpu_gemm_q6_K_avx2 : NULL },
        { "avx512vnni", quant_path_available(QUANT_PATH_AVX512VNNI) ? cpu_gemm_q6_K_avx512vnni : NULL },
        { "picked", cpu_gemm_q6_K() },
    };
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        snprintf(cname, sizeof cname, "%s_%s", name, ks[i].isa);
        if (!ks[i].fn)
            printf("note %s: not on this CPU, not run\n", cname);
        else
            check_tile(cname, ks[i].fn, K, w, wrb, nr, a, arb, nt, want);
    }
    free(want);
    free(w);
    free(a);
}

/* ------------------------------------------------------------ bench */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define ITEM_ROWS 16    /* cpu_matmul.c's ROW_GRAIN */
#define TILE_TOK 64     /* cpu_matmul.c's TOK_TILE */

/* One thread through an N x T matmul as mm_task goes: 16-row items, within
 * an item 64-token tiles; fn a tile kernel, or NULL for the per-output dot
 * (rows outer, tokens inner). */
static void run_mm(cpu_tile_fn fn, int64_t K, int64_t N, const uint8_t *w, uint64_t wrb,
                   const uint8_t *a, uint64_t arb, int64_t T, float *y)
{
    for (int64_t n0 = 0; n0 < N; n0 += ITEM_ROWS) {
        const int64_t n1 = N - n0 < ITEM_ROWS ? N : n0 + ITEM_ROWS;
        for (int64_t t0 = 0; t0 < T; t0 += TILE_TOK) {
            const int64_t t1 = T - t0 < TILE_TOK ? T : t0 + TILE_TOK;
            if (fn) {
                fn(K, w + (uint64_t)n0 * wrb, wrb, n1 - n0, a + (uint64_t)t0 * arb, arb, t1 - t0,
                   y + t0 * N + n0, N);
                continue;
            }
            for (int64_t n = n0; n < n1; n++)
                for (int64_t t = t0; t < t1; t++)
                    y[t * N + n] = cpu_dot_q6_K_ggml(K, w + (uint64_t)n * wrb, a + (uint64_t)t * arb);
        }
    }
}

static double best_of(int reps, cpu_tile_fn fn, int64_t K, int64_t N, const uint8_t *w, uint64_t wrb,
                      const uint8_t *a, uint64_t arb, int64_t T, float *y)
{
    double best = 1e30;
    for (int i = 0; i < reps; i++) {
        const double t0 = now_s();
        run_mm(fn, K, N, w, wrb, a, arb, T, y);
        const double dt = now_s() - t0;
        best = dt < best ? dt : best;
    }
    return best;
}

static void bench(int reps)
{
    static const int64_t shapes[][3] = {      /* K, N, tokens */
        { 1024, 3584, 64 }, { 3584, 1024, 64 }, { 1024, 3584, 512 }, { 3584, 1024, 512 },
        { 1024, 3584, 1 },  { 3584, 1024, 1 }, { 1024, 65536, 1 },
    };
    t_rng rng = t_rng_named("bench");
    printf("one thread, best of %d, noisy; ns per (weight block x token)\n", reps);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t K = shapes[s][0], N = shapes[s][1], T = shapes[s][2];
        const uint64_t wrb = (uint64_t)K / 256 * WB, arb = (uint64_t)K / 256 * AB;
        uint8_t *w = w_rows(&rng, K, N, wrb, 0), *a = a_rows(&rng, K, T, arb, 0);
        float *y = malloc(sizeof(float) * (size_t)(N * T));
        const double units = 1e-9 * (double)(N * (K / 256) * T);
        const int r = T == 1 ? 20 * reps : reps;
        const double td = best_of(r, NULL, K, N, w, wrb, a, arb, T, y);
        const double t2 = quant_path_available(QUANT_PATH_AVX2)
                              ? best_of(r, cpu_gemm_q6_K_avx2, K, N, w, wrb, a, arb, T, y) : 0;
        const double t5 = quant_path_available(QUANT_PATH_AVX512VNNI)
                              ? best_of(r, cpu_gemm_q6_K_avx512vnni, K, N, w, wrb, a, arb, T, y) : 0;
        printf("q6_K K=%-5lld N=%-5lld T=%-4lld dot %8.3f ms (%6.2f ns)  avx2 tile %8.3f ms (%6.2f ns, "
               "%.2fx)  avx512 tile %8.3f ms (%6.2f ns, %.2fx)\n",
               (long long)K, (long long)N, (long long)T, 1e3 * td, td / units, 1e3 * t2, t2 / units,
               t2 > 0 ? td / t2 : 0.0, 1e3 * t5, t5 / units, t5 > 0 ? td / t5 : 0.0);
        free(w);
        free(a);
        free(y);
    }
}

int main(int argc, char **argv)
{
    cpu_fdot_init();
    if (argc > 1 && strcmp(argv[1], "bench") == 0) {
        bench(argc > 2 ? atoi(argv[2]) : 5);
        return t_exit();
    }
    static const int64_t Ks[] = { 1024, 2048, 3584, 512, 256 };
    static const int64_t shapes[][2] = {      /* nr, nt */
        { 13, 11 }, { 1, 1 }, { 4, 1 }, { 7, 1 }, { 1, 7 }, { 3, 5 }, { 4, 6 }, { 5, 20 },
        { 2, 13 }, { 9, 19 },
    };
    for (size_t k = 0; k < sizeof Ks / sizeof Ks[0]; k++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            test_q6_K(Ks[k], shapes[s][0], shapes[s][1], 0, 0);
    test_q6_K(1024, 6, 17, 1, 0);
    test_q6_K(3584, 13, 1, 1, 0);
    test_q6_K(512, 16, 64, 1, 0);
    test_q6_K(1024, 5, 7, 0, 1);
    test_q6_K(3584, 4, 1, 1, 1);
    return t_exit();
}
