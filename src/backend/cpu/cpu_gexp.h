/* cpu_gexp.h: e^x over vector lanes with the bits of ggml's x86 lane exp
 * (ggml_v_expf in ggml-cpu/vec.h), which llama.cpp's CPU backend runs on
 * every full vector of its SiLU, SwiGLU and softmax rows (16 lanes where it
 * was built with AVX-512 F+DQ, 8 with AVX2+FMA); only the elements after
 * the last full vector of a row go through libm's expf (MODEL.md §9.1).
 * It is not libm's expf: about 1.5 ulp, and it rounds differently from
 * libm in about a quarter of SiLU inputs and half of softmax ones (measured
 * against the oracle's tensors), each one an ulp that the activation
 * quantization of the next matmul can turn into a flipped code.
 *
 * The method (ARM's optimized-routines expf, as ggml adapts it): n =
 * round(x log2 e) by adding 1.5 2^23 in one FMA and subtracting it; b = x -
 * n ln2 in two FNMAs (ln2 split in a 16-bit head and its remainder); a
 * polynomial in b, u = b*b; then 2^n times it. The AVX-512 form scales
 * with vscalefps; the AVX2 form builds 2^n from the exponent bits and has
 * its own path past |n| > 126 and for |n| > 192 (inf or 0), so the two are
 * not the same function: each is repeated operation for operation here,
 * with ggml's constants, and tests/test_ggml_gexp.c compares both with the
 * pinned libggml-cpu's own SiLU, SwiGLU and softmax bit for bit.
 *
 * Header-only; call a form only where the CPU has its instructions
 * (cpu_vexp_level() of cpu_vexp.h: 2 for the AVX-512 form, >= 1 for AVX2). */
#ifndef Q36_CPU_GEXP_H
#define Q36_CPU_GEXP_H

#if defined(__x86_64__)
#include <immintrin.h>
#include <math.h>

#define CPU_GEXP_SHIFT  0x1.8p23f       /* 1.5 2^23: n = round(x log2 e) */
#define CPU_GEXP_LOG2E  0x1.715476p+0f
#define CPU_GEXP_LN2_HI 0x1.62e4p-1f
#define CPU_GEXP_LN2_LO 0x1.7f7d1cp-20f
#define CPU_GEXP_P5     0x1.0e4020p-7f  /* polynomial in b, highest first */
#define CPU_GEXP_P4     0x1.573e2ep-5f
#define CPU_GEXP_P3     0x1.555e66p-3f
#define CPU_GEXP_P2     0x1.fffdb6p-2f
#define CPU_GEXP_P1     0x1.ffffecp-1f

#define CPU_GEXP_AVX512 __attribute__((target("avx2,fma,avx512f,avx512dq")))
#define CPU_GEXP_AVX2   __attribute__((target("avx2,fma")))

/* 16 lanes, as ggml's AVX-512 build: j = 1 + b P(b), then vscalefps(j, n);
 * |n| > 192 gives +inf (n > 0) or 0 */
CPU_GEXP_AVX512 static inline __m512 cpu_gexp_avx512(__m512 x)
{
    const __m512 sh = _mm512_set1_ps(CPU_GEXP_SHIFT);
    const __m512 z = _mm512_fmadd_ps(x, _mm512_set1_ps(CPU_GEXP_LOG2E), sh);
    const __m512 n = _mm512_sub_ps(z, sh);
    const __m512 b = _mm512_fnmadd_ps(n, _mm512_set1_ps(CPU_GEXP_LN2_LO),
                                      _mm512_fnmadd_ps(n, _mm512_set1_ps(CPU_GEXP_LN2_HI), x));
    const __mmask16 big = _mm512_cmp_ps_mask(_mm512_abs_ps(n), _mm512_set1_ps(192), _CMP_GT_OQ);
    const __m512 u = _mm512_mul_ps(b, b);
    const __m512 hi = _mm512_fmadd_ps(_mm512_set1_ps(CPU_GEXP_P5), b, _mm512_set1_ps(CPU_GEXP_P4));
    const __m512 lo = _mm512_fmadd_ps(_mm512_set1_ps(CPU_GEXP_P3), b, _mm512_set1_ps(CPU_GEXP_P2));
    const __m512 j = _mm512_fmadd_ps(_mm512_fmadd_ps(hi, u, lo), u,
                                     _mm512_fmadd_ps(_mm512_set1_ps(CPU_GEXP_P1), b,
                                                     _mm512_set1_ps(1.0f)));
    const __m512 res = _mm512_scalef_ps(j, n);
    if (!big)
        return res;
    const __m512 zero = _mm512_setzero_ps();
    const __m512 alt = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(n, zero, _CMP_LE_OQ),
                                            _mm512_set1_ps(INFINITY), zero);
    return _mm512_mask_blend_ps(big, res, alt);
}

/* 8 lanes, as ggml's AVX2 build: j = b P(b) (no 1 +), k = 2^n from the
 * exponent bits of z, result k + k j; for |n| > 126 the scale is split in
 * two factors s1 s2, and |n| > 192 gives s1 * s1 (inf or 0) */
CPU_GEXP_AVX2 static inline __m256 cpu_gexp_avx2(__m256 x)
{
    const __m256 sh = _mm256_set1_ps(CPU_GEXP_SHIFT), sign = _mm256_set1_ps(-0.0f);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(CPU_GEXP_LOG2E), sh);
    const __m256 n = _mm256_sub_ps(z, sh);
    const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(CPU_GEXP_LN2_LO),
                                      _mm256_fnmadd_ps(n, _mm256_set1_ps(CPU_GEXP_LN2_HI), x));
    const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(z), 23);
    const __m256 k = _mm256_castsi256_ps(_mm256_add_epi32(e, _mm256_castps_si256(_mm256_set1_ps(1))));
    const __m256 an = _mm256_andnot_ps(sign, n);
    const __m256 c = _mm256_cmp_ps(an, _mm256_set1_ps(126), _CMP_GT_OQ);
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 hi = _mm256_fmadd_ps(_mm256_set1_ps(CPU_GEXP_P5), b, _mm256_set1_ps(CPU_GEXP_P4));
    const __m256 lo = _mm256_fmadd_ps(_mm256_set1_ps(CPU_GEXP_P3), b, _mm256_set1_ps(CPU_GEXP_P2));
    const __m256 j = _mm256_fmadd_ps(_mm256_fmadd_ps(hi, u, lo), u,
                                     _mm256_mul_ps(_mm256_set1_ps(CPU_GEXP_P1), b));
    if (!_mm256_movemask_ps(c))
        return _mm256_fmadd_ps(j, k, k);
    const __m256i g = _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ)),
                                       _mm256_set1_epi32((int)0x82000000u));
    const __m256 s1 = _mm256_castsi256_ps(_mm256_add_epi32(g, _mm256_set1_epi32(0x7f000000)));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_sub_epi32(e, g));
    const __m256 d = _mm256_cmp_ps(an, _mm256_set1_ps(192), _CMP_GT_OQ);
    const __m256 mid = _mm256_or_ps(_mm256_and_ps(c, _mm256_mul_ps(_mm256_fmadd_ps(s2, j, s2), s1)),
                                    _mm256_andnot_ps(c, _mm256_fmadd_ps(k, j, k)));
    return _mm256_or_ps(_mm256_and_ps(d, _mm256_mul_ps(s1, s1)), _mm256_andnot_ps(d, mid));
}

/* x / (1 + e^-x), as ggml's lane SiLU: -x as 0 - x */
CPU_GEXP_AVX512 static inline __m512 cpu_gsilu_avx512(__m512 x)
{
    const __m512 e = cpu_gexp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), x));
    return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

CPU_GEXP_AVX2 static inline __m256 cpu_gsilu_avx2(__m256 x)
{
    const __m256 e = cpu_gexp_avx2(_mm256_sub_ps(_mm256_setzero_ps(), x));
    return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

/* One lane of the form for `level` (cpu_vexp_level(): 2 AVX-512, 1 AVX2),
 * libm's expf at level 0: for plain-C references of kernels that run the
 * lane exp (each lane is computed on its own, so one lane alone has the
 * bits it would have in a full vector). */
CPU_GEXP_AVX512 static inline float cpu_gexp1_avx512(float x)
{
    return _mm512_cvtss_f32(cpu_gexp_avx512(_mm512_set1_ps(x)));
}

CPU_GEXP_AVX2 static inline float cpu_gexp1_avx2(float x)
{
    return _mm256_cvtss_f32(cpu_gexp_avx2(_mm256_set1_ps(x)));
}

static inline float cpu_gexp1(int level, float x)
{
    return level == 2 ? cpu_gexp1_avx512(x) : level == 1 ? cpu_gexp1_avx2(x) : expf(x);
}

CPU_GEXP_AVX512 static inline void cpu_gexp_row_avx512(int64_t n, float *y, const float *x)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, cpu_gexp_avx512(_mm512_loadu_ps(x + i)));
    for (; i < n; i++)
        y[i] = cpu_gexp1_avx512(x[i]);
}

CPU_GEXP_AVX2 static inline void cpu_gexp_row_avx2(int64_t n, float *y, const float *x)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, cpu_gexp_avx2(_mm256_loadu_ps(x + i)));
    for (; i < n; i++)
        y[i] = cpu_gexp1_avx2(x[i]);
}

/* y[i] = the lane exp of x[i] for every i (in place allowed): where a
 * kernel runs every element through the lane exp (attention's masked rows
 * end in full vectors of zeros on ggml's side). */
static inline void cpu_gexp_row(int level, int64_t n, float *y, const float *x)
{
    if (level == 2)
        cpu_gexp_row_avx512(n, y, x);
    else if (level == 1)
        cpu_gexp_row_avx2(n, y, x);
    else
        for (int64_t i = 0; i < n; i++)
            y[i] = expf(x[i]);
}
#endif

#endif
