/* smp_chain.c: the stages after the penalties, in llama.cpp's default order
 * (top_k, top_p, min_p, temperature), the draw, and the two entry points
 * smp_sample and smp_apply.
 *
 * top_p and min_p both keep a prefix of the candidates in best-first order,
 * and min_p's threshold depends only on the largest logit, which top_p always
 * keeps. So applying them in sequence keeps the shorter of the two prefixes,
 * each computed on the set top_k left; that lets min_p filter first when
 * top_k is off, so top_p searches only min_p's survivors (its probabilities
 * still use the softmax over everything top_k left, as in sequence). With
 * top_k on, candidates are sorted and top_p walks them; with it off, top_p
 * finds its prefix by a weighted quickselect, without sorting.
 */
#include "smp_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int32_t chain_tail(smp *s, int32_t m, int32_t sorted, float max, double zp, bool use_min,
                          double *z);

/* top_k's k candidates, sorted, in s->cand: the chain from there on */
static int32_t chain_top_k(smp *s, double *z)
{
    const smp_params *P = &s->par;
    const smp_cand *c = s->cand;
    const int32_t m = P->top_k;
    const float max = c[0].logit;
    double zp = 0.0;   /* softmax denominator of the set top_k left, for top_p */
    if (P->top_p < 1.0f && max > -INFINITY)
        for (int32_t i = 0; i < m; i++)
            zp += expf(c[i].logit - max);
    return chain_tail(s, m, m, max, zp, P->min_p > 0.0f, z);
}

/* Runs top_k .. temperature. Leaves m candidates in s->cand with
 * p = exp(logit / temp - max / temp) (unnormalized) and *z their sum;
 * returns m >= 1. */
static int32_t run_chain(smp *s, const float *logits, int32_t n, double *z)
{
    const smp_params *P = &s->par;
    if (P->top_k > 0 && P->top_k < n) {
        smp_top_k(s, logits, n, P->top_k);
        return chain_top_k(s, z);
    }
    /* top_k off: min_p filters while the weights are formed, top_p searches
     * its survivors unsorted */
    smp_cand *c = s->cand;
    const bool use_p = P->top_p < 1.0f, use_min = P->min_p > 0.0f;
    double zp = 0.0;   /* softmax denominator of the whole row, for top_p */
    const int32_t top = smp_argmax(s, logits, n);
    const float max = smp_logit(s, logits, top);
    /* max + logf(min_p) in float, as the definition reads: ids on the
     * boundary fall on the same side as in llama.cpp. */
    const float thr = use_min ? max + logf(P->min_p) : -INFINITY;
    float tmp[SMP_BLOCK];
    int32_t m = 0;
    for (int32_t b0 = 0; b0 < n; b0 += SMP_BLOCK) {
        int32_t len = n - b0 < SMP_BLOCK ? n - b0 : SMP_BLOCK;
        const float *v = smp_block(s, logits, b0, len, tmp);
        if (use_p) {             /* keep each weight for top_p's search */
            for (int32_t j = 0; j < len; j++) {
                float e = expf(v[j] - max);
                zp += e;
                if (v[j] >= thr)
                    c[m++] = (smp_cand){ b0 + j, v[j], e };
            }
        } else {
            for (int32_t j = 0; j < len; j++)
                if (v[j] >= thr)
                    c[m++] = (smp_cand){ b0 + j, v[j], 0.0f };
        }
    }
    if (m == 0)                  /* min_p > 1: only the top survives */
        c[m++] = (smp_cand){ top, max, 1.0f };
    return chain_tail(s, m, 0, max, zp, false, z);   /* min_p applied */
}

/* min_p (use_min: still to apply; c sorted), top_p (its softmax
 * denominator zp), temperature, over the m candidates in s->cand, the
 * first `sorted` of them in order. */
static int32_t chain_tail(smp *s, int32_t m, int32_t sorted, float max, double zp, bool use_min,
                          double *z)
{
    const smp_params *P = &s->par;
    smp_cand *c = s->cand;
    const bool use_p = P->top_p < 1.0f;
    if (!(max > -INFINITY)) {        /* every logit -inf: nothing to weigh */
        c[0].p = 1.0f;
        *z = 1.0;
        return 1;
    }

    int32_t keep = m;
    if (use_min) {                   /* c is sorted here */
        const float thr = max + logf(P->min_p);
        int32_t k = 1;
        while (k < m && c[k].logit >= thr)
            k++;
        keep = k;
    }
    if (use_p && sorted == m) {      /* top_k sorted them: walk */
        double cum = 0.0;
        for (int32_t i = 0; i < keep; i++) {
            cum += expf(c[i].logit - max);
            if (cum >= P->top_p * zp) {
                keep = i + 1;
                break;
            }
        }
    } else if (use_p) {              /* unsorted, weights in c[].p: weighted quickselect */
        keep = smp_mass_prefix(c, m, P->top_p * zp);
    }
    m = keep;

    /* temperature: dividing by temp > 0 keeps the order, so the largest
     * scaled logit is max / temp */
    const float t = P->temp;
    const float xmax = t == 1.0f ? max : max / t;
    double sum = 0.0;
    for (int32_t i = 0; i < m; i++) {
        float x = t == 1.0f ? c[i].logit : c[i].logit / t;
        float e = expf(x - xmax);
        c[i].p = e;
        sum += e;
    }
    *z = sum;
    return m;
}

static int check_call(const smp *s, const float *logits, int32_t n)
{
    return s && logits && n >= 1 && n <= s->n_vocab ? 0 : Q36_E_ARG;
}

/* The draw among the m candidates in s->cand, weights p summing to z. */
static int32_t draw(smp *s, int32_t m, double z)
{
    const smp_cand *c = s->cand;
    /* inverse CDF; a strict compare never picks a zero-weight candidate */
    const double target = smp_rng_uniform(s) * z;
    double run = 0.0;
    for (int32_t i = 0; i < m; i++) {
        run += c[i].p;
        if (run > target)
            return c[i].id;
    }
    for (int32_t i = m - 1; i >= 0; i--)   /* rounding left target at the end */
        if (c[i].p > 0.0f)
            return c[i].id;
    return c[0].id;
}

int32_t smp_sample(smp *s, const float *logits, int32_t n)
{
    if (check_call(s, logits, n))
        return Q36_E_ARG;
    if (s->greedy)
        return smp_argmax(s, logits, n);
    double z;
    const int32_t m = run_chain(s, logits, n, &z);
    return draw(s, m, z);
}

int32_t smp_top_need(const smp *s, int32_t n)
{
    if (!s || s->penalize)
        return 0;
    if (s->greedy)
        return 1;
    return s->par.top_k > 0 && s->par.top_k < n ? s->par.top_k : 0;
}

int32_t smp_sample_top(smp *s, const smp_cand *top, int32_t k, int32_t n)
{
    const int32_t need = s && top && n >= 1 && n <= s->n_vocab ? smp_top_need(s, n) : 0;
    if (!need || k < need || k > n)
        return Q36_E_ARG;
    smp_cand *c = s->cand;
    memcpy(c, top, (size_t)k * sizeof *c);
    qsort(c, (size_t)k, sizeof *c, smp_cand_cmp);
    if (s->greedy)
        return c[0].id;
    double z;
    const int32_t m = chain_top_k(s, &z);
    return draw(s, m, z);
}

int32_t smp_apply(smp *s, const float *logits, int32_t n, const smp_cand **out)
{
    if (check_call(s, logits, n))
        return Q36_E_ARG;
    smp_cand *c = s->cand;
    if (s->greedy) {
        int32_t id = smp_argmax(s, logits, n);
        c[0] = (smp_cand){ id, smp_logit(s, logits, id), 1.0f };
        if (out)
            *out = c;
        return 1;
    }
    double z;
    int32_t m = run_chain(s, logits, n, &z);
    for (int32_t i = 0; i < m; i++)
        c[i].p = (float)(c[i].p / z);
    if (out)
        *out = c;
    return m;
}
