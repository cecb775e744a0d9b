/* cpu_gemm_k6.c: tile kernels (cpu_gemm.h) for Q6_K weights against Q8_K
 * activations whose every output has the bits of cpu_dot_q6_K_ggml (the
 * per-output dot cpu_matmul.c's pick_dot takes for Q6_K: ggml's x86 float
 * order, so llama.cpp's bits): the plain C reference, AVX2 and AVX-512 VNNI.
 *
 * The order (cpu_qdot.c): per 256-element block and output, eight int32
 * lanes; lane L holds the exact sum over the elements x with
 * (x mod 32) / 4 == L of sc[x / 16] * code[x] * q8[x], minus
 * 32 * (bsum_2L * sc_2L + bsum_2L+1 * sc_2L+1); then
 * acc_L = fma(d, (float)lane_L, acc_L) with d = da * f16(dw), block after
 * block, and the eight lanes meet as cpu_lane_sum's halving tree. The
 * integer lanes are exact in any grouping, so a kernel is free in how it
 * forms them; the float work is fixed: one multiply for d, one convert and
 * one fma per lane and block, the same tree at the end.
 *
 * Q6_K block (210 bytes): 128 bytes ql (low 4 bits), 64 bytes qh (high 2
 * bits), 16 int8 sub-block scales, f16 d. For a 64-element chunk c of the
 * activation order (c = 2j + h), the 64 bytes ql[64j .. 64j+63] hold its
 * low bits in order (h = 0: low nibbles, h = 1: high nibbles), and the 32
 * bytes qh[32j ..] twice over give the high bits (bit pair 2(2h) for the
 * first 32 elements, 2(2h+1) for the next 32).
 *
 * AVX-512 VNNI: 4 weight rows x up to 4 tokens per pass over the blocks
 * (one token: k6_dec1, row by row). Per block, row and chunk the
 * 64 codes are unpacked once and meet each token's 64 activations with
 * vpmaddubsw (a pair <= 2 * 63 * 128, no saturation) and vpdpwssd against
 * the sub-block scales (int16 lane k of chunk c: sc[4c + k/8]), so int32
 * lane i of the 16 holds elements 4i..4i+3 of the chunk; lanes i and i+8
 * are the same ggml lane and are added (exact) when the rows of a pair are
 * folded into one vector: row 2p in lanes 0-7, row 2p+1 in lanes 8-15, which
 * then take the offset, the convert and the fma as 8-lane outputs. So the
 * float operations of an output involve only its own row and token:
 * batch-invariant bits.
 * AVX2: one row x up to 4 tokens, one 8-lane output per register, groups
 * of 32 elements as cpu_qdot.c's AVX2 dot (codes unpacked once per row and
 * group for all the tokens).
 *
 * Measured (one thread, best of 5, loaded machine; ns per weight block x
 * token, tests/test_cpu_gemm_k6 bench, 16-row x 64-token tiles as
 * mm_task): K 1024 x N 3584 and K 3584 x N 1024 at 64 and 512 tokens:
 * per-output dot 11.9-14.8 ns, AVX2 tile 5.7-7.4 ns, AVX-512 tile
 * 2.2-2.6 ns (4.7-5.4x). Tokens per pass: 4, 5 and 6 within noise of each
 * other (2.2-2.6 ns); 6 spills (2 x 6 sums + 2 x 6 accumulators), 4 does
 * not and divides the 64-token tile. Decode, weights streamed from memory
 * (K 1024 x N 65536, 55 MB): dot 17 ns, the 4-row pass at one token
 * 16-17 ns, k6_dec1 5.9 ns. End to end, one thread, 256-token prompt, the
 * 0.8b geometry cut to 4 layers and 8192 vocabulary rows, all Q6_K:
 * 1.51-1.96 s -> 0.49-0.64 s, logits byte-equal.
 */
#include "cpu_gemm.h"

#include <string.h>

#include "cpu_internal.h"
#include "../../quant/fp16.h"
#include "../../quant/quant.h"

#define K6_WB 210
#define K6_AB 292

void cpu_gemm_q6_K_ref(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                       const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    for (int64_t t = 0; t < nt; t++)
        for (int64_t r = 0; r < nr; r++)
            y[t * ldy + r] = cpu_dot_q6_K_ggml_ref(K, w + (uint64_t)r * wrb, a + (uint64_t)t * arb);
}

cpu_tile_fn cpu_gemm_q6_K(void)
{
#if defined(__x86_64__)
    if (quant_path_available(QUANT_PATH_AVX512VNNI))
        return cpu_gemm_q6_K_avx512vnni;
    if (quant_path_available(QUANT_PATH_AVX2))
        return cpu_gemm_q6_K_avx2;
#endif
    return cpu_gemm_q6_K_ref;
}

#if defined(__x86_64__)
#include <immintrin.h>

#include "cpu_gemm_mix.h"

#define X512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define XAVX2 __attribute__((target("avx2,fma,f16c")))
#define K6_TT 4    /* tokens per pass of the AVX-512 kernel (at most 8) */

static inline uint16_t rd16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* ---- AVX-512 VNNI: 4 rows (2 pairs) x T tokens ------------------------- */

/* cpu_lane_sum's tree over each 8-lane half: the result of lanes 0-7 in
 * lane 0, of lanes 8-15 in lane 8 (each add one of the tree's, operands
 * possibly swapped: the same bits). */
X512 static inline __m512 k6_tree2(__m512 v)
{
    v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
    v = _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)));
}

/* int16 lane k: k / 8, the sub-block of a chunk's element pair k */
X512 static inline __m512i k6_sub(void)
{
    return _mm512_setr_epi32(0, 0, 0, 0, 0x00010001, 0x00010001, 0x00010001, 0x00010001, 0x00020002, 0x00020002,
                             0x00020002, 0x00020002, 0x00030003, 0x00030003, 0x00030003, 0x00030003);
}

/* The high-bit bytes qh[32j .. 32j+31] of half j, twice: as they are in
 * the low 256 bits, shifted right by 2 in the high ones. */
X512 static inline __m512i k6_high(const uint8_t *qh)
{
    const __m256i h = _mm256_loadu_si256((const __m256i *)qh);
    return _mm512_inserti64x4(_mm512_castsi256_si512(h), _mm256_srli_epi16(h, 2), 1);
}

/* The 64 codes (0..63) of chunk 2j + hh in activation order, from the 64
 * low-bit bytes l of half j and its k6_high h2. */
X512 static inline __m512i k6_codes(__m512i l, __m512i h2, const int hh)
{
    const __m512i m4 = _mm512_set1_epi8(15), m30 = _mm512_set1_epi8(0x30);
    return hh ? _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4), _mm512_and_si512(h2, m30))
              : _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_and_si512(_mm512_slli_epi16(h2, 4), m30));
}

/* Rows w[0..3] x tokens at[0..T-1], nb blocks: res[4t + r] = dot(row r,
 * token t). T is a constant after inlining. Row pairs run one after the
 * other within a block, each pair's lanes folded and accumulated in f32 as
 * soon as it is done (2 x T running int32 sums, 2 x T accumulators). */
X512 __attribute__((always_inline)) static inline void
k6_block4xT(int64_t nb, const uint8_t *const *w, const uint8_t *const *at, const int T, float *res)
{
    const __m512i sub = k6_sub();
    __m512 acc[2][8];
#pragma GCC unroll 2
    for (int p = 0; p < 2; p++)
#pragma GCC unroll 8
        for (int t = 0; t < T; t++)
            acc[p][t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *ab[8];
#pragma GCC unroll 8
        for (int t = 0; t < T; t++)
            ab[t] = at[t] + b * K6_AB;
#pragma GCC unroll 2
        for (int p = 0; p < 2; p++) {
            const uint8_t *wa = w[2 * p] + b * K6_WB, *wb = w[2 * p + 1] + b * K6_WB;
            /* int16 scales: row 2p's 16 in lanes 0-15, row 2p+1's in 16-31 */
            const __m512i sc2 = _mm512_inserti64x4(
                _mm512_castsi256_si512(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wa + 192)))),
                _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wb + 192))), 1);
            const __m512 dw = _mm512_cvtph_ps(_mm256_set_m128i(_mm_set1_epi16((short)rd16(wb + 208)),
                                                               _mm_set1_epi16((short)rd16(wa + 208))));
            __m512i isum[2][8];
#pragma GCC unroll 2
            for (int rr = 0; rr < 2; rr++) {
                const uint8_t *wr = rr ? wb : wa;
#pragma GCC unroll 8
                for (int t = 0; t < T; t++)
                    isum[rr][t] = _mm512_setzero_si512();
#pragma GCC unroll 2
                for (int j = 0; j < 2; j++) {
                    const __m512i l = _mm512_loadu_si512(wr + 64 * j), h2 = k6_high(wr + 128 + 32 * j);
#pragma GCC unroll 2
                    for (int hh = 0; hh < 2; hh++) {
                        const int c = 2 * j + hh;
                        const __m512i code = k6_codes(l, h2, hh);
                        /* int16 lane k: sc[4c + k/8] of this row */
                        const __m512i pick = _mm512_add_epi16(sub, _mm512_set1_epi16((short)(16 * rr + 4 * c)));
                        const __m512i sc = _mm512_permutexvar_epi16(pick, sc2);
#pragma GCC unroll 8
                        for (int t = 0; t < T; t++) {
                            const __m512i q = _mm512_maddubs_epi16(code, _mm512_loadu_si512(ab[t] + 4 + 64 * c));
                            isum[rr][t] = _mm512_dpwssd_epi32(isum[rr][t], q, sc);
                        }
                    }
                }
            }
#pragma GCC unroll 8
            for (int t = 0; t < T; t++) {
                const __m512i lanes = _mm512_add_epi32(_mm512_shuffle_i64x2(isum[0][t], isum[1][t], 0x44),
                                                       _mm512_shuffle_i64x2(isum[0][t], isum[1][t], 0xEE));
                const __m512i bs = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(ab[t] + 260)));
                const __m512i off = _mm512_slli_epi32(_mm512_madd_epi16(bs, sc2), 5);
                float da;
                memcpy(&da, ab[t], 4);
                const __m512 d = _mm512_mul_ps(_mm512_set1_ps(da), dw);
                acc[p][t] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(_mm512_sub_epi32(lanes, off)), acc[p][t]);
            }
        }
    }
#pragma GCC unroll 2
    for (int p = 0; p < 2; p++)
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
            const __m512 v = k6_tree2(acc[p][t]);
            res[4 * t + 2 * p] = _mm512_cvtss_f32(v);
            res[4 * t + 2 * p + 1] = _mm_cvtss_f32(_mm512_extractf32x4_ps(v, 2));
        }
}

/* One instance per T, each its own function, so that the register
 * allocator sees one block loop at a time. */
#define K6_PASS(T)                                                                          \
    X512 __attribute__((noinline)) static void k6_pass##T(int64_t nb, const uint8_t *const *w, \
                                                         const uint8_t *const *at, float *res) \
    {                                                                                       \
        k6_block4xT(nb, w, at, T, res);                                                     \
    }
K6_PASS(1)
K6_PASS(2)
K6_PASS(3)
K6_PASS(4)

/* One row, one token (decode), in the same lanes: a row's blocks are read
 * in address order (decode streams the weights from memory once; the
 * 4-row passes at T = 1 streamed slower, as cpu_gemm_k4.c measured for
 * Q4_K). The 16 int32 lanes fold to ggml's 8 (exact), then the 8-lane float
 * work of k6_block4xT. */
X512 static inline float k6_dec1(int64_t nb, const uint8_t *w, const uint8_t *a)
{
    __m512i pick[4];
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++)
        pick[c] = _mm512_add_epi16(k6_sub(), _mm512_set1_epi16((short)(4 * c)));
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, w += K6_WB, a += K6_AB) {
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(w + 192)));
        const __m512i sc = _mm512_castsi256_si512(sc16);
        __m512i isum = _mm512_setzero_si512();
#pragma GCC unroll 2
        for (int j = 0; j < 2; j++) {
            const __m512i l = _mm512_loadu_si512(w + 64 * j), h2 = k6_high(w + 128 + 32 * j);
#pragma GCC unroll 2
            for (int hh = 0; hh < 2; hh++) {
                const int c = 2 * j + hh;
                const __m512i q = _mm512_maddubs_epi16(k6_codes(l, h2, hh), _mm512_loadu_si512(a + 4 + 64 * c));
                isum = _mm512_dpwssd_epi32(isum, q, _mm512_permutexvar_epi16(pick[c], sc));
            }
        }
        const __m256i lanes = _mm256_add_epi32(_mm512_castsi512_si256(isum), _mm512_extracti64x4_epi64(isum, 1));
        const __m256i bs = _mm256_loadu_si256((const __m256i *)(a + 260));
        const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(bs, sc16), 5);
        float da;
        memcpy(&da, a, 4);
        const float d = da * _cvtsh_ss(rd16(w + 208));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_sub_epi32(lanes, off)), acc);
    }
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

X512 void cpu_gemm_q6_K_avx512vnni(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                                   const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    const int64_t nb = K / 256;
    if (nt == 1) {
        for (int64_t r = 0; r < nr; r++)
            y[r] = k6_dec1(nb, w + (uint64_t)r * wrb, a);
        return;
    }
    for (int64_t r0 = 0; r0 < nr; r0 += 4) {
        const int rows = nr - r0 < 4 ? (int)(nr - r0) : 4;
        const uint8_t *wr[4];
        for (int r = 0; r < 4; r++)
            wr[r] = w + (uint64_t)(r0 + (r < rows ? r : rows - 1)) * wrb;
        for (int64_t t0 = 0; t0 < nt; t0 += K6_TT) {
            const int T = nt - t0 < K6_TT ? (int)(nt - t0) : K6_TT;
            const uint8_t *at[K6_TT];
            for (int t = 0; t < T; t++)
                at[t] = a + (uint64_t)(t0 + t) * arb;
            float res[4 * K6_TT];
            switch (T) {
            case 4: k6_pass4(nb, wr, at, res); break;
            case 3: k6_pass3(nb, wr, at, res); break;
            case 2: k6_pass2(nb, wr, at, res); break;
            default: k6_pass1(nb, wr, at, res); break;
            }
            for (int t = 0; t < T; t++)
                memcpy(y + (t0 + t) * ldy + r0, res + 4 * t, sizeof(float) * (size_t)rows);
        }
    }
}

/* ---- AVX2: 1 row x T tokens --------------------------------------------- */

/* The row's codes of each 32-element group are unpacked once for the T
 * tokens; lane L of a token's 8 int32 lanes is ggml's lane L directly
 * (vpmaddubsw pairs, then vpmaddwd against the group's two scales: that of
 * its first 16 elements in the low 128-bit lane, of the next 16 in the
 * high one). The block's 16 scales are widened once with the even ones in
 * the low lane and the odd ones in the high lane, so one in-lane vpshufb
 * gives a group's pair, where two scalar broadcasts and an insert did.
 * Under Q36_QUANT_PATH_MAX=avx2 (one thread, min of 10-50, TSC ticks at
 * 2.6 GHz per row, block and token, runs alternating with the previous
 * kernel on a loaded machine): decode 21.2-22.0 -> 16.3-16.5 from cache,
 * 22.4-24.1 -> 18.9-22.2 from memory. Two rows per pass at one token gave
 * no more from cache (16.8: throughput, not the fma chain, bounds it) and,
 * as two streams, needed software prefetch to stay level from memory. */
/* A token's block step: the int32 lanes minus 32 x the bsums' scaled
 * sums, converted, into the accumulator times d = da * dw. */
XAVX2 static inline __m256 k6_tok_acc(__m256 acc, __m256i isum, __m256i sc16, float dw, const uint8_t *ab)
{
    const __m256i bs = _mm256_loadu_si256((const __m256i *)(ab + 260));
    const __m256i lanes = _mm256_sub_epi32(isum, _mm256_slli_epi32(_mm256_madd_epi16(bs, sc16), 5));
    float da;
    memcpy(&da, ab, 4);
    return _mm256_fmadd_ps(_mm256_set1_ps(da * dw), _mm256_cvtepi32_ps(lanes), acc);
}

/* The eight lanes' end: cpu_lane_sum's tree (i + 4, then i + 2, then
 * 0 + 1), in registers. */
XAVX2 static inline float k6_end(__m256 acc)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

XAVX2 __attribute__((always_inline)) static inline void
k6_row1xT(int64_t nb, const uint8_t *w, const uint8_t *const *at, const int T, float *res)
{
    const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
    const __m128i eo = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    __m256 acc[4];
#pragma GCC unroll 4
    for (int t = 0; t < T; t++)
        acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, w += K6_WB) {
        const uint8_t *ab[4];
#pragma GCC unroll 4
        for (int t = 0; t < T; t++)
            ab[t] = at[t] + b * K6_AB;
        const __m128i scb = _mm_loadu_si128((const __m128i *)(w + 192));
        const __m256i sc16 = _mm256_cvtepi8_epi16(scb);
        const __m256i scp = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scb, eo));
        __m256i isum[4];
#pragma GCC unroll 4
        for (int t = 0; t < T; t++)
            isum[t] = _mm256_setzero_si256();
#pragma GCC unroll 2
        for (int j = 0; j < 2; j++) {
            const __m256i l0 = _mm256_loadu_si256((const __m256i *)(w + 64 * j));
            const __m256i l1 = _mm256_loadu_si256((const __m256i *)(w + 64 * j + 32));
            const __m256i h = _mm256_loadu_si256((const __m256i *)(w + 128 + 32 * j));
#pragma GCC unroll 4
            for (int g = 0; g < 4; g++) {
                const __m256i l = g & 1 ? l1 : l0;
                const __m256i lo = g < 2 ? _mm256_and_si256(l, m4) : _mm256_and_si256(_mm256_srli_epi16(l, 4), m4);
                const __m256i hi = g == 0   ? _mm256_slli_epi16(h, 4)
                                   : g == 1 ? _mm256_slli_epi16(h, 2)
                                   : g == 2 ? h
                                            : _mm256_srli_epi16(h, 2);
                const __m256i code = _mm256_or_si256(lo, _mm256_and_si256(hi, m30));
                const int is = 4 * j + g;
                const __m256i s16 = _mm256_shuffle_epi8(scp, _mm256_set1_epi16((short)(2 * is | (2 * is + 1) << 8)));
#pragma GCC unroll 4
                for (int t = 0; t < T; t++) {
                    const __m256i q = _mm256_maddubs_epi16(
                        code, _mm256_loadu_si256((const __m256i *)(ab[t] + 4 + 128 * j + 32 * g)));
                    isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s16, q));
                }
            }
        }
        const float dw = _cvtsh_ss(rd16(w + 208));
#pragma GCC unroll 4
        for (int t = 0; t < T; t++)
            acc[t] = k6_tok_acc(acc[t], isum[t], sc16, dw, ab[t]);
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; t++)
        res[t] = k6_end(acc[t]);
}

#define K6_ROW(T)                                                                                \
    XAVX2 __attribute__((noinline)) static void k6_row##T(int64_t nb, const uint8_t *w,          \
                                                         const uint8_t *const *at, float *res)   \
    {                                                                                            \
        k6_row1xT(nb, w, at, T, res);                                                            \
    }
K6_ROW(1)
K6_ROW(2)
K6_ROW(3)
K6_ROW(4)

/* The same kernel with the row's per-block work done once per call, and
 * two groups to a vpmaddwd: a 16-row x 64-token tile meets each row in 16
 * groups of 4 tokens, and each group unpacked the row's 6-bit codes and
 * shuffled its scales again. k6p_pack writes, per row and block
 * (K6P_BYTES), the codes of groups 2c and 2c + 1 in cpu_gemm_mix.h's
 * order (the activations' prepared forms have the same: cpu_gemm_mix.h,
 * made once per matmul where cpu_matmul.c makes them), their scale vectors
 * (int16 lanes alternating the two groups' scales: sub-blocks 4c and
 * 4c + 2 in the low 128-bit lane, 4c + 1 and 4c + 3 in the high one), the
 * 16 scales widened and the f32 d. Two vpmaddubsw summed in int16 (each at
 * most 2 * 63 * 128, the two 32,256 < 2^15: exact, the extreme test case
 * reaches it) and one vpmaddwd per 64 elements, where k6_row1xT takes two
 * vpmaddwd: the same int32 lanes and float operations, the same bits.
 * Rows whose pack would pass K6P_PACK (K > 27904) and tiles of one group
 * of tokens keep k6_row1xT. Measured (the pack before this one, one
 * vpmaddwd per group, as above, 16 x 64 tiles, alternating runs): K 3584
 * N 1024 11.9-12.0 -> 10.4-10.7, K 2048 N 1024 11.6-11.7 -> 10.5-10.9, K
 * 1024 N 3584 13.9-14.1 -> 12.7-13.2; packs of 12 and 24 KiB measured the
 * same or slower. */
#define K6P_BYTES 448          /* 8 code vectors, 4 scale-pair vectors, the scales, d */
#define K6P_PACK (48 * 1024)   /* bytes of weight pack on the stack */
#define K6P_NB (K6P_PACK / K6P_BYTES)

XAVX2 static void k6p_pack(int64_t nb, const uint8_t *w, uint8_t *pk)
{
    const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
    const __m128i eo = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    for (int64_t b = 0; b < nb; b++, w += K6_WB, pk += K6P_BYTES) {
        __m256i *v = (__m256i *)pk;
        const __m128i scb = _mm_loadu_si128((const __m128i *)(w + 192));
        const __m256i scp = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scb, eo));
        __m256i code[8];
        for (int j = 0; j < 2; j++) {
            const __m256i l0 = _mm256_loadu_si256((const __m256i *)(w + 64 * j));
            const __m256i l1 = _mm256_loadu_si256((const __m256i *)(w + 64 * j + 32));
            const __m256i h = _mm256_loadu_si256((const __m256i *)(w + 128 + 32 * j));
            for (int g = 0; g < 4; g++) {
                const __m256i l = g & 1 ? l1 : l0;
                const __m256i lo = g < 2 ? _mm256_and_si256(l, m4) : _mm256_and_si256(_mm256_srli_epi16(l, 4), m4);
                const __m256i hi = g == 0   ? _mm256_slli_epi16(h, 4)
                                   : g == 1 ? _mm256_slli_epi16(h, 2)
                                   : g == 2 ? h
                                            : _mm256_srli_epi16(h, 2);
                code[4 * j + g] = _mm256_or_si256(lo, _mm256_and_si256(hi, m30));
            }
        }
        for (int c = 0; c < 4; c++) {
            mix_pair(code[2 * c], code[2 * c + 1], v + 2 * c, v + 2 * c + 1);
            /* scp's int16 lanes 2c and 2c + 1 of each half: groups 2c and 2c + 1's scales */
            _mm256_store_si256(v + 8 + c, _mm256_shuffle_epi8(scp, _mm256_set1_epi32(0x03020100 + 0x04040404 * c)));
        }
        _mm256_store_si256(v + 12, _mm256_cvtepi8_epi16(scb));
        _mm256_store_ps((float *)(v + 13), _mm256_set1_ps(_cvtsh_ss(rd16(w + 208))));
    }
}

XAVX2 __attribute__((always_inline)) static inline void
k6p_row1xT(int64_t nb, const uint8_t *pk, const uint8_t *m, uint64_t mrb, const uint8_t *const *at, const int T,
           float *res)
{
    __m256 acc[4];
#pragma GCC unroll 4
    for (int t = 0; t < T; t++)
        acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, pk += K6P_BYTES) {
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
                isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s16, s));
            }
        }
        const __m256i sc16 = _mm256_load_si256(v + 12);
        const float dw = ((const float *)(v + 13))[0];
#pragma GCC unroll 4
        for (int t = 0; t < T; t++)
            acc[t] = k6_tok_acc(acc[t], isum[t], sc16, dw, at[t] + b * K6_AB);
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; t++)
        res[t] = k6_end(acc[t]);
}

#define K6P_ROW(T)                                                                               \
    XAVX2 __attribute__((noinline)) static void k6p_row##T(int64_t nb, const uint8_t *pk,        \
                                                          const uint8_t *m, uint64_t mrb,        \
                                                          const uint8_t *const *at, float *res)  \
    {                                                                                            \
        k6p_row1xT(nb, pk, m, mrb, at, T, res);                                                  \
    }
K6P_ROW(1)
K6P_ROW(2)
K6P_ROW(3)
K6P_ROW(4)

/* The tile over rows t of a with their prepared forms at m + t * mrb, or
 * (m NULL) forms made per group of tokens. */
XAVX2 static void k6_tile(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr, const uint8_t *a,
                          uint64_t arb, const uint8_t *m, uint64_t mrb, int64_t nt, float *y, int64_t ldy)
{
    typedef void (*fn)(int64_t, const uint8_t *, const uint8_t *const *, float *);
    static const fn tab[4] = { k6_row1, k6_row2, k6_row3, k6_row4 };
    const int64_t nb = K / 256;
    /* the pack pays where a row meets several groups of tokens */
    const int64_t rows = K6P_PACK / (K6P_BYTES * nb);
    if (rows >= 1 && nt > 4) {
        static const mix_row_fn ptab[4] = { k6p_row1, k6p_row2, k6p_row3, k6p_row4 };
        _Alignas(32) uint8_t pk[K6P_PACK];
        _Alignas(32) uint8_t mg[4 * K6P_NB * MIX_PREP_BYTES];
        mix_row_tiles(nb, w, wrb, nr, a, arb, m, mrb, nt, y, ldy, rows, K6P_BYTES, k6p_pack, ptab, pk, mg);
        return;
    }
    for (int64_t r = 0; r < nr; r++) {
        const uint8_t *wr = w + (uint64_t)r * wrb;
        for (int64_t t0 = 0; t0 < nt; t0 += 4) {
            const int T = nt - t0 < 4 ? (int)(nt - t0) : 4;
            const uint8_t *at[4];
            for (int t = 0; t < T; t++)
                at[t] = a + (uint64_t)(t0 + t) * arb;
            float res[4];
            tab[T - 1](nb, wr, at, res);
            for (int t = 0; t < T; t++)
                y[(t0 + t) * ldy + r] = res[t];
        }
    }
}

XAVX2 void cpu_gemm_q6_K_avx2(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                              const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    k6_tile(K, w, wrb, nr, a, arb, NULL, 0, nt, y, ldy);
}

static const cpu_tile_prep k6_prep_avx2 = { cpu_mix_prep_bytes, cpu_mix_prep_row, k6_tile };

const cpu_tile_prep *cpu_gemm_q6_K_avx2_prep(void)
{
    return &k6_prep_avx2;
}

const cpu_tile_prep *cpu_gemm_q6_K_prep(void)
{
    return cpu_gemm_q6_K() == cpu_gemm_q6_K_avx2 ? &k6_prep_avx2 : NULL;
}
#else
void cpu_gemm_q6_K_avx512vnni(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                              const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    cpu_gemm_q6_K_ref(K, w, wrb, nr, a, arb, nt, y, ldy);
}

void cpu_gemm_q6_K_avx2(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                        const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    cpu_gemm_q6_K_ref(K, w, wrb, nr, a, arb, nt, y, ldy);
}

const cpu_tile_prep *cpu_gemm_q6_K_avx2_prep(void)
{
    return NULL;
}

const cpu_tile_prep *cpu_gemm_q6_K_prep(void)
{
    return NULL;
}
#endif
