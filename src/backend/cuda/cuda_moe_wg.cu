/* cuda_moe_wg.cu: cuda_moe_mma.cu's grouped expert products on Hopper's
 * warpgroup products (wgmma.mma_async, sm_90a), the default there unless
 * Q36_CUDA_MOEWG=0 (which keeps mma.sync).
 *
 * Why. The first honest profile of the 35B-A3B's pp4096 (bench/results/
 * 2026-12-04-cuda-session21/) had the expert products at 47 of 144 ms: the
 * fused gate/up kernel at ~190 TFLOPS and the down kernel at ~150 on
 * mma.sync, whose fragments each warp loads from shared memory itself
 * (ldmatrix) and which Nsight Compute found at a third of the SMs'
 * throughput. A warpgroup product reads both operands from shared memory
 * through descriptors, 64 rows by 128 outputs by 16 columns an
 * instruction, and runs asynchronously of the issuing warps.
 *
 * The same tiles, routing (tiles of MM_BM = 128 rows) and outputs as
 * cuda_moe_mma.cu: a block is 2 warpgroups, each 64 of the tile's rows by
 * the block's 128 weight rows (GLU: 64 gate and the same 64 up outputs; a
 * thread holds both of an output and stores silu(gate) * up). A warpgroup
 * whose rows are all past the tile's end skips its products. Stages of 64
 * columns (128 bytes a row) in WG_STAGES cp.async buffers, each operand
 * tile laid out as the 128-byte swizzle wants it (row r at r * 128 bytes,
 * its 16-byte chunk c at chunk c ^ (r % 8); tiles 1024-byte aligned), the
 * copies made visible to the async proxy (fence.proxy.async) before the
 * products read them. Numerics: f16 operands, f32 sums, in 16-column steps
 * in column order, as cuda_moe_mma.cu's. Needs K a multiple of 8. Device
 * only, sm_90a (elsewhere the kernel is empty and never launched: the
 * context takes it only on compute capability 9). */
#include "cuda.h"
#include "cuda_moe.h"
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

__device__ __forceinline__ void wg_fence(void) { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit(void) { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_wait0(void) { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
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

/* The tiles of experts e0 .. e1 (others return at once); wg (and, GLU,
 * wu): their weights, expert e's output n at row (e - e0) * N + n */
template <bool GLU>
__global__ void __launch_bounds__(WG_THREADS, 2)
k_moe_gemm_wg(mg_args a, const __half *__restrict__ xh, const __half *__restrict__ wg,
              const __half *__restrict__ wu, int64_t e0, int64_t e1)
{
    cuda_pdl_enter();
#if WG_ON
    constexpr int OUT = GLU ? WG_BN / 2 : WG_BN;   /* outputs of a block */
    extern __shared__ __align__(128) unsigned char wg_smem[];
    const mg_tile t = mg_tile_of(a, (int)blockIdx.y, 0);
    if (!t.rows || t.e < e0 || t.e >= e1)
        return;
    const int64_t n0 = (int64_t)blockIdx.x * OUT;
    const int tid = threadIdx.x, g = tid / 128;
    unsigned char *base = (unsigned char *)(((uintptr_t)wg_smem + 1023) & ~(uintptr_t)1023);
    unsigned char *Xs = base, *Ws = base + WG_STAGES * WG_TILE;

    /* this thread's 4 copies of each operand a stage: row r = idx / 8,
     * 16-byte chunk c = idx % 8 (columns 8c ..), to its swizzled place;
     * x rows past the tile's and columns past K are zeros (not read),
     * weight rows past N repeat the last (never stored) */
    const __half *xs[4], *ws[4];
    int so[4], kc[4];
    bool xin[4];
    #pragma unroll
    for (int i = 0; i < 4; i++) {
        const int idx = tid + i * WG_THREADS, r = idx / 8, c = idx % 8;
        kc[i] = 8 * c;
        so[i] = r * 128 + ((c ^ (r & 7)) << 4);
        mm_sources<GLU>(a, t, xh, wg, wu, e0, n0, OUT, r, kc[i], &xs[i], &ws[i], &xin[i]);
    }
    const int nk = (int)((a.K + WG_BK - 1) / WG_BK);
    auto load = [&](int kt) {
        const int s = kt % WG_STAGES;
        const int64_t k0 = (int64_t)kt * WG_BK;
        #pragma unroll
        for (int i = 0; i < 4; i++) {
            const bool kin = k0 + kc[i] < a.K;
            cp16(Xs + s * WG_TILE + so[i], xs[i] + (kin ? k0 : 0), kin && xin[i]);
            cp16(Ws + s * WG_TILE + so[i], ws[i] + (kin ? k0 : 0), kin);
        }
    };

    float d[64];
    #pragma unroll
    for (int i = 0; i < 64; i++)
        d[i] = 0.0f;
    const bool busy = t.rows > 64 * g;             /* this warpgroup has rows */
    #pragma unroll
    for (int s = 0; s < WG_STAGES - 1; s++) {
        if (s < nk)
            load(s);
        cp_commit();
    }
    for (int kt = 0; kt < nk; kt++) {
        cp_wait<WG_STAGES - 2>();      /* this thread's copies of stage kt have landed */
        wg_proxy_fence();              /* ... and are visible to the products */
        __syncthreads();               /* everyone's; stage kt-1's products are done */
        if (kt + WG_STAGES - 1 < nk)
            load(kt + WG_STAGES - 1);
        cp_commit();
        if (busy) {
            const int s = kt % WG_STAGES;
            const uint64_t da = wg_desc(Xs + s * WG_TILE + 64 * 128 * g);
            const uint64_t db = wg_desc(Ws + s * WG_TILE);
            wg_fence();
            #pragma unroll
            for (int kk = 0; kk < WG_BK / 16; kk++)   /* 32 bytes a step: 2 in the descriptor */
                wg_mma(d, da + 2 * kk, db + 2 * kk);
            wg_commit();
            wg_wait0();
        }
    }
    cp_wait<0>();
    if (!busy)
        return;

    /* warp w of the warpgroup holds rows 16 w + lane / 4 (+ 8) of its 64;
     * sum j of d: n8 block j / 4 of the 128 weight rows, columns 2 (lane
     * % 4) (+ 1), rows + 8 for j % 4 >= 2 */
    const int lane = tid % 32, w = (tid / 32) % 4;
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
#endif
}

bool cuda_moe_wg_ready(const cuda_ctx *c)
{
    return c->cc_major == 9 && c->smem_optin >= WG_SMEM &&
           cudaFuncSetAttribute(k_moe_gemm_wg<false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                WG_SMEM) == cudaSuccess &&
           cudaFuncSetAttribute(k_moe_gemm_wg<true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                WG_SMEM) == cudaSuccess;
}

bool cuda_moe_wg(be_ctx *be, const mg_args *a, const __half *xh, const __half *wg,
                 const __half *wu, int64_t e0, int64_t e1, int64_t tiles)
{
    const cuda_ctx *c = cuda_ctx_of(be);
    const int64_t out = wu ? WG_BN / 2 : WG_BN;
    const dim3 grid((unsigned)((a->N + out - 1) / out), (unsigned)tiles);
    if (wu)
        cuda_launch(k_moe_gemm_wg<true>, grid, WG_THREADS, WG_SMEM, c->stream, *a, xh, wg, wu,
                    e0, e1);
    else
        cuda_launch(k_moe_gemm_wg<false>, grid, WG_THREADS, WG_SMEM, c->stream, *a, xh, wg,
                    (const __half *)NULL, e0, e1);
    return CUDA_LAUNCHED(be, wu ? "k_moe_glu_wg" : "k_moe_gemm_wg");
}
