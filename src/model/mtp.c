/* mtp.c: the MTP ("nextn") block of qwen35/qwen35moe (MODEL.md §5) as a
 * pass of its own (include/q36.h, q36_mtp_eval): the embedding of each
 * row's token and the hidden row it is paired with are each RMS-normed
 * (enorm, hnorm), concatenated embedding first, projected by eh_proj to D,
 * then run through one gated-attention layer with its FFN (attention.c,
 * ffn.c, on the block's own K/V rows), and normed by shared_head_norm for
 * the LM head. The hidden rows come from the host: the trunk's (before the
 * final norm, which this pass applies, so the block reads the post-norm
 * state llama.cpp calls h_nextn) or the block's own from the previous
 * draft step (before shared_head_norm, applied here likewise). The trunk's
 * pass (forward.c) never runs this block. */
#include "forward.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../quant/types.h"

int q36_engine_has_mtp(const q36_engine *e) { return e->mtp; }

int q36_mtp_pos(const q36_engine *e, int slot)
{
    return slot >= 0 && slot < e->n_slots ? (int)e->mtp_pos[slot] : -1;
}

/* Checks the batch and splits it into runs, as q36_engine_eval does,
 * except that a slot's first row may start at or below its MTP position. */
static int mtp_runs(const q36_engine *e, const q36_batch *b, q36_err *err)
{
    if (!e->mtp)
        return q36_err_set(err, Q36_E_ARG, "MTP pass: the engine was made without opts.mtp");
    if (b->n < 1 || b->n > e->n_batch)
        return q36_err_set(err, Q36_E_ARG, "MTP batch of %d rows is outside [1, %lld]", b->n,
                           (long long)e->n_batch);
    if (b->n_out < 0 || b->n_out > b->n)
        return q36_err_set(err, Q36_E_ARG, "%d output rows for an MTP batch of %d", b->n_out,
                           b->n);
    int n_seq = 0;
    for (int i = 0; i < b->n; i++) {
        const int32_t id = b->id[i], sl = b->slot[i], p = b->pos[i];
        if (id < 0 || (uint32_t)id >= e->hp->n_vocab)
            return q36_err_set(err, Q36_E_ARG, "MTP row %d: token %d is outside the vocabulary "
                               "of %u", i, id, e->hp->n_vocab);
        if (sl < 0 || sl >= e->n_slots)
            return q36_err_set(err, Q36_E_ARG, "MTP row %d: slot %d is outside [0, %d)", i, sl,
                               e->n_slots);
        if (i == 0 || sl != b->slot[i - 1]) {
            for (int s = 0; s < n_seq; s++)
                if (e->seq[s].slot == sl)
                    return q36_err_set(err, Q36_E_ARG, "MTP row %d: the rows of slot %d are not "
                                       "consecutive in the batch", i, sl);
            if (p < 0 || p > e->mtp_pos[sl])
                return q36_err_set(err, Q36_E_ARG, "MTP row %d: slot %d holds MTP rows below %lld, "
                                   "the row says %d", i, sl, (long long)e->mtp_pos[sl], p);
            e->seq[n_seq++] = (be_seq){ sl, i, 0, p };
        } else if (p != b->pos[i - 1] + 1) {
            return q36_err_set(err, Q36_E_ARG, "MTP row %d: slot %d position %d does not follow "
                               "%d", i, sl, p, b->pos[i - 1]);
        }
        be_seq *r = &e->seq[n_seq - 1];
        r->n_rows++;
        if (r->pos0 + r->n_rows > e->n_ctx)
            return q36_err_set(err, Q36_E_ARG, "MTP row %d: position %d of slot %d does not fit "
                               "a context of %lld", i, p, sl, (long long)e->n_ctx);
    }
    for (int i = 0; i < b->n_out; i++)
        if (b->out[i] < 0 || b->out[i] >= b->n)
            return q36_err_set(err, Q36_E_ARG, "MTP output row %d is outside the batch of %d",
                               b->out[i], b->n);
    return n_seq;
}

/* The MTP pass's key for a backend that records passes (be_pass_begin),
 * as engine.c's pass_key for the trunk: what decides which ops the pass
 * issues on which tensors: its rows and the rows of each run, the rows
 * asked for, what is returned, where the hidden rows came from (which
 * norm reads them) and the head (the draft vocabulary's or the full one);
 * the token ids, hidden rows, slots and positions reach the kernels
 * through device memory. A salt keeps it apart from the trunk's keys. */
static uint64_t mtp_pass_key(const q36_engine *e, const q36_batch *b, int n_seq,
                             enum q36_mtp_h h_src, bool logits, bool hidden, bool ids, int chain,
                             bool dv_in)
{
    uint64_t k = 0x6D74702070617373u;       /* "mtp pass" */
#define MIX(v) (k = model_key_mix(k, (uint64_t)(v)))
    MIX(b->n);
    MIX(n_seq);
    for (int s = 0; s < n_seq; s++)
        MIX(e->seq[s].n_rows);
    MIX(b->n_out);
    for (int i = 0; i < b->n_out; i++)
        MIX(b->out[i]);
    MIX(logits ? 1 : 0);
    MIX(hidden ? 1 : 0);
    MIX(ids ? 1 : 0);
    MIX(h_src == Q36_MTP_H_MTP ? 1 : 0);
    MIX(e->dv_head ? e->dv_n : 0);
    MIX(e->fast ? 1 : 0);
    MIX(chain + 1);
    MIX(dv_in ? 1 : 0);
#undef MIX
    return k | 1;
}

/* Whether the pass's rows asked for go on alone past the K/V store (ob in
 * model_mtp_forward): fewer than the batch's rows, at most MTP_OUT_MAX,
 * each the last row of its run, at most one a run, in order. The other
 * rows' outputs are never read (the MTP block is one layer: a row's
 * output reaches only the head), so they stop once their K/V rows are
 * stored: a pass that catches up a slot's MTP rows computes the attention,
 * FFN and head of its last row only, and one that asks for no row (the
 * catch-up of a server step without drafts) none. The rows asked for then
 * attend in runs of one row over the same cache rows. */
static bool mtp_out_rows(const q36_engine *e, const q36_batch *b, int n_seq, be_seq *oseq)
{
    if (b->n_out >= b->n || b->n_out > MTP_OUT_MAX)
        return false;
    int s = 0;
    for (int j = 0; j < b->n_out; j++) {
        const int r = b->out[j];
        while (s < n_seq && e->seq[s].row0 + e->seq[s].n_rows <= r)
            s++;
        if (s == n_seq || r != e->seq[s].row0 + e->seq[s].n_rows - 1)
            return false;
        oseq[j] = (be_seq){ e->seq[s].slot, j, 1, e->seq[s].pos0 + e->seq[s].n_rows - 1 };
        s++;                               /* one a run */
    }
    return true;
}

/* One MTP pass of b: its ids and hidden rows h written first (h NULL: a
 * chained pass, both already on the device), then model_mtp_forward with
 * chain and dv_in as it takes them; the slots' MTP positions after it. */
static int mtp_pass(q36_engine *e, const q36_batch *b, const float *h, enum q36_mtp_h h_src,
                    float *logits, int32_t *ids, float *hidden, int chain, bool dv_in,
                    q36_err *err)
{
    const int n_seq = mtp_runs(e, b, err);
    if (n_seq < 0)
        return n_seq;
    be_ctx *be = e->be;
    const uint64_t t0 = model_prof_begin(e);
    be_profile_layer(be, BE_LAYER_MTP);
    be_views_reset(be);
    if (h) {
        be_write(be, e->sc.ids, 0, b->n, b->id);
        be_write(be, e->mtp_h, 0, b->n, h);
    }
    be_batch_set(be, &e->batch, n_seq, e->seq);
    be_seq oseq[MTP_OUT_MAX];
    const bool compact = mtp_out_rows(e, b, n_seq, oseq);
    if (compact && b->n_out)
        be_batch_set(be, &e->mtp_ob, b->n_out, oseq);
    const bool want = logits != NULL || ids != NULL || chain >= 0;
    be_pass_begin(be, mtp_pass_key(e, b, n_seq, h_src, want, hidden != NULL,
                                   ids != NULL || chain >= 0, chain, dv_in), b->n);
    int rc = model_mtp_forward(e, b->n, h_src == Q36_MTP_H_MTP, dv_in, b->out, b->n_out,
                               compact ? &e->mtp_ob : NULL, logits, ids, hidden, chain, err);
    be_pass_end(be);
    model_prof_end(e, t0, b->n);
    if (rc)
        return rc;
    for (int s = 0; s < n_seq; s++)
        e->mtp_pos[e->seq[s].slot] = e->seq[s].pos0 + e->seq[s].n_rows;
    return 0;
}

int q36_mtp_eval(q36_engine *e, const q36_batch *b, const float *h, enum q36_mtp_h h_src,
                 float *logits, float *hidden, q36_err *err)
{
    return mtp_pass(e, b, h, h_src, logits, NULL, hidden, -1, false, err);
}

int q36_mtp_eval_argmax(q36_engine *e, const q36_batch *b, const float *h,
                        enum q36_mtp_h h_src, int32_t *ids, float *hidden, q36_err *err)
{
    if (!ids)
        return q36_err_set(err, Q36_E_ARG, "q36_mtp_eval_argmax: no array for the ids");
    return mtp_pass(e, b, h, h_src, NULL, ids, hidden, -1, false, err);
}

/* Chained drafts: the pass of b, then k - 1 passes of one row a slot, each
 * row after the one before it in its asked-for row's slot, reading the
 * previous pass's argmax and hidden row where that pass left them on the
 * device (model_mtp_forward's chain); the k x n_out argmax columns are
 * read back once at the end. Each pass as q36_mtp_eval_argmax's would run
 * it: the same drafts, without a host round trip (a device sync, a read of
 * the hidden rows and writes of the ids and hidden rows) between two
 * drafts. */
int q36_mtp_eval_chain(q36_engine *e, const q36_batch *b, const float *h, enum q36_mtp_h h_src,
                       int k, int32_t *ids, q36_err *err)
{
    model_scratch *sc = &e->sc;
    const int n = b->n_out;
    if (!q36_mtp_chain_fits(e, n, k))
        return q36_err_set(err, Q36_E_ARG, "chained MTP drafts: %d asked-for rows and %d "
                           "drafts (1 to %lld rows, at most %lld drafts in all)", n, k,
                           (long long)sc->logit_rows, (long long)be_rows_of(sc->amax));
    int32_t slot[64], pos[64], out[64];
    for (int j = 0; j < n; j++) {
        const int r = b->out[j];
        if (r < 0 || r >= b->n)
            return q36_err_set(err, Q36_E_ARG, "chained MTP drafts: asked-for row %d is outside "
                               "the batch of %d", r, b->n);
        slot[j] = b->slot[r];
        pos[j] = b->pos[r];
        out[j] = j;
        for (int i = 0; i < j; i++)
            if (slot[i] == slot[j])
                return q36_err_set(err, Q36_E_ARG, "chained MTP drafts: two asked-for rows "
                                   "(%d and %d) of slot %d: one a slot", b->out[i], r, slot[j]);
    }
    be_ctx *be = e->be;
    const bool dv = e->dv_head != NULL;
    if (dv && !e->dv_embd)
        return q36_err_set(err, Q36_E_ARG, "chained MTP drafts: the draft vocabulary has no "
                           "embedding rows (q36_mtp_draft_vocab failed)");
    int rc = mtp_pass(e, b, h, h_src, NULL, NULL, NULL, 0, false, err);
    for (int i = 1; i < k && !rc; i++) {
        /* each row's id and hidden row are on the device (the ids here only
         * pass mtp_runs' range check) */
        int32_t id[64] = { 0 }, p1[64];
        for (int j = 0; j < n; j++)
            p1[j] = pos[j] + i;
        const q36_batch b1 = { n, id, slot, p1, n, out };
        rc = mtp_pass(e, &b1, NULL, Q36_MTP_H_MTP, NULL, NULL, NULL, i, dv, err);
    }
    if (rc)
        return rc;
    be_read(be, sc->amax, 0, (int64_t)k * n, ids);
    return be_check(be, err);
}

int q36_mtp_chain_fits(const q36_engine *e, int n_out, int k)
{
    return n_out >= 1 && n_out <= e->sc.logit_rows && k >= 1 &&
           (int64_t)k * n_out <= be_rows_of(e->sc.amax);
}

int model_mtp_forward(q36_engine *e, int64_t T, bool h_from_mtp, bool dv_in, const int32_t *out,
                      int n_out, const be_batch *ob, float *logits, int32_t *ids, float *hidden,
                      int chain, q36_err *err)
{
    const model_hparams *hp = e->hp;
    const model_mtp_w *M = &e->w.mtp;
    const model_layer_w *L = &e->w.layer[M->il];
    be_ctx *be = e->be;
    model_scratch *sc = &e->sc;
    const int64_t D = hp->n_embd, V = hp->n_vocab;

    /* the hidden rows as llama.cpp hands them over: after the norm of the
     * head that produced them */
    be_tensor *hin = model_rows(e, e->mtp_h, T);
    be_rms_norm(be, hin, h_from_mtp ? M->head_norm : e->w.output_norm, hp->eps, D, hin);

    be_tensor *x = model_rows(e, sc->x, T);
    be_tensor *h = model_rows(e, sc->h, T);
    be_tensor *o = model_rows(e, sc->o, T);
    be_tensor *cat = model_rows(e, e->mtp_cat, T);
    be_get_rows(be, dv_in ? e->dv_embd : M->embd, model_rows(e, sc->ids, T), h);
    be_rms_norm(be, h, M->enorm, hp->eps, D, be_view(be, cat, 0, D));
    be_rms_norm(be, hin, M->hnorm, hp->eps, D, be_view(be, cat, D, D));
    be_matmul(be, M->eh_proj, 0, cat, x);

    be_rms_norm(be, x, L->attn_norm, hp->eps, D, h);
    int32_t idn[MTP_OUT_MAX];
    if (ob) {       /* every row's K/V; the rows asked for, moved to rows 0 .. n_out, go on */
        be_tensor *q, *gate;
        model_attention_kv(e, M->il, T, h, &q, &gate);
        if (!n_out)
            return be_check(be, err);
        for (int j = 0; j < n_out; j++) {
            idn[j] = j;
            if (out[j] == j)
                continue;
            be_tensor *src[3] = { q, gate, x };
            for (int t = 0; t < 3; t++)
                be_copy(be, be_rows(be, src[t], out[j], 1), be_rows(be, src[t], j, 1));
        }
        T = n_out;
        out = idn;
        x = be_rows(be, x, 0, T);
        h = be_rows(be, h, 0, T);
        o = be_rows(be, o, 0, T);
        model_attention_out(e, M->il, T, be_rows(be, q, 0, T), be_rows(be, gate, 0, T), ob, o);
    } else {
        model_attention(e, M->il, T, h, o);
    }
    be_add(be, o, x, x);
    be_rms_norm(be, x, L->post_norm, hp->eps, D, h);
    if (hp->arch == MODEL_QWEN35)
        model_ffn_dense(e, M->il, T, h, o);
    else
        model_ffn_moe(e, M->il, T, h, o, NULL, NULL);
    be_add(be, o, x, x);

    /* the head for the rows asked for (one per slot of a draft step),
     * gathered into o up to logit_rows at a time, so that the head's
     * weights are read once for all of them (rows are independent: the
     * same bits as one at a time); a draft vocabulary's rows only */
    const be_weight *head = e->dv_head ? e->dv_head : M->head;
    const int64_t Vh = e->dv_head ? e->dv_n : V;
    for (int i = 0; i < n_out;) {
        const int64_t n = n_out - i < sc->logit_rows ? n_out - i : sc->logit_rows;
        for (int64_t j = 0; j < n; j++)
            be_copy(be, be_rows(be, x, out[i + j], 1), be_rows(be, o, j, 1));
        be_tensor *xr = be_rows(be, o, 0, n);
        if (chain >= 0) {       /* the next chained pass's inputs, on the device */
            be_tensor *hr = be_rows(be, h, 0, n);
            be_tensor *lr = be_view(be, be_rows(be, sc->logits, 0, n), 0, Vh);
            be_tensor *ar = be_rows(be, sc->amax, (int64_t)chain * n, n);
            be_copy(be, xr, model_rows(e, e->mtp_h, n));
            be_rms_norm(be, xr, M->head_norm, hp->eps, D, hr);
            /* the greedy column only (the CPU screens a Q8_0 head instead of
             * forming every logit), then the same ids as the next pass's */
            be_matmul_argmax(be, head, hr, lr, ar, NULL, 0);
            be_copy(be, ar, model_rows(e, sc->ids, n));
            break;          /* n_out <= logit_rows (q36_mtp_eval_chain) */
        }
        if (logits || ids) {
            be_tensor *hr = be_rows(be, h, 0, n);
            be_tensor *lr = be_view(be, be_rows(be, sc->logits, 0, n), 0, Vh);
            be_rms_norm(be, xr, M->head_norm, hp->eps, D, hr);
            if (ids) {      /* the argmax on the device: one id a row comes back */
                be_tensor *ir = be_rows(be, sc->amax, 0, n);
                be_matmul_argmax(be, head, hr, lr, ir, NULL, 0);
                be_read(be, ir, 0, n, ids + i);
            } else {
                be_matmul(be, head, 0, hr, lr);
                be_read(be, lr, 0, n, logits + (int64_t)i * Vh);
            }
        }
        /* after the head's ops (which leave xr alone), as model_forward
         * reads them: a recorded pass then holds the head too */
        if (hidden)
            be_read(be, xr, 0, n, hidden + (int64_t)i * D);
        i += (int)n;
    }
    return be_check(be, err);
}

/* ------------------------------------------------------- draft vocabulary */

void model_mtp_free(q36_engine *e)
{
    free(e->dv_buf);
    free(e->dv_ebuf);
    free(e->dv_ids);
}

int q36_mtp_vocab(const q36_engine *e, const int32_t **ids)
{
    *ids = e->dv_head ? e->dv_ids : NULL;
    return e->dv_head ? e->dv_n : (int)e->hp->n_vocab;
}

int q36_mtp_draft_vocab(q36_engine *e, int n, q36_err *err)
{
    if (!e->mtp)
        return q36_err_set(err, Q36_E_ARG, "draft vocabulary: the engine holds no MTP block");
    if (e->dv_buf)
        return q36_err_set(err, Q36_E_ARG, "draft vocabulary: already set for this engine");
    const int64_t V = e->hp->n_vocab;
    /* the head's tensor in the file, as the weights bound it */
    const gguf_file *f = q36_model_gguf(e->m);
    char name[96];
    snprintf(name, sizeof name, "blk.%d.nextn.shared_head_head.weight", e->w.mtp.il);
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t)
        t = gguf_find_tensor(f, "output.weight");
    if (!t)
        t = gguf_find_tensor(f, "token_embd.weight");
    if (n < 0)      /* Q36_DRAFT_VOCAB_AUTO */
        n = be_head_cheap(e->be, t) ? 0 : Q36_DRAFT_VOCAB_SMALL;
    if (n == 0 || n >= V)
        return 0;
    const uint64_t rb = quant_row_bytes(t->type, t->ne[0]);
    e->dv_ids = malloc((size_t)n * sizeof *e->dv_ids);
    e->dv_buf = malloc((size_t)n * rb);
    if (!e->dv_ids || !e->dv_buf) {
        free(e->dv_ids), free(e->dv_buf);
        e->dv_ids = NULL, e->dv_buf = NULL;
        return q36_err_set(err, Q36_E_NOMEM, "draft vocabulary of %d ids: out of memory", n);
    }
    int k = 0;
    for (int64_t id = 0; id < V && k < n; id++) {
        const uint8_t *row = (const uint8_t *)t->data + (uint64_t)id * rb;
        bool zero = true;
        for (uint64_t j = 0; j < rb && zero; j++)
            zero = row[j] == 0;
        if (zero)
            continue;
        memcpy((uint8_t *)e->dv_buf + (uint64_t)k * rb, row, rb);
        e->dv_ids[k++] = (int32_t)id;
    }
    e->dv_t = *t;
    e->dv_t.ne[1] = (uint64_t)k;
    e->dv_t.nbytes = (uint64_t)k * rb;
    e->dv_t.data = e->dv_buf;
    e->dv_n = k;
    int rc = be_weight_bind(e->be, &e->dv_t, &e->dv_head, err);
    if (rc)
        return rc;
    /* the MTP block's embedding rows of the same ids, in column order:
     * chained drafts (q36_mtp_eval_chain) look a draft up by its column */
    snprintf(name, sizeof name, "blk.%d.nextn.embed_tokens.weight", e->w.mtp.il);
    const gguf_tensor *et = gguf_find_tensor(f, name);
    if (!et)
        et = gguf_find_tensor(f, "token_embd.weight");
    const uint64_t erb = et ? quant_row_bytes(et->type, et->ne[0]) : 0;
    if (!erb || (int64_t)et->ne[1] < V)
        return q36_err_set(err, Q36_E_FORMAT, "draft vocabulary: no MTP embedding of %lld rows",
                           (long long)V);
    e->dv_ebuf = malloc((size_t)k * erb);
    if (!e->dv_ebuf)
        return q36_err_set(err, Q36_E_NOMEM, "draft vocabulary of %d ids: out of memory", k);
    for (int j = 0; j < k; j++)
        memcpy((uint8_t *)e->dv_ebuf + (uint64_t)j * erb,
               (const uint8_t *)et->data + (uint64_t)e->dv_ids[j] * erb, erb);
    e->dv_et = *et;
    e->dv_et.ne[1] = (uint64_t)k;
    e->dv_et.nbytes = (uint64_t)k * erb;
    e->dv_et.data = e->dv_ebuf;
    return be_weight_bind(e->be, &e->dv_et, &e->dv_embd, err);
}
