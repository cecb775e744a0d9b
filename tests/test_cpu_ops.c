/* test_cpu_ops.c: the CPU backend's activations (SiLU, sigmoid, SwiGLU,
 * whose exps come from the vector expf of cpu_vexp.h) and its RMS and L2
 * norms, split over rows by the pool, against plain scalar references
 * written here with libm's expf and the float recipe the backend
 * documents (src/backend/cpu/cpu_ops.c): the bits must be equal, on 1 and
 * 3 threads, for one token (the decode case, run on the caller) and for
 * prompts of odd sizes, at real widths (1024, 2048, 3584) and tail widths
 * (1, 31, 33, 255, 257), with inputs that reach exp's overflow and
 * underflow (|x| up to 120); and each vector level of the activation rows
 * (plain C, AVX2, AVX-512) alone. */
#include "test.h"

#include <math.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_vexp.h"

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
            for (int64_t c = 0; c < cols; c++) yr[c] = gr[c] / (1.0f + expf(-gr[c]));
            break;
        case OP_SIGMOID:
            for (int64_t c = 0; c < cols; c++) yr[c] = 1.0f / (1.0f + expf(-gr[c]));
            break;
        case OP_SWIGLU:
            for (int64_t c = 0; c < cols; c++) yr[c] = gr[c] / (1.0f + expf(-gr[c])) * ur[c];
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
        if (memcmp(&got[i], &want[i], 4) != 0 && !(isnan(got[i]) && isnan(want[i])))
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
                if (level == 1)
                    t_fail(name, "this CPU has no AVX2+FMA: the level cannot be checked");
                else
                    printf("# %s: the CPU lacks the level\n", name);
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
                ref(op, g, u, NULL, 1, n, n, want);
                cpu_act_row_level(op, level, n, g, op == OP_SWIGLU ? u : NULL, got);
                for (int64_t i = 0; i < n && !why; i++)
                    if (memcmp(&got[i], &want[i], 4) != 0 && !(isnan(got[i]) && isnan(want[i]))) {
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
static void test_norm_levels(void)
{
    static const int64_t groups[] = { 1, 3, 7, 8, 9, 17, 64, 100, 128, 256, 1024 };
    static const int64_t rowss[] = { 1, 2, 3, 7, 8, 9, 15, 16, 17, 37 };
    static const int64_t gprs[] = { 1, 2, 3, 7, 8, 9, 15, 16, 17, 32, 40 };
    if (cpu_vexp_level() < 2) {
        printf("# cpu_ops.norm_levels: the CPU lacks AVX-512\n");
        return;
    }
    for (size_t a = 0; a < sizeof groups / sizeof *groups; a++) {
        const int64_t group = groups[a];
        char name[96];
        snprintf(name, sizeof name, "cpu_ops.norm_avx512_g%lld", (long long)group);
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
                cpu_norm_rows_level(2, rows, cols, group, variant == 3 ? got : x, ld, wp, eps,
                                    post, got, ld);
                const int64_t nq = rows * gprs[c];
                double *s0 = malloc(sizeof(double) * (size_t)nq), *s2 = malloc(sizeof(double) * (size_t)nq);
                cpu_norm_sums_level(0, rows, cols, group, x, ld, s0);
                cpu_norm_sums_level(2, rows, cols, group, x, ld, s2);
                for (int64_t q = 0; q < nq && !why; q++)
                    if (memcmp(&s0[q], &s2[q], 8) != 0 && !(isnan(s0[q]) && isnan(s2[q]))) {
                        snprintf(buf, sizeof buf, "%lld rows x %lld groups: sum %lld: %a, "
                                 "reference %a", (long long)rows, (long long)gprs[c],
                                 (long long)q, s2[q], s0[q]);
                        why = buf;
                    }
                free(s0); free(s2);
                for (size_t i = 0; i < n && !why; i++)
                    if (memcmp(&got[i], &want[i], 4) != 0 && !(isnan(got[i]) && isnan(want[i]))) {
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

int main(void)
{
    test_levels();
    test_norm_levels();
    static const int64_t rows[] = { 1, 5, 33, 64 };
    static const int64_t cols[] = { 1, 31, 33, 255, 257, 1024, 2048, 3584 };
    for (int nt = 1; nt <= 3; nt += 2) {
        be_ctx *be = NULL;
        q36_err err = { 0 };
        if (be_cpu_new(nt, &be, &err) != 0) {
            t_fail("cpu_ops.context", "be_cpu_new(%d) failed", nt);
            continue;
        }
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
