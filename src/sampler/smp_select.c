/* smp_select.c: finding the best effective logits without sorting the
 * vocabulary: argmax, top-k through a k-element min-heap fed in id order,
 * and a quickselect that sorts only the prefix a caller asks for.
 *
 * The order everywhere is "larger logit first, lower id among equals". Ids
 * are visited in increasing order, so a later id never displaces an equal
 * logit already kept: a strict compare against the heap's worst is enough.
 */
#include "smp_internal.h"

#include <stdlib.h>

static inline bool better(smp_cand a, smp_cand b)
{
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

int smp_cand_cmp(const void *pa, const void *pb)
{
    const smp_cand *a = pa, *b = pb;
    if (a->logit != b->logit)
        return a->logit > b->logit ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

int32_t smp_argmax(const smp *s, const float *logits, int32_t n)
{
    float tmp[SMP_BLOCK];
    int32_t best = 0;
    float bv = -__builtin_inff();
    bool any = false;
    for (int32_t b0 = 0; b0 < n; b0 += SMP_BLOCK) {
        int32_t len = n - b0 < SMP_BLOCK ? n - b0 : SMP_BLOCK;
        const float *v = smp_block(s, logits, b0, len, tmp);
        for (int32_t j = 0; j < len; j++) {
            if (v[j] > bv || !any) {
                if (v[j] == v[j]) {        /* skips NaN */
                    bv = v[j];
                    best = b0 + j;
                    any = true;
                }
            }
        }
    }
    return best;
}

/* Min-heap on "worse": the root is the worst kept candidate. */
static void sift_down(smp_cand *h, int32_t n, int32_t i)
{
    smp_cand x = h[i];
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && better(h[c], h[c + 1]))
            c++;
        if (!better(x, h[c]))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

static void sift_up(smp_cand *h, int32_t i)
{
    smp_cand x = h[i];
    while (i > 0) {
        int32_t p = (i - 1) / 2;
        if (!better(h[p], x))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

void smp_top_k(smp *s, const float *logits, int32_t n, int32_t k)
{
    smp_cand *h = s->cand;
    float tmp[SMP_BLOCK];
    int32_t size = 0;
    float worst = 0.0f;
    for (int32_t b0 = 0; b0 < n; b0 += SMP_BLOCK) {
        int32_t len = n - b0 < SMP_BLOCK ? n - b0 : SMP_BLOCK;
        const float *v = smp_block(s, logits, b0, len, tmp);
        int32_t j = 0;
        for (; j < len && size < k; j++) {
            h[size] = (smp_cand){ b0 + j, v[j], 0.0f };
            sift_up(h, size++);
            worst = h[0].logit;
        }
        for (; j < len; j++) {
            if (v[j] > worst) {
                h[0] = (smp_cand){ b0 + j, v[j], 0.0f };
                sift_down(h, k, 0);
                worst = h[0].logit;
            }
        }
    }
    qsort(h, (size_t)k, sizeof *h, smp_cand_cmp);
}

static inline void swap(smp_cand *a, smp_cand *b)
{
    smp_cand t = *a;
    *a = *b;
    *b = t;
}

/* Partitions c[lo..hi) around a median-of-three pivot; returns its index:
 * every element before it is better, every element after it worse. */
static int32_t partition(smp_cand *c, int32_t lo, int32_t hi)
{
    int32_t mid = lo + (hi - lo) / 2, last = hi - 1;
    if (better(c[mid], c[lo]))
        swap(&c[mid], &c[lo]);
    if (better(c[last], c[lo]))
        swap(&c[last], &c[lo]);
    if (better(c[mid], c[last]))
        swap(&c[mid], &c[last]);     /* now c[last] is the median */
    smp_cand pv = c[last];
    int32_t store = lo;
    for (int32_t i = lo; i < last; i++)
        if (better(c[i], pv))
            swap(&c[i], &c[store++]);
    swap(&c[store], &c[last]);
    return store;
}

void smp_sort_prefix(smp_cand *c, int32_t m, int32_t from, int32_t to)
{
    if (to > m)
        to = m;
    if (to <= from)
        return;
    int32_t lo = from, hi = m;
    while (to < m && hi - lo > 1) {
        int32_t p = partition(c, lo, hi);
        if (p == to)
            break;
        if (p < to)
            lo = p + 1;
        else
            hi = p;
    }
    qsort(c + from, (size_t)(to - from), sizeof *c, smp_cand_cmp);
}
