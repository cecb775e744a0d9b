/* tok_vocab.c: building a tok_vocab from a GGUF's tokenizer keys
 * (MODEL.md §8.1): token texts and types, the text -> id and the
 * (left, right) -> merge rank hash tables, the special tokens matched in
 * text, and the special ids.
 *
 * Beyond the stored types, llama.cpp v0.5.0 treats some tokens by their text
 * and q36 does the same, because it changes ids: tokens spelled like an
 * end-of-turn/end-of-generation or fill-in-the-middle marker (the lists
 * below) become control tokens even when stored NORMAL or USER_DEFINED. In
 * the Qwen3 vocabulary this turns the ordinary BPE token "</s>" into a
 * special token: "</s>" written in text is one id with parse_special, and it
 * ends generation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gguf/gguf.h"
#include "tok_internal.h"

/* ---- hashing ---------------------------------------------------------------- */

uint32_t tok_hash_bytes(const void *p, size_t n)
{
    const uint8_t *s = p;
    uint32_t h = 2166136261u;               /* FNV-1a, then a final mix */
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 16777619u;
    h ^= h >> 15;
    h *= 0x2c1b3c6du;
    h ^= h >> 12;
    return h;
}

static uint32_t hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return (uint32_t)x;
}

static uint32_t table_mask_for(size_t n)
{
    size_t cap = 16;
    while (cap < n * 2)
        cap *= 2;
    return (uint32_t)(cap - 1);
}

int32_t tok_find(const tok_vocab *v, const char *text, size_t len)
{
    for (uint32_t i = tok_hash_bytes(text, len) & v->text_mask;; i = (i + 1) & v->text_mask) {
        int32_t id = v->text_tab[i];
        if (id < 0)
            return -1;
        if (v->len[id] == len && !memcmp(v->blob + v->off[id], text, len))
            return id;
    }
}

/* Inserts id; a later token with the same text replaces the earlier one. */
static void text_insert(tok_vocab *v, int32_t id)
{
    const char *t = v->blob + v->off[id];
    uint32_t n = v->len[id];
    for (uint32_t i = tok_hash_bytes(t, n) & v->text_mask;; i = (i + 1) & v->text_mask) {
        int32_t cur = v->text_tab[i];
        if (cur < 0 || (v->len[cur] == n && !memcmp(v->blob + v->off[cur], t, n))) {
            v->text_tab[i] = id;
            return;
        }
    }
}

int32_t tok_merge_rank(const tok_vocab *v, int32_t left, int32_t right, int32_t *result)
{
    uint64_t key = (((uint64_t)(uint32_t)left << 32) | (uint32_t)right) + 1;
    for (uint32_t i = hash_u64(key) & v->merge_mask;; i = (i + 1) & v->merge_mask) {
        const tok_merge_slot *s = &v->merge_tab[i];
        if (s->key == 0)
            return -1;
        if (s->key == key) {
            *result = s->result;
            return s->rank;
        }
    }
}

/* Keeps the lowest rank when a pair is listed twice, as llama.cpp's map
 * insertion (first one wins) does. */
static void merge_insert(tok_vocab *v, int32_t left, int32_t right, int32_t rank, int32_t result)
{
    uint64_t key = (((uint64_t)(uint32_t)left << 32) | (uint32_t)right) + 1;
    for (uint32_t i = hash_u64(key) & v->merge_mask;; i = (i + 1) & v->merge_mask) {
        tok_merge_slot *s = &v->merge_tab[i];
        if (s->key == key)
            return;
        if (s->key == 0) {
            *s = (tok_merge_slot){ key, rank, result };
            return;
        }
    }
}

/* ---- metadata helpers --------------------------------------------------------- */

static int get_str(const gguf_file *f, const char *key, bool required, const char **s,
                   uint64_t *len, q36_err *err)
{
    const gguf_value *val = gguf_get(f, key);
    *s = NULL;
    if (!val)
        return required ? q36_err_set(err, TOK_E_KEY, "%s: missing tokenizer key '%s'",
                                      gguf_path(f), key) : 0;
    *s = gguf_value_str(val, len);
    if (!*s)
        return q36_err_set(err, TOK_E_TYPE, "%s: '%s' is %s, expected str", gguf_path(f), key,
                           gguf_vtype_name(val->type));
    return 0;
}

static int get_id(const gguf_file *f, const char *key, int32_t n, int32_t *out, q36_err *err)
{
    const gguf_value *val = gguf_get(f, key);
    *out = -1;
    if (!val)
        return 0;
    int64_t x;
    if (gguf_value_int(val, &x) || val->type == GGUF_T_BOOL)
        return q36_err_set(err, TOK_E_TYPE, "%s: '%s' is %s, expected an integer id",
                           gguf_path(f), key, gguf_vtype_name(val->type));
    if (x < 0 || x >= n)
        return q36_err_set(err, TOK_E_VALUE, "%s: '%s' = %lld, expected an id in [0, %d)",
                           gguf_path(f), key, (long long)x, n);
    *out = (int32_t)x;
    return 0;
}

static const gguf_value *get_arr(const gguf_file *f, const char *key, enum gguf_vtype want_a,
                                 enum gguf_vtype want_b, bool required, int *rc, q36_err *err)
{
    const gguf_value *val = gguf_get(f, key);
    *rc = 0;
    if (!val) {
        if (required)
            *rc = q36_err_set(err, TOK_E_KEY, "%s: missing tokenizer key '%s'", gguf_path(f), key);
        return NULL;
    }
    if (val->type != GGUF_T_ARR || (val->elem != want_a && val->elem != want_b)) {
        *rc = q36_err_set(err, TOK_E_TYPE, "%s: '%s' is %s of %s, expected an array of %s",
                          gguf_path(f), key, gguf_vtype_name(val->type),
                          val->type == GGUF_T_ARR ? gguf_vtype_name(val->elem) : "-",
                          gguf_vtype_name(want_a));
        return NULL;
    }
    return val;
}

/* ---- text-detected special tokens ---------------------------------------------- */

/* End-of-turn candidates, in the order q36 prefers them (llama.cpp takes the
 * first one its hash map yields; for Qwen vocabularies that is <|im_end|>). */
static const char *const eot_names[] = {
    "<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<\xef\xbd\x9c" "end\xe2\x96\x81" "of"
    "\xe2\x96\x81" "sentence\xef\xbd\x9c>", "<end_of_utterance>",
};
/* Fill-in-the-middle markers: the first present of each group. */
static const char *const fim_pre[] = { "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<PRE>",
                                       "<|code_prefix|>", "<|prefix|>" };
static const char *const fim_suf[] = { "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<SUF>",
                                       "<|code_suffix|>", "<|suffix|>" };
static const char *const fim_mid[] = { "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<MID>",
                                       "<|code_middle|>", "<|middle|>" };
static const char *const fim_pad[] = { "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]" };
static const char *const fim_rep[] = { "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>",
                                       "<reponame>" };
static const char *const fim_sep[] = { "<|file_sep|>" };
/* Every token with one of these texts ends generation and is a control token. */
static const char *const eog_names[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>", "[e~[",
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int32_t find_first(const tok_vocab *v, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int32_t id = tok_find(v, names[i], strlen(names[i]));
        if (id >= 0)
            return id;
    }
    return -1;
}

static void add_eog(tok_vocab *v, int32_t id)
{
    if (id < 0)
        return;
    for (int32_t i = 0; i < v->n_eog; i++)
        if (v->eog[i] == id)
            return;
    if (v->n_eog < (int32_t)COUNT(v->eog))
        v->eog[v->n_eog++] = id;
}

static void mark_specials(tok_vocab *v)
{
    if (v->eot < 0) {
        v->eot = find_first(v, eot_names, COUNT(eot_names));
        if (v->eot >= 0)
            v->ctrl[v->eot] = 1;
    }
    const char *const *groups[] = { fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep };
    const size_t sizes[] = { COUNT(fim_pre), COUNT(fim_suf), COUNT(fim_mid), COUNT(fim_pad),
                             COUNT(fim_rep), COUNT(fim_sep) };
    for (int g = 0; g < 6; g++) {
        int32_t id = find_first(v, groups[g], sizes[g]);
        if (id >= 0) {
            v->ctrl[id] = 1;
            if (g >= 3)
                add_eog(v, id);             /* pad, repo and file-separator end generation */
        }
    }
    for (size_t i = 0; i < COUNT(eog_names); i++) {
        int32_t id = tok_find(v, eog_names[i], strlen(eog_names[i]));
        if (id >= 0) {
            v->ctrl[id] = 1;
            add_eog(v, id);
        }
    }
    add_eog(v, v->eos);
    add_eog(v, v->eot);
}

/* Special tokens matched in text: CONTROL, USER_DEFINED, UNKNOWN and the
 * promoted ones, longest text first (ties by id, which llama.cpp leaves to
 * std::sort; no two Qwen special tokens of equal length overlap). */
typedef struct spec_key {
    uint32_t len;
    int32_t  id;
} spec_key;

static int by_len_desc(const void *a, const void *b)
{
    const spec_key *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int build_spec(tok_vocab *v)
{
    int32_t n = 0;
    for (int32_t i = 0; i < v->n; i++)
        n += (v->ctrl[i] || v->type[i] == TOK_T_USER_DEFINED) && v->len[i] > 0;
    spec_key *keys = malloc((size_t)(n ? n : 1) * sizeof *keys);
    v->spec = malloc((size_t)(n ? n : 1) * sizeof *v->spec);
    if (!keys || !v->spec) {
        free(keys);
        return TOK_E_NOMEM;
    }
    for (int32_t i = 0; i < v->n; i++)
        if ((v->ctrl[i] || v->type[i] == TOK_T_USER_DEFINED) && v->len[i] > 0)
            keys[v->n_spec++] = (spec_key){ v->len[i], i };
    qsort(keys, (size_t)v->n_spec, sizeof *keys, by_len_desc);
    for (int32_t i = 0; i < v->n_spec; i++)
        v->spec[i] = keys[i].id;
    free(keys);
    return 0;
}

/* ---- construction ------------------------------------------------------------- */

static int load_tokens(tok_vocab *v, const gguf_file *f, q36_err *err)
{
    int rc;
    const gguf_value *toks = get_arr(f, "tokenizer.ggml.tokens", GGUF_T_STR, GGUF_T_STR, true, &rc, err);
    if (!toks)
        return rc;
    if (toks->n == 0 || toks->n > INT32_MAX / 2)
        return q36_err_set(err, TOK_E_VALUE, "%s: 'tokenizer.ggml.tokens' has %llu entries",
                           gguf_path(f), (unsigned long long)toks->n);
    v->n = (int32_t)toks->n;
    size_t total = 0;
    for (int32_t i = 0; i < v->n; i++) {
        uint64_t len;
        if (!gguf_arr_str(f, toks, (uint64_t)i, &len))
            return q36_err_set(err, TOK_E_TYPE, "%s: 'tokenizer.ggml.tokens'[%d] is not a string",
                               gguf_path(f), i);
        total += len;
    }
    v->blob = malloc(total ? total : 1);
    v->off = malloc((size_t)v->n * sizeof *v->off);
    v->len = malloc((size_t)v->n * sizeof *v->len);
    v->type = malloc((size_t)v->n);
    v->ctrl = calloc((size_t)v->n, 1);
    v->text_mask = table_mask_for((size_t)v->n);
    v->text_tab = malloc(((size_t)v->text_mask + 1) * sizeof *v->text_tab);
    if (!v->blob || !v->off || !v->len || !v->type || !v->ctrl || !v->text_tab)
        return q36_err_set(err, TOK_E_NOMEM, "tokenizer: out of memory for %d tokens", v->n);
    if (total > UINT32_MAX)
        return q36_err_set(err, TOK_E_VALUE, "%s: token texts total %zu bytes", gguf_path(f), total);
    memset(v->text_tab, 0xFF, ((size_t)v->text_mask + 1) * sizeof *v->text_tab);
    size_t at = 0;
    for (int32_t i = 0; i < v->n; i++) {
        uint64_t len;
        const char *s = gguf_arr_str(f, toks, (uint64_t)i, &len);
        memcpy(v->blob + at, s, len);
        v->off[i] = (uint32_t)at;
        v->len[i] = (uint32_t)len;
        at += len;
        text_insert(v, i);
    }

    const gguf_value *types = get_arr(f, "tokenizer.ggml.token_type", GGUF_T_I32, GGUF_T_U32,
                                      false, &rc, err);
    if (rc)
        return rc;
    if (types && types->n != toks->n)
        return q36_err_set(err, TOK_E_VALUE,
                           "%s: 'tokenizer.ggml.token_type' has %llu entries, expected %d (one per token)",
                           gguf_path(f), (unsigned long long)types->n, v->n);
    for (int32_t i = 0; i < v->n; i++) {
        int64_t t = TOK_T_NORMAL;
        if (types && gguf_arr_int(f, types, (uint64_t)i, &t))
            return q36_err_set(err, TOK_E_TYPE, "%s: 'tokenizer.ggml.token_type'[%d] unreadable",
                               gguf_path(f), i);
        if (t < TOK_T_NORMAL || t > TOK_T_BYTE)
            return q36_err_set(err, TOK_E_VALUE,
                               "%s: 'tokenizer.ggml.token_type'[%d] = %lld, expected 1..6",
                               gguf_path(f), i, (long long)t);
        v->type[i] = (uint8_t)t;
        v->ctrl[i] = t == TOK_T_CONTROL || t == TOK_T_UNKNOWN;
    }
    for (int b = 0; b < 256; b++) {
        uint8_t u[4];
        size_t k = tok_utf8_encode(tok_byte_to_cpt((uint8_t)b), u);
        v->byte_tok[b] = tok_find(v, (const char *)u, k);
    }
    return 0;
}

static int load_merges(tok_vocab *v, const gguf_file *f, q36_err *err)
{
    int rc;
    const gguf_value *m = get_arr(f, "tokenizer.ggml.merges", GGUF_T_STR, GGUF_T_STR, true, &rc, err);
    if (!m)
        return rc;
    if (m->n > INT32_MAX / 4)
        return q36_err_set(err, TOK_E_VALUE, "%s: 'tokenizer.ggml.merges' has %llu entries",
                           gguf_path(f), (unsigned long long)m->n);
    v->n_merges = (int32_t)m->n;
    v->merge_mask = table_mask_for(m->n);
    v->merge_tab = calloc((size_t)v->merge_mask + 1, sizeof *v->merge_tab);
    char *buf = NULL;
    size_t cap = 0;
    if (!v->merge_tab)
        return q36_err_set(err, TOK_E_NOMEM, "tokenizer: out of memory for %d merges", v->n_merges);
    for (int32_t r = 0; r < v->n_merges; r++) {
        uint64_t len;
        const char *s = gguf_arr_str(f, m, (uint64_t)r, &len);
        if (!s) {
            free(buf);
            return q36_err_set(err, TOK_E_TYPE, "%s: 'tokenizer.ggml.merges'[%d] is not a string",
                               gguf_path(f), r);
        }
        /* "left right": the separator is the first space after the first byte. */
        const char *sp = len > 1 ? memchr(s + 1, ' ', len - 1) : NULL;
        if (!sp) {
            free(buf);
            return q36_err_set(err, TOK_E_VALUE,
                               "%s: 'tokenizer.ggml.merges'[%d] = '%.*s', expected 'left right'",
                               gguf_path(f), r, (int)(len > 60 ? 60 : len), s);
        }
        size_t ll = (size_t)(sp - s), rl = len - ll - 1;
        int32_t a = tok_find(v, s, ll), b = tok_find(v, sp + 1, rl);
        if (a < 0 || b < 0)
            continue;   /* a side that is not a token can never be a symbol here */
        if (len > cap) {
            char *nb = realloc(buf, len);
            if (!nb) {
                free(buf);
                return q36_err_set(err, TOK_E_NOMEM, "tokenizer: out of memory");
            }
            buf = nb;
            cap = len;
        }
        memcpy(buf, s, ll);
        memcpy(buf + ll, sp + 1, rl);
        merge_insert(v, a, b, r, tok_find(v, buf, ll + rl));
    }
    free(buf);
    return 0;
}

int tok_new_from_gguf(const gguf_file *f, tok_vocab **out, q36_err *err)
{
    *out = NULL;
    const char *model, *pre;
    uint64_t model_len, pre_len;
    int rc = get_str(f, "tokenizer.ggml.model", true, &model, &model_len, err);
    if (rc)
        return rc;
    if (model_len != 4 || memcmp(model, "gpt2", 4))
        return q36_err_set(err, TOK_E_UNSUP, "%s: 'tokenizer.ggml.model' is '%.*s', expected 'gpt2'",
                           gguf_path(f), (int)(model_len > 40 ? 40 : model_len), model);
    if ((rc = get_str(f, "tokenizer.ggml.pre", true, &pre, &pre_len, err)))
        return rc;
    enum tok_pre pt;
#define PRE_IS(s) (pre_len == strlen(s) && !memcmp(pre, s, pre_len))
    if (PRE_IS("qwen35"))
        pt = TOK_PRE_QWEN35;
    else if (PRE_IS("qwen2") || PRE_IS("deepseek-r1-qwen") || PRE_IS("megrez"))
        pt = TOK_PRE_QWEN2;
    else
        return q36_err_set(err, TOK_E_UNSUP,
                           "%s: 'tokenizer.ggml.pre' is '%.*s', expected 'qwen35' or 'qwen2'",
                           gguf_path(f), (int)(pre_len > 40 ? 40 : pre_len), pre);
#undef PRE_IS

    tok_vocab *v = calloc(1, sizeof *v);
    if (!v)
        return q36_err_set(err, TOK_E_NOMEM, "tokenizer: out of memory");
    v->pre = pt;
    snprintf(v->pre_name, sizeof v->pre_name, "%.*s", (int)pre_len, pre);
    if ((rc = load_tokens(v, f, err)) || (rc = load_merges(v, f, err)))
        goto fail;
    if ((rc = get_id(f, "tokenizer.ggml.bos_token_id", v->n, &v->bos, err)) ||
        (rc = get_id(f, "tokenizer.ggml.eos_token_id", v->n, &v->eos, err)) ||
        (rc = get_id(f, "tokenizer.ggml.eot_token_id", v->n, &v->eot, err)) ||
        (rc = get_id(f, "tokenizer.ggml.padding_token_id", v->n, &v->pad, err)))
        goto fail;
    const gguf_value *ab = gguf_get(f, "tokenizer.ggml.add_bos_token");
    if (ab && gguf_value_bool(ab, &v->add_bos)) {
        rc = q36_err_set(err, TOK_E_TYPE, "%s: 'tokenizer.ggml.add_bos_token' is %s, expected bool",
                         gguf_path(f), gguf_vtype_name(ab->type));
        goto fail;
    }
    mark_specials(v);
    if ((rc = build_spec(v)) || (rc = tok_pieces_build(v, err)) ||
        (rc = tok_pretok_new(v->pre, &v->rx, err)))
        goto fail;
    *out = v;
    return 0;
fail:
    if (rc == TOK_E_NOMEM)
        q36_err_set(err, TOK_E_NOMEM, "tokenizer: out of memory");
    tok_free(v);
    return rc;
}

int tok_new_from_file(const char *path, tok_vocab **out, q36_err *err)
{
    gguf_file *f = NULL;
    *out = NULL;
    int rc = gguf_open(path, &f, err);
    if (rc == 0)
        rc = tok_new_from_gguf(f, out, err);
    gguf_close(f);
    return rc;
}

void tok_free(tok_vocab *v)
{
    if (!v)
        return;
    free(v->blob);
    free(v->off);
    free(v->len);
    free(v->type);
    free(v->ctrl);
    free(v->text_tab);
    free(v->merge_tab);
    free(v->spec);
    free(v->pblob);
    free(v->poff);
    free(v->plen);
    tok_pretok_free(v->rx);
    free(v);
}

/* ---- accessors ------------------------------------------------------------------ */

int32_t      tok_n_vocab(const tok_vocab *v)   { return v->n; }
enum tok_pre tok_pre_type(const tok_vocab *v)  { return v->pre; }
const char  *tok_pre_name(const tok_vocab *v)  { return v->pre_name; }
int32_t      tok_bos(const tok_vocab *v)       { return v->bos; }
int32_t      tok_eos(const tok_vocab *v)       { return v->eos; }
int32_t      tok_eot(const tok_vocab *v)       { return v->eot; }
int32_t      tok_pad(const tok_vocab *v)       { return v->pad; }
bool         tok_add_bos(const tok_vocab *v)   { return v->add_bos; }

bool tok_is_eog(const tok_vocab *v, int32_t id)
{
    for (int32_t i = 0; i < v->n_eog; i++)
        if (v->eog[i] == id)
            return true;
    return false;
}

const int32_t *tok_eog_ids(const tok_vocab *v, int32_t *n)
{
    *n = v->n_eog;
    return v->eog;
}

const char *tok_text(const tok_vocab *v, int32_t id, size_t *len)
{
    if (id < 0 || id >= v->n) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = v->len[id];
    return v->blob + v->off[id];
}

int tok_get_type(const tok_vocab *v, int32_t id)
{
    return id >= 0 && id < v->n ? v->type[id] : 0;
}

bool tok_is_control(const tok_vocab *v, int32_t id)
{
    return id >= 0 && id < v->n && v->ctrl[id];
}

bool tok_set_jit(tok_vocab *v, bool on)
{
    return tok_pretok_set_jit(v->rx, on);
}
