/* dot_avx512.c: AVX-512 (F/BW/VL) twins of the reference dot products for
 * the float formats, the 32-element block formats Q4_0 Q4_1 Q5_0 Q5_1
 * Q8_0 IQ4_NL MXFP4 and the K-quants Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_XS. Same
 * signatures and the same math as dot_ref.c and dot_avx2.c: exact integer
 * sums per block kept in sixteen int32 lanes, one f32 fused multiply-add
 * per block and lane, one horizontal sum at the end; only the f32
 * rounding order differs from the reference (tests/test_quant_paths.c
 * bounds it).
 *
 * A 512-bit vector holds two 32-element blocks (one per 256-bit half, each
 * half with its own scale) or 64 contiguous elements of a 256-element
 * block. Types without a kernel here keep their AVX2 one (quant.c).
 * quant.c calls these only when the CPU reports AVX-512 F/BW/VL, AVX2,
 * FMA and F16C and the OS saves the ZMM state. */
#include "dot_impl.h"

#ifdef QUANT_HAVE_AVX512
#include "dot_avx512_b32.h"

/* ---- float formats: four 16-lane accumulators, masked tail ---------------- */

/* LOAD(p, i) gives 16 f32 values of element i onwards, MLOAD(m, p, i) the
 * same with lanes outside mask m zero (never read). */
#define DOT_F512(LOAD, MLOAD)                                                              \
    __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;                             \
    int64_t i = 0;                                                                         \
    for (; i + 64 <= n; i += 64) {                                                         \
        c0 = _mm512_fmadd_ps(LOAD(w, i), LOAD(a, i), c0);                                  \
        c1 = _mm512_fmadd_ps(LOAD(w, i + 16), LOAD(a, i + 16), c1);                        \
        c2 = _mm512_fmadd_ps(LOAD(w, i + 32), LOAD(a, i + 32), c2);                        \
        c3 = _mm512_fmadd_ps(LOAD(w, i + 48), LOAD(a, i + 48), c3);                        \
    }                                                                                      \
    for (; i + 16 <= n; i += 16)                                                           \
        c0 = _mm512_fmadd_ps(LOAD(w, i), LOAD(a, i), c0);                                  \
    if (i < n) {                                                                           \
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);                              \
        c1 = _mm512_fmadd_ps(MLOAD(m, w, i), MLOAD(m, a, i), c1);                          \
    }                                                                                      \
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)));

#define LOAD_F32(p, i)      _mm512_loadu_ps((p) + (i))
#define MLOAD_F32(m, p, i)  _mm512_maskz_loadu_ps(m, (p) + (i))
#define LOAD_F16(p, i)      _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((p) + 2 * (i))))
#define MLOAD_F16(m, p, i)  _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (p) + 2 * (i)))

AVX512 float quant_dot_f32_avx512(int64_t n, const void *vw, const void *va)
{
    const float *w = vw, *a = va;
    DOT_F512(LOAD_F32, MLOAD_F32)
}

AVX512 float quant_dot_f16_avx512(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    DOT_F512(LOAD_F16, MLOAD_F16)
}

/* BF16: a 32-bit lane holding two bf16 values is the odd one as f32 with
 * its low half cleared and the even one shifted up by 16, so 32 elements
 * become two f32 vectors without a shuffle; the even and odd products go
 * to separate accumulators. The tail is masked to whole elements. */
AVX512 static inline void bf16_fma(__m512i w, __m512i a, __m512 *ce, __m512 *co)
{
    const __m512i hi = _mm512_set1_epi32((int)0xFFFF0000u);
    __asm__("" : "+v"(w), "+v"(a));   /* one load each, not one per use */
    *ce = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(w, 16)),
                          _mm512_castsi512_ps(_mm512_slli_epi32(a, 16)), *ce);
    *co = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(w, hi)),
                          _mm512_castsi512_ps(_mm512_and_si512(a, hi)), *co);
}

AVX512 float quant_dot_bf16_avx512(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        bf16_fma(load64(w + 2 * i), load64(a + 2 * i), &c0, &c1);
        bf16_fma(load64(w + 2 * i + 64), load64(a + 2 * i + 64), &c2, &c3);
    }
    for (; i + 32 <= n; i += 32)
        bf16_fma(load64(w + 2 * i), load64(a + 2 * i), &c0, &c1);
    if (i < n) {
        const __mmask32 m = (__mmask32)((1u << (n - i)) - 1);
        bf16_fma(_mm512_maskz_loadu_epi16(m, w + 2 * i), _mm512_maskz_loadu_epi16(m, a + 2 * i), &c2, &c3);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)));
}

/* ---- 32-element blocks: dot_avx512_b32.h ------------------------------------ */

AVX512 float quant_dot_q8_0_avx512(int64_t n, const void *w, const void *a)
{
    return dot_b32(n, w, a, K_Q8_0);
}

AVX512 float quant_dot_q4_0_avx512(int64_t n, const void *w, const void *a)
{
    return dot_b32(n, w, a, K_Q4_0);
}

AVX512 float quant_dot_q5_0_avx512(int64_t n, const void *w, const void *a)
{
    return dot_b32(n, w, a, K_Q5_0);
}

AVX512 float quant_dot_q4_1_avx512(int64_t n, const void *w, const void *a)
{
    return dot_b32(n, w, a, K_Q4_1);
}

AVX512 float quant_dot_q5_1_avx512(int64_t n, const void *w, const void *a)
{
    return dot_b32(n, w, a, K_Q5_1);
}

AVX512 float quant_dot_iq4_nl_avx512(int64_t n, const void *w, const void *a)
{
    return dot_b32(n, w, a, K_IQ4_NL);
}

AVX512 float quant_dot_mxfp4_avx512(int64_t n, const void *w, const void *a)
{
    return dot_b32(n, w, a, K_MXFP4);
}

/* ---- K-quants with Q8_K activations: 64 elements per vector ---------------- */

/* int16 lane j of a vpmaddubsw result over 64 elements covers elements
 * 2j, 2j+1: sub-block j/16 of 32-element sub-blocks, j/8 of 16-element
 * ones. These are vpermw index vectors for the first of them. */
/* the int16 scales of scv that the lanes of `pick` + first select */
AVX512 static inline __m512i pick_scales(__m512i scv, __m512i pick, int first)
{
    return _mm512_permutexvar_epi16(_mm512_add_epi16(pick, _mm512_set1_epi16((short)first)), scv);
}

AVX512 static inline __m512i pick32(void)
{
    return halves16(0, 1);
}

AVX512 static inline __m512i pick16(void)
{
    return _mm512_setr_epi32(0, 0, 0, 0, 0x10001, 0x10001, 0x10001, 0x10001,
                             0x20002, 0x20002, 0x20002, 0x20002, 0x30003, 0x30003, 0x30003, 0x30003);
}

/* quant_k4_scales_mins on one vector: the 12 scale bytes at s (16 read,
 * within the block) give the eight 6-bit scales in bytes 0..7 and the
 * eight mins in bytes 8..15. Dword lanes: 0 = sc[0..3] = a0 & 0x3F..,
 * 1 = sc[4..7] = (a2 & 0x0F..) | (a0 >> 2 & 0x30..), 2 = m[0..3] = a1 &
 * 0x3F.., 3 = m[4..7] = (a2 >> 4 & 0x0F..) | (a1 >> 2 & 0x30..). */
AVX512 static inline __m128i k4_scales_mins_x(const uint8_t *s)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)s);
    const __m128i t = _mm_shuffle_epi32(v, 0x98);                     /* a0 a2 a1 a2 */
    const __m128i u = _mm_shuffle_epi32(v, 0x50);                     /* a0 a0 a1 a1 */
    const __m128i lo = _mm_and_si128(t, _mm_set1_epi8(0x3F));
    const __m128i hl = _mm_and_si128(_mm_srlv_epi32(t, _mm_setr_epi32(0, 0, 0, 4)), _mm_set1_epi8(0x0F));
    const __m128i hh = _mm_and_si128(_mm_srli_epi32(u, 2), _mm_set1_epi8(0x30));
    return _mm_blend_epi32(lo, _mm_or_si128(hl, hh), 0xA);
}

/* Q4_K and Q5_K: chunk c (64 elements) is 32 bytes whose low nibbles are
 * sub-block 2c and high nibbles 2c+1: the bytes go to both halves, the
 * low half keeps the low nibbles, the high half the high ones, and the
 * whole meets 64 contiguous activations. Codes <= 31 (unsigned); the
 * sub-block scale is applied by vpmaddwd, the min through the block sums. */
AVX512 INLINE static inline float dot_k45_avx512(int64_t n, const uint8_t *w, const uint8_t *a, int five)
{
    const int bs = five ? 176 : 144;
    const __m512i m4 = _mm512_set1_epi8(15), b16 = _mm512_set1_epi8(16), pick = pick32();
    __m512 acc = _mm512_setzero_ps();
    __m256 mins = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 256; i++, w += bs, a += 292) {
        const uint8_t *q4 = w + (five ? 48 : 16), *q8 = a + 4;
        const __m512i qh = five ? bcast32(w + 16) : _mm512_setzero_si512();
        const __m128i scmn = k4_scales_mins_x(w + 4);
        /* min term: m_k against bsums 2k and 2k+1, eight int32 lanes */
        const __m256i msum = _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scmn, scmn)),
                                               _mm256_loadu_si256((const __m256i *)(a + 260)));
        const __m512i scv = _mm512_castsi128_si512(_mm_cvtepu8_epi16(scmn));
        __m512i isum = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            const __m512i z = bcast32(q4 + 32 * c);
            __m512i code = _mm512_and_si512(_mm512_mask_blend_epi64(0xF0, z, _mm512_srli_epi16(z, 4)), m4);
            if (five) {
                const __mmask64 hb = _mm512_test_epi8_mask(qh, halves8(1 << (2 * c), 1 << (2 * c + 1)));
                code = _mm512_mask_add_epi8(code, hb, code, b16);
            }
            const __m512i p = _mm512_maddubs_epi16(code, load64(q8 + 64 * c));
            const __m512i s = pick_scales(scv, pick, 2 * c);
            isum = _mm512_add_epi32(isum, _mm512_madd_epi16(p, s));
        }
        /* d and dmin converted together, times the activation scale */
        const __m128 dd = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi32_si128((int)quant_rd32(w))), _mm_set1_ps(q8k_d(a)));
        acc = _mm512_fmadd_ps(_mm512_broadcastss_ps(dd), _mm512_cvtepi32_ps(isum), acc);
        mins = _mm256_fmadd_ps(_mm256_broadcastss_ps(_mm_movehdup_ps(dd)), _mm256_cvtepi32_ps(msum), mins);
    }
    return _mm512_reduce_add_ps(acc) - hsum_ps(mins);
}

AVX512 float quant_dot_q4_K_avx512(int64_t n, const void *w, const void *a)
{
    return dot_k45_avx512(n, w, a, 0);
}

AVX512 float quant_dot_q5_K_avx512(int64_t n, const void *w, const void *a)
{
    return dot_k45_avx512(n, w, a, 1);
}

/* quant_q3k_scales on one vector: the 12 scale bytes at s (read as 8 + 4,
 * not past the block) give the 16 signed scales. Dword lane j holds
 * scales 4j..4j+3: low nibbles of a0, a1 (j = 0, 1) or their high
 * nibbles (j = 2, 3), and bits 2j, 2j+1 of each byte of a2 on top. */
AVX512 static inline __m128i q3k_scales_x(const uint8_t *s)
{
    const __m128i v = _mm_insert_epi32(_mm_loadl_epi64((const __m128i *)s), (int)quant_rd32(s + 8), 2);
    const __m128i lo = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(v, 0x44), _mm_setr_epi32(0, 0, 4, 4)),
                                     _mm_set1_epi8(15));
    const __m128i hi = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(v, 0xAA), _mm_setr_epi32(0, 2, 4, 6)),
                                     _mm_set1_epi8(3));
    return _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi32(hi, 4)), _mm_set1_epi8(32));
}

/* Q2_K and Q3_K: half h (128 elements) has 32 bytes of 2-bit codes whose
 * shift j (bits 2j, 2j+1) gives elements 128h + 32j + 0..31; a vector
 * takes the shifts 2jj and 2jj+1 (64 contiguous elements), one per
 * 256-bit half, shifted per 16-bit lane. Q3_K adds 4 where hmask bit
 * 4h + j of the element's byte is set; its -4, and the Q2_K min, go
 * through the block sums. Codes <= 7 (unsigned); 16-element sub-blocks. */
AVX512 INLINE static inline float dot_k23_avx512(int64_t n, const uint8_t *w, const uint8_t *a, int three)
{
    const int bs = three ? 110 : 84;
    const __m512i m2 = _mm512_set1_epi8(3), b4 = _mm512_set1_epi8(4), pick = pick16();
    __m512 acc = _mm512_setzero_ps();
    __m256 mins = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 256; i++, w += bs, a += 292) {
        const uint8_t *qs = w + (three ? 32 : 16);
        __m256i sc16, msum = _mm256_setzero_si256();
        int off = 0;
        if (three) {
            sc16 = _mm256_cvtepi8_epi16(q3k_scales_x(w + 96));
            off = dot_bsums(sc16, a);
        } else {
            const __m128i sb = _mm_loadu_si128((const __m128i *)w), m4 = _mm_set1_epi8(15);
            sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(sb, m4));
            msum = _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sb, 4), m4)),
                                     _mm256_loadu_si256((const __m256i *)(a + 260)));
        }
        const __m512i scv = _mm512_castsi256_si512(sc16);
        const __m512i hm = three ? bcast32(w) : _mm512_setzero_si512();
        __m512i isum = _mm512_setzero_si512();
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            const __m512i q = bcast32(qs + 32 * h);
#pragma GCC unroll 2
            for (int jj = 0; jj < 2; jj++) {
                __m512i code = _mm512_and_si512(_mm512_srlv_epi16(q, halves16(4 * jj, 4 * jj + 2)), m2);
                if (three) {
                    const int bit = 4 * h + 2 * jj;
                    const __mmask64 hb = _mm512_test_epi8_mask(hm, halves8(1 << bit, 1 << (bit + 1)));
                    code = _mm512_mask_add_epi8(code, hb, code, b4);
                }
                const __m512i p = _mm512_maddubs_epi16(code, load64(a + 4 + 128 * h + 64 * jj));
                const __m512i s = pick_scales(scv, pick, 8 * h + 4 * jj);
                isum = _mm512_add_epi32(isum, _mm512_madd_epi16(p, s));
            }
        }
        if (three) {
            isum = _mm512_sub_epi32(isum, _mm512_maskz_set1_epi32(1, 4 * off));
            acc = _mm512_fmadd_ps(_mm512_set1_ps(q8k_d(a) * f16c(w + 108)), _mm512_cvtepi32_ps(isum), acc);
        } else {
            const __m128 dd = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi32_si128((int)quant_rd32(w + 80))),
                                         _mm_set1_ps(q8k_d(a)));
            acc = _mm512_fmadd_ps(_mm512_broadcastss_ps(dd), _mm512_cvtepi32_ps(isum), acc);
            mins = _mm256_fmadd_ps(_mm256_broadcastss_ps(_mm_movehdup_ps(dd)), _mm256_cvtepi32_ps(msum), mins);
        }
    }
    return _mm512_reduce_add_ps(acc) - (three ? 0.0f : hsum_ps(mins));
}

AVX512 float quant_dot_q2_K_avx512(int64_t n, const void *w, const void *a)
{
    return dot_k23_avx512(n, w, a, 0);
}

AVX512 float quant_dot_q3_K_avx512(int64_t n, const void *w, const void *a)
{
    return dot_k23_avx512(n, w, a, 1);
}

/* Q6_K: half h (128 elements) has 64 bytes ql (bytes 0..31 and 32..63:
 * the low nibbles are elements 0..31 and 32..63, the high nibbles 64..95
 * and 96..127) and 32 bytes qh (bit pairs 0, 2, 4, 6 for the four 32-
 * element quarters). Codes 0..63 taken unsigned (pairs <= 2 * 63 * 127);
 * the -32 is 32 * sc_k * bsum_k over the 16-element sub-blocks. */
AVX512 float quant_dot_q6_K_avx512(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m512i m4 = _mm512_set1_epi8(15), m2 = _mm512_set1_epi8(3), pick = pick16();
    const __m512i sh01 = halves16(0, 2), sh23 = halves16(4, 6);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / 256; i++, w += 210, a += 292) {
        const __m128i scb = _mm_loadu_si128((const __m128i *)(w + 192));
        const int off = dot_bsums(_mm256_cvtepi8_epi16(scb), a);
        const __m512i scv = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(scb));
        __m512i isum = _mm512_setzero_si512();
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            const __m512i ql = load64(w + 64 * h), qh = bcast32(w + 128 + 32 * h);
            const __m512i h01 = _mm512_and_si512(_mm512_srlv_epi16(qh, sh01), m2);
            const __m512i h23 = _mm512_and_si512(_mm512_srlv_epi16(qh, sh23), m2);
            const __m512i c01 = _mm512_or_si512(_mm512_and_si512(ql, m4), _mm512_slli_epi16(h01, 4));
            const __m512i c23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                                _mm512_slli_epi16(h23, 4));
            const __m512i p01 = _mm512_maddubs_epi16(c01, load64(a + 4 + 128 * h));
            const __m512i p23 = _mm512_maddubs_epi16(c23, load64(a + 4 + 128 * h + 64));
            const __m512i s01 = pick_scales(scv, pick, 8 * h);
            const __m512i s23 = pick_scales(scv, pick, 8 * h + 4);
            isum = _mm512_add_epi32(isum, _mm512_add_epi32(_mm512_madd_epi16(p01, s01), _mm512_madd_epi16(p23, s23)));
        }
        /* the offset joins lane 0; the lanes are summed at the end anyway */
        isum = _mm512_sub_epi32(isum, _mm512_maskz_set1_epi32(1, 32 * off));
        acc = _mm512_fmadd_ps(_mm512_set1_ps(q8k_d(a) * f16c(w + 208)), _mm512_cvtepi32_ps(isum), acc);
    }
    return _mm512_reduce_add_ps(acc);
}

/* IQ4_XS: sub-blocks 2p and 2p+1 (32 contiguous bytes of nibbles) per
 * vector, levels by vpshufb, signed products, scale ls - 32 by vpmaddwd. */
AVX512 float quant_dot_iq4_xs_avx512(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m512i lut = lut16x(quant_kvalues_iq4nl), pick = pick32();
    const __m128i dup = _mm_setr_epi8(0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3, -1);
    const __m128i lo_sh = _mm_setr_epi16(0, 4, 0, 4, 0, 4, 0, 4), hi_sh = _mm_setr_epi16(0, 2, 4, 6, 8, 10, 12, 14);
    const __m128i m15 = _mm_set1_epi16(15), m3 = _mm_set1_epi16(3), b32 = _mm_set1_epi16(32);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / 256; i++, w += 136, a += 292) {
        /* ls_ib - 32: low 4 bits from nibble ib of bytes 4..7, high 2
         * bits from bits 2ib, 2ib+1 of the u16 at 2, in int16 lane ib */
        const __m128i lo = _mm_srlv_epi16(_mm_shuffle_epi8(_mm_cvtsi32_si128((int)quant_rd32(w + 4)), dup),
                                          lo_sh);
        const __m128i hi = _mm_srlv_epi16(_mm_set1_epi16((short)quant_rd16(w + 2)), hi_sh);
        const __m128i ls = _mm_or_si128(_mm_and_si128(lo, m15), _mm_slli_epi16(_mm_and_si128(hi, m3), 4));
        const __m512i lsv = _mm512_castsi128_si512(_mm_sub_epi16(ls, b32));
        __m512i isum = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int p = 0; p < 4; p++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(w + 8 + 32 * p));
            const __m512i v = _mm512_shuffle_epi8(lut, nibbles2x16(q));
            const __m512i prod = madd_i8x(v, load64(a + 4 + 64 * p));
            const __m512i s = pick_scales(lsv, pick, 2 * p);
            isum = _mm512_add_epi32(isum, _mm512_madd_epi16(prod, s));
        }
        acc = _mm512_fmadd_ps(_mm512_set1_ps(q8k_d(a) * f16c(w)), _mm512_cvtepi32_ps(isum), acc);
    }
    return _mm512_reduce_add_ps(acc);
}
#endif
