/* cuda_matmul.cu: the CUDA backend's weight products and embedding rows:
 * be_matmul, be_matmul_n, be_matmul_id (the MoE experts, the expert of each
 * row read from the device's selection tensor) and be_get_rows.
 *
 * Weights stay in their GGUF block formats (cuda.cu). The dequantizer of
 * cuda_deq.h, deq8, turns 8 consecutive elements of a row into floats
 * exactly as the quant module's reference does, so every kernel here sees
 * the same weight values as the CPU.
 *
 * Decode and small batches (at most MATVEC_ROWS rows): one warp per
 * output row, each lane 8 elements at a time, up to 4 activation rows per
 * pass over the weight row, a shuffle sum. Larger batches: the weight is
 * dequantized to f32 in slabs of rows (the reserved scratch) and
 * multiplied by cuBLAS in plain f32 (no TF32), or in fast mode in f16 on
 * tensor cores (cuda_gemm.cu), or in batch-invariant exact mode (cuda.h:
 * inv) by k_matvec_inv, whose sums are the decode kernels'. Expert products run the warp kernel for
 * every (token, rank) row, or in fast mode, for prompt batches, grouped by
 * expert (cuda_moe.cu).
 *
 * Q36_CUDA_FASTMV (read when the context is made; on unless it is 0): Q4_K
 * rows in the warp kernels are read 16 bytes a lane, four blocks a warp
 * step (dot_q4k) instead of 8 bytes a lane and one block: four times the
 * bytes in flight for the same weights and products, summed in another
 * order. */
#include "cuda.h"
#include "cuda_deq.h"
#include "cuda_moe.h"       /* MG_MIN_ROWS */
#include "cuda_moe_tile.h"  /* the routing of the grouped matvecs */
#include "cuda_mma.h"      /* mma_s8_k32 */
#include "cuda_mmq.h"
#include "cuda_mv8.h"

#include <assert.h>
#include <string.h>

#define MATVEC_ROWS 8
#define MATVEC_RB   4      /* activation rows per pass over a weight row */
/* ... for batches above MATVEC_ROWS in batch-invariant exact mode
 * (k_matvec_inv): each row's sum is formed as in k_matvec, the same bits */
#define MATVEC_RB_INV 16
#define MV_WARPS    4      /* output rows (warps) per block */
#define MV_Q80_RB   8      /* k_matvec8_q80's rows of x a block */

/* ---------------------------------------------------- Q4_K, 16 bytes a lane */

/* sum of w[i] * xr[i], i < 16 (xr 16-byte aligned when xvec) */
__device__ __forceinline__ float dot16(const float w[16], const float *xr, bool xvec)
{
    float s = 0.0f;
    if (xvec) {
        #pragma unroll
        for (int i = 0; i < 16; i += 4) {
            const float4 a = *(const float4 *)(xr + i);
            s += w[i] * a.x + w[i + 1] * a.y + w[i + 2] * a.z + w[i + 3] * a.w;
        }
    } else {
        #pragma unroll
        for (int i = 0; i < 16; i++)
            s += w[i] * xr[i];
    }
    return s;
}

/* Zero a warp lane's NB x RB accumulators (NB weight rows, RB x rows). */
template <int NB, int RB>
static __device__ __forceinline__ void acc_zero(float acc[NB][RB])
{
    #pragma unroll
    for (int i = 0; i < NB; i++)
        #pragma unroll
        for (int r = 0; r < RB; r++)
            acc[i][r] = 0.0f;
}

/* acc[r] += the Q4_K row (K % 256 == 0) times x row r, r < nr, for this
 * lane's share: lane l reads code bytes [16p, 16p+16), p = l % 8, of block
 * l / 8 + 4i at step i: the low nibbles are weights 64c + 16(p%2) + j of
 * sub-block 2c, the high ones 32 further of sub-block 2c+1 (c = p / 2),
 * each formed as deq8 forms it (dl * q - ml). */
/* dot_q4k's weights of block b for this lane: w0 (sub-block 2c, low
 * nibbles) and w1 (2c+1, high), 16 each, formed as deq8 forms them */
__device__ __forceinline__ void q4k_lane_w(const uint8_t *blk, int c, int l0, float w0[16],
                                           float w1[16])
{
    const uint4 q = *(const uint4 *)(blk + 16 + 32 * c + l0);   /* 16-byte aligned */
    const uint4 hd = *(const uint4 *)blk;                         /* d, dmin, scales */
    const float d = f16w(hd.x, 0), dmin = f16w(hd.x, 1);
    int sc0, m0, sc1, m1;
    k4_scale_min2(hd, c, &sc0, &m0, &sc1, &m1);
    const float dl0 = d * (float)sc0, ml0 = dmin * (float)m0;
    const float dl1 = d * (float)sc1, ml1 = dmin * (float)m1;
    const uint32_t u[4] = { q.x, q.y, q.z, q.w };
    #pragma unroll
    for (int j = 0; j < 16; j++) {
        const uint32_t by = (u[j >> 2] >> (8 * (j & 3))) & 0xFF;
        w0[j] = dl0 * (float)(by & 15) - ml0;
        w1[j] = dl1 * (float)(by >> 4) - ml1;
    }
}

template <int RB>
__device__ __forceinline__ void dot_q4k(const uint8_t *row, int64_t K, const float *x, int64_t ldx,
                                        int64_t nr, bool xvec, int lane, float acc[RB])
{
    const int p = lane & 7, c = p >> 1, l0 = (p & 1) * 16;
    const int64_t nb = K / 256;
    #pragma unroll 2
    for (int64_t b = lane >> 3; b < nb; b += 4) {
        float w0[16], w1[16];
        q4k_lane_w(row + b * 144, c, l0, w0, w1);
        const int64_t e0 = b * 256 + 64 * c + l0;
        #pragma unroll
        for (int r = 0; r < RB; r++)
            if (r < nr) {
                const float *xr = x + r * ldx + e0;
                acc[r] += dot16(w0, xr, xvec) + dot16(w1, xr + 32, xvec);
            }
    }
}

/* dot_q4k for NB consecutive rows (row + i * rb, i < nn) at once, each
 * x load serving them all; every (row, x row) sum formed as dot_q4k forms
 * it (batch-invariant exact mode: k_matvec_inv) */
template <int RB, int NB>
__device__ __forceinline__ void dot_q4k_nb(const uint8_t *row, uint64_t rb, int nn, int64_t K,
                                           const float *x, int64_t ldx, int64_t nr, bool xvec,
                                           int lane, float acc[NB][RB])
{
    const int p = lane & 7, c = p >> 1, l0 = (p & 1) * 16;
    const int64_t nb = K / 256;
    for (int64_t b = lane >> 3; b < nb; b += 4) {
        float w0[NB][16], w1[NB][16];
        #pragma unroll
        for (int i = 0; i < NB; i++) {
            if (i < nn) {
                q4k_lane_w(row + (uint64_t)i * rb + b * 144, c, l0, w0[i], w1[i]);
            } else {            /* past the weight's rows: computed, never stored */
                #pragma unroll
                for (int j = 0; j < 16; j++)
                    w0[i][j] = w1[i][j] = 0.0f;
            }
        }
        const int64_t e0 = b * 256 + 64 * c + l0;
        #pragma unroll
        for (int r = 0; r < RB; r++)
            if (r < nr) {
                const float *xr = x + r * ldx + e0;
                #pragma unroll
                for (int i = 0; i < NB; i++)
                    acc[i][r] += dot16(w0[i], xr, xvec) + dot16(w1[i], xr + 32, xvec);
            }
    }
}

/* (the expert row offsets, the int8 row sums and the warp sums: cuda_mv8.h) */

/* one warp per block of 32 of a row: lane = element. With u, the rows
 * are v = silu(x) * u (cuda_swiglu1, as k_ew's swiglu forms it), v also
 * stored over x: be_matmul_glu's SwiGLU and its product's int8 rows in one
 * launch (cuda_matmul_glu); without, x is only read. */
__global__ void k_q8x(float *__restrict__ x, int64_t ldx, const float *__restrict__ u,
                      int64_t ldu, int64_t R, int64_t K, int8_t *__restrict__ qx,
                      float2 *__restrict__ dx)
{
    cuda_pdl_enter();
    const int lane = threadIdx.x & 31;
    const int64_t nb = K / Q8X_BLOCK;
    const int64_t g = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (g >= R * nb)
        return;
    const int64_t r = g / nb, b = g % nb, i = b * Q8X_BLOCK + lane;
    float v = x[r * ldx + i];
    if (u) {
        v = cuda_swiglu1(v, u[r * ldu + i]);
        x[r * ldx + i] = v;
    }
    float2 ds;
    const int q = cuda_q8_lane(v, &ds);
    qx[r * K + i] = (int8_t)q;
    if (lane == 0)
        dx[r * nb + b] = ds;
}

/* -------------------------------------------------------------- kernels */

/* Up to MV_JOBS weights of one width that read the same x (the
 * projections of be_matmul_n): their output rows are one range, weight j
 * owning rows [start[j], start[j+1]); type[j] and rb[j] say its blocks
 * (k_matvec<MV_ANY>: types may differ; otherwise all of one type). */
#define MV_JOBS 4
typedef struct mv_jobs {
    const uint8_t *W[MV_JOBS];
    float         *y[MV_JOBS];
    int64_t        ldy[MV_JOBS];
    int64_t        start[MV_JOBS + 1];
    uint64_t       rb[MV_JOBS];
    uint32_t       type[MV_JOBS];
    int            n;
    int            pf;          /* prefetch the weight rows before the PDL wait */
    int            yf;          /* row groups fastest (mv_block) */
    int64_t        nbx, ny;     /* the grid: nbx blocks of weight rows x ny row groups */
} mv_jobs;

/* Block blockIdx.x of a matvec grid (one-dimensional, nbx * ny blocks):
 * its block of weight rows *bx and group of x rows *by. With J.yf
 * (Q36_CUDA_MVYF, on unless "0") the row groups vary fastest: the ny
 * blocks that read the same weight rows for different rows of x are
 * dispatched together and share those rows through L2. Before, all the
 * weight's blocks of the first row group ran first (a 2-D grid, x
 * fastest), then the second's, each reading the weight from DRAM again
 * once it outgrew L2: a 16-row pass read the 0.4 GB head four times. */
__device__ __forceinline__ void mv_block(const mv_jobs &J, int64_t *bx, int64_t *by)
{
    const int64_t b = blockIdx.x;
    *bx = J.yf ? b / J.ny : b % J.nbx;
    *by = J.yf ? b % J.ny : b / J.nbx;
}

/* acc += the 8 weights v (elements i0.. of a row, past K zero) times
 * those of the x row xr (pointing at element i0): every f32 matvec's sum */
__device__ __forceinline__ void acc8(float &acc, const float v[8], const float *__restrict__ xr,
                                     int64_t i0, int64_t K, bool xvec)
{
    if (xvec && i0 + 8 <= K) {      /* 16-byte aligned rows */
        const float4 a = *(const float4 *)xr, b = *(const float4 *)(xr + 4);
        acc += v[0] * a.x + v[1] * a.y + v[2] * a.z + v[3] * a.w +
               v[4] * b.x + v[5] * b.y + v[6] * b.z + v[7] * b.w;
    } else {
        #pragma unroll
        for (int j = 0; j < 8; j++)
            if (i0 + j < K)
                acc += v[j] * xr[j];
    }
}

/* Q36_CUDA_MVF32 (on unless "0"; cuda_matmul_switches): an f32 row of K %
 * 8 == 0 at a 16-byte address is read MV_F32_AHEAD steps of the lane at a
 * time, two 16-byte loads a step, all issued before the first is used,
 * where mv_row's loop reads 8 floats a step one load each, two steps at a
 * time: a 35B-A3B router row (2,048 floats, 8 steps a lane) waited for 4
 * rounds of loads, its beside Q4_K rows in the same launch for 1. The same
 * values summed in the same order (acc8 as mv_row calls it). */
#define MV_F32_AHEAD 8
__constant__ int mv_f32_on;

template <int RB>
__device__ __forceinline__ bool mv_row_f32(const uint8_t *row, int64_t K, const float *__restrict__ x,
                                           int64_t ldx, int64_t R, int64_t r0, bool xvec, int lane,
                                           float acc[RB])
{
    if (!mv_f32_on || K % 8 || ((uintptr_t)row & 15))
        return false;
    const float4 *w4 = (const float4 *)row;
    for (int64_t b0 = (int64_t)lane * 8; b0 < K; b0 += 256 * MV_F32_AHEAD) {
        float4 a[MV_F32_AHEAD][2];
        #pragma unroll
        for (int q = 0; q < MV_F32_AHEAD; q++) {
            const int64_t i0 = b0 + 256 * q;
            if (i0 < K) {
                a[q][0] = w4[i0 / 4];
                a[q][1] = w4[i0 / 4 + 1];
            }
        }
        #pragma unroll
        for (int q = 0; q < MV_F32_AHEAD; q++) {
            const int64_t i0 = b0 + 256 * q;
            if (i0 < K) {
                const float v[8] = { a[q][0].x, a[q][0].y, a[q][0].z, a[q][0].w,
                                     a[q][1].x, a[q][1].y, a[q][1].z, a[q][1].w };
                #pragma unroll
                for (int r = 0; r < RB; r++)
                    if (r0 + r < R)
                        acc8(acc[r], v, x + (r0 + r) * ldx + i0, i0, K, xvec);
            }
        }
    }
    return true;
}

void cuda_matmul_switches(void)
{
    const int on = cuda_env_on("Q36_CUDA_MVF32") ? 1 : 0;
    cudaMemcpyToSymbol(mv_f32_on, &on, sizeof on);
    cudaGetLastError();     /* a switch: left as it was if this fails */
}

/* acc[r] = the weight row (type T, K wide) times x rows r0 + r, r < RB,
 * this lane's share, to be summed over the warp */
template <int T, int RB, bool FAST>
__device__ __forceinline__ void mv_row(const uint8_t *row, int64_t K, const float *__restrict__ x,
                                       int64_t ldx, int64_t R, int64_t r0, bool xvec, int lane,
                                       float acc[RB])
{
    if constexpr (T == QT_F32)
        if (mv_row_f32<RB>(row, K, x, ldx, R, r0, xvec, lane, acc))
            return;
    if constexpr (FAST && T == QT_Q4_K)
        dot_q4k<RB>(row, K, x + r0 * ldx, ldx, R - r0, xvec, lane, acc);
    else
    #pragma unroll 2
    for (int64_t i0 = (int64_t)lane * 8; i0 < K; i0 += 256) {
        float v[8];
        deq8<T>(row, i0, K, v);
        #pragma unroll
        for (int r = 0; r < RB; r++)
            if (r0 + r < R)
                acc8(acc[r], v, x + (r0 + r) * ldx + i0, i0, K, xvec);
    }
}

/* mv_row for NB consecutive rows (row + i * rb, i < nn), each x load
 * serving them all; every (row, x row) sum formed as mv_row forms it */
template <int T, int RB, int NB, bool FAST>
__device__ __forceinline__ void mv_row_nb(const uint8_t *row, uint64_t rb, int nn, int64_t K,
                                          const float *__restrict__ x, int64_t ldx, int64_t R,
                                          int64_t r0, bool xvec, int lane, float acc[NB][RB])
{
    if constexpr (FAST && T == QT_Q4_K)
        dot_q4k_nb<RB, NB>(row, rb, nn, K, x + r0 * ldx, ldx, R - r0, xvec, lane, acc);
    else
    for (int64_t i0 = (int64_t)lane * 8; i0 < K; i0 += 256) {
        float v[NB][8];
        #pragma unroll
        for (int i = 0; i < NB; i++) {
            if (i < nn) {
                deq8<T>(row + (uint64_t)i * rb, i0, K, v[i]);
            } else {            /* past the weight's rows: computed, never stored */
                #pragma unroll
                for (int j = 0; j < 8; j++)
                    v[i][j] = 0.0f;
            }
        }
        #pragma unroll
        for (int r = 0; r < RB; r++)
            if (r0 + r < R) {
                #pragma unroll
                for (int i = 0; i < NB; i++)
                    acc8(acc[i][r], v[i], x + (r0 + r) * ldx + i0, i0, K, xvec);
            }
    }
}

/* The warp's output row of the joint range: job jb, row n of its weight */
__device__ __forceinline__ bool mv_find(const mv_jobs &J, int64_t g, int *jb, int64_t *n)
{
    if (g >= J.start[J.n])
        return false;
    int j = 0;
    while (j + 1 < J.n && g >= J.start[j + 1])
        j++;
    *jb = j;
    *n = g - J.start[j];
    return true;
}

/* A matvec kernel's opening: the warp's output row g (job jb, row n),
 * with J.pf its rows g .. g + nrows of that job asked of L2 (mv_prefetch),
 * then cuda_pdl_enter; false when g is past the jobs (the warp returns). */
__device__ __forceinline__ bool mv_enter(const mv_jobs &J, int64_t g, int nrows, int lane,
                                         int *jb, int64_t *n)
{
    const bool any = mv_find(J, g, jb, n);
    if (any && J.pf) {
        const int64_t left = J.start[*jb + 1] - J.start[*jb] - *n;
        mv_prefetch(J.W[*jb] + (uint64_t)*n * J.rb[*jb],
                    (uint64_t)(left < nrows ? left : nrows) * J.rb[*jb], lane);
    }
    cuda_pdl_enter();
    return any;
}

template <int RB>
__device__ __forceinline__ void mv_store(const mv_jobs &J, int jb, int64_t n, int64_t r0,
                                         int64_t R, int lane, float acc[RB])
{
    float *y = J.y[jb];
    const int64_t ldy = J.ldy[jb];
    #pragma unroll
    for (int r = 0; r < RB; r++) {
        const float s = warp_sum(acc[r]);
        if (lane == 0 && r0 + r < R)
            y[(r0 + r) * ldy + n] = s;
    }
}

/* mv_row for a type known only at run time (the warp's job's type) */
template <int RB>
__device__ __forceinline__ void mv_row_any(uint32_t type, bool fast, const uint8_t *row, int64_t K,
                                           const float *__restrict__ x, int64_t ldx, int64_t R,
                                           int64_t r0, bool xvec, int lane, float acc[RB])
{
    switch (type) {
    case QT_F32:  mv_row<QT_F32, RB, false>(row, K, x, ldx, R, r0, xvec, lane, acc); break;
    case QT_F16:  mv_row<QT_F16, RB, false>(row, K, x, ldx, R, r0, xvec, lane, acc); break;
    case QT_BF16: mv_row<QT_BF16, RB, false>(row, K, x, ldx, R, r0, xvec, lane, acc); break;
    case QT_Q8_0: mv_row<QT_Q8_0, RB, false>(row, K, x, ldx, R, r0, xvec, lane, acc); break;
    case QT_Q4_K:
        if (fast)
            mv_row<QT_Q4_K, RB, true>(row, K, x, ldx, R, r0, xvec, lane, acc);
        else
            mv_row<QT_Q4_K, RB, false>(row, K, x, ldx, R, r0, xvec, lane, acc);
        break;
    case QT_Q5_K: mv_row<QT_Q5_K, RB, false>(row, K, x, ldx, R, r0, xvec, lane, acc); break;
    case QT_Q6_K: mv_row<QT_Q6_K, RB, false>(row, K, x, ldx, R, r0, xvec, lane, acc); break;
    default: break;     /* cuda_matmul_n sends only these */
    }
}

/* The jobs J (Q4_K or Q6_K: T, or MV_ANY, each job its type) times the
 * int8 rows of k_q8x (rows r0.. of the block's row group, mv_block); with MV_ANY, a job of
 * another type (an f32 router beside Q4_K projections) reads the f32 rows
 * x as k_matvec does */
template <int T, int RB>
__global__ void k_matvec8(mv_jobs J, int64_t K, const int8_t *__restrict__ qx,
                          const float2 *__restrict__ dx, int64_t R, const float *__restrict__ x,
                          int64_t ldx, bool xvec)
{
    const int lane = threadIdx.x & 31;
    int64_t bx, by;
    mv_block(J, &bx, &by);
    int jb;
    int64_t n;
    if (!mv_enter(J, bx * (blockDim.x / 32) + threadIdx.x / 32, 1, lane, &jb, &n))
        return;
    const int64_t r0 = by * RB;
    float acc[RB];
    #pragma unroll
    for (int r = 0; r < RB; r++)
        acc[r] = 0.0f;
    const uint8_t *row = J.W[jb] + (uint64_t)n * J.rb[jb];
    if (T == MV_ANY && J.type[jb] != QT_Q4_K && J.type[jb] != QT_Q6_K)
        mv_row_any<RB>(J.type[jb], false, row, K, x, ldx, R, r0, xvec, lane, acc);
    else
        mv8_row<T, RB>(J.type[jb], row, K, qx + r0 * K, dx + r0 * (K / Q8X_BLOCK), R - r0, lane,
                       acc);
    mv_store<RB>(J, jb, n, r0, R, lane, acc);
}

/* k_matvec8 for Q4_K jobs and batches of more than MATVEC_RB rows: each
 * warp NB consecutive output rows (global rows warp * NB ..), all of one
 * job when they fit in it (dot_q4k_q8_nb), else each on its own as
 * k_matvec8 computes it (a group straddling two jobs' rows) */
template <int RB, int NB>
__global__ void k_matvec8_nb(mv_jobs J, int64_t K, const int8_t *__restrict__ qx,
                             const float2 *__restrict__ dx, int64_t R)
{
    const int lane = threadIdx.x & 31;
    int64_t bx, by;
    mv_block(J, &bx, &by);
    const int64_t g0 = (bx * (blockDim.x / 32) + threadIdx.x / 32) * NB;
    const int64_t r0 = by * RB;
    int jb;
    int64_t n;
    if (!mv_enter(J, g0, NB, lane, &jb, &n))
        return;
    const int8_t *xq = qx + r0 * K;
    const float2 *xd = dx + r0 * (K / Q8X_BLOCK);
    if (n + NB <= J.start[jb + 1] - J.start[jb]) {
        float acc[NB][RB];
        acc_zero<NB, RB>(acc);
        dot_q4k_q8_nb<RB, NB>(J.W[jb] + (uint64_t)n * J.rb[jb], J.rb[jb], K, xq, xd, R - r0, lane,
                              acc);
        #pragma unroll
        for (int i = 0; i < NB; i++)
            mv_store<RB>(J, jb, n + i, r0, R, lane, acc[i]);
        return;
    }
    for (int i = 0; i < NB; i++) {
        if (!mv_find(J, g0 + i, &jb, &n))
            return;
        float acc[RB];
        #pragma unroll
        for (int r = 0; r < RB; r++)
            acc[r] = 0.0f;
        dot_q4k_q8<RB>(J.W[jb] + (uint64_t)n * J.rb[jb], K, xq, xd, R - r0, lane, acc);
        mv_store<RB>(J, jb, n, r0, R, lane, acc);
    }
}

/* Q8_0 weights on the int8 rows of k_q8x for batches of rows (fast mode;
 * Q36_CUDA_MVQ80, on unless "0"): weight and x blocks of 32 have the
 * same int8 form, so a block's share is d_w * d_x * sum(q_w * q_x) through
 * __dp4a, where the f32 path (k_matvec) converts each code and reads four
 * x bytes per weight. L lanes take an output row (mv_lanes_q80), 32 / L
 * rows a warp: a warp a row left 24 of 32 lanes idle on a head of K = 256
 * (the trained default model's, 8 blocks a row). RB rows of x a block
 * (row group by, mv_block). Every lane runs the group sums, those past
 * the jobs' rows with zeros, so that no shuffle waits on a lane that left. */
template <int RB, int L>
__global__ void k_matvec8_q80(mv_jobs J, int64_t K, const int8_t *__restrict__ qx,
                              const float2 *__restrict__ dx, int64_t R)
{
    const int lane = threadIdx.x & 31, sub = lane % L;
    int64_t bx, by;
    mv_block(J, &bx, &by);
    const int64_t g = (bx * (blockDim.x / 32) + threadIdx.x / 32) * (32 / L) + lane / L;
    const int64_t r0 = by * RB, nb = K / Q8X_BLOCK;
    int jb = 0;
    int64_t n = 0;
    const bool any = mv_find(J, g, &jb, &n);
    if (any && J.pf)     /* lane sub the row's lines sub, sub + 32, ... (L >= its lines, or 32) */
        mv_prefetch(J.W[jb] + (uint64_t)n * J.rb[jb], J.rb[jb], sub);
    cuda_pdl_enter();
    float acc[RB];
    #pragma unroll
    for (int r = 0; r < RB; r++)
        acc[r] = 0.0f;
    if (any) {
        const uint8_t *row = J.W[jb] + (uint64_t)n * J.rb[jb];
        for (int64_t b = sub; b < nb; b += L) {
            const uint8_t *blk = row + 34 * b;            /* f16 d, 32 codes: 2-byte aligned */
            const float dw = __half2float(*(const __half *)blk);
            const uint16_t *c16 = (const uint16_t *)(blk + 2);
            int w[8];
            #pragma unroll
            for (int i = 0; i < 8; i++)
                w[i] = (int)((uint32_t)c16[2 * i] | ((uint32_t)c16[2 * i + 1] << 16));
            #pragma unroll
            for (int r = 0; r < RB; r++) {
                if (r0 + r >= R)
                    break;
                const int4 *xq = (const int4 *)(qx + (r0 + r) * K + Q8X_BLOCK * b);
                const int4 a = xq[0], c = xq[1];
                int s = __dp4a(w[0], a.x, 0);
                s = __dp4a(w[1], a.y, s);
                s = __dp4a(w[2], a.z, s);
                s = __dp4a(w[3], a.w, s);
                s = __dp4a(w[4], c.x, s);
                s = __dp4a(w[5], c.y, s);
                s = __dp4a(w[6], c.z, s);
                s = __dp4a(w[7], c.w, s);
                acc[r] += dw * dx[(r0 + r) * nb + b].x * (float)s;
            }
        }
    }
    #pragma unroll
    for (int r = 0; r < RB; r++) {
        const float s = group_sum<L>(acc[r]);
        if (any && sub == 0 && r0 + r < R)
            J.y[jb][(r0 + r) * J.ldy[jb] + n] = s;
    }
}

/* k_matvec8_q80's sums on the int8 tensor cores (Q36_CUDA_Q80TC, fast
 * mode, one Q8_0 job of 8 to 16 rows of x and K of at most 1,024: the
 * heads of verify passes and of several slots' steps): a warp takes 16
 * weight rows and every row of x (NT tiles of 8) and one
 * mma.sync.m16n8k32 forms a block's 16 x 8 integer sums at once, where
 * the dp4a kernel loads each x block once per weight row (Nsight Compute,
 * the trained model's 151,680-row head: 32 us at 4 rows, 79 at 16;
 * bench/results/2026-12-06-cuda-session35/). The sums and the weight
 * blocks' scales wait in shared memory; then each (weight row, x row) is
 * finished as k_matvec8_q80 finishes it, by L lanes of the warp at once
 * (q80tc_finish): lane sub's partial over blocks sub, sub + L, ... (the
 * same expression) and group_sum's shuffles of them, so that a row's
 * bits are those of the dp4a kernel (tested bit for bit). A thread's k
 * of the product are the codes at bytes 8t..8t+7 of the block in both
 * operands (a sum over the block does not care which k is which, as
 * cuda_mmq.cu's Q4_K). Rows past N or R read the last one, never stored.
 * Session 35 measured this kernel slower than the dp4a one (a 16-row step
 * 0.918 against 0.528 ms) when one thread finished each output alone,
 * reading each block's scale from global memory and its L partials from
 * local memory; session 39 wrote the finish above, and on an H100 the
 * step was as slow (0.943 against 0.520 ms; bench/results/
 * 2026-12-07-cuda-session40/): the finish was not what held it back. */
template <int L>
__device__ __forceinline__ void q80tc_finish(const int *tc_s, const float *dws,
                                             const float2 *__restrict__ dx, int64_t nb,
                                             int64_t n0, int64_t N, int64_t R, int outs,
                                             float *__restrict__ y, int64_t ldy, int lane)
{
    const int sub = lane % L;
    for (int o0 = 0; o0 < outs; o0 += 32 / L) {
        const int o = o0 + lane / L, xrow = o / 16, wrow = o % 16;
        const int64_t n = n0 + wrow;
        const bool ok = n < N && xrow < R;
        float acc = 0.0f;
        if (ok)
            for (int64_t b = sub; b < nb; b += L)
                acc += dws[wrow * nb + b] * dx[xrow * nb + b].x * (float)tc_s[o * nb + b];
        const float s = group_sum<L>(acc);
        if (ok && sub == 0)
            y[xrow * ldy + n] = s;
    }
}

template <int NT>
__global__ void __launch_bounds__(32)
k_mv_q80_tc(const uint8_t *__restrict__ W, uint64_t rb, int64_t N, int64_t K,
            const int8_t *__restrict__ qx, const float2 *__restrict__ dx, int64_t R,
            float *__restrict__ y, int64_t ldy, int L)
{
    extern __shared__ int tc_s[];   /* [NT * 8 x rows][16 weight rows][nb], then the scales */
    cuda_pdl_enter();
    const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    const int64_t n0 = (int64_t)blockIdx.x * 16, nb = K / Q8X_BLOCK;
    float *dws = (float *)(tc_s + NT * 8 * 16 * nb);   /* [16 weight rows][nb] */
    const int64_t na = n0 + g < N ? n0 + g : N - 1, nc = n0 + g + 8 < N ? n0 + g + 8 : N - 1;
    const uint8_t *ra = W + (uint64_t)na * rb, *rc = W + (uint64_t)nc * rb;
    int64_t xr[NT];
    #pragma unroll
    for (int nt = 0; nt < NT; nt++)
        xr[nt] = nt * 8 + g < R ? nt * 8 + g : R - 1;
    for (int64_t b = 0; b < nb; b++) {
        if (t == 0) {
            dws[g * nb + b] = __half2float(*(const __half *)(ra + 34 * b));
            dws[(g + 8) * nb + b] = __half2float(*(const __half *)(rc + 34 * b));
        }
        const uint16_t *ca = (const uint16_t *)(ra + 34 * b + 2 + 8 * t);
        const uint16_t *cc = (const uint16_t *)(rc + 34 * b + 2 + 8 * t);
        const uint32_t a0 = (uint32_t)ca[0] | ((uint32_t)ca[1] << 16);
        const uint32_t a2 = (uint32_t)ca[2] | ((uint32_t)ca[3] << 16);
        const uint32_t a1 = (uint32_t)cc[0] | ((uint32_t)cc[1] << 16);
        const uint32_t a3 = (uint32_t)cc[2] | ((uint32_t)cc[3] << 16);
        #pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            const uint2 xb = __ldg((const uint2 *)(qx + xr[nt] * K + Q8X_BLOCK * b + 8 * t));
            int c[4] = { 0, 0, 0, 0 };
            mma_s8_k32(c, a0, a1, a2, a3, xb.x, xb.y);
            /* c: (row g, x 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1) of the tile */
            const int x0 = nt * 8 + 2 * t;
            tc_s[((int64_t)x0 * 16 + g) * nb + b] = c[0];
            tc_s[((int64_t)(x0 + 1) * 16 + g) * nb + b] = c[1];
            tc_s[((int64_t)x0 * 16 + g + 8) * nb + b] = c[2];
            tc_s[((int64_t)(x0 + 1) * 16 + g + 8) * nb + b] = c[3];
        }
    }
    __syncwarp();
    /* each output as k_matvec8_q80 finishes it */
    if (L == 8)
        q80tc_finish<8>(tc_s, dws, dx, nb, n0, N, R, NT * 8 * 16, y, ldy, lane);
    else if (L == 16)
        q80tc_finish<16>(tc_s, dws, dx, nb, n0, N, R, NT * 8 * 16, y, ldy, lane);
    else
        q80tc_finish<32>(tc_s, dws, dx, nb, n0, N, R, NT * 8 * 16, y, ldy, lane);
}

/* k_matvec_id on the int8 rows of k_q8x (weights of type T, Q4_K or Q6_K;
 * with W2, the SwiGLU of the two products as k_matvec_id forms it); a row
 * takes L lanes (mv_lanes), a warp 32 / L rows; with SX (Q4_K) the block
 * reads its row of x from shared memory (K + K / 4 bytes, sx_stage) */
template <int T, int L, bool SX = false>
__global__ void k_matvec8_id(const uint8_t *__restrict__ W, uint64_t rb, int64_t K, int64_t N,
                             int64_t n_exp, const int8_t *__restrict__ qx,
                             const float2 *__restrict__ dx, int x_per_tok,
                             const int32_t *__restrict__ sel, int64_t ldsel, int64_t k,
                             float *__restrict__ y, int64_t ldy, const uint8_t *__restrict__ W2)
{
    cuda_pdl_enter();
    const int lane = threadIdx.x & 31, sl = lane % L;
    const int64_t q = blockIdx.y, t = q / k, i = q % k;
    const int64_t xr = x_per_tok ? t : q;
    const int8_t *qr = qx + xr * K;
    const float2 *dr = dx + xr * (K / Q8X_BLOCK);
    if constexpr (SX) {     /* before any warp returns: the copy waits for all */
        extern __shared__ int4 sx_mem[];
        sx_stage(qr, dr, K, sx_mem, (float2 *)(sx_mem + K / 16));
        qr = (const int8_t *)sx_mem;
        dr = (const float2 *)(sx_mem + K / 16);
    }
    const int64_t n0 = ((int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32) * (32 / L);
    if (n0 >= N)        /* the whole warp: group_sum needs every lane */
        return;
    const int64_t n = n0 + lane / L;
    const bool live = n < N;
    const uint64_t off = id_row_off(sel, ldsel, t, i, n_exp, N, live ? n : N - 1, rb);
    float a[1] = { 0.0f };
    mv8_row<T, 1, L, SX>(T, W + off, K, qr, dr, 1, sl, a);
    float acc = group_sum<L>(a[0]);
    if (W2) {
        float b[1] = { 0.0f };
        mv8_row<T, 1, L, SX>(T, W2 + off, K, qr, dr, 1, sl, b);
        acc = cuda_swiglu1(acc, group_sum<L>(b[0]));
    }
    if (sl == 0 && live)
        y[q * ldy + n] = acc;
}

/* Grouped expert matvecs (Q36_CUDA_MVGRP=1, fast mode, batches of at least
 * MV_GRP_ROWS (token, rank) rows below the grouped products'): the rows
 * sorted by expert on the device (cuda_moe_sort), their int8 rows gathered
 * in that order (k_q8_gather), then block (n group, expert e) reads each of
 * its weight rows once for all of e's rows, RB at a time, where
 * k_matvec8_id reads it once per row. Each row's sum is k_matvec8_id's
 * (mv8_row's per-row order does not depend on RB): the same bits. */
#define MV_GRP_ROWS 16

/* qg, dg: the int8 rows and block scales of the sorted rows p (a row of
 * x per token, or per (token, rank)); K % 256 == 0 */
__global__ void k_q8_gather(const int8_t *__restrict__ qx, const float2 *__restrict__ dx,
                            int64_t K, mg_args a, int8_t *__restrict__ qg,
                            float2 *__restrict__ dg)
{
    cuda_pdl_enter();
    const int64_t nb = K / Q8X_BLOCK;
    for (int64_t p = blockIdx.x; p < a.Q; p += gridDim.x) {
        const int64_t q = a.perm[p], r = a.x_per_tok ? q / a.k : q;
        const int4 *s = (const int4 *)(qx + r * K);
        int4 *d = (int4 *)(qg + p * K);
        for (int64_t i = threadIdx.x; i < K / 16; i += blockDim.x)
            d[i] = s[i];
        for (int64_t i = threadIdx.x; i < nb; i += blockDim.x)
            dg[p * nb + i] = dx[r * nb + i];
    }
}

template <int T, int RB>
__global__ void k_matvec8_grp(const uint8_t *__restrict__ W, uint64_t rb, int64_t K, int64_t N,
                              mg_args a, const int8_t *__restrict__ qg,
                              const float2 *__restrict__ dg, float *__restrict__ y, int64_t ldy,
                              const uint8_t *__restrict__ W2)
{
    cuda_pdl_enter();
    const int lane = threadIdx.x & 31;
    const int64_t e = blockIdx.y, cnt = a.cnt[e];
    const int64_t n = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (!cnt || n >= N)
        return;
    const int64_t p0 = a.off[e], nb = K / Q8X_BLOCK;
    const uint64_t off = ((uint64_t)e * (uint64_t)N + (uint64_t)n) * rb;
    for (int64_t r0 = 0; r0 < cnt; r0 += RB) {
        float g[RB], u[RB];
        #pragma unroll
        for (int r = 0; r < RB; r++)
            g[r] = u[r] = 0.0f;
        const int8_t *xq = qg + (p0 + r0) * K;
        const float2 *xd = dg + (p0 + r0) * nb;
        mv8_row<T, RB>(T, W + off, K, xq, xd, cnt - r0, lane, g);
        if (W2)
            mv8_row<T, RB>(T, W2 + off, K, xq, xd, cnt - r0, lane, u);
        #pragma unroll
        for (int r = 0; r < RB; r++) {
            if (r0 + r >= cnt)
                break;
            float s = warp_sum(g[r]);
            if (W2)
                s = cuda_swiglu1(s, warp_sum(u[r]));
            if (lane == 0)
                y[(int64_t)a.perm[p0 + r0 + r] * ldy + n] = s;
        }
    }
}

/* y_j[r][n] = W_j[n] · x[r] for rows r0..r0+RB of x (row group * RB); one
 * warp per output row of the joint range. T: the jobs' one type, or
 * MV_ANY: each job of its own type (Q36_CUDA_MVMIXED; the warp's job
 * decides, so a warp never diverges, and each row is the same sum as for
 * its type alone), FAST then taken for Q4_K jobs. */
template <int T, int RB, bool FAST = false>
__global__ void k_matvec(mv_jobs J, int64_t K, const float *__restrict__ x, int64_t ldx, int64_t R,
                         bool xvec)
{
    const int lane = threadIdx.x & 31;
    int64_t bx, by;
    mv_block(J, &bx, &by);
    const int64_t r0 = by * RB;
    int jb;
    int64_t n;
    if (!mv_enter(J, bx * (blockDim.x / 32) + threadIdx.x / 32, 1, lane, &jb, &n))
        return;
    float acc[RB];
    #pragma unroll
    for (int r = 0; r < RB; r++)
        acc[r] = 0.0f;
    const uint8_t *row = J.W[jb] + (uint64_t)n * J.rb[jb];
    if constexpr (T == MV_ANY)
        mv_row_any<RB>(J.type[jb], FAST, row, K, x, ldx, R, r0, xvec, lane, acc);
    else
        mv_row<T, RB, FAST>(row, K, x, ldx, R, r0, xvec, lane, acc);
    mv_store<RB>(J, jb, n, r0, R, lane, acc);
}

/* Batch-invariant exact mode's products above MATVEC_ROWS rows (cuda.h:
 * inv): y[r][n] = W[n] · x[r] with each warp taking NB consecutive output
 * rows (n0 = warp * NB) for the RB rows of x of blockIdx.y, so that one
 * read of x serves NB weight rows (the decode kernels read x again for
 * each); each (n, r) sum is formed exactly as k_matvec<T, .., FAST> forms
 * it (mv_row_nb, then the same shuffle sum), so a row's bits do not
 * depend on the batch. */
template <int T, int RB, int NB, bool FAST>
__global__ void k_matvec_inv(const uint8_t *__restrict__ W, uint64_t rb, int64_t N, int64_t K,
                             const float *__restrict__ x, int64_t ldx, int64_t R, bool xvec,
                             float *__restrict__ y, int64_t ldy)
{
    cuda_pdl_enter();
    const int lane = threadIdx.x & 31;
    const int64_t n0 = ((int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32) * NB;
    if (n0 >= N)
        return;
    const int nn = N - n0 < NB ? (int)(N - n0) : NB;
    const int64_t r0 = (int64_t)blockIdx.y * RB;
    float acc[NB][RB];
    acc_zero<NB, RB>(acc);
    mv_row_nb<T, RB, NB, FAST>(W + (uint64_t)n0 * rb, rb, nn, K, x, ldx, R, r0, xvec, lane, acc);
    #pragma unroll
    for (int i = 0; i < NB; i++)
        #pragma unroll
        for (int r = 0; r < RB; r++) {
            const float s = warp_sum(acc[i][r]);
            if (lane == 0 && i < nn && r0 + r < R)
                y[(r0 + r) * ldy + n0 + i] = s;
        }
}

/* Expert rows: output row q = t*k + i takes expert sel[t][i]; x row t
 * (x_per_tok) or q. With W2 (be_matmul_id_swiglu; W2 of W's type and
 * shape): y = silu(W x) * (W2 x), each product summed as alone. */
template <int T, bool FAST = false>
__global__ void k_matvec_id(const uint8_t *__restrict__ W, uint64_t rb, int64_t K, int64_t N,
                            int64_t n_exp, const float *__restrict__ x, int64_t ldx, int x_per_tok,
                            bool xvec,
                            const int32_t *__restrict__ sel, int64_t ldsel, int64_t k,
                            float *__restrict__ y, int64_t ldy, const uint8_t *__restrict__ W2)
{
    cuda_pdl_enter();
    const int lane = threadIdx.x & 31;
    const int64_t q = blockIdx.y, t = q / k, i = q % k;
    const float *xr = x + (x_per_tok ? t : q) * ldx;
    const int64_t n = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (n >= N)
        return;
    const uint64_t off = id_row_off(sel, ldsel, t, i, n_exp, N, n, rb);
    float a[1] = { 0.0f };
    mv_row<T, 1, FAST>(W + off, K, xr, 0, 1, 0, xvec, lane, a);
    float acc = warp_sum(a[0]);
    if (W2) {
        float b[1] = { 0.0f };
        mv_row<T, 1, FAST>(W2 + off, K, xr, 0, 1, 0, xvec, lane, b);
        acc = cuda_swiglu1(acc, warp_sum(b[0]));
    }
    if (lane == 0)
        y[q * ldy + n] = acc;
}

/* out[r][c] = row ids[r] of W, or rows n0..n0+rows of W when ids is NULL
 * (dequantization for cuBLAS); one thread per 8 elements */
template <int T>
__global__ void k_dequant(const uint8_t *__restrict__ W, uint64_t rb, int64_t K,
                          const int32_t *__restrict__ ids, int64_t ldids, int64_t n0, int64_t rows,
                          int64_t n_rows_w, float *__restrict__ out, int64_t ldo)
{
    cuda_pdl_enter();
    const int64_t per = (K + 7) / 8;
    for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < per * rows;
         g += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = g / per, i0 = (g % per) * 8;
        int64_t src = ids ? ids[r * ldids] : n0 + r;
        if (src < 0 || src >= n_rows_w)
            src = 0;
        float v[8];
        deq8<T>(W + (uint64_t)src * rb, i0, K, v);
        float *o = out + r * ldo + i0;
        #pragma unroll
        for (int j = 0; j < 8; j++)
            if (i0 + j < K)
                o[j] = v[j];
    }
}

/* ------------------------------------------------------------- dispatch */

int cuda_mv_rows(const be_shape *s)
{
    if (!s->fast)
        return MATVEC_ROWS;
    const char *v = getenv("Q36_CUDA_MVROWS");
    const int n = v && *v ? atoi(v) : 32;
    return n < MATVEC_ROWS ? MATVEC_ROWS : n > 64 ? 64 : n;
}

size_t cuda_matmul_scratch(const be_shape *s)
{
    if (s->n_rows <= MATVEC_ROWS)       /* the int8 rows of Q36_CUDA_MV8 */
        return ((size_t)MATVEC_ROWS * (size_t)(s->max_in > 0 ? s->max_in : 1) * 5 / 4 + 64) / 4 +
               1;
    /* (above: room for the int8 rows of cuda_mv_rows' batches too) */
    const size_t w = (size_t)(s->max_in > 0 ? s->max_in : 1);
    size_t f = (size_t)1 << 24;                    /* 64 MiB of f32 rows */
    if (f < w * 64)
        f = w * 64;
    /* fast mode's f16 products (cuda_gemm16): a pass's f16 rows of x and
     * weight slabs of 1024 rows after them, whatever -ub is; without it,
     * the 4096-wide products of an -ub 8192 pass fell back to f32 (2026-12-05:
     * 108 of a 315 ms 35B-A3B pass) */
    if (cuda_gemm16_enabled(s)) {
        const size_t h = ((size_t)s->n_rows * w + w * 1024 + 8 + 1) / 2;
        if (f < h)
            f = h;
    }
    return f;
}

/* The weight types with an int8 decode product (Q36_CUDA_MV8) */
static bool mv8_type(uint32_t type) { return type == QT_Q4_K || type == QT_Q6_K; }

/* k_matvec8_q80's lanes a row: halved from 32 while the row's blocks of
 * 32 fill at most half of them, down to 8 (q8_rows takes K % 256 == 0:
 * at least 8 blocks) */
static int mv_lanes_q80(int64_t K)
{
    const int64_t nb = K / Q8X_BLOCK;
    int L = 32;
    while (L > 8 && nb <= L / 2)
        L /= 2;
    return L;
}

bool cuda_q8_layout(cuda_ctx *c, int64_t R, int64_t K, int8_t **qx, float2 **dx)
{
    const size_t need = (size_t)R * (size_t)K + (size_t)R * (size_t)(K / Q8X_BLOCK) * 8 + 16;
    if (!c->mv8 || K % 256 || !c->deq || need > c->deq_floats * sizeof(float))
        return false;
    *qx = (int8_t *)c->deq;
    *dx = (float2 *)(((uintptr_t)(*qx + R * K) + 15) & ~(uintptr_t)15);
    c->h16.valid = false;               /* int8 rows go over them */
    return true;
}

void cuda_q8_drop(cuda_ctx *c)
{
    c->q8.valid = c->side_q8.valid = c->h16.valid = c->routed.valid = false;
}

/* bytes [lo, hi) a tensor's rows span */
static void span(const be_tensor *t, uintptr_t *lo, uintptr_t *hi)
{
    *lo = (uintptr_t)t->data;
    *hi = *lo + (t->rows > 0 ? (uint64_t)(t->rows - 1) : 0) * be_type_bytes(t->type, t->ld) +
          be_type_bytes(t->type, t->cols);
}

/* whether [lo, hi) overlaps the rows x of 4-byte elements (f32 or i32;
 * R rows of K, pitch ld) */
static bool rows_overlap(uintptr_t lo, uintptr_t hi, const void *x, int64_t R, int64_t ld, int64_t K)
{
    const uintptr_t xlo = (uintptr_t)x;
    const uintptr_t xhi = xlo + (size_t)((R - 1) * ld + K) * sizeof(float);
    return lo < xhi && xlo < hi;
}

void cuda_q8_written(cuda_ctx *c, const be_tensor *t)
{
    if ((!c->q8.valid && !c->h16.valid && !c->routed.valid) || !t || !t->data)
        return;
    uintptr_t lo, hi;
    span(t, &lo, &hi);
    if (c->routed.valid &&             /* the selection: Q / k rows of k ids */
        rows_overlap(lo, hi, c->routed.sel, c->routed.Q / c->routed.k, c->routed.ldsel, c->routed.k))
        c->routed.valid = false;
    if (c->q8.valid && rows_overlap(lo, hi, c->q8.x, c->q8.R, c->q8.ld, c->q8.K))
        c->q8.valid = false;
    if (c->h16.valid && rows_overlap(lo, hi, c->h16.x, c->h16.R, c->h16.ld, c->h16.K))
        c->h16.valid = false;
}

void cuda_q8_kept(cuda_ctx *c, const be_tensor *x)
{
    c->q8.x = x->data;
    c->q8.R = x->rows;
    c->q8.ld = x->ld;
    c->q8.K = x->cols;
    c->q8.valid = c->q8keep;
}

bool cuda_q8x(be_ctx *be, const be_tensor *x, const be_tensor *u, int8_t *qx, float2 *dx,
              const char *what)
{
    const int64_t R = x->rows, K = x->cols;
    if (!R)
        return true;
    cuda_launch(k_q8x, cuda_blocks(R * (K / Q8X_BLOCK) * 32, 256), 256, 0,
                cuda_ctx_of(be)->stream, (float *)x->data, x->ld,
                u ? (const float *)u->data : (const float *)NULL, u ? u->ld : (int64_t)0, R, K, qx,
                dx);
    return CUDA_LAUNCHED(be, what);
}

/* Q36_CUDA_MV8: x's R rows (K % 256 == 0) as int8 rows in the scratch:
 * the kept ones when they are x's (cuda.h: q8), else quantized by k_q8x
 * (and kept); false (nothing queued) when the switch is off or they do
 * not fit */
static bool q8_rows(be_ctx *be, const be_tensor *x, int8_t **qx, float2 **dx)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const int64_t R = x->rows, K = x->cols;
    if (x->f16 || !cuda_q8_layout(c, R, K, qx, dx))
        return false;
    if (c->q8.valid && c->q8.x == x->data && c->q8.R == R && c->q8.ld == x->ld && c->q8.K == K)
        return true;
    const bool ok = cuda_q8x(be, x, NULL, *qx, *dx, "k_q8x");
    cuda_q8_kept(c, x);
    return ok;
}

static_assert(MV_JOBS == MMQ_JOBS, "a matvec launch's jobs fit one k_mmq launch");

/* Batches of c->mmq_min to MMQ_ROWS rows (fast mode, Q36_CUDA_MMQ): the
 * jobs of J on the tensor cores (cuda_mmq.cu), f32 ones (a router beside
 * Q4_K projections) in the same launch when x's rows allow; false,
 * nothing queued but x's int8 rows, when k_mmq does not take them (the
 * caller goes on) */
static bool mmq_jobs_of(be_ctx *be, const mv_jobs *J, int64_t K, const be_tensor *x)
{
    int8_t *qx;
    float2 *dx;
    if (!q8_rows(be, x, &qx, &dx))
        return false;
    mmq_jobs M;
    memset(&M, 0, sizeof M);
    for (int j = 0; j < J->n; j++) {
        const int64_t N = J->start[j + 1] - J->start[j];
        M.W[j] = J->W[j];
        M.y[j] = J->y[j];
        M.ldy[j] = J->ldy[j];
        M.N[j] = N;
        M.rb[j] = J->rb[j];
        M.type[j] = J->type[j];
    }
    M.n = J->n;
    return cuda_mmq(be, &M, K, qx, dx, x->rows, (const float *)x->data, x->ld);
}

/* One launch for the jobs J (rows of x <= MATVEC_ROWS): k_matvec8_q80 for
 * Q8_0 jobs of several rows and k_matvec8 on int8 rows of x (both fast
 * mode, Q36_CUDA_MVQ80 and Q36_CUDA_MV8), else k_matvec when they share a
 * type, k_matvec<MV_ANY> otherwise. */
static void matvec(be_ctx *be, const mv_jobs *Jin, int64_t K, const be_tensor *x)
{
    cuda_ctx *c = cuda_ctx_of(be);
    mv_jobs jobs = *Jin;
    jobs.pf = c->mv_pf;
    jobs.yf = c->mv_yf;
    mv_jobs *J = &jobs;
    const int64_t R = x->rows, N = J->start[J->n];
    assert(R <= c->mv_rows);
    const int rb = R == 1 ? 1 : MATVEC_RB;
    J->nbx = (N + MV_WARPS - 1) / MV_WARPS;
    J->ny = (R + rb - 1) / rb;
    const dim3 grid((unsigned)(J->nbx * J->ny));
    /* float4 reads of x when every row starts 16-byte aligned */
    const bool xvec = ((uintptr_t)x->data & 15) == 0 && (x->ld & 3) == 0;
    const float *xd = (const float *)x->data;
    const uint32_t type = J->type[0];
    bool same = true;
    for (int j = 1; j < J->n; j++)
        same = same && J->type[j] == type;
    /* Q36_CUDA_MV8: Q4_K and Q6_K on int8 rows of x (in a mixed group, the
     * other jobs on x's f32 rows in the same launch) */
    bool int8 = same && mv8_type(type);
    for (int j = 0; j < J->n && !same; j++)
        int8 = int8 || mv8_type(J->type[j]);
    int8_t *qx;
    float2 *dx;
    if (same && type == QT_Q8_0 && R > 1 && c->mv_q80 && q8_rows(be, x, &qx, &dx)) {
        const int L = mv_lanes_q80(K);
        if (c->q80tc && J->n == 1 && R >= c->q80tc && R <= 16 && K <= 1024) {
            const int64_t nb = K / Q8X_BLOCK;
            const size_t smem = (size_t)(R > 8 ? 16 : 8) * 16 * (size_t)nb * sizeof(int) +
                                16 * (size_t)nb * sizeof(float);
            const dim3 gt((unsigned)((N + 15) / 16));
            if (R > 8)
                cuda_launch(k_mv_q80_tc<2>, gt, 32, smem, c->stream, J->W[0], J->rb[0], N, K,
                            (const int8_t *)qx, (const float2 *)dx, R, J->y[0], J->ldy[0], L);
            else
                cuda_launch(k_mv_q80_tc<1>, gt, 32, smem, c->stream, J->W[0], J->rb[0], N, K,
                            (const int8_t *)qx, (const float2 *)dx, R, J->y[0], J->ldy[0], L);
            CUDA_LAUNCHED(be, "k_mv_q80_tc");
            return;
        }
        const int64_t per_block = MV_WARPS * (32 / L);
        J->nbx = (N + per_block - 1) / per_block;
        J->ny = (R + MV_Q80_RB - 1) / MV_Q80_RB;
        const dim3 gq((unsigned)(J->nbx * J->ny));
#define Q80(L) cuda_launch(k_matvec8_q80<MV_Q80_RB, L>, gq, 32 * MV_WARPS, 0, c->stream, *J, K, \
                           (const int8_t *)qx, (const float2 *)dx, R)
        if (L == 8) Q80(8); else if (L == 16) Q80(16); else Q80(32);
#undef Q80
        CUDA_LAUNCHED(be, "k_matvec8_q80");
        return;
    }
    if (int8 && c->mmq_min && R >= c->mmq_min && R <= MMQ_ROWS && mmq_jobs_of(be, J, K, x))
        return;
    if (int8 && q8_rows(be, x, &qx, &dx)) {
        /* one row: Q36_CUDA_MVNB1=2 or 4 (off by default, a measurement):
         * that many output rows a warp, each lane's loads of them all in
         * flight before the first is used */
        if (same && type == QT_Q4_K && R == 1 && c->mv_nb1) {
            const int nb = c->mv_nb1;
            J->nbx = (N + nb * MV_WARPS - 1) / (nb * MV_WARPS);
            J->ny = 1;
            const dim3 g1((unsigned)J->nbx);
            if (nb == 2)
                cuda_launch(k_matvec8_nb<1, 2>, g1, 32 * MV_WARPS, 0, c->stream, *J, K,
                            (const int8_t *)qx, (const float2 *)dx, R);
            else
                cuda_launch(k_matvec8_nb<1, 4>, g1, 32 * MV_WARPS, 0, c->stream, *J, K,
                            (const int8_t *)qx, (const float2 *)dx, R);
            CUDA_LAUNCHED(be, "k_matvec8_nb");
            return;
        }
        /* batches: 4 output rows a warp (Q36_CUDA_MVNB, on unless "0") */
        if (same && type == QT_Q4_K && R > MATVEC_RB && c->mv_nb) {
            J->nbx = (N + 4 * MV_WARPS - 1) / (4 * MV_WARPS);
            J->ny = (R + MATVEC_RB - 1) / MATVEC_RB;
            const dim3 g4((unsigned)(J->nbx * J->ny));
            cuda_launch(k_matvec8_nb<MATVEC_RB, 4>, g4, 32 * MV_WARPS, 0, c->stream, *J, K,
                        (const int8_t *)qx, (const float2 *)dx, R);
            CUDA_LAUNCHED(be, "k_matvec8_nb");
            return;
        }
#define MV8(T, RB) cuda_launch(k_matvec8<T, RB>, grid, 32 * MV_WARPS, 0, c->stream, *J, K, \
                               (const int8_t *)qx, (const float2 *)dx, R, xd, x->ld, xvec)
        if (!same) {
            if (R == 1) MV8(MV_ANY, 1); else MV8(MV_ANY, MATVEC_RB);
        } else if (type == QT_Q4_K) {
            if (R == 1) MV8(QT_Q4_K, 1); else MV8(QT_Q4_K, MATVEC_RB);
        } else {
            if (R == 1) MV8(QT_Q6_K, 1); else MV8(QT_Q6_K, MATVEC_RB);
        }
#undef MV8
        CUDA_LAUNCHED(be, "k_matvec8");
        return;
    }
#define MV(...) cuda_launch(k_matvec<__VA_ARGS__>, grid, 32 * MV_WARPS, 0, c->stream, *J, K, xd, \
                            x->ld, R, xvec)
    if (!same) {
        if (R == 1) {
            if (c->fast_mv) MV(MV_ANY, 1, true); else MV(MV_ANY, 1, false);
        } else {
            if (c->fast_mv) MV(MV_ANY, MATVEC_RB, true); else MV(MV_ANY, MATVEC_RB, false);
        }
        CUDA_LAUNCHED(be, "k_matvec_mixed");
        return;
    }
    if (c->fast_mv && type == QT_Q4_K) {
        if (R == 1)
            MV(QT_Q4_K, 1, true);
        else
            MV(QT_Q4_K, MATVEC_RB, true);
    } else if (R == 1) {
        TYPE_SWITCH(type, MV(TT, 1));
    } else {
        TYPE_SWITCH(type, MV(TT, MATVEC_RB));
    }
#undef MV
    CUDA_LAUNCHED(be, "k_matvec");
}

/* y = x · W^T in batch-invariant exact mode (cuda.h: inv), above
 * MATVEC_ROWS rows: k_matvec_inv, RB rows of x a block, NB weight rows a
 * warp (2 for the 16-byte Q4_K path, whose lanes hold 32 weights a row) */
static void matvec_inv(be_ctx *be, uint32_t type, const uint8_t *W, uint64_t rb, int64_t K,
                       int64_t N, const be_tensor *x, be_tensor *y)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const int64_t R = x->rows;
    const bool xvec = ((uintptr_t)x->data & 15) == 0 && (x->ld & 3) == 0;
    const bool q4 = c->fast_mv && type == QT_Q4_K;
    const int nb = q4 ? 2 : 4;
    dim3 grid((unsigned)((N + nb * MV_WARPS - 1) / (nb * MV_WARPS)),
              (unsigned)((R + MATVEC_RB_INV - 1) / MATVEC_RB_INV));
#define INV(...) cuda_launch(k_matvec_inv<__VA_ARGS__>, grid, 32 * MV_WARPS, 0, c->stream, W, rb, \
                             N, K, (const float *)x->data, x->ld, R, xvec, (float *)y->data, y->ld)
    if (q4)
        INV(QT_Q4_K, MATVEC_RB_INV, 2, true);
    else
        TYPE_SWITCH(type, INV(TT, MATVEC_RB_INV, 4, false));
#undef INV
    CUDA_LAUNCHED(be, "k_matvec_inv");
}

/* y = x · W^T by slabs of dequantized rows and cuBLAS */
static void gemm(be_ctx *be, uint32_t type, const uint8_t *W, uint64_t rb, int64_t K, int64_t N,
                 const be_tensor *x, be_tensor *y)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const int64_t R = x->rows;
    if (!c->deq || c->deq_floats < (size_t)K) {
        be_fail(be, Q36_E_NOMEM, "cuda matmul: %lld rows need the dequantization scratch "
                "(%lld floats a weight row, %zu reserved)", (long long)R, (long long)K,
                c->deq_floats);
        return;
    }
    const float one = 1.0f, zero = 0.0f;
    if (type == QT_F32 && rb == (uint64_t)K * 4 && (uintptr_t)W % 16 == 0 && c->tf32) {
        /* fast mode: on TF32 tensor cores (both operands rounded to a
         * 10-bit mantissa, as the f16 path's are; f32 sums): the MoE
         * routers, 4096 x 2048 x 256 a layer for a pp4096, were the
         * largest part of 6.8 ms of f32 products in a 35B-A3B pass */
        if (!CUBLAS_OK(be, cublasSetMathMode(c->blas, CUBLAS_DEFAULT_MATH)))
            return;
        if (CUBLAS_OK(be, cublasGemmEx(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, (int)R, (int)K,
                                       &one, W, CUDA_R_32F, (int)K, x->data, CUDA_R_32F,
                                       (int)x->ld, &zero, y->data, CUDA_R_32F, (int)y->ld,
                                       CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT)))
            cuda_count_as(c, "cublas tf32 gemm");
        CUBLAS_OK(be, cublasSetMathMode(c->blas, CUBLAS_PEDANTIC_MATH));
        return;
    }
    if (type == QT_F32 && rb == (uint64_t)K * 4 && (uintptr_t)W % 16 == 0) {
        /* rows already f32 and packed: cuBLAS reads them in place (the
         * same values, leading dimension and call as through the copy) */
        if (CUBLAS_OK(be, cublasSgemm(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, (int)R, (int)K,
                                      &one, (const float *)W, (int)K, (const float *)x->data,
                                      (int)x->ld, &zero, (float *)y->data, (int)y->ld)))
            cuda_count_as(c, "cublas f32 gemm");
        return;                        /* the scratch untouched: its kept rows stay */
    }
    cuda_q8_drop(c);                    /* the scratch is overwritten */
    const int64_t chunk = (int64_t)(c->deq_floats / (size_t)K) < N
                              ? (int64_t)(c->deq_floats / (size_t)K) : N;
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
        const int64_t nc = N - n0 < chunk ? N - n0 : chunk;
        const int64_t items = (K + 7) / 8 * nc;
        TYPE_SWITCH(type, cuda_launch(k_dequant<TT>, cuda_blocks(items, 256), 256, 0, c->stream,
                    W, rb, K, nullptr, 0, n0, nc, N, c->deq, K));
        if (!CUDA_LAUNCHED(be, "k_dequant"))
            return;
        /* column-major: C (nc x R, ld y) = A^T (A: K x nc, ld K) * B (K x R, ld x) */
        if (!CUBLAS_OK(be, cublasSgemm(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)nc, (int)R, (int)K,
                                       &one, c->deq, (int)K, (const float *)x->data, (int)x->ld,
                                       &zero, (float *)y->data + n0, (int)y->ld)))
            return;
        cuda_count_as(c, "cublas f32 gemm");
    }
}

/* The one weight w (its rows from W) into y */
static mv_jobs one_job(const be_weight *w, const uint8_t *W, be_tensor *y)
{
    mv_jobs J;
    memset(&J, 0, sizeof J);
    J.W[0] = W;
    J.y[0] = (float *)y->data;
    J.ldy[0] = y->ld;
    J.start[1] = (int64_t)w->t->ne[1];
    J.rb[0] = w->row_bytes;
    J.type[0] = w->type;
    J.n = 1;
    return J;
}

void cuda_matmul(be_ctx *be, const be_weight *w, int64_t slab, const be_tensor *x, be_tensor *y)
{
    const int64_t K = (int64_t)w->t->ne[0], N = (int64_t)w->t->ne[1];
    assert(x->cols == K && y->cols == N && y->rows >= x->rows && !x->f16 && !y->f16);
    assert(slab >= 0 && (uint64_t)slab < w->t->ne[2]);
    if (!x->rows)
        return;
    const uint8_t *W = (const uint8_t *)w->data + (uint64_t)slab * (uint64_t)N * w->row_bytes;
    if (x->rows <= cuda_ctx_of(be)->mv_rows) {
        const mv_jobs J = one_job(w, W, y);
        matvec(be, &J, K, x);
    } else if (cuda_ctx_of(be)->inv) {
        matvec_inv(be, w->type, W, w->row_bytes, K, N, x, y);
    } else if (!(cuda_ctx_of(be)->gemm16 && cuda_gemm16(be, w->type, W, w->row_bytes, K, N, x, y))) {
        gemm(be, w->type, W, w->row_bytes, K, N, x, y);
    }
}

/* be_matmul_glu: y = (silu(g) * u) · W^T, the SwiGLU stored over g. When
 * the product takes the int8 decode path (Q36_CUDA_MV8: a Q4_K or Q6_K
 * weight, rows within mv_rows), the SwiGLU and the int8 rows are one
 * launch (k_q8x with u, Q36_CUDA_FGLU8 on unless "0", off with
 * Q36_CUDA_FUSED=0), the rows handed to the product as kept ones (cuda.h:
 * q8); for prompt rows on the f16 path the SwiGLU and the rows' f16
 * rounding are one launch (cuda_gemm.cu, k_swiglu_h; cuda.h: h16);
 * otherwise k_ew's SwiGLU, then the product. The same bits either way. */
void cuda_matmul_glu(be_ctx *be, const be_weight *w, be_tensor *g, const be_tensor *u, be_tensor *y)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const int64_t R = g->rows, K = g->cols;
    int8_t *qx;
    float2 *dx;
    if (c->f_glu8 && R && R <= c->mv_rows && mv8_type(w->type) && !g->f16 && !u->f16 &&
        cuda_q8_layout(c, R, K, &qx, &dx)) {
        if (!cuda_q8x(be, g, u, qx, dx, "k_q8x(glu)"))
            return;
        const bool keep = c->q8keep;
        cuda_q8_kept(c, g);
        c->q8.valid = true;             /* this product's rows, kept or not */
        cuda_matmul(be, w, 0, g, y);
        c->q8.valid = c->q8.valid && keep;
        return;
    }
    if (!cuda_swiglu_h16(be, w->type, g, u))
        cuda_swiglu(be, g, u, g);
    cuda_matmul(be, w, 0, g, y);
}

/* Launches for w[idx[0..n)]: groups of up to MV_JOBS in their order */
static void matvec_jobs(be_ctx *be, const be_weight *const *w, const int *idx, int n,
                        const be_tensor *x, be_tensor *const *y)
{
    for (int i0 = 0; i0 < n; i0 += MV_JOBS) {
        mv_jobs J;
        memset(&J, 0, sizeof J);
        J.n = n - i0 < MV_JOBS ? n - i0 : MV_JOBS;
        for (int j = 0; j < J.n; j++) {
            const int i = idx[i0 + j];
            const be_weight *wj = w[i];
            assert(x->cols == (int64_t)wj->t->ne[0] && y[i]->cols == (int64_t)wj->t->ne[1]);
            assert(y[i]->rows >= x->rows && !y[i]->f16);
            J.W[j] = (const uint8_t *)wj->data;
            J.y[j] = (float *)y[i]->data;
            J.ldy[j] = y[i]->ld;
            J.start[j + 1] = J.start[j] + (int64_t)wj->t->ne[1];
            J.rb[j] = wj->row_bytes;
            J.type[j] = wj->type;
        }
        if (x->rows)
            matvec(be, &J, (int64_t)x->cols, x);
    }
}

/* Decode rows: the weights (all reading x, so all K wide) share launches
 * of up to MV_JOBS, a type's weights together (k_matvec), or with
 * Q36_CUDA_MVMIXED (on unless "0") whatever their types (k_matvec<MV_ANY>).
 * Batches above MATVEC_ROWS rows: one matmul each.
 *
 * Unless Q36_CUDA_MVWIDE=0: the mixed jobs by row bytes, widest first (a
 * stable order; decode +3.7-4.8% on the 35B-A3B, record
 * 2026-12-05-cuda-mvwide-ab). A warp a row: an f32 row
 * (the router, the DeltaNet gates' alpha and beta) is 7 times the bytes of
 * a Q4_K one, and its warps, last in the grid, ran after the rest had
 * finished (Nsight Compute, session 27: a mixed launch ~2.8 us above a
 * Q4_K one of its size). Which warp takes a row changes no sum. */
void cuda_matmul_n(be_ctx *be, int n, const be_weight *const *w, const be_tensor *x,
                   be_tensor *const *y)
{
    for (int i = 0; i < n; i++)         /* the outputs (cuda.cu: q8_outs) */
        cuda_q8_written(cuda_ctx_of(be), y[i]);
    if (x->rows > cuda_ctx_of(be)->mv_rows) {
        for (int i = 0; i < n; i++)
            cuda_matmul(be, w[i], 0, x, y[i]);
        return;
    }
    int idx[64];
    assert(n <= 64);
    if (cuda_ctx_of(be)->mv_mixed) {
        for (int i = 0; i < n; i++) {
            int j = i;
            if (cuda_ctx_of(be)->mv_wide_first)
                for (; j > 0 && w[idx[j - 1]]->row_bytes < w[i]->row_bytes; j--)
                    idx[j] = idx[j - 1];
            idx[j] = i;
        }
        matvec_jobs(be, w, idx, n, x, y);
        return;
    }
    bool done[64] = { false };
    for (int i = 0; i < n; i++) {       /* each type in order of first appearance */
        if (done[i])
            continue;
        int m = 0;
        for (int j = i; j < n; j++)
            if (!done[j] && w[j]->type == w[i]->type) {
                idx[m++] = j;
                done[j] = true;
            }
        matvec_jobs(be, w, idx, m, x, y);
    }
}

/* k_q8_gather and k_matvec8_grp for id_launch, the int8 rows of x at qx,
 * dx (cuda_q8_layout's); false, nothing queued, when the sorted rows do not
 * fit the scratch after them or the routing has no room */
static bool grouped_mv8(be_ctx *be, const be_weight *w, const be_tensor *x, const be_tensor *sel,
                        be_tensor *y, const be_weight *w2, const int8_t *qx, const float2 *dx)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const int64_t K = (int64_t)w->t->ne[0], N = (int64_t)w->t->ne[1], E = (int64_t)w->t->ne[2];
    const int64_t nb = K / Q8X_BLOCK, Q = sel->rows * sel->cols;
    const uintptr_t al = 15;
    int8_t *qg = (int8_t *)(((uintptr_t)(dx + x->rows * nb) + al) & ~al);
    float2 *dg = (float2 *)(((uintptr_t)(qg + Q * K) + al) & ~al);
    if ((uintptr_t)(dg + Q * nb) > (uintptr_t)c->deq + c->deq_floats * sizeof(float))
        return false;
    mg_args a;
    if (!cuda_moe_sort(be, sel, E, &a))
        return false;
    a.x_per_tok = x->rows == sel->rows && sel->cols > 1;
    cuda_launch(k_q8_gather, (unsigned)(Q < 65535 * 8 ? Q : 65535 * 8), 128, 0, c->stream, qx, dx,
                K, a, qg, dg);
    if (!CUDA_LAUNCHED(be, "k_q8_gather"))
        return true;
    dim3 grid((unsigned)((N + MV_WARPS - 1) / MV_WARPS), (unsigned)E);
#define GRP(TY) cuda_launch(k_matvec8_grp<TY, MATVEC_RB>, grid, 32 * MV_WARPS, 0, c->stream,               (const uint8_t *)w->data, w->row_bytes, K, N, a, (const int8_t *)qg, (const float2 *)dg,         (float *)y->data, y->ld, w2 ? (const uint8_t *)w2->data : nullptr)
    if (w->type == QT_Q4_K)
        GRP(QT_Q4_K);
    else
        GRP(QT_Q6_K);
#undef GRP
    CUDA_LAUNCHED(be, "k_matvec8_grp");
    return true;
}

/* The expert product of every (token, rank) row (k_matvec8_id on int8 rows
 * in fast mode, else k_matvec_id); with w2, the SwiGLU of the two */
static void id_launch(be_ctx *be, const be_weight *w, const be_tensor *x, const be_tensor *sel,
                      be_tensor *y, const be_weight *w2 = nullptr)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const int64_t K = (int64_t)w->t->ne[0], N = (int64_t)w->t->ne[1], E = (int64_t)w->t->ne[2];
    const int64_t T = sel->rows, k = sel->cols;
    dim3 grid((unsigned)((N + MV_WARPS - 1) / MV_WARPS), (unsigned)(T * k));
    const bool xvec = ((uintptr_t)x->data & 15) == 0 && (x->ld & 3) == 0;
    int8_t *qx;
    float2 *dx;
    if (mv8_type(w->type) && (!w2 || w2->type == w->type) && q8_rows(be, x, &qx, &dx)) {
        /* Q36_CUDA_MMQGRP: batches of tokens on the tensor cores, rows grouped by expert */
        if (c->mmq_min && c->mmq_grp_min && T >= c->mmq_grp_min && T <= MMQ_ROWS) {
            mg_args a;
            if (cuda_moe_sort(be, sel, E, &a)) {
                a.x_per_tok = x->rows == T && k > 1;
                if (cuda_mmq_grp(be, w->type, (const uint8_t *)w->data,
                                 w2 ? (const uint8_t *)w2->data : nullptr, w->row_bytes, K, N, E,
                                 &a, qx, dx, T, (float *)y->data, y->ld))
                    return;
            }
        }
        if (c->mv_grp && T * k >= MV_GRP_ROWS && grouped_mv8(be, w, x, sel, y, w2, qx, dx))
            return;
        const int L = mv_lanes(w->type, K);
        const int64_t per_block = MV_WARPS * (32 / L);
        const dim3 g8((unsigned)((N + per_block - 1) / per_block), (unsigned)(T * k));
        /* Q36_CUDA_MVSX: the row of x from shared memory (K + K / 4 bytes) */
        const size_t sxb = (size_t)K + (size_t)K / 4;
        const bool sx = c->mv_sx && w->type == QT_Q4_K && sxb <= 48 * 1024;
#define ID8(TY, L, SX) cuda_launch(k_matvec8_id<TY, L, SX>, g8, 32 * MV_WARPS, SX ? sxb : 0,      \
        c->stream, (const uint8_t *)w->data, w->row_bytes, K, N, E, (const int8_t *)qx,          \
        (const float2 *)dx, (int)(x->rows == T && k > 1), (const int32_t *)sel->data, sel->ld,  \
        k, (float *)y->data, y->ld, w2 ? (const uint8_t *)w2->data : nullptr)
#define ID8L(TY, SX) do { if (L == 8) ID8(TY, 8, SX); else if (L == 16) ID8(TY, 16, SX);          \
        else ID8(TY, 32, SX); } while (0)
        if (sx)
            ID8L(QT_Q4_K, true);
        else if (w->type == QT_Q4_K)
            ID8L(QT_Q4_K, false);
        else
            ID8L(QT_Q6_K, false);
#undef ID8L
#undef ID8
        CUDA_LAUNCHED(be, "k_matvec8_id");
        return;
    }
#define ID(...) cuda_launch(k_matvec_id<__VA_ARGS__>, grid, 32 * MV_WARPS, 0, c->stream,          \
        (const uint8_t *)w->data, w->row_bytes, K, N, E, (const float *)x->data, x->ld,         \
        x->rows == T && k > 1, xvec, (const int32_t *)sel->data, sel->ld, k, (float *)y->data,  \
        y->ld, w2 ? (const uint8_t *)w2->data : nullptr)
    if (c->fast_mv && w->type == QT_Q4_K)
        ID(QT_Q4_K, true);
    else
        TYPE_SWITCH(w->type, ID(TT));
#undef ID
    CUDA_LAUNCHED(be, "k_matvec_id");
}

void cuda_matmul_id(be_ctx *be, const be_weight *w, const be_tensor *x, const be_tensor *sel,
                    be_tensor *y)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const int64_t K = (int64_t)w->t->ne[0], N = (int64_t)w->t->ne[1];
    const int64_t T = sel->rows, k = sel->cols;
    assert(x->cols == K && y->cols == N && y->rows >= T * k);
    assert(x->rows == T || x->rows == T * k);
    if (!T)
        return;
    if (c->moegemm && cuda_moe_gemm(be, w, x, sel, y))
        return;
    id_launch(be, w, x, sel, y);
}

/* be_matmul_id_swiglu: in the grouped expert products' batches, one kernel
 * for both products and their swiglu when cuda_moe_gemm_glu takes them;
 * outside them, one expert kernel computing both products (k_matvec_id
 * with W2) when the two weights match in type and shape; otherwise the
 * three ops */
void cuda_matmul_id_swiglu(be_ctx *be, const be_weight *wg, const be_weight *wu,
                           const be_tensor *x, const be_tensor *sel, be_tensor *tmp, be_tensor *y)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const int64_t T = sel->rows, k = sel->cols;
    const bool same = wg->type == wu->type && wg->row_bytes == wu->row_bytes &&
                      wg->t->ne[0] == wu->t->ne[0] && wg->t->ne[1] == wu->t->ne[1] &&
                      wg->t->ne[2] == wu->t->ne[2];
    if (!T)
        return;
    if (c->moegemm && cuda_moe_gemm_glu(be, wg, wu, x, sel, y))
        return;
    if (!c->f_swiglu || !same || (c->moegemm && cuda_moe_grouped(T * k, wg->t->ne[2], cuda_moe_rows(c, wg)))) {
        cuda_matmul_id(be, wg, x, sel, y);
        cuda_matmul_id(be, wu, x, sel, tmp);
        cuda_swiglu(be, y, tmp, y);
        return;
    }
    assert(x->cols == (int64_t)wg->t->ne[0] && y->cols == (int64_t)wg->t->ne[1]);
    assert(y->rows >= T * k && (x->rows == T || x->rows == T * k));
    id_launch(be, wg, x, sel, y, wu);
}

void cuda_get_rows(be_ctx *be, const be_weight *w, const be_tensor *ids, be_tensor *out)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const int64_t K = (int64_t)w->t->ne[0], NR = (int64_t)(w->t->ne[1] * w->t->ne[2]);
    assert(out->cols == K && !out->f16);
    const int64_t rows = ids->rows, items = (K + 7) / 8 * rows;
    if (!rows)
        return;
    TYPE_SWITCH(w->type, cuda_launch(k_dequant<TT>, cuda_blocks(items, 256), 256, 0, c->stream,
                (const uint8_t *)w->data, w->row_bytes, K, (const int32_t *)ids->data, ids->ld,
                0, rows, NR, (float *)out->data, out->ld));
    CUDA_LAUNCHED(be, "k_dequant(get_rows)");
}
