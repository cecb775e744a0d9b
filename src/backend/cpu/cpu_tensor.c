/* cpu_tensor.c: the CPU backend's objects: its scratch (grown on demand
 * until be_reserve fixes it), tensors in host memory, host copies, bound
 * weights (views into the GGUF mapping) and the embedding lookup. The
 * context itself and the ops table are in cpu.c. */
#include "cpu_internal.h"
#include "cpu.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <assert.h>

#include "../../quant/fp16.h"
#include "../../quant/quant.h"

void *cpu_scratch(be_ctx *be, size_t bytes)
{
    cpu_ctx *c = cpu_ctx_of(be);
    if (bytes > c->scratch_cap) {
        if (c->reserved)
            return NULL;
        size_t cap = bytes + bytes / 2 + 4096;
        void *p = realloc(c->scratch, cap);
        if (!p)
            return NULL;
        c->scratch = p;
        c->scratch_cap = cap;
    }
    return c->scratch;
}

int cpu_tscratch_reserve(be_ctx *be, size_t n)
{
    cpu_ctx *c = cpu_ctx_of(be);
    n = (n + 15) & ~(size_t)15;      /* keep threads' slices 64 bytes apart */
    if (n > c->tscratch_n) {
        if (c->reserved)
            return -1;
        float *p = realloc(c->tscratch, n * (size_t)c->n_threads * sizeof(float));
        if (!p)
            return -1;
        c->tscratch = p;
        c->tscratch_n = n;
    }
    return 0;
}

float *cpu_tscratch(be_ctx *be, int tid)
{
    cpu_ctx *c = cpu_ctx_of(be);
    return c->tscratch + (size_t)tid * c->tscratch_n;
}

void cpu_fail_scratch(be_ctx *be, const char *op, size_t bytes)
{
    cpu_ctx *c = cpu_ctx_of(be);
    be_fail(be, Q36_E_NOMEM, "%s needs %zu bytes of scratch; %s %zu shared and %zu per thread",
            op, bytes, c->reserved ? "the reservation holds" : "out of memory growing past",
            c->scratch_cap, c->tscratch_n * sizeof(float));
}

/* ---------------------------------------------------------------- tensors */

be_tensor *cpu_tensor_new(be_ctx *be, enum be_type type, int64_t rows, int64_t cols)
{
    (void)be;
    be_tensor *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    const size_t rb = (size_t)be_type_bytes(type, cols > 0 ? cols : 32);
    t->data = calloc((size_t)(rows > 0 ? rows : 1), rb);
    if (!t->data) {
        free(t);
        return NULL;
    }
    t->rows = rows;
    t->cols = cols;
    t->ld = cols;
    t->type = type;
    t->f16 = type == BE_F16;
    return t;
}

void cpu_tensor_free(be_ctx *be, be_tensor *t)
{
    (void)be;
    free(t->data);
    free(t);
}

static size_t row_stride(const be_tensor *t)
{
    return (size_t)be_type_bytes(t->type, t->ld);
}

static char *row_at(const be_tensor *t, int64_t r)
{
    return (char *)t->data + (size_t)r * row_stride(t);
}

/* f16 rows convert from and to floats; other types move bytes. */
void cpu_write(be_ctx *be, be_tensor *t, int64_t row0, int64_t nrows, const void *src)
{
    CPU_PROF_BEGIN(be);
    const size_t rb = (size_t)be_type_bytes(t->type, t->cols);
    for (int64_t r = 0; r < nrows; r++) {
        if (t->type == BE_F16) {
            const float *s = (const float *)src + r * t->cols;
            uint16_t *d = (uint16_t *)row_at(t, row0 + r);
            for (int64_t c = 0; c < t->cols; c++)
                d[c] = quant_f32_to_f16(s[c]);
        } else {
            memcpy(row_at(t, row0 + r), (const char *)src + (size_t)r * rb, rb);
        }
    }
    CPU_PROF_END(be, BE_PROF_IO);
}

void cpu_read(be_ctx *be, const be_tensor *t, int64_t row0, int64_t nrows, void *dst)
{
    CPU_PROF_BEGIN(be);
    const size_t rb = (size_t)be_type_bytes(t->type, t->cols);
    for (int64_t r = 0; r < nrows; r++) {
        if (t->type == BE_F16) {
            float *d = (float *)dst + r * t->cols;
            const uint16_t *s = (const uint16_t *)row_at(t, row0 + r);
            for (int64_t c = 0; c < t->cols; c++)
                d[c] = quant_f16_to_f32(s[c]);
        } else {
            memcpy((char *)dst + (size_t)r * rb, row_at(t, row0 + r), rb);
        }
    }
    CPU_PROF_END(be, BE_PROF_IO);
}

void cpu_save(be_ctx *be, const be_tensor *t, int64_t row0, int64_t nrows, void *dst)
{
    (void)be;
    const size_t rb = (size_t)be_type_bytes(t->type, t->cols);
    for (int64_t r = 0; r < nrows; r++)
        memcpy((char *)dst + (size_t)r * rb, row_at(t, row0 + r), rb);
}

void cpu_load(be_ctx *be, be_tensor *t, int64_t row0, int64_t nrows, const void *src)
{
    (void)be;
    const size_t rb = (size_t)be_type_bytes(t->type, t->cols);
    for (int64_t r = 0; r < nrows; r++)
        memcpy(row_at(t, row0 + r), (const char *)src + (size_t)r * rb, rb);
}

void cpu_zero(be_ctx *be, be_tensor *t)
{
    CPU_PROF_BEGIN(be);
    const size_t rb = (size_t)be_type_bytes(t->type, t->cols);
    if (t->ld == t->cols)
        memset(t->data, 0, (size_t)t->rows * rb);
    else
        for (int64_t r = 0; r < t->rows; r++)
            memset(row_at(t, r), 0, rb);
    CPU_PROF_END(be, BE_PROF_IO);
}

void cpu_copy(be_ctx *be, const be_tensor *src, be_tensor *dst)
{
    CPU_PROF_BEGIN(be);
    const size_t rb = (size_t)be_type_bytes(src->type, src->cols);
    for (int64_t r = 0; r < src->rows; r++)
        memmove(row_at(dst, r), row_at(src, r), rb);
    CPU_PROF_END(be, BE_PROF_COPY);
}

/* ---------------------------------------------------------------- weights */

int cpu_weight_bind(be_ctx *be, const gguf_tensor *t, be_weight **out, q36_err *err)
{
    *out = NULL;
    if (!t)
        return 0;
    int act = quant_vec_dot_type(t->type);
    if (act < 0 || quant_vec_dot_fn(t->type) == NULL)
        return q36_err_set(err, Q36_E_UNSUP, "tensor '%s': type %s has no dot product in q36",
                           t->name, quant_type_name(t->type));
    be_weight *w = calloc(1, sizeof *w);
    if (!w)
        return q36_err_set(err, Q36_E_NOMEM, "out of memory binding '%s'", t->name);
    w->t = t;
    w->data = t->data;
    w->type = t->type;
    w->act_type = act;
    w->row_bytes = quant_row_bytes(t->type, t->ne[0]);
    w->act_row_bytes = quant_row_bytes((uint32_t)act, t->ne[0]);
    if (w->row_bytes == 0 || w->act_row_bytes == 0) {
        free(w);
        return q36_err_set(err, Q36_E_FORMAT, "tensor '%s': ne0 %llu is not whole %s blocks",
                           t->name, (unsigned long long)t->ne[0], quant_type_name(t->type));
    }
    w->next = cpu_ctx_of(be)->weights;
    cpu_ctx_of(be)->weights = w;
    *out = w;
    return 0;
}

const gguf_tensor *be_weight_tensor(const be_weight *w) { return w ? w->t : NULL; }

void cpu_get_rows(be_ctx *be, const be_weight *w, const be_tensor *ids, be_tensor *out)
{
    CPU_PROF_BEGIN(be);
    assert(out->cols == (int64_t)w->t->ne[0] && !out->f16);
    for (int64_t r = 0; r < ids->rows; r++) {
        const int32_t id = *(const int32_t *)row_at(ids, r);
        assert(id >= 0 && (uint64_t)id < w->t->ne[1]);
        const uint8_t *row = (const uint8_t *)w->t->data + (uint64_t)id * w->row_bytes;
        quant_dequant_row(w->type, row, cpu_row(out, r), out->cols);
    }
    CPU_PROF_END(be, BE_PROF_GET_ROWS);
}
