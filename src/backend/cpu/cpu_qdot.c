/* cpu_qdot.c: K-quant dot products in the float order of ggml's x86 AVX2
 * kernels (the ones its AVX-512 builds run too), so that q36's matmul
 * outputs carry llama.cpp's exact bits (MODEL.md §9.2). The integer part of
 * a block dot is exact in any order; what fixes the bits is how the integer
 * sums are grouped into float lanes and in which order the lanes meet:
 *
 * Q6_K x Q8_K, per 256-element super-block: 8 float lanes. Group g of 32
 * elements (sub-blocks 2g and 2g+1 of 16) adds to integer lane L the
 * products of its elements 4L..4L+3 (6-bit codes 0..63) times the scale of
 * sub-block 2g (L < 4) or 2g+1 (L >= 4); the -32 offset leaves lane L as
 * 32 * (bsum_2L * scale_2L + bsum_2L+1 * scale_2L+1), bsum being the
 * activation's 16-element sums. Then lane_L = fma(d, (float)int_lane,
 * lane_L) with d = d_a * f16(d_w), and the 8 lanes meet as a halving tree.
 *
 * Which kernel llama.cpp runs matters: on x86 it repacks Q4_0, Q4_K, IQ4_NL
 * and MXFP4 weights with rows % 8 == 0 into interleaved layouts with their
 * own GEMV/GEMM order, so no vec_dot order reproduces those; Q6_K and Q8_0
 * are not repacked there and take vec_dot (or, for Q8_0, the llamafile GEMM
 * with the same order).
 *
 * Written from that description of the order; nothing is copied. */
#include "cpu_internal.h"
#include "cpu_q6k_lanes.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "../../quant/fp16.h"

float cpu_dot_q6_K_ggml_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float acc[8] = { 0 };
    for (int64_t b = 0; b < n / 256; b++, w += 210, a += 292) {
        const uint8_t *ql = w, *qh = w + 128;
        const int8_t *sc = (const int8_t *)(w + 192);
        uint16_t dh;
        float da;
        memcpy(&dh, w + 208, 2);
        memcpy(&da, a, 4);
        const int8_t *q8 = (const int8_t *)(a + 4);
        int16_t bsums[16];
        memcpy(bsums, a + 4 + 256, 32);
        const float d = da * quant_f16_to_f32(dh);
        int32_t lane[8] = { 0 };
        for (int j = 0; j < 2; j++)               /* halves of 128 elements */
            for (int g = 0; g < 4; g++) {         /* groups of 32: sub-blocks 8j+2g, +1 */
                const int is = 4 * j + g;
                for (int L = 0; L < 8; L++) {
                    int32_t s = 0;
                    for (int e = 4 * L; e < 4 * L + 4; e++) {
                        const int lo = (g & 1) ? ql[64 * j + 32 + e] : ql[64 * j + e];
                        const int code = ((g < 2 ? lo & 15 : lo >> 4) |
                                          (((qh[32 * j + e] >> (2 * g)) & 3) << 4));
                        s += code * q8[128 * j + 32 * g + e];
                    }
                    lane[L] += sc[2 * is + (L >= 4)] * s;
                }
            }
        for (int L = 0; L < 8; L++) {
            const int32_t off = 32 * (bsums[2 * L] * sc[2 * L] + bsums[2 * L + 1] * sc[2 * L + 1]);
            acc[L] = fmaf(d, (float)(lane[L] - off), acc[L]);
        }
    }
    return cpu_lane_sum(acc, 8);
}

/* The same lanes in AVX2 registers (cpu_q6k_lanes.h: exact integers), so
 * every float operation is the reference's, lane for lane. */
__attribute__((target("avx2,fma")))
static float dot_q6_K_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / 256; b++, w += 210, a += 292) {
        uint16_t dh;
        float da;
        memcpy(&dh, w + 208, 2);
        memcpy(&da, a, 4);
        const float d = da * quant_f16_to_f32(dh);
        const __m256i sumi = cpu_q6k_lanes_avx2(w, a);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    float l[8];
    _mm256_storeu_ps(l, acc);
    return cpu_lane_sum(l, 8);
}

float cpu_dot_q6_K_ggml(int64_t n, const void *w, const void *a)
{
    static int avx2 = -1;     /* set by cpu_fdot_init's thread before workers run */
    if (avx2 < 0)
        avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return avx2 ? dot_q6_K_avx2(n, w, a) : cpu_dot_q6_K_ggml_ref(n, w, a);
}
