/* cuda_moe_wq.cu: the grouped expert products of cuda_moe_wg.cu on Q4_K
 * weights read in their block format, dequantized to f16 inside the
 * product (Q36_CUDA_MOEWQ, on unless "0", Hopper only; other weight types
 * keep cuda_moe_wg.cu's f16 weights).
 *
 * Why. cuda_moe_wg.cu reads f16 weights: the kept f16 copies of
 * cuda_f16keep.cu (64 GB beside the 20 GB file for the 35B-A3B's experts)
 * or a slab dequantized ahead of each product. At 128 rows an expert (a
 * pp4096 of the 35B-A3B: 4096 tokens x 8 of 256 experts) a weight of two
 * bytes serves 256 flops, below what the H200 needs (~200 a byte of
 * memory bandwidth at its f16 tensor rate, 989 TFLOPS over 4.8 TB/s) to
 * stop waiting for memory: the expert products of a pass read ~64 GB of
 * f16 weights. Q4_K is 4.5 bits a weight, a 3.6th of the bytes, and needs
 * no copy at all.
 *
 * The same blocks, tiles, routing, x rows and epilogue as cuda_moe_wg.cu
 * (2 warpgroups, 128 rows by 128 weight rows, stages of 64 columns, x in
 * WG_STAGES cp.async buffers). The weight tile has two buffers, written
 * by the block's threads: thread tid takes weight row tid / 2 and the 32
 * columns 32 (tid % 2) .. of a stage, which are one Q4_K sub-block: its
 * 32 code bytes (low nibbles for the first 32 columns of the stage, high
 * for the next) and the block's 16-byte header (d, dmin, the 12 scale
 * bytes) are loaded into registers a stage ahead, then turned into f16
 * (deq8's values, cuda_deq.h, rounded to nearest: the halves of the kept
 * copies) and stored to their swizzled place while the warpgroups'
 * products of the stage before run. So the products get the same f16
 * operands in the same order as cuda_moe_wg.cu's on the kept copies: the
 * same bits (tests/gpu: moewq_same_bits). Needs K a multiple of 256 (a
 * Q4_K row always is) and 16-byte aligned rows (144-byte blocks).
 * With PIPE (Q36_CUDA_MOEWGPIPE=1, as cuda_moe_wg.cu's: off by default)
 * the weight tile has three buffers and each stage's products run on
 * while the next stage's are issued. Until session 39 ptxas serialized
 * every wgmma here (wg_group, cuda_wgmma.h): the fused gate/up product
 * took 0.615 ms a call on the 35B-A3B's pp4096, 0.541 since (H100;
 * 0.427 on the f16 copies; bench/results/2026-12-06-cuda-session39/). */
#include "cuda.h"
#include "cuda_deq.h"
#include "cuda_moe.h"
#include "cuda_wgmma.h"

#define WQ_SMEM (WG_STAGES * WG_TILE + 3 * WG_TILE + 1024)   /* 99,328: 2 blocks an SM */

#if WG_ON
/* A thread's bytes of one stage: the Q4_K block's header and the 32 code
 * bytes of the stage's two sub-blocks */
struct wq_raw { uint4 h, q0, q1; };

__device__ __forceinline__ wq_raw wq_fetch(const uint8_t *row, int kt)
{
    const uint8_t *b = row + (kt / 4) * 144;
    const uint4 *q = (const uint4 *)(b + 16 + 32 * (kt % 4));
    wq_raw r;
    r.h = *(const uint4 *)b;
    r.q0 = q[0];
    r.q1 = q[1];
    return r;
}

/* the code (0 .. 15) as a float without a conversion instruction (those
 * run at a quarter of the rate on Hopper; 8192 of them a stage were as
 * many cycles as the stage's products): 2^23 + q has q in its low
 * mantissa bits, and taking 2^23 away is exact */
__device__ __forceinline__ float wq_code(unsigned u, int sh)
{
    return __uint_as_float(((u >> sh) & 15) | 0x4B000000u) - 8388608.0f;
}

/* 8 codes of word pair (u0, u1) (bytes in order, nibble at sh) times dl,
 * less ml, as 8 halves: deq8's values (the same product and difference
 * of the same floats) rounded to nearest */
__device__ __forceinline__ uint4 wq_half8(unsigned u0, unsigned u1, int sh, float dl, float ml)
{
    unsigned o[4];
    #pragma unroll
    for (int j = 0; j < 4; j++) {
        const unsigned u = j < 2 ? u0 : u1, s = 16 * (j & 1);
        const float v0 = dl * wq_code(u, s + sh) - ml;
        const float v1 = dl * wq_code(u, s + 8 + sh) - ml;
        const __half2 h = __floats2half2_rn(v0, v1);
        o[j] = *(const unsigned *)&h;
    }
    return make_uint4(o[0], o[1], o[2], o[3]);
}

/* stage kt's 32 columns of this thread (hh: the second 32) to the tile W */
__device__ __forceinline__ void wq_put(const wq_raw &r, int kt, int hh, unsigned char *W,
                                       const int wso[4])
{
    int sc0, m0, sc1, m1;
    k4_scale_min2(r.h, kt % 4, &sc0, &m0, &sc1, &m1);
    const float dl = f16w(r.h.x, 0) * (float)(hh ? sc1 : sc0);
    const float ml = f16w(r.h.x, 1) * (float)(hh ? m1 : m0);
    const int sh = 4 * hh;
    *(uint4 *)(W + wso[0]) = wq_half8(r.q0.x, r.q0.y, sh, dl, ml);
    *(uint4 *)(W + wso[1]) = wq_half8(r.q0.z, r.q0.w, sh, dl, ml);
    *(uint4 *)(W + wso[2]) = wq_half8(r.q1.x, r.q1.y, sh, dl, ml);
    *(uint4 *)(W + wso[3]) = wq_half8(r.q1.z, r.q1.w, sh, dl, ml);
}
#endif

/* All of a's tiles; wg (and, GLU, wu): the Q4_K weights, expert e's
 * output n at row e * N + n, rows a.rb bytes apart */
template <bool GLU, bool PIPE>
__global__ void __launch_bounds__(WG_THREADS, 2)
k_moe_gemm_wq(mg_args a, const __half *__restrict__ xh, const uint8_t *__restrict__ wg,
              const uint8_t *__restrict__ wu)
{
    cuda_pdl_enter();
#if WG_ON
    constexpr int OUT = GLU ? WG_BN / 2 : WG_BN;   /* outputs of a block */
    extern __shared__ __align__(128) unsigned char wq_smem[];
    const mg_tile t = mg_tile_of(a, (int)blockIdx.y, 0);
    if (!t.rows)
        return;
    const int64_t n0 = (int64_t)blockIdx.x * OUT;
    const int tid = threadIdx.x, g = wg_group();
    unsigned char *base = (unsigned char *)(((uintptr_t)wq_smem + 1023) & ~(uintptr_t)1023);
    unsigned char *Xs = base, *Ws = base + WG_STAGES * WG_TILE;

    /* x: this thread's 4 copies a stage, as cuda_moe_wg.cu's */
    const __half *xs[4];
    int so[4];
    bool xin[4];
    #pragma unroll
    for (int i = 0; i < 4; i++) {
        const int idx = tid + i * WG_THREADS, r = idx / 8, c = idx % 8;
        so[i] = wg_swz(r, c);
        xs[i] = mm_xsource(a, t, xh, r, 8 * c, &xin[i]);
    }
    /* the weight: row wr of the block's 128 (GLU: the gate's outputs, then
     * the same outputs' up), the last row past N (never stored) */
    const int wr = tid / 2, hh = tid % 2;
    int64_t n = n0 + (GLU ? wr % OUT : wr);
    n = n < a.N ? n : a.N - 1;
    const uint8_t *wrow = (GLU && wr >= OUT ? wu : wg) + (t.e * a.N + n) * (int64_t)a.rb;
    int wso[4];
    #pragma unroll
    for (int i = 0; i < 4; i++)
        wso[i] = wg_swz(wr, 4 * hh + i);

    const int nk = (int)(a.K / WG_BK);
    constexpr int NW = PIPE ? 3 : 2;               /* weight buffers */
    auto load = [&](int kt) {
        const int s = kt % WG_STAGES;
        const int64_t k0 = (int64_t)kt * WG_BK;
        #pragma unroll
        for (int i = 0; i < 4; i++)
            cp16(Xs + s * WG_TILE + so[i], xs[i] + k0, xin[i]);
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
    wq_raw raw = wq_fetch(wrow, 0);
    wq_put(raw, 0, hh, Ws, wso);
    if (nk > 1)
        raw = wq_fetch(wrow, 1);
    for (int kt = 0; kt < nk; kt++) {
        cp_wait<WG_STAGES - 2>();      /* this thread's x copies of stage kt have landed */
        wg_proxy_fence();              /* ... and its weight stores: visible to the products */
        __syncthreads();               /* everyone's; stage kt-1's products are done (!PIPE) */
        if (!PIPE) {
            if (kt + WG_STAGES - 1 < nk)
                load(kt + WG_STAGES - 1);
            cp_commit();
        }
        if (busy) {
            const uint64_t da = wg_desc(Xs + (kt % WG_STAGES) * WG_TILE + 64 * 128 * g);
            const uint64_t db = wg_desc(Ws + (kt % NW) * WG_TILE);
            wg_fence();
            #pragma unroll
            for (int kk = 0; kk < WG_BK / 16; kk++)   /* 32 bytes a step: 2 in the descriptor */
                wg_mma(d, da + 2 * kk, db + 2 * kk);
            wg_commit();
        }
        /* while they run: the next stage's weights into the buffer whose
         * products (stage kt-1's, or kt-2's with PIPE) are done, the one
         * after fetched */
        if (kt + 1 < nk) {
            wq_put(raw, kt + 1, hh, Ws + ((kt + 1) % NW) * WG_TILE, wso);
            if (kt + 2 < nk)
                raw = wq_fetch(wrow, kt + 2);
        }
        if (busy) {
            if (PIPE)
                wg_wait1();            /* stage kt-1's products are done, kt's run on */
            else
                wg_wait0();
        }
        if (PIPE) {
            __syncthreads();           /* everyone's stage kt-1: its x buffer is free */
            if (kt + WG_STAGES - 1 < nk)
                load(kt + WG_STAGES - 1);
            cp_commit();
        }
    }
    if (PIPE && busy)
        wg_wait0();
    cp_wait<0>();
    if (busy)
        wg_store<GLU>(a, t, n0, d, tid);
#endif
}

bool cuda_moe_wq_ready(const cuda_ctx *c)
{
    return wg_ready(c, k_moe_gemm_wq<false, false>, k_moe_gemm_wq<true, false>, WQ_SMEM) &&
           wg_ready(c, k_moe_gemm_wq<false, true>, k_moe_gemm_wq<true, true>, WQ_SMEM);
}

bool cuda_moe_wq_takes(const cuda_ctx *c, const be_weight *w)
{
    return c->moe_wq && w->type == QT_Q4_K && (int64_t)w->t->ne[0] % 256 == 0 &&
           w->row_bytes == (uint64_t)w->t->ne[0] / 256 * 144 && (uintptr_t)w->data % 16 == 0;
}

bool cuda_moe_wq(be_ctx *be, const mg_args *a, const __half *xh, const uint8_t *wg,
                 const uint8_t *wu, int64_t tiles)
{
    const cuda_ctx *c = cuda_ctx_of(be);
    const dim3 grid = wg_grid(a, wu, tiles);
#define WQL(G, P) cuda_launch(k_moe_gemm_wq<G, P>, grid, WG_THREADS, WQ_SMEM, c->stream, *a, xh, \
                              wg, G ? wu : (const uint8_t *)NULL)
    if (wu && c->moe_wg_pipe)
        WQL(true, true);
    else if (wu)
        WQL(true, false);
    else if (c->moe_wg_pipe)
        WQL(false, true);
    else
        WQL(false, false);
#undef WQL
    return CUDA_LAUNCHED(be, wu ? "k_moe_glu_wq" : "k_moe_gemm_wq");
}
