/* oracle.h: what the files of the oracle harness (build/oracle) share: the
 * parsed command line, the llama.cpp log capture, model and context set-up,
 * and small I/O helpers.
 *
 * The harness is a test tool, not part of libq36. It links the pinned
 * prebuilt libllama/libggml (tests/oracle/node_modules) and answers one
 * question per subcommand; see tests/oracle/README.md. Machine-readable
 * answers go to stdout, diagnostics to stderr. Exit status: 0 success,
 * 1 error (one line "oracle: ..." on stderr), 2 bad usage.
 */
#ifndef Q36_ORACLE_H
#define Q36_ORACLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llama.h"

#define ORC_OK    0
#define ORC_ERROR 1
#define ORC_USAGE 2

/* Every flag of every subcommand; a subcommand reads the ones it allows
 * (orc_cmd.flags) and the parser refuses the others. */
typedef struct orc_opts {
    const char *cmd;          /* subcommand name */
    const char *model;        /* -m */
    const char *prompt;       /* -p: text (tokenize, greedy) or count (bench) */
    const char *file;         /* -f: text file (tokenize) */
    const char *ids;          /* --ids "1 2 3" */
    const char *ids_file;     /* --ids-file F */
    const char *out;          /* -o */
    const char *logits_out;   /* --logits (greedy) */
    const char *tensor;       /* --tensor (dequant) */
    const char *a_file;       /* first positional file (compare, argmax) */
    const char *b_file;       /* second positional file (compare) */
    bool no_special;          /* --no-special: parse_special = false */
    bool pieces;              /* --pieces: detokenize by token_to_piece */
    bool all;                 /* --all: logits of every position */
    bool verbose;             /* -v: let llama.cpp's log through */
    bool mtp;                 /* --mtp: llama_model_params.load_mtp = true */
    bool ggml_load;           /* --ggml-load: dequant reads via ggml's loader */
    bool margins;             /* --margins: argmax also prints top-1 - top-2 */
    enum ggml_type kv;        /* --kv: K and V cache type */
    enum llama_flash_attn_type fa; /* --fa */
    bool kv_set, fa_set;      /* given on the command line */
    int threads;              /* -t (default 2) */
    int n_ctx;                /* -c (0: derived from the work) */
    int n_batch;              /* -b (0: the whole prompt in one decode) */
    int n_ubatch;             /* -ub (0: = n_batch) */
    int n;                    /* -n: tokens to generate, or row length */
    bool n_set;
    int depth;                /* -d (bench) */
    int reps;                 /* -r (bench) */
    uint64_t seed;            /* --seed (bench) */
} orc_opts;

/* Prints "oracle: <msg>" on stderr; returns ORC_ERROR. */
int orc_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "oracle <cmd>: <msg>" and a hint; returns ORC_USAGE. */
int orc_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Installs the log callback (captures the last lines; echoes them when
 * verbose) and loads the CPU backends from $Q36_ORACLE_LIB, or the
 * compiled-in Q36_ORACLE_LIB when it is unset. Call first. */
int orc_init(bool verbose);
/* The last captured llama.cpp log lines joined with " | " (static buffer). */
const char *orc_last_log(void);

/* How much of the model to load. */
enum orc_load_what {
    ORC_LOAD_VOCAB,    /* vocab_only: the tokenizer (hyper-parameters stay 0) */
    ORC_LOAD_SHAPES,   /* every tensor checked, weights left in the mmap
                        * (use_extra_bufts = false: no repacked copy) */
    ORC_LOAD_FULL,     /* for a forward pass, with llama.cpp's defaults
                        * (weights repacked for the CPU kernels where it can) */
};
/* Loads o->model. NULL after printing the error (with llama.cpp's last log
 * lines). */
struct llama_model *orc_load(const orc_opts *o, enum orc_load_what what);
/* A context for one sequence with the harness settings: n_ctx tokens,
 * n_batch/n_ubatch as given, o->threads threads, K/V type o->kv, flash
 * attention o->fa. NULL after printing the error. */
struct llama_context *orc_context(struct llama_model *m, const orc_opts *o,
                                  int n_ctx, int n_batch, int n_ubatch);

/* Parses --ids or --ids-file into a malloc'ed array (caller frees); checks
 * each id is in [0, n_vocab) when n_vocab > 0. Returns the count, or -1
 * after printing the error. */
int orc_read_ids(const orc_opts *o, int n_vocab, llama_token **out);
/* Reads a whole file into a malloc'ed buffer with a NUL after it. */
char *orc_read_file(const char *path, size_t *len);
/* Writes n floats to path; returns 0 or prints the error and returns -1. */
int orc_write_f32(const char *path, const float *v, size_t n);

/* Index of the largest value; ties go to the lower index. */
int orc_argmax(const float *v, int n);
/* Index of the first non-finite value, or -1. */
long orc_first_nonfinite(const float *v, size_t n);

/* Decodes ids[0..n) at positions pos0.. in batches of n_batch tokens (the
 * whole range in one llama_decode when n_batch >= n). When rows is
 * non-NULL it receives the logits: n rows when all, else the last row only.
 * Returns 0 or prints the error and returns -1. */
int orc_decode(struct llama_context *ctx, const llama_token *ids, int n, int pos0,
               int n_batch, bool all, float *rows, int n_vocab);

/* Subcommands: each returns an exit status. */
int orc_cmd_n_params(const orc_opts *o);
int orc_cmd_tokenize(const orc_opts *o);
int orc_cmd_detokenize(const orc_opts *o);
int orc_cmd_logits(const orc_opts *o);
int orc_cmd_greedy(const orc_opts *o);
int orc_cmd_decode_check(const orc_opts *o);
int orc_cmd_bench(const orc_opts *o);
int orc_cmd_perplexity(const orc_opts *o);
int orc_cmd_dequant(const orc_opts *o);
int orc_cmd_cpu(const orc_opts *o);
int orc_cmd_compare(const orc_opts *o);
int orc_cmd_argmax(const orc_opts *o);
int orc_cmd_mtp(const orc_opts *o);

#endif
