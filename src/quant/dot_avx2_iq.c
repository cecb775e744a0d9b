/* dot_avx2_iq.c: AVX2+FMA+F16C twins of the reference dot products of the
 * lattice formats IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M.
 * Same math as dot_ref.c: per 32-element sub-block the four (or eight)
 * grid entries are gathered into one vector, the signs are applied to the
 * activations, and the unsigned magnitudes (<= 62, so a vpmaddubsw pair
 * is <= 2 * 62 * 127) meet them; the sub-block scale 2s+1 is applied by
 * vpmaddwd. The IQ1 grids are signed {-1, 0, 1}. */
#include "dot_impl.h"

#ifdef QUANT_HAVE_AVX2
#include "avx2_util.h"
#include "iq_tables.h"

/* The four sign bytes of a sub-block, from four 7-bit ksigns indices in
 * bits 0..27 of a. */
static inline uint32_t ksigns4(uint32_t a)
{
    return (uint32_t)quant_ksigns_iq2xs[a & 127] | (uint32_t)quant_ksigns_iq2xs[(a >> 7) & 127] << 8 |
           (uint32_t)quant_ksigns_iq2xs[(a >> 14) & 127] << 16 |
           (uint32_t)quant_ksigns_iq2xs[(a >> 21) & 127] << 24;
}

/* sum over 32 elements of mag * (sign ? -q : q), times the int16 scale
 * vector sc, as eight int32 lanes */
AVX2 static inline __m256i signed_dot32(__m256i mag, uint32_t signs, const uint8_t *q8, __m256i sc)
{
    __m256i q = negate_where(load32(q8), bits_to_bytes(signs));
    return _mm256_madd_epi16(_mm256_maddubs_epi16(mag, q), sc);
}

AVX2 static inline __m256i grid64x4(const uint64_t *g, int i0, int i1, int i2, int i3)
{
    return _mm256_set_epi64x((long long)g[i3], (long long)g[i2], (long long)g[i1], (long long)g[i0]);
}

AVX2 float quant_dot_iq2_xxs_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 256; i++, w += 66, a += 292) {
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *idx = w + 2 + 8 * ib;
            const uint32_t a1 = quant_rd32(idx + 4);
            __m256i mag = grid64x4(quant_iq2xxs_grid, idx[0], idx[1], idx[2], idx[3]);
            isum = _mm256_add_epi32(isum, signed_dot32(mag, ksigns4(a1), a + 4 + 32 * ib,
                                                       _mm256_set1_epi16((short)(2 * (a1 >> 28) + 1))));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f16c(w) * q8k_d(a)), _mm256_cvtepi32_ps(isum), acc);
    }
    return 0.125f * hsum_ps(acc);
}

AVX2 float quant_dot_iq2_xs_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 256; i++, w += 74, a += 292) {
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            uint16_t q[4];
            memcpy(q, w + 2 + 8 * ib, 8);
            __m256i mag = grid64x4(quant_iq2xs_grid, q[0] & 511, q[1] & 511, q[2] & 511, q[3] & 511);
            uint32_t s = (uint32_t)quant_ksigns_iq2xs[q[0] >> 9] | (uint32_t)quant_ksigns_iq2xs[q[1] >> 9] << 8 |
                         (uint32_t)quant_ksigns_iq2xs[q[2] >> 9] << 16 |
                         (uint32_t)quant_ksigns_iq2xs[q[3] >> 9] << 24;
            const uint8_t sc = w[66 + ib];
            isum = _mm256_add_epi32(isum, signed_dot32(mag, s, a + 4 + 32 * ib,
                                                       split16(2 * (sc & 15) + 1, 2 * (sc >> 4) + 1)));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f16c(w) * q8k_d(a)), _mm256_cvtepi32_ps(isum), acc);
    }
    return 0.125f * hsum_ps(acc);
}

AVX2 float quant_dot_iq2_s_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 256; i++, w += 82, a += 292) {
        const uint8_t *qs = w + 2, *signs = w + 34, *qh = w + 66, *sc = w + 74;
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            int g[4];
            for (int l = 0; l < 4; l++)
                g[l] = qs[4 * ib + l] | ((qh[ib] << (8 - 2 * l)) & 0x300);
            __m256i mag = grid64x4(quant_iq2s_grid, g[0], g[1], g[2], g[3]);
            isum = _mm256_add_epi32(isum, signed_dot32(mag, quant_rd32(signs + 4 * ib), a + 4 + 32 * ib,
                                                       split16(2 * (sc[ib] & 15) + 1, 2 * (sc[ib] >> 4) + 1)));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f16c(w) * q8k_d(a)), _mm256_cvtepi32_ps(isum), acc);
    }
    return 0.125f * hsum_ps(acc);
}

AVX2 float quant_dot_iq3_xxs_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const uint32_t *g = quant_iq3xxs_grid;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 256; i++, w += 98, a += 292) {
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t aux = quant_rd32(w + 66 + 4 * ib);
            const __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(w + 2 + 8 * ib)));
            const __m256i mag = _mm256_i32gather_epi32((const int *)g, idx, 4);
            isum = _mm256_add_epi32(isum, signed_dot32(mag, ksigns4(aux), a + 4 + 32 * ib,
                                                       _mm256_set1_epi16((short)(2 * (aux >> 28) + 1))));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f16c(w) * q8k_d(a)), _mm256_cvtepi32_ps(isum), acc);
    }
    return 0.25f * hsum_ps(acc);
}

AVX2 float quant_dot_iq3_s_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const uint32_t *g = quant_iq3s_grid;
    const __m256i shifts = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), one = _mm256_set1_epi32(1);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 256; i++, w += 110, a += 292) {
        const uint8_t *qh = w + 66, *signs = w + 74, *sc = w + 106;
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            /* index k = qs byte k | bit k of qh[ib] << 8 */
            const __m256i hb = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(qh[ib]), shifts), one);
            const __m256i idx = _mm256_or_si256(
                _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(w + 2 + 8 * ib))),
                _mm256_slli_epi32(hb, 8));
            const __m256i mag = _mm256_i32gather_epi32((const int *)g, idx, 4);
            const int s = ib & 1 ? sc[ib / 2] >> 4 : sc[ib / 2] & 15;
            isum = _mm256_add_epi32(isum, signed_dot32(mag, quant_rd32(signs + 4 * ib), a + 4 + 32 * ib,
                                                       _mm256_set1_epi16((short)(2 * s + 1))));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f16c(w) * q8k_d(a)), _mm256_cvtepi32_ps(isum), acc);
    }
    return hsum_ps(acc);
}

/* IQ1_S and IQ1_M: element = dl * (g + delta), g in {-1, 0, 1}, delta =
 * +-1/8, is dl/8 * (8g +- 1): one signed code in {-9, -7, -1, 1, 7, 9}
 * per element, so the delta needs no separate activation sums. */
AVX2 static inline __m256i iq1_codes(__m256i g, long long d0, long long d1, long long d2, long long d3)
{
    __m256i g8 = _mm256_add_epi8(g, g);
    g8 = _mm256_add_epi8(g8, g8);
    g8 = _mm256_add_epi8(g8, g8);
    return _mm256_add_epi8(g8, _mm256_set_epi64x(d3, d2, d1, d0));
}

#define IQ1_PLUS  0x0101010101010101LL
#define IQ1_MINUS (-1LL)

AVX2 float quant_dot_iq1_s_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 256; i++, w += 50, a += 292) {
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            const uint16_t h = quant_rd16(w + 34 + 2 * ib);
            const uint8_t *q = w + 2 + 4 * ib;
            __m256i gv = grid64x4(quant_iq1s_grid, q[0] | (h & 7) << 8, q[1] | ((h >> 3) & 7) << 8,
                                  q[2] | ((h >> 6) & 7) << 8, q[3] | ((h >> 9) & 7) << 8);
            const long long dl = h & 0x8000 ? IQ1_MINUS : IQ1_PLUS;
            __m256i c = iq1_codes(gv, dl, dl, dl, dl);
            const short ls = (short)(2 * ((h >> 12) & 7) + 1);
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(madd_i8(c, load32(a + 4 + 32 * ib)),
                                                            _mm256_set1_epi16(ls)));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f16c(w) * q8k_d(a)), _mm256_cvtepi32_ps(isum), acc);
    }
    return 0.125f * hsum_ps(acc);
}

/* IQ1_M: a scale per 16 elements (split vpmaddwd vector), a delta sign per
 * 8 elements (qh bits 3 and 7). */
AVX2 float quant_dot_iq1_m_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 256; i++, w += 56, a += 292) {
        uint16_t sc[4];
        memcpy(sc, w + 48, 8);
        const uint16_t dbits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) |
                                          ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *q = w + 4 * ib, *qh = w + 32 + 2 * ib;
            const int sh = 6 * (ib % 2);
            const __m256i ls = split16(2 * ((sc[ib / 2] >> sh) & 7) + 1,
                                       2 * ((sc[ib / 2] >> (sh + 3)) & 7) + 1);
            __m256i gv = grid64x4(quant_iq1s_grid, q[0] | ((qh[0] << 8) & 0x700), q[1] | ((qh[0] << 4) & 0x700),
                                  q[2] | ((qh[1] << 8) & 0x700), q[3] | ((qh[1] << 4) & 0x700));
            __m256i c = iq1_codes(gv, qh[0] & 0x08 ? IQ1_MINUS : IQ1_PLUS, qh[0] & 0x80 ? IQ1_MINUS : IQ1_PLUS,
                                  qh[1] & 0x08 ? IQ1_MINUS : IQ1_PLUS, qh[1] & 0x80 ? IQ1_MINUS : IQ1_PLUS);
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(madd_i8(c, load32(a + 4 + 32 * ib)), ls));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(dbits) * q8k_d(a)), _mm256_cvtepi32_ps(isum), acc);
    }
    return 0.125f * hsum_ps(acc);
}
#endif
