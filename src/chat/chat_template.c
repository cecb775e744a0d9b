/* chat_template.c: the Qwen3.5/3.6 chat template, rendered in C (chat.h).
 *
 * The code follows the template top to bottom: media and text parts of a
 * content, the tools system block (or the plain system turn), the index of
 * the last real user query (a user turn that is not just a wrapped tool
 * response), the turns, the generation prompt. The `tojson` output follows
 * the template engines used with it: {"k": v, ...} and [a, b] with ", " and
 * ": " separators, non-ASCII text kept as it is, numbers printed as
 * JavaScript/JSON prints them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "../util/buf.h"

/* ---- Python's str methods on byte ranges ------------------------------------------- */

/* Length of the Python whitespace character at s[0..n), or 0. */
static size_t py_space(const char *s, size_t n)
{
    unsigned char c = (unsigned char)s[0];
    if (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F))
        return 1;
    if (n >= 2 && c == 0xC2 && ((unsigned char)s[1] == 0x85 || (unsigned char)s[1] == 0xA0))
        return 2;
    if (n >= 3 && c == 0xE1 && (unsigned char)s[1] == 0x9A && (unsigned char)s[2] == 0x80)
        return 3;                                            /* U+1680 */
    if (n >= 3 && c == 0xE2) {
        unsigned b1 = (unsigned char)s[1], b2 = (unsigned char)s[2];
        if (b1 == 0x80 && (b2 <= 0x8A || b2 == 0xA8 || b2 == 0xA9 || b2 == 0xAF))
            return 3;                                        /* U+2000-200A, 2028, 2029, 202F */
        if (b1 == 0x81 && b2 == 0x9F)
            return 3;                                        /* U+205F */
    }
    if (n >= 3 && c == 0xE3 && (unsigned char)s[1] == 0x80 && (unsigned char)s[2] == 0x80)
        return 3;                                            /* U+3000 */
    return 0;
}

/* str.strip(): the view s[*a..*b) shrinks to drop whitespace at both ends. */
static void py_strip(const char *s, size_t *a, size_t *b)
{
    size_t k;
    while (*a < *b && (k = py_space(s + *a, *b - *a)))
        *a += k;
    while (*a < *b) {
        size_t back = 0;
        for (size_t w = 1; w <= 3 && w <= *b - *a; w++)
            if (py_space(s + *b - w, w) == w) {
                back = w;
                break;
            }
        if (!back)
            break;
        *b -= back;
    }
}

static const char *find(const char *s, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    return k <= n ? memmem(s, n, needle, k) : NULL;
}

static const char *rfind(const char *s, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = n >= k ? n - k + 1 : 0; i-- > 0;)
        if (!memcmp(s + i, needle, k))
            return s + i;
    return NULL;
}

/* ---- tojson ------------------------------------------------------------------------ */

/* A double as JavaScript's Number#toString (and JSON.stringify) writes it:
 * the shortest digits that read back to the same value, plain notation for
 * exponents -7 < e < 21, else d.ddde+x. */
static void js_number(q36_buf *s, double x)
{
    char buf[64];
    if (!isfinite(x)) {
        q36_buf_str(s, "null");
        return;
    }
    if (x == 0) {
        q36_buf_str(s, "0");
        return;
    }
    if (x < 0) {
        q36_buf_str(s, "-");
        x = -x;
    }
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec - 1, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    char digits[32];
    int k = 0;
    for (const char *p = buf; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9')
            digits[k++] = *p;
    while (k > 1 && digits[k - 1] == '0')
        k--;
    digits[k] = 0;
    int n = atoi(strchr(buf, 'e') + 1) + 1;      /* value = 0.digits x 10^n */
    if (k <= n && n <= 21) {
        q36_buf_add(s, digits, (size_t)k);
        for (int i = k; i < n; i++)
            q36_buf_str(s, "0");
    } else if (0 < n && n <= 21) {
        q36_buf_add(s, digits, (size_t)n);
        q36_buf_str(s, ".");
        q36_buf_add(s, digits + n, (size_t)(k - n));
    } else if (-6 < n && n <= 0) {
        q36_buf_str(s, "0.");
        for (int i = 0; i < -n; i++)
            q36_buf_str(s, "0");
        q36_buf_add(s, digits, (size_t)k);
    } else {
        q36_buf_add(s, digits, 1);
        if (k > 1) {
            q36_buf_str(s, ".");
            q36_buf_add(s, digits + 1, (size_t)(k - 1));
        }
        snprintf(buf, sizeof buf, "e%c%d", n - 1 >= 0 ? '+' : '-', abs(n - 1));
        q36_buf_str(s, buf);
    }
}

static void json_string(q36_buf *s, const char *t)
{
    q36_buf_str(s, "\"");
    for (const unsigned char *p = (const unsigned char *)t; *p; p++) {
        char esc[8];
        switch (*p) {
        case '"':  q36_buf_str(s, "\\\""); break;
        case '\\': q36_buf_str(s, "\\\\"); break;
        case '\b': q36_buf_str(s, "\\b"); break;
        case '\f': q36_buf_str(s, "\\f"); break;
        case '\n': q36_buf_str(s, "\\n"); break;
        case '\r': q36_buf_str(s, "\\r"); break;
        case '\t': q36_buf_str(s, "\\t"); break;
        default:
            if (*p < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", *p);
                q36_buf_str(s, esc);
            } else {
                q36_buf_add(s, (const char *)p, 1);
            }
        }
    }
    q36_buf_str(s, "\"");
}

static void tojson(q36_buf *s, const cJSON *v)
{
    if (cJSON_IsString(v)) {
        json_string(s, v->valuestring);
    } else if (cJSON_IsNumber(v)) {
        js_number(s, v->valuedouble);
    } else if (cJSON_IsTrue(v)) {
        q36_buf_str(s, "true");
    } else if (cJSON_IsFalse(v)) {
        q36_buf_str(s, "false");
    } else if (cJSON_IsArray(v)) {
        q36_buf_str(s, "[");
        const cJSON *it;
        bool first = true;
        cJSON_ArrayForEach(it, v) {
            q36_buf_str(s, first ? "" : ", ");
            tojson(s, it);
            first = false;
        }
        q36_buf_str(s, "]");
    } else if (cJSON_IsObject(v)) {
        q36_buf_str(s, "{");
        const cJSON *it;
        bool first = true;
        cJSON_ArrayForEach(it, v) {
            q36_buf_str(s, first ? "\"" : ", \"");
            q36_buf_str(s, it->string);                /* keys as they are, like the engines */
            q36_buf_str(s, "\": ");
            tojson(s, it);
            first = false;
        }
        q36_buf_str(s, "}");
    } else {
        q36_buf_str(s, "null");
    }
}

/* `value | string` for a tool-call argument that is not a list or mapping. */
static void py_string(q36_buf *s, const cJSON *v)
{
    if (cJSON_IsString(v))
        q36_buf_str(s, v->valuestring);
    else if (cJSON_IsNumber(v))
        js_number(s, v->valuedouble);
    else if (cJSON_IsBool(v))
        q36_buf_str(s, cJSON_IsTrue(v) ? "True" : "False");
    else
        q36_buf_str(s, "None");
}

/* ---- the template ---------------------------------------------------------------- */

typedef struct render {
    const chat_opts *o;
    int   images, videos;
    q36_err *err;
} render;

static int raise(render *r, const char *msg)
{
    return q36_err_set(r->err, CHAT_E_TEMPLATE, "%s", msg);
}

static const char *role_of(const cJSON *m)
{
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    return cJSON_IsString(role) ? role->valuestring : "";
}

static bool has(const cJSON *item, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(item, key) != NULL;
}

static bool type_is(const cJSON *item, const char *t)
{
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(item, "type");
    return cJSON_IsString(ty) && !strcmp(ty->valuestring, t);
}

/* The template's render_content macro, into s. */
static int render_content(render *r, const cJSON *content, bool count, bool is_system, q36_buf *s)
{
    if (!content || cJSON_IsNull(content))
        return 0;
    if (cJSON_IsString(content)) {
        q36_buf_str(s, content->valuestring);
        return 0;
    }
    if (!cJSON_IsArray(content))
        return raise(r, "Unexpected content type.");
    const cJSON *item;
    cJSON_ArrayForEach(item, content) {
        if (!cJSON_IsObject(item))
            return raise(r, "Unexpected item type in content.");
        bool image = has(item, "image") || has(item, "image_url") || type_is(item, "image");
        bool video = !image && (has(item, "video") || type_is(item, "video"));
        if (image || video) {
            if (is_system)
                return raise(r, image ? "System message cannot contain images."
                                      : "System message cannot contain videos.");
            int *counter = image ? &r->images : &r->videos;
            if (count)
                ++*counter;
            if (r->o->add_vision_id) {
                char buf[48];
                snprintf(buf, sizeof buf, "%s %d: ", image ? "Picture" : "Video", *counter);
                q36_buf_str(s, buf);
            }
            q36_buf_str(s, image ? "<|vision_start|><|image_pad|><|vision_end|>"
                           : "<|vision_start|><|video_pad|><|vision_end|>");
        } else if (has(item, "text")) {
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(item, "text");
            if (!cJSON_IsString(t))
                return raise(r, "Unexpected item type in content.");
            q36_buf_str(s, t->valuestring);
        } else {
            return raise(r, "Unexpected item type in content.");
        }
    }
    return 0;
}

/* render_content(...)|trim into a fresh string. */
static int content_trimmed(render *r, const cJSON *content, bool count, bool is_system, q36_buf *out)
{
    q36_buf t = { 0 };
    int rc = render_content(r, content, count, is_system, &t);
    if (!rc && t.p) {
        size_t a = 0, b = t.n;
        py_strip(t.p, &a, &b);
        q36_buf_add(out, t.p + a, b - a);
    }
    if (!out->p)
        q36_buf_add(out, "", 0);
    free(t.p);
    return rc;
}

static const char tools_intro[] =
    "# Tools\n\nYou have access to the following functions:\n\n<tools>";
static const char tools_rules[] =
    "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n"
    "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n"
    "</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second parameter\n"
    "that can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\n"
    "Reminder:\n- Function calls MUST follow the specified format: an inner <function=...></function> "
    "block must be nested within <tool_call></tool_call> XML tags\n- Required parameters MUST be "
    "specified\n- You may provide optional reasoning for your function call in natural language "
    "BEFORE the function call, but NOT after\n- If there is no function call available, answer the "
    "question like normal with your current knowledge and do not tell the user about function calls\n"
    "</IMPORTANT>";

static int render_system(render *r, const cJSON *messages, const cJSON *tools, q36_buf *s)
{
    const cJSON *first = cJSON_GetArrayItem(messages, 0);
    bool sys = !strcmp(role_of(first), "system");
    q36_buf c = { 0 };
    int rc = 0;
    if (sys && (rc = content_trimmed(r, cJSON_GetObjectItemCaseSensitive(first, "content"), false, true, &c)))
        goto done;
    if (cJSON_IsArray(tools) && cJSON_GetArraySize(tools) > 0) {
        q36_buf_str(s, "<|im_start|>system\n");
        q36_buf_str(s, tools_intro);
        const cJSON *t;
        cJSON_ArrayForEach(t, tools) {
            q36_buf_str(s, "\n");
            tojson(s, t);
        }
        q36_buf_str(s, tools_rules);
        if (sys && c.n) {
            q36_buf_str(s, "\n\n");
            q36_buf_add(s, c.p, c.n);
        }
        q36_buf_str(s, "<|im_end|>\n");
    } else if (sys) {
        q36_buf_str(s, "<|im_start|>system\n");
        q36_buf_add(s, c.p, c.n);
        q36_buf_str(s, "<|im_end|>\n");
    }
done:
    free(c.p);
    return rc;
}

/* Index of the last user turn that is a real query, or a raise. */
static int last_query(render *r, const cJSON *messages, int *out)
{
    for (int i = cJSON_GetArraySize(messages); i-- > 0;) {
        const cJSON *m = cJSON_GetArrayItem(messages, i);
        if (strcmp(role_of(m), "user"))
            continue;
        q36_buf c = { 0 };
        int rc = content_trimmed(r, cJSON_GetObjectItemCaseSensitive(m, "content"), false, false, &c);
        if (rc) {
            free(c.p);
            return rc;
        }
        bool wrapped = c.n >= 15 && !strncmp(c.p, "<tool_response>", 15) && c.n >= 16 &&
                       !strcmp(c.p + c.n - 16, "</tool_response>");
        free(c.p);
        if (!wrapped) {
            *out = i;
            return 0;
        }
    }
    return raise(r, "No user query found in messages.");
}

static int render_tool_calls(render *r, const cJSON *calls, bool content_nonempty, q36_buf *s)
{
    int j = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, calls) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(item, "function");
        const cJSON *tc = f ? f : item;
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(tc, "name");
        if (!cJSON_IsString(name))
            return raise(r, "Tool call without a function name.");
        q36_buf_str(s, j == 0 ? (content_nonempty ? "\n\n<tool_call>\n<function=" : "<tool_call>\n<function=")
                        : "\n<tool_call>\n<function=");
        q36_buf_str(s, name->valuestring);
        q36_buf_str(s, ">\n");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(tc, "arguments");
        cJSON *parsed = NULL;
        if (cJSON_IsString(args)) {            /* OpenAI sends the arguments as JSON text */
            parsed = cJSON_Parse(args->valuestring);
            if (!cJSON_IsObject(parsed)) {
                cJSON_Delete(parsed);
                return raise(r, "Tool call arguments are not a JSON object.");
            }
            args = parsed;
        }
        if (args && !cJSON_IsNull(args)) {
            if (!cJSON_IsObject(args)) {
                cJSON_Delete(parsed);
                return raise(r, "Tool call arguments are not a mapping.");
            }
            const cJSON *a;
            cJSON_ArrayForEach(a, args) {
                q36_buf_str(s, "<parameter=");
                q36_buf_str(s, a->string);
                q36_buf_str(s, ">\n");
                if (cJSON_IsObject(a) || cJSON_IsArray(a))
                    tojson(s, a);
                else
                    py_string(s, a);
                q36_buf_str(s, "\n</parameter>\n");
            }
        }
        cJSON_Delete(parsed);
        q36_buf_str(s, "</function>\n</tool_call>");
        j++;
    }
    return 0;
}

static int render_assistant(render *r, const cJSON *m, const q36_buf *content, bool after_query, q36_buf *s)
{
    const char *c = content->p;
    size_t ca = 0, cb = content->n;             /* the answer: c[ca..cb) */
    const char *reason = "";
    size_t ra = 0, rb = 0;                      /* the reasoning: reason[ra..rb) */
    const cJSON *rc_item = cJSON_GetObjectItemCaseSensitive(m, "reasoning_content");
    if (cJSON_IsString(rc_item)) {
        reason = rc_item->valuestring;
        rb = strlen(reason);
    } else if (find(c, cb, "</think>")) {
        /* content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') */
        size_t end = (size_t)(find(c, cb, "</think>") - c);
        while (end > 0 && c[end - 1] == '\n')
            end--;
        const char *open = rfind(c, end, "<think>");
        size_t start = open ? (size_t)(open - c) + 7 : 0;
        while (start < end && c[start] == '\n')
            start++;
        reason = c;
        ra = start;
        rb = end;
        /* content.split('</think>')[-1].lstrip('\n') */
        ca = (size_t)(rfind(c, cb, "</think>") - c) + 8;
        while (ca < cb && c[ca] == '\n')
            ca++;
    }
    py_strip(reason, &ra, &rb);
    q36_buf_str(s, "<|im_start|>assistant\n");
    if (after_query) {
        q36_buf_str(s, "<think>\n");
        q36_buf_add(s, reason + ra, rb - ra);
        q36_buf_str(s, "\n</think>\n\n");
    }
    q36_buf_add(s, c + ca, cb - ca);
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
    if (cJSON_IsArray(calls) && cJSON_GetArraySize(calls) > 0) {
        size_t ta = ca, tb = cb;
        py_strip(c, &ta, &tb);
        int rc = render_tool_calls(r, calls, tb > ta, s);
        if (rc)
            return rc;
    }
    q36_buf_str(s, "<|im_end|>\n");
    return 0;
}

int chat_render(const cJSON *messages, const cJSON *tools, const chat_opts *o,
                    char **out, size_t *len, q36_err *err)
{
    static const chat_opts defaults = { .add_generation_prompt = true, .enable_thinking = -1 };
    render r = { .o = o ? o : &defaults, .err = err };
    q36_buf s = { 0 };
    int rc = 0, lq = -1;
    *out = NULL;
    *len = 0;
    if (!cJSON_IsArray(messages) || cJSON_GetArraySize(messages) == 0)
        return raise(&r, "No messages provided.");
    if ((rc = render_system(&r, messages, tools, &s)) || (rc = last_query(&r, messages, &lq)))
        goto fail;
    int n = cJSON_GetArraySize(messages);
    for (int i = 0; i < n; i++) {
        const cJSON *m = cJSON_GetArrayItem(messages, i);
        const char *role = role_of(m);
        q36_buf c = { 0 };
        if ((rc = content_trimmed(&r, cJSON_GetObjectItemCaseSensitive(m, "content"), true, false, &c))) {
            free(c.p);
            goto fail;
        }
        if (!strcmp(role, "system")) {
            if (i != 0)
                rc = raise(&r, "System message must be at the beginning.");
        } else if (!strcmp(role, "user")) {
            q36_buf_str(&s, "<|im_start|>user\n");
            q36_buf_add(&s, c.p, c.n);
            q36_buf_str(&s, "<|im_end|>\n");
        } else if (!strcmp(role, "assistant")) {
            rc = render_assistant(&r, m, &c, i > lq || r.o->preserve_thinking, &s);
        } else if (!strcmp(role, "tool")) {
            if (i > 0 && strcmp(role_of(cJSON_GetArrayItem(messages, i - 1)), "tool"))
                q36_buf_str(&s, "<|im_start|>user");
            q36_buf_str(&s, "\n<tool_response>\n");
            q36_buf_add(&s, c.p, c.n);
            q36_buf_str(&s, "\n</tool_response>");
            if (i == n - 1 || strcmp(role_of(cJSON_GetArrayItem(messages, i + 1)), "tool"))
                q36_buf_str(&s, "<|im_end|>\n");
        } else {
            rc = raise(&r, "Unexpected message role.");
        }
        free(c.p);
        if (rc)
            goto fail;
    }
    if (r.o->add_generation_prompt)
        q36_buf_str(&s, r.o->enable_thinking == 0 ? "<|im_start|>assistant\n<think>\n\n</think>\n\n"
                                            : "<|im_start|>assistant\n<think>\n");
    q36_buf_add(&s, "", 0);
    if (s.oom) {
        rc = q36_err_set(err, Q36_E_NOMEM, "chat template: out of memory");
        goto fail;
    }
    *out = s.p;
    *len = s.n;
    return 0;
fail:
    free(s.p);
    return rc;
}

bool chat_template_is_qwen35(const char *t, size_t n)
{
    return find(t, n, "<tool_call>\\n<function=") && find(t, n, "ns.last_query_index") &&
           find(t, n, "<|im_start|>") && find(t, n, "enable_thinking") && find(t, n, "render_content");
}
