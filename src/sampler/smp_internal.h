/* smp_internal.h: the sampler's state and the helpers its files share
 * (penalty window, selection, random stream). Not a public header.
 */
#ifndef Q36_SMP_INTERNAL_H
#define Q36_SMP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sampler.h"

/* Logits are read in blocks of this many ids: a block with no penalized id is
 * read in place, one with penalized ids is copied and patched. */
#define SMP_BLOCK 64

struct smp {
    smp_params par;
    int32_t    n_vocab;       /* capacity given to smp_new */
    bool       greedy;        /* temp <= 0 */
    bool       penalize;      /* penalties on (window > 0 and a non-neutral value) */

    smp_cand  *cand;          /* [n_vocab] working candidates */

    /* penalty window: ring of the last penalty_last_n accepted ids, count of
     * each id in it, and one bit per id with count > 0 */
    int32_t   *ring;          /* [penalty_last_n] */
    int32_t    ring_len, ring_head;   /* head: slot of the oldest id */
    int32_t   *count;         /* [n_vocab] */
    uint64_t  *mask;          /* [n_vocab / 64 + 1] */

    uint32_t   seed;          /* seed in use */
    uint64_t   rng[4];        /* xoshiro256** state */
};

/* ---- penalty window (smp_penalty.c) ---- */
void smp_window_clear(smp *s);
void smp_window_push(smp *s, int32_t token);
/* The effective (penalized) logits of ids [b0, b0 + len), len <= SMP_BLOCK:
 * logits + b0 itself when no id there is penalized, else tmp filled. */
const float *smp_block(const smp *s, const float *logits, int32_t b0, int32_t len, float *tmp);
/* The effective logit of one id. */
float smp_logit(const smp *s, const float *logits, int32_t id);

/* ---- selection over the effective logits (smp_select.c) ---- */
/* The id of the largest effective logit, lowest id among equals. */
int32_t smp_argmax(const smp *s, const float *logits, int32_t n);
/* The k best effective logits into s->cand[0..k), sorted best first
 * (larger logit, then lower id). 0 < k < n. */
void smp_top_k(smp *s, const float *logits, int32_t n, int32_t k);
/* Candidate order: larger logit first, lower id among equals (qsort style). */
int smp_cand_cmp(const void *a, const void *b);
/* With c[i].p the weight of each of c[0..m), moves the shortest best-first
 * prefix whose weights sum (in double) to >= mass into c[0..keep), in
 * no particular order, and returns keep (m when the total falls short). */
int32_t smp_mass_prefix(smp_cand *c, int32_t m, double mass);

/* ---- random stream (smp_rng.c) ---- */
void     smp_rng_seed(smp *s);      /* from s->par.seed, or the OS for SMP_SEED_RANDOM */
double   smp_rng_uniform(smp *s);   /* [0, 1), 53 bits */

#endif
