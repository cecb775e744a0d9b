/* cuda_moe_down.cu: be_moe_down_shared on the GPU: an expert block's down
 * products, its shared expert's down product and their weighted sum as one
 * kernel for decode rows (Q36_CUDA_MOEDOWN=1, fast mode; off by default).
 *
 * Two earlier forms rounded the token's 9 rows to int8 in every block (512
 * blocks a token) and were slower than the unfused ops: a 35B-A3B decode
 * step of one token took 3.577 ms (a warp per output row taking its 8
 * experts in turn; run-504c354) and 3.433 ms (the blocks below;
 * run-e43b143) against 2.80 without, and grew with the rows (T=16: 21.9
 * against 12.8 ms); op by op the kernel took ~25 us a call against ~9 for
 * an expert matvec (bench/results/2026-12-04-cuda-session24/). This form
 * has the rows rounded once, by the unfused ops' two k_q8x launches, and
 * copies them: three nodes instead of five.
 *
 * Why. Unfused, a 35B-A3B decode step spends five graph nodes a layer on
 * this: the int8 rows of the experts' SwiGLU rows (k_q8x), their down
 * products (k_matvec8_id), the shared expert's SwiGLU and int8 rows
 * (k_q8x), its down product (k_matvec8) and the sum (k_combine), each
 * waiting for the one before; a node costs a few microseconds of launch,
 * dependency and ramp whatever its work (bench/results/2026-12-02-cuda-knock/).
 *
 * How. Block (4 output rows n0.., token t) of 12 warps: warp i < 8 takes
 * rank i's expert, its 4 rows at once as cuda_matmul.cu's expert kernel
 * takes them (a row on LE lanes: mv_lanes), warp 8 + j the shared
 * expert's row n0 + j on a whole warp (as k_matvec8). Before the
 * dependency wait each warp asks L2 for its weight rows (weights are never
 * written; the choices it reads then were written kernels back, and a stale
 * one would only prefetch another valid row). Then the block rounds token
 * t's k expert rows and its shared SwiGLU row, rounded to int8 once by
 * two k_q8x launches ahead of it (as the unfused ops round them), into
 * shared memory, the warps form their products with
 * the same row sums as the unfused kernels (mv8_row, group_sum, warp_sum:
 * cuda_mv8.h), and 4 threads sum them as k_combine does (rank order,
 * products rounded then added, the shared product times the sigmoid of its
 * gate logit added last): the same bits as the unfused ops
 * (test_backend_cuda: cuda.moedown_same_bits_*). */
#include "cuda.h"
#include "cuda_moe.h"       /* cuda_moe_grouped */
#include "cuda_mv8.h"

#include <assert.h>

#define MD_KMAX  8          /* experts a token */
#define MD_RPB   4          /* output rows a block */
#define MD_WARPS (MD_KMAX + MD_RPB)

typedef struct md_args {
    const uint8_t *We, *Ws;         /* the experts' down weights, the shared expert's */
    uint64_t       rbe, rbs;        /* their row bytes */
    int64_t        n_exp, D, Fe, Fs, k;
    const int8_t  *qx, *qs;         /* int8 rows (k_q8x): T * k of Fe (the experts'
                                     * SwiGLU rows), T of Fs (the shared SwiGLU rows) */
    const float2  *dx, *ds;         /* their blocks' (scale, sum) pairs */
    const float   *sg;              /* T x 1: its gate logit */
    int64_t        ldsg;
    const int32_t *sel;             /* T x k: the choices */
    int64_t        ldsel;
    const float   *w;               /* T x k: their weights */
    int64_t        ldw;
    float         *out;             /* T rows of D */
    int64_t        ldo;
} md_args;

/* shared memory: the k expert rows (int8, Fe bytes each, Q4_K's swizzled
 * chunks: sx_slot), the shared row (Fs), then the blocks' (scale, sum) pairs */
static size_t md_smem(int64_t k, int64_t Fe, int64_t Fs)
{
    return (size_t)(k * Fe + Fs) + (size_t)(k * (Fe / Q8X_BLOCK) + Fs / Q8X_BLOCK) * 8;
}

template <int TE, int TS, int LE>
__global__ void __launch_bounds__(32 * MD_WARPS) k_moe_down8(md_args a)
{
    extern __shared__ int4 md_mem[];
    __shared__ float ye[MD_KMAX][MD_RPB], ys[MD_RPB];
    constexpr bool SX = TE == QT_Q4_K;      /* the expert rows in sx_stage's chunk order */
    constexpr int RP = 32 / LE;             /* an expert warp's rows a pass */
    static_assert(MD_RPB % RP == 0, "whole passes");
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
    const int64_t t = blockIdx.y, n0 = (int64_t)blockIdx.x * MD_RPB;
    const int64_t nrow = a.D - n0 < MD_RPB ? a.D - n0 : MD_RPB;
    const int k = (int)a.k;
    if (warp < k)
        mv_prefetch(a.We + id_row_off(a.sel, a.ldsel, t, warp, a.n_exp, a.D, n0, a.rbe),
                    (uint64_t)nrow * a.rbe, lane);
    else if (warp >= MD_KMAX && warp - MD_KMAX < nrow)
        mv_prefetch(a.Ws + (uint64_t)(n0 + warp - MD_KMAX) * a.rbs, a.rbs, lane);
    cuda_pdl_enter();

    /* token t's int8 rows to shared memory: the k expert rows (Q4_K's in
     * sx_stage's chunk order), the shared row, their (scale, sum) pairs */
    int8_t *qe = (int8_t *)md_mem, *qs = qe + a.k * a.Fe;
    const int64_t nbe = a.Fe / Q8X_BLOCK, nbs = a.Fs / Q8X_BLOCK;
    float2 *de = (float2 *)(qs + a.Fs), *ds = de + a.k * nbe;
    {
        const int nch = (int)(a.Fe / 16), nall = k * nch, ncs = (int)(a.Fs / 16);
        const int4 *gx = (const int4 *)(a.qx + t * a.k * a.Fe), *gs = (const int4 *)(a.qs + t * a.Fs);
        for (int c = threadIdx.x; c < nall; c += blockDim.x) {
            const int i = c / nch, u = c % nch;
            ((int4 *)(qe + i * a.Fe))[SX ? sx_slot(u) : u] = gx[c];
        }
        for (int c = threadIdx.x; c < ncs; c += blockDim.x)
            ((int4 *)qs)[c] = gs[c];
        const float2 *gdx = a.dx + t * a.k * nbe, *gds = a.ds + t * nbs;
        for (int j = threadIdx.x; j < k * (int)nbe; j += blockDim.x)
            de[j] = gdx[j];
        for (int j = threadIdx.x; j < (int)nbs; j += blockDim.x)
            ds[j] = gds[j];
    }
    __syncthreads();

    if (warp < k) {                 /* rank warp's expert, RP rows a pass */
        #pragma unroll
        for (int p = 0; p < MD_RPB / RP; p++) {
            const int r = p * RP + lane / LE;
            const int64_t n = r < nrow ? n0 + r : a.D - 1;
            float acc[1] = { 0.0f };
            mv8_row<TE, 1, LE, SX>(TE, a.We + id_row_off(a.sel, a.ldsel, t, warp, a.n_exp, a.D, n,
                                                       a.rbe),
                                   a.Fe, qe + warp * a.Fe, de + warp * nbe, 1, lane % LE, acc);
            const float s = group_sum<LE>(acc[0]);
            if (lane % LE == 0)
                ye[warp][r] = s;
        }
    } else if (warp >= MD_KMAX && warp - MD_KMAX < nrow) {      /* a shared row */
        const int r = warp - MD_KMAX;
        float acc[1] = { 0.0f };
        mv8_row<TS, 1>(TS, a.Ws + (uint64_t)(n0 + r) * a.rbs, a.Fs, qs, ds, 1, lane, acc);
        const float s = warp_sum(acc[0]);
        if (lane == 0)
            ys[r] = s;
    }
    __syncthreads();

    /* k_combine's sum */
    const int r = threadIdx.x;
    if (r < nrow) {
        const float *wr = a.w + t * a.ldw;
        float o = __fmul_rn(ye[0][r], wr[0]);
        for (int i = 1; i < k; i++)
            o = __fadd_rn(o, __fmul_rn(ye[i][r], wr[i]));
        const float sig = 1.0f / (1.0f + expf(-a.sg[t * a.ldsg]));
        a.out[t * a.ldo + n0 + r] = __fadd_rn(o, __fmul_rn(ys[r], sig));
    }
}

static bool q4q6(uint32_t type) { return type == QT_Q4_K || type == QT_Q6_K; }

/* the fused kernel when it takes these rows: decode rows in fast mode on
 * int8 activations, where the unfused ops are the per-row kernels whose
 * bits it keeps: not the grouped GEMMs of long batches, and not batches of
 * Q36_CUDA_MMQ's rows and more, whose shared expert's product is k_mmq's
 * (another order: the moedown_same_bits cases of 3 and 8 tokens failed on
 * the GPU on 2026-12-06, the first run of them since k_mmq) */
static bool md_takes(const cuda_ctx *c, const be_weight *we, const be_tensor *x,
                     const be_tensor *sel, const be_weight *ws, const be_tensor *g,
                     const be_tensor *u)
{
    const int64_t T = sel->rows, k = sel->cols, Fe = (int64_t)we->t->ne[0],
                  Fs = (int64_t)ws->t->ne[0], E = (int64_t)we->t->ne[2];
    return c->moe_down && c->mv8 && T >= 1 && T <= c->mv_rows && (!c->mmq_min || T < c->mmq_min) &&
           k >= 1 && k <= MD_KMAX &&
           q4q6(we->type) && q4q6(ws->type) && Fe % 256 == 0 && Fs % 256 == 0 &&
           x->rows == T * k && !x->f16 && !g->f16 && !u->f16 &&
           (int64_t)ws->t->ne[1] == (int64_t)we->t->ne[1] && T <= 65535 &&
           md_smem(k, Fe, Fs) <= 48 * 1024 &&
           !(c->moegemm && cuda_moe_grouped(T * k, E, cuda_moe_rows(c, we)));
}

/* the int8 rows in the scratch: the T k experts' rows (Fe bytes), then the
 * T shared ones (Fs), each with its (scale, sum) pairs; false when they do
 * not fit */
static bool md_layout(const cuda_ctx *c, int64_t T, int64_t k, int64_t Fe, int64_t Fs,
                      int8_t **qx, float2 **dx, int8_t **qs, float2 **ds)
{
    const uintptr_t al = 15;
    *qx = (int8_t *)c->deq;
    *dx = (float2 *)(((uintptr_t)(*qx + T * k * Fe) + al) & ~al);
    *qs = (int8_t *)(((uintptr_t)(*dx + T * k * (Fe / Q8X_BLOCK)) + al) & ~al);
    *ds = (float2 *)(((uintptr_t)(*qs + T * Fs) + al) & ~al);
    return c->deq && (uintptr_t)(*ds + T * (Fs / Q8X_BLOCK)) <=
                         (uintptr_t)c->deq + c->deq_floats * sizeof(float);
}

void cuda_moe_down_shared(be_ctx *be, const be_weight *we, const be_tensor *x,
                          const be_tensor *sel, const be_tensor *w, const be_weight *ws,
                          be_tensor *g, const be_tensor *u, be_tensor *sg, be_tensor *ey,
                          be_tensor *s, be_tensor *out)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const int64_t T = sel->rows, k = sel->cols;
    if (!T)
        return;
    const int64_t Fe = (int64_t)we->t->ne[0], Fs = (int64_t)ws->t->ne[0];
    int8_t *qx, *qs;
    float2 *dx, *ds;
    if (!md_takes(c, we, x, sel, ws, g, u) || !md_layout(c, T, k, Fe, Fs, &qx, &dx, &qs, &ds)) {
        cuda_matmul_id(be, we, x, sel, ey);
        cuda_matmul_glu(be, ws, g, u, s);
        cuda_moe_combine_shared(be, ey, w, k, sg, s, out);
        return;
    }
    c->q8.valid = c->h16.valid = false;     /* the scratch's rows are these now */
    if (!cuda_q8x(be, x, NULL, qx, dx, "k_q8x") || !cuda_q8x(be, g, u, qs, ds, "k_q8x(glu)"))
        return;
    md_args a;
    a.We = (const uint8_t *)we->data;
    a.Ws = (const uint8_t *)ws->data;
    a.rbe = we->row_bytes;
    a.rbs = ws->row_bytes;
    a.n_exp = (int64_t)we->t->ne[2];
    a.D = (int64_t)we->t->ne[1];
    a.Fe = Fe;
    a.Fs = Fs;
    a.k = k;
    a.qx = qx;
    a.dx = dx;
    a.qs = qs;
    a.ds = ds;
    a.sg = (const float *)sg->data;
    a.ldsg = sg->ld;
    a.sel = (const int32_t *)sel->data;
    a.ldsel = sel->ld;
    a.w = (const float *)w->data;
    a.ldw = w->ld;
    a.out = (float *)out->data;
    a.ldo = out->ld;
    const dim3 grid((unsigned)((a.D + MD_RPB - 1) / MD_RPB), (unsigned)T);
    const size_t smem = md_smem(k, Fe, Fs);
    /* the lanes a row as cuda_matmul.cu's expert kernel takes them (mv_lanes) */
    const int L = mv_lanes(we->type, Fe);
#define MD(TE, TS, LE) cuda_launch(k_moe_down8<TE, TS, LE>, grid, 32 * MD_WARPS, smem, c->stream, a)
#define MDL(TE, TS) do { if (L == 8) MD(TE, TS, 8); else if (L == 16) MD(TE, TS, 16);             \
                         else MD(TE, TS, 32); } while (0)
    if (we->type == QT_Q4_K) {
        if (ws->type == QT_Q4_K) MDL(QT_Q4_K, QT_Q4_K); else MDL(QT_Q4_K, QT_Q6_K);
    } else {
        if (ws->type == QT_Q4_K) MDL(QT_Q6_K, QT_Q4_K); else MDL(QT_Q6_K, QT_Q6_K);
    }
#undef MDL
#undef MD
    CUDA_LAUNCHED(be, "k_moe_down8");
}
