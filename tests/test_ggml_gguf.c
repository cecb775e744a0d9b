/* test_ggml_gguf.c: q36's GGUF reader on files it did not write, against
 * ggml's own reader (the pinned libggml-base, in this process).
 *
 * 1. ggml's writer makes files with every value type and tensors of several
 *    types; q36 reads them and every key, value, tensor and offset is compared
 *    with what ggml's reader says. 2. q36's writer makes a file and ggml reads
 *    it back. 3. Thousands of seeded mutations of the ggml-made files
 *    (truncations at every byte, random byte and word changes): q36 must never
 *    crash, must fail only with a known kind and a proper message, and must
 *    accept what llama.cpp accepts unless a stricter q36 check is deliberate
 *    (listed in deliberate()); files q36 accepts but ggml refuses are summed up
 *    by ggml's reason, since q36 is deliberately looser there (any tensor order).
 *
 * libggml-base exports functions named like q36's (gguf_find_key,
 * gguf_find_tensor), so ggml's gguf API is reached only through dlsym on its
 * own handle, and the Makefile links test_ggml_* with --exclude-libs so that
 * ggml's internal calls do not land in q36's functions.
 */
#include "test.h"
#include "gguf/gguf.h"
#include "quant/types.h"

#include <ggml.h>

#include <dirent.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef Q36_ORACLE_LIB
#error "Q36_ORACLE_LIB must name the folder of the pinned libggml-base.so"
#endif

/* ------------------------------------------------------------------ ggml's gguf API */

struct gguf_context;
struct ggml_init_params_gguf { bool no_alloc; struct ggml_context **ctx; };

static struct {
    struct gguf_context *(*init_empty)(void);
    struct gguf_context *(*init_from_file)(const char *, struct ggml_init_params_gguf);
    struct gguf_context *(*init_from_buffer)(const void *, size_t, struct ggml_init_params_gguf);
    void (*free_)(struct gguf_context *);
    uint32_t (*get_version)(const struct gguf_context *);
    size_t (*get_alignment)(const struct gguf_context *);
    size_t (*get_data_offset)(const struct gguf_context *);
    int64_t (*get_n_kv)(const struct gguf_context *);
    int64_t (*find_key)(const struct gguf_context *, const char *);
    const char *(*get_key)(const struct gguf_context *, int64_t);
    int (*get_kv_type)(const struct gguf_context *, int64_t);
    int (*get_arr_type)(const struct gguf_context *, int64_t);
    const void *(*get_val_data)(const struct gguf_context *, int64_t);
    const char *(*get_val_str)(const struct gguf_context *, int64_t);
    size_t (*get_arr_n)(const struct gguf_context *, int64_t);
    const void *(*get_arr_data)(const struct gguf_context *, int64_t);
    const char *(*get_arr_str)(const struct gguf_context *, int64_t, size_t);
    int64_t (*get_n_tensors)(const struct gguf_context *);
    int64_t (*find_tensor)(const struct gguf_context *, const char *);
    size_t (*get_tensor_offset)(const struct gguf_context *, int64_t);
    const char *(*get_tensor_name)(const struct gguf_context *, int64_t);
    int (*get_tensor_type)(const struct gguf_context *, int64_t);
    size_t (*get_tensor_size)(const struct gguf_context *, int64_t);
    void (*set_u8)(struct gguf_context *, const char *, uint8_t);
    void (*set_i8)(struct gguf_context *, const char *, int8_t);
    void (*set_u16)(struct gguf_context *, const char *, uint16_t);
    void (*set_i16)(struct gguf_context *, const char *, int16_t);
    void (*set_u32)(struct gguf_context *, const char *, uint32_t);
    void (*set_i32)(struct gguf_context *, const char *, int32_t);
    void (*set_f32)(struct gguf_context *, const char *, float);
    void (*set_u64)(struct gguf_context *, const char *, uint64_t);
    void (*set_i64)(struct gguf_context *, const char *, int64_t);
    void (*set_f64)(struct gguf_context *, const char *, double);
    void (*set_bool)(struct gguf_context *, const char *, bool);
    void (*set_str)(struct gguf_context *, const char *, const char *);
    void (*set_arr_data)(struct gguf_context *, const char *, int, const void *, size_t);
    void (*set_arr_str)(struct gguf_context *, const char *, const char **, size_t);
    void (*add_tensor)(struct gguf_context *, const struct ggml_tensor *);
    bool (*write_to_file)(const struct gguf_context *, const char *, bool);
} G;

static int load_ggml(void)
{
    void *h = dlopen(Q36_ORACLE_LIB "/libggml-base.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        t_fail("ggml_gguf_load", "dlopen libggml-base.so: %s", dlerror());
        return -1;
    }
    struct { void **slot; const char *name; } syms[] = {
#define S(field, name) { (void **)&G.field, name }
        S(init_empty, "gguf_init_empty"), S(init_from_file, "gguf_init_from_file"),
        S(init_from_buffer, "gguf_init_from_buffer"), S(free_, "gguf_free"),
        S(get_version, "gguf_get_version"), S(get_alignment, "gguf_get_alignment"),
        S(get_data_offset, "gguf_get_data_offset"), S(get_n_kv, "gguf_get_n_kv"),
        S(find_key, "gguf_find_key"), S(get_key, "gguf_get_key"),
        S(get_kv_type, "gguf_get_kv_type"), S(get_arr_type, "gguf_get_arr_type"),
        S(get_val_data, "gguf_get_val_data"), S(get_val_str, "gguf_get_val_str"),
        S(get_arr_n, "gguf_get_arr_n"), S(get_arr_data, "gguf_get_arr_data"),
        S(get_arr_str, "gguf_get_arr_str"), S(get_n_tensors, "gguf_get_n_tensors"),
        S(find_tensor, "gguf_find_tensor"), S(get_tensor_offset, "gguf_get_tensor_offset"),
        S(get_tensor_name, "gguf_get_tensor_name"), S(get_tensor_type, "gguf_get_tensor_type"),
        S(get_tensor_size, "gguf_get_tensor_size"),
        S(set_u8, "gguf_set_val_u8"), S(set_i8, "gguf_set_val_i8"), S(set_u16, "gguf_set_val_u16"),
        S(set_i16, "gguf_set_val_i16"), S(set_u32, "gguf_set_val_u32"), S(set_i32, "gguf_set_val_i32"),
        S(set_f32, "gguf_set_val_f32"), S(set_u64, "gguf_set_val_u64"), S(set_i64, "gguf_set_val_i64"),
        S(set_f64, "gguf_set_val_f64"), S(set_bool, "gguf_set_val_bool"), S(set_str, "gguf_set_val_str"),
        S(set_arr_data, "gguf_set_arr_data"), S(set_arr_str, "gguf_set_arr_str"),
        S(add_tensor, "gguf_add_tensor"), S(write_to_file, "gguf_write_to_file"),
#undef S
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        *syms[i].slot = dlsym(h, syms[i].name);
        if (!*syms[i].slot) {
            t_fail("ggml_gguf_load", "dlsym %s: %s", syms[i].name, dlerror());
            return -1;
        }
    }
    /* the q36 functions of the same names must not be ggml's, and vice versa */
    if ((void *)G.find_key == (void *)gguf_find_key || (void *)G.find_tensor == (void *)gguf_find_tensor) {
        t_fail("ggml_gguf_load", "gguf_find_key resolves to the same function in q36 and ggml");
        return -1;
    }
    t_ok("ggml_gguf_load");
    return 0;
}

/* ggml's log: the first error line of the current call is kept as its reason. */
static char g_ggml_reason[256];
static void on_ggml_log(enum ggml_log_level level, const char *text, void *user)
{
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR && !g_ggml_reason[0]) {
        snprintf(g_ggml_reason, sizeof g_ggml_reason, "%s", text);
        g_ggml_reason[strcspn(g_ggml_reason, "\n")] = 0;
    }
}

static char g_dir[64];

/* ------------------------------------------------------------------ files made by ggml */

typedef struct tspec { const char *name; enum ggml_type type; int n_dims; int64_t ne[4]; } tspec;

static const tspec g_tensors[] = {
    { "token_embd.weight", GGML_TYPE_F32, 2, { 7, 3, 1, 1 } },
    { "blk.0.attn_q.weight", GGML_TYPE_Q8_0, 2, { 64, 2, 1, 1 } },
    { "blk.0.ffn_down_exps.weight", GGML_TYPE_Q4_K, 3, { 256, 2, 2, 1 } },
    { "output_norm.weight", GGML_TYPE_F16, 1, { 5, 1, 1, 1 } },
    { "blk.0.x", GGML_TYPE_I32, 4, { 2, 2, 2, 2 } },
    { "b16", GGML_TYPE_BF16, 1, { 3, 1, 1, 1 } },
    { "blk.1.ssm_a", GGML_TYPE_Q6_K, 2, { 256, 1, 1, 1 } },
    { "i8", GGML_TYPE_I8, 1, { 1, 1, 1, 1 } },
};
#define N_T (sizeof g_tensors / sizeof g_tensors[0])

/* Writes a file with ggml's writer; `variant` picks alignment and contents. */
static int ggml_make(const char *path, int variant)
{
    struct gguf_context *g = G.init_empty();
    /* ggml's writer pads with the context's alignment, which
     * gguf_set_val_u32("general.alignment") on an empty context does not
     * change: the file declares 64 but is laid out for 32 (variant 1). */
    if (variant == 1)
        G.set_u32(g, "general.alignment", 64);
    G.set_str(g, "general.architecture", "qwen35");
    G.set_u8(g, "v.u8", 251);
    G.set_i8(g, "v.i8", -3);
    G.set_u16(g, "v.u16", 65001);
    G.set_i16(g, "v.i16", -30001);
    G.set_u32(g, "v.u32", 4000000001u);
    G.set_i32(g, "v.i32", -2000000001);
    G.set_f32(g, "v.f32", -0.375f);
    G.set_u64(g, "v.u64", 18000000000000000001ull);
    G.set_i64(g, "v.i64", -9000000000000000001ll);
    G.set_f64(g, "v.f64", 3.0e-310);
    G.set_bool(g, "v.bool", true);
    G.set_str(g, "v.str", "\xe4\xbd\xa0\xe5\xa5\xbd, world");
    G.set_str(g, "v.empty", "");
    G.set_str(g, "\xf0\x9f\x94\x91.key", "unicode key");
    uint8_t a8[] = { 0, 128, 255 };
    int8_t ai8[] = { -1, 1 };
    uint16_t a16[] = { 1, 65535 };
    int16_t ai16[] = { -2, 2, 3 };
    uint32_t a32[] = { 1, 2, 4000000000u };
    int32_t ai32[] = { 11, -12, 13, 0 };
    float af[] = { 1.0f, -2.5f };
    bool ab[] = { true, false, true };
    uint64_t a64[] = { 18446744073709551615ull };
    int64_t ai64[] = { -1, 0, 1 };
    double ad[] = { 2.5, -1e200 };
    G.set_arr_data(g, "a.u8", GGUF_T_U8, a8, 3);
    G.set_arr_data(g, "a.i8", GGUF_T_I8, ai8, 2);
    G.set_arr_data(g, "a.u16", GGUF_T_U16, a16, 2);
    G.set_arr_data(g, "a.i16", GGUF_T_I16, ai16, 3);
    G.set_arr_data(g, "a.u32", GGUF_T_U32, a32, 3);
    G.set_arr_data(g, "a.i32", GGUF_T_I32, ai32, 4);
    G.set_arr_data(g, "a.f32", GGUF_T_F32, af, 2);
    G.set_arr_data(g, "a.bool", GGUF_T_BOOL, ab, 3);
    G.set_arr_data(g, "a.u64", GGUF_T_U64, a64, 1);
    G.set_arr_data(g, "a.i64", GGUF_T_I64, ai64, 3);
    G.set_arr_data(g, "a.f64", GGUF_T_F64, ad, 2);
    G.set_arr_data(g, "a.empty", GGUF_T_I32, NULL, 0);
    const char *toks[] = { "<|endoftext|>", "", "\xc4\xa0hello", "!", "\xe2\x96\x81" };
    G.set_arr_str(g, "tokenizer.ggml.tokens", toks, 5);
    G.set_arr_str(g, "a.str_empty", NULL, 0);

    struct ggml_init_params ip = { 1 << 20, NULL, false };
    struct ggml_context *c = ggml_init(ip);
    t_rng r = t_rng_named(path);
    size_t nt = variant == 2 ? 3 : N_T;
    for (size_t i = 0; i < nt; i++) {
        const tspec *s = &g_tensors[i];
        struct ggml_tensor *t = ggml_new_tensor(c, s->type, s->n_dims, s->ne);
        ggml_set_name(t, s->name);
        uint8_t *d = t->data;
        for (size_t k = 0; k < ggml_nbytes(t); k++)
            d[k] = (uint8_t)t_next(&r);
        G.add_tensor(g, t);
    }
    bool ok = G.write_to_file(g, path, false);
    G.free_(g);
    ggml_free(c);
    return ok ? 0 : -1;
}

/* ggml hands out strings as C strings, so a string value with a NUL byte
 * reads, through its API, as the part before the NUL. */
static bool cstr_equal(const char *s, uint64_t len, const char *gs)
{
    const char *nul = memchr(s, 0, len);
    uint64_t n = nul ? (uint64_t)(nul - s) : len;
    return n == strlen(gs) && memcmp(s, gs, n) == 0;
}

/* Compares everything q36 and ggml read from the same bytes. Returns 0 or
 * writes the first difference to why. */
static int compare(const gguf_file *f, const struct gguf_context *g, const uint8_t *bytes,
                   uint64_t size, char *why, size_t cap)
{
#define DIFF(...) do { snprintf(why, cap, __VA_ARGS__); return -1; } while (0)
    if (gguf_version(f) != G.get_version(g)) DIFF("version %u vs %u", gguf_version(f), G.get_version(g));
    if (gguf_alignment(f) != G.get_alignment(g)) DIFF("alignment %u vs %zu", gguf_alignment(f), G.get_alignment(g));
    if (gguf_n_kv(f) != G.get_n_kv(g)) DIFF("n_kv %lld vs %lld", (long long)gguf_n_kv(f), (long long)G.get_n_kv(g));
    if (gguf_n_tensors(f) != G.get_n_tensors(g))
        DIFF("n_tensors %lld vs %lld", (long long)gguf_n_tensors(f), (long long)G.get_n_tensors(g));
    if (gguf_n_tensors(f) > 0 && gguf_data_offset(f) != G.get_data_offset(g))
        DIFF("data offset %llu vs %zu", (unsigned long long)gguf_data_offset(f), G.get_data_offset(g));
    for (int64_t i = 0; i < gguf_n_kv(f); i++) {
        const char *k = gguf_kv_key(f, i);
        const gguf_value *v = gguf_kv_value(f, i);
        if (strcmp(k, G.get_key(g, i)))
            DIFF("key %lld: '%s' vs '%s'", (long long)i, k, G.get_key(g, i));
        if (G.find_key(g, k) != i || gguf_find_key(f, k) != i)
            DIFF("key %lld '%s': find_key %lld vs %lld", (long long)i, k,
                 (long long)gguf_find_key(f, k), (long long)G.find_key(g, k));
        if ((int)v->type != G.get_kv_type(g, i))
            DIFF("key '%s': type %d vs %d", k, v->type, G.get_kv_type(g, i));
        if (v->type == GGUF_T_STR) {
            uint64_t len;
            const char *s = gguf_value_str(v, &len);
            if (!cstr_equal(s, len, G.get_val_str(g, i))) DIFF("key '%s': string differs", k);
        } else if (v->type == GGUF_T_ARR) {
            if ((int)v->elem != G.get_arr_type(g, i)) DIFF("key '%s': elem type %d vs %d", k, v->elem, G.get_arr_type(g, i));
            if (v->n != G.get_arr_n(g, i)) DIFF("key '%s': n %llu vs %zu", k, (unsigned long long)v->n, G.get_arr_n(g, i));
            if (v->elem == GGUF_T_STR) {
                for (uint64_t j = 0; j < v->n; j++) {
                    uint64_t len;
                    const char *s = gguf_arr_str(f, v, j, &len);
                    if (!s || !cstr_equal(s, len, G.get_arr_str(g, i, j)))
                        DIFF("key '%s': string %llu differs", k, (unsigned long long)j);
                }
            } else if (v->elem == GGUF_T_BOOL) {
                const uint8_t *gd = G.get_arr_data(g, i);   /* ggml stores bool as 0/1 bytes */
                for (uint64_t j = 0; j < v->n; j++) {
                    int64_t x;
                    if (gguf_arr_int(f, v, j, &x) || (x != 0) != (gd[j] != 0))
                        DIFF("key '%s': bool %llu differs", k, (unsigned long long)j);
                }
            } else if (v->elem != GGUF_T_ARR) {
                static const uint32_t sizes[GGUF_T_COUNT] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
                if (v->n && memcmp(v->p, G.get_arr_data(g, i), v->n * sizes[v->elem]))
                    DIFF("key '%s': array bytes differ", k);
            }
        } else if (v->type == GGUF_T_BOOL) {
            bool b;
            if (gguf_value_bool(v, &b) || b != (*(const uint8_t *)G.get_val_data(g, i) != 0))
                DIFF("key '%s': bool differs", k);
        } else {
            static const uint32_t sizes[GGUF_T_COUNT] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
            if (memcmp(v->p, G.get_val_data(g, i), sizes[v->type]))
                DIFF("key '%s': value bytes differ", k);
        }
    }
    for (int64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (strcmp(t->name, G.get_tensor_name(g, i)))
            DIFF("tensor %lld: '%s' vs '%s'", (long long)i, t->name, G.get_tensor_name(g, i));
        if (G.find_tensor(g, t->name) != i || gguf_find_tensor(f, t->name) != t)
            DIFF("tensor '%s': find_tensor differs", t->name);
        if ((int)t->type != G.get_tensor_type(g, i))
            DIFF("tensor '%s': type %u vs %d", t->name, t->type, G.get_tensor_type(g, i));
        if (t->offset != G.get_tensor_offset(g, i))
            DIFF("tensor '%s': offset %llu vs %zu", t->name, (unsigned long long)t->offset, G.get_tensor_offset(g, i));
        if (t->nbytes != G.get_tensor_size(g, i))
            DIFF("tensor '%s': size %llu vs %zu", t->name, (unsigned long long)t->nbytes, G.get_tensor_size(g, i));
        if (bytes && (const uint8_t *)t->data != bytes + G.get_data_offset(g) + G.get_tensor_offset(g, i))
            DIFF("tensor '%s': data pointer not at ggml's data offset + offset", t->name);
        if (G.get_data_offset(g) + t->offset + t->nbytes > size)
            DIFF("tensor '%s': data past the end of the file", t->name);
    }
    return 0;
#undef DIFF
}

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long sz = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *b = malloc(sz > 0 ? (size_t)sz : 1);
    *n = fread(b, 1, (size_t)(sz > 0 ? sz : 0), fp);
    fclose(fp);
    return b;
}

/* Reads a ggml-written file with both readers and compares them, then each
 * tensor's bytes in q36's mapping with ggml's loaded copy. The bytes of the
 * file are returned for the mutation tests. */
static uint8_t *test_ggml_written(const char *label, int variant, size_t *size)
{
    char name[96], path[160], why[256] = "";
    snprintf(name, sizeof name, "ggml_gguf_read_%s", label);
    snprintf(path, sizeof path, "%s/ggml_%s.gguf", g_dir, label);
    *size = 0;
    if (ggml_make(path, variant)) {
        t_fail(name, "ggml could not write %s", path);
        return NULL;
    }
    uint8_t *bytes = slurp(path, size);
    gguf_file *f = NULL;
    q36_err err = { 0 };
    struct ggml_context *gc = NULL;
    g_ggml_reason[0] = 0;
    struct gguf_context *g = G.init_from_file(path, (struct ggml_init_params_gguf){ false, &gc });
    int rc = gguf_open(path, &f, &err);
    if (!g || !bytes) {
        t_fail(name, "ggml cannot read its own file: %s", g_ggml_reason);
    } else if (rc) {
        t_fail(name, "q36 cannot read it: %s", err.msg);
    } else if (compare(f, g, NULL, *size, why, sizeof why)) {
        t_fail(name, "%s", why);
    } else {
        int bad = 0;
        for (int64_t i = 0; i < gguf_n_tensors(f) && !bad; i++) {
            const gguf_tensor *t = gguf_tensor_at(f, i);
            struct ggml_tensor *gt = ggml_get_tensor(gc, t->name);
            if (!gt || ggml_nbytes(gt) != t->nbytes || memcmp(gt->data, t->data, t->nbytes) ||
                (int64_t)t->ne[0] != gt->ne[0] || (int64_t)t->ne[1] != gt->ne[1] ||
                (int64_t)t->ne[2] != gt->ne[2] || (int64_t)t->ne[3] != gt->ne[3] ||
                (int)t->n_dims != ggml_n_dims(gt)) {
                t_fail(name, "tensor '%s': shape or data differ from ggml's", t->name);
                bad = 1;
            }
        }
        if (!bad)
            t_check(name, gguf_n_kv(f) >= 28 && gguf_n_tensors(f) >= 3,
                    "only %lld keys, %lld tensors", (long long)gguf_n_kv(f), (long long)gguf_n_tensors(f));
    }
    if (g) G.free_(g);
    if (gc) ggml_free(gc);
    gguf_close(f);
    return bytes;
}

/* The file ggml's writer makes after gguf_set_val_u32("general.alignment",
 * 64) on an empty context declares 64 but places tensors 32 apart: ggml's own
 * reader refuses it, and q36 must refuse it too, as a misaligned offset. */
static void test_ggml_misaligned(void)
{
    const char *name = "ggml_gguf_refuses_ggml_misaligned_file";
    char path[160];
    snprintf(path, sizeof path, "%s/ggml_align64.gguf", g_dir);
    if (ggml_make(path, 1)) {
        t_fail(name, "ggml could not write %s", path);
        return;
    }
    g_ggml_reason[0] = 0;
    struct gguf_context *g = G.init_from_file(path, (struct ggml_init_params_gguf){ true, NULL });
    gguf_file *f = NULL;
    q36_err err = { 0 };
    int rc = gguf_open(path, &f, &err);
    t_check(name, !g && rc == GGUF_E_OFFSET, "ggml %s (%s), q36 rc %d: %s", g ? "accepts" : "refuses",
            g_ggml_reason, rc, err.msg);
    if (g) G.free_(g);
    gguf_close(f);
}

/* ------------------------------------------------------------------ q36 writes, ggml reads */

static uint8_t *test_q36_written(size_t *rsize)
{
    const char *name = "ggml_gguf_reads_q36_writer";
    char path[160], why[256] = "";
    snprintf(path, sizeof path, "%s/q36_made.gguf", g_dir);
    gguf_writer *w = gguf_writer_new();
    gguf_w_u32(w, "general.alignment", 16);
    gguf_w_str(w, "general.architecture", "qwen35moe");
    gguf_w_u8(w, "u8", 1); gguf_w_i8(w, "i8", -1); gguf_w_u16(w, "u16", 2); gguf_w_i16(w, "i16", -2);
    gguf_w_u32(w, "u32", 3); gguf_w_i32(w, "i32", -3); gguf_w_u64(w, "u64", 4); gguf_w_i64(w, "i64", -4);
    gguf_w_f32(w, "f32", 0.5f); gguf_w_f64(w, "f64", 0.25); gguf_w_bool(w, "bool", false);
    gguf_w_str(w, "empty", "");
    int32_t sec[] = { 11, 11, 10, 0 };
    gguf_w_arr(w, "rope.sections", GGUF_T_I32, sec, 4);
    const char *toks[] = { "a", "", "\xc4\xa0\x62" };
    gguf_w_arr_str(w, "tokens", toks, NULL, 3);
    uint64_t ne1[] = { 32, 3 }, ne2[] = { 6 }, ne3[] = { 256, 1, 2 };
    gguf_w_tensor(w, "q8", QT_Q8_0, 2, ne1);
    gguf_w_tensor(w, "f16", QT_F16, 1, ne2);
    gguf_w_tensor(w, "k4", QT_Q4_K, 3, ne3);
    q36_err err = { 0 };
    int rc = gguf_w_begin(w, path, &err);
    uint64_t total = 3 * 34 + 12 + 2 * 144;
    uint8_t *data = malloc(total);
    t_rng r = t_rng_named(name);
    for (uint64_t i = 0; i < total; i++) data[i] = (uint8_t)t_next(&r);
    if (!rc) rc = gguf_w_data(w, data, total, &err);
    if (!rc) rc = gguf_w_finish(w, &err);
    gguf_writer_free(w);
    gguf_file *f = NULL;
    struct ggml_context *gc = NULL;
    struct gguf_context *g = NULL;
    g_ggml_reason[0] = 0;
    if (!rc) rc = gguf_open(path, &f, &err);
    if (!rc) g = G.init_from_file(path, (struct ggml_init_params_gguf){ false, &gc });
    size_t size = 0;
    uint8_t *bytes = slurp(path, &size);
    if (rc)
        t_fail(name, "q36: %s", err.msg);
    else if (!g)
        t_fail(name, "ggml refuses q36's file: %s", g_ggml_reason);
    else if (compare(f, g, NULL, size, why, sizeof why))
        t_fail(name, "%s", why);
    else {
        uint64_t o = 0;
        int bad = 0;
        const char *names[] = { "q8", "f16", "k4" };
        for (int i = 0; i < 3 && !bad; i++) {
            struct ggml_tensor *gt = ggml_get_tensor(gc, names[i]);
            bad = !gt || memcmp(gt->data, data + o, ggml_nbytes(gt));
            o += gt ? ggml_nbytes(gt) : 0;
        }
        t_check(name, !bad && o == total, "tensor data read by ggml differs from what q36 wrote");
    }
    /* ggml writes the context it read back out: the metadata with its own
     * writer (only_meta), the tensor data appended at the offsets ggml gives
     * (its documented second way of writing; a context read from a file
     * cannot be written whole, its tensor infos have no buffer). The result
     * must be byte-identical to q36's file. */
    uint8_t *re = NULL;
    *rsize = 0;
    const char *name2 = "ggml_gguf_rewrite_is_byte_identical";
    char path2[160];
    snprintf(path2, sizeof path2, "%s/ggml_rewrite.gguf", g_dir);
    bool wrote = g && G.write_to_file(g, path2, true);
    if (wrote) {
        FILE *fp = fopen(path2, "ab");
        long pos = fp ? ftell(fp) : -1;
        wrote = fp && pos == (long)G.get_data_offset(g);
        for (int64_t i = 0; wrote && i < G.get_n_tensors(g); i++) {
            struct ggml_tensor *gt = ggml_get_tensor(gc, G.get_tensor_name(g, i));
            long at = (long)(G.get_data_offset(g) + G.get_tensor_offset(g, i));
            while (pos < at) { fputc(0, fp); pos++; }
            wrote = gt && fwrite(gt->data, 1, ggml_nbytes(gt), fp) == ggml_nbytes(gt);
            pos += (long)ggml_nbytes(gt);
        }
        while (wrote && pos % (long)G.get_alignment(g)) { fputc(0, fp); pos++; }
        if (fp) fclose(fp);
    }
    if (!wrote) {
        t_fail(name2, "ggml could not rewrite q36's file");
    } else {
        re = slurp(path2, rsize);
        size_t k = 0;
        while (re && k < size && k < *rsize && re[k] == bytes[k]) k++;
        t_check(name2, re && *rsize == size && k == size,
                "q36 wrote %zu bytes, ggml %zu; first difference at byte %zu", size, *rsize, k);
    }
    if (g) G.free_(g);
    if (gc) ggml_free(gc);
    gguf_close(f);
    free(data);
    free(bytes);
    return re;
}

/* ------------------------------------------------------------------ mutations */

/* What llama.cpp accepts: ggml's reader (no data) plus the model loader's
 * check that every tensor's bytes lie inside the file. */
static bool ggml_accepts(const uint8_t *b, size_t n, struct gguf_context **out)
{
    g_ggml_reason[0] = 0;
    *out = NULL;
    if (n == 0) {
        snprintf(g_ggml_reason, sizeof g_ggml_reason, "empty buffer");
        return false;
    }
    struct gguf_context *g = G.init_from_buffer(b, n, (struct ggml_init_params_gguf){ true, NULL });
    if (!g)
        return false;
    for (int64_t i = 0; i < G.get_n_tensors(g); i++) {
        uint64_t offs = (uint64_t)G.get_data_offset(g) + G.get_tensor_offset(g, i);
        uint64_t end = offs + G.get_tensor_size(g, i);
        if (end < offs || end > n) {
            snprintf(g_ggml_reason, sizeof g_ggml_reason, "llama loader: tensor data is not within the file bounds");
            G.free_(g);
            return false;
        }
    }
    *out = g;
    return true;
}

/* q36's checks that llama.cpp does not make, on purpose: names must be
 * non-empty UTF-8 without NUL bytes, and no dimension may be zero. */
static bool deliberate(int kind, const char *msg)
{
    if (kind == GGUF_E_UTF8)
        return true;
    if (kind == GGUF_E_SHAPE && (strstr(msg, "> 0, found 0") || strstr(msg, "n_dims 1..4, found 0")))
        return true;
    return false;
}

typedef struct stats {
    int runs, both_ok, both_fail, q36_stricter_ok, disagree, looser;
    int kinds[32];
    char looser_reason[8][160];
    int looser_n[8];
    char strict_reason[8][160];
    int strict_n[8];
} stats;

static void note(char reasons[8][160], int *counts, const char *reason)
{
    /* drop the function prefix and numbers so reasons group */
    char r[160];
    const char *p = strstr(reason, ": ");
    snprintf(r, sizeof r, "%s", p ? p + 2 : reason);
    for (char *c = r; *c; c++)
        if (*c >= '0' && *c <= '9') *c = '#';
    char *q = strstr(r, " (at byte");
    if (q) *q = 0;
    for (int i = 0; i < 8; i++) {
        if (counts[i] && !strcmp(reasons[i], r)) { counts[i]++; return; }
        if (!counts[i]) { snprintf(reasons[i], 160, "%s", r); counts[i] = 1; return; }
    }
}

/* One mutated buffer: q36 must not crash, must fail only with a known kind
 * and a one-line message naming the file and a byte offset, and must agree
 * with ggml's acceptance except where deliberate() says otherwise. */
static void mutant(const char *label, const uint8_t *b, size_t n, stats *st, const char *what)
{
    st->runs++;
    gguf_file *f = NULL;
    q36_err err = { 0 };
    char fname[64];
    snprintf(fname, sizeof fname, "mutant_%s.gguf", label);
    int rc = gguf_open_mem(b, n, fname, &f, &err);
    struct gguf_context *g = NULL;
    bool gok = ggml_accepts(b, n, &g);
    char name[128];
    snprintf(name, sizeof name, "ggml_gguf_mutant_%s_%s", label, what);
    if (rc) {
        if (!strcmp(gguf_err_kind_name(rc), "?") || err.kind != rc || f || !strstr(err.msg, fname) ||
            !strstr(err.msg, "byte") || strchr(err.msg, '\n')) {
            if (st->disagree++ < 20)
                t_fail(name, "bad failure: rc %d, message: %s", rc, err.msg);
        }
        st->kinds[-rc - 100 < 32 && -rc - 100 >= 0 ? -rc - 100 : 0]++;
    }
    if (!rc && gok) {
        char why[256];
        if (compare(f, g, b, n, why, sizeof why)) {
            if (st->disagree++ < 20)
                t_fail(name, "both accept but read differently: %s", why);
        } else {
            st->both_ok++;
        }
    } else if (rc && !gok) {
        st->both_fail++;
    } else if (rc && gok) {
        if (deliberate(rc, err.msg)) {
            st->q36_stricter_ok++;
            const char *d = strstr(err.msg, "expected");
            note(st->strict_reason, st->strict_n, d ? d : err.msg);
        } else {
            if (st->disagree++ < 20)
                t_fail(name, "ggml accepts, q36 refuses: %s", err.msg);
        }
    } else {
        st->looser++;
        note(st->looser_reason, st->looser_n, g_ggml_reason);
    }
    if (g) G.free_(g);
    gguf_close(f);
}

static void test_mutations(const char *label, const uint8_t *orig, size_t n)
{
    if (!orig || n < 64) {
        t_fail("ggml_gguf_mutations", "no base file for %s", label);
        return;
    }
    stats st;
    memset(&st, 0, sizeof st);
    uint8_t *b = malloc(n);
    char what[64];
    /* every truncation */
    for (size_t cut = 0; cut < n; cut++) {
        snprintf(what, sizeof what, "truncated_at_%zu", cut);
        memcpy(b, orig, cut);
        mutant(label, b, cut, &st, what);
    }
    /* random bytes: 1..4 positions set to random values */
    t_rng r = t_rng_named(label);
    for (int k = 0; k < 3000; k++) {
        memcpy(b, orig, n);
        int m = 1 + (int)(t_next(&r) % 4);
        size_t pos = 0;
        for (int j = 0; j < m; j++) {
            pos = (size_t)(t_next(&r) % n);
            b[pos] = (uint8_t)t_next(&r);
        }
        snprintf(what, sizeof what, "bytes_%d_last_at_%zu", k, pos);
        mutant(label, b, n, &st, what);
    }
    /* words: a little-endian u32 or u64 at a random position set to a
     * boundary value (counts, lengths, types, dimensions, offsets) */
    static const uint64_t vals[] = { 0, 1, 2, 3, 4, 5, 12, 13, 31, 32, 33, 63, 64, 255, 256,
                                     0x7fffffff, 0xffffffff, 0x100000000ull, 0x7fffffffffffffffull,
                                     0x8000000000000000ull, 0xffffffffffffffffull, 1000000000000000000ull };
    for (int k = 0; k < 3000; k++) {
        memcpy(b, orig, n);
        size_t pos = (size_t)(t_next(&r) % (n - 8));
        uint64_t v = vals[t_next(&r) % (sizeof vals / sizeof vals[0])];
        size_t w = t_next(&r) & 1 ? 8 : 4;
        memcpy(b + pos, &v, w);
        snprintf(what, sizeof what, "word_%d_at_%zu", k, pos);
        mutant(label, b, n, &st, what);
    }
    free(b);
    char name[96];
    snprintf(name, sizeof name, "ggml_gguf_mutations_%s", label);
    t_check(name, st.disagree == 0 && st.both_ok > 0 && st.both_fail > 0,
            "%d disagreements in %d mutants", st.disagree, st.runs);
    printf("# %s: %d mutants: both accept %d, both refuse %d, only ggml accepts %d (deliberate q36 checks), "
           "only q36 accepts %d, unexplained %d\n",
           label, st.runs, st.both_ok, st.both_fail, st.q36_stricter_ok, st.looser, st.disagree);
    for (int i = 0; i < 8 && st.looser_n[i]; i++)
        printf("#   only q36 accepts, %d x ggml: %s\n", st.looser_n[i], st.looser_reason[i]);
    for (int i = 0; i < 8 && st.strict_n[i]; i++)
        printf("#   only ggml accepts (deliberate), %d x q36: %s\n", st.strict_n[i], st.strict_reason[i]);
    printf("#   q36 kinds:");
    for (int i = 1; i < 32; i++)
        if (st.kinds[i]) printf(" %s=%d", gguf_err_kind_name(-100 - i), st.kinds[i]);
    printf("\n");
}

/* ------------------------------------------------------------------ real files */

/* llama.cpp's source carries converter-made vocabulary files
 * (models/ggml-vocab-*.gguf, qwen35 among them; setup.sh unpacks them into
 * build/llama.cpp): both readers must read each identically. Some get a few
 * hundred mutations in their first 4 KB and at random truncation points. */
static void test_real_files(void)
{
    const char *dir = "build/llama.cpp/models";
    DIR *d = opendir(dir);
    if (!d) {
        t_fail("ggml_gguf_real_files", "cannot open %s (run scripts/setup.sh, then run from the repository root)", dir);
        return;
    }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".gguf"))
            continue;
        char path[512], name[320], why[256] = "";
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        snprintf(name, sizeof name, "ggml_gguf_real_%.*s", (int)(len - 5), e->d_name);
        size_t size = 0;
        uint8_t *b = slurp(path, &size);
        gguf_file *f = NULL;
        q36_err err = { 0 };
        int rc = b ? gguf_open_mem(b, size, path, &f, &err) : -1;
        struct gguf_context *g = NULL;
        bool gok = b && ggml_accepts(b, size, &g);
        if (!b)
            t_fail(name, "cannot read %s", path);
        else if (!gok)
            t_fail(name, "ggml refuses it: %s", g_ggml_reason);
        else if (rc)
            t_fail(name, "q36 refuses it: %s", err.msg);
        else if (compare(f, g, b, size, why, sizeof why))
            t_fail(name, "%s", why);
        else
            t_ok(name);
        if (g) G.free_(g);
        gguf_close(f);
        n++;
        if (b && (strstr(e->d_name, "qwen35") || strstr(e->d_name, "phi-3"))) {
            stats st;
            memset(&st, 0, sizeof st);
            uint8_t *m = malloc(size);
            t_rng r = t_rng_named(e->d_name);
            char what[64];
            int nm = size > (2u << 20) ? 100 : 300;   /* fewer on the 6 MB file */
            for (int k = 0; k < nm; k++) {
                memcpy(m, b, size);
                size_t pos = (size_t)(t_next(&r) % (size < 4096 ? size : 4096));
                m[pos] = (uint8_t)t_next(&r);
                snprintf(what, sizeof what, "byte_%d_at_%zu", k, pos);
                mutant(name + strlen("ggml_gguf_real_"), m, size, &st, what);
            }
            for (int k = 0; k < nm / 3; k++) {
                size_t cut = (size_t)(t_next(&r) % size);
                snprintf(what, sizeof what, "truncated_at_%zu", cut);
                mutant(name + strlen("ggml_gguf_real_"), b, cut, &st, what);
            }
            free(m);
            char mname[352];
            snprintf(mname, sizeof mname, "%s_mutations", name);
            t_check(mname, st.disagree == 0 && st.both_ok > 0 && st.both_fail > 0,
                    "%d disagreements in %d mutants", st.disagree, st.runs);
            printf("# %s: %d mutants: both accept %d, both refuse %d, only ggml accepts %d (deliberate), "
                   "only q36 accepts %d\n", e->d_name, st.runs, st.both_ok, st.both_fail,
                   st.q36_stricter_ok, st.looser);
        }
        free(b);
    }
    closedir(d);
    t_check("ggml_gguf_real_files", n >= 10, "found only %d files in %s", n, dir);
}

int main(void)
{
    ggml_log_set(on_ggml_log, NULL);
    snprintf(g_dir, sizeof g_dir, "/tmp/q36_test_ggml_gguf_XXXXXX");
    if (!mkdtemp(g_dir)) {
        t_fail("ggml_gguf_tmpdir", "mkdtemp failed");
        return t_exit();
    }
    if (load_ggml() == 0) {
        size_t n0, n1, n2;
        uint8_t *b0 = test_ggml_written("all", 0, &n0);
        uint8_t *b1 = test_ggml_written("few", 2, &n1);
        test_ggml_misaligned();
        uint8_t *b2 = test_q36_written(&n2);
        test_mutations("ggml_all", b0, n0);
        test_mutations("ggml_rewrite_align16", b2, n2);
        test_real_files();
        free(b0);
        free(b1);
        free(b2);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_dir);
    return t_exit();
}
