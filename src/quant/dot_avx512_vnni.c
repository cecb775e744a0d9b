/* dot_avx512_vnni.c: the AVX-512 dot products of the 32-element block
 * formats with AVX512-VNNI: the kernels of dot_avx512_b32.h with each
 * vpmaddubsw + vpmaddwd pair replaced by one vpdpbusd. The integer sums
 * are the same (exact either way), and so is the float work, so the
 * results equal the plain AVX-512 kernels' bit for bit
 * (tests/test_quant_paths.c checks it). quant.c calls these only when
 * the CPU also reports avx512_vnni. */
#include "dot_impl.h"

#ifdef QUANT_HAVE_AVX512
#define B32_VNNI 1
#define AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#include "dot_avx512_b32.h"

AVX512 float quant_dot_q8_0_avx512vnni(int64_t n, const void *w, const void *a)
{
    return dot_b32(n, w, a, K_Q8_0);
}

AVX512 float quant_dot_q4_0_avx512vnni(int64_t n, const void *w, const void *a)
{
    return dot_b32(n, w, a, K_Q4_0);
}

AVX512 float quant_dot_q5_0_avx512vnni(int64_t n, const void *w, const void *a)
{
    return dot_b32(n, w, a, K_Q5_0);
}

AVX512 float quant_dot_q4_1_avx512vnni(int64_t n, const void *w, const void *a)
{
    return dot_b32(n, w, a, K_Q4_1);
}

AVX512 float quant_dot_q5_1_avx512vnni(int64_t n, const void *w, const void *a)
{
    return dot_b32(n, w, a, K_Q5_1);
}

AVX512 float quant_dot_iq4_nl_avx512vnni(int64_t n, const void *w, const void *a)
{
    return dot_b32(n, w, a, K_IQ4_NL);
}

AVX512 float quant_dot_mxfp4_avx512vnni(int64_t n, const void *w, const void *a)
{
    return dot_b32(n, w, a, K_MXFP4);
}
#endif
