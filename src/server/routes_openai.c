/* routes_openai.c: the OpenAI routes: POST /v1/chat/completions (streamed
 * and not), POST /v1/completions, GET /v1/models.
 *
 * A chat reply goes through the output parser (chat_stream.h) on the HTTP
 * thread: its events become `reasoning_content`, `content` and `tool_calls`
 * deltas in the order the model wrote them, or are gathered into one
 * message. The stream follows what the `openai` SDK checks: a first chunk
 * with the role, a tool call's id, type and name in its first delta, a final
 * chunk with finish_reason, an optional usage chunk with no choices, then
 * `data: [DONE]`. A slot that fails mid-stream sends `data: {"error":...}`
 * and ends the stream without [DONE].
 */
#include "srv_internal.h"
#include "../model/model.h"
#include "../chat/chat_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct oa_call {
    char    id[48];
    char   *name;
    q36_buf args;
} oa_call;

typedef struct oa {
    srv        *s;
    srv_job    *job;
    srv_prompt  pr;
    chat_stream *cs;
    bool        chat;             /* chat.completion; false: text_completion */
    bool        stream, include_usage, logprobs;
    char        id[64];
    long        created;
    srv_take    take;
    bool        role_sent, prefix_done;
    /* the whole message, for a reply that is not streamed */
    q36_buf     content, reasoning;
    oa_call    *calls;
    int         n_calls;
    cJSON      *lp;               /* logprobs.content entries */
    q36_buf    *out;              /* the stream's bytes during a fill */
} oa;

static void oa_free(void *p)
{
    oa *a = p;
    if (!a)
        return;
    srv_prompt_free(&a->pr);
    chat_stream_free(a->cs);
    srv_take_free(&a->take);
    q36_buf_free(&a->content);
    q36_buf_free(&a->reasoning);
    for (int i = 0; i < a->n_calls; i++) {
        free(a->calls[i].name);
        q36_buf_free(&a->calls[i].args);
    }
    free(a->calls);
    cJSON_Delete(a->lp);
    free(a);
}

/* ---- chunks -------------------------------------------------------------------------------- */

static cJSON *chunk(oa *a, cJSON *delta, const char *finish)
{
    cJSON *c = cJSON_CreateObject(), *choices = cJSON_CreateArray(), *ch = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "id", a->id);
    cJSON_AddStringToObject(c, "object", a->chat ? "chat.completion.chunk" : "text_completion");
    cJSON_AddNumberToObject(c, "created", (double)a->created);
    cJSON_AddStringToObject(c, "model", a->s->model_id);
    cJSON_AddNumberToObject(ch, "index", 0);
    if (a->chat)
        cJSON_AddItemToObject(ch, "delta", delta);
    else {
        cJSON *t = cJSON_DetachItemFromObject(delta, "content");
        cJSON_AddItemToObject(ch, "text", t ? t : cJSON_CreateString(""));
        cJSON_Delete(delta);
    }
    cJSON_AddNullToObject(ch, "logprobs");
    if (finish)
        cJSON_AddStringToObject(ch, "finish_reason", finish);
    else
        cJSON_AddNullToObject(ch, "finish_reason");
    cJSON_AddItemToArray(choices, ch);
    cJSON_AddItemToObject(c, "choices", choices);
    return c;
}

static void role_chunk(oa *a)
{
    if (a->role_sent || !a->chat)
        return;
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "role", "assistant");
    cJSON_AddNullToObject(d, "content");
    sse_data(a->out, chunk(a, d, NULL));
    a->role_sent = true;
}

static void on_event(void *user, const chat_ev *ev)
{
    oa *a = user;
    if (!a->stream) {
        switch (ev->kind) {
        case CHAT_EV_REASONING: q36_buf_add(&a->reasoning, ev->text, ev->len); break;
        case CHAT_EV_CONTENT:   q36_buf_add(&a->content, ev->text, ev->len); break;
        case CHAT_EV_TOOL_BEGIN: {
            oa_call *c = realloc(a->calls, (size_t)(a->n_calls + 1) * sizeof *c);
            if (!c)
                return;
            a->calls = c;
            c = &a->calls[a->n_calls++];
            memset(c, 0, sizeof *c);
            srv_make_id(a->s, "call_", c->id, sizeof c->id);
            c->name = strndup(ev->text, ev->len);
            break;
        }
        case CHAT_EV_TOOL_ARGS:
            if (ev->tool >= 0 && ev->tool < a->n_calls)
                q36_buf_add(&a->calls[ev->tool].args, ev->text, ev->len);
            break;
        case CHAT_EV_TOOL_END:
            break;
        }
        return;
    }
    role_chunk(a);
    cJSON *d = cJSON_CreateObject();
    if (ev->kind == CHAT_EV_REASONING) {
        cJSON_AddItemToObject(d, "reasoning_content", srv_json_str_n(ev->text, ev->len));
    } else if (ev->kind == CHAT_EV_CONTENT) {
        cJSON_AddItemToObject(d, "content", srv_json_str_n(ev->text, ev->len));
    } else if (ev->kind == CHAT_EV_TOOL_BEGIN || ev->kind == CHAT_EV_TOOL_ARGS) {
        cJSON *calls = cJSON_CreateArray(), *c = cJSON_CreateObject(), *f = cJSON_CreateObject();
        cJSON_AddNumberToObject(c, "index", ev->tool);
        if (ev->kind == CHAT_EV_TOOL_BEGIN) {
            char id[48];
            srv_make_id(a->s, "call_", id, sizeof id);
            cJSON_AddStringToObject(c, "id", id);
            cJSON_AddStringToObject(c, "type", "function");
            cJSON_AddItemToObject(f, "name", srv_json_str_n(ev->text, ev->len));
            cJSON_AddStringToObject(f, "arguments", "");
        } else {
            cJSON_AddItemToObject(f, "arguments", srv_json_str_n(ev->text, ev->len));
        }
        cJSON_AddItemToObject(c, "function", f);
        cJSON_AddItemToArray(calls, c);
        cJSON_AddItemToObject(d, "tool_calls", calls);
    } else {
        cJSON_Delete(d);
        return;
    }
    sse_data(a->out, chunk(a, d, NULL));
}

/* Log-probability entries of new tokens. */
static cJSON *lp_entries(oa *a)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < a->take.n_toks; i++) {
        const srv_tok *t = &a->take.toks[i];
        cJSON *e = cJSON_CreateObject(), *tops = cJSON_CreateArray();
        size_t n;
        const char *p = tok_piece(a->s->tok, t->id, true, &n);
        cJSON_AddItemToObject(e, "token", srv_json_str_n(p ? p : "", p ? n : 0));
        cJSON_AddNumberToObject(e, "logprob", t->logprob);
        cJSON_AddNumberToObject(e, "id", t->id);
        for (int k = 0; k < t->n_top; k++) {
            cJSON *o = cJSON_CreateObject();
            const char *q = tok_piece(a->s->tok, t->top[k].id, true, &n);
            cJSON_AddItemToObject(o, "token", srv_json_str_n(q ? q : "", q ? n : 0));
            cJSON_AddNumberToObject(o, "logprob", t->top[k].logprob);
            cJSON_AddNumberToObject(o, "id", t->top[k].id);
            cJSON_AddItemToArray(tops, o);
        }
        cJSON_AddItemToObject(e, "top_logprobs", tops);
        cJSON_AddItemToArray(arr, e);
    }
    return arr;
}

static const char *finish_reason(oa *a)
{
    if (a->take.stop == GEN_STOP_LENGTH || a->take.stop == GEN_STOP_CTX)
        return "length";
    if (a->chat && chat_stream_n_calls(a->cs) > 0)
        return "tool_calls";
    return "stop";
}

static cJSON *usage(oa *a)
{
    cJSON *u = cJSON_CreateObject(), *d = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", a->job->n_prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", a->take.n_gen);
    cJSON_AddNumberToObject(u, "total_tokens", a->job->n_prompt + a->take.n_gen);
    cJSON_AddNumberToObject(d, "cached_tokens", a->take.n_cached);
    cJSON_AddItemToObject(u, "prompt_tokens_details", d);
    return u;
}

/* llama-server's timings: the prompt tokens read from the prefix cache
 * (cache_n) and those evaluated (prompt_n), with their times. */
static cJSON *timings(oa *a)
{
    cJSON *t = cJSON_CreateObject();
    const double pn = a->job->n_prompt - a->take.n_cached, pms = a->take.t_prompt * 1e3;
    const double gms = a->take.t_gen * 1e3;
    cJSON_AddNumberToObject(t, "cache_n", a->take.n_cached);
    cJSON_AddNumberToObject(t, "prompt_n", pn);
    cJSON_AddNumberToObject(t, "prompt_ms", pms);
    cJSON_AddNumberToObject(t, "prompt_per_second", pms > 0 ? pn / (pms / 1e3) : 0);
    cJSON_AddNumberToObject(t, "predicted_n", a->take.n_gen);
    cJSON_AddNumberToObject(t, "predicted_ms", gms);
    cJSON_AddNumberToObject(t, "predicted_per_second", gms > 0 ? a->take.n_gen / (gms / 1e3) : 0);
    return t;
}

/* Feeds new text to the parser (chat) or straight out (completions). */
static void feed(oa *a)
{
    if (a->chat && !a->prefix_done) {
        a->prefix_done = true;
        if (a->pr.prefix[0])
            chat_stream_push(a->cs, a->pr.prefix, strlen(a->pr.prefix), on_event, a);
    }
    if (!a->take.text.n)
        return;
    if (a->chat) {
        chat_stream_push(a->cs, a->take.text.p, a->take.text.n, on_event, a);
    } else if (a->stream) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddItemToObject(d, "content", srv_json_str_n(a->take.text.p, a->take.text.n));
        sse_data(a->out, chunk(a, d, NULL));
    } else {
        q36_buf_add(&a->content, a->take.text.p, a->take.text.n);
    }
}

static bool fill(srv_conn *c, q36_buf *out)
{
    oa *a = c->state;
    a->out = out;
    if (!a->role_sent)
        role_chunk(a);
    if (!srv_job_take(a->job, &a->take))
        return true;
    if (a->take.fail.status) {
        sse_data(out, srv_error_json(&a->take.fail, SRV_OPENAI));
        return true;
    }
    feed(a);
    if (a->logprobs && a->take.n_toks) {
        cJSON *d = cJSON_CreateObject(), *ch = chunk(a, d, NULL), *lp = cJSON_CreateObject();
        cJSON_AddItemToObject(lp, "content", lp_entries(a));
        cJSON *choice = cJSON_GetArrayItem(cJSON_GetObjectItem(ch, "choices"), 0);
        cJSON_ReplaceItemInObject(choice, "logprobs", lp);
        sse_data(out, ch);
    }
    if (!a->take.done)
        return false;
    if (a->chat)
        chat_stream_finish(a->cs, on_event, a);
    sse_data(out, chunk(a, cJSON_CreateObject(), finish_reason(a)));
    if (a->include_usage) {
        cJSON *u = chunk(a, cJSON_CreateObject(), NULL);
        cJSON_ReplaceItemInObject(u, "choices", cJSON_CreateArray());
        cJSON_AddItemToObject(u, "usage", usage(a));
        cJSON_AddItemToObject(u, "timings", timings(a));
        sse_data(out, u);
    }
    q36_buf_str(out, "data: [DONE]\n\n");
    return true;
}

static cJSON *whole_reply(oa *a)
{
    cJSON *r = cJSON_CreateObject(), *choices = cJSON_CreateArray(), *ch = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "id", a->id);
    cJSON_AddStringToObject(r, "object", a->chat ? "chat.completion" : "text_completion");
    cJSON_AddNumberToObject(r, "created", (double)a->created);
    cJSON_AddStringToObject(r, "model", a->s->model_id);
    cJSON_AddNumberToObject(ch, "index", 0);
    if (a->chat) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "assistant");
        if (a->content.n || !a->n_calls)
            cJSON_AddStringToObject(m, "content", a->content.p ? a->content.p : "");
        else
            cJSON_AddNullToObject(m, "content");
        if (a->reasoning.n)
            cJSON_AddStringToObject(m, "reasoning_content", a->reasoning.p);
        if (a->n_calls) {
            cJSON *calls = cJSON_CreateArray();
            for (int i = 0; i < a->n_calls; i++) {
                cJSON *c = cJSON_CreateObject(), *f = cJSON_CreateObject();
                cJSON_AddStringToObject(c, "id", a->calls[i].id);
                cJSON_AddStringToObject(c, "type", "function");
                cJSON_AddStringToObject(f, "name", a->calls[i].name ? a->calls[i].name : "");
                cJSON_AddStringToObject(f, "arguments", a->calls[i].args.p ? a->calls[i].args.p : "{}");
                cJSON_AddItemToObject(c, "function", f);
                cJSON_AddItemToArray(calls, c);
            }
            cJSON_AddItemToObject(m, "tool_calls", calls);
        }
        cJSON_AddItemToObject(ch, "message", m);
    } else {
        cJSON_AddStringToObject(ch, "text", a->content.p ? a->content.p : "");
    }
    if (a->lp) {
        cJSON *lp = cJSON_CreateObject();
        cJSON_AddItemToObject(lp, "content", a->lp);
        a->lp = NULL;
        cJSON_AddItemToObject(ch, "logprobs", lp);
    } else {
        cJSON_AddNullToObject(ch, "logprobs");
    }
    cJSON_AddStringToObject(ch, "finish_reason", finish_reason(a));
    cJSON_AddItemToArray(choices, ch);
    cJSON_AddItemToObject(r, "choices", choices);
    cJSON_AddItemToObject(r, "usage", usage(a));
    cJSON_AddItemToObject(r, "timings", timings(a));
    return r;
}

/* ---- the routes -------------------------------------------------------------------------------- */

/* What both routes do once the prompt is known: fields, context, queue,
 * then stream or wait. Takes a. */
static int run(srv_conn *c, oa *a, const cJSON *body, srv_error *e)
{
    srv *s = c->s;
    srv_job *j = a->job;
    srv_gen_fields(e, s, body, j, SRV_OPENAI);
    j->gp.special = a->chat;
    a->logprobs = j->gp.n_probs >= 0;
    srv_make_id(s, a->chat ? "chatcmpl-" : "cmpl-", a->id, sizeof a->id);
    a->created = (long)time(NULL);
    srv_route_job rj = { .job = j, .pr = &a->pr, .cs = a->chat ? &a->cs : NULL, .state = a,
                         .free_state = oa_free, .stream = a->stream, .fill = fill,
                         .ping = ": ping\n\n", .take = &a->take };
    int rc;
    if (!srv_route_start(c, e, &rj, &rc))
        return rc;
    feed(a);
    if (a->chat)
        chat_stream_finish(a->cs, on_event, a);
    if (a->logprobs)
        a->lp = lp_entries(a);
    return srv_reply_json(c, 200, whole_reply(a));
}

static oa *oa_new(srv_conn *c, bool chat)
{
    oa *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->s = c->s;
    a->chat = chat;
    if (!(a->job = srv_job_new())) {
        free(a);
        return NULL;
    }
    return a;
}

static void stream_fields(srv_error *e, const cJSON *body, oa *a)
{
    rq_bool(e, body, "", "stream", &a->stream);
    const cJSON *so = rq_get(e, body, "", "stream_options", RQ_OBJ | RQ_NULL, false);
    if (cJSON_IsObject(so))
        rq_bool(e, so, "stream_options", "include_usage", &a->include_usage);
}

/* The common opening of both routes: the body, the job, model and stream
 * fields. NULL after replying with the error. */
static oa *open_request(srv_conn *c, bool chat, srv_error *e, cJSON **body, int *rc)
{
    oa *a = NULL;
    *body = rq_parse(e, c->body.p, c->body.n);
    if (*body && !(a = oa_new(c, chat)))
        srv_fail(e, 500, "server_error", "", "out of memory");
    if (!a) {
        cJSON_Delete(*body);
        *rc = srv_reply_error(c, e);
        return NULL;
    }
    srv_check_model(e, c->s, *body, false);
    stream_fields(e, *body, a);
    return a;
}

int route_chat_completions(srv_conn *c)
{
    srv_error e = { 0 };
    cJSON *body;
    int rc;
    oa *a = open_request(c, true, &e, &body, &rc);
    if (!a)
        return rc;
    srv_prompt_openai(&e, body, &a->pr);
    srv_prompt_render(&e, c->s->tok, &a->pr);
    rc = run(c, a, body, &e);
    cJSON_Delete(body);
    return rc;
}

int route_completions(srv_conn *c)
{
    srv_error e = { 0 };
    cJSON *body;
    int rc;
    oa *a = open_request(c, false, &e, &body, &rc);
    if (!a)
        return rc;
    const cJSON *p = rq_get(&e, body, "", "prompt", RQ_STR | RQ_ARR, true);
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 && cJSON_IsString(cJSON_GetArrayItem(p, 0)))
        p = cJSON_GetArrayItem(p, 0);
    if (cJSON_IsString(p)) {
        size_t n = 0;
        q36_err err = { 0 };
        if (tok_encode(c->s->tok, p->valuestring, strlen(p->valuestring), true, &a->pr.ids, &n, &err))
            srv_fail(&e, 500, "server_error", "", "tokenizing the prompt failed: %s", err.msg);
        a->pr.n_ids = (int)n;
    } else if (p) {
        int n = cJSON_GetArraySize(p), i = 0;
        a->pr.ids = malloc((size_t)(n ? n : 1) * sizeof *a->pr.ids);
        const cJSON *id;
        cJSON_ArrayForEach(id, p) {
            if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble >= tok_n_vocab(c->s->tok) ||
                id->valuedouble != (int)id->valuedouble) {
                srv_fail(&e, 400, "invalid_request_error", "prompt",
                         "'prompt[%d]': expected a token id in [0, %d) (or one string), found %s", i,
                         tok_n_vocab(c->s->tok), rq_type_name(id));
                break;
            }
            if (a->pr.ids)
                a->pr.ids[i] = (int32_t)id->valuedouble;
            i++;
        }
        a->pr.n_ids = i;
    }
    bool echo = false;
    rq_bool(&e, body, "", "echo", &echo);
    if (echo)
        srv_fail(&e, 400, "invalid_request_error", "echo", "'echo': true is not supported");
    rc = run(c, a, body, &e);
    cJSON_Delete(body);
    return rc;
}

int route_models(srv_conn *c)
{
    srv *s = c->s;
    cJSON *r = cJSON_CreateObject(), *data = cJSON_CreateArray();
    const model_hparams *hp = q36_model_hparams(s->model);
    for (int i = -1; i < s->o.n_aliases; i++) {
        cJSON *m = cJSON_CreateObject(), *meta = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "id", i < 0 ? s->model_id : s->o.aliases[i]);
        cJSON_AddStringToObject(m, "object", "model");
        cJSON_AddNumberToObject(m, "created", (double)(long)time(NULL));
        cJSON_AddStringToObject(m, "owned_by", "q36");
        cJSON_AddNumberToObject(meta, "n_ctx_train", hp->n_ctx_train);
        cJSON_AddNumberToObject(meta, "n_ctx", s->n_ctx);
        cJSON_AddNumberToObject(meta, "n_vocab", hp->n_vocab);
        cJSON_AddNumberToObject(meta, "n_params", (double)q36_model_n_params(s->model));
        cJSON_AddStringToObject(meta, "arch", hp->arch_name);
        cJSON_AddItemToObject(m, "meta", meta);
        cJSON_AddItemToArray(data, m);
    }
    cJSON_AddStringToObject(r, "object", "list");
    cJSON_AddItemToObject(r, "data", data);
    return srv_reply_json(c, 200, r);
}
