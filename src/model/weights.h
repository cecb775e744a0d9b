/* weights.h: the tensors of a qwen35 / qwen35moe model bound to a backend,
 * by role, with every shape checked against the geometry (hparams) before
 * anything runs. A missing or misshapen tensor is an error naming the
 * tensor, the shape expected and the shape found.
 *
 * model_weights_bind binds the trunk; model_weights_bind_mtp adds the MTP
 * block (MODEL.md §5: an attention layer, its FFN and the nextn tensors),
 * which only the MTP pass (mtp.c) runs. The
 * bound weights belong to the backend (be_free releases them); this struct
 * holds pointers only. */
#ifndef Q36_MODEL_WEIGHTS_H
#define Q36_MODEL_WEIGHTS_H

#include "../backend/backend.h"
#include "hparams.h"

typedef struct model_layer_w {
    be_weight *attn_norm, *post_norm;            /* {D} */
    /* Gated DeltaNet (recurrent layers) */
    be_weight *ssm_qkv;       /* attn_qkv {D, Cc} */
    be_weight *ssm_gate;      /* attn_gate {D, Hv*dv} (z) */
    be_weight *ssm_conv;      /* ssm_conv1d {Kc, Cc}, F32 */
    be_weight *ssm_dt;        /* ssm_dt.bias {Hv}, F32 */
    be_weight *ssm_a;         /* ssm_a {Hv}, F32 */
    be_weight *ssm_beta;      /* {D, Hv} */
    be_weight *ssm_alpha;     /* {D, Hv} */
    be_weight *ssm_norm;      /* {dv}, F32 */
    be_weight *ssm_out;       /* {Hv*dv, D} */
    /* gated full attention */
    be_weight *wq;            /* attn_q {D, 2*Hq*hd}: [q_h | gate_h] per head */
    be_weight *wk, *wv;       /* {D, Hkv*hd} */
    be_weight *wqkv;          /* fused attn_qkv {D, 2*Hq*hd + 2*Hkv*hd}, or NULL */
    be_weight *wo;            /* attn_output {Hq*hd, D} */
    be_weight *q_norm, *k_norm; /* {hd}, F32 */
    /* dense FFN (qwen35) */
    be_weight *ffn_gate, *ffn_up, *ffn_down;
    /* MoE (qwen35moe) */
    be_weight *router;        /* ffn_gate_inp {D, E} */
    be_weight *gate_exps, *up_exps, *down_exps; /* {D, Fe, E}, {D, Fe, E}, {Fe, D, E} */
    be_weight *gate_up_exps;  /* merged {D, 2*Fe, E}, or NULL */
    be_weight *gate_shexp, *up_shexp, *down_shexp; /* {D, Fs}, {D, Fs}, {Fs, D}; may be NULL */
    be_weight *shexp_gate;    /* ffn_gate_inp_shexp {D} or {D, 1} */
} model_layer_w;

/* The MTP block's own tensors; its attention and FFN are layer[il]. */
typedef struct model_mtp_w {
    int        il;            /* the block's index (n_layer); 0 when not bound */
    be_weight *eh_proj;       /* nextn.eh_proj {2D, D}: [enorm(e) | hnorm(h)] -> D */
    be_weight *enorm, *hnorm; /* {D}, F32 */
    be_weight *head_norm;     /* nextn.shared_head_norm {D}, or output_norm */
    be_weight *embd;          /* nextn.embed_tokens {D, Vocab}, or token_embd */
    be_weight *head;          /* nextn.shared_head_head {D, Vocab}, or the LM head */
} model_mtp_w;

typedef struct model_weights {
    be_weight *tok_embd;      /* {D, Vocab} */
    be_weight *output_norm;   /* {D} */
    be_weight *output;        /* {D, Vocab}: output.weight, or token_embd when tied */
    uint32_t   n_layer;
    model_layer_w layer[MODEL_MAX_BLOCKS];
    model_mtp_w   mtp;
} model_weights;

/* Binds and checks every trunk tensor. Returns 0 or a negative kind with err
 * naming the tensor. */
int model_weights_bind(be_ctx *be, const gguf_file *f, const model_hparams *hp,
                       model_weights *w, q36_err *err);

/* Binds and checks the MTP block (the model must have one): layer[n_layer]
 * and w->mtp. Call after model_weights_bind. */
int model_weights_bind_mtp(be_ctx *be, const gguf_file *f, const model_hparams *hp,
                           model_weights *w, q36_err *err);

#endif
