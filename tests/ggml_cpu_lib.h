/* ggml_cpu_lib.h: opening one x86 variant of the pinned libggml-cpu
 * (libggml-cpu-<variant>.so beside libllama) with dlopen, for the tests
 * that compare q36 with ggml's CPU kernels in the same process
 * (test_ggml_quant_dot.c, test_ggml_gexp.c, test_ggml_conv.c,
 * test_ggml_rope.c).
 * Q36_ORACLE_LIB comes from the Makefile's test_ggml_% rule. */
#ifndef Q36_GGML_CPU_LIB_H
#define Q36_GGML_CPU_LIB_H

#include <dlfcn.h>
#include <stdio.h>

/* The x86 variants the tests try; haswell (AVX2) last */
static const char *const t_ggml_variants[] = { "skylakex", "icelake", "cascadelake", "cooperlake",
                                               "zen4", "sapphirerapids", "alderlake", "haswell" };
#define T_GGML_N_VARIANTS (int)(sizeof t_ggml_variants / sizeof t_ggml_variants[0])

/* dlopens the variant: its handle, with *score its ggml_backend_score()
 * (0: this CPU cannot run it; then call nothing else in it), or NULL with
 * `why` set */
static inline void *t_ggml_cpu_open(const char *variant, int *score, char *why, size_t wn)
{
    char path[512];
    snprintf(path, sizeof path, "%s/libggml-cpu-%s.so", Q36_ORACLE_LIB, variant);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    int (*sc)(void) = h ? (int (*)(void))dlsym(h, "ggml_backend_score") : NULL;
    if (!sc) {
        snprintf(why, wn, "%s: %s", path, h ? "no ggml_backend_score" : dlerror());
        return NULL;
    }
    *score = sc();
    return h;
}

/* For the tests that run one-op ggml graphs: the best variant this CPU
 * runs (highest ggml_backend_score), initialised (ggml_cpu_init), and its
 * ggml_graph_compute_with_ctx as a plain pointer (cast by the caller), with
 * *variant its name; NULL with `why` set. */
static inline void *t_ggml_best_compute(const char **variant, char *why, size_t wn)
{
    void *best = NULL;
    int best_sc = 0;
    for (int v = 0; v < T_GGML_N_VARIANTS; v++) {
        int sc = 0;
        void *h = t_ggml_cpu_open(t_ggml_variants[v], &sc, why, wn);
        if (h && sc > best_sc)
            best = h, best_sc = sc, *variant = t_ggml_variants[v];
    }
    if (!best) {
        snprintf(why, wn, "no libggml-cpu variant under %s runs here", Q36_ORACLE_LIB);
        return NULL;
    }
    void (*init)(void) = (void (*)(void))dlsym(best, "ggml_cpu_init");
    void *compute = dlsym(best, "ggml_graph_compute_with_ctx");
    if (!init || !compute) {
        snprintf(why, wn, "libggml-cpu-%s.so lacks ggml_cpu_init/ggml_graph_compute_with_ctx",
                 *variant);
        return NULL;
    }
    init();
    return compute;
}

#endif
