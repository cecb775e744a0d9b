/* dot_impl.h: private declarations of the per-type dot products that
 * quant.c puts in its type table: the references (dot_ref.c) and the
 * AVX2+FMA twins (dot_avx2.c). Not for use outside src/quant. */
#ifndef Q36_QUANT_DOT_IMPL_H
#define Q36_QUANT_DOT_IMPL_H

#include <stdint.h>

#define QDOT(name) float quant_dot_##name##_ref(int64_t n, const void *w, const void *a)
QDOT(f32); QDOT(f16); QDOT(bf16);
QDOT(q4_0); QDOT(q4_1); QDOT(q5_0); QDOT(q5_1); QDOT(q8_0); QDOT(q1_0); QDOT(q2_0);
QDOT(mxfp4); QDOT(nvfp4); QDOT(iq4_nl);
QDOT(q2_K); QDOT(q3_K); QDOT(q4_K); QDOT(q5_K); QDOT(q6_K); QDOT(tq1_0); QDOT(tq2_0);
QDOT(iq2_xxs); QDOT(iq2_xs); QDOT(iq2_s); QDOT(iq3_xxs); QDOT(iq3_s); QDOT(iq1_s);
QDOT(iq1_m); QDOT(iq4_xs);
#undef QDOT

#if defined(__x86_64__)
#define QUANT_HAVE_AVX2 1
float quant_dot_q8_0_avx2(int64_t n, const void *w, const void *a);
float quant_dot_q4_K_avx2(int64_t n, const void *w, const void *a);
float quant_dot_q5_K_avx2(int64_t n, const void *w, const void *a);
float quant_dot_q6_K_avx2(int64_t n, const void *w, const void *a);
float quant_dot_iq4_xs_avx2(int64_t n, const void *w, const void *a);
#endif

#endif
