/* test_gguf.c: q36's GGUF writer and reader against each other, the typed
 * getters, writer misuse, and a table of hand-broken files (built byte by byte,
 * since the writer refuses bad input), each expecting one exact error kind and
 * a message that names the file and a byte offset.
 */
#include "test.h"
#include "gguf/gguf.h"
#include "quant/types.h"

#include <dirent.h>
#include <time.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

static char g_dir[64];

static void path_in_dir(char *dst, size_t cap, const char *name)
{
    snprintf(dst, cap, "%s/%s", g_dir, name);
}

/* ------------------------------------------------------------------ byte builder */

typedef struct bb { uint8_t *p; size_t n, cap; } bb;

static void bb_put(bb *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void bb_u8(bb *b, uint8_t v)   { bb_put(b, &v, 1); }
static void bb_u32(bb *b, uint32_t v) { bb_put(b, &v, 4); }
static void bb_u64(bb *b, uint64_t v) { bb_put(b, &v, 8); }
static void bb_strn(bb *b, const char *s, uint64_t n) { bb_u64(b, n); bb_put(b, s, (size_t)n); }
static void bb_str(bb *b, const char *s) { bb_strn(b, s, strlen(s)); }
static void bb_zeros(bb *b, size_t n) { while (n--) bb_u8(b, 0); }
static void bb_pad(bb *b, size_t a) { while (b->n % a) bb_u8(b, 0); }

static void hdr(bb *b, uint32_t version, uint64_t n_t, uint64_t n_kv)
{
    bb_put(b, "GGUF", 4);
    bb_u32(b, version);
    bb_u64(b, n_t);
    bb_u64(b, n_kv);
}
static void kv_u32(bb *b, const char *k, uint32_t v) { bb_str(b, k); bb_u32(b, GGUF_T_U32); bb_u32(b, v); }
static void kv_str(bb *b, const char *k, const char *v) { bb_str(b, k); bb_u32(b, GGUF_T_STR); bb_str(b, v); }
static void tensor(bb *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t off)
{
    bb_str(b, name);
    bb_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) bb_u64(b, ne[d]);
    bb_u32(b, type);
    bb_u64(b, off);
}

/* A valid file: 2 keys, tensors "a" f32 [4,2] at 0 and "b" f32 [8] at 32. */
static void good(bb *b)
{
    hdr(b, 3, 2, 2);
    kv_str(b, "general.name", "x");
    kv_u32(b, "k", 7);
    tensor(b, "a", 2, (uint64_t[]){ 4, 2 }, QT_F32, 0);
    tensor(b, "b", 1, (uint64_t[]){ 8 }, QT_F32, 32);
    bb_pad(b, 32);
    bb_zeros(b, 64);
}

/* One tensor entry after a header with 0 keys; then padding and `data` bytes. */
static void one_tensor(bb *b, const char *name, uint32_t n_dims, const uint64_t *ne,
                       uint32_t type, uint64_t off, size_t data)
{
    hdr(b, 3, 1, 0);
    tensor(b, name, n_dims, ne, type, off);
    bb_pad(b, 32);
    bb_zeros(b, data);
}

/* ------------------------------------------------------------------ broken files */

static void c_magic(bb *b)      { good(b); b->p[3] = 'X'; }
static void c_v1(bb *b)         { good(b); b->p[4] = 1; }
static void c_v4(bb *b)         { good(b); b->p[4] = 4; }
static void c_empty(bb *b)      { (void)b; }
static void c_trunc_hdr(bb *b)  { good(b); b->n = 10; }
static void c_trunc_key(bb *b)  { hdr(b, 3, 0, 1); bb_u64(b, 10); bb_put(b, "abcdefghi", 9); }
static void c_trunc_val(bb *b)  { hdr(b, 3, 0, 1); bb_str(b, "k"); bb_u32(b, GGUF_T_U64); bb_u32(b, 5); }
static void c_trunc_sval(bb *b) { hdr(b, 3, 0, 1); bb_str(b, "k"); bb_u32(b, GGUF_T_STR); bb_u64(b, 100); bb_put(b, "hello", 5); }
static void c_trunc_tinfo(bb *b)
{
    hdr(b, 3, 1, 0);
    bb_str(b, "a_rather_long_tensor_name_here");
    bb_u32(b, 2);
    bb_u64(b, 4);
}
static void c_trunc_data(bb *b) { good(b); b->n -= 20; }
static void c_count_kv(bb *b)   { good(b); uint64_t v = 1000000000000000000ull; memcpy(b->p + 16, &v, 8); }
static void c_count_t(bb *b)    { good(b); uint64_t v = 1000000000000000000ull; memcpy(b->p + 8, &v, 8); }
static void c_count_arr(bb *b)
{
    hdr(b, 3, 0, 1);
    bb_str(b, "arr");
    bb_u32(b, GGUF_T_ARR);
    bb_u32(b, GGUF_T_U32);
    bb_u64(b, 1000000000000000000ull);
    bb_zeros(b, 64);
}
static void c_count_sarr(bb *b)
{
    hdr(b, 3, 0, 1);
    bb_str(b, "arr");
    bb_u32(b, GGUF_T_ARR);
    bb_u32(b, GGUF_T_STR);
    bb_u64(b, 1000000000000000000ull);
    bb_zeros(b, 64);
}
static void c_strlen(bb *b)
{
    hdr(b, 3, 0, 1);
    bb_str(b, "s");
    bb_u32(b, GGUF_T_STR);
    bb_u64(b, 1000000000000000000ull);
    bb_zeros(b, 64);
}
static void c_keylen(bb *b) { hdr(b, 3, 0, 1); bb_u64(b, 1000000000000000000ull); bb_zeros(b, 64); }
static void c_vtype(bb *b)  { hdr(b, 3, 0, 1); bb_str(b, "k"); bb_u32(b, 13); bb_zeros(b, 16); }
static void c_etype(bb *b)
{
    hdr(b, 3, 0, 1);
    bb_str(b, "k");
    bb_u32(b, GGUF_T_ARR);
    bb_u32(b, 99);
    bb_u64(b, 1);
    bb_zeros(b, 16);
}
static void c_deep(bb *b)
{
    hdr(b, 3, 0, 1);
    bb_str(b, "k");
    bb_u32(b, GGUF_T_ARR);
    for (int i = 0; i < 40; i++) {
        bb_u32(b, GGUF_T_ARR);
        bb_u64(b, 1);
    }
    bb_u32(b, GGUF_T_U8);
    bb_u64(b, 0);
}
static void c_ttype(bb *b)   { one_tensor(b, "t", 1, (uint64_t[]){ 8 }, 43, 0, 64); }
static void c_ttype_big(bb *b) { one_tensor(b, "t", 1, (uint64_t[]){ 8 }, 0xffffffffu, 0, 64); }
static void c_retired(bb *b) { one_tensor(b, "t", 1, (uint64_t[]){ 32 }, 4, 0, 64); }
static void c_retired31(bb *b) { one_tensor(b, "t", 1, (uint64_t[]){ 32 }, 31, 0, 64); }
static void c_ndims0(bb *b)  { one_tensor(b, "t", 0, NULL, QT_F32, 0, 64); }
static void c_ndims5(bb *b)  { one_tensor(b, "t", 5, (uint64_t[]){ 1, 1, 1, 1, 1 }, QT_F32, 0, 64); }
static void c_zerodim(bb *b) { one_tensor(b, "t", 2, (uint64_t[]){ 4, 0 }, QT_F32, 0, 64); }
static void c_overflow(bb *b){ one_tensor(b, "t", 3, (uint64_t[]){ 1ull << 32, 1ull << 32, 2 }, QT_F32, 0, 64); }
static void c_huge_dim(bb *b){ one_tensor(b, "t", 1, (uint64_t[]){ 1ull << 63 }, QT_I8, 0, 64); }
static void c_block(bb *b)   { one_tensor(b, "t", 1, (uint64_t[]){ 33 }, QT_Q8_0, 0, 64); }
static void c_misalign(bb *b){ one_tensor(b, "t", 1, (uint64_t[]){ 4 }, QT_F32, 4, 64); }
static void c_past_end(bb *b){ one_tensor(b, "t", 1, (uint64_t[]){ 4 }, QT_F32, 1ull << 40, 64); }
static void c_overlap(bb *b)
{
    hdr(b, 3, 2, 0);
    tensor(b, "a", 1, (uint64_t[]){ 16 }, QT_F32, 0);
    tensor(b, "b", 1, (uint64_t[]){ 8 }, QT_F32, 32);
    bb_pad(b, 32);
    bb_zeros(b, 128);
}
static void c_overlap_same(bb *b)
{
    hdr(b, 3, 2, 0);
    tensor(b, "a", 1, (uint64_t[]){ 8 }, QT_F32, 0);
    tensor(b, "b", 1, (uint64_t[]){ 8 }, QT_F32, 0);
    bb_pad(b, 32);
    bb_zeros(b, 64);
}
static void c_dup_key(bb *b) { hdr(b, 3, 0, 2); kv_u32(b, "k", 1); kv_str(b, "k", "v"); }
static void c_dup_name(bb *b)
{
    hdr(b, 3, 2, 0);
    tensor(b, "a", 1, (uint64_t[]){ 8 }, QT_F32, 0);
    tensor(b, "a", 1, (uint64_t[]){ 8 }, QT_F32, 32);
    bb_pad(b, 32);
    bb_zeros(b, 64);
}
static void c_utf8_key(bb *b)  { hdr(b, 3, 0, 1); kv_u32(b, "ke\xffy", 1); }
static void c_overlong(bb *b)  { hdr(b, 3, 0, 1); kv_u32(b, "k\xc0\x80", 1); }
static void c_surrogate(bb *b) { hdr(b, 3, 0, 1); kv_u32(b, "k\xed\xa0\x80", 1); }
static void c_nul_key(bb *b)   { hdr(b, 3, 0, 1); bb_strn(b, "a\0b", 3); bb_u32(b, GGUF_T_U32); bb_u32(b, 1); }
static void c_nul_name(bb *b)
{
    hdr(b, 3, 1, 0);
    bb_strn(b, "t\0x", 3);
    bb_u32(b, 1); bb_u64(b, 8); bb_u32(b, QT_F32); bb_u64(b, 0);
    bb_pad(b, 32);
    bb_zeros(b, 64);
}
static void c_empty_key(bb *b) { hdr(b, 3, 0, 1); bb_u64(b, 0); bb_u32(b, GGUF_T_U32); bb_u32(b, 1); bb_zeros(b, 8); }
static void c_utf8_name(bb *b) { one_tensor(b, "t\x80", 1, (uint64_t[]){ 8 }, QT_F32, 0, 64); }
static void c_empty_name(bb *b){ one_tensor(b, "", 1, (uint64_t[]){ 8 }, QT_F32, 0, 64); }
static void c_align0(bb *b)  { hdr(b, 3, 0, 1); kv_u32(b, "general.alignment", 0); }
static void c_align3(bb *b)  { hdr(b, 3, 0, 1); kv_u32(b, "general.alignment", 3); }
static void c_align_u64(bb *b)
{
    hdr(b, 3, 0, 1);
    bb_str(b, "general.alignment");
    bb_u32(b, GGUF_T_U64);
    bb_u64(b, 32);
}
static void c_align_str(bb *b) { hdr(b, 3, 0, 1); kv_str(b, "general.alignment", "32"); }
static void c_no_pad(bb *b)
{
    /* a tensor whose directory ends 4 bytes before the padded data start */
    hdr(b, 3, 1, 0);
    tensor(b, "t", 1, (uint64_t[]){ 1 }, QT_I8, 0);
    /* 24 + 9 + 4 + 8 + 4 + 8 = 57 bytes; data would start at 64 */
    bb_zeros(b, 3);
}

typedef struct bcase {
    const char *name;
    int kind;
    void (*build)(bb *);
} bcase;

static const bcase broken[] = {
    { "magic",           GGUF_E_MAGIC,     c_magic },
    { "version_1",       GGUF_E_VERSION,   c_v1 },
    { "version_4",       GGUF_E_VERSION,   c_v4 },
    { "empty_file",      GGUF_E_TRUNCATED, c_empty },
    { "trunc_header",    GGUF_E_TRUNCATED, c_trunc_hdr },
    { "trunc_key",       GGUF_E_TRUNCATED, c_trunc_key },
    { "trunc_value",     GGUF_E_TRUNCATED, c_trunc_val },
    { "trunc_str_value", GGUF_E_TRUNCATED, c_trunc_sval },
    { "trunc_tensor_info", GGUF_E_TRUNCATED, c_trunc_tinfo },
    { "trunc_data",      GGUF_E_TRUNCATED, c_trunc_data },
    { "trunc_padding",   GGUF_E_TRUNCATED, c_no_pad },
    { "count_kv_1e18",   GGUF_E_COUNT,     c_count_kv },
    { "count_tensors_1e18", GGUF_E_COUNT,  c_count_t },
    { "count_array_1e18", GGUF_E_COUNT,    c_count_arr },
    { "count_str_array_1e18", GGUF_E_COUNT, c_count_sarr },
    { "strlen_1e18",     GGUF_E_TRUNCATED, c_strlen },
    { "keylen_1e18",     GGUF_E_TRUNCATED, c_keylen },
    { "value_type_13",   GGUF_E_VTYPE,     c_vtype },
    { "array_elem_type_99", GGUF_E_VTYPE,  c_etype },
    { "array_nested_40_deep", GGUF_E_VTYPE, c_deep },
    { "tensor_type_43",  GGUF_E_TTYPE,     c_ttype },
    { "tensor_type_u32max", GGUF_E_TTYPE,  c_ttype_big },
    { "tensor_type_retired_4", GGUF_E_TTYPE, c_retired },
    { "tensor_type_retired_31", GGUF_E_TTYPE, c_retired31 },
    { "n_dims_0",        GGUF_E_SHAPE,     c_ndims0 },
    { "n_dims_5",        GGUF_E_SHAPE,     c_ndims5 },
    { "zero_dim",        GGUF_E_SHAPE,     c_zerodim },
    { "dims_overflow",   GGUF_E_SHAPE,     c_overflow },
    { "dim_above_int64", GGUF_E_SHAPE,     c_huge_dim },
    { "ne0_not_block_multiple", GGUF_E_SHAPE, c_block },
    { "offset_misaligned", GGUF_E_OFFSET,  c_misalign },
    { "offset_past_end", GGUF_E_OFFSET,    c_past_end },
    { "overlap_partial", GGUF_E_OVERLAP,   c_overlap },
    { "overlap_same_offset", GGUF_E_OVERLAP, c_overlap_same },
    { "duplicate_key",   GGUF_E_DUP_KEY,   c_dup_key },
    { "duplicate_tensor_name", GGUF_E_DUP_NAME, c_dup_name },
    { "key_invalid_utf8", GGUF_E_UTF8,     c_utf8_key },
    { "key_overlong_utf8", GGUF_E_UTF8,    c_overlong },
    { "key_surrogate_utf8", GGUF_E_UTF8,   c_surrogate },
    { "key_empty",       GGUF_E_UTF8,      c_empty_key },
    { "key_with_nul",    GGUF_E_UTF8,      c_nul_key },
    { "name_with_nul",   GGUF_E_UTF8,      c_nul_name },
    { "name_invalid_utf8", GGUF_E_UTF8,    c_utf8_name },
    { "name_empty",      GGUF_E_UTF8,      c_empty_name },
    { "alignment_0",     GGUF_E_ALIGN,     c_align0 },
    { "alignment_3",     GGUF_E_ALIGN,     c_align3 },
    { "alignment_u64",   GGUF_E_ALIGN,     c_align_u64 },
    { "alignment_str",   GGUF_E_ALIGN,     c_align_str },
};

static void test_broken(void)
{
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        const bcase *c = &broken[i];
        char name[96], fname[96];
        snprintf(name, sizeof name, "gguf_broken_%s", c->name);
        snprintf(fname, sizeof fname, "broken_%s.gguf", c->name);
        bb b = { 0 };
        c->build(&b);
        gguf_file *f = NULL;
        q36_err err = { 0 };
        int rc = gguf_open_mem(b.p, b.n, fname, &f, &err);
        if (rc != c->kind)
            t_fail(name, "expected kind %d (%s), found %d (%s): %s", c->kind,
                   gguf_err_kind_name(c->kind), rc, gguf_err_kind_name(rc), err.msg);
        else if (f)
            t_fail(name, "error returned but *out is not NULL");
        else if (err.kind != rc || !strstr(err.msg, fname) || !strstr(err.msg, "byte") ||
                 !strstr(err.msg, gguf_err_kind_name(rc)) || strchr(err.msg, '\n'))
            t_fail(name, "message lacks file name, kind or byte offset: %s", err.msg);
        else
            t_ok(name);
        gguf_close(f);
        free(b.p);
    }
    /* the same through gguf_open (mmap) for one case, and a missing file */
    bb b = { 0 };
    c_trunc_data(&b);
    char path[128];
    path_in_dir(path, sizeof path, "trunc.gguf");
    FILE *fp = fopen(path, "wb");
    fwrite(b.p, 1, b.n, fp);
    fclose(fp);
    free(b.p);
    gguf_file *f = NULL;
    q36_err err = { 0 };
    int rc = gguf_open(path, &f, &err);
    t_check("gguf_broken_file_on_disk", rc == GGUF_E_TRUNCATED && !f && strstr(err.msg, path),
            "rc %d: %s", rc, err.msg);
    q36_err_clear(&err);
    path_in_dir(path, sizeof path, "missing.gguf");
    rc = gguf_open(path, &f, &err);
    t_check("gguf_broken_missing_file", rc == GGUF_E_IO && !f && strstr(err.msg, path),
            "rc %d: %s", rc, err.msg);
}

/* Files that look odd but are valid and must open. */
static void accept_case(const char *name, bb *b, int64_t n_tensors)
{
    gguf_file *f = NULL;
    q36_err err = { 0 };
    int rc = gguf_open_mem(b->p, b->n, name, &f, &err);
    t_check(name, rc == 0 && f && gguf_n_tensors(f) == n_tensors, "rc %d: %s", rc, err.msg);
    gguf_close(f);
    free(b->p);
    memset(b, 0, sizeof *b);
}

static void test_accept(void)
{
    bb b = { 0 };
    good(&b);
    accept_case("gguf_accept_good", &b, 2);
    good(&b);
    b.p[4] = 2;
    accept_case("gguf_accept_version_2", &b, 2);
    hdr(&b, 3, 0, 1);
    kv_u32(&b, "k", 1);
    accept_case("gguf_accept_no_tensors_no_padding", &b, 0);
    hdr(&b, 3, 0, 0);
    accept_case("gguf_accept_header_only", &b, 0);
    hdr(&b, 3, 2, 0);
    tensor(&b, "a", 1, (uint64_t[]){ 8 }, QT_F32, 32);
    tensor(&b, "b", 1, (uint64_t[]){ 8 }, QT_F32, 0);
    bb_pad(&b, 32);
    bb_zeros(&b, 64);
    accept_case("gguf_accept_tensors_out_of_order", &b, 2);
    hdr(&b, 3, 1, 1);
    kv_u32(&b, "general.alignment", 1);
    tensor(&b, "a", 1, (uint64_t[]){ 3 }, QT_I8, 1);
    bb_zeros(&b, 4);
    accept_case("gguf_accept_alignment_1", &b, 1);
    hdr(&b, 3, 0, 1);
    bb_str(&b, "b");
    bb_u32(&b, GGUF_T_BOOL);
    bb_u8(&b, 2);
    accept_case("gguf_accept_bool_byte_2", &b, 0);
    hdr(&b, 3, 0, 1);
    bb_str(&b, "tokens");
    bb_u32(&b, GGUF_T_ARR);
    bb_u32(&b, GGUF_T_STR);
    bb_u64(&b, 2);
    bb_strn(&b, "\xff\xfe", 2);   /* string values are bytes, not checked for UTF-8 */
    bb_strn(&b, "", 0);
    accept_case("gguf_accept_non_utf8_string_values", &b, 0);
}

/* ------------------------------------------------------------------ round trip */

typedef struct tdesc {
    const char *name;
    uint32_t type, n_dims;
    uint64_t ne[4];
} tdesc;

static const tdesc rt_tensors[] = {
    { "token_embd.weight", QT_F32, 2, { 7, 3 } },
    { "blk.0.attn_q.weight", QT_Q8_0, 2, { 64, 2 } },
    { "blk.0.ffn_down_exps.weight", QT_Q4_K, 3, { 256, 3, 2 } },
    { "norm", QT_F16, 1, { 5 } },
    { "blk.0.x", QT_I32, 4, { 2, 2, 2, 2 } },
    { "\xce\xb1\xce\xb2\xce\xb3.weight", QT_BF16, 1, { 1 } },
};
#define N_RT (sizeof rt_tensors / sizeof rt_tensors[0])

static uint64_t tbytes(const tdesc *t)
{
    const quant_type_info *q = quant_type_get(t->type);
    uint64_t n = t->ne[0] / q->blck * q->size;
    for (uint32_t d = 1; d < t->n_dims; d++) n *= t->ne[d];
    return n;
}

/* Encodes a nested array [[1,2,3],[],[-4]] of i32 arrays, raw (no type tag). */
static size_t nested_i32(uint8_t *o)
{
    bb b = { 0 };
    bb_u32(&b, GGUF_T_ARR);
    bb_u64(&b, 3);
    bb_u32(&b, GGUF_T_I32); bb_u64(&b, 3); bb_u32(&b, 1); bb_u32(&b, 2); bb_u32(&b, 3);
    bb_u32(&b, GGUF_T_I32); bb_u64(&b, 0);
    bb_u32(&b, GGUF_T_I32); bb_u64(&b, 1); bb_u32(&b, (uint32_t)-4);
    memcpy(o, b.p, b.n);
    size_t n = b.n;
    free(b.p);
    return n;
}

/* [[["a"]],[["", "bc"],[]]] : arrays of arrays of string arrays. */
static size_t nested_str(uint8_t *o)
{
    bb b = { 0 };
    bb_u32(&b, GGUF_T_ARR); bb_u64(&b, 2);
      bb_u32(&b, GGUF_T_ARR); bb_u64(&b, 1);
        bb_u32(&b, GGUF_T_STR); bb_u64(&b, 1); bb_str(&b, "a");
      bb_u32(&b, GGUF_T_ARR); bb_u64(&b, 2);
        bb_u32(&b, GGUF_T_STR); bb_u64(&b, 2); bb_str(&b, ""); bb_str(&b, "bc");
        bb_u32(&b, GGUF_T_STR); bb_u64(&b, 0);
    memcpy(o, b.p, b.n);
    size_t n = b.n;
    free(b.p);
    return n;
}

static int write_rt(const char *path, uint32_t alignment, uint8_t **data, q36_err *err)
{
    gguf_writer *w = gguf_writer_new();
    if (alignment)
        gguf_w_u32(w, "general.alignment", alignment);
    gguf_w_u8(w, "s.u8", 250);
    gguf_w_i8(w, "s.i8", -100);
    gguf_w_u16(w, "s.u16", 65000);
    gguf_w_i16(w, "s.i16", -32000);
    gguf_w_u32(w, "s.u32", 4000000000u);
    gguf_w_i32(w, "s.i32", -2000000000);
    gguf_w_u64(w, "s.u64", 18000000000000000000ull);
    gguf_w_i64(w, "s.i64", -9000000000000000000ll);
    gguf_w_f32(w, "s.f32", 1.5f);
    gguf_w_f64(w, "s.f64", -2.25e300);
    gguf_w_bool(w, "s.bool", true);
    gguf_w_str(w, "s.str", "hello \xe4\xb8\x96\xe7\x95\x8c");
    gguf_w_str(w, "s.empty", "");
    gguf_w_str(w, "\xe9\x94\xae.\xf0\x9f\x94\x91", "unicode key");
    gguf_w_u32(w, "s.replaced", 1);
    gguf_w_str(w, "s.replaced", "second");
    uint8_t a8[] = { 1, 2, 255 };
    int16_t a16[] = { -1, 2, -3, 4 };
    uint16_t au16[] = { 65535, 0 };
    uint32_t a32[] = { 7, 4000000000u };
    int32_t ai32[] = { -7, 11, 13 };
    float af[] = { 0.5f, -1.0f, 3.25f };
    uint8_t ab[] = { 1, 0, 1 };
    int8_t ai8[] = { -128, 127 };
    uint64_t a64[] = { 1, 18000000000000000000ull };
    int64_t ai64[] = { -5, 5 };
    double ad[] = { 1e-300, -7.5 };
    gguf_w_arr(w, "a.u8", GGUF_T_U8, a8, 3);
    gguf_w_arr(w, "a.i8", GGUF_T_I8, ai8, 2);
    gguf_w_arr(w, "a.u16", GGUF_T_U16, au16, 2);
    gguf_w_arr(w, "a.i16", GGUF_T_I16, a16, 4);
    gguf_w_arr(w, "a.u32", GGUF_T_U32, a32, 2);
    gguf_w_arr(w, "a.i32", GGUF_T_I32, ai32, 3);
    gguf_w_arr(w, "a.f32", GGUF_T_F32, af, 3);
    gguf_w_arr(w, "a.bool", GGUF_T_BOOL, ab, 3);
    gguf_w_arr(w, "a.u64", GGUF_T_U64, a64, 2);
    gguf_w_arr(w, "a.i64", GGUF_T_I64, ai64, 2);
    gguf_w_arr(w, "a.f64", GGUF_T_F64, ad, 2);
    gguf_w_arr(w, "a.empty", GGUF_T_U32, NULL, 0);
    const char *strs[] = { "<|im_start|>", "", "\xc4\xa0the", "x" };
    gguf_w_arr_str(w, "a.str", strs, NULL, 4);
    const char *bytes[] = { "\xff", "a\0b" };
    uint64_t blens[] = { 1, 3 };
    gguf_w_arr_str(w, "a.bytes", bytes, blens, 2);
    gguf_w_arr_str(w, "a.str_empty", NULL, NULL, 0);
    uint8_t raw[512];
    size_t n = nested_i32(raw);
    gguf_w_raw(w, "a.nested_i32", GGUF_T_ARR, raw, n);
    n = nested_str(raw);
    gguf_w_raw(w, "a.nested_str", GGUF_T_ARR, raw, n);
    for (size_t i = 0; i < N_RT; i++)
        gguf_w_tensor(w, rt_tensors[i].name, rt_tensors[i].type, rt_tensors[i].n_dims, rt_tensors[i].ne);
    int rc = gguf_w_begin(w, path, err);
    /* stream all tensor data as one byte stream in uneven chunks, some of
     * which cross tensor boundaries */
    uint64_t total = 0;
    for (size_t i = 0; i < N_RT; i++) total += tbytes(&rt_tensors[i]);
    t_rng r = t_rng_named(path);
    *data = malloc(total);
    for (uint64_t i = 0; i < total; i++) (*data)[i] = (uint8_t)t_next(&r);
    for (uint64_t o = 0; !rc && o < total;) {
        uint64_t k = 1 + t_next(&r) % 97;
        if (k > total - o) k = total - o;
        rc = gguf_w_data(w, *data + o, k, err);
        o += k;
    }
    if (!rc)
        rc = gguf_w_finish(w, err);
    gguf_writer_free(w);
    return rc;
}

#define CHECK(cond, ...) do { if (!(cond)) { t_fail(name, __VA_ARGS__); goto done; } } while (0)

static int64_t iget(const gguf_file *f, const char *k)
{
    int64_t v = 0;
    if (gguf_value_int(gguf_get(f, k), &v)) return 0x7eadbeef;
    return v;
}

static void test_round_trip(uint32_t alignment)
{
    char name[64], path[128];
    snprintf(name, sizeof name, "gguf_round_trip_align_%u", alignment ? alignment : 32);
    snprintf(path, sizeof path, "%s/rt_%u.gguf", g_dir, alignment);
    q36_err err = { 0 };
    uint8_t *data = NULL;
    gguf_file *f = NULL;
    int rc = write_rt(path, alignment, &data, &err);
    CHECK(rc == 0, "write: %s", err.msg);
    rc = gguf_open(path, &f, &err);
    CHECK(rc == 0, "open: %s", err.msg);
    uint32_t al = alignment ? alignment : 32;
    CHECK(gguf_version(f) == 3 && gguf_alignment(f) == al, "version %u alignment %u",
          gguf_version(f), gguf_alignment(f));
    CHECK(gguf_data_offset(f) % al == 0 && gguf_file_size(f) % al == 0,
          "data offset %llu / size %llu not aligned", (unsigned long long)gguf_data_offset(f),
          (unsigned long long)gguf_file_size(f));
    CHECK(gguf_n_kv(f) == 32 + (alignment != 0), "n_kv %lld", (long long)gguf_n_kv(f));
    CHECK(iget(f, "s.u8") == 250 && iget(f, "s.i8") == -100 && iget(f, "s.u16") == 65000 &&
          iget(f, "s.i16") == -32000 && iget(f, "s.u32") == 4000000000ll &&
          iget(f, "s.i32") == -2000000000 && iget(f, "s.i64") == -9000000000000000000ll &&
          iget(f, "s.bool") == 1, "integer scalars differ");
    int64_t iv;
    CHECK(gguf_value_int(gguf_get(f, "s.u64"), &iv) == GGUF_E_VTYPE, "u64 above INT64_MAX converted");
    const gguf_value *v = gguf_get(f, "s.u64");
    uint64_t u64;
    memcpy(&u64, v->p, 8);
    CHECK(v->type == GGUF_T_U64 && u64 == 18000000000000000000ull, "u64 value");
    double d;
    CHECK(gguf_value_float(gguf_get(f, "s.f32"), &d) == 0 && d == 1.5, "f32");
    CHECK(gguf_value_float(gguf_get(f, "s.f64"), &d) == 0 && d == -2.25e300, "f64");
    CHECK(gguf_value_float(gguf_get(f, "s.u64"), &d) == 0 && d == 18000000000000000000.0, "u64 as float");
    CHECK(gguf_value_float(gguf_get(f, "s.i8"), &d) == 0 && d == -100, "i8 as float");
    CHECK(gguf_value_float(gguf_get(f, "s.str"), &d) == GGUF_E_VTYPE, "str as float");
    bool bv;
    CHECK(gguf_value_bool(gguf_get(f, "s.bool"), &bv) == 0 && bv, "bool");
    CHECK(gguf_value_bool(gguf_get(f, "s.u32"), &bv) == 0 && bv, "u32 as bool");
    CHECK(gguf_value_bool(gguf_get(f, "s.f32"), &bv) == GGUF_E_VTYPE, "f32 as bool");
    CHECK(gguf_value_int(gguf_get(f, "s.f32"), &iv) == GGUF_E_VTYPE, "f32 as int");
    CHECK(gguf_value_int(gguf_get(f, "nope"), &iv) == GGUF_E_VTYPE && gguf_find_key(f, "nope") == -1,
          "absent key");
    uint64_t len;
    const char *s = gguf_value_str(gguf_get(f, "s.str"), &len);
    CHECK(s && len == 12 && memcmp(s, "hello \xe4\xb8\x96\xe7\x95\x8c", 12) == 0, "str");
    s = gguf_value_str(gguf_get(f, "s.empty"), &len);
    CHECK(s && len == 0, "empty str");
    s = gguf_value_str(gguf_get(f, "\xe9\x94\xae.\xf0\x9f\x94\x91"), &len);
    CHECK(s && len == 11 && !memcmp(s, "unicode key", 11), "unicode key");
    s = gguf_value_str(gguf_get(f, "s.replaced"), &len);
    CHECK(s && len == 6 && !memcmp(s, "second", 6), "replaced key");
    CHECK(gguf_value_str(gguf_get(f, "s.u8"), &len) == NULL, "u8 as str");
    for (int64_t i = 0; i < gguf_n_kv(f); i++)
        CHECK(gguf_find_key(f, gguf_kv_key(f, i)) == i, "find_key of key %lld", (long long)i);

    /* fixed arrays */
    struct { const char *k; enum gguf_vtype t; int n; double vals[4]; } arrs[] = {
        { "a.u8", GGUF_T_U8, 3, { 1, 2, 255 } },
        { "a.i8", GGUF_T_I8, 2, { -128, 127 } },
        { "a.u16", GGUF_T_U16, 2, { 65535, 0 } },
        { "a.i16", GGUF_T_I16, 4, { -1, 2, -3, 4 } },
        { "a.u32", GGUF_T_U32, 2, { 7, 4000000000.0 } },
        { "a.i32", GGUF_T_I32, 3, { -7, 11, 13 } },
        { "a.f32", GGUF_T_F32, 3, { 0.5, -1, 3.25 } },
        { "a.u64", GGUF_T_U64, 2, { 1, 18000000000000000000.0 } },
        { "a.i64", GGUF_T_I64, 2, { -5, 5 } },
        { "a.f64", GGUF_T_F64, 2, { 1e-300, -7.5 } },
        { "a.empty", GGUF_T_U32, 0, { 0 } },
    };
    for (size_t k = 0; k < sizeof arrs / sizeof arrs[0]; k++) {
        v = gguf_get(f, arrs[k].k);
        CHECK(v && v->type == GGUF_T_ARR && v->elem == arrs[k].t && v->n == (uint64_t)arrs[k].n,
              "array %s header", arrs[k].k);
        for (int i = 0; i < arrs[k].n; i++)
            CHECK(gguf_arr_float(f, v, (uint64_t)i, &d) == 0 && d == arrs[k].vals[i],
                  "array %s[%d] = %g", arrs[k].k, i, d);
        CHECK(gguf_arr_float(f, v, (uint64_t)arrs[k].n, &d) == GGUF_E_COUNT, "array %s past end", arrs[k].k);
    }
    v = gguf_get(f, "a.bool");
    CHECK(gguf_arr_int(f, v, 0, &iv) == 0 && iv == 1 && gguf_arr_int(f, v, 1, &iv) == 0 && iv == 0,
          "bool array");
    v = gguf_get(f, "a.i16");
    CHECK(gguf_arr_int(f, v, 2, &iv) == 0 && iv == -3, "i16 array as int");
    CHECK(gguf_arr_str(f, v, 0, &len) == NULL, "i16 array as str");
    v = gguf_get(f, "a.u64");
    CHECK(gguf_arr_int(f, v, 1, &iv) == GGUF_E_VTYPE, "u64 array element above INT64_MAX");
    v = gguf_get(f, "a.str");
    const char *strs[] = { "<|im_start|>", "", "\xc4\xa0the", "x" };
    CHECK(v && v->elem == GGUF_T_STR && v->n == 4, "string array header");
    for (int i = 0; i < 4; i++) {
        s = gguf_arr_str(f, v, (uint64_t)i, &len);
        CHECK(s && len == strlen(strs[i]) && !memcmp(s, strs[i], len), "string array [%d]", i);
    }
    CHECK(gguf_arr_str(f, v, 4, &len) == NULL && gguf_arr_int(f, v, 0, &iv) == GGUF_E_VTYPE,
          "string array misuse");
    v = gguf_get(f, "a.bytes");
    s = gguf_arr_str(f, v, 1, &len);
    CHECK(s && len == 3 && !memcmp(s, "a\0b", 3), "byte strings");
    v = gguf_get(f, "a.str_empty");
    CHECK(v && v->elem == GGUF_T_STR && v->n == 0, "empty string array");

    /* nested arrays */
    v = gguf_get(f, "a.nested_i32");
    gguf_value e, e2, e3;
    CHECK(v && v->elem == GGUF_T_ARR && v->n == 3, "nested i32 header");
    CHECK(gguf_arr_get(f, v, 0, &e) == 0 && e.type == GGUF_T_ARR && e.elem == GGUF_T_I32 && e.n == 3 &&
          gguf_arr_int(f, &e, 2, &iv) == 0 && iv == 3, "nested i32 [0][2]");
    CHECK(gguf_arr_get(f, v, 1, &e) == 0 && e.n == 0, "nested i32 [1] empty");
    CHECK(gguf_arr_get(f, v, 2, &e) == 0 && gguf_arr_int(f, &e, 0, &iv) == 0 && iv == -4, "nested i32 [2][0]");
    v = gguf_get(f, "a.nested_str");
    CHECK(v && v->n == 2 && gguf_arr_get(f, v, 1, &e) == 0 && e.elem == GGUF_T_ARR && e.n == 2,
          "nested str [1]");
    CHECK(gguf_arr_get(f, &e, 0, &e2) == 0 && e2.elem == GGUF_T_STR && e2.n == 2, "nested str [1][0]");
    s = gguf_arr_str(f, &e2, 1, &len);
    CHECK(s && len == 2 && !memcmp(s, "bc", 2), "nested str [1][0][1]");
    s = gguf_arr_str(f, &e2, 0, &len);
    CHECK(s && len == 0, "nested str [1][0][0]");
    CHECK(gguf_arr_get(f, &e, 1, &e3) == 0 && e3.n == 0, "nested str [1][1]");
    CHECK(gguf_arr_get(f, v, 0, &e) == 0 && gguf_arr_get(f, &e, 0, &e2) == 0 &&
          (s = gguf_arr_str(f, &e2, 0, &len)) && len == 1 && s[0] == 'a', "nested str [0][0][0]");

    /* tensors */
    CHECK(gguf_n_tensors(f) == (int64_t)N_RT, "n_tensors %lld", (long long)gguf_n_tensors(f));
    uint64_t o = 0;
    for (size_t i = 0; i < N_RT; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, (int64_t)i);
        const tdesc *x = &rt_tensors[i];
        CHECK(t && !strcmp(t->name, x->name) && t->type == x->type && t->n_dims == x->n_dims,
              "tensor %zu header", i);
        CHECK(gguf_find_tensor(f, x->name) == t, "find_tensor %s", x->name);
        uint64_t nel = 1;
        for (uint32_t dd = 0; dd < 4; dd++) {
            uint64_t want = dd < x->n_dims ? x->ne[dd] : 1;
            CHECK(t->ne[dd] == want, "tensor %zu ne[%u]", i, dd);
            nel *= want;
        }
        CHECK(gguf_tensor_nelements(t) == nel && t->nbytes == tbytes(x), "tensor %zu size", i);
        CHECK(t->offset % al == 0, "tensor %zu offset %llu", i, (unsigned long long)t->offset);
        CHECK((const uint8_t *)t->data == (const uint8_t *)gguf_tensor_at(f, 0)->data - gguf_tensor_at(f, 0)->offset + t->offset,
              "tensor %zu data pointer", i);
        CHECK(!memcmp(t->data, data + o, t->nbytes), "tensor %zu data bytes differ", i);
        o += t->nbytes;
    }
    CHECK(gguf_find_tensor(f, "absent") == NULL && gguf_tensor_at(f, -1) == NULL &&
          gguf_tensor_at(f, (int64_t)N_RT) == NULL, "absent tensor");
    t_ok(name);
done:
    gguf_close(f);
    free(data);
}

/* ------------------------------------------------------------------ writer misuse */

static void writer_case(const char *name, int expect_begin_fail, void (*setup)(gguf_writer *),
                        int data_bytes, int expect_fail_at /* 0 begin, 1 data, 2 finish */)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s.gguf", g_dir, name);
    gguf_writer *w = gguf_writer_new();
    setup(w);
    q36_err err = { 0 };
    int rc = gguf_w_begin(w, path, &err);
    int stage = 0;
    if (!rc) {
        stage = 1;
        uint8_t buf[256] = { 0 };
        rc = gguf_w_data(w, buf, (uint64_t)data_bytes, &err);
        if (!rc) {
            stage = 2;
            rc = gguf_w_finish(w, &err);
        }
    }
    gguf_writer_free(w);
    if (expect_begin_fail < 0)
        t_check(name, rc == 0, "rc %d: %s", rc, err.msg);
    else
        t_check(name, rc == GGUF_E_WRITE && stage == expect_fail_at && err.msg[0],
                "rc %d at stage %d (expected failure at %d): %s", rc, stage, expect_fail_at, err.msg);
}

static void ws_dup_tensor(gguf_writer *w)
{
    gguf_w_tensor(w, "a", QT_F32, 1, (uint64_t[]){ 4 });
    gguf_w_tensor(w, "a", QT_F32, 1, (uint64_t[]){ 4 });
}
static void ws_block(gguf_writer *w)   { gguf_w_tensor(w, "a", QT_Q4_0, 1, (uint64_t[]){ 31 }); }
static void ws_zero(gguf_writer *w)    { gguf_w_tensor(w, "a", QT_F32, 2, (uint64_t[]){ 4, 0 }); }
static void ws_type(gguf_writer *w)    { gguf_w_tensor(w, "a", 5, 1, (uint64_t[]){ 4 }); }
static void ws_badkey(gguf_writer *w)  { gguf_w_u32(w, "\xff", 1); }
static void ws_emptykey(gguf_writer *w){ gguf_w_u32(w, "", 1); }
static void ws_align_t(gguf_writer *w) { gguf_w_u64(w, "general.alignment", 32); }
static void ws_align_3(gguf_writer *w) { gguf_w_u32(w, "general.alignment", 3); }
static void ws_raw(gguf_writer *w)
{
    uint8_t raw[12] = { GGUF_T_U32, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0 };   /* 5 u32 claimed, none given */
    gguf_w_raw(w, "r", GGUF_T_ARR, raw, sizeof raw);
}
static void ws_arr_str(gguf_writer *w) { gguf_w_arr(w, "a", GGUF_T_STR, "x", 1); }
static void ws_one_f32x4(gguf_writer *w) { gguf_w_tensor(w, "a", QT_F32, 1, (uint64_t[]){ 4 }); }

static void test_writer_misuse(void)
{
    writer_case("gguf_writer_rejects_duplicate_tensor", 1, ws_dup_tensor, 0, 0);
    writer_case("gguf_writer_rejects_ne0_not_block", 1, ws_block, 0, 0);
    writer_case("gguf_writer_rejects_zero_dim", 1, ws_zero, 0, 0);
    writer_case("gguf_writer_rejects_retired_type", 1, ws_type, 0, 0);
    writer_case("gguf_writer_rejects_invalid_utf8_key", 1, ws_badkey, 0, 0);
    writer_case("gguf_writer_rejects_empty_key", 1, ws_emptykey, 0, 0);
    writer_case("gguf_writer_rejects_alignment_u64", 1, ws_align_t, 0, 0);
    writer_case("gguf_writer_rejects_alignment_3", 1, ws_align_3, 0, 0);
    writer_case("gguf_writer_rejects_malformed_raw", 1, ws_raw, 0, 0);
    writer_case("gguf_writer_rejects_arr_of_str_via_arr", 1, ws_arr_str, 0, 0);
    writer_case("gguf_writer_rejects_short_data", 1, ws_one_f32x4, 15, 2);
    writer_case("gguf_writer_rejects_extra_data", 1, ws_one_f32x4, 17, 1);
    writer_case("gguf_writer_accepts_exact_data", -1, ws_one_f32x4, 16, 0);

    /* an output that cannot be created */
    gguf_writer *w = gguf_writer_new();
    q36_err err = { 0 };
    int rc = gguf_w_begin(w, "/nonexistent-dir/x.gguf", &err);
    gguf_writer_free(w);
    t_check("gguf_writer_reports_create_error", rc == GGUF_E_WRITE && strstr(err.msg, "/nonexistent-dir/x.gguf"),
            "rc %d: %s", rc, err.msg);
}

/* A file with many keys and tensors: hashing, not quadratic scans. */
static void test_many(void)
{
    const char *name = "gguf_many_keys_and_tensors";
    char path[128];
    snprintf(path, sizeof path, "%s/many.gguf", g_dir);
    gguf_writer *w = gguf_writer_new();
    enum { NK = 20000, NT = 3000 };
    char k[64];
    for (int i = 0; i < NK; i++) {
        snprintf(k, sizeof k, "key.%d", i);
        gguf_w_i32(w, k, i);
    }
    for (int i = 0; i < NT; i++) {
        snprintf(k, sizeof k, "blk.%d.weight", i);
        gguf_w_tensor(w, k, QT_F32, 1, (uint64_t[]){ 1 });
    }
    q36_err err = { 0 };
    int rc = gguf_w_begin(w, path, &err);
    float x = 0;
    for (int i = 0; !rc && i < NT; i++, x += 1)
        rc = gguf_w_data(w, &x, 4, &err);
    if (!rc) rc = gguf_w_finish(w, &err);
    gguf_writer_free(w);
    gguf_file *f = NULL;
    if (!rc) rc = gguf_open(path, &f, &err);
    CHECK(rc == 0, "%s", err.msg);
    for (int i = 0; i < NK; i += 997) {
        snprintf(k, sizeof k, "key.%d", i);
        CHECK(iget(f, k) == i, "key %s", k);
    }
    for (int i = 0; i < NT; i += 101) {
        snprintf(k, sizeof k, "blk.%d.weight", i);
        const gguf_tensor *t = gguf_find_tensor(f, k);
        float y;
        CHECK(t, "tensor %s missing", k);
        memcpy(&y, t->data, 4);
        CHECK(y == (float)i, "tensor %s data %g", k, y);
    }
    t_ok(name);
done:
    gguf_close(f);
}

/* The shape of a real model's directory: a 248,320-string token array, a
 * merges array, 753 tensors. Opening must not scale with anything but the
 * directory; the bound (1 s) is loose so a loaded machine does not fail it,
 * but catches per-byte or quadratic work. */
static void test_open_speed(void)
{
    const char *name = "gguf_open_real_sized_directory";
    char path[128];
    snprintf(path, sizeof path, "%s/big_dir.gguf", g_dir);
    enum { NTOK = 248320, NT = 753 };
    char **toks = malloc(NTOK * sizeof *toks);
    char buf[64];
    for (int i = 0; i < NTOK; i++) {
        snprintf(buf, sizeof buf, "tok%d", i);
        toks[i] = strdup(buf);
    }
    gguf_writer *w = gguf_writer_new();
    gguf_w_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)toks, NULL, NTOK);
    gguf_w_arr_str(w, "tokenizer.ggml.merges", (const char *const *)toks, NULL, NTOK / 2);
    for (int i = 0; i < NT; i++) {
        snprintf(buf, sizeof buf, "blk.%d.ffn_down_exps.weight", i);
        gguf_w_tensor(w, buf, QT_Q8_0, 1, (uint64_t[]){ 32 });
    }
    q36_err err = { 0 };
    int rc = gguf_w_begin(w, path, &err);
    uint8_t blk[34] = { 0 };
    for (int i = 0; !rc && i < NT; i++)
        rc = gguf_w_data(w, blk, sizeof blk, &err);
    if (!rc) rc = gguf_w_finish(w, &err);
    gguf_writer_free(w);
    for (int i = 0; i < NTOK; i++) free(toks[i]);
    free(toks);
    gguf_file *f = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!rc) rc = gguf_open(path, &f, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    uint64_t len = 0;
    const char *s = NULL;
    if (!rc) s = gguf_arr_str(f, gguf_get(f, "tokenizer.ggml.tokens"), 248319, &len);
    t_check(name, !rc && s && len == 9 && !memcmp(s, "tok248319", 9) && gguf_n_tensors(f) == NT && ms < 1000,
            "rc %d (%s), open took %.1f ms", rc, err.msg, ms);
    printf("# gguf_open of a %llu-byte file with %d strings and %d tensors: %.2f ms\n",
           f ? (unsigned long long)gguf_file_size(f) : 0ull, NTOK + NTOK / 2, NT, ms);
    gguf_close(f);
}

/* The fuzz seeds (tests/gguf/seeds, made by make_seeds.py) are valid files. */
static void test_seeds(void)
{
    DIR *d = opendir("tests/gguf/seeds");
    int n = 0;
    if (!d) {
        t_fail("gguf_seeds", "cannot open tests/gguf/seeds (run from the repository root)");
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, ".gguf"))
            continue;
        char path[512], name[320];
        snprintf(path, sizeof path, "tests/gguf/seeds/%s", e->d_name);
        snprintf(name, sizeof name, "gguf_seed_%s", e->d_name);
        gguf_file *f = NULL;
        q36_err err = { 0 };
        int rc = gguf_open(path, &f, &err);
        t_check(name, rc == 0, "%s", err.msg);
        gguf_close(f);
        n++;
    }
    closedir(d);
    t_check("gguf_seeds_present", n >= 3, "found %d seed files", n);
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/q36_test_gguf_XXXXXX");
    if (!mkdtemp(g_dir)) {
        t_fail("gguf_tmpdir", "mkdtemp failed");
        return t_exit();
    }
    test_round_trip(0);
    test_round_trip(64);
    test_round_trip(1);
    test_accept();
    test_broken();
    test_writer_misuse();
    test_many();
    test_seeds();
    test_open_speed();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_dir);
    return t_exit();
}
