/* test_cpu_deltanet.c: the fast DeltaNet kernels of the CPU backend (the
 * conv and the gated delta rule, src/backend/cpu/cpu_deltanet.h) against
 * their plain references, bit for bit: the fast forms keep every per-element operation
 * and its order, so any difference at all is a bug. Real Qwen3.5 shapes
 * (dk 128, Hk 16, Hv 16 and 32; 6144 conv channels, kernel 4) over prompt
 * lengths 1, 7, 64, 600, and odd ones (dk 16, 40, 64, 96; channel counts
 * off the 16-block; kernels 1, 2, 5), through the op with 1 and 2 threads
 * and through each kernel path the CPU has (the AVX2 forms too, in their
 * own 8-lane order). Each case seeds its RNG from its name.
 *
 * `test_cpu_deltanet bench` prints (does not assert) one-thread timings of the
 * ops against the references on the models' shapes (thread CPU time, best
 * of 5; noisy where other jobs share the cores and the caches). */
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_deltanet.h"
#include "test_batch.h"
#include "quant/quant.h"

static be_ctx *be1, *be2;

/* A rows x cols view into a wider tensor (row stride cols + 5), so the
 * kernels see a stride that is not their width, as model views do. */
static be_tensor *strided(be_ctx *be, be_tensor **parent, const float *x, int64_t rows,
                          int64_t cols)
{
    *parent = be_tensor_new(be, rows, cols + 5);
    be_tensor *v = be_view(be, *parent, 3, cols);
    if (x)
        be_write(be, v, 0, rows, x);
    return v;
}

static bool same(const float *a, const float *b, int64_t n, int64_t *at)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
            *at = i;
            return false;
        }
    return true;
}

/* ------------------------------------------------------------------ dot */

static void test_dot_order(void)
{
    static const int64_t ns[] = { 1, 7, 8, 9, 31, 64, 96, 128, 130, 257 };
    t_rng r = t_rng_named("deltanet.dot_order");
    bool ok = true;
    int64_t bad = 0;
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        float *x = t_randv(&r, ns[i], 1), *y = t_randv(&r, ns[i], 1);
        float a = cpu_dot_vec_ref(ns[i], x, y, cpu_lanes()), b = cpu_dot_vec(ns[i], x, y);
        if (memcmp(&a, &b, sizeof a) != 0 && ok) {
            ok = false;
            bad = ns[i];
        }
        free(x);
        free(y);
    }
    t_check("deltanet.dot_vec_ref_is_cpu_dot_vec", ok, "n = %lld differs", (long long)bad);
}

/* --------------------------------------------------------------- conv */

/* be_ssm_conv on be (whole op, its thread split) and cpu_conv_fast on
 * each path, all against cpu_conv_ref: outputs and the new tail. */
static void test_conv(int64_t T, int64_t C, int64_t Kc, bool packed)
{
    char name[96];
    snprintf(name, sizeof name, "deltanet.conv_t%lld_c%lld_k%lld%s", (long long)T, (long long)C,
             (long long)Kc, packed ? "_packed" : "_strided");
    t_rng r = t_rng_named(name);
    float *x = t_randv(&r, T * C, 1), *tail0 = t_randv(&r, C * (Kc - 1), 1);
    float *wv = t_randv(&r, C * Kc, 1);
    for (int64_t i = 0; i < T * C; i += 17)
        x[i] = (i / 17) % 2 ? -0.0f : 0.0f;       /* signed zeros: the 0 + p start */
    const int64_t nt = Kc - 1;
    float *yr = malloc(sizeof(float) * (size_t)(T * C)), *yg = malloc(sizeof(float) * (size_t)(T * C));
    float *tr = malloc(sizeof(float) * (size_t)(C * nt + 1)), *tg = malloc(sizeof(float) * (size_t)(C * nt + 1));

    be_tensor *px, *pt, *py;
    /* packed: the session's tail tensor (row stride Kc-1, the permuting
     * kernel's case); strided: a view, the general kernel */
    be_tensor *xt = strided(be1, &px, x, T, C), *tl;
    if (packed) {
        pt = tl = be_tensor_new(be1, C, nt);
        be_write(be1, tl, 0, C, tail0);
    } else {
        tl = strided(be1, &pt, tail0, C, nt);
    }
    be_tensor *y = strided(be1, &py, NULL, T, C);
    cpu_conv_ref(xt, tl, wv, Kc, y, 0, C);
    be_read(be1, y, 0, T, yr);
    be_read(be1, tl, 0, C, tr);

    gguf_tensor gt = { .name = "c", .type = QT_F32, .n_dims = 2,
                       .ne = { (uint64_t)Kc, (uint64_t)C, 1, 1 }, .data = wv,
                       .nbytes = (uint64_t)(C * Kc) * 4 };
    const char *how[] = { "be1", "be2", "avx512", "avx2", "plain" };
    for (int p = 0; p < 5; p++) {
        be_ctx *be = p == 1 ? be2 : be1;
        be_write(be1, tl, 0, C, tail0);
        be_zero(be1, py);
        if (p < 2) {
            be_weight *bw;
            be_weight_bind(be, &gt, &bw, NULL);
            be_batch b = t_batch1(be, be_rows_of(xt), 0, be_rows_of(xt), 0);
            be_ssm_conv(be, xt, tl, bw, &b, y);
            be_batch_free(be, &b);
        } else {
            cpu_conv_fast(xt, tl, wv, Kc, y, 0, C, p - 1);
        }
        be_read(be1, y, 0, T, yg);
        be_read(be1, tl, 0, C, tg);
        char cname[128];
        snprintf(cname, sizeof cname, "%s_%s", name, how[p]);
        int64_t at = 0, at2 = 0;
        bool oy = same(yr, yg, T * C, &at), ot = same(tr, tg, C * nt, &at2);
        t_check(cname, oy && ot, "%s differs at %lld", oy ? "tail" : "output",
                (long long)(oy ? at2 : at));
    }
    be_tensor_free(be1, px); be_tensor_free(be1, pt); be_tensor_free(be1, py);
    free(x); free(tail0); free(wv); free(yr); free(yg); free(tr); free(tg);
}

/* ---------------------------------------------------------- delta rule */

typedef struct {
    int64_t T, Hk, Hv, dk, W;
    float *qkv, *g, *b, *S0;
} gdn_case;

static void gdn_inputs(gdn_case *c, const char *name)
{
    t_rng r = t_rng_named(name);
    const int64_t W = (2 * c->Hk + c->Hv) * c->dk, dk = c->dk;
    c->W = W;
    c->qkv = t_randv(&r, c->T * W, 1);
    c->g = malloc(sizeof(float) * (size_t)(c->T * c->Hv));
    c->b = malloc(sizeof(float) * (size_t)(c->T * c->Hv));
    c->S0 = t_randv(&r, c->Hv * dk * dk, 0.1f);
    for (int64_t t = 0; t < c->T; t++)                 /* unit q and k, as after the L2 norm */
        for (int64_t h = 0; h < 2 * c->Hk; h++) {
            float *v = c->qkv + t * W + h * dk;
            double n2 = 0;
            for (int64_t i = 0; i < dk; i++)
                n2 += (double)v[i] * v[i];
            for (int64_t i = 0; i < dk; i++)
                v[i] = (float)(v[i] / sqrt(n2));
        }
    for (int64_t i = 0; i < c->T * c->Hv; i++) {
        c->g[i] = -2.0f * t_uniform(&r);
        c->b[i] = t_uniform(&r);
    }
}

static void gdn_free(gdn_case *c)
{
    free(c->qkv); free(c->g); free(c->b); free(c->S0);
}

/* be_deltanet with 1 and 2 threads against cpu_deltanet_ref (the op as it
 * was first written): outputs and final state. */
static void test_deltanet(int64_t T, int64_t Hk, int64_t Hv, int64_t dk)
{
    char name[96];
    snprintf(name, sizeof name, "deltanet.rule_t%lld_hk%lld_hv%lld_dk%lld", (long long)T,
             (long long)Hk, (long long)Hv, (long long)dk);
    gdn_case c = { .T = T, .Hk = Hk, .Hv = Hv, .dk = dk };
    gdn_inputs(&c, name);
    const int64_t no = T * Hv * dk, ns = Hv * dk * dk;
    float *orf = malloc(sizeof(float) * (size_t)no), *og = malloc(sizeof(float) * (size_t)no);
    float *srf = malloc(sizeof(float) * (size_t)ns), *sg = malloc(sizeof(float) * (size_t)ns);
    be_tensor *pq, *po;
    be_tensor *qt = strided(be1, &pq, c.qkv, T, c.W);
    be_tensor *gt = be_tensor_new(be1, T, Hv), *bt = be_tensor_new(be1, T, Hv);
    be_tensor *St = be_tensor_new(be1, Hv, dk * dk), *ot = strided(be1, &po, NULL, T, Hv * dk);
    be_write(be1, gt, 0, T, c.g);
    be_write(be1, bt, 0, T, c.b);
    be_write(be1, St, 0, Hv, c.S0);
    cpu_deltanet_ref(qt, gt, bt, St, Hk, Hv, dk, ot);
    be_read(be1, ot, 0, T, orf);
    be_read(be1, St, 0, Hv, srf);
    for (int p = 0; p < 2; p++) {
        be_ctx *be = p ? be2 : be1;
        be_write(be1, St, 0, Hv, c.S0);
        be_zero(be1, po);
        be_batch b = t_batch1(be, T, 0, T, 0);
        be_deltanet(be, qt, gt, bt, St, Hk, Hv, dk, &b, ot);
        be_batch_free(be, &b);
        be_read(be1, ot, 0, T, og);
        be_read(be1, St, 0, Hv, sg);
        char cname[128];
        snprintf(cname, sizeof cname, "%s_%dthr", name, p + 1);
        int64_t a1 = 0, a2 = 0;
        bool oo = same(orf, og, no, &a1), os = same(srf, sg, ns, &a2);
        t_check(cname, oo && os, "%s differs at %lld", oo ? "state" : "output",
                (long long)(oo ? a2 : a1));
    }
    be_tensor *all[] = { pq, gt, bt, St, po };
    for (int i = 0; i < 5; i++)
        be_tensor_free(be1, all[i]);
    free(orf); free(og); free(srf); free(sg);
    gdn_free(&c);
}

/* cpu_deltanet_rows against cpu_deltanet_rows_ref for one head in a lane order W
 * (8: the AVX2 kernel, which this machine runs but its llama.cpp does not;
 * 16: the AVX-512 kernels), rows split in uneven blocks. */
static void test_deltanet_rows(int64_t T, int64_t dk, int W)
{
    char name[96];
    snprintf(name, sizeof name, "deltanet.rows_w%d_t%lld_dk%lld", W, (long long)T, (long long)dk);
    gdn_case c = { .T = T, .Hk = 1, .Hv = 1, .dk = dk };
    gdn_inputs(&c, name);
    float *dec = malloc(sizeof(float) * (size_t)T);
    for (int64_t t = 0; t < T; t++)
        dec[t] = expf(c.g[t]);
    float *o[2], *S[2];
    for (int p = 0; p < 2; p++) {
        o[p] = calloc((size_t)(T * dk), sizeof(float));
        S[p] = malloc(sizeof(float) * (size_t)(dk * dk));
        memcpy(S[p], c.S0, sizeof(float) * (size_t)(dk * dk));
        const cpu_deltanet_head hd = { .q = c.qkv, .k = c.qkv + dk, .v = c.qkv + 2 * dk, .ld = c.W,
                                  .decay = dec, .dstride = 1, .beta = c.b, .bstride = 1,
                                  .out = o[p], .ldo = dk, .T = T, .dk = dk,
                                  .scale = 1.0f / sqrtf((float)dk) };
        for (int64_t j0 = 0; j0 < dk; j0 += 7) {
            const int64_t j1 = j0 + 7 < dk ? j0 + 7 : dk;
            if (p == 0)
                cpu_deltanet_rows_ref(&hd, S[p], j0, j1, W);
            else
                cpu_deltanet_rows(&hd, S[p], j0, j1, W);
        }
    }
    int64_t a1 = 0, a2 = 0;
    bool oo = same(o[0], o[1], T * dk, &a1), os = same(S[0], S[1], dk * dk, &a2);
    t_check(name, oo && os, "%s differs at %lld", oo ? "state" : "output",
            (long long)(oo ? a2 : a1));
    for (int p = 0; p < 2; p++) {
        free(o[p]);
        free(S[p]);
    }
    free(dec);
    gdn_case *cp = &c;
    gdn_free(cp);
}

/* ---------------------------------------------------------------- bench */

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void bench(void)
{
    static const int64_t gdn[][3] = { { 512, 16, 16 }, { 512, 16, 32 }, { 1, 16, 16 }, { 1, 16, 32 } };
    printf("one thread, thread CPU time, best of 5, noisy; dk 128 (state warm in cache)\n");
    for (size_t i = 0; i < sizeof gdn / sizeof gdn[0]; i++) {
        const int64_t T = gdn[i][0], Hk = gdn[i][1], Hv = gdn[i][2], dk = 128;
        gdn_case c = { .T = T, .Hk = Hk, .Hv = Hv, .dk = dk };
        gdn_inputs(&c, "bench");
        be_tensor *qt = be_tensor_new(be1, T, c.W), *gt = be_tensor_new(be1, T, Hv);
        be_tensor *bt = be_tensor_new(be1, T, Hv), *St = be_tensor_new(be1, Hv, dk * dk);
        be_tensor *ot = be_tensor_new(be1, T, Hv * dk);
        be_write(be1, qt, 0, T, c.qkv);
        be_write(be1, gt, 0, T, c.g);
        be_write(be1, bt, 0, T, c.b);
        be_write(be1, St, 0, Hv, c.S0);
        double bf = 1e30, br = 1e30;
        be_batch b = t_batch1(be1, T, 0, T, 0);
        for (int r = 0; r < 5; r++) {
            double t0 = cpu_s();
            be_deltanet(be1, qt, gt, bt, St, Hk, Hv, dk, &b, ot);
            double t1 = cpu_s();
            cpu_deltanet_ref(qt, gt, bt, St, Hk, Hv, dk, ot);
            double t2 = cpu_s();
            bf = t1 - t0 < bf ? t1 - t0 : bf;
            br = t2 - t1 < br ? t2 - t1 : br;
        }
        printf("deltanet T=%-4lld Hk=%lld Hv=%lld: op %8.3f ms  reference %8.3f ms  (%.1fx)\n",
               (long long)T, (long long)Hk, (long long)Hv, 1e3 * bf, 1e3 * br, br / bf);
        be_batch_free(be1, &b);
        be_tensor *all[] = { qt, gt, bt, St, ot };
        for (int k = 0; k < 5; k++)
            be_tensor_free(be1, all[k]);
        gdn_free(&c);
    }
    static const int64_t conv[][2] = { { 512, 6144 }, { 512, 8192 }, { 1, 6144 }, { 1, 8192 } };
    for (size_t i = 0; i < sizeof conv / sizeof conv[0]; i++) {
        const int64_t T = conv[i][0], C = conv[i][1];
        t_rng r = t_rng_named("bench");
        float *x = t_randv(&r, T * C, 1), *w = t_randv(&r, 4 * C, 1);
        be_tensor *xt = be_tensor_new(be1, T, C), *tl = be_tensor_new(be1, C, 3);
        be_tensor *y = be_tensor_new(be1, T, C);
        be_write(be1, xt, 0, T, x);
        be_zero(be1, y);
        double bf = 1e30, br = 1e30;
        for (int k = 0; k < 5; k++) {
            double t0 = cpu_s();
            cpu_conv_fast(xt, tl, w, 4, y, 0, C, 0);
            double t1 = cpu_s();
            cpu_conv_ref(xt, tl, w, 4, y, 0, C);
            double t2 = cpu_s();
            bf = t1 - t0 < bf ? t1 - t0 : bf;
            br = t2 - t1 < br ? t2 - t1 : br;
        }
        printf("conv     T=%-4lld C=%lld Kc=4: fast %8.3f ms  reference %8.3f ms  (%.1fx)\n",
               (long long)T, (long long)C, 1e3 * bf, 1e3 * br, br / bf);
        be_tensor_free(be1, xt); be_tensor_free(be1, tl); be_tensor_free(be1, y);
        free(x); free(w);
    }
}

int main(int argc, char **argv)
{
    q36_err err = { 0 };
    if (be_cpu_new(1, &be1, &err) != 0 || be_cpu_new(2, &be2, &err) != 0) {
        t_fail("deltanet.setup", "be_cpu_new: %s", err.msg);
        return t_exit();
    }
    if (argc > 1 && strcmp(argv[1], "bench") == 0) {
        bench();
        be_free(be1);
        be_free(be2);
        return 0;
    }
    test_dot_order();
    /* real: the 0.8B geometry (6144 channels, kernel 4) */
    static const int64_t conv_T[] = { 1, 2, 3, 7, 64, 600 };
    for (size_t i = 0; i < sizeof conv_T / sizeof conv_T[0]; i++) {
        test_conv(conv_T[i], 6144, 4, true);
        test_conv(conv_T[i], 6144, 4, false);
    }
    /* odd: channels off the 16-block, tiny and long kernels, T < Kc-1 */
    test_conv(1, 33, 4, true);
    test_conv(2, 257, 4, true);
    test_conv(3, 257, 5, false);
    test_conv(2, 16, 1, true);
    test_conv(1, 31, 2, false);
    test_conv(2, 100, 17, true);
    test_conv(0, 64, 4, true);                    /* no tokens: tail untouched */
    /* real: Hk 16, Hv 16 (0.8B) and 32 (2B and up), dk 128 */
    test_deltanet(1, 16, 16, 128);
    test_deltanet(7, 16, 16, 128);
    test_deltanet(64, 16, 32, 128);
    test_deltanet(600, 16, 16, 128);
    test_deltanet(1, 16, 32, 128);
    /* odd: dk 64 and 96 (a tail after the 64-element steps), Hv = 2 Hk */
    for (int64_t T = 1; T <= 3; T++) {
        test_deltanet(T, 2, 4, 64);
        test_deltanet(T, 1, 2, 96);
        test_deltanet(T, 3, 6, 40);
    }
    test_deltanet(33, 2, 4, 16);
    test_deltanet(0, 2, 4, 64);                   /* no tokens: state untouched */
    /* each lane order's kernel against its plain form */
    static const int64_t dks[] = { 128, 96, 64, 40, 16, 8, 130 };
    for (int W = 8; W <= 16; W += 8)
        for (size_t i = 0; i < sizeof dks / sizeof dks[0]; i++) {
            test_deltanet_rows(1, dks[i], W);
            test_deltanet_rows(3, dks[i], W);
            test_deltanet_rows(64, dks[i], W);
        }
    be_free(be1);
    be_free(be2);
    return t_exit();
}
