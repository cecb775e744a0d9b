/* sampler.c: the sampler's life cycle: defaults, parameter checks,
 * allocation of every buffer it will use, accept, reset and free. The stages
 * themselves live in smp_chain.c, smp_select.c and smp_penalty.c.
 */
#include "smp_internal.h"

#include <math.h>
#include <stdlib.h>

smp_params smp_defaults(void)
{
    return (smp_params){
        .temp = 0.80f,
        .top_k = 40,
        .top_p = 0.95f,
        .min_p = 0.05f,
        .repeat_penalty = 1.00f,
        .presence_penalty = 0.00f,
        .frequency_penalty = 0.00f,
        .penalty_last_n = 64,
        .seed = SMP_SEED_RANDOM,
    };
}

static int check_finite(const char *name, float v, q36_err *err)
{
    if (isfinite(v))
        return 0;
    return q36_err_set(err, Q36_E_ARG, "sampler: %s: expected a finite number, found %g",
                       name, (double)v);
}

static int check_params(const smp_params *p, int32_t n_vocab, q36_err *err)
{
    if (n_vocab < 1)
        return q36_err_set(err, Q36_E_ARG, "sampler: n_vocab: expected >= 1, found %d", n_vocab);
    if (check_finite("temp", p->temp, err) || check_finite("top_p", p->top_p, err) ||
        check_finite("min_p", p->min_p, err) ||
        check_finite("repeat_penalty", p->repeat_penalty, err) ||
        check_finite("presence_penalty", p->presence_penalty, err) ||
        check_finite("frequency_penalty", p->frequency_penalty, err))
        return Q36_E_ARG;
    if (p->repeat_penalty <= 0.0f)
        return q36_err_set(err, Q36_E_ARG, "sampler: repeat_penalty: expected > 0 (1 = off), found %g",
                           (double)p->repeat_penalty);
    if (p->penalty_last_n < 0)
        return q36_err_set(err, Q36_E_ARG, "sampler: penalty_last_n: expected >= 0 (0 = off), found %d",
                           p->penalty_last_n);
    return 0;
}

int smp_new(const smp_params *params, int32_t n_vocab, smp **out, q36_err *err)
{
    smp_params p = params ? *params : smp_defaults();
    *out = NULL;
    int rc = check_params(&p, n_vocab, err);
    if (rc)
        return rc;
    smp *s = calloc(1, sizeof *s);
    if (!s)
        goto nomem;
    s->par = p;
    s->n_vocab = n_vocab;
    s->greedy = p.temp <= 0.0f;
    s->penalize = p.penalty_last_n > 0 &&
                  (p.repeat_penalty != 1.0f || p.frequency_penalty != 0.0f ||
                   p.presence_penalty != 0.0f);
    s->cand = malloc((size_t)n_vocab * sizeof *s->cand);
    if (!s->cand)
        goto nomem;
    if (s->penalize) {
        s->ring = malloc((size_t)p.penalty_last_n * sizeof *s->ring);
        s->count = calloc((size_t)n_vocab, sizeof *s->count);
        s->mask = calloc((size_t)n_vocab / 64 + 1, sizeof *s->mask);
        if (!s->ring || !s->count || !s->mask)
            goto nomem;
    }
    smp_rng_seed(s);
    *out = s;
    return 0;
nomem:
    smp_free(s);
    return q36_err_set(err, Q36_E_NOMEM, "sampler: out of memory for a vocabulary of %d ids", n_vocab);
}

void smp_free(smp *s)
{
    if (!s)
        return;
    free(s->cand);
    free(s->ring);
    free(s->count);
    free(s->mask);
    free(s);
}

int smp_accept(smp *s, int32_t token)
{
    if (!s || token < 0 || token >= s->n_vocab)
        return Q36_E_ARG;
    smp_window_push(s, token);
    return 0;
}

void smp_reset(smp *s)
{
    if (!s)
        return;
    smp_window_clear(s);
    smp_rng_seed(s);
}

uint32_t smp_seed(const smp *s)
{
    return s ? s->seed : 0;
}
