/* cpu_attn.h: what the attention files of the CPU backend share: the plain
 * reference (cpu_attn_ref.c), the tiled attention with a choice of kernel
 * set (cpu_attn.c) and the AVX-512 kernels (cpu_attn_avx512.c). Only those
 * files and tests/test_cpu_attn.c include it.
 *
 * Every path gives the bits of cpu_attention_ref: the same operations on
 * the same values in the same order (backend.h, be_attention). */
#ifndef Q36_CPU_ATTN_H
#define Q36_CPU_ATTN_H

#include "cpu_internal.h"

/* be_attention's contract, one (query row, head) at a time, each K and V
 * element converted where it is read. */
void cpu_attention_ref(be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc,
                       int64_t pos0, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                       float scale, be_tensor *out);

/* Kernel sets of the tiled attention. GENERIC runs on any CPU (cpu_fdot's
 * dot and axpy, F16C conversion where present); AVX512 needs AVX-512F,
 * DQ, FMA and F16C and 16 lanes (cpu_lanes() == 16). */
enum cpu_attn_path { CPU_ATTN_GENERIC, CPU_ATTN_AVX512 };
int  cpu_attn_best_path(void);
void cpu_attention_path(be_ctx *be, int path, const be_tensor *q, const be_tensor *kc,
                        const be_tensor *vc, int64_t pos0, int64_t n_head, int64_t n_head_kv,
                        int64_t head_dim, float scale, be_tensor *out);

/* Positions per block of K or V rows brought to f32 at once. */
#define CPU_ATTN_KB 128

/* ------------------------------------- AVX-512 kernels (cpu_attn_avx512.c) */

/* s[i * sld + k] = dot(key k, query i) * scale for queries i < nq (rows
 * hd apart) and the nb keys of a block (src rows ld apart, f16 when f16),
 * each dot in ggml_vec_dot_f32's 16-lane order; from nb to nb rounded up
 * to 16, s is 0. */
void cpu_attn512_scores(int64_t hd, int64_t nq, const float *q, const void *src, int64_t ld,
                        int f16, int64_t nb, float scale, float *s, int64_t sld);
/* Scores s[0..n) to probabilities in place, the reference's softmax
 * (max, ggml's lane exp of cpu_gexp.h, per-16 tree sums added in double,
 * one float 1/sum), rounded to f16 and back when f16. */
void cpu_attn512_softmax(int64_t n, float *s, int f16);
/* x[i] = x[i] * v for i < n, then rounded to f16 and back when f16. */
void cpu_attn512_scale_round(int64_t n, float *x, float v, int f16);
/* vt[d * CPU_ATTN_KB + p] = row p, column d, for p < n (rows of hd values,
 * f16 when f16, ld elements apart), 0 from n to n rounded up to 16. */
void cpu_attn512_vt(int64_t n, int64_t hd, const void *src, int64_t ld, int f16, float *vt);
/* Lane accumulators of nq query vectors (acc + (d * ald + i) * 16, lane =
 * position mod 16) += probabilities p[i * pld + pp] times vt column d
 * row pp, fused, in position order, for pp < nv[i] (nv[i] <= CPU_ATTN_KB).
 * Column-major accumulators: the 4 columns a pass works on are contiguous
 * for all queries (query-major, they sat 16 KiB apart and fought over the
 * same L1 sets). */
void cpu_attn512_pv(int64_t nq, int64_t hd, const float *p, int64_t pld, const int64_t *nv,
                    const float *vt, float *acc, int64_t ald);
/* o[d] = the halving-tree sum of the 16 lanes of acc + d * ald * 16, d < hd. */
void cpu_attn512_out(int64_t hd, const float *acc, int64_t ald, float *o);

#endif
