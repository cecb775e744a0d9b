/* cuda_gemm.cu: the CUDA backend's f16 tensor-core weight products for
 * prompt batches (fast mode, unless Q36_CUDA_GEMM16=0; cuda_matmul.cu calls
 * cuda_gemm16 for batches above its matrix-vector rows). */
#include "cuda.h"
#include "cuda_deq.h"

#include <stdlib.h>
#include <string.h>

/* In fast mode (be_shape.fast, unless Q36_CUDA_GEMM16=0): batches above 8 rows (MATVEC_ROWS) of a weight of a
 * type other than F32 take tensor cores instead of the f32 cuBLAS product:
 * the activation rows rounded to f16 once, the weight dequantized to f16
 * in slabs of rows (deq8's values, then rounded to nearest), cuBLAS
 * GemmEx with f32 accumulation. Each product gains up to two f16
 * roundings (2^-11 relative each) over the f32 path; |x| above 65504
 * becomes inf. Both parts share the dequantization scratch; when the
 * activations leave no room for 64 weight rows, the f32 path runs. */
bool cuda_gemm16_enabled(const be_shape *s)
{
    return cuda_fast_path(s, "Q36_CUDA_GEMM16");
}

/* rows of x to f16, a block a row (no division per element) */
__global__ void k_to_half(const float *__restrict__ x, int64_t ldx, int64_t R, int64_t K,
                          __half *__restrict__ out)
{
    cuda_pdl_enter();
    for (int64_t r = blockIdx.x; r < R; r += gridDim.x)
        for (int64_t i = threadIdx.x; i < K; i += blockDim.x)
            out[r * K + i] = __float2half_rn(x[r * ldx + i]);
}

/* be_matmul_glu's SwiGLU of prompt rows, g = silu(g) * u stored over g (as
 * k_ew's swiglu forms it) and rounded to f16 at the scratch's start in
 * the same launch, when the product that follows takes the f16 path: it
 * then finds g's f16 rows there (cuda.h: h16) instead of k_to_half's */
__global__ void k_swiglu_h(float *__restrict__ g, int64_t ldg, const float *__restrict__ u,
                           int64_t ldu, int64_t R, int64_t K, __half *__restrict__ out)
{
    cuda_pdl_enter();
    for (int64_t r = blockIdx.x; r < R; r += gridDim.x)
        for (int64_t i = threadIdx.x; i < K; i += blockDim.x) {
            const float v = cuda_swiglu1(g[r * ldg + i], u[r * ldu + i]);
            g[r * ldg + i] = v;
            out[r * K + i] = __float2half_rn(v);
        }
}

/* the f16 rows of x (R rows of K) and the weight slabs of at least 64
 * rows after them: the scratch's halves they take */
static size_t x16_halves(int64_t R, int64_t K)
{
    return (((size_t)(R * K) + 7) & ~(size_t)7) + (size_t)K * 64;
}

__half *cuda_h16_room(cuda_ctx *c, int64_t R, int64_t K)
{
    if (!c->gemm16 || !c->h16keep || c->inv || R <= c->mv_rows || !c->deq ||
        x16_halves(R, K) > c->deq_floats * 2)
        return NULL;
    return (__half *)c->deq;
}

void cuda_h16_kept(cuda_ctx *c, const be_tensor *x)
{
    cuda_q8_drop(c);                    /* the scratch is overwritten */
    c->h16.x = x->data;
    c->h16.R = x->rows;
    c->h16.ld = x->ld;
    c->h16.K = x->cols;
    c->h16.valid = c->h16keep;
}

bool cuda_h16_is(const cuda_ctx *c, const void *x, int64_t R, int64_t ld, int64_t K)
{
    return c->h16.valid && c->h16.x == x && c->h16.R == R && c->h16.ld == ld && c->h16.K == K;
}

bool cuda_swiglu_h16(be_ctx *be, uint32_t type, be_tensor *g, const be_tensor *u)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const int64_t R = g->rows, K = g->cols;
    __half *out = cuda_h16_room(c, R, K);
    if (!out || type == QT_F32 || !cuda_type_native(type) || g->f16 || u->f16)
        return false;
    cuda_launch(k_swiglu_h, (unsigned)(R < 65535 * 8 ? R : 65535 * 8), 256, 0, c->stream,
                (float *)g->data, g->ld, (const float *)u->data, u->ld, R, K, out);
    if (CUDA_LAUNCHED(be, "k_swiglu_h"))
        cuda_h16_kept(c, g);
    return true;
}

/* y = x · W^T through f16 tiles; false: not taken (the caller runs gemm) */
bool cuda_gemm16(be_ctx *be, uint32_t type, const uint8_t *W, uint64_t rb, int64_t K, int64_t N,
                   const be_tensor *x, be_tensor *y)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const int64_t R = x->rows;
    const size_t halves = c->deq ? c->deq_floats * 2 : 0;
    const size_t xh = ((size_t)(R * K) + 7) & ~(size_t)7;     /* 16-byte aligned after x */
    if (type == QT_F32 || !cuda_type_native(type) || halves < x16_halves(R, K))
        return false;
    __half *x16 = (__half *)c->deq, *w16 = x16 + xh;
    /* Q36_CUDA_F16KEEP: the weight's kept f16 copy, one product */
    const __half *kept = cuda_f16_kept(be, type, W, rb, K, N);
    const int64_t fit = (int64_t)((halves - xh) / (size_t)K);
    const int64_t chunk = kept || fit >= N ? N : fit;
    cudaStream_t st = c->stream;
    /* x's f16 rows: those at the scratch's start when they are x's
     * (cuda.h: h16), else rounded there now (the rest of the scratch,
     * w16, is the weight slabs') */
    if (!cuda_h16_is(c, x->data, R, x->ld, K)) {
        cuda_q8_drop(c);                /* the scratch is overwritten */
        cuda_launch(k_to_half, (unsigned)(R < 65535 * 8 ? R : 65535 * 8), 256, 0, st,
                    (const float *)x->data, x->ld, R, K, x16);
        if (!CUDA_LAUNCHED(be, "k_to_half"))
            return true;
        cuda_h16_kept(c, x);
    }
    const float one = 1.0f, zero = 0.0f;
    /* tensor cores: the handle's pedantic f32 mode is for the f32 path */
    if (!CUBLAS_OK(be, cublasSetMathMode(c->blas, CUBLAS_DEFAULT_MATH)))
        return true;
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
        const int64_t nc = N - n0 < chunk ? N - n0 : chunk;
        if (!kept && !cuda_dequant_h(be, type, W, rb, K, n0, nc, w16))
            break;
        /* column-major: C (nc x R, ld y) = A^T (A: K x nc) * B (K x R), f32 sums */
        if (!CUBLAS_OK(be, cublasGemmEx(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)nc, (int)R, (int)K,
                                        &one, kept ? kept + n0 * K : w16, CUDA_R_16F, (int)K,
                                        x16, CUDA_R_16F, (int)K,
                                        &zero, (float *)y->data + n0, CUDA_R_32F, (int)y->ld,
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)))
            break;
        cuda_count_as(c, "cublas f16 gemm");
    }
    CUBLAS_OK(be, cublasSetMathMode(c->blas, CUBLAS_PEDANTIC_MATH));
    return true;
}

