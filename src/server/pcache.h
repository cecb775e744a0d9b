/* pcache.h: the prefix cache: sequence states of one engine keyed by the
 * token ids that produced them, shared by every slot and conversation.
 *
 * A radix tree over token ids (the ids actually evaluated: prompts as
 * tokenized and the tokens generated, never re-tokenized text); a node may
 * hold a checkpoint (q36_ckpt) of the state after its path's tokens: a full
 * one (recurrent state and the path's K/V rows) or a state one (recurrent
 * state only; restored with the K/V rows of a full checkpoint below it, so
 * that a prefix's K/V rows are held once, pcache.c). A request restores the deepest checkpoint on the path of its
 * prompt, at or before the longest common prefix with anything cached, and
 * evaluates only the rest. A hybrid model needs a checkpoint at or before
 * the first changed token: a DeltaNet state cannot be rewound, so the
 * scheduler saves at chosen positions (every C tokens, the template's turn
 * boundaries, the end of a prompt and of a reply), inside its prompt
 * passes (pcache_want, q36_engine_save_at, pcache_put) or after a pass.
 *
 * Memory: the checkpoints' device bytes plus the tree's token arrays stay
 * under the budget; a save that would pass it first thins state
 * checkpoints (the smallest gap first, while gaps stay <= 512 tokens), then
 * evicts whole branches (a leaf and its ancestors up to the nearest fork),
 * least recently used first (pcache.c says the order). A checkpoint larger
 * than the budget is not saved.
 *
 * Exactness: a checkpoint holds the state bits; in exact mode the rest of a
 * prompt evaluated on it gives the same bits as the whole prompt evaluated
 * cold (the engine's batch and split invariance).
 *
 * Threads: the engine thread only (the engine's rule). Freed before the
 * engine.
 */
#ifndef Q36_PCACHE_H
#define Q36_PCACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "../include/q36.h"

typedef struct pcache pcache;

typedef struct pcache_stats {
    uint64_t budget, bytes;     /* bytes allowed, held (checkpoints + tree) */
    int      nodes, ckpts;
    uint64_t lookups, hits;     /* restores asked for; those that restored something */
    uint64_t tokens_reused;     /* positions restored, summed */
    uint64_t saves, evictions;  /* checkpoints made; checkpoints evicted with their branch */
    uint64_t thinned;           /* state checkpoints dropped to make room, their branch kept */
} pcache_stats;

/* budget 0 makes a cache that never holds anything. */
int  pcache_new(q36_engine *e, uint64_t budget, pcache **out, q36_err *err);
void pcache_free(pcache *c);                                 /* accepts NULL */

/* Loads into `slot` the deepest checkpoint whose tokens are a prefix of
 * ids[0..n) and whose depth is at most max; returns that depth (0: none,
 * the slot is reset), or a negative kind with err (the slot is reset). */
int  pcache_restore(pcache *c, int slot, const int32_t *ids, int n, int max, q36_err *err);

/* Saves the state of `slot`, at position pos with tokens ids[0..pos), with
 * its K/V rows (kv: a full checkpoint) or without, unless that prefix holds
 * such a checkpoint already (then it only counts as used; a state
 * checkpoint is replaced by a full one). Evicts for room; a checkpoint over
 * the budget is skipped (0). Returns 0 or a negative kind (out of device
 * memory: nothing saved). */
int  pcache_save(pcache *c, int slot, const int32_t *ids, int pos, bool kv, q36_err *err);

/* A save in two steps, for a checkpoint made inside a pass
 * (q36_engine_save_at): pcache_want gives a checkpoint to fill for
 * ids[0..pos), with K/V rows (kv) or not, after making room for it as
 * pcache_save does (its bytes count as held until put); *out is NULL when
 * that prefix holds such a checkpoint already (then it counts as used) or
 * it does not fit the budget. pcache_put after the pass: a checkpoint
 * saved at pos (q36_ckpt_pos) joins the tree; one left unsaved (a failed
 * or refused pass) or held already meanwhile is freed. Either way the cache
 * owns ck after put; NULL is accepted. pcache_save is want, q36_slot_save
 * and put. */
int  pcache_want(pcache *c, const int32_t *ids, int pos, bool kv, q36_ckpt **out, q36_err *err);
int  pcache_put(pcache *c, const int32_t *ids, int pos, bool kv, q36_ckpt *ck, q36_err *err);

/* For the cache file (pcache_file.c). pcache_attach gives the cache a
 * checkpoint of ids[0..pos) made elsewhere (q36_ckpt_put), with its K/V
 * rows or not, when it fits in the budget with nothing evicted: 1 (the
 * cache owns ck), 0 (not taken: over the budget or held already; the
 * caller frees ck) or a negative kind. pcache_each calls fn on every
 * checkpoint, full ones first, each set in pre-order (a prefix before what
 * extends it), until fn returns non-zero (returned). */
int  pcache_attach(pcache *c, const int32_t *ids, int pos, bool kv, q36_ckpt *ck, q36_err *err);
int  pcache_each(const pcache *c, int (*fn)(void *ctx, const int32_t *ids, int pos, bool kv, const q36_ckpt *ck),
                 void *ctx, q36_err *err);

/* The cache to and from a file (pcache_file.c). The file holds every
 * checkpoint (full ones first) with its tokens, under a fingerprint of the
 * model and engine options (pcache_fingerprint); writing goes to
 * PATH.PID.tmp, renamed over PATH when complete (two servers on one folder:
 * the last to stop wins). Reading takes the checkpoints that fit
 * in the budget, in the file's order; a file that is not a cache file,
 * another model's or engine's, truncated or corrupt is refused with err
 * naming the file and what was expected and found (what was read before a
 * corrupt record stays: each record is checked whole before it is used).
 * pcache_read returns the checkpoints taken, or a negative kind. */
uint64_t pcache_fingerprint(const char *model_path, const q36_engine_opts *o, q36_err *err);
int  pcache_write(const pcache *c, const char *path, uint64_t fingerprint, q36_err *err);
int  pcache_read(pcache *c, const char *path, uint64_t fingerprint, q36_err *err);

/* Whether ids[0..pos) holds a checkpoint. */
int  pcache_has(const pcache *c, const int32_t *ids, int pos);

void pcache_get_stats(const pcache *c, pcache_stats *st);
q36_engine *pcache_engine(const pcache *c);

/* The tree checked against its invariants (depths, byte count, no empty
 * leaf); 0 or a line naming the first violation. For the tests. */
int  pcache_check(const pcache *c, char *why, int cap);

#endif
