/* oracle_text.c: the subcommands that need only a model's metadata and
 * vocabulary (loaded with vocab_only, no weights): n_params, tokenize,
 * detokenize.
 */
#include "oracle.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* llama_model_n_params counts the elements of every tensor in the file
 * (the loader sums them before deciding which tensors it uses), so MTP
 * tensors count even when they are not loaded. The tensors are loaded and
 * checked but left in the mmap, not repacked (llama.cpp's no_alloc load
 * aborts in load_tensors, and vocab_only leaves the hyper-parameters at 0):
 * a repacking load copies most of the weights into new memory, which for a
 * 35B file is more RAM than a small machine has. */
int orc_cmd_n_params(const orc_opts *o)
{
    struct llama_model *m = orc_load(o, ORC_LOAD_SHAPES);
    if (!m) return ORC_ERROR;
    printf("%" PRIu64 "\n", llama_model_n_params(m));
    printf("n_vocab %d n_embd %d n_layer %d n_layer_nextn %d\n",
           llama_vocab_n_tokens(llama_model_get_vocab(m)), llama_model_n_embd(m),
           llama_model_n_layer(m), llama_model_n_layer_nextn(m));
    llama_model_free(m);
    return ORC_OK;
}

/* add_special = false (no BOS/EOS: ORACLE.md); parse_special = true unless
 * --no-special. The output buffer is sized from the text length and, if
 * llama.cpp asks for more (a negative count), from its answer. */
int orc_cmd_tokenize(const orc_opts *o)
{
    if (!!o->prompt == !!o->file)
        return orc_usage(o->cmd, "give exactly one of -p TEXT and -f FILE");
    char *owned = NULL;
    const char *text = o->prompt;
    size_t len = o->prompt ? strlen(o->prompt) : 0;
    if (o->file) {
        owned = orc_read_file(o->file, &len);
        if (!owned) return ORC_ERROR;
        text = owned;
    }
    if (len > INT32_MAX) {
        free(owned);
        return orc_fail("%s: %zu bytes is more than llama_tokenize takes", o->file, len);
    }
    struct llama_model *m = orc_load(o, ORC_LOAD_VOCAB);
    if (!m) { free(owned); return ORC_ERROR; }
    const struct llama_vocab *v = llama_model_get_vocab(m);
    int32_t cap = (int32_t)(len < 16 ? 16 : len + 16);
    llama_token *ids = malloc((size_t)cap * sizeof *ids);
    int32_t n = ids ? llama_tokenize(v, text, (int32_t)len, ids, cap, false, !o->no_special) : 0;
    if (ids && n < 0 && n != INT32_MIN) {
        cap = -n;
        free(ids);
        ids = malloc((size_t)cap * sizeof *ids);
        n = ids ? llama_tokenize(v, text, (int32_t)len, ids, cap, false, !o->no_special) : 0;
    }
    int rc = ORC_OK;
    if (!ids)
        rc = orc_fail("out of memory for %d token ids", cap);
    else if (n < 0)
        rc = orc_fail("llama_tokenize failed (returned %d) on %zu bytes", n, len);
    else {
        for (int32_t i = 0; i < n; i++)
            printf(i ? " %d" : "%d", ids[i]);
        printf("\n");
    }
    free(ids);
    free(owned);
    llama_model_free(m);
    return rc;
}

/* Default: llama_detokenize with remove_special = false, unparse_special =
 * true (so special tokens come back as their text and tokenize of the
 * result gives the ids again). --pieces: the llama_token_to_piece bytes of
 * each id (special = true, lstrip 0) concatenated. Raw bytes, no newline. */
int orc_cmd_detokenize(const orc_opts *o)
{
    struct llama_model *m = orc_load(o, ORC_LOAD_VOCAB);
    if (!m) return ORC_ERROR;
    const struct llama_vocab *v = llama_model_get_vocab(m);
    llama_token *ids = NULL;
    int n = orc_read_ids(o, llama_vocab_n_tokens(v), &ids);
    if (n < 0) { llama_model_free(m); return ORC_ERROR; }
    int rc = ORC_OK;
    if (o->pieces) {
        char buf[256];
        for (int i = 0; i < n && rc == ORC_OK; i++) {
            int32_t k = llama_token_to_piece(v, ids[i], buf, (int32_t)sizeof buf, 0, true);
            if (k < 0)
                rc = orc_fail("llama_token_to_piece(%d) needs %d bytes, more than %zu", ids[i], -k, sizeof buf);
            else
                fwrite(buf, 1, (size_t)k, stdout);
        }
    } else {
        int32_t cap = n * 16 + 64;
        char *text = malloc((size_t)cap);
        int32_t k = text ? llama_detokenize(v, ids, n, text, cap, false, true) : 0;
        if (text && k < 0) {
            cap = -k;
            free(text);
            text = malloc((size_t)cap);
            k = text ? llama_detokenize(v, ids, n, text, cap, false, true) : 0;
        }
        if (!text)
            rc = orc_fail("out of memory for %d bytes of text", cap);
        else if (k < 0)
            rc = orc_fail("llama_detokenize of %d ids failed (returned %d)", n, k);
        else
            fwrite(text, 1, (size_t)k, stdout);
        free(text);
    }
    free(ids);
    llama_model_free(m);
    return rc;
}
