/* test_ggml_quant.c: src/quant's type table, scalar float conversions and
 * dequantizers against the pinned libggml, in process.
 *
 * Cases (one line per type per family):
 *   types_table          every entry of types.c vs ggml_type_name/size/blck
 *   fp16_to_f32_all      all 65536 f16 patterns, bit for bit
 *   f32_to_fp16_*        ties, neighbours and random f32 vs ggml_fp32_to_fp16
 *   f32_to_bf16          the same for bf16
 *   dequant_random_T     random blocks (scale fields made finite) at row
 *                        lengths of one block, 256, 4096 and 8192
 *   dequant_ggml_T       blocks made by ggml_quantize_chunk from gaussian,
 *                        ramp, constant, sparse and one-outlier rows
 *                        (random positive imatrix where ggml needs one)
 *   dequant_edge_T       zero/subnormal/max f16 scales, E8M0 and UE4M3
 *                        extremes, all-zero and all-ones code bytes
 *   dequant_q8_K/_q8_1   the activation formats, which have no to_float in
 *                        ggml (see test_act_formats)
 * Every comparison is of float bit patterns, every element.
 */
#include <math.h>
#include <stdlib.h>

#include "ggml.h"
#include "quant/fp16.h"
#include "quant/quant.h"
#include "test.h"
#include "util/err.h"

static const uint32_t dq_types[] = {
    QT_F32, QT_F16, QT_BF16, QT_Q4_0, QT_Q4_1, QT_Q5_0, QT_Q5_1, QT_Q8_0, QT_Q1_0, QT_Q2_0,
    QT_Q2_K, QT_Q3_K, QT_Q4_K, QT_Q5_K, QT_Q6_K, QT_TQ1_0, QT_TQ2_0, QT_IQ2_XXS, QT_IQ2_XS,
    QT_IQ2_S, QT_IQ3_XXS, QT_IQ3_S, QT_IQ1_S, QT_IQ1_M, QT_IQ4_NL, QT_IQ4_XS, QT_MXFP4,
    QT_NVFP4,
};
#define N_DQ (int)(sizeof dq_types / sizeof dq_types[0])

static float gauss(t_rng *r)
{
    float u1 = t_uniform(r), u2 = t_uniform(r);
    if (u1 < 1e-7f)
        u1 = 1e-7f;
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
}

/* ---- the type table ------------------------------------------------------ */

static void test_types(void)
{
    char why[200] = "";
    for (int t = 0; t < QT_COUNT && !why[0]; t++) {
        const quant_type_info *q = quant_type_get((uint32_t)t);
        int64_t gb = ggml_blck_size((enum ggml_type)t);
        if (!q) {
            if (gb != 0)
                snprintf(why, sizeof why, "id %d retired in q36, ggml has '%s' (blck %lld)", t,
                         ggml_type_name((enum ggml_type)t), (long long)gb);
            continue;
        }
        const char *gn = ggml_type_name((enum ggml_type)t);
        if (!gn || strcmp(gn, q->name) || gb != q->blck ||
            ggml_type_size((enum ggml_type)t) != q->size)
            snprintf(why, sizeof why, "id %d: q36 %s/%u/%u, ggml %s/%lld/%zu", t, q->name,
                     q->blck, q->size, gn ? gn : "(null)", (long long)gb,
                     ggml_type_size((enum ggml_type)t));
    }
    t_check("types_table", !why[0], "%s", why);
}

/* ---- scalar conversions --------------------------------------------------- */

static void test_fp16(void)
{
    int bad = -1;
    for (uint32_t h = 0; h < 65536 && bad < 0; h++) {
        float a = quant_f16_to_f32((uint16_t)h), b = ggml_fp16_to_fp32((ggml_fp16_t)h);
        if (quant_f32_bits(a) != quant_f32_bits(b))
            bad = (int)h;
    }
    if (bad >= 0)
        t_fail("fp16_to_f32_all", "h=0x%04x: q36 %08x, ggml %08x", bad,
               quant_f32_bits(quant_f16_to_f32((uint16_t)bad)),
               quant_f32_bits(ggml_fp16_to_fp32((ggml_fp16_t)bad)));
    else
        t_ok("fp16_to_f32_all");

    /* f32 -> f16: every f16 value, the exact midpoints to its neighbour
     * (ties) and one f32 ulp either side of them, both signs */
    char why[160] = "";
    for (uint32_t h = 0; h < 0x7C00 && !why[0]; h++) {
        float lo = quant_f16_to_f32((uint16_t)h);
        float hi = h + 1 < 0x7C00 ? quant_f16_to_f32((uint16_t)(h + 1)) : 65536.0f;
        float mid = (float)(((double)lo + hi) / 2);
        float c[5] = { lo, mid, nextafterf(mid, 0), nextafterf(mid, INFINITY), hi };
        for (int k = 0; k < 10; k++) {
            float x = k < 5 ? c[k] : -c[k - 5];
            uint16_t a = quant_f32_to_f16(x), b = ggml_fp32_to_fp16(x);
            if (a != b) {
                snprintf(why, sizeof why, "x=%.9g (%08x): q36 %04x, ggml %04x", (double)x,
                         quant_f32_bits(x), a, b);
                break;
            }
        }
    }
    t_check("f32_to_fp16_ties", !why[0], "%s", why);

    t_rng r = t_rng_named("f32_to_fp16_random");
    for (int i = 0; i < 1000000 && !why[0]; i++) {
        uint32_t u = (uint32_t)t_next(&r);
        if (i & 1)      /* half of them in the f16 range and below */
            u = (u & 0x807FFFFFu) | (uint32_t)(96 + (t_next(&r) % 48)) << 23;
        float x = quant_bits_f32(u);
        uint16_t a = quant_f32_to_f16(x), b = ggml_fp32_to_fp16(x);
        if (a != b)
            snprintf(why, sizeof why, "x=%.9g (%08x): q36 %04x, ggml %04x", (double)x, u, a, b);
    }
    t_check("f32_to_fp16_random", !why[0], "%s", why);

    r = t_rng_named("f32_to_bf16");
    for (int i = 0; i < 1000000 && !why[0]; i++) {
        uint32_t u = (uint32_t)t_next(&r);
        if (i % 4 == 0)   /* exact ties and their neighbours */
            u = (u & 0xFFFF0000u) | (0x8000u + (uint32_t)(i % 3) - 1);
        float x = quant_bits_f32(u);
        uint16_t a = quant_f32_to_bf16(x);
        ggml_bf16_t b = ggml_fp32_to_bf16(x);
        if (a != b.bits)
            snprintf(why, sizeof why, "x=%08x: q36 %04x, ggml %04x", u, a, b.bits);
        else if (quant_f32_bits(quant_bf16_to_f32(a)) != quant_f32_bits(ggml_bf16_to_fp32(b)))
            snprintf(why, sizeof why, "bf16 %04x back to f32 differs", a);
    }
    t_check("f32_to_bf16", !why[0], "%s", why);
}

/* ---- dequantization ------------------------------------------------------- */

/* Offsets of the f16 scale fields in a block of type t (-1 ends). */
static const int *f16_fields(uint32_t t)
{
    static const int d0[] = { 0, -1 }, d02[] = { 0, 2, -1 }, q2k[] = { 80, 82, -1 },
                     q3k[] = { 108, -1 }, q6k[] = { 208, -1 }, tq1[] = { 52, -1 },
                     tq2[] = { 64, -1 }, none[] = { -1 };
    switch (t) {
    case QT_Q4_1: case QT_Q5_1: case QT_Q4_K: case QT_Q5_K: return d02;
    case QT_Q2_K: return q2k;
    case QT_Q3_K: return q3k;
    case QT_Q6_K: return q6k;
    case QT_TQ1_0: return tq1;
    case QT_TQ2_0: return tq2;
    case QT_F32: case QT_F16: case QT_BF16: case QT_MXFP4: case QT_NVFP4: case QT_IQ1_M:
        return none;
    default: return d0;
    }
}

/* Puts f16 pattern h into the IQ1_M scale nibbles (top 4 bits of each of
 * the four u16 scale words), keeping the sub-block scales. */
static void iq1m_set_d(uint8_t *blk, uint16_t h)
{
    for (int k = 0; k < 4; k++) {
        uint16_t w;
        memcpy(&w, blk + 48 + 2 * k, 2);
        w = (uint16_t)((w & 0x0FFF) | ((h >> 4 * k) & 15) << 12);
        memcpy(blk + 48 + 2 * k, &w, 2);
    }
}

/* A finite f16 of realistic block-scale size: +-[2^-14, 2^2). */
static uint16_t rand_scale(t_rng *r)
{
    uint16_t e = (uint16_t)(1 + t_next(r) % 16);
    return (uint16_t)((t_next(r) & 1) << 15 | e << 10 | (t_next(r) & 0x3FF));
}

static void set_scales(uint32_t t, uint8_t *blk, uint16_t h)
{
    for (const int *o = f16_fields(t); *o >= 0; o++)
        memcpy(blk + *o, &h, 2);
    if (t == QT_IQ1_M)
        iq1m_set_d(blk, h);
}

/* Dequantizes n elements with q36 and ggml and compares the bits. */
static int compare(uint32_t t, const uint8_t *src, int64_t n, char *why, size_t wn)
{
    float *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
    int rc = 0;
    if (!a || !b) {
        snprintf(why, wn, "out of memory");
        rc = -1;
        goto out;
    }
    memset(a, 0xA5, (size_t)n * 4);
    int e = quant_dequant_row(t, src, a, n);
    if (e) {
        snprintf(why, wn, "quant_dequant_row returned %d for n=%lld", e, (long long)n);
        rc = -1;
        goto out;
    }
    ggml_to_float_t to_float = ggml_get_type_traits((enum ggml_type)t)->to_float;
    if (to_float)
        to_float(src, b, n);
    else if (t == QT_F32)           /* ggml has no to_float for f32: identity */
        memcpy(b, src, (size_t)n * 4);
    else {
        snprintf(why, wn, "ggml has no to_float for %s", quant_type_name(t));
        rc = -1;
        goto out;
    }
    for (int64_t i = 0; i < n; i++)
        if (quant_f32_bits(a[i]) != quant_f32_bits(b[i])) {
            snprintf(why, wn, "n=%lld element %lld: q36 %.9g (%08x), ggml %.9g (%08x)",
                     (long long)n, (long long)i, (double)a[i], quant_f32_bits(a[i]),
                     (double)b[i], quant_f32_bits(b[i]));
            rc = -1;
            break;
        }
out:
    free(a);
    free(b);
    return rc;
}

static void test_random(uint32_t t)
{
    const quant_type_info *q = quant_type_get(t);
    char name[64], why[256] = "";
    snprintf(name, sizeof name, "dequant_random_%s", q->name);
    t_rng r = t_rng_named(name);
    const int64_t lens[] = { q->blck, 256, 4096, 8192 };
    for (int li = 0; li < 4 && !why[0]; li++) {
        int64_t n = lens[li], nb = n / q->blck;
        uint8_t *buf = malloc((size_t)(nb * q->size));
        for (int64_t i = 0; i < nb * q->size; i++)
            buf[i] = (uint8_t)t_next(&r);
        for (int64_t i = 0; i < nb; i++) {
            uint8_t *blk = buf + i * q->size;
            set_scales(t, blk, rand_scale(&r));
            if (t == QT_Q4_1 || t == QT_Q5_1 || t == QT_Q2_K || t == QT_Q4_K || t == QT_Q5_K) {
                uint16_t m = rand_scale(&r);     /* a second, different scale */
                memcpy(blk + f16_fields(t)[1], &m, 2);
            }
            if (t == QT_MXFP4)
                blk[0] = (uint8_t)(100 + t_next(&r) % 40);
        }
        compare(t, buf, n, why, sizeof why);
        free(buf);
    }
    t_check(name, !why[0], "%s", why);
}

/* Fills x[0..n) with pattern p (0 gaussian, 1 ramp, 2 constant, 3 sparse,
 * 4 gaussian with one outlier). */
static void pattern(int p, float *x, int64_t n, t_rng *r)
{
    for (int64_t i = 0; i < n; i++) {
        switch (p) {
        case 0: x[i] = gauss(r); break;
        case 1: x[i] = -1.0f + 2.0f * (float)i / (float)n; break;
        case 2: x[i] = 0.75f; break;
        case 3: x[i] = t_uniform(r) < 0.05f ? gauss(r) * 3 : 0.0f; break;
        default: x[i] = gauss(r) * 0.02f; break;
        }
    }
    if (p == 4)
        x[n / 3] = 40.0f;
}

static void test_ggml_made(uint32_t t)
{
    const quant_type_info *q = quant_type_get(t);
    char name[64], why[256] = "";
    snprintf(name, sizeof name, "dequant_ggml_%s", q->name);
    t_rng r = t_rng_named(name);
    /* ggml's IQ1/IQ2 quantizers search a lattice per group and take
     * seconds per 4096-element row on one core: they get shorter rows */
    const int slow = t == QT_IQ1_S || t == QT_IQ1_M || t == QT_IQ2_S || t == QT_IQ2_XS ||
                     t == QT_IQ2_XXS;
    const int64_t lens[] = { 256, 512, slow ? 768 : 4096 };
    const int need_im = ggml_quantize_requires_imatrix((enum ggml_type)t);
    for (int li = 0; li < 3 && !why[0]; li++) {
        for (int p = 0; p < 5 && !why[0]; p++) {
            int64_t n = lens[li];
            float *x = malloc((size_t)n * 4), *im = malloc((size_t)n * 4);
            uint8_t *buf = malloc((size_t)quant_row_bytes(t, (uint64_t)n));
            pattern(p, x, n, &r);
            for (int64_t i = 0; i < n; i++)
                im[i] = 0.1f + t_uniform(&r);
            size_t got = ggml_quantize_chunk((enum ggml_type)t, x, buf, 0, 1, n,
                                             need_im || (p & 1) ? im : NULL);
            if (got != quant_row_bytes(t, (uint64_t)n))
                snprintf(why, sizeof why, "ggml_quantize_chunk wrote %zu bytes, expected %llu",
                         got, (unsigned long long)quant_row_bytes(t, (uint64_t)n));
            else
                compare(t, buf, n, why, sizeof why);
            if (why[0] && !strstr(why, "pattern")) {
                size_t l = strlen(why);
                snprintf(why + l, sizeof why - l, " (pattern %d)", p);
            }
            free(x);
            free(im);
            free(buf);
        }
    }
    t_check(name, !why[0], "%s", why);
}

static void test_edge(uint32_t t)
{
    const quant_type_info *q = quant_type_get(t);
    char name[64], why[256] = "";
    snprintf(name, sizeof name, "dequant_edge_%s", q->name);
    t_rng r = t_rng_named(name);
    const int64_t nb = 256 / q->blck * 2;         /* two super-blocks' worth */
    uint8_t *buf = malloc((size_t)(nb * q->size));
    const uint16_t scales[] = { 0x0000, 0x8000, 0x0001, 0x03FF, 0x8200, 0x0400,
                                0x7BFF, 0xFBFF, 0x3C00, 0x7C00 };
    for (int s = 0; s < 10 && !why[0]; s++) {
        for (int fill = 0; fill < 3 && !why[0]; fill++) {
            for (int64_t i = 0; i < nb * q->size; i++)
                buf[i] = fill == 0 ? 0x00 : fill == 1 ? 0xFF : (uint8_t)t_next(&r);
            for (int64_t i = 0; i < nb; i++) {
                uint8_t *blk = buf + i * q->size;
                if (t == QT_MXFP4) {
                    static const uint8_t e8[] = { 0, 1, 2, 126, 127, 128, 129, 254, 255, 3 };
                    blk[0] = e8[(s + i) % 10];
                } else if (t == QT_NVFP4) {
                    static const uint8_t u4[] = { 0x00, 0x7F, 0x01, 0x07, 0x08, 0x7E, 0x80,
                                                  0xFF, 0xFE, 0x38 };
                    for (int k = 0; k < 4; k++)
                        blk[k] = u4[(s + i + k) % 10];
                } else if (t != QT_F32 && t != QT_F16 && t != QT_BF16) {
                    /* inf (0x7C00) only once, in the all-zero fill, to show
                     * the non-finite path agrees too */
                    uint16_t h = scales[s];
                    if (h == 0x7C00 && fill)
                        h = 0x7BFF;
                    set_scales(t, blk, h);
                }
            }
            if (t == QT_F16 || t == QT_BF16) {        /* extremes as elements */
                for (int64_t i = 0; i < nb; i++) {
                    uint16_t h = scales[(s + i) % 10];
                    memcpy(buf + 2 * i, &h, 2);
                }
            }
            compare(t, buf, nb * q->blck, why, sizeof why);
            if (why[0]) {
                size_t l = strlen(why);
                snprintf(why + l, sizeof why - l, " (scale case %d, fill %d)", s, fill);
            }
        }
    }
    free(buf);
    t_check(name, !why[0], "%s", why);
}

/* Q8_1 and Q8_K are activation formats: ggml registers no to_float for
 * them. Q8_K is checked against libggml-base's exported (not in ggml.h)
 * dequantize_row_q8_K; Q8_1 against ggml's Q8_0 to_float of the same d and
 * codes, on blocks made by ggml's quantize_row_q8_*_ref and on random
 * blocks. */
void dequantize_row_q8_K(const void *x, float *y, int64_t k);
void quantize_row_q8_K_ref(const float *x, void *y, int64_t k);
void quantize_row_q8_1_ref(const float *x, void *y, int64_t k);

static void test_act_formats(void)
{
    const int64_t n = 4096;
    float *x = malloc(n * 4), *a = malloc(n * 4), *b = malloc(n * 4);
    uint8_t *q = malloc(n / 32 * 36 + n / 256 * 292), *q0 = malloc(n / 32 * 34);
    char why[256] = "";
    t_rng r = t_rng_named("dequant_q8_K");
    for (int rep = 0; rep < 2 && !why[0]; rep++) {
        for (int64_t i = 0; i < n; i++)
            x[i] = gauss(&r);
        if (rep == 0)
            quantize_row_q8_K_ref(x, q, n);
        else
            for (int64_t i = 0; i < n / 256 * 292; i++)
                q[i] = (uint8_t)t_next(&r);
        for (int64_t bl = 0; rep == 1 && bl < n / 256; bl++) {
            float d = gauss(&r) * 0.01f;
            memcpy(q + bl * 292, &d, 4);
        }
        quant_dequant_row(QT_Q8_K, q, a, n);
        dequantize_row_q8_K(q, b, n);
        for (int64_t i = 0; i < n && !why[0]; i++)
            if (quant_f32_bits(a[i]) != quant_f32_bits(b[i]))
                snprintf(why, sizeof why, "rep %d element %lld: q36 %.9g, ggml %.9g", rep,
                         (long long)i, (double)a[i], (double)b[i]);
    }
    t_check("dequant_q8_K", !why[0], "%s", why);

    r = t_rng_named("dequant_q8_1");
    for (int rep = 0; rep < 2 && !why[0]; rep++) {
        for (int64_t i = 0; i < n; i++)
            x[i] = gauss(&r);
        if (rep == 0)
            quantize_row_q8_1_ref(x, q, n);
        else
            for (int64_t i = 0; i < n / 32 * 36; i++)
                q[i] = (uint8_t)t_next(&r);
        for (int64_t bl = 0; bl < n / 32; bl++) {
            if (rep == 1) {
                uint16_t h = rand_scale(&r);
                memcpy(q + bl * 36, &h, 2);
            }
            memcpy(q0 + bl * 34, q + bl * 36, 2);
            memcpy(q0 + bl * 34 + 2, q + bl * 36 + 4, 32);
        }
        quant_dequant_row(QT_Q8_1, q, a, n);
        ggml_get_type_traits(GGML_TYPE_Q8_0)->to_float(q0, b, n);
        for (int64_t i = 0; i < n && !why[0]; i++)
            if (quant_f32_bits(a[i]) != quant_f32_bits(b[i]))
                snprintf(why, sizeof why, "rep %d element %lld: q36 %.9g, ggml %.9g", rep,
                         (long long)i, (double)a[i], (double)b[i]);
    }
    t_check("dequant_q8_1", !why[0], "%s", why);
    free(x);
    free(a);
    free(b);
    free(q);
    free(q0);
}

static void test_api_errors(void)
{
    float y[256];
    uint8_t b[400] = { 0 };
    int e1 = quant_dequant_row(QT_I8, b, y, 32);
    int e2 = quant_dequant_row(QT_Q4_K, b, y, 128);
    int e3 = quant_dequant_row(4, b, y, 32);
    int e4 = quant_dequant_row(QT_Q4_0, b, y, 64);
    t_check("dequant_api_errors", e1 == Q36_E_UNSUP && e2 == Q36_E_ARG && e3 == Q36_E_UNSUP && e4 == 0,
            "I8 -> %d, q4_K n=128 -> %d, id 4 -> %d, q4_0 n=64 -> %d", e1, e2, e3, e4);
}

/* ggml_quantize_init for IQ1_S/IQ1_M (shared grid) and IQ2_S builds
 * neighbour tables for ~20 s of one core: their ggml-made cases run in
 * their own program, test_ggml_quant_iqmade (which includes this file). */
static int slow_init(uint32_t t)
{
    return t == QT_IQ1_S || t == QT_IQ1_M || t == QT_IQ2_S;
}

#ifdef QUANT_TEST_IQMADE
int main(void)
{
    for (int i = 0; i < N_DQ; i++)
        if (slow_init(dq_types[i]))
            test_ggml_made(dq_types[i]);
    return t_exit();
}
#else
int main(void)
{
    test_types();
    test_fp16();
    test_api_errors();
    test_act_formats();
    for (int i = 0; i < N_DQ; i++) {
        test_random(dq_types[i]);
        if (!slow_init(dq_types[i]))
            test_ggml_made(dq_types[i]);
        test_edge(dq_types[i]);
    }
    return t_exit();
}
#endif
