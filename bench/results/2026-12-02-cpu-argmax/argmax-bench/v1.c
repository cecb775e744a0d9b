#include <immintrin.h>
#include <stdint.h>
int64_t cpu_argmax_row(const float *v, int64_t n)
{
    if (n <= 1 || v[0] != v[0])
        return 0;
    float m = v[0];
    int64_t best = 0, c = 0;
#if defined(__SSE2__)
    if (n >= 8 && n <= INT32_MAX) {
        __m128 m0 = _mm_set1_ps(m), m1 = m0;
        __m128i i0 = _mm_setzero_si128(), i1 = i0;
        __m128i c0 = _mm_setr_epi32(0, 1, 2, 3), c1 = _mm_setr_epi32(4, 5, 6, 7);
        const __m128i step = _mm_set1_epi32(8);
        for (; c + 8 <= n; c += 8) {
            const __m128 a = _mm_loadu_ps(v + c), b = _mm_loadu_ps(v + c + 4);
            const __m128 ga = _mm_cmpgt_ps(a, m0), gb = _mm_cmpgt_ps(b, m1);
            m0 = _mm_or_ps(_mm_and_ps(ga, a), _mm_andnot_ps(ga, m0));
            m1 = _mm_or_ps(_mm_and_ps(gb, b), _mm_andnot_ps(gb, m1));
            i0 = _mm_or_si128(_mm_and_si128(_mm_castps_si128(ga), c0),
                              _mm_andnot_si128(_mm_castps_si128(ga), i0));
            i1 = _mm_or_si128(_mm_and_si128(_mm_castps_si128(gb), c1),
                              _mm_andnot_si128(_mm_castps_si128(gb), i1));
            c0 = _mm_add_epi32(c0, step);
            c1 = _mm_add_epi32(c1, step);
        }
        float lv[8];
        int32_t li[8];
        _mm_storeu_ps(lv, m0);
        _mm_storeu_ps(lv + 4, m1);
        _mm_storeu_si128((__m128i *)li, i0);
        _mm_storeu_si128((__m128i *)(li + 4), i1);
        for (int k = 0; k < 8; k++)
            if (lv[k] > m || (lv[k] == m && li[k] < best))
                m = lv[k], best = li[k];
    }
#endif
    for (; c < n; c++)
        if (v[c] > m)
            m = v[c], best = c;
    return best;
}
