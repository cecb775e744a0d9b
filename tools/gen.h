/* gen.h: what `q36 run` and `q36 chat` share: the flags that configure
 * evaluation and sampling, opening model + tokenizer + session + sampler,
 * prefill, and the generation loop that streams text (or ids) as it goes.
 *
 * Timing and progress go to stderr; generated text to stdout. Ctrl-C sets a
 * flag the loop checks between tokens, so it stops a generation, not the
 * program (gen_on_sigint). */
#ifndef Q36_GEN_H
#define Q36_GEN_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "../src/include/q36.h"
#include "../src/model/model.h"
#include "../src/sampler/sampler.h"
#include "../src/tokenizer/tok.h"

typedef struct gen_opts {
    const char *model;
    int         n_ctx;           /* 0: the model's training context, capped at 4096 */
    int         n_predict;       /* -1: until end of generation or context */
    bool        print_ids;
    q36_session_opts sess;
    smp_params  smp;
} gen_opts;

typedef struct gen_ctx {
    q36_model   *model;
    tok_vocab   *tok;
    q36_session *sess;
    smp         *smp;
    float       *logits;         /* n_vocab: the row the next token is drawn from */
    int32_t      n_vocab;
} gen_ctx;

typedef struct gen_stats {
    int    n_prompt, n_gen;
    double t_prompt, t_gen;      /* seconds */
    bool   stopped_eog, stopped_user, stopped_ctx;
} gen_stats;

extern volatile sig_atomic_t gen_interrupted;

void gen_opts_default(gen_opts *o);
/* Consumes argv[*i] (and its value) when it is a common flag: -m -c -t -b
 * -n -ctk -ctv --temp --top-k --top-p --min-p --repeat-penalty
 * --presence-penalty --frequency-penalty --repeat-last-n --seed --print-ids.
 * Returns 1 when consumed, 0 when not a common flag, or CLI_USAGE+100 after
 * printing a usage error. */
int  gen_flag(const char *cmd, int argc, char **argv, int *i, gen_opts *o);
/* The common flags' help lines. */
extern const char gen_flags_help[];

/* Opens everything; prints the memory plan on stderr. */
int  gen_open(const gen_opts *o, gen_ctx *g, q36_err *err);
void gen_close(gen_ctx *g);

/* Installs the SIGINT handler that sets gen_interrupted (no SA_RESTART, so a
 * blocking read returns EINTR). */
void gen_on_sigint(void);

/* Evaluates ids and leaves the last row in g->logits. */
int  gen_prefill(gen_ctx *g, const int32_t *ids, int n, gen_stats *st, q36_err *err);
/* Samples, streams and decodes up to n_predict tokens (-1: until the end of
 * generation or of the context). The end-of-generation token is evaluated
 * too, so the session holds the whole reply. When `out` is not NULL the
 * reply's bytes (special tokens included) are appended to *out (malloc'd). */
int  gen_generate(gen_ctx *g, const gen_opts *o, gen_stats *st, char **out, size_t *out_len,
                  q36_err *err);
void gen_report(const gen_stats *st);

#endif
