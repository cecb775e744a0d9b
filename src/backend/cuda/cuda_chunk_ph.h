/* cuda_chunk_ph.h: what the chunked delta rule's kernels share
 * (cuda_chunk.cu: the f32 kernels, the state kernels on tensor cores, the
 * op and its host emulation; cuda_chunk_prep.cu: the prep kernel on
 * tensor cores; cuda_chunk_wide.cu: the default state kernel): the
 * arguments, the chunk a block takes, the loads, the phase functions of
 * the f32 kernels (host and device), the TF32 tile helpers and the
 * mma.sync steps (device). cuda_chunk.cu's opening comment says what each
 * computes. Included by CUDA sources only (cuda_chunk_pb.cu through
 * cuda_chunk_pb.h). */
#ifndef Q36_CUDA_CHUNK_PH_H
#define Q36_CUDA_CHUNK_PH_H

#include "cuda.h"
#include "cuda_mma.h"

#include <mma.h>
#include <math.h>
#include <type_traits>

#define CK_C       64      /* tokens per chunk */
#define CK_BV      16      /* value columns of the state per block of k_chunk_state */
#define CK_THREADS 256

#define HD __host__ __device__ inline

typedef struct ck_args {
    const float *qkv, *g, *beta;
    int64_t ldq, ldg, ldb;
    float *S;
    int64_t ldS;
    float *out;
    int64_t ldo;
    const int32_t *runs;     /* n_seq x (slot, row0, n_rows, pos0) */
    int64_t Hk, Hv;
    float *U, *W, *P, *G;    /* scratch (the file's comment) */
    float *ck;               /* NULL, or each run's state after each chunk (cuda_chunk.h) */
    int64_t ck_chunks;       /* chunks a run has room for in ck */
    float *Sb;               /* NULL, or the split kernels' states before each chunk (below) */
} ck_args;

typedef struct ck_blk { int x, y, z; } ck_blk;

/* The chunk of run s that starts c0 rows into it: its first batch row and
 * its length (0 past the run's end). */
typedef struct ck_chunk { int64_t r0; int nc; int slot; } ck_chunk;

HD ck_chunk chunk_of(const int32_t *runs, int s, int64_t c0)
{
    const int64_t n = runs[4 * s + 2];
    ck_chunk c;
    c.slot = runs[4 * s];
    c.r0 = runs[4 * s + 1] + c0;
    c.nc = c0 < n ? (int)(n - c0 < CK_C ? n - c0 : CK_C) : 0;
    return c;
}

/* The (row, column) of the n-th tile on or below the diagonal of a square
 * grid of tiles, row by row: (0,0), (1,0), (1,1), (2,0), ... (k_chunk_prep_tc's
 * 10 of 4 x 4 tiles of 16, k_chunk_prep_pb's 136 of 16 x 16 tiles of 4) */
HD void ck_tile(int n, int *r, int *c)
{
    int rr = 0;
    while (n > rr) {
        n -= rr + 1;
        rr++;
    }
    *r = rr;
    *c = n;
}

/* Loads into shared memory, n elements over the block's threads: put(e,
 * get(e)) for e = tid, tid + nthr, ... < n, CK_LOADS of a thread at a
 * time, every load of a batch issued before its stores. A loop that
 * stores each value as it loads it waits out a whole memory round trip
 * per element: the compiler cannot move a global load above a store to
 * shared memory through pointers that might alias it. */
#define CK_LOADS 8
template <class T, class Get, class Put> HD void ck_batched(int n, int tid, int nthr, Get get, Put put)
{
    for (int e0 = tid; e0 < n; e0 += CK_LOADS * nthr) {
        T v[CK_LOADS];
        for (int j = 0; j < CK_LOADS; j++) {
            const int e = e0 + j * nthr;
            v[j] = e < n ? get(e) : T{};
        }
        for (int j = 0; j < CK_LOADS; j++) {
            const int e = e0 + j * nthr;
            if (e < n)
                put(e, v[j]);
        }
    }
}

/* Rows 0 .. CK_C of dst (pitch ldd) = COLS floats from col0 of src's rows
 * (pitch lds) for t < nrows, zeros after, through ck_batched: 16-byte
 * loads when src's rows allow them (4 times the bytes in flight), else
 * floats. With TR, dst transposed: dst[i * ldd + t] = src[t][col0 + i]. */
template <int COLS, bool TR = false>
HD void ck_rows(float *dst, int64_t ldd, const float *src, int64_t lds, int64_t col0, int nrows,
                int tid, int nthr)
{
    /* element i of row t at dst + at(t, i) */
    auto at = [&](int t, int i) { return TR ? (int64_t)i * ldd + t : (int64_t)t * ldd + i; };
    if (COLS % 4 == 0 && (uintptr_t)(src + col0) % 16 == 0 && lds % 4 == 0) {
        constexpr int C4 = COLS / 4;
        ck_batched<float4>(CK_C * C4, tid, nthr,
                           [&](int e) {
                               const int t = e / C4;
                               return t < nrows ? *(const float4 *)(src + t * lds + col0 + 4 * (e % C4))
                                                : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                           },
                           [&](int e, float4 v) {
                               const int t = e / C4, i = 4 * (e % C4);
                               dst[at(t, i)] = v.x;
                               dst[at(t, i + 1)] = v.y;
                               dst[at(t, i + 2)] = v.z;
                               dst[at(t, i + 3)] = v.w;
                           });
    } else {
        ck_batched<float>(CK_C * COLS, tid, nthr,
                          [&](int e) {
                              return e / COLS < nrows ? src[e / COLS * lds + col0 + e % COLS] : 0.0f;
                          },
                          [&](int e, float v) { dst[at(e / COLS, e % COLS)] = v; });
    }
}

/* ------------------------------------------------------------------ prep */

/* Shared memory of k_chunk_prep: K and Q rows of the chunk (row pitch
 * DK + 1: the Gram phase reads K down a column across a warp), A (pitch
 * C + 1), G, beta. The solve phase reads the V rows into Q's place (Q is
 * dead after the Gram phase): two blocks fit an SM (83 KB at DK = 128). */
template <int DK> struct prep_sh {
    static constexpr int LD = DK + 1, LA = CK_C + 1;
    static constexpr size_t floats = (size_t)2 * CK_C * LD + (size_t)CK_C * LA + 2 * CK_C;
    float *K, *Q, *A, *G, *bt;
    HD explicit prep_sh(float *s)
        : K(s), Q(s + CK_C * LD), A(s + 2 * CK_C * LD),
          G(s + 2 * CK_C * LD + CK_C * LA), bt(s + 2 * CK_C * LD + CK_C * LA + CK_C) {}
};

/* Block (chunk x, value head y, run z). Phase 1: the chunk's q and k rows
 * (zero past its end), G (the prefix sum, thread 0, in token order) and
 * beta. */
template <int DK> HD void prep_load(const ck_args &a, ck_blk b, int tid, int nthr, float *sm)
{
    const ck_chunk c = chunk_of(a.runs, b.z, (int64_t)b.x * CK_C);
    if (!c.nc)
        return;
    prep_sh<DK> s(sm);
    const int64_t h = b.y, kh = h % a.Hk, LD = prep_sh<DK>::LD;
    /* the chunk's Q and K rows (zero past its end) */
    const float *rows = a.qkv + c.r0 * a.ldq;
    ck_rows<DK>(s.Q, LD, rows, a.ldq, kh * DK, c.nc, tid, nthr);
    ck_rows<DK>(s.K, LD, rows, a.ldq, (a.Hk + kh) * DK, c.nc, tid, nthr);
    if (tid == 0) {
        float acc = 0.0f;
        for (int t = 0; t < CK_C; t++) {
            float bt = 0.0f;
            if (t < c.nc) {
                acc += a.g[(c.r0 + t) * a.ldg + h];
                bt = a.beta[(c.r0 + t) * a.ldb + h];
            }
            s.G[t] = acc;
            s.bt[t] = bt;
        }
    }
}

/* Phase 2: A (strictly lower) in shared memory, P (lower with the
 * diagonal, zero above, full rows of C) and G to the scratch. A thread
 * takes a 4 x 4 tile of (t, u) pairs; a tile wholly above the diagonal
 * only writes P's zeros. */
template <int DK> HD void prep_gram(const ck_args &a, ck_blk b, int tid, int nthr, float *sm)
{
    const ck_chunk c = chunk_of(a.runs, b.z, (int64_t)b.x * CK_C);
    if (!c.nc)
        return;
    prep_sh<DK> s(sm);
    const int64_t h = b.y, LD = prep_sh<DK>::LD, LA = prep_sh<DK>::LA;
    for (int e = tid; e < (CK_C / 4) * (CK_C / 4); e += nthr) {
        const int t0 = e / (CK_C / 4) * 4, u0 = e % (CK_C / 4) * 4;
        if (t0 >= c.nc)
            continue;
        float kk[4][4], qk[4][4];
        for (int r = 0; r < 4; r++)
            for (int q = 0; q < 4; q++)
                kk[r][q] = qk[r][q] = 0.0f;
        if (u0 <= t0 + 3)
            for (int i = 0; i < DK; i++) {
                float ku[4];
                for (int q = 0; q < 4; q++)
                    ku[q] = s.K[(u0 + q) * LD + i];
                for (int r = 0; r < 4; r++) {
                    const float kt = s.K[(t0 + r) * LD + i], qt = s.Q[(t0 + r) * LD + i];
                    for (int q = 0; q < 4; q++) {
                        kk[r][q] += kt * ku[q];
                        qk[r][q] += qt * ku[q];
                    }
                }
            }
        for (int r = 0; r < 4 && t0 + r < c.nc; r++)
            for (int q = 0; q < 4; q++) {
                const int t = t0 + r, u = u0 + q;
                const float d = u <= t ? expf(s.G[t] - s.G[u]) : 0.0f;
                s.A[t * LA + u] = u < t ? s.bt[t] * kk[r][q] * d : 0.0f;
                a.P[((c.r0 + t) * a.Hv + h) * CK_C + u] = u <= t ? qk[r][q] * d : 0.0f;
            }
    }
    if (tid < c.nc)
        a.G[(c.r0 + tid) * a.Hv + h] = s.G[tid];
}

/* Phase 3: (I + A) X = B by forward substitution, one thread per column
 * (columns 0..DK-1 of W over B = beta e^G K, in place of K; DK..2DK-1 of
 * U over B = beta V, V's column read by its thread into Q's place), then
 * the rows to the scratch. Each row's sum over the rows before it runs in
 * four partial sums (a shorter chain of dependent adds). */
template <int DK> HD void prep_solve(const ck_args &a, ck_blk b, int tid, int nthr, float *sm)
{
    const ck_chunk c = chunk_of(a.runs, b.z, (int64_t)b.x * CK_C);
    if (!c.nc)
        return;
    prep_sh<DK> s(sm);
    const int64_t h = b.y, LD = prep_sh<DK>::LD, LA = prep_sh<DK>::LA;
    for (int col = tid; col < 2 * DK; col += nthr) {
        const bool isw = col < DK;
        const int j = isw ? col : col - DK;
        float *X = (isw ? s.K : s.Q) + j;
        if (!isw)       /* V's column j, CK_LOADS rows at a time (ck_batched's reason) */
            for (int t0 = 0; t0 < c.nc; t0 += CK_LOADS) {
                float v[CK_LOADS];
                for (int r = 0; r < CK_LOADS; r++)
                    v[r] = t0 + r < c.nc ? a.qkv[(c.r0 + t0 + r) * a.ldq + 2 * a.Hk * DK + h * DK + j]
                                         : 0.0f;
                for (int r = 0; r < CK_LOADS && t0 + r < c.nc; r++)
                    X[(t0 + r) * LD] = v[r];
            }
        for (int t = 0; t < c.nc; t++) {
            const float *At = s.A + t * LA;
            float p[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
            int u = 0;
            for (; u + 4 <= t; u += 4)
                for (int q = 0; q < 4; q++)
                    p[q] += At[u + q] * X[(u + q) * LD];
            for (; u < t; u++)
                p[0] += At[u] * X[u * LD];
            const float b0 = (isw ? s.bt[t] * expf(s.G[t]) : s.bt[t]) * X[t * LD];
            X[t * LD] = b0 - ((p[0] + p[1]) + (p[2] + p[3]));
        }
        float *dst = isw ? a.W : a.U;
        for (int t = 0; t < c.nc; t++)
            dst[((c.r0 + t) * a.Hv + h) * DK + j] = X[t * LD];
    }
}

/* ----------------------------------------------------------------- state */

/* Shared memory of k_chunk_state and k_chunk_state_tc: the state's
 * columns (S[i][jl], pitch CK_BV + 4), one chunk of W, Q or K rows (X,
 * pitch DK + 4), U then V' (V, pitch CK_BV), P (pitch C + 4), the tensor
 * cores' output tile (O, C x CK_BV), G and the update weights
 * e^(G_last - G_t). The pitches keep the tiles' reads of one warp off a
 * single bank, and are multiples of 4 floats with every region 32-byte
 * aligned (WMMA's loads). */
template <int DK> struct st_sh {
    static constexpr int LS = CK_BV + 4, LX = DK + 4, LP = CK_C + 4;
    static constexpr size_t oS = 0, oX = oS + (size_t)DK * LS, oV = oX + (size_t)CK_C * LX,
                            oP = oV + CK_C * CK_BV, oO = oP + CK_C * LP, oG = oO + CK_C * CK_BV,
                            oD = oG + CK_C, floats = oD + CK_C;
    float *S, *X, *V, *P, *O, *G, *dec;
    HD explicit st_sh(float *s)
        : S(s + oS), X(s + oX), V(s + oV), P(s + oP), O(s + oO), G(s + oG), dec(s + oD) {}
};
static_assert(st_sh<32>::oX % 8 == 0 && st_sh<32>::oO % 8 == 0 && st_sh<32>::oG % 8 == 0,
              "32-byte aligned regions");

/* The split kernels' state before chunk c of run s, value head h: its
 * slot in Sb (cuda_chunk.cu, k_chunk_state_split) */
HD float *sb_slot(const ck_args &a, const ck_chunk &c, int s, int64_t h, int dk)
{
    return a.Sb + ((c.r0 / CK_C + s) * a.Hv + h) * (int64_t)dk * dk;
}

/* The state's columns j0 .. j0 + BV of a block (S[i][jl], pitch LS) to its
 * slot dst (element [j dk + i], as S): items e = e0, e0 + step, .. below
 * DK BV / 4, each one 16-byte read of S's row i (a quarter warp's eight
 * rows on all 32 banks; a float at a time, rows 20 floats apart took 8
 * banks: Nsight Compute counted 19.9 M conflicts a layer,
 * bench/results/2026-12-05-cuda-session27/run-7aa02b8-ncu), then four
 * stores, each a row of dst across consecutive i */
template <int DK, int BV, int LS>
HD void sb_store(float *dst, const float *S, int64_t j0, int e0, int step)
{
    static_assert(BV % 4 == 0 && LS % 4 == 0, "16-byte reads of S's rows");
    for (int e = e0; e < DK * BV / 4; e += step) {
        const int i = e % DK, jq = 4 * (e / DK);
        const float4 v = *(const float4 *)(S + i * LS + jq);
        dst[(j0 + jq) * DK + i] = v.x;
        dst[(j0 + jq + 1) * DK + i] = v.y;
        dst[(j0 + jq + 2) * DK + i] = v.z;
        dst[(j0 + jq + 3) * DK + i] = v.w;
    }
}

/* Block (value head x, run y, column block z). */
HD float *state_row(const ck_args &a, ck_blk b)
{
    return a.S + ((int64_t)a.runs[4 * b.y] * a.Hv + b.x) * a.ldS;
}

/* A block's state columns j0 .. j0 + BV between the state row Sg
 * (element [j dk + i]) and S[i][jl] (pitch LS): into S, or (OUT) out of
 * it; items e = tid, tid + nthr, .. */
template <int DK, int BV, int LS, bool OUT>
HD void state_cols(float *S, float *Sg, int64_t j0, int tid, int nthr)
{
    for (int e = tid; e < DK * BV; e += nthr) {
        const int jl = e / DK, i = e % DK;
        if (OUT)
            Sg[(j0 + jl) * DK + i] = S[i * LS + jl];
        else
            S[i * LS + jl] = Sg[(j0 + jl) * DK + i];
    }
}

template <int DK> HD void st_init(const ck_args &a, ck_blk b, int tid, int nthr, float *sm)
{
    st_sh<DK> s(sm);
    state_cols<DK, CK_BV, st_sh<DK>::LS, false>(s.S, state_row(a, b), (int64_t)b.z * CK_BV, tid,
                                                 nthr);
}

template <int DK> HD void st_fini(const ck_args &a, ck_blk b, int tid, int nthr, float *sm)
{
    st_sh<DK> s(sm);
    state_cols<DK, CK_BV, st_sh<DK>::LS, true>(s.S, state_row(a, b), (int64_t)b.z * CK_BV, tid,
                                                nthr);
}

/* G of row t of run s's chunk from c0 (0 past the chunk's or the run's
 * end), for the split kernels' loads a chunk ahead */
HD float chunk_g(const ck_args &a, int s, int64_t c0, int64_t h, int t)
{
    const ck_chunk c = chunk_of(a.runs, s, c0);
    return t < c.nc ? a.G[(c.r0 + t) * a.Hv + h] : 0.0f;
}

/* The split kernels' V' (rows of pitch LV, BV columns from j0) to U's
 * place for the chunk's rows, then each row t times its update weight
 * dec[t] */
template <int DK, int BV, int LV>
HD void vp_out(const ck_args &a, const ck_chunk &c, int64_t h, int64_t j0, float *V,
               const float *dec, int tid, int nthr)
{
    for (int e = tid; e < CK_C * BV; e += nthr) {
        const int t = e / BV, j = e % BV;
        float *v = V + t * LV + j;
        if (t < c.nc)
            a.U[((c.r0 + t) * a.Hv + h) * DK + j0 + j] = *v;
        *v *= dec[t];
    }
}

/* X (pitch LX) = DK columns from col0 of rows r0..r0+nc of src (pitch
 * ld), zero rows after them */
template <int DK> HD void load_rows(float *X, const float *src, int64_t ld, int64_t col0,
                                    const ck_chunk &c, int tid, int nthr)
{
    ck_rows<DK>(X, st_sh<DK>::LX, src + c.r0 * ld, ld, col0, c.nc, tid, nthr);
}

/* G and the update weights e^(G_last - G_t) of the chunk, zero past it */
template <int DK> HD void load_g(const ck_args &a, const ck_chunk &c, int64_t h, int tid, int nthr,
                                 const st_sh<DK> &s)
{
    const float gl = a.G[(c.r0 + c.nc - 1) * a.Hv + h];
    for (int t = tid; t < CK_C; t += nthr) {
        const float gt = t < c.nc ? a.G[(c.r0 + t) * a.Hv + h] : 0.0f;
        s.G[t] = gt;
        s.dec[t] = t < c.nc ? expf(gl - gt) : 0.0f;
    }
}

/* Chunk phase 1: W rows, this block's columns of U, G, the decays. */
template <int DK> HD void st_load_w(const ck_args &a, ck_blk b, int64_t c0, int tid, int nthr,
                                    float *sm)
{
    st_sh<DK> s(sm);
    const ck_chunk c = chunk_of(a.runs, b.y, c0);
    const int64_t h = b.x, j0 = (int64_t)b.z * CK_BV;
    load_rows<DK>(s.X, a.W, a.Hv * DK, h * DK, c, tid, nthr);
    ck_rows<CK_BV>(s.V, CK_BV, a.U + c.r0 * a.Hv * DK, a.Hv * DK, h * DK + j0, c.nc, tid, nthr);
    load_g<DK>(a, c, h, tid, nthr, s);
}

/* The (t, j) tiles of phases 2 and 4: 2 rows x 2 columns each, C/2 x
 * CK_BV/2 = 256 of them. Rows past the chunk's end are zero in X, V and P,
 * so a tile that straddles the end computes zeros there. */
#define TT 2
#define TJ 2
#define N_TJ ((CK_C / TT) * (CK_BV / TJ))
static_assert(N_TJ == CK_THREADS, "phases 2 and 4: one (t, j) tile a thread");

/* sums over i of X[t][i] S[i][j] for the tile at (t0, j0) */
template <int DK> HD void tile_xs(const st_sh<DK> &s, int t0, int j0, float acc[TT][TJ])
{
    for (int a = 0; a < TT; a++)
        for (int q = 0; q < TJ; q++)
            acc[a][q] = 0.0f;
    for (int i = 0; i < DK; i++) {
        float sv[TJ];
        for (int q = 0; q < TJ; q++)
            sv[q] = s.S[i * st_sh<DK>::LS + j0 + q];
        for (int a = 0; a < TT; a++) {
            const float x = s.X[(t0 + a) * st_sh<DK>::LX + i];
            for (int q = 0; q < TJ; q++)
                acc[a][q] += x * sv[q];
        }
    }
}

/* Chunk phase 2: V' = U - W S (in place of U). */
template <int DK> HD void st_vprime(const ck_args &a, ck_blk b, int64_t c0, int tid, int nthr,
                                    float *sm)
{
    st_sh<DK> s(sm);
    const ck_chunk c = chunk_of(a.runs, b.y, c0);
    for (int e = tid; e < N_TJ; e += nthr) {
        const int t0 = e / (CK_BV / TJ) * TT, j0 = e % (CK_BV / TJ) * TJ;
        if (t0 >= c.nc)
            continue;
        float acc[TT][TJ];
        tile_xs<DK>(s, t0, j0, acc);
        for (int r = 0; r < TT; r++)
            for (int q = 0; q < TJ; q++)
                s.V[(t0 + r) * CK_BV + j0 + q] -= acc[r][q];
    }
}

/* P's rows of the chunk (zero past its end) */
template <int DK> HD void load_p(const ck_args &a, const ck_chunk &c, int64_t h, int tid, int nthr,
                                 const st_sh<DK> &s)
{
    ck_rows<CK_C>(s.P, st_sh<DK>::LP, a.P + c.r0 * a.Hv * CK_C, a.Hv * CK_C, h * CK_C, c.nc, tid,
                  nthr);
}

/* Chunk phase 3: Q rows, P. */
template <int DK> HD void st_load_q(const ck_args &a, ck_blk b, int64_t c0, int tid, int nthr,
                                    float *sm)
{
    st_sh<DK> s(sm);
    const ck_chunk c = chunk_of(a.runs, b.y, c0);
    const int64_t h = b.x;
    load_rows<DK>(s.X, a.qkv, a.ldq, (h % a.Hk) * DK, c, tid, nthr);
    load_p<DK>(a, c, h, tid, nthr, s);
}

/* Chunk phase 4: the outputs of this block's columns. P is zero above its
 * diagonal, so the sum over u may run to the tile's last row. */
template <int DK> HD void st_out(const ck_args &a, ck_blk b, int64_t c0, int tid, int nthr,
                                 float *sm)
{
    st_sh<DK> s(sm);
    const ck_chunk c = chunk_of(a.runs, b.y, c0);
    const int64_t h = b.x, jb = (int64_t)b.z * CK_BV;
    const float scale = 1.0f / sqrtf((float)DK);
    for (int e = tid; e < N_TJ; e += nthr) {
        const int t0 = e / (CK_BV / TJ) * TT, j0 = e % (CK_BV / TJ) * TJ;
        if (t0 >= c.nc)
            continue;
        float o[TT][TJ];
        tile_xs<DK>(s, t0, j0, o);
        for (int r = 0; r < TT; r++) {
            const float eg = expf(s.G[t0 + r]);
            for (int q = 0; q < TJ; q++)
                o[r][q] *= eg;
        }
        const int ue = t0 + TT < c.nc ? t0 + TT : c.nc;
        for (int u = 0; u < ue; u++) {
            float v[TJ];
            for (int q = 0; q < TJ; q++)
                v[q] = s.V[u * CK_BV + j0 + q];
            for (int r = 0; r < TT; r++) {
                const float p = s.P[(t0 + r) * st_sh<DK>::LP + u];
                for (int q = 0; q < TJ; q++)
                    o[r][q] += p * v[q];
            }
        }
        for (int r = 0; r < TT && t0 + r < c.nc; r++)
            for (int q = 0; q < TJ; q++)
                a.out[(c.r0 + t0 + r) * a.ldo + h * DK + jb + j0 + q] = o[r][q] * scale;
    }
}

/* Chunk phase 5: K rows. */
template <int DK> HD void st_load_k(const ck_args &a, ck_blk b, int64_t c0, int tid, int nthr,
                                    float *sm)
{
    st_sh<DK> s(sm);
    const ck_chunk c = chunk_of(a.runs, b.y, c0);
    load_rows<DK>(s.X, a.qkv, a.ldq, (a.Hk + b.x % a.Hk) * DK, c, tid, nthr);
}

/* Chunk phase 6: S <- e^G_last S + sum_t dec_t k_t v'_t^T, a tile of
 * DK/32 rows (i) x 2 columns (j) per thread, 32 x CK_BV/2 = 256 tiles. */
template <int DK> HD void st_update(const ck_args &a, ck_blk b, int64_t c0, int tid, int nthr,
                                    float *sm)
{
    constexpr int TI = DK / 32, UJ = 2;
    static_assert(32 * (CK_BV / UJ) == CK_THREADS, "phase 6: one (i, j) tile a thread");
    st_sh<DK> s(sm);
    const ck_chunk c = chunk_of(a.runs, b.y, c0);
    const float el = expf(s.G[c.nc - 1]);
    for (int e = tid; e < 32 * (CK_BV / UJ); e += nthr) {
        const int i0 = e / (CK_BV / UJ) * TI, j0 = e % (CK_BV / UJ) * UJ;
        float acc[TI][UJ];
        for (int r = 0; r < TI; r++)
            for (int q = 0; q < UJ; q++)
                acc[r][q] = 0.0f;
        for (int t = 0; t < c.nc; t++) {
            const float d = s.dec[t];
            float v[UJ];
            for (int q = 0; q < UJ; q++)
                v[q] = s.V[t * CK_BV + j0 + q];
            for (int r = 0; r < TI; r++) {
                const float x = d * s.X[t * st_sh<DK>::LX + i0 + r];
                for (int q = 0; q < UJ; q++)
                    acc[r][q] += x * v[q];
            }
        }
        for (int r = 0; r < TI; r++)
            for (int q = 0; q < UJ; q++) {
                float *sp = &s.S[(i0 + r) * st_sh<DK>::LS + j0 + q];
                *sp = el * *sp + acc[r][q];
                if (a.ck)       /* the chunk-boundary state, laid out as S */
                    a.ck[(((int64_t)b.y * a.ck_chunks + c0 / CK_C) * a.Hv + b.x) * DK * DK +
                         (int64_t)(b.z * CK_BV + j0 + q) * DK + i0 + r] = *sp;
            }
    }
}

#undef TT
#undef TJ
#undef N_TJ

/* ------------------------------------------------ state on tensor cores */

/* k_chunk_state_tc (the default; Q36_CUDA_CHUNKTC=0 runs the f32 kernel):
 * in its first form, with the f32 kernel's loads, it was no faster; in
 * the cp.async form below the 35B-A3B's pp4096 rose 8.7% and pp512 4.3%
 * (bench/results/2026-12-02-cuda-prefill/, run-f169360). The
 * same blocks and layout (with Q's rows apart), each chunk's three
 * products on tensor cores in TF32 (WMMA m16n16k8, f32 accumulators):
 * every operand rounded to TF32 (a 10-bit mantissa, as f16's, with f32's
 * range), sums in f32.
 *  V' = U - W S             warps 0-3, 16 rows each: acc = -U, += W S,
 *                           negated;
 *  O = diag(e^G) Q S + P V' Q's rows scaled by e^G_t once loaded; warps
 *                           0-3, 16 rows each, times 1/sqrt(dk), through O
 *                           (shared) to the chunk's rows of out;
 *  S <- e^G_last S + K^T diag(dec) V'
 *                           V''s rows scaled by dec_t; warp w the state
 *                           rows 16 m .. + 16 for m = w, w + 8, ...: acc =
 *                           e^G_last S, += K^T V'.
 * Device only (the host emulation runs the f32 phases). It writes no
 * chunk-boundary states: a pass that asks for them (ck_args.ck) takes the
 * f32 kernel. */
#ifdef __CUDA_ARCH__
namespace wm = nvcuda::wmma;
typedef wm::fragment<wm::accumulator, 16, 16, 8, float> tf_acc;
static_assert(CK_BV == 16, "a block's value columns are one WMMA tile wide");
static_assert(CK_C % 16 == 0 && CK_THREADS == 256, "4 row tiles a chunk, 8 warps");

template <class F> __device__ __forceinline__ void tf_round(F &f)
{
    #pragma unroll
    for (int i = 0; i < f.num_elements; i++)
        f.x[i] = wm::__float_to_tf32(f.x[i]);
}

__device__ __forceinline__ void tf_scale(tf_acc &f, float v)
{
    #pragma unroll
    for (int i = 0; i < f.num_elements; i++)
        f.x[i] *= v;
}

/* acc += A B over 8 * K8 columns of A: A row-major at a (pitch la), or
 * column-major (A[r][k] at a[k * la + r]) when ACOL; B row-major at b
 * (pitch lb), or column-major (B[k][n] at b[n * lb + k]) when BCOL */
template <int K8, bool ACOL, bool BCOL = false>
__device__ __forceinline__ void tf_mma(tf_acc &acc, const float *a, int la, const float *b, int lb)
{
    typedef typename std::conditional<ACOL, wm::col_major, wm::row_major>::type AL;
    typedef typename std::conditional<BCOL, wm::col_major, wm::row_major>::type BL;
    #pragma unroll 4
    for (int k = 0; k < K8; k++) {
        wm::fragment<wm::matrix_a, 16, 16, 8, wm::precision::tf32, AL> fa;
        wm::fragment<wm::matrix_b, 16, 16, 8, wm::precision::tf32, BL> fb;
        wm::load_matrix_sync(fa, ACOL ? a + 8 * k * la : a + 8 * k, la);
        wm::load_matrix_sync(fb, BCOL ? b + 8 * k : b + 8 * k * lb, lb);
        tf_round(fa);
        tf_round(fb);
        wm::mma_sync(acc, fa, fb, acc);
    }
}

/* V (rows of CK_BV) = U - W S in place, W's rows at X (pitch LX), S
 * (pitch LS): warps 0-3, 16 rows each */
template <int DK> __device__ void tc_vprime_at(float *V, const float *X, const float *S, int w)
{
    if (w >= CK_C / 16)
        return;
    tf_acc acc;
    wm::load_matrix_sync(acc, V + 16 * w * CK_BV, CK_BV, wm::mem_row_major);
    tf_scale(acc, -1.0f);
    tf_mma<DK / 8, false>(acc, X + 16 * w * st_sh<DK>::LX, st_sh<DK>::LX, S, st_sh<DK>::LS);
    tf_scale(acc, -1.0f);
    wm::store_matrix_sync(V + 16 * w * CK_BV, acc, CK_BV, wm::mem_row_major);
}

template <int DK> __device__ void tc_vprime(const st_sh<DK> &s, int w)
{
    tc_vprime_at<DK>(s.V, s.X, s.S, w);
}

/* 16-byte copies (cp.async) of COLS columns from col0 of the chunk's rows
 * of src (pitch ld) to dst (pitch LD), zeros past the chunk: every copy of
 * the block in flight at once */
template <int COLS, int LD>
__device__ __forceinline__ void tc_cp_rows(float *dst, const float *src, int64_t ld, int64_t col0,
                                           const ck_chunk &c, int tid)
{
    static_assert(COLS % 4 == 0 && LD % 4 == 0, "16-byte rows");
    for (int e = tid; e < CK_C * (COLS / 4); e += CK_THREADS) {
        const int t = e / (COLS / 4), i = 4 * (e % (COLS / 4));
        const bool in = t < c.nc;
        cp16(dst + t * LD + i, src + (c.r0 + (in ? t : 0)) * ld + col0 + i, in);
    }
}

/* The chunk's W rows (to X) and this block's columns of U (to V) */
template <int DK> __device__ void tc_cp_w(const ck_args &a, ck_blk b, const ck_chunk &c, int tid,
                                         const st_sh<DK> &s)
{
    const int64_t h = b.x;
    tc_cp_rows<DK, st_sh<DK>::LX>(s.X, a.W, a.Hv * DK, h * DK, c, tid);
    tc_cp_rows<CK_BV, CK_BV>(s.V, a.U, a.Hv * DK, h * DK + (int64_t)b.z * CK_BV, c, tid);
}

/* Q's rows as this thread copied them (tc_cp_rows' elements for tid),
 * times e^G_t, once its copies have landed */
template <int DK> __device__ void tc_scale_q_at(float *XQ, const float *G, int tid)
{
    for (int e = tid; e < CK_C * (DK / 4); e += CK_THREADS) {
        const int t = e / (DK / 4), i = 4 * (e % (DK / 4));
        const float g = expf(G[t]);
        float4 *p = (float4 *)(XQ + t * st_sh<DK>::LX + i);
        const float4 v = *p;
        *p = make_float4(g * v.x, g * v.y, g * v.z, g * v.w);
    }
}

template <int DK> __device__ void tc_scale_q(float *XQ, const st_sh<DK> &s, int tid)
{
    tc_scale_q_at<DK>(XQ, s.G, tid);
}

/* XQ: the chunk's Q rows, scaled by e^G_t */
template <int DK> __device__ void tc_out(const st_sh<DK> &s, const float *XQ, int w)
{
    if (w >= CK_C / 16)
        return;
    tf_acc acc;
    wm::fill_fragment(acc, 0.0f);
    tf_mma<DK / 8, false>(acc, XQ + 16 * w * st_sh<DK>::LX, st_sh<DK>::LX, s.S, st_sh<DK>::LS);
    tf_mma<CK_C / 8, false>(acc, s.P + 16 * w * st_sh<DK>::LP, st_sh<DK>::LP, s.V, CK_BV);
    tf_scale(acc, 1.0f / sqrtf((float)DK));
    wm::store_matrix_sync(s.O + 16 * w * CK_BV, acc, CK_BV, wm::mem_row_major);
}

/* the chunk's output rows to out; V' rows times their update weights */
template <int DK> __device__ void tc_emit(const ck_args &a, ck_blk b, int64_t c0, int tid,
                                         const st_sh<DK> &s)
{
    const ck_chunk c = chunk_of(a.runs, b.y, c0);
    const int64_t col = b.x * DK + (int64_t)b.z * CK_BV;
    for (int e = tid; e < CK_C * CK_BV; e += CK_THREADS) {
        const int t = e / CK_BV, j = e % CK_BV;
        if (t < c.nc)
            a.out[(c.r0 + t) * a.ldo + col + j] = s.O[e];
        s.V[e] *= s.dec[t];
    }
}

/* S <- el S + K^T V, K's rows at X */
template <int DK> __device__ void tc_update_at(float *S, const float *X, const float *V, float el,
                                              int w)
{
    for (int m = w; m < DK / 16; m += CK_THREADS / 32) {
        tf_acc acc;
        float *St = S + 16 * m * st_sh<DK>::LS;
        wm::load_matrix_sync(acc, St, st_sh<DK>::LS, wm::mem_row_major);
        tf_scale(acc, el);
        tf_mma<CK_C / 8, true>(acc, X + 16 * m, st_sh<DK>::LX, V, CK_BV);
        wm::store_matrix_sync(St, acc, st_sh<DK>::LS, wm::mem_row_major);
    }
}

template <int DK> __device__ void tc_update(const ck_args &a, ck_blk b, int64_t c0, int w,
                                           const st_sh<DK> &s)
{
    const ck_chunk c = chunk_of(a.runs, b.y, c0);
    tc_update_at<DK>(s.S, s.X, s.V, expf(s.G[c.nc - 1]), w);
}
#endif

/* ------------------------------------- mma.sync steps from shared memory */

/* The products of k_chunk_state_wide (cuda_chunk_wide.cu), of
 * k_chunk_prep_tc's mma form (cuda_chunk_prep.cu) and of k_chunk_out's
 * (cuda_chunk.cu), each the default unless its switch says otherwise
 * (cuda.h: Q36_CUDA_CHUNKBV=0, Q36_CUDA_CHUNKPREP=1, Q36_CUDA_CHUNKOUTM=0):
 * m16n8k8 TF32 steps (cuda_mma.h: mma_tf32) whose fragments are read from
 * shared memory by index, offsets fixed at compile time in the unrolled
 * steps (LDS; WMMA's loads from generic pointers cost 64-bit address
 * arithmetic for every element and generic loads: bench/results/
 * 2026-12-06-cuda-session38/, run1). Lane (g, t) = (lane / 4, lane % 4)
 * holds A's (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4), B's (t, g),
 * (t + 4, g), and the sums' (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8,
 * 2t + 1). */
#ifdef __CUDA_ARCH__
/* x's bits rounded to TF32 (to nearest, ties away): the product ignores
 * the low 13 bits. cvt.rna.tf32.f32 gives the same for finite x (it leaves
 * infinities and NaN alone, in two instructions) */
__device__ __forceinline__ uint32_t tf32_bits(float x)
{
    return __float_as_uint(x) + 0x1000u;
}

/* x as TF32's rounding hi and the rounding of the rest lo (3xTF32) */
__device__ __forceinline__ void tf32_split(float x, uint32_t *hi, uint32_t *lo)
{
    *hi = tf32_bits(x) & 0xffffe000u;
    *lo = tf32_bits(x - __uint_as_float(*hi));
}

/* acc[h] (h < NH: sums of a 16-row tile's columns 8 h ..) += A B over
 * 8 K8 columns of A: A's element (r, k) at a[r ra + k ka], B's (k, n) at
 * b[k kb + n nb]. X3: each product as three TF32 products, a_hi b_lo +
 * a_lo b_hi + a_hi b_hi (about f32's precision), else one. */
template <int K8, int NH, bool X3>
__device__ __forceinline__ void ck_mma(float acc[NH][4], const float *a, int ra, int ka,
                                       const float *b, int kb, int nb, int lane)
{
    const int g = lane >> 2, t = lane & 3;
    const float *pa = a + g * ra + t * ka, *pb = b + t * kb + g * nb;
    #pragma unroll
    for (int k = 0; k < K8; k++) {
        const float x[4] = { pa[8 * k * ka], pa[8 * ra + 8 * k * ka], pa[(8 * k + 4) * ka],
                             pa[8 * ra + (8 * k + 4) * ka] };
        uint32_t ah[4], al[4];
        #pragma unroll
        for (int i = 0; i < 4; i++) {
            if (X3)
                tf32_split(x[i], &ah[i], &al[i]);
            else
                ah[i] = tf32_bits(x[i]);
        }
        #pragma unroll
        for (int h = 0; h < NH; h++) {
            const float y0 = pb[8 * k * kb + 8 * h * nb], y1 = pb[(8 * k + 4) * kb + 8 * h * nb];
            if (X3) {
                uint32_t bh0, bl0, bh1, bl1;
                tf32_split(y0, &bh0, &bl0);
                tf32_split(y1, &bh1, &bl1);
                mma_tf32(acc[h], ah[0], ah[1], ah[2], ah[3], bl0, bl1);
                mma_tf32(acc[h], al[0], al[1], al[2], al[3], bh0, bh1);
                mma_tf32(acc[h], ah[0], ah[1], ah[2], ah[3], bh0, bh1);
            } else {
                mma_tf32(acc[h], ah[0], ah[1], ah[2], ah[3], tf32_bits(y0), tf32_bits(y1));
            }
        }
    }
}

/* a 16-row tile's sums, times m, from or to p (pitch ld, NH groups of 8
 * columns) */
template <int NH> __device__ __forceinline__ void ck_ld(float acc[NH][4], const float *p, int ld,
                                                       float m, int lane)
{
    const int g = lane >> 2, t = lane & 3;
    #pragma unroll
    for (int h = 0; h < NH; h++) {
        const float2 u = *(const float2 *)(p + g * ld + 8 * h + 2 * t),
                     v = *(const float2 *)(p + (g + 8) * ld + 8 * h + 2 * t);
        acc[h][0] = m * u.x; acc[h][1] = m * u.y; acc[h][2] = m * v.x; acc[h][3] = m * v.y;
    }
}
template <int NH> __device__ __forceinline__ void ck_st(const float acc[NH][4], float *p, int ld,
                                                       float m, int lane)
{
    const int g = lane >> 2, t = lane & 3;
    #pragma unroll
    for (int h = 0; h < NH; h++) {
        *(float2 *)(p + g * ld + 8 * h + 2 * t) = make_float2(m * acc[h][0], m * acc[h][1]);
        *(float2 *)(p + (g + 8) * ld + 8 * h + 2 * t) = make_float2(m * acc[h][2], m * acc[h][3]);
    }
}
#endif

/* cuda_chunk_prep.cu: k_chunk_prep_tc<DK> for a's chunks (grid: chunk,
 * value head, run), its shared memory asked first; false when the device
 * cannot give it (nothing queued) or the launch failed (the context's
 * error is set). DK 32, 64, 128 or 256. mma: its products as ck_mma steps
 * (the default), else WMMA's (Q36_CUDA_CHUNKPREP=1). */
template <int DK> bool ck_launch_prep_tc(be_ctx *be, const ck_args &a, dim3 grid, bool mma);

/* cuda_chunk_wide.cu: k_chunk_state_split's work with its products as
 * mma.sync steps, bv (16 or 32) value columns a block
 * (k_chunk_state_wide<DK, bv / 16>, grid: value head, run, DK / bv column
 * blocks), its shared memory asked first; as ck_launch_prep_tc. DK 32, 64
 * or 128. */
template <int DK> bool ck_launch_state_wide(be_ctx *be, const ck_args &a, int n_seq, int bv);

/* cuda_chunk_pb.cu: k_chunk_prep_pb<DK> (cuda_chunk_pb.h), as
 * ck_launch_prep_tc; qkv's rows 16-byte aligned (V's copies are cp.async) */
template <int DK> bool ck_launch_prep_pb(be_ctx *be, const ck_args &a, dim3 grid);

#endif
