/* cuda_topk.h: a host emulation of the CUDA backend's be_topk kernel
 * (cuda_topk.cu) for the CPU test suite (tests/test_cuda_emu.c). Plain C. */
#ifndef Q36_CUDA_TOPK_H
#define Q36_CUDA_TOPK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kernel run on the host, row by row, phase by phase, every thread
 * index in turn (shared memory filled with garbage first), on be_topk's
 * arguments as host arrays: x rows x n (pitch ldx), ids and vals rows x k
 * (pitches ldi, ldv), 1 <= k <= 64. Returns 0, or -1 for a k outside it. */
int cuda_topk_emulate(const float *x, int64_t ldx, int64_t rows, int64_t n, int k, int32_t *ids,
                      int64_t ldi, float *vals, int64_t ldv);

#ifdef __cplusplus
}
#endif

#endif
