/* cpu_gemm_mix.h: the byte order the AVX2 prompt tiles of Q4_K, Q5_K and
 * Q6_K (cpu_gemm_k4.c, cpu_gemm_k5.c, cpu_gemm_k6.c) pack both weights and
 * activations in, so that one vpmaddwd takes two 32-element groups of
 * different scales.
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

/* A Q8_K activation row's prepared form (MIX_PREP_BYTES a block, rows of
 * K elements cpu_mix_prep_bytes(K) bytes, 16-byte aligned): its blocks
 * mixed, groups 2c and 2c + 1 of block b giving v0 and v1 at
 * m + (4 * b + c) * 64 and + 32 (MIX_ABYTES a block), then after all nb
 * blocks the int16 sums of each block's eight 32-element groups (16
 * bytes a block, at m + nb * MIX_ABYTES + 16 * b; the Q4_K tile's mins
 * take them). cpu_mix_prep_row writes it (cpu_gemm_mix.c). */
#define MIX_QB 292            /* a Q8_K block: f32 d, 256 codes, 16 int16 sums */
#define MIX_ABYTES 256
#define MIX_PREP_BYTES (MIX_ABYTES + 16)
uint64_t cpu_mix_prep_bytes(int64_t K);
void cpu_mix_prep_row(int64_t K, const uint8_t *a, uint8_t *m);

/* The one-row tiles (Q5_K, Q6_K) over packed rows: rows of pack_bytes a
 * block at a time are packed into pk (up to `rows` of them), then for each
 * group of up to 4 tokens row[T - 1] runs each packed row against the
 * tokens' prepared forms: at m + t * mrb where the caller made them, else
 * (m NULL) made here into mg for the group. */
typedef void (*mix_pack_fn)(int64_t nb, const uint8_t *w, uint8_t *pk);
typedef void (*mix_row_fn)(int64_t nb, const uint8_t *pk, const uint8_t *m, uint64_t mrb,
                           const uint8_t *const *at, float *res);
static inline void mix_row_tiles(int64_t nb, const uint8_t *w, uint64_t wrb, int64_t nr, const uint8_t *a,
                                 uint64_t arb, const uint8_t *m, uint64_t mrb, int64_t nt, float *y,
                                 int64_t ldy, int64_t rows, uint64_t pack_bytes, mix_pack_fn pack,
                                 const mix_row_fn row[4], uint8_t *pk, uint8_t *mg)
{
    const uint64_t grb = (uint64_t)nb * MIX_PREP_BYTES;
    for (int64_t r0 = 0; r0 < nr; r0 += rows) {
        const int64_t r1 = nr - r0 < rows ? nr : r0 + rows;
        for (int64_t r = r0; r < r1; r++)
            pack(nb, w + (uint64_t)r * wrb, pk + (uint64_t)(r - r0) * (uint64_t)nb * pack_bytes);
        for (int64_t t0 = 0; t0 < nt; t0 += 4) {
            const int T = nt - t0 < 4 ? (int)(nt - t0) : 4;
            const uint8_t *at[4];
            for (int t = 0; t < T; t++)
                at[t] = a + (uint64_t)(t0 + t) * arb;
            if (!m)
                for (int t = 0; t < T; t++)
                    cpu_mix_prep_row(nb * 256, at[t], mg + (uint64_t)t * grb);
            for (int64_t r = r0; r < r1; r++) {
                float res[4];
                row[T - 1](nb, pk + (uint64_t)(r - r0) * (uint64_t)nb * pack_bytes,
                           m ? m + (uint64_t)t0 * mrb : mg, m ? mrb : grb, at, res);
                for (int t = 0; t < T; t++)
                    y[(t0 + t) * ldy + r] = res[t];
            }
        }
    }
}
#endif
#endif
