/* cuda_attn_q8.cu: q8_0 K/V caches on the GPU (`-ctk q8_0 -ctv q8_0`):
 * the Walsh-Hadamard rotations the model gives q, k, v and the attention
 * output for them (be_hadamard), the cache write that quantizes k and v
 * rows (be_kv_store), and attention over the quantized rows (be_attention's
 * splits; cuda_seq.cu merges them as it merges its own).
 *
 * Rotation: each run of n columns of a row times 1/sqrtf(n) (the host's
 * float), then butterflies u+v, u-v of span 1 .. n/2 in shared memory: the
 * CPU's operations on the same values, so the CPU's bits.
 *
 * Store: a thread per block of 32 values, quantized as the CPU's
 * quant_act_quantize (ggml's x86 quantize_row_q8_0): amax, id = 127/amax,
 * codes round(x * id) to nearest even, scale amax/127 rounded to f16: the
 * CPU's bytes.
 *
 * Attention, as llama.cpp's CPU flash attention reads quantized caches
 * (cpu_attn_q8.c): each query head quantized to q8_0 the same way, each
 * score the q8_0 dot product with the key's row times the scale, V rows
 * dequantized (code times scale). Split along the keys as cuda_seq.cu's
 * k_attn_split_gqa: a block per (split, G query heads of one K/V head,
 * query row), four warps taking every fourth key, each with an online
 * softmax per head; lane l holds dims [l*NPL, (l+1)*NPL) (NPL = hd / 32),
 * 32 / NPL lanes a q8_0 block. Sums in another order than the CPU's
 * (partial integer dots per lane, then a float sum over the warp): the
 * outputs agree to float rounding, not bit for bit.
 *
 * Prompts in fast mode (cuda_fattn's batches): each run's rows of the
 * caches converted to f16 copies (code times scale, rounded), the runs
 * renumbered onto them, q's rows quantized to q8_0 and back (the values
 * the splits and the CPU multiply), and the tiled tensor-core kernels of
 * f16 caches run over the copies (cuda_fattn_q8; llama.cpp's CUDA build
 * also converts quantized caches to f16 for its prompt kernels): about f16
 * caches' speed, one copy of a layer's keys at a time. Exact mode, and a batch recorded as a
 * graph or without room for the copies, take the splits. */
#include "cuda.h"
#include "cuda_attn_split.h"

#include <assert.h>
#include <math.h>

#define Q8A_THREADS 128
#define Q8A_WARPS   (Q8A_THREADS / 32)
#define Q8_BLK      34          /* bytes of a q8_0 block: f16 scale, 32 codes */

/* ------------------------------------------------------------- rotation */

__global__ void k_hadamard(float *x, int64_t ld, int n, float scale)
{
    cuda_pdl_enter();
    extern __shared__ float hs[];
    float *y = x + (int64_t)blockIdx.x * ld + (int64_t)blockIdx.y * n;
    const int t = threadIdx.x, half = n / 2;
    hs[t] = y[t] * scale;
    hs[t + half] = y[t + half] * scale;
    __syncthreads();
    for (int len = 1; len < n; len <<= 1) {
        const int i = (t / len) * 2 * len + t % len;     /* this thread's pair (i, i + len) */
        const float u = hs[i], v = hs[i + len];
        hs[i] = u + v;
        hs[i + len] = u - v;
        __syncthreads();
    }
    y[t] = hs[t];
    y[t + half] = hs[t + half];
}

void cuda_hadamard(be_ctx *be, be_tensor *x, int64_t n)
{
    assert(n >= 2 && n <= 2048 && (n & (n - 1)) == 0 && x->cols % n == 0);
    if (!x->rows)
        return;
    if (x->rows > 0x7fffffff || x->cols / n > 65535) {
        be_fail(be, Q36_E_UNSUP, "cuda hadamard: %lld rows of %lld runs of %lld (at most 2^31 - 1 "
                "rows, 65535 runs)", (long long)x->rows, (long long)(x->cols / n), (long long)n);
        return;
    }
    const float scale = 1.0f / sqrtf((float)n);     /* the CPU's (cpu_ops.c) */
    cuda_launch(k_hadamard, dim3((unsigned)x->rows, (unsigned)(x->cols / n)), (unsigned)(n / 2),
                (size_t)n * sizeof(float), cuda_ctx_of(be)->stream, (float *)x->data, x->ld, (int)n,
                scale);
    CUDA_LAUNCHED(be, "k_hadamard");
}

/* ----------------------------------------------------------------- store */

/* 32 values to a q8_0 block at dst (2-byte aligned), as
 * quant_act_quantize's x86 loop. The scale goes as one 16-bit store: with
 * two byte stores of the f16's halves (nvcc 13.0, sm_90a) the low byte
 * came out 0 on the H200 (bench/results/2026-12-05-cuda-session26/,
 * run-52c9f53) while the high byte, from the same register shifted, was
 * right. */
__device__ __forceinline__ void q8_block_store(const float *x, uint8_t *dst)
{
    float amax = 0.0f;
    #pragma unroll
    for (int i = 0; i < 32; i++)
        amax = fmaxf(amax, fabsf(x[i]));
    const float id = amax != 0.0f ? __fdiv_rn(127.0f, amax) : 0.0f;
    const __half d = __float2half_rn(__fdiv_rn(amax, 127.0f));
    *(unsigned short *)dst = __half_as_ushort(d);
    #pragma unroll
    for (int i = 0; i < 32; i++)
        dst[2 + i] = (uint8_t)(int8_t)__float2int_rn(__fmul_rn(x[i], id));
}

/* A thread per (row, block of 32 columns) of k and of v */
__global__ void k_kv_store_q8(uint8_t *kc, int64_t kpitch, uint8_t *vc, int64_t vpitch,
                              const float *k, int64_t ldk, const float *v, int64_t ldv,
                              const int32_t *runs, int n_seq, int64_t kv_rows, int64_t T,
                              int64_t cols)
{
    cuda_pdl_enter();
    const int64_t nb = cols / 32;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < 2 * T * nb;
         i += (int64_t)gridDim.x * blockDim.x) {
        const bool isv = i >= T * nb;
        const int64_t e = isv ? i - T * nb : i, r = e / nb, blk = e % nb;
        const int4 q = run_of(runs, n_seq, r);
        if (q.x < 0)
            continue;
        const int64_t cr = (int64_t)q.x * kv_rows + q.w + (r - q.y);
        q8_block_store((isv ? v + r * ldv : k + r * ldk) + blk * 32,
                       (isv ? vc + cr * vpitch : kc + cr * kpitch) + blk * Q8_BLK);
    }
}

void cuda_kv_store_q8(be_ctx *be, be_tensor *kc, be_tensor *vc, const be_tensor *k,
                      const be_tensor *v, const be_batch *b)
{
    assert(kc->type == BE_Q8_0 && vc->type == BE_Q8_0 && k->cols % 32 == 0);
    const int64_t T = k->rows, n = 2 * T * (k->cols / 32);
    if (!n)
        return;
    cuda_launch(k_kv_store_q8, cuda_blocks(n, 128), 128, 0, cuda_ctx_of(be)->stream,
                (uint8_t *)kc->data, (int64_t)be_type_bytes(BE_Q8_0, kc->ld), (uint8_t *)vc->data,
                (int64_t)be_type_bytes(BE_Q8_0, vc->ld), (const float *)k->data, k->ld,
                (const float *)v->data, v->ld, (const int32_t *)b->runs->data, b->n_seq, b->kv_rows,
                T, k->cols);
    CUDA_LAUNCHED(be, "k_kv_store_q8");
}

/* --------------------------------------------- prompts: f16 copies, tiles */

/* A thread per (copy row, block of 32): run s's cache rows [0, len) of
 * slot runs[4s] to copy rows s * L + p, K then V, each code times its
 * scale rounded to f16; the renumbered runs (slot s) to nruns */
__global__ void k_q8_rows_half(const uint8_t *kc, int64_t kpitch, const uint8_t *vc, int64_t vpitch,
                               const int32_t *runs, int n_seq, int64_t kv_rows, int64_t L,
                               int64_t cols, __half *kh, __half *vh, int32_t *nruns)
{
    cuda_pdl_enter();
    const int64_t nb = cols / 32, per = (int64_t)n_seq * L * nb;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < 2 * per;
         i += (int64_t)gridDim.x * blockDim.x) {
        const bool isv = i >= per;
        const int64_t e = isv ? i - per : i, row = e / nb, blk = e % nb;
        const int s = (int)(row / L);
        const int64_t p = row % L;
        if (p >= (int64_t)runs[4 * s + 3] + runs[4 * s + 2])
            continue;                   /* past the run's keys: never read */
        const uint8_t *src = (isv ? vc : kc) + ((int64_t)runs[4 * s] * kv_rows + p) *
                             (isv ? vpitch : kpitch) + blk * Q8_BLK;
        const float d = __half2float(__ushort_as_half(*(const unsigned short *)src));
        __half *dst = (isv ? vh : kh) + row * cols + blk * 32;
        #pragma unroll 8
        for (int j = 0; j < 32; j++)
            dst[j] = __float2half_rn((float)(int8_t)src[2 + j] * d);
    }
    if (blockIdx.x == 0)
        for (int t = threadIdx.x; t < 4 * n_seq; t += blockDim.x)
            nruns[t] = t % 4 ? runs[t] : t / 4;
}

/* q's rows as the splits read them: each block of 32 quantized to q8_0
 * (q8_block_store's codes and f16 scale) and back, code times scale, f32 */
__global__ void k_q8_round_rows(const float *q, int64_t ldq, int64_t T, int64_t cols, float *out)
{
    cuda_pdl_enter();
    const int64_t nb = cols / 32;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < T * nb;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = i / nb, blk = i % nb;
        __align__(4) uint8_t b[Q8_BLK + 2];
        q8_block_store(q + r * ldq + blk * 32, b);
        const float d = __half2float(__ushort_as_half(*(const unsigned short *)b));
        float *o = out + r * cols + blk * 32;
        #pragma unroll 8
        for (int j = 0; j < 32; j++)
            o[j] = (float)(int8_t)b[2 + j] * d;
    }
}

bool cuda_fattn_q8(be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc,
                   const be_batch *b, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                   float scale, be_tensor *out)
{
    cuda_ctx *c = cuda_ctx_of(be);
    if (c->gmode || !b->n_seq)
        return false;
    int64_t L = 0;                      /* the longest run's keys */
    for (int s = 0; s < b->n_seq; s++)
        if (b->seq[s].pos0 + b->seq[s].n_rows > L)
            L = b->seq[s].pos0 + b->seq[s].n_rows;
    const int64_t cols = kc->cols;
    const size_t half_bytes = ((size_t)b->n_seq * (size_t)L * (size_t)cols * sizeof(__half) + 255) &
                              ~(size_t)255;
    const size_t need = 2 * half_bytes + (size_t)q->rows * (size_t)q->cols * sizeof(float);
    if (need > c->q8kv_bytes) {
        void *n = NULL;
        if (cudaStreamSynchronize(c->stream) != cudaSuccess || cudaMalloc(&n, need) != cudaSuccess) {
            cudaGetLastError();
            return false;               /* the splits need no room */
        }
        cudaFree(c->q8kv);
        c->q8kv = n;
        c->q8kv_bytes = need;
    }
    if (b->n_seq > c->q8runs_n) {
        int32_t *n = NULL;
        if (cudaMalloc(&n, (size_t)b->max_seq * 4 * sizeof(int32_t)) != cudaSuccess) {
            cudaGetLastError();
            return false;
        }
        cudaFree(c->q8runs);            /* (the stream waited above or uses none yet) */
        c->q8runs = n;
        c->q8runs_n = b->max_seq;
    }
    __half *kh = (__half *)c->q8kv, *vh = (__half *)((char *)c->q8kv + half_bytes);
    float *qr = (float *)((char *)c->q8kv + 2 * half_bytes);
    cuda_launch(k_q8_round_rows, cuda_blocks(q->rows * (q->cols / 32), 256), 256, 0, c->stream,
                (const float *)q->data, q->ld, q->rows, q->cols, qr);
    if (!CUDA_LAUNCHED(be, "k_q8_round_rows"))
        return true;
    const int64_t items = 2 * (int64_t)b->n_seq * L * (cols / 32);
    cuda_launch(k_q8_rows_half, cuda_blocks(items, 256), 256, 0, c->stream, (const uint8_t *)kc->data,
                (int64_t)be_type_bytes(BE_Q8_0, kc->ld), (const uint8_t *)vc->data,
                (int64_t)be_type_bytes(BE_Q8_0, vc->ld), (const int32_t *)b->runs->data, b->n_seq,
                b->kv_rows, L, cols, kh, vh, c->q8runs);
    if (!CUDA_LAUNCHED(be, "k_q8_rows_half"))
        return true;
    be_tensor kt = *kc, vt = *vc, rt = *b->runs, qt = *q;
    kt.data = kh, vt.data = vh, rt.data = c->q8runs, qt.data = qr;
    qt.ld = q->cols;
    kt.type = vt.type = BE_F16;
    kt.f16 = vt.f16 = true;
    kt.rows = vt.rows = (int64_t)b->n_seq * L;
    kt.ld = vt.ld = cols;
    be_batch fb = *b;
    fb.runs = &rt;
    fb.kv_rows = L;
    if (!cuda_fattn(be, &qt, &kt, &vt, &fb, n_head, n_head_kv, head_dim, scale, out))
        return false;
    return true;
}

/* ------------------------------------------------------------- attention */

/* A lane's NPL codes (at byte offset o of a block, o a multiple of NPL)
 * and its block's scale */
template <int NPL>
__device__ __forceinline__ float q8_lane(const uint8_t *blk, int o, int *c)
{
    const float d = __half2float(__ushort_as_half(*(const unsigned short *)blk));
    if constexpr (NPL == 1) {
        c[0] = (int8_t)blk[2 + o];
    } else {
        const unsigned short *p = (const unsigned short *)(blk + 2 + o);   /* 2-byte aligned */
        #pragma unroll
        for (int i = 0; i < NPL / 2; i++) {
            const unsigned short u = p[i];
            c[2 * i] = (int8_t)(u & 0xff);
            c[2 * i + 1] = (int8_t)(u >> 8);
        }
    }
    return d;
}

template <int NPL, int G>
__global__ void __launch_bounds__(Q8A_THREADS)
k_attn_q8(const float *q, int64_t ldq, const uint8_t *kc, int64_t kpitch, const uint8_t *vc,
          int64_t vpitch, const int32_t *runs, int n_seq, int64_t kv_rows, int64_t group,
          float scale, int64_t chunk, int nsplit, int64_t Hq, float *part, int64_t r0)
{
    cuda_pdl_enter();
    constexpr int HD = NPL * 32, LPB = 32 / NPL;    /* lanes a q8_0 block */
    __shared__ float wm[Q8A_WARPS][G], wl[Q8A_WARPS][G], wacc[Q8A_WARPS][G][HD];
    const int s = blockIdx.x;
    const int64_t h0 = (int64_t)blockIdx.y * G, r = r0 + blockIdx.z, hk = h0 / group;
    const int lane = threadIdx.x & 31, wid = threadIdx.x / 32;
    const int4 run = run_of(runs, n_seq, r);
    const int64_t L = run.x < 0 ? 0 : (int64_t)run.w + (r - run.y) + 1;
    const int64_t ch = chunk > 0 ? chunk : (L + nsplit - 1) / nsplit;   /* 0: from L */
    const int64_t j0 = (int64_t)s * ch, j1 = j0 + ch < L ? j0 + ch : L;
    const int64_t slot = run.x < 0 ? 0 : run.x;
    const int dim0 = lane * NPL, o = dim0 % 32;
    const int64_t boff = (hk * HD + dim0) / 32 * Q8_BLK;    /* the lane's block in a row */
    const uint8_t *kb = kc + slot * kv_rows * kpitch + boff, *vb = vc + slot * kv_rows * vpitch + boff;
    int qc[G][NPL];
    float qd[G], acc[G][NPL], m[G], l[G];
    #pragma unroll
    for (int g = 0; g < G; g++) {
        float x[NPL], amax = 0.0f;
        #pragma unroll
        for (int i = 0; i < NPL; i++) {
            x[i] = q[r * ldq + (h0 + g) * HD + dim0 + i];
            amax = fmaxf(amax, fabsf(x[i]));
            acc[g][i] = 0.0f;
        }
        #pragma unroll
        for (int w = 1; w < LPB; w <<= 1)               /* over the block's lanes */
            amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, w));
        const float id = amax != 0.0f ? __fdiv_rn(127.0f, amax) : 0.0f;
        qd[g] = __half2float(__float2half_rn(__fdiv_rn(amax, 127.0f)));
        #pragma unroll
        for (int i = 0; i < NPL; i++)
            qc[g][i] = __float2int_rn(__fmul_rn(x[i], id));
        m[g] = -INFINITY;
        l[g] = 0.0f;
    }
    #pragma unroll 2
    for (int64_t j = j0 + wid; j < j1; j += Q8A_WARPS) {
        int kq[NPL], vq[NPL];
        const float dk = q8_lane<NPL>(kb + j * kpitch, o, kq);
        const float dv = q8_lane<NPL>(vb + j * vpitch, o, vq);
        #pragma unroll
        for (int g = 0; g < G; g++) {
            int is = 0;
            #pragma unroll
            for (int i = 0; i < NPL; i++)
                is += qc[g][i] * kq[i];
            float d = (float)is * (dk * qd[g]);
            #pragma unroll
            for (int w = 16; w > 0; w >>= 1)
                d += __shfl_xor_sync(0xffffffffu, d, w);
            const float sc = d * scale, mn = fmaxf(m[g], sc);
            const float f = expf(m[g] - mn);
            const float p = expf(sc - mn);
            l[g] = l[g] * f + p;
            #pragma unroll
            for (int i = 0; i < NPL; i++)
                acc[g][i] = acc[g][i] * f + p * ((float)vq[i] * dv);
            m[g] = mn;
        }
    }
    attn_split_out<Q8A_WARPS, G, NPL, Q8A_THREADS>(wm, wl, wacc, m, l, acc, lane, wid, [&](int g) {
        return part + (((int64_t)blockIdx.z * Hq + h0 + g) * nsplit + s) * (HD + 2);
    });
}

/* the launch for NPL dims a lane and G query heads a block; G * hd above
 * 2048 (its accumulators over 32 KB of shared memory) has no instance */
template <int NPL, int G>
static void q8a_launch(cuda_ctx *c, const dim3 &grid, const be_tensor *q, const uint8_t *kc, int64_t kp,
                       const uint8_t *vc, int64_t vp, const be_batch *b, int64_t group, float scale,
                       int64_t chunk, int64_t nsplit, int64_t n_head, int64_t r0)
{
    if constexpr (NPL * 32 * G <= 2048)
        cuda_launch(k_attn_q8<NPL, G>, grid, Q8A_THREADS, 0, c->stream, (const float *)q->data, q->ld,
                    kc, kp, vc, vp, (const int32_t *)b->runs->data, b->n_seq, b->kv_rows, group,
                    scale, chunk, (int)nsplit, n_head, c->part, r0);
}

template <int NPL>
static void q8a_heads(int64_t G, cuda_ctx *c, const dim3 &grid, const be_tensor *q,
                      const uint8_t *kc, int64_t kp, const uint8_t *vc, int64_t vp,
                      const be_batch *b, int64_t group, float scale, int64_t chunk, int64_t nsplit,
                      int64_t n_head, int64_t r0)
{
#define Q8A(GG) q8a_launch<NPL, GG>(c, grid, q, kc, kp, vc, vp, b, group, scale, chunk, nsplit, n_head, r0)
    switch (G) {
    case 8: Q8A(8); break;
    case 4: Q8A(4); break;
    case 2: Q8A(2); break;
    default: Q8A(1); break;
    }
#undef Q8A
}

bool cuda_attn_q8_split(be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc,
                        const be_batch *b, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                        float scale, int64_t chunk, int64_t nsplit, int64_t r0, int64_t T)
{
    cuda_ctx *c = cuda_ctx_of(be);
    assert(kc->type == BE_Q8_0 && vc->type == BE_Q8_0);
    const int64_t group = n_head / n_head_kv;
    /* query heads a block: the largest of 8, 4, 2, 1 dividing the group
     * whose accumulators fit 32 KB of shared memory */
    int64_t G = 8;
    while (G > 1 && (group % G || G * head_dim > 2048))
        G /= 2;
    const dim3 grid((unsigned)nsplit, (unsigned)(n_head / G), (unsigned)T);
    const uint8_t *k8 = (const uint8_t *)kc->data, *v8 = (const uint8_t *)vc->data;
    const int64_t kp = (int64_t)be_type_bytes(BE_Q8_0, kc->ld), vp = (int64_t)be_type_bytes(BE_Q8_0, vc->ld);
#define HEADS(NPL) q8a_heads<NPL>(G, c, grid, q, k8, kp, v8, vp, b, group, scale, chunk, nsplit, n_head, r0)
    switch (head_dim) {
    case 32: HEADS(1); break;
    case 64: HEADS(2); break;
    case 128: HEADS(4); break;
    case 256: HEADS(8); break;
    case 512: HEADS(16); break;
    default:
        be_fail(be, Q36_E_UNSUP, "cuda attention over q8_0 caches: head dim %lld (32, 64, 128, "
                "256, 512)", (long long)head_dim);
        return false;
    }
#undef HEADS
    return CUDA_LAUNCHED(be, "k_attn_q8");
}
