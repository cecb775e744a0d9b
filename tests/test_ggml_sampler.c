/* test_ggml_sampler.c: q36's sampler against llama.cpp's samplers, in the
 * same process, on random logits.
 *
 * The oracle chain is the one common_sampler builds from the same flags:
 * penalties, top_k, top_p (min_keep 0), min_p (min_keep 0), temp_ext (no
 * dynamic range), dist. A stage that is off is llama.cpp's own empty sampler.
 *
 * 1. Candidate sets: for every stage alone and for whole chains, on vocabularies
 *    of 10, 1000 and 151936 ids, with continuous logits and with logits on a
 *    coarse grid (many ties), including edge values, the ids llama.cpp leaves
 *    in the llama_token_data_array after llama_sampler_apply equal the ids of
 *    smp_apply, and their probabilities agree within 1e-6 relative (values
 *    under 1e-30 count as 0). Two kinds of difference are boundary ties, not
 *    errors, and are counted and printed:
 *    - equal logits at the cut (top_k, greedy): llama.cpp's partial sort does
 *      not say which of equal logits it keeps; q36 keeps the lowest ids. The
 *      sets must then have the same size and differ only in ids whose logit is
 *      the smallest kept logit of both sets.
 *    - top_p's cumulative sum: llama.cpp sums float probabilities, q36 sums in
 *      double. A differing id must have, in double, a cumulative probability
 *      before it within w = K 2^-24 + 1e-6 of top_p, K the ids top_k left:
 *      the worst case of llama.cpp's two float sums of K terms below 1 (the
 *      softmax denominator and the running sum), each rounding by at most
 *      2^-25 (measured: up to 2.2e-4 on 151936 ids). Among equal logits the
 *      cumulative probability before an id is a range (their order is
 *      unspecified); top_p must fall within it, widened by w.
 *    When sets differ, probabilities are compared renormalized over the
 *    common ids.
 * 2. Greedy: smp_sample with temp 0 equals llama_sampler_init_greedy (first
 *    maximum in id order) on tied logits, with and without penalties.
 * 3. Distributions: 20000 draws of smp_sample at fixed settings and seed
 *    against the exact probabilities of llama.cpp's chain: Pearson chi-square
 *    over the ids with expected count >= 5 (the others pooled into one bin
 *    when it holds >= 5), rejected above the 0.999 quantile (Wilson-Hilferty),
 *    plus, for every id, |count - N p| <= 5 sqrt(N p (1 - p)) + 1; a draw
 *    outside llama.cpp's set fails. Seeds are fixed, so the verdict cannot
 *    flake; a power case checks the same test rejects the same draws against
 *    llama.cpp's probabilities at 1.3 times the temperature.
 * 4. Seeds: equal seeds give equal streams, different seeds different ones;
 *    smp_reset restores both the stream and an empty penalty window.
 */
#include "llama.h"
#include "sampler/sampler.h"
#include "test.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

static int n_boundary_ties;

static void quiet_log(enum ggml_log_level level, const char *text, void *ud)
{
    (void)level; (void)text; (void)ud;
}

/* ---- inputs ------------------------------------------------------------ */

/* kind 0: normal with sd 3; kind 1: multiples of 0.5 in [-4, 4] (ties). */
static float *make_logits(const char *name, int32_t n, int kind)
{
    t_rng r = t_rng_named(name);
    float *l = malloc((size_t)n * sizeof *l);
    for (int32_t i = 0; i < n; i++) {
        if (kind == 0) {
            double u1 = t_uniform(&r) + 1e-7, u2 = t_uniform(&r);
            l[i] = (float)(3.0 * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
        } else {
            l[i] = (float)(int)(t_uniform(&r) * 17) * 0.5f - 4.0f;
        }
    }
    return l;
}

/* 24 ids: the 4 best logits again and again, and random ids (negative logits
 * among them), so that windows of 8 evict and counts exceed 1. */
static int make_history(const char *name, const float *l, int32_t n, int32_t *h)
{
    int32_t top[4] = { 0, 0, 0, 0 };
    for (int k = 0; k < 4 && k < n; k++) {
        int32_t b = -1;
        for (int32_t i = 0; i < n; i++) {
            bool used = false;
            for (int j = 0; j < k; j++)
                used |= top[j] == i;
            if (!used && (b < 0 || l[i] > l[b]))
                b = i;
        }
        top[k] = b;
    }
    t_rng r = t_rng_named(name);
    for (int i = 0; i < 24; i++)
        h[i] = i % 3 == 0 ? top[(i / 3) % (n < 4 ? n : 4)] : (int32_t)(t_next(&r) % (uint64_t)n);
    return 24;
}

static smp_params neutral(void)
{
    smp_params p = smp_defaults();
    p.temp = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.penalty_last_n = 64;
    p.seed = 1234;
    return p;
}

/* ---- the oracle --------------------------------------------------------- */

static struct llama_sampler *oracle_chain(const smp_params *p, int32_t n, bool greedy)
{
    struct llama_sampler *c = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(c, llama_sampler_init_penalties(n, p->penalty_last_n, p->repeat_penalty,
                                                            p->frequency_penalty, p->presence_penalty));
    llama_sampler_chain_add(c, llama_sampler_init_top_k(p->top_k));
    llama_sampler_chain_add(c, llama_sampler_init_top_p(p->top_p, 0));
    llama_sampler_chain_add(c, llama_sampler_init_min_p(p->min_p, 0));
    llama_sampler_chain_add(c, llama_sampler_init_temp_ext(p->temp, 0.0f, 1.0f));
    llama_sampler_chain_add(c, greedy ? llama_sampler_init_greedy() : llama_sampler_init_dist(p->seed));
    return c;
}

/* Applies chain c (history accepted first) to logits; buf holds n entries. */
static llama_token_data_array oracle_apply(struct llama_sampler *c, const float *l, int32_t n,
                                           const int32_t *hist, int nh, llama_token_data *buf)
{
    for (int i = 0; i < nh; i++)
        llama_sampler_accept(c, hist[i]);
    for (int32_t i = 0; i < n; i++)
        buf[i] = (llama_token_data){ i, l[i], 0.0f };
    llama_token_data_array cur = { buf, (size_t)n, -1, false };
    llama_sampler_apply(c, &cur);
    return cur;
}

/* llama.cpp's penalized logits, in id order. */
static void oracle_penalized(const smp_params *p, const float *l, int32_t n, const int32_t *hist,
                             int nh, float *out, llama_token_data *buf)
{
    struct llama_sampler *c = llama_sampler_init_penalties(n, p->penalty_last_n, p->repeat_penalty,
                                                           p->frequency_penalty, p->presence_penalty);
    llama_token_data_array cur = oracle_apply(c, l, n, hist, nh, buf);
    for (size_t i = 0; i < cur.size; i++)
        out[cur.data[i].id] = cur.data[i].logit;
    llama_sampler_free(c);
}

/* ---- comparing candidate sets -------------------------------------------- */

typedef struct { int32_t id; float p; } idp;

static int cmp_idp(const void *a, const void *b)
{
    const idp *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

static int cmp_desc(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

static bool close_rel(double a, double b)
{
    if (fabs(a) < 1e-30 && fabs(b) < 1e-30)
        return true;
    return fabs(a - b) <= 1e-6 * fmax(fabs(a), fabs(b));
}

/* Softmax of the K best values of P (sorted best first), as prefix sums in
 * double: cum[i] is the probability of sorted[0..i). */
typedef struct { float *sorted; double *cum; int32_t K; } topset;

static void topset_make(topset *ts, const float *P, int32_t n, int32_t K)
{
    ts->sorted = malloc((size_t)n * sizeof *ts->sorted);
    ts->cum = malloc(((size_t)K + 1) * sizeof *ts->cum);
    ts->K = K;
    memcpy(ts->sorted, P, (size_t)n * sizeof *ts->sorted);
    qsort(ts->sorted, (size_t)n, sizeof *ts->sorted, cmp_desc);
    ts->cum[0] = 0.0;
    for (int32_t i = 0; i < K; i++)
        ts->cum[i + 1] = ts->cum[i] + exp((double)ts->sorted[i] - (double)ts->sorted[0]);
    for (int32_t i = 1; i <= K; i++)
        ts->cum[i] /= ts->cum[K];
}

/* The range of cumulative probability before an id of value v: from the mass
 * of the strictly better values to that plus the other ids equal to v (the
 * order among equal logits is unspecified). */
static void topset_before(const topset *ts, float v, double *lo, double *hi)
{
    int32_t a = 0, b = ts->K;             /* first index with sorted <= v */
    while (a < b) {
        int32_t m = (a + b) / 2;
        if (ts->sorted[m] > v) a = m + 1; else b = m;
    }
    int32_t e = a;
    while (e < ts->K && ts->sorted[e] == v)
        e++;
    *lo = ts->cum[a];
    *hi = e > a ? ts->cum[e - 1] : ts->cum[a];
}

static void compare_sets(const char *name, const smp_params *p, int32_t n, const float *P,
                         const smp_cand *q, int32_t mq, llama_token_data_array o)
{
    idp *a = malloc((size_t)(mq + 1) * sizeof *a), *b = malloc((o.size + 1) * sizeof *b);
    int32_t na = 0, nb = 0;
    for (int32_t i = 0; i < mq; i++)
        a[na++] = (idp){ q[i].id, q[i].p };
    for (size_t i = 0; i < o.size; i++)
        if (p->temp > 0.0f || o.data[i].p > 0.0f)     /* greedy: the survivor with p = 1 */
            b[nb++] = (idp){ o.data[i].id, o.data[i].p };
    qsort(a, (size_t)na, sizeof *a, cmp_idp);
    qsort(b, (size_t)nb, sizeof *b, cmp_idp);

    float cut_a = INFINITY, cut_b = INFINITY;
    for (int32_t i = 0; i < na; i++) cut_a = fminf(cut_a, P[a[i].id]);
    for (int32_t i = 0; i < nb; i++) cut_b = fminf(cut_b, P[b[i].id]);

    /* merge: common ids, and the differing ones checked against the tie rules */
    int32_t i = 0, j = 0, ncommon = 0, ndiff = 0;
    double sa = 0.0, sb = 0.0;
    topset ts = { NULL, NULL, 0 };
    int32_t K = p->top_k > 0 && p->top_k < n ? p->top_k : n;
    char why[256] = "";
    double worst = 0.0;   /* largest distance of top_p from a differing id's range */
    while (i < na || j < nb) {
        int32_t d;
        if (i < na && j < nb && a[i].id == b[j].id) {
            sa += a[i].p; sb += b[j].p; ncommon++; i++; j++;
            continue;
        }
        const char *side;
        if (j >= nb || (i < na && a[i].id < b[j].id)) { d = a[i++].id; side = "q36 only"; }
        else { d = b[j++].id; side = "llama only"; }
        ndiff++;
        bool logit_tie = na == nb && P[d] == cut_a && P[d] == cut_b;
        bool p_tie = false;
        if (!logit_tie && p->top_p < 1.0f) {
            if (!ts.sorted)
                topset_make(&ts, P, n, K);
            double w = (double)K * 0x1p-24 + 1e-6;
            double lo, hi;
            topset_before(&ts, P[d], &lo, &hi);
            p_tie = p->top_p >= lo - w && p->top_p <= hi + w;
            worst = fmax(worst, fmax(lo - p->top_p, p->top_p - hi));
            if (!p_tie && !why[0])
                snprintf(why, sizeof why, "id %d (%s, logit %.9g) cumulative before it %.9g..%.9g, top_p %g, w %.3g",
                         d, side, (double)P[d], lo, hi, (double)p->top_p, w);
        }
        if (!logit_tie && !p_tie && !why[0])
            snprintf(why, sizeof why, "id %d (%s, logit %.9g) not a tie: cuts q36 %.9g llama %.9g, sizes %d/%d",
                     d, side, (double)P[d], (double)cut_a, (double)cut_b, na, nb);
    }
    if (!why[0]) {
        /* probabilities, renormalized over the common ids when sets differ */
        double ra = ndiff ? sa : 1.0, rb = ndiff ? sb : 1.0;
        for (i = 0, j = 0; i < na && j < nb;) {
            if (a[i].id < b[j].id) { i++; continue; }
            if (a[i].id > b[j].id) { j++; continue; }
            if (!close_rel(a[i].p / ra, b[j].p / rb)) {
                snprintf(why, sizeof why, "id %d: p q36 %.9g llama %.9g (%d candidates)",
                         a[i].id, a[i].p / ra, b[j].p / rb, na);
                break;
            }
            i++; j++;
        }
    }
    if (why[0])
        t_fail(name, "%s", why);
    else {
        if (ndiff) {
            n_boundary_ties++;
            printf("# %s: %d boundary ids differ (ties), %d common; top_p outside a tie range by <= %.3g\n",
                   name, ndiff, ncommon, worst);
        }
        t_ok(name);
    }
    free(ts.sorted);
    free(ts.cum);
    free(a);
    free(b);
}

/* One candidate-set case: logits l, params p, optional history. */
static void set_case(const char *name, const float *l, int32_t n, const smp_params *p,
                     const int32_t *hist, int nh, llama_token_data *buf, float *P)
{
    smp *s = NULL;
    q36_err err = { 0 };
    if (smp_new(p, n, &s, &err)) {
        t_fail(name, "smp_new: %s", err.msg);
        return;
    }
    for (int i = 0; i < nh; i++)
        smp_accept(s, hist[i]);
    const smp_cand *q;
    int32_t mq = smp_apply(s, l, n, &q);
    if (mq < 1) {
        t_fail(name, "smp_apply returned %d", mq);
        smp_free(s);
        return;
    }
    oracle_penalized(p, l, n, hist, nh, P, buf);
    struct llama_sampler *c = oracle_chain(p, n, false);
    llama_token_data_array o = oracle_apply(c, l, n, hist, nh, buf);
    compare_sets(name, p, n, P, q, mq, o);
    llama_sampler_free(c);
    smp_free(s);
}

/* ---- 1. candidate sets ----------------------------------------------------- */

typedef struct { const char *name; smp_params p; bool hist; } pcase;

static int make_pcases(pcase *c, int32_t n)
{
    int k = 0;
    smp_params b = neutral();
#define ADD(nm, field, val, h) do { c[k] = (pcase){ nm, b, h }; c[k].p.field = (val); k++; } while (0)
    ADD("top_k=0", top_k, 0, false);
    ADD("top_k=1", top_k, 1, false);
    ADD("top_k=5", top_k, 5, false);
    ADD("top_k=40", top_k, 40, false);
    ADD("top_k=n-1", top_k, n - 1, false);
    ADD("top_k=n", top_k, n, false);
    ADD("top_k=n+5", top_k, n + 5, false);
    ADD("top_p=0", top_p, 0.0f, false);
    ADD("top_p=0.5", top_p, 0.5f, false);
    ADD("top_p=0.9", top_p, 0.9f, false);
    ADD("top_p=0.95", top_p, 0.95f, false);
    ADD("top_p=1", top_p, 1.0f, false);
    ADD("min_p=0", min_p, 0.0f, false);
    ADD("min_p=0.05", min_p, 0.05f, false);
    ADD("min_p=0.5", min_p, 0.5f, false);
    ADD("min_p=1", min_p, 1.0f, false);
    ADD("min_p=1.5", min_p, 1.5f, false);
    ADD("temp=0", temp, 0.0f, false);
    ADD("temp=1e-6", temp, 1e-6f, false);
    ADD("temp=0.01", temp, 0.01f, false);
    ADD("temp=0.8", temp, 0.8f, false);
    ADD("temp=1.7", temp, 1.7f, false);
    ADD("repeat=1.3", repeat_penalty, 1.3f, true);
    ADD("repeat=0.7", repeat_penalty, 0.7f, true);
    ADD("freq=0.5", frequency_penalty, 0.5f, true);
    ADD("presence=0.7", presence_penalty, 0.7f, true);
    ADD("presence=-0.4", presence_penalty, -0.4f, true);
    c[k] = (pcase){ "penalties,last_n=8", b, true };
    c[k].p.penalty_last_n = 8; c[k].p.repeat_penalty = 1.5f;
    c[k].p.frequency_penalty = 0.3f; c[k].p.presence_penalty = 0.2f; k++;
    c[k] = (pcase){ "penalties,last_n=0", b, true };
    c[k].p.penalty_last_n = 0; c[k].p.repeat_penalty = 1.5f; k++;
    c[k] = (pcase){ "chain=defaults", smp_defaults(), false };
    c[k].p.seed = 7; k++;
    c[k] = (pcase){ "chain=defaults+penalties", smp_defaults(), true };
    c[k].p.seed = 7; c[k].p.repeat_penalty = 1.1f; c[k].p.frequency_penalty = 0.2f;
    c[k].p.presence_penalty = 0.3f; c[k].p.penalty_last_n = 16; k++;
    c[k] = (pcase){ "chain=k0,p0.9,min0.02,t1.3", b, true };
    c[k].p.top_p = 0.9f; c[k].p.min_p = 0.02f; c[k].p.temp = 1.3f; c[k].p.repeat_penalty = 1.2f; k++;
    c[k] = (pcase){ "chain=k200,p0.99,min0.001,t0.6", b, false };
    c[k].p.top_k = 200; c[k].p.top_p = 0.99f; c[k].p.min_p = 0.001f; c[k].p.temp = 0.6f; k++;
    c[k] = (pcase){ "chain=k40,p0.5,min0.3,t0.8", b, false };
    c[k].p.top_k = 40; c[k].p.top_p = 0.5f; c[k].p.min_p = 0.3f; c[k].p.temp = 0.8f; k++;
    c[k] = (pcase){ "chain=greedy+penalties", smp_defaults(), true };
    c[k].p.temp = 0.0f; c[k].p.repeat_penalty = 1.5f; k++;
#undef ADD
    return k;
}

static void test_sets(void)
{
    static const int32_t sizes[] = { 10, 1000, 151936 };
    llama_token_data *buf = malloc(151936 * sizeof *buf);
    float *P = malloc(151936 * sizeof *P);
    pcase cases[64];
    for (int kind = 0; kind < 2; kind++) {
        for (int si = 0; si < 3; si++) {
            int32_t n = sizes[si];
            char lname[64];
            snprintf(lname, sizeof lname, "sampler/logits/%s/%d", kind ? "ties" : "normal", n);
            float *l = make_logits(lname, n, kind);
            int32_t hist[24];
            int nh = make_history(lname, l, n, hist);
            int nc = make_pcases(cases, n);
            for (int ci = 0; ci < nc; ci++) {
                char name[160];
                snprintf(name, sizeof name, "sampler/set/%s/n=%d/%s", kind ? "ties" : "normal", n,
                         cases[ci].name);
                set_case(name, l, n, &cases[ci].p, hist, cases[ci].hist ? nh : 0, buf, P);
            }
            free(l);
        }
    }
    free(P);
    free(buf);
}

/* top_p reached exactly (sums of 0.25 are exact in float and double): the
 * id that brings the sum to top_p is kept and the next is not, in the sorted
 * walk (top_k on) and in the quickselect (top_k off); the tie-tolerant
 * comparison above could not tell. */
static void test_top_p_exact(void)
{
    const float l[8] = { 1, 1, 1, 1, -INFINITY, -INFINITY, -INFINITY, -INFINITY };
    llama_token_data buf[8];
    for (int v = 0; v < 2; v++) {
        const char *name = v ? "sampler/set/exact/top_p=0.5,top_k=0" : "sampler/set/exact/top_p=0.5,top_k=4";
        smp_params p = neutral();
        p.top_p = 0.5f;
        p.top_k = v ? 0 : 4;
        smp *s = NULL;
        smp_new(&p, 8, &s, NULL);
        const smp_cand *q;
        int32_t mq = s ? smp_apply(s, l, 8, &q) : -1;
        struct llama_sampler *c = oracle_chain(&p, 8, false);
        llama_token_data_array o = oracle_apply(c, l, 8, NULL, 0, buf);
        int bad = 0;
        for (int32_t i = 0; i < mq; i++)
            bad |= q[i].logit != 1.0f || fabsf(q[i].p - 0.5f) > 1e-7f;
        t_check(name, mq == 2 && o.size == 2 && !bad, "q36 keeps %d, llama.cpp %zu (want 2 of the four equal logits)",
                mq, o.size);
        llama_sampler_free(c);
        smp_free(s);
    }
}

/* ---- 2. greedy ------------------------------------------------------------- */

static void test_greedy(void)
{
    static const int32_t sizes[] = { 10, 1000, 151936 };
    llama_token_data *buf = malloc(151936 * sizeof *buf);
    for (int si = 0; si < 3; si++) {
        for (int pen = 0; pen < 2; pen++) {
            int32_t n = sizes[si];
            char name[96];
            snprintf(name, sizeof name, "sampler/greedy/ties/n=%d%s", n, pen ? "/penalties" : "");
            float *l = make_logits(name, n, 1);
            int32_t hist[24];
            int nh = pen ? make_history(name, l, n, hist) : 0;
            smp_params p = neutral();
            p.temp = 0.0f;
            if (pen)
                p.repeat_penalty = 1.5f, p.presence_penalty = 0.25f;
            smp *s = NULL;
            q36_err err = { 0 };
            if (smp_new(&p, n, &s, &err)) {
                t_fail(name, "smp_new: %s", err.msg);
                free(l);
                continue;
            }
            for (int i = 0; i < nh; i++)
                smp_accept(s, hist[i]);
            int32_t got = smp_sample(s, l, n);
            /* the penalties alone then llama.cpp's greedy sampler */
            struct llama_sampler *c = llama_sampler_chain_init(llama_sampler_chain_default_params());
            llama_sampler_chain_add(c, llama_sampler_init_penalties(n, p.penalty_last_n, p.repeat_penalty,
                                                                    p.frequency_penalty, p.presence_penalty));
            llama_sampler_chain_add(c, llama_sampler_init_greedy());
            llama_token_data_array o = oracle_apply(c, l, n, hist, nh, buf);
            int32_t want = o.data[o.selected].id;
            int nmax = 0;
            for (size_t i = 0; i < o.size; i++)
                nmax += o.data[i].logit == o.data[o.selected].logit;
            t_check(name, got == want && nmax > 1, "q36 %d, llama %d (%d ids share the maximum)", got, want, nmax);
            llama_sampler_free(c);
            smp_free(s);
            free(l);
        }
    }
    free(buf);
}

/* ---- 3. distributions ------------------------------------------------------ */

/* Upper 0.999 quantile of chi-square with df degrees (Wilson-Hilferty). */
static double chi2_crit(int df)
{
    const double z = 3.090232;   /* standard normal 0.999 quantile */
    double h = 2.0 / (9.0 * df);
    double t = 1.0 - h + z * sqrt(h);
    return df * t * t * t;
}

/* Chi-square and the per-id bound of counts cnt (N draws) against p over n
 * ids. Returns true when both accept; why says what failed. */
static bool fit(const int32_t *cnt, const double *p, int32_t n, int N, double *chi2, int *df,
                char *why, size_t cap)
{
    double x = 0.0, rest_e = 0.0, rest_o = 0.0;
    int bins = 0;
    why[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        double e = N * p[i];
        if (p[i] == 0.0 && cnt[i] > 0) {
            snprintf(why, cap, "id %d drawn %d times, llama.cpp gives it p = 0", i, cnt[i]);
            return false;
        }
        if (fabs(cnt[i] - e) > 5.0 * sqrt(e * (1.0 - p[i])) + 1.0 && !why[0])
            snprintf(why, cap, "id %d: %d draws, expected %.1f (beyond 5 sd + 1)", i, cnt[i], e);
        if (e >= 5.0) {
            x += (cnt[i] - e) * (cnt[i] - e) / e;
            bins++;
        } else {
            rest_e += e;
            rest_o += cnt[i];
        }
    }
    if (rest_e >= 5.0) {
        x += (rest_o - rest_e) * (rest_o - rest_e) / rest_e;
        bins++;
    }
    *chi2 = x;
    *df = bins - 1;
    if (*df < 1) {
        snprintf(why, cap, "only %d bins", bins);
        return false;
    }
    if (x > chi2_crit(*df) && !why[0])
        snprintf(why, cap, "chi-square %.1f > %.1f (df %d, 0.999 quantile)", x, chi2_crit(*df), *df);
    return !why[0];
}

/* Exact probabilities of llama.cpp's chain for params p, in id order. */
static void oracle_probs(const smp_params *p, const float *l, int32_t n, const int32_t *hist, int nh,
                         double *out, llama_token_data *buf)
{
    struct llama_sampler *c = oracle_chain(p, n, false);
    llama_token_data_array o = oracle_apply(c, l, n, hist, nh, buf);
    for (int32_t i = 0; i < n; i++)
        out[i] = 0.0;
    for (size_t i = 0; i < o.size; i++)
        out[o.data[i].id] = o.data[i].p;
    llama_sampler_free(c);
}

static void dist_case(const char *name, int32_t n, float sd, smp_params p, bool pen, int N)
{
    t_rng r = t_rng_named(name);
    float *l = malloc((size_t)n * sizeof *l);
    for (int32_t i = 0; i < n; i++) {
        double u1 = t_uniform(&r) + 1e-7, u2 = t_uniform(&r);
        l[i] = (float)(sd * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    }
    int32_t hist[24];
    int nh = pen ? make_history(name, l, n, hist) : 0;
    llama_token_data *buf = malloc((size_t)n * sizeof *buf);
    double *prob = malloc((size_t)n * sizeof *prob);
    int32_t *cnt = calloc((size_t)n, sizeof *cnt);
    smp *s = NULL;
    q36_err err = { 0 };
    if (smp_new(&p, n, &s, &err)) {
        t_fail(name, "smp_new: %s", err.msg);
        goto done;
    }
    for (int i = 0; i < nh; i++)
        smp_accept(s, hist[i]);
    for (int i = 0; i < N; i++) {
        int32_t t = smp_sample(s, l, n);
        if (t < 0 || t >= n) {
            t_fail(name, "draw %d returned %d", i, t);
            goto done;
        }
        cnt[t]++;
    }
    oracle_probs(&p, l, n, hist, nh, prob, buf);
    double x;
    int df, support = 0;
    for (int32_t i = 0; i < n; i++)
        support += prob[i] > 0.0;
    char why[200];
    bool good = fit(cnt, prob, n, N, &x, &df, why, sizeof why);
    if (good)
        printf("# %s: %d draws over %d ids: chi-square %.1f, df %d, 0.999 quantile %.1f\n",
               name, N, support, x, df, chi2_crit(df));
    t_check(name, good, "%s", why);

    /* power: the same draws against llama.cpp at 1.3 times the temperature */
    char pname[160];
    snprintf(pname, sizeof pname, "%s/power", name);
    smp_params q = p;
    q.temp = p.temp * 1.3f;
    oracle_probs(&q, l, n, hist, nh, prob, buf);
    bool rej = !fit(cnt, prob, n, N, &x, &df, why, sizeof why);
    printf("# %s: chi-square %.1f (df %d, 0.999 quantile %.1f); %s\n", pname, x, df, chi2_crit(df), why);
    t_check(pname, rej, "draws at temp %g fit llama.cpp at temp %g (chi-square %.1f, df %d): the test has no power",
            (double)p.temp, (double)q.temp, x, df);
done:
    smp_free(s);
    free(cnt);
    free(prob);
    free(buf);
    free(l);
}

static void test_distributions(void)
{
    smp_params p = smp_defaults();
    p.seed = 20261129;
    dist_case("sampler/dist/defaults/n=1000", 1000, 2.0f, p, false, 20000);
    dist_case("sampler/dist/defaults+penalties/n=151936", 151936, 2.5f,
              (smp_params){ .temp = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f,
                            .repeat_penalty = 1.3f, .presence_penalty = 0.2f,
                            .frequency_penalty = 0.1f, .penalty_last_n = 64, .seed = 99 },
              true, 20000);
    smp_params f = smp_defaults();
    f.top_k = 0; f.top_p = 0.9f; f.min_p = 0.0f; f.temp = 1.2f; f.seed = 5;
    dist_case("sampler/dist/k0,p0.9,t1.2/n=1000", 1000, 1.0f, f, false, 20000);
    smp_params g = smp_defaults();
    g.top_k = 0; g.top_p = 1.0f; g.min_p = 0.0f; g.temp = 1.0f; g.seed = 6;
    dist_case("sampler/dist/full/n=10", 10, 1.0f, g, false, 20000);
}

/* ---- 4. seeds and reset ----------------------------------------------------- */

static void test_seeds(void)
{
    const int32_t n = 1000;
    float *l = make_logits("sampler/seeds", n, 0);
    smp_params p = smp_defaults();
    p.top_k = 0; p.top_p = 0.99f; p.min_p = 0.0f; p.temp = 1.5f;
    p.repeat_penalty = 1.3f; p.penalty_last_n = 16;
    smp *a = NULL, *b = NULL, *c = NULL;
    p.seed = 11;
    smp_new(&p, n, &a, NULL);
    smp_new(&p, n, &b, NULL);
    p.seed = 12;
    smp_new(&p, n, &c, NULL);
    if (!a || !b || !c) {
        t_fail("sampler/seeds", "smp_new failed");
        goto done;
    }
    int same_ab = 1, same_ac = 1;
    int32_t first[200];
    for (int i = 0; i < 200; i++) {
        int32_t x = smp_sample(a, l, n), y = smp_sample(b, l, n), z = smp_sample(c, l, n);
        same_ab &= x == y;
        same_ac &= x == z;
        first[i] = x;
        smp_accept(a, x); smp_accept(b, y); smp_accept(c, z);
    }
    t_check("sampler/seeds/equal", same_ab, "seed 11 twice gave different streams");
    t_check("sampler/seeds/differ", !same_ac, "seeds 11 and 12 gave the same 200 draws");
    smp_reset(a);
    int same = 1;
    for (int i = 0; i < 200; i++) {
        int32_t x = smp_sample(a, l, n);
        same &= x == first[i];
        smp_accept(a, x);
    }
    t_check("sampler/seeds/reset", same && smp_seed(a) == 11,
            "after smp_reset the stream differs from the first one");
    p.seed = SMP_SEED_RANDOM;
    smp *r = NULL;
    smp_new(&p, n, &r, NULL);
    t_check("sampler/seeds/random", r && smp_seed(r) != SMP_SEED_RANDOM, "random seed not drawn");
    smp_free(r);
done:
    smp_free(a);
    smp_free(b);
    smp_free(c);
    free(l);
}

/* smp_reset empties the window: same set as llama.cpp's chain after its reset. */
static void test_reset_window(void)
{
    const int32_t n = 1000;
    float *l = make_logits("sampler/reset-window", n, 0);
    int32_t hist[24];
    int nh = make_history("sampler/reset-window", l, n, hist);
    llama_token_data *buf = malloc((size_t)n * sizeof *buf);
    float *P = malloc((size_t)n * sizeof *P);
    smp_params p = neutral();
    p.top_k = 20; p.repeat_penalty = 2.0f;
    smp *s = NULL;
    smp_new(&p, n, &s, NULL);
    struct llama_sampler *c = oracle_chain(&p, n, false);
    for (int i = 0; i < nh; i++) {
        smp_accept(s, hist[i]);
        llama_sampler_accept(c, hist[i]);
    }
    smp_reset(s);
    llama_sampler_reset(c);
    for (int i = 0; i < 5; i++) {        /* a new short history after the reset */
        smp_accept(s, hist[i]);
        llama_sampler_accept(c, hist[i]);
    }
    const smp_cand *q;
    int32_t mq = smp_apply(s, l, n, &q);
    oracle_penalized(&p, l, n, hist, 5, P, buf);
    llama_token_data_array o = oracle_apply(c, l, n, NULL, 0, buf);
    compare_sets("sampler/reset/window", &p, n, P, q, mq, o);
    llama_sampler_free(c);
    smp_free(s);
    free(P);
    free(buf);
    free(l);
}

int main(void)
{
    llama_log_set(quiet_log, NULL);
    test_sets();
    test_top_p_exact();
    test_greedy();
    test_reset_window();
    test_seeds();
    test_distributions();
    printf("# %d cases passed with boundary ties (see the lines above)\n", n_boundary_ties);
    return t_exit();
}
