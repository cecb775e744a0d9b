/* http.c: the HTTP side of the server on libmicrohttpd: starting and
 * stopping, one thread per connection, body and header limits, the API key,
 * the route table, JSON and SSE responses, and noticing a client that left.
 *
 * Each connection's thread owns its srv_conn. A streaming response is a
 * libmicrohttpd content reader that blocks on the job until the engine
 * thread publishes more (thread-per-connection mode allows that); while it
 * waits it polls the socket for the peer's close, so a client that
 * disconnects mid-stream cancels its job within one wait period (200 ms),
 * and the engine frees its slot on its next step.
 */
#include "srv_internal.h"
#include "../model/model.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define WAIT_MS        200      /* how often a waiting thread looks at its socket */
#define PING_SECONDS   10.0     /* SSE keep-alive after this much silence */
#define POOL_BYTES     (128u << 10)  /* per-connection memory: request headers must fit */
#define BLOCK_BYTES    (16u << 10)   /* SSE bytes handed to libmicrohttpd at once */

void srv_opts_default(srv_opts *o)
{
    memset(o, 0, sizeof *o);
    o->host = "127.0.0.1";
    o->port = 8080;
    o->n_slots = 4;
    o->sess = q36_engine_opts_default();
    o->sess.n_threads = 0;          /* one engine for every slot: all online CPUs */
    o->max_body = 8u << 20;
    o->max_conn = 256;
    o->timeout_s = 600;
    o->max_queue = 256;
    o->cache_mib = 2048;
    o->cache_every = -1;
    o->draft_vocab = Q36_DRAFT_VOCAB_AUTO;
}

void srv_make_id(srv *s, const char *prefix, char *out, size_t cap)
{
    unsigned long long n = atomic_fetch_add(&s->next_id, 1) + 1;
    /* A mix of the counter and the start time: unique per process, not a secret. */
    unsigned long long h = n * 0x9e3779b97f4a7c15ull ^ (unsigned long long)(s->t_start * 1e6);
    snprintf(out, cap, "%s%016llx%08llx", prefix, h, n & 0xffffffffull);
}

/* ---- waiting on a job ------------------------------------------------------------------------ */

bool srv_client_gone(srv_conn *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c->mc, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci)
        return false;
    struct pollfd p = { .fd = ci->connect_fd, .events = POLLRDHUP };
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static void deadline(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_nsec += (long)ms * 1000000L;
    ts->tv_sec += ts->tv_nsec / 1000000000L;
    ts->tv_nsec %= 1000000000L;
}

int srv_job_mark(const srv_job *j) { return j->slot < 0 ? -1 : j->n_gen; }

bool srv_job_wait_more(srv_conn *c, srv_job *j, size_t text_len, int mark, int timeout_ms)
{
    double until = srv_now() + timeout_ms / 1000.0;
    for (;;) {
        struct timespec ts;
        deadline(&ts, WAIT_MS);
        pthread_mutex_lock(&j->mu);
        if (!(j->done || j->text.n > text_len || srv_job_mark(j) > mark))
            pthread_cond_timedwait(&j->cv, &j->mu, &ts);
        bool more = j->done || j->text.n > text_len || srv_job_mark(j) > mark;
        pthread_mutex_unlock(&j->mu);
        if (more)
            return true;
        if (srv_client_gone(c)) {
            atomic_store(&j->cancel, 1);
            return false;
        }
        if (srv_now() >= until)
            return true;
    }
}

bool srv_job_wait(srv_conn *c, srv_job *j)
{
    for (;;) {
        pthread_mutex_lock(&j->mu);
        bool done = j->done;
        size_t n = j->text.n;
        int g = srv_job_mark(j);
        pthread_mutex_unlock(&j->mu);
        if (done)
            return true;
        if (!srv_job_wait_more(c, j, n, g, 1000))
            return false;
    }
}

/* ---- responses --------------------------------------------------------------------------------- */

int srv_reply_text(srv_conn *c, int status, const char *ctype, const char *text, size_t n)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(n, (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", ctype);
    c->status = status;
    enum MHD_Result rc = MHD_queue_response(c->mc, (unsigned)status, r);
    MHD_destroy_response(r);
    return rc;
}

int srv_reply_json(srv_conn *c, int status, cJSON *body)
{
    char *t = body ? cJSON_PrintUnformatted(body) : NULL;
    cJSON_Delete(body);
    if (!t)
        return srv_reply_text(c, 500, "application/json",
                              "{\"error\":{\"code\":500,\"message\":\"out of memory\",\"type\":\"server_error\"}}", 71);
    int rc = srv_reply_text(c, status, "application/json", t, strlen(t));
    free(t);
    return rc;
}

int srv_reply_error(srv_conn *c, const srv_error *e)
{
    pthread_mutex_lock(&c->s->met.mu);
    c->s->met.errors++;
    pthread_mutex_unlock(&c->s->met.mu);
    int st = e->status ? e->status : 500;
    if (c->flavour == SRV_ANTHROPIC && e->n_ctx)
        st = 413;                          /* request_too_large: Claude Code compacts on it */
    return srv_reply_json(c, st, srv_error_json(e, c->flavour));
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    srv_conn *c = cls;
    while (c->out_pos >= c->out.n) {
        if (c->finished)
            return MHD_CONTENT_READER_END_OF_STREAM;
        c->out.n = 0;
        c->out_pos = 0;
        size_t seen_text;
        int seen_gen;
        pthread_mutex_lock(&c->job->mu);
        seen_text = c->job->text.n;
        seen_gen = srv_job_mark(c->job);
        pthread_mutex_unlock(&c->job->mu);
        c->finished = c->fill(c, &c->out);
        if (c->out.oom)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        if (c->out.n || c->finished)
            continue;
        if (!srv_job_wait_more(c, c->job, seen_text, seen_gen, (int)(PING_SECONDS * 1000)))
            return MHD_CONTENT_READER_END_WITH_ERROR;
        if (srv_now() - c->last_send >= PING_SECONDS && c->ping)
            q36_buf_str(&c->out, c->ping);
    }
    size_t n = c->out.n - c->out_pos;
    if (n > max)
        n = max;
    memcpy(buf, c->out.p + c->out_pos, n);
    c->out_pos += n;
    c->last_send = srv_now();
    return (ssize_t)n;
}

int srv_reply_stream(srv_conn *c)
{
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, BLOCK_BYTES,
                                                               stream_reader, c, NULL);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    c->last_send = srv_now();
    c->status = 200;
    enum MHD_Result rc = MHD_queue_response(c->mc, 200, r);
    MHD_destroy_response(r);
    return rc;
}

/* ---- the API key --------------------------------------------------------------------------------- */

/* Compares in time that depends only on the key's length. */
static bool key_equal(const char *given, size_t n, const char *key)
{
    size_t k = strlen(key);
    unsigned diff = (unsigned)(n != k);
    for (size_t i = 0; i < k; i++)
        diff |= (unsigned char)key[i] ^ (unsigned char)(i < n ? given[i] : 0);
    return diff == 0;
}

static bool authorized(srv_conn *c)
{
    const char *key = c->s->api_key;
    if (!key)
        return true;
    const char *a = MHD_lookup_connection_value(c->mc, MHD_HEADER_KIND, "Authorization");
    if (a && !strncasecmp(a, "Bearer ", 7)) {
        a += 7;
        while (*a == ' ')
            a++;
        size_t n = strlen(a);
        while (n && a[n - 1] == ' ')
            n--;
        if (key_equal(a, n, key))
            return true;
    }
    const char *x = MHD_lookup_connection_value(c->mc, MHD_HEADER_KIND, "x-api-key");
    return x && key_equal(x, strlen(x), key);
}

/* ---- routing ---------------------------------------------------------------------------------------- */

static const struct route {
    const char *method, *path;
    int (*fn)(srv_conn *);
    enum srv_flavour flavour;
    bool open;                 /* no API key needed */
} routes[] = {
    { "POST", "/v1/chat/completions", route_chat_completions, SRV_OPENAI, false },
    { "POST", "/chat/completions",    route_chat_completions, SRV_OPENAI, false },
    { "POST", "/v1/completions",      route_completions,      SRV_OPENAI, false },
    { "POST", "/completions",         route_completions,      SRV_OPENAI, false },
    { "POST", "/v1/responses",        route_responses,        SRV_OPENAI, false },
    { "POST", "/responses",           route_responses,        SRV_OPENAI, false },
    { "GET",  "/v1/models",           route_models,           SRV_OPENAI, false },
    { "GET",  "/models",              route_models,           SRV_OPENAI, false },
    { "POST", "/v1/messages",         route_messages,         SRV_ANTHROPIC, false },
    { "POST", "/v1/messages/count_tokens", route_count_tokens, SRV_ANTHROPIC, false },
    { "GET",  "/health",              route_health,           SRV_OPENAI, true },
    { "GET",  "/v1/health",           route_health,           SRV_OPENAI, true },
    { "GET",  "/metrics",             route_metrics,          SRV_OPENAI, false },
    { "GET",  "/slots",               route_slots,            SRV_OPENAI, false },
    { "POST", "/tokenize",            route_tokenize,         SRV_OPENAI, false },
    { "POST", "/detokenize",          route_detokenize,       SRV_OPENAI, false },
    { "POST", "/apply-template",      route_apply_template,   SRV_OPENAI, false },
    { "GET",  "/monitor",             route_monitor,          SRV_OPENAI, false },
    { "GET",  "/",                    route_page,             SRV_OPENAI, true },
    { "GET",  "/app.js",              route_page_js,          SRV_OPENAI, true },
    { "GET",  "/style.css",           route_page_css,         SRV_OPENAI, true },
    { "HEAD", "/",                    route_page,             SRV_OPENAI, true },
};

static enum MHD_Result dispatch(srv_conn *c)
{
    const struct route *hit = NULL;
    bool path_known = false;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (!strcmp(c->url, routes[i].path)) {
            path_known = true;
            c->route = routes[i].path;
            c->flavour = routes[i].flavour;
            if (!strcmp(c->method, routes[i].method))
                hit = &routes[i];
        }
    srv_error e = { 0 };
    if (!path_known) {
        srv_fail(&e, 404, "not_found_error", "", "no route for %s %.200s", c->method, c->url);
        return (enum MHD_Result)srv_reply_error(c, &e);
    }
    if (!hit) {
        srv_fail(&e, 405, "invalid_request_error", "", "%.200s does not take %s", c->url, c->method);
        return (enum MHD_Result)srv_reply_error(c, &e);
    }
    if (!hit->open && !authorized(c)) {
        srv_fail(&e, 401, "authentication_error", "",
                 "invalid or missing API key: send 'Authorization: Bearer KEY' or 'x-api-key: KEY'");
        return (enum MHD_Result)srv_reply_error(c, &e);
    }
    if (c->body_too_big) {
        srv_fail(&e, 413, "invalid_request_error", "", "the request body is larger than the limit of %llu bytes",
                 (unsigned long long)c->s->o.max_body);
        return (enum MHD_Result)srv_reply_error(c, &e);
    }
    if (c->body.oom) {
        srv_fail(&e, 500, "server_error", "", "out of memory reading the request body");
        return (enum MHD_Result)srv_reply_error(c, &e);
    }
    return (enum MHD_Result)hit->fn(c);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *mc, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *data_size, void **con_cls)
{
    (void)version;
    srv *s = cls;
    srv_conn *c = *con_cls;
    if (!c) {
        if (!(c = calloc(1, sizeof *c)))
            return MHD_NO;
        c->s = s;
        c->mc = mc;
        c->url = url;
        c->method = method;
        c->t_start = srv_now();
        *con_cls = c;
        /* A body over the limit is read and dropped, then refused with a 413:
         * a reply sent while the client still uploads is often lost to it
         * (the connection closes under its send). Far over, it is refused
         * at once. */
        const char *cl = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Content-Length");
        unsigned long long len = cl ? strtoull(cl, NULL, 10) : 0;
        if (len > s->o.max_body)
            c->body_too_big = true;
        if (len / 16 > s->o.max_body)
            return dispatch(c);
        return MHD_YES;
    }
    if (*data_size) {
        if (c->body.n + *data_size > s->o.max_body)
            c->body_too_big = true;
        else
            q36_buf_add(&c->body, data, *data_size);
        *data_size = 0;
        return MHD_YES;
    }
    return dispatch(c);
}

static void on_completed(void *cls, struct MHD_Connection *mc, void **con_cls,
                         enum MHD_RequestTerminationCode why)
{
    (void)cls;
    (void)mc;
    srv_conn *c = *con_cls;
    if (!c)
        return;
    /* One line per request. The path printed is our own literal (the
     * request's bytes never reach the log: no forged lines). */
    fprintf(stderr, "q36 serve: %s %s %d %.3f s%s\n", c->method && c->route ? c->method : "-",
            c->route ? c->route : "(no route)", c->status, srv_now() - c->t_start,
            why == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection ended early)");
    if (c->job) {
        atomic_store(&c->job->cancel, 1);    /* a no-op when it has ended */
        srv_live_remove(c->s, c->job);
        srv_job_unref(c->job);
    }
    if (c->free_state)
        c->free_state(c->state);
    q36_buf_free(&c->body);
    q36_buf_free(&c->out);
    free(c);
    *con_cls = NULL;
}

/* ---- start and stop -------------------------------------------------------------------------------- */

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

int srv_start(const srv_opts *o, srv **out, q36_err *err)
{
    *out = NULL;
    if (o->n_slots < 1 || o->n_slots > 256)
        return q36_err_set(err, Q36_E_ARG, "-np: expected 1 to 256 slots, got %d", o->n_slots);
    srv *s = calloc(1, sizeof *s);
    if (!s)
        return q36_err_set(err, Q36_E_NOMEM, "out of memory");
    s->o = *o;
    s->t_start = srv_now();
    pthread_mutex_init(&s->met.mu, NULL);
    pthread_mutex_init(&s->live_mu, NULL);
    atomic_init(&s->next_id, 0);
    int rc = q36_model_open(o->model_path, &s->model, err);
    if (rc)
        goto fail;
    if ((rc = tok_new_from_gguf(q36_model_gguf(s->model), &s->tok, err)))
        goto fail;
    const model_hparams *hp = q36_model_hparams(s->model);
    s->n_ctx = o->n_ctx ? o->n_ctx : (int)(hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096);
    snprintf(s->model_id, sizeof s->model_id, "%s", base_name(o->model_path));
    if (o->api_key && !(s->api_key = strdup(o->api_key))) {
        rc = q36_err_set(err, Q36_E_NOMEM, "out of memory");
        goto fail;
    }
    if ((rc = sched_new(s->model, s->tok, o, s->n_ctx, &s->met, &s->sched, err)))
        goto fail;

    struct sockaddr_in a4;
    struct sockaddr_in6 a6;
    struct sockaddr *addr;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD;
    memset(&a4, 0, sizeof a4);
    memset(&a6, 0, sizeof a6);
    if (inet_pton(AF_INET, o->host, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)o->port);
        addr = (struct sockaddr *)&a4;
    } else if (inet_pton(AF_INET6, o->host, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)o->port);
        addr = (struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    } else {
        rc = q36_err_set(err, Q36_E_ARG, "--host: expected a numeric IPv4 or IPv6 address, got '%s'", o->host);
        goto fail;
    }
    s->mhd = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, on_request, s,
                              MHD_OPTION_SOCK_ADDR, addr,
                              MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                              MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_conn,
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->timeout_s,
                              MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)POOL_BYTES,
                              MHD_OPTION_END);
    if (!s->mhd) {
        rc = q36_err_set(err, Q36_E_IO, "cannot listen on %s port %d: %s", o->host, o->port,
                         errno ? strerror(errno) : "the address is in use or not available");
        goto fail;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : o->port;
    snprintf(s->url, sizeof s->url, strchr(o->host, ':') ? "http://[%s]:%d" : "http://%s:%d", o->host, s->port);
    *out = s;
    return 0;
fail:
    srv_stop(s);
    return rc;
}

int srv_port(const srv *s) { return s->port; }
const char *srv_memory_plan(const srv *s) { return sched_plan_text(s->sched); }
const char *srv_url(const srv *s) { return s->url; }

void srv_stop(srv *s)
{
    if (!s)
        return;
    if (s->mhd)
        MHD_quiesce_daemon(s->mhd);
    /* The engine ends every job first, so that blocked connection threads
     * wake up and finish before the daemon joins them; the scheduler is
     * freed only after the last of them is gone. */
    sched_stop(s->sched);
    if (s->mhd)
        MHD_stop_daemon(s->mhd);
    sched_free(s->sched);
    tok_free(s->tok);
    q36_model_free(s->model);
    free(s->api_key);
    pthread_mutex_destroy(&s->met.mu);
    for (int i = 0; i < s->n_live; i++)
        srv_job_unref(s->live[i]);
    free(s->live);
    pthread_mutex_destroy(&s->live_mu);
    free(s);
}
