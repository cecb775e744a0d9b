/* job.c: the job that carries one request between its HTTP thread and the
 * engine thread (srv_internal.h): its lifetime (a reference count: the HTTP
 * side holds one, the scheduler one while the job is queued or running) and
 * taking what the engine published since the last look.
 */
#include "srv_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

double srv_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

srv_job *srv_job_new(void)
{
    srv_job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->refs = 1;
    j->slot = -1;
    j->stop_word = -1;
    j->call_stop = -1;
    j->gp = gen_params_default();
    j->t_submit = srv_now();
    atomic_init(&j->cancel, 0);
    return j;
}

void srv_job_ref(srv_job *j)
{
    pthread_mutex_lock(&j->mu);
    j->refs++;
    pthread_mutex_unlock(&j->mu);
}

void srv_job_unref(srv_job *j)
{
    if (!j)
        return;
    pthread_mutex_lock(&j->mu);
    int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left > 0)
        return;
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j->prompt);
    for (int i = 0; i < GEN_MAX_STOP; i++)
        free(j->stop_store[i]);
    q36_buf_free(&j->text);
    free(j->toks);
    free(j);
}

/* Length of the strict UTF-8 sequence at s[0..n), or 0 when it is not one
 * (overlong, surrogate, above U+10FFFF, cut short). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!k || k > n)
        return 0;
    uint32_t cp = k == 1 ? c : c & (0x7Fu >> k);
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    static const uint32_t min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (cp < min[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return k;
}

/* Appends t[0..n) with every byte that is not strict UTF-8 replaced by U+FFFD:
 * a model can write a broken sequence, and JSON strings must be UTF-8. */
static void add_utf8(q36_buf *b, const char *t, size_t n)
{
    size_t i = 0, run = 0;
    while (i < n) {
        size_t k = utf8_len((const unsigned char *)t + i, n - i);
        if (k) {
            i += k;
            continue;
        }
        q36_buf_add(b, t + run, i - run);
        q36_buf_add(b, "\xEF\xBF\xBD", 3);
        run = ++i;
    }
    q36_buf_add(b, t + run, n - run);
}

bool srv_job_take(srv_job *j, srv_take *t)
{
    pthread_mutex_lock(&j->mu);
    size_t nt = j->text.n - t->seen_text;
    q36_buf_free(&t->text);
    add_utf8(&t->text, j->text.p ? j->text.p + t->seen_text : "", nt);
    t->seen_text = j->text.n;
    t->n_toks = 0;
    if (j->n_toks > t->seen_toks) {
        int k = j->n_toks - t->seen_toks;
        srv_tok *p = realloc(t->toks, (size_t)k * sizeof *p);
        if (p) {
            memcpy(p, j->toks + t->seen_toks, (size_t)k * sizeof *p);
            for (int i = 0; i < k; i++)
                p[i].off -= (uint32_t)(t->seen_text - nt);
            t->toks = p;
            t->n_toks = k;
            t->seen_toks = j->n_toks;
        }
    }
    t->n_gen = j->n_gen;
    t->n_cached = j->n_cached;
    t->started = j->slot >= 0;
    t->done = j->done;
    t->stop = j->stop;
    t->stop_word = j->stop_word;
    t->fail = j->fail;
    t->t_prompt = j->t_first > 0 ? j->t_first - j->t_start : 0;
    t->t_gen = j->t_end > 0 && j->t_first > 0 ? j->t_end - j->t_first : 0;
    pthread_mutex_unlock(&j->mu);
    return !t->text.oom;
}

void srv_take_free(srv_take *t)
{
    q36_buf_free(&t->text);
    free(t->toks);
    memset(t, 0, sizeof *t);
}
