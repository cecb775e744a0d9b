/* test_cuda_emu.c: CUDA kernels checked on the CPU through their host
 * emulations (built only when the CUDA backend is: the Makefile leaves
 * tests/test_cuda_*.c out otherwise). The kernels are phase functions
 * that run on the device and on the host; the emulation runs the same
 * code block by block, phase by phase, every thread index in turn, with
 * shared memory filled with NaN first. What the GPU alone can show (the
 * device's rounding, races, launch limits) is left to
 * tests/gpu/test_backend_cuda.c.
 *
 * The grouped expert products (cuda_moe.h): every (token, rank) row's
 * outputs against the product in double of the same f32 weights and rows.
 * Each output is a sequential f32 sum of K rounded products, so its error
 * is at most (K + 2) u sum_k |w_k x_k| (u = 2^-24, first order); a row
 * sent to the wrong expert, output or tile gives errors of the order of
 * that sum. Shapes: experts with no rows, with one tile and with several
 * (64 and 65 rows), outputs and K not multiples of the tiles, top-1/3/8,
 * one x row per token or per (token, rank), ids outside [0, E) (read as
 * expert 0, as on the device).
 *
 * The tiled prompt attention (cuda_fattn.h): every output against causal
 * softmax attention in double over the same cache values (f16 caches: the
 * query rounded to f16 as well), within the bound of
 * tests/gpu/test_backend_cuda.c's attention cases: the scores differ by
 * the f32 order of hd products, at most hd u |q||k| scale, each
 * probability then relatively by about twice that, and an f16 V cache
 * rounds the probabilities (2^-11 relative, twice with the sum), so the
 * output, a convex sum of V rows, is within
 * (2 * 2^-11 [f16] + 4 hd u max|q||k| scale + 8 u) max|V|. Cache rows past
 * each run's last position hold NaN: the kernel must never read them.
 * (The chunked delta rule's emulation is checked in
 * tests/test_deltanet_chunk.c.)
 *
 * The top k of rows of logits (cuda_topk.h): every row's columns and value
 * bits against a full sort (tests/topk_case.h: ties across a whole row at
 * the threshold, NaN, -0 and +0, -inf, fewer values than k). */
#include "test.h"

#include <stdbool.h>

#include "backend/cuda/cuda_fattn.h"
#include "backend/cuda/cuda_moe.h"
#include "backend/cuda/cuda_topk.h"
#include "quant/fp16.h"
#include "topk_case.h"

#define U 0x1p-24

/* sel: T x k draws of distinct experts, or (split > 0, k = 1) the first
 * `split` rows on expert 0 and the rest on expert 1; bad: every 7th id
 * replaced by -1 or E */
static void test_moe(int64_t K, int64_t N, int64_t E, int64_t k, int64_t T, bool per_rank,
                     int split, bool bad)
{
    char name[128];
    snprintf(name, sizeof name, "cuda_emu.moe_gemm_k%lld_n%lld_e%lld_top%lld_t%lld%s%s%s",
             (long long)K, (long long)N, (long long)E, (long long)k, (long long)T,
             per_rank ? "_rank_rows" : "", split ? "_split" : "", bad ? "_bad_ids" : "");
    t_rng r = t_rng_named(name);
    const int64_t Q = T * k, XR = per_rank ? Q : T;
    float *W = t_randv(&r, E * N * K, 1), *x = t_randv(&r, XR * K, 1);
    float *y = malloc(sizeof(float) * (size_t)(Q * N));
    int32_t *sel = malloc(sizeof(int32_t) * (size_t)Q);
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < k; i++) {
            int32_t e;
            bool again;
            do {
                e = split ? (t < split ? 0 : 1) : (int32_t)(t_next(&r) % (uint64_t)E);
                again = false;
                for (int64_t j = 0; j < i; j++)
                    again |= sel[t * k + j] == e;
            } while (again && !split);
            sel[t * k + i] = e;
        }
    if (bad)
        for (int64_t q = 3; q < Q; q += 7)
            sel[q] = q % 2 ? -1 : (int32_t)E;
    for (int64_t i = 0; i < Q * N; i++)
        y[i] = NAN;
    const int rc = cuda_moe_emulate(W, K, N, E, x, XR, K, sel, k, k, T, y, N);
    double worst = 0;
    int64_t at = 0;
    for (int64_t q = 0; q < Q && !rc; q++) {
        const int64_t e = sel[q] < 0 || sel[q] >= E ? 0 : sel[q];
        const float *xr = x + (per_rank || k == 1 ? q : q / k) * K;
        for (int64_t n = 0; n < N; n++) {
            const float *wr = W + (e * N + n) * K;
            double s = 0, mag = 0;
            for (int64_t i = 0; i < K; i++) {
                s += (double)wr[i] * xr[i];
                mag += fabs((double)wr[i] * xr[i]);
            }
            const double got = y[q * N + n];
            const double d = isnan(got) ? INFINITY : fabs(got - s) / ((double)(K + 2) * U * mag);
            if (d > worst) {
                worst = d;
                at = q * N + n;
            }
        }
    }
    if (rc)
        t_fail(name, "the emulation returned %d", rc);
    else
        t_check(name, worst <= 1.0, "output (row %lld, %lld): %.9g, %.3g of the bound",
                (long long)(at / N), (long long)(at % N), y[at], worst);
    printf("#   worst error %.3g of the bound\n", worst);
    free(W);
    free(x);
    free(y);
    free(sel);
}

/* n_seq runs of len[i] query rows at positions pos0[i].. on slots 1, 4, 7 .. */
static void test_fattn(int64_t Hq, int64_t Hkv, int64_t hd, bool f16, int n_seq, const int *len,
                       const int *pos0)
{
    char name[160];
    int n = snprintf(name, sizeof name, "cuda_emu.fattn_hq%lld_hkv%lld_hd%lld_%s_t", (long long)Hq,
                     (long long)Hkv, (long long)hd, f16 ? "f16" : "f32");
    for (int i = 0; i < n_seq; i++)
        n += snprintf(name + n, sizeof name - (size_t)n, i ? "+%d@%d" : "%d@%d", len[i], pos0[i]);
    t_rng r = t_rng_named(name);
    const int64_t n_slots = 8, W = Hkv * hd, Wq = Hq * hd;
    int64_t T = 0, kv_rows = 0;
    int32_t runs[4 * 8];
    for (int i = 0; i < n_seq; i++) {
        runs[4 * i] = (int32_t)((i * 3 + 1) % n_slots);
        runs[4 * i + 1] = (int32_t)T;
        runs[4 * i + 2] = len[i];
        runs[4 * i + 3] = pos0[i];
        T += len[i];
        kv_rows = pos0[i] + len[i] + 3 > kv_rows ? pos0[i] + len[i] + 3 : kv_rows;
    }
    const int64_t NR = n_slots * kv_rows;
    float *q = t_randv(&r, T * Wq, 1), *k = t_randv(&r, NR * W, 1), *v = t_randv(&r, NR * W, 1);
    /* rows past each run's last position: NaN */
    for (int64_t row = 0; row < NR; row++) {
        int64_t end = 0;
        for (int i = 0; i < n_seq; i++)
            if (row / kv_rows == runs[4 * i])
                end = pos0[i] + len[i];
        if (row % kv_rows >= end)
            for (int64_t c = 0; c < W; c++)
                k[row * W + c] = v[row * W + c] = NAN;
    }
    uint16_t *kh = malloc(sizeof(uint16_t) * (size_t)(NR * W)), *vh = malloc(sizeof(uint16_t) * (size_t)(NR * W));
    if (f16)
        for (int64_t i = 0; i < NR * W; i++) {
            kh[i] = quant_f32_to_f16(k[i]);
            vh[i] = quant_f32_to_f16(v[i]);
            k[i] = quant_f16_to_f32(kh[i]);
            v[i] = quant_f16_to_f32(vh[i]);
        }
    float *out = malloc(sizeof(float) * (size_t)(T * Wq));
    for (int64_t i = 0; i < T * Wq; i++)
        out[i] = NAN;
    const float scale = 1.0f / sqrtf((float)hd);
    const int rc = cuda_fattn_emulate(q, Wq, f16 ? (const void *)kh : k, W, f16 ? (const void *)vh : v,
                                      W, f16, runs, n_seq, kv_rows, Hq, Hkv, hd, scale, out, Wq);
    double worst = 0;
    int64_t at = 0;
    double *sc = malloc(sizeof(double) * (size_t)kv_rows), *qd = malloc(sizeof(double) * (size_t)hd);
    for (int i = 0; i < n_seq && !rc; i++)
        for (int64_t t = 0; t < len[i]; t++)
            for (int64_t h = 0; h < Hq; h++) {
                const int64_t row = runs[4 * i + 1] + t, p = pos0[i] + t, hk = h / (Hq / Hkv);
                const float *kb = k + (int64_t)runs[4 * i] * kv_rows * W + hk * hd;
                const float *vb = v + (int64_t)runs[4 * i] * kv_rows * W + hk * hd;
                double qn = 0, kn = 0, vmax = 0, mx = -INFINITY, sum = 0;
                for (int64_t d = 0; d < hd; d++) {
                    const float x = q[row * Wq + h * hd + d];
                    qd[d] = f16 ? quant_f16_to_f32(quant_f32_to_f16(x)) : x;
                    qn += qd[d] * qd[d];
                }
                for (int64_t j = 0; j <= p; j++) {
                    double s = 0, k2 = 0;
                    for (int64_t d = 0; d < hd; d++) {
                        s += qd[d] * kb[j * W + d];
                        k2 += (double)kb[j * W + d] * kb[j * W + d];
                        vmax = fmax(vmax, fabs(vb[j * W + d]));
                    }
                    sc[j] = s * scale;
                    kn = fmax(kn, k2);
                    mx = fmax(mx, sc[j]);
                }
                for (int64_t j = 0; j <= p; j++)
                    sum += exp(sc[j] - mx);
                const double bound = ((f16 ? 2.0 * 0x1p-11 : 0.0) +
                                      4.0 * (double)hd * U * sqrt(qn * kn) * scale + 8 * U) * vmax;
                for (int64_t d = 0; d < hd; d++) {
                    double o = 0;
                    for (int64_t j = 0; j <= p; j++)
                        o += exp(sc[j] - mx) / sum * vb[j * W + d];
                    const float got = out[row * Wq + h * hd + d];
                    const double e = isnan(got) ? INFINITY : fabs(got - o) / bound;
                    if (e > worst) {
                        worst = e;
                        at = row * Wq + h * hd + d;
                    }
                }
            }
    if (rc)
        t_fail(name, "the emulation returned %d", rc);
    else
        t_check(name, worst <= 1.0, "output %lld: %.9g, %.3g of the bound", (long long)at, out[at],
                worst);
    printf("#   worst error %.3g of the bound\n", worst);
    free(q); free(k); free(v); free(kh); free(vh); free(out); free(sc); free(qd);
}

static void test_topk(int64_t R, int64_t C, int k)
{
    char name[96];
    snprintf(name, sizeof name, "cuda_emu.topk_r%lld_c%lld_k%d", (long long)R, (long long)C, k);
    t_rng r = t_rng_named(name);
    float *x = malloc(sizeof(float) * (size_t)(R * C)), wv[64], *gv = malloc(sizeof(float) * (size_t)(R * k));
    int32_t wi[64], *gi = malloc(sizeof(int32_t) * (size_t)(R * k));
    topk_fill(&r, x, R, C, C);
    int rc = cuda_topk_emulate(x, C, R, C, k, gi, k, gv, k);
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < R && !rc; i++) {
        topk_ref(x + i * C, C, k, wi, wv);
        if ((memcmp(wi, gi + i * k, sizeof(int32_t) * (size_t)k) ||
             memcmp(wv, gv + i * k, sizeof(float) * (size_t)k)) && !bad++)
            first = i;
    }
    if (rc)
        t_fail(name, "the emulation refused k %d", k);
    else
        t_check(name, bad == 0, "%lld of %lld rows differ from the full sort (first: row %lld: "
                "%d %d against %d %d)", (long long)bad, (long long)R, (long long)first,
                first >= 0 ? gi[first * k] : 0, first >= 0 && k > 1 ? gi[first * k + 1] : 0,
                first >= 0 ? (topk_ref(x + first * C, C, k, wi, wv), wi[0]) : 0,
                first >= 0 && k > 1 ? wi[1] : 0);
    free(x); free(gv); free(gi);
}

int main(void)
{
    {
        const int l1[] = { 70 }, p1[] = { 0 }, l3[] = { 33, 1, 40 }, p3[] = { 0, 100, 7 };
        const int l2[] = { 100 }, p2[] = { 37 }, l4[] = { 65, 64 }, p4[] = { 5, 0 };
        test_fattn(4, 1, 64, false, 1, l1, p1);
        test_fattn(6, 3, 128, true, 3, l3, p3);       /* a decode row between prompts */
        test_fattn(8, 2, 256, true, 1, l2, p2);       /* the Qwen3.5/3.6 head */
        test_fattn(2, 2, 64, false, 2, l4, p4);
        test_fattn(16, 2, 256, false, 1, l1, p2);
    }
    test_moe(256, 96, 8, 8, 9, false, 0, false);        /* every expert, 72 rows */
    test_moe(512, 64, 64, 8, 33, false, 0, false);
    test_moe(256, 33, 256, 8, 10, false, 0, false);     /* most experts without rows */
    test_moe(2048, 512, 16, 8, 200, false, 0, false);   /* ~100 rows an expert: 2 tiles */
    test_moe(512, 2048, 16, 8, 70, true, 0, false);     /* down: a row per (token, rank) */
    test_moe(40, 31, 3, 1, 100, false, 0, false);       /* top-1, K not a multiple of 32 */
    test_moe(96, 50, 4, 3, 30, false, 0, true);         /* ids outside [0, E) */
    test_moe(64, 65, 2, 1, 129, false, 64, false);      /* 64 and 65 rows: tile edges */
    test_topk(8, 151680, 64);
    test_topk(8, 151680, 1);
    test_topk(16, 1000, 20);
    test_topk(8, 5, 20);                                /* fewer columns than k */
    test_topk(8, 300, 64);                              /* fewer than 256 threads' worth */
    test_topk(8, 4097, 33);
    return t_exit();
}
