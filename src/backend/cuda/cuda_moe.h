/* cuda_moe.h: the C side of the CUDA backend's grouped expert products
 * (cuda_moe.cu): whether they are switched on, and a host emulation of
 * their kernels for the CPU test suite (tests/test_cuda_emu.c). Plain C.
 *
 * Switch. A CUDA context reserved for fast mode (be_shape.fast) sends its
 * be_matmul_id calls of at least MG_MIN_ROWS (token, rank) rows (prompt
 * batches) to the grouped kernels: rows sorted by expert on the device,
 * each expert's rows multiplied as tiles of a matrix product, by default
 * in f16 on tensor cores (WMMA, f32 accumulators: the inputs rounded to
 * f16, 2^-11 relative each). Q36_CUDA_MOEGEMM at the context's making:
 * 1, f32 tiles on the CUDA cores (MG_MODE_F32); 2, f16 tiles that
 * dequantize their weights inside the product (MG_MODE_TC, cuda_moe.cu);
 * 3, f16 tiles of weights dequantized to f16 a slab of experts at a time
 * ahead of the product (MG_MODE_PRE, cuda_moe_pre.cu); unset or any other
 * value, MG_MODE_AUTO: 3 for batches of at least MG_PRE_ROWS rows an
 * expert on average, else 2; 0 none. 2 and 3 round the same inputs the
 * same way. In exact mode, or for fewer rows, every row runs the
 * matrix-vector kernel of cuda_matmul.cu. The emulation covers the f32
 * form and everything the kinds share (routing, tiles, loads); only the
 * GPU tests check the WMMA products. */
#ifndef Q36_CUDA_MOE_H
#define Q36_CUDA_MOE_H

#include <stdbool.h>
#include <stdint.h>

struct be_shape;

#ifdef __cplusplus
extern "C" {
#endif

#define MG_MIN_ROWS 64
/* ... and at least this many rows an expert on average (E experts: Q >=
 * per_expert * E; Q36_CUDA_MOEROWS, default MG_ROWS_PER_EXPERT, 0 for
 * every batch of MG_MIN_ROWS rows): below it the tiles of 64 rows stay
 * nearly empty and the matrix-vector kernel, which reads an expert row
 * once per (token, rank) row, moves fewer bytes in less time. On the
 * H200, 35B-A3B decode steps of 64 slots (512 rows over 256 experts):
 * 36.1 ms a step grouped against 42.8 on the matvec kernels (run-7f067a8);
 * of 16 slots (128 rows), 30.3 against 14.5 with the earlier 64 x 64
 * tiles (run-43f896e; both bench/results/2026-12-02-cuda-moe-rows/). */
#define MG_ROWS_PER_EXPERT 2
/* ... but MG_SMALL_ROWS_PER_EXPERT when the layer's whole expert weight
 * takes at most an eighth of L2 (and Q36_CUDA_MOEROWS is unset): the
 * matrix-vector kernel's rereads of an expert then come from L2, and the
 * grouped path's sort, gathers and tiles are the larger cost. On an H100,
 * the trained default model (32 experts of 64 x 256, Q8_0, 0.5 MiB a
 * weight): a 16-slot decode step 1.018 ms grouped (2 rows an expert)
 * against 0.820 on the matvec kernels (Q36_CUDA_MOEROWS=4 and =8 alike;
 * bench/results/2026-12-05-cuda-small-model-rows/). */
#define MG_SMALL_ROWS_PER_EXPERT 8

enum { MG_MODE_F32 = 1, MG_MODE_TC = 2, MG_MODE_PRE = 3, MG_MODE_AUTO = 4 };

/* MG_MODE_AUTO takes the f16 weight slabs from this many rows an expert
 * on average. Dequantizing every expert ahead is a fixed cost (30 ms of
 * the 35B-A3B's pp4096); it pays once the tiles of k_moe_gemm_tc would
 * dequantize each expert's weights often enough. Measured on the 35B-A3B
 * (bench/results/2026-12-02-cuda-prefill/, run-f169360): at pp512 (16
 * rows an expert) mode 2 was 26% faster, at pp4096 (128) mode 3 won; the
 * two runs' profiles put the crossing near 40 */
#define MG_PRE_ROWS 48
/* at most this many halves of f16 expert weights at a time (1 GiB; the
 * 35B-A3B's 256 experts of 2048 x 512 take 256 Mi) */
#define MG_SLAB_HALVES ((int64_t)1 << 29)

/* Whether Q (token, rank) rows over E experts take the grouped products
 * (when switched on) */
static inline bool cuda_moe_grouped(int64_t Q, int64_t E, int per_expert)
{
    return Q >= MG_MIN_ROWS && Q >= (int64_t)per_expert * E;
}

/* The rows an expert a batch needs on average to take the grouped
 * products of an expert weight of stack_bytes (all E experts):
 * Q36_CUDA_MOEROWS when set (per_expert >= 0), else MG_ROWS_PER_EXPERT,
 * or MG_SMALL_ROWS_PER_EXPERT for a stack within l2_bytes / 8 */
static inline int cuda_moe_rows_for(int per_expert, uint64_t stack_bytes, uint64_t l2_bytes)
{
    if (per_expert >= 0)
        return per_expert;
    return stack_bytes <= l2_bytes / 8 ? MG_SMALL_ROWS_PER_EXPERT : MG_ROWS_PER_EXPERT;
}

/* For a shape in fast mode: Q36_CUDA_MOEGEMM's 0, MG_MODE_F32 (1),
 * MG_MODE_TC (2), MG_MODE_PRE (3), or MG_MODE_AUTO (unset, any other
 * value); 0 in exact mode. */
int cuda_moe_mode(const struct be_shape *s);

/* The grouped kernels run on the host (cuda_chunk.h says how: block by
 * block, phase by phase, every thread index of a phase in turn, shared
 * memory filled with NaN first), for be_matmul_id's arguments as host
 * arrays: Wf the weight already dequantized (E*N rows of K floats: expert
 * e's output n is row e*N + n), x with XR rows of pitch ldx (XR = T: one
 * row per token, shared by its k ranks; XR = T*k: one row per (token,
 * rank)), sel T x k expert ids (pitch ldsel; one outside [0, E) reads
 * expert 0, as the device kernels do), y T*k rows of pitch ldy. Returns 0,
 * or -1 without memory. */
int cuda_moe_emulate(const float *Wf, int64_t K, int64_t N, int64_t E, const float *x,
                     int64_t XR, int64_t ldx, const int32_t *sel, int64_t ldsel, int64_t k,
                     int64_t T, float *y, int64_t ldy);

#ifdef __cplusplus
}
#endif

#endif
