/* dot_avx512_b32.h: the AVX-512 dot product of the 32-element block
 * formats (Q8_0 Q4_0 Q5_0 IQ4_NL MXFP4 against Q8_0, Q4_1 Q5_1 against
 * Q8_1), two blocks per 512-bit vector, four per step. Included by
 * dot_avx512.c (AVX-512 F/BW/VL: byte products by vpmaddubsw + vpmaddwd)
 * and dot_avx512_vnni.c (which defines B32_VNNI and adds avx512vnni to
 * the AVX512 target first: vpdpbusd). Private to src/quant. */
#ifndef Q36_QUANT_DOT_AVX512_B32_H
#define Q36_QUANT_DOT_AVX512_B32_H

#include "avx512_util.h"
#include "iq_tables.h"

/* the per-kind helpers below fold to one kernel per type only inlined */
#define INLINE __attribute__((always_inline))

/* 16 int32 sums of 4 products: x unsigned (< 128 for pairs to fit
 * vpmaddubsw), y signed */
AVX512 static inline __m512i dot4_u8x(__m512i x, __m512i y)
{
#ifdef B32_VNNI
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), x, y);
#else
    return _mm512_madd_epi16(_mm512_maddubs_epi16(x, y), _mm512_set1_epi16(1));
#endif
}

/* the same, x signed (|x| <= 128), y signed (|y| <= 127) */
AVX512 static inline __m512i dot4_s8x(__m512i x, __m512i y)
{
    const __mmask64 neg = _mm512_movepi8_mask(x);
    return dot4_u8x(_mm512_abs_epi8(x), _mm512_mask_sub_epi8(y, neg, _mm512_setzero_si512(), y));
}

enum b32_kind { K_Q8_0, K_Q4_0, K_Q5_0, K_IQ4_NL, K_MXFP4, K_Q4_1, K_Q5_1 };

/* bytes per weight block, and per activation block (Q8_0 or Q8_1) */
static inline int b32_size(enum b32_kind k)
{
    static const int sz[] = { 34, 18, 22, 18, 17, 20, 24 };
    return sz[k];
}

static inline int b32_act(enum b32_kind k)
{
    return k == K_Q4_1 || k == K_Q5_1 ? 36 : 34;
}

static inline float b32_scale(enum b32_kind k, const uint8_t *w)
{
    return k == K_MXFP4 ? quant_e8m0_half(w[0]) : f16c(w);
}

/* The 64 codes of the blocks at w and w + ws (ws 0: the same block twice):
 * signed for the symmetric kinds, unsigned (<= 31) for Q4_1/Q5_1. */
AVX512 INLINE static inline __m512i b32_codes(enum b32_kind k, const uint8_t *w, size_t ws, __m512i lut)
{
    switch (k) {
    case K_Q8_0:
        return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(w + 2))),
                                  _mm256_loadu_si256((const __m256i *)(w + ws + 2)), 1);
    case K_Q4_0:
        return _mm512_sub_epi8(nibbles2x16(two16(w + 2, ws)), _mm512_set1_epi8(8));
    case K_IQ4_NL:
        return _mm512_shuffle_epi8(lut, nibbles2x16(two16(w + 2, ws)));
    case K_MXFP4:
        return _mm512_shuffle_epi8(lut, nibbles2x16(two16(w + 1, ws)));
    case K_Q4_1:
        return nibbles2x16(two16(w + 4, ws));
    case K_Q5_0:
    case K_Q5_1: {
        /* qh bit j is element j of its block, byte j of its half */
        const int o = k == K_Q5_0 ? 2 : 4;
        const __mmask64 hb = (__mmask64)quant_rd32(w + o) | (__mmask64)quant_rd32(w + ws + o) << 32;
        __m512i c = nibbles2x16(two16(w + o + 4, ws));
        c = _mm512_mask_add_epi8(c, hb, c, _mm512_set1_epi8(16));
        return k == K_Q5_0 ? _mm512_sub_epi8(c, _mm512_set1_epi8(16)) : c;
    }
    }
    return _mm512_setzero_si512();
}

/* The 16 int32 sums of 4 products of the blocks at w and w + ws (ws 0:
 * the same block twice) against a and a + as: lanes 0..7 the first
 * block, 8..15 the second. */
AVX512 INLINE static inline __m512i b32_isum(enum b32_kind k, const uint8_t *w, size_t ws, const uint8_t *a,
                                            size_t as, __m512i lut)
{
    const int qo = b32_act(k) == 36 ? 4 : 2;
    const __m512i x = b32_codes(k, w, ws, lut);
    const __m512i y = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(a + qo))),
                                         _mm256_loadu_si256((const __m256i *)(a + as + qo)), 1);
    return k == K_Q4_1 || k == K_Q5_1 ? dot4_u8x(x, y) : dot4_s8x(x, y);
}

/* the f16 fields at p, p + s, p + 2s, p + 3s as four f32 lanes (packed in
 * a general register first: one vector insert instead of four) */
AVX512 static inline __m128 f16x4(const uint8_t *p, size_t s)
{
    const uint64_t v = (uint64_t)quant_rd16(p) | (uint64_t)quant_rd16(p + s) << 16 |
                       (uint64_t)quant_rd16(p + 2 * s) << 32 | (uint64_t)quant_rd16(p + 3 * s) << 48;
    return _mm_cvtph_ps(_mm_cvtsi64_si128((long long)v));
}

/* the weight scales of four blocks bs bytes apart */
AVX512 INLINE static inline __m128 b32_scale4(enum b32_kind k, const uint8_t *w, size_t bs)
{
    if (k == K_MXFP4)
        return _mm_setr_ps(quant_e8m0_half(w[0]), quant_e8m0_half(w[bs]), quant_e8m0_half(w[2 * bs]),
                           quant_e8m0_half(w[3 * bs]));
    return f16x4(w, bs);
}

/* Four blocks per step: their scale products d_w * d_a as one 4-lane
 * vector, spread to the halves of the two pairs by vpermps; Q4_1/Q5_1
 * add m * s in four lanes. A last pair or lone block (read twice, its
 * copy weighted 0) takes scalar scales. */
AVX512 INLINE static inline float dot_b32(int64_t n, const uint8_t *w, const uint8_t *a, enum b32_kind k)
{
    const size_t bs = (size_t)b32_size(k), ab = (size_t)b32_act(k);
    const int mins = k == K_Q4_1 || k == K_Q5_1;
    const __m512i lut = lut16x(k == K_MXFP4 ? quant_kvalues_fp4 : quant_kvalues_iq4nl);
    const __m512i sel01 = halves32(0, 1), sel23 = halves32(2, 3);
    const int64_t nb = n / 32;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0;
    __m128 ms4 = _mm_setzero_ps();
    float ms = 0.0f;
    int64_t i = 0;
    for (; i + 4 <= nb; i += 4, w += 4 * bs, a += 4 * ab) {
        const __m512 d = _mm512_castps128_ps512(_mm_mul_ps(b32_scale4(k, w, bs), f16x4(a, ab)));
        const __m512i p0 = b32_isum(k, w, bs, a, ab, lut);
        const __m512i p1 = b32_isum(k, w + 2 * bs, bs, a + 2 * ab, ab, lut);
        acc0 = _mm512_fmadd_ps(_mm512_permutexvar_ps(sel01, d), _mm512_cvtepi32_ps(p0), acc0);
        acc1 = _mm512_fmadd_ps(_mm512_permutexvar_ps(sel23, d), _mm512_cvtepi32_ps(p1), acc1);
        if (mins)
            ms4 = _mm_fmadd_ps(f16x4(w + 2, bs), f16x4(a + 2, ab), ms4);
    }
    for (; i < nb; i += 2, w += 2 * bs, a += 2 * ab) {
        const int two = i + 2 <= nb;
        const size_t ws = two ? bs : 0, as = two ? ab : 0;
        const float second = two ? 1.0f : 0.0f;
        const __m512 d = halves_ps(b32_scale(k, w) * f16c(a), second * (b32_scale(k, w + ws) * f16c(a + as)));
        acc0 = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(b32_isum(k, w, ws, a, as, lut)), acc0);
        if (mins)
            ms += f16c(w + 2) * f16c(a + 2) + second * (f16c(w + ws + 2) * f16c(a + as + 2));
    }
    __m128 m2 = _mm_add_ps(ms4, _mm_movehl_ps(ms4, ms4));
    m2 = _mm_add_ss(m2, _mm_movehdup_ps(m2));
    return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)) + (_mm_cvtss_f32(m2) + ms);
}

#endif
