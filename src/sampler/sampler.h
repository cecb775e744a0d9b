/* sampler.h: choosing the next token from one row of logits.
 *
 * The stages and their order are those of llama.cpp's default common
 * sampler chain (common/sampling.cpp with default flags; its DRY, top-n-sigma,
 * typical-p and XTC stages are off by default and are not implemented here):
 *
 *   penalties -> top_k -> top_p -> min_p -> temperature -> draw
 *
 * - penalties: for each id seen c > 0 times among the last penalty_last_n
 *   accepted ids, logit l becomes (l <= 0 ? l * repeat : l / repeat), then
 *   l -= c * frequency + presence (float arithmetic).
 * - top_k: keeps the k largest logits (k <= 0 or k >= n_vocab: off). Among
 *   equal logits at the boundary the lowest ids are kept (llama.cpp leaves
 *   that order unspecified).
 * - top_p: keeps the shortest prefix, in descending order of probability
 *   (softmax of the logits left by top_k), whose cumulative probability
 *   reaches top_p; top_p >= 1: off; top_p <= 0 keeps one token.
 * - min_p: keeps the ids with logit >= max_logit + logf(min_p) (the top one
 *   always); min_p <= 0: off.
 * - temperature: logits are divided by temp; temp <= 0 means greedy: the
 *   largest penalized logit, ties to the lowest id (llama.cpp's greedy
 *   sampler picks the first maximum in id order too).
 * - draw: inverse-CDF draw from softmax of the remaining logits with a
 *   uniform double from xoshiro256** (seeded through splitmix64). Seeds give
 *   reproducible streams within q36; they do not reproduce llama.cpp's
 *   mt19937 streams, only its distributions.
 *
 * Cost per call for vocabulary n and top_k k: one pass over the logits (most
 * fail one compare against a rising bar) plus expected O(k log(n/k))
 * quickselect work, then O(k log k) to sort the k. With top_k off, top_p
 * finds its prefix by a weighted quickselect, expected O(n), no sort; that
 * path and a chain with no filter compute one expf per id. No allocation
 * after smp_new.
 *
 * Logits must be finite or -inf; NaN gives an unspecified (but valid) id.
 *
 * Ownership and threads: a smp is owned by one sequence and used by one
 * thread at a time; it owns all its buffers (about 16 bytes per vocabulary
 * entry, allocated by smp_new).
 *
 * Example (a generation loop; llama.cpp's completion tool and server feed the
 * prompt to the penalty window too):
 *     smp_params sp = smp_defaults();
 *     sp.temp = 0.0f;                              // --temp 0: greedy
 *     if (smp_new(&sp, n_vocab, &s, &err)) return err.kind;
 *     for (i = 0; i < n_prompt; i++) smp_accept(s, prompt[i]);
 *     for (;;) { id = smp_sample(s, logits, n_vocab); smp_accept(s, id); ... }
 *     smp_free(s);
 */
#ifndef Q36_SAMPLER_H
#define Q36_SAMPLER_H

#include <stdint.h>

#include "../util/err.h"

/* seed value that asks for a random seed (llama.cpp's LLAMA_DEFAULT_SEED). */
#define SMP_SEED_RANDOM 0xFFFFFFFFu

typedef struct smp_params {
    float    temp;              /* 0.80; <= 0: greedy */
    int32_t  top_k;             /* 40; <= 0: off */
    float    top_p;             /* 0.95; >= 1: off */
    float    min_p;             /* 0.05; <= 0: off */
    float    repeat_penalty;    /* 1.00 (off); must be > 0 */
    float    presence_penalty;  /* 0.00 (off) */
    float    frequency_penalty; /* 0.00 (off) */
    int32_t  penalty_last_n;    /* 64; 0: penalties off; must be >= 0 */
    uint32_t seed;              /* SMP_SEED_RANDOM: from the OS at smp_new and each smp_reset */
} smp_params;

/* One candidate left by the chain. */
typedef struct smp_cand {
    int32_t id;
    float   logit;   /* after penalties, before temperature */
    float   p;       /* probability among the candidates */
} smp_cand;

typedef struct smp smp;

/* llama.cpp's defaults, as listed above. */
smp_params smp_defaults(void);

/* Validates params (NULL means smp_defaults()) and allocates a sampler for
 * vocabularies of up to n_vocab ids. Returns 0, or Q36_E_ARG (err names the
 * parameter, expected vs found) or Q36_E_NOMEM, with *out NULL. */
int smp_new(const smp_params *params, int32_t n_vocab, smp **out, q36_err *err);
void smp_free(smp *s);                        /* accepts NULL */

/* The token drawn from logits[0..n_vocab). Does not record it: call
 * smp_accept with the token actually kept. Returns an id in [0, n_vocab), or
 * Q36_E_ARG when logits is NULL or n_vocab is not in [1, n_vocab of smp_new]. */
int32_t smp_sample(smp *s, const float *logits, int32_t n_vocab);

/* How many of a row's best logits decide the next draw of s over a row of
 * n ids: top_k when it is on (0 < top_k < n), 1 when greedy; 0 when the
 * whole row is needed (top_k off, or penalties on, which change logits
 * before top_k). */
int32_t smp_top_need(const smp *s, int32_t n);
/* smp_sample from the k best logits of a row of n ids alone (k >=
 * smp_top_need(s, n) > 0): top[0..k) holds them, id and logit (p unused),
 * in any order; "best" as smp_sample ranks them (larger logit, lower id
 * among equals; no NaN). The same draw as smp_sample on the whole row, the
 * same random stream. Q36_E_ARG when k or s does not allow it. */
int32_t smp_sample_top(smp *s, const smp_cand *top, int32_t k, int32_t n);

/* The candidate set the chain leaves before the draw, with probabilities
 * (summing to 1): *out points into s and stays valid until the next call on
 * s. Order is unspecified. Greedy mode leaves one candidate with p = 1 (the
 * chain's other survivors would have p = 0). Returns the number of
 * candidates, or Q36_E_ARG like smp_sample. Uses no randomness. */
int32_t smp_apply(smp *s, const float *logits, int32_t n_vocab, const smp_cand **out);

/* Records token in the penalty window (prompt tokens too, if the caller wants
 * them penalized). Returns 0, or Q36_E_ARG for an id outside [0, n_vocab). */
int smp_accept(smp *s, int32_t token);

/* Empties the penalty window and restarts the random stream from the seed
 * (a new one for SMP_SEED_RANDOM). */
void smp_reset(smp *s);

/* The seed in use (the drawn one for SMP_SEED_RANDOM). */
uint32_t smp_seed(const smp *s);

#endif
