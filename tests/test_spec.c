/* test_spec.c: MTP speculative decoding (src/spec/spec.h, q36_mtp_eval).
 *
 * - exact mode: the tokens generated with drafts (--draft-max 1, 3, 5)
 *   are the plain decoder's, greedy and at temperature 0.8 with the same
 *   seed, also when the context fills up at any phase of a round, and the
 *   slot ends with the same logits bits, on q36 synth models
 *   with an MTP block (qwen35, qwen35moe; random weights accept little, so
 *   the rollback path runs nearly every round) and on the trained default
 *   model (build/default.gguf, skipped when absent), where acceptance must
 *   also be high (a wrong MTP block accepts almost nothing);
 * - every round's drafts are the ones a plain reference computes at its
 *   position: the trunk over the final sequence, the MTP rows (y_j, h_{j-1})
 *   up to the round's position in one clean pass, drafts chained from
 *   there (so catch-up after kept and rejected drafts is right);
 * - the MTP pass is batch invariant: rows evaluated in one pass equal the
 *   rows evaluated one pass each;
 * - spec_accept, the general speculative-sampling rule, leaves the output
 *   distributed as the target: chi-square over 200,000 seeded draws on
 *   6-token distributions.
 * Synth models are made with `$Q36 synth` (default ./q36). */
#include "test.h"
#include "topk_case.h"
#include "test_synth.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "include/q36.h"
#include "gen/gen.h"
#include "model/model.h"
#include "spec/spec.h"
#include "tokenizer/tok.h"

enum { CTX = 512, MAXGEN = 512 };

static float g_p_min;      /* --draft-p-min of the drafted runs */
static bool  g_rewind;     /* --draft-rollback states */
static bool  g_device;     /* gen_params.device_greedy, both runs */

typedef struct {
    int32_t ids[MAXGEN];
    int     n;
} collect;

static int on_token(void *user, const gen_token *t)
{
    collect *c = user;
    if (t->id >= 0 && c->n < MAXGEN)
        c->ids[c->n++] = t->id;
    return 0;
}

typedef struct {
    collect out;
    float  *logits;          /* the row after the reply */
    spec_stats st;
} result;

/* Prompt + n_gen tokens with sampling params sp: plain (k = 0) or with k
 * drafts and a draft vocabulary of dv ids (0: all). */
static bool generate(const q36_model *m, const tok_vocab *tv, const int32_t *prompt, int n_prompt,
                     int n_gen, float temp, int k, int dv, int n_ctx, result *r, const char *name)
{
    q36_engine_opts o = q36_engine_opts_default();
    o.mtp = k > 0;
    o.n_keep = k > 0 && g_rewind ? k + 1 : 0;
    q36_engine *e = NULL;
    q36_session *s = NULL;
    spec *sp = NULL;
    gen *g = NULL;
    q36_err err = { 0 };
    memset(r, 0, sizeof *r);
    const int V = (int)q36_model_hparams(m)->n_vocab;
    r->logits = malloc((size_t)V * sizeof *r->logits);
    gen_params gp = gen_params_default();
    gp.n_predict = n_gen;
    gp.smp.temp = temp;
    gp.smp.seed = 1234;
    gp.device_greedy = g_device;
    int rc = q36_engine_new(m, n_ctx, &o, &e, &err);
    if (!rc)
        rc = gen_new(&gp, tv, V, &g, &err);
    gen_result res = { 0 };
    if (!rc && k == 0) {
        rc = q36_session_open(e, 0, &s, &err);
        if (!rc)
            rc = q36_session_append(s, prompt, n_prompt, r->logits, Q36_LOGITS_LAST, &err);
        if (!rc)
            rc = gen_run(g, s, r->logits, NULL, on_token, &r->out, &res, &err);
    } else if (!rc) {
        rc = spec_new(e, 0, k, &sp, &err);
        if (!rc)
            rc = q36_mtp_draft_vocab(e, dv, &err);
        if (!rc)
            spec_set_p_min(sp, g_p_min);
        if (!rc)
            spec_set_rewind(sp, g_rewind);
        if (!rc)
            rc = spec_prefill(sp, prompt, n_prompt, r->logits, &err);
        if (!rc)
            rc = spec_run(sp, g, r->logits, NULL, on_token, &r->out, &res, &err);
        if (!rc)
            r->st = *spec_get_stats(sp);
    }
    if (rc)
        t_fail(name, "%s", err.msg);
    spec_free(sp);
    q36_session_free(s);
    gen_free(g);
    q36_engine_free(e);
    return rc == 0;
}

/* Plain vs drafted generation, token for token and the last logits bit
 * for bit. Returns the drafted run's acceptance (accepted / drafted). */
static double same_tokens_ctx(const q36_model *m, const tok_vocab *tv, const int32_t *prompt,
                              int np, int n_gen, float temp, int k, int dv, int n_ctx,
                              const char *tag)
{
    char name[160];
    char cx[32] = "";
    if (n_ctx < CTX)
        snprintf(cx, sizeof cx, ".ctx%d_full", n_ctx);
    if (g_p_min > 0)
        snprintf(cx + strlen(cx), sizeof cx - strlen(cx), ".pmin%.1f", g_p_min);
    if (g_rewind)
        snprintf(cx + strlen(cx), sizeof cx - strlen(cx), ".rewind");
    if (g_device)
        snprintf(cx + strlen(cx), sizeof cx - strlen(cx), ".device");
    snprintf(name, sizeof name, "spec.%s.t%.1f.k%d.dv%d%s", tag, temp, k, dv, cx);
    result a, b;
    double acc = -1;
    if (generate(m, tv, prompt, np, n_gen, temp, 0, 0, n_ctx, &a, name) &&
        generate(m, tv, prompt, np, n_gen, temp, k, dv, n_ctx, &b, name)) {
        const int V = (int)q36_model_hparams(m)->n_vocab;
        int first = -1;
        for (int i = 0; i < a.out.n && i < b.out.n && first < 0; i++)
            if (a.out.ids[i] != b.out.ids[i])
                first = i;
        acc = b.st.drafted ? (double)b.st.accepted / b.st.drafted : 0;
        if (a.out.n != b.out.n || first >= 0)
            t_fail(name, "plain made %d tokens, drafted %d; first difference at %d", a.out.n,
                   b.out.n, first);
        else if (memcmp(a.logits, b.logits, (size_t)V * sizeof *a.logits))
            t_fail(name, "same %d tokens but the logits after them differ", a.out.n);
        else {
            printf("# %s: %d tokens, %lld passes, acceptance %.3f, %lld replays, %lld rewinds\n",
                   name, a.out.n, (long long)b.st.rounds, acc, (long long)b.st.replays,
                   (long long)b.st.rewinds);
            t_ok(name);
        }
    }
    free(a.logits);
    free(b.logits);
    return acc;
}

static double same_tokens(const q36_model *m, const tok_vocab *tv, const int32_t *prompt, int np,
                          int n_gen, float temp, int k, int dv, const char *tag)
{
    return same_tokens_ctx(m, tv, prompt, np, n_gen, temp, k, dv, CTX, tag);
}

/* ------------------------------------------------ drafts against a reference */

enum { MAXROUND = 256 };
typedef struct {
    collect out;
    spec   *sp;
    int     n;
    int32_t pos[MAXROUND], k[MAXROUND], d[MAXROUND][SPEC_MAX_DRAFT];
} rounds;

static int on_token_round(void *user, const gen_token *t)
{
    rounds *r = user;
    on_token(&r->out, t);
    int32_t P;
    const int32_t *d;
    const int k = spec_round(r->sp, &P, &d);
    if (k > 0 && r->n < MAXROUND && (r->n == 0 || r->pos[r->n - 1] != P)) {
        r->pos[r->n] = P;
        r->k[r->n] = k;
        memcpy(r->d[r->n], d, (size_t)k * sizeof *d);
        r->n++;
    }
    return 0;
}

static void drafts_reference(const q36_model *m, const tok_vocab *tv, const int32_t *prompt,
                             int np, int n_gen, int k, int dv, const char *tag)
{
    char name[128];
    snprintf(name, sizeof name, "spec.%s.drafts_match_reference.k%d.dv%d%s%s", tag, k, dv,
             g_p_min > 0 ? ".pmin" : "", g_rewind ? ".rewind" : "");
    q36_engine_opts o = q36_engine_opts_default();
    o.mtp = 1;
    o.n_keep = g_rewind ? k + 1 : 0;
    q36_engine *e = NULL, *r = NULL;
    gen *g = NULL;
    q36_err err = { 0 };
    rounds *R = calloc(1, sizeof *R);
    const int V = (int)q36_model_hparams(m)->n_vocab, D = (int)q36_model_hparams(m)->n_embd;
    float *logits = malloc((size_t)V * sizeof *logits), *lg = malloc((size_t)V * sizeof *lg);
    float *mh = malloc((size_t)D * sizeof *mh);
    float *h = calloc((size_t)(np + n_gen + 2) * D, sizeof *h);
    int32_t *y = malloc((size_t)(np + n_gen + 2) * sizeof *y);
    gen_params gp = gen_params_default();
    gp.n_predict = n_gen;
    gp.smp.temp = 0.0f;
    int rc = q36_engine_new(m, CTX, &o, &e, &err);
    if (!rc)
        rc = q36_engine_new(m, CTX, &o, &r, &err);
    if (!rc)
        rc = q36_mtp_draft_vocab(e, dv, &err);
    if (!rc)
        rc = q36_mtp_draft_vocab(r, dv, &err);
    if (!rc)
        rc = gen_new(&gp, tv, V, &g, &err);
    if (!rc)
        rc = spec_new(e, 0, k, &R->sp, &err);
    if (!rc)
        spec_set_p_min(R->sp, g_p_min);
    if (!rc)
        spec_set_rewind(R->sp, g_rewind);
    if (!rc)
        rc = spec_prefill(R->sp, prompt, np, logits, &err);
    gen_result res = { 0 };
    if (!rc)
        rc = spec_run(R->sp, g, logits, NULL, on_token_round, R, &res, &err);
    /* the reference: the trunk over prompt + reply (h row j+1 = hidden of j) */
    const int N = np + R->out.n;
    memcpy(y, prompt, (size_t)np * sizeof *y);
    memcpy(y + np, R->out.ids, (size_t)R->out.n * sizeof *y);
    int32_t slot[CTX] = { 0 }, pos[CTX], out[CTX];
    for (int i = 0; i < N; i++)
        pos[i] = i, out[i] = i;
    if (!rc) {
        const q36_batch b = { N, y, slot, pos, N, out };
        rc = q36_engine_eval(r, &b, NULL, h + D, &err);
    }
    const int32_t *vid;
    const int nv = rc ? 0 : q36_mtp_vocab(r, &vid);
    int bad = -1, checked = 0;
    for (int i = 0; i < R->n && !rc && bad < 0; i++) {
        const int P = R->pos[i];
        if (P >= N)
            break;
        q36_slot_reset(r, 0);      /* MTP position back to 0: the rows rewritten clean */
        const int32_t last = P;
        const q36_batch b = { P + 1, y, slot, pos, 1, &last };
        rc = q36_mtp_eval(r, &b, h, Q36_MTP_H_TRUNK, lg, mh, &err);
        for (int j = 0; j < R->k[i] && !rc && bad < 0; j++) {
            int32_t best = 0;
            for (int v = 1; v < nv; v++)
                if (lg[v] > lg[best])
                    best = v;
            const int32_t d = vid ? vid[best] : best;
            if (d != R->d[i][j])
                bad = i;
            const int32_t dp = P + 1 + j, z = 0;
            const q36_batch b1 = { 1, &d, slot, &dp, 1, &z };
            if (j + 1 < R->k[i])
                rc = q36_mtp_eval(r, &b1, mh, Q36_MTP_H_MTP, lg, mh, &err);
        }
        checked++;
    }
    if (rc)
        t_fail(name, "%s", err.msg);
    else if (bad >= 0)
        t_fail(name, "round %d at position %d: drafts differ from the reference", bad,
               R->pos[bad]);
    else
        t_check(name, checked > 3, "only %d rounds checked", checked);
    spec_free(R->sp);
    gen_free(g);
    q36_engine_free(e);
    q36_engine_free(r);
    free(R), free(logits), free(lg), free(mh), free(h), free(y);
}

/* Kept per-row states: a rewind to row r equals the slot after only r rows
 * (the next row's logits, bit for bit); the refusals. */
static void keep_api(const q36_model *m, const char *tag)
{
    char name[128];
    q36_engine_opts o = q36_engine_opts_default();
    o.n_keep = 6;
    o.n_slots = 2;
    q36_engine *e = NULL;
    q36_err err = { 0 };
    snprintf(name, sizeof name, "spec.%s.rewind_equals_shorter_pass", tag);
    if (q36_engine_new(m, 64, &o, &e, &err)) {
        t_fail(name, "%s", err.msg);
        return;
    }
    const int V = q36_engine_n_vocab(e);
    int32_t ids[8] = { 5, 9, 2, 11, 7, 3, 8, 1 }, sl0[8] = { 0 }, sl1[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
    int32_t pos[8], z = 0;
    for (int i = 0; i < 8; i++)
        pos[i] = i;
    float *a = malloc((size_t)V * sizeof *a), *b = malloc((size_t)V * sizeof *b);
    bool same = true;
    int rc = 0;
    for (int r = 1; r <= 6 && !rc; r++) {
        q36_slot_reset(e, 0);
        q36_slot_reset(e, 1);
        /* slot 0: 2 rows, then 6 rows kept, rewound to r, then one more row;
         * slot 1: the same 2 + r rows plainly, then the same row */
        const q36_batch p2 = { 2, ids, sl0, pos, 0, &z }, p6 = { 6, ids + 2, sl0, pos + 2, 0, &z };
        const q36_batch q = { 2 + r, ids, sl1, pos, 0, &z };
        const int32_t nx = 4, np = 2 + r;
        const q36_batch n0 = { 1, &nx, sl0, &np, 1, &z }, n1 = { 1, &nx, sl1, &np, 1, &z };
        rc = q36_engine_eval(e, &p2, NULL, NULL, &err);
        if (!rc)
            rc = q36_engine_keep_states(e, 0, &err);
        if (!rc)
            rc = q36_engine_eval(e, &p6, NULL, NULL, &err);
        if (!rc)
            rc = q36_slot_rewind(e, 0, r, &err);
        if (!rc)
            rc = q36_engine_eval(e, &n0, a, NULL, &err);
        if (!rc)
            rc = q36_engine_eval(e, &q, NULL, NULL, &err);
        if (!rc)
            rc = q36_engine_eval(e, &n1, b, NULL, &err);
        same &= !rc && !memcmp(a, b, (size_t)V * sizeof *a);
    }
    if (rc)
        t_fail(name, "%s", err.msg);
    else
        t_check(name, same, "the row after a rewind differs from the row after a shorter pass");
    /* refusals: rewind after a pass that kept nothing; a kept pass without the slot's rows
     * or with more rows than n_keep; rows outside the pass */
    snprintf(name, sizeof name, "spec.%s.keep_refusals", tag);
    q36_slot_reset(e, 0);
    q36_slot_reset(e, 1);
    const q36_batch other = { 3, ids, sl1, pos, 0, &z }, big = { 7, ids, sl0, pos, 0, &z };
    const q36_batch three = { 3, ids, sl0, pos, 0, &z };
    bool ok = q36_slot_rewind(e, 0, 1, &err) == Q36_E_ARG;
    ok &= !q36_engine_keep_states(e, 0, &err) && q36_engine_eval(e, &other, NULL, NULL, &err) == Q36_E_ARG;
    ok &= !q36_engine_keep_states(e, 0, &err) && q36_engine_eval(e, &big, NULL, NULL, &err) == Q36_E_ARG;
    ok &= q36_slot_pos(e, 0) == 0 && q36_slot_pos(e, 1) == 0;
    ok &= !q36_engine_keep_states(e, 0, &err) && !q36_engine_eval(e, &three, NULL, NULL, &err);
    ok &= q36_slot_rewind(e, 0, 4, &err) == Q36_E_ARG && q36_slot_rewind(e, 0, 0, &err) == Q36_E_ARG;
    ok &= !q36_slot_rewind(e, 0, 2, &err) && q36_slot_pos(e, 0) == 2;
    /* a rewind is good once: the state after it is the slot's own */
    ok &= q36_slot_rewind(e, 0, 1, &err) == Q36_E_ARG;
    t_check(name, ok, "a refusal was not refused, or a good call failed: %s", err.msg);
    free(a), free(b);
    q36_engine_free(e);
}

/* Several slots keep their states in one pass beside a slot that keeps
 * nothing (the server's verify rows beside a prompt chunk): each kept slot
 * rewound to its own row gives the next row's logits bit for bit as a
 * plain pass of that many rows; the slot beside them is as if alone. The
 * plain slot's run comes between the kept ones, or (even rounds) after
 * both: then the two kept runs lead the pass and take the keeping ops
 * together (rewind.c: keep_lead_b). In rounds 3 and 4 the plain slot
 * reads one row (a decode row of a slot that drafts nothing): it joins the
 * leading runs wherever it stands, and with it between them every run of
 * the pass leads (deltanet.c: be_deltanet_gated_keep). */
static void keep_multi(const q36_model *m, const char *tag)
{
    char name[128];
    snprintf(name, sizeof name, "spec.%s.keep_several_slots_one_pass", tag);
    q36_engine_opts o = q36_engine_opts_default();
    o.n_keep = 5;
    o.n_slots = 4;
    q36_engine *e = NULL;
    q36_err err = { 0 };
    if (q36_engine_new(m, 64, &o, &e, &err)) {
        t_fail(name, "%s", err.msg);
        return;
    }
    const int V = q36_engine_n_vocab(e);
    const int32_t A[7] = { 5, 9, 2, 11, 7, 3, 8 }, B[7] = { 4, 6, 1, 13, 2, 2, 10 };
    const int32_t C[9] = { 3, 1, 4, 1, 5, 9, 2, 6, 5 }, nx = 12, z = 0;
    float *got = malloc(3 * (size_t)V * sizeof *got), *want = malloc((size_t)V * sizeof *want);
    int32_t id[32], sl[32], pos[32];
    bool same = true;
    int rc = 0;
    for (int r = 1; r <= 5 && !rc; r++) {
        const int ra = r, rb = 6 - r;     /* slot 0 rewinds to ra rows, slot 2 to rb */
        for (int s = 0; s < 4; s++)
            q36_slot_reset(e, s);
        /* 2 rows of A in slot 0 and of B in slot 2 first */
        int n = 0;
        for (int i = 0; i < 2; i++, n++)
            id[n] = A[i], sl[n] = 0, pos[n] = i;
        for (int i = 0; i < 2; i++, n++)
            id[n] = B[i], sl[n] = 2, pos[n] = i;
        q36_batch b = { n, id, sl, pos, 0, &z };
        rc = q36_engine_eval(e, &b, NULL, NULL, &err);
        /* one pass: slot 2 keeps 5 rows, slot 1 reads nc (9, or 1 in rounds
         * 3 and 4) plainly, slot 0 keeps 5 (even rounds: slot 1 last) */
        const int nc = r == 3 || r == 4 ? 1 : 9;
        n = 0;
        for (int i = 2; i < 7; i++, n++)
            id[n] = B[i], sl[n] = 2, pos[n] = i;
        for (int i = 0; i < nc && r % 2; i++, n++)
            id[n] = C[i], sl[n] = 1, pos[n] = i;
        for (int i = 2; i < 7; i++, n++)
            id[n] = A[i], sl[n] = 0, pos[n] = i;
        for (int i = 0; i < nc && !(r % 2); i++, n++)
            id[n] = C[i], sl[n] = 1, pos[n] = i;
        b.n = n;
        if (!rc)
            rc = q36_engine_keep_states(e, 0, &err);
        if (!rc)
            rc = q36_engine_keep_states(e, 2, &err);
        if (!rc)
            rc = q36_engine_eval(e, &b, NULL, NULL, &err);
        if (!rc)
            rc = q36_slot_rewind(e, 0, ra, &err);
        if (!rc)
            rc = q36_slot_rewind(e, 2, rb, &err);
        if (!rc && q36_slot_rewind(e, 1, 1, &err) != Q36_E_ARG)
            rc = q36_err_set(&err, Q36_E_ARG, "slot 1 kept nothing, yet it rewound");
        err = (q36_err){ 0 };
        /* the next row of each slot */
        const int sls[3] = { 0, 1, 2 }, np[3] = { 2 + ra, nc, 2 + rb };
        for (int k = 0; k < 3 && !rc; k++) {
            const q36_batch nb = { 1, &nx, &sls[k], &np[k], 1, &z };
            rc = q36_engine_eval(e, &nb, got + (size_t)k * V, NULL, &err);
        }
        /* references: slot 3, each sequence alone from position 0 */
        const int32_t *seqs[3] = { A, C, B };
        for (int k = 0; k < 3 && !rc; k++) {
            q36_slot_reset(e, 3);
            int32_t s3[16], p3[16];
            for (int i = 0; i < np[k]; i++)
                s3[i] = 3, p3[i] = i;
            const q36_batch rb3 = { np[k], seqs[k], s3, p3, 0, &z };
            const q36_batch nb = { 1, &nx, s3, &np[k], 1, &z };
            rc = q36_engine_eval(e, &rb3, NULL, NULL, &err);
            if (!rc)
                rc = q36_engine_eval(e, &nb, want, NULL, &err);
            same &= !rc && !memcmp(got + (size_t)k * V, want, (size_t)V * sizeof *want);
        }
    }
    if (rc)
        t_fail(name, "%s", err.msg);
    else
        t_check(name, same, "a slot's next row after the shared kept pass differs from its "
                "row after a plain pass of the same rows");
    free(got), free(want);
    q36_engine_free(e);
}

/* q36_mtp_eval_argmax over the batch `all` (positions from 0 again) gives
 * spec_argmax of each row of la (nv columns) and the hidden rows ha */
static void mtp_argmax_same(q36_engine *e, const q36_batch *all, const float *h, const float *la,
                            const float *ha, int nv, int D, const char *name)
{
    int32_t best[16];
    float *hc = malloc((size_t)all->n_out * D * sizeof *hc);
    q36_err err = { 0 };
    int bad = 0;
    int rc = all->n_out > 16 ? q36_err_set(&err, Q36_E_ARG, "too many rows") :
             q36_mtp_eval_argmax(e, all, h, Q36_MTP_H_TRUNK, best, hc, &err);
    for (int i = 0; i < all->n_out && !rc; i++)
        bad += best[i] != spec_argmax(la + (int64_t)i * nv, nv);
    if (rc)
        t_fail(name, "%s", err.msg);
    else
        t_check(name, !bad && !memcmp(hc, ha, (size_t)all->n_out * D * sizeof *hc),
                "%d of %d ids differ from the host's argmax of the logits, or the hidden rows do",
                bad, all->n_out);
    free(hc);
}

static int first_diff_i32(const int32_t *a, const int32_t *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i] != b[i])
            return i;
    return -1;
}

/* q36_mtp_eval_chain gives the drafts of a host loop over
 * q36_mtp_eval_argmax (each draft's id, through the draft vocabulary's
 * ids when one is set, and hidden row fed back): three rows of slot 1 from
 * position 0 with hidden rows h, then K drafts in all; then slots 1 and 0
 * chained at once */
static void mtp_chain_same(q36_engine *e, const int32_t *ids, const float *h, int D,
                           const char *name)
{
    enum { K = 4 };
    const int32_t *vid;
    q36_mtp_vocab(e, &vid);
    const int32_t sl[3] = { 1, 1, 1 }, ps[3] = { 0, 1, 2 }, last = 2, z = 0;
    const q36_batch first = { 3, ids, sl, ps, 1, &last };
    int32_t want[K], got[K];
    float *hc = malloc((size_t)D * sizeof *hc);
    q36_err err = { 0 };
    int rc = q36_mtp_eval_argmax(e, &first, h, Q36_MTP_H_TRUNK, &want[0], hc, &err);
    for (int i = 1; i < K && !rc; i++) {
        const int32_t id = vid ? vid[want[i - 1]] : want[i - 1], p = 2 + i;
        const q36_batch one = { 1, &id, &sl[0], &p, 1, &z };
        rc = q36_mtp_eval_argmax(e, &one, hc, Q36_MTP_H_MTP, &want[i], hc, &err);
    }
    if (!rc)
        rc = q36_mtp_eval_chain(e, &first, h, Q36_MTP_H_TRUNK, K, got, &err);
    if (rc)
        t_fail(name, "%s", err.msg);
    else
        t_check(name, !memcmp(got, want, sizeof got),
                "chained drafts %d %d %d %d, the host loop's %d %d %d %d", got[0], got[1], got[2],
                got[3], want[0], want[1], want[2], want[3]);
    /* two slots at once: slot 1's three rows and slot 0's two, one asked-for
     * row each; draft i of row j at got2[i * 2 + j], as the host loop over
     * passes of one row a slot gives them */
    char two_name[160];
    snprintf(two_name, sizeof two_name, "%s.two_slots", name);
    const int32_t sl2[5] = { 1, 1, 1, 0, 0 }, ps2[5] = { 0, 1, 2, 0, 1 }, outs2[2] = { 2, 4 };
    const q36_batch both = { 5, ids, sl2, ps2, 2, outs2 };
    int32_t want2[2 * K], got2[2 * K];
    float *h2 = malloc((size_t)2 * D * sizeof *h2);
    int rc2 = q36_mtp_eval_argmax(e, &both, h, Q36_MTP_H_TRUNK, want2, h2, &err);
    for (int i = 1; i < K && !rc2; i++) {
        const int32_t s2[2] = { 1, 0 }, o2[2] = { 0, 1 }, p2[2] = { 2 + i, 1 + i };
        int32_t id2[2];
        for (int j = 0; j < 2; j++)
            id2[j] = vid ? vid[want2[(i - 1) * 2 + j]] : want2[(i - 1) * 2 + j];
        const q36_batch step = { 2, id2, s2, p2, 2, o2 };
        rc2 = q36_mtp_eval_argmax(e, &step, h2, Q36_MTP_H_MTP, &want2[i * 2], h2, &err);
    }
    if (!rc2)
        rc2 = q36_mtp_eval_chain(e, &both, h, Q36_MTP_H_TRUNK, K, got2, &err);
    if (rc2)
        t_fail(two_name, "%s", err.msg);
    else
        t_check(two_name, !memcmp(got2, want2, sizeof got2),
                "chained drafts of two slots differ from the host loop's (first at %d)",
                first_diff_i32(got2, want2, 2 * K));
    free(h2);
    /* refused: two asked-for rows of one slot, no drafts, more drafts than
     * argmax rows */
    char bad[160];
    snprintf(bad, sizeof bad, "%s.refuses", name);
    const int32_t outs[2] = { 1, 2 };
    const q36_batch two = { 3, ids, sl, ps, 2, outs };
    int32_t many[1024];
    const int r1 = q36_mtp_eval_chain(e, &two, h, Q36_MTP_H_TRUNK, K, got, &err);
    const int r2 = q36_mtp_eval_chain(e, &first, h, Q36_MTP_H_TRUNK, 0, got, &err);
    const int r3 = q36_mtp_eval_chain(e, &first, h, Q36_MTP_H_TRUNK, 1024, many, &err);
    t_check(bad, r1 == Q36_E_ARG && r2 == Q36_E_ARG && r3 == Q36_E_ARG &&
                 strstr(err.msg, "chained MTP drafts") != NULL,
            "return codes %d %d %d (Q36_E_ARG each), last message \"%s\"", r1, r2, r3, err.msg);
    free(hc);
}

/* MTP rows in one pass equal the rows one pass each (exact mode). */
static void mtp_invariance(const q36_model *m, const char *tag)
{
    char name[128];
    snprintf(name, sizeof name, "spec.%s.mtp_rows_batch_invariant", tag);
    q36_engine_opts o = q36_engine_opts_default();
    o.mtp = 1;
    o.n_slots = 2;
    q36_engine *e = NULL;
    q36_err err = { 0 };
    if (q36_engine_new(m, 64, &o, &e, &err)) {
        t_fail(name, "%s", err.msg);
        return;
    }
    enum { N = 9 };
    const int V = q36_engine_n_vocab(e), D = q36_engine_n_embd(e);
    t_rng r = t_rng_named(name);
    int32_t ids[N], slot[N], pos[N], out[N];
    float *h = t_randv(&r, (int64_t)N * D, 1.0f);
    float *la = malloc((size_t)N * V * sizeof *la), *lb = malloc((size_t)N * V * sizeof *lb);
    float *ha = malloc((size_t)N * D * sizeof *ha), *hb = malloc((size_t)N * D * sizeof *hb);
    for (int i = 0; i < N; i++) {
        ids[i] = (int32_t)(t_next(&r) % (uint64_t)V);
        pos[i] = i;
        out[i] = i;
    }
    int rc = 0;
    for (int i = 0; i < N; i++)
        slot[i] = 0;
    const q36_batch all = { N, ids, slot, pos, N, out };
    rc = q36_mtp_eval(e, &all, h, Q36_MTP_H_TRUNK, la, ha, &err);
    for (int i = 0; i < N && !rc; i++) {
        const int32_t s1 = 1, z = 0;
        const q36_batch one = { 1, &ids[i], &s1, &pos[i], 1, &z };
        rc = q36_mtp_eval(e, &one, h + (int64_t)i * D, Q36_MTP_H_TRUNK, lb + (int64_t)i * V,
                          hb + (int64_t)i * D, &err);
    }
    if (rc)
        t_fail(name, "%s", err.msg);
    else
        t_check(name, !memcmp(la, lb, (size_t)N * V * sizeof *la) &&
                      !memcmp(ha, hb, (size_t)N * D * sizeof *ha),
                "rows differ between one pass and a pass each");
    snprintf(name, sizeof name, "spec.%s.mtp_argmax_is_host_argmax", tag);
    if (!rc)
        mtp_argmax_same(e, &all, h, la, ha, V, D, name);
    snprintf(name, sizeof name, "spec.%s.mtp_chain_is_host_loop", tag);
    if (!rc)
        mtp_chain_same(e, ids, h, D, name);
    /* the same with a draft vocabulary (the head's columns a view of
     * several rows at once) */
    snprintf(name, sizeof name, "spec.%s.mtp_rows_batch_invariant.draft_vocab", tag);
    rc = q36_mtp_draft_vocab(e, V / 2, &err);
    const int nv = rc ? 0 : q36_mtp_vocab(e, &(const int32_t *){ NULL });
    if (!rc && (nv < 2 || nv > V / 2))
        rc = q36_err_set(&err, Q36_E_ARG, "a draft vocabulary of %d ids for %d asked", nv, V / 2);
    if (!rc)
        rc = q36_mtp_eval(e, &all, h, Q36_MTP_H_TRUNK, la, ha, &err);
    for (int i = 0; i < N && !rc; i++) {
        const int32_t s1 = 1, z = 0;
        const q36_batch one = { 1, &ids[i], &s1, &pos[i], 1, &z };
        rc = q36_mtp_eval(e, &one, h + (int64_t)i * D, Q36_MTP_H_TRUNK, lb + (int64_t)i * nv,
                          hb + (int64_t)i * D, &err);
    }
    if (rc)
        t_fail(name, "%s", err.msg);
    else
        t_check(name, !memcmp(la, lb, (size_t)N * nv * sizeof *la),
                "draft-vocabulary rows differ between one pass and a pass each");
    snprintf(name, sizeof name, "spec.%s.mtp_argmax_is_host_argmax.draft_vocab", tag);
    if (!rc) {
        rc = q36_mtp_eval(e, &all, h, Q36_MTP_H_TRUNK, la, ha, &err);
        if (rc)
            t_fail(name, "%s", err.msg);
        else
            mtp_argmax_same(e, &all, h, la, ha, nv, D, name);
        snprintf(name, sizeof name, "spec.%s.mtp_chain_is_host_loop.draft_vocab", tag);
        mtp_chain_same(e, ids, h, D, name);
    }
    /* a row above the MTP position is refused */
    const int32_t s0 = 0, p = 20, z = 0;
    const q36_batch gap = { 1, &ids[0], &s0, &p, 1, &z };
    snprintf(name, sizeof name, "spec.%s.mtp_refuses_gap", tag);
    t_check(name, q36_mtp_eval(e, &gap, h, Q36_MTP_H_TRUNK, la, NULL, &err) == Q36_E_ARG,
            "a row at 20 above MTP position %d was accepted", q36_mtp_pos(e, 0));
    free(h), free(la), free(lb), free(ha), free(hb);
    q36_engine_free(e);
}

/* q36_session_decode_argmax (the greedy choice on the device) gives, step
 * after step, the host's argmax of q36_session_decode's logits: two
 * sessions fed the same tokens, 32 steps */
static void decode_argmax_same(q36_model *m, const int32_t *prompt, int n, const char *tag)
{
    char name[128];
    snprintf(name, sizeof name, "spec.%s.session_decode_argmax_is_host_argmax", tag);
    q36_session_opts o = q36_session_opts_default();
    q36_session *a = NULL, *b = NULL;
    q36_err err = { 0 };
    int rc = q36_session_new(m, 128, &o, &a, &err);
    rc = rc ? rc : q36_session_new(m, 128, &o, &b, &err);
    const int V = rc ? 1 : q36_session_n_vocab(a);
    float *lg = malloc((size_t)V * sizeof *lg);
    rc = rc ? rc : q36_session_append(a, prompt, n, lg, Q36_LOGITS_LAST, &err);
    rc = rc ? rc : q36_session_append(b, prompt, n, NULL, Q36_LOGITS_NONE, &err);
    int32_t tok = rc ? 0 : spec_argmax(lg, V), bad = 0, first = -1;
    for (int i = 0; i < 32 && !rc; i++) {
        int32_t next = -1;
        rc = q36_session_decode(a, tok, lg, &err);
        rc = rc ? rc : q36_session_decode_argmax(b, tok, &next, &err);
        const int32_t want = rc ? 0 : spec_argmax(lg, V);
        if (!rc && next != want && !bad++)
            first = i;
        tok = want;
    }
    if (rc)
        t_fail(name, "%s", err.msg);
    else
        t_check(name, !bad, "%d of 32 steps chose another id (first at step %d)", bad, first);
    free(lg);
    q36_session_free(a);
    q36_session_free(b);
}

/* The host's greedy choice of row x with the ids ban[0..nb) at -inf. */
static int32_t masked_argmax(const float *x, int V, const int32_t *ban, int nb)
{
    int32_t best = 0;
    float bv = -INFINITY;
    for (int c = 0; c < V; c++) {
        bool skip = false;
        for (int j = 0; j < nb; j++)
            skip = skip || ban[j] == c;
        if (!skip && x[c] > bv) {
            bv = x[c];
            best = c;
        }
    }
    return best;
}

/* Two engines of 128 positions on m (a returns logits, b what is under
 * test), and the rows of a prompt pass that asks for every row: ids,
 * slot 0, positions and asked-for rows 0 .. n (n <= 64) */
static int engine_pair(q36_model *m, q36_engine **a, q36_engine **b, q36_err *err)
{
    q36_engine_opts o = q36_engine_opts_default();
    *a = *b = NULL;
    int rc = q36_engine_new(m, 128, &o, a, err);
    return rc ? rc : q36_engine_new(m, 128, &o, b, err);
}

typedef struct {
    int32_t ids[64], slot[64], pos[64], out[64];
    int     rows, p0;
} pair_steps;

static void steps_start(pair_steps *s, const int32_t *prompt, int n)
{
    for (int i = 0; i < n; i++) {
        s->ids[i] = prompt[i];
        s->slot[i] = 0;
        s->pos[i] = i;
        s->out[i] = i;
    }
    s->rows = n;
    s->p0 = 0;
}

static q36_batch steps_batch(pair_steps *s)
{
    return (q36_batch){ s->rows, s->ids, s->slot, s->pos, s->rows, s->out };
}

/* after a pass: the next is one row, token tok, at the next position */
static void steps_next(pair_steps *s, int32_t tok)
{
    s->ids[0] = tok;
    s->p0 += s->rows;
    s->pos[0] = s->p0;
    s->rows = 1;
}

/* q36_engine_argmax_ban: an ids pass that skips the banned ids chooses as
 * the host does on the logits with them at -inf. Engine a returns logits,
 * engine b ids; each pass bans the row's own largest logit (found on a's
 * logits first, so that b must choose again from its row) and two random
 * ids, every other pass none of the row's best. A prompt pass asking for
 * every row, then 24 decode steps; a pass asking for scattered rows is
 * refused with a ban and runs without one. */
static void argmax_ban_same(q36_model *m, const int32_t *prompt, int n, const char *tag)
{
    char name[128];
    snprintf(name, sizeof name, "spec.%s.argmax_ban_is_host_masked_argmax", tag);
    q36_engine *a, *b;
    q36_err err = { 0 };
    int rc = engine_pair(m, &a, &b, &err);
    const int V = rc ? 1 : q36_engine_n_vocab(a);
    if (n > 64)
        n = 64;
    float *lg = malloc((size_t)n * V * sizeof *lg);
    int32_t got[64], ban[3];
    int bad = 0, checked = 0, rechosen = 0;
    t_rng r = t_rng_named(name);
    pair_steps st;
    steps_start(&st, prompt, n);
    /* a pass of rows [0, n) asked for all of them, then steps of one row */
    for (int step = 0; step < 25 && !rc; step++) {
        const int rows = st.rows;
        const q36_batch bt = steps_batch(&st);
        rc = q36_engine_eval(a, &bt, lg, NULL, &err);
        for (int k = 0; k < 3 && !rc; k++)
            ban[k] = (int32_t)(t_next(&r) % (uint64_t)V);
        if (!rc && step % 2 == 0)
            ban[0] = spec_argmax(lg + (size_t)(rows - 1) * V, V);
        rc = rc ? rc : q36_engine_argmax_ban(b, ban, 3, &err);
        rc = rc ? rc : q36_engine_eval_argmax(b, &bt, got, NULL, &err);
        for (int i = 0; i < rows && !rc; i++) {
            const float *x = lg + (size_t)i * V;
            rechosen += spec_argmax(x, V) != got[i];
            bad += got[i] != masked_argmax(x, V, ban, 3);
            checked++;
        }
        steps_next(&st, rc ? 0 : got[rows - 1]);
    }
    /* scattered rows with a ban: refused, nothing evaluated */
    int refused = 0;
    if (!rc) {
        const int32_t two[2] = { 0, 2 }, id3[3] = { 1, 2, 3 }, s3[3] = { 0, 0, 0 };
        const int32_t p3[3] = { st.pos[0], st.pos[0] + 1, st.pos[0] + 2 };
        const q36_batch sc = { 3, id3, s3, p3, 2, two };
        q36_err e2 = { 0 };
        refused = q36_engine_eval_argmax(b, &sc, got, NULL, &e2) == Q36_E_ARG &&
                  q36_slot_pos(b, 0) == st.pos[0] && !q36_engine_argmax_ban_fits(b, &sc);
        rc = q36_engine_argmax_ban(b, NULL, 0, &err);
        rc = rc ? rc : q36_engine_eval_argmax(b, &sc, got, NULL, &err);
    }
    if (rc)
        t_fail(name, "%s", err.msg);
    else
        t_check(name, !bad && refused && rechosen >= 10,
                "%d of %d rows chose otherwise; %d rows chosen again; scattered rows %s", bad,
                checked, rechosen, refused ? "refused" : "not refused");
    free(lg);
    q36_engine_free(a);
    q36_engine_free(b);
}

/* q36_engine_eval_hid_topk: the k best of each asked-for row as a full
 * sort of the logits another engine returns for the same passes
 * (tests/topk_case.h's topk_ref): a prompt pass asking for every row, k of
 * 1, 20 and 64, then decode steps, hidden rows too; a k outside [1, 64]
 * refused. A pass with an argmax ban set takes no notice of it. */
static void topk_same(q36_model *m, const int32_t *prompt, int n, const char *tag)
{
    char name[128];
    snprintf(name, sizeof name, "spec.%s.topk_is_host_topk", tag);
    q36_engine *a, *b;
    q36_err err = { 0 };
    int rc = engine_pair(m, &a, &b, &err);
    const int V = rc ? 1 : q36_engine_n_vocab(a), D = rc ? 1 : q36_engine_n_embd(a);
    if (n > 32)
        n = 32;
    float *lg = malloc((size_t)n * V * sizeof *lg), *vals = malloc((size_t)n * 64 * sizeof *vals);
    float *ha = malloc((size_t)n * D * sizeof *ha), *hb = malloc((size_t)n * D * sizeof *hb);
    int32_t got[32 * 64], want_i[64], ban = 0;
    float want_v[64];
    int bad = 0, checked = 0, hid_bad = 0;
    pair_steps st;
    steps_start(&st, prompt, n);
    static const int ks[] = { 1, 20, 64, 7, 33 };
    rc = rc ? rc : q36_engine_argmax_ban(b, &ban, 1, &err);
    for (int step = 0; step < 5 && !rc; step++) {
        const int k = ks[step], rows = st.rows;
        const q36_batch bt = steps_batch(&st);
        rc = q36_engine_eval_hid(a, &bt, lg, st.out, rows, ha, &err);
        rc = rc ? rc : q36_engine_eval_hid_topk(b, &bt, k, got, vals, st.out, rows, hb, &err);
        for (int i = 0; i < rows && !rc; i++) {
            topk_ref(lg + (size_t)i * V, V, k, want_i, want_v);
            bad += memcmp(want_i, got + i * k, (size_t)k * sizeof *got) != 0 ||
                   memcmp(want_v, vals + i * k, (size_t)k * sizeof *vals) != 0;
            checked++;
        }
        hid_bad += !rc && memcmp(ha, hb, (size_t)rows * D * sizeof *ha) != 0;
        steps_next(&st, rc ? 0 : got[(rows - 1) * k]);
    }
    bool refused = false;
    if (!rc) {
        const q36_batch one = steps_batch(&st);
        q36_err e2 = { 0 };
        refused = q36_engine_eval_hid_topk(b, &one, 65, got, vals, NULL, -1, NULL, &e2) == Q36_E_ARG &&
                  q36_engine_eval_hid_topk(b, &one, 0, got, vals, NULL, -1, NULL, &e2) == Q36_E_ARG;
    }
    if (rc)
        t_fail(name, "%s", err.msg);
    else
        t_check(name, !bad && !hid_bad && refused && checked == n + 4,
                "%d of %d rows differ from the full sort; hidden rows %s; k 65 and 0 %s", bad,
                checked, hid_bad ? "differ" : "the same", refused ? "refused" : "not refused");
    free(lg); free(vals); free(ha); free(hb);
    q36_engine_free(a);
    q36_engine_free(b);
}

static void run_model(const char *tag, const char *path, bool trained)
{
    q36_model *m = NULL;
    tok_vocab *tv = NULL;
    q36_err err = { 0 };
    char name[128];
    snprintf(name, sizeof name, "spec.%s.open", tag);
    if (q36_model_open(path, &m, &err) || tok_new_from_gguf(q36_model_gguf(m), &tv, &err)) {
        t_fail(name, "%s", err.msg);
        q36_model_free(m);
        return;
    }
    mtp_invariance(m, tag);
    const int V = (int)q36_model_hparams(m)->n_vocab;
    int32_t prompt[24];
    t_rng r = t_rng_named(tag);
    for (int i = 0; i < 24; i++)
        prompt[i] = (int32_t)(t_next(&r) % (uint64_t)V);
    decode_argmax_same(m, prompt, 24, tag);
    argmax_ban_same(m, prompt, 24, tag);
    topk_same(m, prompt, 24, tag);
    if (!trained) {
        same_tokens(m, tv, prompt, 24, 48, 0.0f, 1, 0, tag);
        same_tokens(m, tv, prompt, 24, 48, 0.0f, 3, 0, tag);
        same_tokens(m, tv, prompt, 24, 48, 0.0f, 5, 64, tag);
        same_tokens(m, tv, prompt, 24, 48, 0.8f, 3, 0, tag);
        same_tokens_ctx(m, tv, prompt, 24, 100, 0.0f, 3, 0, 24 + 13, tag);
        drafts_reference(m, tv, prompt, 24, 40, 3, 0, tag);
        g_rewind = true;
        same_tokens(m, tv, prompt, 24, 48, 0.0f, 3, 0, tag);
        same_tokens(m, tv, prompt, 24, 48, 0.8f, 5, 0, tag);
        g_rewind = false;
        g_device = true;       /* the verify rows' choices made on the device */
        same_tokens(m, tv, prompt, 24, 48, 0.0f, 3, 0, tag);
        same_tokens(m, tv, prompt, 24, 48, 0.8f, 3, 0, tag);
        same_tokens_ctx(m, tv, prompt, 24, 100, 0.0f, 3, 0, 24 + 13, tag);
        g_rewind = true;
        same_tokens(m, tv, prompt, 24, 48, 0.0f, 3, 0, tag);
        g_rewind = g_device = false;
        keep_api(m, tag);
        keep_multi(m, tag);
    } else {
        /* a prefix of the model's own greedy continuation of 'import os' */
        static const int32_t code[] = { 474, 2643, 198, 474, 5708, 198, 474, 54819, 198, 474,
                                        18993, 198, 1499, 19496, 1159, 2399, 262 };
        const int nc = (int)(sizeof code / sizeof code[0]);
        double acc = same_tokens(m, tv, code, nc, 200, 0.0f, 3, 0, tag);
        snprintf(name, sizeof name, "spec.%s.greedy_acceptance_above_0.5", tag);
        t_check(name, acc > 0.5, "acceptance %.3f: the MTP block is not computing what it was "
                "trained to", acc);
        same_tokens(m, tv, code, nc, 200, 0.0f, 3, 16384, tag);
        same_tokens(m, tv, code, nc, 120, 0.8f, 3, 16384, tag);
        same_tokens(m, tv, prompt, 24, 120, 0.0f, 5, 0, tag);
        drafts_reference(m, tv, code, nc, 160, 3, 16384, tag);
        g_p_min = 0.5f;      /* rounds of fewer drafts, some of none */
        double a = same_tokens(m, tv, prompt, 24, 120, 0.0f, 4, 16384, tag);
        same_tokens(m, tv, prompt, 24, 120, 0.8f, 4, 16384, tag);
        drafts_reference(m, tv, code, nc, 160, 4, 16384, tag);
        g_p_min = 0;
        g_rewind = true;
        same_tokens(m, tv, code, nc, 200, 0.0f, 3, 16384, tag);
        same_tokens(m, tv, prompt, 24, 120, 0.8f, 4, 0, tag);
        drafts_reference(m, tv, code, nc, 160, 3, 16384, tag);
        drafts_reference(m, tv, prompt, 24, 160, 4, 0, tag);
        for (int c = 30; c < 33; c++)
            same_tokens_ctx(m, tv, code, nc, 100, 0.0f, 5, 0, nc + c, tag);
        g_device = true;
        same_tokens(m, tv, code, nc, 200, 0.0f, 3, 16384, tag);
        for (int c = 30; c < 33; c++)
            same_tokens_ctx(m, tv, code, nc, 100, 0.0f, 5, 0, nc + c, tag);
        g_rewind = g_device = false;
        snprintf(name, sizeof name, "spec.%s.p_min_keeps_more", tag);
        t_check(name, a > 0.8, "acceptance %.3f with --draft-p-min 0.5", a);
        drafts_reference(m, tv, prompt, 24, 160, 4, 0, tag);
        for (int c = 30; c < 36; c++)       /* the context ends at each phase of a round */
            same_tokens_ctx(m, tv, code, nc, 100, 0.0f, 5, 0, nc + c, tag);
    }
    tok_free(tv);
    q36_model_free(m);
}

/* The rule keeps the output distributed as p whatever q proposes. */
static void accept_rule(void)
{
    enum { N = 6, DRAWS = 200000 };
    for (int c = 0; c < 4; c++) {
        char name[64];
        snprintf(name, sizeof name, "spec.accept_rule.case%d", c);
        t_rng r = t_rng_named(name);
        float p[N], q[N];
        double sp = 0, sq = 0;
        for (int i = 0; i < N; i++) {
            p[i] = t_uniform(&r) + (c == 3 && i == 0 ? 5.0f : 0.05f);
            q[i] = t_uniform(&r) + (c == 2 && i == N - 1 ? 5.0f : 0.05f);
            if (c == 1 && i == 2)
                q[i] = 0;          /* the drafter never proposes id 2 */
            sp += p[i], sq += q[i];
        }
        for (int i = 0; i < N; i++)
            p[i] = (float)(p[i] / sp), q[i] = (float)(q[i] / sq);
        long cnt[N] = { 0 };
        for (int n = 0; n < DRAWS; n++) {
            double u = t_uniform(&r), a = 0;
            int d = N - 1;
            for (int i = 0; i < N; i++)
                if (u < (a += q[i])) {
                    d = i;
                    break;
                }
            if (q[d] == 0)
                d = 0;
            cnt[spec_accept(p, q, N, d, t_uniform(&r), t_uniform(&r))]++;
        }
        double chi = 0;
        for (int i = 0; i < N; i++) {
            const double ex = (double)DRAWS * p[i];
            chi += (cnt[i] - ex) * (cnt[i] - ex) / ex;
        }
        /* 5 degrees of freedom: P(chi2 > 20.5) = 0.001 */
        t_check(name, chi < 20.5, "chi-square %.2f over %d ids (p = %.3f %.3f %.3f ...)", chi, N,
                p[0], p[1], p[2]);
    }
}

int main(void)
{
    accept_rule();
    char dir[] = "/tmp/q36_spec_XXXXXX";
    if (!mkdtemp(dir)) {
        t_fail("spec.setup", "mkdtemp failed");
        return t_exit();
    }
    char p1[256], p2[256];
    int r1 = t_synth_model(dir, "dense", "--arch qwen35 --preset tiny --seed 13 --mtp on", p1,
                           sizeof p1);
    int r2 = t_synth_model(dir, "moe", "--arch qwen35moe --preset tiny --seed 14 --layers 5 "
                           "--attn-interval 2 --mtp on", p2, sizeof p2);
    if (r1 || r2) {
        t_fail("spec.setup", "q36 synth failed; is ./q36 built (or $Q36 set)?");
    } else {
        run_model("qwen35", p1, false);
        run_model("qwen35moe", p2, false);
    }
    unlink(p1);
    unlink(p2);
    rmdir(dir);
    const char *dm = getenv("Q36_DEFAULT_MODEL") ? getenv("Q36_DEFAULT_MODEL") : "build/default.gguf";
    if (access(dm, R_OK) == 0)
        run_model("trained", dm, true);
    else      /* an absent resource fails: make check builds it and names it */
        t_fail("spec.trained", "%s is absent (make build/default.gguf, or set Q36_DEFAULT_MODEL)",
               dm);
    return t_exit();
}
