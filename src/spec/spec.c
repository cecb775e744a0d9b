/* spec.c: MTP speculative decoding of one slot (spec.h): the prompt's MTP
 * rows, the rounds of draft -> verify -> accept -> rollback (checkpoint +
 * replay, or a rewind to a state the verify pass kept), and the general
 * speculative-sampling rule. The engine does the passes
 * (q36_engine_eval for the trunk, q36_mtp_eval for the MTP block,
 * q36_slot_save/load for the rollback); the gen samples. */
#include "spec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct spec {
    q36_engine *e;
    int         slot, k;
    int64_t     V, D, B;
    q36_ckpt   *ck;           /* the slot's DeltaNet state before a verify pass */
    int32_t    *ids, *slots, *pos, *outs;    /* B each: a batch being built */
    float      *hbuf;         /* (B+1) x D: hidden rows of a trunk pass, shifted by one */
    float      *vlog;         /* (k+1) x V: the verify pass's logits */
    float      *vh;           /* (k+1) x D: its hidden rows */
    float      *mlog, *mh;    /* V, D: an MTP pass's row */
    int32_t     mbest;        /* its argmax, when chosen on the device (p_min 0) */
    float      *hlast;        /* D: the trunk's hidden row of the position before x */
    /* MTP rows still to write with the trunk's hidden rows (llama.cpp's
     * catch-up): tokens pend_id at positions pend_pos.., hidden rows pend_h */
    int32_t     pend_id[SPEC_MAX_DRAFT + 1];
    float      *pend_h;       /* (k+1) x D */
    int         n_pend, pend_pos;
    int32_t     round_pos, round_d[SPEC_MAX_DRAFT];   /* spec_round */
    int         round_k;
    float       p_min;        /* spec_set_p_min */
    bool        rewind;       /* spec_set_rewind */
    spec_stats  st;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void spec_free(spec *s)
{
    if (!s)
        return;
    q36_ckpt_free(s->ck);
    free(s->ids);
    free(s->slots);
    free(s->pos);
    free(s->outs);
    free(s->hbuf);
    free(s->vlog);
    free(s->vh);
    free(s->mlog);
    free(s->mh);
    free(s->hlast);
    free(s->pend_h);
    free(s);
}

int spec_new(q36_engine *e, int slot, int n_draft, spec **out, q36_err *err)
{
    *out = NULL;
    if (!q36_engine_has_mtp(e))
        return q36_err_set(err, Q36_E_ARG, "draft-mtp: the engine holds no MTP block (the model "
                           "has none, or the engine was made without it)");
    if (n_draft < 1 || n_draft > SPEC_MAX_DRAFT)
        return q36_err_set(err, Q36_E_ARG, "--draft-max %d is outside [1, %d]", n_draft,
                           SPEC_MAX_DRAFT);
    if (slot < 0 || slot >= q36_engine_n_slots(e))
        return q36_err_set(err, Q36_E_ARG, "draft-mtp: slot %d is outside [0, %d)", slot,
                           q36_engine_n_slots(e));
    if (q36_engine_n_batch(e) < n_draft + 2)
        return q36_err_set(err, Q36_E_ARG, "draft-mtp: %d drafts need passes of %d rows; the "
                           "engine takes %d (-b)", n_draft, n_draft + 2, q36_engine_n_batch(e));
    spec *s = calloc(1, sizeof *s);
    if (!s)
        return q36_err_set(err, Q36_E_NOMEM, "draft-mtp: out of memory");
    s->e = e;
    s->slot = slot;
    s->k = n_draft;
    s->V = q36_engine_n_vocab(e);
    s->D = q36_engine_n_embd(e);
    /* prompt chunks of at most 64 rows (each needs its hidden rows on the
     * host); draft and verify passes take k+2 rows at most */
    s->B = q36_engine_n_batch(e) < 64 ? q36_engine_n_batch(e) : 64;
    const size_t B = (size_t)s->B, D = (size_t)s->D, V = (size_t)s->V, K1 = (size_t)n_draft + 1;
    s->ids = malloc(B * sizeof *s->ids);
    s->slots = malloc(B * sizeof *s->slots);
    s->pos = malloc(B * sizeof *s->pos);
    s->outs = malloc(B * sizeof *s->outs);
    s->hbuf = calloc((B + 1) * D, sizeof *s->hbuf);
    s->vlog = malloc(K1 * V * sizeof *s->vlog);
    s->vh = malloc(K1 * D * sizeof *s->vh);
    s->mlog = malloc(V * sizeof *s->mlog);
    s->mh = malloc(D * sizeof *s->mh);
    s->hlast = calloc(D, sizeof *s->hlast);
    s->pend_h = malloc(K1 * D * sizeof *s->pend_h);
    int rc = 0;
    if (!s->ids || !s->slots || !s->pos || !s->outs || !s->hbuf || !s->vlog || !s->vh ||
        !s->mlog || !s->mh || !s->hlast || !s->pend_h)
        rc = q36_err_set(err, Q36_E_NOMEM, "draft-mtp: out of memory");
    if (!rc)
        rc = q36_ckpt_new(e, 0, &s->ck, err);
    if (rc) {
        spec_free(s);
        return rc;
    }
    for (int64_t i = 0; i < s->B; i++)
        s->slots[i] = slot;
    *out = s;
    return 0;
}

const spec_stats *spec_get_stats(const spec *s) { return &s->st; }

int spec_round(const spec *s, int32_t *pos, const int32_t **drafts)
{
    *pos = s->round_pos;
    *drafts = s->round_d;
    return s->round_k;
}
void spec_reset_stats(spec *s) { memset(&s->st, 0, sizeof s->st); }

/* One trunk pass of n rows (ids at the slot's position on), results for the
 * rows out[0..n_out) (logits may be NULL); with best, each row's argmax
 * chosen on the device instead of its logits (q36_engine_eval_argmax). */
static int trunk_best(spec *s, const int32_t *ids, int n, const int32_t *out, int n_out,
                      float *logits, int32_t *best, float *hidden, q36_err *err)
{
    const int p0 = q36_slot_pos(s->e, s->slot);
    for (int i = 0; i < n; i++) {
        s->ids[i] = ids[i];
        s->pos[i] = p0 + i;
    }
    const q36_batch b = { n, s->ids, s->slots, s->pos, n_out, out };
    if (best)
        return q36_engine_eval_argmax(s->e, &b, best, hidden, err);
    return q36_engine_eval(s->e, &b, logits, hidden, err);
}

static int trunk(spec *s, const int32_t *ids, int n, const int32_t *out, int n_out, float *logits,
                 float *hidden, q36_err *err)
{
    return trunk_best(s, ids, n, out, n_out, logits, NULL, hidden, err);
}

/* One MTP pass of n rows at positions p0.., hidden rows h; when want_out,
 * the last row's hidden into s->mh and its logits into s->mlog, or with
 * no top-10 threshold to test (p_min 0) only their argmax into s->mbest,
 * chosen on the device (q36_mtp_eval_argmax: spec_argmax's rule). */
static int mtp(spec *s, const int32_t *ids, int n, int p0, const float *h, enum q36_mtp_h src,
               bool want_out, q36_err *err)
{
    for (int i = 0; i < n; i++) {
        s->ids[i] = ids[i];
        s->pos[i] = p0 + i;
    }
    const int32_t last = n - 1;
    const q36_batch b = { n, s->ids, s->slots, s->pos, want_out ? 1 : 0, &last };
    if (want_out && s->p_min <= 0)
        return q36_mtp_eval_argmax(s->e, &b, h, src, &s->mbest, s->mh, err);
    return q36_mtp_eval(s->e, &b, h, src, want_out ? s->mlog : NULL, want_out ? s->mh : NULL,
                        err);
}

int32_t spec_argmax(const float *x, int64_t n)
{
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return (int32_t)best;
}

/* The probability of x[best] among the 10 largest of x[0..n), as llama.cpp's
 * draft sampler (top-k 10) gives it. */
static float top10_p(const float *x, int64_t n, int32_t best)
{
    float top[10];
    int m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (m < 10) {
            top[m++] = x[i];
            continue;
        }
        int lo = 0;
        for (int j = 1; j < 10; j++)
            if (top[j] < top[lo])
                lo = j;
        if (x[i] > top[lo])
            top[lo] = x[i];
    }
    double z = 0;
    for (int j = 0; j < m; j++)
        z += exp((double)top[j] - x[best]);
    return (float)(1.0 / z);
}

void spec_set_p_min(spec *s, float p_min) { s->p_min = p_min; }
void spec_set_rewind(spec *s, bool on) { s->rewind = on; }

/* ----------------------------------------------------------------- prompt */

int spec_prefill(spec *s, const int32_t *ids, int n, float *logits, q36_err *err)
{
    if (n < 1)
        return q36_err_set(err, Q36_E_ARG, "the prompt is empty: nothing to continue from");
    const int64_t D = s->D;
    int rc = 0;
    /* the MTP rows still pending from the last reply first (none when the
     * slot starts a new sequence) */
    if (q36_slot_pos(s->e, s->slot) == 0)
        s->n_pend = 0;
    if (s->n_pend) {
        const int p0 = q36_slot_pos(s->e, s->slot) - s->n_pend;
        if ((rc = mtp(s, s->pend_id, s->n_pend, p0, s->pend_h, Q36_MTP_H_TRUNK, false, err)))
            return rc;
        s->n_pend = 0;
    }
    /* MTP row p pairs x_p with the trunk's hidden row of p-1 (zeros at the
     * slot's first position): hbuf row 0 carries that row across chunks */
    if (q36_slot_pos(s->e, s->slot) == 0)
        memset(s->hlast, 0, (size_t)D * sizeof *s->hlast);
    for (int a = 0; a < n && !rc;) {
        const int m = n - a < s->B ? n - a : (int)s->B;
        const int p0 = q36_slot_pos(s->e, s->slot);
        memcpy(s->hbuf, s->hlast, (size_t)D * sizeof *s->hbuf);
        /* the last prompt row alone gives the logits (exact mode: the same
         * bits as inside the chunk) */
        const bool last = a + m == n;
        const int mh = last ? m - 1 : m;
        if (mh > 0) {
            for (int i = 0; i < mh; i++)
                s->outs[i] = i;
            rc = trunk(s, ids + a, mh, s->outs, mh, NULL, s->hbuf + D, err);
        }
        if (!rc && last) {
            const int32_t zero = 0;
            rc = trunk(s, ids + a + mh, 1, &zero, 1, logits, s->hbuf + (int64_t)(mh + 1) * D, err);
        }
        double t0 = now();
        if (!rc)
            rc = mtp(s, ids + a, m, p0, s->hbuf, Q36_MTP_H_TRUNK, false, err);
        s->st.t_catchup += now() - t0;
        memcpy(s->hlast, s->hbuf + (int64_t)m * D, (size_t)D * sizeof *s->hlast);
        a += m;
    }
    s->n_pend = 0;
    s->pend_pos = q36_slot_pos(s->e, s->slot);
    return rc;
}

/* ------------------------------------------------------------------ rounds */

/* Drafts up to *k tokens after x (at position P, paired with s->hlast): the
 * first MTP pass writes the pending rows and x's; each draft is the MTP
 * head's argmax, chained through the block's own hidden row, until one's
 * top-10 probability falls below p_min (*k: the drafts made). */
static int draft(spec *s, int32_t x, int P, int *k, int32_t *d, q36_err *err)
{
    const int64_t D = s->D;
    int32_t ids[SPEC_MAX_DRAFT + 2];
    const int n = s->n_pend + 1;
    memcpy(ids, s->pend_id, (size_t)s->n_pend * sizeof *ids);
    ids[s->n_pend] = x;
    memcpy(s->hbuf, s->pend_h, (size_t)s->n_pend * D * sizeof *s->hbuf);
    memcpy(s->hbuf + s->n_pend * D, s->hlast, (size_t)D * sizeof *s->hbuf);
    const int32_t *vid;
    const int nv = q36_mtp_vocab(s->e, &vid);
    if (s->p_min <= 0 && *k > 0) {
        /* greedy drafts with no threshold to test: chained on the device,
         * the k columns read back at the end */
        int32_t best[SPEC_MAX_DRAFT];
        for (int i = 0; i < n; i++) {
            s->ids[i] = ids[i];
            s->pos[i] = P - s->n_pend + i;
        }
        const int32_t last = n - 1;
        const q36_batch b = { n, s->ids, s->slots, s->pos, 1, &last };
        s->n_pend = 0;
        int rc = q36_mtp_eval_chain(s->e, &b, s->hbuf, Q36_MTP_H_TRUNK, *k, best, err);
        for (int i = 0; i < *k && !rc; i++)
            d[i] = vid ? vid[best[i]] : best[i];
        return rc;
    }
    int rc = mtp(s, ids, n, P - s->n_pend, s->hbuf, Q36_MTP_H_TRUNK, true, err);
    s->n_pend = 0;
    for (int i = 0; i < *k && !rc; i++) {
        const int32_t best = s->p_min > 0 ? spec_argmax(s->mlog, nv) : s->mbest;
        if (s->p_min > 0 && top10_p(s->mlog, nv, best) < s->p_min) {
            *k = i;
            break;
        }
        d[i] = vid ? vid[best] : best;
        if (i + 1 < *k) {
            memcpy(s->hbuf, s->mh, (size_t)D * sizeof *s->hbuf);
            rc = mtp(s, &d[i], 1, P + 1 + i, s->hbuf, Q36_MTP_H_MTP, true, err);
        }
    }
    return rc;
}

int spec_run(spec *s, gen *g, float *logits, const volatile sig_atomic_t *interrupt,
             gen_emit_fn emit, void *user, gen_result *res, q36_err *err)
{
    const int64_t V = s->V, D = s->D;
    const int n_ctx = q36_engine_n_ctx(s->e);
    /* greedy (gen_run's rule): the verify rows' choices made on the device,
     * one id a row back instead of k+1 rows of logits */
    const bool dev = gen_greedy(g) && gen_device_greedy(g);
    int32_t vbest[SPEC_MAX_DRAFT + 1];
    int rc = 0;
    double t0 = now();
    gen_token t;
    res->stop = GEN_GOING;
    if (gen_over(g)) {
        res->stop = GEN_STOP_LENGTH;
        return 0;
    }
    /* x: the token sampled last, not yet evaluated, at position P */
    int P = q36_slot_pos(s->e, s->slot);
    if (P >= n_ctx) {
        res->stop = GEN_STOP_CTX;
        goto finish;
    }
    if ((rc = gen_next(g, logits, &t, err)))
        return rc;
    res->n_gen++;
    s->st.emitted++;
    if ((rc = emit(user, &t)))
        return rc;
    int32_t x = t.id;
    res->stop = t.stop;
    while (!res->stop) {
        if (interrupt && *interrupt) {
            res->stop = GEN_STOP_USER;
            break;
        }
        /* x fits at P; a token after it would not: plain decoding
         * evaluates x, then stops (below) */
        if (P + 1 >= n_ctx) {
            res->stop = GEN_STOP_CTX;
            break;
        }
        /* every verify row's token must be one plain decoding samples:
         * rows P..P+k, the last sampled only when P+k+1 < n_ctx */
        int k = s->k;
        if (k > n_ctx - 2 - P)
            k = n_ctx - 2 - P;
        int32_t d[SPEC_MAX_DRAFT];
        double ta = now();
        /* MTP row P (x) is written whenever a draft is tried */
        const bool wrote = k > 0;
        if (k > 0 && (rc = draft(s, x, P, &k, d, err)))
            return rc;
        double tb = now();
        s->st.t_draft += tb - ta;
        s->round_pos = P;
        s->round_k = k;
        memcpy(s->round_d, d, (size_t)k * sizeof *d);

        /* verify: x and the drafts in one pass, every row's logits */
        if (k > 0 && (rc = s->rewind ? q36_engine_keep_states(s->e, s->slot, err)
                                     : q36_slot_save(s->e, s->slot, s->ck, err)))
            return rc;
        int32_t vids[SPEC_MAX_DRAFT + 1], outs[SPEC_MAX_DRAFT + 1];
        vids[0] = x;
        for (int i = 0; i <= k; i++) {
            if (i)
                vids[i] = d[i - 1];
            outs[i] = i;
        }
        if ((rc = trunk_best(s, vids, k + 1, outs, k + 1, s->vlog, dev ? vbest : NULL, s->vh,
                             err)))
            return rc;
        double tc = now();
        s->st.t_verify += tc - tb;
        s->st.rounds++;
        s->st.drafted += k;
        for (int i = 0; i < k; i++)
            s->st.drafted_at[i]++;

        /* accept: sample each row as plain decoding would; a draft stays
         * while it is the token sampled */
        int m = 0;
        for (;;) {
            if ((rc = dev ? gen_next_id(g, vbest[m], &t, err)
                          : gen_next(g, s->vlog + (int64_t)m * V, &t, err)))
                return rc;
            res->n_gen++;
            s->st.emitted++;
            if ((rc = emit(user, &t)))
                return rc;
            res->stop = t.stop;
            if (res->stop || m == k || t.id != d[m])
                break;
            s->st.accepted_at[m]++;
            s->st.accepted++;
            m++;
            if (interrupt && *interrupt)
                break;
        }

        /* rollback: the slot keeps x and the m drafts kept */
        double td = now();
        if (m < k && s->rewind) {
            if ((rc = q36_slot_rewind(s->e, s->slot, m + 1, err)))
                return rc;
            s->st.rewinds++;
        } else if (m < k) {
            if ((rc = q36_slot_load(s->e, s->slot, s->ck, err)))
                return rc;
            if ((rc = trunk(s, vids, m + 1, NULL, 0, NULL, NULL, err)))
                return rc;
            s->st.replays++;
            s->st.replay_rows += m + 1;
        }
        s->st.t_rollback += now() - td;

        /* the MTP rows of the kept drafts, with the trunk's hidden rows,
         * are written by the next round's first MTP pass */
        const int from = wrote ? 1 : 0;
        s->n_pend = 0;
        for (int j = from; j <= m; j++) {
            s->pend_id[s->n_pend] = vids[j];
            memcpy(s->pend_h + (int64_t)s->n_pend * D, j ? s->vh + (int64_t)(j - 1) * D : s->hlast,
                   (size_t)D * sizeof *s->pend_h);
            s->n_pend++;
        }
        s->pend_pos = P + from;
        memcpy(s->hlast, s->vh + (int64_t)m * D, (size_t)D * sizeof *s->hlast);
        if (!dev)          /* (with dev, logits stay the prompt's, as in gen_run) */
            memcpy(logits, s->vlog + (int64_t)m * V, (size_t)V * sizeof *logits);
        P += m + 1;
        x = t.id;
        if (interrupt && *interrupt && !res->stop)
            res->stop = GEN_STOP_USER;
    }
    /* as gen_run: the last token is evaluated too (the end of generation
     * included, and before a full context or an interrupt), so the slot
     * holds the whole reply and logits the next row */
    if (P < n_ctx) {
        const int32_t zero = 0;
        int32_t after;
        if ((rc = trunk_best(s, &x, 1, &zero, 1, logits, dev ? &after : NULL, s->vh, err)))
            return rc;
        s->pend_id[s->n_pend] = x;
        memcpy(s->pend_h + (int64_t)s->n_pend * D, s->hlast, (size_t)D * sizeof *s->pend_h);
        s->n_pend++;
        memcpy(s->hlast, s->vh, (size_t)D * sizeof *s->hlast);
    }
finish:
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

/* ------------------------------------------------------------------- rule */

int32_t spec_accept(const float *p, const float *q, int32_t n, int32_t d, double u1, double u2)
{
    if (q[d] <= 0.0f || u1 * q[d] < p[d])
        return d;
    double z = 0;
    for (int32_t i = 0; i < n; i++)
        z += p[i] > q[i] ? p[i] - q[i] : 0.0;
    double c = 0, target = u2 * z;
    int32_t last = d;
    for (int32_t i = 0; i < n; i++) {
        const double r = p[i] > q[i] ? p[i] - q[i] : 0.0;
        if (r <= 0)
            continue;
        c += r;
        last = i;
        if (target < c)
            return i;
    }
    return last;
}
