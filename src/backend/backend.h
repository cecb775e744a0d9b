/* backend.h: the device contract of q36 (ARCHITECTURE.md, "Data flow").
 *
 * The model layer (src/model/) owns the order of operations; a backend owns
 * how each operation runs and where the data lives. The model never touches
 * device memory: it creates opaque tensors, calls one function per op, and
 * reads back only what it must (router choices, logits) through be_read.
 *
 * Tensors. A be_tensor is a float32 matrix of `rows` x `cols`, row-major,
 * living on the device for as long as it is not freed. A view (be_view)
 * names a column range of every row of a parent (or a row range with
 * be_rows); views share the parent's memory and its row stride. Views are
 * allocated from a per-context pool that be_views_reset() empties; the
 * model resets it at the start of each forward call, so a view must not be
 * kept across calls. Rows are tokens almost everywhere: a batch of T tokens
 * is a T-row tensor.
 *
 * Weights. be_weight_bind() makes a GGUF tensor usable by the device: the
 * CPU backend keeps a view into the mmap (no copy); a GPU backend uploads.
 * A weight's ne0 is the reduction dimension; ne1 output rows; ne2 slabs
 * (experts).
 *
 * Numerics (MODEL.md §9): every matmul first quantizes each activation row
 * to the weight type's vec_dot_type exactly as ggml's CPU backend does, then
 * takes block dot products; everything else is float32 with ggml's
 * accumulation choices where they matter (double sums in norms and softmax).
 *
 * What the CPU backend reproduces of llama.cpp's x86 CPU run, bit for bit
 * (checked against libggml-cpu by tests/test_ggml_backend.c and by the
 * logits of tests/parity.test.sh): activation quantization; Q8_0 and Q6_K
 * block dots; ggml_vec_dot_f32's order (attention scores, the delta rule);
 * the f32 GEMM's lane order for probabilities x V; RMS norms; the conv;
 * rope with its repeated-product angles; MoE routing. What it does not:
 * ggml's SIMD exp (SiLU, softmax: 27% and 56% of values differ by <= 4
 * ulp), Q4_0/Q4_K/IQ4_NL/MXFP4 weights that llama.cpp repacks into its own
 * interleaved GEMV/GEMM, and the K-quant/f16/bf16 kernels of the quant
 * module (within a rounding bound of ggml's, not equal). Q4_K matmuls run
 * the tile kernels of cpu/cpu_gemm.h (several rows x tokens per call): the
 * same exact integer block sums, another f32 order than the quant module's
 * dot, within the same bound; a row's bits never depend on the batch size.
 * Q8_0 and f32 tiles (cpu/cpu_gemm_q8.h) keep the per-output dot's bits.
 * A backend for another device matches the CPU backend within float
 * tolerance, not bits.
 *
 * Sync. Ops are queued in call order; be_read waits for what was queued
 * before it. be_sync waits for everything. The CPU backend runs each op to
 * completion inside the call, so both are trivial there.
 *
 * Threads: one be_ctx belongs to one thread at a time (it may use its own
 * worker threads inside an op). Errors: functions returning int give 0 or a
 * negative q36_err kind; ops on shapes that do not fit are programming
 * errors of the model layer and assert.
 */
#ifndef Q36_BACKEND_H
#define Q36_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "../gguf/gguf.h"
#include "../util/err.h"

typedef struct be_ctx    be_ctx;
typedef struct be_tensor be_tensor;
typedef struct be_weight be_weight;

/* ------------------------------------------------------------- lifecycle */

/* A CPU backend with n_threads workers in total (1 = the calling thread
 * only; 0 = the number of online CPUs). */
int  be_cpu_new(int n_threads, be_ctx **out, q36_err *err);
void be_free(be_ctx *be);                                  /* accepts NULL */
int  be_n_threads(const be_ctx *be);
const char *be_name(const be_ctx *be);                     /* "cpu" */

/* Waits for every queued op. */
void be_sync(be_ctx *be);

/* ---------------------------------------------------------------- tensors */

/* A new rows x cols float32 tensor, zero-filled. NULL when out of memory. */
be_tensor *be_tensor_new(be_ctx *be, int64_t rows, int64_t cols);
/* A rows x cols tensor of f16 storage (for K/V caches); only be_kv_store
 * and be_attention read or write it; be_read/be_write convert. */
be_tensor *be_tensor_new_f16(be_ctx *be, int64_t rows, int64_t cols);
void be_tensor_free(be_ctx *be, be_tensor *t);             /* accepts NULL; not views */
int64_t be_rows_of(const be_tensor *t);
int64_t be_cols_of(const be_tensor *t);
/* Bytes the tensor occupies on the device (views: 0). */
uint64_t be_tensor_bytes(const be_tensor *t);

/* Column range [col0, col0+ncols) of every row of t. */
be_tensor *be_view(be_ctx *be, be_tensor *t, int64_t col0, int64_t ncols);
/* Row range [row0, row0+nrows) of t, all columns. */
be_tensor *be_rows(be_ctx *be, be_tensor *t, int64_t row0, int64_t nrows);
/* Drops every view made since the last reset. */
void be_views_reset(be_ctx *be);

/* Host <-> device copies of rows [row0, row0+nrows), all columns of the
 * tensor (or view); host data is packed rows of be_cols_of(t) floats. */
void be_write(be_ctx *be, be_tensor *t, int64_t row0, int64_t nrows, const float *src);
void be_read(be_ctx *be, const be_tensor *t, int64_t row0, int64_t nrows, float *dst);
/* Raw bytes of a whole non-view tensor (snapshots): be_tensor_bytes(t)
 * bytes starting at row 0; `nrows` limits the copy to the first rows. */
void be_save(be_ctx *be, const be_tensor *t, int64_t nrows, void *dst);
void be_load(be_ctx *be, be_tensor *t, int64_t nrows, const void *src);
void be_zero(be_ctx *be, be_tensor *t);
/* dst = src (same shape). */
void be_copy(be_ctx *be, const be_tensor *src, be_tensor *dst);

/* ---------------------------------------------------------------- weights */

/* Binds a GGUF tensor; NULL for t == NULL. Q36_E_UNSUP when the type has no
 * dot product or dequantizer. Bound weights live until be_free. */
int be_weight_bind(be_ctx *be, const gguf_tensor *t, be_weight **out, q36_err *err);
const gguf_tensor *be_weight_tensor(const be_weight *w);

/* out[r] = dequantized rows ids[r] of w (a 2-D weight, ne0 = cols of out). */
void be_get_rows(be_ctx *be, const be_weight *w, const int32_t *ids, int64_t n, be_tensor *out);

/* y[r][n] = sum_k W[slab][n][k] * x[r][k] for every row r of x, with x's
 * rows quantized to W's vec_dot_type first. x: R x ne0, y: R x ne1. */
void be_matmul(be_ctx *be, const be_weight *w, int64_t slab, const be_tensor *x, be_tensor *y);

/* be_matmul(be, w[i], 0, x, y[i]) for i < n (n >= 1), the same bits, as
 * one operation: x is quantized once for the weights that share its
 * activation type, and their rows are one stream of work (one-token
 * decode: one parallel region instead of n, longer runs per thread). */
void be_matmul_n(be_ctx *be, int n, const be_weight *const *w, const be_tensor *x, be_tensor *const *y);

/* Expert matmul: for token t < n_tok and rank i < k, with e = sel[t*k+i]:
 * y[t*k+i] = W[e] · x[t] when x has n_tok rows, or W[e] · x[t*k+i] when it
 * has n_tok*k rows. sel is host memory. */
void be_matmul_id(be_ctx *be, const be_weight *w, const be_tensor *x,
                  const int32_t *sel, int64_t n_tok, int64_t k, be_tensor *y);

/* ------------------------------------------------------------ elementwise */

/* Row-wise RMS norm over groups of `group` columns (cols % group == 0):
 * y = x * (1/sqrtf(mean(x^2) + eps)) [* w], sum of squares in double.
 * w (optional, F32 weight of `group` elements) multiplies after. x may be y. */
void be_rms_norm(be_ctx *be, const be_tensor *x, const be_weight *w, float eps,
                 int64_t group, be_tensor *y);
/* ggml's L2 norm form: rms norm with eps/group, then times 1/sqrtf(group). */
void be_l2_norm(be_ctx *be, const be_tensor *x, float eps, int64_t group, be_tensor *y);

void be_add(be_ctx *be, const be_tensor *a, const be_tensor *b, be_tensor *y);    /* y = a + b */
void be_mul(be_ctx *be, const be_tensor *a, const be_tensor *b, be_tensor *y);    /* y = a * b */
/* y[r][c] = a[r][c] * s[r][0] (s has one column). */
void be_mul_col(be_ctx *be, const be_tensor *a, const be_tensor *s, be_tensor *y);
void be_silu(be_ctx *be, const be_tensor *x, be_tensor *y);                       /* x/(1+e^-x) */
void be_sigmoid(be_ctx *be, const be_tensor *x, be_tensor *y);
/* y = silu(g) * u */
void be_swiglu(be_ctx *be, const be_tensor *g, const be_tensor *u, be_tensor *y);
/* y = silu(z) * x  (DeltaNet gated norm tail; x is already rms-normed). */
#define be_gate_silu(be, x, z, y) be_swiglu((be), (z), (x), (y))

/* DeltaNet decay and beta (MODEL.md §2.4), per row, Hv columns:
 * g = softplus(alpha + dt_bias) * a;  beta = sigmoid(b). In place allowed. */
void be_gdn_gates(be_ctx *be, const be_tensor *alpha, const be_weight *dt_bias,
                  const be_weight *a, const be_tensor *b, be_tensor *g, be_tensor *beta);

/* --------------------------------------------------------------- sequence */

/* Partial NeoX rope of every head of x (cols = n_head * head_dim) for rows
 * at positions pos0, pos0+1, ...: pairs (i, i + n_rot/2), i < n_rot/2, with
 * theta = p * base^(-2i/n_rot) by repeated float multiplication, selected
 * by the interleaved multi-section rule for text positions (p, p, p, 0). */
void be_rope(be_ctx *be, be_tensor *x, int64_t head_dim, int64_t n_rot,
             const int32_t sections[4], float base, int64_t pos0);

/* Writes the rows of k and v (T x Hkv*hd) at cache rows [pos0, pos0+T). */
void be_kv_store(be_ctx *be, be_tensor *kc, be_tensor *vc, const be_tensor *k,
                 const be_tensor *v, int64_t pos0);

/* Causal attention of T query rows at positions pos0.. over cache rows
 * [0, pos0+T): q is T x Hq*hd, out T x Hq*hd; query head h reads KV head
 * h / (Hq/Hkv). Scores k·q in f32 (f16 caches: q rounded to f16 first),
 * times scale, softmax with max subtraction and a double sum, then the
 * probability-weighted sum of V (f16 V cache: probabilities rounded). */
void be_attention(be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc,
                  int64_t pos0, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                  float scale, be_tensor *out);
/* The scratch be_attention takes, at most, for calls of up to n_batch query
 * rows over up to n_ctx cache positions, in bytes over n_threads threads
 * (0: all online CPUs, as be_cpu_new); 0 for a bad shape. The memory plan
 * counts it; be_attention_reserve takes it up front (Q36_E_NOMEM when it
 * cannot), after which be_attention allocates nothing for such calls. */
uint64_t be_attention_scratch_bytes(int64_t n_ctx, int64_t n_batch, int64_t n_head,
                                    int64_t n_head_kv, int64_t head_dim, int n_threads);
int be_attention_reserve(be_ctx *be, int64_t n_ctx, int64_t n_batch, int64_t n_head,
                         int64_t n_head_kv, int64_t head_dim, q36_err *err);

/* Depthwise causal conv of kernel Kc over rows of x (T x C), with a tail of
 * the Kc-1 previous raw rows per channel (tail: C x (Kc-1), oldest first);
 * w is the F32 weight {Kc, C}. The tail is updated with the last raw rows. */
void be_ssm_conv(be_ctx *be, const be_tensor *x, be_tensor *tail, const be_weight *w,
                 be_tensor *y);

/* The gated delta rule, token by token (MODEL.md §2.5), llama.cpp's fused
 * op. qkv: T x (2*Hk*dk + Hv*dk) with q and k already L2-normed; g, beta:
 * T x Hv; S: Hv x (dk*dk), element [h][j*dk + i] = S_h[i][j]; out: T x Hv*dk,
 * already scaled by 1/sqrt(dk). Value head h reads key head h % Hk. */
void be_deltanet(be_ctx *be, const be_tensor *qkv, const be_tensor *g, const be_tensor *beta,
                 be_tensor *S, int64_t n_k_heads, int64_t n_v_heads, int64_t dk,
                 be_tensor *out);

/* The same rule in its chunked form (chunks of 64 tokens, MODEL.md §2.6):
 * matrix products inside a chunk instead of one step per token. Same
 * arguments and results up to float rounding (not bit-identical with
 * be_deltanet, and its bits depend on where chunks start). llama.cpp runs
 * the recurrence for every batch size; q36 uses this only in fast mode. */
void be_deltanet_chunked(be_ctx *be, const be_tensor *qkv, const be_tensor *g,
                         const be_tensor *beta, be_tensor *S, int64_t n_k_heads,
                         int64_t n_v_heads, int64_t dk, be_tensor *out);

/* MoE routing per row of logits (T x E): p = softmax(logits); the k largest
 * p in descending order go to sel (host, T*k) and their renormalized
 * weights p / max(sum, 2^-14) to w (T x k). */
void be_moe_route(be_ctx *be, const be_tensor *logits, int64_t k, int32_t *sel, be_tensor *w);
/* out[t] = sum_i w[t][i] * y[t*k+i], products rounded then added in rank
 * order (y: T*k rows). */
void be_moe_combine(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k,
                    be_tensor *out);

/* -------------------------------------------------------------- profiling */

/* Per-op wall time, a diagnostic (q36_session_opts.profile). When enabled,
 * every op records CLOCK_MONOTONIC time around its whole run (its parallel
 * for included) and a call count into a table keyed by op family (matmuls
 * by weight type) and, separately, by the layer kind the model layer last
 * set. Disabled (the default), an op pays one predictable branch. Timing
 * changes no result. */
enum be_prof_op {
    BE_PROF_GET_ROWS, BE_PROF_COPY, BE_PROF_IO, BE_PROF_RMS_NORM, BE_PROF_L2_NORM,
    BE_PROF_ADD_MUL, BE_PROF_ACT, BE_PROF_GDN_GATES, BE_PROF_ROPE, BE_PROF_KV_STORE,
    BE_PROF_ATTENTION, BE_PROF_CONV, BE_PROF_DELTA, BE_PROF_DELTA_CHUNKED, BE_PROF_ROUTE,
    BE_PROF_COMBINE,
    BE_PROF_FIXED,                 /* then matmul rows, then expert matmul rows */
};
#define BE_PROF_NTYPES 48          /* weight storage types (quant types.h QT_COUNT fits) */
#define BE_PROF_MATMUL(type) (BE_PROF_FIXED + (type))
#define BE_PROF_MATMUL_ID(type) (BE_PROF_FIXED + BE_PROF_NTYPES + (type))
#define BE_PROF_ROWS (BE_PROF_FIXED + 2 * BE_PROF_NTYPES)

/* What the model layer is running; ops are charged to it. */
enum be_layer_kind { BE_LAYER_HEAD, BE_LAYER_DELTANET, BE_LAYER_ATTENTION, BE_LAYER_FFN,
                     BE_LAYER_N };

typedef struct be_profile {
    uint64_t calls[BE_PROF_ROWS];
    uint64_t ns[BE_PROF_ROWS];
    uint64_t layer_ns[BE_LAYER_N];
    uint64_t layer_calls[BE_LAYER_N];
} be_profile;

void be_profile_enable(be_ctx *be, int on);
/* Cheap whether or not profiling is on: a store. */
void be_profile_layer(be_ctx *be, enum be_layer_kind kind);
/* The table since the last reset; valid until be_free. */
const be_profile *be_profile_get(const be_ctx *be);
void be_profile_reset(be_ctx *be);
/* "matmul q4_K", "attention", ... for a row of the table; layer names. */
void be_profile_op_name(int row, char *buf, size_t cap);
const char *be_layer_name(enum be_layer_kind kind);

#endif
