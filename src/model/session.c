/* session.c: the session API of include/q36.h: the memory plan, the
 * allocation of every state and scratch tensor up front, appending tokens
 * in batches, reset, snapshots of the whole state, and the per-op
 * profile (opts.profile) read from the backend's table. The order of
 * operations of a forward call is in forward.c. */
#include "forward.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SNAP_MAGIC   0x53363351u   /* "Q36S" little-endian */
#define SNAP_VERSION 1u

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

q36_session_opts q36_session_opts_default(void)
{
    q36_session_opts o = { .n_threads = 1, .n_batch = 512, .type_k = Q36_KV_F16,
                           .type_v = Q36_KV_F16, .max_bytes = 0, .fast = 0 };
    return o;
}

static uint64_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return UINT64_MAX;
    char line[256];
    unsigned long long kb = 0;
    bool found = false;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
            found = true;
            break;
        }
    fclose(f);
    return found ? (uint64_t)kb * 1024 : UINT64_MAX;
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Floats of every scratch tensor for B tokens (see model_scratch). */
static uint64_t scratch_floats(const model_hparams *hp, int64_t B, int64_t logit_rows)
{
    const int64_t D = hp->n_embd, Cc = (int64_t)model_conv_channels(hp);
    const int64_t Hv = hp->ssm_dt_rank, dv = hp->ssm_state;
    const int64_t Hq = hp->n_head, Hkv = hp->n_head_kv, hd = hp->head_dim;
    const int64_t k = hp->n_expert_used, E = hp->n_expert;
    const int64_t Fw = max64(hp->n_ff, hp->n_ff_shexp);
    uint64_t per_tok = 3 * D + 2 * Cc + 2 * Hv * dv + 4 * Hv +
                       (2 * Hq * hd + 2 * Hkv * hd) + 3 * Hq * hd + 2 * Hkv * hd + 2 * Fw;
    if (hp->arch == MODEL_QWEN35MOE)
        per_tok += E + k + k * (3 * hp->n_ff_exp + D) + 1 + D;
    return per_tok * (uint64_t)B + (uint64_t)logit_rows * hp->n_vocab;
}

static int check_opts(const q36_session_opts *o, int n_ctx, q36_err *err)
{
    if (n_ctx < 1 || n_ctx > (1 << 24))
        return q36_err_set(err, Q36_E_ARG, "context %d is outside [1, 16777216]", n_ctx);
    if (o->n_batch < 1 || o->n_batch > 65536)
        return q36_err_set(err, Q36_E_ARG, "batch %d is outside [1, 65536]", o->n_batch);
    if ((o->type_k != Q36_KV_F32 && o->type_k != Q36_KV_F16) ||
        (o->type_v != Q36_KV_F32 && o->type_v != Q36_KV_F16))
        return q36_err_set(err, Q36_E_ARG, "K/V cache types must be f32 or f16");
    if (o->n_threads < 0 || o->n_threads > 256)
        return q36_err_set(err, Q36_E_ARG, "%d threads is outside [0, 256]", o->n_threads);
    return 0;
}

int q36_session_plan(const q36_model *m, int n_ctx, const q36_session_opts *opts,
                     q36_mem_plan *out, q36_err *err)
{
    q36_session_opts o = opts ? *opts : q36_session_opts_default();
    int rc = check_opts(&o, n_ctx, err);
    if (rc)
        return rc;
    const model_hparams *hp = q36_model_hparams(m);
    memset(out, 0, sizeof *out);
    out->weights = q36_model_n_bytes(m);
    const uint64_t kvw = (uint64_t)hp->n_head_kv * hp->head_dim;
    out->kv_per_token = (uint64_t)hp->n_attn_layers * kvw *
                        ((o.type_k == Q36_KV_F16 ? 2 : 4) + (o.type_v == Q36_KV_F16 ? 2 : 4));
    out->kv = out->kv_per_token * (uint64_t)n_ctx;
    uint64_t n_rec = hp->n_layer - hp->n_attn_layers;
    out->recurrent = n_rec * 4 * (model_conv_channels(hp) * (hp->ssm_conv - 1) +
                                  (uint64_t)hp->ssm_dt_rank * hp->ssm_state * hp->ssm_state);
    int64_t B = o.n_batch;
    int64_t lr = B < 64 ? B : 64;
    out->scratch = 4 * scratch_floats(hp, B, lr) + 4ull * B * hp->n_expert_used;
    if (hp->n_attn_layers)      /* the attention's per-thread scores and accumulators */
        out->scratch += be_attention_scratch_bytes(n_ctx, B, hp->n_head, hp->n_head_kv,
                                                   hp->head_dim, o.n_threads);
    out->total = out->kv + out->recurrent + out->scratch;
    return 0;
}

void q36_session_free(q36_session *s)
{
    if (!s)
        return;
    be_ctx *be = s->be;
    if (be) {
        for (uint32_t il = 0; il < MODEL_MAX_BLOCKS; il++) {
            be_tensor_free(be, s->kc[il]);
            be_tensor_free(be, s->vc[il]);
            be_tensor_free(be, s->tail[il]);
            be_tensor_free(be, s->S[il]);
        }
        be_tensor *all[] = {
            s->sc.x, s->sc.h, s->sc.o, s->sc.mixed, s->sc.conv, s->sc.z, s->sc.alpha,
            s->sc.beta_in, s->sc.g, s->sc.beta, s->sc.core, s->sc.qg, s->sc.q, s->sc.gate,
            s->sc.k, s->sc.v, s->sc.att, s->sc.fg, s->sc.fu, s->sc.rlog, s->sc.rw, s->sc.eg,
            s->sc.eu, s->sc.ey, s->sc.shg, s->sc.moe, s->sc.logits,
        };
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            be_tensor_free(be, all[i]);
    }
    free(s->sc.sel);
    be_free(be);
    free(s);
}

int q36_session_new(const q36_model *m, int n_ctx, const q36_session_opts *opts,
                    q36_session **out, q36_err *err)
{
    *out = NULL;
    q36_session_opts o = opts ? *opts : q36_session_opts_default();
    q36_mem_plan plan;
    int rc = q36_session_plan(m, n_ctx, &o, &plan, err);
    if (rc)
        return rc;
    const model_hparams *hp = q36_model_hparams(m);
    uint64_t avail = o.max_bytes ? o.max_bytes : mem_available();
    if (plan.total > avail)
        return q36_err_set(err, Q36_E_NOMEM,
                           "a context of %d tokens needs %.1f MiB (K/V %.1f MiB = %llu B/token, "
                           "DeltaNet state %.1f MiB, scratch %.1f MiB) but %.1f MiB are available",
                           n_ctx, plan.total / 1048576.0, plan.kv / 1048576.0,
                           (unsigned long long)plan.kv_per_token, plan.recurrent / 1048576.0,
                           plan.scratch / 1048576.0, avail / 1048576.0);

    q36_session *s = calloc(1, sizeof *s);
    if (!s)
        return q36_err_set(err, Q36_E_NOMEM, "out of memory");
    s->m = m;
    s->hp = hp;
    s->n_ctx = n_ctx;
    s->n_batch = o.n_batch;
    s->type_k = o.type_k;
    s->type_v = o.type_v;
    s->fast = o.fast != 0;
    s->profile = o.profile != 0;
    if ((rc = be_cpu_new(o.n_threads, &s->be, err)))
        goto fail;
    if ((rc = model_weights_bind(s->be, q36_model_gguf(m), hp, &s->w, err)))
        goto fail;

    be_ctx *be = s->be;
    bool oom = false;
#define NEW(t, r, c) do { if (!((t) = be_tensor_new(be, (r), (c)))) oom = true; } while (0)
    const int64_t kvw = (int64_t)hp->n_head_kv * hp->head_dim;
    const int64_t Cc = (int64_t)model_conv_channels(hp);
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        if (hp->recurrent[il]) {
            NEW(s->tail[il], Cc, hp->ssm_conv - 1);
            NEW(s->S[il], hp->ssm_dt_rank, (int64_t)hp->ssm_state * hp->ssm_state);
        } else {
            s->kc[il] = o.type_k == Q36_KV_F16 ? be_tensor_new_f16(be, n_ctx, kvw)
                                                : be_tensor_new(be, n_ctx, kvw);
            s->vc[il] = o.type_v == Q36_KV_F16 ? be_tensor_new_f16(be, n_ctx, kvw)
                                                : be_tensor_new(be, n_ctx, kvw);
            if (!s->kc[il] || !s->vc[il])
                oom = true;
        }
    }
    const int64_t B = o.n_batch, D = hp->n_embd;
    const int64_t Hv = hp->ssm_dt_rank, dv = hp->ssm_state;
    const int64_t Hq = hp->n_head, hd = hp->head_dim;
    const int64_t Fw = max64(max64(hp->n_ff, hp->n_ff_shexp), 1);
    model_scratch *sc = &s->sc;
    NEW(sc->x, B, D); NEW(sc->h, B, D); NEW(sc->o, B, D);
    NEW(sc->mixed, B, Cc); NEW(sc->conv, B, Cc); NEW(sc->z, B, Hv * dv);
    NEW(sc->alpha, B, Hv); NEW(sc->beta_in, B, Hv); NEW(sc->g, B, Hv); NEW(sc->beta, B, Hv);
    NEW(sc->core, B, Hv * dv);
    NEW(sc->qg, B, 2 * Hq * hd + 2 * kvw); NEW(sc->q, B, Hq * hd); NEW(sc->gate, B, Hq * hd);
    NEW(sc->k, B, kvw); NEW(sc->v, B, kvw); NEW(sc->att, B, Hq * hd);
    NEW(sc->fg, B, Fw); NEW(sc->fu, B, Fw);
    if (hp->arch == MODEL_QWEN35MOE) {
        const int64_t k = hp->n_expert_used, Fe = hp->n_ff_exp;
        NEW(sc->rlog, B, hp->n_expert); NEW(sc->rw, B, k);
        NEW(sc->eg, B * k, 2 * Fe); NEW(sc->eu, B * k, Fe); NEW(sc->ey, B * k, D);
        NEW(sc->shg, B, 1); NEW(sc->moe, B, D);
        sc->sel = calloc((size_t)(B * k), sizeof *sc->sel);
        if (!sc->sel)
            oom = true;
    }
    sc->logit_rows = B < 64 ? B : 64;
    NEW(sc->logits, sc->logit_rows, hp->n_vocab);
#undef NEW
    if (oom) {
        rc = q36_err_set(err, Q36_E_NOMEM, "out of memory allocating a session of %d tokens (%.1f MiB planned)",
                         n_ctx, plan.total / 1048576.0);
        goto fail;
    }
    if (hp->n_attn_layers &&
        (rc = be_attention_reserve(be, n_ctx, B, Hq, hp->n_head_kv, hd, err)))
        goto fail;
    *out = s;
    return 0;
fail:
    q36_session_free(s);
    return rc;
}

int q36_session_append(q36_session *s, const int32_t *ids, int n, float *logits,
                       enum q36_logits which, q36_err *err)
{
    if (n < 0)
        return q36_err_set(err, Q36_E_ARG, "negative token count %d", n);
    if (n == 0)
        return 0;
    if (s->pos + n > s->n_ctx)
        return q36_err_set(err, Q36_E_ARG, "%d tokens at position %lld do not fit a context of %lld",
                           n, (long long)s->pos, (long long)s->n_ctx);
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || (uint32_t)ids[i] >= s->hp->n_vocab)
            return q36_err_set(err, Q36_E_ARG, "token %d (at index %d) is outside the vocabulary of %u",
                               ids[i], i, s->hp->n_vocab);
    const int64_t V = s->hp->n_vocab;
    for (int64_t i = 0; i < n; i += s->n_batch) {
        int64_t T = n - i < s->n_batch ? n - i : s->n_batch;
        enum q36_logits w = which;
        float *dst = logits;
        if (which == Q36_LOGITS_LAST && i + T < n)
            w = Q36_LOGITS_NONE;
        if (which == Q36_LOGITS_ALL && logits)
            dst = logits + i * V;
        int rc;
        if (s->profile) {
            /* ops count only inside forward calls, so that their sum is
             * a share of the forward time (reset and restore are not) */
            uint64_t t0 = now_ns();
            be_profile_enable(s->be, 1);
            rc = model_forward(s, ids + i, T, dst, w, err);
            be_profile_enable(s->be, 0);
            s->prof_fwd_ns += now_ns() - t0;
            s->prof_fwd_n++;
            s->prof_tok += (uint64_t)T;
        } else {
            rc = model_forward(s, ids + i, T, dst, w, err);
        }
        if (rc)
            return rc;
        s->pos += T;
    }
    return 0;
}

/* ------------------------------------------------------------- profiling */

static int prof_by_ms(const void *a, const void *b)
{
    const q36_profile_row *x = a, *y = b;
    return x->ms < y->ms ? 1 : x->ms > y->ms ? -1 : strcmp(x->name, y->name);
}

int q36_session_profile(q36_session *s, const q36_profile **out, q36_err *err)
{
    *out = NULL;
    if (!s->profile)
        return q36_err_set(err, Q36_E_ARG, "the session was made without opts.profile");
    const be_profile *bp = be_profile_get(s->be);
    q36_profile *p = &s->prof;
    memset(p, 0, sizeof *p);
    for (int r = 0; r < BE_PROF_ROWS && p->n_ops < Q36_PROFILE_MAX_OPS; r++) {
        if (!bp->calls[r])
            continue;
        q36_profile_row *row = &p->op[p->n_ops++];
        be_profile_op_name(r, row->name, sizeof row->name);
        row->calls = bp->calls[r];
        row->ms = (double)bp->ns[r] / 1e6;
    }
    qsort(p->op, (size_t)p->n_ops, sizeof p->op[0], prof_by_ms);
    for (int k = 0; k < BE_LAYER_N && k < Q36_PROFILE_MAX_LAYERS; k++) {
        q36_profile_row *row = &p->layer[p->n_layers++];
        snprintf(row->name, sizeof row->name, "%s", be_layer_name((enum be_layer_kind)k));
        row->calls = bp->layer_calls[k];
        row->ms = (double)bp->layer_ns[k] / 1e6;
    }
    p->forward_ms = (double)s->prof_fwd_ns / 1e6;
    p->forwards = s->prof_fwd_n;
    p->tokens = s->prof_tok;
    *out = p;
    return 0;
}

void q36_session_profile_reset(q36_session *s)
{
    be_profile_reset(s->be);
    s->prof_fwd_ns = s->prof_fwd_n = s->prof_tok = 0;
}

int q36_session_decode(q36_session *s, int32_t id, float *logits, q36_err *err)
{
    return q36_session_append(s, &id, 1, logits, Q36_LOGITS_LAST, err);
}

int q36_session_pos(const q36_session *s) { return (int)s->pos; }
int q36_session_n_ctx(const q36_session *s) { return (int)s->n_ctx; }
int q36_session_n_vocab(const q36_session *s) { return (int)s->hp->n_vocab; }

void q36_session_reset(q36_session *s)
{
    for (uint32_t il = 0; il < s->hp->n_layer; il++) {
        if (s->tail[il])
            be_zero(s->be, s->tail[il]);
        if (s->S[il])
            be_zero(s->be, s->S[il]);
    }
    s->pos = 0;    /* K/V rows beyond pos are never read */
}

/* ------------------------------------------------------------- snapshots */

typedef struct snap_header {
    uint32_t magic, version;
    uint32_t n_layer, n_vocab;
    uint32_t type_k, type_v;
    uint64_t pos;
    uint64_t body;            /* bytes after the header */
} snap_header;

static uint64_t kv_row_bytes(const q36_session *s, int f16)
{
    return (uint64_t)s->hp->n_head_kv * s->hp->head_dim * (f16 ? 2 : 4);
}

static uint64_t body_size(const q36_session *s, uint64_t pos)
{
    uint64_t n = 0;
    for (uint32_t il = 0; il < s->hp->n_layer; il++) {
        if (s->hp->recurrent[il])
            n += be_tensor_bytes(s->tail[il]) + be_tensor_bytes(s->S[il]);
        else
            n += pos * (kv_row_bytes(s, s->type_k == Q36_KV_F16) +
                        kv_row_bytes(s, s->type_v == Q36_KV_F16));
    }
    return n;
}

uint64_t q36_session_state_size(const q36_session *s)
{
    return sizeof(snap_header) + body_size(s, (uint64_t)s->pos);
}

int q36_session_snapshot(const q36_session *s, void *buf, uint64_t cap, uint64_t *written,
                         q36_err *err)
{
    uint64_t need = q36_session_state_size(s);
    if (written)
        *written = 0;
    if (cap < need)
        return q36_err_set(err, Q36_E_ARG, "snapshot needs %llu bytes, the buffer has %llu",
                           (unsigned long long)need, (unsigned long long)cap);
    snap_header hd = { SNAP_MAGIC, SNAP_VERSION, s->hp->n_layer, s->hp->n_vocab,
                       (uint32_t)s->type_k, (uint32_t)s->type_v, (uint64_t)s->pos,
                       need - sizeof(snap_header) };
    uint8_t *p = buf;
    memcpy(p, &hd, sizeof hd);
    p += sizeof hd;
    for (uint32_t il = 0; il < s->hp->n_layer; il++) {
        if (s->hp->recurrent[il]) {
            be_save(s->be, s->tail[il], be_rows_of(s->tail[il]), p);
            p += be_tensor_bytes(s->tail[il]);
            be_save(s->be, s->S[il], be_rows_of(s->S[il]), p);
            p += be_tensor_bytes(s->S[il]);
        } else {
            be_save(s->be, s->kc[il], s->pos, p);
            p += (uint64_t)s->pos * kv_row_bytes(s, s->type_k == Q36_KV_F16);
            be_save(s->be, s->vc[il], s->pos, p);
            p += (uint64_t)s->pos * kv_row_bytes(s, s->type_v == Q36_KV_F16);
        }
    }
    if (written)
        *written = need;
    return 0;
}

int q36_session_restore(q36_session *s, const void *buf, uint64_t n, q36_err *err)
{
    snap_header hd;
    if (n < sizeof hd)
        return q36_err_set(err, Q36_E_FORMAT, "snapshot of %llu bytes is shorter than its header",
                           (unsigned long long)n);
    memcpy(&hd, buf, sizeof hd);
    if (hd.magic != SNAP_MAGIC || hd.version != SNAP_VERSION)
        return q36_err_set(err, Q36_E_FORMAT, "not a q36 session snapshot (magic %08x version %u)",
                           hd.magic, hd.version);
    if (hd.n_layer != s->hp->n_layer || hd.n_vocab != s->hp->n_vocab ||
        hd.type_k != (uint32_t)s->type_k || hd.type_v != (uint32_t)s->type_v)
        return q36_err_set(err, Q36_E_FORMAT,
                           "snapshot is of another model or cache type (layers %u vocab %u K/V %u/%u; "
                           "this session: %u %u %d/%d)", hd.n_layer, hd.n_vocab, hd.type_k, hd.type_v,
                           s->hp->n_layer, s->hp->n_vocab, s->type_k, s->type_v);
    if (hd.pos > (uint64_t)s->n_ctx)
        return q36_err_set(err, Q36_E_ARG, "snapshot at position %llu does not fit a context of %lld",
                           (unsigned long long)hd.pos, (long long)s->n_ctx);
    if (hd.body != body_size(s, hd.pos) || n != sizeof hd + hd.body)
        return q36_err_set(err, Q36_E_FORMAT, "snapshot is %llu bytes; position %llu needs %llu",
                           (unsigned long long)n, (unsigned long long)hd.pos,
                           (unsigned long long)(sizeof hd + body_size(s, hd.pos)));
    const uint8_t *p = (const uint8_t *)buf + sizeof hd;
    for (uint32_t il = 0; il < s->hp->n_layer; il++) {
        if (s->hp->recurrent[il]) {
            be_load(s->be, s->tail[il], be_rows_of(s->tail[il]), p);
            p += be_tensor_bytes(s->tail[il]);
            be_load(s->be, s->S[il], be_rows_of(s->S[il]), p);
            p += be_tensor_bytes(s->S[il]);
        } else {
            be_load(s->be, s->kc[il], (int64_t)hd.pos, p);
            p += hd.pos * kv_row_bytes(s, s->type_k == Q36_KV_F16);
            be_load(s->be, s->vc[il], (int64_t)hd.pos, p);
            p += hd.pos * kv_row_bytes(s, s->type_v == Q36_KV_F16);
        }
    }
    s->pos = (int64_t)hd.pos;
    return 0;
}
