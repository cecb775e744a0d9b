/* test_sampler.c: the sampler's own contract, without the oracle: parameter
 * and call errors naming the parameter, degenerate inputs (one id, -inf
 * logits), and the fast selections (top-k heap, top-p's partial sort)
 * against a plain full sort of the vocabulary. The comparison with
 * llama.cpp is tests/test_ggml_sampler.c.
 */
#include "sampler/sampler.h"
#include "test.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

typedef struct { int32_t id; float l; } ref;

static int cmp_ref(const void *a, const void *b)   /* larger logit, then lower id */
{
    const ref *x = a, *y = b;
    if (x->l != y->l)
        return x->l > y->l ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static int cmp_cand_id(const void *a, const void *b)
{
    const smp_cand *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

static int cmp_ref_id(const void *a, const void *b)
{
    const ref *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

static smp_params neutral(void)
{
    smp_params p = smp_defaults();
    p.temp = 1.0f; p.top_k = 0; p.top_p = 1.0f; p.min_p = 0.0f; p.seed = 3;
    return p;
}

static void bad_param(const char *name, smp_params p, int32_t n, const char *word)
{
    smp *s = (smp *)&p;   /* must come back NULL */
    q36_err err = { 0 };
    int rc = smp_new(&p, n, &s, &err);
    t_check(name, rc == Q36_E_ARG && !s && strstr(err.msg, word),
            "rc %d, out %p, message '%s' (wanted Q36_E_ARG naming '%s')", rc, (void *)s, err.msg, word);
}

static void test_errors(void)
{
    smp_params p = smp_defaults();
    bad_param("sampler/unit/err/n_vocab", p, 0, "n_vocab");
    p = smp_defaults(); p.temp = NAN;
    bad_param("sampler/unit/err/temp", p, 10, "temp");
    p = smp_defaults(); p.top_p = INFINITY;
    bad_param("sampler/unit/err/top_p", p, 10, "top_p");
    p = smp_defaults(); p.repeat_penalty = 0.0f;
    bad_param("sampler/unit/err/repeat_penalty", p, 10, "repeat_penalty");
    p = smp_defaults(); p.penalty_last_n = -1;
    bad_param("sampler/unit/err/penalty_last_n", p, 10, "penalty_last_n");

    smp *s = NULL;
    float l[8] = { 0 };
    p = smp_defaults();
    p.repeat_penalty = 1.2f;
    int rc = smp_new(&p, 8, &s, NULL);
    t_check("sampler/unit/err/calls",
            rc == 0 && smp_sample(s, NULL, 8) == Q36_E_ARG && smp_sample(s, l, 0) == Q36_E_ARG &&
            smp_sample(s, l, 9) == Q36_E_ARG && smp_apply(s, l, 9, NULL) == Q36_E_ARG &&
            smp_accept(s, -1) == Q36_E_ARG && smp_accept(s, 8) == Q36_E_ARG && smp_accept(s, 7) == 0,
            "a bad call was not refused with Q36_E_ARG");
    smp_free(s);
    smp_free(NULL);
    smp_params d = smp_defaults();
    t_check("sampler/unit/defaults",
            d.temp == 0.8f && d.top_k == 40 && d.top_p == 0.95f && d.min_p == 0.05f &&
            d.repeat_penalty == 1.0f && d.penalty_last_n == 64 && d.seed == SMP_SEED_RANDOM,
            "defaults differ from llama.cpp's");
}

static void test_degenerate(void)
{
    smp_params modes[3] = { smp_defaults(), neutral(), smp_defaults() };
    modes[2].temp = 0.0f;
    bool ok1 = true, okinf = true;
    float one = 2.5f;
    float inf[100];
    for (int i = 0; i < 100; i++)
        inf[i] = -INFINITY;
    for (int m = 0; m < 3; m++) {
        smp *s = NULL;
        smp_new(&modes[m], 100, &s, NULL);
        const smp_cand *c;
        ok1 &= smp_sample(s, &one, 1) == 0 && smp_apply(s, &one, 1, &c) == 1 && c[0].p == 1.0f;
        int32_t t = smp_sample(s, inf, 100);
        okinf &= t >= 0 && t < 100 && smp_apply(s, inf, 100, &c) >= 1;
        smp_free(s);
    }
    t_check("sampler/unit/one-id", ok1, "a vocabulary of one id did not give id 0 with p = 1");
    t_check("sampler/unit/all-inf", okinf, "all -inf logits did not give a valid id");

    /* -inf logits are never drawn */
    float l[1000];
    t_rng r = t_rng_named("sampler/unit/some-inf");
    for (int i = 0; i < 1000; i++)
        l[i] = i % 2 ? -INFINITY : t_uniform(&r);
    smp *s = NULL;
    smp_params p = neutral();
    smp_new(&p, 1000, &s, NULL);
    bool okodd = true;
    for (int i = 0; i < 5000; i++)
        okodd &= smp_sample(s, l, 1000) % 2 == 0;
    smp_free(s);
    t_check("sampler/unit/some-inf", okodd, "an id with logit -inf was drawn");
}

/* Fills l with ties (16 levels) and returns the reference order. */
static void make(const char *name, float *l, ref *sorted, int32_t n)
{
    t_rng r = t_rng_named(name);
    for (int32_t i = 0; i < n; i++) {
        l[i] = (float)(int)(t_uniform(&r) * 16) * 0.25f;
        sorted[i] = (ref){ i, l[i] };
    }
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_ref);
}

static void test_top_k(void)
{
    enum { N = 5000 };
    static const int32_t ks[] = { 1, 7, 64, 500, 4999 };
    float *l = malloc(N * sizeof *l);
    ref *sorted = malloc(N * sizeof *sorted);
    make("sampler/unit/top_k", l, sorted, N);
    for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++) {
        char name[64];
        snprintf(name, sizeof name, "sampler/unit/top_k=%d", ks[ki]);
        smp_params p = neutral();
        p.top_k = ks[ki];
        smp *s = NULL;
        smp_new(&p, N, &s, NULL);
        const smp_cand *c;
        int32_t m = smp_apply(s, l, N, &c);
        smp_cand *got = malloc((size_t)m * sizeof *got);
        memcpy(got, c, (size_t)m * sizeof *got);
        qsort(got, (size_t)m, sizeof *got, cmp_cand_id);
        ref *want = malloc((size_t)ks[ki] * sizeof *want);
        memcpy(want, sorted, (size_t)ks[ki] * sizeof *want);
        qsort(want, (size_t)ks[ki], sizeof *want, cmp_ref_id);
        int bad = m != ks[ki];
        for (int32_t i = 0; !bad && i < m; i++)
            bad = got[i].id != want[i].id;
        t_check(name, !bad, "kept set differs from the first k of a full sort (lowest ids among equal logits)");
        free(want);
        free(got);
        smp_free(s);
    }
    free(sorted);
    free(l);
}

/* top_p with top_k off finds its prefix by a weighted quickselect: the kept
 * set must equal the shortest prefix of a full sort whose weights
 * expf(l - max) reach top_p times their total (double sums). */
static void test_top_p(void)
{
    enum { N = 20000 };
    static const float ps[] = { 0.0f, 0.3f, 0.9f, 0.999f, 0.99999f };
    float *l = malloc(N * sizeof *l);
    ref *sorted = malloc(N * sizeof *sorted);
    t_rng r = t_rng_named("sampler/unit/top_p");
    for (int32_t i = 0; i < N; i++) {
        l[i] = 4.0f * t_uniform(&r);
        sorted[i] = (ref){ i, l[i] };
    }
    qsort(sorted, N, sizeof *sorted, cmp_ref);
    double z = 0.0;
    for (int32_t i = 0; i < N; i++)
        z += expf(l[i] - sorted[0].l);
    for (size_t pi = 0; pi < sizeof ps / sizeof *ps; pi++) {
        char name[64];
        snprintf(name, sizeof name, "sampler/unit/top_p=%g", (double)ps[pi]);
        int32_t want = N;
        double cum = 0.0;
        for (int32_t i = 0; i < N; i++) {
            cum += expf(sorted[i].l - sorted[0].l);
            if (cum >= ps[pi] * z) {
                want = i + 1;
                break;
            }
        }
        smp_params p = neutral();
        p.top_p = ps[pi];
        smp *s = NULL;
        smp_new(&p, N, &s, NULL);
        const smp_cand *c;
        int32_t m = smp_apply(s, l, N, &c);
        int bad = m != want;
        if (!bad) {
            smp_cand *got = malloc((size_t)m * sizeof *got);
            ref *exp_ = malloc((size_t)m * sizeof *exp_);
            memcpy(got, c, (size_t)m * sizeof *got);
            memcpy(exp_, sorted, (size_t)m * sizeof *exp_);
            qsort(got, (size_t)m, sizeof *got, cmp_cand_id);
            qsort(exp_, (size_t)m, sizeof *exp_, cmp_ref_id);
            for (int32_t i = 0; !bad && i < m; i++)
                bad = got[i].id != exp_[i].id;
            free(got);
            free(exp_);
        }
        t_check(name, !bad, "q36 keeps %d ids, a full sort %d%s", m, want, bad && m == want ? " (other ids)" : "");
        smp_free(s);
    }
    free(sorted);
    free(l);
}

/* top_k on orders that defeat a rising bar (ascending: every id passes) or
 * a naive pivot (descending, all equal), against a full sort. */
static void test_top_k_orders(void)
{
    enum { N = 5000, K = 40 };
    static const char *names[] = { "ascending", "descending", "all-equal" };
    float *l = malloc(N * sizeof *l);
    ref *sorted = malloc(N * sizeof *sorted);
    for (int o = 0; o < 3; o++) {
        for (int32_t i = 0; i < N; i++) {
            l[i] = o == 0 ? (float)i * 0.01f : o == 1 ? (float)(N - i) * 0.01f : 1.5f;
            sorted[i] = (ref){ i, l[i] };
        }
        qsort(sorted, N, sizeof *sorted, cmp_ref);
        qsort(sorted, K, sizeof *sorted, cmp_ref_id);
        char name[64];
        snprintf(name, sizeof name, "sampler/unit/top_k=40/%s", names[o]);
        smp_params p = neutral();
        p.top_k = K;
        smp *s = NULL;
        smp_new(&p, N, &s, NULL);
        const smp_cand *c;
        int32_t m = smp_apply(s, l, N, &c);
        smp_cand got[K];
        int bad = m != K;
        if (!bad) {
            memcpy(got, c, sizeof got);
            qsort(got, K, sizeof *got, cmp_cand_id);
            for (int32_t i = 0; !bad && i < K; i++)
                bad = got[i].id != sorted[i].id;
        }
        t_check(name, !bad, "kept set differs from the first 40 of a full sort");
        smp_free(s);
    }
    free(sorted);
    free(l);
}

/* A call with fewer ids than smp_new's capacity, with a penalized id beyond
 * them in the window, equals a sampler made for the smaller vocabulary. */
static void test_smaller_call(void)
{
    float l[100];
    t_rng r = t_rng_named("sampler/unit/smaller-call");
    for (int i = 0; i < 100; i++)
        l[i] = 3.0f * t_uniform(&r);
    smp_params p = neutral();
    p.repeat_penalty = 1.7f; p.presence_penalty = 0.5f; p.top_k = 10;
    smp *big = NULL, *small = NULL;
    smp_new(&p, 1000, &big, NULL);
    smp_new(&p, 100, &small, NULL);
    smp_accept(big, 500); smp_accept(big, 50); smp_accept(big, 99); smp_accept(big, 999);
    smp_accept(small, 50); smp_accept(small, 99);
    const smp_cand *a, *b;
    int32_t na = smp_apply(big, l, 100, &a);
    smp_cand keep[100];
    memcpy(keep, a, (size_t)na * sizeof *a);
    int32_t nb = smp_apply(small, l, 100, &b);
    int bad = na != nb;
    for (int32_t i = 0; !bad && i < na; i++)
        bad = keep[i].id != b[i].id || keep[i].p != b[i].p || keep[i].logit != b[i].logit;
    t_check("sampler/unit/smaller-call", !bad, "capacity 1000 called with 100 ids differs from capacity 100");
    smp_free(big);
    smp_free(small);
}

/* smp_sample_top: the K best logits of a row, given in a shuffled order,
 * draw what smp_sample draws from the whole row, draw after draw from the
 * same seed: rows with 16-level ties and rows of distinct values, top_k 1
 * to K with top_p, min_p and temperature on and off, greedy; and the
 * refusals (top_k off or above K, penalties on). */
static void test_sample_top(void)
{
    enum { N = 3000, K = 64, DRAWS = 24 };
    static const int32_t ks[] = { 1, 5, 20, 40, 64 };
    static const float tops[] = { 1.0f, 0.9f, 0.5f }, mins[] = { 0.0f, 0.05f },
                       temps[] = { 0.0f, 0.6f, 1.0f, 1.5f };
    float *l = malloc(N * sizeof *l);
    ref *sorted = malloc(N * sizeof *sorted);
    smp_cand top[K];
    int bad = 0, cases = 0;
    for (int ties = 0; ties < 2; ties++) {
        make(ties ? "sampler/unit/sample-top/ties" : "sampler/unit/sample-top", l, sorted, N);
        if (!ties) {       /* distinct values */
            t_rng r = t_rng_named("sampler/unit/sample-top/distinct");
            for (int32_t i = 0; i < N; i++)
                sorted[i] = (ref){ i, l[i] = (float)(t_uniform(&r) * 8.0 - 4.0) };
            qsort(sorted, N, sizeof *sorted, cmp_ref);
        }
        t_rng sh = t_rng_named("sampler/unit/sample-top/shuffle");
        for (int i = 0; i < K; i++)
            top[i] = (smp_cand){ sorted[i].id, sorted[i].l, 0.0f };
        for (int i = K - 1; i > 0; i--) {
            const int j = (int)(t_next(&sh) % (uint64_t)(i + 1));
            const smp_cand t = top[i];
            top[i] = top[j];
            top[j] = t;
        }
        for (size_t a = 0; a < sizeof ks / sizeof *ks; a++)
            for (size_t b = 0; b < sizeof tops / sizeof *tops; b++)
                for (size_t c = 0; c < sizeof mins / sizeof *mins; c++)
                    for (size_t d = 0; d < sizeof temps / sizeof *temps; d++) {
                        smp_params p = neutral();
                        p.top_k = ks[a];
                        p.top_p = tops[b];
                        p.min_p = mins[c];
                        p.temp = temps[d];
                        p.seed = 1000u + (uint32_t)(a * 97 + b * 13 + c * 5 + d);
                        smp *s1 = NULL, *s2 = NULL;
                        q36_err err = { 0 };
                        if (smp_new(&p, N, &s1, &err) || smp_new(&p, N, &s2, &err)) {
                            bad++;
                            continue;
                        }
                        const int32_t need = smp_top_need(s2, N);
                        bad += need != (p.temp <= 0.0f ? 1 : ks[a]);
                        for (int i = 0; i < DRAWS; i++)
                            bad += smp_sample(s1, l, N) != smp_sample_top(s2, top, K, N);
                        cases++;
                        smp_free(s1);
                        smp_free(s2);
                    }
    }
    /* refusals */
    smp_params p = neutral();
    p.temp = 1.0f;
    p.top_k = 0;
    smp *s = NULL;
    q36_err err = { 0 };
    int refused = 0;
    if (!smp_new(&p, N, &s, &err)) {
        refused += smp_top_need(s, N) == 0 && smp_sample_top(s, top, K, N) == Q36_E_ARG;
        smp_free(s);
    }
    p.top_k = K + 1;
    if (!smp_new(&p, N, &s, &err)) {
        refused += smp_top_need(s, N) == K + 1 && smp_sample_top(s, top, K, N) == Q36_E_ARG;
        smp_free(s);
    }
    p.top_k = 20;
    p.repeat_penalty = 1.3f;
    p.penalty_last_n = 16;
    if (!smp_new(&p, N, &s, &err)) {
        refused += smp_top_need(s, N) == 0 && smp_sample_top(s, top, K, N) == Q36_E_ARG;
        smp_free(s);
    }
    t_check("sampler/unit/sample-top", !bad && cases == 240 && refused == 3,
            "%d mismatches (draws of %d each, or the ids needed) over %d cases; %d of 3 refusals",
            bad, DRAWS, cases, refused);
    free(l);
    free(sorted);
}

int main(void)
{
    test_errors();
    test_degenerate();
    test_top_k();
    test_top_k_orders();
    test_top_p();
    test_smaller_call();
    test_sample_top();
    return t_exit();
}
