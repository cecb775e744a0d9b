/* test_cpu_ops.c: the CPU backend's activations (SiLU, sigmoid, SwiGLU,
 * whose exps come from the vector expf of cpu_vexp.h), its RMS and L2
 * norms (cpu_norm.c), add, mul, mul_col and the DeltaNet gates, split over
 * rows by the pool, against plain scalar references written here with
 * libm's expf/logf and the float recipe the backend documents
 * (src/backend/cpu/cpu_ops.c, cpu_norm.c): the bits must be equal, on 1
 * and 3 threads, for one token (the decode case, run on the caller) and
 * for prompts of odd sizes, at real widths (1024, 2048, 3584) and tail
 * widths (1, 31, 33, 255, 257), with inputs that reach exp's overflow and
 * underflow (|x| up to 120); each vector level of the activation rows
 * (plain C, AVX2, AVX-512) alone; and the AVX-512 and AVX2 norm kernels
 * against the plain one, their double sums included. */
#include "test.h"

#include <math.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_gexp.h"
#include "backend/cpu/cpu_vexp.h"

/* the same float bits, any NaN matching any NaN */
static bool same_f(float a, float b)
{
    return memcmp(&a, &b, 4) == 0 || (isnan(a) && isnan(b));
}

static void fill(t_rng *r, float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        const uint64_t k = t_next(r) % 50;
        x[i] = k == 0 ? 120.0f * (t_uniform(r) - 0.5f) * 2.0f   /* exp over/underflow */
             : k == 1 ? 0.0f
             : 4.0f * t_gauss(r);
    }
}

enum { OP_SILU, OP_SIGMOID, OP_SWIGLU, OP_RMS, OP_RMS_W, OP_L2, OP_COUNT };
static const char *op_name[OP_COUNT] = { "silu", "sigmoid", "swiglu", "rms_norm", "rms_norm_w",
                                         "l2_norm" };

static void norm_ref(const float *x, const float *w, float eps, float post, int64_t cols,
                     int64_t group, float *y)
{
    for (int64_t g0 = 0; g0 < cols; g0 += group) {
        double sum = 0.0;
        for (int64_t i = 0; i < group; i++)
            sum += (double)(x[g0 + i] * x[g0 + i]);
        const float mean = (float)(sum / (double)group);
        const float scale = 1.0f / sqrtf(mean + eps);
        for (int64_t i = 0; i < group; i++)
            y[g0 + i] = w ? x[g0 + i] * scale * w[i] : x[g0 + i] * scale;
    }
    if (post != 1.0f)
        for (int64_t c = 0; c < cols; c++)
            y[c] *= post;
}

/* SiLU (u NULL) or SwiGLU of one row as llama.cpp's x86 builds run it
 * (ggml_vec_silu_f32 / ggml_vec_swiglu_f32): full vectors of the vector
 * level's width through ggml's lane exp (cpu_gexp.h, checked against
 * libggml-cpu itself by test_ggml_gexp), the tail through libm's expf;
 * level 0 (no AVX2) is libm throughout */
#if defined(__x86_64__)
CPU_GEXP_AVX512 static int64_t silu_lanes16(int64_t n, const float *g, const float *u, float *y)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 r = cpu_gsilu_avx512(_mm512_loadu_ps(g + i));
        if (u)
            r = _mm512_mul_ps(r, _mm512_loadu_ps(u + i));
        _mm512_storeu_ps(y + i, r);
    }
    return i;
}

CPU_GEXP_AVX2 static int64_t silu_lanes8(int64_t n, const float *g, const float *u, float *y)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 r = cpu_gsilu_avx2(_mm256_loadu_ps(g + i));
        if (u)
            r = _mm256_mul_ps(r, _mm256_loadu_ps(u + i));
        _mm256_storeu_ps(y + i, r);
    }
    return i;
}
#endif

static int ref_level = -1;      /* the act level ref() reproduces; -1: this CPU's */

static void silu_row_ref(int64_t n, const float *g, const float *u, float *y)
{
    const int level = ref_level >= 0 ? ref_level : cpu_vexp_level();
    int64_t i = 0;
#if defined(__x86_64__)
    i = level == 2 ? silu_lanes16(n, g, u, y) : level == 1 ? silu_lanes8(n, g, u, y) : 0;
#else
    (void)level;
#endif
    for (; i < n; i++)
        y[i] = u ? g[i] / (1.0f + expf(-g[i])) * u[i] : g[i] / (1.0f + expf(-g[i]));
}

/* the reference of op on rows x cols */
static void ref(int op, const float *g, const float *u, const float *w, int64_t rows,
                int64_t cols, int64_t group, float *y)
{
    const float eps = 1e-6f;
    for (int64_t r = 0; r < rows; r++) {
        const float *gr = g + r * cols, *ur = u + r * cols;
        float *yr = y + r * cols;
        switch (op) {
        case OP_SILU:
            silu_row_ref(cols, gr, NULL, yr);
            break;
        case OP_SIGMOID:
            for (int64_t c = 0; c < cols; c++) yr[c] = 1.0f / (1.0f + expf(-gr[c]));
            break;
        case OP_SWIGLU:
            silu_row_ref(cols, gr, ur, yr);
            break;
        case OP_RMS: norm_ref(gr, NULL, eps, 1.0f, cols, group, yr); break;
        case OP_RMS_W: norm_ref(gr, w, eps, 1.0f, cols, group, yr); break;
        case OP_L2:
            norm_ref(gr, NULL, eps / (float)group, 1.0f / sqrtf((float)group), cols, group, yr);
            break;
        }
    }
}

static void run_case(be_ctx *be, int nt, int op, int64_t rows, int64_t cols, int64_t group)
{
    char name[128];
    snprintf(name, sizeof name, "cpu_ops.%s_t%d_%lldx%lld_g%lld", op_name[op], nt,
             (long long)rows, (long long)cols, (long long)group);
    t_rng r = t_rng_named(name);
    const int64_t n = rows * cols;
    float *g = malloc(sizeof(float) * (size_t)n), *u = malloc(sizeof(float) * (size_t)n);
    float *want = malloc(sizeof(float) * (size_t)n), *got = malloc(sizeof(float) * (size_t)n);
    float *w = malloc(sizeof(float) * (size_t)group);
    fill(&r, g, n);
    fill(&r, u, n);
    for (int64_t i = 0; i < group; i++)
        w[i] = 1.0f + 0.25f * t_gauss(&r);
    ref(op, g, u, w, rows, cols, group, want);

    /* a weight of `group` f32 values, bound the way the model binds one */
    gguf_tensor wt = { .name = "w", .type = 0, .n_dims = 1, .ne = { (uint64_t)group, 1, 1, 1 },
                       .nbytes = (uint64_t)group * 4, .data = w };
    be_weight *bw = NULL;
    if (op == OP_RMS_W && be_weight_bind(be, &wt, &bw, NULL) != 0) {
        t_fail(name, "be_weight_bind failed");
        goto done;
    }
    be_tensor *gt = be_tensor_new(be, rows, cols), *ut = be_tensor_new(be, rows, cols);
    be_tensor *yt = be_tensor_new(be, rows, cols);
    be_write(be, gt, 0, rows, g);
    be_write(be, ut, 0, rows, u);
    switch (op) {
    case OP_SILU: be_silu(be, gt, yt); break;
    case OP_SIGMOID: be_sigmoid(be, gt, yt); break;
    case OP_SWIGLU: be_swiglu(be, gt, ut, yt); break;
    case OP_RMS: be_rms_norm(be, gt, NULL, 1e-6f, group, yt); break;
    case OP_RMS_W: be_rms_norm(be, gt, bw, 1e-6f, group, yt); break;
    case OP_L2: be_l2_norm(be, gt, 1e-6f, group, yt); break;
    }
    be_read(be, yt, 0, rows, got);
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++)
        if (!same_f(got[i], want[i]))
            bad = i;
    if (bad < 0)
        t_ok(name);
    else
        t_fail(name, "element %lld (x %a): %a, reference %a", (long long)bad, (double)g[bad],
               (double)got[bad], (double)want[bad]);
    be_tensor_free(be, gt);
    be_tensor_free(be, ut);
    be_tensor_free(be, yt);
done:
    free(g); free(u); free(want); free(got); free(w);
}

/* Each vector level of the activation rows (plain C, AVX2, AVX-512) against
 * the reference, at the tail widths, where the vector loops hand over to
 * their scalar tails. */
static void test_levels(void)
{
    static const int64_t cols[] = { 1, 7, 8, 9, 15, 16, 17, 31, 33, 255, 257, 3584 };
    for (int level = 0; level <= 2; level++)
        for (int op = OP_SILU; op <= OP_SWIGLU; op++) {
            char name[96];
            snprintf(name, sizeof name, "cpu_ops.%s_level%d", op_name[op], level);
            if (level > cpu_vexp_level()) {
                t_skip(name, level == 1 ? "this CPU has no AVX2+FMA" : "this CPU has no AVX-512 F/DQ");
                continue;
            }
            const char *why = NULL;
            static char buf[160];
            for (size_t b = 0; b < sizeof cols / sizeof *cols && !why; b++) {
                const int64_t n = cols[b];
                t_rng r = t_rng_named(name);
                float *g = malloc(sizeof(float) * (size_t)n), *u = malloc(sizeof(float) * (size_t)n);
                float *want = malloc(sizeof(float) * (size_t)n), *got = malloc(sizeof(float) * (size_t)n);
                fill(&r, g, n);
                fill(&r, u, n);
                ref_level = level;
                ref(op, g, u, NULL, 1, n, n, want);
                ref_level = -1;
                cpu_act_row_level(op, level, n, g, op == OP_SWIGLU ? u : NULL, got);
                for (int64_t i = 0; i < n && !why; i++)
                    if (!same_f(got[i], want[i])) {
                        snprintf(buf, sizeof buf, "width %lld element %lld (x %a): %a, reference %a",
                                 (long long)n, (long long)i, (double)g[i], (double)got[i],
                                 (double)want[i]);
                        why = buf;
                    }
                free(g); free(u); free(want); free(got);
            }
            t_check(name, !why, "%s", why);
        }
}

/* values for the norm kernels: Gaussian at a per-row scale from 1e-20 to
 * 1e20 (squares near float's underflow and overflow), a third of them
 * shrunk by up to 1e-9 (squares too small for the double sum to hold
 * whole, so the order of the adds shows in the bits), with zeros,
 * subnormals and single huge or tiny values mixed in */
static void fill_norm(t_rng *r, float *x, int64_t rows, int64_t ld, int64_t cols)
{
    static const float scales[] = { 1.0f, 1e-20f, 1e20f, 3e-3f, 40.0f, 1.0f, 1.0f };
    for (int64_t i = 0; i < rows; i++) {
        const float sc = scales[t_next(r) % (sizeof scales / sizeof *scales)];
        for (int64_t c = 0; c < ld; c++) {
            const uint64_t k = t_next(r) % 200;
            x[i * ld + c] = k == 0 ? 1e30f * (t_uniform(r) - 0.5f)
                          : k == 1 ? 1e-30f * t_gauss(r)
                          : k == 2 ? 0x1p-140f * t_gauss(r)
                          : k == 3 ? 0.0f
                          : k < 70 ? sc * t_gauss(r) * powf(10.0f, -9.0f * t_uniform(r))
                          : sc * t_gauss(r);
        }
    }
}

/* The AVX-512 norm kernel (16 groups at once, across rows) against the
 * plain C reference, on group sizes of the models (64, 128, 256, 1024) and
 * odd ones, 1..37 rows of 1..40 groups, with and without weight and post
 * scale, rows apart by more than their width, and in place: the double
 * sums of squares (where a change in the order of the adds shows; the
 * float mean rounds most of it away) and the outputs. */
static void test_norm_level(int level)
{
    static const int64_t groups[] = { 1, 3, 7, 8, 9, 17, 64, 100, 128, 256, 1024 };
    static const int64_t rowss[] = { 1, 2, 3, 7, 8, 9, 15, 16, 17, 37 };
    static const int64_t gprs[] = { 1, 2, 3, 7, 8, 9, 15, 16, 17, 32, 40 };
    if (cpu_vexp_level() < level) {
        t_skip(level == 2 ? "cpu_ops.norm_avx512" : "cpu_ops.norm_avx2",
               level == 2 ? "this CPU has no AVX-512 F/DQ" : "this CPU has no AVX2+FMA");
        return;
    }
    for (size_t a = 0; a < sizeof groups / sizeof *groups; a++) {
        const int64_t group = groups[a];
        char name[96];
        snprintf(name, sizeof name, "cpu_ops.norm_%s_g%lld", level == 2 ? "avx512" : "avx2",
                 (long long)group);
        t_rng r = t_rng_named(name);
        const char *why = NULL;
        static char buf[256];
        int cases = 0;
        for (size_t b = 0; b < sizeof rowss / sizeof *rowss && !why; b++)
            for (size_t c = 0; c < sizeof gprs / sizeof *gprs && !why; c++) {
                const int64_t rows = rowss[b], cols = gprs[c] * group;
                if (rows * cols > (1 << 20))
                    continue;
                const int variant = cases++ % 4;   /* weight, post, padding, in place */
                const int64_t ld = cols + (variant == 2 ? 5 : 0);
                const size_t n = (size_t)(rows * ld);
                float *x = malloc(sizeof(float) * n), *w = malloc(sizeof(float) * (size_t)group);
                float *want = malloc(sizeof(float) * n), *got = malloc(sizeof(float) * n);
                fill_norm(&r, x, rows, ld, cols);
                for (int64_t i = 0; i < group; i++)
                    w[i] = 1.0f + 0.25f * t_gauss(&r);
                memcpy(want, x, sizeof(float) * n);
                memcpy(got, x, sizeof(float) * n);
                const float *wp = variant == 0 || variant == 3 ? w : NULL;
                const float post = variant == 1 || variant == 3 ? 1.0f / sqrtf((float)group) : 1.0f;
                const float eps = variant == 1 ? 1e-6f / (float)group : 1e-6f;
                cpu_norm_rows_level(0, rows, cols, group, x, ld, wp, eps, post, want, ld);
                cpu_norm_rows_level(level, rows, cols, group, variant == 3 ? got : x, ld, wp,
                                    eps, post, got, ld);
                const int64_t nq = rows * gprs[c];
                double *s0 = malloc(sizeof(double) * (size_t)nq), *s2 = malloc(sizeof(double) * (size_t)nq);
                cpu_norm_sums_level(0, rows, cols, group, x, ld, s0);
                cpu_norm_sums_level(level, rows, cols, group, x, ld, s2);
                for (int64_t q = 0; q < nq && !why; q++)
                    if (memcmp(&s0[q], &s2[q], 8) != 0 && !(isnan(s0[q]) && isnan(s2[q]))) {
                        snprintf(buf, sizeof buf, "%lld rows x %lld groups: sum %lld: %a, "
                                 "reference %a", (long long)rows, (long long)gprs[c],
                                 (long long)q, s2[q], s0[q]);
                        why = buf;
                    }
                free(s0); free(s2);
                for (size_t i = 0; i < n && !why; i++)
                    if (!same_f(got[i], want[i])) {
                        snprintf(buf, sizeof buf, "%lld rows x %lld groups, variant %d, element "
                                 "%zu (x %a): %a, reference %a", (long long)rows,
                                 (long long)gprs[c], variant, i, (double)x[i], (double)got[i],
                                 (double)want[i]);
                        why = buf;
                    }
                free(x); free(w); free(want); free(got);
            }
        t_check(name, !why, "%s", why);
    }
}

/* add, mul and mul_col (y = a * the row's one value of s) against the
 * plain float operation, out of place and in place (y = a, y = b), on 1
 * and 3 threads, at tail widths and real ones, one row and many */
static void test_binary(be_ctx *be, int nt)
{
    static const int64_t rows[] = { 1, 5, 64 };
    static const int64_t cols[] = { 1, 15, 16, 17, 33, 257, 1024, 3584 };
    static const char *kind_name[3] = { "add", "mul", "mul_col" };
    for (int kind = 0; kind < 3; kind++)
        for (int inplace = 0; inplace < 3; inplace++) {
            char name[96];
            snprintf(name, sizeof name, "cpu_ops.%s_t%d%s", kind_name[kind], nt,
                     inplace == 1 ? "_y=a" : inplace == 2 ? "_y=b" : "");
            if (kind == 2 && inplace == 2)
                continue;
            t_rng r = t_rng_named(name);
            const char *why = NULL;
            static char buf[200];
            for (size_t a = 0; a < sizeof rows / sizeof *rows && !why; a++)
                for (size_t b = 0; b < sizeof cols / sizeof *cols && !why; b++) {
                    const int64_t R = rows[a], C = cols[b], n = R * C;
                    const int64_t bc = kind == 2 ? 1 : C;
                    float *x = malloc(sizeof(float) * (size_t)n), *z = malloc(sizeof(float) * (size_t)n);
                    float *want = malloc(sizeof(float) * (size_t)n), *got = malloc(sizeof(float) * (size_t)n);
                    fill(&r, x, n);
                    fill(&r, z, R * bc);
                    for (int64_t i = 0; i < R; i++)
                        for (int64_t c = 0; c < C; c++) {
                            const float u = x[i * C + c], v = kind == 2 ? z[i] : z[i * C + c];
                            want[i * C + c] = kind == 0 ? u + v : u * v;
                        }
                    be_tensor *at = be_tensor_new(be, R, C), *bt = be_tensor_new(be, R, bc);
                    be_tensor *yt = inplace == 1 ? at : inplace == 2 ? bt : be_tensor_new(be, R, C);
                    be_write(be, at, 0, R, x);
                    be_write(be, bt, 0, R, z);
                    if (kind == 0) be_add(be, at, bt, yt);
                    else if (kind == 1) be_mul(be, at, bt, yt);
                    else be_mul_col(be, at, bt, yt);
                    be_read(be, yt, 0, R, got);
                    for (int64_t i = 0; i < n && !why; i++)
                        if (!same_f(got[i], want[i])) {
                            snprintf(buf, sizeof buf, "%lldx%lld element %lld: %a, reference %a",
                                     (long long)R, (long long)C, (long long)i, (double)got[i],
                                     (double)want[i]);
                            why = buf;
                        }
                    if (inplace == 0)
                        be_tensor_free(be, yt);
                    be_tensor_free(be, at);
                    be_tensor_free(be, bt);
                    free(x); free(z); free(want); free(got);
                }
            t_check(name, !why, "%s", why);
        }
}

/* the DeltaNet gates against softplus and sigmoid written with libm's
 * expf and logf, at head counts 1..48 and 1..37 rows, with pre-activations
 * past softplus's switch at 20 and exp's over/underflow */
static void test_gates(be_ctx *be, int nt)
{
    static const int64_t heads[] = { 1, 15, 16, 17, 32, 48 };
    static const int64_t rows[] = { 1, 7, 37, 300 };
    char name[64];
    snprintf(name, sizeof name, "cpu_ops.deltanet_gates_t%d", nt);
    t_rng r = t_rng_named(name);
    const char *why = NULL;
    static char buf[200];
    for (size_t a = 0; a < sizeof heads / sizeof *heads && !why; a++)
        for (size_t b = 0; b < sizeof rows / sizeof *rows && !why; b++) {
            const int64_t H = heads[a], R = rows[b], n = H * R;
            float *al = malloc(sizeof(float) * (size_t)n), *bi = malloc(sizeof(float) * (size_t)n);
            float *g = malloc(sizeof(float) * (size_t)n), *beta = malloc(sizeof(float) * (size_t)n);
            float *dt = malloc(sizeof(float) * (size_t)H), *av = malloc(sizeof(float) * (size_t)H);
            fill(&r, al, n);
            fill(&r, bi, n);
            for (int64_t h = 0; h < H; h++) {
                dt[h] = 8.0f * t_gauss(&r);
                av[h] = -expf(t_gauss(&r));
            }
            gguf_tensor t1 = { .name = "dt", .type = 0, .n_dims = 1, .ne = { (uint64_t)H, 1, 1, 1 },
                               .nbytes = (uint64_t)H * 4, .data = dt };
            gguf_tensor t2 = { .name = "a", .type = 0, .n_dims = 1, .ne = { (uint64_t)H, 1, 1, 1 },
                               .nbytes = (uint64_t)H * 4, .data = av };
            be_weight *w1 = NULL, *w2 = NULL;
            if (be_weight_bind(be, &t1, &w1, NULL) != 0 || be_weight_bind(be, &t2, &w2, NULL) != 0) {
                why = "be_weight_bind failed";
            } else {
                be_tensor *at = be_tensor_new(be, R, H), *bt = be_tensor_new(be, R, H);
                be_tensor *gt = be_tensor_new(be, R, H), *et = be_tensor_new(be, R, H);
                be_write(be, at, 0, R, al);
                be_write(be, bt, 0, R, bi);
                be_deltanet_gates(be, at, w1, w2, bt, gt, et);
                be_read(be, gt, 0, R, g);
                be_read(be, et, 0, R, beta);
                for (int64_t i = 0; i < n && !why; i++) {
                    const float x = al[i] + dt[i % H];
                    const float wg = (x > 20.0f ? x : logf(1.0f + expf(x))) * av[i % H];
                    const float wb = 1.0f / (1.0f + expf(-bi[i]));
                    if (!same_f(g[i], wg) || !same_f(beta[i], wb)) {
                        snprintf(buf, sizeof buf, "%lld heads x %lld rows, element %lld: g %a "
                                 "beta %a, reference %a %a", (long long)H, (long long)R,
                                 (long long)i, (double)g[i], (double)beta[i], (double)wg,
                                 (double)wb);
                        why = buf;
                    }
                }
                be_tensor_free(be, at);
                be_tensor_free(be, bt);
                be_tensor_free(be, gt);
                be_tensor_free(be, et);
            }
            free(al); free(bi); free(g); free(beta); free(dt); free(av);
        }
    t_check(name, !why, "%s", why);
}

int main(void)
{
    test_levels();
    test_norm_level(2);
    test_norm_level(1);
    static const int64_t rows[] = { 1, 5, 33, 64 };
    static const int64_t cols[] = { 1, 31, 33, 255, 257, 1024, 2048, 3584 };
    for (int nt = 1; nt <= 3; nt += 2) {
        be_ctx *be = NULL;
        q36_err err = { 0 };
        if (be_cpu_new(nt, &be, &err) != 0) {
            t_fail("cpu_ops.context", "be_cpu_new(%d) failed", nt);
            continue;
        }
        test_binary(be, nt);
        test_gates(be, nt);
        for (int op = 0; op < OP_COUNT; op++)
            for (size_t a = 0; a < sizeof rows / sizeof *rows; a++)
                for (size_t b = 0; b < sizeof cols / sizeof *cols; b++) {
                    int64_t group = cols[b];
                    if (op >= OP_RMS && cols[b] % 128 == 0)
                        group = 128;    /* per-head norms, as q/k norms */
                    if (op == OP_RMS && cols[b] == 1024)
                        group = 1024;
                    run_case(be, nt, op, rows[a], cols[b], group);
                }
        be_free(be);
    }
    return t_exit();
}
