/* tok_utf8.c: UTF-8 decoding as llama.cpp's tokenizer sees it, encoding,
 * and a strict validity check.
 *
 * llama.cpp decodes text before splitting it with rules looser than the
 * standard: the lead byte alone fixes the sequence length, overlong forms and
 * surrogates decode to whatever value their bits give, and a byte that
 * cannot start a sequence (or whose continuation bytes are missing) becomes
 * U+FFFD for that single byte. The decoded code points are then re-encoded
 * canonically, so those are the bytes BPE sees. Matching llama.cpp's ids on
 * invalid input needs exactly these rules.
 */
#include "tok_internal.h"

static bool is_cont(uint8_t b) { return (b & 0xC0) == 0x80; }

uint32_t tok_utf8_decode(const uint8_t *s, size_t n, size_t *used)
{
    uint8_t b0 = s[0];
    *used = 1;
    if (b0 < 0x80)
        return b0;
    if (!(b0 & 0x40))                       /* a continuation byte cannot lead */
        return TOK_CPT_INVALID;
    if (!(b0 & 0x20)) {                     /* 110xxxxx */
        if (n < 2 || !is_cont(s[1]))
            return TOK_CPT_INVALID;
        *used = 2;
        return ((uint32_t)(b0 & 0x1F) << 6) | (s[1] & 0x3F);
    }
    if (!(b0 & 0x10)) {                     /* 1110xxxx */
        if (n < 3 || !is_cont(s[1]) || !is_cont(s[2]))
            return TOK_CPT_INVALID;
        *used = 3;
        return ((uint32_t)(b0 & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    }
    if (!(b0 & 0x08)) {                     /* 11110xxx */
        if (n < 4 || !is_cont(s[1]) || !is_cont(s[2]) || !is_cont(s[3]))
            return TOK_CPT_INVALID;
        *used = 4;
        return ((uint32_t)(b0 & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
               ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
    }
    return TOK_CPT_INVALID;                 /* 11111xxx */
}

size_t tok_utf8_encode(uint32_t c, uint8_t *o)
{
    if (c < 0x80) {
        o[0] = (uint8_t)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (uint8_t)(0xC0 | (c >> 6));
        o[1] = (uint8_t)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (uint8_t)(0xE0 | (c >> 12));
        o[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (uint8_t)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (uint8_t)(0xF0 | (c >> 18));
    o[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (uint8_t)(0x80 | (c & 0x3F));
    return 4;
}

bool tok_utf8_valid(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        /* ASCII runs are the common case: skip 8 bytes at a time. */
        while (i + 8 <= n) {
            uint64_t w;
            __builtin_memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ull)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t used;
        uint32_t c = tok_utf8_decode(s + i, n - i, &used);
        if (c == TOK_CPT_INVALID || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
            return false;
        static const uint32_t min_for_len[5] = { 0, 0, 0x80, 0x800, 0x10000 };
        if (c < min_for_len[used])
            return false;                   /* overlong */
        i += used;
    }
    return true;
}
