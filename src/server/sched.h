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
 * Today (sched_forward.c) every slot is a q36_session and a step runs its
 * rows one after another. With the engine's batch API (an engine of n_slots
 * slots and one evaluation call over rows that carry token, slot and
 * position, returning the logits of the rows asked for) the same call
 * becomes one forward pass: row r's tokens become batch rows (id, slot
 * r->slot, positions from the slot's position on), its last row goes into
 * the list of rows whose logits come back, and those rows are copied (or
 * written) to each row's logits. sched_engine_reset / _pos map to the
 * engine's slot reset and position. A failure inside such a pass fails
 * every row of the step (the engine leaves those slots' state undefined);
 * the scheduler then ends each of their jobs with the error and resets
 * the slots, as it does for one failed row today. The scheduler does not
 * change.
 *
 * Threads: one thread (the engine thread) makes every call.
 */
#ifndef Q36_SCHED_H
#define Q36_SCHED_H

#include <stdint.h>

#include "../include/q36.h"

typedef struct sched_row {
    int            slot;
    const int32_t *ids;      /* tokens to append at the slot's position */
    int            n;
    float         *logits;   /* n_vocab floats: the last token's row */
    int            rc;       /* out: 0 or the error kind */
    q36_err        err;      /* out */
} sched_row;

typedef struct sched_engine sched_engine;

int  sched_engine_new(const q36_model *m, int n_slots, int n_ctx, const q36_session_opts *o,
                      sched_engine **out, q36_err *err);
void sched_engine_free(sched_engine *e);                    /* accepts NULL */
/* Evaluates the rows of one step (each slot at most once). */
void sched_engine_forward(sched_engine *e, sched_row *rows, int n);
/* A slot back to position 0 with zero state (a request ends). */
void sched_engine_reset(sched_engine *e, int slot);
int  sched_engine_pos(const sched_engine *e, int slot);
int  sched_engine_n_vocab(const sched_engine *e);

#endif
