/* quantize_act_simd.c: AVX2 and AVX-512 versions of the activation
 * quantizers the K-quant and Q8_0 weights pair with (Q8_K and Q8_0), byte
 * for byte equal to quantize_act.c's scalar loops, which are equal to
 * ggml's x86 CPU backend (tests/test_quant_act.c compares them over odd
 * inputs: zeros, ties, inf, NaN, blocks too small for 127/amax).
 *
 * Why the bytes agree:
 *  - every float operation is the scalar one, lane by lane: the same
 *    products and the same 1.5*2^23 rounding add (the build is ISO C11, so
 *    no multiply-add is fused);
 *  - Q8_0 reduces amax with vmaxps in the scalar code's (ggml's AVX) order,
 *    so a NaN lands where it does there, and converts with vcvtps2dq and
 *    the saturating packs, which the scalar code emulates;
 *  - Q8_K's first largest |x| is found as the scalar loop finds it: the
 *    maximum of |x| over the block (vmaxps with |x| first skips NaN, as
 *    the scalar `a > amax` does), then the first index holding it; its
 *    codes keep the scalar code's low byte of min(127, v) (vpmovdb
 *    truncates; the AVX2 path masks and packs unsigned).
 * Q8_0 has no AVX-512 version: its blocks are 32 floats, and ggml's order
 * for amax is defined on 8-lane vectors; the AVX2 code runs on AVX-512
 * CPUs too. */
#include "quantize_act_simd.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "quant_impl.h"

#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl")))

#define ROUND_MAGIC 12582912.f      /* 1.5 * 2^23 */

/* ------------------------------------------------------------------ Q8_0 */

AVX2 void quant_act_q8_0_avx2(const float *x, uint8_t *y, int64_t nb)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t i = 0; i < nb; i++, x += 32, y += 34) {
        __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
        __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
        __m256 m = _mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1));
        m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v2));
        m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v3));
        __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(m, 1), _mm256_castps256_ps128(m));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        const float d = amax / 127.f;
        const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.f / amax : 0.0f);
        const __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(v0, id));
        const __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(v1, id));
        const __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(v2, id));
        const __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(v3, id));
        /* packs work per 128-bit lane: the permute puts the 8 groups of 4
         * bytes back in element order */
        __m256i q = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
        q = _mm256_permutevar8x32_epi32(q, perm);
        const uint16_t h = quant_f32_to_f16(d);
        memcpy(y, &h, 2);
        _mm256_storeu_si256((__m256i *)(y + 2), q);
    }
}

/* ------------------------------------------------------------------ Q8_K */

/* The first element whose |x| equals amax (amax > 0, present). */
AVX2 static int first_at_avx2(const float *x, float amax)
{
    const __m256 sign = _mm256_set1_ps(-0.0f), a = _mm256_set1_ps(amax);
    for (int j = 0; j < 256; j += 8) {
        const __m256 e = _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)), a,
                                       _CMP_EQ_OQ);
        const int mask = _mm256_movemask_ps(e);
        if (mask)
            return j + __builtin_ctz((unsigned)mask);
    }
    return 0;   /* not reached: amax is one of the |x| */
}

/* min(127, round_even(iscale * x)) as the scalar code computes it, for 8
 * lanes (the rounding trick's integer also for huge and NaN products) */
AVX2 static inline __m256i q8k_codes_avx2(__m256 x, __m256 iscale)
{
    const __m256 t = _mm256_add_ps(_mm256_mul_ps(iscale, x), _mm256_set1_ps(ROUND_MAGIC));
    __m256i v = _mm256_and_si256(_mm256_castps_si256(t), _mm256_set1_epi32(0x7FFFFF));
    v = _mm256_sub_epi32(v, _mm256_set1_epi32(0x400000));
    return _mm256_min_epi32(v, _mm256_set1_epi32(127));
}

AVX2 void quant_act_q8_K_avx2(const float *x, uint8_t *y, int64_t nb)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i low = _mm256_set1_epi32(0xFF), perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t i = 0; i < nb; i++, x += 256, y += 292) {
        __m256 m = _mm256_setzero_ps();
        for (int j = 0; j < 256; j += 8)
            m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)), m);
        __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(m, 1), _mm256_castps256_ps128(m));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        int8_t *q = (int8_t *)(y + 4);
        int16_t bs[16];
        float d = 0.0f;
        if (amax == 0.0f) {
            memset(q, 0, 256);
            memset(bs, 0, sizeof bs);
        } else {
            const float iscale = -127.f / x[first_at_avx2(x, amax)];
            const __m256 is = _mm256_set1_ps(iscale);
            const __m256i bias = _mm256_set1_epi8((char)0x80);
            for (int j = 0; j < 256; j += 32) {
                /* low bytes, as unsigned 0..255, packed without saturation */
                const __m256i c0 = _mm256_and_si256(q8k_codes_avx2(_mm256_loadu_ps(x + j), is), low);
                const __m256i c1 = _mm256_and_si256(q8k_codes_avx2(_mm256_loadu_ps(x + j + 8), is), low);
                const __m256i c2 = _mm256_and_si256(q8k_codes_avx2(_mm256_loadu_ps(x + j + 16), is), low);
                const __m256i c3 = _mm256_and_si256(q8k_codes_avx2(_mm256_loadu_ps(x + j + 24), is), low);
                __m256i b = _mm256_packus_epi16(_mm256_packus_epi32(c0, c1), _mm256_packus_epi32(c2, c3));
                b = _mm256_permutevar8x32_epi32(b, perm);
                _mm256_storeu_si256((__m256i *)(q + j), b);
                /* sums of 16 signed codes: sad of (q + 128) over 8 bytes,
                 * two halves per group, less 16 * 128 */
                uint64_t s[4];
                _mm256_storeu_si256((__m256i *)s,
                                    _mm256_sad_epu8(_mm256_xor_si256(b, bias), _mm256_setzero_si256()));
                bs[j / 16] = (int16_t)((int)(s[0] + s[1]) - 2048);
                bs[j / 16 + 1] = (int16_t)((int)(s[2] + s[3]) - 2048);
            }
            d = 1 / iscale;
        }
        memcpy(y, &d, 4);
        memcpy(y + 260, bs, sizeof bs);
    }
}

AVX512 void quant_act_q8_K_avx512(const float *x, uint8_t *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 256, y += 292) {
        __m512 m = _mm512_setzero_ps();
        for (int j = 0; j < 256; j += 16)
            m = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + j)), m);
        const float amax = _mm512_reduce_max_ps(m);   /* no NaN in m: order is free */
        int8_t *q = (int8_t *)(y + 4);
        int16_t bs[16];
        float d = 0.0f;
        if (amax == 0.0f) {
            memset(q, 0, 256);
            memset(bs, 0, sizeof bs);
        } else {
            const __m512 a = _mm512_set1_ps(amax);
            int at = 0;
            for (int j = 0; j < 256; j += 16) {
                const __mmask16 e = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(x + j)), a,
                                                       _CMP_EQ_OQ);
                if (e) {
                    at = j + __builtin_ctz((unsigned)e);
                    break;
                }
            }
            const float iscale = -127.f / x[at];
            const __m512 is = _mm512_set1_ps(iscale);
            for (int g = 0; g < 16; g++) {
                const __m512 t = _mm512_add_ps(_mm512_mul_ps(is, _mm512_loadu_ps(x + 16 * g)),
                                               _mm512_set1_ps(ROUND_MAGIC));
                __m512i v = _mm512_and_si512(_mm512_castps_si512(t), _mm512_set1_epi32(0x7FFFFF));
                v = _mm512_sub_epi32(v, _mm512_set1_epi32(0x400000));
                v = _mm512_min_epi32(v, _mm512_set1_epi32(127));
                _mm_storeu_si128((__m128i *)(q + 16 * g), _mm512_cvtepi32_epi8(v));
                /* the stored (int8) codes, sign-extended back, summed */
                v = _mm512_srai_epi32(_mm512_slli_epi32(v, 24), 24);
                bs[g] = (int16_t)_mm512_reduce_add_epi32(v);
            }
            d = 1 / iscale;
        }
        memcpy(y, &d, 4);
        memcpy(y + 260, bs, sizeof bs);
    }
}

#endif
