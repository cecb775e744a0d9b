/* avx2_util.h: small AVX2 helpers shared by dot_avx2.c and dot_avx2_iq.c
 * (horizontal sums, signed byte products, bit expansion, block field
 * loads), and by the CPU backend's AMX-order dots (cpu_amx.c). Every
 * function carries target("avx2,fma,f16c"); include this only on x86-64
 * and call only after a CPU-feature check.
 *
 * Integer products use vpmaddubsw (unsigned x signed bytes -> saturating
 * int16 pairs). Each caller keeps a pair below 2^15: see the note at the
 * call. */
#ifndef Q36_QUANT_AVX2_UTIL_H
#define Q36_QUANT_AVX2_UTIL_H

#include <immintrin.h>
#include <string.h>

#include "quant_impl.h"

#define AVX2 __attribute__((target("avx2,fma,f16c")))

/* f16 scale to f32 with F16C: exact, like quant_f16_to_f32. */
AVX2 static inline float f16c(const uint8_t *p)
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

AVX2 static inline __m256i load32(const void *p)
{
    return _mm256_loadu_si256((const __m256i *)p);
}

/* 16 int16 sums of adjacent byte products, x and y signed, |x| <= 128,
 * |y| <= 127: a pair is at most 2 * 128 * 127 = 32512. */
AVX2 static inline __m256i madd_i8(__m256i x, __m256i y)
{
    return _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

/* 0xFF in byte j where bit j of x is set, else 0x00. */
AVX2 static inline __m256i bits_to_bytes(uint32_t x)
{
    const __m256i v = _mm256_set1_epi32((int)x);
    const __m256i pick = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                          2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(0x8040201008040201LL);
    return _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(v, pick), bit), bit);
}

/* y with the sign flipped where mask bytes are 0xFF. */
AVX2 static inline __m256i negate_where(__m256i y, __m256i mask)
{
    return _mm256_sub_epi8(_mm256_xor_si256(y, mask), mask);
}

/* 32 codes from 16 packed bytes: low nibbles (elements 0..15) below the
 * high nibbles (16..31), the order of the 32-element block formats. */
AVX2 static inline __m256i nibbles16(const uint8_t *p)
{
    const __m128i q = _mm_loadu_si128((const __m128i *)p), m4 = _mm_set1_epi8(15);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m4), _mm_and_si128(q, m4));
}

/* int16 vector with a in the low 128 bits and b in the high ones. */
AVX2 static inline __m256i split16(int a, int b)
{
    return _mm256_set_m128i(_mm_set1_epi16((short)b), _mm_set1_epi16((short)a));
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

/* sum over k < 16 of sc[k] * bsums[k] (Q8_K block sums at a + 260) */
AVX2 static inline int dot_bsums(__m256i sc16, const uint8_t *a)
{
    __m256i p = _mm256_madd_epi16(sc16, load32(a + 260));
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

/* 16 signed bytes as int16 */
AVX2 static inline __m256i i8x16(const void *p)
{
    return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p));
}

#endif
