/* cuda_fattn.cu: the CUDA backend's attention for prompt batches
 * (be_attention of at least FA_MIN_ROWS query rows in fast mode:
 * cuda_fattn.h). The split kernel of cuda_seq.cu gives every query row its
 * own pass over the K/V rows, so a prompt of T rows reads its cache about
 * T times; here FA_BR query rows of one run and one query head share each
 * tile of FA_BC K/V rows through shared memory.
 *
 * One block per (tile of FA_BR query rows of a run, query head, run): the
 * query rows once, then the K/V tiles up to the tile's last position in
 * order, each: the FA_BR x FA_BC scores (causal mask: key j of row t
 * counts when j <= its position), an online softmax per row (max, the
 * rescale factor of what came before, the probabilities, their sum), and
 * the probability-weighted V rows into each thread's 4 rows x head_dim/32
 * outputs. Numerics as cuda_seq.cu's: scores in f32, expf, f16 caches:
 * q rounded to f16 first and the probabilities before they weigh V.
 *
 * As in cuda_chunk.cu, the kernel is phase functions that also run on the
 * host: cuda_fattn_emulate checks its arithmetic on the CPU. */
#include "cuda.h"
#include "cuda_fattn.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FA_BR      32      /* query rows of a block: 8 warps x 4 */
#define FA_BC      32      /* K/V rows of a tile: one a lane */
#define FA_THREADS 256

#define HD_ __host__ __device__ inline

extern "C" bool cuda_fattn_enabled(const be_shape *s)
{
    return cuda_fast_path(s, "Q36_CUDA_FATTN");
}


HD_ float fa_load(const float *p) { return *p; }
HD_ float fa_load(const __half *p) { return __half2float(*p); }

/* Query tile x of run z: its first batch row, rows (0: none), the
 * position of its first row, the keys its last row sees. */
typedef struct fa_tile { int64_t slot, r0, p0, nkeys; int rows; } fa_tile;

HD_ fa_tile fa_tile_of(const fa_args &a, int x, int z)
{
    const int64_t n = a.runs[4 * z + 2], t0 = (int64_t)x * FA_BR;
    fa_tile t;
    t.slot = a.runs[4 * z];
    t.r0 = a.runs[4 * z + 1] + t0;
    t.p0 = a.runs[4 * z + 3] + t0;
    t.rows = t0 < n ? (int)(n - t0 < FA_BR ? n - t0 : FA_BR) : 0;
    t.nkeys = t.p0 + t.rows;
    return t;
}

/* Shared memory: Q rows and K rows (pitch HD + 1: the scores read K down
 * a column across a warp), V rows, scores then probabilities (pitch
 * FA_BC + 1), and per row the running max, sum and rescale factor. */
template <int HD> struct fa_sh {
    static constexpr int LQ = HD + 1, LP = FA_BC + 1;
    static constexpr size_t floats = (size_t)FA_BR * LQ + (size_t)FA_BC * LQ + (size_t)FA_BC * HD +
                                     FA_BR * LP + 3 * FA_BR;
    float *Q, *K, *V, *P, *m, *l, *f;
    HD_ explicit fa_sh(float *s)
        : Q(s), K(s + FA_BR * LQ), V(s + (FA_BR + FA_BC) * LQ),
          P(s + (FA_BR + FA_BC) * LQ + FA_BC * HD),
          m(s + (FA_BR + FA_BC) * LQ + FA_BC * HD + FA_BR * LP),
          l(s + (FA_BR + FA_BC) * LQ + FA_BC * HD + FA_BR * LP + FA_BR),
          f(s + (FA_BR + FA_BC) * LQ + FA_BC * HD + FA_BR * LP + 2 * FA_BR) {}
};

/* Thread tid: rows 4 (tid / 32) .. + 3 of the tile; in the scores key
 * tid % 32, in the outputs dims tid % 32 + 32 c. */
#define FA_NC(HD) ((HD) / 32)

/* Phase 0: the running max and sum, the outputs, the query rows (rounded
 * to f16 for an f16 K cache; zero past the run). */
template <typename CK, int HD>
HD_ void fa_begin(const fa_args &a, const fa_tile &t, int64_t h, int tid, int nthr, float *sm,
                  float *acc)
{
    fa_sh<HD> s(sm);
    for (int r = tid; r < FA_BR; r += nthr) {
        s.m[r] = -INFINITY;
        s.l[r] = 0.0f;
    }
    for (int i = 0; i < 4 * FA_NC(HD); i++)
        acc[i] = 0.0f;
    for (int e = tid; e < FA_BR * HD; e += nthr) {
        const int r = e / HD, i = e % HD;
        float v = 0.0f;
        if (r < t.rows) {
            v = a.q[(t.r0 + r) * a.ldq + h * HD + i];
            if (sizeof(CK) == 2)
                v = __half2float(__float2half_rn(v));
        }
        s.Q[r * fa_sh<HD>::LQ + i] = v;
    }
}

/* Phase 1 of a tile: K/V rows j0.. of the slot (zero past the keys the
 * tile's rows see). */
template <typename CK, typename CV, int HD>
HD_ void fa_load_kv(const fa_args &a, const fa_tile &t, int64_t hk, int64_t j0, int tid, int nthr,
                    float *sm)
{
    fa_sh<HD> s(sm);
    const CK *kc = (const CK *)a.kc;
    const CV *vc = (const CV *)a.vc;
    for (int e = tid; e < FA_BC * HD; e += nthr) {
        const int j = e / HD, i = e % HD;
        float kv = 0.0f, vv = 0.0f;
        if (j0 + j < t.nkeys) {
            const int64_t row = t.slot * a.kv_rows + j0 + j;
            kv = fa_load(kc + row * a.ldk + hk * HD + i);
            vv = fa_load(vc + row * a.ldv + hk * HD + i);
        }
        s.K[j * fa_sh<HD>::LQ + i] = kv;
        s.V[j * HD + i] = vv;
    }
}

/* Phase 2: scores times scale; -inf where the key is past the row's
 * position or the row past the run. */
template <int HD>
HD_ void fa_scores(const fa_args &a, const fa_tile &t, int64_t j0, int tid, float *sm)
{
    fa_sh<HD> s(sm);
    const int r0 = tid / 32 * 4, j = tid % 32;
    float d[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
    for (int i = 0; i < HD; i++) {
        const float kv = s.K[j * fa_sh<HD>::LQ + i];
        for (int r = 0; r < 4; r++)
            d[r] += s.Q[(r0 + r) * fa_sh<HD>::LQ + i] * kv;
    }
    for (int r = 0; r < 4; r++) {
        const bool in = r0 + r < t.rows && j0 + j <= t.p0 + r0 + r;
        s.P[(r0 + r) * fa_sh<HD>::LP + j] = in ? d[r] * a.scale : -INFINITY;
    }
}

/* Phase 3, a thread a row: the online softmax over the tile's scores;
 * the probabilities replace them (rounded to f16 for an f16 V cache). */
template <typename CV, int HD>
HD_ void fa_softmax(int tid, int nthr, float *sm)
{
    fa_sh<HD> s(sm);
    for (int r = tid; r < FA_BR; r += nthr) {
        float *p = s.P + r * fa_sh<HD>::LP;
        float mx = -INFINITY;
        for (int j = 0; j < FA_BC; j++)
            mx = fmaxf(mx, p[j]);
        const float mo = s.m[r], mn = fmaxf(mo, mx);
        if (mn == -INFINITY) {          /* nothing seen yet: all masked */
            for (int j = 0; j < FA_BC; j++)
                p[j] = 0.0f;
            s.f[r] = 1.0f;
            continue;
        }
        float sum = 0.0f;
        for (int j = 0; j < FA_BC; j++) {
            float e = expf(p[j] - mn);
            sum += e;
            if (sizeof(CV) == 2)
                e = __half2float(__float2half_rn(e));
            p[j] = e;
        }
        const float f = expf(mo - mn);
        s.f[r] = f;
        s.l[r] = s.l[r] * f + sum;
        s.m[r] = mn;
    }
}

/* Phase 4: the outputs rescaled, plus the probability-weighted V rows. */
template <int HD> HD_ void fa_pv(int tid, float *sm, float *acc)
{
    fa_sh<HD> s(sm);
    const int r0 = tid / 32 * 4, d0 = tid % 32;
    for (int r = 0; r < 4; r++) {
        const float f = s.f[r0 + r];
        for (int c = 0; c < FA_NC(HD); c++)
            acc[r * FA_NC(HD) + c] *= f;
    }
    for (int j = 0; j < FA_BC; j++) {
        float v[FA_NC(HD)];
        for (int c = 0; c < FA_NC(HD); c++)
            v[c] = s.V[j * HD + d0 + 32 * c];
        for (int r = 0; r < 4; r++) {
            const float p = s.P[(r0 + r) * fa_sh<HD>::LP + j];
            for (int c = 0; c < FA_NC(HD); c++)
                acc[r * FA_NC(HD) + c] += p * v[c];
        }
    }
}

template <int HD>
HD_ void fa_store(const fa_args &a, const fa_tile &t, int64_t h, int tid, float *sm,
                  const float *acc)
{
    fa_sh<HD> s(sm);
    const int r0 = tid / 32 * 4, d0 = tid % 32;
    for (int r = 0; r < 4 && r0 + r < t.rows; r++) {
        const float inv = 1.0f / s.l[r0 + r];
        for (int c = 0; c < FA_NC(HD); c++)
            a.out[(t.r0 + r0 + r) * a.ldo + h * HD + d0 + 32 * c] = acc[r * FA_NC(HD) + c] * inv;
    }
}

/* ---------------------------------------------------------------- kernel */

template <typename CK, typename CV, int HD>
__global__ void __launch_bounds__(FA_THREADS) k_fattn(fa_args a)
{
    cuda_pdl_enter();
    extern __shared__ float sm[];
    const fa_tile t = fa_tile_of(a, (int)blockIdx.x, (int)blockIdx.z);
    if (!t.rows)
        return;
    const int tid = threadIdx.x;
    const int64_t h = blockIdx.y, hk = h / a.group;
    float acc[4 * FA_NC(HD)];
    fa_begin<CK, HD>(a, t, h, tid, FA_THREADS, sm, acc);
    __syncthreads();
    for (int64_t j0 = 0; j0 < t.nkeys; j0 += FA_BC) {
        fa_load_kv<CK, CV, HD>(a, t, hk, j0, tid, FA_THREADS, sm);
        __syncthreads();
        fa_scores<HD>(a, t, j0, tid, sm);
        __syncthreads();
        fa_softmax<CV, HD>(tid, FA_THREADS, sm);
        __syncthreads();
        fa_pv<HD>(tid, sm, acc);
        __syncthreads();
    }
    fa_store<HD>(a, t, h, tid, sm, acc);
}

template <typename CK, typename CV, int HD>
static void launch(be_ctx *be, const fa_args &a, dim3 grid)
{
    const size_t bytes = fa_sh<HD>::floats * sizeof(float);
    if (!cuda_smem_optin(be, (const void *)k_fattn<CK, CV, HD>, bytes))
        return;
    cuda_launch(k_fattn<CK, CV, HD>, grid, FA_THREADS, bytes, cuda_ctx_of(be)->stream, a);
    CUDA_LAUNCHED(be, "k_fattn");
}

template <int HD>
static void launch_hd(be_ctx *be, const fa_args &a, dim3 grid, bool kf16, bool vf16)
{
    if (kf16 && vf16)
        launch<__half, __half, HD>(be, a, grid);
    else if (kf16)
        launch<__half, float, HD>(be, a, grid);
    else if (vf16)
        launch<float, __half, HD>(be, a, grid);
    else
        launch<float, float, HD>(be, a, grid);
}

bool cuda_fattn(be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc,
                const be_batch *b, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                float scale, be_tensor *out)
{
    if (head_dim != 64 && head_dim != 128 && head_dim != 256)
        return false;
    int64_t max_n = 0;
    for (int s = 0; s < b->n_seq; s++)
        max_n = b->seq[s].n_rows > max_n ? b->seq[s].n_rows : max_n;
    const fa_args a = { (const float *)q->data, q->ld, kc->data, vc->data, kc->ld, vc->ld,
                        (const int32_t *)b->runs->data, b->kv_rows, n_head / n_head_kv, scale,
                        (float *)out->data, out->ld };
    if (cuda_ctx_of(be)->fattn_tc && cuda_fattn_tc(be, &a, kc->f16 && vc->f16, max_n, n_head,
                                                   b->n_seq, head_dim))
        return true;
    const dim3 grid((unsigned)((max_n + FA_BR - 1) / FA_BR), (unsigned)n_head, (unsigned)b->n_seq);
    switch (head_dim) {
    case 64: launch_hd<64>(be, a, grid, kc->f16, vc->f16); break;
    case 128: launch_hd<128>(be, a, grid, kc->f16, vc->f16); break;
    default: launch_hd<256>(be, a, grid, kc->f16, vc->f16); break;
    }
    return true;
}

/* -------------------------------------------------------- host emulation */

template <typename C, int HD>
static void emulate(const fa_args &a, int n_seq, int64_t n_head, float *sm, float *acc)
{
    const int nt = FA_THREADS, na = 4 * FA_NC(HD);
    for (int z = 0; z < n_seq; z++)
        for (int64_t h = 0; h < n_head; h++)
            for (int x = 0; x * FA_BR < a.runs[4 * z + 2]; x++) {
                const fa_tile t = fa_tile_of(a, x, z);
                const int64_t hk = h / a.group;
                for (size_t i = 0; i < fa_sh<HD>::floats; i++)
                    sm[i] = NAN;
                for (int tid = 0; tid < nt; tid++)
                    fa_begin<C, HD>(a, t, h, tid, nt, sm, acc + tid * na);
                for (int64_t j0 = 0; j0 < t.nkeys; j0 += FA_BC) {
                    for (int tid = 0; tid < nt; tid++)
                        fa_load_kv<C, C, HD>(a, t, hk, j0, tid, nt, sm);
                    for (int tid = 0; tid < nt; tid++)
                        fa_scores<HD>(a, t, j0, tid, sm);
                    for (int tid = 0; tid < nt; tid++)
                        fa_softmax<C, HD>(tid, nt, sm);
                    for (int tid = 0; tid < nt; tid++)
                        fa_pv<HD>(tid, sm, acc + tid * na);
                }
                for (int tid = 0; tid < nt; tid++)
                    fa_store<HD>(a, t, h, tid, sm, acc + tid * na);
            }
}

extern "C" int cuda_fattn_emulate(const float *q, int64_t ldq, const void *kc, int64_t ldk,
                                  const void *vc, int64_t ldv, bool kv_f16, const int32_t *runs,
                                  int n_seq, int64_t kv_rows, int64_t n_head, int64_t n_head_kv,
                                  int64_t head_dim, float scale, float *out, int64_t ldo)
{
    if (head_dim != 64 && head_dim != 128 && head_dim != 256)
        return -1;
    float *sm = (float *)malloc(sizeof(float) * fa_sh<256>::floats);
    float *acc = (float *)malloc(sizeof(float) * FA_THREADS * 4 * FA_NC(256));
    if (!sm || !acc) {
        free(sm);
        free(acc);
        return -1;
    }
    const fa_args a = { q, ldq, kc, vc, ldk, ldv, runs, kv_rows, n_head / n_head_kv, scale, out,
                        ldo };
#define EMU(HDV)                                                  \
    (kv_f16 ? emulate<__half, HDV>(a, n_seq, n_head, sm, acc)     \
            : emulate<float, HDV>(a, n_seq, n_head, sm, acc))
    switch (head_dim) {
    case 64: EMU(64); break;
    case 128: EMU(128); break;
    default: EMU(256); break;
    }
#undef EMU
    free(sm);
    free(acc);
    return 0;
}
