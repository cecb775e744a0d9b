/* smp_select.c: finding the best effective logits without sorting the
 * vocabulary: argmax, top-k by filtering against a rising bar with
 * quickselect cuts, and a weighted quickselect that finds top_p's prefix.
 *
 * The order everywhere is "larger logit first, lower id among equals"; ids
 * unique, so it is total and quickselect needs no care for equal keys.
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

/* The largest of v[0..len), NaN ignored, through four independent maxima so
 * the scan is not one long dependency chain. -inf when len is 0. */
static float block_max(const float *v, int32_t len)
{
    float m0 = -__builtin_inff(), m1 = m0, m2 = m0, m3 = m0;
    int32_t j = 0;
    for (; j + 4 <= len; j += 4) {
        m0 = v[j] > m0 ? v[j] : m0;
        m1 = v[j + 1] > m1 ? v[j + 1] : m1;
        m2 = v[j + 2] > m2 ? v[j + 2] : m2;
        m3 = v[j + 3] > m3 ? v[j + 3] : m3;
    }
    for (; j < len; j++)
        m0 = v[j] > m0 ? v[j] : m0;
    m0 = m1 > m0 ? m1 : m0;
    m2 = m3 > m2 ? m3 : m2;
    return m2 > m0 ? m2 : m0;
}

/* Hot loops: the functions start on a 64-byte boundary so their speed does
 * not depend on where the linker puts them (measured up to 1.8x apart on
 * this machine's AMD EPYC from placement alone). */
#define HOT __attribute__((aligned(64)))

HOT int32_t smp_argmax(const smp *s, const float *logits, int32_t n)
{
    float tmp[SMP_BLOCK];
    int32_t best = 0;
    float bv = -__builtin_inff();
    for (int32_t b0 = 0; b0 < n; b0 += SMP_BLOCK) {
        int32_t len = n - b0 < SMP_BLOCK ? n - b0 : SMP_BLOCK;
        const float *v = smp_block(s, logits, b0, len, tmp);
        float m = block_max(v, len);
        if (m > bv) {                 /* strict: an earlier block keeps a tie */
            int32_t j = 0;
            while (v[j] != m)
                j++;
            bv = m;
            best = b0 + j;
        }
    }
    return best;
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

/* Moves the best k of c[0..m) into c[0..k) (unordered), 0 < k < m. */
static void select_best(smp_cand *c, int32_t m, int32_t k)
{
    int32_t lo = 0, hi = m;
    while (hi - lo > 1) {
        int32_t p = partition(c, lo, hi);
        if (p == k)
            break;
        if (p < k)
            lo = p + 1;
        else
            hi = p;
    }
}

/* Cuts c[0..*cnt) back to its best k; returns the new bar: the smallest kept
 * logit. */
static float cut(smp_cand *c, int32_t *cnt, int32_t k)
{
    select_best(c, *cnt, k);
    *cnt = k;
    float bar = c[0].logit;
    for (int32_t i = 1; i < k; i++)
        bar = c[i].logit < bar ? c[i].logit : bar;
    return bar;
}

HOT void smp_top_k(smp *s, const float *logits, int32_t n, int32_t k)
{
    smp_cand *c = s->cand;
    float tmp[SMP_BLOCK];
    if (2 * k >= n) {                 /* little to skip: select over everything */
        for (int32_t b0 = 0; b0 < n; b0 += SMP_BLOCK) {
            int32_t len = n - b0 < SMP_BLOCK ? n - b0 : SMP_BLOCK;
            const float *v = smp_block(s, logits, b0, len, tmp);
            for (int32_t j = 0; j < len; j++)
                c[b0 + j] = (smp_cand){ b0 + j, v[j], 0.0f };
        }
        select_best(c, n, k);
    } else {
        /* Keep whatever beats the k-th best seen so far in c[0..2k); when
         * full, cut back to the best k and raise the bar. Ids arrive in
         * increasing order, so a logit equal to the bar loses to the kept
         * one: a strict compare suffices. Most logits cost one compare. */
        const int32_t first = 2 * k;  /* ids [0, 2k) enter unconditionally */
        for (int32_t b0 = 0; b0 < first; b0 += SMP_BLOCK) {
            int32_t len = first - b0 < SMP_BLOCK ? first - b0 : SMP_BLOCK;
            const float *v = smp_block(s, logits, b0, len, tmp);
            for (int32_t j = 0; j < len; j++)
                c[b0 + j] = (smp_cand){ b0 + j, v[j], 0.0f };
        }
        int32_t cnt = first;
        float bar = cut(c, &cnt, k);
        for (int32_t b0 = first & ~(SMP_BLOCK - 1); b0 < n; b0 += SMP_BLOCK) {
            int32_t len = n - b0 < SMP_BLOCK ? n - b0 : SMP_BLOCK;
            const float *v = smp_block(s, logits, b0, len, tmp);
            for (int32_t j = b0 < first ? first - b0 : 0; j < len; j++) {
                if (v[j] > bar) {
                    c[cnt].id = b0 + j;
                    c[cnt].logit = v[j];
                    if (++cnt == 2 * k)
                        bar = cut(c, &cnt, k);
                }
            }
        }
        if (cnt > k)
            select_best(c, cnt, k);
    }
    qsort(c, (size_t)k, sizeof *c, smp_cand_cmp);
}

int32_t smp_mass_prefix(smp_cand *c, int32_t m, double mass)
{
    /* c[0..lo): decided members, all better than c[lo..hi), holding acc < mass;
     * c[hi..m): decided non-members. Each round partitions c[lo..hi) and
     * keeps the side that holds the boundary: O(m) expected, no sort but of
     * the last few elements. */
    int32_t lo = 0, hi = m;
    double acc = 0.0;
    while (hi - lo > 32) {
        int32_t q = partition(c, lo, hi);
        double upper = 0.0;
        for (int32_t i = lo; i < q; i++)
            upper += c[i].p;
        if (acc + upper >= mass) {
            hi = q;
            continue;
        }
        acc += upper + c[q].p;
        if (acc >= mass)
            return q + 1;
        lo = q + 1;
    }
    qsort(c + lo, (size_t)(hi - lo), sizeof *c, smp_cand_cmp);
    for (int32_t i = lo; i < hi; i++) {
        acc += c[i].p;
        if (acc >= mass)
            return i + 1;
    }
    return m;     /* the total fell short of mass by rounding (only when hi == m) */
}
