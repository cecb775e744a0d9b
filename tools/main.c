/* main.c: the q36 binary: finds the subcommand and hands it argv. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *what;
} commands[] = {
    { "run",   cmd_run,   "generate text from a prompt (or ids), streaming it" },
    { "chat",  cmd_chat,  "interactive chat with the model's chat template" },
    { "serve", cmd_serve, "OpenAI- and Anthropic-compatible HTTP server" },
    { "info",  cmd_info,  "architecture, geometry, parameter count and tensors of a GGUF" },
    { "synth", cmd_synth, "write a random-weight qwen35/qwen35moe GGUF of real geometry" },
    { "tokenize",   cmd_tokenize,   "text to token ids with the model's tokenizer" },
    { "detokenize", cmd_detokenize, "token ids to the bytes they stand for" },
    { "logits",     cmd_logits,     "float32 logits of a list of token ids (all or last position)" },
    { "perplexity", cmd_perplexity, "perplexity of a text file, as llama-perplexity measures it" },
    { "bench",      cmd_bench,      "prefill and decode tokens/s at context depths (+ llama.cpp baseline)" },
};

static void usage(FILE *o)
{
    fprintf(o, "usage: q36 <command> [flags]   (q36 <command> --help for its flags)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(o, "  %-10s %s\n", commands[i].name, commands[i].what);
}

int cli_fail(const q36_err *err)
{
    fprintf(stderr, "q36: %s\n", err->msg[0] ? err->msg : "unknown error");
    return CLI_ERROR;
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "q36 %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see q36 %s --help)\n", cmd);
    return CLI_USAGE;
}

int cli_int(const char *cmd, const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = s ? strtoll(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi)
        return cli_usage(cmd, "%s expects an integer in [%lld, %lld], got '%s'", flag,
                         (long long)lo, (long long)hi, s ? s : "(nothing)");
    *out = v;
    return 0;
}

int cli_float(const char *cmd, const char *flag, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = s ? strtod(s, &end) : 0;
    if (!s || !*s || *end || errno)
        return cli_usage(cmd, "%s expects a number, got '%s'", flag, s ? s : "(nothing)");
    *out = v;
    return 0;
}

int cli_parse_ids(const char *cmd, const char *s, int32_t **out, int *n)
{
    int cap = 64, k = 0;
    int32_t *v = malloc((size_t)cap * sizeof *v);
    if (!v)
        return cli_usage(cmd, "out of memory");
    for (;;) {
        while (*s == ' ' || *s == ',' || *s == '\n' || *s == '\t' || *s == '\r')
            s++;
        if (!*s)
            break;
        char *end;
        errno = 0;
        long x = strtol(s, &end, 10);
        if (end == s || errno || x < 0 || x > INT32_MAX) {
            free(v);
            return cli_usage(cmd, "expected token ids (non-negative integers), found '%.20s'", s);
        }
        if (k == cap) {
            int32_t *w = realloc(v, (size_t)(cap *= 2) * sizeof *v);
            if (!w) {
                free(v);
                return cli_usage(cmd, "out of memory");
            }
            v = w;
        }
        v[k++] = (int32_t)x;
        s = end;
    }
    *out = v;
    *n = k;
    return 0;
}

const char *cli_default_model(void)
{
    static char path[PATH_MAX + 32];
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return "build/default.gguf";
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = 0;
    /* ./q36 sits at the project root; build/q36 inside build/. */
    snprintf(path, sizeof path, "%s/build/default.gguf", exe);
    if (access(path, R_OK) != 0)
        snprintf(path, sizeof path, "%s/default.gguf", exe);
    return path;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "q36: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return CLI_USAGE;
}
