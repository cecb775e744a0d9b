/* cuda_fattn_mma.cu: prompt attention for f16 K/V caches with the scores,
 * the probabilities and the outputs held in registers (mma.sync m16n8k16,
 * f16 inputs, f32 sums), the default of fast mode's tiled attention on
 * f16 caches (cuda_fattn.cu; Q36_CUDA_FATTNMMA=0 keeps the WMMA kernel of
 * cuda_fattn_tc.cu, whose outputs live in shared memory and go through it
 * twice a tile).
 *
 * One block of 4 warps per (tile of 64 query rows of a run, query head,
 * run); warp w owns query rows 16 w .. + 16, and each of its lanes two of
 * them (rows g and g + 8 of the warp's 16, g = lane / 4), a quarter of
 * their keys and of their outputs (the accumulator layout of m16n8k16).
 * Tiles are scheduled longest first (the last query tiles see the most
 * keys). The query rows are rounded to f16 into shared memory once; then
 * the tiles of BC K/V rows up to the last position the tile's rows see
 * are copied in two buffers (cp.async: the next tile's copies fly while
 * this one's products run), and for each:
 *  1. S = Q K^T on tensor cores, fragments through ldmatrix;
 *  2. the online softmax in registers: scale, causal mask (key j counts
 *     when j <= the row's position), running max over the quad of lanes
 *     that share a row, p = 2^(s log2(e) - max) rounded to f16 (its f32
 *     value summed), the earlier outputs rescaled;
 *  3. O += P V, the probabilities used in place as the A fragments,
 *     V's fragments through ldmatrix.trans.
 * At the end each output is divided by its row's sum.
 * Numerics as cuda_fattn_tc.cu's (q and p rounded to f16, scores and sums
 * in f32); the exponential is exp2f of the scaled score, and the order of
 * the sums is the tensor cores' and the quad's. Needs 16-byte aligned rows
 * (cuda_fattn_tc checks) and head dim 64, 128 or 256. */
#include "cuda.h"
#include "cuda_fattn_sm.h"
#include "cuda_mma.h"

#include <math.h>
#include <stdint.h>

#define FM_BR      64      /* query rows of a block: 4 warps x 16 */
#define FM_THREADS 128

/* K/V rows of a tile: 64, or 32 for head dim 256, which keeps the shared
 * memory of two buffers (101 KB) small enough for two blocks an SM */
template <int HD> struct fm_cfg {
    static constexpr int BC = HD == 256 ? 32 : 64;
    static constexpr int LH = HD + 8;            /* pitch in halves: ldmatrix rows hit distinct banks */
    static constexpr size_t q_at = 0, k_at = q_at + (size_t)FM_BR * LH * 2,
                            v_at = k_at + (size_t)2 * BC * LH * 2,
                            bytes = v_at + (size_t)2 * BC * LH * 2;
};

/* K and V rows j0 .. j0 + BC of the slot into buffer b (zeros past nkeys) */
template <int HD>
__device__ __forceinline__ void fm_load_kv(const fa_args &a, __half *K, __half *V, int64_t slot,
                                           int64_t hk, int64_t j0, int64_t nkeys, int tid)
{
    using C = fm_cfg<HD>;
    for (int e = tid; e < C::BC * HD / 8; e += FM_THREADS) {
        const int j = e / (HD / 8), i = 8 * (e % (HD / 8));
        const bool in = j0 + j < nkeys;
        const int64_t row = slot * a.kv_rows + (in ? j0 + j : 0);
        cp16(K + j * C::LH + i, (const __half *)a.kc + row * a.ldk + hk * HD + i, in);
        cp16(V + j * C::LH + i, (const __half *)a.vc + row * a.ldv + hk * HD + i, in);
    }
}

template <int HD>
__global__ void __launch_bounds__(FM_THREADS) k_fattn_mma(fa_args a)
{
    using C = fm_cfg<HD>;
    constexpr int BC = C::BC, LH = C::LH, NT = BC / 8, ND = HD / 8;
    cuda_pdl_enter();
    extern __shared__ __align__(128) unsigned char fm_smem[];
    fa_tile t;
    if (!fa_tile_of<FM_BR>(a, &t))
        return;
    const int rows = t.rows;
    const int64_t slot = t.slot, r0 = t.r0, p0 = t.p0, nkeys = t.nkeys;
    const int64_t h = blockIdx.y, hk = h / a.group;
    __half *Q = (__half *)(fm_smem + C::q_at);
    __half *Kb = (__half *)(fm_smem + C::k_at), *Vb = (__half *)(fm_smem + C::v_at);
    const int tid = threadIdx.x, w = tid / 32, lane = tid % 32, g = lane / 4, t4 = lane % 4;

    fm_load_kv<HD>(a, Kb, Vb, slot, hk, 0, nkeys, tid);
    cp_commit();
    for (int e = tid; e < FM_BR * HD / 4; e += FM_THREADS) {
        const int r = e / (HD / 4), i = 4 * (e % (HD / 4));
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (r < rows)
            v = *(const float4 *)(a.q + (r0 + r) * a.ldq + h * HD + i);
        __half2 *d = (__half2 *)(Q + r * LH + i);
        d[0] = __floats2half2_rn(v.x, v.y);
        d[1] = __floats2half2_rn(v.z, v.w);
    }

    float o[ND][4];
    #pragma unroll
    for (int d = 0; d < ND; d++)
        o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
    float mx[2] = { -INFINITY, -INFINITY }, sum[2] = { 0.0f, 0.0f };
    const float sl2 = a.scale * 1.44269504088896340736f;
    const int64_t pos[2] = { p0 + 16 * w + g, p0 + 16 * w + g + 8 };
    /* ldmatrix row addresses: A (row-major 16 x 16) and K (keys x dims) */
    const int lr = (lane % 8) + 8 * ((lane / 8) % 2), lc = 8 * (lane / 16);
    const unsigned qa = mma_sa(Q + (16 * w + lr) * LH + lc);

    int buf = 0;
    for (int64_t j0 = 0; j0 < nkeys; j0 += BC, buf ^= 1) {
        __half *K = Kb + buf * BC * LH, *V = Vb + buf * BC * LH;
        if (j0 + BC < nkeys)
            fm_load_kv<HD>(a, Kb + (buf ^ 1) * BC * LH, Vb + (buf ^ 1) * BC * LH, slot, hk, j0 + BC,
                           nkeys, tid);
        cp_commit();
        cp_wait<1>();
        __syncthreads();

        /* 1. scores: s[nt] covers keys j0 + 8 nt .. + 8 */
        float s[NT][4];
        #pragma unroll
        for (int nt = 0; nt < NT; nt++)
            s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
        const unsigned ka = mma_sa(K + (lane % 8) * LH + 8 * (lane / 8));
        #pragma unroll
        for (int k0 = 0; k0 < HD; k0 += 32) {
            uint32_t a0[4], a1[4];
            mma_ldsm4<false>(a0, qa + 2 * k0);
            mma_ldsm4<false>(a1, qa + 2 * (k0 + 16));
            #pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                uint32_t b[4];
                mma_ldsm4<false>(b, ka + 2 * (8 * nt * LH + k0));
                mma_16816(s[nt], a0, b[0], b[1]);
                mma_16816(s[nt], a1, b[2], b[3]);
            }
        }

        /* 2. the online softmax of rows g (e = 0, 1) and g + 8 (e = 2, 3) */
        uint32_t pa[BC / 16][4];
        float f[2];
        fa_online<NT>(&s[0][0], j0 + BC - 1 > p0 + 16 * w, j0, pos, sl2, mx, sum, pa, f);
        fa_rescale<ND>(&o[0][0], f);

        /* 3. O += P V: V's 16 x 16 blocks (keys x dims) transposed by ldmatrix */
        const unsigned va = mma_sa(V + lr * LH + lc);
        #pragma unroll
        for (int kk = 0; kk < BC / 16; kk++)
            #pragma unroll
            for (int d = 0; d < ND; d += 2) {
                uint32_t b[4];
                mma_ldsm4<true>(b, va + 2 * (16 * kk * LH + 8 * d));
                mma_16816(o[d], pa[kk], b[0], b[1]);
                mma_16816(o[d + 1], pa[kk], b[2], b[3]);
            }
        __syncthreads();               /* before this buffer takes the tile after next */
    }

    fa_row_sums(sum);
    #pragma unroll
    for (int i = 0; i < 2; i++) {
        const int r = 16 * w + g + 8 * i;
        if (r >= rows)
            continue;
        float *out = a.out + (r0 + r) * a.ldo + h * HD + 2 * t4;
        const float inv = 1.0f / sum[i];
        #pragma unroll
        for (int d = 0; d < ND; d++)
            *(float2 *)(out + 8 * d) = make_float2(o[d][2 * i] * inv, o[d][2 * i + 1] * inv);
    }
}

template <int HD>
static bool launch(be_ctx *be, const fa_args &a, dim3 grid)
{
    return fa_launch(be, k_fattn_mma<HD>, grid, FM_THREADS, fm_cfg<HD>::bytes, a, "k_fattn_mma");
}

bool cuda_fattn_mma(be_ctx *be, const fa_args *a, int64_t max_rows, int64_t n_head, int n_seq,
                    int64_t head_dim)
{
    const dim3 grid((unsigned)((max_rows + FM_BR - 1) / FM_BR), (unsigned)n_head, (unsigned)n_seq);
    switch (head_dim) {
    case 64: return launch<64>(be, *a, grid);
    case 128: return launch<128>(be, *a, grid);
    case 256: return launch<256>(be, *a, grid);
    default: return false;
    }
}
