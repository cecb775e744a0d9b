/* cpu_gemm_mix.h: the byte order the AVX2 prompt tiles of Q4_K and Q6_K
 * (cpu_gemm_k4.c, cpu_gemm_k6.c) pack both weights and activations in, so
 * that one vpmaddwd takes two 32-element groups of different scales.
 *
 * For groups g and g' (32 bytes each; a 128-bit lane is 16 consecutive
 * elements), mix_pair writes v0 and v1: int16 lane 2j of v0 holds elements
 * 4j and 4j + 1 of g's lane, lane 2j + 1 the same two of g'; v1 the same
 * with elements 4j + 2 and 4j + 3. vpmaddubsw of two such vectors (codes
 * against activations) summed in int16 puts in lanes 2j and 2j + 1 the
 * four products of g and of g' that a plain vpmaddubsw + vpmaddwd would
 * have put in int32 lane j, and vpmaddwd against (scale of g, scale of g')
 * alternating adds both: per 64 elements half the vpmaddwd. The int32
 * lanes hold the same integers, so the float work and the bits are the
 * plain order's. The caller checks that two vpmaddubsw lanes summed stay
 * below 2^15. */
#ifndef Q36_CPU_GEMM_MIX_H
#define Q36_CPU_GEMM_MIX_H

#if defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>

__attribute__((target("avx2"))) static inline void mix_pair(__m256i g, __m256i g2, __m256i *v0, __m256i *v1)
{
    *v0 = _mm256_blend_epi16(g, _mm256_slli_epi32(g2, 16), 0xAA);
    *v1 = _mm256_blend_epi16(_mm256_srli_epi32(g, 16), g2, 0xAA);
}

/* Q8_K activations of u tokens (rows arb bytes apart), nb blocks each,
 * mixed: groups 2c and 2c + 1 of token t's block b give v0 and v1 at
 * ap + ((t * nb + b) * 4 + c) * 64 and + 32 (256 bytes per token and block) */
#define MIX_ABYTES 256
__attribute__((target("avx2"))) static inline void mix_acts(int64_t nb, const uint8_t *a, uint64_t arb,
                                                             int64_t u, uint8_t *ap)
{
    for (int64_t t = 0; t < u; t++)
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *q8 = a + (uint64_t)t * arb + (uint64_t)b * 292 + 4;
            __m256i *o = (__m256i *)(ap + (t * nb + b) * MIX_ABYTES);
            for (int c = 0; c < 4; c++)
                mix_pair(_mm256_loadu_si256((const __m256i *)(q8 + 64 * c)),
                         _mm256_loadu_si256((const __m256i *)(q8 + 64 * c + 32)), o + 2 * c, o + 2 * c + 1);
        }
}

/* The one-row tiles (Q5_K, Q6_K) over packed rows: rows of pack_bytes a
 * block at a time are packed into pk (up to `rows` of them), then for each
 * group of up to 4 tokens the activations are mixed into ap once and
 * row[T - 1] runs each packed row against them. */
typedef void (*mix_pack_fn)(int64_t nb, const uint8_t *w, uint8_t *pk);
typedef void (*mix_row_fn)(int64_t nb, const uint8_t *pk, const uint8_t *ap, const uint8_t *const *at,
                           float *res);
static inline void mix_row_tiles(int64_t nb, const uint8_t *w, uint64_t wrb, int64_t nr, const uint8_t *a,
                                 uint64_t arb, int64_t nt, float *y, int64_t ldy, int64_t rows,
                                 uint64_t pack_bytes, mix_pack_fn pack, const mix_row_fn row[4],
                                 uint8_t *pk, uint8_t *ap)
{
    for (int64_t r0 = 0; r0 < nr; r0 += rows) {
        const int64_t r1 = nr - r0 < rows ? nr : r0 + rows;
        for (int64_t r = r0; r < r1; r++)
            pack(nb, w + (uint64_t)r * wrb, pk + (uint64_t)(r - r0) * (uint64_t)nb * pack_bytes);
        for (int64_t t0 = 0; t0 < nt; t0 += 4) {
            const int T = nt - t0 < 4 ? (int)(nt - t0) : 4;
            const uint8_t *at[4];
            for (int t = 0; t < T; t++)
                at[t] = a + (uint64_t)(t0 + t) * arb;
            mix_acts(nb, at[0], arb, T, ap);
            for (int64_t r = r0; r < r1; r++) {
                float res[4];
                row[T - 1](nb, pk + (uint64_t)(r - r0) * (uint64_t)nb * pack_bytes, ap, at, res);
                for (int t = 0; t < T; t++)
                    y[(t0 + t) * ldy + r] = res[t];
            }
        }
    }
}
#endif
#endif
