/* dot_avx2.c: AVX2+FMA twins of the most used reference dot products
 * (Q8_0, Q4_K, Q5_K, Q6_K, IQ4_XS). Placeholder until written. */
#include "dot_impl.h"

#ifdef QUANT_HAVE_AVX2
float quant_dot_q8_0_avx2(int64_t n, const void *w, const void *a) { return quant_dot_q8_0_ref(n, w, a); }
float quant_dot_q4_K_avx2(int64_t n, const void *w, const void *a) { return quant_dot_q4_K_ref(n, w, a); }
float quant_dot_q5_K_avx2(int64_t n, const void *w, const void *a) { return quant_dot_q5_K_ref(n, w, a); }
float quant_dot_q6_K_avx2(int64_t n, const void *w, const void *a) { return quant_dot_q6_K_ref(n, w, a); }
float quant_dot_iq4_xs_avx2(int64_t n, const void *w, const void *a) { return quant_dot_iq4_xs_ref(n, w, a); }
#endif
