/* cpu_norm.c: the CPU backend's RMS and L2 norms over groups of a row
 * (whole rows for the hidden state, heads for q/k and DeltaNet). ggml's
 * recipe (MODEL.md §9.1): each group's float squares are summed one after
 * another in double, mean = (float)(sum / n), scale = 1 / sqrtf(mean +
 * eps), y = x * scale * w, then * post for the L2 norm.
 *
 * That sum is a chain of dependent double adds, one per element, which
 * bounds the plain loop. The AVX-512 kernel keeps every group's chain in
 * order but runs 16 groups at once, one per double lane of two registers:
 * it loads 8 floats of each of 8 groups, squares them (the same float
 * multiply), transposes the 8x8 block so that a register holds element i
 * of the 8 groups, widens it to doubles and adds it to the group sums, i
 * ascending. Groups are taken across rows, so a prompt's rows with one
 * group each (the hidden-state norm) and one token's many heads both fill
 * the lanes. The scale and multiply pass is element-wise, the same float
 * operations in the same order in vector registers. The AVX2 kernel is the
 * same with 16 groups in four 4-double registers (under
 * Q36_QUANT_PATH_MAX=avx2 the norms had run the plain loop: 0.05 ms per
 * prompt token each for the RMS and L2 norms of the 0.8B file, twice the
 * AVX-512 kernel's). */
#include "cpu_internal.h"
#include "cpu.h"
#include "cpu_ops.h"
#include "cpu_vexp.h"

#include <assert.h>
#include <math.h>
#include <string.h>

typedef struct {
    int64_t      rows, cols, group, ldx, ldy;
    const float *x, *w;        /* w per group element, or NULL */
    float        eps, post;    /* post: a scale applied after (1 = none) */
    float       *y;
    int          level;
} norm_job;

static inline float norm_scale(double sum, int64_t group, float eps)
{
    const float mean = (float)(sum / (double)group);
    return 1.0f / sqrtf(mean + eps);
}

/* where group q (of gpr per row) starts in rows ld floats apart */
static inline int64_t group_off(int64_t ld, int64_t gpr, int64_t group, int64_t q)
{
    return (q / gpr) * ld + (q % gpr) * group;
}

/* the squares of x[0..n) summed in order in double, added to sum */
static inline double sumsq_ref(double sum, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        sum += (double)(x[i] * x[i]);
    return sum;
}

/* the plain reference: rows r0..r1 one group after another (inlined into
 * the AVX-512 kernel for single groups, so that it runs VEX-encoded there:
 * legacy-SSE code after AVX-512 code with dirty upper halves runs slower) */
static inline __attribute__((always_inline)) void norm_rows_ref(const norm_job *j, int64_t r0,
                                                                int64_t r1)
{
    const int64_t group = j->group, cols = j->cols;
    const float *wd = j->w;
    for (int64_t r = r0; r < r1; r++) {
        const float *xr = j->x + r * j->ldx;
        float *yr = j->y + r * j->ldy;
        for (int64_t g0 = 0; g0 < cols; g0 += group) {
            const float scale = norm_scale(sumsq_ref(0.0, xr + g0, group), group, j->eps);
            if (wd)
                for (int64_t i = 0; i < group; i++)
                    yr[g0 + i] = xr[g0 + i] * scale * wd[i];
            else
                for (int64_t i = 0; i < group; i++)
                    yr[g0 + i] = xr[g0 + i] * scale;
        }
        if (j->post != 1.0f)
            for (int64_t c = 0; c < cols; c++)
                yr[c] *= j->post;
    }
}

/* y[i] = x[i] * scale (* w[i]) (* post) for i in [i0, n): the vector
 * kernels' last columns, in their order of roundings */
static inline __attribute__((always_inline)) void apply_tail(int64_t i0, int64_t n,
                                                             const float *x, float scale,
                                                             const float *w, float post, float *y)
{
    for (int64_t i = i0; i < n; i++) {
        float v = x[i] * scale;
        if (w)
            v *= w[i];
        if (post != 1.0f)
            v *= post;
        y[i] = v;
    }
}

#if defined(__x86_64__)
#define NORM_AVX512 __attribute__((target("avx2,fma,avx512f,avx512dq")))
#define NORM_LANES 16   /* groups at once: two registers of 8 double sums */

/* acc += the squares of x[0..7][i..i+8), element i first: 8 rows of 8
 * squares transposed so that one register holds element i of the 8 */
NORM_AVX512 static inline __m512d sumsq_step(const float *const *x, int64_t i, __m512d acc)
{
#define SQ(k) _mm256_mul_ps(_mm256_loadu_ps(x[k] + i), _mm256_loadu_ps(x[k] + i))
    const __m256 r0 = SQ(0), r1 = SQ(1), r2 = SQ(2), r3 = SQ(3);
    const __m256 r4 = SQ(4), r5 = SQ(5), r6 = SQ(6), r7 = SQ(7);
#undef SQ
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
#define ADD(a, b, sel) acc = _mm512_add_pd(acc, _mm512_cvtps_pd(_mm256_permute2f128_ps(a, b, sel)))
    ADD(u0, u4, 0x20); ADD(u1, u5, 0x20); ADD(u2, u6, 0x20); ADD(u3, u7, 0x20);
    ADD(u0, u4, 0x31); ADD(u1, u5, 0x31); ADD(u2, u6, 0x31); ADD(u3, u7, 0x31);
#undef ADD
    return acc;
}

/* sum[k] of the squares of the group at x[k], k < 8 * nreg, each in order */
NORM_AVX512 static void sums_avx512(int nreg, const float *const *x, int64_t group, double *sum)
{
    __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
    const int64_t n8 = group & ~(int64_t)7;
    if (nreg == 2)
        for (int64_t i = 0; i < n8; i += 8) {
            acc0 = sumsq_step(x, i, acc0);
            acc1 = sumsq_step(x + 8, i, acc1);
        }
    else
        for (int64_t i = 0; i < n8; i += 8)
            acc0 = sumsq_step(x, i, acc0);
    _mm512_storeu_pd(sum, acc0);
    _mm512_storeu_pd(sum + 8, acc1);
    for (int b = 0; b < nreg; b++) {
        for (int k = 8 * b; k < 8 * b + 8; k++)
            sum[k] = sumsq_ref(sum[k], x[k] + n8, group - n8);
    }
}

/* norm_scale of 8 sums at once */
NORM_AVX512 static void scales_avx512(const double *sum, int64_t group, float eps, float *scale)
{
    const __m256 mean = _mm512_cvtpd_ps(_mm512_div_pd(_mm512_loadu_pd(sum),
                                                      _mm512_set1_pd((double)group)));
    _mm256_storeu_ps(scale, _mm256_div_ps(_mm256_set1_ps(1.0f),
                                          _mm256_sqrt_ps(_mm256_add_ps(mean, _mm256_set1_ps(eps)))));
}

/* x[k] for groups q..q+nb, the spare lanes up to NORM_LANES repeating the first */
static void group_ptrs(const float *x, int64_t ld, int64_t gpr, int64_t group, int64_t q, int nb,
                       const float **xp)
{
    for (int k = 0; k < NORM_LANES; k++)
        xp[k] = x + group_off(ld, gpr, group, q + (k < nb ? k : 0));
}

/* y = x * scale (* w) (* post) over one group */
NORM_AVX512 static void apply_avx512(int64_t n, const float *x, float scale, const float *w,
                                     float post, float *y)
{
    const __m512 s = _mm512_set1_ps(scale), p = _mm512_set1_ps(post);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + i), s);
        if (w)
            v = _mm512_mul_ps(v, _mm512_loadu_ps(w + i));
        if (post != 1.0f)
            v = _mm512_mul_ps(v, p);
        _mm512_storeu_ps(y + i, v);
    }
    apply_tail(i, n, x, scale, w, post, y);
}

/* rows r0..r1 NORM_LANES groups at a time, the groups taken across rows */
NORM_AVX512 static void norm_rows_avx512(const norm_job *j, int64_t r0, int64_t r1)
{
    const int64_t group = j->group, gpr = j->cols / group, q1 = r1 * gpr;
    for (int64_t q = r0 * gpr; q < q1;) {
        const int nb = q1 - q < NORM_LANES ? (int)(q1 - q) : NORM_LANES;
        if (nb == 1) {      /* one chain: no lanes to fill */
            norm_rows_ref(j, q / gpr, q / gpr + 1);
            q++;
            continue;
        }
        const float *x[NORM_LANES];
        double sum[NORM_LANES];
        float scale[NORM_LANES];
        group_ptrs(j->x, j->ldx, gpr, group, q, nb, x);
        sums_avx512(nb > 8 ? 2 : 1, x, group, sum);
        for (int b = 0; 8 * b < nb; b++)
            scales_avx512(sum + 8 * b, group, j->eps, scale + 8 * b);
        for (int k = 0; k < nb; k++)
            apply_avx512(group, x[k], scale[k], j->w, j->post,
                         j->y + group_off(j->ldy, gpr, group, q + k));
        q += nb;
    }
}
#endif

#if defined(__x86_64__)
/* The same kernel with AVX2: a group's sum is a double lane of one of four
 * 4-lane registers (16 groups at once), the 8x8 transpose the AVX-512
 * one's, each element's 8 squares going to two registers in two halves. */
#define NORM_AVX2 __attribute__((target("avx2,fma")))

/* lo (groups 0-3) and hi (groups 4-7) += the squares of x[0..7][i..i+8),
 * element i first */
NORM_AVX2 static inline void sumsq_step8(const float *const *x, int64_t i, __m256d *lo,
                                         __m256d *hi)
{
#define SQ(k) _mm256_mul_ps(_mm256_loadu_ps(x[k] + i), _mm256_loadu_ps(x[k] + i))
    const __m256 r0 = SQ(0), r1 = SQ(1), r2 = SQ(2), r3 = SQ(3);
    const __m256 r4 = SQ(4), r5 = SQ(5), r6 = SQ(6), r7 = SQ(7);
#undef SQ
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    /* u[e], 128-bit half h: element e + 4h of groups 0-3; v[e]: of 4-7 */
    const __m256 u[4] = { _mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xEE),
                          _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xEE) };
    const __m256 v[4] = { _mm256_shuffle_ps(t4, t6, 0x44), _mm256_shuffle_ps(t4, t6, 0xEE),
                          _mm256_shuffle_ps(t5, t7, 0x44), _mm256_shuffle_ps(t5, t7, 0xEE) };
    for (int e = 0; e < 4; e++) {
        *lo = _mm256_add_pd(*lo, _mm256_cvtps_pd(_mm256_castps256_ps128(u[e])));
        *hi = _mm256_add_pd(*hi, _mm256_cvtps_pd(_mm256_castps256_ps128(v[e])));
    }
    for (int e = 0; e < 4; e++) {
        *lo = _mm256_add_pd(*lo, _mm256_cvtps_pd(_mm256_extractf128_ps(u[e], 1)));
        *hi = _mm256_add_pd(*hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v[e], 1)));
    }
}

/* sum[k] of the squares of the group at x[k], k < 8 * nreg, each in order */
NORM_AVX2 static void sums_avx2(int nreg, const float *const *x, int64_t group, double *sum)
{
    __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
    __m256d a2 = _mm256_setzero_pd(), a3 = _mm256_setzero_pd();
    const int64_t n8 = group & ~(int64_t)7;
    if (nreg == 2)
        for (int64_t i = 0; i < n8; i += 8) {
            sumsq_step8(x, i, &a0, &a1);
            sumsq_step8(x + 8, i, &a2, &a3);
        }
    else
        for (int64_t i = 0; i < n8; i += 8)
            sumsq_step8(x, i, &a0, &a1);
    _mm256_storeu_pd(sum, a0);
    _mm256_storeu_pd(sum + 4, a1);
    _mm256_storeu_pd(sum + 8, a2);
    _mm256_storeu_pd(sum + 12, a3);
    for (int k = 0; k < 8 * nreg; k++)
        sum[k] = sumsq_ref(sum[k], x[k] + n8, group - n8);
}

/* y = x * scale (* w) (* post) over one group */
NORM_AVX2 static void apply_avx2(int64_t n, const float *x, float scale, const float *w,
                                 float post, float *y)
{
    const __m256 s = _mm256_set1_ps(scale), p = _mm256_set1_ps(post);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), s);
        if (w)
            v = _mm256_mul_ps(v, _mm256_loadu_ps(w + i));
        if (post != 1.0f)
            v = _mm256_mul_ps(v, p);
        _mm256_storeu_ps(y + i, v);
    }
    apply_tail(i, n, x, scale, w, post, y);
}

/* rows r0..r1 NORM_LANES groups at a time, the groups taken across rows */
NORM_AVX2 static void norm_rows_avx2(const norm_job *j, int64_t r0, int64_t r1)
{
    const int64_t group = j->group, gpr = j->cols / group, q1 = r1 * gpr;
    for (int64_t q = r0 * gpr; q < q1;) {
        const int nb = q1 - q < NORM_LANES ? (int)(q1 - q) : NORM_LANES;
        if (nb == 1) {      /* one chain: no lanes to fill */
            norm_rows_ref(j, q / gpr, q / gpr + 1);
            q++;
            continue;
        }
        const float *x[NORM_LANES];
        double sum[NORM_LANES];
        group_ptrs(j->x, j->ldx, gpr, group, q, nb, x);
        sums_avx2(nb > 8 ? 2 : 1, x, group, sum);
        for (int k = 0; k < nb; k++)
            apply_avx2(group, x[k], norm_scale(sum[k], group, j->eps), j->w, j->post,
                       j->y + group_off(j->ldy, gpr, group, q + k));
        q += nb;
    }
}
#endif

static void norm_task(void *arg, int64_t r0, int64_t r1, int tid)
{
    (void)tid;
    const norm_job *j = arg;
#if defined(__x86_64__)
    if (j->level == 2) {
        norm_rows_avx512(j, r0, r1);
        return;
    }
    if (j->level == 1) {
        norm_rows_avx2(j, r0, r1);
        return;
    }
#endif
    norm_rows_ref(j, r0, r1);
}

static norm_job norm_job_of(int level, int64_t rows, int64_t cols, int64_t group, const float *x,
                            int64_t ldx, const float *w, float eps, float post, float *y,
                            int64_t ldy)
{
    assert(group > 0 && cols % group == 0);
    const int cap = cpu_vexp_level();
    return (norm_job){ .rows = rows, .cols = cols, .group = group, .ldx = ldx, .ldy = ldy,
                       .x = x, .w = w, .eps = eps, .post = post, .y = y,
                       .level = level < cap ? level : cap };
}

void cpu_norm_rows_level(int level, int64_t rows, int64_t cols, int64_t group, const float *x,
                         int64_t ldx, const float *w, float eps, float post, float *y,
                         int64_t ldy)
{
    const norm_job j = norm_job_of(level, rows, cols, group, x, ldx, w, eps, post, y, ldy);
    norm_task((void *)&j, 0, rows, 0);
}

void cpu_norm_sums_level(int level, int64_t rows, int64_t cols, int64_t group, const float *x,
                         int64_t ldx, double *sum)
{
    assert(group > 0 && cols % group == 0);
    const int64_t gpr = cols / group, nq = rows * gpr;
#if defined(__x86_64__)
    const int lv = level < cpu_vexp_level() ? level : cpu_vexp_level();
    if (lv >= 1) {
        for (int64_t q = 0; q < nq; q += NORM_LANES) {
            const int nb = nq - q < NORM_LANES ? (int)(nq - q) : NORM_LANES;
            const float *xp[NORM_LANES];
            double s[NORM_LANES];
            group_ptrs(x, ldx, gpr, group, q, nb, xp);
            if (lv == 2)
                sums_avx512(nb > 8 ? 2 : 1, xp, group, s);
            else
                sums_avx2(nb > 8 ? 2 : 1, xp, group, s);
            memcpy(sum + q, s, sizeof(double) * (size_t)nb);
        }
        return;
    }
#endif
    (void)level;
    for (int64_t q = 0; q < nq; q++)
        sum[q] = sumsq_ref(0.0, x + group_off(ldx, gpr, group, q), group);
}

static void norm_rows(be_ctx *be, const be_tensor *x, const be_weight *w, float eps,
                      float post, int64_t group, be_tensor *y)
{
    assert(x->rows == y->rows && x->cols == y->cols && !x->f16 && !y->f16);
    const float *wd = NULL;
    if (w) {
        assert(w->type == 0 /* F32 */ && (int64_t)w->t->ne[0] == group);
        wd = w->t->data;
    }
    norm_job j = norm_job_of(2, x->rows, x->cols, group, x->data, x->ld, wd, eps, post, y->data,
                             y->ld);
    cpu_for(be, x->rows, cpu_row_grain(x->cols), norm_task, &j);
}

void cpu_rms_norm(be_ctx *be, const be_tensor *x, const be_weight *w, float eps,
                 int64_t group, be_tensor *y)
{
    CPU_PROF_BEGIN(be);
    norm_rows(be, x, w, eps, 1.0f, group, y);
    CPU_PROF_END(be, BE_PROF_RMS_NORM);
}

/* ggml's l2 norm as an RMS norm with eps/n, then scaled by 1/sqrt(n) */
void cpu_l2_norm(be_ctx *be, const be_tensor *x, float eps, int64_t group, be_tensor *y)
{
    CPU_PROF_BEGIN(be);
    const float n = (float)group;
    norm_rows(be, x, NULL, eps / n, 1.0f / sqrtf(n), group, y);
    CPU_PROF_END(be, BE_PROF_L2_NORM);
}
