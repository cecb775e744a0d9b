/* hparams.h: the geometry of a qwen35 / qwen35moe model, read from GGUF
 * metadata only (shared/docs/MODEL.md §0, §1.2, §6.2).
 *
 * model_hparams_load() reads every value the model code needs, applying
 * llama.cpp's defaults where a key is optional, and records for each value
 * the key it came from or the default used, so `q36 info` can show it. It
 * checks the values against each other (heads divide, the DeltaNet value dim
 * equals the key dim, ...) and against the tensor table where the count comes
 * from a tensor (the vocabulary).
 */
#ifndef Q36_MODEL_HPARAMS_H
#define Q36_MODEL_HPARAMS_H

#include <stdbool.h>
#include <stdint.h>

#include "../gguf/gguf.h"

#define MODEL_MAX_BLOCKS 512   /* llama.cpp's LLAMA_MAX_LAYERS */
#define MODEL_MAX_SRC    40

enum model_arch { MODEL_QWEN35 = 0, MODEL_QWEN35MOE = 1 };

/* Where one value came from: `key` is the full GGUF key, or a tensor name for
 * values derived from a shape; `defaulted` when the key was absent. */
typedef struct model_hsrc {
    const char *what;        /* short name, e.g. "n_embd" */
    char        key[96];
    bool        defaulted;
    char        value[48];   /* the value as printed */
} model_hsrc;

typedef struct model_hparams {
    enum model_arch arch;
    const char *arch_name;        /* "qwen35" | "qwen35moe" */

    uint32_t n_block;             /* block_count: trunk + MTP blocks */
    uint32_t n_nextn;             /* nextn_predict_layers (MTP blocks) */
    uint32_t n_layer;             /* trunk layers = n_block - n_nextn */
    uint32_t n_ctx_train;
    uint32_t n_embd;              /* D */
    uint32_t n_vocab;             /* rows of token_embd */
    uint32_t n_head, n_head_kv;   /* Hq, Hkv */
    uint32_t head_dim;            /* hd (key_length == value_length) */
    uint32_t n_rot;               /* R: rotary dims */
    int32_t  rope_sections[4];
    float    rope_base;
    float    eps;                 /* RMS norm epsilon */

    uint32_t ssm_conv;            /* Kc */
    uint32_t ssm_state;           /* dk = dv */
    uint32_t ssm_group;           /* Hk */
    uint32_t ssm_dt_rank;         /* Hv */
    uint32_t ssm_inner;           /* Hv * dv */

    uint32_t full_attn_interval;  /* 0 when the per-layer array was used */
    bool     recurrent[MODEL_MAX_BLOCKS]; /* per block: DeltaNet layer */
    uint32_t n_attn_layers;       /* trunk full-attention layers */

    uint32_t n_ff;                /* dense FFN width (qwen35) */
    uint32_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp; /* qwen35moe */

    bool     tied_head;           /* no output.weight: the head is token_embd */

    model_hsrc src[MODEL_MAX_SRC];
    int        n_src;
} model_hparams;

/* Reads and checks the geometry. Returns 0, or a negative kind with err set
 * naming the file and the key or tensor. */
int model_hparams_load(const gguf_file *f, model_hparams *hp, q36_err *err);

/* Conv channels Cc = 2*Hk*dk + Hv*dv. */
static inline uint64_t model_conv_channels(const model_hparams *hp)
{
    return 2ull * hp->ssm_group * hp->ssm_state + (uint64_t)hp->ssm_dt_rank * hp->ssm_state;
}

#endif
