/* q36.h: the public engine API of q36.
 *
 * A program opens a model file once (q36_model_open), makes an engine for it
 * (q36_engine_new: the backend, the bound weights, the scratch, the worker
 * threads, and N slots of sequence state), and evaluates batches of rows
 * from any of those slots in one forward pass (q36_engine_eval). A session
 * (q36_session_*) is a handle on one slot for programs that run one
 * sequence at a time; q36_session_new makes a one-slot engine of its own.
 *
 * Errors: every function that can fail returns 0 or a negative kind and fills
 * a q36_err (q36_err.h) with one line naming the file or field, what was
 * expected and what was found. Nothing here exits or prints.
 *
 * Threads: a q36_model is immutable after q36_model_open and may be shared by
 * any number of threads; q36_model_free must not race with other calls. An
 * engine, its sessions and checkpoints belong to one thread at a time.
 *
 * This header includes only q36_err.h; the geometry of a model
 * (model_hparams) and its GGUF are internal (model/model.h).
 */
#ifndef Q36_H
#define Q36_H

#include <stdint.h>

#include "q36_err.h"

#define Q36_VERSION "0.1.0"

typedef struct q36_model q36_model;

/* Maps `path` (weights stay in the mapping, never copied), validates the
 * GGUF and reads the geometry. *out is NULL on failure. */
int  q36_model_open(const char *path, q36_model **out, q36_err *err);
void q36_model_free(q36_model *m);                          /* accepts NULL */

/* Elements of every tensor in the file (llama_model_n_params counts the same). */
uint64_t q36_model_n_params(const q36_model *m);
/* Bytes of tensor data. */
uint64_t q36_model_n_bytes(const q36_model *m);

/* ----------------------------------------------------------------- engines
 *
 * An engine evaluates one model on one backend (today: the CPU, with its
 * worker threads). It holds n_slots slots; a slot is one sequence's state:
 * the K/V rows of the full-attention layers (n_ctx positions), the conv
 * tails and state matrices of the DeltaNet layers, and its position (tokens
 * seen). Scratch is sized for n_batch rows per forward pass.
 *
 * Exact mode (the default) makes every row's bits independent of the batch
 * it is evaluated in: a slot's logits are the same whether its tokens come
 * alone or beside other slots' rows, in one prompt chunk or token by token
 * (tests/test_model_batch.c).
 *
 * All memory is computed and allocated by q36_engine_new, from the one
 * table q36_engine_plan reads too; a plan that does not fit is refused there
 * with the numbers. Nothing allocates per token afterwards. */

typedef struct q36_engine q36_engine;

/* K/V cache element types. Q8_0 (llama.cpp's `-ctk q8_0 -ctv q8_0`, half
 * of f16's bytes) is for K and V together, with a head size that is a
 * multiple of 32; attention then runs in the order of llama.cpp's flash
 * attention, which llama.cpp needs for such caches (on the CPU backend
 * bit for bit; the CUDA backend's, cuda_attn_q8.cu, to float rounding). */
enum q36_kv_type { Q36_KV_F32 = 0, Q36_KV_F16 = 1, Q36_KV_Q8_0 = 2 };
/* "f32", "f16", "q8_0" (llama.cpp's -ctk/-ctv names) to the type, -1 for
 * anything else (NULL too); and back ("?" for no type). */
int         q36_kv_type_parse(const char *name);
const char *q36_kv_type_name(int type);

typedef struct q36_engine_opts {
    int n_threads;          /* worker threads in total; 0 = all online CPUs (default 1) */
    int n_batch;            /* rows per forward pass (default 512) */
    int n_slots;            /* sequences held at once (default 1) */
    int type_k, type_v;     /* enum q36_kv_type (default F16, llama.cpp's default) */
    uint64_t max_bytes;     /* refuse plans above this; 0 = MemAvailable of the machine */
    int fast;               /* 0 exact: llama.cpp's order of operations and sums,
                               every row's bits independent of the batch it is in
                               (on the CPU); 1 fast: prompt runs take the chunked
                               DeltaNet form, and on a GPU f16 tensor-core products
                               and tiled attention (results move at float rounding
                               level and depend on how a prompt is split into
                               passes); -1 (default): fast on a GPU, exact on the
                               CPU (q36_opts_fast) */
    int profile;            /* 1: time every backend op of every forward pass into a
                               table (q36_session_profile); a diagnostic that changes
                               no result. 0 (default): one branch per op. */
    const char *backend;    /* the device: NULL or "cpu" (default; the only one built
                               today) */
    int mtp;                /* 1: also bind the model's MTP block and hold its K/V rows
                               per slot (q36_mtp_eval); 0 (default): the trunk only */
    int n_keep;             /* room to keep the DeltaNet state after each of the first
                               n_keep rows of a pass (q36_engine_keep_states), for a
                               rollback without replay; 0 (default): none */
} q36_engine_opts;

/* A session's options are its private engine's (n_slots is ignored: 1). */
typedef q36_engine_opts q36_session_opts;

/* The defaults above. */
q36_engine_opts q36_engine_opts_default(void);
/* The mode o asks for, with the default (-1) resolved: 1 fast, 0 exact. */
int q36_opts_fast(const q36_engine_opts *o);
q36_session_opts q36_session_opts_default(void);

/* What an engine of n_slots slots of n_ctx positions needs, in bytes. */
typedef struct q36_mem_plan {
    uint64_t weights;       /* the mapped tensor data (not allocated) */
    uint64_t kv;            /* K/V cache, all attention layers, all slots, n_ctx positions */
    uint64_t kv_per_token;  /* of one slot */
    uint64_t recurrent;     /* conv tails + DeltaNet state matrices, all slots */
    uint64_t scratch;       /* activations for n_batch rows + logits + the backend's own */
    uint64_t backend;       /* the backend's part of scratch (per-thread buffers) */
    uint64_t total;         /* kv + recurrent + scratch (weights are mapped) */
} q36_mem_plan;

int q36_engine_plan(const q36_model *m, int n_ctx, const q36_engine_opts *opts,
                    q36_mem_plan *out, q36_err *err);
/* MemAvailable of the machine now, in bytes (UINT64_MAX when unknown): what
 * plans are checked against when opts.max_bytes is 0. */
uint64_t q36_mem_available(void);

/* opts may be NULL for the defaults. n_ctx in [1, 2^24] positions per slot.
 * Every slot starts empty (position 0). */
int  q36_engine_new(const q36_model *m, int n_ctx, const q36_engine_opts *opts,
                    q36_engine **out, q36_err *err);
void q36_engine_free(q36_engine *e);                         /* accepts NULL */

int q36_engine_n_slots(const q36_engine *e);
int q36_engine_n_ctx(const q36_engine *e);
int q36_engine_n_vocab(const q36_engine *e);
int q36_engine_n_embd(const q36_engine *e);
int q36_engine_n_batch(const q36_engine *e);                 /* rows per pass at most */

/* What the engine's backend queued on its device since the engine was made
 * (all zero on the CPU): kernels and copies launched one at a time,
 * recorded passes replayed (CUDA graphs, Q36_CUDA_GRAPHS=1: one launch
 * each) and the kernels and copies those ran, passes recorded. The
 * difference of two readings over n decode steps, divided by n, is what a
 * step launches (q36 bench -ngl reports it). */
typedef struct q36_backend_stats {
    uint64_t launches, graph_launches, graph_nodes, graphs_recorded;
} q36_backend_stats;
void q36_engine_backend_stats(const q36_engine *e, q36_backend_stats *out);

/* One forward pass. Row i is token id[i] of slot slot[i] at position
 * pos[i]. A slot's rows are consecutive in the batch, at consecutive
 * positions starting at the slot's current position (q36_slot_pos); the
 * pass advances each slot's position by its rows. n in [1, n_batch].
 * out[0..n_out) lists the rows whose results come back, in that order:
 * logits gets n_out rows of n_vocab floats, hidden (may be NULL) n_out rows
 * of n_embd floats, the residual stream after the last layer, before the
 * final norm (what an MTP head reads). Errors (nothing is evaluated then
 * and no slot changes): an id outside the vocabulary, a slot or position
 * out of range or out of order, n or an out row out of range. A failure
 * inside the pass (a device error, reported by the backend) leaves the
 * positions as they were but the state of the batch's slots undefined:
 * reset them or load a checkpoint. */
typedef struct q36_batch {
    int            n;
    const int32_t *id, *slot, *pos;
    int            n_out;
    const int32_t *out;
} q36_batch;
int q36_engine_eval(q36_engine *e, const q36_batch *b, float *logits, float *hidden,
                    q36_err *err);
/* The same pass, with the hidden rows of another list: hidden gets n_hid
 * rows of n_embd, rows hid[0..n_hid) of the batch (in range, any order),
 * and logits the rows b->out as above. An MTP head's catch-up needs the
 * hidden rows of a whole prompt chunk but the logits of its last row only. */
int q36_engine_eval_hid(q36_engine *e, const q36_batch *b, float *logits, const int32_t *hid,
                        int n_hid, float *hidden, q36_err *err);
/* The same pass returning, instead of each asked-for row's logits, the id
 * of its largest logit (ids: b->n_out entries; the lowest id on ties, as
 * the greedy sampler chooses): chosen on the device, so that one id a row
 * comes back instead of n_vocab floats. */
int q36_engine_eval_argmax(q36_engine *e, const q36_batch *b, int32_t *ids, float *hidden,
                           q36_err *err);
/* q36_engine_eval_hid with the ids of q36_engine_eval_argmax instead of
 * logits (the server's passes whose every row is sampled greedily). */
int q36_engine_eval_hid_argmax(q36_engine *e, const q36_batch *b, int32_t *ids,
                               const int32_t *hid, int n_hid, float *hidden, q36_err *err);
/* q36_engine_eval_hid returning, instead of each asked-for row's logits,
 * its k best (1 <= k <= Q36_TOPK_MAX): ids and vals hold b->n_out rows of
 * k, the largest logit first, the lower id among equal ones; NaN never
 * chosen; a row with fewer than k other logits ends with id -1 and -inf.
 * Chosen on the device: k pairs a row come back instead of n_vocab floats
 * (a row sampled with top_k, smp_sample_top). The argmax ban does not
 * apply here: the caller skips those ids among the candidates. */
#define Q36_TOPK_MAX 64
int q36_engine_eval_hid_topk(q36_engine *e, const q36_batch *b, int k, int32_t *ids, float *vals,
                             const int32_t *hid, int n_hid, float *hidden, q36_err *err);
/* The greedy choices of the ids passes above skip ids[0..n) (n = 0: none)
 * from now on, as a sampler with those logits at -inf chooses: a row whose
 * largest logit is a banned id is chosen again on the host from that row's
 * logits, read back after the pass (the end-of-generation ids of a request
 * with ignore_eos come back as one id a row, and a row's logits only when
 * it would have ended). A pass with a ban must ask for rows that
 * q36_engine_argmax_ban_fits (one consecutive run the head takes at once,
 * so that every row's logits are still there after it); others are
 * refused. Q36_E_ARG for an id outside the vocabulary or more than 64 ids. */
int  q36_engine_argmax_ban(q36_engine *e, const int32_t *ids, int n, q36_err *err);
int  q36_engine_argmax_ban_fits(const q36_engine *e, const q36_batch *b);   /* 1 or 0 */

int  q36_slot_pos(const q36_engine *e, int slot);
/* Back to position 0 with zero state. */
void q36_slot_reset(q36_engine *e, int slot);

/* --------------------------------------------------------------------- MTP
 *
 * The multi-token-prediction block (MODEL.md §5) of an engine made with
 * opts.mtp = 1 on a model that has one: from the embedding of token x at
 * position p and a hidden row h of position p-1, it predicts the token at
 * p+1. It is a gated-attention layer with its own K/V rows per slot: MTP
 * row p of a slot holds the block's K/V for (x_p, h_{p-1}); rows below a
 * pass's first position are read, rows above it are never read, so
 * rejected drafts need no rollback beyond starting the next pass lower.
 *
 * q36_mtp_eval: row i is token id[i] of slot slot[i] at MTP position
 * pos[i], paired with h[i*n_embd ..]: with h_src Q36_MTP_H_TRUNK, a hidden
 * row as q36_engine_eval returns it (before the final norm; the pass
 * applies output_norm, so it reads what llama.cpp's h_nextn holds); with
 * Q36_MTP_H_MTP, a hidden row as this function returns it (before
 * shared_head_norm, which the pass applies). A zero row stands for "no
 * hidden state" (position 0, as llama.cpp pairs it). A slot's rows are
 * consecutive, at consecutive positions, the first at most the slot's MTP
 * position (q36_mtp_pos: one past the last MTP row written); the pass sets
 * it to one past its last row. logits (n_out rows of n_vocab) and hidden
 * (n_out rows of n_embd, before shared_head_norm; may be NULL) for the rows
 * listed in b->out. Errors like q36_engine_eval's; Q36_E_ARG when the
 * engine holds no MTP block. */
enum q36_mtp_h { Q36_MTP_H_TRUNK = 0, Q36_MTP_H_MTP = 1 };
int q36_engine_has_mtp(const q36_engine *e);
int q36_mtp_eval(q36_engine *e, const q36_batch *b, const float *h, enum q36_mtp_h h_src,
                 float *logits, float *hidden, q36_err *err);
/* q36_mtp_eval returning, instead of each asked-for row's logits, the
 * column of its largest logit (ids: n_out entries; the lowest column on
 * ties, as a scan of the row in order keeps the first value above every
 * one before it): the greedy draft, chosen on the device, so that one id a
 * row comes back instead of n_vocab (or the draft vocabulary's) floats. */
int q36_mtp_eval_argmax(q36_engine *e, const q36_batch *b, const float *h,
                        enum q36_mtp_h h_src, int32_t *ids, float *hidden, q36_err *err);
/* k greedy drafts in a row for each asked-for row of b (n_out of them, in
 * n_out different slots): the pass of b, then k - 1 passes of one row a
 * slot, each row in its asked-for row's slot at the next position, fed the
 * previous pass's argmax and hidden row on the device (as
 * q36_mtp_eval_argmax's caller would feed them back: the same drafts); ids
 * gets the k x n_out argmax columns (draft-vocabulary columns when one is
 * set), draft i of asked-for row j at ids[i * n_out + j], read back once.
 * Q36_E_ARG for two asked-for rows of one slot, or k x n_out outside [1,
 * the engine's argmax rows]. */
int q36_mtp_eval_chain(q36_engine *e, const q36_batch *b, const float *h, enum q36_mtp_h h_src,
                       int k, int32_t *ids, q36_err *err);
/* Whether q36_mtp_eval_chain takes n_out asked-for rows and k drafts. */
int q36_mtp_chain_fits(const q36_engine *e, int n_out, int k);
int q36_mtp_pos(const q36_engine *e, int slot);
/* A draft vocabulary: the MTP head restricted to at most n ids, the lowest
 * ids whose head row is not all zero (BPE ids follow merge order, so the
 * frequent tokens come first; a trained model's unused ids have zero rows).
 * q36_mtp_eval's logits then have q36_mtp_vocab(e, &ids) columns, column j
 * for id ids[j]. A draft is only a guess: the verify pass decides, so this
 * changes speed and acceptance, never the output. n = 0: the full head (as
 * llama.cpp drafts); Q36_DRAFT_VOCAB_AUTO (the tools' default): the full
 * head where the backend chooses a greedy token from it cheaply (a GPU, or
 * a CPU's int8 screen of a Q8_0 head: AVX-512 VNNI), else
 * Q36_DRAFT_VOCAB_SMALL ids, where each draft would cost about a plain
 * step's head (measured on an AVX2-only Zen 3, the default model: MTP
 * 0.87x plain decoding with the full head, no acceptance lost at 16,384 ids
 * on the code and prose prompts of bench/results/2026-12-01-mtp/; record
 * bench/results/2026-12-07-cpu-zen3-mtp/; 8,192 ids since session 46: a
 * fifth less drafting time a round for 0.899 of drafts kept on the code
 * prompt against 0.917, the same on the prose one; record
 * bench/results/2026-12-07-cpu-draft-vocab-zen3/). Once per engine; the
 * copy of those rows (n x the head's row bytes), and of the MTP
 * embedding's rows of the same ids (n x its row bytes:
 * q36_mtp_eval_chain's drafts look up by column), is allocated here,
 * outside the plan, and freed with the engine. (A CPU with AVX-512 VNNI
 * also makes the greedy screen's copy of a Q8_0 draft head at its first
 * draft, about 1.06 x those rows' bytes: src/backend/cpu/cpu_head.c.) */
#define Q36_DRAFT_VOCAB_AUTO  (-1)
#define Q36_DRAFT_VOCAB_SMALL 8192
int q36_mtp_draft_vocab(q36_engine *e, int n, q36_err *err);
int q36_mtp_vocab(const q36_engine *e, const int32_t **ids);

/* --------------------------------------------------- kept per-row states
 *
 * A rollback without replay (speculative decoding): q36_engine_keep_states
 * asks the next q36_engine_eval, whose batch must be that slot's rows
 * alone, at most opts.n_keep of them, to keep the slot's DeltaNet state and
 * conv tail after each row (the delta rule and the conv then run row by row
 * on the device, the same bits). q36_slot_rewind(e, slot, rows) then makes
 * the slot what it was after the first `rows` rows of that pass: their
 * state, position pass start + rows (K/V rows above are never read).
 * Valid until the slot's next pass. Q36_E_ARG when nothing was kept for the
 * slot or rows is outside [1, the pass's rows]. */
int q36_engine_keep_states(q36_engine *e, int slot, q36_err *err);
int q36_slot_rewind(q36_engine *e, int slot, int rows, q36_err *err);

/* ------------------------------------------------------------- checkpoints
 *
 * A checkpoint is a copy of one slot's recurrent state (conv tails, DeltaNet
 * matrices) and position, and, when made with kv_rows > 0, of its first
 * kv_rows K/V rows, held on the engine's device: saving and loading copy on
 * the device, with no trip through the host (the prefix cache and
 * speculative-decoding rollback are built on this). A checkpoint with K/V
 * rows (kv_rows >= its position when saved) restores them too, into any
 * slot. One without (kv_rows 0: small, for rollback) trusts the slot's own
 * K/V rows below its position: it loads only into the slot it was saved
 * from, and is right while those rows are untouched (rows past a slot's
 * position are never read, so rolling back after a verify pass is). A
 * checkpoint belongs to its engine and is freed before it. */
typedef struct q36_ckpt q36_ckpt;
int  q36_ckpt_new(q36_engine *e, int kv_rows, q36_ckpt **out, q36_err *err);
/* Device bytes a checkpoint with kv_rows K/V rows takes (for the caller's
 * memory budget: checkpoints are not in the engine's plan). */
uint64_t q36_ckpt_bytes(const q36_engine *e, int kv_rows);
void q36_ckpt_free(q36_ckpt *c);                             /* accepts NULL */
int  q36_ckpt_pos(const q36_ckpt *c);
int  q36_slot_save(q36_engine *e, int slot, q36_ckpt *c, q36_err *err);
int  q36_slot_load(q36_engine *e, int slot, const q36_ckpt *c, q36_err *err);
/* Loads only the recurrent state (conv tails, DeltaNet matrices) and the
 * position of c, into any slot, and leaves the slot's K/V rows as they are:
 * the caller vouches that the slot's K/V rows [0, q36_ckpt_pos(c)) are
 * those of the tokens c was saved after (a prefix cache that has just
 * loaded a deeper checkpoint with K/V rows of the same tokens: exact mode
 * makes those rows the same bits). */
int  q36_slot_load_state(q36_engine *e, int slot, const q36_ckpt *c, q36_err *err);
/* Slot dst becomes a copy of slot src (K/V rows [0, pos), tails, state
 * matrices, position), on the device: a fork of a sequence. */
int  q36_slot_copy(q36_engine *e, int src, int dst, q36_err *err);
/* A checkpoint's bytes on the host, for a file: q36_ckpt_bytes(e, K/V rows
 * it was made with) bytes into dst; and back into a checkpoint made with
 * the same K/V rows on an engine of the same model and options, as saved
 * after pos tokens (then it loads like one saved there, but not as a whole
 * into a slot when it holds no K/V rows: q36_slot_load_state only). */
int  q36_ckpt_get(q36_engine *e, const q36_ckpt *c, void *dst, q36_err *err);
int  q36_ckpt_put(q36_engine *e, q36_ckpt *c, int pos, const void *src, q36_err *err);

/* ----------------------------------------------- checkpoints inside a pass
 *
 * q36_engine_save_at(e, slot, pos, c) asks the next q36_engine_eval to save
 * into c the state of `slot` after its first pos tokens, what q36_slot_save
 * would save had a pass ended there: the conv tails and DeltaNet matrices
 * after the slot's row at position pos - 1 and, when c holds K/V rows (made
 * with kv_rows >= pos), the slot's K/V rows [0, pos). pos must follow one
 * of the slot's rows in that pass: slot position < pos <= slot position +
 * its rows. So a prompt runs in passes of n_batch rows and still leaves a
 * checkpoint every C tokens (the server's prefix cache). The DeltaNet conv
 * and delta rule of such a slot run in pieces that end at the positions
 * asked for, the other ops on the whole pass: in exact mode every logit
 * and every checkpoint has the bits of passes that end there; in fast
 * mode, the bits of those passes. At most Q36_MAX_SAVES requests, each for
 * a distinct checkpoint and position. The requests are for the next
 * q36_engine_eval call only, whatever it returns: a request that does not
 * fit its batch refuses it (Q36_E_ARG, nothing evaluated); a pass that
 * fails leaves its checkpoints unsaved (q36_ckpt_pos -1). Q36_E_ARG here
 * for a slot, position or checkpoint out of range (K/V rows below pos) or
 * one request too many; every request asked for the next pass is forgotten
 * then. */
#define Q36_MAX_SAVES 64
int q36_engine_save_at(q36_engine *e, int slot, int pos, q36_ckpt *c, q36_err *err);

/* ---------------------------------------------------------------- sessions
 *
 * A session is a handle on one slot: appends are split into passes of
 * n_batch rows of that slot alone. q36_session_new makes a one-slot
 * engine that the session owns; q36_session_open makes a handle on a slot
 * of an engine the caller keeps (free the sessions first). */

typedef struct q36_session q36_session;

int q36_session_plan(const q36_model *m, int n_ctx, const q36_session_opts *opts,
                     q36_mem_plan *out, q36_err *err);

/* opts may be NULL for the defaults. n_ctx in [1, 2^24]. */
int  q36_session_new(const q36_model *m, int n_ctx, const q36_session_opts *opts,
                     q36_session **out, q36_err *err);
int  q36_session_open(q36_engine *e, int slot, q36_session **out, q36_err *err);
void q36_session_free(q36_session *s);                       /* accepts NULL */
q36_engine *q36_session_engine(const q36_session *s);
int  q36_session_slot(const q36_session *s);

/* Which logits q36_session_append writes. */
enum q36_logits { Q36_LOGITS_NONE = 0, Q36_LOGITS_LAST = 1, Q36_LOGITS_ALL = 2 };

/* Evaluates n tokens at positions pos, pos+1, ... and advances pos by n.
 * logits (n_vocab floats per row, row-major) receives the last row
 * (Q36_LOGITS_LAST), every row (Q36_LOGITS_ALL: n rows) or nothing (may be
 * NULL). Errors: a token id outside the vocabulary, or pos + n > n_ctx
 * (nothing is evaluated then and the state is unchanged). */
int q36_session_append(q36_session *s, const int32_t *ids, int n, float *logits,
                       enum q36_logits which, q36_err *err);
/* One token; logits gets n_vocab floats. */
int q36_session_decode(q36_session *s, int32_t id, float *logits, q36_err *err);
/* One token; *next gets the id of the largest logit of its row (the lowest
 * on ties: greedy decoding's choice, made on the device) instead of the
 * logits (q36_engine_eval_argmax). */
int q36_session_decode_argmax(q36_session *s, int32_t id, int32_t *next, q36_err *err);
/* One token; ids and vals get the k best logits of its row (1 <= k <=
 * Q36_TOPK_MAX; q36_engine_eval_hid_topk's order and rules) instead of the
 * logits: what a sampler with top_k needs (smp_sample_top). */
int q36_session_decode_topk(q36_session *s, int32_t id, int k, int32_t *ids, float *vals,
                            q36_err *err);

int q36_session_pos(const q36_session *s);
int q36_session_n_ctx(const q36_session *s);
int q36_session_n_vocab(const q36_session *s);
/* Back to position 0 with zero state. */
void q36_session_reset(q36_session *s);

/* Snapshots, for disk: the slot's whole state (K/V rows [0, pos), conv
 * tails, DeltaNet matrices, the position) as one self-describing byte
 * string. q36_session_state_size gives its size at the current position;
 * q36_session_snapshot writes it into buf (cap bytes; Q36_E_ARG if too
 * small); q36_session_restore loads one written by a session of the same
 * model and K/V types (n_ctx may differ if pos fits) and checks it. */
uint64_t q36_session_state_size(const q36_session *s);
int q36_session_snapshot(const q36_session *s, void *buf, uint64_t cap, uint64_t *written,
                         q36_err *err);
int q36_session_restore(q36_session *s, const void *buf, uint64_t n, q36_err *err);

/* Profile of the engine of a session made with opts.profile = 1: wall time
 * and calls per backend op family (matmuls by weight type) and per layer
 * kind, summed over every forward pass since the last reset, with the forward calls'
 * own wall time; what the ops do not account for is forward_ms minus their
 * sum (the model layer's own work, views, the clock itself). */
#define Q36_PROFILE_MAX_OPS 128
#define Q36_PROFILE_MAX_LAYERS 8
typedef struct q36_profile_row {
    char     name[32];      /* "matmul q4_K", "attention", ...; "deltanet" for a layer kind */
    uint64_t calls;         /* op calls */
    double   ms;            /* wall time, milliseconds */
} q36_profile_row;
typedef struct q36_profile {
    int n_ops;                                  /* op rows with calls, most time first */
    q36_profile_row op[Q36_PROFILE_MAX_OPS];
    int n_layers;                               /* layer kinds, in a fixed order */
    q36_profile_row layer[Q36_PROFILE_MAX_LAYERS];
    double   forward_ms;                        /* wall time of the forward calls */
    uint64_t forwards;                          /* forward calls (one per n_batch slice) */
    uint64_t tokens;                            /* tokens they evaluated */
} q36_profile;

/* *out: the table since the session began or since the last reset; owned by
 * the session, valid until the next call of either function or its free.
 * Q36_E_ARG when the session was made without opts.profile. */
int  q36_session_profile(q36_session *s, const q36_profile **out, q36_err *err);
void q36_session_profile_reset(q36_session *s);
/* The same for an engine made with opts.profile = 1 (several slots). */
int  q36_engine_profile(q36_engine *e, const q36_profile **out, q36_err *err);
void q36_engine_profile_reset(q36_engine *e);

#endif
