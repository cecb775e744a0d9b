/* cpu_gemm_k5.c: tile kernels (cpu_gemm.h) for Q5_K weights against Q8_K
 * activations whose every output has the bits of the quant module's
 * AVX-512 Q5_K dot (quant_vec_dot_fn_path(QT_Q5_K, QUANT_PATH_AVX512)),
 * which is what cpu_matmul.c's pick_dot takes for Q5_K on a CPU with
 * AVX-512 (the quant module has no VNNI kernel for it); and, at the end
 * of this file, one with the bits of its AVX2 dot, which pick_dot takes on
 * a CPU with AVX2 but no AVX-512. Elsewhere (plain C) there is no tile
 * (cpu_gemm_q5_K() is NULL).
 *
 * The order, per 256-element block and output: sixteen int32 lanes, lane i
 * holding the exact sum over the chunks c (64 elements) of sc_k times the
 * code x activation products of elements 4(i mod 8) .. +3 of sub-block
 * k = 2c + (i >= 8) (32 elements each); eight int32 min lanes, lane k
 * = m_k * (bsum_2k + bsum_2k+1); then acc_i = fma(d * da, (float)lane_i,
 * acc_i) and mins_k = fma(dmin * da, (float)min_k, mins_k), block after
 * block (d * da and dmin * da rounded once each); at the end the 16-lane
 * halving tree of acc (_mm512_reduce_add_ps) minus the 8-lane tree of
 * mins. The integer lanes are exact in any grouping; the float work is
 * fixed.
 *
 * Q5_K block (176 bytes): f16 d, f16 dmin, 12 bytes of eight 6-bit scales
 * and mins, 32 bytes qh (bit 2c + h of byte l: the fifth bit of element
 * 64c + 32h + l), 128 bytes qs (byte 32c + l: element 64c + l in its low
 * nibble, 64c + 32 + l in its high one).
 *
 * AVX-512 VNNI: 2 weight rows x up to 6 tokens per pass over the blocks.
 * Per block, row and chunk the 64 codes are unpacked once (the chunk's 32
 * bytes in both halves, low nibbles kept in the low half, high ones in the
 * high half, 16 added where the qh bit is set) and meet each token's 64
 * activations with vpmaddubsw (a pair <= 2 * 31 * 128) and vpdpwssd against
 * the scales (sc_2c in the low half, sc_2c+1 in the high one): exactly the
 * quant module's lanes. The two rows' min lanes share one vector per token
 * (row 0 in lanes 0-7, row 1 in 8-15). One token (decode): the quant
 * module's dot per row, the same bits.
 *
 * Measured (one thread, best of 3-5, loaded machine; ns per weight block x
 * token, tests/test_cpu_gemm_k5 bench, 16-row x 64-token tiles as mm_task):
 * K 1024 x N 3584 and K 3584 x N 1024 at 64 and 512 tokens: the AVX-512
 * dot per output 5.9-6.8 ns, the tile 2.5-3.3 ns (2.1-2.3x); 6 tokens per
 * pass ~7% faster than 4. End to end, one thread, 256-token prompt, the
 * 0.8b geometry cut to 4 layers and 8192 vocabulary rows, all Q5_K:
 * 1.01-1.08 s -> 0.59-0.67 s, logits byte-equal.
 */
#include "cpu_gemm.h"

#include <math.h>
#include <string.h>

#include "cpu_internal.h"
#include "../../quant/fp16.h"
#include "../../quant/quant.h"

#define K5_WB 176
#define K5_AB 292

/* scale sc and min m of sub-block k from the 12 bytes at s (the Q4_K/Q5_K
 * packing) */
static void k5_scale_min(int k, const uint8_t *s, int *sc, int *m)
{
    *sc = k < 4 ? s[k] & 63 : (s[k + 4] & 15) | (s[k - 4] >> 6) << 4;
    *m = k < 4 ? s[k + 4] & 63 : (s[k + 4] >> 4) | (s[k] >> 6) << 4;
}

float cpu_dot_q5_K_lanes_ref(int64_t K, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float acc[16] = { 0 }, mins[8] = { 0 };
    for (int64_t b = 0; b < K / 256; b++, w += K5_WB, a += K5_AB) {
        const uint8_t *qh = w + 16, *qs = w + 48;
        const int8_t *q8 = (const int8_t *)(a + 4);
        int32_t lane[16] = { 0 }, mlane[8];
        for (int k = 0; k < 8; k++) {
            int sc, m;
            k5_scale_min(k, w + 4, &sc, &m);
            const int c = k / 2, hi = k % 2;
            for (int l = 0; l < 32; l++) {
                const int code = (hi ? qs[32 * c + l] >> 4 : qs[32 * c + l] & 15) | ((qh[l] >> k) & 1) << 4;
                lane[8 * hi + l / 4] += sc * code * q8[32 * k + l];
            }
            int16_t b0, b1;
            memcpy(&b0, a + 260 + 4 * k, 2);
            memcpy(&b1, a + 262 + 4 * k, 2);
            mlane[k] = m * (b0 + b1);
        }
        uint16_t h;
        float da;
        memcpy(&da, a, 4);
        memcpy(&h, w, 2);
        const float dd = quant_f16_to_f32(h) * da;
        memcpy(&h, w + 2, 2);
        const float dm = quant_f16_to_f32(h) * da;
        for (int i = 0; i < 16; i++)
            acc[i] = fmaf(dd, (float)lane[i], acc[i]);
        for (int k = 0; k < 8; k++)
            mins[k] = fmaf(dm, (float)mlane[k], mins[k]);
    }
    return cpu_lane_sum(acc, 16) - cpu_lane_sum(mins, 8);
}

void cpu_gemm_q5_K_ref(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                       const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    for (int64_t t = 0; t < nt; t++)
        for (int64_t r = 0; r < nr; r++)
            y[t * ldy + r] = cpu_dot_q5_K_lanes_ref(K, w + (uint64_t)r * wrb, a + (uint64_t)t * arb);
}

cpu_tile_fn cpu_gemm_q5_K(void)
{
#if defined(__x86_64__)
    const quant_dot_fn o = quant_vec_dot_fn_path(QT_Q5_K, QUANT_PATH_AVX512);
    if (o && o == quant_vec_dot_fn(QT_Q5_K) && quant_path_available(QUANT_PATH_AVX512VNNI))
        return cpu_gemm_q5_K_avx512vnni;
    const quant_dot_fn o2 = quant_vec_dot_fn_path(QT_Q5_K, QUANT_PATH_AVX2);
    if (o2 && o2 == quant_vec_dot_fn(QT_Q5_K))
        return cpu_gemm_q5_K_avx2;
#endif
    return NULL;
}

#if defined(__x86_64__)
#include <immintrin.h>

#include "cpu_gemm_mix.h"

#define X512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define K5_TT 6    /* tokens per pass (4: ~7% slower, measured) */

/* Bytes 0-7: the eight scales, 8-15: the eight mins (k5_scale_min on one
 * vector; s the 12 bytes, 16 read, within the block). Dword lanes: 0 =
 * sc[0..3] = a0 & 0x3F.., 1 = sc[4..7] = (a2 & 0x0F..) | (a0 >> 2 &
 * 0x30..), 2 = m[0..3] = a1 & 0x3F.., 3 = m[4..7] = (a2 >> 4 & 0x0F..) |
 * (a1 >> 2 & 0x30..). */
X512 static inline __m128i k5_scmn(const uint8_t *s)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)s);
    const __m128i t = _mm_shuffle_epi32(v, 0x98), u = _mm_shuffle_epi32(v, 0x50);
    const __m128i lo = _mm_and_si128(t, _mm_set1_epi8(0x3F));
    const __m128i hl = _mm_and_si128(_mm_srlv_epi32(t, _mm_setr_epi32(0, 0, 0, 4)), _mm_set1_epi8(0x0F));
    const __m128i hh = _mm_and_si128(_mm_srli_epi32(u, 2), _mm_set1_epi8(0x30));
    return _mm_blend_epi32(lo, _mm_or_si128(hl, hh), 0xA);
}

/* the 8-lane tree (hsum) of v */
X512 static inline float k5_tree8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

/* Rows w[0..1] x tokens at[0..T-1], nb blocks: res[2t + r] = dot(row r,
 * token t). T is a constant after inlining. */
X512 __attribute__((always_inline)) static inline void
k5_block2xT(int64_t nb, const uint8_t *const *w, const uint8_t *const *at, const int T, float *res)
{
    const __m512i m4 = _mm512_set1_epi8(15), b16 = _mm512_set1_epi8(16);
    const __m512i half = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(1), 1);
    __m512 acc[2][K5_TT], mins[K5_TT];
#pragma GCC unroll 6
    for (int t = 0; t < T; t++) {
        acc[0][t] = acc[1][t] = _mm512_setzero_ps();
        mins[t] = _mm512_setzero_ps();
    }
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *ab[K5_TT];
        float da[K5_TT];
#pragma GCC unroll 6
        for (int t = 0; t < T; t++) {
            ab[t] = at[t] + b * K5_AB;
            memcpy(&da[t], ab[t], 4);
        }
        const uint8_t *w0 = w[0] + b * K5_WB, *w1 = w[1] + b * K5_WB;
        const __m128i scmn0 = k5_scmn(w0 + 4), scmn1 = k5_scmn(w1 + 4);
        /* int16 mins, each twice (against bsums 2k and 2k+1): row 0 low, row 1 high */
        const __m512i mn = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scmn0, scmn0))),
            _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scmn1, scmn1)), 1);
        /* d0 dmin0 d1 dmin1 */
        uint32_t h0, h1;
        memcpy(&h0, w0, 4);
        memcpy(&h1, w1, 4);
        const __m128 dd = _mm_cvtph_ps(_mm_setr_epi32((int)h0, (int)h1, 0, 0));
        const __m512 dmin = _mm512_castpd_ps(
            _mm512_insertf64x4(_mm512_castps_pd(_mm512_set1_ps(_mm_cvtss_f32(_mm_movehdup_ps(dd)))),
                               _mm256_castps_pd(_mm256_set1_ps(_mm_cvtss_f32(_mm_shuffle_ps(dd, dd, 3)))), 1));
#pragma GCC unroll 2
        for (int r = 0; r < 2; r++) {
            const uint8_t *wr = r ? w1 : w0;
            const __m512i scv = _mm512_castsi128_si512(_mm_cvtepu8_epi16(r ? scmn1 : scmn0));
            const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(wr + 16)));
            __m512i isum[K5_TT];
#pragma GCC unroll 6
            for (int t = 0; t < T; t++)
                isum[t] = _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) {
                const __m512i z = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(wr + 48 + 32 * c)));
                __m512i code = _mm512_and_si512(_mm512_mask_blend_epi64(0xF0, z, _mm512_srli_epi16(z, 4)), m4);
                const __mmask64 hb = _mm512_test_epi8_mask(
                    qh, _mm512_inserti64x4(_mm512_set1_epi8((char)(1 << (2 * c))),
                                           _mm256_set1_epi8((char)(1 << (2 * c + 1))), 1));
                code = _mm512_mask_add_epi8(code, hb, code, b16);
                /* int16 scale sc_2c in the low half, sc_2c+1 in the high one */
                const __m512i s = _mm512_permutexvar_epi16(_mm512_add_epi16(half, _mm512_set1_epi16((short)(2 * c))),
                                                           scv);
#pragma GCC unroll 6
                for (int t = 0; t < T; t++)
                    isum[t] = _mm512_dpwssd_epi32(isum[t], _mm512_maddubs_epi16(code, _mm512_loadu_si512(ab[t] + 4 + 64 * c)),
                                                  s);
            }
            const float d = _mm_cvtss_f32(r ? _mm_movehl_ps(dd, dd) : dd);
#pragma GCC unroll 6
            for (int t = 0; t < T; t++)
                acc[r][t] = _mm512_fmadd_ps(_mm512_set1_ps(d * da[t]), _mm512_cvtepi32_ps(isum[t]), acc[r][t]);
        }
#pragma GCC unroll 6
        for (int t = 0; t < T; t++) {
            const __m512i bs = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(ab[t] + 260)));
            const __m512 dm = _mm512_mul_ps(dmin, _mm512_set1_ps(da[t]));
            mins[t] = _mm512_fmadd_ps(dm, _mm512_cvtepi32_ps(_mm512_madd_epi16(mn, bs)), mins[t]);
        }
    }
#pragma GCC unroll 6
    for (int t = 0; t < T; t++) {
        res[2 * t] = _mm512_reduce_add_ps(acc[0][t]) - k5_tree8(_mm512_castps512_ps256(mins[t]));
        res[2 * t + 1] = _mm512_reduce_add_ps(acc[1][t]) - k5_tree8(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(mins[t]), 1)));
    }
}

#define K5_PASS(T)                                                                          \
    X512 __attribute__((noinline)) static void k5_pass##T(int64_t nb, const uint8_t *const *w, \
                                                         const uint8_t *const *at, float *res) \
    {                                                                                       \
        k5_block2xT(nb, w, at, T, res);                                                     \
    }
K5_PASS(1)
K5_PASS(2)
K5_PASS(3)
K5_PASS(4)
K5_PASS(5)
K5_PASS(6)

X512 void cpu_gemm_q5_K_avx512vnni(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                                   const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    const int64_t nb = K / 256;
    if (nt == 1) {
        const quant_dot_fn dot = quant_vec_dot_fn_path(QT_Q5_K, QUANT_PATH_AVX512);
        for (int64_t r = 0; r < nr; r++)
            y[r] = dot(K, w + (uint64_t)r * wrb, a);
        return;
    }
    for (int64_t r0 = 0; r0 < nr; r0 += 2) {
        const int rows = nr - r0 < 2 ? 1 : 2;
        const uint8_t *wr[2] = { w + (uint64_t)r0 * wrb, w + (uint64_t)(r0 + rows - 1) * wrb };
        for (int64_t t0 = 0; t0 < nt; t0 += K5_TT) {
            const int T = nt - t0 < K5_TT ? (int)(nt - t0) : K5_TT;
            const uint8_t *at[K5_TT];
            for (int t = 0; t < T; t++)
                at[t] = a + (uint64_t)(t0 + t) * arb;
            float res[2 * K5_TT];
            switch (T) {
            case 6: k5_pass6(nb, wr, at, res); break;
            case 5: k5_pass5(nb, wr, at, res); break;
            case 4: k5_pass4(nb, wr, at, res); break;
            case 3: k5_pass3(nb, wr, at, res); break;
            case 2: k5_pass2(nb, wr, at, res); break;
            default: k5_pass1(nb, wr, at, res); break;
            }
            for (int t = 0; t < T; t++)
                memcpy(y + (t0 + t) * ldy + r0, res + 2 * t, sizeof(float) * (size_t)rows);
        }
    }
}
/* ---- AVX2: 1 row x up to 4 tokens, the bits of quant_dot_q5_K_avx2 ----- */

/* The quant module's AVX2 Q5_K dot (dot_k45_avx2), which pick_dot takes
 * on a CPU without AVX-512: per block eight int32 lanes, lane m holding
 * the exact sum over the chunks c of sc_2c times the products of elements
 * 4m .. 4m+3 of sub-block 2c plus sc_2c+1 times those of 2c+1; acc =
 * fma(da * d, (float)lane, acc) per lane; the mins as one float per
 * output, mins += da * dmin * (float)msum block after block (msum the
 * exact sum of m_k * (bsum_2k + bsum_2k+1); separate multiplies and add,
 * as C writes them: no contraction under -std=c11); at the end the 8-lane
 * tree of acc (halves, then 0+2 and 1+3, then the two) minus mins.
 * The tile packs each row once per call (K5P_BYTES a block: the 5-bit
 * codes of sub-blocks 2c and 2c + 1 in cpu_gemm_mix.h's order, their
 * scales alternating, the mins doubled for the bsums, d and dmin) and the
 * token group's activations once (their prepared forms, cpu_gemm_mix.h;
 * once per matmul where cpu_matmul.c makes them): two vpmaddubsw summed in
 * int16 (each at most 2 * 31 * 128) and one vpmaddwd per 64 elements,
 * where the dot takes two of each. Tiles of at most 4 tokens (decode) and
 * rows whose pack would pass K5P_PACK (K > 27904) take the dot per
 * output: the same bits. */
#define XAVX2 __attribute__((target("avx2,fma,f16c")))
#define K5P_BYTES 448          /* 8 code vectors, 4 scale-pair vectors, the mins, d and dmin */
#define K5P_PACK (48 * 1024)
#define K5P_NB (K5P_PACK / K5P_BYTES)

XAVX2 static void k5p_pack(int64_t nb, const uint8_t *w, uint8_t *pk)
{
    const __m256i m4 = _mm256_set1_epi8(15), b16 = _mm256_set1_epi8(16);
    for (int64_t b = 0; b < nb; b++, w += K5_WB, pk += K5P_BYTES) {
        __m256i *v = (__m256i *)pk;
        const __m256i qh = _mm256_loadu_si256((const __m256i *)(w + 16));
        int16_t mn[16];
        for (int c = 0; c < 4; c++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(w + 48 + 32 * c));
            const __m256i bl = _mm256_set1_epi8((char)(1 << (2 * c))), bh = _mm256_set1_epi8((char)(1 << (2 * c + 1)));
            const __m256i lo = _mm256_or_si256(_mm256_and_si256(q, m4),
                                               _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, bl), bl), b16));
            const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4),
                                               _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, bh), bh), b16));
            mix_pair(lo, hi, v + 2 * c, v + 2 * c + 1);
            int sc0, sc1, m0, m1;
            k5_scale_min(2 * c, w + 4, &sc0, &m0);
            k5_scale_min(2 * c + 1, w + 4, &sc1, &m1);
            _mm256_store_si256(v + 8 + c, _mm256_set1_epi32(sc0 | sc1 << 16));
            mn[4 * c] = mn[4 * c + 1] = (int16_t)m0;
            mn[4 * c + 2] = mn[4 * c + 3] = (int16_t)m1;
        }
        _mm256_store_si256(v + 12, _mm256_loadu_si256((const __m256i *)mn));
        uint16_t h[2];
        memcpy(h, w, 4);
        float *f = (float *)(v + 13);
        f[0] = quant_f16_to_f32(h[0]);
        f[1] = quant_f16_to_f32(h[1]);
    }
}

XAVX2 __attribute__((always_inline)) static inline void
k5p_row1xT(int64_t nb, const uint8_t *pk, const uint8_t *m, uint64_t mrb, const uint8_t *const *at, const int T,
           float *res)
{
    __m256 acc[4];
    float mins[4];
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) {
        acc[t] = _mm256_setzero_ps();
        mins[t] = 0.0f;
    }
    for (int64_t b = 0; b < nb; b++, pk += K5P_BYTES) {
        const __m256i *v = (const __m256i *)pk;
        __m256i isum[4];
#pragma GCC unroll 4
        for (int t = 0; t < T; t++)
            isum[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            const __m256i c0 = _mm256_load_si256(v + 2 * c), c1 = _mm256_load_si256(v + 2 * c + 1);
            const __m256i s16 = _mm256_load_si256(v + 8 + c);
#pragma GCC unroll 4
            for (int t = 0; t < T; t++) {
                const __m256i *q = (const __m256i *)(m + (uint64_t)t * mrb + (b * 4 + c) * 64);
                const __m256i s = _mm256_add_epi16(_mm256_maddubs_epi16(c0, _mm256_loadu_si256(q)),
                                                   _mm256_maddubs_epi16(c1, _mm256_loadu_si256(q + 1)));
                isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s, s16));
            }
        }
        const __m256i mn = _mm256_load_si256(v + 12);
        const float dw = ((const float *)(v + 13))[0], dmin = ((const float *)(v + 13))[1];
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) {
            const uint8_t *ab = at[t] + b * K5_AB;
            float da;
            memcpy(&da, ab, 4);
            const __m256i p = _mm256_madd_epi16(mn, _mm256_loadu_si256((const __m256i *)(ab + 260)));
            __m128i ms = _mm_add_epi32(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
            ms = _mm_add_epi32(ms, _mm_shuffle_epi32(ms, 0x4E));
            ms = _mm_add_epi32(ms, _mm_shuffle_epi32(ms, 0xB1));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(da * dw), _mm256_cvtepi32_ps(isum[t]), acc[t]);
            const float dm = da * dmin;
            const float mt = dm * (float)_mm_cvtsi128_si32(ms);
            mins[t] = mins[t] + mt;
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; t++) {
        __m128 x = _mm_add_ps(_mm256_castps256_ps128(acc[t]), _mm256_extractf128_ps(acc[t], 1));
        x = _mm_add_ps(x, _mm_movehl_ps(x, x));
        x = _mm_add_ss(x, _mm_movehdup_ps(x));
        res[t] = _mm_cvtss_f32(x) - mins[t];
    }
}

#define K5P_ROW(T)                                                                               \
    XAVX2 __attribute__((noinline)) static void k5p_row##T(int64_t nb, const uint8_t *pk,        \
                                                          const uint8_t *m, uint64_t mrb,        \
                                                          const uint8_t *const *at, float *res)  \
    {                                                                                            \
        k5p_row1xT(nb, pk, m, mrb, at, T, res);                                                  \
    }
K5P_ROW(1)
K5P_ROW(2)
K5P_ROW(3)
K5P_ROW(4)

/* The tile over rows t of a with their prepared forms at m + t * mrb, or
 * (m NULL) forms made per group of tokens. */
XAVX2 static void k5_tile(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr, const uint8_t *a,
                          uint64_t arb, const uint8_t *m, uint64_t mrb, int64_t nt, float *y, int64_t ldy)
{
    const int64_t nb = K / 256;
    const int64_t rows = K5P_PACK / (K5P_BYTES * nb);
    if (rows < 1 || nt <= 4) {
        const quant_dot_fn dot = quant_vec_dot_fn_path(QT_Q5_K, QUANT_PATH_AVX2);
        for (int64_t t = 0; t < nt; t++)
            for (int64_t r = 0; r < nr; r++)
                y[t * ldy + r] = dot(K, w + (uint64_t)r * wrb, a + (uint64_t)t * arb);
        return;
    }
    static const mix_row_fn ptab[4] = { k5p_row1, k5p_row2, k5p_row3, k5p_row4 };
    _Alignas(32) uint8_t pk[K5P_PACK];
    _Alignas(32) uint8_t mg[4 * K5P_NB * MIX_PREP_BYTES];
    mix_row_tiles(nb, w, wrb, nr, a, arb, m, mrb, nt, y, ldy, rows, K5P_BYTES, k5p_pack, ptab, pk, mg);
}

XAVX2 void cpu_gemm_q5_K_avx2(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                              const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    k5_tile(K, w, wrb, nr, a, arb, NULL, 0, nt, y, ldy);
}

static const cpu_tile_prep k5_prep_avx2 = { cpu_mix_prep_bytes, cpu_mix_prep_row, k5_tile };

const cpu_tile_prep *cpu_gemm_q5_K_avx2_prep(void)
{
    return &k5_prep_avx2;
}

const cpu_tile_prep *cpu_gemm_q5_K_prep(void)
{
    return cpu_gemm_q5_K() == cpu_gemm_q5_K_avx2 ? &k5_prep_avx2 : NULL;
}
#else
void cpu_gemm_q5_K_avx512vnni(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                              const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    cpu_gemm_q5_K_ref(K, w, wrb, nr, a, arb, nt, y, ldy);
}

void cpu_gemm_q5_K_avx2(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                        const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    cpu_gemm_q5_K_ref(K, w, wrb, nr, a, arb, nt, y, ldy);
}

const cpu_tile_prep *cpu_gemm_q5_K_avx2_prep(void)
{
    return NULL;
}

const cpu_tile_prep *cpu_gemm_q5_K_prep(void)
{
    return NULL;
}
#endif
