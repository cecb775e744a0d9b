/* cpu_fdot.c: float32 dot products and lane sums in the accumulation order
 * of ggml's x86 CPU backend, so that q36's f32 results (attention scores,
 * the delta rule) carry the same rounding as llama.cpp's and the Q8
 * quantization that follows sees the same bits (MODEL.md §9.2, item 5).
 *
 * The order is a property of the libggml-cpu variant llama.cpp loads: with
 * AVX-512 its f32 vectors have 16 lanes, with AVX2 8. cpu_lanes() picks the
 * one this machine's llama.cpp would run (the widest the CPU has).
 *  - ggml_vec_dot_f32: 4 vector accumulators over steps of 4 vectors, fused
 *    multiply-add per lane; then acc0 += acc2, acc1 += acc3, acc0 += acc1;
 *    then the lanes of acc0 summed as a halving tree (16 lanes: pairs i and
 *    i+8, then i and i+4, then i and i+2, then 0 and 1; 8 lanes: pairs i and
 *    i+4, then (0+1) + (2+3)); the tail after the last whole step is added
 *    in element order: rounded products for whole groups of W/2 (8 with 16
 *    lanes, 4 with 8), fused multiply-adds for the rest (what GCC made of
 *    ggml's scalar tail loop in each build: vectorized products in blocks
 *    of 16, 8 (and 4 in haswell), summed in order, then contracted scalar
 *    steps; checked against libggml-cpu by tests/test_ggml_backend.c).
 *  - the llamafile f32 GEMM (attention's probabilities times V): one vector
 *    accumulator per output, lane = position mod lanes, fused multiply-add
 *    over the positions, then the halving tree (8 lanes: i and i+4, then
 *    i and i+2, then 0 and 1).
 *  - the AVX softmax sum: per chunk of one vector, the halving tree, added
 *    to a double.
 * These are orders of summation, written from the description above. */
#include "cpu_internal.h"

#include <immintrin.h>
#include <math.h>

#include "../../quant/fp16.h"

static int g_lanes;

int cpu_lanes(void)
{
    if (!g_lanes) {
        __builtin_cpu_init();
        g_lanes = cpu_avx512_ok() ? 16 : 8;
    }
    return g_lanes;
}

__attribute__((target("fma")))
static inline float fma_hw(float a, float b, float c) { return __builtin_fmaf(a, b, c); }

static int g_fma = -1, g_avx512 = -1, g_avx2 = -1;

static bool has_fma(void)
{
    if (g_fma < 0) {
        __builtin_cpu_init();
        g_fma = __builtin_cpu_supports("fma") ? 1 : 0;
    }
    return g_fma == 1;
}

/* Called by be_cpu_new before any worker runs, so the lazily set flags
 * above are written once, by one thread. */
static bool has_bf16dp(void);

void cpu_fdot_init(void)
{
    (void)cpu_lanes();
    (void)has_fma();
    (void)has_bf16dp();
    if (g_avx512 < 0) {
        g_avx512 = cpu_avx512_ok() && has_fma() ? 1 : 0;
        g_avx2 = __builtin_cpu_supports("avx2") && has_fma() ? 1 : 0;
    }
}

static inline float fma_any(float a, float b, float c)
{
    return has_fma() ? fma_hw(a, b, c) : fmaf(a, b, c);
}

/* The halving tree over W lanes (W = 16 or 8); l is clobbered. */
float cpu_lane_sum(float *l, int W)
{
    for (int h = W / 2; h >= 2; h /= 2)
        for (int i = 0; i < h; i++)
            l[i] = l[i] + l[i + h];
    return l[0] + l[1];
}

/* ggml_vec_dot_f32's last step for AVX2 differs from the tree: (0+1)+(2+3). */
static float lane_sum_vecdot(float *l, int W)
{
    if (W == 16)
        return cpu_lane_sum(l, 16);
    for (int i = 0; i < 4; i++)
        l[i] = l[i] + l[i + 4];
    return (l[0] + l[1]) + (l[2] + l[3]);
}

__attribute__((target("fma")))
static float dot_vec_fma(int64_t n, const float *x, const float *y, int W)
{
    float acc[4][16] = { { 0 } };
    const int64_t step = 4 * W, np = n - n % step;
    for (int64_t i = 0; i < np; i += step)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < W; l++)
                acc[j][l] = __builtin_fmaf(x[i + j * W + l], y[i + j * W + l], acc[j][l]);
    for (int l = 0; l < W; l++) {
        acc[0][l] = acc[0][l] + acc[2][l];
        acc[1][l] = acc[1][l] + acc[3][l];
        acc[0][l] = acc[0][l] + acc[1][l];
    }
    float s = lane_sum_vecdot(acc[0], W);
    const int64_t nv = np + (n - np) / (W / 2) * (W / 2);
    for (int64_t i = np; i < nv; i++) {
        const float p = x[i] * y[i];
        s = s + p;
    }
    for (int64_t i = nv; i < n; i++)
        s = __builtin_fmaf(x[i], y[i], s);
    return s;
}

/* The same orders with vector registers (one register = one set of lanes,
 * so the arithmetic is identical element for element). */
__attribute__((target("avx512f,fma")))
static float dot_vec_avx512(int64_t n, const float *x, const float *y)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    const int64_t np = n - n % 64;
    for (int64_t i = 0; i < np; i += 64) {
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(y + i + 16), a1);
        a2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 32), _mm512_loadu_ps(y + i + 32), a2);
        a3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 48), _mm512_loadu_ps(y + i + 48), a3);
    }
    a0 = _mm512_add_ps(a0, a2);
    a1 = _mm512_add_ps(a1, a3);
    a0 = _mm512_add_ps(a0, a1);
    float l[16];
    _mm512_storeu_ps(l, a0);
    float s = cpu_lane_sum(l, 16);
    const int64_t nv = np + (n - np) / 8 * 8;
    for (int64_t i = np; i < nv; i++) {
        const float p = x[i] * y[i];
        s = s + p;
    }
    for (int64_t i = nv; i < n; i++)
        s = __builtin_fmaf(x[i], y[i], s);
    return s;
}

__attribute__((target("avx512f,fma")))
static void axpy_avx512(int64_t n, float *y, const float *x, float v)
{
    const __m512 vv = _mm512_set1_ps(v);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(_mm512_loadu_ps(x + i), vv, _mm512_loadu_ps(y + i)));
    for (; i < n; i++)
        y[i] = __builtin_fmaf(x[i], v, y[i]);
}

__attribute__((target("avx2,fma")))
static void axpy_avx2(int64_t n, float *y, const float *x, float v)
{
    const __m256 vv = _mm256_set1_ps(v);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(_mm256_loadu_ps(x + i), vv, _mm256_loadu_ps(y + i)));
    for (; i < n; i++)
        y[i] = __builtin_fmaf(x[i], v, y[i]);
}

float cpu_dot_vec(int64_t n, const float *x, const float *y)
{
    const int W = cpu_lanes();
    if (W == 16 && g_avx512 == 1)
        return dot_vec_avx512(n, x, y);
    if (has_fma())
        return dot_vec_fma(n, x, y, W);
    return cpu_dot_vec_ref(n, x, y, W);
}

float cpu_dot_vec_ref(int64_t n, const float *x, const float *y, int W)
{
    float acc[4][16] = { { 0 } };
    const int64_t step = 4 * W, np = n - n % step;
    for (int64_t i = 0; i < np; i += step)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < W; l++)
                acc[j][l] = fmaf(x[i + j * W + l], y[i + j * W + l], acc[j][l]);
    for (int l = 0; l < W; l++) {
        acc[0][l] = acc[0][l] + acc[2][l];
        acc[1][l] = acc[1][l] + acc[3][l];
        acc[0][l] = acc[0][l] + acc[1][l];
    }
    float s = lane_sum_vecdot(acc[0], W);
    const int64_t nv = np + (n - np) / (W / 2) * (W / 2);
    for (int64_t i = np; i < nv; i++) {
        const float p = x[i] * y[i];
        s = s + p;
    }
    for (int64_t i = nv; i < n; i++)
        s = fmaf(x[i], y[i], s);
    return s;
}

/* y[i] = fma(x[i], v, y[i]) for i < n: a lane-wise multiply-add. */
__attribute__((target("fma")))
static void axpy_fma(int64_t n, float *y, const float *x, float v)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = __builtin_fmaf(x[i], v, y[i]);
}

void cpu_axpy(int64_t n, float *y, const float *x, float v)
{
    if (g_avx512 == 1) {
        axpy_avx512(n, y, x, v);
        return;
    }
    if (g_avx2 == 1) {
        axpy_avx2(n, y, x, v);
        return;
    }
    if (has_fma()) {
        axpy_fma(n, y, x, v);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        y[i] = fma_any(x[i], v, y[i]);
}

/* ------------------------------------------------- the f32 GEMM's order */

/* sum_i x[i]*y[i] with one accumulator lane per i mod W, fused
 * multiply-adds in order, then the halving tree: what llamafile's f32 GEMM
 * computes for one output when the reduction length is a multiple of W. */
__attribute__((target("fma")))
static float dot_lanes_fma(int64_t n, const float *x, const float *y, int W)
{
    float acc[16] = { 0 };
    for (int64_t i = 0; i < n; i += W)
        for (int l = 0; l < W; l++)
            acc[l] = __builtin_fmaf(x[i + l], y[i + l], acc[l]);
    return cpu_lane_sum(acc, W);
}

float cpu_dot_lanes(int64_t n, const void *x, const void *y)
{
    const int W = cpu_lanes();
    if (has_fma())
        return dot_lanes_fma(n, x, y, W);
    const float *xf = x, *yf = y;
    float acc[16] = { 0 };
    for (int64_t i = 0; i < n; i += W)
        for (int l = 0; l < W; l++)
            acc[l] = fmaf(xf[i + l], yf[i + l], acc[l]);
    return cpu_lane_sum(acc, W);
}

/* x[i] *= v: one rounding per element, so any vector width gives the same bits. */
__attribute__((target("avx512f")))
static void scale_avx512(int64_t n, float *x, float v)
{
    const __m512 vv = _mm512_set1_ps(v);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), vv));
    for (; i < n; i++)
        x[i] *= v;
}

void cpu_scale(int64_t n, float *x, float v)
{
    if (g_avx512 == 1) {
        scale_avx512(n, x, v);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        x[i] *= v;
}

/* ------------------------------------------------ the bf16 GEMM's order */

static inline float bf16_daz(uint16_t h)
{
    if ((h & 0x7F80) == 0)            /* zero or subnormal: treated as zero */
        h &= 0x8000;
    return quant_bits_f32((uint32_t)h << 16);
}

static inline float ftz(float x)
{
    return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x;
}

/* llamafile's bf16 GEMM with AVX-512 BF16: 16 lanes; each step of 32
 * elements adds to lane l the products of elements 2l+1 and then 2l (each
 * exact, each sum rounded once, subnormal inputs as zero and subnormal
 * results flushed: the vdpbf16ps rules); then the halving tree. */
/* With the instruction itself where the CPU has it (cpu_dot_bf16_* are
 * only chosen there): the same rules by definition. */
__attribute__((target("avx512f,avx512bf16")))
static float dot_bf16_lanes_dp(int64_t n, const uint16_t *x, const uint16_t *y)
{
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 32)
        acc = _mm512_dpbf16_ps(acc, (__m512bh)_mm512_loadu_si512((const void *)(x + i)),
                               (__m512bh)_mm512_loadu_si512((const void *)(y + i)));
    float l[16];
    _mm512_storeu_ps(l, acc);
    return cpu_lane_sum(l, 16);
}

__attribute__((target("avx512f,avx512bf16")))
static float dot_bf16_vec_dp(int64_t n, const uint16_t *x, const uint16_t *y)
{
    __m512 c1 = _mm512_setzero_ps(), c2 = c1;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        c1 = _mm512_dpbf16_ps(c1, (__m512bh)_mm512_loadu_si512((const void *)(x + i)),
                              (__m512bh)_mm512_loadu_si512((const void *)(y + i)));
        c2 = _mm512_dpbf16_ps(c2, (__m512bh)_mm512_loadu_si512((const void *)(x + i + 32)),
                              (__m512bh)_mm512_loadu_si512((const void *)(y + i + 32)));
    }
    float l1[16], l2[16];
    _mm512_storeu_ps(l1, c1);
    _mm512_storeu_ps(l2, c2);
    double s = 0.0;
    s += (double)cpu_lane_sum(l1, 16);
    s += (double)cpu_lane_sum(l2, 16);
    for (; i < n; i++)
        s += (double)(quant_bf16_to_f32(x[i]) * quant_bf16_to_f32(y[i]));
    return (float)s;
}

static int g_bf16dp = -1;

static bool has_bf16dp(void)
{
    if (g_bf16dp < 0)
        g_bf16dp = cpu_avx512_ok() && __builtin_cpu_supports("avx512bf16") ? 1 : 0;
    return g_bf16dp == 1;
}

/* The bf16 orders of llama.cpp's AVX2 build (haswell), which has no
 * vdpbf16ps: both widen bf16 exactly (a shift; subnormals kept, nothing
 * flushed) and take one fused multiply-add per element.
 *  - llamafile's GEMM: as its f16 GEMM, one 8-lane accumulator with lane =
 *    index mod 8, then the halving tree (n a multiple of 8);
 *  - ggml_vec_dot_bf16: four 8-lane accumulators over steps of 32 (element
 *    8j + l of a step in lane l of accumulator j), then (0 + 2) + (1 + 3),
 *    the halving tree, into a double, and the tail one float product at a
 *    time, added in double. */
static float dot_bf16_lanes8(int64_t n, const uint16_t *x, const uint16_t *y)
{
    float acc[8] = { 0 };
    for (int64_t i = 0; i < n; i += 8)
        for (int l = 0; l < 8; l++)
            acc[l] = fma_any(quant_bf16_to_f32(x[i + l]), quant_bf16_to_f32(y[i + l]), acc[l]);
    return cpu_lane_sum(acc, 8);
}

static float dot_bf16_vec8(int64_t n, const uint16_t *x, const uint16_t *y)
{
    float acc[4][8] = { { 0 } };
    const int64_t np = n - n % 32;
    for (int64_t i = 0; i < np; i += 32)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 8; l++)
                acc[j][l] = fma_any(quant_bf16_to_f32(x[i + 8 * j + l]), quant_bf16_to_f32(y[i + 8 * j + l]),
                                    acc[j][l]);
    for (int l = 0; l < 8; l++)
        acc[0][l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
    double s = (double)cpu_lane_sum(acc[0], 8);
    for (int64_t i = np; i < n; i++)
        s += (double)(quant_bf16_to_f32(x[i]) * quant_bf16_to_f32(y[i]));
    return (float)s;
}

float cpu_dot_bf16_lanes(int64_t n, const void *w, const void *a)
{
    if (has_bf16dp())
        return dot_bf16_lanes_dp(n, w, a);
    if (cpu_lanes() == 8)
        return dot_bf16_lanes8(n, w, a);
    return cpu_dot_bf16_lanes_ref(n, w, a);
}

float cpu_dot_bf16_vec(int64_t n, const void *w, const void *a)
{
    if (has_bf16dp())
        return dot_bf16_vec_dp(n, w, a);
    if (cpu_lanes() == 8)
        return dot_bf16_vec8(n, w, a);
    return cpu_dot_bf16_vec_ref(n, w, a);
}

float cpu_dot_bf16_lanes_ref(int64_t n, const void *w, const void *a)
{
    const uint16_t *x = w, *y = a;
    float acc[16] = { 0 };
    for (int64_t i = 0; i < n; i += 32)
        for (int l = 0; l < 16; l++) {
            const int64_t e = i + 2 * l;
            acc[l] = ftz(fma_any(bf16_daz(x[e + 1]), bf16_daz(y[e + 1]), acc[l]));
            acc[l] = ftz(fma_any(bf16_daz(x[e]), bf16_daz(y[e]), acc[l]));
        }
    return cpu_lane_sum(acc, 16);
}

/* ggml_vec_dot_bf16's order with AVX-512 BF16: two 16-lane accumulators
 * over steps of 64 elements (the first takes elements 0..31 of a step, the
 * second 32..63, pairs as in cpu_dot_bf16_lanes), each summed as a tree,
 * added into a double, then the tail one product at a time in double. */
float cpu_dot_bf16_vec_ref(int64_t n, const void *w, const void *a)
{
    const uint16_t *x = w, *y = a;
    float c[2][16] = { { 0 } };
    int64_t i = 0;
    for (; i + 64 <= n; i += 64)
        for (int h = 0; h < 2; h++)
            for (int l = 0; l < 16; l++) {
                const int64_t e = i + 32 * h + 2 * l;
                c[h][l] = ftz(fma_any(bf16_daz(x[e + 1]), bf16_daz(y[e + 1]), c[h][l]));
                c[h][l] = ftz(fma_any(bf16_daz(x[e]), bf16_daz(y[e]), c[h][l]));
            }
    double s = 0.0;
    s += (double)cpu_lane_sum(c[0], 16);
    s += (double)cpu_lane_sum(c[1], 16);
    for (; i < n; i++)
        s += (double)(quant_bf16_to_f32(x[i]) * quant_bf16_to_f32(y[i]));
    return (float)s;
}

/* ------------------------------------------------------ the f16 orders */

/* ggml_vec_dot_f16's order: as ggml_vec_dot_f32's (4 vector accumulators,
 * fused multiply-adds on the widened values, the same reduction), but the
 * reduced value and the tail (products rounded to float) are summed in
 * double. Both f16 rows are widened exactly to f32 first. */
__attribute__((target("avx512f,fma,f16c")))
static float dot_f16_vec_avx512(int64_t n, const uint16_t *x, const uint16_t *y)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    const int64_t np = n - n % 64;
#define H16(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p)))
    for (int64_t i = 0; i < np; i += 64) {
        a0 = _mm512_fmadd_ps(H16(x + i), H16(y + i), a0);
        a1 = _mm512_fmadd_ps(H16(x + i + 16), H16(y + i + 16), a1);
        a2 = _mm512_fmadd_ps(H16(x + i + 32), H16(y + i + 32), a2);
        a3 = _mm512_fmadd_ps(H16(x + i + 48), H16(y + i + 48), a3);
    }
#undef H16
    a0 = _mm512_add_ps(a0, a2);
    a1 = _mm512_add_ps(a1, a3);
    a0 = _mm512_add_ps(a0, a1);
    float l[16];
    _mm512_storeu_ps(l, a0);
    double s = (double)cpu_lane_sum(l, 16);
    for (int64_t i = np; i < n; i++)
        s += (double)(_cvtsh_ss(x[i]) * _cvtsh_ss(y[i]));
    return (float)s;
}

__attribute__((target("avx512f,fma,f16c")))
static float dot_f16_lanes_avx512(int64_t n, const uint16_t *x, const uint16_t *y)
{
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16)
        acc = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(x + i))),
                              _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(y + i))), acc);
    float l[16];
    _mm512_storeu_ps(l, acc);
    return cpu_lane_sum(l, 16);
}

float cpu_dot_f16_vec(int64_t n, const void *w, const void *a)
{
    const uint16_t *x = w, *y = a;
    const int W = cpu_lanes();
    if (W == 16 && g_avx512 == 1)
        return dot_f16_vec_avx512(n, x, y);
    float acc[4][16] = { { 0 } };
    const int64_t step = 4 * W, np = n - n % step;
    for (int64_t i = 0; i < np; i += step)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < W; l++)
                acc[j][l] = fma_any(quant_f16_to_f32(x[i + j * W + l]), quant_f16_to_f32(y[i + j * W + l]),
                                    acc[j][l]);
    for (int l = 0; l < W; l++) {
        acc[0][l] = acc[0][l] + acc[2][l];
        acc[1][l] = acc[1][l] + acc[3][l];
        acc[0][l] = acc[0][l] + acc[1][l];
    }
    double s = (double)lane_sum_vecdot(acc[0], W);
    for (int64_t i = np; i < n; i++)
        s += (double)(quant_f16_to_f32(x[i]) * quant_f16_to_f32(y[i]));
    return (float)s;
}

/* llamafile's f16 GEMM: one f32 lane per element index mod the vector
 * width over the widened values, then the halving tree (n a multiple of
 * the width). */
float cpu_dot_f16_lanes(int64_t n, const void *w, const void *a)
{
    const uint16_t *x = w, *y = a;
    const int W = cpu_lanes();
    if (W == 16 && g_avx512 == 1)
        return dot_f16_lanes_avx512(n, x, y);
    float acc[16] = { 0 };
    for (int64_t i = 0; i < n; i += W)
        for (int l = 0; l < W; l++)
            acc[l] = fma_any(quant_f16_to_f32(x[i + l]), quant_f16_to_f32(y[i + l]), acc[l]);
    return cpu_lane_sum(acc, W);
}
