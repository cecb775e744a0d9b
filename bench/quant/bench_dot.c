/* bench_dot.c: single-thread speed of q36's dot products on each path
 * (reference, AVX2, AVX-512) beside ggml's CPU vec_dot on the same rows,
 * and of activation quantization beside ggml's from_float.
 *
 * Build (from the repository root, after `make build/libq36.a`; no
 * -march: the binary runs on any x86-64 and picks paths at run time):
 *   L=$PWD/tests/oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
 *   cc -std=c11 -O2 -D_GNU_SOURCE -Isrc -Ibuild/llama.cpp/ggml/include \
 *      -DQ36_ORACLE_LIB="\"$L\"" bench/quant/bench_dot.c build/libq36.a \
 *      -ldl -lm -pthread -o build/bench_dot
 * It links no ggml library: libggml-cpu-<variant>.so is dlopened from
 * $LIB (default: lib/ beside the executable if it has libggml-base.so,
 * else the folder above, compiled in), and finds its libggml-base.so
 * beside it ($ORIGIN).
 *
 *   build/bench_dot [-p PATHS] [-g VARIANT] [-r REPS] [-t TYPES] [N...]
 *     -p  comma list of ref,avx2,avx512,avx512vnni (default: all this CPU has)
 *     -g  ggml CPU variant (haswell, zen4, skylakex, sapphirerapids, ...);
 *         default $GGML_VARIANT, else the best-scoring one this CPU runs
 *     -r  timed runs per cell (default 7); the median is reported
 *     -t  comma list of type names (default: every type with a dot product)
 *     N   row lengths (default 1024 4096 16384)
 * Each run times enough passes over 64 rows to last about 1 ms; the
 * methods alternate within a run. Output: one line per type and length,
 * ns per row and GB/s of weight bytes per method ("-" where a path has no
 * kernel), and q36's best path over ggml in GB/s (ggml ns / q36 ns).
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ggml.h"
#include "ggml-cpu.h"
#include "quant/quant.h"

#ifndef Q36_ORACLE_LIB
#define Q36_ORACLE_LIB "."
#endif

typedef const struct ggml_type_traits_cpu *(*traits_fn)(enum ggml_type);

#define ROWS 64
#define MAXREP 51
/* methods: the q36 paths (enum quant_path), then ggml */
enum { M_GGML = QUANT_PATH_COUNT, M_COUNT };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* dlopens libggml-cpu-<v>.so from dir; returns its score (0: this CPU
 * cannot run it), -1 when it does not load. *handle is kept open only
 * for a positive score. */
static int open_variant(const char *dir, const char *v, void **handle)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/libggml-cpu-%s.so", dir, v);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return -1;
    int (*score)(void) = (int (*)(void))dlsym(h, "ggml_backend_score");
    const int sc = score ? score() : -1;
    if (sc > 0)
        *handle = h;
    else
        dlclose(h);
    return sc;
}

/* lib/ beside the executable when it holds libggml-base.so (the folder
 * bench/quant/device_prep.sh makes), else the compiled-in oracle folder */
static const char *default_lib_dir(void)
{
    static char dir[1024];
    ssize_t k = readlink("/proc/self/exe", dir, sizeof dir - 32);
    if (k > 0) {
        dir[k] = 0;
        char *slash = strrchr(dir, '/');
        if (slash) {
            strcpy(slash, "/lib/libggml-base.so");
            if (access(dir, R_OK) == 0) {
                slash[4] = 0;
                return dir;
            }
        }
    }
    return Q36_ORACLE_LIB;
}

static traits_fn load_ggml(const char *dir, const char *want, char *chosen, size_t cn)
{
    static const char *const variants[] = { "sapphirerapids", "zen4", "cooperlake", "cascadelake",
                                            "icelake", "cannonlake", "skylakex", "alderlake", "haswell" };
    void *h = NULL;
    if (want && *want) {
        const int sc = open_variant(dir, want, &h);
        if (sc <= 0) {
            fprintf(stderr, "bench_dot: variant %s in %s: %s\n", want, dir,
                    sc < 0 ? dlerror() : "this CPU cannot run it (score 0)");
            return NULL;
        }
        snprintf(chosen, cn, "%s", want);
    } else {
        int best = 0;
        for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
            void *hi = NULL;
            const int sc = open_variant(dir, variants[i], &hi);
            if (sc > best) {
                if (h)
                    dlclose(h);
                h = hi, best = sc;
                snprintf(chosen, cn, "%s", variants[i]);
            } else if (hi) {
                dlclose(hi);
            }
        }
        if (!h) {
            fprintf(stderr, "bench_dot: no libggml-cpu variant in %s runs here\n", dir);
            return NULL;
        }
    }
    ((void (*)(void))dlsym(h, "ggml_cpu_init"))();
    return (traits_fn)dlsym(h, "ggml_get_type_traits_cpu");
}

/* Random blocks with small finite scales (every f16 field of a block set
 * to ~0.008..0.06), the float types as values of that size. */
static void fill_weights(uint32_t t, uint8_t *w, size_t rb, int64_t n)
{
    const quant_type_info *q = quant_type_get(t);
    uint64_t s = 0x9E3779B97F4A7C15ull * (t + 1);
    for (size_t i = 0; i < rb * ROWS; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        w[i] = (uint8_t)(s >> 56);
    }
    if (q->blck == 1) {
        float *f = malloc((size_t)n * ROWS * 4);
        for (int64_t i = 0; i < n * ROWS; i++)
            f[i] = 0.05f * sinf((float)i * 0.731f);
        for (int64_t i = 0; i < n * ROWS; i++) {
            if (t == QT_F32)
                memcpy(w + 4 * i, f + i, 4);
            else
                quant_act_quantize(t, f + i, w + 2 * i, 1);
        }
        free(f);
        return;
    }
    static const int fields[QT_COUNT][3] = { [QT_Q4_1] = { 0, 2, -1 }, [QT_Q5_1] = { 0, 2, -1 },
                                     [QT_Q4_K] = { 0, 2, -1 }, [QT_Q5_K] = { 0, 2, -1 },
                                     [QT_Q2_K] = { 80, 82, -1 }, [QT_Q3_K] = { 108, -1 },
                                     [QT_Q6_K] = { 208, -1 }, [QT_TQ1_0] = { 52, -1 },
                                     [QT_TQ2_0] = { 64, -1 }, [QT_MXFP4] = { -1 },
                                     [QT_NVFP4] = { -1 }, [QT_IQ1_M] = { -1 } };
    const int *f = fields[t][0] || fields[t][1] ? fields[t] : (const int[]){ 0, -1 };
    for (size_t b = 0; b < rb * ROWS / q->size; b++) {
        uint8_t *blk = w + b * q->size;
        if (t == QT_MXFP4)
            blk[0] = 120;
        else if (t == QT_NVFP4)
            memset(blk, 0x30, 4);
        else if (t == QT_IQ1_M)
            blk[55] = (uint8_t)((blk[55] & 0x0F) | 0x20), blk[53] &= 0x0F, blk[51] &= 0x0F, blk[49] &= 0x0F;
        for (const int *o = f; *o >= 0; o++)
            blk[*o] = 0, blk[*o + 1] = 0x22;
    }
}

typedef struct {
    quant_dot_fn fn[M_COUNT];
    const struct ggml_type_traits_cpu *ct;
} methods;

/* seconds for `iters` passes of method m over the rows */
static double time_method(const methods *M, int m, int64_t n, const uint8_t *w, size_t rb,
                          const uint8_t *a, int iters)
{
    volatile float sink = 0;
    const double t0 = now();
    for (int it = 0; it < iters; it++)
        for (int r = 0; r < ROWS; r++) {
            float s;
            if (m == M_GGML)
                M->ct->vec_dot((int)n, &s, 0, w + r * rb, 0, a, 0, 1);
            else
                s = M->fn[m](n, w + r * rb, a);
            sink += s;
        }
    (void)sink;
    return now() - t0;
}

static int in_list(const char *list, const char *name)
{
    if (!list)
        return 1;
    const size_t k = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        const size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == k && strncasecmp(p, name, k) == 0)
            return 1;
        p += len + (e != NULL);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *paths = NULL, *types_arg = NULL, *variant = getenv("GGML_VARIANT");
    int reps = 7;
    int64_t lens[16];
    int nlen = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-p") && i + 1 < argc)
            paths = argv[++i];
        else if (!strcmp(argv[i], "-g") && i + 1 < argc)
            variant = argv[++i];
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc)
            types_arg = argv[++i];
        else if (argv[i][0] != '-' && nlen < 16)
            lens[nlen++] = atoll(argv[i]);
        else {
            fprintf(stderr, "usage: %s [-p ref,avx2,avx512,avx512vnni] [-g VARIANT] [-r REPS] [-t TYPES] [N...]\n",
                    argv[0]);
            return 2;
        }
    }
    if (reps < 1 || reps > MAXREP)
        reps = 7;
    if (!nlen)
        lens[0] = 1024, lens[1] = 4096, lens[2] = 16384, nlen = 3;
    const char *dir = getenv("LIB") && *getenv("LIB") ? getenv("LIB") : default_lib_dir();
    char chosen[64] = "";
    traits_fn traits = load_ggml(dir, variant, chosen, sizeof chosen);
    if (!traits)
        return 1;
    int use[M_COUNT] = { 0 };
    for (int p = 0; p < QUANT_PATH_COUNT; p++)
        use[p] = quant_path_available((enum quant_path)p) && in_list(paths, quant_path_name((enum quant_path)p));
    use[M_GGML] = 1;
    printf("# bench_dot: ggml variant %s from %s; q36 paths:", chosen, dir);
    for (int p = 0; p < QUANT_PATH_COUNT; p++)
        printf(" %s%s", quant_path_name((enum quant_path)p),
               quant_path_available((enum quant_path)p) ? (use[p] ? "" : "(off)") : "(n/a)");
    printf("; %d rows, median of %d runs, 1 thread\n", ROWS, reps);
    printf("%-8s %6s |", "type", "n");
    for (int m = 0; m < M_COUNT; m++)
        printf(" %10s", m == M_GGML ? "ggml" : quant_path_name((enum quant_path)m));
    printf(" |");
    for (int m = 0; m < M_COUNT; m++)
        printf(" %10s", m == M_GGML ? "ggml" : quant_path_name((enum quant_path)m));
    printf(" | %8s\n         %6s |%*s ns per row |%*s GB/s of weights | ggml ns / best q36 ns\n",
           "q36/ggml", "", 11 * M_COUNT - 11, "", 11 * M_COUNT - 16, "");

    const uint32_t types[] = { QT_Q4_K, QT_Q5_K, QT_Q6_K, QT_Q8_0, QT_Q4_0, QT_IQ4_XS, QT_IQ4_NL,
                               QT_F16, QT_BF16, QT_F32, QT_Q4_1, QT_Q5_0, QT_Q5_1, QT_MXFP4,
                               QT_Q2_K, QT_Q3_K, QT_IQ1_S, QT_IQ1_M, QT_IQ2_XXS, QT_IQ2_XS,
                               QT_IQ2_S, QT_IQ3_XXS, QT_IQ3_S, QT_NVFP4, QT_Q1_0, QT_Q2_0,
                               QT_TQ1_0, QT_TQ2_0 };
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const uint32_t t = types[k];
        if (!in_list(types_arg, quant_type_name(t)))
            continue;
        const int at = quant_vec_dot_type(t);
        methods M = { .ct = traits((enum ggml_type)t) };
        for (int p = 0; p < QUANT_PATH_COUNT; p++)
            M.fn[p] = use[p] ? quant_vec_dot_fn_path(t, (enum quant_path)p) : NULL;
        for (int li = 0; li < nlen; li++) {
            const int64_t n = lens[li];
            const size_t rb = quant_row_bytes(t, (uint64_t)n);
            if (!rb || (int)M.ct->vec_dot_type != at) {
                printf("%-8s %6lld   (skipped: %s)\n", quant_type_name(t), (long long)n,
                       !rb ? "n not a multiple of the block" : "ggml pairs another activation type");
                continue;
            }
            uint8_t *w = malloc(rb * ROWS), *a = malloc(quant_row_bytes((uint32_t)at, (uint64_t)n));
            float *x = malloc((size_t)n * 4);
            for (int64_t i = 0; i < n; i++)
                x[i] = sinf((float)i * 0.37f) + 0.1f * cosf((float)i * 1.91f);
            fill_weights(t, w, rb, n);
            quant_act_quantize((uint32_t)at, x, a, n);
            int iters[M_COUNT];
            double samp[M_COUNT][MAXREP], med[M_COUNT];
            for (int m = 0; m < M_COUNT; m++) {
                med[m] = NAN;
                if (m != M_GGML && !M.fn[m])
                    continue;
                time_method(&M, m, n, w, rb, a, 1);                         /* warm */
                const double one = time_method(&M, m, n, w, rb, a, 1);
                iters[m] = (int)fmin(1e6, fmax(1.0, ceil(1e-3 / fmax(one, 1e-9))));
            }
            for (int rep = 0; rep < reps; rep++)
                for (int m = 0; m < M_COUNT; m++)
                    if (m == M_GGML || M.fn[m])
                        samp[m][rep] = time_method(&M, m, n, w, rb, a, iters[m]) / iters[m] / ROWS * 1e9;
            for (int m = 0; m < M_COUNT; m++)
                if (m == M_GGML || M.fn[m]) {
                    qsort(samp[m], (size_t)reps, sizeof(double), cmp_double);
                    med[m] = samp[m][reps / 2];
                }
            double best = INFINITY;
            for (int m = QUANT_PATH_AVX2; m < QUANT_PATH_COUNT; m++)
                if (!isnan(med[m]) && med[m] < best)
                    best = med[m];
            if (isinf(best) && !isnan(med[QUANT_PATH_REF]))
                best = med[QUANT_PATH_REF];
            printf("%-8s %6lld |", quant_type_name(t), (long long)n);
            for (int m = 0; m < M_COUNT; m++)
                isnan(med[m]) ? printf(" %10s", "-") : printf(" %10.0f", med[m]);
            printf(" |");
            for (int m = 0; m < M_COUNT; m++)
                isnan(med[m]) ? printf(" %10s", "-") : printf(" %10.2f", rb / med[m]);
            printf(" | %8.2f\n", med[M_GGML] / best);
            fflush(stdout);
            free(w);
            free(a);
            free(x);
        }
    }
    /* activation quantization at the first length, ns per row */
    const int64_t n = lens[0];
    const uint32_t acts[] = { QT_Q8_0, QT_Q8_K };
    float *x = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++)
        x[i] = sinf((float)i * 0.37f);
    for (int k = 0; k < 2; k++) {
        uint8_t *a = malloc(quant_row_bytes(acts[k], (uint64_t)n));
        double s0[MAXREP], s1[MAXREP];
        for (int rep = 0; rep < reps; rep++) {
            double t0 = now();
            for (int it = 0; it < 100; it++)
                quant_act_quantize(acts[k], x, a, n);
            s0[rep] = (now() - t0) * 1e7;
            t0 = now();
            for (int it = 0; it < 100; it++)
                traits((enum ggml_type)acts[k])->from_float(x, a, n);
            s1[rep] = (now() - t0) * 1e7;
        }
        qsort(s0, (size_t)reps, sizeof(double), cmp_double);
        qsort(s1, (size_t)reps, sizeof(double), cmp_double);
        printf("act %-4s %6lld | q36 %8.0f ns, ggml %8.0f ns\n", quant_type_name(acts[k]), (long long)n,
               s0[reps / 2], s1[reps / 2]);
        free(a);
    }
    free(x);
    return 0;
}
