/* tok_encode.c: text -> ids: the special-token partition, then the
 * pre-tokenizer and BPE on every raw fragment (MODEL.md §8.3).
 *
 * The partition follows llama.cpp: for each special token, longest text
 * first, every still-raw fragment is cut at each occurrence of its text
 * (leftmost first, not overlapping). CONTROL tokens take part only with
 * parse_special; USER_DEFINED ones always do. The Qwen tokens have no
 * lstrip/rstrip, and GGUF has no key for those flags, so there is nothing
 * to strip. Regex and BPE context never crosses a special token.
 */
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

typedef struct frag {
    size_t  start, len;       /* raw text when id < 0 */
    int32_t id;               /* special token id, or -1 */
} frag;

typedef struct frag_list {
    frag  *v;
    size_t n, cap;
} frag_list;

static int frag_push(frag_list *l, frag f)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        frag *a = realloc(l->v, cap * sizeof *a);
        if (!a)
            return TOK_E_NOMEM;
        l->v = a;
        l->cap = cap;
    }
    l->v[l->n++] = f;
    return 0;
}

/* Splits the raw fragments of *cur at every occurrence of token id. */
static int split_at(const tok_vocab *v, const char *text, int32_t id, frag_list *cur, frag_list *next)
{
    const char *tt = v->blob + v->off[id];
    size_t tl = v->len[id];
    next->n = 0;
    bool found = false;
    for (size_t i = 0; i < cur->n; i++) {
        frag f = cur->v[i];
        if (f.id >= 0 || f.len < tl) {
            if (frag_push(next, f))
                return TOK_E_NOMEM;
            continue;
        }
        size_t at = f.start, end = f.start + f.len;
        for (;;) {
            const char *hit = memmem(text + at, end - at, tt, tl);
            if (!hit)
                break;
            size_t h = (size_t)(hit - text);
            found = true;
            if (h > at && frag_push(next, (frag){ at, h - at, -1 }))
                return TOK_E_NOMEM;
            if (frag_push(next, (frag){ h, tl, id }))
                return TOK_E_NOMEM;
            at = h + tl;
        }
        if (at < end && frag_push(next, (frag){ at, end - at, -1 }))
            return TOK_E_NOMEM;
    }
    if (found) {                              /* swap: next becomes current */
        frag_list t = *cur;
        *cur = *next;
        *next = t;
    }
    return 0;
}

typedef struct enc_state {
    const tok_vocab *v;
    tok_bpe_ctx     *bpe;
    int32_t         *ids;
    size_t           n, cap;
} enc_state;

static int on_piece(void *user, const uint8_t *piece, size_t n)
{
    enc_state *s = user;
    return tok_bpe_piece(s->v, s->bpe, piece, n, &s->ids, &s->n, &s->cap);
}

int tok_encode(const tok_vocab *v, const char *text, size_t len, bool parse_special,
               int32_t **ids, size_t *n_ids, q36_err *err)
{
    *ids = NULL;
    *n_ids = 0;
    frag_list cur = { 0 }, next = { 0 };
    enc_state st = { .v = v };
    tok_split_ctx *sc = NULL;
    int rc = 0;

    if (len > 0 && (rc = frag_push(&cur, (frag){ 0, len, -1 })))
        goto fail;
    for (int32_t i = 0; i < v->n_spec && len > 0; i++) {
        int32_t id = v->spec[i];
        if (!parse_special && v->ctrl[id])
            continue;
        if ((rc = split_at(v, text, id, &cur, &next)))
            goto fail;
    }
    st.bpe = tok_bpe_ctx_new();
    sc = tok_split_ctx_new(v->rx);
    st.cap = len / 3 + 16;
    st.ids = malloc(st.cap * sizeof *st.ids);
    if (!st.bpe || !sc || !st.ids) {
        rc = TOK_E_NOMEM;
        goto fail;
    }
    for (size_t i = 0; i < cur.n; i++) {
        frag f = cur.v[i];
        if (f.id >= 0) {
            if (st.n == st.cap) {
                size_t nc = st.cap * 2;
                int32_t *a = realloc(st.ids, nc * sizeof *a);
                if (!a) {
                    rc = TOK_E_NOMEM;
                    goto fail;
                }
                st.ids = a;
                st.cap = nc;
            }
            st.ids[st.n++] = f.id;
            continue;
        }
        rc = tok_pretok_split(v->rx, sc, (const uint8_t *)text + f.start, f.len, on_piece, &st, err);
        if (rc)
            goto fail;
    }
    *ids = st.ids;
    *n_ids = st.n;
    st.ids = NULL;
fail:
    if (rc == TOK_E_NOMEM)
        q36_err_set(err, TOK_E_NOMEM, "tokenizer: out of memory encoding %zu bytes", len);
    free(cur.v);
    free(next.v);
    free(st.ids);
    tok_bpe_ctx_free(st.bpe);
    tok_split_ctx_free(sc);
    return rc;
}
