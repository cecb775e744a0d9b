/* dequant_iq.c: reference dequantizers of the lattice ("IQ") formats:
 * IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M, IQ4_NL, IQ4_XS.
 * Layouts in MODEL.md 7.2, tables in iq_tables.h. Group scales are formed
 * first, exactly as ggml forms them, so the results are bit-exact. */
#include "iq_tables.h"
#include "quant_impl.h"

/* Writes n elements db * mag[j] with the sign of bit j of `signs`. */
static inline void put_signed(float *y, float db, const uint8_t *mag, uint8_t signs, int n,
                              int bit0)
{
    for (int j = 0; j < n; j++)
        y[j] = db * mag[j] * (signs >> (bit0 + j) & 1 ? -1.f : 1.f);
}

static inline const uint8_t *grid8(const uint64_t *g, int i)
{
    return (const uint8_t *)(g + i);
}

static inline const uint8_t *grid4(const uint32_t *g, int i)
{
    return (const uint8_t *)(g + i);
}

/* {f16 d; u16 qs[32]}: per sub-block two u32: 4 grid bytes, then
 * 4 x 7-bit sign indices and a 4-bit scale. */
void quant_dequant_iq2_xxs_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 66) {
        const float d = quant_rdf16(x);
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *idx = x + 2 + 8 * ib;
            const uint32_t a1 = quant_rd32(idx + 4);
            const float db = d * (0.5f + (a1 >> 28)) * 0.25f;
            for (int l = 0; l < 4; l++, y += 8)
                put_signed(y, db, grid8(quant_iq2xxs_grid, idx[l]),
                           quant_ksigns_iq2xs[(a1 >> 7 * l) & 127], 8, 0);
        }
    }
}

/* {f16 d; u16 qs[32]; u8 scales[8]}: u16 = 9-bit grid index | sign index << 9 */
void quant_dequant_iq2_xs_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 74) {
        const float d = quant_rdf16(x);
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t s = x[66 + ib];
            const float db[2] = { d * (0.5f + (s & 15)) * 0.25f, d * (0.5f + (s >> 4)) * 0.25f };
            for (int l = 0; l < 4; l++, y += 8) {
                const uint16_t q = quant_rd16(x + 2 + 2 * (4 * ib + l));
                put_signed(y, db[l / 2], grid8(quant_iq2xs_grid, q & 511),
                           quant_ksigns_iq2xs[q >> 9], 8, 0);
            }
        }
    }
}

/* {f16 d; u8 qs[64]; u8 qh[8]; u8 scales[8]}: qs[0..31] low index bits,
 * qs[32..63] explicit sign bytes, qh two high index bits per group. */
void quant_dequant_iq2_s_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 82) {
        const float d = quant_rdf16(x);
        const uint8_t *qs = x + 2, *signs = x + 34, *qh = x + 66, *sc = x + 74;
        for (int ib = 0; ib < 8; ib++, qs += 4, signs += 4) {
            const float db[2] = { d * (0.5f + (sc[ib] & 15)) * 0.25f,
                                  d * (0.5f + (sc[ib] >> 4)) * 0.25f };
            for (int l = 0; l < 4; l++, y += 8) {
                int gi = qs[l] | ((qh[ib] << (8 - 2 * l)) & 0x300);
                put_signed(y, db[l / 2], grid8(quant_iq2s_grid, gi), signs[l], 8, 0);
            }
        }
    }
}

/* {f16 d; u8 qs[96]}: 64 grid bytes (2 per group), then one u32 per
 * sub-block: 4 x 7-bit sign indices and a 4-bit scale. */
void quant_dequant_iq3_xxs_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 98) {
        const float d = quant_rdf16(x);
        const uint8_t *qs = x + 2;
        for (int ib = 0; ib < 8; ib++, qs += 8) {
            const uint32_t a = quant_rd32(x + 66 + 4 * ib);
            const float db = d * (0.5f + (a >> 28)) * 0.5f;
            for (int l = 0; l < 4; l++, y += 8) {
                const uint8_t s = quant_ksigns_iq2xs[(a >> 7 * l) & 127];
                put_signed(y, db, grid4(quant_iq3xxs_grid, qs[2 * l]), s, 4, 0);
                put_signed(y + 4, db, grid4(quant_iq3xxs_grid, qs[2 * l + 1]), s, 4, 4);
            }
        }
    }
}

/* {f16 d; u8 qs[64]; u8 qh[8]; u8 signs[32]; u8 scales[4]} */
void quant_dequant_iq3_s_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 110) {
        const float d = quant_rdf16(x);
        const uint8_t *qs = x + 2, *qh = x + 66, *signs = x + 74, *sc = x + 106;
        for (int ib = 0; ib < 8; ib++, qs += 8, signs += 4) {
            const int s = ib & 1 ? sc[ib / 2] >> 4 : sc[ib / 2] & 15;
            const float db = d * (1 + 2 * s);
            const int h = qh[ib];
            for (int l = 0; l < 4; l++, y += 8) {
                int g1 = qs[2 * l] | ((h << (8 - 2 * l)) & 256);
                int g2 = qs[2 * l + 1] | ((h << (7 - 2 * l)) & 256);
                put_signed(y, db, grid4(quant_iq3s_grid, g1), signs[l], 4, 0);
                put_signed(y + 4, db, grid4(quant_iq3s_grid, g2), signs[l], 4, 4);
            }
        }
    }
}

/* {f16 d; u8 qs[32]; u16 qh[8]} */
void quant_dequant_iq1_s_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 50) {
        const float d = quant_rdf16(x);
        const uint8_t *qs = x + 2;
        for (int ib = 0; ib < 8; ib++, qs += 4) {
            const uint16_t w = quant_rd16(x + 34 + 2 * ib);
            const float dl = d * (2 * ((w >> 12) & 7) + 1);
            const float delta = w & 0x8000 ? -QUANT_IQ1_DELTA : QUANT_IQ1_DELTA;
            for (int l = 0; l < 4; l++, y += 8) {
                const int8_t *g = (const int8_t *)(quant_iq1s_grid + (qs[l] | ((w >> 3 * l) & 7) << 8));
                for (int j = 0; j < 8; j++)
                    y[j] = dl * (g[j] + delta);
            }
        }
    }
}

/* {u8 qs[32]; u8 qh[16]; u8 scales[8]}: d is an f16 spread over the top
 * nibbles of the four u16 scale words. */
void quant_dequant_iq1_m_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 56) {
        uint16_t sc[4];
        for (int k = 0; k < 4; k++)
            sc[k] = quant_rd16(x + 48 + 2 * k);
        const uint16_t dbits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) |
                                          ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
        const float d = quant_f16_to_f32(dbits);
        const uint8_t *qs = x, *qh = x + 32;
        for (int ib = 0; ib < 8; ib++, qs += 4, qh += 2) {
            const int sh = 6 * (ib % 2);
            const float dl[2] = { d * (2 * ((sc[ib / 2] >> sh) & 7) + 1),
                                  d * (2 * ((sc[ib / 2] >> (sh + 3)) & 7) + 1) };
            for (int l = 0; l < 4; l++, y += 8) {
                const uint8_t h = qh[l / 2];
                const int gi = qs[l] | ((l & 1 ? h << 4 : h << 8) & 0x700);
                const float delta = h & (l & 1 ? 0x80 : 0x08) ? -QUANT_IQ1_DELTA : QUANT_IQ1_DELTA;
                const int8_t *g = (const int8_t *)(quant_iq1s_grid + gi);
                for (int j = 0; j < 8; j++)
                    y[j] = dl[l / 2] * (g[j] + delta);
            }
        }
    }
}

/* {f16 d; u8 qs[16]} */
void quant_dequant_iq4_nl_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 18, y += 32) {
        const float d = quant_rdf16(x);
        for (int j = 0; j < 16; j++) {
            y[j] = d * quant_kvalues_iq4nl[x[2 + j] & 15];
            y[j + 16] = d * quant_kvalues_iq4nl[x[2 + j] >> 4];
        }
    }
}

/* {f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]} */
void quant_dequant_iq4_xs_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 136) {
        const float d = quant_rdf16(x);
        const uint16_t sh = quant_rd16(x + 2);
        const uint8_t *qs = x + 8;
        for (int ib = 0; ib < 8; ib++, qs += 16, y += 32) {
            const int ls = ((x[4 + ib / 2] >> 4 * (ib % 2)) & 15) | ((sh >> 2 * ib) & 3) << 4;
            const float dl = d * (ls - 32);
            for (int j = 0; j < 16; j++) {
                y[j] = dl * quant_kvalues_iq4nl[qs[j] & 15];
                y[j + 16] = dl * quant_kvalues_iq4nl[qs[j] >> 4];
            }
        }
    }
}
