/* gen_req.c: the request fields every generating route shares (sampling,
 * stop strings, the token limit, the model name) and the context check.
 * Defaults are llama.cpp's (smp_defaults) where the request says nothing.
 */
#include "srv_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void srv_check_model(srv_error *e, srv *s, const cJSON *body, bool required)
{
    const cJSON *m = rq_get(e, body, "", "model", RQ_STR, required);
    if (!m)
        return;
    const char *v = m->valuestring;
    if (!strcmp(v, s->model_id) || !strcmp(v, s->o.model_path))
        return;
    for (int i = 0; i < s->o.n_aliases; i++)
        if (!strcmp(v, s->o.aliases[i]) || !strcmp(s->o.aliases[i], "*"))
            return;                            /* "*": any name (clients that send their own) */
    srv_fail(e, 404, "not_found_error", "model",
             "'model': '%.120s' is not served here; this server serves '%s' (GET /v1/models; add names with --alias)",
             v, s->model_id);
}

static void stops(srv_error *e, const cJSON *v, const char *key, srv_job *j)
{
    if (cJSON_IsString(v)) {
        if (!v->valuestring[0])
            return;
        j->stop_store[0] = strdup(v->valuestring);
        j->gp.stop[0] = j->stop_store[0];
        j->gp.n_stop = 1;
        return;
    }
    int n = cJSON_GetArraySize(v);
    if (n > GEN_MAX_STOP) {
        srv_fail(e, 400, "invalid_request_error", key, "'%s': expected at most %d strings, found %d", key,
                 GEN_MAX_STOP, n);
        return;
    }
    const cJSON *s;
    int i = 0;
    cJSON_ArrayForEach(s, v) {
        if (!cJSON_IsString(s)) {
            srv_fail(e, 400, "invalid_request_error", key, "'%s[%d]': expected a string, found %s", key, i,
                     rq_type_name(s));
            return;
        }
        if (strlen(s->valuestring) > GEN_MAX_STOP_LEN) {
            srv_fail(e, 400, "invalid_request_error", key, "'%s[%d]': expected at most %d bytes, found %zu", key,
                     i, GEN_MAX_STOP_LEN, strlen(s->valuestring));
            return;
        }
        if (!s->valuestring[0])
            continue;
        j->stop_store[j->gp.n_stop] = strdup(s->valuestring);
        j->gp.stop[j->gp.n_stop] = j->stop_store[j->gp.n_stop];
        j->gp.n_stop++;
        i++;
    }
}

void srv_gen_fields(srv_error *e, srv *s, const cJSON *body, srv_job *j, enum srv_flavour f)
{
    smp_params *sp = &j->gp.smp;
    double d;
    d = sp->temp;
    rq_num(e, body, "", "temperature", 0, 100, &d);
    sp->temp = (float)d;
    d = sp->top_p;
    rq_num(e, body, "", "top_p", 0, 1, &d);
    sp->top_p = (float)d;
    d = sp->min_p;
    rq_num(e, body, "", "min_p", 0, 1, &d);
    sp->min_p = (float)d;
    rq_int(e, body, "", "top_k", 0, 1 << 24, &sp->top_k);
    d = sp->presence_penalty;
    rq_num(e, body, "", "presence_penalty", -2, 2, &d);
    sp->presence_penalty = (float)d;
    d = sp->frequency_penalty;
    rq_num(e, body, "", "frequency_penalty", -2, 2, &d);
    sp->frequency_penalty = (float)d;
    d = sp->repeat_penalty;
    rq_num(e, body, "", "repeat_penalty", 0.01, 100, &d);
    sp->repeat_penalty = (float)d;
    d = -1;
    rq_num(e, body, "", "seed", -9.3e18, 9.3e18, &d);
    if (d >= 0)
        sp->seed = (uint32_t)(unsigned long long)d;
    else if (d != -1)
        sp->seed = (uint32_t)(long long)d;

    rq_bool(e, body, "", "ignore_eos", &j->gp.ignore_eos);

    int n_predict = -1;
    if (f == SRV_ANTHROPIC) {
        rq_int(e, body, "", "max_tokens", 1, 1 << 30, &n_predict);
        if (!rq_get(e, body, "", "max_tokens", RQ_NUM, true))
            return;
        const cJSON *st = rq_get(e, body, "", "stop_sequences", RQ_ARR, false);
        if (st)
            stops(e, st, "stop_sequences", j);
    } else {
        rq_int(e, body, "", "max_tokens", -1, 1 << 30, &n_predict);
        rq_int(e, body, "", "max_completion_tokens", -1, 1 << 30, &n_predict);
        rq_int(e, body, "", "n_predict", -1, 1 << 30, &n_predict);
        if (n_predict == 0)
            srv_fail(e, 400, "invalid_request_error", "max_tokens",
                     "'max_tokens': expected at least 1 (or -1: up to the context), found 0");
        const cJSON *st = rq_get(e, body, "", "stop", RQ_STR | RQ_ARR | RQ_NULL, false);
        if (st && !cJSON_IsNull(st))
            stops(e, st, "stop", j);
        int n = 1;
        rq_int(e, body, "", "n", 1, 1 << 20, &n);
        if (n != 1)
            srv_fail(e, 400, "invalid_request_error", "n", "'n': only 1 choice per request is supported, found %d", n);
        bool lp = false;
        rq_bool(e, body, "", "logprobs", &lp);
        int top = 0;
        rq_int(e, body, "", "top_logprobs", 0, GEN_MAX_PROBS, &top);
        if (rq_get(e, body, "", "top_logprobs", RQ_NUM, false) && !lp)
            srv_fail(e, 400, "invalid_request_error", "top_logprobs", "'top_logprobs': needs 'logprobs': true");
        j->gp.n_probs = lp ? top : -1;
    }
    j->gp.n_predict = n_predict;
    if (s->o.max_tokens > 0 && (j->gp.n_predict < 0 || j->gp.n_predict > s->o.max_tokens))
        j->gp.n_predict = s->o.max_tokens;
}

void srv_single_call(srv_job *j, const srv_prompt *p)
{
    if (!p->single_call || !p->parse_tools || j->gp.n_stop >= GEN_MAX_STOP)
        return;
    j->call_stop = j->gp.n_stop;
    j->gp.stop[j->gp.n_stop++] = "</tool_call>";     /* a literal: nothing to free */
}

void srv_fit_context(srv_error *e, srv *s, srv_job *j)
{
    if (e->status)
        return;
    if (j->n_prompt < 1) {
        srv_fail(e, 400, "invalid_request_error", "", "the prompt is empty");
        return;
    }
    if (j->n_prompt >= s->n_ctx) {
        srv_fail(e, 400, "exceed_context_size_error", "",
                 "prompt is too long: %d tokens > %d maximum (the context of one slot; q36 serve -c)",
                 j->n_prompt, s->n_ctx - 1);
        e->n_prompt = j->n_prompt;
        e->n_ctx = s->n_ctx;
        return;
    }
    int room = s->n_ctx - j->n_prompt;
    if (j->gp.n_predict < 0 || j->gp.n_predict > room)
        j->gp.n_predict = room;
}
