/* logits.c: `q36 logits`: evaluate a list of token ids in one session and
 * write float32 logits, row-major [positions][n_vocab], of the last
 * position or (--all) of every position; prints "positions n_vocab". The
 * test suite compares this file with llama.cpp's (build/oracle logits).
 * --split N evaluates the prompt as appends of N tokens (then one token per
 * append with N = 1) so a test can compare prefill with decode.
 * --greedy N then decodes N tokens one at a time, each the argmax (ties to
 * the lower id) of the previous logits, prints their ids on one line and
 * writes the N rows they were chosen from instead (as `oracle greedy
 * --logits` does). --mtp writes the MTP head's logits of every row instead:
 * row p from (id p, the trunk's hidden row of p-1, zeros at p = 0), as
 * `oracle mtp` does. */
#include "cli.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/include/q36.h"

static void usage(FILE *o)
{
    fprintf(o,
"usage: q36 logits [-m MODEL.gguf] (--ids \"1 2 3\" | --ids-file F) -o OUT.f32 [--all]\n"
"                  [-t N] [-c N] [-b N] [-ctk f32|f16|q8_0] [-ctv f32|f16|q8_0] [--split N]\n"
"                  [--greedy N] [--fast|--exact] [--profile] [--mtp] [-ngl N] [--device D]\n"
"\n"
"Evaluates the ids from position 0 and writes float32 logits [positions][n_vocab]\n"
"(row-major) of the last position, or of every position with --all. Prints\n"
"\"positions n_vocab\" on stdout.\n"
"\n"
"  --ids LIST     token ids separated by spaces, commas or newlines\n"
"  --ids-file F   the same, read from a file\n"
"  -o FILE        output file\n"
"  --all          every position instead of the last\n"
"  -t N           threads (default 1)\n"
"  -c N           context (default: the number of ids)\n"
"  -b N           tokens per forward batch (default 512)\n"
"  -ctk T -ctv T  K/V cache types, f32, f16 or q8_0 (default f16)\n"
"  --split N      append the ids N at a time (default: all at once)\n"
"  --profile      time every backend op (a diagnostic: the logits do not change)\n"
"  --greedy N     then generate N tokens greedily: print their ids, write the\n"
"                N rows [N][n_vocab] they were chosen from\n"
"  --mtp          the MTP head's logits of every row instead: row p from id p and\n"
"                the trunk's hidden row of p-1 (zeros at p = 0), [n][n_vocab]\n"
"%s", cli_device_help);
}

/* --mtp: the trunk over every id (its hidden rows), then the MTP block
 * over (id p, hidden row p-1) for every p, in one pass each. */
static int mtp_logits(const char *model, const int32_t *ids, int n, q36_engine_opts *o,
                      const char *outp)
{
    q36_err err = { 0 };
    q36_model *m = NULL;
    q36_engine *e = NULL;
    int rc = CLI_ERROR;
    o->mtp = 1;
    if (o->n_batch < n)
        o->n_batch = n;
    float *h = NULL, *logits = NULL;
    int32_t *slot = calloc((size_t)n, sizeof *slot), *pos = malloc((size_t)n * sizeof *pos);
    if (q36_model_open(model, &m, &err) || q36_engine_new(m, n, o, &e, &err)) {
        cli_fail(&err);
        goto done;
    }
    const int64_t V = q36_engine_n_vocab(e), D = q36_engine_n_embd(e);
    h = calloc((size_t)(n + 1) * D, sizeof *h);
    logits = malloc((size_t)n * V * sizeof *logits);
    if (!h || !logits || !slot || !pos) {
        fprintf(stderr, "q36: out of memory for %d rows\n", n);
        goto done;
    }
    for (int i = 0; i < n; i++)
        pos[i] = i;
    const q36_batch b = { n, ids, slot, pos, n, pos };
    if (q36_engine_eval(e, &b, NULL, h + D, &err) ||
        q36_mtp_eval(e, &b, h, Q36_MTP_H_TRUNK, logits, NULL, &err)) {
        cli_fail(&err);
        goto done;
    }
    FILE *f = fopen(outp, "wb");
    if (!f || fwrite(logits, sizeof(float), (size_t)n * V, f) != (size_t)n * V || fclose(f)) {
        fprintf(stderr, "q36: %s: cannot write: %s\n", outp, strerror(errno));
        goto done;
    }
    printf("%d %lld\n", n, (long long)V);
    rc = CLI_OK;
done:
    free(h), free(logits), free(slot), free(pos);
    q36_engine_free(e);
    q36_model_free(m);
    return rc;
}

int cmd_logits(int argc, char **argv)
{
    const char *C = "logits";
    const char *model = NULL, *ids_s = NULL, *ids_file = NULL, *outp = NULL;
    bool all = false, mtp = false;
    int64_t v, n_ctx = 0, split = 0, greedy = 0;
    q36_session_opts o = q36_session_opts_default();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *nx = i + 1 < argc ? argv[i + 1] : NULL;
        int dv = cli_device_flag(C, argc, argv, &i, &o.backend);
        if (dv < 0)
            return CLI_USAGE;
        if (dv)
            continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-m") && nx) {
            model = argv[++i];
        } else if (!strcmp(a, "--ids") && nx) {
            ids_s = argv[++i];
        } else if (!strcmp(a, "--ids-file") && nx) {
            ids_file = argv[++i];
        } else if (!strcmp(a, "-o") && nx) {
            outp = argv[++i];
        } else if (!strcmp(a, "--all")) {
            all = true;
        } else if (!strcmp(a, "--mtp")) {
            mtp = true;
        } else if (cli_mode_flag(a, &o.fast)) {
        } else if (!strcmp(a, "--profile")) {
            o.profile = 1;
        } else if (!strcmp(a, "-t") && nx) {
            if (cli_int(C, a, argv[++i], 0, 256, &v)) return CLI_USAGE;
            o.n_threads = (int)v;
        } else if (!strcmp(a, "-c") && nx) {
            if (cli_int(C, a, argv[++i], 1, 1 << 24, &n_ctx)) return CLI_USAGE;
        } else if (!strcmp(a, "-b") && nx) {
            if (cli_int(C, a, argv[++i], 1, 65536, &v)) return CLI_USAGE;
            o.n_batch = (int)v;
        } else if (!strcmp(a, "--split") && nx) {
            if (cli_int(C, a, argv[++i], 1, 1 << 24, &split)) return CLI_USAGE;
        } else if (!strcmp(a, "--greedy") && nx) {
            if (cli_int(C, a, argv[++i], 1, 1 << 20, &greedy)) return CLI_USAGE;
        } else if ((!strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k")) && nx) {
            if ((o.type_k = q36_kv_type_parse(argv[++i])) < 0)
                return cli_usage(C, "%s expects f32, f16 or q8_0, got '%s'", a, argv[i]);
        } else if ((!strcmp(a, "-ctv") || !strcmp(a, "--cache-type-v")) && nx) {
            if ((o.type_v = q36_kv_type_parse(argv[++i])) < 0)
                return cli_usage(C, "%s expects f32, f16 or q8_0, got '%s'", a, argv[i]);
        } else {
            return cli_usage(C, "unknown or incomplete flag '%s'", a);
        }
    }
    if (greedy && all)
        return cli_usage(C, "--greedy and --all do not go together");
    if (!ids_s == !ids_file)
        return cli_usage(C, "give exactly one of --ids and --ids-file");
    if (!outp)
        return cli_usage(C, "-o OUT is required");
    if (!model)
        model = cli_default_model();

    q36_err err = { 0 };
    char *owned = NULL;
    if (ids_file && !(owned = cli_read_file(ids_file, NULL, &err)))
        return cli_fail(&err);
    int32_t *ids = NULL;
    int n = 0;
    int prc = cli_parse_ids(C, ids_s ? ids_s : owned, &ids, &n);
    if (prc || n == 0) {
        free(owned);
        free(ids);
        return prc ? prc : cli_usage(C, "the ids must be one or more non-negative integers");
    }
    free(owned);

    if (mtp) {
        if (greedy || split)
            return cli_usage(C, "--mtp goes with neither --greedy nor --split");
        int r = mtp_logits(model, ids, n, &o, outp);
        free(ids);
        return r;
    }
    q36_model *m = NULL;
    q36_session *s = NULL;
    float *logits = NULL;
    FILE *f = NULL;
    int rc = CLI_ERROR;
    if (q36_model_open(model, &m, &err) ||
        cli_device_check(m, n_ctx ? (int)n_ctx : n + (int)greedy, &o, 0, &err) ||
        q36_session_new(m, n_ctx ? (int)n_ctx : n + (int)greedy, &o, &s, &err)) {
        cli_fail(&err);
        goto done;
    }
    const int64_t V = q36_session_n_vocab(s);
    const int rows = greedy ? (int)greedy : all ? n : 1;
    logits = malloc((size_t)rows * (size_t)V * sizeof(float));
    if (!logits) {
        fprintf(stderr, "q36: out of memory for %d x %lld logits\n", rows, (long long)V);
        goto done;
    }
    int step = split ? (int)split : n;
    for (int i = 0; i < n; i += step) {
        int c = n - i < step ? n - i : step;
        float *dst = all ? logits + (size_t)i * V : logits;
        enum q36_logits w = all ? Q36_LOGITS_ALL : (i + c == n ? Q36_LOGITS_LAST : Q36_LOGITS_NONE);
        if (q36_session_append(s, ids + i, c, dst, w, &err)) {
            cli_fail(&err);
            goto done;
        }
    }
    if (greedy) {
        /* the prompt's last row sits in row 0 and picks the first token;
         * row g is the one token g was chosen from */
        for (int g = 0; g < greedy; g++) {
            const float *r = logits + (size_t)g * V;
            int32_t best = 0;
            for (int64_t t = 1; t < V; t++)
                if (r[t] > r[best])
                    best = (int32_t)t;
            printf(g ? " %d" : "%d", best);
            if (g + 1 < greedy && q36_session_decode(s, best, logits + (size_t)(g + 1) * V, &err)) {
                printf("\n");
                cli_fail(&err);
                goto done;
            }
        }
        printf("\n");
    }
    f = fopen(outp, "wb");
    if (!f || fwrite(logits, sizeof(float), (size_t)rows * V, f) != (size_t)rows * V) {
        fprintf(stderr, "q36: %s: cannot write: %s\n", outp, strerror(errno));
        goto done;
    }
    if (fclose(f)) {
        f = NULL;
        fprintf(stderr, "q36: %s: cannot write: %s\n", outp, strerror(errno));
        goto done;
    }
    f = NULL;
    if (!greedy)
        printf("%d %lld\n", rows, (long long)V);
    rc = CLI_OK;
done:
    if (f)
        fclose(f);
    free(logits);
    free(ids);
    q36_session_free(s);
    q36_model_free(m);
    return rc;
}
