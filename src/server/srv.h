/* srv.h: `q36 serve`, the OpenAI- and Anthropic-compatible HTTP server, as a
 * library: start it on a model, ask its URL, stop it.
 *
 * Threads: libmicrohttpd runs one thread per connection; they parse and
 * check requests, render and tokenize prompts, queue jobs and format what
 * comes back. One engine thread (sched.h) owns every session and is the only
 * thread that evaluates the model. Nothing here exits or installs signal
 * handlers; the caller decides when to stop.
 */
#ifndef Q36_SRV_H
#define Q36_SRV_H

#include <stdint.h>

#include "../include/q36.h"

#define SRV_MAX_ALIASES 8

typedef struct srv_opts {
    const char *model_path;     /* the GGUF to serve */
    const char *host;           /* bind address (default 127.0.0.1) */
    int         port;           /* default 8080; 0: any free port (srv_port says which) */
    int         n_slots;        /* sequences decoded at once (default 4) */
    int         n_ctx;          /* context per slot; 0: training context capped at 4096 */
    q36_engine_opts sess;       /* the one engine: threads (default 0: every online CPU),
                                   rows per pass (n_batch), K/V types (n_slots is the field
                                   above) */
    int         n_ubatch;       /* prompt tokens of one slot per pass (default n_batch) */
    int64_t     cache_mib;      /* prefix cache budget in MiB (default 2048; 0: off) */
    int         cache_every;    /* save prompt states every this many tokens (default -1:
                                   64; 0: only at turns and ends) */
    const char *cache_dir;      /* NULL, or the prefix cache's folder: read at start,
                                   written at stop (pcache.h) */
    const char *api_key;        /* NULL: no key required */
    const char *aliases[SRV_MAX_ALIASES]; /* model names accepted besides the file's */
    int         n_aliases;
    uint64_t    max_body;       /* request body limit in bytes (default 8 MiB) */
    int         max_conn;       /* concurrent connections (default 256) */
    int         timeout_s;      /* idle connection timeout (default 600 s) */
    int         max_queue;      /* requests waiting for a slot before 503 (default 256) */
    int         max_tokens;     /* cap on generated tokens per request (default: the context) */
    int         spec_mtp;       /* --spec-type draft-mtp: every slot drafts with the MTP block */
    int         draft_max;      /* drafts per verify row at most (default 0: 3) */
    int         draft_vocab;    /* the draft head over this many ids (0: all; default
                                 * Q36_DRAFT_VOCAB_AUTO: q36_mtp_draft_vocab) */
} srv_opts;

typedef struct srv srv;

void srv_opts_default(srv_opts *o);

/* Loads the model, makes the slots, binds and starts serving. Returns 0 or a
 * negative kind with err naming what failed (the file, the address). */
int  srv_start(const srv_opts *o, srv **out, q36_err *err);
/* One line: the memory plan (engine and prefix cache). */
const char *srv_memory_plan(const srv *s);
/* The bound port and the base URL ("http://127.0.0.1:8080"). */
int         srv_port(const srv *s);
const char *srv_url(const srv *s);
/* Stops accepting, cancels what runs, joins the threads, frees. Accepts NULL. */
void srv_stop(srv *s);

#endif
