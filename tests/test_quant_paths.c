/* test_quant_paths.c: every dot-product path of src/quant (reference, AVX2,
 * AVX-512) against the others, with libq36 alone (no ggml), so it runs on
 * any machine; a path this CPU lacks (or Q36_QUANT_PATH_MAX caps) is a
 * skip, never a passed case.
 *
 *   paths_api             the REF path is always there and matches
 *                         quant_vec_dot_ref; no kernel for Q8_K or an
 *                         unknown path; a missing path gives NULL
 *   dispatch              quant_vec_dot_fn(t) is the kernel of the last
 *                         path (ref, avx2, avx512, avx512vnni) this CPU
 *                         runs that has one for t
 *   dot_<path>_<type>     the path's kernel vs the reference within the
 *                         bound of tests/quant_bound.h, (AVX-512 paths)
 *                         vs the AVX2 kernel within twice that bound, and
 *                         (AVX512-VNNI) bit for bit vs the AVX-512 one
 * Rows: 256, 512, 1024, 4096, 8192 elements and short rows that end in
 * every tail a kernel has (1..7 blocks of a 32-element type; 1..100
 * elements of the float types); random weight blocks with valid finite
 * scales, activations from gaussian rows (some with 25x outliers)
 * through quant_act_quantize.
 */
#include <math.h>
#include <stdlib.h>

#include "quant/quant.h"
#include "quant_bound.h"
#include "test.h"

static const uint32_t dot_types[] = {
    QT_F32, QT_F16, QT_BF16, QT_Q4_0, QT_Q4_1, QT_Q5_0, QT_Q5_1, QT_Q8_0, QT_Q1_0, QT_Q2_0,
    QT_MXFP4, QT_NVFP4, QT_IQ4_NL, QT_Q2_K, QT_Q3_K, QT_Q4_K, QT_Q5_K, QT_Q6_K, QT_TQ1_0,
    QT_TQ2_0, QT_IQ2_XXS, QT_IQ2_XS, QT_IQ2_S, QT_IQ3_XXS, QT_IQ3_S, QT_IQ1_S, QT_IQ1_M,
    QT_IQ4_XS,
};
#define N_DOT (int)(sizeof dot_types / sizeof dot_types[0])

static double worst[QUANT_PATH_COUNT];

/* Row lengths for type t: the big ones, then short rows ending in each
 * tail (blocks of 32: 1, 2, 3, 5, 7 blocks hit the 4-block loop, the
 * pair and the lone block; float types: 1..100 elements hit the
 * 64-element loop, the 16-element one and the masked tail). */
static int row_lengths(uint32_t t, int64_t *lens)
{
    const int64_t bl = quant_type_get(t)->blck;
    const int64_t big[] = { 256, 512, 1024, 4096, 8192 };
    int nl = 0;
    for (int i = 0; i < 5; i++)
        lens[nl++] = big[i];
    if (bl == 1) {
        const int64_t f[] = { 1, 3, 15, 16, 17, 33, 64, 79, 100, 4099 };
        for (int i = 0; i < 10; i++)
            lens[nl++] = f[i];
    } else if (bl < 256) {
        const int64_t k[] = { 1, 2, 3, 5, 7 };
        for (int i = 0; i < 5; i++)
            if (k[i] * bl < 256)
                lens[nl++] = k[i] * bl;
    }
    return nl;
}

/* One case: path p's kernel of type t against the reference (and, for
 * AVX-512, the AVX2 kernel) over every row length. */
static void test_path(uint32_t t, enum quant_path p)
{
    const quant_dot_fn f = quant_vec_dot_fn_path(t, p);
    const quant_dot_fn ref = quant_vec_dot_fn_path(t, QUANT_PATH_REF);
    const quant_dot_fn avx2 = p >= QUANT_PATH_AVX512 ? quant_vec_dot_fn_path(t, QUANT_PATH_AVX2) : NULL;
    const quant_dot_fn avx512 = p > QUANT_PATH_AVX512 ? quant_vec_dot_fn_path(t, QUANT_PATH_AVX512) : NULL;
    if (!f)
        return;
    char name[64], why[300] = "";
    snprintf(name, sizeof name, "dot_%s_%s", quant_path_name(p), quant_type_name(t));
    t_rng r = t_rng_named(name);
    const int at = quant_vec_dot_type(t);
    int64_t lens[16];
    const int nl = row_lengths(t, lens);
    for (int li = 0; li < nl && !why[0]; li++) {
        const int64_t n = lens[li];
        for (int rep = 0; rep < 4 && !why[0]; rep++) {
            float *x = malloc((size_t)n * 4), *ad = malloc((size_t)n * 4);
            uint8_t *w = malloc(quant_row_bytes(t, (uint64_t)n));
            uint8_t *a = malloc(quant_row_bytes((uint32_t)at, (uint64_t)n));
            for (int64_t i = 0; i < n; i++)
                x[i] = qb_gauss(&r) * (rep == 2 && i % 61 == 0 ? 25.0f : 1.0f);
            qb_random_weights(t, &r, w, n);
            quant_act_quantize((uint32_t)at, x, a, n);
            quant_dequant_row((uint32_t)at, a, ad, n);
            const double bound = qb_bound(n, qb_abs_sum(t, w, ad, n));
            const float vr = ref(n, w, a), vf = f(n, w, a);
            const double d = fabs((double)vf - vr);
            if (!(d <= bound))
                snprintf(why, sizeof why, "n=%lld rep %d: %s %.9g, ref %.9g, |diff| %.3g > bound %.3g",
                         (long long)n, rep, quant_path_name(p), (double)vf, (double)vr, d, bound);
            if (bound > 0)
                worst[p] = fmax(worst[p], d / bound);
            if (avx2 && !why[0]) {
                const float v2 = avx2(n, w, a);
                const double d2 = fabs((double)vf - v2);
                if (!(d2 <= 2 * bound))
                    snprintf(why, sizeof why, "n=%lld rep %d: %s %.9g, avx2 %.9g, |diff| %.3g > 2*bound %.3g",
                             (long long)n, rep, quant_path_name(p), (double)vf, (double)v2, d2, 2 * bound);
            }
            if (avx512 && !why[0]) {            /* same float work: same bits */
                const float v5 = avx512(n, w, a);
                if (memcmp(&v5, &vf, sizeof vf))
                    snprintf(why, sizeof why, "n=%lld rep %d: %s %.9g differs from avx512 %.9g",
                             (long long)n, rep, quant_path_name(p), (double)vf, (double)v5);
            }
            free(x);
            free(ad);
            free(w);
            free(a);
        }
    }
    t_check(name, !why[0], "%s", why);
}

static void test_api(void)
{
    char why[200] = "";
    if (!quant_path_available(QUANT_PATH_REF))
        snprintf(why, sizeof why, "REF path reported missing");
    for (int i = 0; i < N_DOT && !why[0]; i++)
        if (!quant_vec_dot_fn_path(dot_types[i], QUANT_PATH_REF))
            snprintf(why, sizeof why, "no REF kernel for %s", quant_type_name(dot_types[i]));
    if (!why[0] && quant_vec_dot_fn_path(QT_Q8_K, QUANT_PATH_REF))
        snprintf(why, sizeof why, "Q8_K has a REF kernel");
    if (!why[0] && (quant_vec_dot_fn_path(QT_Q4_K, QUANT_PATH_COUNT) || quant_path_available(QUANT_PATH_COUNT)))
        snprintf(why, sizeof why, "QUANT_PATH_COUNT accepted as a path");
    for (int p = 0; p < QUANT_PATH_COUNT && !why[0]; p++)
        for (int i = 0; i < N_DOT && !why[0]; i++)
            if (!quant_path_available((enum quant_path)p) && quant_vec_dot_fn_path(dot_types[i], (enum quant_path)p))
                snprintf(why, sizeof why, "path %s is unavailable but has a kernel for %s",
                         quant_path_name((enum quant_path)p), quant_type_name(dot_types[i]));
    /* the REF path is the function quant_vec_dot_ref calls */
    if (!why[0]) {
        t_rng r = t_rng_named("paths_api");
        uint8_t w[144];
        uint8_t a[292];
        float x[256];
        qb_random_weights(QT_Q4_K, &r, w, 256);
        for (int i = 0; i < 256; i++)
            x[i] = qb_gauss(&r);
        quant_act_quantize(QT_Q8_K, x, a, 256);
        const float v1 = quant_vec_dot_fn_path(QT_Q4_K, QUANT_PATH_REF)(256, w, a);
        const float v2 = quant_vec_dot_ref(QT_Q4_K, 256, w, a);
        if (memcmp(&v1, &v2, 4))
            snprintf(why, sizeof why, "REF path %.9g, quant_vec_dot_ref %.9g", (double)v1, (double)v2);
    }
    t_check("paths_api", !why[0], "%s", why);

    why[0] = 0;
    for (int i = 0; i < N_DOT && !why[0]; i++) {
        const uint32_t t = dot_types[i];
        quant_dot_fn want = NULL;
        for (int p = QUANT_PATH_COUNT - 1; p >= 0 && !want; p--)
            want = quant_vec_dot_fn_path(t, (enum quant_path)p);
        if (quant_vec_dot_fn(t) != want)
            snprintf(why, sizeof why, "%s: quant_vec_dot_fn is not the fastest path's kernel", quant_type_name(t));
    }
    t_check("dispatch", !why[0], "%s", why);
}

int main(void)
{
    test_api();
    for (int p = QUANT_PATH_AVX2; p < QUANT_PATH_COUNT; p++) {
        const enum quant_path path = (enum quant_path)p;
        if (!quant_path_available(path)) {
            char name[64];
            snprintf(name, sizeof name, "paths_%s", quant_path_name(path));
            t_skip(name, getenv("Q36_QUANT_PATH_MAX") ? "this CPU lacks the path, or Q36_QUANT_PATH_MAX caps it"
                                                      : "this CPU lacks the path");
            continue;
        }
        int nk = 0;
        for (int i = 0; i < N_DOT; i++)
            nk += quant_vec_dot_fn_path(dot_types[i], path) != NULL;
        printf("# %s: available, %d types have a kernel\n", quant_path_name(path), nk);
        for (int i = 0; i < N_DOT; i++)
            test_path(dot_types[i], path);
    }
    for (int p = QUANT_PATH_AVX2; p < QUANT_PATH_COUNT; p++)
        if (quant_path_available((enum quant_path)p))
            printf("# worst |diff|/bound, %s vs ref: %.3g\n", quant_path_name((enum quant_path)p), worst[p]);
    return t_exit();
}
