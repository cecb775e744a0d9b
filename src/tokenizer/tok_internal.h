/* tok_internal.h: what the tokenizer's files share and nothing outside
 * src/tokenizer/ may use: the vocab structure, the hash tables, the byte
 * alphabet, llama.cpp-compatible UTF-8 decoding, the pre-tokenizer and BPE.
 */
#ifndef Q36_TOK_INTERNAL_H
#define Q36_TOK_INTERNAL_H

#include "tok.h"

/* ---- byte-level alphabet (tok_bytes.c) ------------------------------------
 * GPT-2's reversible map from the 256 byte values to printable code points. */
uint32_t tok_byte_to_cpt(uint8_t b);
int      tok_cpt_to_byte(uint32_t cpt);     /* -1 when cpt is not in the alphabet */

/* ---- UTF-8 (tok_utf8.c) -------------------------------------------------- */
#define TOK_CPT_INVALID 0xFFFFFFFFu
/* Decodes one code point at s[0..n) (n >= 1) with llama.cpp's lenient rules:
 * the lead byte fixes the length, continuation bytes must be 10xxxxxx and
 * present, overlong forms and surrogates are accepted as they decode.
 * Returns the code point and its byte count in *used, or TOK_CPT_INVALID
 * with *used = 1 (the caller substitutes U+FFFD for that one byte). Values
 * above U+10FFFF are returned as they decode; callers decide. */
uint32_t tok_utf8_decode(const uint8_t *s, size_t n, size_t *used);
/* Canonical UTF-8 of cpt (<= 0x10FFFF, surrogates allowed) into out[4];
 * returns the byte count. */
size_t   tok_utf8_encode(uint32_t cpt, uint8_t *out);
/* True when s[0..n) is strict UTF-8 (what PCRE2 accepts): no overlong
 * forms, no surrogates, nothing above U+10FFFF. */
bool     tok_utf8_valid(const uint8_t *s, size_t n);

/* ---- pre-tokenizer (tok_pretok.c) --------------------------------------- */
typedef struct tok_pretok tok_pretok;
int  tok_pretok_new(enum tok_pre pre, tok_pretok **out, q36_err *err);
void tok_pretok_free(tok_pretok *p);
bool tok_pretok_set_jit(tok_pretok *p, bool on);

/* Test hook: which of the pre-tokenizer's classes cpt is in: bit 0 letter,
 * 1 number, 2 mark, 3 whitespace (0 for surrogates and above U+10FFFF).
 * Not thread-safe (compiles its patterns on first use); -1 on failure. */
enum { TOK_CLASS_L = 1, TOK_CLASS_N = 2, TOK_CLASS_M = 4, TOK_CLASS_WS = 8 };
int tok_pretok_class(uint32_t cpt);

/* Per-call scratch for splitting (PCRE2 match data, buffers). */
typedef struct tok_split_ctx tok_split_ctx;
tok_split_ctx *tok_split_ctx_new(const tok_pretok *p);
void           tok_split_ctx_free(tok_split_ctx *c);

/* Called for each piece, in order: bytes to give to BPE. Returns 0 to go on. */
typedef int (*tok_piece_fn)(void *user, const uint8_t *piece, size_t n);
/* Splits one raw fragment (any bytes) into pieces as llama.cpp's qwen2/qwen35
 * splitters do. Returns 0 or a negative tok_err_kind. */
int tok_pretok_split(const tok_pretok *p, tok_split_ctx *c, const uint8_t *s, size_t n,
                     tok_piece_fn fn, void *user, q36_err *err);

/* ---- the vocabulary ------------------------------------------------------ */
typedef struct tok_merge_slot {
    uint64_t key;        /* (left id << 32) | right id; 0 = empty (ids are >= 0, key never 0
                            because it is stored + 1) */
    int32_t  rank;
    int32_t  result;     /* id of left+right */
} tok_merge_slot;

struct tok_vocab {
    int32_t      n;              /* token count */
    char        *blob;           /* all token texts, back to back */
    uint32_t    *off, *len;      /* text of id i: blob + off[i], len[i] bytes */
    uint8_t     *type;           /* enum tok_type per id */
    uint8_t     *ctrl;           /* 1: control-like (see tok_is_control) */

    int32_t     *text_tab;       /* open addressing: id or -1; size text_mask + 1 */
    uint32_t     text_mask;

    tok_merge_slot *merge_tab;   /* open addressing over (left, right) ids */
    uint32_t        merge_mask;
    int32_t         n_merges;

    int32_t      byte_tok[256];  /* id of the one-byte symbol of each byte, or -1 */

    int32_t     *spec;           /* ids matched in text, longest text first */
    int32_t      n_spec;

    char        *pblob;          /* decoded pieces (special rendering) */
    uint32_t    *poff, *plen;
    size_t       max_piece;

    int32_t      bos, eos, eot, pad;
    bool         add_bos;
    int32_t      eog[32];
    int32_t      n_eog;

    enum tok_pre pre;
    char         pre_name[64];
    tok_pretok  *rx;
};

uint32_t tok_hash_bytes(const void *p, size_t n);
/* Merge lookup: rank (and result id in *result) or -1. */
int32_t  tok_merge_rank(const tok_vocab *v, int32_t left, int32_t right, int32_t *result);

/* ---- BPE (tok_bpe.c) ------------------------------------------------------ */
typedef struct tok_bpe_ctx tok_bpe_ctx;
tok_bpe_ctx *tok_bpe_ctx_new(void);
void         tok_bpe_ctx_free(tok_bpe_ctx *c);
/* Appends the ids of one pre-tokenized piece (raw bytes) to the growable
 * array (*ids, *n, *cap). Returns 0 or TOK_E_NOMEM. */
int tok_bpe_piece(const tok_vocab *v, tok_bpe_ctx *c, const uint8_t *piece, size_t n,
                  int32_t **ids, size_t *n_ids, size_t *cap);

/* ---- decoding (tok_decode.c) ---------------------------------------------- */
/* Builds the piece table of every token. Returns 0 or TOK_E_NOMEM. */
int tok_pieces_build(tok_vocab *v, q36_err *err);

#endif
