/* cpu_gemm_q8.c: the Q8_0 and F32 tile kernels of cpu_gemm_q8.h: a plain C
 * reference of each order, AVX2 and AVX-512 kernels that keep that order
 * for every output, and the pick for this CPU.
 *
 * Why tiles: one weight block meets several tokens and one activation
 * block several rows while both are in registers, the block scales are
 * converted once per row and once per token instead of once per pair, and
 * nothing is called per output. The float work per output is unchanged:
 * the same lanes, the same fused multiply-adds in block order, the same
 * final sum, so the bits are those of the per-output dot.
 *
 * Register blocks are written as small arrays with compile-time bounds
 * (always_inline bodies instantiated per shape, loops unrolled by pragma)
 * so the arrays live in registers. */
#include "cpu_gemm_q8.h"

#include <assert.h>
#include <immintrin.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "../../quant/fp16.h"
#include "../../quant/quant.h"

#define Q8_BLOCK 34                   /* f16 scale + 32 int8 codes */

static inline uint16_t rd16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* the end of the Q8_0 order: AVX2's hsum_ps over 8 lanes */
static inline float sum8(const float *l)
{
    return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

/* ------------------------------------------------------- references */

float cpu_dot_q8_0_lanes_ref(int64_t K, const uint8_t *w, const uint8_t *a)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < K / 32; b++, w += Q8_BLOCK, a += Q8_BLOCK) {
        const float d = quant_f16_to_f32(rd16(w)) * quant_f16_to_f32(rd16(a));
        const int8_t *qw = (const int8_t *)(w + 2), *qa = (const int8_t *)(a + 2);
        for (int j = 0; j < 8; j++) {
            int32_t s = 0;
            for (int k = 4 * j; k < 4 * j + 4; k++)
                s += qw[k] * qa[k];
            acc[j] = fmaf(d, (float)s, acc[j]);
        }
    }
    return sum8(acc);
}

void cpu_gemm_q8_0_ref(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                       const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    for (int64_t t = 0; t < nt; t++)
        for (int64_t r = 0; r < nr; r++)
            y[t * ldy + r] = cpu_dot_q8_0_lanes_ref(K, w + (uint64_t)r * wrb, a + (uint64_t)t * arb);
}

float cpu_dot_f32_lanes_ref(int64_t n, const float *x, const float *y, int W)
{
    float acc[16] = { 0 };
    for (int64_t i = 0; i < n; i += W)
        for (int l = 0; l < W; l++)
            acc[l] = fmaf(x[i + l], y[i + l], acc[l]);
    return cpu_lane_sum(acc, W);
}

void cpu_gemm_f32_lanes_ref(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                            const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    for (int64_t t = 0; t < nt; t++)
        for (int64_t r = 0; r < nr; r++)
            y[t * ldy + r] = cpu_dot_lanes(K, w + (uint64_t)r * wrb, a + (uint64_t)t * arb);
}

/* where the quant module has no AVX2 kernel: what pick_dot takes there */
static void gemm_q8_0_quant(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                            const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    const quant_dot_fn dot = quant_vec_dot_fn(QT_Q8_0);
    for (int64_t t = 0; t < nt; t++)
        for (int64_t r = 0; r < nr; r++)
            y[t * ldy + r] = dot(K, w + (uint64_t)r * wrb, a + (uint64_t)t * arb);
}

#define INLINE static inline __attribute__((always_inline))
#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl")))
#define AVX512VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

/* sum8 in registers: each add is one of sum8's, operands possibly swapped
 * (the same bits). sum8x2 gives the sums of both 8-lane halves of v, in
 * lanes 0 and 8. */
AVX2 INLINE float sum8_avx2(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

/* sum8 of eight registers at once, as a transpose: lane k of the result
 * is sum8 of v[(k % 4) * 2 + k / 4]; each add is one of sum8's (lanes i
 * and i+4, then (0+4)+(2+6) and (1+5)+(3+7), then the two), 21
 * instructions for the 8 sums where sum8_avx2 takes 6 each. */
AVX2 INLINE __m256 sum8x8(const __m256 *v)
{
    __m256 t[4], u[2];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)        /* lanes i and i+4 of v[2i] (low) and v[2i+1] (high) */
        t[i] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x20),
                             _mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x31));
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++)        /* (0+4)+(2+6), (1+5)+(3+7) */
        u[i] = _mm256_add_ps(_mm256_shuffle_ps(t[2 * i], t[2 * i + 1], 0x44),
                             _mm256_shuffle_ps(t[2 * i], t[2 * i + 1], 0xEE));
    return _mm256_add_ps(_mm256_shuffle_ps(u[0], u[1], 0x88), _mm256_shuffle_ps(u[0], u[1], 0xDD));
}

AVX512 INLINE __m512 sum8x2(__m512 v)
{
    v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
    v = _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)));
}

/* ------------------------------------------------------ Q8_0, AVX2 */

/* NR rows x NT tokens, one 8-lane accumulator per output, as
 * quant_dot_q8_0_avx2: |w| x (a with w's sign) by vpmaddubsw (a pair is at
 * most 2 * 128 * 127 < 2^15, exact), pairs summed by vpmaddwd. */
AVX2 INLINE void q8_avx2_block(const int NR, const int NT, int64_t nb, const uint8_t *w,
                               uint64_t wrb, const uint8_t *a, uint64_t arb, float *y, int64_t ldy)
{
    __m256 acc[4][4];
    const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++)
            acc[r][t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint64_t off = (uint64_t)b * Q8_BLOCK;
        __m256i wv[4], wabs[4];
        __m256 dw[4];
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) {
            const uint8_t *p = w + (uint64_t)r * wrb + off;
            _mm_prefetch((const char *)(p + NR * wrb), _MM_HINT_T0);
            wv[r] = _mm256_loadu_si256((const __m256i *)(p + 2));
            wabs[r] = _mm256_sign_epi8(wv[r], wv[r]);
            dw[r] = _mm256_set1_ps(_cvtsh_ss(rd16(p)));
        }
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            const uint8_t *p = a + (uint64_t)t * arb + off;
            const __m256i av = _mm256_loadu_si256((const __m256i *)(p + 2));
            const __m256 da = _mm256_set1_ps(_cvtsh_ss(rd16(p)));
#pragma GCC unroll 4
            for (int r = 0; r < NR; r++) {
                const __m256i s = _mm256_maddubs_epi16(wabs[r], _mm256_sign_epi8(av, wv[r]));
                const __m256i i32 = _mm256_madd_epi16(s, ones);
                acc[r][t] = _mm256_fmadd_ps(_mm256_mul_ps(dw[r], da), _mm256_cvtepi32_ps(i32),
                                            acc[r][t]);
            }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            y[t * ldy + r] = sum8_avx2(acc[r][t]);
        }
}

#define Q8_AVX2_SHAPE(NR, NT)                                                                \
    AVX2 static void q8_avx2_##NR##x##NT(int64_t nb, const uint8_t *w, uint64_t wrb,         \
                                         const uint8_t *a, uint64_t arb, float *y, int64_t ldy) \
    {                                                                                        \
        q8_avx2_block(NR, NT, nb, w, wrb, a, arb, y, ldy);                                   \
    }
Q8_AVX2_SHAPE(1, 1) Q8_AVX2_SHAPE(1, 2) Q8_AVX2_SHAPE(1, 3) Q8_AVX2_SHAPE(1, 4)
Q8_AVX2_SHAPE(2, 1) Q8_AVX2_SHAPE(2, 2) Q8_AVX2_SHAPE(2, 3) Q8_AVX2_SHAPE(2, 4)
Q8_AVX2_SHAPE(3, 1) Q8_AVX2_SHAPE(4, 1)

typedef void (*q8_shape_fn)(int64_t nb, const uint8_t *w, uint64_t wrb, const uint8_t *a,
                            uint64_t arb, float *y, int64_t ldy);

/* The prompt kernel: 2 rows x 4 tokens with the block scales taken out of
 * the loop. Per call the f32 scales of the tile's weight rows and, per
 * group of 4 tokens, of the activations are packed once (ws: row-major
 * [row][block]; da: [block][4 tokens]); per block the 8 scale products of
 * the 2 x 4 outputs are one vmulps, stored and broadcast back from memory
 * (loads, not shuffles), so an output's work per block is vpsignb,
 * vpmaddubsw, vpmaddwd, vcvtdq2ps and one fused multiply-add, and the 8
 * accumulators, the rows' codes and their magnitudes stay in the 16
 * registers. The products are exact (two f16 significands), so each lane
 * sees the same fma operands in the same order: pick_dot's bits.
 * A pair of rows' scales are packed as the first token group meets them,
 * not for the whole pack beforehand: that pass read a pack's rows from
 * memory alone, a scalar load a block, before the kernel read them again
 * (the default model's head, K 256 x 151,680 rows, times 4 tokens: 4.2-5.5
 * -> 3.3-4.6 ms, one thread, test_cpu_gemm_q8 bench's AVX2 tile on a Zen 5;
 * bench/results/2026-12-03-cpu-mtp-avx2/gemm-bench.txt). */
#define Q8P_WS_MAX 8192        /* weight scales one pack holds (32 KiB) */
#define Q8P_BLOCKS_MAX 2048    /* K <= 65536; longer rows take q8_avx2_block */

AVX2 INLINE void q8p_block(const int NR, const int NT, int64_t nb, const uint8_t *w0,
                           const uint8_t *w1, const float *ws0, const float *ws1,
                           const uint8_t *a, uint64_t arb, const float *da, float *y, int64_t ldy)
{
    __m256 acc[2][4];
    _Alignas(32) float prod[8];
    const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 2
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++)
            acc[r][t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint64_t off = (uint64_t)b * Q8_BLOCK;
        const __m256 dwv = _mm256_set_m128(_mm_broadcast_ss(ws1 + b), _mm_broadcast_ss(ws0 + b));
        _mm256_store_ps(prod, _mm256_mul_ps(dwv, _mm256_broadcast_ps((const __m128 *)(da + 4 * b))));
        __m256i wv[2], wabs[2];
        wv[0] = _mm256_loadu_si256((const __m256i *)(w0 + off + 2));
        wabs[0] = _mm256_sign_epi8(wv[0], wv[0]);
        if (NR == 2) {
            wv[1] = _mm256_loadu_si256((const __m256i *)(w1 + off + 2));
            wabs[1] = _mm256_sign_epi8(wv[1], wv[1]);
        }
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            const __m256i av = _mm256_loadu_si256((const __m256i *)(a + (uint64_t)t * arb + off + 2));
#pragma GCC unroll 2
            for (int r = 0; r < NR; r++) {
                const __m256i s = _mm256_maddubs_epi16(wabs[r], _mm256_sign_epi8(av, wv[r]));
                const __m256i i32 = _mm256_madd_epi16(s, ones);
                acc[r][t] = _mm256_fmadd_ps(_mm256_broadcast_ss(prod + 4 * r + t),
                                            _mm256_cvtepi32_ps(i32), acc[r][t]);
            }
        }
    }
    if (NR == 2 && NT == 4) {
        /* v[2i] and v[2i+1]: outputs i and i+4 of the 8, output o = (row o / 4, token o % 4) */
        __m256 v[8];
        _Alignas(32) float sums[8];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            v[2 * i] = acc[0][i];
            v[2 * i + 1] = acc[1][i];
        }
        _mm256_store_ps(sums, sum8x8(v));
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++)    /* lane k: v[(k % 4) * 2 + k / 4] = acc[k / 4][k % 4] */
            y[(k % 4) * ldy + k / 4] = sums[k];
        return;
    }
#pragma GCC unroll 2
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++)
            y[t * ldy + r] = sum8_avx2(acc[r][t]);
}

#define Q8P_SHAPE(NR, NT)                                                                     \
    AVX2 static void q8p_##NR##x##NT(int64_t nb, const uint8_t *w0, const uint8_t *w1,        \
                                     const float *ws0, const float *ws1, const uint8_t *a,    \
                                     uint64_t arb, const float *da, float *y, int64_t ldy)    \
    {                                                                                         \
        q8p_block(NR, NT, nb, w0, w1, ws0, ws1, a, arb, da, y, ldy);                          \
    }
Q8P_SHAPE(1, 1) Q8P_SHAPE(1, 2) Q8P_SHAPE(1, 3) Q8P_SHAPE(1, 4)
Q8P_SHAPE(2, 1) Q8P_SHAPE(2, 2) Q8P_SHAPE(2, 3) Q8P_SHAPE(2, 4)

typedef void (*q8p_fn)(int64_t nb, const uint8_t *w0, const uint8_t *w1, const float *ws0,
                       const float *ws1, const uint8_t *a, uint64_t arb, const float *da, float *y,
                       int64_t ldy);

/* f32 scales of n blocks Q8_BLOCK bytes apart, to out[i * step] */
AVX2 static void q8_scales(int64_t n, const uint8_t *p, float *out, int step)
{
    for (int64_t i = 0; i < n; i++, p += Q8_BLOCK)
        out[i * step] = _cvtsh_ss(rd16(p));
}

int64_t cpu_q8_0_scales4_len(int64_t K, int64_t nt)
{
    return (nt + 3) / 4 * 4 * (K / 32);
}

AVX2 void cpu_q8_0_scales4(int64_t K, const uint8_t *a, uint64_t arb, int64_t nt, float *da)
{
    const int64_t nb = K / 32;
    for (int64_t t = 0; t < nt; t += 4) {
        float *dt = da + t * nb;
        for (int64_t i = 0; i < 4; i++) {
            if (t + i < nt)
                q8_scales(nb, a + (uint64_t)(t + i) * arb, dt + i, 4);
            else
                for (int64_t b = 0; b < nb; b++)
                    dt[4 * b + i] = 0.0f;
        }
    }
}

/* dapre: cpu_q8_0_scales4's table for these rows, or NULL (made here) */
AVX2 static void q8_avx2_prompt(int64_t nb, const uint8_t *w, uint64_t wrb, int64_t nr,
                                const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy,
                                const float *dapre)
{
    static const q8p_fn tab[2][4] = {
        { q8p_1x1, q8p_1x2, q8p_1x3, q8p_1x4 },
        { q8p_2x1, q8p_2x2, q8p_2x3, q8p_2x4 },
    };
    const int64_t rows = Q8P_WS_MAX / nb & ~(int64_t)1;
    _Alignas(32) float ws[Q8P_WS_MAX];
    _Alignas(32) float da[4 * Q8P_BLOCKS_MAX];
    for (int64_t r0 = 0; r0 < nr; r0 += rows) {
        const int64_t r1 = nr - r0 < rows ? nr : r0 + rows;
        for (int64_t t = 0; t < nt; t += 4) {
            const int64_t u = nt - t < 4 ? nt - t : 4;
            const float *dt = dapre ? dapre + t * nb : da;
            if (!dapre)     /* this group's table */
                cpu_q8_0_scales4(nb * 32, a + (uint64_t)t * arb, arb, u, da);
            for (int64_t r = r0; r < r1; r += 2) {
                const int64_t m = r1 - r < 2 ? 1 : 2;
                const float *ws0 = ws + (r - r0) * nb;
                if (t == 0)
                    for (int64_t i = 0; i < m; i++)
                        q8_scales(nb, w + (uint64_t)(r + i) * wrb, ws + (r + i - r0) * nb, 1);
                tab[m - 1][u - 1](nb, w + (uint64_t)r * wrb, w + (uint64_t)(r + m - 1) * wrb, ws0,
                                  ws0 + (m - 1) * nb, a + (uint64_t)t * arb, arb, dt,
                                  y + t * ldy + r, ldy);
            }
        }
    }
}

/* The decode kernel: 4 rows, one token. The rows' 4 block scales are
 * converted in one vcvtph2ps and multiplied by the token's (packed once
 * per call) in one vmulps, then broadcast back from memory, as in
 * q8p_block. Four rows interleaved keep four fma chains in flight, but
 * read four streams at once, which the hardware prefetcher follows badly
 * (5x slower without software prefetch, measured); so the kernel
 * prefetches in address order, 4 * 34 bytes per block, Q8D_AHEAD bytes past
 * the end of its group: the next groups arrive while this one runs.
 * Measured (one thread, from memory, min of 20): 1.30 -> 0.67 ns per row
 * and block at K 1024 and 0.66 at K 3584, where the previous kernel (the
 * next group's rows prefetched at the same offset) took 1.30 and a plain
 * row-by-row loop 1.10; 4 KiB ahead took 0.87 / 1.70, 8 KiB past the
 * group start 0.69 / 1.26. */
#define Q8D_AHEAD 8192
AVX2 INLINE void q8d_block(const int NR, int64_t nb, const uint8_t *w, uint64_t wrb,
                           const uint8_t *a, const float *da, float *y)
{
    __m256 acc[4];
    _Alignas(16) float prod[4];
    const __m256i ones = _mm256_set1_epi16(1);
    const uint8_t *pf = w + NR * wrb + Q8D_AHEAD;
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++)
        acc[r] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint64_t off = (uint64_t)b * Q8_BLOCK;
        _mm_prefetch((const char *)(pf + NR * off), _MM_HINT_T0);
        _mm_prefetch((const char *)(pf + NR * off + 64), _MM_HINT_T0);
        if (NR * Q8_BLOCK > 128)
            _mm_prefetch((const char *)(pf + NR * off + 128), _MM_HINT_T0);
        /* the rows' block scales into lanes 0..NR-1 (lane numbers are
         * immediates: clang wants them constant even in an unrolled loop) */
        __m128i h = _mm_insert_epi16(_mm_setzero_si128(), rd16(w + off), 0);
        if (NR > 1)
            h = _mm_insert_epi16(h, rd16(w + wrb + off), 1);
        if (NR > 2)
            h = _mm_insert_epi16(h, rd16(w + 2 * wrb + off), 2);
        if (NR > 3)
            h = _mm_insert_epi16(h, rd16(w + 3 * wrb + off), 3);
        _mm_store_ps(prod, _mm_mul_ps(_mm_cvtph_ps(h), _mm_broadcast_ss(da + b)));
        const __m256i av = _mm256_loadu_si256((const __m256i *)(a + off + 2));
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) {
            const __m256i wv = _mm256_loadu_si256((const __m256i *)(w + (uint64_t)r * wrb + off + 2));
            const __m256i s = _mm256_maddubs_epi16(_mm256_sign_epi8(wv, wv), _mm256_sign_epi8(av, wv));
            acc[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(prod + r),
                                     _mm256_cvtepi32_ps(_mm256_madd_epi16(s, ones)), acc[r]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++)
        y[r] = sum8_avx2(acc[r]);
}

#define Q8D_SHAPE(NR)                                                                         \
    AVX2 static void q8d_##NR(int64_t nb, const uint8_t *w, uint64_t wrb, const uint8_t *a,   \
                              const float *da, float *y)                                      \
    {                                                                                         \
        q8d_block(NR, nb, w, wrb, a, da, y);                                                  \
    }
Q8D_SHAPE(1) Q8D_SHAPE(2) Q8D_SHAPE(3) Q8D_SHAPE(4)

AVX2 static void q8_avx2_decode(int64_t nb, const uint8_t *w, uint64_t wrb, int64_t nr,
                                const uint8_t *a, float *y)
{
    typedef void (*fn)(int64_t, const uint8_t *, uint64_t, const uint8_t *, const float *, float *);
    static const fn tab[4] = { q8d_1, q8d_2, q8d_3, q8d_4 };
    _Alignas(32) float da[4 * Q8P_BLOCKS_MAX];
    q8_scales(nb, a, da, 1);
    for (int64_t r = 0; r < nr; r += 4) {
        const int64_t m = nr - r < 4 ? nr - r : 4;
        tab[m - 1](nb, w + (uint64_t)r * wrb, wrb, a, da, y + r);
    }
}

void cpu_gemm_q8_0_avx2(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                        const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    static const q8_shape_fn pre[2][4] = {
        { q8_avx2_1x1, q8_avx2_1x2, q8_avx2_1x3, q8_avx2_1x4 },
        { q8_avx2_2x1, q8_avx2_2x2, q8_avx2_2x3, q8_avx2_2x4 },
    };
    static const q8_shape_fn dec[4] = { q8_avx2_1x1, q8_avx2_2x1, q8_avx2_3x1, q8_avx2_4x1 };
    assert(K % 32 == 0);
    const int64_t nb = K / 32;
    if (nt == 1 && nb <= 4 * Q8P_BLOCKS_MAX) {
        q8_avx2_decode(nb, w, wrb, nr, a, y);
        return;
    }
    if (nt == 1) {
        for (int64_t r = 0; r < nr; r += 4) {
            const int64_t m = nr - r < 4 ? nr - r : 4;
            dec[m - 1](nb, w + (uint64_t)r * wrb, wrb, a, arb, y + r, ldy);
        }
        return;
    }
    if (nb <= Q8P_BLOCKS_MAX) {
        q8_avx2_prompt(nb, w, wrb, nr, a, arb, nt, y, ldy, NULL);
        return;
    }
    for (int64_t r = 0; r < nr; r += 2) {
        const int64_t m = nr - r < 2 ? nr - r : 2;
        for (int64_t t = 0; t < nt; t += 4) {
            const int64_t u = nt - t < 4 ? nt - t : 4;
            pre[m - 1][u - 1](nb, w + (uint64_t)r * wrb, wrb, a + (uint64_t)t * arb, arb,
                              y + t * ldy + r, ldy);
        }
    }
}

void cpu_gemm_q8_0_avx2_da(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                           const uint8_t *a, uint64_t arb, const float *da, int64_t nt, float *y,
                           int64_t ldy)
{
    assert(K % 32 == 0);
    if (nt > 1 && K / 32 <= Q8P_BLOCKS_MAX)
        q8_avx2_prompt(K / 32, w, wrb, nr, a, arb, nt, y, ldy, da);
    else
        cpu_gemm_q8_0_avx2(K, w, wrb, nr, a, arb, nt, y, ldy);
}

/* --------------------------------------------------- Q8_0, AVX-512 */

/* How far ahead the AVX-512 tile prefetches its weight rows: whole groups
 * of rows (a group: the rows one call reads, grp bytes), at least
 * Q8_PF_BYTES ahead, at the same offset. A short row's group is done
 * before the group after it arrives. Measured with `test_cpu_gemm_q8
 * bench` (one thread, Zen 5, best of 5; bench/results/2026-12-02-cpu-mtp-
 * prefetch/gemm-bench.txt): the default model's head (K 256, 151,680
 * rows) times 4 tokens (an MTP verify pass) took 2.94-3.16 ms with the
 * next group prefetched (1 KiB ahead), 1.73-1.96 with 8 KiB; times 16
 * tokens 7.30-7.37 -> 5.65-5.77 ms. Long rows (K 1024 and up: groups of 4
 * KiB or more) keep the next group: their prompt tiles did not move. (The
 * AVX2 tile, compute-bound at 4 tokens, has no software prefetch.) */
#define Q8_PF_BYTES 8192

static inline uint64_t q8_pf_bytes(uint64_t grp)
{
    return grp * (grp >= Q8_PF_BYTES ? 1 : (Q8_PF_BYTES + grp - 1) / grp);
}

/* Activations packed for the AVX-512 kernel, per block of 8 tokens: their
 * codes + 128 (xor 0x80: what vpdpbusd takes as unsigned), 32 bytes per
 * token, then their scales as f32; so that the kernel's per-token work is
 * two loads. Packs live on the stack, hence the limit on K. */
#define PACK_TOK 8
#define PACK_BLOCK (PACK_TOK * 32 + PACK_TOK * 4)
#define PACK_MAX_BLOCKS 256      /* K <= 8192: a 72 KiB pack */

/* NQ row pairs x NT tokens: register (q, t) holds rows 2q (lanes 0-7) and
 * 2q+1 (lanes 8-15) of token t. vpdpbusd takes unsigned x signed bytes:
 * (a + 128) x w, started from -128 * (sum of each 4 codes of w), gives
 * each lane's exact sum. Rows past nr repeat the last row (results not
 * stored). PACKED: a is a pack (above), else NT rows arb bytes apart. */
AVX512VNNI INLINE void q8_512_block(const int NQ, const int NT, const int PACKED, int64_t nb,
                                    const uint8_t *w,
                                    uint64_t wrb, int64_t nrows, const uint8_t *a, uint64_t arb,
                                    float *y, int64_t ldy)
{
    __m512 acc[4][8];
    const uint8_t *wr[8];
    const __m512i c80 = _mm512_set1_epi8((char)0x80);
    const uint64_t pf = q8_pf_bytes(2 * (uint64_t)NQ * wrb);     /* Q8_PF_BYTES */
#pragma GCC unroll 8
    for (int r = 0; r < 2 * NQ; r++)
        wr[r] = w + (uint64_t)(r < nrows ? r : nrows - 1) * wrb;
#pragma GCC unroll 4
    for (int q = 0; q < NQ; q++)
#pragma GCC unroll 8
        for (int t = 0; t < NT; t++)
            acc[q][t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint64_t off = (uint64_t)b * Q8_BLOCK;
        __m512i wv[4], nbias[4];
        __m512 dw[4];
#pragma GCC unroll 8
        for (int r = 0; r < 2 * NQ; r++)
            _mm_prefetch((const char *)(wr[r] + off + pf), _MM_HINT_T0);
#pragma GCC unroll 4
        for (int q = 0; q < NQ; q++) {
            const uint8_t *p0 = wr[2 * q] + off, *p1 = wr[2 * q + 1] + off;
            wv[q] = _mm512_inserti64x4(
                _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(p0 + 2))),
                _mm256_loadu_si256((const __m256i *)(p1 + 2)), 1);
            const __m512i bias = _mm512_dpbusd_epi32(_mm512_setzero_si512(), c80, wv[q]);
            nbias[q] = _mm512_sub_epi32(_mm512_setzero_si512(), bias);
            dw[q] = _mm512_cvtph_ps(_mm256_set_m128i(_mm_set1_epi16((short)rd16(p1)),
                                                     _mm_set1_epi16((short)rd16(p0))));
        }
#pragma GCC unroll 8
        for (int t = 0; t < NT; t++) {
            __m512i au;
            __m512 da;
            if (PACKED) {
                const uint8_t *p = a + (uint64_t)b * PACK_BLOCK;
                au = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(p + 32 * t)));
                da = _mm512_set1_ps(((const float *)(p + 32 * PACK_TOK))[t]);
            } else {
                const uint8_t *p = a + (uint64_t)t * arb + off;
                au = _mm512_xor_si512(
                    _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(p + 2))), c80);
                da = _mm512_cvtph_ps(_mm256_set1_epi16((short)rd16(p)));
            }
#pragma GCC unroll 4
            for (int q = 0; q < NQ; q++) {
                const __m512i s = _mm512_dpbusd_epi32(nbias[q], au, wv[q]);
                acc[q][t] = _mm512_fmadd_ps(_mm512_mul_ps(dw[q], da), _mm512_cvtepi32_ps(s),
                                            acc[q][t]);
            }
        }
    }
#pragma GCC unroll 4
    for (int q = 0; q < NQ; q++)
#pragma GCC unroll 8
        for (int t = 0; t < NT; t++) {
            const __m512 v = sum8x2(acc[q][t]);
            y[t * ldy + 2 * q] = _mm512_cvtss_f32(v);
            if (2 * q + 1 < nrows)
                y[t * ldy + 2 * q + 1] = _mm_cvtss_f32(_mm512_extractf32x4_ps(v, 2));
        }
}

#define Q8_512_SHAPE(NQ, NT, PK)                                                              \
    AVX512VNNI static void q8_512_##NQ##x##NT##PK(int64_t nb, const uint8_t *w, uint64_t wrb, \
                                                  int64_t nrows, const uint8_t *a,            \
                                                  uint64_t arb, float *y, int64_t ldy)        \
    {                                                                                         \
        q8_512_block(NQ, NT, sizeof(#PK) > 1, nb, w, wrb, nrows, a, arb, y, ldy);             \
    }
#define Q8_512_SHAPES(NQ, PK)                                                                 \
    Q8_512_SHAPE(NQ, 1, PK) Q8_512_SHAPE(NQ, 2, PK) Q8_512_SHAPE(NQ, 3, PK)                   \
    Q8_512_SHAPE(NQ, 4, PK) Q8_512_SHAPE(NQ, 5, PK) Q8_512_SHAPE(NQ, 6, PK)                   \
    Q8_512_SHAPE(NQ, 7, PK) Q8_512_SHAPE(NQ, 8, PK)
Q8_512_SHAPES(1, ) Q8_512_SHAPES(2, ) Q8_512_SHAPES(1, p) Q8_512_SHAPES(2, p)
Q8_512_SHAPE(3, 1, ) Q8_512_SHAPE(4, 1, )

typedef void (*q8_512_fn)(int64_t nb, const uint8_t *w, uint64_t wrb, int64_t nrows,
                          const uint8_t *a, uint64_t arb, float *y, int64_t ldy);

#define Q8_512_ROW(NQ, PK)                                                                    \
    { q8_512_##NQ##x1##PK, q8_512_##NQ##x2##PK, q8_512_##NQ##x3##PK, q8_512_##NQ##x4##PK,      \
      q8_512_##NQ##x5##PK, q8_512_##NQ##x6##PK, q8_512_##NQ##x7##PK, q8_512_##NQ##x8##PK }

/* codes + 128 and f32 scales of u <= PACK_TOK tokens (the rest zero) */
AVX512 static void q8_pack(int64_t nb, const uint8_t *a, uint64_t arb, int64_t u, uint8_t *pk)
{
    const __m256i c80 = _mm256_set1_epi8((char)0x80);
    memset(pk, 0, (size_t)nb * PACK_BLOCK);
    for (int64_t t = 0; t < u; t++) {
        const uint8_t *p = a + (uint64_t)t * arb;
        for (int64_t b = 0; b < nb; b++, p += Q8_BLOCK) {
            uint8_t *q = pk + b * PACK_BLOCK;
            _mm256_storeu_si256((__m256i *)(q + 32 * t),
                                _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(p + 2)), c80));
            ((float *)(q + 32 * PACK_TOK))[t] = _cvtsh_ss(rd16(p));
        }
    }
}

#define PACK_ROWS 64     /* weight rows (in L2) that meet each pack */

/* one-token products on the AVX-512 kernels (cpu_gemm_q8_decode512) */
static _Atomic int g_dec512;

void cpu_gemm_q8_decode512(int on)
{
    atomic_store_explicit(&g_dec512, on != 0, memory_order_relaxed);
}

void cpu_gemm_q8_0_avx512vnni(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                              const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    static const q8_512_fn pre[2][8] = { Q8_512_ROW(1, ), Q8_512_ROW(2, ) };
    static const q8_512_fn pkd[2][8] = { Q8_512_ROW(1, p), Q8_512_ROW(2, p) };
    static const q8_512_fn dec[4] = { q8_512_1x1, q8_512_2x1, q8_512_3x1, q8_512_4x1 };
    assert(K % 32 == 0);
    const int64_t nb = K / 32;
    /* One token: the AVX2 decode kernel, the same bits (the same lanes and
     * fused multiply-adds in block order; test_cpu_gemm_q8 checks both
     * against the reference), with software prefetch in address order: a
     * decode step streams its weights from memory, and there it is the
     * faster (tests/test_cpu_gemm_q8 bench, Zen 5: the default model's head
     * 1.09 ms against 1.99, 1024 x 65536 1.63-1.81 against 1.88-2.01; the
     * AVX-512 kernels win only on weights already in cache).
     * cpu_gemm_q8_decode512(1) (Q36_Q8_DECODE512=1 at the CPU backend's
     * creation) keeps the AVX-512 kernels for one token. */
    if (nt == 1 && !atomic_load_explicit(&g_dec512, memory_order_relaxed) &&
        nb <= 4 * Q8P_BLOCKS_MAX) {
        q8_avx2_decode(nb, w, wrb, nr, a, y);
        return;
    }
    if (nt == 1) {
        for (int64_t r = 0; r < nr; r += 8) {
            const int64_t m = nr - r < 8 ? nr - r : 8;
            dec[(m + 1) / 2 - 1](nb, w + (uint64_t)r * wrb, wrb, m, a, arb, y + r, ldy);
        }
        return;
    }
    if (nb > PACK_MAX_BLOCKS) {
        for (int64_t r = 0; r < nr; r += 4) {
            const int64_t m = nr - r < 4 ? nr - r : 4;
            for (int64_t t = 0; t < nt; t += 8) {
                const int64_t u = nt - t < 8 ? nt - t : 8;
                pre[(m + 1) / 2 - 1][u - 1](nb, w + (uint64_t)r * wrb, wrb, m,
                                            a + (uint64_t)t * arb, arb, y + t * ldy + r, ldy);
            }
        }
        return;
    }
    _Alignas(64) uint8_t pk[PACK_MAX_BLOCKS * PACK_BLOCK];
    for (int64_t r0 = 0; r0 < nr; r0 += PACK_ROWS) {
        const int64_t r1 = nr - r0 < PACK_ROWS ? nr : r0 + PACK_ROWS;
        for (int64_t t = 0; t < nt; t += PACK_TOK) {
            const int64_t u = nt - t < PACK_TOK ? nt - t : PACK_TOK;
            q8_pack(nb, a + (uint64_t)t * arb, arb, u, pk);
            for (int64_t r = r0; r < r1; r += 4) {
                const int64_t m = r1 - r < 4 ? r1 - r : 4;
                pkd[(m + 1) / 2 - 1][u - 1](nb, w + (uint64_t)r * wrb, wrb, m, pk, 0,
                                            y + t * ldy + r, ldy);
            }
        }
    }
}

/* --------------------------------------------------------- F32 lanes */

/* NR rows x NT tokens, one W-lane accumulator per output (W = 8 with
 * AVX2, 16 with AVX-512), fused multiply-adds over the K/W steps, then
 * cpu_lane_sum: one body for both widths, V the vector type and OP(x) the
 * intrinsic of that width. */
#define UNROLL _Pragma("GCC unroll 4")
#define F32_BLOCK(NAME, ISA, V, W, OP)                                                        \
    ISA INLINE void NAME(const int NR, const int NT, int64_t K, const float *const *wr,       \
                         const float *a, int64_t as, float *y, int64_t ldy)                   \
    {                                                                                         \
        V acc[4][4];                                                                          \
        UNROLL for (int r = 0; r < NR; r++)                                                   \
            UNROLL for (int t = 0; t < NT; t++)                                               \
                acc[r][t] = OP(setzero_ps)();                                                 \
        for (int64_t i = 0; i < K; i += W) {                                                  \
            V wv[4];                                                                          \
            UNROLL for (int r = 0; r < NR; r++)                                               \
                wv[r] = OP(loadu_ps)(wr[r] + i);                                              \
            UNROLL for (int t = 0; t < NT; t++) {                                             \
                const V av = OP(loadu_ps)(a + t * as + i);                                    \
                UNROLL for (int r = 0; r < NR; r++)                                           \
                    acc[r][t] = OP(fmadd_ps)(wv[r], av, acc[r][t]);                           \
            }                                                                                 \
        }                                                                                     \
        UNROLL for (int r = 0; r < NR; r++)                                                   \
            UNROLL for (int t = 0; t < NT; t++) {                                             \
                float l[W];                                                                   \
                OP(storeu_ps)(l, acc[r][t]);                                                  \
                y[t * ldy + r] = cpu_lane_sum(l, W);                                          \
            }                                                                                 \
    }
#define OP256(f) _mm256_##f
#define OP512(f) _mm512_##f
F32_BLOCK(f32_avx2_block, AVX2, __m256, 8, OP256)
F32_BLOCK(f32_512_block, AVX512, __m512, 16, OP512)

typedef void (*f32_shape_fn)(int64_t K, const float *const *wr, const float *a, int64_t as,
                             float *y, int64_t ldy);

#define F32_SHAPES(ISA, PFX, NR)                                                              \
    ISA static void PFX##_##NR##x1(int64_t K, const float *const *wr, const float *a,         \
                                   int64_t as, float *y, int64_t ldy)                         \
    { PFX##_block(NR, 1, K, wr, a, as, y, ldy); }                                             \
    ISA static void PFX##_##NR##x2(int64_t K, const float *const *wr, const float *a,         \
                                   int64_t as, float *y, int64_t ldy)                         \
    { PFX##_block(NR, 2, K, wr, a, as, y, ldy); }                                             \
    ISA static void PFX##_##NR##x3(int64_t K, const float *const *wr, const float *a,         \
                                   int64_t as, float *y, int64_t ldy)                         \
    { PFX##_block(NR, 3, K, wr, a, as, y, ldy); }                                             \
    ISA static void PFX##_##NR##x4(int64_t K, const float *const *wr, const float *a,         \
                                   int64_t as, float *y, int64_t ldy)                         \
    { PFX##_block(NR, 4, K, wr, a, as, y, ldy); }
F32_SHAPES(AVX2, f32_avx2, 1) F32_SHAPES(AVX2, f32_avx2, 2)
F32_SHAPES(AVX2, f32_avx2, 3) F32_SHAPES(AVX2, f32_avx2, 4)
F32_SHAPES(AVX512, f32_512, 1) F32_SHAPES(AVX512, f32_512, 2)
F32_SHAPES(AVX512, f32_512, 3) F32_SHAPES(AVX512, f32_512, 4)

#define F32_TABLE(PFX)                                                                        \
    {                                                                                         \
        { PFX##_1x1, PFX##_1x2, PFX##_1x3, PFX##_1x4 },                                       \
        { PFX##_2x1, PFX##_2x2, PFX##_2x3, PFX##_2x4 },                                       \
        { PFX##_3x1, PFX##_3x2, PFX##_3x3, PFX##_3x4 },                                       \
        { PFX##_4x1, PFX##_4x2, PFX##_4x3, PFX##_4x4 },                                       \
    }

/* Blocks of 4 rows x 4 tokens over the tile. Weight and activation rows
 * are float rows (wrb, arb multiples of 4). */
static void f32_tiles(const f32_shape_fn tab[4][4], int64_t K, const uint8_t *w, uint64_t wrb,
                      int64_t nr, const uint8_t *a, uint64_t arb, int64_t nt, float *y,
                      int64_t ldy)
{
    assert(wrb % 4 == 0 && arb % 4 == 0);
    for (int64_t r = 0; r < nr; r += 4) {
        const int m = nr - r < 4 ? (int)(nr - r) : 4;
        const float *wr[4];
        for (int i = 0; i < m; i++)
            wr[i] = (const float *)(w + (uint64_t)(r + i) * wrb);
        for (int64_t t = 0; t < nt; t += 4) {
            const int u = nt - t < 4 ? (int)(nt - t) : 4;
            tab[m - 1][u - 1](K, wr, (const float *)(a + (uint64_t)t * arb), (int64_t)(arb / 4),
                              y + t * ldy + r, ldy);
        }
    }
}

void cpu_gemm_f32_lanes_avx2(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                             const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    static const f32_shape_fn tab[4][4] = F32_TABLE(f32_avx2);
    assert(K % 8 == 0);
    f32_tiles(tab, K, w, wrb, nr, a, arb, nt, y, ldy);
}

void cpu_gemm_f32_lanes_avx512(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                               const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    static const f32_shape_fn tab[4][4] = F32_TABLE(f32_512);
    assert(K % 16 == 0);
    f32_tiles(tab, K, w, wrb, nr, a, arb, nt, y, ldy);
}

/* ------------------------------------------------------------ picks */

cpu_tile_fn cpu_gemm_q8_0(void)
{
    if (quant_path_available(QUANT_PATH_AVX512VNNI))
        return cpu_gemm_q8_0_avx512vnni;
    if (quant_path_available(QUANT_PATH_AVX2))
        return cpu_gemm_q8_0_avx2;
    return gemm_q8_0_quant;
}

cpu_tile_fn cpu_gemm_f32_lanes(void)
{
    __builtin_cpu_init();
    const bool fma = __builtin_cpu_supports("fma");
    if (cpu_lanes() == 16 && fma && cpu_avx512_ok())
        return cpu_gemm_f32_lanes_avx512;
    if (cpu_lanes() == 8 && fma && __builtin_cpu_supports("avx2"))
        return cpu_gemm_f32_lanes_avx2;
    return cpu_gemm_f32_lanes_ref;
}
