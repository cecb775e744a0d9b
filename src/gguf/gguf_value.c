/* gguf_value.c: typed reads of metadata values and array elements (views
 * into the mapping, read with memcpy since nothing in a GGUF is aligned), and
 * the names of value types and error kinds. The values themselves were
 * validated by gguf_read.c, so nothing here re-checks bounds in the buffer.
 */
#include "gguf_internal.h"

#include <string.h>

const char *gguf_vtype_name(enum gguf_vtype t)
{
    static const char *const names[GGUF_T_COUNT] = {
        "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64",
    };
    return (unsigned)t < GGUF_T_COUNT ? names[t] : "?";
}

const char *gguf_err_kind_name(int kind)
{
    switch (kind) {
    case GGUF_E_IO:        return "io error";
    case GGUF_E_MAGIC:     return "bad magic";
    case GGUF_E_VERSION:   return "unsupported version";
    case GGUF_E_TRUNCATED: return "truncated";
    case GGUF_E_VTYPE:     return "bad value type";
    case GGUF_E_COUNT:     return "bad count";
    case GGUF_E_UTF8:      return "bad name";
    case GGUF_E_DUP_KEY:   return "duplicate key";
    case GGUF_E_DUP_NAME:  return "duplicate tensor name";
    case GGUF_E_TTYPE:     return "bad tensor type";
    case GGUF_E_SHAPE:     return "bad shape";
    case GGUF_E_OFFSET:    return "bad offset";
    case GGUF_E_OVERLAP:   return "overlapping tensors";
    case GGUF_E_ALIGN:     return "bad alignment";
    case GGUF_E_NOMEM:     return "out of memory";
    case GGUF_E_WRITE:     return "write error";
    default:               return "?";
    }
}

/* Reads a scalar of an integer type or bool; returns 0, 1 when the value is
 * an unsigned 64-bit number above INT64_MAX, -1 when it is no integer. */
static int raw_int(const gguf_value *v, int64_t *out, uint64_t *big)
{
    const uint8_t *p = v->p;
    switch (v->type) {
    case GGUF_T_U8:   *out = p[0]; return 0;
    case GGUF_T_BOOL: *out = p[0] != 0; return 0;
    case GGUF_T_I8:   { int8_t x;   memcpy(&x, p, 1); *out = x; return 0; }
    case GGUF_T_U16:  { uint16_t x; memcpy(&x, p, 2); *out = x; return 0; }
    case GGUF_T_I16:  { int16_t x;  memcpy(&x, p, 2); *out = x; return 0; }
    case GGUF_T_U32:  { uint32_t x; memcpy(&x, p, 4); *out = x; return 0; }
    case GGUF_T_I32:  { int32_t x;  memcpy(&x, p, 4); *out = x; return 0; }
    case GGUF_T_I64:  { int64_t x;  memcpy(&x, p, 8); *out = x; return 0; }
    case GGUF_T_U64: {
        uint64_t x;
        memcpy(&x, p, 8);
        *big = x;
        if (x > (uint64_t)INT64_MAX)
            return 1;
        *out = (int64_t)x;
        return 0;
    }
    default: return -1;
    }
}

int gguf_value_int(const gguf_value *v, int64_t *out)
{
    uint64_t big = 0;
    if (!v || raw_int(v, out, &big) != 0)
        return GGUF_E_VTYPE;
    return 0;
}

int gguf_value_float(const gguf_value *v, double *out)
{
    if (!v)
        return GGUF_E_VTYPE;
    if (v->type == GGUF_T_F32) {
        float x;
        memcpy(&x, v->p, 4);
        *out = x;
        return 0;
    }
    if (v->type == GGUF_T_F64) {
        memcpy(out, v->p, 8);
        return 0;
    }
    if (v->type == GGUF_T_BOOL)
        return GGUF_E_VTYPE;
    int64_t i;
    uint64_t big = 0;
    int r = raw_int(v, &i, &big);
    if (r < 0)
        return GGUF_E_VTYPE;
    *out = r == 1 ? (double)big : (double)i;
    return 0;
}

int gguf_value_bool(const gguf_value *v, bool *out)
{
    int64_t i;
    uint64_t big = 0;
    int r = v ? raw_int(v, &i, &big) : -1;
    if (r < 0)
        return GGUF_E_VTYPE;
    *out = r == 1 || i != 0;
    return 0;
}

const char *gguf_value_str(const gguf_value *v, uint64_t *len)
{
    if (!v || v->type != GGUF_T_STR)
        return NULL;
    if (len)
        *len = v->n;
    return (const char *)v->p;
}

int gguf_arr_get(const gguf_file *f, const gguf_value *arr, uint64_t i, gguf_value *out)
{
    if (!arr || arr->type != GGUF_T_ARR)
        return GGUF_E_VTYPE;
    if (i >= arr->n)
        return GGUF_E_COUNT;
    memset(out, 0, sizeof *out);
    out->type = arr->elem;
    out->aux = GGUF_NO_TABLE;
    uint32_t sz = gguf_vtype_size(arr->elem);
    if (sz) {
        out->n = 1;
        out->p = arr->p + i * sz;
        return 0;
    }
    if (!f || arr->aux == GGUF_NO_TABLE || arr->aux >= f->n_tables)
        return GGUF_E_VTYPE;
    const gguf_table *t = &f->tables[arr->aux];
    const uint8_t *e = f->base + f->off[t->off0 + i];
    if (arr->elem == GGUF_T_STR) {
        memcpy(&out->n, e, 8);
        out->p = e + 8;
        return 0;
    }
    uint32_t elem;
    memcpy(&elem, e, 4);
    memcpy(&out->n, e + 4, 8);
    out->elem = (enum gguf_vtype)elem;
    out->p = e + 12;
    out->aux = f->sub[t->sub0 + i];
    return 0;
}

int gguf_arr_int(const gguf_file *f, const gguf_value *arr, uint64_t i, int64_t *out)
{
    gguf_value v;
    int rc = gguf_arr_get(f, arr, i, &v);
    return rc ? rc : gguf_value_int(&v, out);
}

int gguf_arr_float(const gguf_file *f, const gguf_value *arr, uint64_t i, double *out)
{
    gguf_value v;
    int rc = gguf_arr_get(f, arr, i, &v);
    return rc ? rc : gguf_value_float(&v, out);
}

const char *gguf_arr_str(const gguf_file *f, const gguf_value *arr, uint64_t i, uint64_t *len)
{
    gguf_value v;
    if (!arr || arr->elem != GGUF_T_STR || gguf_arr_get(f, arr, i, &v))
        return NULL;
    return gguf_value_str(&v, len);
}
