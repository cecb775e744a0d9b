/* test_cpu_gemm_q8.c: the Q8_0 and F32 tile kernels of cpu_gemm_q8.h give,
 * for every output, the same bits as the per-output dot product that
 * cpu_matmul.c's pick_dot takes for them (the quant module's AVX2 Q8_0
 * kernel; cpu_dot_lanes for F32), over the real reduction lengths of the
 * Qwen3.5/3.6 files (1024, 2048, 3584, 6144) and short ones (32, 96), tile
 * shapes that are not multiples of any kernel's register block, one token
 * (decode), K past the AVX-512 kernel's pack limit (8224), more rows than
 * one pack meets (70; 33 at K 8224 for the AVX2 kernel's scale pack), K past
 * the AVX2 kernels' packs (65568 for a prompt, 262176 for one token), padded
 * row strides and a padded output stride (whose padding must stay untouched); the AVX2
 * kernel also with its activations' scales made once beforehand (avx2_da). Every kernel this CPU runs is checked; a kernel
 * the CPU lacks is a skip, and so are the Q8_0 cases on a CPU without
 * AVX2: the order being checked is that of an AVX2 kernel.
 *
 * `test_cpu_gemm_q8 bench` prints (does not assert) one-thread timings of
 * each tile kernel against the per-output loop on real shapes; noisy. */
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "backend/cpu/cpu_gemm_q8.h"
#include "backend/cpu/cpu_internal.h"
#include "quant/fp16.h"
#include "quant/quant.h"

#define QB 34

static float gauss(t_rng *r)
{
    float u1 = t_uniform(r) + 0x1p-25f, u2 = t_uniform(r);
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
}

/* n rows of K Q8_0 elements, stride bytes apart. Weights: every code
 * (-128 included) with f16 scales of both signs over five decades;
 * activations: quant_act_quantize of gaussian rows of varied scale, as
 * cpu_matmul.c makes them. */
static uint8_t *q8_rows(t_rng *r, int64_t K, int64_t n, uint64_t stride, int act)
{
    uint8_t *m = malloc(stride * (uint64_t)n);
    float *x = malloc(sizeof(float) * (size_t)K);
    for (uint64_t i = 0; i < stride * (uint64_t)n; i++)
        m[i] = (uint8_t)t_next(r);
    for (int64_t i = 0; i < n; i++) {
        uint8_t *row = m + (uint64_t)i * stride;
        if (act) {
            const float s = powf(10.0f, 4.0f * t_uniform(r) - 2.0f);
            for (int64_t k = 0; k < K; k++)
                x[k] = s * gauss(r);
            quant_act_quantize(QT_Q8_0, x, row, K);
        } else {
            for (int64_t b = 0; b < K / 32; b++) {
                float d = powf(10.0f, 5.0f * t_uniform(r) - 6.0f);
                uint16_t h = quant_f32_to_f16(t_next(r) & 1 ? -d : d);
                memcpy(row + b * QB, &h, 2);
            }
        }
    }
    free(x);
    return m;
}

static float *f32_rows(t_rng *r, int64_t K, int64_t n, uint64_t stride)
{
    float *m = malloc(stride * (uint64_t)n);
    for (uint64_t i = 0; i < stride / 4 * (uint64_t)n; i++)
        m[i] = gauss(r);
    return m;
}

#define LDY_PAD 3
#define SENTINEL 0x7FC0DEADu      /* a NaN payload no kernel writes */

/* Runs fn into a fresh padded output and compares with want (nt x nr). */
static void check_tile(const char *name, cpu_tile_fn fn, int64_t K, const uint8_t *w,
                       uint64_t wrb, int64_t nr, const uint8_t *a, uint64_t arb, int64_t nt,
                       const float *want)
{
    const int64_t ldy = nr + LDY_PAD;
    uint32_t *y = malloc(sizeof(float) * (size_t)(ldy * nt));
    for (int64_t i = 0; i < ldy * nt; i++)
        y[i] = SENTINEL;
    fn(K, w, wrb, nr, a, arb, nt, (float *)y, ldy);
    int64_t bad = 0, first_t = -1, first_r = -1, pad_hit = 0;
    for (int64_t t = 0; t < nt; t++) {
        for (int64_t r = 0; r < nr; r++) {
            uint32_t g = y[t * ldy + r], e = quant_f32_bits(want[t * nr + r]);
            if (g != e && bad++ == 0) {
                first_t = t;
                first_r = r;
            }
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

/* ------------------------------------------------------------- Q8_0 */

/* cpu_gemm_q8_0_avx2_da with its scales table made first, as cpu_matmul.c
 * makes it, and taken as cpu_matmul.c's token tiles take it: from a
 * multiple of 4 tokens on (here the first 4, then the rest) */
static void avx2_da(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr, const uint8_t *a,
                    uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    float *da = malloc(sizeof(float) * (size_t)cpu_q8_0_scales4_len(K, nt));
    cpu_q8_0_scales4(K, a, arb, nt, da);
    const int64_t t1 = nt > 4 ? 4 : nt;
    cpu_gemm_q8_0_avx2_da(K, w, wrb, nr, a, arb, da, t1, y, ldy);
    if (nt > t1)
        cpu_gemm_q8_0_avx2_da(K, w, wrb, nr, a + (uint64_t)t1 * arb, arb, da + t1 * (K / 32),
                              nt - t1, y + t1 * ldy, ldy);
    free(da);
}

static void test_q8_0(int64_t K, int64_t nr, int64_t nt, int pad)
{
    char name[128];
    snprintf(name, sizeof name, "gemm_q8.q8_0_K%lld_%lldx%lld%s", (long long)K, (long long)nr,
             (long long)nt, pad ? "_padded" : "");
    t_rng rng = t_rng_named(name);
    const uint64_t rb = (uint64_t)K / 32 * QB, wrb = rb + (uint64_t)pad * QB + (uint64_t)pad,
                   arb = rb + 2 * (uint64_t)pad * QB;
    uint8_t *w = q8_rows(&rng, K, nr, wrb, 0), *a = q8_rows(&rng, K, nt, arb, 1);
    const quant_dot_fn dot = quant_vec_dot_fn_path(QT_Q8_0, QUANT_PATH_AVX2);
    char cname[160];
    if (!dot) {
        snprintf(cname, sizeof cname, "%s_order", name);
        t_skip(cname, "this CPU has no AVX2: the order under test is the AVX2 kernel's");
        free(w);
        free(a);
        return;
    }
    float *want = malloc(sizeof(float) * (size_t)(nr * nt));
    int64_t ref_bad = 0;
    for (int64_t t = 0; t < nt; t++)
        for (int64_t r = 0; r < nr; r++) {
            want[t * nr + r] = dot(K, w + (uint64_t)r * wrb, a + (uint64_t)t * arb);
            float c = cpu_dot_q8_0_lanes_ref(K, w + (uint64_t)r * wrb, a + (uint64_t)t * arb);
            ref_bad += quant_f32_bits(c) != quant_f32_bits(want[t * nr + r]);
        }
    snprintf(cname, sizeof cname, "%s_dot_ref_equals_avx2_dot", name);
    t_check(cname, ref_bad == 0, "%lld outputs of the plain C order differ", (long long)ref_bad);
    const bool vnni = quant_path_available(QUANT_PATH_AVX512VNNI);
    const kernel ks[] = {
        { "ref", cpu_gemm_q8_0_ref },
        { "avx2", cpu_gemm_q8_0_avx2 },
        { "avx2_da", avx2_da },
        { "avx512vnni", vnni ? cpu_gemm_q8_0_avx512vnni : NULL },
        { "picked", cpu_gemm_q8_0() },
    };
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        snprintf(cname, sizeof cname, "%s_%s", name, ks[i].isa);
        if (!ks[i].fn)
            t_skip(cname, "this CPU lacks the kernel's instructions");
        else
            check_tile(cname, ks[i].fn, K, w, wrb, nr, a, arb, nt, want);
    }
    /* one token: the AVX-512 kernels of their own (by default it takes
     * the AVX2 decode kernel) */
    if (nt == 1 && vnni) {
        snprintf(cname, sizeof cname, "%s_avx512vnni_decode512", name);
        cpu_gemm_q8_decode512(1);
        check_tile(cname, cpu_gemm_q8_0_avx512vnni, K, w, wrb, nr, a, arb, nt, want);
        cpu_gemm_q8_decode512(0);
    }
    free(want);
    free(w);
    free(a);
}

/* -------------------------------------------------------------- F32 */

static void test_f32(int64_t K, int64_t nr, int64_t nt, int pad)
{
    char name[128], cname[160];
    snprintf(name, sizeof name, "gemm_q8.f32_lanes_K%lld_%lldx%lld%s", (long long)K,
             (long long)nr, (long long)nt, pad ? "_padded" : "");
    t_rng rng = t_rng_named(name);
    const uint64_t wrb = 4 * (uint64_t)(K + 5 * pad), arb = 4 * (uint64_t)(K + 3 * pad);
    float *w = f32_rows(&rng, K, nr, wrb), *a = f32_rows(&rng, K, nt, arb);
    const int W = cpu_lanes();
    float *want = malloc(sizeof(float) * (size_t)(nr * nt));
    float *want8 = malloc(sizeof(float) * (size_t)(nr * nt));
    int64_t ref_bad = 0;
    for (int64_t t = 0; t < nt; t++)
        for (int64_t r = 0; r < nr; r++) {
            const float *wr = (const float *)((const uint8_t *)w + (uint64_t)r * wrb);
            const float *at = (const float *)((const uint8_t *)a + (uint64_t)t * arb);
            want[t * nr + r] = cpu_dot_lanes(K, wr, at);
            want8[t * nr + r] = cpu_dot_f32_lanes_ref(K, wr, at, 8);
            ref_bad += quant_f32_bits(cpu_dot_f32_lanes_ref(K, wr, at, W)) !=
                       quant_f32_bits(want[t * nr + r]);
        }
    snprintf(cname, sizeof cname, "%s_dot_ref_equals_cpu_dot_lanes", name);
    t_check(cname, ref_bad == 0, "%lld outputs of the plain C order (W=%d) differ",
            (long long)ref_bad, W);
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                      quant_path_available(QUANT_PATH_AVX2);
    const bool avx512 = quant_path_available(QUANT_PATH_AVX512) && avx2;
    const uint8_t *wb = (const uint8_t *)w, *ab = (const uint8_t *)a;
    /* the AVX2 kernel computes the 8-lane order, the AVX-512 one the 16-lane order */
    snprintf(cname, sizeof cname, "%s_avx2_8lanes", name);
    if (avx2)
        check_tile(cname, cpu_gemm_f32_lanes_avx2, K, wb, wrb, nr, ab, arb, nt, want8);
    else
        t_skip(cname, "this CPU lacks the kernel's instructions");
    snprintf(cname, sizeof cname, "%s_avx512_16lanes", name);
    if (avx512 && W == 16)
        check_tile(cname, cpu_gemm_f32_lanes_avx512, K, wb, wrb, nr, ab, arb, nt, want);
    else
        t_skip(cname, "this CPU lacks the kernel's instructions");
    snprintf(cname, sizeof cname, "%s_ref", name);
    check_tile(cname, cpu_gemm_f32_lanes_ref, K, wb, wrb, nr, ab, arb, nt, want);
    snprintf(cname, sizeof cname, "%s_picked", name);
    check_tile(cname, cpu_gemm_f32_lanes(), K, wb, wrb, nr, ab, arb, nt, want);
    free(want);
    free(want8);
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

/* The per-output loop of cpu_matmul.c's mm_task: rows outer, tokens inner. */
static void loop_dot(quant_dot_fn dot, int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                     const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    for (int64_t r = 0; r < nr; r++)
        for (int64_t t = 0; t < nt; t++)
            y[t * ldy + r] = dot(K, w + (uint64_t)r * wrb, a + (uint64_t)t * arb);
}

static double best_of(int reps, cpu_tile_fn fn, quant_dot_fn dot, int64_t K, const uint8_t *w,
                      uint64_t wrb, int64_t nr, const uint8_t *a, uint64_t arb, int64_t nt,
                      float *y)
{
    double best = 1e30;
    for (int i = 0; i < reps; i++) {
        double t0 = now_s();
        if (fn)
            fn(K, w, wrb, nr, a, arb, nt, y, nr);
        else
            loop_dot(dot, K, w, wrb, nr, a, arb, nt, y, nr);
        double dt = now_s() - t0;
        best = dt < best ? dt : best;
    }
    return best;
}

static void bench(void)
{
    static const int64_t shapes[][3] = {      /* K, N, tokens */
        { 1024, 6144, 64 }, { 1024, 3584, 64 }, { 3584, 1024, 64 }, { 2048, 1024, 64 },
        { 1024, 6144, 1 },  { 1024, 3584, 1 },  { 3584, 1024, 1 },  { 1024, 65536, 1 },
        /* the default model's tied head: a decode step of 1 and 4 slots, a
         * verify pass of 4 slots x 4 rows (MTP at -np 4) */
        { 256, 151680, 1 }, { 256, 151680, 4 }, { 256, 151680, 16 },
        /* its trunk's projections (attn_qkv, ssm_out, a shared expert's):
         * one decode row, an MTP verify pass of 4 rows */
        { 256, 1024, 1 }, { 256, 1024, 4 }, { 512, 256, 1 }, { 512, 256, 4 },
        { 256, 256, 1 }, { 256, 256, 4 },
    };
    t_rng rng = t_rng_named("bench");
    printf("one thread, best of 5, noisy (other jobs share the CPU)\n");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t K = shapes[s][0], N = shapes[s][1], T = shapes[s][2];
        const uint64_t rb = (uint64_t)K / 32 * QB;
        uint8_t *w = q8_rows(&rng, K, N, rb, 0), *a = q8_rows(&rng, K, T, rb, 1);
        float *y = malloc(sizeof(float) * (size_t)(N * T));
        const double gm = 1e-9 * (double)(K * N * T);
        double tl = best_of(5, NULL, quant_vec_dot_fn_path(QT_Q8_0, QUANT_PATH_AVX2), K, w, rb,
                            N, a, rb, T, y);
        double t2 = best_of(5, cpu_gemm_q8_0_avx2, NULL, K, w, rb, N, a, rb, T, y);
        double t5 = quant_path_available(QUANT_PATH_AVX512VNNI)
                        ? best_of(5, cpu_gemm_q8_0_avx512vnni, NULL, K, w, rb, N, a, rb, T, y)
                        : 0;
        printf("q8_0 K=%-5lld N=%-6lld T=%-3lld loop %8.3f ms (%6.1f GMAC/s)  avx2 tile %8.3f ms "
               "(%.2fx)  avx512 tile %8.3f ms (%.2fx)\n",
               (long long)K, (long long)N, (long long)T, 1e3 * tl, gm / tl, 1e3 * t2, tl / t2,
               1e3 * t5, t5 > 0 ? tl / t5 : 0.0);
        free(w);
        free(a);
        free(y);
    }
    static const int64_t fshapes[][3] = { { 1024, 16, 512 }, { 1024, 16, 64 }, { 1024, 16, 1 } };
    for (size_t s = 0; s < sizeof fshapes / sizeof fshapes[0]; s++) {
        const int64_t K = fshapes[s][0], N = fshapes[s][1], T = fshapes[s][2];
        float *w = f32_rows(&rng, K, N, 4 * (uint64_t)K), *a = f32_rows(&rng, K, T, 4 * (uint64_t)K);
        float *y = malloc(sizeof(float) * (size_t)(N * T));
        const uint8_t *wb = (const uint8_t *)w, *ab = (const uint8_t *)a;
        double tl = best_of(5, NULL, cpu_dot_lanes, K, wb, 4 * (uint64_t)K, N, ab, 4 * (uint64_t)K, T, y);
        double tt = best_of(5, cpu_gemm_f32_lanes(), NULL, K, wb, 4 * (uint64_t)K, N, ab,
                            4 * (uint64_t)K, T, y);
        printf("f32  K=%-5lld N=%-6lld T=%-3lld loop %8.3f ms  tile %8.3f ms (%.2fx)\n",
               (long long)K, (long long)N, (long long)T, 1e3 * tl, 1e3 * tt, tl / tt);
        free(w);
        free(a);
        free(y);
    }
}

int main(int argc, char **argv)
{
    cpu_fdot_init();
    if (argc > 1 && strcmp(argv[1], "bench") == 0) {
        bench();
        return 0;
    }
    static const int64_t Ks[] = { 1024, 3584, 2048, 6144, 32, 96 };
    static const int64_t shapes[][2] = {      /* nr, nt */
        { 13, 11 }, { 1, 1 }, { 7, 1 }, { 9, 1 }, { 17, 1 }, { 3, 5 }, { 33, 19 },
    };
    for (size_t k = 0; k < sizeof Ks / sizeof Ks[0]; k++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            test_q8_0(Ks[k], shapes[s][0], shapes[s][1], 0);
    test_q8_0(1024, 6, 67, 1);
    test_q8_0(96, 11, 1, 1);
    test_q8_0(3584, 16, 64, 0);
    test_q8_0(1024, 70, 9, 0);       /* more rows than one pack meets */
    test_q8_0(8224, 5, 3, 0);        /* K past the pack limit: unpacked kernel */
    test_q8_0(8224, 33, 5, 1);       /* AVX2: more rows than one scale pack holds (30) */
    test_q8_0(65568, 3, 2, 0);       /* AVX2: K past the scale packs: the unpacked kernel */
    test_q8_0(262176, 5, 1, 0);      /* AVX2: one token, K past the decode kernel's pack */

    static const int64_t Kf[] = { 1024, 3584, 2048, 6144, 32, 96, 48 };
    for (size_t k = 0; k < sizeof Kf / sizeof Kf[0]; k++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            test_f32(Kf[k], shapes[s][0], shapes[s][1], 0);
    test_f32(1024, 6, 67, 1);
    test_f32(48, 5, 1, 1);
    return t_exit();
}
