/* engine.c: the engine of include/q36.h: one backend, the model's weights
 * bound to it once, the state tensors of every slot and the scratch, all
 * allocated at creation from the plan's table (plan.c); a forward pass
 * over a batch of rows from several slots (q36_engine_eval checks the
 * batch, writes the ids and the runs to the device, and advances each
 * slot's position); and the slots' positions and resets. The order of
 * operations of a pass is in forward.c. */
#include "forward.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t model_prof_begin(q36_engine *e)
{
    if (!e->profile)
        return 0;
    be_profile_enable(e->be, 1);   /* ops count only inside forward passes */
    return now_ns();
}

void model_prof_end(q36_engine *e, uint64_t t0, int64_t T)
{
    if (!e->profile)
        return;
    be_profile_enable(e->be, 0);
    e->prof_fwd_ns += now_ns() - t0;
    e->prof_fwd_n++;
    e->prof_tok += (uint64_t)T;
}

q36_engine_opts q36_engine_opts_default(void)
{
    q36_engine_opts o = { .n_threads = 1, .n_batch = 512, .n_slots = 1, .type_k = Q36_KV_F16,
                          .type_v = Q36_KV_F16, .max_bytes = 0, .fast = -1, .profile = 0,
                          .backend = NULL };
    return o;
}

int q36_kv_type_parse(const char *name)
{
    for (int t = Q36_KV_F32; t <= Q36_KV_Q8_0; t++)
        if (name && !strcmp(name, q36_kv_type_name(t)))
            return t;
    return -1;
}

const char *q36_kv_type_name(int type)
{
    static const char *const names[] = { "f32", "f16", "q8_0" };
    return type >= Q36_KV_F32 && type <= Q36_KV_Q8_0 ? names[type] : "?";
}

int q36_opts_fast(const q36_engine_opts *o)
{
    if (o->fast >= 0)
        return o->fast != 0;
    return o->backend && o->backend[0] && strcmp(o->backend, "cpu") != 0;
}

uint64_t q36_mem_available(void)
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

int q36_engine_plan(const q36_model *m, int n_ctx, const q36_engine_opts *opts,
                    q36_mem_plan *out, q36_err *err)
{
    q36_engine_opts o = opts ? *opts : q36_engine_opts_default();
    return model_plan(m, n_ctx, &o, out, err);
}

/* ------------------------------------------------------------- lifecycle */

static void free_item(void *ctx, const plan_item *it)
{
    q36_engine *e = ctx;
    if (it->dst) {
        be_tensor_free(e->be, *it->dst);
        *it->dst = NULL;
    }
}

void q36_engine_free(q36_engine *e)
{
    if (!e)
        return;
    if (e->be) {
        const plan_args a = { e->n_ctx, e->n_batch, e->n_slots, e->n_threads, e->type_k,
                              e->type_v, e->mtp, e->n_keep, e->fast };
        model_plan_walk(e->hp, &a, e, free_item, e);
        be_batch_free(e->be, &e->batch);
        be_batch_free(e->be, &e->row_batch);
        be_batch_free(e->be, &e->run_batch);
        for (int i = 0; e->keep_b && i < e->n_slots * e->n_keep; i++)
            be_batch_free(e->be, &e->keep_b[i]);
        for (int i = 0; e->keep_run_b && i < e->n_slots; i++)
            be_batch_free(e->be, &e->keep_run_b[i]);
        if (e->keep_lead_b.runs)
            be_batch_free(e->be, &e->keep_lead_b);
        if (e->mtp_ob.runs)
            be_batch_free(e->be, &e->mtp_ob);
    }
    be_free(e->be);
    model_mtp_free(e);
    free(e->pos);
    free(e->seq);
    free(e->rowbuf);
    free(e->mtp_pos);
    free(e->keep);
    free(e->keep_b);
    free(e->keep_run_b);
    free(e->kept_pos0);
    free(e->kept_rows);
    free(e->saves);
    free(e->save0);
    free(e->save_n);
    free(e->ban);
    free(e->ban_row);
    free(e);
}

typedef struct {
    q36_engine *e;
    bool oom;
} alloc_ctx;

static void alloc_item(void *ctx, const plan_item *it)
{
    alloc_ctx *c = ctx;
    if (!it->dst)       /* the batch's tensors: be_batch_init */
        return;
    *it->dst = be_tensor_new_type(c->e->be, it->type, it->rows, it->cols);
    if (!*it->dst)
        c->oom = true;
}

int q36_engine_new(const q36_model *m, int n_ctx, const q36_engine_opts *opts,
                   q36_engine **out, q36_err *err)
{
    *out = NULL;
    q36_engine_opts o = opts ? *opts : q36_engine_opts_default();
    q36_mem_plan plan;
    int rc = model_plan(m, n_ctx, &o, &plan, err);
    if (rc)
        return rc;
    const model_hparams *hp = q36_model_hparams(m);
    const uint64_t avail = o.max_bytes ? o.max_bytes : q36_mem_available();
    if (plan.total > avail)
        return q36_err_set(err, Q36_E_NOMEM,
                           "a context of %d tokens in %d slot(s) needs %.1f MiB (K/V %.1f MiB = "
                           "%llu B/token a slot, DeltaNet state %.1f MiB, scratch %.1f MiB) but "
                           "%.1f MiB are available", n_ctx, o.n_slots, plan.total / 1048576.0,
                           plan.kv / 1048576.0, (unsigned long long)plan.kv_per_token,
                           plan.recurrent / 1048576.0, plan.scratch / 1048576.0,
                           avail / 1048576.0);

    q36_engine *e = calloc(1, sizeof *e);
    if (!e)
        return q36_err_set(err, Q36_E_NOMEM, "out of memory");
    const char *kf = getenv("Q36_KEEP_FUSE");
    e->keep_fuse = !(kf && !strcmp(kf, "0"));
    e->m = m;
    e->hp = hp;
    e->n_ctx = n_ctx;
    e->n_batch = o.n_batch;
    e->n_slots = o.n_slots;
    e->n_threads = o.n_threads;
    e->type_k = o.type_k;
    e->type_v = o.type_v;
    e->fast = q36_opts_fast(&o);
    e->profile = o.profile != 0;
    e->mtp = o.mtp != 0;
    e->n_keep = o.n_keep;
    e->pos = calloc((size_t)o.n_slots, sizeof *e->pos);
    e->seq = calloc((size_t)o.n_slots, sizeof *e->seq);
    e->rowbuf = calloc(3 * (size_t)o.n_batch, sizeof *e->rowbuf);
    e->mtp_pos = calloc((size_t)o.n_slots, sizeof *e->mtp_pos);
    e->keep = calloc((size_t)o.n_slots, sizeof *e->keep);
    e->kept_pos0 = calloc((size_t)o.n_slots, sizeof *e->kept_pos0);
    e->kept_rows = calloc((size_t)o.n_slots, sizeof *e->kept_rows);
    e->saves = calloc(Q36_MAX_SAVES, sizeof *e->saves);
    e->save0 = calloc((size_t)o.n_slots, sizeof *e->save0);
    e->save_n = calloc((size_t)o.n_slots, sizeof *e->save_n);
    if (!e->pos || !e->seq || !e->rowbuf || !e->mtp_pos || !e->keep || !e->kept_pos0 ||
        !e->kept_rows || !e->saves || !e->save0 || !e->save_n) {
        rc = q36_err_set(err, Q36_E_NOMEM, "out of memory");
        goto fail;
    }
    if ((rc = be_new(o.backend, o.n_threads, &e->be, err)))
        goto fail;
    if ((rc = model_weights_bind(e->be, q36_model_gguf(m), hp, &e->w, err)))
        goto fail;
    if (e->mtp && (rc = model_weights_bind_mtp(e->be, q36_model_gguf(m), hp, &e->w, err)))
        goto fail;

    const plan_args a = { n_ctx, o.n_batch, o.n_slots, o.n_threads, o.type_k, o.type_v, e->mtp,
                          e->n_keep, e->fast };
    alloc_ctx ac = { e, false };
    model_plan_walk(hp, &a, e, alloc_item, &ac);
    if (ac.oom) {
        rc = q36_err_set(err, Q36_E_NOMEM, "out of memory allocating %d slots of %d tokens "
                         "(%.1f MiB planned)", o.n_slots, n_ctx, plan.total / 1048576.0);
        goto fail;
    }
    e->sc.logit_rows = be_rows_of(e->sc.logits);
    if ((rc = be_batch_init(e->be, &e->batch, o.n_batch, o.n_slots, n_ctx, err)))
        goto fail;
    /* run_batch: the runs of a pass that keeps states or saves checkpoints */
    if ((e->n_keep && (rc = be_batch_init(e->be, &e->row_batch, 1, 1, n_ctx, err))) ||
        (rc = be_batch_init(e->be, &e->run_batch, o.n_batch, 1, n_ctx, err)))
        goto fail;
    if (e->n_keep) {
        e->keep_b = calloc((size_t)o.n_slots * (size_t)e->n_keep, sizeof *e->keep_b);
        e->keep_run_b = calloc((size_t)o.n_slots, sizeof *e->keep_run_b);
        if (!e->keep_b || !e->keep_run_b) {
            rc = q36_err_set(err, Q36_E_NOMEM, "out of memory for the kept states' batches");
            goto fail;
        }
        for (int i = 0; i < o.n_slots * e->n_keep && !rc; i++)
            rc = be_batch_init(e->be, &e->keep_b[i], 1, 1, n_ctx, err);
        for (int i = 0; i < o.n_slots && !rc; i++)
            rc = be_batch_init(e->be, &e->keep_run_b[i], o.n_batch, 1, n_ctx, err);
        if (!rc)
            rc = be_batch_init(e->be, &e->keep_lead_b, o.n_batch, o.n_slots, n_ctx, err);
        if (rc)
            goto fail;
    }
    if (e->mtp && (rc = be_batch_init(e->be, &e->mtp_ob, MTP_OUT_MAX, MTP_OUT_MAX, n_ctx, err)))
        goto fail;
    const be_shape sh = model_plan_shape(hp, &a);
    if ((rc = be_reserve(e->be, &sh, err)))
        goto fail;
    *out = e;
    return 0;
fail:
    q36_engine_free(e);
    return rc;
}

int q36_engine_n_slots(const q36_engine *e) { return e->n_slots; }
int q36_engine_n_ctx(const q36_engine *e) { return (int)e->n_ctx; }
int q36_engine_n_vocab(const q36_engine *e) { return (int)e->hp->n_vocab; }
int q36_engine_n_embd(const q36_engine *e) { return (int)e->hp->n_embd; }
int q36_engine_n_batch(const q36_engine *e) { return (int)e->n_batch; }

void q36_engine_backend_stats(const q36_engine *e, q36_backend_stats *out)
{
    be_stats st;
    be_stats_get(e->be, &st);
    *out = (q36_backend_stats){ st.launches, st.graph_launches, st.graph_nodes,
                                st.graphs_recorded };
}

/* ------------------------------------------------------------------ eval */

/* Checks the batch and splits it into runs (one per slot, in batch order);
 * fills e->seq and returns their count, or a negative kind. */
static int batch_runs(const q36_engine *e, const q36_batch *b, q36_err *err)
{
    if (b->n < 1 || b->n > e->n_batch)
        return q36_err_set(err, Q36_E_ARG, "batch of %d rows is outside [1, %lld]", b->n,
                           (long long)e->n_batch);
    if (b->n_out < 0 || b->n_out > b->n)
        return q36_err_set(err, Q36_E_ARG, "%d output rows for a batch of %d", b->n_out, b->n);
    int n_seq = 0;
    for (int i = 0; i < b->n; i++) {
        const int32_t id = b->id[i], sl = b->slot[i], p = b->pos[i];
        if (id < 0 || (uint32_t)id >= e->hp->n_vocab)
            return q36_err_set(err, Q36_E_ARG, "row %d: token %d is outside the vocabulary of %u",
                               i, id, e->hp->n_vocab);
        if (sl < 0 || sl >= e->n_slots)
            return q36_err_set(err, Q36_E_ARG, "row %d: slot %d is outside [0, %d)", i, sl,
                               e->n_slots);
        if (i == 0 || sl != b->slot[i - 1]) {
            for (int s = 0; s < n_seq; s++)
                if (e->seq[s].slot == sl)
                    return q36_err_set(err, Q36_E_ARG, "row %d: the rows of slot %d are not "
                                       "consecutive in the batch", i, sl);
            if (p != e->pos[sl])
                return q36_err_set(err, Q36_E_ARG, "row %d: slot %d is at position %lld, the "
                                   "row says %d", i, sl, (long long)e->pos[sl], p);
            e->seq[n_seq++] = (be_seq){ sl, i, 0, p };
        } else if (p != b->pos[i - 1] + 1) {
            return q36_err_set(err, Q36_E_ARG, "row %d: slot %d position %d does not follow %d",
                               i, sl, p, b->pos[i - 1]);
        }
        be_seq *r = &e->seq[n_seq - 1];
        r->n_rows++;
        if (r->pos0 + r->n_rows > e->n_ctx)
            return q36_err_set(err, Q36_E_ARG, "row %d: position %d of slot %d does not fit a "
                               "context of %lld", i, p, sl, (long long)e->n_ctx);
    }
    for (int i = 0; i < b->n_out; i++)
        if (b->out[i] < 0 || b->out[i] >= b->n)
            return q36_err_set(err, Q36_E_ARG, "output row %d is outside the batch of %d",
                               b->out[i], b->n);
    return n_seq;
}

/* The pass's key for a backend that records passes (be_pass_begin): what
 * decides which ops a pass issues on which tensors and views: its rows, the
 * rows of each run (not the slots and positions: the ops read those from
 * the device), the rows asked for and what is returned; in a pass that
 * keeps per-row states, which runs keep them and their slots (the copies
 * of kept rows are views at the slot's rows; the runs' batches are set
 * before the pass, model_keep_batches), so the server's verify passes of
 * several slots are recorded too: in a steady stream every slot drafts as
 * many tokens as the last step, and the key repeats (run op by op, the
 * 4-slot verify pass of the trained model took 1.35 ms against 0.47 for a
 * recorded 1-slot one, record 2026-12-03-cuda-session18). 0 (never
 * recorded) for a pass that saves checkpoints (its pieces end at
 * positions, its batches are set inside it). */
static uint64_t pass_key(const q36_engine *e, const q36_batch *b, int n_seq, int logits,
                         bool hidden, const int32_t *hid, int n_hid)
{
    if (e->n_saves)
        return 0;
    uint64_t h = 0x9E3779B97F4A7C15u;
#define MIX(v) (h = model_key_mix(h, (uint64_t)(v)))
    MIX(b->n);
    MIX(n_seq);
    for (int s = 0; s < n_seq; s++) {
        MIX(e->seq[s].n_rows);
        if (e->n_keep_req)
            MIX(e->keep[e->seq[s].slot] ? 1 + (uint64_t)e->seq[s].slot : 0);
    }
    MIX(b->n_out);
    for (int i = 0; i < b->n_out; i++)
        MIX(b->out[i]);
    MIX(logits);        /* 0, 1: logits, 2: their argmax, 2 + k: their top k */
    MIX(hidden ? 1 : 0);
    MIX(n_hid);
    for (int i = 0; i < n_hid; i++)
        MIX(hid[i]);
    MIX(e->fast ? 1 : 0);
#undef MIX
    return h | 1;
}

int q36_engine_eval(q36_engine *e, const q36_batch *b, float *logits, float *hidden,
                    q36_err *err)
{
    return q36_engine_eval_hid(e, b, logits, NULL, -1, hidden, err);
}

enum { MAX_BAN = 64 };

int q36_engine_argmax_ban(q36_engine *e, const int32_t *ids, int n, q36_err *err)
{
    const int64_t V = q36_engine_n_vocab(e);
    if (n < 0 || n > MAX_BAN)
        return q36_err_set(err, Q36_E_ARG, "argmax ban: %d ids (at most %d)", n, MAX_BAN);
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return q36_err_set(err, Q36_E_ARG, "argmax ban: id %d is outside the vocabulary of "
                               "%lld", ids[i], (long long)V);
    if (n && !e->ban) {
        e->ban = malloc(MAX_BAN * sizeof *e->ban);
        e->ban_row = malloc((size_t)V * sizeof *e->ban_row);
        if (!e->ban || !e->ban_row) {
            free(e->ban), free(e->ban_row);
            e->ban = NULL, e->ban_row = NULL;
            return q36_err_set(err, Q36_E_NOMEM, "argmax ban: out of memory for a row of %lld "
                               "logits", (long long)V);
        }
    }
    e->n_ban = n;
    for (int i = 0; i < n; i++) {          /* sorted, for banned() */
        int j = i;
        for (; j > 0 && e->ban[j - 1] > ids[i]; j--)
            e->ban[j] = e->ban[j - 1];
        e->ban[j] = ids[i];
    }
    return 0;
}

static bool banned(const q36_engine *e, int32_t id)
{
    int lo = 0, hi = e->n_ban;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (e->ban[mid] == id)
            return true;
        if (e->ban[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* One consecutive run of at most logit_rows asked-for rows: the head runs
 * once, and row i's logits are row i of sc.logits after the pass. */
int q36_engine_argmax_ban_fits(const q36_engine *e, const q36_batch *b)
{
    bool run = b->n_out <= e->sc.logit_rows;
    for (int i = 1; i < b->n_out && run; i++)
        run = b->out[i] == b->out[0] + i;
    return run;
}

static int ban_check(const q36_engine *e, const q36_batch *b, q36_err *err)
{
    return q36_engine_argmax_ban_fits(e, b)
               ? 0 : q36_err_set(err, Q36_E_ARG, "argmax ban: a pass asking for %d rows, not one "
                                 "run of at most %lld", b->n_out, (long long)e->sc.logit_rows);
}

/* The rows whose device choice is banned, chosen again from their logits
 * as the host's greedy choice does on a row with those ids at -inf: the
 * first id of a value above every one before it (0 when none is). */
static int ban_rechoose(q36_engine *e, int n_out, int32_t *ids, q36_err *err)
{
    const int64_t V = q36_engine_n_vocab(e);
    for (int i = 0; i < n_out; i++) {
        if (!banned(e, ids[i]))
            continue;
        be_views_reset(e->be);
        be_read(e->be, be_rows(e->be, e->sc.logits, i, 1), 0, 1, e->ban_row);
        const int rc = be_check(e->be, err);
        if (rc)
            return rc;
        int32_t best = 0;
        float bv = -INFINITY;
        for (int64_t c = 0; c < V; c++)
            if (e->ban_row[c] > bv && !banned(e, (int32_t)c)) {
                bv = e->ban_row[c];
                best = (int32_t)c;
            }
        ids[i] = best;
    }
    return 0;
}

/* n_hid < 0: hidden follows b->out (q36_engine_eval) */
static int eval_hid(q36_engine *e, const q36_batch *b, float *logits, int32_t *ids,
                    const int32_t *hid, int n_hid, float *hidden, q36_err *err)
{
    const int n_seq = batch_runs(e, b, err);
    if (n_seq < 0)
        return n_seq;
    if (n_hid > b->n)
        return q36_err_set(err, Q36_E_ARG, "%d hidden rows for a batch of %d", n_hid, b->n);
    if (ids && e->n_ban && !e->topk) {
        const int rb = ban_check(e, b, err);
        if (rb)
            return rb;
    }
    for (int i = 0; i < n_hid; i++)
        if (hid[i] < 0 || hid[i] >= b->n)
            return q36_err_set(err, Q36_E_ARG, "hidden row %d is outside the batch of %d",
                               hid[i], b->n);
    be_ctx *be = e->be;
    if (e->n_saves) {
        const int rs = model_saves_check(e, n_seq, err);
        if (rs)
            return rs;
    }
    if (e->n_keep_req) {
        const int rk = model_keep_check(e, n_seq, err);
        if (rk)
            return rk;
    }
    const uint64_t t0 = model_prof_begin(e);
    be_views_reset(be);
    be_write(be, e->sc.ids, 0, b->n, b->id);
    be_batch_set(be, &e->batch, n_seq, e->seq);
    if (e->keeping && !e->n_saves)
        model_keep_batches(e, n_seq);
    be_pass_begin(be, pass_key(e, b, n_seq, logits ? 1 : ids ? 2 + e->topk : 0, hidden != NULL, hid,
                               n_hid), b->n);
    int rc = model_forward(e, b->n, b->out, b->n_out, logits, ids, n_hid < 0 ? hidden : NULL,
                           hid, n_hid < 0 ? 0 : n_hid, hidden, err);
    be_pass_end(be);
    model_prof_end(e, t0, b->n);
    model_keep_done(e, n_seq, rc == 0);
    if (e->n_saves) {
        const int rs = model_saves_done(e, rc == 0, err);
        rc = rc ? rc : rs;
    }
    if (rc)
        return rc;
    for (int s = 0; s < n_seq; s++)
        e->pos[e->seq[s].slot] += e->seq[s].n_rows;
    return ids && e->n_ban && !e->topk ? ban_rechoose(e, b->n_out, ids, err) : 0;
}

int q36_engine_eval_hid(q36_engine *e, const q36_batch *b, float *logits, const int32_t *hid,
                        int n_hid, float *hidden, q36_err *err)
{
    const int rc = eval_hid(e, b, logits, NULL, hid, n_hid, hidden, err);
    e->n_saves = 0;            /* checkpoint requests hold for one call, refused or not */
    return rc;
}

int q36_engine_eval_argmax(q36_engine *e, const q36_batch *b, int32_t *ids, float *hidden,
                           q36_err *err)
{
    if (!ids)
        return q36_err_set(err, Q36_E_ARG, "q36_engine_eval_argmax: no array for the ids");
    const int rc = eval_hid(e, b, NULL, ids, NULL, -1, hidden, err);
    e->n_saves = 0;
    return rc;
}

int q36_engine_eval_hid_argmax(q36_engine *e, const q36_batch *b, int32_t *ids,
                               const int32_t *hid, int n_hid, float *hidden, q36_err *err)
{
    if (!ids)
        return q36_err_set(err, Q36_E_ARG, "q36_engine_eval_hid_argmax: no array for the ids");
    const int rc = eval_hid(e, b, NULL, ids, hid, n_hid, hidden, err);
    e->n_saves = 0;
    return rc;
}

_Static_assert(Q36_TOPK_MAX == BE_TOPK_MAX, "the engine's top k is the backend's");

int q36_engine_eval_hid_topk(q36_engine *e, const q36_batch *b, int k, int32_t *ids, float *vals,
                             const int32_t *hid, int n_hid, float *hidden, q36_err *err)
{
    if (!ids || !vals)
        return q36_err_set(err, Q36_E_ARG, "q36_engine_eval_hid_topk: no arrays for the ids "
                           "and values");
    if (k < 1 || k > Q36_TOPK_MAX)
        return q36_err_set(err, Q36_E_ARG, "top k of %d is outside [1, %d]", k, Q36_TOPK_MAX);
    e->topk = k;
    e->topk_vals = vals;
    const int rc = eval_hid(e, b, NULL, ids, hid, n_hid, hidden, err);
    e->topk = 0;
    e->topk_vals = NULL;
    e->n_saves = 0;
    return rc;
}

/* ----------------------------------------------------------------- slots */

int q36_slot_pos(const q36_engine *e, int slot)
{
    return slot >= 0 && slot < e->n_slots ? (int)e->pos[slot] : -1;
}

void q36_slot_reset(q36_engine *e, int slot)
{
    if (slot < 0 || slot >= e->n_slots)
        return;
    const model_hparams *hp = e->hp;
    be_views_reset(e->be);
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        if (!hp->recurrent[il])
            continue;      /* K/V rows beyond pos are never read */
        const int64_t Cc = be_rows_of(e->tail[il]) / e->n_slots;
        be_zero(e->be, be_rows(e->be, e->tail[il], slot * Cc, Cc));
        be_zero(e->be, be_rows(e->be, e->S[il], (int64_t)slot * hp->ssm_dt_rank, hp->ssm_dt_rank));
    }
    e->pos[slot] = 0;
    e->mtp_pos[slot] = 0;
    if (e->n_keep)
        e->kept_rows[slot] = 0;
}
