/* spec_guard.c: drafting while it pays (spec_guard.h). Per number of
 * decoding slots and way (0 plain, 1 drafting): the steps measured and
 * the moving averages of a step's seconds and tokens, whose ratio is the
 * way's seconds per token. A bucket measures
 * SPEC_GUARD_WARM steps drafting, then as many plain, then takes the way
 * of the lower average, and every SPEC_GUARD_EXPLORE steps SPEC_GUARD_RUN
 * of the other way, so that a change of load or of acceptance shows: such
 * a step weighs EXPLORE_WEIGHT in its average (a step of the way taken
 * EMA_WEIGHT), so that a few of them can turn the choice. */
#include "spec_guard.h"

#include <stdlib.h>

#define EMA_WEIGHT 0.05       /* a step of the way taken */
#define EXPLORE_WEIGHT 0.25   /* a step of the other way (rare: each counts more) */

typedef struct {
    uint64_t n[2];
    double   sec[2], tok[2];   /* moving averages of a step's seconds and tokens (their
                                  ratio, not the average of the steps' ratios: a step
                                  whose drafts all missed weighs as its one token) */
    uint64_t steps;        /* decisions taken in the bucket */
    int      pref;         /* the way taken, explorations aside (-1: none yet) */
} guard_bucket;

struct spec_guard {
    int           n_slots;
    guard_bucket *b;       /* [1, n_slots] */
    uint64_t      taken[2];
};

spec_guard *spec_guard_new(int n_slots)
{
    spec_guard *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->n_slots = n_slots < 1 ? 1 : n_slots;
    g->b = calloc((size_t)g->n_slots + 1, sizeof *g->b);
    if (!g->b) {
        free(g);
        return NULL;
    }
    for (int i = 0; i <= g->n_slots; i++)
        g->b[i].pref = -1;
    return g;
}

void spec_guard_free(spec_guard *g)
{
    if (!g)
        return;
    free(g->b);
    free(g);
}

static guard_bucket *bucket(spec_guard *g, int n_dec)
{
    return &g->b[n_dec < 1 ? 1 : n_dec > g->n_slots ? g->n_slots : n_dec];
}

bool spec_guard_draft(spec_guard *g, int n_dec)
{
    guard_bucket *b = bucket(g, n_dec);
    bool draft;
    if (b->n[1] < SPEC_GUARD_WARM)
        draft = true;
    else if (b->n[0] < SPEC_GUARD_WARM)
        draft = false;
    else {
        draft = b->sec[1] * b->tok[0] <= b->sec[0] * b->tok[1];    /* s/t: per token */
        b->pref = draft;
        if (b->steps++ % SPEC_GUARD_EXPLORE >= SPEC_GUARD_EXPLORE - SPEC_GUARD_RUN)
            draft = !draft;              /* a run of the other way */
    }
    g->taken[draft]++;
    return draft;
}

void spec_guard_done(spec_guard *g, int n_dec, bool drafted, int tokens, double seconds)
{
    if (tokens < 1 || seconds <= 0)
        return;
    guard_bucket *b = bucket(g, n_dec);
    const int w = drafted ? 1 : 0;
    /* the mean of the first steps, then the moving average */
    const double mean = 1.0 / (double)(b->n[w] + 1);
    const double ema = b->pref >= 0 && w != b->pref ? EXPLORE_WEIGHT : EMA_WEIGHT;
    const double a = mean > ema ? mean : ema;
    b->sec[w] += a * (seconds - b->sec[w]);
    b->tok[w] += a * ((double)tokens - b->tok[w]);
    b->n[w]++;
}

void spec_guard_counts(const spec_guard *g, uint64_t *plain, uint64_t *drafted)
{
    *plain = g->taken[0];
    *drafted = g->taken[1];
}
