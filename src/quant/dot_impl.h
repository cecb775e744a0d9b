/* dot_impl.h: private declarations of the per-type dot products that
 * quant.c puts in its type table: the references (dot_ref.c) and the
 * AVX2+FMA+F16C twins (dot_avx2.c, dot_avx2_iq.c) and the AVX-512 ones of
 * the types that have them (dot_avx512.c, dot_avx512_vnni.c). Not for use outside src/quant. */
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
#define QDOTX(name) float quant_dot_##name##_avx2(int64_t n, const void *w, const void *a)
QDOTX(f32); QDOTX(f16); QDOTX(bf16);
QDOTX(q4_0); QDOTX(q4_1); QDOTX(q5_0); QDOTX(q5_1); QDOTX(q8_0); QDOTX(iq4_nl); QDOTX(mxfp4);
QDOTX(q2_K); QDOTX(q3_K); QDOTX(q4_K); QDOTX(q5_K); QDOTX(q6_K); QDOTX(iq4_xs);
QDOTX(iq2_xxs); QDOTX(iq2_xs); QDOTX(iq2_s); QDOTX(iq3_xxs); QDOTX(iq3_s); QDOTX(iq1_s);
QDOTX(iq1_m); QDOTX(q1_0); QDOTX(q2_0); QDOTX(nvfp4); QDOTX(tq2_0); QDOTX(tq1_0);
#undef QDOTX

#define QUANT_HAVE_AVX512 1
#define QDOTZ(name) float quant_dot_##name##_avx512(int64_t n, const void *w, const void *a)
QDOTZ(f32); QDOTZ(f16); QDOTZ(bf16);
QDOTZ(q4_0); QDOTZ(q4_1); QDOTZ(q5_0); QDOTZ(q5_1); QDOTZ(q8_0); QDOTZ(iq4_nl); QDOTZ(mxfp4);
QDOTZ(q2_K); QDOTZ(q3_K); QDOTZ(q4_K); QDOTZ(q5_K); QDOTZ(q6_K); QDOTZ(iq4_xs);
#undef QDOTZ
#define QDOTV(name) float quant_dot_##name##_avx512vnni(int64_t n, const void *w, const void *a)
QDOTV(q4_0); QDOTV(q4_1); QDOTV(q5_0); QDOTV(q5_1); QDOTV(q8_0); QDOTV(iq4_nl); QDOTV(mxfp4);
#undef QDOTV
#endif

#endif
