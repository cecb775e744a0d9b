/* dequant_legacy.c: reference dequantizers of the small-block formats with
 * one f16 scale per block: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1 (32 elements),
 * Q1_0 (128) and Q2_0 (64). Layouts in MODEL.md 7.2. The float operations
 * are the ones ggml performs, in its order (code times d, then plus m), so
 * results are bit-exact. */
#include "quant_impl.h"

/* {f16 d; u8 qs[16]} */
void quant_dequant_q4_0_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 18, y += 32) {
        const float d = quant_rdf16(x);
        for (int j = 0; j < 16; j++) {
            y[j] = ((x[2 + j] & 15) - 8) * d;
            y[j + 16] = ((x[2 + j] >> 4) - 8) * d;
        }
    }
}

/* {f16 d; f16 m; u8 qs[16]} */
void quant_dequant_q4_1_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 20, y += 32) {
        const float d = quant_rdf16(x), m = quant_rdf16(x + 2);
        for (int j = 0; j < 16; j++) {
            y[j] = (x[4 + j] & 15) * d + m;
            y[j + 16] = (x[4 + j] >> 4) * d + m;
        }
    }
}

/* {f16 d; u8 qh[4]; u8 qs[16]}: fifth bit of element j is bit j of qh. */
void quant_dequant_q5_0_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 22, y += 32) {
        const float d = quant_rdf16(x);
        const uint32_t qh = quant_rd32(x + 2);
        for (int j = 0; j < 16; j++) {
            int c0 = (x[6 + j] & 15) | ((qh >> j) & 1) << 4;
            int c1 = (x[6 + j] >> 4) | ((qh >> (j + 16)) & 1) << 4;
            y[j] = (c0 - 16) * d;
            y[j + 16] = (c1 - 16) * d;
        }
    }
}

/* {f16 d; f16 m; u8 qh[4]; u8 qs[16]} */
void quant_dequant_q5_1_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 24, y += 32) {
        const float d = quant_rdf16(x), m = quant_rdf16(x + 2);
        const uint32_t qh = quant_rd32(x + 4);
        for (int j = 0; j < 16; j++) {
            int c0 = (x[8 + j] & 15) | ((qh >> j) & 1) << 4;
            int c1 = (x[8 + j] >> 4) | ((qh >> (j + 16)) & 1) << 4;
            y[j] = c0 * d + m;
            y[j + 16] = c1 * d + m;
        }
    }
}

/* {f16 d; i8 qs[32]} */
void quant_dequant_q8_0_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 34, y += 32) {
        const float d = quant_rdf16(x);
        for (int j = 0; j < 32; j++)
            y[j] = (int8_t)x[2 + j] * d;
    }
}

/* {f16 d; f16 s; i8 qs[32]}; s (= d * sum q) plays no part in the values.
 * ggml has no to_float for Q8_1 (activation format only); this is the
 * obvious one, consistent with Q8_0. */
void quant_dequant_q8_1_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 36, y += 32) {
        const float d = quant_rdf16(x);
        for (int j = 0; j < 32; j++)
            y[j] = (int8_t)x[4 + j] * d;
    }
}

/* {f16 d; u8 qs[16]}, 128 elements: bit j (LSB first) set -> +d, else -d. */
void quant_dequant_q1_0_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 18, y += 128) {
        const float d = quant_rdf16(x), nd = -d;
        for (int j = 0; j < 128; j++)
            y[j] = (x[2 + j / 8] >> (j % 8)) & 1 ? d : nd;
    }
}

/* {f16 d; u8 qs[16]}, 64 elements: 2-bit code c, value (c - 1) * d. */
void quant_dequant_q2_0_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 18, y += 64) {
        const float d = quant_rdf16(x);
        for (int j = 0; j < 64; j++)
            y[j] = (((x[2 + j / 4] >> (2 * (j % 4))) & 3) - 1) * d;
    }
}
