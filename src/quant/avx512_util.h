/* avx512_util.h: small AVX-512 helpers for dot_avx512.c (horizontal sums,
 * signed byte products, nibble unpacking of two 16-byte halves, per-half
 * scale vectors). Every function carries the AVX512 target attribute;
 * include this only on x86-64 and call only after quant.c has seen
 * AVX-512 F/BW/VL (plus AVX2/FMA/F16C) and the ZMM state enabled by the
 * OS. It includes avx2_util.h, whose helpers (f16c, dot_bsums, q8k_d,
 * ...) AVX-512 code may call: their target is a subset. Private to
 * src/quant.
 *
 * Integer products use vpmaddubsw (unsigned x signed bytes -> saturating
 * int16 pairs), as in avx2_util.h: each caller keeps a pair below 2^15.
 * AVX-512BW has no vpsignb, so signed x signed products take |x| and move
 * the sign of x onto y with a mask. */
#ifndef Q36_QUANT_AVX512_UTIL_H
#define Q36_QUANT_AVX512_UTIL_H

#include <immintrin.h>
#include <string.h>

#include "avx2_util.h"

/* dot_avx512_vnni.c defines it first, with avx512vnni added */
#ifndef AVX512
#define AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl")))
#endif

AVX512 static inline __m512i load64(const void *p)
{
    return _mm512_loadu_si512(p);
}

/* 32 bytes at p in both 256-bit halves */
AVX512 static inline __m512i bcast32(const void *p)
{
    return _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)p));
}

/* 32 int16 sums of adjacent byte products, x and y signed, |x| <= 128,
 * |y| <= 127: a pair is at most 2 * 128 * 127 = 32512. */
AVX512 static inline __m512i madd_i8x(__m512i x, __m512i y)
{
    const __mmask64 neg = _mm512_movepi8_mask(x);
    return _mm512_maddubs_epi16(_mm512_abs_epi8(x), _mm512_mask_sub_epi8(y, neg, _mm512_setzero_si512(), y));
}

/* 64 nibble codes from the 16 packed bytes of each 256-bit half: half h
 * gets bytes p[16h..16h+15], low nibbles in its low 128 bits (elements
 * 0..15 of a 32-element block), high nibbles above (16..31). */
AVX512 static inline __m512i nibbles2x16(__m256i q)
{
    const __m512i z = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3),
                                               _mm512_castsi256_si512(q));
    const __m512i s = _mm512_mask_blend_epi64(0xCC, z, _mm512_srli_epi16(z, 4));
    return _mm512_and_si512(s, _mm512_set1_epi8(15));
}

/* the 16 bytes at p and at p + stride as one 256-bit vector */
AVX512 static inline __m256i two16(const uint8_t *p, size_t stride)
{
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)p)),
                                   _mm_loadu_si128((const __m128i *)(p + stride)), 1);
}

/* f32 vector of a in lanes 0..7 and b in lanes 8..15 */
AVX512 static inline __m512 halves_ps(float a, float b)
{
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_set1_ps(a)),
                                               _mm256_castps_pd(_mm256_set1_ps(b)), 1));
}

/* int16 vector of a in the low 256 bits and b in the high ones */
AVX512 static inline __m512i halves16(int a, int b)
{
    return _mm512_inserti64x4(_mm512_set1_epi16((short)a), _mm256_set1_epi16((short)b), 1);
}

/* int32 vector of a in the low 256 bits and b in the high ones */
AVX512 static inline __m512i halves32(int a, int b)
{
    return _mm512_inserti64x4(_mm512_set1_epi32(a), _mm256_set1_epi32(b), 1);
}

/* byte vector of a in the low 256 bits and b in the high ones */
AVX512 static inline __m512i halves8(int a, int b)
{
    return _mm512_inserti64x4(_mm512_set1_epi8((char)a), _mm256_set1_epi8((char)b), 1);
}

/* a 16-entry byte table in every 128-bit lane */
AVX512 static inline __m512i lut16x(const int8_t *t)
{
    return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)t));
}

#endif
