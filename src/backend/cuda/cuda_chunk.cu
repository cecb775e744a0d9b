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
 * checks the index arithmetic without a GPU (tests/test_deltanet_chunk.c). */
#include "cuda.h"
#include "cuda_chunk.h"

#include <assert.h>
#include <mma.h>
#include <math.h>
#include <type_traits>
#include <stdlib.h>
#include <string.h>

#define CK_C       64      /* tokens per chunk */
#define CK_BV      16      /* value columns of the state per block of k_chunk_state */
#define CK_THREADS 256

#define HD __host__ __device__ inline

extern "C" bool cuda_chunk_enabled(const be_shape *s)
{
    return cuda_fast_path(s, "Q36_CUDA_CHUNKED");
}

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
 * floats. */
template <int COLS> HD void ck_rows(float *dst, int64_t ldd, const float *src, int64_t lds,
                                    int64_t col0, int nrows, int tid, int nthr)
{
    if (COLS % 4 == 0 && (uintptr_t)(src + col0) % 16 == 0 && lds % 4 == 0) {
        constexpr int C4 = COLS / 4;
        ck_batched<float4>(CK_C * C4, tid, nthr,
                           [&](int e) {
                               const int t = e / C4;
                               return t < nrows ? *(const float4 *)(src + t * lds + col0 + 4 * (e % C4))
                                                : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                           },
                           [&](int e, float4 v) {
                               float *d = dst + e / C4 * ldd + 4 * (e % C4);
                               d[0] = v.x;
                               d[1] = v.y;
                               d[2] = v.z;
                               d[3] = v.w;
                           });
    } else {
        ck_batched<float>(CK_C * COLS, tid, nthr,
                          [&](int e) {
                              return e / COLS < nrows ? src[e / COLS * lds + col0 + e % COLS] : 0.0f;
                          },
                          [&](int e, float v) { dst[e / COLS * ldd + e % COLS] = v; });
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

/* Block (value head x, run y, column block z). */
HD float *state_row(const ck_args &a, ck_blk b)
{
    return a.S + ((int64_t)a.runs[4 * b.y] * a.Hv + b.x) * a.ldS;
}

template <int DK> HD void st_init(const ck_args &a, ck_blk b, int tid, int nthr, float *sm)
{
    st_sh<DK> s(sm);
    const float *Sg = state_row(a, b);
    const int j0 = b.z * CK_BV;
    for (int e = tid; e < DK * CK_BV; e += nthr) {
        const int jl = e / DK, i = e % DK;
        s.S[i * st_sh<DK>::LS + jl] = Sg[(int64_t)(j0 + jl) * DK + i];
    }
}

template <int DK> HD void st_fini(const ck_args &a, ck_blk b, int tid, int nthr, float *sm)
{
    st_sh<DK> s(sm);
    float *Sg = state_row(a, b);
    const int j0 = b.z * CK_BV;
    for (int e = tid; e < DK * CK_BV; e += nthr) {
        const int jl = e / DK, i = e % DK;
        Sg[(int64_t)(j0 + jl) * DK + i] = s.S[i * st_sh<DK>::LS + jl];
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

/* the (row, column) 16 x 16 tile n of the 10 on or below the diagonal */
__device__ __forceinline__ void pt_tile(int n, int *r, int *c)
{
    int rr = 0;
    while (n > rr) {
        n -= rr + 1;
        rr++;
    }
    *r = rr;
    *c = n;
}

template <int DK> __device__ void pt_gram(const float *X, const float *K, float *M, int w)
{
    using L = pt_sh<DK>;
    for (int n = w; n < 10; n += CK_THREADS / 32 / 2) {
        int r, c;
        pt_tile(n, &r, &c);
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

template <int DK>
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
    if (w < 4)
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
    pt_solve<DK>(T, K, w);
    pt_solve<DK>(T, X, w);
    __syncthreads();
    pt_store<DK>(a.W, K, c, a.Hv, h, tid);
    pt_store<DK>(a.U, X, c, a.Hv, h, tid);
#endif
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

/* the chunk's state slot in Sb */
HD float *sb_slot(const ck_args &a, const ck_chunk &c, int s, int64_t h, int dk)
{
    return a.Sb + ((c.r0 / CK_C + s) * a.Hv + h) * (int64_t)dk * dk;
}

/* k_chunk_out's blocks take OC = min(dk, 64) output columns each (dk / OC
 * blocks a chunk and head: two blocks an SM at dk = 128, where one block
 * for all 128 columns needed 153 KB and ran alone). Its shared memory: Q
 * rows (then O), the slot's state rows j of the block's columns (dk i
 * each: B column-major), P, the block's columns of V' */
template <int DK> struct so_sh {
    static constexpr int OC = DK < 64 ? DK : 64, NC = DK / OC;
    static constexpr int LX = DK + 4, LT = DK + 4, LP = CK_C + 4, LV = OC + 4;
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
    for (int64_t c0 = 0, it = 0; c0 < n; c0 += CK_C, it++) {
        const ck_chunk c = chunk_of(a.runs, b.y, c0);
        float *V = sms + L::oV + (it & 1) * CK_C * CK_BV;
        const float gl = a.G[(c.r0 + c.nc - 1) * a.Hv + h];
        for (int t = tid; t < CK_C; t += CK_THREADS) {     /* load_g's */
            const float gt = t < c.nc ? a.G[(c.r0 + t) * a.Hv + h] : 0.0f;
            G[t] = gt;
            dec[t] = t < c.nc ? expf(gl - gt) : 0.0f;
        }
        cp_wait<1>();                  /* W and U (K may still be in flight) */
        __syncthreads();
        if (w < CK_C / 16) {
            tc_vprime_at<DK>(V, XW, S, w);
        } else {                       /* the state before the chunk, this block's columns */
            float *dst = sb_slot(a, c, b.y, h, DK);
            for (int e = tid - 32 * (CK_C / 16); e < DK * CK_BV; e += CK_THREADS - 32 * (CK_C / 16)) {
                const int jl = e / DK, i = e % DK;
                dst[(j0 + jl) * DK + i] = S[i * L::LS + jl];
            }
        }
        __syncthreads();               /* W is spent, V' formed */
        if (c0 + CK_C < n) {
            const ck_chunk cn = chunk_of(a.runs, b.y, c0 + CK_C);
            tc_cp_rows<DK, L::LX>(XW, a.W, a.Hv * DK, h * DK, cn, tid);
            tc_cp_rows<CK_BV, CK_BV>(sms + L::oV + ((it + 1) & 1) * CK_C * CK_BV, a.U, a.Hv * DK,
                                     h * DK + j0, cn, tid);
        }
        cp_commit();
        for (int e = tid; e < CK_C * CK_BV; e += CK_THREADS) {    /* V' out, times dec */
            const int t = e / CK_BV, j = e % CK_BV;
            if (t < c.nc)
                a.U[((c.r0 + t) * a.Hv + h) * DK + j0 + j] = V[e];
            V[e] *= dec[t];
        }
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

template <int DK>
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
    const int run = (int)blockIdx.z / L::NC, oc0 = OC * ((int)blockIdx.z % L::NC);
    const ck_chunk c = chunk_of(a.runs, run, (int64_t)blockIdx.x * CK_C);
    if (!c.nc)
        return;
    const int tid = threadIdx.x, w = tid / 32;
    const int64_t h = blockIdx.y;
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
    tf_acc acc[PER];
    #pragma unroll
    for (int q = 0; q < PER; q++) {    /* tc_out's, tile (m, jt) of the block's columns */
        const int n = w + q * (CK_THREADS / 32), m = n % (CK_C / 16), jt = n / (CK_C / 16);
        wm::fill_fragment(acc[q], 0.0f);
        tf_mma<DK / 8, false, true>(acc[q], Q + 16 * m * L::LX, L::LX, St + 16 * jt * L::LT, L::LT);
        tf_mma<CK_C / 8, false>(acc[q], P + 16 * m * L::LP, L::LP, V + 16 * jt, L::LV);
        tf_scale(acc[q], 1.0f / sqrtf((float)DK));
    }
    __syncthreads();                   /* every warp has read Q */
    #pragma unroll
    for (int q = 0; q < PER; q++) {
        const int n = w + q * (CK_THREADS / 32), m = n % (CK_C / 16), jt = n / (CK_C / 16);
        wm::store_matrix_sync(Q + 16 * m * L::LX + 16 * jt, acc[q], L::LX, wm::mem_row_major);
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

template <int DK> static bool launch(be_ctx *be, const ck_args &a, int n_seq, int64_t max_chunks)
{
    cuda_ctx *c = cuda_ctx_of(be);
    cudaStream_t st = c->stream;
    /* the tensor-core kernel's 16-byte copies need 16-byte rows of qkv */
    const bool tc = c->chunk_tc && !a.ck && a.ldq % 4 == 0 && (uintptr_t)a.qkv % 16 == 0;
    const bool ptc = tc && c->chunk_prep_tc;
    /* the split kernels when their scratch was given and their shared
     * memory is there (DK <= 128) */
    const size_t bo = so_sh<DK>::floats * sizeof(float);
    const bool split = tc && a.Sb && DK <= 128 && cuda_smem_optin(be, (const void *)k_chunk_out<DK>, bo);
    void (*state)(ck_args) = split ? k_chunk_state_split<DK> : tc ? k_chunk_state_tc<DK> : k_chunk_state<DK>;
    void (*prep)(ck_args) = ptc ? k_chunk_prep_tc<DK> : k_chunk_prep<DK>;
    const size_t bp = (ptc ? pt_sh<DK>::floats : prep_sh<DK>::floats) * sizeof(float),
                 bs = split ? sp_sh<DK>::floats * sizeof(float)
                    : tc    ? tc_smem_bytes<DK>() : st_sh<DK>::floats * sizeof(float);
    if (!cuda_smem_optin(be, (const void *)prep, bp) ||
        !cuda_smem_optin(be, (const void *)state, bs))
        return false;
    const dim3 per_chunk((unsigned)max_chunks, (unsigned)a.Hv, (unsigned)n_seq);
    cuda_launch(prep, per_chunk, CK_THREADS, bp, st, a);
    if (!CUDA_LAUNCHED(be, ptc ? "k_chunk_prep_tc" : "k_chunk_prep"))
        return false;
    cuda_launch(state, dim3((unsigned)a.Hv, (unsigned)n_seq, (unsigned)(DK / CK_BV)), CK_THREADS,
                bs, st, a);
    if (!CUDA_LAUNCHED(be, split ? "k_chunk_state_split" : tc ? "k_chunk_state_tc" : "k_chunk_state"))
        return false;
    if (!split)
        return true;
    cuda_launch(k_chunk_out<DK>, dim3((unsigned)max_chunks, (unsigned)a.Hv, (unsigned)(n_seq * so_sh<DK>::NC)),
                CK_THREADS, bo, st, a);
    return CUDA_LAUNCHED(be, "k_chunk_out");
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

template <int DK>
static void emulate(const ck_args &a, int n_seq, int64_t max_chunks, float *sm, size_t sm_floats)
{
    const int nt = CK_THREADS;
    for (int z = 0; z < n_seq; z++)
        for (int y = 0; y < a.Hv; y++)
            for (int x = 0; x < max_chunks; x++) {
                const ck_blk b = { x, y, z };
                for (size_t i = 0; i < sm_floats; i++)
                    sm[i] = NAN;
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
                                  int64_t ldo, float *ckpt)
{
    if (dk != 32 && dk != 64 && dk != 128 && dk != 256)
        return -1;
    int64_t max_chunks = 1;
    for (int s = 0; s < n_seq; s++) {
        const int64_t nch = (runs[4 * s + 2] + CK_C - 1) / CK_C;
        max_chunks = nch > max_chunks ? nch : max_chunks;
    }
    const size_t sm_floats = prep_sh<256>::floats > st_sh<256>::floats ? prep_sh<256>::floats
                                                                        : st_sh<256>::floats;
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
    case 32: emulate<32>(a, n_seq, max_chunks, sm, sm_floats); break;
    case 64: emulate<64>(a, n_seq, max_chunks, sm, sm_floats); break;
    case 128: emulate<128>(a, n_seq, max_chunks, sm, sm_floats); break;
    default: emulate<256>(a, n_seq, max_chunks, sm, sm_floats); break;
    }
    free(scratch);
    free(sm);
    return 0;
}
