/* quant_bound.h: the rounding bound between two dot-product kernels of
 * src/quant, and random weight rows to test them on (header-only, for
 * test programs that include test.h and quant/quant.h).
 *
 * Derivation (as in tests/test_ggml_quant_dot.c): two kernels compute the
 * same real number E = sum over blocks of (float scales) * (exact integer
 * sums) and differ only in the order and rounding of the f32 work. With
 * at most one term per 16 elements, a 32-deep partial sum and a final
 * reduction, each side is within gamma_K * S of E, K = n/16 + 40,
 * u = 2^-24, S = sum_i (|w_i| + |o_i|) |a_i| (w_i the dequantized weight,
 * o_i the offset a kernel may pull out of it: the value with the code bits
 * cleared, a_i the dequantized activation). Hence
 *     |kernel1 - kernel2| <= 2.01 * K * u * S.
 */
#ifndef Q36_TEST_QUANT_BOUND_H
#define Q36_TEST_QUANT_BOUND_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant/fp16.h"
#include "quant/quant.h"
#include "test.h"

/* Byte range [lo, hi) of the code bits in a block (cleared to find the
 * offset o_i); lo == hi for types no kernel splits. */
static inline void qb_code_bytes(uint32_t t, int *lo, int *hi)
{
    const int size = (int)quant_type_get(t)->size;
    int l = 0, h = 0;
    switch (t) {
    case QT_Q4_0: case QT_Q5_0: case QT_Q8_0: case QT_Q1_0: case QT_Q2_0: case QT_IQ4_NL:
        l = 2, h = size; break;
    case QT_Q4_1: case QT_Q5_1: l = 4, h = size; break;
    case QT_Q2_K: l = 16, h = 80; break;
    case QT_Q3_K: l = 0, h = 96; break;
    case QT_Q4_K: case QT_Q5_K: l = 16, h = size; break;
    case QT_Q6_K: l = 0, h = 192; break;
    case QT_TQ1_0: l = 0, h = 52; break;
    case QT_TQ2_0: l = 0, h = 64; break;
    case QT_IQ4_XS: l = 8, h = 136; break;
    default: break;
    }
    *lo = l, *hi = h;
}

/* S of the bound, in double, for weight row w of type t and the
 * dequantized activations a. IQ1 types: the +-1/8 delta is at most |w_i|
 * (grid values are -1, 0, 1), so o_i = w_i. */
static inline double qb_abs_sum(uint32_t t, const uint8_t *w, const float *a, int64_t n)
{
    const quant_type_info *q = quant_type_get(t);
    const size_t rb = quant_row_bytes(t, (uint64_t)n);
    float *wd = malloc((size_t)n * 4), *od = malloc((size_t)n * 4);
    uint8_t *z = malloc(rb);
    memcpy(z, w, rb);
    int lo, hi;
    qb_code_bytes(t, &lo, &hi);
    for (int64_t b = 0; b < n / q->blck; b++)
        memset(z + b * q->size + lo, 0, (size_t)(hi - lo));
    quant_dequant_row(t, w, wd, n);
    quant_dequant_row(t, z, od, n);
    double s = 0;
    for (int64_t i = 0; i < n; i++) {
        double o = t == QT_IQ1_S || t == QT_IQ1_M ? fabs(wd[i]) : lo < hi ? fabs(od[i]) : 0.0;
        s += (fabs(wd[i]) + o) * fabs(a[i]);
    }
    free(wd);
    free(od);
    free(z);
    return s;
}

/* The bound for rows of n elements with sum S. */
static inline double qb_bound(int64_t n, double S)
{
    return 2.01 * ((double)n / 16 + 40) * ldexp(1.0, -24) * S;
}

/* Offsets of the f16 scale fields of a block (-1 ends). */
static inline const int *qb_f16_fields(uint32_t t)
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
    case QT_MXFP4: case QT_NVFP4: case QT_IQ1_M: return none;
    default: return d0;
    }
}

static inline float qb_gauss(t_rng *r)
{
    float u1 = t_uniform(r), u2 = t_uniform(r);
    if (u1 < 1e-7f)
        u1 = 1e-7f;
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
}

/* A weight row of n elements of type t: random bytes (every code pattern)
 * with finite block scales of realistic size (~[0.008, 0.06), either
 * sign); for F32/F16/BF16, gaussian values times 0.05. */
static inline void qb_random_weights(uint32_t t, t_rng *r, uint8_t *w, int64_t n)
{
    const quant_type_info *q = quant_type_get(t);
    if (q->blck == 1) {
        for (int64_t i = 0; i < n; i++) {
            const float v = qb_gauss(r) * 0.05f;
            if (t == QT_F32) {
                memcpy(w + 4 * i, &v, 4);
            } else {
                uint16_t h = t == QT_F16 ? quant_f32_to_f16(v) : quant_f32_to_bf16(v);
                memcpy(w + 2 * i, &h, 2);
            }
        }
        return;
    }
    for (uint64_t i = 0; i < quant_row_bytes(t, (uint64_t)n); i++)
        w[i] = (uint8_t)t_next(r);
    for (int64_t b = 0; b < n / q->blck; b++) {
        uint8_t *blk = w + b * q->size;
        uint16_t h = (uint16_t)(0x2000 + t_next(r) % 0x0C00);
        if (t == QT_MXFP4) {
            blk[0] = (uint8_t)(118 + t_next(r) % 8);
        } else if (t == QT_NVFP4) {
            for (int k = 0; k < 4; k++)
                blk[k] = (uint8_t)(0x10 + t_next(r) % 0x30);
        } else if (t == QT_IQ1_M) {
            for (int k = 0; k < 4; k++) {
                uint16_t v;
                memcpy(&v, blk + 48 + 2 * k, 2);
                v = (uint16_t)((v & 0x0FFF) | ((h >> 4 * k) & 15) << 12);
                memcpy(blk + 48 + 2 * k, &v, 2);
            }
        } else {
            for (const int *o = qb_f16_fields(t); *o >= 0; o++, h ^= 0x8155)
                memcpy(blk + *o, &h, 2);
        }
    }
}

#endif
