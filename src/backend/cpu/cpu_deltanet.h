/* cpu_deltanet.h: the kernels of the DeltaNet layer's sequence ops: the
 * conv behind be_ssm_conv (cpu_conv.c) and the delta rule behind
 * be_deltanet (cpu_deltanet.c, cpu_deltanet_rows.c), and the plain
 * references they are tested against (cpu_deltanet_ref.c,
 * tests/test_cpu_deltanet.c). Private to src/backend/cpu/ and its tests.
 *
 * The fast kernels give the same bits as the references: they keep every
 * per-element operation and its order and change only which independent
 * elements run together and how often memory is touched. */
#ifndef Q36_CPU_DELTANET_H
#define Q36_CPU_DELTANET_H

#include "cpu_internal.h"

/* ------------------------------------------------------------------- conv */

/* The depthwise causal conv of be_ssm_conv for channels [c0, c1): x is
 * T x C, tail C x (Kc-1) (updated), w the {Kc, C} weight (w[c*Kc + i]),
 * y T x C. Each output sums its taps in order i = 0..Kc-1 from 0: the first
 * cpu_conv_nmul(Kc) taps as a rounded product then a rounded sum, the rest
 * as fused multiply-adds: ggml's ssm_conv as GCC built it for the x86
 * variant llama.cpp loads here (cpu_deltanet_ref.c, tests/test_ggml_conv.c).
 * Kc <= 17. */
void cpu_conv_ref(const be_tensor *x, be_tensor *tail, const float *w, int64_t Kc,
                  be_tensor *y, int64_t c0, int64_t c1);
/* How many leading taps of a Kc-tap conv are not fused: Kc rounded down to
 * the vector block the build's tap loop was vectorized with (8 floats in
 * the AVX-512 builds, 4 in haswell's; cpu_lanes() says which one runs). */
int64_t cpu_conv_nmul(int64_t Kc);
/* The same, 16 channels at a time (any c0, c1; AVX-512, AVX2 (both with
 * FMA) or plain C (libm's fmaf) chosen at run time, or forced with path:
 * 0 best, 1 AVX-512, 2 AVX2, 3 plain; a path the CPU lacks falls back to
 * plain). */
void cpu_conv_fast(const be_tensor *x, be_tensor *tail, const float *w, int64_t Kc,
                   be_tensor *y, int64_t c0, int64_t c1, int path);

/* ------------------------------------------------------------- delta rule */

/* One value head of the gated delta rule over T tokens (backend.h,
 * be_deltanet): q, k, v point at token 0's vectors (dk floats each), the
 * next token's are ld floats further; decay[t*dstride] = e^g_t and
 * beta[t*bstride] = beta_t; out[t*ldo + j] receives o_t[j] (scaled).
 * S is the head's state, row j = S[j*dk .. j*dk+dk) (backend.h's layout).
 * With src, token 0 reads the state's rows from src instead and writes
 * them to S (be_deltanet_keep: a kept row's state to the next one's,
 * without a copy). */
typedef struct {
    const float *q, *k, *v;
    int64_t ld;
    const float *decay, *beta;
    int64_t dstride, bstride;
    float *out;
    int64_t ldo;
    int64_t T, dk;
    float scale;
    const float *src;
} cpu_deltanet_head;

/* Rows [j0, j1) of the head's state through all T tokens. Row j's
 * recurrence reads only row j of S (and the token vectors), so a block of
 * rows can run every token before the next block: S is read and written
 * once per call instead of several times per token.
 * W is the lane count of the dot product order (16: ggml_vec_dot_f32 with
 * AVX-512, 8: with AVX2; backend.h); the _ref form is plain C for any W,
 * the fast form picks a kernel for W (AVX-512 for 16, AVX2 for 8, else
 * the reference). cpu_dot_vec_ref (cpu_internal.h) is the order. */
void cpu_deltanet_rows_ref(const cpu_deltanet_head *hd, float *S, int64_t j0, int64_t j1, int W);
void cpu_deltanet_rows(const cpu_deltanet_head *hd, float *S, int64_t j0, int64_t j1, int W);

/* The whole of be_deltanet as it was first written (one token at a time,
 * passes of cpu_scale, cpu_dot_vec and cpu_axpy over each head's state),
 * single-threaded, for the tests: the fast op must give its bits. */
void cpu_deltanet_ref(const be_tensor *qkv, const be_tensor *g, const be_tensor *beta,
                      be_tensor *S, int64_t Hk, int64_t Hv, int64_t dk, be_tensor *out);

#endif
