/* be_impl.h: what a backend implements and what every backend's context
 * starts with. The model layer includes backend.h only; a backend (cpu/,
 * a future cuda/) includes this, fills one `struct be_ops` with its
 * functions and puts `be_ctx` first in its own context, so the compiler
 * checks each entry against the contract and backend.c can dispatch.
 *
 * A tensor (and a bound weight) is one generic struct for every backend:
 * a tensor's `data` is device memory (host memory on the CPU), addressed
 * as rows of `ld` elements of `type`. Views share their parent's memory and are made by backend.c
 * from a pool in the context, without calling the backend. */
#ifndef Q36_BE_IMPL_H
#define Q36_BE_IMPL_H

#include <stdbool.h>

#include "backend.h"

struct be_tensor {
    void        *data;    /* device memory of row 0 */
    int64_t      rows, cols;
    int64_t      ld;      /* elements between row starts */
    enum be_type type;
    bool         f16;     /* type == BE_F16 (the CPU kernels test this) */
    bool         view;
};

/* A bound weight, the same struct for every backend: the GGUF tensor it
 * came from, its row layout, `data` the device's copy of its bytes (the
 * mapping itself on the CPU), `impl` whatever else the backend keeps (NULL
 * on the CPU). act_type and act_row_bytes are the CPU's matmul recipe (the
 * type ggml quantizes activation rows to); another backend may ignore
 * them. The backend frees its bound weights with its context. */
struct be_weight {
    const gguf_tensor *t;
    uint32_t    type;          /* storage type */
    int         act_type;      /* vec_dot_type of the activations */
    uint64_t    row_bytes;     /* one row of ne0 elements */
    uint64_t    act_row_bytes;
    const void *data;
    void       *impl;
    be_weight  *next;
};

/* Views live in blocks that are reused after be_views_reset, so a forward
 * pass allocates nothing once the first one has grown the blocks. */
#define BE_VBLOCK 256
typedef struct be_vblock {
    be_tensor v[BE_VBLOCK];
    int n;
    struct be_vblock *next;
} be_vblock;

struct be_ctx {
    const struct be_ops *ops;
    q36_err    err;          /* the first op failure since the last be_check */
    be_vblock *vblocks;      /* view storage, kept across resets */
    be_vblock *vcur;         /* the block being filled */
    be_tensor  vspare;       /* a view made when the pool could not grow */
};

/* Records an op failure in be->err unless one is already there (the first
 * wins); the op then returns without touching its outputs further. */
void be_fail(be_ctx *be, int kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Frees the view pool; a backend's free calls it. */
void be_base_free(be_ctx *be);

/* be_ops.side's steps (backend.h: be_side_begin) */
enum { BE_SIDE_BEGIN, BE_SIDE_END, BE_SIDE_JOIN };

/* One entry per op of backend.h, same arguments (see there for what each
 * does); every entry is required but matmul_argmax and matmul_topk. */
struct be_ops {
    const char *name;
    void (*free)(be_ctx *be);
    void (*sync)(be_ctx *be);
    /* the scratch the ops take for batches up to `shape`, reserved now */
    int  (*reserve)(be_ctx *be, const be_shape *shape, q36_err *err);

    be_tensor *(*tensor_new)(be_ctx *be, enum be_type type, int64_t rows, int64_t cols);
    void (*tensor_free)(be_ctx *be, be_tensor *t);
    void (*write)(be_ctx *be, be_tensor *t, int64_t row0, int64_t nrows, const void *src);
    void (*read)(be_ctx *be, const be_tensor *t, int64_t row0, int64_t nrows, void *dst);
    void (*save)(be_ctx *be, const be_tensor *t, int64_t row0, int64_t nrows, void *dst);
    void (*load)(be_ctx *be, be_tensor *t, int64_t row0, int64_t nrows, const void *src);
    void (*zero)(be_ctx *be, be_tensor *t);
    void (*copy)(be_ctx *be, const be_tensor *src, be_tensor *dst);

    int  (*weight_bind)(be_ctx *be, const gguf_tensor *t, be_weight **out, q36_err *err);
    void (*get_rows)(be_ctx *be, const be_weight *w, const be_tensor *ids, be_tensor *out);
    void (*matmul)(be_ctx *be, const be_weight *w, int64_t slab, const be_tensor *x,
                   be_tensor *y);
    void (*matmul_n)(be_ctx *be, int n, const be_weight *const *w, const be_tensor *x,
                     be_tensor *const *y);
    void (*matmul_id)(be_ctx *be, const be_weight *w, const be_tensor *x, const be_tensor *sel,
                      be_tensor *y);
    /* optional (NULL: backend.c runs be_swiglu, then the product) */
    void (*matmul_glu)(be_ctx *be, const be_weight *w, be_tensor *g, const be_tensor *u,
                       be_tensor *y);
    void (*matmul_id_glu)(be_ctx *be, const be_weight *w, be_tensor *g, const be_tensor *u,
                          const be_tensor *sel, be_tensor *y);
    void (*matmul_id_swiglu)(be_ctx *be, const be_weight *wg, const be_weight *wu,
                             const be_tensor *x, const be_tensor *sel, be_tensor *tmp,
                             be_tensor *y);

    void (*rms_norm)(be_ctx *be, const be_tensor *x, const be_weight *w, float eps,
                     int64_t group, be_tensor *y);
    void (*add_rms_norm)(be_ctx *be, const be_tensor *o, be_tensor *x, const be_weight *w,
                         float eps, int64_t group, be_tensor *y);
    void (*l2_norm)(be_ctx *be, const be_tensor *x, float eps, int64_t group, be_tensor *y);
    void (*add)(be_ctx *be, const be_tensor *a, const be_tensor *b, be_tensor *y);
    void (*mul)(be_ctx *be, const be_tensor *a, const be_tensor *b, be_tensor *y);
    void (*mul_col)(be_ctx *be, const be_tensor *a, const be_tensor *s, be_tensor *y);
    void (*silu)(be_ctx *be, const be_tensor *x, be_tensor *y);
    void (*sigmoid)(be_ctx *be, const be_tensor *x, be_tensor *y);
    void (*swiglu)(be_ctx *be, const be_tensor *g, const be_tensor *u, be_tensor *y);
    void (*rms_norm_gate)(be_ctx *be, const be_tensor *x, const be_weight *w, float eps,
                          int64_t group, const be_tensor *z, be_tensor *y);
    void (*deltanet_gates)(be_ctx *be, const be_tensor *alpha, const be_weight *dt_bias,
                      const be_weight *a, const be_tensor *b, be_tensor *g, be_tensor *beta);

    void (*rope)(be_ctx *be, be_tensor *x, int64_t head_dim, int64_t n_rot,
                 const int32_t sections[4], float base, const be_tensor *pos);
    /* optional (NULL: backend.c runs the copies, norms and ropes) */
    void (*attn_prologue)(be_ctx *be, const be_tensor *qg, be_tensor *q, be_tensor *gate,
                          be_tensor *k, const be_weight *wq, const be_weight *wk, float eps,
                          int64_t hd, int64_t n_rot, const int32_t sections[4], float base,
                          const be_tensor *pos);
    void (*kv_store)(be_ctx *be, be_tensor *kc, be_tensor *vc, const be_tensor *k,
                     const be_tensor *v, const be_batch *b);
    void (*attention)(be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc,
                      const be_batch *b, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                      float scale, be_tensor *out);
    void (*ssm_conv)(be_ctx *be, const be_tensor *x, be_tensor *tails, const be_weight *w,
                     const be_batch *b, be_tensor *y);
    void (*ssm_conv_silu)(be_ctx *be, const be_tensor *x, be_tensor *tails, const be_weight *w,
                          const be_batch *b, be_tensor *y);
    void (*deltanet)(be_ctx *be, const be_tensor *qkv, const be_tensor *g, const be_tensor *beta,
                     be_tensor *S, int64_t n_k_heads, int64_t n_v_heads, int64_t dk,
                     const be_batch *b, be_tensor *out);
    /* optional, both or neither (be_can_keep) */
    void (*ssm_conv_silu_keep)(be_ctx *be, const be_tensor *x, be_tensor *tails,
                               const be_weight *w, const be_batch *b, be_tensor *y,
                               be_tensor *keep_tails);
    void (*deltanet_keep)(be_ctx *be, const be_tensor *qkv, const be_tensor *g,
                          const be_tensor *beta, be_tensor *S, be_tensor *keep_S,
                          int64_t n_k_heads, int64_t n_v_heads, int64_t dk, const be_batch *b,
                          be_tensor *out);
    /* optional (NULL: backend.c runs the gates, the norms and be_deltanet) */
    void (*deltanet_gated)(be_ctx *be, be_tensor *qkv, const be_tensor *alpha,
                           const be_tensor *b_in, const be_weight *dt_bias, const be_weight *a,
                           float eps, be_tensor *g, be_tensor *beta, be_tensor *S,
                           int64_t n_k_heads, int64_t n_v_heads, int64_t dk, const be_batch *b,
                           be_tensor *out);
    /* optional (NULL: backend.c runs the gates, the norms and deltanet_keep) */
    void (*deltanet_gated_keep)(be_ctx *be, be_tensor *qkv, const be_tensor *alpha,
                                const be_tensor *b_in, const be_weight *dt_bias,
                                const be_weight *a, float eps, be_tensor *g, be_tensor *beta,
                                be_tensor *S, be_tensor *keep_S, int64_t n_k_heads,
                                int64_t n_v_heads, int64_t dk, const be_batch *b, be_tensor *out);
    void (*deltanet_chunked)(be_ctx *be, const be_tensor *qkv, const be_tensor *g,
                             const be_tensor *beta, be_tensor *S, int64_t n_k_heads,
                             int64_t n_v_heads, int64_t dk, const be_batch *b, be_tensor *out);
    void (*moe_route)(be_ctx *be, const be_tensor *logits, int64_t k, be_tensor *sel,
                      be_tensor *w);
    void (*moe_combine)(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k,
                        be_tensor *out);
    void (*argmax)(be_ctx *be, const be_tensor *x, be_tensor *ids);
    /* optional: NULL runs matmul then argmax */
    void (*matmul_argmax)(be_ctx *be, const be_weight *w, const be_tensor *x, be_tensor *y,
                          be_tensor *ids, const int32_t *ban, int n_ban);
    void (*topk)(be_ctx *be, const be_tensor *x, int64_t k, be_tensor *ids, be_tensor *vals);
    /* optional: NULL runs matmul then topk */
    void (*matmul_topk)(be_ctx *be, const be_weight *w, const be_tensor *x, be_tensor *y,
                        int64_t k, be_tensor *ids, be_tensor *vals);
    /* optional: NULL answers true (be_head_cheap) */
    bool (*head_cheap)(const be_ctx *be, const gguf_tensor *head);
    void (*moe_combine_shared)(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k,
                               be_tensor *g, be_tensor *s, be_tensor *out);
    /* optional: without it backend.c runs the two ops */
    void (*moe_combine_norm)(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k,
                             be_tensor *g, be_tensor *s, be_tensor *o, be_tensor *x,
                             const be_weight *wn, float eps, int64_t group, be_tensor *h);
    /* optional: without it backend.c runs the three ops */
    void (*moe_down_shared)(be_ctx *be, const be_weight *wd, const be_tensor *x,
                            const be_tensor *sel, const be_tensor *w, const be_weight *wds,
                            be_tensor *g, const be_tensor *u, be_tensor *sg, be_tensor *ey,
                            be_tensor *s, be_tensor *out);
    /* optional: only q8_0 caches need it, and only backends that take them
     * (without it be_hadamard fails the pass) */
    void (*hadamard)(be_ctx *be, be_tensor *x, int64_t n);
    /* optional: a hint, nothing when absent (the CPU) */
    void (*prefetch)(be_ctx *be, int n, const be_weight *const *w, const be_tensor *sel);
    /* optional: NULL answers be_side_begin false; step is BE_SIDE_BEGIN
     * (the answer), BE_SIDE_END or BE_SIDE_JOIN (ignored) */
    bool (*side)(be_ctx *be, int step);

    void (*pass_begin)(be_ctx *be, uint64_t key, int64_t n_rows);
    void (*pass_end)(be_ctx *be);
    void (*stats)(const be_ctx *be, be_stats *out);

    void (*profile_enable)(be_ctx *be, int on);
    void (*profile_layer)(be_ctx *be, enum be_layer_kind kind);
    void (*profile_reset)(be_ctx *be);
    int  (*profile_ops)(const be_ctx *be, be_prof_row *rows, int cap);
    void (*profile_layers)(const be_ctx *be, be_prof_row rows[BE_LAYER_N]);
};

#endif
