/* gguf_read.c: opening a GGUF file and validating its whole directory: the
 * header, every metadata value (nested arrays included), the tensor
 * directory, the alignment, and where each tensor's bytes lie. It owns the
 * gguf_file object and its lookups by name; typed reads of values live in
 * gguf_value.c, the writer in gguf_write.c.
 *
 * Every count, length and offset is checked against the bytes left before it
 * is used, so memory allocated here is bounded by a small multiple of the file
 * size. Tensor data is never touched: opening a 20 GB file reads only its
 * directory.
 */
#include "gguf_internal.h"
#include "../quant/types.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Smallest encodings, used to bound counts before allocating: a key-value
 * pair is a length (8), one key byte, a type (4) and a one-byte value; a
 * tensor entry is a length (8), one name byte, n_dims (4), one dimension (8),
 * a type (4) and an offset (8). */
#define MIN_KV_BYTES     14u
#define MIN_TENSOR_BYTES 33u
#define HEADER_BYTES     24u

/* ------------------------------------------------------------------ cursor */

typedef struct parser {
    const uint8_t *b;
    uint64_t       size, pos;
    const char    *name;      /* file name for messages */
    q36_err       *err;
    gguf_file     *f;         /* NULL: validate only, build no tables */
    char           obj[224];  /* the object being read, e.g. "key 3 'a.b'" */
    int            depth;     /* arrays entered; idx[] is the element path, */
    uint64_t       idx[GGUF_MAX_NEST];   /* formatted only for a message */
} parser;

static uint64_t remain(const parser *p) { return p->size - p->pos; }

__attribute__((format(printf, 4, 5)))
static int perr(parser *p, int kind, uint64_t at, const char *fmt, ...)
{
    char detail[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    char path[96] = "";
    size_t o = 0;
    for (int i = 0; i < p->depth && o < sizeof path - 24; i++)
        o += (size_t)snprintf(path + o, sizeof path - o, "[%llu]", (unsigned long long)p->idx[i]);
    return q36_err_set(p->err, kind, "%s: %s: %s%s%s: %s (at byte %llu)",
                       p->name, gguf_err_kind_name(kind), p->obj,
                       path[0] ? " element " : "", path, detail,
                       (unsigned long long)at);
}

static int rd_u32(parser *p, uint32_t *out, const char *field)
{
    if (remain(p) < 4)
        return perr(p, GGUF_E_TRUNCATED, p->pos, "expected 4 bytes of %s, found %llu",
                    field, (unsigned long long)remain(p));
    memcpy(out, p->b + p->pos, 4);
    p->pos += 4;
    return 0;
}

static int rd_u64(parser *p, uint64_t *out, const char *field)
{
    if (remain(p) < 8)
        return perr(p, GGUF_E_TRUNCATED, p->pos, "expected 8 bytes of %s, found %llu",
                    field, (unsigned long long)remain(p));
    memcpy(out, p->b + p->pos, 8);
    p->pos += 8;
    return 0;
}

/* A string's length and bytes; *s points into the buffer. */
static int rd_str(parser *p, const uint8_t **s, uint64_t *n, const char *field)
{
    uint64_t at = p->pos;
    int rc = rd_u64(p, n, field);
    if (rc)
        return rc;
    if (*n > remain(p))
        return perr(p, GGUF_E_TRUNCATED, at, "expected %s of %llu bytes, found %llu left",
                    field, (unsigned long long)*n, (unsigned long long)remain(p));
    *s = p->b + p->pos;
    p->pos += *n;
    return 0;
}

/* Quotes a name for a message: at most ~80 bytes, control bytes and (when the
 * name is not valid UTF-8) non-ASCII bytes escaped as \xNN. */
static void quote_name(char *dst, size_t cap, const uint8_t *s, uint64_t n)
{
    bool utf8 = gguf_utf8_valid(s, n);
    size_t o = 0;
    dst[o++] = '\'';
    for (uint64_t i = 0; i < n && o + 8 < cap; i++) {
        if (o > 80) {
            memcpy(dst + o, "...", 3);
            o += 3;
            break;
        }
        uint8_t c = s[i];
        if (c < 0x20 || c == 0x7f || c == '\'' || c == '\\' || (c >= 0x80 && !utf8))
            o += (size_t)snprintf(dst + o, cap - o, "\\x%02x", c);
        else
            dst[o++] = (char)c;
    }
    dst[o++] = '\'';
    dst[o] = 0;
}

/* ------------------------------------------------------------------ helpers */

uint64_t gguf_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

bool gguf_utf8_valid(const uint8_t *s, uint64_t n)
{
    uint64_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        uint32_t len, cp, min;
        if ((c & 0xe0) == 0xc0)      { len = 2; cp = c & 0x1f; min = 0x80; }
        else if ((c & 0xf0) == 0xe0) { len = 3; cp = c & 0x0f; min = 0x800; }
        else if ((c & 0xf8) == 0xf0) { len = 4; cp = c & 0x07; min = 0x10000; }
        else return false;
        if (n - i < len)
            return false;
        for (uint32_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += len;
    }
    return true;
}

uint32_t gguf_vtype_size(enum gguf_vtype t)
{
    switch (t) {
    case GGUF_T_U8: case GGUF_T_I8: case GGUF_T_BOOL: return 1;
    case GGUF_T_U16: case GGUF_T_I16: return 2;
    case GGUF_T_U32: case GGUF_T_I32: case GGUF_T_F32: return 4;
    case GGUF_T_U64: case GGUF_T_I64: case GGUF_T_F64: return 8;
    default: return 0;
    }
}

/* Minimum encoded bytes of one element of type t (string: its length field;
 * array: its element type and count). */
static uint64_t min_elem_bytes(enum gguf_vtype t)
{
    if (t == GGUF_T_STR) return 8;
    if (t == GGUF_T_ARR) return 12;
    return gguf_vtype_size(t);
}

/* Grows *pp (elements of size `es`) so that it holds `need`; cap doubles. */
static int grow(void **pp, uint64_t *cap, uint64_t need, size_t es)
{
    if (need <= *cap)
        return 0;
    uint64_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    if (c > SIZE_MAX / es)
        return -1;
    void *q = realloc(*pp, (size_t)(c * es));
    if (!q)
        return -1;
    *pp = q;
    *cap = c;
    return 0;
}

/* Capacities of the table pools while parsing (not kept in gguf_file). */
typedef struct pools {
    uint64_t tables_cap, off_cap, sub_cap;
} pools;

/* ------------------------------------------------------------------ values */

static int parse_value(parser *p, pools *pl, enum gguf_vtype type, int depth,
                       gguf_value *out);

static int parse_array(parser *p, pools *pl, int depth, gguf_value *out)
{
    uint64_t at = p->pos;
    uint32_t elem = 0;
    uint64_t n = 0;
    int rc;
    if (depth >= GGUF_MAX_NEST)
        return perr(p, GGUF_E_VTYPE, at, "expected arrays nested at most %d deep, found deeper",
                    GGUF_MAX_NEST);
    if ((rc = rd_u32(p, &elem, "array element type")))
        return rc;
    if (elem >= GGUF_T_COUNT)
        return perr(p, GGUF_E_VTYPE, at, "expected an array element type below %d, found %u",
                    GGUF_T_COUNT, elem);
    uint64_t at_n = p->pos;
    if ((rc = rd_u64(p, &n, "array count")))
        return rc;
    uint64_t min = min_elem_bytes((enum gguf_vtype)elem);
    if (n > remain(p) / min)
        return perr(p, GGUF_E_COUNT, at_n,
                    "expected at most %llu %s elements in the %llu bytes left, found count %llu",
                    (unsigned long long)(remain(p) / min), gguf_vtype_name((enum gguf_vtype)elem),
                    (unsigned long long)remain(p), (unsigned long long)n);
    out->type = GGUF_T_ARR;
    out->elem = (enum gguf_vtype)elem;
    out->n = n;
    out->p = p->b + p->pos;
    out->aux = GGUF_NO_TABLE;
    if (min == gguf_vtype_size((enum gguf_vtype)elem)) {   /* fixed-size elements */
        p->pos += n * min;
        return 0;
    }

    gguf_file *f = p->f;
    uint64_t off0 = 0, sub0 = 0;
    if (f) {
        if (f->n_tables >= GGUF_NO_TABLE)
            return perr(p, GGUF_E_COUNT, at, "expected fewer than %u arrays of strings or arrays",
                        GGUF_NO_TABLE);
        if (grow((void **)&f->tables, &pl->tables_cap, f->n_tables + 1, sizeof *f->tables) ||
            grow((void **)&f->off, &pl->off_cap, f->n_off + n, sizeof *f->off) ||
            (elem == GGUF_T_ARR &&
             grow((void **)&f->sub, &pl->sub_cap, f->n_sub + n, sizeof *f->sub)))
            return perr(p, GGUF_E_NOMEM, at, "expected memory for %llu element offsets, found none",
                        (unsigned long long)n);
        out->aux = (uint32_t)f->n_tables;
        off0 = f->n_off;
        sub0 = f->n_sub;
        f->tables[f->n_tables++] = (gguf_table){ off0, sub0 };
        f->n_off += n;
        if (elem == GGUF_T_ARR)
            f->n_sub += n;
    }
    int d = p->depth++;
    for (uint64_t i = 0; i < n; i++) {
        if (f)
            f->off[off0 + i] = p->pos;
        p->idx[d] = i;
        gguf_value ev;
        if (elem == GGUF_T_STR) {
            const uint8_t *s;
            uint64_t len;
            if ((rc = rd_str(p, &s, &len, "string")))
                return rc;
        } else {
            if ((rc = parse_array(p, pl, depth + 1, &ev)))
                return rc;
            if (f)
                f->sub[sub0 + i] = ev.aux;
        }
    }
    p->depth = d;
    return 0;
}

static int parse_value(parser *p, pools *pl, enum gguf_vtype type, int depth,
                       gguf_value *out)
{
    memset(out, 0, sizeof *out);
    out->type = type;
    out->aux = GGUF_NO_TABLE;
    if (type == GGUF_T_ARR)
        return parse_array(p, pl, depth, out);
    if (type == GGUF_T_STR) {
        const uint8_t *s;
        int rc = rd_str(p, &s, &out->n, "string value");
        out->p = s;
        return rc;
    }
    uint32_t sz = gguf_vtype_size(type);
    if (remain(p) < sz)
        return perr(p, GGUF_E_TRUNCATED, p->pos, "expected %u bytes of %s value, found %llu",
                    sz, gguf_vtype_name(type), (unsigned long long)remain(p));
    out->p = p->b + p->pos;
    out->n = 1;
    p->pos += sz;
    return 0;
}

int gguf_check_value(enum gguf_vtype type, const void *bytes, uint64_t nbytes,
                     const char *what, q36_err *err)
{
    parser p = { .b = bytes, .size = nbytes, .name = "gguf_w_raw", .err = err };
    snprintf(p.obj, sizeof p.obj, "%s", what);
    gguf_value v;
    if ((unsigned)type >= GGUF_T_COUNT)
        return perr(&p, GGUF_E_VTYPE, 0, "expected a value type below %d, found %u",
                    GGUF_T_COUNT, (unsigned)type);
    int rc = parse_value(&p, NULL, type, 0, &v);
    if (rc)
        return rc;
    if (p.pos != nbytes)
        return perr(&p, GGUF_E_COUNT, p.pos, "expected %llu bytes of value, found %llu",
                    (unsigned long long)p.pos, (unsigned long long)nbytes);
    return 0;
}

/* ------------------------------------------------------------------ hashing */

static uint64_t hash_cap(uint64_t n)
{
    uint64_t c = 8;
    while (c < 2 * n)
        c *= 2;
    return c;
}

/* Find the key (or tensor name) s[0..n) by hash with linear probing; return
 * its index or -1, and in *slot the slot where it is or would go. */
static int64_t kv_lookup(const gguf_file *f, const char *s, uint64_t n, uint64_t *slot)
{
    uint64_t m = f->kv_cap - 1, i = gguf_hash(s, n) & m;
    for (;; i = (i + 1) & m) {
        uint64_t e = f->kv_hash[i];
        if (!e)
            break;
        const gguf_kv *kv = &f->kv[e - 1];
        if (kv->klen == n && memcmp(kv->key, s, n) == 0) {
            if (slot) *slot = i;
            return (int64_t)(e - 1);
        }
    }
    if (slot) *slot = i;
    return -1;
}

static int64_t t_lookup(const gguf_file *f, const char *s, uint64_t n, uint64_t *slot)
{
    uint64_t m = f->t_cap - 1, i = gguf_hash(s, n) & m;
    for (;; i = (i + 1) & m) {
        uint64_t e = f->t_hash[i];
        if (!e)
            break;
        if (f->t_nlen[e - 1] == n && memcmp(f->tensors[e - 1].name, s, n) == 0) {
            if (slot) *slot = i;
            return (int64_t)(e - 1);
        }
    }
    if (slot) *slot = i;
    return -1;
}

/* ------------------------------------------------------------------ directory */

static int parse_header(parser *p, uint64_t *n_tensors, uint64_t *n_kv)
{
    gguf_file *f = p->f;
    uint32_t magic;
    snprintf(p->obj, sizeof p->obj, "header");
    if (p->size < 4)
        return perr(p, GGUF_E_TRUNCATED, 0, "expected at least %u bytes, found %llu",
                    HEADER_BYTES, (unsigned long long)p->size);
    memcpy(&magic, p->b, 4);
    if (magic != GGUF_MAGIC)
        return perr(p, GGUF_E_MAGIC, 0, "expected magic 47 47 55 46 (\"GGUF\"), found %02x %02x %02x %02x",
                    p->b[0], p->b[1], p->b[2], p->b[3]);
    if (p->size < HEADER_BYTES)
        return perr(p, GGUF_E_TRUNCATED, p->size, "expected at least %u bytes, found %llu",
                    HEADER_BYTES, (unsigned long long)p->size);
    p->pos = 4;
    int rc = rd_u32(p, &f->version, "version");
    if (rc)
        return rc;
    if (f->version != 2 && f->version != 3)
        return perr(p, GGUF_E_VERSION, 4, "expected version 2 or 3, found %u%s", f->version,
                    (f->version & 0xffff) == 0 ? " (a big-endian file?)" : "");
    rd_u64(p, n_tensors, "tensor count");
    rd_u64(p, n_kv, "metadata count");
    if (*n_kv > remain(p) / MIN_KV_BYTES)
        return perr(p, GGUF_E_COUNT, 16, "expected at most %llu key-value pairs in the %llu bytes left, found %llu",
                    (unsigned long long)(remain(p) / MIN_KV_BYTES),
                    (unsigned long long)remain(p), (unsigned long long)*n_kv);
    if (*n_tensors > remain(p) / MIN_TENSOR_BYTES)
        return perr(p, GGUF_E_COUNT, 8, "expected at most %llu tensors in the %llu bytes left, found %llu",
                    (unsigned long long)(remain(p) / MIN_TENSOR_BYTES),
                    (unsigned long long)remain(p), (unsigned long long)*n_tensors);
    return 0;
}

static int parse_kvs(parser *p, pools *pl, uint64_t n_kv)
{
    gguf_file *f = p->f;
    f->kv = calloc(n_kv ? n_kv : 1, sizeof *f->kv);
    f->kv_cap = hash_cap(n_kv);
    f->kv_hash = calloc(f->kv_cap, sizeof *f->kv_hash);
    if (!f->kv || !f->kv_hash)
        return perr(p, GGUF_E_NOMEM, 16, "expected memory for %llu keys, found none",
                    (unsigned long long)n_kv);
    for (uint64_t i = 0; i < n_kv; i++) {
        gguf_kv *kv = &f->kv[i];
        const uint8_t *s;
        int rc;
        snprintf(p->obj, sizeof p->obj, "key %llu", (unsigned long long)i);
        kv->koff = p->pos;
        if ((rc = rd_str(p, &s, &kv->klen, "key")))
            return rc;
        if (kv->klen == 0)
            return perr(p, GGUF_E_UTF8, kv->koff, "expected a non-empty key, found length 0");
        char q[128];
        quote_name(q, sizeof q, s, kv->klen);
        snprintf(p->obj, sizeof p->obj, "key %llu %s", (unsigned long long)i, q);
        if (!gguf_utf8_valid(s, kv->klen))
            return perr(p, GGUF_E_UTF8, kv->koff + 8, "expected a UTF-8 key, found invalid bytes");
        if (memchr(s, 0, kv->klen))
            return perr(p, GGUF_E_UTF8, kv->koff + 8 + (uint64_t)((const uint8_t *)memchr(s, 0, kv->klen) - s),
                        "expected a key without NUL bytes, found one");
        kv->key = (const char *)s;          /* into the buffer until the names arena exists */
        uint64_t slot;
        int64_t j = kv_lookup(f, kv->key, kv->klen, &slot);
        if (j >= 0)
            return perr(p, GGUF_E_DUP_KEY, kv->koff, "expected a unique key, found the same as key %lld",
                        (long long)j);
        f->kv_hash[slot] = i + 1;
        f->n_kv = (int64_t)i + 1;
        uint32_t type = 0;
        uint64_t at = p->pos;
        if ((rc = rd_u32(p, &type, "value type")))
            return rc;
        if (type >= GGUF_T_COUNT)
            return perr(p, GGUF_E_VTYPE, at, "expected a value type below %d, found %u",
                        GGUF_T_COUNT, type);
        if ((rc = parse_value(p, pl, (enum gguf_vtype)type, 0, &kv->v)))
            return rc;
    }
    return 0;
}

static int parse_alignment(parser *p)
{
    gguf_file *f = p->f;
    static const char key[] = "general.alignment";
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    int64_t i = kv_lookup(f, key, sizeof key - 1, NULL);
    if (i < 0)
        return 0;
    const gguf_value *v = &f->kv[i].v;
    snprintf(p->obj, sizeof p->obj, "key %lld '%s'", (long long)i, key);
    if (v->type != GGUF_T_U32)
        return perr(p, GGUF_E_ALIGN, f->kv[i].koff, "expected type u32, found %s",
                    gguf_vtype_name(v->type));
    uint32_t a;
    memcpy(&a, v->p, 4);
    if (a == 0 || (a & (a - 1)))
        return perr(p, GGUF_E_ALIGN, (uint64_t)(v->p - p->b), "expected a power of two, found %u", a);
    f->alignment = a;
    return 0;
}

/* One tensor entry: name, shape, type, offset; checks all but the data range. */
static int parse_tensor(parser *p, uint64_t i)
{
    gguf_file *f = p->f;
    gguf_tensor *t = &f->tensors[i];
    const uint8_t *s;
    uint64_t at = p->pos;
    int rc;
    snprintf(p->obj, sizeof p->obj, "tensor %llu", (unsigned long long)i);
    if ((rc = rd_str(p, &s, &f->t_nlen[i], "tensor name")))
        return rc;
    if (f->t_nlen[i] == 0)
        return perr(p, GGUF_E_UTF8, at, "expected a non-empty name, found length 0");
    char q[128];
    quote_name(q, sizeof q, s, f->t_nlen[i]);
    snprintf(p->obj, sizeof p->obj, "tensor %llu %s", (unsigned long long)i, q);
    if (!gguf_utf8_valid(s, f->t_nlen[i]))
        return perr(p, GGUF_E_UTF8, at + 8, "expected a UTF-8 name, found invalid bytes");
    if (memchr(s, 0, f->t_nlen[i]))
        return perr(p, GGUF_E_UTF8, at + 8 + (uint64_t)((const uint8_t *)memchr(s, 0, f->t_nlen[i]) - s),
                    "expected a name without NUL bytes, found one");
    t->name = (const char *)s;
    uint64_t slot;
    int64_t j = t_lookup(f, t->name, f->t_nlen[i], &slot);
    if (j >= 0)
        return perr(p, GGUF_E_DUP_NAME, at, "expected a unique name, found the same as tensor %lld",
                    (long long)j);
    f->t_hash[slot] = i + 1;
    f->n_tensors = (int64_t)i + 1;

    at = p->pos;
    if ((rc = rd_u32(p, &t->n_dims, "n_dims")))
        return rc;
    if (t->n_dims == 0 || t->n_dims > GGUF_MAX_DIMS)
        return perr(p, GGUF_E_SHAPE, at, "expected n_dims 1..%d, found %u", GGUF_MAX_DIMS, t->n_dims);
    /* all dimensions first, so that a zero dimension is reported as such even
     * when an earlier product overflows */
    uint64_t at_ne = p->pos;
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) {
        t->ne[d] = 1;
        if (d < t->n_dims && (rc = rd_u64(p, &t->ne[d], "dimension")))
            return rc;
    }
    for (uint32_t d = 0; d < t->n_dims; d++)
        if (t->ne[d] == 0)
            return perr(p, GGUF_E_SHAPE, at_ne + 8 * d, "expected dimension %u > 0, found 0", d);
    uint64_t nel = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        if (t->ne[d] > (uint64_t)INT64_MAX / nel)
            return perr(p, GGUF_E_SHAPE, at_ne + 8 * d,
                        "expected at most %lld elements, found dimension %u = %llu after %llu",
                        (long long)INT64_MAX, d, (unsigned long long)t->ne[d], (unsigned long long)nel);
        nel *= t->ne[d];
    }
    at = p->pos;
    if ((rc = rd_u32(p, &t->type, "tensor type")))
        return rc;
    const quant_type_info *qi = quant_type_get(t->type);
    if (!qi)
        return perr(p, GGUF_E_TTYPE, at, "expected a known tensor type, found id %u%s", t->type,
                    t->type < QT_COUNT ? " (retired)" : "");
    if (t->ne[0] % qi->blck)
        return perr(p, GGUF_E_SHAPE, at, "expected ne0 a multiple of %s's block of %u, found %llu",
                    qi->name, qi->blck, (unsigned long long)t->ne[0]);
    /* nel <= INT64_MAX and blocks*size stays below 2^64 as size <= 2^9 and a
     * block holds at least one element; check anyway in case the table grows. */
    uint64_t blocks = nel / qi->blck;
    if (blocks > UINT64_MAX / qi->size)
        return perr(p, GGUF_E_SHAPE, at, "expected a byte size below 2^64, found %llu blocks of %u",
                    (unsigned long long)blocks, qi->size);
    t->nbytes = blocks * qi->size;
    at = p->pos;
    if ((rc = rd_u64(p, &t->offset, "tensor offset")))
        return rc;
    if (t->offset % f->alignment)
        return perr(p, GGUF_E_OFFSET, at, "expected an offset that is a multiple of %u, found %llu",
                    f->alignment, (unsigned long long)t->offset);
    return 0;
}

typedef struct span { uint64_t off, end; int64_t i; } span;

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->off != y->off) return x->off < y->off ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Places every tensor in the data section: starts inside, ends inside, and
 * no two share bytes. */
static int place_tensors(parser *p)
{
    gguf_file *f = p->f;
    if (f->n_tensors == 0)
        return 0;
    snprintf(p->obj, sizeof p->obj, "data section");
    if (f->data_offset > f->size)
        return perr(p, GGUF_E_TRUNCATED, f->size, "expected the data section at byte %llu, found a file of %llu bytes",
                    (unsigned long long)f->data_offset, (unsigned long long)f->size);
    uint64_t room = f->size - f->data_offset;
    span *sp = malloc((size_t)f->n_tensors * sizeof *sp);
    if (!sp)
        return perr(p, GGUF_E_NOMEM, 0, "expected memory for %lld tensors, found none",
                    (long long)f->n_tensors);
    int rc = 0;
    for (int64_t i = 0; i < f->n_tensors && !rc; i++) {
        gguf_tensor *t = &f->tensors[i];
        char q[128];
        quote_name(q, sizeof q, (const uint8_t *)t->name, f->t_nlen[i]);
        snprintf(p->obj, sizeof p->obj, "tensor %lld %s", (long long)i, q);
        if (t->offset > room)
            rc = perr(p, GGUF_E_OFFSET, f->data_offset, "expected an offset within the %llu data bytes, found %llu",
                      (unsigned long long)room, (unsigned long long)t->offset);
        else if (t->nbytes > room - t->offset)
            rc = perr(p, GGUF_E_TRUNCATED, f->data_offset + t->offset,
                      "expected %llu data bytes ending at byte %llu, found a file of %llu bytes",
                      (unsigned long long)t->nbytes,
                      (unsigned long long)(f->data_offset + t->offset) + t->nbytes,
                      (unsigned long long)f->size);
        else
            t->data = p->b + f->data_offset + t->offset;
        sp[i] = (span){ t->offset, t->offset + t->nbytes, i };
    }
    if (!rc) {
        qsort(sp, (size_t)f->n_tensors, sizeof *sp, cmp_span);
        for (int64_t k = 1; k < f->n_tensors && !rc; k++) {
            if (sp[k].off >= sp[k - 1].end)
                continue;
            const gguf_tensor *a = &f->tensors[sp[k - 1].i], *b = &f->tensors[sp[k].i];
            char qa[128], qb[128];
            quote_name(qa, sizeof qa, (const uint8_t *)a->name, f->t_nlen[sp[k - 1].i]);
            quote_name(qb, sizeof qb, (const uint8_t *)b->name, f->t_nlen[sp[k].i]);
            snprintf(p->obj, sizeof p->obj, "tensor %lld %s", (long long)sp[k].i, qb);
            rc = perr(p, GGUF_E_OVERLAP, f->data_offset + sp[k].off,
                      "expected to start at or after data offset %llu where tensor %lld %s ends, found offset %llu",
                      (unsigned long long)sp[k - 1].end, (long long)sp[k - 1].i, qa,
                      (unsigned long long)sp[k].off);
        }
    }
    free(sp);
    return rc;
}

/* Copies keys and names out of the buffer, NUL-terminated, into one block. */
static int copy_names(parser *p)
{
    gguf_file *f = p->f;
    uint64_t total = 1;
    for (int64_t i = 0; i < f->n_kv; i++) total += f->kv[i].klen + 1;
    for (int64_t i = 0; i < f->n_tensors; i++) total += f->t_nlen[i] + 1;
    f->names = malloc((size_t)total);
    if (!f->names)
        return perr(p, GGUF_E_NOMEM, 0, "expected %llu bytes for names, found none",
                    (unsigned long long)total);
    char *o = f->names;
    for (int64_t i = 0; i < f->n_kv; i++) {
        memcpy(o, f->kv[i].key, f->kv[i].klen);
        o[f->kv[i].klen] = 0;
        f->kv[i].key = o;
        o += f->kv[i].klen + 1;
    }
    for (int64_t i = 0; i < f->n_tensors; i++) {
        memcpy(o, f->tensors[i].name, f->t_nlen[i]);
        o[f->t_nlen[i]] = 0;
        f->tensors[i].name = o;
        o += f->t_nlen[i] + 1;
    }
    return 0;
}

static int parse_file(gguf_file *f, q36_err *err)
{
    parser p = { .b = f->base, .size = f->size, .name = f->path, .err = err, .f = f };
    pools pl = { 0, 0, 0 };
    uint64_t n_tensors = 0, n_kv = 0;
    int rc;
    if ((rc = parse_header(&p, &n_tensors, &n_kv)) ||
        (rc = parse_kvs(&p, &pl, n_kv)) ||
        (rc = parse_alignment(&p)))
        return rc;
    snprintf(p.obj, sizeof p.obj, "tensor directory");
    if (n_tensors > remain(&p) / MIN_TENSOR_BYTES)
        return perr(&p, GGUF_E_COUNT, 8, "expected at most %llu tensors in the %llu bytes left, found %llu",
                    (unsigned long long)(remain(&p) / MIN_TENSOR_BYTES),
                    (unsigned long long)remain(&p), (unsigned long long)n_tensors);
    f->tensors = calloc(n_tensors ? n_tensors : 1, sizeof *f->tensors);
    f->t_nlen = calloc(n_tensors ? n_tensors : 1, sizeof *f->t_nlen);
    f->t_cap = hash_cap(n_tensors);
    f->t_hash = calloc(f->t_cap, sizeof *f->t_hash);
    if (!f->tensors || !f->t_nlen || !f->t_hash)
        return perr(&p, GGUF_E_NOMEM, 8, "expected memory for %llu tensors, found none",
                    (unsigned long long)n_tensors);
    for (uint64_t i = 0; i < n_tensors; i++)
        if ((rc = parse_tensor(&p, i)))
            return rc;
    uint64_t a = f->alignment;
    f->data_offset = (p.pos + a - 1) / a * a;
    if ((rc = place_tensors(&p)))
        return rc;
    return copy_names(&p);
}

/* ------------------------------------------------------------------ open/close */

static int open_common(gguf_file *f, gguf_file **out, q36_err *err)
{
    int rc = parse_file(f, err);
    if (rc) {
        gguf_close(f);
        return rc;
    }
    *out = f;
    return 0;
}

static gguf_file *file_new(const char *name)
{
    gguf_file *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->path = strdup(name ? name : "(buffer)");
    if (!f->path) {
        free(f);
        return NULL;
    }
    return f;
}

int gguf_open_mem(const void *data, size_t size, const char *name,
                  gguf_file **out, q36_err *err)
{
    *out = NULL;
    gguf_file *f = file_new(name);
    if (!f)
        return q36_err_set(err, GGUF_E_NOMEM, "%s: %s: expected memory for the file object, found none",
                           name ? name : "(buffer)", gguf_err_kind_name(GGUF_E_NOMEM));
    f->base = data;
    f->size = data ? size : 0;
    return open_common(f, out, err);
}

int gguf_open(const char *path, gguf_file **out, q36_err *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return q36_err_set(err, GGUF_E_IO, "%s: %s: cannot open: %s (at byte 0)", path,
                           gguf_err_kind_name(GGUF_E_IO), strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        close(fd);
        return q36_err_set(err, GGUF_E_IO, "%s: %s: expected a regular file, found %s (at byte 0)", path,
                           gguf_err_kind_name(GGUF_E_IO), e ? strerror(e) : "another kind of file");
    }
    gguf_file *f = file_new(path);
    if (!f) {
        close(fd);
        return q36_err_set(err, GGUF_E_NOMEM, "%s: %s: expected memory for the file object, found none",
                           path, gguf_err_kind_name(GGUF_E_NOMEM));
    }
    f->size = (uint64_t)st.st_size;
    if (f->size > 0) {
        void *m = mmap(NULL, (size_t)f->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int e = errno;
            close(fd);
            gguf_close(f);
            return q36_err_set(err, GGUF_E_IO, "%s: %s: cannot map %llu bytes: %s (at byte 0)", path,
                               gguf_err_kind_name(GGUF_E_IO), (unsigned long long)st.st_size, strerror(e));
        }
        f->base = m;
        f->mapped = 1;
    }
    close(fd);
    return open_common(f, out, err);
}

void gguf_close(gguf_file *f)
{
    if (!f)
        return;
    if (f->mapped)
        munmap((void *)f->base, (size_t)f->size);
    free(f->kv);
    free(f->kv_hash);
    free(f->tensors);
    free(f->t_nlen);
    free(f->t_hash);
    free(f->names);
    free(f->tables);
    free(f->off);
    free(f->sub);
    free(f->path);
    free(f);
}

/* ------------------------------------------------------------------ accessors */

const char *gguf_path(const gguf_file *f)        { return f->path; }
uint32_t    gguf_version(const gguf_file *f)     { return f->version; }
uint32_t    gguf_alignment(const gguf_file *f)   { return f->alignment; }
uint64_t    gguf_data_offset(const gguf_file *f) { return f->data_offset; }
uint64_t    gguf_file_size(const gguf_file *f)   { return f->size; }
int64_t     gguf_n_kv(const gguf_file *f)        { return f->n_kv; }
int64_t     gguf_n_tensors(const gguf_file *f)   { return f->n_tensors; }

const char *gguf_kv_key(const gguf_file *f, int64_t i)
{
    return i >= 0 && i < f->n_kv ? f->kv[i].key : NULL;
}

const gguf_value *gguf_kv_value(const gguf_file *f, int64_t i)
{
    return i >= 0 && i < f->n_kv ? &f->kv[i].v : NULL;
}

int64_t gguf_find_key(const gguf_file *f, const char *key)
{
    if (!f || !key || !f->kv_hash)
        return -1;
    return kv_lookup(f, key, strlen(key), NULL);
}

const gguf_value *gguf_get(const gguf_file *f, const char *key)
{
    int64_t i = gguf_find_key(f, key);
    return i < 0 ? NULL : &f->kv[i].v;
}

const gguf_tensor *gguf_tensor_at(const gguf_file *f, int64_t i)
{
    return i >= 0 && i < f->n_tensors ? &f->tensors[i] : NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name)
{
    if (!f || !name || !f->t_hash)
        return NULL;
    int64_t i = t_lookup(f, name, strlen(name), NULL);
    return i < 0 ? NULL : &f->tensors[i];
}

uint64_t gguf_tensor_nelements(const gguf_tensor *t)
{
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}
