/* cpu_tensor.c: the CPU backend's objects: the context (threads, scratch),
 * tensors in host memory, views, host copies, bound weights (views into the
 * GGUF mapping) and the embedding lookup. */
#include "cpu_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <assert.h>

#include "../../quant/fp16.h"
#include "../../quant/quant.h"

int be_cpu_new(int n_threads, be_ctx **out, q36_err *err)
{
    *out = NULL;
    if (n_threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n > 0 ? (int)n : 1;
    }
    if (n_threads > 256)
        return q36_err_set(err, Q36_E_ARG, "cpu backend: %d threads is more than 256", n_threads);
    cpu_fdot_init();
    {   /* the lazy CPU flag of cpu_qdot.c, set here on one thread */
        float z[8] = { 0 };
        uint8_t blk[292] = { 0 };
        (void)cpu_dot_q6_K_ggml(0, blk, z);
    }
    be_ctx *be = calloc(1, sizeof *be);
    if (!be)
        return q36_err_set(err, Q36_E_NOMEM, "cpu backend: out of memory");
    be->n_threads = n_threads;
    /* Q36_DOT_PATH=ref|avx2|avx512: a diagnostic switch that makes every
     * matmul use one family of the quant module's kernels */
    __builtin_cpu_init();
    be->bf16_dp = cpu_avx512_ok() && __builtin_cpu_supports("avx512bf16");
    const char *dp = getenv("Q36_DOT_PATH");
    be->dot_path = !dp ? -1 : !strcmp(dp, "ref") ? QUANT_PATH_REF
                 : !strcmp(dp, "avx2") ? QUANT_PATH_AVX2
                 : !strcmp(dp, "avx512") ? QUANT_PATH_AVX512 : -1;
    if (n_threads > 1) {
        be->pool = cpu_pool_new(n_threads);
        if (!be->pool) {
            free(be);
            return q36_err_set(err, Q36_E_NOMEM, "cpu backend: cannot start %d threads", n_threads);
        }
    }
    *out = be;
    return 0;
}

void be_free(be_ctx *be)
{
    if (!be)
        return;
    for (cpu_vblock *b = be->vblocks, *nx; b; b = nx) {
        nx = b->next;
        free(b);
    }
    cpu_pool_free(be->pool);
    for (be_weight *w = be->weights, *nx; w; w = nx) {
        nx = w->next;
        free(w);
    }
    free(be->scratch);
    free(be->tscratch);
    free(be);
}

int be_n_threads(const be_ctx *be) { return be->n_threads; }
const char *be_name(const be_ctx *be) { (void)be; return "cpu"; }
void be_sync(be_ctx *be) { (void)be; }

void *cpu_scratch(be_ctx *be, size_t bytes)
{
    if (bytes > be->scratch_cap) {
        size_t cap = bytes + bytes / 2 + 4096;
        void *p = realloc(be->scratch, cap);
        if (!p)
            return NULL;
        be->scratch = p;
        be->scratch_cap = cap;
    }
    return be->scratch;
}

int cpu_tscratch_reserve(be_ctx *be, size_t n)
{
    n = (n + 15) & ~(size_t)15;      /* keep threads' slices 64 bytes apart */
    if (n > be->tscratch_n) {
        float *p = realloc(be->tscratch, n * (size_t)be->n_threads * sizeof(float));
        if (!p)
            return -1;
        be->tscratch = p;
        be->tscratch_n = n;
    }
    return 0;
}

float *cpu_tscratch(be_ctx *be, int tid)
{
    return be->tscratch + (size_t)tid * be->tscratch_n;
}

/* ---------------------------------------------------------------- tensors */

static be_tensor *tensor_new(int64_t rows, int64_t cols, bool f16)
{
    be_tensor *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    size_t esz = f16 ? 2 : 4;
    size_t n = (size_t)(rows > 0 ? rows : 1) * (size_t)(cols > 0 ? cols : 1);
    t->data = calloc(n, esz);
    if (!t->data) {
        free(t);
        return NULL;
    }
    t->rows = rows;
    t->cols = cols;
    t->ld = cols;
    t->f16 = f16;
    return t;
}

be_tensor *be_tensor_new(be_ctx *be, int64_t rows, int64_t cols)
{
    (void)be;
    return tensor_new(rows, cols, false);
}

be_tensor *be_tensor_new_f16(be_ctx *be, int64_t rows, int64_t cols)
{
    (void)be;
    return tensor_new(rows, cols, true);
}

void be_tensor_free(be_ctx *be, be_tensor *t)
{
    (void)be;
    if (!t)
        return;
    assert(!t->view);
    free(t->data);
    free(t);
}

int64_t be_rows_of(const be_tensor *t) { return t->rows; }
int64_t be_cols_of(const be_tensor *t) { return t->cols; }

uint64_t be_tensor_bytes(const be_tensor *t)
{
    return t->view ? 0 : (uint64_t)t->rows * (uint64_t)t->cols * (t->f16 ? 2 : 4);
}

static be_tensor *view_new(be_ctx *be, be_tensor *t)
{
    cpu_vblock *b = be->vcur;
    if (!b || b->n == CPU_VBLOCK) {
        cpu_vblock *nb = b ? b->next : be->vblocks;
        if (!nb) {
            nb = calloc(1, sizeof *nb);
            assert(nb);
            if (b)
                b->next = nb;
            else
                be->vblocks = nb;
        }
        nb->n = 0;
        be->vcur = b = nb;
    }
    be_tensor *v = &b->v[b->n++];
    *v = *t;
    v->view = true;
    return v;
}

be_tensor *be_view(be_ctx *be, be_tensor *t, int64_t col0, int64_t ncols)
{
    assert(col0 >= 0 && ncols >= 0 && col0 + ncols <= t->cols && !t->f16);
    be_tensor *v = view_new(be, t);
    v->data = (float *)t->data + col0;
    v->cols = ncols;
    return v;
}

be_tensor *be_rows(be_ctx *be, be_tensor *t, int64_t row0, int64_t nrows)
{
    assert(row0 >= 0 && nrows >= 0 && row0 + nrows <= t->rows);
    be_tensor *v = view_new(be, t);
    v->data = (char *)t->data + (size_t)row0 * (size_t)t->ld * (t->f16 ? 2 : 4);
    v->rows = nrows;
    return v;
}

void be_views_reset(be_ctx *be)
{
    for (cpu_vblock *b = be->vblocks; b; b = b->next)
        b->n = 0;
    be->vcur = be->vblocks;
}

void be_write(be_ctx *be, be_tensor *t, int64_t row0, int64_t nrows, const float *src)
{
    CPU_PROF_BEGIN(be);
    (void)be;
    assert(row0 >= 0 && row0 + nrows <= t->rows);
    for (int64_t r = 0; r < nrows; r++) {
        const float *s = src + r * t->cols;
        if (t->f16) {
            uint16_t *d = (uint16_t *)t->data + (row0 + r) * t->ld;
            for (int64_t c = 0; c < t->cols; c++)
                d[c] = quant_f32_to_f16(s[c]);
        } else {
            memcpy(cpu_row(t, row0 + r), s, (size_t)t->cols * sizeof(float));
        }
    }
    CPU_PROF_END(be, BE_PROF_IO);
}

void be_read(be_ctx *be, const be_tensor *t, int64_t row0, int64_t nrows, float *dst)
{
    CPU_PROF_BEGIN(be);
    (void)be;
    assert(row0 >= 0 && row0 + nrows <= t->rows);
    for (int64_t r = 0; r < nrows; r++) {
        float *d = dst + r * t->cols;
        if (t->f16) {
            const uint16_t *s = (const uint16_t *)t->data + (row0 + r) * t->ld;
            for (int64_t c = 0; c < t->cols; c++)
                d[c] = quant_f16_to_f32(s[c]);
        } else {
            memcpy(d, cpu_row(t, row0 + r), (size_t)t->cols * sizeof(float));
        }
    }
    CPU_PROF_END(be, BE_PROF_IO);
}

void be_save(be_ctx *be, const be_tensor *t, int64_t nrows, void *dst)
{
    (void)be;
    assert(!t->view && nrows <= t->rows);
    memcpy(dst, t->data, (size_t)nrows * (size_t)t->cols * (t->f16 ? 2 : 4));
}

void be_load(be_ctx *be, be_tensor *t, int64_t nrows, const void *src)
{
    (void)be;
    assert(!t->view && nrows <= t->rows);
    memcpy(t->data, src, (size_t)nrows * (size_t)t->cols * (t->f16 ? 2 : 4));
}

void be_zero(be_ctx *be, be_tensor *t)
{
    CPU_PROF_BEGIN(be);
    (void)be;
    size_t esz = t->f16 ? 2 : 4;
    if (t->ld == t->cols)
        memset(t->data, 0, (size_t)t->rows * (size_t)t->cols * esz);
    else
        for (int64_t r = 0; r < t->rows; r++)
            memset((char *)t->data + (size_t)r * (size_t)t->ld * esz, 0, (size_t)t->cols * esz);
    CPU_PROF_END(be, BE_PROF_IO);
}

void be_copy(be_ctx *be, const be_tensor *src, be_tensor *dst)
{
    CPU_PROF_BEGIN(be);
    (void)be;
    assert(src->rows == dst->rows && src->cols == dst->cols && !src->f16 && !dst->f16);
    for (int64_t r = 0; r < src->rows; r++)
        memmove(cpu_row(dst, r), cpu_row(src, r), (size_t)src->cols * sizeof(float));
    CPU_PROF_END(be, BE_PROF_COPY);
}

/* ---------------------------------------------------------------- weights */

int be_weight_bind(be_ctx *be, const gguf_tensor *t, be_weight **out, q36_err *err)
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
    w->type = t->type;
    w->act_type = act;
    w->row_bytes = quant_row_bytes(t->type, t->ne[0]);
    w->act_row_bytes = quant_row_bytes((uint32_t)act, t->ne[0]);
    if (w->row_bytes == 0 || w->act_row_bytes == 0) {
        free(w);
        return q36_err_set(err, Q36_E_FORMAT, "tensor '%s': ne0 %llu is not whole %s blocks",
                           t->name, (unsigned long long)t->ne[0], quant_type_name(t->type));
    }
    w->next = be->weights;
    be->weights = w;
    *out = w;
    return 0;
}

const gguf_tensor *be_weight_tensor(const be_weight *w) { return w ? w->t : NULL; }

void be_get_rows(be_ctx *be, const be_weight *w, const int32_t *ids, int64_t n, be_tensor *out)
{
    CPU_PROF_BEGIN(be);
    (void)be;
    assert(out->cols == (int64_t)w->t->ne[0] && out->rows >= n && !out->f16);
    for (int64_t r = 0; r < n; r++) {
        assert(ids[r] >= 0 && (uint64_t)ids[r] < w->t->ne[1]);
        const uint8_t *row = (const uint8_t *)w->t->data + (uint64_t)ids[r] * w->row_bytes;
        quant_dequant_row(w->type, row, cpu_row(out, r), out->cols);
    }
    CPU_PROF_END(be, BE_PROF_GET_ROWS);
}
