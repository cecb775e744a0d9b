/* test_cpu_vexp.c: the vector expf of src/backend/cpu/cpu_vexp.h gives
 * the bits of libm's expf, on each vector path this CPU runs (AVX2; on
 * AVX-512 both glibc's expf repeated, where libm is glibc's, and the
 * guarded polynomial), over
 * [-104, 89] (every float whose bits are a multiple of a stride, every
 * float with --all), around the ends of the range where results become
 * subnormal, zero and infinite, and at the special values (+-0, +-inf,
 * NaN, far outside the range). It also checks that the results are
 * within 1 ulp of the correctly rounded e^x (exp in double, rounded once),
 * and prints how many differ from it by one ulp, and the speed (noisy). A
 * form whose instructions the CPU lacks (AVX2+FMA, AVX-512 F/DQ, as
 * Q36_QUANT_PATH_MAX leaves them) is a skip. */
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "backend/cpu/cpu_vexp.h"

static float f_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t u_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

typedef void (*vexp_fn)(int64_t n, const float *x, float *y);

typedef struct {
    const char *name;
    uint64_t    checked, vs_libm, off_1ulp, off_more;
    char        why[200];
} tally;

/* Runs the path over x[0..n) and compares with expf and exp. */
static void check(vexp_fn f, const float *x, int64_t n, tally *t)
{
    float y[1024];
    for (int64_t i0 = 0; i0 < n; i0 += 1024) {
        const int64_t m = n - i0 < 1024 ? n - i0 : 1024;
        f(m, x + i0, y);
        for (int64_t i = 0; i < m; i++) {
            const float xi = x[i0 + i], want = expf(xi);
            t->checked++;
            if (u_of(y[i]) != u_of(want) && !(isnan(want) && isnan(y[i]))) {
                if (!t->vs_libm++)
                    snprintf(t->why, sizeof t->why, "expf(%a) = %a, vector %a", (double)xi,
                             (double)want, (double)y[i]);
            }
            if (isnan(xi))
                continue;
            const float cr = (float)exp((double)xi);
            const int64_t d = (int64_t)u_of(y[i]) - (int64_t)u_of(cr);
            if (d == 1 || d == -1)
                t->off_1ulp++;
            else if (d != 0)
                t->off_more++;
        }
    }
}

/* floats whose bits run from lo to hi (inclusive, same sign) by step */
static void sweep(vexp_fn f, uint32_t lo, uint32_t hi, uint32_t step, tally *t)
{
    float buf[4096];
    int n = 0;
    for (uint64_t u = lo; u <= hi; u += step) {
        buf[n++] = f_of((uint32_t)u);
        if (n == 4096) {
            check(f, buf, n, t);
            n = 0;
        }
    }
    check(f, buf, n, t);
}

static void around(vexp_fn f, float c, uint32_t width, tally *t)
{
    const uint32_t u = u_of(c);
    sweep(f, u - width, u + width, 1, t);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* e^x rounded once: an accurate expf that is not glibc's */
static float expf_cr(float x)
{
    return (float)exp((double)x);
}

static void libm_n(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = expf(x[i]);
}

static void test_path(const char *name, vexp_fn f, uint32_t step)
{
    tally t = { .name = name };
    sweep(f, 0, u_of(89.0f), step, &t);                  /* +0 .. 89 */
    sweep(f, 0x80000000u, u_of(-104.0f), step, &t);      /* -0 .. -104 */
    around(f, 88.72283935546875f, 4096, &t);             /* overflow to inf */
    around(f, -87.3365478515625f, 4096, &t);             /* results become subnormal */
    around(f, -103.972076416015625f, 4096, &t);          /* results become 0 */
    around(f, 1.0f, 4096, &t);
    around(f, -1.0f, 4096, &t);
    const float sp[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, f_of(0x7FC12345u),
                         f_of(0xFFA00001u), 1e10f, -1e10f, 89.5f, -200.0f, 3.4e38f, -3.4e38f,
                         f_of(1), f_of(0x80000001u), 1e-30f, -1e-30f };
    check(f, sp, (int64_t)(sizeof sp / sizeof *sp), &t);
    printf("# %s: %llu inputs (stride %u), %llu differ from libm's expf; vs e^x rounded once: "
           "%llu off by 1 ulp, %llu by more\n", name, (unsigned long long)t.checked, step,
           (unsigned long long)t.vs_libm, (unsigned long long)t.off_1ulp,
           (unsigned long long)t.off_more);
    char cn[96];
    snprintf(cn, sizeof cn, "%s: expf's bits", name);
    t_check(cn, t.vs_libm == 0, "%llu of %llu differ, first: %s",
            (unsigned long long)t.vs_libm, (unsigned long long)t.checked, t.why);
    snprintf(cn, sizeof cn, "%s: within 1 ulp of e^x", name);
    t_check(cn, t.off_more == 0, "%llu results are more than 1 ulp off",
            (unsigned long long)t.off_more);

    /* speed on softmax-like inputs: printed, not asserted */
    enum { N = 4096, REPS = 500 };
    static float x[N], y[N];
    t_rng r = t_rng_named("vexp speed");
    for (int i = 0; i < N; i++)
        x[i] = -20.0f * t_uniform(&r);
    double t0 = now_s();
    for (int k = 0; k < REPS; k++)
        f(N, x, y);
    const double tv = (now_s() - t0) / REPS / N * 1e9;
    t0 = now_s();
    for (int k = 0; k < REPS; k++)
        libm_n(N, x, y);
    const double tl = (now_s() - t0) / REPS / N * 1e9;
    printf("# %s: %.2f ns/element, libm expf %.2f (noisy)\n", name, tv, tl);
}

int main(int argc, char **argv)
{
    const uint32_t step = argc > 1 && strcmp(argv[1], "--all") == 0 ? 1 : 257;
#if defined(__x86_64__)
    const int level = cpu_vexp_level();
    if (level < 1)
        t_skip("vexp avx2", "this CPU has no AVX2+FMA");
    if (level < 2)
        t_skip("vexp avx512", "this CPU has no AVX-512 F/DQ");
    if (level >= 1)
        test_path("vexp avx2", cpu_vexp_n_avx2, step);
    if (level >= 2) {
        /* glibc's expf repeated (where the check found libm to be it) and
         * the guarded polynomial (elsewhere), each alone, then the pick */
        const int glibc = cpu_vexp_glibc_ok();
        /* the check that picks the form tells glibc's expf from another
         * accurate one: here the correctly rounded e^x */
        t_check("vexp glibc check: rejects another expf", !cpu_vexp_glibc_check(expf_cr),
                "correctly rounded expf taken for glibc's");
        printf("# vexp avx512: libm's expf %s glibc's FMA expf: the %s form is in use\n",
               glibc ? "is" : "is not", glibc ? "glibc" : "guard");
        if (glibc)
            test_path("vexp avx512 glibc", cpu_vexp_n_avx512_glibc, step);
        test_path("vexp avx512 guard", cpu_vexp_n_avx512_guard, step);
        test_path("vexp avx512", cpu_vexp_n_avx512, step * 3);
    }
    test_path("vexp dispatch", cpu_vexp, step * 7);
#else
    test_path("vexp libm", cpu_vexp, step);
#endif
    return t_exit();
}
