/* ffn.c: the feed-forward blocks (MODEL.md §4): dense SwiGLU for qwen35;
 * for qwen35moe the router (softmax over all experts, top-k, renormalise),
 * the routed SwiGLU experts summed in rank order, and the shared expert
 * scaled by its sigmoid gate. The router's choices stay on the device (an
 * i32 tensor the expert matmuls read). */
#include "forward.h"

void model_ffn_dense(q36_engine *e, int il, int64_t T, be_tensor *h, be_tensor *out)
{
    const model_layer_w *L = &e->w.layer[il];
    be_ctx *be = e->be;
    const int64_t F = e->hp->n_ff;
    be_tensor *fg = be_view(be, model_rows(e, e->sc.fg, T), 0, F);
    be_tensor *fu = be_view(be, model_rows(e, e->sc.fu, T), 0, F);
    const be_weight *win[] = { L->ffn_gate, L->ffn_up };
    be_tensor *yin[] = { fg, fu };
    be_matmul_n(be, 2, win, h, yin);
    be_matmul_glu(be, L->ffn_down, fg, fu, out);
}

/* out = the routed sum (with sh: plus sigmoid(shg) * sh); with nn, the
 * next block's norm: x = out + x, h = its norm, as one op */
static void moe_end(q36_engine *e, be_tensor *ey, be_tensor *rw, be_tensor *shg, be_tensor *sh,
                    be_tensor *out, const be_weight *nn, be_tensor *x, be_tensor *h)
{
    be_ctx *be = e->be;
    const int64_t k = e->hp->n_expert_used;
    if (nn)
        be_moe_combine_norm(be, ey, rw, k, shg, sh, out, x, nn, e->hp->eps, e->hp->n_embd, h);
    else if (sh)
        be_moe_combine_shared(be, ey, rw, k, shg, sh, out);
    else
        be_moe_combine(be, ey, rw, k, out);
}

void model_ffn_moe(q36_engine *e, int il, int64_t T, be_tensor *h, be_tensor *out,
                   const be_weight *nn, be_tensor *x)
{
    const model_hparams *hp = e->hp;
    const model_layer_w *L = &e->w.layer[il];
    be_ctx *be = e->be;
    model_scratch *sc = &e->sc;
    const int64_t k = hp->n_expert_used, Fe = hp->n_ff_exp;

    be_tensor *rlog = model_rows(e, sc->rlog, T);
    be_tensor *rw = model_rows(e, sc->rw, T);
    /* every product of h at once: the router's logits and, with a shared
     * expert, its up and gate rows and its gate logit (be_matmul_n: the
     * same bits as one by one; one launch a decode step on the GPU) */
    be_tensor *sh = NULL, *fg = NULL, *fu = NULL, *shg = NULL;
    if (L->up_shexp) {
        const int64_t Fs = hp->n_ff_shexp;
        sh = model_rows(e, sc->moe, T);
        fg = be_view(be, model_rows(e, sc->fg, T), 0, Fs);
        fu = be_view(be, model_rows(e, sc->fu, T), 0, Fs);
        shg = model_rows(e, sc->shg, T);
        const be_weight *win[] = { L->router, L->up_shexp, L->gate_shexp, L->shexp_gate };
        be_tensor *yin[] = { rlog, fu, fg, shg };
        be_matmul_n(be, 4, win, h, yin);
    } else {
        be_matmul(be, L->router, 0, h, rlog);
    }
    /* the shared expert's down product (its SwiGLU of fg and fu into sh)
     * needs nothing the routing makes: where the backend runs it beside
     * the routing and the routed products (be_side_begin), it goes first */
    const bool side = L->up_shexp && be_side_begin(be);
    if (side) {
        be_matmul_glu(be, L->down_shexp, fg, fu, sh);
        be_side_end(be);
    }
    be_tensor *sel = model_rows(e, sc->sel, T);
    be_moe_route(be, rlog, k, sel, rw);
    /* the chosen experts' weights, named as soon as they are known */
    const be_weight *wx[] = { L->gate_up_exps, L->gate_exps, L->up_exps, L->down_exps };
    be_prefetch(be, 4, wx, sel);

    be_tensor *ey = model_rows(e, sc->ey, T * k);
    if (L->gate_up_exps) {
        be_tensor *both = model_rows(e, sc->eg, T * k);
        be_matmul_id(be, L->gate_up_exps, h, sel, both);
        be_matmul_id_glu(be, L->down_exps, be_view(be, both, 0, Fe), be_view(be, both, Fe, Fe),
                         sel, ey);
    } else {
        /* the gate and up products and their SwiGLU as one op, into eg */
        be_tensor *eg = be_view(be, model_rows(e, sc->eg, T * k), 0, Fe);
        be_tensor *eu = be_view(be, model_rows(e, sc->eu, T * k), 0, Fe);
        be_matmul_id_swiglu(be, L->gate_exps, L->up_exps, h, sel, eu, eg);
        if (L->up_shexp && !side) {
            /* the down products, the shared expert and the sum: one op */
            be_moe_down_shared(be, L->down_exps, eg, sel, rw, L->down_shexp, fg, fu, shg, ey,
                               sh, out);
            if (nn)
                be_add_rms_norm(be, out, x, nn, hp->eps, hp->n_embd, h);
            return;
        }
        be_matmul_id(be, L->down_exps, eg, sel, ey);
    }

    /* the shared expert into sh (its up and gate rows and gate logit shg
     * came with the router's), unless the side has it; then the routed
     * sum plus sigmoid(shg) * sh */
    if (side)
        be_side_join(be);
    else if (L->up_shexp)
        be_matmul_glu(be, L->down_shexp, fg, fu, sh);
    moe_end(e, ey, rw, shg, sh, out, nn, x, h);
}
