/* cli_gen.h: what `q36 run` and `q36 chat` share on the command line: the
 * flags that configure evaluation and sampling, and opening model +
 * tokenizer + session (the generation loop itself is src/gen/gen.h).
 *
 * Timing and progress go to stderr; generated text to stdout. Ctrl-C sets a
 * flag the loop checks between tokens, so it stops a generation, not the
 * program (cli_gen_on_sigint). */
#ifndef Q36_CLI_GEN_H
#define Q36_CLI_GEN_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "../src/gen/gen.h"
#include "../src/spec/spec.h"
#include "../src/include/q36.h"
#include "../src/sampler/sampler.h"
#include "../src/tokenizer/tok.h"

typedef struct cli_gen_opts {
    const char *model;
    int         n_ctx;           /* 0: the model's training context, capped at 4096 */
    bool        print_ids;
    q36_session_opts sess;
    gen_params  gen;             /* sampling and n_predict */
    bool        spec_mtp;        /* --spec-type draft-mtp */
    int         draft_max;       /* --draft-max (default 3) */
    int         draft_vocab;     /* --draft-vocab N: the MTP head on N ids (0: all; default
                                  * Q36_DRAFT_VOCAB_AUTO) */
    float       draft_p_min;     /* --draft-p-min P (0: always --draft-max drafts) */
    bool        draft_rewind;    /* --draft-rollback states (default) | replay */
} cli_gen_opts;

typedef struct cli_gen {
    q36_model   *model;
    tok_vocab   *tok;
    q36_session *sess;
    gen         *gen;            /* sampler and stop state, restarted per reply */
    float       *logits;         /* n_vocab: the row the next token is drawn from */
    int32_t      n_vocab;
    spec        *spec;           /* --spec-type draft-mtp: drafts from the MTP block */
} cli_gen;

typedef struct cli_gen_stats {
    int    n_prompt, n_gen;
    double t_prompt, t_gen;      /* seconds */
    enum gen_stop stop;
} cli_gen_stats;

extern volatile sig_atomic_t cli_gen_interrupted;

void cli_gen_opts_default(cli_gen_opts *o);

/* What cli_gen_flag did with argv[*i]. */
enum cli_flag {
    CLI_FLAG_OTHER = 0,  /* not a common flag: the command's own, or unknown */
    CLI_FLAG_TAKEN,      /* consumed (with its value: *i advanced) */
    CLI_FLAG_BAD,        /* a common flag with a bad value; the usage line is printed */
};
/* Common flags: -m -c -t -b -n -ctk -ctv --temp --top-k --top-p --min-p
 * --repeat-penalty --presence-penalty --frequency-penalty --repeat-last-n
 * --seed --print-ids --spec-type --draft-max. */
enum cli_flag cli_gen_flag(const char *cmd, int argc, char **argv, int *i, cli_gen_opts *o);
/* The common flags' help lines. */
extern const char cli_gen_flags_help[];

/* Opens everything; prints the memory plan on stderr. */
int  cli_gen_open(const cli_gen_opts *o, cli_gen *g, q36_err *err);
void cli_gen_close(cli_gen *g);

/* Installs the SIGINT handler that sets cli_gen_interrupted (no SA_RESTART,
 * so a blocking read returns EINTR). */
void cli_gen_on_sigint(void);

/* Evaluates ids and leaves the last row in g->logits. */
int  cli_gen_prefill(cli_gen *g, const int32_t *ids, int n, cli_gen_stats *st, q36_err *err);
/* Generates with o->gen from g->logits (gen_run), streaming text (or ids
 * with --print-ids) to stdout. When `out` is not NULL the reply's bytes
 * (special tokens included) are appended to *out (malloc'd). */
int  cli_gen_generate(cli_gen *g, const cli_gen_opts *o, cli_gen_stats *st, char **out,
                      size_t *out_len, q36_err *err);
void cli_gen_report(const cli_gen_stats *st);
/* --spec-type draft-mtp: acceptance per draft position, tokens per verify
 * pass, where the time went (stderr). */
void cli_gen_report_spec(const spec *s);

#endif
