/* backend.h: the device contract of q36 (docs/ENGINE.md).
 *
 * The model layer (src/model/) owns the order of operations; a backend owns
 * how each operation runs and where the data lives. The model never touches
 * device memory: it creates opaque tensors, calls one function per op, and
 * reads back only what it must (logits, the hidden rows asked for) through
 * be_read. Each be_* function here dispatches through the context's table
 * (be_impl.h, struct be_ops), so several backends can live in one process;
 * the CPU backend (cpu/) is always built and is the reference the others
 * are tested against. What a backend reproduces of llama.cpp, and how, is
 * said in its own files (cpu/cpu.c for the CPU).
 *
 * Tensors. A be_tensor is a matrix of `rows` x `cols` elements of one type
 * (enum be_type), row-major, living on the device for as long as it is not
 * freed. Ops take f32 tensors unless they say otherwise; ids, positions and
 * expert choices are i32 tensors, so they stay on the device between ops.
 * A view (be_view) names a column range of every row of a parent (or a row
 * range with be_rows); views share the parent's memory and its row stride.
 * Views come from a per-context pool that be_views_reset() empties; the
 * model resets it at the start of each forward pass, so a view must not be
 * kept across passes. Rows are tokens almost everywhere: a batch of T rows
 * is a T-row tensor.
 *
 * Batches and slots. One forward pass evaluates a batch: rows from one or
 * more sequences, each sequence in a slot of the state tensors (K/V rows,
 * conv tails, DeltaNet matrices, each holding every slot, slot after slot).
 * A be_batch says, per run of rows, which slot they belong to and at which
 * position they start; the sequence ops (rope, K/V store, attention, conv,
 * delta rule) read each slot's state through it. Row-wise ops do not care.
 *
 * Weights. be_weight_bind() makes a GGUF tensor usable by the device: the
 * CPU backend keeps a view into the mmap (no copy); a GPU backend uploads.
 * A weight's ne0 is the reduction dimension; ne1 output rows; ne2 slabs
 * (experts).
 *
 * Sync. Ops are queued in call order; be_read waits for what was queued
 * before it. be_sync waits for everything. The CPU backend runs each op to
 * completion inside the call, so both are trivial there.
 *
 * Errors. Functions returning int give 0 or a negative q36_err kind. Ops
 * return nothing: an op that fails (a device error, scratch beyond what was
 * reserved) records the error in the context, the first one winning, and
 * later ops still run on whatever their inputs hold; be_check, called once
 * per forward pass, reports it and clears it. Ops on shapes that do not fit
 * are programming errors of the model layer and assert.
 *
 * Threads: one be_ctx belongs to one thread at a time (it may use its own
 * worker threads inside an op). */
#ifndef Q36_BACKEND_H
#define Q36_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "../gguf/gguf.h"
#include "../util/err.h"

typedef struct be_ctx    be_ctx;
typedef struct be_tensor be_tensor;
typedef struct be_weight be_weight;

/* Element types of tensors. q8_0 (ggml's block of 32: f16 scale, 32 int8)
 * is a K/V cache type (be_kv_store, be_attention; the CPU backend's). */
enum be_type { BE_F32 = 0, BE_F16 = 1, BE_I32 = 2, BE_Q8_0 = 3, BE_NTYPES };

/* Bytes of n elements of a type (n a multiple of 32 for q8_0). */
uint64_t be_type_bytes(enum be_type type, int64_t n);
const char *be_type_name(enum be_type type);

/* The largest batch a context will run, for be_reserve and the memory
 * plan: every count is an upper bound. */
typedef struct be_shape {
    int64_t n_rows;        /* rows of a forward pass (n_batch) */
    int64_t n_seq;         /* sequences in one pass (at most the slots) */
    int64_t n_ctx;         /* K/V rows per slot */
    int64_t n_head, n_head_kv, head_dim;        /* attention; 0 without */
    int64_t ssm_k_heads, ssm_v_heads, ssm_dim;  /* delta rule; 0 without */
    int64_t n_expert, n_expert_used;            /* MoE; 0 without */
    int64_t max_in;        /* widest matmul input (columns of x) */
    int64_t max_in_expert; /* widest expert matmul input */
    int64_t expert_elems;  /* elements of one expert's weight matrix (inputs x
                            * outputs, the largest); 0: unknown */
    int64_t max_views;     /* views one forward pass makes (be_view, be_rows) */
    int     fast;          /* fast mode: products and prompt runs in any order and
                            * precision the backend documents (the CUDA backend's
                            * f16 tensor cores, chunked delta rule, tiled
                            * attention); 0: exact mode */
} be_shape;

/* ------------------------------------------------------------- lifecycle */

/* The backends built into this binary, by name (NULL or "cpu": the CPU):
 * a new context with n_threads host threads, and the scratch bytes its ops
 * take for batches up to `shape` (what be_reserve takes there), for a
 * memory plan made before any context exists. Q36_E_ARG for a name that is
 * not built in. */
int be_new(const char *name, int n_threads, be_ctx **out, q36_err *err);
int be_scratch_bytes(const char *name, const be_shape *shape, int n_threads, uint64_t *out,
                     q36_err *err);

/* The CPU backend: n_threads workers in total (1 = the calling thread
 * only; 0 = the number of online CPUs). */
int  be_cpu_new(int n_threads, be_ctx **out, q36_err *err);
uint64_t be_cpu_scratch_bytes(const be_shape *shape, int n_threads);
/* Bytes the CPU backend copies from the head `head` on the first greedy
 * step that meets its screen on this machine (cpu_head.c; 0: none). */
uint64_t be_cpu_head_screen_bytes(const gguf_tensor *head);

/* The CUDA backend (built when the Makefile finds nvcc; Q36_CUDA): the
 * device Q36_CUDA_DEVICE names (default 0), one stream, weights uploaded
 * at bind. be_cuda_device_info: "CUDA0 <name> (sm_XY)" into name (may be
 * NULL), free and total device bytes; Q36_E_UNSUP when no device is there. */
int  be_cuda_new(int n_threads, be_ctx **out, q36_err *err);
uint64_t be_cuda_scratch_bytes(const be_shape *shape, int n_threads);
int  be_cuda_device_info(char *name, size_t name_n, uint64_t *free_b, uint64_t *total_b,
                         q36_err *err);
/* The read bandwidth of the CUDA device's memory: gbps[i], GB/s (1e9 B/s),
 * of timed pass i < passes of a kernel that reads a buffer of `bytes` with
 * 16-byte loads (cuda/cuda_membw.cu; one untimed pass first). */
int  be_cuda_read_bandwidth(uint64_t bytes, int passes, double *gbps, q36_err *err);
/* Device bytes be_weight_bind of the CUDA backend takes for t (types
 * without device kernels are uploaded as f32). */
uint64_t be_cuda_weight_bytes(const gguf_tensor *t);
/* Device bytes the CUDA backend's fast mode may keep for t's f16 copy
 * (cuda/cuda_f16keep.cu), taken only from memory to spare: 0 for tensors
 * that no prompt product reads through one, or with Q36_CUDA_F16KEEP=0. */
uint64_t be_cuda_f16keep_bytes(const gguf_tensor *t);

/* The device of a built-in backend by name, for memory plans: as
 * be_cuda_device_info; Q36_E_UNSUP for the CPU (host memory is the
 * engine's own check), Q36_E_ARG for a name not built in. */
int  be_device_info(const char *name, char *desc, size_t desc_n, uint64_t *free_b,
                    uint64_t *total_b, q36_err *err);
/* The device's memory read bandwidth of a built-in backend by name, as
 * be_cuda_read_bandwidth; Q36_E_UNSUP for the CPU (tools/bench measures
 * host memory itself). */
int  be_device_read_bandwidth(const char *name, uint64_t bytes, int passes, double *gbps,
                              q36_err *err);

void be_free(be_ctx *be);                                  /* accepts NULL */
const char *be_name(const be_ctx *be);                     /* "cpu" */

/* Takes the scratch every op needs for batches up to `shape` now, and room
 * for max_views views, so that nothing allocates later (an op that would
 * need more fails, be_check). Q36_E_NOMEM with the numbers when it cannot. */
int be_reserve(be_ctx *be, const be_shape *shape, q36_err *err);

/* Waits for every queued op. */
void be_sync(be_ctx *be);
/* Waits for every queued op and reports the first op failure since the
 * last check (0 when none), clearing it. */
int be_check(be_ctx *be, q36_err *err);

/* ---------------------------------------------------------------- tensors */

/* A new zero-filled tensor. NULL when out of memory. */
be_tensor *be_tensor_new_type(be_ctx *be, enum be_type type, int64_t rows, int64_t cols);
static inline be_tensor *be_tensor_new(be_ctx *be, int64_t rows, int64_t cols)
{
    return be_tensor_new_type(be, BE_F32, rows, cols);
}
static inline be_tensor *be_tensor_new_f16(be_ctx *be, int64_t rows, int64_t cols)
{
    return be_tensor_new_type(be, BE_F16, rows, cols);
}
void be_tensor_free(be_ctx *be, be_tensor *t);             /* accepts NULL; not views */
int64_t be_rows_of(const be_tensor *t);
int64_t be_cols_of(const be_tensor *t);
enum be_type be_type_of(const be_tensor *t);
/* Bytes the tensor occupies on the device (views: 0). */
uint64_t be_tensor_bytes(const be_tensor *t);

/* Column range [col0, col0+ncols) of every row of t (f32 and i32 only). */
be_tensor *be_view(be_ctx *be, be_tensor *t, int64_t col0, int64_t ncols);
/* Row range [row0, row0+nrows) of t, all columns. */
be_tensor *be_rows(be_ctx *be, be_tensor *t, int64_t row0, int64_t nrows);
/* Drops every view made since the last reset. */
void be_views_reset(be_ctx *be);

/* Host <-> device copies of rows [row0, row0+nrows), all columns of the
 * tensor (or view); host data is packed rows of be_cols_of(t) elements:
 * floats for f32 and f16 tensors (converted), int32 for i32, the raw
 * blocks for q8_0. */
void be_write(be_ctx *be, be_tensor *t, int64_t row0, int64_t nrows, const void *src);
void be_read(be_ctx *be, const be_tensor *t, int64_t row0, int64_t nrows, void *dst);
/* Raw device bytes of rows [row0, row0+nrows) of a tensor or row view
 * (snapshots to disk): be_type_bytes(type, cols) per row. */
void be_save(be_ctx *be, const be_tensor *t, int64_t row0, int64_t nrows, void *dst);
void be_load(be_ctx *be, be_tensor *t, int64_t row0, int64_t nrows, const void *src);
void be_zero(be_ctx *be, be_tensor *t);
/* dst = src: same shape and type, on the device (views too: checkpoints
 * are row copies between state tensors). */
void be_copy(be_ctx *be, const be_tensor *src, be_tensor *dst);

/* ---------------------------------------------------------------- batches */

/* One run of a batch: rows [row0, row0+n_rows) belong to `slot` and sit at
 * positions pos0, pos0+1, ... (a slot's rows are one run, in order). */
typedef struct be_seq {
    int32_t slot, row0, n_rows, pos0;
} be_seq;

/* A batch as the sequence ops see it. `seq` is the host's copy of the runs
 * (launch shapes); `pos` (i32, n_rows x 1: each row's position) and `runs`
 * (i32, n_seq x 4: the be_seq fields) are the same facts on the device.
 * kv_rows: rows of one slot in the K/V tensors. */
typedef struct be_batch {
    int64_t    n_rows;
    int        n_seq;
    be_seq    *seq;
    be_tensor *pos, *runs;
    int64_t    kv_rows;
    int64_t    max_rows;    /* capacity (be_batch_init) */
    int        max_seq;
} be_batch;

/* Allocates a batch of up to max_rows rows in up to max_seq runs. */
int  be_batch_init(be_ctx *be, be_batch *b, int64_t max_rows, int max_seq, int64_t kv_rows,
                   q36_err *err);
/* Sets the runs (n_seq of them, rows laid end to end from row 0 in the
 * given order) and uploads them with each row's position. */
void be_batch_set(be_ctx *be, be_batch *b, int n_seq, const be_seq *seq);
void be_batch_free(be_ctx *be, be_batch *b);

/* ---------------------------------------------------------------- weights */

/* Binds a GGUF tensor; NULL for t == NULL. Q36_E_UNSUP when the type has no
 * dot product or dequantizer. Bound weights live until be_free. */
int be_weight_bind(be_ctx *be, const gguf_tensor *t, be_weight **out, q36_err *err);

/* out[r] = dequantized row ids[r] of w (a 2-D weight, ne0 = cols of out)
 * for each row r of ids (i32, n x 1; out has at least n rows). */
void be_get_rows(be_ctx *be, const be_weight *w, const be_tensor *ids, be_tensor *out);

/* y[r][n] = sum_k W[slab][n][k] * x[r][k] for every row r of x, with x's
 * rows quantized to W's vec_dot_type first. x: R x ne0, y: R x ne1. */
void be_matmul(be_ctx *be, const be_weight *w, int64_t slab, const be_tensor *x, be_tensor *y);

/* be_matmul(be, w[i], 0, x, y[i]) for i < n (n >= 1), the same bits, as
 * one operation: x is quantized once for the weights that share its
 * activation type, and their rows are one stream of work (one-token
 * decode: one parallel region instead of n, longer runs per thread). */
void be_matmul_n(be_ctx *be, int n, const be_weight *const *w, const be_tensor *x, be_tensor *const *y);

/* Expert matmul: sel is i32 n_tok x k (be_moe_route's choices, on the
 * device); for token t and rank i, with e = sel[t][i]: y[t*k+i] = W[e] · x[t]
 * when x has n_tok rows, or W[e] · x[t*k+i] when it has n_tok*k rows. */
void be_matmul_id(be_ctx *be, const be_weight *w, const be_tensor *x,
                  const be_tensor *sel, be_tensor *y);

/* be_swiglu(g, u, g), then be_matmul(w, 0, g, y): a SwiGLU block's down
 * product with its activation, as one op, the same results (the CUDA
 * backend forms silu(g) * u as its decode product reads its input, with
 * Q36_CUDA_FUSED). g's contents afterwards are unspecified. */
void be_matmul_glu(be_ctx *be, const be_weight *w, be_tensor *g, const be_tensor *u,
                   be_tensor *y);
/* The same for the experts: be_swiglu(g, u, g), then be_matmul_id(w, g,
 * sel, y); g and u have n_tok*k rows. */
void be_matmul_id_glu(be_ctx *be, const be_weight *w, be_tensor *g, const be_tensor *u,
                      const be_tensor *sel, be_tensor *y);
/* be_matmul_id(wg, x, sel, y), be_matmul_id(wu, x, sel, tmp), then
 * be_swiglu(y, tmp, y): an expert block's gate and up products and its
 * activation as one op, the same results (the CUDA backend computes both
 * products of a row in one kernel, with Q36_CUDA_FUSED). tmp (as y) is
 * room; its contents afterwards are unspecified. */
void be_matmul_id_swiglu(be_ctx *be, const be_weight *wg, const be_weight *wu, const be_tensor *x,
                         const be_tensor *sel, be_tensor *tmp, be_tensor *y);

/* ------------------------------------------------------------ elementwise */

/* Row-wise RMS norm over groups of `group` columns (cols % group == 0):
 * y = x * (1/sqrtf(mean(x^2) + eps)) [* w], sum of squares in double.
 * w (optional, F32 weight of `group` elements) multiplies after. x may be y. */
void be_rms_norm(be_ctx *be, const be_tensor *x, const be_weight *w, float eps,
                 int64_t group, be_tensor *y);
/* x = o + x (be_add(o, x, x)), then y = be_rms_norm(x, w, eps, group): the
 * residual add and the next norm as one op, the same results (a backend
 * may run them as one kernel: the CUDA one with Q36_CUDA_FUSED=1). y is
 * not x or o. */
void be_add_rms_norm(be_ctx *be, const be_tensor *o, be_tensor *x, const be_weight *w,
                     float eps, int64_t group, be_tensor *y);
/* ggml's L2 norm form: rms norm with eps/group, then times 1/sqrtf(group). */
void be_l2_norm(be_ctx *be, const be_tensor *x, float eps, int64_t group, be_tensor *y);

void be_add(be_ctx *be, const be_tensor *a, const be_tensor *b, be_tensor *y);    /* y = a + b */
void be_mul(be_ctx *be, const be_tensor *a, const be_tensor *b, be_tensor *y);    /* y = a * b */
/* y[r][c] = a[r][c] * s[r][0] (s has one column). */
void be_mul_col(be_ctx *be, const be_tensor *a, const be_tensor *s, be_tensor *y);
void be_silu(be_ctx *be, const be_tensor *x, be_tensor *y);                       /* x/(1+e^-x) */
void be_sigmoid(be_ctx *be, const be_tensor *x, be_tensor *y);
/* In place, each run of n consecutive columns of each row of x (cols a
 * multiple of n, n a power of two) times the n x n Walsh-Hadamard matrix
 * over sqrt(n), in ggml's order (its fwht): every element times
 * 1/sqrtf(n) first, then butterflies u+v, u-v of span 1, 2, ..., n/2.
 * llama.cpp rotates q, k and v so for quantized K/V caches (and the
 * attention output back). */
void be_hadamard(be_ctx *be, be_tensor *x, int64_t n);

/* A hint that the ops queued next will read the weights w[0..n) (NULL
 * entries skipped): a backend may start moving them closer to where they
 * are read while the ops before run (the CUDA backend asks its L2 cache
 * for them in decode passes, cuda_prefetch.cu). With sel (i32, rows x k:
 * be_moe_route's choices, on the device), the w are expert weights
 * (ne[2] experts) and only the experts sel's rows choose are named. It
 * changes no result and is ordered after the ops queued before it only;
 * the CPU does nothing. */
void be_prefetch(be_ctx *be, int n, const be_weight *const *w, const be_tensor *sel);
/* Ops that may run beside others. be_side_begin answers whether the
 * backend will run the ops queued from it to be_side_end (the side) beside
 * the ops queued after be_side_end, up to be_side_join: then the side reads
 * only what ops queued before be_side_begin wrote, and the ops between
 * be_side_end and be_side_join neither read nor write what the side
 * writes, nor write what it reads; the caller, told true, calls
 * be_side_end and then be_side_join before anything reads the side's
 * results. Told false, it queues its ops in any order it likes (nothing
 * was begun; be_side_end and be_side_join are not called). No result
 * depends on the answer. The CPU has no entry (false); the CUDA backend
 * runs a side on a second stream in decode and verify passes
 * (cuda_side.cu). Sides do not nest. */
bool be_side_begin(be_ctx *be);
void be_side_end(be_ctx *be);
void be_side_join(be_ctx *be);
/* y = silu(g) * u */
void be_swiglu(be_ctx *be, const be_tensor *g, const be_tensor *u, be_tensor *y);
/* y = silu(z) * x  (DeltaNet gated norm tail; x is already rms-normed). */
#define be_gate_silu(be, x, z, y) be_swiglu((be), (z), (x), (y))
/* be_rms_norm(x, w, eps, group, y), then be_gate_silu(y, z, y): the
 * DeltaNet gated norm as one op, the same results (the CUDA backend fuses
 * it with Q36_CUDA_FUSED=1). y may be x; z is neither. */
void be_rms_norm_gate(be_ctx *be, const be_tensor *x, const be_weight *w, float eps,
                      int64_t group, const be_tensor *z, be_tensor *y);

/* DeltaNet decay and beta (MODEL.md §2.4), per row, Hv columns:
 * g = softplus(alpha + dt_bias) * a;  beta = sigmoid(b). In place allowed. */
void be_deltanet_gates(be_ctx *be, const be_tensor *alpha, const be_weight *dt_bias,
                  const be_weight *a, const be_tensor *b, be_tensor *g, be_tensor *beta);

/* --------------------------------------------------------------- sequence */

/* Partial NeoX rope of every head of x (cols = n_head * head_dim), row r at
 * position pos[r] (i32, rows x 1): pairs (i, i + n_rot/2), i < n_rot/2,
 * with theta = p * base^(-2i/n_rot) by repeated float multiplication,
 * selected by the interleaved multi-section rule for text positions
 * (p, p, p, 0). */
void be_rope(be_ctx *be, be_tensor *x, int64_t head_dim, int64_t n_rot,
             const int32_t sections[4], float base, const be_tensor *pos);

/* The gated attention block's prologue as one op, the same results: q and
 * gate taken apart from qg (each head's [q_h | gate_h], hd each, as be_copy
 * copies), be_rms_norm(q, wq, eps, hd, q), be_rms_norm(k, wk, eps, hd, k),
 * then be_rope of q and of k (the CUDA backend runs it as one kernel with
 * Q36_CUDA_FUSED). q, gate: T x n_head*hd; k: T x n_head_kv*hd, in place. */
void be_attn_prologue(be_ctx *be, const be_tensor *qg, be_tensor *q, be_tensor *gate,
                      be_tensor *k, const be_weight *wq, const be_weight *wk, float eps,
                      int64_t hd, int64_t n_rot, const int32_t sections[4], float base,
                      const be_tensor *pos);

/* Writes the rows of k and v (T x Hkv*hd) into the caches: the rows of a
 * run go to its slot's cache rows [pos0, pos0+n) (cache row
 * slot*kv_rows + p); rounded to f16, or quantized to q8_0 as ggml
 * quantizes activations, for those cache types. */
void be_kv_store(be_ctx *be, be_tensor *kc, be_tensor *vc, const be_tensor *k,
                 const be_tensor *v, const be_batch *b);

/* Causal attention of the query rows of each run over its slot's cache
 * rows [0, pos0+n): q is T x Hq*hd, out T x Hq*hd; query head h reads KV
 * head h / (Hq/Hkv). Scores k·q in f32 (f16 caches: q rounded to f16
 * first), times scale, softmax with max subtraction and a double sum, then
 * the probability-weighted sum of V (f16 V cache: probabilities rounded).
 * q8_0 caches (both; head_dim a multiple of 32): llama.cpp's flash
 * attention instead, q quantized to q8_0 for the scores and an online
 * softmax (cpu_attn_q8.c). */
void be_attention(be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc,
                  const be_batch *b, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                  float scale, be_tensor *out);

/* Depthwise causal conv of kernel Kc over the rows of x (T x C), each run
 * continuing from its slot's tail of the Kc-1 previous raw rows per
 * channel (tails: C rows per slot, slot after slot, each C x (Kc-1),
 * oldest first); w is the F32 weight {Kc, C}. The tails are updated with
 * the last raw rows. y must not share memory with x. */
void be_ssm_conv(be_ctx *be, const be_tensor *x, be_tensor *tails, const be_weight *w,
                 const be_batch *b, be_tensor *y);
/* be_ssm_conv, then be_silu(y, y), as one op with the same results (the
 * CUDA backend fuses it with Q36_CUDA_FUSED=1). */
void be_ssm_conv_silu(be_ctx *be, const be_tensor *x, be_tensor *tails, const be_weight *w,
                      const be_batch *b, be_tensor *y);

/* Optional (be_can_keep): be_ssm_conv_silu and be_deltanet of a batch of
 * runs (several slots' MTP verify rows, rewind.c) that also keep the state
 * after each row but the last, for a rollback without replay. keep_tails
 * and keep_S hold K rows a slot, K = keep_tails->rows / tails->rows =
 * keep_S->rows / S->rows, and a run has at most K rows: after its row t
 * (t < n_rows - 1) the tail of its slot sl (C rows) is written to rows
 * [(sl*K + t)*C, +C) of keep_tails, and its state (Hv rows) to rows
 * [(sl*K + t)*Hv, +Hv) of keep_S; the results and the final states are
 * those of the plain ops. Where a backend lacks them the caller runs the
 * rows one at a time and copies the states (the CPU and CUDA backends have
 * them). */
bool be_can_keep(be_ctx *be);
void be_ssm_conv_silu_keep(be_ctx *be, const be_tensor *x, be_tensor *tails, const be_weight *w,
                           const be_batch *b, be_tensor *y, be_tensor *keep_tails);
void be_deltanet_keep(be_ctx *be, const be_tensor *qkv, const be_tensor *g, const be_tensor *beta,
                      be_tensor *S, be_tensor *keep_S, int64_t n_k_heads, int64_t n_v_heads,
                      int64_t dk, const be_batch *b, be_tensor *out);

/* The gated delta rule, token by token (MODEL.md §2.5), llama.cpp's fused
 * op, each run on its slot's state. qkv: T x (2*Hk*dk + Hv*dk) with q and
 * k already L2-normed; g, beta: T x Hv; S: Hv rows per slot, slot after
 * slot, element [h][j*dk + i] = S_h[i][j]; out: T x Hv*dk, already scaled
 * by 1/sqrt(dk). Value head h reads key head h % Hk. */
void be_deltanet(be_ctx *be, const be_tensor *qkv, const be_tensor *g, const be_tensor *beta,
                 be_tensor *S, int64_t n_k_heads, int64_t n_v_heads, int64_t dk,
                 const be_batch *b, be_tensor *out);

/* be_deltanet_gates(alpha, dt_bias, a, b_in, g, beta), be_l2_norm(eps, dk)
 * of qkv's q and k columns in place, then be_deltanet(qkv, g, beta, ...):
 * the token-by-token rule from raw gates and un-normed q and k, as one op
 * with the same results (the CUDA backend forms the gates and the norms in
 * the rule's kernel, with Q36_CUDA_FUSED). g and beta (T x Hv) are the
 * gates' room; their contents and qkv's q and k columns afterwards are
 * unspecified. */
void be_deltanet_gated(be_ctx *be, be_tensor *qkv, const be_tensor *alpha, const be_tensor *b_in,
                       const be_weight *dt_bias, const be_weight *a, float eps, be_tensor *g,
                       be_tensor *beta, be_tensor *S, int64_t n_k_heads, int64_t n_v_heads,
                       int64_t dk, const be_batch *b, be_tensor *out);

/* be_deltanet_gated with be_deltanet_keep's kept rows: the rule from raw
 * gates and un-normed q and k, each run's state after each of its rows but
 * the last also written to keep_S (as be_deltanet_keep). The same results
 * as be_deltanet_gates, be_l2_norm and be_deltanet_keep, which backend.c
 * runs where the backend has no op of its own (the CUDA backend: one
 * kernel, with Q36_CUDA_FDN on). Needs be_can_keep. */
void be_deltanet_gated_keep(be_ctx *be, be_tensor *qkv, const be_tensor *alpha,
                            const be_tensor *b_in, const be_weight *dt_bias, const be_weight *a,
                            float eps, be_tensor *g, be_tensor *beta, be_tensor *S,
                            be_tensor *keep_S, int64_t n_k_heads, int64_t n_v_heads, int64_t dk,
                            const be_batch *b, be_tensor *out);

/* The same rule in its chunked form (chunks of 64 tokens, MODEL.md §2.6):
 * matrix products inside a chunk instead of one step per token. Same
 * arguments and results up to float rounding (not bit-identical with
 * be_deltanet, and its bits depend on where chunks start). llama.cpp runs
 * the recurrence for every batch size; q36 uses this only in fast mode. */
void be_deltanet_chunked(be_ctx *be, const be_tensor *qkv, const be_tensor *g,
                         const be_tensor *beta, be_tensor *S, int64_t n_k_heads,
                         int64_t n_v_heads, int64_t dk, const be_batch *b, be_tensor *out);

/* MoE routing per row of logits (T x E): p = softmax(logits); the k largest
 * p in descending order go to sel (i32, T x k, on the device) and their
 * renormalized weights p / max(sum, 2^-14) to w (T x k). */
void be_moe_route(be_ctx *be, const be_tensor *logits, int64_t k, be_tensor *sel, be_tensor *w);
/* ids[r] (i32, rows x 1, on the device) = the column of x's row r (f32)
 * holding its largest value, the lowest such column on ties. NaN is never
 * chosen, except that a row whose first value is NaN gives 0: the result of
 * scanning the row in order for a value above every one before it, as the
 * host's greedy choice does (spec_argmax). A greedy step then reads one id
 * a row instead of the row's logits. */
void be_argmax(be_ctx *be, const be_tensor *x, be_tensor *ids);
/* The greedy choice of each row of x times w (slab 0), where only the
 * choice is wanted: ids[r] = be_argmax's choice in row r of the product
 * with the columns of `ban` (n_ban host ids, ascending; may be NULL) at
 * -inf; or else be_argmax's choice over every column, and then only where
 * that choice is in ban, y's row r holding the product (so the caller can
 * choose again from it). y (rows x w's rows, f32) is scratch: other rows
 * hold nothing defined afterwards. Without a backend entry this is
 * be_matmul then be_argmax; the CPU screens Q8_0 heads (cpu_head.c). */
void be_matmul_argmax(be_ctx *be, const be_weight *w, const be_tensor *x, be_tensor *y,
                      be_tensor *ids, const int32_t *ban, int n_ban);
/* Whether be_matmul_argmax over the head `head` (a GGUF tensor) costs far
 * less than its full product here: a GPU's product (true without a backend
 * entry), the CPU's int8 screen (a Q8_0 head on AVX-512 VNNI), where an
 * AVX2 CPU's nibble level, with a step's exact rows, still reads half the
 * head's bytes and costs about a full step. What the draft vocabulary's
 * default follows (q36_mtp_draft_vocab). */
bool be_head_cheap(const be_ctx *be, const gguf_tensor *head);
/* The k best values of each row of x (f32, rows x n), 1 <= k <=
 * BE_TOPK_MAX: their columns to ids (i32, rows x k) and values to vals
 * (f32, rows x k), on the device, best first: the larger value, the lower
 * column among equal ones (-0 equals +0; -inf is a value like any). NaN
 * is never chosen; a row with fewer than k other values ends with column
 * -1 and value -inf. A sampled step then reads a row's k candidates
 * instead of its logits (smp_sample_top). */
#define BE_TOPK_MAX 64
void be_topk(be_ctx *be, const be_tensor *x, int64_t k, be_tensor *ids, be_tensor *vals);
/* be_topk of x times w (slab 0), where only the k best are wanted: the
 * same ids and values as be_matmul(w, x -> y) then be_topk(y), bit for
 * bit; y (rows x w's rows, f32) is scratch and holds nothing defined
 * afterwards. Without a backend entry it is those two ops; the CPU
 * screens Q8_0 heads (cpu_head.c). */
void be_matmul_topk(be_ctx *be, const be_weight *w, const be_tensor *x, be_tensor *y, int64_t k,
                    be_tensor *ids, be_tensor *vals);
/* out[t] = sum_i w[t][i] * y[t*k+i], products rounded then added in rank
 * order (y: T*k rows). */
void be_moe_combine(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k,
                    be_tensor *out);
/* The MoE output with the shared expert, as one op: be_sigmoid(g, g),
 * be_mul_col(s, g, s), be_moe_combine(y, w, k, out), be_add(out, s, out):
 * out[t] = combine[t] + s[t] * sigmoid(g[t]) with the same results; g (T x
 * 1, the shared expert's gate logits) and s (T x D, its output) are
 * clobbered; out is not s. */
void be_moe_combine_shared(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k,
                           be_tensor *g, be_tensor *s, be_tensor *out);
/* A MoE block's end and the next block's norm as one op: be_moe_combine_shared(y,
 * w, k, g, s, o) (with s NULL: be_moe_combine(y, w, k, o)), then
 * be_add_rms_norm(o, x, wn, eps, group, h), the same results in x and h; o
 * is scratch (a backend that fuses them may leave it unwritten). h is not x,
 * o or s. */
void be_moe_combine_norm(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k,
                         be_tensor *g, be_tensor *s, be_tensor *o, be_tensor *x,
                         const be_weight *wn, float eps, int64_t group, be_tensor *h);
/* An expert block's end with its shared expert, as one op: be_matmul_id(wd,
 * x, sel, ey), be_matmul_glu(wds, g, u, s), be_moe_combine_shared(ey, w,
 * k, sg, s, out) with k = sel->cols, the same results: out[t] = sum_i
 * w[t][i] * (Wd[sel[t][i]] x[t*k+i]) + sigmoid(sg[t]) * (Wds (silu(g[t]) *
 * u[t])). x has T*k rows; g, sg, ey and s are clobbered (ey and s are the
 * unfused ops' scratch). The CUDA backend can run decode rows as one
 * kernel (cuda_moe_down.cu, Q36_CUDA_MOEDOWN=1: measured slower, off). */
void be_moe_down_shared(be_ctx *be, const be_weight *wd, const be_tensor *x, const be_tensor *sel,
                        const be_tensor *w, const be_weight *wds, be_tensor *g, const be_tensor *u,
                        be_tensor *sg, be_tensor *ey, be_tensor *s, be_tensor *out);

/* ----------------------------------------------------------------- passes */

/* The bounds of one forward pass, for a backend that records a pass once
 * and replays the recording (the CUDA backend's graphs, Q36_CUDA_GRAPHS=1;
 * the CPU does nothing). The engine calls be_pass_begin after it has
 * written the pass's ids and batch and before the pass's first op, and
 * be_pass_end after the pass (its be_check). `key` is equal for two passes
 * only when they issue the same ops on the same tensors and views (the
 * same rows, runs, rows asked for, outputs); 0: never record this pass.
 * n_rows: the rows of the pass. Everything that differs between two passes
 * of one key reaches the ops through device tensors (ids, the batch's pos
 * and runs, the MoE choices), never through the ops' host arguments; the
 * host copy of the runs (be_batch.seq) may size launches only where a
 * replaying backend does not need it (cuda_seq.cu). A be_read, be_write,
 * be_save, be_load, be_sync or be_check inside a pass ends the recorded
 * part: what follows it runs op by op. A backend that replays checks that
 * the ops of a replayed pass are the ones it recorded and fails the pass
 * (be_check) when they are not. */
void be_pass_begin(be_ctx *be, uint64_t key, int64_t n_rows);
void be_pass_end(be_ctx *be);

/* Counters of what a backend queued, since the context was made (the CPU:
 * zeros). launches: kernels and device copies queued one at a time;
 * graph_launches: recorded passes replayed (one launch each), running
 * graph_nodes kernels and copies in all; graphs_recorded: passes recorded. */
typedef struct be_stats {
    uint64_t launches, graph_launches, graph_nodes, graphs_recorded;
} be_stats;
void be_stats_get(const be_ctx *be, be_stats *out);

/* -------------------------------------------------------------- profiling */

/* Per-op wall time, a diagnostic (q36_engine_opts.profile). When enabled,
 * every op records its time and a call count into a table keyed by op
 * family (the backend names the rows) and, separately, by the layer kind
 * the model layer last set. Disabled (the default), an op pays one
 * predictable branch. Timing changes no result. */
enum be_layer_kind { BE_LAYER_HEAD, BE_LAYER_DELTANET, BE_LAYER_ATTENTION, BE_LAYER_FFN,
                     BE_LAYER_MTP, BE_LAYER_N };

typedef struct be_prof_row {
    char     name[32];      /* "matmul q4_K", "attention", ... */
    uint64_t calls, ns;
} be_prof_row;

void be_profile_enable(be_ctx *be, int on);
/* What the model layer is running; ops are charged to it. Cheap whether or
 * not profiling is on. */
void be_profile_layer(be_ctx *be, enum be_layer_kind kind);
void be_profile_reset(be_ctx *be);
/* The op rows with calls since the last reset, at most cap of them, in
 * the backend's order; returns how many. */
int  be_profile_ops(const be_ctx *be, be_prof_row *rows, int cap);
/* One row per layer kind, named by be_layer_name. */
void be_profile_layers(const be_ctx *be, be_prof_row rows[BE_LAYER_N]);
const char *be_layer_name(enum be_layer_kind kind);

#endif
