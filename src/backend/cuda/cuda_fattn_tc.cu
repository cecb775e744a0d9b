/* cuda_fattn_tc.cu: prompt attention on tensor cores, for f16 K/V caches
 * (fast mode's tiled attention, cuda_fattn.cu, hands its f16 batches here
 * unless Q36_CUDA_FATTNTC=0 was in the environment when the context was
 * made; f32 caches keep its f32 kernel).
 *
 * One block of 4 warps per (tile of TB_R query rows of a run, query head,
 * run); warp w owns query rows 16 w .. + 16. The query rows are rounded
 * to f16 once; then, for each tile of TB_C K/V rows up to the last
 * position the tile's rows see:
 *  1. the K and V rows (f16, as stored) into shared memory;
 *  2. each warp's 16 x TB_C scores, Q K^T on tensor cores (WMMA 16 x 16 x
 *     16, f16 inputs, f32 sums), into shared memory;
 *  3. the online softmax, two lanes a row (half the keys each): scale,
 *     causal mask (key j counts when j <= the row's position), running
 *     max, probabilities e = expf(s - max) summed in f32 and rounded to
 *     f16, the rescale factor of what came before applied to the row's
 *     outputs (f32, in shared memory);
 *  4. outputs += P V on tensor cores, 16 x 16 blocks of the row's outputs
 *     loaded from shared memory, multiplied, stored back.
 * At the end each output is divided by its row's sum.
 * Numerics as the f32 kernel's with f16 caches (q and the probabilities
 * rounded to f16, scores and sums in f32); only the order of the sums
 * differs (the tensor cores' own). Needs 16-byte aligned rows: q (f32, a
 * multiple of 4 wide), K and V (a multiple of 8 halves); else false and
 * the f32 kernel runs. */
#include "cuda.h"

#include <math.h>
#include <mma.h>

#define TB_R       64      /* query rows of a block: 4 warps x 16 */
#define TB_C       64      /* K/V rows of a tile */
#define TB_THREADS 128


/* Shared memory, in bytes: Q, K, V rows (f16, pitch LH), the scores (f32,
 * pitch LS), the probabilities (f16, pitch LP), the outputs (f32, pitch
 * LO), each row's running max and sum. Every region and every 16-row
 * fragment starts 32-byte aligned, as WMMA needs. */
template <int HD> struct tb_sh {
    static constexpr int LH = HD + 8, LS = TB_C + 4, LP = TB_C + 8, LO = HD + 4;
    static constexpr size_t q_at = 0, k_at = q_at + (size_t)TB_R * LH * 2,
                            v_at = k_at + (size_t)TB_C * LH * 2,
                            s_at = v_at + (size_t)TB_C * LH * 2,
                            p_at = s_at + (size_t)TB_R * LS * 4,
                            o_at = p_at + (size_t)TB_R * LP * 2,
                            m_at = o_at + (size_t)TB_R * LO * 4,
                            l_at = m_at + (size_t)TB_R * 4, bytes = l_at + (size_t)TB_R * 4;
};

template <int HD>
__global__ void __launch_bounds__(TB_THREADS) k_fattn_tc(fa_args a)
{
    cuda_pdl_enter();
    using namespace nvcuda;
    using L = tb_sh<HD>;
    extern __shared__ __align__(128) unsigned char tb_smem[];
    const int z = blockIdx.z;
    const int64_t n = a.runs[4 * z + 2], t0 = (int64_t)blockIdx.x * TB_R;
    if (t0 >= n)
        return;
    const int rows = (int)(n - t0 < TB_R ? n - t0 : TB_R);
    const int64_t slot = a.runs[4 * z], r0 = a.runs[4 * z + 1] + t0;
    const int64_t p0 = a.runs[4 * z + 3] + t0, nkeys = p0 + rows;
    const int64_t h = blockIdx.y, hk = h / a.group;
    __half *Q = (__half *)(tb_smem + L::q_at), *K = (__half *)(tb_smem + L::k_at);
    __half *V = (__half *)(tb_smem + L::v_at), *P = (__half *)(tb_smem + L::p_at);
    float *S = (float *)(tb_smem + L::s_at), *O = (float *)(tb_smem + L::o_at);
    float *mx = (float *)(tb_smem + L::m_at), *sm = (float *)(tb_smem + L::l_at);
    const int tid = threadIdx.x, w = tid / 32, lane = tid % 32;

    for (int e = tid; e < TB_R * HD / 4; e += TB_THREADS) {
        const int r = e / (HD / 4), i = 4 * (e % (HD / 4));
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (r < rows)
            v = *(const float4 *)(a.q + (r0 + r) * a.ldq + h * HD + i);
        __half2 *d = (__half2 *)(Q + r * L::LH + i);
        d[0] = __floats2half2_rn(v.x, v.y);
        d[1] = __floats2half2_rn(v.z, v.w);
        *(float4 *)(O + r * L::LO + i) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    for (int r = tid; r < TB_R; r += TB_THREADS) {
        mx[r] = -INFINITY;
        sm[r] = 0.0f;
    }
    __syncthreads();

    for (int64_t j0 = 0; j0 < nkeys; j0 += TB_C) {
        /* 1. K and V rows j0.. of the slot, zero past the keys: every copy of
         * the tile in flight at once (cp.async), not one round trip each */
        for (int e = tid; e < TB_C * HD / 8; e += TB_THREADS) {
            const int j = e / (HD / 8), i = 8 * (e % (HD / 8));
            const bool in = j0 + j < nkeys;
            const int64_t row = slot * a.kv_rows + (in ? j0 + j : 0);
            cp16(K + j * L::LH + i, (const __half *)a.kc + row * a.ldk + hk * HD + i, in);
            cp16(V + j * L::LH + i, (const __half *)a.vc + row * a.ldv + hk * HD + i, in);
        }
        cp_commit();
        cp_wait<0>();
        __syncthreads();

        /* 2. the warp's scores */
        {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> s[TB_C / 16];
            #pragma unroll
            for (int f = 0; f < TB_C / 16; f++)
                wmma::fill_fragment(s[f], 0.0f);
            #pragma unroll 4
            for (int kk = 0; kk < HD; kk += 16) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> qa;
                wmma::load_matrix_sync(qa, Q + 16 * w * L::LH + kk, L::LH);
                #pragma unroll
                for (int f = 0; f < TB_C / 16; f++) {
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> kb;
                    wmma::load_matrix_sync(kb, K + 16 * f * L::LH + kk, L::LH);
                    wmma::mma_sync(s[f], qa, kb, s[f]);
                }
            }
            #pragma unroll
            for (int f = 0; f < TB_C / 16; f++)
                wmma::store_matrix_sync(S + 16 * w * L::LS + 16 * f, s[f], L::LS,
                                        wmma::mem_row_major);
        }
        __syncwarp();

        /* 3. the online softmax: lanes 2r', 2r'+1 share row 16 w + r' */
        {
            const int r = 16 * w + lane / 2, jh = (TB_C / 2) * (lane % 2);
            const int64_t pos = p0 + r;
            float *srow = S + r * L::LS;
            __half *prow = P + r * L::LP;
            const float mo = mx[r];
            float m = -INFINITY;
            for (int j = jh; j < jh + TB_C / 2; j++) {
                const float v = r < rows && j0 + j <= pos ? srow[j] * a.scale : -INFINITY;
                srow[j] = v;
                m = fmaxf(m, v);
            }
            m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
            const float mn = fmaxf(mo, m);
            float sum = 0.0f, f = 1.0f;
            if (mn == -INFINITY) {         /* nothing seen yet: all masked */
                for (int j = jh; j < jh + TB_C / 2; j++)
                    prow[j] = __float2half_rn(0.0f);
            } else {
                for (int j = jh; j < jh + TB_C / 2; j++) {
                    const float e = expf(srow[j] - mn);
                    sum += e;
                    prow[j] = __float2half_rn(e);
                }
                f = expf(mo - mn);
            }
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            if (lane % 2 == 0) {
                mx[r] = mn;
                sm[r] = sm[r] * f + sum;
            }
            float *orow = O + r * L::LO + (HD / 2) * (lane % 2);
            for (int i = 0; i < HD / 2; i++)
                orow[i] *= f;
        }
        __syncwarp();

        /* 4. the warp's outputs += P V */
        {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> pa[TB_C / 16];
            #pragma unroll
            for (int kk = 0; kk < TB_C / 16; kk++)
                wmma::load_matrix_sync(pa[kk], P + 16 * w * L::LP + 16 * kk, L::LP);
            for (int c = 0; c < HD / 16; c++) {
                wmma::fragment<wmma::accumulator, 16, 16, 16, float> o;
                float *ob = O + 16 * w * L::LO + 16 * c;
                wmma::load_matrix_sync(o, ob, L::LO, wmma::mem_row_major);
                #pragma unroll
                for (int kk = 0; kk < TB_C / 16; kk++) {
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> vb;
                    wmma::load_matrix_sync(vb, V + 16 * kk * L::LH + 16 * c, L::LH);
                    wmma::mma_sync(o, pa[kk], vb, o);
                }
                wmma::store_matrix_sync(ob, o, L::LO, wmma::mem_row_major);
            }
        }
        __syncthreads();               /* before the next tile's K and V */
    }

    for (int e = lane; e < 16 * HD; e += 32) {
        const int r = 16 * w + e / HD, i = e % HD;
        if (r < rows)
            a.out[(r0 + r) * a.ldo + h * HD + i] = O[r * L::LO + i] / sm[r];
    }
}

template <int HD>
static bool launch(be_ctx *be, const fa_args &a, dim3 grid)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const size_t bytes = tb_sh<HD>::bytes;
    if ((size_t)c->smem_optin < bytes)        /* this card: the f32 kernel */
        return false;
    if (!cuda_smem_optin(be, (const void *)k_fattn_tc<HD>, bytes))
        return true;
    cuda_launch(k_fattn_tc<HD>, grid, TB_THREADS, bytes, c->stream, a);
    CUDA_LAUNCHED(be, "k_fattn_tc");
    return true;
}

bool cuda_fattn_tc(be_ctx *be, const fa_args *a, bool kv_f16, int64_t max_rows, int64_t n_head,
                   int n_seq, int64_t head_dim)
{
    if (!kv_f16 || a->ldq % 4 || a->ldk % 8 || a->ldv % 8 || (uintptr_t)a->q % 16 ||
        (uintptr_t)a->kc % 16 || (uintptr_t)a->vc % 16)
        return false;
    if (cuda_ctx_of(be)->fattn_wg && cuda_fattn_wg(be, a, max_rows, n_head, n_seq, head_dim))
        return true;
    if (cuda_ctx_of(be)->fattn_mma && cuda_fattn_mma(be, a, max_rows, n_head, n_seq, head_dim))
        return true;
    const dim3 grid((unsigned)((max_rows + TB_R - 1) / TB_R), (unsigned)n_head, (unsigned)n_seq);
    switch (head_dim) {
    case 64: return launch<64>(be, *a, grid);
    case 128: return launch<128>(be, *a, grid);
    case 256: return launch<256>(be, *a, grid);
    default: return false;
    }
}
