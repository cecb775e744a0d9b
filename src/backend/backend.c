/* backend.c: the be_* functions of backend.h: thin dispatchers through the
 * context's table (be_impl.h), and what is the same for every backend:
 * tensor shapes and types, views (pointer arithmetic on the parent's
 * device memory, from a pool in the context), the sticky op error, and
 * batches (two i32 tensors written once per forward pass). */
#include "be_impl.h"

#include <assert.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ types */

uint64_t be_type_bytes(enum be_type type, int64_t n)
{
    switch (type) {
    case BE_F32: case BE_I32: return 4 * (uint64_t)n;
    case BE_F16: return 2 * (uint64_t)n;
    case BE_Q8_0: return (uint64_t)n / 32 * 34;
    default: return 0;
    }
}

const char *be_type_name(enum be_type type)
{
    static const char *const n[BE_NTYPES] = { "f32", "f16", "i32", "q8_0" };
    return (unsigned)type < BE_NTYPES ? n[type] : "?";
}

/* ----------------------------------------------------------------- errors */

void be_fail(be_ctx *be, int kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    q36_err_vset(&be->err, kind, fmt, ap);
    va_end(ap);
}

int be_check(be_ctx *be, q36_err *err)
{
    be_sync(be);
    const int kind = be->err.kind;
    if (kind)
        q36_err_set(err, kind, "%s backend: %s", be_name(be), be->err.msg);
    q36_err_clear(&be->err);
    return kind;
}

/* -------------------------------------------------------------- lifecycle */

/* The backends built in; a GPU backend adds its line. */
static const struct {
    const char *name;
    int (*new_ctx)(int n_threads, be_ctx **out, q36_err *err);
    uint64_t (*scratch_bytes)(const be_shape *shape, int n_threads);
    int (*device_info)(char *name, size_t name_n, uint64_t *free_b, uint64_t *total_b,
                       q36_err *err);
    int (*read_bw)(uint64_t bytes, int passes, double *gbps, q36_err *err);
} builtin[] = {
    { "cpu", be_cpu_new, be_cpu_scratch_bytes, NULL, NULL },
#ifdef Q36_CUDA
    { "cuda", be_cuda_new, be_cuda_scratch_bytes, be_cuda_device_info, be_cuda_read_bandwidth },
#endif
};

#ifdef Q36_CUDA
#define BUILT "cpu, cuda"
#else
#define BUILT "cpu"
#endif

static int builtin_find(const char *name, q36_err *err)
{
    const size_t n = sizeof builtin / sizeof builtin[0];
    for (size_t i = 0; i < n; i++)
        if (!name || !strcmp(name, builtin[i].name))
            return (int)i;
    return q36_err_set(err, Q36_E_ARG, "backend '%s' is not built into this q36 (built: " BUILT ")",
                       name);
}

int be_new(const char *name, int n_threads, be_ctx **out, q36_err *err)
{
    *out = NULL;
    const int i = builtin_find(name, err);
    return i < 0 ? i : builtin[i].new_ctx(n_threads, out, err);
}

int be_scratch_bytes(const char *name, const be_shape *shape, int n_threads, uint64_t *out,
                     q36_err *err)
{
    const int i = builtin_find(name, err);
    if (i < 0)
        return i;
    *out = builtin[i].scratch_bytes(shape, n_threads);
    return 0;
}

/* The built-in backend `name` when it has a device of its own (its
 * device_info and read_bw are both there); else a negative kind. */
static int builtin_device(const char *name, q36_err *err)
{
    const int i = builtin_find(name, err);
    if (i >= 0 && (!builtin[i].device_info || !builtin[i].read_bw))
        return q36_err_set(err, Q36_E_UNSUP, "backend '%s' has no device of its own",
                           builtin[i].name);
    return i;
}

int be_device_info(const char *name, char *desc, size_t desc_n, uint64_t *free_b,
                   uint64_t *total_b, q36_err *err)
{
    const int i = builtin_device(name, err);
    return i < 0 ? i : builtin[i].device_info(desc, desc_n, free_b, total_b, err);
}

int be_device_read_bandwidth(const char *name, uint64_t bytes, int passes, double *gbps,
                             q36_err *err)
{
    const int i = builtin_device(name, err);
    return i < 0 ? i : builtin[i].read_bw(bytes, passes, gbps, err);
}

void be_base_free(be_ctx *be)
{
    for (be_vblock *b = be->vblocks, *nx; b; b = nx) {
        nx = b->next;
        free(b);
    }
    be->vblocks = be->vcur = NULL;
}

void be_free(be_ctx *be)
{
    if (be)
        be->ops->free(be);
}

const char *be_name(const be_ctx *be) { return be->ops->name; }
void be_sync(be_ctx *be) { be->ops->sync(be); }

/* Appends a zeroed block after `b` (or first); NULL when out of memory. */
static be_vblock *vblock_add(be_ctx *be, be_vblock *b)
{
    be_vblock *nb = calloc(1, sizeof *nb);
    if (nb) {
        if (b)
            b->next = nb;
        else
            be->vblocks = nb;
    }
    return nb;
}

int be_reserve(be_ctx *be, const be_shape *shape, q36_err *err)
{
    /* the view pool: enough blocks for max_views */
    int64_t have = 0;
    be_vblock *last = NULL;
    for (be_vblock *b = be->vblocks; b; b = b->next) {
        have += BE_VBLOCK;
        last = b;
    }
    while (have < shape->max_views) {
        if (!(last = vblock_add(be, last)))
            return q36_err_set(err, Q36_E_NOMEM, "%s backend: out of memory for %lld views",
                               be_name(be), (long long)shape->max_views);
        have += BE_VBLOCK;
    }
    return be->ops->reserve(be, shape, err);
}

/* ---------------------------------------------------------------- tensors */

be_tensor *be_tensor_new_type(be_ctx *be, enum be_type type, int64_t rows, int64_t cols)
{
    assert((unsigned)type < BE_NTYPES && rows >= 0 && cols >= 0);
    assert(type != BE_Q8_0 || cols % 32 == 0);
    return be->ops->tensor_new(be, type, rows, cols);
}

void be_tensor_free(be_ctx *be, be_tensor *t)
{
    if (!t)
        return;
    assert(!t->view);
    be->ops->tensor_free(be, t);
}

int64_t be_rows_of(const be_tensor *t) { return t->rows; }
int64_t be_cols_of(const be_tensor *t) { return t->cols; }
enum be_type be_type_of(const be_tensor *t) { return t->type; }

uint64_t be_tensor_bytes(const be_tensor *t)
{
    return t->view ? 0 : (uint64_t)t->rows * be_type_bytes(t->type, t->cols);
}

/* Views: a generic struct pointing into the parent's memory. Past the
 * reserved blocks the pool grows; when it cannot, the error is recorded and
 * the view is made in the context's spare slot (correct for its own use,
 * overwritten by the next such view: the pass's results are void anyway). */
static be_tensor *view_new(be_ctx *be, be_tensor *t)
{
    be_vblock *b = be->vcur;
    if (!b || b->n == BE_VBLOCK) {
        be_vblock *nb = b ? b->next : be->vblocks;
        if (!nb && !(nb = vblock_add(be, b))) {
            be_fail(be, Q36_E_NOMEM, "out of memory for views");
            be->vspare = *t;
            be->vspare.view = true;
            return &be->vspare;
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
    assert(col0 >= 0 && ncols >= 0 && col0 + ncols <= t->cols);
    assert(t->type == BE_F32 || t->type == BE_I32);
    be_tensor *v = view_new(be, t);
    v->data = (char *)t->data + be_type_bytes(t->type, col0);
    v->cols = ncols;
    return v;
}

be_tensor *be_rows(be_ctx *be, be_tensor *t, int64_t row0, int64_t nrows)
{
    assert(row0 >= 0 && nrows >= 0 && row0 + nrows <= t->rows);
    be_tensor *v = view_new(be, t);
    v->data = (char *)t->data + (size_t)row0 * be_type_bytes(t->type, t->ld);
    v->rows = nrows;
    return v;
}

void be_views_reset(be_ctx *be)
{
    for (be_vblock *b = be->vblocks; b; b = b->next)
        b->n = 0;
    be->vcur = be->vblocks;
}

void be_write(be_ctx *be, be_tensor *t, int64_t row0, int64_t nrows, const void *src)
{
    assert(row0 >= 0 && nrows >= 0 && row0 + nrows <= t->rows);
    be->ops->write(be, t, row0, nrows, src);
}

void be_read(be_ctx *be, const be_tensor *t, int64_t row0, int64_t nrows, void *dst)
{
    assert(row0 >= 0 && nrows >= 0 && row0 + nrows <= t->rows);
    be->ops->read(be, t, row0, nrows, dst);
}

void be_save(be_ctx *be, const be_tensor *t, int64_t row0, int64_t nrows, void *dst)
{
    assert(row0 >= 0 && nrows >= 0 && row0 + nrows <= t->rows);
    be->ops->save(be, t, row0, nrows, dst);
}

void be_load(be_ctx *be, be_tensor *t, int64_t row0, int64_t nrows, const void *src)
{
    assert(row0 >= 0 && nrows >= 0 && row0 + nrows <= t->rows);
    be->ops->load(be, t, row0, nrows, src);
}

void be_zero(be_ctx *be, be_tensor *t) { be->ops->zero(be, t); }

void be_copy(be_ctx *be, const be_tensor *src, be_tensor *dst)
{
    assert(src->rows == dst->rows && src->cols == dst->cols && src->type == dst->type);
    be->ops->copy(be, src, dst);
}

/* ---------------------------------------------------------------- batches */

int be_batch_init(be_ctx *be, be_batch *b, int64_t max_rows, int max_seq, int64_t kv_rows,
                  q36_err *err)
{
    memset(b, 0, sizeof *b);
    b->seq = calloc((size_t)(max_seq > 0 ? max_seq : 1), sizeof *b->seq);
    b->pos = be_tensor_new_type(be, BE_I32, max_rows, 1);
    b->runs = be_tensor_new_type(be, BE_I32, max_seq, 4);
    if (!b->seq || !b->pos || !b->runs) {
        be_batch_free(be, b);
        return q36_err_set(err, Q36_E_NOMEM, "batch of %lld rows in %d runs: out of memory",
                           (long long)max_rows, max_seq);
    }
    b->max_rows = max_rows;
    b->max_seq = max_seq;
    b->kv_rows = kv_rows;
    return 0;
}

void be_batch_set(be_ctx *be, be_batch *b, int n_seq, const be_seq *seq)
{
    assert(n_seq >= 1 && n_seq <= b->max_seq);
    int64_t rows = 0;
    for (int s = 0; s < n_seq; s++) {
        assert(seq[s].row0 == rows && seq[s].n_rows >= 0 && seq[s].pos0 >= 0);
        assert(seq[s].pos0 + seq[s].n_rows <= b->kv_rows);
        b->seq[s] = seq[s];
        rows += seq[s].n_rows;
    }
    assert(rows <= b->max_rows);
    b->n_seq = n_seq;
    b->n_rows = rows;
    /* positions: the runs' rows are consecutive, so every row's position
     * goes out in writes of up to 1024 rows across runs: one write for a
     * decode step or a verify pass of several slots (on a GPU each write is
     * a copy queued on the stream; one a run made n + 1 for n slots) */
    int32_t buf[1024];
    int64_t done = 0, n = 0;
    for (int s = 0; s < n_seq; s++)
        for (int32_t j = 0; j < seq[s].n_rows; j++) {
            buf[n++] = seq[s].pos0 + j;
            if (n == 1024 || done + n == rows) {
                be->ops->write(be, b->pos, done, n, buf);
                done += n;
                n = 0;
            }
        }
    be->ops->write(be, b->runs, 0, n_seq, b->seq);
}

void be_batch_free(be_ctx *be, be_batch *b)
{
    free(b->seq);
    be_tensor_free(be, b->pos);
    be_tensor_free(be, b->runs);
    memset(b, 0, sizeof *b);
}

/* ---------------------------------------------------------------- weights */

int be_weight_bind(be_ctx *be, const gguf_tensor *t, be_weight **out, q36_err *err)
{
    return be->ops->weight_bind(be, t, out, err);
}

void be_get_rows(be_ctx *be, const be_weight *w, const be_tensor *ids, be_tensor *out)
{
    assert(ids->type == BE_I32 && ids->cols == 1 && out->rows >= ids->rows);
    be->ops->get_rows(be, w, ids, out);
}

void be_matmul(be_ctx *be, const be_weight *w, int64_t slab, const be_tensor *x, be_tensor *y)
{
    be->ops->matmul(be, w, slab, x, y);
}

void be_matmul_n(be_ctx *be, int n, const be_weight *const *w, const be_tensor *x, be_tensor *const *y)
{
    be->ops->matmul_n(be, n, w, x, y);
}

void be_matmul_id(be_ctx *be, const be_weight *w, const be_tensor *x, const be_tensor *sel,
                  be_tensor *y)
{
    assert(sel->type == BE_I32);
    be->ops->matmul_id(be, w, x, sel, y);
}

/* A backend without the fused entries runs the two ops */
void be_matmul_glu(be_ctx *be, const be_weight *w, be_tensor *g, const be_tensor *u, be_tensor *y)
{
    assert(u->rows == g->rows && u->cols == g->cols);
    if (be->ops->matmul_glu) {
        be->ops->matmul_glu(be, w, g, u, y);
        return;
    }
    be_swiglu(be, g, u, g);
    be_matmul(be, w, 0, g, y);
}

void be_matmul_id_swiglu(be_ctx *be, const be_weight *wg, const be_weight *wu, const be_tensor *x,
                         const be_tensor *sel, be_tensor *tmp, be_tensor *y)
{
    assert(sel->type == BE_I32 && tmp->rows == y->rows && tmp->cols == y->cols);
    if (be->ops->matmul_id_swiglu) {
        be->ops->matmul_id_swiglu(be, wg, wu, x, sel, tmp, y);
        return;
    }
    be_matmul_id(be, wg, x, sel, y);
    be_matmul_id(be, wu, x, sel, tmp);
    be_swiglu(be, y, tmp, y);
}

void be_matmul_id_glu(be_ctx *be, const be_weight *w, be_tensor *g, const be_tensor *u,
                      const be_tensor *sel, be_tensor *y)
{
    assert(u->rows == g->rows && u->cols == g->cols && sel->type == BE_I32);
    if (be->ops->matmul_id_glu) {
        be->ops->matmul_id_glu(be, w, g, u, sel, y);
        return;
    }
    be_swiglu(be, g, u, g);
    be_matmul_id(be, w, g, sel, y);
}

/* ------------------------------------------------------------ elementwise */

void be_rms_norm(be_ctx *be, const be_tensor *x, const be_weight *w, float eps, int64_t group,
                 be_tensor *y)
{
    be->ops->rms_norm(be, x, w, eps, group, y);
}

void be_add_rms_norm(be_ctx *be, const be_tensor *o, be_tensor *x, const be_weight *w, float eps,
                     int64_t group, be_tensor *y)
{
    assert(o->rows == x->rows && o->cols == x->cols && y->rows == x->rows && y->cols == x->cols);
    assert(y->data != x->data && y->data != o->data);
    be->ops->add_rms_norm(be, o, x, w, eps, group, y);
}

void be_l2_norm(be_ctx *be, const be_tensor *x, float eps, int64_t group, be_tensor *y)
{
    be->ops->l2_norm(be, x, eps, group, y);
}

void be_add(be_ctx *be, const be_tensor *a, const be_tensor *b, be_tensor *y) { be->ops->add(be, a, b, y); }
void be_mul(be_ctx *be, const be_tensor *a, const be_tensor *b, be_tensor *y) { be->ops->mul(be, a, b, y); }
void be_mul_col(be_ctx *be, const be_tensor *a, const be_tensor *s, be_tensor *y) { be->ops->mul_col(be, a, s, y); }
void be_silu(be_ctx *be, const be_tensor *x, be_tensor *y) { be->ops->silu(be, x, y); }
void be_sigmoid(be_ctx *be, const be_tensor *x, be_tensor *y) { be->ops->sigmoid(be, x, y); }

void be_hadamard(be_ctx *be, be_tensor *x, int64_t n)
{
    assert(n >= 1 && (n & (n - 1)) == 0 && x->cols % n == 0 && x->type == BE_F32);
    if (be->ops->hadamard)
        be->ops->hadamard(be, x, n);
    else
        be_fail(be, Q36_E_UNSUP, "the %s backend has no Walsh-Hadamard rotation (q8_0 K/V "
                "caches)", be_name(be));
}
void be_prefetch(be_ctx *be, int n, const be_weight *const *w, const be_tensor *sel)
{
    if (be->ops->prefetch && n > 0)
        be->ops->prefetch(be, n, w, sel);
}

bool be_side_begin(be_ctx *be) { return be->ops->side && be->ops->side(be, BE_SIDE_BEGIN); }
void be_side_end(be_ctx *be) { be->ops->side(be, BE_SIDE_END); }
void be_side_join(be_ctx *be) { be->ops->side(be, BE_SIDE_JOIN); }

void be_swiglu(be_ctx *be, const be_tensor *g, const be_tensor *u, be_tensor *y) { be->ops->swiglu(be, g, u, y); }

void be_rms_norm_gate(be_ctx *be, const be_tensor *x, const be_weight *w, float eps, int64_t group,
                      const be_tensor *z, be_tensor *y)
{
    assert(z->rows == x->rows && z->cols == x->cols && y->rows == x->rows && y->cols == x->cols);
    assert(z->data != y->data && z->data != x->data);
    be->ops->rms_norm_gate(be, x, w, eps, group, z, y);
}

void be_deltanet_gates(be_ctx *be, const be_tensor *alpha, const be_weight *dt_bias, const be_weight *a,
                  const be_tensor *b, be_tensor *g, be_tensor *beta)
{
    be->ops->deltanet_gates(be, alpha, dt_bias, a, b, g, beta);
}

/* --------------------------------------------------------------- sequence */

void be_rope(be_ctx *be, be_tensor *x, int64_t head_dim, int64_t n_rot, const int32_t sections[4],
             float base, const be_tensor *pos)
{
    assert(pos->type == BE_I32 && pos->rows == x->rows && pos->cols == 1);
    be->ops->rope(be, x, head_dim, n_rot, sections, base, pos);
}

void be_attn_prologue(be_ctx *be, const be_tensor *qg, be_tensor *q, be_tensor *gate,
                      be_tensor *k, const be_weight *wq, const be_weight *wk, float eps,
                      int64_t hd, int64_t n_rot, const int32_t sections[4], float base,
                      const be_tensor *pos)
{
    assert(qg->rows == q->rows && gate->rows == q->rows && k->rows == q->rows);
    assert(qg->cols == 2 * q->cols && gate->cols == q->cols && q->cols % hd == 0);
    assert(k->cols % hd == 0 && pos->rows == q->rows);
    if (be->ops->attn_prologue) {
        be->ops->attn_prologue(be, qg, q, gate, k, wq, wk, eps, hd, n_rot, sections, base, pos);
        return;
    }
    for (int64_t h = 0; h < q->cols / hd; h++) {
        be_copy(be, be_view(be, (be_tensor *)qg, h * 2 * hd, hd), be_view(be, q, h * hd, hd));
        be_copy(be, be_view(be, (be_tensor *)qg, h * 2 * hd + hd, hd), be_view(be, gate, h * hd, hd));
    }
    be_rms_norm(be, q, wq, eps, hd, q);
    be_rms_norm(be, k, wk, eps, hd, k);
    be_rope(be, q, hd, n_rot, sections, base, pos);
    be_rope(be, k, hd, n_rot, sections, base, pos);
}

void be_kv_store(be_ctx *be, be_tensor *kc, be_tensor *vc, const be_tensor *k, const be_tensor *v,
                 const be_batch *b)
{
    assert(k->rows == b->n_rows && v->rows == b->n_rows);
    be->ops->kv_store(be, kc, vc, k, v, b);
}

void be_attention(be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc,
                  const be_batch *b, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                  float scale, be_tensor *out)
{
    assert(q->rows == b->n_rows);
    be->ops->attention(be, q, kc, vc, b, n_head, n_head_kv, head_dim, scale, out);
}

void be_ssm_conv(be_ctx *be, const be_tensor *x, be_tensor *tails, const be_weight *w,
                 const be_batch *b, be_tensor *y)
{
    assert(x->rows == b->n_rows);
    be->ops->ssm_conv(be, x, tails, w, b, y);
}

void be_ssm_conv_silu(be_ctx *be, const be_tensor *x, be_tensor *tails, const be_weight *w,
                      const be_batch *b, be_tensor *y)
{
    assert(x->rows == b->n_rows);
    be->ops->ssm_conv_silu(be, x, tails, w, b, y);
}

void be_deltanet(be_ctx *be, const be_tensor *qkv, const be_tensor *g, const be_tensor *beta,
                 be_tensor *S, int64_t n_k_heads, int64_t n_v_heads, int64_t dk,
                 const be_batch *b, be_tensor *out)
{
    assert(qkv->rows == b->n_rows);
    be->ops->deltanet(be, qkv, g, beta, S, n_k_heads, n_v_heads, dk, b, out);
}

bool be_can_keep(be_ctx *be)
{
    return be->ops->ssm_conv_silu_keep && be->ops->deltanet_keep;
}

void be_ssm_conv_silu_keep(be_ctx *be, const be_tensor *x, be_tensor *tails, const be_weight *w,
                           const be_batch *b, be_tensor *y, be_tensor *keep_tails)
{
    assert(x->rows == b->n_rows && be_can_keep(be));
    assert(keep_tails->cols == tails->cols && tails->rows > 0 &&
           keep_tails->rows % tails->rows == 0);
    for (int s = 0; s < b->n_seq; s++)
        assert(b->seq[s].n_rows <= keep_tails->rows / tails->rows);
    be->ops->ssm_conv_silu_keep(be, x, tails, w, b, y, keep_tails);
}

void be_deltanet_keep(be_ctx *be, const be_tensor *qkv, const be_tensor *g, const be_tensor *beta,
                      be_tensor *S, be_tensor *keep_S, int64_t n_k_heads, int64_t n_v_heads,
                      int64_t dk, const be_batch *b, be_tensor *out)
{
    assert(qkv->rows == b->n_rows && be_can_keep(be));
    assert(keep_S->cols == S->cols && S->rows > 0 && keep_S->rows % S->rows == 0);
    for (int s = 0; s < b->n_seq; s++)
        assert(b->seq[s].n_rows <= keep_S->rows / S->rows);
    be->ops->deltanet_keep(be, qkv, g, beta, S, keep_S, n_k_heads, n_v_heads, dk, b, out);
}

/* the gated rules' first steps where a backend has no fused op: the gates
 * into g and beta, the L2 norms of qkv's q and k columns in place */
static void gates_and_norms(be_ctx *be, be_tensor *qkv, const be_tensor *alpha,
                            const be_tensor *b_in, const be_weight *dt_bias, const be_weight *a,
                            float eps, be_tensor *g, be_tensor *beta, int64_t n_k_heads,
                            int64_t dk)
{
    be_deltanet_gates(be, alpha, dt_bias, a, b_in, g, beta);
    be_tensor *qk = be_view(be, qkv, 0, 2 * n_k_heads * dk);
    be_l2_norm(be, qk, eps, dk, qk);
}

void be_deltanet_gated(be_ctx *be, be_tensor *qkv, const be_tensor *alpha, const be_tensor *b_in,
                       const be_weight *dt_bias, const be_weight *a, float eps, be_tensor *g,
                       be_tensor *beta, be_tensor *S, int64_t n_k_heads, int64_t n_v_heads,
                       int64_t dk, const be_batch *b, be_tensor *out)
{
    assert(qkv->rows == b->n_rows && alpha->rows == qkv->rows && b_in->rows == qkv->rows);
    assert(alpha->cols == n_v_heads && b_in->cols == n_v_heads);
    if (be->ops->deltanet_gated) {
        be->ops->deltanet_gated(be, qkv, alpha, b_in, dt_bias, a, eps, g, beta, S, n_k_heads,
                                n_v_heads, dk, b, out);
        return;
    }
    gates_and_norms(be, qkv, alpha, b_in, dt_bias, a, eps, g, beta, n_k_heads, dk);
    be_deltanet(be, qkv, g, beta, S, n_k_heads, n_v_heads, dk, b, out);
}

void be_deltanet_gated_keep(be_ctx *be, be_tensor *qkv, const be_tensor *alpha,
                            const be_tensor *b_in, const be_weight *dt_bias, const be_weight *a,
                            float eps, be_tensor *g, be_tensor *beta, be_tensor *S,
                            be_tensor *keep_S, int64_t n_k_heads, int64_t n_v_heads, int64_t dk,
                            const be_batch *b, be_tensor *out)
{
    assert(qkv->rows == b->n_rows && alpha->rows == qkv->rows && b_in->rows == qkv->rows);
    assert(alpha->cols == n_v_heads && b_in->cols == n_v_heads && be_can_keep(be));
    assert(keep_S->cols == S->cols && S->rows > 0 && keep_S->rows % S->rows == 0);
    for (int s = 0; s < b->n_seq; s++)
        assert(b->seq[s].n_rows <= keep_S->rows / S->rows);
    if (be->ops->deltanet_gated_keep) {
        be->ops->deltanet_gated_keep(be, qkv, alpha, b_in, dt_bias, a, eps, g, beta, S, keep_S,
                                     n_k_heads, n_v_heads, dk, b, out);
        return;
    }
    gates_and_norms(be, qkv, alpha, b_in, dt_bias, a, eps, g, beta, n_k_heads, dk);
    be->ops->deltanet_keep(be, qkv, g, beta, S, keep_S, n_k_heads, n_v_heads, dk, b, out);
}

void be_deltanet_chunked(be_ctx *be, const be_tensor *qkv, const be_tensor *g,
                         const be_tensor *beta, be_tensor *S, int64_t n_k_heads,
                         int64_t n_v_heads, int64_t dk, const be_batch *b, be_tensor *out)
{
    assert(qkv->rows == b->n_rows);
    be->ops->deltanet_chunked(be, qkv, g, beta, S, n_k_heads, n_v_heads, dk, b, out);
}

void be_moe_route(be_ctx *be, const be_tensor *logits, int64_t k, be_tensor *sel, be_tensor *w)
{
    assert(sel->type == BE_I32 && sel->rows == logits->rows && sel->cols == k);
    be->ops->moe_route(be, logits, k, sel, w);
}

void be_argmax(be_ctx *be, const be_tensor *x, be_tensor *ids)
{
    assert(ids->type == BE_I32 && ids->rows == x->rows && ids->cols == 1 && !x->f16);
    be->ops->argmax(be, x, ids);
}

void be_matmul_argmax(be_ctx *be, const be_weight *w, const be_tensor *x, be_tensor *y,
                      be_tensor *ids, const int32_t *ban, int n_ban)
{
    assert(ids->type == BE_I32 && ids->rows == x->rows && ids->cols == 1 && !x->f16);
    if (!be->ops->matmul_argmax) {
        be_matmul(be, w, 0, x, y);
        be_argmax(be, y, ids);
        return;
    }
    assert(y->rows == x->rows && y->cols == (int64_t)w->t->ne[1] && x->cols == (int64_t)w->t->ne[0]);
    be->ops->matmul_argmax(be, w, x, y, ids, ban, n_ban);
}

bool be_head_cheap(const be_ctx *be, const gguf_tensor *head)
{
    return !be->ops->head_cheap || be->ops->head_cheap(be, head);
}

void be_topk(be_ctx *be, const be_tensor *x, int64_t k, be_tensor *ids, be_tensor *vals)
{
    assert(k >= 1 && k <= BE_TOPK_MAX && !x->f16 && !vals->f16);
    assert(ids->type == BE_I32 && ids->rows == x->rows && ids->cols == k);
    assert(vals->type == BE_F32 && vals->rows == x->rows && vals->cols == k);
    be->ops->topk(be, x, k, ids, vals);
}

void be_matmul_topk(be_ctx *be, const be_weight *w, const be_tensor *x, be_tensor *y, int64_t k,
                    be_tensor *ids, be_tensor *vals)
{
    if (!be->ops->matmul_topk) {
        be_matmul(be, w, 0, x, y);
        be_topk(be, y, k, ids, vals);
        return;
    }
    assert(k >= 1 && k <= BE_TOPK_MAX && !x->f16 && !vals->f16 && ids->type == BE_I32);
    assert(ids->rows == x->rows && vals->rows == x->rows && ids->cols == k && vals->cols == k);
    assert(y->rows == x->rows && y->cols == (int64_t)w->t->ne[1] && x->cols == (int64_t)w->t->ne[0]);
    be->ops->matmul_topk(be, w, x, y, k, ids, vals);
}

void be_moe_combine(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k, be_tensor *out)
{
    be->ops->moe_combine(be, y, w, k, out);
}

void be_moe_combine_shared(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k,
                           be_tensor *g, be_tensor *s, be_tensor *out)
{
    assert(g->rows == out->rows && g->cols == 1 && s->rows == out->rows && s->cols == out->cols);
    assert(s->data != out->data);
    be->ops->moe_combine_shared(be, y, w, k, g, s, out);
}

void be_moe_combine_norm(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k,
                         be_tensor *g, be_tensor *s, be_tensor *o, be_tensor *x,
                         const be_weight *wn, float eps, int64_t group, be_tensor *h)
{
    assert(o->rows == x->rows && o->cols == x->cols && h->rows == x->rows && h->cols == x->cols);
    assert(h->data != x->data && h->data != o->data && (!s || h->data != s->data));
    if (be->ops->moe_combine_norm) {
        be->ops->moe_combine_norm(be, y, w, k, g, s, o, x, wn, eps, group, h);
        return;
    }
    if (s)
        be_moe_combine_shared(be, y, w, k, g, s, o);
    else
        be_moe_combine(be, y, w, k, o);
    be_add_rms_norm(be, o, x, wn, eps, group, h);
}

void be_moe_down_shared(be_ctx *be, const be_weight *wd, const be_tensor *x, const be_tensor *sel,
                        const be_tensor *w, const be_weight *wds, be_tensor *g, const be_tensor *u,
                        be_tensor *sg, be_tensor *ey, be_tensor *s, be_tensor *out)
{
    const int64_t T = sel->rows, k = sel->cols;
    assert(sel->type == BE_I32 && x->rows == T * k && w->rows == T && w->cols == k);
    assert(g->rows == T && u->rows == T && g->cols == u->cols && sg->rows == T && sg->cols == 1);
    assert(out->rows == T && s->rows == T && s->cols == out->cols && s->data != out->data);
    assert(ey->rows >= T * k && ey->cols == out->cols);
    if (be->ops->moe_down_shared) {
        be->ops->moe_down_shared(be, wd, x, sel, w, wds, g, u, sg, ey, s, out);
        return;
    }
    be_matmul_id(be, wd, x, sel, ey);
    be_matmul_glu(be, wds, g, u, s);
    be_moe_combine_shared(be, ey, w, k, sg, s, out);
}

/* ----------------------------------------------------------------- passes */

void be_pass_begin(be_ctx *be, uint64_t key, int64_t n_rows) { be->ops->pass_begin(be, key, n_rows); }
void be_pass_end(be_ctx *be) { be->ops->pass_end(be); }
void be_stats_get(const be_ctx *be, be_stats *out) { be->ops->stats(be, out); }

/* -------------------------------------------------------------- profiling */

void be_profile_enable(be_ctx *be, int on) { be->ops->profile_enable(be, on); }
void be_profile_layer(be_ctx *be, enum be_layer_kind kind) { be->ops->profile_layer(be, kind); }
void be_profile_reset(be_ctx *be) { be->ops->profile_reset(be); }

int be_profile_ops(const be_ctx *be, be_prof_row *rows, int cap)
{
    return be->ops->profile_ops(be, rows, cap);
}

void be_profile_layers(const be_ctx *be, be_prof_row rows[BE_LAYER_N])
{
    be->ops->profile_layers(be, rows);
}

const char *be_layer_name(enum be_layer_kind kind)
{
    static const char *const n[BE_LAYER_N] = { "head/embedding", "deltanet", "attention",
                                               "ffn/moe", "mtp block" };
    return (unsigned)kind < BE_LAYER_N ? n[kind] : "?";
}
