/* sched_spec.h: MTP speculative decoding for every slot of the scheduler
 * at once (q36 serve --spec-type draft-mtp): each slot's drafting state,
 * the batched MTP passes, the adaptive draft count, the statistics.
 *
 * A step of the engine thread (sched.c), for the slots that speculate:
 *  1. sspec_draft: one MTP pass writes every slot's pending MTP rows (a
 *     prompt chunk's, or the rows its last round kept, paired with the
 *     trunk's hidden rows: llama.cpp's catch-up) and, for each decoding
 *     slot that drafts this round, the row of its last sampled token x,
 *     whose argmax is its first draft; each further draft is one more MTP
 *     pass of one row per slot still drafting, fed the block's own hidden
 *     row. So the MTP passes of a step are 1 + (k_max - 1), whatever the
 *     number of slots.
 *  2. sched.c evaluates x and the k drafts of each such slot as one verify
 *     row (k+1 tokens, the logits and hidden rows of each, the DeltaNet
 *     state kept after each token) in the same forward pass as the other
 *     slots' decode rows and prompt chunks;
 *  3. sched.c samples each verify token in order exactly as plain decoding
 *     would (gen_next), keeps a draft while it is the token sampled, and
 *     rewinds the slot to its last kept token (q36_slot_rewind; the K/V
 *     rows above the position are never read); sspec_verified records the
 *     round and sets the pending MTP rows.
 * The tokens are the plain decoder's, greedy or sampled with the same seed:
 * the sampler sees the same logits rows (exact mode) in the same order.
 *
 * Adaptive k (sspec_round_k). A slot starts at k = k_max. After a round
 * with k drafts of which m were kept: k = min(k + 1, k_max) when m == k,
 * else k = m + 1. A slot with three rounds in a row where nothing was kept
 * stops drafting (k = 0: a plain decode row in the same pass) for a pause
 * of 8 steps, then probes with one draft; a probe that misses again pauses
 * twice as long (up to 128 steps); any kept draft ends the pauses (the next
 * pause is 8 again). k never exceeds what the context leaves (a token after
 * the last verify row must fit).
 *
 * On a device that records passes (CUDA graphs; sched.c: any backend but
 * the CPU) a pass is recorded per shape, and the shapes must repeat. So
 * there the count stays k_max between pauses (Q36_SERVER_MTP_ADAPTIVE=1
 * or 0 says otherwise): with every slot's own k the verify passes of 4
 * slots rarely repeated a shape and ran op by op (1.35 ms a step against
 * ~0.5 recorded, record 2026-12-03-cuda-session18), while a verify row's
 * extra tokens cost the device little; the drafts are made anyway (the
 * chained draft passes give every slot the largest k of the step). And a
 * drafting slot's first MTP pass is padded to k_max + 1 rows with the rows
 * written last (sspec_draft; Q36_SERVER_MTP_PAD=1 or 0 says otherwise),
 * whatever it kept.
 *
 * A prompt restored from the prefix cache has no MTP rows (checkpoints hold
 * none): its restored tokens are written to the MTP block at admission
 * (sspec_prefix), paired with zero hidden rows, which only lowers the
 * drafts' acceptance there.
 *
 * Threads: the engine thread only. */
#ifndef Q36_SCHED_SPEC_H
#define Q36_SCHED_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include "sched.h"

#define SSPEC_MAX_DRAFT 16

typedef struct sspec sspec;

/* k_max in [1, SSPEC_MAX_DRAFT]; the engine made with opts.mtp = 1 and
 * n_keep >= k_max + 1; n_batch: rows of a pass (a prompt chunk at most);
 * device: the engine runs on a device that records passes (below: "On a
 * device"). */
int  sspec_new(sched_engine *eng, int n_slots, int n_ctx, int n_batch, int k_max, bool device,
               sspec **out, q36_err *err);
void sspec_free(sspec *s);                                  /* accepts NULL */
int  sspec_k_max(const sspec *s);
/* Whether a step that drafts nothing may leave the MTP rows pending (for
 * the next sspec_draft to write in one pass) instead of calling
 * sspec_draft: every slot holds at most SSPEC_DEFER_ROWS pending rows and
 * room for a verify row's more (sched.c calls sspec_draft in any step
 * that drafts, reads a prompt, or may not defer). */
bool sspec_may_defer(const sspec *s);
#define SSPEC_DEFER_ROWS 64

/* A job starts in slot i: the drafting state afresh (k = k_max); then
 * sspec_prefix with its first d prompt tokens restored from the prefix
 * cache: their MTP rows are written now (zero hidden rows). 0 or the MTP
 * pass's error. */
void sspec_reset(sspec *s, int i);
int  sspec_prefix(sspec *s, int i, const int32_t *prompt, int d, q36_err *err);
/* The job of slot i ended (the slot was reset): nothing pending. */
void sspec_end(sspec *s, int i);
/* A prompt chunk ids[0..n) was evaluated with hidden rows h (n x n_embd). */
void sspec_prompt(sspec *s, int i, const int32_t *ids, int n, const float *h);
/* The drafts this round for slot i whose last sampled token sits at
 * position P (0: a plain decode row). */
int  sspec_round_k(sspec *s, int i, int P, int n_ctx);
/* Step 1 for the slots slot[0..n) with last tokens x[] at positions P[]
 * and k[] drafts wanted (0 allowed: pending rows only); also writes the
 * pending rows of every other slot that has some. On return k[j] is the
 * drafts made (fewer when the context is short) and sspec_drafts(s, i)
 * holds them. */
int  sspec_draft(sspec *s, const int *slot, const int32_t *x, const int *P, int *k, int n,
                 q36_err *err);
const int32_t *sspec_drafts(const sspec *s, int i);
/* The buffer for slot i's verify row's hidden rows ((k_max+1) x n_embd). */
float *sspec_vh(sspec *s, int i);
/* The round of slot i is settled: vids[0..rows) (x and the drafts kept)
 * stay, k drafts were tried, wrote: x's MTP row was written (k > 0). */
void sspec_verified(sspec *s, int i, const int32_t *vids, int rows, int k);

/* Statistics of slot i since the server started (for /slots). */
cJSON *sspec_json(const sspec *s, int i);
/* The same, every slot together, with the acceptance by position as
 * fractions (for /monitor). */
cJSON *sspec_total_json(const sspec *s);

#endif
