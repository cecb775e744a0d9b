/* quantize_act_simd.h: the vector twins of quantize_act.c's Q8_0 and Q8_K
 * block loops (quantize_act_simd.c). Same signature as the scalar loops:
 * nb blocks of floats at x into nb blocks at y; same bytes for every
 * input. Call only after quant_path_available() said the CPU runs the
 * path. Private to src/quant. */
#ifndef Q36_QUANT_ACT_SIMD_H
#define Q36_QUANT_ACT_SIMD_H

#include <stdint.h>

#if defined(__x86_64__)
void quant_act_q8_0_avx2(const float *x, uint8_t *y, int64_t nb);
void quant_act_q8_K_avx2(const float *x, uint8_t *y, int64_t nb);
void quant_act_q8_K_avx512(const float *x, uint8_t *y, int64_t nb);
#endif

#endif
