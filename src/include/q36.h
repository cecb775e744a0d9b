/* q36.h: the public engine API of q36.
 *
 * An engine program opens a model file once (q36_model_open) and asks it
 * questions; later versions add sessions (one sequence each: its KV cache and
 * DeltaNet state), decoding and sampling on top of the same handle.
 *
 * Errors: every function that can fail returns 0 or a negative kind and fills
 * a q36_err (see util/err.h) with one line naming the file or field, what was
 * expected and what was found. Nothing here exits or prints.
 *
 * Threads: a q36_model is immutable after q36_model_open and may be shared by
 * any number of threads; q36_model_free must not race with other calls.
 */
#ifndef Q36_H
#define Q36_H

#include <stdint.h>

#include "../util/err.h"
#include "../gguf/gguf.h"
#include "../model/hparams.h"

#define Q36_VERSION "0.1.0"

typedef struct q36_model q36_model;

/* Maps `path` (weights stay in the mapping, never copied), validates the
 * GGUF and reads the geometry. *out is NULL on failure. */
int  q36_model_open(const char *path, q36_model **out, q36_err *err);
void q36_model_free(q36_model *m);                          /* accepts NULL */

/* Views valid until q36_model_free. */
const model_hparams *q36_model_hparams(const q36_model *m);
const gguf_file     *q36_model_gguf(const q36_model *m);

/* Elements of every tensor in the file (llama_model_n_params counts the same). */
uint64_t q36_model_n_params(const q36_model *m);
/* Bytes of tensor data. */
uint64_t q36_model_n_bytes(const q36_model *m);

/* ---------------------------------------------------------------- sessions
 *
 * A session is one sequence being evaluated: the K/V cache of the
 * full-attention layers, the conv tails and state matrices of the DeltaNet
 * layers, and the position (tokens seen). It holds a backend (today: the
 * CPU, with its worker threads) and scratch sized for `n_batch` tokens;
 * longer appends are split into batches of n_batch, which in exact mode
 * (the default) does not change any result: every op is batch-invariant,
 * so a prompt appended at once, in pieces or token by token gives the same
 * bits.
 *
 * All memory is computed and allocated by q36_session_new; a context that
 * does not fit is refused there with the numbers (q36_session_plan gives
 * them without allocating). Nothing allocates per token afterwards.
 *
 * Threads: a session belongs to one thread at a time; several sessions may
 * share one q36_model. */

typedef struct q36_session q36_session;

enum q36_kv_type { Q36_KV_F32 = 0, Q36_KV_F16 = 1 };

typedef struct q36_session_opts {
    int n_threads;          /* worker threads in total; 0 = all online CPUs (default 1) */
    int n_batch;            /* tokens per forward batch (default 512) */
    int type_k, type_v;     /* enum q36_kv_type (default F16, llama.cpp's default) */
    uint64_t max_bytes;     /* refuse plans above this; 0 = MemAvailable of the machine */
    int fast;               /* 0 (default) exact: llama.cpp's order of operations and
                               sums, every row's bits independent of the batch it is
                               in; 1 fast: prompt batches take the chunked DeltaNet
                               form (results move at float rounding level and depend
                               on how a prompt is split into appends) */
    int profile;            /* 1: time every backend op of every forward call into a
                               table (q36_session_profile); a diagnostic that changes
                               no result. 0 (default): one branch per op. */
} q36_session_opts;

/* The defaults above. */
q36_session_opts q36_session_opts_default(void);

/* What a session of n_ctx positions needs, in bytes. */
typedef struct q36_mem_plan {
    uint64_t weights;       /* the mapped tensor data (not allocated) */
    uint64_t kv;            /* K/V cache, all attention layers, n_ctx positions */
    uint64_t kv_per_token;
    uint64_t recurrent;     /* conv tails + DeltaNet state matrices */
    uint64_t scratch;       /* activations for n_batch tokens + logits */
    uint64_t total;         /* kv + recurrent + scratch (weights are mapped) */
} q36_mem_plan;

int q36_session_plan(const q36_model *m, int n_ctx, const q36_session_opts *opts,
                     q36_mem_plan *out, q36_err *err);

/* opts may be NULL for the defaults. n_ctx in [1, 2^24]. */
int  q36_session_new(const q36_model *m, int n_ctx, const q36_session_opts *opts,
                     q36_session **out, q36_err *err);
void q36_session_free(q36_session *s);                       /* accepts NULL */

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

int q36_session_pos(const q36_session *s);
int q36_session_n_ctx(const q36_session *s);
int q36_session_n_vocab(const q36_session *s);
/* Back to position 0 with zero state. */
void q36_session_reset(q36_session *s);

/* Snapshots: the whole state (K/V rows [0, pos), conv tails, DeltaNet
 * matrices, the position) as one self-describing byte string.
 * q36_session_state_size gives its size at the current position;
 * q36_session_snapshot writes it into buf (cap bytes; Q36_E_ARG if too
 * small); q36_session_restore loads one written by a session of the same
 * model and K/V types (n_ctx may differ if pos fits) and checks it. */
uint64_t q36_session_state_size(const q36_session *s);
int q36_session_snapshot(const q36_session *s, void *buf, uint64_t cap, uint64_t *written,
                         q36_err *err);
int q36_session_restore(q36_session *s, const void *buf, uint64_t n, q36_err *err);

/* Profile of a session made with opts.profile = 1: wall time and calls per
 * backend op family (matmuls by weight type) and per layer kind, summed
 * over every forward call since the last reset, with the forward calls'
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

#endif
