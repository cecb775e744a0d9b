/* cpu_deltanet_rows.c: the fast kernels of the gated delta rule (cpu_deltanet.h,
 * cpu_deltanet_rows): one value head, a block of state rows, every token.
 *
 * Why rows outside and tokens inside: row j of a head's state evolves on
 * its own (decay, its dot with k, its correction by beta (v_j - S_j.k),
 * its dot with q), so a block of rows small enough for L1 (16 rows of 128
 * floats: 8 KB) can run through the whole prompt while the token vectors
 * k_t, q_t stream past it. The first form of the op made four passes over
 * the 64 KB state per token (scale, predict, correct, read), each from L2.
 * Within one row and token the arithmetic is the reference's, element for
 * element: the decay is one rounded product, both dots follow
 * ggml_vec_dot_f32's order (4 accumulators over steps of 4 vectors, then
 * (0+2) + (1+3) and the lane tree, then the tail), the correction one fused
 * multiply-add. Consecutive rows of a block are independent, so the
 * out-of-order core overlaps their dependency chains. */
#include "cpu_deltanet.h"

/* Products are rounded before they are added, as in ggml's build: GCC in
 * ISO C mode does not contract a * b + c into a fused multiply-add; clang
 * does unless told not to. */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#include <immintrin.h>
#include <math.h>

/* The dot's elements from np on, after the W lanes: rounded products added
 * for whole groups of W/2, fused multiply-adds after that (cpu_fdot.c). */
__attribute__((target("fma")))
static inline float dot_tail(float s, int64_t np, int64_t n, const float *x, const float *y, int W)
{
    const int64_t nv = np + (n - np) / (W / 2) * (W / 2);
    for (int64_t i = np; i < nv; i++) {
        const float p = x[i] * y[i];
        s = s + p;
    }
    for (int64_t i = nv; i < n; i++)
        s = __builtin_fmaf(x[i], y[i], s);
    return s;
}

/* ------------------------------------------------------------ AVX-512 */

/* The 16-lane halving tree: (i, i+8), (i, i+4), (i, i+2), then 0 + 1. */
__attribute__((target("avx512f")))
static inline float tree16(__m512 a)
{
    const __m256 lo = _mm512_castps512_ps256(a);
    const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1));
    const __m256 s8 = _mm256_add_ps(lo, hi);
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

/* The dot's end: (a0 + a2) + (a1 + a3), the tree, then the tail. */
__attribute__((target("avx512f,fma")))
static inline float finish16(__m512 a0, __m512 a1, __m512 a2, __m512 a3, int64_t np, int64_t n,
                             const float *x, const float *y)
{
    a0 = _mm512_add_ps(a0, a2);
    a1 = _mm512_add_ps(a1, a3);
    float s = tree16(_mm512_add_ps(a0, a1));
    return dot_tail(s, np, n, x, y, 16);
}

/* dk = 64 * NV, R rows at once: each row lives in registers for the whole
 * step (R * 4 * NV row vectors and R * 4 accumulators; R = 2, NV = 2 uses
 * 24 of the 32 registers). R rows in one loop body give the core R
 * independent chains (load, decay, dot, tree, correction, dot, tree) to
 * overlap; one row alone leaves most of its latency exposed. */
/* x . y over 64 * NV elements, both in registers: ggml_vec_dot_f32's
 * order (the tail is empty). */
__attribute__((target("avx512f,fma"), always_inline))
static inline float dot_rr(const __m512 *x, const __m512 *y, int NV)
{
    const __m512 z = _mm512_setzero_ps();
    __m512 a[4];
    _Pragma("GCC unroll 4")
    for (int i = 0; i < 4; i++)
        a[i] = _mm512_fmadd_ps(x[i], y[i], z);
    _Pragma("GCC unroll 4")
    for (int i = 4; i < 4 * NV; i++)
        a[i % 4] = _mm512_fmadd_ps(x[i], y[i], a[i % 4]);
    return finish16(a[0], a[1], a[2], a[3], 0, 0, (const float *)0, (const float *)0);
}

/* x . y's four accumulators combined, (a0 + a2) + (a1 + a3): the tree is
 * left to tree16x16. */
__attribute__((target("avx512f,fma"), always_inline))
static inline __m512 dot_rr_acc(const __m512 *x, const __m512 *y, int NV)
{
    const __m512 z = _mm512_setzero_ps();
    __m512 a[4];
    _Pragma("GCC unroll 4")
    for (int i = 0; i < 4; i++)
        a[i] = _mm512_fmadd_ps(x[i], y[i], z);
    _Pragma("GCC unroll 4")
    for (int i = 4; i < 4 * NV; i++)
        a[i % 4] = _mm512_fmadd_ps(x[i], y[i], a[i % 4]);
    return _mm512_add_ps(_mm512_add_ps(a[0], a[2]), _mm512_add_ps(a[1], a[3]));
}

/* The lane tree of 16 vectors at once, each lane pairing as in tree16
 * ((i, i+8), (i, i+4), (i, i+2), (0, 1)); lane r of the result is v[r]'s. */
__attribute__((target("avx512f")))
static inline __m512 tree16x16(const __m512 *v)
{
    __m512 u[8], w[4], z[2];
    for (int k = 0; k < 8; k++)            /* lanes 0-7: v[2k] (i, i+8); 8-15: v[2k+1] */
        u[k] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], 0x44),
                             _mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], 0xEE));
    for (int k = 0; k < 4; k++)            /* 128-bit block r: v[4k + r] (i, i+4) */
        w[k] = _mm512_add_ps(_mm512_shuffle_f32x4(u[2 * k], u[2 * k + 1], 0x88),
                             _mm512_shuffle_f32x4(u[2 * k], u[2 * k + 1], 0xDD));
    for (int k = 0; k < 2; k++)            /* block r: v[8k + r] and v[8k + 4 + r] (i, i+2) */
        z[k] = _mm512_add_ps(
            _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(w[2 * k]), _mm512_castps_pd(w[2 * k + 1]))),
            _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(w[2 * k]), _mm512_castps_pd(w[2 * k + 1]))));
    /* lane 4r + c: v[4c + r] (0 + 1) */
    const __m512 s = _mm512_add_ps(_mm512_shuffle_ps(z[0], z[1], 0x88), _mm512_shuffle_ps(z[0], z[1], 0xDD));
    const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    return _mm512_permutexvar_ps(idx, s);
}

/* dk = 64 * NV: the token's k and q stay in registers for the whole block
 * (16 of the 32 at dk = 128) and each row passes through registers once
 * (8 more): one load and one store per state vector, no reloads of k or q.
 * Measured against holding two rows and reloading k and q (one thread,
 * packed inputs, noisy): ~10 vs ~13 ns per row and token at dk = 128.
 * The output dots of a whole block of 16 rows end in one batched tree
 * (tree16x16: ~3 shuffles and adds per row instead of ~8, and one vector
 * store): ~9 vs ~13 ns in the same measurement taken later (a loaded
 * machine). Batching the prediction's tree as well needs a second pass
 * over the rows and measured slower (~12.5 ns). */
#define GDN_REG_KERNEL(NAME, NV)                                                         \
__attribute__((target("avx512f,fma")))                                                   \
static void NAME(const cpu_deltanet_head *hd, float *S, int64_t j0, int64_t j1)               \
{                                                                                        \
    const int64_t n = 64 * (NV);                                                         \
    for (int64_t t = 0; t < hd->T; t++) {                                                \
        const float *q = hd->q + t * hd->ld, *k = hd->k + t * hd->ld;                    \
        const float *v = hd->v + t * hd->ld;                                             \
        float *o = hd->out + t * hd->ldo;                                                \
        const __m512 vd = _mm512_set1_ps(hd->decay[t * hd->dstride]);                   \
        const float b = hd->beta[t * hd->bstride], scale = hd->scale;                    \
        __m512 kv[4 * (NV)], qv[4 * (NV)];                                               \
        _Pragma("GCC unroll 8")                                                          \
        for (int i = 0; i < 4 * (NV); i++) {                                             \
            kv[i] = _mm512_loadu_ps(k + 16 * i);                                         \
            qv[i] = _mm512_loadu_ps(q + 16 * i);                                         \
        }                                                                                \
        __m512 acc[16];                                                                  \
        const bool full = j1 - j0 == 16;                                                 \
        for (int64_t j = j0; j < j1; j++) {                                              \
            float *s = S + j * n;                                                        \
            const float *si = (t == 0 && hd->src ? hd->src + j * n : s);                 \
            __m512 x[4 * (NV)];                                                          \
            _Pragma("GCC unroll 8")                                                      \
            for (int i = 0; i < 4 * (NV); i++)                                           \
                x[i] = _mm512_mul_ps(_mm512_loadu_ps(si + 16 * i), vd);                  \
            const float d = (v[j] - dot_rr(x, kv, (NV))) * b;                            \
            const __m512 vdl = _mm512_set1_ps(d);                                        \
            _Pragma("GCC unroll 8")                                                      \
            for (int i = 0; i < 4 * (NV); i++) {                                         \
                x[i] = _mm512_fmadd_ps(kv[i], vdl, x[i]);                                \
                _mm512_storeu_ps(s + 16 * i, x[i]);                                      \
            }                                                                            \
            if (full)                                                                    \
                acc[j - j0] = dot_rr_acc(x, qv, (NV));                                   \
            else                                                                         \
                o[j] = dot_rr(x, qv, (NV)) * scale;                                      \
        }                                                                                \
        if (full)                                                                        \
            _mm512_storeu_ps(o + j0, _mm512_mul_ps(tree16x16(acc), _mm512_set1_ps(scale))); \
    }                                                                                    \
}

GDN_REG_KERNEL(rows_avx512_64, 1)
GDN_REG_KERNEL(rows_avx512_128, 2)

/* Any dk, in either width (V: the vector type of L lanes): the row goes
 * through L1 between the two halves of the step; the elements after the
 * last whole step of 4 vectors are the dot's scalar tail. */
#define GDN_MEM_KERNEL(NAME, TARGET, V, L, LOAD, STORE, MUL, FMA, SET1, ZERO, FINISH)    \
__attribute__((target(TARGET)))                                                         \
static void NAME(const cpu_deltanet_head *hd, float *S, int64_t j0, int64_t j1)               \
{                                                                                        \
    const int64_t n = hd->dk, np = n - n % (4 * (L)), nl = n - n % (L);                  \
    const V z = ZERO();                                                                  \
    for (int64_t t = 0; t < hd->T; t++) {                                                \
        const float *q = hd->q + t * hd->ld, *k = hd->k + t * hd->ld;                    \
        const float *v = hd->v + t * hd->ld;                                             \
        float *o = hd->out + t * hd->ldo;                                                \
        const float dec = hd->decay[t * hd->dstride], b = hd->beta[t * hd->bstride];     \
        const V vd = SET1(dec);                                                          \
        for (int64_t j = j0; j < j1; j++) {                                              \
            float *s = S + j * n;                                                        \
            const float *si = (t == 0 && hd->src ? hd->src + j * n : s);                 \
            V a[4] = { z, z, z, z };                                                     \
            for (int64_t i = 0; i < np; i += 4 * (L))                                    \
                _Pragma("GCC unroll 4")                                                  \
                for (int u = 0; u < 4; u++) {                                            \
                    const V x = MUL(LOAD(si + i + (L) * u), vd);                         \
                    STORE(s + i + (L) * u, x);                                           \
                    a[u] = FMA(x, LOAD(k + i + (L) * u), a[u]);                          \
                }                                                                        \
            for (int64_t i = np; i < n; i++)                                             \
                s[i] = si[i] * dec;                                                      \
            const float d = (v[j] - FINISH(a[0], a[1], a[2], a[3], np, n, s, k)) * b;    \
            const V vdl = SET1(d);                                                       \
            a[0] = a[1] = a[2] = a[3] = z;                                               \
            for (int64_t i = 0; i < np; i += 4 * (L))                                    \
                _Pragma("GCC unroll 4")                                                  \
                for (int u = 0; u < 4; u++) {                                            \
                    const V x = FMA(LOAD(k + i + (L) * u), vdl, LOAD(s + i + (L) * u));  \
                    STORE(s + i + (L) * u, x);                                           \
                    a[u] = FMA(x, LOAD(q + i + (L) * u), a[u]);                          \
                }                                                                        \
            for (int64_t i = np; i < nl; i += (L))                                       \
                STORE(s + i, FMA(LOAD(k + i), vdl, LOAD(s + i)));                        \
            for (int64_t i = nl; i < n; i++)                                             \
                s[i] = __builtin_fmaf(k[i], d, s[i]);                                    \
            o[j] = FINISH(a[0], a[1], a[2], a[3], np, n, s, q) * hd->scale;              \
        }                                                                                \
    }                                                                                    \
}

GDN_MEM_KERNEL(rows_avx512, "avx512f,fma", __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps,
               _mm512_mul_ps, _mm512_fmadd_ps, _mm512_set1_ps, _mm512_setzero_ps, finish16)

/* --------------------------------------------------------------- AVX2 */

/* ggml_vec_dot_f32's AVX2 end: (a0 + a2) + (a1 + a3), lanes (i, i+4),
 * then (0+1) + (2+3), then the tail as above. */
__attribute__((target("avx2,fma")))
static inline float finish8(__m256 a0, __m256 a1, __m256 a2, __m256 a3, int64_t np, int64_t n,
                            const float *x, const float *y)
{
    a0 = _mm256_add_ps(a0, a2);
    a1 = _mm256_add_ps(a1, a3);
    a0 = _mm256_add_ps(a0, a1);
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(a0), _mm256_extractf128_ps(a0, 1));
    const __m128 h = _mm_hadd_ps(s4, s4);               /* (0+1), (2+3) */
    float s = _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
    return dot_tail(s, np, n, x, y, 8);
}

GDN_MEM_KERNEL(rows_avx2, "avx2,fma", __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps,
               _mm256_mul_ps, _mm256_fmadd_ps, _mm256_set1_ps, _mm256_setzero_ps, finish8)

/* Two rows at once, AVX2, any dk: rows_avx2's arithmetic for each row,
 * element for element, with the two rows' loops interleaved. One row's
 * step is a chain of latencies (the prediction's dot, its lane tree, the
 * correction, the output's dot and tree) longer than the out-of-order
 * window reaches across, so a lone row leaves the core waiting; two give
 * it two independent chains, and each k and q vector loaded serves both.
 * Measured (one thread, test_cpu_seq bench under Q36_QUANT_PATH_MAX=avx2,
 * dk 128, 512 tokens, 16 heads, best of 5): 13.4 ms, one row at a time
 * 15.5 ms. The loops over the four accumulators are unrolled by pragma
 * here and in GDN_MEM_KERNEL: left as loops, GCC kept the accumulators in
 * a stack array and every fused multiply-add went through memory (29 ms
 * before). */
__attribute__((target("avx2,fma")))
static void rows_avx2_pair(const cpu_deltanet_head *hd, float *S, int64_t j0, int64_t j1)
{
    const int64_t n = hd->dk, np = n - n % 32, nl = n - n % 8;
    const __m256 z = _mm256_setzero_ps();
    for (int64_t t = 0; t < hd->T; t++) {
        const float *q = hd->q + t * hd->ld, *k = hd->k + t * hd->ld;
        const float *v = hd->v + t * hd->ld;
        float *o = hd->out + t * hd->ldo;
        const float dec = hd->decay[t * hd->dstride], b = hd->beta[t * hd->bstride];
        const __m256 vd = _mm256_set1_ps(dec);
        for (int64_t j = j0; j + 1 < j1; j += 2) {
            float *s0 = S + j * n, *s1 = s0 + n;
            const float *i0 = t == 0 && hd->src ? hd->src + j * n : s0, *i1 = i0 + n;
            __m256 a[4] = { z, z, z, z }, c[4] = { z, z, z, z };
            for (int64_t i = 0; i < np; i += 32)
                _Pragma("GCC unroll 4")
                for (int u = 0; u < 4; u++) {
                    const __m256 kk = _mm256_loadu_ps(k + i + 8 * u);
                    const __m256 x0 = _mm256_mul_ps(_mm256_loadu_ps(i0 + i + 8 * u), vd);
                    const __m256 x1 = _mm256_mul_ps(_mm256_loadu_ps(i1 + i + 8 * u), vd);
                    _mm256_storeu_ps(s0 + i + 8 * u, x0);
                    _mm256_storeu_ps(s1 + i + 8 * u, x1);
                    a[u] = _mm256_fmadd_ps(x0, kk, a[u]);
                    c[u] = _mm256_fmadd_ps(x1, kk, c[u]);
                }
            for (int64_t i = np; i < n; i++) {
                s0[i] = i0[i] * dec;
                s1[i] = i1[i] * dec;
            }
            const float d0 = (v[j] - finish8(a[0], a[1], a[2], a[3], np, n, s0, k)) * b;
            const float d1 = (v[j + 1] - finish8(c[0], c[1], c[2], c[3], np, n, s1, k)) * b;
            const __m256 vd0 = _mm256_set1_ps(d0), vd1 = _mm256_set1_ps(d1);
            a[0] = a[1] = a[2] = a[3] = z;
            c[0] = c[1] = c[2] = c[3] = z;
            for (int64_t i = 0; i < np; i += 32)
                _Pragma("GCC unroll 4")
                for (int u = 0; u < 4; u++) {
                    const __m256 kk = _mm256_loadu_ps(k + i + 8 * u);
                    const __m256 qq = _mm256_loadu_ps(q + i + 8 * u);
                    const __m256 x0 = _mm256_fmadd_ps(kk, vd0, _mm256_loadu_ps(s0 + i + 8 * u));
                    const __m256 x1 = _mm256_fmadd_ps(kk, vd1, _mm256_loadu_ps(s1 + i + 8 * u));
                    _mm256_storeu_ps(s0 + i + 8 * u, x0);
                    _mm256_storeu_ps(s1 + i + 8 * u, x1);
                    a[u] = _mm256_fmadd_ps(x0, qq, a[u]);
                    c[u] = _mm256_fmadd_ps(x1, qq, c[u]);
                }
            for (int64_t i = np; i < nl; i += 8) {
                const __m256 kk = _mm256_loadu_ps(k + i);
                _mm256_storeu_ps(s0 + i, _mm256_fmadd_ps(kk, vd0, _mm256_loadu_ps(s0 + i)));
                _mm256_storeu_ps(s1 + i, _mm256_fmadd_ps(kk, vd1, _mm256_loadu_ps(s1 + i)));
            }
            for (int64_t i = nl; i < n; i++) {
                s0[i] = __builtin_fmaf(k[i], d0, s0[i]);
                s1[i] = __builtin_fmaf(k[i], d1, s1[i]);
            }
            o[j] = finish8(a[0], a[1], a[2], a[3], np, n, s0, q) * hd->scale;
            o[j + 1] = finish8(c[0], c[1], c[2], c[3], np, n, s1, q) * hd->scale;
        }
    }
    if ((j1 - j0) % 2)
        rows_avx2(hd, S, j1 - 1, j1);
}

/* ----------------------------------------------------------- dispatch */

void cpu_deltanet_rows(const cpu_deltanet_head *hd, float *S, int64_t j0, int64_t j1, int W)
{
    __builtin_cpu_init();
    const bool fma = __builtin_cpu_supports("fma");
    if (W == 16 && fma && cpu_avx512_ok()) {
        if (hd->dk == 128)
            rows_avx512_128(hd, S, j0, j1);
        else if (hd->dk == 64)
            rows_avx512_64(hd, S, j0, j1);
        else
            rows_avx512(hd, S, j0, j1);
        return;
    }
    if (W == 8 && fma && __builtin_cpu_supports("avx2")) {
        rows_avx2_pair(hd, S, j0, j1);
        return;
    }
    cpu_deltanet_rows_ref(hd, S, j0, j1, W);
}
