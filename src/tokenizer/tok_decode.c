/* tok_decode.c: ids -> bytes: the piece of every token, whole-sequence
 * decoding, and the streaming decoder that emits only complete UTF-8
 * (MODEL.md §8.4).
 *
 * Pieces are computed once per vocab, as llama.cpp does with special
 * rendering on: CONTROL, UNKNOWN and USER_DEFINED tokens are their text;
 * NORMAL and BYTE tokens map every code point of their text back through the
 * byte-level alphabet (a code point outside it becomes llama.cpp's visible
 * "[UNK_BYTE_0x<utf8 hex><token text>]"); UNUSED tokens are empty. Without
 * special rendering, control-like tokens decode to nothing. No space
 * clean-up applies to the Qwen pre-tokenizers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

typedef struct sbuf {
    char  *p;
    size_t n, cap;
} sbuf;

static int sb_put(sbuf *b, const void *s, size_t n)
{
    if (n == 0)
        return 0;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->n + n)
            cap *= 2;
        char *a = realloc(b->p, cap);
        if (!a)
            return TOK_E_NOMEM;
        b->p = a;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    return 0;
}

static int normal_piece(sbuf *b, const char *text, size_t len)
{
    const uint8_t *s = (const uint8_t *)text;
    size_t i = 0;
    while (i < len) {
        size_t used;
        uint32_t cp = tok_utf8_decode(s + i, len - i, &used);
        if (cp == TOK_CPT_INVALID)
            cp = 0xFFFD;
        int byte = cp <= 0x10FFFF ? tok_cpt_to_byte(cp) : -1;
        if (byte >= 0) {
            uint8_t c = (uint8_t)byte;
            if (sb_put(b, &c, 1))
                return TOK_E_NOMEM;
        } else {
            uint8_t u[4];
            size_t k = tok_utf8_encode(cp <= 0x10FFFF ? cp : 0xFFFD, u);
            char hex[16];
            if (sb_put(b, "[UNK_BYTE_0x", 12))
                return TOK_E_NOMEM;
            for (size_t j = 0; j < k; j++) {
                snprintf(hex, sizeof hex, "%02x", u[j]);
                if (sb_put(b, hex, 2))
                    return TOK_E_NOMEM;
            }
            if (sb_put(b, text, len) || sb_put(b, "]", 1))
                return TOK_E_NOMEM;
        }
        i += used;
    }
    return 0;
}

int tok_pieces_build(tok_vocab *v, q36_err *err)
{
    sbuf b = { 0 };
    v->poff = malloc((size_t)v->n * sizeof *v->poff);
    v->plen = malloc((size_t)v->n * sizeof *v->plen);
    if (!v->poff || !v->plen)
        return q36_err_set(err, TOK_E_NOMEM, "tokenizer: out of memory for pieces");
    for (int32_t i = 0; i < v->n; i++) {
        size_t start = b.n;
        const char *t = v->blob + v->off[i];
        size_t len = v->len[i];
        int rc = 0;
        switch (v->type[i]) {
        case TOK_T_NORMAL:
        case TOK_T_BYTE:
            rc = v->ctrl[i] ? sb_put(&b, t, len) : normal_piece(&b, t, len);
            break;
        case TOK_T_CONTROL:
        case TOK_T_UNKNOWN:
        case TOK_T_USER_DEFINED:
            rc = sb_put(&b, t, len);
            break;
        default:                           /* UNUSED */
            break;
        }
        if (rc) {
            free(b.p);
            return q36_err_set(err, TOK_E_NOMEM, "tokenizer: out of memory for pieces");
        }
        v->poff[i] = (uint32_t)start;
        v->plen[i] = (uint32_t)(b.n - start);
        if (b.n - start > v->max_piece)
            v->max_piece = b.n - start;
    }
    v->pblob = b.p ? b.p : malloc(1);
    return v->pblob ? 0 : q36_err_set(err, TOK_E_NOMEM, "tokenizer: out of memory for pieces");
}

const char *tok_piece(const tok_vocab *v, int32_t id, bool special, size_t *len)
{
    if (id < 0 || id >= v->n) {
        *len = 0;
        return NULL;
    }
    if (!special && v->ctrl[id]) {
        *len = 0;
        return v->pblob;
    }
    *len = v->plen[id];
    return v->pblob + v->poff[id];
}

size_t tok_max_piece(const tok_vocab *v)
{
    return v->max_piece;
}

int tok_decode(const tok_vocab *v, const int32_t *ids, size_t n, bool special,
               char **out, size_t *len, q36_err *err)
{
    sbuf b = { 0 };
    *out = NULL;
    *len = 0;
    for (size_t i = 0; i < n; i++) {
        size_t pl;
        const char *p = tok_piece(v, ids[i], special, &pl);
        if (!p) {
            free(b.p);
            return q36_err_set(err, TOK_E_ID, "detokenize: id %d at position %zu is outside [0, %d)",
                               ids[i], i, v->n);
        }
        if (sb_put(&b, p, pl)) {
            free(b.p);
            return q36_err_set(err, TOK_E_NOMEM, "detokenize: out of memory");
        }
    }
    if (sb_put(&b, "", 1)) {
        free(b.p);
        return q36_err_set(err, TOK_E_NOMEM, "detokenize: out of memory");
    }
    *out = b.p;
    *len = b.n - 1;
    return 0;
}

/* ---- streaming ------------------------------------------------------------------ */

void tok_stream_init(tok_stream *s)
{
    memset(s, 0, sizeof *s);
}

/* Length of the complete prefix of b[0..n): a lead byte among the last three
 * whose sequence needs more bytes than follow it cuts the text there. */
static size_t complete_prefix(const uint8_t *b, size_t n)
{
    for (size_t i = 1; i <= 4 && i <= n; i++) {
        uint8_t c = b[n - i];
        size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (need > i)
            return n - i;
    }
    return n;
}

size_t tok_stream_push(tok_stream *s, const char *piece, size_t n, char *out)
{
    uint8_t *o = (uint8_t *)out;
    size_t total = (size_t)s->n_held + n;
    memcpy(o, s->held, (size_t)s->n_held);
    memcpy(o + s->n_held, piece, n);
    size_t keep = complete_prefix(o, total);
    s->n_held = (int)(total - keep);
    memcpy(s->held, o + keep, (size_t)s->n_held);
    return keep;
}

size_t tok_stream_token(tok_stream *s, const tok_vocab *v, int32_t id, bool special, char *out)
{
    size_t n;
    const char *p = tok_piece(v, id, special, &n);
    return tok_stream_push(s, p ? p : "", p ? n : 0, out);
}

size_t tok_stream_flush(tok_stream *s, char *out)
{
    size_t n = (size_t)s->n_held;
    memcpy(out, s->held, n);
    s->n_held = 0;
    return n;
}
