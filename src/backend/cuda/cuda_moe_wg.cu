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
 * in column order, as cuda_moe_mma.cu's. Needs K a multiple of 8.
 *
 * PIPE (Q36_CUDA_MOEWGPIPE=1, off by default: session 23 measured it
 * slower while ptxas serialized its wgmma, session 39 the same speed as
 * without it once wg_group ended that, bench/results/
 * 2026-12-06-cuda-session39/run2-70234a8-moe): each stage's products
 * are left running while the next stage's are issued; a warpgroup waits
 * only for the stage before (wait_group 1), then the block's barrier, and
 * only then the copies of the stage after next go to that stage's
 * buffers. Without it every stage ends with wait_group 0, and the tensor
 * cores idle from each stage's last product to the next stage's first.
 * The same products in the same order: the same bits. Device only,
 * sm_90a (elsewhere the kernel is empty and never launched: the
 * context takes it only on compute capability 9). */
#include "cuda.h"
#include "cuda_moe.h"
#include "cuda_wgmma.h"

/* The tiles of experts e0 .. e1 (others return at once); wg (and, GLU,
 * wu): their weights, expert e's output n at row (e - e0) * N + n */
template <bool GLU, bool PIPE>
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
    const int tid = threadIdx.x, g = wg_group();
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
        so[i] = wg_swz(r, c);
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
        __syncthreads();               /* everyone's; stage kt-1's products are done (!PIPE) */
        if (!PIPE) {
            if (kt + WG_STAGES - 1 < nk)
                load(kt + WG_STAGES - 1);
            cp_commit();
        }
        if (busy) {
            const int s = kt % WG_STAGES;
            const uint64_t da = wg_desc(Xs + s * WG_TILE + 64 * 128 * g);
            const uint64_t db = wg_desc(Ws + s * WG_TILE);
            wg_fence();
            #pragma unroll
            for (int kk = 0; kk < WG_BK / 16; kk++)   /* 32 bytes a step: 2 in the descriptor */
                wg_mma(d, da + 2 * kk, db + 2 * kk);
            wg_commit();
            if (PIPE)
                wg_wait1();            /* stage kt-1's products are done, kt's run on */
            else
                wg_wait0();
        }
        if (PIPE) {
            __syncthreads();           /* everyone's stage kt-1: its buffers are free */
            if (kt + WG_STAGES - 1 < nk)
                load(kt + WG_STAGES - 1);
            cp_commit();
        }
    }
    if (PIPE && busy)
        wg_wait0();
    cp_wait<0>();
    if (!busy)
        return;

    wg_store<GLU>(a, t, n0, d, tid);
#endif
}

bool cuda_moe_wg_ready(const cuda_ctx *c)
{
    return wg_ready(c, k_moe_gemm_wg<false, false>, k_moe_gemm_wg<true, false>, WG_SMEM) &&
           wg_ready(c, k_moe_gemm_wg<false, true>, k_moe_gemm_wg<true, true>, WG_SMEM);
}

bool cuda_moe_wg(be_ctx *be, const mg_args *a, const __half *xh, const __half *wg,
                 const __half *wu, int64_t e0, int64_t e1, int64_t tiles)
{
    const cuda_ctx *c = cuda_ctx_of(be);
    const dim3 grid = wg_grid(a, wu, tiles);
#define WGL(G, P) cuda_launch(k_moe_gemm_wg<G, P>, grid, WG_THREADS, WG_SMEM, c->stream, *a, xh, \
                              wg, G ? wu : (const __half *)NULL, e0, e1)
    if (wu && c->moe_wg_pipe)
        WGL(true, true);
    else if (wu)
        WGL(true, false);
    else if (c->moe_wg_pipe)
        WGL(false, true);
    else
        WGL(false, false);
#undef WGL
    return CUDA_LAUNCHED(be, wu ? "k_moe_glu_wg" : "k_moe_gemm_wg");
}
