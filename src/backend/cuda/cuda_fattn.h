/* cuda_fattn.h: the C side of the CUDA backend's attention for prompt
 * batches (cuda_fattn.cu): whether it is switched on, and a host
 * emulation of its kernel for the CPU test suite (tests/test_cuda_emu.c).
 * Plain C.
 *
 * Switch. A CUDA context reserved for fast mode (be_shape.fast) sends its
 * be_attention calls of at least FA_MIN_ROWS query rows to the tiled
 * kernel (query rows of a run share each K/V tile through shared memory),
 * unless Q36_CUDA_FATTN=0 was in the environment when it was made; in
 * exact mode, or for fewer rows, the split kernel of cuda_seq.cu runs. */
#ifndef Q36_CUDA_FATTN_H
#define Q36_CUDA_FATTN_H

#include <stdbool.h>
#include <stdint.h>

struct be_shape;

#ifdef __cplusplus
extern "C" {
#endif

#define FA_MIN_ROWS 64

/* On for a shape in fast mode unless Q36_CUDA_FATTN is "0". */
bool cuda_fattn_enabled(const struct be_shape *s);

/* The kernel run on the host, block by block, phase by phase, every
 * thread index in turn (shared memory filled with NaN first), on
 * be_attention's arguments as host arrays: q T x ldq, the caches with
 * n_slots*kv_rows rows of pitch ldk / ldv (f32, or f16 bits when kv_f16),
 * runs as the batch's runs tensor (slot, first row, rows, first position),
 * out T x ldo. head_dim is 64, 128 or 256. Returns 0, or -1 for another
 * head_dim or no memory. */
int cuda_fattn_emulate(const float *q, int64_t ldq, const void *kc, int64_t ldk, const void *vc,
                       int64_t ldv, bool kv_f16, const int32_t *runs, int n_seq, int64_t kv_rows,
                       int64_t n_head, int64_t n_head_kv, int64_t head_dim, float scale,
                       float *out, int64_t ldo);

#ifdef __cplusplus
}
#endif

#endif
