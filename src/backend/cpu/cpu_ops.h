/* cpu_ops.h: what the CPU backend's row-wise op files (cpu_ops.c, the
 * element-wise ops; cpu_norm.c, the norms) share, and the vector-level
 * entry points their tests hold against the plain C references. */
#ifndef Q36_CPU_OPS_H
#define Q36_CPU_OPS_H

#include <stdint.h>

/* Row-wise ops split their rows over the pool in chunks of at least
 * CPU_ROW_ELEMS floats: one token (decode) is always one chunk, run on the
 * calling thread without a hand-off; a prompt's rows are shared. */
#define CPU_ROW_ELEMS 16384

static inline int64_t cpu_row_grain(int64_t cols)
{
    return cols >= CPU_ROW_ELEMS ? 1 : CPU_ROW_ELEMS / (cols > 0 ? cols : 1);
}

/* y = x * (1 / sqrtf(mean + eps)) * w (w per group element, or NULL), then
 * * post when post != 1, for `rows` rows of `cols` floats (row starts ldx
 * and ldy floats apart) in groups of `group` (cols a multiple of it); mean
 * is the group's float squares summed in order in double, over group.
 * level 0 is the plain C reference, 1 the AVX2 kernel, 2 the AVX-512 one
 * (the CPU's cpu_vexp_level() caps it): every level gives the same bits.
 * y may be x. */
void cpu_norm_rows_level(int level, int64_t rows, int64_t cols, int64_t group, const float *x,
                         int64_t ldx, const float *w, float eps, float post, float *y,
                         int64_t ldy);

/* sum[q] = the float squares of group q (rows * cols / group of them, row
 * after row) summed in order in double: the sums cpu_norm_rows_level scales
 * by, on the same levels, exposed so tests see their bits before the float
 * rounding of the mean hides most of them. */
void cpu_norm_sums_level(int level, int64_t rows, int64_t cols, int64_t group, const float *x,
                         int64_t ldx, double *sum);

#endif
