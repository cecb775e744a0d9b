/* cuda_moe_tile.h: what the grouped expert products' kernels share
 * (cuda_moe.cu, cuda_moe_pre.cu): their arguments, the routing on the
 * device (count, scan, scatter: rows sorted expert after expert) and the
 * tile a block computes. Host-and-device (HD) where the host emulation
 * runs them too. Included by CUDA sources only. */
#ifndef Q36_CUDA_MOE_TILE_H
#define Q36_CUDA_MOE_TILE_H

#include "cuda.h"

#include <mma.h>
#include <stdint.h>

#define MG_BM      64      /* rows of a tile */
#define MG_BN      64      /* outputs of a tile */
#define MG_BK      32      /* columns staged at a time */
#define MG_THREADS 256     /* 16 x 16 threads, 4 x 4 outputs each */
#define MG_LX      (MG_BM + 1)
#define MG_LW      (MG_BN + 1)
#define MG_SMEM    (MG_BK * MG_LX + MG_BK * MG_LW)
/* rows of a tile of cuda_moe_mma.cu's kernel (its routing counts tiles of
 * this many rows: mg_args.bm) */
#define MM_BM      128

#define HD __host__ __device__ inline

typedef struct mg_args {
    const uint8_t *W;        /* device: the weight in its block format */
    const float *Wf;         /* host emulation: the dequantized weight */
    uint64_t rb;
    int64_t K, N, E;
    const float *x;
    int64_t ldx;
    int x_per_tok;
    const int32_t *sel;
    int64_t ldsel, k, Q;     /* Q = T * k rows */
    float *y;
    int64_t ldy;
    int32_t *cnt, *off, *toff, *cur, *perm;   /* scratch: E, E+1, E+1, E, Q */
    int bm;                  /* rows a tile: MG_BM, or MM_BM for cuda_moe_mma.cu */
} mg_args;

/* ---------------------------------------------------------------- routing */

HD int mg_expert(const mg_args &a, int64_t q)
{
    const int e = a.sel[(q / a.k) * a.ldsel + q % a.k];
    return e < 0 || e >= a.E ? 0 : e;
}

HD int mg_fetch_add(int32_t *p, int v)
{
#ifdef __CUDA_ARCH__
    return atomicAdd(p, v);
#else
    const int old = *p;
    *p += v;
    return old;
#endif
}

HD void mg_count(const mg_args &a, int64_t q) { mg_fetch_add(&a.cnt[mg_expert(a, q)], 1); }

/* One thread: the running sums in registers, the counts read 8 at a time
 * (a loop that read back what it had just stored waited a memory round
 * trip per expert) */
HD void mg_scan(const mg_args &a)
{
    int32_t off = 0, toff = 0;
    for (int64_t e0 = 0; e0 < a.E; e0 += 8) {
        int32_t c[8];
        for (int j = 0; j < 8; j++)
            c[j] = e0 + j < a.E ? a.cnt[e0 + j] : 0;
        for (int j = 0; j < 8 && e0 + j < a.E; j++) {
            a.off[e0 + j] = a.cur[e0 + j] = off;
            a.toff[e0 + j] = toff;
            off += c[j];
            toff += (c[j] + a.bm - 1) / a.bm;
        }
    }
    a.off[a.E] = off;
    a.toff[a.E] = toff;
}

HD void mg_scatter(const mg_args &a, int64_t q)
{
    a.perm[mg_fetch_add(&a.cur[mg_expert(a, q)], 1)] = (int32_t)q;
}

/* ------------------------------------------------------------------ tiles */

/* Tile slot bx, output block by: the expert, its rows perm[p0 .. p0+rows)
 * (at most a.bm)
 * (rows 0: a slot past the last tile), the first output. */
typedef struct mg_tile { int64_t e, p0, n0; int rows; } mg_tile;

HD mg_tile mg_tile_of(const mg_args &a, int bx, int by)
{
    mg_tile t = { 0, 0, (int64_t)by * MG_BN, 0 };
    if (bx >= a.toff[a.E])
        return t;
    /* the largest e with toff[e] <= bx: it has a tile there (toff[e+1] > bx) */
    int64_t lo = 0, hi = a.E - 1;
    while (lo < hi) {
        const int64_t mid = (lo + hi + 1) / 2;
        if (a.toff[mid] <= bx)
            lo = mid;
        else
            hi = mid - 1;
    }
    const int64_t local = (bx - a.toff[lo]) * a.bm;
    t.e = lo;
    t.p0 = a.off[lo] + local;
    t.rows = (int)(a.cnt[lo] - local < a.bm ? a.cnt[lo] - local : a.bm);
    return t;
}

/* The tensor-core tiles (cuda_moe.cu's k_moe_gemm_tc, cuda_moe_pre.cu's
 * k_moe_gemm_h): MG_BM rows by BN outputs a block (TC_BN, or 256 for
 * k_moe_gemm_h<256>); warp w holds rows 32 (w % 2) .. + 32 by outputs
 * BN/4 (w / 2) .. + BN/4 as 2 x FN WMMA 16 x 16 f32 accumulators, FN =
 * BN / 64. */
#define TC_BN      128
#define TC_LC      (TC_BN + 4)                       /* f32 pitch of the output tile */
#define TC_CS      (MG_BM * TC_LC * 4)               /* its bytes */

typedef nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> tc_acc;

template <int FN> __device__ __forceinline__ void tc_zero(tc_acc acc[2][FN])
{
    #pragma unroll
    for (int i = 0; i < 2; i++)
        #pragma unroll
        for (int f = 0; f < FN; f++)
            nvcuda::wmma::fill_fragment(acc[i][f], 0.0f);
}

/* One stage of BK columns: the accumulators gain X (MG_BM rows, row-major,
 * pitch LH halves) times W^T (64 FN weight rows, pitch LH), 16 columns a
 * step, in column order. */
template <int BK, int LH, int FN>
__device__ __forceinline__ void tc_mma(tc_acc acc[2][FN], const __half *X, const __half *W, int tid)
{
    using namespace nvcuda;
    const int w = tid / 32, wm = w % 2, wn = w / 2;
    #pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb[FN];
        #pragma unroll
        for (int i = 0; i < 2; i++)
            wmma::load_matrix_sync(fa[i], X + (32 * wm + 16 * i) * LH + kk, LH);
        #pragma unroll
        for (int f = 0; f < FN; f++)
            wmma::load_matrix_sync(fb[f], W + (16 * FN * wn + 16 * f) * LH + kk, LH);
        #pragma unroll
        for (int i = 0; i < 2; i++)
            #pragma unroll
            for (int f = 0; f < FN; f++)
                wmma::mma_sync(acc[i][f], fa[i], fb[f], acc[i][f]);
    }
}

/* The accumulators to the tile's rows of y (outputs n0 ..), through Cs
 * (MG_BM x (64 FN + 4) floats of shared memory that no thread still
 * reads), coalesced along n. */
template <int FN>
__device__ __forceinline__ void tc_store(const mg_args &a, const mg_tile &t, int64_t n0,
                                         tc_acc acc[2][FN], float *Cs, int tid)
{
    using namespace nvcuda;
    constexpr int BN = 64 * FN, LC = BN + 4;
    const int w = tid / 32, wm = w % 2, wn = w / 2;
    #pragma unroll
    for (int i = 0; i < 2; i++)
        #pragma unroll
        for (int f = 0; f < FN; f++)
            wmma::store_matrix_sync(Cs + (32 * wm + 16 * i) * LC + 16 * FN * wn + 16 * f, acc[i][f],
                                    LC, wmma::mem_row_major);
    __syncthreads();
    for (int e = tid; e < MG_BM * BN; e += MG_THREADS) {
        const int m = e / BN, n = e % BN;
        if (m < t.rows && n0 + n < a.N)
            a.y[(int64_t)a.perm[t.p0 + m] * a.ldy + n0 + n] = Cs[m * LC + n];
    }
}
static_assert(TC_BN == 64 * 2 && TC_LC == 64 * 2 + 4, "k_moe_gemm_tc: FN = 2");

/* The staged loop of the f16 tiles (cuda_moe_pre.cu, cuda_moe_mma.cu):
 * load(kt) queues stage kt's copies (cp.async) into buffer kt % STAGES,
 * body(kt) multiplies that buffer once every thread's copies have landed;
 * the copies of the next STAGES - 1 stages fly meanwhile. Every thread of
 * the block calls it (barriers inside). */
template <int STAGES, class Load, class Body>
__device__ __forceinline__ void mg_stages(int nk, Load load, Body body)
{
    #pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < nk)
            load(s);
        cp_commit();                   /* a group a stage, empty or not: the counts stay aligned */
    }
    for (int kt = 0; kt < nk; kt++) {
        cp_wait<STAGES - 2>();         /* this thread's copies of stage kt have landed */
        __syncthreads();               /* everyone's; and stage kt-1's buffer is free */
        if (kt + STAGES - 1 < nk)
            load(kt + STAGES - 1);
        cp_commit();
        body(kt);
    }
    cp_wait<0>();
}

/* The routing alone, for be_matmul_id's selection sel over E experts
 * (cuda_matmul.cu's grouped matvecs): a's E, k, Q and routing scratch set
 * and filled on the stream (cnt, off, perm); false, nothing queued,
 * without room in the context's routing scratch; false too when a launch
 * failed (the context's error is set). */
bool cuda_moe_sort(be_ctx *be, const be_tensor *sel, int64_t E, mg_args *a);

/* cuda_moe_pre.cu: the f16 halves its scratch takes for batches up to s
 * in mode `mode` (0 when that mode never takes it); whether the device
 * runs its kernel (the shared memory it asks, set once); the product for
 * the routed arguments a (tiles: the grid's tile slots), false when it
 * cannot take them (K not a multiple of 8, too little scratch, more than
 * 65535 tile slots): then nothing was queued. */
size_t cuda_moe_pre_halves(const be_shape *s, int mode);
bool cuda_moe_pre_ready(const cuda_ctx *c);
bool cuda_moe_gemm_pre(be_ctx *be, const be_weight *w, const mg_args *a, int64_t tiles);
/* whether cuda_moe_gemm_pre takes a (the scratch holds its f16 rows and
 * one expert, K a multiple of 8, tiles within the grid) */
bool cuda_moe_pre_fits(const cuda_ctx *c, const mg_args *a, int64_t tiles);
/* be_matmul_id_swiglu's two products on the kept f16 copies kg and ku of
 * the gate and up weights, routed in tiles of MM_BM rows: x's f16 rows,
 * then cuda_moe_mma's GLU kernel into a.y; false when a launch failed
 * (the context's error is set) */
bool cuda_moe_glu_pre(be_ctx *be, const mg_args *a, const __half *kg, const __half *ku,
                      int64_t tiles);
/* the f16 rows of a's x for cuda_moe_mma.cu's, cuda_moe_wg.cu's and
 * cuda_moe_wq.cu's tiles: the kept ones (cuda.h: h16) when they are x's,
 * else made in the context's f16 scratch; NULL when that launch failed */
const __half *cuda_moe_xh(be_ctx *be, const mg_args *a);

/* cuda_moe_mma.cu (Q36_CUDA_MOEMMA): whether the device runs its kernels
 * (their shared memory, set once); the products of a's tiles (routed with
 * a.bm = MM_BM) of experts e0 .. e1 on f16 rows xh and f16 weights wg, or
 * with wu the gate and up products' swiglu (wg the gate's); false when
 * the launch failed (the context's error is set) */
bool cuda_moe_mma_ready(const cuda_ctx *c);
/* What cuda_moe_mma.cu's, cuda_moe_wg.cu's and cuda_moe_wq.cu's kernels share. The sources
 * of a thread's 16-byte copies of staged row r (columns kc ..) of a tile:
 * x's row for the tile's row r (xin false past the tile's rows: the copy
 * is zeros, the row read is the first) and the weight row of the block's
 * output r (GLU: rows out .. are the up weight's), the last one past N
 * (never stored). */
__device__ __forceinline__ const __half *mm_xsource(const mg_args &a, const mg_tile &t,
                                                    const __half *xh, int r, int kc, bool *xin)
{
    *xin = r < t.rows;
    const int64_t q = a.perm[t.p0 + (*xin ? r : 0)];
    return xh + (a.x_per_tok ? q / a.k : q) * a.K + kc;
}

template <bool GLU>
__device__ __forceinline__ void mm_sources(const mg_args &a, const mg_tile &t, const __half *xh,
                                           const __half *wg, const __half *wu, int64_t e0,
                                           int64_t n0, int out, int r, int kc, const __half **xs,
                                           const __half **ws, bool *xin)
{
    *xs = mm_xsource(a, t, xh, r, kc, xin);
    int64_t n = n0 + (GLU ? r % out : r);
    n = n < a.N ? n : a.N - 1;
    *ws = (GLU && r >= out ? wu : wg) + ((t.e - e0) * a.N + n) * a.K + kc;
}

/* outputs n and n + 1 of row yr, those below N (v2: one float2 store when
 * both are and the row allows it) */
__device__ __forceinline__ void mm_store2(float *yr, int64_t n, int64_t N, bool v2, float v0,
                                          float v1)
{
    if (v2 && n + 1 < N) {
        *(float2 *)(yr + n) = make_float2(v0, v1);
    } else {
        if (n < N)
            yr[n] = v0;
        if (n + 1 < N)
            yr[n + 1] = v1;
    }
}

/* cuda_moe_wg.cu (Q36_CUDA_MOEWG, compute capability 9 only): the same
 * products through warpgroup products; whether the device runs them */
bool cuda_moe_wg_ready(const cuda_ctx *c);
bool cuda_moe_wg(be_ctx *be, const mg_args *a, const __half *xh, const __half *wg,
                 const __half *wu, int64_t e0, int64_t e1, int64_t tiles);
bool cuda_moe_mma(be_ctx *be, const mg_args *a, const __half *xh, const __half *wg,
                  const __half *wu, int64_t e0, int64_t e1, int64_t tiles);
/* cuda_moe_wq.cu (Q36_CUDA_MOEWQ, compute capability 9 only): the same
 * products on Q4_K weights in their block format (no f16 copy): whether
 * the device runs them; whether the context gives them weight w; the
 * products of a's tiles (all experts, a.rb the weights' row bytes) on f16
 * rows xh, wg's, or with wu the gate and up products' swiglu */
bool cuda_moe_wq_ready(const cuda_ctx *c);
bool cuda_moe_wq_takes(const cuda_ctx *c, const be_weight *w);
bool cuda_moe_wq(be_ctx *be, const mg_args *a, const __half *xh, const uint8_t *wg,
                 const uint8_t *wu, int64_t tiles);

#endif
