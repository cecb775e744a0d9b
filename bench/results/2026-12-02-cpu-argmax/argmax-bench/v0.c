#include <stdint.h>
int64_t cpu_argmax_row(const float *v, int64_t n)
{
    int64_t best = 0;
    for (int64_t c = 1; c < n; c++)
        if (v[c] > v[best])
            best = c;
    return best;
}
