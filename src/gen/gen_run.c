/* gen_run.c: the single-session generation loop of q36 run and q36 chat
 * (gen.h): sample, hand the token to the caller, evaluate it, until a stop.
 */
#include "gen.h"

#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int gen_run(gen *g, q36_session *s, float *logits, const volatile sig_atomic_t *interrupt,
            gen_emit_fn emit, void *user, gen_result *res, q36_err *err)
{
    int rc = 0;
    double t0 = now();
    gen_token t;
    /* greedy: each step's choice made on the device, one id back instead
     * of the logits (the first from the prompt's logits) */
    const bool dev = gen_greedy(g) && gen_device_greedy(g);
    int32_t next = -1;
    /* sampled with top_k: a step's k best logits instead of its row */
    int32_t tid[Q36_TOPK_MAX];
    float tval[Q36_TOPK_MAX];
    int top = 0;                /* > 0: the last step's top are in tid, tval */
    res->stop = GEN_GOING;
    if (gen_over(g))                           /* n_predict 0 */
        res->stop = GEN_STOP_LENGTH;
    while (!res->stop) {
        if (interrupt && *interrupt) {
            res->stop = GEN_STOP_USER;
            break;
        }
        if (q36_session_pos(s) >= q36_session_n_ctx(s)) {
            res->stop = GEN_STOP_CTX;
            break;
        }
        if ((rc = next >= 0 ? gen_next_id(g, next, &t, err)
                  : top ? gen_next_top(g, tid, tval, top, &t, err)
                        : gen_next(g, logits, &t, err)))
            break;
        res->n_gen++;
        if ((rc = emit(user, &t)))
            break;
        /* The end-of-generation token is evaluated too: the session then
         * holds the whole reply for the next turn. */
        top = !dev && gen_device_top(g) ? gen_top_need(g, Q36_TOPK_MAX) : 0;
        if ((rc = dev ? q36_session_decode_argmax(s, t.id, &next, err)
                  : top ? q36_session_decode_topk(s, t.id, top, tid, tval, err)
                        : q36_session_decode(s, t.id, logits, err)))
            break;
        res->stop = t.stop;
    }
    if (res->stop == GEN_STOP_USER || res->stop == GEN_STOP_CTX) {
        memset(&t, 0, sizeof t);
        t.id = -1;
        t.stop = res->stop;
        t.stop_word = -1;
        t.len = gen_finish(g, &t.text);
        rc = emit(user, &t);
    }
    res->t_gen += now() - t0;
    return rc;
}
