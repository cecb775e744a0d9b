/* test_quant_act.c: the vector activation quantizers (quantize_act_simd.c)
 * against the scalar reference (quantize_act.c, itself byte-exact with
 * ggml: tests/test_ggml_quant_dot.c), byte for byte, on every path this
 * CPU runs, for Q8_0 and Q8_K, over the inputs the contract in quant.h
 * names: gaussian rows at several scales, zero blocks, exact rounding
 * ties, equal |x| of opposite signs (Q8_K takes the first), -0, inf, NaN
 * of either sign and any payload in any position, subnormal and
 * near-overflow blocks (127/amax overflows), one-block rows and rows of
 * many blocks. quant_act_quantize itself must give the same bytes. A
 * path this CPU lacks is a skip. */
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "quant/quant.h"
#include "quant/types.h"
#include "util/err.h"

static float f_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Fills n floats for input kind k; blk is the block size. */
static void fill(int k, float *x, int64_t n, int blk, t_rng *r)
{
    for (int64_t i = 0; i < n; i++) {
        const float g = t_gauss(r);
        switch (k) {
        case 0: x[i] = g; break;
        case 1: x[i] = g * 1e-3f; break;
        case 2: x[i] = g * 1e4f; break;
        case 3: x[i] = 0.0f; break;
        case 4: x[i] = (i % 3) ? -0.0f : 0.0f; break;
        /* ties: the block max is 127 (Q8_0: id = 1) or -127 (Q8_K:
         * iscale = 1), the rest are k + 0.5 */
        case 5: x[i] = i % blk == 7 ? ((i / blk) % 2 ? 127.0f : -127.0f)
                                    : (float)((int)(t_next(r) % 250) - 125) + 0.5f; break;
        /* equal |x| of opposite signs, the negative or the positive first */
        case 6: x[i] = i % blk == 3 ? -5.0f : i % blk == 11 ? 5.0f : g; break;
        case 7: x[i] = i % blk == 3 ? 5.0f : i % blk == 11 ? -5.0f : g; break;
        /* specials sprinkled, some blocks with several */
        case 8: {
            static const uint32_t sp[] = { 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u,
                                           0x7FC12345u, 0xFFA00001u, 0x7F800001u };
            x[i] = t_next(r) % 23 == 0 ? f_bits(sp[t_next(r) % 7]) : g;
            break;
        }
        /* a NaN at the start of every block, then ordinary values */
        case 9: x[i] = i % blk == 0 ? f_bits(0x7FC00000u | (uint32_t)(t_next(r) & 0xFFFF)) : g; break;
        /* whole blocks of NaN, or of one inf */
        case 10: x[i] = (i / blk) % 2 ? NAN : (i % blk == 5 ? INFINITY : g); break;
        /* subnormal and tiny blocks: 127/amax overflows */
        case 11: x[i] = g * 1e-39f; break;
        case 12: x[i] = (i % blk == 9) ? f_bits(1) : (i % 5 ? 0.0f : -f_bits(1)); break;
        /* near overflow */
        case 13: x[i] = g * 1e38f; break;
        /* all of |x| equal */
        case 14: x[i] = (t_next(r) & 1) ? 2.5f : -2.5f; break;
        default: x[i] = g;
        }
    }
}

static const char *kind_name[] = { "gauss", "gauss-1e-3", "gauss-1e4", "zero", "signed-zero",
                                   "ties", "opp-sign-neg-first", "opp-sign-pos-first",
                                   "inf-nan", "nan-first", "nan-blocks", "subnormal",
                                   "min-subnormal", "near-overflow", "equal-abs" };
#define N_KINDS ((int)(sizeof kind_name / sizeof *kind_name))

static void test_type(uint32_t at, int blk)
{
    static const int nblocks[] = { 1, 2, 7, 16 };
    for (int p = QUANT_PATH_AVX2; p < QUANT_PATH_COUNT; p++) {
        char name[128];
        snprintf(name, sizeof name, "act_simd_%s_%s", quant_type_name(at),
                 quant_path_name((enum quant_path)p));
        if (!quant_path_available((enum quant_path)p)) {
            t_skip(name, "this CPU lacks the path's instructions");
            continue;
        }
        char why[256] = "";
        for (int k = 0; k < N_KINDS && !why[0]; k++)
            for (size_t b = 0; b < sizeof nblocks / sizeof *nblocks && !why[0]; b++) {
                char cname[200];
                snprintf(cname, sizeof cname, "%s %s %d", name, kind_name[k], nblocks[b]);
                t_rng r = t_rng_named(cname);
                const int64_t n = (int64_t)blk * nblocks[b];
                float *x = malloc(sizeof(float) * (size_t)n);
                const size_t bytes = quant_row_bytes(at, n);
                uint8_t *ref = malloc(bytes), *got = malloc(bytes), *def = malloc(bytes);
                fill(k, x, n, blk, &r);
                int e0 = quant_act_quantize_path(at, x, ref, n, QUANT_PATH_REF);
                int e1 = quant_act_quantize_path(at, x, got, n, (enum quant_path)p);
                int e2 = quant_act_quantize(at, x, def, n);
                if (e0 || e1 || e2)
                    snprintf(why, sizeof why, "%s: returned %d %d %d", cname, e0, e1, e2);
                else
                    for (size_t i = 0; i < bytes; i++)
                        if (ref[i] != got[i] || ref[i] != def[i]) {
                            snprintf(why, sizeof why, "%s: byte %zu: ref %02x, path %02x, "
                                     "default %02x", cname, i, ref[i], got[i], def[i]);
                            break;
                        }
                free(x); free(ref); free(got); free(def);
            }
        t_check(name, !why[0], "%s", why);
    }
}

/* A path the CPU lacks, or an unknown one, is refused, not run. */
static void test_refusals(void)
{
    float x[32] = { 0 };
    uint8_t y[64];
    t_check("act_path_unknown_refused",
            quant_act_quantize_path(QT_Q8_0, x, y, 32, QUANT_PATH_COUNT) == Q36_E_UNSUP,
            "an unknown path was not refused");
    t_check("act_path_bad_length", quant_act_quantize_path(QT_Q8_K, x, y, 32, QUANT_PATH_REF)
            == Q36_E_ARG, "a Q8_K row of 32 was not refused");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ns per element of each path on a 4096-wide gaussian row: printed, not
 * asserted (the machine is shared) */
static void print_speed(uint32_t at)
{
    enum { N = 4096, REPS = 2000 };
    static float x[N];
    static uint8_t y[N * 2];
    t_rng r = t_rng_named("act speed");
    for (int i = 0; i < N; i++)
        x[i] = t_gauss(&r);
    printf("# %s ns/element:", quant_type_name(at));
    for (int p = 0; p < QUANT_PATH_COUNT; p++) {
        if (!quant_path_available((enum quant_path)p))
            continue;
        const double t0 = now_s();
        for (int k = 0; k < REPS; k++)
            quant_act_quantize_path(at, x, y, N, (enum quant_path)p);
        printf(" %s %.3f", quant_path_name((enum quant_path)p), (now_s() - t0) / REPS / N * 1e9);
    }
    printf(" (noisy)\n");
}

int main(void)
{
    test_type(QT_Q8_0, 32);
    test_type(QT_Q8_K, 256);
    test_refusals();
    print_speed(QT_Q8_0);
    print_speed(QT_Q8_K);
    return t_exit();
}
