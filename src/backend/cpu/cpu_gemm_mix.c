/* cpu_gemm_mix.c: the prepared form of a Q8_K activation row that the AVX2
 * prompt tiles of Q4_K, Q5_K and Q6_K share (cpu_gemm_mix.h; cpu_gemm.h's
 * cpu_tile_prep): made once per matmul by cpu_matmul.c, or once per group
 * of tokens by a tile called without it. */
#include "cpu_gemm_mix.h"

#if defined(__x86_64__)
#include <string.h>

uint64_t cpu_mix_prep_bytes(int64_t K)
{
    return (uint64_t)(K / 256) * MIX_PREP_BYTES;
}

__attribute__((target("avx2"))) void cpu_mix_prep_row(int64_t K, const uint8_t *a, uint8_t *m)
{
    const int64_t nb = K / 256;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *q8 = a + b * MIX_QB + 4;
        for (int c = 0; c < 4; c++) {
            __m256i v0, v1;
            mix_pair(_mm256_loadu_si256((const __m256i *)(q8 + 64 * c)),
                     _mm256_loadu_si256((const __m256i *)(q8 + 64 * c + 32)), &v0, &v1);
            _mm256_storeu_si256((__m256i *)(m + b * MIX_ABYTES + 64 * c), v0);
            _mm256_storeu_si256((__m256i *)(m + b * MIX_ABYTES + 64 * c + 32), v1);
        }
        /* the Q8_K block's 16 sums of 16, pairwise: the 8 sums of 32 */
        const __m256i s32 = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(q8 + 256)),
                                              _mm256_set1_epi16(1));
        _mm_storeu_si128((__m128i *)(m + nb * MIX_ABYTES + b * 16),
                         _mm_packs_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1)));
    }
}
#endif
