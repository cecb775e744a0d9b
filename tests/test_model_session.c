/* test_model_session.c: the session API (include/q36.h) on q36 synth
 * models (qwen35 and qwen35moe, tiny, q8_0): snapshot/restore round trips
 * bit for bit, prefill equals one-token decodes, results do not depend on
 * the batch size or the thread count, reset, and the error values (token
 * out of range, context overflow, bad snapshots, a plan that does not fit).
 * Models are made with `$Q36 synth` (default ./q36) in a temporary folder. */
#include "test.h"
#include "test_synth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "include/q36.h"
#include "model/model.h"

static q36_session *open_session(const q36_model *m, int n_ctx, int threads, int batch, int kv,
                                 const char *name)
{
    q36_session_opts o = q36_session_opts_default();
    o.n_threads = threads;
    o.n_batch = batch;
    o.type_k = o.type_v = kv;
    q36_session *s = NULL;
    q36_err err = { 0 };
    if (q36_session_new(m, n_ctx, &o, &s, &err)) {
        t_fail(name, "session_new: %s", err.msg);
        return NULL;
    }
    return s;
}

static void run_model(const char *tag, const char *path)
{
    char name[160];
    q36_err err = { 0 };
    q36_model *m = NULL;
    snprintf(name, sizeof name, "session.%s.open", tag);
    if (q36_model_open(path, &m, &err)) {
        t_fail(name, "%s", err.msg);
        return;
    }
    const int V = (int)q36_model_hparams(m)->n_vocab;
    enum { N = 40, K = 23, CTX = 64 };
    int32_t ids[N];
    t_rng r = t_rng_named(tag);
    for (int i = 0; i < N; i++)
        ids[i] = (int32_t)(t_next(&r) % (uint64_t)V);
    float *all = malloc(sizeof(float) * N * V);
    float *dec = malloc(sizeof(float) * N * V);
    float *l1 = malloc(sizeof(float) * (N - K) * V);
    float *l2 = malloc(sizeof(float) * (N - K) * V);

    /* reference: one prefill, all rows */
    q36_session *s = open_session(m, CTX, 1, 512, Q36_KV_F32, tag);
    if (!s)
        goto done;
    int rc = q36_session_append(s, ids, N, all, Q36_LOGITS_ALL, &err);
    bool finite = true;
    for (int i = 0; i < N * V; i++)
        finite &= isfinite(all[i]) != 0;
    snprintf(name, sizeof name, "session.%s.prefill", tag);
    t_check(name, rc == 0 && finite && q36_session_pos(s) == N, "rc %d pos %d finite %d: %s", rc,
            q36_session_pos(s), finite, err.msg);

    /* prefill vs one token at a time */
    q36_session_reset(s);
    rc = 0;
    for (int i = 0; i < N && !rc; i++)
        rc = q36_session_decode(s, ids[i], dec + (size_t)i * V, &err);
    snprintf(name, sizeof name, "session.%s.decode_equals_prefill", tag);
    t_check(name, rc == 0 && !memcmp(all, dec, sizeof(float) * N * V), "rc %d: rows differ", rc);

    /* batch size and threads */
    q36_session *sb = open_session(m, CTX, 3, 7, Q36_KV_F32, tag);
    if (sb) {
        rc = q36_session_append(sb, ids, N, dec, Q36_LOGITS_ALL, &err);
        snprintf(name, sizeof name, "session.%s.batch7_threads3", tag);
        t_check(name, rc == 0 && !memcmp(all, dec, sizeof(float) * N * V), "rc %d: rows differ", rc);
    }

    /* snapshot after K tokens, continue; restore into another session */
    q36_session_reset(s);
    q36_session_append(s, ids, K, NULL, Q36_LOGITS_NONE, &err);
    uint64_t sz = q36_session_state_size(s), wr = 0;
    uint8_t *snap = malloc(sz), *snap2 = malloc(sz);
    rc = q36_session_snapshot(s, snap, sz, &wr, &err);
    snprintf(name, sizeof name, "session.%s.snapshot", tag);
    t_check(name, rc == 0 && wr == sz, "rc %d wrote %llu of %llu: %s", rc, (unsigned long long)wr,
            (unsigned long long)sz, err.msg);
    q36_session_append(s, ids + K, N - K, l1, Q36_LOGITS_ALL, &err);
    snprintf(name, sizeof name, "session.%s.snapshot_continue", tag);
    t_check(name, !memcmp(l1, all + (size_t)K * V, sizeof(float) * (N - K) * V),
            "continuing after a snapshot changed the logits");
    if (sb) {
        q36_session_free(sb);
        sb = open_session(m, CTX, 2, 512, Q36_KV_F32, tag);
    }
    if (sb) {
        rc = q36_session_restore(sb, snap, sz, &err);
        uint64_t wr2 = 0;
        int rc2 = q36_session_snapshot(sb, snap2, sz, &wr2, &err);
        snprintf(name, sizeof name, "session.%s.restore_snapshot_equal", tag);
        t_check(name, rc == 0 && rc2 == 0 && wr2 == sz && !memcmp(snap, snap2, sz) &&
                q36_session_pos(sb) == K, "rc %d/%d pos %d: %s", rc, rc2, q36_session_pos(sb), err.msg);
        rc = q36_session_append(sb, ids + K, N - K, l2, Q36_LOGITS_ALL, &err);
        snprintf(name, sizeof name, "session.%s.restore_continue", tag);
        t_check(name, rc == 0 && !memcmp(l1, l2, sizeof(float) * (N - K) * V),
                "rc %d: logits after restore differ", rc);
        /* restore into the session that moved on: back to K */
        rc = q36_session_restore(s, snap, sz, &err);
        q36_session_append(s, ids + K, N - K, l2, Q36_LOGITS_ALL, &err);
        snprintf(name, sizeof name, "session.%s.restore_rewind", tag);
        t_check(name, rc == 0 && !memcmp(l1, l2, sizeof(float) * (N - K) * V), "rc %d: differ", rc);
    }

    /* errors */
    q36_err e1 = { 0 };
    int32_t bad = V;
    int pos = q36_session_pos(s);
    rc = q36_session_append(s, &bad, 1, NULL, Q36_LOGITS_NONE, &e1);
    snprintf(name, sizeof name, "session.%s.err_token", tag);
    t_check(name, rc == Q36_E_ARG && strstr(e1.msg, "vocabulary") && q36_session_pos(s) == pos,
            "rc %d: %s", rc, e1.msg);
    q36_err e2 = { 0 };
    rc = q36_session_append(s, ids, CTX, NULL, Q36_LOGITS_NONE, &e2);
    snprintf(name, sizeof name, "session.%s.err_overflow", tag);
    t_check(name, rc == Q36_E_ARG && strstr(e2.msg, "context") && q36_session_pos(s) == pos,
            "rc %d: %s", rc, e2.msg);
    q36_err e3 = { 0 };
    snap[0] ^= 0xff;
    rc = q36_session_restore(s, snap, sz, &e3);
    snap[0] ^= 0xff;
    q36_err e4 = { 0 };
    int rc4 = q36_session_restore(s, snap, sz - 1, &e4);
    snprintf(name, sizeof name, "session.%s.err_snapshot", tag);
    t_check(name, rc == Q36_E_FORMAT && rc4 == Q36_E_FORMAT && q36_session_pos(s) == pos,
            "rc %d/%d: %s | %s", rc, rc4, e3.msg, e4.msg);
    q36_err e5 = { 0 };
    rc = q36_session_snapshot(s, snap2, 8, NULL, &e5);
    snprintf(name, sizeof name, "session.%s.err_snapshot_small", tag);
    t_check(name, rc == Q36_E_ARG, "rc %d: %s", rc, e5.msg);
    q36_session_opts o = q36_session_opts_default();
    o.max_bytes = 4096;
    q36_session *sx = NULL;
    q36_err e6 = { 0 };
    rc = q36_session_new(m, 100000, &o, &sx, &e6);
    snprintf(name, sizeof name, "session.%s.err_plan", tag);
    t_check(name, rc == Q36_E_NOMEM && !sx && strstr(e6.msg, "needs") && strstr(e6.msg, "100000"),
            "rc %d: %s", rc, e6.msg);

    /* f16 K/V: runs, finite, close to f32 */
    q36_session *sh = open_session(m, CTX, 1, 512, Q36_KV_F16, tag);
    if (sh) {
        rc = q36_session_append(sh, ids, N, dec, Q36_LOGITS_ALL, &err);
        double num = 0, den = 0;
        for (int i = 0; i < N * V; i++) {
            num += (double)(dec[i] - all[i]) * (dec[i] - all[i]);
            den += (double)all[i] * all[i];
        }
        snprintf(name, sizeof name, "session.%s.kv_f16", tag);
        t_check(name, rc == 0 && isfinite(num) && sqrt(num / den) < 0.2, "rc %d rel %g", rc,
                sqrt(num / den));
        q36_session_free(sh);
    }
    /* fast mode: chunked DeltaNet for batches; one-token appends are the
     * recurrence, so decodes equal exact mode's bit for bit */
    q36_session_opts of = q36_session_opts_default();
    of.type_k = of.type_v = Q36_KV_F32;
    of.fast = 1;
    q36_session *sf = NULL;
    if (q36_session_new(m, CTX, &of, &sf, &err) == 0) {
        rc = q36_session_append(sf, ids, N, dec, Q36_LOGITS_ALL, &err);
        double num = 0, den = 0;
        for (int i = 0; i < N * V; i++) {
            num += (double)(dec[i] - all[i]) * (dec[i] - all[i]);
            den += (double)all[i] * all[i];
        }
        snprintf(name, sizeof name, "session.%s.fast_prefill", tag);
        t_check(name, rc == 0 && sqrt(num / den) < 1e-3, "rc %d rel %g", rc, sqrt(num / den));
        q36_session_reset(sf);
        rc = 0;
        for (int i = 0; i < N && !rc; i++)
            rc = q36_session_decode(sf, ids[i], dec + (size_t)i * V, &err);
        snprintf(name, sizeof name, "session.%s.fast_decode_exact", tag);
        t_check(name, rc == 0 && !memcmp(all, dec, sizeof(float) * N * V), "rc %d: differ", rc);
        q36_session_free(sf);
    } else {
        t_fail("session.fast", "%s", err.msg);
    }
    free(snap);
    free(snap2);
    q36_session_free(sb);
done:
    q36_session_free(s);
    free(all);
    free(dec);
    free(l1);
    free(l2);
    q36_model_free(m);
}

int main(void)
{
    t_synth_pair("session", 3, 4, run_model);
    return t_exit();
}
