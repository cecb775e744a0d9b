/* normbench.c: one-thread timing of cpu_norm_rows_level at level 0 (the
 * plain loop, what an AVX2-only CPU ran before) and level 1 (the AVX2
 * kernel) alternating, min of REPS: the 0.8B file's prompt shapes, the RMS
 * norm of 512 rows of 1024 and the L2 norm of 512 rows of 2048 in heads of
 * 128. Build from the repository root after `make`:
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -o build/normbench \
 *      bench/results/2026-12-01-cpu-avx2-kernels2/normbench.c build/libq36.a \
 *      -lcjson -lpcre2-8 -lutf8proc -lm -pthread
 * Run: build/normbench REPS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "backend/cpu/cpu_ops.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    const int reps = argc > 1 ? atoi(argv[1]) : 50;
    const int64_t rows = 512, shapes[2][2] = { { 1024, 1024 }, { 2048, 128 } };
    float *x = malloc(sizeof(float) * rows * 2048), *y = malloc(sizeof(float) * rows * 2048);
    float *w = malloc(sizeof(float) * 1024);
    for (int64_t i = 0; i < rows * 2048; i++) x[i] = (float)(i % 97) * 0.02f - 0.9f;
    for (int i = 0; i < 1024; i++) w[i] = 1.0f + (float)(i % 7) * 0.01f;
    for (int s = 0; s < 2; s++) {
        const int64_t cols = shapes[s][0], group = shapes[s][1];
        double best[2] = { 1e9, 1e9 }, ck[2] = { 0, 0 };
        for (int r = 0; r < reps; r++)
            for (int l = 0; l < 2; l++) {
                const double t0 = now();
                cpu_norm_rows_level(l, rows, cols, group, x, cols, s ? NULL : w, 1e-6f,
                                    s ? 0.0883883f : 1.0f, y, cols);
                const double dt = now() - t0;
                best[l] = dt < best[l] ? dt : best[l];
                ck[l] = y[7] + y[rows * cols - 1];
            }
        printf("%s %lld x %lld (groups of %lld): level 0 %.1f us, level 1 %.1f us (%.2fx)%s\n",
               s ? "l2 norm" : "rms norm", (long long)rows, (long long)cols, (long long)group,
               best[0] * 1e6, best[1] * 1e6, best[0] / best[1], ck[0] == ck[1] ? "" : " DIFFER");
    }
    return 0;
}
