/* cuda_seq.cu: the CUDA backend's sequence ops, which read each run of a
 * batch on its own slot: the K/V cache write, causal GQA attention
 * (split along the K/V length, flash-decoding style), the DeltaNet causal
 * conv with its tails, and the gated delta rule recurrence.
 *
 * The runs are read on the device (the batch's `runs` tensor: slot, first
 * row, rows, first position); the host's copy only sizes the launches
 * (the number of runs, the longest K/V length), so a decode step queues
 * no host data.
 *
 * Attention: one block per (split, head, query row); its four warps take
 * every fourth key of the split, each with an online softmax over its
 * keys (a lane holds head_dim/32 consecutive dims, read 16 bytes at a
 * time), merge in shared memory and write (max, sum, unnormalized output)
 * to the reserved partials; a second kernel merges the splits. Splits are
 * as many as keep about ATT_BLOCKS blocks in flight for short batches
 * (decode), at least ATT_MIN_KEYS keys each, one for long batches. The
 * longest K/V length of the batch (host) sizes them; with graphs on
 * (cuda_graph.cu) the K/V capacity does instead, so a recorded step fits
 * every later length, and each row divides its own length among the
 * splits on the device (splits past it are empty). Batch-invariant exact
 * mode (Q36_CUDA_EXACTINV, on in exact mode; cuda.h) splits every row's keys at multiples
 * of ATT_INV_KEYS instead, so a row's partials and their merge do not
 * depend on the batch; rows run in groups the partials hold. f16
 * caches: q is rounded to f16 before the scores and the probabilities
 * before they weigh V, as the CPU does.
 *
 * The delta rule: one warp per value column j of a head, each lane holding
 * dk/32 rows of that column of the state in registers for the whole run;
 * four columns a block, grid (value heads, runs, dv/4). */
#include "cuda.h"
#include "cuda_attn_split.h"
#include "cuda_fattn.h"

#include <assert.h>
#include <type_traits>

#define ATT_THREADS  128
#define ATT_MIN_KEYS 32      /* keys a split takes at least */
#define ATT_BLOCKS   4096
#define ATT_INV_KEYS 512     /* batch-invariant exact mode: keys a split (cuda.h: inv) */

template <typename C> __device__ __forceinline__ C to_cache(float v);
template <> __device__ __forceinline__ float to_cache<float>(float v) { return v; }
template <> __device__ __forceinline__ __half to_cache<__half>(float v) { return __float2half_rn(v); }
__device__ __forceinline__ float from_cache(float v) { return v; }
__device__ __forceinline__ float from_cache(__half v) { return __half2float(v); }

/* ------------------------------------------------------------- K/V store */

template <typename CK, typename CV>
__global__ void k_kv_store(CK *kc, int64_t ldkc, CV *vc, int64_t ldvc, const float *k, int64_t ldk,
                           const float *v, int64_t ldv, const int32_t *runs, int n_seq,
                           int64_t kv_rows, int64_t T, int64_t cols)
{
    cuda_pdl_enter();
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < T * cols;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = i / cols, c = i % cols;
        const int4 q = run_of(runs, n_seq, r);
        if (q.x < 0)
            continue;
        const int64_t cr = (int64_t)q.x * kv_rows + q.w + (r - q.y);
        kc[cr * ldkc + c] = to_cache<CK>(k[r * ldk + c]);
        vc[cr * ldvc + c] = to_cache<CV>(v[r * ldv + c]);
    }
}

void cuda_kv_store(be_ctx *be, be_tensor *kc, be_tensor *vc, const be_tensor *k,
                   const be_tensor *v, const be_batch *b)
{
    assert(k->cols == kc->cols && v->cols == vc->cols && k->cols == v->cols);
    const int64_t T = k->rows, n = T * k->cols;
    if (!n)
        return;
    if (kc->type == BE_Q8_0 || vc->type == BE_Q8_0) {
        if (kc->type != vc->type) {
            be_fail(be, Q36_E_UNSUP, "cuda kv_store: a q8_0 cache is for K and V together (K %s, "
                    "V %s)", be_type_name(kc->type), be_type_name(vc->type));
            return;
        }
        cuda_kv_store_q8(be, kc, vc, k, v, b);
        return;
    }
    cudaStream_t st = cuda_ctx_of(be)->stream;
    const unsigned g = cuda_blocks(n, 256);
    const int32_t *runs = (const int32_t *)b->runs->data;
#define KV(CK, CV) cuda_launch(k_kv_store<CK, CV>, g, 256, 0, st, (CK *)kc->data, kc->ld, (CV *)vc->data, \
        vc->ld, (const float *)k->data, k->ld, (const float *)v->data, v->ld, runs, b->n_seq,   \
        b->kv_rows, T, k->cols)
    if (kc->f16 && vc->f16)
        KV(__half, __half);
    else if (kc->f16)
        KV(__half, float);
    else if (vc->f16)
        KV(float, __half);
    else
        KV(float, float);
#undef KV
    CUDA_LAUNCHED(be, "k_kv_store");
}

/* ------------------------------------------------------------- attention */

size_t cuda_attention_scratch(const be_shape *s)
{
    if (!s->n_head)
        return 0;
    int64_t items = s->n_rows * s->n_head > ATT_BLOCKS ? s->n_rows * s->n_head : ATT_BLOCKS;
    if (cuda_inv_enabled(s)) {  /* 8 rows of every fixed-length split in one launch */
        const int64_t inv = 8 * s->n_head * ((s->n_ctx + ATT_INV_KEYS - 1) / ATT_INV_KEYS);
        items = inv > items ? inv : items;
    }
    return (size_t)items * (size_t)(s->head_dim + 2);
}

/* NPL consecutive elements of a cache row at lane * NPL, as floats: one
 * 16-byte load per 8 halves (or 4 floats) where the row allows it */
template <typename C, int NPL>
__device__ __forceinline__ void load_lane(const C *p, float *out)
{
    if constexpr (sizeof(C) == 2 && NPL % 8 == 0) {
        #pragma unroll
        for (int i = 0; i < NPL; i += 8) {
            const uint4 u = *(const uint4 *)(p + i);
            const __half2 *h = (const __half2 *)&u;
            #pragma unroll
            for (int k = 0; k < 4; k++) {
                const float2 f = __half22float2(h[k]);
                out[i + 2 * k] = f.x;
                out[i + 2 * k + 1] = f.y;
            }
        }
    } else if constexpr (sizeof(C) == 4 && NPL % 4 == 0) {
        #pragma unroll
        for (int i = 0; i < NPL; i += 4) {
            const float4 f = *(const float4 *)((const float *)p + i);
            out[i] = f.x; out[i + 1] = f.y; out[i + 2] = f.z; out[i + 3] = f.w;
        }
    } else {
        #pragma unroll
        for (int i = 0; i < NPL; i++)
            out[i] = from_cache(p[i]);
    }
}

/* A lane's NPL elements of a cache row as raw 8- or 16-byte words, so that
 * the loads of later keys can be in flight while a key is used (NPL of 4
 * or more: 8 bytes at least); lane_floats gives the values load_lane gives */
template <typename C, int NPL> struct lane_raw {
    static constexpr int B = (int)sizeof(C) * NPL;
    typedef typename std::conditional<B % 16 == 0, uint4, uint2>::type W;
    static constexpr int N = B / (int)sizeof(W);
    static_assert(B % 8 == 0, "8-byte lane rows");
    W w[N];
};

template <typename C, int NPL>
__device__ __forceinline__ void lane_load(const C *p, lane_raw<C, NPL> &r)
{
    typedef typename lane_raw<C, NPL>::W W;
    #pragma unroll
    for (int i = 0; i < lane_raw<C, NPL>::N; i++)
        r.w[i] = ((const W *)p)[i];
}

__device__ __forceinline__ void word_floats(uint32_t u, __half, float *o)
{
    o[0] = __half2float(__ushort_as_half((unsigned short)(u & 0xffffu)));
    o[1] = __half2float(__ushort_as_half((unsigned short)(u >> 16)));
}
__device__ __forceinline__ void word_floats(uint32_t u, float, float *o) { o[0] = __uint_as_float(u); }

template <typename C, int NPL>
__device__ __forceinline__ void lane_floats(const lane_raw<C, NPL> &r, float *out)
{
    constexpr int PER = 4 / (int)sizeof(C);      /* elements a 32-bit word */
    uint32_t u[NPL / PER];
    #pragma unroll
    for (int i = 0; i < lane_raw<C, NPL>::N; i++) {
        if constexpr (sizeof(typename lane_raw<C, NPL>::W) == 16) {
            u[4 * i] = r.w[i].x; u[4 * i + 1] = r.w[i].y; u[4 * i + 2] = r.w[i].z; u[4 * i + 3] = r.w[i].w;
        } else {
            u[2 * i] = r.w[i].x; u[2 * i + 1] = r.w[i].y;
        }
    }
    #pragma unroll
    for (int i = 0; i < NPL / PER; i++)
        word_floats(u[i], C(), out + PER * i);
}

/* One block per (split, head, query row); each of its 4 warps walks every
 * 4th key of the split with its own online softmax (lane l holds dims
 * [l*NPL, (l+1)*NPL) of q and of the output), then the warps merge in
 * shared memory into the block's partial. */
template <typename CK, typename CV, int NPL>
__global__ void __launch_bounds__(ATT_THREADS)
k_attn_split(const float *q, int64_t ldq, const CK *kc, int64_t ldkc, const CV *vc, int64_t ldvc,
             const int32_t *runs, int n_seq, int64_t kv_rows, int64_t group, float scale,
             int64_t chunk, int nsplit, float *part, int64_t r0)
{
    cuda_pdl_enter();
    constexpr int HD = NPL * 32, NW = ATT_THREADS / 32;
    __shared__ float wm[NW], wl[NW], wacc[NW][HD];
    const int s = blockIdx.x;
    const int64_t h = blockIdx.y, r = r0 + blockIdx.z, Hq = gridDim.y;
    const int lane = threadIdx.x & 31, wid = threadIdx.x / 32;
    const int4 run = run_of(runs, n_seq, r);
    const int64_t L = run.x < 0 ? 0 : (int64_t)run.w + (r - run.y) + 1;
    const int64_t ch = chunk > 0 ? chunk : (L + nsplit - 1) / nsplit;   /* 0: from L */
    const int64_t j0 = (int64_t)s * ch, j1 = j0 + ch < L ? j0 + ch : L;
    const int64_t hk = h / group, slot = run.x < 0 ? 0 : run.x;
    const CK *kb = kc + slot * kv_rows * ldkc + hk * HD + lane * NPL;
    const CV *vb = vc + slot * kv_rows * ldvc + hk * HD + lane * NPL;
    float qv[NPL], acc[NPL];
    #pragma unroll
    for (int i = 0; i < NPL; i++) {
        const float v = q[r * ldq + h * HD + lane * NPL + i];
        qv[i] = sizeof(CK) == 2 ? __half2float(__float2half_rn(v)) : v;
        acc[i] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    #pragma unroll 2
    for (int64_t j = j0 + wid; j < j1; j += NW) {
        float kv[NPL], vv[NPL];
        load_lane<CK, NPL>(kb + j * ldkc, kv);
        load_lane<CV, NPL>(vb + j * ldvc, vv);
        float d = 0.0f;
        #pragma unroll
        for (int i = 0; i < NPL; i++)
            d += qv[i] * kv[i];
        #pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            d += __shfl_xor_sync(0xffffffffu, d, o);
        const float sc = d * scale, mn = fmaxf(m, sc);
        const float f = expf(m - mn);
        float p = expf(sc - mn);
        l = l * f + p;
        if (sizeof(CV) == 2)
            p = __half2float(__float2half_rn(p));
        #pragma unroll
        for (int i = 0; i < NPL; i++)
            acc[i] = acc[i] * f + p * vv[i];
        m = mn;
    }
    if (lane == 0) {
        wm[wid] = m;
        wl[wid] = l;
    }
    #pragma unroll
    for (int i = 0; i < NPL; i++)
        wacc[wid][lane * NPL + i] = acc[i];
    __syncthreads();
    float M = -INFINITY;
    for (int w = 0; w < NW; w++)
        if (wl[w] > 0.0f)
            M = fmaxf(M, wm[w]);
    float *o = part + (((int64_t)blockIdx.z * Hq + h) * nsplit + s) * (HD + 2);
    float Ls = 0.0f;
    for (int w = 0; w < NW; w++)
        if (wl[w] > 0.0f)
            Ls += wl[w] * expf(wm[w] - M);
    if (threadIdx.x == 0) {
        o[0] = M;
        o[1] = Ls;
    }
    for (int d = threadIdx.x; d < HD; d += ATT_THREADS) {
        float a = 0.0f;
        for (int w = 0; w < NW; w++)
            if (wl[w] > 0.0f)
                a += wacc[w][d] * expf(wm[w] - M);
        o[2 + d] = a;
    }
}

/* The same splits with the G query heads of one K/V head together
 * (Q36_CUDA_ATTNGQA, on unless "0"): one block per (split, K/V head, query row); each
 * warp loads each of its keys once and updates the G heads' online
 * softmaxes, in k_attn_split's key order with its arithmetic per head, and
 * writes the same partials. K/V rows are read once per group instead of
 * once per query head (8 times fewer on the Qwen3.6-35B-A3B geometry). */
template <typename CK, typename CV, int NPL, int G>
__global__ void __launch_bounds__(ATT_THREADS)
k_attn_split_gqa(const float *q, int64_t ldq, const CK *kc, int64_t ldkc, const CV *vc,
                 int64_t ldvc, const int32_t *runs, int n_seq, int64_t kv_rows, float scale,
                 int64_t chunk, int nsplit, int64_t Hq, float *part, int64_t r0)
{
    cuda_pdl_enter();
    constexpr int HD = NPL * 32, NW = ATT_THREADS / 32;
    __shared__ float wm[NW][G], wl[NW][G], wacc[NW][G][HD];
    const int s = blockIdx.x;
    const int64_t hk = blockIdx.y, r = r0 + blockIdx.z;
    const int lane = threadIdx.x & 31, wid = threadIdx.x / 32;
    const int4 run = run_of(runs, n_seq, r);
    const int64_t L = run.x < 0 ? 0 : (int64_t)run.w + (r - run.y) + 1;
    const int64_t ch = chunk > 0 ? chunk : (L + nsplit - 1) / nsplit;   /* 0: from L */
    const int64_t j0 = (int64_t)s * ch, j1 = j0 + ch < L ? j0 + ch : L;
    const int64_t slot = run.x < 0 ? 0 : run.x;
    const CK *kb = kc + slot * kv_rows * ldkc + hk * HD + lane * NPL;
    const CV *vb = vc + slot * kv_rows * ldvc + hk * HD + lane * NPL;
    float qv[G][NPL], acc[G][NPL], m[G], l[G];
    #pragma unroll
    for (int g = 0; g < G; g++) {
        #pragma unroll
        for (int i = 0; i < NPL; i++) {
            const float v = q[r * ldq + (hk * G + g) * HD + lane * NPL + i];
            qv[g][i] = sizeof(CK) == 2 ? __half2float(__float2half_rn(v)) : v;
            acc[g][i] = 0.0f;
        }
        m[g] = -INFINITY;
        l[g] = 0.0f;
    }
    /* the next two keys' rows are in flight while a key is used (the
     * loop waited a memory round trip a key: at depth 32768 its 67 MB a
     * layer took 86 us on the H200, 65 since; record
     * bench/results/2026-12-03-cuda-attn-depth/) */
    lane_raw<CK, NPL> k0, k1, k2;
    lane_raw<CV, NPL> v0, v1, v2;
    if (j0 + wid < j1) {
        lane_load(kb + (j0 + wid) * ldkc, k1);
        lane_load(vb + (j0 + wid) * ldvc, v1);
    }
    if (j0 + wid + NW < j1) {
        lane_load(kb + (j0 + wid + NW) * ldkc, k2);
        lane_load(vb + (j0 + wid + NW) * ldvc, v2);
    }
    for (int64_t j = j0 + wid; j < j1; j += NW) {
        k0 = k1; v0 = v1;
        k1 = k2; v1 = v2;
        if (j + 2 * NW < j1) {
            lane_load(kb + (j + 2 * NW) * ldkc, k2);
            lane_load(vb + (j + 2 * NW) * ldvc, v2);
        }
        float kv[NPL], vv[NPL];
        lane_floats(k0, kv);
        lane_floats(v0, vv);
        #pragma unroll
        for (int g = 0; g < G; g++) {
            float d = 0.0f;
            #pragma unroll
            for (int i = 0; i < NPL; i++)
                d += qv[g][i] * kv[i];
            #pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                d += __shfl_xor_sync(0xffffffffu, d, o);
            const float sc = d * scale, mn = fmaxf(m[g], sc);
            const float f = expf(m[g] - mn);
            float p = expf(sc - mn);
            l[g] = l[g] * f + p;
            if (sizeof(CV) == 2)
                p = __half2float(__float2half_rn(p));
            #pragma unroll
            for (int i = 0; i < NPL; i++)
                acc[g][i] = acc[g][i] * f + p * vv[i];
            m[g] = mn;
        }
    }
    attn_split_out<NW, G, NPL, ATT_THREADS>(wm, wl, wacc, m, l, acc, lane, wid, [&](int g) {
        return part + (((int64_t)blockIdx.z * Hq + hk * G + g) * nsplit + s) * (HD + 2);
    });
}

/* k_attn_split_gqa for this call, or false when it has no instance: K and
 * V caches of one type (f16 or f32), head dims 128 or 256, groups of 2, 4
 * or 8 query heads */
static bool attn_gqa(be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc,
                     const be_batch *b, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                     float scale, int64_t chunk, int64_t nsplit, int64_t r0, int64_t T)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const int64_t G = n_head / n_head_kv;
    if (kc->f16 != vc->f16 || (head_dim != 128 && head_dim != 256) || (G != 2 && G != 4 && G != 8))
        return false;
    dim3 grid((unsigned)nsplit, (unsigned)n_head_kv, (unsigned)T);
    const int32_t *runs = (const int32_t *)b->runs->data;
#define GQA1(C, NPL, GG) cuda_launch(k_attn_split_gqa<C, C, NPL, GG>, grid, ATT_THREADS, 0, c->stream,      \
        (const float *)q->data, q->ld, (const C *)kc->data, kc->ld, (const C *)vc->data, vc->ld,  \
        runs, b->n_seq, b->kv_rows, scale, chunk, (int)nsplit, n_head, c->part, r0)
#define GQA(C, NPL)                                 \
    switch (G) {                                    \
    case 2: GQA1(C, NPL, 2); break;                 \
    case 4: GQA1(C, NPL, 4); break;                 \
    default: GQA1(C, NPL, 8); break;                \
    }
    if (kc->f16) {
        if (head_dim == 128) GQA(__half, 4) else GQA(__half, 8)
    } else {
        if (head_dim == 128) GQA(float, 4) else GQA(float, 8)
    }
#undef GQA
#undef GQA1
    return true;
}

/* The merge of a row's splits for one head: one block of MERGE_THREADS
 * per (MERGE_DIMS dims, head, query row). The splits' maxima and sums are
 * read once by the whole block (dynamic shared memory: the sums l, then
 * each split's weight e = exp(M_s - M), 2 nsplit floats), the sum L by one
 * thread in split order. Then each warp runs down a quarter of the splits
 * for the block's dims (a lane a dim, 16 loads in flight), and the four
 * quarters add in order. The loop before it read each split's max and sum
 * once per dim, a memory round trip a split, in 16 blocks a layer: at depth
 * 32768 it took 193 us a layer on the H200 against 86 for the splits
 * themselves; with the block's weights in shared memory but one thread
 * running down all splits of a dim, 31 us op by op
 * (bench/results/2026-12-03-cuda-attn-depth/). */
#define MERGE_DIMS    32
#define MERGE_THREADS 128
#define MERGE_WARPS   (MERGE_THREADS / 32)
__global__ void __launch_bounds__(MERGE_THREADS)
k_attn_merge(const float *part, int nsplit, int64_t hd, float *out, int64_t ldo, int64_t r0)
{
    cuda_pdl_enter();
    extern __shared__ float msm[];
    float *ls = msm, *es = msm + nsplit;
    __shared__ float wmax[MERGE_WARPS], wsum[MERGE_WARPS][MERGE_DIMS], inv_l;
    const int64_t h = blockIdx.y, r = r0 + blockIdx.z, Hq = gridDim.y, pitch = hd + 2;
    const float *p = part + ((int64_t)blockIdx.z * Hq + h) * nsplit * pitch;
    const int tid = threadIdx.x, lane = tid % 32, w = tid / 32;
    float M = -INFINITY;
    for (int s = tid; s < nsplit; s += MERGE_THREADS) {
        const float l = p[s * pitch + 1], m = p[s * pitch];
        ls[s] = l;
        es[s] = m;
        if (l > 0.0f)
            M = fmaxf(M, m);
    }
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
    if (lane == 0)
        wmax[w] = M;
    __syncthreads();
    M = wmax[0];
    #pragma unroll
    for (int i = 1; i < MERGE_WARPS; i++)
        M = fmaxf(M, wmax[i]);
    for (int s = tid; s < nsplit; s += MERGE_THREADS)
        es[s] = ls[s] > 0.0f ? expf(es[s] - M) : 0.0f;
    __syncthreads();
    if (tid == 0) {
        float L = 0.0f;
        #pragma unroll 8
        for (int s = 0; s < nsplit; s++)
            if (ls[s] > 0.0f)
                L += ls[s] * es[s];
        inv_l = L > 0.0f ? 1.0f / L : 0.0f;
    }
    const int64_t d = (int64_t)blockIdx.x * MERGE_DIMS + lane;
    const int q = (nsplit + MERGE_WARPS - 1) / MERGE_WARPS;
    const int s0 = w * q, s1 = s0 + q < nsplit ? s0 + q : nsplit;
    float a = 0.0f;
    if (d < hd) {
        const float *pd = p + 2 + d;
        #pragma unroll 16
        for (int s = s0; s < s1; s++) {
            const float v = pd[s * pitch];
            if (ls[s] > 0.0f)
                a += v * es[s];
        }
    }
    wsum[w][lane] = a;
    __syncthreads();
    if (w == 0 && d < hd) {
        a = wsum[0][lane];
        #pragma unroll
        for (int i = 1; i < MERGE_WARPS; i++)
            a += wsum[i][lane];
        out[r * ldo + h * hd + d] = a * inv_l;
    }
}

/* Queues the merge of rows r0 .. r0+T (their partials from the start of
 * c->part) into out */
static void attn_merge(be_ctx *be, int64_t nsplit, int64_t n_head, int64_t head_dim, int64_t r0,
                       int64_t T, be_tensor *out)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const size_t smem = 2 * (size_t)nsplit * sizeof(float);
    if (smem > 48 * 1024) {
        be_fail(be, Q36_E_UNSUP, "cuda attention: %lld splits to merge, at most %d",
                (long long)nsplit, (int)(48 * 1024 / (2 * sizeof(float))));
        return;
    }
    cuda_launch(k_attn_merge, dim3((unsigned)((head_dim + MERGE_DIMS - 1) / MERGE_DIMS),
                                   (unsigned)n_head, (unsigned)T),
                MERGE_THREADS, smem, c->stream, c->part, (int)nsplit, head_dim, (float *)out->data,
                out->ld, r0);
    CUDA_LAUNCHED(be, "k_attn_merge");
}

/* Rows r0..r0+T of the batch (their partials from the start of c->part):
 * the splits, then the merge */
static void attention_rows(be_ctx *be, const be_tensor *q, const be_tensor *kc,
                           const be_tensor *vc, const be_batch *b, int64_t n_head,
                           int64_t n_head_kv, int64_t head_dim, float scale, int64_t chunk,
                           int64_t nsplit, int64_t r0, int64_t T, be_tensor *out)
{
    cuda_ctx *c = cuda_ctx_of(be);
    if (kc->type == BE_Q8_0) {         /* cuda_attn_q8.cu (cuda_attention checked V's) */
        if (cuda_attn_q8_split(be, q, kc, vc, b, n_head, n_head_kv, head_dim, scale, chunk, nsplit,
                               r0, T))
            attn_merge(be, nsplit, n_head, head_dim, r0, T, out);
        return;
    }
    if (c->attn_gqa && n_head > n_head_kv &&
        attn_gqa(be, q, kc, vc, b, n_head, n_head_kv, head_dim, scale, chunk, nsplit, r0, T)) {
        if (CUDA_LAUNCHED(be, "k_attn_split_gqa"))
            attn_merge(be, nsplit, n_head, head_dim, r0, T, out);
        return;
    }
    dim3 grid((unsigned)nsplit, (unsigned)n_head, (unsigned)T);
    const int32_t *runs = (const int32_t *)b->runs->data;
    const int64_t group = n_head / n_head_kv;
#define ATT1(CK, CV, NPL) cuda_launch(k_attn_split<CK, CV, NPL>, grid, ATT_THREADS, 0, c->stream,        \
        (const float *)q->data, q->ld, (const CK *)kc->data, kc->ld, (const CV *)vc->data,      \
        vc->ld, runs, b->n_seq, b->kv_rows, group, scale, chunk, (int)nsplit, c->part, r0)
#define ATT(CK, CV)                                                                              \
    switch (head_dim / 32) {                                                                     \
    case 1: ATT1(CK, CV, 1); break;                                                              \
    case 2: ATT1(CK, CV, 2); break;                                                              \
    case 4: ATT1(CK, CV, 4); break;                                                              \
    case 8: ATT1(CK, CV, 8); break;                                                              \
    case 16: ATT1(CK, CV, 16); break;                                                            \
    default: be_fail(be, Q36_E_UNSUP, "cuda attention: head dim %lld (32, 64, 128, 256, 512)", \
                     (long long)head_dim);                                                       \
        return;                                                                                  \
    }
    if (kc->f16 && vc->f16)
        ATT(__half, __half)
    else if (kc->f16)
        ATT(__half, float)
    else if (vc->f16)
        ATT(float, __half)
    else
        ATT(float, float)
#undef ATT
#undef ATT1
    if (CUDA_LAUNCHED(be, "k_attn_split"))
        attn_merge(be, nsplit, n_head, head_dim, r0, T, out);
}


void cuda_attention(be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc,
                    const be_batch *b, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                    float scale, be_tensor *out)
{
    cuda_ctx *c = cuda_ctx_of(be);
    assert(q->cols == n_head * head_dim && out->cols == q->cols && out->rows == q->rows);
    assert(kc->cols == n_head_kv * head_dim && n_head % n_head_kv == 0);
    assert(head_dim % 32 == 0 && head_dim <= 512);
    const int64_t T = q->rows;
    if (!T)
        return;
    const bool q8 = kc->type == BE_Q8_0;
    if (q8 != (vc->type == BE_Q8_0)) {
        be_fail(be, Q36_E_UNSUP, "cuda attention: a q8_0 cache is for K and V together (K %s, V %s)",
                be_type_name(kc->type), be_type_name(vc->type));
        return;
    }
    if (c->fattn && T >= FA_MIN_ROWS &&
        (q8 ? cuda_fattn_q8(be, q, kc, vc, b, n_head, n_head_kv, head_dim, scale, out)
            : cuda_fattn(be, q, kc, vc, b, n_head, n_head_kv, head_dim, scale, out)))
        return;
    /* graphs on: sizes from the capacity, each row's keys split on the device */
    const bool dev_len = c->graphs_on;
    int64_t maxL = dev_len ? b->kv_rows : 1;
    for (int s = 0; s < b->n_seq && !dev_len; s++)
        if (b->seq[s].pos0 + b->seq[s].n_rows > maxL)
            maxL = b->seq[s].pos0 + b->seq[s].n_rows;
    int64_t nsplit = ATT_BLOCKS / (T * n_head);
    const int64_t by_len = (maxL + ATT_MIN_KEYS - 1) / ATT_MIN_KEYS;
    nsplit = nsplit < 1 ? 1 : nsplit > by_len ? by_len : nsplit;
    int64_t chunk = dev_len ? 0 : (maxL + nsplit - 1) / nsplit;
    if (c->inv) {       /* exact mode, batch-invariant: splits of a fixed length */
        chunk = ATT_INV_KEYS;
        nsplit = (maxL + ATT_INV_KEYS - 1) / ATT_INV_KEYS;
    }
    /* rows a launch: all, or (batch-invariant splits) as many as the
     * partials hold */
    const size_t row_floats = (size_t)(n_head * nsplit) * (size_t)(head_dim + 2);
    int64_t per = T;
    if ((size_t)T * row_floats > c->part_floats) {
        per = c->inv ? (int64_t)(c->part_floats / row_floats) : 0;
        if (per < 1) {
            be_fail(be, Q36_E_NOMEM, "cuda attention: %lld rows x %lld heads x %lld splits need "
                    "%zu floats of partials, %zu reserved", (long long)T, (long long)n_head,
                    (long long)nsplit, (size_t)T * row_floats, c->part_floats);
            return;
        }
    }
    for (int64_t r0 = 0; r0 < T; r0 += per) {
        const int64_t n = T - r0 < per ? T - r0 : per;
        attention_rows(be, q, kc, vc, b, n_head, n_head_kv, head_dim, scale, chunk, nsplit, r0,
                       n, out);
    }
}

/* ------------------------------------------------------------------ conv */

#define CONV_MAX_K 8

/* Rows t0..t1 of a run (from row0) of channel c: each output the window
 * win (the Kc-1 raw values before t0, oldest first) and the row's raw
 * value times the weights wc, summed in order; win moves along. With keep
 * (be_ssm_conv_silu_keep), the window after each run row t < nk is also
 * written to keep row t * C + c (row pitch ldk). KC: Kc known at compile
 * time (the models' 4), or 0: Kc at run time, up to CONV_MAX_K; NB rows'
 * loads are issued before their stores. With KC = 4 and 16 rows a tile
 * the 35B-A3B's pp4096 conv went from 203 to 88 µs a layer (which of the
 * two did it was not measured apart; bench/results/
 * 2026-12-04-cuda-session21/). */
template <int KC> struct conv_k {
    static constexpr int N = KC ? KC : CONV_MAX_K;   /* the unrolled loops' bound */
};

template <int KC, int NB>
__device__ __forceinline__ void conv_walk(const float *x, int64_t ldx, int64_t row0, int t0, int t1,
                                          int64_t c, int Kc, const float *wc, float *win,
                                          bool silu, float *y, int64_t ldy, float *keep = nullptr,
                                          int64_t ldk = 0, int64_t C = 0, int nk = 0)
{
    const int K = KC ? KC : Kc;
    /* NB rows' x loaded before their NB stores: a load cannot pass a store
     * to y that might alias it, so loading each row after the last row's
     * store waited a memory round trip a row */
    for (int tb = t0; tb < t1; tb += NB) {
        float xv[NB];
        #pragma unroll
        for (int i = 0; i < NB; i++)
            xv[i] = tb + i < t1 ? x[(row0 + tb + i) * ldx + c] : 0.0f;
        #pragma unroll
        for (int i = 0; i < NB; i++) {
            if (tb + i >= t1)
                break;
            const int64_t r = row0 + tb + i;
            win[K - 1] = xv[i];
            float acc = 0.0f;
            #pragma unroll
            for (int j = 0; j < conv_k<KC>::N; j++)
                if (j < K)
                    acc = __fadd_rn(acc, __fmul_rn(wc[j], win[j]));
            y[r * ldy + c] = silu ? acc / (1.0f + expf(-acc)) : acc;   /* k_ew's silu */
            #pragma unroll
            for (int j = 0; j < conv_k<KC>::N - 1; j++)
                if (j < K - 1)
                    win[j] = win[j + 1];
            if (keep && tb + i < nk)
                for (int j = 0; j < K - 1; j++)
                    keep[((int64_t)(tb + i) * C + c) * ldk + j] = win[j];
        }
    }
}

/* Thread per (run, channel): the run's rows in order over a window of the
 * Kc-1 previous raw values, then the tail is the window's last values. */
template <int KC>
__global__ void k_conv(const float *x, int64_t ldx, float *tails, int64_t ldt, const float *w,
                       int Kc, const int32_t *runs, int64_t C, bool silu, float *y, int64_t ldy,
                       float *keep, int64_t ldk, int64_t nk)
{
    cuda_pdl_enter();
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C)
        return;
    const int K = KC ? KC : Kc;
    const int s = blockIdx.y;
    const int slot = runs[4 * s], row0 = runs[4 * s + 1], n = runs[4 * s + 2];
    float win[CONV_MAX_K], wc[CONV_MAX_K];
    float *tl = tails + ((int64_t)slot * C + c) * ldt;
    #pragma unroll
    for (int j = 0; j < conv_k<KC>::N - 1; j++)
        if (j < K - 1)
            win[j] = tl[j];
    #pragma unroll
    for (int j = 0; j < conv_k<KC>::N; j++)
        if (j < K)
            wc[j] = w[c * K + j];
    conv_walk<KC, 8>(x, ldx, row0, 0, n, c, K, wc, win, silu, y, ldy,
                     keep ? keep + (int64_t)slot * nk * C * ldk : nullptr, ldk, C, n - 1);
    #pragma unroll
    for (int j = 0; j < conv_k<KC>::N - 1; j++)
        if (j < K - 1)
            tl[j] = win[j];
}

/* Prompt runs: thread per (run, channel, tile of CONV_TILE rows), the
 * tile's window read from the rows before it or, at a run's start, from
 * the slot's tail (left as it was: k_conv_tail moves it afterwards). Each
 * output is the same sum in the same order as k_conv's. */
#define CONV_TILE 16
template <int KC>
__global__ void k_conv_rows(const float *x, int64_t ldx, const float *tails, int64_t ldt,
                            const float *w, int Kc, const int32_t *runs, int64_t C, bool silu,
                            float *y, int64_t ldy)
{
    cuda_pdl_enter();
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C)
        return;
    const int K = KC ? KC : Kc;
    const int s = blockIdx.y;
    const int slot = runs[4 * s], row0 = runs[4 * s + 1], n = runs[4 * s + 2];
    const int t0 = (int)blockIdx.z * CONV_TILE;
    if (t0 >= n)
        return;
    const float *tl = tails + ((int64_t)slot * C + c) * ldt;
    float win[CONV_MAX_K], wc[CONV_MAX_K];
    #pragma unroll
    for (int j = 0; j < conv_k<KC>::N - 1; j++) {   /* the K-1 raw values before row t0 */
        const int t = t0 - (K - 1) + j;
        if (j < K - 1)
            win[j] = t >= 0 ? x[(int64_t)(row0 + t) * ldx + c] : tl[K - 1 + t];
    }
    #pragma unroll
    for (int j = 0; j < conv_k<KC>::N; j++)
        if (j < K)
            wc[j] = w[c * K + j];
    conv_walk<KC, CONV_TILE>(x, ldx, row0, t0, t0 + CONV_TILE < n ? t0 + CONV_TILE : n, c, K, wc,
                             win, silu, y, ldy);
}

/* The tails after k_conv_rows: the last Kc-1 raw values of each run (old
 * tail values shifted in front when the run is shorter). */
__global__ void k_conv_tail(const float *x, int64_t ldx, float *tails, int64_t ldt, int Kc,
                            const int32_t *runs, int64_t C)
{
    cuda_pdl_enter();
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C)
        return;
    const int s = blockIdx.y;
    const int slot = runs[4 * s], row0 = runs[4 * s + 1], n = runs[4 * s + 2];
    float *tl = tails + ((int64_t)slot * C + c) * ldt;
    for (int j = 0; j < Kc - 1; j++) {     /* ascending: reads j + n > j, not yet written */
        const int t = n - (Kc - 1) + j;
        tl[j] = t >= 0 ? x[(int64_t)(row0 + t) * ldx + c] : tl[j + n];
    }
}

/* With keep (be_ssm_conv_silu_keep: runs of at most K rows, K =
 * keep->rows / tails->rows a slot), k_conv whatever the rows, each run's
 * tail after each of its rows but the last to keep's rows (slot * K + t) *
 * C .. */
static void conv(be_ctx *be, const be_tensor *x, be_tensor *tails, const be_weight *w,
                 const be_batch *b, bool silu, be_tensor *y, be_tensor *keep = nullptr)
{
    const int64_t C = x->cols, Kc = (int64_t)w->t->ne[0];
    assert(w->type == 0 && (int64_t)w->t->ne[1] == C && tails->cols == Kc - 1);
    assert(y->rows == x->rows && y->cols == C && Kc >= 2 && Kc <= CONV_MAX_K);
    assert(!keep || (keep->cols == Kc - 1 && keep->rows % tails->rows == 0));
    if (!x->rows || !b->n_seq)
        return;
    cuda_ctx *c = cuda_ctx_of(be);
    dim3 grid((unsigned)((C + 127) / 128), (unsigned)b->n_seq);
    if (x->rows <= CONV_TILE || keep) {    /* decode: one kernel walks each run */
        cuda_launch(Kc == 4 ? k_conv<4> : k_conv<0>, grid, 128, 0, c->stream,
            (const float *)x->data, x->ld, (float *)tails->data, tails->ld, (const float *)w->data,
            (int)Kc, (const int32_t *)b->runs->data, C, silu, (float *)y->data, y->ld,
            keep ? (float *)keep->data : (float *)nullptr, keep ? keep->ld : (int64_t)0,
            keep ? keep->rows / tails->rows : (int64_t)0);
        CUDA_LAUNCHED(be, "k_conv");
        return;
    }
    /* prompts: tiles of rows in parallel (a run has at most x->rows rows);
     * tiles read rows of x other tiles have passed, so x and y are apart */
    assert(x->data != y->data);
    dim3 gt(grid.x, grid.y, (unsigned)((x->rows + CONV_TILE - 1) / CONV_TILE));
    cuda_launch(Kc == 4 ? k_conv_rows<4> : k_conv_rows<0>, gt, 128, 0, c->stream,
        (const float *)x->data, x->ld, (const float *)tails->data, tails->ld,
        (const float *)w->data, (int)Kc, (const int32_t *)b->runs->data, C, silu,
        (float *)y->data, y->ld);
    if (!CUDA_LAUNCHED(be, "k_conv_rows"))
        return;
    cuda_launch(k_conv_tail, grid, 128, 0, c->stream, (const float *)x->data, x->ld, (float *)tails->data,
                                              tails->ld, (int)Kc, (const int32_t *)b->runs->data, C);
    CUDA_LAUNCHED(be, "k_conv_tail");
}

void cuda_ssm_conv(be_ctx *be, const be_tensor *x, be_tensor *tails, const be_weight *w,
                   const be_batch *b, be_tensor *y)
{
    conv(be, x, tails, w, b, false, y);
}

/* the conv and its SiLU: one kernel unless Q36_CUDA_FUSED=0 (the same bits) */
void cuda_ssm_conv_silu(be_ctx *be, const be_tensor *x, be_tensor *tails, const be_weight *w,
                        const be_batch *b, be_tensor *y)
{
    cuda_ssm_conv_silu_keep(be, x, tails, w, b, y, NULL);
}

void cuda_ssm_conv_silu_keep(be_ctx *be, const be_tensor *x, be_tensor *tails, const be_weight *w,
                             const be_batch *b, be_tensor *y, be_tensor *keep)
{
    if (cuda_ctx_of(be)->fused) {
        conv(be, x, tails, w, b, true, y, keep);
        return;
    }
    conv(be, x, tails, w, b, false, y, keep);
    cuda_silu(be, y, y);
}

/* ------------------------------------------------------------- delta rule */

/* be_deltanet_gated's inputs (GATED): the raw gates and the L2 norm of q
 * and k, formed per row as k_gates and k_norm form them: the norm's sum of
 * squares in double, scaled by 1/sqrtf(mean + eps) then by post */
typedef struct dn_gates {
    const float *alpha, *b, *dt, *A;
    int64_t      lda, ldb;
    float        eps, post;
} dn_gates;

/* x[m] (this lane's NPL values of a DK-long head) times the head's L2
 * norm scale, as k_norm's l2 form computes it */
template <int NPL>
__device__ __forceinline__ void dn_l2(float x[NPL], const dn_gates &G)
{
    double s = 0.0;
    #pragma unroll
    for (int m = 0; m < NPL; m++)
        s += (double)(x[m] * x[m]);
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    const float mean = (float)(s / (double)(NPL * 32));
    const float scale = 1.0f / sqrtf(mean + G.eps);
    #pragma unroll
    for (int m = 0; m < NPL; m++)
        x[m] = x[m] * scale * G.post;
}

/* With keep (be_deltanet_keep), the state after each of a run's rows but
 * the last also goes to keep's rows (slot * nk + t) * Hv + h (pitch ldS;
 * nk kept rows a slot) */
template <int NPL, bool GATED>   /* state rows per lane: dk / 32 */
__global__ void __launch_bounds__(128)
k_deltanet(const float *qkv, int64_t ldq, const float *g, int64_t ldg, const float *beta,
           int64_t ldb, float *S, int64_t ldS, int64_t Hk, int64_t Hv, const int32_t *runs,
           float *out, int64_t ldo, dn_gates G, float *keep, int64_t nk)
{
    cuda_pdl_enter();
    constexpr int DK = NPL * 32;
    const int lane = threadIdx.x & 31;
    const int64_t h = blockIdx.x, j = (int64_t)blockIdx.z * 4 + threadIdx.x / 32;
    const int s = blockIdx.y;
    if (j >= DK)
        return;
    const int slot = runs[4 * s], row0 = runs[4 * s + 1], n = runs[4 * s + 2];
    const int64_t hk = h % Hk;
    float *Sc = S + ((int64_t)slot * Hv + h) * ldS + j * DK;
    float st[NPL];
    #pragma unroll
    for (int m = 0; m < NPL; m++)
        st[m] = Sc[lane + 32 * m];
    const float oscale = 1.0f / sqrtf((float)DK);
    for (int t = 0; t < n; t++) {
        const int64_t r = row0 + t;
        const float *qr = qkv + r * ldq + hk * DK;
        const float *kr = qkv + r * ldq + Hk * DK + hk * DK;
        const float vj = qkv[r * ldq + 2 * Hk * DK + h * DK + j];
        float decay, bt;
        float kk[NPL], qq[NPL], e = 0.0f;
        #pragma unroll
        for (int m = 0; m < NPL; m++) {
            kk[m] = kr[lane + 32 * m];
            qq[m] = qr[lane + 32 * m];
        }
        if constexpr (GATED) {
            const float biased = G.alpha[r * G.lda + h] + G.dt[h];
            const float sp = biased > 20.0f ? biased : logf(1.0f + expf(biased));
            const float bb = G.b[r * G.ldb + h];
            decay = expf(sp * G.A[h]);
            bt = 1.0f / (1.0f + expf(-bb));
            dn_l2<NPL>(kk, G);
            dn_l2<NPL>(qq, G);
        } else {
            decay = expf(g[r * ldg + h]);
            bt = beta[r * ldb + h];
        }
        #pragma unroll
        for (int m = 0; m < NPL; m++) {
            st[m] *= decay;
            e += st[m] * kk[m];
        }
        #pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            e += __shfl_xor_sync(0xffffffffu, e, o);
        const float delta = bt * (vj - e);
        float o_ = 0.0f;
        #pragma unroll
        for (int m = 0; m < NPL; m++) {
            st[m] += kk[m] * delta;
            o_ += st[m] * qq[m];
        }
        #pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            o_ += __shfl_xor_sync(0xffffffffu, o_, o);
        if (!lane)
            out[r * ldo + h * DK + j] = o_ * oscale;
        if (keep && t + 1 < n) {
            float *kc = keep + (((int64_t)slot * nk + t) * Hv + h) * ldS + j * DK;
            #pragma unroll
            for (int m = 0; m < NPL; m++)
                kc[lane + 32 * m] = st[m];
        }
    }
    #pragma unroll
    for (int m = 0; m < NPL; m++)
        Sc[lane + 32 * m] = st[m];
}

/* k_deltanet over the runs of b; with G.alpha (GATED), from raw gates and
 * un-normed q and k */
static void deltanet(be_ctx *be, const be_tensor *qkv, const be_tensor *g, const be_tensor *beta,
                     be_tensor *S, int64_t n_k_heads, int64_t n_v_heads, int64_t dk,
                     const be_batch *b, be_tensor *out, const dn_gates &G,
                     be_tensor *keep = nullptr)
{
    assert(qkv->cols == (2 * n_k_heads + n_v_heads) * dk && out->cols == n_v_heads * dk);
    assert(S->cols == dk * dk);
    assert(!keep || (keep->cols == dk * dk && keep->ld == S->ld && keep->rows % S->rows == 0));
    if (!qkv->rows || !b->n_seq)
        return;
    dim3 grid((unsigned)n_v_heads, (unsigned)b->n_seq, (unsigned)((dk + 3) / 4));
    cudaStream_t st = cuda_ctx_of(be)->stream;
    const bool gated = G.alpha != nullptr;
#define DN1(NPL, GT) cuda_launch(k_deltanet<NPL, GT>, grid, 128, 0, st, (const float *)qkv->data,   \
        qkv->ld, g ? (const float *)g->data : nullptr, g ? g->ld : 0,                            \
        beta ? (const float *)beta->data : nullptr, beta ? beta->ld : 0, (float *)S->data, S->ld, \
        n_k_heads, n_v_heads, (const int32_t *)b->runs->data, (float *)out->data, out->ld, G, \
        keep ? (float *)keep->data : (float *)nullptr, keep ? keep->rows / S->rows : (int64_t)0)
#define DN(NPL) do { if (gated) DN1(NPL, true); else DN1(NPL, false); } while (0)
    switch (dk) {
    case 32: DN(1); break;
    case 64: DN(2); break;
    case 128: DN(4); break;
    case 256: DN(8); break;
    default:
        be_fail(be, Q36_E_UNSUP, "cuda deltanet: state dim %lld (32, 64, 128 or 256)",
                (long long)dk);
        return;
    }
#undef DN
#undef DN1
    CUDA_LAUNCHED(be, gated ? (keep ? "k_deltanet(gated, keep)" : "k_deltanet(gated)")
                            : (keep ? "k_deltanet(keep)" : "k_deltanet"));
}

void cuda_deltanet(be_ctx *be, const be_tensor *qkv, const be_tensor *g, const be_tensor *beta,
                   be_tensor *S, int64_t n_k_heads, int64_t n_v_heads, int64_t dk,
                   const be_batch *b, be_tensor *out)
{
    assert(g->cols == n_v_heads && beta->cols == n_v_heads);
    const dn_gates none = {};
    deltanet(be, qkv, g, beta, S, n_k_heads, n_v_heads, dk, b, out, none);
}

void cuda_deltanet_keep(be_ctx *be, const be_tensor *qkv, const be_tensor *g,
                        const be_tensor *beta, be_tensor *S, be_tensor *keep, int64_t n_k_heads,
                        int64_t n_v_heads, int64_t dk, const be_batch *b, be_tensor *out)
{
    assert(g->cols == n_v_heads && beta->cols == n_v_heads);
    const dn_gates none = {};
    deltanet(be, qkv, g, beta, S, n_k_heads, n_v_heads, dk, b, out, none, keep);
}

/* be_deltanet_gated (keep NULL) and be_deltanet_gated_keep: one kernel
 * with Q36_CUDA_FDN, else the three ops */
static void deltanet_gated(be_ctx *be, be_tensor *qkv, const be_tensor *alpha,
                           const be_tensor *b_in, const be_weight *dt_bias, const be_weight *a,
                           float eps, be_tensor *g, be_tensor *beta, be_tensor *S,
                           int64_t n_k_heads, int64_t n_v_heads, int64_t dk, const be_batch *b,
                           be_tensor *out, be_tensor *keep)
{
    assert(dt_bias->type == 0 && a->type == 0 && alpha->cols == n_v_heads);
    if (!cuda_ctx_of(be)->f_dn) {
        cuda_deltanet_gates(be, alpha, dt_bias, a, b_in, g, beta);
        be_tensor qk = *qkv;            /* the q and k columns, in place */
        qk.cols = 2 * n_k_heads * dk;
        qk.view = true;
        cuda_l2_norm(be, &qk, eps, dk, &qk);
        const dn_gates none = {};
        deltanet(be, qkv, g, beta, S, n_k_heads, n_v_heads, dk, b, out, none, keep);
        return;
    }
    const float n = (float)dk;          /* cuda_l2_norm's eps and post */
    const dn_gates G = { (const float *)alpha->data, (const float *)b_in->data,
                         (const float *)dt_bias->data, (const float *)a->data, alpha->ld,
                         b_in->ld, eps / n, 1.0f / sqrtf(n) };
    deltanet(be, qkv, nullptr, nullptr, S, n_k_heads, n_v_heads, dk, b, out, G, keep);
}

void cuda_deltanet_gated(be_ctx *be, be_tensor *qkv, const be_tensor *alpha,
                         const be_tensor *b_in, const be_weight *dt_bias, const be_weight *a,
                         float eps, be_tensor *g, be_tensor *beta, be_tensor *S,
                         int64_t n_k_heads, int64_t n_v_heads, int64_t dk, const be_batch *b,
                         be_tensor *out)
{
    deltanet_gated(be, qkv, alpha, b_in, dt_bias, a, eps, g, beta, S, n_k_heads, n_v_heads, dk,
                   b, out, nullptr);
}

void cuda_deltanet_gated_keep(be_ctx *be, be_tensor *qkv, const be_tensor *alpha,
                              const be_tensor *b_in, const be_weight *dt_bias, const be_weight *a,
                              float eps, be_tensor *g, be_tensor *beta, be_tensor *S,
                              be_tensor *keep, int64_t n_k_heads, int64_t n_v_heads, int64_t dk,
                              const be_batch *b, be_tensor *out)
{
    assert(keep);
    deltanet_gated(be, qkv, alpha, b_in, dt_bias, a, eps, g, beta, S, n_k_heads, n_v_heads, dk,
                   b, out, keep);
}
