/* test_srv_pcache.c: the server's prefix cache (src/server/pcache.h) on an
 * engine of a tiny synth model (qwen35, exact mode): prompts that share
 * prefixes and differ at random edit points, restored from the cache into
 * random slots of 4 and evaluated to their end, give logits bit-identical
 * to the same prompts evaluated cold; state checkpoints every 8 tokens and
 * full ones at each prompt's end - 1 and end, under budgets small enough to
 * evict; the tree keeps its invariants (pcache_check) after every step; a
 * zero budget holds nothing; a budget too small for every state checkpoint
 * of two branches thins them evenly and keeps both branches' ends. Models are made with `$Q36 synth` (default
 * ./q36) in a temporary folder. */
#include "test.h"
#include "test_synth.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "include/q36.h"
#include "server/pcache.h"

enum { SLOTS = 4, CTX = 96, BATCH = 32, EVERY = 8, BASES = 3, ROUNDS = 60 };

static uint32_t rng = 12345;
static int rnd(int n)
{
    rng = rng * 1664525u + 1013904223u;
    return (int)((rng >> 8) % (uint32_t)n);
}

/* Evaluates ids[from..n) in slot and saves (when c is not NULL) at each
 * multiple of EVERY, at n - 1 (with the K/V rows) and at n: in chunks that
 * end at each of those (pcache_save after the pass), or with `inpass` in
 * chunks of BATCH rows that save inside (pcache_want, q36_engine_save_at,
 * pcache_put); the last token's logits into out. */
static int run(q36_engine *e, pcache *c, int slot, const int32_t *ids, int n, int from, float *out,
               bool inpass, q36_err *err)
{
    int32_t sl[BATCH], pos[BATCH], last;
    for (int p = from; p < n;) {
        int end = p + BATCH < n ? p + BATCH : n, at[BATCH], n_at = 0;
        q36_ckpt *ck[BATCH];
        for (int q = p + 1; q <= end && q < n; q++)
            if (q % EVERY == 0 || q == n - 1) {
                if (c && inpass) {
                    at[n_at] = q;
                    int rc = pcache_want(c, ids, q, q == n - 1, &ck[n_at], err);
                    if (!rc && ck[n_at])
                        rc = q36_engine_save_at(e, slot, q, ck[n_at], err);
                    n_at++;
                    if (rc)
                        return rc;
                } else if (q < end) {
                    end = q;
                    break;
                }
            }
        for (int k = p; k < end; k++) {
            sl[k - p] = slot;
            pos[k - p] = k;
        }
        last = end - p - 1;
        q36_batch b = { .n = end - p, .id = ids + p, .slot = sl, .pos = pos, .n_out = 1, .out = &last };
        int rc = q36_engine_eval(e, &b, out, NULL, err);
        for (int i = 0; i < n_at; i++) {        /* saved or not, the cache takes them back */
            q36_err e2 = { 0 };
            int rp = pcache_put(c, ids, at[i], at[i] == n - 1, ck[i], &e2);
            if (rp && !rc) {
                *err = e2;
                rc = rp;
            }
        }
        if (rc)
            return rc;
        p = end;
        if (c && !inpass && p < n && (rc = pcache_save(c, slot, ids, p, p == n - 1, err)))
            return rc;
    }
    return c ? pcache_save(c, slot, ids, n, true, err) : 0;
}

static void cache_case(const q36_model *m, uint64_t budget, bool inpass, const char *name)
{
    q36_engine_opts o = q36_engine_opts_default();
    o.n_slots = SLOTS;
    o.n_batch = BATCH;
    q36_engine *e = NULL;
    pcache *c = NULL;
    q36_err err = { 0 };
    char why[256];
    const int V = 200;                       /* ids drawn from the first V of the vocabulary */
    if (q36_engine_new(m, CTX, &o, &e, &err) || pcache_new(e, budget, &c, &err)) {
        t_fail(name, "setup: %s", err.msg);
        q36_engine_free(e);
        return;
    }
    int n_voc = q36_engine_n_vocab(e);
    float *hot = malloc((size_t)n_voc * sizeof *hot), *cold = malloc((size_t)n_voc * sizeof *cold);
    int32_t base[BASES][CTX], ids[CTX];
    for (int b = 0; b < BASES; b++)
        for (int i = 0; i < CTX; i++)
            base[b][i] = i < 20 ? 7 + i : rnd(V);    /* a shared head of 20 tokens */
    int restored = 0, reused = 0;
    for (int r = 0; r < ROUNDS; r++) {
        const int b = rnd(BASES), n = 24 + rnd(CTX - 24);
        memcpy(ids, base[b], sizeof ids);
        if (rnd(4)) {                            /* an edit at a random point, or none */
            int at = rnd(n);
            ids[at] = (ids[at] + 1 + rnd(V - 1)) % V;
        }
        const int slot = rnd(SLOTS);
        int d = pcache_restore(c, slot, ids, n, n - 1, &err);
        if (d < 0 || q36_slot_pos(e, slot) != d) {
            t_fail(name, "round %d: restore gave %d (%s), slot at %d", r, d, err.msg, q36_slot_pos(e, slot));
            goto done;
        }
        restored += d > 0;
        reused += d;
        int cs = (slot + 1 + rnd(SLOTS - 1)) % SLOTS; /* the cold run: another slot, from 0 */
        q36_slot_reset(e, cs);
        if (run(e, c, slot, ids, n, d, hot, inpass, &err) || run(e, NULL, cs, ids, n, 0, cold, false, &err)) {
            t_fail(name, "round %d: %s", r, err.msg);
            goto done;
        }
        if (memcmp(hot, cold, (size_t)n_voc * sizeof *hot)) {
            t_fail(name, "round %d: %d tokens, %d restored: logits differ from the cold run", r, n, d);
            goto done;
        }
        if (pcache_check(c, why, sizeof why)) {
            t_fail(name, "round %d: %s", r, why);
            goto done;
        }
    }
    pcache_stats st;
    pcache_get_stats(c, &st);
    if (budget && (!restored || (budget < (64u << 20) && !st.evictions)))
        t_fail(name, "%d restores (%d tokens), %llu evictions: the case did not exercise the cache", restored,
               reused, (unsigned long long)st.evictions);
    else if (!budget && (restored || st.ckpts))
        t_fail(name, "a zero budget restored %d times and holds %d checkpoints", restored, st.ckpts);
    else
        t_ok(name);
    printf("# %s: %d of %d rounds restored, %d tokens reused, %d checkpoints held, %llu evicted, %llu bytes\n",
           name, restored, ROUNDS, reused, st.ckpts, (unsigned long long)st.evictions, (unsigned long long)st.bytes);
done:
    free(hot);
    free(cold);
    pcache_free(c);
    q36_engine_free(e);
}

/* The largest gap between checkpoints on the path of ids[0..n), from 0. */
static int max_gap(const pcache *c, const int32_t *ids, int n)
{
    int last = 0, gap = 0;
    for (int p = 1; p <= n; p++)
        if (pcache_has(c, ids, p)) {
            gap = p - last > gap ? p - last : gap;
            last = p;
        }
    return n - last > gap ? n - last : gap;
}

/* Two branches of CTX tokens, state checkpoints every EVERY, under a budget
 * that holds the four full checkpoints of their ends and 6 state ones: the
 * second branch's saves thin state checkpoints (the smallest gap first)
 * instead of evicting the first branch; both ends stay, no branch loses
 * all its state checkpoints, and an edit in the first one restores from
 * at most 48 tokens before it and gives the cold run's logits. */
static void thin_case(const q36_model *m, uint64_t state, uint64_t row)
{
    const char *name = "pcache_thins_before_evicting_a_branch";
    q36_engine_opts o = q36_engine_opts_default();
    o.n_slots = SLOTS;
    o.n_batch = BATCH;
    q36_engine *e = NULL;
    pcache *c = NULL;
    q36_err err = { 0 };
    char why[256];
    const uint64_t budget = 4 * (state + CTX * row) + 6 * state + 4096;
    if (q36_engine_new(m, CTX, &o, &e, &err) || pcache_new(e, budget, &c, &err)) {
        t_fail(name, "setup: %s", err.msg);
        q36_engine_free(e);
        return;
    }
    int n_voc = q36_engine_n_vocab(e);
    float *hot = malloc((size_t)n_voc * sizeof *hot), *cold = malloc((size_t)n_voc * sizeof *cold);
    int32_t a[CTX], b[CTX];
    for (int i = 0; i < CTX; i++) {
        a[i] = i ? rnd(200) : 1;
        b[i] = i ? rnd(200) : 2;
    }
    pcache_stats st;
    if (run(e, c, 0, a, CTX, 0, hot, false, &err) || run(e, c, 1, b, CTX, 0, hot, false, &err)) {
        t_fail(name, "%s", err.msg);
        goto done;
    }
    pcache_get_stats(c, &st);
    int ga = max_gap(c, a, CTX), gb = max_gap(c, b, CTX);
    if (pcache_check(c, why, sizeof why))
        t_fail(name, "%s", why);
    else if (!pcache_has(c, a, CTX) || !pcache_has(c, a, CTX - 1) || !pcache_has(c, b, CTX) || st.evictions ||
             !st.thinned)
        t_fail(name, "first branch's ends held: %d %d, second's %d; %llu evicted, %llu thinned",
               pcache_has(c, a, CTX), pcache_has(c, a, CTX - 1), pcache_has(c, b, CTX),
               (unsigned long long)st.evictions, (unsigned long long)st.thinned);
    else if (ga > 48 || gb > 48)
        t_fail(name, "gaps between checkpoints up to %d and %d tokens after thinning", ga, gb);
    else {
        a[60] = (a[60] + 1) % 200;
        int d = pcache_restore(c, 2, a, CTX, CTX - 1, &err);
        q36_slot_reset(e, 3);
        if (d < 60 - 48 || d > 60)
            t_fail(name, "an edit at 60 restored depth %d (%s)", d, err.msg);
        else if (run(e, NULL, 2, a, CTX, d, hot, false, &err) || run(e, NULL, 3, a, CTX, 0, cold, false, &err))
            t_fail(name, "%s", err.msg);
        else if (memcmp(hot, cold, (size_t)n_voc * sizeof *hot))
            t_fail(name, "restored at %d after thinning: logits differ from the cold run", d);
        else
            t_ok(name);
        printf("# %s: %d checkpoints held, %llu thinned, gaps up to %d and %d, an edit at 60 restored %d\n", name,
               st.ckpts, (unsigned long long)st.thinned, ga, gb, d);
    }
done:
    free(hot);
    free(cold);
    pcache_free(c);
    q36_engine_free(e);
}

int main(void)
{
    char dir[] = "/tmp/q36-pcache-XXXXXX", path[512];
    if (!mkdtemp(dir)) {
        t_fail("pcache.setup", "mkdtemp failed");
        return t_exit();
    }
    q36_model *m = NULL;
    q36_err err = { 0 };
    if (t_synth_model(dir, "dense", "--arch qwen35 --preset tiny --seed 3", path, sizeof path) ||
        q36_model_open(path, &m, &err)) {
        t_fail("pcache.setup", "synth model: %s", err.msg[0] ? err.msg : "q36 synth failed");
    } else {
        q36_engine_opts o = q36_engine_opts_default();
        o.n_slots = SLOTS;
        o.n_batch = BATCH;
        q36_engine *e = NULL;
        uint64_t state = 0, row = 0;
        if (!q36_engine_new(m, CTX, &o, &e, &err)) {
            state = q36_ckpt_bytes(e, 0);
            row = q36_ckpt_bytes(e, 1) - state;
        }
        q36_engine_free(e);
        cache_case(m, 1u << 30, false, "pcache_cached_equals_cold");
        /* room for a few full checkpoints and some state ones: evicts */
        cache_case(m, 6 * (state + CTX * row) + 4096, false, "pcache_cached_equals_cold_evicting");
        cache_case(m, 0, false, "pcache_zero_budget_holds_nothing");
        /* the same with the checkpoints made inside passes of BATCH rows */
        cache_case(m, 1u << 30, true, "pcache_inpass_cached_equals_cold");
        cache_case(m, 6 * (state + CTX * row) + 4096, true, "pcache_inpass_cached_equals_cold_evicting");
        thin_case(m, state, row);
    }
    q36_model_free(m);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) {
    }
    return t_exit();
}
