/* cpu_vexp.h: expf over vectors (AVX-512 and AVX2) with the same bits as
 * the libm expf the CPU backend calls element by element, for SiLU,
 * sigmoid, SwiGLU (cpu_ops.c) and softmax (cpu_attn.c).
 *
 * How it keeps libm's bits. Each lane computes e^x in double: x = k ln2 +
 * r (k = round(x/ln2), |r| <= ln2/2, r with two fused multiply-adds of a
 * split ln2), e^r by its Taylor polynomial of degree 11 (remainder below
 * 2^-42 of the result), times 2^k; then one rounding to float. A libm
 * expf that is within 0.502 ulp (glibc's: it evaluates in double too,
 * with a relative error near 2^-33 before its one rounding) rounds to the
 * same float unless the exact value lies within that error of a midpoint
 * between two floats. So each lane also rounds y(1 - 2^-31) and
 * y(1 + 2^-31): when they round to different floats, a midpoint is that
 * close, and the lane is recomputed with expf itself (about 1 lane in
 * 100). NaN inputs go to expf too; x is clamped to [-104, 89], where e^x
 * already rounds to 0 and to inf. tests/test_cpu_vexp.c checks the bits
 * against expf densely over [-104, 89] and at the edges (and over every
 * float there with --all).
 *
 * Header-only: the kernels inline into their callers' loops. Call the
 * _avx512 / _avx2 forms only where cpu_vexp_level() said the CPU has
 * them; cpu_vexp() picks by itself. */
#ifndef Q36_CPU_VEXP_H
#define Q36_CPU_VEXP_H

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>

/* 2: AVX-512 F and DQ (with AVX2+FMA), 1: AVX2+FMA, 0: neither (libm only) */
static inline int cpu_vexp_level(void)
{
#if defined(__x86_64__)
    /* threads may race to fill it; each writes the same value */
    static _Atomic int level = -1;
    int l = atomic_load_explicit(&level, memory_order_relaxed);
    if (l < 0) {
        __builtin_cpu_init();
        const int fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        const int z = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
        l = fma && z ? 2 : fma ? 1 : 0;
        atomic_store_explicit(&level, l, memory_order_relaxed);
    }
    return l;
#else
    return 0;
#endif
}

#if defined(__x86_64__)
#include <immintrin.h>

#define CPU_VEXP_LOG2E   1.4426950408889634
#define CPU_VEXP_LN2_HI  0x1.62e42fefa3800p-1   /* ln 2 in its top 43 bits */
#define CPU_VEXP_LN2_LO  0x1.ef35793c76730p-45  /* ln 2 - CPU_VEXP_LN2_HI */
#define CPU_VEXP_LO      -104.0
#define CPU_VEXP_HI      89.0
#define CPU_VEXP_GUARD   0x1p-31                /* midpoint distance sent to libm */

/* 1/k! for k = 11 down to 0 */
#define CPU_VEXP_TAYLOR(P) \
    P(2.505210838544171877505e-08) P(2.755731922398589065256e-07) \
    P(2.755731922398589065256e-06) P(2.480158730158730158730e-05) \
    P(1.984126984126984126984e-04) P(1.388888888888888888889e-03) \
    P(8.333333333333333333333e-03) P(4.166666666666666666667e-02) \
    P(1.666666666666666666667e-01) P(5.000000000000000000000e-01) P(1.0) P(1.0)

/* ---------------------------------------------------------------- AVX-512 */

#define CPU_VEXP_AVX512 __attribute__((target("avx2,fma,avx512f,avx512dq")))

/* e^x for 8 doubles holding floats in [LO, HI] */
CPU_VEXP_AVX512 static inline __m512d cpu_vexp_pd8(__m512d x)
{
    const __m512d k = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(CPU_VEXP_LOG2E)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512d r = _mm512_fnmadd_pd(k, _mm512_set1_pd(CPU_VEXP_LN2_HI), x);
    r = _mm512_fnmadd_pd(k, _mm512_set1_pd(CPU_VEXP_LN2_LO), r);
    __m512d p = _mm512_setzero_pd();
#define CPU_VEXP_STEP(c) p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(c));
    CPU_VEXP_TAYLOR(CPU_VEXP_STEP)
#undef CPU_VEXP_STEP
    /* 2^k: k in [-151, 129] is a normal double's exponent */
    const __m512i e = _mm512_slli_epi64(_mm512_add_epi64(_mm512_cvtpd_epi64(k),
                                                         _mm512_set1_epi64(1023)), 52);
    return _mm512_mul_pd(p, _mm512_castsi512_pd(e));
}

/* expf of 16 floats, libm's bits */
CPU_VEXP_AVX512 static inline __m512 cpu_vexp_avx512(__m512 x)
{
    const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    const __m512 xc = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps((float)CPU_VEXP_LO)),
                                    _mm512_set1_ps((float)CPU_VEXP_HI));
    const __m512d ylo = cpu_vexp_pd8(_mm512_cvtps_pd(_mm512_castps512_ps256(xc)));
    const __m512d yhi = cpu_vexp_pd8(_mm512_cvtps_pd(_mm512_extractf32x8_ps(xc, 1)));
    const __m512d dn = _mm512_set1_pd(1.0 - CPU_VEXP_GUARD), up = _mm512_set1_pd(1.0 + CPU_VEXP_GUARD);
#define CPU_VEXP_CVT(v) _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(v##lo)), \
                                           _mm512_cvtpd_ps(v##hi), 1)
    const __m512 y = CPU_VEXP_CVT(y);
    const __m512d alo = _mm512_mul_pd(ylo, dn), ahi = _mm512_mul_pd(yhi, dn);
    const __m512d blo = _mm512_mul_pd(ylo, up), bhi = _mm512_mul_pd(yhi, up);
    const __m512 a = CPU_VEXP_CVT(a), b = CPU_VEXP_CVT(b);
#undef CPU_VEXP_CVT
    const __mmask16 hard = nan | _mm512_cmp_ps_mask(a, b, _CMP_NEQ_UQ);
    if (__builtin_expect(hard != 0, 0)) {
        float xs[16], ys[16];
        _mm512_storeu_ps(xs, x);
        _mm512_storeu_ps(ys, y);
        for (unsigned m = hard; m; m &= m - 1) {
            const int i = __builtin_ctz(m);
            ys[i] = expf(xs[i]);
        }
        return _mm512_loadu_ps(ys);
    }
    return y;
}

/* ------------------------------------------------------------------- AVX2 */

#define CPU_VEXP_AVX2 __attribute__((target("avx2,fma")))

/* e^x for 4 doubles holding floats in [LO, HI] */
CPU_VEXP_AVX2 static inline __m256d cpu_vexp_pd4(__m256d x)
{
    const __m256d k = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(CPU_VEXP_LOG2E)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256d r = _mm256_fnmadd_pd(k, _mm256_set1_pd(CPU_VEXP_LN2_HI), x);
    r = _mm256_fnmadd_pd(k, _mm256_set1_pd(CPU_VEXP_LN2_LO), r);
    __m256d p = _mm256_setzero_pd();
#define CPU_VEXP_STEP(c) p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(c));
    CPU_VEXP_TAYLOR(CPU_VEXP_STEP)
#undef CPU_VEXP_STEP
    /* 2^k from k + 1023 as int32 lanes widened to int64 */
    const __m128i k32 = _mm256_cvtpd_epi32(k);
    const __m256i e = _mm256_slli_epi64(_mm256_add_epi64(_mm256_cvtepi32_epi64(k32),
                                                         _mm256_set1_epi64x(1023)), 52);
    return _mm256_mul_pd(p, _mm256_castsi256_pd(e));
}

/* expf of 8 floats, libm's bits */
CPU_VEXP_AVX2 static inline __m256 cpu_vexp_avx2(__m256 x)
{
    const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    const __m256 xc = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps((float)CPU_VEXP_LO)),
                                    _mm256_set1_ps((float)CPU_VEXP_HI));
    const __m256d ylo = cpu_vexp_pd4(_mm256_cvtps_pd(_mm256_castps256_ps128(xc)));
    const __m256d yhi = cpu_vexp_pd4(_mm256_cvtps_pd(_mm256_extractf128_ps(xc, 1)));
    const __m256d dn = _mm256_set1_pd(1.0 - CPU_VEXP_GUARD), up = _mm256_set1_pd(1.0 + CPU_VEXP_GUARD);
#define CPU_VEXP_CVT(lo, hi) _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(lo)), \
                                                  _mm256_cvtpd_ps(hi), 1)
    const __m256 y = CPU_VEXP_CVT(ylo, yhi);
    const __m256 a = CPU_VEXP_CVT(_mm256_mul_pd(ylo, dn), _mm256_mul_pd(yhi, dn));
    const __m256 b = CPU_VEXP_CVT(_mm256_mul_pd(ylo, up), _mm256_mul_pd(yhi, up));
#undef CPU_VEXP_CVT
    const int hard = _mm256_movemask_ps(_mm256_or_ps(nan, _mm256_cmp_ps(a, b, _CMP_NEQ_UQ)));
    if (__builtin_expect(hard != 0, 0)) {
        float xs[8], ys[8];
        _mm256_storeu_ps(xs, x);
        _mm256_storeu_ps(ys, y);
        for (unsigned m = (unsigned)hard; m; m &= m - 1) {
            const int i = __builtin_ctz(m);
            ys[i] = expf(xs[i]);
        }
        return _mm256_loadu_ps(ys);
    }
    return y;
}

CPU_VEXP_AVX512 static inline void cpu_vexp_n_avx512(int64_t n, const float *x, float *y)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, cpu_vexp_avx512(_mm512_loadu_ps(x + i)));
    for (; i < n; i++)
        y[i] = expf(x[i]);
}

CPU_VEXP_AVX2 static inline void cpu_vexp_n_avx2(int64_t n, const float *x, float *y)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, cpu_vexp_avx2(_mm256_loadu_ps(x + i)));
    for (; i < n; i++)
        y[i] = expf(x[i]);
}
#endif

/* y[i] = expf(x[i]) for n floats, libm's bits (x and y may be the same) */
static inline void cpu_vexp(int64_t n, const float *x, float *y)
{
#if defined(__x86_64__)
    const int level = cpu_vexp_level();
    if (level == 2) {
        cpu_vexp_n_avx512(n, x, y);
        return;
    }
    if (level == 1) {
        cpu_vexp_n_avx2(n, x, y);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++)
        y[i] = expf(x[i]);
}

#endif
