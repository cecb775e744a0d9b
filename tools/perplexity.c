/* perplexity.c: `q36 perplexity`: llama-perplexity's measurement, on q36.
 *
 * The method is llama.cpp's tools/perplexity (its default, ppl_stride 0):
 * the whole file is tokenized once (add_special: a BOS only where the model
 * asks for one, parse_special off), cut into n_chunk = n_tokens / n_ctx
 * chunks of n_ctx tokens (the tail is dropped, and fewer than 2 n_ctx tokens
 * is an error), each chunk is evaluated from position 0 in a fresh session
 * (its first token replaced by BOS when the model adds one), and only the
 * second half is scored: the row of position j (first = n_ctx/2 <= j <=
 * n_ctx-2) against token j+1, with log-softmax as llama.cpp takes it (max in
 * float, the sum of expf(l - max) in double). It prints the running
 * perplexity after each chunk, "[1]x,[2]y,...", then
 * "Final estimate: PPL = P +/- E", E = P * sqrt(var(nll) / (count-1)).
 * The evaluation itself is q36's (exact mode, K/V f16 unless -ctk/-ctv). */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/include/q36.h"
#include "../src/tokenizer/tok.h"

static void usage(FILE *o)
{
    fprintf(o,
"usage: q36 perplexity [-m MODEL.gguf] -f FILE [-c N] [--chunks N] [-t N] [-b N]\n"
"                      [-ctk f32|f16|q8_0] [-ctv f32|f16|q8_0] [--fast|--exact]\n"
"\n"
"The perplexity of FILE as llama-perplexity measures it: chunks of -c tokens,\n"
"each evaluated from position 0, the second half of each scored. Prints the\n"
"running value after each chunk and \"Final estimate: PPL = P +/- E\".\n"
"\n"
"  -f FILE        text file\n"
"  -c N           tokens per chunk (default 512, llama-perplexity's)\n"
"  --chunks N     at most N chunks (default: all)\n"
"  -t N           threads (default 1)\n"
"  -b N           tokens per forward batch (default 512)\n"
"  -ctk T -ctv T  K/V cache types, f32, f16 or q8_0 (default f16)\n"
"  --fast, --exact  the mode (perplexity runs on the CPU: exact by default)\n");
}

/* llama.cpp's log_softmax of one row at `tok`: max in float, sum in double. */
static double log_softmax_at(const float *l, int64_t V, int32_t tok)
{
    float mx = l[0];
    for (int64_t i = 1; i < V; i++)
        mx = l[i] > mx ? l[i] : mx;
    double sum = 0.0;
    for (int64_t i = 0; i < V; i++)
        sum += expf(l[i] - mx);
    return l[tok] - mx - log(sum);
}

int cmd_perplexity(int argc, char **argv)
{
    const char *C = "perplexity";
    const char *model = NULL, *file = NULL;
    int64_t v, n_ctx = 512, max_chunks = -1;
    q36_session_opts o = q36_session_opts_default();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *nx = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-m") && nx) {
            model = argv[++i];
        } else if (!strcmp(a, "-f") && nx) {
            file = argv[++i];
        } else if (!strcmp(a, "-c") && nx) {
            if (cli_int(C, a, argv[++i], 4, 1 << 20, &n_ctx)) return CLI_USAGE;
        } else if (!strcmp(a, "--chunks") && nx) {
            if (cli_int(C, a, argv[++i], 1, 1 << 30, &max_chunks)) return CLI_USAGE;
        } else if (!strcmp(a, "-t") && nx) {
            if (cli_int(C, a, argv[++i], 0, 256, &v)) return CLI_USAGE;
            o.n_threads = (int)v;
        } else if (!strcmp(a, "-b") && nx) {
            if (cli_int(C, a, argv[++i], 1, 65536, &v)) return CLI_USAGE;
            o.n_batch = (int)v;
        } else if (cli_mode_flag(a, &o.fast)) {
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
    if (!file)
        return cli_usage(C, "-f FILE is required");
    if (!model)
        model = cli_default_model();

    q36_err err = { 0 };
    size_t len = 0;
    char *text = cli_read_file(file, &len, &err);
    if (!text)
        return cli_fail(&err);
    tok_vocab *voc = NULL;
    int32_t *ids = NULL, *toks = NULL;
    size_t n_ids = 0;
    q36_model *m = NULL;
    q36_session *s = NULL;
    float *rows = NULL;
    int rc = CLI_ERROR;
    if (tok_new_from_file(model, &voc, &err) || tok_encode(voc, text, len, false, &ids, &n_ids, &err)) {
        cli_fail(&err);
        goto done;
    }
    /* add_special: llama.cpp prepends BOS when the vocabulary says so */
    const bool add_bos = tok_add_bos(voc) && tok_bos(voc) >= 0;
    size_t n_tok = n_ids + (add_bos ? 1 : 0);
    toks = malloc((n_tok ? n_tok : 1) * sizeof *toks);
    if (!toks) {
        fprintf(stderr, "q36: out of memory for %zu tokens\n", n_tok);
        goto done;
    }
    if (add_bos)
        toks[0] = tok_bos(voc);
    memcpy(toks + (add_bos ? 1 : 0), ids, n_ids * sizeof *ids);
    if (n_tok < 2 * (size_t)n_ctx) {
        fprintf(stderr, "q36: %s: %zu tokens; a context of %lld needs at least %lld\n", file, n_tok,
                (long long)n_ctx, 2 * (long long)n_ctx);
        goto done;
    }
    int64_t n_chunk = (int64_t)(n_tok / (size_t)n_ctx);
    if (max_chunks > 0 && max_chunks < n_chunk)
        n_chunk = max_chunks;
    const int first = (int)(n_ctx / 2);

    if (q36_model_open(model, &m, &err) || q36_session_new(m, (int)n_ctx, &o, &s, &err)) {
        cli_fail(&err);
        goto done;
    }
    const int64_t V = q36_session_n_vocab(s);
    const int n_rows = (int)n_ctx - first;
    rows = malloc((size_t)n_rows * (size_t)V * sizeof *rows);
    if (!rows) {
        fprintf(stderr, "q36: out of memory for %d x %lld logits\n", n_rows, (long long)V);
        goto done;
    }
    fprintf(stderr, "q36: perplexity over %lld chunks of %lld tokens (%zu tokens), scoring the last %d of each\n",
            (long long)n_chunk, (long long)n_ctx, n_tok, n_rows - 1);
    double nll = 0.0, nll2 = 0.0;
    int64_t count = 0;
    int32_t *chunk = malloc((size_t)n_ctx * sizeof *chunk);
    if (!chunk) {
        fprintf(stderr, "q36: out of memory\n");
        goto done;
    }
    for (int64_t c = 0; c < n_chunk; c++) {
        memcpy(chunk, toks + c * n_ctx, (size_t)n_ctx * sizeof *chunk);
        if (add_bos)
            chunk[0] = tok_bos(voc);
        q36_session_reset(s);
        if (q36_session_append(s, chunk, first, NULL, Q36_LOGITS_NONE, &err) ||
            q36_session_append(s, chunk + first, n_rows, rows, Q36_LOGITS_ALL, &err)) {
            free(chunk);
            cli_fail(&err);
            goto done;
        }
        /* row k is position first+k and predicts the chunk's token first+k+1 */
        for (int k = 0; k < n_rows - 1; k++) {
            double lp = log_softmax_at(rows + (size_t)k * (size_t)V, V, chunk[first + k + 1]);
            nll += -lp;
            nll2 += lp * lp;
        }
        count += n_rows - 1;
        printf("[%lld]%.4f,", (long long)(c + 1), exp(nll / (double)count));
        fflush(stdout);
    }
    free(chunk);
    printf("\n");
    nll /= (double)count;
    nll2 /= (double)count;
    const double ppl = exp(nll);
    nll2 -= nll * nll;
    if (nll2 > 0 && count > 1)
        printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl, sqrt(nll2 / (double)(count - 1)) * ppl);
    else
        printf("Final estimate: PPL = %.4f\n", ppl);
    rc = CLI_OK;
done:
    free(rows);
    free(toks);
    free(ids);
    free(text);
    tok_free(voc);
    q36_session_free(s);
    q36_model_free(m);
    return rc;
}
