/* forward.h: the inside of a session (include/q36.h): its backend, bound
 * weights, per-layer state and scratch tensors, and the forward pass that
 * the session API drives. Shared by session.c (state, memory plan,
 * snapshots), forward.c (layer loop, embeddings, head), deltanet.c,
 * attention.c and ffn.c (one block each). Not a public header. */
#ifndef Q36_MODEL_FORWARD_H
#define Q36_MODEL_FORWARD_H

#include "../include/q36.h"
#include "../backend/backend.h"
#include "weights.h"

/* Scratch tensors, each with n_batch rows (per token) or n_batch*k rows
 * (per token and routed expert). A forward call uses views of their first
 * T rows. */
typedef struct model_scratch {
    be_tensor *x;          /* residual stream, B x D */
    be_tensor *h;          /* normed input of a block, B x D */
    be_tensor *o;          /* block output, B x D */
    /* DeltaNet */
    be_tensor *mixed;      /* B x Cc: projected q|k|v, raw (pre-conv) */
    be_tensor *conv;       /* B x Cc: after conv + SiLU, q/k L2-normed */
    be_tensor *z;          /* B x Hv*dv */
    be_tensor *alpha, *beta_in, *g, *beta; /* B x Hv */
    be_tensor *core;       /* B x Hv*dv */
    /* attention */
    be_tensor *qg;         /* B x 2*Hq*hd (or the fused qkv width) */
    be_tensor *q, *gate;   /* B x Hq*hd */
    be_tensor *k, *v;      /* B x Hkv*hd */
    be_tensor *att;        /* B x Hq*hd */
    /* FFN */
    be_tensor *fg, *fu;    /* B x max(F, Fs) */
    /* MoE */
    be_tensor *rlog;       /* B x E */
    be_tensor *rw;         /* B x k */
    be_tensor *eg, *eu;    /* B*k x Fe (merged gate_up: B*k x 2Fe in eg) */
    be_tensor *ey;         /* B*k x D */
    be_tensor *shg;        /* B x 1 */
    be_tensor *moe;        /* B x D */
    int32_t   *sel;        /* host: B*k expert ids */
    /* head */
    be_tensor *logits;     /* L x Vocab, L = min(B, 64) rows at a time */
    int64_t    logit_rows;
} model_scratch;

struct q36_session {
    const q36_model     *m;
    const model_hparams *hp;
    be_ctx        *be;
    model_weights  w;
    int64_t        n_ctx, n_batch, pos;
    int            type_k, type_v;
    bool           fast;          /* chunked DeltaNet for batches */
    bool           profile;       /* opts.profile: backend ops timed during forward calls */
    uint64_t       prof_fwd_ns, prof_fwd_n, prof_tok;   /* forward calls since the reset */
    q36_profile    prof;          /* what q36_session_profile last filled */
    be_tensor     *kc[MODEL_MAX_BLOCKS], *vc[MODEL_MAX_BLOCKS];   /* attention layers */
    be_tensor     *tail[MODEL_MAX_BLOCKS], *S[MODEL_MAX_BLOCKS];  /* DeltaNet layers */
    model_scratch  sc;
};

/* Evaluates T <= n_batch tokens at s->pos (which it does not advance).
 * Logits: none, the last row, or all rows into `logits`. */
int model_forward(q36_session *s, const int32_t *ids, int64_t T, float *logits,
                  enum q36_logits which, q36_err *err);

/* One block each: input s->sc.h (T rows, normed), output into `out`. */
void model_deltanet(q36_session *s, int il, int64_t T, be_tensor *h, be_tensor *out);
void model_attention(q36_session *s, int il, int64_t T, be_tensor *h, be_tensor *out);
void model_ffn_dense(q36_session *s, int il, int64_t T, be_tensor *h, be_tensor *out);
void model_ffn_moe(q36_session *s, int il, int64_t T, be_tensor *h, be_tensor *out);

/* First T rows of a scratch tensor. */
static inline be_tensor *model_rows(q36_session *s, be_tensor *t, int64_t T)
{
    return be_rows(s->be, t, 0, T);
}

#endif
