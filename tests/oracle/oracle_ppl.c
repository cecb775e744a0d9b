/* oracle_ppl.c: `oracle perplexity`: llama-perplexity's measurement through
 * llama.cpp's C API, the reference for `q36 perplexity`.
 *
 * The method of llama.cpp's tools/perplexity/perplexity.cpp (ppl_stride 0),
 * redone here over the public API because the pinned bundle ships the
 * library, not the tool: the file tokenized with add_special = true (a BOS
 * only where the vocabulary adds one) and parse_special = false; chunks of
 * -c tokens (default 512; the tail dropped; fewer than 2 chunks' worth is an
 * error); per chunk the memory cleared, the first token replaced by BOS when
 * the vocabulary adds one, one llama_decode with outputs at positions >=
 * first = c/2, and the row of position j scored against token j+1 for
 * first <= j <= c-2 (log-softmax: max in float, sum of expf in double).
 * Prints "[1]x,[2]y,..." and "Final estimate: PPL = P +/- E" on stdout, as the
 * tool does. -n N: at most N chunks. The oracle's defaults apply (K/V f32,
 * flash attention off) unless --kv/--fa say otherwise. */
#include "oracle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double log_softmax_at(const float *l, int V, llama_token tok)
{
    float mx = l[0];
    for (int i = 1; i < V; i++)
        mx = l[i] > mx ? l[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < V; i++)
        sum += expf(l[i] - mx);
    return l[tok] - mx - log(sum);
}

int orc_cmd_perplexity(const orc_opts *o)
{
    if (!o->file) return orc_usage(o->cmd, "-f FILE is required");
    const int n_ctx = o->n_ctx ? o->n_ctx : 512;
    if (n_ctx < 4) return orc_usage(o->cmd, "-c must be at least 4");
    size_t len = 0;
    char *text = orc_read_file(o->file, &len);
    if (!text) return ORC_ERROR;
    struct llama_model *m = orc_load(o, ORC_LOAD_FULL);
    if (!m) { free(text); return ORC_ERROR; }
    const struct llama_vocab *v = llama_model_get_vocab(m);
    const int V = llama_vocab_n_tokens(v);
    const bool add_bos = llama_vocab_get_add_bos(v);
    int rc = ORC_ERROR;
    llama_token *toks = NULL;
    struct llama_context *ctx = NULL;
    struct llama_batch b = { 0 };
    bool have_batch = false;
    int32_t n = -llama_tokenize(v, text, (int32_t)len, NULL, 0, true, false);
    if (n <= 0 || !(toks = malloc((size_t)n * sizeof *toks)) ||
        llama_tokenize(v, text, (int32_t)len, toks, n, true, false) != n) {
        orc_fail("%s: llama_tokenize failed", o->file);
        goto done;
    }
    if (n < 2 * n_ctx) {
        orc_fail("%s: %d tokens; a context of %d needs at least %d", o->file, n, n_ctx, 2 * n_ctx);
        goto done;
    }
    int n_chunk = n / n_ctx;
    if (o->n_set && o->n > 0 && o->n < n_chunk) n_chunk = o->n;
    const int first = n_ctx / 2;
    if (!(ctx = orc_context(m, o, n_ctx, n_ctx, o->n_ubatch ? o->n_ubatch : n_ctx))) goto done;
    b = llama_batch_init(n_ctx, 0, 1);
    have_batch = true;
    double nll = 0.0, nll2 = 0.0;
    long count = 0;
    for (int c = 0; c < n_chunk; c++) {
        const llama_token *t = toks + (size_t)c * n_ctx;
        llama_memory_clear(llama_get_memory(ctx), true);
        b.n_tokens = n_ctx;
        for (int j = 0; j < n_ctx; j++) {
            b.token[j] = (j == 0 && add_bos) ? llama_vocab_bos(v) : t[j];
            b.pos[j] = j;
            b.n_seq_id[j] = 1;
            b.seq_id[j][0] = 0;
            b.logits[j] = j >= first;
        }
        int r = llama_decode(ctx, b);
        if (r) {
            orc_fail("llama_decode of chunk %d returned %d: %s", c, r, orc_last_log());
            goto done;
        }
        for (int j = first; j < n_ctx - 1; j++) {
            const float *l = llama_get_logits_ith(ctx, j);
            if (!l) {
                orc_fail("llama_get_logits_ith(%d) gave no logits: %s", j, orc_last_log());
                goto done;
            }
            double lp = log_softmax_at(l, V, t[j + 1]);
            nll += -lp;
            nll2 += lp * lp;
        }
        count += n_ctx - first - 1;
        printf("[%d]%.4f,", c + 1, exp(nll / (double)count));
        fflush(stdout);
    }
    printf("\n");
    nll /= (double)count;
    nll2 /= (double)count;
    double ppl = exp(nll);
    nll2 -= nll * nll;
    if (nll2 > 0 && count > 1)
        printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl, sqrt(nll2 / (double)(count - 1)) * ppl);
    else
        printf("Final estimate: PPL = %.4f\n", ppl);
    rc = ORC_OK;
done:
    if (have_batch) llama_batch_free(b);
    llama_free(ctx);
    llama_model_free(m);
    free(toks);
    free(text);
    return rc;
}
