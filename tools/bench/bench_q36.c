/* bench_q36.c: the q36 side of `q36 bench`: the bench_engine interface over
 * the public session API (q36.h). It owns one model and, between prepare
 * and release, one session plus the snapshot of its state at the filled
 * depth; it times nothing but the appends and decodes themselves. */
#include "bench.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/include/q36.h"
#include "../../src/model/model.h"
#include "../../src/quant/types.h"
#include "bench_traffic.h"

typedef struct q36_runner {
    bench_engine base;       /* first: the interface */
    bench_cfg    cfg;
    q36_model   *model;
    q36_session *sess;
    void        *snap;       /* state at the filled depth; NULL at depth 0 */
    uint64_t     snap_len;
    float       *logits;     /* n_vocab: the row every timed call writes */
    int          n_ctx;      /* of the prepared session */
    bench_launches gen_launches;   /* per token, the last time_gen */
} q36_runner;

static void q_release(bench_engine *be)
{
    q36_runner *e = (q36_runner *)be;
    q36_session_free(e->sess);
    free(e->snap);
    e->sess = NULL;
    e->snap = NULL;
    e->snap_len = 0;
}

static void q_free(bench_engine *be)
{
    q36_runner *e = (q36_runner *)be;
    q_release(be);
    free(e->logits);
    q36_model_free(e->model);
    free(e);
}

/* Evaluates ids in calls of n_batch, each asking for the last row's logits,
 * as llama_decode does for a llama_batch_get_one batch. */
static int append_calls(q36_runner *e, const int32_t *ids, int n, q36_err *err)
{
    for (int i = 0; i < n; i += e->cfg.n_batch) {
        int k = n - i < e->cfg.n_batch ? n - i : e->cfg.n_batch;
        int rc = q36_session_append(e->sess, ids + i, k, e->logits, Q36_LOGITS_LAST, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* Back to the filled depth: a reset, then the snapshot when there is one. */
static int to_depth(q36_runner *e, q36_err *err)
{
    q36_session_reset(e->sess);
    return e->snap ? q36_session_restore(e->sess, e->snap, e->snap_len, err) : 0;
}

static int q_prepare(bench_engine *be, int n_ctx, const int32_t *warm, int n_warm_prompt, int warm_gen,
                     const int32_t *depth_ids, int depth, q36_err *err)
{
    q36_runner *e = (q36_runner *)be;
    q_release(be);
    q36_session_opts o = q36_session_opts_default();
    o.n_threads = e->cfg.n_threads;
    o.n_batch = e->cfg.n_ubatch;
    o.type_k = e->cfg.type_k;
    o.type_v = e->cfg.type_v;
    o.fast = e->cfg.fast;
    o.backend = e->cfg.backend;
    int rc = q36_session_new(e->model, n_ctx, &o, &e->sess, err);
    if (rc)
        return rc;
    e->n_ctx = n_ctx;
    if (n_warm_prompt > 0 && (rc = append_calls(e, warm, n_warm_prompt, err)))
        goto fail;
    if (warm_gen && (rc = q36_session_decode(e->sess, warm[0], e->logits, err)))
        goto fail;
    q36_session_reset(e->sess);
    if (depth > 0) {
        if ((rc = append_calls(e, depth_ids, depth, err)))
            goto fail;
        e->snap_len = q36_session_state_size(e->sess);
        if (!(e->snap = malloc(e->snap_len))) {
            rc = q36_err_set(err, Q36_E_NOMEM, "q36: out of memory for a %" PRIu64 "-byte state snapshot",
                             e->snap_len);
            goto fail;
        }
        uint64_t w;
        if ((rc = q36_session_snapshot(e->sess, e->snap, e->snap_len, &w, err)))
            goto fail;
        e->snap_len = w;
    }
    return 0;
fail:
    q_release(be);
    return rc;
}

static int q_time_prompt(bench_engine *be, const int32_t *ids, int n, double *sec, q36_err *err)
{
    q36_runner *e = (q36_runner *)be;
    int rc = to_depth(e, err);
    if (rc)
        return rc;
    double t0 = bench_now();
    rc = append_calls(e, ids, n, err);
    *sec = bench_now() - t0;
    return rc;
}

static int q_time_gen(bench_engine *be, const int32_t *ids, int n, double *sec, q36_err *err)
{
    q36_runner *e = (q36_runner *)be;
    int rc = to_depth(e, err);
    if (rc)
        return rc;
    q36_backend_stats s0, s1;
    q36_engine_backend_stats(q36_session_engine(e->sess), &s0);
    double t0 = bench_now();
    for (int i = 0; i < n && !rc; i++)
        rc = q36_session_decode(e->sess, ids[i], e->logits, err);
    *sec = bench_now() - t0;
    q36_engine_backend_stats(q36_session_engine(e->sess), &s1);
    const double per = n > 0 ? 1.0 / n : 0.0;
    e->gen_launches = (bench_launches){ (double)(s1.launches - s0.launches) * per,
                                        (double)(s1.graph_launches - s0.graph_launches) * per,
                                        (double)(s1.graph_nodes - s0.graph_nodes) * per };
    return rc;
}

void bench_q36_launches(const bench_engine *be, bench_launches *out)
{
    *out = ((const q36_runner *)be)->gen_launches;
}

/* Back to the prepared depth in session s (the timed one or the profiled one). */
static int depth_of(q36_runner *e, q36_session *s, q36_err *err)
{
    q36_session_reset(s);
    return e->snap ? q36_session_restore(s, e->snap, e->snap_len, err) : 0;
}

static int copy_profile(q36_session *s, q36_profile *dst, q36_err *err)
{
    const q36_profile *p;
    int rc = q36_session_profile(s, &p, err);
    if (!rc)
        *dst = *p;
    return rc;
}

int bench_q36_profile(bench_engine *be, const int32_t *prompt, int n_prompt, const int32_t *gen,
                      int n_gen, q36_profile *pp, q36_profile *tg, q36_err *err)
{
    q36_runner *e = (q36_runner *)be;
    if (!e->sess)
        return q36_err_set(err, Q36_E_ARG, "q36: profile before prepare");
    q36_session_opts o = q36_session_opts_default();
    o.n_threads = e->cfg.n_threads;
    o.n_batch = e->cfg.n_ubatch;
    o.type_k = e->cfg.type_k;
    o.type_v = e->cfg.type_v;
    o.fast = e->cfg.fast;
    o.backend = e->cfg.backend;
    o.profile = 1;
    /* The timed session is done with (the release follows the profile):
     * freed first, so that the profile's session has the device to itself.
     * Beside it, a GPU held two copies of the weights, and fast mode's kept
     * f16 copies of the second stopped where memory ran out: the 35B-A3B's
     * profiled prompt dequantized 24 of its 40 layers' experts every pass,
     * which the timed passes did not (bench/results/2026-12-04-cuda-session20/). */
    q36_session_free(e->sess);
    e->sess = NULL;
    q36_session *s = NULL;
    int rc = q36_session_new(e->model, e->n_ctx, &o, &s, err);
    if (rc)
        return rc;
    e->sess = s;    /* append_calls works on e->sess */
    if (n_prompt > 0 && !(rc = depth_of(e, s, err)) && !(rc = append_calls(e, prompt, n_prompt, err)) &&
        !(rc = depth_of(e, s, err))) {
        q36_session_profile_reset(s);
        if (!(rc = append_calls(e, prompt, n_prompt, err)))
            rc = copy_profile(s, pp, err);
    }
    if (!rc && n_gen > 0 && !(rc = depth_of(e, s, err))) {
        q36_session_profile_reset(s);
        for (int i = 0; i < n_gen && !rc; i++)
            rc = q36_session_decode(s, gen[i], e->logits, err);
        if (!rc)
            rc = copy_profile(s, tg, err);
    }
    e->sess = NULL;
    q36_session_free(s);
    return rc;
}

/* "qwen35 0.75B q4_K": the architecture, the parameter count and the type
 * holding most bytes; and the whole mix by type (count and MiB). */
static void describe(q36_runner *e)
{
    bench_desc *d = &e->base.desc;
    const gguf_file *f = q36_model_gguf(e->model);
    uint64_t n[QT_COUNT] = { 0 }, b[QT_COUNT] = { 0 };
    for (int64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (t->type < QT_COUNT) {
            n[t->type]++;
            b[t->type] += t->nbytes;
        }
    }
    int top = 0;
    size_t k = 0;
    for (int t = 0; t < QT_COUNT; t++) {
        if (!n[t])
            continue;
        if (b[t] > b[top])
            top = t;
        if (k < sizeof d->type_mix)
            k += (size_t)snprintf(d->type_mix + k, sizeof d->type_mix - k, "%s%s %" PRIu64 " (%.1f MiB)",
                                  k ? ", " : "", quant_type_name((uint32_t)t), n[t], b[t] / 1048576.0);
    }
    d->model_size = q36_model_n_bytes(e->model);
    d->model_n_params = q36_model_n_params(e->model);
    double p = (double)d->model_n_params;
    snprintf(d->model_type, sizeof d->model_type, "%s %.2f%s %s", q36_model_hparams(e->model)->arch_name,
             p >= 1e9 ? p / 1e9 : p / 1e6, p >= 1e9 ? "B" : "M", quant_type_name((uint32_t)top));
    d->n_vocab = (int32_t)q36_model_hparams(e->model)->n_vocab;
    snprintf(d->build, sizeof d->build, "%s", bench_commit());
    snprintf(d->detail, sizeof d->detail, "q36 %s, %s mode", Q36_VERSION, e->cfg.fast ? "fast" : "exact");
}

int bench_q36_traffic(bench_engine *be, double ctx_positions, bench_traffic *out, q36_err *err)
{
    q36_runner *e = (q36_runner *)be;
    return bench_traffic_of(e->model, e->cfg.type_k, e->cfg.type_v, ctx_positions, out, err);
}

int bench_q36_open(const char *path, const bench_cfg *cfg, bench_engine **out, q36_err *err)
{
    *out = NULL;
    q36_runner *e = calloc(1, sizeof *e);
    if (!e)
        return q36_err_set(err, Q36_E_NOMEM, "q36: out of memory");
    e->base.name = "q36";
    e->base.prepare = q_prepare;
    e->base.time_prompt = q_time_prompt;
    e->base.time_gen = q_time_gen;
    e->base.release = q_release;
    e->base.free = q_free;
    e->cfg = *cfg;
    int rc = q36_model_open(path, &e->model, err);
    if (rc)
        goto fail;
    describe(e);
    if (!(e->logits = malloc((size_t)e->base.desc.n_vocab * sizeof *e->logits))) {
        rc = q36_err_set(err, Q36_E_NOMEM, "q36: out of memory for %d logits", e->base.desc.n_vocab);
        goto fail;
    }
    *out = &e->base;
    return 0;
fail:
    q_free(&e->base);
    return rc;
}
