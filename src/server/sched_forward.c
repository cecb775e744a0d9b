/* sched_forward.c: the scheduler's evaluation step (sched.h) on one engine
 * of n_slots slots: the rows of a step become one q36_batch (a decode row
 * is one batch row; a prompt chunk is its tokens, at consecutive positions
 * of its slot) and one q36_engine_eval call evaluates them, with the last
 * token of each row in the list of rows whose logits come back. This file is
 * the only server code that evaluates the model.
 *
 * A prompt chunk may ask for checkpoints inside its pass (the prefix
 * cache's, q36_engine_save_at); a pass that fails leaves them unsaved.
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
    int         n_slots, n_vocab, n_embd, n_batch;
    int32_t    *id, *slot, *pos, *out, *hid;   /* one pass: n_batch rows each */
    int32_t    *best;                    /* an MTP pass's greedy drafts: n_batch */
    int32_t    *tid;                     /* a pass's top ids and logits: as many rows as */
    float      *tval;                    /* logits, Q36_TOPK_MAX each */
    bool        topk;                    /* top-k passes (Q36_SERVER_TOPK, on unless "0") */
    uint64_t    n_ids, n_top, n_full;    /* output rows returned each way */
    float      *logits;                  /* n_slots x n_keep (or 1) rows of n_vocab: a row
                                            per slot, or a verify row's each */
    float      *hidden, *h;              /* n_batch rows of n_embd: out, MTP in */
    long long   rows, fail_row;          /* rows evaluated; the one to fail (0: none) */
    int         step_out;                /* logits rows handed out in this step */
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
    e->n_embd = q36_engine_n_embd(e->eng);
    /* logits of every row a pass asks for: decode rows, verify rows */
    const size_t B = (size_t)e->n_batch;
    e->out = malloc(B * sizeof *e->out);
    e->hid = malloc(B * sizeof *e->hid);
    e->best = malloc(B * sizeof *e->best);
    const size_t n_out = (size_t)n_slots * (size_t)(eo.n_keep > 1 ? eo.n_keep : 1);
    e->logits = malloc(n_out * (size_t)e->n_vocab * sizeof *e->logits);
    e->tid = malloc(n_out * Q36_TOPK_MAX * sizeof *e->tid);
    e->tval = malloc(n_out * Q36_TOPK_MAX * sizeof *e->tval);
    const char *tk = getenv("Q36_SERVER_TOPK");
    e->topk = !tk || strcmp(tk, "0") != 0;
    e->hidden = eo.mtp ? malloc(B * (size_t)e->n_embd * sizeof *e->hidden) : NULL;
    e->h = eo.mtp ? malloc(B * (size_t)e->n_embd * sizeof *e->h) : NULL;
    if (!e->id || !e->slot || !e->pos || !e->out || !e->hid || !e->best || !e->logits ||
        !e->tid || !e->tval ||
        (eo.mtp && (!e->hidden || !e->h))) {
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
    free(e->hid);
    free(e->best);
    free(e->logits);
    free(e->tid);
    free(e->tval);
    free(e->hidden);
    free(e->h);
    free(e);
}

/* One pass over rows[0..n) (their tokens fit n_batch): builds the batch,
 * evaluates, hands each row its logits (and hidden rows) or the pass's
 * error. */
static void pass(sched_engine *e, sched_row **rows, int n)
{
    int t = 0, n_out = 0, n_hid = 0, rc = 0;
    q36_err err = { 0 };
    /* every row greedy, skipping the same ids: one id a row back instead of
     * n_vocab logits */
    bool ids = n > 0;
    for (int i = 0; i < n; i++)
        ids = ids && rows[i]->best && rows[i]->n_ban == rows[0]->n_ban &&
              (!rows[0]->n_ban || !memcmp(rows[i]->ban, rows[0]->ban,
                                          (size_t)rows[0]->n_ban * sizeof *rows[0]->ban));
    for (int i = 0; i < n; i++) {
        sched_row *r = rows[i];
        int p0 = q36_slot_pos(e->eng, r->slot);
        const int no = r->n_out > 1 ? r->n_out : 1;
        for (int k = 0; k < r->n; k++, t++) {
            e->id[t] = r->ids[k];
            e->slot[t] = r->slot;
            e->pos[t] = p0 + k;
            if (k >= r->n - no)
                e->out[n_out++] = t;
            if (r->hidden)
                e->hid[n_hid++] = t;
        }
        if (r->keep && !rc)
            rc = q36_engine_keep_states(e->eng, r->slot, &err);
        for (int k = 0; k < r->n_save && !rc; k++)
            rc = q36_engine_save_at(e->eng, r->slot, r->save_pos[k], r->save_ck[k], &err);
    }
    q36_batch b = { .n = t, .id = e->id, .slot = e->slot, .pos = e->pos, .n_out = n_out, .out = e->out };
    /* a ban needs the asked-for rows as one run the head takes at once */
    if (ids && rows[0]->n_ban)
        ids = q36_engine_argmax_ban_fits(e->eng, &b);
    /* else every row sampled from its best logits: those back, not the rows */
    int top_k = 0;
    for (int i = 0; i < n && !ids && e->topk; i++) {
        if (!rows[i]->top_need || !rows[i]->top_ids) {
            top_k = 0;
            break;
        }
        top_k = rows[i]->top_need > top_k ? rows[i]->top_need : top_k;
    }
    if (ids && !rc)
        rc = q36_engine_argmax_ban(e->eng, rows[0]->ban, rows[0]->n_ban, &err);
    /* the step's passes write their logits one after the other (a step
     * asks for n_slots x n_keep rows at most), so that rows may point into
     * the buffer instead of copying */
    const size_t V = (size_t)e->n_vocab, D = (size_t)e->n_embd;
    float *lg = e->logits + (size_t)e->step_out * V;
    e->step_out += ids || top_k ? 0 : n_out;
    if (!rc)
        rc = ids     ? q36_engine_eval_hid_argmax(e->eng, &b, e->best, e->hid, n_hid, e->hidden, &err)
           : top_k ? q36_engine_eval_hid_topk(e->eng, &b, top_k, e->tid, e->tval, e->hid, n_hid,
                                              e->hidden, &err)
                     : q36_engine_eval_hid(e->eng, &b, lg, e->hid, n_hid, e->hidden, &err);
    for (int i = 0, o = 0, h = 0; i < n; i++) {
        sched_row *r = rows[i];
        const int no = r->n_out > 1 ? r->n_out : 1;
        r->rc = rc;
        if (rc)
            r->err = err;
        r->best_ok = !rc && ids;
        if (r->best_ok)
            memcpy(r->best, e->best + o, (size_t)no * sizeof *r->best);
        r->top_ok = !rc && top_k;
        r->top_k = top_k;
        if (r->top_ok) {
            memcpy(r->top_ids, e->tid + (size_t)o * top_k, (size_t)(no * top_k) * sizeof *e->tid);
            memcpy(r->top_vals, e->tval + (size_t)o * top_k, (size_t)(no * top_k) * sizeof *e->tval);
        }
        r->out = rc || ids || top_k ? NULL : lg + (size_t)o * V;
        if (!rc)
            *(ids ? &e->n_ids : top_k ? &e->n_top : &e->n_full) += (uint64_t)no;
        if (r->out && r->logits)
            memcpy(r->logits, r->out, (size_t)no * V * sizeof(float));
        if (!rc && r->hidden)
            memcpy(r->hidden, e->hidden + (size_t)h * D, (size_t)r->n * D * sizeof(float));
        o += no;
        h += r->hidden ? r->n : 0;
    }
}

void sched_engine_forward(sched_engine *e, sched_row *rows, int n)
{
    sched_row *run[256];                  /* n <= n_slots <= 256 (srv_start) */
    int n_run = 0, tokens = 0;
    e->step_out = 0;
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

/* Rows a .. a+n of an item: the items of an MTP call cut to fit n_batch. */
typedef struct { const sched_mtp_row *it; int a, n; } mtp_piece;

/* The batch of the pieces pc[0..n): ids, slots, positions and hidden rows
 * into the engine's arrays, an asked-for row at the end of each item with
 * best that a piece ends. */
static q36_batch mtp_batch(sched_engine *e, const mtp_piece *pc, int n)
{
    const size_t D = (size_t)e->n_embd;
    int t = 0, n_out = 0;
    for (int i = 0; i < n; i++) {
        const sched_mtp_row *it = pc[i].it;
        for (int k = 0; k < pc[i].n; k++, t++) {
            e->id[t] = it->ids[pc[i].a + k];
            e->slot[t] = it->slot;
            e->pos[t] = it->p0 + pc[i].a + k;
            memcpy(e->h + (size_t)t * D, it->h + (size_t)(pc[i].a + k) * D, D * sizeof(float));
        }
        if (it->best && pc[i].a + pc[i].n == it->n)
            e->out[n_out++] = t - 1;
    }
    return (q36_batch){ .n = t, .id = e->id, .slot = e->slot, .pos = e->pos, .n_out = n_out,
                        .out = e->out };
}

/* One MTP pass over the pieces pc[0..n) (whole or cut items, rows fit n_batch). */
static int mtp_pass(sched_engine *e, const mtp_piece *pc, int n, enum q36_mtp_h h_src, q36_err *err)
{
    const size_t D = (size_t)e->n_embd;
    const q36_batch b = mtp_batch(e, pc, n);
    const int n_out = b.n_out;
    int rc = n_out ? q36_mtp_eval_argmax(e->eng, &b, e->h, h_src, e->best, e->hidden, err)
                   : q36_mtp_eval(e->eng, &b, e->h, h_src, NULL, NULL, err);
    if (rc)
        return rc;
    for (int i = 0, o = 0; i < n; i++) {
        const sched_mtp_row *it = pc[i].it;
        if (!it->best || pc[i].a + pc[i].n != it->n)
            continue;
        *it->best = e->best[o];
        memcpy(it->hidden, e->hidden + (size_t)o * D, D * sizeof(float));
        o++;
    }
    return 0;
}

int sched_engine_mtp_chain(sched_engine *e, const sched_mtp_row *items, int n, int k,
                           int32_t *ids, int *n_out, q36_err *err)
{
    mtp_piece pc[256];                    /* n <= n_slots <= 256 */
    int rows = 0, outs = 0;
    if (n > 256)
        return 1;
    for (int i = 0; i < n; i++) {
        pc[i] = (mtp_piece){ &items[i], 0, items[i].n };
        rows += items[i].n;
        outs += items[i].best != NULL;
    }
    *n_out = outs;
    if (rows > e->n_batch || !q36_mtp_chain_fits(e->eng, outs, k))
        return 1;
    const q36_batch b = mtp_batch(e, pc, n);
    return q36_mtp_eval_chain(e->eng, &b, e->h, Q36_MTP_H_TRUNK, k, ids, err);
}

int sched_engine_mtp(sched_engine *e, const sched_mtp_row *items, int n, enum q36_mtp_h h_src,
                     q36_err *err)
{
    mtp_piece pc[256];                    /* n <= n_slots <= 256 */
    int n_pc = 0, rows = 0, rc = 0;
    for (int i = 0; i < n && !rc; i++)
        for (int a = 0; a < items[i].n && !rc;) {
            int m = items[i].n - a;
            if (m > e->n_batch - rows)
                m = e->n_batch - rows;
            pc[n_pc++] = (mtp_piece){ &items[i], a, m };
            rows += m;
            a += m;
            if (rows == e->n_batch || n_pc == 256) {
                rc = mtp_pass(e, pc, n_pc, h_src, err);
                n_pc = rows = 0;
            }
        }
    if (!rc && n_pc)
        rc = mtp_pass(e, pc, n_pc, h_src, err);
    return rc;
}

int sched_engine_rewind(sched_engine *e, int slot, int rows, q36_err *err)
{
    return q36_slot_rewind(e->eng, slot, rows, err);
}

void sched_engine_reset(sched_engine *e, int slot) { q36_slot_reset(e->eng, slot); }
int  sched_engine_pos(const sched_engine *e, int slot) { return q36_slot_pos(e->eng, slot); }
int  sched_engine_n_vocab(const sched_engine *e) { return e->n_vocab; }
int  sched_engine_n_batch(const sched_engine *e) { return e->n_batch; }
q36_engine *sched_engine_q36(sched_engine *e) { return e->eng; }

void sched_engine_row_counts(const sched_engine *e, uint64_t *ids, uint64_t *top, uint64_t *full)
{
    *ids = e->n_ids;
    *top = e->n_top;
    *full = e->n_full;
}
