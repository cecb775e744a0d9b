/* chat.c: `q36 chat`: an interactive conversation with the model's chat
 * template (rendered by src/chat/chat_template.c), thinking on or off,
 * streaming replies.
 *
 * Turns reuse the session instead of re-reading the history: after each
 * prompt is evaluated up to the end of the last user turn, the session is
 * snapshotted with the ids it holds. The next turn renders the whole
 * conversation, and when it starts with those ids (it does unless the
 * system prompt changed) the snapshot is restored and only the rest — the
 * last reply as the template renders it, the new user turn and the
 * generation prompt — is evaluated. The reply itself cannot simply be kept:
 * the template drops the reasoning of earlier replies.
 *
 * Ctrl-C stops the reply being generated; Ctrl-D (end of input) or /exit
 * leaves. */
#include "cli.h"
#include "cli_gen.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/chat/chat.h"

static void usage(FILE *o)
{
    fprintf(o,
"usage: q36 chat [-m MODEL.gguf] [--system TEXT] [--think on|off] [flags]\n"
"\n"
"Reads user turns from standard input, one line each, and streams the replies.\n"
"Commands: /think on, /think off, /reset (forget the conversation), /exit.\n"
"\n"
"  --system TEXT        a system prompt\n"
"  --think on|off       thinking (default on: the reply starts with reasoning)\n"
"%s", cli_gen_flags_help);
}

typedef struct chat_cache {
    int32_t *ids;        /* the ids the snapshot holds */
    int      n;
    void    *state;
    uint64_t size, cap;
} chat_cache;

/* Evaluates `ids` (the whole rendered conversation up to the end of the
 * last user turn, then the generation prompt from index `n_hist`),
 * restoring the cached prefix when it matches. */
static int feed(cli_gen *g, chat_cache *c, const int32_t *ids, int n_hist, int n,
                cli_gen_stats *st, q36_err *err)
{
    int keep = 0;
    if (c->n > 0 && c->n <= n_hist && !memcmp(c->ids, ids, (size_t)c->n * sizeof *ids) &&
        q36_session_restore(g->sess, c->state, c->size, err) == 0)
        keep = c->n;
    else
        q36_session_reset(g->sess);
    int rc = 0;
    if (n_hist > keep && (rc = q36_session_append(g->sess, ids + keep, n_hist - keep, NULL,
                                                  Q36_LOGITS_NONE, err)))
        return rc;
    st->n_prompt += n_hist - keep;
    /* Snapshot the conversation before the generation prompt. */
    uint64_t need = q36_session_state_size(g->sess);
    if (need > c->cap) {
        void *p = realloc(c->state, need);
        if (!p)
            return q36_err_set(err, Q36_E_NOMEM, "out of memory for a %llu-byte snapshot",
                               (unsigned long long)need);
        c->state = p;
        c->cap = need;
    }
    int32_t *cid = realloc(c->ids, (size_t)(n_hist ? n_hist : 1) * sizeof *cid);
    if (!cid)
        return q36_err_set(err, Q36_E_NOMEM, "out of memory");
    c->ids = cid;
    memcpy(c->ids, ids, (size_t)n_hist * sizeof *ids);
    if ((rc = q36_session_snapshot(g->sess, c->state, c->cap, &c->size, err)))
        return rc;
    c->n = n_hist;
    return cli_gen_prefill(g, ids + n_hist, n - n_hist, st, err);
}

/* Renders messages and tokenizes them; *n_hist is the length of the render
 * without the generation prompt. */
static int render(cli_gen *g, const cJSON *msgs, int think, int32_t **ids, int *n_hist, int *n,
                  q36_err *err)
{
    chat_opts o = { .add_generation_prompt = false, .enable_thinking = think };
    char *hist = NULL, *full = NULL;
    size_t lh, lf, nh = 0, nf = 0;
    int32_t *h = NULL;
    int rc = chat_render(msgs, NULL, &o, &hist, &lh, err);
    o.add_generation_prompt = true;
    if (!rc)
        rc = chat_render(msgs, NULL, &o, &full, &lf, err);
    if (!rc)
        rc = tok_encode(g->tok, hist, lh, true, &h, &nh, err);
    if (!rc)
        rc = tok_encode(g->tok, full, lf, true, ids, &nf, err);
    /* The render without the generation prompt is a prefix of the full one,
     * and special tokens cut the text, so its ids are a prefix too. */
    if (!rc && (nh > nf || memcmp(h, *ids, nh * sizeof *h)))
        nh = 0;
    *n_hist = (int)nh;
    *n = (int)nf;
    free(hist);
    free(full);
    free(h);
    return rc;
}

static void add_msg(cJSON *msgs, const char *role, const char *content, const char *reasoning)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", role);
    cJSON_AddStringToObject(m, "content", content);
    if (reasoning && *reasoning)
        cJSON_AddStringToObject(m, "reasoning_content", reasoning);
    cJSON_AddItemToArray(msgs, m);
}

int cmd_chat(int argc, char **argv)
{
    cli_gen_opts o;
    cli_gen_opts_default(&o);
    const char *system = NULL;
    int think = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        enum cli_flag r = cli_gen_flag("chat", argc, argv, &i, &o);
        if (r == CLI_FLAG_BAD)
            return CLI_USAGE;
        if (r == CLI_FLAG_TAKEN)
            continue;
        if (!strcmp(a, "--system") && v) {
            system = v;
        } else if (!strcmp(a, "--think") && v && (!strcmp(v, "on") || !strcmp(v, "off"))) {
            think = !strcmp(v, "on");
        } else {
            return cli_usage("chat", "unknown flag '%s' or bad value", a);
        }
        i++;
    }
    q36_err err = { 0 };
    cli_gen g;
    if (cli_gen_open(&o, &g, &err))
        return cli_fail(&err);
    cli_gen_on_sigint();
    cJSON *msgs = cJSON_CreateArray();
    if (system)
        add_msg(msgs, "system", system, NULL);
    chat_cache cache = { 0 };
    char line[1 << 16];
    int rc = 0;
    fprintf(stderr, "q36 chat: thinking %s; /think on|off, /reset, /exit; Ctrl-C stops a reply\n",
            think ? "on" : "off");
    for (;;) {
        fprintf(stderr, "\n> ");
        cli_gen_interrupted = 0;
        if (!fgets(line, sizeof line, stdin)) {
            if (errno == EINTR && cli_gen_interrupted) {
                clearerr(stdin);
                continue;
            }
            break;
        }
        line[strcspn(line, "\n")] = 0;
        if (!line[0])
            continue;
        if (!strcmp(line, "/exit"))
            break;
        if (!strncmp(line, "/think ", 7)) {
            think = !strcmp(line + 7, "on");
            fprintf(stderr, "thinking %s\n", think ? "on" : "off");
            continue;
        }
        if (!strcmp(line, "/reset")) {
            cJSON_Delete(msgs);
            msgs = cJSON_CreateArray();
            if (system)
                add_msg(msgs, "system", system, NULL);
            q36_session_reset(g.sess);
            cache.n = 0;
            continue;
        }
        add_msg(msgs, "user", line, NULL);
        int32_t *ids = NULL;
        int n_hist = 0, n = 0;
        cli_gen_stats st = { 0 };
        char *reply = NULL;
        size_t reply_len = 0;
        q36_err_clear(&err);
        if (render(&g, msgs, think, &ids, &n_hist, &n, &err) ||
            feed(&g, &cache, ids, n_hist, n, &st, &err) ||
            cli_gen_generate(&g, &o, &st, &reply, &reply_len, &err)) {
            fprintf(stderr, "\nq36: %s\n", err.msg);
            /* The turn failed: forget it, keep the conversation before it. */
            cJSON_DeleteItemFromArray(msgs, cJSON_GetArraySize(msgs) - 1);
            free(ids);
            free(reply);
            rc = 0;
            continue;
        }
        cli_gen_report(&st);
        chat_reply r = { 0 };
        if (chat_parse(reply ? reply : "", reply_len, think, &r, &err) == 0)
            add_msg(msgs, "assistant", r.content, r.reasoning);
        else
            add_msg(msgs, "assistant", reply ? reply : "", NULL);
        chat_reply_free(&r);
        free(ids);
        free(reply);
    }
    cJSON_Delete(msgs);
    free(cache.ids);
    free(cache.state);
    cli_gen_close(&g);
    fprintf(stderr, "\n");
    return rc;
}
