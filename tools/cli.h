/* cli.h: what the q36 subcommands share: the command table, flag parsing
 * helpers and the one place that turns an error value into a line on stderr.
 *
 * Exit statuses (ARCHITECTURE.md): 0 success, 1 a user error (one clear line
 * on stderr), 2 bad usage.
 */
#ifndef Q36_CLI_H
#define Q36_CLI_H

#include <stddef.h>
#include <stdint.h>
#include "../src/util/err.h"

#define CLI_OK    0
#define CLI_ERROR 1
#define CLI_USAGE 2

int cmd_info(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_serve(int argc, char **argv);

/* Prints "q36: <msg>" for err and returns CLI_ERROR. */
int cli_fail(const q36_err *err);
/* Prints "q36 <cmd>: <msg>" plus a hint to --help and returns CLI_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parses a whole decimal integer in [lo, hi] for flag `flag`; returns 0 or
 * prints a usage error and returns CLI_USAGE. */
int cli_int(const char *cmd, const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out);
int cli_float(const char *cmd, const char *flag, const char *s, double *out);

/* Parses token ids separated by spaces, commas or newlines into a malloc'd
 * array. Returns 0, or CLI_USAGE after printing which part is not an id. */
int cli_parse_ids(const char *cmd, const char *s, int32_t **out, int *n);

/* The device flags (device.c): -ngl N, --gpu-layers N, --n-gpu-layers N,
 * -dev/--device D. Consumes argv[*i] and its value into *backend (NULL:
 * the CPU; "cuda"); returns 1, 0 when argv[*i] is not one of them, or -1
 * after printing a usage error. cli_device_help: their --help lines. */
int cli_device_flag(const char *cmd, int argc, char **argv, int *i, const char **backend);
extern const char cli_device_help[];
#define CLI_DEVICE_HELP \
"  -ngl N               layers on the GPU (llama.cpp's flag): 0 = the CPU (default),\n" \
"                       any N > 0 = the whole model on the CUDA device\n" \
"  -dev, --device D     none/cpu, cuda or CUDAi (device i; default 0)\n" \
"  --fast, --exact      the engine's mode: fast (the chunked delta rule for prompts;\n" \
"                       on the GPU also f16 tensor-core products and tiled\n" \
"                       attention) or exact (llama.cpp's order of operations and\n" \
"                       sums); default: fast on the GPU, exact on the CPU\n"

/* --fast (1) and --exact (0) into *fast (q36_engine_opts.fast, whose
 * default -1 is fast on a GPU, exact on the CPU); 1 when `a` is one. Their
 * --help lines are in cli_device_help. */
int cli_mode_flag(const char *a, int *fast);
/* For a GPU backend in o: the memory the model and the engine need on the
 * device against what is free there, printed as a plan when `print`, and
 * Q36_E_NOMEM with the numbers when it does not fit (before anything is
 * uploaded). 0 for the CPU. */
struct q36_model;
struct q36_engine_opts;
int cli_device_check(const struct q36_model *m, int n_ctx, const struct q36_engine_opts *o,
                     int print, q36_err *err);

/* The whole of file `path` ("-": standard input), NUL-terminated, in a
 * malloc'd buffer, its length in *len (may be NULL); NULL with err set
 * ("PATH: cannot open: why", a read error, out of memory). cli_file.c. */
char *cli_read_file(const char *path, size_t *len, q36_err *err);

/* The model used when -m is not given: build/default.gguf beside the q36
 * binary (made by `make run`). Returns a static string. */
const char *cli_default_model(void);

#endif
