/* bench_spec.c: `q36 bench --spec-type draft-mtp`: greedy generation from a
 * prompt, plain decoding against MTP speculative decoding (src/spec/), in
 * the same run on the same engine slot, repetitions interleaved so drift
 * hits both alike. Random ids make no sense to draft (a model's own text
 * is what its MTP block predicts), so the tokens are the model's greedy
 * continuation of the prompt: -f FILE (text), else -p seeded random ids.
 *
 * Reported: decode tokens/s of each (median, min-max over -r repetitions;
 * the prompt is evaluated before the clock starts), the speed-up, whether
 * the tokens are the same, acceptance by draft position (the share of
 * rounds whose drafts up to there were all kept), tokens per verify pass,
 * and the window cost: a plain decode step, a verify pass of k+1 rows, the
 * drafting and the rollback per round, in milliseconds.
 *
 * Acceptance in rounds depends on where rounds start (a rejection starts
 * the next round right after the token the drafts missed), so the report
 * adds the training record's measure too: at every 8th position p of the
 * plain continuation, drafts from (y_p, h_{p-1}) chained draft-max deep,
 * against the continuation itself (probe_positions). */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/gen/gen.h"
#include "../../src/model/model.h"
#include "../../src/spec/spec.h"
#include "../../src/tokenizer/tok.h"

typedef struct {
    int32_t *ids;
    int      n, cap;
} sink;

static int on_token(void *user, const gen_token *t)
{
    sink *s = user;
    if (t->id >= 0 && s->n < s->cap)
        s->ids[s->n++] = t->id;
    return 0;
}

/* One generation of n tokens after the prompt, plain (sp NULL) or drafted;
 * *sec the wall time of the generation alone. With prof, the engine's
 * profile is reset after the prompt (it then holds the generation's). */
static int one(q36_engine *e, spec *sp, const tok_vocab *tv, const int32_t *prompt, int np, int n,
               float *logits, sink *out, double *sec, bool prof, q36_err *err)
{
    q36_slot_reset(e, 0);
    gen_params gp = gen_params_default();
    gp.n_predict = n;
    gp.smp.temp = 0.0f;
    gp.device_greedy = true;      /* plain decoding as q36 run does it */
    gen *g = NULL;
    q36_session *s = NULL;
    int rc = gen_new(&gp, tv, q36_engine_n_vocab(e), &g, err);
    if (!rc)
        rc = q36_session_open(e, 0, &s, err);
    if (!rc)
        rc = sp ? spec_prefill(sp, prompt, np, logits, err)
                : q36_session_append(s, prompt, np, logits, Q36_LOGITS_LAST, err);
    if (prof)
        q36_engine_profile_reset(e);
    gen_result res = { 0 };
    out->n = 0;
    if (!rc)
        rc = sp ? spec_run(sp, g, logits, NULL, on_token, out, &res, err)
                : gen_run(g, s, logits, NULL, on_token, out, &res, err);
    *sec = res.t_gen;
    q36_session_free(s);
    gen_free(g);
    return rc;
}

/* The training record's acceptance (tools/train/train.py mtp_acceptance):
 * the trunk over prompt + continuation y (its hidden rows), then at every
 * 8th position p of the continuation, the MTP rows up to p (catch-up) and
 * k drafts chained from there; ok[i] counts probes whose drafts 1..i+1 all
 * equal y. Returns the number of probes, or a negative kind. */
static int probe_positions(q36_engine *e, const int32_t *y, int np, int N, int k, int64_t *ok,
                           q36_err *err)
{
    const int64_t D = q36_engine_n_embd(e), V = q36_engine_n_vocab(e);
    const int B = q36_engine_n_batch(e) < 64 ? q36_engine_n_batch(e) : 64;
    float *h = calloc((size_t)(N + 1) * D, sizeof *h), *lg = malloc((size_t)V * sizeof *lg);
    float *mh = malloc((size_t)D * sizeof *mh);
    int32_t *slot = calloc((size_t)B, sizeof *slot), *pos = malloc((size_t)B * sizeof *pos);
    int32_t *out = malloc((size_t)B * sizeof *out);
    int rc = !h || !lg || !mh || !slot || !pos || !out
                 ? q36_err_set(err, Q36_E_NOMEM, "bench: out of memory") : 0;
    q36_slot_reset(e, 0);
    /* h row j+1 = the trunk's hidden row of position j; row 0 stays zero */
    for (int a = 0; a < N && !rc; a += B) {
        const int n = N - a < B ? N - a : B;
        for (int i = 0; i < n; i++)
            pos[i] = a + i, out[i] = i;
        const q36_batch b = { n, y + a, slot, pos, n, out };
        rc = q36_engine_eval(e, &b, NULL, h + (int64_t)(a + 1) * D, err);
    }
    const int32_t *vid;
    const int nv = q36_mtp_vocab(e, &vid);
    int probes = 0, done = 0;   /* MTP rows [0, done) hold the catch-up */
    for (int p = np; p + k < N && !rc; p += 8) {
        /* catch-up rows done..p: (y_j, h_{j-1}); the last one gives draft 1 */
        while (done <= p && !rc) {
            const int n = p + 1 - done < B ? p + 1 - done : B;
            for (int i = 0; i < n; i++)
                pos[i] = done + i;
            const int32_t last = n - 1;
            const bool end = done + n == p + 1;
            const q36_batch b = { n, y + done, slot, pos, end, &last };
            rc = q36_mtp_eval(e, &b, h + (int64_t)done * D, Q36_MTP_H_TRUNK, end ? lg : NULL,
                              end ? mh : NULL, err);
            done += n;
        }
        bool alive = true;
        for (int i = 0; i < k && !rc; i++) {
            int32_t best = 0;
            for (int j = 1; j < nv; j++)
                if (lg[j] > lg[best])
                    best = j;
            const int32_t d = vid ? vid[best] : best;
            alive = alive && d == y[p + 1 + i];
            ok[i] += alive;
            if (i + 1 < k) {
                const int32_t dp = p + 1 + i, z = 0;
                const q36_batch b = { 1, &d, slot, &dp, 1, &z };
                rc = q36_mtp_eval(e, &b, mh, Q36_MTP_H_MTP, lg, mh, err);
            }
        }
        done = p + 1;    /* the draft rows above p are rewritten by the next catch-up */
        probes++;
    }
    free(h), free(lg), free(mh), free(slot), free(pos), free(out);
    return rc ? rc : probes;
}

/* An engine of options o with the MTP layer, and its one-slot drafter */
static int spec_engine(q36_model *m, int n_ctx, const q36_engine_opts *o, int draft_max,
                       int draft_vocab, float p_min, int rewind, q36_engine **e, spec **sp,
                       q36_err *err)
{
    int rc = q36_engine_new(m, n_ctx, o, e, err);
    if (!rc)
        rc = spec_new(*e, 0, draft_max, sp, err);
    if (!rc)
        rc = q36_mtp_draft_vocab(*e, draft_vocab, err);
    if (!rc) {
        spec_set_p_min(*sp, p_min);
        spec_set_rewind(*sp, rewind != 0);
    }
    return rc;
}

/* --profile: one more run of each decoding on an engine made with the
 * profile on (its timers are not in the timed runs), each run's op and
 * layer tables: where a verify pass's time goes beside a plain step's */
static int spec_profile(q36_model *m, int n_ctx, q36_engine_opts o, int draft_max,
                        int draft_vocab, float p_min, int rewind, const tok_vocab *tv,
                        const int32_t *prompt, int np, int n_gen, float *logits, sink *out,
                        q36_err *err)
{
    q36_engine *e = NULL;
    spec *sp = NULL;
    o.profile = 1;
    int rc = spec_engine(m, n_ctx, &o, draft_max, draft_vocab, p_min, rewind, &e, &sp, err);
    for (int drafted = 0; drafted < 2 && !rc; drafted++) {
        double sec;
        const q36_profile *p = NULL;
        rc = one(e, drafted ? sp : NULL, tv, prompt, np, n_gen, logits, out, &sec, true, err);
        if (!rc)
            rc = q36_engine_profile(e, &p, err);
        if (!rc)
            bench_print_profile(stdout, drafted ? "draft-mtp" : "plain", np, p, out->n);
    }
    spec_free(sp);
    q36_engine_free(e);
    return rc;
}

int bench_spec(const char *path, const bench_cfg *cfg, const char *prompt_file, int n_prompt,
               int n_gen, int reps, int draft_max, int draft_vocab, float p_min, int rewind,
               uint64_t seed, q36_err *err)
{
    q36_model *m = NULL;
    tok_vocab *tv = NULL;
    q36_engine *e = NULL;
    spec *sp = NULL;
    int32_t *prompt = NULL;
    size_t np = 0;
    float *logits = NULL;
    sink a = { 0 }, b = { 0 };
    double *ta = calloc((size_t)reps, sizeof *ta), *tb = calloc((size_t)reps, sizeof *tb);
    spec_stats tot;
    memset(&tot, 0, sizeof tot);
    int rc = q36_model_open(path, &m, err);
    if (!rc)
        rc = tok_new_from_gguf(q36_model_gguf(m), &tv, err);
    if (!rc && prompt_file) {
        FILE *f = fopen(prompt_file, "rb");
        char *text = NULL;
        long len = 0;
        if (f && !fseek(f, 0, SEEK_END) && (len = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET) &&
            (text = malloc((size_t)len + 1)) && fread(text, 1, (size_t)len, f) == (size_t)len)
            rc = tok_encode(tv, text, (size_t)len, true, &prompt, &np, err);
        else
            rc = q36_err_set(err, Q36_E_IO, "%s: cannot read", prompt_file);
        if (f)
            fclose(f);
        free(text);
    } else if (!rc) {
        np = (size_t)(n_prompt > 0 ? n_prompt : 1);
        prompt = malloc(np * sizeof *prompt);
        if (prompt)
            bench_random_ids(prompt, (int)np, tok_n_vocab(tv), seed);
    }
    q36_engine_opts o = q36_engine_opts_default();
    const int n_ctx = (int)np + n_gen + draft_max + 8;
    o.n_threads = cfg->n_threads;
    o.n_batch = cfg->n_ubatch;
    o.type_k = cfg->type_k;
    o.type_v = cfg->type_v;
    o.mtp = 1;
    o.n_keep = rewind ? draft_max + 1 : 0;
    o.backend = cfg->backend;           /* -ngl: the MTP block and the rollback on the GPU */
    o.fast = cfg->fast;
    if (!rc)
        rc = spec_engine(m, n_ctx, &o, draft_max, draft_vocab, p_min, rewind, &e, &sp, err);
    if (!rc && (!ta || !tb || !prompt || !(logits = malloc((size_t)q36_engine_n_vocab(e) * sizeof *logits)) ||
                !(a.ids = malloc((size_t)n_gen * sizeof *a.ids)) ||
                !(b.ids = malloc((size_t)n_gen * sizeof *b.ids))))
        rc = q36_err_set(err, Q36_E_NOMEM, "bench: out of memory");
    a.cap = b.cap = n_gen;
    bool same = true;
    /* one untimed warm-up of each, then the repetitions, interleaved */
    for (int r = -1; r < reps && !rc; r++) {
        double s0, s1;
        rc = one(e, NULL, tv, prompt, (int)np, n_gen, logits, &a, &s0, false, err);
        spec_reset_stats(sp);
        if (!rc)
            rc = one(e, sp, tv, prompt, (int)np, n_gen, logits, &b, &s1, false, err);
        if (rc || r < 0)
            continue;
        same &= a.n == b.n && !memcmp(a.ids, b.ids, (size_t)a.n * sizeof *a.ids);
        ta[r] = a.n / s0;
        tb[r] = b.n / s1;
        const spec_stats *st = spec_get_stats(sp);
        tot.rounds += st->rounds, tot.drafted += st->drafted, tot.accepted += st->accepted;
        tot.emitted += st->emitted, tot.replays += st->replays, tot.replay_rows += st->replay_rows;
        tot.rewinds += st->rewinds;
        tot.t_draft += st->t_draft, tot.t_verify += st->t_verify, tot.t_rollback += st->t_rollback;
        for (int i = 0; i < SPEC_MAX_DRAFT; i++)
            tot.drafted_at[i] += st->drafted_at[i], tot.accepted_at[i] += st->accepted_at[i];
        tot.t_catchup += s0;       /* here: the plain decoder's generation time */
    }
    if (!rc) {
        bench_machine mach;
        bench_machine_read(&mach);
        bench_stats sa, sb;
        bench_stats_of(ta, reps, &sa);
        bench_stats_of(tb, reps, &sb);
        printf("q36 %s, %s; %d threads, load %.2f at start; %s; prompt %zu tokens (%s), %d greedy "
               "tokens, %d repetitions; --draft-max %d, draft vocabulary %d, --draft-p-min %g, "
               "--draft-rollback %s\n\n", bench_commit(), mach.cpu_model, cfg->n_threads,
               mach.load1, path, np, prompt_file ? prompt_file : "seeded random ids", n_gen, reps,
               draft_max, q36_mtp_vocab(e, &(const int32_t *){ NULL }), p_min,
               rewind ? "states" : "replay");
        printf("| decoding | t/s median | min - max | speed-up | same tokens |\n");
        printf("| --- | ---: | ---: | ---: | --- |\n");
        printf("| plain | %.2f | %.2f - %.2f | 1.00 | |\n", sa.median, sa.min, sa.max);
        printf("| draft-mtp | %.2f | %.2f - %.2f | %.2f | %s |\n\n", sb.median, sb.min, sb.max,
               sb.median / sa.median, same ? "yes" : "NO");
        printf("acceptance by draft position (all drafts up to it kept):");
        for (int i = 0; i < draft_max; i++)
            printf(" %.3f", tot.drafted_at[i] ? (double)tot.accepted_at[i] / tot.drafted_at[i] : 0.0);
        printf("\nper draft: %.3f of drafts kept; %.2f tokens per verify pass (%lld passes)\n",
               tot.drafted ? (double)tot.accepted / tot.drafted : 0.0,
               tot.rounds ? (double)tot.emitted / tot.rounds : 0.0, (long long)tot.rounds);
        const double R = tot.rounds ? (double)tot.rounds : 1.0;
        const double plain_ms = 1e3 * tot.t_catchup / ((double)a.n * reps);
        printf("window cost per round, ms: draft %.3f, verify %.3f (up to %d rows), rollback %.3f "
               "(%.2f replays, %.2f rows, %.2f rewinds); a plain decode step %.3f\n",
               1e3 * tot.t_draft / R, 1e3 * tot.t_verify / R, draft_max + 1,
               1e3 * tot.t_rollback / R, tot.replays / R, tot.replay_rows / R, tot.rewinds / R,
               plain_ms);
        /* the plain continuation after the prompt, probed every 8th position */
        int32_t *y = malloc((np + (size_t)a.n) * sizeof *y);
        int64_t ok[SPEC_MAX_DRAFT] = { 0 };
        int probes = y ? 0 : q36_err_set(err, Q36_E_NOMEM, "bench: out of memory");
        if (y) {
            memcpy(y, prompt, np * sizeof *y);
            memcpy(y + np, a.ids, (size_t)a.n * sizeof *y);
            probes = probe_positions(e, y, (int)np, (int)np + a.n, draft_max, ok, err);
            free(y);
        }
        if (probes < 0) {
            rc = probes;
        } else {
            printf("at every 8th position of the plain continuation (%d probes), drafts 1..i all "
                   "right:", probes);
            for (int i = 0; i < draft_max; i++)
                printf(" %.3f", probes ? (double)ok[i] / probes : 0.0);
            printf("\n");
        }
    }
    if (!rc && cfg->profile)
        rc = spec_profile(m, n_ctx, o, draft_max, draft_vocab, p_min, rewind, tv, prompt, (int)np,
                          n_gen, logits, &a, err);
    free(ta);
    free(tb);
    free(a.ids);
    free(b.ids);
    free(logits);
    free(prompt);
    spec_free(sp);
    q36_engine_free(e);
    tok_free(tv);
    q36_model_free(m);
    return rc;
}
