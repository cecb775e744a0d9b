/* cli_gen.c: the command-line side of generation shared by `q36 run` and
 * `q36 chat` (cli_gen.h): flags, opening, prefill, and streaming what
 * src/gen/gen.c produces to stdout. */
#include "cli_gen.h"
#include "cli.h"
#include "../src/model/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

volatile sig_atomic_t cli_gen_interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    cli_gen_interrupted = 1;
}

void cli_gen_on_sigint(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void cli_gen_opts_default(cli_gen_opts *o)
{
    memset(o, 0, sizeof *o);
    o->sess = q36_session_opts_default();
    o->gen = gen_params_default();
    o->gen.device_greedy = true;   /* greedy replies read one id a step, not the logits */
    /* sampled ones with top_k, a step's k best (Q36_RUN_TOPK=0: whole rows) */
    const char *tk = getenv("Q36_RUN_TOPK");
    o->gen.device_top = !tk || strcmp(tk, "0") != 0;
    o->draft_max = 3;
    o->draft_vocab = Q36_DRAFT_VOCAB_AUTO;
    o->draft_rewind = true;
}

const char cli_gen_flags_help[] =
"  -m FILE              model (default: the embedded default model)\n"
"  -c N                 context length (default: training context, at most 4096)\n"
"  -n N                 tokens to generate (default -1: until end of generation)\n"
"  -t N                 threads (default 1; 0 = every CPU)\n"
"  -b N                 tokens per prompt batch (default 512)\n"
"  -ctk T, -ctv T       K/V cache types: f16 (default), f32 or q8_0\n"
"  --temp T             temperature (default 0.8; 0 = greedy)\n"
"  --top-k K            (default 40; 0 = off)    --top-p P   (default 0.95; 1 = off)\n"
"  --min-p P            (default 0.05; 0 = off)\n"
"  --repeat-penalty R   (default 1.0 = off)      --repeat-last-n N (default 64)\n"
"  --presence-penalty P --frequency-penalty F    (default 0 = off)\n"
"  --seed S             random seed (default: random)\n"
"  --print-ids          print generated token ids on one line instead of text\n"
CLI_DEVICE_HELP
"  --spec-type T        speculative decoding: none (default) or draft-mtp (drafts from\n"
"                       the model's MTP block; the output is the same tokens)\n"
"  --draft-max N        tokens drafted per verify pass (default 3)\n"
"  --draft-vocab N      the MTP head over N ids only (the lowest ids with a non-zero\n"
"                       head row); 0 = all, as llama.cpp; default: all where a greedy\n"
"                       choice from the head is cheap here (a GPU, a CPU with AVX-512\n"
"                       VNNI and a Q8_0 head), else 8192\n"
"  --draft-p-min P      stop a round's drafts at one whose probability among the MTP\n"
"                       head's 10 best is below P (default 0)\n"
"  --draft-rollback R   states (default: the verify pass keeps the DeltaNet state after\n"
"                       each row) or replay (a checkpoint, then the kept rows again)\n";

enum cli_flag cli_gen_flag(const char *cmd, int argc, char **argv, int *i, cli_gen_opts *o)
{
    const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    smp_params *sp = &o->gen.smp;
    int64_t x;
    double d;
    if (!strcmp(a, "--print-ids")) {
        o->print_ids = true;
        return CLI_FLAG_TAKEN;
    }
    const int dv = cli_device_flag(cmd, argc, argv, i, &o->sess.backend);
    if (dv)
        return dv < 0 ? CLI_USAGE + 100 : 1;
    if (cli_mode_flag(a, &o->sess.fast))
        return CLI_FLAG_TAKEN;
#define INT(flag, lo, hi, dst) \
    if (!strcmp(a, flag)) { if (cli_int(cmd, flag, v, lo, hi, &x)) return CLI_FLAG_BAD; dst = (int)x; ++*i; return CLI_FLAG_TAKEN; }
#define FLT(flag, dst) \
    if (!strcmp(a, flag)) { if (cli_float(cmd, flag, v, &d)) return CLI_FLAG_BAD; dst = (float)d; ++*i; return CLI_FLAG_TAKEN; }
    INT("-c", 1, 1 << 24, o->n_ctx);
    INT("-n", -1, 1 << 24, o->gen.n_predict);
    INT("-t", 0, 1024, o->sess.n_threads);
    INT("-b", 1, 1 << 16, o->sess.n_batch);
    INT("--top-k", 0, 1 << 24, sp->top_k);
    INT("--draft-max", 1, SPEC_MAX_DRAFT, o->draft_max);
    INT("--draft-vocab", 0, 1 << 24, o->draft_vocab);
    INT("--repeat-last-n", 0, 1 << 24, sp->penalty_last_n);
    FLT("--temp", sp->temp);
    FLT("--top-p", sp->top_p);
    FLT("--min-p", sp->min_p);
    FLT("--draft-p-min", o->draft_p_min);
    FLT("--repeat-penalty", sp->repeat_penalty);
    FLT("--presence-penalty", sp->presence_penalty);
    FLT("--frequency-penalty", sp->frequency_penalty);
#undef INT
#undef FLT
    if (!strcmp(a, "--seed")) {
        if (cli_int(cmd, a, v, 0, UINT32_MAX, &x))
            return CLI_FLAG_BAD;
        sp->seed = (uint32_t)x;
        ++*i;
        return CLI_FLAG_TAKEN;
    }
    if (!strcmp(a, "--draft-rollback")) {
        if (v && (!strcmp(v, "states") || !strcmp(v, "replay"))) {
            o->draft_rewind = !strcmp(v, "states");
            ++*i;
            return CLI_FLAG_TAKEN;
        }
        cli_usage(cmd, "--draft-rollback expects replay or states, got '%s'", v ? v : "(nothing)");
        return CLI_FLAG_BAD;
    }
    if (!strcmp(a, "--spec-type")) {
        /* chat restores its history from snapshots, which hold no MTP rows */
        if (strcmp(cmd, "run") && v && strcmp(v, "none")) {
            cli_usage(cmd, "--spec-type draft-mtp is for q36 run (and q36 bench) only today");
            return CLI_FLAG_BAD;
        }
        if (v && (!strcmp(v, "draft-mtp") || !strcmp(v, "none"))) {
            o->spec_mtp = !strcmp(v, "draft-mtp");
            ++*i;
            return CLI_FLAG_TAKEN;
        }
        cli_usage(cmd, "--spec-type expects none or draft-mtp, got '%s'", v ? v : "(nothing)");
        return CLI_FLAG_BAD;
    }
    if (!strcmp(a, "-m")) {
        if (!v) {
            cli_usage(cmd, "-m needs a file");
            return CLI_FLAG_BAD;
        }
        o->model = v;
        ++*i;
        return CLI_FLAG_TAKEN;
    }
    bool is_k = !strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k");
    bool is_v = !strcmp(a, "-ctv") || !strcmp(a, "--cache-type-v");
    if (is_k || is_v) {
        int t = q36_kv_type_parse(v);
        if (t < 0) {
            cli_usage(cmd, "%s expects f16, f32 or q8_0, got '%s'", a, v ? v : "(nothing)");
            return CLI_FLAG_BAD;
        }
        *(is_k ? &o->sess.type_k : &o->sess.type_v) = t;
        ++*i;
        return CLI_FLAG_TAKEN;
    }
    return CLI_FLAG_OTHER;
}

int cli_gen_open(const cli_gen_opts *o, cli_gen *g, q36_err *err)
{
    memset(g, 0, sizeof *g);
    const char *path = o->model ? o->model : cli_default_model();
    double t0 = now();
    fprintf(stderr, "q36: loading %s\n", path);
    int rc = q36_model_open(path, &g->model, err);
    if (rc)
        return rc;
    const model_hparams *hp = q36_model_hparams(g->model);
    if ((rc = tok_new_from_gguf(q36_model_gguf(g->model), &g->tok, err)))
        goto fail;
    int n_ctx = o->n_ctx ? o->n_ctx : (int)(hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096);
    q36_session_opts so = o->sess;
    so.mtp = o->spec_mtp;
    if (o->spec_mtp && o->draft_rewind)
        so.n_keep = o->draft_max + 1;
    q36_mem_plan plan;
    if ((rc = q36_session_plan(g->model, n_ctx, &so, &plan, err)))
        goto fail;
    fprintf(stderr, "q36: %s, %u layers, vocab %u; context %d: K/V %.1f MiB + state %.1f MiB + scratch %.1f MiB\n",
            hp->arch_name, hp->n_layer, hp->n_vocab, n_ctx, plan.kv / 1048576.0,
            plan.recurrent / 1048576.0, plan.scratch / 1048576.0);
    if ((rc = cli_device_check(g->model, n_ctx, &so, 0, err)) ||
        (rc = q36_session_new(g->model, n_ctx, &so, &g->sess, err)))
        goto fail;
    if (o->spec_mtp && (rc = spec_new(q36_session_engine(g->sess), q36_session_slot(g->sess),
                                      o->draft_max, &g->spec, err)))
        goto fail;
    if (o->spec_mtp && (rc = q36_mtp_draft_vocab(q36_session_engine(g->sess), o->draft_vocab, err)))
        goto fail;
    if (g->spec) {
        spec_set_p_min(g->spec, o->draft_p_min);
        spec_set_rewind(g->spec, o->draft_rewind);
    }
    g->n_vocab = q36_session_n_vocab(g->sess);
    if ((rc = gen_new(&o->gen, g->tok, g->n_vocab, &g->gen, err)))
        goto fail;
    if (!(g->logits = malloc((size_t)g->n_vocab * sizeof *g->logits))) {
        rc = q36_err_set(err, Q36_E_NOMEM, "out of memory for %d logits", g->n_vocab);
        goto fail;
    }
    fprintf(stderr, "q36: ready in %.2f s (seed %u)\n", now() - t0, gen_seed(g->gen));
    return 0;
fail:
    cli_gen_close(g);
    return rc;
}

void cli_gen_close(cli_gen *g)
{
    free(g->logits);
    spec_free(g->spec);
    gen_free(g->gen);
    q36_session_free(g->sess);
    tok_free(g->tok);
    q36_model_free(g->model);
    memset(g, 0, sizeof *g);
}

int cli_gen_prefill(cli_gen *g, const int32_t *ids, int n, cli_gen_stats *st, q36_err *err)
{
    if (n <= 0)
        return q36_err_set(err, Q36_E_ARG, "the prompt is empty: nothing to continue from");
    if (q36_session_pos(g->sess) + n >= q36_session_n_ctx(g->sess))
        return q36_err_set(err, Q36_E_ARG, "the prompt (%d tokens, %d already in context) does not fit a context of %d; raise -c",
                           n, q36_session_pos(g->sess), q36_session_n_ctx(g->sess));
    double t0 = now();
    int rc = g->spec ? spec_prefill(g->spec, ids, n, g->logits, err)
                     : q36_session_append(g->sess, ids, n, g->logits, Q36_LOGITS_LAST, err);
    st->t_prompt += now() - t0;
    st->n_prompt += n;
    return rc;
}

/* What the emit callback writes to. */
typedef struct sink {
    const cli_gen *g;
    bool    print_ids;
    int     n;              /* ids printed */
    char  **out;            /* the raw reply, special tokens included, or NULL */
    size_t *out_len, cap;
    q36_err *err;
} sink;

static int append_bytes(sink *k, const char *p, size_t n)
{
    if (*k->out_len + n + 1 > k->cap) {
        size_t c = k->cap ? k->cap * 2 : 4096;
        while (c < *k->out_len + n + 1)
            c *= 2;
        char *b = realloc(*k->out, c);
        if (!b)
            return q36_err_set(k->err, Q36_E_NOMEM, "out of memory");
        *k->out = b;
        k->cap = c;
    }
    memcpy(*k->out + *k->out_len, p, n);
    *k->out_len += n;
    (*k->out)[*k->out_len] = 0;
    return 0;
}

static int emit(void *user, const gen_token *t)
{
    sink *k = user;
    if (k->print_ids && t->id >= 0)
        printf(k->n++ ? " %d" : "%d", t->id);
    else if (!k->print_ids)
        fwrite(t->text, 1, t->len, stdout);
    fflush(stdout);
    if (k->out && t->id >= 0) {
        size_t n;
        const char *p = tok_piece(k->g->tok, t->id, true, &n);
        if (p)
            return append_bytes(k, p, n);
    }
    return 0;
}

int cli_gen_generate(cli_gen *g, const cli_gen_opts *o, cli_gen_stats *st, char **out,
                     size_t *out_len, q36_err *err)
{
    sink k = { .g = g, .print_ids = o->print_ids, .out = out, .out_len = out_len, .err = err };
    if (out) {
        *out = NULL;
        *out_len = 0;
    }
    gen_restart(g->gen);
    gen_result res = { 0 };
    int rc = g->spec ? spec_run(g->spec, g->gen, g->logits, &cli_gen_interrupted, emit, &k, &res, err)
                     : gen_run(g->gen, g->sess, g->logits, &cli_gen_interrupted, emit, &k, &res, err);
    st->n_gen += res.n_gen;
    st->t_gen += res.t_gen;
    st->stop = res.stop;
    return rc;
}

void cli_gen_report(const cli_gen_stats *st)
{
    fprintf(stderr, "\nq36: prompt %d tokens in %.3f s (%.2f tok/s); generated %d tokens in %.3f s (%.2f tok/s)%s\n",
            st->n_prompt, st->t_prompt, st->t_prompt > 0 ? st->n_prompt / st->t_prompt : 0.0,
            st->n_gen, st->t_gen, st->t_gen > 0 ? st->n_gen / st->t_gen : 0.0,
            st->stop == GEN_STOP_USER ? " (stopped by Ctrl-C)" : st->stop == GEN_STOP_CTX ? " (context full)" :
            st->stop == GEN_STOP_EOG ? " (end of generation)" : "");
}

void cli_gen_report_spec(const spec *s)
{
    const spec_stats *t = spec_get_stats(s);
    fprintf(stderr, "q36: draft-mtp: %lld verify passes, %lld drafted, %lld accepted (%.1f%%), "
            "%.2f tokens per pass; acceptance by position:",
            (long long)t->rounds, (long long)t->drafted, (long long)t->accepted,
            t->drafted ? 100.0 * t->accepted / t->drafted : 0.0,
            t->rounds ? (double)t->emitted / t->rounds : 0.0);
    for (int i = 0; i < SPEC_MAX_DRAFT && t->drafted_at[i]; i++)
        fprintf(stderr, " %.3f", (double)t->accepted_at[i] / t->drafted_at[i]);
    fprintf(stderr, "\nq36: draft-mtp time: draft %.3f s, verify %.3f s, rollback %.3f s "
            "(%lld replays, %lld rows; %lld rewinds), prompt MTP rows %.3f s\n", t->t_draft,
            t->t_verify, t->t_rollback, (long long)t->replays, (long long)t->replay_rows,
            (long long)t->rewinds, t->t_catchup);
}
