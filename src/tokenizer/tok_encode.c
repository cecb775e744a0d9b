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

/* A per-call cache of the ids of short pieces: long texts repeat their
 * words, and BPE (the merge-table lookups) is most of the encoding time.
 * Used for texts of CACHE_MIN_TEXT bytes or more; it stops taking entries
 * when half full. Entries point into two arenas (piece bytes, ids). */
#define CACHE_MIN_TEXT  4096
#define CACHE_SLOTS     (1u << 15)
#define CACHE_MAX_PIECE 32

typedef struct cache_slot {
    uint32_t hash, key_off, ids_off;
    uint8_t  key_len, n_ids;          /* n_ids == 0: empty slot */
} cache_slot;

typedef struct piece_cache {
    cache_slot *slots;
    uint8_t    *keys;
    int32_t    *ids;
    size_t      n_keys, n_ids, used;
} piece_cache;

typedef struct enc_state {
    const tok_vocab *v;
    tok_bpe_ctx     *bpe;
    int32_t         *ids;
    size_t           n, cap;
    piece_cache     *cache;            /* NULL for short texts */
} enc_state;

static piece_cache *cache_new(void)
{
    piece_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->slots = calloc(CACHE_SLOTS, sizeof *c->slots);
    c->keys = malloc(CACHE_SLOTS / 2 * CACHE_MAX_PIECE);
    c->ids = malloc(CACHE_SLOTS / 2 * CACHE_MAX_PIECE * sizeof *c->ids);
    if (!c->slots || !c->keys || !c->ids) {
        free(c->slots);
        free(c->keys);
        free(c->ids);
        free(c);
        return NULL;
    }
    return c;
}

static void cache_free(piece_cache *c)
{
    if (!c)
        return;
    free(c->slots);
    free(c->keys);
    free(c->ids);
    free(c);
}

static int on_piece(void *user, const uint8_t *piece, size_t n)
{
    enc_state *s = user;
    piece_cache *c = s->cache;
    if (!c || n > CACHE_MAX_PIECE || n < 2)
        return tok_bpe_piece(s->v, s->bpe, piece, n, &s->ids, &s->n, &s->cap);
    uint32_t h = tok_hash_bytes(piece, n), i = h & (CACHE_SLOTS - 1);
    for (; c->slots[i].n_ids; i = (i + 1) & (CACHE_SLOTS - 1)) {
        const cache_slot *e = &c->slots[i];
        if (e->hash == h && e->key_len == n && !memcmp(c->keys + e->key_off, piece, n)) {
            if (s->n + e->n_ids > s->cap) {
                size_t nc = (s->cap + e->n_ids) * 2;
                int32_t *a = realloc(s->ids, nc * sizeof *a);
                if (!a)
                    return TOK_E_NOMEM;
                s->ids = a;
                s->cap = nc;
            }
            memcpy(s->ids + s->n, c->ids + e->ids_off, e->n_ids * sizeof *s->ids);
            s->n += e->n_ids;
            return 0;
        }
    }
    size_t before = s->n;
    int rc = tok_bpe_piece(s->v, s->bpe, piece, n, &s->ids, &s->n, &s->cap);
    size_t k = s->n - before;                  /* at most n ids: one per byte */
    if (rc || k == 0 || c->used >= CACHE_SLOTS / 2)
        return rc;
    c->slots[i] = (cache_slot){ h, (uint32_t)c->n_keys, (uint32_t)c->n_ids, (uint8_t)n, (uint8_t)k };
    memcpy(c->keys + c->n_keys, piece, n);
    memcpy(c->ids + c->n_ids, s->ids + before, k * sizeof *s->ids);
    c->n_keys += n;
    c->n_ids += k;
    c->used++;
    return 0;
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
    if (len >= CACHE_MIN_TEXT)
        st.cache = cache_new();               /* optional: NULL only costs speed */
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
    cache_free(st.cache);
    tok_split_ctx_free(sc);
    return rc;
}
