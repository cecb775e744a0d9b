/* cuda_chunk_pb.h: the chunked delta rule's prep in f32 on the CUDA cores,
 * blocked (k_chunk_prep_pb, cuda_chunk_pb.cu, Q36_CUDA_CHUNKPREP=2): the
 * phases between its barriers as functions of the thread index, so the
 * host emulation (cuda_chunk.cu) runs them on a machine without a GPU.
 *
 * Why. Nsight Compute on k_chunk_prep_tc (bench/results/
 * 2026-12-05-cuda-session27/, run-7aa02b8-ncu): 13.2 k instructions a
 * warp for a chunk and head, 7% of them on the tensor pipe: the 3xTF32
 * splits of every fragment it loads and their index arithmetic cost more
 * than the products; it stalls on barriers and fixed latencies, not on
 * memory. k_chunk_prep (the f32 kernel before it) solved (I + A) X = B by
 * forward substitution, one thread a column, 64 dependent steps. Here:
 *  1. (load) K and Q rows transposed (K^T, Q^T: a thread's four rows of a
 *     product are one 16-byte read), g and beta;
 *  2. (gsum) G's prefix sums, one thread, in token order (k_chunk_prep's
 *     bits), and e = beta e^G;
 *  3. (gram) A = beta K K^T decayed (strictly lower) and P = Q K^T
 *     decayed (lower with the diagonal, zero above, to the scratch), a
 *     thread a 4 x 4 tile of both: the 136 tiles on or below the
 *     diagonal, one thread each; the other 120 threads write P's zeros;
 *  4. (inverse) T = (I + A)^-1 by blocks of 16 as k_chunk_prep_tc's
 *     pt_inverse: the diagonal blocks a thread a column (15 dependent
 *     rows), then the blocks below by their distance from the diagonal;
 *  5. (scale) B = e K (rows) in Q^T's place, T diag(beta) in A's place;
 *  6. (solve) W = T B and U = (T diag(beta)) V, a thread 4 rows of
 *     DK / 16 columns, sums over the rows on or before its own only, each
 *     straight from registers to the scratch; V's rows land in K^T's
 *     place while W is formed.
 * Every sum in f32 (products in f32 too): closer to the true rule than
 * 3xTF32. Shared memory (floats): two regions of max(DK (C + 4), C (DK +
 * 4)), A then T diag(beta), T (pitch C + 4 each), G, beta, e, g:
 * 105 KB at DK = 128 (two blocks an SM), 174 KB at 256. */
#ifndef Q36_CUDA_CHUNK_PB_H
#define Q36_CUDA_CHUNK_PB_H

#include "cuda_chunk_ph.h"

template <int DK> struct pb_sh {
    static constexpr int LT = CK_C + 4, LR = DK + 4, LM = CK_C + 4;
    static constexpr size_t XR = (size_t)DK * LT > (size_t)CK_C * LR ? (size_t)DK * LT
                                                                      : (size_t)CK_C * LR;
    static constexpr size_t oK = 0, oQ = XR, oM = 2 * XR, oT = oM + (size_t)CK_C * LM,
                            oG = oT + (size_t)CK_C * LM, oB = oG + CK_C, oE = oB + CK_C,
                            oR = oE + CK_C, floats = oR + CK_C;
};
static_assert(pb_sh<32>::oQ % 4 == 0 && pb_sh<32>::oM % 4 == 0 && pb_sh<32>::oT % 4 == 0,
              "16-byte aligned regions");
static_assert(CK_C == 64 && CK_THREADS == 256, "16 x 16 tiles of 4 x 4, 256 threads");

template <int DK> HD void pb_load(const ck_args &a, ck_blk b, int tid, int nthr, float *sm)
{
    using L = pb_sh<DK>;
    const ck_chunk c = chunk_of(a.runs, b.z, (int64_t)b.x * CK_C);
    if (!c.nc)
        return;
    const int64_t h = b.y, kh = h % a.Hk;
    const float *rows = a.qkv + c.r0 * a.ldq;
    ck_rows<DK, true>(sm + L::oK, L::LT, rows, a.ldq, (a.Hk + kh) * DK, c.nc, tid, nthr);
    ck_rows<DK, true>(sm + L::oQ, L::LT, rows, a.ldq, kh * DK, c.nc, tid, nthr);
    for (int t = tid; t < CK_C; t += nthr) {
        sm[L::oR + t] = t < c.nc ? a.g[(c.r0 + t) * a.ldg + h] : 0.0f;
        sm[L::oB + t] = t < c.nc ? a.beta[(c.r0 + t) * a.ldb + h] : 0.0f;
    }
}

template <int DK> HD void pb_gsum(const ck_args &a, ck_blk b, int tid, int nthr, float *sm)
{
    using L = pb_sh<DK>;
    const ck_chunk c = chunk_of(a.runs, b.z, (int64_t)b.x * CK_C);
    if (!c.nc || tid != 0)
        return;
    float acc = 0.0f;
    for (int t = 0; t < CK_C; t++) {
        if (t < c.nc)
            acc += sm[L::oR + t];
        sm[L::oG + t] = acc;
        sm[L::oE + t] = sm[L::oB + t] * expf(acc);
    }
}

template <int DK> HD void pb_gram(const ck_args &a, ck_blk b, int tid, int nthr, float *sm)
{
    using L = pb_sh<DK>;
    const ck_chunk c = chunk_of(a.runs, b.z, (int64_t)b.x * CK_C);
    if (!c.nc)
        return;
    const int64_t h = b.y;
    const float *KT = sm + L::oK, *QT = sm + L::oQ, *G = sm + L::oG, *bt = sm + L::oB;
    float *A = sm + L::oM;
    for (int n = tid; n < 256; n += nthr) {
        int tr, tq;
        if (n < 136) {
            ck_tile(n, &tr, &tq);
        } else {                       /* a tile above the diagonal: P's zeros */
            int r, q;                  /* (r + 1, q): the tiles strictly below, transposed */
            ck_tile(n - 136, &r, &q);
            tr = q;
            tq = r + 1;
        }
        const int t0 = 4 * tr, u0 = 4 * tq;
        if (n >= 136) {
            for (int r = 0; r < 4 && t0 + r < c.nc; r++)
                for (int q = 0; q < 4; q++)
                    a.P[((c.r0 + t0 + r) * a.Hv + h) * CK_C + u0 + q] = 0.0f;
            continue;
        }
        float kk[4][4], qk[4][4];
        for (int r = 0; r < 4; r++)
            for (int q = 0; q < 4; q++)
                kk[r][q] = qk[r][q] = 0.0f;
        if (t0 < c.nc)
            for (int i = 0; i < DK; i++) {
                const float4 kt = *(const float4 *)(KT + i * L::LT + t0);
                const float4 qt = *(const float4 *)(QT + i * L::LT + t0);
                const float4 ku = *(const float4 *)(KT + i * L::LT + u0);
                const float ktr[4] = { kt.x, kt.y, kt.z, kt.w }, qtr[4] = { qt.x, qt.y, qt.z, qt.w },
                            kuq[4] = { ku.x, ku.y, ku.z, ku.w };
                for (int r = 0; r < 4; r++)
                    for (int q = 0; q < 4; q++) {
                        kk[r][q] += ktr[r] * kuq[q];
                        qk[r][q] += qtr[r] * kuq[q];
                    }
            }
        for (int r = 0; r < 4; r++)
            for (int q = 0; q < 4; q++) {
                const int t = t0 + r, u = u0 + q;
                const float d = u <= t ? expf(G[t] - G[u]) : 0.0f;
                A[t * L::LM + u] = u < t ? bt[t] * kk[r][q] * d : 0.0f;
                if (t < c.nc)
                    a.P[((c.r0 + t) * a.Hv + h) * CK_C + u] = u <= t ? qk[r][q] * d : 0.0f;
            }
    }
    if (tid < c.nc)
        a.G[(c.r0 + tid) * a.Hv + h] = G[tid];
}

/* T's diagonal blocks of 16: thread j < C takes column j of its block,
 * rows in order, -sum_{j <= k < r} A[r][k] T[k][j] (zeros above j) */
template <int DK> HD void pb_inv_diag(const ck_args &a, ck_blk b, int tid, int nthr, float *sm)
{
    using L = pb_sh<DK>;
    if (!chunk_of(a.runs, b.z, (int64_t)b.x * CK_C).nc)
        return;
    const float *A = sm + L::oM;
    float *T = sm + L::oT;
    for (int j = tid; j < CK_C; j += nthr) {
        const int b0 = j / 16 * 16;
        for (int r = b0; r < b0 + 16; r++) {
            float p = 0.0f;
            for (int k = j; k < r; k++)
                p += A[r * L::LM + k] * T[k * L::LM + j];
            T[r * L::LM + j] = r < j ? 0.0f : r == j ? 1.0f : -p;
        }
    }
}

/* The blocks at distance d below the diagonal, in two phases: R = sum_{j
 * <= k < i} A_ik T_kj into the block (j, i) above the diagonal (nothing
 * reads it after), then T_ij = -T_ii R. */
template <int DK> HD void pb_inv_r(const ck_args &a, ck_blk b, int tid, int nthr, float *sm, int d)
{
    using L = pb_sh<DK>;
    if (!chunk_of(a.runs, b.z, (int64_t)b.x * CK_C).nc)
        return;
    const float *A = sm + L::oM;
    float *T = sm + L::oT;
    for (int e = tid; e < (4 - d) * 256; e += nthr) {
        const int j = 16 * (e / 256), i = j + 16 * d, r = e / 16 % 16, cc = e % 16;
        float p = 0.0f;
        for (int k = j; k < i; k++)
            p += A[(i + r) * L::LM + k] * T[k * L::LM + j + cc];
        T[(j + r) * L::LM + i + cc] = p;
    }
}

template <int DK> HD void pb_inv_t(const ck_args &a, ck_blk b, int tid, int nthr, float *sm, int d)
{
    using L = pb_sh<DK>;
    if (!chunk_of(a.runs, b.z, (int64_t)b.x * CK_C).nc)
        return;
    float *T = sm + L::oT;
    for (int e = tid; e < (4 - d) * 256; e += nthr) {
        const int j = 16 * (e / 256), i = j + 16 * d, r = e / 16 % 16, cc = e % 16;
        float p = 0.0f;
        for (int m = 0; m <= r; m++)
            p += T[(i + r) * L::LM + i + m] * T[(j + m) * L::LM + i + cc];
        T[(i + r) * L::LM + j + cc] = -p;
    }
}

/* B = e K as rows (pitch LR) in Q^T's place; T diag(beta) in A's place */
template <int DK> HD void pb_scale(const ck_args &a, ck_blk b, int tid, int nthr, float *sm)
{
    using L = pb_sh<DK>;
    if (!chunk_of(a.runs, b.z, (int64_t)b.x * CK_C).nc)
        return;
    const float *KT = sm + L::oK, *T = sm + L::oT, *E = sm + L::oE, *bt = sm + L::oB;
    float *B = sm + L::oQ, *TB = sm + L::oM;
    for (int e = tid; e < CK_C * DK; e += nthr) {
        const int u = e / DK, j = e % DK;
        B[u * L::LR + j] = E[u] * KT[j * L::LT + u];
    }
    for (int e = tid; e < CK_C * CK_C; e += nthr) {
        const int t = e / CK_C, u = e % CK_C;
        TB[t * L::LM + u] = T[t * L::LM + u] * bt[u];
    }
}

/* V's rows (zeros past the chunk) in K^T's place, pitch LR: the host's
 * form of the copies the kernel makes by cp.async */
template <int DK> HD void pb_load_v(const ck_args &a, ck_blk b, int tid, int nthr, float *sm)
{
    using L = pb_sh<DK>;
    const ck_chunk c = chunk_of(a.runs, b.z, (int64_t)b.x * CK_C);
    if (!c.nc)
        return;
    ck_rows<DK>(sm + L::oK, L::LR, a.qkv + c.r0 * a.ldq, a.ldq, 2 * a.Hk * DK + b.y * DK, c.nc,
                tid, nthr);
}

/* dst's rows of the chunk = M X (M: T or T diag(beta) at oM_, pitch LM,
 * zero above the diagonal within its blocks of 16; X rows of pitch LR at
 * oX): thread (g, k) rows 4g .. 4g + 3, columns CW k .. CW k + CW - 1,
 * sums over the rows u <= 4g + 3 (and u < nc: X is zero after). */
template <int DK> HD void pb_solve(const ck_args &a, ck_blk b, int tid, int nthr, float *sm,
                                   size_t oM_, size_t oX, float *dst)
{
    using L = pb_sh<DK>;
    constexpr int CW = DK / 16;
    const ck_chunk c = chunk_of(a.runs, b.z, (int64_t)b.x * CK_C);
    if (!c.nc)
        return;
    const float *M = sm + oM_, *X = sm + oX;
    for (int n = tid; n < 256; n += nthr) {
        const int t0 = 4 * (n / 16), j0 = CW * (n % 16);
        if (t0 >= c.nc)
            continue;
        float acc[4][CW];
        for (int r = 0; r < 4; r++)
            for (int q = 0; q < CW; q++)
                acc[r][q] = 0.0f;
        const int uend = t0 + 4 < c.nc ? t0 + 4 : c.nc;
        for (int u = 0; u < uend; u++) {
            float m[4], x[CW];
            for (int r = 0; r < 4; r++)
                m[r] = M[(t0 + r) * L::LM + u];
            if constexpr (CW % 4 == 0) {
                for (int q = 0; q < CW; q += 4) {
                    const float4 v = *(const float4 *)(X + u * L::LR + j0 + q);
                    x[q] = v.x;
                    x[q + 1] = v.y;
                    x[q + 2] = v.z;
                    x[q + 3] = v.w;
                }
            } else {
                for (int q = 0; q < CW; q++)
                    x[q] = X[u * L::LR + j0 + q];
            }
            for (int r = 0; r < 4; r++)
                for (int q = 0; q < CW; q++)
                    acc[r][q] += m[r] * x[q];
        }
        for (int r = 0; r < 4 && t0 + r < c.nc; r++) {
            float *o = dst + ((c.r0 + t0 + r) * a.Hv + b.y) * DK + j0;
            for (int q = 0; q < CW; q++)
                o[q] = acc[r][q];
        }
    }
}

#endif
