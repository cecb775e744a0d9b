/* cpu_vexp.h: expf over vectors (AVX-512 and AVX2) with the same bits as
 * libm's expf, for the ops where ggml calls libm element by element:
 * sigmoid and the DeltaNet gates (cpu_ops.c). (SiLU, SwiGLU and the
 * softmaxes run ggml's own lane exp on full vectors: cpu_gexp.h.)
 *
 * Two ways to libm's bits. Where libm is glibc's (2.28 and later, FMA
 * build: what glibc runs on any AVX-512 CPU), the AVX-512 path repeats its
 * expf's double operations one for one (table of 32, cubic), so each lane
 * rounds the same double to float; a check on first use compares it with
 * expf at the floats where another expf would round differently, and picks
 * the second way when they differ.
 *
 * The second way (AVX2 always; AVX-512 without glibc) keeps any libm
 * within 0.502 ulp. Each lane computes e^x in double: x = k ln2 + r (k =
 * round(x/ln2), |r| <= ln2/2, r with two fused multiply-adds of a split
 * ln2), e^r by its Taylor polynomial of degree 11 (remainder below 2^-42
 * of the result), times 2^k; then one rounding to float. A libm expf
 * within 0.502 ulp (glibc's evaluates in double too, with a relative error
 * near 2^-33 before its one rounding) rounds to the same float unless the
 * exact value lies within that error of a midpoint between two floats. So
 * each lane also rounds y(1 - 2^-31) and y(1 + 2^-31): when they round to
 * different floats, a midpoint is that close, and the lane is recomputed
 * with expf itself (about 1 lane in 100). NaN inputs go to expf too; x is
 * clamped to [-104, 89], where e^x already rounds to 0 and to inf.
 *
 * tests/test_cpu_vexp.c checks each form's bits against expf densely over
 * [-104, 89] and at the edges (and over every float there with --all),
 * and that the check rejects another accurate expf. On one thread the
 * glibc form takes ~0.3 ns per float, the guarded one ~0.9.
 *
 * Header-only: the kernels inline into their callers' loops. Call the
 * _avx512 / _avx2 forms only where cpu_vexp_level() said the CPU has
 * them; cpu_vexp() picks by itself. */
#ifndef Q36_CPU_VEXP_H
#define Q36_CPU_VEXP_H

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "../../quant/quant.h"

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
        const int z = quant_path_available(QUANT_PATH_AVX512) && __builtin_cpu_supports("avx512dq");
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

/* expf of 16 floats, libm's bits, from any libm expf within 0.502 ulp */
CPU_VEXP_AVX512 static inline __m512 cpu_vexp_avx512_guard(__m512 x)
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

/* glibc's expf (2.28 and later; sysdeps/ieee754/flt-32/e_expf.c, built
 * with FMA on x86-64, which is the expf glibc's ifunc picks on every CPU
 * with AVX-512), its operations repeated one for one in 8 double lanes:
 * z = x 32/ln2, k = round(z) by adding 1.5 2^52 in the same FMA, r = z - k
 * in one FMA, 2^(k/32) from a table of 32 and 2^(r/32) by a cubic, so the
 * double before the one rounding to float is glibc's own. With N = 32: */
#define CPU_VEXP_G_INVLN2N 0x1.71547652b82fep+5
#define CPU_VEXP_G_SHIFT   0x1.8p+52
#define CPU_VEXP_G_C0      0x1.c6af84b912394p-20
#define CPU_VEXP_G_C1      0x1.ebfce50fac4f3p-13
#define CPU_VEXP_G_C2      0x1.62e42ff0c52d6p-6
/* bits of 2^(i/32) minus i << 47 */
#define CPU_VEXP_G_TAB(P) \
    P(0x3ff0000000000000) P(0x3fefd9b0d3158574) P(0x3fefb5586cf9890f) P(0x3fef9301d0125b51) \
    P(0x3fef72b83c7d517b) P(0x3fef54873168b9aa) P(0x3fef387a6e756238) P(0x3fef1e9df51fdee1) \
    P(0x3fef06fe0a31b715) P(0x3feef1a7373aa9cb) P(0x3feedea64c123422) P(0x3feece086061892d) \
    P(0x3feebfdad5362a27) P(0x3feeb42b569d4f82) P(0x3feeab07dd485429) P(0x3feea47eb03a5585) \
    P(0x3feea09e667f3bcd) P(0x3fee9f75e8ec5f74) P(0x3feea11473eb0187) P(0x3feea589994cce13) \
    P(0x3feeace5422aa0db) P(0x3feeb737b0cdc5e5) P(0x3feec49182a3f090) P(0x3feed503b23e255d) \
    P(0x3feee89f995ad3ad) P(0x3feeff76f2fb5e47) P(0x3fef199bdd85529c) P(0x3fef3720dcef9069) \
    P(0x3fef5818dcfba487) P(0x3fef7c97337b9b5f) P(0x3fefa4afa2a490da) P(0x3fefd0765b6e4540)
#define CPU_VEXP_G_OFLOW   0x1.62e42ep6f    /* above: +inf */
#define CPU_VEXP_G_UFLOW   -0x1.9fe368p6f   /* below: +0 */
#define CPU_VEXP_G_MAYUF   -0x1.9d1d9ep6f   /* below (to UFLOW): glibc's errno path, via expf */

/* glibc's e^x before rounding, for 8 doubles holding floats in
 * [MAYUF, OFLOW] */
CPU_VEXP_AVX512 static inline __m512d cpu_vexp_glibc_pd8(__m512d x)
{
#define CPU_VEXP_G_ENTRY(v) (long long)(v),
    static const long long tab[32] __attribute__((aligned(64))) = {
        CPU_VEXP_G_TAB(CPU_VEXP_G_ENTRY)
    };
#undef CPU_VEXP_G_ENTRY
    const __m512d inv = _mm512_set1_pd(CPU_VEXP_G_INVLN2N), shift = _mm512_set1_pd(CPU_VEXP_G_SHIFT);
    const __m512d kd = _mm512_fmadd_pd(inv, x, shift);
    const __m512i ki = _mm512_castpd_si512(kd);
    const __m512d r = _mm512_fmsub_pd(inv, x, _mm512_sub_pd(kd, shift));
    /* tab[ki % 32]: the permutes read ki's low 4 bits, bit 4 picks the half */
    const __m512i lo = _mm512_permutex2var_epi64(_mm512_load_si512(tab), ki,
                                                 _mm512_load_si512(tab + 8));
    const __m512i hi = _mm512_permutex2var_epi64(_mm512_load_si512(tab + 16), ki,
                                                 _mm512_load_si512(tab + 24));
    const __mmask8 upper = _mm512_test_epi64_mask(ki, _mm512_set1_epi64(16));
    const __m512i t = _mm512_add_epi64(_mm512_mask_blend_epi64(upper, lo, hi),
                                       _mm512_slli_epi64(ki, 47));
    const __m512d z = _mm512_fmadd_pd(_mm512_set1_pd(CPU_VEXP_G_C0), r,
                                      _mm512_set1_pd(CPU_VEXP_G_C1));
    const __m512d r2 = _mm512_mul_pd(r, r);
    __m512d y = _mm512_fmadd_pd(_mm512_set1_pd(CPU_VEXP_G_C2), r, _mm512_set1_pd(1.0));
    y = _mm512_fmadd_pd(z, r2, y);
    return _mm512_mul_pd(y, _mm512_castsi512_pd(t));
}

/* expf of 16 floats with glibc's expf's bits: above OFLOW +inf, below
 * UFLOW +0 (as glibc), NaN and [UFLOW, MAYUF) through expf itself */
CPU_VEXP_AVX512 static inline __m512 cpu_vexp_avx512_glibc(__m512 x)
{
    const __m512d ylo = cpu_vexp_glibc_pd8(_mm512_cvtps_pd(_mm512_castps512_ps256(x)));
    const __m512d yhi = cpu_vexp_glibc_pd8(_mm512_cvtps_pd(_mm512_extractf32x8_ps(x, 1)));
    __m512 y = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(ylo)),
                                  _mm512_cvtpd_ps(yhi), 1);
    const __mmask16 over = _mm512_cmp_ps_mask(x, _mm512_set1_ps(CPU_VEXP_G_OFLOW), _CMP_GT_OQ);
    const __mmask16 low = _mm512_cmp_ps_mask(x, _mm512_set1_ps(CPU_VEXP_G_MAYUF), _CMP_NGE_UQ);
    if (__builtin_expect((over | low) != 0, 0)) {
        const __mmask16 under = _mm512_cmp_ps_mask(x, _mm512_set1_ps(CPU_VEXP_G_UFLOW), _CMP_LT_OQ);
        y = _mm512_mask_blend_ps(over, y, _mm512_set1_ps(INFINITY));
        y = _mm512_mask_blend_ps(under, y, _mm512_setzero_ps());
        float xs[16], ys[16];
        _mm512_storeu_ps(xs, x);
        _mm512_storeu_ps(ys, y);
        for (unsigned m = low & (__mmask16)~under; m; m &= m - 1) {
            const int i = __builtin_ctz(m);
            ys[i] = expf(xs[i]);
        }
        return _mm512_loadu_ps(ys);
    }
    return y;
}

/* 1 when cpu_vexp_avx512_glibc gives the bits of ref (expf) among 2^16
 * floats spread over [-104, 89] on those where it matters: whose e^x lies
 * within 2^-31 of a rounding midpoint (some 1 in 100), where another
 * accurate expf (another libm, another glibc) rounds the other way on a
 * good share (a correctly rounded expf differs from glibc's on 1 float in
 * 13000, and on 30 of the ~600 checked here); and on the first 1024.
 * About 0.3 ms. */
CPU_VEXP_AVX512 static int cpu_vexp_glibc_check(float (*ref)(float))
{
    uint32_t state = 12345u;
    for (int i = 0; i < (1 << 16) / 16; i++) {
        float xs[16], ys[16];
        for (int l = 0; l < 16; l++) {
            state = state * 1664525u + 1013904223u;
            xs[l] = -104.0f + 193.0f * (float)(state >> 8) * 0x1p-24f;
        }
        const __m512 x = _mm512_loadu_ps(xs);
        const __m512d ylo = cpu_vexp_glibc_pd8(_mm512_cvtps_pd(_mm512_castps512_ps256(x)));
        const __m512d yhi = cpu_vexp_glibc_pd8(_mm512_cvtps_pd(_mm512_extractf32x8_ps(x, 1)));
        const __m512d dn = _mm512_set1_pd(1.0 - CPU_VEXP_GUARD), up = _mm512_set1_pd(1.0 + CPU_VEXP_GUARD);
#define CPU_VEXP_CVT(lo, hi) _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), \
                                                _mm512_cvtpd_ps(hi), 1)
        const __m512 a = CPU_VEXP_CVT(_mm512_mul_pd(ylo, dn), _mm512_mul_pd(yhi, dn));
        const __m512 b = CPU_VEXP_CVT(_mm512_mul_pd(ylo, up), _mm512_mul_pd(yhi, up));
#undef CPU_VEXP_CVT
        unsigned near = i < 64 ? 0xFFFFu : (unsigned)_mm512_cmp_ps_mask(a, b, _CMP_NEQ_UQ);
        if (!near)
            continue;
        _mm512_storeu_ps(ys, cpu_vexp_avx512_glibc(x));
        for (; near; near &= near - 1) {
            const int l = __builtin_ctz(near);
            const float want = ref(xs[l]);
            if (memcmp(&ys[l], &want, sizeof want) != 0)
                return 0;
        }
    }
    return 1;
}

CPU_VEXP_AVX512 static inline int cpu_vexp_glibc_ok(void)
{
    /* threads may race to fill it; each writes the same value */
    static _Atomic int ok = -1;
    int v = atomic_load_explicit(&ok, memory_order_relaxed);
    if (__builtin_expect(v < 0, 0)) {
        v = cpu_vexp_glibc_check(expf);
        atomic_store_explicit(&ok, v, memory_order_relaxed);
    }
    return v;
}

/* expf of 16 floats, libm's bits: glibc's operations where libm is glibc's,
 * else the guarded polynomial */
CPU_VEXP_AVX512 static inline __m512 cpu_vexp_avx512(__m512 x)
{
    return __builtin_expect(cpu_vexp_glibc_ok(), 1) ? cpu_vexp_avx512_glibc(x)
                                                    : cpu_vexp_avx512_guard(x);
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

#define CPU_VEXP_N_AVX512(name, fn) \
    CPU_VEXP_AVX512 static inline void name(int64_t n, const float *x, float *y) \
    { \
        int64_t i = 0; \
        for (; i + 16 <= n; i += 16) \
            _mm512_storeu_ps(y + i, fn(_mm512_loadu_ps(x + i))); \
        for (; i < n; i++) \
            y[i] = expf(x[i]); \
    }
CPU_VEXP_N_AVX512(cpu_vexp_n_avx512, cpu_vexp_avx512)
CPU_VEXP_N_AVX512(cpu_vexp_n_avx512_glibc, cpu_vexp_avx512_glibc)  /* tests */
CPU_VEXP_N_AVX512(cpu_vexp_n_avx512_guard, cpu_vexp_avx512_guard)  /* tests */
#undef CPU_VEXP_N_AVX512

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
