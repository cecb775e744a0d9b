/* test_ggml_backend.c: the CPU backend's float recipes against the kernels
 * of the libggml-cpu variant llama.cpp loads on this machine (dlopen, the
 * best ggml_backend_score among the x86 variants), called directly:
 *   dot_vec_N    cpu_dot_vec (ggml_vec_dot_f32's accumulation order) equals
 *                ggml_vec_dot_f32 bit for bit, N = 1 .. 4096 (tails too)
 *   silu         be_silu vs ggml_vec_silu_f32: bit for bit (full vectors
 *                through ggml's lane exp, cpu_gexp.h; the row's tail through
 *                libm's expf, as ggml). Before q36 took the lane exp, 26.6%
 *                of elements were an ulp or more apart, and a Q8 rounding of
 *                a SiLU output could flip a code (MODEL.md §9.2).
 *   dot_q6_K     cpu_dot_q6_K_ggml (AVX2) and its plain-C reference equal
 *                the variant's own vec_dot for Q6_K x Q8_K bit for bit
 *                (weights from ggml_quantize_chunk, activations from q36's
 *                byte-exact Q8_K quantizer); q36 uses it for Q6_K weights,
 *                which llama.cpp does not repack on x86
 *   dot_f16_vec, dot_bf16_vec  cpu_dot_f16_vec / cpu_dot_bf16_vec equal the
 *                variant's vec_dot for F16 and BF16 (llama.cpp's one-token
 *                path) bit for bit
 *   softmax      probabilities of a row as be_attention forms them (ggml's
 *                lane exp, cpu_gexp.h; per-vector tree sums into a double)
 *                vs ggml_vec_soft_max_f32 + its 1/sum scaling on the padded,
 *                -inf-masked row llama.cpp gives it: bit for bit
 *   moe_route    be_moe_route's weights from ggml's softmax of the router
 *                logits (top k over their double sum): bit for bit. */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_gexp.h"
#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_vexp.h"
#include "ggml.h"
#include "ggml-cpu.h"
#include "quant/quant.h"
#include "quant/fp16.h"
#include "test.h"
#include "ggml_cpu_lib.h"

typedef void (*dot_f32_fn)(int, float *, size_t, const float *, size_t, const float *, size_t, int);
typedef void (*silu_fn)(int, float *, const float *);
typedef double (*softmax_fn)(int, float *, const float *, float);

typedef const struct ggml_type_traits_cpu *(*traits_fn)(enum ggml_type);
static traits_fn g_traits;
static dot_f32_fn g_dot;
static silu_fn g_silu;
static softmax_fn g_softmax;

/* Takes the ggml row functions from the variant llama.cpp loads here;
 * `variant` gets its name. 0, or -1 with `why` set. */
static int load_cpu(char *variant, size_t vn, char *why, size_t wn)
{
    void *h = t_ggml_best_variant(variant, vn, why, wn);
    if (!h)
        return -1;
    void (*init)(void) = (void (*)(void))dlsym(h, "ggml_cpu_init");
    g_dot = (dot_f32_fn)dlsym(h, "ggml_vec_dot_f32");
    g_silu = (silu_fn)dlsym(h, "ggml_vec_silu_f32");
    g_softmax = (softmax_fn)dlsym(h, "ggml_vec_soft_max_f32");
    g_traits = (traits_fn)dlsym(h, "ggml_get_type_traits_cpu");
    if (!init || !g_dot || !g_silu || !g_softmax) {
        snprintf(why, wn, "libggml-cpu-%s.so lacks ggml_cpu_init/ggml_vec_dot_f32/"
                 "ggml_vec_silu_f32/ggml_vec_soft_max_f32", variant);
        return -1;
    }
    init();
    return 0;
}

static int64_t ulps(float a, float b)
{
    int32_t ia = (int32_t)quant_f32_bits(a), ib = (int32_t)quant_f32_bits(b);
    if (ia < 0) ia = INT32_MIN - ia;
    if (ib < 0) ib = INT32_MIN - ib;
    return llabs((long long)ia - ib);
}

int main(void)
{
    char variant[64] = "", why[1200];
    if (load_cpu(variant, sizeof variant, why, sizeof why) != 0) {
        t_fail("ggml_backend.load", "%s", why);
        return t_exit();
    }
    printf("# ggml variant %s, q36 lanes %d\n", variant, cpu_lanes());
    t_ok("ggml_backend.load");

    int ns[] = { 1, 31, 33, 64, 128, 255, 257, 4096 };
    for (int c = 0; c < 8; c++) {
        char name[64];
        snprintf(name, sizeof name, "ggml_backend.dot_vec_%d", ns[c]);
        t_rng r = t_rng_named(name);
        int n = ns[c], bad = 0;
        float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
        float mine = 0, theirs = 0;
        for (int rep = 0; rep < 50 && !bad; rep++) {
            for (int i = 0; i < n; i++) {
                x[i] = t_gauss(&r);
                y[i] = t_gauss(&r);
            }
            mine = cpu_dot_vec(n, x, y);
            g_dot(n, &theirs, 0, x, 0, y, 0, 1);
            bad = quant_f32_bits(mine) != quant_f32_bits(theirs);
        }
        t_check(name, !bad, "q36 %.9g ggml %.9g", mine, theirs);
        free(x);
        free(y);
    }

    /* Q6_K */
    if (g_traits) {
        t_rng r = t_rng_named("q6_K");
        const int n = 2048;
        float *w = malloc(sizeof(float) * n), *x = malloc(sizeof(float) * n);
        uint8_t *wq = malloc(ggml_row_size(GGML_TYPE_Q6_K, n)), *aq = malloc(ggml_row_size(GGML_TYPE_Q8_K, n));
        int bad = 0, bad_ref = 0;
        for (int rep = 0; rep < 100; rep++) {
            for (int i = 0; i < n; i++) {
                w[i] = t_gauss(&r) * (rep % 3 ? 1.0f : 0.01f);
                x[i] = t_gauss(&r) * (i % 97 ? 1.0f : 20.0f);
            }
            ggml_quantize_chunk(GGML_TYPE_Q6_K, w, wq, 0, 1, n, NULL);
            quant_act_quantize(QT_Q8_K, x, aq, n);
            float theirs;
            g_traits(GGML_TYPE_Q6_K)->vec_dot(n, &theirs, 0, wq, 0, aq, 0, 1);
            bad += quant_f32_bits(cpu_dot_q6_K_ggml(n, wq, aq)) != quant_f32_bits(theirs);
            bad_ref += quant_f32_bits(cpu_dot_q6_K_ggml_ref(n, wq, aq)) != quant_f32_bits(theirs);
        }
        t_check("ggml_backend.dot_q6_K", !bad && !bad_ref, "%d (vector) and %d (reference) of 100 rows differ",
                bad, bad_ref);
        free(w); free(x); free(wq); free(aq);
    } else {
        t_fail("ggml_backend.dot_q6_K", "the variant lacks ggml_get_type_traits_cpu");
    }

    /* F16: ggml's vec_dot order (cpu_dot_f16_vec) */
    if (g_traits) {
        t_rng r = t_rng_named("f16");
        int bad = 0;
        for (int rep = 0; rep < 100; rep++) {
            const int n = 64 * (1 + rep % 8) + (rep % 3 ? 0 : 17);
            uint16_t w[600], x[600];
            for (int i = 0; i < n; i++) {
                w[i] = quant_f32_to_f16(t_gauss(&r));
                x[i] = quant_f32_to_f16(t_gauss(&r));
            }
            float theirs;
            g_traits(GGML_TYPE_F16)->vec_dot(n, &theirs, 0, w, 0, x, 0, 1);
            bad += quant_f32_bits(cpu_dot_f16_vec(n, w, x)) != quant_f32_bits(theirs);
        }
        t_check("ggml_backend.dot_f16_vec", !bad, "%d of 100 rows differ", bad);
    }

    /* BF16: ggml's vec_dot order (cpu_dot_bf16_vec), where q36 has the
     * order of the variant: AVX-512 BF16 (vdpbf16ps, also emulated by the
     * reference) or the 8-lane AVX2 build */
    const bool bf16_dp = cpu_avx512_ok() && __builtin_cpu_supports("avx512bf16");
    if (g_traits && (bf16_dp || cpu_lanes() == 8)) {
        t_rng r = t_rng_named("bf16");
        int bad = 0;
        for (int rep = 0; rep < 100; rep++) {
            const int n = 64 * (1 + rep % 8) + (rep % 3 ? 0 : 16);
            uint16_t w[600], x[600];
            for (int i = 0; i < n; i++) {
                w[i] = quant_f32_to_bf16(t_gauss(&r));
                x[i] = quant_f32_to_bf16(t_gauss(&r) * (rep % 5 ? 1.0f : 1e-38f));
            }
            float theirs;
            g_traits(GGML_TYPE_BF16)->vec_dot(n, &theirs, 0, w, 0, x, 0, 1);
            bad += quant_f32_bits(cpu_dot_bf16_vec(n, w, x)) != quant_f32_bits(theirs);
            if (!bf16_dp)
                continue;
            bad += quant_f32_bits(cpu_dot_bf16_vec_ref(n, w, x)) != quant_f32_bits(theirs);
            if (n % 32 == 0)   /* the GEMM order: instruction vs its emulation */
                bad += quant_f32_bits(cpu_dot_bf16_lanes(n, w, x)) !=
                       quant_f32_bits(cpu_dot_bf16_lanes_ref(n, w, x));
        }
        t_check("ggml_backend.dot_bf16_vec", !bad, "%d mismatches over 100 rows", bad);
    } else {
        t_skip("ggml_backend.dot_bf16_vec", "this CPU has AVX-512 without its BF16 extension (q36 "
               "then uses the quant module's BF16 dot, within a bound of ggml's)");
    }

    /* silu */
    {
        const int n = (1 << 16) + 7;   /* a tail past the last full vector */
        t_rng r = t_rng_named("silu");
        float *x = malloc(sizeof(float) * n), *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
        for (int i = 0; i < n; i++)
            x[i] = t_gauss(&r) * 6;
        be_ctx *be;
        be_cpu_new(1, &be, NULL);
        be_tensor *t = be_tensor_new(be, 1, n);
        be_write(be, t, 0, 1, x);
        be_silu(be, t, t);
        be_read(be, t, 0, 1, a);
        g_silu(n, b, x);
        int64_t worst = 0, diff = 0;
        for (int i = 0; i < n; i++) {
            int64_t u = ulps(a[i], b[i]);
            worst = u > worst ? u : worst;
            diff += u != 0;
        }
        printf("# silu: %lld of %d elements differ from ggml's (%.2f%%), at most %lld ulp\n",
               (long long)diff, n, 100.0 * diff / n, (long long)worst);
        t_check("ggml_backend.silu", diff == 0, "%lld elements differ, worst %lld ulp", (long long)diff,
                (long long)worst);
        be_tensor_free(be, t);
        be_free(be);
        free(x); free(a); free(b);
    }

    /* softmax of attention rows as llama.cpp forms them: a padded row (a
     * multiple of 16 positions) whose masked tail is -inf, against
     * be_attention's recipe over the unmasked positions only */
    {
        t_rng r = t_rng_named("softmax");
        int64_t worst = 0, diff = 0, total = 0, masked_bad = 0;
        const int W = cpu_lanes(), level = cpu_vexp_level();
        for (int rep = 0; rep < 40; rep++) {
            const int n = 16 * (1 + (int)(t_next(&r) % 38)), valid = 1 + (int)(t_next(&r) % (uint64_t)n);
            float *x = malloc(sizeof(float) * n), *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
            float mx = -INFINITY;
            for (int i = 0; i < n; i++) {
                x[i] = i < valid ? t_gauss(&r) * 4 : -INFINITY;
                mx = x[i] > mx ? x[i] : mx;
            }
            double sum = 0;
            for (int p0 = 0; p0 < valid; p0 += W) {
                float lanes[16];
                for (int l = 0; l < W; l++)
                    lanes[l] = p0 + l < valid ? (a[p0 + l] = cpu_gexp1(level, x[p0 + l] - mx)) : 0.0f;
                sum += (double)cpu_lane_sum(lanes, W);
            }
            for (int i = 0; i < valid; i++)
                a[i] *= (float)(1.0 / sum);
            double gs = g_softmax(n, b, x, mx);
            for (int i = 0; i < n; i++)
                b[i] *= (float)(1.0 / gs);
            for (int i = 0; i < valid; i++) {
                int64_t u = ulps(a[i], b[i]);
                worst = u > worst ? u : worst;
                diff += u != 0;
            }
            for (int i = valid; i < n; i++)
                masked_bad += b[i] != 0.0f;
            total += valid;
            free(x); free(a); free(b);
        }
        printf("# softmax: %lld of %lld probabilities differ from ggml's (%.2f%%), at most %lld ulp\n",
               (long long)diff, (long long)total, 100.0 * diff / total, (long long)worst);
        t_check("ggml_backend.softmax", diff == 0 && masked_bad == 0,
                "%lld differ (worst %lld ulp), %lld masked positions not 0", (long long)diff, (long long)worst,
                (long long)masked_bad);
    }
    /* the MoE router's weights: ggml's softmax of the logits row (E = 64,
     * 256, and 10 and 72 for tails), top k, normalized by their double sum,
     * against be_moe_route bit for bit */
    {
        const int64_t Es[] = { 64, 256, 10, 72 }, ks[] = { 8, 8, 3, 5 };
        be_ctx *be;
        be_cpu_new(1, &be, NULL);
        for (int c = 0; c < 4; c++) {
            char name[64];
            snprintf(name, sizeof name, "ggml_backend.moe_route_e%lld", (long long)Es[c]);
            t_rng r = t_rng_named(name);
            const int64_t E = Es[c], k = ks[c], T = 5;
            float *l = malloc(sizeof(float) * (size_t)(T * E)), *p = malloc(sizeof(float) * (size_t)E);
            float *w = malloc(sizeof(float) * (size_t)(T * k));
            int32_t *sel = malloc(sizeof(int32_t) * (size_t)(T * k));
            for (int64_t i = 0; i < T * E; i++)
                l[i] = t_gauss(&r) * 2;
            be_tensor *lt = be_tensor_new(be, T, E), *wt = be_tensor_new(be, T, k);
            be_write(be, lt, 0, T, l);
            be_tensor *st = be_tensor_new_type(be, BE_I32, T, k);
            be_moe_route(be, lt, k, st, wt);
            be_read(be, st, 0, T, sel);
            be_tensor_free(be, st);
            be_read(be, wt, 0, T, w);
            int bad = 0;
            for (int64_t t = 0; t < T; t++) {
                const float *lr = l + t * E;
                float mx = -INFINITY;
                for (int64_t e = 0; e < E; e++)
                    mx = lr[e] > mx ? lr[e] : mx;
                const double gs = g_softmax((int)E, p, lr, mx);
                for (int64_t e = 0; e < E; e++)
                    p[e] *= (float)(1.0 / gs);
                double ws = 0;
                for (int64_t i = 0; i < k; i++)
                    ws += (double)p[sel[t * k + i]];
                const float wsum = (float)ws;
                for (int64_t i = 0; i < k; i++)
                    bad += quant_f32_bits(w[t * k + i]) != quant_f32_bits(p[sel[t * k + i]] / wsum);
            }
            t_check(name, bad == 0, "%d of %lld weights differ from ggml's softmax", bad, (long long)(T * k));
            be_tensor_free(be, lt);
            be_tensor_free(be, wt);
            free(l); free(p); free(w); free(sel);
        }
        be_free(be);
    }
    return t_exit();
}
