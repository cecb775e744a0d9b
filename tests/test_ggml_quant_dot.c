/* test_ggml_quant_dot.c: activation quantization and dot products of
 * src/quant against ggml's CPU backend: the libggml-cpu-<variant>.so
 * libraries, loaded with dlopen; each one's ggml_get_type_traits_cpu gives
 * from_float, vec_dot and vec_dot_type.
 *
 *   act_T_V         quant_act_quantize vs from_float of T (Q8_0, Q8_1, Q8_K,
 *                   F16, BF16) of every x86 variant V this CPU can run:
 *                   identical bytes, on rows of 1, 3 and 4096/blck blocks:
 *                   gaussian, outliers, exact rounding ties, zero blocks,
 *                   f32 subnormals, inf/NaN and blocks too small for 127/amax
 *   vecdot_type_T   quant_vec_dot_type(T) == ggml's vec_dot_type
 *   dot_ref_T       quant_vec_dot_ref vs haswell's (AVX2) vec_dot, within
 *                   the bound below; dot_ref_T_V the same against the
 *                   variant ggml_backend_load_all would pick on this CPU
 *   dot_fast_T      quant_vec_dot (AVX2 where present) vs the reference
 * Dot rows: 256, 512, 1024, 4096, 8192 elements, plus one to three blocks
 * for the small-block types; weights made by ggml_quantize_chunk from
 * gaussian rows and random blocks (every code pattern), activations from
 * gaussian rows, some with 25x outliers.
 *
 * The bound. Both sides compute the same real number E = sum over blocks of
 * (float scales) * (exact integer sums); they differ only in how the f32
 * products and sums are ordered and rounded. Write E as a sum of k terms
 * t_j (a term per block or sub-block, plus the min/offset terms: a kernel
 * may split w = scale*code - offset into two sums). Recursive or blocked
 * f32 summation of k terms, each formed with at most 4 roundings, has
 * |computed - E| <= gamma_(k+4) * sum|t_j|, gamma_m = m*u/(1-m*u), u = 2^-24.
 * With no kernel using more than one term per 16 elements plus a 32-deep
 * partial sum and a final reduction, k + 4 <= n/16 + 40 =: K. Every
 * |t_j| is at most sum over its elements of (|w_i| + |o_i|) * |a_i|, where
 * w_i is the dequantized weight, o_i the value the element takes with its
 * code bits cleared (the offset a kernel may pull out: 8d for Q4_0, 32*d*sc
 * for Q6_K, dmin*m for Q4_K, ...) and a_i the dequantized activation. So
 *   |q36 - ggml| <= 2 * gamma_K * S,  S = sum_i (|w_i| + |o_i|) |a_i|,
 * and Q8_1's stored s = f16(d * sum q) adds at most 2^-11 relative to the
 * offset part; the test asserts |diff| <= 2.01 * K * u * S. It prints the
 * worst diff/bound ratio seen per family, as a "#" line.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>

#include "ggml.h"
#include "ggml-cpu.h"
#include "quant/fp16.h"
#include "quant/quant.h"
#include "test.h"
#include "quant_bound.h"
#include "ggml_cpu_lib.h"

typedef const struct ggml_type_traits_cpu *(*traits_fn)(enum ggml_type);
static traits_fn cpu_traits;

/* Loads libggml-cpu-<variant>.so and makes it the oracle. Returns its
 * ggml_backend_score() (0: this CPU cannot run it, and nothing was
 * initialised), or -1 with `why` set. */
static int load_cpu(const char *variant, char *why, size_t wn)
{
    int sc;
    void *h = t_ggml_cpu_open(variant, &sc, why, wn);
    if (!h)
        return why[0] ? -1 : 0;
    void (*init)(void) = (void (*)(void))dlsym(h, "ggml_cpu_init");
    traits_fn tr = (traits_fn)dlsym(h, "ggml_get_type_traits_cpu");
    if (!init || !tr) {
        snprintf(why, wn, "libggml-cpu-%s.so lacks ggml_cpu_init/ggml_get_type_traits_cpu", variant);
        return -1;
    }
    if (sc > 0) {
        init();
        cpu_traits = tr;
    }
    return sc;
}

/* ---- activation quantization ---------------------------------------------- */

static void fill_act(t_rng *r, float *x, int64_t n, int kind)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = qb_gauss(r);
    if (kind == 1)                       /* outliers */
        for (int64_t i = 0; i < n; i += 97)
            x[i] *= 30.0f;
    if (kind == 2) {                     /* exact ties: amax 127 -> scale 1 */
        for (int64_t i = 0; i < n; i++)
            x[i] = (float)((int)(t_next(r) % 200) - 100) + 0.5f;
        for (int64_t i = 0; i < n; i += 32)
            x[i] = 127.0f;
        if (n % 256 == 0)       /* Q8_K: max -127 gives iscale 1 and ties too */
            for (int64_t i = 0; i < n; i += 256)
                x[i] = -127.0f;
    }
    if (kind == 3)                       /* zero blocks among gaussian ones */
        for (int64_t i = 0; i < n; i++)
            if ((i / 256) % 2 == 0)
                x[i] = 0.0f;
    if (kind == 4)                       /* every magnitude: f32 subnormals to 2^20 */
        for (int64_t i = 0; i < n; i++)
            x[i] = ldexpf(x[i], (int)(t_next(r) % 160) - 140);
    if (kind == 5) {                     /* non-finite and extreme blocks */
        for (int64_t i = 0; i < n; i++) {
            const int64_t blk = i / 32;
            switch (blk % 6) {
            case 0: x[i] = ldexpf(x[i], -135); break;              /* 127/amax overflows */
            case 1: x[i] = ldexpf(x[i], 125); break;               /* d overflows f16 */
            case 2: if (i % 7 == 0) x[i] = INFINITY * (i % 2 ? -1 : 1); break;
            case 3: if (i % 11 == 3) x[i] = quant_bits_f32(0x7FC00000u | (uint32_t)t_next(r) % 0x400000u | (i % 2 ? 0x80000000u : 0)); break;
            case 4: if (i % 13 == 5) x[i] = quant_bits_f32(0x7F800001u + (uint32_t)(t_next(r) % 0x3FFFFF)); break;
            default: break;
            }
        }
        if (n < 32)                      /* F16/BF16 rows of 1 and 3: a NaN in the tail */
            x[n - 1] = quant_bits_f32(0xFFC12345u);
    }
}

static void test_act(uint32_t t, const char *variant)
{
    char name[64], why[256] = "";
    snprintf(name, sizeof name, "act_%s_%s", quant_type_name(t), variant);
    t_rng r = t_rng_named(name);
    const uint32_t bl = quant_type_get(t)->blck;
    const int64_t lens[] = { bl, 3 * bl, 4096 };
    for (int li = 0; li < 3 && !why[0]; li++) {
        const int64_t n = lens[li];
        float *x = malloc(n * 4);
        size_t nbytes = quant_row_bytes(t, n);
        uint8_t *a = malloc(nbytes), *b = malloc(nbytes);
        for (int kind = 0; kind < 6 && !why[0]; kind++) {
            fill_act(&r, x, n, kind);
            memset(a, 0x5A, nbytes);
            memset(b, 0, nbytes);       /* ggml leaves Q8_K bsums of a zero block unset */
            int e = quant_act_quantize(t, x, a, n);
            cpu_traits((enum ggml_type)t)->from_float(x, b, n);
            if (e)
                snprintf(why, sizeof why, "quant_act_quantize returned %d", e);
            for (size_t i = 0; i < nbytes && !why[0]; i++)
                if (a[i] != b[i])
                    snprintf(why, sizeof why, "n=%lld row kind %d byte %zu (block %zu, offset %zu): q36 %02x, ggml %02x",
                             (long long)n, kind, i, i / quant_type_get(t)->size,
                             i % quant_type_get(t)->size, a[i], b[i]);
        }
        free(x);
        free(a);
        free(b);
    }
    t_check(name, !why[0], "%s", why);
}

/* ---- dot products ----------------------------------------------------------- */

static const uint32_t dot_types[] = {
    QT_F32, QT_F16, QT_BF16, QT_Q4_0, QT_Q4_1, QT_Q5_0, QT_Q5_1, QT_Q8_0, QT_Q1_0, QT_Q2_0,
    QT_MXFP4, QT_NVFP4, QT_IQ4_NL, QT_Q2_K, QT_Q3_K, QT_Q4_K, QT_Q5_K, QT_Q6_K, QT_TQ1_0,
    QT_TQ2_0, QT_IQ2_XXS, QT_IQ2_XS, QT_IQ2_S, QT_IQ3_XXS, QT_IQ3_S, QT_IQ1_S, QT_IQ1_M,
    QT_IQ4_XS,
};
#define N_DOT (int)(sizeof dot_types / sizeof dot_types[0])

/* Weights: ggml-quantized gaussian rows, or (random != 0, and always for
 * the IQ1/IQ2 types whose ggml quantizer needs seconds of set-up) random
 * bytes, every code pattern possible, with finite scales of realistic
 * size. F32/F16/BF16 rows are gaussian values. */
static void make_weights(uint32_t t, t_rng *r, uint8_t *w, int64_t n, const float *im, int random)
{
    const quant_type_info *q = quant_type_get(t);
    if (q->blck > 1 && (random || t == QT_IQ1_S || t == QT_IQ1_M || t == QT_IQ2_S ||
                        t == QT_IQ2_XS || t == QT_IQ2_XXS)) {
        qb_random_weights(t, r, w, n);
        return;
    }
    float *x = malloc(n * 4);
    for (int64_t i = 0; i < n; i++)
        x[i] = qb_gauss(r) * 0.05f;
    ggml_quantize_chunk((enum ggml_type)t, x, w, 0, 1, n,
                       ggml_quantize_requires_imatrix((enum ggml_type)t) ? im : NULL);
    free(x);
}

static double worst_ref, worst_fast;

/* variant: "" for the haswell oracle (then the vec_dot_type and the fast
 * kernel are checked too), else the name of the other variant. */
static void test_dot(uint32_t t, const char *variant)
{
    const quant_type_info *q = quant_type_get(t);
    const struct ggml_type_traits_cpu *ct = cpu_traits((enum ggml_type)t);
    char name[64], why[256] = "";
    int at = quant_vec_dot_type(t);
    if (!variant[0]) {
        snprintf(name, sizeof name, "vecdot_type_%s", q->name);
        t_check(name, at == (int)ct->vec_dot_type, "q36 %d, ggml %d", at, (int)ct->vec_dot_type);
    }
    if (at < 0 || at != (int)ct->vec_dot_type)
        return;

    snprintf(name, sizeof name, "dot_ref_%s%s%s", q->name, variant[0] ? "_" : "", variant);
    t_rng r = t_rng_named(name);
    int64_t lens[8], nl = 0;
    if (q->blck < 256)                 /* short rows for the small-block types */
        for (int64_t k = 1; k <= 3; k++)
            if (k * q->blck <= 128 || k == 1)
                lens[nl++] = k * q->blck;
    const int64_t big[] = { 256, 512, 1024, 4096, 8192 };
    for (int i = 0; i < 5; i++)
        lens[nl++] = big[i];
    char why_fast[256] = "";
    for (int li = 0; li < nl && !why[0]; li++) {
        const int64_t n = lens[li];
        for (int rep = 0; rep < 4 && !why[0]; rep++) {
            float *x = malloc(n * 4), *ad = malloc(n * 4), *im = malloc(n * 4);
            uint8_t *w = malloc(quant_row_bytes(t, n)), *a = malloc(quant_row_bytes(at, n));
            for (int64_t i = 0; i < n; i++) {
                x[i] = qb_gauss(&r) * (rep == 2 && i % 61 == 0 ? 25.0f : 1.0f);
                im[i] = 0.1f + t_uniform(&r);
            }
            make_weights(t, &r, w, n, im, rep == 3);
            ct = cpu_traits((enum ggml_type)t);
            cpu_traits((enum ggml_type)at)->from_float(x, a, n);
            quant_dequant_row(at, a, ad, n);
            float g = 0.0f;
            ct->vec_dot((int)n, &g, 0, w, 0, a, 0, 1);
            float mine = quant_vec_dot_ref(t, n, w, a);
            float fast = quant_vec_dot(t, n, w, a);
            const double bound = qb_bound(n, qb_abs_sum(t, w, ad, n));
            double d1 = fabs((double)mine - g), d2 = fabs((double)fast - mine);
            if (!(d1 <= bound))
                snprintf(why, sizeof why, "n=%lld rep %d: q36 %.9g, ggml %.9g, |diff| %.3g > bound %.3g",
                         (long long)n, rep, (double)mine, (double)g, d1, bound);
            if (!(d2 <= bound) && !why_fast[0])
                snprintf(why_fast, sizeof why_fast, "n=%lld rep %d: fast %.9g, ref %.9g, |diff| %.3g > bound %.3g",
                         (long long)n, rep, (double)fast, (double)mine, d2, bound);
            if (bound > 0) {
                worst_ref = fmax(worst_ref, d1 / bound);
                worst_fast = fmax(worst_fast, d2 / bound);
            }
            free(x);
            free(ad);
            free(im);
            free(w);
            free(a);
        }
    }
    t_check(name, !why[0], "%s", why);
    if (!variant[0]) {
        snprintf(name, sizeof name, "dot_fast_%s", q->name);
        t_check(name, !why_fast[0], "%s", why_fast);
    }
}

int main(void)
{
    char why[1200], best[64] = "";
    const uint32_t acts[] = { QT_Q8_0, QT_Q8_1, QT_Q8_K, QT_F16, QT_BF16 };
    if (!t_ggml_best_variant(best, sizeof best, why, sizeof why)) {
        t_fail("ggml_cpu_load", "%s", why);
        return t_exit();
    }
    printf("# ggml variant %s\n", best);
    /* activation formats: every x86 variant of the folder this CPU can run
     * (the one ggml_backend_load_all picks is among them); haswell (AVX2)
     * last, as the oracle of the dot products */
    const char *const *variants = t_ggml_variants;
    const int nv = T_GGML_N_VARIANTS;
    for (int v = 0; v < nv; v++) {
        int sc = load_cpu(variants[v], why, sizeof why);
        if (sc < 0 || (sc == 0 && v == nv - 1)) {
            t_fail("ggml_cpu_load", "%s", sc < 0 ? why : "this CPU cannot run the haswell (AVX2) variant, or the folder lacks it");
            return t_exit();
        }
        if (sc > 0)
            for (int i = 0; i < 5; i++)
                test_act(acts[i], variants[v]);
    }
    t_ok("ggml_cpu_load");
    for (int i = 0; i < N_DOT; i++)
        test_dot(dot_types[i], "");
    /* the variant ggml_backend_load_all picks here, when it is not haswell:
     * its vec_dot kernels differ from haswell's, the bound is the same */
    if (strcmp(best, "haswell") != 0 && load_cpu(best, why, sizeof why) > 0)
        for (int i = 0; i < N_DOT; i++)
            test_dot(dot_types[i], best);
    printf("# worst |diff|/bound: ref vs ggml %.3g, fast vs ref %.3g\n", worst_ref, worst_fast);
    return t_exit();
}
