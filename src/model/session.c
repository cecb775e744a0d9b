/* session.c: the session API of include/q36.h: a handle on one slot of an
 * engine (its own one-slot engine for q36_session_new), appends split into
 * passes of n_batch rows of that slot, reset, and the engine's per-op
 * profile read from the backend's table. Snapshots to bytes are in
 * snapshot.c, the pass itself in engine.c and forward.c. */
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

q36_session_opts q36_session_opts_default(void)
{
    return q36_engine_opts_default();
}

int q36_session_plan(const q36_model *m, int n_ctx, const q36_session_opts *opts,
                     q36_mem_plan *out, q36_err *err)
{
    q36_engine_opts o = opts ? *opts : q36_engine_opts_default();
    o.n_slots = 1;
    return q36_engine_plan(m, n_ctx, &o, out, err);
}

int q36_session_new(const q36_model *m, int n_ctx, const q36_session_opts *opts,
                    q36_session **out, q36_err *err)
{
    *out = NULL;
    q36_engine_opts o = opts ? *opts : q36_engine_opts_default();
    o.n_slots = 1;
    q36_session *s = calloc(1, sizeof *s);
    if (!s)
        return q36_err_set(err, Q36_E_NOMEM, "out of memory");
    int rc = q36_engine_new(m, n_ctx, &o, &s->e, err);
    if (rc) {
        free(s);
        return rc;
    }
    s->owns = true;
    *out = s;
    return 0;
}

int q36_session_open(q36_engine *e, int slot, q36_session **out, q36_err *err)
{
    *out = NULL;
    if (slot < 0 || slot >= e->n_slots)
        return q36_err_set(err, Q36_E_ARG, "slot %d is outside [0, %d)", slot, e->n_slots);
    q36_session *s = calloc(1, sizeof *s);
    if (!s)
        return q36_err_set(err, Q36_E_NOMEM, "out of memory");
    s->e = e;
    s->slot = slot;
    *out = s;
    return 0;
}

void q36_session_free(q36_session *s)
{
    if (!s)
        return;
    if (s->owns)
        q36_engine_free(s->e);
    free(s);
}

q36_engine *q36_session_engine(const q36_session *s) { return s->e; }
int q36_session_slot(const q36_session *s) { return s->slot; }

int q36_session_append(q36_session *s, const int32_t *ids, int n, float *logits,
                       enum q36_logits which, q36_err *err)
{
    q36_engine *e = s->e;
    if (n < 0)
        return q36_err_set(err, Q36_E_ARG, "negative token count %d", n);
    if (n == 0)
        return 0;
    const int64_t pos = e->pos[s->slot];
    if (pos + n > e->n_ctx)
        return q36_err_set(err, Q36_E_ARG, "%d tokens at position %lld do not fit a context of %lld",
                           n, (long long)pos, (long long)e->n_ctx);
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || (uint32_t)ids[i] >= e->hp->n_vocab)
            return q36_err_set(err, Q36_E_ARG, "token %d (at index %d) is outside the vocabulary of %u",
                               ids[i], i, e->hp->n_vocab);
    const int64_t V = e->hp->n_vocab;
    const int B = (int)e->n_batch;
    int32_t *slot = e->rowbuf, *posv = e->rowbuf + B, *out = e->rowbuf + 2 * B;
    int rc = 0;
    for (int i = 0; i < n && !rc; i += B) {
        const int T = n - i < B ? n - i : B;
        const int64_t p0 = e->pos[s->slot];
        for (int r = 0; r < T; r++) {
            slot[r] = s->slot;
            posv[r] = (int32_t)(p0 + r);
            out[r] = r;
        }
        q36_batch b = { .n = T, .id = ids + i, .slot = slot, .pos = posv };
        float *dst = NULL;
        if (logits && which == Q36_LOGITS_ALL) {
            b.n_out = T;
            b.out = out;
            dst = logits + (int64_t)i * V;
        } else if (logits && which == Q36_LOGITS_LAST && i + T == n) {
            b.n_out = 1;
            b.out = out + T - 1;
            dst = logits;
        }
        rc = q36_engine_eval(e, &b, dst, NULL, err);
    }
    return rc;
}

/* ------------------------------------------------------------- profiling */

static int prof_by_ms(const void *a, const void *b)
{
    const q36_profile_row *x = a, *y = b;
    return x->ms < y->ms ? 1 : x->ms > y->ms ? -1 : strcmp(x->name, y->name);
}

int q36_session_profile(q36_session *s, const q36_profile **out, q36_err *err)
{
    return q36_engine_profile(s->e, out, err);
}

void q36_session_profile_reset(q36_session *s) { q36_engine_profile_reset(s->e); }

int q36_engine_profile(q36_engine *e, const q36_profile **out, q36_err *err)
{
    *out = NULL;
    if (!e->profile)
        return q36_err_set(err, Q36_E_ARG, "the engine was made without opts.profile");
    q36_profile *p = &e->prof;
    memset(p, 0, sizeof *p);
    be_prof_row rows[Q36_PROFILE_MAX_OPS];
    p->n_ops = be_profile_ops(e->be, rows, Q36_PROFILE_MAX_OPS);
    for (int r = 0; r < p->n_ops; r++) {
        q36_profile_row *row = &p->op[r];
        memcpy(row->name, rows[r].name, sizeof row->name);
        row->calls = rows[r].calls;
        row->ms = (double)rows[r].ns / 1e6;
    }
    qsort(p->op, (size_t)p->n_ops, sizeof p->op[0], prof_by_ms);
    be_prof_row lay[BE_LAYER_N];
    be_profile_layers(e->be, lay);
    for (int k = 0; k < BE_LAYER_N && k < Q36_PROFILE_MAX_LAYERS; k++) {
        q36_profile_row *row = &p->layer[p->n_layers++];
        memcpy(row->name, lay[k].name, sizeof row->name);
        row->calls = lay[k].calls;
        row->ms = (double)lay[k].ns / 1e6;
    }
    p->forward_ms = (double)e->prof_fwd_ns / 1e6;
    p->forwards = e->prof_fwd_n;
    p->tokens = e->prof_tok;
    *out = p;
    return 0;
}

void q36_engine_profile_reset(q36_engine *e)
{
    be_profile_reset(e->be);
    e->prof_fwd_ns = e->prof_fwd_n = e->prof_tok = 0;
}

int q36_session_decode(q36_session *s, int32_t id, float *logits, q36_err *err)
{
    return q36_session_append(s, &id, 1, logits, Q36_LOGITS_LAST, err);
}

/* One token at the slot's position, its row asked for: k = 0 its argmax to
 * ids[0], else its k best to ids and vals. */
static int decode_one(q36_session *s, int32_t id, int k, int32_t *ids, float *vals, q36_err *err)
{
    q36_engine *e = s->e;
    const int64_t pos = e->pos[s->slot];
    if (pos + 1 > e->n_ctx)
        return q36_err_set(err, Q36_E_ARG, "1 token at position %lld does not fit a context of "
                           "%lld", (long long)pos, (long long)e->n_ctx);
    if (id < 0 || (uint32_t)id >= e->hp->n_vocab)
        return q36_err_set(err, Q36_E_ARG, "token %d is outside the vocabulary of %u", id,
                           e->hp->n_vocab);
    const int32_t slot = s->slot, p = (int32_t)pos, zero = 0;
    const q36_batch b = { .n = 1, .id = &id, .slot = &slot, .pos = &p, .n_out = 1, .out = &zero };
    return k ? q36_engine_eval_hid_topk(e, &b, k, ids, vals, NULL, 0, NULL, err)
             : q36_engine_eval_argmax(e, &b, ids, NULL, err);
}

int q36_session_decode_argmax(q36_session *s, int32_t id, int32_t *next, q36_err *err)
{
    return decode_one(s, id, 0, next, NULL, err);
}

int q36_session_decode_topk(q36_session *s, int32_t id, int k, int32_t *ids, float *vals,
                            q36_err *err)
{
    if (k < 1 || k > Q36_TOPK_MAX)
        return q36_err_set(err, Q36_E_ARG, "q36_session_decode_topk: k %d is not in 1..%d", k,
                           Q36_TOPK_MAX);
    return decode_one(s, id, k, ids, vals, err);
}

int q36_session_pos(const q36_session *s) { return (int)s->e->pos[s->slot]; }
int q36_session_n_ctx(const q36_session *s) { return (int)s->e->n_ctx; }
int q36_session_n_vocab(const q36_session *s) { return (int)s->e->hp->n_vocab; }
void q36_session_reset(q36_session *s) { q36_slot_reset(s->e, s->slot); }
