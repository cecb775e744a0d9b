/* forward.h: the inside of an engine (include/q36.h): its backend, bound
 * weights, the state tensors of every slot, the scratch tensors, and the
 * forward pass over a batch. Shared by engine.c (creation, eval, slots),
 * plan.c (the one table of what an engine allocates), session.c and
 * snapshot.c (a slot as a session), ckpt.c (checkpoints), forward.c (layer
 * loop, embeddings, head), deltanet.c, attention.c and ffn.c (one block
 * each). Not a public header. */
#ifndef Q36_MODEL_FORWARD_H
#define Q36_MODEL_FORWARD_H

#include <stdbool.h>

#include "model.h"
#include "../backend/backend.h"
#include "weights.h"

/* Scratch tensors, each with n_batch rows (per row) or n_batch*k rows (per
 * row and routed expert). A forward pass uses views of their first T rows. */
typedef struct model_scratch {
    be_tensor *ids;        /* i32 B x 1: token ids */
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
    be_tensor *sel;        /* i32 B x k: the experts chosen, on the device */
    be_tensor *rw;         /* B x k */
    be_tensor *eg, *eu;    /* B*k x Fe (merged gate_up: B*k x 2Fe in eg) */
    be_tensor *ey;         /* B*k x D */
    be_tensor *shg;        /* B x 1 */
    be_tensor *moe;        /* B x D: the shared expert's output */
    /* head */
    be_tensor *logits;     /* L x Vocab, L = min(B, 64) rows at a time */
    be_tensor *amax;       /* i32 L x 1: the logits rows' argmax (be_argmax) */
    be_tensor *tk_ids;     /* i32 L x BE_TOPK_MAX, and */
    be_tensor *tk_vals;    /* L x BE_TOPK_MAX: the logits rows' best (be_topk) */
    int64_t    logit_rows;
} model_scratch;

/* The most rows asked for that an MTP pass takes past the K/V store alone
 * (e->mtp_ob, model_mtp_forward's ob) */
#define MTP_OUT_MAX 64

struct q36_engine {
    const q36_model     *m;
    const model_hparams *hp;
    be_ctx        *be;
    model_weights  w;
    int64_t        n_ctx, n_batch;
    int            n_slots;
    int            n_threads;
    int            type_k, type_v;
    bool           fast;          /* chunked DeltaNet for prompt runs */
    bool           profile;       /* opts.profile: backend ops timed during forward passes */
    uint64_t       prof_fwd_ns, prof_fwd_n, prof_tok;   /* forward passes since the reset */
    q36_profile    prof;          /* what q36_session_profile last filled */
    /* state: every slot's rows, slot after slot (backend.h, "Batches and slots") */
    be_tensor     *kc[MODEL_MAX_BLOCKS], *vc[MODEL_MAX_BLOCKS];   /* n_slots*n_ctx rows */
    be_tensor     *tail[MODEL_MAX_BLOCKS];                        /* n_slots*Cc rows */
    be_tensor     *S[MODEL_MAX_BLOCKS];                           /* n_slots*Hv rows */
    int64_t       *pos;           /* per slot: tokens seen */
    model_scratch  sc;
    be_batch       batch;         /* the pass being evaluated */
    be_seq        *seq;           /* host: its runs (n_slots) */
    int32_t       *rowbuf;        /* host: 3 x n_batch, a session's slots/positions/rows */
    /* MTP (opts.mtp): its K/V are kc/vc[w.mtp.il]; mtp.c */
    bool           mtp;
    int64_t       *mtp_pos;       /* per slot: one past the last MTP row written */
    be_tensor     *mtp_h;         /* B x D: the hidden rows uploaded */
    be_tensor     *mtp_cat;       /* B x 2D: [enorm(embedding) | hnorm(h)] */
    /* kept per-row states (rewind.c): per slot, the DeltaNet state and conv
     * tail after each of the first n_keep rows of its run in the pass that
     * asked for them */
    int            n_keep;
    be_tensor     *keep_S[MODEL_MAX_BLOCKS];     /* n_slots*n_keep*Hv rows, slot after slot */
    be_tensor     *keep_tail[MODEL_MAX_BLOCKS];  /* n_slots*n_keep*Cc rows */
    be_batch       row_batch;     /* one row of a kept slot, for the row-by-row ops */
    be_batch       run_batch;     /* one run of the pass, for the runs that keep nothing */
    /* a pass that keeps states (and saves none): its runs' batches set
     * before it begins, so that the pass uploads nothing (a backend may
     * record it, engine.c: pass_key): keep_b[s * n_keep + t] for row t of
     * run s of a kept slot, keep_run_b[s] for run s of another slot, and
     * with the keeping ops (be_can_keep) keep_lead_b for the kept runs that
     * lead the pass, n_keep_lead of them (0: none), all in one call of each
     * op (rewind.c: model_keep_batches); keep_ready while they are this
     * pass's */
    be_batch      *keep_b, *keep_run_b, keep_lead_b;
    /* with MTP: the rows asked for of an MTP pass whose other rows only
     * store their K/V (mtp.c, mtp_out_rows), one run of one row each */
    be_batch       mtp_ob;        /* up to MTP_OUT_MAX rows */
    int            n_keep_lead;
    /* one-row runs of slots that keep nothing join the leading kept runs,
     * and a pass whose runs all lead takes be_deltanet_gated_keep (on
     * unless Q36_KEEP_FUSE=0, read when the engine is made: the A/B) */
    bool           keep_fuse;
    bool           keep_ready;
    uint8_t       *keep;          /* per slot: the next pass keeps its states */
    int            n_keep_req;    /* slots with keep set */
    bool           keeping;       /* the pass being evaluated keeps states */
    int64_t       *kept_pos0, *kept_rows;   /* per slot: its kept pass (rows 0: none) */
    /* a draft vocabulary (q36_mtp_draft_vocab): the head's rows of those ids */
    gguf_tensor    dv_t;          /* describes dv_buf for be_weight_bind */
    void          *dv_buf;
    be_weight     *dv_head;       /* NULL: the full head */
    gguf_tensor    dv_et;         /* the MTP embedding's rows of the same ids: */
    void          *dv_ebuf;       /* chained drafts look up a draft's */
    be_weight     *dv_embd;       /* embedding by its draft-vocabulary column */
    int32_t       *dv_ids;
    int            dv_n;
    /* checkpoints inside a pass (ckpt_pass.c): the next pass's requests,
     * sorted by slot and position when it starts; per slot, its first
     * request and their count (valid during that pass) */
    struct model_save *saves;     /* Q36_MAX_SAVES */
    int            n_saves;
    int           *save0, *save_n;
    /* q36_engine_argmax_ban: the ids the greedy choices of the next ids
     * passes skip (sorted), and a logits row for choosing again */
    int32_t       *ban;
    int            n_ban;
    float         *ban_row;
    /* q36_engine_eval_hid_topk's pass: the ids pass returns each row's
     * topk best ids (topk of them a row) and their logits into topk_vals
     * (topk 0: the argmax) */
    int            topk;
    float         *topk_vals;
};

/* A checkpoint (ckpt.c): device copies of one slot's DeltaNet tails and
 * state matrices, optionally of its first kv_rows K/V rows, and the
 * position they were saved at. */
struct q36_ckpt {
    q36_engine *e;
    int64_t     kv_rows;       /* K/V rows held (0: none) */
    int64_t     pos;           /* -1 until saved */
    int         slot;          /* the slot it was saved from */
    be_tensor  *tail[MODEL_MAX_BLOCKS], *S[MODEL_MAX_BLOCKS];
    be_tensor  *kc[MODEL_MAX_BLOCKS], *vc[MODEL_MAX_BLOCKS];
};

/* One request of q36_engine_save_at: the state of `slot` after position
 * pos - 1 into c. */
typedef struct model_save {
    int        slot;
    int64_t    pos;
    q36_ckpt  *c;
} model_save;

/* ----------------------------------------------------------------- plan.c */

/* What an engine allocates, one row of the table each: the plan sums the
 * bytes, engine creation allocates them into `dst`. */
enum plan_kind { PLAN_KV, PLAN_STATE, PLAN_SCRATCH };
typedef struct plan_item {
    const char    *name;
    enum plan_kind kind;
    enum be_type   type;
    int64_t        rows, cols;
    be_tensor    **dst;        /* NULL when walked without an engine */
} plan_item;

typedef struct plan_args {
    int64_t n_ctx, n_batch;
    int     n_slots, n_threads, type_k, type_v;
    int     mtp;           /* the MTP block's K/V rows and scratch too */
    int     n_keep;        /* rows of kept per-row states (rewind.c) */
    int     fast;          /* fast mode (q36_engine_opts.fast): the backend's be_shape.fast */
} plan_args;

/* Calls fn for every tensor an engine of these arguments holds; e (may be
 * NULL) gives the dst of each. */
void model_plan_walk(const model_hparams *hp, const plan_args *a, q36_engine *e,
                     void (*fn)(void *ctx, const plan_item *it), void *ctx);
/* The largest batch the backend reserves scratch for. */
be_shape model_plan_shape(const model_hparams *hp, const plan_args *a);
/* Checks the options and fills the plan (weights from the model). */
int model_plan(const q36_model *m, int n_ctx, const q36_engine_opts *o, q36_mem_plan *out,
               q36_err *err);

/* -------------------------------------------------------------- forward.c */

/* Evaluates the T rows whose ids, slots and positions e->sc.ids and
 * e->batch hold (set by q36_engine_eval); positions are not advanced here.
 * Rows out[0..n_out) of the result: logits (n_vocab each) and hidden
 * (n_embd each, before the final norm), either may be NULL; and the hidden
 * rows hid[0..n_hid) into hid_rows (a prompt chunk's, for an MTP head's
 * catch-up). The backend's
 * op errors are checked once, at the end. */
int model_forward(q36_engine *e, int64_t T, const int32_t *out, int n_out, float *logits,
                  int32_t *ids, float *hidden, const int32_t *hid, int n_hid, float *hid_rows,
                  q36_err *err);

/* One value folded into a pass key (engine.c: pass_key, mtp.c) */
static inline uint64_t model_key_mix(uint64_t h, uint64_t v)
{
    h = (h ^ v) * 0x100000001B3u;
    return h ^ (h >> 29);
}

/* The MTP pass over the T rows set up like model_forward's, with the
 * hidden rows already in e->mtp_h (mtp.c); for the rows out[], logits, or
 * with ids their argmax columns only (be_argmax), and hidden rows. With
 * chain >= 0 (n_out <= logit_rows rows asked for, one a slot, nothing read
 * back): their argmax columns go to rows chain * n_out .. of the argmax
 * scratch and to rows 0 .. n_out of the ids, their hidden rows to rows
 * 0 .. n_out of e->mtp_h: the next chained pass's inputs. dv_in:
 * the ids are draft-vocabulary columns (their embedding rows from
 * e->dv_embd). ob: NULL, or the rows out[] (each the last row of its run,
 * in order; none at all: n_out 0) as runs of one row (e->mtp_ob): then
 * only those rows go past the K/V store (attention, FFN, head); the
 * others' outputs are never read, only their K/V rows (at most
 * MTP_OUT_MAX rows asked for). */
/* opts.profile: a pass's timing (the trunk's and the MTP block's passes):
 * model_prof_begin turns the backend's op timers on and returns the start,
 * model_prof_end turns them off and counts the pass of T tokens */
uint64_t model_prof_begin(q36_engine *e);
void model_prof_end(q36_engine *e, uint64_t t0, int64_t T);
int model_mtp_forward(q36_engine *e, int64_t T, bool h_from_mtp, bool dv_in, const int32_t *out,
                      int n_out, const be_batch *ob, float *logits, int32_t *ids, float *hidden,
                      int chain, q36_err *err);

/* The delta rule and the conv of a pass that keeps per-row states or saves
 * checkpoints inside it (rewind.c): each run on its own, a kept slot's row
 * by row with each state copied out after its row, a slot with
 * checkpoints in pieces that end at their positions, each state copied
 * into its checkpoint after its piece. */
void model_deltanet_rows(q36_engine *e, int il, int64_t T, be_tensor *mixed, be_tensor *conv,
                         be_tensor *g, be_tensor *beta, be_tensor *core);
/* Checks a pass that keeps states, before it runs (a refused pass clears
 * the requests); after it, records it (ok: it ran) and forgets the kept
 * states of every other slot of the pass (moved on). */
int  model_keep_check(q36_engine *e, int n_seq, q36_err *err);
void model_keep_done(q36_engine *e, int n_seq, bool ok);
/* Sets the keeping pass's batches (keep_b, keep_run_b, keep_lead_b) for
 * the e->seq[0..n_seq) about to run, before the pass begins */
void model_keep_batches(q36_engine *e, int n_seq);

/* Checkpoints inside a pass (ckpt_pass.c). model_saves_check, before
 * the pass: each request's slot has a run in it and its position is one
 * of the run's (a refused pass forgets the requests); sorts them and fills
 * save0/save_n. model_saves_done, after it: ok (the pass ran) copies the
 * K/V rows of the checkpoints that hold them and marks every checkpoint
 * saved; the requests are forgotten either way. */
int  model_saves_check(q36_engine *e, int n_seq, q36_err *err);
int  model_saves_done(q36_engine *e, bool ok, q36_err *err);
/* Copies slot `slot`'s conv tail and state matrices of DeltaNet layer il
 * into c (the state after the rows evaluated so far in this pass). */
void model_save_layer(q36_engine *e, int il, int slot, q36_ckpt *c);

/* Frees what the MTP pass allocated outside the plan (after be_free). */
void model_mtp_free(q36_engine *e);

/* One block each: input h (T rows, normed), output into `out`. */
void model_deltanet(q36_engine *e, int il, int64_t T, be_tensor *h, be_tensor *out);
void model_attention(q36_engine *e, int il, int64_t T, be_tensor *h, be_tensor *out);
/* model_attention in two parts: the projections, norms, rope and K/V
 * store of the T rows (e->batch), leaving q and the gate (rows 0 .. T of
 * the scratch) in *q and *gate; then the attention of q's T rows over the
 * cache by the runs of b, the gate and the output projection. */
void model_attention_kv(q36_engine *e, int il, int64_t T, be_tensor *h, be_tensor **q,
                        be_tensor **gate);
void model_attention_out(q36_engine *e, int il, int64_t T, be_tensor *q, be_tensor *gate,
                         const be_batch *b, be_tensor *out);
void model_ffn_dense(q36_engine *e, int il, int64_t T, be_tensor *h, be_tensor *out);
/* With nn (the next block's norm weight), its residual add and norm too:
 * x = out + x, h = the norm of x (be_moe_combine_norm); out is scratch then */
void model_ffn_moe(q36_engine *e, int il, int64_t T, be_tensor *h, be_tensor *out,
                   const be_weight *nn, be_tensor *x);

/* First T rows of a scratch tensor. */
static inline be_tensor *model_rows(q36_engine *e, be_tensor *t, int64_t T)
{
    return be_rows(e->be, t, 0, T);
}

#endif
