/* cuda_moe.h: the C side of the CUDA backend's grouped expert products
 * (cuda_moe.cu): whether they are switched on, and a host emulation of
 * their kernels for the CPU test suite (tests/test_cuda_emu.c). Plain C.
 *
 * Switch. A CUDA context reserved for fast mode (be_shape.fast) sends its
 * be_matmul_id calls of at least MG_MIN_ROWS (token, rank) rows (prompt
 * batches) to the grouped kernels: rows sorted by expert on the device,
 * each expert's rows multiplied as tiles of a matrix product, by default
 * in f16 on tensor cores (WMMA, f32 accumulators: the inputs rounded to
 * f16, 2^-11 relative each); Q36_CUDA_MOEGEMM=1 at the context's making
 * takes f32 tiles on the CUDA cores instead, =0 none. In exact mode, or
 * for fewer rows, every row runs the matrix-vector kernel of
 * cuda_matmul.cu. The emulation covers the f32 form and everything the two share
 * (routing, tiles, loads); only the GPU tests check the WMMA product. */
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
 * every batch of MG_MIN_ROWS rows): below it the tiles of 64 rows stay nearly empty
 * and the matrix-vector kernel, which reads an expert row once per (token,
 * rank) row, moves fewer bytes in less time (on the H200, 16 tokens of
 * the 35B-A3B, 128 rows over 256 experts: the grouped products 22 ms a
 * step against about 3 ms of weight reads; bench/results/
 * 2026-12-02-cuda-argmax/bb-1237cef.txt). */
#define MG_ROWS_PER_EXPERT 4

/* Whether Q (token, rank) rows over E experts take the grouped products
 * (when switched on) */
static inline bool cuda_moe_grouped(int64_t Q, int64_t E, int per_expert)
{
    return Q >= MG_MIN_ROWS && Q >= (int64_t)per_expert * E;
}

/* For a shape in fast mode: Q36_CUDA_MOEGEMM's 1, 0, or 2 (the default,
 * any other value); 0 in exact mode. */
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
