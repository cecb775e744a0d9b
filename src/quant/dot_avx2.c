/* dot_avx2.c: AVX2+FMA twins of the reference dot products for the types
 * that carry most of a model's weights: Q8_0, Q4_K, Q5_K, Q6_K, IQ4_XS.
 * Same signatures and the same math as dot_ref.c: exact integer sums per
 * block (kept in eight int32 lanes), one f32 fused multiply-add per block
 * and lane, one horizontal sum at the end. Only the f32 rounding order
 * differs from the reference; tests/test_ggml_quant_dot.c bounds it.
 *
 * Each function carries target("avx2,fma,f16c") so the rest of the build stays
 * generic; quant.c calls them only when the CPU reports all three features.
 *
 * Integer products use vpmaddubsw, which multiplies unsigned by signed
 * bytes into saturating int16 pairs. Every use below keeps a pair under
 * 2^15: 4- and 5-bit codes (<= 31 * 127 * 2), 6-bit Q6_K codes taken
 * unsigned (<= 63 * 127 * 2 = 16002, the -32 comes back through the block
 * sums) and signed bytes multiplied as |x| times y with x's sign
 * (<= 127 * 128 * 2 = 32512). */
#include "dot_impl.h"

#ifdef QUANT_HAVE_AVX2
#include <immintrin.h>
#include <string.h>

#include "iq_tables.h"
#include "quant_impl.h"

#define AVX2 __attribute__((target("avx2,fma,f16c")))

/* f16 scale to f32 with the F16C instruction: exact, like quant_f16_to_f32
 * (which handles subnormals with a loop, too slow per block here). */
AVX2 static inline float f16(const uint8_t *p)
{
    return _cvtsh_ss(quant_rd16(p));
}

AVX2 static inline float hsum_ps(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* 16 int16 sums of adjacent byte products, x signed, y signed. */
AVX2 static inline __m256i madd_i8(__m256i x, __m256i y)
{
    return _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

AVX2 static inline __m256i load32(const void *p)
{
    return _mm256_loadu_si256((const __m256i *)p);
}

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

AVX2 float quant_dot_q8_0_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 32; i++, w += 34, a += 34) {
        __m256i p = _mm256_madd_epi16(madd_i8(load32(w + 2), load32(a + 2)), ones);
        __m256 d = _mm256_set1_ps(f16(w) * f16(a));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc);
    }
    return hsum_ps(acc);
}

/* Q4_K and Q5_K: per 64-element chunk c, the low nibbles (sub-block 2c)
 * and the high nibbles (2c+1) meet 32 activations each; the sub-block
 * scale is applied by vpmaddwd, the min through the block sums. */
AVX2 static inline float dot_k45_avx2(int64_t n, const uint8_t *w, const uint8_t *a, int five)
{
    const int bs = five ? 176 : 144;
    const __m256i m4 = _mm256_set1_epi8(15), b16 = _mm256_set1_epi8(16);
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (int64_t i = 0; i < n / 256; i++, w += bs, a += 292) {
        const uint8_t *q4 = w + (five ? 48 : 16), *q8 = a + 4;
        const __m256i qh = five ? load32(w + 16) : _mm256_setzero_si256();
        __m256i isum = _mm256_setzero_si256();
        int msum = 0;
        for (int c = 0; c < 4; c++) {
            uint8_t sc0, m0, sc1, m1;
            quant_k4_scale_min(2 * c, w + 4, &sc0, &m0);
            quant_k4_scale_min(2 * c + 1, w + 4, &sc1, &m1);
            msum += m0 * (q8k_bsum(a, 4 * c) + q8k_bsum(a, 4 * c + 1)) +
                    m1 * (q8k_bsum(a, 4 * c + 2) + q8k_bsum(a, 4 * c + 3));
            const __m256i q = load32(q4 + 32 * c);
            __m256i lo = _mm256_and_si256(q, m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            if (five) {
                const __m256i bl = _mm256_set1_epi8((char)(1 << (2 * c)));
                const __m256i bh = _mm256_set1_epi8((char)(1 << (2 * c + 1)));
                lo = _mm256_or_si256(lo, _mm256_and_si256(
                         _mm256_cmpeq_epi8(_mm256_and_si256(qh, bl), bl), b16));
                hi = _mm256_or_si256(hi, _mm256_and_si256(
                         _mm256_cmpeq_epi8(_mm256_and_si256(qh, bh), bh), b16));
            }
            __m256i plo = _mm256_maddubs_epi16(lo, load32(q8 + 64 * c));
            __m256i phi = _mm256_maddubs_epi16(hi, load32(q8 + 64 * c + 32));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(plo, _mm256_set1_epi16(sc0)));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(phi, _mm256_set1_epi16(sc1)));
        }
        const float da = q8k_d(a);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(da * f16(w)), _mm256_cvtepi32_ps(isum), acc);
        mins += da * f16(w + 2) * (float)msum;
    }
    return hsum_ps(acc) - mins;
}

AVX2 float quant_dot_q4_K_avx2(int64_t n, const void *w, const void *a)
{
    return dot_k45_avx2(n, w, a, 0);
}

AVX2 float quant_dot_q5_K_avx2(int64_t n, const void *w, const void *a)
{
    return dot_k45_avx2(n, w, a, 1);
}

/* Q6_K: codes 0..63 taken unsigned; the -32 is 32 * sc_k * bsum_k per
 * 16-element sub-block. Each 32-element quarter spans two sub-blocks, so
 * its vpmaddwd scale vector holds sc_k in the low half, sc_k+1 above. */
AVX2 float quant_dot_q6_K_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 256; i++, w += 210, a += 292) {
        const int8_t *sc = (const int8_t *)(w + 192);
        int off = 0;
        for (int k = 0; k < 16; k++)
            off += sc[k] * q8k_bsum(a, k);
        __m256i isum = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i ql0 = load32(w + 64 * h), ql1 = load32(w + 64 * h + 32);
            const __m256i qh = load32(w + 128 + 32 * h);
            __m256i c[4];
            c[0] = _mm256_and_si256(ql0, m4);
            c[1] = _mm256_and_si256(ql1, m4);
            c[2] = _mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4);
            c[3] = _mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4);
            for (int p = 0; p < 4; p++) {
                __m256i hb = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * p), m2);
                __m256i code = _mm256_or_si256(c[p], _mm256_slli_epi16(hb, 4));
                __m256i prod = _mm256_maddubs_epi16(code, load32(a + 4 + 128 * h + 32 * p));
                const int k = 8 * h + 2 * p;
                __m256i scv = _mm256_set_m128i(_mm_set1_epi16(sc[k + 1]), _mm_set1_epi16(sc[k]));
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(prod, scv));
            }
        }
        /* the offset joins lane 0; the lanes are summed at the end anyway */
        isum = _mm256_sub_epi32(isum, _mm256_setr_epi32(32 * off, 0, 0, 0, 0, 0, 0, 0));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(q8k_d(a) * f16(w + 208)),
                              _mm256_cvtepi32_ps(isum), acc);
    }
    return hsum_ps(acc);
}

/* IQ4_XS: the 16 non-uniform levels are looked up with vpshufb, then
 * multiplied as signed bytes; sub-block scale (ls - 32) via vpmaddwd. */
AVX2 float quant_dot_iq4_xs_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m128i tab = _mm_loadu_si128((const __m128i *)quant_kvalues_iq4nl);
    const __m256i lut = _mm256_set_m128i(tab, tab);
    const __m128i m4 = _mm_set1_epi8(15);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 256; i++, w += 136, a += 292) {
        const uint16_t sh = quant_rd16(w + 2);
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            const int ls = ((w[4 + ib / 2] >> 4 * (ib % 2)) & 15) | ((sh >> 2 * ib) & 3) << 4;
            const __m128i q = _mm_loadu_si128((const __m128i *)(w + 8 + 16 * ib));
            const __m256i codes = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m4),
                                                   _mm_and_si128(q, m4));
            const __m256i v = _mm256_shuffle_epi8(lut, codes);
            const __m256i prod = madd_i8(v, load32(a + 4 + 32 * ib));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(prod, _mm256_set1_epi16((short)(ls - 32))));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(q8k_d(a) * f16(w)), _mm256_cvtepi32_ps(isum), acc);
    }
    return hsum_ps(acc);
}
#endif
