/* chat_stream.c: the incremental Qwen3.5/3.6 output parser (chat_stream.h).
 *
 * One state per place in the format. Unconsumed bytes wait in `buf`; each
 * state either consumes a prefix of it and moves on, or says it needs more
 * bytes (a tag may still be arriving). Text sections are trimmed like the
 * template trims them: leading whitespace is dropped and trailing whitespace
 * waits in `ws` until non-space text follows it, so a section's end never
 * has to take back bytes already sent.
 */
#include "chat_stream.h"
#include "../util/buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum st {
    ST_REASON,      /* reasoning text */
    ST_CONTENT,     /* answer text */
    ST_CALL_OPEN,   /* after <tool_call>: expecting <function=NAME> */
    ST_CALL_BODY,   /* inside a function: <parameter=K> or </function> */
    ST_PARAM,       /* a parameter value, up to </parameter> */
    ST_CALL_CLOSE,  /* after </function>: expecting </tool_call> */
    ST_AFTER_CALL,  /* between calls: whitespace, another <tool_call>, or text */
};

#define NAME_MAX_LEN 256


struct chat_stream {
    enum st st;
    bool    parse_tools;
    cJSON  *tools;          /* a copy of the request's tools, or NULL */
    q36_buf    buf;            /* bytes not consumed yet */
    q36_buf    ws;             /* trailing whitespace held back in a text section */
    bool    at_start;       /* nothing sent yet in this text section */
    q36_buf    raw;            /* the current call's raw text, for a call that breaks */
    bool    begun;          /* the current call's TOOL_BEGIN was sent */
    bool    from_content;   /* the current call began inside the answer text */
    int     n_args;         /* parameters sent for the current call */
    const cJSON *props;     /* the current function's parameters.properties */
    char    key[NAME_MAX_LEN + 1];
    q36_buf    val;            /* the current parameter's value so far */
    bool    skip_nl;        /* drop one '\n' at the start of the value */
    int     n_calls;
    bool    may_open_think; /* the output may still open with <think> */
    bool    incomplete;     /* the end came inside reasoning or inside a call */
    chat_ev_fn fn;
    void   *user;
};

static bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

int chat_stream_new(const cJSON *tools, bool parse_tools, bool in_thinking, chat_stream **out,
                    q36_err *err)
{
    chat_stream *cs = calloc(1, sizeof *cs);
    if (!cs || (tools && !(cs->tools = cJSON_Duplicate(tools, true)))) {
        free(cs);
        *out = NULL;
        return q36_err_set(err, Q36_E_NOMEM, "out of memory for an output parser");
    }
    cs->parse_tools = parse_tools;
    cs->st = in_thinking ? ST_REASON : ST_CONTENT;
    cs->may_open_think = !in_thinking;
    cs->at_start = true;
    *out = cs;
    return 0;
}

void chat_stream_free(chat_stream *cs)
{
    if (!cs)
        return;
    cJSON_Delete(cs->tools);
    q36_buf_free(&cs->buf);
    q36_buf_free(&cs->ws);
    q36_buf_free(&cs->raw);
    q36_buf_free(&cs->val);
    free(cs);
}

int chat_stream_n_calls(const chat_stream *cs) { return cs->n_calls; }
bool chat_stream_complete(const chat_stream *cs) { return !cs->incomplete; }

static void send(chat_stream *cs, enum chat_ev_kind k, const char *t, size_t n)
{
    chat_ev ev = { k, cs->n_calls - 1, t, n };
    if (k == CHAT_EV_REASONING || k == CHAT_EV_CONTENT)
        ev.tool = -1;
    cs->fn(cs->user, &ev);
}

/* Text of the current section: trimmed at both ends without taking back. */
static void text_out(chat_stream *cs, const char *p, size_t n)
{
    enum chat_ev_kind k = cs->st == ST_REASON ? CHAT_EV_REASONING : CHAT_EV_CONTENT;
    if (cs->at_start)
        while (n && is_ws(*p))
            p++, n--;
    size_t last = n;
    while (last && is_ws(p[last - 1]))
        last--;
    if (last == 0) {
        if (!cs->at_start)
            q36_buf_add(&cs->ws, p, n);
        return;
    }
    if (cs->ws.n) {
        send(cs, k, cs->ws.p, cs->ws.n);
        cs->ws.n = 0;
    }
    send(cs, k, p, last);
    cs->at_start = false;
    q36_buf_add(&cs->ws, p + last, n - last);
}

static void section(chat_stream *cs, enum st st)
{
    cs->st = st;
    cs->ws.n = 0;
    cs->at_start = true;
}

/* Length of the longest tail of b that is a proper prefix of tag. */
static size_t partial_tail(const char *b, size_t n, const char *tag)
{
    size_t k = strlen(tag);
    for (size_t t = k - 1 < n ? k - 1 : n; t > 0; t--)
        if (!memcmp(b + n - t, tag, t))
            return t;
    return 0;
}

/* Does b[0..n) start with tag (1), could it still (0 with *more), or not (0)? */
static bool starts(const char *b, size_t n, const char *tag, bool *more)
{
    size_t k = strlen(tag);
    if (n >= k)
        return !memcmp(b, tag, k);
    if (!memcmp(b, tag, n))
        *more = true;
    return false;
}

/* ---- values ------------------------------------------------------------------------------ */

/* Python literals to JSON outside strings: True, False, None. */
static char *pythonic_to_json(const char *v, size_t n)
{
    char *o = malloc(n * 2 + 1);
    if (!o)
        return NULL;
    size_t k = 0;
    bool in_str = false;
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        if (in_str) {
            o[k++] = c;
            if (c == '\\' && i + 1 < n)
                o[k++] = v[++i];
            else if (c == '"')
                in_str = false;
            continue;
        }
        if (c == '"')
            in_str = true;
        bool word_start = i == 0 || !((v[i - 1] >= 'a' && v[i - 1] <= 'z') ||
                                      (v[i - 1] >= 'A' && v[i - 1] <= 'Z') || v[i - 1] == '_');
        const char *from[3] = { "True", "False", "None" }, *to[3] = { "true", "false", "null" };
        int hit = -1;
        for (int j = 0; j < 3 && word_start; j++) {
            size_t l = strlen(from[j]);
            if (i + l <= n && !memcmp(v + i, from[j], l) &&
                (i + l == n || !((v[i + l] >= 'a' && v[i + l] <= 'z') || (v[i + l] >= 'A' && v[i + l] <= 'Z'))))
                hit = j;
        }
        if (hit >= 0) {
            memcpy(o + k, to[hit], strlen(to[hit]));
            k += strlen(to[hit]);
            i += strlen(from[hit]) - 1;
        } else {
            o[k++] = c;
        }
    }
    o[k] = 0;
    return o;
}

static cJSON *parse_json(const char *v, size_t n)
{
    char *t = malloc(n + 1);
    if (!t)
        return NULL;
    memcpy(t, v, n);
    t[n] = 0;
    cJSON *j = cJSON_ParseWithOpts(t, NULL, true);
    free(t);
    if (!j) {
        char *py = pythonic_to_json(v, n);
        if (py)
            j = cJSON_ParseWithOpts(py, NULL, true);
        free(py);
    }
    return j;
}

/* Whether a property schema allows only strings (maybe with null). */
static bool string_only(const cJSON *schema)
{
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(schema, "type");
    if (cJSON_IsString(ty))
        return !strcmp(ty->valuestring, "string");
    if (cJSON_IsArray(ty)) {
        bool str = false, other = false;
        const cJSON *t;
        cJSON_ArrayForEach(t, ty) {
            if (cJSON_IsString(t) && !strcmp(t->valuestring, "string"))
                str = true;
            else if (!(cJSON_IsString(t) && !strcmp(t->valuestring, "null")))
                other = true;
        }
        return str && !other;
    }
    return false;
}

cJSON *chat_param_value(const char *v, size_t n, const cJSON *schema)
{
    if (schema && string_only(schema))
        return cJSON_CreateString(v ? v : "");
    size_t a = 0, b = n;
    while (a < b && is_ws(v[a]))
        a++;
    while (b > a && is_ws(v[b - 1]))
        b--;
    cJSON *j = b > a ? parse_json(v + a, b - a) : NULL;
    if (j && cJSON_IsString(j) && !schema) {     /* unknown type: a bare string stays raw */
        cJSON_Delete(j);
        j = NULL;
    }
    if (!j) {
        char *t = malloc(n + 1);
        if (!t)
            return NULL;
        memcpy(t, v, n);
        t[n] = 0;
        j = cJSON_CreateString(t);
        free(t);
    }
    return j;
}

/* ---- calls -------------------------------------------------------------------------------- */

static const cJSON *find_props(const chat_stream *cs, const char *name)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, cs->tools) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(f ? f : t, "name");
        if (cJSON_IsString(nm) && !strcmp(nm->valuestring, name)) {
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(f ? f : t, "parameters");
            if (!p)
                p = cJSON_GetObjectItemCaseSensitive(f ? f : t, "input_schema");
            return cJSON_GetObjectItemCaseSensitive(p, "properties");
        }
    }
    return NULL;
}

static void param_out(chat_stream *cs)
{
    const char *v = cs->val.p ? cs->val.p : "";
    size_t n = cs->val.n;
    if (n && v[n - 1] == '\n')                 /* the newline before </parameter> */
        n--;
    if (cs->val.p)
        cs->val.p[n] = 0;
    cJSON *val = chat_param_value(v, n, cJSON_GetObjectItemCaseSensitive(cs->props, cs->key));
    cJSON *key = cJSON_CreateString(cs->key);
    char *vs = val ? cJSON_PrintUnformatted(val) : NULL, *ks = key ? cJSON_PrintUnformatted(key) : NULL;
    q36_buf f = { 0 };
    q36_buf_add(&f, cs->n_args ? "," : "{", 1);      /* compact, like cJSON prints */
    q36_buf_add(&f, ks ? ks : "\"\"", strlen(ks ? ks : "\"\""));
    q36_buf_add(&f, ":", 1);
    q36_buf_add(&f, vs ? vs : "null", strlen(vs ? vs : "null"));
    if (f.p)
        send(cs, CHAT_EV_TOOL_ARGS, f.p, f.n);
    cs->n_args++;
    free(f.p);
    free(vs);
    free(ks);
    cJSON_Delete(val);
    cJSON_Delete(key);
    cs->val.n = 0;
}

static void call_end(chat_stream *cs)
{
    send(cs, CHAT_EV_TOOL_ARGS, cs->n_args ? "}" : "{}", cs->n_args ? 1 : 2);
    send(cs, CHAT_EV_TOOL_END, "", 0);
    cs->begun = false;
    cs->raw.n = 0;
    cs->st = ST_AFTER_CALL;
}

/* The call does not follow the format: what was not sent becomes text. */
static void call_broken(chat_stream *cs)
{
    if (cs->begun) {
        call_end(cs);
        section(cs, ST_CONTENT);
        return;                        /* buf goes on as content */
    }
    if (cs->from_content)
        cs->st = ST_CONTENT;           /* the text goes on where it was */
    else
        section(cs, ST_CONTENT);
    q36_buf r = cs->raw;
    cs->raw = (q36_buf){ 0 };
    if (r.n)
        text_out(cs, r.p, r.n);
    q36_buf_free(&r);
}

/* Moves n bytes from buf to the raw text of a call not begun yet (which
 * becomes content if the call breaks before its name). */
static void consume(chat_stream *cs, size_t n)
{
    if (!cs->begun)
        q36_buf_add(&cs->raw, cs->buf.p, n);
    q36_buf_drop(&cs->buf, n);
}

static void skip_ws(chat_stream *cs)
{
    size_t i = 0;
    while (i < cs->buf.n && is_ws(cs->buf.p[i]))
        i++;
    consume(cs, i);
}


/* One move of the machine; false when it needs more bytes. */
static bool step(chat_stream *cs, bool final)
{
    const char *b = cs->buf.p;
    size_t n = cs->buf.n;
    bool more = false;
    if (cs->st == ST_CONTENT && cs->may_open_think) {
        /* An output that was not started inside <think> may open one. */
        size_t i = 0;
        while (i < n && is_ws(b[i]))
            i++;
        if (i < n || final) {
            if (starts(b + i, n - i, "<think>", &more)) {
                q36_buf_drop(&cs->buf, i + 7);
                cs->may_open_think = false;
                section(cs, ST_REASON);
                return true;
            }
            if (more && !final)
                return false;
            cs->may_open_think = false;
        } else {
            return false;
        }
    }
    switch (cs->st) {
    case ST_REASON:
    case ST_CONTENT: {
        const char *tags[2] = { "</think>", "<tool_call>" };
        int first = cs->st == ST_REASON ? 0 : 1, last = cs->parse_tools ? 1 : 0;
        size_t at = n;
        int hit = -1;
        for (int t = first; t <= last; t++) {
            const char *m = n ? memmem(b, n, tags[t], strlen(tags[t])) : NULL;
            if (m && (size_t)(m - b) < at) {
                at = (size_t)(m - b);
                hit = t;
            }
        }
        if (hit >= 0) {
            text_out(cs, b, at);
            q36_buf_drop(&cs->buf, at + strlen(tags[hit]));
            if (hit == 0) {
                section(cs, ST_CONTENT);
            } else {
                cs->raw.n = 0;
                q36_buf_add(&cs->raw, "<tool_call>", 11);
                cs->from_content = cs->st == ST_CONTENT;
                cs->st = ST_CALL_OPEN;
            }
            return true;
        }
        size_t keep = 0;
        for (int t = first; t <= last && !final; t++) {
            size_t k = partial_tail(b, n, tags[t]);
            if (k > keep)
                keep = k;
        }
        if (n > keep) {
            text_out(cs, b, n - keep);
            q36_buf_drop(&cs->buf, n - keep);
        }
        return false;
    }
    case ST_CALL_OPEN: {
        skip_ws(cs);
        b = cs->buf.p;
        n = cs->buf.n;
        if (!n)
            return false;
        if (starts(b, n, "<function=", &more)) {
            const char *gt = memchr(b + 10, '>', n - 10);
            if (!gt) {
                if (n - 10 > NAME_MAX_LEN || final)
                    call_broken(cs);
                return !final && n - 10 > NAME_MAX_LEN;
            }
            size_t a = 10, e = (size_t)(gt - b);
            while (a < e && is_ws(b[a]))
                a++;
            while (e > a && is_ws(b[e - 1]))
                e--;
            if (e == a || e - a > NAME_MAX_LEN || memchr(b + a, '<', e - a)) {
                call_broken(cs);
                return true;
            }
            char name[NAME_MAX_LEN + 1];
            memcpy(name, b + a, e - a);
            name[e - a] = 0;
            consume(cs, (size_t)(gt - b) + 1);
            cs->props = find_props(cs, name);
            cs->n_args = 0;
            cs->n_calls++;
            cs->begun = true;
            cs->ws.n = 0;                  /* whitespace before a call is not content */
            send(cs, CHAT_EV_TOOL_BEGIN, name, strlen(name));
            cs->st = ST_CALL_BODY;
            return true;
        }
        if (more && !final)
            return false;
        call_broken(cs);
        return true;
    }
    case ST_CALL_BODY: {
        skip_ws(cs);
        b = cs->buf.p;
        n = cs->buf.n;
        if (!n)
            return false;
        if (starts(b, n, "<parameter=", &more)) {
            const char *gt = memchr(b + 11, '>', n - 11);
            if (!gt) {
                if (n - 11 > NAME_MAX_LEN || final) {
                    call_broken(cs);
                    return true;
                }
                return false;
            }
            size_t a = 11, e = (size_t)(gt - b);
            while (a < e && is_ws(b[a]))
                a++;
            while (e > a && is_ws(b[e - 1]))
                e--;
            if (e - a > NAME_MAX_LEN) {
                call_broken(cs);
                return true;
            }
            memcpy(cs->key, b + a, e - a);
            cs->key[e - a] = 0;
            consume(cs, (size_t)(gt - b) + 1);
            cs->val.n = 0;
            cs->skip_nl = true;
            cs->st = ST_PARAM;
            return true;
        }
        if (starts(b, n, "</function>", &more)) {
            consume(cs, 11);
            cs->st = ST_CALL_CLOSE;
            return true;
        }
        if (starts(b, n, "</tool_call>", &more)) {   /* </function> missing */
            consume(cs, 12);
            call_end(cs);
            return true;
        }
        if (more && !final)
            return false;
        call_broken(cs);
        return true;
    }
    case ST_PARAM: {
        if (cs->skip_nl && n) {
            if (b[0] == '\n')
                consume(cs, 1);
            cs->skip_nl = false;
            return true;
        }
        const char *m = n ? memmem(b, n, "</parameter>", 12) : NULL;
        if (m) {
            q36_buf_add(&cs->val, b, (size_t)(m - b));
            consume(cs, (size_t)(m - b) + 12);
            param_out(cs);
            cs->st = ST_CALL_BODY;
            return true;
        }
        if (final) {
            /* No </parameter>: the value runs to the end, less the closing
             * tags a model writes after it. */
            q36_buf_add(&cs->val, b, n);
            consume(cs, n);
            const char *ends[2] = { "</tool_call>", "</function>" };
            for (int k = 0; k < 2; k++) {
                size_t vn = cs->val.n;
                while (vn && is_ws(cs->val.p[vn - 1]))
                    vn--;
                size_t l = strlen(ends[k]);
                if (vn >= l && !memcmp(cs->val.p + vn - l, ends[k], l))
                    cs->val.n = vn - l;
            }
            param_out(cs);
            cs->st = ST_CALL_BODY;
            return true;
        }
        size_t keep = partial_tail(b, n, "</parameter>");
        q36_buf_add(&cs->val, b, n - keep);
        consume(cs, n - keep);
        return false;
    }
    case ST_CALL_CLOSE:
    case ST_AFTER_CALL: {
        skip_ws(cs);
        b = cs->buf.p;
        n = cs->buf.n;
        if (!n)
            return false;
        if (cs->st == ST_CALL_CLOSE) {
            if (starts(b, n, "</tool_call>", &more)) {
                consume(cs, 12);
                call_end(cs);
                return true;
            }
            if (more && !final)
                return false;
            call_end(cs);                  /* </tool_call> missing */
            return true;
        }
        if (cs->parse_tools && starts(b, n, "<tool_call>", &more)) {
            q36_buf_drop(&cs->buf, 11);
            cs->raw.n = 0;
            q36_buf_add(&cs->raw, "<tool_call>", 11);
            cs->from_content = false;
            cs->st = ST_CALL_OPEN;
            return true;
        }
        if (more && !final)
            return false;
        section(cs, ST_CONTENT);           /* text after the calls */
        return true;
    }
    }
    return false;
}

void chat_stream_push(chat_stream *cs, const char *text, size_t len, chat_ev_fn fn, void *user)
{
    cs->fn = fn;
    cs->user = user;
    q36_buf_add(&cs->buf, text, len);
    while (step(cs, false))
        ;
}

void chat_stream_finish(chat_stream *cs, chat_ev_fn fn, void *user)
{
    cs->fn = fn;
    cs->user = user;
    if (cs->st == ST_REASON || cs->st == ST_CALL_OPEN || cs->st == ST_CALL_BODY || cs->st == ST_PARAM ||
        cs->st == ST_CALL_CLOSE)
        cs->incomplete = true;
    for (int guard = 0; guard < 64 && (cs->buf.n || cs->st == ST_PARAM ||
                                       cs->st == ST_CALL_BODY || cs->st == ST_CALL_CLOSE ||
                                       cs->st == ST_CALL_OPEN); guard++) {
        if (cs->st == ST_CALL_OPEN && !cs->buf.n) {
            call_broken(cs);
            continue;
        }
        if ((cs->st == ST_CALL_BODY || cs->st == ST_CALL_CLOSE) && !cs->buf.n) {
            call_end(cs);
            continue;
        }
        step(cs, true);
    }
    cs->ws.n = 0;                          /* trailing whitespace is trimmed */
}
