/* bench.c: `q36 bench`: prefill (pp) and decode (tg) speed at each context
 * depth, as llama-bench measures it, optionally side by side with the
 * pinned llama.cpp on the same file in the same run (--baseline llama.cpp).
 *
 * This file owns the flags, the order of the work (depths, tests,
 * repetitions interleaved between engines so drift hits both alike) and the
 * two outputs: a markdown table like llama-bench's and JSON records with
 * llama-bench's field names. What is timed and how lives in tools/bench/. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "../src/include/q36.h"

#define MAX_DEPTHS 32
/* llama-bench writes flash_attn as the int value of the enum: AUTO is -1. */
#define LLAMA_FA_AUTO_VALUE (-1)
#define ORACLE_LIB_REL "tests/oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"

enum out_fmt { OUT_MD, OUT_JSON, OUT_JSONL };

typedef struct bench_opts {
    const char *model;
    int n_prompt, n_gen, reps;
    int depths[MAX_DEPTHS], n_depths;
    bench_cfg cfg;
    enum out_fmt out;
    int baseline;                 /* --baseline llama.cpp */
    const char *llama_lib;        /* --llama-lib DIR */
    uint64_t seed;
    int progress;
    int profile;                  /* --profile */
    int bandwidth;                /* --bandwidth */
    int spec_mtp;                 /* --spec-type draft-mtp */
    int draft_max, draft_vocab;   /* --draft-max (3), --draft-vocab (0: all; default auto) */
    float draft_p_min;            /* --draft-p-min (0) */
    int draft_rewind;             /* --draft-rollback states (1, default) | replay (0) */
    const char *prompt_file;      /* -f: the prompt of a draft-mtp run */
} bench_opts;

static void usage(FILE *o)
{
    fprintf(o,
"usage: q36 bench [-m MODEL.gguf] [-p 512] [-n 128] [-d 0,4096] [-r 5] [-t N]\n"
"                 [-b 2048] [-ub 512] [-ctk f16] [-ctv f16] [--fast|--exact] [-o md|json|jsonl]\n"
"                 [--baseline llama.cpp] [--llama-lib DIR] [--seed S] [--progress]\n"
"                 [--profile] [--bandwidth] [-ngl N] [--device D]\n"
"                 [--profile] [--bandwidth]\n"
"       q36 bench --spec-type draft-mtp [-f PROMPT.txt | -p N] [-n N] [-r N] [-t N]\n"
"                 [--draft-max 3] [--draft-vocab N] [--draft-p-min P] [--draft-rollback R]\n"
"\n"
"Times prompt processing (pp: N tokens evaluated in calls of -b tokens) and\n"
"generation (tg: N single-token decodes) after filling the context with D\n"
"tokens (not timed), as llama-bench does: one warm-up per depth, then -r\n"
"repetitions, each starting again from the filled depth. Token ids are\n"
"seeded random. Reports tokens/s: median, min-max, and llama-bench's mean\n"
"and sample standard deviation.\n"
"\n"
"  -m FILE             model (default: the embedded default model)\n"
"  -p N                prompt tokens per pp test (default 512; 0 = no pp test)\n"
"  -n N                tokens per tg test (default 128; 0 = no tg test)\n"
"  -d D[,D...]         context depths (default 0)\n"
"  -r N                repetitions (default 5)\n"
"  -t N                threads (default: every online CPU)\n"
"  -b N                tokens per call (default 2048, llama-bench's n_batch)\n"
"  -ub N               tokens per forward pass (default 512: llama.cpp's n_ubatch,\n"
"                      q36's session n_batch)\n"
"  -ctk T, -ctv T      K/V cache types: f16 (default), f32 or q8_0 (both; CPU)\n"
"  -o FMT              md (default), json (an array of records) or jsonl (one a line)\n"
"  --baseline llama.cpp  also time the pinned libllama on the same file, repetitions\n"
"                      interleaved, and print the ratio q36/llama.cpp per test\n"
"  --llama-lib DIR     folder of libllama*.so and libggml*.so (default: the oracle\n"
"                      folder installed by scripts/setup.sh, found from q36's location)\n"
"  --seed S            seed of the token ids (default 1)\n"
"  --progress          a line on stderr per repetition\n"
"  --profile           then, per depth, one more prompt of -p tokens and -n decodes\n"
"                      in a q36 session with per-op timing: time by op family and\n"
"                      by layer kind (on stderr with -o json/jsonl); with\n"
"                      --spec-type, one more plain and one drafted generation,\n"
"                      their forward passes' tables (the verify passes; the MTP\n"
"                      drafts are not forward passes)\n"
"  --bandwidth         first measure the memory read bandwidth with -t threads\n"
"                      (median of 5 passes over 1 GiB), then set every tg test\n"
"                      against it: bytes per decode step (weights read, K/V rows\n"
"                      read, DeltaNet state read and written) x t/s = GB/s moved\n"
"                      (with -ngl: the GPU memory's, read by a kernel there)\n"
"%s"
"                      (a --baseline llama.cpp gets -ngl 99 too: point --llama-lib\n"
"                      at a CUDA build's lib/, e.g. ../shared/llama-cuda's; each test\n"
"                      then adds a device row: the board's energy per token from\n"
"                      NVML for each engine (n/a without it), and for tg tests\n"
"                      q36's launches per token (single and CUDA graph launches,\n"
"                      Q36_CUDA_GRAPHS=1))\n"
"  --spec-type draft-mtp  instead: greedy generation of -n tokens after a prompt (-f\n"
"                      FILE, or -p seeded ids), plain decoding against drafts from\n"
"                      the model's MTP block, repetitions interleaved: t/s of each,\n"
"                      speed-up, same tokens, acceptance per draft position, tokens\n"
"                      per verify pass, window cost (draft, verify, rollback)\n"
"  --draft-max N       drafts per verify pass (default 3)\n"
"  --draft-vocab N     the MTP head over N ids (0: all; default as q36 run's flag)\n"
"  --draft-p-min P     stop a round's drafts below probability P (default 0)\n"
"  --draft-rollback R  states (default: the verify pass keeps each row's state) or replay\n"
"\n"
"Environment: Q36_QUANT_PATH_MAX=avx2 runs q36's CPU kernels as on a CPU without\n"
"AVX-512 (the machine line says so); pair it with --llama-lib DIR holding only\n"
"libggml-cpu-haswell.so among the CPU variants to time llama.cpp's AVX2 build too.\n",
            cli_device_help);
}

/* ------------------------------------------------------------------ flags */

static int parse_depths(const char *v, bench_opts *o)
{
    if (!v || !*v)
        return cli_usage("bench", "-d expects depths like 0,4096, got '%s'", v ? v : "(nothing)");
    char buf[512];
    snprintf(buf, sizeof buf, "%s", v);
    o->n_depths = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int64_t x;
        if (o->n_depths == MAX_DEPTHS)
            return cli_usage("bench", "-d takes at most %d depths", MAX_DEPTHS);
        if (cli_int("bench", "-d", t, 0, 1 << 22, &x))
            return CLI_USAGE;
        o->depths[o->n_depths++] = (int)x;
    }
    if (!o->n_depths)
        return cli_usage("bench", "-d expects depths like 0,4096, got '%s'", v);
    return 0;
}

static int parse(int argc, char **argv, bench_opts *o)
{
    memset(o, 0, sizeof *o);
    o->n_prompt = 512;
    o->n_gen = 128;
    o->reps = 5;
    o->n_depths = 1;
    o->seed = 1;
    o->draft_max = 3;
    o->draft_vocab = Q36_DRAFT_VOCAB_AUTO;
    o->draft_rewind = 1;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    o->cfg = (bench_cfg){ .n_threads = ncpu > 0 ? (int)ncpu : 1, .n_batch = 2048, .n_ubatch = 512,
                          .type_k = Q36_KV_F16, .type_v = Q36_KV_F16, .fast = -1 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int64_t x;
        const int dv = cli_device_flag("bench", argc, argv, &i, &o->cfg.backend);
        if (dv < 0)
            return CLI_USAGE;
        if (dv)
            continue;
#define INT(flag, lo, hi, dst) \
        if (!strcmp(a, flag)) { if (cli_int("bench", flag, v, lo, hi, &x)) return CLI_USAGE; dst = (int)x; i++; continue; }
        INT("-p", 0, 1 << 22, o->n_prompt);
        INT("-n", 0, 1 << 22, o->n_gen);
        INT("-r", 1, 1000, o->reps);
        INT("-t", 1, 1024, o->cfg.n_threads);
        INT("-b", 1, 1 << 20, o->cfg.n_batch);
        INT("-ub", 1, 1 << 16, o->cfg.n_ubatch);
        INT("--draft-max", 1, 16, o->draft_max);
        INT("--draft-vocab", 0, 1 << 24, o->draft_vocab);
#undef INT
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return -1;
        } else if (!strcmp(a, "-m")) {
            if (!v)
                return cli_usage("bench", "-m needs a file");
            o->model = v;
            i++;
        } else if (!strcmp(a, "-d")) {
            if (parse_depths(v, o))
                return CLI_USAGE;
            i++;
        } else if (!strcmp(a, "-ctk") || !strcmp(a, "-ctv")) {
            int t = q36_kv_type_parse(v);
            if (t < 0)
                return cli_usage("bench", "%s expects f16, f32 or q8_0, got '%s'", a, v ? v : "(nothing)");
            *(a[3] == 'k' ? &o->cfg.type_k : &o->cfg.type_v) = t;
            i++;
        } else if (cli_mode_flag(a, &o->cfg.fast)) {
        } else if (!strcmp(a, "--profile")) {
            o->profile = o->cfg.profile = 1;
        } else if (!strcmp(a, "--bandwidth")) {
            o->bandwidth = 1;
        } else if (!strcmp(a, "-o")) {
            if (v && !strcmp(v, "md"))
                o->out = OUT_MD;
            else if (v && !strcmp(v, "json"))
                o->out = OUT_JSON;
            else if (v && !strcmp(v, "jsonl"))
                o->out = OUT_JSONL;
            else
                return cli_usage("bench", "-o expects md, json or jsonl, got '%s'", v ? v : "(nothing)");
            i++;
        } else if (!strcmp(a, "--baseline")) {
            if (!v || strcmp(v, "llama.cpp"))
                return cli_usage("bench", "--baseline expects llama.cpp, got '%s'", v ? v : "(nothing)");
            o->baseline = 1;
            i++;
        } else if (!strcmp(a, "--llama-lib")) {
            if (!v)
                return cli_usage("bench", "--llama-lib needs a folder");
            o->llama_lib = v;
            i++;
        } else if (!strcmp(a, "--seed")) {
            if (cli_int("bench", a, v, 0, INT64_MAX, &x))
                return CLI_USAGE;
            o->seed = (uint64_t)x;
            i++;
        } else if (!strcmp(a, "--progress")) {
            o->progress = 1;
        } else if (!strcmp(a, "--spec-type")) {
            if (!v || (strcmp(v, "draft-mtp") && strcmp(v, "none")))
                return cli_usage("bench", "--spec-type expects none or draft-mtp, got '%s'", v ? v : "(nothing)");
            o->spec_mtp = !strcmp(v, "draft-mtp");
            i++;
        } else if (!strcmp(a, "--draft-rollback")) {
            if (!v || (strcmp(v, "replay") && strcmp(v, "states")))
                return cli_usage("bench", "--draft-rollback expects replay or states, got '%s'", v ? v : "(nothing)");
            o->draft_rewind = !strcmp(v, "states");
            i++;
        } else if (!strcmp(a, "--draft-p-min")) {
            double d;
            if (cli_float("bench", a, v, &d))
                return CLI_USAGE;
            o->draft_p_min = (float)d;
            i++;
        } else if (!strcmp(a, "-f")) {
            if (!v)
                return cli_usage("bench", "-f needs a file");
            o->prompt_file = v;
            i++;
        } else {
            return cli_usage("bench", "unknown flag '%s'", a);
        }
    }
    if (o->n_prompt == 0 && o->n_gen == 0)
        return cli_usage("bench", "-p and -n are both 0: nothing to time");
    if (o->llama_lib && !o->baseline)
        return cli_usage("bench", "--llama-lib goes with --baseline llama.cpp");
    if (o->cfg.fast < 0)        /* the engine's default, resolved for the report */
        o->cfg.fast = o->cfg.backend != NULL;
    return 0;
}

/* The oracle folder beside q36: ./q36 sits at the project root, build/q36
 * in build/ (as cli_default_model resolves the default model). */
static const char *default_llama_lib(void)
{
    static char path[PATH_MAX + 128];
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return ORACLE_LIB_REL;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = 0;
    static char real[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", exe, ORACLE_LIB_REL);
    if (access(path, R_OK) != 0)
        snprintf(path, sizeof path, "%s/../%s", exe, ORACLE_LIB_REL);
    if (access(path, R_OK) != 0)
        snprintf(path, sizeof path, "%s/%s", exe, ORACLE_LIB_REL);
    return realpath(path, real) ? real : path;
}

/* ------------------------------------------------------------------ tests */

enum { N_ENGINES = 2 };

/* One test (pp or tg at one depth) of one engine: its samples. */
typedef struct result {
    int n_prompt, n_gen, n_depth;
    double *sec;                 /* reps */
    double *ts;                  /* tokens/s per rep */
    bench_stats st;
    char time[32];               /* when the test started, RFC 3339 */
    bench_traffic traffic;       /* tg: bytes per decode step (same for both engines) */
    double *jpt;                 /* tg on a GPU: board joules per token per rep, < 0: n/a */
    bench_stats jst;             /* of the valid jpt (n = 0: none) */
    bench_launches launches;     /* tg, q36: what its backend queued per token (last rep) */
} result;

typedef struct run {
    const bench_opts *o;
    bench_machine mach;
    bench_engine *eng[N_ENGINES];
    int n_eng;
    const char *llama_lib;
    int n_records;               /* JSON objects printed so far */
    bench_stats membw;           /* --bandwidth: GB/s, n = 0 when not measured */
    char traffic[MAX_DEPTHS][256]; /* md: one row per tg test, printed at the end */
    int n_traffic;
    int gpu;                     /* -ngl: the device rows of tg tests */
    bench_energy *energy;        /* NVML's board counter; NULL: none */
    char device[MAX_DEPTHS][256];  /* md: one row per tg test, printed at the end */
    int n_device;
} run;

static void test_name(const result *r, char *buf, size_t cap)
{
    int n = r->n_prompt ? snprintf(buf, cap, "pp%d", r->n_prompt) : snprintf(buf, cap, "tg%d", r->n_gen);
    if (r->n_depth > 0 && n > 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, " @ d%d", r->n_depth);
}

static cJSON *record(const run *R, int k, const result *r, const result *base)
{
    const bench_opts *o = R->o;
    const bench_engine *e = R->eng[k];
    const bench_desc *d = &e->desc;
    int is_q36 = !strcmp(e->name, "q36");
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "engine", e->name);
    cJSON_AddStringToObject(j, "build_commit", d->build);
    cJSON_AddStringToObject(j, "q36_commit", bench_commit());
    cJSON_AddStringToObject(j, "cpu_info", d->cpu_info[0] ? d->cpu_info : R->mach.cpu_model);
    cJSON_AddStringToObject(j, "cpu_model", R->mach.cpu_model);
    cJSON_AddStringToObject(j, "cpu_features", R->mach.features);
    cJSON_AddNumberToObject(j, "n_cpus", R->mach.n_cpus);
    cJSON_AddNumberToObject(j, "n_cores", R->mach.n_cores);
    cJSON_AddNumberToObject(j, "load_avg_1m", R->mach.load1);
    cJSON_AddStringToObject(j, "backends", o->cfg.backend ? "CUDA" : "CPU");
    cJSON_AddStringToObject(j, "engine_detail", d->detail);
    cJSON_AddStringToObject(j, "model_filename", o->model);
    cJSON_AddStringToObject(j, "model_type", d->model_type);
    cJSON_AddNumberToObject(j, "model_size", (double)d->model_size);
    cJSON_AddNumberToObject(j, "model_n_params", (double)d->model_n_params);
    cJSON_AddStringToObject(j, "model_types", R->eng[0]->desc.type_mix);
    cJSON_AddNumberToObject(j, "n_batch", o->cfg.n_batch);
    cJSON_AddNumberToObject(j, "n_ubatch", o->cfg.n_ubatch);
    cJSON_AddNumberToObject(j, "n_threads", o->cfg.n_threads);
    cJSON_AddStringToObject(j, "type_k", q36_kv_type_name(o->cfg.type_k));
    cJSON_AddStringToObject(j, "type_v", q36_kv_type_name(o->cfg.type_v));
    cJSON_AddNumberToObject(j, "n_gpu_layers", o->cfg.backend ? 99 : 0);
    if (is_q36)
        cJSON_AddStringToObject(j, "q36_mode", o->cfg.fast ? "fast" : "exact");
    else {
        cJSON_AddNumberToObject(j, "flash_attn", LLAMA_FA_AUTO_VALUE);
        cJSON_AddStringToObject(j, "llama_lib", R->llama_lib);
    }
    cJSON_AddNumberToObject(j, "n_prompt", r->n_prompt);
    cJSON_AddNumberToObject(j, "n_gen", r->n_gen);
    cJSON_AddNumberToObject(j, "n_depth", r->n_depth);
    cJSON_AddStringToObject(j, "test_time", r->time);
    cJSON_AddNumberToObject(j, "seed", (double)o->seed);
    bench_stats ns;
    double samples_ns[o->reps];
    for (int i = 0; i < o->reps; i++)
        samples_ns[i] = r->sec[i] * 1e9;
    bench_stats_of(samples_ns, o->reps, &ns);
    cJSON_AddNumberToObject(j, "avg_ns", (double)(uint64_t)ns.mean);
    cJSON_AddNumberToObject(j, "stddev_ns", (double)(uint64_t)ns.stddev);
    cJSON_AddNumberToObject(j, "avg_ts", r->st.mean);
    cJSON_AddNumberToObject(j, "stddev_ts", r->st.stddev);
    cJSON_AddNumberToObject(j, "median_ts", r->st.median);
    cJSON_AddNumberToObject(j, "min_ts", r->st.min);
    cJSON_AddNumberToObject(j, "max_ts", r->st.max);
    cJSON_AddItemToObject(j, "samples_ns", cJSON_CreateDoubleArray(samples_ns, o->reps));
    cJSON_AddItemToObject(j, "samples_ts", cJSON_CreateDoubleArray(r->ts, o->reps));
    if (base && base->st.median > 0)
        cJSON_AddNumberToObject(j, "ratio_to_llama_cpp", r->st.median / base->st.median);
    if (r->n_gen && r->traffic.total > 0) {
        cJSON_AddNumberToObject(j, "decode_bytes_per_token", r->traffic.total);
        cJSON_AddNumberToObject(j, "decode_weight_bytes", r->traffic.weights);
        cJSON_AddNumberToObject(j, "decode_kv_bytes", r->traffic.kv);
        cJSON_AddNumberToObject(j, "decode_state_bytes", r->traffic.state);
        cJSON_AddNumberToObject(j, "decode_gbps", r->traffic.total * r->st.median / 1e9);
    }
    if (r->n_prompt && R->gpu && r->jst.n)
        cJSON_AddNumberToObject(j, "prompt_joules_per_token", r->jst.median);
    if (r->n_gen && R->gpu) {
        if (r->jst.n)
            cJSON_AddNumberToObject(j, "decode_joules_per_token", r->jst.median);
        if (is_q36) {
            cJSON_AddNumberToObject(j, "decode_launches_per_token", r->launches.launches);
            cJSON_AddNumberToObject(j, "decode_graph_launches_per_token", r->launches.graph_launches);
            cJSON_AddNumberToObject(j, "decode_graph_nodes_per_token", r->launches.graph_nodes);
        }
    }
    if (R->membw.n) {
        cJSON_AddNumberToObject(j, "mem_read_gbps", R->membw.median);
        cJSON_AddNumberToObject(j, "mem_read_gbps_min", R->membw.min);
        cJSON_AddNumberToObject(j, "mem_read_gbps_max", R->membw.max);
    }
    return j;
}

static void md_header(const run *R)
{
    const bench_opts *o = R->o;
    const bench_desc *q = &R->eng[0]->desc;
    printf("q36 bench: q36 %s; %s (%s), %d CPUs / %d cores, load %.2f at start\n", bench_commit(),
           R->mach.cpu_model, R->mach.features, R->mach.n_cpus, R->mach.n_cores, R->mach.load1);
    printf("model: %s: %s, %.2f MiB, %.3f B params; %s\n", o->model, q->model_type, q->model_size / 1048576.0,
           q->model_n_params / 1e9, q->type_mix);
    printf("settings: %d threads, n_batch %d, n_ubatch %d, K/V %s/%s, q36 %s mode, %d reps, seed %llu\n",
           o->cfg.n_threads, o->cfg.n_batch, o->cfg.n_ubatch, q36_kv_type_name(o->cfg.type_k),
           q36_kv_type_name(o->cfg.type_v), o->cfg.fast ? "fast" : "exact", o->reps, (unsigned long long)o->seed);
    if (R->n_eng > 1)
        printf("baseline: llama.cpp %s (%s): %s\n", R->eng[1]->desc.build, R->eng[1]->desc.detail,
               R->eng[1]->desc.model_type);
    if (R->membw.n && R->gpu)
        printf("device memory read bandwidth (%s): %.2f GB/s median [%.2f, %.2f] of %d passes over 1 GiB\n",
               o->cfg.backend, R->membw.median, R->membw.min, R->membw.max, R->membw.n);
    else if (R->membw.n)
        printf("memory read bandwidth: %.2f GB/s median [%.2f, %.2f] of %d passes over 1 GiB, %d threads\n",
               R->membw.median, R->membw.min, R->membw.max, R->membw.n, o->cfg.n_threads);
    printf("t/s: median [min, max] of %d repetitions%s\n\n", o->reps,
           R->n_eng > 1 ? "; ratio = q36 median / llama.cpp median (above 1: q36 faster)" : "");
    if (R->n_eng > 1) {
        printf("| %-16s | %24s | %24s | %9s |\n", "test", "q36 t/s", "llama.cpp t/s", "q36/llama");
        printf("| %.16s | %.23s: | %.23s: | %.8s: |\n", "----------------", "------------------------",
               "------------------------", "---------");
    } else {
        printf("| %-24s | %9s | %7s | %-16s | %24s | %9s |\n", "model", "size", "threads", "test", "t/s",
               "stddev");
        printf("| %.24s | %.8s: | %.6s: | %.16s | %.23s: | %.8s: |\n", "------------------------",
               "---------", "-------", "----------------", "------------------------", "---------");
    }
    fflush(stdout);
}

static void fmt_ts(const bench_stats *s, char *buf, size_t cap)
{
    snprintf(buf, cap, "%.2f [%.2f, %.2f]", s->median, s->min, s->max);
}

static void emit(run *R, result *res /* [n_eng] */)
{
    const bench_opts *o = R->o;
    char name[48], a[64], b[64];
    test_name(&res[0], name, sizeof name);
    if (o->out == OUT_MD) {
        fmt_ts(&res[0].st, a, sizeof a);
        if (R->n_eng > 1) {
            fmt_ts(&res[1].st, b, sizeof b);
            printf("| %-16s | %24s | %24s | %9.3f |\n", name, a, b,
                   res[1].st.median > 0 ? res[0].st.median / res[1].st.median : 0.0);
        } else {
            const bench_desc *q = &R->eng[0]->desc;
            char size[32];
            snprintf(size, sizeof size, q->model_size < (1u << 30) ? "%.2f MiB" : "%.2f GiB",
                     q->model_size < (1u << 30) ? q->model_size / 1048576.0 : q->model_size / 1073741824.0);
            printf("| %-24.24s | %9s | %7d | %-16s | %24s | %9.2f |\n", q->model_type, size, o->cfg.n_threads,
                   name, a, res[0].st.stddev);
        }
        fflush(stdout);
        return;
    }
    for (int k = 0; k < R->n_eng; k++) {
        cJSON *j = record(R, k, &res[k], k == 0 && R->n_eng > 1 ? &res[1] : NULL);
        char *s = o->out == OUT_JSON ? cJSON_Print(j) : cJSON_PrintUnformatted(j);
        if (o->out == OUT_JSON)
            printf("%s%s", R->n_records ? ",\n" : "[\n", s ? s : "{}");
        else
            printf("%s\n", s ? s : "{}");
        R->n_records++;
        free(s);
        cJSON_Delete(j);
    }
    fflush(stdout);
}

/* md: one row of the decode traffic table for a tg test: bytes per step
 * and what each engine's median speed moves, against --bandwidth. */
static void traffic_row(run *R, const result *res)
{
    if (R->n_traffic == MAX_DEPTHS)
        return;
    const bench_traffic *t = &res[0].traffic;
    char name[48];
    test_name(&res[0], name, sizeof name);
    size_t k = (size_t)snprintf(R->traffic[R->n_traffic], sizeof R->traffic[0],
                                "| %-16s | %8.1f | %7.1f | %6.1f | %6.1f |", name, t->total / 1e6,
                                t->weights / 1e6, t->kv / 1e6, t->state / 1e6);
    for (int e = 0; e < R->n_eng && k < sizeof R->traffic[0]; e++) {
        const double gbps = t->total * res[e].st.median / 1e9;
        k += (size_t)snprintf(R->traffic[R->n_traffic] + k, sizeof R->traffic[0] - k, " %6.2f | %5.1f%% |",
                              gbps, R->membw.n ? 100.0 * gbps / R->membw.median : 0.0);
    }
    R->n_traffic++;
}

/* md: one row of the device table for a test: q36's launches per token
 * (tg tests; "-" for prompts) and each engine's board energy per token
 * (median of the repetitions). */
static void device_row(run *R, const result *res)
{
    if (R->n_device == MAX_DEPTHS)
        return;
    char name[48];
    test_name(&res[0], name, sizeof name);
    const bench_launches *l = &res[0].launches;
    size_t k = res[0].n_gen
                   ? (size_t)snprintf(R->device[R->n_device], sizeof R->device[0],
                                      "| %-16s | %9.1f | %8.2f | %8.1f |", name, l->launches,
                                      l->graph_launches, l->graph_nodes)
                   : (size_t)snprintf(R->device[R->n_device], sizeof R->device[0],
                                      "| %-16s | %9s | %8s | %8s |", name, "-", "-", "-");
    for (int e = 0; e < R->n_eng && k < sizeof R->device[0]; e++) {
        if (res[e].jst.n)
            k += (size_t)snprintf(R->device[R->n_device] + k, sizeof R->device[0] - k, " %9.4f |",
                                  res[e].jst.median);
        else
            k += (size_t)snprintf(R->device[R->n_device] + k, sizeof R->device[0] - k, " %9s |",
                                  "n/a");
    }
    R->n_device++;
}

static void print_device(const run *R)
{
    if (!R->n_device)
        return;
    printf("\non the GPU, per token: q36's kernel and copy launches, CUDA graph launches and their\n"
           "nodes (Q36_CUDA_GRAPHS=1; decode tests), and the board's energy (NVML total energy\n"
           "over the timed tokens, prompt or decode, whole board, median of the repetitions;\n"
           "n/a: no NVML)\n\n");
    printf("| %-16s | %9s | %8s | %8s |", "test", "launches", "graphs", "nodes");
    for (int e = 0; e < R->n_eng; e++)
        printf(" %-9.9s |", R->eng[e]->name);
    printf("\n| %.16s | %.8s: | %.7s: | %.7s: |", "-----------------", "---------", "--------",
           "--------");
    for (int e = 0; e < R->n_eng; e++)
        printf(" %.8s: |", "---------");
    printf("\n");
    for (int i = 0; i < R->n_device; i++)
        printf("%s\n", R->device[i]);
    printf("(launches, graphs, nodes: q36; the engine columns: J/token)\n");
}

static void print_traffic(const run *R)
{
    if (!R->n_traffic)
        return;
    printf("\ndecode traffic: MB (1e6 B) one step moves at the test's mean position (weights read once,\n"
           "experts by n_used/n_expert, K/V rows read, DeltaNet state read and written) times median t/s");
    if (R->membw.n && R->gpu)
        printf(";\n%% of the measured device memory read bandwidth, %.2f GB/s [%.2f, %.2f]",
               R->membw.median, R->membw.min, R->membw.max);
    else if (R->membw.n)
        printf(";\n%% of the measured memory read bandwidth, %.2f GB/s [%.2f, %.2f] with %d threads",
               R->membw.median, R->membw.min, R->membw.max, R->o->cfg.n_threads);
    printf("\n\n| %-16s | %8s | %7s | %6s | %6s |", "test", "MB/step", "weights", "K/V", "state");
    for (int e = 0; e < R->n_eng; e++)
        printf(" %-6.6s | %6s |", R->eng[e]->name, "of bw");
    printf("\n| %.16s | %.7s: | %.6s: | %.5s: | %.5s: |", "-----------------", "--------", "-------",
           "------", "------");
    for (int e = 0; e < R->n_eng; e++)
        printf(" -----: | -----: |");
    printf("\n");
    for (int i = 0; i < R->n_traffic; i++)
        printf("%s\n", R->traffic[i]);
    printf("(columns under an engine: GB/s = MB/step x t/s; \"of bw\": that over the read bandwidth%s)\n",
           R->membw.n ? "" : ", not measured: pass --bandwidth");
}

static void now_rfc3339(char *buf, size_t cap)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Runs one test (pp when n_prompt > 0, else tg) at the depth the engines
 * were prepared for, repetitions interleaved: q36, llama.cpp, q36, ... */
static int run_test(run *R, result *res, int n_prompt, int n_gen, int depth, const int32_t *ids,
                    q36_err *err)
{
    const bench_opts *o = R->o;
    for (int k = 0; k < R->n_eng; k++) {
        res[k].n_prompt = n_prompt;
        res[k].n_gen = n_gen;
        res[k].n_depth = depth;
        now_rfc3339(res[k].time, sizeof res[k].time);
    }
    int n = n_prompt ? n_prompt : n_gen;
    for (int r = 0; r < o->reps; r++)
        for (int k = 0; k < R->n_eng; k++) {
            bench_engine *e = R->eng[k];
            double sec = 0;
            const double j0 = R->energy ? bench_energy_j(R->energy) : -1.0;
            int rc = n_prompt ? e->time_prompt(e, ids, n, &sec, err) : e->time_gen(e, ids, n, &sec, err);
            if (rc)
                return rc;
            const double j1 = j0 >= 0 ? bench_energy_j(R->energy) : -1.0;
            res[k].jpt[r] = j0 >= 0 && j1 >= j0 ? (j1 - j0) / n : -1.0;
            res[k].sec[r] = sec;
            res[k].ts[r] = sec > 0 ? n / sec : 0;
            if (o->progress)
                fprintf(stderr, "q36 bench: %s %s%d @ d%d rep %d/%d: %.2f t/s\n", e->name,
                        n_prompt ? "pp" : "tg", n, depth, r + 1, o->reps, res[k].ts[r]);
        }
    for (int k = 0; k < R->n_eng; k++) {
        bench_stats_of(res[k].ts, o->reps, &res[k].st);
        double v[o->reps];
        int nv = 0;
        for (int r = 0; r < o->reps; r++)
            if (res[k].jpt[r] >= 0)
                v[nv++] = res[k].jpt[r];
        memset(&res[k].jst, 0, sizeof res[k].jst);
        if (nv)
            bench_stats_of(v, nv, &res[k].jst);
        memset(&res[k].launches, 0, sizeof res[k].launches);
    }
    if (n_gen)
        bench_q36_launches(R->eng[0], &res[0].launches);
    if (R->gpu)
        device_row(R, res);
    if (n_gen) {
        bench_traffic t;
        int rc = bench_q36_traffic(R->eng[0], depth + (n_gen + 1) / 2.0, &t, err);
        if (rc)
            return rc;
        for (int k = 0; k < R->n_eng; k++)
            res[k].traffic = t;
        traffic_row(R, res);
    }
    emit(R, res);
    return 0;
}

/* ---------------------------------------------------------------- profile */

/* Two tables of one profiled run of n tokens: by op family, then by layer
 * kind; percentages of the forward calls' wall time, so the share the ops
 * do not account for shows. */
void bench_print_profile(FILE *f, const char *what, int depth, const q36_profile *p, int n)
{
    double fwd = p->forward_ms > 0 ? p->forward_ms : 1e-9, ops = 0;
    fprintf(f, "\nq36 profile: %s @ d%d: %llu forward calls, %llu tokens, forward %.3f ms"
               " (%.3f ms/token)\n\n", what, depth, (unsigned long long)p->forwards,
            (unsigned long long)p->tokens, p->forward_ms, p->forward_ms / (n > 0 ? n : 1));
    fprintf(f, "| %-28s | %8s | %10s | %7s | %9s |\n", "op family", "calls", "ms total", "% fwd",
            "ms/token");
    fprintf(f, "| %.28s | %.7s: | %.9s: | %.6s: | %.8s: |\n", "------------------------------",
            "--------", "----------", "-------", "---------");
    for (int i = 0; i < p->n_ops; i++) {
        const q36_profile_row *r = &p->op[i];
        ops += r->ms;
        fprintf(f, "| %-28s | %8llu | %10.3f | %6.2f%% | %9.4f |\n", r->name,
                (unsigned long long)r->calls, r->ms, 100.0 * r->ms / fwd, r->ms / (n > 0 ? n : 1));
    }
    fprintf(f, "| %-28s | %8s | %10.3f | %6.2f%% | %9.4f |\n", "(ops, all)", "", ops,
            100.0 * ops / fwd, ops / (n > 0 ? n : 1));
    fprintf(f, "| %-28s | %8s | %10.3f | %6.2f%% | %9.4f |\n", "(unaccounted)", "", p->forward_ms - ops,
            100.0 * (p->forward_ms - ops) / fwd, (p->forward_ms - ops) / (n > 0 ? n : 1));
    fprintf(f, "\n| %-16s | %10s | %7s |\n", "layer type", "ms", "% fwd");
    fprintf(f, "| %.16s | %.9s: | %.6s: |\n", "------------------", "----------", "-------");
    for (int i = 0; i < p->n_layers; i++)
        if (p->layer[i].calls || p->layer[i].ms > 0)   /* the MTP block's only when it ran */
            fprintf(f, "| %-16s | %10.3f | %6.2f%% |\n", p->layer[i].name, p->layer[i].ms,
                    100.0 * p->layer[i].ms / fwd);
    fprintf(f, "| %-16s | %10.3f | %6.2f%% |\n", "(forward)", p->forward_ms, 100.0);
}

static int profile_depth(run *R, int depth, const int32_t *pp, int p, const int32_t *tg, int n,
                         q36_err *err)
{
    q36_profile *prof = malloc(2 * sizeof *prof);
    if (!prof)
        return q36_err_set(err, Q36_E_NOMEM, "out of memory for the profile tables");
    int rc = bench_q36_profile(R->eng[0], pp, p, tg, n, &prof[0], &prof[1], err);
    if (!rc) {
        FILE *f = R->o->out == OUT_MD ? stdout : stderr;
        char what[32];
        if (p) {
            snprintf(what, sizeof what, "pp%d", p);
            bench_print_profile(f, what, depth, &prof[0], p);
        }
        if (n) {
            snprintf(what, sizeof what, "tg%d", n);
            bench_print_profile(f, what, depth, &prof[1], n);
        }
    }
    free(prof);
    return rc;
}

static int run_depth(run *R, int depth, result *res, q36_err *err)
{
    const bench_opts *o = R->o;
    int p = o->n_prompt, n = o->n_gen;
    int need = depth + (p > n ? p : n), n_ctx = need > p + 1 ? need : p + 1;
    int32_t *ids = malloc((size_t)(depth + p + n + 1) * sizeof *ids);
    if (!ids)
        return q36_err_set(err, Q36_E_NOMEM, "out of memory for %d token ids", depth + p + n);
    /* The same ids for both engines: depth, then the prompt, then the
     * generated tokens; seeded by --seed and the depth. */
    bench_random_ids(ids, depth + p + n + 1, R->eng[0]->desc.n_vocab, o->seed * 1000003u + (uint64_t)depth);
    const int32_t *pp = ids + depth, *tg = ids + depth + p;
    int rc = 0;
    for (int k = 0; k < R->n_eng && !rc; k++) {
        if (o->progress)
            fprintf(stderr, "q36 bench: %s: warm-up and depth %d\n", R->eng[k]->name, depth);
        rc = R->eng[k]->prepare(R->eng[k], n_ctx, pp, p, n > 0, ids, depth, err);
    }
    if (!rc && p)
        rc = run_test(R, res, p, 0, depth, pp, err);
    if (!rc && n)
        rc = run_test(R, res, 0, n, depth, tg, err);
    if (!rc && o->profile)
        rc = profile_depth(R, depth, pp, p, tg, n, err);
    for (int k = 0; k < R->n_eng; k++)
        R->eng[k]->release(R->eng[k]);
    free(ids);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    bench_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (!o.model)
        o.model = cli_default_model();

    q36_err err = { 0 };
    if (o.spec_mtp) {
        if (o.n_gen < 1)
            return cli_usage("bench", "--spec-type draft-mtp needs -n N >= 1");
        rc = bench_spec(o.model, &o.cfg, o.prompt_file, o.n_prompt, o.n_gen, o.reps, o.draft_max,
                        o.draft_vocab, o.draft_p_min, o.draft_rewind, o.seed, &err);
        return rc ? cli_fail(&err) : 0;
    }
    run R = { .o = &o };
    result res[N_ENGINES];
    memset(res, 0, sizeof res);
    bench_machine_read(&R.mach);
    if ((rc = bench_q36_open(o.model, &o.cfg, &R.eng[0], &err)))
        goto done;
    R.n_eng = 1;
    if (o.baseline) {
        R.llama_lib = o.llama_lib ? o.llama_lib : default_llama_lib();
        if ((rc = bench_llama_open(R.llama_lib, o.model, &o.cfg, &R.eng[1], &err)))
            goto done;
        R.n_eng = 2;
        if (R.eng[1]->desc.n_vocab != R.eng[0]->desc.n_vocab) {
            rc = q36_err_set(&err, Q36_E_FORMAT, "%s: llama.cpp sees %d vocabulary entries, q36 %d", o.model,
                             R.eng[1]->desc.n_vocab, R.eng[0]->desc.n_vocab);
            goto done;
        }
    }
    for (int k = 0; k < R.n_eng; k++) {
        res[k].sec = calloc((size_t)o.reps, sizeof *res[k].sec);
        res[k].ts = calloc((size_t)o.reps, sizeof *res[k].ts);
        res[k].jpt = calloc((size_t)o.reps, sizeof *res[k].jpt);
        if (!res[k].sec || !res[k].ts || !res[k].jpt) {
            rc = q36_err_set(&err, Q36_E_NOMEM, "out of memory for %d repetitions", o.reps);
            goto done;
        }
    }
    R.gpu = o.cfg.backend != NULL;
    if (o.bandwidth &&
        (rc = R.gpu ? bench_membw_device(o.cfg.backend, (size_t)1 << 30, 5, &R.membw, &err)
                    : bench_membw(o.cfg.n_threads, (size_t)1 << 30, 5, &R.membw, &err)))
        goto done;
    if (R.gpu)
        R.energy = bench_energy_open();
    if (o.out == OUT_MD)
        md_header(&R);
    for (int i = 0; i < o.n_depths && !rc; i++)
        rc = run_depth(&R, o.depths[i], res, &err);
    if (!rc && o.out == OUT_MD) {
        print_traffic(&R);
        print_device(&R);
    }
    if (o.out == OUT_JSON && R.n_records)
        printf("\n]\n");
    else if (o.out == OUT_JSON)
        printf("[]\n");
done:
    for (int k = 0; k < N_ENGINES; k++) {
        bench_engine_free(R.eng[k]);
        free(res[k].sec);
        free(res[k].ts);
        free(res[k].jpt);
    }
    bench_energy_close(R.energy);
    if (rc) {
        fflush(stdout);
        return cli_fail(&err);
    }
    return 0;
}
