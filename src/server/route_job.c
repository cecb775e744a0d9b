/* route_job.c: what every generating route does between reading its request
 * and building its reply: move the prompt into the job, check it against the
 * context, make the output parser, queue the job, then either start the
 * stream or wait for the end and take the output. One copy, so that the
 * OpenAI, Anthropic and Responses routes cannot drift apart in how a job
 * starts, fails or is cancelled.
 */
#include "srv_internal.h"
#include "../chat/chat_stream.h"

#include <stdlib.h>
#include <string.h>

cJSON *srv_json_str_n(const char *t, size_t n)
{
    char *z = strndup(t, n);
    cJSON *v = cJSON_CreateString(z ? z : "");
    free(z);
    return v;
}

int srv_route_start(srv_conn *c, srv_error *e, const srv_route_job *rj, int *rc)
{
    srv *s = c->s;
    srv_job *j = rj->job;
    if (!e->status && rj->pr && rj->pr->ids) {
        j->prompt = rj->pr->ids;
        j->n_prompt = rj->pr->n_ids;
        rj->pr->ids = NULL;
    }
    if (rj->pr)
        srv_single_call(j, rj->pr);
    srv_fit_context(e, s, j);
    if (!e->status && rj->cs &&
        chat_stream_new(rj->pr->tools, rj->pr->parse_tools, rj->pr->in_thinking, rj->cs, NULL))
        srv_fail(e, 500, "server_error", "", "out of memory");
    j->id = atomic_fetch_add(&s->next_id, 1);
    if (!e->status)
        sched_submit(s->sched, j, e);
    if (e->status) {
        rj->free_state(rj->state);
        srv_job_unref(j);
        *rc = srv_reply_error(c, e);
        return 0;
    }
    c->job = j;                                 /* the connection's reference now */
    srv_live_add(s, j);
    c->state = rj->state;
    c->free_state = rj->free_state;
    if (rj->stream) {
        c->fill = rj->fill;
        c->ping = rj->ping;
        *rc = srv_reply_stream(c);
        return 0;
    }
    if (!srv_job_wait(c, j)) {
        *rc = 0;                                /* MHD_NO: the client is gone */
        return 0;
    }
    srv_job_take(j, rj->take);
    if (rj->take->fail.status) {
        *rc = srv_reply_error(c, &rj->take->fail);
        return 0;
    }
    return 1;
}
