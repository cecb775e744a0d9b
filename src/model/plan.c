/* plan.c: the one table of what an engine allocates (every state tensor of
 * every slot, every scratch tensor), walked twice: by the memory plan
 * (q36_engine_plan, `q36 info`), which adds up the bytes, and by
 * q36_engine_new, which allocates them. The backend's own scratch comes
 * from the same batch shape (model_plan_shape): be_scratch_bytes for the
 * plan, be_reserve at creation. So the printed plan is what the engine
 * takes, by construction. */
#include "forward.h"

#include <stdio.h>
#include <string.h>

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static enum be_type kv_type(int t)
{
    return t == Q36_KV_F16 ? BE_F16 : t == Q36_KV_Q8_0 ? BE_Q8_0 : BE_F32;
}

void model_plan_walk(const model_hparams *hp, const plan_args *a, q36_engine *e,
                     void (*fn)(void *ctx, const plan_item *it), void *ctx)
{
    const int64_t B = a->n_batch, D = hp->n_embd, S = a->n_slots;
    const int64_t kvw = (int64_t)hp->n_head_kv * hp->head_dim;
    const int64_t Cc = (int64_t)model_conv_channels(hp);
    const int64_t Hv = hp->ssm_dt_rank, dv = hp->ssm_state;
    const int64_t Hq = hp->n_head, hd = hp->head_dim;
    const int64_t Fw = max64(max64(hp->n_ff, hp->n_ff_shexp), 1);
    const enum be_type tk = kv_type(a->type_k), tv = kv_type(a->type_v);
    model_scratch *sc = e ? &e->sc : NULL;
#define ITEM(nm, kd, ty, r, c, d) \
    fn(ctx, &(plan_item){ (nm), (kd), (ty), (r), (c), e ? (d) : NULL })
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        if (hp->recurrent[il]) {
            ITEM("conv tails", PLAN_STATE, BE_F32, S * Cc, hp->ssm_conv - 1, &e->tail[il]);
            ITEM("deltanet state", PLAN_STATE, BE_F32, S * Hv, dv * dv, &e->S[il]);
        } else {
            ITEM("K cache", PLAN_KV, tk, S * a->n_ctx, kvw, &e->kc[il]);
            ITEM("V cache", PLAN_KV, tv, S * a->n_ctx, kvw, &e->vc[il]);
        }
    }
    if (a->n_keep)
        for (uint32_t il = 0; il < hp->n_layer; il++)
            if (hp->recurrent[il]) {
                ITEM("kept conv tails", PLAN_STATE, BE_F32, S * a->n_keep * Cc,
                     hp->ssm_conv - 1, &e->keep_tail[il]);
                ITEM("kept deltanet states", PLAN_STATE, BE_F32, S * a->n_keep * Hv, dv * dv,
                     &e->keep_S[il]);
            }
    if (a->mtp) {
        const uint32_t il = hp->n_layer;
        ITEM("MTP K cache", PLAN_KV, tk, S * a->n_ctx, kvw, &e->kc[il]);
        ITEM("MTP V cache", PLAN_KV, tv, S * a->n_ctx, kvw, &e->vc[il]);
        ITEM("MTP hidden", PLAN_SCRATCH, BE_F32, B, D, &e->mtp_h);
        ITEM("MTP concat", PLAN_SCRATCH, BE_F32, B, 2 * D, &e->mtp_cat);
    }
    ITEM("ids", PLAN_SCRATCH, BE_I32, B, 1, &sc->ids);
    ITEM("x", PLAN_SCRATCH, BE_F32, B, D, &sc->x);
    ITEM("h", PLAN_SCRATCH, BE_F32, B, D, &sc->h);
    ITEM("o", PLAN_SCRATCH, BE_F32, B, D, &sc->o);
    ITEM("mixed", PLAN_SCRATCH, BE_F32, B, Cc, &sc->mixed);
    ITEM("conv", PLAN_SCRATCH, BE_F32, B, Cc, &sc->conv);
    ITEM("z", PLAN_SCRATCH, BE_F32, B, Hv * dv, &sc->z);
    ITEM("alpha", PLAN_SCRATCH, BE_F32, B, Hv, &sc->alpha);
    ITEM("beta_in", PLAN_SCRATCH, BE_F32, B, Hv, &sc->beta_in);
    ITEM("g", PLAN_SCRATCH, BE_F32, B, Hv, &sc->g);
    ITEM("beta", PLAN_SCRATCH, BE_F32, B, Hv, &sc->beta);
    ITEM("core", PLAN_SCRATCH, BE_F32, B, Hv * dv, &sc->core);
    ITEM("qg", PLAN_SCRATCH, BE_F32, B, 2 * Hq * hd + 2 * kvw, &sc->qg);
    ITEM("q", PLAN_SCRATCH, BE_F32, B, Hq * hd, &sc->q);
    ITEM("gate", PLAN_SCRATCH, BE_F32, B, Hq * hd, &sc->gate);
    ITEM("k", PLAN_SCRATCH, BE_F32, B, kvw, &sc->k);
    ITEM("v", PLAN_SCRATCH, BE_F32, B, kvw, &sc->v);
    ITEM("att", PLAN_SCRATCH, BE_F32, B, Hq * hd, &sc->att);
    ITEM("ffn gate", PLAN_SCRATCH, BE_F32, B, Fw, &sc->fg);
    ITEM("ffn up", PLAN_SCRATCH, BE_F32, B, Fw, &sc->fu);
    if (hp->arch == MODEL_QWEN35MOE) {
        const int64_t k = hp->n_expert_used, Fe = hp->n_ff_exp;
        ITEM("router logits", PLAN_SCRATCH, BE_F32, B, hp->n_expert, &sc->rlog);
        ITEM("router choices", PLAN_SCRATCH, BE_I32, B, k, &sc->sel);
        ITEM("router weights", PLAN_SCRATCH, BE_F32, B, k, &sc->rw);
        ITEM("expert gate", PLAN_SCRATCH, BE_F32, B * k, 2 * Fe, &sc->eg);
        ITEM("expert up", PLAN_SCRATCH, BE_F32, B * k, Fe, &sc->eu);
        ITEM("expert out", PLAN_SCRATCH, BE_F32, B * k, D, &sc->ey);
        ITEM("shared gate", PLAN_SCRATCH, BE_F32, B, 1, &sc->shg);
        ITEM("moe", PLAN_SCRATCH, BE_F32, B, D, &sc->moe);
    }
    ITEM("logits", PLAN_SCRATCH, BE_F32, B < 64 ? B : 64, hp->n_vocab, &sc->logits);
    ITEM("argmax ids", PLAN_SCRATCH, BE_I32, B < 64 ? B : 64, 1, &sc->amax);
    ITEM("top-k ids", PLAN_SCRATCH, BE_I32, B < 64 ? B : 64, BE_TOPK_MAX, &sc->tk_ids);
    ITEM("top-k values", PLAN_SCRATCH, BE_F32, B < 64 ? B : 64, BE_TOPK_MAX, &sc->tk_vals);
    /* the batch's positions and runs (be_batch_init) */
    ITEM("batch positions", PLAN_SCRATCH, BE_I32, B, 1, NULL);
    ITEM("batch runs", PLAN_SCRATCH, BE_I32, S, 4, NULL);
#undef ITEM
}

be_shape model_plan_shape(const model_hparams *hp, const plan_args *a)
{
    be_shape s = { .n_rows = a->n_batch, .n_seq = a->n_slots, .n_ctx = a->n_ctx, .fast = a->fast };
    if (hp->n_attn_layers) {
        s.n_head = hp->n_head;
        s.n_head_kv = hp->n_head_kv;
        s.head_dim = hp->head_dim;
    }
    if (hp->n_layer > hp->n_attn_layers) {
        s.ssm_k_heads = hp->ssm_group;
        s.ssm_v_heads = hp->ssm_dt_rank;
        s.ssm_dim = hp->ssm_state;
    }
    if (hp->arch == MODEL_QWEN35MOE) {
        s.n_expert = hp->n_expert;
        s.n_expert_used = hp->n_expert_used;
    }
    /* the widest input of any matmul: D, the DeltaNet and attention output
     * projections, the FFN and expert down projections */
    int64_t w = hp->n_embd;
    w = max64(w, (int64_t)hp->ssm_dt_rank * hp->ssm_state);
    w = max64(w, (int64_t)hp->n_head * hp->head_dim);
    w = max64(w, max64(hp->n_ff, hp->n_ff_shexp));
    w = max64(w, hp->n_ff_exp);
    if (a->mtp)
        w = max64(w, 2 * (int64_t)hp->n_embd);     /* eh_proj */
    s.max_in = w;
    /* experts read the normed input (D) or their own SwiGLU rows (Fe) */
    if (hp->arch == MODEL_QWEN35MOE) {
        s.max_in_expert = max64(hp->n_embd, hp->n_ff_exp);
        s.expert_elems = hp->n_embd * hp->n_ff_exp;    /* gate, up and down alike */
    }
    /* views a pass makes, at most: per layer its blocks' row views and
     * column views (attention: two copies of views per head to split q and
     * the gate), then the head: two per gathered row */
    s.max_views = (int64_t)hp->n_layer * (64 + 4 * (int64_t)hp->n_head) + 64 + 2 * a->n_batch;
    /* a pass that keeps per-row states: 12 views per kept row and DeltaNet
     * layer, 8 per run that keeps nothing */
    s.max_views += (int64_t)hp->n_layer * a->n_slots * (a->n_keep * 12 + 8);
    /* a pass that saves checkpoints inside it (ckpt_pass.c): per DeltaNet
     * layer 6 views per piece (at most one per save and one per run) and 2
     * per save */
    s.max_views += (int64_t)hp->n_layer * (8 * Q36_MAX_SAVES + 6 * (int64_t)a->n_slots);
    return s;
}

typedef struct {
    q36_mem_plan *p;
} sum_ctx;

static void sum_item(void *ctx, const plan_item *it)
{
    q36_mem_plan *p = ((sum_ctx *)ctx)->p;
    const uint64_t b = (uint64_t)it->rows * be_type_bytes(it->type, it->cols);
    if (it->kind == PLAN_KV)
        p->kv += b;
    else if (it->kind == PLAN_STATE)
        p->recurrent += b;
    else
        p->scratch += b;
}

static int check_opts(const q36_engine_opts *o, int n_ctx, q36_err *err)
{
    if (n_ctx < 1 || n_ctx > (1 << 24))
        return q36_err_set(err, Q36_E_ARG, "context %d is outside [1, 16777216]", n_ctx);
    if (o->n_batch < 1 || o->n_batch > 65536)
        return q36_err_set(err, Q36_E_ARG, "batch %d is outside [1, 65536]", o->n_batch);
    if (o->n_slots < 1 || o->n_slots > 4096)
        return q36_err_set(err, Q36_E_ARG, "%d slots is outside [1, 4096]", o->n_slots);
    if (o->type_k < Q36_KV_F32 || o->type_k > Q36_KV_Q8_0 || o->type_v < Q36_KV_F32 ||
        o->type_v > Q36_KV_Q8_0)
        return q36_err_set(err, Q36_E_ARG, "K/V cache types must be f32, f16 or q8_0 (got %d, %d)",
                           o->type_k, o->type_v);
    if ((o->type_k == Q36_KV_Q8_0) != (o->type_v == Q36_KV_Q8_0))
        return q36_err_set(err, Q36_E_ARG, "a q8_0 K/V cache is for K and V together: K %s, V %s",
                           q36_kv_type_name(o->type_k), q36_kv_type_name(o->type_v));
    if (o->n_threads < 0 || o->n_threads > 256)
        return q36_err_set(err, Q36_E_ARG, "%d threads is outside [0, 256]", o->n_threads);
    return 0;
}

int model_plan(const q36_model *m, int n_ctx, const q36_engine_opts *o, q36_mem_plan *out,
               q36_err *err)
{
    int rc = check_opts(o, n_ctx, err);
    if (rc)
        return rc;
    const model_hparams *hp = q36_model_hparams(m);
    if (o->type_k == Q36_KV_Q8_0 && hp->head_dim % 32)
        return q36_err_set(err, Q36_E_ARG, "a q8_0 K/V cache needs a head size that is a multiple "
                           "of 32; %s.attention.key_length is %u", hp->arch_name, hp->head_dim);
    if (o->mtp && !hp->n_nextn)
        return q36_err_set(err, Q36_E_ARG, "MTP asked for, but the model has no MTP block "
                           "(%s.nextn_predict_layers is 0)", hp->arch_name);
    if (o->n_keep < 0 || o->n_keep > o->n_batch)
        return q36_err_set(err, Q36_E_ARG, "n_keep %d is outside [0, n_batch %d]", o->n_keep,
                           o->n_batch);
    const plan_args a = { n_ctx, o->n_batch, o->n_slots, o->n_threads, o->type_k, o->type_v,
                          o->mtp != 0, o->n_keep, q36_opts_fast(o) };
    memset(out, 0, sizeof *out);
    out->weights = q36_model_n_bytes(m);
    sum_ctx c = { out };
    model_plan_walk(hp, &a, NULL, sum_item, &c);
    const be_shape sh = model_plan_shape(hp, &a);
    if ((rc = be_scratch_bytes(o->backend, &sh, o->n_threads, &out->backend, err)))
        return rc;
    out->scratch += out->backend;
    out->kv_per_token = out->kv / ((uint64_t)n_ctx * (uint64_t)o->n_slots);
    out->total = out->kv + out->recurrent + out->scratch;
    return 0;
}
