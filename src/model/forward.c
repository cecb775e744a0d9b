/* forward.c: the order of operations of one forward call for qwen35 and
 * qwen35moe (MODEL.md §1.3, §1.5, §11): embeddings, then per trunk layer
 * pre-norm -> DeltaNet or gated attention -> residual -> pre-FFN norm ->
 * dense SwiGLU or MoE -> residual, then the final norm and the LM head for
 * the rows asked for. The blocks live in deltanet.c, attention.c, ffn.c. */
#include "forward.h"

#include <string.h>

int model_forward(q36_session *s, const int32_t *ids, int64_t T, float *logits,
                  enum q36_logits which, q36_err *err)
{
    const model_hparams *hp = s->hp;
    be_ctx *be = s->be;
    model_scratch *sc = &s->sc;
    (void)err;
    be_views_reset(be);
    be_profile_layer(be, BE_LAYER_HEAD);

    be_tensor *x = model_rows(s, sc->x, T);
    be_tensor *h = model_rows(s, sc->h, T);
    be_tensor *o = model_rows(s, sc->o, T);
    be_get_rows(be, s->w.tok_embd, ids, T, x);

    for (uint32_t il = 0; il < hp->n_layer; il++) {
        const model_layer_w *L = &s->w.layer[il];
        /* the profile charges each pre-norm and residual add to its block */
        be_profile_layer(be, hp->recurrent[il] ? BE_LAYER_DELTANET : BE_LAYER_ATTENTION);
        be_rms_norm(be, x, L->attn_norm, hp->eps, hp->n_embd, h);
        if (hp->recurrent[il])
            model_deltanet(s, (int)il, T, h, o);
        else
            model_attention(s, (int)il, T, h, o);
        be_add(be, o, x, x);
        be_profile_layer(be, BE_LAYER_FFN);
        be_rms_norm(be, x, L->post_norm, hp->eps, hp->n_embd, h);
        if (hp->arch == MODEL_QWEN35)
            model_ffn_dense(s, (int)il, T, h, o);
        else
            model_ffn_moe(s, (int)il, T, h, o);
        be_add(be, o, x, x);
    }

    be_profile_layer(be, BE_LAYER_HEAD);
    if (which == Q36_LOGITS_NONE || !logits)
        return 0;
    const int64_t r0 = which == Q36_LOGITS_LAST ? T - 1 : 0;
    const int64_t V = hp->n_vocab;
    for (int64_t r = r0; r < T; r += sc->logit_rows) {
        int64_t n = T - r < sc->logit_rows ? T - r : sc->logit_rows;
        be_tensor *xr = be_rows(be, x, r, n);
        be_tensor *hr = be_rows(be, h, r, n);
        be_tensor *lr = be_rows(be, sc->logits, 0, n);
        be_rms_norm(be, xr, s->w.output_norm, hp->eps, hp->n_embd, hr);
        be_matmul(be, s->w.output, 0, hr, lr);
        be_read(be, lr, 0, n, logits + (r - r0) * V);
    }
    return 0;
}
