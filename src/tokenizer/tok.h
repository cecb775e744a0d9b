/* tok.h: the tokenizer: byte-level BPE of the Qwen3.5/3.6 vocabularies
 * (tokenizer.ggml.model = "gpt2"), built from a GGUF's tokenizer metadata
 * (MODEL.md §8), encoding text to ids and decoding ids to bytes the way
 * llama.cpp does.
 *
 * Encoding: special tokens written in the text are split out first (longest
 * text first; CONTROL tokens only when parse_special, USER_DEFINED always),
 * every remaining fragment is split by the pre-tokenizer regex of
 * tokenizer.ggml.pre ("qwen2" or "qwen35", PCRE2 with our own Unicode
 * patches, see tok_pretok.c), each piece is byte-mapped and merged by BPE.
 * No BOS or EOS is added; no Unicode normalisation is applied.
 *
 * Ownership and threads: a tok_vocab copies everything it needs out of the
 * gguf_file (which may be closed afterwards), is immutable after
 * tok_new_from_gguf() and may be used by any number of threads at once.
 */
#ifndef Q36_TOK_H
#define Q36_TOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

/* The GGUF reader's handle (src/gguf/gguf.h), declared here so that code
 * which also includes ggml's gguf.h (whose names clash with q36's) can use
 * the tokenizer through tok_new_from_file. */
typedef struct gguf_file gguf_file;

/* tokenizer.ggml.token_type values. */
enum tok_type {
    TOK_T_NORMAL = 1, TOK_T_UNKNOWN = 2, TOK_T_CONTROL = 3,
    TOK_T_USER_DEFINED = 4, TOK_T_UNUSED = 5, TOK_T_BYTE = 6,
};

/* Pre-tokenizers q36 implements (tokenizer.ggml.pre). */
enum tok_pre {
    TOK_PRE_QWEN2 = 0,   /* "qwen2", "deepseek-r1-qwen", "megrez": letter runs are \p{L}+ */
    TOK_PRE_QWEN35 = 1,  /* "qwen35": letter runs are [\p{L}\p{M}]+ */
};

/* Error kinds (q36_err.kind). Messages name the GGUF key, expected vs found. */
enum tok_err_kind {
    TOK_E_KEY   = -301,  /* a required tokenizer key is missing */
    TOK_E_TYPE  = -302,  /* a key has the wrong value type */
    TOK_E_VALUE = -303,  /* a value is out of range or inconsistent */
    TOK_E_UNSUP = -304,  /* a tokenizer model or pre-tokenizer q36 does not implement */
    TOK_E_REGEX = -305,  /* PCRE2 refused a pattern or a match failed */
    TOK_E_ID    = -306,  /* a token id outside [0, n_vocab) passed to the decoder */
    TOK_E_NOMEM = -307,

};

typedef struct tok_vocab tok_vocab;

/* Builds the tokenizer from the keys of MODEL.md §8.1. Returns 0, or a
 * negative tok_err_kind with err set and *out NULL. */
int  tok_new_from_gguf(const gguf_file *f, tok_vocab **out, q36_err *err);
/* The same from a GGUF path (opened, read and closed here). */
int  tok_new_from_file(const char *path, tok_vocab **out, q36_err *err);
void tok_free(tok_vocab *v);                 /* accepts NULL */

int32_t      tok_n_vocab(const tok_vocab *v);
enum tok_pre tok_pre_type(const tok_vocab *v);
const char  *tok_pre_name(const tok_vocab *v);  /* the tokenizer.ggml.pre string */
/* Special ids, -1 when the file names none. EOT is taken from
 * tokenizer.ggml.eot_token_id, else it is <|im_end|> if present, else
 * <|endoftext|> (llama.cpp v0.5.0 detects the same ids by text). */
int32_t tok_bos(const tok_vocab *v);
int32_t tok_eos(const tok_vocab *v);
int32_t tok_eot(const tok_vocab *v);
int32_t tok_pad(const tok_vocab *v);
bool    tok_add_bos(const tok_vocab *v);     /* tokenizer.ggml.add_bos_token, default false */
/* End of generation: eos, eot, <|im_end|>, <|endoftext|>, <|fim_pad|>,
 * <|repo_name|>, <|file_sep|> (those present). */
bool    tok_is_eog(const tok_vocab *v, int32_t id);
/* Those ids, each once (no order promised), n in *n */
const int32_t *tok_eog_ids(const tok_vocab *v, int32_t *n);

/* The stored text of a token (byte-level alphabet for NORMAL tokens), not
 * NUL-terminated; NULL for an id out of range. */
const char *tok_text(const tok_vocab *v, int32_t id, size_t *len);
int         tok_get_type(const tok_vocab *v, int32_t id);  /* enum tok_type; 0 if out of range */
/* True when the token is matched only with parse_special and suppressed in
 * decoding without `special`: CONTROL and UNKNOWN tokens, plus the
 * USER_DEFINED tokens llama.cpp promotes to control by their text. */
bool        tok_is_control(const tok_vocab *v, int32_t id);
int32_t     tok_find(const tok_vocab *v, const char *text, size_t len);  /* -1 if absent */

/* Encodes text[0..len) (any bytes; invalid UTF-8 is tokenized as llama.cpp
 * does, each bad byte as U+FFFD). *ids is malloc'd (free() it; never NULL on
 * success), *n_ids its length. Returns 0 or a negative tok_err_kind. */
int tok_encode(const tok_vocab *v, const char *text, size_t len, bool parse_special,
               int32_t **ids, size_t *n_ids, q36_err *err);

/* The bytes one token decodes to: a view valid for the vocab's lifetime.
 * Empty for CONTROL/UNKNOWN tokens unless `special`, and for UNUSED tokens.
 * NULL (with *len 0) for an id out of range. */
const char *tok_piece(const tok_vocab *v, int32_t id, bool special, size_t *len);
size_t      tok_max_piece(const tok_vocab *v);  /* longest piece in bytes */

/* Concatenates the pieces of ids into a malloc'd, NUL-terminated buffer
 * (*len excludes the NUL). Returns 0 or TOK_E_ID naming the bad id. */
int tok_decode(const tok_vocab *v, const int32_t *ids, size_t n, bool special,
               char **out, size_t *len, q36_err *err);

/* Streaming decoder: emits only complete UTF-8. A trailing lead byte whose
 * sequence is not complete yet is held back until the next piece; other
 * bytes, valid or not, pass through as they are (llama.cpp's server does
 * the same). Zero-initialise, or call tok_stream_init. */
typedef struct tok_stream {
    uint8_t held[4];
    int     n_held;
} tok_stream;

void   tok_stream_init(tok_stream *s);
/* Appends piece[0..n) and writes what is complete to out, which must hold
 * n + 3 bytes; returns the number of bytes written. */
size_t tok_stream_push(tok_stream *s, const char *piece, size_t n, char *out);
/* The same for a token id (out must hold tok_max_piece(v) + 3 bytes). */
size_t tok_stream_token(tok_stream *s, const tok_vocab *v, int32_t id, bool special, char *out);
/* Writes whatever is held (an incomplete sequence at the end of the
 * stream) to out (4 bytes) and returns its length. */
size_t tok_stream_flush(tok_stream *s, char *out);

/* Benchmarking switch: match the pre-tokenizer regex with PCRE2's JIT (the
 * default, when PCRE2 has it) or with its interpreter. Not thread-safe:
 * call before the vocab is shared. Returns whether JIT is now in use. */
bool tok_set_jit(tok_vocab *v, bool on);
/* The Unicode version of the linked PCRE2 ("14.0.0" for 10.42). */
const char *tok_pcre2_unicode_version(void);

#endif
