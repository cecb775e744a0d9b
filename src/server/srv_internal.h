/* srv_internal.h: what the server's files share: a growable buffer, the
 * per-request error (first error wins) and the JSON field cursor, the job
 * that carries one request between an HTTP thread and the engine thread,
 * metrics, the connection, and the route handlers.
 *
 * Nothing a request contains is ever used as a format string, a path or a
 * command: request text reaches output only as a %s argument or through
 * cJSON, which escapes it.
 */
#ifndef Q36_SRV_INTERNAL_H
#define Q36_SRV_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "srv.h"
#include "../gen/gen.h"
#include "../util/buf.h"
#include "../tokenizer/tok.h"

/* ---- text building: q36_buf (util/buf.h) plus two server helpers ---------------------- */

/* fmt is always a literal of ours; request text only as arguments. */
void srv_buf_fmt(q36_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends cJSON_PrintUnformatted(v). */
void srv_buf_json(q36_buf *b, const cJSON *v);

/* ---- the per-request error: the first one wins ---------------------------------------- */

/* API flavour of error bodies. */
enum srv_flavour { SRV_OPENAI = 0, SRV_ANTHROPIC = 1 };

typedef struct srv_error {
    int  status;           /* 0: no error */
    const char *type;      /* "invalid_request_error", "not_found_error", ... */
    char param[96];        /* the field path ("messages[2].content"), or "" */
    char msg[600];
    int  n_prompt, n_ctx;  /* for a prompt over the context, both numbers */
} srv_error;

/* Sets e unless already set; returns the status. */
int srv_fail(srv_error *e, int status, const char *type, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The error as a JSON body of the flavour. */
cJSON *srv_error_json(const srv_error *e, enum srv_flavour f);

/* ---- the JSON field cursor -------------------------------------------------------------- */

enum { RQ_STR = 1, RQ_NUM = 2, RQ_BOOL = 4, RQ_OBJ = 8, RQ_ARR = 16, RQ_NULL = 32 };

/* obj[key] when its type is in `types`; NULL when absent (an error if
 * required) or of another type (an error naming path.key, the types
 * expected and the type found). obj may be NULL (then absent). */
const cJSON *rq_get(srv_error *e, const cJSON *obj, const char *path, const char *key,
                    unsigned types, bool required);
/* Typed helpers; leave *out unchanged when absent. A number must be finite and
 * in [lo, hi]; an integer also whole. */
void rq_num(srv_error *e, const cJSON *obj, const char *path, const char *key, double lo,
            double hi, double *out);
void rq_int(srv_error *e, const cJSON *obj, const char *path, const char *key, double lo,
            double hi, int *out);
void rq_bool(srv_error *e, const cJSON *obj, const char *path, const char *key, bool *out);
/* Parses a request body; a body that is not a JSON object is a 400 naming the byte. */
cJSON *rq_parse(srv_error *e, const char *body, size_t n);
/* A type's name for messages ("a string", "a number", ...). */
const char *rq_type_name(const cJSON *v);

/* ---- metrics --------------------------------------------------------------------------------- */

typedef struct srv_metrics {
    pthread_mutex_t mu;
    uint64_t prompt_tokens, tokens_predicted, n_decode, requests, errors, cancelled;
    uint64_t prompt_tokens_cached;          /* restored from the prefix cache */
    uint64_t cache_bytes, cache_budget, cache_saves, cache_evictions, cache_thinned, cache_hits, cache_lookups;
    int      cache_ckpts;                   /* the prefix cache, as of the last step */
    double   prompt_seconds, predicted_seconds;
    /* the engine thread's steps (sched.c): wall time from admission to the
     * step's end, the forward passes in it, the MTP draft passes in it,
     * the verify rows' acceptance (sampling, rollback, publishing); what
     * is left is the rest (admission, plain sampling, scheduling) */
    double   step_seconds, forward_seconds, draft_seconds, accept_seconds;
    /* the engine's device queue as of the last step (q36_backend_stats):
     * kernels and copies launched one by one, recorded passes launched */
    uint64_t dev_launches, dev_graph_launches, dev_graphs_recorded;
    /* output rows returned as one id, as their best logits, as rows */
    uint64_t rows_ids, rows_top, rows_full;
    int      processing, deferred, busy_slots_last;
    uint64_t n_tokens_max;
} srv_metrics;

/* ---- a job: one request's generation ------------------------------------------------------ */

typedef struct srv_tok {
    int32_t  id;
    uint32_t off, len;                  /* its released text in job->text (may be empty) */
    float    logprob;
    int      n_top;
    gen_prob top[GEN_MAX_PROBS];
} srv_tok;

typedef struct srv_job {
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    int             refs;               /* under mu; freed at 0 */
    uint64_t        id;
    /* Input: written by the HTTP thread before sched_submit, read-only after. */
    int32_t        *prompt;
    int             n_prompt;
    gen_params      gp;
    char           *stop_store[GEN_MAX_STOP];
    int             call_stop;          /* index in gp.stop of "</tool_call>" when only one
                                           tool call is allowed; -1 otherwise */
    /* Output: written by the engine thread under mu. */
    q36_buf         text;               /* released text, in order */
    srv_tok        *toks;               /* per token when gp.n_probs >= 0 */
    int             n_toks, cap_toks;
    int             n_gen;
    int             n_cached;           /* prompt tokens restored from the prefix cache */
    int             slot;               /* -1 until started */
    bool            done;
    enum gen_stop   stop;
    int             stop_word;
    srv_error       fail;               /* status != 0: the slot failed */
    double          t_submit, t_start, t_first, t_end;
    atomic_int      cancel;             /* set by the HTTP side: the client is gone */
} srv_job;

srv_job *srv_job_new(void);
void     srv_job_ref(srv_job *j);
void     srv_job_unref(srv_job *j);           /* accepts NULL */

/* What an HTTP thread takes from its job: the output published since its
 * last look (text, and tokens when log-probabilities were asked), and the
 * state. Zero-initialise; srv_take_free. */
typedef struct srv_take {
    size_t    seen_text;        /* cursors into the job's output */
    int       seen_toks;
    q36_buf   text;             /* new text */
    srv_tok  *toks;             /* new tokens (off relative to text) */
    int       n_toks;
    int       n_gen;            /* tokens generated so far */
    int       n_cached;         /* prompt tokens restored from the prefix cache */
    bool      started;          /* in a slot: n_cached is known */
    bool      done;
    enum gen_stop stop;
    int       stop_word;
    srv_error fail;
    double    t_prompt, t_gen;  /* seconds */
} srv_take;

/* Takes the new output; false when out of memory. */
bool srv_job_take(srv_job *j, srv_take *t);
void srv_take_free(srv_take *t);

/* ---- SSE (sse.c) -------------------------------------------------------------------------- */

/* "data: JSON\n\n" (takes v). */
void sse_data(q36_buf *out, cJSON *v);
/* "event: NAME\ndata: JSON\n\n" (takes v). */
void sse_event(q36_buf *out, const char *name, cJSON *v);

/* ---- the scheduler (sched.c) -------------------------------------------------------------- */

typedef struct sched sched;

int  sched_new(const q36_model *m, const tok_vocab *tok, const srv_opts *o, int n_ctx,
               srv_metrics *met, sched **out, q36_err *err);
/* Ends every running and queued job (done, GEN_STOP_USER) and stops the
 * engine thread; later submits get 503. sched_free does it too. */
void sched_stop(sched *s);
void sched_free(sched *s);
/* Queues j (takes a reference). 0, or 503 when the queue is full (e set). */
int  sched_submit(sched *s, srv_job *j, srv_error *e);
int  sched_n_ctx(const sched *s);
int  sched_n_slots(const sched *s);
/* One line: the memory plan of the engine and the prefix cache. */
const char *sched_plan_text(const sched *s);

/* [{id, state, n_ctx, n_past, task}] for GET /slots. */
cJSON *sched_slots_json(sched *s);
/* The drafts of every slot together (--spec-type draft-mtp) for /monitor;
 * NULL when the server does not draft. */
cJSON *sched_spec_json(sched *s);

/* ---- the server and its connections ------------------------------------------------------- */

struct srv {
    srv_opts     o;
    char         url[160];
    int          port;
    char         model_id[256];
    q36_model   *model;
    tok_vocab   *tok;
    int          n_ctx;
    sched       *sched;
    srv_metrics  met;
    struct MHD_Daemon *mhd;
    char        *api_key;
    atomic_ullong next_id;
    double       t_start;
    /* The jobs of open connections (a reference each), for GET /monitor. */
    pthread_mutex_t live_mu;
    srv_job    **live;
    int          n_live, cap_live;
};

typedef struct srv_conn srv_conn;

/* Fills `out` with the next SSE bytes of a stream (after draining the job);
 * returns true when the stream is complete. Runs on the connection's thread. */
typedef bool (*srv_fill_fn)(srv_conn *c, q36_buf *out);

struct srv_conn {
    srv         *s;
    struct MHD_Connection *mc;
    const char  *method, *url;
    q36_buf      body;
    bool         body_too_big;
    enum srv_flavour flavour;
    const char  *route;              /* the matched path (a literal of ours), or NULL */
    int          status;             /* of the response queued */
    double       t_start;
    /* streaming */
    srv_job     *job;
    void        *state;              /* the route's, freed by free_state */
    void       (*free_state)(void *);
    srv_fill_fn  fill;
    const char  *ping;               /* the SSE keep-alive line of the flavour */
    q36_buf      out;
    size_t       out_pos;
    bool         finished;
    double       last_send;
};

double srv_now(void);
/* Whether the client has closed its side of the connection. */
bool   srv_client_gone(srv_conn *c);
/* Waits until the job is done (true) or the client is gone (false: the job is
 * cancelled). */
bool   srv_job_wait(srv_conn *c, srv_job *j);
/* Waits until the job has output past (text_len, n_gen) or is done; false
 * when the client is gone (job cancelled). */
/* -1 until the job starts in a slot, then its tokens generated: progress
 * that srv_job_wait_more waits for (under j->mu). */
int    srv_job_mark(const srv_job *j);
bool   srv_job_wait_more(srv_conn *c, srv_job *j, size_t text_len, int mark, int timeout_ms);

/* Responses (return an MHD_Result as int). */
int srv_reply_json(srv_conn *c, int status, cJSON *body);          /* takes body */
int srv_reply_text(srv_conn *c, int status, const char *ctype, const char *text, size_t n);
int srv_reply_error(srv_conn *c, const srv_error *e);
/* Starts an SSE response driven by c->fill on c->job. */
int srv_reply_stream(srv_conn *c);

/* A unique id with a prefix: "chatcmpl-<hex>", "call_<24 hex>", ... */
void srv_make_id(srv *s, const char *prefix, char *out, size_t cap);

/* ---- request to prompt (prompt.c) --------------------------------------------------------- */

typedef struct srv_prompt {
    cJSON  *messages;        /* normalized: one leading system turn at most */
    cJSON  *tools;           /* OpenAI-style function tools, or NULL */
    int     enable_thinking; /* -1 default (on), 0, 1 */
    bool    preserve_thinking; /* chat_template_kwargs.preserve_thinking (default true: past
                                  reasoning stays in the prompt, so the next turn's prompt
                                  extends this one's tokens and the prefix cache holds) */
    bool    parse_tools;     /* tool_choice != none and tools given */
    char    forced_tool[128];/* named tool_choice: its name; "" otherwise */
    char    prefix[160];     /* what the prompt ends with of the reply (a forced call's
                                start); the output parser reads it before the output */
    bool    require_tool;    /* tool_choice required / any */
    bool    single_call;     /* parallel_tool_calls false / disable_parallel_tool_use */
    char   *text;            /* the rendered prompt */
    size_t  len;
    int32_t *ids;
    int     n_ids;
    bool    in_thinking;     /* the prompt ends inside <think> */
} srv_prompt;

void srv_prompt_free(srv_prompt *p);
/* Appends the text of a content (a string, or parts of type text,
 * input_text, output_text, summary_text, reasoning_text) to b; any other
 * part (images, audio, documents) is a 400 naming it at `path`. */
void srv_content_text(srv_error *e, const cJSON *content, const char *path, q36_buf *b);
/* OpenAI chat body -> p (messages, tools, tool_choice, reasoning flags). */
void srv_prompt_openai(srv_error *e, const cJSON *body, srv_prompt *p);
/* Anthropic messages body -> p. */
void srv_prompt_anthropic(srv_error *e, const cJSON *body, srv_prompt *p);
/* Renders p->messages with the template and, when tok is not NULL,
 * tokenizes; a template refusal is a 400 with its text. */
void srv_prompt_render(srv_error *e, const tok_vocab *tok, srv_prompt *p);

/* ---- request fields shared by the generation routes (gen_req.c) -------------------------- */

/* Reads sampling and limit fields into gp: temperature, top_p, top_k, min_p,
 * seed, presence/frequency/repeat penalties, stop (or stop_sequences), the
 * token limit (max_tokens / max_completion_tokens / n_predict). The stop
 * strings are copied into j->stop_store. */
void srv_gen_fields(srv_error *e, srv *s, const cJSON *body, srv_job *j, enum srv_flavour f);
/* Checks "model" against the served names; 404 when unknown. */
void srv_check_model(srv_error *e, srv *s, const cJSON *body, bool required);
/* One tool call at most: generation stops at the first "</tool_call>"
 * (when a stop string is still free). */
void srv_single_call(srv_job *j, const srv_prompt *p);
/* The context check (400 with both numbers) and the token limit clamp. */
void srv_fit_context(srv_error *e, srv *s, srv_job *j);

/* ---- starting a generating route's job (route_job.c) ----------------------------------- */

typedef struct chat_stream chat_stream;

typedef struct srv_route_job {
    srv_job      *job;
    srv_prompt   *pr;            /* its ids move into the job; NULL when they are there */
    chat_stream **cs;            /* the output parser to make from pr, or NULL */
    void         *state;         /* the route's, owned by the connection from here */
    void        (*free_state)(void *);
    bool          stream;
    srv_fill_fn   fill;          /* streaming: the route's SSE writer and keep-alive */
    const char   *ping;
    srv_take     *take;          /* not streaming: receives the whole output */
} srv_route_job;

/* Checks, queues and starts rj->job. Returns 1 when the job is done and its
 * output taken (the route builds the reply); 0 when a response is already
 * queued or the client is gone (*rc is the MHD result). On an error it
 * replies, frees the state and drops the job. */
int srv_route_start(srv_conn *c, srv_error *e, const srv_route_job *rj, int *rc);
/* A JSON string of t[0..n). */
cJSON *srv_json_str_n(const char *t, size_t n);

/* ---- routes ------------------------------------------------------------------------------- */

int route_chat_completions(srv_conn *c);
int route_completions(srv_conn *c);
int route_models(srv_conn *c);
int route_messages(srv_conn *c);
int route_count_tokens(srv_conn *c);
int route_responses(srv_conn *c);
int route_health(srv_conn *c);
int route_metrics(srv_conn *c);
int route_slots(srv_conn *c);
int route_tokenize(srv_conn *c);
int route_detokenize(srv_conn *c);
int route_apply_template(srv_conn *c);
/* The embedded page (page.c) and its monitor's data (monitor.c). */
int route_page(srv_conn *c);
int route_page_js(srv_conn *c);
int route_page_css(srv_conn *c);
int route_monitor(srv_conn *c);

/* ---- live jobs (monitor.c): a queued job is added, and removed when its
 * connection ends; each entry holds a reference. ------------------------------------------- */

void srv_live_add(srv *s, srv_job *j);
void srv_live_remove(srv *s, srv_job *j);     /* a job not in the list is ignored */

#endif
