/* test_backend_cpu.c: every op of the CPU backend (src/backend/backend.h)
 * against a plain double-precision reference written here from the math
 * (MODEL.md), over real Qwen3.5 shapes and odd ones (1, 31, 33, 255, 257).
 * Each case seeds its RNG from its name. Tolerances are relative to the
 * size of the terms (sum of |products|) times the unit roundoff and the
 * number of roundings, so they fail on a wrong formula, not on order. */
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_internal.h"
#include "test_batch.h"
#include "keep_case.h"
#include "topk_case.h"
#include "deltanet_ref.h"
#include "quant/quant.h"
#include "quant/fp16.h"

static be_ctx *be1, *be3;

static be_tensor *upload(be_ctx *be, const float *x, int64_t rows, int64_t cols)
{
    be_tensor *t = be_tensor_new(be, rows, cols);
    be_write(be, t, 0, rows, x);
    return t;
}

/* ---------------------------------------------------------------- dots */

static void test_dot(int64_t n)
{
    char name[64];
    snprintf(name, sizeof name, "cpu.dot_vec_%lld", (long long)n);
    t_rng r = t_rng_named(name);
    float *x = t_randv(&r, n, 1), *y = t_randv(&r, n, 1);
    double ref = 0, mag = 0;
    for (int64_t i = 0; i < n; i++) {
        ref += (double)x[i] * y[i];
        mag += fabs((double)x[i] * y[i]);
    }
    float got = cpu_dot_vec(n, x, y);
    double bound = (double)(n / 16 + 8) * 0x1p-24 * mag + 1e-30;
    t_check(name, fabs(got - ref) <= bound, "got %.9g ref %.9g bound %.3g", got, ref, bound);
    free(x);
    free(y);
}

/* --------------------------------------------------------------- matmul */

typedef struct {
    gguf_tensor t;
    void *data;
    float *deq;    /* N*E rows of K */
} wt;

/* A weight of `type` with ne {K, N, E}: f32/f16/q8_0 from gaussians through
 * the activation quantizer (the same block formats); q4_K/q6_K random
 * blocks with small finite f16 scales. */
static wt make_weight(t_rng *r, uint32_t type, int64_t K, int64_t N, int64_t E)
{
    wt w = { 0 };
    uint64_t rb = quant_row_bytes(type, (uint64_t)K);
    w.data = malloc(rb * (uint64_t)(N * E));
    w.deq = malloc(sizeof(float) * (size_t)(K * N * E));
    float *row = t_randv(r, K, 1);
    for (int64_t i = 0; i < N * E; i++) {
        uint8_t *dst = (uint8_t *)w.data + rb * (uint64_t)i;
        if (type == QT_F32 || type == QT_F16 || type == QT_BF16 || type == QT_Q8_0) {
            for (int64_t k = 0; k < K; k++)
                row[k] = t_gauss(r);
            quant_act_quantize(type, row, dst, K);
        } else {
            for (uint64_t b = 0; b < rb; b++)
                dst[b] = (uint8_t)t_next(r);
            const quant_type_info *ti = quant_type_get(type);
            for (int64_t blk = 0; blk < K / ti->blck; blk++) {
                uint8_t *bp = dst + blk * ti->size;
                uint16_t d = quant_f32_to_f16(0.01f + 0.01f * t_uniform(r));
                if (type == QT_Q4_K) {          /* d, dmin first */
                    memcpy(bp, &d, 2);
                    memcpy(bp + 2, &d, 2);
                } else {                        /* q6_K: d last */
                    memcpy(bp + ti->size - 2, &d, 2);
                }
            }
        }
        quant_dequant_row(type, dst, w.deq + i * K, K);
    }
    free(row);
    w.t.name = "w";
    w.t.type = type;
    w.t.n_dims = 3;
    w.t.ne[0] = (uint64_t)K; w.t.ne[1] = (uint64_t)N; w.t.ne[2] = (uint64_t)E; w.t.ne[3] = 1;
    w.t.data = w.data;
    w.t.nbytes = rb * (uint64_t)(N * E);
    return w;
}

/* The reference of one output: the weight row (dequantized) times the
 * activation row as the kernel sees it (quantized to vec_dot_type and back). */
static double ref_out(const float *wrow, const float *a, int64_t K, uint32_t type, double *mag)
{
    int at = quant_vec_dot_type(type);
    uint8_t *q = malloc(quant_row_bytes((uint32_t)at, (uint64_t)K));
    float *ad = malloc(sizeof(float) * (size_t)K);
    quant_act_quantize((uint32_t)at, a, q, K);
    quant_dequant_row((uint32_t)at, q, ad, K);
    double s = 0;
    *mag = 0;
    for (int64_t k = 0; k < K; k++) {
        s += (double)wrow[k] * ad[k];
        *mag += fabs((double)wrow[k] * ad[k]);
    }
    free(q);
    free(ad);
    return s;
}

static void test_matmul(uint32_t type, int64_t K, int64_t N, int64_t R)
{
    char name[96];
    snprintf(name, sizeof name, "cpu.matmul_%s_%lldx%lld_r%lld", quant_type_name(type),
             (long long)K, (long long)N, (long long)R);
    t_rng r = t_rng_named(name);
    wt w = make_weight(&r, type, K, N, 2);
    be_weight *bw1, *bw3;
    be_weight_bind(be1, &w.t, &bw1, NULL);
    be_weight_bind(be3, &w.t, &bw3, NULL);
    float *x = t_randv(&r, R * K, 1);
    be_tensor *xt1 = upload(be1, x, R, K), *xt3 = upload(be3, x, R, K);
    be_tensor *y1 = be_tensor_new(be1, R, N), *y3 = be_tensor_new(be3, R, N);
    be_matmul(be1, bw1, 1, xt1, y1);
    be_matmul(be3, bw3, 1, xt3, y3);
    float *g1 = malloc(sizeof(float) * (size_t)(R * N)), *g3 = malloc(sizeof(float) * (size_t)(R * N));
    be_read(be1, y1, 0, R, g1);
    be_read(be3, y3, 0, R, g3);
    double worst = 0;
    bool ok = true;
    for (int64_t i = 0; i < R && ok; i++)
        for (int64_t n = 0; n < N; n++) {
            double mag, ref = ref_out(w.deq + (N + n) * K, x + i * K, K, type, &mag);
            double bound = (double)(K / 16 + 40) * 2.01 * 0x1p-24 * mag + 1e-30;
            double e = fabs(g1[i * N + n] - ref) / bound;
            worst = e > worst ? e : worst;
            if (e > 1) { ok = false; break; }
        }
    bool same = !memcmp(g1, g3, sizeof(float) * (size_t)(R * N));
    t_check(name, ok && same, "worst error/bound %.3g, 1 vs 3 threads identical: %d", worst, same);
    be_tensor_free(be1, xt1); be_tensor_free(be1, y1);
    be_tensor_free(be3, xt3); be_tensor_free(be3, y3);
    free(x); free(g1); free(g3); free(w.data); free(w.deq);
}

static void test_matmul_id(uint32_t type, int64_t K, int64_t N, int64_t E, int64_t k, int64_t T,
                           bool per_pair)
{
    char name[112];
    snprintf(name, sizeof name, "cpu.matmul_id_%s_%lldx%lld_e%lld_k%lld_t%lld%s", quant_type_name(type),
             (long long)K, (long long)N, (long long)E, (long long)k, (long long)T,
             per_pair ? "_pairs" : "");
    t_rng r = t_rng_named(name);
    wt w = make_weight(&r, type, K, N, E);
    be_weight *bw;
    be_weight_bind(be3, &w.t, &bw, NULL);
    int64_t xr = per_pair ? T * k : T;
    float *x = t_randv(&r, xr * K, 1);
    int32_t *sel = malloc(sizeof(int32_t) * (size_t)(T * k));
    for (int64_t i = 0; i < T * k; i++)
        sel[i] = (int32_t)(t_next(&r) % (uint64_t)E);
    be_tensor *xt = upload(be3, x, xr, K), *y = be_tensor_new(be3, T * k, N);
    be_tensor *st = t_i32(be3, sel, T, k);
    be_matmul_id(be3, bw, xt, st, y);
    be_tensor_free(be3, st);
    float *g = malloc(sizeof(float) * (size_t)(T * k * N));
    be_read(be3, y, 0, T * k, g);
    double worst = 0;
    for (int64_t p = 0; p < T * k; p++)
        for (int64_t n = 0; n < N; n++) {
            const float *a = x + (per_pair ? p : p / k) * K;
            double mag, ref = ref_out(w.deq + (sel[p] * N + n) * K, a, K, type, &mag);
            double e = fabs(g[p * N + n] - ref) / ((double)(K / 16 + 40) * 2.01 * 0x1p-24 * mag + 1e-30);
            worst = e > worst ? e : worst;
        }
    t_check(name, worst <= 1, "worst error/bound %.3g", worst);
    be_tensor_free(be3, xt); be_tensor_free(be3, y);
    free(x); free(g); free(sel); free(w.data); free(w.deq);
}

/* ----------------------------------------------------------- row ops */

static void test_rms(int64_t rows, int64_t cols, int64_t group, bool weight)
{
    char name[96];
    snprintf(name, sizeof name, "cpu.rms_norm_%lldx%lld_g%lld%s", (long long)rows, (long long)cols,
             (long long)group, weight ? "_w" : "");
    t_rng r = t_rng_named(name);
    float *x = t_randv(&r, rows * cols, 3), *wv = t_randv(&r, group, 1);
    gguf_tensor gt = { .name = "n", .type = QT_F32, .n_dims = 1, .ne = { (uint64_t)group, 1, 1, 1 },
                       .data = wv, .nbytes = (uint64_t)group * 4 };
    be_weight *bw = NULL;
    if (weight)
        be_weight_bind(be1, &gt, &bw, NULL);
    be_tensor *t = upload(be1, x, rows, cols);
    be_rms_norm(be1, t, bw, 1e-6f, group, t);
    float *g = malloc(sizeof(float) * (size_t)(rows * cols));
    be_read(be1, t, 0, rows, g);
    double worst = 0;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t g0 = 0; g0 < cols; g0 += group) {
            double ss = 0;
            for (int64_t c = 0; c < group; c++)
                ss += (double)x[i * cols + g0 + c] * x[i * cols + g0 + c];
            double sc = 1 / sqrt(ss / group + 1e-6);
            for (int64_t c = 0; c < group; c++) {
                double ref = x[i * cols + g0 + c] * sc * (weight ? wv[c] : 1);
                double e = fabs(g[i * cols + g0 + c] - ref) / (fabs(ref) + 1e-30);
                worst = e > worst ? e : worst;
            }
        }
    t_check(name, worst < 8 * 0x1p-24, "worst relative error %.3g", worst);
    be_tensor_free(be1, t);
    free(x); free(wv); free(g);
}

/* be_hadamard against the Sylvester matrix (H_1 = 1, H_2m = [[H, H],
 * [H, -H]]) over sqrt(n) in double, on a view (the padding columns of the
 * parent stay as they were), 1 and 3 threads the same bits; twice is the
 * identity within rounding (H H = n I). */
static void test_hadamard(int64_t rows, int64_t cols, int64_t n)
{
    char name[96];
    snprintf(name, sizeof name, "cpu.hadamard_%lldx%lld_n%lld", (long long)rows, (long long)cols,
             (long long)n);
    t_rng r = t_rng_named(name);
    const int64_t ld = cols + 3;
    float *x = t_randv(&r, rows * ld, 2), *g1 = malloc(sizeof(float) * (size_t)(rows * ld));
    float *g3 = malloc(sizeof(float) * (size_t)(rows * ld)), *gg = malloc(sizeof(float) * (size_t)(rows * ld));
    be_tensor *p1 = upload(be1, x, rows, ld), *p3 = upload(be3, x, rows, ld);
    be_hadamard(be1, be_view(be1, p1, 0, cols), n);
    be_hadamard(be3, be_view(be3, p3, 0, cols), n);
    be_read(be1, p1, 0, rows, g1);
    be_read(be3, p3, 0, rows, g3);
    be_hadamard(be1, be_view(be1, p1, 0, cols), n);
    be_read(be1, p1, 0, rows, gg);
    double worst = 0, back = 0;
    bool pad = true;
    for (int64_t i = 0; i < rows; i++) {
        const float *xi = x + i * ld;
        for (int64_t c = cols; c < ld; c++)
            pad &= g1[i * ld + c] == xi[c] && g3[i * ld + c] == xi[c];
        for (int64_t c0 = 0; c0 < cols; c0 += n)
            for (int64_t a = 0; a < n; a++) {
                double ref = 0, mag = 0;
                for (int64_t b = 0; b < n; b++) {
                    const int sign = __builtin_popcountll((unsigned long long)(a & b)) & 1 ? -1 : 1;
                    ref += sign * (double)xi[c0 + b];
                    mag += fabs((double)xi[c0 + b]);
                }
                ref /= sqrt((double)n);
                mag /= sqrt((double)n);
                const double e = fabs(g1[i * ld + c0 + a] - ref) / mag;
                const double eb = fabs(gg[i * ld + c0 + a] - xi[c0 + a]) / (mag + 1e-30);
                worst = e > worst ? e : worst;
                back = eb > back ? eb : back;
            }
    }
    const double log2n = log2((double)n);
    t_check(name, pad && worst <= (log2n + 2) * 0x1p-24 && back <= 2 * (log2n + 2) * 0x1p-24 &&
                      !memcmp(g1, g3, sizeof(float) * (size_t)(rows * ld)),
            "padding kept %d, worst error %.3g of the terms' size (bound %.3g), twice: %.3g, "
            "3 threads the same bits: %d", pad, worst, (log2n + 2) * 0x1p-24, back,
            !memcmp(g1, g3, sizeof(float) * (size_t)(rows * ld)));
    be_views_reset(be1);
    be_views_reset(be3);
    be_tensor_free(be1, p1);
    be_tensor_free(be3, p3);
    free(x); free(g1); free(g3); free(gg);
}

static void test_rope(int64_t rows, int64_t heads, int64_t hd, int64_t n_rot, int64_t pos0)
{
    char name[96];
    snprintf(name, sizeof name, "cpu.rope_h%lld_hd%lld_r%lld_p%lld", (long long)heads, (long long)hd,
             (long long)n_rot, (long long)pos0);
    t_rng r = t_rng_named(name);
    int64_t cols = heads * hd;
    float *x = t_randv(&r, rows * cols, 1);
    be_tensor *t = upload(be1, x, rows, cols);
    int32_t sec[4] = { (int32_t)(n_rot / 2 - n_rot / 2 / 3 * 2), (int32_t)(n_rot / 2 / 3),
                       (int32_t)(n_rot / 2 / 3), 0 };
    be_batch b = t_batch1(be1, rows, pos0, pos0 + rows, 0);
    be_rope(be1, t, hd, n_rot, sec, 1e7f, b.pos);
    be_batch_free(be1, &b);
    float *g = malloc(sizeof(float) * (size_t)(rows * cols));
    be_read(be1, t, 0, rows, g);
    double worst = 0;
    for (int64_t i = 0; i < rows; i++) {
        double p = (double)(pos0 + i);
        for (int64_t h = 0; h < heads; h++) {
            const float *v = x + i * cols + h * hd;
            const float *o = g + i * cols + h * hd;
            for (int64_t d = 0; d < hd; d++) {
                double ref = v[d];
                if (d < n_rot) {
                    /* the contract: theta_j = p * r^j by j float products
                     * (r = powf(1e7, -2/n_rot)); pairs outside the three
                     * text sections take the 4th position, 0 */
                    int64_t j = d % (n_rot / 2);
                    float thf = (float)p, rr = powf(1e7f, -2.0f / (float)n_rot);
                    for (int64_t m = 0; m < j; m++)
                        thf *= rr;
                    int sd = sec[0] + sec[1] + sec[2] + sec[3], sc = (int)(j % sd);
                    bool in3 = (sc % 3 == 0 && sc < 3 * sec[0]) || (sc % 3 == 1 && sc < 3 * sec[1]) ||
                               (sc % 3 == 2 && sc < 3 * sec[2]);
                    double th = in3 ? thf : 0.0;
                    double x0 = v[j], x1 = v[j + n_rot / 2];
                    ref = d < n_rot / 2 ? x0 * cos(th) - x1 * sin(th) : x0 * sin(th) + x1 * cos(th);
                }
                double e = fabs(o[d] - ref);
                worst = e > worst ? e : worst;
            }
        }
    }
    t_check(name, worst < 1e-5, "worst error %.3g", worst);
    be_tensor_free(be1, t);
    free(x); free(g);
}

static void test_attention(int64_t T, int64_t pos0, int64_t Hq, int64_t Hkv, int64_t hd)
{
    char name[96];
    snprintf(name, sizeof name, "cpu.attention_t%lld_p%lld_h%lld_kv%lld_hd%lld", (long long)T,
             (long long)pos0, (long long)Hq, (long long)Hkv, (long long)hd);
    t_rng r = t_rng_named(name);
    int64_t n = pos0 + T, kvw = Hkv * hd;
    float *q = t_randv(&r, T * Hq * hd, 1), *k = t_randv(&r, n * kvw, 1), *v = t_randv(&r, n * kvw, 1);
    be_tensor *kc = be_tensor_new(be3, n + 5, kvw), *vc = be_tensor_new(be3, n + 5, kvw);
    be_tensor *kt = upload(be3, k, n, kvw), *vt = upload(be3, v, n, kvw);
    be_batch b0 = t_batch1(be3, n, 0, n + 5, 0), b = t_batch1(be3, T, pos0, n + 5, 0);
    be_kv_store(be3, kc, vc, kt, vt, &b0);
    be_tensor *qt = upload(be3, q, T, Hq * hd), *ot = be_tensor_new(be3, T, Hq * hd);
    const float scale = 1.0f / sqrtf((float)hd);
    be_attention(be3, qt, kc, vc, &b, Hq, Hkv, hd, scale, ot);
    be_batch_free(be3, &b0);
    be_batch_free(be3, &b);
    float *g = malloc(sizeof(float) * (size_t)(T * Hq * hd));
    be_read(be3, ot, 0, T, g);
    double worst = 0, *s = malloc(sizeof(double) * (size_t)n);
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < Hq; h++) {
            int64_t kh = h / (Hq / Hkv), m = pos0 + t + 1;
            double mx = -INFINITY, sum = 0;
            for (int64_t p = 0; p < m; p++) {
                double d = 0;
                for (int64_t i = 0; i < hd; i++)
                    d += (double)q[(t * Hq + h) * hd + i] * k[p * kvw + kh * hd + i];
                s[p] = d * scale;
                mx = s[p] > mx ? s[p] : mx;
            }
            for (int64_t p = 0; p < m; p++)
                sum += (s[p] = exp(s[p] - mx));
            for (int64_t i = 0; i < hd; i++) {
                double o = 0;
                for (int64_t p = 0; p < m; p++)
                    o += s[p] / sum * v[p * kvw + kh * hd + i];
                double e = fabs(g[(t * Hq + h) * hd + i] - o);
                worst = e > worst ? e : worst;
            }
        }
    t_check(name, worst < 2e-5, "worst abs error %.3g", worst);
    be_tensor *all[] = { kc, vc, kt, vt, qt, ot };
    for (int i = 0; i < 6; i++)
        be_tensor_free(be3, all[i]);
    free(q); free(k); free(v); free(g); free(s);
}

static void test_conv(int64_t T, int64_t C, int64_t Kc)
{
    char name[96];
    snprintf(name, sizeof name, "cpu.ssm_conv_t%lld_c%lld_k%lld", (long long)T, (long long)C, (long long)Kc);
    t_rng r = t_rng_named(name);
    float *x = t_randv(&r, T * C, 1), *tail0 = t_randv(&r, C * (Kc - 1), 1), *wv = t_randv(&r, C * Kc, 1);
    gguf_tensor gt = { .name = "c", .type = QT_F32, .n_dims = 2, .ne = { (uint64_t)Kc, (uint64_t)C, 1, 1 },
                       .data = wv, .nbytes = (uint64_t)(C * Kc) * 4 };
    be_weight *bw;
    be_weight_bind(be3, &gt, &bw, NULL);
    be_tensor *xt = upload(be3, x, T, C), *tl = upload(be3, tail0, C, Kc - 1), *y = be_tensor_new(be3, T, C);
    be_batch b = t_batch1(be3, T, 0, T, 0);
    be_ssm_conv(be3, xt, tl, bw, &b, y);
    be_batch_free(be3, &b);
    float *g = malloc(sizeof(float) * (size_t)(T * C)), *tg = malloc(sizeof(float) * (size_t)(C * (Kc - 1)));
    be_read(be3, y, 0, T, g);
    be_read(be3, tl, 0, C, tg);
    double worst = 0;
    bool tail_ok = true;
    for (int64_t c = 0; c < C; c++) {
        /* the window: tail then x, one channel */
        double win[600];
        for (int64_t i = 0; i < Kc - 1; i++)
            win[i] = tail0[c * (Kc - 1) + i];
        for (int64_t t = 0; t < T; t++)
            win[Kc - 1 + t] = x[t * C + c];
        for (int64_t t = 0; t < T; t++) {
            double s = 0;
            for (int64_t i = 0; i < Kc; i++)
                s += win[t + i] * wv[c * Kc + i];
            double e = fabs(g[t * C + c] - s);
            worst = e > worst ? e : worst;
        }
        for (int64_t i = 0; i < Kc - 1; i++)
            tail_ok &= tg[c * (Kc - 1) + i] == (float)win[T + i];
    }
    t_check(name, worst < 1e-5 && tail_ok, "worst %.3g tail %d", worst, tail_ok);
    be_tensor_free(be3, xt); be_tensor_free(be3, tl); be_tensor_free(be3, y);
    free(x); free(tail0); free(wv); free(g); free(tg);
}

static void test_deltanet(int64_t T, int64_t Hk, int64_t Hv, int64_t dk)
{
    char name[96];
    snprintf(name, sizeof name, "cpu.deltanet_t%lld_hk%lld_hv%lld_dk%lld", (long long)T, (long long)Hk,
             (long long)Hv, (long long)dk);
    t_rng r = t_rng_named(name);
    int64_t W = (2 * Hk + Hv) * dk;
    float *qkv = t_randv(&r, T * W, 1), *g = malloc(sizeof(float) * (size_t)(T * Hv));
    float *b = malloc(sizeof(float) * (size_t)(T * Hv)), *S0 = t_randv(&r, Hv * dk * dk, 0.1f);
    /* unit q and k, as after the L2 norm */
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < 2 * Hk; h++) {
            float *v = qkv + t * W + h * dk;
            double n2 = 0;
            for (int64_t i = 0; i < dk; i++)
                n2 += (double)v[i] * v[i];
            for (int64_t i = 0; i < dk; i++)
                v[i] = (float)(v[i] / sqrt(n2));
        }
    for (int64_t i = 0; i < T * Hv; i++) {
        g[i] = -t_uniform(&r);
        b[i] = t_uniform(&r);
    }
    be_tensor *qt = upload(be3, qkv, T, W), *gt = upload(be3, g, T, Hv), *bt = upload(be3, b, T, Hv);
    be_tensor *St = upload(be3, S0, Hv, dk * dk), *ot = be_tensor_new(be3, T, Hv * dk);
    be_batch bb = t_batch1(be3, T, 0, T, 0);
    be_deltanet(be3, qt, gt, bt, St, Hk, Hv, dk, &bb, ot);
    be_batch_free(be3, &bb);
    float *o = malloc(sizeof(float) * (size_t)(T * Hv * dk)), *Sg = malloc(sizeof(float) * (size_t)(Hv * dk * dk));
    be_read(be3, ot, 0, T, o);
    be_read(be3, St, 0, Hv, Sg);
    /* the recurrence in double (tests/deltanet_ref.h) on the same arrays */
    const dn_case c = { .Hk = Hk, .Hv = Hv, .dk = dk, .W = W, .T = T, .n_slots = 1, .n_seq = 1,
                        .runs = { 0, 0, (int32_t)T, 0 }, .qkv = qkv, .g = g, .beta = b, .S0 = S0 };
    double *S = malloc(sizeof(double) * (size_t)(Hv * dk * dk)), *ot_ = malloc(sizeof(double) * (size_t)(T * Hv * dk));
    for (int64_t i = 0; i < Hv * dk * dk; i++)
        S[i] = S0[i];
    dn_truth(&c, c.runs, 1, ot_, S);
    double worst = 0;
    for (int64_t i = 0; i < T * Hv * dk; i++)
        worst = fmax(worst, fabs(o[i] - ot_[i]));
    for (int64_t i = 0; i < Hv * dk * dk; i++)
        worst = fmax(worst, fabs(Sg[i] - S[i]));
    t_check(name, worst < 1e-4, "worst abs error %.3g (output and state)", worst);
    be_tensor *all[] = { qt, gt, bt, St, ot };
    for (int i = 0; i < 5; i++)
        be_tensor_free(be3, all[i]);
    free(qkv); free(g); free(b); free(S0); free(o); free(Sg); free(S); free(ot_);
}

/* be_ssm_conv_silu_keep and be_deltanet_keep against the plain ops a row
 * at a time (tests/keep_case.h) */
static void test_keep(int64_t T, int64_t Hk, int64_t Hv, int64_t dk, int64_t Kc)
{
    char name[96];
    snprintf(name, sizeof name, "cpu.keep_t%lld_hk%lld_hv%lld_dk%lld_k%lld", (long long)T,
             (long long)Hk, (long long)Hv, (long long)dk, (long long)Kc);
    keep_case(be3, name, T, Hk, Hv, dk, Kc, false);
}

/* The chunked form against the recurrence on the same inputs, both from a
 * non-zero state, across chunk boundaries (T up to 200 = 3 chunks + 8). */
static void test_deltanet_chunked(int64_t T, int64_t Hk, int64_t Hv, int64_t dk)
{
    char name[96];
    snprintf(name, sizeof name, "cpu.deltanet_chunked_t%lld_hk%lld_hv%lld_dk%lld", (long long)T,
             (long long)Hk, (long long)Hv, (long long)dk);
    t_rng r = t_rng_named(name);
    int64_t W = (2 * Hk + Hv) * dk;
    float *qkv = t_randv(&r, T * W, 1), *g = malloc(sizeof(float) * (size_t)(T * Hv));
    float *b = malloc(sizeof(float) * (size_t)(T * Hv)), *S0 = t_randv(&r, Hv * dk * dk, 0.1f);
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < 2 * Hk; h++) {
            float *v = qkv + t * W + h * dk;
            double n2 = 0;
            for (int64_t i = 0; i < dk; i++)
                n2 += (double)v[i] * v[i];
            for (int64_t i = 0; i < dk; i++)
                v[i] = (float)(v[i] / sqrt(n2));
        }
    for (int64_t i = 0; i < T * Hv; i++) {
        g[i] = -0.3f * t_uniform(&r);
        b[i] = t_uniform(&r);
    }
    float *o[2], *Sg[2];
    for (int m = 0; m < 2; m++) {
        be_tensor *qt = upload(be3, qkv, T, W), *gt = upload(be3, g, T, Hv), *bt = upload(be3, b, T, Hv);
        be_tensor *St = upload(be3, S0, Hv, dk * dk), *ot = be_tensor_new(be3, T, Hv * dk);
        be_batch bb = t_batch1(be3, T, 0, T, 0);
        if (m == 0)
            be_deltanet(be3, qt, gt, bt, St, Hk, Hv, dk, &bb, ot);
        else
            be_deltanet_chunked(be3, qt, gt, bt, St, Hk, Hv, dk, &bb, ot);
        be_batch_free(be3, &bb);
        o[m] = malloc(sizeof(float) * (size_t)(T * Hv * dk));
        Sg[m] = malloc(sizeof(float) * (size_t)(Hv * dk * dk));
        be_read(be3, ot, 0, T, o[m]);
        be_read(be3, St, 0, Hv, Sg[m]);
        be_tensor *all[] = { qt, gt, bt, St, ot };
        for (int i = 0; i < 5; i++)
            be_tensor_free(be3, all[i]);
    }
    double worst = 0;
    for (int64_t i = 0; i < T * Hv * dk; i++)
        worst = fmax(worst, fabs(o[0][i] - o[1][i]));
    for (int64_t i = 0; i < Hv * dk * dk; i++)
        worst = fmax(worst, fabs(Sg[0][i] - Sg[1][i]));
    t_check(name, worst < 2e-4, "worst abs difference %.3g (output and state)", worst);
    free(qkv); free(g); free(b); free(S0);
    for (int m = 0; m < 2; m++) {
        free(o[m]);
        free(Sg[m]);
    }
}

static void test_moe_route(int64_t T, int64_t E, int64_t k)
{
    char name[96];
    snprintf(name, sizeof name, "cpu.moe_route_t%lld_e%lld_k%lld", (long long)T, (long long)E, (long long)k);
    t_rng r = t_rng_named(name);
    float *l = t_randv(&r, T * E, 2);
    be_tensor *lt = upload(be1, l, T, E), *wt_ = be_tensor_new(be1, T, k);
    int32_t *sel = malloc(sizeof(int32_t) * (size_t)(T * k));
    be_tensor *st = be_tensor_new_type(be1, BE_I32, T, k);
    be_moe_route(be1, lt, k, st, wt_);
    be_read(be1, st, 0, T, sel);
    be_tensor_free(be1, st);
    float *w = malloc(sizeof(float) * (size_t)(T * k));
    be_read(be1, wt_, 0, T, w);
    bool ok = true;
    double worst = 0;
    for (int64_t t = 0; t < T && ok; t++) {
        const float *lr = l + t * E;
        double mx = -INFINITY, sk = 0;
        for (int64_t e = 0; e < E; e++)
            mx = lr[e] > mx ? lr[e] : mx;
        for (int64_t i = 0; i < k; i++) {
            /* rank i: exactly i logits are larger */
            int64_t larger = 0;
            for (int64_t e = 0; e < E; e++)
                larger += lr[e] > lr[sel[t * k + i]];
            ok &= larger == i;
            sk += exp(lr[sel[t * k + i]] - mx);
        }
        for (int64_t i = 0; i < k; i++) {
            double ref = exp(lr[sel[t * k + i]] - mx) / sk;
            double e = fabs(w[t * k + i] - ref);
            worst = e > worst ? e : worst;
        }
    }
    t_check(name, ok && worst < 1e-6, "ranks ok %d, worst weight error %.3g", ok, worst);
    be_tensor_free(be1, lt); be_tensor_free(be1, wt_);
    free(l); free(sel); free(w);
}

/* be_argmax against the definition, per row: the first column whose value
 * is above every one before it and not below any after it, i.e. the lowest
 * column of the largest value, NaN never chosen but a row starting with NaN
 * giving 0. Rows: random values with the maximum repeated (ties), all
 * equal, all -inf, NaN first, NaN elsewhere, the maximum last, -0 before
 * +0 as the maximum; C columns (a vocabulary's width, and widths about
 * the kernel's chunks of 16). */
static int64_t argmax_ref(const float *v, int64_t C)
{
    if (isnan(v[0]))
        return 0;
    int64_t best = 0;
    for (int64_t c = 1; c < C; c++)
        if (!isnan(v[c]) && (isnan(v[best]) || v[c] > v[best]))
            best = c;
    return best;
}

static void test_argmax(int64_t C)
{
    char name[96];
    snprintf(name, sizeof name, "cpu.argmax_c%lld", (long long)C);
    t_rng r = t_rng_named(name);
    enum { R = 7 };
    float *x = t_randv(&r, R * C, 4);
    const int64_t j = (int64_t)(t_next(&r) % (uint64_t)C), j2 = (int64_t)(t_next(&r) % (uint64_t)C);
    x[0 * C + j] = 100.0f;              /* row 0: the maximum twice */
    x[0 * C + j2] = 100.0f;
    for (int64_t c = 0; c < C; c++) {
        x[1 * C + c] = 0.5f;            /* row 1: all equal */
        x[2 * C + c] = -INFINITY;       /* row 2: all -inf */
    }
    x[3 * C] = NAN;                     /* row 3: NaN first */
    x[4 * C + C / 2] = NAN;             /* row 4: NaN inside, the maximum after it */
    x[4 * C + C - 1] = 200.0f;
    x[5 * C + C - 1] = 300.0f;          /* row 5: the maximum last */
    for (int64_t c = 0; c < C; c++)     /* row 6: negative but a -0 then a +0 (equal) */
        x[6 * C + c] = -1.0f - (float)(c % 7);
    x[6 * C + j2 / 2] = -0.0f;
    x[6 * C + j2] = 0.0f;
    be_tensor *xt = upload(be1, x, R, C);
    be_tensor *it = be_tensor_new_type(be1, BE_I32, R, 1);
    be_argmax(be1, xt, it);
    int32_t got[R];
    be_read(be1, it, 0, R, got);
    int bad = 0, first = -1;
    for (int i = 0; i < R; i++)
        if (got[i] != argmax_ref(x + (int64_t)i * C, C) && !bad++)
            first = i;
    t_check(name, bad == 0, "%d of %d rows differ (first: row %d, %d against %lld)", bad, R,
            first, first >= 0 ? got[first] : 0,
            first >= 0 ? (long long)argmax_ref(x + (int64_t)first * C, C) : 0LL);
    be_tensor_free(be1, xt);
    be_tensor_free(be1, it);
    free(x);
}

/* be_topk against a full sort of each row (tests/topk_case.h): the same
 * columns, the same value bits, R rows of C columns (a view of the first
 * C of rows ld wide), k of 1, 20, 64 */
static void test_topk(int64_t R, int64_t C, int64_t ld, int k)
{
    char name[96];
    snprintf(name, sizeof name, "cpu.topk_r%lld_c%lld_k%d%s", (long long)R, (long long)C, k,
             ld > C ? "_view" : "");
    t_rng r = t_rng_named(name);
    float *x = malloc(sizeof(float) * (size_t)(R * ld));
    topk_fill(&r, x, R, ld, ld);          /* past the view: values never to be chosen */
    if (ld > C)
        for (int64_t i = 0; i < R; i++)
            x[i * ld + C] = 1e30f;
    be_tensor *xt = upload(be1, x, R, ld);
    be_tensor *it = be_tensor_new_type(be1, BE_I32, R, k), *vt = be_tensor_new(be1, R, k);
    be_topk(be1, be_view(be1, xt, 0, C), k, it, vt);
    int32_t *gi = malloc(sizeof(int32_t) * (size_t)(R * k)), wi[BE_TOPK_MAX];
    float *gv = malloc(sizeof(float) * (size_t)(R * k)), wv[BE_TOPK_MAX];
    be_read(be1, it, 0, R, gi);
    be_read(be1, vt, 0, R, gv);
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < R; i++) {
        topk_ref(x + i * ld, C, k, wi, wv);
        if ((memcmp(wi, gi + i * k, sizeof(int32_t) * (size_t)k) ||
             memcmp(wv, gv + i * k, sizeof(float) * (size_t)k)) && !bad++)
            first = i;
    }
    t_check(name, bad == 0, "%lld of %lld rows differ from the full sort (first: row %lld)",
            (long long)bad, (long long)R, (long long)first);
    be_views_reset(be1);
    be_tensor_free(be1, xt);
    be_tensor_free(be1, it);
    be_tensor_free(be1, vt);
    free(x); free(gi); free(gv);
}

/* --------------------------------------------------------------- the table */

/* Every entry of the CPU's ops table is filled but the fused ones be_impl.h
 * calls optional (backend.c composes them from the others), the prefetch
 * hint and the side (nothing to do on the CPU: its ops run in order). */
static void test_ops_table(void)
{
    const struct be_ops *ops = be1->ops;
    void *const *fn = (void *const *)((const char *)ops + sizeof(const char *));
    const size_t n = (sizeof *ops - sizeof(const char *)) / sizeof(void *);
    const void *optional[] = { &ops->matmul_glu, &ops->matmul_id_glu, &ops->matmul_id_swiglu,
                               &ops->deltanet_gated, &ops->deltanet_gated_keep,
                               &ops->attn_prologue, &ops->moe_down_shared, &ops->moe_combine_norm,
                               &ops->prefetch, &ops->side };
    size_t missing = 0;
    for (size_t i = 0; i < n; i++) {
        bool opt = false;
        for (size_t j = 0; j < sizeof optional / sizeof optional[0]; j++)
            opt |= (const void *)&fn[i] == optional[j];
        missing += fn[i] == NULL && !opt;
    }
    t_check("cpu.ops_table_complete", ops->name && missing == 0, "%zu of %zu entries are NULL",
            missing, n);
}

/* ----------------------------------------------------------------- batches */

/* The sequence ops on a batch of three runs (slots 2, 0, 1 at positions
 * 5, 0, 11; 4, 1 and 6 rows) give the bits of the same ops on each run
 * alone in a one-slot state of its own (slot 0), outputs and slot state:
 * K/V store + attention, conv, delta rule, rope. */
static void test_batch_runs(void)
{
    const char *name = "cpu.batch_runs_equal_runs_alone";
    t_rng r = t_rng_named(name);
    enum { NS = 3, CTX = 24, Hq = 4, Hkv = 2, hd = 32, C = 40, Kc = 4, Hk = 2, Hv = 4, dk = 16 };
    const be_seq seq[NS] = { { 2, 0, 4, 5 }, { 0, 4, 1, 0 }, { 1, 5, 6, 11 } };
    const int64_t T = 11, W = (2 * Hk + Hv) * dk, KV = Hkv * hd, SS = dk * dk;
    float *q = t_randv(&r, T * Hq * hd, 1), *k = t_randv(&r, T * KV, 1);
    float *v = t_randv(&r, T * KV, 1), *kv0 = t_randv(&r, NS * CTX * KV, 1);
    float *x = t_randv(&r, T * C, 1), *tail0 = t_randv(&r, NS * C * (Kc - 1), 1);
    float *wv = t_randv(&r, C * Kc, 1), *qkv = t_randv(&r, T * W, 0.3f);
    float *S0 = t_randv(&r, NS * Hv * SS, 0.1f), *g = t_randv(&r, T * Hv, 0.1f);
    float *b = t_randv(&r, T * Hv, 0.5f);
    gguf_tensor gt = { .name = "c", .type = QT_F32, .n_dims = 2, .ne = { Kc, C, 1, 1 },
                       .data = wv, .nbytes = (uint64_t)(C * Kc) * 4 };
    be_weight *bw;
    be_weight_bind(be3, &gt, &bw, NULL);
    /* results: [0] batched, [1] run by run; attention, conv, deltanet out,
     * deltanet state (NS * Hv rows), rope */
    const int64_t sz[5] = { T * Hq * hd, T * C, T * Hv * dk, NS * Hv * SS, T * Hq * hd };
    float *out[2][5];
    for (int m = 0; m < 2; m++)
        for (int j = 0; j < 5; j++)
            out[m][j] = calloc((size_t)sz[j], sizeof(float));
    for (int i = 0; i < (1 + NS); i++) {
        /* i == 0: the whole batch on NS slots; else run i-1 alone on slot 0 */
        const int m = i > 0, ns = m ? 1 : NS;
        const be_seq *run = m ? &seq[i - 1] : NULL;
        const int64_t r0 = m ? run->row0 : 0, n = m ? run->n_rows : T, s0 = m ? run->slot : 0;
        be_views_reset(be3);
        be_tensor *kc = be_tensor_new_f16(be3, ns * CTX, KV), *vc = be_tensor_new(be3, ns * CTX, KV);
        be_write(be3, kc, 0, ns * CTX, kv0 + s0 * CTX * KV);
        be_write(be3, vc, 0, ns * CTX, kv0 + s0 * CTX * KV);
        be_tensor *tl = upload(be3, tail0 + s0 * C * (Kc - 1), ns * C, Kc - 1);
        be_tensor *St = upload(be3, S0 + s0 * Hv * SS, ns * Hv, SS);
        be_tensor *qt = upload(be3, q + r0 * Hq * hd, n, Hq * hd);
        be_tensor *kt = upload(be3, k + r0 * KV, n, KV), *vt = upload(be3, v + r0 * KV, n, KV);
        be_tensor *xt = upload(be3, x + r0 * C, n, C), *qkvt = upload(be3, qkv + r0 * W, n, W);
        be_tensor *gtt = upload(be3, g + r0 * Hv, n, Hv), *btt = upload(be3, b + r0 * Hv, n, Hv);
        be_tensor *rt = upload(be3, q + r0 * Hq * hd, n, Hq * hd);
        be_tensor *at = be_tensor_new(be3, n, Hq * hd), *yt = be_tensor_new(be3, n, C);
        be_tensor *ot = be_tensor_new(be3, n, Hv * dk);
        be_batch bb;
        be_batch_init(be3, &bb, n, ns, CTX, NULL);
        be_seq one = m ? (be_seq){ 0, 0, run->n_rows, run->pos0 } : seq[0];
        be_batch_set(be3, &bb, ns, m ? &one : seq);
        be_kv_store(be3, kc, vc, kt, vt, &bb);
        be_attention(be3, qt, kc, vc, &bb, Hq, Hkv, hd, 0.125f, at);
        be_ssm_conv(be3, xt, tl, bw, &bb, yt);
        be_deltanet(be3, qkvt, gtt, btt, St, Hk, Hv, dk, &bb, ot);
        be_rope(be3, rt, hd, 16, (const int32_t[4]){ 3, 3, 2, 0 }, 1e7f, bb.pos);
        be_read(be3, at, 0, n, out[m][0] + r0 * Hq * hd);
        be_read(be3, yt, 0, n, out[m][1] + r0 * C);
        be_read(be3, ot, 0, n, out[m][2] + r0 * Hv * dk);
        be_read(be3, St, 0, ns * Hv, out[m][3] + s0 * Hv * SS);
        be_read(be3, rt, 0, n, out[m][4] + r0 * Hq * hd);
        be_batch_free(be3, &bb);
        be_tensor *all[] = { kc, vc, tl, St, qt, kt, vt, xt, qkvt, gtt, btt, rt, at, yt, ot };
        for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
            be_tensor_free(be3, all[j]);
    }
    static const char *const what[5] = { "attention", "conv", "deltanet", "deltanet state", "rope" };
    int bad = -1;
    for (int j = 0; j < 5 && bad < 0; j++)
        if (memcmp(out[0][j], out[1][j], sizeof(float) * (size_t)sz[j]))
            bad = j;
    q36_err err = { 0 };
    const int rc = be_check(be3, &err);
    t_check(name, bad < 0 && rc == 0, "%s differs (op error: %s)", bad < 0 ? "nothing" : what[bad],
            err.msg);
    for (int m = 0; m < 2; m++)
        for (int j = 0; j < 5; j++)
            free(out[m][j]);
    free(q); free(k); free(v); free(kv0); free(x); free(tail0); free(wv); free(qkv);
    free(S0); free(g); free(b);
}

int main(void)
{
    q36_err err = { 0 };
    if (be_cpu_new(1, &be1, &err) || be_cpu_new(3, &be3, &err)) {
        t_fail("cpu.new", "%s", err.msg);
        return t_exit();
    }
    test_ops_table();
    test_batch_runs();
    int64_t ns[] = { 1, 31, 33, 64, 128, 255, 257, 4096 };
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        test_dot(ns[i]);
    uint32_t types[] = { QT_F32, QT_F16, QT_BF16, QT_Q8_0, QT_Q4_K, QT_Q6_K };
    for (size_t i = 0; i < 6; i++) {
        test_matmul(types[i], 256, 33, 1);
        test_matmul(types[i], 512, 31, 7);
        test_matmul(types[i], 1024, 64, 65);
    }
    test_matmul(QT_Q8_0, 32, 1, 3);
    test_matmul_id(QT_Q8_0, 256, 48, 8, 2, 5, false);
    test_matmul_id(QT_Q4_K, 256, 33, 16, 3, 9, true);
    test_matmul_id(QT_Q4_K, 512, 37, 2, 2, 70, false);   /* > 64 pairs per expert */
    test_matmul_id(QT_F32, 64, 16, 4, 1, 1, false);
    test_matmul_id(QT_BF16, 96, 8, 4, 2, 3, false);
    test_rms(7, 1024, 1024, true);
    test_rms(33, 256, 64, true);
    test_rms(1, 255, 255, false);
    test_rms(5, 512, 128, false);
    test_hadamard(5, 512, 256);   /* q or k of 2 heads of 256 */
    test_hadamard(33, 512, 64);   /* v */
    test_hadamard(1, 128, 128);
    test_hadamard(40, 96, 32);
    test_hadamard(3, 8, 1);
    test_rope(3, 2, 256, 64, 0);
    test_rope(5, 3, 128, 32, 4000);
    test_rope(2, 4, 64, 16, 262000);
    test_attention(1, 0, 2, 1, 64);
    test_attention(7, 0, 4, 2, 64);
    test_attention(5, 33, 8, 2, 256);
    test_attention(1, 257, 6, 3, 128);
    test_conv(1, 96, 4);
    test_conv(33, 200, 4);
    test_conv(2, 64, 2);
    test_deltanet(1, 2, 4, 32);
    test_deltanet(31, 2, 4, 32);
    test_deltanet(9, 2, 2, 128);
    test_keep(1, 2, 4, 32, 4);
    test_keep(4, 2, 4, 64, 4);
    test_keep(5, 1, 2, 128, 3);
    test_keep(9, 1, 2, 32, 4);
    test_deltanet(3, 1, 3, 64);
    test_deltanet_chunked(1, 2, 4, 32);
    test_deltanet_chunked(63, 2, 4, 32);
    test_deltanet_chunked(200, 2, 2, 128);
    test_deltanet_chunked(65, 1, 3, 64);
    test_moe_route(9, 64, 8);
    test_moe_route(3, 4, 1);
    test_moe_route(1, 256, 8);
    test_argmax(1);
    test_argmax(16);
    test_argmax(33);
    test_argmax(47);
    test_argmax(151680);
    test_topk(8, 1, 1, 1);
    test_topk(8, 5, 5, 20);              /* fewer columns than k: padding */
    test_topk(16, 1000, 1000, 64);
    test_topk(16, 4097, 4097, 20);
    test_topk(8, 151680, 151680, 64);
    test_topk(8, 151680, 151680, 1);
    test_topk(8, 16384, 20000, 40);
    be_free(be1);
    be_free(be3);
    return t_exit();
}
