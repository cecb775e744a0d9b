/* fuzz_gguf.c: libFuzzer target for the GGUF reader. Opens the input with
 * gguf_open_mem and, when it is accepted, reads every key, every value, every
 * array element (nested arrays included) and every tensor's first and last
 * byte, so the sanitizers see each view the reader hands out.
 * Build and run: make fuzz (or tests/fuzz_gguf.test.sh).
 */
#include "gguf/gguf.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static volatile uint64_t sink;

static void walk(const gguf_file *f, const gguf_value *v, int depth)
{
    int64_t i64;
    double d;
    bool b;
    uint64_t len;
    switch (v->type) {
    case GGUF_T_STR: {
        const char *s = gguf_value_str(v, &len);
        if (len)
            sink += (uint8_t)s[0] + (uint8_t)s[len - 1];
        break;
    }
    case GGUF_T_ARR:
        for (uint64_t i = 0; i < v->n; i++) {
            gguf_value e;
            if (gguf_arr_get(f, v, i, &e) != 0)
                __builtin_trap();          /* every index below n must read */
            walk(f, &e, depth + 1);
            if (gguf_arr_int(f, v, i, &i64) == 0) sink += (uint64_t)i64;
            if (gguf_arr_float(f, v, i, &d) == 0) sink += (uint64_t)(d == d);
            if (gguf_arr_str(f, v, i, &len)) sink += len;
        }
        {
            gguf_value e;
            if (gguf_arr_get(f, v, v->n, &e) != GGUF_E_COUNT)
                __builtin_trap();
        }
        break;
    default:
        if (gguf_value_int(v, &i64) == 0) sink += (uint64_t)i64;
        if (gguf_value_float(v, &d) == 0) sink += (uint64_t)(d == d);
        if (gguf_value_bool(v, &b) == 0) sink += b;
        break;
    }
    (void)depth;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gguf_file *f = NULL;
    q36_err err = { 0 };
    int rc = gguf_open_mem(data, size, "fuzz.gguf", &f, &err);
    if (rc) {
        /* a failure must be a known kind with a one-line message */
        if (!strcmp(gguf_err_kind_name(rc), "?") || err.kind != rc || !err.msg[0] ||
            strchr(err.msg, '\n') || f)
            __builtin_trap();
        return 0;
    }
    for (int64_t i = 0; i < gguf_n_kv(f); i++) {
        const char *k = gguf_kv_key(f, i);
        if (gguf_find_key(f, k) != i)
            __builtin_trap();
        walk(f, gguf_kv_value(f, i), 0);
    }
    for (int64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (gguf_find_tensor(f, t->name) != t || t->nbytes == 0)
            __builtin_trap();
        const uint8_t *p = t->data;
        sink += p[0] + p[t->nbytes - 1] + gguf_tensor_nelements(t);
    }
    sink += gguf_data_offset(f) + gguf_alignment(f) + gguf_version(f) + gguf_file_size(f);
    gguf_close(f);
    return 0;
}
