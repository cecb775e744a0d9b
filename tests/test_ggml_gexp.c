/* test_ggml_gexp.c: cpu_gexp.h against ggml's own lane exp, through the
 * row functions of the pinned libggml-cpu-<variant>.so libraries (loaded
 * with dlopen, as test_ggml_quant_dot.c does) that llama.cpp's SiLU, SwiGLU
 * and softmax ops call: ggml_vec_silu_f32, ggml_vec_swiglu_f32 and
 * ggml_vec_soft_max_f32. Each row is rebuilt here the way those functions
 * run it (full vectors of W lanes through the lane form, the rest through
 * libm's expf) and must give the same bits:
 *
 *   gexp_silu_V, gexp_swiglu_V, gexp_softmax_V   for every x86 variant V this
 *                   CPU can run: W = 16 (cpu_gexp_avx512) for the AVX-512
 *                   builds, 8 (cpu_gexp_avx2) for haswell and alderlake
 *   gexp_differs_from_libm   the lane SiLU is not libm's on these rows
 *                   (why q36's libm-exact SiLU disagreed with llama.cpp)
 *
 * Rows: lengths 1..40, 255, 256, 1000 (tails of every size); gaussian values
 * at scales 0.05 to 40, a dense sweep of [-110, 100] (both overflow and
 * underflow paths of each form), and 0, -0, +-inf, NaN, subnormals and the
 * edges of expf's range. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_gexp.h"
#include "backend/cpu/cpu_vexp.h"
#include "ggml_cpu_lib.h"
#include "test.h"

typedef void (*silu_fn)(int n, float *y, const float *x);
typedef void (*swiglu_fn)(int n, float *y, const float *x, const float *g);
typedef double (*softmax_fn)(int n, float *y, const float *x, float max);

static silu_fn g_silu;
static swiglu_fn g_swiglu;
static softmax_fn g_softmax;

/* 1: loaded and this CPU runs it; 0: this CPU cannot; -1: error (why) */
static int load_variant(const char *variant, char *why, size_t wn)
{
    int sc;
    void *h = t_ggml_cpu_open(variant, &sc, why, wn);
    if (!h)
        return why[0] ? -1 : 0;
    g_silu = (silu_fn)dlsym(h, "ggml_vec_silu_f32");
    g_swiglu = (swiglu_fn)dlsym(h, "ggml_vec_swiglu_f32");
    g_softmax = (softmax_fn)dlsym(h, "ggml_vec_soft_max_f32");
    if (!g_silu || !g_swiglu || !g_softmax) {
        snprintf(why, wn, "libggml-cpu-%s.so lacks a ggml_vec_* row function", variant);
        return -1;
    }
    return sc > 0;
}

enum { OP_SILU, OP_SWIGLU, OP_SOFTMAX };

/* the full vectors of a row as ggml runs them, with cpu_gexp's lanes;
 * returns where the tail starts */
CPU_GEXP_AVX512 static int lanes16(int op, int n, const float *x, const float *g, float mx, float *y)
{
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(x + i);
        __m512 r = op == OP_SOFTMAX ? cpu_gexp_avx512(_mm512_sub_ps(v, _mm512_set1_ps(mx)))
                                    : cpu_gsilu_avx512(v);
        if (op == OP_SWIGLU)
            r = _mm512_mul_ps(r, _mm512_loadu_ps(g + i));
        _mm512_storeu_ps(y + i, r);
    }
    return i;
}

CPU_GEXP_AVX2 static int lanes8(int op, int n, const float *x, const float *g, float mx, float *y)
{
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        __m256 r = op == OP_SOFTMAX ? cpu_gexp_avx2(_mm256_sub_ps(v, _mm256_set1_ps(mx)))
                                    : cpu_gsilu_avx2(v);
        if (op == OP_SWIGLU)
            r = _mm256_mul_ps(r, _mm256_loadu_ps(g + i));
        _mm256_storeu_ps(y + i, r);
    }
    return i;
}

/* the row as ggml runs it: W = 16 or 8 lanes, then libm for the tail */
static void row_q36(int op, int W, int n, const float *x, const float *g, float mx, float *y)
{
    int i = W == 16 ? lanes16(op, n, x, g, mx, y) : lanes8(op, n, x, g, mx, y);
    for (; i < n; i++)
        y[i] = op == OP_SOFTMAX ? expf(x[i] - mx)
             : op == OP_SILU ? x[i] / (1.0f + expf(-x[i])) : x[i] / (1.0f + expf(-x[i])) * g[i];
}

static int same_bits(float a, float b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, 4) == 0;
}

#define NMAX 4096
static float xs[NMAX], gs[NMAX], want[NMAX], got[NMAX];

/* fills xs[0..n) with row kind `kind`; returns n */
static int make_row(t_rng *r, int kind, int n)
{
    static const float special[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f,
                                     88.72f, 88.73f, -87.33f, -103.97f, -103.98f, 104.0f,
                                     -104.0f, 126.0f * 0.6931472f, -126.0f * 0.6931472f,
                                     130.0f, -130.0f, 200.0f, -200.0f, 1e30f, -1e30f, 0.5f };
    const int ns = (int)(sizeof special / sizeof special[0]);
    static const float scales[] = { 0.05f, 0.5f, 1.0f, 3.0f, 10.0f, 40.0f };
    for (int i = 0; i < n; i++) {
        if (kind < 6)
            xs[i] = scales[kind] * t_gauss(r);
        else if (kind == 6)
            xs[i] = -110.0f + 210.0f * (float)i / (float)n;
        else
            xs[i] = special[(i * 7 + (int)(t_next(r) % 3)) % ns];
        gs[i] = t_gauss(r);
    }
    return n;
}

static void test_variant(const char *variant, int W, long *libm_diff, long *total)
{
    static const int lens[] = { 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 23, 24, 31, 32, 33, 40, 255, 256,
                                1000, 4096 };
    const char *ops[] = { "silu", "swiglu", "softmax" };
    for (int op = 0; op < 3; op++) {
        char name[96];
        snprintf(name, sizeof name, "gexp_%s_%s", ops[op], variant);
        t_rng r = t_rng_named(name);
        long bad = 0, cases = 0;
        char first[200] = "";
        for (int kind = 0; kind < 8; kind++)
            for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
                const int n = make_row(&r, kind, lens[li]);
                float mx = -INFINITY;
                for (int i = 0; i < n; i++)
                    mx = xs[i] > mx ? xs[i] : mx;
                if (op == OP_SOFTMAX && (kind == 7 || !isfinite(mx)))
                    continue;   /* ggml's softmax rows hold finite scores or -inf */
                if (op == OP_SILU)
                    g_silu(n, want, xs);
                else if (op == OP_SWIGLU)
                    g_swiglu(n, want, xs, gs);
                else
                    (void)g_softmax(n, want, xs, mx);
                row_q36(op, W, n, xs, gs, mx, got);
                for (int i = 0; i < n; i++) {
                    cases++;
                    if (!same_bits(got[i], want[i]) && bad++ == 0)
                        snprintf(first, sizeof first, "row kind %d n %d [%d]: x %a: q36 %a ggml %a",
                                 kind, n, i, xs[i], got[i], want[i]);
                    if (op == OP_SILU && kind < 7) {
                        const float l = xs[i] / (1.0f + expf(-xs[i]));
                        *libm_diff += !same_bits(l, want[i]);
                        (*total)++;
                    }
                }
            }
        t_check(name, bad == 0, "%ld of %ld elements differ; first: %s", bad, cases, first);
    }
}

int main(void)
{
    char why[1200];
    const char *const *variants = t_ggml_variants;
    const int nv = T_GGML_N_VARIANTS;
    long libm_diff = 0, total = 0;
    int ran = 0;
    for (int v = 0; v < nv; v++) {
        const int W = !strcmp(variants[v], "haswell") || !strcmp(variants[v], "alderlake") ? 8 : 16;
        const int rc = load_variant(variants[v], why, sizeof why);
        if (rc < 0) {
            t_fail("gexp_load", "%s", why);
            return t_exit();
        }
        if (rc == 0 || cpu_vexp_level() < (W == 16 ? 2 : 1))
            continue;
        test_variant(variants[v], W, &libm_diff, &total);
        ran++;
    }
    t_check("gexp_load", ran > 0, "this CPU runs no x86 variant with AVX2");
    t_check("gexp_differs_from_libm", libm_diff > 0,
            "the lane SiLU equals libm's on every one of %ld inputs", total);
    printf("# lane SiLU != libm SiLU on %ld of %ld finite inputs\n", libm_diff, total);
    return t_exit();
}
