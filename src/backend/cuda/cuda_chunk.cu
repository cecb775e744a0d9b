/* cuda_chunk.cu: the CUDA backend's chunked gated delta rule (MODEL.md
 * §2.6), the prompt path of fast mode behind be_deltanet_chunked (unless
 * Q36_CUDA_CHUNKED=0: cuda_chunk.h, when that entry runs the recurrence of
 * cuda_seq.cu).
 *
 * Per value head and chunk of up to C = 64 tokens of a run (chunks start
 * at the run's first row, as the CPU's do), with G_t the prefix sum of the
 * chunk's g, and the state S (dk x dv, S[i][j], i a key index, j a value
 * index; stored as backend.h says, element [j*dk + i]):
 *   A_ts = beta_t (k_t . k_s) e^(G_t - G_s)       s < t
 *   U = (I + A)^-1 diag(beta) V,  W = (I + A)^-1 diag(beta e^G) K
 *   P_ts = (q_t . k_s) e^(G_t - G_s)              s <= t
 *   V' = U - W S
 *   O = (diag(e^G) Q S + P V') / sqrt(dk)
 *   S <- e^G_last S + sum_t e^(G_last - G_t) k_t v'_t^T
 * Every exponent is <= 0 (g <= 0), so nothing overflows; strong gates
 * underflow to 0, which is the limit.
 *
 * Two kernels:
 *  - k_chunk_prep, one block per (chunk, value head, run): everything that
 *    does not depend on the state: G, A, P and, by forward substitution
 *    (one thread per column of W and U, rows in order), W and U. They go
 *    to the reserved scratch (c->chunk), per row of the batch:
 *    U, W: T x Hv x dk; P: T x Hv x C; G: T x Hv.
 *  - k_chunk_state, one block per (value head, run, block of CK_BV value
 *    columns): the state's columns j0..j0+CK_BV stay in shared memory while
 *    the run's chunks go by in order (columns of S never mix: V', O and
 *    the update of column j read only column j of S, U, V'). Per chunk it
 *    forms V', the outputs and the next state. The state after each chunk
 *    is in shared memory at the end of the update phase, and is written
 *    out there when ck_args.ck is set: a prefix cache's chunk-boundary
 *    checkpoints (the host emulation fills them; no op asks for them yet).
 * Plain f32 on the CUDA cores (no tensor cores yet), sums in a fixed
 * order within a thread; results agree with the recurrence to float
 * rounding.
 *
 * The kernels are written as phase functions (the code between two
 * barriers, for one thread index) that run on the device and on the host:
 * cuda_chunk_emulate runs them on the CPU, which is how the CPU test suite
 * checks the index arithmetic without a GPU (tests/test_deltanet_chunk.c).
 *
 * Files: this one has the kernels but three, the op and the emulation; the
 * prep kernel on tensor cores is cuda_chunk_prep.cu's, the blocked f32 one
 * (Q36_CUDA_CHUNKPREP=2) cuda_chunk_pb.cu's with its phases in
 * cuda_chunk_pb.h, the default state kernel (k_chunk_state_wide, the
 * split one's products as mma.sync steps) cuda_chunk_wide.cu's; what they
 * share (arguments, loads, the phase functions, the TF32 tile helpers and
 * mma.sync steps) is cuda_chunk_ph.h's. */
#include "cuda.h"
#include "cuda_chunk.h"
#include "cuda_chunk_pb.h"
#include "cuda_chunk_ph.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

extern "C" bool cuda_chunk_enabled(const be_shape *s)
{
    return cuda_fast_path(s, "Q36_CUDA_CHUNKED");
}

/* --------------------------------------------------------------- kernels */

template <int DK>
__global__ void __launch_bounds__(CK_THREADS) k_chunk_prep(ck_args a)
{
    cuda_pdl_enter();
    extern __shared__ float sm[];
    const ck_blk b = { (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z };
    const int tid = threadIdx.x, nt = blockDim.x;
    prep_load<DK>(a, b, tid, nt, sm);
    __syncthreads();
    prep_gram<DK>(a, b, tid, nt, sm);
    __syncthreads();
    prep_solve<DK>(a, b, tid, nt, sm);
}

template <int DK>
__global__ void __launch_bounds__(CK_THREADS) k_chunk_state(ck_args a)
{
    cuda_pdl_enter();
    extern __shared__ float sm[];
    const ck_blk b = { (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z };
    const int tid = threadIdx.x, nt = blockDim.x;
    const int64_t n = a.runs[4 * b.y + 2];
    st_init<DK>(a, b, tid, nt, sm);
    __syncthreads();
    for (int64_t c0 = 0; c0 < n; c0 += CK_C) {
        st_load_w<DK>(a, b, c0, tid, nt, sm);
        __syncthreads();
        st_vprime<DK>(a, b, c0, tid, nt, sm);
        __syncthreads();
        st_load_q<DK>(a, b, c0, tid, nt, sm);
        __syncthreads();
        st_out<DK>(a, b, c0, tid, nt, sm);
        __syncthreads();
        st_load_k<DK>(a, b, c0, tid, nt, sm);
        __syncthreads();
        st_update<DK>(a, b, c0, tid, nt, sm);
        __syncthreads();
    }
    st_fini<DK>(a, b, tid, nt, sm);
}

/* The loads go by cp.async, a phase's copies all in flight at once, and
 * two of a chunk's three overlap products: Q and P land while V' is
 * formed, K while the outputs are. Shared memory: st_sh, then Q's rows
 * (XQ, pitch LX). */
template <int DK> constexpr size_t tc_smem_bytes()
{
    return (st_sh<DK>::floats + (size_t)CK_C * st_sh<DK>::LX) * sizeof(float);
}

template <int DK>
__global__ void __launch_bounds__(CK_THREADS) k_chunk_state_tc(ck_args a)
{
    cuda_pdl_enter();
#ifdef __CUDA_ARCH__
    extern __shared__ __align__(128) float smt[];
    const ck_blk b = { (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z };
    const int tid = threadIdx.x, nt = blockDim.x, w = tid / 32;
    const int64_t n = a.runs[4 * b.y + 2], kcol = (a.Hk + b.x % a.Hk) * DK;
    const st_sh<DK> s(smt);
    float *XQ = smt + st_sh<DK>::floats;
    st_init<DK>(a, b, tid, nt, smt);
    if (n > 0)
        tc_cp_w<DK>(a, b, chunk_of(a.runs, b.y, 0), tid, s);
    cp_commit();
    for (int64_t c0 = 0; c0 < n; c0 += CK_C) {
        const ck_chunk c = chunk_of(a.runs, b.y, c0);
        load_g<DK>(a, c, b.x, tid, nt, s);
        cp_wait<0>();                  /* W and U */
        __syncthreads();
        tc_cp_rows<DK, st_sh<DK>::LX>(XQ, a.qkv, a.ldq, (b.x % a.Hk) * DK, c, tid);
        tc_cp_rows<CK_C, st_sh<DK>::LP>(s.P, a.P + b.x * CK_C, a.Hv * CK_C, 0, c, tid);
        cp_commit();
        tc_vprime<DK>(s, w);
        __syncthreads();               /* W is spent: K into X */
        tc_cp_rows<DK, st_sh<DK>::LX>(s.X, a.qkv, a.ldq, kcol, c, tid);
        cp_commit();
        cp_wait<1>();                  /* Q and P (K may still be in flight) */
        tc_scale_q<DK>(XQ, s, tid);
        __syncthreads();
        tc_out<DK>(s, XQ, w);
        __syncthreads();
        tc_emit<DK>(a, b, c0, tid, s);
        cp_wait<0>();                  /* K */
        __syncthreads();
        tc_update<DK>(a, b, c0, w, s);
        __syncthreads();
        if (c0 + CK_C < n)             /* the next chunk's W and U */
            tc_cp_w<DK>(a, b, chunk_of(a.runs, b.y, c0 + CK_C), tid, s);
        cp_commit();
    }
    cp_wait<0>();
    st_fini<DK>(a, b, tid, nt, smt);
#endif
}

/* ------------------------------- the state and the outputs apart (split) */

/* Q36_CUDA_CHUNKSPLIT (on unless "0"; with the state kernel on tensor
 * cores, dk <= 128, no chunk-boundary states asked): k_chunk_state_tc
 * forms each chunk's outputs inside its loop over the run's chunks, one
 * after another: the Q and P loads and the output product sit on the
 * loop's path, and 4 of its 8 warps wait through both products of V' and
 * O. The first honest 35B-A3B pp4096 profile (bench/results/
 * 2026-12-04-cuda-session21/) had it at 765 µs a layer, 12 µs a chunk.
 * Here the loop keeps only what the next chunk needs:
 *  - k_chunk_state_split, the same blocks: per chunk V' = U - W S (warps
 *    0-3) while warps 4-7 store the state before the chunk (its columns)
 *    to the chunk's slot of Sb; V' to the scratch in U's place; then the
 *    update S <- e^G_last S + K^T diag(dec) V'. W and U of the next chunk
 *    are copied during the update (U into a second buffer), its K during
 *    the next V' (K and W have buffers of their own);
 *  - k_chunk_out, a block per (chunk, value head, run, 64 output
 *    columns), all at once: O = (diag(e^G) Q S + P V') / sqrt(dk) from
 *    the chunk's slot and V', each warp 16 x 16 tiles of the block's.
 * Each product is k_chunk_state_tc's on the same operands in the same
 * order (TF32 WMMA, f32 sums), so the outputs and states are its bits.
 * Sb: a state (Hv x dk x dk, element [j dk + i] as S) for each slot
 * r0 / C + s of a chunk starting at batch row r0 of run s (distinct for
 * distinct chunks: (T + C - 1) / C + n_seq slots). */
template <int DK> struct sp_sh {
    static constexpr int LS = CK_BV + 4, LX = DK + 4;
    static constexpr size_t oS = 0, oW = oS + (size_t)DK * LS, oK = oW + (size_t)CK_C * LX,
                            oV = oK + (size_t)CK_C * LX, oG = oV + 2 * CK_C * CK_BV,
                            oD = oG + CK_C, floats = oD + CK_C;
    static_assert(LS == st_sh<DK>::LS && LX == st_sh<DK>::LX && oS == st_sh<DK>::oS,
                  "st_init/st_fini's S, tc_vprime_at's and tc_update_at's pitches");
};
static_assert(sp_sh<32>::oW % 8 == 0 && sp_sh<32>::oK % 8 == 0 && sp_sh<32>::oV % 8 == 0,
              "32-byte aligned regions");

/* k_chunk_out's blocks take OC = min(dk, 64) output columns each (dk / OC
 * blocks a chunk and head: two blocks an SM at dk = 128, where one block
 * for all 128 columns needed 153 KB and ran alone). Its shared memory: Q
 * rows (then O), the slot's state rows j of the block's columns (dk i
 * each: B column-major), P, the block's columns of V' (pitch OC + 8: the
 * mma form's fragment reads down a column on 32 banks) */
template <int DK> struct so_sh {
    static constexpr int OC = DK < 64 ? DK : 64, NC = DK / OC;
    static constexpr int LX = DK + 4, LT = DK + 4, LP = CK_C + 4, LV = OC + 8;
    static constexpr size_t oQ = 0, oS = oQ + (size_t)CK_C * LX, oP = oS + (size_t)OC * LT,
                            oV = oP + (size_t)CK_C * LP, oG = oV + (size_t)CK_C * LV,
                            floats = oG + CK_C;
};
static_assert(so_sh<32>::oS % 8 == 0 && so_sh<32>::oP % 8 == 0 && so_sh<32>::oV % 8 == 0 &&
              so_sh<128>::oV % 8 == 0 && so_sh<128>::oG % 8 == 0, "32-byte aligned regions");

template <int DK>
__global__ void __launch_bounds__(CK_THREADS) k_chunk_state_split(ck_args a)
{
    cuda_pdl_enter();
#ifdef __CUDA_ARCH__
    using L = sp_sh<DK>;
    extern __shared__ __align__(128) float sms[];
    const ck_blk b = { (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z };
    const int tid = threadIdx.x, w = tid / 32;
    const int64_t n = a.runs[4 * b.y + 2], h = b.x, kcol = (a.Hk + h % a.Hk) * DK;
    const int64_t j0 = (int64_t)b.z * CK_BV;
    float *S = sms + L::oS, *XW = sms + L::oW, *XK = sms + L::oK, *G = sms + L::oG,
          *dec = sms + L::oD;
    st_init<DK>(a, b, tid, CK_THREADS, sms);
    if (n > 0) {
        const ck_chunk c = chunk_of(a.runs, b.y, 0);
        tc_cp_rows<DK, L::LX>(XW, a.W, a.Hv * DK, h * DK, c, tid);
        tc_cp_rows<CK_BV, CK_BV>(sms + L::oV, a.U, a.Hv * DK, h * DK + j0, c, tid);
    }
    cp_commit();
    if (n > 0)
        tc_cp_rows<DK, L::LX>(XK, a.qkv, a.ldq, kcol, chunk_of(a.runs, b.y, 0), tid);
    cp_commit();
    /* thread t < CK_C: G of row t of the chunk to come (0 past its end),
     * loaded a chunk ahead: a load at the loop's top waits on memory */
    float gn = tid < CK_C ? chunk_g(a, b.y, 0, h, tid) : 0.0f;
    for (int64_t c0 = 0, it = 0; c0 < n; c0 += CK_C, it++) {
        const ck_chunk c = chunk_of(a.runs, b.y, c0);
        float *V = sms + L::oV + (it & 1) * CK_C * CK_BV;
        if (tid < CK_C) {
            G[tid] = gn;
            gn = chunk_g(a, b.y, c0 + CK_C, h, tid);
        }
        cp_wait<1>();                  /* W and U (K may still be in flight) */
        __syncthreads();
        if (w < CK_C / 16) {
            tc_vprime_at<DK>(V, XW, S, w);
        } else {                       /* the state before the chunk, this block's columns */
            const int t = tid - 32 * (CK_C / 16);
            if (t < CK_C)              /* load_g's decays, before the V' out below */
                dec[t] = t < c.nc ? expf(G[c.nc - 1] - G[t]) : 0.0f;
            sb_store<DK, CK_BV, L::LS>(sb_slot(a, c, b.y, h, DK), S, j0, t,
                                       CK_THREADS - 32 * (CK_C / 16));
        }
        __syncthreads();               /* W is spent, V' formed */
        if (c0 + CK_C < n) {
            const ck_chunk cn = chunk_of(a.runs, b.y, c0 + CK_C);
            tc_cp_rows<DK, L::LX>(XW, a.W, a.Hv * DK, h * DK, cn, tid);
            tc_cp_rows<CK_BV, CK_BV>(sms + L::oV + ((it + 1) & 1) * CK_C * CK_BV, a.U, a.Hv * DK,
                                     h * DK + j0, cn, tid);
        }
        cp_commit();
        vp_out<DK, CK_BV, CK_BV>(a, c, h, j0, V, dec, tid, CK_THREADS);
        cp_wait<1>();                  /* K (the next W and U may still be in flight) */
        __syncthreads();
        tc_update_at<DK>(S, XK, V, expf(G[c.nc - 1]), w);
        __syncthreads();               /* K is spent */
        if (c0 + CK_C < n)
            tc_cp_rows<DK, L::LX>(XK, a.qkv, a.ldq, kcol, chunk_of(a.runs, b.y, c0 + CK_C), tid);
        cp_commit();
    }
    cp_wait<0>();
    st_fini<DK>(a, b, tid, CK_THREADS, sms);
#endif
}

/* XO (Q36_CUDA_CHUNKOUTX=1, off by default: written in session 22 after
 * the device time was spent, not yet run on a GPU): the grid in another
 * order, the blocks' work unchanged (the same bits). By default x is the
 * chunk, y the value head, z the run and the block of columns (slowest):
 * the two column blocks of a chunk and head (dk = 128) run ~2,000 blocks
 * apart and each reads the chunk's Q and P rows from memory, as do the
 * value heads that share a key head's Q. With XO, x is the chunk and the
 * column block (fastest), y the value heads in key-head order (those
 * sharing one key head next to each other, when Hv is a multiple of Hk),
 * z the run: blocks that read the same rows run together and find them
 * in L2. An estimate from its shapes, not a measurement: a 35B-A3B pp4096
 * layer's k_chunk_out reads ~335 MB (~67 MB of it those rows a second
 * time) and writes ~67 MB in 227 us (6.8 ms over 30 layers in run-c5626eb's
 * profile, bench/results/2026-12-04-cuda-session22/): ~1.8 TB/s. */
template <int DK, bool XO, bool MMA>
__global__ void __launch_bounds__(CK_THREADS) k_chunk_out(ck_args a)
{
    cuda_pdl_enter();
#ifdef __CUDA_ARCH__
    using L = so_sh<DK>;
    constexpr int OC = L::OC;
    constexpr int PER = (CK_C / 16) * (OC / 16) / (CK_THREADS / 32);   /* tiles a warp */
    static_assert(PER >= 1 && PER * (CK_THREADS / 32) == (CK_C / 16) * (OC / 16),
                  "whole tiles a warp");
    extern __shared__ __align__(128) float smo[];
    const int run = XO ? (int)blockIdx.z : (int)blockIdx.z / L::NC;
    const int oc0 = OC * ((int)(XO ? blockIdx.x : blockIdx.z) % L::NC);
    const int64_t cx = XO ? blockIdx.x / L::NC : blockIdx.x;
    const ck_chunk c = chunk_of(a.runs, run, cx * CK_C);
    if (!c.nc)
        return;
    const int tid = threadIdx.x, w = tid / 32;
    const int64_t R = a.Hv % a.Hk ? 1 : a.Hv / a.Hk;    /* value heads a key head */
    const int64_t h = XO && R > 1 ? (blockIdx.y % R) * a.Hk + blockIdx.y / R : blockIdx.y;
    float *Q = smo + L::oQ, *St = smo + L::oS, *P = smo + L::oP, *V = smo + L::oV, *G = smo + L::oG;
    tc_cp_rows<DK, L::LX>(Q, a.qkv, a.ldq, (h % a.Hk) * DK, c, tid);
    const float *src = sb_slot(a, c, run, h, DK) + (int64_t)oc0 * DK;
    for (int e = tid; e < OC * (DK / 4); e += CK_THREADS) {
        const int j = e / (DK / 4), i = 4 * (e % (DK / 4));
        cp16(St + j * L::LT + i, src + (int64_t)j * DK + i, true);
    }
    tc_cp_rows<CK_C, L::LP>(P, a.P + h * CK_C, a.Hv * CK_C, 0, c, tid);
    tc_cp_rows<OC, L::LV>(V, a.U, a.Hv * DK, h * DK + oc0, c, tid);
    cp_commit();
    for (int t = tid; t < CK_C; t += CK_THREADS)
        G[t] = t < c.nc ? a.G[(c.r0 + t) * a.Hv + h] : 0.0f;
    cp_wait<0>();
    __syncthreads();
    tc_scale_q_at<DK>(Q, G, tid);
    __syncthreads();
    if constexpr (MMA) {   /* ck_mma steps: warp w row tile w % 4, column tiles from (w / 4) PER */
        const int m = w % 4, j0 = 16 * (w / 4) * PER, lane = tid & 31;
        float acc[2 * PER][4] = {};
        /* B = S: element (i, j) at St[j LT + i] */
        ck_mma<DK / 8, 2 * PER, false>(acc, Q + 16 * m * L::LX, L::LX, 1, St + j0 * L::LT, 1,
                                       L::LT, lane);
        ck_mma<CK_C / 8, 2 * PER, false>(acc, P + 16 * m * L::LP, L::LP, 1, V + j0, L::LV, 1,
                                         lane);
        __syncthreads();               /* every warp has read Q */
        ck_st<2 * PER>(acc, Q + 16 * m * L::LX + j0, L::LX, 1.0f / sqrtf((float)DK), lane);
    } else {
        tf_acc acc[PER];
        #pragma unroll
        for (int q = 0; q < PER; q++) {    /* tc_out's, tile (m, jt) of the block's columns */
            const int n = w + q * (CK_THREADS / 32), m = n % (CK_C / 16), jt = n / (CK_C / 16);
            wm::fill_fragment(acc[q], 0.0f);
            tf_mma<DK / 8, false, true>(acc[q], Q + 16 * m * L::LX, L::LX, St + 16 * jt * L::LT,
                                        L::LT);
            tf_mma<CK_C / 8, false>(acc[q], P + 16 * m * L::LP, L::LP, V + 16 * jt, L::LV);
            tf_scale(acc[q], 1.0f / sqrtf((float)DK));
        }
        __syncthreads();                   /* every warp has read Q */
        #pragma unroll
        for (int q = 0; q < PER; q++) {
            const int n = w + q * (CK_THREADS / 32), m = n % (CK_C / 16), jt = n / (CK_C / 16);
            wm::store_matrix_sync(Q + 16 * m * L::LX + 16 * jt, acc[q], L::LX,
                                  wm::mem_row_major);
        }
    }
    __syncthreads();
    for (int e = tid; e < c.nc * OC; e += CK_THREADS) {
        const int t = e / OC, i = e % OC;
        a.out[(c.r0 + t) * a.ldo + h * DK + oc0 + i] = Q[t * L::LX + i];
    }
#endif
}

/* ------------------------------------------------------------ the op */

/* Floats of scratch for T rows: U, W (dk each), P (C), G (1) per value head. */
static size_t scratch_for(int64_t T, int64_t Hv, int64_t dk)
{
    return (size_t)T * (size_t)Hv * (size_t)(2 * dk + CK_C + 1);
}

/* the split kernels' Sb (16-byte aligned after the rest): a state for
 * each chunk slot of T rows of n_seq runs */
static size_t split_floats(int64_t T, int64_t n_seq, int64_t Hv, int64_t dk)
{
    return 4 + (size_t)((T + CK_C - 1) / CK_C + n_seq) * (size_t)Hv * (size_t)(dk * dk);
}

/* Q36_CUDA_CHUNKSPLIT (on unless "0"), with the tensor-core state kernel:
 * for the memory plan (no context; shape_floats adds dk <= 128) */
static bool split_on(void)
{
    return !cuda_env_is("Q36_CUDA_CHUNKTC", "0") && cuda_env_on("Q36_CUDA_CHUNKSPLIT");
}

/* the scratch's regions for T rows; with split, Sb after them (else NULL) */
static void args_scratch(ck_args *a, float *base, int64_t T, int64_t Hv, int64_t dk, bool split)
{
    a->U = base;
    a->W = a->U + T * Hv * dk;
    a->P = a->W + T * Hv * dk;
    a->G = a->P + T * Hv * CK_C;
    a->Sb = split ? (float *)(((uintptr_t)(a->G + T * Hv) + 15) & ~(uintptr_t)15) : NULL;
}

/* the scratch for batches of shape s, with the split kernels' states or
 * without (0 when the shape has no delta rule or no prompt rows) */
static size_t shape_floats(const be_shape *s, bool split)
{
    if (!s->ssm_v_heads || s->n_rows < 2)
        return 0;
    const int64_t n_seq = s->n_seq > 0 ? s->n_seq : 1;
    return scratch_for(s->n_rows, s->ssm_v_heads, s->ssm_dim) +
           (split && s->ssm_dim <= 128 ? split_floats(s->n_rows, n_seq, s->ssm_v_heads, s->ssm_dim)
                                       : 0);
}

size_t cuda_chunk_scratch(const be_shape *s)
{
    return cuda_chunk_enabled(s) ? shape_floats(s, split_on()) : 0;
}

int cuda_chunk_reserve(be_ctx *be, const be_shape *s, q36_err *err)
{
    cuda_ctx *c = cuda_ctx_of(be);
    /* the context's switches, not the environment's now */
    const size_t need = c->chunked ? shape_floats(s, c->chunk_split) : 0;
    if (need <= c->chunk_floats)
        return 0;
    float *p = NULL;
    if (cudaMalloc(&p, need * sizeof(float)) != cudaSuccess) {
        cudaGetLastError();
        size_t fr = 0, tot = 0;
        cudaMemGetInfo(&fr, &tot);
        return q36_err_set(err, Q36_E_NOMEM, "cuda backend: cannot reserve %.1f MiB for the "
                           "chunked delta rule (fast mode: %lld rows x %lld value heads) "
                           "on %s: %.1f MiB free of %.1f MiB", need * 4.0 / 1048576.0,
                           (long long)s->n_rows, (long long)s->ssm_v_heads, c->dev_name,
                           fr / 1048576.0, tot / 1048576.0);
    }
    cudaFree(c->chunk);
    c->chunk = p;
    c->chunk_floats = need;
    return 0;
}

/* The split state kernel (cuda.h: chunk_bv, Q36_CUDA_CHUNKBV): 0 for
 * k_chunk_state_split (WMMA, 16 value columns a block; Q36_CUDA_CHUNKBV=0),
 * else k_chunk_state_wide's columns a block (cuda_chunk_wide.cu): 16 unless
 * Q36_CUDA_CHUNKBV=32. On an H100 pp4096 with 32 columns measured 2.9% (35B-A3B,
 * 256 blocks of 16 against 128 of 32) and 7.1% (0.8B, 128 against 64)
 * slower than with 16 (bench/results/2026-12-06-cuda-session38/, run4).
 * dk 256 takes split. */
static int state_bv(const cuda_ctx *c, int dk)
{
    return dk % 32 || dk > 128 ? 0 : c->chunk_bv;
}

template <int DK> static bool launch(be_ctx *be, const ck_args &a, int n_seq, int64_t max_chunks)
{
    cuda_ctx *c = cuda_ctx_of(be);
    cudaStream_t st = c->stream;
    /* the tensor-core kernel's 16-byte copies need 16-byte rows of qkv */
    const bool tc = c->chunk_tc && !a.ck && a.ldq % 4 == 0 && (uintptr_t)a.qkv % 16 == 0;
    const bool ptc = tc && c->chunk_prep_tc, pb = tc && c->chunk_prep_pb;
    /* the split kernels when their scratch was given and their shared
     * memory is there (DK <= 128) */
    const size_t bo = so_sh<DK>::floats * sizeof(float);
    const bool xo = c->chunk_out_x;
    void (*out)(ck_args) = c->chunk_out_mma ? (xo ? k_chunk_out<DK, true, true>
                                                   : k_chunk_out<DK, false, true>)
                                            : (xo ? k_chunk_out<DK, true, false>
                                                  : k_chunk_out<DK, false, false>);
    const bool split = tc && a.Sb && DK <= 128 && cuda_smem_optin(be, (const void *)out, bo);
    void (*state)(ck_args) = split ? k_chunk_state_split<DK> : tc ? k_chunk_state_tc<DK> : k_chunk_state<DK>;
    const size_t bp = prep_sh<DK>::floats * sizeof(float),
                 bs = split ? sp_sh<DK>::floats * sizeof(float)
                    : tc    ? tc_smem_bytes<DK>() : st_sh<DK>::floats * sizeof(float);
    if (!cuda_smem_optin(be, (const void *)state, bs) ||
        (!ptc && !pb && !cuda_smem_optin(be, (const void *)k_chunk_prep<DK>, bp)))
        return false;
    const dim3 per_chunk((unsigned)max_chunks, (unsigned)a.Hv, (unsigned)n_seq);
    if (pb) {
        if (!ck_launch_prep_pb<DK>(be, a, per_chunk))
            return false;
    } else if (ptc) {
        if (!ck_launch_prep_tc<DK>(be, a, per_chunk, c->chunk_prep_mma))
            return false;
    } else {
        cuda_launch(k_chunk_prep<DK>, per_chunk, CK_THREADS, bp, st, a);
        if (!CUDA_LAUNCHED(be, "k_chunk_prep"))
            return false;
    }
    const int bv = split ? state_bv(c, DK) : 0;
    if (bv) {
        if (!ck_launch_state_wide<DK <= 128 ? DK : 128>(be, a, n_seq, bv))
            return false;
    } else {
        cuda_launch(state, dim3((unsigned)a.Hv, (unsigned)n_seq, (unsigned)(DK / CK_BV)),
                    CK_THREADS, bs, st, a);
        if (!CUDA_LAUNCHED(be, split ? "k_chunk_state_split"
                               : tc  ? "k_chunk_state_tc" : "k_chunk_state"))
            return false;
    }
    if (!split)
        return true;
    constexpr int NC = so_sh<DK>::NC;
    const dim3 grid = xo ? dim3((unsigned)(max_chunks * NC), (unsigned)a.Hv, (unsigned)n_seq)
                         : dim3((unsigned)max_chunks, (unsigned)a.Hv, (unsigned)(n_seq * NC));
    cuda_launch(out, grid, CK_THREADS, bo, st, a);
    return CUDA_LAUNCHED(be, c->chunk_out_mma ? "k_chunk_out_mma" : "k_chunk_out");
}

void cuda_deltanet_chunk(be_ctx *be, const be_tensor *qkv, const be_tensor *g,
                         const be_tensor *beta, be_tensor *S, int64_t n_k_heads, int64_t n_v_heads,
                         int64_t dk, const be_batch *b, be_tensor *out)
{
    cuda_ctx *c = cuda_ctx_of(be);
    assert(qkv->cols == (2 * n_k_heads + n_v_heads) * dk && out->cols == n_v_heads * dk);
    assert(g->cols == n_v_heads && beta->cols == n_v_heads && S->cols == dk * dk);
    const int64_t T = qkv->rows;
    if (!T || !b->n_seq)
        return;
    const size_t need = scratch_for(T, n_v_heads, dk);
    if (need > c->chunk_floats) {
        be_fail(be, Q36_E_NOMEM, "cuda chunked delta rule: %lld rows x %lld value heads need %zu "
                "floats of scratch, %zu reserved", (long long)T, (long long)n_v_heads, need,
                c->chunk_floats);
        return;
    }
    int64_t max_chunks = 1;
    for (int s = 0; s < b->n_seq; s++) {
        const int64_t nch = (b->seq[s].n_rows + CK_C - 1) / CK_C;
        max_chunks = nch > max_chunks ? nch : max_chunks;
    }
    ck_args a = { (const float *)qkv->data, (const float *)g->data, (const float *)beta->data,
                  qkv->ld, g->ld, beta->ld, (float *)S->data, S->ld, (float *)out->data, out->ld,
                  (const int32_t *)b->runs->data, n_k_heads, n_v_heads, NULL, NULL, NULL, NULL,
                  NULL, 0, NULL };
    /* the split kernels' states, when the scratch holds them */
    args_scratch(&a, c->chunk, T, n_v_heads, dk,
                 c->chunk_split && need + split_floats(T, b->n_seq, n_v_heads, dk) <= c->chunk_floats);
    switch (dk) {
    case 32: launch<32>(be, a, b->n_seq, max_chunks); break;
    case 64: launch<64>(be, a, b->n_seq, max_chunks); break;
    case 128: launch<128>(be, a, b->n_seq, max_chunks); break;
    case 256: launch<256>(be, a, b->n_seq, max_chunks); break;
    default:
        be_fail(be, Q36_E_UNSUP, "cuda chunked delta rule: state dim %lld (32, 64, 128 or 256)",
                (long long)dk);
    }
}

/* ------------------------------------------------------- host emulation */

/* k_chunk_prep_pb's block b, phase by phase (cuda_chunk_pb.cu's order) */
template <int DK> static void emulate_pb(const ck_args &a, ck_blk b, float *sm)
{
    using L = pb_sh<DK>;
    const int nt = CK_THREADS;
    for (int t = 0; t < nt; t++)
        pb_load<DK>(a, b, t, nt, sm);
    for (int t = 0; t < nt; t++)
        pb_gsum<DK>(a, b, t, nt, sm);
    for (int t = 0; t < nt; t++)
        pb_gram<DK>(a, b, t, nt, sm);
    for (int t = 0; t < nt; t++)
        pb_inv_diag<DK>(a, b, t, nt, sm);
    for (int d = 1; d < 4; d++) {
        for (int t = 0; t < nt; t++)
            pb_inv_r<DK>(a, b, t, nt, sm, d);
        for (int t = 0; t < nt; t++)
            pb_inv_t<DK>(a, b, t, nt, sm, d);
    }
    for (int t = 0; t < nt; t++)
        pb_scale<DK>(a, b, t, nt, sm);
    for (int t = 0; t < nt; t++)
        pb_load_v<DK>(a, b, t, nt, sm);
    for (int t = 0; t < nt; t++)
        pb_solve<DK>(a, b, t, nt, sm, L::oT, L::oQ, a.W);
    for (int t = 0; t < nt; t++)
        pb_solve<DK>(a, b, t, nt, sm, L::oM, L::oK, a.U);
}

template <int DK>
static void emulate(const ck_args &a, int n_seq, int64_t max_chunks, float *sm, size_t sm_floats,
                    bool pb)
{
    const int nt = CK_THREADS;
    for (int z = 0; z < n_seq; z++)
        for (int y = 0; y < a.Hv; y++)
            for (int x = 0; x < max_chunks; x++) {
                const ck_blk b = { x, y, z };
                for (size_t i = 0; i < sm_floats; i++)
                    sm[i] = NAN;
                if (pb) {
                    emulate_pb<DK>(a, b, sm);
                    continue;
                }
                for (int t = 0; t < nt; t++)
                    prep_load<DK>(a, b, t, nt, sm);
                for (int t = 0; t < nt; t++)
                    prep_gram<DK>(a, b, t, nt, sm);
                for (int t = 0; t < nt; t++)
                    prep_solve<DK>(a, b, t, nt, sm);
            }
    for (int z = 0; z < DK / CK_BV; z++)
        for (int y = 0; y < n_seq; y++)
            for (int x = 0; x < a.Hv; x++) {
                const ck_blk b = { x, y, z };
                for (size_t i = 0; i < sm_floats; i++)
                    sm[i] = NAN;
                for (int t = 0; t < nt; t++)
                    st_init<DK>(a, b, t, nt, sm);
                const int64_t n = a.runs[4 * y + 2];
                for (int64_t c0 = 0; c0 < n; c0 += CK_C) {
                    for (int t = 0; t < nt; t++)
                        st_load_w<DK>(a, b, c0, t, nt, sm);
                    for (int t = 0; t < nt; t++)
                        st_vprime<DK>(a, b, c0, t, nt, sm);
                    for (int t = 0; t < nt; t++)
                        st_load_q<DK>(a, b, c0, t, nt, sm);
                    for (int t = 0; t < nt; t++)
                        st_out<DK>(a, b, c0, t, nt, sm);
                    for (int t = 0; t < nt; t++)
                        st_load_k<DK>(a, b, c0, t, nt, sm);
                    for (int t = 0; t < nt; t++)
                        st_update<DK>(a, b, c0, t, nt, sm);
                }
                for (int t = 0; t < nt; t++)
                    st_fini<DK>(a, b, t, nt, sm);
            }
}

extern "C" int cuda_chunk_emulate(const float *qkv, int64_t ldq, const float *g, int64_t ldg,
                                  const float *beta, int64_t ldb, float *S, int64_t ldS,
                                  int64_t n_k_heads, int64_t n_v_heads, int64_t dk,
                                  const int32_t *runs, int n_seq, int64_t T, float *out,
                                  int64_t ldo, float *ckpt, int prep_pb)
{
    if (dk != 32 && dk != 64 && dk != 128 && dk != 256)
        return -1;
    int64_t max_chunks = 1;
    for (int s = 0; s < n_seq; s++) {
        const int64_t nch = (runs[4 * s + 2] + CK_C - 1) / CK_C;
        max_chunks = nch > max_chunks ? nch : max_chunks;
    }
    size_t sm_floats = prep_sh<256>::floats > st_sh<256>::floats ? prep_sh<256>::floats
                                                                  : st_sh<256>::floats;
    sm_floats = pb_sh<256>::floats > sm_floats ? pb_sh<256>::floats : sm_floats;
    float *scratch = (float *)malloc(sizeof(float) * (scratch_for(T, n_v_heads, dk) + 1));
    float *sm = (float *)malloc(sizeof(float) * sm_floats);
    if (!scratch || !sm) {
        free(scratch);
        free(sm);
        return -1;
    }
    ck_args a = { qkv, g, beta, ldq, ldg, ldb, S, ldS, out, ldo, runs, n_k_heads, n_v_heads,
                  NULL, NULL, NULL, NULL, ckpt, 0, NULL };
    args_scratch(&a, scratch, T, n_v_heads, dk, false);   /* the phases are k_chunk_state's */
    a.ck_chunks = max_chunks;
    switch (dk) {
    case 32: emulate<32>(a, n_seq, max_chunks, sm, sm_floats, prep_pb != 0); break;
    case 64: emulate<64>(a, n_seq, max_chunks, sm, sm_floats, prep_pb != 0); break;
    case 128: emulate<128>(a, n_seq, max_chunks, sm, sm_floats, prep_pb != 0); break;
    default: emulate<256>(a, n_seq, max_chunks, sm, sm_floats, prep_pb != 0); break;
    }
    free(scratch);
    free(sm);
    return 0;
}
