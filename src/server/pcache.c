/* pcache.c: the prefix cache (pcache.h): a radix tree over token ids whose
 * nodes may hold a checkpoint of the state after their path, a byte budget,
 * and eviction of least recently used branches.
 *
 * A node's edge is the run of tokens from its parent's depth to its own;
 * children are a sibling list found by their first token (a conversation
 * forks a few ways at most, so a list beats a table).
 *
 * Two kinds of checkpoint share the K/V rows of a prefix: a full one holds
 * the K/V rows of its whole path besides the recurrent state; a state one
 * holds the recurrent state alone (0.8 MiB on the default model, whatever
 * the depth). A state checkpoint at depth d is restored by loading a full
 * checkpoint below it (whose first d K/V rows are those of the same tokens)
 * and then the state. So the K/V rows of a conversation are held once, at
 * its deepest point, and the checkpoints every C tokens cost the state
 * only. Every leaf should hold a full checkpoint: a branch whose last full
 * checkpoint is evicted goes with it, up to its fork or its next full
 * checkpoint.
 *
 * Room is made in this order: state checkpoints are thinned while the gap
 * their removal leaves is at most THIN_GAP tokens (the smallest gap first,
 * so a dense branch becomes evenly sparser: 64, 128, 256, ... apart, and
 * an edit re-reads at most the gap), then least recently used branches
 * other than the one the save extends go, then state checkpoints are
 * thinned whatever the gap, and last the saving branch's own.
 */
#include "pcache.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pc_node {
    struct pc_node *parent, *child, *next;  /* first child; next sibling */
    int32_t  *tok;                          /* the edge: n tokens */
    int       n, depth;                     /* depth: tokens from the root to its end */
    q36_ckpt *ck;                           /* the state after depth tokens, or NULL */
    bool      kv;                           /* ck holds the K/V rows [0, depth) too */
    uint64_t  ck_bytes;
    uint64_t  used;                         /* clock of its last use */
} pc_node;

struct pcache {
    q36_engine  *e;
    pc_node      root;
    uint64_t     clock;
    uint64_t     pending;     /* bytes of checkpoints wanted and not yet put (pcache_want) */
    pcache_stats st;
};

static uint64_t node_bytes(const pc_node *x) { return sizeof *x + (uint64_t)x->n * sizeof(int32_t) + x->ck_bytes; }

int pcache_new(q36_engine *e, uint64_t budget, pcache **out, q36_err *err)
{
    *out = NULL;
    pcache *c = calloc(1, sizeof *c);
    if (!c)
        return q36_err_set(err, Q36_E_NOMEM, "out of memory for the prefix cache");
    c->e = e;
    c->st.budget = budget;
    *out = c;
    return 0;
}

static void free_tree(pc_node *x)
{
    for (pc_node *k = x->child, *nx; k; k = nx) {
        nx = k->next;
        free_tree(k);
        q36_ckpt_free(k->ck);
        free(k->tok);
        free(k);
    }
}

void pcache_free(pcache *c)
{
    if (!c)
        return;
    free_tree(&c->root);
    free(c);
}

static pc_node *find_child(const pc_node *x, int32_t t)
{
    for (pc_node *k = x->child; k; k = k->next)
        if (k->tok[0] == t)
            return k;
    return NULL;
}

/* Walks ids[0..n) down the tree; returns the deepest node whose whole edge
 * matches (the root when none), *lcp the tokens matched in all (into a
 * partially matched edge too). */
static pc_node *walk(const pcache *c, const int32_t *ids, int n, int *lcp)
{
    const pc_node *x = &c->root;
    int d = 0;
    for (;;) {
        pc_node *k = d < n ? find_child(x, ids[d]) : NULL;
        if (!k)
            break;
        int m = 0;
        while (m < k->n && d + m < n && k->tok[m] == ids[d + m])
            m++;
        if (m < k->n) {
            d += m;
            break;
        }
        d += m;
        x = k;
    }
    *lcp = d;
    return (pc_node *)x;
}

int pcache_has(const pcache *c, const int32_t *ids, int pos)
{
    int lcp;
    const pc_node *x = walk(c, ids, pos, &lcp);
    return x->depth == pos && x->ck != NULL;
}

/* A node with a full checkpoint in x's subtree (x included), or NULL. */
static pc_node *full_below(pc_node *x)
{
    if (x->ck && x->kv)
        return x;
    for (pc_node *k = x->child; k; k = k->next) {
        pc_node *f = full_below(k);
        if (f)
            return f;
    }
    return NULL;
}

int pcache_restore(pcache *c, int slot, const int32_t *ids, int n, int max, q36_err *err)
{
    q36_slot_reset(c->e, slot);
    c->st.lookups++;
    int lcp;
    pc_node *x = walk(c, ids, n, &lcp), *f = NULL;
    for (; x != &c->root; x = x->parent)
        if (x->ck && x->depth <= max && (f = full_below(x)))
            break;
    if (x == &c->root)
        return 0;
    c->clock++;
    for (pc_node *y = f; y != &c->root; y = y->parent)   /* x is on f's path */
        y->used = c->clock;
    int rc = q36_slot_load(c->e, slot, f->ck, err);
    if (!rc && f != x)
        rc = q36_slot_load_state(c->e, slot, x->ck, err);
    if (rc) {
        q36_slot_reset(c->e, slot);
        return rc;
    }
    c->st.hits++;
    c->st.tokens_reused += (uint64_t)x->depth;
    return x->depth;
}

/* Unlinks and frees a leaf. */
static void remove_leaf(pcache *c, pc_node *x)
{
    pc_node **p = &x->parent->child;
    while (*p != x)
        p = &(*p)->next;
    *p = x->next;
    c->st.bytes -= node_bytes(x);
    c->st.nodes--;
    if (x->ck) {
        c->st.ckpts--;
        c->st.evictions++;
    }
    q36_ckpt_free(x->ck);
    free(x->tok);
    free(x);
}

/* The most recent use on the branch that ends at leaf x: the leaf and its
 * ancestors up to its fork or the next full checkpoint. */
static uint64_t branch_used(const pc_node *x, const pcache *c)
{
    uint64_t u = x->used;
    for (x = x->parent; x != &c->root && !x->child->next && !x->kv; x = x->parent)
        u = x->used > u ? x->used : u;
    return u;
}

static void find_lru(pcache *c, pc_node *x, const pc_node *keep, pc_node **best, uint64_t *best_used)
{
    if (!x->child) {
        if (x == &c->root || x == keep)
            return;
        uint64_t u = branch_used(x, c);
        if (!*best || u < *best_used) {
            *best = x;
            *best_used = u;
        }
        return;
    }
    for (pc_node *k = x->child; k; k = k->next)
        find_lru(c, k, keep, best, best_used);
}

enum { THIN_GAP = 512 };   /* thin before evicting other branches while gaps stay this small */

/* The depth of the nearest checkpoint below x, over all its paths
 * (INT_MAX: none). */
static int next_ck_depth(const pc_node *x)
{
    int best = INT_MAX;
    for (const pc_node *k = x->child; k; k = k->next) {
        int d = k->ck ? k->depth : next_ck_depth(k);
        best = d < best ? d : best;
    }
    return best;
}

/* The state checkpoint with children whose removal leaves the smallest gap
 * (from the checkpoint above it, depth `above`, to the nearest below it);
 * ties: the least recently used, then the shallowest. */
static void find_thin(pc_node *x, int above, pc_node **best, int *best_gap)
{
    for (pc_node *k = x->child; k; k = k->next) {
        if (k->ck && !k->kv && k->child) {
            int gap = next_ck_depth(k) - above;
            if (!*best || gap < *best_gap || (gap == *best_gap && (k->used < (*best)->used ||
                                              (k->used == (*best)->used && k->depth < (*best)->depth)))) {
                *best = k;
                *best_gap = gap;
            }
        }
        find_thin(k, k->ck ? k->depth : above, best, best_gap);
    }
}

/* Drops the checkpoint of the node find_thin picks if its gap is at most
 * max_gap; a node left without checkpoint and with one child is merged
 * into it. False when there is none. */
static bool thin_one(pcache *c, int max_gap)
{
    pc_node *x = NULL;
    int gap = 0;
    find_thin(&c->root, 0, &x, &gap);
    if (!x || gap > max_gap)
        return false;
    c->st.bytes -= x->ck_bytes;
    c->st.ckpts--;
    c->st.thinned++;
    q36_ckpt_free(x->ck);
    x->ck = NULL;
    x->ck_bytes = 0;
    pc_node *k = x->child;
    int32_t *t;
    if (k->next || !(t = malloc((size_t)(x->n + k->n) * sizeof *t)))
        return true;                         /* a fork stays (or no memory to merge: harmless) */
    c->st.bytes -= node_bytes(x) + node_bytes(k);
    memcpy(t, x->tok, (size_t)x->n * sizeof *t);
    memcpy(t + x->n, k->tok, (size_t)k->n * sizeof *t);
    free(k->tok);
    k->tok = t;
    k->n += x->n;
    k->parent = x->parent;
    k->next = x->next;
    pc_node **p = &x->parent->child;         /* k takes x's place among its siblings */
    while (*p != x)
        p = &(*p)->next;
    *p = k;
    free(x->tok);
    free(x);
    c->st.nodes--;
    c->st.bytes += node_bytes(k);
    return true;
}

/* Evicts the least recently used branch but the one that ends at `keep`
 * (the path a save extends): its leaf and the ancestors left without a
 * full checkpoint below them (up to a fork or a full checkpoint). False
 * when there is nothing else to evict. */
static bool evict_one(pcache *c, const pc_node *keep)
{
    pc_node *leaf = NULL;
    uint64_t u = 0;
    find_lru(c, &c->root, keep, &leaf, &u);
    if (!leaf)
        return false;
    do {
        pc_node *p = leaf->parent;
        remove_leaf(c, leaf);
        leaf = p;
    } while (leaf != &c->root && !leaf->child && !leaf->kv);
    return true;
}

static pc_node *node_new(pcache *c, pc_node *parent, const int32_t *tok, int n)
{
    pc_node *x = calloc(1, sizeof *x);
    if (!x || !(x->tok = malloc((size_t)n * sizeof *x->tok))) {
        free(x);
        return NULL;
    }
    memcpy(x->tok, tok, (size_t)n * sizeof *tok);
    x->n = n;
    x->parent = parent;
    x->depth = parent->depth + n;
    x->next = parent->child;
    parent->child = x;
    c->st.nodes++;
    c->st.bytes += node_bytes(x);
    return x;
}

/* Splits k's edge after m tokens: a new node takes the first m and becomes
 * k's parent. */
static pc_node *split(pcache *c, pc_node *k, int m)
{
    pc_node *mid = calloc(1, sizeof *mid);
    int32_t *rest = malloc((size_t)(k->n - m) * sizeof *rest);
    if (!mid || !rest || !(mid->tok = malloc((size_t)m * sizeof *mid->tok))) {
        free(mid ? mid->tok : NULL);
        free(mid);
        free(rest);
        return NULL;
    }
    c->st.bytes -= node_bytes(k);
    memcpy(mid->tok, k->tok, (size_t)m * sizeof *mid->tok);
    memcpy(rest, k->tok + m, (size_t)(k->n - m) * sizeof *rest);
    free(k->tok);
    k->tok = rest;
    mid->n = m;
    k->n -= m;
    mid->parent = k->parent;
    mid->depth = k->parent->depth + m;
    mid->used = k->used;
    pc_node **p = &k->parent->child;         /* mid takes k's place among its siblings */
    while (*p != k)
        p = &(*p)->next;
    *p = mid;
    mid->next = k->next;
    k->next = NULL;
    k->parent = mid;
    mid->child = k;
    c->st.nodes++;
    c->st.bytes += node_bytes(mid) + node_bytes(k);
    return mid;
}

/* The node at exactly ids[0..pos), made (splitting an edge) if needed. */
static pc_node *insert(pcache *c, const int32_t *ids, int pos)
{
    int lcp;
    pc_node *x = walk(c, ids, pos, &lcp);
    if (lcp > x->depth) {                    /* stopped inside the edge of a child */
        pc_node *k = find_child(x, ids[x->depth]);
        if (!(x = split(c, k, lcp - x->depth)))
            return NULL;
    }
    if (pos > x->depth)
        x = node_new(c, x, ids + x->depth, pos - x->depth);
    return x;
}

static void hold(pcache *c, pc_node *x, q36_ckpt *ck, bool kv, uint64_t ck_bytes);
/* What a checkpoint of ids[0..pos) adds at most: its bytes, two new nodes
 * (a split and a leaf) and pos tokens of edges. */
static uint64_t save_need(const pcache *c, int pos, bool kv)
{
    return q36_ckpt_bytes(c->e, kv ? pos : 0) + 2 * sizeof(pc_node) + (uint64_t)pos * sizeof(int32_t);
}

int pcache_want(pcache *c, const int32_t *ids, int pos, bool kv, q36_ckpt **out, q36_err *err)
{
    *out = NULL;
    if (pos < 1)
        return 0;
    const uint64_t need = save_need(c, pos, kv);
    if (need > c->st.budget)
        return 0;
    c->clock++;
    int lcp;
    pc_node *x = walk(c, ids, pos, &lcp);
    if (x->depth == pos && x->ck && (x->kv || !kv)) {     /* held already */
        for (; x != &c->root; x = x->parent)
            x->used = c->clock;
        return 0;
    }
    /* thinning while gaps stay small, other branches, any thinning, this branch (the file's comment) */
    while (c->st.bytes + c->pending + need > c->st.budget) {
        x = walk(c, ids, pos, &lcp);                       /* thinning may merge nodes */
        if (!(thin_one(c, THIN_GAP) || evict_one(c, x) || thin_one(c, INT_MAX) || evict_one(c, NULL)))
            break;
    }
    if (c->st.bytes + c->pending + need > c->st.budget)
        return 0;                  /* the room is the other pending checkpoints' */
    int rc = q36_ckpt_new(c->e, kv ? pos : 0, out, err);
    if (rc)
        return rc;
    c->pending += need;
    return 0;
}

int pcache_put(pcache *c, const int32_t *ids, int pos, bool kv, q36_ckpt *ck, q36_err *err)
{
    if (!ck)
        return 0;
    c->pending -= save_need(c, pos, kv);
    int lcp;
    pc_node *x = walk(c, ids, pos, &lcp);
    if (q36_ckpt_pos(ck) != pos || (x->depth == pos && x->ck && (x->kv || !kv))) {
        q36_ckpt_free(ck);         /* not saved, or held already (another slot's, same pass) */
        return 0;
    }
    if (!(x = insert(c, ids, pos))) {
        q36_ckpt_free(ck);
        return q36_err_set(err, Q36_E_NOMEM, "prefix cache: out of memory for the tree");
    }
    c->clock++;
    hold(c, x, ck, kv, q36_ckpt_bytes(c->e, kv ? pos : 0));
    c->st.saves++;
    return 0;
}

int pcache_save(pcache *c, int slot, const int32_t *ids, int pos, bool kv, q36_err *err)
{
    q36_ckpt *ck = NULL;
    int rc = pcache_want(c, ids, pos, kv, &ck, err);
    if (rc || !ck)
        return rc;
    if ((rc = q36_slot_save(c->e, slot, ck, err))) {
        c->pending -= save_need(c, pos, kv);
        q36_ckpt_free(ck);
        return rc;
    }
    return pcache_put(c, ids, pos, kv, ck, err);
}

/* Node x takes checkpoint ck (replacing a state one it held). */
static void hold(pcache *c, pc_node *x, q36_ckpt *ck, bool kv, uint64_t ck_bytes)
{
    if (x->ck) {                               /* a state checkpoint becomes a full one */
        c->st.bytes -= x->ck_bytes;
        c->st.ckpts--;
        q36_ckpt_free(x->ck);
    }
    x->ck = ck;
    x->kv = kv;
    x->ck_bytes = ck_bytes;
    c->st.bytes += ck_bytes;
    c->st.ckpts++;
    for (; x != &c->root; x = x->parent)
        x->used = c->clock;
}

int pcache_attach(pcache *c, const int32_t *ids, int pos, bool kv, q36_ckpt *ck, q36_err *err)
{
    const uint64_t ck_bytes = q36_ckpt_bytes(c->e, kv ? pos : 0);
    int lcp;
    pc_node *x = walk(c, ids, pos, &lcp);
    if (pos < 1 || (x->depth == pos && x->ck && (x->kv || !kv)) ||
        c->st.bytes + c->pending + ck_bytes + 2 * sizeof(pc_node) + (uint64_t)pos * sizeof(int32_t) > c->st.budget)
        return 0;
    if (!(x = insert(c, ids, pos)))
        return q36_err_set(err, Q36_E_NOMEM, "prefix cache: out of memory for the tree");
    c->clock++;
    hold(c, x, ck, kv, ck_bytes);
    return 1;
}

/* Pre-order from x, path[0..x->depth) its tokens. */
static int each(const pcache *c, const pc_node *x, int32_t *path, int kv,
                int (*fn)(void *ctx, const int32_t *ids, int pos, bool kv, const q36_ckpt *ck), void *ctx)
{
    if (x != &c->root) {
        memcpy(path + x->depth - x->n, x->tok, (size_t)x->n * sizeof *path);
        int rc;
        if (x->ck && x->kv == (kv != 0) && (rc = fn(ctx, path, x->depth, x->kv, x->ck)))
            return rc;
    }
    for (const pc_node *k = x->child; k; k = k->next) {
        int rc = each(c, k, path, kv, fn, ctx);
        if (rc)
            return rc;
    }
    return 0;
}

static int max_depth(const pc_node *x)
{
    int d = x->depth;
    for (const pc_node *k = x->child; k; k = k->next) {
        int e = max_depth(k);
        d = e > d ? e : d;
    }
    return d;
}

int pcache_each(const pcache *c, int (*fn)(void *ctx, const int32_t *ids, int pos, bool kv, const q36_ckpt *ck),
                void *ctx, q36_err *err)
{
    int32_t *path = malloc(((size_t)max_depth(&c->root) + 1) * sizeof *path);
    if (!path)
        return q36_err_set(err, Q36_E_NOMEM, "prefix cache: out of memory for a path");
    int rc = each(c, &c->root, path, 1, fn, ctx);
    if (!rc)
        rc = each(c, &c->root, path, 0, fn, ctx);
    free(path);
    return rc;
}

void pcache_get_stats(const pcache *c, pcache_stats *st) { *st = c->st; }
q36_engine *pcache_engine(const pcache *c) { return c->e; }

static int check_node(const pcache *c, const pc_node *x, uint64_t *bytes, int *nodes, int *ckpts,
                      char *why, int cap)
{
    for (const pc_node *k = x->child; k; k = k->next) {
        if (k->parent != x || k->n < 1 || k->depth != x->depth + k->n) {
            snprintf(why, (size_t)cap, "node at depth %d: edge of %d tokens under depth %d", k->depth, k->n, x->depth);
            return -1;
        }
        if (!k->child && !k->ck) {
            snprintf(why, (size_t)cap, "leaf at depth %d holds no checkpoint", k->depth);

            return -1;
        }
        for (const pc_node *o = k->next; o; o = o->next)
            if (o->tok[0] == k->tok[0]) {
                snprintf(why, (size_t)cap, "two children of depth %d start with token %d", x->depth, (int)k->tok[0]);
                return -1;
            }
        if (k->ck && q36_ckpt_pos(k->ck) != k->depth) {
            snprintf(why, (size_t)cap, "checkpoint at position %d on a node of depth %d", q36_ckpt_pos(k->ck), k->depth);
            return -1;
        }
        *bytes += node_bytes(k);
        (*nodes)++;
        *ckpts += k->ck != NULL;
        if (check_node(c, k, bytes, nodes, ckpts, why, cap))
            return -1;
    }
    return 0;
}

int pcache_check(const pcache *c, char *why, int cap)
{
    uint64_t bytes = 0;
    int nodes = 0, ckpts = 0;
    if (check_node(c, &c->root, &bytes, &nodes, &ckpts, why, cap))
        return -1;
    if (bytes != c->st.bytes || nodes != c->st.nodes || ckpts != c->st.ckpts) {
        snprintf(why, (size_t)cap, "counted %llu bytes, %d nodes, %d checkpoints; the totals say %llu, %d, %d",
                 (unsigned long long)bytes, nodes, ckpts, (unsigned long long)c->st.bytes, c->st.nodes, c->st.ckpts);
        return -1;
    }
    if (c->st.bytes > c->st.budget) {
        snprintf(why, (size_t)cap, "%llu bytes held over a budget of %llu", (unsigned long long)c->st.bytes,
                 (unsigned long long)c->st.budget);
        return -1;
    }
    return 0;
}
