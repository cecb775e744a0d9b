/* routes_anthropic.c: the Anthropic Messages routes: POST /v1/messages
 * (streamed and not) and POST /v1/messages/count_tokens.
 *
 * The output parser's events become content blocks in the order the model
 * wrote them: thinking, text, tool_use. In a stream each block is closed
 * (content_block_stop; a thinking block gets its signature_delta first)
 * before the next one opens, so that `index` always names the open block,
 * which is what @anthropic-ai/sdk and Claude Code check. Every event has its
 * `event:` line; a ping follows message_start and any silence; usage in
 * message_delta is cumulative. Errors, before the stream or in it, have
 * Anthropic's shape.
 */
#include "srv_internal.h"
#include "../chat/chat_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum blk { B_NONE = 0, B_THINKING, B_TEXT, B_TOOL };

typedef struct block {
    enum blk kind;
    char     id[48];
    char    *name;
    q36_buf  text;           /* thinking, text, or the tool's input JSON */
} block;

typedef struct am {
    srv        *s;
    srv_job    *job;
    srv_prompt  pr;
    chat_stream *cs;
    bool        stream, started, prefix_done;
    char        id[64];
    srv_take    take;
    block      *blocks;
    int         n_blocks;
    enum blk    open;        /* the stream's open block */
    q36_buf    *out;
} am;

static void am_free(void *p)
{
    am *a = p;
    if (!a)
        return;
    srv_prompt_free(&a->pr);
    chat_stream_free(a->cs);
    srv_take_free(&a->take);
    for (int i = 0; i < a->n_blocks; i++) {
        free(a->blocks[i].name);
        q36_buf_free(&a->blocks[i].text);
    }
    free(a->blocks);
    free(a);
}

static cJSON *typed(const char *type)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", type);
    return o;
}

static cJSON *usage(am *a, bool start)
{
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "input_tokens", a->job->n_prompt - a->take.n_cached);
    cJSON_AddNumberToObject(u, "output_tokens", start ? 0 : a->take.n_gen);
    cJSON_AddNumberToObject(u, "cache_read_input_tokens", a->take.n_cached);
    cJSON_AddNumberToObject(u, "cache_creation_input_tokens", 0);
    return u;
}

/* The block JSON as content_block_start sends it (empty) or as the final
 * message holds it. */
static cJSON *block_json(const block *b, bool empty)
{
    cJSON *o = typed(b->kind == B_THINKING ? "thinking" : b->kind == B_TEXT ? "text" : "tool_use");
    if (b->kind == B_THINKING) {
        cJSON_AddStringToObject(o, "thinking", empty || !b->text.p ? "" : b->text.p);
        cJSON_AddStringToObject(o, "signature", "");
    } else if (b->kind == B_TEXT) {
        cJSON_AddStringToObject(o, "text", empty || !b->text.p ? "" : b->text.p);
    } else {
        cJSON_AddStringToObject(o, "id", b->id);
        cJSON_AddStringToObject(o, "name", b->name ? b->name : "");
        cJSON *input = empty || !b->text.p ? NULL : cJSON_Parse(b->text.p);
        cJSON_AddItemToObject(o, "input", cJSON_IsObject(input) ? input : cJSON_CreateObject());
        if (input && !cJSON_IsObject(input))
            cJSON_Delete(input);
    }
    return o;
}

static void close_block(am *a)
{
    if (!a->stream || a->open == B_NONE)
        return;
    int idx = a->n_blocks - 1;
    if (a->open == B_THINKING) {
        cJSON *d = typed("content_block_delta"), *dd = typed("signature_delta");
        cJSON_AddNumberToObject(d, "index", idx);
        cJSON_AddStringToObject(dd, "signature", "");
        cJSON_AddItemToObject(d, "delta", dd);
        sse_event(a->out, "content_block_delta", d);
    }
    cJSON *st = typed("content_block_stop");
    cJSON_AddNumberToObject(st, "index", idx);
    sse_event(a->out, "content_block_stop", st);
    a->open = B_NONE;
}

static block *open_block(am *a, enum blk kind, const char *name, size_t n)
{
    close_block(a);
    block *b = realloc(a->blocks, (size_t)(a->n_blocks + 1) * sizeof *b);
    if (!b)
        return NULL;
    a->blocks = b;
    b = &a->blocks[a->n_blocks++];
    memset(b, 0, sizeof *b);
    b->kind = kind;
    if (kind == B_TOOL) {
        srv_make_id(a->s, "toolu_", b->id, sizeof b->id);
        b->name = strndup(name, n);
    }
    if (a->stream) {
        cJSON *st = typed("content_block_start");
        cJSON_AddNumberToObject(st, "index", a->n_blocks - 1);
        cJSON_AddItemToObject(st, "content_block", block_json(b, true));
        sse_event(a->out, "content_block_start", st);
        a->open = kind;
    }
    return b;
}

static void on_event(void *user, const chat_ev *ev)
{
    am *a = user;
    enum blk want = ev->kind == CHAT_EV_REASONING ? B_THINKING : ev->kind == CHAT_EV_CONTENT ? B_TEXT : B_TOOL;
    block *b = a->n_blocks ? &a->blocks[a->n_blocks - 1] : NULL;
    if (ev->kind == CHAT_EV_TOOL_END) {
        close_block(a);
        return;
    }
    if (ev->kind == CHAT_EV_TOOL_BEGIN || !b || b->kind != want || (a->stream && a->open != want))
        b = open_block(a, want, ev->text, ev->len);
    if (!b || ev->kind == CHAT_EV_TOOL_BEGIN)
        return;
    q36_buf_add(&b->text, ev->text, ev->len);
    if (!a->stream)
        return;
    cJSON *d = typed("content_block_delta"), *dd;
    cJSON_AddNumberToObject(d, "index", a->n_blocks - 1);
    if (want == B_THINKING) {
        dd = typed("thinking_delta");
        cJSON_AddItemToObject(dd, "thinking", srv_json_str_n(ev->text, ev->len));
    } else if (want == B_TEXT) {
        dd = typed("text_delta");
        cJSON_AddItemToObject(dd, "text", srv_json_str_n(ev->text, ev->len));
    } else {
        dd = typed("input_json_delta");
        cJSON_AddItemToObject(dd, "partial_json", srv_json_str_n(ev->text, ev->len));
    }
    cJSON_AddItemToObject(d, "delta", dd);
    sse_event(a->out, "content_block_delta", d);
}

static const char *stop_reason(am *a)
{
    if (a->take.stop == GEN_STOP_LENGTH || a->take.stop == GEN_STOP_CTX)
        return "max_tokens";
    if (a->take.stop == GEN_STOP_WORD && a->take.stop_word != a->job->call_stop)
        return "stop_sequence";
    if (chat_stream_n_calls(a->cs) > 0)
        return "tool_use";
    return "end_turn";
}

static void add_stop_sequence(am *a, cJSON *o)
{
    int w = a->take.stop_word;
    if (a->take.stop == GEN_STOP_WORD && w >= 0 && w < a->job->gp.n_stop && w != a->job->call_stop)
        cJSON_AddStringToObject(o, "stop_sequence", a->job->gp.stop[w]);
    else
        cJSON_AddNullToObject(o, "stop_sequence");
}

static cJSON *message(am *a, bool start)
{
    cJSON *m = cJSON_CreateObject(), *content = cJSON_CreateArray();
    cJSON_AddStringToObject(m, "id", a->id);
    cJSON_AddStringToObject(m, "type", "message");
    cJSON_AddStringToObject(m, "role", "assistant");
    cJSON_AddStringToObject(m, "model", a->s->model_id);
    for (int i = 0; !start && i < a->n_blocks; i++)
        cJSON_AddItemToArray(content, block_json(&a->blocks[i], false));
    cJSON_AddItemToObject(m, "content", content);
    if (start) {
        cJSON_AddNullToObject(m, "stop_reason");
        cJSON_AddNullToObject(m, "stop_sequence");
    } else {
        cJSON_AddStringToObject(m, "stop_reason", stop_reason(a));
        add_stop_sequence(a, m);
    }
    cJSON_AddItemToObject(m, "usage", usage(a, start));
    return m;
}

static void feed(am *a)
{
    if (!a->prefix_done) {
        a->prefix_done = true;
        if (a->pr.prefix[0])
            chat_stream_push(a->cs, a->pr.prefix, strlen(a->pr.prefix), on_event, a);
    }
    if (a->take.text.n)
        chat_stream_push(a->cs, a->take.text.p, a->take.text.n, on_event, a);
}

static bool fill(srv_conn *c, q36_buf *out)
{
    am *a = c->state;
    a->out = out;
    if (!srv_job_take(a->job, &a->take))
        return true;
    if (!a->started) {
        /* once in a slot, so that its usage counts the tokens read from the cache */
        if (!a->take.started && !a->take.done && !a->take.fail.status)
            return false;
        cJSON *ms = typed("message_start");
        cJSON_AddItemToObject(ms, "message", message(a, true));
        sse_event(out, "message_start", ms);
        sse_event(out, "ping", typed("ping"));
        a->started = true;
    }
    if (a->take.fail.status) {
        sse_event(out, "error", srv_error_json(&a->take.fail, SRV_ANTHROPIC));
        return true;
    }
    feed(a);
    if (!a->take.done)
        return false;
    chat_stream_finish(a->cs, on_event, a);
    close_block(a);
    cJSON *md = typed("message_delta"), *d = cJSON_CreateObject(), *u = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "stop_reason", stop_reason(a));
    add_stop_sequence(a, d);
    cJSON_AddItemToObject(md, "delta", d);
    cJSON_AddNumberToObject(u, "input_tokens", a->job->n_prompt - a->take.n_cached);
    cJSON_AddNumberToObject(u, "output_tokens", a->take.n_gen);
    cJSON_AddNumberToObject(u, "cache_read_input_tokens", a->take.n_cached);
    cJSON_AddNumberToObject(u, "cache_creation_input_tokens", 0);
    cJSON_AddItemToObject(md, "usage", u);
    sse_event(out, "message_delta", md);
    sse_event(out, "message_stop", typed("message_stop"));
    return true;
}

/* Parses and renders a messages body into a (prompt ids in a->pr). */
static void prepare(srv_conn *c, am *a, const cJSON *body, srv_error *e)
{
    srv_check_model(e, c->s, body, false);
    srv_prompt_anthropic(e, body, &a->pr);
    srv_prompt_render(e, c->s->tok, &a->pr);
}

int route_messages(srv_conn *c)
{
    srv *s = c->s;
    srv_error e = { 0 };
    cJSON *body = rq_parse(&e, c->body.p, c->body.n);
    if (!body)
        return srv_reply_error(c, &e);
    am *a = calloc(1, sizeof *a);
    srv_job *j = a ? srv_job_new() : NULL;
    if (!j) {
        free(a);
        cJSON_Delete(body);
        srv_fail(&e, 500, "server_error", "", "out of memory");
        return srv_reply_error(c, &e);
    }
    a->s = s;
    a->job = j;
    rq_bool(&e, body, "", "stream", &a->stream);
    prepare(c, a, body, &e);
    srv_gen_fields(&e, s, body, j, SRV_ANTHROPIC);
    j->gp.special = true;
    cJSON_Delete(body);
    srv_make_id(s, "msg_", a->id, sizeof a->id);
    srv_route_job rj = { .job = j, .pr = &a->pr, .cs = &a->cs, .state = a, .free_state = am_free,
                         .stream = a->stream, .fill = fill,
                         .ping = "event: ping\ndata: {\"type\":\"ping\"}\n\n", .take = &a->take };
    int rc;
    if (!srv_route_start(c, &e, &rj, &rc))
        return rc;
    feed(a);
    chat_stream_finish(a->cs, on_event, a);
    return srv_reply_json(c, 200, message(a, false));
}

int route_count_tokens(srv_conn *c)
{
    srv_error e = { 0 };
    cJSON *body = rq_parse(&e, c->body.p, c->body.n);
    if (!body)
        return srv_reply_error(c, &e);
    am a = { .s = c->s };
    prepare(c, &a, body, &e);
    cJSON_Delete(body);
    if (e.status) {
        srv_prompt_free(&a.pr);
        return srv_reply_error(c, &e);
    }
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "input_tokens", a.pr.n_ids);
    srv_prompt_free(&a.pr);
    return srv_reply_json(c, 200, r);
}
