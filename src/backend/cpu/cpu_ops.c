/* cpu_ops.c: the CPU backend's row-wise and element-wise ops: add/mul,
 * SiLU, sigmoid, SwiGLU, the DeltaNet gates, RoPE and the MoE router (the
 * norms are in cpu_norm.c). Each follows the float recipe of ggml's CPU
 * kernel it stands for (MODEL.md §9.1): softmax sums in double
 * and scales by the float of 1/sum. Where ggml's x86 kernels take their
 * own lane exp on full vectors (SiLU, SwiGLU, the router's softmax), so do
 * these (cpu_gexp.h), with libm's expf for a row's tail as ggml; sigmoid
 * and the gates' softplus take libm's expf/logf as ggml does, sigmoid a
 * vector at a time from cpu_vexp.h, whose vector expf gives libm's bits. */
#include "cpu_internal.h"
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

void be_add(be_ctx *be, const be_tensor *a, const be_tensor *b, be_tensor *y)
{
    CPU_PROF_BEGIN(be);
    bin_rows(be, BIN_ADD, a, b, y);
    CPU_PROF_END(be, BE_PROF_ADD_MUL);
}

void be_mul(be_ctx *be, const be_tensor *a, const be_tensor *b, be_tensor *y)
{
    CPU_PROF_BEGIN(be);
    bin_rows(be, BIN_MUL, a, b, y);
    CPU_PROF_END(be, BE_PROF_ADD_MUL);
}

void be_mul_col(be_ctx *be, const be_tensor *a, const be_tensor *s, be_tensor *y)
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

void be_silu(be_ctx *be, const be_tensor *x, be_tensor *y)
{
    CPU_PROF_BEGIN(be);
    act_rows(be, ACT_SILU, x, NULL, y);
    CPU_PROF_END(be, BE_PROF_ACT);
}

void be_sigmoid(be_ctx *be, const be_tensor *x, be_tensor *y)
{
    CPU_PROF_BEGIN(be);
    act_rows(be, ACT_SIGMOID, x, NULL, y);
    CPU_PROF_END(be, BE_PROF_ACT);
}

void be_swiglu(be_ctx *be, const be_tensor *g, const be_tensor *u, be_tensor *y)
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

void be_gdn_gates(be_ctx *be, const be_tensor *alpha, const be_weight *dt_bias,
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
    CPU_PROF_END(be, BE_PROF_GDN_GATES);
}

/* ------------------------------------------------------------------ rope */

/* The rotation of one head's n_rot/2 pairs (i, i + half). Each output is
 * one fused multiply-add over the other product rounded:
 * fma(x0, cos, -(x1 sin)) and fma(x0, sin, x1 cos). ggml's rope is C++
 * (ops.cpp) built as GNU C++17, where GCC contracts x0*cos - x1*sin so on
 * the FMA-capable x86 variants of libggml-cpu llama.cpp loads (zen4 here):
 * on llama.cpp's own rope input of a 16-token batch (Q, 4 heads) this gives
 * its outputs bit for bit, rounded products put 134 of the 1024 rotated
 * ones an ulp apart, and attention carried those into the logits
 * (tests/test_ggml_rope.c). The
 * hardware form where the CPU has FMA, libm's fmaf (same bits) where not. */
__attribute__((target("fma")))
static void rope_pairs_hw(float *v, int64_t half, const float *cs, const float *sn)
{
    for (int64_t i = 0; i < half; i++) {
        const float x0 = v[i], x1 = v[i + half];
        v[i] = __builtin_fmaf(x0, cs[i], -(x1 * sn[i]));
        v[i + half] = __builtin_fmaf(x0, sn[i], x1 * cs[i]);
    }
}

static void rope_pairs_libm(float *v, int64_t half, const float *cs, const float *sn)
{
    for (int64_t i = 0; i < half; i++) {
        const float x0 = v[i], x1 = v[i + half];
        v[i] = fmaf(x0, cs[i], -(x1 * sn[i]));
        v[i + half] = fmaf(x0, sn[i], x1 * cs[i]);
    }
}

void be_rope(be_ctx *be, be_tensor *x, int64_t head_dim, int64_t n_rot,
             const int32_t sections[4], float base, int64_t pos0)
{
    CPU_PROF_BEGIN(be);
    (void)be;
    assert(!x->f16 && x->cols % head_dim == 0 && n_rot % 2 == 0 && n_rot <= head_dim);
    const int64_t half = n_rot / 2;
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    const int sect_dims = sections[0] + sections[1] + sections[2] + sections[3];
    assert(sect_dims > 0 && half <= 512);
    float cs[512], sn[512];
    __builtin_cpu_init();
    const bool hw = __builtin_cpu_supports("fma");
    for (int64_t r = 0; r < x->rows; r++) {
        /* text positions are (p, p, p, 0): the three first components share
         * one running theta; the fourth is always 0 (cos 1, sin 0) */
        float theta = (float)(pos0 + r);
        for (int64_t i = 0; i < half; i++) {
            const int sector = (int)(i % sect_dims);
            bool first3 = (sector % 3 == 1 && sector < 3 * sections[1]) ||
                          (sector % 3 == 2 && sector < 3 * sections[2]) ||
                          (sector % 3 == 0 && sector < 3 * sections[0]);
            const float th = first3 ? theta : 0.0f;
            cs[i] = cosf(th);
            sn[i] = sinf(th);
            theta *= theta_scale;
        }
        float *xr = cpu_row(x, r);
        for (int64_t h0 = 0; h0 < x->cols; h0 += head_dim) {
            if (hw)
                rope_pairs_hw(xr + h0, half, cs, sn);
            else
                rope_pairs_libm(xr + h0, half, cs, sn);
        }
    }
    CPU_PROF_END(be, BE_PROF_ROPE);
}

/* ------------------------------------------------------------------- MoE */

void be_moe_route(be_ctx *be, const be_tensor *logits, int64_t k, int32_t *sel, be_tensor *w)
{
    CPU_PROF_BEGIN(be);
    (void)be;
    const int64_t E = logits->cols;
    assert(k >= 1 && k <= E && E <= 4096 && w->rows == logits->rows && w->cols == k);
    float p[4096];
    const int level = cpu_vexp_level(), gw = level == 2 ? 16 : level == 1 ? 8 : 0;
    for (int64_t r = 0; r < logits->rows; r++) {
        const float *l = cpu_row(logits, r);
        float mx = -INFINITY;
        for (int64_t e = 0; e < E; e++)
            mx = l[e] > mx ? l[e] : mx;
        /* ggml_vec_soft_max_f32: full vectors of the lane exp, each
         * summed as a tree into the double; the tail by libm, one by one */
        double sum = 0.0;
        const int64_t nv = gw ? E / gw * gw : 0;
        for (int64_t e = 0; e < nv; e++)
            p[e] = l[e] - mx;
        cpu_gexp_row(level, nv, p, p);
        for (int64_t e0 = 0; e0 < nv; e0 += gw) {
            float lanes[16];
            memcpy(lanes, p + e0, sizeof(float) * (size_t)gw);
            sum += (double)cpu_lane_sum(lanes, gw);
        }
        for (int64_t e = nv; e < E; e++) {
            p[e] = expf(l[e] - mx);
            sum += (double)p[e];
        }
        const float inv = (float)(1.0 / sum);
        for (int64_t e = 0; e < E; e++)
            p[e] *= inv;
        /* top k by selection: largest first, lower index on exact ties */
        int32_t *s = sel + r * k;
        for (int64_t i = 0; i < k; i++) {
            int64_t best = -1;
            for (int64_t e = 0; e < E; e++) {
                bool taken = false;
                for (int64_t j = 0; j < i; j++)
                    if (s[j] == e) { taken = true; break; }
                if (!taken && (best < 0 || p[e] > p[best]))
                    best = e;
            }
            s[i] = (int32_t)best;
        }
        double ws = 0.0;
        for (int64_t i = 0; i < k; i++)
            ws += (double)p[s[i]];
        float wsum = (float)ws;
        if (wsum < 6.103515625e-5f)
            wsum = 6.103515625e-5f;
        float *wr = cpu_row(w, r);
        for (int64_t i = 0; i < k; i++)
            wr[i] = p[s[i]] / wsum;
    }
    CPU_PROF_END(be, BE_PROF_ROUTE);
}

void be_moe_combine(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k,
                    be_tensor *out)
{
    CPU_PROF_BEGIN(be);
    (void)be;
    assert(y->rows == out->rows * k && y->cols == out->cols && w->cols == k);
    for (int64_t t = 0; t < out->rows; t++) {
        float *o = cpu_row(out, t);
        const float *wr = cpu_row(w, t);
        const float *y0 = cpu_row(y, t * k);
        for (int64_t c = 0; c < out->cols; c++)
            o[c] = y0[c] * wr[0];
        for (int64_t i = 1; i < k; i++) {
            const float *yi = cpu_row(y, t * k + i);
            for (int64_t c = 0; c < out->cols; c++) {
                const float prod = yi[c] * wr[i];
                o[c] = o[c] + prod;
            }
        }
    }
    CPU_PROF_END(be, BE_PROF_COMBINE);
}
