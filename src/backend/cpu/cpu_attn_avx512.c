/* cpu_attn_avx512.c: the AVX-512 kernels of the tiled attention
 * (cpu_attn.c): scores of up to 4 queries per K row read (f16 widened
 * with vcvtph2ps), 16 keys at a time in ggml_vec_dot_f32's order,
 * probabilities scaled and rounded to f16, and probabilities times V in
 * the f32 GEMM's lane order straight from the cache rows (pv_rows, as
 * cpu_attn_avx2.c's at 16 lanes).
 *
 * Same bits as the reference (cpu_attn_ref.c), by construction:
 *  - a score keeps ggml_vec_dot_f32's four accumulators, its pairwise
 *    combination and its halving tree (pairs i and i+8, i and i+4, i and
 *    i+2, then 0 and 1). The tree runs for 16 keys at once as a transpose
 *    (tree16): each stage adds the same two lanes the scalar tree adds, so
 *    only where the sums live changes.
 *  - the f32 GEMM's lanes are position mod 16 with fused multiply-adds in
 *    position order: the reference's accumulators, lane l of column d at
 *    acc[l * hd + d], a vector holding 16 columns of one lane, each lane's
 *    chain taking its positions in order. Positions past a query's own are
 *    skipped (an fma with a zero probability is not a no-op: it can turn
 *    -0 into +0).
 *  - vcvtph2ps is exact; vcvtps2ph with round-to-nearest-even is the
 *    reference's quant_f32_to_f16 for every non-NaN float.
 *
 * P x V went from a V block transposed into 16-position columns (16x16
 * shuffle transposes, then a pass over them) to the rows as they are:
 * under attnbench (one KV head per item, 8 query heads over 2, head 256,
 * f16 caches, Zen 5), a decode call at depth 4096 over 8 layers' caches
 * 1.10-1.22 -> 0.62-0.71 ms on one thread, 0.58-0.74 -> 0.37-0.40 on two;
 * 512 query rows at depth 4096, two threads, 88-110 -> 78-98 ms
 * (bench/results/2026-12-03-cpu-attn512-rows). */
#include "cpu_attn.h"

#include <immintrin.h>

#include "../../quant/fp16.h"
#include "cpu_gexp.h"

#define T512 __attribute__((target("avx2,avx512f,avx512dq,fma,f16c")))
#define INL static inline __attribute__((always_inline))

/* Lane k of the result is the halving-tree sum of the lanes of v[k].
 * The transpose network below leaves slot c + 4m in lane 4c + m, so the
 * slots are filled with the keys in that order. */
T512 INL __m512 tree16(const __m512 *v)
{
    __m512 s[16], t[8], u[4], w[2];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++)
        s[i] = v[4 * (i % 4) + i / 4];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)        /* lanes i and i+8 */
        t[i] = _mm512_add_ps(_mm512_shuffle_f32x4(s[2 * i], s[2 * i + 1], 0x44),
                             _mm512_shuffle_f32x4(s[2 * i], s[2 * i + 1], 0xEE));
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)        /* i and i+4 */
        u[i] = _mm512_add_ps(_mm512_shuffle_f32x4(t[2 * i], t[2 * i + 1], 0x88),
                             _mm512_shuffle_f32x4(t[2 * i], t[2 * i + 1], 0xDD));
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++)        /* i and i+2 */
        w[i] = _mm512_add_ps(_mm512_shuffle_ps(u[2 * i], u[2 * i + 1], 0x44),
                             _mm512_shuffle_ps(u[2 * i], u[2 * i + 1], 0xEE));
    return _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], 0x88),   /* 0 and 1 */
                         _mm512_shuffle_ps(w[0], w[1], 0xDD));
}

#define KROW(F16, src, ld, k, i)                                                               \
    ((F16) ? _mm512_cvtph_ps(_mm256_loadu_si256(                                              \
                 (const __m256i *)((const uint16_t *)(src) + (k) * (ld) + (i))))               \
           : _mm512_loadu_ps((const float *)(src) + (k) * (ld) + (i)))

/* ggml's combined accumulator (acc0 + acc2) + (acc1 + acc3) of NQ queries
 * against key k into vb[query][k - k0]. */
T512 INL void score_key(const int NQ, const int F16, int64_t hd, const float *q, const void *src,
                        int64_t ld, int64_t k0, int64_t k, __m512 vb[4][16])
{
    const int64_t np = hd - hd % 64;
    __m512 a[4][4];
#pragma GCC unroll 4
    for (int qi = 0; qi < NQ; qi++)
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            a[qi][j] = _mm512_setzero_ps();
    for (int64_t i = 0; i < np; i += 64) {
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            const __m512 kv = KROW(F16, src, ld, k0 + k, i + 16 * j);
#pragma GCC unroll 4
            for (int qi = 0; qi < NQ; qi++)
                a[qi][j] = _mm512_fmadd_ps(kv, _mm512_loadu_ps(q + qi * hd + i + 16 * j), a[qi][j]);
        }
    }
#pragma GCC unroll 4
    for (int qi = 0; qi < NQ; qi++)
        vb[qi][k] = _mm512_add_ps(_mm512_add_ps(a[qi][0], a[qi][2]), _mm512_add_ps(a[qi][1], a[qi][3]));
}

/* The same for 4 queries x keys k .. k+3. One of ggml's four accumulators
 * at a time, so 16 (key, query) pairs fit in registers and each K and q
 * chunk loaded serves 4 fmas; the four partial vectors meet in part[]. */
T512 INL void score_keys4(const int F16, int64_t hd, const float *q, const void *src, int64_t ld,
                          int64_t k0, int64_t k, __m512 vb[4][16])
{
    const int64_t np = hd - hd % 64;
    __m512 part[4][4][4];
#pragma GCC unroll 1
    for (int j = 0; j < 4; j++) {
        __m512 a[4][4];
#pragma GCC unroll 4
        for (int kk = 0; kk < 4; kk++)
#pragma GCC unroll 4
            for (int qi = 0; qi < 4; qi++)
                a[kk][qi] = _mm512_setzero_ps();
        for (int64_t i = 16 * j; i < np; i += 64) {
            __m512 kv[4];
#pragma GCC unroll 4
            for (int kk = 0; kk < 4; kk++)
                kv[kk] = KROW(F16, src, ld, k0 + k + kk, i);
#pragma GCC unroll 4
            for (int qi = 0; qi < 4; qi++) {
                const __m512 qv = _mm512_loadu_ps(q + qi * hd + i);
#pragma GCC unroll 4
                for (int kk = 0; kk < 4; kk++)
                    a[kk][qi] = _mm512_fmadd_ps(kv[kk], qv, a[kk][qi]);
            }
        }
#pragma GCC unroll 4
        for (int kk = 0; kk < 4; kk++)
#pragma GCC unroll 4
            for (int qi = 0; qi < 4; qi++)
                part[j][kk][qi] = a[kk][qi];
    }
#pragma GCC unroll 4
    for (int kk = 0; kk < 4; kk++)
#pragma GCC unroll 4
        for (int qi = 0; qi < 4; qi++)
            vb[qi][k + kk] = _mm512_add_ps(_mm512_add_ps(part[0][kk][qi], part[2][kk][qi]),
                                           _mm512_add_ps(part[1][kk][qi], part[3][kk][qi]));
}

/* Combined accumulators of NQ queries against keys k0 .. k0+nk-1 of the
 * block into vb[query][key]; keys from nk to 15 get zeros. */
T512 INL void score_accs(const int NQ, const int F16, int64_t hd, const float *q, const void *src,
                         int64_t ld, int64_t k0, int64_t nk, __m512 vb[4][16])
{
    int64_t k = 0;
    if (NQ == 4)
        for (; k + 4 <= nk; k += 4)
            score_keys4(F16, hd, q, src, ld, k0, k, vb);
    for (; k < nk; k++)
        score_key(NQ, F16, hd, q, src, ld, k0, k, vb);
    for (k = nk; k < 16; k++)
        for (int qi = 0; qi < NQ; qi++)
            vb[qi][k] = _mm512_setzero_ps();
}

/* One query's 16 scores from its accumulators: the tree, ggml's tail
 * (rounded products for whole groups of 8, then fused multiply-adds, as
 * in cpu_fdot.c), the scale. */
T512 INL void score_finish(int64_t hd, const float *q, const void *src, int64_t ld, int f16,
                           int64_t k0, int64_t nk, const __m512 *v, float scale, float *s)
{
    const int64_t np = hd - hd % 64;
    __m512 t = tree16(v);
    if (np < hd) {
        float l[16];
        _mm512_storeu_ps(l, t);
        for (int64_t k = 0; k < nk; k++) {
            const void *row = f16 ? (const void *)((const uint16_t *)src + (k0 + k) * ld)
                                  : (const void *)((const float *)src + (k0 + k) * ld);
            l[k] = cpu_attn_score_tail(np, hd, q, row, f16, l[k]);
        }
        t = _mm512_loadu_ps(l);
    }
    _mm512_storeu_ps(s, _mm512_mul_ps(t, _mm512_set1_ps(scale)));
}

T512 void cpu_attn512_scores(int64_t hd, int64_t nq, const float *q, const void *src, int64_t ld,
                             int f16, int64_t nb, float scale, float *s, int64_t sld)
{
    __m512 vb[4][16];
    /* 16 keys stay in L1 while every query of the tile passes over them */
    for (int64_t k0 = 0; k0 < nb; k0 += 16) {
        const int64_t nk = nb - k0 < 16 ? nb - k0 : 16;
        cpu_attn_prefetch_rows(src, ld, f16, hd, k0 + 16, nb - k0 - 16 < 16 ? nb - k0 - 16 : 16);
        for (int64_t i0 = 0; i0 < nq; i0 += 4) {
            const int64_t m = nq - i0 < 4 ? nq - i0 : 4;
            const float *qb = q + i0 * hd;
            for (int64_t i = 0; i < m; i += (m == 4 ? 4 : 1)) {
                if (m == 4 && f16)
                    score_accs(4, 1, hd, qb, src, ld, k0, nk, vb);
                else if (m == 4)
                    score_accs(4, 0, hd, qb, src, ld, k0, nk, vb);
                else if (f16)
                    score_accs(1, 1, hd, qb + i * hd, src, ld, k0, nk, vb + i);
                else
                    score_accs(1, 0, hd, qb + i * hd, src, ld, k0, nk, vb + i);
            }
            for (int64_t i = 0; i < m; i++)
                score_finish(hd, qb + i * hd, src, ld, f16, k0, nk, vb[i], scale,
                             s + (i0 + i) * sld + k0);
        }
    }
}

T512 void cpu_attn512_scale_round(int64_t n, float *x, float v, int f16)
{
    const __m512 vv = _mm512_set1_ps(v);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 y = _mm512_mul_ps(_mm512_loadu_ps(x + i), vv);
        if (f16)
            y = _mm512_cvtph_ps(_mm512_cvtps_ph(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        _mm512_storeu_ps(x + i, y);
    }
    for (; i < n; i++) {
        x[i] *= v;
        if (f16)
            x[i] = quant_f16_to_f32(quant_f32_to_f16(x[i]));
    }
}

/* The halving tree over the 16 lanes of x (cpu_lane_sum's order). */
T512 INL float lane_tree(__m512 x)
{
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(x), _mm512_extractf32x8_ps(x, 1));
    __m128 g = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    g = _mm_add_ps(g, _mm_movehl_ps(g, g));
    return _mm_cvtss_f32(_mm_add_ss(g, _mm_movehdup_ps(g)));
}

T512 void cpu_attn512_softmax(int64_t n, float *s, int f16)
{
    __m512 m = _mm512_set1_ps(-INFINITY);
    int64_t p = 0;
    for (; p + 16 <= n; p += 16)
        m = _mm512_max_ps(m, _mm512_loadu_ps(s + p));
    float mx = _mm512_reduce_max_ps(m);
    for (; p < n; p++)
        mx = s[p] > mx ? s[p] : mx;
    const __m512 mv = _mm512_set1_ps(mx);
    double sum = 0.0;
    for (p = 0; p < n; p += 16) {
        const __mmask16 k = n - p >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - p)) - 1);
        const __m512 e = _mm512_maskz_mov_ps(k, cpu_gexp_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s + p), mv)));
        _mm512_mask_storeu_ps(s + p, k, e);
        sum += (double)lane_tree(e);
    }
    cpu_attn512_scale_round(n, s, (float)(1.0 / sum), f16);
}

/* ------------------------------------------- P x V straight from the rows */

#define PVR_L 16
#define PVR_NC 4
#define PVR_T T512
#define PVR_V __m512
#define PVR_ROW KROW
#define PVR_SET1(x) _mm512_set1_ps(x)
#define PVR_FMA _mm512_fmadd_ps
#define PVR_LOAD _mm512_loadu_ps
#define PVR_STORE _mm512_storeu_ps
#define PVR_ADD _mm512_add_ps
#define PVR_PV_ROWS cpu_attn512_pv_rows
#define PVR_OUT cpu_attn512_out
#include "cpu_attn_pvr.h"
