/* ggml_cpu_lib.h: opening one x86 variant of the pinned libggml-cpu
 * (libggml-cpu-<variant>.so beside libllama) with dlopen, for the tests
 * that compare q36 with ggml's CPU kernels in the same process
 * (test_ggml_quant_dot.c, test_ggml_gexp.c, test_ggml_conv.c).
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

#endif
