/* synth_vocab.c: tokenizer metadata for `q36 synth`, from a Hugging Face
 * tokenizer.json (cJSON) or a small built-in byte-level vocabulary.
 *
 * Token types follow llama.cpp's converter: vocabulary entries are NORMAL;
 * added tokens are CONTROL when flagged special or spelled <|...|>, else
 * USER_DEFINED; ids without a token become "[PAD<i>]" UNUSED. */
#include "cli.h"
#include "synth.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char synth_chat_template[];

enum { TT_NORMAL = 1, TT_CONTROL = 3, TT_USER_DEFINED = 4, TT_UNUSED = 5 };

struct synth_vocab {
    uint32_t n;            /* highest id + 1 */
    char   **tok;          /* [n], NULL where no token has the id */
    int32_t *type;         /* [n] */
    char   **merges;       /* "left right" */
    uint64_t n_merges;
    int64_t  eos, pad, bos;
};

void synth_vocab_free(synth_vocab *v)
{
    if (!v)
        return;
    for (uint32_t i = 0; i < v->n; i++)
        free(v->tok[i]);
    for (uint64_t i = 0; i < v->n_merges; i++)
        free(v->merges[i]);
    free(v->tok);
    free(v->type);
    free(v->merges);
    free(v);
}

uint32_t synth_vocab_size(const synth_vocab *v) { return v->n; }

static int64_t find_tok(const synth_vocab *v, const char *text)
{
    for (uint32_t i = v->n; i-- > 0;)   /* special tokens sit at the end */
        if (v->tok[i] && !strcmp(v->tok[i], text))
            return i;
    return -1;
}

/* The Qwen special tokens, in their usual order, for the built-in vocabulary. */
static const char *const qwen_specials[] = {
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
    "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>",
    "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
    "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>",
};

static bool looks_special(const char *t)
{
    size_t n = strlen(t);
    return n >= 4 && !strncmp(t, "<|", 2) && !strcmp(t + n - 2, "|>");
}

/* The GPT-2 byte-to-code-point table (MODEL.md §8.3 step 4), as UTF-8. */
static void byte_token(unsigned b, char out[4])
{
    unsigned cp;
    if ((b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae) {
        cp = b;
    } else {
        unsigned k = 0;   /* rank of b among the 68 remapped bytes */
        for (unsigned x = 0; x < b; x++)
            k += !((x >= 0x21 && x <= 0x7e) || (x >= 0xa1 && x <= 0xac) || x >= 0xae);
        cp = 0x100 + k;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
    } else {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        out[2] = 0;
    }
}

static int builtin(synth_vocab *v, q36_err *err)
{
    size_t ns = sizeof qwen_specials / sizeof qwen_specials[0];
    v->n = (uint32_t)(256 + ns);
    v->tok = calloc(v->n, sizeof *v->tok);
    v->type = calloc(v->n, sizeof *v->type);
    if (!v->tok || !v->type)
        return q36_err_set(err, Q36_E_NOMEM, "synth: out of memory for the vocabulary");
    for (unsigned b = 0; b < 256; b++) {
        char t[4];
        byte_token(b, t);
        v->tok[b] = strdup(t);
        v->type[b] = TT_NORMAL;
    }
    for (size_t i = 0; i < ns; i++) {
        v->tok[256 + i] = strdup(qwen_specials[i]);
        v->type[256 + i] = looks_special(qwen_specials[i]) ? TT_CONTROL : TT_USER_DEFINED;
    }
    for (uint32_t i = 0; i < v->n; i++)
        if (!v->tok[i])
            return q36_err_set(err, Q36_E_NOMEM, "synth: out of memory for the vocabulary");
    return 0;
}

static int from_json(synth_vocab *v, const char *path, q36_err *err)
{
    char *text = cli_read_file(path, NULL, err);
    if (!text)
        return Q36_E_IO;
    cJSON *root = cJSON_Parse(text);
    free(text);
    int rc = 0;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
    if (!root || !cJSON_IsObject(vocab) || !cJSON_IsArray(merges) ||
        !cJSON_IsString(type) || strcmp(type->valuestring, "BPE")) {
        rc = q36_err_set(err, Q36_E_FORMAT,
                         "%s: expected a Hugging Face tokenizer.json with a BPE model "
                         "(model.type \"BPE\", model.vocab object, model.merges array)", path);
        goto done;
    }
    /* Highest id over the vocabulary and the added tokens. */
    double maxid = -1;
    const cJSON *it;
    cJSON_ArrayForEach(it, vocab) {
        if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 1e7) {
            rc = q36_err_set(err, Q36_E_FORMAT, "%s: model.vocab['%s']: expected an id in 0..1e7",
                             path, it->string ? it->string : "?");
            goto done;
        }
        if (it->valuedouble > maxid)
            maxid = it->valuedouble;
    }
    cJSON_ArrayForEach(it, added) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(it, "content");
        if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble > 1e7 || !cJSON_IsString(content)) {
            rc = q36_err_set(err, Q36_E_FORMAT, "%s: added_tokens: expected entries with an id and a content", path);
            goto done;
        }
        if (id->valuedouble > maxid)
            maxid = id->valuedouble;
    }
    v->n = (uint32_t)maxid + 1;
    v->tok = calloc(v->n, sizeof *v->tok);
    v->type = calloc(v->n, sizeof *v->type);
    v->n_merges = (uint64_t)cJSON_GetArraySize(merges);
    v->merges = calloc(v->n_merges ? v->n_merges : 1, sizeof *v->merges);
    if (!v->tok || !v->type || !v->merges) {
        rc = q36_err_set(err, Q36_E_NOMEM, "synth: out of memory for the vocabulary");
        goto done;
    }
    cJSON_ArrayForEach(it, vocab) {
        uint32_t id = (uint32_t)it->valuedouble;
        free(v->tok[id]);
        v->tok[id] = strdup(it->string);
        v->type[id] = TT_NORMAL;
    }
    cJSON_ArrayForEach(it, added) {
        uint32_t id = (uint32_t)cJSON_GetObjectItemCaseSensitive(it, "id")->valuedouble;
        const char *content = cJSON_GetObjectItemCaseSensitive(it, "content")->valuestring;
        bool special = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "special"));
        free(v->tok[id]);
        v->tok[id] = strdup(content);
        v->type[id] = special || looks_special(content) ? TT_CONTROL : TT_USER_DEFINED;
    }
    /* Merges come as "a b" strings (older files) or ["a", "b"] pairs. */
    uint64_t k = 0;
    cJSON_ArrayForEach(it, merges) {
        if (cJSON_IsString(it)) {
            v->merges[k] = strdup(it->valuestring);
        } else if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2 &&
                   cJSON_IsString(cJSON_GetArrayItem(it, 0)) && cJSON_IsString(cJSON_GetArrayItem(it, 1))) {
            const char *a = cJSON_GetArrayItem(it, 0)->valuestring, *b = cJSON_GetArrayItem(it, 1)->valuestring;
            size_t n = strlen(a) + strlen(b) + 2;
            if ((v->merges[k] = malloc(n)))
                snprintf(v->merges[k], n, "%s %s", a, b);
        } else {
            rc = q36_err_set(err, Q36_E_FORMAT, "%s: model.merges[%llu]: expected \"a b\" or [\"a\", \"b\"]",
                             path, (unsigned long long)k);
            v->n_merges = k;
            goto done;
        }
        if (!v->merges[k]) {
            v->n_merges = k;
            rc = q36_err_set(err, Q36_E_NOMEM, "synth: out of memory for the merges");
            goto done;
        }
        k++;
    }
done:
    cJSON_Delete(root);
    return rc;
}

int synth_vocab_load(const char *path, synth_vocab **out, q36_err *err)
{
    *out = NULL;
    synth_vocab *v = calloc(1, sizeof *v);
    if (!v)
        return q36_err_set(err, Q36_E_NOMEM, "synth: out of memory");
    int rc = path ? from_json(v, path, err) : builtin(v, err);
    if (rc) {
        synth_vocab_free(v);
        return rc;
    }
    /* ChatML ids: eos <|im_end|>, padding and bos <|endoftext|> (MODEL.md §8.2). */
    v->eos = find_tok(v, "<|im_end|>");
    v->pad = v->bos = find_tok(v, "<|endoftext|>");
    *out = v;
    return 0;
}

int synth_vocab_add(gguf_writer *w, const synth_vocab *v, const char *pre,
                    uint32_t n_vocab, q36_err *err)
{
    if (n_vocab < v->n)
        return q36_err_set(err, Q36_E_ARG, "synth: vocabulary size %u is smaller than the tokenizer's %u tokens",
                           n_vocab, v->n);
    char **toks = calloc(n_vocab, sizeof *toks);
    int32_t *types = calloc(n_vocab, sizeof *types);
    int rc = 0;
    if (!toks || !types) {
        rc = q36_err_set(err, Q36_E_NOMEM, "synth: out of memory for %u tokens", n_vocab);
        goto done;
    }
    for (uint32_t i = 0; i < n_vocab; i++) {
        if (i < v->n && v->tok[i]) {
            toks[i] = v->tok[i];
            types[i] = v->type[i];
        } else {
            char pad[32];
            snprintf(pad, sizeof pad, "[PAD%u]", i);
            if (!(toks[i] = strdup(pad))) {
                rc = q36_err_set(err, Q36_E_NOMEM, "synth: out of memory");
                goto done;
            }
            types[i] = TT_UNUSED;
        }
    }
    gguf_w_str(w, "tokenizer.ggml.model", "gpt2");
    gguf_w_str(w, "tokenizer.ggml.pre", pre);
    gguf_w_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)toks, NULL, n_vocab);
    gguf_w_arr(w, "tokenizer.ggml.token_type", GGUF_T_I32, types, n_vocab);
    gguf_w_arr_str(w, "tokenizer.ggml.merges", (const char *const *)v->merges, NULL, v->n_merges);
    if (v->eos >= 0)
        gguf_w_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)v->eos);
    if (v->pad >= 0)
        gguf_w_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)v->pad);
    if (v->bos >= 0)
        gguf_w_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)v->bos);
    gguf_w_bool(w, "tokenizer.ggml.add_bos_token", false);
    gguf_w_str(w, "tokenizer.chat_template", synth_chat_template);
done:
    if (toks)
        for (uint32_t i = v->n; i < n_vocab; i++)
            free(toks[i]);
    if (toks)
        for (uint32_t i = 0; i < v->n && i < n_vocab; i++)
            if (!v->tok[i])
                free(toks[i]);
    free(toks);
    free(types);
    return rc;
}
