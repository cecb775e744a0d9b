/* test_ggml_conv.c: the CPU backend's short causal convolution (be_ssm_conv:
 * cpu_conv_ref and every cpu_conv_fast path) against GGML_OP_SSM_CONV run
 * by the libggml-cpu variant llama.cpp loads on this machine (dlopen, the
 * best ggml_backend_score among the x86 variants; a one-op graph through
 * that variant's ggml_graph_compute_with_ctx), bit for bit:
 *   conv_tT_cC_kK  T tokens after a random tail of K-1 earlier rows, C
 *                  channels (16-lane blocks and a ragged end), kernel K:
 *                  outputs and the new tail. A path this CPU lacks is a skip.
 * ggml's ssm_conv is C++ built as GNU C++17: GCC vectorizes the tap loop of
 * the variant in blocks (8 floats in the AVX-512 builds, 4 in haswell's;
 * products rounded, then summed in order) and contracts the taps after the
 * last block into fused multiply-adds. With the models' 4 taps that is all
 * fused on zen4 and all unfused on haswell; K = 5, 8, 9, 12 and 17 cover the
 * block edges of both. One ulp here matters: the first token of a prompt has
 * a zero tail, so only its last tap counts, but from the second token on a
 * Q6_K file's F16 ssm_out input rounding turns single-ulp conv differences
 * into 1e-2 logit errors (8 layers, 600 tokens: 0.16 and 24 argmax flips). */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_deltanet.h"
#include "ggml.h"
#include "ggml-cpu.h"
#include "ggml_cpu_lib.h"
#include "quant/quant.h"
#include "test.h"

typedef enum ggml_status (*compute_fn)(struct ggml_context *, struct ggml_cgraph *, int);
static compute_fn g_compute;

/* ggml's conv of one sequence: sx {K-1+T, C} (each channel's tail, then
 * its T inputs), c {K, C}; out {C, T}. */
static int ggml_conv(const float *tail, const float *x, const float *w, int64_t T, int64_t C,
                     int64_t K, float *out)
{
    struct ggml_init_params ip = { .mem_size = (size_t)(2 * (K - 1 + T) * C + K * C) * 4 + (1 << 20),
                                   .mem_buffer = NULL, .no_alloc = false };
    struct ggml_context *ctx = ggml_init(ip);
    if (!ctx)
        return -1;
    struct ggml_tensor *sx = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, K - 1 + T, C, 1);
    struct ggml_tensor *c = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, C);
    float *s = sx->data;
    for (int64_t ch = 0; ch < C; ch++) {
        for (int64_t i = 0; i < K - 1; i++)
            s[ch * (K - 1 + T) + i] = tail[ch * (K - 1) + i];
        for (int64_t t = 0; t < T; t++)
            s[ch * (K - 1 + T) + K - 1 + t] = x[t * C + ch];
    }
    memcpy(c->data, w, sizeof(float) * (size_t)(K * C));
    struct ggml_tensor *y = ggml_ssm_conv(ctx, sx, c);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, y);
    int rc = g_compute(ctx, gf, 1) == GGML_STATUS_SUCCESS ? 0 : -1;
    if (rc == 0)
        memcpy(out, y->data, sizeof(float) * (size_t)(T * C));
    ggml_free(ctx);
    return rc;
}

static int64_t first_diff(const float *a, const float *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0)
            return i;
    return -1;
}

static void test_conv(be_ctx *be, int64_t T, int64_t C, int64_t K)
{
    char name[96];
    snprintf(name, sizeof name, "ggml_conv.conv_t%lld_c%lld_k%lld", (long long)T, (long long)C,
             (long long)K);
    t_rng r = t_rng_named(name);
    float *x = t_randv(&r, T * C, 1), *tail0 = t_randv(&r, C * (K - 1) + 1, 1);
    float *w = t_randv(&r, C * K, 1);
    float *yg = malloc(sizeof(float) * (size_t)(T * C)), *yq = malloc(sizeof(float) * (size_t)(T * C));
    float *tq = malloc(sizeof(float) * (size_t)(C * (K - 1) + 1));
    if (ggml_conv(tail0, x, w, T, C, K, yg) != 0) {
        t_fail(name, "ggml graph failed");
        goto done;
    }
    be_tensor *xt = be_tensor_new(be, T, C), *tl = be_tensor_new(be, C, K - 1);
    be_tensor *y = be_tensor_new(be, T, C);
    be_write(be, xt, 0, T, x);
    static const char *how[] = { "ref", "avx512", "avx2", "plain" };
    __builtin_cpu_init();
    const bool has[] = { true, quant_path_available(QUANT_PATH_AVX512),
                         quant_path_available(QUANT_PATH_AVX2) && __builtin_cpu_supports("fma"), true };
    for (int p = 0; p < 4; p++) {
        char cname[128];
        snprintf(cname, sizeof cname, "%s_%s", name, how[p]);
        if (!has[p]) {
            t_skip(cname, "this CPU lacks the path's instructions");
            continue;
        }
        be_write(be, tl, 0, C, tail0);
        be_zero(be, y);
        if (p == 0)
            cpu_conv_ref(xt, tl, w, K, y, 0, C);
        else
            cpu_conv_fast(xt, tl, w, K, y, 0, C, p);
        be_read(be, y, 0, T, yq);
        be_read(be, tl, 0, C, tq);
        /* ggml's tail is the last K-1 entries of each channel's [tail | x] */
        int64_t bad_tail = -1;
        for (int64_t ch = 0; ch < C && bad_tail < 0; ch++)
            for (int64_t i = 0; i < K - 1; i++) {
                const int64_t k = T + i;
                const float want = k < K - 1 ? tail0[ch * (K - 1) + k] : x[(k - (K - 1)) * C + ch];
                if (memcmp(&want, &tq[ch * (K - 1) + i], sizeof want) != 0)
                    bad_tail = ch;
            }
        const int64_t at = first_diff(yg, yq, T * C);
        int64_t nd = 0;
        for (int64_t i = 0; i < T * C; i++)
            nd += memcmp(&yg[i], &yq[i], sizeof(float)) != 0;
        t_check(cname, at < 0 && bad_tail < 0, "%lld of %lld outputs differ (first at token %lld "
                "channel %lld: q36 %.9g ggml %.9g); tail channel %lld", (long long)nd,
                (long long)(T * C), (long long)(at < 0 ? -1 : at / C), (long long)(at < 0 ? -1 : at % C),
                at < 0 ? 0.0 : yq[at], at < 0 ? 0.0 : yg[at], (long long)bad_tail);
    }
    be_tensor_free(be, xt); be_tensor_free(be, tl); be_tensor_free(be, y);
done:
    free(x); free(tail0); free(w); free(yg); free(yq); free(tq);
}

int main(void)
{
    char why[600];
    char variant[64] = "";
    g_compute = (compute_fn)t_ggml_best_compute(variant, sizeof variant, why, sizeof why);
    if (!g_compute) {
        t_fail("ggml_conv.load", "%s", why);
        return t_exit();
    }
    printf("# ggml variant %s\n", variant);
    t_ok("ggml_conv.load");
    be_ctx *be;
    q36_err err = { 0 };
    if (be_cpu_new(1, &be, &err) != 0) {
        t_fail("ggml_conv.setup", "be_cpu_new: %s", err.msg);
        return t_exit();
    }
    /* T: decode, a short prompt, a ubatch; C: the tiny model's 256 and 768,
     * a ragged 40 (16-lane blocks + a scalar end), 6144 (0.8b); K: the
     * models' 4 and odd kernels */
    static const int64_t cases[][3] = { { 1, 256, 4 }, { 7, 768, 4 }, { 64, 768, 4 },
                                        { 7, 40, 4 }, { 3, 6144, 4 }, { 5, 48, 2 },
                                        { 9, 33, 5 }, { 1, 16, 1 }, { 3, 32, 8 },
                                        { 4, 40, 9 }, { 2, 48, 12 }, { 3, 16, 17 } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        test_conv(be, cases[i][0], cases[i][1], cases[i][2]);
    be_free(be);
    return t_exit();
}
