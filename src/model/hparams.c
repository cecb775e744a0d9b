/* hparams.c: reading model geometry from GGUF metadata (see hparams.h).
 * Required keys and defaults follow llama.cpp's loader for qwen35/qwen35moe:
 * head_count_kv defaults to head_count, key/value_length to n_embd/n_head,
 * rope.dimension_count to the head dim, rope.freq_base to 10000,
 * full_attention_interval to 4, nextn_predict_layers and expert counts to 0. */
#include "hparams.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static model_hsrc *src_add(model_hparams *hp, const char *what, const char *key, bool dflt)
{
    if (hp->n_src >= MODEL_MAX_SRC)
        return NULL;
    model_hsrc *s = &hp->src[hp->n_src++];
    s->what = what;
    snprintf(s->key, sizeof s->key, "%s", key);
    s->defaulted = dflt;
    s->value[0] = 0;
    return s;
}

/* Finds "<arch>.<suffix>" (a full key when suffix starts with '!') and
 * records where the value came from. Returns the value, or NULL when the key
 * is absent; *rc is set when an absent key is required. */
static const gguf_value *find_key(const gguf_file *f, model_hparams *hp, const char *what,
                                  const char *suffix, bool required, model_hsrc **src,
                                  int *rc, q36_err *err)
{
    char key[96];
    if (suffix[0] == '!')
        snprintf(key, sizeof key, "%s", suffix + 1);
    else
        snprintf(key, sizeof key, "%s.%s", hp->arch_name, suffix);
    const gguf_value *v = gguf_get(f, key);
    *src = src_add(hp, what, key, v == NULL);
    *rc = 0;
    if (!v && required)
        *rc = q36_err_set(err, Q36_E_FORMAT, "%s: missing key '%s' (%s), which %s requires",
                          gguf_path(f), key, what, hp->arch_name);
    return v;
}

/* An unsigned 32-bit key; `dflt` when absent and not required. */
static int get_u32(const gguf_file *f, model_hparams *hp, const char *what,
                   const char *suffix, bool required, uint32_t dflt,
                   uint32_t *out, q36_err *err)
{
    model_hsrc *s;
    int rc;
    const gguf_value *v = find_key(f, hp, what, suffix, required, &s, &rc, err);
    if (rc)
        return rc;
    int64_t x = dflt;
    if (v && (gguf_value_int(v, &x) != 0 || x < 0 || x > UINT32_MAX))
        return q36_err_set(err, Q36_E_FORMAT,
                           "%s: key '%s' (%s): expected an unsigned 32-bit integer, found %s",
                           gguf_path(f), s ? s->key : suffix, what, gguf_vtype_name(v->type));
    *out = (uint32_t)x;
    if (s)
        snprintf(s->value, sizeof s->value, "%" PRIu32, *out);
    return 0;
}

/* A float key; `dflt` when absent and not required. */
static int get_f32(const gguf_file *f, model_hparams *hp, const char *what,
                   const char *suffix, bool required, float dflt, float *out, q36_err *err)
{
    model_hsrc *s;
    int rc;
    const gguf_value *v = find_key(f, hp, what, suffix, required, &s, &rc, err);
    if (rc)
        return rc;
    double x = dflt;
    if (v && gguf_value_float(v, &x) != 0)
        return q36_err_set(err, Q36_E_FORMAT, "%s: key '%s' (%s): expected a number, found %s",
                           gguf_path(f), s ? s->key : suffix, what, gguf_vtype_name(v->type));
    *out = (float)x;
    if (s)
        snprintf(s->value, sizeof s->value, "%g", (double)*out);
    return 0;
}

/* rope.dimension_sections: an integer array of up to 4 entries (required). */
static int get_sections(const gguf_file *f, model_hparams *hp, q36_err *err)
{
    char key[96];
    snprintf(key, sizeof key, "%s.rope.dimension_sections", hp->arch_name);
    const gguf_value *v = gguf_get(f, key);
    model_hsrc *s = src_add(hp, "rope_sections", key, v == NULL);
    if (!v)
        return q36_err_set(err, Q36_E_FORMAT, "%s: missing key '%s', which %s requires",
                           gguf_path(f), key, hp->arch_name);
    if (v->type != GGUF_T_ARR || v->n == 0 || v->n > 4)
        return q36_err_set(err, Q36_E_FORMAT,
                           "%s: key '%s': expected an integer array of 1..4 entries, found %s of %" PRIu64,
                           gguf_path(f), key, gguf_vtype_name(v->type), v->n);
    memset(hp->rope_sections, 0, sizeof hp->rope_sections);
    for (uint64_t i = 0; i < v->n; i++) {
        int64_t x;
        if (gguf_arr_int(f, v, i, &x) != 0 || x < 0 || x > INT32_MAX)
            return q36_err_set(err, Q36_E_FORMAT, "%s: key '%s' entry %" PRIu64 ": expected a non-negative integer",
                               gguf_path(f), key, i);
        hp->rope_sections[i] = (int32_t)x;
    }
    if (s)
        snprintf(s->value, sizeof s->value, "[%d,%d,%d,%d]", hp->rope_sections[0],
                 hp->rope_sections[1], hp->rope_sections[2], hp->rope_sections[3]);
    return 0;
}

/* Which blocks are DeltaNet layers: the per-block bool array when present,
 * else the interval rule (MODEL.md §1.2). MTP blocks are never recurrent. */
static int get_layer_pattern(const gguf_file *f, model_hparams *hp, q36_err *err)
{
    char key[96];
    snprintf(key, sizeof key, "%s.attention.recurrent_layers", hp->arch_name);
    const gguf_value *v = gguf_get(f, key);
    if (v) {
        if (v->type != GGUF_T_ARR || v->n != hp->n_block)
            return q36_err_set(err, Q36_E_FORMAT,
                               "%s: key '%s': expected an array of %" PRIu32 " bools (one per block), found %s of %" PRIu64,
                               gguf_path(f), key, hp->n_block, gguf_vtype_name(v->type), v->n);
        for (uint32_t i = 0; i < hp->n_block; i++) {
            int64_t x;
            if (gguf_arr_int(f, v, i, &x) != 0)
                return q36_err_set(err, Q36_E_FORMAT, "%s: key '%s' entry %" PRIu32 ": expected a bool",
                                   gguf_path(f), key, i);
            hp->recurrent[i] = x != 0;
        }
        hp->full_attn_interval = 0;
        model_hsrc *s = src_add(hp, "recurrent_layers", key, false);
        if (s)
            snprintf(s->value, sizeof s->value, "array[%" PRIu32 "]", hp->n_block);
    } else {
        int rc = get_u32(f, hp, "full_attn_interval", "full_attention_interval", false, 4,
                         &hp->full_attn_interval, err);
        if (rc)
            return rc;
        if (hp->full_attn_interval == 0)
            return q36_err_set(err, Q36_E_FORMAT, "%s: key '%s.full_attention_interval' is 0; expected >= 1",
                               gguf_path(f), hp->arch_name);
        for (uint32_t i = 0; i < hp->n_block; i++)
            hp->recurrent[i] = i < hp->n_layer && (i + 1) % hp->full_attn_interval != 0;
    }
    hp->n_attn_layers = 0;
    for (uint32_t i = 0; i < hp->n_layer; i++)
        hp->n_attn_layers += !hp->recurrent[i];
    return 0;
}

static int check(const gguf_file *f, bool ok, q36_err *err, const char *what)
{
    if (ok)
        return 0;
    return q36_err_set(err, Q36_E_FORMAT, "%s: inconsistent geometry: %s", gguf_path(f), what);
}

int model_hparams_load(const gguf_file *f, model_hparams *hp, q36_err *err)
{
    memset(hp, 0, sizeof *hp);
    const gguf_value *a = gguf_get(f, "general.architecture");
    uint64_t alen = 0;
    const char *as = a ? gguf_value_str(a, &alen) : NULL;
    if (!as)
        return q36_err_set(err, Q36_E_FORMAT, "%s: missing string key 'general.architecture'", gguf_path(f));
    if (alen == 6 && !memcmp(as, "qwen35", 6)) {
        hp->arch = MODEL_QWEN35;
        hp->arch_name = "qwen35";
    } else if (alen == 9 && !memcmp(as, "qwen35moe", 9)) {
        hp->arch = MODEL_QWEN35MOE;
        hp->arch_name = "qwen35moe";
    } else {
        return q36_err_set(err, Q36_E_UNSUP,
                           "%s: general.architecture is '%.*s'; q36 runs 'qwen35' and 'qwen35moe'",
                           gguf_path(f), (int)(alen > 64 ? 64 : alen), as);
    }
    bool moe = hp->arch == MODEL_QWEN35MOE;
    int rc = 0;
#define U32(what, key, req, dflt, dst) \
    if ((rc = get_u32(f, hp, what, key, req, dflt, dst, err))) return rc
    U32("n_ctx_train", "context_length", true, 0, &hp->n_ctx_train);
    U32("n_embd", "embedding_length", true, 0, &hp->n_embd);
    U32("n_block", "block_count", true, 0, &hp->n_block);
    U32("n_nextn", "nextn_predict_layers", false, 0, &hp->n_nextn);
    if (hp->n_block == 0 || hp->n_block > MODEL_MAX_BLOCKS || hp->n_nextn >= hp->n_block)
        return q36_err_set(err, Q36_E_FORMAT,
                           "%s: %s.block_count is %" PRIu32 " with %" PRIu32 " MTP blocks; expected 1..%d blocks with at least one trunk layer",
                           gguf_path(f), hp->arch_name, hp->n_block, hp->n_nextn, MODEL_MAX_BLOCKS);
    hp->n_layer = hp->n_block - hp->n_nextn;
    U32("n_head", "attention.head_count", true, 0, &hp->n_head);
    if (hp->n_head == 0)
        return check(f, false, err, "attention.head_count is 0");
    U32("n_head_kv", "attention.head_count_kv", false, hp->n_head, &hp->n_head_kv);
    U32("head_dim", "attention.key_length", false, hp->n_embd / hp->n_head, &hp->head_dim);
    uint32_t vlen;
    U32("head_dim_v", "attention.value_length", false, hp->n_embd / hp->n_head, &vlen);
    U32("n_rot", "rope.dimension_count", false, hp->head_dim, &hp->n_rot);
    if ((rc = get_f32(f, hp, "rope_base", "rope.freq_base", false, 10000.0f, &hp->rope_base, err)))
        return rc;
    if ((rc = get_f32(f, hp, "eps", "attention.layer_norm_rms_epsilon", true, 0, &hp->eps, err)))
        return rc;
    if ((rc = get_sections(f, hp, err)))
        return rc;
    U32("ssm_conv", "ssm.conv_kernel", true, 0, &hp->ssm_conv);
    U32("ssm_inner", "ssm.inner_size", true, 0, &hp->ssm_inner);
    U32("ssm_state", "ssm.state_size", true, 0, &hp->ssm_state);
    U32("ssm_dt_rank", "ssm.time_step_rank", true, 0, &hp->ssm_dt_rank);
    U32("ssm_group", "ssm.group_count", true, 0, &hp->ssm_group);
    if ((rc = get_layer_pattern(f, hp, err)))
        return rc;
    if (moe) {
        U32("n_expert", "expert_count", true, 0, &hp->n_expert);
        U32("n_expert_used", "expert_used_count", true, 0, &hp->n_expert_used);
        U32("n_ff", "feed_forward_length", false, 0, &hp->n_ff);
        U32("n_ff_exp", "expert_feed_forward_length", false,
            hp->n_expert_used ? hp->n_ff / hp->n_expert_used : 0, &hp->n_ff_exp);
        U32("n_ff_shexp", "expert_shared_feed_forward_length", false, hp->n_ff, &hp->n_ff_shexp);
    } else {
        U32("n_ff", "feed_forward_length", true, 0, &hp->n_ff);
    }
#undef U32

    /* The vocabulary is the row count of token_embd (llama.cpp checks it
     * against the token list); the head is tied when output.weight is absent. */
    const gguf_tensor *emb = gguf_find_tensor(f, "token_embd.weight");
    if (!emb)
        return q36_err_set(err, Q36_E_FORMAT, "%s: tensor 'token_embd.weight' is missing", gguf_path(f));
    if (emb->n_dims != 2 || emb->ne[0] != hp->n_embd || emb->ne[1] > UINT32_MAX)
        return q36_err_set(err, Q36_E_FORMAT,
                           "%s: tensor 'token_embd.weight' is [%" PRIu64 ", %" PRIu64 "]; expected [%" PRIu32 ", n_vocab]",
                           gguf_path(f), emb->ne[0], emb->ne[1], hp->n_embd);
    hp->n_vocab = (uint32_t)emb->ne[1];
    model_hsrc *s = src_add(hp, "n_vocab", "token_embd.weight ne1", false);
    if (s)
        snprintf(s->value, sizeof s->value, "%" PRIu32, hp->n_vocab);
    hp->tied_head = gguf_find_tensor(f, "output.weight") == NULL;

    if ((rc = check(f, hp->head_dim == vlen, err, "attention.key_length != attention.value_length")) ||
        (rc = check(f, hp->n_head_kv > 0 && hp->n_head % hp->n_head_kv == 0, err,
                    "attention.head_count is not a multiple of head_count_kv")) ||
        (rc = check(f, hp->n_rot > 0 && hp->n_rot <= hp->head_dim && hp->n_rot % 2 == 0, err,
                    "rope.dimension_count must be even and in 1..key_length")) ||
        (rc = check(f, hp->ssm_group > 0 && hp->ssm_dt_rank % hp->ssm_group == 0, err,
                    "ssm.time_step_rank (value heads) is not a multiple of ssm.group_count (key heads)")) ||
        (rc = check(f, hp->ssm_conv > 0 && hp->ssm_state > 0, err, "ssm.conv_kernel and ssm.state_size must be > 0")) ||
        (rc = check(f, hp->ssm_inner == hp->ssm_dt_rank * hp->ssm_state, err,
                    "ssm.inner_size != ssm.time_step_rank * ssm.state_size (the value head dim must equal the key head dim)")))
        return rc;
    if (moe && (rc = check(f, hp->n_expert > 0 && hp->n_expert_used > 0 && hp->n_expert_used <= hp->n_expert &&
                              hp->n_ff_exp > 0, err,
                           "expert_used_count must be in 1..expert_count and the expert FFN width > 0")))
        return rc;
    return 0;
}
