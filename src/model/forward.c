/* forward.c: the order of operations of one forward call for qwen35 and
 * qwen35moe (MODEL.md §1.3, §1.5, §11): embeddings, then per trunk layer
 * pre-norm -> DeltaNet or gated attention -> residual -> pre-FFN norm ->
 * dense SwiGLU or MoE -> residual, then the final norm and the LM head for
 * the rows asked for. A pass is a batch of rows from one or more slots
 * (q36_engine_eval builds it); only the sequence ops in the blocks care.
 * The blocks live in deltanet.c, attention.c, ffn.c. */
#include "forward.h"

#include <string.h>

/* The weights of the block after the one about to run, named ahead
 * (be_prefetch: a backend may start reading them meanwhile): a layer's
 * mixer projections, its FFN's dense products (the experts are chosen
 * later, on the device) */
static void prefetch_mixer(q36_engine *e, uint32_t il)
{
    const model_layer_w *L = &e->w.layer[il];
    const be_weight *w[] = { L->ssm_qkv, L->ssm_gate, L->ssm_beta, L->ssm_alpha, L->ssm_out,
                             L->wqkv, L->wq, L->wk, L->wv, L->wo };
    be_prefetch(e->be, (int)(sizeof w / sizeof w[0]), w, NULL);
}

static void prefetch_ffn(q36_engine *e, uint32_t il)
{
    const model_layer_w *L = &e->w.layer[il];
    const be_weight *w[] = { L->ffn_gate, L->ffn_up, L->ffn_down, L->router, L->up_shexp,
                             L->gate_shexp, L->shexp_gate, L->down_shexp };
    be_prefetch(e->be, (int)(sizeof w / sizeof w[0]), w, NULL);
}

int model_forward(q36_engine *e, int64_t T, const int32_t *out, int n_out, float *logits,
                  int32_t *ids, float *hidden, const int32_t *hid, int n_hid, float *hid_rows,
                  q36_err *err)
{
    const model_hparams *hp = e->hp;
    be_ctx *be = e->be;
    model_scratch *sc = &e->sc;
    be_profile_layer(be, BE_LAYER_HEAD);

    be_tensor *x = model_rows(e, sc->x, T);
    be_tensor *h = model_rows(e, sc->h, T);
    be_tensor *o = model_rows(e, sc->o, T);
    be_get_rows(be, e->w.tok_embd, model_rows(e, sc->ids, T), x);

    /* each residual add and the norm after it are one op (be_add_rms_norm:
     * a backend may fuse them); the profile charges them to the block whose
     * output is added */
    be_profile_layer(be, hp->recurrent[0] ? BE_LAYER_DELTANET : BE_LAYER_ATTENTION);
    prefetch_mixer(e, 0);
    be_rms_norm(be, x, e->w.layer[0].attn_norm, hp->eps, hp->n_embd, h);
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        const model_layer_w *L = &e->w.layer[il];
        be_profile_layer(be, hp->recurrent[il] ? BE_LAYER_DELTANET : BE_LAYER_ATTENTION);
        prefetch_ffn(e, il);
        if (hp->recurrent[il])
            model_deltanet(e, (int)il, T, h, o);
        else
            model_attention(e, (int)il, T, h, o);
        be_add_rms_norm(be, o, x, L->post_norm, hp->eps, hp->n_embd, h);
        be_profile_layer(be, BE_LAYER_FFN);
        if (il + 1 < hp->n_layer)
            prefetch_mixer(e, il + 1);
        const be_weight *nn = il + 1 < hp->n_layer ? e->w.layer[il + 1].attn_norm : NULL;
        if (hp->arch != MODEL_QWEN35 && nn) {
            /* the routed sum, the residual add and the next norm: one op */
            model_ffn_moe(e, (int)il, T, h, o, nn, x);
            continue;
        }
        if (hp->arch == MODEL_QWEN35)
            model_ffn_dense(e, (int)il, T, h, o);
        else
            model_ffn_moe(e, (int)il, T, h, o, NULL, NULL);
        if (nn)
            be_add_rms_norm(be, o, x, nn, hp->eps, hp->n_embd, h);
        else
            be_add(be, o, x, x);
    }

    /* the head, for the rows asked for only, up to logit_rows at a time:
     * consecutive rows are a view of x, others are gathered into o first
     * (norm and matmul are row-wise, so either gives the same bits). The
     * hidden rows are read after the head's ops (which write h, the
     * logits and the choices, never x or the gathered rows): a backend
     * that records a pass up to its first read (the CUDA graphs) then
     * records the head too instead of running it op by op after the read. */
    be_profile_layer(be, BE_LAYER_HEAD);
    const int64_t V = hp->n_vocab, D = hp->n_embd;
    for (int i = 0; i < n_out && (logits || ids || hidden);) {
        int64_t n = 1;
        while (i + n < n_out && n < sc->logit_rows && out[i + n] == out[i] + n)
            n++;
        be_tensor *xr;
        if (n > 1 || i + 1 >= n_out) {
            xr = be_rows(be, x, out[i], n);
        } else {
            /* scattered rows: gather up to logit_rows of them */
            n = 0;
            while (i + n < n_out && n < sc->logit_rows &&
                   (n == 0 || out[i + n] != out[i + n - 1] + 1)) {
                be_copy(be, be_rows(be, x, out[i + n], 1), be_rows(be, o, n, 1));
                n++;
            }
            xr = be_rows(be, o, 0, n);
        }
        if (logits || ids) {
            be_tensor *hr = be_rows(be, h, 0, n);
            be_tensor *lr = be_rows(be, sc->logits, 0, n);
            be_rms_norm(be, xr, e->w.output_norm, hp->eps, hp->n_embd, hr);
            /* where only choices come back, the backend may leave most
             * logits uncomputed (cpu_head.c) */
            if (ids && e->topk) {      /* a row's best candidates back, not the row */
                const int64_t k = e->topk;
                be_tensor *ir = be_view(be, be_rows(be, sc->tk_ids, 0, n), 0, k);
                be_tensor *vr = be_view(be, be_rows(be, sc->tk_vals, 0, n), 0, k);
                be_matmul_topk(be, e->w.output, hr, lr, k, ir, vr);
                be_read(be, ir, 0, n, ids + i * k);
                be_read(be, vr, 0, n, e->topk_vals + i * k);
            } else if (ids) {      /* the greedy choice on the device: one id a row back */
                /* a banned choice comes back with its row's logits in lr,
                 * which ban_rechoose reads */
                be_tensor *ir = be_rows(be, sc->amax, 0, n);
                be_matmul_argmax(be, e->w.output, hr, lr, ir, e->ban, e->n_ban);
                be_read(be, ir, 0, n, ids + i);
            } else {
                be_matmul(be, e->w.output, 0, hr, lr);
                be_read(be, lr, 0, n, logits + (int64_t)i * V);
            }
        }
        if (hidden)
            be_read(be, xr, 0, n, hidden + (int64_t)i * D);
        i += (int)n;
    }
    for (int i = 0; i < n_hid;) {      /* hidden rows alone: runs of consecutive rows */
        int64_t n = 1;
        while (i + n < n_hid && hid[i + n] == hid[i] + n)
            n++;
        be_read(be, be_rows(be, x, hid[i], n), 0, n, hid_rows + (int64_t)i * D);
        i += (int)n;
    }
    return be_check(be, err);
}
