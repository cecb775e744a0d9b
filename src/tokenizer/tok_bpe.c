/* tok_bpe.c: byte-pair merging of one pre-tokenized piece.
 *
 * A piece starts as one symbol per byte (the token of that byte's code point
 * in the byte-level alphabet). The adjacent pair with the lowest merge rank
 * is merged, the leftmost one among equal ranks, until no adjacent pair is a
 * merge. Candidate pairs sit in a binary min-heap keyed by (rank, left
 * position); a popped pair is stale when either side has changed length
 * since it was pushed, which is exactly when its text no longer matches.
 * This is O(n log n) per piece, so a megabyte without spaces is fine.
 *
 * Merges are looked up by the ids of their two sides (tok_vocab.c), so a
 * symbol is always a token. A symbol left without an id (only possible with
 * an incomplete vocabulary) falls back, as in llama.cpp, to the tokens of the
 * single bytes of its byte-level text, dropping those that are not tokens.
 */
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

typedef struct sym {
    int32_t  id;
    int32_t  prev, next;
    uint32_t start, len;      /* bytes of the piece */
} sym;

typedef struct pair {
    int32_t  rank;
    int32_t  left, right;     /* symbol indices */
    uint32_t llen, rlen;      /* their lengths when pushed */
    int32_t  result;
} pair;

struct tok_bpe_ctx {
    sym  *syms;
    pair *heap;
    size_t cap_syms, cap_heap, n_heap;
};

tok_bpe_ctx *tok_bpe_ctx_new(void)
{
    return calloc(1, sizeof(tok_bpe_ctx));
}

void tok_bpe_ctx_free(tok_bpe_ctx *c)
{
    if (!c)
        return;
    free(c->syms);
    free(c->heap);
    free(c);
}

static bool pair_less(const pair *a, const pair *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static int heap_push(tok_bpe_ctx *c, pair p)
{
    if (c->n_heap == c->cap_heap) {
        size_t cap = c->cap_heap ? c->cap_heap * 2 : 64;
        pair *h = realloc(c->heap, cap * sizeof *h);
        if (!h)
            return TOK_E_NOMEM;
        c->heap = h;
        c->cap_heap = cap;
    }
    size_t i = c->n_heap++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!pair_less(&p, &c->heap[up]))
            break;
        c->heap[i] = c->heap[up];
        i = up;
    }
    c->heap[i] = p;
    return 0;
}

static pair heap_pop(tok_bpe_ctx *c)
{
    pair top = c->heap[0], last = c->heap[--c->n_heap];
    size_t i = 0, n = c->n_heap;
    for (;;) {
        size_t l = 2 * i + 1, best = i;
        const pair *bp = &last;
        if (l < n && pair_less(&c->heap[l], bp)) { best = l; bp = &c->heap[l]; }
        if (l + 1 < n && pair_less(&c->heap[l + 1], bp)) { best = l + 1; }
        if (best == i)
            break;
        c->heap[i] = c->heap[best];
        i = best;
    }
    if (n)
        c->heap[i] = last;
    return top;
}

static int try_pair(const tok_vocab *v, tok_bpe_ctx *c, int32_t l, int32_t r)
{
    if (l < 0 || r < 0)
        return 0;
    const sym *a = &c->syms[l], *b = &c->syms[r];
    if (a->id < 0 || b->id < 0)
        return 0;
    int32_t result;
    int32_t rank = tok_merge_rank(v, a->id, b->id, &result);
    if (rank < 0)
        return 0;
    return heap_push(c, (pair){ rank, l, r, a->len, b->len, result });
}

static int push_id(int32_t id, int32_t **ids, size_t *n, size_t *cap)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        int32_t *a = realloc(*ids, nc * sizeof *a);
        if (!a)
            return TOK_E_NOMEM;
        *ids = a;
        *cap = nc;
    }
    (*ids)[(*n)++] = id;
    return 0;
}

/* A symbol that is not a token: the tokens of the single bytes of its
 * byte-level text (its mapped code points' UTF-8), where they exist. */
static int push_fallback(const tok_vocab *v, const uint8_t *p, size_t n,
                         int32_t **ids, size_t *n_ids, size_t *cap)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t u[4];
        size_t k = tok_utf8_encode(tok_byte_to_cpt(p[i]), u);
        for (size_t j = 0; j < k; j++) {
            int32_t id = tok_find(v, (const char *)&u[j], 1);
            if (id >= 0 && push_id(id, ids, n_ids, cap))
                return TOK_E_NOMEM;
        }
    }
    return 0;
}

int tok_bpe_piece(const tok_vocab *v, tok_bpe_ctx *c, const uint8_t *piece, size_t n,
                  int32_t **ids, size_t *n_ids, size_t *cap)
{
    if (n == 0)
        return 0;
    if (n == 1) {
        int32_t id = v->byte_tok[piece[0]];
        return id >= 0 ? push_id(id, ids, n_ids, cap) : push_fallback(v, piece, 1, ids, n_ids, cap);
    }
    if (n > c->cap_syms) {
        sym *s = realloc(c->syms, n * sizeof *s);
        if (!s)
            return TOK_E_NOMEM;
        c->syms = s;
        c->cap_syms = n;
    }
    for (size_t i = 0; i < n; i++)
        c->syms[i] = (sym){ v->byte_tok[piece[i]], (int32_t)i - 1,
                            i + 1 < n ? (int32_t)i + 1 : -1, (uint32_t)i, 1 };
    c->n_heap = 0;
    for (size_t i = 0; i + 1 < n; i++)
        if (try_pair(v, c, (int32_t)i, (int32_t)i + 1))
            return TOK_E_NOMEM;
    while (c->n_heap) {
        pair p = heap_pop(c);
        sym *a = &c->syms[p.left], *b = &c->syms[p.right];
        if (a->len != p.llen || b->len != p.rlen || a->len == 0 || b->len == 0)
            continue;                      /* stale */
        a->len += b->len;
        a->id = p.result;
        b->len = 0;
        a->next = b->next;
        if (b->next >= 0)
            c->syms[b->next].prev = p.left;
        if (try_pair(v, c, a->prev, p.left) || try_pair(v, c, p.left, a->next))
            return TOK_E_NOMEM;
    }
    for (int32_t i = 0; i >= 0; i = c->syms[i].next) {
        const sym *s = &c->syms[i];
        int rc = s->id >= 0 ? push_id(s->id, ids, n_ids, cap)
                            : push_fallback(v, piece + s->start, s->len, ids, n_ids, cap);
        if (rc)
            return rc;
    }
    return 0;
}
