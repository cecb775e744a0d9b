/* cpu_gemm_k4.c: tile kernels (cpu_gemm.h) for Q4_K weights against Q8_K
 * activations: the plain C reference, AVX2 and AVX-512 VNNI, all three in
 * one float order and so with the same bits.
 *
 * Q4_K block (256 elements, 144 bytes): f16 d, f16 dmin, 12 bytes of eight
 * 6-bit scales and eight 6-bit mins, 128 bytes of 4-bit codes (bytes
 * 32c..32c+31 hold sub-block 2c in their low nibbles, 2c+1 in their high
 * ones). Q8_K block (292 bytes): f32 d, 256 int8, 16 int16 sums of 16.
 * A block's dot is da * (d * sum_k sc_k S_k - dmin * sum_k m_k B_k) with
 * S_k the integer code x activation sum of sub-block k and B_k its
 * activation sum.
 *
 * The AVX-512 kernel takes 4 weight rows x T tokens (T <= 8) per call of
 * its block loop, row r in 128-bit lane r of every vector (k4_block4xT
 * says how): per block it decodes the 4 rows' scales and mins in one
 * vector, transposes their code bytes into 16-byte quarters, and per
 * token takes 4 vpdpbusd (codes x activations broadcast to the 4 lanes)
 * and one vpdpwssd (against the scale pair of two sub-blocks) per 64
 * codes of a row. The 4 rows' int32 lanes come out in one vector,
 * converted, scaled by d and dmin and accumulated in f32 per lane across
 * blocks; one lane sum per row at the end. So every float operation of an
 * output involves only its own row and token: batch-invariant bits. Rows
 * past nr repeat the last row (computed, not stored); tokens run in
 * groups of 8, then the rest (one function per group size, so each block
 * loop gets the registers to itself).
 * A one-token tile (decode) runs k4_row1 instead: one row at a time, in
 * address order, the same lanes and bits.
 * The AVX2 kernel takes 2 rows (one per 128-bit lane, as the AVX-512
 * kernel) x up to 4 tokens with vpmaddubsw + vpmaddwd (k4_pairxT_avx2,
 * and k4p_pairxT on a per-call pack), one token included; its four int32
 * lanes per row hold the same elements (exact), so the float work and the
 * bits are the AVX-512 kernel's. Under Q36_QUANT_PATH_MAX=avx2 (one
 * thread, min of 20, 16 rows x 64 tokens, TSC ticks at 2.6 GHz per row,
 * block and token) the unpacked form takes 6.2-6.4 at K 1024 N 3584 and
 * K 3584 N 1024, where the previous AVX2 tile (each row in a whole 256-bit
 * vector, folded per block; 8 int32 sums and 4 accumulators live, spilled)
 * took 8.9-9.9: its lanes needed a fold and a float step per row, and each
 * 16-code half its own vpmaddwd.
 *
 * Measured (one thread, min of 15, tiles of 16 rows x 64 tokens as
 * cpu_matmul takes them): this kernel against the previous one (rows in
 * pairs of 64-code vectors, vpmaddubsw + vpdpwssd, lanes folded across
 * rows per block, 6 tokens a pass): 1.58 vs 1.95 ns per row, block and
 * token at K 1024 N 3584, 1.47 vs 1.84 at K 3584 N 1024, 1.81 vs 2.32 at
 * K 1024 N 6144 x 512 tokens (0.78-0.82x the time). Zen 5 runs two
 * 512-bit integer multiplies a cycle and its shuffles share a port with
 * them (measured); the old kernel's 8 multiplies per row, block and token
 * bound it at 4 cycles, this one's 5 at 2.5. Tokens per pass, same
 * harness: 6 -> 6.7, 8 -> 5.4, 10 -> 5.5, 12 -> 5.8 cycles per row,
 * block and token.
 * Decode is memory-bound: about equal to the per-output dot.
 */
#include "cpu_gemm.h"

#include <math.h>
#include <string.h>

#include "../../quant/fp16.h"
#include "../../quant/quant.h"

/* One output in the kernels' order, plain C. Per block: int32 lane j
 * (j < 4) holds sum_k sc_k * (codes x activations over the elements e of
 * sub-block k with (e mod 16) / 4 == j) and m_2j B_2j + m_2j+1 B_2j+1;
 * lane j of the f32 accumulator takes fma(is_j * d - ms_j * dmin, da);
 * the end is (l0 + l2) + (l1 + l3). */
static float k4_dot_order(int64_t nb, const uint8_t *w, const uint8_t *a)
{
    float acc[4] = { 0, 0, 0, 0 };
    for (int64_t b = 0; b < nb; b++, w += 144, a += 292) {
        const uint8_t *s = w + 4, *qs = w + 16;
        const int8_t *q8 = (const int8_t *)(a + 4);
        int32_t is[4] = { 0, 0, 0, 0 }, ms[4] = { 0, 0, 0, 0 };
        for (int k = 0; k < 8; k++) {
            const int sc = k < 4 ? s[k] & 63 : (s[k + 4] & 15) | (s[k - 4] >> 6) << 4;
            const int m = k < 4 ? s[k + 4] & 63 : (s[k + 4] >> 4) | (s[k] >> 6) << 4;
            int16_t b0, b1;
            memcpy(&b0, a + 260 + 4 * k, 2);
            memcpy(&b1, a + 262 + 4 * k, 2);
            ms[k / 2] += m * (b0 + b1);
            for (int l = 0; l < 32; l++) {
                const int code = k % 2 ? qs[32 * (k / 2) + l] >> 4 : qs[32 * (k / 2) + l] & 15;
                is[(l % 16) / 4] += sc * code * q8[32 * k + l];
            }
        }
        uint16_t h;
        float da;
        memcpy(&h, w, 2);
        const float d = quant_f16_to_f32(h);
        memcpy(&h, w + 2, 2);
        const float dmin = quant_f16_to_f32(h);
        memcpy(&da, a, 4);
        for (int j = 0; j < 4; j++)
            acc[j] = fmaf(fmaf(-(float)ms[j], dmin, (float)is[j] * d), da, acc[j]);
    }
    return (acc[0] + acc[2]) + (acc[1] + acc[3]);
}

void cpu_gemm_q4_K_ref(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                       const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    for (int64_t t = 0; t < nt; t++)
        for (int64_t r = 0; r < nr; r++)
            y[t * ldy + r] = k4_dot_order(K / 256, w + (uint64_t)r * wrb, a + (uint64_t)t * arb);
}

cpu_tile_fn cpu_gemm_q4_K(void)
{
#if defined(__x86_64__)
    if (quant_path_available(QUANT_PATH_AVX512VNNI))
        return cpu_gemm_q4_K_avx512vnni;
    if (quant_path_available(QUANT_PATH_AVX2))
        return cpu_gemm_q4_K_avx2;
#endif
    return cpu_gemm_q4_K_ref;
}

#if defined(__x86_64__)
#include <immintrin.h>

#include "cpu_gemm_mix.h"

#define X512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define K4_WB 144
#define K4_AB 292
#define K4_TT 8    /* tokens per pass of the AVX-512 kernel */

static inline uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Row r of the 4 in lane r: bytes 0..7 the eight scales, 8..15 the eight
 * mins (quant_k4_scales_mins per 128-bit lane; s[r] + 4 is the 12 scale
 * bytes, 16 read, within the block). Dword lanes: 0 = sc[0..3] = a0 &
 * 0x3F.., 1 = sc[4..7] = (a2 & 0x0F..) | (a0 >> 2 & 0x30..), 2 = m[0..3] =
 * a1 & 0x3F.., 3 = m[4..7] = (a2 >> 4 & 0x0F..) | (a1 >> 2 & 0x30..). */
X512 static inline __m512i k4_scales4(const uint8_t *const *s)
{
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(s[0] + 4)));
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(s[1] + 4)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(s[2] + 4)), 2);
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(s[3] + 4)), 3);
    const __m512i t = _mm512_shuffle_epi32(v, (_MM_PERM_ENUM)0x98);   /* a0 a2 a1 a2 */
    const __m512i u = _mm512_shuffle_epi32(v, (_MM_PERM_ENUM)0x50);   /* a0 a0 a1 a1 */
    const __m512i lo = _mm512_and_si512(t, _mm512_set1_epi8(0x3F));
    const __m512i sh = _mm512_setr_epi32(0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4);
    const __m512i hl = _mm512_and_si512(_mm512_srlv_epi32(t, sh), _mm512_set1_epi8(0x0F));
    const __m512i hh = _mm512_and_si512(_mm512_srli_epi32(u, 2), _mm512_set1_epi8(0x30));
    return _mm512_mask_blend_epi32(0xAAAA, lo, _mm512_or_si512(hl, hh));
}

/* The sum of each 128-bit lane of x, lane r in element r. */
X512 static inline __m128 lane_sums(__m512 x)
{
    x = _mm512_add_ps(x, _mm512_shuffle_ps(x, x, 0x4E));
    x = _mm512_add_ps(x, _mm512_shuffle_ps(x, x, 0xB1));
    return _mm512_castps512_ps128(_mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0,
                                                                          0, 0, 0, 0), x));
}

/* Dword c (0..3) of each 128-bit lane of x in all four of that lane's
 * (vpshufd takes its pattern as an immediate, so one case per c). */
X512 static inline __m512i dword_bcast(__m512i x, int c)
{
    switch (c) {
    case 0: return _mm512_shuffle_epi32(x, (_MM_PERM_ENUM)0x00);
    case 1: return _mm512_shuffle_epi32(x, (_MM_PERM_ENUM)0x55);
    case 2: return _mm512_shuffle_epi32(x, (_MM_PERM_ENUM)0xAA);
    default: return _mm512_shuffle_epi32(x, (_MM_PERM_ENUM)0xFF);
    }
}

/* 4 weight rows (w[0..3]) x T tokens (at[0..T-1], T <= K4_TT), nb blocks:
 * res[t] element r = dot(row r, token t). T is a constant after inlining.
 * Row r lives in 128-bit lane r of every vector: per half block the 4
 * rows' 64 code bytes are loaded and their 16-byte quarters transposed
 * (vshufi64x2), so a vector holds 16 codes of one sub-block of each row
 * and meets the token's 16 matching activations broadcast to the 4 lanes.
 * vpdpbusd sums 4 code x activation products per int32 lane (|lane| <=
 * 2 chunks x 4 x 15 x 128 < 2^15 for one sub-block), so a sub-block's
 * lane sum fits int16: the two sub-blocks 2c (low halves) and 2c+1 (high
 * halves, shifted in) share one vpdpwssd against their scale pair. That is
 * 5 multiplies per row, block and token where vpmaddubsw + vpdpwssd per
 * 64 codes took 8. Lane j of row r sums the elements e with (e mod 16)/4
 * == j, as k4_dot_order; integer adds are exact, so the bits are the same.
 * No cross-lane folding is needed: the int32 sums of the 4 rows come out
 * in one vector. */
X512 __attribute__((always_inline)) static inline void
k4_block4xT(int64_t nb, const uint8_t *const *w, const uint8_t *const *at, const int T, __m128 *res)
{
    const __m512i m4 = _mm512_set1_epi8(15);
    const __m512i didx = _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6);
    const __m512i midx = _mm512_add_epi32(didx, _mm512_set1_epi32(1));
    __m512 acc[K4_TT];
    __m512i isum[K4_TT];
    #pragma GCC unroll 8
    for (int t = 0; t < T; t++)
        acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *wb[4], *ab[K4_TT];
        #pragma GCC unroll 4
        for (int r = 0; r < 4; r++)
            wb[r] = w[r] + b * K4_WB;
        #pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
            ab[t] = at[t] + b * K4_AB;
            isum[t] = _mm512_setzero_si512();
        }
        const __m512i scmn = k4_scales4(wb);
        const __m512i sc16 = _mm512_unpacklo_epi8(scmn, _mm512_setzero_si512());
        const __m512i mn16 = _mm512_unpackhi_epi8(scmn, _mm512_setzero_si512());
        #pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            /* Q[q], lane r: code bytes 64h + 16q .. +15 of row r */
            const __m512i r0 = _mm512_loadu_si512(wb[0] + 16 + 64 * h), r1 = _mm512_loadu_si512(wb[1] + 16 + 64 * h);
            const __m512i r2 = _mm512_loadu_si512(wb[2] + 16 + 64 * h), r3 = _mm512_loadu_si512(wb[3] + 16 + 64 * h);
            const __m512i t0 = _mm512_shuffle_i64x2(r0, r1, 0x44), t1 = _mm512_shuffle_i64x2(r0, r1, 0xEE);
            const __m512i t2 = _mm512_shuffle_i64x2(r2, r3, 0x44), t3 = _mm512_shuffle_i64x2(r2, r3, 0xEE);
            const __m512i Q[4] = { _mm512_shuffle_i64x2(t0, t2, 0x88), _mm512_shuffle_i64x2(t0, t2, 0xDD),
                                   _mm512_shuffle_i64x2(t1, t3, 0x88), _mm512_shuffle_i64x2(t1, t3, 0xDD) };
            #pragma GCC unroll 2
            for (int cc = 0; cc < 2; cc++) {
                const int c = 2 * h + cc;   /* code bytes 32c..32c+31: sub-blocks 2c, 2c+1 */
                const __m512i l0 = _mm512_and_si512(Q[2 * cc], m4), l1 = _mm512_and_si512(Q[2 * cc + 1], m4);
                const __m512i h0 = _mm512_and_si512(_mm512_srli_epi16(Q[2 * cc], 4), m4);
                const __m512i h1 = _mm512_and_si512(_mm512_srli_epi16(Q[2 * cc + 1], 4), m4);
                /* int16 pair (sc[2c], sc[2c+1]) of row r in every dword of lane r */
                const __m512i sp = dword_bcast(sc16, c);
                #pragma GCC unroll 8
                for (int t = 0; t < T; t++) {
                    const uint8_t *ac = ab[t] + 4 + 64 * c;
                    __m512i lo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), l0,
                                                     _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)ac)));
                    lo = _mm512_dpbusd_epi32(lo, l1, _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(ac + 16))));
                    __m512i hi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), h0,
                                                     _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(ac + 32))));
                    hi = _mm512_dpbusd_epi32(hi, h1, _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(ac + 48))));
                    const __m512i x = _mm512_mask_mov_epi16(_mm512_slli_epi32(hi, 16), 0x55555555, lo);
                    isum[t] = _mm512_dpwssd_epi32(isum[t], x, sp);
                }
            }
        }
        const __m128i dh = _mm_setr_epi32((int)rd32(wb[0]), (int)rd32(wb[1]), (int)rd32(wb[2]), (int)rd32(wb[3]));
        const __m512 dd = _mm512_castps256_ps512(_mm256_cvtph_ps(dh));    /* d0 m0 d1 m1 .. */
        const __m512 dv = _mm512_permutexvar_ps(didx, dd), dm = _mm512_permutexvar_ps(midx, dd);
        #pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
            /* sub-block sums of the activations (|B_k| <= 32 * 128) as
             * int16, in every lane, against each row's mins */
            const __m256i b32 = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(ab[t] + 260)),
                                                  _mm256_set1_epi16(1));
            const __m512i bk = _mm512_broadcast_i32x4(_mm256_cvtepi32_epi16(b32));
            const __m512i ms = _mm512_madd_epi16(mn16, bk);
            float da;
            memcpy(&da, ab[t], 4);
            const __m512 f = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(ms), dm,
                                              _mm512_mul_ps(_mm512_cvtepi32_ps(isum[t]), dv));
            acc[t] = _mm512_fmadd_ps(f, _mm512_set1_ps(da), acc[t]);
        }
    }
    #pragma GCC unroll 8
    for (int t = 0; t < T; t++)
        res[t] = lane_sums(acc[t]);
}

/* One instance per T, each its own function, so that the register
 * allocator sees one block loop at a time. */
#define K4_PASS(T)                                                                          \
    X512 __attribute__((noinline)) static void k4_pass##T(int64_t nb, const uint8_t *const *w, \
                                                         const uint8_t *const *at, __m128 *res) \
    {                                                                                       \
        k4_block4xT(nb, w, at, T, res);                                                     \
    }
K4_PASS(1)
K4_PASS(2)
K4_PASS(3)
K4_PASS(4)
K4_PASS(5)
K4_PASS(6)
K4_PASS(7)
K4_PASS(8)

/* ---- pieces of the one-row (decode) kernel k4_row1 ---- */

#define XAVX2 __attribute__((target("avx2,fma,f16c")))


/* One row's block scales and mins: bytes 0..7 sc[0..7], 8..15 m[0..7]
 * (k4_scales4's lane for one row). */
XAVX2 static inline __m128i k4_scmn1(const uint8_t *w)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)(w + 4));
    const __m128i t = _mm_shuffle_epi32(v, 0x98), u = _mm_shuffle_epi32(v, 0x50);
    const __m128i lo = _mm_and_si128(t, _mm_set1_epi8(0x3F));
    const __m128i hl = _mm_and_si128(_mm_srlv_epi32(t, _mm_setr_epi32(0, 0, 0, 4)), _mm_set1_epi8(0x0F));
    const __m128i hh = _mm_and_si128(_mm_srli_epi32(u, 2), _mm_set1_epi8(0x30));
    return _mm_blend_epi32(lo, _mm_or_si128(hl, hh), 0xA);
}

/* A block's float step of one output (k4_dot_order): is the four int32
 * code-sum lanes, mn16 the mins as int16, against the activation's
 * sub-block sums (|B_k| <= 32 * 128, so the int16 pack is exact). */
XAVX2 static inline __m128 k4_acc1(__m128 acc, __m128i is, __m128i mn16, const uint8_t *w, const uint8_t *a)
{
    const __m256i b32 = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(a + 260)), _mm256_set1_epi16(1));
    const __m128i b16 = _mm_packs_epi32(_mm256_castsi256_si128(b32), _mm256_extracti128_si256(b32, 1));
    const __m128i ms = _mm_madd_epi16(mn16, b16);
    const __m128 dd = _mm_cvtph_ps(_mm_cvtsi32_si128((int)rd32(w)));
    float da;
    memcpy(&da, a, 4);
    const __m128 f = _mm_fnmadd_ps(_mm_cvtepi32_ps(ms), _mm_permute_ps(dd, 0x55),
                                   _mm_mul_ps(_mm_cvtepi32_ps(is), _mm_permute_ps(dd, 0x00)));
    return _mm_fmadd_ps(f, _mm_set1_ps(da), acc);
}

/* The four lanes' end: (l0 + l2) + (l1 + l3). */
XAVX2 static inline float k4_sum1(__m128 acc)
{
    const __m128 x = _mm_add_ps(acc, _mm_shuffle_ps(acc, acc, 0x4E));
    return _mm_cvtss_f32(_mm_add_ps(x, _mm_shuffle_ps(x, x, 0xB1)));
}

/* One row, one token, in the same order (decode): the row's blocks are
 * read in address order. Decode reads each weight row once and is bound by
 * memory: 4 interleaved rows (k4_block4xT) streamed worse than one row at
 * a time (one-thread decode of the 0.8B q4_K file, user CPU time, noisy:
 * 4 rows ~1.8-1.95 s, with software prefetch 8 rows ahead about the same,
 * one row 1.5-1.7 s, the quant module's dot per output 1.65-2.0 s). Its
 * 16 int32 lanes fold to the same four lanes per row as k4_block4xT's
 * (exact), so the bits are the same. */
X512 static inline float k4_row1(int64_t nb, const uint8_t *w, const uint8_t *a)
{
    const __m512i m4 = _mm512_set1_epi8(15);
    __m512i pick[4];
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++)
        pick[c] = _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * c)), _mm256_set1_epi16((short)(2 * c + 1)), 1);
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++, w += K4_WB, a += K4_AB) {
        const __m128i scmn = k4_scmn1(w);
        const __m512i sc16 = _mm512_castsi128_si512(_mm_cvtepu8_epi16(scmn));
        const __m128i mn16 = _mm_unpackhi_epi8(scmn, _mm_setzero_si128());
        __m512i isum = _mm512_setzero_si512();
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            const __m512i q = _mm512_loadu_si512(w + 16 + 64 * h);
            const __m512i ql = _mm512_and_si512(q, m4);
            const __m512i qh = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
#pragma GCC unroll 2
            for (int cc = 0; cc < 2; cc++) {
                const int c = 2 * h + cc;
                const __m512i code = cc ? _mm512_shuffle_i64x2(ql, qh, 0xEE) : _mm512_shuffle_i64x2(ql, qh, 0x44);
                const __m512i p = _mm512_maddubs_epi16(code, _mm512_loadu_si512(a + 4 + 64 * c));
                isum = _mm512_dpwssd_epi32(isum, p, _mm512_permutexvar_epi16(pick[c], sc16));
            }
        }
        const __m256i i8 = _mm256_add_epi32(_mm512_castsi512_si256(isum), _mm512_extracti64x4_epi64(isum, 1));
        const __m128i is = _mm_add_epi32(_mm256_castsi256_si128(i8), _mm256_extracti128_si256(i8, 1));
        acc = k4_acc1(acc, is, mn16, w, a);
    }
    return k4_sum1(acc);
}

X512 void cpu_gemm_q4_K_avx512vnni(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                                   const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    const int64_t nb = K / 256;
    if (nt == 1) {
        for (int64_t r = 0; r < nr; r++)
            y[r] = k4_row1(nb, w + (uint64_t)r * wrb, a);
        return;
    }
    for (int64_t r0 = 0; r0 < nr; r0 += 4) {
        const int rows = nr - r0 < 4 ? (int)(nr - r0) : 4;
        const uint8_t *wr[4];
        for (int r = 0; r < 4; r++)
            wr[r] = w + (uint64_t)(r0 + (r < rows ? r : rows - 1)) * wrb;
        const __mmask8 m = (__mmask8)((1u << rows) - 1);
        for (int64_t t0 = 0; t0 < nt; t0 += K4_TT) {
            const int T = nt - t0 < K4_TT ? (int)(nt - t0) : K4_TT;
            const uint8_t *at[K4_TT];
            for (int t = 0; t < T; t++)
                at[t] = a + (uint64_t)(t0 + t) * arb;
            __m128 res[K4_TT];
            switch (T) {
            case 8: k4_pass8(nb, wr, at, res); break;
            case 7: k4_pass7(nb, wr, at, res); break;
            case 6: k4_pass6(nb, wr, at, res); break;
            case 5: k4_pass5(nb, wr, at, res); break;
            case 4: k4_pass4(nb, wr, at, res); break;
            case 3: k4_pass3(nb, wr, at, res); break;
            case 2: k4_pass2(nb, wr, at, res); break;
            default: k4_pass1(nb, wr, at, res); break;
            }
            for (int t = 0; t < T; t++)
                _mm_mask_storeu_ps(y + (t0 + t) * ldy + r0, m, res[t]);
        }
    }
}
/* ---- AVX2: 2 rows (one per 128-bit lane) x up to 4 tokens --------------- */


/* k4_scales4 for two rows, row r in lane r */
XAVX2 static inline __m256i k4_scales2(const uint8_t *const *s)
{
    const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(s[0] + 4))),
                                              _mm_loadu_si128((const __m128i *)(s[1] + 4)), 1);
    const __m256i t = _mm256_shuffle_epi32(v, 0x98), u = _mm256_shuffle_epi32(v, 0x50);
    const __m256i lo = _mm256_and_si256(t, _mm256_set1_epi8(0x3F));
    const __m256i hl = _mm256_and_si256(_mm256_srlv_epi32(t, _mm256_setr_epi32(0, 0, 0, 4, 0, 0, 0, 4)),
                                        _mm256_set1_epi8(0x0F));
    const __m256i hh = _mm256_and_si256(_mm256_srli_epi32(u, 2), _mm256_set1_epi8(0x30));
    return _mm256_blend_epi32(lo, _mm256_or_si256(hl, hh), 0xAA);
}


#define K4_PAIR_TMAX 8
/* One token (decode): the pair kernel at T = 1 reads two rows, two
 * streams, which the hardware prefetcher follows badly here (as
 * cpu_gemm_q8.c's q8d_block): it prefetches in address order, 2 * 144
 * bytes per block, K4_DEC_AHEAD bytes past the pair. Under
 * Q36_QUANT_PATH_MAX=avx2 (one thread, min of 10-50, TSC ticks per row and
 * block): 10.6-11.0 from memory at K 1024 and 3584 and 10.7 from cache,
 * where k4_row1_avx2 (one row at a time, its codes' scales shuffled per 32
 * codes, its lanes folded and its float step per row) took 13.9-14.6 and
 * 13.4-13.6; 16 KiB ahead measured the same or a little slower. In an
 * expert's 16-row tiles the prefetch runs up to 8 KiB into rows the next
 * tile reads, or past the expert's slab once per slab. */
#define K4_DEC_AHEAD 8192
#define K4_PAIR_T 4     /* tokens per pass: 3 -> 6.7, 4 -> 6.3, 6 -> 6.2 ns-ticks, noisy */
/* Two rows x T tokens (T <= 4), row r in 128-bit lane r of every vector
 * (k4_block4xT's layout at half the width): per sub-block k the two
 * 16-code halves of both rows are two vectors, each taken by one
 * vpmaddubsw against the token's 16 activations broadcast to both lanes;
 * the two int16 results are added first (each at most 2 * 15 * 128, the
 * sum < 2^15: exact) and take one vpmaddwd against the lane's scale, since
 * elements e and e + 16 of a sub-block fall in the same int32 lane j =
 * (e mod 16) / 4. The int32 lanes then hold exactly k4_dot_order's four
 * lanes per row, and the float step (converted, times d, minus mins times
 * dmin, fused into the accumulator times the token's scale) runs on both
 * rows at once: the same operations per lane, the same bits. */
/* A pair's block step for one token: is the int32 code-sum lanes, ms
 * the mins x sub-block sums, dv/dm d and dmin per lane, at the token's
 * activation block (its f32 scale first). */
XAVX2 static inline __m256 k4_pair_acc(__m256 acc, __m256i is, __m256i ms, __m256 dv, __m256 dm,
                                       const uint8_t *at)
{
    float da;
    memcpy(&da, at, 4);
    const __m256 f = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(ms), dm, _mm256_mul_ps(_mm256_cvtepi32_ps(is), dv));
    return _mm256_fmadd_ps(f, _mm256_set1_ps(da), acc);
}

/* The pair's two results: (l0 + l2) + (l1 + l3) per 128-bit lane. */
XAVX2 static inline void k4_pair_end(__m256 acc, float *y, int two)
{
    __m256 x = _mm256_add_ps(acc, _mm256_shuffle_ps(acc, acc, 0x4E));
    x = _mm256_add_ps(x, _mm256_shuffle_ps(x, x, 0xB1));
    y[0] = _mm256_cvtss_f32(x);
    if (two)
        y[1] = _mm_cvtss_f32(_mm256_extractf128_ps(x, 1));
}

XAVX2 __attribute__((always_inline)) static inline void
k4_pairxT_avx2(int64_t nb, const uint8_t *w0, const uint8_t *w1, const uint8_t *a, uint64_t arb,
               const int T, float *y, int64_t ldy, int two)
{
    const __m256i m4 = _mm256_set1_epi8(15);
    const __m256i didx = _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2), midx = _mm256_setr_epi32(1, 1, 1, 1, 3, 3, 3, 3);
    __m256 acc[K4_PAIR_TMAX];
#pragma GCC unroll 8
    for (int t = 0; t < T; t++)
        acc[t] = _mm256_setzero_ps();
    const uint8_t *pf = w1 + (w1 - w0) + K4_DEC_AHEAD;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *wb[2] = { w0 + b * K4_WB, w1 + b * K4_WB };
        if (T == 1) {
#pragma GCC unroll 5
            for (int i = 0; i < 5; i++)
                _mm_prefetch((const char *)(pf + 2 * K4_WB * b + 64 * i), _MM_HINT_T0);
        }
        const uint8_t *ab = a + b * K4_AB;
        const __m256i scmn = k4_scales2(wb);
        const __m256i sc16 = _mm256_unpacklo_epi8(scmn, _mm256_setzero_si256());
        __m256i isum[K4_PAIR_TMAX];
#pragma GCC unroll 8
        for (int t = 0; t < T; t++)
            isum[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            const __m256i v0 = _mm256_inserti128_si256(
                _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(wb[0] + 16 + 32 * c))),
                _mm_loadu_si128((const __m128i *)(wb[1] + 16 + 32 * c)), 1);
            const __m256i v1 = _mm256_inserti128_si256(
                _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(wb[0] + 32 + 32 * c))),
                _mm_loadu_si128((const __m128i *)(wb[1] + 32 + 32 * c)), 1);
#pragma GCC unroll 2
            for (int hi = 0; hi < 2; hi++) {
                const int k = 2 * c + hi;
                const __m256i c0 = hi ? _mm256_and_si256(_mm256_srli_epi16(v0, 4), m4) : _mm256_and_si256(v0, m4);
                const __m256i c1 = hi ? _mm256_and_si256(_mm256_srli_epi16(v1, 4), m4) : _mm256_and_si256(v1, m4);
                const __m256i sc = _mm256_shuffle_epi8(sc16, _mm256_set1_epi16((short)(2 * k | (2 * k + 1) << 8)));
#pragma GCC unroll 8
                for (int t = 0; t < T; t++) {
                    const uint8_t *q8 = ab + (uint64_t)t * arb + 4 + 32 * k;
                    const __m256i p0 = _mm256_maddubs_epi16(c0, _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)q8)));
                    const __m256i p1 = _mm256_maddubs_epi16(c1, _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(q8 + 16))));
                    isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_add_epi16(p0, p1), sc));
                }
            }
        }
        const __m256i mn16 = _mm256_unpackhi_epi8(scmn, _mm256_setzero_si256());
        const __m128 dd = _mm_cvtph_ps(_mm_setr_epi32((int)rd32(wb[0]), (int)rd32(wb[1]), 0, 0));
        const __m256 dv = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(dd), didx);
        const __m256 dm = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(dd), midx);
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
            const uint8_t *at = ab + (uint64_t)t * arb;
            const __m256i b32 = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(at + 260)), _mm256_set1_epi16(1));
            const __m128i b16 = _mm_packs_epi32(_mm256_castsi256_si128(b32), _mm256_extracti128_si256(b32, 1));
            const __m256i ms = _mm256_madd_epi16(mn16, _mm256_broadcastsi128_si256(b16));
            acc[t] = k4_pair_acc(acc[t], isum[t], ms, dv, dm, at);
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; t++)
        k4_pair_end(acc[t], y + t * ldy, two);
}

#define K4_PAIRX(T)                                                                             \
    XAVX2 static void k4_pairx##T##_avx2(int64_t nb, const uint8_t *w0, const uint8_t *w1,      \
                                         const uint8_t *a, uint64_t arb, float *y, int64_t ldy, \
                                         int two)                                               \
    {                                                                                           \
        k4_pairxT_avx2(nb, w0, w1, a, arb, T, y, ldy, two);                                     \
    }
K4_PAIRX(1) K4_PAIRX(2) K4_PAIRX(3) K4_PAIRX(4) K4_PAIRX(5) K4_PAIRX(6) K4_PAIRX(7) K4_PAIRX(8)

/* The same pair kernel with its per-block work done once per call, and
 * two sub-blocks to a vpmaddwd: a 16-row x 64-token tile meets each pair
 * of rows in 16 groups of 4 tokens, and each group would decode the
 * pair's scales, interleave its rows' code bytes and split their nibbles
 * again. k4p_pack writes that once per pair and block (K4P_BYTES), and
 * the activations' prepared forms (cpu_mix_prep_row: once per matmul where
 * cpu_matmul.c makes them, else once per group) are in cpu_gemm_mix.h's order
 * for sub-blocks k = 2c and k' = 2c + 1 (one 32-byte stretch of codes, low
 * and high nibbles; a row is a 128-bit lane here, so the 16 bytes of half
 * h of mix_pair's v0 and v1 are vectors v = 2h and 2h + 1). Four
 * vpmaddubsw (one per v) summed in int16 (each at most 2 * 15 * 128, four
 * < 2^15: exact) put in lanes 2j and 2j + 1 the eight products of k and
 * of k' whose int32 lane is j, and one vpmaddwd against (sc_k, sc_k')
 * alternating adds both into lane j: per 64 codes of a row 2 vpmaddubsw
 * and half a vpmaddwd where
 * k4_pairxT_avx2 takes 2 and 1 (the multiplier is what the AVX2 tile waits
 * on: on a Zen 1 it has one such port and splits each 256-bit op in two).
 * The int32 lanes are k4_pairxT_avx2's, so are the float operations: the
 * same bits. The forms carry the activations' sums of 32 as int16 for
 * the mins. Rows whose pack would pass K4P_PACK (K > 16896), and
 * tiles of one group of tokens, take k4_pairxT_avx2. (The pack before
 * this one, one vpmaddwd per sub-block: 6.1-6.6 -> 5.9-6.0 ticks against
 * k4_pairxT_avx2, as above; broadcasting the activations into a pack
 * measured slower there, 6.2-7.2, the packs crowding L1 at K 3584.) */
#define K4P_BYTES 736          /* 16 code vectors, 4 scale-pair vectors, mins, d, dmin */
#define K4P_PACK (48 * 1024)   /* bytes of weight pack on the stack */
#define K4P_NB (K4P_PACK / K4P_BYTES)

XAVX2 static void k4p_pack(int64_t nb, const uint8_t *w0, const uint8_t *w1, uint8_t *pk)
{
    const __m256i m4 = _mm256_set1_epi8(15);
    const __m256i didx = _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2), midx = _mm256_setr_epi32(1, 1, 1, 1, 3, 3, 3, 3);
    for (int64_t b = 0; b < nb; b++, pk += K4P_BYTES) {
        const uint8_t *wb[2] = { w0 + b * K4_WB, w1 + b * K4_WB };
        __m256i *v = (__m256i *)pk;
        const __m256i scmn = k4_scales2(wb);
        const __m256i sc16 = _mm256_unpacklo_epi8(scmn, _mm256_setzero_si256());
        for (int c = 0; c < 4; c++) {
            for (int h = 0; h < 2; h++) {
                const __m256i q = _mm256_inserti128_si256(
                    _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(wb[0] + 16 + 32 * c + 16 * h))),
                    _mm_loadu_si128((const __m128i *)(wb[1] + 16 + 32 * c + 16 * h)), 1);
                __m256i q0, q1;
                mix_pair(_mm256_and_si256(q, m4), _mm256_and_si256(_mm256_srli_epi16(q, 4), m4), &q0, &q1);
                _mm256_store_si256(v + 4 * c + 2 * h, q0);
                _mm256_store_si256(v + 4 * c + 2 * h + 1, q1);
            }
            /* int16 lanes sc_2c, sc_2c+1 alternating: bytes 2c and 2c + 1 of sc16's byte pairs */
            const __m256i pick = _mm256_setr_epi8(4 * c, -1, 4 * c + 2, -1, 4 * c, -1, 4 * c + 2, -1,
                                                  4 * c, -1, 4 * c + 2, -1, 4 * c, -1, 4 * c + 2, -1,
                                                  4 * c, -1, 4 * c + 2, -1, 4 * c, -1, 4 * c + 2, -1,
                                                  4 * c, -1, 4 * c + 2, -1, 4 * c, -1, 4 * c + 2, -1);
            _mm256_store_si256(v + 16 + c, _mm256_shuffle_epi8(sc16, pick));
        }
        _mm256_store_si256(v + 20, _mm256_unpackhi_epi8(scmn, _mm256_setzero_si256()));
        const __m128 dd = _mm_cvtph_ps(_mm_setr_epi32((int)rd32(wb[0]), (int)rd32(wb[1]), 0, 0));
        _mm256_store_ps((float *)(v + 21), _mm256_permutevar8x32_ps(_mm256_castps128_ps256(dd), didx));
        _mm256_store_ps((float *)(v + 22), _mm256_permutevar8x32_ps(_mm256_castps128_ps256(dd), midx));
    }
}

XAVX2 static inline __m256i k4p_b16(const uint8_t *p)
{
    return _mm256_broadcastsi128_si256(_mm_load_si128((const __m128i *)p));
}

XAVX2 __attribute__((always_inline)) static inline void
k4p_pairxT(int64_t nb, const uint8_t *pk, const uint8_t *a, uint64_t arb, const uint8_t *m,
           uint64_t mrb, const int T, float *y, int64_t ldy, int two)
{
    __m256 acc[4];
#pragma GCC unroll 4
    for (int t = 0; t < T; t++)
        acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, pk += K4P_BYTES) {
        const __m256i *v = (const __m256i *)pk;
        __m256i isum[4];
#pragma GCC unroll 4
        for (int t = 0; t < T; t++)
            isum[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            const __m256i c0 = _mm256_load_si256(v + 4 * c), c1 = _mm256_load_si256(v + 4 * c + 1);
            const __m256i c2 = _mm256_load_si256(v + 4 * c + 2), c3 = _mm256_load_si256(v + 4 * c + 3);
#pragma GCC unroll 4
            for (int t = 0; t < T; t++) {
                const uint8_t *q = m + (uint64_t)t * mrb + (b * 4 + c) * 64;
                const __m256i s = _mm256_add_epi16(
                    _mm256_add_epi16(_mm256_maddubs_epi16(c0, k4p_b16(q)), _mm256_maddubs_epi16(c1, k4p_b16(q + 32))),
                    _mm256_add_epi16(_mm256_maddubs_epi16(c2, k4p_b16(q + 16)), _mm256_maddubs_epi16(c3, k4p_b16(q + 48))));
                isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s, _mm256_load_si256(v + 16 + c)));
            }
        }
        const __m256i mn16 = _mm256_load_si256(v + 20);
        const __m256 dv = _mm256_load_ps((const float *)(v + 21)), dm = _mm256_load_ps((const float *)(v + 22));
        const uint8_t *ab = a + b * K4_AB;
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) {
            const __m256i ms = _mm256_madd_epi16(mn16, k4p_b16(m + (uint64_t)t * mrb + nb * MIX_ABYTES + b * 16));
            acc[t] = k4_pair_acc(acc[t], isum[t], ms, dv, dm, ab + (uint64_t)t * arb);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; t++)
        k4_pair_end(acc[t], y + t * ldy, two);
}

#define K4P_PAIRX(T)                                                                            \
    XAVX2 static void k4p_pairx##T(int64_t nb, const uint8_t *pk, const uint8_t *a, uint64_t arb, \
                                   const uint8_t *m, uint64_t mrb, float *y, int64_t ldy, int two) \
    {                                                                                           \
        k4p_pairxT(nb, pk, a, arb, m, mrb, T, y, ldy, two);                                     \
    }
K4P_PAIRX(1) K4P_PAIRX(2) K4P_PAIRX(3) K4P_PAIRX(4)

/* The tile over rows t of a with their prepared forms at m + t * mrb, or
 * (m NULL) forms made here for each group of 4 tokens. */
XAVX2 static void k4_tile(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr, const uint8_t *a,
                          uint64_t arb, const uint8_t *m, uint64_t mrb, int64_t nt, float *y, int64_t ldy)
{
    typedef void (*pair_fn)(int64_t, const uint8_t *, const uint8_t *, const uint8_t *, uint64_t,
                            float *, int64_t, int);
    static const pair_fn tab[K4_PAIR_TMAX] = {
        k4_pairx1_avx2, k4_pairx2_avx2, k4_pairx3_avx2, k4_pairx4_avx2,
        k4_pairx5_avx2, k4_pairx6_avx2, k4_pairx7_avx2, k4_pairx8_avx2,
    };
    const int64_t nb = K / 256;
    if (nt == 1) {
        for (int64_t r = 0; r < nr; r += 2) {
            const int two = nr - r >= 2;
            k4_pairx1_avx2(nb, w + (uint64_t)r * wrb, w + (uint64_t)(r + two) * wrb, a, arb, y + r, 1, two);
        }
        return;
    }

    /* an odd last row runs as a pair with itself, its second result not stored */
    /* the pack pays where a pair meets several groups of tokens */
    const int64_t pairs = K4P_PACK / (K4P_BYTES * nb);
    if (pairs >= 1 && nt > K4_PAIR_T) {
        typedef void (*pk_fn)(int64_t, const uint8_t *, const uint8_t *, uint64_t, const uint8_t *,
                              uint64_t, float *, int64_t, int);
        static const pk_fn ptab[4] = { k4p_pairx1, k4p_pairx2, k4p_pairx3, k4p_pairx4 };
        _Alignas(32) uint8_t pk[K4P_PACK];
        _Alignas(32) uint8_t mg[4 * K4P_NB * MIX_PREP_BYTES];
        const uint64_t grb = (uint64_t)nb * MIX_PREP_BYTES;
        for (int64_t r0 = 0; r0 < nr; r0 += 2 * pairs) {
            const int64_t r1 = nr - r0 < 2 * pairs ? nr : r0 + 2 * pairs;
            for (int64_t r = r0; r < r1; r += 2) {
                const int two = r1 - r >= 2;
                k4p_pack(nb, w + (uint64_t)r * wrb, w + (uint64_t)(r + two) * wrb,
                         pk + (r - r0) / 2 * nb * K4P_BYTES);
            }
            for (int64_t t0 = 0; t0 < nt; t0 += 4) {
                const int64_t u = nt - t0 < 4 ? nt - t0 : 4;
                const uint8_t *mt = m ? m + (uint64_t)t0 * mrb : mg;
                if (!m)
                    for (int64_t t = 0; t < u; t++)
                        cpu_mix_prep_row(K, a + (uint64_t)(t0 + t) * arb, mg + (uint64_t)t * grb);
                for (int64_t r = r0; r < r1; r += 2)
                    ptab[u - 1](nb, pk + (r - r0) / 2 * nb * K4P_BYTES, a + (uint64_t)t0 * arb, arb, mt,
                                m ? mrb : grb, y + t0 * ldy + r, ldy, r1 - r >= 2);
            }
        }
        return;
    }
    for (int64_t t0 = 0; t0 < nt; t0 += K4_PAIR_T) {
        const int64_t u = nt - t0 < K4_PAIR_T ? nt - t0 : K4_PAIR_T;
        for (int64_t r = 0; r < nr; r += 2) {
            const int two = nr - r >= 2;
            tab[u - 1](nb, w + (uint64_t)r * wrb, w + (uint64_t)(r + two) * wrb, a + (uint64_t)t0 * arb,
                       arb, y + t0 * ldy + r, ldy, two);
        }
    }
}

XAVX2 void cpu_gemm_q4_K_avx2(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                              const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    k4_tile(K, w, wrb, nr, a, arb, NULL, 0, nt, y, ldy);
}

static const cpu_tile_prep k4_prep_avx2 = { cpu_mix_prep_bytes, cpu_mix_prep_row, k4_tile };

const cpu_tile_prep *cpu_gemm_q4_K_avx2_prep(void)
{
    return &k4_prep_avx2;
}

const cpu_tile_prep *cpu_gemm_q4_K_prep(void)
{
    return cpu_gemm_q4_K() == cpu_gemm_q4_K_avx2 ? &k4_prep_avx2 : NULL;
}
#else
void cpu_gemm_q4_K_avx512vnni(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                              const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    cpu_gemm_q4_K_ref(K, w, wrb, nr, a, arb, nt, y, ldy);
}

void cpu_gemm_q4_K_avx2(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                        const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    cpu_gemm_q4_K_ref(K, w, wrb, nr, a, arb, nt, y, ldy);
}

const cpu_tile_prep *cpu_gemm_q4_K_avx2_prep(void)
{
    return NULL;
}

const cpu_tile_prep *cpu_gemm_q4_K_prep(void)
{
    return NULL;
}
#endif
