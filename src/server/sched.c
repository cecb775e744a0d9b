/* sched.c: the engine thread: the queue of jobs from the HTTP threads, the
 * slots, the prefix cache, and the step loop (continuous batching).
 *
 * A step admits queued jobs into idle slots (restoring each prompt's
 * deepest cached prefix, pcache.h), drops the slots whose client is gone,
 * samples the next token of every decoding slot (gen_next) and hands the
 * job its text, then evaluates one row per slot in one sched_engine_forward
 * call, one forward pass of the one engine: a decode token for each
 * decoding slot and a prompt chunk for slots still reading their prompt.
 * Decode rows go first; prompt chunks share what is left of the engine's
 * batch (n_batch rows), at most n_ubatch tokens each, the first chunk
 * taken in turn from slot to slot, so that a long prompt neither stalls the
 * streams beside it for more than one pass nor starves other prompts.
 *
 * The prefix cache saves the prompt's state every cache_every tokens and
 * before each turn of the chat template (<|im_start|>) (the recurrent
 * state alone), and one token before the prompt's end (a full checkpoint
 * with the K/V rows: a request sent again, or with other sampling,
 * restores all but its last token; the state checkpoints before it restore
 * with its K/V rows). These are saved inside the chunk's pass
 * (q36_engine_save_at), so chunks stay n_ubatch long; only when a step
 * asks for more than the engine takes in a pass (Q36_MAX_SAVES) does a
 * chunk end at a save position, saved after the pass. A job that ends
 * without a failure saves a full checkpoint once more, after its last
 * evaluated token (the next turn of a conversation starts with it).
 *
 * With --spec-type draft-mtp every decoding slot speculates in the same
 * pass (sched_spec.h): its decode row is a verify row of its sampled token
 * and its drafts, accepted token by token after the pass (accept()).
 *
 * The job is the only thing shared with the HTTP threads: its input is
 * read-only once queued; its output is written here under its mutex and
 * signalled on its condition variable.
 */
#include "srv_internal.h"
#include "pcache.h"
#include "sched.h"
#include "sched_spec.h"
#include "spec_guard.h"
#include "../backend/backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum slot_state { SLOT_IDLE = 0, SLOT_PREFILL, SLOT_DECODE };

typedef struct slot {
    enum slot_state st;
    srv_job *job;
    gen     *gen;
    float   *logits;
    int      n_read;          /* prompt tokens evaluated (restored ones included) */
    int      n_cached;        /* prompt tokens restored from the prefix cache */
    int32_t  next;            /* the token to evaluate in this step */
    int32_t *hist;            /* n_ctx: the tokens evaluated in the slot, in order */
    int     *saves;           /* prompt positions to save at, ascending */
    int      n_saves, i_save;
    int      sv_pos[Q36_MAX_SAVES];     /* this step's saves inside its chunk's pass */
    q36_ckpt *sv_ck[Q36_MAX_SAVES];
    int      n_sv;
    /* draft-mtp */
    bool     has_next;        /* next was sampled when the last verify row was accepted */
    int32_t  vids[SSPEC_MAX_DRAFT + 1];   /* this step's verify row: next and the drafts */
    /* greedy slots (gen_greedy_ban): the rows' choices made on the device when
     * the whole pass is greedy (sched_row.best) */
    int32_t  best[SSPEC_MAX_DRAFT + 1];
    bool     best_ok;         /* best[0] is the choice after the last row, not logits */
    /* sampled slots (gen_top_need): the rows' best logits, chosen on the
     * device when the whole pass can (sched_row.top_ids) */
    int32_t  top_id[(SSPEC_MAX_DRAFT + 1) * Q36_TOPK_MAX];
    float    top_v[(SSPEC_MAX_DRAFT + 1) * Q36_TOPK_MAX];
    int      top_k;
    bool     top_ok;          /* top_id / top_v hold the last row's, not logits */
    float   *hprompt;         /* n_batch x n_embd: a prompt chunk's hidden rows */
    int      dec_steps;       /* decode steps of this job so far (the guard skips the
                                 first: its MTP pass catches up the whole prompt) */
} slot;

struct sched {
    sched_engine   *eng;
    const tok_vocab *tok;
    srv_metrics    *met;
    int             n_slots, n_ctx, n_vocab, n_batch, n_ubatch, max_queue;
    int             cache_every;  /* save the prompt state every this many tokens (0: no) */
    int32_t         turn;         /* <|im_start|>: a turn of the template starts (-1: none) */
    int             rr;           /* the slot whose prompt chunk comes first next step */
    pcache         *cache;        /* NULL: no prefix cache */
    sspec          *spec;         /* NULL: no speculative decoding */
    spec_guard     *guard;        /* with spec: whether a step drafts (NULL: always;
                                     Q36_SERVER_MTP_GUARD=0) */
    int             step_tok;     /* tokens published in this step */
    bool            deferred;     /* the last step left MTP rows pending (spec_rows) */
    bool            profile;      /* Q36_SERVER_PROFILE=1: the engine's op table at the end */
    char            cache_file[4096]; /* --cache-dir's file, or "" */
    uint64_t        cache_fp;     /* the model's and options' fingerprint for it */
    char            plan_text[512];
    slot           *slots;
    sched_row      *rows;
    pthread_t       thread;
    bool            started;
    pthread_mutex_t mu;       /* guards queue, stop, and the slot table's job/st for /slots */
    pthread_cond_t  cv;
    srv_job       **queue;
    int             q_head, q_len;
    bool            stop;
};


/* ---- the engine thread ---------------------------------------------------------------------- */

static void job_end(sched *s, slot *sl, enum gen_stop stop, int stop_word, const srv_error *fail)
{
    srv_job *j = sl->job;
    const char *rest = NULL;
    size_t n = sl->gen ? gen_finish(sl->gen, &rest) : 0;
    pthread_mutex_lock(&j->mu);
    if (n)
        q36_buf_add(&j->text, rest, n);
    j->done = true;
    j->stop = stop;
    j->stop_word = stop_word;
    j->t_end = srv_now();
    if (fail)
        j->fail = *fail;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    pthread_mutex_lock(&s->met->mu);
    s->met->processing--;
    s->met->tokens_predicted += (uint64_t)j->n_gen;
    if (j->t_first > 0)
        s->met->predicted_seconds += j->t_end - j->t_first;
    if (fail)
        s->met->errors++;
    if (atomic_load(&j->cancel))
        s->met->cancelled++;
    pthread_mutex_unlock(&s->met->mu);
    gen_free(sl->gen);
    sl->gen = NULL;
    sl->has_next = false;
    int i = (int)(sl - s->slots), pos = sched_engine_pos(s->eng, i);
    if (s->spec)
        sspec_end(s->spec, i);
    if (s->cache && !fail && pos > sl->n_cached) {
        q36_err err = { 0 };
        if (pcache_save(s->cache, i, sl->hist, pos, true, &err))
            fprintf(stderr, "q36 serve: prefix cache: %s\n", err.msg);
    }
    sched_engine_reset(s->eng, i);
    pthread_mutex_lock(&s->mu);
    sl->job = NULL;
    sl->st = SLOT_IDLE;
    pthread_mutex_unlock(&s->mu);
    srv_job_unref(j);
}

static void slot_fail(sched *s, slot *sl, const char *what, const q36_err *err)
{
    srv_error e = { 0 };
    srv_fail(&e, 500, "server_error", "", "slot %d: %s: %s", (int)(sl - s->slots), what,
             err && err->msg[0] ? err->msg : "failed");
    job_end(s, sl, GEN_STOP_USER, -1, &e);
}

/* The positions in (from, n), ascending, where the prompt's state is saved. */
static void plan_saves(sched *s, slot *sl, const int32_t *ids, int n, int from)
{
    int k = 0;
    if (s->cache) {
        for (int p = from + 1; p < n; p++)
            if ((s->cache_every && p % s->cache_every == 0) || ids[p] == s->turn || p == n - 1)
                sl->saves[k++] = p;
    }
    sl->n_saves = k;
    sl->i_save = 0;
}

/* Starts a queued job in an idle slot, on the deepest cached prefix of its
 * prompt. */
static void admit(sched *s, slot *sl, srv_job *j)
{
    q36_err err = { 0 };
    int i = (int)(sl - s->slots), d = 0;       /* sl->job was set when reserved */
    memcpy(sl->hist, j->prompt, (size_t)j->n_prompt * sizeof *sl->hist);
    if (s->cache && (d = pcache_restore(s->cache, i, j->prompt, j->n_prompt, j->n_prompt - 1, &err)) < 0) {
        fprintf(stderr, "q36 serve: prefix cache: %s\n", err.msg);   /* the slot starts empty */
        d = 0;
        err = (q36_err){ 0 };
    }
    sl->n_read = d;
    sl->dec_steps = 0;
    pthread_mutex_lock(&s->mu);                /* /slots reads it */
    sl->n_cached = d;
    pthread_mutex_unlock(&s->mu);
    plan_saves(s, sl, j->prompt, j->n_prompt, sl->n_read);
    pthread_mutex_lock(&j->mu);
    j->slot = i;
    j->n_cached = sl->n_cached;
    j->t_start = srv_now();
    pthread_cond_broadcast(&j->cv);            /* a stream may wait for the cached count */
    pthread_mutex_unlock(&j->mu);
    pthread_mutex_lock(&s->met->mu);
    s->met->deferred--;
    s->met->processing++;
    s->met->prompt_tokens_cached += (uint64_t)sl->n_cached;
    pthread_mutex_unlock(&s->met->mu);
    if (gen_new(&j->gp, s->tok, s->n_vocab, &sl->gen, &err)) {
        slot_fail(s, sl, "sampler", &err);      /* the slot was reserved as SLOT_PREFILL */
        return;
    }
    if (s->spec) {
        pthread_mutex_lock(&s->mu);             /* /slots reads the drafting state */
        sspec_reset(s->spec, i);
        pthread_mutex_unlock(&s->mu);
        if (sspec_prefix(s->spec, i, j->prompt, d, &err))
            slot_fail(s, sl, "drafting", &err);
    }
}

/* Publishes a sampled token to the job; with `settle` (the last token of
 * the slot's step), wakes the job's reader and ends the job when the token
 * ends it or leaves no room to go on (false then). The tokens of a verify
 * row before its last are published without a wake: one wake a step, not
 * one a token (waking a reader that sleeps is a system call on the engine
 * thread). */
static bool publish(sched *s, slot *sl, const gen_token *tp, bool settle)
{
    srv_job *j = sl->job;
    const gen_token t = *tp;
    s->step_tok++;
    pthread_mutex_lock(&j->mu);
    if (j->gp.n_probs >= 0) {
        if (j->n_toks == j->cap_toks) {
            int cap = j->cap_toks ? j->cap_toks * 2 : 64;
            srv_tok *p = realloc(j->toks, (size_t)cap * sizeof *p);
            if (p) {
                j->toks = p;
                j->cap_toks = cap;
            }
        }
        if (j->n_toks < j->cap_toks) {
            srv_tok *k = &j->toks[j->n_toks++];
            k->id = t.id;
            k->off = (uint32_t)j->text.n;
            k->len = (uint32_t)t.len;
            k->logprob = t.logprob;
            k->n_top = t.n_top;
            memcpy(k->top, t.top, (size_t)t.n_top * sizeof *t.top);
        }
    }
    q36_buf_add(&j->text, t.text, t.len);
    j->n_gen++;
    if (j->n_gen == 1)
        j->t_first = srv_now();
    if (settle)
        pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (!settle)
        return true;
    int pos = sched_engine_pos(s->eng, (int)(sl - s->slots));
    if (t.stop) {
        job_end(s, sl, t.stop, t.stop_word, NULL);
        return false;
    }
    if (pos >= s->n_ctx) {                   /* no room to evaluate it and go on */
        job_end(s, sl, GEN_STOP_CTX, -1, NULL);
        return false;
    }
    sl->next = t.id;
    return true;
}

/* Where a greedy slot's rows take their choices (sched_row.best), and the
 * ids those choices skip; else, where a sampled slot's rows take their
 * best logits and how many (sched_row.top_ids) */
static void choose_on_device(slot *sl, sched_row *r)
{
    r->n_ban = gen_greedy_ban(sl->gen, &r->ban);
    r->best = r->n_ban >= 0 ? sl->best : NULL;
    r->top_need = r->best ? 0 : gen_top_need(sl->gen, Q36_TOPK_MAX);
    r->top_ids = sl->top_id;
    r->top_vals = sl->top_v;
}

/* The next token of a slot from the row its last pass returned for it:
 * the id chosen on the device, its best logits, or its logits */
static int next_of(slot *sl, bool best_ok, int32_t best, bool top_ok, const int32_t *tid,
                   const float *tv, int top_k, const float *logits, gen_token *t, q36_err *err)
{
    if (best_ok)
        return gen_next_id(sl->gen, best, t, err);
    if (top_ok)
        return gen_next_top(sl->gen, tid, tv, top_k, t, err);
    return gen_next(sl->gen, logits, t, err);
}

/* Samples the next token of a decoding slot (from the id chosen on the
 * device, or its logits) and publishes it; false when the job ended here. */
static bool sample(sched *s, slot *sl)
{
    gen_token t;
    q36_err err = { 0 };
    if (next_of(sl, sl->best_ok, sl->best[0], sl->top_ok, sl->top_id, sl->top_v, sl->top_k,
                sl->logits, &t, &err)) {
        slot_fail(s, sl, "sampling", &err);
        return false;
    }
    return publish(s, sl, &t, true);
}

/* A verify row came back (r: the slot's token and k drafts): samples its
 * rows in order as plain decoding would, keeps each draft that is the
 * token sampled, rewinds the slot to the last token kept, and publishes;
 * the last token sampled is the next one to evaluate. */
static void accept(sched *s, slot *sl, const sched_row *r)
{
    const int i = (int)(sl - s->slots), k = r->n - 1;
    const int P = sched_engine_pos(s->eng, i) - r->n;
    const int64_t V = s->n_vocab;
    const float *vlog = r->out;
    for (int j = 0; j <= k; j++) {
        gen_token t;
        q36_err err = { 0 };
        if (next_of(sl, r->best_ok, r->best_ok ? r->best[j] : 0, r->top_ok,
                    r->top_ids + (size_t)j * (size_t)r->top_k,
                    r->top_vals + (size_t)j * (size_t)r->top_k, r->top_k,
                    vlog ? vlog + j * V : NULL, &t, &err)) {
            slot_fail(s, sl, "sampling", &err);
            return;
        }
        sl->hist[P + j] = r->ids[j];
        if (j < k && t.id == r->ids[j + 1] && !t.stop) {
            publish(s, sl, &t, false);
            continue;
        }
        if (j < k && sched_engine_rewind(s->eng, i, j + 1, &err)) {
            slot_fail(s, sl, "rollback", &err);
            return;
        }
        pthread_mutex_lock(&s->mu);            /* /slots reads the counts */
        sspec_verified(s->spec, i, r->ids, j + 1, k);
        pthread_mutex_unlock(&s->mu);
        if (publish(s, sl, &t, true))
            sl->has_next = true;
        return;
    }
}

/* A step of q36 serve --spec-type draft-mtp as the guard (spec_guard.h)
 * sees it: whether it drafts (the guard's choice), whether some slot did,
 * and what keeps the step from being timed: a slot's first decode step
 * (fresh), or the writing of MTP rows that earlier steps left pending
 * (caught); steps with prompt chunks are not timed either (guard_end). */
typedef struct {
    int  n_dec;
    bool draft, drafted, caught, fresh;
} guard_step;

/* The guard's choice for a step with n_dec decoding slots (drafting when
 * there is no guard) */
static void guard_begin(sched *s, guard_step *g, int n_dec)
{
    g->n_dec = n_dec;
    g->draft = true;
    if (s->guard && n_dec) {
        pthread_mutex_lock(&s->mu);             /* /monitor reads its counts */
        g->draft = spec_guard_draft(s->guard, n_dec);
        pthread_mutex_unlock(&s->mu);
    }
}

/* The step's outcome to the guard, when it was a decode step's make */
static void guard_end(sched *s, const guard_step *g, int n_prompt_tok, double t_step)
{
    if (s->guard && g->n_dec && !n_prompt_tok && !g->fresh && !g->caught)
        spec_guard_done(s->guard, g->n_dec, g->drafted, s->step_tok, srv_now() - t_step);
}

/* The drafts of every decoding slot (dslot[0..nd), their tokens at the
 * slot's position; none unless g->draft), and the verify rows into
 * s->rows; g->drafted: some slot drafts; g->caught: it wrote the MTP rows
 * earlier steps left pending. Returns the rows' tokens, or -1 when the
 * MTP pass failed (every busy slot failed then). */
static int spec_rows(sched *s, const int *dslot, int nd, guard_step *g, int *n_rows)
{
    int32_t x[256];
    int P[256], k[256], n_tok = 0;
    pthread_mutex_lock(&s->mu);                /* /slots reads the drafting state */
    for (int j = 0; j < nd; j++) {
        slot *sl = &s->slots[dslot[j]];
        x[j] = sl->next;
        P[j] = sched_engine_pos(s->eng, dslot[j]);
        k[j] = g->draft ? sspec_round_k(s->spec, dslot[j], P[j], s->n_ctx) : 0;
        g->drafted |= k[j] > 0;
    }
    pthread_mutex_unlock(&s->mu);
    q36_err err = { 0 };
    /* a decode step the guard keeps from drafting leaves the MTP rows
     * pending (a later step writes them in one pass), up to
     * SSPEC_DEFER_ROWS a slot; the step that writes them is not reported
     * to the guard (g->caught) */
    bool prefill = false;
    for (int i = 0; i < s->n_slots; i++)
        prefill |= s->slots[i].st == SLOT_PREFILL;
    const bool catch_up = g->draft || prefill || !sspec_may_defer(s->spec);
    g->caught = catch_up && s->deferred;
    s->deferred = !catch_up;
    if (catch_up && sspec_draft(s->spec, dslot, x, P, k, nd, &err)) {
        for (int i = 0; i < s->n_slots; i++)
            if (s->slots[i].st != SLOT_IDLE && s->slots[i].gen)
                slot_fail(s, &s->slots[i], "drafting", &err);
        return -1;
    }
    for (int j = 0; j < nd; j++) {
        slot *sl = &s->slots[dslot[j]];
        sl->vids[0] = x[j];
        memcpy(sl->vids + 1, sspec_drafts(s->spec, dslot[j]), (size_t)k[j] * sizeof *sl->vids);
        sched_row *r = &s->rows[(*n_rows)++];
        *r = (sched_row){ .slot = dslot[j], .ids = sl->vids, .n = k[j] + 1, .n_out = k[j] + 1,
                          .hidden = sspec_vh(s->spec, dslot[j]), .keep = k[j] > 0 };
        choose_on_device(sl, r);
        n_tok += k[j] + 1;
    }
    return n_tok;
}

static void *engine_main(void *arg)
{
    sched *s = arg;
    for (;;) {
        /* Admit, or sleep while there is nothing to do. */
        pthread_mutex_lock(&s->mu);
        for (;;) {
            bool busy = false;
            for (int i = 0; i < s->n_slots; i++)
                busy |= s->slots[i].st != SLOT_IDLE;
            if (s->stop || busy || s->q_len)
                break;
            pthread_cond_wait(&s->cv, &s->mu);
        }
        if (s->stop) {
            pthread_mutex_unlock(&s->mu);
            break;
        }
        const double t_step = srv_now();
        s->step_tok = 0;
        srv_job *incoming[64];
        int n_in = 0;
        for (int i = 0; i < s->n_slots && s->q_len && n_in < 64; i++)
            if (s->slots[i].st == SLOT_IDLE && !s->slots[i].job) {
                srv_job *j = s->queue[s->q_head];
                s->q_head = (s->q_head + 1) % s->max_queue;
                s->q_len--;
                s->slots[i].job = j;         /* reserved; admitted below */
                s->slots[i].st = SLOT_PREFILL;
                incoming[n_in++] = j;
            }
        pthread_mutex_unlock(&s->mu);
        for (int i = 0, k = 0; i < s->n_slots && k < n_in; i++)
            if (s->slots[i].job == incoming[k] && s->slots[i].st == SLOT_PREFILL && !s->slots[i].gen) {
                admit(s, &s->slots[i], incoming[k]);
                k++;
            }

        /* Drop the slots whose client is gone; sample the decoding ones:
         * their rows come first. */
        int n_rows = 0, busy = 0, n_tok = 0, nd = 0, dslot[256];
        guard_step gs = { 0 };
        for (int i = 0; i < s->n_slots; i++) {
            slot *sl = &s->slots[i];
            if (sl->st == SLOT_IDLE)
                continue;
            if (atomic_load(&sl->job->cancel)) {
                job_end(s, sl, GEN_STOP_USER, -1, NULL);
                continue;
            }
            busy++;
            if (sl->st == SLOT_DECODE) {
                if (sl->has_next)
                    sl->has_next = false;
                else if (!sample(s, sl))
                    continue;
                if (s->spec) {
                    gs.fresh |= sl->dec_steps++ == 0;
                    dslot[nd++] = i;
                    continue;
                }
                sched_row *r = &s->rows[n_rows++];
                *r = (sched_row){ .slot = i, .ids = &sl->next, .n = 1, .logits = sl->logits };
                choose_on_device(sl, r);
                n_tok++;
            }
        }
        /* draft-mtp: the pending MTP rows of every slot and the drafts of
         * the decoding ones, then their verify rows */
        double t_draft = 0;
        guard_begin(s, &gs, nd);
        if (s->spec) {
            const double t0 = srv_now();
            int nt = spec_rows(s, dslot, nd, &gs, &n_rows);
            if (nt < 0)
                continue;
            n_tok += nt;
            t_draft = srv_now() - t0;
        }
        /* Prompt chunks in what is left of the batch, from slot rr on; one
         * chunk at least, so that prompts advance when decode rows alone
         * fill a pass. */
        for (int k = 0, chunks = 0, step_saves = 0; k < s->n_slots; k++) {
            int i = (s->rr + k) % s->n_slots;
            slot *sl = &s->slots[i];
            if (sl->st != SLOT_PREFILL || !sl->gen)
                continue;
            int room = s->n_batch - n_tok;
            if (room <= 0) {
                if (chunks)
                    break;
                room = s->n_batch;
            }
            int n = sl->job->n_prompt - sl->n_read;
            n = n < s->n_ubatch ? n : s->n_ubatch;
            n = n < room ? n : room;
            /* the cache's checkpoints inside the chunk, saved by its pass;
             * past the engine's limit the chunk ends at the next one */
            sl->n_sv = 0;
            while (sl->i_save < sl->n_saves && sl->saves[sl->i_save] <= sl->n_read + n) {
                const int p = sl->saves[sl->i_save];
                if (step_saves == Q36_MAX_SAVES) {
                    n = p - sl->n_read;
                    break;
                }
                q36_ckpt *ck = NULL;
                q36_err err = { 0 };
                if (pcache_want(s->cache, sl->hist, p, p == sl->job->n_prompt - 1, &ck, &err))
                    fprintf(stderr, "q36 serve: prefix cache: %s\n", err.msg);
                if (ck) {
                    sl->sv_pos[sl->n_sv] = p;
                    sl->sv_ck[sl->n_sv++] = ck;
                    step_saves++;
                }
                sl->i_save++;
            }
            sched_row *r = &s->rows[n_rows++];
            *r = (sched_row){ .slot = i, .ids = sl->job->prompt + sl->n_read, .n = n,
                              .logits = sl->logits, .hidden = s->spec ? sl->hprompt : NULL,
                              .n_save = sl->n_sv, .save_pos = sl->sv_pos, .save_ck = sl->sv_ck };
            choose_on_device(sl, r);
            n_tok += n;
            chunks++;
        }
        s->rr = (s->rr + 1) % s->n_slots;
        if (!n_rows)
            continue;
        double t0 = srv_now();
        sched_engine_forward(s->eng, s->rows, n_rows);
        double dt = srv_now() - t0;
        int n_prompt_tok = 0;
        double t_accept = 0;
        for (int k = 0; k < n_rows; k++) {
            sched_row *r = &s->rows[k];
            slot *sl = &s->slots[r->slot];
            for (int q = 0; q < r->n_save; q++) {    /* saved or not, back to the cache */
                q36_err err = { 0 };
                const int p = r->save_pos[q];
                if (pcache_put(s->cache, sl->hist, p, p == sl->job->n_prompt - 1, r->save_ck[q], &err))
                    fprintf(stderr, "q36 serve: prefix cache: %s\n", err.msg);
            }
            if (r->rc) {
                slot_fail(s, sl, "evaluation", &r->err);
                continue;
            }
            sl->best_ok = r->best_ok;
            sl->top_ok = r->top_ok;
            sl->top_k = r->top_k;
            if (sl->st == SLOT_DECODE && s->spec) {
                const double ta = srv_now();
                accept(s, sl, r);
                t_accept += srv_now() - ta;
                continue;
            }
            if (sl->st == SLOT_DECODE) {
                sl->hist[sched_engine_pos(s->eng, r->slot) - 1] = sl->next;
                continue;
            }
            if (s->spec)
                sspec_prompt(s->spec, r->slot, r->ids, r->n, sl->hprompt);
            sl->n_read += r->n;
            n_prompt_tok += r->n;
            if (sl->i_save < sl->n_saves && sl->n_read == sl->saves[sl->i_save]) {
                q36_err err = { 0 };
                bool kv = sl->n_read == sl->job->n_prompt - 1;   /* the K/V rows of the prompt */
                if (pcache_save(s->cache, r->slot, sl->hist, sl->n_read, kv, &err))
                    fprintf(stderr, "q36 serve: prefix cache: %s\n", err.msg);
                sl->i_save++;
            }
            if (sl->n_read == sl->job->n_prompt) {
                pthread_mutex_lock(&s->mu);  /* /slots reads the state */
                sl->st = SLOT_DECODE;
                pthread_mutex_unlock(&s->mu);
            }
        }
        pcache_stats cs = { 0 };
        if (s->cache)
            pcache_get_stats(s->cache, &cs);
        q36_backend_stats bs;
        q36_engine_backend_stats(sched_engine_q36(s->eng), &bs);
        guard_end(s, &gs, n_prompt_tok, t_step);
        pthread_mutex_lock(&s->met->mu);
        s->met->dev_launches = bs.launches;
        s->met->dev_graph_launches = bs.graph_launches;
        s->met->dev_graphs_recorded = bs.graphs_recorded;
        sched_engine_row_counts(s->eng, &s->met->rows_ids, &s->met->rows_top, &s->met->rows_full);
        s->met->cache_bytes = cs.bytes;
        s->met->cache_budget = cs.budget;
        s->met->cache_ckpts = cs.ckpts;
        s->met->cache_saves = cs.saves;
        s->met->cache_evictions = cs.evictions;
        s->met->cache_thinned = cs.thinned;
        s->met->cache_hits = cs.hits;
        s->met->cache_lookups = cs.lookups;
        s->met->n_decode++;
        s->met->step_seconds += srv_now() - t_step;
        s->met->forward_seconds += dt;
        s->met->draft_seconds += t_draft;
        s->met->accept_seconds += t_accept;
        s->met->busy_slots_last = busy;
        s->met->prompt_tokens += (uint64_t)n_prompt_tok;
        if (n_prompt_tok)
            s->met->prompt_seconds += dt;
        pthread_mutex_unlock(&s->met->mu);
    }
    /* Shutting down: end what runs and what waits. */
    for (int i = 0; i < s->n_slots; i++)
        if (s->slots[i].st != SLOT_IDLE && s->slots[i].gen)
            job_end(s, &s->slots[i], GEN_STOP_USER, -1, NULL);
    return NULL;
}

/* ---- the interface the HTTP side uses ------------------------------------------------------ */

/* The memory plan of the engine and the prefix cache, refused with the
 * numbers when the two do not fit in the memory available now (the engine
 * checks its own part again when it is made). */
static int plan(sched *s, const q36_model *m, const srv_opts *o, int n_ctx, q36_err *err)
{
    q36_engine_opts eo = o->sess;
    eo.n_slots = o->n_slots;
    q36_mem_plan p;
    int rc = q36_engine_plan(m, n_ctx, &eo, &p, err);
    if (rc)
        return rc;
    const double MiB = 1048576.0;
    const uint64_t cache = o->cache_mib > 0 ? (uint64_t)o->cache_mib << 20 : 0;
    /* On a GPU the engine's state and the cache's checkpoints are device
     * memory, beside the weights (counted at their file size). */
    const bool gpu = o->sess.backend && strcmp(o->sess.backend, "cpu");
    char where[160] = "host";
    uint64_t avail = o->sess.max_bytes ? o->sess.max_bytes : q36_mem_available(), total = 0;
    const uint64_t w = gpu ? q36_model_n_bytes(m) : 0;
    if (gpu && (rc = be_device_info(o->sess.backend, where, sizeof where, &avail, &total, err)))
        return rc;
    if (w + p.total + cache > avail)
        return q36_err_set(err, Q36_E_NOMEM,
                           "-np %d -c %d --cache-ram %lld: the engine needs %.1f MiB (K/V %.1f, "
                           "DeltaNet state %.1f, scratch %.1f%s) and the prefix cache %.1f MiB, "
                           "%.1f MiB in all, but %.1f MiB are available on %s",
                           o->n_slots, n_ctx, (long long)o->cache_mib, (w + p.total) / MiB, p.kv / MiB,
                           p.recurrent / MiB, p.scratch / MiB, gpu ? ", weights" : "", cache / MiB,
                           (w + p.total + cache) / MiB, avail / MiB, where);
    snprintf(s->plan_text, sizeof s->plan_text,
             "memory plan on %s: weights %.1f MiB (%s); %d slots of %d tokens: K/V %.1f MiB "
             "(%llu B/token), DeltaNet state %.1f MiB, scratch %.1f MiB; prefix cache %.1f MiB "
             "(state checkpoints of %.2f MiB every %d tokens and at turns, + %llu B/token at "
             "prompt and reply ends); %.1f MiB in all of %.1f MiB available",
             where, p.weights / MiB, gpu ? "uploaded" : "mapped", o->n_slots, n_ctx, p.kv / MiB,
             (unsigned long long)p.kv_per_token, p.recurrent / MiB, p.scratch / MiB, cache / MiB,
             p.recurrent / (double)o->n_slots / MiB, s->cache_every, (unsigned long long)p.kv_per_token,
             (w + p.total + cache) / MiB, avail / MiB);
    return 0;
}

/* --cache-dir: the folder made if missing (a failure there is the
 * caller's); the file read if there (a bad one is reported, not fatal). */
static int cache_dir_read(sched *s, const srv_opts *o, q36_err *err)
{
    if (mkdir(o->cache_dir, 0700) && errno != EEXIST)
        return q36_err_set(err, Q36_E_IO, "--cache-dir %s: cannot make the folder: %s", o->cache_dir,
                           strerror(errno));
    if (snprintf(s->cache_file, sizeof s->cache_file, "%s/q36-prefix-cache.bin", o->cache_dir) >=
        (int)sizeof s->cache_file)
        return q36_err_set(err, Q36_E_ARG, "--cache-dir %s: path too long", o->cache_dir);
    if (!(s->cache_fp = pcache_fingerprint(o->model_path, &o->sess, err)))
        return err->kind ? err->kind : Q36_E_IO;
    if (access(s->cache_file, F_OK))
        return 0;                              /* nothing saved yet */
    q36_err e = { 0 };
    int n = pcache_read(s->cache, s->cache_file, s->cache_fp, &e);
    pcache_stats cs;
    pcache_get_stats(s->cache, &cs);
    if (n < 0)
        fprintf(stderr, "q36 serve: --cache-dir: %s; the cache starts with the %d checkpoints read before "
                "that\n", e.msg, cs.ckpts);
    else
        fprintf(stderr, "q36 serve: prefix cache: %d checkpoints read from %s\n", n, s->cache_file);
    return 0;
}

/* Q36_SERVER_PROFILE=1: the engine's per-op table since the start, per
 * engine step (the trunk's passes and the MTP block's), on stderr. */
static void print_profile(sched *s)
{
    const q36_profile *p = NULL;
    q36_err err = { 0 };
    if (q36_engine_profile(sched_engine_q36(s->eng), &p, &err)) {
        fprintf(stderr, "q36 serve: profile: %s\n", err.msg);
        return;
    }
    const double steps = s->met->n_decode ? (double)s->met->n_decode : 1.0;
    fprintf(stderr, "q36 serve: profile: %llu engine steps, %llu forward calls, %llu tokens, "
            "forward %.3f ms a step (op by op, nothing recorded)\n",
            (unsigned long long)s->met->n_decode, (unsigned long long)p->forwards,
            (unsigned long long)p->tokens, p->forward_ms / steps);
    fprintf(stderr, "q36 serve: profile: %-32s %12s %12s %10s\n", "op", "calls a step",
            "ms a step", "us a call");
    for (int i = 0; i < p->n_ops; i++)
        fprintf(stderr, "q36 serve: profile: %-32s %12.2f %12.4f %10.2f\n", p->op[i].name,
                (double)p->op[i].calls / steps, p->op[i].ms / steps,
                p->op[i].calls ? p->op[i].ms * 1e3 / (double)p->op[i].calls : 0.0);
    for (int i = 0; i < p->n_layers; i++)
        if (p->layer[i].calls || p->layer[i].ms > 0)   /* (the CUDA backend counts no calls) */
            fprintf(stderr, "q36 serve: profile: layer %-26s %12.2f %12.4f\n", p->layer[i].name,
                (double)p->layer[i].calls / steps, p->layer[i].ms / steps);
}

int sched_new(const q36_model *m, const tok_vocab *tok, const srv_opts *o, int n_ctx,
              srv_metrics *met, sched **out, q36_err *err)
{
    *out = NULL;
    sched *s = calloc(1, sizeof *s);
    if (!s)
        return q36_err_set(err, Q36_E_NOMEM, "out of memory for the scheduler");
    s->tok = tok;
    s->met = met;
    s->n_slots = o->n_slots;
    s->n_ctx = n_ctx;
    s->n_batch = o->sess.n_batch > 0 ? o->sess.n_batch : 512;
    s->n_ubatch = o->n_ubatch > 0 && o->n_ubatch < s->n_batch ? o->n_ubatch : s->n_batch;
    s->cache_every = o->cache_every >= 0 ? o->cache_every : 64;
    s->turn = tok_find(tok, "<|im_start|>", 12);
    s->max_queue = o->max_queue > 0 ? o->max_queue : 256;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    /* draft-mtp: the MTP block, and the DeltaNet state kept after each
     * token of a verify row */
    srv_opts so = *o;
    const int k_max = o->draft_max > 0 ? o->draft_max : 3;
    if (o->spec_mtp) {
        so.sess.mtp = 1;
        so.sess.n_keep = k_max + 1;
    }
    /* a diagnostic: where the engine's time goes under real load (its per-op
     * timers: on a GPU the passes run op by op, unrecorded), printed when
     * the server stops */
    const char *pv = getenv("Q36_SERVER_PROFILE");
    s->profile = pv && !strcmp(pv, "1");
    so.sess.profile = s->profile;
    o = &so;
    int rc = 0;
    if (o->spec_mtp && (k_max > SSPEC_MAX_DRAFT || k_max + 1 > s->n_batch)) {
        rc = q36_err_set(err, Q36_E_ARG, "--draft-max %d: a verify row of %d tokens needs -b of "
                         "at least that (-b %d), and at most %d drafts", k_max, k_max + 1,
                         s->n_batch, SSPEC_MAX_DRAFT);
        goto fail;
    }
    if ((rc = plan(s, m, o, n_ctx, err)))
        goto fail;
    if ((rc = sched_engine_new(m, o->n_slots, n_ctx, &o->sess, &s->eng, err)))
        goto fail;
    s->n_vocab = sched_engine_n_vocab(s->eng);
    if (o->spec_mtp &&
        ((rc = q36_mtp_draft_vocab(sched_engine_q36(s->eng), o->draft_vocab, err)) ||
         (rc = sspec_new(s->eng, o->n_slots, n_ctx, s->n_batch, k_max,
                         o->sess.backend && strcmp(o->sess.backend, "cpu"),
                         &s->spec, err))))
        goto fail;
    const char *gv = getenv("Q36_SERVER_MTP_GUARD");
    if (s->spec && !(gv && !strcmp(gv, "0")) && !(s->guard = spec_guard_new(o->n_slots))) {
        rc = q36_err_set(err, Q36_E_NOMEM, "draft-mtp: out of memory for the guard");
        goto fail;
    }
    if (o->cache_mib > 0 &&
        (rc = pcache_new(sched_engine_q36(s->eng), (uint64_t)o->cache_mib << 20, &s->cache, err)))
        goto fail;
    if (s->cache && o->cache_dir && (rc = cache_dir_read(s, o, err)))
        goto fail;
    s->slots = calloc((size_t)s->n_slots, sizeof *s->slots);
    s->rows = calloc((size_t)s->n_slots, sizeof *s->rows);
    s->queue = calloc((size_t)s->max_queue, sizeof *s->queue);
    if (!s->slots || !s->rows || !s->queue) {
        rc = q36_err_set(err, Q36_E_NOMEM, "out of memory for %d slots", s->n_slots);
        goto fail;
    }
    for (int i = 0; i < s->n_slots; i++)
        if (!(s->slots[i].logits = malloc((size_t)s->n_vocab * sizeof(float))) ||
            !(s->slots[i].hist = malloc((size_t)n_ctx * sizeof(int32_t))) ||
            !(s->slots[i].saves = malloc((size_t)n_ctx * sizeof(int))) ||
            (s->spec && !(s->slots[i].hprompt = malloc((size_t)s->n_batch *
                                                       (size_t)q36_engine_n_embd(sched_engine_q36(s->eng)) *
                                                       sizeof(float))))) {
            rc = q36_err_set(err, Q36_E_NOMEM, "out of memory for the logits of %d slots", s->n_slots);
            goto fail;
        }
    if (pthread_create(&s->thread, NULL, engine_main, s)) {
        rc = q36_err_set(err, Q36_E_NOMEM, "cannot start the engine thread");
        goto fail;
    }
    s->started = true;
    *out = s;
    return 0;
fail:
    sched_free(s);
    return rc;
}

void sched_stop(sched *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (s->started) {
        pthread_join(s->thread, NULL);
        s->started = false;
    }
    pthread_mutex_lock(&s->mu);
    while (s->q_len > 0) {                     /* jobs never started */
        srv_job *j = s->queue[s->q_head];
        s->q_head = (s->q_head + 1) % s->max_queue;
        s->q_len--;
        pthread_mutex_lock(&j->mu);
        j->done = true;
        j->stop = GEN_STOP_USER;
        srv_fail(&j->fail, 503, "unavailable_error", "", "the server is shutting down");
        pthread_cond_broadcast(&j->cv);
        pthread_mutex_unlock(&j->mu);
        srv_job_unref(j);
    }
    pthread_mutex_unlock(&s->mu);
}

void sched_free(sched *s)
{
    if (!s)
        return;
    sched_stop(s);
    if (s->cache && s->cache_file[0]) {
        q36_err err = { 0 };
        pcache_stats cs;
        pcache_get_stats(s->cache, &cs);
        if (pcache_write(s->cache, s->cache_file, s->cache_fp, &err))
            fprintf(stderr, "q36 serve: --cache-dir: %s\n", err.msg);
        else
            fprintf(stderr, "q36 serve: prefix cache: %d checkpoints written to %s\n", cs.ckpts, s->cache_file);
    }
    for (int i = 0; s->slots && i < s->n_slots; i++) {
        free(s->slots[i].logits);
        free(s->slots[i].hist);
        free(s->slots[i].saves);
        free(s->slots[i].hprompt);
    }
    free(s->slots);
    free(s->rows);
    free(s->queue);
    pcache_free(s->cache);
    sspec_free(s->spec);
    spec_guard_free(s->guard);
    if (s->profile && s->eng)
        print_profile(s);
    sched_engine_free(s->eng);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

int sched_submit(sched *s, srv_job *j, srv_error *e)
{
    pthread_mutex_lock(&s->mu);
    if (s->stop || s->q_len == s->max_queue) {
        pthread_mutex_unlock(&s->mu);
        return srv_fail(e, 503, "unavailable_error", "", "the server is busy: %d requests are waiting for a slot; retry later",
                        s->max_queue);
    }
    srv_job_ref(j);
    s->queue[(s->q_head + s->q_len) % s->max_queue] = j;
    s->q_len++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&s->met->mu);
    s->met->deferred++;
    s->met->requests++;
    pthread_mutex_unlock(&s->met->mu);
    return 0;
}

int sched_n_ctx(const sched *s) { return s->n_ctx; }
const char *sched_plan_text(const sched *s) { return s->plan_text; }
int sched_n_slots(const sched *s) { return s->n_slots; }

cJSON *sched_spec_json(sched *s)
{
    if (!s->spec)
        return NULL;
    pthread_mutex_lock(&s->mu);
    cJSON *o = sspec_total_json(s->spec);
    uint64_t plain = 0, drafted = 0;
    if (s->guard)
        spec_guard_counts(s->guard, &plain, &drafted);
    pthread_mutex_unlock(&s->mu);
    cJSON_AddBoolToObject(o, "guard", s->guard != NULL);
    cJSON_AddNumberToObject(o, "guard_plain_steps", (double)plain);
    cJSON_AddNumberToObject(o, "guard_drafting_steps", (double)drafted);
    return o;
}

cJSON *sched_slots_json(sched *s)
{
    cJSON *a = cJSON_CreateArray();
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->n_slots; i++) {
        cJSON *o = cJSON_CreateObject();
        const slot *sl = &s->slots[i];
        cJSON_AddNumberToObject(o, "id", i);
        cJSON_AddNumberToObject(o, "n_ctx", s->n_ctx);
        cJSON_AddBoolToObject(o, "is_processing", sl->st != SLOT_IDLE);
        cJSON_AddStringToObject(o, "state", sl->st == SLOT_IDLE ? "idle" :
                                            sl->st == SLOT_PREFILL ? "prompt" : "generating");
        cJSON_AddNumberToObject(o, "n_cached", sl->job ? sl->n_cached : 0);
        if (sl->job)
            cJSON_AddNumberToObject(o, "id_task", (double)sl->job->id);
        else
            cJSON_AddNumberToObject(o, "id_task", -1);
        if (s->spec)        /* draft-mtp: the slot's counts since the start */
            cJSON_AddItemToObject(o, "speculative", sspec_json(s->spec, i));
        cJSON_AddItemToArray(a, o);
    }
    pthread_mutex_unlock(&s->mu);
    return a;
}
