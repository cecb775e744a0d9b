/* sched_forward.c: the scheduler's evaluation step (sched.h) on the public
 * session API: one q36_session per slot, the rows of a step run one after
 * another. This file is the only server code that evaluates the model; the
 * engine's batch API replaces its body with one forward pass.
 *
 * Q36_SERVER_FAIL_ROW=N (read once here; a diagnostic for the tests) makes
 * the N-th row evaluated since the start fail with an injected error, so
 * that the path of a slot that fails can be tested end to end.
 */
#include "sched.h"

#include <stdlib.h>

struct sched_engine {
    int           n_slots, n_vocab;
    q36_session **sess;
    long long     rows, fail_row;   /* rows evaluated; the one to fail (0: none) */
};

int sched_engine_new(const q36_model *m, int n_slots, int n_ctx, const q36_session_opts *o,
                     sched_engine **out, q36_err *err)
{
    *out = NULL;
    sched_engine *e = calloc(1, sizeof *e);
    if (!e || !(e->sess = calloc((size_t)n_slots, sizeof *e->sess))) {
        free(e);
        return q36_err_set(err, Q36_E_NOMEM, "out of memory for %d slots", n_slots);
    }
    e->n_slots = n_slots;
    const char *f = getenv("Q36_SERVER_FAIL_ROW");
    e->fail_row = f ? atoll(f) : 0;
    for (int i = 0; i < n_slots; i++) {
        int rc = q36_session_new(m, n_ctx, o, &e->sess[i], err);
        if (rc) {
            sched_engine_free(e);
            return rc;
        }
    }
    e->n_vocab = q36_session_n_vocab(e->sess[0]);
    *out = e;
    return 0;
}

void sched_engine_free(sched_engine *e)
{
    if (!e)
        return;
    for (int i = 0; i < e->n_slots; i++)
        q36_session_free(e->sess[i]);
    free(e->sess);
    free(e);
}

void sched_engine_forward(sched_engine *e, sched_row *rows, int n)
{
    for (int i = 0; i < n; i++) {
        sched_row *r = &rows[i];
        r->err.kind = 0;
        r->err.msg[0] = 0;
        if (++e->rows == e->fail_row) {
            r->rc = q36_err_set(&r->err, Q36_E_ARG, "row %lld failed on purpose (Q36_SERVER_FAIL_ROW)", e->rows);
            continue;
        }
        r->rc = r->n == 1 ? q36_session_decode(e->sess[r->slot], r->ids[0], r->logits, &r->err)
                          : q36_session_append(e->sess[r->slot], r->ids, r->n, r->logits,
                                               Q36_LOGITS_LAST, &r->err);
    }
}

void sched_engine_reset(sched_engine *e, int slot) { q36_session_reset(e->sess[slot]); }
int  sched_engine_pos(const sched_engine *e, int slot) { return q36_session_pos(e->sess[slot]); }
int  sched_engine_n_vocab(const sched_engine *e) { return e->n_vocab; }
