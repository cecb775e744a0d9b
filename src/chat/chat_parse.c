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

typedef struct collect {
    char  *text[2];           /* reasoning, content */
    size_t n[2];
    cJSON *calls;             /* [{type, function:{name, arguments}}] */
    char  *args;              /* the current call's arguments */
    size_t n_args;
    bool   oom;
} collect;

static void add(collect *c, char **p, size_t *n, const char *t, size_t k)
{
    char *q = realloc(*p, *n + k + 1);
    if (!q) {
        c->oom = true;
        return;
    }
    memcpy(q + *n, t, k);
    *n += k;
    q[*n] = 0;
    *p = q;
}

static void on_ev(void *user, const chat_ev *ev)
{
    collect *c = user;
    switch (ev->kind) {
    case CHAT_EV_REASONING: add(c, &c->text[0], &c->n[0], ev->text, ev->len); break;
    case CHAT_EV_CONTENT:   add(c, &c->text[1], &c->n[1], ev->text, ev->len); break;
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
        c->n_args = 0;
        break;
    }
    case CHAT_EV_TOOL_ARGS: add(c, &c->args, &c->n_args, ev->text, ev->len); break;
    case CHAT_EV_TOOL_END: {
        cJSON *call = cJSON_GetArrayItem(c->calls, cJSON_GetArraySize(c->calls) - 1);
        cJSON_AddStringToObject(cJSON_GetObjectItem(call, "function"), "arguments",
                                c->n_args ? c->args : "{}");
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
    free(c.args);
    out->reasoning = c.text[0] ? c.text[0] : strdup("");
    out->content = c.text[1] ? c.text[1] : strdup("");
    out->tool_calls = c.calls;
    if (c.oom || !out->reasoning || !out->content) {
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
