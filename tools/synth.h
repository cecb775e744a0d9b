/* synth.h: the parts of `q36 synth` (random-weight GGUFs of real geometry).
 * synth.c owns the command line, presets and the tensor plan; synth_vocab.c
 * the tokenizer metadata; synth_weights.c the random values and their
 * encoding into each tensor type; synth_mix.c the per-tensor types of
 * llama-quantize's mixed file types (--type q4_K_M). */
#ifndef Q36_SYNTH_H
#define Q36_SYNTH_H

#include <stdbool.h>
#include <stdint.h>

#include "../src/gguf/gguf.h"

/* A seeded generator (xoshiro256**), one per tensor so that a tensor's values
 * depend only on the seed and its name, not on the order of writing. */
typedef struct synth_rng { uint64_t s[4]; } synth_rng;

void     synth_rng_seed(synth_rng *r, uint64_t seed, const char *name);
uint64_t synth_rng_next(synth_rng *r);
float    synth_rng_uniform(synth_rng *r);   /* [0, 1) */
float    synth_rng_normal(synth_rng *r);    /* N(0, 1) */

/* How a tensor's values are drawn before encoding. */
enum synth_dist {
    SYN_NORMAL,      /* N(0, scale^2) */
    SYN_NORM_W,      /* 1 + N(0, scale^2): norm weights as the converter stores them */
    SYN_SSM_A,       /* -exp(A_log), A_log ~ log U(1, 16): negative decay rates */
    SYN_UNIFORM,     /* U(-scale, scale) */
};

/* Writes one tensor's data (rows of ne0 elements, nrows rows) encoded as
 * `type`, streaming it to the writer in bounded chunks. */
int synth_write_tensor(gguf_writer *w, uint32_t type, uint64_t ne0, uint64_t nrows,
                       enum synth_dist dist, float scale, uint64_t seed,
                       const char *name, q36_err *err);

/* True when synth can encode `type`. */
bool synth_type_supported(uint32_t type);

/* A mixed file type: llama-quantize's choice of type per tensor. Parse it
 * with synth_mix_parse (false: not a mix name), count every tensor name with
 * synth_mix_count in file order, then ask synth_mix_type for each in the
 * same order. */
typedef struct synth_mix {
    uint32_t base;          /* the type of every tensor no rule moves */
    uint32_t n_layer;       /* blocks, MTP ones included */
    uint32_t n_expert;
    bool     tied;          /* token_embd doubles as the output head */
    int      n_wv, i_wv;    /* attn_v-like tensors: counted, seen so far */
} synth_mix;

bool     synth_mix_parse(const char *name, synth_mix *m);
void     synth_mix_count(synth_mix *m, const char *tensor);
uint32_t synth_mix_type(synth_mix *m, const char *tensor);

/* A tokenizer to embed: loaded from a Hugging Face tokenizer.json, or with
 * path NULL a small byte-level vocabulary (256 byte tokens + the Qwen special
 * tokens) for tests that need no real vocabulary. */
typedef struct synth_vocab synth_vocab;

int      synth_vocab_load(const char *path, synth_vocab **out, q36_err *err);
void     synth_vocab_free(synth_vocab *v);        /* accepts NULL */
uint32_t synth_vocab_size(const synth_vocab *v);  /* highest id + 1 */

/* Adds the tokenizer.* keys: tokens padded with "[PAD<i>]" UNUSED entries to
 * n_vocab (>= synth_vocab_size), token types, merges, special ids, `pre`
 * ("qwen2" or "qwen35") and a Qwen3.6-style chat template. */
int synth_vocab_add(gguf_writer *w, const synth_vocab *v, const char *pre,
                    uint32_t n_vocab, q36_err *err);

#endif
