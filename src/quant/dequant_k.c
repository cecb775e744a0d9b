/* dequant_k.c: reference dequantizers of the 256-element super-block
 * formats: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K and the ternary TQ1_0,
 * TQ2_0. Layouts in MODEL.md 7.2. Each sub-block scale is formed first
 * (d * sc, dmin * m) and then applied to the code, as ggml does, so the
 * results are bit-exact with ggml's to_float. */
#include "quant_impl.h"

/* {u8 scales[16]; u8 qs[64]; f16 d; f16 dmin} */
void quant_dequant_q2_K_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 84) {
        const float d = quant_rdf16(x + 80), dmin = quant_rdf16(x + 82);
        const uint8_t *sc = x, *q = x + 16;
        for (int n = 0; n < 2; n++, q += 32) {
            for (int j = 0; j < 4; j++) {
                for (int h = 0; h < 2; h++, y += 16) {
                    const uint8_t s = sc[8 * n + 2 * j + h];
                    const float dl = d * (s & 15), ml = dmin * (s >> 4);
                    for (int l = 0; l < 16; l++)
                        y[l] = dl * ((q[16 * h + l] >> (2 * j)) & 3) - ml;
                }
            }
        }
    }
}

/* {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d} */
void quant_dequant_q3_K_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 110) {
        const float d = quant_rdf16(x + 108);
        const uint8_t *hm = x, *q = x + 32;
        int8_t sc[16];
        quant_q3k_scales(x + 96, sc);
        for (int n = 0; n < 2; n++, q += 32) {
            for (int j = 0; j < 4; j++) {
                const uint8_t bit = (uint8_t)(1u << (4 * n + j));
                for (int h = 0; h < 2; h++, y += 16) {
                    const float dl = d * sc[8 * n + 2 * j + h];
                    for (int l = 0; l < 16; l++) {
                        int c = ((q[16 * h + l] >> (2 * j)) & 3) - (hm[16 * h + l] & bit ? 0 : 4);
                        y[l] = dl * c;
                    }
                }
            }
        }
    }
}

/* {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]} */
void quant_dequant_q4_K_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 144) {
        const float d = quant_rdf16(x), dmin = quant_rdf16(x + 2);
        const uint8_t *q = x + 16;
        for (int c = 0; c < 4; c++, q += 32, y += 64) {
            uint8_t sc, m;
            quant_k4_scale_min(2 * c, x + 4, &sc, &m);
            const float d1 = d * sc, m1 = dmin * m;
            quant_k4_scale_min(2 * c + 1, x + 4, &sc, &m);
            const float d2 = d * sc, m2 = dmin * m;
            for (int l = 0; l < 32; l++) {
                y[l] = d1 * (q[l] & 15) - m1;
                y[l + 32] = d2 * (q[l] >> 4) - m2;
            }
        }
    }
}

/* {f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]} */
void quant_dequant_q5_K_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 176) {
        const float d = quant_rdf16(x), dmin = quant_rdf16(x + 2);
        const uint8_t *qh = x + 16, *q = x + 48;
        for (int c = 0; c < 4; c++, q += 32, y += 64) {
            uint8_t sc, m;
            quant_k4_scale_min(2 * c, x + 4, &sc, &m);
            const float d1 = d * sc, m1 = dmin * m;
            quant_k4_scale_min(2 * c + 1, x + 4, &sc, &m);
            const float d2 = d * sc, m2 = dmin * m;
            for (int l = 0; l < 32; l++) {
                int c0 = (q[l] & 15) | ((qh[l] >> (2 * c)) & 1) << 4;
                int c1 = (q[l] >> 4) | ((qh[l] >> (2 * c + 1)) & 1) << 4;
                y[l] = d1 * c0 - m1;
                y[l + 32] = d2 * c1 - m2;
            }
        }
    }
}

/* {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d} */
void quant_dequant_q6_K_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 210) {
        const float d = quant_rdf16(x + 208);
        const uint8_t *ql = x, *qh = x + 128;
        const int8_t *sc = (const int8_t *)(x + 192);
        for (int n = 0; n < 2; n++, ql += 64, qh += 32, sc += 8, y += 128) {
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                int c0 = ((ql[l] & 15) | ((qh[l] >> 0) & 3) << 4) - 32;
                int c1 = ((ql[l + 32] & 15) | ((qh[l] >> 2) & 3) << 4) - 32;
                int c2 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
                int c3 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
                y[l] = d * sc[is] * c0;
                y[l + 32] = d * sc[is + 2] * c1;
                y[l + 64] = d * sc[is + 4] * c2;
                y[l + 96] = d * sc[is + 6] * c3;
            }
        }
    }
}

/* {f32 d; i8 qs[256]; i16 bsums[16]}; ggml registers no to_float for it
 * (activation format only). */
void quant_dequant_q8_K_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 292, y += 256) {
        float d;
        memcpy(&d, x, 4);
        for (int j = 0; j < 256; j++)
            y[j] = d * (int8_t)x[4 + j];
    }
}

/* One base-3 digit of a TQ1_0 byte: q * 3^n keeps the digit n as the top
 * trit of a byte-wide fixed-point fraction, which *3 >> 8 extracts. */
static inline int tq1_digit(uint8_t q, int n)
{
    static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
    uint8_t v = (uint8_t)(q * pow3[n]);
    return (v * 3) >> 8;
}

/* {u8 qs[48]; u8 qh[4]; f16 d}: 5 trits per qs byte, 4 per qh byte. */
void quant_dequant_tq1_0_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 54) {
        const float d = quant_rdf16(x + 52);
        for (int n = 0; n < 5; n++)
            for (int m = 0; m < 32; m++)
                *y++ = (float)(tq1_digit(x[m], n) - 1) * d;
        for (int n = 0; n < 5; n++)
            for (int m = 0; m < 16; m++)
                *y++ = (float)(tq1_digit(x[32 + m], n) - 1) * d;
        for (int n = 0; n < 4; n++)
            for (int m = 0; m < 4; m++)
                *y++ = (float)(tq1_digit(x[48 + m], n) - 1) * d;
    }
}

/* {u8 qs[64]; f16 d}: 2-bit codes, value (code - 1) * d. */
void quant_dequant_tq2_0_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 66) {
        const float d = quant_rdf16(x + 64);
        for (int j = 0; j < 64; j += 32)
            for (int l = 0; l < 4; l++)
                for (int m = 0; m < 32; m++)
                    *y++ = (float)(((x[j + m] >> (2 * l)) & 3) - 1) * d;
    }
}
