/* spec.h: speculative decoding of one slot with the model's own MTP block
 * (llama.cpp's `--spec-type draft-mtp`, MODEL.md §5.3).
 *
 * A round: the MTP block drafts up to n_draft tokens from the last sampled
 * token (greedy: its argmax, chained through its own hidden rows); the
 * trunk evaluates the sampled token and the drafts in ONE pass of the
 * engine, with logits and hidden rows for each; the gen samples row by row
 * exactly as plain decoding would and keeps a draft while it equals the
 * sampled token. So the output is the plain decoder's, token for token
 * (greedy, and at temperature > 0 with the same seed: the sampler sees the
 * same rows in the same order). With a draft that is one token (q = a point
 * mass), "draw from p, keep the draft iff the draw equals it" is the
 * standard speculative-sampling rule: acceptance min(1, p(d)/q(d)) = p(d),
 * and on rejection a draw from (p - q)+ renormalized = p without d. The
 * general rule (any q) is spec_accept, for drafters that sample.
 *
 * Rollback: the verify pass keeps the DeltaNet state after each row and a
 * rejection rewinds to the last kept row (spec_set_rewind, the engine made
 * with opts.n_keep >= n_draft + 1); or, by default here, the slot's state
 * is saved in a device checkpoint before the pass (no K/V rows: rows past
 * the position are never read) and a rejection loads it and evaluates the
 * kept rows again (a replay). The MTP block's K/V rows need no rollback:
 * the next round's first MTP pass rewrites the kept positions with the
 * trunk's hidden rows (llama.cpp's catch-up) before drafting.
 *
 * Ownership: a spec belongs to one slot of an engine made with opts.mtp = 1
 * (exact mode for the token-identity guarantee); freed before the engine.
 * One thread at a time. */
#ifndef Q36_SPEC_H
#define Q36_SPEC_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "../gen/gen.h"
#include "../include/q36.h"

#define SPEC_MAX_DRAFT 16

typedef struct spec_stats {
    int64_t rounds;                       /* verify passes */
    int64_t drafted, accepted;            /* draft tokens made / kept */
    int64_t drafted_at[SPEC_MAX_DRAFT];   /* drafts made at position i of a round */
    int64_t accepted_at[SPEC_MAX_DRAFT];  /* ... and kept (a draft is kept only if
                                             every one before it was) */
    int64_t emitted;                      /* tokens generated */
    int64_t replays, replay_rows;         /* rollbacks and the rows evaluated again */
    int64_t rewinds;                      /* rollbacks to a kept state (no replay) */
    double  t_draft, t_verify, t_rollback, t_catchup; /* seconds */
} spec_stats;

typedef struct spec spec;

/* n_draft in [1, SPEC_MAX_DRAFT]. Q36_E_ARG when the engine holds no MTP
 * block; Q36_E_NOMEM. */
int  spec_new(q36_engine *e, int slot, int n_draft, spec **out, q36_err *err);
void spec_free(spec *s);                                   /* accepts NULL */

/* Evaluates the prompt on the slot (from its current position), fills the
 * MTP block's rows for it, and leaves the last row's logits in logits
 * (n_vocab floats). */
int spec_prefill(spec *s, const int32_t *ids, int n, float *logits, q36_err *err);

/* gen_run with drafts (gen.h): same contract, same tokens. On return the
 * slot holds the whole reply (the last token evaluated too) and logits the
 * row after it; with gen_params.device_greedy (and gen_greedy), as in
 * gen_run, every choice is made on the device, the verify pass's rows
 * included, and logits stay the prompt's. */
int spec_run(spec *s, gen *g, float *logits, const volatile sig_atomic_t *interrupt,
             gen_emit_fn emit, void *user, gen_result *res, q36_err *err);

/* llama.cpp's --draft-p-min: a round stops drafting at the first draft
 * whose probability among the MTP head's 10 best is below p_min (default
 * 0: always k drafts). */
void spec_set_p_min(spec *s, float p_min);

/* Rollback by kept per-row states instead of checkpoint + replay: the
 * verify pass keeps the DeltaNet state after each row (the engine made
 * with opts.n_keep >= n_draft + 1) and a rejection rewinds to the kept
 * row (q36_slot_rewind). */
void spec_set_rewind(spec *s, bool on);

const spec_stats *spec_get_stats(const spec *s);
/* The round being accepted (or the last one): the position P of the token
 * the drafts follow, and its k drafts (*drafts valid until the next round).
 * Returns k (0 before the first round). For tests and traces: an emit
 * callback sees the drafts its tokens are checked against. */
int spec_round(const spec *s, int32_t *pos, const int32_t **drafts);
void spec_reset_stats(spec *s);

/* The first index of the largest of x[0..n): a greedy draft. */
int32_t spec_argmax(const float *x, int64_t n);

/* The standard speculative-sampling rule for one position: a draft d drawn
 * from q is kept with probability min(1, p[d]/q[d]); otherwise the token is
 * drawn from max(0, p - q) renormalized. p and q are distributions over n
 * ids; u1, u2 uniform in [0, 1). Returns the token (d when kept). The
 * result is distributed as p (tests/test_spec.c). */
int32_t spec_accept(const float *p, const float *q, int32_t n, int32_t d, double u1, double u2);

#endif
