/* cuda_mv8.h: the int8 decode products' row sums, shared by
 * cuda_matmul.cu (be_matmul, be_matmul_id on int8 rows) and
 * cuda_moe_down.cu (an expert block's down products, its shared expert and
 * their sum in one kernel), so that both form every row's sum the same
 * way, to the bit: the expert row's offset, the int8 Q4_K and Q6_K dot
 * products, a row's lanes and the warp sums. */
#ifndef Q36_CUDA_MV8_H
#define Q36_CUDA_MV8_H

#include "cuda.h"
#include "cuda_deq.h"

#include <stdint.h>

/* The byte offset of output row n of expert sel[t][i] in an expert
 * weight (N rows an expert, rb bytes a row); a corrupt choice reads
 * expert 0, never outside the weight */
__device__ __forceinline__ uint64_t id_row_off(const int32_t *sel, int64_t ldsel, int64_t t,
                                               int64_t i, int64_t n_exp, int64_t N, int64_t n,
                                               uint64_t rb)
{
    int64_t e = sel[t * ldsel + i];
    if (e < 0 || e >= n_exp)
        e = 0;
    return ((uint64_t)e * (uint64_t)N + (uint64_t)n) * rb;
}

/* ------------------------------------ Q4_K and Q6_K on int8 activations */

/* Q36_CUDA_MV8, fast mode only (set at reserve; on unless "0"): decode rows of
 * x quantized once a product to int8 in blocks of 32 (k_q8x: d = max|x| /
 * 127, q = round(x / d), with d and d * sum(q) kept per block), and the
 * Q4_K rows multiplied with __dp4a on the 4-bit codes: per sub-block of
 * 32, d_w * sc * d_x * sum(q_w * q_x) - dmin * m * d_x * sum(q_x), the form
 * of Q4_K's weights (dl * q - ml). Four times fewer activation bytes per
 * weight than the f32 rows (Q6_K: dot_q6k_q8, below). Each product is within the op bound of the
 * CPU's (whose q8_K blocks of 256 round more coarsely), but whole models
 * move by more than exact mode's 1% of the logits' std (the 2026-12-02
 * GPU run): hence fast mode only. */
#define Q8X_BLOCK 32

/* Q36_CUDA_MVSX (on unless "0"): an expert product's block (every warp on the same
 * (token, rank) row of x) copies that int8 row and its block scales to
 * shared memory once (sx_stage), and its warps read them from there.
 * Nsight Compute found k_matvec8_id bound by L1 (92% busy): each warp read
 * the row again, a lane's 64 bytes at a time, 16 lines a warp load.
 * Chunk u (16 bytes) of the row sits at slot sx_slot(u), so that the 8
 * lanes of a quarter warp, reading chunks 4l + i (lanes l, load i), hit 8
 * different 16-byte bank groups, and a copy's 8 consecutive chunks too. */
__device__ __forceinline__ int sx_slot(int u)
{
    return u ^ ((u >> 3) & 3);
}

/* the int8 row qr (K bytes) and its K / 32 (scale, sum) pairs dr to xs
 * (swizzled) and ds; every thread of the block calls it, then it waits */
__device__ __forceinline__ void sx_stage(const int8_t *qr, const float2 *dr, int64_t K, int4 *xs,
                                         float2 *ds)
{
    const int nch = (int)(K / 16);
    for (int u = threadIdx.x; u < nch; u += blockDim.x)
        xs[sx_slot(u)] = ((const int4 *)qr)[u];
    for (int u = threadIdx.x; u < nch / 2; u += blockDim.x)
        ds[u] = dr[u];
    __syncthreads();
}

/* acc[r] += this lane's share of the Q4_K row (K % 256 == 0) times the
 * int8 row r0 + r (r < nr): lane l takes the 32 code bytes of chunk c of
 * block b (task 4b + c = l, l + 32, ...), the sub-blocks 2c (low nibbles)
 * and 2c + 1 (high); here for NB consecutive weight rows (row + i * rb)
 * at once, acc[i][r]: each load of x's int8 rows serves NB weight rows,
 * which is what batches of several rows are bound by (the weights are read
 * once either way; x is read again for every output row). dot_q4k_q8 is
 * the case NB = 1. With L < 32 the row has L lanes (lane < L), each task
 * still taken by lane task % L: where a row has at most L tasks each lane
 * sums what lane task of a whole warp would (mv_lanes). With SX (RB 1),
 * qx and dx are the block's copy of the row in shared memory (sx_stage):
 * the same values, from other addresses. */
template <int RB, int NB, int L = 32, bool SX = false>
__device__ __forceinline__ void dot_q4k_q8_nb(const uint8_t *row, uint64_t rb, int64_t K,
                                              const int8_t *qx, const float2 *dx, int64_t nr,
                                              int lane, float acc[NB][RB])
{
    static_assert(!SX || RB == 1, "a shared row is one row");
    const int64_t nb = K / 256, nbx = K / Q8X_BLOCK;
    for (int64_t task = lane; task < nb * 4; task += L) {
        const int64_t b = task >> 2;
        const int c = (int)(task & 3);
        unsigned u[NB][8];
        float ds0[NB], ms0[NB], ds1[NB], ms1[NB];
        #pragma unroll
        for (int i = 0; i < NB; i++) {
            /* blocks of 144 bytes, 16-byte aligned: the header (d, dmin,
             * the scale bytes) in one load, not ten of one or two bytes */
            const uint8_t *blk = row + (uint64_t)i * rb + b * 144;
            const uint4 hd = *(const uint4 *)blk;
            const uint4 qa = *(const uint4 *)(blk + 16 + 32 * c);
            const uint4 qb = *(const uint4 *)(blk + 16 + 32 * c + 16);
            const float d = f16w(hd.x, 0), dmin = f16w(hd.x, 1);
            int sc0, m0, sc1, m1;
            k4_scale_min2(hd, c, &sc0, &m0, &sc1, &m1);
            u[i][0] = qa.x; u[i][1] = qa.y; u[i][2] = qa.z; u[i][3] = qa.w;
            u[i][4] = qb.x; u[i][5] = qb.y; u[i][6] = qb.z; u[i][7] = qb.w;
            ds0[i] = d * (float)sc0;
            ms0[i] = dmin * (float)m0;
            ds1[i] = d * (float)sc1;
            ms1[i] = dmin * (float)m1;
        }
        #pragma unroll
        for (int r = 0; r < RB; r++) {
            if (r >= nr)
                break;
            int4 x0, x1, x2, x3;
            float4 dd;      /* the two x blocks' (scale, sum) pairs: one 16-byte load */
            if constexpr (SX) {
                const int4 *xs = (const int4 *)qx;
                const int u = 4 * (int)task;        /* the task's 64 bytes: chunks u .. u + 3 */
                x0 = xs[sx_slot(u)];
                x1 = xs[sx_slot(u + 1)];
                x2 = xs[sx_slot(u + 2)];
                x3 = xs[sx_slot(u + 3)];
                dd = ((const float4 *)dx)[task];
            } else {
                const int8_t *xr = qx + r * K + b * 256 + 64 * c;
                x0 = *(const int4 *)xr;
                x1 = *(const int4 *)(xr + 16);
                x2 = *(const int4 *)(xr + 32);
                x3 = *(const int4 *)(xr + 48);
                dd = *(const float4 *)(dx + r * nbx + b * 8 + 2 * c);
            }
            const int xl[8] = { x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w };
            const int xh[8] = { x2.x, x2.y, x2.z, x2.w, x3.x, x3.y, x3.z, x3.w };
            const float2 d0 = make_float2(dd.x, dd.y), d1 = make_float2(dd.z, dd.w);
            #pragma unroll
            for (int i = 0; i < NB; i++) {
                int sl = 0, sh = 0;
                #pragma unroll
                for (int j = 0; j < 8; j++) {
                    sl = __dp4a((int)(u[i][j] & 0x0F0F0F0Fu), xl[j], sl);
                    sh = __dp4a((int)((u[i][j] >> 4) & 0x0F0F0F0Fu), xh[j], sh);
                }
                acc[i][r] += ds0[i] * d0.x * (float)sl - ms0[i] * d0.y +
                             ds1[i] * d1.x * (float)sh - ms1[i] * d1.y;
            }
        }
    }
}

template <int RB, int L = 32, bool SX = false>
__device__ __forceinline__ void dot_q4k_q8(const uint8_t *row, int64_t K, const int8_t *qx,
                                           const float2 *dx, int64_t nr, int lane, float acc[RB])
{
    dot_q4k_q8_nb<RB, 1, L, SX>(row, 0, K, qx, dx, nr, lane, (float(*)[RB])acc);
}

/* The 32-bit little-endian word at p, which need only be 2-byte aligned
 * (Q6_K's 210-byte blocks): the two aligned words around it, shifted */
__device__ __forceinline__ uint32_t ld_u32_a2(const uint8_t *p)
{
    const uintptr_t a = (uintptr_t)p;
    const uint32_t *w = (const uint32_t *)(a & ~(uintptr_t)3);
    return (a & 3) ? __funnelshift_r(w[0], w[1], 16) : w[0];
}

/* acc[r] += this lane's share of the Q6_K row (K % 256 == 0) times the
 * int8 row r (r < nr): lane l takes task l, l + 32, ...: 16 weights of
 * one scale, half h of the 32-weight chunk j = 4n + qu of block b (task
 * 16b + 2j + h), whose codes q - 32 (ql's nibble, qh's two bits, as deq8
 * forms them) go into signed bytes for __dp4a against the x block b*8 + j;
 * the product is d * scale * d_x * sum(q_w * q_x). Tried and removed
 * (session 42, Q36_CUDA_MV6S): each warp copying its row into shared memory
 * first (coalesced 16-byte loads before the PDL wait), the codes then read
 * 16 bytes as 5 aligned shared loads. It gave the same bits but was no
 * faster: a 35B-A3B decode step took 2.882 against 2.787 ms on an H100, and
 * the 0.8B was unchanged (bench/results/2026-12-07-cuda-session42/). */
template <int RB, int L = 32>
__device__ __forceinline__ void dot_q6k_q8(const uint8_t *row, int64_t K, const int8_t *qx,
                                           const float2 *dx, int64_t nr, int lane, float acc[RB])
{
    const int64_t nb = K / 256, nbx = K / Q8X_BLOCK;
    for (int64_t task = lane; task < nb * 16; task += L) {
        const int64_t b = task >> 4;
        const int tb = (int)(task & 15), j = tb >> 1, h = tb & 1, n = j >> 2, qu = j & 3;
        const uint8_t *blk = row + b * 210;
        const uint8_t *ql = blk + 64 * n + (qu & 1) * 32 + 16 * h;
        const uint8_t *qh = blk + 128 + 32 * n + 16 * h;
        const int sh = (qu >> 1) * 4, hs = 2 * qu;
        int v[4];
        #pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t a = ld_u32_a2(ql + 4 * i), hb = ld_u32_a2(qh + 4 * i);
            v[i] = (int)__vsub4(((a >> sh) & 0x0F0F0F0Fu) | (((hb >> hs) & 0x03030303u) << 4),
                                0x20202020u);
        }
        const float d = f16f(blk + 208) * (float)((const int8_t *)blk)[192 + 8 * n + h + 2 * qu];
        #pragma unroll
        for (int r = 0; r < RB; r++) {
            if (r >= nr)
                break;
            const int4 x = *(const int4 *)(qx + r * K + b * 256 + 32 * j + 16 * h);
            int s = __dp4a(v[0], x.x, 0);
            s = __dp4a(v[1], x.y, s);
            s = __dp4a(v[2], x.z, s);
            s = __dp4a(v[3], x.w, s);
            acc[r] += d * dx[r * nbx + b * 8 + j].x * (float)s;
        }
    }
}

/* The int8 product of a row of type T (Q4_K or Q6_K; MV_ANY: type says) */
#define MV_ANY (-1)
template <int T, int RB, int L = 32, bool SX = false>
__device__ __forceinline__ void mv8_row(uint32_t type, const uint8_t *row, int64_t K,
                                        const int8_t *qx, const float2 *dx, int64_t nr, int lane,
                                        float acc[RB])
{
    static_assert(!SX || T == QT_Q4_K, "shared rows: Q4_K only");
    if (T == QT_Q4_K || (T == MV_ANY && type == QT_Q4_K))
        dot_q4k_q8<RB, L, SX>(row, K, qx, dx, nr, lane, acc);
    else
        dot_q6k_q8<RB, L>(row, K, qx, dx, nr, lane, acc);
}

/* The lanes a row of mv8_row needs (8, 16 or 32): a power of two no
 * smaller than its tasks (Q4_K: 4 a block of 256, Q6_K: 16), so that
 * each lane takes at most one. A 35B-A3B expert down product (K 512,
 * Q4_K) has 8 tasks a row: a warp a row left 24 lanes idle. A row's sum
 * over L lanes is the whole warp's over the same partials: the idle
 * lanes' exact zeros change no sum (group_sum). */
static inline int mv_lanes(uint32_t type, int64_t K)
{
    const int64_t tasks = (K / 256) * (type == QT_Q4_K ? 4 : 16);
    int L = 32;
    while (L > 8 && tasks <= L / 2)
        L /= 2;
    return L;
}

__device__ __forceinline__ float warp_sum(float s)
{
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    return s;
}

/* warp_sum within each group of L lanes (every lane of the warp calls it) */
template <int L>
__device__ __forceinline__ float group_sum(float s)
{
    #pragma unroll
    for (int o = L / 2; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    return s;
}

/* Q36_CUDA_MVPF (mv_jobs.pf; on unless "0"): a matvec warp asks L2 for its weight rows
 * before cuda_pdl_enter's wait. Weights are never written by a kernel, so
 * they may be read before the kernel ahead has finished; under PDL the
 * grid is launched while that kernel runs, and the rows' DRAM latency
 * overlaps it instead of following it. */
__device__ __forceinline__ void mv_prefetch(const uint8_t *p, uint64_t bytes, int lane)
{
#if defined(__CUDA_ARCH__)
    const uintptr_t a0 = (uintptr_t)p & ~(uintptr_t)127, a1 = (uintptr_t)p + bytes;
    for (uintptr_t a = a0 + (uintptr_t)lane * 128; a < a1; a += 32 * 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(a));
#endif
}

#endif
