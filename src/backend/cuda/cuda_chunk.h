/* cuda_chunk.h: the C side of the CUDA backend's chunked delta rule
 * (cuda_chunk.cu): whether it is switched on, and a host emulation of its
 * two kernels that the CPU test suite runs (tests/test_deltanet_chunk.c),
 * so the kernels' index arithmetic and algebra are checked on a machine
 * without a GPU. Plain C: the tests include it.
 *
 * Switch. A CUDA context reserved for fast mode (be_shape.fast) sends its
 * be_deltanet_chunked (fast mode's prompt runs) to the chunked kernels,
 * unless Q36_CUDA_CHUNKED=0 was in the environment when it was made (then
 * the token-by-token recurrence). Its state kernel runs in f32 on the
 * tensor cores in TF32 (k_chunk_state_tc), or with Q36_CUDA_CHUNKTC=0 in
 * f32 on the CUDA cores (the kernel the emulation runs). Exact mode never
 * reaches them: it calls be_deltanet. */
#ifndef Q36_CUDA_CHUNK_H
#define Q36_CUDA_CHUNK_H

#include <stdbool.h>
#include <stdint.h>

struct be_shape;

#ifdef __cplusplus
extern "C" {
#endif

/* On for a shape in fast mode unless Q36_CUDA_CHUNKED is "0". */
bool cuda_chunk_enabled(const struct be_shape *s);

/* The two kernels of the chunked form run on the host, block by block and,
 * within a block, phase by phase (a phase is the code between two of the
 * kernel's barriers), every thread index of a phase in turn: the same
 * functions the device runs, with the same shared-memory layout (filled
 * with NaN before each block, so a read of anything a phase did not write
 * shows). Arguments as be_deltanet_chunked's tensors (backend.h), as host
 * arrays with their row pitches: qkv T x ldq, g and beta T x ld, S one row
 * of ldS floats per (slot, value head), out T x ldo; runs holds n_seq
 * records (slot, first row, rows, first position) as the batch's runs
 * tensor does. dk is 32, 64, 128 or 256. ckpt: NULL, or room for
 * n_seq x C_max x n_v_heads states of dk*dk floats (C_max: the chunks of
 * the longest run), which receives run s's state after its chunk c (64
 * tokens from the run's first row; the last one may be shorter) at
 * [(s*C_max + c)*n_v_heads + h]*dk*dk, laid out as S: the kernel's
 * chunk-boundary checkpoints. prep_pb: the prep phases are
 * k_chunk_prep_pb's (cuda_chunk_pb.h), else k_chunk_prep's. Returns 0,
 * or -1 for another dk or no memory. Slow (plain loops): for tests. */
int cuda_chunk_emulate(const float *qkv, int64_t ldq, const float *g, int64_t ldg,
                       const float *beta, int64_t ldb, float *S, int64_t ldS, int64_t n_k_heads,
                       int64_t n_v_heads, int64_t dk, const int32_t *runs, int n_seq, int64_t T,
                       float *out, int64_t ldo, float *ckpt, int prep_pb);

#ifdef __cplusplus
}
#endif

#endif
