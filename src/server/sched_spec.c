/* sched_spec.c: the scheduler's MTP drafting for every slot at once
 * (sched_spec.h): per slot the pending MTP rows and the trunk's last hidden
 * row, the batched draft passes, the adaptive draft count, the counts. */
#include "sched_spec.h"
#include "../spec/spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MISS_STOP = 3, PAUSE_FIRST = 8, PAUSE_MAX = 128 };

typedef struct sslot {
    int      k;              /* drafts of the next round (adaptive) */
    int      miss;           /* rounds in a row with nothing kept */
    int      pause, wait;    /* the next pause; plain steps left in this one */
    int32_t  d[SSPEC_MAX_DRAFT];
    float   *hlast;          /* D: the trunk's hidden row before the next MTP row */
    /* MTP rows still to write: tokens pend_id at positions pend_pos.., each
     * paired with a hidden row of pend_h (cap rows: a prompt chunk or a
     * verify row's kept tokens, and the next token) */
    int32_t *pend_id;
    float   *pend_h;
    int      n_pend, pend_pos;
    /* The last n_hist MTP rows written (at most k_max + 1, positions
     * hist_end - n_hist .. hist_end), kept just before pend_id and pend_h
     * (the buffers start k_max + 1 rows earlier: pend_id0, pend_h0), so
     * that a drafting slot's rows can be padded to k_max + 1 from below
     * (sspec_draft) */
    int32_t *pend_id0;
    float   *pend_h0;
    int      n_hist, hist_end;
    float   *vh;             /* (k_max+1) rows: the verify row's hidden rows */
    float   *mh;             /* the last MTP row's hidden row */
    int32_t  mbest;          /* its greedy draft: the draft head's column */
    /* since the server started */
    int64_t  rounds, drafted, accepted, paused_steps, padded;
    int64_t  drafted_at[SSPEC_MAX_DRAFT], accepted_at[SSPEC_MAX_DRAFT];
} sslot;

struct sspec {
    sched_engine *eng;
    int           n_slots, n_ctx, n_batch, k_max, cap;
    float        *zeros;     /* n_batch x D: the hidden rows of a restored prefix */
    int64_t       V, D;
    const int32_t *vid;      /* the draft head's ids (NULL: all) */
    sslot        *sl;
    sched_mtp_row *items;    /* n_slots */
    float        *hchain;    /* n_slots x D: the hidden rows fed to a draft step */
    bool          chain;     /* drafts chained on the device (Q36_SERVER_MTP_CHAIN, on
                                unless "0"): sspec_draft */
    bool          adaptive;  /* k after a round as sspec_verified says, else k_max */
    bool          pad;       /* drafting slots' first MTP pass padded: sspec_draft */
};

void sspec_free(sspec *s)
{
    if (!s)
        return;
    for (int i = 0; s->sl && i < s->n_slots; i++) {
        sslot *t = &s->sl[i];
        free(t->hlast), free(t->pend_id0), free(t->pend_h0), free(t->vh);
        free(t->mh);
    }
    free(s->sl);
    free(s->items);
    free(s->hchain);
    free(s->zeros);
    free(s);
}

/* getenv(name) "1" or "0" as a bool, else def */
static bool env_bool(const char *name, bool def)
{
    const char *v = getenv(name);
    return v && (!strcmp(v, "0") || !strcmp(v, "1")) ? *v == '1' : def;
}

int sspec_new(sched_engine *eng, int n_slots, int n_ctx, int n_batch, int k_max, bool device,
              sspec **out, q36_err *err)
{
    *out = NULL;
    if (k_max < 1 || k_max > SSPEC_MAX_DRAFT)
        return q36_err_set(err, Q36_E_ARG, "--draft-max %d is outside [1, %d]", k_max,
                           SSPEC_MAX_DRAFT);
    q36_engine *e = sched_engine_q36(eng);
    sspec *s = calloc(1, sizeof *s);
    if (!s)
        return q36_err_set(err, Q36_E_NOMEM, "draft-mtp: out of memory");
    s->eng = eng;
    s->n_slots = n_slots;
    s->n_ctx = n_ctx;
    s->n_batch = n_batch;
    s->k_max = k_max;
    s->adaptive = env_bool("Q36_SERVER_MTP_ADAPTIVE", !device);
    s->pad = env_bool("Q36_SERVER_MTP_PAD", device);
    const char *ch = getenv("Q36_SERVER_MTP_CHAIN");
    s->chain = !ch || strcmp(ch, "0") != 0;
    s->cap = (n_batch > k_max + 1 ? n_batch : k_max + 1) + 1;
    s->V = q36_engine_n_vocab(e);
    s->D = q36_engine_n_embd(e);
    q36_mtp_vocab(e, &s->vid);
    s->sl = calloc((size_t)n_slots, sizeof *s->sl);
    s->items = calloc((size_t)n_slots, sizeof *s->items);
    s->hchain = calloc((size_t)n_slots * (size_t)s->D, sizeof *s->hchain);
    const size_t D = (size_t)s->D, K1 = (size_t)k_max + 1, cap = (size_t)s->cap;
    s->zeros = calloc((size_t)n_batch * D, sizeof *s->zeros);
    bool oom = !s->sl || !s->items || !s->hchain || !s->zeros;
    for (int i = 0; !oom && i < n_slots; i++) {
        sslot *t = &s->sl[i];
        t->hlast = calloc(D, sizeof *t->hlast);
        t->pend_id0 = malloc((K1 + cap) * sizeof *t->pend_id0);
        t->pend_h0 = malloc((K1 + cap) * D * sizeof *t->pend_h0);
        t->vh = malloc(K1 * D * sizeof *t->vh);
        t->mh = malloc(D * sizeof *t->mh);
        oom = !t->hlast || !t->pend_id0 || !t->pend_h0 || !t->vh || !t->mh;
        if (!oom) {
            t->pend_id = t->pend_id0 + K1;
            t->pend_h = t->pend_h0 + K1 * D;
        }
    }
    if (oom) {
        sspec_free(s);
        return q36_err_set(err, Q36_E_NOMEM, "draft-mtp: out of memory for %d slots", n_slots);
    }
    *out = s;
    return 0;
}

int sspec_k_max(const sspec *s) { return s->k_max; }

bool sspec_may_defer(const sspec *s)
{
    for (int i = 0; i < s->n_slots; i++) {
        const int n = s->sl[i].n_pend;
        if (n > SSPEC_DEFER_ROWS || n + s->k_max + 1 >= s->cap)
            return false;
    }
    return true;
}
void sspec_end(sspec *s, int i) { s->sl[i].n_pend = s->sl[i].n_hist = 0; }
const int32_t *sspec_drafts(const sspec *s, int i) { return s->sl[i].d; }
float *sspec_vh(sspec *s, int i) { return s->sl[i].vh; }

/* Appends n MTP rows (ids, each with hidden row h[j]) to slot t's pending
 * rows. */
static void pend_add(const sspec *s, sslot *t, const int32_t *ids, int n, const float *h)
{
    const size_t D = (size_t)s->D;
    if (n <= 0)
        return;
    memcpy(t->pend_id + t->n_pend, ids, (size_t)n * sizeof *ids);
    memcpy(t->pend_h + (size_t)t->n_pend * D, h, (size_t)n * D * sizeof *t->pend_h);
    t->n_pend += n;
}

void sspec_reset(sspec *s, int i)
{
    sslot *t = &s->sl[i];
    t->k = s->k_max;
    t->miss = t->wait = 0;
    t->pause = PAUSE_FIRST;
    t->n_pend = t->n_hist = 0;
    t->pend_pos = 0;
    memset(t->hlast, 0, (size_t)s->D * sizeof *t->hlast);
}

int sspec_prefix(sspec *s, int i, const int32_t *prompt, int d, q36_err *err)
{
    s->sl[i].pend_pos = d;
    s->sl[i].n_hist = 0;
    /* a restored prefix has no hidden rows: its MTP rows get zero rows */
    int rc = 0;
    for (int a = 0; a < d && !rc; a += s->n_batch) {
        const sched_mtp_row it = { i, prompt + a, d - a < s->n_batch ? d - a : s->n_batch, a,
                                   s->zeros, NULL, NULL };
        rc = sched_engine_mtp(s->eng, &it, 1, Q36_MTP_H_TRUNK, err);
    }
    return rc;
}

void sspec_prompt(sspec *s, int i, const int32_t *ids, int n, const float *h)
{
    sslot *t = &s->sl[i];
    const size_t D = (size_t)s->D;
    /* MTP row p pairs token p with the trunk's hidden row of p-1 */
    pend_add(s, t, ids, 1, t->hlast);
    if (n > 1)
        pend_add(s, t, ids + 1, n - 1, h);
    memcpy(t->hlast, h + (size_t)(n - 1) * D, D * sizeof *t->hlast);
}

int sspec_round_k(sspec *s, int i, int P, int n_ctx)
{
    sslot *t = &s->sl[i];
    int k = t->k;
    if (t->wait > 0) {
        t->wait--;
        t->paused_steps++;
        k = 0;
    }
    /* every verify token must be one plain decoding samples: rows P..P+k,
     * with room for the token sampled after the last */
    if (k > n_ctx - 2 - P)
        k = n_ctx - 2 - P;
    return k < 0 ? 0 : k;
}

int sspec_draft(sspec *s, const int *slot, const int32_t *x, const int *P, int *k, int n,
                q36_err *err)
{
    const size_t D = (size_t)s->D;
    int n_it = 0, kk = 0;
    /* pass 1: every slot's pending rows, then x where a draft is wanted */
    bool drafting[256] = { 0 };
    for (int j = 0; j < n; j++) {
        sslot *t = &s->sl[slot[j]];
        drafting[slot[j]] = k[j] > 0;
        if (k[j] > 0) {
            t->pend_id[t->n_pend] = x[j];
            memcpy(t->pend_h + (size_t)t->n_pend * D, t->hlast, D * sizeof *t->pend_h);
            t->n_pend++;
        }
        kk = k[j] > kk ? k[j] : kk;
    }
    /* A drafting slot's rows padded from below to k_max + 1 with the rows
     * written last (the same tokens, hidden rows and positions: the same
     * MTP K/V rows again), where it has them: then the pass has the same
     * shape from step to step whatever each slot kept, and a device that
     * records passes (CUDA graphs) replays it instead of running it op by
     * op. */
    const int R = s->k_max + 1;
    for (int i = 0; i < s->n_slots; i++) {
        sslot *t = &s->sl[i];
        if (!t->n_pend)
            continue;
        const int have = t->hist_end == t->pend_pos ? t->n_hist : 0;
        int pad = s->pad && drafting[i] && t->n_pend < R ? R - t->n_pend : 0;
        pad = pad < have ? pad : have;
        t->padded += pad;
        s->items[n_it++] = (sched_mtp_row){ i, t->pend_id - pad, t->n_pend + pad, t->pend_pos - pad,
                                            t->pend_h - (size_t)pad * D,
                                            drafting[i] ? &t->mbest : NULL, t->mh };
    }
    /* every draft at once where they fit: the pass above and kk - 1 more
     * chained on the device (a slot that wants fewer drafts gets kk and
     * keeps its k; each chained row must fit the slot's context) */
    bool chain = s->chain && n_it && kk >= 2;
    for (int j = 0; j < n && chain; j++)
        chain = k[j] <= 0 || P[j] + kk <= s->n_ctx;
    int32_t ids[64];
    int n_out = 0, rc = 1;
    if (chain)
        rc = sched_engine_mtp_chain(s->eng, s->items, n_it, kk, ids, &n_out, err);
    const bool chained = rc == 0;
    if (rc == 1)            /* not chained (nothing ran): a pass a draft below */
        rc = n_it ? sched_engine_mtp(s->eng, s->items, n_it, Q36_MTP_H_TRUNK, err) : 0;
    for (int i = 0; i < s->n_slots; i++) {
        sslot *t = &s->sl[i];
        if (!t->n_pend)
            continue;
        /* the last R rows written become the history, just before pend_id */
        const int have = (t->hist_end == t->pend_pos ? t->n_hist : 0) + t->n_pend;
        const int keep = have < R ? have : R;
        memmove(t->pend_id - keep, t->pend_id + t->n_pend - keep, (size_t)keep * sizeof *t->pend_id);
        memmove(t->pend_h - (size_t)keep * D, t->pend_h + (size_t)t->n_pend * D - (size_t)keep * D,
                (size_t)keep * D * sizeof *t->pend_h);
        t->n_hist = keep;
        t->pend_pos += t->n_pend;
        t->hist_end = t->pend_pos;
        t->n_pend = 0;
    }
    if (chained) {
        /* the asked-for rows are the drafting slots' in slot order, as the
         * items list them: col[i] is slot i's column of ids */
        int col[256];
        for (int i = 0, o = 0; i < s->n_slots; i++)
            col[i] = drafting[i] ? o++ : -1;
        for (int j = 0; j < n; j++)
            for (int d = 0; d < k[j]; d++) {
                const int32_t best = ids[d * n_out + col[slot[j]]];
                s->sl[slot[j]].d[d] = s->vid ? s->vid[best] : best;
            }
        return 0;
    }
    /* draft i of each slot: the argmax of its last MTP row; then one row
     * per slot that wants another */
    for (int d = 0; d < kk && !rc; d++) {
        n_it = 0;
        for (int j = 0; j < n; j++) {
            if (d >= k[j])
                continue;
            sslot *t = &s->sl[slot[j]];
            const int32_t best = t->mbest;
            t->d[d] = s->vid ? s->vid[best] : best;
            if (d + 1 < k[j]) {
                float *h = s->hchain + (size_t)j * D;
                memcpy(h, t->mh, D * sizeof *h);
                s->items[n_it++] = (sched_mtp_row){ slot[j], &t->d[d], 1, P[j] + 1 + d, h,
                                                    &t->mbest, t->mh };
            }
        }
        if (n_it)
            rc = sched_engine_mtp(s->eng, s->items, n_it, Q36_MTP_H_MTP, err);
    }
    return rc;
}

void sspec_verified(sspec *s, int i, const int32_t *vids, int rows, int k)
{
    sslot *t = &s->sl[i];
    const size_t D = (size_t)s->D;
    const int m = rows - 1;        /* drafts kept */
    /* the MTP rows of the kept tokens with the trunk's hidden rows (x's
     * own was written by the draft pass when k > 0) */
    const int from = k > 0 ? 1 : 0;
    const int start = q36_slot_pos(sched_engine_q36(s->eng), i) - rows + from;
    if (!t->n_pend || t->pend_pos + t->n_pend != start) {   /* else after rows left pending */
        t->n_pend = 0;
        t->pend_pos = start;
    }
    for (int j = from; j < rows; j++)
        pend_add(s, t, &vids[j], 1, j ? t->vh + (size_t)(j - 1) * D : t->hlast);
    memcpy(t->hlast, t->vh + (size_t)m * D, D * sizeof *t->hlast);
    if (k == 0)
        return;
    t->rounds++;
    t->drafted += k;
    t->accepted += m;
    for (int j = 0; j < k; j++) {
        t->drafted_at[j]++;
        t->accepted_at[j] += j < m;
    }
    /* adaptive k (sched_spec.h): the pauses always, the count when adaptive */
    if (m > 0) {
        t->miss = 0;
        t->pause = PAUSE_FIRST;
    } else if (++t->miss >= MISS_STOP) {
        t->wait = t->pause;
        t->pause = t->pause * 2 < PAUSE_MAX ? t->pause * 2 : PAUSE_MAX;
    }
    t->k = !s->adaptive ? s->k_max : m == k ? (k + 1 < s->k_max ? k + 1 : s->k_max) : m + 1;
}

cJSON *sspec_json(const sspec *s, int i)
{
    const sslot *t = &s->sl[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "draft_max", s->k_max);
    cJSON_AddBoolToObject(o, "draft_adaptive", s->adaptive);
    cJSON_AddNumberToObject(o, "next_k", t->wait > 0 ? 0 : t->k);
    cJSON_AddNumberToObject(o, "rounds", (double)t->rounds);
    cJSON_AddNumberToObject(o, "drafted", (double)t->drafted);
    cJSON_AddNumberToObject(o, "accepted", (double)t->accepted);
    cJSON_AddNumberToObject(o, "paused_steps", (double)t->paused_steps);
    cJSON_AddNumberToObject(o, "padded_rows", (double)t->padded);
    cJSON *dr = cJSON_AddArrayToObject(o, "drafted_at"), *ac = cJSON_AddArrayToObject(o, "accepted_at");
    for (int j = 0; j < s->k_max; j++) {
        cJSON_AddItemToArray(dr, cJSON_CreateNumber((double)t->drafted_at[j]));
        cJSON_AddItemToArray(ac, cJSON_CreateNumber((double)t->accepted_at[j]));
    }
    return o;
}

cJSON *sspec_total_json(const sspec *s)
{
    int64_t rounds = 0, dr = 0, ac = 0, paused = 0, dr_at[SSPEC_MAX_DRAFT] = { 0 },
            ac_at[SSPEC_MAX_DRAFT] = { 0 };
    for (int i = 0; i < s->n_slots; i++) {
        const sslot *t = &s->sl[i];
        rounds += t->rounds, dr += t->drafted, ac += t->accepted, paused += t->paused_steps;
        for (int j = 0; j < s->k_max; j++)
            dr_at[j] += t->drafted_at[j], ac_at[j] += t->accepted_at[j];
    }
    char by[16 * SSPEC_MAX_DRAFT] = "";
    for (int j = 0, n = 0; j < s->k_max; j++)
        n += snprintf(by + n, sizeof by - (size_t)n, "%s%.3f", j ? " " : "",
                      dr_at[j] ? (double)ac_at[j] / (double)dr_at[j] : 0.0);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "draft-mtp");
    cJSON_AddNumberToObject(o, "draft_max", s->k_max);
    cJSON_AddNumberToObject(o, "verify_rows", (double)rounds);
    cJSON_AddNumberToObject(o, "drafted", (double)dr);
    cJSON_AddNumberToObject(o, "accepted", (double)ac);
    cJSON_AddNumberToObject(o, "acceptance", dr ? (double)ac / (double)dr : 0.0);
    cJSON_AddStringToObject(o, "acceptance_by_position", by);
    cJSON_AddNumberToObject(o, "tokens_per_verify_row",
                            rounds ? (double)(ac + rounds) / (double)rounds : 0.0);
    cJSON_AddNumberToObject(o, "steps_without_drafts", (double)paused);
    return o;
}
