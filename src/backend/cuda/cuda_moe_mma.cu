/* cuda_moe_mma.cu: the grouped expert products of large prompt batches on
 * f16 rows and f16 weights (cuda_moe_pre.cu's operands: xh, and the kept
 * copies or slabs) with the products in registers (mma.sync m16n8k16,
 * fragments through ldmatrix), the default of fast mode's f16 slabs unless
 * Q36_CUDA_MOEMMA=0 (which keeps cuda_moe_pre.cu's WMMA tiles).
 *
 * Why. Nsight Compute on the 35B-A3B's pp4096 (bench/results/
 * 2026-12-04-cuda-session20/): the WMMA tiles of 64 rows by 128 outputs
 * ran at 33-37% of the SMs' throughput with L2 at 61-78%: every tile of an
 * expert reads the expert's whole weight again, and an expert of ~128 rows
 * had two or three tiles. Here a tile has MM_BM = 128 rows (the routing
 * counts tiles of that size, mg_args.bm), so most experts' weights are read
 * once per block of outputs; rows past the tile's end are neither copied
 * (zeros) nor multiplied (a warp whose 32 rows are all past it skips its
 * products).
 *
 * A block: 8 warps, 4 along the rows (32 each) by 2 along the outputs;
 * MM_BN = 128 weight rows staged BK = 64 columns at a time in
 * three cp.async buffers (the copies of the next stages fly while this
 * one's products run). Plain: the weight rows are outputs n0 .. n0 + 128,
 * a warp 64 of them. GLU (be_matmul_id_swiglu): rows 0 .. 64 are the gate
 * weight's outputs n0 .. n0 + 64 and rows 64 .. 128 the up weight's same
 * outputs; a warp holds 32 outputs of both, and stores silu(gate) * up
 * (cuda_swiglu1) from its registers: one product instead of two products,
 * two routings and an elementwise pass, and no gate or up rows written.
 * Numerics: both operands are the halves k_moe_gemm_h reads, f32 sums in
 * 16-column steps in column order. Needs K a multiple of 8. Device only. */
#include "cuda.h"
#include "cuda_moe.h"
#include "cuda_moe_tile.h"
#include "cuda_mma.h"

#define MM_BN      128                           /* weight rows of a block */
#define MM_THREADS 256
static_assert(MM_BM == 4 * 32 && MM_BN == 2 * 64, "8 warps: 4 x 32 rows by 2 x 64 weight rows");

/* BK columns a stage in STAGES buffers: 64 (three buffers), or 32 with
 * Q36_CUDA_MOEBK=32 (four, twice the barriers: 35B-A3B pp4096 26,363
 * against 25,479 t/s, bench/results/2026-12-04-cuda-session20/); the
 * pitch skews ldmatrix's rows onto distinct banks */
template <int BK> struct mm_cfg {
    static constexpr int STAGES = BK == 32 ? 4 : 3, LH = BK + 8, XH = MM_BM * LH, WH = MM_BN * LH;
    static constexpr int CP = MM_BM * BK / 8 / MM_THREADS;   /* 16-byte copies of x (and W) a thread */
    static constexpr int SMEM = STAGES * (XH + WH) * 2;      /* 81,920 / 110,592 bytes: 2 blocks an SM */
    static_assert(CP * MM_THREADS * 8 == MM_BM * BK && MM_BN == MM_BM, "whole copies");
};

/* The tiles of experts e0 .. e1 (others return at once); wg (and, GLU,
 * wu): their weights, expert e's output n at row (e - e0) * N + n */
template <bool GLU, int BK>
__global__ void __launch_bounds__(MM_THREADS, 2)
k_moe_gemm_mma(mg_args a, const __half *__restrict__ xh, const __half *__restrict__ wg,
               const __half *__restrict__ wu, int64_t e0, int64_t e1)
{
    using C = mm_cfg<BK>;
    constexpr int OUT = GLU ? MM_BN / 2 : MM_BN;   /* outputs of a block */
    constexpr int NJ = 8;                          /* n8 fragments a warp */
    constexpr int MM_STAGES = C::STAGES, MM_LH = C::LH, MM_XH = C::XH, MM_WH = C::WH, MM_BK = BK;
    cuda_pdl_enter();
    extern __shared__ __align__(128) unsigned char mm_smem[];
    const mg_tile t = mg_tile_of(a, (int)blockIdx.y, 0);
    if (!t.rows || t.e < e0 || t.e >= e1)
        return;
    const int64_t n0 = (int64_t)blockIdx.x * OUT;
    const int tid = threadIdx.x, w = tid / 32, lane = tid % 32, wm = w % 4, wn = w / 4;
    __half *Xs = (__half *)mm_smem, *Ws = Xs + MM_STAGES * MM_XH;

    /* this thread's CP copies of each operand a stage: row r = idx / (BK / 8),
     * columns kc .. kc + 8; x rows past the tile's and columns past K are
     * zeros (not read), weight rows past N repeat the last (never stored) */
    const __half *xs[C::CP], *ws[C::CP];
    int so[C::CP], kc[C::CP];
    bool xin[C::CP];
    #pragma unroll
    for (int i = 0; i < C::CP; i++) {
        const int idx = tid + i * MM_THREADS, r = idx / (MM_BK / 8);
        kc[i] = 8 * (idx % (MM_BK / 8));
        so[i] = r * MM_LH + kc[i];
        mm_sources<GLU>(a, t, xh, wg, wu, e0, n0, OUT, r, kc[i], &xs[i], &ws[i], &xin[i]);
    }
    const int nk = (int)((a.K + MM_BK - 1) / MM_BK);
    auto load = [&](int kt) {
        const int s = kt % MM_STAGES;
        const int64_t k0 = (int64_t)kt * MM_BK;
        #pragma unroll
        for (int i = 0; i < C::CP; i++) {
            const bool kin = k0 + kc[i] < a.K;
            cp16(Xs + s * MM_XH + so[i], xs[i] + (kin ? k0 : 0), kin && xin[i]);
            cp16(Ws + s * MM_WH + so[i], ws[i] + (kin ? k0 : 0), kin);
        }
    };

    float acc[2][NJ][4];
    #pragma unroll
    for (int i = 0; i < 2; i++)
        #pragma unroll
        for (int j = 0; j < NJ; j++)
            acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
    /* this warp's rows of the tile (none when <= 0): its second 16 rows
     * are multiplied only when some of them are the tile's */
    const int mrows = t.rows - 32 * wm;
    /* ldmatrix addresses: A (rows 32 wm + lr, column lc), and the weight
     * rows of n8 fragment j (4 tiles of 8 columns: one fragment, k 0 .. 32) */
    const int lr = (lane % 8) + 8 * ((lane / 8) % 2), lc = 8 * (lane / 16);
    const int xo = (32 * wm + lr) * MM_LH + lc;
    int wo[NJ];
    #pragma unroll
    for (int j = 0; j < NJ; j++) {
        const int row = GLU ? (j < 4 ? 32 * wn + 8 * j : OUT + 32 * wn + 8 * (j - 4)) : 64 * wn + 8 * j;
        wo[j] = (row + lane % 8) * MM_LH + 8 * (lane / 8);
    }

    mg_stages<MM_STAGES>(nk, load, [&](int kt) {
        if (mrows <= 0)
            return;
        #pragma unroll
        for (int c32 = 0; c32 < BK; c32 += 32) {      /* 32 columns: two 16-column steps */
            const unsigned xb = mma_sa(Xs + (kt % MM_STAGES) * MM_XH + xo + c32);
            const unsigned wb = mma_sa(Ws + (kt % MM_STAGES) * MM_WH + c32);
            uint32_t af[2][2][4];      /* [16 rows][16 columns] */
            #pragma unroll
            for (int i = 0; i < 2; i++)
                if (i == 0 || mrows > 16)
                    #pragma unroll
                    for (int kk = 0; kk < 2; kk++)
                        mma_ldsm4<false>(af[i][kk], xb + 2 * (16 * i * MM_LH + 16 * kk));
            #pragma unroll
            for (int j = 0; j < NJ; j++) {
                uint32_t b[4];
                mma_ldsm4<false>(b, wb + 2 * wo[j]);
                #pragma unroll
                for (int i = 0; i < 2; i++)
                    if (i == 0 || mrows > 16) {
                        mma_16816(acc[i][j], af[i][0], b[0], b[1]);
                        mma_16816(acc[i][j], af[i][1], b[2], b[3]);
                    }
            }
        }
    });
    if (mrows <= 0)
        return;

    /* lane (g, t4) holds rows g and g + 8 of each 16, outputs 2 t4, 2 t4 + 1
     * of each n8 fragment */
    const int g = lane / 4, t4 = lane % 4;
    const bool v2 = a.ldy % 2 == 0 && (uintptr_t)a.y % 8 == 0;
    #pragma unroll
    for (int i = 0; i < 2; i++)
        #pragma unroll
        for (int h = 0; h < 2; h++) {
            const int m = 32 * wm + 16 * i + g + 8 * h;
            if (m >= t.rows)
                continue;
            float *yr = a.y + (int64_t)a.perm[t.p0 + m] * a.ldy;
            #pragma unroll
            for (int j = 0; j < (GLU ? NJ / 2 : NJ); j++) {
                const int64_t n = n0 + (GLU ? 32 * wn : 64 * wn) + 8 * j + 2 * t4;
                float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
                if (GLU) {
                    v0 = cuda_swiglu1(v0, acc[i][j + NJ / 2][2 * h]);
                    v1 = cuda_swiglu1(v1, acc[i][j + NJ / 2][2 * h + 1]);
                }
                mm_store2(yr, n, a.N, v2, v0, v1);
            }
        }
}

template <int BK> static bool ready(const cuda_ctx *c)
{
    constexpr int S = mm_cfg<BK>::SMEM;
    return c->smem_optin >= S &&
           cudaFuncSetAttribute(k_moe_gemm_mma<false, BK>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                S) == cudaSuccess &&
           cudaFuncSetAttribute(k_moe_gemm_mma<true, BK>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                S) == cudaSuccess;
}

bool cuda_moe_mma_ready(const cuda_ctx *c)
{
    return c->moe_bk == 64 ? ready<64>(c) : ready<32>(c);
}

template <int BK>
static void launch(const cuda_ctx *c, const mg_args *a, const __half *xh, const __half *wg,
                   const __half *wu, int64_t e0, int64_t e1, int64_t tiles)
{
    const int64_t out = wu ? MM_BN / 2 : MM_BN;
    const dim3 grid((unsigned)((a->N + out - 1) / out), (unsigned)tiles);
    if (wu)
        cuda_launch(k_moe_gemm_mma<true, BK>, grid, MM_THREADS, mm_cfg<BK>::SMEM, c->stream, *a,
                    xh, wg, wu, e0, e1);
    else
        cuda_launch(k_moe_gemm_mma<false, BK>, grid, MM_THREADS, mm_cfg<BK>::SMEM, c->stream, *a,
                    xh, wg, (const __half *)NULL, e0, e1);
}

bool cuda_moe_mma(be_ctx *be, const mg_args *a, const __half *xh, const __half *wg,
                  const __half *wu, int64_t e0, int64_t e1, int64_t tiles)
{
    const cuda_ctx *c = cuda_ctx_of(be);
    if (c->moe_wg)
        return cuda_moe_wg(be, a, xh, wg, wu, e0, e1, tiles);
    if (c->moe_bk == 64)
        launch<64>(c, a, xh, wg, wu, e0, e1, tiles);
    else
        launch<32>(c, a, xh, wg, wu, e0, e1, tiles);
    return CUDA_LAUNCHED(be, wu ? "k_moe_glu_mma" : "k_moe_gemm_mma");
}
