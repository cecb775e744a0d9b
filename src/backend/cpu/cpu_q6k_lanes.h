/* cpu_q6k_lanes.h: the exact integer part of a Q6_K x Q8_K super-block dot
 * in AVX2 registers, shared by the two float orders built on it
 * (cpu_qdot.c: ggml's 8 lanes; cpu_amx.c: llama.cpp's AMX chain).
 *
 * Lane L ends as 32-bit sum of sub-blocks 2L and 2L+1's code x activation
 * products times their scales, less 32 x the activation's 16-element sums
 * times the scales: byte pairs summed in 16 bits by vpmaddubsw (no pair
 * exceeds 2 * 63 * 127), then times the scales in 32 bits, all exact. */
#ifndef Q36_CPU_Q6K_LANES_H
#define Q36_CPU_Q6K_LANES_H

#include <immintrin.h>
#include <stdint.h>

/* w: one Q6_K block (128 low nibbles, 64 high pairs, 16 scales, f16 d);
 * a: one Q8_K block (f32 d, 256 codes, 16 sums) */
__attribute__((target("avx2"), always_inline))
static inline __m256i cpu_q6k_lanes_avx2(const uint8_t *w, const uint8_t *a)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
    const uint8_t *ql = w, *qh = w + 128;
    const int8_t *sc = (const int8_t *)(w + 192);
    const int8_t *q8 = (const int8_t *)(a + 4);
    __m256i sumi = _mm256_setzero_si256();
    for (int j = 0; j < 2; j++) {
        const __m256i l0 = _mm256_loadu_si256((const __m256i *)(ql + 64 * j));
        const __m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 64 * j + 32));
        const __m256i h = _mm256_loadu_si256((const __m256i *)(qh + 32 * j));
        __m256i codes[4];
        codes[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m30));
        codes[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m30));
        codes[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(h, m30));
        codes[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                   _mm256_and_si256(_mm256_srli_epi16(h, 2), m30));
        for (int g = 0; g < 4; g++) {
            const int is = 4 * j + g;
            const __m256i x8 = _mm256_loadu_si256((const __m256i *)(q8 + 128 * j + 32 * g));
            const __m256i p16 = _mm256_maddubs_epi16(codes[g], x8);
            const __m256i s16 = _mm256_set_m128i(_mm_set1_epi16(sc[2 * is + 1]), _mm_set1_epi16(sc[2 * is]));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(s16, p16));
        }
    }
    const __m256i bs = _mm256_loadu_si256((const __m256i *)(a + 4 + 256));
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)sc));
    return _mm256_sub_epi32(sumi, _mm256_slli_epi32(_mm256_madd_epi16(bs, sc16), 5));
}

#endif
