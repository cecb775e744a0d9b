/* cpu_gemm_q8.h: tile kernels for Q8_0 and F32 weights whose every output
 * is bit-identical with the per-element dot product cpu_matmul.c's pick_dot
 * chooses for them today (and so with llama.cpp's x86 kernels where that
 * dot is). The signature is cpu_gemm.h's cpu_tile_fn:
 *
 *   fn(K, w, wrb, nr, a, arb, nt, y, ldy):
 *       y[t * ldy + r] = dot(weight row r, activation row t),  r < nr, t < nt
 *
 * weight row r at w + r * wrb, activation row t at a + t * arb; nr, nt >= 1,
 * any value; only the nr * nt outputs are written; thread-safe, no
 * allocation. An output depends on its own two rows alone, never on nr, nt
 * or its place in the tile.
 *
 * Q8_0 weights, Q8_0 activations (quant_act_quantize: codes in -127..127).
 * The order is the quant module's AVX2 kernel's (quant_dot_q8_0_avx2),
 * which pick_dot takes because llama.cpp's x86 Q8_0 kernels keep the same
 * 8 float lanes per block even on AVX-512: per 32-element block, int32
 * lane j holds the exact sum of the products of elements 4j..4j+3, the
 * block scale is d = f16(w) * f16(a) (exact: two 11-bit significands),
 * lane j = fma(d, (float)lane_sum, lane j) block after block, and the end
 * is ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)). Any kernel that keeps exactly
 * that per output gives the same bits. K a multiple of 32.
 *  cpu_gemm_q8_0_ref:        plain C, that order spelled out per output;
 *  cpu_gemm_q8_0_avx2:       AVX2: blocks of 2 rows x 4 tokens (4 x 1 for
 *                            one token), one 8-lane register per output;
 *  cpu_gemm_q8_0_avx512vnni: AVX-512 VNNI: two outputs (2 rows of one
 *                            token) per 16-lane register, blocks of 4 rows x
 *                            8 tokens (8 rows for one token); vpdpbusd on
 *                            (a + 128) x w minus 128 * sum(w), exact; the
 *                            8 tokens' codes + 128 and f32 scales are
 *                            packed once per 64 rows (a 72 KiB stack
 *                            buffer; K > 8192 runs unpacked).
 * cpu_gemm_q8_0() gives what matches pick_dot on this CPU: the AVX-512
 * kernel where quant_path_available(QUANT_PATH_AVX512VNNI), the AVX2 one
 * where QUANT_PATH_AVX2 is (both compute pick_dot's AVX2 order), else a
 * loop over quant_vec_dot_fn(QT_Q8_0) (what pick_dot takes there).
 *
 * F32 weights, F32 activations, K a multiple of the lane count W: the
 * llamafile f32 GEMM's order (cpu_dot_lanes): lane l = fma over the
 * elements i with i mod W = l, in order, then cpu_lane_sum's halving tree.
 *  cpu_gemm_f32_lanes_ref:    cpu_dot_lanes per output (W = cpu_lanes());
 *  cpu_gemm_f32_lanes_avx2:   W = 8 (the order of CPUs without AVX-512);
 *  cpu_gemm_f32_lanes_avx512: W = 16;
 * cpu_gemm_f32_lanes() gives the one of this CPU's W, else the reference.
 * cpu_dot_f32_lanes_ref(n, x, y, W) is the order in plain C for either W
 * (tests compare the AVX2 kernel with it on AVX-512 machines).
 *
 * Where cpu_matmul.c should call them: exactly where pick_dot returns
 * quant_vec_dot_fn_path(QT_Q8_0, QUANT_PATH_AVX2) (Q8_0 weights, dense or
 * experts) or cpu_dot_lanes (F32, dense, K % cpu_lanes() == 0, N % 4 == 0),
 * and not when be->dot_path >= 0 (Q36_DOT_PATH forces a quant-module
 * family). The picks do not change during a run; take them once. */
#ifndef Q36_CPU_GEMM_Q8_H
#define Q36_CPU_GEMM_Q8_H

#include <stdint.h>

/* the same type as cpu_gemm.h's (C11 allows the repeated typedef) */
typedef void (*cpu_tile_fn)(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                            const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy);

void cpu_gemm_q8_0_ref(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                       const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy);
void cpu_gemm_q8_0_avx2(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                        const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy);
void cpu_gemm_q8_0_avx512vnni(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                              const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy);
cpu_tile_fn cpu_gemm_q8_0(void);
/* cpu_gemm_q8_0_avx2 with the activations' block scales made once per
 * matmul instead of once per call (a prompt's matmul calls the tile for
 * every 16 weight rows, and those scales cost 6.7% of a Q8_0 pp512 pass
 * on a Zen 3, perf): da from cpu_q8_0_scales4 for the rows a, a + arb,
 * ... (row t's block b at da[(t / 4) * 4 nb + 4 b + t % 4], nb = K / 32,
 * zeros past the last row), taken where K <= 65,536 and nt > 1 (else the
 * plain call); the same outputs, bit for bit. AVX2 + FMA + F16C. */
void cpu_gemm_q8_0_avx2_da(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                           const uint8_t *a, uint64_t arb, const float *da, int64_t nt, float *y,
                           int64_t ldy);
/* floats of cpu_q8_0_scales4's table for nt rows of K */
int64_t cpu_q8_0_scales4_len(int64_t K, int64_t nt);
void cpu_q8_0_scales4(int64_t K, const uint8_t *a, uint64_t arb, int64_t nt, float *da);
/* One token: cpu_gemm_q8_0_avx512vnni takes the AVX2 decode kernel (the
 * same bits; faster on weights streamed from memory) unless this was set
 * on; process-wide, off by default. be_cpu_new sets it from the
 * environment (Q36_Q8_DECODE512=1), tests set both ways. */
void cpu_gemm_q8_decode512(int on);

void cpu_gemm_f32_lanes_ref(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                            const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy);
void cpu_gemm_f32_lanes_avx2(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                             const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy);
void cpu_gemm_f32_lanes_avx512(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                               const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy);
cpu_tile_fn cpu_gemm_f32_lanes(void);

/* The Q8_0 order and the f32 lane order in plain C, one output. */
float cpu_dot_q8_0_lanes_ref(int64_t K, const uint8_t *w, const uint8_t *a);
float cpu_dot_f32_lanes_ref(int64_t n, const float *x, const float *y, int W);

#endif
