/* bench_tok_utf8proc.c: the pre-tokenizer split alone, three ways, in one
 * process: (a) PCRE2 JIT (what q36 uses), (b) PCRE2's interpreter, (c) the
 * utf8proc-driven hand-written matcher (pretok_utf8proc.c), with its ASCII
 * class table and, as (c'), with utf8proc_category() for every code point.
 *
 * Texts: those of bench_tok.c: "mixed" is tt_gen_mixed's 1 MB, "corpus" the
 * same 23 files of tests/corpus/ concatenated and repeated to 1 MB. Before
 * timing, the matcher's pieces are compared with PCRE2's (lengths and bytes)
 * and a difference is printed. Each row is the median and the minimum of
 * REPS runs (wall clock) after one warm-up run; the column "pieces" is the
 * piece count. For scale, a last row per text times the whole tok_encode
 * (special-token partition, PCRE2 JIT split, BPE; column "pieces" = ids) on
 * the real Qwen3 vocabulary, as bench_tok.c does.
 * Built and run by bench/tokenizer/run_utf8proc.sh; not a test.
 */
#include "llama.h"
#include "ggml-backend.h"
#include "tokenizer/tok.h"
#include "tokenizer/tok_internal.h"   /* tok_pretok_* */
#include "test.h"
#include "test_tok_util.h"
#include "pretok_utf8proc.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <utf8proc.h>

#include "bench_util.h"

/* Piece recorder for the equality check; a counter for the timed runs. */
typedef struct { size_t *lens, n, cap; } lens_t;

static int rec(void *user, const uint8_t *p, size_t n)
{
    lens_t *l = user;
    (void)p;
    if (l->n == l->cap) {
        l->cap = l->cap * 2 + 1024;
        l->lens = realloc(l->lens, l->cap * sizeof *l->lens);
    }
    l->lens[l->n++] = n;
    return 0;
}

static int count_piece(void *user, const uint8_t *p, size_t n)
{
    (void)p; (void)n;
    (*(size_t *)user)++;
    return 0;
}

typedef struct { double med, min; size_t n; } result;

static result time_encode(tok_vocab *q, const char *text, size_t len)
{
    double t[REPS];
    size_t n = 0;
    tok_set_jit(q, true);
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

enum { W_JIT, W_INTERP, W_HAND, W_HAND_NOTAB };

static result time_split(int way, tok_pretok *rx, tok_split_ctx *c, u8p_split *h, const char *text, size_t len)
{
    double t[REPS];
    size_t n = 0;
    if (way == W_JIT || way == W_INTERP)
        tok_pretok_set_jit(rx, way == W_JIT);
    else
        u8p_split_set_ascii_table(h, way == W_HAND);
    for (int r = -1; r < REPS; r++) {
        n = 0;
        double t0 = now();
        if (way == W_JIT || way == W_INTERP)
            tok_pretok_split(rx, c, (const uint8_t *)text, len, count_piece, &n, NULL);
        else
            u8p_split_run(h, (const uint8_t *)text, len, count_piece, &n);
        double t1 = now();
        if (r >= 0) t[r] = t1 - t0;
    }
    qsort(t, REPS, sizeof *t, cmp_d);
    return (result){ t[REPS / 2], t[0], n };
}

int main(void)
{
    size_t mlen, clen;
    char *mixed = tt_gen_mixed(1u << 20, &mlen);
    char *corpus = corpus_1mb(&clen);
    printf("# PCRE2 Unicode %s; utf8proc %s (Unicode %s); %d runs each after one warm-up; "
           "times in ms (median, min)\n", tok_pcre2_unicode_version(), utf8proc_version(),
           utf8proc_unicode_version(), REPS);
    printf("%-7s %-7s %-23s %8s %8s %9s %9s %8s\n", "pre", "text", "split", "bytes", "pieces",
           "median", "min", "MB/s");
    const char *pres[] = { "qwen35", "qwen2" };
    const char *ways[] = { "pcre2-jit", "pcre2-interp", "utf8proc-hand", "utf8proc-hand-notable" };
    for (int p = 0; p < 2; p++) {
        tok_pretok *rx = NULL;
        q36_err err = { 0 };
        bool q35 = p == 0;
        if (tok_pretok_new(q35 ? TOK_PRE_QWEN35 : TOK_PRE_QWEN2, &rx, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        tok_split_ctx *c = tok_split_ctx_new(rx);
        char dir[] = "/tmp/q36_u8pbench_XXXXXX", path[256];
        tok_vocab *q = NULL;
        if (!mkdtemp(dir))
            return 1;
        snprintf(path, sizeof path, "%s/v.gguf", dir);
        if (tt_make_vocab_gguf(TT_VOCAB_JSON, pres[p], 151936, path) || tok_new_from_file(path, &q, &err)) {
            fprintf(stderr, "vocabulary: %s\n", err.msg);
            return 1;
        }
        unlink(path);
        rmdir(dir);
        u8p_split *h = u8p_split_new(q35);
        if (!tok_pretok_set_jit(rx, true))
            printf("# WARNING: PCRE2 has no JIT here\n");
        const char *names[] = { "mixed", "corpus" };
        const char *texts[] = { mixed, corpus };
        size_t lens[] = { mlen, clen };
        for (int t = 0; t < 2; t++) {
            lens_t a = { 0 }, b = { 0 };
            tok_pretok_split(rx, c, (const uint8_t *)texts[t], lens[t], rec, &a, NULL);
            u8p_split_run(h, (const uint8_t *)texts[t], lens[t], rec, &b);
            bool same = a.n == b.n && !memcmp(a.lens, b.lens, a.n * sizeof *a.lens);
            printf("# %s %s: utf8proc-hand pieces %s PCRE2's (%zu pieces)\n", pres[p], names[t],
                   same ? "identical to" : "DIFFER FROM", a.n);
            free(a.lens);
            free(b.lens);
            for (int w = 0; w < 4; w++) {
                result r = time_split(w, rx, c, h, texts[t], lens[t]);
                printf("%-7s %-7s %-23s %8zu %8zu %9.2f %9.2f %8.1f\n", pres[p], names[t], ways[w],
                       lens[t], r.n, r.med * 1e3, r.min * 1e3, lens[t] / r.med / 1048576.0);
            }
            result e = time_encode(q, texts[t], lens[t]);
            printf("%-7s %-7s %-23s %8zu %8zu %9.2f %9.2f %8.1f\n", pres[p], names[t], "(whole tok_encode, jit)",
                   lens[t], e.n, e.med * 1e3, e.min * 1e3, lens[t] / e.med / 1048576.0);
        }
        tok_free(q);
        u8p_split_free(h);
        tok_split_ctx_free(c);
        tok_pretok_free(rx);
    }
    free(mixed);
    free(corpus);
    return 0;
}
