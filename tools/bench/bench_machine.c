/* bench_machine.c: the machine and build a benchmark record names: CPU model,
 * SIMD features, CPU and core counts, load at the start, and the q36 commit
 * compiled in. It owns nothing that is timed. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef Q36_COMMIT
#define Q36_COMMIT "unknown"
#endif

const char *bench_commit(void)
{
    return Q36_COMMIT[0] ? Q36_COMMIT : "unknown";
}

/* The /proc/cpuinfo flag names of the features q36's and ggml's CPU kernels
 * choose between, with the names the record prints. */
static const struct { const char *flag, *name; } features[] = {
    { "avx2", "AVX2" }, { "fma", "FMA" }, { "f16c", "F16C" },
    { "avx_vnni", "AVX_VNNI" }, { "avx512f", "AVX512F" }, { "avx512bw", "AVX512BW" },
    { "avx512vl", "AVX512VL" }, { "avx512_vnni", "AVX512_VNNI" },
    { "avx512_bf16", "AVX512_BF16" }, { "amx_int8", "AMX_INT8" },
};

/* Whether the space-separated list `flags` holds the word `w`. */
static int has_word(const char *flags, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = flags; (p = strstr(p, w)); p += n)
        if ((p == flags || p[-1] == ' ' || p[-1] == '\t') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
            return 1;
    return 0;
}

/* Value after "key<spaces>: " in a cpuinfo line, without the newline. */
static const char *cpuinfo_value(char *line, const char *key)
{
    size_t n = strlen(key);
    if (strncmp(line, key, n) || (line[n] != ' ' && line[n] != '\t' && line[n] != ':'))
        return NULL;
    char *c = strchr(line + n, ':');
    if (!c)
        return NULL;
    c++;
    while (*c == ' ' || *c == '\t')
        c++;
    c[strcspn(c, "\n")] = 0;
    return c;
}

void bench_machine_read(bench_machine *m)
{
    memset(m, 0, sizeof *m);
    snprintf(m->cpu_model, sizeof m->cpu_model, "unknown");
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    m->n_cpus = n > 0 ? (int)n : 1;
    m->n_cores = m->n_cpus;

    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        /* A flags line can be a few kB: read lines of any length. */
        char *line = NULL;
        size_t cap = 0;
        int have_model = 0, have_flags = 0, cores = 0, max_phys = -1;
        while (getline(&line, &cap, f) > 0) {
            const char *v;
            if (!have_model && (v = cpuinfo_value(line, "model name"))) {
                snprintf(m->cpu_model, sizeof m->cpu_model, "%s", v);
                have_model = 1;
            } else if (!have_flags && (v = cpuinfo_value(line, "flags"))) {
                size_t k = 0;
                for (size_t i = 0; i < sizeof features / sizeof features[0]; i++)
                    if (has_word(v, features[i].flag))
                        k += (size_t)snprintf(m->features + k, k < sizeof m->features ? sizeof m->features - k : 0,
                                              "%s%s", k ? " " : "", features[i].name);
                have_flags = 1;
            } else if (!cores && (v = cpuinfo_value(line, "cpu cores"))) {
                cores = atoi(v);
            } else if ((v = cpuinfo_value(line, "physical id"))) {
                int p = atoi(v);
                if (p > max_phys)
                    max_phys = p;
            }
        }
        free(line);
        fclose(f);
        if (cores > 0)
            m->n_cores = cores * (max_phys >= 0 ? max_phys + 1 : 1);
        if (m->n_cores > m->n_cpus)
            m->n_cores = m->n_cpus;
    }
    if (!m->features[0])
        snprintf(m->features, sizeof m->features, "none");
    /* q36 told to run as a smaller CPU would (a diagnostic for comparing
     * paths): the record must say so */
    const char *cap = getenv("Q36_QUANT_PATH_MAX");
    if (cap && *cap) {
        size_t k = strlen(m->features);
        snprintf(m->features + k, sizeof m->features - k, "; q36 capped at %s (Q36_QUANT_PATH_MAX)", cap);
    }

    f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &m->load1) != 1)
            m->load1 = 0;
        fclose(f);
    }
}
