/* chat_parse.c: a whole reply split into reasoning, answer and tool calls
 * (chat.h), by running the incremental parser (chat_stream.c) over it: one
 * reading of the format for `q36 chat`, the server and the tests.
 *
 * Without a tool list every parameter value is JSON when it parses as JSON
 * other than a bare string, else the raw string.
 */
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "chat_stream.h"
#include "../util/buf.h"

typedef struct collect {
    q36_buf text[2];          /* reasoning, content */
    cJSON  *calls;            /* [{type, function:{name, arguments}}] */
    q36_buf args;             /* the current call's arguments */
} collect;

static void on_ev(void *user, const chat_ev *ev)
{
    collect *c = user;
    switch (ev->kind) {
    case CHAT_EV_REASONING: q36_buf_add(&c->text[0], ev->text, ev->len); break;
    case CHAT_EV_CONTENT:   q36_buf_add(&c->text[1], ev->text, ev->len); break;
    case CHAT_EV_TOOL_BEGIN: {
        cJSON *call = cJSON_CreateObject(), *fn = cJSON_CreateObject();
        char *name = strndup(ev->text, ev->len);
        cJSON_AddStringToObject(call, "type", "function");
        cJSON_AddStringToObject(fn, "name", name ? name : "");
        cJSON_AddItemToObject(call, "function", fn);
        if (!c->calls)
            c->calls = cJSON_CreateArray();
        cJSON_AddItemToArray(c->calls, call);
        free(name);
        c->args.n = 0;
        break;
    }
    case CHAT_EV_TOOL_ARGS: q36_buf_add(&c->args, ev->text, ev->len); break;
    case CHAT_EV_TOOL_END: {
        cJSON *call = cJSON_GetArrayItem(c->calls, cJSON_GetArraySize(c->calls) - 1);
        cJSON_AddStringToObject(cJSON_GetObjectItem(call, "function"), "arguments",
                                c->args.n ? c->args.p : "{}");
        break;
    }
    }
}

int chat_parse(const char *text, size_t len, bool in_thinking, chat_reply *out, q36_err *err)
{
    memset(out, 0, sizeof *out);
    chat_stream *cs;
    int rc = chat_stream_new(NULL, true, in_thinking, &cs, err);
    if (rc)
        return rc;
    collect c = { 0 };
    chat_stream_push(cs, text, len, on_ev, &c);
    chat_stream_finish(cs, on_ev, &c);
    out->complete = chat_stream_complete(cs);
    chat_stream_free(cs);
    bool oom = c.text[0].oom || c.text[1].oom || c.args.oom;
    q36_buf_free(&c.args);
    out->reasoning = c.text[0].p ? c.text[0].p : strdup("");
    out->content = c.text[1].p ? c.text[1].p : strdup("");
    out->tool_calls = c.calls;
    if (oom || !out->reasoning || !out->content) {
        chat_reply_free(out);
        return q36_err_set(err, Q36_E_NOMEM, "chat parse: out of memory");
    }
    return 0;
}

void chat_reply_free(chat_reply *r)
{
    if (!r)
        return;
    free(r->reasoning);
    free(r->content);
    cJSON_Delete(r->tool_calls);
    memset(r, 0, sizeof *r);
}
