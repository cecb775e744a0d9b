/* cpu_attn_avx2.c: the AVX2 kernels of the tiled attention (cpu_attn.c),
 * for CPUs with AVX2, FMA and F16C but no AVX-512, where ggml's f32 vectors
 * have 8 lanes (cpu_lanes() == 8): scores of up to 4 queries per K row read
 * (f16 widened with vcvtph2ps, or rows cpu_attn.c widened for a whole
 * tile), 24 keys a pass, finished 8 at a time in ggml_vec_dot_f32's
 * 8-lane order, the softmax, probabilities scaled and rounded to f16, and
 * probabilities times V in the f32 GEMM's 8-lane order straight from the
 * cache rows (pv_rows, cpu_attn_pvr.h's body at 8 lanes). The scores and
 * softmax are cpu_attn_avx512.c's at half the width.
 *
 * Same bits as the reference (cpu_attn_ref.c at W = 8), by construction:
 *  - a score keeps ggml_vec_dot_f32's four accumulators (steps of 32), its
 *    pairwise combination and its 8-lane reduction (pairs i and i+4, then
 *    (0+1) + (2+3)); tree8 runs it for 8 keys at once as a transpose, each
 *    stage adding the same two values the scalar form adds.
 *  - the softmax: max, ggml's AVX2 lane exp (cpu_gexp.h), per-8 halving
 *    trees (i and i+4, i and i+2, 0 and 1) added in double, one float 1/sum.
 *  - the f32 GEMM's lanes are position mod 8 with fused multiply-adds in
 *    position order: the reference's accumulators, lane l of column d at
 *    acc[l * hd + d], kept as they are, a vector holding 8 columns of one
 *    lane; each lane's chain takes its positions in order. Positions past a
 *    query's own are skipped (an fma with a zero probability is not a no-op:
 *    it can turn -0 into +0).
 *  - vcvtph2ps is exact; vcvtps2ph with round-to-nearest-even is
 *    quant_f32_to_f16 for every non-NaN float.
 *
 * pv_rows replaced a V block transposed into 8-position columns (8x8
 * shuffle transposes) and a pass over it: at decode (4 queries per KV
 * head) the transpose cost as much as the multiply-adds. Measured under
 * Q36_QUANT_PATH_MAX=avx2, one thread, bench/results/
 * 2026-12-01-cpu-avx2-kernels2 (attnbench): one KV head, 4 queries over
 * 4097 keys, transpose + pass 0.26 ms -> 0.10 ms; 32 queries (a prompt
 * tile) 1.2-1.3 ms -> 0.71 ms. */
#include "cpu_attn.h"

#include <immintrin.h>

#include "../../quant/fp16.h"
#include "cpu_gexp.h"

#define T256 __attribute__((target("avx2,fma,f16c")))
#define INL static inline __attribute__((always_inline))

/* Lane k of the result is the 8-lane sum of v[k] in ggml_vec_dot_f32's
 * AVX2 reduction: pairs i and i+4, then (0+1) + (2+3). The network leaves
 * slot 2c + h in lane 4h + c, so the slots take the keys in that order. */
T256 INL __m256 tree8(const __m256 *v)
{
    __m256 s[8], t[4], u[2];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        s[i] = v[(i % 2) * 4 + i / 2];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)        /* lanes i and i+4 */
        t[i] = _mm256_add_ps(_mm256_permute2f128_ps(s[2 * i], s[2 * i + 1], 0x20),
                             _mm256_permute2f128_ps(s[2 * i], s[2 * i + 1], 0x31));
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++)        /* 0+1, 2+3 */
        u[i] = _mm256_add_ps(_mm256_shuffle_ps(t[2 * i], t[2 * i + 1], 0x88),
                             _mm256_shuffle_ps(t[2 * i], t[2 * i + 1], 0xDD));
    return _mm256_add_ps(_mm256_shuffle_ps(u[0], u[1], 0x88), _mm256_shuffle_ps(u[0], u[1], 0xDD));
}

#define KROW8(F16, src, ld, k, i)                                                              \
    ((F16) ? _mm256_cvtph_ps(_mm_loadu_si128(                                                  \
                 (const __m128i *)((const uint16_t *)(src) + (k) * (ld) + (i))))               \
           : _mm256_loadu_ps((const float *)(src) + (k) * (ld) + (i)))

/* ggml's combined accumulators (acc0 + acc2) + (acc1 + acc3) of NQ queries
 * against keys k .. k+NK-1 of the block into vb[query][key - k0]. One of
 * the four accumulators at a time, so NQ x NK pairs fit in the 16
 * registers and each K and q chunk loaded serves several fmas. */
T256 INL void score_keys(const int NQ, const int NK, const int F16, int64_t hd, const float *q,
                         const void *src, int64_t ld, int64_t k0, int64_t k, __m256 vb[4][24])
{
    const int64_t np = hd - hd % 32;
    __m256 part[4][4][4];
#pragma GCC unroll 1
    for (int j = 0; j < 4; j++) {
        __m256 a[4][4];
#pragma GCC unroll 4
        for (int kk = 0; kk < NK; kk++)
#pragma GCC unroll 4
            for (int qi = 0; qi < NQ; qi++)
                a[kk][qi] = _mm256_setzero_ps();
        for (int64_t i = 8 * j; i < np; i += 32) {
            __m256 kv[4];
#pragma GCC unroll 4
            for (int kk = 0; kk < NK; kk++)
                kv[kk] = KROW8(F16, src, ld, k0 + k + kk, i);
#pragma GCC unroll 4
            for (int qi = 0; qi < NQ; qi++) {
                const __m256 qv = _mm256_loadu_ps(q + qi * hd + i);
#pragma GCC unroll 4
                for (int kk = 0; kk < NK; kk++)
                    a[kk][qi] = _mm256_fmadd_ps(kv[kk], qv, a[kk][qi]);
            }
        }
#pragma GCC unroll 4
        for (int kk = 0; kk < NK; kk++)
#pragma GCC unroll 4
            for (int qi = 0; qi < NQ; qi++)
                part[j][kk][qi] = a[kk][qi];
    }
#pragma GCC unroll 4
    for (int kk = 0; kk < NK; kk++)
#pragma GCC unroll 4
        for (int qi = 0; qi < NQ; qi++)
            vb[qi][k + kk] = _mm256_add_ps(_mm256_add_ps(part[0][kk][qi], part[2][kk][qi]),
                                           _mm256_add_ps(part[1][kk][qi], part[3][kk][qi]));
}

/* Combined accumulators of NQ queries against keys k0 .. k0+nk-1 (nk <=
 * 24) into vb[query][key]; keys from nk to nk rounded up to 8 get zeros. */
T256 INL void score_accs(const int NQ, const int F16, int64_t hd, const float *q, const void *src,
                         int64_t ld, int64_t k0, int64_t nk, __m256 vb[4][24])
{
    int64_t k = 0;
    if (NQ == 4) {
        for (; k + 3 <= nk; k += 3)
            score_keys(4, 3, F16, hd, q, src, ld, k0, k, vb);
        if (k + 2 <= nk) {
            score_keys(4, 2, F16, hd, q, src, ld, k0, k, vb);
            k += 2;
        }
        for (; k < nk; k++)
            score_keys(4, 1, F16, hd, q, src, ld, k0, k, vb);
    } else {
        for (; k + 4 <= nk; k += 4)
            score_keys(1, 4, F16, hd, q, src, ld, k0, k, vb);
        for (; k < nk; k++)
            score_keys(1, 1, F16, hd, q, src, ld, k0, k, vb);
    }
    for (k = nk; k % 8; k++)
        for (int qi = 0; qi < NQ; qi++)
            vb[qi][k] = _mm256_setzero_ps();
}

/* One query's 8 scores from its accumulators: the reduction, ggml's tail
 * (rounded products for whole groups of 4, then fused multiply-adds, as in
 * cpu_fdot.c), the scale. */
T256 INL void score_finish(int64_t hd, const float *q, const void *src, int64_t ld, int f16,
                           int64_t k0, int64_t nk, const __m256 *v, float scale, float *s)
{
    const int64_t np = hd - hd % 32, es = f16 ? 2 : 4;
    __m256 t = tree8(v);
    if (np < hd) {
        float l[8];
        _mm256_storeu_ps(l, t);
        for (int64_t k = 0; k < nk; k++)
            l[k] = cpu_attn_score_tail(np, hd, q, (const char *)src + (k0 + k) * ld * es, f16, l[k]);
        t = _mm256_loadu_ps(l);
    }
    _mm256_storeu_ps(s, _mm256_mul_ps(t, _mm256_set1_ps(scale)));
}

T256 void cpu_attn256_scores(int64_t hd, int64_t nq, const float *q, const void *src, int64_t ld,
                             int f16, int64_t nb, float scale, float *s, int64_t sld)
{
    __m256 vb[4][24];
    for (int64_t k0 = 0; k0 < nb; k0 += 24) {
        const int64_t nk = nb - k0 < 24 ? nb - k0 : 24;
        cpu_attn_prefetch_rows(src, ld, f16, hd, k0 + 24, nb - k0 - 24 < 24 ? nb - k0 - 24 : 24);
        for (int64_t i0 = 0; i0 < nq; i0 += 4) {
            const int64_t m = nq - i0 < 4 ? nq - i0 : 4;
            const float *qb = q + i0 * hd;
            if (m == 4 && f16)
                score_accs(4, 1, hd, qb, src, ld, k0, nk, vb);
            else if (m == 4)
                score_accs(4, 0, hd, qb, src, ld, k0, nk, vb);
            else
                for (int64_t i = 0; i < m; i++) {
                    if (f16)
                        score_accs(1, 1, hd, qb + i * hd, src, ld, k0, nk, vb + i);
                    else
                        score_accs(1, 0, hd, qb + i * hd, src, ld, k0, nk, vb + i);
                }
            for (int64_t i = 0; i < m; i++)
                for (int64_t k = 0; k < nk; k += 8)
                    score_finish(hd, qb + i * hd, src, ld, f16, k0 + k, nk - k < 8 ? nk - k : 8,
                                 vb[i] + k, scale, s + (i0 + i) * sld + k0 + k);
        }
    }
}

T256 void cpu_attn256_scale_round(int64_t n, float *x, float v, int f16)
{
    const __m256 vv = _mm256_set1_ps(v);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 y = _mm256_mul_ps(_mm256_loadu_ps(x + i), vv);
        if (f16)
            y = _mm256_cvtph_ps(_mm256_cvtps_ph(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        _mm256_storeu_ps(x + i, y);
    }
    for (; i < n; i++) {
        x[i] *= v;
        if (f16)
            x[i] = quant_f16_to_f32(quant_f32_to_f16(x[i]));
    }
}

/* cpu_lane_sum's halving tree over the 8 lanes of x. */
T256 INL float lane_tree8(__m256 x)
{
    __m128 g = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    g = _mm_add_ps(g, _mm_movehl_ps(g, g));
    return _mm_cvtss_f32(_mm_add_ss(g, _mm_movehdup_ps(g)));
}

/* Lanes below n set (n may be <= 0 or >= 8). */
T256 INL __m256i lanes_below(int64_t n)
{
    const int64_t c = n < 0 ? 0 : n > 8 ? 8 : n;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

T256 void cpu_attn256_softmax(int64_t n, float *s, int f16)
{
    __m256 m = _mm256_set1_ps(-INFINITY);
    int64_t p = 0;
    for (; p + 8 <= n; p += 8)
        m = _mm256_max_ps(m, _mm256_loadu_ps(s + p));
    float l[8];
    _mm256_storeu_ps(l, m);
    float mx = -INFINITY;
    for (int i = 0; i < 8; i++)
        mx = l[i] > mx ? l[i] : mx;
    for (; p < n; p++)
        mx = s[p] > mx ? s[p] : mx;
    const __m256 mv = _mm256_set1_ps(mx);
    double sum = 0.0;
    /* whole chunks with plain loads and stores (a masked store takes
     * about ten cycles on a Zen 1), the last one masked */
    for (p = 0; p + 8 <= n; p += 8) {
        const __m256 e = cpu_gexp_avx2(_mm256_sub_ps(_mm256_loadu_ps(s + p), mv));
        _mm256_storeu_ps(s + p, e);
        sum += (double)lane_tree8(e);
    }
    if (p < n) {
        const __m256i k = lanes_below(n - p);
        const __m256 e = _mm256_and_ps(_mm256_castsi256_ps(k),
                                       cpu_gexp_avx2(_mm256_sub_ps(_mm256_maskload_ps(s + p, k), mv)));
        _mm256_maskstore_ps(s + p, k, e);
        sum += (double)lane_tree8(e);
    }
    cpu_attn256_scale_round(n, s, (float)(1.0 / sum), f16);
}

#define PVR_L 8
#define PVR_NC 3
#define PVR_T T256
#define PVR_V __m256
#define PVR_ROW KROW8
#define PVR_SET1(x) _mm256_set1_ps(x)
#define PVR_FMA _mm256_fmadd_ps
#define PVR_LOAD _mm256_loadu_ps
#define PVR_STORE _mm256_storeu_ps
#define PVR_ADD _mm256_add_ps
#define PVR_PV_ROWS cpu_attn256_pv_rows
#define PVR_OUT cpu_attn256_out
#include "cpu_attn_pvr.h"

const cpu_attn_kernels cpu_attn256_kernels = {
    8, cpu_attn256_scores, cpu_attn256_softmax, cpu_attn256_scale_round, cpu_attn256_pv_rows,
    cpu_attn256_out,
};
