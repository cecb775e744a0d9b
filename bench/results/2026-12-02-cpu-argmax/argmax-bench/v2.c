#include <immintrin.h>
#include <stdint.h>
int64_t cpu_argmax_row(const float *v, int64_t n)
{
    if (n <= 1 || v[0] != v[0])
        return 0;
    float m = v[0];
    int64_t c = 0;
#if defined(__SSE2__)
    __m128 m0 = _mm_set1_ps(m), m1 = m0, m2 = m0, m3 = m0;
    for (; c + 16 <= n; c += 16) {
        m0 = _mm_max_ps(_mm_loadu_ps(v + c), m0);
        m1 = _mm_max_ps(_mm_loadu_ps(v + c + 4), m1);
        m2 = _mm_max_ps(_mm_loadu_ps(v + c + 8), m2);
        m3 = _mm_max_ps(_mm_loadu_ps(v + c + 12), m3);
    }
    float l[16];
    _mm_storeu_ps(l, m0);
    _mm_storeu_ps(l + 4, m1);
    _mm_storeu_ps(l + 8, m2);
    _mm_storeu_ps(l + 12, m3);
    for (int k = 0; k < 16; k++)
        m = l[k] > m ? l[k] : m;
#endif
    for (; c < n; c++)
        m = v[c] > m ? v[c] : m;
    c = 0;
#if defined(__SSE2__)
    const __m128 mm = _mm_set1_ps(m);
    for (; c + 16 <= n; c += 16) {
        const __m128 e = _mm_or_ps(_mm_or_ps(_mm_cmpeq_ps(_mm_loadu_ps(v + c), mm),
                                             _mm_cmpeq_ps(_mm_loadu_ps(v + c + 4), mm)),
                                   _mm_or_ps(_mm_cmpeq_ps(_mm_loadu_ps(v + c + 8), mm),
                                             _mm_cmpeq_ps(_mm_loadu_ps(v + c + 12), mm)));
        if (_mm_movemask_ps(e))
            break;
    }
#endif
    while (v[c] != m)
        c++;
    return c;
}
