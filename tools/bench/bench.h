/* bench.h: what `q36 bench` needs that is not command-line: the machine
 * record, the commit compiled in, the statistics of repeated timings, the
 * seeded token ids, and the engine interface both runners implement (q36
 * through its session API, llama.cpp through a dlopen'ed libllama).
 *
 * It owns no printing and no flag parsing (tools/bench.c does both), and no
 * GGUF or llama.cpp type: this header is included by the q36 runner
 * (bench_q36.c, which sees q36.h) and by the llama.cpp runner
 * (bench_llama.c, which sees llama.h); the two headers cannot meet in one
 * file because q36's gguf.h and ggml's gguf.h clash.
 *
 * What is timed follows llama-bench (llama.cpp tools/llama-bench): per test
 * a warm-up, then per repetition the state is reset to the filled depth
 * (untimed) and either a prompt of n tokens is evaluated in calls of n_batch
 * tokens, each producing the last row's logits ("pp"), or n tokens are
 * decoded one at a time, each producing its logits ("tg").
 */
#ifndef Q36_BENCH_H
#define Q36_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../../src/util/err.h"

/* ---------------------------------------------------------------- machine */

typedef struct bench_machine {
    char cpu_model[128];   /* "model name" of /proc/cpuinfo, or "unknown" */
    char features[192];    /* the SIMD features that matter to the kernels,
                            * space-separated: "AVX2 FMA F16C AVX512F ..." */
    int  n_cpus;           /* online logical CPUs */
    int  n_cores;          /* physical cores (core ids x sockets), or n_cpus */
    double load1;          /* 1-minute load average when the run started */
} bench_machine;

/* Reads /proc/cpuinfo, sysconf and /proc/loadavg; fields it cannot read are
 * left "unknown" / 0. Never fails. */
void bench_machine_read(bench_machine *m);

/* The q36 commit this binary was built from (git rev-parse --short HEAD at
 * build time, via -DQ36_COMMIT), or "unknown". */
const char *bench_commit(void);

/* ------------------------------------------------------------- statistics */

typedef struct bench_stats {
    int    n;
    double median, mean, stddev;   /* stddev: sample (n-1), 0 when n < 2 */
    double min, max;
} bench_stats;

/* Statistics of v[0..n). v is not modified. */
void bench_stats_of(const double *v, int n, bench_stats *out);

/* Fills ids[0..n) with seeded pseudo-random ids in [0, n_vocab): the same
 * seed gives the same ids on every machine. */
void bench_random_ids(int32_t *ids, int n, int32_t n_vocab, uint64_t seed);

/* ---------------------------------------------------------------- engines */


typedef struct bench_cfg {
    int n_threads;
    int n_batch;       /* tokens per call: llama_decode's batch, q36_session_append's count */
    int n_ubatch;      /* tokens per forward pass: llama.cpp's n_ubatch, q36's session n_batch */
    int type_k, type_v;   /* enum q36_kv_type (llama.cpp takes the same type) */
    int fast;          /* q36 only: q36_session_opts.fast */
    const char *backend;   /* q36 only: q36_session_opts.backend (NULL: the CPU; -ngl/--device) */
    int profile;       /* --profile (bench_spec: one more profiled run of each decoding) */
} bench_cfg;

/* What an engine says about itself and the model it loaded. */
typedef struct bench_desc {
    char    model_type[128];   /* "qwen35 0.75B q4_K" (llama.cpp: llama_model_desc) */
    char    type_mix[256];     /* "q4_K 150 (470.2 MiB), f32 ..." (q36 only) */
    uint64_t model_size;       /* bytes of tensor data */
    uint64_t model_n_params;
    int32_t n_vocab;
    char    build[64];         /* q36 commit, or the llama.cpp release ("v0.5.0") */
    char    cpu_info[128];     /* llama.cpp: the CPU device's description */
    char    detail[256];       /* how it runs: llama.cpp's library, CPU variant, flash attention */
} bench_desc;

/* One engine with one model loaded. The functions return 0 or a negative
 * kind with err set (one line naming the engine and what failed).
 *
 * prepare: makes a context of n_ctx positions, runs the warm-up (a prompt
 *   of n_warm_prompt ids when > 0, then one single-token decode when
 *   warm_gen), clears it, evaluates the depth ids (untimed) and keeps that
 *   state so every repetition starts from it.
 * time_prompt: back to the depth state, then n ids in calls of n_batch,
 *   each asking for the last row's logits; *sec is the wall time of the calls.
 * time_gen: back to the depth state, then n single-token decodes.
 * release: frees the context (prepare may be called again).
 * free: release + the model; accepts NULL. */
typedef struct bench_engine bench_engine;
struct bench_engine {
    const char *name;          /* "q36" | "llama.cpp" */
    bench_desc desc;
    int  (*prepare)(bench_engine *e, int n_ctx, const int32_t *warm, int n_warm_prompt, int warm_gen,
                    const int32_t *depth_ids, int depth, q36_err *err);
    int  (*time_prompt)(bench_engine *e, const int32_t *ids, int n, double *sec, q36_err *err);
    int  (*time_gen)(bench_engine *e, const int32_t *ids, int n, double *sec, q36_err *err);
    void (*release)(bench_engine *e);
    void (*free)(bench_engine *e);
};

void bench_engine_free(bench_engine *e);    /* accepts NULL */

/* The q36 runner: opens the model at `path` with cfg. */
int bench_q36_open(const char *path, const bench_cfg *cfg, bench_engine **out, q36_err *err);

/* The q36 runner's profile (--profile): after prepare, a second session
 * with q36_session_opts.profile at the same depth (the prepared state, not
 * re-evaluated) runs the prompt once untimed as a warm-up, then the n_prompt
 * ids in calls of n_batch into *pp and n_gen single-token decodes into *tg
 * (either skipped when its count is 0). The timed session is not profiled.
 * e must come from bench_q36_open. */
struct q36_profile;
int bench_q36_profile(bench_engine *e, const int32_t *prompt, int n_prompt, const int32_t *gen,
                      int n_gen, struct q36_profile *pp, struct q36_profile *tg, q36_err *err);

/* The llama.cpp runner: dlopens libllama from lib_dir (the folder of the
 * pinned prebuilt libraries) and loads `path` with cfg, flash attention as
 * llama-bench's default (auto) and llama-bench's thread pool. Errors name
 * the folder and scripts/setup.sh when the library is not there. */
int bench_llama_open(const char *lib_dir, const char *path, const bench_cfg *cfg, bench_engine **out,
                     q36_err *err);

/* ------------------------------------------------------- memory traffic */

/* Bytes one single-token decode step moves (bench_traffic.c says what is
 * counted): weights it reads, K/V rows it reads, DeltaNet state it reads
 * and writes. */
typedef struct bench_traffic {
    double weights, kv, state, total;
} bench_traffic;

/* The traffic of a decode step of the model e (from bench_q36_open) that
 * attends to ctx_positions positions, with the K/V types of its config. */
int bench_q36_traffic(bench_engine *e, double ctx_positions, bench_traffic *out, q36_err *err);

/* Memory read bandwidth in GB/s (1e9 bytes/s): n_threads stream disjoint
 * parts of a buffer of `bytes`, `passes` timed passes after one untimed
 * one (bench_membw.c). */
int bench_membw(int n_threads, size_t bytes, int passes, bench_stats *gbps, q36_err *err);
/* The same for the device memory of a built-in backend (backend.h,
 * be_device_read_bandwidth: "cuda"). */
int bench_membw_device(const char *backend, size_t bytes, int passes, bench_stats *gbps,
                       q36_err *err);

/* --spec-type draft-mtp: plain greedy decoding against MTP speculative
 * decoding from a prompt (text file, or n_prompt seeded ids), -r
 * repetitions interleaved; a markdown report on stdout (bench_spec.c). */
/* bench.c's profile tables of one run of n tokens (what: "tg128", "draft-mtp", ...) */
struct q36_profile;
void bench_print_profile(FILE *f, const char *what, int depth, const struct q36_profile *p, int n);

int bench_spec(const char *path, const bench_cfg *cfg, const char *prompt_file, int n_prompt,
               int n_gen, int reps, int draft_max, int draft_vocab, float p_min, int rewind,
               uint64_t seed, q36_err *err);

/* ------------------------------------------------------------ the device */

/* The GPU board's energy counter (bench_energy.c: NVML through dlopen);
 * NULL when there is none (no library, no device). bench_energy_j: joules
 * since an arbitrary origin, negative when the read fails. */
typedef struct bench_energy bench_energy;
bench_energy *bench_energy_open(void);
double bench_energy_j(const bench_energy *e);
void bench_energy_close(bench_energy *e);      /* accepts NULL */

/* What the q36 runner's backend queued per token in its last time_gen
 * (q36_engine_backend_stats differences over the decodes, divided by
 * their count): single launches, graph launches and the graph's nodes.
 * All zero on the CPU. e must come from bench_q36_open. */
typedef struct bench_launches {
    double launches, graph_launches, graph_nodes;
} bench_launches;
void bench_q36_launches(const bench_engine *e, bench_launches *out);

/* Monotonic wall clock in seconds. */
double bench_now(void);

#endif
