/* test_srv_guard.c: the server's choice of whether a step drafts
 * (src/server/spec_guard.h), on made-up timings: a bucket measures
 * SPEC_GUARD_WARM steps drafting, then as many plain, then takes the
 * faster way with SPEC_GUARD_RUN steps of the other every
 * SPEC_GUARD_EXPLORE (a drafting step after a plain one not reported, as
 * sched.c does); buckets
 * of different slot counts choose apart; a change of speed turns it; steps
 * without tokens teach nothing; the average is per token over the steps;
 * the counts add up. */
#include "test.h"

#include "server/spec_guard.h"

/* n decisions of bucket n_dec, each step taking the seconds per token of
 * its way; returns how many drafted */
static int run(spec_guard *g, int n_dec, int n, double spt_draft, double spt_plain)
{
    int drafted = 0, prev = -1;
    for (int i = 0; i < n; i++) {
        const bool d = spec_guard_draft(g, n_dec);
        drafted += d;
        const int tokens = d ? 3 * n_dec : n_dec;
        if (!(d && prev == 0))      /* as sched.c: a catch-up step is not reported */
            spec_guard_done(g, n_dec, d, tokens, tokens * (d ? spt_draft : spt_plain));
        prev = d;
    }
    return drafted;
}

int main(void)
{
    spec_guard *g = spec_guard_new(4);
    if (!g) {
        t_fail("guard.new", "out of memory");
        return t_exit();
    }
    /* warm-up: WARM drafting, then WARM plain, whatever the speeds */
    int d = run(g, 4, 2 * SPEC_GUARD_WARM, 2e-3, 1e-3);
    t_check("guard.warm_up_both_ways", d == SPEC_GUARD_WARM, "%d of %d warm-up steps drafted", d,
            2 * SPEC_GUARD_WARM);
    /* 4 slots: plain is faster: drafts only to explore */
    d = run(g, 4, 10 * SPEC_GUARD_EXPLORE, 2e-3, 1e-3);
    t_check("guard.plain_when_faster", d == 10 * SPEC_GUARD_RUN,
            "%d of %d steps drafted (10 runs of %d)", d, 10 * SPEC_GUARD_EXPLORE, SPEC_GUARD_RUN);
    /* 1 slot: its own bucket, drafting faster */
    d = run(g, 1, 2 * SPEC_GUARD_WARM + 5 * SPEC_GUARD_EXPLORE, 0.5e-3, 1e-3);
    t_check("guard.draft_when_faster",
            d == SPEC_GUARD_WARM + 5 * SPEC_GUARD_EXPLORE - 5 * SPEC_GUARD_RUN,
            "%d steps drafted", d);
    /* 4 slots again, now drafting the faster (acceptance rose): the
     * explorations move its average until it turns */
    d = run(g, 4, 40 * SPEC_GUARD_EXPLORE, 0.4e-3, 1e-3);
    t_check("guard.turns_when_speeds_change", d > 35 * SPEC_GUARD_EXPLORE,
            "%d of %d steps drafted after drafting became the faster", d, 40 * SPEC_GUARD_EXPLORE);
    /* slot counts past the buckets share the last; no tokens: nothing learnt */
    spec_guard *h = spec_guard_new(2);
    int dh = 0;
    for (int i = 0; i < 3 * SPEC_GUARD_WARM; i++) {
        const bool x = spec_guard_draft(h, 9);
        dh += x;
        spec_guard_done(h, 9, x, 0, 1.0);
    }
    t_check("guard.no_tokens_no_measure", h && dh == 3 * SPEC_GUARD_WARM,
            "%d of %d steps drafted while nothing was measured", dh, 3 * SPEC_GUARD_WARM);
    /* per token over the steps, not the steps' own ratios: drafting steps
     * of 1 token (every draft missed) and of 5, 2 ms each, make 0.67 ms a
     * token against plain's 1 ms (the steps' ratios average 1.2 ms) */
    spec_guard *q = spec_guard_new(3);
    int dq = 0;
    for (int i = 0; q && i < 2 * SPEC_GUARD_WARM + 4 * SPEC_GUARD_EXPLORE; i++) {
        const bool x = spec_guard_draft(q, 3);
        dq += x;
        if (x)
            spec_guard_done(q, 3, true, i % 2 ? 1 : 5, 2e-3);
        else
            spec_guard_done(q, 3, false, 1, 1e-3);
    }
    t_check("guard.per_token_over_steps",
            q && dq == SPEC_GUARD_WARM + 4 * SPEC_GUARD_EXPLORE - 4 * SPEC_GUARD_RUN,
            "%d steps drafted", dq);
    spec_guard_free(q);
    uint64_t plain = 0, drafted = 0;
    spec_guard_counts(g, &plain, &drafted);
    const uint64_t total = 2 * SPEC_GUARD_WARM + 10 * SPEC_GUARD_EXPLORE + 2 * SPEC_GUARD_WARM +
                           5 * SPEC_GUARD_EXPLORE + 40 * SPEC_GUARD_EXPLORE;
    t_check("guard.counts", plain + drafted == total, "%llu + %llu of %llu",
            (unsigned long long)plain, (unsigned long long)drafted, (unsigned long long)total);
    spec_guard_free(g);
    spec_guard_free(h);
    spec_guard_free(NULL);
    return t_exit();
}
