/* routes_util.c: the routes around generation: GET /health, GET /slots,
 * POST /tokenize, /detokenize, /apply-template (llama-server's shapes), and
 * GET /metrics in Prometheus text with llama-server's metric names where they
 * mean the same thing.
 */
#include "srv_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int route_health(srv_conn *c)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "status", "ok");
    return srv_reply_json(c, 200, r);
}

int route_slots(srv_conn *c)
{
    return srv_reply_json(c, 200, sched_slots_json(c->s->sched));
}

int route_metrics(srv_conn *c)
{
    srv *s = c->s;
    srv_metrics m;
    pthread_mutex_lock(&s->met.mu);
    m = s->met;
    pthread_mutex_unlock(&s->met.mu);
    q36_buf b = { 0 };
    static const char *const P = "llamacpp:";
#define COUNTER(name, help, v) \
    srv_buf_fmt(&b, "# HELP %s%s %s\n# TYPE %s%s counter\n%s%s %.17g\n", P, name, help, P, name, P, name, (double)(v))
#define GAUGE(name, help, v) \
    srv_buf_fmt(&b, "# HELP %s%s %s\n# TYPE %s%s gauge\n%s%s %.17g\n", P, name, help, P, name, P, name, (double)(v))
    COUNTER("prompt_tokens_total", "Number of prompt tokens processed.", m.prompt_tokens);
    COUNTER("prompt_tokens_cached_total", "Number of prompt tokens restored from the prefix cache.",
            m.prompt_tokens_cached);
    COUNTER("prompt_seconds_total", "Prompt process time", m.prompt_seconds);
    COUNTER("tokens_predicted_total", "Number of generation tokens processed.", m.tokens_predicted);
    COUNTER("tokens_predicted_seconds_total", "Predict process time", m.predicted_seconds);
    COUNTER("n_decode_total", "Total number of llama_decode() calls", m.n_decode);
    GAUGE("prompt_tokens_seconds", "Average prompt throughput in tokens/s.",
          m.prompt_seconds > 0 ? m.prompt_tokens / m.prompt_seconds : 0);
    GAUGE("predicted_tokens_seconds", "Average generation throughput in tokens/s.",
          m.predicted_seconds > 0 ? m.tokens_predicted / m.predicted_seconds : 0);
    GAUGE("requests_processing", "Number of requests processing.", m.processing);
    GAUGE("requests_deferred", "Number of requests deferred.", m.deferred);
    GAUGE("n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call",
          m.busy_slots_last);
#undef COUNTER
#undef GAUGE
#define Q36M(name, type, help, v) \
    srv_buf_fmt(&b, "# HELP q36:%s %s\n# TYPE q36:%s %s\nq36:%s %llu\n", name, help, name, type, name, \
                (unsigned long long)(v))
    Q36M("requests_total", "counter", "Generation requests queued.", m.requests);
#define Q36F(name, help, v) \
    srv_buf_fmt(&b, "# HELP q36:%s %s\n# TYPE q36:%s counter\nq36:%s %.17g\n", name, help, name, name, (double)(v))
    Q36F("step_seconds_total", "Engine thread: wall time of its steps (forward passes, drafts, host work).",
         m.step_seconds);
    Q36F("forward_seconds_total", "Engine thread: time in forward passes.", m.forward_seconds);
    Q36F("draft_seconds_total", "Engine thread: time in MTP draft passes.", m.draft_seconds);
    Q36F("accept_seconds_total", "Engine thread: time accepting MTP verify rows (sampling, rollback).",
         m.accept_seconds);
#undef Q36F
    Q36M("output_rows_ids_total", "counter", "Output rows returned as one id (greedy, chosen on the device).",
         m.rows_ids);
    Q36M("output_rows_topk_total", "counter", "Output rows returned as their best logits (top_k sampling).",
         m.rows_top);
    Q36M("output_rows_logits_total", "counter", "Output rows returned as all their logits.", m.rows_full);
    Q36M("errors_total", "counter", "Requests answered with an error.", m.errors);
    Q36M("cancelled_total", "counter", "Requests whose client left before the end.", m.cancelled);
    Q36M("prefix_cache_bytes", "gauge", "Bytes the prefix cache holds (checkpoints and tree).", m.cache_bytes);
    Q36M("prefix_cache_budget_bytes", "gauge", "The prefix cache's budget (--cache-ram).", m.cache_budget);
    Q36M("prefix_cache_checkpoints", "gauge", "Checkpoints the prefix cache holds.", m.cache_ckpts);
    Q36M("prefix_cache_saves_total", "counter", "Checkpoints saved into the prefix cache.", m.cache_saves);
    Q36M("prefix_cache_evictions_total", "counter", "Checkpoints evicted with their branch for room.", m.cache_evictions);
    Q36M("prefix_cache_thinned_total", "counter", "State checkpoints dropped for room, their branch kept.",
         m.cache_thinned);
    Q36M("prefix_cache_hits_total", "counter", "Requests that restored a cached prefix.", m.cache_hits);
    Q36M("prefix_cache_lookups_total", "counter", "Requests that looked in the prefix cache.", m.cache_lookups);
#undef Q36M
    int rc = b.oom ? srv_reply_text(c, 500, "text/plain", "out of memory\n", 14)
                   : srv_reply_text(c, 200, "text/plain; version=0.0.4", b.p ? b.p : "", b.n);
    q36_buf_free(&b);
    return rc;
}

int route_tokenize(srv_conn *c)
{
    srv_error e = { 0 };
    cJSON *body = rq_parse(&e, c->body.p, c->body.n);
    const cJSON *content = rq_get(&e, body, "", "content", RQ_STR, true);
    bool special = true, pieces = false;
    rq_bool(&e, body, "", "parse_special", &special);
    rq_bool(&e, body, "", "with_pieces", &pieces);
    int32_t *ids = NULL;
    size_t n = 0;
    q36_err err = { 0 };
    if (!e.status && tok_encode(c->s->tok, content->valuestring, strlen(content->valuestring), special, &ids,
                                &n, &err))
        srv_fail(&e, 500, "server_error", "", "tokenizing failed: %s", err.msg);
    cJSON_Delete(body);
    if (e.status)
        return srv_reply_error(c, &e);
    cJSON *r = cJSON_CreateObject(), *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) {
        if (!pieces) {
            cJSON_AddItemToArray(a, cJSON_CreateNumber(ids[i]));
            continue;
        }
        size_t pl;
        const char *p = tok_piece(c->s->tok, ids[i], true, &pl);
        char *z = strndup(p ? p : "", p ? pl : 0);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "id", ids[i]);
        cJSON_AddStringToObject(o, "piece", z ? z : "");
        free(z);
        cJSON_AddItemToArray(a, o);
    }
    free(ids);
    cJSON_AddItemToObject(r, "tokens", a);
    return srv_reply_json(c, 200, r);
}

int route_detokenize(srv_conn *c)
{
    srv_error e = { 0 };
    cJSON *body = rq_parse(&e, c->body.p, c->body.n);
    const cJSON *toks = rq_get(&e, body, "", "tokens", RQ_ARR, true);
    int n = cJSON_GetArraySize(toks), i = 0;
    int32_t *ids = malloc((size_t)(n ? n : 1) * sizeof *ids);
    const cJSON *t;
    cJSON_ArrayForEach(t, toks) {
        if (!cJSON_IsNumber(t) || t->valuedouble < 0 || t->valuedouble >= tok_n_vocab(c->s->tok) ||
            t->valuedouble != (int)t->valuedouble) {
            srv_fail(&e, 400, "invalid_request_error", "tokens",
                     "'tokens[%d]': expected a token id in [0, %d), found %s", i, tok_n_vocab(c->s->tok),
                     rq_type_name(t));
            break;
        }
        if (ids)
            ids[i] = (int32_t)t->valuedouble;
        i++;
    }
    char *text = NULL;
    size_t len = 0;
    q36_err err = { 0 };
    if (!e.status && (!ids || tok_decode(c->s->tok, ids, (size_t)n, true, &text, &len, &err)))
        srv_fail(&e, 500, "server_error", "", "detokenizing failed: %s", err.msg);
    free(ids);
    cJSON_Delete(body);
    if (e.status) {
        free(text);
        return srv_reply_error(c, &e);
    }
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "content", text ? text : "");
    free(text);
    return srv_reply_json(c, 200, r);
}

int route_apply_template(srv_conn *c)
{
    srv_error e = { 0 };
    cJSON *body = rq_parse(&e, c->body.p, c->body.n);
    srv_prompt p = { 0 };
    if (body) {
        srv_prompt_openai(&e, body, &p);
        srv_prompt_render(&e, NULL, &p);
    }
    cJSON_Delete(body);
    if (e.status) {
        srv_prompt_free(&p);
        return srv_reply_error(c, &e);
    }
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "prompt", p.text ? p.text : "");
    srv_prompt_free(&p);
    return srv_reply_json(c, 200, r);
}
