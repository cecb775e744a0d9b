/* monitor.c: GET /monitor, one JSON snapshot of what the server is doing
 * for the page's monitor view: the model and its memory plan, the totals
 * of /metrics with the tokens of running requests counted as they are
 * generated, and every slot with its request's tokens and speeds. And the
 * list of live jobs that gives those per-slot numbers: the scheduler's
 * slot table (/slots) names each slot's job by id, and the job carries its
 * prompt length, tokens and times.
 *
 * What q36 does not have or does not run is reported as null (gpu; mtp without
 * --spec-type draft-mtp; prefix_cache when off), never as a made-up number;
 * the page shows "not available" for a null.
 */
#include "srv_internal.h"
#include "../model/model.h"

#include <stdlib.h>
#include <string.h>

/* ---- live jobs ------------------------------------------------------------------------------ */

void srv_live_add(srv *s, srv_job *j)
{
    pthread_mutex_lock(&s->live_mu);
    if (s->n_live == s->cap_live) {
        int cap = s->cap_live ? 2 * s->cap_live : 16;
        srv_job **p = realloc(s->live, (size_t)cap * sizeof *p);
        if (!p) {                       /* the monitor then lacks this job's numbers */
            pthread_mutex_unlock(&s->live_mu);
            return;
        }
        s->live = p;
        s->cap_live = cap;
    }
    srv_job_ref(j);
    s->live[s->n_live++] = j;
    pthread_mutex_unlock(&s->live_mu);
}

void srv_live_remove(srv *s, srv_job *j)
{
    pthread_mutex_lock(&s->live_mu);
    for (int i = 0; i < s->n_live; i++)
        if (s->live[i] == j) {
            s->live[i] = s->live[--s->n_live];
            pthread_mutex_unlock(&s->live_mu);
            srv_job_unref(j);
            return;
        }
    pthread_mutex_unlock(&s->live_mu);
}

/* ---- GET /monitor --------------------------------------------------------------------------- */

/* What the page shows of one job: read under its lock. */
typedef struct job_view {
    uint64_t id;
    int      n_prompt, n_gen;
    bool     done;
    double   t_submit, t_start, t_first;
} job_view;

static int live_views(srv *s, job_view **out)
{
    pthread_mutex_lock(&s->live_mu);
    int n = s->n_live;
    job_view *v = calloc((size_t)(n ? n : 1), sizeof *v);
    for (int i = 0; v && i < n; i++) {
        srv_job *j = s->live[i];
        pthread_mutex_lock(&j->mu);
        v[i] = (job_view){ j->id, j->n_prompt, j->n_gen, j->done,
                           j->t_submit, j->t_start, j->t_first };
        pthread_mutex_unlock(&j->mu);
    }
    pthread_mutex_unlock(&s->live_mu);
    *out = v;
    return v ? n : 0;
}

static cJSON *model_json(srv *s)
{
    const model_hparams *hp = q36_model_hparams(s->model);
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", s->model_id);
    cJSON_AddStringToObject(m, "path", s->o.model_path);
    cJSON_AddStringToObject(m, "arch", hp->arch_name);
    cJSON_AddNumberToObject(m, "n_params", (double)q36_model_n_params(s->model));
    cJSON_AddNumberToObject(m, "n_bytes", (double)q36_model_n_bytes(s->model));
    cJSON_AddNumberToObject(m, "n_layer", hp->n_layer);
    cJSON_AddNumberToObject(m, "n_attn_layers", hp->n_attn_layers);
    cJSON_AddNumberToObject(m, "n_embd", hp->n_embd);
    cJSON_AddNumberToObject(m, "n_vocab", hp->n_vocab);
    cJSON_AddNumberToObject(m, "n_expert", hp->n_expert);
    cJSON_AddNumberToObject(m, "n_expert_used", hp->n_expert_used);
    cJSON_AddNumberToObject(m, "n_nextn", hp->n_nextn);
    cJSON_AddNumberToObject(m, "n_ctx_train", hp->n_ctx_train);
    return m;
}

/* The plan of one slot's session (q36_session_plan: the scheduler runs one
 * session per slot, each with its own scratch) and the whole server's.
 * When the slots become one engine's, this is q36_engine_plan with
 * n_slots, whose scratch is shared. */
static cJSON *memory_json(srv *s, int n_slots)
{
    q36_mem_plan p;
    q36_err err = { 0 };
    cJSON *m = cJSON_CreateObject();
    if (q36_session_plan(s->model, s->n_ctx, &s->o.sess, &p, &err)) {
        cJSON_AddStringToObject(m, "error", err.msg);
        return m;
    }
    cJSON_AddNumberToObject(m, "weights", (double)p.weights);
    cJSON_AddNumberToObject(m, "kv_per_slot", (double)p.kv);
    cJSON_AddNumberToObject(m, "kv_per_token", (double)p.kv_per_token);
    cJSON_AddNumberToObject(m, "recurrent_per_slot", (double)p.recurrent);
    cJSON_AddNumberToObject(m, "scratch_per_slot", (double)p.scratch);
    cJSON_AddNumberToObject(m, "per_slot", (double)p.total);
    cJSON_AddNumberToObject(m, "slots_total", (double)p.total * n_slots);
    return m;
}

int route_monitor(srv_conn *c)
{
    srv *s = c->s;
    double now = srv_now();
    srv_metrics m;
    pthread_mutex_lock(&s->met.mu);
    m = s->met;
    pthread_mutex_unlock(&s->met.mu);
    job_view *jv = NULL;
    int n_jv = live_views(s, &jv);
    int n_slots = sched_n_slots(s->sched);

    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "time", now);
    cJSON_AddNumberToObject(r, "uptime", now - s->t_start);
    cJSON_AddItemToObject(r, "model", model_json(s));
    cJSON *sv = cJSON_AddObjectToObject(r, "server");
    cJSON_AddNumberToObject(sv, "n_slots", n_slots);
    cJSON_AddNumberToObject(sv, "n_ctx", s->n_ctx);
    cJSON_AddNumberToObject(sv, "n_threads", s->o.sess.n_threads);
    cJSON_AddStringToObject(sv, "backend", s->o.sess.backend ? s->o.sess.backend : "cpu");
    cJSON_AddBoolToObject(sv, "api_key", s->api_key != NULL);
    cJSON_AddItemToObject(r, "memory", memory_json(s, n_slots));

    /* Generated tokens as of now: the finished requests' (the metrics
     * counter) plus what the running ones have so far, so that a plot of
     * its rate moves while a long reply streams. A job that ends between
     * the two reads is missed for one snapshot; the page keeps the
     * counter monotonic. */
    uint64_t gen_live = m.tokens_predicted;
    for (int i = 0; i < n_jv; i++)
        if (!jv[i].done)
            gen_live += (uint64_t)jv[i].n_gen;
    cJSON *t = cJSON_AddObjectToObject(r, "totals");
    cJSON_AddNumberToObject(t, "prompt_tokens", (double)m.prompt_tokens);
    cJSON_AddNumberToObject(t, "prompt_seconds", m.prompt_seconds);
    cJSON_AddNumberToObject(t, "tokens_predicted", (double)gen_live);
    cJSON_AddNumberToObject(t, "predicted_seconds", m.predicted_seconds);
    cJSON_AddNumberToObject(t, "n_decode", (double)m.n_decode);
    cJSON_AddNumberToObject(t, "step_seconds", m.step_seconds);
    cJSON_AddNumberToObject(t, "forward_seconds", m.forward_seconds);
    cJSON_AddNumberToObject(t, "draft_seconds", m.draft_seconds);
    cJSON_AddNumberToObject(t, "accept_seconds", m.accept_seconds);
    cJSON_AddNumberToObject(t, "device_launches", (double)m.dev_launches);
    cJSON_AddNumberToObject(t, "device_graph_launches", (double)m.dev_graph_launches);
    cJSON_AddNumberToObject(t, "device_graphs_recorded", (double)m.dev_graphs_recorded);
    cJSON_AddNumberToObject(t, "requests", (double)m.requests);
    cJSON_AddNumberToObject(t, "errors", (double)m.errors);
    cJSON_AddNumberToObject(t, "cancelled", (double)m.cancelled);
    cJSON_AddNumberToObject(t, "processing", m.processing);
    cJSON_AddNumberToObject(t, "deferred", m.deferred);

    cJSON *slots = sched_slots_json(s->sched);
    cJSON *sl;
    cJSON_ArrayForEach(sl, slots) {
        const cJSON *task = cJSON_GetObjectItemCaseSensitive(sl, "id_task");
        const job_view *v = NULL;
        for (int i = 0; task && task->valuedouble >= 0 && i < n_jv; i++)
            if ((double)jv[i].id == task->valuedouble)
                v = &jv[i];
        if (!v || v->t_start <= 0)
            continue;
        cJSON_AddNumberToObject(sl, "n_prompt", v->n_prompt);
        cJSON_AddNumberToObject(sl, "n_gen", v->n_gen);
        cJSON_AddNumberToObject(sl, "seconds", now - v->t_start);
        cJSON_AddNumberToObject(sl, "queued_seconds", v->t_start - v->t_submit);
        if (v->t_first > v->t_start)
            cJSON_AddNumberToObject(sl, "prefill_tps", v->n_prompt / (v->t_first - v->t_start));
        if (v->n_gen > 1 && now > v->t_first)
            cJSON_AddNumberToObject(sl, "decode_tps", (v->n_gen - 1) / (now - v->t_first));
    }
    cJSON_AddItemToObject(r, "slots", slots);
    free(jv);

    /* The prefix cache as /metrics reports it; null when it is off (--cache-ram 0).
     * Not measured by q36 yet: null until the server reports them. */
    if (s->o.cache_mib > 0) {
        cJSON *pc = cJSON_AddObjectToObject(r, "prefix_cache");
        cJSON_AddNumberToObject(pc, "bytes", (double)m.cache_bytes);
        cJSON_AddNumberToObject(pc, "budget_bytes", (double)((uint64_t)s->o.cache_mib << 20));
        cJSON_AddNumberToObject(pc, "checkpoints", m.cache_ckpts);
        cJSON_AddNumberToObject(pc, "lookups", (double)m.cache_lookups);
        cJSON_AddNumberToObject(pc, "hits", (double)m.cache_hits);
        cJSON_AddNumberToObject(pc, "tokens_reused", (double)m.prompt_tokens_cached);
        cJSON_AddNumberToObject(pc, "evictions", (double)m.cache_evictions);
        cJSON_AddNumberToObject(pc, "thinned", (double)m.cache_thinned);
    } else {
        cJSON_AddNullToObject(r, "prefix_cache");
    }
    cJSON *mtp = sched_spec_json(s->sched);     /* null without --spec-type draft-mtp */
    if (mtp)
        cJSON_AddItemToObject(r, "mtp", mtp);
    else
        cJSON_AddNullToObject(r, "mtp");
    cJSON_AddNullToObject(r, "gpu");
    return srv_reply_json(c, 200, r);
}
