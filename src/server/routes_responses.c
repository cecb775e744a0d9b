/* routes_responses.c: POST /v1/responses, the subset of OpenAI's Responses
 * API that Codex-style clients send: `input` as a string or as items
 * (messages, function_call, function_call_output, reasoning), `instructions`,
 * function tools, `tool_choice`, `reasoning.effort`, `max_output_tokens`,
 * sampling fields, streaming. The request becomes a chat request and goes
 * the chat path (srv_prompt_openai); the reply's parser events become
 * output items (reasoning, message, function_call) in the order the model
 * wrote them, each closed before the next is added.
 *
 * Refused with a 400 that names the field: previous_response_id (no stored
 * responses), a text.format other than text, content that is not text.
 * Tools other than functions (web search, ...) are skipped.
 */
#include "srv_internal.h"
#include "../chat/chat_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum item_kind { I_REASONING, I_MESSAGE, I_CALL };

typedef struct item {
    enum item_kind kind;
    char    id[48], call_id[48];
    char   *name;
    q36_buf text;             /* reasoning, message text, or arguments */
} item;

typedef struct rs {
    srv        *s;
    srv_job    *job;
    srv_prompt  pr;
    chat_stream *cs;
    bool        stream, started, prefix_done, open;
    char        id[64];
    long        created;
    srv_take    take;
    item       *items;
    int         n_items;
    int         seq;
    q36_buf    *out;
} rs;

static void rs_free(void *p)
{
    rs *r = p;
    if (!r)
        return;
    srv_prompt_free(&r->pr);
    chat_stream_free(r->cs);
    srv_take_free(&r->take);
    for (int i = 0; i < r->n_items; i++) {
        free(r->items[i].name);
        q36_buf_free(&r->items[i].text);
    }
    free(r->items);
    free(r);
}

/* ---- request: Responses to chat -------------------------------------------------------------- */

static cJSON *chat_msg(const char *role, const char *content)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", role);
    cJSON_AddStringToObject(m, "content", content ? content : "");
    return m;
}

/* The assistant message that function calls and reasoning attach to: the
 * last one when it is an assistant turn, else a new one. */
static cJSON *assistant(cJSON *msgs)
{
    cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
    const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(last, "role"));
    if (last && role && !strcmp(role, "assistant"))
        return last;
    cJSON *a = chat_msg("assistant", "");
    cJSON_AddItemToArray(msgs, a);
    return a;
}

/* Builds the chat body: messages, tools, tool_choice, thinking, limits. */
static cJSON *to_chat(srv_error *e, const cJSON *body)
{
    cJSON *chat = cJSON_CreateObject(), *msgs = cJSON_CreateArray();
    cJSON_AddItemToObject(chat, "messages", msgs);
    const cJSON *prev = rq_get(e, body, "", "previous_response_id", RQ_STR | RQ_NULL, false);
    if (cJSON_IsString(prev))
        srv_fail(e, 400, "invalid_request_error", "previous_response_id",
                 "'previous_response_id': not supported: this server stores no responses; send the whole input");
    const cJSON *ins = rq_get(e, body, "", "instructions", RQ_STR | RQ_NULL, false);
    if (cJSON_IsString(ins))
        cJSON_AddItemToArray(msgs, chat_msg("system", ins->valuestring));
    const cJSON *input = rq_get(e, body, "", "input", RQ_STR | RQ_ARR, true);
    if (cJSON_IsString(input))
        cJSON_AddItemToArray(msgs, chat_msg("user", input->valuestring));
    const cJSON *it;
    int i = 0;
    char *pending_reasoning = NULL;
    const cJSON *items = cJSON_IsArray(input) ? input : NULL;
    cJSON_ArrayForEach(it, items) {
        if (e->status)
            break;
        char ip[48];
        snprintf(ip, sizeof ip, "input[%d]", i++);
        if (!cJSON_IsObject(it)) {
            srv_fail(e, 400, "invalid_request_error", ip, "'%s': expected an object, found %s", ip, rq_type_name(it));
            break;
        }
        const cJSON *ty = rq_get(e, it, ip, "type", RQ_STR, false);
        const char *t = ty ? ty->valuestring : "message";
        if (!strcmp(t, "message")) {
            const cJSON *role = rq_get(e, it, ip, "role", RQ_STR, true);
            const cJSON *content = rq_get(e, it, ip, "content", RQ_STR | RQ_ARR, true);
            q36_buf b = { 0 };
            char cp[64];
            snprintf(cp, sizeof cp, "%s.content", ip);
            srv_content_text(e, content, cp, &b);
            if (role && !e->status) {
                cJSON *m = chat_msg(role->valuestring, b.p);
                if (pending_reasoning && !strcmp(role->valuestring, "assistant")) {
                    cJSON_AddStringToObject(m, "reasoning_content", pending_reasoning);
                    free(pending_reasoning);
                    pending_reasoning = NULL;
                }
                cJSON_AddItemToArray(msgs, m);
            }
            q36_buf_free(&b);
        } else if (!strcmp(t, "function_call")) {
            const cJSON *name = rq_get(e, it, ip, "name", RQ_STR, true);
            const cJSON *args = rq_get(e, it, ip, "arguments", RQ_STR, true);
            const cJSON *cid = rq_get(e, it, ip, "call_id", RQ_STR, false);
            if (!name || !args)
                break;
            cJSON *a = assistant(msgs), *calls = cJSON_GetObjectItemCaseSensitive(a, "tool_calls");
            if (!calls)
                cJSON_AddItemToObject(a, "tool_calls", calls = cJSON_CreateArray());
            if (pending_reasoning) {
                cJSON_AddStringToObject(a, "reasoning_content", pending_reasoning);
                free(pending_reasoning);
                pending_reasoning = NULL;
            }
            cJSON *c = cJSON_CreateObject(), *f = cJSON_CreateObject();
            cJSON_AddStringToObject(c, "id", cid ? cid->valuestring : "");
            cJSON_AddStringToObject(c, "type", "function");
            cJSON_AddStringToObject(f, "name", name->valuestring);
            cJSON_AddStringToObject(f, "arguments", args->valuestring);
            cJSON_AddItemToObject(c, "function", f);
            cJSON_AddItemToArray(calls, c);
        } else if (!strcmp(t, "function_call_output")) {
            const cJSON *out = rq_get(e, it, ip, "output", RQ_STR | RQ_ARR, true);
            q36_buf b = { 0 };
            char op[64];
            snprintf(op, sizeof op, "%s.output", ip);
            srv_content_text(e, out, op, &b);
            cJSON_AddItemToArray(msgs, chat_msg("tool", b.p));
            q36_buf_free(&b);
        } else if (!strcmp(t, "reasoning")) {
            q36_buf b = { 0 };
            char rp[64];
            snprintf(rp, sizeof rp, "%s.content", ip);
            const cJSON *content = rq_get(e, it, ip, "content", RQ_ARR | RQ_NULL, false);
            srv_content_text(e, cJSON_IsArray(content) ? content : rq_get(e, it, ip, "summary", RQ_ARR, false), rp, &b);
            free(pending_reasoning);
            pending_reasoning = b.p ? strdup(b.p) : NULL;
            q36_buf_free(&b);
        } else {
            srv_fail(e, 400, "invalid_request_error", ip, "'%s.type': '%.60s' is not an input item q36 takes", ip, t);
        }
    }
    free(pending_reasoning);

    const cJSON *tools = rq_get(e, body, "", "tools", RQ_ARR, false), *tl;
    cJSON *ct = cJSON_CreateArray();
    i = 0;
    cJSON_ArrayForEach(tl, tools) {
        char tp[48];
        snprintf(tp, sizeof tp, "tools[%d]", i++);
        const cJSON *ty = rq_get(e, tl, tp, "type", RQ_STR, true);
        if (!ty || strcmp(ty->valuestring, "function"))
            continue;                          /* web search and other hosted tools */
        const cJSON *name = rq_get(e, tl, tp, "name", RQ_STR, true);
        if (!name)
            break;
        cJSON *w = cJSON_CreateObject(), *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "name", name->valuestring);
        const cJSON *d = rq_get(e, tl, tp, "description", RQ_STR, false);
        if (d)
            cJSON_AddStringToObject(f, "description", d->valuestring);
        const cJSON *params = rq_get(e, tl, tp, "parameters", RQ_OBJ, false);
        if (params)
            cJSON_AddItemToObject(f, "parameters", cJSON_Duplicate(params, true));
        cJSON_AddStringToObject(w, "type", "function");
        cJSON_AddItemToObject(w, "function", f);
        cJSON_AddItemToArray(ct, w);
    }
    cJSON_AddItemToObject(chat, "tools", ct);
    const cJSON *tc = rq_get(e, body, "", "tool_choice", RQ_STR | RQ_OBJ, false);
    if (cJSON_IsString(tc)) {
        cJSON_AddStringToObject(chat, "tool_choice", tc->valuestring);
    } else if (tc) {
        const cJSON *n = rq_get(e, tc, "tool_choice", "name", RQ_STR, true);
        if (n) {
            cJSON *o = cJSON_CreateObject(), *f = cJSON_CreateObject();
            cJSON_AddStringToObject(f, "name", n->valuestring);
            cJSON_AddStringToObject(o, "type", "function");
            cJSON_AddItemToObject(o, "function", f);
            cJSON_AddItemToObject(chat, "tool_choice", o);
        }
    }
    const cJSON *reasoning = rq_get(e, body, "", "reasoning", RQ_OBJ | RQ_NULL, false);
    const cJSON *effort = rq_get(e, cJSON_IsObject(reasoning) ? reasoning : NULL, "reasoning", "effort",
                                 RQ_STR | RQ_NULL, false);
    if (cJSON_IsString(effort))
        cJSON_AddStringToObject(chat, "reasoning_effort", effort->valuestring);
    const cJSON *text = rq_get(e, body, "", "text", RQ_OBJ | RQ_NULL, false);
    const cJSON *format = rq_get(e, cJSON_IsObject(text) ? text : NULL, "text", "format", RQ_OBJ, false);
    const cJSON *fty = rq_get(e, format, "text.format", "type", RQ_STR, format != NULL);
    if (fty && strcmp(fty->valuestring, "text"))
        srv_fail(e, 400, "invalid_request_error", "text.format",
                 "'text.format': type '%.40s' is not supported: q36 has no constrained decoding yet; use 'text'",
                 fty->valuestring);
    /* Sampling fields keep their names; the token limit is renamed. */
    static const char *const copy[] = { "temperature", "top_p", "top_k", "min_p", "seed", "stop",
                                        "presence_penalty", "frequency_penalty", "model" };
    for (size_t k = 0; k < sizeof copy / sizeof copy[0]; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, copy[k]);
        if (v)
            cJSON_AddItemToObject(chat, copy[k], cJSON_Duplicate(v, true));
    }
    const cJSON *mx = cJSON_GetObjectItemCaseSensitive(body, "max_output_tokens");
    if (mx && !cJSON_IsNull(mx))
        cJSON_AddItemToObject(chat, "max_tokens", cJSON_Duplicate(mx, true));
    return chat;
}

/* ---- output items ------------------------------------------------------------------------------ */

static void emit(rs *r, const char *type, cJSON *ev)
{
    cJSON_AddStringToObject(ev, "type", type);
    cJSON_AddNumberToObject(ev, "sequence_number", r->seq++);
    sse_event(r->out, type, ev);
}

static cJSON *item_json(const item *it, bool done)
{
    cJSON *o = cJSON_CreateObject();
    const char *text = done && it->text.p ? it->text.p : "";
    cJSON_AddStringToObject(o, "id", it->id);
    if (it->kind == I_REASONING) {
        cJSON *content = cJSON_CreateArray(), *c = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "reasoning");
        cJSON_AddItemToObject(o, "summary", cJSON_CreateArray());
        cJSON_AddStringToObject(c, "type", "reasoning_text");
        cJSON_AddStringToObject(c, "text", text);
        cJSON_AddItemToArray(content, c);
        cJSON_AddItemToObject(o, "content", content);
    } else if (it->kind == I_MESSAGE) {
        cJSON *content = cJSON_CreateArray();
        cJSON_AddStringToObject(o, "type", "message");
        cJSON_AddStringToObject(o, "role", "assistant");
        cJSON_AddStringToObject(o, "status", done ? "completed" : "in_progress");
        if (done) {
            cJSON *c = cJSON_CreateObject();
            cJSON_AddStringToObject(c, "type", "output_text");
            cJSON_AddStringToObject(c, "text", text);
            cJSON_AddItemToObject(c, "annotations", cJSON_CreateArray());
            cJSON_AddItemToArray(content, c);
        }
        cJSON_AddItemToObject(o, "content", content);
    } else {
        cJSON_AddStringToObject(o, "type", "function_call");
        cJSON_AddStringToObject(o, "call_id", it->call_id);
        cJSON_AddStringToObject(o, "name", it->name ? it->name : "");
        cJSON_AddStringToObject(o, "arguments", done && it->text.p ? it->text.p : done ? "{}" : "");
        cJSON_AddStringToObject(o, "status", done ? "completed" : "in_progress");
    }
    return o;
}

static cJSON *part(const item *it, bool done)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", it->kind == I_REASONING ? "reasoning_text" : "output_text");
    cJSON_AddStringToObject(p, "text", done && it->text.p ? it->text.p : "");
    if (it->kind == I_MESSAGE)
        cJSON_AddItemToObject(p, "annotations", cJSON_CreateArray());
    return p;
}

static cJSON *at(rs *r, const item *it)
{
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "item_id", it->id);
    cJSON_AddNumberToObject(ev, "output_index", (double)(it - r->items));
    return ev;
}

static void close_item(rs *r)
{
    if (!r->stream || !r->open)
        return;
    item *it = &r->items[r->n_items - 1];
    cJSON *ev;
    if (it->kind == I_CALL) {
        ev = at(r, it);
        cJSON_AddStringToObject(ev, "arguments", it->text.p ? it->text.p : "{}");
        emit(r, "response.function_call_arguments.done", ev);
    } else {
        ev = at(r, it);
        cJSON_AddNumberToObject(ev, "content_index", 0);
        cJSON_AddStringToObject(ev, "text", it->text.p ? it->text.p : "");
        emit(r, it->kind == I_REASONING ? "response.reasoning_text.done" : "response.output_text.done", ev);
        if (it->kind == I_MESSAGE) {
            ev = at(r, it);
            cJSON_AddNumberToObject(ev, "content_index", 0);
            cJSON_AddItemToObject(ev, "part", part(it, true));
            emit(r, "response.content_part.done", ev);
        }
    }
    ev = cJSON_CreateObject();
    cJSON_AddNumberToObject(ev, "output_index", r->n_items - 1);
    cJSON_AddItemToObject(ev, "item", item_json(it, true));
    emit(r, "response.output_item.done", ev);
    r->open = false;
}

static item *open_item(rs *r, enum item_kind kind, const char *name, size_t n)
{
    close_item(r);
    item *it = realloc(r->items, (size_t)(r->n_items + 1) * sizeof *it);
    if (!it)
        return NULL;
    r->items = it;
    it = &r->items[r->n_items++];
    memset(it, 0, sizeof *it);
    it->kind = kind;
    srv_make_id(r->s, kind == I_REASONING ? "rs_" : kind == I_MESSAGE ? "msg_" : "fc_", it->id, sizeof it->id);
    if (kind == I_CALL) {
        srv_make_id(r->s, "call_", it->call_id, sizeof it->call_id);
        it->name = strndup(name, n);
    }
    if (r->stream) {
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddNumberToObject(ev, "output_index", r->n_items - 1);
        cJSON_AddItemToObject(ev, "item", item_json(it, false));
        emit(r, "response.output_item.added", ev);
        if (kind == I_MESSAGE) {
            ev = at(r, it);
            cJSON_AddNumberToObject(ev, "content_index", 0);
            cJSON_AddItemToObject(ev, "part", part(it, false));
            emit(r, "response.content_part.added", ev);
        }
        r->open = true;
    }
    return it;
}

static void on_event(void *user, const chat_ev *ev)
{
    rs *r = user;
    enum item_kind want = ev->kind == CHAT_EV_REASONING ? I_REASONING : ev->kind == CHAT_EV_CONTENT ? I_MESSAGE : I_CALL;
    if (ev->kind == CHAT_EV_TOOL_END) {
        close_item(r);
        return;
    }
    item *it = r->n_items ? &r->items[r->n_items - 1] : NULL;
    if (ev->kind == CHAT_EV_TOOL_BEGIN || !it || it->kind != want || (r->stream && !r->open))
        it = open_item(r, want, ev->text, ev->len);
    if (!it || ev->kind == CHAT_EV_TOOL_BEGIN)
        return;
    q36_buf_add(&it->text, ev->text, ev->len);
    if (!r->stream)
        return;
    cJSON *e = at(r, it);
    if (want != I_CALL)
        cJSON_AddNumberToObject(e, "content_index", 0);
    cJSON_AddItemToObject(e, "delta", srv_json_str_n(ev->text, ev->len));
    emit(r, want == I_REASONING ? "response.reasoning_text.delta" : want == I_MESSAGE ? "response.output_text.delta"
                                                                   : "response.function_call_arguments.delta", e);
}

static cJSON *response(rs *r, const char *status)
{
    cJSON *o = cJSON_CreateObject(), *out = cJSON_CreateArray();
    bool done = strcmp(status, "in_progress") != 0;
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "object", "response");
    cJSON_AddNumberToObject(o, "created_at", (double)r->created);
    cJSON_AddStringToObject(o, "status", status);
    cJSON_AddStringToObject(o, "model", r->s->model_id);
    for (int i = 0; done && i < r->n_items; i++)
        cJSON_AddItemToArray(out, item_json(&r->items[i], true));
    cJSON_AddItemToObject(o, "output", out);
    if (!strcmp(status, "incomplete")) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "reason", "max_output_tokens");
        cJSON_AddItemToObject(o, "incomplete_details", d);
    } else {
        cJSON_AddNullToObject(o, "incomplete_details");
    }
    cJSON_AddNullToObject(o, "error");
    cJSON_AddBoolToObject(o, "parallel_tool_calls", true);
    cJSON_AddItemToObject(o, "tools", cJSON_CreateArray());
    cJSON_AddStringToObject(o, "tool_choice", "auto");
    if (done) {
        cJSON *u = cJSON_CreateObject(), *id = cJSON_CreateObject(), *od = cJSON_CreateObject();
        cJSON_AddNumberToObject(u, "input_tokens", r->job->n_prompt);
        cJSON_AddNumberToObject(id, "cached_tokens", r->take.n_cached);
        cJSON_AddItemToObject(u, "input_tokens_details", id);
        cJSON_AddNumberToObject(u, "output_tokens", r->take.n_gen);
        cJSON_AddNumberToObject(od, "reasoning_tokens", 0);
        cJSON_AddItemToObject(u, "output_tokens_details", od);
        cJSON_AddNumberToObject(u, "total_tokens", r->job->n_prompt + r->take.n_gen);
        cJSON_AddItemToObject(o, "usage", u);
    } else {
        cJSON_AddNullToObject(o, "usage");
    }
    return o;
}

static const char *final_status(rs *r)
{
    return r->take.stop == GEN_STOP_LENGTH || r->take.stop == GEN_STOP_CTX ? "incomplete" : "completed";
}

static void feed(rs *r)
{
    if (!r->prefix_done) {
        r->prefix_done = true;
        if (r->pr.prefix[0])
            chat_stream_push(r->cs, r->pr.prefix, strlen(r->pr.prefix), on_event, r);
    }
    if (r->take.text.n)
        chat_stream_push(r->cs, r->take.text.p, r->take.text.n, on_event, r);
}

static bool fill(srv_conn *c, q36_buf *out)
{
    rs *r = c->state;
    r->out = out;
    if (!r->started) {
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddItemToObject(ev, "response", response(r, "in_progress"));
        emit(r, "response.created", ev);
        ev = cJSON_CreateObject();
        cJSON_AddItemToObject(ev, "response", response(r, "in_progress"));
        emit(r, "response.in_progress", ev);
        r->started = true;
    }
    if (!srv_job_take(r->job, &r->take))
        return true;
    if (r->take.fail.status) {
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddStringToObject(ev, "code", "server_error");
        cJSON_AddStringToObject(ev, "message", r->take.fail.msg);
        emit(r, "error", ev);
        return true;
    }
    feed(r);
    if (!r->take.done)
        return false;
    chat_stream_finish(r->cs, on_event, r);
    close_item(r);
    const char *st = final_status(r);
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddItemToObject(ev, "response", response(r, st));
    emit(r, !strcmp(st, "completed") ? "response.completed" : "response.incomplete", ev);
    return true;
}

int route_responses(srv_conn *c)
{
    srv *s = c->s;
    srv_error e = { 0 };
    cJSON *body = rq_parse(&e, c->body.p, c->body.n);
    if (!body)
        return srv_reply_error(c, &e);
    rs *r = calloc(1, sizeof *r);
    srv_job *j = r ? srv_job_new() : NULL;
    if (!j) {
        free(r);
        cJSON_Delete(body);
        srv_fail(&e, 500, "server_error", "", "out of memory");
        return srv_reply_error(c, &e);
    }
    r->s = s;
    r->job = j;
    rq_bool(&e, body, "", "stream", &r->stream);
    cJSON *chat = to_chat(&e, body);
    cJSON_Delete(body);
    srv_check_model(&e, s, chat, false);
    srv_prompt_openai(&e, chat, &r->pr);
    srv_prompt_render(&e, s->tok, &r->pr);
    srv_gen_fields(&e, s, chat, j, SRV_OPENAI);
    cJSON_Delete(chat);
    j->gp.special = true;
    srv_make_id(s, "resp_", r->id, sizeof r->id);
    r->created = (long)time(NULL);
    srv_route_job rj = { .job = j, .pr = &r->pr, .cs = &r->cs, .state = r, .free_state = rs_free,
                         .stream = r->stream, .fill = fill, .ping = ": ping\n\n", .take = &r->take };
    int rc;
    if (!srv_route_start(c, &e, &rj, &rc))
        return rc;
    feed(r);
    chat_stream_finish(r->cs, on_event, r);
    return srv_reply_json(c, 200, response(r, final_status(r)));
}
