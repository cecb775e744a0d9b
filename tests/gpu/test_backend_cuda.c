/* test_backend_cuda.c: every op of the CUDA backend against the CPU
 * backend (the reference) on the same inputs, over real Qwen3.5/3.6
 * shapes and odd ones, then whole models: logits of prompts and of slots
 * batched together, and 64 greedy tokens, CUDA against CPU.
 *
 * Runs only where a CUDA device is (tests/gpu/run.sh; not in tests/run.sh,
 * CI has no GPU). Usage: test_backend_cuda [--no-ops] [--fast] [MODEL.gguf
 * ...]: the op cases (unless --no-ops), then the model cases for each file
 * given (--fast: the GPU side in fast mode); test_backend_cuda --bench: op
 * timings at decode shapes instead; --bench-prompt: at prompt shapes, with
 * and without each of the backend's prompt switches.
 *
 * Tolerances. The two backends compute the same formulas in different
 * orders and, for matmuls, on different activations: the CPU quantizes
 * each activation row to the weight's vec_dot_type (q8_K, q8_0, f16, bf16)
 * as ggml does, the GPU multiplies the f32 row. A matmul output may
 * therefore differ by sum_k |w_k| |x_k - xq_k| (computed here from the
 * CPU's own quantized row) plus the f32 rounding of two sums of K terms in
 * different orders, 2 (K/8 + 64) u sum_k |w_k x_k| (u = 2^-24; the GPU sums
 * 8-term lane chunks then a 32-lane tree, the CPU blocks then lanes).
 * Row-wise ops: a few roundings of each output, eps * (|ref| + scale of the
 * row). Sequence ops: bounds stated at each case. Each case prints its
 * worst |cuda - cpu| / bound; a case fails above 1. */
#include "test.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "include/q36.h"
#include "test_batch.h"
#include "keep_case.h"
#include "topk_case.h"
#include "deltanet_ref.h"
#include "quant/quant.h"
#include "quant/types.h"
#include "quant/fp16.h"
#include "gguf/gguf.h"

#define U 0x1p-24

static be_ctx *cpu, *gpu;
/* --fast: the GPU's sessions and engines in fast mode (the CPU, the
 * reference, stays exact); with Q36_CUDA_CHUNKED=1 their prompt runs take
 * the chunked delta rule. Case names then read cuda.model.fast.* */
static int gpu_fast;
static const char *mode_tag = "";
/* --kv-q8: the model cases' sessions and engines (both sides) on q8_0 K/V
 * caches (cuda_attn_q8.cu), names tagged .kvq8 */
static bool kv_q8;
/* the context's switches in the matmul cases' names: "" (the default
 * path) or ".fastmv" (test_fast_mv) */
static const char *variant = "";
static double worst_ratio_all;
static char worst_name[128];

/* ------------------------------------------------------------- helpers */

typedef struct { be_tensor *c, *g; } pair;

static pair up_type(enum be_type type, const void *x, int64_t rows, int64_t cols)
{
    pair p = { be_tensor_new_type(cpu, type, rows, cols), be_tensor_new_type(gpu, type, rows, cols) };
    if (x) {
        be_write(cpu, p.c, 0, rows, x);
        be_write(gpu, p.g, 0, rows, x);
    }
    return p;
}
static pair up(const float *x, int64_t rows, int64_t cols) { return up_type(BE_F32, x, rows, cols); }
static void pfree(pair p)
{
    be_tensor_free(cpu, p.c);
    be_tensor_free(gpu, p.g);
}

/* reads both into fresh buffers */
static void down(pair p, float **c, float **g)
{
    const int64_t n = be_rows_of(p.c) * be_cols_of(p.c);
    *c = malloc(sizeof(float) * (size_t)(n ? n : 1));
    *g = malloc(sizeof(float) * (size_t)(n ? n : 1));
    be_read(cpu, p.c, 0, be_rows_of(p.c), *c);
    be_read(gpu, p.g, 0, be_rows_of(p.g), *g);
}

static bool gpu_ok(const char *name)
{
    q36_err err = { 0 };
    if (be_check(gpu, &err)) {
        t_fail(name, "%s", err.msg);
        return false;
    }
    return true;
}

/* Sets an environment switch; returns what it was, for env_restore. */
static char *env_set(const char *var, const char *val)
{
    const char *old = getenv(var);
    char *keep = old ? strdup(old) : NULL;
    setenv(var, val, 1);
    return keep;
}
static void env_restore(const char *var, char *keep)
{
    if (keep)
        setenv(var, keep, 1);
    else
        unsetenv(var);
    free(keep);
}

/* fast mode's prompt paths (cuda.cu's "Modes") */
static const char *const PROMPT_SW[4] = { "Q36_CUDA_CHUNKED", "Q36_CUDA_GEMM16",
                                          "Q36_CUDA_MOEGEMM", "Q36_CUDA_FATTN" };

/* A CUDA context made with the environment variable `var` set to `val`
 * (the backend reads its switches when a context is made), reserved for
 * sh; NULL (and a failed case `what`) when it cannot be made. A prompt
 * switch's context is reserved in fast mode with the other three prompt
 * paths off, so that a case tests its own path only. */
static be_ctx *ctx_with(const char *var, const char *val, const be_shape *sh, const char *what)
{
    q36_err err = { 0 };
    be_ctx *c = NULL;
    be_shape s = *sh;
    char *keep[4] = { NULL, NULL, NULL, NULL };
    bool prompt = false;
    for (int i = 0; i < 4; i++)
        prompt = prompt || !strcmp(var, PROMPT_SW[i]);
    if (prompt) {
        s.fast = 1;
        for (int i = 0; i < 4; i++)
            keep[i] = env_set(PROMPT_SW[i], strcmp(var, PROMPT_SW[i]) ? "0" : val);
    } else {
        keep[0] = env_set(var, val);
    }
    const int rc = be_new("cuda", 0, &c, &err) || be_reserve(c, &s, &err);
    if (prompt)
        for (int i = 0; i < 4; i++)
            env_restore(PROMPT_SW[i], keep[i]);
    else
        env_restore(var, keep[0]);
    if (rc) {
        t_fail(what, "%s=%s: %s", var, val, err.msg);
        if (c)
            be_free(c);
        return NULL;
    }
    return c;
}

/* Records the worst ratio of a case; bound[i] per element (or `b` for all
 * when bound is NULL). */
static void verdict(const char *name, const float *c, const float *g, int64_t n,
                    const double *bound, double b)
{
    double worst = 0, wd = 0;
    int64_t wi = 0;
    bool nan = false;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(g[i]) != isnan(c[i])) {
            nan = true;
            wi = i;
            break;
        }
        const double d = fabs((double)g[i] - c[i]), bd = (bound ? bound[i] : b) + 1e-30;
        if (d / bd > worst) {
            worst = d / bd;
            wd = d;
            wi = i;
        }
    }
    if (worst > worst_ratio_all) {
        worst_ratio_all = worst;
        snprintf(worst_name, sizeof worst_name, "%s", name);
    }
    if (nan)
        t_fail(name, "NaN mismatch at %lld: cpu %g cuda %g", (long long)wi, c[wi], g[wi]);
    else if (worst > 1.0)
        t_fail(name, "at %lld: cpu %.9g cuda %.9g |d| %.3g bound %.3g (ratio %.3g)",
               (long long)wi, c[wi], g[wi], wd, bound ? bound[wi] : b, worst);
    else {
        printf("ok %s (worst |d| %.3g, %.3g of bound)\n", name, wd, worst);
        fflush(stdout);
        t_passed++;
    }
}

/* eps * (|c| + the row's max |c|) for every element of rows x cols */
static double *rowscale_bound(const float *c, int64_t rows, int64_t cols, double eps)
{
    double *b = malloc(sizeof(double) * (size_t)(rows * cols + 1));
    for (int64_t r = 0; r < rows; r++) {
        double mx = 0;
        for (int64_t j = 0; j < cols; j++)
            mx = fmax(mx, fabs(c[r * cols + j]));
        for (int64_t j = 0; j < cols; j++)
            b[r * cols + j] = eps * (fabs(c[r * cols + j]) + mx) + 1e-30;
    }
    return b;
}

/* the raw rows of a q8_0 pair (be_read's bytes): the same bytes on both */
static void same_bytes(const char *name, pair p)
{
    const int64_t rows = be_rows_of(p.c);
    const size_t rb = (size_t)be_type_bytes(be_type_of(p.c), be_cols_of(p.c));
    uint8_t *c = malloc(rb * (size_t)rows + 1), *g = malloc(rb * (size_t)rows + 1);
    be_read(cpu, p.c, 0, rows, c);
    be_read(gpu, p.g, 0, rows, g);
    int64_t bad = 0, first = -1;
    for (int64_t r = 0; r < rows; r++)
        if (memcmp(c + (size_t)r * rb, g + (size_t)r * rb, rb) && !bad++)
            first = r;
    size_t at = 0;                      /* the first differing byte of that row */
    while (first >= 0 && at < rb && c[(size_t)first * rb + at] == g[(size_t)first * rb + at])
        at++;
    const uint8_t *cb = c + (size_t)(first < 0 ? 0 : first) * rb + at,
                  *gb = g + (size_t)(first < 0 ? 0 : first) * rb + at;
    t_check(name, bad == 0, "%lld of %lld rows differ from the CPU's bytes (first: row %lld, "
            "byte %zu: cpu %02x %02x %02x %02x, cuda %02x %02x %02x %02x)", (long long)bad,
            (long long)rows, (long long)first, at, cb[0], at + 1 < rb ? cb[1] : 0,
            at + 2 < rb ? cb[2] : 0, at + 3 < rb ? cb[3] : 0, gb[0], at + 1 < rb ? gb[1] : 0,
            at + 2 < rb ? gb[2] : 0, at + 3 < rb ? gb[3] : 0);
    free(c);
    free(g);
}

static void close_rows(const char *name, pair p, double eps)
{
    float *c, *g;
    down(p, &c, &g);
    const int64_t rows = be_rows_of(p.c), cols = be_cols_of(p.c);
    double *b = rowscale_bound(c, rows, cols, eps);
    verdict(name, c, g, rows * cols, b, 0);
    free(b);
    free(c);
    free(g);
}

/* --------------------------------------------------------------- weights */

typedef struct {
    gguf_tensor t;
    void *data;
    float *deq;    /* N*E rows of K */
    be_weight *wc, *wg;
} wt;

/* A weight of `type` with ne {K, N, E}: f32/f16/bf16/q8_0 from gaussians
 * through the activation quantizer; block types from random bytes with
 * small finite f16 scales. */
static bool no_deq;      /* --bench: the weights only, no host reference */

static void make_weight(wt *wp, t_rng *r, uint32_t type, int64_t K, int64_t N, int64_t E)
{
    wt w = { 0 };
    const uint64_t rb = quant_row_bytes(type, (uint64_t)K);
    w.data = malloc(rb * (uint64_t)(N * E));
    w.deq = malloc(no_deq ? 1 : sizeof(float) * (size_t)(K * N * E));
    float *row = malloc(sizeof(float) * (size_t)K);
    const quant_type_info *ti = quant_type_get(type);
    for (int64_t i = 0; i < N * E; i++) {
        uint8_t *dst = (uint8_t *)w.data + rb * (uint64_t)i;
        if (type == QT_F32 || type == QT_F16 || type == QT_BF16 || type == QT_Q8_0) {
            for (int64_t k = 0; k < K; k++)
                row[k] = t_gauss(r);
            quant_act_quantize(type, row, dst, K);
        } else {
            for (uint64_t b = 0; b < rb; b++)
                dst[b] = (uint8_t)t_next(r);
            for (int64_t blk = 0; blk < K / ti->blck; blk++) {
                uint8_t *bp = dst + blk * ti->size;
                const uint16_t d = quant_f32_to_f16(0.01f + 0.01f * t_uniform(r));
                if (type == QT_Q6_K)
                    memcpy(bp + ti->size - 2, &d, 2);       /* d last */
                else
                    memcpy(bp, &d, 2);                      /* d first */
                if (type == QT_Q4_K || type == QT_Q5_K)
                    memcpy(bp + 2, &d, 2);                  /* dmin */
            }
        }
        if (!no_deq)
            quant_dequant_row(type, dst, w.deq + i * K, K);
    }
    free(row);
    w.t.name = "w";
    w.t.type = type;
    w.t.n_dims = 3;
    w.t.ne[0] = (uint64_t)K; w.t.ne[1] = (uint64_t)N; w.t.ne[2] = (uint64_t)E; w.t.ne[3] = 1;
    w.t.data = w.data;
    w.t.nbytes = rb * (uint64_t)(N * E);
    *wp = w;
    q36_err err = { 0 };
    if ((!no_deq && be_weight_bind(cpu, &wp->t, &wp->wc, &err)) ||
        be_weight_bind(gpu, &wp->t, &wp->wg, &err))
        fprintf(stderr, "bind: %s\n", err.msg);
}

/* An F32 weight of ne {n, n1} (norm weights, dt bias, A: n1 = 1; the
 * conv: {Kc, C}). The bound weights keep a pointer to wp->t. */
static void make_vec(wt *wp, const float *v, int64_t n, int64_t n1)
{
    wt w = { 0 };
    n *= n1;
    w.data = malloc(sizeof(float) * (size_t)n);
    memcpy(w.data, v, sizeof(float) * (size_t)n);
    w.t.name = "v";
    w.t.type = QT_F32;
    w.t.n_dims = n1 > 1 ? 2 : 1;
    w.t.ne[0] = (uint64_t)(n / n1); w.t.ne[1] = (uint64_t)n1; w.t.ne[2] = w.t.ne[3] = 1;
    w.t.data = w.data;
    w.t.nbytes = sizeof(float) * (uint64_t)n;
    *wp = w;
    be_weight_bind(cpu, &wp->t, &wp->wc, NULL);
    be_weight_bind(gpu, &wp->t, &wp->wg, NULL);
}

/* the activation row as the CPU's matmul sees it */
static void act_view(uint32_t type, const float *x, float *xq, int64_t K)
{
    const int at = quant_vec_dot_type(type);
    uint8_t *q = malloc(quant_row_bytes((uint32_t)at, (uint64_t)K) + 16);
    quant_act_quantize((uint32_t)at, x, q, K);
    quant_dequant_row((uint32_t)at, q, xq, K);
    free(q);
}

/* set while the grouped expert products run the matmul_id cases: their
 * sums are sequential over K (cuda_moe.cu); case_tag ends the names of
 * cases run again on a context with a new path switched on */
static bool mm_sequential;
static const char *case_tag = "";
/* set while products run on tensor cores: their inputs are rounded to f16
 * (the terms are derived at test_gemm16_ops) */
static bool mm_f16;
/* set while F32 weights' products run on TF32 tensor cores (fast mode,
 * Q36_CUDA_TF32): both operands lose up to 2^-10 of themselves each if
 * the conversion truncates, twice f16's rounding to nearest */
static bool mm_tf32;
/* set while the matmul cases run as be_matmul_glu / be_matmul_id_glu: the
 * input is silu(g) * u of two random rows (the CPU's own, from its
 * be_swiglu), and the device's expf adds up to 4 units of rounding to it */
static bool mm_glu;

/* The input rows of a case: n x K random values, or with mm_glu the CPU's
 * silu(g) * u of random g and u, which it then returns in *g and *u (else
 * NULL). */
static float *mm_input(t_rng *r, int64_t n, int64_t K, pair *g, pair *u)
{
    float *x = t_randv(r, n * K, 1);
    g->c = g->g = u->c = u->g = NULL;
    if (!mm_glu)
        return x;
    float *uv = t_randv(r, n * K, 1);
    *g = up(x, n, K);
    *u = up(uv, n, K);
    be_tensor *s = be_tensor_new(cpu, n, K);
    be_swiglu(cpu, g->c, u->c, s);
    be_read(cpu, s, 0, n, x);
    be_tensor_free(cpu, s);
    free(uv);
    return x;
}

/* bound of output (r, n): CPU activation quantization + two f32 orders
 * (the GPU's: 8-term lane chunks then a tree, or K sequential terms) */
static double mm_bound(const float *wrow, const float *x, const float *xq, int64_t K)
{
    double q = 0, mag = 0, small = 0;
    for (int64_t k = 0; k < K; k++) {
        q += fabs((double)wrow[k]) * fabs((double)x[k] - xq[k]);
        mag += fabs((double)wrow[k] * x[k]);
        small += fabs((double)wrow[k]) + fabs((double)x[k]);
    }
    const double f16 = mm_tf32  ? (0x1p-9 + (double)(K + 1) * 0x1p-22) * mag
                       : mm_f16 ? (0x1p-10 + (double)(K + 1) * 0x1p-22) * mag + 0x1p-24 * small
                                : 0;
    const double glu = mm_glu ? 8.0 * U * mag : 0;
    return q + f16 + glu + 2.0 * (double)((mm_sequential ? K : K / 8) + 64) * U * mag;
}

/* ----------------------------------------------------------------- matmul */

static void test_matmul(uint32_t type, int64_t K, int64_t N, int64_t R)
{
    char name[96];
    snprintf(name, sizeof name, "cuda%s.matmul%s_%s_%lldx%lld_r%lld%s", variant, mm_glu ? "_glu" : "",
             quant_type_name(type), (long long)K, (long long)N, (long long)R, case_tag);
    t_rng r = t_rng_named(name);
    wt w;
    make_weight(&w, &r, type, K, N, 2);
    pair gt, ut;
    float *x = mm_input(&r, R, K, &gt, &ut), *xq = malloc(sizeof(float) * (size_t)(R * K));
    for (int64_t i = 0; i < R; i++)
        act_view(type, x + i * K, xq + i * K, K);
    pair xt = up(x, R, K), y = up(NULL, R, N);
    const int64_t slab = mm_glu ? 0 : 1;        /* be_matmul_glu: slab 0 */
    if (mm_glu) {
        be_matmul_glu(cpu, w.wc, gt.c, ut.c, y.c);
        be_matmul_glu(gpu, w.wg, gt.g, ut.g, y.g);
    } else {
        be_matmul(cpu, w.wc, 1, xt.c, y.c);
        be_matmul(gpu, w.wg, 1, xt.g, y.g);
    }
    if (gpu_ok(name)) {
        float *c, *g;
        down(y, &c, &g);
        double *b = malloc(sizeof(double) * (size_t)(R * N));
        for (int64_t i = 0; i < R; i++)
            for (int64_t n = 0; n < N; n++)
                b[i * N + n] = mm_bound(w.deq + (slab * N + n) * K, x + i * K, xq + i * K, K);
        verdict(name, c, g, R * N, b, 0);
        free(b);
        free(c);
        free(g);
    }
    if (mm_glu) {
        pfree(gt);
        pfree(ut);
    }
    pfree(xt);
    pfree(y);
    free(x);
    free(xq);
    free(w.deq);   /* w.data stays: bound weights are keyed by it */
}

/* be_matmul_n over n weights of one input: mixed types (one launch each)
 * or one type (launches of up to 4 weights sharing x) */
static void test_matmul_n(const uint32_t *types, int n, int64_t R)
{
    char name[96];
    bool same = true;
    for (int i = 1; i < n; i++)
        same = same && types[i] == types[0];
    snprintf(name, sizeof name, "cuda%s.matmul_n_%d_%s%s_r%lld", variant, n, quant_type_name(types[0]),
             same ? "_same" : "_mixed", (long long)R);
    t_rng r = t_rng_named(name);
    const int64_t K = 512;
    static const int64_t Nv[6] = { 96, 33, 7, 200, 64, 5 };
    wt w[6];
    pair y[6];
    const be_weight *wc[6], *wg[6];
    be_tensor *yc[6], *yg[6];
    for (int i = 0; i < n; i++) {
        make_weight(&w[i], &r, types[i], K, Nv[i], 1);
        y[i] = up(NULL, R, Nv[i]);
        wc[i] = w[i].wc;
        wg[i] = w[i].wg;
        yc[i] = y[i].c;
        yg[i] = y[i].g;
    }
    float *x = t_randv(&r, R * K, 1), *xq = malloc(sizeof(float) * (size_t)K);
    pair xt = up(x, R, K);
    be_matmul_n(cpu, n, wc, xt.c, yc);
    be_matmul_n(gpu, n, wg, xt.g, yg);
    bool ok = gpu_ok(name);
    double worst = 0;
    for (int i = 0; i < n && ok; i++) {
        float *c, *g;
        down(y[i], &c, &g);
        for (int64_t rr = 0; rr < R; rr++) {
            act_view(types[i], x + rr * K, xq, K);
            for (int64_t j = 0; j < Nv[i]; j++) {
                const double bd = mm_bound(w[i].deq + j * K, x + rr * K, xq, K);
                worst = fmax(worst, fabs((double)g[rr * Nv[i] + j] - c[rr * Nv[i] + j]) / bd);
            }
        }
        free(c);
        free(g);
    }
    if (ok)
        t_check(name, worst <= 1.0, "worst ratio %.3g", worst);
    for (int i = 0; i < n; i++) {
        pfree(y[i]);
        free(w[i].deq);
    }
    pfree(xt);
    free(x);
    free(xq);
}

/* Expert matmul: T tokens, k of E experts each, x of T rows (gate/up) or
 * T*k rows (down). */
static void test_matmul_id(uint32_t type, int64_t K, int64_t N, int64_t E, int64_t k, int64_t T,
                           bool per_rank)
{
    char name[112];
    if (mm_glu)
        per_rank = true;        /* be_matmul_id_glu: a row a (token, rank) */
    snprintf(name, sizeof name, "cuda%s.matmul_id%s_%s_%lldx%lld_e%lld_top%lld_t%lld%s%s", variant,
             mm_glu ? "_glu" : "", quant_type_name(type), (long long)K, (long long)N, (long long)E,
             (long long)k, (long long)T, per_rank ? "_rank_rows" : "", case_tag);
    t_rng r = t_rng_named(name);
    wt w;
    make_weight(&w, &r, type, K, N, E);
    const int64_t XR = per_rank ? T * k : T;
    pair gt, ut;
    float *x = mm_input(&r, XR, K, &gt, &ut), *xq = malloc(sizeof(float) * (size_t)K);
    int32_t *sel = malloc(sizeof(int32_t) * (size_t)(T * k));
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < k; i++) {
            int32_t e;
            bool again;
            do {
                e = (int32_t)(t_next(&r) % (uint64_t)E);
                again = false;
                for (int64_t j = 0; j < i; j++)
                    again |= sel[t * k + j] == e;
            } while (again);
            sel[t * k + i] = e;
        }
    pair xt = up(x, XR, K), y = up(NULL, T * k, N);
    pair st = { t_i32(cpu, sel, T, k), t_i32(gpu, sel, T, k) };
    if (mm_glu) {
        be_matmul_id_glu(cpu, w.wc, gt.c, ut.c, st.c, y.c);
        be_matmul_id_glu(gpu, w.wg, gt.g, ut.g, st.g, y.g);
    } else {
        be_matmul_id(cpu, w.wc, xt.c, st.c, y.c);
        be_matmul_id(gpu, w.wg, xt.g, st.g, y.g);
    }
    if (gpu_ok(name)) {
        float *c, *g;
        down(y, &c, &g);
        double *b = malloc(sizeof(double) * (size_t)(T * k * N));
        for (int64_t q = 0; q < T * k; q++) {
            const float *xr = x + (per_rank ? q : q / k) * K;
            act_view(type, xr, xq, K);
            for (int64_t n = 0; n < N; n++)
                b[q * N + n] = mm_bound(w.deq + ((int64_t)sel[q] * N + n) * K, xr, xq, K);
        }
        verdict(name, c, g, T * k * N, b, 0);
        free(b);
        free(c);
        free(g);
    }
    if (mm_glu) {
        pfree(gt);
        pfree(ut);
    }
    pfree(xt);
    pfree(y);
    pfree(st);
    free(x);
    free(xq);
    free(sel);
    free(w.deq);   /* w.data stays: bound weights are keyed by it */
}

/* Embedding rows: both dequantize the same blocks (the GPU may fuse the
 * scale product with the min: 2 u of the row's scale). */
static void test_get_rows(uint32_t type, int64_t K, int64_t V, int64_t n)
{
    char name[96];
    snprintf(name, sizeof name, "cuda.get_rows_%s_%lldx%lld_n%lld", quant_type_name(type),
             (long long)K, (long long)V, (long long)n);
    t_rng r = t_rng_named(name);
    wt w;
    make_weight(&w, &r, type, K, V, 1);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        ids[i] = (int32_t)(t_next(&r) % (uint64_t)V);
    pair it = { t_i32(cpu, ids, n, 1), t_i32(gpu, ids, n, 1) }, y = up(NULL, n, K);
    be_get_rows(cpu, w.wc, it.c, y.c);
    be_get_rows(gpu, w.wg, it.g, y.g);
    if (gpu_ok(name))
        close_rows(name, y, 2 * U);
    pfree(it);
    pfree(y);
    free(ids);
    free(w.deq);   /* w.data stays: bound weights are keyed by it */
}

/* ------------------------------------------------------------- row-wise */

static void test_norms(int64_t rows, int64_t cols, int64_t group)
{
    char name[96];
    snprintf(name, sizeof name, "cuda.rms_norm_%lldx%lld_g%lld", (long long)rows,
             (long long)cols, (long long)group);
    t_rng r = t_rng_named(name);
    float *x = t_randv(&r, rows * cols, 3), *wv = t_randv(&r, group, 1);
    wt w;
    make_vec(&w, wv, group, 1);
    pair xt = up(x, rows, cols), y = up(NULL, rows, cols);
    /* a double sum in both; the scale and two products: 4 roundings */
    be_rms_norm(cpu, xt.c, w.wc, 1e-6f, group, y.c);
    be_rms_norm(gpu, xt.g, w.wg, 1e-6f, group, y.g);
    if (gpu_ok(name))
        close_rows(name, y, 4 * U);
    snprintf(name, sizeof name, "cuda.l2_norm_%lldx%lld_g%lld", (long long)rows, (long long)cols,
             (long long)group);
    be_l2_norm(cpu, xt.c, 1e-6f, group, y.c);
    be_l2_norm(gpu, xt.g, 1e-6f, group, y.g);
    if (gpu_ok(name))
        close_rows(name, y, 4 * U);
    /* in place, on a column view (the DeltaNet q|k of the conv output) */
    snprintf(name, sizeof name, "cuda.l2_norm_view_%lldx%lld_g%lld", (long long)rows,
             (long long)cols, (long long)group);
    const int64_t vcols = cols / 2 / group * group > 0 ? cols / 2 / group * group : group;
    be_tensor *vc = be_view(cpu, xt.c, 0, vcols);
    be_tensor *vg = be_view(gpu, xt.g, 0, be_cols_of(vc));
    be_l2_norm(cpu, vc, 1e-6f, group, vc);
    be_l2_norm(gpu, vg, 1e-6f, group, vg);
    if (gpu_ok(name))
        close_rows(name, xt, 4 * U);
    be_views_reset(cpu);
    be_views_reset(gpu);
    pfree(xt);
    pfree(y);
    free(x);
    free(wv);
}

static void test_elementwise(int64_t rows, int64_t cols)
{
    char name[96];
    t_rng r = t_rng_named("cuda.elementwise");
    float *a = t_randv(&r, rows * cols, 4), *b = t_randv(&r, rows * cols, 4),
          *s = t_randv(&r, rows, 2);
    pair at = up(a, rows, cols), bt = up(b, rows, cols), st = up(s, rows, 1), y = up(NULL, rows, cols);
    static const char *const names[] = { "add", "mul", "mul_col", "silu", "sigmoid", "swiglu" };
    for (int op = 0; op < 6; op++) {
        snprintf(name, sizeof name, "cuda.%s_%lldx%lld", names[op], (long long)rows,
                 (long long)cols);
        for (int side = 0; side < 2; side++) {
            be_ctx *be = side ? gpu : cpu;
            be_tensor *A = side ? at.g : at.c, *B = side ? bt.g : bt.c, *S = side ? st.g : st.c,
                      *Y = side ? y.g : y.c;
            switch (op) {
            case 0: be_add(be, A, B, Y); break;
            case 1: be_mul(be, A, B, Y); break;
            case 2: be_mul_col(be, A, S, Y); break;
            case 3: be_silu(be, A, Y); break;
            case 4: be_sigmoid(be, A, Y); break;
            default: be_swiglu(be, A, B, Y); break;
            }
        }
        /* one rounding (add, mul); expf within 2 ulp in each and a divide
         * and a product: 8 u */
        if (gpu_ok(name))
            close_rows(name, y, op < 3 ? 1 * U : 8 * U);
    }
    /* the DeltaNet gates: softplus through expf and logf (2 ulp each,
     * amplified by at most 1 by the log), times A; sigmoid */
    snprintf(name, sizeof name, "cuda.deltanet_gates_%lldx%lld", (long long)rows, (long long)cols);
    float *dt = t_randv(&r, cols, 1), *A = t_randv(&r, cols, 1);
    for (int64_t i = 0; i < cols; i++)
        A[i] = -fabsf(A[i]);
    wt wdt, wa;
    make_vec(&wdt, dt, cols, 1);
    make_vec(&wa, A, cols, 1);
    pair g = up(NULL, rows, cols), beta = up(NULL, rows, cols);
    be_deltanet_gates(cpu, at.c, wdt.wc, wa.wc, bt.c, g.c, beta.c);
    be_deltanet_gates(gpu, at.g, wdt.wg, wa.wg, bt.g, g.g, beta.g);
    if (gpu_ok(name)) {
        close_rows(name, g, 16 * U);
        snprintf(name, sizeof name, "cuda.deltanet_beta_%lldx%lld", (long long)rows, (long long)cols);
        close_rows(name, beta, 8 * U);
    }
    pfree(at); pfree(bt); pfree(st); pfree(y); pfree(g); pfree(beta);
    free(a); free(b); free(s); free(dt); free(A);
}

/* rope: the angle p * r^i by repeated float products in both, then
 * cosf/sinf (libm vs libdevice, 2 ulp each) and one fma: 8 u of the
 * head's scale */
static void test_rope(int64_t rows, int64_t heads, int64_t hd, int64_t n_rot, int maxpos)
{
    char name[96];
    snprintf(name, sizeof name, "cuda.rope_%lldx%lld_hd%lld_rot%lld_p%d", (long long)rows,
             (long long)heads, (long long)hd, (long long)n_rot, maxpos);
    t_rng r = t_rng_named(name);
    float *x = t_randv(&r, rows * heads * hd, 1);
    int32_t *pos = malloc(sizeof(int32_t) * (size_t)rows);
    for (int64_t i = 0; i < rows; i++)
        pos[i] = (int32_t)(t_next(&r) % (uint64_t)maxpos);
    int32_t sections[4] = { 11, 11, 10, 0 };
    if (n_rot != 64) {      /* the same proportions for other rotary widths */
        sections[0] = (int32_t)(n_rot / 2 / 3 + (n_rot / 2 % 3 > 0));
        sections[1] = (int32_t)(n_rot / 2 / 3 + (n_rot / 2 % 3 > 1));
        sections[2] = (int32_t)(n_rot / 2 - sections[0] - sections[1]);
    }
    pair xt = up(x, rows, heads * hd), pt = { t_i32(cpu, pos, rows, 1), t_i32(gpu, pos, rows, 1) };
    be_rope(cpu, xt.c, hd, n_rot, sections, 1e7f, pt.c);
    be_rope(gpu, xt.g, hd, n_rot, sections, 1e7f, pt.g);
    /* the angle itself: i products of a float, i * u relative, times the
     * position: an absolute angle error of up to n_rot/2 * u * maxpos */
    if (gpu_ok(name))
        close_rows(name, xt, 8 * U + (double)n_rot * U * maxpos);
    pfree(xt);
    pfree(pt);
    free(x);
    free(pos);
}

/* be_attn_prologue: q and gate apart from qg, the per-head norms of q and
 * k with their weights, rope of both; the bound is test_rope's plus the
 * norm's few roundings */
static void test_attn_prologue(int64_t rows, int64_t Hq, int64_t Hkv, int64_t hd, int64_t n_rot,
                               int maxpos)
{
    char name[112];
    snprintf(name, sizeof name, "cuda.attn_prologue_%lld_q%lld_kv%lld_hd%lld_rot%lld", (long long)rows,
             (long long)Hq, (long long)Hkv, (long long)hd, (long long)n_rot);
    t_rng r = t_rng_named(name);
    float *qg = t_randv(&r, rows * 2 * Hq * hd, 1), *k = t_randv(&r, rows * Hkv * hd, 2);
    float *wq = t_randv(&r, hd, 1), *wk = t_randv(&r, hd, 1);
    wt wqv, wkv;
    make_vec(&wqv, wq, hd, 1);
    make_vec(&wkv, wk, hd, 1);
    int32_t *pos = malloc(sizeof(int32_t) * (size_t)rows);
    for (int64_t i = 0; i < rows; i++)
        pos[i] = (int32_t)(t_next(&r) % (uint64_t)maxpos);
    int32_t sections[4] = { (int32_t)(n_rot / 2 / 3 + (n_rot / 2 % 3 > 0)),
                            (int32_t)(n_rot / 2 / 3 + (n_rot / 2 % 3 > 1)), 0, 0 };
    sections[2] = (int32_t)(n_rot / 2) - sections[0] - sections[1];
    pair qgt = up(qg, rows, 2 * Hq * hd), qt = up(NULL, rows, Hq * hd), gt = up(NULL, rows, Hq * hd),
         kt = up(k, rows, Hkv * hd), pt = { t_i32(cpu, pos, rows, 1), t_i32(gpu, pos, rows, 1) };
    be_attn_prologue(cpu, qgt.c, qt.c, gt.c, kt.c, wqv.wc, wkv.wc, 1e-6f, hd, n_rot, sections,
                     1e7f, pt.c);
    be_attn_prologue(gpu, qgt.g, qt.g, gt.g, kt.g, wqv.wg, wkv.wg, 1e-6f, hd, n_rot, sections,
                     1e7f, pt.g);
    if (gpu_ok(name)) {
        const double eps = 16 * U + (double)n_rot * U * maxpos;
        char n2[140];
        snprintf(n2, sizeof n2, "%s.q", name);
        close_rows(n2, qt, eps);
        snprintf(n2, sizeof n2, "%s.gate", name);
        close_rows(n2, gt, 0);
        snprintf(n2, sizeof n2, "%s.k", name);
        close_rows(n2, kt, eps);
    }
    pfree(qgt); pfree(qt); pfree(gt); pfree(kt); pfree(pt);
    free(qg); free(k); free(wq); free(wk); free(pos);
}

/* ------------------------------------------------------------------- MoE */

static void test_moe(int64_t T, int64_t E, int64_t k)
{
    char name[96];
    snprintf(name, sizeof name, "cuda.moe_route_t%lld_e%lld_top%lld", (long long)T, (long long)E,
             (long long)k);
    t_rng r = t_rng_named(name);
    float *l = t_randv(&r, T * E, 2);
    pair lt = up(l, T, E), w = up(NULL, T, k);
    pair sel = up_type(BE_I32, NULL, T, k);
    be_moe_route(cpu, lt.c, k, sel.c, w.c);
    be_moe_route(gpu, lt.g, k, sel.g, w.g);
    if (gpu_ok(name)) {
        int32_t *sc = malloc(sizeof(int32_t) * (size_t)(T * k)),
                *sg = malloc(sizeof(int32_t) * (size_t)(T * k));
        be_read(cpu, sel.c, 0, T, sc);
        be_read(gpu, sel.g, 0, T, sg);
        int64_t diff = 0;
        for (int64_t i = 0; i < T * k; i++)
            diff += sc[i] != sg[i];
        if (diff)
            t_fail(name, "%lld of %lld choices differ", (long long)diff, (long long)(T * k));
        else
            close_rows(name, w, 16 * U);    /* lane exp vs expf, the sums' orders */
        free(sc);
        free(sg);
    }
    /* combine: products rounded and added in rank order in both: equal */
    snprintf(name, sizeof name, "cuda.moe_combine_t%lld_top%lld", (long long)T, (long long)k);
    const int64_t D = 96;
    float *y = t_randv(&r, T * k * D, 1), *wv = t_randv(&r, T * k, 1);
    pair yt = up(y, T * k, D), wt_ = up(wv, T, k), out = up(NULL, T, D);
    be_moe_combine(cpu, yt.c, wt_.c, k, out.c);
    be_moe_combine(gpu, yt.g, wt_.g, k, out.g);
    if (gpu_ok(name))
        close_rows(name, out, 0.0625 * U);
    pfree(lt); pfree(w); pfree(sel); pfree(yt); pfree(wt_); pfree(out);
    free(l); free(y); free(wv);
}

/* be_argmax against the CPU's (the in-order scan): the same column for
 * every row, with the maximum repeated (ties), rows all equal, all -inf,
 * NaN first, NaN inside; R rows of C columns (a vocabulary, odd widths, a
 * view of the first columns of wider rows as the MTP draft head's) */
static void test_argmax(int64_t R, int64_t C, int64_t ld)
{
    char name[96];
    snprintf(name, sizeof name, "cuda.argmax_r%lld_c%lld%s", (long long)R, (long long)C,
             ld > C ? "_view" : "");
    t_rng r = t_rng_named(name);
    float *x = t_randv(&r, R * ld, 4);
    for (int64_t i = 0; i < R; i++) {
        float *v = x + i * ld;
        switch (i % 5) {
        case 0: v[t_next(&r) % (uint64_t)C] = 50.0f; v[t_next(&r) % (uint64_t)C] = 50.0f; break;
        case 1: for (int64_t c = 0; c < C; c++) v[c] = 0.25f; break;
        case 2: for (int64_t c = 0; c < C; c++) v[c] = -INFINITY; break;
        case 3: v[0] = NAN; break;
        default: v[C / 2] = NAN; v[C - 1] = 60.0f; break;
        }
        if (ld > C)
            v[C] = 1000.0f;      /* past the view: never chosen */
    }
    pair xt = up(x, R, ld);
    pair it = up_type(BE_I32, NULL, R, 1);
    be_argmax(cpu, be_view(cpu, xt.c, 0, C), it.c);
    be_argmax(gpu, be_view(gpu, xt.g, 0, C), it.g);
    if (gpu_ok(name)) {
        int32_t *ic = malloc(sizeof(int32_t) * (size_t)R), *ig = malloc(sizeof(int32_t) * (size_t)R);
        be_read(cpu, it.c, 0, R, ic);
        be_read(gpu, it.g, 0, R, ig);
        int64_t bad = 0, first = -1;
        for (int64_t i = 0; i < R; i++)
            if (ic[i] != ig[i] && !bad++)
                first = i;
        t_check(name, bad == 0, "%lld of %lld rows differ (first: row %lld, cuda %d, cpu %d)",
                (long long)bad, (long long)R, (long long)first, first >= 0 ? ig[first] : 0,
                first >= 0 ? ic[first] : 0);
        free(ic);
        free(ig);
    }
    pfree(xt);
    pfree(it);
    free(x);
}

/* be_topk (k_topk's radix select) against the CPU's (a running sorted
 * list, itself checked against a full sort in test_backend_cpu): the same
 * columns and value bits for every row of tests/topk_case.h's cases (ties
 * across ~C columns at the threshold, NaN, -0 and +0, -inf, fewer values
 * than k), R rows of C columns, a view of the first C of wider rows */
static void test_topk(int64_t R, int64_t C, int64_t ld, int k)
{
    char name[96];
    snprintf(name, sizeof name, "cuda.topk_r%lld_c%lld_k%d%s", (long long)R, (long long)C, k,
             ld > C ? "_view" : "");
    t_rng r = t_rng_named(name);
    float *x = malloc(sizeof(float) * (size_t)(R * ld));
    topk_fill(&r, x, R, ld, ld);
    if (ld > C)
        for (int64_t i = 0; i < R; i++)
            x[i * ld + C] = 1e30f;       /* past the view: never chosen */
    pair xt = up(x, R, ld);
    pair it = up_type(BE_I32, NULL, R, k), vt = up(NULL, R, k);
    be_topk(cpu, be_view(cpu, xt.c, 0, C), k, it.c, vt.c);
    be_topk(gpu, be_view(gpu, xt.g, 0, C), k, it.g, vt.g);
    if (gpu_ok(name)) {
        const size_t n = (size_t)(R * k);
        int32_t *ic = malloc(sizeof(int32_t) * n), *ig = malloc(sizeof(int32_t) * n);
        float *vc = malloc(sizeof(float) * n), *vg = malloc(sizeof(float) * n);
        be_read(cpu, it.c, 0, R, ic);
        be_read(gpu, it.g, 0, R, ig);
        be_read(cpu, vt.c, 0, R, vc);
        be_read(gpu, vt.g, 0, R, vg);
        int64_t bad = 0, first = -1;
        for (int64_t i = 0; i < R; i++)
            if ((memcmp(ic + i * k, ig + i * k, sizeof(int32_t) * (size_t)k) ||
                 memcmp(vc + i * k, vg + i * k, sizeof(float) * (size_t)k)) && !bad++)
                first = i;
        t_check(name, bad == 0, "%lld of %lld rows differ from the CPU's (first: row %lld, its "
                "first ids cuda %d %d, cpu %d %d)", (long long)bad, (long long)R, (long long)first,
                first >= 0 ? ig[first * k] : 0, first >= 0 && k > 1 ? ig[first * k + 1] : 0,
                first >= 0 ? ic[first * k] : 0, first >= 0 && k > 1 ? ic[first * k + 1] : 0);
        free(ic); free(ig); free(vc); free(vg);
    }
    be_views_reset(cpu);
    be_views_reset(gpu);
    pfree(xt);
    pfree(it);
    pfree(vt);
    free(x);
}

/* --------------------------------------------------------------- batches */

/* n_seq runs over slots slot[i] with rows len[i] at positions pos0[i] */
typedef struct { be_batch c, g; } bpair;

static bpair batch_of(int n_seq, const int *slot, const int *len, const int *pos0, int64_t kv_rows)
{
    bpair b;
    be_seq s[16];
    int64_t rows = 0;
    for (int i = 0; i < n_seq; i++) {
        s[i] = (be_seq){ slot[i], (int32_t)rows, len[i], pos0[i] };
        rows += len[i];
    }
    be_batch_init(cpu, &b.c, rows, n_seq, kv_rows, NULL);
    be_batch_init(gpu, &b.g, rows, n_seq, kv_rows, NULL);
    be_batch_set(cpu, &b.c, n_seq, s);
    be_batch_set(gpu, &b.g, n_seq, s);
    return b;
}

static void bfree(bpair *b)
{
    be_batch_free(cpu, &b->c);
    be_batch_free(gpu, &b->g);
}

/* be_hadamard (cuda_attn_q8.cu) against the CPU's: the same operations on
 * the same values, so the same bits; R rows of C columns, runs of n */
static void test_hadamard(int64_t R, int64_t C, int64_t n)
{
    char name[96];
    snprintf(name, sizeof name, "cuda.hadamard_r%lld_c%lld_n%lld", (long long)R, (long long)C,
             (long long)n);
    t_rng r = t_rng_named(name);
    float *x = t_randv(&r, R * C, 1);
    pair xt = up(x, R, C);
    be_hadamard(cpu, xt.c, n);
    be_hadamard(gpu, xt.g, n);
    if (gpu_ok(name))
        same_bytes(name, xt);
    pfree(xt);
    free(x);
}

/* K/V store and attention. A first batch fills each slot's cache rows
 * [0, pos0), a second one (the case) adds its rows and attends. Bound:
 * scores differ by the f32 order of hd products (hd u |q||k| scale) and
 * each probability by that relative; an f16 V cache rounds the
 * probabilities (2^-11 relative: the CPU the normalized ones, the GPU
 * the running ones); the output is a convex sum of V rows, so the error
 * is at most (2 * 2^-11 [f16 V] + 4 hd u |q||k| scale + 8 u) max|V|. */
static void test_attention(int64_t Hq, int64_t Hkv, int64_t hd, int kvt, int n_seq,
                           const int *len, const int *pos0)
{
    /* kvt: the caches' type, 0 f32, 1 f16, 2 q8_0 (cuda_attn_q8.cu: both
     * sides quantize q and read the codes alike; the sums' orders differ,
     * as in the f32 case) */
    const bool f16 = kvt == 1, q8 = kvt == 2;
    char name[128];
    int64_t T = 0, maxp = 0;
    for (int i = 0; i < n_seq; i++) {
        T += len[i];
        maxp = pos0[i] + len[i] > maxp ? pos0[i] + len[i] : maxp;
    }
    snprintf(name, sizeof name, "cuda.attention_hq%lld_hkv%lld_hd%lld_%s_seq%d_t%lld_kv%lld%s",
             (long long)Hq, (long long)Hkv, (long long)hd, q8 ? "q8_0" : f16 ? "f16" : "f32", n_seq,
             (long long)T, (long long)maxp, case_tag);
    t_rng r = t_rng_named(name);
    const int64_t kv_rows = maxp + 3, n_slots = 8;
    const enum be_type ct = q8 ? BE_Q8_0 : f16 ? BE_F16 : BE_F32;
    pair kc = up_type(ct, NULL, n_slots * kv_rows, Hkv * hd), vc = up_type(ct, NULL, n_slots * kv_rows, Hkv * hd);
    int slot[16];
    for (int i = 0; i < n_seq; i++)
        slot[i] = (int)((i * 3 + 1) % n_slots);
    /* prefix rows */
    int zero[16], plen[16];
    int64_t P = 0;
    for (int i = 0; i < n_seq; i++) {
        zero[i] = 0;
        plen[i] = pos0[i];
        P += pos0[i];
    }
    if (P) {
        bpair pb = batch_of(n_seq, slot, plen, zero, kv_rows);
        float *k = t_randv(&r, P * Hkv * hd, 1), *v = t_randv(&r, P * Hkv * hd, 1);
        pair kt = up(k, P, Hkv * hd), vt = up(v, P, Hkv * hd);
        be_kv_store(cpu, kc.c, vc.c, kt.c, vt.c, &pb.c);
        be_kv_store(gpu, kc.g, vc.g, kt.g, vt.g, &pb.g);
        pfree(kt); pfree(vt); bfree(&pb);
        free(k); free(v);
    }
    bpair b = batch_of(n_seq, slot, len, pos0, kv_rows);
    float *q = t_randv(&r, T * Hq * hd, 1), *k = t_randv(&r, T * Hkv * hd, 1),
          *v = t_randv(&r, T * Hkv * hd, 1);
    pair qt = up(q, T, Hq * hd), kt = up(k, T, Hkv * hd), vt = up(v, T, Hkv * hd),
         out = up(NULL, T, Hq * hd);
    const float scale = 1.0f / sqrtf((float)hd);
    be_kv_store(cpu, kc.c, vc.c, kt.c, vt.c, &b.c);
    be_kv_store(gpu, kc.g, vc.g, kt.g, vt.g, &b.g);
    be_attention(cpu, qt.c, kc.c, vc.c, &b.c, Hq, Hkv, hd, scale, out.c);
    be_attention(gpu, qt.g, kc.g, vc.g, &b.g, Hq, Hkv, hd, scale, out.g);
    if (gpu_ok(name)) {
        /* the caches first: the same rounding of the same values */
        char n2[160];
        snprintf(n2, sizeof n2, "%s.kv_store", name);
        if (q8)
            same_bytes(n2, kc);
        else
            close_rows(n2, kc, 0.0625 * U);
        float *c, *g;
        down(out, &c, &g);
        /* |q|,|k| of normal(0,1) rows of hd: about sqrt(hd) each (x 1.5) */
        const double qk = 2.25 * (double)hd;
        /* q8_0 in a tiled context (cuda_fattn_q8): K, V and q rounded to
         * f16 on the GPU only: each score off by up to 2 * 2^-11 |q||k|
         * scale more, V by 2^-11 */
        const bool q8_tiled = q8 && !strncmp(case_tag, "_tiled", 6);
        const double b_ = (f16 ? 2.0 * 0x1p-11 : 0.0) + 4.0 * (double)hd * U * qk * scale + 8 * U +
                          (q8_tiled ? 2.0 * 0x1p-11 * qk * scale + 0x1p-11 : 0.0);
        verdict(name, c, g, T * Hq * hd, NULL, b_ * 4.5 /* max |V| of normal draws */);
        free(c);
        free(g);
    }
    pfree(kc); pfree(vc); pfree(qt); pfree(kt); pfree(vt); pfree(out);
    bfree(&b);
    free(q); free(k); free(v);
}

/* conv: the same float products and sums in the same order: equal up to
 * the rounding of one product */
static void test_conv(int64_t C, int n_seq, const int *len)
{
    char name[96];
    int64_t T = 0;
    for (int i = 0; i < n_seq; i++)
        T += len[i];
    snprintf(name, sizeof name, "cuda.ssm_conv_c%lld_seq%d_t%lld", (long long)C, n_seq, (long long)T);
    t_rng r = t_rng_named(name);
    const int64_t Kc = 4, n_slots = 8;
    float *w = t_randv(&r, Kc * C, 0.5f);
    wt ww;
    make_vec(&ww, w, Kc, C);
    pair tails = up(NULL, n_slots * C, Kc - 1);
    int slot[16], pos0[16];
    for (int i = 0; i < n_seq; i++) {
        slot[i] = (i * 5 + 2) % (int)n_slots;
        pos0[i] = 0;
    }
    bool ok = true;
    for (int pass = 0; pass < 2 && ok; pass++) {        /* the second continues the tails */
        bpair b = batch_of(n_seq, slot, len, pos0, 1 << 20);
        float *x = t_randv(&r, T * C, 1);
        pair xt = up(x, T, C), y = up(NULL, T, C);
        be_ssm_conv(cpu, xt.c, tails.c, ww.wc, &b.c, y.c);
        be_ssm_conv(gpu, xt.g, tails.g, ww.wg, &b.g, y.g);
        if ((ok = gpu_ok(name))) {
            char n2[128];
            snprintf(n2, sizeof n2, "%s.pass%d", name, pass);
            close_rows(n2, y, 4 * U);
            snprintf(n2, sizeof n2, "%s.pass%d.tails", name, pass);
            close_rows(n2, tails, 0.0625 * U);
        }
        pfree(xt); pfree(y); bfree(&b);
        free(x);
        for (int i = 0; i < n_seq; i++)
            pos0[i] += len[i];
    }
    pfree(tails);
    free(w);
}

/* The delta rule. q and k rows unit-norm per key head (as after the L2
 * norm), g in [-1, 0), beta in (0, 1). Each token's update rounds about
 * 2 dk times per state element; the state stays bounded by |v| / (1 -
 * decay) and the output by dk^-1/2 |S|: the bound grows with the tokens,
 * (16 + 4 t) dk u of the largest |out|. With dn_gated, be_deltanet_gated
 * from raw rows: q and k un-normed, the gates from random alpha and b and
 * dt bias and A (A in [-1, -0.1)); the norms and gates each round a few
 * times more, well inside the bound. With dn_keep too,
 * be_deltanet_gated_keep (the CPU: the gates, the norms and
 * be_deltanet_keep; the GPU: one kernel) with maxlen kept rows a slot: the
 * kept states as well (the rows no run writes stay zero on both). */
static bool dn_gated, dn_keep;
static void test_deltanet(int64_t Hk, int64_t Hv, int64_t dk, int n_seq, const int *len,
                          bool chunked)
{
    char name[128];
    int64_t T = 0, maxlen = 0;
    for (int i = 0; i < n_seq; i++) {
        T += len[i];
        maxlen = len[i] > maxlen ? len[i] : maxlen;
    }
    snprintf(name, sizeof name, "cuda.deltanet%s_hk%lld_hv%lld_dk%lld_seq%d_t%lld",
             chunked ? "_chunked" : dn_gated && dn_keep ? "_gated_keep" : dn_gated ? "_gated" : "",
             (long long)Hk, (long long)Hv,
             (long long)dk, n_seq, (long long)T);
    t_rng r = t_rng_named(name);
    const int64_t n_slots = 8, W = (2 * Hk + Hv) * dk;
    float *qkv = t_randv(&r, T * W, 1);
    for (int64_t t = 0; t < T && !dn_gated; t++)
        for (int64_t h = 0; h < 2 * Hk; h++) {
            float *p = qkv + t * W + h * dk;
            double s = 0;
            for (int64_t i = 0; i < dk; i++)
                s += (double)p[i] * p[i];
            for (int64_t i = 0; i < dk; i++)
                p[i] = (float)(p[i] / sqrt(s));
        }
    float *g = malloc(sizeof(float) * (size_t)(T * Hv)), *beta = malloc(sizeof(float) * (size_t)(T * Hv));
    for (int64_t i = 0; i < T * Hv; i++) {
        g[i] = -0.05f - 0.9f * t_uniform(&r);
        beta[i] = 0.05f + 0.9f * t_uniform(&r);
    }
    float *S0 = t_randv(&r, n_slots * Hv * dk * dk, 0.1f);
    pair qt = up(qkv, T, W), gt = up(g, T, Hv), bt = up(beta, T, Hv),
         S = up(S0, n_slots * Hv, dk * dk), out = up(NULL, T, Hv * dk);
    int slot[16], pos0[16];
    for (int i = 0; i < n_seq; i++) {
        slot[i] = (i * 3 + 5) % (int)n_slots;
        pos0[i] = 7;
    }
    bpair b = batch_of(n_seq, slot, len, pos0, 1 << 20);
    wt dtw = { 0 }, aw = { 0 };
    pair alt = { 0 }, bit = { 0 };
    if (dn_gated) {
        float *al = t_randv(&r, T * Hv, 1), *bi = t_randv(&r, T * Hv, 1);
        float *dt = t_randv(&r, Hv, 0.5f), *A = malloc(sizeof(float) * (size_t)Hv);
        for (int64_t h = 0; h < Hv; h++)
            A[h] = -0.1f - 0.9f * t_uniform(&r);
        make_vec(&dtw, dt, Hv, 1);
        make_vec(&aw, A, Hv, 1);
        alt = up(al, T, Hv);
        bit = up(bi, T, Hv);
        free(al); free(bi); free(dt); free(A);
    }
    const int64_t K = maxlen, nK = n_slots * K * Hv;
    float *kz = dn_gated && dn_keep ? calloc((size_t)(nK * dk * dk), sizeof(float)) : NULL;
    pair kS = { 0 };
    if (kz)
        kS = up(kz, nK, dk * dk);
    if (chunked) {
        be_deltanet_chunked(cpu, qt.c, gt.c, bt.c, S.c, Hk, Hv, dk, &b.c, out.c);
        be_deltanet_chunked(gpu, qt.g, gt.g, bt.g, S.g, Hk, Hv, dk, &b.g, out.g);
    } else if (kz) {
        be_deltanet_gated_keep(cpu, qt.c, alt.c, bit.c, dtw.wc, aw.wc, 1e-6f, gt.c, bt.c, S.c,
                               kS.c, Hk, Hv, dk, &b.c, out.c);
        be_deltanet_gated_keep(gpu, qt.g, alt.g, bit.g, dtw.wg, aw.wg, 1e-6f, gt.g, bt.g, S.g,
                               kS.g, Hk, Hv, dk, &b.g, out.g);
    } else if (dn_gated) {
        be_deltanet_gated(cpu, qt.c, alt.c, bit.c, dtw.wc, aw.wc, 1e-6f, gt.c, bt.c, S.c, Hk, Hv,
                          dk, &b.c, out.c);
        be_deltanet_gated(gpu, qt.g, alt.g, bit.g, dtw.wg, aw.wg, 1e-6f, gt.g, bt.g, S.g, Hk, Hv,
                          dk, &b.g, out.g);
    } else {
        be_deltanet(cpu, qt.c, gt.c, bt.c, S.c, Hk, Hv, dk, &b.c, out.c);
        be_deltanet(gpu, qt.g, gt.g, bt.g, S.g, Hk, Hv, dk, &b.g, out.g);
    }
    if (gpu_ok(name)) {
        float *c, *gg;
        down(out, &c, &gg);
        double mx = 0;
        for (int64_t i = 0; i < T * Hv * dk; i++)
            mx = fmax(mx, fabs(c[i]));
        /* the chunked form inverts a 64x64 triangular system in f32 on the
         * CPU: its own rounding is 64 times the recurrence's */
        const double eps = (16.0 + 4.0 * (double)maxlen) * (double)dk * U * (chunked ? 64 : 1);
        verdict(name, c, gg, T * Hv * dk, NULL, eps * mx);
        free(c);
        free(gg);
        float *sc, *sg;
        down(S, &sc, &sg);
        mx = 0;
        for (int64_t i = 0; i < n_slots * Hv * dk * dk; i++)
            mx = fmax(mx, fabs(sc[i]));
        char n2[160];
        snprintf(n2, sizeof n2, "%s.state", name);
        verdict(n2, sc, sg, n_slots * Hv * dk * dk, NULL, eps * mx);
        free(sc);
        free(sg);
        if (kz) {
            down(kS, &sc, &sg);
            mx = 0;
            int64_t written = 0;
            for (int64_t i = 0; i < nK * dk * dk; i++) {
                mx = fmax(mx, fabs(sc[i]));
                written += sc[i] != 0;
            }
            snprintf(n2, sizeof n2, "%s.kept", name);
            /* every row but a run's last keeps its state somewhere */
            if (written == 0 && T > n_seq)
                t_fail(n2, "no kept state was written");
            else
                verdict(n2, sc, sg, nK * dk * dk, NULL, eps * mx);
            free(sc);
            free(sg);
        }
    }
    if (kz) {
        pfree(kS);
        free(kz);
    }
    pfree(qt); pfree(gt); pfree(bt); pfree(S); pfree(out);
    if (dn_gated) {
        pfree(alt); pfree(bit);
    }
    bfree(&b);
    free(qkv); free(g); free(beta); free(S0);
}

/* ---------------------------------------------------- chunked delta rule */

/* The chunked kernels (cuda_chunk.cu) in a CUDA context of their own, made
 * with Q36_CUDA_CHUNKED=1, against the true recurrence in double precision
 * within the bound B of tests/deltanet_ref.h (the CPU suite runs the same
 * kernels' code emulated on the host against the same bound:
 * tests/test_deltanet_chunk.c). */
static be_ctx *gpc;

/* Rows [r0, r0+T) of the case as one pass of runs (first rows counted
 * from r0) on gpc: their outputs into out's rows r0.., S in and out. */
static int gpc_pass(const dn_case *c, int64_t r0, int64_t T, const int32_t *runs, int n_seq,
                    float *out, float *S, q36_err *err)
{
    const int64_t Hv = c->Hv, dk = c->dk, nS = c->n_slots * Hv;
    be_tensor *qt = be_tensor_new(gpc, T, c->W), *gt = be_tensor_new(gpc, T, Hv);
    be_tensor *bt = be_tensor_new(gpc, T, Hv), *St = be_tensor_new(gpc, nS, dk * dk);
    be_tensor *ot = be_tensor_new(gpc, T, Hv * dk);
    be_write(gpc, qt, 0, T, c->qkv + r0 * c->W);
    be_write(gpc, gt, 0, T, c->g + r0 * Hv);
    be_write(gpc, bt, 0, T, c->beta + r0 * Hv);
    be_write(gpc, St, 0, nS, S);
    be_seq seq[DN_MAX_SEQ];
    for (int s = 0; s < n_seq; s++)
        seq[s] = (be_seq){ runs[4 * s], runs[4 * s + 1], runs[4 * s + 2], runs[4 * s + 3] };
    be_batch b;
    int rc = be_batch_init(gpc, &b, T, n_seq, 1 << 20, err);
    if (!rc) {
        be_batch_set(gpc, &b, n_seq, seq);
        be_deltanet_chunked(gpc, qt, gt, bt, St, c->Hk, Hv, dk, &b, ot);
        be_read(gpc, ot, 0, T, out + r0 * Hv * dk);
        be_read(gpc, St, 0, nS, S);
        be_batch_free(gpc, &b);
        rc = be_check(gpc, err);
    }
    be_tensor *all[] = { qt, gt, bt, St, ot };
    for (int i = 0; i < 5; i++)
        be_tensor_free(gpc, all[i]);
    return rc;
}

/* The state kernel on tensor cores (Q36_CUDA_CHUNKTC): its operands
 * rounded to TF32 (u_t = 2^-11) instead of its sums rounded in f32, so
 * deltanet_ref.h's bound with each stage's error taken as 2 u_t times its
 * sum of |products| (about M, the rounding once per operand rather than
 * once per add): B_t = 4 * 2 u_t (n_c + 1) M = 2^-7 (n_c + 1) M. A wrong
 * index or mask gives errors of order M, still many times B_t. */
static bool dn_tf32, dn_tf32_state, dn_fused, dn_pb, dn_pmma;
static int dn_bv;

static double dn_bound_tf32(int64_t max_len, double M)
{
    return 0x1p-7 * (double)((max_len + DN_CHUNK - 1) / DN_CHUNK + 1) * M;
}

/* One case as one pass, or (cut > 0, one run) as two passes cut there:
 * the state at the cut is a chunk-boundary state when cut % 64 == 0. */
static void test_chunk(int64_t Hk, int64_t Hv, int64_t dk, int n_seq, const int *len, int gates,
                       float s0, int cut)
{
    char name[160];
    int n = snprintf(name, sizeof name, "cuda.deltanet_chunk_hk%lld_hv%lld_dk%lld_g%d_s%g_t",
                     (long long)Hk, (long long)Hv, (long long)dk, gates, s0);
    for (int i = 0; i < n_seq && n < (int)sizeof name - 16; i++)
        n += snprintf(name + n, sizeof name - (size_t)n, i ? "+%d" : "%d", len[i]);
    if (cut)
        n += snprintf(name + n, sizeof name - (size_t)n, "_at%d", cut);
    if (dn_tf32)
        n += snprintf(name + n, sizeof name - (size_t)n, dn_tf32_state ? "_tf32s" : "_tf32");
    if (dn_fused)
        n += snprintf(name + n, sizeof name - (size_t)n, "_fused");
    if (dn_pb)
        n += snprintf(name + n, sizeof name - (size_t)n, "_pb");
    if (dn_pmma)
        n += snprintf(name + n, sizeof name - (size_t)n, "_pmma");
    if (dn_bv)
        snprintf(name + n, sizeof name - (size_t)n, "_bv%d", dn_bv);
    dn_case c;
    dn_case_make(&c, name, Hk, Hv, dk, n_seq, len, gates, s0);
    const int64_t no = c.T * Hv * dk, ns = c.n_slots * Hv * dk * dk;
    double *out_t = calloc((size_t)no + 1, sizeof(double)), *S_t = malloc(sizeof(double) * (size_t)ns);
    double *S_c = malloc(sizeof(double) * (size_t)ns);
    for (int64_t i = 0; i < ns; i++)
        S_t[i] = S_c[i] = c.S0[i];
    const double M = dn_truth(&c, c.runs, n_seq, out_t, S_t);
    const double B = dn_tf32 ? dn_bound_tf32(dn_max_len(c.runs, n_seq), M)
                             : dn_bound(dk, dn_max_len(c.runs, n_seq), M);
    float *out = calloc((size_t)no + 1, sizeof(float)), *S = malloc(sizeof(float) * (size_t)ns);
    memcpy(S, c.S0, sizeof(float) * (size_t)ns);
    q36_err err = { 0 };
    double wc = 0;
    int64_t ic = 0, io, is;
    int rc;
    if (!cut) {
        rc = gpc_pass(&c, 0, c.T, c.runs, n_seq, out, S, &err);
    } else {
        const int32_t r1[4] = { c.runs[0], 0, cut, 7 }, r2[4] = { c.runs[0], 0, len[0] - cut, 7 + cut };
        double *o_c = calloc((size_t)no + 1, sizeof(double));
        dn_truth(&c, r1, 1, o_c, S_c);
        free(o_c);
        rc = gpc_pass(&c, 0, cut, r1, 1, out, S, &err);
        wc = dn_worst(S, S_c, ns, B, &ic);
        rc = rc ? rc : gpc_pass(&c, cut, len[0] - cut, r2, 1, out, S, &err);
    }
    const double wo = dn_worst(out, out_t, no, B, &io), ws = dn_worst(S, S_t, ns, B, &is);
    if (rc)
        t_fail(name, "%s", err.msg);
    else
        t_check(name, wc <= 1 && wo <= 1 && ws <= 1, "output %lld: %.9g, true %.9g (%.3g of B); "
                "state %lld: %.9g, true %.9g (%.3g of B); state at the cut %.3g of B; B = %.3g",
                (long long)io, out[io], out_t[io], wo, (long long)is, S[is], S_t[is], ws, wc, B);
    printf("#   worst output error %.3g of B, state %.3g, state at the cut %.3g (B = %.3g, "
           "M = %.3g)\n", wo, ws, wc, B, M);
    free(out); free(S); free(out_t); free(S_t); free(S_c);
    dn_case_free(&c);
}

/* tc: the state kernel on tensor cores (names end in _tf32), else the
 * f32 one; with tc, prep (Q36_CUDA_CHUNKPREP): 1 the prep kernel's
 * products on tensor cores too (k_chunk_prep_tc), 3 the same as mma.sync
 * steps, and k_chunk_out's too (Q36_CUDA_CHUNKOUTM=1; names end in _pmma;
 * the defaults), 2 the prep kernel in f32, blocked (k_chunk_prep_pb; names
 * end in _pb), 0 its f32 forward substitution (names end in _tf32s); with
 * tc, split: the states and outputs in two kernels (the default), else in
 * one (names end in _fused); bv (Q36_CUDA_CHUNKBV): the split state kernel
 * k_chunk_state_split (0: WMMA, 16 value columns a block), or
 * k_chunk_state_wide's columns a block, 16 or 32 (names end in _bv16,
 * _bv32) */
static void test_chunk_ops(const be_shape *sh, bool tc, int prep, bool split, int bv)
{
    const bool ptc = prep == 1 || prep == 3, pb = prep == 2;
    const char pv[2] = { (char)('0' + prep), 0 };
    char *keep = env_set("Q36_CUDA_CHUNKTC", tc ? "1" : "0");
    char *keep_p = env_set("Q36_CUDA_CHUNKPREP", pv);
    char *keep_s = env_set("Q36_CUDA_CHUNKSPLIT", split ? "1" : "0");
    char *keep_b = env_set("Q36_CUDA_CHUNKBV", bv == 32 ? "32" : bv == 16 ? "16" : "0");
    char *keep_o = env_set("Q36_CUDA_CHUNKOUTM", prep == 3 ? "1" : "0");
    gpc = ctx_with("Q36_CUDA_CHUNKED", "1", sh, "cuda.deltanet_chunk_context");
    env_restore("Q36_CUDA_CHUNKTC", keep);
    env_restore("Q36_CUDA_CHUNKPREP", keep_p);
    env_restore("Q36_CUDA_CHUNKSPLIT", keep_s);
    env_restore("Q36_CUDA_CHUNKBV", keep_b);
    env_restore("Q36_CUDA_CHUNKOUTM", keep_o);
    if (!gpc)
        return;
    dn_tf32 = tc;
    dn_pb = tc && pb;
    dn_pmma = tc && prep == 3;
    dn_bv = tc && split ? bv : 0;
    dn_tf32_state = tc && !ptc && !pb;
    dn_fused = tc && !split;
    const int l1[] = { 1 }, l5[] = { 5 }, l63[] = { 63 }, l64[] = { 64 }, l65[] = { 65 },
              l200[] = { 200 }, l512[] = { 512 }, l3[] = { 7, 1, 130 },
              l4[] = { 100, 200, 12, 200 }, l8[] = { 1, 1, 1, 1, 64, 65, 3, 1 };
    /* the Qwen3.5/3.6 geometry (16 key heads, 32 value heads, dk 128) */
    test_chunk(16, 32, 128, 1, l512, DN_GATES_MIXED, 0.1f, 0);
    test_chunk(16, 32, 128, 4, l4, DN_GATES_MIXED, 0.1f, 0);
    test_chunk(16, 16, 128, 8, l8, DN_GATES_MIXED, 0.3f, 0);
    /* lengths around a chunk */
    test_chunk(2, 4, 128, 1, l1, DN_GATES_MIXED, 0.1f, 0);
    test_chunk(2, 4, 128, 1, l5, DN_GATES_MIXED, 0.1f, 0);
    test_chunk(2, 4, 128, 1, l63, DN_GATES_MIXED, 0.1f, 0);
    test_chunk(2, 4, 128, 1, l64, DN_GATES_MIXED, 0.1f, 0);
    test_chunk(2, 4, 128, 1, l65, DN_GATES_MIXED, 0.1f, 0);
    /* head dims, runs, gates, states */
    test_chunk(2, 4, 64, 3, l3, DN_GATES_MIXED, 0.1f, 0);
    test_chunk(1, 3, 64, 4, l4, DN_GATES_STRONG, 1.0f, 0);
    test_chunk(1, 3, 64, 4, l4, DN_GATES_WEAK, 0.3f, 0);
    test_chunk(3, 3, 32, 3, l3, DN_GATES_WEAK, 0.0f, 0);
    test_chunk(1, 2, 256, 1, l200, DN_GATES_MIXED, 0.1f, 0);
    test_chunk(2, 4, 128, 3, l3, DN_GATES_STRONG, 0.3f, 0);
    /* passes cut at a chunk boundary and off one */
    test_chunk(16, 32, 128, 1, l512, DN_GATES_MIXED, 0.1f, 256);
    test_chunk(2, 4, 128, 1, l200, DN_GATES_MIXED, 0.3f, 128);
    test_chunk(2, 2, 64, 1, l200, DN_GATES_WEAK, 0.3f, 100);
    be_free(gpc);
    gpc = NULL;
    dn_tf32 = dn_tf32_state = dn_fused = dn_pb = false;
}

/* ------------------------------------------------ f16 tensor-core matmul */

/* Q36_CUDA_GEMM16=1 (cuda_gemm.cu): the matmul cases on a context made
 * with it in place of `gpu`, at batch sizes above 8 rows, against the CPU
 * with mm_bound's f16 terms: each product w x gains at most two f16
 * roundings, 2 * 2^-11 |w x| (plus 2^-24 |x| or |w| below f16's normal
 * range), and the f32 sum of K products at most K 2^-22 sum |w x| in
 * whatever order and accumulator rounding the tensor cores use. A wrong
 * row, column or slab gives errors of order sum |w x|. Names end in _f16. */
static void test_gemm16_ops(const be_shape *sh)
{
    be_ctx *gpg = ctx_with("Q36_CUDA_GEMM16", "1", sh, "cuda.gemm16_context"), *saved = gpu;
    if (!gpg)
        return;
    gpu = gpg;
    mm_f16 = true;
    case_tag = "_f16";
    const uint32_t types[] = { QT_F16, QT_BF16, QT_Q8_0, QT_Q4_K, QT_Q5_K, QT_Q6_K };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        test_matmul(types[i], 256, 100, 9);
        test_matmul(types[i], 2048, 257, 64);
        test_matmul(types[i], 1024, 96, 512);
    }
    test_matmul(QT_Q4_K, 4096, 8200, 9);        /* 33.6M weights: two slabs of the scratch */
    test_matmul(QT_Q6_K, 4096, 1000, 512);      /* activations take most of the scratch */
    test_matmul(QT_F16, 40, 31, 17);            /* K no 8 divides */
    mm_tf32 = true;                             /* F32: TF32 tensor cores (Q36_CUDA_TF32) */
    test_matmul(QT_F32, 256, 100, 64);
    test_matmul(QT_F32, 2048, 256, 513);        /* a MoE router */
    test_matmul(QT_F32, 2048, 1, 300);          /* a shared expert's gate */
    test_matmul(QT_F32, 1000, 33, 77);
    mm_tf32 = false;
    gpu = saved;
    mm_f16 = false;
    case_tag = "";
    be_free(gpg);
}

/* be_matmul_id_swiglu: y = silu(Wg x) * (Wu x) per (token, rank) row, x a
 * row a token. The CPU's own gate and up products (be_matmul_id alone) give
 * the bound: each product's mm_bound carried through silu (slope below
 * 1.1) and the product, plus a few roundings of y. */
static void test_matmul_id_swiglu(uint32_t type, int64_t K, int64_t N, int64_t E, int64_t k,
                                  int64_t T)
{
    char name[112];
    snprintf(name, sizeof name, "cuda%s.matmul_id_swiglu_%s_%lldx%lld_e%lld_top%lld_t%lld%s",
             variant, quant_type_name(type), (long long)K, (long long)N, (long long)E,
             (long long)k, (long long)T, case_tag);
    t_rng r = t_rng_named(name);
    wt wg, wu;
    make_weight(&wg, &r, type, K, N, E);
    make_weight(&wu, &r, type, K, N, E);
    float *x = t_randv(&r, T * K, 1), *xq = malloc(sizeof(float) * (size_t)K);
    int32_t *sel = malloc(sizeof(int32_t) * (size_t)(T * k));
    for (int64_t q = 0; q < T * k; q++)         /* distinct experts a token */
        sel[q] = (int32_t)((q % k) * (E / k) + (int64_t)(t_next(&r) % (uint64_t)(E / k)));
    pair xt = up(x, T, K), y = up(NULL, T * k, N), tmp = up(NULL, T * k, N);
    pair gc = up(NULL, T * k, N), uc = up(NULL, T * k, N);
    pair st = { t_i32(cpu, sel, T, k), t_i32(gpu, sel, T, k) };
    be_matmul_id(cpu, wg.wc, xt.c, st.c, gc.c);
    be_matmul_id(cpu, wu.wc, xt.c, st.c, uc.c);
    be_matmul_id_swiglu(cpu, wg.wc, wu.wc, xt.c, st.c, tmp.c, y.c);
    be_matmul_id_swiglu(gpu, wg.wg, wu.wg, xt.g, st.g, tmp.g, y.g);
    if (gpu_ok(name)) {
        float *c, *g, *gv, *uv, *dummy;
        down(y, &c, &g);
        down(gc, &gv, &dummy);
        free(dummy);
        down(uc, &uv, &dummy);
        free(dummy);
        double *b = malloc(sizeof(double) * (size_t)(T * k * N));
        for (int64_t q = 0; q < T * k; q++) {
            const float *xr = x + (q / k) * K;
            act_view(type, xr, xq, K);
            for (int64_t n = 0; n < N; n++) {
                const int64_t row = ((int64_t)sel[q] * N + n) * K;
                const double bg = mm_bound(wg.deq + row, xr, xq, K);
                const double bu = mm_bound(wu.deq + row, xr, xq, K);
                const double gg = gv[q * N + n], uu = uv[q * N + n];
                const double sg = fabs(gg / (1.0 + exp(-gg)));
                b[q * N + n] = 1.1 * fabs(uu) * bg + (sg + 1.1 * bg) * bu +
                               8.0 * U * fabs((double)c[q * N + n]);
            }
        }
        verdict(name, c, g, T * k * N, b, 0);
        free(b); free(c); free(g); free(gv); free(uv);
    }
    pfree(xt); pfree(y); pfree(tmp); pfree(gc); pfree(uc); pfree(st);
    free(x); free(xq); free(sel);
    free(wg.deq);
    free(wu.deq);
}

/* ------------------------------------------------ grouped expert products */

/* Q36_CUDA_MOEGEMM=1, =2 (cuda_moe.cu) and =3 (cuda_moe_pre.cu): the
 * matmul_id cases above, run on a context made with it in place of `gpu`,
 * at prompt sizes (at least 64 (token, rank) rows, the grouped path's
 * threshold), against the CPU with mm_bound's sequential-sum order term
 * (and, for =2 and =3, the f16 roundings of test_gemm16's bound). Experts
 * with no rows, one tile and several; top-1/3/8; x per token or per
 * (token, rank); for =3 the weights of the large cases in several slabs
 * (the shape's expert_elems) and K not a multiple of 8 (=2's kernel). For
 * =3, wmma_bn 0 runs cuda_moe_mma.cu's tiles (128 rows;
 * be_matmul_id_swiglu's gate and up in one kernel), with wg on Hopper's
 * warpgroup products (cuda_moe_wg.cu, the default there), else on
 * mma.sync in stages of 64 columns, or of 32 with bk32; 128 or 256
 * (Q36_CUDA_MOEMMA=0) cuda_moe_pre.cu's WMMA tiles of that many outputs.
 * With wg, wq keeps Q4_K weights in their blocks (cuda_moe_wq.cu, the
 * default); without it they are f16 copies as every other type's.
 * The be_matmul_id_swiglu cases run the three ops on the other kernels. */
static void test_moe_ops(const be_shape *sh, const char *mode, int wmma_bn, bool bk32, bool wg,
                         bool wq)
{
    /* every batch of at least 64 rows grouped, however few an expert gets
     * (by default, only batches of 2 rows an expert on average) */
    char *per = env_set("Q36_CUDA_MOEROWS", "0"), *bn = env_set("Q36_CUDA_MOEBN", wmma_bn == 256 ? "256" : "128");
    char *mma = env_set("Q36_CUDA_MOEMMA", wmma_bn ? "0" : "1");
    char *bk = env_set("Q36_CUDA_MOEBK", bk32 ? "32" : "64");
    char *wgs = env_set("Q36_CUDA_MOEWG", wg ? "1" : "0");
    char *wqs = env_set("Q36_CUDA_MOEWQ", wq ? "1" : "0");
    be_ctx *gpm = ctx_with("Q36_CUDA_MOEGEMM", mode, sh, "cuda.moe_gemm_context"), *saved = gpu;
    env_restore("Q36_CUDA_MOEROWS", per);
    env_restore("Q36_CUDA_MOEBN", bn);
    env_restore("Q36_CUDA_MOEMMA", mma);
    env_restore("Q36_CUDA_MOEBK", bk);
    env_restore("Q36_CUDA_MOEWG", wgs);
    env_restore("Q36_CUDA_MOEWQ", wqs);
    if (!gpm)
        return;
    gpu = gpm;
    mm_sequential = true;
    mm_f16 = strcmp(mode, "1") != 0;
    case_tag = !strcmp(mode, "3") ? (wmma_bn == 256   ? "_grouped_f16pre256"
                                     : wmma_bn == 128 ? "_grouped_f16pre_wmma"
                                     : bk32           ? "_grouped_f16pre_bk32"
                                     : !wg            ? "_grouped_f16pre_mma"
                                     : !wq            ? "_grouped_f16pre_wgf16"
                                                      : "_grouped_f16pre")
               : mm_f16 ? "_grouped_f16" : "_grouped";
    const uint32_t etypes[] = { QT_Q4_K, QT_Q8_0, QT_F16, QT_Q6_K, QT_Q5_K, QT_BF16, QT_F32 };
    for (size_t i = 0; i < sizeof etypes / sizeof etypes[0]; i++) {
        test_matmul_id(etypes[i], 256, 64, 8, 8, 9, false);
        test_matmul_id(etypes[i], 512, 96, 16, 8, 33, false);
        test_matmul_id(etypes[i], 256, 512, 16, 8, 70, true);
        test_matmul_id(etypes[i], 256, 100, 256, 8, 10, false);   /* most experts: no rows */
    }
    test_matmul_id(QT_Q4_K, 2048, 512, 64, 8, 200, false);      /* 35B-A3B expert shapes */
    test_matmul_id(QT_Q4_K, 512, 2048, 64, 8, 100, true);
    test_matmul_id(QT_Q8_0, 256, 64, 4, 1, 130, false);         /* top-1: 2 tiles an expert */
    test_matmul_id(QT_Q8_0, 256, 64, 8, 3, 30, false);
    test_matmul_id(QT_F16, 40, 33, 5, 3, 30, false);            /* K not a multiple of 32 */
    test_matmul_id(QT_F16, 36, 33, 5, 3, 30, false);            /* ... nor of 8 */
    test_matmul_id(QT_Q4_K, 256, 64, 2, 1, 500, false);         /* ~250 rows an expert: 2 tiles of 128 */
    /* the gate and up products with their swiglu: the 35B-A3B's shape (25
     * rows an expert; its host reference takes seconds, so only on the
     * default kernel and the three ops of =2), outputs not a multiple of
     * the 64 of a block, K not a multiple of 32, rows not a multiple of
     * the 16 of a fragment */
    if ((!strcmp(mode, "3") && wg && wq) || !strcmp(mode, "2"))
        test_matmul_id_swiglu(QT_Q4_K, 2048, 512, 64, 8, 200);
    test_matmul_id_swiglu(QT_Q8_0, 256, 100, 8, 3, 90);
    test_matmul_id_swiglu(QT_Q6_K, 512, 96, 4, 2, 150);
    test_matmul_id_swiglu(QT_F16, 40, 33, 5, 3, 30);
    test_matmul_id_swiglu(QT_F16, 36, 33, 5, 3, 30);            /* K not a multiple of 8: 3 ops */
    gpu = saved;
    mm_sequential = mm_f16 = false;
    case_tag = "";
    be_free(gpm);
}

/* ----------------------------------------------------- tiled prompt attention */

/* Q36_CUDA_FATTN=1 (cuda_fattn.cu): the attention cases, run on a context
 * made with it in place of `gpu`, at prompt sizes (at least 64 query rows,
 * the tiled path's threshold), with test_attention's bound; names end in
 * _tiled_mma with f16 caches on tensor cores in registers (Q36_CUDA_FATTNTC
 * and Q36_CUDA_FATTNMMA on, cuda_fattn_mma.cu), _tiled_tc through WMMA
 * (Q36_CUDA_FATTNMMA=0, cuda_fattn_tc.cu; in both, f32-cache cases take
 * the f32 kernel), _tiled with
 * it off (the f32 kernel for both). Head dims 64/128/256, 1-3 KV heads,
 * f16 and f32 caches, runs with a prefix in the cache, a decode row beside
 * prompts, rows not a multiple of the 32-row tiles. */
/* The attention cases of the decode paths on `gpu`: head dims 64/128/256,
 * 1-3 KV heads, GQA groups 1-8, f16 and f32 caches; one row of one slot
 * (short and over a long cache), one row each of 8 slots, and a batch of
 * three runs; one row over a cache of 20000 on the 35B-A3B heads. */
static void attention_decode_cases(void)
{
    const int l1[] = { 1 }, p0[] = { 0 }, p_long[] = { 3000 };
    const int l8[] = { 1, 1, 1, 1, 1, 1, 1, 1 }, p8[] = { 0, 5, 100, 31, 257, 1000, 2, 64 };
    const int l3[] = { 7, 1, 33 }, p3[] = { 0, 12, 5 };
    const int64_t shapes[][3] = { { 16, 2, 256 }, { 8, 2, 256 }, { 4, 1, 64 }, { 6, 3, 128 },
                                  { 3, 3, 64 }, { 24, 3, 128 } };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int kvt = 0; kvt < 3; kvt++) {       /* f32, f16, q8_0 caches */
            const int64_t Hq = shapes[i][0], Hkv = shapes[i][1], hd = shapes[i][2];
            test_attention(Hq, Hkv, hd, kvt, 1, l1, p0);
            test_attention(Hq, Hkv, hd, kvt, 1, l1, p_long);
            test_attention(Hq, Hkv, hd, kvt, 8, l8, p8);
            test_attention(Hq, Hkv, hd, kvt, 3, l3, p3);
        }
    /* a deep cache on the Qwen3.6-35B-A3B heads: 256 splits of 79 keys, more
     * splits than the merge's threads */
    const int p_deep[] = { 20000 };
    for (int kvt = 0; kvt < 3; kvt++)
        test_attention(16, 2, 256, kvt, 1, l1, p_deep);
}

static void test_fattn_ops(const be_shape *sh, bool tc, bool mma, bool wg)
{
    /* f16 caches on tensor cores unless tc is false: in registers through
     * mma.sync (cuda_fattn_mma.cu) when mma, else WMMA (cuda_fattn_tc.cu);
     * with wg, head dim 256 through warpgroup products (cuda_fattn_wg.cu,
     * Hopper; elsewhere those cases take mma.sync) */
    char *keep = env_set("Q36_CUDA_FATTNTC", tc ? "1" : "0");
    char *keep_mma = env_set("Q36_CUDA_FATTNMMA", mma ? "1" : "0");
    char *keep_wg = env_set("Q36_CUDA_FATTNWG", wg ? "1" : "0");
    be_ctx *gpf = ctx_with("Q36_CUDA_FATTN", "1", sh, "cuda.fattn_context"), *saved = gpu;
    env_restore("Q36_CUDA_FATTNTC", keep);
    env_restore("Q36_CUDA_FATTNMMA", keep_mma);
    env_restore("Q36_CUDA_FATTNWG", keep_wg);
    if (!gpf)
        return;
    gpu = gpf;
    case_tag = !tc        ? "_tiled"
               : wg      ? "_tiled_wg"
               : mma     ? "_tiled_mma"
                         : "_tiled_tc";
    const int l1[] = { 512 }, p1[] = { 0 }, l2[] = { 300, 212 }, p2[] = { 0, 40 };
    const int l3[] = { 65, 1, 33 }, p3[] = { 0, 1000, 5 }, l4[] = { 100 }, p4[] = { 3000 };
    /* runs of one and two 128-row tiles and a part, at depths */
    const int l5[] = { 129, 257 }, p5[] = { 7, 700 };
    const int64_t shapes[][3] = { { 16, 2, 256 }, { 8, 2, 256 }, { 4, 1, 64 }, { 6, 3, 128 },
                                  { 24, 3, 128 } };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int kvt = 0; kvt < 3; kvt++) {   /* q8_0: f16 copies (cuda_fattn_q8) */
            const int64_t Hq = shapes[i][0], Hkv = shapes[i][1], hd = shapes[i][2];
            test_attention(Hq, Hkv, hd, kvt, 1, l1, p1);
            test_attention(Hq, Hkv, hd, kvt, 2, l2, p2);
            test_attention(Hq, Hkv, hd, kvt, 3, l3, p3);
            test_attention(Hq, Hkv, hd, kvt, 1, l4, p4);
            test_attention(Hq, Hkv, hd, kvt, 2, l5, p5);
        }
    gpu = saved;
    case_tag = "";
    be_free(gpf);
}

/* Q36_CUDA_ATTNGQA=1: decode attention split by K/V head, a block serving
 * the query heads of a group (cuda_seq.cu, k_attn_split_gqa), on the
 * decode cases of the default path (attention_decode_cases) with the same
 * bounds; groups of 1 and head dim 64 have no instance and take the
 * default kernel. Names end in _gqa. */
static void test_mv_mixed(const be_shape *sh)
{
    be_ctx *m = ctx_with("Q36_CUDA_MVMIXED", "1", sh, "cuda.mv_mixed_context"), *saved = gpu;
    if (!m)
        return;
    gpu = m;
    variant = ".mvmixed";
    const uint32_t mixed[3] = { QT_Q4_K, QT_Q6_K, QT_Q8_0 };
    const uint32_t mix4[4] = { QT_Q4_K, QT_Q4_K, QT_Q6_K, QT_F32 };
    const uint32_t mix6[6] = { QT_Q6_K, QT_Q4_K, QT_Q5_K, QT_BF16, QT_F16, QT_Q4_K };
    test_matmul_n(mixed, 3, 1);
    test_matmul_n(mixed, 3, 2);
    test_matmul_n(mix4, 4, 1);
    test_matmul_n(mix4, 4, 8);
    test_matmul_n(mix6, 6, 1);
    test_matmul_n(mix6, 6, 3);
    gpu = saved;
    variant = "";
    be_free(m);
}

/* Batch-invariant exact mode's products (Q36_CUDA_EXACTINV=1, cuda.h:
 * inv): R rows in one product (k_matvec_inv above 8 rows, 16 rows a block,
 * 2 or 4 weight rows a warp) give each row the bits of that row alone (the
 * decode kernel). Odd shapes: R not a multiple of 16, N of the warps'
 * rows, K of 256 (and of 8: the F16 rows' tail), every device type (and
 * IQ4_XS, which the GPU keeps in another type: cuda.cu); the
 * 16-byte Q4_K path when Q36_CUDA_FASTMV is on (run.sh's NEW=1 pass), the
 * 8-byte one otherwise. */
static void test_inv_rows(const be_shape *sh)
{
    be_ctx *v = ctx_with("Q36_CUDA_EXACTINV", "1", sh, "cuda.inv_context"), *saved = gpu;
    if (!v)
        return;
    gpu = v;
    static const struct { uint32_t type; int64_t K, N, R; } cs[] = {
        { QT_Q4_K, 1024, 37, 37 }, { QT_Q4_K, 2048, 96, 16 }, { QT_Q4_K, 256, 5, 9 },
        { QT_Q6_K, 768, 41, 23 }, { QT_Q5_K, 512, 33, 17 }, { QT_Q8_0, 96, 30, 40 },
        { QT_F16, 44, 19, 12 }, { QT_BF16, 64, 8, 33 }, { QT_F32, 100, 13, 10 },
        { QT_IQ4_XS, 256, 21, 18 },
    };
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
        const int64_t K = cs[c].K, N = cs[c].N, R = cs[c].R;
        char name[96];
        snprintf(name, sizeof name, "cuda.inv.matmul_%s_%lldx%lld_r%lld_rows_alone",
                 quant_type_name(cs[c].type), (long long)K, (long long)N, (long long)R);
        t_rng r = t_rng_named(name);
        wt w;
        make_weight(&w, &r, cs[c].type, K, N, 1);
        float *x = t_randv(&r, R * K, 1);
        float *all = malloc(sizeof(float) * (size_t)(R * N)), *one = malloc(sizeof(float) * (size_t)N);
        be_tensor *xt = be_tensor_new(v, R, K), *yt = be_tensor_new(v, R, N);
        be_write(v, xt, 0, R, x);
        be_matmul(v, w.wg, 0, xt, yt);
        be_read(v, yt, 0, R, all);
        int64_t bad = 0, first = -1;
        for (int64_t i = 0; i < R; i++) {
            be_views_reset(v);
            be_matmul(v, w.wg, 0, be_rows(v, xt, i, 1), be_rows(v, yt, 0, 1));
            be_read(v, yt, 0, 1, one);
            if (memcmp(one, all + i * N, sizeof(float) * (size_t)N) && !bad++)
                first = i;
        }
        if (gpu_ok(name))
            t_check(name, bad == 0, "%lld of %lld rows differ from the row alone (first %lld)",
                    (long long)bad, (long long)R, (long long)first);
        be_tensor_free(v, xt);
        be_tensor_free(v, yt);
        free(x); free(all); free(one);
        free(w.deq);
    }
    gpu = saved;
    be_free(v);
}

/* attention_decode_cases on a context made with `var`=1, names ending in tag */
static void attn_decode_with(const be_shape *sh, const char *var, const char *ctx_name,
                             const char *tag)
{
    be_ctx *g = ctx_with(var, "1", sh, ctx_name), *saved = gpu;
    if (!g)
        return;
    gpu = g;
    case_tag = tag;
    attention_decode_cases();
    gpu = saved;
    case_tag = "";
    be_free(g);
}

static void test_attn_gqa(const be_shape *sh)
{
    attn_decode_with(sh, "Q36_CUDA_ATTNGQA", "cuda.attn_gqa_context", "_gqa");
}

/* ----------------------------------------------------------------- graphs */

static char *graphs_env_set(int on) { return env_set("Q36_CUDA_GRAPHS", on ? "1" : "0"); }
static void graphs_env_restore(char *keep) { env_restore("Q36_CUDA_GRAPHS", keep); }

/* A CUDA context made with the switch `var` on or off, reserved for sh;
 * NULL (a failed case) when none can be made. */
static be_ctx *cuda_env(const char *var, int on, const be_shape *sh)
{
    return ctx_with(var, on ? "1" : "0", sh, "cuda.switched_ctx");
}
static be_ctx *cuda_graphs(int on, const be_shape *sh) { return cuda_env("Q36_CUDA_GRAPHS", on, sh); }

/* Q36_CUDA_FASTMV=1: the Q4_K decode matvecs that read 16 bytes a lane
 * (cuda_matmul.cu, dot_q4k) against the CPU with the default path's
 * bounds: decode rows 1, 2, 3, 8 (passes of 4 rows), rows of 1 to 32
 * blocks (a warp step reads 4: partial and several steps), odd output
 * counts, matmul_n groups and expert products. */
static void test_fast_mv(const be_shape *sh)
{
    be_ctx *f = cuda_env("Q36_CUDA_FASTMV", 1, sh), *keep = gpu;
    if (!f)
        return;
    gpu = f;
    variant = ".fastmv";
    test_matmul(QT_Q4_K, 256, 33, 1);
    test_matmul(QT_Q4_K, 512, 257, 3);
    test_matmul(QT_Q4_K, 1024, 96, 8);
    test_matmul(QT_Q4_K, 1280, 64, 2);
    test_matmul(QT_Q4_K, 2048, 300, 1);
    test_matmul(QT_Q4_K, 8192, 40, 4);
    const uint32_t q4[6] = { QT_Q4_K, QT_Q4_K, QT_Q4_K, QT_Q4_K, QT_Q4_K, QT_Q4_K };
    test_matmul_n(q4, 4, 1);
    test_matmul_n(q4, 6, 3);
    test_matmul_id(QT_Q4_K, 256, 64, 8, 3, 5, false);
    test_matmul_id(QT_Q4_K, 2048, 512, 64, 8, 1, false);
    test_matmul_id(QT_Q4_K, 512, 2048, 64, 8, 1, true);
    mm_glu = true;
    test_matmul(QT_Q4_K, 512, 257, 1);
    test_matmul(QT_Q4_K, 1024, 96, 3);
    test_matmul_id(QT_Q4_K, 512, 2048, 64, 8, 2, true);
    mm_glu = false;
    test_matmul_id_swiglu(QT_Q4_K, 2048, 512, 64, 8, 1);
    test_matmul_id_swiglu(QT_Q4_K, 512, 100, 8, 3, 2);
    gpu = keep;
    variant = "";
    be_free(f);
}

/* Kept int8 rows, op by op (cuda.h: q8): two fast-mode contexts, one with
 * Q36_CUDA_Q8KEEP=0, run the same sequence and must give the same bits at
 * every product: a norm writes y and its int8 rows; products of y (one
 * weight; a mixed group with an f32 job; an expert pair) reuse them; then
 * y changes by an op (be_add into y), by a write (be_write), and by a
 * matmul whose output is y, each followed by a product of y that must see
 * the new rows; and a product of other rows in between. */
/* Two fast-mode contexts for sh, the switch var "1" in cx[0] and "0" in
 * cx[1]; false (none kept) when either cannot be made */
/* the first of n floats whose bits differ between a and b, or -1 */
static int first_bits_diff(const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(float)))
            return (int)i;
    return -1;
}

/* The end of one context's pass of a same-bits case: sync, any sticky
 * error as a failure of case `name`, the views and tensors ts freed */
static void pass_end(be_ctx *g, const char *name, be_tensor *const *ts, size_t n)
{
    be_sync(g);
    q36_err err = { 0 };
    if (be_check(g, &err))
        t_fail(name, "%s", err.msg);
    be_views_reset(g);
    for (size_t i = 0; i < n; i++)
        be_tensor_free(g, ts[i]);
}

/* Case `name`: out[0] (VAR on) and out[1] (VAR=0), n values each, the same
 * bits; frees both */
static void same_bits(const char *name, const char *var, float *out[2], size_t n)
{
    const int bad = first_bits_diff(out[0], out[1], n);
    t_check(name, bad < 0, "%s on differs from the bits with it 0 at value %d (%.9g vs %.9g)",
            var, bad, bad >= 0 ? out[0][bad] : 0.0, bad >= 0 ? out[1][bad] : 0.0);
    free(out[0]);
    free(out[1]);
}

/* Two fast-mode contexts: cx[0] with VAR=on, cx[1] with VAR=0 */
static bool fast_ctx_pair_on(const be_shape *sh, const char *var, const char *on, const char *name,
                             be_ctx *cx[2])
{
    be_shape fs = *sh;
    fs.fast = 1;
    cx[0] = ctx_with(var, on, &fs, name);
    cx[1] = ctx_with(var, "0", &fs, name);
    if (cx[0] && cx[1])
        return true;
    if (cx[0]) be_free(cx[0]);
    if (cx[1]) be_free(cx[1]);
    return false;
}
static bool fast_ctx_pair(const be_shape *sh, const char *var, const char *name, be_ctx *cx[2])
{
    return fast_ctx_pair_on(sh, var, "1", name, cx);
}

static void test_q8keep_ops(const be_shape *sh)
{
    be_ctx *cx[2];
    if (!fast_ctx_pair(sh, "Q36_CUDA_Q8KEEP", "cuda.q8keep_ctx", cx))
        return;
    enum { R = 2, K = 512, N = 96, NV = 8 };   /* NV: R x N values read, 8 times */
    const char *name = "cuda.q8keep_ops_same_bits";
    t_rng r0 = t_rng_named(name);
    float *x = t_randv(&r0, R * K, 1), *x2 = t_randv(&r0, R * K, 1), *d = t_randv(&r0, R * K, 1);
    float *out[2];
    wt wq[2], wf[2], wsq[2], we[2], wu[2];
    be_ctx *keep = gpu;
    for (int v = 0; v < 2; v++) {
        gpu = cx[v];
        t_rng r = t_rng_named("cuda.q8keep_ops.weights");
        make_weight(&wq[v], &r, QT_Q4_K, K, N, 1);
        make_weight(&wf[v], &r, QT_F32, K, 8, 1);
        make_weight(&wsq[v], &r, QT_Q6_K, K, K, 1);   /* writes y: K outputs */
        make_weight(&we[v], &r, QT_Q4_K, K, N, 4);
        make_weight(&wu[v], &r, QT_Q4_K, K, N, 4);
        be_ctx *g = gpu;
        be_tensor *xt = be_tensor_new(g, R, K), *y = be_tensor_new(g, R, K);
        be_tensor *dt = be_tensor_new(g, R, K), *o2 = be_tensor_new(g, R, K);
        be_tensor *o = be_tensor_new(g, R, N), *of = be_tensor_new(g, R, 8);
        be_tensor *oe = be_tensor_new(g, R * 2, N), *tmp = be_tensor_new(g, R * 2, N);
        be_tensor *sel = be_tensor_new_type(g, BE_I32, R, 2);
        const int32_t sv[R * 2] = { 3, 1, 0, 2 };
        be_write(g, sel, 0, R, sv);
        be_write(g, xt, 0, R, x);
        be_write(g, dt, 0, R, d);
        out[v] = malloc(sizeof(float) * NV * R * N);
        float *op = out[v];
        const be_weight *wn[2] = { wq[v].wg, wf[v].wg };
        be_tensor *yn[2] = { o, of };
#define PROD(t)                                                                 \
        do {                                                                    \
            be_matmul(g, wq[v].wg, 0, t, o);                                    \
            be_read(g, o, 0, R, op); op += R * N;                               \
        } while (0)
        be_rms_norm(g, xt, NULL, 1e-6f, K, y);       /* y and its int8 rows */
        PROD(y);
        be_matmul_n(g, 2, wn, y, yn);                 /* Q4_K with an f32 job */
        be_read(g, o, 0, R, op); op += R * N;
        be_matmul_id_swiglu(g, we[v].wg, wu[v].wg, y, sel, tmp, oe);
        be_read(g, oe, 0, R * 2, op); op += R * 2 * N;
        be_add(g, y, dt, y);                          /* y changes by an op */
        PROD(y);
        be_write(g, y, 0, R, x2);                     /* by a write */
        PROD(y);
        PROD(dt);                                     /* other rows between */
        be_matmul(g, wsq[v].wg, 0, dt, y);            /* by a product into y */
        PROD(y);
#undef PROD
        be_tensor *ts[] = { xt, y, dt, o2, o, of, oe, tmp, sel };
        pass_end(g, name, ts, sizeof ts / sizeof ts[0]);
    }
    gpu = keep;
    same_bits(name, "Q36_CUDA_Q8KEEP", out, (size_t)NV * R * N);
    free(x); free(x2); free(d);
    be_free(cx[0]);
    be_free(cx[1]);
    for (int v = 0; v < 2; v++) {      /* the data stays: bound weights are keyed by it */
        wt *ws[] = { &wq[v], &wf[v], &wsq[v], &we[v], &wu[v] };
        for (int i = 0; i < 5; i++)
            free(ws[i]->deq);
    }
}

/* Decode-sized products with the switch VAR=on must give the bits they
 * have with VAR=0: the same weights of types[0] (the group's jobs: types
 * 0, 1, 2) times the same rows in a context with it and one without, for
 * R of 1 to 32 rows, N not a multiple of 4, and a be_matmul_n group whose
 * jobs' rows straddle the warps' groups of 4. Cases
 * cuda.TAG_same_bits[_TYPE]_rR (Q4_K unnamed; _mixed for jobs of several
 * types). */
static void dense_same_bits_of(const be_shape *sh, const char *var, const char *on, const char *tag,
                               const uint32_t types[3])
{
    be_ctx *cx[2];
    char ctx_name[64], ty[16] = "";
    const uint32_t type = types[0];
    snprintf(ctx_name, sizeof ctx_name, "cuda.%s_ctx", tag);
    if (types[1] != type || types[2] != type)
        snprintf(ty, sizeof ty, "_mixed");
    else if (type != QT_Q4_K)
        snprintf(ty, sizeof ty, "_%s", type == QT_Q6_K ? "q6_K" : "other");
    if (!fast_ctx_pair_on(sh, var, on, ctx_name, cx))
        return;
    static const int Rs[] = { 1, 5, 8, 13, 32 };
    static const int64_t Nj[3] = { 257, 6, 41 };       /* the group: 304 rows */
    const int64_t K = 1024, NT = 257 + 6 + 41;
    be_ctx *keep = gpu;
    for (size_t ri = 0; ri < sizeof Rs / sizeof Rs[0]; ri++) {
        const int R = Rs[ri];
        char name[80];
        snprintf(name, sizeof name, "cuda.%s_same_bits%s_r%d", tag, ty, R);
        t_rng r0 = t_rng_named(name);
        float *x = t_randv(&r0, (size_t)R * K, 1);
        float *out[2];
        for (int v = 0; v < 2; v++) {
            gpu = cx[v];
            be_ctx *g = gpu;
            t_rng r = t_rng_named("cuda.mvnb.weights");
            wt w[3];
            const be_weight *wn[3];
            be_tensor *yn[3];
            for (int j = 0; j < 3; j++) {
                make_weight(&w[j], &r, types[j], K, Nj[j], 1);
                wn[j] = w[j].wg;
                yn[j] = be_tensor_new(g, R, Nj[j]);
            }
            be_tensor *xt = be_tensor_new(g, R, K), *o = be_tensor_new(g, R, Nj[0]);
            be_write(g, xt, 0, R, x);
            out[v] = malloc(sizeof(float) * (size_t)R * (Nj[0] + NT));
            be_matmul(g, w[0].wg, 0, xt, o);                  /* one weight, 257 rows */
            be_read(g, o, 0, R, out[v]);
            be_matmul_n(g, 3, wn, xt, yn);                    /* three jobs, one launch */
            float *op = out[v] + (size_t)R * Nj[0];
            for (int j = 0; j < 3; j++) {
                be_read(g, yn[j], 0, R, op);
                op += (size_t)R * Nj[j];
            }
            be_tensor *ts[] = { xt, o, yn[0], yn[1], yn[2] };
            pass_end(g, name, ts, sizeof ts / sizeof ts[0]);
            for (int j = 0; j < 3; j++)
                free(w[j].deq);         /* the data stays: bound weights are keyed by it */
        }
        gpu = keep;
        same_bits(name, var, out, (size_t)R * (Nj[0] + NT));
        free(x);
    }
    be_free(cx[0]);
    be_free(cx[1]);
}

static void dense_same_bits(const be_shape *sh, const char *var, const char *on, const char *tag,
                            uint32_t type)
{
    const uint32_t types[3] = { type, type, type };
    dense_same_bits_of(sh, var, on, tag, types);
}

/* k_matvec8_nb (Q36_CUDA_MVNB, on by default) forms each output's sum as
 * k_matvec8 does, 4 output rows a warp instead of one */
static void test_mvnb(const be_shape *sh)
{
    dense_same_bits(sh, "Q36_CUDA_MVNB", "1", "mvnb", QT_Q4_K);
}

/* Q36_CUDA_MVNB1=2 or 4 (off by default): one-row Q4_K products on
 * k_matvec8_nb, 2 or 4 output rows a warp: k_matvec8's sums */
static void test_mvnb1(const be_shape *sh)
{
    dense_same_bits(sh, "Q36_CUDA_MVNB1", "2", "mvnb1_2", QT_Q4_K);
    dense_same_bits(sh, "Q36_CUDA_MVNB1", "4", "mvnb1_4", QT_Q4_K);
}

/* Q36_CUDA_MVYF (on by default): the matvec grids' row groups dispatched
 * fastest (mv_block) change which block runs when, not a sum: Q4_K takes
 * k_matvec8_nb above 4 rows, Q6_K k_matvec8 */
static void test_mvyf(const be_shape *sh)
{
    dense_same_bits(sh, "Q36_CUDA_MVYF", "1", "mvyf", QT_Q4_K);
    dense_same_bits(sh, "Q36_CUDA_MVYF", "1", "mvyf", QT_Q6_K);
}

/* Q36_CUDA_MVWIDE (on unless "0"): a mixed group's jobs widest rows
 * first (Q4_K, f32, Q6_K taken as f32, Q6_K, Q4_K): the same sums */
static void test_mvwide(const be_shape *sh)
{
    const uint32_t types[3] = { QT_Q4_K, QT_F32, QT_Q6_K };
    dense_same_bits_of(sh, "Q36_CUDA_MVWIDE", "1", "mvwide", types);
}

/* Expert products of decode-sized batches with the switch VAR on must
 * give k_matvec8_id's bits without it: a context with it and one without,
 * the grouped products' batches kept away (Q36_CUDA_MOEROWS high in both),
 * the same Q4_K and Q6_K weights (K x N) of 64 experts, top-8, T tokens
 * (16 to 264 (token, rank) rows: experts with none, one and more than 4,
 * the rows a pass takes), x per token and per (token, rank), and the
 * SwiGLU pair. Cases cuda.TAG_same_bits_TYPE[_kK]_tT. With grouped, the
 * batches of 64 rows or more take the grouped products instead
 * (Q36_CUDA_MOEROWS=0, Q36_CUDA_MOEGEMM=3) and T runs to 300 (~37 rows an
 * expert). */
static void id_same_bits_in(const be_shape *sh, const char *var, const char *tag, int64_t K,
                            int64_t N, bool grouped)
{
    be_ctx *cx[2];
    char ctx_name[64];
    snprintf(ctx_name, sizeof ctx_name, "cuda.%s_ctx", tag);
    char *per = env_set("Q36_CUDA_MOEROWS", grouped ? "0" : "100000");
    const char *m0 = getenv("Q36_CUDA_MOEGEMM");
    char *mode = grouped ? env_set("Q36_CUDA_MOEGEMM", "3") : (m0 ? strdup(m0) : NULL);
    const bool made = fast_ctx_pair(sh, var, ctx_name, cx);
    env_restore("Q36_CUDA_MOEROWS", per);
    env_restore("Q36_CUDA_MOEGEMM", mode);
    if (!made)
        return;
    static const int Tm[] = { 2, 5, 16, 33 }, Tg[] = { 16, 33, 300 };
    const int *Ts = grouped ? Tg : Tm;
    const size_t nT = grouped ? sizeof Tg / sizeof Tg[0] : sizeof Tm / sizeof Tm[0];
    const int64_t E = 64, k = 8;
    be_ctx *keep = gpu;
    for (size_t ti = 0; ti < nT; ti++)
        for (int ty = 0; ty < 2; ty++) {
            const int64_t T = Ts[ti], Q = T * k;
            const uint32_t type = ty ? QT_Q6_K : QT_Q4_K;
            char name[80], kk[24] = "";
            if (K != 512)
                snprintf(kk, sizeof kk, "_k%lld", (long long)K);
            snprintf(name, sizeof name, "cuda.%s_same_bits_%s%s_t%lld", tag, ty ? "q6_K" : "q4_K",
                     kk, (long long)T);
            t_rng r0 = t_rng_named(name);
            float *x = t_randv(&r0, (size_t)Q * K, 1);
            int32_t *sv = malloc(sizeof(int32_t) * (size_t)Q);
            for (int64_t t = 0; t < T; t++)        /* 8 distinct experts a token */
                for (int64_t i = 0; i < k; i++)
                    sv[t * k + i] = (int32_t)((t * 5 + i * 13 + (t % 3) * 40) % E);
            float *out[2];
            const size_t per_v = (size_t)Q * N * 3;
            for (int v = 0; v < 2; v++) {
                gpu = cx[v];
                be_ctx *g = gpu;
                t_rng r = t_rng_named("cuda.mvgrp.weights");
                wt wg, wu;
                make_weight(&wg, &r, type, K, N, E);
                make_weight(&wu, &r, type, K, N, E);
                be_tensor *xt = be_tensor_new(g, Q, K), *sel = be_tensor_new_type(g, BE_I32, T, k);
                be_tensor *o = be_tensor_new(g, Q, N), *tmp = be_tensor_new(g, Q, N);
                be_write(g, xt, 0, Q, x);
                be_write(g, sel, 0, T, sv);
                out[v] = malloc(sizeof(float) * per_v);
                be_tensor *xtok = be_rows(g, xt, 0, T);           /* the first T rows: per token */
                be_matmul_id(g, wg.wg, xtok, sel, o);
                be_read(g, o, 0, Q, out[v]);
                be_matmul_id(g, wg.wg, xt, sel, o);               /* per (token, rank) */
                be_read(g, o, 0, Q, out[v] + (size_t)Q * N);
                be_matmul_id_swiglu(g, wg.wg, wu.wg, xtok, sel, tmp, o);
                be_read(g, o, 0, Q, out[v] + (size_t)2 * Q * N);
                be_tensor *ts[] = { xt, sel, o, tmp };
                pass_end(g, name, ts, sizeof ts / sizeof ts[0]);
                free(wg.deq);               /* the data stays: bound weights are keyed by it */
                free(wu.deq);
            }
            gpu = keep;
            same_bits(name, var, out, per_v);
            free(x);
            free(sv);
        }
    be_free(cx[0]);
    be_free(cx[1]);
}

static void id_same_bits(const be_shape *sh, const char *var, const char *tag, int64_t K,
                         int64_t N)
{
    id_same_bits_in(sh, var, tag, K, N, false);
}

/* Q36_CUDA_MOEWQ (on unless "0", Hopper): the grouped products on Q4_K
 * experts in their blocks give the bits of the same products on their f16
 * copies (the same halves, the same order of sums): the 35B-A3B's gate/up
 * (K 2048) and down (K 512) shapes. Cases cuda.moewq_same_bits_*. */
static void moewq_same_bits(const be_shape *sh)
{
    id_same_bits_in(sh, "Q36_CUDA_MOEWQ", "moewq", 2048, 512, true);
    id_same_bits_in(sh, "Q36_CUDA_MOEWQ", "moewq", 512, 2048, true);
}

/* Q36_CUDA_MOEWGPIPE=1 (off by default): cuda_moe_wg.cu's stages
 * overlapped give the bits of the kernel without it (the same products in
 * the same order), on the f16 copies (Q36_CUDA_MOEWQ unset), and on the
 * Q4_K blocks (Q36_CUDA_MOEWQ=1). Cases cuda.moewgpipe_same_bits_* and
 * cuda.moewqpipe_same_bits_*. */
static void moewgpipe_same_bits(const be_shape *sh)
{
    id_same_bits_in(sh, "Q36_CUDA_MOEWGPIPE", "moewgpipe", 2048, 512, true);
    id_same_bits_in(sh, "Q36_CUDA_MOEWGPIPE", "moewgpipe", 512, 2048, true);
    char *wq = env_set("Q36_CUDA_MOEWQ", "1");      /* ... and on the Q4_K blocks */
    id_same_bits_in(sh, "Q36_CUDA_MOEWGPIPE", "moewqpipe", 2048, 512, true);
    id_same_bits_in(sh, "Q36_CUDA_MOEWGPIPE", "moewqpipe", 512, 2048, true);
    env_restore("Q36_CUDA_MOEWQ", wq);
}

/* Q36_CUDA_F16KEEP=1 (fast mode, off by default): prompt products keep each
 * weight's f16 copy (cuda_f16keep.cu). Two fast contexts, the switch on and
 * off, grouped expert products forced onto the f16 slabs
 * (Q36_CUDA_MOEGEMM=3, every batch grouped): the same expert weight twice
 * (the copy made, then reused) must give the same bits as the scratch's
 * dequantization (the same halves, the same tiles); a dense prompt product
 * twice (cuBLAS on the kept copy in one product) within 1e-5 of the
 * largest output of the scratch's slabs. Case cuda.f16keep_same_bits and
 * cuda.f16keep_dense. */
static void test_f16keep(const be_shape *sh)
{
    char *mg = env_set("Q36_CUDA_MOEGEMM", "3"), *per = env_set("Q36_CUDA_MOEROWS", "0");
    be_ctx *cx[2];
    const bool made = fast_ctx_pair(sh, "Q36_CUDA_F16KEEP", "cuda.f16keep_ctx", cx);
    env_restore("Q36_CUDA_MOEGEMM", mg);
    env_restore("Q36_CUDA_MOEROWS", per);
    if (!made)
        return;
    enum { T = 128, K = 256, N = 512, E = 16, k = 8, Q = T * k, R = 64, KD = 2048, ND = 384 };
    t_rng r0 = t_rng_named("cuda.f16keep");
    float *x = t_randv(&r0, (size_t)Q * K, 1), *x2 = t_randv(&r0, (size_t)Q * K, 1);
    float *xd = t_randv(&r0, (size_t)R * KD, 1), *xd2 = t_randv(&r0, (size_t)R * KD, 1);
    int32_t *sv = malloc(sizeof(int32_t) * Q);
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < k; i++)
            sv[t * k + i] = (int32_t)((t * 5 + i * 3 + (t % 4)) % E);
    const size_t per_moe = (size_t)Q * N * 2, per_v = per_moe + (size_t)R * ND * 2;
    float *out[2];
    be_ctx *keep = gpu;
    for (int v = 0; v < 2; v++) {
        gpu = cx[v];
        be_ctx *g = gpu;
        t_rng r = t_rng_named("cuda.f16keep.weights");
        wt we, wd;
        make_weight(&we, &r, QT_Q4_K, K, N, E);
        make_weight(&wd, &r, QT_Q4_K, KD, ND, 1);
        be_tensor *xt = be_tensor_new(g, T, K), *sel = be_tensor_new_type(g, BE_I32, T, k);
        be_tensor *o = be_tensor_new(g, Q, N), *xdt = be_tensor_new(g, R, KD);
        be_tensor *od = be_tensor_new(g, R, ND);
        be_write(g, sel, 0, T, sv);
        out[v] = malloc(sizeof(float) * per_v);
        for (int pass = 0; pass < 2; pass++) {
            be_write(g, xt, 0, T, pass ? x2 : x);
            be_matmul_id(g, we.wg, xt, sel, o);
            be_read(g, o, 0, Q, out[v] + (size_t)pass * Q * N);
            be_write(g, xdt, 0, R, pass ? xd2 : xd);
            be_matmul(g, wd.wg, 0, xdt, od);
            be_read(g, od, 0, R, out[v] + per_moe + (size_t)pass * R * ND);
        }
        be_tensor *ts[] = { xt, sel, o, xdt, od };
        pass_end(g, "cuda.f16keep_same_bits", ts, sizeof ts / sizeof ts[0]);
        free(we.deq);               /* the data stays: bound weights are keyed by it */
        free(wd.deq);
    }
    gpu = keep;
    double worst = 0.0, top = 0.0;
    for (size_t i = per_moe; i < per_v; i++) {
        const double d = fabs((double)out[0][i] - out[1][i]);
        worst = d > worst ? d : worst;
        top = fabs((double)out[1][i]) > top ? fabs((double)out[1][i]) : top;
    }
    t_check("cuda.f16keep_dense", worst <= 1e-5 * top + 1e-7,
            "kept f16 copy against the scratch's slabs: worst |d| %.3g, largest output %.3g",
            worst, top);
    const int bad = first_bits_diff(out[0], out[1], per_moe);
    t_check("cuda.f16keep_same_bits", bad < 0,
            "Q36_CUDA_F16KEEP on differs from off at value %d (%.9g vs %.9g)", bad,
            bad >= 0 ? out[0][bad] : 0.0, bad >= 0 ? out[1][bad] : 0.0);
    free(out[0]);
    free(out[1]);
    free(x); free(x2); free(xd); free(xd2); free(sv);
    be_free(cx[0]);
    be_free(cx[1]);
}

/* Q36_CUDA_FGLU8 (on by default): be_matmul_glu's SwiGLU and its
 * product's int8 rows in one launch (cuda_matmul.cu, k_q8x with u) against
 * k_ew's SwiGLU then k_q8x: the product and the SwiGLU left in g, then a
 * second product reading g, the same bits; rows 1-16 take it, 33 (above
 * mv_rows) and Q8_0 the plain path. Cases cuda.fglu8_same_bits_TYPE_kK_rR. */
static void test_fglu8(const be_shape *sh)
{
    be_ctx *cx[2];
    if (!fast_ctx_pair(sh, "Q36_CUDA_FGLU8", "cuda.fglu8_ctx", cx))
        return;
    static const int Rs[] = { 1, 3, 16, 33 };
    static const int64_t Ks[] = { 512, 3584 };
    static const uint32_t types[] = { QT_Q4_K, QT_Q6_K, QT_Q8_0 };
    const int64_t N = 96;
    be_ctx *keep = gpu;
    for (size_t ti = 0; ti < 3; ti++)
        for (size_t ki = 0; ki < 2; ki++)
            for (size_t ri = 0; ri < sizeof Rs / sizeof Rs[0]; ri++) {
                const int64_t R = Rs[ri], K = Ks[ki];
                const uint32_t type = types[ti];
                char name[80];
                snprintf(name, sizeof name, "cuda.fglu8_same_bits_%s_k%lld_r%lld",
                         type == QT_Q4_K ? "q4_K" : type == QT_Q6_K ? "q6_K" : "q8_0",
                         (long long)K, (long long)R);
                t_rng r0 = t_rng_named(name);
                float *gv = t_randv(&r0, (size_t)R * K, 1), *uv = t_randv(&r0, (size_t)R * K, 1);
                const size_t per_v = (size_t)R * (2 * N + K);
                float *out[2];
                for (int v = 0; v < 2; v++) {
                    gpu = cx[v];
                    be_ctx *g = gpu;
                    t_rng r = t_rng_named("cuda.fglu8.weights");
                    wt w1, w2;
                    make_weight(&w1, &r, type, K, N, 1);
                    make_weight(&w2, &r, type, K, N, 1);
                    be_tensor *gt = be_tensor_new(g, R, K), *ut = be_tensor_new(g, R, K);
                    be_tensor *y1 = be_tensor_new(g, R, N), *y2 = be_tensor_new(g, R, N);
                    be_write(g, gt, 0, R, gv);
                    be_write(g, ut, 0, R, uv);
                    be_matmul_glu(g, w1.wg, gt, ut, y1);
                    be_matmul(g, w2.wg, 0, gt, y2);
                    out[v] = malloc(sizeof(float) * per_v);
                    be_read(g, y1, 0, R, out[v]);
                    be_read(g, y2, 0, R, out[v] + (size_t)R * N);
                    be_read(g, gt, 0, R, out[v] + (size_t)2 * R * N);
                    be_tensor *ts[] = { gt, ut, y1, y2 };
                    pass_end(g, name, ts, sizeof ts / sizeof ts[0]);
                    free(w1.deq);           /* the data stays: bound weights are keyed by it */
                    free(w2.deq);
                }
                gpu = keep;
                same_bits(name, "Q36_CUDA_FGLU8", out, per_v);
                free(gv);
                free(uv);
            }
    be_free(cx[0]);
    be_free(cx[1]);
}

/* Q36_CUDA_MVGRP=1 (cuda_matmul.cu, k_matvec8_grp): each expert's rows
 * grouped, each weight row read once for them all */
static void test_mvgrp(const be_shape *sh)
{
    id_same_bits(sh, "Q36_CUDA_MVGRP", "mvgrp", 512, 96);
}

/* Q36_CUDA_MOEDOWN=1 (off by default, cuda_moe_down.cu): be_moe_down_shared
 * as one kernel against the three ops (the experts' down products, the
 * shared expert's SwiGLU and down product, the weighted sum): the same
 * bits, for the four pairs of Q4_K and Q6_K expert and shared weights, K
 * 512 (8 lanes a Q4_K row), 1024 (16) and 2048 (32), shared K 256 or the
 * experts', top-8 and top-3 of 40 experts, 200 output rows (a block's
 * rows cut short), tokens 1 (decode), 3 and 8 (verify passes: from
 * Q36_CUDA_MMQ's 2 rows the fused kernel declines, as the unfused dense
 * product is k_mmq's, so the three ops in both) and 33 (above mv_rows: the
 * three ops in both). Cases cuda.moedown_same_bits_E_S_kK_topN_tT. */
static void test_moedown(const be_shape *sh)
{
    be_ctx *cx[2];
    if (!fast_ctx_pair(sh, "Q36_CUDA_MOEDOWN", "cuda.moedown_ctx", cx))
        return;
    static const int64_t Ks[] = { 512, 1024, 2048 }, Ts[] = { 1, 3, 8, 33 }, tops[] = { 8, 3 };
    static const uint32_t types[] = { QT_Q4_K, QT_Q6_K };
    const int64_t D = 200, E = 40;
    be_ctx *keep = gpu;
    for (int te = 0; te < 2; te++)
        for (int ts = 0; ts < 2; ts++)
            for (size_t ki = 0; ki < 3; ki++)
                for (size_t ni = 0; ni < 2; ni++)
                    for (size_t ti = 0; ti < 4; ti++) {
                        const int64_t Fe = Ks[ki], Fs = ki == 1 ? 256 : Fe, k = tops[ni],
                                      T = Ts[ti], Q = T * k;
                        if (ki == 2 && ti == 3)
                            continue;      /* the long case once per K is enough */
                        char name[96];
                        snprintf(name, sizeof name, "cuda.moedown_same_bits_%s_%s_k%lld_top%lld_t%lld",
                                 te ? "q6_K" : "q4_K", ts ? "q6_K" : "q4_K", (long long)Fe,
                                 (long long)k, (long long)T);
                        t_rng r0 = t_rng_named(name);
                        float *xv = t_randv(&r0, (size_t)(Q * Fe), 1);
                        float *gv = t_randv(&r0, (size_t)(T * Fs), 1);
                        float *uv = t_randv(&r0, (size_t)(T * Fs), 1);
                        float *sgv = t_randv(&r0, (size_t)T, 2);
                        float *wv = t_randv(&r0, (size_t)Q, 1);
                        int32_t *sv = malloc(sizeof(int32_t) * (size_t)Q);
                        for (int64_t t = 0; t < T; t++)     /* k distinct experts a token */
                            for (int64_t i = 0; i < k; i++)
                                sv[t * k + i] = (int32_t)((t * 7 + i * 5 + (t % 4) * 9) % E);
                        float *out[2];
                        for (int v = 0; v < 2; v++) {
                            gpu = cx[v];
                            be_ctx *g = gpu;
                            t_rng r = t_rng_named("cuda.moedown.weights");
                            wt we, ws;
                            make_weight(&we, &r, types[te], Fe, D, E);
                            make_weight(&ws, &r, types[ts], Fs, D, 1);
                            be_tensor *xt = be_tensor_new(g, Q, Fe);
                            be_tensor *sel = be_tensor_new_type(g, BE_I32, T, k);
                            be_tensor *wt_ = be_tensor_new(g, T, k), *gt = be_tensor_new(g, T, Fs);
                            be_tensor *ut = be_tensor_new(g, T, Fs), *sgt = be_tensor_new(g, T, 1);
                            be_tensor *ey = be_tensor_new(g, Q, D), *st = be_tensor_new(g, T, D);
                            be_tensor *ot = be_tensor_new(g, T, D);
                            be_write(g, xt, 0, Q, xv);
                            be_write(g, sel, 0, T, sv);
                            be_write(g, wt_, 0, T, wv);
                            be_write(g, gt, 0, T, gv);
                            be_write(g, ut, 0, T, uv);
                            be_write(g, sgt, 0, T, sgv);
                            be_moe_down_shared(g, we.wg, xt, sel, wt_, ws.wg, gt, ut, sgt, ey, st,
                                               ot);
                            out[v] = malloc(sizeof(float) * (size_t)(T * D));
                            be_read(g, ot, 0, T, out[v]);
                            be_tensor *tl[] = { xt, sel, wt_, gt, ut, sgt, ey, st, ot };
                            pass_end(g, name, tl, sizeof tl / sizeof tl[0]);
                            free(we.deq);   /* the data stays: bound weights are keyed by it */
                            free(ws.deq);
                        }
                        gpu = keep;
                        same_bits(name, "Q36_CUDA_MOEDOWN", out, (size_t)(T * D));
                        free(xv); free(gv); free(uv); free(sgv); free(wv); free(sv);
                    }
    be_free(cx[0]);
    be_free(cx[1]);
}

/* Q36_CUDA_MVSX=1 (cuda_matmul.cu, sx_stage): the Q4_K expert matvec's
 * row of x from shared memory, at 8, 16 and 32 lanes a row (mv_lanes: K
 * 512, 1024, 2048) and two blocks a lane (K 4096); Q6_K keeps its path */
static void test_mvsx(const be_shape *sh)
{
    static const int64_t Ks[] = { 512, 1024, 2048, 4096 };
    for (size_t i = 0; i < sizeof Ks / sizeof Ks[0]; i++)
        id_same_bits(sh, "Q36_CUDA_MVSX", "mvsx", Ks[i], i ? 36 : 96);
}

/* Q36_CUDA_MV8 (fast mode's default): Q4_K and Q6_K decode products on
 * int8 rows of x (cuda_matmul.cu, k_q8x, k_matvec8, k_matvec8_id) against
 * the CPU with the default path's bounds (the int8 rounding of x, blocks
 * of 32, is finer than the CPU's q8_K of 256): decode rows 1, 2, 3, 8, rows
 * of 1 to 32 blocks, odd output counts, matmul_n groups of one type and of
 * Q4_K with Q6_K (k_matvec8<MV_ANY>), expert products and their SwiGLU
 * pair; other types and the SwiGLU input keep their paths. A context
 * reserved in fast mode (the switch acts there only), so decode sizes
 * only: batches above cuda_mv_rows (32) take fast mode's prompt paths.
 * Batches of 9 to 32 rows (several slots' decode steps, verify passes)
 * take the matvec kernels in fast mode too (cuda.h: mv_rows); Q4_K
 * batches above 4 rows take 4 output rows a warp (k_matvec8_nb: 257
 * outputs end in a partial group, 6 jobs of 9 rows straddle groups). */
static void test_mv8(const be_shape *sh)
{
    be_shape fs = *sh;
    fs.fast = 1;        /* the switch acts in fast mode only */
    be_ctx *f = cuda_env("Q36_CUDA_MV8", 1, &fs), *keep = gpu;
    if (!f)
        return;
    gpu = f;
    variant = ".mv8";
    test_matmul(QT_Q4_K, 256, 33, 1);
    test_matmul(QT_Q4_K, 512, 257, 3);
    test_matmul(QT_Q4_K, 1024, 96, 8);
    test_matmul(QT_Q4_K, 1280, 64, 2);
    test_matmul(QT_Q4_K, 2048, 300, 1);
    test_matmul(QT_Q4_K, 8192, 40, 4);
    test_matmul(QT_Q6_K, 256, 33, 1);
    test_matmul(QT_Q6_K, 1024, 96, 2);
    test_matmul(QT_Q6_K, 2048, 301, 1);        /* odd blocks: 2-byte aligned rows of codes */
    test_matmul(QT_Q6_K, 768, 77, 3);
    test_matmul(QT_Q6_K, 4096, 40, 8);
    test_matmul(QT_Q8_0, 1024, 96, 2);         /* another type: its own path */
    test_matmul(QT_Q4_K, 2048, 300, 16);       /* up to cuda_mv_rows: matvec kernels */
    test_matmul(QT_Q4_K, 512, 257, 32);
    test_matmul(QT_Q6_K, 1024, 96, 13);
    test_matmul(QT_Q8_0, 1024, 96, 21);
    const uint32_t q4[6] = { QT_Q4_K, QT_Q4_K, QT_Q4_K, QT_Q4_K, QT_Q4_K, QT_Q4_K };
    const uint32_t mix4[4] = { QT_Q4_K, QT_Q4_K, QT_Q6_K, QT_F32 };
    const uint32_t mix3[3] = { QT_Q4_K, QT_Q6_K, QT_Q4_K };
    test_matmul_n(q4, 4, 1);
    test_matmul_n(q4, 6, 3);
    test_matmul_n(mix4, 4, 1);
    test_matmul_n(mix3, 3, 1);
    test_matmul_n(mix3, 3, 5);
    test_matmul_n(mix3, 3, 20);
    test_matmul_n(q4, 6, 9);
    test_matmul_id(QT_Q4_K, 256, 64, 8, 3, 5, false);
    test_matmul_id(QT_Q4_K, 2048, 512, 64, 8, 1, false);     /* 35B-A3B expert shapes */
    test_matmul_id(QT_Q4_K, 512, 2048, 64, 8, 1, true);
    test_matmul_id_swiglu(QT_Q4_K, 2048, 512, 64, 8, 1);
    test_matmul_id_swiglu(QT_Q4_K, 2048, 512, 64, 8, 4);
    test_matmul_id(QT_Q6_K, 512, 2048, 64, 8, 1, true);      /* Q4_K_M's Q6_K expert downs */
    test_matmul_id(QT_Q6_K, 256, 64, 8, 3, 5, false);
    test_matmul_id_swiglu(QT_Q6_K, 768, 100, 8, 3, 2);
    mm_glu = true;
    test_matmul(QT_Q4_K, 512, 257, 1);
    test_matmul_id(QT_Q4_K, 512, 2048, 64, 8, 2, true);
    mm_glu = false;
    gpu = keep;
    variant = "";
    be_free(f);
}

/* Q36_CUDA_MVQ80 (on unless "0"; fast mode): Q8_0 products of 2 to
 * cuda_mv_rows rows on int8 rows (k_matvec8_q80), against the CPU with
 * the default bounds, with each of its lane counts a row (8 at K = 256,
 * 16 at 512, 32 above), partial row groups (3, 5, 9, 13 rows against
 * groups of 8), odd output counts and a head-like wide output;
 * then the same shapes on the f32 rows (Q36_CUDA_MVQ80=0). */
static void test_mvq80(const be_shape *sh)
{
    be_shape fs = *sh;
    fs.fast = 1;
    static const int64_t cases[][3] = { { 256, 4099, 16 }, { 256, 100, 9 }, { 512, 257, 3 },
                                        { 768, 37, 5 },    { 1024, 96, 32 }, { 2048, 33, 2 },
                                        { 256, 1209, 13 } };
    for (int on = 1; on >= 0; on--) {
        be_ctx *f = cuda_env("Q36_CUDA_MVQ80", on, &fs), *keep = gpu;
        if (!f)
            return;
        gpu = f;
        variant = on ? ".mvq80" : ".mvq80_off";
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            test_matmul(QT_Q8_0, cases[i][0], cases[i][1], cases[i][2]);
        gpu = keep;
        variant = "";
        be_free(f);
    }
}

/* Q36_CUDA_Q80TC (fast mode; here from 2 rows): one Q8_0 job of 2 to 16
 * rows on the int8 tensor cores (cuda_matmul.cu, k_mv_q80_tc) must give
 * k_matvec8_q80's bits: the same products in a context with
 * Q36_CUDA_Q80TC=0 (the CUDA context in the CPU's place of the pair,
 * bound 0), then against the CPU with test_matmul's bounds. Shapes: 8 to
 * 32 blocks a row (L 8, 16 and 32 lanes a row in the dp4a kernel's
 * order), output counts that end in a partial tile of 16, one and two
 * tiles of 8 rows of x (partial ones), and shapes the kernel leaves to the
 * dp4a one (K 2,048, 17 and 32 rows). */
static void test_q80tc(const be_shape *sh)
{
    be_shape fs = *sh;
    fs.fast = 1;
    static const int64_t cases[][3] = { { 256, 4099, 16 }, { 256, 100, 9 }, { 256, 37, 8 },
                                        { 512, 257, 12 },  { 1024, 96, 16 }, { 768, 33, 3 },
                                        { 256, 1209, 13 }, { 2048, 40, 10 }, { 256, 70, 17 },
                                        { 1024, 50, 32 },  { 256, 16, 2 } };
    be_ctx *on = cuda_env("Q36_CUDA_Q80TC", 1, &fs), *off = cuda_env("Q36_CUDA_Q80TC", 0, &fs);
    be_ctx *keep_c = cpu, *keep_g = gpu;
    if (!on || !off) {
        be_free(on);
        be_free(off);
        return;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int64_t K = cases[i][0], N = cases[i][1], R = cases[i][2];
        char name[96];
        snprintf(name, sizeof name, "cuda.q80tc.same_bits_%lldx%lld_r%lld", (long long)K,
                 (long long)N, (long long)R);
        t_rng r = t_rng_named(name);
        cpu = off;
        gpu = on;
        wt w;
        make_weight(&w, &r, QT_Q8_0, K, N, 1);
        float *x = t_randv(&r, R * K, 1);
        pair xt = up(x, R, K), y = up(NULL, R, N);
        be_matmul(off, w.wc, 0, xt.c, y.c);
        be_matmul(on, w.wg, 0, xt.g, y.g);
        q36_err e_off = { 0 };
        if (be_check(off, &e_off))
            t_fail(name, "the context without it: %s", e_off.msg);
        else if (gpu_ok(name)) {
            float *a, *b;
            down(y, &a, &b);
            size_t bad = (size_t)(R * N);
            for (size_t j = 0; j < (size_t)(R * N) && bad == (size_t)(R * N); j++)
                if (memcmp(&a[j], &b[j], sizeof(float)))
                    bad = j;
            t_check(name, bad == (size_t)(R * N), "output %zu of %lld: %.9g on the tensor cores, "
                    "%.9g in k_matvec8_q80", bad, (long long)(R * N),
                    bad < (size_t)(R * N) ? (double)b[bad] : 0.0,
                    bad < (size_t)(R * N) ? (double)a[bad] : 0.0);
            free(a);
            free(b);
        }
        pfree(xt);
        pfree(y);
        free(x);
        free(w.deq);
        cpu = keep_c;
        gpu = keep_g;
    }
    gpu = on;
    variant = ".q80tc";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        test_matmul(QT_Q8_0, cases[i][0], cases[i][1], cases[i][2]);
    gpu = keep_g;
    variant = "";
    be_free(on);
    be_free(off);
}

/* test_mmq's expert products (grouped by expert in k_mmq_grp where the
 * context takes them): 35B-A3B shapes over 64 experts (several rows an
 * expert), a few experts with many rows (up to 4 tiles of 8), output
 * counts ending in a partial tile, a row of x a token or a (token, rank),
 * SwiGLU pairs and be_matmul_id_glu */
static void mmq_id_cases(void)
{
    test_matmul_id(QT_Q4_K, 2048, 512, 64, 8, 16, false);
    test_matmul_id(QT_Q4_K, 512, 2048, 64, 8, 16, true);
    test_matmul_id(QT_Q6_K, 512, 2048, 64, 8, 4, true);
    test_matmul_id(QT_Q4_K, 256, 64, 8, 3, 32, false);
    test_matmul_id(QT_Q4_K, 256, 100, 4, 2, 20, true);
    test_matmul_id(QT_Q6_K, 768, 77, 8, 3, 9, false);
    test_matmul_id(QT_Q4_K, 256, 64, 300, 8, 2, false);     /* more experts than a ballot's 32 x 8 */
    test_matmul_id_swiglu(QT_Q4_K, 2048, 512, 64, 8, 16);
    test_matmul_id_swiglu(QT_Q4_K, 512, 100, 8, 3, 5);
    test_matmul_id_swiglu(QT_Q6_K, 768, 100, 8, 3, 2);
    mm_glu = true;
    test_matmul_id(QT_Q4_K, 512, 2048, 64, 8, 4, true);
    mm_glu = false;
}

/* Q36_CUDA_MMQ (fast mode; on from 2 rows unless "0"): Q4_K and Q6_K
 * products of 2 to 32 rows on the tensor cores (cuda_mmq.cu, k_mmq)
 * against the CPU with the default bounds: each tile count of 8 rows
 * (partial ones: 3, 9, 17, 31 rows), output counts that end in a partial
 * tile of 16, K of 1 to 16 super-blocks (fewer than the block's 4 warps,
 * and several each), Q6_K's 2-byte aligned rows (K 256, 768), matmul_n
 * groups of one type, of both types, and with an f32 job (3xTF32 in the
 * same launch), expert products grouped by expert (k_mmq_grp, from 2
 * tokens here: Q36_CUDA_MMQGRP=2); then the same on the dp4a kernels
 * (Q36_CUDA_MMQ=0); then the expert products once more with k_mmq_grp's
 * grid over the active experts (Q36_CUDA_MMQGRPA=1). */
static void test_mmq(const be_shape *sh)
{
    be_shape fs = *sh;
    fs.fast = 1;
    static const int64_t cases[][3] = { { 256, 33, 2 },   { 512, 257, 3 },  { 768, 77, 9 },
                                        { 1024, 96, 16 }, { 2048, 300, 17 }, { 4096, 40, 24 },
                                        { 1280, 64, 31 }, { 2048, 4099, 32 } };
    const uint32_t q4[6] = { QT_Q4_K, QT_Q4_K, QT_Q4_K, QT_Q4_K, QT_Q4_K, QT_Q4_K };
    const uint32_t q6[3] = { QT_Q6_K, QT_Q6_K, QT_Q6_K };
    const uint32_t mix3[3] = { QT_Q4_K, QT_Q6_K, QT_Q4_K };
    const uint32_t mix4[4] = { QT_Q4_K, QT_Q4_K, QT_Q6_K, QT_F32 };
    for (int on = 1; on >= 0; on--) {
        /* expert products grouped from 2 tokens (32 by default) */
        char *grp = env_set("Q36_CUDA_MMQGRP", "2");
        be_ctx *f = cuda_env("Q36_CUDA_MMQ", on, &fs), *keep = gpu;
        env_restore("Q36_CUDA_MMQGRP", grp);
        if (!f)
            return;
        gpu = f;
        variant = on ? ".mmq" : ".mmq_off";
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            test_matmul(QT_Q4_K, cases[i][0], cases[i][1], cases[i][2]);
            test_matmul(QT_Q6_K, cases[i][0], cases[i][1], cases[i][2]);
        }
        test_matmul_n(q4, 6, 2);
        test_matmul_n(q4, 6, 13);
        test_matmul_n(q6, 3, 8);
        test_matmul_n(mix3, 3, 5);
        test_matmul_n(mix3, 3, 32);
        test_matmul_n(mix4, 4, 4);
        test_matmul_n(mix4, 4, 20);
        mmq_id_cases();
        gpu = keep;
        variant = "";
        be_free(f);
    }
    /* the grid over the active experts only (Q36_CUDA_MMQGRPA=1) */
    char *grp = env_set("Q36_CUDA_MMQGRP", "2"), *act = env_set("Q36_CUDA_MMQGRPA", "1");
    be_ctx *f = cuda_env("Q36_CUDA_MMQ", 1, &fs), *keep = gpu;
    env_restore("Q36_CUDA_MMQGRPA", act);
    env_restore("Q36_CUDA_MMQGRP", grp);
    if (!f)
        return;
    gpu = f;
    variant = ".mmqgrpa";
    mmq_id_cases();
    gpu = keep;
    variant = "";
    be_free(f);
}

/* One small decode-like pass of two rows from two slots: a Q4_K projection
 * into q|k|v, the per-head norm of q, rope of q and k at the rows'
 * positions, k copied out (the copy queue), the K/V store and attention;
 * `skip_norm` leaves the norm out (another op list under the same key). */
typedef struct {
    be_weight *w, *nw;
    be_tensor *x, *y, *kk, *kc, *vc, *att;
    be_batch   b;
} gpass;

enum { G_K = 256, G_HQ = 4, G_HKV = 2, G_HD = 64, G_KV = 200, G_SLOTS = 4 };
#define G_N ((G_HQ + 2 * G_HKV) * G_HD)

static int gpass_init(be_ctx *be, gpass *p, wt *w, wt *nw)
{
    q36_err err = { 0 };
    memset(p, 0, sizeof *p);
    if (be_weight_bind(be, &w->t, &p->w, &err) || be_weight_bind(be, &nw->t, &p->nw, &err) ||
        be_batch_init(be, &p->b, 2, 2, G_KV, &err))
        return -1;
    p->x = be_tensor_new(be, 2, G_K);
    p->y = be_tensor_new(be, 2, G_N);
    p->kk = be_tensor_new(be, 2, G_HKV * G_HD);
    p->kc = be_tensor_new_f16(be, G_SLOTS * G_KV, G_HKV * G_HD);
    p->vc = be_tensor_new_f16(be, G_SLOTS * G_KV, G_HKV * G_HD);
    p->att = be_tensor_new(be, 2, G_HQ * G_HD);
    return p->x && p->y && p->kk && p->kc && p->vc && p->att ? 0 : -1;
}

static void gpass_free(be_ctx *be, gpass *p)
{
    be_tensor_free(be, p->x); be_tensor_free(be, p->y); be_tensor_free(be, p->kk);
    be_tensor_free(be, p->kc); be_tensor_free(be, p->vc); be_tensor_free(be, p->att);
    be_batch_free(be, &p->b);
}

/* the pass at positions pa (slot 1) and pb (slot 3) on input x; y and att
 * read back after it; returns be_check's kind */
static int gpass_run(be_ctx *be, gpass *p, const float *x, int pa, int pb, bool skip_norm,
                     float *y, float *att, q36_err *err)
{
    const be_seq seq[2] = { { 1, 0, 1, pa }, { 3, 1, 1, pb } };
    const int32_t sections[4] = { 11, 11, 10, 0 };
    be_views_reset(be);
    be_write(be, p->x, 0, 2, x);
    be_batch_set(be, &p->b, 2, seq);
    be_pass_begin(be, 0x5eed, 2);
    be_matmul(be, p->w, 0, p->x, p->y);
    be_tensor *q = be_view(be, p->y, 0, G_HQ * G_HD);
    be_tensor *k = be_view(be, p->y, G_HQ * G_HD, G_HKV * G_HD);
    be_tensor *v = be_view(be, p->y, (G_HQ + G_HKV) * G_HD, G_HKV * G_HD);
    if (!skip_norm)
        be_rms_norm(be, q, p->nw, 1e-6f, G_HD, q);
    be_rope(be, q, G_HD, G_HD, sections, 10000.0f, p->b.pos);
    be_rope(be, k, G_HD, G_HD, sections, 10000.0f, p->b.pos);
    be_copy(be, k, p->kk);
    be_kv_store(be, p->kc, p->vc, p->kk, v, &p->b);
    be_attention(be, q, p->kc, p->vc, &p->b, G_HQ, G_HKV, G_HD, 0.125f, p->att);
    be_read(be, p->att, 0, 2, att);
    be_read(be, p->y, 0, 2, y);
    const int rc = be_check(be, err);
    be_pass_end(be);
    return rc;
}

/* Two contexts that run the same small passes (gpass) with the same
 * weights: graphs off and on, or a switch off and on. */
typedef struct {
    be_ctx *off, *on;
    wt      w, nw;
    float  *nv;
    gpass   po, pn;
} gpair;

/* Takes the contexts (gpair_free frees them); false when one is missing or
 * setting up failed (then reported as a failure of `name`). */
static bool gpair_init(gpair *g, be_ctx *off, be_ctx *on, const char *name, t_rng *r)
{
    memset(g, 0, sizeof *g);
    g->off = off;
    g->on = on;
    if (!off || !on) {
        be_free(off);
        be_free(on);
        return false;
    }
    make_weight(&g->w, r, QT_Q4_K, G_K, G_N, 1);
    g->nv = t_randv(r, G_HD, 1);
    make_vec(&g->nw, g->nv, G_HD, 1);
    if (gpass_init(off, &g->po, &g->w, &g->nw) || gpass_init(on, &g->pn, &g->w, &g->nw)) {
        t_fail(name, "setting up the pass failed");
        return false;
    }
    return true;
}

/* One pass on both contexts at positions pa (slot 1) and pb (slot 3) on
 * input x: the largest |difference| of y and of attention and attention's
 * largest |value| folded into d[0], d[1], d[2]; returns be_check's kind */
static int gpair_pass(gpair *g, const float *x, int pa, int pb, bool skip_norm, double d[3],
                      q36_err *err)
{
    float yo[2 * G_N], yn[2 * G_N], ao[2 * G_HQ * G_HD], an[2 * G_HQ * G_HD];
    int rc = gpass_run(g->off, &g->po, x, pa, pb, skip_norm, yo, ao, err);
    rc = rc ? rc : gpass_run(g->on, &g->pn, x, pa, pb, skip_norm, yn, an, err);
    for (int j = 0; j < 2 * G_N && !rc; j++)
        d[0] = fmax(d[0], fabs((double)yo[j] - yn[j]));
    for (int j = 0; j < 2 * G_HQ * G_HD && !rc; j++) {
        d[1] = fmax(d[1], fabs((double)ao[j] - an[j]));
        d[2] = fmax(d[2], fabs((double)ao[j]));
    }
    return rc;
}

static void gpair_free(gpair *g)
{
    free(g->nv);
    gpass_free(g->off, &g->po);
    gpass_free(g->on, &g->pn);
    be_free(g->off);
    be_free(g->on);
    free(g->w.deq);   /* w.data, nw.data stay: bound weights are keyed by them */
    free(g->nw.deq);
}

/* Q36_CUDA_UPQ (on by default): a pass's small uploads (x, the batch's
 * positions and runs) wait in the copy queue and are read from the pinned
 * staging by its k_copies launch. The passes of test_graph_ops on a context
 * with it and one with Q36_CUDA_UPQ=0, graphs on in both (op by op,
 * recorded, replayed), must agree bit for bit: the same kernels on the same
 * inputs. */
static void test_upq(const be_shape *sh)
{
    const char *name = "cuda.upq.passes_same_bits";
    char *keep = env_set("Q36_CUDA_UPQ", "0");
    be_ctx *off = cuda_graphs(1, sh);
    env_restore("Q36_CUDA_UPQ", keep);
    keep = env_set("Q36_CUDA_UPQ", "1");
    be_ctx *on = cuda_graphs(1, sh);
    env_restore("Q36_CUDA_UPQ", keep);
    t_rng r = t_rng_named(name);
    gpair g;
    if (!gpair_init(&g, off, on, name, &r))
        return;
    const int pa[5] = { 0, 1, 37, 150, 151 }, pb[5] = { 5, 6, 100, 199, 2 };
    double d[3] = { 0, 0, 0 };
    q36_err err = { 0 };
    int rc = 0;
    for (int i = 0; i < 5 && !rc; i++) {
        float *x = t_randv(&r, 2 * G_K, 1);
        rc = gpair_pass(&g, x, pa[i], pb[i], false, d, &err);
        free(x);
    }
    if (rc)
        t_fail(name, "%s", err.msg);
    else
        t_check(name, d[0] == 0 && d[1] == 0, "y |d| %.3g, attention |d| %.3g (0 expected)", d[0], d[1]);
    gpair_free(&g);
}

/* Graphs at the op level: the same passes on a context with graphs off and
 * one with graphs on, the second running the first pass op by op (a key
 * seen once), recording the second and replaying the rest on new inputs at
 * other positions (lengths 1 to 200, so the
 * attention splits of the capacity cover short and long rows). y (the same
 * kernels on the same inputs) must agree bit for bit; attention, whose
 * splits differ, to float rounding. Then a pass of the same key with an
 * op left out must fail (the recording's check), and of the next two the
 * second record again, both agreeing. */
static void test_graph_ops(const be_shape *sh)
{
    const char *name = "cuda.graph.ops_replay_equal_eager";
    be_ctx *off = cuda_graphs(0, sh), *on = cuda_graphs(1, sh);
    t_rng r = t_rng_named(name);
    gpair g;
    if (!gpair_init(&g, off, on, name, &r))
        return;
    const int pa[5] = { 0, 1, 37, 150, 151 }, pb[5] = { 5, 6, 100, 199, 2 };
    float yo[2 * G_N], yn[2 * G_N], ao[2 * G_HQ * G_HD], an[2 * G_HQ * G_HD];
    q36_err err = { 0 };
    int rc = 0;
    be_stats s0, s1;
    be_stats_get(on, &s0);
    double d[3] = { 0, 0, 0 };
    for (int i = 0; i < 4 && !rc; i++) {
        float *x = t_randv(&r, 2 * G_K, 1);
        rc = gpair_pass(&g, x, pa[i], pb[i], false, d, &err);
        free(x);
    }
    double worst_y = d[0], worst_a = d[1];
    const double amax = d[2];
    be_stats_get(on, &s1);
    if (rc)
        t_fail(name, "%s", err.msg);
    else
        t_check(name, worst_y == 0 && worst_a <= 1e-4 * fmax(1.0, amax) && s1.graphs_recorded - s0.graphs_recorded == 1 &&
                s1.graph_launches - s0.graph_launches == 3,
                "y |d| %.3g (0 expected), attention |d| %.3g (1e-4 of max %.3g), %llu recorded "
                "(1), %llu graph launches (3)", worst_y, worst_a, amax,
                (unsigned long long)(s1.graphs_recorded - s0.graphs_recorded),
                (unsigned long long)(s1.graph_launches - s0.graph_launches));
    printf("#   %s: y |d| %.3g, attention |d| %.3g; %llu graph nodes in 3 launches, %llu "
           "single launches (the first pass)\n", name, worst_y, worst_a,
           (unsigned long long)(s1.graph_nodes - s0.graph_nodes),
           (unsigned long long)(s1.launches - s0.launches));

    /* the same key, another op list: refused, then recorded again */
    float *x = t_randv(&r, 2 * G_K, 1);
    memset(&err, 0, sizeof err);
    rc = gpass_run(on, &g.pn, x, pa[4], pb[4], true, yn, an, &err);
    t_check("cuda.graph.other_ops_same_key_fail", rc != 0 && strstr(err.msg, "recording"),
            "rc %d: %s", rc, err.msg);
    memset(&err, 0, sizeof err);
    worst_y = 0;
    rc = 0;
    for (int i = 0; i < 2 && !rc; i++) {
        rc = gpass_run(off, &g.po, x, pa[4], pb[4], true, yo, ao, &err);
        rc = rc ? rc : gpass_run(on, &g.pn, x, pa[4], pb[4], true, yn, an, &err);
        for (int j = 0; j < 2 * G_N && !rc; j++)
            worst_y = fmax(worst_y, fabs((double)yo[j] - yn[j]));
    }
    be_stats s2;
    be_stats_get(on, &s2);
    if (rc)
        t_fail("cuda.graph.recorded_again", "%s", err.msg);
    else
        t_check("cuda.graph.recorded_again", worst_y == 0 && s2.graphs_recorded == s1.graphs_recorded + 1,
                "y |d| %.3g, %llu recorded (%llu expected)", worst_y,
                (unsigned long long)s2.graphs_recorded, (unsigned long long)s1.graphs_recorded + 1);

    /* Freeing a tensor no graph points at keeps the graphs (the prefix
     * cache's checkpoints); freeing one the graph takes drops it, and the
     * pass on the tensor made in its place (whose memory the pool may hand
     * out again) runs right and is recorded again. */
    be_tensor *other = be_tensor_new(on, 64, 256);
    rc = other ? 0 : -1;
    worst_y = 0;
    for (int i = 0; i < 2 && !rc; i++) {
        if (i == 1) {
            be_tensor_free(on, other);
            other = NULL;
        }
        rc = gpass_run(off, &g.po, x, pa[i], pb[i], true, yo, ao, &err);
        rc = rc ? rc : gpass_run(on, &g.pn, x, pa[i], pb[i], true, yn, an, &err);
        for (int j = 0; j < 2 * G_N && !rc; j++)
            worst_y = fmax(worst_y, fabs((double)yo[j] - yn[j]));
    }
    be_tensor_free(on, other);
    be_stats s3;
    be_stats_get(on, &s3);
    if (rc)
        t_fail("cuda.graph.free_other_keeps", "%s", rc < 0 ? "no tensor" : err.msg);
    else
        t_check("cuda.graph.free_other_keeps", worst_y == 0 && s3.graphs_recorded == s2.graphs_recorded &&
                s3.graph_launches == s2.graph_launches + 2,
                "y |d| %.3g, %llu recorded (%llu expected), %llu graph launches (%llu)", worst_y,
                (unsigned long long)s3.graphs_recorded, (unsigned long long)s2.graphs_recorded,
                (unsigned long long)s3.graph_launches, (unsigned long long)s2.graph_launches + 2);
    be_tensor_free(on, g.pn.y);
    g.pn.y = be_tensor_new(on, 2, G_N);
    rc = g.pn.y ? 0 : -1;
    worst_y = worst_a = 0;
    for (int i = 0; i < 3 && !rc; i++) {
        rc = gpass_run(off, &g.po, x, pa[i], pb[i], true, yo, ao, &err);
        rc = rc ? rc : gpass_run(on, &g.pn, x, pa[i], pb[i], true, yn, an, &err);
        for (int j = 0; j < 2 * G_N && !rc; j++)
            worst_y = fmax(worst_y, fabs((double)yo[j] - yn[j]));
        for (int j = 0; j < 2 * G_HQ * G_HD && !rc; j++)
            worst_a = fmax(worst_a, fabs((double)ao[j] - an[j]));
    }
    be_stats s4;
    be_stats_get(on, &s4);
    if (rc)
        t_fail("cuda.graph.free_used_records_again", "%s", rc < 0 ? "no tensor" : err.msg);
    else
        t_check("cuda.graph.free_used_records_again", worst_y == 0 && worst_a <= 1e-4 * fmax(1.0, amax) &&
                s4.graphs_recorded == s3.graphs_recorded + 1,
                "y |d| %.3g, attention |d| %.3g, %llu recorded (%llu expected)", worst_y, worst_a,
                (unsigned long long)s4.graphs_recorded, (unsigned long long)s3.graphs_recorded + 1);
    free(x);
    gpair_free(&g);
}

/* ------------------------------------------------------------ fused ops */

/* a tensor of backend b holding x (rows x cols f32), and one read back */
static be_tensor *up_on(be_ctx *b, const float *x, int64_t rows, int64_t cols)
{
    be_tensor *t = be_tensor_new(b, rows, cols);
    if (t && x)
        be_write(b, t, 0, rows, x);
    return t;
}
static float *down_on(be_ctx *b, const be_tensor *t)
{
    const int64_t rows = be_rows_of(t);
    float *v = malloc(sizeof(float) * (size_t)(rows * be_cols_of(t) + 1));
    be_read(b, t, 0, rows, v);
    return v;
}
static int64_t bits_differ(const float *a, const float *b, int64_t n)
{
    int64_t d = 0;
    for (int64_t i = 0; i < n; i++)
        d += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return d;
}

/* make_vec's weight, bound to f too (returned) */
static be_weight *vec_on(be_ctx *f, wt *w, const float *v, int64_t n, int64_t n1)
{
    be_weight *wf = NULL;
    make_vec(w, v, n, n1);
    be_weight_bind(f, &w->t, &wf, NULL);
    return wf;
}

/* Q36_CUDA_NORMREG (on by default): the norms with each thread's elements
 * in registers (cuda_ops.cu, k_norm_reg) against k_norm's loop, the same
 * bits: add + RMS norm (1-16 elements a thread, and 24, which keeps
 * k_norm), RMS norm then a product reading its kept int8 rows (both
 * contexts with Q36_CUDA_Q8KEEP=1), the gated norm and the L2 norm per
 * head of 128, and from 64 groups of 64, 128 or 256 a warp a group
 * (k_norm_warp). Cases cuda.normreg_same_bits_KIND_RxCOLS. */
static void test_normreg(const be_shape *sh)
{
    be_ctx *cx[2];
    char *q8k = env_set("Q36_CUDA_Q8KEEP", "1");
    const bool made = fast_ctx_pair(sh, "Q36_CUDA_NORMREG", "cuda.normreg_ctx", cx);
    env_restore("Q36_CUDA_Q8KEEP", q8k);
    if (!made)
        return;
    enum { ADD, RMS_MM, GATE, L2 };
    static const char *const kinds[] = { "add_rms", "rms_q8", "gate", "l2" };
    static const int64_t cs[][4] = {        /* kind, rows, cols, group */
        { ADD, 1, 1024, 1024 }, { ADD, 1, 2048, 2048 }, { ADD, 5, 2048, 2048 },
        { ADD, 2, 4096, 4096 }, { ADD, 1, 6144, 6144 }, { ADD, 3, 200, 200 },
        { RMS_MM, 1, 2048, 2048 }, { RMS_MM, 3, 1024, 1024 },
        { GATE, 1, 4096, 128 }, { GATE, 3, 4096, 128 }, { L2, 2, 2048, 128 },
        /* prompt batches of small groups: a warp a group (k_norm_warp) */
        { GATE, 40, 4096, 128 }, { L2, 67, 2048, 128 }, { L2, 45, 192, 64 },
        { ADD, 70, 512, 256 },
    };
    const int64_t N = 64;
    be_ctx *keep = gpu;
    void *kept[2 * sizeof cs / sizeof cs[0]] = { 0 };
    for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++) {
        const int kind = (int)cs[ci][0];
        const int64_t R = cs[ci][1], C = cs[ci][2], G = cs[ci][3];
        char name[96];
        snprintf(name, sizeof name, "cuda.normreg_same_bits_%s_%lldx%lld", kinds[kind],
                 (long long)R, (long long)C);
        t_rng r0 = t_rng_named(name);
        float *o = t_randv(&r0, (size_t)(R * C), 2), *x = t_randv(&r0, (size_t)(R * C), 3);
        float *wv = t_randv(&r0, (size_t)G, 1), *z = t_randv(&r0, (size_t)(R * C), 2);
        wt wn, wm = { 0 };
        make_vec(&wn, wv, G, 1);
        t_rng rw = t_rng_named("cuda.normreg.weights");
        if (kind == RMS_MM)             /* K = C, a multiple of 256 */
            make_weight(&wm, &rw, QT_Q4_K, C, N, 1);
        const size_t per_v = (size_t)(R * (2 * C + N));
        float *out[2];
        for (int v = 0; v < 2; v++) {
            gpu = cx[v];
            be_ctx *g = gpu;
            be_weight *wg = NULL, *mg = NULL;
            be_weight_bind(g, &wn.t, &wg, NULL);
            if (kind == RMS_MM)
                be_weight_bind(g, &wm.t, &mg, NULL);
            be_tensor *ot = up_on(g, o, R, C), *xt = up_on(g, x, R, C), *zt = up_on(g, z, R, C);
            be_tensor *yt = be_tensor_new(g, R, C), *mt = be_tensor_new(g, R, N);
            be_zero(g, mt);
            if (kind == ADD)
                be_add_rms_norm(g, ot, xt, wg, 1e-6f, G, yt);
            else if (kind == RMS_MM)
                be_rms_norm(g, xt, wg, 1e-6f, G, yt);
            else if (kind == GATE)
                be_rms_norm_gate(g, xt, wg, 1e-6f, G, zt, yt);
            else
                be_l2_norm(g, xt, 1e-6f, G, yt);
            if (kind == RMS_MM)
                be_matmul(g, mg, 0, yt, mt);
            out[v] = malloc(sizeof(float) * per_v);
            be_read(g, yt, 0, R, out[v]);
            be_read(g, xt, 0, R, out[v] + (size_t)(R * C));
            be_read(g, mt, 0, R, out[v] + (size_t)(2 * R * C));
            be_tensor *ts[] = { ot, xt, zt, yt, mt };
            pass_end(g, name, ts, sizeof ts / sizeof ts[0]);
        }
        gpu = keep;
        same_bits(name, "Q36_CUDA_NORMREG", out, per_v);
        /* the weights' host data stays until the contexts go: bound weights
         * are keyed by their tensor and its data, and a later case's wn
         * (the same stack tensor) with data at a freed address would be
         * handed this case's device copy, of this case's size (an illegal
         * address in a 4096-wide case after a 2048-wide one, seen once) */
        kept[2 * ci] = wn.data;
        kept[2 * ci + 1] = wm.data;
        free(wm.deq);
        free(o); free(x); free(wv); free(z);
    }
    be_free(cx[0]);
    be_free(cx[1]);
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        free(kept[i]);
}

/* be_ssm_conv_silu_keep and be_deltanet_keep (k_conv and k_deltanet
 * writing each row's tail and state) against the plain ops a row at a time,
 * both on the GPU (tests/keep_case.h). Cases cuda.keep_tT_dkD. */
static void test_cuda_keep(void)
{
    static const int64_t cs[][4] = { { 1, 2, 4, 64 }, { 4, 2, 4, 128 }, { 5, 1, 2, 64 },
                                     { 9, 1, 2, 32 } };     /* 17 rows: above CONV_TILE */
    for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++) {
        char name[64];
        snprintf(name, sizeof name, "cuda.keep_t%lld_dk%lld", (long long)cs[ci][0],
                 (long long)cs[ci][3]);
        keep_case(gpu, name, cs[ci][0], cs[ci][1], cs[ci][2], cs[ci][3], 4, true);
    }
}

/* The fused context f's result tf against the default context's in p (the
 * separate kernels: equal bits) and the CPU's in p (rowscale bound eps; 0:
 * equal); false when a backend failed. */
static bool fused_check(const char *name, be_ctx *f, pair p, const be_tensor *tf, double eps)
{
    q36_err err = { 0 };
    if (!gpu_ok(name))
        return false;
    if (be_check(f, &err)) {
        t_fail(name, "%s", err.msg);
        return false;
    }
    const int64_t n = be_rows_of(p.c) * be_cols_of(p.c);
    float *c, *g;
    down(p, &c, &g);
    float *fv = down_on(f, tf);
    const int64_t d = bits_differ(g, fv, n);
    char n2[192];
    snprintf(n2, sizeof n2, "%s.same_bits_as_separate", name);
    t_check(n2, d == 0, "%lld of %lld values differ from the separate ops", (long long)d,
            (long long)n);
    snprintf(n2, sizeof n2, "%s.vs_cpu", name);
    double *b = eps > 0 ? rowscale_bound(c, be_rows_of(p.c), be_cols_of(p.c), eps) : NULL;
    verdict(n2, c, fv, n, b, 1e-30);
    free(b); free(c); free(g); free(fv);
    return true;
}

/* be_rms_norm_gate (the DeltaNet gated norm, in place as the model runs
 * it) on the fused context f: bits against the default context's separate
 * kernels, and against the CPU (the norm's 4 roundings, the CPU's lane exp
 * in silu: 8 u, one product). */
static void fused_norm_gate(be_ctx *f, int64_t R, int64_t D, int64_t group)
{
    char name[96];
    snprintf(name, sizeof name, "cuda.fused.rms_norm_gate_%lldx%lld_g%lld", (long long)R,
             (long long)D, (long long)group);
    t_rng r = t_rng_named(name);
    float *x = t_randv(&r, R * D, 3), *z = t_randv(&r, R * D, 2), *wv = t_randv(&r, group, 1);
    wt w;
    be_weight *wf = vec_on(f, &w, wv, group, 1);
    pair xp = up(x, R, D), zp = up(z, R, D);
    be_tensor *xf = up_on(f, x, R, D), *zf = up_on(f, z, R, D);
    be_rms_norm_gate(cpu, xp.c, w.wc, 1e-6f, group, zp.c, xp.c);
    be_rms_norm_gate(gpu, xp.g, w.wg, 1e-6f, group, zp.g, xp.g);
    be_rms_norm_gate(f, xf, wf, 1e-6f, group, zf, xf);
    fused_check(name, f, xp, xf, 16 * U);
    pfree(xp); pfree(zp);
    be_tensor_free(f, xf); be_tensor_free(f, zf);
    free(x); free(z); free(wv);
}

/* be_ssm_conv_silu on the fused context f: two passes (the second goes on
 * from the tails the first left), outputs and tails against the default
 * context's separate kernels (bits) and the CPU (the conv's 4 u and silu's
 * 8 u; the tails: equal). */
static void fused_conv(be_ctx *f, int64_t C, int n_seq, const int *len)
{
    char name[96];
    int64_t T = 0;
    for (int i = 0; i < n_seq; i++)
        T += len[i];
    snprintf(name, sizeof name, "cuda.fused.ssm_conv_silu_c%lld_seq%d_t%lld", (long long)C, n_seq,
             (long long)T);
    t_rng r = t_rng_named(name);
    const int64_t Kc = 4, n_slots = 8;
    float *w = t_randv(&r, Kc * C, 0.5f);
    wt ww;
    be_weight *wf = vec_on(f, &ww, w, Kc, C);
    pair tails = up(NULL, n_slots * C, Kc - 1);
    be_tensor *tf = up_on(f, NULL, n_slots * C, Kc - 1);
    int slot[16], pos0[16];
    be_seq seq[16];
    for (int i = 0; i < n_seq; i++) {
        slot[i] = (i * 5 + 2) % (int)n_slots;
        pos0[i] = 0;
    }
    bool ok = true;
    for (int pass = 0; pass < 2 && ok; pass++) {
        bpair b = batch_of(n_seq, slot, len, pos0, 1 << 20);
        be_batch bf;
        int64_t row = 0;
        for (int i = 0; i < n_seq; i++) {
            seq[i] = (be_seq){ slot[i], (int32_t)row, len[i], pos0[i] };
            row += len[i];
        }
        be_batch_init(f, &bf, T, n_seq, 1 << 20, NULL);
        be_batch_set(f, &bf, n_seq, seq);
        float *x = t_randv(&r, T * C, 1);
        pair xt = up(x, T, C), y = up(NULL, T, C);
        be_tensor *xf = up_on(f, x, T, C), *yf = up_on(f, NULL, T, C);
        be_ssm_conv_silu(cpu, xt.c, tails.c, ww.wc, &b.c, y.c);
        be_ssm_conv_silu(gpu, xt.g, tails.g, ww.wg, &b.g, y.g);
        be_ssm_conv_silu(f, xf, tf, wf, &bf, yf);
        char n2[128];
        snprintf(n2, sizeof n2, "%s.pass%d", name, pass);
        if ((ok = fused_check(n2, f, y, yf, 12 * U))) {
            snprintf(n2, sizeof n2, "%s.pass%d.tails", name, pass);
            fused_check(n2, f, tails, tf, 0);
        }
        pfree(xt); pfree(y); bfree(&b);
        be_tensor_free(f, xf); be_tensor_free(f, yf);
        be_batch_free(f, &bf);
        free(x);
        for (int i = 0; i < n_seq; i++)
            pos0[i] += len[i];
    }
    pfree(tails);
    be_tensor_free(f, tf);
    free(w);
}

/* Q36_CUDA_FUSED=1: be_add_rms_norm and be_moe_combine_shared (and the
 * two above) as one kernel each, against the same entries on the default context (the
 * separate kernels: the same roundings in the same order, so equal bits)
 * and against the CPU (the separate ops' bounds: the norm's 4 roundings;
 * the CPU's lane exp in the sigmoid, 8 u, and the products and the add). */
static void test_fused(const be_shape *sh)
{
    be_ctx *f = cuda_env("Q36_CUDA_FUSED", 1, sh);
    if (!f)
        return;
    char name[96];
    static const int64_t ns[4][2] = { { 1, 1024 }, { 3, 2048 }, { 8, 200 }, { 2, 64 } };
    for (int c = 0; c < 4; c++) {
        const int64_t R = ns[c][0], D = ns[c][1];
        snprintf(name, sizeof name, "cuda.fused.add_rms_norm_%lldx%lld", (long long)R, (long long)D);
        t_rng r = t_rng_named(name);
        float *o = t_randv(&r, R * D, 2), *x = t_randv(&r, R * D, 3), *wv = t_randv(&r, D, 1);
        wt w;
        be_weight *wf = vec_on(f, &w, wv, D, 1);
        pair op = up(o, R, D), xp = up(x, R, D), yp = up(NULL, R, D);
        be_tensor *of = up_on(f, o, R, D), *xf = up_on(f, x, R, D), *yf = up_on(f, NULL, R, D);
        be_add_rms_norm(cpu, op.c, xp.c, w.wc, 1e-6f, D, yp.c);
        be_add_rms_norm(gpu, op.g, xp.g, w.wg, 1e-6f, D, yp.g);
        be_add_rms_norm(f, of, xf, wf, 1e-6f, D, yf);
        if (fused_check(name, f, yp, yf, 4 * U)) {
            char n2[128];
            snprintf(n2, sizeof n2, "%s.sum", name);    /* one rounding of one add: equal */
            fused_check(n2, f, xp, xf, 0);
        }
        pfree(op); pfree(xp); pfree(yp);
        be_tensor_free(f, of); be_tensor_free(f, xf); be_tensor_free(f, yf);
        free(o); free(x); free(wv);
    }
    static const int64_t ms[4][3] = { { 1, 8, 2048 }, { 5, 8, 96 }, { 3, 1, 200 }, { 2, 3, 64 } };
    for (int c = 0; c < 4; c++) {
        const int64_t T = ms[c][0], k = ms[c][1], D = ms[c][2];
        snprintf(name, sizeof name, "cuda.fused.moe_combine_shared_t%lld_top%lld_d%lld", (long long)T,
                 (long long)k, (long long)D);
        t_rng r = t_rng_named(name);
        float *y = t_randv(&r, T * k * D, 1), *wv = t_randv(&r, T * k, 1);
        float *g = t_randv(&r, T, 2), *sv = t_randv(&r, T * D, 1);
        pair yt = up(y, T * k, D), wt_ = up(wv, T, k), gt = up(g, T, 1), st = up(sv, T, D),
             out = up(NULL, T, D);
        be_tensor *yf = up_on(f, y, T * k, D), *wf = up_on(f, wv, T, k), *gf = up_on(f, g, T, 1),
                  *sf = up_on(f, sv, T, D), *of = up_on(f, NULL, T, D);
        be_moe_combine_shared(cpu, yt.c, wt_.c, k, gt.c, st.c, out.c);
        be_moe_combine_shared(gpu, yt.g, wt_.g, k, gt.g, st.g, out.g);
        be_moe_combine_shared(f, yf, wf, k, gf, sf, of);
        fused_check(name, f, out, of, 16 * U);
        pfree(yt); pfree(wt_); pfree(gt); pfree(st); pfree(out);
        be_tensor_free(f, yf); be_tensor_free(f, wf); be_tensor_free(f, gf);
        be_tensor_free(f, sf); be_tensor_free(f, of);
        free(y); free(wv); free(g); free(sv);
    }
    fused_norm_gate(f, 1, 4096, 128);
    fused_norm_gate(f, 5, 512, 64);
    fused_norm_gate(f, 2, 200, 100);
    fused_norm_gate(f, 37, 4096, 128);     /* a warp a group */
    const int l1[1] = { 1 }, l3[3] = { 4, 1, 7 }, lp[3] = { 20, 2, 37 };
    fused_conv(f, 8192, 1, l1);
    fused_conv(f, 300, 3, l3);
    fused_conv(f, 300, 3, lp);      /* prompt rows: tiles of rows and the tail kernel */
    be_free(f);
}

/* ---------------------------------------------------------------- tensors */

static void test_tensors(void)
{
    const char *name = "cuda.tensor_write_read_copy_f16_views";
    t_rng r = t_rng_named(name);
    const int64_t R = 37, C = 96;
    float *x = t_randv(&r, R * C, 3), *y = malloc(sizeof(float) * (size_t)(R * C));
    be_tensor *a = be_tensor_new_f16(gpu, R, C), *b = be_tensor_new_f16(gpu, R, C);
    be_write(gpu, a, 0, R, x);
    be_copy(gpu, be_rows(gpu, a, 3, 20), be_rows(gpu, b, 10, 20));
    be_read(gpu, b, 10, 20, y);
    bool ok = gpu_ok(name);
    for (int64_t i = 0; ok && i < 20 * C; i++)
        ok = y[i] == quant_f16_to_f32(quant_f32_to_f16(x[3 * C + i]));
    /* a column view of an f32 tensor: write through a row view, read back */
    be_tensor *f = be_tensor_new(gpu, R, C);
    be_write(gpu, f, 0, R, x);
    be_tensor *v = be_view(gpu, f, 17, 31);
    float *z = malloc(sizeof(float) * (size_t)(R * 31));
    be_read(gpu, v, 0, R, z);
    for (int64_t i = 0; ok && i < R; i++)
        for (int64_t j = 0; j < 31; j++)
            ok &= z[i * 31 + j] == x[i * C + 17 + j];
    be_zero(gpu, f);
    be_read(gpu, v, 0, R, z);
    for (int64_t i = 0; ok && i < R * 31; i++)
        ok &= z[i] == 0.0f;
    uint8_t raw[96 * 2 * 4];
    be_save(gpu, a, 5, 4, raw);
    be_load(gpu, b, 0, 4, raw);
    be_read(gpu, b, 0, 4, y);
    for (int64_t i = 0; ok && i < 4 * C; i++)
        ok = y[i] == quant_f16_to_f32(quant_f32_to_f16(x[5 * C + i]));
    /* queued copies in order: 40 column copies (more than the queue
     * holds), then a chain that reads what the previous one wrote */
    be_tensor *p = be_tensor_new(gpu, R, C), *q = be_tensor_new(gpu, R, C);
    be_write(gpu, f, 0, R, x);
    for (int i = 0; i < 40; i++)
        be_copy(gpu, be_view(gpu, f, (i * 7) % (C - 2), 2), be_view(gpu, p, (i * 5) % (C - 2), 2));
    be_copy(gpu, be_rows(gpu, p, 0, 5), be_rows(gpu, q, 10, 5));
    be_copy(gpu, be_rows(gpu, q, 10, 5), be_rows(gpu, p, 20, 5));
    float *pp = malloc(sizeof(float) * (size_t)(R * C));
    be_read(gpu, p, 0, R, pp);
    float *ref = calloc((size_t)(R * C), sizeof(float));
    for (int i = 0; i < 40; i++)
        for (int64_t rr = 0; rr < R; rr++)
            for (int j = 0; j < 2; j++)
                ref[rr * C + (i * 5) % (C - 2) + j] = x[rr * C + (i * 7) % (C - 2) + j];
    memcpy(ref + 20 * C, ref, sizeof(float) * 5 * (size_t)C);
    for (int64_t i = 0; ok && i < R * C; i++)
        ok = pp[i] == ref[i];
    free(pp);
    free(ref);
    be_tensor_free(gpu, p);
    be_tensor_free(gpu, q);
    ok = ok && gpu_ok(name);
    t_check(name, ok, "a copy, queued copy, view, zero or save/load round trip differs");
    be_views_reset(gpu);
    be_tensor_free(gpu, a);
    be_tensor_free(gpu, b);
    be_tensor_free(gpu, f);
    free(x);
    free(y);
    free(z);
}

/* ----------------------------------------------------------------- models */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int argmax(const float *l, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (l[i] > l[b])
            b = i;
    return b;
}

static double stdev(const float *l, int n)
{
    double s = 0, s2 = 0;
    for (int i = 0; i < n; i++) {
        s += l[i];
        s2 += (double)l[i] * l[i];
    }
    s /= n;
    return sqrt(fmax(s2 / n - s * s, 1e-30));
}

/* max |a - b| over n, relative to the std of a */
static double logit_diff(const float *a, const float *b, int64_t n, int V, double *absd)
{
    double worst = 0, wa = 0;
    for (int64_t r = 0; r < n / V; r++) {
        const double sd = stdev(a + r * V, V);
        for (int i = 0; i < V; i++) {
            const double d = fabs((double)a[r * V + i] - b[r * V + i]);
            wa = fmax(wa, d);
            worst = fmax(worst, d / sd);
        }
    }
    *absd = wa;
    return worst;
}

/* The f32 twin of a model file: the same metadata and tensors, every
 * tensor dequantized to f32 (the values the GPU's kernels see). The CPU on
 * the twin computes what the GPU computes on the original, up to f32
 * rounding: no activation quantization on either side. Written to
 * out (PATH.f32.gguf); 0 or a negative kind. */
static int f32_twin(const char *path, char *out, size_t out_n, q36_err *err)
{
    static const uint8_t vsize[GGUF_T_COUNT] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
    snprintf(out, out_n, "%s.f32.gguf", path);
    gguf_file *f = NULL;
    int rc = gguf_open(path, &f, err);
    if (rc)
        return rc;
    gguf_writer *w = gguf_writer_new();
    for (int64_t i = 0; i < gguf_n_kv(f); i++) {
        const char *key = gguf_kv_key(f, i);
        const gguf_value *v = gguf_kv_value(f, i);
        if (v->type == GGUF_T_STR) {
            uint8_t *raw = malloc(8 + v->n);
            memcpy(raw, &v->n, 8);
            memcpy(raw + 8, v->p, v->n);
            gguf_w_raw(w, key, GGUF_T_STR, raw, 8 + v->n);
            free(raw);
        } else if (v->type == GGUF_T_ARR) {
            uint64_t body;
            if (v->elem == GGUF_T_STR) {
                uint64_t len = 0;
                const char *last = v->n ? gguf_arr_str(f, v, v->n - 1, &len) : (const char *)v->p;
                body = (uint64_t)((const uint8_t *)last + len - v->p);
            } else if (v->elem == GGUF_T_ARR) {
                continue;       /* nested arrays: none in these models */
            } else {
                body = v->n * vsize[v->elem];
            }
            uint8_t *raw = malloc(12 + body);
            const uint32_t e = (uint32_t)v->elem;
            memcpy(raw, &e, 4);
            memcpy(raw + 4, &v->n, 8);
            memcpy(raw + 12, v->p, body);
            gguf_w_raw(w, key, GGUF_T_ARR, raw, 12 + body);
            free(raw);
        } else {
            gguf_w_raw(w, key, v->type, v->p, vsize[v->type]);
        }
    }
    const int64_t nt = gguf_n_tensors(f);
    for (int64_t i = 0; i < nt; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        gguf_w_tensor(w, t->name, QT_F32, t->n_dims, t->ne);
    }
    rc = gguf_w_begin(w, out, err);
    for (int64_t i = 0; i < nt && !rc; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        const uint64_t ne0 = t->ne[0], rows = gguf_tensor_nelements(t) / ne0;
        const uint64_t rb = quant_row_bytes(t->type, ne0);
        float *row = malloc(ne0 * sizeof(float));
        for (uint64_t r = 0; r < rows && !rc; r++) {
            if (quant_dequant_row(t->type, (const uint8_t *)t->data + r * rb, row, (int64_t)ne0))
                rc = q36_err_set(err, Q36_E_UNSUP, "%s: cannot dequantize '%s'", path, t->name);
            else
                rc = gguf_w_data(w, row, ne0 * sizeof(float), err);
        }
        free(row);
    }
    if (!rc)
        rc = gguf_w_finish(w, err);
    gguf_writer_free(w);
    gguf_close(f);
    return rc;
}

/* Whole-model tolerances. Against the f32 twin (the check): the same
 * weights and f32 activations on both sides, so the logits differ by f32
 * rounding carried through the layers: 1% of the logits' standard
 * deviation (the f32 synthetic model shows 0.1%), and a greedy token may
 * differ only where the twin's top two logits are closer than that (a
 * near-tie, reported). Against the CPU on the original file (reported, not
 * checked): the CPU quantizes every matmul's activation row to the
 * weight's vec_dot_type (bf16, q8_0, q8_K: 2^-8 to 2^-6 of a block's
 * scale) where the GPU keeps f32, and random synthetic models amplify that
 * chaotically (routing flips in MoE): tenths to whole standard
 * deviations, and greedy paths that part at close calls. */
#define MODEL_TOL 0.01

/* In fast mode (--fast: f16 tensor-core products, the chunked delta rule,
 * tiled attention on the GPU side) the bound is the CPU backend's own
 * distance from the f32 twin on the same file (the CPU in exact mode,
 * rounding activations as ggml does: the reference's own error, which
 * the oracle tests hold to llama.cpp's), but at least FAST_FLOOR of the
 * std (the near-tie threshold of the comparisons); model_tol holds the
 * bound of the model under test (test_model sets it, test_model_slots
 * reads it). */
#define FAST_FLOOR 0.05
static double model_tol = MODEL_TOL;

typedef struct {
    int same, ties, bad;
    double prompt_rel, prompt_abs, worst_rel;
    double t_cpu, t_gpu;    /* seconds: prompt; per token */
    double tok_cpu, tok_gpu;
    q36_backend_stats st0, st1;   /* the second session's backend: after the prompt, at the end */
    int rc;
    q36_err err;
} model_cmp;

/* The sessions compared: the first on `backend_c` (NULL: the CPU), the
 * second on `backend_g` (NULL: CUDA); graphs_*: Q36_CUDA_GRAPHS for a CUDA
 * session (-1: as the environment says). */
typedef struct {
    const char *backend_c;
    int graphs_c, graphs_g;
    const char *backend_g;
    const char *keep_c;     /* keep_var for the first session (NULL: as set) */
    const char *keep_var;   /* NULL: Q36_CUDA_Q8KEEP */
} cmp_opts;
static const cmp_opts CMP_CPU = { NULL, -1, -1, NULL, NULL, NULL };
static const cmp_opts CMP_CPU_CPU = { NULL, -1, -1, "cpu", NULL, NULL };

static int session_on(q36_model *m, const char *backend, int graphs, q36_session **out,
                      q36_err *err)
{
    q36_session_opts o = q36_session_opts_default();
    o.n_threads = 0;
    o.backend = backend;
    o.fast = gpu_fast && backend && !strcmp(backend, "cuda");   /* --fast: the GPU side only */
    if (kv_q8)
        o.type_k = o.type_v = Q36_KV_Q8_0;
    char *keep = graphs >= 0 ? graphs_env_set(graphs) : NULL;
    const int rc = q36_session_new(m, 256, &o, out, err);
    if (graphs >= 0)
        graphs_env_restore(keep);
    return rc;
}

/* P prompt tokens as one pass, then G greedy decodes, both sessions fed
 * the first one's choice; near-ties counted with threshold tol * std. */
static model_cmp compare_sessions(q36_model *mc, q36_model *mg, const char *label, double tol,
                                  const cmp_opts *co)
{
    model_cmp r = { 0 };
    /* fast mode: a prompt long enough for the prompt paths' thresholds (64
     * rows of attention, cuda_fattn.h) */
    const int P = gpu_fast ? 100 : 40, G = 64;
    q36_session *sc = NULL, *sg = NULL;
    const char *kvar = co->keep_var ? co->keep_var : "Q36_CUDA_Q8KEEP";
    char *kept = co->keep_c ? env_set(kvar, co->keep_c) : NULL;
    r.rc = session_on(mc, co->backend_c, co->graphs_c, &sc, &r.err);
    if (co->keep_c)
        env_restore(kvar, kept);
    if (r.rc ||
        (r.rc = session_on(mg, co->backend_g ? co->backend_g : "cuda", co->graphs_g, &sg,
                           &r.err))) {
        q36_session_free(sc);
        return r;
    }
    const int V = q36_session_n_vocab(sc);
    t_rng rng = t_rng_named(label);
    int32_t ids[100];
    for (int i = 0; i < P; i++)
        ids[i] = (int32_t)(t_next(&rng) % (uint64_t)(V < 256 ? V : 256));
    float *lc = malloc(sizeof(float) * (size_t)V * P), *lg = malloc(sizeof(float) * (size_t)V * P);
    double t0 = now_s();
    r.rc = q36_session_append(sc, ids, P, lc, Q36_LOGITS_ALL, &r.err);
    double t1 = now_s();
    r.rc = r.rc ? r.rc : q36_session_append(sg, ids, P, lg, Q36_LOGITS_ALL, &r.err);
    r.t_cpu = t1 - t0;
    r.t_gpu = now_s() - t1;
    q36_engine_backend_stats(q36_session_engine(sg), &r.st0);
    if (!r.rc) {
        r.prompt_rel = logit_diff(lc, lg, (int64_t)V * P, V, &r.prompt_abs);
        r.worst_rel = r.prompt_rel;
        int32_t tok = (int32_t)argmax(lc + (int64_t)(P - 1) * V, V);
        for (int i = 0; i < G && !r.rc; i++) {
            double a = now_s();
            r.rc = q36_session_decode(sc, tok, lc, &r.err);
            double b = now_s();
            r.rc = r.rc ? r.rc : q36_session_decode(sg, tok, lg, &r.err);
            r.tok_gpu += (now_s() - b) / G;
            r.tok_cpu += (b - a) / G;
            if (r.rc)
                break;
            const int ac = argmax(lc, V), ag = argmax(lg, V);
            double d2;
            r.worst_rel = fmax(r.worst_rel, logit_diff(lc, lg, V, V, &d2));
            if (ac == ag)
                r.same++;
            else if (fabs((double)lc[ac] - lc[ag]) <= tol * stdev(lc, V)) {
                r.ties++;
                printf("#   %s: step %d near-tie: cpu %d (%.5g) cuda %d (cpu logit %.5g)\n", label,
                       i, ac, lc[ac], ag, lc[ag]);
            } else
                r.bad++;
            tok = ac;
        }
    }
    q36_engine_backend_stats(q36_session_engine(sg), &r.st1);
    free(lc);
    free(lg);
    q36_session_free(sc);
    q36_session_free(sg);
    return r;
}

static void test_model(const char *path)
{
    char name[256], twin[4096];
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    q36_err err = { 0 };
    q36_model *m = NULL, *mt = NULL;
    snprintf(name, sizeof name, "cuda.model%s.%s.open", mode_tag, base);
    if (q36_model_open(path, &m, &err) || f32_twin(path, twin, sizeof twin, &err) ||
        q36_model_open(twin, &mt, &err)) {
        t_fail(name, "%s", err.msg);
        q36_model_free(m);
        return;
    }
    model_cmp r;
    model_tol = MODEL_TOL;
    if (gpu_fast) {     /* the fast bound: the CPU on the file against the twin */
        snprintf(name, sizeof name, "cuda.model%s.%s.cpu_file_vs_cpu_f32_twin", mode_tag, base);
        r = compare_sessions(mt, m, name, FAST_FLOOR, &CMP_CPU_CPU);
        if (r.rc) {
            t_fail(name, "%s", r.err.msg);
        } else {
            model_tol = fmax(FAST_FLOOR, r.worst_rel);
            printf("#   %s: worst %.4g std: fast mode's bound on this file %.4g std\n", name,
                   r.worst_rel, model_tol);
        }
    }
    /* the check: the CPU on the f32 twin */
    snprintf(name, sizeof name, "cuda.model%s.%s.vs_cpu_f32_twin", mode_tag, base);
    r = compare_sessions(mt, m, name, model_tol, &CMP_CPU);
    if (r.rc)
        t_fail(name, "%s", r.err.msg);
    else
        t_check(name, r.prompt_rel <= model_tol && r.worst_rel <= model_tol && r.bad == 0,
                "prompt logits |d| %.4g std, worst %.4g std (tolerance %.2g); %d of 64 greedy "
                "tokens differ beyond a near-tie", r.prompt_rel, r.worst_rel, model_tol, r.bad);
    printf("#   %s: prompt of %d max |d| %.4g (%.4g std); greedy 64: %d identical, %d near-ties, "
           "%d other; worst %.4g std\n", name, gpu_fast ? 100 : 40, r.prompt_abs, r.prompt_rel,
           r.same, r.ties, r.bad, r.worst_rel);
    /* reported: the CPU on the file itself (its own activation rounding) */
    snprintf(name, sizeof name, "cuda.model%s.%s.vs_cpu_same_file", mode_tag, base);
    r = compare_sessions(m, m, name, 0.05, &CMP_CPU);
    if (r.rc)
        t_fail(name, "%s", r.err.msg);
    else
        printf("#   %s (reported): prompt max |d| %.4g (%.4g std); greedy 64: %d identical, %d "
               "near-ties within 5%% std, %d other; worst %.4g std; prompt of %d: cpu %.1f ms, "
               "cuda %.1f ms; decode: cpu %.2f ms/token, cuda %.2f ms/token\n", name,
               r.prompt_abs, r.prompt_rel, r.same, r.ties, r.bad, r.worst_rel,
               gpu_fast ? 100 : 40, r.t_cpu * 1e3,
               r.t_gpu * 1e3, r.tok_cpu * 1e3, r.tok_gpu * 1e3);
    q36_model_free(m);
    q36_model_free(mt);
}

/* Graphs against the op-by-op path on the same file: a CUDA session with
 * Q36_CUDA_GRAPHS=0 and one with 1, the same prompt and 64 greedy tokens.
 * The kernels are the same but attention's splits (sized by the capacity
 * with graphs on), so the logits agree to float rounding carried through
 * the layers (MODEL_TOL, as the f32 twin) and the greedy tokens are the
 * same but near-ties; the graphed session must have recorded its decode
 * step (on the second) and launched it for each token after the first.
 * In fast mode the bound is the file's fast bound (model_tol): there the
 * decode products round their input rows to int8 (Q36_CUDA_MV8), and a
 * rounding-sized difference upstream can move an element across a
 * rounding boundary, a jump of the kind and size fast mode's own rounding
 * makes (seen: 0.026 std on dense-q6k, 2026-12-02).
 * Prints the launches a decode step costs either way. */
static void test_model_graphs(const char *path)
{
    char name[256];
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    snprintf(name, sizeof name, "cuda.model%s.%s.graphs_vs_eager", mode_tag, base);
    q36_err err = { 0 };
    q36_model *m = NULL;
    if (q36_model_open(path, &m, &err)) {
        t_fail(name, "%s", err.msg);
        return;
    }
    const cmp_opts co = { "cuda", 0, 1, NULL, NULL, NULL };
    const double tol = gpu_fast ? fmax(MODEL_TOL, model_tol) : MODEL_TOL;
    model_cmp r = compare_sessions(m, m, name, tol, &co);
    const uint64_t replays = r.st1.graph_launches - r.st0.graph_launches;
    if (r.rc)
        t_fail(name, "%s", r.err.msg);
    else
        t_check(name, r.prompt_rel <= tol && r.worst_rel <= tol && r.bad == 0 &&
                r.st1.graphs_recorded >= 1 && replays >= 63,
                "prompt logits |d| %.4g std, worst %.4g std (tolerance %.2g); %d of 64 greedy "
                "tokens differ beyond a near-tie; %llu graphs recorded, %llu launched in 64 "
                "decodes (63 expected: the first runs op by op)", r.prompt_rel, r.worst_rel, tol, r.bad,
                (unsigned long long)r.st1.graphs_recorded, (unsigned long long)replays);
    printf("#   %s: prompt max |d| %.4g (%.4g std); greedy 64: %d identical, %d near-ties, %d "
           "other; worst %.4g std; a decode step: %.1f single launches + %.2f graph launches "
           "of %.1f nodes; decode: eager %.3f ms/token, graphs %.3f ms/token\n", name,
           r.prompt_abs, r.prompt_rel, r.same, r.ties, r.bad, r.worst_rel,
           (double)(r.st1.launches - r.st0.launches) / 64.0, (double)replays / 64.0,
           replays ? (double)(r.st1.graph_nodes - r.st0.graph_nodes) / (double)replays : 0.0,
           r.tok_cpu * 1e3, r.tok_gpu * 1e3);
    q36_model_free(m);
}

/* Kept rows (fast mode): with Q36_CUDA_Q8KEEP (cuda.h: q8) a norm writes
 * the int8 rows of its output for the decode products that follow, and
 * products of the same rows reuse them, instead of k_q8x quantizing the
 * rows again for each product; with Q36_CUDA_H16KEEP (cuda.h: h16) a
 * prompt's f16 products of the same rows reuse their f16 rows; with
 * Q36_CUDA_ROUTEKEEP (cuda.h: routed) an expert product reuses the
 * routing of the one before it on the same selection; with
 * Q36_CUDA_CHUNKSPLIT (cuda_chunk.cu) the chunked delta rule's states and
 * outputs are two kernels, the same products on the same operands; with
 * Q36_CUDA_CHUNKOUTX and Q36_CUDA_MOEWGPIPE (off by default, session 22,
 * not yet run on a GPU when written) k_chunk_out's grid runs in another
 * order and the warpgroup expert kernels overlap their stages; with
 * Q36_CUDA_PREFETCH (cuda_prefetch.cu) a side stream asks L2 for the next
 * block's weights (=2: and the chosen experts'), forked from and joined to
 * the pass's stream; with Q36_CUDA_SIDE (cuda_side.cu) the shared expert's
 * down product runs on a second stream beside the routed experts'; with
 * Q36_CUDA_CMBNORM a MoE block's sum is formed inside the next norm. The same
 * rows, the same bits: a session with the switch on (`on`) and one with
 * it at `off` must give the same logits bit for bit, prompt and 64 greedy
 * decodes, op by op and with graphs (a replayed pass skips its ops, the
 * rows kept must be dropped): any rows reused after they changed show as
 * a difference. (Q8KEEP's norms writing rows, =1, is off by default since
 * it measured slower; its default keeps the products' rows, =2.) Cases
 * cuda.model.*.{q8keep,q8keep2,h16keep,routekeep,chunksplit,chunkoutx,moewgpipe,prefetch,prefetch2,side,cmbnorm}_same_bits. */
static void test_model_keep(const char *path, const char *var, const char *on, const char *off,
                            const char *tag)
{
    if (!gpu_fast)
        return;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    q36_err err = { 0 };
    q36_model *m = NULL;
    char name[256];
    snprintf(name, sizeof name, "cuda.model%s.%s.%s_same_bits", mode_tag, base, tag);
    if (q36_model_open(path, &m, &err)) {
        t_fail(name, "%s", err.msg);
        return;
    }
    for (int graphs = 0; graphs <= 1; graphs++) {
        snprintf(name, sizeof name, "cuda.model%s.%s.%s_same_bits%s", mode_tag, base, tag,
                 graphs ? "_graphs" : "");
        const cmp_opts co = { "cuda", graphs, graphs, NULL, off, var };
        char *prev = env_set(var, on);
        model_cmp r = compare_sessions(m, m, name, MODEL_TOL, &co);
        env_restore(var, prev);
        if (r.rc)
            t_fail(name, "%s", r.err.msg);
        else
            t_check(name, r.prompt_rel == 0 && r.worst_rel == 0 && r.same == 64,
                    "prompt logits |d| %.4g std, decode worst %.4g std, %d of 64 tokens the "
                    "same", r.prompt_rel, r.worst_rel, r.same);
    }
    q36_model_free(m);
}

/* Several slots in one pass: 4 slots of different prompt lengths in one
 * batch, then one decode row each in one batch, CUDA on the file against
 * the CPU on its f32 twin (test_model wrote it). In fast mode the bound is
 * fast mode's rule applied to this case: twice the CPU backend's own
 * distance from the twin on the same batches (the CPU on the file, exact
 * mode), or the file's bound from test_model, whichever is larger. Twice:
 * the 32-row prompt pass takes fast mode's int8 products (cuda.h:
 * mv_rows), which round x to int8 in blocks of 32 where the CPU on the
 * file rounds it to q8_K in blocks of 256: two draws of rounding of the
 * same size, each amplified by the model as the CPU's distance measures
 * it (2026-12-02, H200: dense-q4km 5.57 std against the CPU's 5.60,
 * moe-q4k-top8 10.35 against 8.79). */
static void test_model_slots(const char *path)
{
    char name[256], twin[4096];
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    snprintf(name, sizeof name, "cuda.model%s.%s.slots4_batched", mode_tag, base);
    snprintf(twin, sizeof twin, "%s.f32.gguf", path);
    q36_err err = { 0 };
    q36_model *m = NULL, *mt = NULL;
    if (q36_model_open(path, &m, &err) || q36_model_open(twin, &mt, &err)) {
        t_fail(name, "%s", err.msg);
        q36_model_free(m);
        return;
    }
    q36_engine_opts oc = q36_engine_opts_default(), og;
    oc.n_slots = 4;
    oc.n_threads = 0;
    if (kv_q8)
        oc.type_k = oc.type_v = Q36_KV_Q8_0;
    og = oc;
    og.backend = "cuda";
    og.fast = gpu_fast;
    q36_engine *ec = NULL, *eg = NULL, *eq = NULL;    /* eq: the CPU on the file (fast mode) */
    if (q36_engine_new(mt, 128, &oc, &ec, &err) || q36_engine_new(m, 128, &og, &eg, &err) ||
        (gpu_fast && q36_engine_new(m, 128, &oc, &eq, &err))) {
        t_fail(name, "%s", err.msg);
        q36_engine_free(ec);
        q36_engine_free(eg);
        q36_model_free(m);
        q36_model_free(mt);
        return;
    }
    const int V = q36_engine_n_vocab(ec);
    t_rng r = t_rng_named(name);
    const int len[4] = { 5, 1, 17, 9 };
    int32_t id[64], slot[64], pos[64], out[64];
    int n = 0;
    for (int s = 0; s < 4; s++)
        for (int i = 0; i < len[s]; i++) {
            id[n] = (int32_t)(t_next(&r) % (uint64_t)(V < 256 ? V : 256));
            slot[n] = s;
            pos[n] = i;
            out[n] = n;
            n++;
        }
    float *lc = malloc(sizeof(float) * (size_t)V * n), *lg = malloc(sizeof(float) * (size_t)V * n);
    float *lq = malloc(sizeof(float) * (size_t)V * n);
    double worst = 0, own = 0, absd;
    q36_batch b = { n, id, slot, pos, n, out };
    int rc = q36_engine_eval(ec, &b, lc, NULL, &err);
    rc = rc ? rc : q36_engine_eval(eg, &b, lg, NULL, &err);
    rc = rc || !eq ? rc : q36_engine_eval(eq, &b, lq, NULL, &err);
    if (!rc)
        worst = logit_diff(lc, lg, (int64_t)V * n, V, &absd);
    if (!rc && eq)
        own = logit_diff(lc, lq, (int64_t)V * n, V, &absd);
    /* decode: one row a slot, positions len[s] */
    for (int step = 0; step < 3 && !rc; step++) {
        for (int s = 0; s < 4; s++) {
            id[s] = (int32_t)(t_next(&r) % (uint64_t)(V < 256 ? V : 256));
            slot[s] = s;
            pos[s] = len[s] + step;
            out[s] = 3 - s;                /* rows asked for in another order */
        }
        q36_batch d = { 4, id, slot, pos, 4, out };
        rc = q36_engine_eval(ec, &d, lc, NULL, &err);
        rc = rc ? rc : q36_engine_eval(eg, &d, lg, NULL, &err);
        rc = rc || !eq ? rc : q36_engine_eval(eq, &d, lq, NULL, &err);
        if (!rc)
            worst = fmax(worst, logit_diff(lc, lg, (int64_t)V * 4, V, &absd));
        if (!rc && eq)
            own = fmax(own, logit_diff(lc, lq, (int64_t)V * 4, V, &absd));
    }
    const double tol = fmax(model_tol, 2.0 * own);
    if (rc)
        t_fail(name, "%s", err.msg);
    else
        t_check(name, worst <= tol, "worst logit |d| %.4g of the std (tolerance %.3g)", worst,
                tol);
    if (eq)
        printf("#   %s: worst logit |d| %.4g of the std; the CPU on the file: %.4g; the file's "
               "bound %.4g\n", name, worst, own, model_tol);
    else
        printf("#   %s: worst logit |d| %.4g of the std\n", name, worst);
    free(lc);
    free(lg);
    free(lq);
    q36_engine_free(ec);
    q36_engine_free(eg);
    q36_engine_free(eq);
    q36_model_free(m);
    q36_model_free(mt);
}

/* The verify pass of 4 slots' drafts (the server's MTP step), recorded
 * (engine.c: pass_key; in exact mode its 16 rows, above the 8 of the
 * matvec kernels, take cuda_graph.cu's graph_rows): 4 slots with prompts of
 * 3-9 tokens, then 6 passes of every slot's 4 rows, each slot keeping its
 * states and rewound after the pass to 1-4 rows (a different count each
 * pass and slot). The key repeats, so on an engine with graphs the first
 * pass runs op by op, the second is recorded and the rest replay. Checked:
 * the pass was recorded and replayed; its logits agree with an engine
 * without graphs (Q36_CUDA_GRAPHS=0) within the file's bound; the graphed
 * engine, its slots reset, running it all again (every pass a replay now)
 * gives its first run's bits. In exact mode without batch invariance
 * (Q36_CUDA_EXACTINV=0) the 16 rows call cuBLAS, and the pass must not be
 * recorded (checked: no graph launched), the rest as above. */
enum { KG_SLOTS = 4, KG_ROWS = 4, KG_PASSES = 6 };

static int keep_graph_run(q36_engine *e, float *lg, int V, uint64_t seed, q36_err *err)
{
    static const int plen[KG_SLOTS] = { 5, 3, 9, 4 };
    int32_t id[64], sl[64], pos[64], out[64];
    int n = 0, cur[KG_SLOTS];
    t_rng r = { seed };
    const int span = V < 256 ? V : 256;
    for (int s = 0; s < KG_SLOTS; s++) {
        q36_slot_reset(e, s);
        for (int i = 0; i < plen[s]; i++, n++)
            id[n] = (int32_t)(t_next(&r) % (uint64_t)span), sl[n] = s, pos[n] = i;
        cur[s] = plen[s];
    }
    int32_t last = 0;
    q36_batch b = { n, id, sl, pos, 1, &last };
    int rc = q36_engine_eval(e, &b, NULL, NULL, err);
    for (int p = 0; p < KG_PASSES && !rc; p++) {
        n = 0;
        for (int s = 0; s < KG_SLOTS; s++)
            for (int i = 0; i < KG_ROWS; i++, n++) {
                id[n] = (int32_t)(t_next(&r) % (uint64_t)span);
                sl[n] = s, pos[n] = cur[s] + i, out[n] = n;
            }
        for (int s = 0; s < KG_SLOTS && !rc; s++)
            rc = q36_engine_keep_states(e, s, err);
        const q36_batch vb = { n, id, sl, pos, n, out };
        if (!rc)
            rc = q36_engine_eval(e, &vb, lg + (size_t)p * n * V, NULL, err);
        for (int s = 0; s < KG_SLOTS && !rc; s++) {
            const int keep = 1 + (p + s) % KG_ROWS;
            rc = q36_slot_rewind(e, s, keep, err);
            cur[s] += keep;
        }
    }
    return rc;
}

static void test_model_keep_graphs(const char *path)
{
    char name[256];
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    snprintf(name, sizeof name, "cuda.model%s.%s.verify4_recorded", mode_tag, base);
    q36_err err = { 0 };
    q36_model *m = NULL;
    if (q36_model_open(path, &m, &err)) {
        t_fail(name, "%s", err.msg);
        return;
    }
    q36_engine_opts o = q36_engine_opts_default();
    o.n_slots = KG_SLOTS;
    o.n_keep = KG_ROWS;
    o.n_threads = 0;
    o.backend = "cuda";
    o.fast = gpu_fast;
    q36_engine *eg = NULL, *ee = NULL;
    char *keep = graphs_env_set(1);
    int rc = q36_engine_new(m, 128, &o, &eg, &err);
    graphs_env_restore(keep);
    keep = graphs_env_set(0);
    rc = rc ? rc : q36_engine_new(m, 128, &o, &ee, &err);
    graphs_env_restore(keep);
    const int V = rc ? 1 : q36_engine_n_vocab(eg);
    const size_t nl = (size_t)KG_PASSES * KG_SLOTS * KG_ROWS * (size_t)V;
    float *lg = malloc(nl * sizeof *lg), *le = malloc(nl * sizeof *le), *l2 = malloc(nl * sizeof *l2);
    q36_backend_stats s0 = { 0 }, s1 = { 0 }, s2 = { 0 };
    const uint64_t seed = t_rng_named(name).s;
    double worst = 0, absd = 0;
    if (!rc) {
        q36_engine_backend_stats(eg, &s0);
        rc = keep_graph_run(eg, lg, V, seed, &err);
        q36_engine_backend_stats(eg, &s1);
    }
    rc = rc ? rc : keep_graph_run(ee, le, V, seed, &err);
    rc = rc ? rc : keep_graph_run(eg, l2, V, seed, &err);
    if (!rc) {
        q36_engine_backend_stats(eg, &s2);
        worst = logit_diff(le, lg, (int64_t)nl, V, &absd);
    }
    const double tol = gpu_fast ? fmax(MODEL_TOL, model_tol) : MODEL_TOL;
    const uint64_t rec = s1.graphs_recorded - s0.graphs_recorded;
    const uint64_t l1 = s1.graph_launches - s0.graph_launches, l2n = s2.graph_launches - s1.graph_launches;
    const char *inv = getenv("Q36_CUDA_EXACTINV");
    const bool recordable = gpu_fast || !(inv && !strcmp(inv, "0"));
    const bool graphs_ok = recordable ? rec >= 1 && l1 >= KG_PASSES - 2 && l2n >= KG_PASSES
                                      : rec == 0 && l1 == 0 && l2n == 0;
    if (rc)
        t_fail(name, "%s", err.msg);
    else
        t_check(name, graphs_ok && worst <= tol && !memcmp(lg, l2, nl * sizeof *lg),
                "%llu graphs recorded, %llu and %llu launched (%s), logits |d| %.4g std against "
                "op by op (tolerance %.2g), second run %s", (unsigned long long)rec,
                (unsigned long long)l1, (unsigned long long)l2n,
                recordable ? ">= 1, >= 4, >= 6 expected" : "none expected: cuBLAS above 8 rows",
                worst, tol, memcmp(lg, l2, nl * sizeof *lg) ? "differs" : "the same bits");
    printf("#   %s: %llu graphs recorded, %llu + %llu launched; logits |d| %.4g std against op "
           "by op\n", name, (unsigned long long)rec, (unsigned long long)l1, (unsigned long long)l2n,
           worst);
    free(lg), free(le), free(l2);
    q36_engine_free(eg);
    q36_engine_free(ee);
    q36_model_free(m);
}

/* The SwiGLU products (be_matmul_glu, be_matmul_id_glu: on the GPU,
 * backend.c's SwiGLU then product), each device type: decode rows 1, 3,
 * 8 and 9, K of 12 KiB and 14 KiB of floats, experts top-1 to top-8 with
 * 1-9 tokens (the 35B-A3B down shape). */
static void glu_cases(void)
{
    mm_glu = true;
    const uint32_t ltypes[] = { QT_F32, QT_F16, QT_BF16, QT_Q8_0, QT_Q4_K, QT_Q5_K, QT_Q6_K,
                                QT_IQ4_XS };
    for (size_t i = 0; i < sizeof ltypes / sizeof ltypes[0]; i++) {
        test_matmul(ltypes[i], 512, 33, 1);
        test_matmul(ltypes[i], 1024, 257, 3);
        test_matmul(ltypes[i], 512, 96, 8);
        test_matmul(ltypes[i], 256, 100, 9);
        test_matmul_id(ltypes[i], 512, 64, 8, 3, 5, true);
    }
    test_matmul(QT_Q4_K, 3072, 100, 1);
    test_matmul(QT_Q6_K, 3584, 64, 4);
    test_matmul(QT_F16, 40, 31, 2);            /* K no 8 divides, no float4 rows */
    test_matmul_id(QT_Q4_K, 512, 2048, 64, 8, 1, true);
    test_matmul_id(QT_Q6_K, 512, 2048, 64, 8, 4, true);
    test_matmul_id(QT_Q8_0, 256, 64, 4, 1, 9, true);
    mm_glu = false;
}


/* Batch invariance on the GPU (issue 16: exact mode stays batch-invariant):
 * one engine of three slots in exact mode, 1024 positions. Slot 0 takes a
 * prompt of 600 tokens in one pass, slots 1 and 2 the same prompt a token a
 * pass (attention past one fixed-length split, 512 keys); the logits of the
 * last 8 positions are compared. Then one decode step of slots 0 and 1
 * together and of slot 2 alone, the same token. With Q36_CUDA_EXACTINV (on
 * by default) every compared row must be the same bits in all three (a
 * checked case); with Q36_CUDA_EXACTINV=0 the largest difference is
 * reported (those paths are not invariant: cuBLAS products above 8 rows,
 * attention splits sized by the batch). Not in fast mode. */
static void test_model_invariance(const char *path)
{
    if (gpu_fast)
        return;
    const char *inv = getenv("Q36_CUDA_EXACTINV");
    const bool on = !(inv && !strcmp(inv, "0"));     /* on by default (cuda.h: inv) */
    char name[256];
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    snprintf(name, sizeof name, "cuda.model%s.%s.exact_batch_invariant", mode_tag, base);
    q36_err err = { 0 };
    q36_model *m = NULL;
    if (q36_model_open(path, &m, &err)) {
        t_fail(name, "%s", err.msg);
        return;
    }
    q36_engine_opts o = q36_engine_opts_default();
    o.n_slots = 3;
    o.n_batch = 1024;
    o.backend = "cuda";
    o.fast = 0;
    q36_engine *e = NULL;
    if (q36_engine_new(m, 1024, &o, &e, &err)) {
        t_fail(name, "%s", err.msg);
        q36_model_free(m);
        return;
    }
    enum { P = 600, C = 8 };    /* prompt, compared rows */
    const int V = q36_engine_n_vocab(e);
    t_rng r = t_rng_named(name);
    int32_t *id = malloc(sizeof(int32_t) * (P + 1)), *slot = malloc(sizeof(int32_t) * P),
            *pos = malloc(sizeof(int32_t) * P), out[C];
    for (int i = 0; i <= P; i++)
        id[i] = (int32_t)(t_next(&r) % (uint64_t)(V < 256 ? V : 256));
    float *l[3], *d = malloc(sizeof(float) * (size_t)V * 3);
    for (int s = 0; s < 3; s++)
        l[s] = malloc(sizeof(float) * (size_t)V * C);
    for (int i = 0; i < P; i++) {
        slot[i] = 0;
        pos[i] = i;
    }
    for (int i = 0; i < C; i++)
        out[i] = P - C + i;
    q36_batch whole = { P, id, slot, pos, C, out };
    int rc = q36_engine_eval(e, &whole, l[0], NULL, &err);
    for (int s = 1; s <= 2 && !rc; s++)
        for (int i = 0; i < P && !rc; i++) {
            int32_t sl = s, ps = i, ot = 0;
            const bool keep = i >= P - C;
            q36_batch one = { 1, &id[i], &sl, &ps, keep ? 1 : 0, &ot };
            rc = q36_engine_eval(e, &one, keep ? l[s] + (int64_t)(i - (P - C)) * V : NULL, NULL,
                                 &err);
        }
    if (!rc) {      /* a decode step: slots 0 and 1 together, slot 2 alone */
        int32_t ids2[2] = { id[P], id[P] }, sl2[2] = { 0, 1 }, ps2[2] = { P, P }, ot2[2] = { 0, 1 };
        q36_batch two = { 2, ids2, sl2, ps2, 2, ot2 };
        rc = q36_engine_eval(e, &two, d, NULL, &err);
        int32_t sl = 2, ps = P, ot = 0;
        q36_batch one = { 1, &id[P], &sl, &ps, 1, &ot };
        rc = rc ? rc : q36_engine_eval(e, &one, d + 2 * (int64_t)V, NULL, &err);
    }
    if (rc) {
        t_fail(name, "%s", err.msg);
    } else {
        double worst = 0, absd;
        worst = fmax(worst, logit_diff(l[0], l[1], (int64_t)V * C, V, &absd));
        worst = fmax(worst, logit_diff(l[1], l[2], (int64_t)V * C, V, &absd));
        worst = fmax(worst, logit_diff(d, d + V, V, V, &absd));
        worst = fmax(worst, logit_diff(d, d + 2 * (int64_t)V, V, V, &absd));
        const bool same = !memcmp(l[0], l[1], sizeof(float) * (size_t)V * C) &&
                          !memcmp(l[1], l[2], sizeof(float) * (size_t)V * C) &&
                          !memcmp(d, d + V, sizeof(float) * (size_t)V) &&
                          !memcmp(d, d + 2 * (int64_t)V, sizeof(float) * (size_t)V);
        if (on)
            t_check(name, same, "rows differ with the batch: worst %.3g of the std", worst);
        printf("#   %s: %s; worst difference %.3g of the std (Q36_CUDA_EXACTINV %s)\n", name,
               same ? "every row the same bits" : "rows differ with the batch", worst,
               on ? "on" : "off");
    }
    for (int s = 0; s < 3; s++)
        free(l[s]);
    free(d); free(id); free(slot); free(pos);
    q36_engine_free(e);
    q36_model_free(m);
}

/* Every op case, in the order of backend.h. */
static void test_ops(void)
{
    test_tensors();

    /* matmuls: decode rows (1, 3: a partial 4-row pass, 8), the cuBLAS
     * path (9, 64, 512), odd output counts; every device type, and two
     * through the host-dequantized path (q4_0, iq4_xs) */
    const uint32_t types[] = { QT_F32, QT_F16, QT_BF16, QT_Q8_0, QT_Q4_K, QT_Q5_K, QT_Q6_K,
                               QT_Q4_0, QT_IQ4_XS };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        test_matmul(types[i], 256, 33, 1);
        test_matmul(types[i], 512, 257, 3);
        test_matmul(types[i], 1024, 96, 8);
        test_matmul(types[i], 256, 100, 9);
        test_matmul(types[i], 2048, 300, 64);
    }
    test_matmul(QT_Q4_K, 2048, 512, 512);
    test_matmul(QT_Q6_K, 1024, 4099, 1);       /* a head-like wide output */
    test_matmul(QT_F32, 40, 31, 2);            /* f32 rows no 8 divides */
    test_matmul(QT_F32, 33, 255, 17);
    {
        const uint32_t mixed[3] = { QT_Q4_K, QT_Q6_K, QT_Q8_0 };
        const uint32_t q4[6] = { QT_Q4_K, QT_Q4_K, QT_Q4_K, QT_Q4_K, QT_Q4_K, QT_Q4_K };
        const uint32_t q6[2] = { QT_Q6_K, QT_Q6_K };
        const uint32_t mix4[4] = { QT_Q4_K, QT_Q4_K, QT_Q6_K, QT_F32 };  /* the MoE block's */
        test_matmul_n(mixed, 3, 2);
        test_matmul_n(mixed, 3, 1);
        test_matmul_n(mix4, 4, 1);
        test_matmul_n(q4, 4, 1);
        test_matmul_n(q4, 6, 1);
        test_matmul_n(q4, 3, 5);
        test_matmul_n(q6, 2, 8);
    }

    const uint32_t etypes[] = { QT_Q4_K, QT_Q8_0, QT_F16, QT_Q6_K, QT_Q5_K };
    for (size_t i = 0; i < sizeof etypes / sizeof etypes[0]; i++) {
        test_matmul_id(etypes[i], 256, 64, 8, 1, 1, false);
        test_matmul_id(etypes[i], 256, 64, 8, 3, 5, false);
        test_matmul_id(etypes[i], 512, 96, 16, 8, 33, false);
        test_matmul_id(etypes[i], 256, 512, 16, 8, 7, true);
    }
    test_matmul_id(QT_Q4_K, 2048, 512, 64, 8, 1, false);     /* 35B-A3B expert shape */
    test_matmul_id(QT_Q4_K, 512, 2048, 64, 8, 1, true);

    glu_cases();
    const uint32_t ltypes[] = { QT_F32, QT_F16, QT_BF16, QT_Q8_0, QT_Q4_K, QT_Q5_K, QT_Q6_K,
                                QT_IQ4_XS };
    /* be_matmul_id_swiglu: both products in one kernel (decode: 1 token,
     * 4 slots) or, at 64 and more rows with grouped products, the ops */
    for (size_t i = 0; i < sizeof ltypes / sizeof ltypes[0]; i++)
        test_matmul_id_swiglu(ltypes[i], 256, 96, 16, 4, 3);
    test_matmul_id_swiglu(QT_Q4_K, 2048, 512, 64, 8, 1);      /* the 35B-A3B gate/up shape */
    test_matmul_id_swiglu(QT_Q4_K, 2048, 512, 64, 8, 4);
    test_matmul_id_swiglu(QT_Q6_K, 1024, 100, 32, 8, 9);
    test_matmul_id_swiglu(QT_Q8_0, 256, 64, 8, 1, 70);

    const uint32_t gtypes[] = { QT_F32, QT_F16, QT_BF16, QT_Q8_0, QT_Q4_K, QT_Q5_K, QT_Q6_K,
                                QT_IQ4_XS };
    for (size_t i = 0; i < sizeof gtypes / sizeof gtypes[0]; i++)
        test_get_rows(gtypes[i], 512, 300, 37);

    test_norms(1, 2048, 2048);
    test_norms(33, 1024, 1024);
    test_norms(7, 4096, 256);
    test_norms(5, 1024, 128);
    test_norms(3, 512, 64);
    test_norms(300, 256, 128);        /* a warp a group (k_norm_warp) */
    test_norms(130, 768, 256);
    test_norms(70, 192, 64);
    test_norms(257, 96, 32);

    test_elementwise(1, 2048);
    test_elementwise(33, 255);
    test_elementwise(512, 512);

    test_rope(1, 16, 256, 64, 100000);
    test_rope(33, 3, 128, 32, 5000);
    test_rope(7, 8, 64, 16, 300);
    test_rope(257, 2, 256, 64, 4096);

    test_attn_prologue(1, 16, 2, 256, 64, 40000);       /* the 35B-A3B decode row */
    test_attn_prologue(8, 8, 2, 256, 64, 4096);         /* 8 slots, the 0.8B's heads */
    test_attn_prologue(33, 6, 3, 128, 32, 1000);
    test_attn_prologue(5, 4, 1, 64, 64, 300);           /* every dim rotated */
    test_attn_prologue(300, 2, 1, 256, 64, 5000);

    test_moe(1, 256, 8);
    test_moe(33, 64, 3);
    test_moe(5, 8, 1);
    test_moe(512, 256, 8);
    test_moe(3, 512, 32);       /* k_route_warp's largest: 16 experts a lane, top 32 */
    test_moe(7, 300, 10);       /* experts not a multiple of 32 */
    test_moe(2, 1000, 40);      /* past the warp kernel: k_route */
    test_argmax(5, 151680, 151680);
    test_argmax(64, 248320, 248320);
    test_argmax(7, 16384, 151680);
    test_argmax(3, 1, 1);
    test_argmax(9, 1023, 1023);
    test_topk(16, 151680, 151680, 64);
    test_topk(8, 151680, 151680, 1);
    test_topk(64, 248320, 248320, 40);
    test_topk(16, 16384, 151680, 20);
    test_topk(8, 5, 5, 20);                /* fewer columns than k: padding */
    test_topk(24, 1000, 1000, 64);
    test_topk(8, 4097, 4097, 33);

    /* attention: head dims 64/128/256, 1-3 KV heads, GQA groups, f16 and
     * f32 caches, decode (1 row of 1 slot, or 1 row each of 8 slots over
     * long caches: split along K/V), prompt batches up to 512 rows */
    {
        const int l2[] = { 300, 212 }, p2[] = { 0, 40 };
        attention_decode_cases();
        test_attention(16, 2, 256, 1, 2, l2, p2);
        test_attention(8, 2, 256, 0, 2, l2, p2);
        test_attention(16, 2, 256, 2, 2, l2, p2);
        /* the rotations of q8_0 caches: the CPU's bits */
        test_hadamard(5, 16 * 256, 256);
        test_hadamard(33, 2 * 256, 64);
        test_hadamard(1, 4 * 128, 128);
        test_hadamard(300, 6 * 64, 64);
    }

    {
        const int l1[] = { 1 }, l3[] = { 7, 1, 33 }, l8[] = { 1, 1, 1, 1, 1, 1, 1, 1 },
                  l512[] = { 512 }, l4[] = { 100, 200, 12, 200 };
        test_conv(8192, 1, l1);
        test_conv(96, 3, l3);
        test_conv(6144, 8, l8);
        test_conv(8192, 1, l512);
        test_conv(257, 4, l4);

        test_deltanet(16, 32, 128, 1, l1, false);
        test_deltanet(16, 16, 128, 8, l8, false);
        test_deltanet(2, 4, 64, 3, l3, false);
        test_deltanet(1, 2, 256, 1, l1, false);
        test_deltanet(3, 3, 32, 3, l3, false);
        test_deltanet(16, 32, 128, 1, l512, false);
        test_deltanet(4, 8, 128, 4, l4, false);
        test_deltanet(16, 32, 128, 1, l512, true);
        test_deltanet(2, 4, 64, 3, l3, true);
        /* be_deltanet_gated: decode steps of 1 and 8 slots, runs of
         * several rows, each head dim */
        dn_gated = true;
        test_deltanet(16, 32, 128, 1, l1, false);
        test_deltanet(16, 16, 128, 8, l8, false);
        test_deltanet(2, 4, 64, 3, l3, false);
        test_deltanet(1, 2, 256, 1, l1, false);
        test_deltanet(3, 3, 32, 3, l3, false);
        test_deltanet(4, 8, 128, 4, l4, false);
        /* be_deltanet_gated_keep: a verify pass's runs of a few rows, and
         * one-row runs beside them (a slot that drafts nothing) */
        const int lk[] = { 4, 1, 4, 3 }, lk1[] = { 5 };
        dn_keep = true;
        test_deltanet(2, 4, 64, 4, lk, false);
        test_deltanet(16, 32, 128, 1, lk1, false);
        test_deltanet(1, 2, 256, 4, lk, false);
        test_deltanet(3, 3, 32, 3, l3, false);
        dn_keep = false;
        dn_gated = false;
    }
    printf("# op cases: worst |cuda - cpu| / bound %.3g (%s)\n", worst_ratio_all, worst_name);
}

/* ------------------------------------------------------------------ bench */

/* --bench: the time of one op at decode shapes (one row), the mean of
 * `reps` calls queued back to back then one sync: launch cost included,
 * the way a decode step pays it. Weight products also as GB/s of weight
 * bytes. Not a test: it prints "#" lines only. */
static double time_ops(void (*fn)(void *), void *arg, int reps)
{
    fn(arg);
    be_sync(gpu);
    const double t0 = now_s();
    for (int i = 0; i < reps; i++)
        fn(arg);
    be_sync(gpu);
    return (now_s() - t0) / reps;
}

typedef struct { wt *w; pair x, y, s; } mm_arg;
static void run_mm(void *a) { mm_arg *m = a; be_matmul(gpu, m->w->wg, 0, m->x.g, m->y.g); }
static void run_mm_id(void *a) { mm_arg *m = a; be_matmul_id(gpu, m->w->wg, m->x.g, m->s.g, m->y.g); }

static void bench_mm(uint32_t type, int64_t K, int64_t N, int64_t E, int64_t k)
{
    t_rng r = t_rng_named("bench");
    wt w;
    make_weight(&w, &r, type, K, N, E);
    free(w.deq);
    float *x = t_randv(&r, K * k, 1);
    mm_arg a = { &w, up(x, k > 1 ? 1 : 1, K), up(NULL, k, N), { NULL, NULL } };
    double t;
    uint64_t bytes = quant_row_bytes(type, (uint64_t)K) * (uint64_t)N * (uint64_t)k;
    if (E > 1) {
        int32_t sel[64];
        for (int i = 0; i < k; i++)
            sel[i] = (int32_t)((i * 37 + 5) % E);
        a.s = (pair){ NULL, t_i32(gpu, sel, 1, k) };
        t = time_ops(run_mm_id, &a, 200);
    } else {
        t = time_ops(run_mm, &a, 200);
    }
    printf("# bench matmul%s %-5s %5lld x %6lld%s: %8.2f us  %7.1f GB/s\n", E > 1 ? "_id" : "   ",
           quant_type_name(type), (long long)K, (long long)N, E > 1 ? " (top-k rows)" : "",
           t * 1e6, bytes / t / 1e9);
    be_tensor_free(cpu, a.x.c);
    be_tensor_free(gpu, a.x.g);
    be_tensor_free(cpu, a.y.c);
    be_tensor_free(gpu, a.y.g);
    be_tensor_free(gpu, a.s.g);
    free(x);
}

typedef struct { pair q, kc, vc, out; bpair b; int64_t Hq, Hkv, hd; } att_arg;
static void run_att(void *p)
{
    att_arg *a = p;
    be_attention(gpu, a->q.g, a->kc.g, a->vc.g, &a->b.g, a->Hq, a->Hkv, a->hd, 0.0625f, a->out.g);
}

typedef struct { pair qkv, g, beta, S, out; bpair b; int64_t Hk, Hv, dk; } dn_arg;
static void run_dn(void *p)
{
    dn_arg *a = p;
    be_deltanet(gpu, a->qkv.g, a->g.g, a->beta.g, a->S.g, a->Hk, a->Hv, a->dk, &a->b.g, a->out.g);
}

typedef struct { pair x, y; int kind; } ew_arg;
static void run_ew(void *p)
{
    ew_arg *a = p;
    if (a->kind == 0)
        be_add(gpu, a->x.g, a->y.g, a->y.g);
    else if (a->kind == 1)
        be_l2_norm(gpu, a->x.g, 1e-6f, 128, a->y.g);
    else
        be_copy(gpu, be_view(gpu, a->x.g, 256, 256), be_view(gpu, a->y.g, 512, 256));
}

static void run_bench(void)
{
    printf("# bench: one op at decode shapes, mean of 200 queued calls\n");
    no_deq = true;
    bench_mm(QT_Q6_K, 1024, 248320, 1, 1);   /* 0.8B head */
    bench_mm(QT_Q4_K, 1024, 6144, 1, 1);     /* 0.8B DeltaNet qkv */
    bench_mm(QT_Q4_K, 1024, 3584, 1, 1);     /* 0.8B FFN gate */
    bench_mm(QT_Q6_K, 3584, 1024, 1, 1);     /* 0.8B FFN down */
    bench_mm(QT_Q8_0, 1024, 6144, 1, 1);
    bench_mm(QT_Q4_K, 2048, 8192, 1, 1);     /* 35B DeltaNet qkv */
    bench_mm(QT_Q6_K, 2048, 248320, 1, 1);   /* 35B head */
    bench_mm(QT_Q4_K, 2048, 512, 256, 8);    /* 35B expert gate / up */
    bench_mm(QT_Q4_K, 512, 2048, 256, 8);    /* 35B expert down */
    bench_mm(QT_F32, 2048, 256, 1, 1);       /* 35B router */
    for (int L = 128; L <= 32768; L *= 16) {
        att_arg a = { .Hq = 16, .Hkv = 2, .hd = 256 };
        const int len[1] = { 1 }, pos[1] = { L - 1 }, slot[1] = { 0 };
        a.b = batch_of(1, slot, len, pos, L);
        a.q = up(NULL, 1, 16 * 256);
        a.out = up(NULL, 1, 16 * 256);
        a.kc = (pair){ NULL, be_tensor_new_f16(gpu, L, 512) };
        a.vc = (pair){ NULL, be_tensor_new_f16(gpu, L, 512) };
        const double t = time_ops(run_att, &a, 200);
        printf("# bench attention decode 16/2 x 256, f16, %6d keys: %8.2f us\n", L, t * 1e6);
        be_tensor_free(gpu, a.kc.g);
        be_tensor_free(gpu, a.vc.g);
        pfree(a.q);
        pfree(a.out);
        bfree(&a.b);
    }
    {
        dn_arg a = { .Hk = 16, .Hv = 32, .dk = 128 };
        const int len[1] = { 1 }, pos[1] = { 5 }, slot[1] = { 0 };
        a.b = batch_of(1, slot, len, pos, 64);
        a.qkv = up(NULL, 1, 64 * 128);
        a.g = up(NULL, 1, 32);
        a.beta = up(NULL, 1, 32);
        a.S = up(NULL, 32, 128 * 128);
        a.out = up(NULL, 1, 32 * 128);
        const double t = time_ops(run_dn, &a, 200);
        printf("# bench deltanet decode 16/32 x 128: %8.2f us\n", t * 1e6);
        pfree(a.qkv); pfree(a.g); pfree(a.beta); pfree(a.S); pfree(a.out);
        bfree(&a.b);
    }
    static const char *const ew_names[] = { "add 1 x 2048", "l2_norm 1 x 4096 (g 128)",
                                            "copy of a 256-column view (per-head split)" };
    for (int kind = 0; kind < 3; kind++) {
        ew_arg a = { up(NULL, 1, 4096), up(NULL, 1, 4096), kind };
        if (kind == 0) {
            pfree(a.x);
            pfree(a.y);
            a.x = up(NULL, 1, 2048);
            a.y = up(NULL, 1, 2048);
        }
        const double t = time_ops(run_ew, &a, 200);
        be_views_reset(gpu);
        printf("# bench %s: %8.2f us\n", ew_names[kind], t * 1e6);
        pfree(a.x);
        pfree(a.y);
    }
    {
        float *buf = malloc(sizeof(float) * 248320);
        be_tensor *t = be_tensor_new(gpu, 1, 248320);
        const double t0 = now_s();
        for (int i = 0; i < 50; i++)
            be_read(gpu, t, 0, 1, buf);
        printf("# bench be_read of 248320 logits: %8.2f us\n", (now_s() - t0) / 50 * 1e6);
        int32_t id = 7;
        be_tensor *it = be_tensor_new_type(gpu, BE_I32, 1, 1);
        const double t1 = now_s();
        for (int i = 0; i < 50; i++)
            be_write(gpu, it, 0, 1, &id);
        printf("# bench be_write of one id (waits): %8.2f us\n", (now_s() - t1) / 50 * 1e6);
        be_tensor_free(gpu, t);
        be_tensor_free(gpu, it);
        free(buf);
    }
}

/* --bench-prompt: ops at prompt shapes (512 rows of one sequence), each
 * on the default context and on contexts made with each prompt switch
 * (the op a switch changes is the one to compare; `q36 bench --profile
 * -ngl 99` shows the ops of a whole model). Mean of `reps` calls queued back to back, then one
 * sync. Not a test: "#" lines only. */
static void dnc_call(void *p)
{
    dn_arg *a = p;
    be_deltanet_chunked(gpu, a->qkv.g, a->g.g, a->beta.g, a->S.g, a->Hk, a->Hv, a->dk, &a->b.g,
                        a->out.g);
}

static void bench_prompt_ops(const char *tag)
{
    const int T = 512, reps = 20, zero[1] = { 0 }, lenT[1] = { 512 };
    t_rng r = t_rng_named("bench-prompt");
    {   /* the delta rule, 35B-A3B heads */
        dn_arg a = { .Hk = 16, .Hv = 32, .dk = 128 };
        a.b = batch_of(1, zero, lenT, zero, T);
        float *qkv = t_randv(&r, T * 64 * 128, 0.1f);
        a.qkv = up(qkv, T, 64 * 128);
        a.g = up(NULL, T, 32);
        a.beta = up(NULL, T, 32);
        a.S = up(NULL, 32, 128 * 128);
        a.out = up(NULL, T, 32 * 128);
        printf("# bench [%s] deltanet_chunked 16/32 x 128, %d rows: %9.1f us\n", tag, T,
               time_ops(dnc_call, &a, reps) * 1e6);
        pfree(a.qkv); pfree(a.g); pfree(a.beta); pfree(a.S); pfree(a.out);
        bfree(&a.b);
        free(qkv);
    }
    {   /* a dense product and the experts, 35B-A3B shapes */
        wt w, we;
        make_weight(&w, &r, QT_Q4_K, 2048, 8192, 1);
        make_weight(&we, &r, QT_Q4_K, 2048, 512, 256);
        float *x = t_randv(&r, T * 2048, 1);
        int32_t *sel = malloc(sizeof(int32_t) * (size_t)(T * 8));
        for (int t = 0; t < T; t++)
            for (int i = 0; i < 8; i++)
                sel[t * 8 + i] = (int32_t)((t * 97 + i * 31) % 256);   /* distinct in a row */
        mm_arg a = { &w, up(x, T, 2048), up(NULL, T, 8192), { NULL, NULL } };
        const double t1 = time_ops(run_mm, &a, reps);
        printf("# bench [%s] matmul q4_K 2048 x 8192, %d rows: %9.1f us  %6.1f TFLOP/s\n", tag,
               T, t1 * 1e6, 2.0 * T * 2048 * 8192 / t1 / 1e12);
        pfree(a.y);
        mm_arg b = { &we, a.x, up(NULL, T * 8, 512), { NULL, t_i32(gpu, sel, T, 8) } };
        const double t2 = time_ops(run_mm_id, &b, reps);
        printf("# bench [%s] matmul_id q4_K 2048 x 512, 256 experts, top-8, %d rows: %9.1f us  "
               "%6.1f TFLOP/s\n", tag, T, t2 * 1e6, 2.0 * T * 8 * 2048 * 512 / t2 / 1e12);
        pfree(b.x); pfree(b.y);
        be_tensor_free(gpu, b.s.g);
        free(x);
        free(sel);
        free(w.deq);
        free(we.deq);
    }
    for (int depth = 0; depth <= 3584; depth += 3584) {   /* attention, 16/2 x 256, f16 */
        att_arg a = { .Hq = 16, .Hkv = 2, .hd = 256 };
        const int pos[1] = { depth };
        a.b = batch_of(1, zero, lenT, pos, depth + T);
        float *q = t_randv(&r, T * 16 * 256, 1);
        a.q = up(q, T, 16 * 256);
        a.out = up(NULL, T, 16 * 256);
        a.kc = (pair){ NULL, be_tensor_new_f16(gpu, depth + T, 512) };
        a.vc = (pair){ NULL, be_tensor_new_f16(gpu, depth + T, 512) };
        printf("# bench [%s] attention 16/2 x 256 f16, %d rows after %d: %9.1f us\n", tag, T,
               depth, time_ops(run_att, &a, reps) * 1e6);
        be_tensor_free(gpu, a.kc.g);
        be_tensor_free(gpu, a.vc.g);
        pfree(a.q);
        pfree(a.out);
        bfree(&a.b);
        free(q);
    }
}

static void bench_prompt(const be_shape *sh)
{
    static const char *const sw[][2] = { { "Q36_CUDA_CHUNKED", "1" }, { "Q36_CUDA_GEMM16", "1" },
                                         { "Q36_CUDA_MOEGEMM", "1" }, { "Q36_CUDA_MOEGEMM", "2" },
                                         { "Q36_CUDA_MOEGEMM", "3" },
                                         { "Q36_CUDA_FATTN", "1" } };
    be_ctx *saved = gpu;
    no_deq = true;
    printf("# bench: ops at prompt shapes, default context and one per switch\n");
    bench_prompt_ops("default");
    for (size_t i = 0; i < sizeof sw / sizeof sw[0]; i++) {
        char tag[64];
        snprintf(tag, sizeof tag, "%s=%s", sw[i][0], sw[i][1]);
        if (!(gpu = ctx_with(sw[i][0], sw[i][1], sh, "cuda.bench_context"))) {
            gpu = saved;
            continue;
        }
        bench_prompt_ops(tag);
        be_free(gpu);
        gpu = saved;
    }
}

/* --bench-batch MODEL: decode steps of T slots at once in fast mode (T =
 * 1, 4, 16, 32, 64, or the list in BENCH_T: what q36 serve's continuous
 * batching runs), each slot
 * after an 8-token prompt, greedy ids back (as the server's greedy passes):
 * ms a step with the defaults (graphs), then op by op with the engine's
 * per-op profile, all its rows a step. A diagnostic, not a check.
 * Each step's input ids differ between slots and steps (pseudo-random over
 * the vocabulary) unless BENCH_IDS=greedy (each slot's greedy id, as
 * before 2026-12-02's session 12): a synthetic model's greedy ids are
 * mostly one token for every slot, which sent every slot to the same
 * experts (Nsight Compute: the expert kernels read 3-4% of their bytes
 * from DRAM, record 2026-12-02-cuda-matvec-lanes), where a real batch's
 * tokens spread over the experts. */
static void bench_batch(const char *path)
{
    q36_err err = { 0 };
    q36_model *m = NULL;
    if (q36_model_open(path, &m, &err)) {
        fprintf(stderr, "bench-batch: %s\n", err.msg);
        return;
    }
    int Ts[8] = { 1, 4, 16, 32, 64 }, nT = 5;
    const char *env = getenv("BENCH_T");          /* e.g. "1,16" */
    if (env && *env) {
        nT = 0;
        for (const char *c = env; *c && nT < 8; c = strchr(c, ',') ? strchr(c, ',') + 1 : "") {
            const int v = atoi(c);
            if (v >= 1 && v <= 64)
                Ts[nT++] = v;
        }
    }
    const int steps = 24, warm = 4;
    const char *ids_env = getenv("BENCH_IDS");
    const bool greedy_ids = ids_env && !strcmp(ids_env, "greedy");
    for (int ti = 0; ti < nT; ti++) {
        const int T = Ts[ti];
        for (int prof = 0; prof <= 1; prof++) {
            q36_engine_opts o = q36_engine_opts_default();
            o.n_slots = T;
            o.backend = "cuda";
            o.fast = 1;
            o.profile = prof;
            q36_engine *e = NULL;
            if (q36_engine_new(m, 128, &o, &e, &err)) {
                fprintf(stderr, "bench-batch T=%d: %s\n", T, err.msg);
                continue;
            }
            int32_t id[512], slot[512], pos[512], out[64], best[64];
            int n = 0, rc = 0;
            for (int sl = 0; sl < T; sl++)
                for (int i = 0; i < 8; i++, n++) {
                    id[n] = 100 + 7 * sl + i;
                    slot[n] = sl;
                    pos[n] = i;
                }
            for (int sl = 0; sl < T; sl++)
                out[sl] = sl * 8 + 7;
            q36_batch b = { n, id, slot, pos, T, out };
            rc = q36_engine_eval_argmax(e, &b, best, NULL, &err);
            const uint32_t V = (uint32_t)q36_engine_n_vocab(e);
            double t0 = 0;
            for (int st = 0; st < steps + warm && !rc; st++) {
                if (st == warm) {
                    if (prof)
                        q36_engine_profile_reset(e);
                    t0 = now_s();
                }
                for (int sl = 0; sl < T; sl++) {
                    /* a fixed pseudo-random id per (slot, step): the same
                     * batches in every run */
                    const uint32_t h = (uint32_t)(sl * 64 + st + 1) * 2654435761u;
                    id[sl] = greedy_ids ? best[sl] : (int32_t)((h >> 7) % V);
                    slot[sl] = sl;
                    pos[sl] = 8 + st;
                    out[sl] = sl;
                }
                q36_batch d = { T, id, slot, pos, T, out };
                rc = q36_engine_eval_argmax(e, &d, best, NULL, &err);
            }
            const double ms = (now_s() - t0) * 1e3 / steps;
            if (rc) {
                fprintf(stderr, "bench-batch T=%d: %s\n", T, err.msg);
            } else if (!prof) {
                printf("# bench-batch %s T=%d: %.3f ms a step, %.0f tokens/s\n", path, T, ms,
                       T * 1e3 / ms);
            } else {
                const q36_profile *p = NULL;
                if (!q36_engine_profile(e, &p, &err)) {
                    printf("# bench-batch T=%d op by op: %.3f ms a step; ops a step:\n", T,
                           p->forward_ms / steps);
                    for (int r = 0; r < p->n_ops; r++)
                        printf("#   %-24s %8.3f ms %6.1f calls\n", p->op[r].name,
                               p->op[r].ms / steps, (double)p->op[r].calls / steps);
                }
            }
            q36_engine_free(e);
        }
    }
    q36_model_free(m);
}

/* ------------------------------------------------------------------- main */

/* TBC_OPS="mv8,mvgrp,...": only those groups of op cases (main's names;
 * unset: all of them), for a short device call after a change to one kernel */
static bool want_ops(const char *group)
{
    const char *list = getenv("TBC_OPS");
    if (!list || !*list)
        return true;
    const size_t n = strlen(group);
    for (const char *p = list; (p = strstr(p, group)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == 0))
            return true;
    return false;
}

int main(int argc, char **argv)
{
    q36_err err = { 0 };
    if (be_new("cpu", 0, &cpu, &err) || be_new("cuda", 0, &gpu, &err)) {
        t_fail("cuda.backend_new", "%s", err.msg);
        return t_exit();
    }
    char dev[160];
    uint64_t fr, tot;
    if (!be_device_info("cuda", dev, sizeof dev, &fr, &tot, &err))
        printf("# %s: %.0f MiB free of %.0f MiB\n", dev, fr / 1048576.0, tot / 1048576.0);
    be_shape sh = { .n_rows = 512, .n_seq = 8, .n_ctx = 4096, .n_head = 24, .n_head_kv = 3,
                    .head_dim = 256, .ssm_k_heads = 16, .ssm_v_heads = 32, .ssm_dim = 256,
                    .n_expert = 64, .n_expert_used = 8, .max_in = 4096, .max_in_expert = 4096,
                    /* small on purpose: the 2048 x 512 experts of test_moe_ops take
                     * several of cuda_moe_pre.cu's weight slabs */
                    .expert_elems = 131072, .max_views = 4096 };
    if (be_reserve(cpu, &sh, &err) || be_reserve(gpu, &sh, &err)) {
        t_fail("cuda.reserve", "%s", err.msg);
        return t_exit();
    }
    t_ok("cuda.backend_new_reserve");

    if (argc > 2 && !strcmp(argv[1], "--bench-batch")) {
        for (int i = 2; i < argc; i++)
            bench_batch(argv[i]);
        be_free(cpu);
        be_free(gpu);
        return 0;
    }
    if (argc > 1 && (!strcmp(argv[1], "--bench") || !strcmp(argv[1], "--bench-prompt"))) {
        if (!strcmp(argv[1], "--bench"))
            run_bench();
        else
            bench_prompt(&sh);
        be_free(cpu);
        be_free(gpu);
        return 0;
    }
    bool ops = true;
    int a0 = 1;
    for (; a0 < argc && !strncmp(argv[a0], "--", 2); a0++) {
        if (!strcmp(argv[a0], "--no-ops"))
            ops = false;
        else if (!strcmp(argv[a0], "--fast")) {
            gpu_fast = 1;
            mode_tag = ".fast";
        } else if (!strcmp(argv[a0], "--kv-q8")) {
            kv_q8 = true;
        } else {
            t_fail("cuda.args", "unknown option %s (--no-ops, --fast, --kv-q8, --bench)", argv[a0]);
            return t_exit();
        }
    }
    /* model cases with a switch away from its default: a tag of their own */
    const char *mv8 = getenv("Q36_CUDA_MV8"), *inv = getenv("Q36_CUDA_EXACTINV");
    const char *graphs = getenv("Q36_CUDA_GRAPHS");
    const char *moewq = getenv("Q36_CUDA_MOEWQ"), *fattnwg = getenv("Q36_CUDA_FATTNWG");
    const char *prep = getenv("Q36_CUDA_CHUNKPREP");
    if (gpu_fast && moewq && !strcmp(moewq, "1"))
        mode_tag = ".fast.moewq";
    else if (gpu_fast && prep && !strcmp(prep, "2"))
        mode_tag = ".fast.chunkpb";
    else if (gpu_fast && fattnwg && !strcmp(fattnwg, "0"))
        mode_tag = ".fast.nofattnwg";
    else if (gpu_fast && mv8 && !strcmp(mv8, "0"))
        mode_tag = ".fast.nomv8";
    else if (gpu_fast && graphs && !strcmp(graphs, "1"))
        mode_tag = ".fast.new";          /* run.sh's NEW=1: every decode switch on */
    else if (!gpu_fast && inv && !strcmp(inv, "0"))
        mode_tag = ".noinv";
    static char kv_tag[64];
    if (kv_q8) {
        snprintf(kv_tag, sizeof kv_tag, "%s.kvq8", mode_tag);
        mode_tag = kv_tag;
    }

    if (ops) {
        if (want_ops("ops")) test_ops();
        if (want_ops("chunk")) {
            test_chunk_ops(&sh, true, 1, true, 0);
            test_chunk_ops(&sh, true, 1, true, 32);
            test_chunk_ops(&sh, true, 3, true, 16);
            test_chunk_ops(&sh, true, 3, true, 32);
            test_chunk_ops(&sh, true, 2, true, 0);
            test_chunk_ops(&sh, true, 1, false, 0);
            test_chunk_ops(&sh, true, 0, true, 0);
            test_chunk_ops(&sh, false, 0, false, 0);
        }
        if (want_ops("gemm16")) test_gemm16_ops(&sh);
        if (want_ops("moe")) {
            test_moe_ops(&sh, "1", 0, false, false, false);
            test_moe_ops(&sh, "2", 0, false, false, false);
            test_moe_ops(&sh, "3", 0, false, true, true);    /* warpgroup products (Hopper) */
            test_moe_ops(&sh, "3", 0, false, true, false);   /* ... on f16 copies of Q4_K */
            test_moe_ops(&sh, "3", 0, false, false, false);  /* mma.sync, 64 columns a stage */
            test_moe_ops(&sh, "3", 0, true, false, false);   /* ... 32 */
            test_moe_ops(&sh, "3", 128, false, false, false);
            test_moe_ops(&sh, "3", 256, false, false, false);
            moewq_same_bits(&sh);
            moewgpipe_same_bits(&sh);
        }
        if (want_ops("fattn")) {
            test_fattn_ops(&sh, true, true, true);
            test_fattn_ops(&sh, true, true, false);
            test_fattn_ops(&sh, true, false, false);
            test_fattn_ops(&sh, false, false, false);
        }
        if (want_ops("graph")) test_graph_ops(&sh);
        if (want_ops("graph")) test_upq(&sh);
        if (want_ops("fast_mv")) test_fast_mv(&sh);
        if (want_ops("mv8")) test_mv8(&sh);
        if (want_ops("mvq80")) test_mvq80(&sh);
        if (want_ops("q80tc")) test_q80tc(&sh);
        if (want_ops("mmq")) test_mmq(&sh);
        if (want_ops("mvnb")) test_mvnb(&sh);
        if (want_ops("mvnb1")) test_mvnb1(&sh);
        if (want_ops("mvgrp")) test_mvgrp(&sh);
        if (want_ops("mvsx")) test_mvsx(&sh);
        if (want_ops("mvyf")) test_mvyf(&sh);
        if (want_ops("mvwide")) test_mvwide(&sh);
        if (want_ops("q8keep")) test_q8keep_ops(&sh);
        if (want_ops("fglu8")) test_fglu8(&sh);
        if (want_ops("moedown")) test_moedown(&sh);
        if (want_ops("normreg")) test_normreg(&sh);
        if (want_ops("f16keep")) test_f16keep(&sh);
        if (want_ops("inv")) test_inv_rows(&sh);
        if (want_ops("gqa")) test_attn_gqa(&sh);
        if (want_ops("mixed")) test_mv_mixed(&sh);
        if (want_ops("fused")) test_fused(&sh);
        if (want_ops("keep")) test_cuda_keep();
    }

    for (int i = a0; i < argc; i++) {
        test_model(argv[i]);
        test_model_slots(argv[i]);
        test_model_graphs(argv[i]);
        test_model_keep_graphs(argv[i]);
        test_model_invariance(argv[i]);
        test_model_keep(argv[i], "Q36_CUDA_Q8KEEP", "1", "0", "q8keep");
        test_model_keep(argv[i], "Q36_CUDA_Q8KEEP", "2", "0", "q8keep2");
        test_model_keep(argv[i], "Q36_CUDA_H16KEEP", "1", "0", "h16keep");
        test_model_keep(argv[i], "Q36_CUDA_ROUTEKEEP", "1", "0", "routekeep");
        {   /* split's WMMA kernels give the one kernel's bits; the mma.sync
             * forms (the defaults, cuda_chunk_wide.cu) do not */
            char *kb = env_set("Q36_CUDA_CHUNKBV", "0"), *ko = env_set("Q36_CUDA_CHUNKOUTM", "0");
            test_model_keep(argv[i], "Q36_CUDA_CHUNKSPLIT", "1", "0", "chunksplit");
            env_restore("Q36_CUDA_CHUNKBV", kb);
            env_restore("Q36_CUDA_CHUNKOUTM", ko);
        }
        test_model_keep(argv[i], "Q36_CUDA_CHUNKOUTX", "1", "0", "chunkoutx");
        test_model_keep(argv[i], "Q36_CUDA_MOEWGPIPE", "1", "0", "moewgpipe");
        test_model_keep(argv[i], "Q36_CUDA_PREFETCH", "1", "0", "prefetch");
        test_model_keep(argv[i], "Q36_CUDA_PREFETCH", "2", "0", "prefetch2");
        test_model_keep(argv[i], "Q36_CUDA_SIDE", "1", "0", "side");
        test_model_keep(argv[i], "Q36_CUDA_CMBNORM", "1", "0", "cmbnorm");
    }
    be_free(cpu);
    be_free(gpu);
    return t_exit();
}
