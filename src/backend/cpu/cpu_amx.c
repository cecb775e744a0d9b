/* cpu_amx.c: the float order of llama.cpp's matmuls on CPUs with AMX.
 *
 * On an x86 CPU with AMX-INT8 (Intel Sapphire Rapids and later) llama.cpp
 * loads its sapphirerapids build, and that build moves the weights of
 * plain matrix products (GGML_OP_MUL_MAT, not the experts' MUL_MAT_ID; a
 * tied head's copy of the token embedding too) into AMX buffers where their
 * shape allows: output rows a multiple of 32, inputs a multiple of the
 * block (32 for Q8_0, Q4_0, Q4_1; 256 for the K-quants and IQ4_XS). Those
 * products then take AMX tile products for batches and AVX-512 VNNI for
 * single rows, both with one order unlike the vec_dot order q36 follows
 * elsewhere: each block's integer sum is formed whole (for Q6_K, the
 * sixteen sub-block sums times their scales, 32 x the activation's sums
 * taken off), converted to float once, and the blocks meet in one chain
 * of fused multiply-adds:
 *
 *     y = 0;  for each block b:  y = fma((float)isum_b, d_w,b * d_a,b, y)
 *
 * (Q4_K and Q5_K add a second fused multiply-add a block that takes the
 * mins' integer sum times dmin_w,b * d_a,b off), no lanes, no final
 * reduction. Record bench/results/2026-12-01-gpuhost/ measured what not
 * following it costs there (whole-model parity failed on most quantized
 * files). The integer sums are exact in any order, so
 * the kernels below only have to form them exactly and keep that chain.
 *
 * cpu_amx_detect mirrors llama.cpp's test: the CPU reports AMX-INT8 and
 * AVX-512 VNNI, and Linux grants the process the AMX tile state (the
 * arch_prctl request ggml makes; q36 itself executes no AMX instruction).
 *
 * Written from that description of the order; nothing is copied. */
#include "cpu_internal.h"
#include "cpu_q6k_lanes.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../quant/fp16.h"
#include "../../quant/iq_tables.h"
#include "../../quant/quant.h"
#include "../../quant/avx2_util.h"
#include "../../quant/quant_impl.h"
#include "../../quant/types.h"

#define Q8_BLOCK 34      /* f16 scale + 32 int8 codes */
#define Q6K_BLOCK 210    /* 128 low nibbles, 64 high pairs, 16 scales, f16 d */
#define Q8K_BLOCK 292    /* f32 d, 256 codes, 16 sums of 16 */
#define Q4K_BLOCK 144    /* f16 d, f16 dmin, 12 scale bytes, 128 nibble bytes */
#define Q5K_BLOCK 176    /* the same with 32 bytes of high bits before the nibbles */
#define IQ4XS_BLOCK 136  /* f16 d, 16-bit high scale bits, 4 low scale bytes, 128 nibble bytes */
#define Q4_0_BLOCK 18    /* f16 d, 16 nibble bytes: element l low, l + 16 high */
#define Q4_1_BLOCK 20    /* f16 d, f16 m, 16 nibble bytes */
#define Q8_1_BLOCK 36    /* f16 d, f16 s (d x the codes' sum), 32 int8 codes */

bool cpu_amx_detect(void)
{
#if defined(__x86_64__) && defined(__linux__)
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return false;
    const bool amx_int8 = d >> 25 & 1, vnni = c >> 11 & 1;
    if (!amx_int8 || !vnni)
        return false;
    /* ARCH_REQ_XCOMP_PERM (0x1023) for XFEATURE_XTILEDATA (18) */
    return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#else
    return false;
#endif
}

bool cpu_amx_shape(uint32_t type, int64_t K, int64_t N)
{
    if (N % 32)
        return false;
    if (type == QT_Q8_0 || type == QT_Q4_0 || type == QT_Q4_1)
        return K % 32 == 0;
    if (type == QT_Q6_K || type == QT_Q4_K || type == QT_Q5_K || type == QT_IQ4_XS)
        return K % 256 == 0;
    return false;
}

/* ------------------------------------------------------- references */

float cpu_dot_q8_0_amx_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float y = 0.0f;
    for (int64_t b = 0; b < n / 32; b++, w += Q8_BLOCK, a += Q8_BLOCK) {
        const int8_t *qw = (const int8_t *)(w + 2), *qa = (const int8_t *)(a + 2);
        int32_t s = 0;
        for (int e = 0; e < 32; e++)
            s += qw[e] * qa[e];
        const float d = quant_rdf16(w) * quant_rdf16(a);
        y = fmaf((float)s, d, y);
    }
    return y;
}

/* Q6_K element e of a super-block: its 6-bit code (0..63) */
static int q6k_code(const uint8_t *w, int e)
{
    const uint8_t *ql = w, *qh = w + 128;
    const int half = e / 128, r = e % 128, g = r / 32, l = r % 32;
    const uint8_t lo = ql[64 * half + 32 * (g & 1) + l];
    const int lo4 = g < 2 ? lo & 15 : lo >> 4;
    return lo4 | ((qh[32 * half + l] >> (2 * g)) & 3) << 4;
}

float cpu_dot_q6_K_amx_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float y = 0.0f;
    for (int64_t b = 0; b < n / 256; b++, w += Q6K_BLOCK, a += Q8K_BLOCK) {
        const int8_t *sc = (const int8_t *)(w + 192);
        const int8_t *q8 = (const int8_t *)(a + 4);
        const float da = q8k_d(a);
        int32_t s = 0;
        for (int j = 0; j < 16; j++) {          /* sub-blocks of 16 */
            int32_t sj = 0;
            for (int e = 16 * j; e < 16 * j + 16; e++)
                sj += (q6k_code(w, e) - 32) * q8[e];
            s += sc[j] * sj;
        }
        const float d = quant_rdf16(w + 208) * da;
        y = fmaf((float)s, d, y);
    }
    return y;
}

/* Q4_K and Q5_K: the codes (0..15; Q5_K 0..31 with its high bits) times
 * the activations, by sub-block of 32 times its 6-bit scale, one integer;
 * the mins times the activation's sums of 32 (two of its sums of 16),
 * another; then two fused multiply-adds, the second taking off the mins'
 * part: y = fma(-(float)msum, dmin * d_a, y). Block: f16 d, f16 dmin, 12
 * scale bytes, (Q5_K: 32 bytes of high bits,) 128 bytes of nibbles. */
/* the mins' integer of a Q4_K/Q5_K block: each sub-block's min times the
 * activation's sum of its 32 elements (two of the Q8_K block's sums) */
static int32_t k45_mins(const uint8_t mn[8], const uint8_t *a)
{
    int32_t m = 0;
    for (int g = 0; g < 8; g++)
        m += mn[g] * (q8k_bsum(a, 2 * g) + q8k_bsum(a, 2 * g + 1));
    return m;
}

static float dot_k45_amx_ref(int64_t n, const uint8_t *w, const uint8_t *a, bool five)
{
    const int bb = five ? Q5K_BLOCK : Q4K_BLOCK, qs = five ? 48 : 16;
    float y = 0.0f;
    for (int64_t b = 0; b < n / 256; b++, w += bb, a += Q8K_BLOCK) {
        const int8_t *q8 = (const int8_t *)(a + 4);
        uint8_t sc[8], mn[8];
        quant_k4_scales_mins(w + 4, sc, mn);
        int32_t s = 0;
        for (int g = 0; g < 8; g++) {
            int32_t sg = 0;
            for (int l = 0; l < 32; l++) {
                const uint8_t q = w[qs + 32 * (g / 2) + l];
                const int hi = five ? (w[16 + l] >> g & 1) << 4 : 0;
                sg += ((g & 1 ? q >> 4 : q & 15) + hi) * q8[32 * g + l];
            }
            s += sc[g] * sg;
        }
        const int32_t m = k45_mins(mn, a);
        const float da = q8k_d(a);
        const float d = quant_rdf16(w) * da, dm = quant_rdf16(w + 2) * da;
        y = fmaf((float)s, d, y);
        y = fmaf(-(float)m, dm, y);
    }
    return y;
}

float cpu_dot_q4_K_amx_ref(int64_t n, const void *w, const void *a)
{
    return dot_k45_amx_ref(n, w, a, false);
}

float cpu_dot_q5_K_amx_ref(int64_t n, const void *w, const void *a)
{
    return dot_k45_amx_ref(n, w, a, true);
}

/* element l (0..31) of a run of 16 nibble bytes: low nibbles first */
static int nib32(const uint8_t *q, int l)
{
    return l < 16 ? q[l] & 15 : q[l - 16] >> 4;
}

/* IQ4_XS: sub-block g (32 elements) has the signed scale ls_g - 32 (4 low
 * bits in scales_l, 2 high in scales_h) and codes that index the IQ4_NL
 * values; the block's integer is the scaled sub-block sums, one chain */
static int iq4xs_scale(const uint8_t *w, int g)
{
    const uint16_t sh = quant_rd16(w + 2);
    return (((w[4 + g / 2] >> 4 * (g & 1)) & 15) | ((sh >> 2 * g & 3) << 4)) - 32;
}

float cpu_dot_iq4_xs_amx_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float y = 0.0f;
    for (int64_t b = 0; b < n / 256; b++, w += IQ4XS_BLOCK, a += Q8K_BLOCK) {
        const int8_t *q8 = (const int8_t *)(a + 4);
        int32_t s = 0;
        for (int g = 0; g < 8; g++) {
            int32_t sg = 0;
            for (int l = 0; l < 32; l++)
                sg += quant_kvalues_iq4nl[nib32(w + 8 + 16 * g, l)] * q8[32 * g + l];
            s += iq4xs_scale(w, g) * sg;
        }
        const float da = q8k_d(a);
        y = fmaf((float)s, quant_rdf16(w) * da, y);
    }
    return y;
}

/* Q4_0 (Q8_0 activations): codes - 8 times the activations, one chain */
float cpu_dot_q4_0_amx_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float y = 0.0f;
    for (int64_t b = 0; b < n / 32; b++, w += Q4_0_BLOCK, a += Q8_BLOCK) {
        const int8_t *qa = (const int8_t *)(a + 2);
        int32_t s = 0;
        for (int l = 0; l < 32; l++)
            s += (nib32(w + 2, l) - 8) * qa[l];
        y = fmaf((float)s, quant_rdf16(w) * quant_rdf16(a), y);
    }
    return y;
}

/* Q4_1 (Q8_1 activations): codes times the activations, then the min
 * times the activation block's s: y = fma(m_w, s_a, fma(isum, d_w d_a, y)) */
float cpu_dot_q4_1_amx_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float y = 0.0f;
    for (int64_t b = 0; b < n / 32; b++, w += Q4_1_BLOCK, a += Q8_1_BLOCK) {
        const int8_t *qa = (const int8_t *)(a + 4);
        int32_t s = 0;
        for (int l = 0; l < 32; l++)
            s += nib32(w + 4, l) * qa[l];
        y = fmaf((float)s, quant_rdf16(w) * quant_rdf16(a), y);
        y = fmaf(quant_rdf16(w + 2), quant_rdf16(a + 2), y);
    }
    return y;
}

/* ---------------------------------------------------------- AVX2 */

AVX2 static inline int32_t hsum_i32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

/* the exact sum of 32 signed byte products (madd_i8: a pair at most
 * 2 * 128 * 127) */
AVX2 static inline int32_t dot32_s8(__m256i v, __m256i x)
{
    return hsum_i32(_mm256_madd_epi16(madd_i8(v, x), _mm256_set1_epi16(1)));
}

/* Q8_0: each block's exact sum by dot32_s8 */
AVX2 static float dot_q8_0_amx_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float y = 0.0f;
    for (int64_t b = 0; b < n / 32; b++, w += Q8_BLOCK, a += Q8_BLOCK) {
        const int32_t s = dot32_s8(_mm256_loadu_si256((const __m256i *)(w + 2)),
                                   _mm256_loadu_si256((const __m256i *)(a + 2)));
        const float d = f16c(w) * f16c(a);
        y = fmaf((float)s, d, y);
    }
    return y;
}

/* the super-block's exact integer sum: cpu_q6k_lanes.h's 8 lanes added */
AVX2 static float dot_q6_K_amx_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float y = 0.0f;
    for (int64_t b = 0; b < n / 256; b++, w += Q6K_BLOCK, a += Q8K_BLOCK) {
        const float d = f16c(w + 208) * q8k_d(a);
        y = fmaf((float)hsum_i32(cpu_q6k_lanes_avx2(w, a)), d, y);
    }
    return y;
}

/* Q4_K and Q5_K: codes x activations by vpmaddubsw (at most 2 * 31 * 127),
 * times the sub-block's scale by vpmaddwd, in exact 32-bit lanes (a Q5_K
 * sub-block g's high bit is bit g of its element's qh byte: shifted to bit
 * 0 of every byte, masked, moved to bit 4); the mins' integer in scalars */
AVX2 static inline __attribute__((always_inline)) float
dot_k45_amx_avx2(int64_t n, const uint8_t *w, const uint8_t *a, bool five)
{
    const int bb = five ? Q5K_BLOCK : Q4K_BLOCK, qs = five ? 48 : 16;
    const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    float y = 0.0f;
    for (int64_t b = 0; b < n / 256; b++, w += bb, a += Q8K_BLOCK) {
        const int8_t *q8 = (const int8_t *)(a + 4);
        uint8_t sc[8], mn[8];
        quant_k4_scales_mins(w + 4, sc, mn);
        const __m256i qh = five ? _mm256_loadu_si256((const __m256i *)(w + 16))
                                : _mm256_setzero_si256();
        __m256i acc = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(w + qs + 32 * j));
            __m256i lo = _mm256_and_si256(q, m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            if (five) {
                const __m128i s0 = _mm_cvtsi32_si128(2 * j), s1 = _mm_cvtsi32_si128(2 * j + 1);
                const __m256i h0 = _mm256_and_si256(_mm256_srl_epi16(qh, s0), one);
                const __m256i h1 = _mm256_and_si256(_mm256_srl_epi16(qh, s1), one);
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(h0, 4));
                hi = _mm256_or_si256(hi, _mm256_slli_epi16(h1, 4));
            }
            const __m256i a0 = _mm256_loadu_si256((const __m256i *)(q8 + 64 * j));
            const __m256i a1 = _mm256_loadu_si256((const __m256i *)(q8 + 64 * j + 32));
            const __m256i p0 = _mm256_maddubs_epi16(lo, a0), p1 = _mm256_maddubs_epi16(hi, a1);
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p0, _mm256_set1_epi16(sc[2 * j])));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p1, _mm256_set1_epi16(sc[2 * j + 1])));
        }
        const int32_t m = k45_mins(mn, a);
        const float da = q8k_d(a);
        const float d = f16c(w) * da, dm = f16c(w + 2) * da;
        y = fmaf((float)hsum_i32(acc), d, y);
        y = fmaf(-(float)m, dm, y);
    }
    return y;
}

AVX2 static float dot_q4_K_amx_avx2(int64_t n, const void *w, const void *a)
{
    return dot_k45_amx_avx2(n, w, a, false);
}

AVX2 static float dot_q5_K_amx_avx2(int64_t n, const void *w, const void *a)
{
    return dot_k45_amx_avx2(n, w, a, true);
}

AVX2 static float dot_iq4_xs_amx_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m256i values =
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)quant_kvalues_iq4nl));
    float y = 0.0f;
    for (int64_t b = 0; b < n / 256; b++, w += IQ4XS_BLOCK, a += Q8K_BLOCK) {
        const int8_t *q8 = (const int8_t *)(a + 4);
        int32_t s = 0;
        for (int g = 0; g < 8; g++) {
            const __m256i v = _mm256_shuffle_epi8(values, nibbles16(w + 8 + 16 * g));
            s += iq4xs_scale(w, g) * dot32_s8(v, load32(q8 + 32 * g));
        }
        const float da = q8k_d(a);
        y = fmaf((float)s, f16c(w) * da, y);
    }
    return y;
}

AVX2 static float dot_q4_0_amx_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m256i eight = _mm256_set1_epi8(8);
    float y = 0.0f;
    for (int64_t b = 0; b < n / 32; b++, w += Q4_0_BLOCK, a += Q8_BLOCK) {
        const __m256i v = _mm256_sub_epi8(nibbles16(w + 2), eight);
        const int32_t s = dot32_s8(v, _mm256_loadu_si256((const __m256i *)(a + 2)));
        y = fmaf((float)s, f16c(w) * f16c(a), y);
    }
    return y;
}

AVX2 static float dot_q4_1_amx_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float y = 0.0f;
    for (int64_t b = 0; b < n / 32; b++, w += Q4_1_BLOCK, a += Q8_1_BLOCK) {
        const __m256i x = _mm256_loadu_si256((const __m256i *)(a + 4));
        const __m256i p = _mm256_maddubs_epi16(nibbles16(w + 4), x);
        const int32_t s = hsum_i32(_mm256_madd_epi16(p, _mm256_set1_epi16(1)));
        y = fmaf((float)s, f16c(w) * f16c(a), y);
        y = fmaf(f16c(w + 2), f16c(a + 2), y);
    }
    return y;
}

/* lane k of the result: the sum of v[k]'s 8 lanes (integer adds: exact in
 * any order) */
AVX2 static inline __m256i sum8x8_i32(const __m256i *v)
{
    const __m256i u0 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    const __m256i u1 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20),
                            _mm256_permute2x128_si256(u0, u1, 0x31));
}

/* 2 weight rows x 4 tokens in one register: lane 4r + t is output (r, t).
 * Per block the 8 outputs' integer sums (as dot_q8_0_amx_avx2 forms
 * them) meet in sum8x8_i32, their 8 scale products are one vmulps, and one
 * fused multiply-add a block carries the 8 chains: the per-output dot's
 * operands in its order, so its bits. */
AVX2 static void q8_amx_2x4(int64_t nb, const uint8_t *w0, const uint8_t *w1, const uint8_t *a,
                            uint64_t arb, float *y, int64_t ldy)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint64_t off = (uint64_t)b * Q8_BLOCK;
        const __m256i wv0 = _mm256_loadu_si256((const __m256i *)(w0 + off + 2));
        const __m256i wv1 = _mm256_loadu_si256((const __m256i *)(w1 + off + 2));
        const __m256i wa0 = _mm256_sign_epi8(wv0, wv0), wa1 = _mm256_sign_epi8(wv1, wv1);
        __m256i v[8];
        __m128i h = _mm_setzero_si128();
        for (int t = 0; t < 4; t++) {
            const uint8_t *p = a + (uint64_t)t * arb + off;
            const __m256i av = _mm256_loadu_si256((const __m256i *)(p + 2));
            v[t] = _mm256_madd_epi16(_mm256_maddubs_epi16(wa0, _mm256_sign_epi8(av, wv0)), ones);
            v[4 + t] = _mm256_madd_epi16(_mm256_maddubs_epi16(wa1, _mm256_sign_epi8(av, wv1)), ones);
        }
        h = _mm_insert_epi16(h, quant_rd16(a + off), 0);
        h = _mm_insert_epi16(h, quant_rd16(a + arb + off), 1);
        h = _mm_insert_epi16(h, quant_rd16(a + 2 * arb + off), 2);
        h = _mm_insert_epi16(h, quant_rd16(a + 3 * arb + off), 3);
        const __m128 da = _mm_cvtph_ps(h);
        const __m256 dw = _mm256_set_m128(_mm_set1_ps(f16c(w1 + off)),
                                          _mm_set1_ps(f16c(w0 + off)));
        const __m256 d = _mm256_mul_ps(dw, _mm256_set_m128(da, da));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum8x8_i32(v)), d, acc);
    }
    float l[8];
    _mm256_storeu_ps(l, acc);
    for (int k = 0; k < 8; k++)
        y[(k % 4) * ldy + k / 4] = l[k];
}

/* the tile (cpu_gemm.h's cpu_tile_fn): 2 x 4 blocks, the edges by the dot */
AVX2 static void gemm_q8_0_amx_avx2(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                                    const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    const int64_t nr2 = nr & ~(int64_t)1, nt4 = nt & ~(int64_t)3;
    for (int64_t t = 0; t < nt4; t += 4)
        for (int64_t r = 0; r < nr2; r += 2)
            q8_amx_2x4(K / 32, w + (uint64_t)r * wrb, w + (uint64_t)(r + 1) * wrb,
                       a + (uint64_t)t * arb, arb, y + t * ldy + r, ldy);
    for (int64_t t = 0; t < nt; t++)
        for (int64_t r = t < nt4 ? nr2 : 0; r < nr; r++)
            y[t * ldy + r] = dot_q8_0_amx_avx2(K, w + (uint64_t)r * wrb, a + (uint64_t)t * arb);
}

static void gemm_q8_0_amx_ref(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                              const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    for (int64_t t = 0; t < nt; t++)
        for (int64_t r = 0; r < nr; r++)
            y[t * ldy + r] = cpu_dot_q8_0_amx_ref(K, w + (uint64_t)r * wrb, a + (uint64_t)t * arb);
}

/* AVX2, FMA and F16C with the YMM state on, as the quant module sees the
 * CPU (under Q36_QUANT_PATH_MAX=ref: the references, the same bits) */
static bool have_avx2(void)
{
    return quant_path_available(QUANT_PATH_AVX2);
}

cpu_tile_fn cpu_amx_tile(uint32_t type)
{
    if (type == QT_Q8_0)
        return have_avx2() ? gemm_q8_0_amx_avx2 : gemm_q8_0_amx_ref;
    return NULL;
}

quant_dot_fn cpu_amx_dot(uint32_t type)
{
    const bool v = have_avx2();
    if (type == QT_Q8_0)
        return v ? dot_q8_0_amx_avx2 : cpu_dot_q8_0_amx_ref;
    if (type == QT_Q6_K)
        return v ? dot_q6_K_amx_avx2 : cpu_dot_q6_K_amx_ref;
    if (type == QT_Q4_K)
        return v ? dot_q4_K_amx_avx2 : cpu_dot_q4_K_amx_ref;
    if (type == QT_Q5_K)
        return v ? dot_q5_K_amx_avx2 : cpu_dot_q5_K_amx_ref;
    if (type == QT_IQ4_XS)
        return v ? dot_iq4_xs_amx_avx2 : cpu_dot_iq4_xs_amx_ref;
    if (type == QT_Q4_0)
        return v ? dot_q4_0_amx_avx2 : cpu_dot_q4_0_amx_ref;
    if (type == QT_Q4_1)
        return v ? dot_q4_1_amx_avx2 : cpu_dot_q4_1_amx_ref;
    return NULL;
}
