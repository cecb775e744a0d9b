/* quant_impl.h: private helpers shared by the files of src/quant: unaligned
 * little-endian loads and the per-family dequantizer entry points that
 * quant.c puts in its type table. Not for use outside src/quant.
 *
 * q36 runs on little-endian hosts only (x86-64, aarch64); blocks are read
 * with memcpy, never through casts, so alignment never matters.
 */
#ifndef Q36_QUANT_IMPL_H
#define Q36_QUANT_IMPL_H

#include <stdint.h>
#include <string.h>

#include "fp16.h"

static inline uint16_t quant_rd16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

static inline uint32_t quant_rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline float quant_rdf16(const uint8_t *p)
{
    return quant_f16_to_f32(quant_rd16(p));
}

/* Dequantizes nb consecutive blocks at x into y (nb * block elements). */
typedef void (*quant_dequant_fn)(const uint8_t *x, float *y, int64_t nb);

#define QDQ(name) void quant_dequant_##name##_ref(const uint8_t *x, float *y, int64_t nb)
QDQ(f32); QDQ(f16); QDQ(bf16); QDQ(mxfp4); QDQ(nvfp4);
QDQ(q4_0); QDQ(q4_1); QDQ(q5_0); QDQ(q5_1); QDQ(q8_0); QDQ(q8_1); QDQ(q1_0); QDQ(q2_0);
QDQ(q2_K); QDQ(q3_K); QDQ(q4_K); QDQ(q5_K); QDQ(q6_K); QDQ(q8_K); QDQ(tq1_0); QDQ(tq2_0);
QDQ(iq2_xxs); QDQ(iq2_xs); QDQ(iq2_s); QDQ(iq3_xxs); QDQ(iq3_s); QDQ(iq1_s); QDQ(iq1_m);
QDQ(iq4_nl); QDQ(iq4_xs);
#undef QDQ

/* The 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block, from
 * its 12 packed scale bytes (MODEL.md 7.2). */
static inline void quant_k4_scale_min(int j, const uint8_t *s, uint8_t *sc, uint8_t *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (uint8_t)((s[j + 4] & 15) | (s[j - 4] >> 6) << 4);
        *m = (uint8_t)((s[j + 4] >> 4) | (s[j] >> 6) << 4);
    }
}

/* All eight scales and mins of a Q4_K/Q5_K block at once, on 32-bit
 * words (the same layout as quant_k4_scale_min): sc[0..3] and m[0..3] are
 * the low 6 bits of bytes 0..3 and 4..7; sc[4..7] and m[4..7] take their
 * low 4 bits from the nibbles of bytes 8..11 and their top 2 bits from the
 * top bits of bytes 0..3 and 4..7. */
static inline void quant_k4_scales_mins(const uint8_t *s, uint8_t sc[8], uint8_t m[8])
{
    const uint32_t a0 = quant_rd32(s), a1 = quant_rd32(s + 4), a2 = quant_rd32(s + 8);
    const uint32_t m6 = 0x3F3F3F3Fu, m4 = 0x0F0F0F0Fu, m2 = 0x03030303u;
    const uint32_t w[4] = {
        a0 & m6,
        (a2 & m4) | (a0 >> 6 & m2) << 4,
        a1 & m6,
        (a2 >> 4 & m4) | (a1 >> 6 & m2) << 4,
    };
    memcpy(sc, w, 8);
    memcpy(m, w + 2, 8);
}

/* The 16 signed 6-bit scales of a Q3_K block (value - 32), MODEL.md 7.2:
 * scale k has low nibble lo(s[k]) (k < 8) or hi(s[k-8]), and high 2 bits
 * at bits 2*(k/4) of s[8 + k%4]. Done on 32-bit words, four scales at a
 * time: word j of the output holds scales 4j..4j+3. */
static inline void quant_q3k_scales(const uint8_t *s, int8_t out[16])
{
    const uint32_t a0 = quant_rd32(s), a1 = quant_rd32(s + 4), a2 = quant_rd32(s + 8);
    const uint32_t m4 = 0x0F0F0F0Fu, m2 = 0x03030303u;
    const uint32_t w[4] = {
        (a0 & m4) | (a2 & m2) << 4,
        (a1 & m4) | (a2 >> 2 & m2) << 4,
        (a0 >> 4 & m4) | (a2 >> 4 & m2) << 4,
        (a1 >> 4 & m4) | (a2 >> 6 & m2) << 4,
    };
    uint8_t u[16];
    memcpy(u, w, 16);
    for (int k = 0; k < 16; k++)
        out[k] = (int8_t)(u[k] - 32);
}

#endif
