/* bench_tok.c: tokenizer speed, q36 against llama.cpp's llama_tokenize in
 * the same process, on the real Qwen3 vocabulary (vocab-only GGUF, pre
 * qwen35 and qwen2), for q36 with PCRE2's JIT and with its interpreter.
 *
 * Texts: "mixed" is tt_gen_mixed's 1 MB (many scripts, code, numbers,
 * whitespace, special tokens, a few invalid bytes); "corpus" is every file of
 * tests/corpus/ concatenated and repeated to 1 MB. Each measurement is the
 * median and the minimum of REPS runs (wall clock), after one warm-up run.
 * "split-only" rows time the pre-tokenizer regex alone (column ids = pieces).
 * Built and run by bench/tokenizer/run.sh; not a test.
 */
#include "llama.h"
#include "ggml-backend.h"
#include "tokenizer/tok.h"
#include "tokenizer/tok_internal.h"   /* split-only timing */
#include "test.h"
#include "test_tok_util.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

typedef struct { double med, min; size_t n_ids; } result;

static result time_q36(tok_vocab *q, const char *text, size_t len)
{
    double t[REPS];
    size_t n = 0;
    for (int r = -1; r < REPS; r++) {
        int32_t *ids;
        double t0 = now();
        if (tok_encode(q, text, len, true, &ids, &n, NULL)) {
            fprintf(stderr, "tok_encode failed\n");
            exit(1);
        }
        double t1 = now();
        free(ids);
        if (r >= 0) t[r] = t1 - t0;
    }
    qsort(t, REPS, sizeof *t, cmp_d);
    return (result){ t[REPS / 2], t[0], n };
}

static int count_piece(void *user, const uint8_t *p, size_t n)
{
    (void)p; (void)n;
    (*(size_t *)user)++;
    return 0;
}

/* The pre-tokenizer alone (regex split of the whole text, no special-token
 * partition, no BPE): where JIT and interpreter differ. */
static result time_split(tok_vocab *q, const char *text, size_t len)
{
    double t[REPS];
    size_t n = 0;
    tok_split_ctx *c = tok_split_ctx_new(q->rx);
    for (int r = -1; r < REPS; r++) {
        n = 0;
        double t0 = now();
        tok_pretok_split(q->rx, c, (const uint8_t *)text, len, count_piece, &n, NULL);
        double t1 = now();
        if (r >= 0) t[r] = t1 - t0;
    }
    tok_split_ctx_free(c);
    qsort(t, REPS, sizeof *t, cmp_d);
    return (result){ t[REPS / 2], t[0], n };
}

static result time_llama(const struct llama_vocab *o, const char *text, size_t len)
{
    double t[REPS];
    int32_t *ids = malloc((len + 16) * sizeof *ids);
    int n = 0;
    for (int r = -1; r < REPS; r++) {
        double t0 = now();
        n = llama_tokenize(o, text, (int32_t)len, ids, (int32_t)len + 16, false, true);
        double t1 = now();
        if (n < 0) {
            fprintf(stderr, "llama_tokenize failed\n");
            exit(1);
        }
        if (r >= 0) t[r] = t1 - t0;
    }
    free(ids);
    qsort(t, REPS, sizeof *t, cmp_d);
    return (result){ t[REPS / 2], t[0], (size_t)n };
}

static void row(const char *pre, const char *text, const char *who, size_t len, result r)
{
    printf("%-7s %-7s %-17s %8zu %8zu %9.1f %9.1f %8.2f\n", pre, text, who, len, r.n_ids,
           r.med * 1e3, r.min * 1e3, len / r.med / 1048576.0);
}

int main(void)
{
    char dir[] = "/tmp/q36_tokbench_XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    size_t mlen, clen;
    char *mixed = tt_gen_mixed(1u << 20, &mlen);
    char *corpus = corpus_1mb(&clen);
    printf("# PCRE2 Unicode %s; %d runs each after one warm-up; times in ms (median, min)\n",
           tok_pcre2_unicode_version(), REPS);
    printf("%-7s %-7s %-17s %8s %8s %9s %9s %8s\n", "pre", "text", "tokenizer", "bytes", "ids",
           "median", "min", "MB/s");
    const char *pres[] = { "qwen35", "qwen2" };
    for (int p = 0; p < 2; p++) {
        char path[256];
        snprintf(path, sizeof path, "%s/v-%s.gguf", dir, pres[p]);
        if (tt_make_vocab_gguf(TT_VOCAB_JSON, pres[p], 151936, path))
            return 1;
        struct llama_model *om = tt_oracle_load(path);
        tok_vocab *q = NULL;
        q36_err err = { 0 };
        double t0 = now();
        if (!om || tok_new_from_file(path, &q, &err)) {
            fprintf(stderr, "load failed: %s\n", err.msg);
            return 1;
        }
        printf("# %s: q36 vocab load %.1f ms\n", pres[p], (now() - t0) * 1e3);
        const struct llama_vocab *o = llama_model_get_vocab(om);
        const char *names[] = { "mixed", "corpus" };
        const char *texts[] = { mixed, corpus };
        size_t lens[] = { mlen, clen };
        for (int t = 0; t < 2; t++) {
            bool had_jit = tok_set_jit(q, true);
            result a = time_q36(q, texts[t], lens[t]);
            tok_set_jit(q, false);
            result b = time_q36(q, texts[t], lens[t]);
            result c = time_llama(o, texts[t], lens[t]);
            row(pres[p], names[t], had_jit ? "q36 pcre2-jit" : "q36 (no jit!)", lens[t], a);
            row(pres[p], names[t], "q36 pcre2-interp", lens[t], b);
            row(pres[p], names[t], "llama_tokenize", lens[t], c);
            tok_set_jit(q, true);
            result d = time_split(q, texts[t], lens[t]);
            tok_set_jit(q, false);
            result e = time_split(q, texts[t], lens[t]);
            row(pres[p], names[t], "split-only jit", lens[t], d);
            row(pres[p], names[t], "split-only interp", lens[t], e);
            if (a.n_ids != c.n_ids || b.n_ids != c.n_ids)
                printf("# WARNING: id counts differ\n");
        }
        tok_free(q);
        llama_model_free(om);
        unlink(path);
    }
    rmdir(dir);
    free(mixed);
    free(corpus);
    return 0;
}
