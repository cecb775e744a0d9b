/* gen.c: the shared generation path of `q36 run` and `q36 chat` (gen.h). */
#include "gen.h"
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

volatile sig_atomic_t gen_interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    gen_interrupted = 1;
}

void gen_on_sigint(void)
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

void gen_opts_default(gen_opts *o)
{
    memset(o, 0, sizeof *o);
    o->n_predict = -1;
    o->sess = q36_session_opts_default();
    o->smp = smp_defaults();
}

const char gen_flags_help[] =
"  -m FILE              model (default: the embedded default model)\n"
"  -c N                 context length (default: training context, at most 4096)\n"
"  -n N                 tokens to generate (default -1: until end of generation)\n"
"  -t N                 threads (default 1; 0 = every CPU)\n"
"  -b N                 tokens per prompt batch (default 512)\n"
"  -ctk T, -ctv T       K/V cache types: f16 (default) or f32\n"
"  --temp T             temperature (default 0.8; 0 = greedy)\n"
"  --top-k K            (default 40; 0 = off)    --top-p P   (default 0.95; 1 = off)\n"
"  --min-p P            (default 0.05; 0 = off)\n"
"  --repeat-penalty R   (default 1.0 = off)      --repeat-last-n N (default 64)\n"
"  --presence-penalty P --frequency-penalty F    (default 0 = off)\n"
"  --seed S             random seed (default: random)\n"
"  --print-ids          print generated token ids on one line instead of text\n"
"  -ngl N               layers on the GPU (llama.cpp's flag): 0 = the CPU (default),\n"
"                       any N > 0 = the whole model on the CUDA device\n"
"  -dev, --device D     none/cpu, cuda or CUDAi (device i; default 0)\n";

static int kv_type(const char *s)
{
    if (s && !strcmp(s, "f16"))
        return Q36_KV_F16;
    if (s && !strcmp(s, "f32"))
        return Q36_KV_F32;
    return -1;
}

int gen_flag(const char *cmd, int argc, char **argv, int *i, gen_opts *o)
{
    const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    int64_t x;
    double d;
    int rc = 0;
    if (!strcmp(a, "--print-ids")) {
        o->print_ids = true;
        return 1;
    }
    const int dv = cli_device_flag(cmd, argc, argv, i, &o->sess.backend);
    if (dv)
        return dv < 0 ? CLI_USAGE + 100 : 1;
#define INT(flag, lo, hi, dst) \
    if (!strcmp(a, flag)) { if ((rc = cli_int(cmd, flag, v, lo, hi, &x))) return rc + 100; dst = (int)x; ++*i; return 1; }
#define FLT(flag, dst) \
    if (!strcmp(a, flag)) { if ((rc = cli_float(cmd, flag, v, &d))) return rc + 100; dst = (float)d; ++*i; return 1; }
    INT("-c", 1, 1 << 24, o->n_ctx);
    INT("-n", -1, 1 << 24, o->n_predict);
    INT("-t", 0, 1024, o->sess.n_threads);
    INT("-b", 1, 1 << 16, o->sess.n_batch);
    INT("--top-k", 0, 1 << 24, o->smp.top_k);
    INT("--repeat-last-n", 0, 1 << 24, o->smp.penalty_last_n);
    FLT("--temp", o->smp.temp);
    FLT("--top-p", o->smp.top_p);
    FLT("--min-p", o->smp.min_p);
    FLT("--repeat-penalty", o->smp.repeat_penalty);
    FLT("--presence-penalty", o->smp.presence_penalty);
    FLT("--frequency-penalty", o->smp.frequency_penalty);
#undef INT
#undef FLT
    if (!strcmp(a, "--seed")) {
        if ((rc = cli_int(cmd, a, v, 0, UINT32_MAX, &x)))
            return rc + 100;
        o->smp.seed = (uint32_t)x;
        ++*i;
        return 1;
    }
    if (!strcmp(a, "-m")) {
        if (!v)
            return cli_usage(cmd, "-m needs a file") + 100;
        o->model = v;
        ++*i;
        return 1;
    }
    if (!strcmp(a, "-ctk") || !strcmp(a, "-ctv") || !strcmp(a, "--cache-type-k") ||
        !strcmp(a, "--cache-type-v")) {
        int t = kv_type(v);
        if (t < 0)
            return cli_usage(cmd, "%s expects f16 or f32, got '%s'", a, v ? v : "(nothing)") + 100;
        if (a[strlen(a) - 1] == 'k')
            o->sess.type_k = t;
        else
            o->sess.type_v = t;
        ++*i;
        return 1;
    }
    return 0;
}

int gen_open(const gen_opts *o, gen_ctx *g, q36_err *err)
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
    q36_mem_plan plan;
    if ((rc = q36_session_plan(g->model, n_ctx, &o->sess, &plan, err)))
        goto fail;
    fprintf(stderr, "q36: %s, %u layers, vocab %u; context %d: K/V %.1f MiB + state %.1f MiB + scratch %.1f MiB\n",
            hp->arch_name, hp->n_layer, hp->n_vocab, n_ctx, plan.kv / 1048576.0,
            plan.recurrent / 1048576.0, plan.scratch / 1048576.0);
    if ((rc = cli_device_check(g->model, n_ctx, &o->sess, 0, err)) ||
        (rc = q36_session_new(g->model, n_ctx, &o->sess, &g->sess, err)))
        goto fail;
    g->n_vocab = q36_session_n_vocab(g->sess);
    if ((rc = smp_new(&o->smp, g->n_vocab, &g->smp, err)))
        goto fail;
    if (!(g->logits = malloc((size_t)g->n_vocab * sizeof *g->logits))) {
        rc = q36_err_set(err, Q36_E_NOMEM, "out of memory for %d logits", g->n_vocab);
        goto fail;
    }
    fprintf(stderr, "q36: ready in %.2f s (seed %u)\n", now() - t0, smp_seed(g->smp));
    return 0;
fail:
    gen_close(g);
    return rc;
}

void gen_close(gen_ctx *g)
{
    free(g->logits);
    smp_free(g->smp);
    q36_session_free(g->sess);
    tok_free(g->tok);
    q36_model_free(g->model);
    memset(g, 0, sizeof *g);
}

int gen_prefill(gen_ctx *g, const int32_t *ids, int n, gen_stats *st, q36_err *err)
{
    if (n <= 0)
        return q36_err_set(err, Q36_E_ARG, "the prompt is empty: nothing to continue from");
    if (q36_session_pos(g->sess) + n >= q36_session_n_ctx(g->sess))
        return q36_err_set(err, Q36_E_ARG, "the prompt (%d tokens, %d already in context) does not fit a context of %d; raise -c",
                           n, q36_session_pos(g->sess), q36_session_n_ctx(g->sess));
    double t0 = now();
    int rc = q36_session_append(g->sess, ids, n, g->logits, Q36_LOGITS_LAST, err);
    st->t_prompt += now() - t0;
    st->n_prompt += n;
    return rc;
}

static int append_bytes(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap * 2 : 4096;
        while (c < *len + n + 1)
            c *= 2;
        char *b = realloc(*buf, c);
        if (!b)
            return -1;
        *buf = b;
        *cap = c;
    }
    memcpy(*buf + *len, p, n);
    *len += n;
    (*buf)[*len] = 0;
    return 0;
}

int gen_generate(gen_ctx *g, const gen_opts *o, gen_stats *st, char **out, size_t *out_len,
                 q36_err *err)
{
    tok_stream ts;
    tok_stream_init(&ts);
    char *piece = malloc(tok_max_piece(g->tok) + 8);
    size_t cap = 0;
    if (out) {
        *out = NULL;
        *out_len = 0;
    }
    if (!piece)
        return q36_err_set(err, Q36_E_NOMEM, "out of memory");
    int rc = 0;
    double t0 = now();
    for (int i = 0; o->n_predict < 0 || i < o->n_predict; i++) {
        if (gen_interrupted) {
            st->stopped_user = true;
            break;
        }
        if (q36_session_pos(g->sess) >= q36_session_n_ctx(g->sess)) {
            st->stopped_ctx = true;
            break;
        }
        int32_t id = smp_sample(g->smp, g->logits, g->n_vocab);
        if (id < 0) {
            rc = q36_err_set(err, Q36_E_ARG, "sampler failed on a row of %d logits", g->n_vocab);
            break;
        }
        smp_accept(g->smp, id);
        bool eog = tok_is_eog(g->tok, id);
        if (o->print_ids) {
            printf(i ? " %d" : "%d", id);
        } else if (!eog) {
            size_t n = tok_stream_token(&ts, g->tok, id, false, piece);
            fwrite(piece, 1, n, stdout);
        }
        fflush(stdout);
        if (out) {
            size_t n;
            const char *p = tok_piece(g->tok, id, true, &n);
            if (p && append_bytes(out, out_len, &cap, p, n)) {
                rc = q36_err_set(err, Q36_E_NOMEM, "out of memory");
                break;
            }
        }
        st->n_gen++;
        /* The end-of-generation token is evaluated too: the session then
         * holds the whole reply for the next turn. */
        if ((rc = q36_session_decode(g->sess, id, g->logits, err)))
            break;
        if (eog) {
            st->stopped_eog = true;
            break;
        }
    }
    if (!o->print_ids) {
        size_t n = tok_stream_flush(&ts, piece);
        fwrite(piece, 1, n, stdout);
    }
    st->t_gen += now() - t0;
    free(piece);
    return rc;
}

void gen_report(const gen_stats *st)
{
    fprintf(stderr, "\nq36: prompt %d tokens in %.3f s (%.2f tok/s); generated %d tokens in %.3f s (%.2f tok/s)%s\n",
            st->n_prompt, st->t_prompt, st->t_prompt > 0 ? st->n_prompt / st->t_prompt : 0.0,
            st->n_gen, st->t_gen, st->t_gen > 0 ? st->n_gen / st->t_gen : 0.0,
            st->stopped_user ? " (stopped by Ctrl-C)" : st->stopped_ctx ? " (context full)" :
            st->stopped_eog ? " (end of generation)" : "");
}
