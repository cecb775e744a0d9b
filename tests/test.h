/* test.h: the few helpers every C test program uses.
 *
 * A test program prints one line per case: "ok <name>", "FAIL <name>: <why>"
 * or "skip <name>: <why>", and returns t_exit(), which is non-zero when any
 * case failed. tests/run.sh runs every program, counts the lines, and prints
 * the final "N passed, N failed, N skipped". A skip means one thing only:
 * this CPU lacks the instructions of the kernel under test (as the quant
 * module sees it, so Q36_QUANT_PATH_MAX=avx2 skips what an AVX2-only CPU
 * skips). Anything else that keeps a case from running (a missing oracle, a
 * missing file) is a FAIL with the reason.
 */
#ifndef Q36_TEST_H
#define Q36_TEST_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int t_passed, t_failed, t_skipped;

static inline void t_ok(const char *name)
{
    printf("ok %s\n", name);
    fflush(stdout);
    t_passed++;
}

__attribute__((format(printf, 2, 3)))
static inline void t_fail(const char *name, const char *fmt, ...)
{
    va_list ap;
    printf("FAIL %s: ", name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    t_failed++;
}

/* A case whose kernel needs instructions this CPU lacks; `why` names them. */
static inline void t_skip(const char *name, const char *why)
{
    printf("skip %s: %s\n", name, why);
    fflush(stdout);
    t_skipped++;
}

/* Records a case from a condition; `fmt` explains a failure. */
#define t_check(name, cond, ...) \
    ((cond) ? t_ok(name) : t_fail(name, __VA_ARGS__))

static inline int t_exit(void)
{
    return t_failed ? 1 : 0;
}

/* A small deterministic RNG (splitmix64) seeded from a case name, so every
 * case draws the same numbers whatever runs before it. */
typedef struct { uint64_t s; } t_rng;

static inline t_rng t_rng_named(const char *name)
{
    uint64_t h = 1469598103934665603ull;           /* FNV-1a of the name */
    for (const char *p = name; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    return (t_rng){ h };
}

static inline uint64_t t_next(t_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline float t_uniform(t_rng *r)   /* [0, 1) */
{
    return (float)(t_next(r) >> 40) / 16777216.0f;
}

/* A standard normal sample (Box-Muller). */
static inline float t_gauss(t_rng *r)
{
    float u = t_uniform(r) + 1e-7f, v = t_uniform(r);
    return sqrtf(-2.0f * logf(u)) * cosf(6.2831853f * v);
}

/* n normal samples times scale, malloc'ed (at least one element). */
static inline float *t_randv(t_rng *r, int64_t n, float scale)
{
    float *x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; x && i < n; i++)
        x[i] = t_gauss(r) * scale;
    return x;
}

#endif
