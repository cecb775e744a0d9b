/* dot_ref.c: reference dot products of one quantized weight row with one
 * activation row in the weight type's vec_dot_type (MODEL.md 7.4). Each
 * block contributes exact integer sums times its float scales, and the
 * block terms are accumulated in f32 in row order. They read like the
 * math; the fast twins (dot_avx2.c) and ggml's kernels only reorder the
 * f32 work, which tests/test_ggml_quant_dot.c bounds. */
#include <math.h>

#include "dot_impl.h"
#include "iq_tables.h"
#include "quant_impl.h"

#define Q8_0_D(a)  quant_rdf16(a)
#define Q8_0_QS(a) ((const int8_t *)((a) + 2))

static inline float q8k_d(const uint8_t *a)
{
    float d;
    memcpy(&d, a, 4);
    return d;
}

static inline int q8k_bsum(const uint8_t *a, int g)
{
    return (int16_t)quant_rd16(a + 260 + 2 * g);
}

/* ---- float types: partial sums of 32 elements, then the row ------------ */

float quant_dot_f32_ref(int64_t n, const void *vw, const void *va)
{
    const float *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i += 32) {
        float p = 0.0f;
        for (int64_t j = i; j < i + 32 && j < n; j++)
            p += w[j] * a[j];
        sum += p;
    }
    return sum;
}

float quant_dot_f16_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i += 32) {
        float p = 0.0f;
        for (int64_t j = i; j < i + 32 && j < n; j++)
            p += quant_rdf16(w + 2 * j) * quant_rdf16(a + 2 * j);
        sum += p;
    }
    return sum;
}

float quant_dot_bf16_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i += 32) {
        float p = 0.0f;
        for (int64_t j = i; j < i + 32 && j < n; j++)
            p += quant_bf16_to_f32(quant_rd16(w + 2 * j)) * quant_bf16_to_f32(quant_rd16(a + 2 * j));
        sum += p;
    }
    return sum;
}

/* ---- 32-element blocks with Q8_0 / Q8_1 activations -------------------- */

float quant_dot_q4_0_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 32; i++, w += 18, a += 34) {
        const int8_t *q = Q8_0_QS(a);
        int isum = 0;
        for (int j = 0; j < 16; j++)
            isum += ((w[2 + j] & 15) - 8) * q[j] + ((w[2 + j] >> 4) - 8) * q[j + 16];
        sum += (float)isum * (quant_rdf16(w) * Q8_0_D(a));
    }
    return sum;
}

/* With Q8_1: value = d*c + m, so the block is d*da*sum(c*q) + m*s, where
 * s is the activation block's stored f16(da * sum q). */
float quant_dot_q4_1_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 32; i++, w += 20, a += 36) {
        const int8_t *q = (const int8_t *)(a + 4);
        int isum = 0;
        for (int j = 0; j < 16; j++)
            isum += (w[4 + j] & 15) * q[j] + (w[4 + j] >> 4) * q[j + 16];
        sum += (float)isum * (quant_rdf16(w) * quant_rdf16(a)) + quant_rdf16(w + 2) * quant_rdf16(a + 2);
    }
    return sum;
}

float quant_dot_q5_0_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 32; i++, w += 22, a += 34) {
        const int8_t *q = Q8_0_QS(a);
        const uint32_t qh = quant_rd32(w + 2);
        int isum = 0;
        for (int j = 0; j < 16; j++) {
            int c0 = ((w[6 + j] & 15) | ((qh >> j) & 1) << 4) - 16;
            int c1 = ((w[6 + j] >> 4) | ((qh >> (j + 16)) & 1) << 4) - 16;
            isum += c0 * q[j] + c1 * q[j + 16];
        }
        sum += (float)isum * (quant_rdf16(w) * Q8_0_D(a));
    }
    return sum;
}

float quant_dot_q5_1_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 32; i++, w += 24, a += 36) {
        const int8_t *q = (const int8_t *)(a + 4);
        const uint32_t qh = quant_rd32(w + 4);
        int isum = 0;
        for (int j = 0; j < 16; j++) {
            int c0 = (w[8 + j] & 15) | ((qh >> j) & 1) << 4;
            int c1 = (w[8 + j] >> 4) | ((qh >> (j + 16)) & 1) << 4;
            isum += c0 * q[j] + c1 * q[j + 16];
        }
        sum += (float)isum * (quant_rdf16(w) * quant_rdf16(a)) + quant_rdf16(w + 2) * quant_rdf16(a + 2);
    }
    return sum;
}

float quant_dot_q8_0_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 32; i++, w += 34, a += 34) {
        const int8_t *qw = Q8_0_QS(w), *q = Q8_0_QS(a);
        int isum = 0;
        for (int j = 0; j < 32; j++)
            isum += qw[j] * q[j];
        sum += (float)isum * (quant_rdf16(w) * Q8_0_D(a));
    }
    return sum;
}

/* 128 elements against four Q8_0 blocks: +-1 codes. */
float quant_dot_q1_0_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 128; i++, w += 18) {
        const float d = quant_rdf16(w);
        for (int k = 0; k < 4; k++, a += 34) {
            const int8_t *q = Q8_0_QS(a);
            int isum = 0;
            for (int j = 0; j < 32; j++) {
                int e = 32 * k + j;
                isum += (w[2 + e / 8] >> (e % 8) & 1) ? q[j] : -q[j];
            }
            sum += (float)isum * (d * Q8_0_D(a));
        }
    }
    return sum;
}

/* 64 elements against two Q8_0 blocks: codes c - 1 in {-1, 0, 1, 2}. */
float quant_dot_q2_0_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 64; i++, w += 18) {
        const float d = quant_rdf16(w);
        for (int k = 0; k < 2; k++, a += 34) {
            const int8_t *q = Q8_0_QS(a);
            int isum = 0;
            for (int j = 0; j < 32; j++) {
                int e = 32 * k + j;
                isum += (((w[2 + e / 4] >> (2 * (e % 4))) & 3) - 1) * q[j];
            }
            sum += (float)isum * (d * Q8_0_D(a));
        }
    }
    return sum;
}

float quant_dot_mxfp4_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 32; i++, w += 17, a += 34) {
        const int8_t *q = Q8_0_QS(a);
        int isum = 0;
        for (int j = 0; j < 16; j++)
            isum += quant_kvalues_fp4[w[1 + j] & 15] * q[j] + quant_kvalues_fp4[w[1 + j] >> 4] * q[j + 16];
        sum += (float)isum * (quant_e8m0_half(w[0]) * Q8_0_D(a));
    }
    return sum;
}

/* 64 elements against two Q8_0 blocks; sub-block s (16 elements, its own
 * UE4M3 scale) lies in activation block s/2 at offset 16*(s%2). */
float quant_dot_nvfp4_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 64; i++, w += 36, a += 68) {
        for (int s = 0; s < 4; s++) {
            const uint8_t *ab = a + 34 * (s / 2);
            const int8_t *q = Q8_0_QS(ab) + 16 * (s % 2);
            const uint8_t *c = w + 4 + 8 * s;
            int isum = 0;
            for (int j = 0; j < 8; j++)
                isum += quant_kvalues_fp4[c[j] & 15] * q[j] + quant_kvalues_fp4[c[j] >> 4] * q[j + 8];
            sum += (float)isum * (quant_ue4m3_half(w[s]) * Q8_0_D(ab));
        }
    }
    return sum;
}

float quant_dot_iq4_nl_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 32; i++, w += 18, a += 34) {
        const int8_t *q = Q8_0_QS(a);
        int isum = 0;
        for (int j = 0; j < 16; j++)
            isum += quant_kvalues_iq4nl[w[2 + j] & 15] * q[j] + quant_kvalues_iq4nl[w[2 + j] >> 4] * q[j + 16];
        sum += (float)isum * (quant_rdf16(w) * Q8_0_D(a));
    }
    return sum;
}

/* ---- 256-element super-blocks with Q8_K activations --------------------- */

float quant_dot_q2_K_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 256; i++, w += 84, a += 292) {
        const int8_t *q8 = (const int8_t *)(a + 4);
        int isum = 0, msum = 0;
        for (int k = 0; k < 16; k++) {
            const int n2 = k / 8, j = (k % 8) / 2, h = k % 2;
            const uint8_t *qs = w + 16 + 32 * n2 + 16 * h;
            int s = 0;
            for (int l = 0; l < 16; l++)
                s += ((qs[l] >> (2 * j)) & 3) * q8[16 * k + l];
            isum += (w[k] & 15) * s;
            msum += (w[k] >> 4) * q8k_bsum(a, k);
        }
        const float da = q8k_d(a);
        sum += da * quant_rdf16(w + 80) * (float)isum - da * quant_rdf16(w + 82) * (float)msum;
    }
    return sum;
}

float quant_dot_q3_K_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 256; i++, w += 110, a += 292) {
        const int8_t *q8 = (const int8_t *)(a + 4);
        int8_t sc[16];
        quant_q3k_scales(w + 96, sc);
        int isum = 0;
        for (int k = 0; k < 16; k++) {
            const int n2 = k / 8, j = (k % 8) / 2, h = k % 2;
            const uint8_t *qs = w + 32 + 32 * n2 + 16 * h, *hm = w + 16 * h;
            const uint8_t bit = (uint8_t)(1u << (4 * n2 + j));
            int s = 0;
            for (int l = 0; l < 16; l++)
                s += (((qs[l] >> (2 * j)) & 3) - (hm[l] & bit ? 0 : 4)) * q8[16 * k + l];
            isum += sc[k] * s;
        }
        sum += q8k_d(a) * quant_rdf16(w + 108) * (float)isum;
    }
    return sum;
}

/* Q4_K and Q5_K: sub-block k (32 elements) has scale sc_k and min m_k; the
 * min term needs only the activation sums, bsums[2k] + bsums[2k+1]. */
static float dot_k45(int64_t n, const uint8_t *w, const uint8_t *a, int five)
{
    const int bs = five ? 176 : 144;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 256; i++, w += bs, a += 292) {
        const int8_t *q8 = (const int8_t *)(a + 4);
        const uint8_t *qh = w + 16, *qs = w + (five ? 48 : 16);
        int isum = 0, msum = 0;
        for (int k = 0; k < 8; k++) {
            uint8_t sc, m;
            quant_k4_scale_min(k, w + 4, &sc, &m);
            const int c = k / 2, hi = k % 2;
            int s = 0;
            for (int l = 0; l < 32; l++) {
                int code = hi ? qs[32 * c + l] >> 4 : qs[32 * c + l] & 15;
                if (five)
                    code |= ((qh[l] >> k) & 1) << 4;
                s += code * q8[32 * k + l];
            }
            isum += sc * s;
            msum += m * (q8k_bsum(a, 2 * k) + q8k_bsum(a, 2 * k + 1));
        }
        const float da = q8k_d(a);
        sum += da * quant_rdf16(w) * (float)isum - da * quant_rdf16(w + 2) * (float)msum;
    }
    return sum;
}

float quant_dot_q4_K_ref(int64_t n, const void *w, const void *a)
{
    return dot_k45(n, w, a, 0);
}

float quant_dot_q5_K_ref(int64_t n, const void *w, const void *a)
{
    return dot_k45(n, w, a, 1);
}

float quant_dot_q6_K_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 256; i++, w += 210, a += 292) {
        const int8_t *q8 = (const int8_t *)(a + 4);
        const int8_t *sc = (const int8_t *)(w + 192);
        int isum = 0;
        for (int k = 0; k < 16; k++) {
            /* sub-block k = 8*half + 2*quarter + is covers elements
             * 128*half + 32*quarter + 16*is + l */
            const int half = k / 8, quarter = (k % 8) / 2, is = k % 2;
            const uint8_t *ql = w + 64 * half + 32 * (quarter & 1) + 16 * is;
            const uint8_t *qh = w + 128 + 32 * half + 16 * is;
            int s = 0;
            for (int l = 0; l < 16; l++) {
                int lo = quarter < 2 ? ql[l] & 15 : ql[l] >> 4;
                int code = (lo | ((qh[l] >> (2 * quarter)) & 3) << 4) - 32;
                s += code * q8[16 * k + l];
            }
            isum += sc[k] * s;
        }
        sum += q8k_d(a) * quant_rdf16(w + 208) * (float)isum;
    }
    return sum;
}

float quant_dot_tq1_0_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    float y[256];
    for (int64_t i = 0; i < n / 256; i++, w += 54, a += 292) {
        /* the codes are small integers: dequantize with d = 1 (exact) */
        uint8_t blk[54];
        memcpy(blk, w, 52);
        blk[52] = 0x00, blk[53] = 0x3C;          /* f16 1.0 */
        quant_dequant_tq1_0_ref(blk, y, 1);
        const int8_t *q8 = (const int8_t *)(a + 4);
        int isum = 0;
        for (int j = 0; j < 256; j++)
            isum += (int)y[j] * q8[j];
        sum += q8k_d(a) * quant_rdf16(w + 52) * (float)isum;
    }
    return sum;
}

float quant_dot_tq2_0_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 256; i++, w += 66, a += 292) {
        const int8_t *q8 = (const int8_t *)(a + 4);
        int isum = 0, e = 0;
        for (int j = 0; j < 64; j += 32)
            for (int l = 0; l < 4; l++)
                for (int m = 0; m < 32; m++, e++)
                    isum += (((w[j + m] >> (2 * l)) & 3) - 1) * q8[e];
        sum += q8k_d(a) * quant_rdf16(w + 64) * (float)isum;
    }
    return sum;
}

/* ---- IQ types with Q8_K activations ------------------------------------- */

/* sum over 8 elements of sign(bit j of signs) * mag[j] * q[j] */
static inline int signed_dot8(const uint8_t *mag, uint8_t signs, const int8_t *q)
{
    int s = 0;
    for (int j = 0; j < 8; j++)
        s += (signs >> j & 1 ? -mag[j] : mag[j]) * q[j];
    return s;
}

/* IQ2_XXS/IQ2_XS/IQ2_S: element = d*(2s+1)/8 * grid * sign. */
float quant_dot_iq2_xxs_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 256; i++, w += 66, a += 292) {
        const int8_t *q8 = (const int8_t *)(a + 4);
        int isum = 0;
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *idx = w + 2 + 8 * ib;
            const uint32_t a1 = quant_rd32(idx + 4);
            int s = 0;
            for (int l = 0; l < 4; l++)
                s += signed_dot8((const uint8_t *)(quant_iq2xxs_grid + idx[l]),
                                 quant_ksigns_iq2xs[(a1 >> 7 * l) & 127], q8 + 32 * ib + 8 * l);
            isum += (int)(2 * (a1 >> 28) + 1) * s;
        }
        sum += quant_rdf16(w) * q8k_d(a) * (float)isum;
    }
    return 0.125f * sum;
}

float quant_dot_iq2_xs_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 256; i++, w += 74, a += 292) {
        const int8_t *q8 = (const int8_t *)(a + 4);
        int isum = 0;
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t sc = w[66 + ib];
            for (int l = 0; l < 4; l++) {
                const uint16_t q = quant_rd16(w + 2 + 2 * (4 * ib + l));
                int s = signed_dot8((const uint8_t *)(quant_iq2xs_grid + (q & 511)),
                                    quant_ksigns_iq2xs[q >> 9], q8 + 32 * ib + 8 * l);
                isum += (2 * (l < 2 ? sc & 15 : sc >> 4) + 1) * s;
            }
        }
        sum += quant_rdf16(w) * q8k_d(a) * (float)isum;
    }
    return 0.125f * sum;
}

float quant_dot_iq2_s_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 256; i++, w += 82, a += 292) {
        const int8_t *q8 = (const int8_t *)(a + 4);
        const uint8_t *qs = w + 2, *signs = w + 34, *qh = w + 66, *sc = w + 74;
        int isum = 0;
        for (int ib = 0; ib < 8; ib++) {
            for (int l = 0; l < 4; l++) {
                int gi = qs[4 * ib + l] | ((qh[ib] << (8 - 2 * l)) & 0x300);
                int s = signed_dot8((const uint8_t *)(quant_iq2s_grid + gi), signs[4 * ib + l],
                                    q8 + 32 * ib + 8 * l);
                isum += (2 * (l < 2 ? sc[ib] & 15 : sc[ib] >> 4) + 1) * s;
            }
        }
        sum += quant_rdf16(w) * q8k_d(a) * (float)isum;
    }
    return 0.125f * sum;
}

/* Four magnitudes from a u32 grid entry followed by four from another. */
static inline int signed_dot44(const uint32_t *grid, int g1, int g2, uint8_t signs,
                               const int8_t *q)
{
    uint8_t mag[8];
    memcpy(mag, grid + g1, 4);
    memcpy(mag + 4, grid + g2, 4);
    return signed_dot8(mag, signs, q);
}

/* element = d*(2s+1)/4 * grid * sign */
float quant_dot_iq3_xxs_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 256; i++, w += 98, a += 292) {
        const int8_t *q8 = (const int8_t *)(a + 4);
        const uint8_t *qs = w + 2;
        int isum = 0;
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t aux = quant_rd32(w + 66 + 4 * ib);
            int s = 0;
            for (int l = 0; l < 4; l++)
                s += signed_dot44(quant_iq3xxs_grid, qs[8 * ib + 2 * l], qs[8 * ib + 2 * l + 1],
                                  quant_ksigns_iq2xs[(aux >> 7 * l) & 127], q8 + 32 * ib + 8 * l);
            isum += (int)(2 * (aux >> 28) + 1) * s;
        }
        sum += quant_rdf16(w) * q8k_d(a) * (float)isum;
    }
    return 0.25f * sum;
}

/* element = d*(2s+1) * grid * sign */
float quant_dot_iq3_s_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 256; i++, w += 110, a += 292) {
        const int8_t *q8 = (const int8_t *)(a + 4);
        const uint8_t *qs = w + 2, *qh = w + 66, *signs = w + 74, *sc = w + 106;
        int isum = 0;
        for (int ib = 0; ib < 8; ib++) {
            const int h = qh[ib];
            int s = 0;
            for (int l = 0; l < 4; l++) {
                int g1 = qs[8 * ib + 2 * l] | ((h << (8 - 2 * l)) & 256);
                int g2 = qs[8 * ib + 2 * l + 1] | ((h << (7 - 2 * l)) & 256);
                s += signed_dot44(quant_iq3s_grid, g1, g2, signs[4 * ib + l], q8 + 32 * ib + 8 * l);
            }
            isum += (2 * (ib & 1 ? sc[ib / 2] >> 4 : sc[ib / 2] & 15) + 1) * s;
        }
        sum += quant_rdf16(w) * q8k_d(a) * (float)isum;
    }
    return sum;
}

static inline int grid1_dot8(int gi, const int8_t *q)
{
    const int8_t *g = (const int8_t *)(quant_iq1s_grid + gi);
    int s = 0;
    for (int j = 0; j < 8; j++)
        s += g[j] * q[j];
    return s;
}

/* element = d*(2s+1) * (grid + delta): the delta part needs the activation
 * sums of each sub-block, bsums[2ib] + bsums[2ib+1]. */
float quant_dot_iq1_s_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 256; i++, w += 50, a += 292) {
        const int8_t *q8 = (const int8_t *)(a + 4);
        int isum = 0, dsum = 0;
        for (int ib = 0; ib < 8; ib++) {
            const uint16_t h = quant_rd16(w + 34 + 2 * ib);
            const int ls = 2 * ((h >> 12) & 7) + 1;
            int s = 0;
            for (int l = 0; l < 4; l++)
                s += grid1_dot8(w[2 + 4 * ib + l] | ((h >> 3 * l) & 7) << 8, q8 + 32 * ib + 8 * l);
            const int bsum = q8k_bsum(a, 2 * ib) + q8k_bsum(a, 2 * ib + 1);
            isum += ls * s;
            dsum += ls * (h & 0x8000 ? -bsum : bsum);
        }
        sum += quant_rdf16(w) * q8k_d(a) * ((float)isum + QUANT_IQ1_DELTA * (float)dsum);
    }
    return sum;
}

/* IQ1_M: like IQ1_S with a scale per 16 elements and a delta sign per 8,
 * so the delta part sums the activations of each 8-element group. */
float quant_dot_iq1_m_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 256; i++, w += 56, a += 292) {
        const int8_t *q8 = (const int8_t *)(a + 4);
        uint16_t sc[4];
        for (int k = 0; k < 4; k++)
            sc[k] = quant_rd16(w + 48 + 2 * k);
        const uint16_t dbits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) |
                                          ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
        int isum = 0, dsum = 0;
        for (int ib = 0; ib < 8; ib++) {
            const int sh = 6 * (ib % 2);
            for (int l = 0; l < 4; l++) {
                const uint8_t h = w[32 + 2 * ib + l / 2];
                const int ls = 2 * ((sc[ib / 2] >> (sh + 3 * (l / 2))) & 7) + 1;
                const int gi = w[4 * ib + l] | ((l & 1 ? h << 4 : h << 8) & 0x700);
                const int8_t *q = q8 + 32 * ib + 8 * l;
                int asum = 0;
                for (int j = 0; j < 8; j++)
                    asum += q[j];
                isum += ls * grid1_dot8(gi, q);
                dsum += ls * (h & (l & 1 ? 0x80 : 0x08) ? -asum : asum);
            }
        }
        sum += quant_f16_to_f32(dbits) * q8k_d(a) * ((float)isum + QUANT_IQ1_DELTA * (float)dsum);
    }
    return sum;
}

float quant_dot_iq4_xs_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 256; i++, w += 136, a += 292) {
        const int8_t *q8 = (const int8_t *)(a + 4);
        const uint16_t sh = quant_rd16(w + 2);
        const uint8_t *qs = w + 8;
        int isum = 0;
        for (int ib = 0; ib < 8; ib++) {
            const int ls = ((w[4 + ib / 2] >> 4 * (ib % 2)) & 15) | ((sh >> 2 * ib) & 3) << 4;
            int s = 0;
            for (int j = 0; j < 16; j++)
                s += quant_kvalues_iq4nl[qs[16 * ib + j] & 15] * q8[32 * ib + j] +
                     quant_kvalues_iq4nl[qs[16 * ib + j] >> 4] * q8[32 * ib + 16 + j];
            isum += (ls - 32) * s;
        }
        sum += quant_rdf16(w) * q8k_d(a) * (float)isum;
    }
    return sum;
}
