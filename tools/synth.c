/* synth.c: `q36 synth`: writes a qwen35 or qwen35moe GGUF with exactly the
 * metadata keys and tensor names/shapes llama.cpp's loader expects
 * (shared/docs/MODEL.md §6), filled with random but valid weights at
 * realistic scales. Presets give real geometries; flags override each value.
 * The file is streamed tensor by tensor, so memory stays bounded. */
#include "cli.h"
#include "synth.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/quant/types.h"

typedef struct geom {
    int      moe;
    uint32_t layers, hidden, heads, kv_heads, head_dim, rope_dims;
    uint32_t ssm_k_heads, ssm_v_heads, ssm_head_dim, conv;
    uint32_t ffn, experts, experts_used, expert_ffn, shared_ffn;
    uint32_t interval, n_vocab, ctx;
    int      tied, mtp, layer_array;
} geom;

typedef struct preset {
    const char *name;
    geom g;
} preset;

/* Real geometries (MODEL.md §1.1) and a tiny one for fast tests. The moe
 * field of `tiny` is taken from --arch. */
static const preset presets[] = {
    { "tiny",    { 0, 4, 128, 4, 2, 64, 16, 2, 4, 32, 4, 256, 8, 2, 64, 64, 4, 0, 4096, 1, 0, 0 } },
    { "0.8b",    { 0, 24, 1024, 8, 2, 256, 64, 16, 16, 128, 4, 3584, 0, 0, 0, 0, 4, 248320, 262144, 1, 1, 0 } },
    { "2b",      { 0, 24, 2048, 8, 2, 256, 64, 16, 16, 128, 4, 6144, 0, 0, 0, 0, 4, 248320, 262144, 1, 1, 0 } },
    { "35b-a3b", { 1, 40, 2048, 16, 2, 256, 64, 16, 32, 128, 4, 0, 256, 8, 512, 512, 4, 248320, 262144, 0, 1, 0 } },
};

typedef struct plan_t {
    char      name[64];
    uint32_t  type;
    uint32_t  n_dims;
    uint64_t  ne[3];
    enum synth_dist dist;
    float     scale;
} plan_t;

typedef struct plan {
    plan_t  *t;
    size_t   n, cap;
} plan;

static void usage(FILE *o)
{
    fprintf(o,
"usage: q36 synth --arch qwen35|qwen35moe (--preset NAME | geometry flags) -o OUT.gguf\n"
"                 [--type T] [--head-type T] [--vocab tokenizer.json] [--pre qwen35|qwen2] [--seed S]\n"
"\n"
"Writes a GGUF with real shapes and metadata and random but valid weights, for\n"
"tests and benchmarks without downloads. Its output is noise.\n"
"\n"
"  --preset NAME      tiny (default), 0.8b, 2b (qwen35), 35b-a3b (qwen35moe)\n"
"  --type T           weight type (default q8_0): f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0\n"
"                     q2_K q3_K q4_K q5_K q6_K iq1_s iq1_m iq2_xxs iq2_xs iq2_s iq3_xxs\n"
"                     iq3_s iq4_nl iq4_xs mxfp4 q1_0 q2_0 (a row no block divides: f16)\n"
"                     q4_K_M: llama-quantize's mix (Q4_K; Q6_K head, Q6_K attn_v/attn_qkv\n"
"                     and ffn_down in some blocks)\n"
"  --head-type T      output head type (default: --type); token_embd uses --type\n"
"  --vocab FILE       Hugging Face tokenizer.json (default: a 282-token byte-level vocabulary)\n"
"  --pre NAME         tokenizer.ggml.pre: qwen35 (default) or qwen2\n"
"  --seed S           random seed (default 1); a tensor's values depend on S and its name\n"
"  -o FILE            output path\n"
"geometry (override the preset):\n"
"  --layers N         trunk layers           --hidden N        embedding width D\n"
"  --heads N          attention heads        --kv-heads N      KV heads\n"
"  --head-dim N       attention head dim     --rope-dims N     rotary dims\n"
"  --ssm-k-heads N    DeltaNet key heads     --ssm-v-heads N   DeltaNet value heads\n"
"  --ssm-head-dim N   DeltaNet head dim      --conv N          conv kernel\n"
"  --ffn N            dense FFN width        --experts N       experts\n"
"  --experts-used N   experts per token      --expert-ffn N    expert FFN width\n"
"  --shared-ffn N     shared expert width    --attn-interval N full-attention interval\n"
"  --n-vocab N        vocabulary rows        --ctx N           context_length\n"
"  --tied on|off      tied output head       --mtp on|off      MTP (nextn) block\n"
"  --layer-array on|off  write attention.recurrent_layers instead of the interval\n");
}

static int plan_add(plan *p, uint32_t type, enum synth_dist dist, float scale,
                    uint32_t n_dims, uint64_t ne0, uint64_t ne1, uint64_t ne2, const char *fmt, ...)
    __attribute__((format(printf, 9, 10)));

static int plan_add(plan *p, uint32_t type, enum synth_dist dist, float scale,
                    uint32_t n_dims, uint64_t ne0, uint64_t ne1, uint64_t ne2, const char *fmt, ...)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        plan_t *t = realloc(p->t, cap * sizeof *t);
        if (!t)
            return -1;
        p->t = t;
        p->cap = cap;
    }
    plan_t *t = &p->t[p->n++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->name, sizeof t->name, fmt, ap);
    va_end(ap);
    /* llama-quantize leaves 1-D tensors in F32; a row the type cannot hold
     * (ne0 not a multiple of its block) falls back to F16, like its fallback. */
    if (n_dims == 1)
        type = QT_F32;
    else if (quant_row_bytes(type, ne0) == 0)
        type = QT_F16;
    t->type = type;
    t->n_dims = n_dims;
    t->ne[0] = ne0;
    t->ne[1] = ne1;
    t->ne[2] = ne2;
    t->dist = dist;
    t->scale = scale;
    return 0;
}

/* The tensors of one block (MODEL.md §6.3), in llama.cpp's order. */
static int plan_block(plan *p, const geom *g, uint32_t il, int recurrent, int mtp, uint32_t wt)
{
    uint64_t D = g->hidden;
    float sD = 1.0f / sqrtf((float)D);
    int rc = 0;
    rc |= plan_add(p, QT_F32, SYN_NORM_W, 0.1f, 1, D, 1, 1, "blk.%u.attn_norm.weight", il);
    rc |= plan_add(p, QT_F32, SYN_NORM_W, 0.1f, 1, D, 1, 1, "blk.%u.post_attention_norm.weight", il);
    if (recurrent) {
        uint64_t kd = (uint64_t)g->ssm_k_heads * g->ssm_head_dim;
        uint64_t vd = (uint64_t)g->ssm_v_heads * g->ssm_head_dim;
        uint64_t cc = 2 * kd + vd;
        rc |= plan_add(p, wt, SYN_NORMAL, sD, 2, D, cc, 1, "blk.%u.attn_qkv.weight", il);
        rc |= plan_add(p, wt, SYN_NORMAL, sD, 2, D, vd, 1, "blk.%u.attn_gate.weight", il);
        rc |= plan_add(p, QT_F32, SYN_NORMAL, 0.5f / sqrtf((float)g->conv), 2, g->conv, cc, 1,
                       "blk.%u.ssm_conv1d.weight", il);
        rc |= plan_add(p, QT_F32, SYN_UNIFORM, 0.5f, 1, g->ssm_v_heads, 1, 1, "blk.%u.ssm_dt.bias", il);
        rc |= plan_add(p, QT_F32, SYN_SSM_A, 0, 1, g->ssm_v_heads, 1, 1, "blk.%u.ssm_a", il);
        rc |= plan_add(p, QT_F32, SYN_NORMAL, sD, 2, D, g->ssm_v_heads, 1, "blk.%u.ssm_beta.weight", il);
        rc |= plan_add(p, QT_F32, SYN_NORMAL, sD, 2, D, g->ssm_v_heads, 1, "blk.%u.ssm_alpha.weight", il);
        rc |= plan_add(p, QT_F32, SYN_NORM_W, 0.05f, 1, g->ssm_head_dim, 1, 1, "blk.%u.ssm_norm.weight", il);
        rc |= plan_add(p, wt, SYN_NORMAL, 1.0f / sqrtf((float)vd), 2, vd, D, 1, "blk.%u.ssm_out.weight", il);
    } else {
        uint64_t qd = (uint64_t)g->heads * g->head_dim, kvd = (uint64_t)g->kv_heads * g->head_dim;
        rc |= plan_add(p, wt, SYN_NORMAL, sD, 2, D, 2 * qd, 1, "blk.%u.attn_q.weight", il);
        rc |= plan_add(p, wt, SYN_NORMAL, sD, 2, D, kvd, 1, "blk.%u.attn_k.weight", il);
        rc |= plan_add(p, wt, SYN_NORMAL, sD, 2, D, kvd, 1, "blk.%u.attn_v.weight", il);
        rc |= plan_add(p, QT_F32, SYN_NORM_W, 0.1f, 1, g->head_dim, 1, 1, "blk.%u.attn_q_norm.weight", il);
        rc |= plan_add(p, QT_F32, SYN_NORM_W, 0.1f, 1, g->head_dim, 1, 1, "blk.%u.attn_k_norm.weight", il);
        rc |= plan_add(p, wt, SYN_NORMAL, 1.0f / sqrtf((float)qd), 2, qd, D, 1, "blk.%u.attn_output.weight", il);
    }
    if (g->moe) {
        uint64_t E = g->experts, Fe = g->expert_ffn, Fs = g->shared_ffn;
        rc |= plan_add(p, QT_F32, SYN_NORMAL, sD, 2, D, E, 1, "blk.%u.ffn_gate_inp.weight", il);
        rc |= plan_add(p, wt, SYN_NORMAL, sD, 3, D, Fe, E, "blk.%u.ffn_gate_exps.weight", il);
        rc |= plan_add(p, wt, SYN_NORMAL, sD, 3, D, Fe, E, "blk.%u.ffn_up_exps.weight", il);
        rc |= plan_add(p, wt, SYN_NORMAL, 1.0f / sqrtf((float)Fe), 3, Fe, D, E, "blk.%u.ffn_down_exps.weight", il);
        rc |= plan_add(p, QT_F32, SYN_NORMAL, sD, 1, D, 1, 1, "blk.%u.ffn_gate_inp_shexp.weight", il);
        rc |= plan_add(p, wt, SYN_NORMAL, sD, 2, D, Fs, 1, "blk.%u.ffn_gate_shexp.weight", il);
        rc |= plan_add(p, wt, SYN_NORMAL, sD, 2, D, Fs, 1, "blk.%u.ffn_up_shexp.weight", il);
        rc |= plan_add(p, wt, SYN_NORMAL, 1.0f / sqrtf((float)Fs), 2, Fs, D, 1, "blk.%u.ffn_down_shexp.weight", il);
    } else {
        uint64_t F = g->ffn;
        rc |= plan_add(p, wt, SYN_NORMAL, sD, 2, D, F, 1, "blk.%u.ffn_gate.weight", il);
        rc |= plan_add(p, wt, SYN_NORMAL, sD, 2, D, F, 1, "blk.%u.ffn_up.weight", il);
        rc |= plan_add(p, wt, SYN_NORMAL, 1.0f / sqrtf((float)F), 2, F, D, 1, "blk.%u.ffn_down.weight", il);
    }
    if (mtp) {
        rc |= plan_add(p, wt, SYN_NORMAL, 1.0f / sqrtf(2.0f * (float)D), 2, 2 * D, D, 1,
                       "blk.%u.nextn.eh_proj.weight", il);
        rc |= plan_add(p, QT_F32, SYN_NORM_W, 0.1f, 1, D, 1, 1, "blk.%u.nextn.enorm.weight", il);
        rc |= plan_add(p, QT_F32, SYN_NORM_W, 0.1f, 1, D, 1, 1, "blk.%u.nextn.hnorm.weight", il);
        rc |= plan_add(p, QT_F32, SYN_NORM_W, 0.1f, 1, D, 1, 1, "blk.%u.nextn.shared_head_norm.weight", il);
    }
    return rc;
}

static int is_recurrent(const geom *g, uint32_t il)
{
    return il < g->layers && (il + 1) % g->interval != 0;
}

static int build_plan(plan *p, const geom *g, uint32_t wt, uint32_t ht)
{
    int rc = 0;
    /* Embedding rows of RMS 2: through a tied head, logits of spread ~2. */
    rc |= plan_add(p, wt, SYN_NORMAL, 2.0f / sqrtf((float)g->hidden), 2,
                   g->hidden, g->n_vocab, 1, "token_embd.weight");
    rc |= plan_add(p, QT_F32, SYN_NORM_W, 0.1f, 1, g->hidden, 1, 1, "output_norm.weight");
    if (!g->tied)
        rc |= plan_add(p, ht, SYN_NORMAL, 1.0f / sqrtf((float)g->hidden), 2, g->hidden, g->n_vocab, 1,
                       "output.weight");
    for (uint32_t il = 0; il < g->layers + (g->mtp ? 1u : 0u); il++)
        rc |= plan_block(p, g, il, is_recurrent(g, il), il >= g->layers, wt);
    return rc;
}

/* Retypes the plan's tensors to a mixed file type, in file order; an
 * untied output head keeps head_type where it is >= 0 (--head-type). */
static void apply_mix(plan *p, const geom *g, synth_mix *m, int head_type)
{
    m->n_layer = g->layers + (g->mtp ? 1u : 0u);
    m->n_expert = g->moe ? g->experts : 0;
    m->tied = g->tied;
    for (size_t i = 0; i < p->n; i++)
        synth_mix_count(m, p->t[i].name);
    for (size_t i = 0; i < p->n; i++) {
        plan_t *t = &p->t[i];
        if (t->type == QT_F32)   /* norms, conv, gates, router: not quantized */
            continue;
        uint32_t type = synth_mix_type(m, t->name);
        if (head_type >= 0 && !strcmp(t->name, "output.weight"))
            type = (uint32_t)head_type;
        t->type = quant_row_bytes(type, t->ne[0]) ? type : QT_F16;
    }
}

/* general.file_type as llama.cpp names the mostly-one-type files. */
static uint32_t file_type(uint32_t t)
{
    switch (t) {
    case QT_F32:  return 0;
    case QT_F16:  return 1;
    case QT_Q8_0: return 7;
    case QT_Q4_K: return 15;   /* Q4_K_M */
    case QT_Q6_K: return 18;
    case QT_BF16: return 32;
    default:      return 0;
    }
}

static void write_metadata(gguf_writer *w, const geom *g, const char *arch, const char *preset_name,
                           uint32_t wt)
{
    char key[128], name[96];
#define K(suffix) (snprintf(key, sizeof key, "%s.%s", arch, suffix), key)
    gguf_w_str(w, "general.architecture", arch);
    snprintf(name, sizeof name, "q36-synth-%s", preset_name);
    gguf_w_str(w, "general.name", name);
    gguf_w_u32(w, "general.file_type", file_type(wt));
    gguf_w_u32(w, "general.quantization_version", 2);
    gguf_w_u32(w, K("block_count"), g->layers + (g->mtp ? 1u : 0u));
    if (g->mtp)
        gguf_w_u32(w, K("nextn_predict_layers"), 1);
    gguf_w_u32(w, K("context_length"), g->ctx);
    gguf_w_u32(w, K("embedding_length"), g->hidden);
    if (!g->moe)
        gguf_w_u32(w, K("feed_forward_length"), g->ffn);
    gguf_w_u32(w, K("attention.head_count"), g->heads);
    gguf_w_u32(w, K("attention.head_count_kv"), g->kv_heads);
    gguf_w_u32(w, K("attention.key_length"), g->head_dim);
    gguf_w_u32(w, K("attention.value_length"), g->head_dim);
    gguf_w_f32(w, K("attention.layer_norm_rms_epsilon"), 1e-6f);
    gguf_w_f32(w, K("rope.freq_base"), 1e7f);
    gguf_w_u32(w, K("rope.dimension_count"), g->rope_dims);
    /* Text-only positions make every section rotate by the same position;
     * the split mirrors the real [11, 11, 10, 0] for R = 64. */
    int32_t half = (int32_t)g->rope_dims / 2;
    int32_t sec[4] = { (half * 11 + 31) / 32, (half * 11 + 31) / 32, 0, 0 };
    sec[2] = half - sec[0] - sec[1];
    if (sec[2] < 0) {
        sec[1] += sec[2];
        sec[2] = 0;
    }
    gguf_w_arr(w, K("rope.dimension_sections"), GGUF_T_I32, sec, 4);
    gguf_w_u32(w, K("ssm.conv_kernel"), g->conv);
    gguf_w_u32(w, K("ssm.state_size"), g->ssm_head_dim);
    gguf_w_u32(w, K("ssm.group_count"), g->ssm_k_heads);
    gguf_w_u32(w, K("ssm.time_step_rank"), g->ssm_v_heads);
    gguf_w_u32(w, K("ssm.inner_size"), g->ssm_v_heads * g->ssm_head_dim);
    if (g->layer_array) {
        uint32_t nb = g->layers + (g->mtp ? 1u : 0u);
        uint8_t *rec = calloc(nb, 1);
        if (rec)
            for (uint32_t i = 0; i < nb; i++)
                rec[i] = (uint8_t)is_recurrent(g, i);
        gguf_w_arr(w, K("attention.recurrent_layers"), GGUF_T_BOOL, rec, rec ? nb : 0);
        free(rec);
    } else {
        gguf_w_u32(w, K("full_attention_interval"), g->interval);
    }
    if (g->moe) {
        gguf_w_u32(w, K("expert_count"), g->experts);
        gguf_w_u32(w, K("expert_used_count"), g->experts_used);
        gguf_w_u32(w, K("expert_feed_forward_length"), g->expert_ffn);
        gguf_w_u32(w, K("expert_shared_feed_forward_length"), g->shared_ffn);
    }
#undef K
}

static int check_geom(const geom *g)
{
    const char *bad = NULL;
    if (!g->layers || !g->hidden || !g->heads || !g->kv_heads || !g->head_dim)
        bad = "layers, hidden, heads, kv-heads and head-dim must be > 0";
    else if (g->heads % g->kv_heads)
        bad = "heads must be a multiple of kv-heads";
    else if (!g->rope_dims || g->rope_dims % 2 || g->rope_dims > g->head_dim)
        bad = "rope-dims must be even and in 2..head-dim";
    else if (!g->ssm_k_heads || !g->ssm_v_heads || g->ssm_v_heads % g->ssm_k_heads)
        bad = "ssm-v-heads must be a positive multiple of ssm-k-heads";
    else if (!g->ssm_head_dim || !g->conv)
        bad = "ssm-head-dim and conv must be > 0";
    else if (!g->interval)
        bad = "attn-interval must be >= 1";
    else if (g->moe && (!g->experts || !g->experts_used || g->experts_used > g->experts ||
                        !g->expert_ffn || !g->shared_ffn))
        bad = "qwen35moe needs experts >= experts-used >= 1 and expert-ffn, shared-ffn > 0";
    else if (!g->moe && !g->ffn)
        bad = "qwen35 needs ffn > 0";
    else if (g->layers + (g->mtp ? 1u : 0u) > 512)
        bad = "at most 512 blocks";
    if (bad) {
        fprintf(stderr, "q36 synth: bad geometry: %s\n", bad);
        return CLI_USAGE;
    }
    return 0;
}

static int on_off(const char *flag, const char *v, int *out)
{
    if (v && !strcmp(v, "on")) { *out = 1; return 0; }
    if (v && !strcmp(v, "off")) { *out = 0; return 0; }
    return cli_usage("synth", "%s expects on or off, got '%s'", flag, v ? v : "(nothing)");
}

int cmd_synth(int argc, char **argv)
{
    const char *arch = NULL, *preset_name = "tiny", *out = NULL, *vocab_path = NULL, *pre = "qwen35";
    int wt = QT_Q8_0, ht = -1;
    synth_mix mix;
    bool mixed = false;
    int64_t seed = 1;
    /* Geometry overrides: flag name -> field; -1 = keep the preset. */
    static const struct { const char *flag; size_t off; } gflags[] = {
#define G(f, m) { f, offsetof(geom, m) }
        G("--layers", layers), G("--hidden", hidden), G("--heads", heads), G("--kv-heads", kv_heads),
        G("--head-dim", head_dim), G("--rope-dims", rope_dims), G("--ssm-k-heads", ssm_k_heads),
        G("--ssm-v-heads", ssm_v_heads), G("--ssm-head-dim", ssm_head_dim), G("--conv", conv),
        G("--ffn", ffn), G("--experts", experts), G("--experts-used", experts_used),
        G("--expert-ffn", expert_ffn), G("--shared-ffn", shared_ffn), G("--attn-interval", interval),
        G("--n-vocab", n_vocab), G("--ctx", ctx),
#undef G
    };
    enum { NG = sizeof gflags / sizeof gflags[0] };
    int64_t gval[NG];
    for (int i = 0; i < NG; i++)
        gval[i] = -1;
    int tied = -1, mtp = -1, layer_array = -1;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc, matched = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        for (int k = 0; k < NG; k++)
            if (!strcmp(a, gflags[k].flag)) {
                if ((rc = cli_int("synth", a, v, 1, 1 << 30, &gval[k])))
                    return rc;
                matched = 1;
            }
        if (matched) { i++; continue; }
        if (!v && a[0] == '-')
            return cli_usage("synth", "%s needs a value", a);
        if (!strcmp(a, "--arch")) arch = v;
        else if (!strcmp(a, "--preset")) preset_name = v;
        else if (!strcmp(a, "-o")) out = v;
        else if (!strcmp(a, "--vocab")) vocab_path = v;
        else if (!strcmp(a, "--pre")) pre = v;
        else if (!strcmp(a, "--seed")) { if ((rc = cli_int("synth", a, v, 0, INT64_MAX, &seed))) return rc; }
        else if (!strcmp(a, "--type")) {
            if ((mixed = synth_mix_parse(v, &mix)))
                wt = (int)mix.base;
            else if ((wt = quant_type_parse(v)) < 0 || !synth_type_supported((uint32_t)wt))
                return cli_usage("synth", "--type: unknown or unsupported type '%s'", v);
        } else if (!strcmp(a, "--head-type")) {
            if ((ht = quant_type_parse(v)) < 0 || !synth_type_supported((uint32_t)ht))
                return cli_usage("synth", "--head-type: unknown or unsupported type '%s'", v);
        } else if (!strcmp(a, "--tied")) { if ((rc = on_off(a, v, &tied))) return rc; }
        else if (!strcmp(a, "--mtp")) { if ((rc = on_off(a, v, &mtp))) return rc; }
        else if (!strcmp(a, "--layer-array")) { if ((rc = on_off(a, v, &layer_array))) return rc; }
        else return cli_usage("synth", "unknown flag '%s'", a);
        i++;
    }
    if (!out)
        return cli_usage("synth", "-o OUT.gguf is required");
    if (strcmp(pre, "qwen35") && strcmp(pre, "qwen2"))
        return cli_usage("synth", "--pre expects qwen35 or qwen2, got '%s'", pre);
    const preset *ps = NULL;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(presets[i].name, preset_name))
            ps = &presets[i];
    if (!ps)
        return cli_usage("synth", "unknown preset '%s' (tiny, 0.8b, 2b, 35b-a3b)", preset_name);
    geom g = ps->g;
    if (!arch)
        arch = g.moe ? "qwen35moe" : "qwen35";
    if (!strcmp(arch, "qwen35moe"))
        g.moe = 1;
    else if (!strcmp(arch, "qwen35"))
        g.moe = 0;
    else
        return cli_usage("synth", "--arch expects qwen35 or qwen35moe, got '%s'", arch);
    if (g.moe && !g.experts)
        return cli_usage("synth", "preset '%s' is dense; pass --experts, --experts-used, --expert-ffn, --shared-ffn", ps->name);
    for (int k = 0; k < NG; k++)
        if (gval[k] >= 0)
            *(uint32_t *)((char *)&g + gflags[k].off) = (uint32_t)gval[k];
    if (tied >= 0) g.tied = tied;
    if (mtp >= 0) g.mtp = mtp;
    if (layer_array >= 0) g.layer_array = layer_array;
    const bool head_given = ht >= 0;
    if (ht < 0)
        ht = wt;

    q36_err err = { 0 };
    synth_vocab *voc = NULL;
    if (synth_vocab_load(vocab_path, &voc, &err))
        return cli_fail(&err);
    if (g.n_vocab == 0)   /* tiny: the tokenizer's own size, padded like Qwen's to 128 */
        g.n_vocab = (synth_vocab_size(voc) + 127) / 128 * 128;
    int rc = check_geom(&g);
    if (rc) {
        synth_vocab_free(voc);
        return rc;
    }

    plan p = { 0 };
    int begun = 0;
    gguf_writer *w = gguf_writer_new();
    if (!w || build_plan(&p, &g, (uint32_t)wt, (uint32_t)ht)) {
        q36_err_set(&err, Q36_E_NOMEM, "synth: out of memory");
        goto fail;
    }
    if (mixed)
        apply_mix(&p, &g, &mix, head_given ? ht : -1);
    write_metadata(w, &g, arch, ps->name, (uint32_t)wt);
    if (synth_vocab_add(w, voc, pre, g.n_vocab, &err))
        goto fail;
    for (size_t i = 0; i < p.n; i++)
        gguf_w_tensor(w, p.t[i].name, p.t[i].type, p.t[i].n_dims, p.t[i].ne);
    if (gguf_w_begin(w, out, &err))
        goto fail;
    begun = 1;
    uint64_t params = 0;
    for (size_t i = 0; i < p.n; i++) {
        const plan_t *t = &p.t[i];
        params += t->ne[0] * t->ne[1] * t->ne[2];
        if (synth_write_tensor(w, t->type, t->ne[0], t->ne[1] * t->ne[2], t->dist, t->scale,
                               (uint64_t)seed, t->name, &err))
            goto fail;
    }
    if (gguf_w_finish(w, &err))
        goto fail;
    fprintf(stderr, "q36 synth: wrote %s: %s, %zu tensors, %" PRIu64 " parameters, %u layers%s, vocab %u\n",
            out, arch, p.n, params, g.layers, g.mtp ? " + MTP" : "", g.n_vocab);
    gguf_writer_free(w);
    free(p.t);
    synth_vocab_free(voc);
    return 0;
fail:
    gguf_writer_free(w);
    free(p.t);
    synth_vocab_free(voc);
    if (begun)
        remove(out);   /* never leave a half-written file behind */
    return cli_fail(&err);
}
