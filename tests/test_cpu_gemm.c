/* test_cpu_gemm.c: the CPU backend's tile kernels (src/backend/cpu/
 * cpu_gemm.h) against the quant module's reference dot product.
 *
 *   gemm_<type>_<path>   every output of a tile within tests/quant_bound.h's
 *                        bound of quant_vec_dot_ref and (SIMD paths) equal
 *                        bit for bit to the plain C reference's, over real
 *                        row lengths
 *                        (K = 1024, 2048, 3584, 4096) and odd ones (256,
 *                        768; 17152, past the AVX2 kernel's weight
 *                        pack), tiles of nr x nt = 1..13 x 1..19 (not
 *                        multiples of any blocking, one token included),
 *                        ldy wider than nr; outputs outside the tile stay
 *                        untouched; each output equals, bit for bit, the
 *                        same kernel on a 1 x 1 tile of its row and token
 *                        (batch invariance)
 *   gemm_avx2_prep       the same for the AVX2 kernel over rows prepared
 *                        once (cpu_tile_prep: the matmuls of prompts), with
 *                        the bits of the plain AVX2 kernel
 *   gemm_dispatch        cpu_gemm_q4_K() is the AVX-512 VNNI kernel where
 *                        the quant module reports that path, else AVX2,
 *                        else the reference
 *   gemm_prep_dispatch   cpu_gemm_q4_K_prep() is the AVX2 kernel's prepared
 *                        form where that kernel is the pick, else NULL
 *   matmul_n_R<r>        be_matmul_n over five weights (three Q4_K sharing
 *                        one quantization, then an F32 one, then a Q4_K one
 *                        past the group limit; one output a column view)
 *                        equals be_matmul per weight bit for bit, on 2
 *                        threads, for one token (decode) and for 9
 * Paths the CPU lacks are reported on a "# " line, never as passed cases.
 */
#include <math.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_gemm.h"
#include "quant/quant.h"
#include "quant_bound.h"
#include "test.h"

typedef struct {
    const char *name;
    cpu_tile_fn fn;
    enum quant_path needs;
    cpu_tile_fn same;     /* a kernel whose bits it must give, or NULL */
} tile_path;

static double worst;

static void test_tile(uint32_t type, const tile_path *p)
{
    char name[80], why[400] = "";
    snprintf(name, sizeof name, "gemm_%s_%s", quant_type_name(type), p->name);
    t_rng rng = t_rng_named(name);
    const int at = quant_vec_dot_type(type);
    static const int64_t Ks[] = { 256, 768, 1024, 2048, 3584, 4096, 17152 };
    static const int64_t shapes[][2] = { { 1, 1 }, { 4, 1 }, { 5, 1 }, { 13, 1 }, { 3, 2 },
                                         { 8, 4 }, { 7, 5 }, { 13, 9 }, { 1, 7 }, { 6, 3 },
                                         { 5, 6 }, { 9, 16 }, { 2, 19 } };
    for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0] && !why[0]; ki++) {
        const int64_t K = Ks[ki];
        const uint64_t wrb = quant_row_bytes(type, (uint64_t)K), arb = quant_row_bytes((uint32_t)at, (uint64_t)K);
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0] && !why[0]; si++) {
            const int64_t nr = shapes[si][0], nt = shapes[si][1], ldy = nr + 3;
            uint8_t *w = malloc(wrb * (size_t)nr), *a = malloc(arb * (size_t)nt);
            float *x = malloc((size_t)K * 4), *ad = malloc((size_t)K * 4 * (size_t)nt);
            float *y = malloc(sizeof(float) * (size_t)(ldy * nt));
            for (int64_t r = 0; r < nr; r++)
                qb_random_weights(type, &rng, w + (uint64_t)r * wrb, K);
            for (int64_t t = 0; t < nt; t++) {
                for (int64_t i = 0; i < K; i++)
                    x[i] = qb_gauss(&rng) * (t % 3 == 2 && i % 61 == 0 ? 25.0f : 1.0f);
                quant_act_quantize((uint32_t)at, x, a + (uint64_t)t * arb, K);
                quant_dequant_row((uint32_t)at, a + (uint64_t)t * arb, ad + t * K, K);
            }
            for (int64_t i = 0; i < ldy * nt; i++)
                y[i] = -12345.0f;
            p->fn(K, w, wrb, nr, a, arb, nt, y, ldy);
            for (int64_t t = 0; t < nt && !why[0]; t++) {
                for (int64_t r = 0; r < ldy && !why[0]; r++) {
                    const float v = y[t * ldy + r];
                    if (r >= nr) {
                        if (v != -12345.0f)
                            snprintf(why, sizeof why, "K=%lld %lldx%lld: y[%lld][%lld] outside the tile written",
                                     (long long)K, (long long)nr, (long long)nt, (long long)t, (long long)r);
                        continue;
                    }
                    const uint8_t *wr = w + (uint64_t)r * wrb, *ar = a + (uint64_t)t * arb;
                    const float ref = quant_vec_dot_ref(type, K, wr, ar);
                    const double bound = qb_bound(K, qb_abs_sum(type, wr, ad + t * K, K));
                    const double d = fabs((double)v - ref);
                    float one = 0, same = v;
                    p->fn(K, wr, wrb, 1, ar, arb, 1, &one, 1);
                    if (p->same)
                        p->same(K, wr, wrb, 1, ar, arb, 1, &same, 1);
                    if (!(d <= bound))
                        snprintf(why, sizeof why, "K=%lld %lldx%lld [t %lld, r %lld]: %.9g, ref %.9g, |diff| %.3g > bound %.3g",
                                 (long long)K, (long long)nr, (long long)nt, (long long)t, (long long)r,
                                 (double)v, (double)ref, d, bound);
                    else if (memcmp(&one, &v, 4))
                        snprintf(why, sizeof why, "K=%lld %lldx%lld [t %lld, r %lld]: %.9g in the tile, %.9g alone",
                                 (long long)K, (long long)nr, (long long)nt, (long long)t, (long long)r,
                                 (double)v, (double)one);
                    else if (memcmp(&same, &v, 4))
                        snprintf(why, sizeof why, "K=%lld %lldx%lld [t %lld, r %lld]: %.9g, reference order %.9g",
                                 (long long)K, (long long)nr, (long long)nt, (long long)t, (long long)r,
                                 (double)v, (double)same);
                    if (bound > 0)
                        worst = fmax(worst, d / bound);
                }
            }
            free(w);
            free(a);
            free(x);
            free(ad);
            free(y);
        }
    }
    t_check(name, !why[0], "%s", why);
}

static void test_matmul_n(be_ctx *be, int64_t R)
{
    char name[64];
    snprintf(name, sizeof name, "matmul_n_R%lld", (long long)R);
    t_rng rng = t_rng_named(name);
    enum { NW = 5 };
    const int64_t K = 512, Ns[NW] = { 48, 20, 37, 8, 33 };
    const uint32_t types[NW] = { QT_Q4_K, QT_Q4_K, QT_Q4_K, QT_F32, QT_Q4_K };
    gguf_tensor gt[NW];
    uint8_t *data[NW];
    const be_weight *w[NW];
    be_tensor *y[NW], *yref[NW];
    be_tensor *wide = be_tensor_new(be, R, 5 + Ns[1] + 3);
    float *x = malloc(sizeof(float) * (size_t)(R * K));
    for (int64_t i = 0; i < R * K; i++)
        x[i] = qb_gauss(&rng);
    be_tensor *xt = be_tensor_new(be, R, K);
    be_write(be, xt, 0, R, x);
    char why[200] = "";
    for (int i = 0; i < NW; i++) {
        const uint64_t rb = quant_row_bytes(types[i], (uint64_t)K);
        uint8_t *d = data[i] = malloc(rb * (uint64_t)Ns[i]);
        for (int64_t n = 0; n < Ns[i]; n++) {
            if (types[i] == QT_F32)
                for (int64_t k = 0; k < K; k++)
                    ((float *)d)[n * K + k] = qb_gauss(&rng);
            else
                qb_random_weights(types[i], &rng, d + (uint64_t)n * rb, K);
        }
        gt[i] = (gguf_tensor){ .name = "w", .type = types[i], .n_dims = 2,
                               .ne = { (uint64_t)K, (uint64_t)Ns[i], 1, 1 }, .data = d,
                               .nbytes = rb * (uint64_t)Ns[i] };
        be_weight *bw = NULL;
        if (be_weight_bind(be, &gt[i], &bw, NULL))
            snprintf(why, sizeof why, "weight %d not bound", i);
        w[i] = bw;
        y[i] = i == 1 ? be_view(be, wide, 5, Ns[i]) : be_tensor_new(be, R, Ns[i]);
        yref[i] = be_tensor_new(be, R, Ns[i]);
    }
    if (!why[0]) {
        be_matmul_n(be, NW, w, xt, y);
        float *a = malloc(sizeof(float) * (size_t)(R * 48)), *b = malloc(sizeof(float) * (size_t)(R * 48));
        for (int i = 0; i < NW && !why[0]; i++) {
            be_matmul(be, w[i], 0, xt, yref[i]);
            be_read(be, y[i], 0, R, a);
            be_read(be, yref[i], 0, R, b);
            for (int64_t e = 0; e < R * Ns[i] && !why[0]; e++)
                if (memcmp(&a[e], &b[e], 4))
                    snprintf(why, sizeof why, "weight %d, output %lld: %.9g, be_matmul %.9g", i, (long long)e,
                             (double)a[e], (double)b[e]);
        }
        free(a);
        free(b);
    }
    t_check(name, !why[0], "%s", why);
    for (int i = 0; i < NW; i++) {
        if (i != 1)
            be_tensor_free(be, y[i]);
        be_tensor_free(be, yref[i]);
        free(data[i]);
    }
    be_tensor_free(be, wide);
    be_tensor_free(be, xt);
    free(x);
}

/* the AVX2 kernel's prepared form as a cpu_tile_fn: the rows prepared into a
 * buffer first, as cpu_matmul.c does once per matmul; a wider stride than
 * the form needs, to catch a kernel that assumes it */
static void k4_prep_wrap(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr, const uint8_t *a,
                         uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    const cpu_tile_prep *p = cpu_gemm_q4_K_avx2_prep();
    const uint64_t mrb = p->bytes(K) + 32;
    uint8_t *m = aligned_alloc(64, (size_t)((mrb * (uint64_t)nt + 63) & ~(uint64_t)63));
    for (int64_t t = 0; t < nt; t++)
        p->row(K, a + (uint64_t)t * arb, m + (uint64_t)t * mrb);
    p->tile(K, w, wrb, nr, a, arb, m, mrb, nt, y, ldy);
    free(m);
}

int main(void)
{
    const tile_path k4[] = {
        { "ref", cpu_gemm_q4_K_ref, QUANT_PATH_REF, NULL },
        { "avx2", cpu_gemm_q4_K_avx2, QUANT_PATH_AVX2, cpu_gemm_q4_K_ref },
        { "avx512vnni", cpu_gemm_q4_K_avx512vnni, QUANT_PATH_AVX512VNNI, cpu_gemm_q4_K_ref },
        { "avx2_prep", k4_prep_wrap, QUANT_PATH_AVX2, cpu_gemm_q4_K_avx2 },
    };
    for (size_t i = 0; i < sizeof k4 / sizeof k4[0]; i++) {
        if (!quant_path_available(k4[i].needs)) {
            char name[64];
            snprintf(name, sizeof name, "gemm_%s", k4[i].name);
            t_skip(name, "this CPU lacks the kernel's instructions");
            continue;
        }
        test_tile(QT_Q4_K, &k4[i]);
    }
    printf("# worst |diff|/bound: %.3g\n", worst);

    cpu_tile_fn want = cpu_gemm_q4_K_ref;
    if (quant_path_available(QUANT_PATH_AVX512VNNI))
        want = cpu_gemm_q4_K_avx512vnni;
    else if (quant_path_available(QUANT_PATH_AVX2))
        want = cpu_gemm_q4_K_avx2;
    t_check("gemm_dispatch", cpu_gemm_q4_K() == want, "cpu_gemm_q4_K() is not the fastest available kernel");
    t_check("gemm_prep_dispatch",
            cpu_gemm_q4_K_prep() == (want == cpu_gemm_q4_K_avx2 ? cpu_gemm_q4_K_avx2_prep() : NULL),
            "cpu_gemm_q4_K_prep() is not the prepared form of cpu_gemm_q4_K()'s kernel");

    be_ctx *be = NULL;
    if (be_cpu_new(2, &be, NULL)) {
        t_check("matmul_n", false, "be_cpu_new failed");
        return t_exit();
    }
    test_matmul_n(be, 1);
    test_matmul_n(be, 9);
    be_free(be);
    return t_exit();
}
