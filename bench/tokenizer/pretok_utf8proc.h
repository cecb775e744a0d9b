/* pretok_utf8proc.h: the utf8proc alternative to q36's PCRE2 pre-tokenizer,
 * kept for measurement only (bench/tokenizer/bench_tok_utf8proc.c,
 * tests/test_ggml_tok_utf8proc.c); the library does not use it.
 *
 * A hand-written matcher for the "qwen35" and "qwen2" split patterns of
 * MODEL.md §8.3, driven by utf8proc_category() plus, for code points
 * utf8proc calls unassigned, the Unicode 15.0/15.1 ranges of
 * src/tokenizer/tok_pretok.c. Same contract as tok_pretok_split: any bytes
 * in, pieces out through the callback, invalid UTF-8 rewritten as
 * llama.cpp decodes it.
 */
#ifndef Q36_PRETOK_UTF8PROC_H
#define Q36_PRETOK_UTF8PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Class bits, the same values as tok_internal.h's TOK_CLASS_*. */
enum { U8P_L = 1, U8P_N = 2, U8P_M = 4, U8P_WS = 8 };

/* Classes of cp from utf8proc alone (patched = false: letter L*, number N*,
 * mark M*, whitespace = Zs, Zl, Zp and the controls U+0009..U+000D and
 * U+0085, the Cc members of White_Space, written out) or with tok_pretok.c's
 * Unicode 15.x ranges applied where utf8proc says Cn (patched = true). */
int u8p_class(uint32_t cp, bool patched);

typedef struct u8p_split u8p_split;
/* qwen35: letter runs absorb marks ("qwen35"); false: "qwen2". NULL when out of memory. */
u8p_split *u8p_split_new(bool qwen35);
void       u8p_split_free(u8p_split *s);
/* ASCII classes from a 128-entry table filled from utf8proc at creation
 * (on, the default) or from utf8proc_category() for every code point (off:
 * for the bench, to show the cost of the lookups). */
void       u8p_split_set_ascii_table(u8p_split *s, bool on);

typedef int (*u8p_piece_fn)(void *user, const uint8_t *piece, size_t n);
/* Splits s[0..n) into pieces, in order. Returns 0, the callback's non-zero
 * value, or -1 when out of memory. */
int u8p_split_run(u8p_split *s, const uint8_t *text, size_t n, u8p_piece_fn fn, void *user);

#endif
