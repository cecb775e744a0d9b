/* oracle.c: the oracle harness's entry point: the subcommand table, flag
 * parsing, llama.cpp log capture, model/context set-up with the harness's
 * settings, and the decode loop the evaluating subcommands share.
 *
 * The subcommands themselves live in oracle_text.c (tokenizer, parameter
 * count), oracle_eval.c (logits, greedy, decode_check, bench) and
 * oracle_f32.c (dequant and the model-free float file tools).
 */
#include "oracle.h"

#include <errno.h>
#include <limits.h>
#include <link.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggml-backend.h"

#ifndef Q36_ORACLE_LIB
#error "Q36_ORACLE_LIB (the folder of the pinned libggml-cpu-*.so) must be defined by the Makefile"
#endif

/* ---- flags ---------------------------------------------------------------- */

/* One bit per flag, so each subcommand can say which ones it takes. */
enum {
    F_M = 1 << 0, F_P = 1 << 1, F_F = 1 << 2, F_IDS = 1 << 3, F_IDSF = 1 << 4,
    F_O = 1 << 5, F_LOGITS = 1 << 6, F_TENSOR = 1 << 7, F_NOSPEC = 1 << 8,
    F_PIECES = 1 << 9, F_ALL = 1 << 10, F_KV = 1 << 11, F_FA = 1 << 12,
    F_T = 1 << 13, F_C = 1 << 14, F_B = 1 << 15, F_N = 1 << 16, F_D = 1 << 17,
    F_R = 1 << 18, F_SEED = 1 << 19, F_MTP = 1 << 20, F_POS = 1 << 21,
    F_UB = 1 << 22, F_GGML = 1 << 23, F_MARGINS = 1 << 24,
};
#define F_EVAL (F_M | F_KV | F_FA | F_T | F_C | F_B | F_UB | F_MTP)

typedef struct orc_cmd {
    const char *name;
    int (*fn)(const orc_opts *);
    unsigned flags;
    const char *usage;
} orc_cmd;

static const orc_cmd commands[] = {
    { "n_params", orc_cmd_n_params, F_M | F_MTP,
      "-m M                       parameter count, then n_vocab/n_embd/n_layer" },
    { "tokenize", orc_cmd_tokenize, F_M | F_P | F_F | F_NOSPEC,
      "-m M (-p TEXT | -f FILE) [--no-special]     ids on one line" },
    { "detokenize", orc_cmd_detokenize, F_M | F_IDS | F_IDSF | F_PIECES,
      "-m M (--ids \"1 2\" | --ids-file F) [--pieces]  raw bytes" },
    { "logits", orc_cmd_logits, F_EVAL | F_IDS | F_IDSF | F_O | F_ALL,
      "-m M (--ids .. | --ids-file F) -o OUT.f32 [--all]   float32 [pos][n_vocab]" },
    { "greedy", orc_cmd_greedy, F_EVAL | F_IDS | F_IDSF | F_P | F_N | F_LOGITS,
      "-m M (--ids .. | -p TEXT) -n N [--logits OUT.f32]   greedy ids" },
    { "decode_check", orc_cmd_decode_check, F_EVAL | F_IDS | F_IDSF,
      "-m M [--ids ..]            7-token prompt + 4 steps, all logits finite" },
    { "bench", orc_cmd_bench, F_EVAL | F_P | F_N | F_D | F_R | F_SEED,
      "-m M [-p 512] [-n 128] [-d 0] [-r 3] [--seed S]   JSON lines of tok/s" },
    { "perplexity", orc_cmd_perplexity, F_EVAL | F_F | F_N,
      "-m M -f FILE [-c 512] [-n CHUNKS]   llama-perplexity's method: [1]x,... Final estimate" },
    { "dequant", orc_cmd_dequant, F_M | F_TENSOR | F_O | F_GGML,
      "-m M --tensor NAME -o OUT.f32 [--ggml-load]   ggml's to_float of one tensor" },
    { "mtp", orc_cmd_mtp, F_EVAL | F_IDS | F_IDSF | F_O,
      "-m M (--ids .. | --ids-file F) -o OUT.f32   the MTP head's logits of every row, [pos][n_vocab]" },
    { "cpu", orc_cmd_cpu, 0,
      "                           the libggml-cpu variant llama.cpp loads here (haswell, zen4, ...)" },
    { "compare", orc_cmd_compare, F_POS | F_N,
      "A.f32 B.f32 -n ROWLEN      max |a-b|, worst row rel. L2, argmax mismatches" },
    { "argmax", orc_cmd_argmax, F_POS | F_N | F_MARGINS,
      "A.f32 -n ROWLEN [--margins]  argmax of each row (ties to the lower index)" },
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: oracle <command> [flags]   (llama.cpp reference answers for q36 tests)\n\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  oracle %-12s %s\n", commands[i].name, commands[i].usage);
    fprintf(f, "\nevaluating commands also take: [--kv f32|f16|q8_0] [--fa on|off|auto] [-t N]\n"
               "  [-c N] [-b N] [-ub N] [--mtp] [-v]; defaults f32 K/V, flash attention off,\n"
               "  2 threads, the whole prompt in one llama_decode (bench: llama.cpp's defaults).\n");
}

int orc_fail(const char *fmt, ...)
{
    va_list ap;
    fputs("oracle: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return ORC_ERROR;
}

int orc_usage(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "oracle %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see oracle --help)\n");
    return ORC_USAGE;
}

static int parse_int(const char *cmd, const char *flag, const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return orc_usage(cmd, "%s wants an integer in [%ld, %ld], got '%s'", flag, lo, hi, s);
    *out = (int)v;
    return 0;
}

static int parse_flags(const orc_cmd *c, int argc, char **argv, orc_opts *o)
{
    const char *cmd = c->name;
    int npos = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        unsigned bit = 0;
        const char **sval = NULL;
        int *ival = NULL;
        long lo = 0, hi = INT_MAX;
        bool *bval = NULL;

        if (!strcmp(a, "-v")) { o->verbose = true; continue; }
        if (a[0] != '-' || !a[1]) {
            if (!(c->flags & F_POS) || npos >= 2)
                return orc_usage(cmd, "unexpected argument '%s'", a);
            if (npos++ == 0) o->a_file = a; else o->b_file = a;
            continue;
        }
        if      (!strcmp(a, "-m"))           { bit = F_M;      sval = &o->model; }
        else if (!strcmp(a, "-p"))           { bit = F_P;      sval = &o->prompt; }
        else if (!strcmp(a, "-f"))           { bit = F_F;      sval = &o->file; }
        else if (!strcmp(a, "--ids"))        { bit = F_IDS;    sval = &o->ids; }
        else if (!strcmp(a, "--ids-file"))   { bit = F_IDSF;   sval = &o->ids_file; }
        else if (!strcmp(a, "-o"))           { bit = F_O;      sval = &o->out; }
        else if (!strcmp(a, "--logits"))     { bit = F_LOGITS; sval = &o->logits_out; }
        else if (!strcmp(a, "--tensor"))     { bit = F_TENSOR; sval = &o->tensor; }
        else if (!strcmp(a, "--no-special")) { bit = F_NOSPEC; bval = &o->no_special; }
        else if (!strcmp(a, "--pieces"))     { bit = F_PIECES; bval = &o->pieces; }
        else if (!strcmp(a, "--all"))        { bit = F_ALL;    bval = &o->all; }
        else if (!strcmp(a, "--mtp"))        { bit = F_MTP;    bval = &o->mtp; }
        else if (!strcmp(a, "--ggml-load"))  { bit = F_GGML;   bval = &o->ggml_load; }
        else if (!strcmp(a, "--margins"))    { bit = F_MARGINS; bval = &o->margins; }
        else if (!strcmp(a, "-t"))           { bit = F_T;      ival = &o->threads; lo = 1; hi = 512; }
        else if (!strcmp(a, "-c"))           { bit = F_C;      ival = &o->n_ctx; lo = 1; }
        else if (!strcmp(a, "-b"))           { bit = F_B;      ival = &o->n_batch; lo = 1; }
        else if (!strcmp(a, "-ub"))          { bit = F_UB;     ival = &o->n_ubatch; lo = 1; }
        else if (!strcmp(a, "-n"))           { bit = F_N;      ival = &o->n; lo = 0; o->n_set = true; }
        else if (!strcmp(a, "-d"))           { bit = F_D;      ival = &o->depth; lo = 0; }
        else if (!strcmp(a, "-r"))           { bit = F_R;      ival = &o->reps; lo = 1; hi = 1000; }
        else if (!strcmp(a, "--seed") || !strcmp(a, "--kv") || !strcmp(a, "--fa"))
            bit = !strcmp(a, "--seed") ? F_SEED : !strcmp(a, "--kv") ? F_KV : F_FA;
        else
            return orc_usage(cmd, "unknown flag '%s'", a);

        if (!(c->flags & bit))
            return orc_usage(cmd, "flag '%s' does not apply to %s", a, cmd);
        if (bval) { *bval = true; continue; }
        if (i + 1 >= argc)
            return orc_usage(cmd, "flag '%s' needs a value", a);
        const char *v = argv[++i];
        if (sval) { *sval = v; continue; }
        if (ival) {
            if (parse_int(cmd, a, v, lo, hi, ival)) return ORC_USAGE;
            continue;
        }
        if (bit == F_SEED) {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(v, &end, 10);
            if (errno || end == v || *end)
                return orc_usage(cmd, "--seed wants an unsigned integer, got '%s'", v);
            o->seed = s;
        } else if (bit == F_KV) {
            if      (!strcmp(v, "f32"))  o->kv = GGML_TYPE_F32;
            else if (!strcmp(v, "f16"))  o->kv = GGML_TYPE_F16;
            else if (!strcmp(v, "q8_0")) o->kv = GGML_TYPE_Q8_0;
            else return orc_usage(cmd, "--kv wants f32, f16 or q8_0, got '%s'", v);
            o->kv_set = true;
        } else {
            if      (!strcmp(v, "on"))   o->fa = LLAMA_FLASH_ATTN_TYPE_ENABLED;
            else if (!strcmp(v, "off"))  o->fa = LLAMA_FLASH_ATTN_TYPE_DISABLED;
            else if (!strcmp(v, "auto")) o->fa = LLAMA_FLASH_ATTN_TYPE_AUTO;
            else return orc_usage(cmd, "--fa wants on, off or auto, got '%s'", v);
            o->fa_set = true;
        }
    }
    if ((c->flags & F_M) && !o->model)
        return orc_usage(cmd, "-m MODEL is required");
    return 0;
}

/* ---- llama.cpp log capture ------------------------------------------------ */

/* The last few complete log lines and their levels, kept so a failure can
 * say why. A line continued with GGML_LOG_LEVEL_CONT keeps its first level. */
#define LOG_LINES 16
#define LOG_WIDTH 400
static char log_ring[LOG_LINES][LOG_WIDTH];
static enum ggml_log_level log_level[LOG_LINES];
static int log_next, log_count;
static char log_line[LOG_WIDTH];
static size_t log_len;
static enum ggml_log_level log_cur = GGML_LOG_LEVEL_INFO;
static bool log_echo;

static void log_push(void)
{
    while (log_len && (log_line[log_len - 1] == '\r' || log_line[log_len - 1] == ' '))
        log_len--;
    log_line[log_len] = 0;
    if (log_len) {
        memcpy(log_ring[log_next], log_line, log_len + 1);
        log_level[log_next] = log_cur;
        log_next = (log_next + 1) % LOG_LINES;
        if (log_count < LOG_LINES) log_count++;
    }
    log_len = 0;
}

static void log_cb(enum ggml_log_level level, const char *text, void *user)
{
    (void)user;
    if (log_echo) fputs(text, stderr);
    if (level != GGML_LOG_LEVEL_CONT && log_len == 0) log_cur = level;
    for (const char *p = text; *p; p++) {
        if (*p == '\n') { log_push(); continue; }
        if (log_len + 1 < LOG_WIDTH) log_line[log_len++] = *p;
    }
}

/* The last (up to 3) warning/error lines, or the last 2 lines when there
 * are none, joined with " | ". */
const char *orc_last_log(void)
{
    static char out[3 * (LOG_WIDTH + 3) + 32];
    int pick[3], np = 0;
    if (log_len) log_push();
    for (int want_warn = 1; want_warn >= 0 && np == 0; want_warn--)
        for (int i = log_count - 1; i >= 0 && np < (want_warn ? 3 : 2); i--) {
            int k = (log_next - log_count + i + LOG_LINES) % LOG_LINES;
            if (!want_warn || log_level[k] == GGML_LOG_LEVEL_WARN || log_level[k] == GGML_LOG_LEVEL_ERROR)
                pick[np++] = k;
        }
    size_t n = 0;
    out[0] = 0;
    for (int i = np - 1; i >= 0; i--)
        n += (size_t)snprintf(out + n, sizeof out - n, "%s%s", n ? " | " : "", log_ring[pick[i]]);
    if (!n) snprintf(out, sizeof out, "(llama.cpp logged nothing)");
    return out;
}

/* A GGML_ASSERT in llama.cpp ends in abort(): say which command died and
 * what llama.cpp logged last, then let the signal end the process (exit
 * status 134). Not async-signal-safe in general; the process is dying. */
static const char *abort_what = "";
static void on_abort(int sig)
{
    const char *l = orc_last_log();
    const char *parts[] = { "oracle: llama.cpp aborted during ", abort_what, "; its last log lines: ", l, "\n" };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (write(2, parts[i], strlen(parts[i])) < 0) break;
    signal(sig, SIG_DFL);
    raise(sig);
}

/* The folder the CPU backends load from: $Q36_ORACLE_LIB when set (make
 * check-avx2 points it at a folder whose only CPU variant is haswell), else
 * the pinned package's, compiled in. */
static const char *orc_lib_dir(void)
{
    const char *d = getenv("Q36_ORACLE_LIB");
    return d && *d ? d : Q36_ORACLE_LIB;
}

int orc_init(bool verbose)
{
    log_echo = verbose;
    /* ggml prints a gdb backtrace on abort when gdb is installed: slow and
     * long; -v keeps it. */
    if (!verbose) setenv("GGML_NO_BACKTRACE", "1", 0);
    signal(SIGABRT, on_abort);
    llama_log_set(log_cb, NULL);
    ggml_backend_load_all_from_path(orc_lib_dir());
    llama_backend_init();
    if (ggml_backend_dev_count() == 0)
        return orc_fail("no ggml backend could be loaded from %s: %s", orc_lib_dir(), orc_last_log());
    return 0;
}

/* dl_iterate_phdr callback: the <variant> of a mapped libggml-cpu-<variant>.so */
static int find_cpu_lib(struct dl_phdr_info *info, size_t size, void *out)
{
    (void)size;
    const char *base = strrchr(info->dlpi_name, '/');
    base = base ? base + 1 : info->dlpi_name;
    const size_t n = strlen(base);
    if (strncmp(base, "libggml-cpu-", 12) != 0 || n < 16 || strcmp(base + n - 3, ".so") != 0)
        return 0;
    snprintf(out, 64, "%.*s", (int)(n - 15), base + 12);
    return 1;
}

int orc_cmd_cpu(const orc_opts *o)
{
    char variant[64] = "";
    if (orc_init(o->verbose)) return ORC_ERROR;
    dl_iterate_phdr(find_cpu_lib, variant);
    if (!variant[0])
        return orc_fail("no libggml-cpu-<variant>.so from %s is mapped", orc_lib_dir());
    printf("%s\n", variant);
    return ORC_OK;
}

/* ---- model and context ---------------------------------------------------- */

struct llama_model *orc_load(const orc_opts *o, enum orc_load_what what)
{
    FILE *f = fopen(o->model, "rb");
    if (!f) {
        orc_fail("%s: cannot open: %s", o->model, strerror(errno));
        return NULL;
    }
    fclose(f);
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.vocab_only = what == ORC_LOAD_VOCAB;
    /* Q36_ORACLE_NO_EXTRA_BUFTS=1: no repacked or AMX weight buffers, to tell
     * their summation orders from the plain CPU kernels' (diagnostic only). */
    const char *nx = getenv("Q36_ORACLE_NO_EXTRA_BUFTS");
    mp.use_extra_bufts = what == ORC_LOAD_FULL && !(nx && strcmp(nx, "1") == 0);
    mp.load_mtp = o->mtp;
    struct llama_model *m = llama_model_load_from_file(o->model, mp);
    if (!m)
        orc_fail("%s: llama.cpp cannot load it: %s", o->model, orc_last_log());
    return m;
}

struct llama_context *orc_context(struct llama_model *m, const orc_opts *o,
                                  int n_ctx, int n_batch, int n_ubatch)
{
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_batch = (uint32_t)n_batch;
    cp.n_ubatch = (uint32_t)n_ubatch;
    cp.n_seq_max = 1;
    cp.n_threads = o->threads;
    cp.n_threads_batch = o->threads;
    cp.type_k = o->kv;
    cp.type_v = o->kv;
    cp.flash_attn_type = o->fa;
    cp.no_perf = true;
    struct llama_context *ctx = llama_init_from_model(m, cp);
    if (!ctx)
        orc_fail("%s: llama.cpp cannot make a context (n_ctx %d, n_batch %d, n_ubatch %d, K/V %s, "
                 "flash attention %s): %s", o->model, n_ctx, n_batch, n_ubatch, ggml_type_name(o->kv),
                 llama_flash_attn_type_name(o->fa), orc_last_log());
    return ctx;
}

int orc_decode(struct llama_context *ctx, const llama_token *ids, int n, int pos0,
               int n_batch, bool all, float *rows, int n_vocab)
{
    if (n_batch < 1) n_batch = n;
    struct llama_batch b = llama_batch_init(n_batch < n ? n_batch : n, 0, 1);
    for (int s = 0; s < n; s += n_batch) {
        int e = s + n_batch < n ? s + n_batch : n;
        b.n_tokens = e - s;
        for (int i = s; i < e; i++) {
            int j = i - s;
            b.token[j] = ids[i];
            b.pos[j] = pos0 + i;
            b.n_seq_id[j] = 1;
            b.seq_id[j][0] = 0;
            b.logits[j] = rows && (all || i == n - 1);
        }
        int rc = llama_decode(ctx, b);
        if (rc) {
            llama_batch_free(b);
            orc_fail("llama_decode of tokens %d..%d (positions %d..%d) returned %d%s: %s", s, e - 1,
                     pos0 + s, pos0 + e - 1, rc,
                     rc == 1 ? " (no room in the context)" : rc == 2 ? " (aborted)" : "",
                     orc_last_log());
            return -1;
        }
        if (!rows) continue;
        for (int i = s; i < e; i++) {
            if (!all && i != n - 1) continue;
            const float *l = llama_get_logits_ith(ctx, i - s);
            if (!l) {
                llama_batch_free(b);
                orc_fail("llama_get_logits_ith(%d) gave no logits: %s", i - s, orc_last_log());
                return -1;
            }
            memcpy(rows + (size_t)(all ? i : 0) * (size_t)n_vocab, l, sizeof(float) * (size_t)n_vocab);
        }
    }
    llama_batch_free(b);
    return 0;
}

/* ---- small helpers -------------------------------------------------------- */

char *orc_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        orc_fail("%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (!buf) { fclose(f); orc_fail("%s: out of memory", path); return NULL; }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        cap *= 2;
        char *nb = realloc(buf, cap + 1);
        if (!nb) free(buf);
        buf = nb;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        orc_fail("%s: read error", path);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

int orc_write_f32(const char *path, const float *v, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        orc_fail("%s: cannot create: %s", path, strerror(errno));
        return -1;
    }
    size_t w = fwrite(v, sizeof(float), n, f);
    if (fclose(f) || w != n) {
        orc_fail("%s: write error after %zu of %zu floats", path, w, n);
        return -1;
    }
    return 0;
}

int orc_read_ids(const orc_opts *o, int n_vocab, llama_token **out)
{
    const char *src = o->ids;
    char *owned = NULL;
    const char *what = "--ids";
    if (o->ids && o->ids_file) {
        orc_usage(o->cmd, "give --ids or --ids-file, not both");
        return -1;
    }
    if (o->ids_file) {
        size_t len;
        owned = orc_read_file(o->ids_file, &len);
        if (!owned) return -1;
        src = owned;
        what = o->ids_file;
    }
    if (!src) {
        orc_usage(o->cmd, "--ids or --ids-file is required");
        return -1;
    }
    size_t cap = 64;
    int n = 0;
    llama_token *ids = malloc(cap * sizeof *ids);
    const char *p = src;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ',') p++;
        if (!*p) break;
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > INT32_MAX || (n_vocab > 0 && v >= n_vocab)) {
            int w = (int)strcspn(p, " \t\r\n,");
            orc_fail("%s: token %d is '%.*s'; expected an id in [0, %d)", what, n, w > 40 ? 40 : w, p,
                     n_vocab > 0 ? n_vocab : INT32_MAX);
            free(ids); free(owned);
            return -1;
        }
        if ((size_t)n == cap) {
            cap *= 2;
            llama_token *ni = realloc(ids, cap * sizeof *ids);
            if (!ni) { free(ids); free(owned); orc_fail("out of memory"); return -1; }
            ids = ni;
        }
        ids[n++] = (llama_token)v;
        p = end;
    }
    free(owned);
    if (n == 0) {
        free(ids);
        orc_fail("%s: no token ids", what);
        return -1;
    }
    *out = ids;
    return n;
}

int orc_argmax(const float *v, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return best;
}

long orc_first_nonfinite(const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return (long)i;
    return -1;
}

/* ---- main ----------------------------------------------------------------- */

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? ORC_USAGE : ORC_OK;
    }
    const orc_cmd *c = NULL;
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(argv[1], commands[i].name)) c = &commands[i];
    if (!c) {
        fprintf(stderr, "oracle: unknown command '%s'\n", argv[1]);
        usage(stderr);
        return ORC_USAGE;
    }
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: oracle %s %s\n", c->name, c->usage);
            return ORC_OK;
        }
    orc_opts o = {
        .cmd = c->name, .kv = GGML_TYPE_F32, .fa = LLAMA_FLASH_ATTN_TYPE_DISABLED,
        .threads = 2, .reps = 3, .seed = 1,
    };
    int rc = parse_flags(c, argc, argv, &o);
    if (rc) return rc;
    abort_what = c->name;
    if ((c->flags & F_M) && orc_init(o.verbose)) return ORC_ERROR;
    return c->fn(&o);
}
