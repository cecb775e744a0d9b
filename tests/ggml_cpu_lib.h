/* ggml_cpu_lib.h: opening the x86 variants of the pinned libggml-cpu
 * (libggml-cpu-<variant>.so beside libllama) with dlopen, for the tests
 * that compare q36 with ggml's CPU kernels in the same process
 * (test_ggml_quant_dot.c, test_ggml_gexp.c, test_ggml_conv.c,
 * test_ggml_rope.c, test_ggml_backend.c).
 *
 * The folder is $Q36_ORACLE_LIB when set, else the one the Makefile's
 * test_ggml_% rule compiles in. `make check-avx2` points it at a folder of
 * links whose only CPU variant is haswell, so the tests meet the AVX2 build
 * as they would on an AVX2-only CPU. The variant "llama.cpp loads" is chosen
 * as ggml_backend_load_all_from_path chooses it: among the libggml-cpu-*.so
 * files in that folder, the highest ggml_backend_score(). */
#ifndef Q36_GGML_CPU_LIB_H
#define Q36_GGML_CPU_LIB_H

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The x86 variants the tests that try several of them go through; haswell
 * (AVX2) last */
static const char *const t_ggml_variants[] = { "skylakex", "icelake", "cascadelake", "cooperlake",
                                               "zen4", "sapphirerapids", "alderlake", "haswell" };
#define T_GGML_N_VARIANTS (int)(sizeof t_ggml_variants / sizeof t_ggml_variants[0])

/* the folder of the pinned libraries the oracle loads its CPU variant from */
static inline const char *t_ggml_lib_dir(void)
{
    const char *d = getenv("Q36_ORACLE_LIB");
    return d && *d ? d : Q36_ORACLE_LIB;
}

/* dlopens the variant: its handle, with *score its ggml_backend_score()
 * (0: this CPU cannot run it; then call nothing else in it). NULL with *score
 * 0 and `why` empty when the folder has no such file (ggml would not load
 * it either); NULL with `why` set on an error. */
static inline void *t_ggml_cpu_open(const char *variant, int *score, char *why, size_t wn)
{
    char path[512];
    snprintf(path, sizeof path, "%s/libggml-cpu-%s.so", t_ggml_lib_dir(), variant);
    why[0] = 0;
    *score = 0;
    if (access(path, F_OK) != 0)
        return NULL;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    int (*sc)(void) = h ? (int (*)(void))dlsym(h, "ggml_backend_score") : NULL;
    if (!sc) {
        snprintf(why, wn, "%.300s: %.200s", path, h ? "no ggml_backend_score" : dlerror());
        return NULL;
    }
    *score = sc();
    return h;
}

/* The variant llama.cpp loads here: the name (into `name`) and handle of the
 * libggml-cpu-*.so in the folder with the highest score, or NULL with `why`
 * set. */
static inline void *t_ggml_best_variant(char *name, size_t nn, char *why, size_t wn)
{
    DIR *d = opendir(t_ggml_lib_dir());
    if (!d) {
        snprintf(why, wn, "cannot open the oracle folder %s", t_ggml_lib_dir());
        return NULL;
    }
    void *best = NULL;
    int best_sc = 0;
    char err[512] = "";
    struct dirent *e;
    while ((e = readdir(d))) {
        const size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "libggml-cpu-", 12) != 0 || len < 16 || len > 60 ||
            strcmp(e->d_name + len - 3, ".so") != 0)
            continue;
        char v[48];
        snprintf(v, sizeof v, "%.*s", (int)(len - 15), e->d_name + 12);
        int sc = 0;
        void *h = t_ggml_cpu_open(v, &sc, err, sizeof err);
        if (h && sc > best_sc)
            best = h, best_sc = sc, snprintf(name, nn, "%s", v);
    }
    closedir(d);
    if (!best)
        snprintf(why, wn, "no libggml-cpu variant under %s runs here%s%s", t_ggml_lib_dir(),
                 err[0] ? ": " : "", err);
    return best;
}

/* For the tests that run one-op ggml graphs: the variant llama.cpp loads,
 * initialised (ggml_cpu_init), and its ggml_graph_compute_with_ctx as a plain
 * pointer (cast by the caller), with its name in `variant`; NULL with `why`
 * set. */
static inline void *t_ggml_best_compute(char *variant, size_t vn, char *why, size_t wn)
{
    void *best = t_ggml_best_variant(variant, vn, why, wn);
    if (!best)
        return NULL;
    void (*init)(void) = (void (*)(void))dlsym(best, "ggml_cpu_init");
    void *compute = dlsym(best, "ggml_graph_compute_with_ctx");
    if (!init || !compute) {
        snprintf(why, wn, "libggml-cpu-%s.so lacks ggml_cpu_init/ggml_graph_compute_with_ctx",
                 variant);
        return NULL;
    }
    init();
    return compute;
}

#endif
