/* cuda_attn_tc.cu: decode attention's splits on tensor cores, for f16 K/V
 * caches (Q36_CUDA_ATTNTC=1, off by default until measured; cuda.h:
 * attn_tc). The same splits and partials as cuda_seq.cu's k_attn_split_gqa,
 * merged by its k_attn_merge.
 *
 * One block of 4 warps per (split, K/V head, query row). The G query
 * heads that share the K/V head are the rows of the products, padded to
 * 16 with rows that are never written. q is rounded to f16 once; then,
 * for each tile of AT_KEYS keys of the split:
 *  1. the tile's K and V rows (f16, as stored) into shared memory, every
 *     copy in flight at once (cp.async), zeros past the split's keys;
 *  2. the 16 x AT_KEYS scores Q K^T (WMMA 16 x 16 x 16, f16 inputs, f32
 *     sums), warp w the keys 16 w .. + 16, into shared memory;
 *  3. the online softmax, 8 threads a row (8 keys each): scale, running
 *     max, probabilities e = expf(s - max) summed in f32 and rounded to
 *     f16, the rescale factor of what came before applied to the row's
 *     outputs (f32, shared memory);
 *  4. outputs += P V, warp w the output columns HD/4 w .. + HD/4.
 * Numerics as k_attn_split_gqa's with f16 caches (q and the probabilities
 * rounded to f16, scores, sums and outputs in f32); only the order of the
 * sums differs. The f32 kernel walks a split's keys one at a time, each
 * warp paying a round trip a key and 8 shuffle reductions of the scores:
 * at depth 32768 its 67 MB a layer took 65 us on the H200 (record
 * bench/results/2026-12-03-cuda-attn-depth/), a fifth of the bandwidth. */
#include "cuda.h"

#include <math.h>
#include <mma.h>

#define AT_KEYS    64      /* keys of a tile */
#define AT_ROWS    16      /* product rows: the group's query heads, padded */
#define AT_THREADS 128
static_assert(AT_KEYS == 16 * (AT_THREADS / 32), "a warp's 16 keys of a tile's scores");

/* Shared memory, in bytes: Q (f16, pitch LH), K and V rows (f16, pitch
 * LH), the scores (f32, pitch LS), the probabilities (f16, pitch LP), the
 * outputs (f32, pitch LO), each row's running max, sum and last rescale.
 * Every region and fragment starts 32-byte aligned, as WMMA needs. */
template <int HD> struct at_sh {
    static constexpr int LH = HD + 8, LS = AT_KEYS + 4, LP = AT_KEYS + 8, LO = HD + 4;
    static constexpr size_t q_at = 0, k_at = q_at + (size_t)AT_ROWS * LH * 2,
                            v_at = k_at + (size_t)AT_KEYS * LH * 2,
                            s_at = v_at + (size_t)AT_KEYS * LH * 2,
                            p_at = s_at + (size_t)AT_ROWS * LS * 4,
                            o_at = p_at + (size_t)AT_ROWS * LP * 2,
                            m_at = o_at + (size_t)AT_ROWS * LO * 4,
                            l_at = m_at + (size_t)AT_ROWS * 4, bytes = l_at + (size_t)AT_ROWS * 4;
    static_assert(k_at % 32 == 0 && v_at % 32 == 0 && s_at % 32 == 0 && p_at % 32 == 0 &&
                  o_at % 32 == 0, "32-byte aligned regions");
};

template <int HD>
__global__ void __launch_bounds__(AT_THREADS)
k_attn_split_tc(const float *q, int64_t ldq, const __half *kc, int64_t ldkc, const __half *vc,
                int64_t ldvc, const int32_t *runs, int n_seq, int64_t kv_rows, float scale,
                int64_t chunk, int nsplit, int64_t Hq, int G, float *part, int64_t r0)
{
    cuda_pdl_enter();
    using namespace nvcuda;
    using L = at_sh<HD>;
    extern __shared__ __align__(128) unsigned char at_smem[];
    const int s = blockIdx.x;
    const int64_t hk = blockIdx.y, r = r0 + blockIdx.z;
    const int tid = threadIdx.x, w = tid / 32;
    const int4 run = run_of(runs, n_seq, r);
    const int64_t L_ = run.x < 0 ? 0 : (int64_t)run.w + (r - run.y) + 1;
    const int64_t ch = chunk > 0 ? chunk : (L_ + nsplit - 1) / nsplit;   /* 0: from L */
    const int64_t j0 = (int64_t)s * ch, j1 = j0 + ch < L_ ? j0 + ch : L_;
    const int64_t slot = run.x < 0 ? 0 : run.x;
    if (j0 >= j1) {          /* an empty split (most of them in a short row's graph step) */
        for (int e = tid; e < G * (HD + 2); e += AT_THREADS) {
            const int g = e / (HD + 2), i = e % (HD + 2);
            part[(((int64_t)blockIdx.z * Hq + hk * G + g) * nsplit + s) * (HD + 2) + i] =
                i == 0 ? -INFINITY : 0.0f;
        }
        return;
    }
    __half *Q = (__half *)(at_smem + L::q_at), *K = (__half *)(at_smem + L::k_at);
    __half *V = (__half *)(at_smem + L::v_at), *P = (__half *)(at_smem + L::p_at);
    float *S = (float *)(at_smem + L::s_at), *O = (float *)(at_smem + L::o_at);
    float *mx = (float *)(at_smem + L::m_at), *sm = (float *)(at_smem + L::l_at);

    for (int e = tid; e < AT_ROWS * HD / 4; e += AT_THREADS) {
        const int g = e / (HD / 4), i = 4 * (e % (HD / 4));
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (g < G)
            v = *(const float4 *)(q + r * ldq + (hk * G + g) * HD + i);
        __half2 *d = (__half2 *)(Q + g * L::LH + i);
        d[0] = __floats2half2_rn(v.x, v.y);
        d[1] = __floats2half2_rn(v.z, v.w);
        *(float4 *)(O + g * L::LO + i) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    if (tid < AT_ROWS) {
        mx[tid] = -INFINITY;
        sm[tid] = 0.0f;
    }
    const __half *kb = kc + slot * kv_rows * ldkc + hk * HD;
    const __half *vb = vc + slot * kv_rows * ldvc + hk * HD;

    for (int64_t t0 = j0; t0 < j1; t0 += AT_KEYS) {
        const int nk = (int)(j1 - t0 < AT_KEYS ? j1 - t0 : AT_KEYS);
        __syncthreads();               /* the last tile's readers are done (and Q, O are set) */
        /* 1. the tile's K and V rows */
        for (int e = tid; e < AT_KEYS * HD / 8; e += AT_THREADS) {
            const int j = e / (HD / 8), i = 8 * (e % (HD / 8));
            const bool in = j < nk;
            const int64_t row = in ? t0 + j : t0;
            cp16(K + j * L::LH + i, kb + row * ldkc + i, in);
            cp16(V + j * L::LH + i, vb + row * ldvc + i, in);
        }
        cp_commit();
        cp_wait<0>();
        __syncthreads();

        /* 2. warp w's 16 x 16 scores */
        {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> sc;
            wmma::fill_fragment(sc, 0.0f);
            #pragma unroll 4
            for (int kk = 0; kk < HD; kk += 16) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> qa;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> kf;
                wmma::load_matrix_sync(qa, Q + kk, L::LH);
                wmma::load_matrix_sync(kf, K + 16 * w * L::LH + kk, L::LH);
                wmma::mma_sync(sc, qa, kf, sc);
            }
            wmma::store_matrix_sync(S + 16 * w, sc, L::LS, wmma::mem_row_major);
        }
        __syncthreads();

        /* 3. the online softmax: threads 8 g .. 8 g + 7 share row g */
        {
            const int g = tid / 8, jh = 8 * (tid % 8);
            const bool row_in = g < G;
            float *srow = S + g * L::LS;
            __half *prow = P + g * L::LP;
            const float mo = mx[g];
            float m = -INFINITY, v[8];
            #pragma unroll
            for (int j = 0; j < 8; j++) {
                v[j] = row_in && jh + j < nk ? srow[jh + j] * scale : -INFINITY;
                m = fmaxf(m, v[j]);
            }
            #pragma unroll
            for (int o = 1; o < 8; o <<= 1)
                m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
            const float mn = fmaxf(mo, m);
            float sum = 0.0f, f = 1.0f;
            if (mn == -INFINITY) {         /* nothing seen yet: a padding row */
                #pragma unroll
                for (int j = 0; j < 8; j++)
                    prow[jh + j] = __float2half_rn(0.0f);
            } else {
                #pragma unroll
                for (int j = 0; j < 8; j++) {
                    const float e = expf(v[j] - mn);
                    sum += e;
                    prow[jh + j] = __float2half_rn(e);
                }
                f = expf(mo - mn);
            }
            #pragma unroll
            for (int o = 1; o < 8; o <<= 1)
                sum += __shfl_xor_sync(0xffffffffu, sum, o);
            if (tid % 8 == 0) {
                mx[g] = mn;
                sm[g] = sm[g] * f + sum;
            }
            float *orow = O + g * L::LO + (HD / 8) * (tid % 8);
            #pragma unroll
            for (int i = 0; i < HD / 8; i++)
                orow[i] *= f;
        }
        __syncthreads();

        /* 4. warp w's output columns += P V */
        {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> pa[AT_KEYS / 16];
            #pragma unroll
            for (int kk = 0; kk < AT_KEYS / 16; kk++)
                wmma::load_matrix_sync(pa[kk], P + 16 * kk, L::LP);
            #pragma unroll
            for (int c = 0; c < HD / 64; c++) {
                const int col = (HD / 4) * w + 16 * c;
                wmma::fragment<wmma::accumulator, 16, 16, 16, float> o;
                wmma::load_matrix_sync(o, O + col, L::LO, wmma::mem_row_major);
                #pragma unroll
                for (int kk = 0; kk < AT_KEYS / 16; kk++) {
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> vf;
                    wmma::load_matrix_sync(vf, V + 16 * kk * L::LH + col, L::LH);
                    wmma::mma_sync(o, pa[kk], vf, o);
                }
                wmma::store_matrix_sync(O + col, o, L::LO, wmma::mem_row_major);
            }
        }
    }
    __syncthreads();
    /* the partials of k_attn_split_gqa: max, sum, unnormalized outputs
     * (an empty split: -inf, 0, zeros) */
    for (int e = tid; e < G * (HD + 2); e += AT_THREADS) {
        const int g = e / (HD + 2), i = e % (HD + 2);
        float *o = part + (((int64_t)blockIdx.z * Hq + hk * G + g) * nsplit + s) * (HD + 2);
        o[i] = i == 0 ? mx[g] : i == 1 ? sm[g] : O[g * L::LO + i - 2];
    }
}

template <int HD>
static bool launch(be_ctx *be, const at_args &a, bool *ok)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const size_t bytes = at_sh<HD>::bytes;
    *ok = false;
    if ((size_t)c->smem_optin < bytes)        /* this card: the f32 kernel */
        return false;
    if (!cuda_smem_optin(be, (const void *)k_attn_split_tc<HD>, bytes))
        return true;
    cuda_launch(k_attn_split_tc<HD>, dim3((unsigned)a.nsplit, (unsigned)a.n_head_kv, (unsigned)a.T),
                AT_THREADS, bytes, c->stream, a.q, a.ldq, (const __half *)a.kc, a.ldk,
                (const __half *)a.vc, a.ldv, a.runs, a.n_seq, a.kv_rows, a.scale, a.chunk,
                (int)a.nsplit, a.n_head, (int)(a.n_head / a.n_head_kv), c->part, a.r0);
    *ok = CUDA_LAUNCHED(be, "k_attn_split_tc");
    return true;
}

template <int HD> static void ready(be_ctx *be)
{
    if ((size_t)cuda_ctx_of(be)->smem_optin >= at_sh<HD>::bytes)
        cuda_smem_optin(be, (const void *)k_attn_split_tc<HD>, at_sh<HD>::bytes);
}

void cuda_attn_tc_ready(be_ctx *be)
{
    ready<128>(be);
    ready<256>(be);
}

bool cuda_attn_split_tc(be_ctx *be, const at_args *a, bool *ok)
{
    const int64_t G = a->n_head / a->n_head_kv;
    if (!a->kv_f16 || G > AT_ROWS || a->ldq % 4 || a->ldk % 8 || a->ldv % 8 ||
        (uintptr_t)a->q % 16 || (uintptr_t)a->kc % 16 || (uintptr_t)a->vc % 16)
        return false;
    switch (a->head_dim) {
    case 128: return launch<128>(be, *a, ok);
    case 256: return launch<256>(be, *a, ok);
    default: return false;
    }
}
