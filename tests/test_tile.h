/* test_tile.h: what the tile kernel tests (tests/test_cpu_gemm_k*.c)
 * share: q8k_rows makes Q8_K activation rows as cpu_matmul.c does;
 * check_case and check_tile run kernels (cpu_gemm.h's cpu_tile_fn) into a
 * padded output and compare every output with the expected bits; run_mm
 * and best_of time one thread through a matmul the way cpu_matmul.c's
 * mm_task goes (16-row items, 64-token tiles), with a tile kernel or a
 * per-output dot, for the tests' bench modes. Include after test.h. */
#ifndef Q36_TEST_TILE_H
#define Q36_TEST_TILE_H

#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "backend/cpu/cpu_gemm.h"
#include "quant/fp16.h"
#include "quant/quant.h"

#define LDY_PAD 3
#define SENTINEL 0x7FC0DEADu      /* a NaN payload no kernel writes */

/* A prepared tile (cpu_gemm.h's cpu_tile_prep) as cpu_matmul.c runs it:
 * the nt rows' forms made into one buffer first, 48 bytes wider a row
 * than the form needs (rows 16-byte aligned, not 32), then the tile. */
static void run_prep(const cpu_tile_prep *p, int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                     const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    const uint64_t mrb = p->bytes(K) + 48;
    uint8_t *m = aligned_alloc(64, (size_t)((mrb * (uint64_t)nt + 16 + 63) & ~(uint64_t)63));
    for (int64_t t = 0; t < nt; t++)
        p->row(K, a + (uint64_t)t * arb, m + 16 + (uint64_t)t * mrb);
    p->tile(K, w, wrb, nr, a, arb, m + 16, mrb, nt, y, ldy);
    free(m);
}

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

/* size random bytes (every code pattern); the caller frees */
static uint8_t *rand_bytes(t_rng *r, uint64_t size)
{
    uint8_t *m = malloc(size);
    for (uint64_t i = 0; i < size; i++)
        m[i] = (uint8_t)t_next(r);
    return m;
}

/* an f16 block scale of either sign over five decades (1e-6 .. 0.1) */
static uint16_t rand_scale_f16(t_rng *r)
{
    const float d = powf(10.0f, 5.0f * t_uniform(r) - 6.0f);
    return quant_f32_to_f16(t_next(r) & 1 ? -d : d);
}

/* n weight rows of K elements (blocks of block_bytes per 256), stride
 * bytes apart: random bytes, each block then passed to fix (its f16
 * scales; with extreme, integer-limit codes and scales) */
static uint8_t *weight_rows(t_rng *r, int64_t K, int64_t n, uint64_t stride, int block_bytes,
                            void (*fix)(uint8_t *blk, t_rng *r, int extreme), int extreme)
{
    uint8_t *m = rand_bytes(r, stride * (uint64_t)n);
    for (int64_t i = 0; i < n; i++)
        for (int64_t b = 0; b < K / 256; b++)
            fix(m + (uint64_t)i * stride + (uint64_t)(b * block_bytes), r, extreme);
    return m;
}

/* n activation rows: quant_act_quantize (Q8_K) of gaussian rows of varied
 * scale, as cpu_matmul.c makes them; extreme: values of +-1 with one -1.01
 * per 64 (codes +-127 and -128) */
static uint8_t *q8k_rows(t_rng *r, int64_t K, int64_t n, uint64_t stride, int extreme)
{
    uint8_t *m = rand_bytes(r, stride * (uint64_t)n);
    float *x = malloc(sizeof(float) * (size_t)K);
    for (int64_t i = 0; i < n; i++) {
        const float s = powf(10.0f, 4.0f * t_uniform(r) - 2.0f);
        for (int64_t k = 0; k < K; k++)
            x[k] = extreme ? (k % 64 == 5 ? -1.01f : (t_next(r) & 1 ? 1.0f : -1.0f)) : s * t_gauss(r);
        quant_act_quantize(QT_Q8_K, x, m + (uint64_t)i * stride, K);
    }
    free(x);
    return m;
}

/* One case: want = want_dot per output; the plain C order ref_dot must
 * give the same bits ("<name>_dot_ref"), and so must every kernel of ks
 * ("<name>_<isa>"; one with fn NULL is named on a note line, not run). */
static void check_case(const char *name, int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                       const uint8_t *a, uint64_t arb, int64_t nt, quant_dot_fn want_dot,
                       quant_dot_fn ref_dot, const kernel *ks, size_t nk)
{
    char cname[200];
    float *want = malloc(sizeof(float) * (size_t)(nr * nt));
    int64_t ref_bad = 0;
    for (int64_t t = 0; t < nt; t++)
        for (int64_t r = 0; r < nr; r++) {
            const uint8_t *wr = w + (uint64_t)r * wrb, *at = a + (uint64_t)t * arb;
            want[t * nr + r] = want_dot(K, wr, at);
            if (ref_dot)
                ref_bad += quant_f32_bits(ref_dot(K, wr, at)) != quant_f32_bits(want[t * nr + r]);
        }
    snprintf(cname, sizeof cname, "%s_dot_ref", name);
    if (ref_dot)    /* (NULL: the order has no plain C form) */
        t_check(cname, ref_bad == 0, "%lld outputs of the plain C order differ from the dot's", (long long)ref_bad);
    for (size_t i = 0; i < nk; i++) {
        snprintf(cname, sizeof cname, "%s_%s", name, ks[i].isa);
        if (!ks[i].fn)
            t_skip(cname, "this CPU lacks the kernel's instructions");
        else
            check_tile(cname, ks[i].fn, K, w, wrb, nr, a, arb, nt, want);
    }
    free(want);
}

/* ---- bench helpers ---- */

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
 * `dot` (rows outer, tokens inner). */
static void run_mm(cpu_tile_fn fn, quant_dot_fn dot, int64_t K, int64_t N, const uint8_t *w, uint64_t wrb,
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
                    y[t * N + n] = dot(K, w + (uint64_t)n * wrb, a + (uint64_t)t * arb);
        }
    }
}

static double best_of(int reps, cpu_tile_fn fn, quant_dot_fn dot, int64_t K, int64_t N, const uint8_t *w,
                      uint64_t wrb, const uint8_t *a, uint64_t arb, int64_t T, float *y)
{
    double best = 1e30;
    for (int i = 0; i < reps; i++) {
        const double t0 = now_s();
        run_mm(fn, dot, K, N, w, wrb, a, arb, T, y);
        const double dt = now_s() - t0;
        best = dt < best ? dt : best;
    }
    return best;
}

/* The cases every K-quant tile test runs: test(K, nr, nt, pad, extreme)
 * over the Qwen3.5/3.6 reduction lengths (1024, 2048, 3584, 512) and 256 x
 * tiles of 1..13 rows x 1..20 tokens that are not multiples of any
 * kernel's register block (one token included), then padded strides
 * (pad = 1) and integer-limit data (extreme = 1). */
static void tile_cases(void (*test)(int64_t K, int64_t nr, int64_t nt, int pad, int extreme))
{
    static const int64_t Ks[] = { 1024, 2048, 3584, 512, 256 };
    static const int64_t shapes[][2] = {      /* nr, nt */
        { 13, 11 }, { 1, 1 }, { 2, 1 }, { 4, 1 }, { 7, 1 }, { 1, 7 }, { 3, 5 }, { 2, 4 }, { 4, 6 },
        { 5, 20 }, { 4, 13 }, { 9, 19 },
    };
    for (size_t k = 0; k < sizeof Ks / sizeof Ks[0]; k++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            test(Ks[k], shapes[s][0], shapes[s][1], 0, 0);
    test(1024, 6, 17, 1, 0);
    test(3584, 13, 1, 1, 0);
    test(512, 16, 64, 1, 0);
    test(1024, 5, 7, 0, 1);
    test(3584, 3, 1, 1, 1);
}

/* One bench line: the per-output dot and each kernel of ks (skipping those
 * with fn NULL) over the same N x T matmul, best of reps; ns per weight
 * block x token and the speed-up over the dot. */
static void bench_shape(const char *type, int64_t K, int64_t N, int64_t T, int reps, const uint8_t *w,
                        uint64_t wrb, const uint8_t *a, uint64_t arb, quant_dot_fn dot, const kernel *ks,
                        size_t nk)
{
    float *y = malloc(sizeof(float) * (size_t)(N * T));
    const double units = 1e-9 * (double)(N * (K / 256) * T);
    const double td = best_of(reps, NULL, dot, K, N, w, wrb, a, arb, T, y);
    printf("%s K=%-5lld N=%-5lld T=%-4lld dot %8.3f ms (%6.2f ns)", type, (long long)K, (long long)N,
           (long long)T, 1e3 * td, td / units);
    for (size_t i = 0; i < nk; i++) {
        if (!ks[i].fn)
            continue;
        const double tk = best_of(reps, ks[i].fn, NULL, K, N, w, wrb, a, arb, T, y);
        printf("  %s %8.3f ms (%6.2f ns, %.2fx)", ks[i].isa, 1e3 * tk, tk / units, td / tk);
    }
    printf("\n");
    free(y);
}

#endif
