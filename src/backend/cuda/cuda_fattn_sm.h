/* cuda_fattn_sm.h: what the prompt attention kernels with their outputs in
 * registers share (cuda_fattn_mma.cu: mma.sync; cuda_fattn_wg.cu: warpgroup
 * products): a block's query tile, and the online softmax of one K/V tile
 * in registers. For the softmax a lane holds two query
 * rows (e = 0, 1: row lane / 4; e = 2, 3: that row + 8) of NT blocks of 8
 * keys, s[4 nt + e] the score of key key0 + 8 nt + 2 (lane % 4) + e % 2:
 * the accumulator layout of both m16n8k16 and wgmma's m64nNk16, which is
 * also the A fragment layout of the product P V. Included by CUDA
 * sources only. */
#ifndef Q36_CUDA_FATTN_SM_H
#define Q36_CUDA_FATTN_SM_H

#include "cuda.h"
#include "cuda_mma.h"

#include <math.h>
#include <stdint.h>

/* The query tile of a block: blockIdx.z's run, its tile of BR rows from
 * t0 (tiles longest first: blockIdx.x 0 takes the last), the K/V slot,
 * first batch row and position of the tile, its rows and the keys they
 * see; false when the run has no such tile */
struct fa_tile {
    int64_t slot, r0, p0, nkeys;
    int rows;
};
template <int BR> __device__ __forceinline__ bool fa_tile_of(const fa_args &a, fa_tile *t)
{
    const int z = blockIdx.z;
    const int64_t n = a.runs[4 * z + 2];
    const int64_t t0 = (int64_t)(gridDim.x - 1 - blockIdx.x) * BR;
    if (t0 >= n)
        return false;
    t->rows = (int)(n - t0 < BR ? n - t0 : BR);
    t->slot = a.runs[4 * z];
    t->r0 = a.runs[4 * z + 1] + t0;
    t->p0 = a.runs[4 * z + 3] + t0;
    t->nkeys = t->p0 + t->rows;
    return true;
}

/* Scale the scores by sl2 (scale log2 e), mask keys past the rows'
 * positions pos[] when mask, update the running maxima mx over the 4 lanes
 * of a row and the sums (earlier ones times f = 2^(old max - new max)),
 * and write p = 2^(s - max) rounded to f16 as the A fragments pa of 16
 * keys each (their f32 values summed). The earlier outputs are to be
 * scaled by f by the caller (fa_rescale). Key 0 is in every row's view,
 * so the maxima are finite from the first tile on. */
template <int NT>
__device__ __forceinline__ void fa_online(float *s, bool mask, int64_t key0, const int64_t pos[2],
                                          float sl2, float mx[2], float sum[2],
                                          uint32_t (*pa)[4], float f[2])
{
    const int t4 = threadIdx.x % 4;
    float mt[2] = { -INFINITY, -INFINITY };
    #pragma unroll
    for (int nt = 0; nt < NT; nt++)
        #pragma unroll
        for (int e = 0; e < 4; e++) {
            const int64_t key = key0 + 8 * nt + 2 * t4 + (e & 1);
            float v = s[4 * nt + e] * sl2;
            if (mask && key > pos[e / 2])
                v = -INFINITY;
            s[4 * nt + e] = v;
            mt[e / 2] = fmaxf(mt[e / 2], v);
        }
    #pragma unroll
    for (int i = 0; i < 2; i++) {
        mt[i] = fmaxf(mt[i], __shfl_xor_sync(0xffffffffu, mt[i], 1));
        mt[i] = fmaxf(mt[i], __shfl_xor_sync(0xffffffffu, mt[i], 2));
        const float mn = fmaxf(mx[i], mt[i]);
        f[i] = exp2f(mx[i] - mn);
        mx[i] = mn;
        sum[i] *= f[i];
    }
    #pragma unroll
    for (int nt = 0; nt < NT; nt++) {
        float p[4];
        #pragma unroll
        for (int e = 0; e < 4; e++) {
            p[e] = exp2f(s[4 * nt + e] - mx[e / 2]);
            sum[e / 2] += p[e];
        }
        pa[nt / 2][2 * (nt % 2)] = mma_h2(p[0], p[1]);
        pa[nt / 2][2 * (nt % 2) + 1] = mma_h2(p[2], p[3]);
    }
}

/* The outputs o (N blocks of 4 in the accumulator layout) times f */
template <int N> __device__ __forceinline__ void fa_rescale(float *o, const float f[2])
{
    #pragma unroll
    for (int d = 0; d < N; d++) {
        o[4 * d] *= f[0];
        o[4 * d + 1] *= f[0];
        o[4 * d + 2] *= f[1];
        o[4 * d + 3] *= f[1];
    }
}

/* The rows' sums over the 4 lanes of each row */
__device__ __forceinline__ void fa_row_sums(float sum[2])
{
    #pragma unroll
    for (int i = 0; i < 2; i++) {
        sum[i] += __shfl_xor_sync(0xffffffffu, sum[i], 1);
        sum[i] += __shfl_xor_sync(0xffffffffu, sum[i], 2);
    }
}

/* Launch kernel k (a's attention) on grid with threads and bytes of shared
 * memory: false when the device cannot give that much (the caller takes
 * another kernel), true when launched or when opting in failed (the error
 * is the context's) */
template <class Kern>
static bool fa_launch(be_ctx *be, Kern k, dim3 grid, int threads, size_t bytes, const fa_args &a,
                      const char *name)
{
    cuda_ctx *c = cuda_ctx_of(be);
    if ((size_t)c->smem_optin < bytes)
        return false;
    if (!cuda_smem_optin(be, (const void *)k, bytes))
        return true;
    cuda_launch(k, grid, threads, bytes, c->stream, a);
    CUDA_LAUNCHED(be, name);
    return true;
}

#endif
