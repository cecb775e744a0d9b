/* chat_parse.c: what a Qwen3.5/3.6 model writes after the generation
 * prompt, split into reasoning, answer and tool calls (chat.h).
 *
 * The model writes [reasoning]</think>\n\n[answer][<tool_call>...]. A tool
 * call is <tool_call>\n<function=NAME>\n(<parameter=KEY>\nVALUE\n</parameter>\n)*
 * </function>\n</tool_call>, the format the template teaches; one newline
 * after the opening and before the closing parameter tag belongs to the
 * format, the rest to the value. Text the model writes after a tool call is
 * dropped (the template forbids it).
 */
#include <stdlib.h>
#include <string.h>

#include "chat.h"

static const char *find(const char *s, const char *end, const char *needle)
{
    size_t k = strlen(needle);
    return (size_t)(end - s) >= k ? memmem(s, (size_t)(end - s), needle, k) : NULL;
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

static char *dup_trim(const char *a, const char *b)
{
    while (a < b && is_ws(*a))
        a++;
    while (b > a && is_ws(b[-1]))
        b--;
    char *s = malloc((size_t)(b - a) + 1);
    if (s) {
        memcpy(s, a, (size_t)(b - a));
        s[b - a] = 0;
    }
    return s;
}

/* A parameter value: JSON when it parses as JSON other than a bare string. */
static cJSON *param_value(const char *a, const char *b)
{
    char *t = malloc((size_t)(b - a) + 1);
    if (!t)
        return NULL;
    memcpy(t, a, (size_t)(b - a));
    t[b - a] = 0;
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithOpts(t, &end, true);
    if (!j || cJSON_IsString(j)) {
        cJSON_Delete(j);
        j = cJSON_CreateString(t);
    }
    free(t);
    return j;
}

/* Parses one <tool_call> body s[..e) into an OpenAI tool call, or NULL. */
static cJSON *parse_call(const char *s, const char *e)
{
    const char *f = find(s, e, "<function=");
    if (!f)
        return NULL;
    const char *name = f + 10, *gt = memchr(name, '>', (size_t)(e - name));
    if (!gt)
        return NULL;
    cJSON *args = cJSON_CreateObject();
    const char *p = gt + 1;
    for (;;) {
        const char *q = find(p, e, "<parameter=");
        if (!q)
            break;
        const char *key = q + 11, *kgt = memchr(key, '>', (size_t)(e - key));
        if (!kgt)
            break;
        const char *v = kgt + 1;
        const char *close = find(v, e, "</parameter>");
        const char *ve = close ? close : e;
        if (v < ve && *v == '\n')
            v++;
        if (ve > v && ve[-1] == '\n')
            ve--;
        char *k = dup_trim(key, kgt);
        cJSON *val = param_value(v, ve);
        if (k && val)
            cJSON_AddItemToObject(args, k, val);
        else
            cJSON_Delete(val);
        free(k);
        if (!close)
            break;
        p = close + 12;
    }
    char *nm = dup_trim(name, gt);
    char *js = cJSON_PrintUnformatted(args);
    cJSON_Delete(args);
    cJSON *call = cJSON_CreateObject(), *fn = cJSON_CreateObject();
    cJSON_AddStringToObject(call, "type", "function");
    cJSON_AddStringToObject(fn, "name", nm ? nm : "");
    cJSON_AddStringToObject(fn, "arguments", js ? js : "{}");
    cJSON_AddItemToObject(call, "function", fn);
    free(nm);
    free(js);
    return call;
}

int chat_parse(const char *text, size_t len, bool in_thinking, chat_reply *out, q36_err *err)
{
    memset(out, 0, sizeof *out);
    const char *s = text, *e = text + len;
    out->complete = true;
    const char *rest = s;
    if (!in_thinking) {
        const char *t = s;
        while (t < e && is_ws(*t))
            t++;
        if ((size_t)(e - t) >= 7 && !memcmp(t, "<think>", 7)) {
            in_thinking = true;
            s = t + 7;
        }
    }
    if (in_thinking) {
        const char *close = find(s, e, "</think>");
        out->reasoning = dup_trim(s, close ? close : e);
        if (!close)
            out->complete = false;
        rest = close ? close + 8 : e;
    } else {
        out->reasoning = dup_trim(s, s);
    }
    const char *call = find(rest, e, "<tool_call>");
    out->content = dup_trim(rest, call ? call : e);
    if (!out->reasoning || !out->content) {
        chat_reply_free(out);
        return q36_err_set(err, Q36_E_NOMEM, "chat parse: out of memory");
    }
    while (call) {
        const char *body = call + 11;
        const char *end = find(body, e, "</tool_call>");
        if (!end)
            out->complete = false;
        cJSON *c = parse_call(body, end ? end : e);
        if (c) {
            if (!out->tool_calls)
                out->tool_calls = cJSON_CreateArray();
            cJSON_AddItemToArray(out->tool_calls, c);
        }
        call = end ? find(end + 12, e, "<tool_call>") : NULL;
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
