/* cpu_gemm.h: tile kernels of the CPU backend's quantized matrix products.
 * A tile is nr weight rows times nt activation rows; one call computes all
 * nr * nt dot products, so a kernel can unpack a weight block once for
 * several tokens and decode its scales once for several rows, and ends
 * several rows with one combined horizontal reduction (decode: nt = 1).
 *
 *   fn(K, w, wrb, nr, a, arb, nt, y, ldy):
 *       y[t * ldy + r] = dot(weight row r, activation row t),  r < nr, t < nt
 *
 * K elements per row (a multiple of the weight's block size); weight row r
 * starts at w + r * wrb; activation row t, already quantized to the
 * weight's vec_dot_type (quant_act_quantize), at a + t * arb. nr, nt >= 1,
 * any value. Kernels read only the rows they are given and write only the
 * nr * nt outputs; they are thread-safe and never allocate.
 *
 * Numerics: a block's integer sums are exact, so a tile kernel differs from
 * the quant module's dot products (quant_vec_dot_ref) only in the order of
 * its float work: Q4_K's within tests/quant_bound.h's bound; Q5_K's and
 * Q6_K's (below) exactly the bits of the per-output dot the matmul would
 * otherwise take. Every output depends
 * on its own weight row and activation row alone, never on nr, nt or where
 * the row sits in the tile: a row gives the same bits in a batch of any
 * size (tests/test_cpu_gemm.c checks both).
 *
 * Other tile kernels with this signature (Q8_0, F32) live in cpu_gemm_q8.h. */
#ifndef Q36_CPU_GEMM_H
#define Q36_CPU_GEMM_H

#include <stdint.h>

typedef void (*cpu_tile_fn)(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                            const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy);

/* cpu_gemm_k4.c: Q4_K weights, Q8_K activations. All three give the same
 * bits (per block: four int32 lanes per output, f32 lanes scaled by d,
 * dmin and the activation scale, one lane sum at the end; cpu_gemm_k4.c
 * spells the order out):
 *  _ref:        plain C, one output at a time;
 *  _avx2:       blocks of 2 rows x up to 4 tokens (one token: row by
 *               row), AVX2 + FMA + F16C; call
 *               only where quant_path_available(QUANT_PATH_AVX2);
 *  _avx512vnni: blocks of 4 rows x up to 6 tokens (one token: row by row),
 *               AVX-512 F/BW/VL + VNNI;
 *               call only where quant_path_available(QUANT_PATH_AVX512VNNI).
 * cpu_gemm_q4_K() gives the fastest one this CPU runs (the quant module's
 * CPU checks and its Q36_QUANT_PATH_MAX cap decide). */
void cpu_gemm_q4_K_ref(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                       const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy);
void cpu_gemm_q4_K_avx2(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                        const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy);
void cpu_gemm_q4_K_avx512vnni(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                              const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy);
cpu_tile_fn cpu_gemm_q4_K(void);

/* A kernel that rearranges each activation row before its products (the
 * AVX2 Q4_K, Q5_K and Q6_K tiles: cpu_gemm_mix.h's byte order and the
 * sums of 32 the Q4_K tile's mins take; one form for the three) can
 * take the rows rearranged once per matmul, where a prompt's rows would
 * otherwise be rearranged again for every tile of the weight they meet:
 *   bytes(K)       bytes of one row's prepared form (a multiple of 16);
 *   row(K, a, m)   writes the form of activation row a at m (16-byte
 *                  aligned);
 *   tile(K, w, wrb, nr, a, arb, m, mrb, nt, y, ldy)
 *                  the kernel's fn with row t's form at m + t * mrb beside
 *                  row t itself; the same outputs, bit for bit.
 * cpu_gemm_q4_K_avx2_prep() is the AVX2 kernel's (call only where
 * quant_path_available(QUANT_PATH_AVX2); NULL off x86-64);
 * cpu_gemm_q4_K_prep() is the prepared form of cpu_gemm_q4_K()'s kernel,
 * or NULL where that kernel takes its rows as they are; the same for
 * Q5_K and Q6_K below. Forms with the same row function are the same
 * form. A form is 1.0625 bytes an element (272 bytes a block of 256). */
typedef struct {
    uint64_t (*bytes)(int64_t K);
    void (*row)(int64_t K, const uint8_t *a, uint8_t *m);
    void (*tile)(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr, const uint8_t *a,
                 uint64_t arb, const uint8_t *m, uint64_t mrb, int64_t nt, float *y, int64_t ldy);
} cpu_tile_prep;
const cpu_tile_prep *cpu_gemm_q4_K_avx2_prep(void);
const cpu_tile_prep *cpu_gemm_q4_K_prep(void);

/* cpu_gemm_k6.c: Q6_K weights, Q8_K activations. Unlike Q4_K's, these give
 * for every output exactly the bits of cpu_dot_q6_K_ggml (cpu_qdot.c:
 * ggml's x86 order, eight int32 lanes per block, which is what pick_dot
 * takes for Q6_K), so they may go wherever that dot goes:
 *  _ref:        cpu_dot_q6_K_ggml_ref per output;
 *  _avx2:       one row x up to 4 tokens, AVX2 + FMA + F16C; call only
 *               where quant_path_available(QUANT_PATH_AVX2);
 *  _avx512vnni: blocks of 4 rows x up to 4 tokens (one token: one row
 *               at a time), AVX-512 F/BW/VL + VNNI; call
 *               only where quant_path_available(QUANT_PATH_AVX512VNNI).
 * cpu_gemm_q6_K() gives the fastest one this CPU runs. */
void cpu_gemm_q6_K_ref(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                       const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy);
void cpu_gemm_q6_K_avx2(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                        const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy);
void cpu_gemm_q6_K_avx512vnni(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                              const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy);
cpu_tile_fn cpu_gemm_q6_K(void);
const cpu_tile_prep *cpu_gemm_q6_K_avx2_prep(void);
const cpu_tile_prep *cpu_gemm_q6_K_prep(void);

/* cpu_gemm_k5.c: Q5_K weights, Q8_K activations, every output with the
 * bits of the quant module's AVX-512 Q5_K dot (sixteen int32 lanes and
 * eight min lanes per block; cpu_gemm_k5.c spells the order out), which is
 * what pick_dot takes for Q5_K where the AVX-512 path is the quant
 * module's pick:
 *  _ref:        cpu_dot_q5_K_lanes_ref per output (plain C);
 *  _avx512vnni: blocks of 2 rows x up to 6 tokens (one token: the quant
 *               module's AVX-512 dot per row), AVX-512 F/BW/VL + VNNI;
 *  _avx2:       the bits of the quant module's AVX2 dot instead: 1 row x
 *               up to 4 tokens (up to 4 tokens in all: that dot per
 *               output), AVX2 + FMA + F16C.
 * cpu_gemm_q5_K() gives the AVX-512 kernel where that dot is
 * quant_vec_dot_fn(QT_Q5_K) and VNNI is available, the AVX2 one where the
 * AVX2 dot is, else NULL (no tile: the per-output dot keeps its own
 * order). */
float cpu_dot_q5_K_lanes_ref(int64_t K, const void *w, const void *a);
void cpu_gemm_q5_K_ref(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                       const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy);
void cpu_gemm_q5_K_avx512vnni(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                              const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy);
void cpu_gemm_q5_K_avx2(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                        const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy);
cpu_tile_fn cpu_gemm_q5_K(void);
const cpu_tile_prep *cpu_gemm_q5_K_avx2_prep(void);
const cpu_tile_prep *cpu_gemm_q5_K_prep(void);

#endif
