/* pretok_utf8proc.c: the utf8proc-driven hand-written pre-tokenizer matcher
 * (see pretok_utf8proc.h), measured against q36's PCRE2 one; not in libq36.
 *
 * The patterns (MODEL.md §8.3; qwen35 letter runs are [\p{L}\p{M}]+, qwen2's
 * \p{L}+ and its "other" class does not exclude marks):
 *   1 '(s|t|re|ve|m|ll|d)   ASCII, either case
 *   2 [^\r\n L N]? LR+       LR = letters (+ marks for qwen35)
 *   3 N                      one number
 *   4 ' '? O+ [\r\n]*        O = not whitespace, letter, number (, mark)
 *   5 WS* [\r\n]+
 *   6 WS+ (?!\S)
 *   7 WS+
 * tried in that order at the current position, the first that matches wins,
 * as a backtracking regex engine does. Every code point starts a match of
 * one of them (letters 2, numbers 3, whitespace 5-7, the rest 4), so the
 * split is a walk from left to right. What the backtracking comes to:
 *   5: a whitespace run that holds a CR or LF matches up to and including
 *      its last CR/LF;
 *   6: a whitespace run ending the text matches whole; one of two or more
 *      code points followed by non-whitespace matches all but its last;
 *   7: what is left, a single whitespace code point before non-whitespace.
 * Invalid UTF-8 is rewritten first, as tok_pretok.c does (tok_utf8.c's
 * decoding: U+FFFD per bad byte, surrogates kept as their 3-byte forms; a
 * surrogate and U+FFFD are in none of the classes, so the matcher needs no
 * second, strict view).
 */
#include "pretok_utf8proc.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/tok_internal.h"   /* tok_utf8_valid / decode / encode */

enum { U8P_CRLF = 16 };

/* Unicode 15.0 and 15.1 additions, the ranges of src/tokenizer/tok_pretok.c
 * (U15_L, U15_N, U15_M) as numbers. Consulted only where utf8proc says Cn. */
static const struct { uint32_t lo, hi; uint8_t cls; } u15[] = {
    { 0x0CF3, 0x0CF3, U8P_M },     { 0x0ECE, 0x0ECE, U8P_M },     { 0x10EFD, 0x10EFF, U8P_M },
    { 0x1123F, 0x11240, U8P_L },   { 0x11241, 0x11241, U8P_M },   { 0x11F00, 0x11F01, U8P_M },
    { 0x11F02, 0x11F02, U8P_L },   { 0x11F03, 0x11F03, U8P_M },   { 0x11F04, 0x11F10, U8P_L },
    { 0x11F12, 0x11F33, U8P_L },   { 0x11F34, 0x11F3A, U8P_M },   { 0x11F3E, 0x11F42, U8P_M },
    { 0x11F50, 0x11F59, U8P_N },   { 0x1342F, 0x1342F, U8P_L },   { 0x13440, 0x13440, U8P_M },
    { 0x13441, 0x13446, U8P_L },   { 0x13447, 0x13455, U8P_M },   { 0x1B132, 0x1B132, U8P_L },
    { 0x1B155, 0x1B155, U8P_L },   { 0x1D2C0, 0x1D2D3, U8P_N },   { 0x1DF25, 0x1DF2A, U8P_L },
    { 0x1E030, 0x1E06D, U8P_L },   { 0x1E08F, 0x1E08F, U8P_M },   { 0x1E4D0, 0x1E4EB, U8P_L },
    { 0x1E4EC, 0x1E4EF, U8P_M },   { 0x1E4F0, 0x1E4F9, U8P_N },   { 0x2B739, 0x2B739, U8P_L },
    { 0x2EBF0, 0x2EE5D, U8P_L },   { 0x31350, 0x323AF, U8P_L },
};

int u8p_class(uint32_t cp, bool patched)
{
    if (cp > 0x10FFFF)
        return 0;
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    switch (c) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO:
        return U8P_L;
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
        return U8P_M;
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
        return U8P_N;
    case UTF8PROC_CATEGORY_ZS: case UTF8PROC_CATEGORY_ZL: case UTF8PROC_CATEGORY_ZP:
        return U8P_WS;
    case UTF8PROC_CATEGORY_CC:
        return (cp >= 0x09 && cp <= 0x0D) || cp == 0x85 ? U8P_WS : 0;
    case UTF8PROC_CATEGORY_CN:
        if (patched && cp >= 0x0CF3)
            for (size_t i = 0; i < sizeof u15 / sizeof u15[0]; i++)
                if (cp >= u15[i].lo && cp <= u15[i].hi)
                    return u15[i].cls;
        return 0;
    default:
        return 0;
    }
}

struct u8p_split {
    bool     qwen35;
    bool     ascii_fast;   /* ASCII classes from the table below (default) */
    uint8_t  ascii[128];   /* u8p_class(cp, true) | U8P_CRLF for cp < 128 */
    uint8_t *buf;          /* rewritten text for invalid input */
    size_t   cap;
};

u8p_split *u8p_split_new(bool qwen35)
{
    u8p_split *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->qwen35 = qwen35;
    s->ascii_fast = true;
    for (uint32_t c = 0; c < 128; c++)
        s->ascii[c] = (uint8_t)(u8p_class(c, true) | (c == '\r' || c == '\n' ? U8P_CRLF : 0));
    return s;
}

void u8p_split_set_ascii_table(u8p_split *s, bool on)
{
    s->ascii_fast = on;
}

void u8p_split_free(u8p_split *s)
{
    if (!s)
        return;
    free(s->buf);
    free(s);
}

/* The class of the code point at t[i] (t holds canonical encodings only:
 * strict UTF-8, or surrogates in their 3-byte form after the rewrite);
 * its byte count in *len. */
static inline int cls_at(const u8p_split *s, const uint8_t *t, size_t i, size_t *len)
{
    uint32_t b = t[i];
    uint32_t cp;
    if (b < 0x80) {
        *len = 1;
        if (s->ascii_fast)
            return s->ascii[b];
        cp = b;
        return u8p_class(cp, true) | (cp == '\r' || cp == '\n' ? U8P_CRLF : 0);
    }
    if (b < 0xE0) {
        *len = 2;
        cp = (b & 0x1F) << 6 | (t[i + 1] & 0x3Fu);
    } else if (b < 0xF0) {
        *len = 3;
        cp = (b & 0x0F) << 12 | (t[i + 1] & 0x3Fu) << 6 | (t[i + 2] & 0x3Fu);
    } else {
        *len = 4;
        cp = (b & 0x07) << 18 | (t[i + 1] & 0x3Fu) << 12 | (t[i + 2] & 0x3Fu) << 6 | (t[i + 3] & 0x3Fu);
    }
    return u8p_class(cp, true);
}

/* End of the run from i of code points whose class has a bit of `mask`
 * (want = true) or none (want = false). */
static inline size_t run_end(const u8p_split *s, const uint8_t *t, size_t n, size_t i, int mask, bool want)
{
    while (i < n) {
        size_t len;
        if (((cls_at(s, t, i, &len) & mask) != 0) != want)
            break;
        i += len;
    }
    return i;
}

static bool is_contraction(const uint8_t *t, size_t n, size_t i, size_t *end)
{
    /* t[i] == '\''; ASCII letters only, either case (b | 0x20 maps only 'S' and 's' to 's') */
    if (i + 1 >= n)
        return false;
    uint8_t a = t[i + 1] | 0x20, b = i + 2 < n ? t[i + 2] | 0x20 : 0;
    if (a == 's' || a == 't' || a == 'm' || a == 'd') {
        *end = i + 2;
        return true;
    }
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
        *end = i + 3;
        return true;
    }
    return false;
}

/* Rewrites invalid input as tok_pretok.c does (the BPE view). */
static int rewrite(u8p_split *s, const uint8_t *t, size_t n, size_t *out_n)
{
    size_t need = n * 3 + 4;
    if (need > s->cap) {
        uint8_t *b = realloc(s->buf, need);
        if (!b)
            return -1;
        s->buf = b;
        s->cap = need;
    }
    size_t i = 0, o = 0;
    while (i < n) {
        size_t used;
        uint32_t cp = tok_utf8_decode(t + i, n - i, &used);
        if (cp == TOK_CPT_INVALID || cp > 0x10FFFF) {
            cp = 0xFFFD;
            used = 1;
        }
        o += tok_utf8_encode(cp, s->buf + o);
        i += used;
    }
    *out_n = o;
    return 0;
}

int u8p_split_run(u8p_split *s, const uint8_t *text, size_t n, u8p_piece_fn fn, void *user)
{
    const uint8_t *t = text;
    if (!tok_utf8_valid(text, n)) {
        if (rewrite(s, text, n, &n))
            return -1;
        t = s->buf;
    }
    const int LR = s->qwen35 ? U8P_L | U8P_M : U8P_L;            /* letter run */
    const int XO = U8P_WS | U8P_L | U8P_N | (s->qwen35 ? U8P_M : 0); /* not "other" */
    size_t i = 0;
    while (i < n) {
        size_t l0, l1 = 0, end;
        int k0 = cls_at(s, t, i, &l0);
        size_t j = i + l0;
        int k1 = j < n ? cls_at(s, t, j, &l1) : -1;       /* -1: no next code point */
        if (t[i] == '\'' && is_contraction(t, n, i, &end)) {
            /* 1 */
        } else if (!(k0 & (U8P_L | U8P_N | U8P_CRLF)) && k1 >= 0 && (k1 & LR)) {
            end = run_end(s, t, n, j + l1, LR, true);      /* 2, with the prefix */
        } else if (k0 & LR) {
            end = run_end(s, t, n, j, LR, true);           /* 2 */
        } else if (k0 & U8P_N) {
            end = j;                                        /* 3 */
        } else if (t[i] == ' ' && k1 >= 0 && !(k1 & XO)) {
            end = run_end(s, t, n, j + l1, XO, false);     /* 4, with the space */
            while (end < n && (t[end] == '\r' || t[end] == '\n'))
                end++;
        } else if (!(k0 & XO)) {
            end = run_end(s, t, n, j, XO, false);          /* 4 */
            while (end < n && (t[end] == '\r' || t[end] == '\n'))
                end++;
        } else {
            /* whitespace: 5, 6, 7 */
            size_t p = i, last = i, nl_end = 0, count = 0, len;
            int k = k0;
            len = l0;
            for (;;) {
                if (k & U8P_CRLF)
                    nl_end = p + len;
                last = p;
                p += len;
                count++;
                if (p >= n)
                    break;
                k = cls_at(s, t, p, &len);
                if (!(k & U8P_WS))
                    break;
            }
            if (nl_end)
                end = nl_end;                               /* 5 */
            else if (p >= n)
                end = n;                                    /* 6 at the end */
            else if (count >= 2)
                end = last;                                 /* 6 */
            else
                end = p;                                    /* 7 */
        }
        if (end <= i)          /* an empty match cannot happen; be safe */
            end = j;
        int rc = fn(user, t + i, end - i);
        if (rc)
            return rc;
        i = end;
    }
    return 0;
}
