/* cpu_ops.c: the CPU backend's row-wise and element-wise ops: add/mul,
 * SiLU, sigmoid, SwiGLU and the DeltaNet gates (the norms are in
 * cpu_norm.c, rope in cpu_rope.c, the MoE router in cpu_moe.c). Each follows the float recipe of ggml's CPU
 * kernel it stands for (MODEL.md §9.1): softmax sums in double
 * and scales by the float of 1/sum. Where ggml's x86 kernels take their
 * own lane exp on full vectors (SiLU, SwiGLU, the router's softmax), so do
 * these (cpu_gexp.h), with libm's expf for a row's tail as ggml; sigmoid
 * and the gates' softplus take libm's expf/logf as ggml does, sigmoid a
 * vector at a time from cpu_vexp.h, whose vector expf gives libm's bits. */
#include "cpu.h"
#include "cpu_ops.h"
#include "cpu_gexp.h"
#include "cpu_vexp.h"

#include <assert.h>
#include <math.h>
#include <string.h>

static void same_shape(const be_tensor *a, const be_tensor *b)
{
    (void)a; (void)b;
    assert(a->rows == b->rows && a->cols == b->cols && !a->f16 && !b->f16);
}

/* ----------------------------------------------------------- elementwise */

/* y = a + b, a * b, or a * b[0] (the row's one column of s) along a row:
 * the plain loop, and the same float operation 16 lanes at a time. y may
 * be a or b (each vector is loaded before it is stored). */
enum bin_kind { BIN_ADD, BIN_MUL, BIN_MUL_COL };

/* The plain loop. Inlined into the AVX-512 one for its tail, so that no
 * legacy-SSE code runs after it with the upper register halves dirty:
 * GCC left out the vzeroupper before the tail call it made of this, and
 * the scalar RMS norm that follows an add in the model ran ~25% slower. */
static inline __attribute__((always_inline)) void bin_row_c(enum bin_kind k, int64_t n,
                                                            const float *a, const float *b,
                                                            float *y)
{
    for (int64_t c = 0; c < n; c++)
        y[c] = k == BIN_ADD ? a[c] + b[c] : a[c] * (k == BIN_MUL ? b[c] : b[0]);
}

#if defined(__x86_64__)
CPU_VEXP_AVX512 static void bin_row_avx512(enum bin_kind k, int64_t n, const float *a,
                                           const float *b, float *y)
{
    const __m512 v = _mm512_set1_ps(k == BIN_MUL_COL ? b[0] : 0.0f);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 va = _mm512_loadu_ps(a + i);
        const __m512 vb = k == BIN_MUL_COL ? v : _mm512_loadu_ps(b + i);
        _mm512_storeu_ps(y + i, k == BIN_ADD ? _mm512_add_ps(va, vb) : _mm512_mul_ps(va, vb));
    }
    bin_row_c(k, n - i, a + i, k == BIN_MUL_COL ? b : b + i, y + i);
}
#endif

typedef struct {
    enum bin_kind    k;
    const be_tensor *a, *b;    /* b: rows x 1 for BIN_MUL_COL */
    be_tensor       *y;
    bool             vec;      /* the CPU has AVX-512 */
} bin_job;

static void bin_task(void *arg, int64_t r0, int64_t r1, int tid)
{
    (void)tid;
    const bin_job *j = arg;
    for (int64_t r = r0; r < r1; r++) {
        const float *ar = cpu_row(j->a, r), *br = cpu_row(j->b, r);
        float *yr = cpu_row(j->y, r);
#if defined(__x86_64__)
        if (j->vec) {
            bin_row_avx512(j->k, j->a->cols, ar, br, yr);
            continue;
        }
#endif
        bin_row_c(j->k, j->a->cols, ar, br, yr);
    }
}

static void bin_rows(be_ctx *be, enum bin_kind k, const be_tensor *a, const be_tensor *b,
                     be_tensor *y)
{
    same_shape(a, y);
    if (k == BIN_MUL_COL)
        assert(b->rows == a->rows && b->cols == 1 && !b->f16);
    else
        same_shape(a, b);
    bin_job j = { k, a, b, y, cpu_vexp_level() == 2 };
    cpu_for(be, a->rows, cpu_row_grain(a->cols), bin_task, &j);
}

void cpu_add(be_ctx *be, const be_tensor *a, const be_tensor *b, be_tensor *y)
{
    CPU_PROF_BEGIN(be);
    bin_rows(be, BIN_ADD, a, b, y);
    CPU_PROF_END(be, BE_PROF_ADD_MUL);
}

void cpu_mul(be_ctx *be, const be_tensor *a, const be_tensor *b, be_tensor *y)
{
    CPU_PROF_BEGIN(be);
    bin_rows(be, BIN_MUL, a, b, y);
    CPU_PROF_END(be, BE_PROF_ADD_MUL);
}

void cpu_mul_col(be_ctx *be, const be_tensor *a, const be_tensor *s, be_tensor *y)
{
    CPU_PROF_BEGIN(be);
    bin_rows(be, BIN_MUL_COL, a, s, y);
    CPU_PROF_END(be, BE_PROF_ADD_MUL);
}

/* The elementwise activations: e = expf(-g) from cpu_vexp.h, then the
 * float formula of each op with e in place of expf(-g): silu g / (1 + e),
 * sigmoid 1 / (1 + e), swiglu silu(g) * u (u NULL for the first two). In
 * vector registers where the CPU has AVX2 or AVX-512, else CHUNK floats
 * at a time through cpu_vexp(). */
enum act_kind { ACT_SILU, ACT_SIGMOID, ACT_SWIGLU };
#define CHUNK 256

/* one element of op k, e = expf(-g) */
static inline float act_one(enum act_kind k, float g, float u, float e)
{
    return k == ACT_SIGMOID ? 1.0f / (1.0f + e)
         : k == ACT_SILU ? g / (1.0f + e) : g / (1.0f + e) * u;
}

static void act_row_c(enum act_kind k, int64_t n, const float *g, const float *u, float *y)
{
    float e[CHUNK];
    for (int64_t c0 = 0; c0 < n; c0 += CHUNK) {
        const int64_t m = n - c0 < CHUNK ? n - c0 : CHUNK;
        for (int64_t i = 0; i < m; i++)
            e[i] = -g[c0 + i];
        cpu_vexp(m, e, e);
        for (int64_t i = 0; i < m; i++)
            y[c0 + i] = act_one(k, g[c0 + i], u ? u[c0 + i] : 0.0f, e[i]);
    }
}

#if defined(__x86_64__)
/* The same per-lane operations in vector registers (the compiler does not
 * vectorize the division loops above at -O2): measured 2.2 -> ~1 ns per
 * SwiGLU element on one thread, ~0.35 with cpu_vexp's glibc form, whose
 * exp is then most of the time (the division ~10%). */
CPU_VEXP_AVX512 static void act_row_avx512(enum act_kind k, int64_t n, const float *g,
                                           const float *u, float *y)
{
    const __m512 one = _mm512_set1_ps(1.0f), neg = _mm512_set1_ps(-0.0f);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 gv = _mm512_loadu_ps(g + i);
        __m512 r;
        if (k == ACT_SIGMOID)
            r = _mm512_div_ps(one, _mm512_add_ps(one, cpu_vexp_avx512(_mm512_xor_ps(gv, neg))));
        else
            r = cpu_gsilu_avx512(gv);
        if (k == ACT_SWIGLU)
            r = _mm512_mul_ps(r, _mm512_loadu_ps(u + i));
        _mm512_storeu_ps(y + i, r);
    }
    for (; i < n; i++)
        y[i] = act_one(k, g[i], u ? u[i] : 0.0f, expf(-g[i]));
}

CPU_VEXP_AVX2 static void act_row_avx2(enum act_kind k, int64_t n, const float *g,
                                       const float *u, float *y)
{
    const __m256 one = _mm256_set1_ps(1.0f), neg = _mm256_set1_ps(-0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 gv = _mm256_loadu_ps(g + i);
        __m256 r;
        if (k == ACT_SIGMOID)
            r = _mm256_div_ps(one, _mm256_add_ps(one, cpu_vexp_avx2(_mm256_xor_ps(gv, neg))));
        else
            r = cpu_gsilu_avx2(gv);
        if (k == ACT_SWIGLU)
            r = _mm256_mul_ps(r, _mm256_loadu_ps(u + i));
        _mm256_storeu_ps(y + i, r);
    }
    for (; i < n; i++)
        y[i] = act_one(k, g[i], u ? u[i] : 0.0f, expf(-g[i]));
}
#endif

void cpu_act_row_level(int kind, int level, int64_t n, const float *g, const float *u, float *y)
{
    const enum act_kind k = (enum act_kind)kind;
#if defined(__x86_64__)
    if (level > cpu_vexp_level())
        level = cpu_vexp_level();
    if (level == 2) {
        act_row_avx512(k, n, g, u, y);
        return;
    }
    if (level == 1) {
        act_row_avx2(k, n, g, u, y);
        return;
    }
#else
    (void)level;
#endif
    act_row_c(k, n, g, u, y);
}

static void act_row(enum act_kind k, int64_t n, const float *g, const float *u, float *y)
{
    cpu_act_row_level((int)k, 2, n, g, u, y);
}

typedef struct {
    enum act_kind    k;
    const be_tensor *g, *u;    /* u NULL for silu, sigmoid */
    be_tensor       *y;
} act_job;

static void act_task(void *arg, int64_t r0, int64_t r1, int tid)
{
    (void)tid;
    const act_job *j = arg;
    for (int64_t r = r0; r < r1; r++)
        act_row(j->k, j->g->cols, cpu_row(j->g, r), j->u ? cpu_row(j->u, r) : NULL,
                cpu_row(j->y, r));
}

static void act_rows(be_ctx *be, enum act_kind k, const be_tensor *g, const be_tensor *u,
                     be_tensor *y)
{
    same_shape(g, y);
    if (u)
        same_shape(g, u);
    act_job j = { k, g, u, y };
    cpu_for(be, g->rows, cpu_row_grain(g->cols), act_task, &j);
}

void cpu_silu(be_ctx *be, const be_tensor *x, be_tensor *y)
{
    CPU_PROF_BEGIN(be);
    act_rows(be, ACT_SILU, x, NULL, y);
    CPU_PROF_END(be, BE_PROF_ACT);
}

void cpu_sigmoid(be_ctx *be, const be_tensor *x, be_tensor *y)
{
    CPU_PROF_BEGIN(be);
    act_rows(be, ACT_SIGMOID, x, NULL, y);
    CPU_PROF_END(be, BE_PROF_ACT);
}

typedef struct {
    const be_tensor *x;
    int64_t n;
} hadamard_args;

static void hadamard_task(void *arg, int64_t r0, int64_t r1, int tid)
{
    const be_tensor *x = ((const hadamard_args *)arg)->x;
    const int64_t n = ((const hadamard_args *)arg)->n;
    const float scale = 1.0f / sqrtf((float)n);
    (void)tid;
    for (int64_t r = r0; r < r1; r++) {
        float *row = cpu_row(x, r);
        for (int64_t c0 = 0; c0 < x->cols; c0 += n) {
            float *y = row + c0;
            for (int64_t j = 0; j < n; j++)
                y[j] *= scale;
            for (int64_t len = 1; len < n; len <<= 1)
                for (int64_t i = 0; i < n; i += 2 * len)
                    for (int64_t j = i; j < i + len; j++) {
                        const float u = y[j], v = y[j + len];
                        y[j] = u + v;
                        y[j + len] = u - v;
                    }
        }
    }
}

void cpu_hadamard(be_ctx *be, be_tensor *x, int64_t n)
{
    CPU_PROF_BEGIN(be);
    hadamard_args a = { x, n };
    cpu_for(be, x->rows, 16, hadamard_task, &a);
    CPU_PROF_END(be, BE_PROF_ACT);
}

void cpu_swiglu(be_ctx *be, const be_tensor *g, const be_tensor *u, be_tensor *y)
{
    CPU_PROF_BEGIN(be);
    act_rows(be, ACT_SWIGLU, g, u, y);
    CPU_PROF_END(be, BE_PROF_ACT);
}

/* The DeltaNet gates of one row of heads: g = softplus(alpha + dt_bias) * a
 * with softplus(x) = x > 20 ? x : logf(1 + expf(x)), and beta = 1 / (1 +
 * expf(-b)); the exps CHUNK heads at a time from cpu_vexp (libm's bits). */
typedef struct {
    const be_tensor *alpha, *b;
    const float     *dt, *a;
    be_tensor       *g, *beta;
} gates_job;

static void gates_task(void *arg, int64_t r0, int64_t r1, int tid)
{
    (void)tid;
    const gates_job *j = arg;
    const int64_t n = j->alpha->cols;
    float biased[CHUNK], e[CHUNK], f[CHUNK];
    for (int64_t r = r0; r < r1; r++) {
        const float *al = cpu_row(j->alpha, r), *br = cpu_row(j->b, r);
        float *gr = cpu_row(j->g, r), *bt = cpu_row(j->beta, r);
        for (int64_t h0 = 0; h0 < n; h0 += CHUNK) {
            const int64_t m = n - h0 < CHUNK ? n - h0 : CHUNK;
            for (int64_t i = 0; i < m; i++) {
                biased[i] = al[h0 + i] + j->dt[h0 + i];
                f[i] = -br[h0 + i];
            }
            cpu_vexp(m, biased, e);
            cpu_vexp(m, f, f);
            for (int64_t i = 0; i < m; i++) {
                const float sp = biased[i] > 20.0f ? biased[i] : logf(1.0f + e[i]);
                gr[h0 + i] = sp * j->a[h0 + i];
                bt[h0 + i] = 1.0f / (1.0f + f[i]);
            }
        }
    }
}

void cpu_deltanet_gates(be_ctx *be, const be_tensor *alpha, const be_weight *dt_bias,
                  const be_weight *a, const be_tensor *b, be_tensor *g, be_tensor *beta)
{
    CPU_PROF_BEGIN(be);
    same_shape(alpha, g);
    same_shape(b, beta);
    same_shape(alpha, b);
    assert((int64_t)dt_bias->t->ne[0] == alpha->cols && (int64_t)a->t->ne[0] == alpha->cols);
    gates_job j = { alpha, b, dt_bias->t->data, a->t->data, g, beta };
    /* a head costs an expf pair and a logf, some 30 plain elements' time */
    cpu_for(be, alpha->rows, cpu_row_grain(alpha->cols * 32), gates_task, &j);
    CPU_PROF_END(be, BE_PROF_DELTANET_GATES);
}
