/* cuda_mmq.h: fast mode's products of Q4_K and Q6_K weights with batches
 * of a few int8 rows of x on the tensor cores (cuda_mmq.cu, k_mmq), for
 * cuda_matmul.cu's matvec: several slots' decode steps, verify passes.
 * Included by CUDA sources only. */
#ifndef Q36_CUDA_MMQ_H
#define Q36_CUDA_MMQ_H

#include "cuda.h"

#include <stdint.h>

#define MMQ_JOBS 4

/* Up to MMQ_JOBS weights (Q4_K, Q6_K or F32, K wide) that read the same
 * rows of x: weight j writes y[j] (row r of x to y[j] + r * ldy[j]), its
 * N[j] output rows in tiles of 16, blocks tile0[j] .. tile0[j + 1] of
 * the grid (cuda_mmq fills tile0 from N). */
typedef struct mmq_jobs {
    const uint8_t *W[MMQ_JOBS];
    float         *y[MMQ_JOBS];
    int64_t        ldy[MMQ_JOBS];
    int64_t        N[MMQ_JOBS];
    int64_t        tile0[MMQ_JOBS + 1];
    uint64_t       rb[MMQ_JOBS];
    uint32_t       type[MMQ_JOBS];
    int            n;
} mmq_jobs;

/* Queues the product of the jobs with R rows (1 <= R <= MMQ_ROWS) of x
 * as k_q8x leaves them (qx: R x K int8, dx: R x K / 32 (scale, scale *
 * sum) pairs); K % 256 == 0. Jobs of type F32 (K * 4 bytes a row) read
 * the f32 rows x (pitch ldx, 16-byte aligned rows; x NULL: none taken).
 * False, nothing queued, for a shape or type it does not take or a
 * device below sm_80. */
#define MMQ_ROWS 32
bool cuda_mmq(be_ctx *be, const mmq_jobs *J, int64_t K, const int8_t *qx, const float2 *dx,
              int64_t R, const float *x, int64_t ldx);

/* The expert product y[q] = W_e · x (be_matmul_id) of T <= MMQ_ROWS
 * tokens on the tensor cores, rows grouped by expert as a's routing has
 * them (cuda_moe_sort; a->x_per_tok: a row of x a token), qx and dx x's
 * int8 rows; with W2 (the up weight, same type and shape) swiglu(W x,
 * W2 x) goes out. False, nothing queued, for what it does not take. */
struct mg_args;
bool cuda_mmq_grp(be_ctx *be, uint32_t type, const uint8_t *W, const uint8_t *W2, uint64_t rb,
                  int64_t K, int64_t N, int64_t E, const struct mg_args *a, const int8_t *qx,
                  const float2 *dx, int64_t T, float *y, int64_t ldy);

#endif
