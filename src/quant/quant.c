/* quant.c: the per-type table of src/quant (dequantizer, activation type,
 * reference and fast dot product) and the public entry points of quant.h.
 * The kernels of each path (reference, AVX2, AVX-512) and the fast kernel
 * of a type are chosen once, by CPU feature, on first use. */
#include "quant.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#ifdef __x86_64__
#include <cpuid.h>
#endif

#include "dot_impl.h"
#include "quant_impl.h"
#include "../util/err.h"

typedef struct {
    quant_dequant_fn dequant;
    int              act;      /* vec_dot_type, or -1 */
    quant_dot_fn     dot_ref;
} quant_ops;

#define OPS(t, name, act) [QT_##t] = { quant_dequant_##name##_ref, act, quant_dot_##name##_ref }
#define DQ_ONLY(t, name)  [QT_##t] = { quant_dequant_##name##_ref, -1, NULL }

static const quant_ops ops[QT_COUNT] = {
    OPS(F32, f32, QT_F32),         OPS(F16, f16, QT_F16),       OPS(BF16, bf16, QT_BF16),
    OPS(Q4_0, q4_0, QT_Q8_0),      OPS(Q4_1, q4_1, QT_Q8_1),    OPS(Q5_0, q5_0, QT_Q8_0),
    OPS(Q5_1, q5_1, QT_Q8_1),      OPS(Q8_0, q8_0, QT_Q8_0),    DQ_ONLY(Q8_1, q8_1),
    OPS(Q1_0, q1_0, QT_Q8_0),      OPS(Q2_0, q2_0, QT_Q8_0),    OPS(MXFP4, mxfp4, QT_Q8_0),
    OPS(NVFP4, nvfp4, QT_Q8_0),    OPS(IQ4_NL, iq4_nl, QT_Q8_0),
    OPS(Q2_K, q2_K, QT_Q8_K),      OPS(Q3_K, q3_K, QT_Q8_K),    OPS(Q4_K, q4_K, QT_Q8_K),
    OPS(Q5_K, q5_K, QT_Q8_K),      OPS(Q6_K, q6_K, QT_Q8_K),    DQ_ONLY(Q8_K, q8_K),
    OPS(TQ1_0, tq1_0, QT_Q8_K),    OPS(TQ2_0, tq2_0, QT_Q8_K),
    OPS(IQ2_XXS, iq2_xxs, QT_Q8_K), OPS(IQ2_XS, iq2_xs, QT_Q8_K), OPS(IQ2_S, iq2_s, QT_Q8_K),
    OPS(IQ3_XXS, iq3_xxs, QT_Q8_K), OPS(IQ3_S, iq3_s, QT_Q8_K),  OPS(IQ1_S, iq1_s, QT_Q8_K),
    OPS(IQ1_M, iq1_m, QT_Q8_K),    OPS(IQ4_XS, iq4_xs, QT_Q8_K),
};

int quant_dequant_row(uint32_t type, const void *src, float *dst, int64_t n)
{
    const quant_type_info *t = quant_type_get(type);
    if (!t || !ops[type].dequant)
        return Q36_E_UNSUP;
    if (n < 0 || n % t->blck)
        return Q36_E_ARG;
    ops[type].dequant(src, dst, n / t->blck);
    return 0;
}

int quant_vec_dot_type(uint32_t type)
{
    return type < QT_COUNT && ops[type].dot_ref ? ops[type].act : -1;
}

float quant_vec_dot_ref(uint32_t type, int64_t n, const void *w, const void *a)
{
    if (type >= QT_COUNT || !ops[type].dot_ref)
        return NAN;
    return ops[type].dot_ref(n, w, a);
}

/* The kernels of each path and the fastest per type, filled once
 * (pthread_once) on first use; a path's table stays all NULL when the CPU
 * cannot run it. */
static quant_dot_fn fast[QT_COUNT];
static quant_dot_fn path_fn[QUANT_PATH_COUNT][QT_COUNT];
static bool path_ok[QUANT_PATH_COUNT];
static pthread_once_t fast_once = PTHREAD_ONCE_INIT;

#ifdef QUANT_HAVE_AVX2
/* xgetbv(0): the register state the OS saves on context switches */
static unsigned xcr0(void)
{
    unsigned lo, hi;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return lo;
}

/* AVX2, FMA and F16C, with the OS saving the YMM registers. Read with
 * cpuid directly: clang's __builtin_cpu_supports has no "f16c". */
static int cpu_has_avx2_fma_f16c(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    const int fma = c >> 12 & 1, osxsave = c >> 27 & 1, avx = c >> 28 & 1, f16c = c >> 29 & 1;
    if (!(fma && osxsave && avx && f16c))
        return 0;
    if ((xcr0() & 6) != 6)              /* XMM and YMM state enabled */
        return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    return b >> 5 & 1;
}

/* AVX-512 F (leaf 7 ebx bit 16), BW (30) and VL (31) on top of the AVX2
 * set, with the OS saving the opmask and all ZMM state (xcr0 bits 5-7). */
static int cpu_has_avx512_fbwvl(void)
{
    unsigned a, b, c, d;
    if (!cpu_has_avx2_fma_f16c() || (xcr0() & 0xE6) != 0xE6)
        return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    return (b >> 16 & 1) && (b >> 30 & 1) && (b >> 31 & 1);
}

/* AVX512-VNNI: leaf 7 ecx bit 11 */
static int cpu_has_avx512_vnni(void)
{
    unsigned a, b, c, d;
    if (!cpu_has_avx512_fbwvl() || !__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    return c >> 11 & 1;
}
#endif

static void fast_init(void)
{
    for (int t = 0; t < QT_COUNT; t++)
        path_fn[QUANT_PATH_REF][t] = ops[t].dot_ref;
    path_ok[QUANT_PATH_REF] = true;
#ifdef QUANT_HAVE_AVX2
    if (cpu_has_avx2_fma_f16c()) {
        path_ok[QUANT_PATH_AVX2] = true;
#define FAST(t, name) path_fn[QUANT_PATH_AVX2][QT_##t] = quant_dot_##name##_avx2
        FAST(F32, f32); FAST(F16, f16); FAST(BF16, bf16);
        FAST(Q4_0, q4_0); FAST(Q4_1, q4_1); FAST(Q5_0, q5_0); FAST(Q5_1, q5_1);
        FAST(Q8_0, q8_0); FAST(IQ4_NL, iq4_nl); FAST(MXFP4, mxfp4);
        FAST(Q2_K, q2_K); FAST(Q3_K, q3_K); FAST(Q4_K, q4_K); FAST(Q5_K, q5_K);
        FAST(Q6_K, q6_K); FAST(IQ4_XS, iq4_xs);
        FAST(IQ2_XXS, iq2_xxs); FAST(IQ2_XS, iq2_xs); FAST(IQ2_S, iq2_s);
        FAST(IQ3_XXS, iq3_xxs); FAST(IQ3_S, iq3_s); FAST(IQ1_S, iq1_s); FAST(IQ1_M, iq1_m);
        FAST(Q1_0, q1_0); FAST(Q2_0, q2_0); FAST(NVFP4, nvfp4); FAST(TQ2_0, tq2_0);
        FAST(TQ1_0, tq1_0);
#undef FAST
    }
#endif
#ifdef QUANT_HAVE_AVX512
    if (cpu_has_avx512_fbwvl()) {
        path_ok[QUANT_PATH_AVX512] = true;
#define FAST(t, name) path_fn[QUANT_PATH_AVX512][QT_##t] = quant_dot_##name##_avx512
        FAST(F32, f32); FAST(F16, f16); FAST(BF16, bf16);
        FAST(Q4_0, q4_0); FAST(Q4_1, q4_1); FAST(Q5_0, q5_0); FAST(Q5_1, q5_1);
        FAST(Q8_0, q8_0); FAST(IQ4_NL, iq4_nl); FAST(MXFP4, mxfp4);
        FAST(Q2_K, q2_K); FAST(Q3_K, q3_K); FAST(Q4_K, q4_K); FAST(Q5_K, q5_K);
        FAST(Q6_K, q6_K); FAST(IQ4_XS, iq4_xs);
#undef FAST
    }
    if (cpu_has_avx512_vnni()) {
        path_ok[QUANT_PATH_AVX512VNNI] = true;
#define FAST(t, name) path_fn[QUANT_PATH_AVX512VNNI][QT_##t] = quant_dot_##name##_avx512vnni
        FAST(Q4_0, q4_0); FAST(Q4_1, q4_1); FAST(Q5_0, q5_0); FAST(Q5_1, q5_1);
        FAST(Q8_0, q8_0); FAST(IQ4_NL, iq4_nl); FAST(MXFP4, mxfp4);
#undef FAST
    }
#endif
    /* Q36_QUANT_PATH_MAX=<path name> drops the paths after it, as if the
     * CPU lacked them (to compare paths on one machine) */
    const char *cap = getenv("Q36_QUANT_PATH_MAX");
    if (cap && *cap) {
        int last = QUANT_PATH_COUNT - 1;
        for (int p = 0; p < QUANT_PATH_COUNT; p++)
            if (strcmp(cap, quant_path_name((enum quant_path)p)) == 0)
                last = p;
        for (int p = last + 1; p < QUANT_PATH_COUNT; p++) {
            path_ok[p] = false;
            for (int t = 0; t < QT_COUNT; t++)
                path_fn[p][t] = NULL;
        }
    }
    /* the fastest path with a kernel for the type */
    for (int t = 0; t < QT_COUNT; t++)
        for (int p = 0; p < QUANT_PATH_COUNT; p++)
            if (path_fn[p][t])
                fast[t] = path_fn[p][t];
}

const char *quant_path_name(enum quant_path p)
{
    static const char *const names[QUANT_PATH_COUNT] = { "ref", "avx2", "avx512", "avx512vnni" };
    return (unsigned)p < QUANT_PATH_COUNT ? names[p] : "?";
}

bool quant_path_available(enum quant_path p)
{
    pthread_once(&fast_once, fast_init);
    return (unsigned)p < QUANT_PATH_COUNT && path_ok[p];
}

quant_dot_fn quant_vec_dot_fn_path(uint32_t type, enum quant_path p)
{
    pthread_once(&fast_once, fast_init);
    return type < QT_COUNT && (unsigned)p < QUANT_PATH_COUNT ? path_fn[p][type] : NULL;
}

quant_dot_fn quant_vec_dot_fn(uint32_t type)
{
    pthread_once(&fast_once, fast_init);
    return type < QT_COUNT ? fast[type] : NULL;
}

float quant_vec_dot(uint32_t type, int64_t n, const void *w, const void *a)
{
    quant_dot_fn f = quant_vec_dot_fn(type);
    return f ? f(n, w, a) : NAN;
}
