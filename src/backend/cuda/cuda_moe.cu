/* cuda_moe.cu: the CUDA backend's grouped expert products for prompt
 * batches (be_matmul_id of at least MG_MIN_ROWS (token, rank) rows, when
 * fast mode: cuda_moe.h). The matrix-vector kernel of
 * cuda_matmul.cu reads a whole expert weight row for every (token, rank)
 * row, so a prompt reads each expert's weights once per token routed to
 * it; here each expert's rows share its weights, tile by tile.
 *
 * All on the device, no host sync (the routing stays in the selection
 * tensor):
 *  1. count: rows per expert (atomic adds);
 *  2. scan (one thread): each expert's first row in the sorted order
 *     (off), its first tile of MG_BM rows (toff), a cursor;
 *  3. scatter: perm[] lists the rows q = t*k + i expert after expert (the
 *     order inside an expert is whatever the atomics gave: each row's
 *     result does not depend on it); batches of up to MG_ROUTE_ONE rows
 *     run 1-3 in one block (k_mg_route);
 *  4. k_moe_gemm, grid (tile slots, output blocks of MG_BN): block x finds
 *     its expert by a binary search of toff (slots past the last tile
 *     return), stages MG_BK columns at a time of its (at most) MG_BM rows
 *     of x and of MG_BN dequantized weight rows in shared memory, and each
 *     thread accumulates a 4 x 4 tile of outputs in f32, in k order.
 * Results: each output a sequential f32 sum over k of the CPU's weight
 * values times the f32 activations; or, with Q36_CUDA_MOEGEMM=2
 * (k_moe_gemm_tc), tensor-core sums of both rounded to f16.
 *
 * As in cuda_chunk.cu, the kernels are phase functions that also run on
 * the host: cuda_moe_emulate checks their arithmetic on the CPU, with the
 * weight dequantized there by the quant module (deq8's values). */
#include "cuda.h"
#include "cuda_deq.h"
#include "cuda_moe.h"
#include "cuda_moe_tile.h"

#include <assert.h>
#include <mma.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

extern "C" int cuda_moe_mode(const be_shape *s)
{
    if (!cuda_fast_path(s, "Q36_CUDA_MOEGEMM"))
        return 0;
    if (cuda_env_is("Q36_CUDA_MOEGEMM", "1"))
        return MG_MODE_F32;
    if (cuda_env_is("Q36_CUDA_MOEGEMM", "2"))
        return MG_MODE_TC;
    return cuda_env_is("Q36_CUDA_MOEGEMM", "3") ? MG_MODE_PRE : MG_MODE_AUTO;
}

/* Dequantizers of 8 weights (row e*N + n, columns i0..i0+7, zero past K):
 * the device's deq8 on the block format, or the host's dequantized rows. */
template <int T> struct mg_deq_dev {
    HD void operator()(const mg_args &a, int64_t row, int64_t i0, float v[8]) const
    {
#ifdef __CUDA_ARCH__
        deq8<T>(a.W + (uint64_t)row * a.rb, i0, a.K, v);
#else
        (void)a; (void)row; (void)i0;
        for (int j = 0; j < 8; j++)
            v[j] = NAN;          /* never run: the host uses mg_deq_host */
#endif
    }
};
struct mg_deq_host {
    HD void operator()(const mg_args &a, int64_t row, int64_t i0, float v[8]) const
    {
        for (int j = 0; j < 8; j++)
            v[j] = i0 + j < a.K ? a.Wf[row * a.K + i0 + j] : 0.0f;
    }
};

/* x at column kcol of the tile's row m (0 past its rows or K) */
HD float mg_xval(const mg_args &a, const mg_tile &t, int m, int64_t kcol)
{
    if (m >= t.rows || kcol >= a.K)
        return 0.0f;
    const int64_t q = a.perm[t.p0 + m];
    return a.x[(a.x_per_tok ? q / a.k : q) * a.ldx + kcol];
}

/* Phase 1 of a k step: columns k0..k0+MG_BK of the tile's x rows (Xs[kk][m])
 * and weight rows (Ws[kk][n]); zero past the rows, outputs and K. */
template <class D>
HD void mg_load(const mg_args &a, const D &deq, const mg_tile &t, int64_t k0, int tid, int nthr,
                float *sm)
{
    float *Xs = sm, *Ws = sm + MG_BK * MG_LX;
    for (int e = tid; e < MG_BM * MG_BK; e += nthr)
        Xs[e % MG_BK * MG_LX + e / MG_BK] = mg_xval(a, t, e / MG_BK, k0 + e % MG_BK);
    for (int e = tid; e < MG_BN * (MG_BK / 8); e += nthr) {
        const int n = e / (MG_BK / 8), g = e % (MG_BK / 8);
        float v[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
        if (t.n0 + n < a.N)
            deq(a, t.e * a.N + t.n0 + n, k0 + 8 * g, v);
        for (int j = 0; j < 8; j++)
            Ws[(8 * g + j) * MG_LW + n] = v[j];
    }
}

/* Phase 2 of a k step: thread tid's 4 x 4 outputs (rows 4 (tid / 16) ..,
 * outputs 4 (tid % 16) ..) gain the staged columns, in k order. */
HD void mg_mma(const float *sm, int tid, float acc[16])
{
    const float *Xs = sm, *Ws = sm + MG_BK * MG_LX;
    const int m0 = tid / 16 * 4, n0 = tid % 16 * 4;
    for (int kk = 0; kk < MG_BK; kk++) {
        float xv[4], wv[4];
        for (int r = 0; r < 4; r++) {
            xv[r] = Xs[kk * MG_LX + m0 + r];
            wv[r] = Ws[kk * MG_LW + n0 + r];
        }
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 4; c++)
                acc[r * 4 + c] += xv[r] * wv[c];
    }
}

HD void mg_store(const mg_args &a, const mg_tile &t, int tid, const float acc[16])
{
    const int m0 = tid / 16 * 4, n0 = tid % 16 * 4;
    for (int r = 0; r < 4; r++) {
        if (m0 + r >= t.rows)
            continue;
        const int64_t q = a.perm[t.p0 + m0 + r];
        for (int c = 0; c < 4; c++)
            if (t.n0 + n0 + c < a.N)
                a.y[q * a.ldy + t.n0 + n0 + c] = acc[r * 4 + c];
    }
}

/* ---------------------------------------------------------------- kernels */

__global__ void k_mg_count(mg_args a)
{
    cuda_pdl_enter();
    for (int64_t q = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; q < a.Q;
         q += (int64_t)gridDim.x * blockDim.x)
        mg_count(a, q);
}

__global__ void k_mg_scan(mg_args a)
{
    cuda_pdl_enter();
    if (threadIdx.x == 0 && blockIdx.x == 0)
        mg_scan(a);
}

/* The whole routing in one block, for batches of up to MG_ROUTE_ONE rows
 * (decode steps of several slots): the counts zeroed, counted, scanned and
 * scattered with a barrier between, one launch instead of a memset and
 * three */
#define MG_ROUTE_ONE 4096
__global__ void __launch_bounds__(1024) k_mg_route(mg_args a)
{
    cuda_pdl_enter();
    for (int64_t e = threadIdx.x; e < a.E; e += blockDim.x)
        a.cnt[e] = 0;
    __syncthreads();
    for (int64_t q = threadIdx.x; q < a.Q; q += blockDim.x)
        mg_count(a, q);
    __syncthreads();
    if (threadIdx.x == 0)
        mg_scan(a);
    __syncthreads();
    for (int64_t q = threadIdx.x; q < a.Q; q += blockDim.x)
        mg_scatter(a, q);
}

__global__ void k_mg_scatter(mg_args a)
{
    cuda_pdl_enter();
    for (int64_t q = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; q < a.Q;
         q += (int64_t)gridDim.x * blockDim.x)
        mg_scatter(a, q);
}

template <int T>
__global__ void __launch_bounds__(MG_THREADS) k_moe_gemm(mg_args a)
{
    cuda_pdl_enter();
    __shared__ float sm[MG_SMEM];
    const mg_tile t = mg_tile_of(a, (int)blockIdx.x, (int)blockIdx.y);
    if (!t.rows)
        return;
    const int tid = threadIdx.x;
    const mg_deq_dev<T> deq;
    float acc[16];
    #pragma unroll
    for (int i = 0; i < 16; i++)
        acc[i] = 0.0f;
    for (int64_t k0 = 0; k0 < a.K; k0 += MG_BK) {
        mg_load(a, deq, t, k0, tid, MG_THREADS, sm);
        __syncthreads();
        mg_mma(sm, tid, acc);
        __syncthreads();
    }
    mg_store(a, t, tid, acc);
}

/* The same row tiles with their products on tensor cores (Q36_CUDA_MOEGEMM=2,
 * the default in fast mode): a block computes MG_BM rows by TC_BN outputs,
 * MG_BK columns a stage. Each stage's x rows (f32, gathered through the
 * tile's row offsets xr) and weight rows (dequantized by deq8) are rounded
 * to f16 into one of two shared buffers (Xh[m][kk], Wh[n][kk]); while the
 * warps multiply one buffer, the next stage's values are already loaded
 * into registers, so the loads and the dequantization overlap the tensor
 * cores, and one barrier a stage suffices. Warp w multiplies rows
 * 32 (w % 2) .. + 32 by outputs 32 (w / 2) .. + 32 as 2 x 2 WMMA 16 x 16
 * accumulators in f32 (A = Xh row-major, B = W^T: Wh read column-major).
 * At the end the accumulators go through shared memory (Cs, over the
 * stage buffers) to the rows' outputs, coalesced along n. VEC: x rows are
 * read four floats at a time (K, ldx multiples of 4, x 16-byte aligned).
 * Device only: the host emulation runs the f32 tiles, which share
 * mg_tile_of and the routing. */
#define TC_LH      (MG_BK + 8)                       /* f16 pitch: rows 16-byte aligned */
#define TC_XH      (MG_BM * TC_LH)                   /* halves of one x stage */
#define TC_WH      (TC_BN * TC_LH)
#define TC_STAGES  (2 * (TC_XH + TC_WH) * 2)         /* bytes of both stage buffers */
#define TC_SMEM    (TC_STAGES > TC_CS ? TC_STAGES : TC_CS)
#define TC_XV      (MG_BM * MG_BK / 4 / MG_THREADS)  /* float4 of x a thread a stage: 2 */
#define TC_WV      (TC_BN * MG_BK / 8 / MG_THREADS)  /* deq8 groups a thread a stage: 2 */

template <int T, bool VEC>
static __device__ __forceinline__ void tc_fetch(const mg_args &a, int64_t e, int64_t n0,
                                                const int64_t *xr, int64_t k0, int tid,
                                                float4 xv[TC_XV], float wv[TC_WV][8])
{
    #pragma unroll
    for (int i = 0; i < TC_XV; i++) {
        const int idx = tid + i * MG_THREADS, m = idx / (MG_BK / 4), c = 4 * (idx % (MG_BK / 4));
        const int64_t o = xr[m];
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (o >= 0) {
            if (VEC) {
                if (k0 + c < a.K)
                    v = *(const float4 *)(a.x + o + k0 + c);
            } else {
                float t[4];
                #pragma unroll
                for (int j = 0; j < 4; j++)
                    t[j] = k0 + c + j < a.K ? a.x[o + k0 + c + j] : 0.0f;
                v = make_float4(t[0], t[1], t[2], t[3]);
            }
        }
        xv[i] = v;
    }
    #pragma unroll
    for (int i = 0; i < TC_WV; i++) {
        const int idx = tid + i * MG_THREADS, n = idx / (MG_BK / 8), g = idx % (MG_BK / 8);
        #pragma unroll
        for (int j = 0; j < 8; j++)
            wv[i][j] = 0.0f;
        if (n0 + n < a.N && k0 + 8 * g < a.K)
            deq8<T>(a.W + (uint64_t)(e * a.N + n0 + n) * a.rb, k0 + 8 * g, a.K, wv[i]);
    }
}

static __device__ __forceinline__ void tc_stage(int tid, const float4 xv[TC_XV],
                                                const float wv[TC_WV][8], __half *Xh, __half *Wh)
{
    #pragma unroll
    for (int i = 0; i < TC_XV; i++) {
        const int idx = tid + i * MG_THREADS, m = idx / (MG_BK / 4), c = 4 * (idx % (MG_BK / 4));
        __half2 *d = (__half2 *)(Xh + m * TC_LH + c);
        d[0] = __floats2half2_rn(xv[i].x, xv[i].y);
        d[1] = __floats2half2_rn(xv[i].z, xv[i].w);
    }
    #pragma unroll
    for (int i = 0; i < TC_WV; i++) {
        const int idx = tid + i * MG_THREADS, n = idx / (MG_BK / 8), g = idx % (MG_BK / 8);
        *(uint4 *)(Wh + n * TC_LH + 8 * g) = cuda_half8(wv[i]);
    }
}

template <int T, bool VEC>
__global__ void __launch_bounds__(MG_THREADS) k_moe_gemm_tc(mg_args a)
{
    cuda_pdl_enter();
    __shared__ __align__(128) unsigned char smem[TC_SMEM];
    __shared__ int64_t xr[MG_BM];      /* x row offsets; -1 past the tile's rows */
    const mg_tile t = mg_tile_of(a, (int)blockIdx.x, 0);
    if (!t.rows)
        return;
    const int64_t n0 = (int64_t)blockIdx.y * TC_BN;
    const int tid = threadIdx.x;
    for (int m = tid; m < MG_BM; m += MG_THREADS) {
        const int64_t q = m < t.rows ? a.perm[t.p0 + m] : -1;
        xr[m] = q < 0 ? -1 : (a.x_per_tok ? q / a.k : q) * a.ldx;
    }
    __half *Xh = (__half *)smem, *Wh = Xh + 2 * TC_XH;
    tc_acc acc[2][2];
    tc_zero<2>(acc);
    __syncthreads();
    float4 xv[TC_XV];
    float wv[TC_WV][8];
    tc_fetch<T, VEC>(a, t.e, n0, xr, 0, tid, xv, wv);
    int buf = 0;
    for (int64_t k0 = 0; k0 < a.K; k0 += MG_BK, buf ^= 1) {
        __half *xs = Xh + buf * TC_XH, *ws = Wh + buf * TC_WH;
        tc_stage(tid, xv, wv, xs, ws);
        __syncthreads();
        if (k0 + MG_BK < a.K)
            tc_fetch<T, VEC>(a, t.e, n0, xr, k0 + MG_BK, tid, xv, wv);
        tc_mma<MG_BK, TC_LH, 2>(acc, xs, ws, tid);
    }
    __syncthreads();                   /* the stage buffers become Cs */
    tc_store<2>(a, t, n0, acc, (float *)smem, tid);
}

/* ------------------------------------------------------------------ the op */

static size_t scratch_ints(int64_t Q, int64_t E) { return (size_t)(4 * E + 2 + Q); }

static void args_scratch(mg_args *a, int32_t *base)
{
    a->cnt = base;
    a->off = a->cnt + a->E;
    a->toff = a->off + a->E + 1;
    a->cur = a->toff + a->E + 1;
    a->perm = a->cur + a->E;
}

/* The arguments but the weight (W, rb on the device; Wf on the host). */
static mg_args mg_make(int64_t K, int64_t N, int64_t E, const float *x, int64_t ldx, bool per_tok,
                       const int32_t *sel, int64_t ldsel, int64_t k, int64_t Q, float *y,
                       int64_t ldy, int32_t *scratch)
{
    mg_args a;
    memset(&a, 0, sizeof a);
    a.K = K;
    a.N = N;
    a.E = E;
    a.x = x;
    a.ldx = ldx;
    a.x_per_tok = per_tok;
    a.sel = sel;
    a.ldsel = ldsel;
    a.k = k;
    a.Q = Q;
    a.y = y;
    a.ldy = ldy;
    a.bm = MG_BM;
    args_scratch(&a, scratch);
    return a;
}

/* tile slots: every expert's rows in tiles of bm, at most */
static int64_t tile_slots(int64_t Q, int64_t E, int64_t bm = MG_BM)
{
    const int64_t used = E < Q ? E : Q;
    return Q / bm + used;
}

/* (the f16 rows and weight slabs are not counted: reserve_pre takes them
 * only from memory still free) */
size_t cuda_moe_scratch_bytes(const be_shape *s)
{
    if (!cuda_moe_mode(s) || !s->n_expert)
        return 0;
    return scratch_ints(s->n_rows * s->n_expert_used, s->n_expert) * sizeof(int32_t);
}

/* the routing's ints */
static int reserve_ints(be_ctx *be, const be_shape *s, q36_err *err)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const size_t need = scratch_ints(s->n_rows * s->n_expert_used, s->n_expert);
    if (need <= c->moe_ints)
        return 0;
    int32_t *p = NULL;
    if (cudaMalloc(&p, need * sizeof(int32_t)) != cudaSuccess) {
        cudaGetLastError();
        return q36_err_set(err, Q36_E_NOMEM, "cuda backend: cannot reserve %.1f KiB for the "
                           "grouped expert products (fast mode) on %s",
                           need * 4.0 / 1024.0, c->dev_name);
    }
    cudaFree(c->moe);
    c->moe = p;
    c->moe_ints = need;
    return 0;
}

/* cuda_moe_pre.cu's f16 rows and weight slabs, when the mode can take
 * them for batches of this shape (and the device gives its kernel the
 * shared memory it asks). They are optional, so not in the memory plan
 * (be_scratch_bytes): taken only when MG_PRE_SPARE bytes stay free after
 * them (the engine reserves after its K/V and states; cuBLAS' workspace,
 * graphs and device checkpoints come later), else that path is not taken
 * and the products run k_moe_gemm_tc. */
#define MG_PRE_SPARE ((size_t)1 << 30)
static void reserve_pre(be_ctx *be, const be_shape *s)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const size_t need = cuda_moe_pre_halves(s, c->moegemm), bytes = need * sizeof(__half);
    size_t fr = 0, tot = 0;
    if (!need)
        return;
    /* the kernel's shared memory at every reserve: Q36_CUDA_MOEBN, read at
     * each, may pick the other width (without it the path is not taken) */
    if (c->moe_mma && !cuda_moe_mma_ready(c))
        c->moe_mma = false;            /* the WMMA tiles, which ask less */
    if (c->moe_wg && (!c->moe_mma || !cuda_moe_wg_ready(c)))
        c->moe_wg = false;             /* mma.sync */
    if (c->moe_wq && (!c->moe_wg || !cuda_moe_wq_ready(c)))
        c->moe_wq = false;             /* f16 weights */
    if (!cuda_moe_pre_ready(c)) {
        cudaFree(c->moeh);
        c->moeh = NULL;
        c->moeh_halves = 0;
        return;
    }
    if (need <= c->moeh_halves)
        return;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess || fr < bytes + MG_PRE_SPARE) {
        cudaGetLastError();
        return;
    }
    __half *p = NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        cudaGetLastError();
        return;
    }
    cudaFree(c->moeh);
    c->moeh = p;
    c->moeh_halves = need;
}

int cuda_moe_reserve(be_ctx *be, const be_shape *s, q36_err *err)
{
    if (!cuda_ctx_of(be)->moegemm || !s->n_expert)
        return 0;
    const int rc = reserve_ints(be, s, err);
    if (!rc)
        reserve_pre(be, s);
    return rc;
}

/* count, scan, scatter: a's routing scratch filled on the stream; false
 * when a launch failed (the context's error is set) */
static bool route(be_ctx *be, const mg_args &a)
{
    cuda_ctx *c = cuda_ctx_of(be);
    /* the scratch's routing when it is this selection's (cuda.h: routed) */
    if (c->routed.valid && c->routed.sel == a.sel && c->routed.ldsel == a.ldsel &&
        c->routed.k == a.k && c->routed.Q == a.Q && c->routed.E == a.E && c->routed.bm == a.bm)
        return true;
    c->routed.valid = false;
    cudaStream_t st = c->stream;
    if (a.Q <= MG_ROUTE_ONE) {
        cuda_launch(k_mg_route, 1, 1024, 0, st, a);
    } else {
        if (!CUDA_OK(be, cudaMemsetAsync(a.cnt, 0, sizeof(int32_t) * (size_t)a.E, st)))
            return false;
        cuda_launch(k_mg_count, cuda_blocks(a.Q, 256), 256, 0, st, a);
        cuda_launch(k_mg_scan, 1, 32, 0, st, a);
        cuda_launch(k_mg_scatter, cuda_blocks(a.Q, 256), 256, 0, st, a);
    }
    if (!CUDA_LAUNCHED(be, "k_mg_count/scan/scatter"))
        return false;
    c->routed.sel = a.sel;
    c->routed.ldsel = a.ldsel;
    c->routed.k = a.k;
    c->routed.Q = a.Q;
    c->routed.E = a.E;
    c->routed.bm = a.bm;
    c->routed.valid = c->route_keep;
    return true;
}

bool cuda_moe_sort(be_ctx *be, const be_tensor *sel, int64_t E, mg_args *a)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const int64_t T = sel->rows, k = sel->cols, Q = T * k;
    if (!c->moe || scratch_ints(Q, E) > c->moe_ints)
        return false;
    *a = mg_make(0, 0, E, NULL, 0, 0, (const int32_t *)sel->data, sel->ld, k, Q, NULL, 0, c->moe);
    return route(be, *a);
}

/* whether the f16 slabs (cuda_moe_pre.cu) are the mode's choice for Q
 * rows over E experts */
static bool pre_mode(const cuda_ctx *c, int64_t Q, int64_t E)
{
    return c->moegemm == MG_MODE_PRE || (c->moegemm == MG_MODE_AUTO && Q >= (int64_t)MG_PRE_ROWS * E);
}

bool cuda_moe_gemm_glu(be_ctx *be, const be_weight *wg, const be_weight *wu, const be_tensor *x,
                       const be_tensor *sel, be_tensor *y)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const int64_t K = (int64_t)wg->t->ne[0], N = (int64_t)wg->t->ne[1], E = (int64_t)wg->t->ne[2];
    const int64_t T = sel->rows, k = sel->cols, Q = T * k;
    if (!c->moe_mma || !cuda_moe_grouped(Q, E, cuda_moe_rows(c, wg)) || !pre_mode(c, Q, E) ||
        !cuda_type_native(wg->type) || !cuda_type_native(wu->type) ||
        (int64_t)wu->t->ne[0] != K || (int64_t)wu->t->ne[1] != N || (int64_t)wu->t->ne[2] != E ||
        scratch_ints(Q, E) > c->moe_ints)
        return false;
    mg_args a = mg_make(K, N, E, (const float *)x->data, x->ld, x->rows == T && k > 1,
                        (const int32_t *)sel->data, sel->ld, k, Q, (float *)y->data, y->ld, c->moe);
    a.bm = MM_BM;
    const int64_t tiles = tile_slots(Q, E, MM_BM);
    if (!cuda_moe_pre_fits(c, &a, tiles))
        return false;
    /* both weights' kept f16 copies (Q36_CUDA_F16KEEP); else Q4_K weights
     * in their blocks (cuda_moe_wq.cu; first with Q36_CUDA_MOEWQ=1); else
     * the three ops */
    const bool wq = cuda_moe_wq_takes(c, wg) && cuda_moe_wq_takes(c, wu) &&
                    wg->row_bytes == wu->row_bytes;
    const __half *kg = NULL, *ku = NULL;
    if (!wq || !c->moe_wq_first) {
        kg = cuda_f16_kept(be, wg->type, (const uint8_t *)wg->data, wg->row_bytes, K, E * N);
        ku = kg ? cuda_f16_kept(be, wu->type, (const uint8_t *)wu->data, wu->row_bytes, K, E * N) : NULL;
        if (be->err.kind)
            return true;               /* a copy's dequantization failed */
    }
    if (!ku && wq) {
        a.rb = wg->row_bytes;
        const __half *xh = route(be, a) ? cuda_moe_xh(be, &a) : NULL;
        if (xh)
            cuda_moe_wq(be, &a, xh, (const uint8_t *)wg->data, (const uint8_t *)wu->data, tiles);
        return true;
    }
    if (!ku)
        return false;
    if (route(be, a))
        cuda_moe_glu_pre(be, &a, kg, ku, tiles);
    return true;
}

bool cuda_moe_gemm(be_ctx *be, const be_weight *w, const be_tensor *x, const be_tensor *sel,
                   be_tensor *y)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const int64_t K = (int64_t)w->t->ne[0], N = (int64_t)w->t->ne[1], E = (int64_t)w->t->ne[2];
    const int64_t T = sel->rows, k = sel->cols, Q = T * k;
    if (!cuda_moe_grouped(Q, E, cuda_moe_rows(c, w)) || !cuda_type_native(w->type) || scratch_ints(Q, E) > c->moe_ints)
        return false;
    mg_args a = mg_make(K, N, E, (const float *)x->data, x->ld, x->rows == T && k > 1,
                        (const int32_t *)sel->data, sel->ld, k, Q, (float *)y->data, y->ld, c->moe);
    a.W = (const uint8_t *)w->data;
    a.rb = w->row_bytes;
    cudaStream_t st = c->stream;
    const bool pre = pre_mode(c, Q, E);
    /* cuda_moe_mma.cu's tiles of MM_BM rows when the f16 slabs take it */
    if (pre && c->moe_mma && cuda_moe_pre_fits(c, &a, tile_slots(Q, E, MM_BM)))
        a.bm = MM_BM;
    if (!route(be, a))
        return true;
    /* Q4_K in its blocks (cuda_moe_wq.cu) when no f16 copy is kept, or first */
    if (a.bm == MM_BM && cuda_moe_wq_takes(c, w) &&
        (c->moe_wq_first || !cuda_f16_kept(be, w->type, a.W, a.rb, K, E * N))) {
        const __half *xh = cuda_moe_xh(be, &a);
        if (xh)
            cuda_moe_wq(be, &a, xh, a.W, NULL, tile_slots(Q, E, MM_BM));
        return true;
    }
    if (pre && cuda_moe_gemm_pre(be, w, &a, tile_slots(Q, E, a.bm)))
        return true;
    if (c->moegemm != MG_MODE_F32) {
        const dim3 grid((unsigned)tile_slots(Q, E), (unsigned)((N + TC_BN - 1) / TC_BN));
        const bool vec = K % 4 == 0 && x->ld % 4 == 0 && (uintptr_t)x->data % 16 == 0;
        if (vec)
            TYPE_SWITCH(w->type, cuda_launch(k_moe_gemm_tc<TT, true>, grid, MG_THREADS, 0, st, a))
        else
            TYPE_SWITCH(w->type, cuda_launch(k_moe_gemm_tc<TT, false>, grid, MG_THREADS, 0, st, a));
    } else {
        const dim3 grid((unsigned)tile_slots(Q, E), (unsigned)((N + MG_BN - 1) / MG_BN));
        TYPE_SWITCH(w->type, cuda_launch(k_moe_gemm<TT>, grid, MG_THREADS, 0, st, a));
    }
    CUDA_LAUNCHED(be, "k_moe_gemm");
    return true;
}

/* -------------------------------------------------------- host emulation */

extern "C" int cuda_moe_emulate(const float *Wf, int64_t K, int64_t N, int64_t E, const float *x,
                                int64_t XR, int64_t ldx, const int32_t *sel, int64_t ldsel,
                                int64_t k, int64_t T, float *y, int64_t ldy)
{
    const int64_t Q = T * k;
    int32_t *scr = (int32_t *)malloc(sizeof(int32_t) * scratch_ints(Q, E));
    float *sm = (float *)malloc(sizeof(float) * MG_SMEM);
    float *acc = (float *)malloc(sizeof(float) * 16 * MG_THREADS);
    if (!scr || !sm || !acc) {
        free(scr);
        free(sm);
        free(acc);
        return -1;
    }
    mg_args a = mg_make(K, N, E, x, ldx, XR == T && k > 1, sel, ldsel, k, Q, y, ldy, scr);
    a.Wf = Wf;
    memset(a.cnt, 0, sizeof(int32_t) * (size_t)E);
    for (int64_t q = 0; q < Q; q++)
        mg_count(a, q);
    mg_scan(a);
    /* scatter in reverse: the order inside an expert must not matter */
    for (int64_t q = Q - 1; q >= 0; q--)
        mg_scatter(a, q);
    const mg_deq_host deq;
    for (int by = 0; by < (N + MG_BN - 1) / MG_BN; by++)
        for (int bx = 0; bx < tile_slots(Q, E); bx++) {
            const mg_tile t = mg_tile_of(a, bx, by);
            if (!t.rows)
                continue;
            for (int i = 0; i < 16 * MG_THREADS; i++)
                acc[i] = 0.0f;
            for (int64_t k0 = 0; k0 < K; k0 += MG_BK) {
                for (int i = 0; i < MG_SMEM; i++)
                    sm[i] = NAN;
                for (int tid = 0; tid < MG_THREADS; tid++)
                    mg_load(a, deq, t, k0, tid, MG_THREADS, sm);
                for (int tid = 0; tid < MG_THREADS; tid++)
                    mg_mma(sm, tid, acc + 16 * tid);
            }
            for (int tid = 0; tid < MG_THREADS; tid++)
                mg_store(a, t, tid, acc + 16 * tid);
        }
    free(scr);
    free(sm);
    free(acc);
    return 0;
}
