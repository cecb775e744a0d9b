/* sched.h: the evaluation step the scheduler asks of the engine, kept to one
 * small interface so that it can become one batched forward pass.
 *
 * A sched_engine holds n_slots sequences of one model. A step is a list of
 * rows; each row appends tokens to one slot (one token for a decode step, a
 * chunk of the prompt for prefill) and receives the logits of its last
 * token. Rows of different slots are independent: a row's result does not
 * depend on which other rows share its step (exact mode); a failure is
 * reported per row (row->rc, row->err).
 *
 * sched_forward.c runs a step as one forward pass of one engine
 * (q36_engine_eval): row r's tokens become batch rows of slot r->slot at
 * the slot's positions, and its last token's logits come back into
 * r->logits (and, for a verify row, every token's logits and hidden rows). A
 * step of more tokens than the engine's batch is cut into
 * passes of whole rows. A failure inside a pass fails every row of that pass
 * (the engine leaves those slots' state undefined); the scheduler ends each
 * of their jobs with the error and resets the slots.
 *
 * Threads: one thread (the engine thread) makes every call.
 */
#ifndef Q36_SCHED_H
#define Q36_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "../include/q36.h"

typedef struct sched_row {
    int            slot;
    const int32_t *ids;      /* tokens to append at the slot's position */
    int            n;
    float         *logits;   /* n_vocab floats: the last token's row (n_out rows: the
                                last n_out tokens' rows); NULL: not copied, see out */
    int            n_out;    /* 0 or 1: the last token only; a verify row: all of them */
    float         *hidden;   /* NULL, or n rows of n_embd: every token's hidden row (MTP) */
    int            keep;     /* keep the DeltaNet state after each token (q36_slot_rewind) */
    int            n_save;   /* checkpoints to save inside the pass (q36_engine_save_at): */
    const int     *save_pos; /* the slot's positions, in the row's range (pos, pos + n] */
    q36_ckpt     **save_ck;  /* into these */
    int            rc;       /* out: 0 or the error kind */
    q36_err        err;      /* out */
    const float   *out;      /* out: the same logits rows in the engine's buffer, valid
                                until the next sched_engine_forward */
    int32_t       *best;     /* NULL, or room for the output rows' ids (n_out, at least
                                1): a row whose slot samples greedily (gen_greedy_ban).
                                When every row of a pass has one, the pass returns each
                                output row's largest-logit column, chosen on the device
                                (q36_engine_eval_hid_argmax), instead of its logits */
    const int32_t *ban;      /* with best: the ids its choice skips (ignore_eos), n_ban of
                                them; a pass returns ids only when its rows agree on them
                                and ask for one run (q36_engine_argmax_ban) */
    int            n_ban;
    bool           best_ok;  /* out: best holds them (logits and out were not written) */
    /* Without best: the best logits of each output row that stand for it
     * (gen_top_need; 0: the row is needed). When every row of a pass has
     * some, the pass returns each output row's top_k best ids and logits,
     * chosen on the device (q36_engine_eval_hid_topk; top_k the largest
     * top_need of the pass), into top_ids and top_vals (room for n_out
     * rows of Q36_TOPK_MAX; row j at j * top_k), instead of its logits */
    int            top_need;
    int32_t       *top_ids;
    float         *top_vals;
    int            top_k;    /* out */
    bool           top_ok;   /* out: top_ids and top_vals hold them */
} sched_row;

/* One MTP item: n rows of one slot at MTP positions p0.., each paired with
 * a hidden row of h (n x n_embd); out: the last row's greedy draft (the
 * draft head's column of its largest logit, chosen on the device:
 * q36_mtp_eval_argmax) and hidden row, when best is not NULL. */
typedef struct sched_mtp_row {
    int            slot;
    const int32_t *ids;
    int            n, p0;
    const float   *h;
    int32_t       *best;
    float         *hidden;
} sched_mtp_row;

typedef struct sched_engine sched_engine;

/* One engine of n_slots slots (o->n_slots is ignored). */
int  sched_engine_new(const q36_model *m, int n_slots, int n_ctx, const q36_engine_opts *o,
                      sched_engine **out, q36_err *err);
void sched_engine_free(sched_engine *e);                    /* accepts NULL */
/* Evaluates the rows of one step (each slot at most once). */
void sched_engine_forward(sched_engine *e, sched_row *rows, int n);
/* The MTP passes over items[0..n) (each slot at most once), their hidden
 * rows of kind h_src; items are cut into passes of at most n_batch rows.
 * 0 or the first pass's error (every item of the call fails then). */
int  sched_engine_mtp(sched_engine *e, const sched_mtp_row *items, int n, enum q36_mtp_h h_src,
                      q36_err *err);
/* The MTP pass over items[0..n) (hidden rows from the trunk) followed on
 * the device by k - 1 chained passes (q36_mtp_eval_chain): each item with
 * best != NULL gets k greedy drafts, draft i of the j-th such item at
 * ids[i * n_out + j] (draft head columns), n_out of them; nothing goes to
 * best or hidden. 1, nothing run, when the items do not fit one pass
 * (n_batch rows) or the chain (sched_engine_mtp's passes then); else 0 or
 * the pass's error. */
int  sched_engine_mtp_chain(sched_engine *e, const sched_mtp_row *items, int n, int k,
                            int32_t *ids, int *n_out, q36_err *err);
/* Rolls a slot back to the first `rows` rows of its last kept row
 * (q36_slot_rewind). */
int  sched_engine_rewind(sched_engine *e, int slot, int rows, q36_err *err);
/* A slot back to position 0 with zero state (a request ends). */
void sched_engine_reset(sched_engine *e, int slot);
int  sched_engine_pos(const sched_engine *e, int slot);
int  sched_engine_n_vocab(const sched_engine *e);
/* Rows per forward pass: a step's prompt chunks and decode rows together
 * should not exceed it. */
int  sched_engine_n_batch(const sched_engine *e);
/* The engine itself, for the prefix cache's checkpoints (same thread). */
q36_engine *sched_engine_q36(sched_engine *e);
/* Output rows returned so far as one id (greedy), as their best logits
 * (sampled with top_k), and as whole rows of logits */
void sched_engine_row_counts(const sched_engine *e, uint64_t *ids, uint64_t *top, uint64_t *full);

#endif
