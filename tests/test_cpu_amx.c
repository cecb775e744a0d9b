/* test_cpu_amx.c: the order of llama.cpp's AMX matmuls (cpu_amx.c).
 *
 * - The AVX2 kernels (the per-output dots and the Q8_0 tile) give the
 *   plain-C references' bits, output for output, for Q8_0, Q6_K, Q4_K,
 *   Q5_K, IQ4_XS, Q4_0 and Q4_1 over real reduction lengths (256 ... 6144) and
 *   the shortest (32 / 256), weights with every code (-128 included for
 *   Q8_0) and scales of both signs over five decades, activations
 *   quantized as cpu_matmul.c quantizes them; the tile over shapes that are
 *   not multiples of its 2 x 4 block, padded strides.
 * - The references form the exact block sums: against a double-precision
 *   product of the dequantized operands they stay within the rounding of
 *   their fused multiply-add chain, and with data whose every product and
 *   sum is exact in float they equal the vec_dot (lanes) order's result.
 * - On data where the two orders round differently, they do differ: the
 *   kernel under test is not the lanes order under another name.
 * - cpu_amx_shape takes what llama.cpp's AMX buffer takes (rows a multiple
 *   of 32; K a multiple of 32 for Q8_0, of 256 for the K-quants; those
 *   types), and cpu_amx_weight the weights it holds (a tied head's too;
 *   not experts, not 3-D slabs).
 *
 * The order itself is llama.cpp's only on a CPU with AMX; there the
 * whole-model parity tests check it against the oracle (q36 picks it by
 * itself, cpu_amx_detect). The AVX2 cases skip on a CPU without AVX2 (as
 * the quant module sees it). */
#include "test.h"

#include <math.h>
#include <stdlib.h>

#include "backend/cpu/cpu_gemm_q8.h"
#include "backend/cpu/cpu_internal.h"
#include "quant/fp16.h"
#include "quant/quant.h"

#define Q8B 34
#define Q6B 210
#define Q4KB 144
#define Q5KB 176
#define IQ4B 136
#define Q40B 18
#define Q41B 20
#define Q81B 36
#define Q8KB 292

static uint16_t rand_scale(t_rng *r)
{
    const float d = powf(10.0f, 5.0f * t_uniform(r) - 6.0f);
    return quant_f32_to_f16(t_next(r) & 1 ? -d : d);
}

/* weight rows: random codes, scales from rand_scale (Q6_K: f16 d last;
 * Q4_K, Q5_K: d and dmin first) */
static uint8_t *weights(t_rng *r, uint32_t type, int64_t K)
{
    const bool b32 = type == QT_Q8_0 || type == QT_Q4_0 || type == QT_Q4_1;
    const int64_t nb = b32 ? K / 32 : K / 256;
    const int bb = type == QT_Q8_0 ? Q8B : type == QT_Q4_0 ? Q40B : type == QT_Q4_1 ? Q41B
                 : type == QT_Q6_K ? Q6B : type == QT_Q4_K ? Q4KB : type == QT_Q5_K ? Q5KB : IQ4B;
    uint8_t *w = malloc((size_t)(nb * bb));
    for (int64_t i = 0; i < nb * bb; i++)
        w[i] = (uint8_t)t_next(r);
    for (int64_t b = 0; b < nb; b++) {
        const uint16_t h = rand_scale(r), h2 = rand_scale(r);
        memcpy(w + b * bb + (type == QT_Q6_K ? 208 : 0), &h, 2);
        if (type == QT_Q4_K || type == QT_Q5_K || type == QT_Q4_1)   /* dmin, m */
            memcpy(w + b * bb + 2, &h2, 2);
    }
    return w;
}

/* one activation row of K, quantized to the weight's vec_dot_type */
static uint8_t *acts(t_rng *r, uint32_t type, int64_t K)
{
    const uint32_t at = type == QT_Q8_0 || type == QT_Q4_0 ? QT_Q8_0
                      : type == QT_Q4_1 ? QT_Q8_1 : QT_Q8_K;
    float *x = malloc(sizeof(float) * (size_t)K);
    const float s = powf(10.0f, 4.0f * t_uniform(r) - 2.0f);
    for (int64_t k = 0; k < K; k++)
        x[k] = s * t_gauss(r);
    uint8_t *a = malloc((size_t)(at == QT_Q8_0 ? K / 32 * Q8B
                                 : at == QT_Q8_1 ? K / 32 * Q81B : K / 256 * Q8KB));
    quant_act_quantize(at, x, a, K);
    free(x);
    return a;
}

static void same_bits(uint32_t type, const char *tn, quant_dot_fn fast, quant_dot_fn ref)
{
    static const int64_t ks8[] = { 32, 256, 1024, 2048, 3584, 6144 };
    static const int64_t ks6[] = { 256, 1024, 2048, 3584, 6144 };
    const bool b32 = type == QT_Q8_0 || type == QT_Q4_0 || type == QT_Q4_1;
    const int64_t *ks = b32 ? ks8 : ks6;   /* the K-quants and IQ4_XS: blocks of 256 */
    const int nk = b32 ? 6 : 5;
    t_rng r = t_rng_named(tn);
    for (int i = 0; i < nk; i++) {
        const int64_t K = ks[i];
        char name[96];
        snprintf(name, sizeof name, "amx.%s.avx2_same_bits_k%lld", tn, (long long)K);
        if (!quant_path_available(QUANT_PATH_AVX2)) {
            t_skip(name, "the CPU has no AVX2 with FMA and F16C");
            continue;
        }
        int bad = -1;
        float gf = 0, gr = 0;
        for (int rep = 0; rep < 200 && bad < 0; rep++) {
            uint8_t *w = weights(&r, type, K), *a = acts(&r, type, K);
            const float f = fast(K, w, a), g = ref(K, w, a);
            if (memcmp(&f, &g, 4))
                bad = rep, gf = f, gr = g;
            free(w), free(a);
        }
        t_check(name, bad < 0, "rep %d: kernel %.9g, reference %.9g", bad, gf, gr);
    }
}

/* the activation row of a weight type's products as floats (Q8_0, Q8_1;
 * Q8_K: f32 d, 256 codes, the sums after) */
static void act_dequant(uint32_t type, const uint8_t *a, float *x, int64_t K)
{
    if (type == QT_Q8_0 || type == QT_Q4_0 || type == QT_Q4_1) {
        quant_dequant_row(type == QT_Q4_1 ? QT_Q8_1 : QT_Q8_0, a, x, K);
        return;
    }
    for (int64_t b = 0; b < K / 256; b++, a += Q8KB) {
        float d;
        memcpy(&d, a, 4);
        for (int e = 0; e < 256; e++)
            x[256 * b + e] = d * (float)(int8_t)a[4 + e];
    }
}

/* Dequantized operands in double, and the bound on the chain's rounding:
 * each block's float conversion and fused multiply-add adds at most one
 * rounding of |terms so far| (2^-24 relative), the scale product one more. */
static void near_exact(uint32_t type, const char *tn, quant_dot_fn ref)
{
    const int64_t K = 2048;
    char name[96];
    snprintf(name, sizeof name, "amx.%s.ref_near_exact", tn);
    t_rng r = t_rng_named(name);
    float *wd = malloc(sizeof(float) * K), *ad = malloc(sizeof(float) * K);
    int bad = -1;
    double worst = 0;
    for (int rep = 0; rep < 50 && bad < 0; rep++) {
        uint8_t *w = weights(&r, type, K), *a = acts(&r, type, K);
        quant_dequant_row(type, w, wd, K);
        act_dequant(type, a, ad, K);
        double e = 0, m = 0;
        for (int64_t k = 0; k < K; k++)
            e += (double)wd[k] * ad[k], m += fabs((double)wd[k] * ad[k]);
        const double got = ref(K, w, a);
        const double bound = m * 0x1p-24 * (6.0 * (double)K / 32 + 4) + 1e-30;
        if (fabs(got - e) > bound)
            bad = rep;
        if (m > 0 && fabs(got - e) / m > worst)
            worst = fabs(got - e) / m;
        free(w), free(a);
    }
    free(wd), free(ad);
    t_check(name, bad < 0, "rep %d outside the rounding bound (worst relative %.3g)", bad, worst);
}

static float lanes_q8_0(int64_t n, const void *w, const void *a)
{
    return cpu_dot_q8_0_lanes_ref(n, w, a);
}

/* the chain and the lanes on 100 rows of general data: some must differ */
static void differs(t_rng *r, uint32_t type, const char *name, quant_dot_fn chain, quant_dot_fn lanes)
{
    const int64_t K = 1024;
    int n = 0;
    for (int rep = 0; rep < 100; rep++) {
        uint8_t *w = weights(r, type, K), *a = acts(r, type, K);
        const float p = chain(K, w, a), q = lanes(K, w, a);
        n += memcmp(&p, &q, 4) != 0;
        free(w), free(a);
    }
    t_check(name, n > 10, "the chain and the lanes differed on %d of 100 rows", n);
}

/* Small codes and scale 1 (Q8_0 blocks): every product and sum is an
 * integer below 2^24, so both orders give the exact value; then general
 * data, where the chain and the lanes round differently */
static void orders(void)
{
    const int64_t K = 1024;
    t_rng r = t_rng_named("orders");
    uint8_t *w = malloc(K / 32 * Q8B), *a = malloc(K / 32 * Q8B);
    for (int64_t b = 0; b < K / 32; b++) {
        const uint16_t one = quant_f32_to_f16(1.0f);
        memcpy(w + b * Q8B, &one, 2), memcpy(a + b * Q8B, &one, 2);
        for (int e = 0; e < 32; e++) {
            w[b * Q8B + 2 + e] = (uint8_t)(int8_t)((int)(t_next(&r) % 15) - 7);
            a[b * Q8B + 2 + e] = (uint8_t)(int8_t)((int)(t_next(&r) % 15) - 7);
        }
    }
    const float x = cpu_dot_q8_0_amx_ref(K, w, a), y = cpu_dot_q8_0_lanes_ref(K, w, a);
    t_check("amx.q8_0.exact_data_equals_lanes", x == y, "chain %.9g, lanes %.9g", x, y);
    free(w), free(a);

    differs(&r, QT_Q8_0, "amx.q8_0.differs_from_lanes", cpu_dot_q8_0_amx_ref, lanes_q8_0);
    differs(&r, QT_Q6_K, "amx.q6_K.differs_from_lanes", cpu_dot_q6_K_amx_ref, cpu_dot_q6_K_ggml_ref);
    differs(&r, QT_Q4_K, "amx.q4_K.differs_from_vec_dot", cpu_dot_q4_K_amx_ref,
            quant_vec_dot_fn(QT_Q4_K));
    differs(&r, QT_Q5_K, "amx.q5_K.differs_from_vec_dot", cpu_dot_q5_K_amx_ref,
            quant_vec_dot_fn(QT_Q5_K));
    differs(&r, QT_IQ4_XS, "amx.iq4_xs.differs_from_vec_dot", cpu_dot_iq4_xs_amx_ref,
            quant_vec_dot_fn(QT_IQ4_XS));
    differs(&r, QT_Q4_0, "amx.q4_0.differs_from_vec_dot", cpu_dot_q4_0_amx_ref,
            quant_vec_dot_fn(QT_Q4_0));
    differs(&r, QT_Q4_1, "amx.q4_1.differs_from_vec_dot", cpu_dot_q4_1_amx_ref,
            quant_vec_dot_fn(QT_Q4_1));
}

static void shapes(void)
{
    t_check("amx.shape.q8_0", cpu_amx_shape(QT_Q8_0, 256, 1024) && cpu_amx_shape(QT_Q8_0, 32, 32) &&
            !cpu_amx_shape(QT_Q8_0, 256, 8) && !cpu_amx_shape(QT_Q8_0, 256, 48) &&
            !cpu_amx_shape(QT_Q8_0, 48, 64), "Q8_0 shape rule");
    t_check("amx.shape.q6_K", cpu_amx_shape(QT_Q6_K, 2048, 151936) &&
            !cpu_amx_shape(QT_Q6_K, 2048 + 32, 64) && !cpu_amx_shape(QT_Q6_K, 2048, 16),
            "Q6_K shape rule");
    t_check("amx.shape.q4_K", cpu_amx_shape(QT_Q4_K, 2048, 512) &&
            !cpu_amx_shape(QT_Q4_K, 2048 + 32, 512) &&
            !cpu_amx_shape(QT_Q4_K, 2048, 100), "Q4_K shape rule");
    t_check("amx.shape.q5_K", cpu_amx_shape(QT_Q5_K, 256, 64) && !cpu_amx_shape(QT_Q5_K, 288, 64),
            "Q5_K shape rule");
    t_check("amx.shape.iq4_xs_q4_0", cpu_amx_shape(QT_IQ4_XS, 256, 64) &&
            !cpu_amx_shape(QT_IQ4_XS, 288, 64) && cpu_amx_shape(QT_Q4_0, 32, 64) &&
            !cpu_amx_shape(QT_Q4_0, 64, 48) && cpu_amx_shape(QT_Q4_1, 64, 32),
            "IQ4_XS, Q4_0 and Q4_1 shape rules");
    t_check("amx.shape.others", !cpu_amx_shape(QT_F32, 256, 64) && !cpu_amx_shape(QT_Q5_0, 256, 64) &&
            !cpu_amx_shape(QT_F16, 256, 64), "types without an AMX order here");
    t_check("amx.dot.types", cpu_amx_dot(QT_Q8_0) && cpu_amx_dot(QT_Q6_K) && cpu_amx_dot(QT_Q4_K) &&
            cpu_amx_dot(QT_Q5_K) && cpu_amx_dot(QT_IQ4_XS) && cpu_amx_dot(QT_Q4_0) &&
            cpu_amx_dot(QT_Q4_1) &&
            !cpu_amx_dot(QT_F16),
            "cpu_amx_dot's types");
}

/* The Q8_0 tile: every output the reference dot's bits, over tile shapes
 * that are and are not multiples of its 2 x 4 block, padded row strides
 * and a padded output stride whose padding stays untouched */
static void tile(void)
{
    static const int64_t ks[] = { 32, 256, 1024, 3584 };
    static const int shp[][2] = { { 1, 1 }, { 2, 4 }, { 3, 5 }, { 4, 8 },
                                  { 7, 9 }, { 16, 12 }, { 5, 1 } };
    const cpu_tile_fn fn = cpu_amx_tile(QT_Q8_0);
    t_rng r = t_rng_named("amx.tile");
    for (int ik = 0; ik < 4; ik++)
        for (int is = 0; is < 7; is++) {
            const int64_t K = ks[ik], nr = shp[is][0], nt = shp[is][1], ldy = nr + 3;
            const uint64_t wrb = (uint64_t)K / 32 * Q8B + 6, arb = (uint64_t)K / 32 * Q8B + 10;
            char name[96];
            snprintf(name, sizeof name, "amx.q8_0.tile_k%lld_%lldx%lld", (long long)K, (long long)nr,
                     (long long)nt);
            if (!quant_path_available(QUANT_PATH_AVX2)) {
                t_skip(name, "the CPU has no AVX2 with FMA and F16C");
                continue;
            }
            uint8_t *w = malloc(wrb * (uint64_t)nr), *a = malloc(arb * (uint64_t)nt);
            for (int64_t i = 0; i < nr; i++) {
                uint8_t *row = weights(&r, QT_Q8_0, K);
                memcpy(w + (uint64_t)i * wrb, row, (size_t)(K / 32 * Q8B));
                free(row);
            }
            for (int64_t i = 0; i < nt; i++) {
                uint8_t *row = acts(&r, QT_Q8_0, K);
                memcpy(a + (uint64_t)i * arb, row, (size_t)(K / 32 * Q8B));
                free(row);
            }
            float *y = malloc(sizeof(float) * (size_t)(nt * ldy));
            for (int64_t i = 0; i < nt * ldy; i++)
                y[i] = -12345.0f;
            fn(K, w, wrb, nr, a, arb, nt, y, ldy);
            int bad = 0;
            for (int64_t t = 0; t < nt && !bad; t++)
                for (int64_t i = 0; i < ldy && !bad; i++) {
                    const float want = i < nr ? cpu_dot_q8_0_amx_ref(K, w + (uint64_t)i * wrb,
                                                                     a + (uint64_t)t * arb)
                                              : -12345.0f;
                    bad = memcmp(&want, &y[t * ldy + i], 4) != 0;
                    if (bad)
                        t_fail(name, "output (row %lld, token %lld): %.9g, want %.9g", (long long)i,
                               (long long)t, y[t * ldy + i], want);
                }
            if (!bad)
                t_ok(name);
            free(w), free(a), free(y);
        }
}

/* which weights llama.cpp keeps in AMX buffers: plain 2-D matmul weights
 * of the shape rule (a tied head's token embedding too: the loader makes
 * the output's copy in the output matmul's buffer), not experts, not 3-D
 * slabs; none without c->amx */
static void weights_rule(void)
{
    cpu_ctx c;
    memset(&c, 0, sizeof c);
    c.amx = true;
    gguf_tensor q = { .name = "blk.0.attn_q.weight", .type = QT_Q8_0, .n_dims = 2,
                      .ne = { 256, 512, 1, 1 } };
    gguf_tensor emb = q, head = q, exps = q, odd = q, h6 = q;
    emb.name = "token_embd.weight", emb.ne[1] = 151680;
    head.name = "output.weight", head.ne[1] = 151680;
    exps.name = "blk.0.ffn_up_exps.weight", exps.n_dims = 3, exps.ne[2] = 32;
    odd.ne[1] = 8;                       /* ssm_alpha-like: 8 rows */
    h6.name = "output.weight", h6.type = QT_Q6_K, h6.ne[0] = 1024, h6.ne[1] = 151936;
    t_check("amx.weight.rule", cpu_amx_weight(&c, &q, false) && !cpu_amx_weight(&c, &q, true) &&
            cpu_amx_weight(&c, &emb, false) && cpu_amx_weight(&c, &head, false) &&
            !cpu_amx_weight(&c, &exps, false) && !cpu_amx_weight(&c, &odd, false) &&
            cpu_amx_weight(&c, &h6, false), "the weights taken");
    c.amx = false;
    t_check("amx.weight.off", !cpu_amx_weight(&c, &q, false) && !cpu_amx_weight(&c, &h6, false),
            "a weight taken without the AMX order on");
}

int main(void)
{
    weights_rule();
    tile();
    same_bits(QT_Q8_0, "q8_0", cpu_amx_dot(QT_Q8_0), cpu_dot_q8_0_amx_ref);
    same_bits(QT_Q6_K, "q6_K", cpu_amx_dot(QT_Q6_K), cpu_dot_q6_K_amx_ref);
    same_bits(QT_Q4_K, "q4_K", cpu_amx_dot(QT_Q4_K), cpu_dot_q4_K_amx_ref);
    same_bits(QT_Q5_K, "q5_K", cpu_amx_dot(QT_Q5_K), cpu_dot_q5_K_amx_ref);
    same_bits(QT_IQ4_XS, "iq4_xs", cpu_amx_dot(QT_IQ4_XS), cpu_dot_iq4_xs_amx_ref);
    same_bits(QT_Q4_0, "q4_0", cpu_amx_dot(QT_Q4_0), cpu_dot_q4_0_amx_ref);
    same_bits(QT_Q4_1, "q4_1", cpu_amx_dot(QT_Q4_1), cpu_dot_q4_1_amx_ref);
    near_exact(QT_Q8_0, "q8_0", cpu_dot_q8_0_amx_ref);
    near_exact(QT_Q6_K, "q6_K", cpu_dot_q6_K_amx_ref);
    near_exact(QT_Q4_K, "q4_K", cpu_dot_q4_K_amx_ref);
    near_exact(QT_Q5_K, "q5_K", cpu_dot_q5_K_amx_ref);
    near_exact(QT_IQ4_XS, "iq4_xs", cpu_dot_iq4_xs_amx_ref);
    near_exact(QT_Q4_0, "q4_0", cpu_dot_q4_0_amx_ref);
    near_exact(QT_Q4_1, "q4_1", cpu_dot_q4_1_amx_ref);
    orders();
    shapes();
    printf("# amx: this CPU %s llama.cpp's AMX buffers\n",
           cpu_amx_detect() ? "takes" : "does not take");
    return t_exit();
}
