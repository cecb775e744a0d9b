/* gen.c: one reply being generated (gen.h): the sampler, the stop
 * conditions, the text released per token, log-probabilities. It touches
 * no session (gen_run.c does), so a server or a fuzz target links it alone.
 *
 * Released text passes two holds. The UTF-8 hold (tok_stream) keeps a lead
 * byte whose sequence is not complete. The stop hold keeps the longest tail
 * of the text that is a prefix of some stop string: once a stop string
 * appears, the text before it is released and the rest never is; when the
 * reply ends otherwise, the hold is released whole. The hold is at most
 * GEN_MAX_STOP_LEN - 1 bytes plus one token's piece.
 */
#include "gen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { GEN_MAX_TOP = 256 };      /* gen_next_top's candidates at most */

struct gen {
    gen_params       p;
    const tok_vocab *tok;
    int32_t          n_vocab;
    smp             *smp;
    tok_stream       utf8;
    char             stop[GEN_MAX_STOP][GEN_MAX_STOP_LEN + 1];
    size_t           stop_len[GEN_MAX_STOP], stop_max;
    char            *hold;       /* text not released yet (stop hold) */
    size_t           n_hold;
    char            *out;        /* what gen_next / gen_finish return */
    size_t           cap;        /* of hold and out: stop_max + max piece + 8 */
    int              n_gen;
    bool             done;
    gen_prob         top[GEN_MAX_PROBS];
    int32_t         *eog;        /* ignore_eos: the end-of-generation ids, n_eog of them */
    int32_t          n_eog;
    float           *masked;     /* ignore_eos: the row sampled, those ids at -inf */
};

gen_params gen_params_default(void)
{
    gen_params p;
    memset(&p, 0, sizeof p);
    p.smp = smp_defaults();
    p.n_predict = -1;
    p.n_probs = -1;
    return p;
}

static int cmp_id(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* ignore_eos: the ids tok_is_eog names inside the vocabulary, ascending
 * (from the vocabulary's short list, whose ids are distinct: a scan of
 * every id cost a server ~1 ms a request), and the row they are masked in */
static int eog_list(gen *g, q36_err *err)
{
    int32_t n_all = 0;
    const int32_t *all = tok_eog_ids(g->tok, &n_all);
    g->eog = malloc(((size_t)n_all + 1) * sizeof *g->eog);
    g->masked = malloc((size_t)g->n_vocab * sizeof *g->masked);
    if (!g->eog || !g->masked)
        return q36_err_set(err, Q36_E_NOMEM, "out of memory for a generator's masked row");
    for (int32_t i = 0; i < n_all; i++)
        if (all[i] >= 0 && all[i] < g->n_vocab)
            g->eog[g->n_eog++] = all[i];
    qsort(g->eog, (size_t)g->n_eog, sizeof *g->eog, cmp_id);
    return 0;
}

int gen_new(const gen_params *p, const tok_vocab *v, int32_t n_vocab, gen **out, q36_err *err)
{
    *out = NULL;
    if (p->n_predict < -1)
        return q36_err_set(err, Q36_E_ARG, "n_predict must be -1 (no limit) or >= 0, got %d", p->n_predict);
    if (p->n_stop < 0 || p->n_stop > GEN_MAX_STOP)
        return q36_err_set(err, Q36_E_ARG, "stop: at most %d strings, got %d", GEN_MAX_STOP, p->n_stop);
    if (p->n_probs < -1 || p->n_probs > GEN_MAX_PROBS)
        return q36_err_set(err, Q36_E_ARG, "top_logprobs must be in [0, %d], got %d", GEN_MAX_PROBS, p->n_probs);
    for (int i = 0; i < p->n_stop; i++) {
        size_t n = p->stop[i] ? strlen(p->stop[i]) : 0;
        if (n == 0 || n > GEN_MAX_STOP_LEN)
            return q36_err_set(err, Q36_E_ARG, "stop[%d]: expected 1 to %d bytes, got %zu", i,
                               GEN_MAX_STOP_LEN, n);
    }
    gen *g = calloc(1, sizeof *g);
    if (!g)
        return q36_err_set(err, Q36_E_NOMEM, "out of memory for a generator");
    g->p = *p;
    g->tok = v;
    g->n_vocab = n_vocab;
    for (int i = 0; i < p->n_stop; i++) {
        g->stop_len[i] = strlen(p->stop[i]);
        memcpy(g->stop[i], p->stop[i], g->stop_len[i] + 1);
        g->p.stop[i] = g->stop[i];
        if (g->stop_len[i] > g->stop_max)
            g->stop_max = g->stop_len[i];
    }
    g->cap = g->stop_max + tok_max_piece(v) + 8;
    int rc = smp_new(&p->smp, n_vocab, &g->smp, err);
    if (!rc && (!(g->hold = malloc(g->cap)) || !(g->out = malloc(g->cap))))
        rc = q36_err_set(err, Q36_E_NOMEM, "out of memory for a generator");
    if (!rc && p->ignore_eos)
        rc = eog_list(g, err);
    if (rc) {
        gen_free(g);
        return rc;
    }
    tok_stream_init(&g->utf8);
    g->done = p->n_predict == 0;
    *out = g;
    return 0;
}

void gen_free(gen *g)
{
    if (!g)
        return;
    smp_free(g->smp);
    free(g->eog);
    free(g->masked);
    free(g->hold);
    free(g->out);
    free(g);
}

void gen_restart(gen *g)
{
    g->n_hold = 0;
    g->n_gen = 0;
    g->done = g->p.n_predict == 0;
    tok_stream_init(&g->utf8);
}

bool gen_over(const gen *g) { return g->done; }

int gen_n_generated(const gen *g) { return g->n_gen; }
uint32_t gen_seed(const gen *g) { return smp_seed(g->smp); }

/* log-softmax of the raw row: the chosen id's value and the n best. */
static void logprobs(gen *g, const float *logits, int32_t id, gen_token *t)
{
    int n = g->p.n_probs, k = 0;
    float mx = -INFINITY;
    for (int32_t i = 0; i < g->n_vocab; i++)
        if (logits[i] > mx)
            mx = logits[i];
    double sum = 0;
    for (int32_t i = 0; i < g->n_vocab; i++)
        sum += exp((double)logits[i] - mx);
    float lse = mx + (float)log(sum);
    for (int32_t i = 0; i < g->n_vocab && n > 0; i++) {
        float l = logits[i];
        if (k == n && l <= g->top[k - 1].logprob)
            continue;
        int j = k < n ? k++ : k - 1;          /* insertion into the sorted top */
        while (j > 0 && g->top[j - 1].logprob < l) {
            g->top[j] = g->top[j - 1];
            j--;
        }
        g->top[j] = (gen_prob){ i, l };
    }
    for (int i = 0; i < k; i++)
        g->top[i].logprob -= lse;
    t->logprob = logits[id] - lse;
    t->n_top = k;
    t->top = g->top;
}

/* Moves the hold's first n bytes to out. */
static void release(gen *g, size_t n, size_t *out_len)
{
    memcpy(g->out + *out_len, g->hold, n);
    *out_len += n;
    memmove(g->hold, g->hold + n, g->n_hold - n);
    g->n_hold -= n;
}

/* Applies the stop strings to the hold; returns the index matched or -1. */
static int stop_hold(gen *g, size_t *out_len)
{
    size_t best = (size_t)-1;
    int which = -1;
    for (int i = 0; i < g->p.n_stop; i++) {
        const char *m = g->n_hold >= g->stop_len[i] ?
            memmem(g->hold, g->n_hold, g->stop[i], g->stop_len[i]) : NULL;
        if (m && (size_t)(m - g->hold) < best) {
            best = (size_t)(m - g->hold);
            which = i;
        }
    }
    if (which >= 0) {
        release(g, best, out_len);
        g->n_hold = 0;
        return which;
    }
    /* Keep the longest tail that starts some stop string. */
    size_t keep = 0;
    for (int i = 0; i < g->p.n_stop; i++)
        for (size_t t = g->stop_len[i] - 1; t > keep; t--)
            if (t <= g->n_hold && !memcmp(g->hold + g->n_hold - t, g->stop[i], t)) {
                keep = t;
                break;
            }
    release(g, g->n_hold - keep, out_len);
    return -1;
}

bool gen_device_greedy(const gen *g) { return g->p.device_greedy; }
bool gen_device_top(const gen *g) { return g->p.device_top; }

/* The argmax of the raw logits, with no penalty to apply. */
static bool plain_argmax(const gen *g)
{
    const smp_params *s = &g->p.smp;
    const bool no_penalty = s->penalty_last_n == 0 ||
                            (s->repeat_penalty == 1.0f && s->presence_penalty == 0.0f &&
                             s->frequency_penalty == 0.0f);
    return s->temp <= 0.0f && no_penalty;
}

bool gen_greedy(const gen *g)
{
    return plain_argmax(g) && !g->masked && g->p.n_probs < 0;
}

int gen_greedy_ban(const gen *g, const int32_t **ban)
{
    *ban = g->masked ? g->eog : NULL;
    if (!plain_argmax(g) || g->p.n_probs >= 0)
        return -1;
    return g->masked ? g->n_eog : 0;
}

/* Records the token id chosen from logits (NULL: chosen outside, by
 * gen_next_id: no log-probabilities then) and applies the stop conditions */
static int take(gen *g, int32_t id, const float *logits, gen_token *t);

/* *t emptied for the next token; Q36_E_ARG once the reply has ended */
static int token_begin(gen *g, gen_token *t, q36_err *err)
{
    memset(t, 0, sizeof *t);
    t->id = -1;
    t->stop_word = -1;
    t->text = g->out;
    return g->done ? q36_err_set(err, Q36_E_ARG, "the reply has ended; no next token") : 0;
}

int gen_next(gen *g, const float *logits, gen_token *t, q36_err *err)
{
    if (token_begin(g, t, err))
        return Q36_E_ARG;
    const float *row = logits;
    if (g->masked && plain_argmax(g)) {
        /* the raw row's argmax, unless it is a masked id: then it is the
         * masked row's too (the first index of the largest value in both),
         * and the row need not be copied (~600 KB at Qwen's vocabulary) */
        const int32_t id = smp_sample(g->smp, logits, g->n_vocab);
        if (id >= 0 && !tok_is_eog(g->tok, id))
            return take(g, id, logits, t);
    }
    if (g->masked) {
        memcpy(g->masked, logits, (size_t)g->n_vocab * sizeof *g->masked);
        for (int32_t i = 0; i < g->n_eog; i++)
            g->masked[g->eog[i]] = -INFINITY;
        row = g->masked;
    }
    int32_t id = smp_sample(g->smp, row, g->n_vocab);
    if (id < 0)
        return q36_err_set(err, Q36_E_ARG, "sampler failed on a row of %d logits", g->n_vocab);
    return take(g, id, logits, t);
}

int gen_next_id(gen *g, int32_t id, gen_token *t, q36_err *err)
{
    if (token_begin(g, t, err))
        return Q36_E_ARG;
    const int32_t *ban;
    if (gen_greedy_ban(g, &ban) < 0)
        return q36_err_set(err, Q36_E_ARG, "a token chosen outside the sampler needs greedy "
                           "sampling without penalties or log-probabilities");
    if (id < 0 || id >= g->n_vocab)
        return q36_err_set(err, Q36_E_ARG, "token %d is outside the vocabulary of %d", id,
                           g->n_vocab);
    if (g->masked && tok_is_eog(g->tok, id))
        return q36_err_set(err, Q36_E_ARG, "token %d ends the reply, which ignore_eos masks", id);
    return take(g, id, NULL, t);
}

int gen_top_need(const gen *g, int max)
{
    if (g->p.n_probs >= 0)
        return 0;
    const int need = (int)smp_top_need(g->smp, g->n_vocab);
    const int k = need > 0 ? need + (g->masked ? g->n_eog : 0) : 0;
    return k <= max ? k : 0;
}

int gen_next_top(gen *g, const int32_t *ids, const float *vals, int k, gen_token *t, q36_err *err)
{
    if (token_begin(g, t, err))
        return Q36_E_ARG;
    const int need = gen_top_need(g, k);
    if (!need || k < need)
        return q36_err_set(err, Q36_E_ARG, "%d best logits cannot stand for the row (%d needed)",
                           k, need);
    smp_cand c[GEN_MAX_TOP];
    int32_t m = 0;
    for (int i = 0; i < k && m < GEN_MAX_TOP; i++)
        if (ids[i] >= 0 && ids[i] < g->n_vocab && !(g->masked && tok_is_eog(g->tok, ids[i])))
            c[m++] = (smp_cand){ ids[i], vals[i], 0.0f };
    const int32_t id = smp_sample_top(g->smp, c, m, g->n_vocab);
    if (id < 0)
        return q36_err_set(err, Q36_E_ARG, "sampler failed on %d best logits of %d", (int)m,
                           g->n_vocab);
    return take(g, id, NULL, t);
}

static int take(gen *g, int32_t id, const float *logits, gen_token *t)
{
    smp_accept(g->smp, id);
    g->n_gen++;
    t->id = id;
    t->eog = tok_is_eog(g->tok, id);
    if (g->p.n_probs >= 0 && logits)
        logprobs(g, logits, id, t);
    size_t n = 0;
    if (!t->eog)
        g->n_hold += tok_stream_token(&g->utf8, g->tok, id, g->p.special, g->hold + g->n_hold);
    int w = stop_hold(g, &n);
    if (w >= 0) {
        t->stop = GEN_STOP_WORD;
        t->stop_word = w;
    } else if (t->eog) {
        t->stop = GEN_STOP_EOG;
    } else if (g->p.n_predict >= 0 && g->n_gen >= g->p.n_predict) {
        t->stop = GEN_STOP_LENGTH;
    }
    if (t->stop) {
        if (t->stop != GEN_STOP_WORD) {
            release(g, g->n_hold, &n);
            n += tok_stream_flush(&g->utf8, g->out + n);
        }
        g->done = true;
    }
    t->len = n;
    return 0;
}

size_t gen_finish(gen *g, const char **text)
{
    size_t n = 0;
    if (!g->done) {
        release(g, g->n_hold, &n);
        n += tok_stream_flush(&g->utf8, g->out + n);
        g->done = true;
    }
    *text = g->out;
    return n;
}
