/* dot_avx2.c: AVX2+FMA+F16C twins of the reference dot products for the
 * float formats, the 32-element block formats and the K-quants (the IQ
 * formats are in dot_avx2_iq.c). Same signatures and the same math as
 * dot_ref.c: exact integer sums per block, kept in eight int32 lanes, one
 * f32 fused multiply-add per block and lane, one horizontal sum at the
 * end. Only the f32 rounding order differs from the reference;
 * tests/test_ggml_quant_dot.c bounds the difference.
 *
 * quant.c calls these only when the CPU reports avx2, fma and f16c. */
#include "dot_impl.h"

#ifdef QUANT_HAVE_AVX2
#include "avx2_util.h"
#include "iq_tables.h"

/* ---- float formats: four 8-lane accumulators, scalar tail --------------- */

/* Four named accumulators (an indexed array would live on the stack at
 * -O2 and serialize the FMA chains through memory). LOAD(p, i) gives 8
 * f32 values of element i onwards. */
#define DOT_F(LOAD, TAIL)                                                                   \
    __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;                              \
    int64_t i = 0;                                                                          \
    for (; i + 32 <= n; i += 32) {                                                          \
        c0 = _mm256_fmadd_ps(LOAD(w, i), LOAD(a, i), c0);                                   \
        c1 = _mm256_fmadd_ps(LOAD(w, i + 8), LOAD(a, i + 8), c1);                           \
        c2 = _mm256_fmadd_ps(LOAD(w, i + 16), LOAD(a, i + 16), c2);                         \
        c3 = _mm256_fmadd_ps(LOAD(w, i + 24), LOAD(a, i + 24), c3);                         \
    }                                                                                       \
    float s = hsum_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)));          \
    for (; i < n; i++)                                                                      \
        s += TAIL(w, i) * TAIL(a, i);                                                       \
    return s;

#define LOAD_F32(p, i) _mm256_loadu_ps((p) + (i))
#define TAIL_F32(p, i) (p)[i]
#define LOAD_F16(p, i) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((p) + 2 * (i))))
#define TAIL_F16(p, i) f16c((p) + 2 * (i))
#define LOAD_BF16(p, i) bf16x8((p) + 2 * (i))
#define TAIL_BF16(p, i) quant_bf16_to_f32(quant_rd16((p) + 2 * (i)))

AVX2 static inline __m256 bf16x8(const uint8_t *p)
{
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

AVX2 float quant_dot_f32_avx2(int64_t n, const void *vw, const void *va)
{
    const float *w = vw, *a = va;
    DOT_F(LOAD_F32, TAIL_F32)
}

AVX2 float quant_dot_f16_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    DOT_F(LOAD_F16, TAIL_F16)
}

AVX2 float quant_dot_bf16_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    DOT_F(LOAD_BF16, TAIL_BF16)
}

/* ---- 32-element blocks ---------------------------------------------------- */

/* One block term: d * (sum of the 32 signed products x*y). x holds signed
 * codes with |x| <= 128. */
AVX2 static inline __m256 block_fma(__m256i x, const uint8_t *q8, float d, __m256 acc)
{
    __m256i p = _mm256_madd_epi16(madd_i8(x, load32(q8)), _mm256_set1_epi16(1));
    return _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(p), acc);
}

AVX2 float quant_dot_q8_0_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 32; i++, w += 34, a += 34)
        acc = block_fma(load32(w + 2), a + 2, f16c(w) * f16c(a), acc);
    return hsum_ps(acc);
}

AVX2 float quant_dot_q4_0_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m256i b8 = _mm256_set1_epi8(8);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 32; i++, w += 18, a += 34)
        acc = block_fma(_mm256_sub_epi8(nibbles16(w + 2), b8), a + 2, f16c(w) * f16c(a), acc);
    return hsum_ps(acc);
}

/* the 5-bit codes of Q5_0/Q5_1: nibbles plus 16 where the qh bit is set */
AVX2 static inline __m256i codes5(const uint8_t *qh, const uint8_t *qs)
{
    __m256i hb = _mm256_and_si256(bits_to_bytes(quant_rd32(qh)), _mm256_set1_epi8(16));
    return _mm256_or_si256(nibbles16(qs), hb);
}

AVX2 float quant_dot_q5_0_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m256i b16 = _mm256_set1_epi8(16);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 32; i++, w += 22, a += 34)
        acc = block_fma(_mm256_sub_epi8(codes5(w + 2, w + 6), b16), a + 2, f16c(w) * f16c(a), acc);
    return hsum_ps(acc);
}

/* Q4_1/Q5_1 with Q8_1: d*da*sum(c*q) + m*s; codes are unsigned (<= 31),
 * so a pair is at most 2 * 31 * 127. */
AVX2 float quant_dot_q4_1_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    __m256 acc = _mm256_setzero_ps();
    float ms = 0.0f;
    for (int64_t i = 0; i < n / 32; i++, w += 20, a += 36) {
        __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(nibbles16(w + 4), load32(a + 4)),
                                      _mm256_set1_epi16(1));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f16c(w) * f16c(a)), _mm256_cvtepi32_ps(p), acc);
        ms += f16c(w + 2) * f16c(a + 2);
    }
    return hsum_ps(acc) + ms;
}

AVX2 float quant_dot_q5_1_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    __m256 acc = _mm256_setzero_ps();
    float ms = 0.0f;
    for (int64_t i = 0; i < n / 32; i++, w += 24, a += 36) {
        __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(codes5(w + 4, w + 8), load32(a + 4)),
                                      _mm256_set1_epi16(1));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f16c(w) * f16c(a)), _mm256_cvtepi32_ps(p), acc);
        ms += f16c(w + 2) * f16c(a + 2);
    }
    return hsum_ps(acc) + ms;
}

/* IQ4_NL and MXFP4: 16 levels looked up with vpshufb (|level| <= 127). */
AVX2 static inline __m256i lut16(const int8_t *t)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)t);
    return _mm256_set_m128i(v, v);
}

AVX2 float quant_dot_iq4_nl_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m256i lut = lut16(quant_kvalues_iq4nl);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 32; i++, w += 18, a += 34)
        acc = block_fma(_mm256_shuffle_epi8(lut, nibbles16(w + 2)), a + 2, f16c(w) * f16c(a), acc);
    return hsum_ps(acc);
}

AVX2 float quant_dot_mxfp4_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m256i lut = lut16(quant_kvalues_fp4);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 32; i++, w += 17, a += 34)
        acc = block_fma(_mm256_shuffle_epi8(lut, nibbles16(w + 1)), a + 2,
                        quant_e8m0_half(w[0]) * f16c(a), acc);
    return hsum_ps(acc);
}

/* Q1_0: 128 elements against four Q8_0 blocks; +1 where the bit is set,
 * -1 elsewhere, so the activations are summed with flipped signs. */
AVX2 float quant_dot_q1_0_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 128; i++, w += 18) {
        const float d = f16c(w);
        for (int k = 0; k < 4; k++, a += 34) {
            __m256i neg = _mm256_xor_si256(bits_to_bytes(quant_rd32(w + 2 + 4 * k)), _mm256_set1_epi8(-1));
            __m256i q = negate_where(load32(a + 2), neg);
            __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q), ones16);
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d * f16c(a)), _mm256_cvtepi32_ps(p), acc);
        }
    }
    return hsum_ps(acc);
}

/* Q2_0: 64 elements against two Q8_0 blocks; element j is bits 2(j%4),
 * 2(j%4)+1 of byte j/4. Each byte is spread over four lanes, the two bits
 * tested with per-lane masks, and the code minus one multiplied signed. */
AVX2 float quant_dot_q2_0_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3,
                                            4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7);
    const __m256i b0 = _mm256_set1_epi32(0x40100401), b1 = _mm256_set1_epi32((int)0x80200802u);
    const __m256i one = _mm256_set1_epi8(1), two = _mm256_set1_epi8(2);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 64; i++, w += 18) {
        const float d = f16c(w);
        for (int k = 0; k < 2; k++, a += 34) {
            uint64_t bytes;
            memcpy(&bytes, w + 2 + 8 * k, 8);
            __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi64x((long long)bytes), spread);
            __m256i lo = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, b0), b0), one);
            __m256i hi = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, b1), b1), two);
            __m256i code = _mm256_sub_epi8(_mm256_or_si256(lo, hi), one);
            acc = block_fma(code, a + 2, d * f16c(a), acc);
        }
    }
    return hsum_ps(acc);
}

/* NVFP4: 64 elements against two Q8_0 blocks; Q8_0 block k holds the
 * sub-blocks 2k (lanes 0..3 of the int32 sums) and 2k+1 (lanes 4..7),
 * each with its own UE4M3 scale. */
AVX2 float quant_dot_nvfp4_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m256i lut = lut16(quant_kvalues_fp4);
    const __m128i m4 = _mm_set1_epi8(15);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 64; i++, w += 36) {
        for (int k = 0; k < 2; k++, a += 34) {
            const __m128i q = _mm_loadu_si128((const __m128i *)(w + 4 + 16 * k));
            const __m128i lo = _mm_and_si128(q, m4), hi = _mm_and_si128(_mm_srli_epi16(q, 4), m4);
            const __m256i codes = _mm256_set_m128i(_mm_unpackhi_epi64(lo, hi), _mm_unpacklo_epi64(lo, hi));
            __m256i p = _mm256_madd_epi16(madd_i8(_mm256_shuffle_epi8(lut, codes), load32(a + 2)),
                                          _mm256_set1_epi16(1));
            const float da = f16c(a);
            const __m256 d = _mm256_set_m128(_mm_set1_ps(quant_ue4m3_half(w[2 * k + 1]) * da),
                                             _mm_set1_ps(quant_ue4m3_half(w[2 * k]) * da));
            acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc);
        }
    }
    return hsum_ps(acc);
}

/* ---- K-quants with Q8_K activations --------------------------------------- */

/* Q2_K: per half n and shift j, 32 two-bit codes (bytes 0..15 belong to
 * sub-block 8n+2j, 16..31 to 8n+2j+1) meet 32 contiguous activations;
 * codes <= 3 keep pairs tiny. The min goes through the block sums. */
AVX2 float quant_dot_q2_K_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m256i m2 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (int64_t i = 0; i < n / 256; i++, w += 84, a += 292) {
        const __m128i scb = _mm_loadu_si128((const __m128i *)w);
        const int msum = dot_bsums(_mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(scb, 4),
                                                                       _mm_set1_epi8(15))), a);
        __m256i isum = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i q = load32(w + 16 + 32 * h);
            for (int j = 0; j < 4; j++) {
                __m256i c = _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), m2);
                __m256i p = _mm256_maddubs_epi16(c, load32(a + 4 + 128 * h + 32 * j));
                const int k = 8 * h + 2 * j;
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, split16(w[k] & 15, w[k + 1] & 15)));
            }
        }
        const float da = q8k_d(a);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(da * f16c(w + 80)), _mm256_cvtepi32_ps(isum), acc);
        mins += da * f16c(w + 82) * (float)msum;
    }
    return hsum_ps(acc) - mins;
}

/* Q3_K: the code is low2 + 4*hbit - 4; the unsigned part (<= 7) goes
 * through vpmaddubsw and the -4 through the block sums. hmask's 32 bytes
 * line up with the 32 elements of each (half, shift) step. */
AVX2 float quant_dot_q3_K_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m256i m2 = _mm256_set1_epi8(3), b4 = _mm256_set1_epi8(4);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 256; i++, w += 110, a += 292) {
        int8_t sc[16];
        quant_q3k_scales(w + 96, sc);
        const int off = dot_bsums(i8x16(sc), a);
        const __m256i hm = load32(w);
        __m256i isum = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i q = load32(w + 32 + 32 * h);
            for (int j = 0; j < 4; j++) {
                const __m256i bit = _mm256_set1_epi8((char)(1 << (4 * h + j)));
                __m256i hb = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), bit), b4);
                __m256i c = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 2 * j), m2), hb);
                __m256i p = _mm256_maddubs_epi16(c, load32(a + 4 + 128 * h + 32 * j));
                const int k = 8 * h + 2 * j;
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, split16(sc[k], sc[k + 1])));
            }
        }
        isum = _mm256_sub_epi32(isum, _mm256_setr_epi32(4 * off, 0, 0, 0, 0, 0, 0, 0));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(q8k_d(a) * f16c(w + 108)), _mm256_cvtepi32_ps(isum), acc);
    }
    return hsum_ps(acc);
}

/* Q4_K and Q5_K: per 64-element chunk c, the low nibbles (sub-block 2c)
 * and the high nibbles (2c+1) meet 32 activations each (codes <= 31); the
 * sub-block scale is applied by vpmaddwd, the min through the block sums. */
AVX2 static inline float dot_k45_avx2(int64_t n, const uint8_t *w, const uint8_t *a, int five)
{
    const int bs = five ? 176 : 144;
    const __m256i m4 = _mm256_set1_epi8(15), b16 = _mm256_set1_epi8(16);
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (int64_t i = 0; i < n / 256; i++, w += bs, a += 292) {
        const uint8_t *q4 = w + (five ? 48 : 16), *q8 = a + 4;
        const __m256i qh = five ? load32(w + 16) : _mm256_setzero_si256();
        uint8_t sc[8], mn[8];
        quant_k4_scales_mins(w + 4, sc, mn);
        /* min term: m_k against bsums 2k and 2k+1 (each m twice) */
        const __m128i mv = _mm_loadl_epi64((const __m128i *)mn);
        const int msum = dot_bsums(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mv, mv)), a);
        __m256i isum = _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            const __m256i q = load32(q4 + 32 * c);
            __m256i lo = _mm256_and_si256(q, m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            if (five) {
                const __m256i bl = _mm256_set1_epi8((char)(1 << (2 * c)));
                const __m256i bh = _mm256_set1_epi8((char)(1 << (2 * c + 1)));
                lo = _mm256_or_si256(lo, _mm256_and_si256(
                         _mm256_cmpeq_epi8(_mm256_and_si256(qh, bl), bl), b16));
                hi = _mm256_or_si256(hi, _mm256_and_si256(
                         _mm256_cmpeq_epi8(_mm256_and_si256(qh, bh), bh), b16));
            }
            __m256i plo = _mm256_maddubs_epi16(lo, load32(q8 + 64 * c));
            __m256i phi = _mm256_maddubs_epi16(hi, load32(q8 + 64 * c + 32));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(plo, _mm256_set1_epi16(sc[2 * c])));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(phi, _mm256_set1_epi16(sc[2 * c + 1])));
        }
        const float da = q8k_d(a);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(da * f16c(w)), _mm256_cvtepi32_ps(isum), acc);
        mins += da * f16c(w + 2) * (float)msum;
    }
    return hsum_ps(acc) - mins;
}

AVX2 float quant_dot_q4_K_avx2(int64_t n, const void *w, const void *a)
{
    return dot_k45_avx2(n, w, a, 0);
}

AVX2 float quant_dot_q5_K_avx2(int64_t n, const void *w, const void *a)
{
    return dot_k45_avx2(n, w, a, 1);
}

/* Q6_K: codes 0..63 taken unsigned (pairs <= 2 * 63 * 127 = 16002); the
 * -32 is 32 * sc_k * bsum_k per 16-element sub-block. Each 32-element
 * quarter spans two sub-blocks, hence the split scale vector. */
AVX2 float quant_dot_q6_K_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 256; i++, w += 210, a += 292) {
        const int8_t *sc = (const int8_t *)(w + 192);
        const int off = dot_bsums(i8x16(sc), a);
        __m256i isum = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i ql0 = load32(w + 64 * h), ql1 = load32(w + 64 * h + 32);
            const __m256i qh = load32(w + 128 + 32 * h);
#define Q6_STEP(p, lo4)                                                                     \
            do {                                                                            \
                __m256i hb = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * (p)), m2);          \
                __m256i code = _mm256_or_si256(lo4, _mm256_slli_epi16(hb, 4));              \
                __m256i prod = _mm256_maddubs_epi16(code, load32(a + 4 + 128 * h + 32 * (p))); \
                const int k = 8 * h + 2 * (p);                                              \
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(prod, split16(sc[k], sc[k + 1]))); \
            } while (0)
            Q6_STEP(0, _mm256_and_si256(ql0, m4));
            Q6_STEP(1, _mm256_and_si256(ql1, m4));
            Q6_STEP(2, _mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4));
            Q6_STEP(3, _mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4));
#undef Q6_STEP
        }
        /* the offset joins lane 0; the lanes are summed at the end anyway */
        isum = _mm256_sub_epi32(isum, _mm256_setr_epi32(32 * off, 0, 0, 0, 0, 0, 0, 0));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(q8k_d(a) * f16c(w + 208)), _mm256_cvtepi32_ps(isum), acc);
    }
    return hsum_ps(acc);
}

/* TQ2_0: for byte offset j (0, 32) and plane l, the codes of 32 contiguous
 * elements are bits 2l, 2l+1 of qs[j..j+31]; the -1 of every code is the
 * sum of all block sums. */
AVX2 float quant_dot_tq2_0_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m256i m2 = _mm256_set1_epi8(3), ones16 = _mm256_set1_epi16(1);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 256; i++, w += 66, a += 292) {
        int bs = 0;
        for (int g = 0; g < 16; g++)
            bs += q8k_bsum(a, g);
        __m256i isum = _mm256_setr_epi32(-bs, 0, 0, 0, 0, 0, 0, 0);
        for (int j = 0; j < 2; j++) {
            const __m256i q = load32(w + 32 * j);
            for (int l = 0; l < 4; l++) {
                __m256i c = _mm256_and_si256(_mm256_srli_epi16(q, 2 * l), m2);
                __m256i p = _mm256_maddubs_epi16(c, load32(a + 4 + 128 * j + 32 * l));
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, ones16));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(q8k_d(a) * f16c(w + 64)), _mm256_cvtepi32_ps(isum), acc);
    }
    return hsum_ps(acc);
}

/* Base-3 digits of 32 bytes, one per byte: digit of byte q with multiplier
 * p (3^n, per 16-bit lane) is ((u8)(q * p) * 3) >> 8. Even and odd bytes
 * are done in 16-bit lanes separately. */
AVX2 static inline __m256i trits(__m256i q, __m256i p)
{
    const __m256i lo8 = _mm256_set1_epi16(0xFF), three = _mm256_set1_epi16(3);
    __m256i e = _mm256_and_si256(_mm256_mullo_epi16(q, p), lo8);
    __m256i o = _mm256_and_si256(_mm256_mullo_epi16(_mm256_srli_epi16(q, 8), p), lo8);
    e = _mm256_srli_epi16(_mm256_mullo_epi16(e, three), 8);
    o = _mm256_srli_epi16(_mm256_mullo_epi16(o, three), 8);
    return _mm256_or_si256(e, _mm256_slli_epi16(o, 8));
}

/* TQ1_0: digits 0..4 of qs[0..31] are elements 0..159, digits 0..4 of
 * qs[32..47] elements 160..239 (two digits per vector, one per 128-bit
 * lane), digits 0..3 of qh[0..3] elements 240..255 (beside digit 4 of
 * qs[32..47]). Digits are 0..2; the -1 is the sum of the block sums. */
AVX2 float quant_dot_tq1_0_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m256i ones16 = _mm256_set1_epi16(1);
    const __m256i p01 = split16(1, 3), p23 = split16(9, 27);
    const __m256i p4c = _mm256_setr_epi16(81, 81, 81, 81, 81, 81, 81, 81, 1, 1, 3, 3, 9, 9, 27, 27);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 256; i++, w += 54, a += 292) {
        int bs = 0;
        for (int g = 0; g < 16; g++)
            bs += q8k_bsum(a, g);
        __m256i isum = _mm256_setr_epi32(-bs, 0, 0, 0, 0, 0, 0, 0);
        const __m256i qa = load32(w);
        const __m128i qb = _mm_loadu_si128((const __m128i *)(w + 32));
        const __m256i qbb = _mm256_set_m128i(qb, qb);
        const __m256i qbc = _mm256_set_m128i(_mm_set1_epi32((int)quant_rd32(w + 48)), qb);
        __m256i t[8];
        static const short pow3[5] = { 1, 3, 9, 27, 81 };
        for (int k = 0; k < 5; k++)
            t[k] = trits(qa, _mm256_set1_epi16(pow3[k]));
        t[5] = trits(qbb, p01);
        t[6] = trits(qbb, p23);
        t[7] = trits(qbc, p4c);
        for (int k = 0; k < 8; k++)
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(_mm256_maddubs_epi16(t[k], load32(a + 4 + 32 * k)), ones16));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(q8k_d(a) * f16c(w + 52)), _mm256_cvtepi32_ps(isum), acc);
    }
    return hsum_ps(acc);
}

/* IQ4_XS: levels by vpshufb, signed products, scale (ls - 32) by vpmaddwd. */
AVX2 float quant_dot_iq4_xs_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m256i lut = lut16(quant_kvalues_iq4nl);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 256; i++, w += 136, a += 292) {
        const uint16_t sh = quant_rd16(w + 2);
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            const int ls = ((w[4 + ib / 2] >> 4 * (ib % 2)) & 15) | ((sh >> 2 * ib) & 3) << 4;
            const __m256i v = _mm256_shuffle_epi8(lut, nibbles16(w + 8 + 16 * ib));
            const __m256i prod = madd_i8(v, load32(a + 4 + 32 * ib));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(prod, _mm256_set1_epi16((short)(ls - 32))));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(q8k_d(a) * f16c(w)), _mm256_cvtepi32_ps(isum), acc);
    }
    return hsum_ps(acc);
}
#endif
