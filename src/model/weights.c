/* weights.c: finds every trunk tensor of a qwen35 / qwen35moe GGUF by name,
 * checks its shape against the geometry and binds it to the backend
 * (weights.h). The names and shapes are llama.cpp's (MODEL.md §6.3). */
#include "weights.h"

#include <stdio.h>
#include <string.h>

#include "../quant/types.h"

typedef struct {
    be_ctx *be;
    const gguf_file *f;
    q36_err *err;
} binder;

/* Binds `name` (with "%d" replaced by il when il >= 0) and checks ne[0..3]
 * against want (0 = any, -1 = must be 1 or absent). Missing: error unless
 * optional. */
static int bind(binder *b, be_weight **out, int il, const char *fmt, int optional,
                int64_t n0, int64_t n1, int64_t n2, bool need_f32)
{
    char name[128];
    if (il >= 0)
        snprintf(name, sizeof name, fmt, il);
    else
        snprintf(name, sizeof name, "%s", fmt);
    *out = NULL;
    const gguf_tensor *t = gguf_find_tensor(b->f, name);
    if (!t) {
        if (optional)
            return 0;
        return q36_err_set(b->err, Q36_E_FORMAT, "%s: tensor '%s' is missing",
                           gguf_path(b->f), name);
    }
    int64_t want[3] = { n0, n1, n2 };
    bool ok = t->ne[3] == 1;
    for (int d = 0; d < 3; d++)
        if (want[d] > 0 && (int64_t)t->ne[d] != want[d])
            ok = false;
    if (!ok)
        return q36_err_set(b->err, Q36_E_FORMAT,
                           "%s: tensor '%s' is [%llu, %llu, %llu, %llu]; the geometry needs [%lld, %lld, %lld]",
                           gguf_path(b->f), name, (unsigned long long)t->ne[0],
                           (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
                           (unsigned long long)t->ne[3], (long long)(n0 > 0 ? n0 : 1),
                           (long long)(n1 > 0 ? n1 : 1), (long long)(n2 > 0 ? n2 : 1));
    if (need_f32 && t->type != QT_F32)
        return q36_err_set(b->err, Q36_E_UNSUP, "%s: tensor '%s' is %s; q36 needs f32 here",
                           gguf_path(b->f), name, quant_type_name(t->type));
    return be_weight_bind(b->be, t, out, b->err);
}

/* Binds the tensors of block il (a DeltaNet or gated-attention layer with
 * its FFN; the MTP block is an attention layer) into L. */
static int bind_block(binder *b, const model_hparams *hp, int il, model_layer_w *L)
{
    const int64_t D = hp->n_embd;
    const int64_t Hq = hp->n_head, Hkv = hp->n_head_kv, hd = hp->head_dim;
    const int64_t dk = hp->ssm_state, Hv = hp->ssm_dt_rank, Kc = hp->ssm_conv;
    const int64_t Cc = (int64_t)model_conv_channels(hp);
    int rc;
#define B(out, il, name, opt, a0, a1, a2, f32) \
    do { if ((rc = bind(b, (out), (il), (name), (opt), (a0), (a1), (a2), (f32)))) return rc; } while (0)
    B(&L->attn_norm, il, "blk.%d.attn_norm.weight", 0, D, 1, 1, true);
    B(&L->post_norm, il, "blk.%d.post_attention_norm.weight", 0, D, 1, 1, true);
    if (hp->recurrent[il]) {
        B(&L->ssm_qkv, il, "blk.%d.attn_qkv.weight", 0, D, Cc, 1, false);
        B(&L->ssm_gate, il, "blk.%d.attn_gate.weight", 0, D, Hv * dk, 1, false);
        B(&L->ssm_conv, il, "blk.%d.ssm_conv1d.weight", 0, Kc, Cc, 1, true);
        B(&L->ssm_dt, il, "blk.%d.ssm_dt.bias", 0, Hv, 1, 1, true);
        B(&L->ssm_a, il, "blk.%d.ssm_a", 0, Hv, 1, 1, true);
        B(&L->ssm_beta, il, "blk.%d.ssm_beta.weight", 0, D, Hv, 1, false);
        B(&L->ssm_alpha, il, "blk.%d.ssm_alpha.weight", 0, D, Hv, 1, false);
        B(&L->ssm_norm, il, "blk.%d.ssm_norm.weight", 0, dk, 1, 1, true);
        B(&L->ssm_out, il, "blk.%d.ssm_out.weight", 0, Hv * dk, D, 1, false);
    } else {
        B(&L->wqkv, il, "blk.%d.attn_qkv.weight", 1, D, 2 * Hq * hd + 2 * Hkv * hd, 1, false);
        if (!L->wqkv) {
            B(&L->wq, il, "blk.%d.attn_q.weight", 0, D, 2 * Hq * hd, 1, false);
            B(&L->wk, il, "blk.%d.attn_k.weight", 0, D, Hkv * hd, 1, false);
            B(&L->wv, il, "blk.%d.attn_v.weight", 0, D, Hkv * hd, 1, false);
        }
        B(&L->wo, il, "blk.%d.attn_output.weight", 0, Hq * hd, D, 1, false);
        B(&L->q_norm, il, "blk.%d.attn_q_norm.weight", 0, hd, 1, 1, true);
        B(&L->k_norm, il, "blk.%d.attn_k_norm.weight", 0, hd, 1, 1, true);
    }
    if (hp->arch == MODEL_QWEN35) {
        const int64_t F = hp->n_ff;
        B(&L->ffn_gate, il, "blk.%d.ffn_gate.weight", 0, D, F, 1, false);
        B(&L->ffn_up, il, "blk.%d.ffn_up.weight", 0, D, F, 1, false);
        B(&L->ffn_down, il, "blk.%d.ffn_down.weight", 0, F, D, 1, false);
    } else {
        const int64_t E = hp->n_expert, Fe = hp->n_ff_exp, Fs = hp->n_ff_shexp;
        B(&L->router, il, "blk.%d.ffn_gate_inp.weight", 0, D, E, 1, false);
        B(&L->gate_up_exps, il, "blk.%d.ffn_gate_up_exps.weight", 1, D, 2 * Fe, E, false);
        if (!L->gate_up_exps) {
            B(&L->gate_exps, il, "blk.%d.ffn_gate_exps.weight", 0, D, Fe, E, false);
            B(&L->up_exps, il, "blk.%d.ffn_up_exps.weight", 0, D, Fe, E, false);
        }
        B(&L->down_exps, il, "blk.%d.ffn_down_exps.weight", 0, Fe, D, E, false);
        B(&L->up_shexp, il, "blk.%d.ffn_up_shexp.weight", 1, D, Fs, 1, false);
        if (L->up_shexp) {
            B(&L->gate_shexp, il, "blk.%d.ffn_gate_shexp.weight", 0, D, Fs, 1, false);
            B(&L->down_shexp, il, "blk.%d.ffn_down_shexp.weight", 0, Fs, D, 1, false);
            B(&L->shexp_gate, il, "blk.%d.ffn_gate_inp_shexp.weight", 0, D, 1, 1, false);
        }
    }
#undef B
    return 0;
}

int model_weights_bind(be_ctx *be, const gguf_file *f, const model_hparams *hp,
                       model_weights *w, q36_err *err)
{
    memset(w, 0, sizeof *w);
    binder b = { be, f, err };
    /* Per-tensor output scales (NVFP4-derived files, MODEL.md §2.1) would
     * change the math; refuse them rather than ignore them. */
    for (int64_t i = 0; i < gguf_n_tensors(f); i++) {
        const char *nm = gguf_tensor_at(f, i)->name;
        size_t l = strlen(nm);
        if (l > 6 && !strcmp(nm + l - 6, ".scale"))
            return q36_err_set(err, Q36_E_UNSUP, "%s: tensor '%s': per-tensor scales are not supported yet",
                               gguf_path(f), nm);
    }
    const int64_t D = hp->n_embd, V = hp->n_vocab;
    int rc;
#define B(out, il, name, opt, a0, a1, a2, f32) \
    do { if ((rc = bind(&b, (out), (il), (name), (opt), (a0), (a1), (a2), (f32)))) return rc; } while (0)

    B(&w->tok_embd, -1, "token_embd.weight", 0, D, V, 1, false);
    B(&w->output_norm, -1, "output_norm.weight", 0, D, 1, 1, true);
    B(&w->output, -1, "output.weight", 1, D, V, 1, false);
    if (!w->output)
        w->output = w->tok_embd;
    w->n_layer = hp->n_layer;
    for (int il = 0; il < (int)hp->n_layer; il++)
        if ((rc = bind_block(&b, hp, il, &w->layer[il])))
            return rc;
#undef B
    return 0;
}

int model_weights_bind_mtp(be_ctx *be, const gguf_file *f, const model_hparams *hp,
                           model_weights *w, q36_err *err)
{
    binder b = { be, f, err };
    const int il = (int)hp->n_layer;
    const int64_t D = hp->n_embd, V = hp->n_vocab;
    model_mtp_w *M = &w->mtp;
    int rc;
    if (!hp->n_nextn)
        return q36_err_set(err, Q36_E_ARG, "%s: the model has no MTP block (%s.nextn_predict_layers "
                           "is 0)", gguf_path(f), hp->arch_name);
    if ((rc = bind_block(&b, hp, il, &w->layer[il])))
        return rc;
#define B(out, name, opt, a0, a1, f32) \
    do { if ((rc = bind(&b, (out), il, (name), (opt), (a0), (a1), 1, (f32)))) return rc; } while (0)
    B(&M->eh_proj, "blk.%d.nextn.eh_proj.weight", 0, 2 * D, D, false);
    B(&M->enorm, "blk.%d.nextn.enorm.weight", 0, D, 1, true);
    B(&M->hnorm, "blk.%d.nextn.hnorm.weight", 0, D, 1, true);
    B(&M->head_norm, "blk.%d.nextn.shared_head_norm.weight", 1, D, 1, true);
    B(&M->embd, "blk.%d.nextn.embed_tokens.weight", 1, D, V, false);
    B(&M->head, "blk.%d.nextn.shared_head_head.weight", 1, D, V, false);
#undef B
    if (!M->head_norm)
        M->head_norm = w->output_norm;
    if (!M->embd)
        M->embd = w->tok_embd;
    if (!M->head)
        M->head = w->output;
    M->il = il;
    return 0;
}
