/* bench_dot.c: speed of q36's dot products (reference and the dispatched
 * fast kernel) and of activation quantization, beside ggml's CPU vec_dot
 * (libggml-cpu-haswell.so) on the same rows, one thread.
 *
 * Build and run (from the repository root, after `make build/libq36.a`):
 *   L=$PWD/tests/oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
 *   cc -std=c11 -O2 -D_GNU_SOURCE -Isrc -Ibuild/llama.cpp/ggml/include \
 *      -DQ36_ORACLE_LIB="\"$L\"" bench/quant/bench_dot.c build/libq36.a \
 *      -L$L -l:libggml-base.so -Wl,-rpath,$L -lm -o build/bench_dot
 *   build/bench_dot [n]          (default n = 4096)
 * Prints one line per type: ns per row for ref, fast and ggml, and GB/s of
 * weight bytes read by the fast kernel.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml.h"
#include "ggml-cpu.h"
#include "quant/quant.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv)
{
    const int64_t n = argc > 1 ? atoll(argv[1]) : 4096;
    void *h = dlopen(Q36_ORACLE_LIB "/libggml-cpu-haswell.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "bench_dot: %s\n", dlerror());
        return 1;
    }
    ((void (*)(void))dlsym(h, "ggml_cpu_init"))();
    const struct ggml_type_traits_cpu *(*traits)(enum ggml_type) =
        (const struct ggml_type_traits_cpu *(*)(enum ggml_type))dlsym(h, "ggml_get_type_traits_cpu");
    const uint32_t types[] = { QT_F16, QT_BF16, QT_Q4_0, QT_Q8_0, QT_Q2_K, QT_Q3_K, QT_Q4_K,
                               QT_Q5_K, QT_Q6_K, QT_IQ1_S, QT_IQ1_M, QT_IQ2_XXS, QT_IQ2_XS, QT_IQ2_S,
                               QT_IQ3_XXS, QT_IQ3_S, QT_IQ4_NL, QT_IQ4_XS, QT_NVFP4, QT_Q5_0,
                               QT_Q4_1, QT_TQ2_0, QT_TQ1_0, QT_F32,
                               QT_MXFP4 };
    const int rows = 64;
    float *x = malloc(n * 4);
    for (int64_t i = 0; i < n; i++)
        x[i] = sinf((float)i * 0.37f);
    printf("%-8s %10s %10s %10s %8s   (n = %lld, ns per row)\n", "type", "ref", "fast", "ggml",
           "GB/s", (long long)n);
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        uint32_t t = types[k];
        int at = quant_vec_dot_type(t);
        size_t rb = quant_row_bytes(t, n);
        uint8_t *w = malloc(rb * rows), *a = malloc(quant_row_bytes(at, n));
        for (size_t i = 0; i < rb * rows; i++)
            w[i] = (uint8_t)(i * 2654435761u >> 13);
        for (int r = 0; r < rows; r++) {              /* small finite block scales */
            const quant_type_info *q = quant_type_get(t);
            if (q->blck > 1 && t != QT_MXFP4)
                for (size_t b = 0; b < rb / q->size; b++) {
                    uint8_t *blk = w + r * rb + b * q->size;
                    int off = t == QT_Q6_K ? 208 : t == QT_Q3_K ? 108 : t == QT_Q2_K ? 80 : 0;
                    blk[off] = 0, blk[off + 1] = 0x20;
                }
        }
        quant_act_quantize(at, x, a, n);
        quant_dot_fn fast = quant_vec_dot_fn(t);
        const struct ggml_type_traits_cpu *ct = traits((enum ggml_type)t);
        double best[3] = { 1e9, 1e9, 1e9 };
        volatile float sink = 0;
        for (int rep = 0; rep < 5; rep++) {
            for (int m = 0; m < 3; m++) {
                double t0 = now();
                for (int r = 0; r < rows; r++) {
                    const uint8_t *wr = w + r * rb;
                    float s = 0;
                    if (m == 0)
                        s = quant_vec_dot_ref(t, n, wr, a);
                    else if (m == 1)
                        s = fast(n, wr, a);
                    else
                        ct->vec_dot((int)n, &s, 0, wr, 0, a, 0, 1);
                    sink += s;
                }
                double dt = (now() - t0) / rows * 1e9;
                if (dt < best[m])
                    best[m] = dt;
            }
        }
        printf("%-8s %10.0f %10.0f %10.0f %8.2f\n", quant_type_name(t), best[0], best[1],
               best[2], rb / best[1]);
        free(w);
        free(a);
    }
    /* activation quantization, ns per row */
    const uint32_t acts[] = { QT_Q8_0, QT_Q8_K };
    for (int k = 0; k < 2; k++) {
        uint8_t *a = malloc(quant_row_bytes(acts[k], n));
        double best = 1e9;
        for (int rep = 0; rep < 20; rep++) {
            double t0 = now();
            quant_act_quantize(acts[k], x, a, n);
            double dt = (now() - t0) * 1e9;
            best = dt < best ? dt : best;
        }
        double bg = 1e9;
        for (int rep = 0; rep < 20; rep++) {
            double t0 = now();
            traits((enum ggml_type)acts[k])->from_float(x, a, n);
            double dt = (now() - t0) * 1e9;
            bg = dt < bg ? dt : bg;
        }
        printf("act %-4s %10.0f %10s %10.0f\n", quant_type_name(acts[k]), best, "", bg);
        free(a);
    }
    return 0;
}
