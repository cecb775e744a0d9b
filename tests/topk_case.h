/* topk_case.h: what the CPU and CUDA backend tests share to check be_topk:
 * rows of logits with the hard cases, and the reference (every non-NaN
 * value sorted by value, then column). */
#ifndef Q36_TEST_TOPK_CASE_H
#define Q36_TEST_TOPK_CASE_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "test.h"

/* R rows of C columns (row pitch ld), each by i % 8: random; all equal;
 * all -inf; NaN first; three values among NaN (fewer than any k > 3: the
 * padding); -0 and +0 among negatives with the maximum twice; a few
 * levels (ties at every threshold); ten large values over a sea of equal
 * ones (the k-th among ~C ties, the lowest columns taken). */
static inline void topk_fill(t_rng *r, float *x, int64_t R, int64_t C, int64_t ld)
{
    for (int64_t i = 0; i < R; i++) {
        float *v = x + i * ld;
        for (int64_t c = 0; c < C; c++)
            v[c] = 4.0f * (2.0f * t_uniform(r) - 1.0f);
        switch (i % 8) {
        case 1: for (int64_t c = 0; c < C; c++) v[c] = 0.25f; break;
        case 2: for (int64_t c = 0; c < C; c++) v[c] = -INFINITY; break;
        case 3: v[0] = NAN; break;
        case 4:
            for (int64_t c = 0; c < C; c++) v[c] = NAN;
            v[C / 3] = 1.0f; v[C - 1] = -2.0f; v[0] = 1.0f;
            break;
        case 5:
            for (int64_t c = 0; c < C; c++) v[c] = -1.0f - (float)(c % 5);
            v[C / 2] = -0.0f; v[C / 4] = 0.0f; v[C - 1] = 0.0f;
            v[C / 5] = 9.0f; v[C / 7] = 9.0f;
            break;
        case 6: for (int64_t c = 0; c < C; c++) v[c] = floorf(v[c] * 2.0f) / 2.0f; break;
        case 7:
            for (int64_t c = 0; c < C; c++) v[c] = 1.0f;
            for (int j = 0; j < 10; j++) v[t_next(r) % (uint64_t)C] = 5.0f + (float)j;
            break;
        default: break;
        }
    }
}

static const float *topk_sort_row;
static inline int topk_cmp(const void *a, const void *b)
{
    const int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    const float u = topk_sort_row[i], w = topk_sort_row[j];
    return u > w ? -1 : u < w ? 1 : (i > j) - (i < j);
}

/* be_topk's answer for a row x of n columns by a full sort: ids, vals */
static inline void topk_ref(const float *x, int64_t n, int k, int32_t *ids, float *vals)
{
    int32_t *ord = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    int64_t m = 0;
    for (int64_t c = 0; c < n; c++)
        if (!isnan(x[c]))
            ord[m++] = (int32_t)c;
    topk_sort_row = x;
    qsort(ord, (size_t)m, sizeof *ord, topk_cmp);
    for (int i = 0; i < k; i++) {
        ids[i] = i < m ? ord[i] : -1;
        vals[i] = i < m ? x[ord[i]] : -INFINITY;
    }
    free(ord);
}

#endif
