/* cuda_chunk_wide.cu: the chunked delta rule's state kernel with its
 * products as mma.sync steps on registers, 16 or 32 value columns a block
 * (k_chunk_state_wide; cuda_chunk.cu takes it unless Q36_CUDA_CHUNKBV=0,
 * state_bv). What it shares with the other kernels is in cuda_chunk_ph.h.
 *
 * k_chunk_state_split keeps 16 columns of a value head's state a block
 * (for the 35B-A3B, 32 value heads and dk 128: 256 blocks, two an SM), each
 * block copying the chunk's whole W and K rows (64 x 128 floats each) for
 * its 16 columns, and its products are WMMA calls on generic pointers.
 * Nsight Compute's instruction samples of it on an H100 (bench/results/
 * 2026-12-06-cuda-session38/, run1: 1.7 k warp instructions a warp a
 * chunk) are 31% IMAD and 14% LEA (64-bit addresses of every fragment
 * element), 8.5% generic loads LD (WMMA's loads from shared memory not
 * known to be shared), 8% FSETP (the TF32 rounding), 4% HMMA. Here:
 *  - the fragments of m16n8k8 TF32 products read from shared memory by
 *    index (cuda_chunk_ph.h: ck_mma; LDS, offsets fixed at compile time
 *    in the unrolled steps), each element rounded to TF32 by one integer
 *    add (tf32_bits);
 *  - 16 value columns a block (NT = 1, the default) or 32 (NT = 2,
 *    Q36_CUDA_CHUNKBV=32: the same copies of W and K serve twice the
 *    columns, every warp forms a 16 x 16 tile of V', half the blocks);
 *    on an H100 16 measured faster on both bench files (bench/results/
 *    2026-12-06-cuda-session38/, run4);
 *  - pitches that put a fragment's 32 loads on 32 banks (below).
 * The products are split's in form (acc = -U, += W S, negated; acc =
 * e^G_last S, += K^T diag(dec) V'), on TF32 operands with f32 sums, in
 * another order of the hardware's steps: the same values to TF32 rounding,
 * not the same bits. The state before each chunk goes to its slot of Sb
 * and V' to U's place, as split's do, for k_chunk_out.
 *
 * Shared memory (floats): S (dk x (16 NT + 8)), W's rows (pitch dk + 4: a
 * row fragment's lanes (g, t) on bank 4 g + t), K's rows (pitch dk + 8:
 * read down a column, bank 8 t + g), U then V' twice (pitch 16 NT + 8: the
 * next chunk's U lands while this one's V' updates S), G and the update
 * weights: 92 KB at dk = 128 and NT = 1, 108 KB at NT = 2: two blocks an
 * SM. */
#include "cuda.h"
#include "cuda_chunk_ph.h"

/* NT: 16-column tiles a block (SW_BV = 16 NT value columns) */
template <int DK, int NT> struct sw_sh {
    static constexpr int BV = 16 * NT;
    static constexpr int LS = BV + 8, LW = DK + 4, LK = DK + 8, LV = BV + 8;
    static constexpr size_t oS = 0, oW = oS + (size_t)DK * LS, oK = oW + (size_t)CK_C * LW,
                            oV = oK + (size_t)CK_C * LK, oG = oV + 2 * (size_t)CK_C * LV,
                            oD = oG + CK_C, floats = oD + CK_C;
};
static_assert(sw_sh<32, 1>::oW % 4 == 0 && sw_sh<32, 1>::oK % 4 == 0 &&
              sw_sh<32, 1>::oV % 4 == 0 && sw_sh<128, 2>::oV % 4 == 0,
              "16-byte aligned regions (cp.async, float4 reads)");


template <int DK, int NT>
__global__ void __launch_bounds__(CK_THREADS) k_chunk_state_wide(ck_args a)
{
    cuda_pdl_enter();
#ifdef __CUDA_ARCH__
    using L = sw_sh<DK, NT>;
    constexpr int SW_NT = NT, SW_BV = L::BV, NW = CK_THREADS / 32;
    extern __shared__ __align__(128) float smw[];
    const int tid = threadIdx.x, w = tid / 32, run = (int)blockIdx.y;
    const int64_t n = a.runs[4 * run + 2], h = blockIdx.x, kcol = (a.Hk + h % a.Hk) * DK;
    const int64_t j0 = (int64_t)blockIdx.z * SW_BV;
    const int lane = tid & 31;
    float *S = smw + L::oS, *XW = smw + L::oW, *XK = smw + L::oK, *G = smw + L::oG,
          *dec = smw + L::oD;
    float *Sg = state_row(a, ck_blk{ (int)h, run, (int)blockIdx.z });
    state_cols<DK, SW_BV, L::LS, false>(S, Sg, j0, tid, CK_THREADS);
    if (n > 0) {
        const ck_chunk c = chunk_of(a.runs, run, 0);
        tc_cp_rows<DK, L::LW>(XW, a.W, a.Hv * DK, h * DK, c, tid);
        tc_cp_rows<SW_BV, L::LV>(smw + L::oV, a.U, a.Hv * DK, h * DK + j0, c, tid);
    }
    cp_commit();
    if (n > 0)
        tc_cp_rows<DK, L::LK>(XK, a.qkv, a.ldq, kcol, chunk_of(a.runs, run, 0), tid);
    cp_commit();
    /* thread t < CK_C: G of row t of the chunk to come, a chunk ahead */
    float gn = tid < CK_C ? chunk_g(a, run, 0, h, tid) : 0.0f;
    for (int64_t c0 = 0, it = 0; c0 < n; c0 += CK_C, it++) {
        const ck_chunk c = chunk_of(a.runs, run, c0);
        float *V = smw + L::oV + (it & 1) * CK_C * L::LV;
        if (tid < CK_C) {
            G[tid] = gn;
            gn = chunk_g(a, run, c0 + CK_C, h, tid);
        }
        cp_wait<1>();                  /* W and U (K may still be in flight) */
        __syncthreads();
        /* V' = U - W S: warp w the tile (row tile w % 4, column tile
         * w / 4); acc = -U, += W S, V' = -acc */
        for (int q = w; q < (CK_C / 16) * SW_NT; q += NW) {
            const int rt = q % (CK_C / 16), ct = q / (CK_C / 16);
            float *Vt = V + 16 * rt * L::LV + 16 * ct;
            float acc[2][4];
            ck_ld<2>(acc, Vt, L::LV, -1.0f, lane);
            ck_mma<DK / 8, 2, false>(acc, XW + 16 * rt * L::LW, L::LW, 1, S + 16 * ct, L::LS, 1,
                                     lane);
            ck_st<2>(acc, Vt, L::LV, -1.0f, lane);
        }
        if (tid < CK_C)
            dec[tid] = tid < c.nc ? expf(G[c.nc - 1] - G[tid]) : 0.0f;
        /* the state before the chunk, this block's columns, to its slot */
        sb_store<DK, SW_BV, L::LS>(sb_slot(a, c, run, h, DK), S, j0, tid, CK_THREADS);
        __syncthreads();               /* W is spent, V' formed, dec known */
        if (c0 + CK_C < n) {
            const ck_chunk cn = chunk_of(a.runs, run, c0 + CK_C);
            tc_cp_rows<DK, L::LW>(XW, a.W, a.Hv * DK, h * DK, cn, tid);
            tc_cp_rows<SW_BV, L::LV>(smw + L::oV + ((it + 1) & 1) * CK_C * L::LV, a.U,
                                     a.Hv * DK, h * DK + j0, cn, tid);
        }
        cp_commit();
        vp_out<DK, SW_BV, L::LV>(a, c, h, j0, V, dec, tid, CK_THREADS);
        cp_wait<1>();                  /* K (the next W and U may still be in flight) */
        __syncthreads();
        {   /* S <- e^G_last S + K^T V': warp w the state's rows 16 w ..
             * + 16, every column of the block (A = K^T: element (r, k) at
             * XK[k][r]) */
            const float el = expf(G[c.nc - 1]);
            for (int m = w; m < DK / 16; m += NW) {
                float *St = S + 16 * m * L::LS;
                float acc[2 * SW_NT][4];
                ck_ld<2 * SW_NT>(acc, St, L::LS, el, lane);
                ck_mma<CK_C / 8, 2 * SW_NT, false>(acc, XK + 16 * m, 1, L::LK, V, L::LV, 1, lane);
                ck_st<2 * SW_NT>(acc, St, L::LS, 1.0f, lane);
            }
        }
        __syncthreads();               /* K is spent */
        if (c0 + CK_C < n)
            tc_cp_rows<DK, L::LK>(XK, a.qkv, a.ldq, kcol, chunk_of(a.runs, run, c0 + CK_C), tid);
        cp_commit();
    }
    cp_wait<0>();
    state_cols<DK, SW_BV, L::LS, true>(S, Sg, j0, tid, CK_THREADS);
#endif
}

template <int DK> bool ck_launch_state_wide(be_ctx *be, const ck_args &a, int n_seq, int bv)
{
    static_assert(DK % 32 == 0, "whole column blocks");
    void (*k)(ck_args) = bv == 32 ? k_chunk_state_wide<DK, 2> : k_chunk_state_wide<DK, 1>;
    const size_t bytes = (bv == 32 ? sw_sh<DK, 2>::floats : sw_sh<DK, 1>::floats) * sizeof(float);
    if (!cuda_smem_optin(be, (const void *)k, bytes))
        return false;
    const dim3 grid((unsigned)a.Hv, (unsigned)n_seq, (unsigned)(DK / bv));
    cuda_launch(k, grid, CK_THREADS, bytes, cuda_ctx_of(be)->stream, a);
    return CUDA_LAUNCHED(be, "k_chunk_state_wide");
}

template bool ck_launch_state_wide<32>(be_ctx *, const ck_args &, int, int);
template bool ck_launch_state_wide<64>(be_ctx *, const ck_args &, int, int);
template bool ck_launch_state_wide<128>(be_ctx *, const ck_args &, int, int);
