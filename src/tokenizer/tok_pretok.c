/* tok_pretok.c: the pre-tokenizer: splits a raw text fragment into the
 * pieces BPE merges within, for tokenizer.ggml.pre = "qwen2" and "qwen35",
 * using PCRE2 (UTF + UCP, JIT when available).
 *
 * The regexes are those of MODEL.md §8.3, with the character classes spelled
 * so that they mean what llama.cpp's own Unicode tables mean (llama.cpp v0.5.0
 * splits these patterns with hand-written matchers over tables generated
 * from Unicode 15.1):
 *   - whitespace is the Unicode White_Space property, written out: PCRE2's
 *     \s also matches U+180E, which is not White_Space since Unicode 6.3;
 *   - \p{L}, \p{N}, \p{M} are PCRE2's classes plus the code points Unicode
 *     15.0 and 15.1 assigned to those categories, which PCRE2 10.42 (Unicode
 *     14.0) still treats as unassigned. An exhaustive comparison over all
 *     code points (tests/test_ggml_tok_unicode.c) found exactly these 4970
 *     letters, 40 numbers and 42 marks, and no other difference.
 * Input that is not strict UTF-8 is first rewritten the way llama.cpp
 * decodes it (tok_utf8.c); PCRE2 then always sees valid UTF-8 and is called
 * with PCRE2_NO_UTF_CHECK.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

/* Unicode 15.0 / 15.1 additions by category, as PCRE2 character-class text. */
#define U15_L "\\x{1123F}-\\x{11240}\\x{11F02}\\x{11F04}-\\x{11F10}\\x{11F12}-\\x{11F33}" \
              "\\x{1342F}\\x{13441}-\\x{13446}\\x{1B132}\\x{1B155}\\x{1DF25}-\\x{1DF2A}" \
              "\\x{1E030}-\\x{1E06D}\\x{1E4D0}-\\x{1E4EB}\\x{2B739}\\x{2EBF0}-\\x{2EE5D}" \
              "\\x{31350}-\\x{323AF}"
#define U15_N "\\x{11F50}-\\x{11F59}\\x{1D2C0}-\\x{1D2D3}\\x{1E4F0}-\\x{1E4F9}"
#define U15_M "\\x{0CF3}\\x{0ECE}\\x{10EFD}-\\x{10EFF}\\x{11241}\\x{11F00}-\\x{11F01}" \
              "\\x{11F03}\\x{11F34}-\\x{11F3A}\\x{11F3E}-\\x{11F42}\\x{13440}" \
              "\\x{13447}-\\x{13455}\\x{1E08F}\\x{1E4EC}-\\x{1E4EF}"
/* Unicode White_Space (PropList.txt). */
#define WS    "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}" \
              "\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
#define L     "\\p{L}" U15_L
#define N     "\\p{N}" U15_N
#define M     "\\p{M}" U15_M

#define CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define WS_TAIL      "|[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+"

static const char *const pattern_qwen2 =
    CONTRACTIONS "|[^\\r\\n" L N "]?[" L "]+|[" N "]| ?[^" WS L N "]+[\\r\\n]*" WS_TAIL;

static const char *const pattern_qwen35 =
    CONTRACTIONS "|[^\\r\\n" L N "]?[" L M "]+|[" N "]| ?[^" WS L M N "]+[\\r\\n]*" WS_TAIL;

struct tok_pretok {
    pcre2_code *re;
    bool        jit_ok;    /* JIT compiled */
    bool        use_jit;
};

struct tok_split_ctx {
    pcre2_match_data *md;
    uint8_t *rx, *bpe;     /* rewritten text for invalid input: regex view, BPE view */
    size_t   cap;
};

int tok_pretok_new(enum tok_pre pre, tok_pretok **out, q36_err *err)
{
    *out = NULL;
    const char *pat = pre == TOK_PRE_QWEN35 ? pattern_qwen35 : pattern_qwen2;
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &ec, &eo, NULL);
    if (!re) {
        char msg[160];
        pcre2_get_error_message(ec, (PCRE2_UCHAR *)msg, sizeof msg);
        return q36_err_set(err, TOK_E_REGEX, "pre-tokenizer regex: PCRE2 compile error at %zu: %s",
                           (size_t)eo, msg);
    }
    tok_pretok *p = calloc(1, sizeof *p);
    if (!p) {
        pcre2_code_free(re);
        return q36_err_set(err, TOK_E_NOMEM, "pre-tokenizer: out of memory");
    }
    p->re = re;
    p->jit_ok = pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0;
    p->use_jit = p->jit_ok;
    *out = p;
    return 0;
}

void tok_pretok_free(tok_pretok *p)
{
    if (!p)
        return;
    pcre2_code_free(p->re);
    free(p);
}

bool tok_pretok_set_jit(tok_pretok *p, bool on)
{
    p->use_jit = on && p->jit_ok;
    return p->use_jit;
}

const char *tok_pcre2_unicode_version(void)
{
    static char v[32];
    if (!v[0] && pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, v) < 0)
        strcpy(v, "?");
    return v;
}

/* The classes above, one code point at a time, for the exhaustive test. */
int tok_pretok_class(uint32_t cpt)
{
    static const char *const pats[4] = { "^[" L "]$", "^[" N "]$", "^[" M "]$", "^[" WS "]$" };
    static pcre2_code *re[4];
    static pcre2_match_data *md;
    if (!md) {
        for (int i = 0; i < 4; i++) {
            int ec;
            PCRE2_SIZE eo;
            re[i] = pcre2_compile((PCRE2_SPTR)pats[i], PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                                  &ec, &eo, NULL);
            if (!re[i])
                return -1;
        }
        md = pcre2_match_data_create(4, NULL);
        if (!md)
            return -1;
    }
    if (cpt > 0x10FFFF || (cpt >= 0xD800 && cpt <= 0xDFFF))
        return 0;
    uint8_t u[4];
    size_t n = tok_utf8_encode(cpt, u);
    int out = 0;
    for (int i = 0; i < 4; i++)
        if (pcre2_match(re[i], u, n, 0, 0, md, NULL) >= 0)
            out |= 1 << i;
    return out;
}

tok_split_ctx *tok_split_ctx_new(const tok_pretok *p)
{
    tok_split_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->md = pcre2_match_data_create_from_pattern(p->re, NULL);
    if (!c->md) {
        free(c);
        return NULL;
    }
    return c;
}

void tok_split_ctx_free(tok_split_ctx *c)
{
    if (!c)
        return;
    pcre2_match_data_free(c->md);
    free(c->rx);
    free(c->bpe);
    free(c);
}

/* Rewrites s[0..n) as llama.cpp decodes it: c->bpe gets the canonical bytes
 * of every decoded code point (U+FFFD for each bad byte), c->rx the same with
 * surrogates replaced by U+FFFD, so that it is strict UTF-8. Both have the
 * same length, returned in *out_n, so regex offsets index c->bpe too.
 * Sequences decoding above U+10FFFF make llama.cpp v0.5.0 abort (an uncaught
 * std::invalid_argument); q36 treats their lead byte as a bad byte. */
static int rewrite_invalid(tok_split_ctx *c, const uint8_t *s, size_t n, size_t *out_n)
{
    size_t need = n * 3 + 4;              /* worst case: every byte becomes U+FFFD */
    if (need > c->cap) {
        uint8_t *a = realloc(c->rx, need), *b = a ? realloc(c->bpe, need) : NULL;
        if (a) c->rx = a;
        if (b) c->bpe = b;
        if (!a || !b)
            return TOK_E_NOMEM;
        c->cap = need;
    }
    size_t i = 0, o = 0;
    while (i < n) {
        size_t used;
        uint32_t cp = tok_utf8_decode(s + i, n - i, &used);
        if (cp == TOK_CPT_INVALID || cp > 0x10FFFF) {
            cp = 0xFFFD;
            used = 1;
        }
        size_t k = tok_utf8_encode(cp, c->bpe + o);
        if (cp >= 0xD800 && cp <= 0xDFFF)
            tok_utf8_encode(0xFFFD, c->rx + o);  /* same length: 3 bytes */
        else
            memcpy(c->rx + o, c->bpe + o, k);
        o += k;
        i += used;
    }
    *out_n = o;
    return 0;
}

/* Emits every code point of s[a..b) as its own piece (the splitters' "no
 * match" rule; not reached with these patterns, which match everything). */
static int emit_cpts(const uint8_t *rx, const uint8_t *bpe, size_t a, size_t b,
                     tok_piece_fn fn, void *user)
{
    while (a < b) {
        size_t used;
        tok_utf8_decode(rx + a, b - a, &used);
        int rc = fn(user, bpe + a, used);
        if (rc)
            return rc;
        a += used;
    }
    return 0;
}

int tok_pretok_split(const tok_pretok *p, tok_split_ctx *c, const uint8_t *s, size_t n,
                     tok_piece_fn fn, void *user, q36_err *err)
{
    const uint8_t *rx = s, *bpe = s;
    if (!tok_utf8_valid(s, n)) {
        if (rewrite_invalid(c, s, n, &n))
            return q36_err_set(err, TOK_E_NOMEM, "pre-tokenizer: out of memory");
        rx = c->rx;
        bpe = c->bpe;
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(c->md);
    size_t at = 0;
    while (at < n) {
        int rc = p->use_jit
            ? pcre2_jit_match(p->re, rx, n, at, PCRE2_NO_UTF_CHECK, c->md, NULL)
            : pcre2_match(p->re, rx, n, at, PCRE2_NO_UTF_CHECK, c->md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH)
            return emit_cpts(rx, bpe, at, n, fn, user);
        if (rc < 0) {
            char msg[160];
            pcre2_get_error_message(rc, (PCRE2_UCHAR *)msg, sizeof msg);
            return q36_err_set(err, TOK_E_REGEX, "pre-tokenizer: PCRE2 match error: %s", msg);
        }
        size_t a = ov[0], b = ov[1];
        if (a > at && (rc = emit_cpts(rx, bpe, at, a, fn, user)))
            return rc;
        if (b == a)                       /* an empty match cannot happen; be safe */
            b = a + 1;
        if ((rc = fn(user, bpe + a, b - a)))
            return rc;
        at = b;
    }
    return 0;
}
