/* cuda_moe_pre.cu: the grouped expert products of large prompt batches
 * with both operands made f16 ahead of the product (Q36_CUDA_MOEGEMM=3,
 * and the default's choice from MG_PRE_ROWS rows an expert: cuda_moe.h).
 *
 * k_moe_gemm_tc (cuda_moe.cu) dequantizes each weight tile inside the
 * product, once for every tile of 64 rows of its expert, and rounds the
 * gathered f32 x rows to f16 once for every block of 128 outputs; the
 * profile of a 35B-A3B pp4096 pass had those products at ~50 TFLOPS. Here:
 *  1. k_mg_half: x's rows rounded to f16 once, in their own order (xh:
 *     one a token when the k ranks of a token share its row, else one a
 *     (token, rank) row); the tiles find a sorted row's x row through the
 *     routing's perm. (Gathering a copy a (token, rank) row in sorted order
 *     first wrote k = 8 copies of each token's row: 9 ms of a 35B-A3B
 *     pp4096 pass, bench/results/2026-12-02-cuda-prefill/, run-f169360);
 *  2. the experts' weights dequantized to f16 (cuda_deq.h, k_dequant_h:
 *     deq8's values rounded to nearest, the same halves k_moe_gemm_tc
 *     stages) into a slab of whole experts; more slabs when they do not
 *     all fit in the reserved room;
 *  3. k_moe_gemm_h: the same tiles as k_moe_gemm_tc (MG_BM rows by TC_BN
 *     outputs, 2 x 2 WMMA accumulators a warp, tc_store; grid x the
 *     output blocks, y the tile slots; or, with Q36_CUDA_MOEBN=256, 256
 *     outputs and 2 x 4 accumulators a warp, each x stage serving twice
 *     the weight rows), whose stages are
 *     plain 16-byte copies (cp.async) into HG_STAGES shared buffers: while
 *     the warps multiply one, the copies of the next ones are in flight.
 *     Blocks of experts outside the slab return at once.
 * Both operands round as in k_moe_gemm_tc and the sums run over the same
 * 16-column steps in the same order. Needs K a multiple of 8 (16-byte
 * rows) and the scratch (cuda_moe.cu's reserve_pre takes it only from
 * memory to spare); otherwise the caller runs k_moe_gemm_tc. Device only. */
#include "cuda.h"
#include "cuda_deq.h"
#include "cuda_moe.h"
#include "cuda_moe_tile.h"

#include <mma.h>

#define HG_BK     32                                  /* columns a stage */
#define HG_STAGES 4
#define HG_LH     (HG_BK + 8)                         /* f16 pitch: 80 bytes, skews the banks */
#define HG_XH     (MG_BM * HG_LH)                     /* halves of one x stage */
/* BN outputs a block (TC_BN, the default, or 256: Q36_CUDA_MOEBN=256):
 * halves of one weight stage, bytes of shared memory (61,440 / 102,400:
 * opt-in above 48 KiB), 16-byte weight copies a thread a stage */
template <int BN> struct hg {
    static constexpr int WH = BN * HG_LH, FN = BN / 64, WCP = BN * HG_BK / 8 / MG_THREADS;
    static constexpr int SMEM = HG_STAGES * (HG_XH + WH) * 2;
    static_assert(SMEM >= MG_BM * (BN + 4) * 4, "the output tile fits over the stage buffers");
    static_assert(WCP * MG_THREADS * 8 == BN * HG_BK, "whole weight copies");
};
static_assert(MG_BM * HG_BK / 8 == MG_THREADS, "one 16-byte x copy a thread a stage");
static_assert(HG_BK % 16 == 0 && (HG_LH * 2) % 16 == 0, "WMMA steps and 16-byte rows");

/* xh[r] = x's row r rounded to f16, for its XR rows (a token's when
 * x_per_tok, else a (token, rank) row's); 8 columns a thread (two 16-byte
 * loads, one store) when x's rows are 16-byte aligned (K is a multiple of
 * 8 here) */
__global__ void k_mg_half(mg_args a, int64_t XR, __half *__restrict__ xh)
{
    cuda_pdl_enter();
    const bool vec = a.ldx % 4 == 0 && (uintptr_t)a.x % 16 == 0;
    for (int64_t r = blockIdx.x; r < XR; r += gridDim.x) {
        const float *x = a.x + r * a.ldx;
        __half *o = xh + r * a.K;
        if (vec) {
            for (int64_t i = 8 * (int64_t)threadIdx.x; i < a.K; i += 8 * (int64_t)blockDim.x) {
                const float4 u = *(const float4 *)(x + i), w = *(const float4 *)(x + i + 4);
                const float v[8] = { u.x, u.y, u.z, u.w, w.x, w.y, w.z, w.w };
                *(uint4 *)(o + i) = cuda_half8(v);
            }
        } else {
            for (int64_t i = threadIdx.x; i < a.K; i += blockDim.x)
                o[i] = __float2half_rn(x[i]);
        }
    }
}

/* The tiles of experts e0 .. e1; wh: their weights, f16, expert e's
 * output n at row (e - e0) * N + n */
template <int BN>     /* blocks an SM: as many as shared memory allows (3 at 128, 2 at 256) */
__global__ void __launch_bounds__(MG_THREADS, BN == 256 ? 2 : 3)
k_moe_gemm_h(mg_args a, const __half *__restrict__ xh, const __half *__restrict__ wh, int64_t e0,
             int64_t e1)
{
    typedef hg<BN> H;
    cuda_pdl_enter();
    extern __shared__ __align__(128) unsigned char hsm[];
    const mg_tile t = mg_tile_of(a, (int)blockIdx.y, 0);
    if (!t.rows || t.e < e0 || t.e >= e1)
        return;
    const int64_t n0 = (int64_t)blockIdx.x * BN;
    const int tid = threadIdx.x;
    __half *Xs = (__half *)hsm, *Ws = Xs + HG_STAGES * HG_XH;
    /* this thread's copies a stage: x row xm, weight rows wr[i], at column
     * offsets of 8 halves; rows past the tile's or N repeat the last one
     * (their outputs are never stored) */
    const int xm = tid / (HG_BK / 8), xc = 8 * (tid % (HG_BK / 8));
    const int64_t q = a.perm[t.p0 + (xm < t.rows ? xm : t.rows - 1)];
    const __half *xs = xh + (a.x_per_tok ? q / a.k : q) * a.K + xc;
    const __half *ws[H::WCP];
    int wr[H::WCP], wc[H::WCP];
    #pragma unroll
    for (int i = 0; i < H::WCP; i++) {
        const int idx = tid + i * MG_THREADS;
        wr[i] = idx / (HG_BK / 8);
        wc[i] = 8 * (idx % (HG_BK / 8));
        const int64_t n = n0 + wr[i] < a.N ? n0 + wr[i] : a.N - 1;
        ws[i] = wh + ((t.e - e0) * a.N + n) * a.K + wc[i];
    }
    const int nk = (int)((a.K + HG_BK - 1) / HG_BK);
    auto load = [&](int kt) {
        const int s = kt % HG_STAGES;
        const int64_t k0 = (int64_t)kt * HG_BK;
        cp16(Xs + s * HG_XH + xm * HG_LH + xc, k0 + xc < a.K ? xs + k0 : xs, k0 + xc < a.K);
        #pragma unroll
        for (int i = 0; i < H::WCP; i++)
            cp16(Ws + s * H::WH + wr[i] * HG_LH + wc[i], k0 + wc[i] < a.K ? ws[i] + k0 : ws[i],
                 k0 + wc[i] < a.K);
    };
    tc_acc acc[2][H::FN];
    tc_zero<H::FN>(acc);
    mg_stages<HG_STAGES>(nk, load, [&](int kt) {
        const __half *xb = Xs + (kt % HG_STAGES) * HG_XH, *wb = Ws + (kt % HG_STAGES) * H::WH;
        tc_mma<HG_BK, HG_LH, H::FN>(acc, xb, wb, tid);
    });
    __syncthreads();                   /* the stage buffers become Cs */
    tc_store<H::FN>(a, t, n0, acc, (float *)hsm, tid);
}

/* ------------------------------------------------------------------ the op */

size_t cuda_moe_pre_halves(const be_shape *s, int mode)
{
    if (mode != MG_MODE_PRE && mode != MG_MODE_AUTO)
        return 0;
    const int64_t Q = s->n_rows * s->n_expert_used;
    const int64_t least = mode == MG_MODE_PRE ? MG_MIN_ROWS : MG_PRE_ROWS * s->n_expert;
    if (!s->n_expert || !s->expert_elems || Q < least || Q < MG_MIN_ROWS)
        return 0;
    int64_t slab = s->n_expert * s->expert_elems;
    if (slab > MG_SLAB_HALVES)
        slab = MG_SLAB_HALVES > s->expert_elems ? MG_SLAB_HALVES : s->expert_elems;
    return (size_t)((Q * s->max_in_expert + 7) & ~(int64_t)7) + (size_t)slab;
}

template <int BN> static bool ready(const cuda_ctx *c)
{
    return c->smem_optin >= hg<BN>::SMEM &&
           cudaFuncSetAttribute(k_moe_gemm_h<BN>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                hg<BN>::SMEM) == cudaSuccess;
}

bool cuda_moe_pre_ready(const cuda_ctx *c)
{
    return c->moe_bn == 256 ? ready<256>(c) : ready<TC_BN>(c);
}

bool cuda_moe_pre_fits(const cuda_ctx *c, const mg_args *a, int64_t tiles)
{
    const int64_t xh = (a->Q * a->K + 7) & ~(int64_t)7, per = a->N * a->K;
    return a->K % 8 == 0 && c->moeh && (int64_t)c->moeh_halves >= xh + per && tiles <= 65535;
}

/* k_mg_half: x's rows (a token's, or a (token, rank) row's) to f16 in xg */
static bool half_rows(be_ctx *be, const mg_args &a, __half *xg)
{
    const int64_t XR = a.x_per_tok ? a.Q / a.k : a.Q;
    cuda_launch(k_mg_half, (unsigned)(XR < 65535 * 8 ? XR : 65535 * 8), 256, 0,
                cuda_ctx_of(be)->stream, a, XR, xg);
    return CUDA_LAUNCHED(be, "k_mg_half");
}

const __half *cuda_moe_xh(be_ctx *be, const mg_args *a)
{
    const cuda_ctx *c = cuda_ctx_of(be);
    /* a token's rows as an f16 product of the same rows left them (cuda.h:
     * h16; the shared expert's up and gate products), the same halves
     * k_mg_half would make, else made here */
    if (a->x_per_tok && cuda_h16_is(c, a->x, a->Q / a->k, a->ldx, a->K))
        return (const __half *)c->deq;
    return half_rows(be, *a, c->moeh) ? c->moeh : NULL;
}

bool cuda_moe_glu_pre(be_ctx *be, const mg_args *a, const __half *kg, const __half *ku,
                      int64_t tiles)
{
    const __half *xh = cuda_moe_xh(be, a);
    return xh && cuda_moe_mma(be, a, xh, kg, ku, 0, a->E, tiles);
}

bool cuda_moe_gemm_pre(be_ctx *be, const be_weight *w, const mg_args *ap, int64_t tiles)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const mg_args &a = *ap;
    const int64_t xh = (a.Q * a.K + 7) & ~(int64_t)7, per = a.N * a.K;
    if (!cuda_moe_pre_fits(c, ap, tiles))
        return false;
    /* Q36_CUDA_F16KEEP: every expert's kept f16 copy, one slab */
    const __half *kept = cuda_f16_kept(be, w->type, a.W, a.rb, a.K, a.E * a.N);
    const int64_t es = kept ? a.E : ((int64_t)c->moeh_halves - xh) / per;   /* experts a slab */
    __half *xg = c->moeh, *wh = c->moeh + xh;
    cudaStream_t st = c->stream;
    if (!half_rows(be, a, xg))
        return true;
    /* output blocks fastest: the blocks that share a tile's x rows run
     * together, as do (a few blocks apart) an expert's tiles, which share
     * its weight rows; both come from L2 instead of memory */
    const int bn = c->moe_bn == 256 ? 256 : TC_BN;
    const dim3 grid((unsigned)((a.N + bn - 1) / bn), (unsigned)tiles);
    for (int64_t e0 = 0; e0 < a.E; e0 += es) {
        const int64_t e1 = e0 + es < a.E ? e0 + es : a.E;
        if (!kept && !cuda_dequant_h(be, w->type, a.W, a.rb, a.K, e0 * a.N, (e1 - e0) * a.N, wh))
            return true;
        const __half *ws = kept ? kept : wh;
        if (a.bm == MM_BM) {           /* routed for cuda_moe_mma.cu's tiles */
            if (!cuda_moe_mma(be, ap, xg, ws, NULL, e0, e1, tiles))
                return true;
            continue;
        }
        if (bn == 256)
            cuda_launch(k_moe_gemm_h<256>, grid, MG_THREADS, hg<256>::SMEM, st, a,
                        (const __half *)xg, ws, e0, e1);
        else
            cuda_launch(k_moe_gemm_h<TC_BN>, grid, MG_THREADS, hg<TC_BN>::SMEM, st, a,
                        (const __half *)xg, ws, e0, e1);
        if (!CUDA_LAUNCHED(be, "k_moe_gemm"))
            return true;
    }
    return true;
}
