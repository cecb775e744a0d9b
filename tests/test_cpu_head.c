/* test_cpu_head.c: the greedy head's screen (cpu_screen_q8.h) and
 * be_matmul_argmax on the CPU (cpu_head.c).
 *
 *  screen.bits_*:   the AVX-512 VNNI screen's approximations are the plain-C
 *                   reference's bits (odd row counts, 1-9 tokens, K 32-1024);
 *  screen.bound_*:  every approximation is within half of cpu_q8s_token's
 *                   2E of the exact kernel's output (cpu_gemm_q8_0_ref), on
 *                   random codes (-128 included) and on rows built to
 *                   make the exact sum large;
 *  head.*:          be_matmul_argmax with the screen on (from one row) gives
 *                   the ids of be_matmul then be_argmax, at 1 and 2 threads,
 *                   on random heads and on heads built to tie: equal rows
 *                   (the first wins), rows one code apart, more equal best
 *                   rows than a candidate list holds, a NaN or inf block
 *                   scale, zero and NaN activations (a NaN input quantizes
 *                   to finite codes, as in ggml); with banned ids (the built
 *                   rows among them) against the host's choice with those
 *                   at -inf, a banned answer read again from its row of y
 *                   as the contract allows. Where the CPU has
 *                   AVX-512 VNNI each case also checks that the screen ran
 *                   (or, for the cases it cannot settle, that it handed
 *                   the tokens to the full product); elsewhere that half
 *                   is a skip;
 *  head_topk.*:     be_matmul_topk against be_matmul + be_topk (columns and
 *                   value bits), k 1-64, on the same heads;
 *  nib.bound_*:     the nibble level's intervals [A - W, A + W] (the
 *                   reference's, and the AVX-512 VNNI kernel's where the CPU
 *                   has it, and the AVX2 kernel's) hold the exact kernel's
 *                   output for every row, and the kernels' are the
 *                   reference's but for rounding;
 *  head.*.nib:      batches of at most 4 rows take the nibble level first
 *                   (also on CPUs with AVX2 alone, its AVX2 kernel);
 *                   on "peak" heads (each token its own best row, as a
 *                   trained head) it settles every token;
 *  screen.kth:      the list's k-th largest value against a sort;
 *  head.default_rule: without Q36_CPU_HEADSCREEN one row is screened for a
 *                   head of 256 inputs, not of 1,024; two rows for both;
 *  head.screen_bytes: the copy's size q36 info shows (0 for other types and
 *                   with Q36_CPU_HEADSCREEN=0).
 * `test_cpu_head bench` times the screen against the exact tile (prints,
 * asserts nothing).
 */
#include "test.h"
#include "quant_bound.h"

#include <time.h>

#include "backend/backend.h"
#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_gemm_q8.h"
#include "backend/cpu/cpu_screen_nib.h"
#include "backend/cpu/cpu_screen_q8.h"
#include "gguf/gguf.h"
#include "quant/quant.h"

enum { QB = 34 };

static bool has_vnni(void)
{
    return quant_path_available(QUANT_PATH_AVX512VNNI);
}

static uint8_t *q8_head(t_rng *r, int64_t K, int64_t N)
{
    const uint64_t rb = (uint64_t)K / 32 * QB;
    uint8_t *w = malloc(rb * (uint64_t)N);
    for (int64_t n = 0; n < N; n++)
        qb_random_weights(QT_Q8_0, r, w + (uint64_t)n * rb, K);
    return w;
}

static uint8_t *q8_acts(t_rng *r, int64_t K, int64_t T, float scale)
{
    const uint64_t rb = (uint64_t)K / 32 * QB;
    uint8_t *a = malloc(rb * (uint64_t)T);
    float *x = malloc(sizeof(float) * (size_t)K);
    for (int64_t t = 0; t < T; t++) {
        for (int64_t k = 0; k < K; k++)
            x[k] = qb_gauss(r) * scale;
        quant_act_quantize(QT_Q8_0, x, a + (uint64_t)t * rb, K);
    }
    free(x);
    return a;
}

/* ------------------------------------------------------------ screen */

static void test_bits(int64_t K, int64_t N, int T)
{
    char name[80];
    snprintf(name, sizeof name, "screen.bits_K%lld_N%lld_T%d", (long long)K, (long long)N, T);
    if (!has_vnni()) {
        t_skip(name, "this CPU lacks AVX-512 VNNI");
        return;
    }
    t_rng rng = t_rng_named(name);
    const uint64_t rb = (uint64_t)K / 32 * QB;
    uint8_t *w = q8_head(&rng, K, N), *a = q8_acts(&rng, K, T, 1.0f);
    cpu_q8s s;
    char why[200] = "";
    if (cpu_q8s_build(&s, w, rb, N, K)) {
        t_fail(name, "cpu_q8s_build: out of memory");
        free(w), free(a);
        return;
    }
    const int64_t nb = K / 32;
    float *dx = malloc(sizeof(float) * (size_t)(nb * T));
    int32_t *cx = malloc(sizeof(int32_t) * (size_t)(nb * T));
    for (int t = 0; t < T; t++)
        cpu_q8s_token(&s, a + (uint64_t)t * rb, dx + t * nb, cx + t * nb);
    const int64_t ld = N + 3;
    float *y0 = malloc(sizeof(float) * (size_t)(ld * T)), *y1 = malloc(sizeof(float) * (size_t)(ld * T));
    for (int64_t i = 0; i < ld * T; i++)
        y0[i] = y1[i] = -7.0f;
    cpu_q8s_ref(&s, 0, s.ng, a, rb, T, dx, cx, y0, ld);
    /* in two ranges of groups, as two threads would */
    cpu_q8s_avx512vnni(&s, 0, s.ng / 2, a, rb, T, dx, cx, NULL, NULL, 0, y1, ld);
    cpu_q8s_avx512vnni(&s, s.ng / 2, s.ng, a, rb, T, dx, cx, NULL, NULL, 0, y1, ld);
    for (int64_t i = 0; i < ld * T && !why[0]; i++)
        if (memcmp(&y0[i], &y1[i], 4))
            snprintf(why, sizeof why, "token %lld row %lld: avx512vnni %.9g, reference %.9g",
                     (long long)(i / ld), (long long)(i % ld), (double)y1[i], (double)y0[i]);
    t_check(name, !why[0], "%s", why);
    cpu_q8s_free(&s);
    free(w), free(a), free(dx), free(cx), free(y0), free(y1);
}

/* every row of w (N x K Q8_0) given codes of magnitude 100-128 with the
 * signs of the activation row a (large exact sums) */
static void align_rows(t_rng *rng, uint8_t *w, const uint8_t *a, int64_t K, int64_t N)
{
    const uint64_t rb = (uint64_t)K / 32 * QB;
    for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < K; i++) {
            const int8_t x = (int8_t)a[i / 32 * QB + 2 + i % 32];
            const int v = 100 + (int)(t_next(rng) % 29);     /* 100..128 */
            const int code = x < 0 ? -v : (v > 127 ? 127 : v);
            w[(uint64_t)n * rb + (uint64_t)(i / 32) * QB + 2 + (uint64_t)(i % 32)] =
                (uint8_t)(int8_t)code;
        }
}

/* rows of w made to follow token 0's signs (large exact sums) when `aligned` */
static void test_bound(int64_t K, int64_t N, int T, bool aligned)
{
    char name[80];
    snprintf(name, sizeof name, "screen.bound_K%lld_N%lld_T%d%s", (long long)K, (long long)N, T,
             aligned ? "_aligned" : "");
    t_rng rng = t_rng_named(name);
    const uint64_t rb = (uint64_t)K / 32 * QB;
    uint8_t *w = q8_head(&rng, K, N), *a = q8_acts(&rng, K, T, 3.0f);
    if (aligned)
        align_rows(&rng, w, a, K, N);
    cpu_q8s s;
    if (cpu_q8s_build(&s, w, rb, N, K)) {
        t_fail(name, "cpu_q8s_build: out of memory");
        free(w), free(a);
        return;
    }
    const int64_t nb = K / 32;
    float *dx = malloc(sizeof(float) * (size_t)(nb * T)), *y = malloc(sizeof(float) * (size_t)(N * T));
    int32_t *cx = malloc(sizeof(int32_t) * (size_t)(nb * T));
    double worst = 0;
    char why[200] = "";
    for (int t = 0; t < T; t++) {
        const double e2 = cpu_q8s_token(&s, a + (uint64_t)t * rb, dx + t * nb, cx + t * nb);
        cpu_q8s_ref(&s, 0, s.ng, a + (uint64_t)t * rb, rb, 1, dx + t * nb, cx + t * nb, y + t * N, N);
        for (int64_t n = 0; n < N && !why[0]; n++) {
            float e;
            cpu_gemm_q8_0_ref(K, w + (uint64_t)n * rb, rb, 1, a + (uint64_t)t * rb, rb, 1, &e, 1);
            const double d = fabs((double)y[t * N + n] - (double)e);
            if (!(d <= e2 / 2))
                snprintf(why, sizeof why, "token %d row %lld: approximation %.9g, exact %.9g, "
                         "|diff| %.3g over the bound %.3g", t, (long long)n, (double)y[t * N + n],
                         (double)e, d, e2 / 2);
            if (e2 > 0)
                worst = fmax(worst, d / (e2 / 2));
        }
    }
    printf("# %s: worst |approx - exact| / bound %.3g\n", name, worst);
    t_check(name, !why[0], "%s", why);
    cpu_q8s_free(&s);
    free(w), free(a), free(dx), free(cx), free(y);
}

/* ------------------------------------------------------ nibble level */

/* Both copies of a head and the tables of T <= 16 tokens, as the op makes them */
typedef struct nib_tabs {
    cpu_q8s  s;
    cpu_q8n  n;
    float   *dx, *dh, *tb, e2f[16], xn[16];
    int32_t *cx, *sx;
} nib_tabs;

static bool nib_tabs_new(nib_tabs *b, const char *name, const uint8_t *w, const uint8_t *a,
                         int64_t K, int64_t N, int T)
{
    const uint64_t rb = (uint64_t)K / 32 * QB;
    const int64_t nb = K / 32;
    const size_t nbt = (size_t)(nb * T);
    memset(b, 0, sizeof *b);
    if (cpu_q8s_build(&b->s, w, rb, N, K) || cpu_q8n_build(&b->n, w, rb, N, K)) {
        t_fail(name, "out of memory");
        cpu_q8s_free(&b->s);
        return false;
    }
    b->dx = malloc(sizeof(float) * nbt), b->dh = malloc(sizeof(float) * nbt);
    b->tb = malloc(sizeof(float) * nbt);
    b->cx = malloc(sizeof(int32_t) * nbt), b->sx = malloc(sizeof(int32_t) * nbt);
    for (int t = 0; t < T; t++) {
        const uint8_t *at = a + (uint64_t)t * rb;
        const double e2 = cpu_q8s_token(&b->s, at, b->dx + t * nb, b->cx + t * nb);
        b->e2f[t] = cpu_q8n_token(&b->n, at, e2, b->dh + t * nb, b->sx + t * nb, b->tb + t * nb);
        b->xn[t] = cpu_q8n_token_norm(&b->n, at);
    }
    return true;
}

static void nib_tabs_free(nib_tabs *b)
{
    cpu_q8s_free(&b->s);
    cpu_q8n_free(&b->n);
    free(b->dx), free(b->dh), free(b->tb), free(b->cx), free(b->sx);
}

/* cpu_screen_nib.h: every row's [A - W, A + W] holds the exact kernel's
 * output (the reference's and, where the CPU has AVX-512 VNNI, the
 * kernel's, run in two ranges of groups as two threads would), and the
 * kernel's interval is the reference's but for the rounding of the bound
 * (B summed in double there, in upward-rounded floats here). Codes of -128
 * included (qb_random_weights makes them); `aligned`: rows built to follow
 * token 0's signs, so that the exact sums are large. */
static void test_nib(int64_t K, int64_t N, int T, bool aligned)
{
    char name[80];
    snprintf(name, sizeof name, "nib.bound_K%lld_N%lld_T%d%s", (long long)K, (long long)N, T,
             aligned ? "_aligned" : "");
    t_rng rng = t_rng_named(name);
    const uint64_t rb = (uint64_t)K / 32 * QB;
    uint8_t *w = q8_head(&rng, K, N), *a = q8_acts(&rng, K, T, 3.0f);
    if (aligned)
        align_rows(&rng, w, a, K, N);
    nib_tabs tt;
    if (!nib_tabs_new(&tt, name, w, a, K, N, T)) {
        free(w), free(a);
        return;
    }
    const cpu_q8n sn = tt.n;
    const float *dh = tt.dh, *tb = tt.tb, *e2f = tt.e2f;
    const int32_t *sx = tt.sx;
    const int64_t ld = N + 5;
    float *y[6];
    for (int i = 0; i < 6; i++) {
        y[i] = malloc(sizeof(float) * (size_t)(ld * T));
        for (int64_t k = 0; k < ld * T; k++)
            y[i][k] = -7.0f;
    }
    cpu_q8n_ref(&sn, 0, sn.ng, a, rb, T, dh, sx, tb, e2f, y[0], y[1], ld);
    const bool vnni = has_vnni(), avx2 = quant_path_available(QUANT_PATH_AVX2);
    if (avx2) {
        cpu_q8n_avx2(&sn, 0, sn.ng / 2, a, rb, T, dh, sx, tb, e2f, NULL, NULL, NULL, 0, y[4], y[5],
                     ld);
        cpu_q8n_avx2(&sn, sn.ng / 2, sn.ng, a, rb, T, dh, sx, tb, e2f, NULL, NULL, NULL, 0, y[4],
                     y[5], ld);
    }
    if (vnni) {
        cpu_q8n_avx512vnni(&sn, 0, sn.ng / 2, a, rb, T, dh, sx, tb, e2f, NULL, NULL, NULL, 0, y[2],
                           y[3], ld);
        cpu_q8n_avx512vnni(&sn, sn.ng / 2, sn.ng, a, rb, T, dh, sx, tb, e2f, NULL, NULL, NULL, 0,
                           y[2], y[3], ld);
    }
    double worst = 0;
    char why[240] = "";
    for (int t = 0; t < T && !why[0]; t++)
        for (int64_t n = 0; n < N && !why[0]; n++) {
            float e;
            cpu_gemm_q8_0_ref(K, w + (uint64_t)n * rb, rb, 1, a + (uint64_t)t * rb, rb, 1, &e, 1);
            const int64_t o = t * ld + n;
            const float lo = y[0][o], hi = y[1][o];
            const double W = ((double)hi - lo) / 2, A = ((double)hi + lo) / 2;
            if (!(lo <= e && e <= hi))
                snprintf(why, sizeof why, "token %d row %lld: reference [%.9g, %.9g] misses the "
                         "exact %.9g", t, (long long)n, (double)lo, (double)hi, (double)e);
            else if (vnni && !(y[2][o] <= e && e <= y[3][o]))
                snprintf(why, sizeof why, "token %d row %lld: avx512vnni [%.9g, %.9g] misses the "
                         "exact %.9g", t, (long long)n, (double)y[2][o], (double)y[3][o], (double)e);
            else if (vnni && !(fabs((double)y[2][o] - lo) <= 1e-5 * (fabs(A) + W) &&
                               fabs((double)y[3][o] - hi) <= 1e-5 * (fabs(A) + W)))
                snprintf(why, sizeof why, "token %d row %lld: avx512vnni [%.9g, %.9g], reference "
                         "[%.9g, %.9g]", t, (long long)n, (double)y[2][o], (double)y[3][o],
                         (double)lo, (double)hi);
            else if (avx2 && !(y[4][o] <= e && e <= y[5][o]))
                snprintf(why, sizeof why, "token %d row %lld: avx2 [%.9g, %.9g] misses the exact "
                         "%.9g", t, (long long)n, (double)y[4][o], (double)y[5][o], (double)e);
            else if (avx2 && !(fabs((double)y[4][o] - lo) <= 5e-4 * (fabs(A) + W) &&
                               fabs((double)y[5][o] - hi) <= 5e-4 * (fabs(A) + W)))
                snprintf(why, sizeof why, "token %d row %lld: avx2 [%.9g, %.9g], reference "
                         "[%.9g, %.9g]", t, (long long)n, (double)y[4][o], (double)y[5][o],
                         (double)lo, (double)hi);
            if (W > 0)
                worst = fmax(worst, fabs(A - (double)e) / W);
        }
    printf("# %s: worst |A - exact| / W %.3g%s\n", name, worst,
           vnni ? "" : " (reference only: this CPU lacks AVX-512 VNNI)");
    t_check(name, !why[0], "%s", why);
    nib_tabs_free(&tt);
    for (int i = 0; i < 6; i++)
        free(y[i]);
    free(w), free(a);
}

/* One kernel's lists (kern 1: AVX-512 VNNI) with the norms and without,
 * for test_norms: each token's best row (bi) kept, the lists with the
 * norms part of the others with the same maxima, groups passed over (not
 * nan); with a NaN scale, every list bad. */
static void norms_lists(const char *name, int kern, const nib_tabs *tt, const uint8_t *a,
                        uint64_t rb, int T, bool nan, const int64_t *bi, char *why, size_t wn)
{
    const cpu_q8n *sn = &tt->n;
    const char *kn = kern ? "avx512vnni" : "avx2";
    int32_t *grp = malloc(sizeof(int32_t) * 2 * 8 * (size_t)sn->ng);
    float *up = malloc(sizeof(float) * 2 * 8 * (size_t)sn->ng);
    cpu_q8n_list l[2][8];
    for (int k = 0; k < 2; k++) {       /* k = 1: with the norms */
        for (int t = 0; t < T; t++)
            cpu_q8n_list_init(&l[k][t], grp + (k * 8 + t) * sn->ng, up + (k * 8 + t) * sn->ng,
                              (int)sn->ng, NULL);
        (kern ? cpu_q8n_avx512vnni : cpu_q8n_avx2)(sn, 0, sn->ng, a, rb, T, tt->dh, tt->sx,
                                                   tt->tb, tt->e2f, k ? tt->xn : NULL, l[k], NULL,
                                                   0, NULL, NULL, 0);
    }
    for (int t = 0; t < T && !why[0]; t++) {
        const cpu_q8n_list *f = &l[0][t], *g = &l[1][t];
        if (nan) {
            if (!f->bad || !g->bad)
                snprintf(why, wn, "%s token %d: a NaN scale left the lists good (full %d, with "
                         "norms %d)", kn, t, f->bad, g->bad);
            continue;
        }
        bool has = false, sub = true;
        for (int i = 0; i < g->n; i++)
            has |= g->grp[i] == bi[t] / CPU_Q8N_G;
        for (int i = 0; i < g->n && sub; i++) {
            bool in = false;
            for (int k = 0; k < f->n; k++)
                in |= f->grp[k] == g->grp[i];
            sub = in;
        }
        if (f->bad || g->bad)
            snprintf(why, wn, "%s token %d: lists bad (full %d, with norms %d)", kn, t, f->bad,
                     g->bad);
        else if (!has)
            snprintf(why, wn, "%s token %d: the best row %lld's group is not kept with the norms "
                     "(%d groups kept)", kn, t, (long long)bi[t], g->n);
        else if (!sub || g->max != f->max)
            snprintf(why, wn, "%s token %d: with the norms %d groups (max %.9g), not part of the "
                     "full pass's %d (max %.9g)", kn, t, g->n, (double)g->max, f->n,
                     (double)f->max);
    }
    if (!why[0] && !nan && !(l[1][0].passed > 0 && l[0][0].passed == 0))
        snprintf(why, wn, "%s: %lld groups of %lld passed over with the norms, %lld without", kn,
                 (long long)l[1][0].passed, (long long)sn->ng, (long long)l[0][0].passed);
    printf("# %s: %lld of %lld groups passed over\n", name, (long long)l[1][0].passed,
           (long long)sn->ng);
    free(grp), free(up);
}

/* The nibble level's pass over groups by their norms: a head whose groups
 * are two in three of small rows (scales x 2^-10), token 0's best row in
 * the last group, equal to its activation row (so that its product meets
 * the Cauchy-Schwarz bound but for rounding; N >= 48), and an early rival of 0.97
 * its size (so that the threshold stands close to it when its group comes);
 * lists made with the norms and without. The lists with them must hold the
 * group of each token's largest exact product, be part of the full pass's
 * lists with the same maxima, and pass over groups; a NaN scale in a small
 * group must still be met (the lists bad). */
static void test_norms(int64_t K, int64_t N, int T, bool nan)
{
    char name[80];
    snprintf(name, sizeof name, "nib.norms_K%lld_N%lld_T%d%s", (long long)K, (long long)N, T,
             nan ? "_nan" : "");
    if (!quant_path_available(QUANT_PATH_AVX2)) {
        t_skip(name, "this CPU lacks AVX2");
        return;
    }
    t_rng rng = t_rng_named(name);
    const uint64_t rb = (uint64_t)K / 32 * QB;
    const int64_t nb = K / 32;
    uint8_t *w = q8_head(&rng, K, N), *a = q8_acts(&rng, K, T, 1.0f);
    for (int64_t r = 0; r < N; r++)
        for (int64_t b = 0; r / CPU_Q8N_G % 3 && b < nb; b++) {
            uint8_t *blk = w + (uint64_t)r * rb + (uint64_t)b * QB;
            const uint16_t d = quant_f32_to_f16(quant_f16_to_f32((uint16_t)(blk[0] | blk[1] << 8)) *
                                                0x1p-10f);
            blk[0] = (uint8_t)d, blk[1] = (uint8_t)(d >> 8);
        }
    /* the star in the last group of small rows (its norm the group's) */
    const int64_t last = (N - 1) / CPU_Q8N_G, star = (last % 3 ? last : last - 1) * CPU_Q8N_G;
    const int64_t rival = 2;
    memcpy(w + (uint64_t)star * rb, a, rb);
    memcpy(w + (uint64_t)rival * rb, a, rb);
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *blk = w + (uint64_t)rival * rb + (uint64_t)b * QB;
        const uint16_t d = quant_f32_to_f16(quant_f16_to_f32((uint16_t)(blk[0] | blk[1] << 8)) *
                                            0.97f);
        blk[0] = (uint8_t)d, blk[1] = (uint8_t)(d >> 8);
    }
    const int64_t bad_row = N > CPU_Q8N_G ? CPU_Q8N_G + 2 : 0;       /* in a small group */
    if (nan)
        w[(uint64_t)bad_row * rb] = 0x00, w[(uint64_t)bad_row * rb + 1] = 0x7e;
    nib_tabs tt;
    if (!nib_tabs_new(&tt, name, w, a, K, N, T)) {
        free(w), free(a);
        return;
    }
    const cpu_q8n sn = tt.n;
    const float *e2f = tt.e2f, *xn = tt.xn;
    char why[240] = "";
    int64_t bi[8];
    for (int t = 0; t < T && !why[0]; t++) {
        /* each token's best row; the copy's norms bound every row: |e_r| <= N X + e2 */
        float best = -INFINITY;
        bi[t] = -1;
        for (int64_t r = 0; r < N && !why[0]; r++) {
            float e;
            cpu_gemm_q8_0_ref(K, w + (uint64_t)r * rb, rb, 1, a + (uint64_t)t * rb, rb, 1, &e, 1);
            if (e > best)
                best = e, bi[t] = r;
            const double bound = (double)sn.norm[r / CPU_Q8N_G] * xn[t] + e2f[t];
            if (!nan && !(fabs((double)e) <= bound))
                snprintf(why, sizeof why, "token %d row %lld: exact %.9g beyond the norms' bound "
                         "%.9g", t, (long long)r, (double)e, bound);
            else if (!nan && t == 0 && r == star && !(e >= 0.99 * bound))
                snprintf(why, sizeof why, "token 0's copy row %lld: exact %.9g, the norms' bound "
                         "%.9g (want within 1%%)", (long long)r, (double)e, bound);
        }
    }
    if (!why[0])
        norms_lists(name, 0, &tt, a, rb, T, nan, bi, why, sizeof why);
    t_check(name, !why[0], "%s", why);
    char vname[100];
    snprintf(vname, sizeof vname, "%s.avx512vnni", name);
    if (!has_vnni())
        t_skip(vname, "this CPU lacks AVX-512 VNNI");
    else {
        why[0] = 0;
        norms_lists(vname, 1, &tt, a, rb, T, nan, bi, why, sizeof why);
        t_check(vname, !why[0], "%s", why);
    }
    nib_tabs_free(&tt);
    free(w), free(a);
}

/* -------------------------------------------------------------- op */

enum head_kind { H_RANDOM, H_TIES, H_NEAR, H_MANY, H_NAN_SCALE, H_INF_SCALE, H_ZERO_X, H_NAN_X,
                 H_PEAK };
static const char *const kind_name[] = { "random", "ties", "near", "many_ties", "nan_scale",
                                         "inf_scale", "zero_x", "nan_x", "peak" };

/* Builds the case's head (N x K Q8_0) and activations (R x K f32). */
static void make_case(enum head_kind k, t_rng *r, int64_t K, int64_t N, int64_t R, uint8_t *w,
                      float *x)
{
    const uint64_t rb = (uint64_t)K / 32 * QB;
    for (int64_t n = 0; n < N; n++)
        qb_random_weights(QT_Q8_0, r, w + (uint64_t)n * rb, K);
    for (int64_t i = 0; i < R * K; i++)
        x[i] = k == H_ZERO_X ? 0.0f : qb_gauss(r);
    if (k == H_NAN_X)
        x[(R / 2) * K + K / 3] = NAN;
    /* a best row: the signs of token 0 at the largest codes */
    uint8_t best[1024 / 32 * QB];
    memcpy(best, w, rb);
    for (int64_t i = 0; i < K; i++)
        best[i / 32 * QB + 2 + i % 32] = (uint8_t)(int8_t)(x[i] < 0 ? -120 : 120);
    const int64_t at[] = { N / 3, N - 1, 2 * N / 3, N / 2 };
    if (k == H_TIES) {          /* the same best row at four places: the first wins */
        for (int i = 0; i < 4; i++)
            memcpy(w + (uint64_t)at[i] * rb, best, rb);
    } else if (k == H_NEAR) {   /* the best row and copies one code apart */
        for (int i = 0; i < 4; i++) {
            memcpy(w + (uint64_t)at[i] * rb, best, rb);
            uint8_t *c = w + (uint64_t)at[i] * rb + 2 + (uint64_t)(7 * i % 32);
            *c = (uint8_t)((int8_t)*c + (i & 1 ? 1 : -1));
        }
    } else if (k == H_MANY) {   /* more equal best rows than a list keeps */
        for (int64_t n = 1; n < N; n += 7)
            memcpy(w + (uint64_t)n * rb, best, rb);
    } else if (k == H_PEAK) {   /* each token 8 best rows of its own, as a trained head
                                 * has, among the first groups (a thread of the nibble level
                                 * that meets none of them takes the other's maximum) */
        for (int64_t t = 0; t < R; t++)
            for (int j = 7; j >= 0; j--) {      /* the best (j = 0) written last */
                uint8_t *row = w + (uint64_t)(((t * 8 + j) * 37 + 13) % N) * rb;
                const int c = 120 - 9 * j;
                for (int64_t i = 0; i < K; i++)
                    row[i / 32 * QB + 2 + i % 32] = (uint8_t)(int8_t)(x[t * K + i] < 0 ? -c : c);
            }
    } else if (k == H_NAN_SCALE || k == H_INF_SCALE) {
        const uint16_t h = k == H_NAN_SCALE ? 0x7e00 : 0x7c00;
        memcpy(w + (uint64_t)(N / 2) * rb + QB, &h, 2);
    }
}

/* A case's head bound to be, its activations written to xt; y for the
 * products. gt must outlive bw's use: it lives here. */
typedef struct {
    uint8_t    *w;
    float      *x;
    gguf_tensor gt;
    be_weight  *bw;
    be_tensor  *xt, *y;
} head_case;

static bool case_new(head_case *c, be_ctx *be, const char *name, enum head_kind kind, int64_t K,
                     int64_t N, int64_t R)
{
    t_rng rng = t_rng_named(name);
    const uint64_t rb = (uint64_t)K / 32 * QB;
    c->w = malloc(rb * (uint64_t)N);
    c->x = malloc(sizeof(float) * (size_t)(R * K));
    make_case(kind, &rng, K, N, R, c->w, c->x);
    c->gt = (gguf_tensor){ .name = "output.weight", .type = QT_Q8_0, .n_dims = 2,
                           .ne = { (uint64_t)K, (uint64_t)N, 1, 1 }, .data = c->w,
                           .nbytes = rb * (uint64_t)N };
    c->bw = NULL;
    if (be_weight_bind(be, &c->gt, &c->bw, NULL)) {
        t_fail(name, "weight not bound");
        free(c->w), free(c->x);
        return false;
    }
    c->xt = be_tensor_new(be, R, K);
    c->y = be_tensor_new(be, R, N);
    be_write(be, c->xt, 0, R, c->x);
    return true;
}

static void case_free(head_case *c, be_ctx *be)
{
    be_tensor_free(be, c->xt), be_tensor_free(be, c->y);
    free(c->w), free(c->x);
}

/* NAME.screened: the screen settled every token of the random, tied and
 * near heads (with cmin..cmax exact candidates), and handed the others'
 * unsettled tokens to the full product; a skip without AVX-512 VNNI. */
static void check_screened(const char *name, enum head_kind kind, int64_t R, const long s0[3],
                           const long s1[3], long cmin, long cmax)
{
    char nm[112];
    snprintf(nm, sizeof nm, "%s.screened", name);
    if (!has_vnni()) {
        t_skip(nm, "this CPU lacks AVX-512 VNNI (the op took the full product)");
        return;
    }
    const long screened = s1[0] - s0[0], full = s1[1] - s0[1], cands = s1[2] - s0[2];
    if (kind == H_RANDOM || kind == H_TIES || kind == H_NEAR || kind == H_PEAK)
        t_check(nm, screened == R && full == 0 && cands >= cmin && cands <= cmax,
                "%ld tokens screened, %ld in full, %ld exact candidates, of %lld tokens", screened,
                full, cands, (long long)R);
    else        /* a NaN input: its quantized row may be finite codes (screened) or hold -128 */
        t_check(nm, screened + full == R && (kind == H_NAN_X || full >= 1),
                "%ld tokens screened, %ld in full, of %lld (the unsettled ones in full)", screened,
                full, (long long)R);
}

/* NAME.nib: the nibble level took the batch when it had at most 4 rows
 * (cpu_head.c's default; 16 on AVX2 alone), and settled every token of the peaked heads,
 * handing none on (AVX-512 VNNI: before the int8 screen; AVX2 alone:
 * before exact products of the kept groups); a skip without AVX2. */
static void check_nib(const char *name, enum head_kind kind, int64_t R, const long n0[3],
                      const long n1[3])
{
    char nm[112];
    snprintf(nm, sizeof nm, "%s.nib", name);
    if (!has_vnni() && !quant_path_available(QUANT_PATH_AVX2)) {
        t_skip(nm, "this CPU lacks AVX2 (no nibble level)");
        return;
    }
    const long settled = n1[0] - n0[0], handed = n1[1] - n0[1], groups = n1[2] - n0[2];
    if (R > (has_vnni() ? 4 : 16))
        t_check(nm, settled == 0 && handed == 0, "%ld tokens settled, %ld handed on (want none: "
                "%lld rows)", settled, handed, (long long)R);
    else if (kind == H_PEAK)
        t_check(nm, settled == R && handed == 0 && groups >= R, "%ld tokens settled, %ld handed "
                "on, %ld groups kept, of %lld tokens", settled, handed, groups, (long long)R);
    else
        t_check(nm, settled + handed == R, "%ld tokens settled, %ld handed on, of %lld tokens",
                settled, handed, (long long)R);
}

/* be_argmax's rule on a host row with the banned columns at -inf */
static int32_t host_choice(const float *v, int64_t n, const int32_t *ban, int n_ban)
{
    int32_t best = 0;
    float bv = -INFINITY;
    for (int64_t c = 0, b = 0; c < n; c++) {
        while (b < n_ban && ban[b] < c)
            b++;
        const float x = b < n_ban && ban[b] == c ? -INFINITY : v[c];
        if (c == 0 ? x == x : x > bv)
            bv = x, best = (int32_t)c;
        if (c == 0 && x != x)
            return 0;
    }
    return best;
}

/* n_ban > 0: the ids of the case's built rows and a few others banned */
static void test_head(be_ctx *be, int threads, enum head_kind k, int64_t K, int64_t N, int64_t R,
                      int n_ban)
{
    char name[96];
    snprintf(name, sizeof name, "head.%s_K%lld_N%lld_R%lld_t%d%s", kind_name[k], (long long)K,
             (long long)N, (long long)R, threads, n_ban ? "_ban" : "");
    head_case hc;
    if (!case_new(&hc, be, name, k, K, N, R))
        return;
    be_weight *bw = hc.bw;
    be_tensor *xt = hc.xt, *y = hc.y;
    be_tensor *i0 = be_tensor_new_type(be, BE_I32, R, 1), *i1 = be_tensor_new_type(be, BE_I32, R, 1);
    int32_t ban[16];
    if (n_ban) {        /* the built rows, the ends, a few more; ascending, distinct */
        const int64_t cand[] = { 0, N / 3, N / 2, 2 * N / 3, N - 1, 1, N / 5, 8 };
        int m = 0;
        for (size_t i = 0; i < sizeof cand / sizeof cand[0] && m < n_ban; i++) {
            int32_t v = (int32_t)cand[i];
            bool dup = v >= N;
            for (int j = 0; j < m; j++)
                dup |= ban[j] == v;
            if (!dup)
                ban[m++] = v;
        }
        n_ban = m;
        for (int i = 1; i < n_ban; i++)         /* insertion sort */
            for (int j = i; j > 0 && ban[j - 1] > ban[j]; j--) {
                const int32_t t = ban[j];
                ban[j] = ban[j - 1], ban[j - 1] = t;
            }
    }
    float *yh = malloc(sizeof(float) * (size_t)(R * N));
    int32_t *a = malloc(sizeof(int32_t) * (size_t)R), *b = malloc(sizeof(int32_t) * (size_t)R);
    cpu_head_screen(0);
    be_matmul(be, bw, 0, xt, y);
    be_argmax(be, y, i0);
    be_read(be, y, 0, R, yh);
    be_read(be, i0, 0, R, a);
    if (n_ban)
        for (int64_t t = 0; t < R; t++)
            a[t] = host_choice(yh + t * N, N, ban, n_ban);
    for (int64_t i = 0; i < R * N; i++)    /* y must not keep the product from above */
        yh[i] = NAN;
    be_write(be, y, 0, R, yh);
    cpu_head_screen(1);
    long s0[3], s1[3], n0[3], n1[3];
    cpu_head_screen_stats(s0);
    cpu_head_nib_stats(n0);
    be_matmul_argmax(be, bw, xt, y, i1, n_ban ? ban : NULL, n_ban);
    cpu_head_screen_stats(s1);
    cpu_head_nib_stats(n1);
    cpu_head_screen(-1);
    be_read(be, i1, 0, R, b);
    char why[200] = "";
    if (be_check(be, NULL))
        snprintf(why, sizeof why, "an op failed");
    for (int64_t t = 0; t < R && n_ban; t++)
        for (int i = 0; i < n_ban; i++)
            if (b[t] == ban[i]) {   /* the contract: its row of y holds the product */
                be_read(be, y, t, 1, yh + t * N);
                b[t] = host_choice(yh + t * N, N, ban, n_ban);
                break;
            }
    for (int64_t t = 0; t < R && !why[0]; t++)
        if (a[t] != b[t])
            snprintf(why, sizeof why, "token %lld: be_matmul_argmax %d, be_matmul + be_argmax %d",
                     (long long)t, b[t], a[t]);
    t_check(name, !why[0], "%s", why);

    check_screened(name, k, R, s0, s1, R, 64 * R);
    check_nib(name, k, R, n0, n1);
    free(a), free(b), free(yh);
    be_tensor_free(be, i0), be_tensor_free(be, i1);
    case_free(&hc, be);
}

/* be_matmul_topk against be_matmul + be_topk: the same columns and values */
static void test_head_k(be_ctx *be, int threads, enum head_kind kind, int64_t K, int64_t N,
                        int64_t R, int64_t k)
{
    char name[96];
    snprintf(name, sizeof name, "head_topk.%s_K%lld_N%lld_R%lld_k%lld_t%d", kind_name[kind],
             (long long)K, (long long)N, (long long)R, (long long)k, threads);
    head_case hc;
    if (!case_new(&hc, be, name, kind, K, N, R))
        return;
    be_weight *bw = hc.bw;
    be_tensor *xt = hc.xt, *y = hc.y;
    be_tensor *i0 = be_tensor_new_type(be, BE_I32, R, k), *i1 = be_tensor_new_type(be, BE_I32, R, k);
    be_tensor *v0 = be_tensor_new(be, R, k), *v1 = be_tensor_new(be, R, k);
    cpu_head_screen(0);
    be_matmul(be, bw, 0, xt, y);
    be_topk(be, y, k, i0, v0);
    cpu_head_screen(1);
    long s0[3], s1[3];
    cpu_head_screen_stats(s0);
    be_matmul_topk(be, bw, xt, y, k, i1, v1);
    cpu_head_screen_stats(s1);
    cpu_head_screen(-1);
    const size_t n = (size_t)(R * k);
    int32_t *a = malloc(sizeof(int32_t) * n), *b = malloc(sizeof(int32_t) * n);
    float *va = malloc(sizeof(float) * n), *vb = malloc(sizeof(float) * n);
    be_read(be, i0, 0, R, a), be_read(be, i1, 0, R, b);
    be_read(be, v0, 0, R, va), be_read(be, v1, 0, R, vb);
    char why[200] = "";
    if (be_check(be, NULL))
        snprintf(why, sizeof why, "an op failed");
    for (size_t i = 0; i < n && !why[0]; i++)
        if (a[i] != b[i] || memcmp(&va[i], &vb[i], 4))
            snprintf(why, sizeof why, "token %zu, place %zu: be_matmul_topk column %d value %.9g, "
                     "be_matmul + be_topk column %d value %.9g", i / (size_t)k, i % (size_t)k, b[i],
                     (double)vb[i], a[i], (double)va[i]);
    t_check(name, !why[0], "%s", why);
    check_screened(name, kind, R, s0, s1, R * k, 8 * R * k);
    free(a), free(b), free(va), free(vb);
    be_tensor_free(be, i0), be_tensor_free(be, i1), be_tensor_free(be, v0), be_tensor_free(be, v1);
    case_free(&hc, be);
}

static int cmp_desc(const void *p, const void *q)
{
    const float a = *(const float *)p, b = *(const float *)q;
    return a < b ? 1 : a > b ? -1 : 0;
}

/* cpu_q8s_kth against a sort, with many equal values */
static void test_kth(void)
{
    t_rng rng = t_rng_named("screen.kth");
    float v[CPU_Q8S_CAP_MAX], s[CPU_Q8S_CAP_MAX];
    char why[160] = "";
    for (int trial = 0; trial < 400 && !why[0]; trial++) {
        const int n = 1 + (int)(t_next(&rng) % CPU_Q8S_CAP_MAX), k = 1 + (int)(t_next(&rng) % n);
        const int span = 1 + (int)(t_next(&rng) % 50);
        for (int i = 0; i < n; i++)
            v[i] = trial % 3 ? (float)(t_next(&rng) % span) : qb_gauss(&rng);
        memcpy(s, v, sizeof(float) * (size_t)n);
        qsort(s, (size_t)n, sizeof(float), cmp_desc);
        const float got = cpu_q8s_kth(v, n, k);
        if (got != s[k - 1])
            snprintf(why, sizeof why, "n %d, k %d: %g, the sort's %g", n, k, (double)got,
                     (double)s[k - 1]);
    }
    t_check("screen.kth", !why[0], "%s", why);
}

/* ------------------------------------------------------------ bench */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* `test_cpu_head bench`: one thread, the default model's head shape (256 x
 * 151,680, random codes), T tokens: the exact tile over every row against
 * the screen over every group with candidates (no exact candidates, no
 * threads), and the nibble level over every group without lists: prints,
 * asserts nothing. */
static void bench(void)
{
    const int64_t K = 256, N = 151680, nb = K / 32;
    const uint64_t rb = (uint64_t)nb * QB;
    t_rng rng = t_rng_named("bench");
    uint8_t *w = q8_head(&rng, K, N), *a = q8_acts(&rng, K, 16, 1.0f);
    float *y = malloc(sizeof(float) * (size_t)(N * 16)), *dx = malloc(sizeof(float) * 16 * 8);
    int32_t *cx = malloc(sizeof(int32_t) * 16 * 8), *idx = malloc(sizeof(int32_t) * 16 * 64);
    float *val = malloc(sizeof(float) * 16 * 64);
    cpu_q8s s;
    double tb = 1e30;
    for (int rep = 0; rep < 3; rep++) {     /* the copy, as the first greedy step makes it */
        const double t0 = now_s();
        if (cpu_q8s_build(&s, w, rb, N, K)) {
            printf("out of memory\n");
            return;
        }
        tb = fmin(tb, now_s() - t0);
        if (rep < 2)
            cpu_q8s_free(&s);
    }
    printf("the copy: %.1f ms to build (best of 3)\n", 1e3 * tb);
    double e2[16];
    for (int t = 0; t < 16; t++)
        e2[t] = cpu_q8s_token(&s, a + (uint64_t)t * rb, dx + t * nb, cx + t * nb);
    cpu_q8n sn;
    if (cpu_q8n_build(&sn, w, rb, N, K)) {
        printf("out of memory\n");
        return;
    }
    float dh[16 * 8], tbl[16 * 8], e2f[16];
    int32_t sx[16 * 8];
    for (int t = 0; t < 16; t++)
        e2f[t] = cpu_q8n_token(&sn, a + (uint64_t)t * rb, e2[t], dh + t * nb, sx + t * nb,
                               tbl + t * nb);
    const cpu_tile_fn tile = cpu_gemm_q8_0();
    printf("one thread, best of 7; K %lld, N %lld (%.1f MiB of Q8_0 rows, %.1f MiB copy)\n",
           (long long)K, (long long)N, (double)(rb * (uint64_t)N) / 1048576.0,
           (double)cpu_q8s_bytes(N, K) / 1048576.0);
    static const int Ts[] = { 1, 2, 4, 8, 16 };
    for (size_t i = 0; i < sizeof Ts / sizeof Ts[0]; i++) {
        const int T = Ts[i];
        double te = 1e30, ts = 1e30, tn = 1e30;
        for (int rep = 0; rep < 7; rep++) {
            double t0 = now_s();
            tile(K, w, rb, N, a, rb, T, y, N);
            double t1 = now_s();
            cpu_q8s_cand c[16];
            for (int t = 0; t < T; t++)
                cpu_q8s_cand_init(&c[t], e2[t], idx + t * 64, val + t * 64, 64, 1);
            if (has_vnni())
                cpu_q8s_avx512vnni(&s, 0, s.ng, a, rb, T, dx, cx, c, NULL, 0, NULL, 0);
            double t2 = now_s();
            /* without lists: the random head's would overflow and stop the pass early */
            if (has_vnni())
                cpu_q8n_avx512vnni(&sn, 0, sn.ng, a, rb, T, dh, sx, tbl, e2f, NULL, NULL, NULL, 0,
                                   NULL, NULL, 0);
            else if (quant_path_available(QUANT_PATH_AVX2))
                cpu_q8n_avx2(&sn, 0, sn.ng, a, rb, T, dh, sx, tbl, e2f, NULL, NULL, NULL, 0, NULL,
                             NULL, 0);
            double t3 = now_s();
            te = fmin(te, t1 - t0);
            ts = fmin(ts, t2 - t1);
            tn = fmin(tn, t3 - t2);
        }
        printf("T=%-2d exact tile %7.3f ms   screen %7.3f ms   nibble level (all groups) %7.3f ms%s\n", T,
               1e3 * te, 1e3 * ts, 1e3 * tn,
               has_vnni() ? "" : " (no AVX-512 VNNI: screen not run, nibble level's AVX2 kernel)");
    }
    cpu_q8s_free(&s);
    cpu_q8n_free(&sn);
    free(w), free(a), free(y), free(dx), free(cx), free(idx), free(val);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "bench") == 0) {
        bench();
        return 0;
    }
    static const int64_t bits[][3] = {      /* K, N, tokens */
        { 256, 151, 1 }, { 256, 160, 4 }, { 32, 17, 3 }, { 96, 1, 2 }, { 1024, 45, 5 },
        { 256, 1000, 9 }, { 64, 33, 8 },
    };
    for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
        test_bits(bits[i][0], bits[i][1], (int)bits[i][2]);
    test_kth();
    test_bound(256, 3000, 3, false);
    test_bound(1024, 500, 2, false);
    test_bound(256, 300, 2, true);
    test_bound(2048, 64, 1, true);
    test_nib(256, 3000, 3, false);
    test_nib(1024, 500, 2, false);
    test_nib(256, 301, 5, true);
    test_nib(2048, 64, 1, true);
    test_nib(32, 17, 2, false);
    test_norms(256, 3000, 1, false);
    test_norms(256, 3000, 4, false);
    test_norms(1024, 777, 3, false);
    test_norms(32, 50, 2, false);
    test_norms(256, 3000, 2, true);

    {   /* what q36 info's memory plan shows for the copy */
        gguf_tensor q8 = { .name = "output.weight", .type = QT_Q8_0, .n_dims = 2,
                           .ne = { 256, 151680, 1, 1 } };
        gguf_tensor q4 = q8;
        q4.type = QT_Q4_K;
        const uint64_t want = has_vnni() ? cpu_q8s_bytes(151680, 256) + cpu_q8n_bytes(151680, 256)
                              : quant_path_available(QUANT_PATH_AVX2) ? cpu_q8n_bytes(151680, 256)
                                                                      : 0;
        const uint64_t got = be_cpu_head_screen_bytes(&q8), got4 = be_cpu_head_screen_bytes(&q4);
        setenv("Q36_CPU_HEADSCREEN", "0", 1);
        const uint64_t off = be_cpu_head_screen_bytes(&q8);
        unsetenv("Q36_CPU_HEADSCREEN");
        t_check("head.screen_bytes", got == want && want % 64 == 0 && got4 == 0 && off == 0,
                "Q8_0 head %llu bytes (want %llu), Q4_K %llu (want 0), with Q36_CPU_HEADSCREEN=0 "
                "%llu (want 0)", (unsigned long long)got, (unsigned long long)want,
                (unsigned long long)got4, (unsigned long long)off);
    }
    {   /* the default rule: one row is screened for heads of up to 512 inputs */
        be_ctx *be = NULL;
        long got[2][2] = { { 0 } };
        if (!be_cpu_new(1, &be, NULL)) {
            for (int i = 0; i < 2; i++) {
                const int64_t K = i ? 1024 : 256;
                for (int64_t R = 1; R <= 2; R++) {
                    head_case hc;
                    if (!case_new(&hc, be, "head.default_rule", H_RANDOM, K, 300, R))
                        break;
                    be_tensor *ids = be_tensor_new_type(be, BE_I32, R, 1);
                    long s0[3], s1[3];
                    cpu_head_screen_stats(s0);
                    be_matmul_argmax(be, hc.bw, hc.xt, hc.y, ids, NULL, 0);
                    cpu_head_screen_stats(s1);
                    got[i][R - 1] = s1[0] + s1[1] - s0[0] - s0[1];
                    be_tensor_free(be, ids);
                    case_free(&hc, be);
                }
            }
            be_free(be);
        }
        if (!has_vnni())
            t_skip("head.default_rule", "this CPU lacks AVX-512 VNNI");
        else
            t_check("head.default_rule", got[0][0] == 1 && got[0][1] == 2 && got[1][0] == 0 &&
                    got[1][1] == 2, "tokens screened: K 256 one row %ld, two rows %ld; K 1024 one "
                    "row %ld (want 0), two rows %ld", got[0][0], got[0][1], got[1][0], got[1][1]);
    }
    for (int threads = 1; threads <= 2; threads++) {
        be_ctx *be = NULL;
        if (be_cpu_new(threads, &be, NULL)) {
            t_fail("head", "be_cpu_new failed");
            return t_exit();
        }
        for (int k = H_RANDOM; k <= H_PEAK; k++) {
            test_head(be, threads, (enum head_kind)k, 256, 5003, 4, 0);
            test_head(be, threads, (enum head_kind)k, 256, 5003, 4, 6);
            test_head_k(be, threads, (enum head_kind)k, 256, 5003, 4, 40);
            if (k <= H_NEAR || k == H_PEAK) {
                test_head_k(be, threads, (enum head_kind)k, 64, 100, 1, 64);
                test_head_k(be, threads, (enum head_kind)k, 256, 40000, 9, 2);
                test_head_k(be, threads, (enum head_kind)k, 1024, 777, 3, 1);
                test_head(be, threads, (enum head_kind)k, 64, 17, 1, 0);
                test_head(be, threads, (enum head_kind)k, 64, 17, 1, 3);
                test_head(be, threads, (enum head_kind)k, 256, 40000, 9, 0);
                test_head(be, threads, (enum head_kind)k, 1024, 777, 3, 8);
            }
            if (k == H_PEAK)    /* more groups a thread than its nibble list holds (2,048) */
                test_head(be, threads, (enum head_kind)k, 256, 400000, 2, 0);
        }
        be_free(be);
    }
    return t_exit();
}
