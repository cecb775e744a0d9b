/* cuda_ops.cu: the CUDA backend's row-wise ops: RMS and L2 norms,
 * elementwise add / mul / activations, the DeltaNet gates, rope, and the
 * MoE router and combine. Every tensor may be a view (its own row pitch).
 *
 * Formulas are the CPU backend's float formulas (cpu_ops.c, cpu_norm.c,
 * cpu_rope.c, cpu_moe.c) with libdevice's expf/logf/cosf/sinf instead of
 * ggml's lane exp: norms sum float squares in double; rope forms its
 * angles by repeated float multiplication and rotates with one fused
 * multiply-add; the router's top k takes the lower index on exact ties;
 * the combine rounds each product before adding it, in rank order.
 *
 * Fused entries (unless Q36_CUDA_FUSED=0, when they run the separate ops):
 * the residual add with the next RMS norm, the DeltaNet gated norm, and
 * the MoE combine with the shared expert's gate and add (the conv with its
 * SiLU is in cuda_seq.cu). Each computes what its separate ops
 * compute, in the same order with the same roundings, so the two paths
 * agree bit for bit (tests/gpu/test_backend_cuda.c checks it). */
#include "cuda.h"

#include <assert.h>

/* ---------------------------------------------------------------- norms */

/* The block's sum of each thread's s (every thread gets it). */
__device__ __forceinline__ double block_sum(double s)
{
    __shared__ double red[32];
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.0;
        #pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, o);
        if (threadIdx.x == 0)
            red[0] = s;
    }
    __syncthreads();
    return red[0];
}

/* A MoE block's routed sum as k_combine forms it, element (t, c): the k
 * rows y[t k + j] times their weights w[t][j], each product rounded, added
 * in rank order; with s (a shared expert), plus s[t][c] * sigmoid(g[t])
 * formed as k_ew forms it, added last. KT: k known (8), the k loads issued
 * together; 0: any k, the same sums. */
typedef struct cmb_src {
    const float *y, *w, *g, *s;
    int64_t      ldy, ldw, ldg, lds, k;
} cmb_src;

template <int KT>
__device__ __forceinline__ float combine_at(const cmb_src &C, int64_t t, int64_t c)
{
    const float *wr = C.w + t * C.ldw, *yr = C.y + (t * C.k) * C.ldy + c;
    float o;
    if (KT) {
        float yv[KT > 0 ? KT : 1];
        #pragma unroll
        for (int j = 0; j < KT; j++)
            yv[j] = yr[j * C.ldy];
        o = __fmul_rn(yv[0], wr[0]);
        #pragma unroll
        for (int j = 1; j < KT; j++)
            o = __fadd_rn(o, __fmul_rn(yv[j], wr[j]));
    } else {
        o = __fmul_rn(yr[0], wr[0]);
        for (int64_t j = 1; j < C.k; j++)
            o = __fadd_rn(o, __fmul_rn(yr[j * C.ldy], wr[j]));
    }
    if (C.s) {
        const float gt = C.g[t * C.ldg];
        const float sig = 1.0f / (1.0f + expf(-gt));
        o = __fadd_rn(o, __fmul_rn(C.s[t * C.lds + c], sig));
    }
    return o;
}

/* One block per (row, group): with o (the fused add), x = o + x first,
 * stored; then y = x * (1/sqrtf(mean + eps)) [* w] * post, and with z (the
 * fused gate) times silu(z) as k_ew's swiglu forms it. Each thread squares,
 * and scales, the elements it added. With qx (group % 32 == 0,
 * blockDim.x % 32 == 0: a warp holds 32 consecutive elements at each
 * step), y's rows (gpr groups each) are also written as the int8 rows the
 * decode products read (cuda.h: cuda_q8_lane, as k_q8x forms them). */
__global__ void k_norm(const float *o, int64_t ldo, float *x, int64_t ldx, int64_t group,
                       int64_t gpr, const float *__restrict__ w, float eps, float post,
                       const float *z, int64_t ldz, float *y, int64_t ldy, int8_t *qx, float2 *dx,
                       __half *yh)
{
    cuda_pdl_enter();
    const int64_t r = blockIdx.x / gpr, g0 = (blockIdx.x % gpr) * group;
    float *xr = x + r * ldx + g0;
    double s = 0.0;
    for (int64_t i = threadIdx.x; i < group; i += blockDim.x) {
        float v = xr[i];
        if (o) {
            v = o[r * ldo + g0 + i] + v;
            xr[i] = v;
        }
        s += (double)(v * v);
    }
    s = block_sum(s);
    const float mean = (float)(s / (double)group);
    const float scale = 1.0f / sqrtf(mean + eps);
    float *yr = y + r * ldy + g0;
    for (int64_t i = threadIdx.x; i < group; i += blockDim.x) {
        float v = xr[i] * scale;
        if (w)
            v = v * w[i];
        if (post != 1.0f)
            v = v * post;
        if (z) {
            const float zz = z[r * ldz + g0 + i];
            v = zz / (1.0f + expf(-zz)) * v;
        }
        yr[i] = v;
        if (yh)
            yh[r * gpr * group + g0 + i] = __float2half_rn(v);
        if (qx) {
            float2 ds;
            const int64_t e = r * gpr * group + g0 + i;     /* y's element in a packed row */
            qx[e] = (int8_t)cuda_q8_lane(v, &ds);
            if ((threadIdx.x & 31) == 0)
                dx[e / 32] = ds;
        }
    }
}

/* k_norm with each thread's NPT elements (i = tid + m * blockDim.x, m <
 * NPT) held in registers: every load of a pass issued before the first
 * use, where k_norm's loop loads, adds, stores and squares an element
 * before the next load may issue (the store may alias it): a one-row norm
 * of 2048 values on 256 threads paid 8 memory round trips in turn, then
 * 8 more scaling (4.8 µs a node in a 35B-A3B decode step, record
 * 2026-12-02-cuda-knock). The same arithmetic in the same order as
 * k_norm, so the same bits (Q36_CUDA_NORMREG, on unless "0"; cuda.h). */
template <int NPT, bool CMB = false>
__global__ void k_norm_reg(const float *o, int64_t ldo, float *x, int64_t ldx, int64_t group,
                           int64_t gpr, const float *__restrict__ w, float eps, float post,
                           const float *z, int64_t ldz, float *y, int64_t ldy, int8_t *qx,
                           float2 *dx, __half *yh, cmb_src C)
{
    cuda_pdl_enter();
    const int64_t r = blockIdx.x / gpr, g0 = (blockIdx.x % gpr) * group;
    float *xr = x + r * ldx + g0;
    const int bd = blockDim.x, tid = threadIdx.x;
    float v[NPT], a[NPT];
    #pragma unroll
    for (int m = 0; m < NPT; m++) {
        const int64_t i = tid + (int64_t)m * bd;
        v[m] = i < group ? xr[i] : 0.0f;
        if constexpr (CMB)      /* o's element, formed here (cuda_moe_combine_norm) */
            a[m] = i >= group ? 0.0f
                   : C.k == 8 ? combine_at<8>(C, r, g0 + i) : combine_at<0>(C, r, g0 + i);
        else
            a[m] = o && i < group ? o[r * ldo + g0 + i] : 0.0f;
    }
    double s = 0.0;
    #pragma unroll
    for (int m = 0; m < NPT; m++) {
        const int64_t i = tid + (int64_t)m * bd;
        if (i >= group)
            break;
        if (CMB || o) {
            v[m] = a[m] + v[m];
            xr[i] = v[m];
        }
        s += (double)(v[m] * v[m]);
    }
    s = block_sum(s);
    const float mean = (float)(s / (double)group);
    const float scale = 1.0f / sqrtf(mean + eps);
    #pragma unroll
    for (int m = 0; m < NPT; m++) {     /* the second pass's loads, all first */
        const int64_t i = tid + (int64_t)m * bd;
        a[m] = w && i < group ? w[i] : 0.0f;
    }
    float zv[NPT];
    #pragma unroll
    for (int m = 0; m < NPT; m++) {
        const int64_t i = tid + (int64_t)m * bd;
        zv[m] = z && i < group ? z[r * ldz + g0 + i] : 0.0f;
    }
    float *yr = y + r * ldy + g0;
    #pragma unroll
    for (int m = 0; m < NPT; m++) {
        const int64_t i = tid + (int64_t)m * bd;
        if (i >= group)
            break;
        float u = v[m] * scale;
        if (w)
            u = u * a[m];
        if (post != 1.0f)
            u = u * post;
        if (z)
            u = zv[m] / (1.0f + expf(-zv[m])) * u;
        yr[i] = u;
        if (yh)
            yh[r * gpr * group + g0 + i] = __float2half_rn(u);
        if (qx) {
            float2 ds;
            const int64_t e = r * gpr * group + g0 + i;     /* y's element in a packed row */
            qx[e] = (int8_t)cuda_q8_lane(u, &ds);
            if ((tid & 31) == 0)
                dx[e / 32] = ds;
        }
    }
}

/* k_norm for groups of NW * 32 elements (64, 128 or 256: k_norm's block
 * has a thread an element, NW warps), a warp a group, 8 groups a block:
 * lane l holds the elements l + 32 m, which are lane l of k_norm's warp m.
 * Each m's squares are reduced as block_sum's first stage reduces a warp's,
 * and the NW warp sums are added in the order of its second stage (lane 0
 * of a butterfly over NW values, the other lanes' zeros changing nothing):
 * the same bits as k_norm. For prompt batches of small groups (the DeltaNet
 * L2 norms and gated norms per head of 128), where k_norm's block a group
 * spent its time in barriers: 163 µs a layer each at the 35B-A3B's pp4096
 * (bench/results/2026-12-04-cuda-session21/). No int8 rows (decode rows
 * keep k_norm_reg). */
template <int NW>
__global__ void k_norm_warp(const float *o, int64_t ldo, float *x, int64_t ldx, int64_t gpr,
                            int64_t ngroups, const float *__restrict__ w, float eps, float post,
                            const float *z, int64_t ldz, float *y, int64_t ldy, __half *yh)
{
    cuda_pdl_enter();
    constexpr int64_t group = 32 * NW;
    const int64_t gi = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (gi >= ngroups)
        return;
    const int lane = threadIdx.x & 31;
    const int64_t r = gi / gpr, g0 = (gi % gpr) * group;
    float *xr = x + r * ldx + g0;
    float v[NW], a[NW];
    #pragma unroll
    for (int m = 0; m < NW; m++) {
        v[m] = xr[lane + 32 * m];
        a[m] = o ? o[r * ldo + g0 + lane + 32 * m] : 0.0f;
    }
    double p[NW];
    #pragma unroll
    for (int m = 0; m < NW; m++) {
        if (o) {
            v[m] = a[m] + v[m];
            xr[lane + 32 * m] = v[m];
        }
        p[m] = (double)(v[m] * v[m]);
        #pragma unroll
        for (int sh = 16; sh > 0; sh >>= 1)
            p[m] += __shfl_xor_sync(0xffffffffu, p[m], sh);
    }
    #pragma unroll
    for (int h = NW / 2; h > 0; h >>= 1)
        #pragma unroll
        for (int m = 0; m < h; m++)
            p[m] = p[m] + p[m + h];
    const float mean = (float)(p[0] / (double)group);
    const float scale = 1.0f / sqrtf(mean + eps);
    #pragma unroll
    for (int m = 0; m < NW; m++) {
        a[m] = w ? w[lane + 32 * m] : 0.0f;
        v[m] = v[m] * scale;
    }
    float *yr = y + r * ldy + g0;
    #pragma unroll
    for (int m = 0; m < NW; m++) {
        float u = v[m];
        if (w)
            u = u * a[m];
        if (post != 1.0f)
            u = u * post;
        if (z) {
            const float zz = z[r * ldz + g0 + lane + 32 * m];
            u = zz / (1.0f + expf(-zz)) * u;
        }
        yr[lane + 32 * m] = u;
        if (yh)
            yh[r * gpr * group + g0 + lane + 32 * m] = __float2half_rn(u);
    }
}

/* y = norm of x (with o: of x = o + x, stored first; with z: times silu(z)) */
static void norm(be_ctx *be, const be_tensor *o, const be_tensor *x, const float *w, float eps,
                 float post, int64_t group, const be_tensor *z, be_tensor *y, const char *what)
{
    assert(x->rows == y->rows && x->cols == y->cols && x->cols % group == 0);
    assert(!x->f16 && !y->f16 && (!o || (!o->f16 && o->rows == x->rows && o->cols == x->cols)));
    if (!x->rows)
        return;
    cuda_ctx *c = cuda_ctx_of(be);
    const int64_t gpr = x->cols / group;
    const int threads = group >= 256 ? 256 : group >= 128 ? 128 : 64;
    /* a decode row's norm feeds weight products (whole-row norms, and
     * the DeltaNet's gated norm per head before its output product):
     * their int8 rows too (cuda.h: q8) */
    int8_t *qx = NULL;
    float2 *dx = NULL;
    const bool q8 = c->q8norm && group % 32 == 0 && y->rows <= CUDA_Q8_NORM_ROWS && !y->f16 &&
                    cuda_q8_layout(c, y->rows, y->cols, &qx, &dx);
    const int npt = (int)((group + threads - 1) / threads);
    const int64_t ngroups = x->rows * gpr;
    /* a prompt batch's f16 products of y (fast mode) take its f16 rows from
     * the scratch's start (cuda.h: h16): written here with y's, the
     * halves k_to_half would make; RMS norms only (w: the L2 norms' rows
     * feed no weight product) */
    __half *yh = w ? cuda_h16_room(c, y->rows, y->cols) : NULL;
    if (c->norm_reg && !q8 && group == threads && ngroups >= 64) {
#define NORMW(NW) cuda_launch(k_norm_warp<NW>, (unsigned)((ngroups + 7) / 8), 256, 0, c->stream, \
        o ? (const float *)o->data : NULL, o ? o->ld : 0, (float *)x->data, x->ld, gpr, ngroups,   \
        w, eps, post, z ? (const float *)z->data : NULL, z ? z->ld : 0, (float *)y->data, y->ld, yh)
        if (group == 64)
            NORMW(2);
        else if (group == 128)
            NORMW(4);
        else
            NORMW(8);
#undef NORMW
        if (CUDA_LAUNCHED(be, what) && yh)
            cuda_h16_kept(c, y);
        return;
    }
#define NORM(K, ...) cuda_launch(K, (unsigned)(x->rows * gpr), threads, 0, c->stream,              \
        o ? (const float *)o->data : NULL, o ? o->ld : 0, (float *)x->data, x->ld, group, gpr, w, \
        eps, post, z ? (const float *)z->data : NULL, z ? z->ld : 0, (float *)y->data, y->ld,     \
        q8 ? qx : NULL, q8 ? dx : NULL, __VA_ARGS__)     /* yh, then k_norm_reg's cmb_src */
    if (!c->norm_reg || npt > 16)
        NORM(k_norm, yh);
    else if (npt == 1)
        NORM(k_norm_reg<1>, yh, cmb_src{});
    else if (npt == 2)
        NORM(k_norm_reg<2>, yh, cmb_src{});
    else if (npt <= 4)
        NORM(k_norm_reg<4>, yh, cmb_src{});
    else if (npt <= 8)
        NORM(k_norm_reg<8>, yh, cmb_src{});
    else
        NORM(k_norm_reg<16>, yh, cmb_src{});
#undef NORM
    if (CUDA_LAUNCHED(be, what) && q8)
        cuda_q8_kept(c, y);
    else if (yh && !be->err.kind)
        cuda_h16_kept(c, y);
}

void cuda_rms_norm(be_ctx *be, const be_tensor *x, const be_weight *w, float eps, int64_t group,
                   be_tensor *y)
{
    assert(!w || (w->type == 0 && (int64_t)w->t->ne[0] == group));
    norm(be, NULL, x, w ? (const float *)w->data : NULL, eps, 1.0f, group, NULL, y, "k_norm(rms)");
}

void cuda_add_rms_norm(be_ctx *be, const be_tensor *o, be_tensor *x, const be_weight *w,
                       float eps, int64_t group, be_tensor *y)
{
    if (!cuda_ctx_of(be)->fused) {
        cuda_add(be, o, x, x);
        cuda_rms_norm(be, x, w, eps, group, y);
        return;
    }
    assert(!w || (w->type == 0 && (int64_t)w->t->ne[0] == group));
    norm(be, o, x, w ? (const float *)w->data : NULL, eps, 1.0f, group, NULL, y,
         "k_norm(add, rms)");
}

void cuda_rms_norm_gate(be_ctx *be, const be_tensor *x, const be_weight *w, float eps,
                        int64_t group, const be_tensor *z, be_tensor *y)
{
    if (!cuda_ctx_of(be)->fused) {
        cuda_rms_norm(be, x, w, eps, group, y);
        cuda_swiglu(be, z, y, y);
        return;
    }
    assert(!w || (w->type == 0 && (int64_t)w->t->ne[0] == group));
    assert(!z->f16 && z->rows == x->rows && z->cols == x->cols);
    norm(be, NULL, x, w ? (const float *)w->data : NULL, eps, 1.0f, group, z, y,
         "k_norm(rms, gate)");
}

void cuda_l2_norm(be_ctx *be, const be_tensor *x, float eps, int64_t group, be_tensor *y)
{
    const float n = (float)group;
    norm(be, NULL, x, NULL, eps / n, 1.0f / sqrtf(n), group, NULL, y, "k_norm(l2)");
}

/* ----------------------------------------------------------- elementwise */

enum ew_kind { EW_ADD, EW_MUL, EW_MUL_COL, EW_SILU, EW_SIGMOID, EW_SWIGLU };

__global__ void k_ew(int kind, const float *a, int64_t lda, const float *b, int64_t ldb,
                     float *y, int64_t ldy, int64_t rows, int64_t cols)
{
    cuda_pdl_enter();
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < rows * cols;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = i / cols, c = i % cols;
        const float x = a[r * lda + c];
        float v;
        switch (kind) {
        case EW_ADD: v = x + b[r * ldb + c]; break;
        case EW_MUL: v = x * b[r * ldb + c]; break;
        case EW_MUL_COL: v = x * b[r * ldb]; break;
        case EW_SILU: v = x / (1.0f + expf(-x)); break;
        case EW_SIGMOID: v = 1.0f / (1.0f + expf(-x)); break;
        default: v = cuda_swiglu1(x, b[r * ldb + c]); break;
        }
        y[r * ldy + c] = v;
    }
}

static void ew(be_ctx *be, enum ew_kind kind, const be_tensor *a, const be_tensor *b, be_tensor *y)
{
    assert(a->rows == y->rows && a->cols == y->cols && !a->f16 && !y->f16);
    assert(!b || b->rows == a->rows);
    assert(!b || b->cols == (kind == EW_MUL_COL ? 1 : a->cols));
    const int64_t n = a->rows * a->cols;
    if (!n)
        return;
    cuda_launch(k_ew, cuda_blocks(n, 256), 256, 0, cuda_ctx_of(be)->stream,
        (int)kind, (const float *)a->data, a->ld, b ? (const float *)b->data : NULL,
        b ? b->ld : 0, (float *)y->data, y->ld, a->rows, a->cols);
    CUDA_LAUNCHED(be, "k_ew");
}

void cuda_add(be_ctx *be, const be_tensor *a, const be_tensor *b, be_tensor *y) { ew(be, EW_ADD, a, b, y); }
void cuda_mul(be_ctx *be, const be_tensor *a, const be_tensor *b, be_tensor *y) { ew(be, EW_MUL, a, b, y); }
void cuda_mul_col(be_ctx *be, const be_tensor *a, const be_tensor *s, be_tensor *y) { ew(be, EW_MUL_COL, a, s, y); }
void cuda_silu(be_ctx *be, const be_tensor *x, be_tensor *y) { ew(be, EW_SILU, x, NULL, y); }
void cuda_sigmoid(be_ctx *be, const be_tensor *x, be_tensor *y) { ew(be, EW_SIGMOID, x, NULL, y); }
void cuda_swiglu(be_ctx *be, const be_tensor *g, const be_tensor *u, be_tensor *y) { ew(be, EW_SWIGLU, g, u, y); }

/* g = softplus(alpha + dt_bias) * a, beta = sigmoid(b) (in place allowed) */
__global__ void k_gates(const float *alpha, int64_t lda, const float *dt, const float *A,
                        const float *b, int64_t ldb, float *g, int64_t ldg, float *beta,
                        int64_t ldbeta, int64_t rows, int64_t H)
{
    cuda_pdl_enter();
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < rows * H;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = i / H, h = i % H;
        const float biased = alpha[r * lda + h] + dt[h];
        const float sp = biased > 20.0f ? biased : logf(1.0f + expf(biased));
        const float bb = b[r * ldb + h];
        g[r * ldg + h] = sp * A[h];
        beta[r * ldbeta + h] = 1.0f / (1.0f + expf(-bb));
    }
}

void cuda_deltanet_gates(be_ctx *be, const be_tensor *alpha, const be_weight *dt_bias,
                         const be_weight *a, const be_tensor *b, be_tensor *g, be_tensor *beta)
{
    assert(alpha->rows == g->rows && alpha->cols == g->cols && b->rows == beta->rows);
    assert(b->cols == beta->cols && alpha->rows == b->rows && alpha->cols == b->cols);
    assert(dt_bias->type == 0 && a->type == 0);
    const int64_t n = alpha->rows * alpha->cols;
    if (!n)
        return;
    cuda_launch(k_gates, cuda_blocks(n, 256), 256, 0, cuda_ctx_of(be)->stream,
        (const float *)alpha->data, alpha->ld, (const float *)dt_bias->data,
        (const float *)a->data, (const float *)b->data, b->ld, (float *)g->data, g->ld,
        (float *)beta->data, beta->ld, alpha->rows, alpha->cols);
    CUDA_LAUNCHED(be, "k_gates");
}

/* ------------------------------------------------------------------ rope */

/* One block per row; thread per (head, pair). */
__global__ void k_rope(float *x, int64_t ldx, int64_t cols, int64_t hd, int64_t half,
                       const int32_t *pos, int64_t ldpos, float theta_scale, int s0, int s1,
                       int s2, int sect_dims)
{
    cuda_pdl_enter();
    const int64_t r = blockIdx.x;
    const float p = (float)pos[r * ldpos];
    const int64_t heads = cols / hd;
    float *xr = x + r * ldx;
    for (int64_t j = threadIdx.x; j < heads * half; j += blockDim.x) {
        const int64_t h = j / half, i = j % half;
        float theta = p;
        for (int64_t m = 0; m < i; m++)
            theta *= theta_scale;
        const int sector = (int)(i % sect_dims);
        const bool first3 = (sector % 3 == 1 && sector < 3 * s1) ||
                            (sector % 3 == 2 && sector < 3 * s2) ||
                            (sector % 3 == 0 && sector < 3 * s0);
        const float th = first3 ? theta : 0.0f;
        const float cs = cosf(th), sn = sinf(th);
        float *v = xr + h * hd;
        const float x0 = v[i], x1 = v[i + half];
        v[i] = fmaf(x0, cs, -(x1 * sn));
        v[i + half] = fmaf(x0, sn, x1 * cs);
    }
}

void cuda_rope(be_ctx *be, be_tensor *x, int64_t head_dim, int64_t n_rot, const int32_t sections[4],
               float base, const be_tensor *pos)
{
    assert(!x->f16 && x->cols % head_dim == 0 && n_rot % 2 == 0 && n_rot <= head_dim);
    const int sect_dims = sections[0] + sections[1] + sections[2] + sections[3];
    assert(sect_dims > 0);
    if (!x->rows)
        return;
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    cuda_launch(k_rope, (unsigned)x->rows, 128, 0, cuda_ctx_of(be)->stream,
        (float *)x->data, x->ld, x->cols, head_dim, n_rot / 2, (const int32_t *)pos->data,
        pos->ld, theta_scale, sections[0], sections[1], sections[2], sect_dims);
    CUDA_LAUNCHED(be, "k_rope");
}

/* be_attn_prologue in one kernel: one block per (row, head of q then of
 * k), k_norm's threads and sums (so the same bits), the head in shared
 * memory, then k_rope's rotation of each pair. For a q head, its gate half
 * of qg is copied to gate on the way. */
__global__ void k_attn_pro(const float *qg, int64_t ldqg, float *q, int64_t ldq, float *gate,
                           int64_t ldg, float *k, int64_t ldk, int64_t Hq, int64_t hd,
                           const float *__restrict__ wq, const float *__restrict__ wk, float eps,
                           int64_t half, const int32_t *pos, int64_t ldpos, float theta_scale,
                           int s0, int s1, int s2, int sect_dims)
{
    cuda_pdl_enter();
    extern __shared__ float hv[];               /* hd floats */
    const int64_t r = blockIdx.x, hh = blockIdx.y;
    const bool isq = hh < Hq;
    const float *src = isq ? qg + r * ldqg + hh * 2 * hd : k + r * ldk + (hh - Hq) * hd;
    float *dst = isq ? q + r * ldq + hh * hd : k + r * ldk + (hh - Hq) * hd;
    const float *w = isq ? wq : wk;
    double s = 0.0;
    for (int64_t i = threadIdx.x; i < hd; i += blockDim.x) {
        const float v = src[i];
        hv[i] = v;
        s += (double)(v * v);
        if (isq)
            gate[r * ldg + hh * hd + i] = src[hd + i];
    }
    s = block_sum(s);       /* its barriers also make hv whole */
    const float mean = (float)(s / (double)hd);
    const float scale = 1.0f / sqrtf(mean + eps);
    for (int64_t i = threadIdx.x; i < hd; i += blockDim.x) {
        float v = hv[i] * scale;
        if (w)
            v = v * w[i];
        hv[i] = v;
    }
    __syncthreads();
    const float p = (float)pos[r * ldpos];
    for (int64_t i = threadIdx.x; i < hd; i += blockDim.x) {
        if (i >= 2 * half) {                    /* past the rotated dims */
            dst[i] = hv[i];
            continue;
        }
        if (i >= half)
            continue;                           /* written with its pair */
        float theta = p;
        for (int64_t m = 0; m < i; m++)
            theta *= theta_scale;
        const int sector = (int)(i % sect_dims);
        const bool first3 = (sector % 3 == 1 && sector < 3 * s1) ||
                            (sector % 3 == 2 && sector < 3 * s2) ||
                            (sector % 3 == 0 && sector < 3 * s0);
        const float th = first3 ? theta : 0.0f;
        const float cs = cosf(th), sn = sinf(th);
        const float x0 = hv[i], x1 = hv[i + half];
        dst[i] = fmaf(x0, cs, -(x1 * sn));
        dst[i + half] = fmaf(x0, sn, x1 * cs);
    }
}

void cuda_attn_prologue(be_ctx *be, const be_tensor *qg, be_tensor *q, be_tensor *gate,
                        be_tensor *k, const be_weight *wq, const be_weight *wk, float eps,
                        int64_t hd, int64_t n_rot, const int32_t sections[4], float base,
                        const be_tensor *pos)
{
    assert(!qg->f16 && !q->f16 && !gate->f16 && !k->f16 && n_rot % 2 == 0 && n_rot <= hd);
    assert(!wq || wq->type == 0);
    assert(!wk || wk->type == 0);
    const int sect_dims = sections[0] + sections[1] + sections[2] + sections[3];
    if (!cuda_ctx_of(be)->f_attn) {
        /* the ops one by one: the copies through the queue (cuda.cu's
         * wrappers flush it before the next op) */
        for (int64_t h = 0; h < q->cols / hd; h++) {
            be_tensor a = *qg, b = *q, c = *gate;
            a.data = (float *)qg->data + h * 2 * hd;
            a.cols = b.cols = c.cols = hd;
            b.data = (float *)q->data + h * hd;
            cuda_copy_queue(be, &a, &b);
            a.data = (float *)qg->data + h * 2 * hd + hd;
            c.data = (float *)gate->data + h * hd;
            cuda_copy_queue(be, &a, &c);
        }
        cuda_copy_flush(be);
        cuda_rms_norm(be, q, wq, eps, hd, q);
        cuda_rms_norm(be, k, wk, eps, hd, k);
        cuda_rope(be, q, hd, n_rot, sections, base, pos);
        cuda_rope(be, k, hd, n_rot, sections, base, pos);
        return;
    }
    assert(sect_dims > 0);
    if (!q->rows)
        return;
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    const int threads = hd >= 256 ? 256 : hd >= 128 ? 128 : 64;       /* k_norm's */
    const dim3 grid((unsigned)q->rows, (unsigned)(q->cols / hd + k->cols / hd));
    cuda_launch(k_attn_pro, grid, threads, (size_t)hd * sizeof(float), cuda_ctx_of(be)->stream,
        (const float *)qg->data, qg->ld, (float *)q->data, q->ld, (float *)gate->data, gate->ld,
        (float *)k->data, k->ld, q->cols / hd, hd, wq ? (const float *)wq->data : nullptr,
        wk ? (const float *)wk->data : nullptr, eps, n_rot / 2, (const int32_t *)pos->data,
        pos->ld, theta_scale, sections[0], sections[1], sections[2], sect_dims);
    CUDA_LAUNCHED(be, "k_attn_pro");
}

/* ------------------------------------------------------------------- MoE */

#define ROUTE_THREADS 256

/* (v, i) becomes (ov, oi) when that is better: the larger value, the lower
 * index on equal values (NaN never wins a comparison) */
template <typename I>
__device__ __forceinline__ void best_of(float &v, I &i, float ov, I oi)
{
    if (ov > v || (ov == v && oi < i)) {
        v = ov;
        i = oi;
    }
}

/* The warp's best (v, i) of its lanes' (best_of); every lane gets it */
template <typename I>
__device__ __forceinline__ void warp_best(float &v, I &i)
{
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        best_of(v, i, __shfl_xor_sync(0xffffffffu, v, o), __shfl_xor_sync(0xffffffffu, i, o));
}

/* The block's best (v, i) of its threads' (best_of), in thread 0; sv, si:
 * shared arrays of blockDim.x / 32. Every thread must call it. */
template <typename I>
__device__ __forceinline__ void block_best(float &v, I &i, float *sv, I *si)
{
    warp_best(v, i);
    if (!(threadIdx.x & 31)) {
        sv[threadIdx.x / 32] = v;
        si[threadIdx.x / 32] = i;
    }
    __syncthreads();
    if (threadIdx.x == 0)
        for (int w = 1; w < (int)blockDim.x / 32; w++)
            best_of(v, i, sv[w], si[w]);
}

/* One block per row: softmax over E, the top k (largest first, lower
 * index on ties), weights renormalized over the k. */
__global__ void k_route(const float *logits, int64_t ldl, int64_t E, int64_t k, int32_t *sel,
                        int64_t lds, float *w, int64_t ldw)
{
    cuda_pdl_enter();
    extern __shared__ float p[];               /* E floats */
    __shared__ float rf[ROUTE_THREADS / 32];
    __shared__ double rd[ROUTE_THREADS / 32];
    __shared__ int ri[ROUTE_THREADS / 32];
    __shared__ float best_p[64];
    __shared__ int best_i[64];
    const int64_t r = blockIdx.x;
    const float *l = logits + r * ldl;
    const int tid = threadIdx.x, lane = tid & 31, wid = tid / 32, nw = blockDim.x / 32;
    float mx = -INFINITY;
    for (int64_t e = tid; e < E; e += blockDim.x)
        mx = fmaxf(mx, l[e]);
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    if (!lane)
        rf[wid] = mx;
    __syncthreads();
    mx = rf[0];
    for (int i = 1; i < nw; i++)
        mx = fmaxf(mx, rf[i]);
    double s = 0.0;
    for (int64_t e = tid; e < E; e += blockDim.x) {
        const float v = expf(l[e] - mx);
        p[e] = v;
        s += (double)v;
    }
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if (!lane)
        rd[wid] = s;
    __syncthreads();
    s = 0.0;
    for (int i = 0; i < nw; i++)
        s += rd[i];
    const float inv = (float)(1.0 / s);
    for (int64_t e = tid; e < E; e += blockDim.x)
        p[e] *= inv;
    __syncthreads();
    for (int64_t i = 0; i < k; i++) {
        float bp = -1.0f;
        int bi = 0x7fffffff;
        for (int64_t e = tid; e < E; e += blockDim.x)
            best_of(bp, bi, p[e], (int)e);
        block_best(bp, bi, rf, ri);
        if (tid == 0) {
            best_p[i] = bp;
            best_i[i] = bi;
            p[bi] = -2.0f;                     /* taken */
        }
        __syncthreads();
    }
    if (tid == 0) {
        double ws = 0.0;
        for (int64_t i = 0; i < k; i++)
            ws += (double)best_p[i];
        float wsum = (float)ws;
        if (wsum < 6.103515625e-5f)
            wsum = 6.103515625e-5f;
        for (int64_t i = 0; i < k; i++) {
            sel[r * lds + i] = best_i[i];
            w[r * ldw + i] = best_p[i] / wsum;
        }
    }
}

/* k_route with one warp a row and no barrier, for E <= 32 * ROUTE_LANE
 * and k <= 32 (Qwen3.6's 256 experts, top 8): lane l holds experts l +
 * 32j in registers. The same formulas and tie rule as k_route; the
 * softmax's double sum is taken in another order (a row's choices are
 * the same, its weights within rounding of the double sum's last bit). */
#define ROUTE_LANE 16
__global__ void k_route_warp(const float *logits, int64_t ldl, int E, int k, int32_t *sel,
                             int64_t lds, float *w, int64_t ldw, int64_t rows)
{
    cuda_pdl_enter();
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (r >= rows)
        return;
    const float *l = logits + r * ldl;
    float v[ROUTE_LANE];
    float mx = -INFINITY;
    #pragma unroll
    for (int j = 0; j < ROUTE_LANE; j++) {
        const int e = lane + 32 * j;
        v[j] = e < E ? l[e] : -INFINITY;
        mx = fmaxf(mx, v[j]);
    }
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    double s = 0.0;
    #pragma unroll
    for (int j = 0; j < ROUTE_LANE; j++)
        if (lane + 32 * j < E) {
            v[j] = expf(v[j] - mx);
            s += (double)v[j];
        }
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    const float inv = (float)(1.0 / s);
    #pragma unroll
    for (int j = 0; j < ROUTE_LANE; j++)
        v[j] = lane + 32 * j < E ? v[j] * inv : -3.0f;     /* below every "taken" mark */
    float my_p = 0.0f;
    int my_i = 0;
    double ws = 0.0;
    for (int i = 0; i < k; i++) {
        float bp = -1.0f;
        int bi = 0x7fffffff;
        #pragma unroll
        for (int j = 0; j < ROUTE_LANE; j++)       /* ascending e: the first of equals */
            if (v[j] > bp) {
                bp = v[j];
                bi = lane + 32 * j;
            }
        warp_best(bp, bi);
        if (lane == (bi & 31)) {
            #pragma unroll
            for (int j = 0; j < ROUTE_LANE; j++)
                if (j == bi >> 5)
                    v[j] = -2.0f;                  /* taken */
        }
        if (lane == i) {
            my_p = bp;
            my_i = bi;
        }
        ws += (double)bp;
    }
    float wsum = (float)ws;
    if (wsum < 6.103515625e-5f)
        wsum = 6.103515625e-5f;
    if (lane < k) {
        sel[r * lds + lane] = my_i;
        w[r * ldw + lane] = my_p / wsum;
    }
}

void cuda_moe_route(be_ctx *be, const be_tensor *logits, int64_t k, be_tensor *sel, be_tensor *w)
{
    const int64_t E = logits->cols;
    assert(k >= 1 && k <= 64 && k <= E && E <= 8192 && w->rows == logits->rows && w->cols == k);
    if (!logits->rows)
        return;
    if (E <= 32 * ROUTE_LANE && k <= 32) {
        cuda_launch(k_route_warp, cuda_blocks(logits->rows * 32, 128), 128, 0,
                    cuda_ctx_of(be)->stream, (const float *)logits->data, logits->ld, (int)E,
                    (int)k, (int32_t *)sel->data, sel->ld, (float *)w->data, w->ld, logits->rows);
        CUDA_LAUNCHED(be, "k_route_warp");
        return;
    }
    cuda_launch(k_route, (unsigned)logits->rows, ROUTE_THREADS, (size_t)E * sizeof(float),
              cuda_ctx_of(be)->stream, (const float *)logits->data, logits->ld, E, k,
                                         (int32_t *)sel->data, sel->ld, (float *)w->data, w->ld);
    CUDA_LAUNCHED(be, "k_route");
}

/* be_argmax: one block a row; each thread scans its columns c = tid,
 * tid + blockDim.x, ... keeping a value above its best or equal to it at a
 * lower column (ascending, so the first of equals); NaN never compares
 * above, so it is never kept. The threads' (value, column) pairs are then
 * reduced with the same rule, which gives the lowest column of the row's
 * largest value: the host's in-order scan, whose one NaN case (a row
 * starting with NaN gives 0) is taken first. */
#define ARGMAX_THREADS 1024
__global__ void k_argmax(const float *x, int64_t ldx, int64_t C, int32_t *ids, int64_t ldi)
{
    cuda_pdl_enter();
    __shared__ float bv[ARGMAX_THREADS / 32];
    __shared__ int64_t bi[ARGMAX_THREADS / 32];
    const int64_t r = blockIdx.x;
    const float *v = x + r * ldx;
    const int tid = threadIdx.x;
    float best = -INFINITY;
    int64_t at = INT64_MAX;
    for (int64_t c = tid; c < C; c += blockDim.x)
        best_of(best, at, v[c], c);
    block_best(best, at, bv, bi);
    if (tid == 0) {
        if (at == INT64_MAX || isnan(v[0]))      /* all NaN, or a NaN first */
            at = 0;
        ids[r * ldi] = (int32_t)at;
    }
}

void cuda_argmax(be_ctx *be, const be_tensor *x, be_tensor *ids)
{
    if (!x->rows)
        return;
    cuda_launch(k_argmax, (unsigned)x->rows, ARGMAX_THREADS, 0, cuda_ctx_of(be)->stream,
                (const float *)x->data, x->ld, x->cols, (int32_t *)ids->data, ids->ld);
    CUDA_LAUNCHED(be, "k_argmax");
}

/* out[t] = the routed rows' weighted sum (combine_at; with s, the fused
 * entry, the shared expert's row added last) */
template <int KT>
__global__ void k_combine(const float *y, int64_t ldy, const float *w, int64_t ldw, int64_t k,
                          const float *g, int64_t ldg, const float *s, int64_t lds, float *out,
                          int64_t ldo, int64_t rows, int64_t cols)
{
    cuda_pdl_enter();
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols)
        return;
    const cmb_src C = { y, w, g, s, ldy, ldw, ldg, lds, k };
    for (int64_t t = blockIdx.y; t < rows; t += gridDim.y)
        out[t * ldo + c] = combine_at<KT>(C, t, c);
}

/* k_combine's launch: a thread a column, a block row a token row */
static void combine(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k,
                    const be_tensor *g, const be_tensor *s, be_tensor *out, const char *what)
{
    const dim3 grid((unsigned)((out->cols + 255) / 256),
                    (unsigned)(out->rows < 65535 ? out->rows : 65535));
    cuda_launch(k == 8 ? k_combine<8> : k_combine<0>, grid, 256, 0, cuda_ctx_of(be)->stream,
        (const float *)y->data, y->ld, (const float *)w->data, w->ld, k,
        g ? (const float *)g->data : NULL, g ? g->ld : 0, s ? (const float *)s->data : NULL,
        s ? s->ld : 0, (float *)out->data, out->ld, out->rows, out->cols);
    CUDA_LAUNCHED(be, what);
}

void cuda_moe_combine_shared(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k,
                             be_tensor *g, be_tensor *s, be_tensor *out)
{
    if (!cuda_ctx_of(be)->fused) {
        cuda_sigmoid(be, g, g);
        cuda_mul_col(be, s, g, s);
        cuda_moe_combine(be, y, w, k, out);
        cuda_add(be, out, s, out);
        return;
    }
    assert(y->rows >= out->rows * k && y->cols == out->cols && w->cols == k);
    const int64_t n = out->rows * out->cols;
    if (!n)
        return;
    combine(be, y, w, k, g, s, out, "k_combine(shared)");
}

void cuda_moe_combine(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k,
                      be_tensor *out)
{
    assert(y->rows >= out->rows * k && y->cols == out->cols && w->cols == k);
    const int64_t n = out->rows * out->cols;
    if (!n)
        return;
    combine(be, y, w, k, NULL, NULL, out, "k_combine");
}

/* be_moe_combine_norm: with Q36_CUDA_CMBNORM=1 (fast or exact mode; off by
 * default: measured slower, cuda.h: cmb_norm), decode rows whose next norm takes k_norm_reg (the
 * fused entries, a whole row a group of at most 16 x 256 elements, no int8
 * rows written by norms, Q36_CUDA_Q8KEEP=1) are one k_norm_reg<NPT, true>
 * launch: each thread forms the routed sums of its elements (combine_at)
 * where the unfused norm loads them from o, so one graph node a MoE layer
 * fewer, the same bits (o is not written: nothing reads it after);
 * otherwise the two ops. */
void cuda_moe_combine_norm(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k,
                           be_tensor *g, be_tensor *s, be_tensor *o, be_tensor *x,
                           const be_weight *wn, float eps, int64_t group, be_tensor *h)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const int threads = group >= 256 ? 256 : group >= 128 ? 128 : 64;
    const int npt = (int)((group + threads - 1) / threads);
    if (!c->cmb_norm || !c->fused || !c->norm_reg || group != x->cols || x->rows < 1 ||
        x->rows > CUDA_Q8_NORM_ROWS || x->rows > c->mv_rows || npt > 16 || c->q8norm ||
        x->f16 || h->f16 || o->rows != x->rows || (wn && wn->type != 0)) {
        if (s)
            cuda_moe_combine_shared(be, y, w, k, g, s, o);
        else
            cuda_moe_combine(be, y, w, k, o);
        cuda_add_rms_norm(be, o, x, wn, eps, group, h);
        return;
    }
    assert(y->rows >= x->rows * k && y->cols == x->cols && w->cols == k);
    assert(!wn || (int64_t)wn->t->ne[0] == group);
    const cmb_src C = { (const float *)y->data, (const float *)w->data,
                        s ? (const float *)g->data : NULL, s ? (const float *)s->data : NULL,
                        y->ld, w->ld, s ? g->ld : 0, s ? s->ld : 0, k };
#define CNORM(NPT) cuda_launch(k_norm_reg<NPT, true>, (unsigned)x->rows, threads, 0, c->stream,    \
        (const float *)NULL, (int64_t)0, (float *)x->data, x->ld, group, (int64_t)1,               \
        wn ? (const float *)wn->data : (const float *)NULL, eps, 1.0f, (const float *)NULL,        \
        (int64_t)0, (float *)h->data, h->ld, (int8_t *)NULL, (float2 *)NULL, (__half *)NULL, C)
    if (npt == 1)
        CNORM(1);
    else if (npt == 2)
        CNORM(2);
    else if (npt <= 4)
        CNORM(4);
    else if (npt <= 8)
        CNORM(8);
    else
        CNORM(16);
#undef CNORM
    CUDA_LAUNCHED(be, s ? "k_norm(combine shared, add, rms)" : "k_norm(combine, add, rms)");
}
