/* cuda_wgmma.h: what the grouped expert products on Hopper's warpgroup
 * products share (cuda_moe_wg.cu: f16 weights; cuda_moe_wq.cu: Q4_K
 * weights dequantized inside the product): the tile's geometry, the
 * wgmma and fence instructions, the operand descriptor of a 128-byte
 * swizzled tile, and the store of a block's sums. Included by CUDA
 * sources only; the device parts exist for sm_90a (WG_ON). */
#ifndef Q36_CUDA_WGMMA_H
#define Q36_CUDA_WGMMA_H

#include "cuda.h"
#include "cuda_moe_tile.h"
#include "cuda_mma.h"

#define WG_BN      128                           /* weight rows of a block */
#define WG_BK      64                            /* columns a stage: one 128-byte row */
#define WG_STAGES  3
#define WG_THREADS 256                           /* 2 warpgroups */
#define WG_TILE    (128 * 128)                   /* bytes of one operand's stage */
#define WG_SMEM    (WG_STAGES * 2 * WG_TILE + 1024)   /* 99,328: 2 blocks an SM */
static_assert(MM_BM == 128 && WG_BN == 128, "2 warpgroups of 64 rows by 128 weight rows");

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define WG_ON 1
#else
#define WG_ON 0
#endif

#if WG_ON
/* the descriptor of a K-major operand tile at smem p (1024-byte aligned
 * rows groups): 128-byte swizzle, 8-row groups 1024 bytes apart */
__device__ __forceinline__ uint64_t wg_desc(const void *p)
{
    const uint32_t a = mma_sa(p);
    return (uint64_t)((a & 0x3FFFF) >> 4) | (uint64_t)1 << 16 | (uint64_t)(1024 >> 4) << 32 |
           (uint64_t)1 << 62;
}

/* This thread's warpgroup (0 or 1) as a value the compiler knows to be
 * the same across each warp: a lane-0 shuffle of threadIdx.x / 128. With
 * threadIdx.x / 128 itself, a branch on it (a warpgroup with no rows of
 * the tile skips its products) is divergent as far as ptxas can tell, and
 * it serializes every wgmma of the kernel (warning C7518: the kernels of
 * cuda_moe_wq.cu and the PIPE forms of cuda_moe_wg.cu until session 39). */
__device__ __forceinline__ int wg_group(void)
{
    return __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);
}

__device__ __forceinline__ void wg_fence(void) { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit(void) { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_wait0(void) { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
__device__ __forceinline__ void wg_wait1(void) { asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory"); }
__device__ __forceinline__ void wg_proxy_fence(void)
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* d (64 rows by 128 outputs, this thread's 64 sums) += A B^T, A and B
 * K-major f16 tiles of 16 columns at descriptors da, db */
__device__ __forceinline__ void wg_mma(float d[64], uint64_t da, uint64_t db)
{
#define WG_R(i) "+f"(d[i])
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "%64, %65, p, 1, 1, 0, 0;\n}\n"
        : WG_R(0), WG_R(1), WG_R(2), WG_R(3), WG_R(4), WG_R(5), WG_R(6), WG_R(7), WG_R(8),
          WG_R(9), WG_R(10), WG_R(11), WG_R(12), WG_R(13), WG_R(14), WG_R(15), WG_R(16),
          WG_R(17), WG_R(18), WG_R(19), WG_R(20), WG_R(21), WG_R(22), WG_R(23), WG_R(24),
          WG_R(25), WG_R(26), WG_R(27), WG_R(28), WG_R(29), WG_R(30), WG_R(31), WG_R(32),
          WG_R(33), WG_R(34), WG_R(35), WG_R(36), WG_R(37), WG_R(38), WG_R(39), WG_R(40),
          WG_R(41), WG_R(42), WG_R(43), WG_R(44), WG_R(45), WG_R(46), WG_R(47), WG_R(48),
          WG_R(49), WG_R(50), WG_R(51), WG_R(52), WG_R(53), WG_R(54), WG_R(55), WG_R(56),
          WG_R(57), WG_R(58), WG_R(59), WG_R(60), WG_R(61), WG_R(62), WG_R(63)
        : "l"(da), "l"(db), "r"(1));
#undef WG_R
}
#endif

/* Whether the device gives kernels k0 and k1 (a kernel's two forms)
 * smem bytes of shared memory: compute capability 9 only */
template <class Kern> inline bool wg_ready(const cuda_ctx *c, Kern k0, Kern k1, int smem)
{
    return c->cc_major == 9 && c->smem_optin >= smem &&
           cudaFuncSetAttribute(k0, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) == cudaSuccess &&
           cudaFuncSetAttribute(k1, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) == cudaSuccess;
}

/* The grid of a's tiles: blocks of 128 weight rows (GLU: 64 outputs),
 * output blocks fastest */
inline dim3 wg_grid(const mg_args *a, bool glu, int64_t tiles)
{
    const int64_t out = glu ? WG_BN / 2 : WG_BN;
    return dim3((unsigned)((a->N + out - 1) / out), (unsigned)tiles);
}

/* The 16-byte chunk c (8 columns) of row r of a 128-byte-swizzled
 * operand tile: its byte offset */
__host__ __device__ inline int wg_swz(int r, int c) { return r * 128 + ((c ^ (r & 7)) << 4); }

#if WG_ON
/* The block's sums d (warpgroup g's 64 rows by the block's 128 weight
 * rows, wg_mma's layout) to the tile's rows of y, outputs n0 ..: warp w
 * of the warpgroup holds rows 16 w + lane / 4 (+ 8) of its 64; sum j of
 * d: n8 block j / 4 of the 128 weight rows, columns 2 (lane % 4) (+ 1),
 * rows + 8 for j % 4 >= 2. GLU: outputs j < 8 are the gate's, j + 8 the
 * same outputs' up, stored as silu(gate) * up. */
template <bool GLU>
__device__ __forceinline__ void wg_store(const mg_args &a, const mg_tile &t, int64_t n0,
                                         const float d[64], int tid)
{
    const int g = tid / 128, lane = tid % 32, w = (tid / 32) % 4;
    const bool v2 = a.ldy % 2 == 0 && (uintptr_t)a.y % 8 == 0;
    #pragma unroll
    for (int h = 0; h < 2; h++) {
        const int m = 64 * g + 16 * w + lane / 4 + 8 * h;
        if (m >= t.rows)
            continue;
        float *yr = a.y + (int64_t)a.perm[t.p0 + m] * a.ldy;
        #pragma unroll
        for (int j = 0; j < (GLU ? 8 : 16); j++) {
            const int64_t n = n0 + 8 * j + 2 * (lane % 4);
            float v0 = d[4 * j + 2 * h], v1 = d[4 * j + 2 * h + 1];
            if (GLU) {
                v0 = cuda_swiglu1(v0, d[4 * (j + 8) + 2 * h]);
                v1 = cuda_swiglu1(v1, d[4 * (j + 8) + 2 * h + 1]);
            }
            mm_store2(yr, n, a.N, v2, v0, v1);
        }
    }
}
#endif

#endif
