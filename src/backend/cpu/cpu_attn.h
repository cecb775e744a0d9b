/* cpu_attn.h: what the attention files of the CPU backend share: the plain
 * reference (cpu_attn_ref.c), the tiled attention with a choice of kernel
 * set (cpu_attn.c), the AVX-512 kernels (cpu_attn_avx512.c) and the AVX2
 * kernels (cpu_attn_avx2.c). Only those files and tests/test_cpu_attn.c
 * include it.
 *
 * Every path gives the bits of cpu_attention_ref: the same operations on
 * the same values in the same order (backend.h, be_attention). */
#ifndef Q36_CPU_ATTN_H
#define Q36_CPU_ATTN_H

#include <immintrin.h>

#include "cpu_internal.h"
#include "../../quant/fp16.h"

/* be_attention's contract, one (query row, head) at a time, each K and V
 * element converted where it is read. */
void cpu_attention_ref(be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc,
                       int64_t pos0, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                       float scale, be_tensor *out);

/* be_attention over q8_0 K and V caches (cpu_attn_q8.c): ggml's CPU flash
 * attention order, the query quantized to q8_0 for the scores; head_dim a
 * multiple of 32. cpu_attention_q8_floats: the per-thread scratch it
 * takes. */
void   cpu_attention_q8(be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc,
                        int64_t pos0, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                        float scale, be_tensor *out);
size_t cpu_attention_q8_floats(int64_t head_dim, int64_t group);

/* Kernel sets of the tiled attention. GENERIC runs on any CPU (cpu_fdot's
 * dot and axpy, F16C conversion where present); AVX512 needs AVX-512F,
 * DQ, FMA and F16C and 16 lanes (cpu_lanes() == 16); AVX2 needs AVX2, FMA
 * and F16C, 8 lanes (cpu_lanes() == 8) and the AVX2 exp (cpu_vexp_level()
 * == 1): what llama.cpp's AVX2 build computes. Each path gives the
 * reference's bits at the lane count it needs, and only there. */
enum cpu_attn_path { CPU_ATTN_GENERIC, CPU_ATTN_AVX512, CPU_ATTN_AVX2 };
int  cpu_attn_best_path(void);
void cpu_attention_path(be_ctx *be, int path, const be_tensor *q, const be_tensor *kc,
                        const be_tensor *vc, int64_t pos0, int64_t n_head, int64_t n_head_kv,
                        int64_t head_dim, float scale, be_tensor *out);

/* Positions per block of K or V rows brought to f32 at once. */
#define CPU_ATTN_KB 128

/* The vector kernels of one path, with L = lanes (16 or 8) the positions
 * per vector, as declared for the AVX-512 set below; the AVX2 set is the
 * same with 8 in place of 16 (lane = position mod 8, scores in the 8-lane
 * order, zeros up to nb rounded up to 8). */
typedef struct {
    int lanes;
    void (*scores)(int64_t hd, int64_t nq, const float *q, const void *src, int64_t ld, int f16,
                   int64_t nb, float scale, float *s, int64_t sld);
    void (*softmax)(int64_t n, float *s, int f16);
    void (*scale_round)(int64_t n, float *x, float v, int f16);
    /* Lane accumulators of nq query vectors, acc[(i * L + lane) * hd + d]
     * (query i's block of L x hd, as cpu_attention_ref's), += probabilities
     * p[i * pld + pp] times row pp, column d of the cache rows at src (ld
     * elements apart, f16 when f16), fused, in position order, for
     * pp < nv[i] (nv[i] <= CPU_ATTN_KB). */
    void (*pv_rows)(int64_t nq, int64_t hd, const float *p, int64_t pld, const int64_t *nv,
                    const void *src, int64_t ld, int f16, float *acc);
    /* o[d] = the halving-tree sum over the L lanes of one query's block
     * (acc[lane * hd + d]); ald unused */
    void (*out)(int64_t hd, const float *acc, int64_t ald, float *o);
} cpu_attn_kernels;

/* ---------------------------------- scalar pieces of the vector kernels */

/* ggml_vec_dot_f32's tail of one score: acc plus elements np .. hd-1 of a
 * key row (f16 or f32) times q, rounded products for whole groups of
 * cpu_lanes()/2, then fused multiply-adds (cpu_fdot.c). Inlined into FMA
 * code. */
static inline __attribute__((always_inline)) float
cpu_attn_score_tail(int64_t np, int64_t hd, const float *q, const void *row, int f16, float acc)
{
    const int64_t g = cpu_lanes() / 2, nv8 = np + (hd - np) / g * g;
    for (int64_t i = np; i < hd; i++) {
        const float x = f16 ? quant_f16_to_f32(((const uint16_t *)row)[i]) : ((const float *)row)[i];
        if (i < nv8) {
            const float p = x * q[i];
            acc = acc + p;
        } else {
            acc = __builtin_fmaf(x, q[i], acc);
        }
    }
    return acc;
}

/* Asks for rows p0 .. p0+n-1 (none when n <= 0) of hd elements (f16 when
 * f16, ld apart) while the rows before them are worked on: the cache rows
 * of one KV head are short runs a whole row apart, which the hardware
 * prefetchers follow late. */
static inline void cpu_attn_prefetch_rows(const void *src, int64_t ld, int f16, int64_t hd,
                                          int64_t p0, int64_t n)
{
    const int64_t es = f16 ? 2 : 4;
    for (int64_t k = 0; k < n; k++) {
        const char *r = (const char *)src + (p0 + k) * ld * es;
        for (int64_t b = 0; b < hd * es; b += 64)
            _mm_prefetch(r + b, _MM_HINT_T0);
    }
}

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
/* Lane accumulators of nq query vectors, acc[(i * 16 + lane) * hd + d]
 * (lane = position mod 16), += probabilities times the cache rows: the
 * cpu_attn_kernels pv_rows contract at 16 lanes. */
void cpu_attn512_pv_rows(int64_t nq, int64_t hd, const float *p, int64_t pld,
                         const int64_t *nv, const void *src, int64_t ld, int f16, float *acc);
/* o[d] = the halving-tree sum of acc[lane * hd + d] over the 16 lanes. */
void cpu_attn512_out(int64_t hd, const float *acc, int64_t ald, float *o);

/* ---------------------------------------- AVX2 kernels (cpu_attn_avx2.c) */

/* The AVX-512 kernels' contracts at 8 lanes (see cpu_attn_kernels). */
void cpu_attn256_scores(int64_t hd, int64_t nq, const float *q, const void *src, int64_t ld,
                        int f16, int64_t nb, float scale, float *s, int64_t sld);
void cpu_attn256_softmax(int64_t n, float *s, int f16);
void cpu_attn256_scale_round(int64_t n, float *x, float v, int f16);
void cpu_attn256_pv_rows(int64_t nq, int64_t hd, const float *p, int64_t pld,
                         const int64_t *nv, const void *src, int64_t ld, int f16, float *acc);
/* o[d] = the halving-tree sum of acc[lane * hd + d] over the 8 lanes. */
void cpu_attn256_out(int64_t hd, const float *acc, int64_t ald, float *o);
extern const cpu_attn_kernels cpu_attn256_kernels;

#endif
