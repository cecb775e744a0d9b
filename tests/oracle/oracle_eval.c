/* oracle_eval.c: the subcommands that run llama.cpp's forward pass: logits,
 * greedy, decode_check and bench.
 *
 * Settings (oracle.c sets them from the flags): one sequence, n_gpu_layers
 * 0, 2 threads, K/V f32 and flash attention off unless --kv/--fa say
 * otherwise (bench defaults to llama.cpp's own f16 + auto). The prompt goes
 * through one llama_decode (n_batch = n_ubatch = prompt length) unless -b
 * splits it into llama_decode calls of -b tokens. Measured on the pinned
 * build, calls of 2 or more tokens give the same bits as one call, but a
 * one-token call does not (README.md): greedy steps are one-token calls,
 * as a decode loop's are.
 */
#include "oracle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Context room past the tokens the work needs. */
#define CTX_MARGIN 16

static int ctx_size(const orc_opts *o, int need)
{
    return o->n_ctx ? o->n_ctx : need + CTX_MARGIN;
}

/* Loads the model, checks the context is big enough and makes a context
 * whose n_batch covers `n_prompt` tokens unless -b is given. */
static struct llama_context *setup(const orc_opts *o, struct llama_model **m, int need, int n_prompt,
                                   int *n_batch_out)
{
    int n_ctx = ctx_size(o, need);
    if (n_ctx < need) {
        orc_fail("-c %d is too small: this needs %d positions", n_ctx, need);
        return NULL;
    }
    int nb = o->n_batch ? o->n_batch : (n_prompt > 0 ? n_prompt : 1);
    int nub = o->n_ubatch ? o->n_ubatch : nb;
    if (nub > nb) nub = nb;
    struct llama_context *ctx = orc_context(*m, o, n_ctx, nb, nub);
    *n_batch_out = nb;
    return ctx;
}

static int n_vocab_of(const struct llama_model *m)
{
    return llama_vocab_n_tokens(llama_model_get_vocab(m));
}

int orc_cmd_logits(const orc_opts *o)
{
    if (!o->out) return orc_usage(o->cmd, "-o OUT.f32 is required");
    struct llama_model *m = orc_load(o, ORC_LOAD_FULL);
    if (!m) return ORC_ERROR;
    int nv = n_vocab_of(m), rc = ORC_ERROR, nb;
    llama_token *ids = NULL;
    float *rows = NULL;
    struct llama_context *ctx = NULL;
    int n = orc_read_ids(o, nv, &ids);
    if (n < 0) goto done;
    if (!(ctx = setup(o, &m, n, n, &nb))) goto done;
    size_t nrows = o->all ? (size_t)n : 1;
    rows = malloc(nrows * (size_t)nv * sizeof *rows);
    if (!rows) { orc_fail("out of memory for %zu x %d logits", nrows, nv); goto done; }
    if (orc_decode(ctx, ids, n, 0, nb, o->all, rows, nv)) goto done;
    if (orc_write_f32(o->out, rows, nrows * (size_t)nv)) goto done;
    printf("%zu %d\n", nrows, nv);
    rc = ORC_OK;
done:
    free(rows);
    free(ids);
    llama_free(ctx);
    llama_model_free(m);
    return rc;
}

/* Tokenizes -p TEXT like `oracle tokenize` (no BOS/EOS, specials parsed). */
static int tokenize_prompt(const struct llama_model *m, const char *text, llama_token **out)
{
    const struct llama_vocab *v = llama_model_get_vocab(m);
    int32_t len = (int32_t)strlen(text);
    int32_t n = -llama_tokenize(v, text, len, NULL, 0, false, true);
    if (n <= 0) {
        orc_fail("-p: the text gives no tokens");
        return -1;
    }
    *out = malloc((size_t)n * sizeof **out);
    if (!*out || llama_tokenize(v, text, len, *out, n, false, true) != n) {
        free(*out);
        orc_fail("-p: llama_tokenize failed");
        return -1;
    }
    return n;
}

/* Greedy: the prompt in one decode (or -b chunks), then one token at a
 * time; each id is the argmax of the row before it, ties to the lower id.
 * --logits writes those N rows, [N][n_vocab]. */
int orc_cmd_greedy(const orc_opts *o)
{
    if (!o->n_set || o->n < 1) return orc_usage(o->cmd, "-n N (N >= 1) is required");
    if (!!o->prompt + !!o->ids + !!o->ids_file != 1)
        return orc_usage(o->cmd, "give exactly one of --ids, --ids-file and -p TEXT");
    struct llama_model *m = orc_load(o, ORC_LOAD_FULL);
    if (!m) return ORC_ERROR;
    int nv = n_vocab_of(m), rc = ORC_ERROR, nb;
    llama_token *ids = NULL, *gen = NULL;
    float *rows = NULL;
    struct llama_context *ctx = NULL;
    int n = o->prompt ? tokenize_prompt(m, o->prompt, &ids) : orc_read_ids(o, nv, &ids);
    if (n < 0) goto done;
    if (!(ctx = setup(o, &m, n + o->n, n, &nb))) goto done;
    gen = malloc((size_t)o->n * sizeof *gen);
    rows = malloc((size_t)o->n * (size_t)nv * sizeof *rows);
    if (!gen || !rows) { orc_fail("out of memory for %d x %d logits", o->n, nv); goto done; }
    for (int k = 0; k < o->n; k++) {
        float *row = rows + (size_t)k * (size_t)nv;
        int r = k == 0 ? orc_decode(ctx, ids, n, 0, nb, false, row, nv)
                       : orc_decode(ctx, &gen[k - 1], 1, n + k - 1, 1, false, row, nv);
        if (r) goto done;
        long bad = orc_first_nonfinite(row, (size_t)nv);
        if (bad >= 0) {
            orc_fail("step %d: logit of id %ld is %g", k, bad, (double)row[bad]);
            goto done;
        }
        gen[k] = orc_argmax(row, nv);
    }
    if (o->logits_out && orc_write_f32(o->logits_out, rows, (size_t)o->n * (size_t)nv)) goto done;
    for (int k = 0; k < o->n; k++)
        printf(k ? " %d" : "%d", gen[k]);
    printf("\n");
    rc = ORC_OK;
done:
    free(rows);
    free(gen);
    free(ids);
    llama_free(ctx);
    llama_model_free(m);
    return rc;
}

/* The "llama.cpp loads the file and runs a decode" check: every logit of
 * every prompt position and of 4 greedy steps must be finite. */
int orc_cmd_decode_check(const orc_opts *o)
{
    enum { STEPS = 4 };
    struct llama_model *m = orc_load(o, ORC_LOAD_FULL);
    if (!m) return ORC_ERROR;
    int nv = n_vocab_of(m), rc = ORC_ERROR, nb, n;
    llama_token *ids = NULL;
    float *rows = NULL;
    struct llama_context *ctx = NULL;
    if (o->ids || o->ids_file) {
        n = orc_read_ids(o, nv, &ids);
        if (n < 0) goto done;
    } else {
        n = 7;
        ids = malloc((size_t)n * sizeof *ids);
        for (int i = 0; i < n; i++) ids[i] = (i + 1) % nv;
    }
    if (!(ctx = setup(o, &m, n + STEPS, n, &nb))) goto done;
    rows = malloc((size_t)n * (size_t)nv * sizeof *rows);
    if (!rows) { orc_fail("out of memory for %d x %d logits", n, nv); goto done; }
    if (orc_decode(ctx, ids, n, 0, nb, true, rows, nv)) goto done;
    long bad = orc_first_nonfinite(rows, (size_t)n * (size_t)nv);
    if (bad >= 0) {
        orc_fail("%s: prompt position %ld, id %ld: logit is %g", o->model, bad / nv, bad % nv,
                 (double)rows[bad]);
        goto done;
    }
    llama_token next = orc_argmax(rows + (size_t)(n - 1) * (size_t)nv, nv);
    for (int k = 0; k < STEPS; k++) {
        if (orc_decode(ctx, &next, 1, n + k, 1, false, rows, nv)) goto done;
        bad = orc_first_nonfinite(rows, (size_t)nv);
        if (bad >= 0) {
            orc_fail("%s: decode step %d (position %d), id %ld: logit is %g", o->model, k, n + k, bad,
                     (double)rows[bad]);
            goto done;
        }
        next = orc_argmax(rows, nv);
    }
    printf("ok n_vocab=%d\n", nv);
    rc = ORC_OK;
done:
    free(rows);
    free(ids);
    llama_free(ctx);
    llama_model_free(m);
    return rc;
}

/* ---- bench ---------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t rng_next(uint64_t *s)
{
    /* xorshift64*: fixed-seed ids, not statistics */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/* Clears the memory (KV cache and DeltaNet state) and decodes `depth`
 * tokens so the timed work starts at that context depth. */
static int fill_depth(struct llama_context *ctx, const llama_token *ids, int depth, int nb)
{
    llama_memory_clear(llama_get_memory(ctx), true);
    if (depth && orc_decode(ctx, ids, depth, 0, nb, false, NULL, 0)) return -1;
    llama_synchronize(ctx);
    return 0;
}

/* Per repetition: pp = n_prompt tokens in one llama_decode call (split by
 * llama.cpp into n_ubatch pieces; by us into -b pieces) after `depth`
 * tokens; tg = n_gen single-token decodes after `depth` tokens. One untimed
 * single-token decode warms up first. Ids are seeded random. Defaults are
 * llama-bench's: n_batch 2048, n_ubatch 512, K/V f16, flash attention auto. */
int orc_cmd_bench(const orc_opts *o)
{
    int n_prompt = 512, n_gen = o->n_set ? o->n : 128, rc;
    if (o->prompt) {
        char *end;
        long v = strtol(o->prompt, &end, 10);
        if (end == o->prompt || *end || v < 0 || v > 1 << 24)
            return orc_usage(o->cmd, "-p wants a token count in [0, %d], got '%s'", 1 << 24, o->prompt);
        n_prompt = (int)v;
    }
    if (n_prompt + n_gen == 0) return orc_usage(o->cmd, "-p and -n are both 0: nothing to time");
    orc_opts b = *o;
    if (!b.kv_set) b.kv = GGML_TYPE_F16;
    if (!b.fa_set) b.fa = LLAMA_FLASH_ATTN_TYPE_AUTO;
    if (!b.n_batch) b.n_batch = 2048;
    if (!b.n_ubatch) b.n_ubatch = 512;
    struct llama_model *m = orc_load(&b, ORC_LOAD_FULL);
    if (!m) return ORC_ERROR;
    int nv = n_vocab_of(m), nb;
    rc = ORC_ERROR;
    int need = b.depth + (n_prompt > n_gen ? n_prompt : n_gen) + 1;
    int total = b.depth + n_prompt + n_gen;
    llama_token *ids = malloc((size_t)total * sizeof *ids);
    /* Each timed decode asks for the last token's logits, as llama-bench
     * does (its batches leave the output flags to llama.cpp, which then
     * outputs the last token): the output head is part of a decode step. */
    float *last = malloc((size_t)nv * sizeof *last);
    struct llama_context *ctx = NULL;
    if (!ids || !last) { orc_fail("out of memory for %d ids", total); goto done; }
    uint64_t s = b.seed ? b.seed : 1;
    for (int i = 0; i < total; i++) ids[i] = (llama_token)(rng_next(&s) % (uint64_t)nv);
    if (!(ctx = setup(&b, &m, need, n_prompt, &nb))) goto done;
    if (fill_depth(ctx, ids, 0, nb) || orc_decode(ctx, ids, 1, 0, 1, false, NULL, 0)) goto done;
    for (int r = 0; r < b.reps; r++) {
        double pp = -1, tg = -1;
        const llama_token *p = ids + b.depth, *g = ids + b.depth + n_prompt;
        if (n_prompt) {
            if (fill_depth(ctx, ids, b.depth, nb)) goto done;
            double t0 = now_s();
            if (orc_decode(ctx, p, n_prompt, b.depth, nb, false, last, nv)) goto done;
            llama_synchronize(ctx);
            pp = n_prompt / (now_s() - t0);
        }
        if (n_gen) {
            if (fill_depth(ctx, ids, b.depth, nb)) goto done;
            double t0 = now_s();
            for (int k = 0; k < n_gen; k++)
                if (orc_decode(ctx, g + k, 1, b.depth + k, 1, false, last, nv)) goto done;
            llama_synchronize(ctx);
            tg = n_gen / (now_s() - t0);
        }
        printf("{\"n_prompt\": %d, \"n_gen\": %d, \"n_depth\": %d, \"n_threads\": %d, "
               "\"n_batch\": %d, \"n_ubatch\": %d, \"type_k\": \"%s\", \"type_v\": \"%s\", "
               "\"flash_attn_type\": \"%s\", \"rep\": %d, ",
               n_prompt, n_gen, b.depth, b.threads, nb, b.n_ubatch > nb ? nb : b.n_ubatch,
               ggml_type_name(b.kv), ggml_type_name(b.kv), llama_flash_attn_type_name(b.fa), r);
        if (pp >= 0) printf("\"pp_ts\": %.3f, ", pp); else printf("\"pp_ts\": null, ");
        if (tg >= 0) printf("\"tg_ts\": %.3f}\n", tg); else printf("\"tg_ts\": null}\n");
        fflush(stdout);
    }
    rc = ORC_OK;
done:
    free(last);
    free(ids);
    llama_free(ctx);
    llama_model_free(m);
    return rc;
}
