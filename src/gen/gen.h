/* gen.h: one reply being generated, token by token: sampling, the stop
 * conditions (end-of-generation token, stop strings, a token budget),
 * detokenization that releases only complete UTF-8 and never the start of a
 * stop string, and log-probabilities of the raw distribution.
 *
 * A gen owns no model and no session: the caller evaluates, hands gen_next
 * the row of logits, and evaluates the token it gets back. That split lets
 * `q36 run` / `q36 chat` drive one session (gen_run below) and the server's
 * engine thread drive many slots whose decode steps it batches.
 *
 * Ownership and threads: a gen belongs to one sequence and is used by one
 * thread at a time; it holds a view of the tok_vocab (which must outlive it)
 * and copies the stop strings. No allocation after gen_new.
 *
 * Example:
 *     gen_params p = gen_params_default();
 *     p.n_predict = 32;
 *     if (gen_new(&p, vocab, n_vocab, &g, &err)) return err.kind;
 *     do {
 *         if (gen_next(g, logits, &t, &err)) break;
 *         fwrite(t.text, 1, t.len, stdout);
 *         if (q36_session_decode(s, t.id, logits, &err)) break;
 *     } while (!t.stop);
 *     gen_free(g);
 */
#ifndef Q36_GEN_H
#define Q36_GEN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../include/q36.h"
#include "../sampler/sampler.h"
#include "../tokenizer/tok.h"

#define GEN_MAX_STOP  16      /* stop strings per reply */
#define GEN_MAX_STOP_LEN 256  /* bytes per stop string */
#define GEN_MAX_PROBS 20      /* alternatives per token (OpenAI's top_logprobs limit) */

typedef struct gen_params {
    smp_params   smp;
    int          n_predict;   /* tokens at most; -1: until end of generation (default) */
    const char  *stop[GEN_MAX_STOP]; /* stop strings (views, copied by gen_new) */
    int          n_stop;
    bool         special;     /* decode special tokens other than the end of generation
                                 (<think>, <tool_call>, ...) as their text; false: as
                                 llama.cpp prints them without --special */
    int          n_probs;     /* -1: no log-probabilities (default); 0..GEN_MAX_PROBS:
                                 the chosen token's and that many alternatives */
    bool         ignore_eos;  /* end-of-generation tokens are never sampled (their logits
                                 count as -inf; log-probabilities stay the raw ones), so
                                 the reply runs to n_predict or a stop string:
                                 llama.cpp's ignore_eos */
    bool         device_greedy; /* gen_run, when gen_greedy: each step's greedy choice made
                                   on the device (q36_session_decode_argmax), one id back
                                   instead of the logits, which gen_run then leaves as the
                                   prompt's; false (default): the logits of the last step */
    bool         device_top;  /* gen_run, when sampled and gen_top_need allows: each step
                                 reads its row's k best logits (q36_session_decode_topk)
                                 instead of the row, and samples from them (gen_next_top:
                                 the same token); false (default): whole rows */
} gen_params;

/* Why a reply ended. */
enum gen_stop {
    GEN_GOING = 0,
    GEN_STOP_EOG,      /* the model wrote an end-of-generation token */
    GEN_STOP_WORD,     /* a stop string appeared (it and what follows are not released) */
    GEN_STOP_LENGTH,   /* n_predict tokens were generated */
    GEN_STOP_CTX,      /* the caller's context is full (gen_run) */
    GEN_STOP_USER,     /* the caller stopped it (gen_run: the interrupt flag) */
};

typedef struct gen_prob {
    int32_t id;
    float   logprob;        /* natural log of the softmax of the raw logits */
} gen_prob;

/* What one gen_next call produced. Views into the gen, valid until the next
 * call on it. */
typedef struct gen_token {
    int32_t        id;
    bool           eog;
    const char    *text;    /* bytes released now: complete UTF-8 (except a broken
                               sequence at the very end of the reply), never a
                               possible start of a stop string; on a stop, all that
                               was held back before it */
    size_t         len;
    enum gen_stop  stop;    /* GEN_GOING, or why the reply ends with this token */
    int            stop_word; /* GEN_STOP_WORD: index into params.stop; else -1 */
    float          logprob;   /* n_probs >= 0: the chosen token's */
    int            n_top;
    const gen_prob *top;      /* n_top best ids of the raw distribution, best first */
} gen_token;

typedef struct gen gen;

gen_params gen_params_default(void);

/* Validates p (smp_new's checks; n_predict >= -1; stop strings non-empty and
 * at most GEN_MAX_STOP_LEN bytes; n_probs <= GEN_MAX_PROBS) and allocates.
 * Returns 0, or Q36_E_ARG naming the field, or Q36_E_NOMEM; *out NULL then. */
int  gen_new(const gen_params *p, const tok_vocab *v, int32_t n_vocab, gen **out, q36_err *err);
void gen_free(gen *g);                        /* accepts NULL */

/* Samples the next token from logits[0..n_vocab), records it and applies the
 * stop conditions. After a token with stop != GEN_GOING the reply is over:
 * further calls return Q36_E_ARG. */
int  gen_next(gen *g, const float *logits, gen_token *out, q36_err *err);
/* True when the sampler's choice is the row's largest logit alone (temp <=
 * 0, no penalties, no masked ids, no log-probabilities): a token chosen so
 * elsewhere (on the device: q36_session_decode_argmax) may then be given
 * to gen_next_id, which records it as gen_next would have (Q36_E_ARG when
 * gen_greedy is false). */
bool gen_greedy(const gen *g);
bool gen_device_greedy(const gen *g);     /* p.device_greedy */
bool gen_device_top(const gen *g);        /* p.device_top */
/* gen_greedy, or the same with ignore_eos's ids masked: the choice is the
 * largest logit among the ids that *ban receives (n returned; 0 when
 * nothing is masked), which an argmax that skips them makes
 * (q36_engine_argmax_ban). -1 when the choice needs the logits. */
int  gen_greedy_ban(const gen *g, const int32_t **ban);
/* Records a token chosen outside as gen_next would have chosen it: needs
 * gen_greedy_ban >= 0, and no masked id (Q36_E_ARG otherwise). */
int  gen_next_id(gen *g, int32_t id, gen_token *out, q36_err *err);
/* How many of a row's best logits gen_next_top needs to choose as gen_next
 * would from the whole row: the sampler's (smp_top_need: top_k on, no
 * penalties) plus the masked ids (ignore_eos: some of the best may be
 * them), when no log-probabilities are asked for; 0 when the row is
 * needed or more than max would be. */
int  gen_top_need(const gen *g, int max);
/* gen_next from a row's k best (ids and logits, any order; id -1: none),
 * k >= gen_top_need: the same token, the same random stream (Q36_E_ARG
 * when k is short of it). */
int  gen_next_top(gen *g, const int32_t *ids, const float *vals, int k, gen_token *out,
                  q36_err *err);

/* Ends the reply from outside (context full, a client gone): *text receives
 * whatever was held back; returns its length. */
size_t gen_finish(gen *g, const char **text);

/* Begins another reply with the same sampler: its penalty window and random
 * stream go on (the turns of q36 chat); the stop state and counts restart. */
void gen_restart(gen *g);

/* True once the reply has ended (from the start when n_predict is 0). */
bool     gen_over(const gen *g);
int      gen_n_generated(const gen *g);
uint32_t gen_seed(const gen *g);

/* ---- the loop of one session: q36 run and q36 chat ---------------------------------- */

/* Called for every token (t->id >= 0) and, when the loop ends from outside
 * (context full, interrupt), once more with t->id == -1 and the held-back
 * text. A non-zero return stops the loop with that status. */
typedef int (*gen_emit_fn)(void *user, const gen_token *t);

typedef struct gen_result {
    int           n_gen;
    double        t_gen;      /* seconds */
    enum gen_stop stop;
} gen_result;

/* Generates into session s from the row in logits (n_vocab floats, the
 * session's last row) until a stop condition, a full context or *interrupt
 * (may be NULL). Every sampled token is evaluated too, the end of
 * generation included, so the session holds the whole reply and logits the
 * row after it. Returns 0, the emit callback's status, or the session's
 * error. */
int gen_run(gen *g, q36_session *s, float *logits, const volatile sig_atomic_t *interrupt,
            gen_emit_fn emit, void *user, gen_result *res, q36_err *err);

#endif
