/* ckpt_pass.c: checkpoints inside a pass (include/q36.h,
 * q36_engine_save_at): a prompt evaluated in passes of n_batch rows that
 * still leaves a checkpoint every C tokens. The requests of the next pass
 * are checked against its runs and sorted by slot and position; during the
 * pass each DeltaNet layer runs the conv and the delta rule of a slot with
 * requests in pieces that end at their positions and copies the slot's
 * conv tail and state matrices into the checkpoint after each piece
 * (model_deltanet_rows, rewind.c; model_save_layer here); the other ops
 * run on the whole pass. After it, a checkpoint that holds K/V rows gets
 * the slot's rows [0, pos): rows below a position inside the pass are
 * final once the pass has written them. In exact mode the fused
 * recurrence steps one token at a time, so a piece boundary changes no
 * bit: the checkpoint is the one q36_slot_save would make after a pass
 * ending there. A backend that can write the delta rule's state at chosen
 * rows from inside its kernel (the CUDA chunked rule's chunk-boundary
 * output) could replace the pieces; the engine API would stay. */
#include "forward.h"

#include <stdlib.h>

static int save_refused(q36_engine *e)
{
    e->n_saves = 0;            /* a refused request forgets the others of the pass */
    return Q36_E_ARG;
}

int q36_engine_save_at(q36_engine *e, int slot, int pos, q36_ckpt *c, q36_err *err)
{
    if (slot < 0 || slot >= e->n_slots)
        return q36_err_set(err, save_refused(e), "save at: slot %d is outside [0, %d)", slot,
                           e->n_slots);
    if (!c || c->e != e)
        return q36_err_set(err, save_refused(e), "save at: %s", c ? "the checkpoint is another "
                           "engine's" : "no checkpoint");
    if (pos < 1 || pos > e->n_ctx)
        return q36_err_set(err, save_refused(e), "save at: position %d is outside [1, %lld]", pos,
                           (long long)e->n_ctx);
    if (c->kv_rows && c->kv_rows < pos)
        return q36_err_set(err, save_refused(e), "save at: the checkpoint holds %lld K/V rows, "
                           "position %d needs %d", (long long)c->kv_rows, pos, pos);
    if (e->n_saves == Q36_MAX_SAVES)
        return q36_err_set(err, save_refused(e), "save at: %d checkpoints asked for the next "
                           "pass already (at most %d)", e->n_saves, Q36_MAX_SAVES);
    e->saves[e->n_saves++] = (model_save){ slot, pos, c };
    return 0;
}

static int save_cmp(const void *pa, const void *pb)
{
    const model_save *a = pa, *b = pb;
    if (a->slot != b->slot)
        return a->slot < b->slot ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

static int refuse(q36_engine *e, q36_err *err, const char *what, const model_save *s,
                  const be_seq *r)
{
    int rc = r ? q36_err_set(err, Q36_E_ARG, "save at position %lld of slot %d: %s (the pass "
                             "holds positions [%d, %d) of it)", (long long)s->pos, s->slot,
                             what, r->pos0, r->pos0 + r->n_rows)
               : q36_err_set(err, Q36_E_ARG, "save at position %lld of slot %d: %s",
                             (long long)s->pos, s->slot, what);
    e->n_saves = 0;            /* one pass only, refused or not */
    return rc;
}

int model_saves_check(q36_engine *e, int n_seq, q36_err *err)
{
    qsort(e->saves, (size_t)e->n_saves, sizeof *e->saves, save_cmp);
    for (int s = 0; s < n_seq; s++)
        e->save_n[e->seq[s].slot] = 0;
    for (int i = 0; i < e->n_saves; i++) {
        const model_save *sv = &e->saves[i];
        const be_seq *r = NULL;
        for (int s = 0; s < n_seq && !r; s++)
            if (e->seq[s].slot == sv->slot)
                r = &e->seq[s];
        if (!r)
            return refuse(e, err, "the slot has no rows in the pass", sv, NULL);
        if (sv->pos <= r->pos0 || sv->pos > (int64_t)r->pos0 + r->n_rows)
            return refuse(e, err, "not after one of the pass's rows", sv, r);
        if (i && sv[-1].slot == sv->slot && sv[-1].pos == sv->pos)
            return refuse(e, err, "asked for twice", sv, r);
        for (int j = 0; j < i; j++)
            if (e->saves[j].c == sv->c)
                return refuse(e, err, "its checkpoint is asked for twice", sv, r);
        if (!e->save_n[sv->slot])
            e->save0[sv->slot] = i;
        e->save_n[sv->slot]++;
    }
    return 0;
}

void model_save_layer(q36_engine *e, int il, int slot, q36_ckpt *c)
{
    be_ctx *be = e->be;
    const int64_t Cc = be_rows_of(c->tail[il]), Hv = be_rows_of(c->S[il]);
    be_copy(be, be_rows(be, e->tail[il], (int64_t)slot * Cc, Cc), c->tail[il]);
    be_copy(be, be_rows(be, e->S[il], (int64_t)slot * Hv, Hv), c->S[il]);
}

int model_saves_done(q36_engine *e, bool ok, q36_err *err)
{
    be_ctx *be = e->be;
    int rc = 0;
    if (ok) {
        for (int i = 0; i < e->n_saves; i++) {
            const model_save *sv = &e->saves[i];
            if (!sv->c->kv_rows)
                continue;
            be_views_reset(be);    /* the pass's views are done with */
            const int64_t r0 = (int64_t)sv->slot * e->n_ctx;
            for (uint32_t il = 0; il < e->hp->n_layer; il++) {
                if (e->hp->recurrent[il])
                    continue;
                be_copy(be, be_rows(be, e->kc[il], r0, sv->pos), be_rows(be, sv->c->kc[il], 0, sv->pos));
                be_copy(be, be_rows(be, e->vc[il], r0, sv->pos), be_rows(be, sv->c->vc[il], 0, sv->pos));
            }
        }
        rc = be_check(be, err);
    }
    for (int i = 0; i < e->n_saves; i++) {
        q36_ckpt *c = e->saves[i].c;
        c->pos = ok && !rc ? e->saves[i].pos : -1;
        c->slot = e->saves[i].slot;
    }
    e->n_saves = 0;
    return rc;
}
