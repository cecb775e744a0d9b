/* cuda_chunk_prep.cu: the chunked delta rule's prep kernel on tensor cores
 * (k_chunk_prep_tc; cuda_chunk.cu runs it unless Q36_CUDA_CHUNKPREP=0 or
 * the f32 state kernel runs). What it shares with the other kernels is in
 * cuda_chunk_ph.h. */
#include "cuda.h"
#include "cuda_chunk_ph.h"

/* ------------------------------------------------- prep on tensor cores */

/* k_chunk_prep_tc (with the state kernel on tensor cores, when
 * Q36_CUDA_CHUNKPREP=0 turns it off): k_chunk_prep's results
 * with its two products on tensor cores in TF32, and W and U as products
 * too. k_chunk_prep solves
 * (I + A) X = B by forward substitution, one thread a column of W and U
 * (2 DK columns of 64 dependent steps, two shared-memory reads a
 * multiply-add): the longest part of a prompt pass's delta rule after the
 * state kernel. Here:
 *  1. the chunk's K and Q rows (cp.async, zero past its end), g and beta;
 *  2. the Gram tiles K K^T and Q K^T (the 10 of 16 16 x 16 tiles on or
 *     below the diagonal, each), while one thread forms G's prefix sums
 *     in token order (k_chunk_prep's bits);
 *  3. A and P from them, P and G to the scratch, beta e^G in g's place;
 *     V's rows copied into Q's place;
 *  4. the right-hand sides beta e^G K in K's place; T = (I + A)^-1 (unit
 *     lower triangular) by blocks of 16 (pt_inverse; before session 22
 *     by forward substitution over the whole chunk, four lanes a column,
 *     63 dependent steps); V's rows times beta;
 *  5. W = T (beta e^G K) and U = T (beta V) on tensor cores (T's zeros
 *     above the diagonal skipped), through shared memory to the scratch.
 * Each product is three TF32 products (tf_mma3: about f32's precision;
 * one TF32 product a tile, as in the state kernel, was 6504c6e's form,
 * measured below); sums in f32. Shared memory (floats): K and Q/V rows
 * (pitch DK + 4), K K^T then A (pitch C + 4), Q K^T then T, G, beta and
 * g: 103 KB at DK = 128, two blocks an SM.
 * Measured on the H200 (bench/results/2026-12-03-cuda-session19/,
 * run-6504c6e): 12.3 ms against 20.8 for the 35B-A3B's pp4096, the pass
 * +4.8%, and its op cases well inside their bound. But with it the
 * dense Q4_K synthetic file's fast-mode prompt logits (int8 decode
 * products on) moved 6.4 std from the f32 twin (tolerance 5.7; 0.12
 * std with k_chunk_prep; 0.098 against 0.050 with them off). The likely
 * cause, not yet checked: T formed explicitly and applied in TF32 loses
 * what the forward substitution keeps when T's entries are large (keys
 * alike, beta near 1). Since then the products are 3xTF32: with them the
 * same file is 0.12 std from its twin, and the whole GPU script and the
 * chunk op cases pass with the kernel on (record
 * bench/results/2026-12-04-cuda-session20/); on by default since. */
template <int DK> struct pt_sh {
    static constexpr int LX = DK + 4, LM = CK_C + 4;
    static constexpr size_t oK = 0, oQ = oK + (size_t)CK_C * LX, oM = oQ + (size_t)CK_C * LX,
                            oT = oM + (size_t)CK_C * LM, oG = oT + (size_t)CK_C * LM,
                            oB = oG + CK_C, oR = oB + CK_C, floats = oR + CK_C;
};
static_assert(pt_sh<32>::oM % 8 == 0 && pt_sh<32>::oT % 8 == 0, "32-byte aligned tiles");

#ifdef __CUDA_ARCH__

/* acc += a b to about f32's precision from three TF32 products (3xTF32):
 * each operand split into its TF32 rounding and the TF32 rounding of the
 * rest, acc += a_hi b_lo + a_lo b_hi + a_hi b_hi (a_lo b_lo dropped, the
 * small terms first). a and b as loaded, unrounded. */
template <class FA, class FB> __device__ __forceinline__ void tf_mma3(tf_acc &acc, const FA &a, const FB &b)
{
    FA ah = a, al = a;
    FB bh = b, bl = b;
    #pragma unroll
    for (int i = 0; i < a.num_elements; i++) {
        ah.x[i] = wm::__float_to_tf32(a.x[i]);
        al.x[i] = wm::__float_to_tf32(a.x[i] - ah.x[i]);
    }
    #pragma unroll
    for (int i = 0; i < b.num_elements; i++) {
        bh.x[i] = wm::__float_to_tf32(b.x[i]);
        bl.x[i] = wm::__float_to_tf32(b.x[i] - bh.x[i]);
    }
    wm::mma_sync(acc, ah, bl, acc);
    wm::mma_sync(acc, al, bh, acc);
    wm::mma_sync(acc, ah, bh, acc);
}

template <int DK> __device__ void pt_gram(const float *X, const float *K, float *M, int w)
{
    using L = pt_sh<DK>;
    for (int n = w; n < 10; n += CK_THREADS / 32 / 2) {
        int r, c;
        ck_tile(n, &r, &c);
        tf_acc acc;
        wm::fill_fragment(acc, 0.0f);
        #pragma unroll 4
        for (int k = 0; k < DK / 8; k++) {
            wm::fragment<wm::matrix_a, 16, 16, 8, wm::precision::tf32, wm::row_major> fa;
            wm::fragment<wm::matrix_b, 16, 16, 8, wm::precision::tf32, wm::col_major> fb;
            wm::load_matrix_sync(fa, X + 16 * r * L::LX + 8 * k, L::LX);
            wm::load_matrix_sync(fb, K + 16 * c * L::LX + 8 * k, L::LX);
            tf_mma3(acc, fa, fb);
        }
        wm::store_matrix_sync(M + 16 * r * L::LM + 16 * c, acc, L::LM, wm::mem_row_major);
    }
}

/* Phase 5 for one right-hand side B (rows of pitch LX, replaced by T B) */
template <int DK> __device__ void pt_solve(const float *T, float *B, int w)
{
    using L = pt_sh<DK>;
    constexpr int NT = 4 * (DK / 16), PER = NT / (CK_THREADS / 32);
    static_assert(NT % (CK_THREADS / 32) == 0, "whole tiles a warp");
    tf_acc acc[PER];
    #pragma unroll
    for (int q = 0; q < PER; q++) {
        const int n = w + q * (CK_THREADS / 32), r = n % 4, c = n / 4;
        wm::fill_fragment(acc[q], 0.0f);
        for (int k = 0; k < 2 * (r + 1); k++) {
            wm::fragment<wm::matrix_a, 16, 16, 8, wm::precision::tf32, wm::row_major> fa;
            wm::fragment<wm::matrix_b, 16, 16, 8, wm::precision::tf32, wm::row_major> fb;
            wm::load_matrix_sync(fa, T + 16 * r * L::LM + 8 * k, L::LM);
            wm::load_matrix_sync(fb, B + 8 * k * L::LX + 16 * c, L::LX);
            tf_mma3(acc[q], fa, fb);
        }
    }
    __syncthreads();                   /* every warp has read B */
    #pragma unroll
    for (int q = 0; q < PER; q++) {
        const int n = w + q * (CK_THREADS / 32), r = n % 4, c = n / 4;
        wm::store_matrix_sync(B + 16 * r * L::LX + 16 * c, acc[q], L::LX, wm::mem_row_major);
    }
}

/* Phases 2 and 5 as ck_mma steps (MMA, the default; Q36_CUDA_CHUNKPREP=1
 * takes pt_gram and pt_solve): the same 3xTF32 products on the same
 * operands, their fragments read by index (cuda_chunk_ph.h), in another
 * order of the hardware's steps: the same values to about f32's rounding,
 * not pt_gram's and pt_solve's bits. On an H100 the kernel 14.3 -> 9.8 ms
 * of a 35B-A3B pp4096 pass (bench/results/2026-12-06-cuda-session38/). */
template <int DK> __device__ void pt_gram_mma(const float *X, const float *K, float *M, int w,
                                             int lane)
{
    using L = pt_sh<DK>;
    for (int n = w; n < 10; n += CK_THREADS / 32 / 2) {
        int r, c;
        ck_tile(n, &r, &c);
        float acc[2][4] = {};
        /* B's element (k, n) = K[16 c + n][k] */
        ck_mma<DK / 8, 2, true>(acc, X + 16 * r * L::LX, L::LX, 1, K + 16 * c * L::LX, 1, L::LX,
                                lane);
        ck_st<2>(acc, M + 16 * r * L::LM + 16 * c, L::LM, 1.0f, lane);
    }
}

/* B <- T B, warp w: row tile r = w % 4, its PER column tiles from
 * (w / 4) PER, over T's columns up to the diagonal (2 (r + 1) steps of 8) */
template <int DK> __device__ void pt_solve_mma(const float *T, float *B, int w, int lane)
{
    using L = pt_sh<DK>;
    constexpr int PER = 4 * (DK / 16) / (CK_THREADS / 32);
    static_assert(PER * (CK_THREADS / 32) == 4 * (DK / 16) && CK_THREADS / 32 == 8,
                  "whole column tiles a warp, two warps a row tile");
    const int r = w % 4, c0 = (w / 4) * PER;
    const float *a = T + 16 * r * L::LM, *b = B + 16 * c0;
    float acc[2 * PER][4] = {};
    switch (r) {
    case 0: ck_mma<2, 2 * PER, true>(acc, a, L::LM, 1, b, L::LX, 1, lane); break;
    case 1: ck_mma<4, 2 * PER, true>(acc, a, L::LM, 1, b, L::LX, 1, lane); break;
    case 2: ck_mma<6, 2 * PER, true>(acc, a, L::LM, 1, b, L::LX, 1, lane); break;
    default: ck_mma<8, 2 * PER, true>(acc, a, L::LM, 1, b, L::LX, 1, lane); break;
    }
    __syncthreads();                   /* every warp has read B */
    ck_st<2 * PER>(acc, B + 16 * r * L::LX + 16 * c0, L::LX, 1.0f, lane);
}

/* Phase 4: T = (I + A)^-1, A strictly lower at M, by blocks of 16 rows
 * and columns (T_ij for block row i, block column j):
 *  a. the four diagonal blocks T_ii = (I + A_ii)^-1 at once, four lanes a
 *     column: row r of column j is -sum_{j <= k < r} A[r][k] T[k][j],
 *     rows in order (15 dependent steps, not 63 as for the whole chunk);
 *  b. the blocks below them by their distance d from the diagonal (1, 2,
 *     3; those of one distance at once): R = sum_{j <= k < i} A_ik T_kj,
 *     every T_kj on its right already known, then T_ij = -T_ii R. R goes
 *     to block (j, i), above the diagonal, which no later phase reads
 *     (pt_solve reads the blocks on and below it).
 * T's entries are those of the forward substitution with the sums in
 * another order. Ends with the block synchronised. */
template <int DK> __device__ void pt_inverse(const float *M, float *T, int tid)
{
    constexpr int LM = pt_sh<DK>::LM;
    static_assert(CK_C == 64 && CK_THREADS == 256, "4 blocks of 16 columns, four lanes a column");
    {
        const int b0 = 16 * (tid / 64), j = b0 + tid / 4 % 16, q = tid % 4;
        for (int r = b0 + q; r < b0 + 16; r += 4)
            T[r * LM + j] = r == j ? 1.0f : 0.0f;
        __syncwarp();
        for (int r = b0 + 1; r < b0 + 16; r++) {
            float p = 0.0f;
            if (r > j)
                for (int k = j + q; k < r; k += 4)
                    p += M[r * LM + k] * T[k * LM + j];
            p += __shfl_xor_sync(0xffffffffu, p, 1);
            p += __shfl_xor_sync(0xffffffffu, p, 2);
            if (r > j && q == 0)
                T[r * LM + j] = -p;
            __syncwarp();
        }
    }
    __syncthreads();
    for (int d = 1; d < 4; d++) {
        for (int e = tid; e < (4 - d) * 256; e += CK_THREADS) {
            const int j = 16 * (e / 256), i = j + 16 * d, r = e / 16 % 16, cc = e % 16;
            const float *Ar = M + (i + r) * LM;
            float p[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
            for (int k = j; k < i; k += 4)
                for (int u = 0; u < 4; u++)
                    p[u] += Ar[k + u] * T[(k + u) * LM + j + cc];
            T[(j + r) * LM + i + cc] = (p[0] + p[1]) + (p[2] + p[3]);
        }
        __syncthreads();
        for (int e = tid; e < (4 - d) * 256; e += CK_THREADS) {
            const int j = 16 * (e / 256), i = j + 16 * d, r = e / 16 % 16, cc = e % 16;
            const float *Tr = T + (i + r) * LM + i, *R = T + j * LM + i + cc;
            float p = 0.0f;
            for (int m = 0; m <= r; m++)
                p += Tr[m] * R[m * LM];
            T[(i + r) * LM + j + cc] = -p;
        }
        __syncthreads();
    }
}

/* rows t < nc of X (pitch LX) to dst's rows ((r0 + t) Hv + h) DK */
template <int DK> __device__ void pt_store(float *dst, const float *X, const ck_chunk &c,
                                          int64_t Hv, int64_t h, int tid)
{
    for (int e = tid; e < c.nc * (DK / 4); e += CK_THREADS) {
        const int t = e / (DK / 4), i = 4 * (e % (DK / 4));
        *(float4 *)(dst + ((c.r0 + t) * Hv + h) * DK + i) =
            *(const float4 *)(X + t * pt_sh<DK>::LX + i);
    }
}
#endif

template <int DK, bool MMA>
__global__ void __launch_bounds__(CK_THREADS) k_chunk_prep_tc(ck_args a)
{
    cuda_pdl_enter();
#ifdef __CUDA_ARCH__
    using L = pt_sh<DK>;
    extern __shared__ __align__(128) float smp[];
    const ck_chunk c = chunk_of(a.runs, blockIdx.z, (int64_t)blockIdx.x * CK_C);
    if (!c.nc)
        return;
    const int tid = threadIdx.x, w = tid / 32;
    const int64_t h = blockIdx.y, kh = h % a.Hk;
    float *K = smp + L::oK, *X = smp + L::oQ, *M = smp + L::oM, *T = smp + L::oT;
    float *G = smp + L::oG, *bt = smp + L::oB, *gr = smp + L::oR;

    /* 1. */
    tc_cp_rows<DK, L::LX>(K, a.qkv, a.ldq, (a.Hk + kh) * DK, c, tid);
    tc_cp_rows<DK, L::LX>(X, a.qkv, a.ldq, kh * DK, c, tid);
    cp_commit();
    if (tid < CK_C) {
        gr[tid] = tid < c.nc ? a.g[(c.r0 + tid) * a.ldg + h] : 0.0f;
        bt[tid] = tid < c.nc ? a.beta[(c.r0 + tid) * a.ldb + h] : 0.0f;
    }
    cp_wait<0>();
    __syncthreads();

    /* 2. warps 0-3: K K^T; 4-7: Q K^T; the last thread: G */
    if (MMA)
        pt_gram_mma<DK>(w < 4 ? K : X, K, w < 4 ? M : T, w % 4, tid & 31);
    else if (w < 4)
        pt_gram<DK>(K, K, M, w);
    else
        pt_gram<DK>(X, K, T, w - 4);
    if (tid == CK_THREADS - 1) {
        float acc = 0.0f;
        for (int t = 0; t < CK_C; t++) {
            if (t < c.nc)
                acc += gr[t];
            G[t] = acc;
        }
    }
    __syncthreads();

    /* 3. */
    for (int e = tid; e < CK_C * CK_C; e += CK_THREADS) {
        const int t = e / CK_C, u = e % CK_C;
        const float d = u <= t ? expf(G[t] - G[u]) : 0.0f;
        float *m = M + t * L::LM + u;
        *m = u < t ? bt[t] * *m * d : 0.0f;
        if (t < c.nc)
            a.P[((c.r0 + t) * a.Hv + h) * CK_C + u] = u <= t ? T[t * L::LM + u] * d : 0.0f;
    }
    if (tid < CK_C) {
        if (tid < c.nc)
            a.G[(c.r0 + tid) * a.Hv + h] = G[tid];
        gr[tid] = bt[tid] * expf(G[tid]);       /* g is spent: gr holds beta e^G */
    }
    tc_cp_rows<DK, L::LX>(X, a.qkv, a.ldq, 2 * a.Hk * DK + h * DK, c, tid);   /* V */
    cp_commit();
    __syncthreads();

    for (int e = tid; e < CK_C * DK; e += CK_THREADS) {
        const int t = e / DK, i = e % DK;
        K[t * L::LX + i] *= gr[t];
    }
    pt_inverse<DK>(M, T, tid);
    cp_wait<0>();                      /* V: this thread's rows times beta */
    for (int e = tid; e < CK_C * (DK / 4); e += CK_THREADS) {
        const int t = e / (DK / 4), i = 4 * (e % (DK / 4));
        float4 *v = (float4 *)(X + t * L::LX + i);
        const float b = bt[t];
        *v = make_float4(b * v->x, b * v->y, b * v->z, b * v->w);
    }
    __syncthreads();

    /* 5. */
    if (MMA) {
        pt_solve_mma<DK>(T, K, w, tid & 31);
        pt_solve_mma<DK>(T, X, w, tid & 31);
    } else {
        pt_solve<DK>(T, K, w);
        pt_solve<DK>(T, X, w);
    }
    __syncthreads();
    pt_store<DK>(a.W, K, c, a.Hv, h, tid);
    pt_store<DK>(a.U, X, c, a.Hv, h, tid);
#endif
}

template <int DK> bool ck_launch_prep_tc(be_ctx *be, const ck_args &a, dim3 grid, bool mma)
{
    const size_t bytes = pt_sh<DK>::floats * sizeof(float);
    void (*k)(ck_args) = mma ? k_chunk_prep_tc<DK, true> : k_chunk_prep_tc<DK, false>;
    if (!cuda_smem_optin(be, (const void *)k, bytes))
        return false;
    cuda_launch(k, grid, CK_THREADS, bytes, cuda_ctx_of(be)->stream, a);
    return CUDA_LAUNCHED(be, mma ? "k_chunk_prep_mma" : "k_chunk_prep_tc");
}

template bool ck_launch_prep_tc<32>(be_ctx *, const ck_args &, dim3, bool);
template bool ck_launch_prep_tc<64>(be_ctx *, const ck_args &, dim3, bool);
template bool ck_launch_prep_tc<128>(be_ctx *, const ck_args &, dim3, bool);
template bool ck_launch_prep_tc<256>(be_ctx *, const ck_args &, dim3, bool);
