/* gguf_write.c: the streaming GGUF writer (always version 3). Metadata and
 * the tensor directory are kept in memory (small); tensor data goes straight
 * to a buffered FILE and is never held, so a file of any size needs bounded
 * memory. Offsets are assigned at gguf_w_begin, when the alignment is final.
 */
#include "gguf_internal.h"
#include "../quant/types.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WRITE_BUFFER (4u << 20)

typedef struct wkv {
    char           *key;
    enum gguf_vtype type;
    uint8_t        *bytes;    /* encoded value, without the type tag */
    uint64_t        nbytes;
} wkv;

typedef struct wtensor {
    char    *name;
    uint32_t type, n_dims;
    uint64_t ne[GGUF_MAX_DIMS];
    uint64_t nbytes, offset;
} wtensor;

enum { W_DECLARE, W_DATA, W_DONE };

/* Open-addressing index of names (entries are index+1, 0 = empty), so that
 * replacing a key or refusing a duplicate tensor stays O(1) per call. */
typedef struct windex {
    size_t *slot;
    size_t  cap;              /* power of two, or 0 */
} windex;

struct gguf_writer {
    wkv     *kv;  size_t n_kv, cap_kv;
    wtensor *t;   size_t n_t, cap_t;
    windex   kv_ix, t_ix;
    q36_err  err;             /* first setter error, reported by gguf_w_begin */
    int      state;
    FILE    *fp;
    char    *buf, *path;
    uint32_t alignment;
    uint64_t pos;             /* bytes written so far */
    uint64_t data_start;
    size_t   cur;             /* tensor receiving data */
    uint64_t cur_done;        /* bytes of it received */
};

/* ------------------------------------------------------------------ setup */

gguf_writer *gguf_writer_new(void)
{
    gguf_writer *w = calloc(1, sizeof *w);
    if (w)
        w->alignment = GGUF_DEFAULT_ALIGNMENT;
    return w;
}

void gguf_writer_free(gguf_writer *w)
{
    if (!w)
        return;
    free(w->kv_ix.slot);
    free(w->t_ix.slot);
    if (w->fp)
        fclose(w->fp);
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].bytes);
    }
    for (size_t i = 0; i < w->n_t; i++)
        free(w->t[i].name);
    free(w->kv);
    free(w->t);
    free(w->buf);
    free(w->path);
    free(w);
}

static const char *kv_name(const gguf_writer *w, size_t i) { return w->kv[i].key; }
static const char *t_name(const gguf_writer *w, size_t i)  { return w->t[i].name; }

/* Finds name in ix (names read through get); returns its index or -1, and in
 * *pos the slot where it is or would go. */
static long ix_find(const gguf_writer *w, const windex *ix,
                    const char *(*get)(const gguf_writer *, size_t), const char *name, size_t *pos)
{
    if (!ix->cap)
        return -1;
    size_t m = ix->cap - 1, i = (size_t)gguf_hash(name, strlen(name)) & m;
    for (; ix->slot[i]; i = (i + 1) & m)
        if (strcmp(get(w, ix->slot[i] - 1), name) == 0)
            break;
    if (pos)
        *pos = i;
    return ix->slot[i] ? (long)(ix->slot[i] - 1) : -1;
}

/* Adds entry `idx` (whose name get() returns) to ix, growing it to keep the
 * load at most one half. Returns 0 or -1 when out of memory. */
static int ix_add(const gguf_writer *w, windex *ix,
                  const char *(*get)(const gguf_writer *, size_t), size_t idx)
{
    if (2 * (idx + 1) > ix->cap) {
        size_t cap = ix->cap ? 2 * ix->cap : 64;
        while (cap < 2 * (idx + 1))
            cap *= 2;
        size_t *slot = calloc(cap, sizeof *slot);
        if (!slot)
            return -1;
        free(ix->slot);
        ix->slot = slot;
        ix->cap = cap;
        for (size_t k = 0; k < idx; k++) {
            size_t pos;
            ix_find(w, ix, get, get(w, k), &pos);
            ix->slot[pos] = k + 1;
        }
    }
    size_t pos;
    ix_find(w, ix, get, get(w, idx), &pos);
    ix->slot[pos] = idx + 1;
    return 0;
}

__attribute__((format(printf, 3, 4)))
static int werr(gguf_writer *w, q36_err *err, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *name = w && w->path ? w->path : "gguf writer";
    if (w)
        q36_err_set(&w->err, GGUF_E_WRITE, "%s: %s: %s", name, gguf_err_kind_name(GGUF_E_WRITE), msg);
    return q36_err_set(err, GGUF_E_WRITE, "%s: %s: %s", name, gguf_err_kind_name(GGUF_E_WRITE), msg);
}

static bool name_ok(const char *s)
{
    return s && *s && gguf_utf8_valid((const uint8_t *)s, strlen(s));
}

/* Stores key = (type, bytes), replacing an earlier value of the same key. */
static void set_kv(gguf_writer *w, const char *key, enum gguf_vtype type,
                   const void *bytes, uint64_t nbytes)
{
    if (!w)
        return;
    if (w->state != W_DECLARE) {
        werr(w, NULL, "key '%s' set after gguf_w_begin", key ? key : "(null)");
        return;
    }
    if (!name_ok(key)) {
        werr(w, NULL, "expected a non-empty UTF-8 key, found %s", key ? "invalid bytes" : "NULL");
        return;
    }
    if (nbytes > SIZE_MAX) {
        werr(w, NULL, "key '%s': value of %llu bytes is too large", key, (unsigned long long)nbytes);
        return;
    }
    uint8_t *copy = malloc(nbytes ? (size_t)nbytes : 1);
    if (!copy) {
        werr(w, NULL, "key '%s': no memory for %llu bytes", key, (unsigned long long)nbytes);
        return;
    }
    if (nbytes)
        memcpy(copy, bytes, (size_t)nbytes);
    long old = ix_find(w, &w->kv_ix, kv_name, key, NULL);
    if (old >= 0) {
        wkv *kv = &w->kv[old];
        free(kv->bytes);
        kv->type = type;
        kv->bytes = copy;
        kv->nbytes = nbytes;
        return;
    }
    if (w->n_kv == w->cap_kv) {
        size_t c = w->cap_kv ? 2 * w->cap_kv : 32;
        wkv *q = realloc(w->kv, c * sizeof *q);
        if (!q) {
            free(copy);
            werr(w, NULL, "key '%s': no memory", key);
            return;
        }
        w->kv = q;
        w->cap_kv = c;
    }
    char *k = strdup(key);
    if (!k) {
        free(copy);
        werr(w, NULL, "key '%s': no memory", key);
        return;
    }
    w->kv[w->n_kv] = (wkv){ k, type, copy, nbytes };
    if (ix_add(w, &w->kv_ix, kv_name, w->n_kv)) {
        free(k);
        free(copy);
        werr(w, NULL, "key '%s': no memory", key);
        return;
    }
    w->n_kv++;
}

void gguf_w_u8  (gguf_writer *w, const char *key, uint8_t v)  { set_kv(w, key, GGUF_T_U8, &v, 1); }
void gguf_w_i8  (gguf_writer *w, const char *key, int8_t v)   { set_kv(w, key, GGUF_T_I8, &v, 1); }
void gguf_w_u16 (gguf_writer *w, const char *key, uint16_t v) { set_kv(w, key, GGUF_T_U16, &v, 2); }
void gguf_w_i16 (gguf_writer *w, const char *key, int16_t v)  { set_kv(w, key, GGUF_T_I16, &v, 2); }
void gguf_w_u32 (gguf_writer *w, const char *key, uint32_t v) { set_kv(w, key, GGUF_T_U32, &v, 4); }
void gguf_w_i32 (gguf_writer *w, const char *key, int32_t v)  { set_kv(w, key, GGUF_T_I32, &v, 4); }
void gguf_w_u64 (gguf_writer *w, const char *key, uint64_t v) { set_kv(w, key, GGUF_T_U64, &v, 8); }
void gguf_w_i64 (gguf_writer *w, const char *key, int64_t v)  { set_kv(w, key, GGUF_T_I64, &v, 8); }
void gguf_w_f32 (gguf_writer *w, const char *key, float v)    { set_kv(w, key, GGUF_T_F32, &v, 4); }
void gguf_w_f64 (gguf_writer *w, const char *key, double v)   { set_kv(w, key, GGUF_T_F64, &v, 8); }

void gguf_w_bool(gguf_writer *w, const char *key, bool v)
{
    uint8_t b = v ? 1 : 0;
    set_kv(w, key, GGUF_T_BOOL, &b, 1);
}

void gguf_w_str(gguf_writer *w, const char *key, const char *v)
{
    const char *s = v ? v : "";
    uint64_t n = strlen(s);
    uint8_t *b = malloc(8 + n);
    if (!b) {
        werr(w, NULL, "key '%s': no memory", key ? key : "(null)");
        return;
    }
    memcpy(b, &n, 8);
    memcpy(b + 8, s, n);
    set_kv(w, key, GGUF_T_STR, b, 8 + n);
    free(b);
}

void gguf_w_arr(gguf_writer *w, const char *key, enum gguf_vtype elem,
                const void *data, uint64_t n)
{
    uint32_t sz = gguf_vtype_size(elem);
    if (!sz) {
        werr(w, NULL, "key '%s': gguf_w_arr takes fixed-size elements, found %s",
             key ? key : "(null)", gguf_vtype_name(elem));
        return;
    }
    if (n > (SIZE_MAX - 12) / sz) {
        werr(w, NULL, "key '%s': %llu elements are too many", key ? key : "(null)",
             (unsigned long long)n);
        return;
    }
    uint8_t *b = malloc((size_t)(12 + n * sz));
    if (!b) {
        werr(w, NULL, "key '%s': no memory", key ? key : "(null)");
        return;
    }
    uint32_t e = (uint32_t)elem;
    memcpy(b, &e, 4);
    memcpy(b + 4, &n, 8);
    if (n)
        memcpy(b + 12, data, (size_t)(n * sz));
    set_kv(w, key, GGUF_T_ARR, b, 12 + n * sz);
    free(b);
}

void gguf_w_arr_str(gguf_writer *w, const char *key, const char *const *strs,
                    const uint64_t *lens, uint64_t n)
{
    uint64_t total = 12;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len = lens ? lens[i] : strlen(strs[i]);
        if (len > SIZE_MAX - 8 - total) {
            werr(w, NULL, "key '%s': strings too large", key ? key : "(null)");
            return;
        }
        total += 8 + len;
    }
    uint8_t *b = malloc((size_t)total);
    if (!b) {
        werr(w, NULL, "key '%s': no memory for %llu bytes", key ? key : "(null)",
             (unsigned long long)total);
        return;
    }
    uint32_t e = GGUF_T_STR;
    memcpy(b, &e, 4);
    memcpy(b + 4, &n, 8);
    uint64_t o = 12;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len = lens ? lens[i] : strlen(strs[i]);
        memcpy(b + o, &len, 8);
        if (len)
            memcpy(b + o + 8, strs[i], (size_t)len);
        o += 8 + len;
    }
    set_kv(w, key, GGUF_T_ARR, b, total);
    free(b);
}

void gguf_w_raw(gguf_writer *w, const char *key, enum gguf_vtype type,
                const void *bytes, uint64_t nbytes)
{
    q36_err e = { 0 };
    if (gguf_check_value(type, bytes, nbytes, key ? key : "(null)", &e)) {
        werr(w, NULL, "key '%s': raw value is malformed: %s", key ? key : "(null)", e.msg);
        return;
    }
    set_kv(w, key, type, bytes, nbytes);
}

int gguf_w_tensor(gguf_writer *w, const char *name, uint32_t type,
                  uint32_t n_dims, const uint64_t *ne)
{
    if (!w)
        return GGUF_E_WRITE;
    const char *nm = name ? name : "(null)";
    if (w->state != W_DECLARE)
        return werr(w, NULL, "tensor '%s' declared after gguf_w_begin", nm);
    if (!name_ok(name))
        return werr(w, NULL, "expected a non-empty UTF-8 tensor name, found %s",
                    name ? "invalid bytes" : "NULL");
    const quant_type_info *qi = quant_type_get(type);
    if (!qi)
        return werr(w, NULL, "tensor '%s': unknown tensor type %u", nm, type);
    if (n_dims == 0 || n_dims > GGUF_MAX_DIMS)
        return werr(w, NULL, "tensor '%s': expected n_dims 1..%d, found %u", nm, GGUF_MAX_DIMS, n_dims);
    wtensor t = { .type = type, .n_dims = n_dims, .ne = { 1, 1, 1, 1 } };
    uint64_t nel = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        if (ne[d] == 0 || ne[d] > (uint64_t)INT64_MAX / nel)
            return werr(w, NULL, "tensor '%s': dimension %u = %llu is zero or too large", nm, d,
                        (unsigned long long)ne[d]);
        t.ne[d] = ne[d];
        nel *= ne[d];
    }
    if (t.ne[0] % qi->blck)
        return werr(w, NULL, "tensor '%s': ne0 %llu is not a multiple of %s's block of %u", nm,
                    (unsigned long long)t.ne[0], qi->name, qi->blck);
    t.nbytes = nel / qi->blck * qi->size;
    if (ix_find(w, &w->t_ix, t_name, name, NULL) >= 0)
        return werr(w, NULL, "tensor '%s' declared twice", nm);
    if (w->n_t == w->cap_t) {
        size_t c = w->cap_t ? 2 * w->cap_t : 64;
        wtensor *q = realloc(w->t, c * sizeof *q);
        if (!q)
            return werr(w, NULL, "tensor '%s': no memory", nm);
        w->t = q;
        w->cap_t = c;
    }
    if (!(t.name = strdup(name)))
        return werr(w, NULL, "tensor '%s': no memory", nm);
    w->t[w->n_t] = t;
    if (ix_add(w, &w->t_ix, t_name, w->n_t)) {
        free(t.name);
        return werr(w, NULL, "tensor '%s': no memory", nm);
    }
    return (int)w->n_t++;
}

/* ------------------------------------------------------------------ output */

static int put(gguf_writer *w, const void *p, size_t n, q36_err *err)
{
    if (n && fwrite(p, 1, n, w->fp) != n)
        return werr(w, err, "cannot write %zu bytes at byte %llu: %s", n,
                    (unsigned long long)w->pos, strerror(errno));
    w->pos += n;
    return 0;
}

static int put_u32(gguf_writer *w, uint32_t v, q36_err *err) { return put(w, &v, 4, err); }
static int put_u64(gguf_writer *w, uint64_t v, q36_err *err) { return put(w, &v, 8, err); }

static int put_str(gguf_writer *w, const char *s, q36_err *err)
{
    uint64_t n = strlen(s);
    int rc = put_u64(w, n, err);
    return rc ? rc : put(w, s, (size_t)n, err);
}

static int pad(gguf_writer *w, q36_err *err)
{
    static const uint8_t zeros[256];
    while (w->pos % w->alignment) {
        uint64_t k = w->alignment - w->pos % w->alignment;
        int rc = put(w, zeros, (size_t)(k < sizeof zeros ? k : sizeof zeros), err);
        if (rc)
            return rc;
    }
    return 0;
}

/* Reads general.alignment when set: it must be a u32 power of two. */
static int final_alignment(gguf_writer *w, q36_err *err)
{
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, "general.alignment") != 0)
            continue;
        uint32_t a = 0;
        if (w->kv[i].type != GGUF_T_U32)
            return werr(w, err, "general.alignment must be u32, found %s",
                        gguf_vtype_name(w->kv[i].type));
        memcpy(&a, w->kv[i].bytes, 4);
        if (a == 0 || (a & (a - 1)))
            return werr(w, err, "general.alignment must be a power of two, found %u", a);
        w->alignment = a;
    }
    return 0;
}

int gguf_w_begin(gguf_writer *w, const char *path, q36_err *err)
{
    if (!w)
        return q36_err_set(err, GGUF_E_WRITE, "gguf writer: %s: NULL writer", gguf_err_kind_name(GGUF_E_WRITE));
    if (w->err.kind)
        return q36_err_set(err, w->err.kind, "%s", w->err.msg);
    if (w->state != W_DECLARE)
        return werr(w, err, "gguf_w_begin called twice");
    if (!(w->path = strdup(path)))
        return werr(w, err, "no memory");
    int rc = final_alignment(w, err);
    if (rc)
        return rc;
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        w->t[i].offset = off;
        uint64_t padded = (w->t[i].nbytes + w->alignment - 1) / w->alignment * w->alignment;
        if (padded < w->t[i].nbytes || off + padded < off)
            return werr(w, err, "tensor '%s': data offsets overflow", w->t[i].name);
        off += padded;
    }
    w->fp = fopen(path, "wb");
    if (!w->fp)
        return werr(w, err, "cannot create: %s", strerror(errno));
    w->buf = malloc(WRITE_BUFFER);
    if (w->buf)
        setvbuf(w->fp, w->buf, _IOFBF, WRITE_BUFFER);
    w->state = W_DATA;

    if ((rc = put_u32(w, GGUF_MAGIC, err)) || (rc = put_u32(w, 3, err)) ||
        (rc = put_u64(w, w->n_t, err)) || (rc = put_u64(w, w->n_kv, err)))
        return rc;
    for (size_t i = 0; i < w->n_kv; i++) {
        const wkv *kv = &w->kv[i];
        if ((rc = put_str(w, kv->key, err)) || (rc = put_u32(w, kv->type, err)) ||
            (rc = put(w, kv->bytes, (size_t)kv->nbytes, err)))
            return rc;
    }
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        if ((rc = put_str(w, t->name, err)) || (rc = put_u32(w, t->n_dims, err)))
            return rc;
        for (uint32_t d = 0; d < t->n_dims; d++)
            if ((rc = put_u64(w, t->ne[d], err)))
                return rc;
        if ((rc = put_u32(w, t->type, err)) || (rc = put_u64(w, t->offset, err)))
            return rc;
    }
    if ((rc = pad(w, err)))
        return rc;
    w->data_start = w->pos;
    w->cur = 0;
    w->cur_done = 0;
    return 0;
}

/* Pads after each finished tensor and moves on to the next. */
static int advance(gguf_writer *w, q36_err *err)
{
    while (w->cur < w->n_t && w->cur_done == w->t[w->cur].nbytes) {
        int rc = pad(w, err);
        if (rc)
            return rc;
        w->cur++;
        w->cur_done = 0;
    }
    return 0;
}

int gguf_w_data(gguf_writer *w, const void *bytes, uint64_t n, q36_err *err)
{
    if (!w || w->state != W_DATA)
        return werr(w, err, "gguf_w_data called outside gguf_w_begin .. gguf_w_finish");
    if (w->err.kind)
        return q36_err_set(err, w->err.kind, "%s", w->err.msg);
    const uint8_t *p = bytes;
    while (n) {
        if (w->cur >= w->n_t)
            return werr(w, err, "%llu bytes of data beyond the last declared tensor",
                        (unsigned long long)n);
        const wtensor *t = &w->t[w->cur];
        uint64_t k = t->nbytes - w->cur_done;
        if (k > n)
            k = n;
        int rc = put(w, p, (size_t)k, err);
        if (rc)
            return rc;
        p += k;
        n -= k;
        w->cur_done += k;
        if ((rc = advance(w, err)))
            return rc;
    }
    return 0;
}

int gguf_w_finish(gguf_writer *w, q36_err *err)
{
    if (!w || w->state != W_DATA)
        return werr(w, err, "gguf_w_finish called without gguf_w_begin");
    if (w->err.kind)
        return q36_err_set(err, w->err.kind, "%s", w->err.msg);
    int rc = advance(w, err);
    if (rc)
        return rc;
    if (w->cur < w->n_t)
        return werr(w, err, "tensor %zu '%s' got %llu of its %llu bytes", w->cur, w->t[w->cur].name,
                    (unsigned long long)w->cur_done, (unsigned long long)w->t[w->cur].nbytes);
    w->state = W_DONE;
    FILE *fp = w->fp;
    w->fp = NULL;
    if (fflush(fp) != 0 || ferror(fp)) {
        int e = errno;
        fclose(fp);
        return werr(w, err, "cannot write: %s", strerror(e));
    }
    if (fclose(fp) != 0)
        return werr(w, err, "cannot close: %s", strerror(errno));
    return 0;
}
