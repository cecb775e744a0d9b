/* cpu_amx.c: the float order of llama.cpp's matmuls on CPUs with AMX.
 *
 * On an x86 CPU with AMX-INT8 (Intel Sapphire Rapids and later) llama.cpp
 * loads its sapphirerapids build, and that build moves the weights of
 * plain matrix products (GGML_OP_MUL_MAT, not the experts' MUL_MAT_ID, not
 * the token embedding, which get_rows reads) into AMX buffers where their
 * shape allows: output rows a multiple of 32, inputs a multiple of the
 * block (32 for Q8_0, 256 for Q6_K). Those products then take AMX tile
 * products for batches and AVX-512 VNNI for single rows, both with one
 * order unlike the vec_dot order q36 follows elsewhere: each block's
 * integer sum is formed whole (for Q6_K, the sixteen sub-block sums times
 * their scales, 32 x the activation's sums taken off), converted to float
 * once, and the blocks meet in one chain of fused multiply-adds:
 *
 *     y = 0;  for each block b:  y = fma((float)isum_b, d_w,b * d_a,b, y)
 *
 * no lanes, no final reduction. Record bench/results/2026-12-01-gpuhost/
 * measured what not following it costs there (whole-model parity failed
 * on most quantized files). The integer sums are exact in any order, so
 * the kernels below only have to form them exactly and keep that chain.
 *
 * cpu_amx_detect mirrors llama.cpp's test: the CPU reports AMX-INT8 and
 * AVX-512 VNNI, and Linux grants the process the AMX tile state (the
 * arch_prctl request ggml makes; q36 itself executes no AMX instruction).
 *
 * Written from that description of the order; nothing is copied. */
#include "cpu_internal.h"
#include "cpu_q6k_lanes.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../quant/fp16.h"
#include "../../quant/types.h"

#define Q8_BLOCK 34      /* f16 scale + 32 int8 codes */
#define Q6K_BLOCK 210    /* 128 low nibbles, 64 high pairs, 16 scales, f16 d */
#define Q8K_BLOCK 292    /* f32 d, 256 codes, 16 sums of 16 */

bool cpu_amx_detect(void)
{
#if defined(__x86_64__) && defined(__linux__)
    unsigned a, b, c, d;
    __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
    const bool amx_int8 = d >> 25 & 1, vnni = c >> 11 & 1;
    if (!amx_int8 || !vnni)
        return false;
    /* ARCH_REQ_XCOMP_PERM (0x1023) for XFEATURE_XTILEDATA (18) */
    return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#else
    return false;
#endif
}

bool cpu_amx_shape(uint32_t type, int64_t K, int64_t N)
{
    if (N % 32)
        return false;
    if (type == QT_Q8_0)
        return K % 32 == 0;
    if (type == QT_Q6_K)
        return K % 256 == 0;
    return false;
}

static uint16_t rd16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* ------------------------------------------------------- references */

float cpu_dot_q8_0_amx_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float y = 0.0f;
    for (int64_t b = 0; b < n / 32; b++, w += Q8_BLOCK, a += Q8_BLOCK) {
        const int8_t *qw = (const int8_t *)(w + 2), *qa = (const int8_t *)(a + 2);
        int32_t s = 0;
        for (int e = 0; e < 32; e++)
            s += qw[e] * qa[e];
        const float d = quant_f16_to_f32(rd16(w)) * quant_f16_to_f32(rd16(a));
        y = fmaf((float)s, d, y);
    }
    return y;
}

/* Q6_K element e of a super-block: its 6-bit code (0..63) */
static int q6k_code(const uint8_t *w, int e)
{
    const uint8_t *ql = w, *qh = w + 128;
    const int half = e / 128, r = e % 128, g = r / 32, l = r % 32;
    const uint8_t lo = ql[64 * half + 32 * (g & 1) + l];
    const int lo4 = g < 2 ? lo & 15 : lo >> 4;
    return lo4 | ((qh[32 * half + l] >> (2 * g)) & 3) << 4;
}

float cpu_dot_q6_K_amx_ref(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float y = 0.0f;
    for (int64_t b = 0; b < n / 256; b++, w += Q6K_BLOCK, a += Q8K_BLOCK) {
        const int8_t *sc = (const int8_t *)(w + 192);
        const int8_t *q8 = (const int8_t *)(a + 4);
        float da;
        memcpy(&da, a, 4);
        int32_t s = 0;
        for (int j = 0; j < 16; j++) {          /* sub-blocks of 16 */
            int32_t sj = 0;
            for (int e = 16 * j; e < 16 * j + 16; e++)
                sj += (q6k_code(w, e) - 32) * q8[e];
            s += sc[j] * sj;
        }
        const float d = quant_f16_to_f32(rd16(w + 208)) * da;
        y = fmaf((float)s, d, y);
    }
    return y;
}

/* ---------------------------------------------------------- AVX2 */

#define AVX2 __attribute__((target("avx2,fma,f16c")))

AVX2 static inline int32_t hsum_i32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

/* |w| x (a with w's sign) by vpmaddubsw (a pair at most 2 * 128 * 127,
 * exact in 16 bits), pairs summed by vpmaddwd, the 8 lanes added as
 * integers: the block's exact sum */
AVX2 static float dot_q8_0_amx_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    const __m256i ones = _mm256_set1_epi16(1);
    float y = 0.0f;
    for (int64_t b = 0; b < n / 32; b++, w += Q8_BLOCK, a += Q8_BLOCK) {
        const __m256i wv = _mm256_loadu_si256((const __m256i *)(w + 2));
        const __m256i av = _mm256_loadu_si256((const __m256i *)(a + 2));
        const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(wv, wv), _mm256_sign_epi8(av, wv));
        const int32_t s = hsum_i32(_mm256_madd_epi16(p, ones));
        const float d = _cvtsh_ss(rd16(w)) * _cvtsh_ss(rd16(a));
        y = fmaf((float)s, d, y);
    }
    return y;
}

/* the super-block's exact integer sum: cpu_q6k_lanes.h's 8 lanes added */
AVX2 static float dot_q6_K_amx_avx2(int64_t n, const void *vw, const void *va)
{
    const uint8_t *w = vw, *a = va;
    float y = 0.0f;
    for (int64_t b = 0; b < n / 256; b++, w += Q6K_BLOCK, a += Q8K_BLOCK) {
        float da;
        memcpy(&da, a, 4);
        const float d = _cvtsh_ss(rd16(w + 208)) * da;
        y = fmaf((float)hsum_i32(cpu_q6k_lanes_avx2(w, a)), d, y);
    }
    return y;
}

static bool have_avx2(void)
{
    static int avx2 = -1;     /* set by be_cpu_new's thread (cpu_amx_dot) before workers run */
    if (avx2 < 0)
        avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("f16c");
    return avx2;
}

quant_dot_fn cpu_amx_dot(uint32_t type)
{
    const bool v = have_avx2();
    if (type == QT_Q8_0)
        return v ? dot_q8_0_amx_avx2 : cpu_dot_q8_0_amx_ref;
    if (type == QT_Q6_K)
        return v ? dot_q6_K_amx_avx2 : cpu_dot_q6_K_amx_ref;
    return NULL;
}
