/* test_ggml_rope.c: the CPU backend's RoPE (be_rope: text positions
 * (p, p, p, 0) through Qwen3.5's interleaved multi-section rope, NEOX pairs
 * over the first n_rot dims) against GGML_OP_ROPE (ggml_rope_multi,
 * GGML_ROPE_TYPE_IMROPE) run by the libggml-cpu variant llama.cpp loads on
 * this machine (dlopen, the best ggml_backend_score among the x86 variants;
 * a one-op graph through its ggml_graph_compute_with_ctx), bit for bit:
 *   rope_hdD_rR_hH_tT_pP  T rows of H heads of D dims from position P, R
 *                         rotated dims, the models' sections for R.
 * ggml's rope is C++ built as GNU C++17, so on the FMA-capable variants GCC
 * contracts x0*cos - x1*sin into fma(x0, cos, -(x1*sin)); q36 rounded both
 * products before, an ulp off on 13-15% of the rotated outputs past
 * position 0, which attention carried into the logits (an 8-layer Q6_K file, 600
 * tokens: 2.1e-2 relative, 11 argmax flips; 0 with the fused form). */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "test_batch.h"
#include "ggml.h"
#include "ggml-cpu.h"
#include "ggml_cpu_lib.h"
#include "test.h"

typedef enum ggml_status (*compute_fn)(struct ggml_context *, struct ggml_cgraph *, int);
static compute_fn g_compute;

/* ggml's rope of x (T rows of H heads of D dims, row-major) at positions
 * pos0.. with text positions (p, p, p, 0) */
static int ggml_rope_ref(const float *x, int64_t T, int64_t H, int64_t D, int n_rot, const int32_t sec[4],
                     float base, int64_t pos0, float *out)
{
    struct ggml_init_params ip = { .mem_size = (size_t)(2 * T * H * D + 4 * T) * 4 + (1 << 20),
                                   .mem_buffer = NULL, .no_alloc = false };
    struct ggml_context *ctx = ggml_init(ip);
    if (!ctx)
        return -1;
    struct ggml_tensor *a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, D, H, T);
    struct ggml_tensor *p = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 4 * T);
    memcpy(a->data, x, sizeof(float) * (size_t)(T * H * D));
    int32_t *pd = p->data;
    for (int64_t t = 0; t < T; t++) {
        pd[t] = pd[T + t] = pd[2 * T + t] = (int32_t)(pos0 + t);
        pd[3 * T + t] = 0;
    }
    int s4[4] = { sec[0], sec[1], sec[2], sec[3] };
    struct ggml_tensor *y = ggml_rope_multi(ctx, a, p, NULL, n_rot, s4, GGML_ROPE_TYPE_IMROPE, 0,
                                            base, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, y);
    int rc = g_compute(ctx, gf, 1) == GGML_STATUS_SUCCESS ? 0 : -1;
    if (rc == 0)
        memcpy(out, y->data, sizeof(float) * (size_t)(T * H * D));
    ggml_free(ctx);
    return rc;
}

static void test_rope(be_ctx *be, int64_t T, int64_t H, int64_t D, int n_rot, const int32_t sec[4],
                      int64_t pos0)
{
    char name[96];
    snprintf(name, sizeof name, "ggml_rope.rope_hd%lld_r%d_h%lld_t%lld_p%lld", (long long)D, n_rot,
             (long long)H, (long long)T, (long long)pos0);
    t_rng r = t_rng_named(name);
    const int64_t n = T * H * D;
    float *x = t_randv(&r, n, 1);
    float *yg = malloc(sizeof(float) * (size_t)n), *yq = malloc(sizeof(float) * (size_t)n);
    if (ggml_rope_ref(x, T, H, D, n_rot, sec, 1e7f, pos0, yg) != 0) {
        t_fail(name, "ggml graph failed");
    } else {
        be_tensor *xt = be_tensor_new(be, T, H * D);
        be_write(be, xt, 0, T, x);
        be_batch b = t_batch1(be, T, pos0, pos0 + T, 0);
        be_rope(be, xt, D, n_rot, sec, 1e7f, b.pos);
        be_batch_free(be, &b);
        be_read(be, xt, 0, T, yq);
        be_tensor_free(be, xt);
        int64_t nd = 0, at = -1;
        for (int64_t i = 0; i < n; i++)
            if (memcmp(&yg[i], &yq[i], sizeof(float)) != 0) {
                nd++;
                at = at < 0 ? i : at;
            }
        t_check(name, nd == 0, "%lld of %lld outputs differ (first: row %lld col %lld, q36 %.9g "
                "ggml %.9g)", (long long)nd, (long long)n, (long long)(at / (H * D)),
                (long long)(at % (H * D)), at < 0 ? 0.0 : yq[at], at < 0 ? 0.0 : yg[at]);
    }
    free(x); free(yg); free(yq);
}

int main(void)
{
    char why[600];
    char variant[64] = "";
    g_compute = (compute_fn)t_ggml_best_compute(variant, sizeof variant, why, sizeof why);
    if (!g_compute) {
        t_fail("ggml_rope.load", "%s", why);
        return t_exit();
    }
    printf("# ggml variant %s\n", variant);
    t_ok("ggml_rope.load");
    be_ctx *be;
    q36_err err = { 0 };
    if (be_cpu_new(1, &be, &err) != 0) {
        t_fail("ggml_rope.setup", "be_cpu_new: %s", err.msg);
        return t_exit();
    }
    /* the synth tiny model (64 dims, 16 rotated), Qwen3.5's 256 / 64 with
     * sections 11/11/10, a 128 / 32 head far into the context */
    static const int32_t s16[4] = { 3, 3, 2, 0 }, s64[4] = { 11, 11, 10, 0 }, s32[4] = { 6, 5, 5, 0 };
    test_rope(be, 16, 4, 64, 16, s16, 0);
    test_rope(be, 1, 2, 64, 16, s16, 37);
    test_rope(be, 7, 8, 256, 64, s64, 0);
    test_rope(be, 33, 2, 256, 64, s64, 590);
    test_rope(be, 5, 3, 128, 32, s32, 262000);
    be_free(be);
    return t_exit();
}
