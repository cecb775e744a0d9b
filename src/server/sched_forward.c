/* sched_forward.c: the scheduler's evaluation step (sched.h) on one engine
 * of n_slots slots: the rows of a step become one q36_batch (a decode row
 * is one batch row; a prompt chunk is its tokens, at consecutive positions
 * of its slot) and one q36_engine_eval call evaluates them, with the last
 * token of each row in the list of rows whose logits come back. This file is
 * the only server code that evaluates the model.
 *
 * A step whose rows hold more tokens than the engine's batch (n_batch rows)
 * is cut into several passes, whole rows each; the scheduler sizes its steps
 * so that this happens only when decode rows alone exceed n_batch. Exact
 * mode makes a row's logits independent of the rows beside it and of where
 * a prompt is cut, so the cut changes no result.
 *
 * Q36_SERVER_FAIL_ROW=N (read once here; a diagnostic for the tests) makes
 * the N-th row evaluated since the start fail with an injected error before
 * its pass (the row leaves the batch; the others run), so that the path of a
 * slot that fails can be tested end to end. A failure of a pass itself
 * fails every row of that pass (sched.h).
 */
#include "sched.h"

#include <stdlib.h>
#include <string.h>

struct sched_engine {
    q36_engine *eng;
    int         n_slots, n_vocab, n_batch;
    int32_t    *id, *slot, *pos, *out;   /* one pass: n_batch rows; out: n_slots */
    float      *logits;                  /* n_slots rows of n_vocab */
    long long   rows, fail_row;          /* rows evaluated; the one to fail (0: none) */
};

int sched_engine_new(const q36_model *m, int n_slots, int n_ctx, const q36_engine_opts *o,
                     sched_engine **out, q36_err *err)
{
    *out = NULL;
    sched_engine *e = calloc(1, sizeof *e);
    if (!e)
        return q36_err_set(err, Q36_E_NOMEM, "out of memory for %d slots", n_slots);
    q36_engine_opts eo = *o;
    eo.n_slots = n_slots;
    if (eo.n_batch < 1)
        eo.n_batch = 512;
    e->n_slots = n_slots;
    e->n_batch = eo.n_batch;
    const char *f = getenv("Q36_SERVER_FAIL_ROW");
    e->fail_row = f ? atoll(f) : 0;
    int rc = q36_engine_new(m, n_ctx, &eo, &e->eng, err);
    if (rc) {
        free(e);
        return rc;
    }
    e->n_vocab = q36_engine_n_vocab(e->eng);
    e->id = malloc((size_t)e->n_batch * sizeof *e->id);
    e->slot = malloc((size_t)e->n_batch * sizeof *e->slot);
    e->pos = malloc((size_t)e->n_batch * sizeof *e->pos);
    e->out = malloc((size_t)n_slots * sizeof *e->out);
    e->logits = malloc((size_t)n_slots * (size_t)e->n_vocab * sizeof *e->logits);
    if (!e->id || !e->slot || !e->pos || !e->out || !e->logits) {
        sched_engine_free(e);
        return q36_err_set(err, Q36_E_NOMEM, "out of memory for a batch of %d rows", e->n_batch);
    }
    *out = e;
    return 0;
}

void sched_engine_free(sched_engine *e)
{
    if (!e)
        return;
    q36_engine_free(e->eng);
    free(e->id);
    free(e->slot);
    free(e->pos);
    free(e->out);
    free(e->logits);
    free(e);
}

/* One pass over rows[0..n) (their tokens fit n_batch): builds the batch,
 * evaluates, hands each row its logits or the pass's error. */
static void pass(sched_engine *e, sched_row **rows, int n)
{
    int t = 0;
    for (int i = 0; i < n; i++) {
        sched_row *r = rows[i];
        int p0 = q36_slot_pos(e->eng, r->slot);
        for (int k = 0; k < r->n; k++, t++) {
            e->id[t] = r->ids[k];
            e->slot[t] = r->slot;
            e->pos[t] = p0 + k;
        }
        e->out[i] = t - 1;
    }
    q36_batch b = { .n = t, .id = e->id, .slot = e->slot, .pos = e->pos, .n_out = n, .out = e->out };
    q36_err err = { 0 };
    int rc = q36_engine_eval(e->eng, &b, e->logits, NULL, &err);
    for (int i = 0; i < n; i++) {
        sched_row *r = rows[i];
        r->rc = rc;
        if (rc)
            r->err = err;
        else
            memcpy(r->logits, e->logits + (size_t)i * (size_t)e->n_vocab, (size_t)e->n_vocab * sizeof(float));
    }
}

void sched_engine_forward(sched_engine *e, sched_row *rows, int n)
{
    sched_row *run[256];                  /* n <= n_slots <= 256 (srv_start) */
    int n_run = 0, tokens = 0;
    for (int i = 0; i < n; i++) {
        sched_row *r = &rows[i];
        r->rc = 0;
        r->err.kind = 0;
        r->err.msg[0] = 0;
        if (++e->rows == e->fail_row) {
            r->rc = q36_err_set(&r->err, Q36_E_ARG, "row %lld failed on purpose (Q36_SERVER_FAIL_ROW)", e->rows);
            continue;
        }
        if (n_run && tokens + r->n > e->n_batch) {
            pass(e, run, n_run);
            n_run = tokens = 0;
        }
        run[n_run++] = r;
        tokens += r->n;
    }
    if (n_run)
        pass(e, run, n_run);
}

void sched_engine_reset(sched_engine *e, int slot) { q36_slot_reset(e->eng, slot); }
int  sched_engine_pos(const sched_engine *e, int slot) { return q36_slot_pos(e->eng, slot); }
int  sched_engine_n_vocab(const sched_engine *e) { return e->n_vocab; }
int  sched_engine_n_batch(const sched_engine *e) { return e->n_batch; }
q36_engine *sched_engine_q36(sched_engine *e) { return e->eng; }
