/* req.c: reading a request: the growable buffer, the per-request error whose
 * first setting wins (like the GGUF reader's cursor), the JSON field cursor
 * whose messages name the field path, what was expected and what was found,
 * and the error bodies of both API flavours.
 */
#include "srv_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- buffer ------------------------------------------------------------------------------- */

void srv_buf_fmt(q36_buf *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        q36_buf_add(b, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    q36_buf_add(b, big, (size_t)n);
    free(big);
}

void srv_buf_json(q36_buf *b, const cJSON *v)
{
    char *s = cJSON_PrintUnformatted(v);
    if (!s) {
        b->oom = true;
        return;
    }
    q36_buf_str(b, s);
    free(s);
}


/* ---- errors ------------------------------------------------------------------------------- */

int srv_fail(srv_error *e, int status, const char *type, const char *param, const char *fmt, ...)
{
    if (e->status)
        return e->status;
    e->status = status;
    e->type = type;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return status;
}

cJSON *srv_error_json(const srv_error *e, enum srv_flavour f)
{
    cJSON *root = cJSON_CreateObject(), *err = cJSON_CreateObject();
    if (f == SRV_ANTHROPIC) {
        /* Anthropic's types: a prompt over the context is request_too_large
         * (clients compact on it), other request errors invalid_request_error. */
        const char *t = e->type;
        if (e->n_ctx)
            t = "request_too_large";
        else if (!strcmp(t, "server_error"))
            t = "api_error";
        else if (!strcmp(t, "unavailable_error"))
            t = "overloaded_error";
        cJSON_AddStringToObject(root, "type", "error");
        cJSON_AddStringToObject(err, "type", t);
        cJSON_AddStringToObject(err, "message", e->msg);
    } else {
        cJSON_AddNumberToObject(err, "code", e->status);
        cJSON_AddStringToObject(err, "message", e->msg);
        cJSON_AddStringToObject(err, "type", e->type);
        if (e->param[0])
            cJSON_AddStringToObject(err, "param", e->param);
        else
            cJSON_AddNullToObject(err, "param");
        if (e->n_ctx) {
            cJSON_AddNumberToObject(err, "n_prompt_tokens", e->n_prompt);
            cJSON_AddNumberToObject(err, "n_ctx", e->n_ctx);
        }
    }
    cJSON_AddItemToObject(root, "error", err);
    return root;
}

/* ---- the cursor --------------------------------------------------------------------------- */

const char *rq_type_name(const cJSON *v)
{
    if (!v)
        return "nothing";
    if (cJSON_IsString(v))
        return "a string";
    if (cJSON_IsNumber(v))
        return "a number";
    if (cJSON_IsBool(v))
        return "a boolean";
    if (cJSON_IsNull(v))
        return "null";
    if (cJSON_IsArray(v))
        return "an array";
    if (cJSON_IsObject(v))
        return "an object";
    return "an unknown value";
}

static void types_text(unsigned t, char *out, size_t cap)
{
    static const char *names[] = { "a string", "a number", "a boolean", "an object", "an array", "null" };
    size_t o = 0;
    int k = 0;
    out[0] = 0;
    for (int i = 0; i < 6; i++)
        if (t & (1u << i))
            o += (size_t)snprintf(out + o, o < cap ? cap - o : 0, "%s%s", k++ ? " or " : "", names[i]);
}

static bool type_ok(const cJSON *v, unsigned t)
{
    return ((t & RQ_STR) && cJSON_IsString(v)) || ((t & RQ_NUM) && cJSON_IsNumber(v)) ||
           ((t & RQ_BOOL) && cJSON_IsBool(v)) || ((t & RQ_OBJ) && cJSON_IsObject(v)) ||
           ((t & RQ_ARR) && cJSON_IsArray(v)) || ((t & RQ_NULL) && cJSON_IsNull(v));
}

static void field_path(char *out, size_t cap, const char *path, const char *key)
{
    snprintf(out, cap, "%s%s%s", path ? path : "", path && path[0] ? "." : "", key);
}

const cJSON *rq_get(srv_error *e, const cJSON *obj, const char *path, const char *key,
                    unsigned types, bool required)
{
    const cJSON *v = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    char fp[96], want[96];
    if (!v || (cJSON_IsNull(v) && !(types & RQ_NULL))) {
        if (required) {
            field_path(fp, sizeof fp, path, key);
            types_text(types, want, sizeof want);
            srv_fail(e, 400, "invalid_request_error", fp, "'%s': required, expected %s", fp, want);
        }
        return NULL;
    }
    if (!type_ok(v, types)) {
        field_path(fp, sizeof fp, path, key);
        types_text(types, want, sizeof want);
        srv_fail(e, 400, "invalid_request_error", fp, "'%s': expected %s, found %s", fp, want,
                 rq_type_name(v));
        return NULL;
    }
    return v;
}

void rq_num(srv_error *e, const cJSON *obj, const char *path, const char *key, double lo,
            double hi, double *out)
{
    const cJSON *v = rq_get(e, obj, path, key, RQ_NUM, false);
    if (!v)
        return;
    double d = v->valuedouble;
    if (!isfinite(d) || d < lo || d > hi) {
        char fp[96];
        field_path(fp, sizeof fp, path, key);
        srv_fail(e, 400, "invalid_request_error", fp, "'%s': expected a number in [%g, %g], found %g",
                 fp, lo, hi, d);
        return;
    }
    *out = d;
}

void rq_int(srv_error *e, const cJSON *obj, const char *path, const char *key, double lo,
            double hi, int *out)
{
    double d = NAN;
    rq_num(e, obj, path, key, lo, hi, &d);
    if (isnan(d))
        return;
    if (d != floor(d)) {
        char fp[96];
        field_path(fp, sizeof fp, path, key);
        srv_fail(e, 400, "invalid_request_error", fp, "'%s': expected an integer, found %g", fp, d);
        return;
    }
    *out = (int)d;
}

void rq_bool(srv_error *e, const cJSON *obj, const char *path, const char *key, bool *out)
{
    const cJSON *v = rq_get(e, obj, path, key, RQ_BOOL, false);
    if (v)
        *out = cJSON_IsTrue(v);
}

cJSON *rq_parse(srv_error *e, const char *body, size_t n)
{
    if (!body || n == 0) {
        srv_fail(e, 400, "invalid_request_error", "", "the request body is empty; expected a JSON object");
        return NULL;
    }
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(body, n, &end, false);
    if (!j) {
        size_t at = end && end >= body && end <= body + n ? (size_t)(end - body) : 0;
        srv_fail(e, 400, "invalid_request_error", "", "the request body is not valid JSON (at byte %zu of %zu)",
                 at, n);
        return NULL;
    }
    while (end && end < body + n && (*end == ' ' || *end == '\n' || *end == '\r' || *end == '\t'))
        end++;
    if (end && end < body + n) {
        srv_fail(e, 400, "invalid_request_error", "", "the request body has bytes after its JSON value (at byte %zu of %zu)",
                 (size_t)(end - body), n);
        cJSON_Delete(j);
        return NULL;
    }
    if (!cJSON_IsObject(j)) {
        srv_fail(e, 400, "invalid_request_error", "", "the request body: expected a JSON object, found %s",
                 rq_type_name(j));
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}
