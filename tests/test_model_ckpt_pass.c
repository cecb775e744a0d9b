/* test_model_ckpt_pass.c: checkpoints inside a pass (include/q36.h,
 * q36_engine_save_at) in exact mode, on q36 synth models (qwen35 and
 * qwen35moe, tiny): three slots share passes of up to 96 rows, each asking
 * for checkpoints at odd positions (1, 63, 64, 65, inside a pass, a run's
 * last row), with and without K/V rows; every checkpoint is bit-identical
 * (q36_ckpt_get bytes: conv tails, state matrices, K/V rows) to the one
 * q36_slot_save makes after passes that end at that position on a
 * one-slot engine; the logits of passes that save are the reference's;
 * a checkpoint restored into another slot (whole, or a state one over a
 * deeper whole one, as the server's prefix cache does) continues with the
 * reference's logits; a pass that keeps per-row states (a verify row)
 * beside a prompt that saves gives both right; requests that do not fit
 * the pass are refused with nothing evaluated and are forgotten, and a
 * request refused at the call forgets the others. Models
 * are made with `$Q36 synth` (default ./q36) in a temporary folder. */
#include "test.h"
#include "test_synth.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "include/q36.h"

enum { SLOTS = 3, CTX = 160, BATCH = 96, PASSES = 3, MAXLEN = 140 };

/* rows of each slot in each pass (a pass: at most BATCH rows) */
static const int ROWS[PASSES][SLOTS] = { { 70, 20, 6 }, { 30, 60, 6 }, { 40, 16, 40 } };

typedef struct { int pass, slot, pos, kv; } save_req;
static const save_req SAVES[] = {
    { 0, 0, 1, 1 }, { 0, 0, 63, 0 }, { 0, 0, 64, 0 }, { 0, 0, 65, 1 }, { 0, 0, 70, 0 },
    { 0, 1, 7, 0 }, { 0, 1, 20, 1 }, { 0, 2, 3, 0 },
    { 1, 0, 71, 0 }, { 1, 0, 96, 0 }, { 1, 0, 100, 1 },
    { 1, 1, 21, 0 }, { 1, 1, 64, 1 }, { 1, 1, 79, 0 }, { 1, 1, 80, 0 }, { 1, 2, 12, 1 },
    { 2, 0, 128, 0 }, { 2, 0, 140, 1 }, { 2, 1, 81, 0 },
    { 2, 2, 13, 0 }, { 2, 2, 32, 0 }, { 2, 2, 33, 0 }, { 2, 2, 51, 1 }, { 2, 2, 52, 0 },
};
enum { N_SAVES = sizeof SAVES / sizeof SAVES[0] };

typedef struct {
    int32_t ids[SLOTS][MAXLEN];
    int     len[SLOTS];
    float  *ref[SLOTS];        /* len x V logits of each sequence alone */
    int     V;
} refs;

static q36_engine *engine(const q36_model *m, int slots, int n_keep, const char *name)
{
    q36_engine_opts o = q36_engine_opts_default();
    o.n_slots = slots;
    o.n_batch = BATCH;
    o.n_threads = 2;
    o.n_keep = n_keep;
    q36_engine *e = NULL;
    q36_err err = { 0 };
    if (q36_engine_new(m, CTX, &o, &e, &err))
        t_fail(name, "engine_new: %s", err.msg);
    return e;
}

/* An engine for the case ckpt_pass.TAG.WHAT (its name into name). */
static q36_engine *case_engine(const q36_model *m, int slots, int n_keep, const char *tag,
                               const char *what, char *name, size_t cap)
{
    snprintf(name, cap, "ckpt_pass.%s.%s", tag, what);
    return engine(m, slots, n_keep, name);
}

/* n tokens of sequence `seq` into slot sl from its position, in passes of
 * at most BATCH rows; every row's logits into lg (n x V) when not NULL. */
static int feed(q36_engine *e, const refs *R, int sl, int seq, int n, float *lg, q36_err *err)
{
    int32_t id[BATCH], s[BATCH], p[BATCH], o[BATCH];
    for (int done = 0; done < n;) {
        const int k = n - done < BATCH ? n - done : BATCH, p0 = q36_slot_pos(e, sl);
        for (int i = 0; i < k; i++) {
            id[i] = R->ids[seq][p0 + i];
            s[i] = sl;
            p[i] = p0 + i;
            o[i] = i;
        }
        q36_batch b = { k, id, s, p, lg ? k : 0, o };
        int rc = q36_engine_eval(e, &b, lg ? lg + (size_t)done * R->V : NULL, NULL, err);
        if (rc)
            return rc;
        done += k;
    }
    return 0;
}

/* A checkpoint's bytes (malloc'd), or NULL. */
static uint8_t *ckpt_bytes(q36_engine *e, const q36_ckpt *c, int kv_rows, q36_err *err)
{
    uint8_t *b = malloc(q36_ckpt_bytes(e, kv_rows));
    if (b && q36_ckpt_get(e, c, b, err)) {
        free(b);
        return NULL;
    }
    return b;
}

/* What q36_slot_save gives after the first pos tokens of sequence seq on a
 * one-slot engine (passes ending at pos): its bytes, or NULL. */
static uint8_t *ref_ckpt(const q36_model *m, const refs *R, int seq, int pos, int kv,
                         const char *name)
{
    q36_engine *e = engine(m, 1, 0, name);
    if (!e)
        return NULL;
    q36_ckpt *c = NULL;
    q36_err err = { 0 };
    uint8_t *b = NULL;
    if (!feed(e, R, 0, seq, pos, NULL, &err) && !q36_ckpt_new(e, kv ? pos : 0, &c, &err) &&
        !q36_slot_save(e, 0, c, &err))
        b = ckpt_bytes(e, c, kv ? pos : 0, &err);
    if (!b)
        t_fail(name, "reference checkpoint at %d: %s", pos, err.msg);
    q36_ckpt_free(c);
    q36_engine_free(e);
    return b;
}

/* Each sequence alone in a one-slot engine: every row's logits. */
static bool make_refs(const q36_model *m, refs *R, const char *tag)
{
    char name[128];
    snprintf(name, sizeof name, "ckpt_pass.%s.reference", tag);
    q36_engine *e = engine(m, 1, 0, name);
    if (!e)
        return false;
    R->V = q36_engine_n_vocab(e);
    t_rng r = t_rng_named(tag);
    q36_err err = { 0 };
    int rc = 0;
    for (int s = 0; s < SLOTS && !rc; s++) {
        R->len[s] = 0;
        for (int p = 0; p < PASSES; p++)
            R->len[s] += ROWS[p][s];
        for (int i = 0; i < R->len[s]; i++)
            R->ids[s][i] = (int32_t)(t_next(&r) % (uint64_t)R->V);
        R->ref[s] = malloc(sizeof(float) * (size_t)R->len[s] * (size_t)R->V);
        q36_slot_reset(e, 0);
        rc = R->ref[s] ? feed(e, R, 0, s, R->len[s], R->ref[s], &err) : Q36_E_NOMEM;
    }
    q36_engine_free(e);
    if (rc)
        t_fail(name, "%s", err.msg);
    return rc == 0;
}

static void free_refs(refs *R)
{
    for (int s = 0; s < SLOTS; s++)
        free(R->ref[s]);
}

/* One pass of ROWS[p] with the saves of pass p asked for; the last row of
 * each slot comes back into lg (SLOTS x V). */
static int shared_pass(q36_engine *e, const refs *R, int p, q36_ckpt **ck, float *lg,
                       q36_err *err)
{
    int32_t id[BATCH], s[BATCH], pos[BATCH], o[SLOTS];
    int n = 0, n_out = 0;
    for (int sl = 0; sl < SLOTS; sl++) {
        const int p0 = q36_slot_pos(e, sl);
        for (int i = 0; i < ROWS[p][sl]; i++, n++) {
            id[n] = R->ids[sl][p0 + i];
            s[n] = sl;
            pos[n] = p0 + i;
        }
        o[n_out++] = n - 1;
    }
    for (int i = 0; i < N_SAVES; i++)
        if (SAVES[i].pass == p) {
            int rc = q36_engine_save_at(e, SAVES[i].slot, SAVES[i].pos, ck[i], err);
            if (rc)
                return rc;
        }
    q36_batch b = { n, id, s, pos, n_out, o };
    return q36_engine_eval(e, &b, lg, NULL, err);
}

/* The saves of every pass against the references, the logits of the
 * passes against the sequences' own, then restores into other slots. */
static void run_saves(const q36_model *m, const refs *R, const char *tag)
{
    char name[128];
    q36_engine *e = case_engine(m, SLOTS, 0, tag, "shared_passes", name, sizeof name);
    if (!e)
        return;
    const int V = R->V;
    q36_ckpt *ck[N_SAVES] = { 0 };
    float *lg = malloc(sizeof(float) * (size_t)SLOTS * (size_t)V);
    float *all = malloc(sizeof(float) * (size_t)MAXLEN * (size_t)V);
    q36_err err = { 0 };
    int rc = lg && all ? 0 : Q36_E_NOMEM;
    for (int i = 0; i < N_SAVES && !rc; i++)
        rc = q36_ckpt_new(e, SAVES[i].kv ? SAVES[i].pos : 0, &ck[i], &err);
    const char *fail = NULL;
    char why[160] = "";
    for (int p = 0; p < PASSES && !rc && !fail; p++) {
        rc = shared_pass(e, R, p, ck, lg, &err);
        for (int sl = 0; sl < SLOTS && !rc && !fail; sl++) {
            const int last = q36_slot_pos(e, sl) - 1;
            if (memcmp(lg + (size_t)sl * V, R->ref[sl] + (size_t)last * V, sizeof(float) * (size_t)V)) {
                fail = why;
                snprintf(why, sizeof why, "pass %d: logits of slot %d at %d differ", p, sl, last);
            }
        }
    }
    t_check(name, !rc && !fail, "%s", rc ? err.msg : fail);

    /* each checkpoint against q36_slot_save after passes ending there */
    int bad = 0, first_bad = -1;
    for (int i = 0; i < N_SAVES && !rc; i++) {
        const save_req *q = &SAVES[i];
        char rn[160];
        snprintf(rn, sizeof rn, "ckpt_pass.%s.reference_%d", tag, q->pos);
        uint8_t *want = ref_ckpt(m, R, q->slot, q->pos, q->kv, rn);
        uint8_t *got = ckpt_bytes(e, ck[i], q->kv ? q->pos : 0, &err);
        const int kv_rows = q->kv ? q->pos : 0;
        if (!want || !got || q36_ckpt_pos(ck[i]) != q->pos ||
            memcmp(want, got, q36_ckpt_bytes(e, kv_rows))) {
            bad++;
            first_bad = first_bad < 0 ? i : first_bad;
        }
        free(want);
        free(got);
    }
    snprintf(name, sizeof name, "ckpt_pass.%s.states_equal_pass_ends", tag);
    if (first_bad >= 0)
        t_fail(name, "%d of %d checkpoints differ; the first: slot %d position %d%s", bad,
               N_SAVES, SAVES[first_bad].slot, SAVES[first_bad].pos,
               SAVES[first_bad].kv ? " (with K/V rows)" : "");
    else
        t_check(name, !rc, "%s", err.msg);

    /* restore-then-continue: whole checkpoints into another slot; a state
     * one over a deeper whole one of the same tokens */
    static const struct { int whole, state; } RS[] = {
        { 3, -1 }, { 0, -1 }, { 12, -1 }, { 15, -1 }, { 17, 2 }, { 17, 16 }, { 22, 20 }, { 10, 9 },
    };
    fail = NULL;
    for (size_t k = 0; k < sizeof RS / sizeof RS[0] && !rc && !fail; k++) {
        const save_req *w = &SAVES[RS[k].whole];
        const int seq = w->slot, dst = (seq + 1 + (int)k) % SLOTS;
        rc = q36_slot_load(e, dst, ck[RS[k].whole], &err);
        if (!rc && RS[k].state >= 0)
            rc = q36_slot_load_state(e, dst, ck[RS[k].state], &err);
        const int p0 = q36_slot_pos(e, dst);
        if (!rc)
            rc = feed(e, R, dst, seq, R->len[seq] - p0, all, &err);
        if (!rc && memcmp(all, R->ref[seq] + (size_t)p0 * V,
                          sizeof(float) * (size_t)(R->len[seq] - p0) * (size_t)V)) {
            fail = why;
            snprintf(why, sizeof why, "sequence %d restored at %d into slot %d: logits differ",
                     seq, p0, dst);
        }
    }
    snprintf(name, sizeof name, "ckpt_pass.%s.restore_continues_cold", tag);
    t_check(name, !rc && !fail, "%s", rc ? err.msg : fail);
    for (int i = 0; i < N_SAVES; i++)
        q36_ckpt_free(ck[i]);
    free(lg);
    free(all);
    q36_engine_free(e);
}

/* A verify row that keeps its states (slot 0) beside a prompt that saves
 * (slot 1), in one pass: the saves are right, and so is a rewind. */
static void run_keep(const q36_model *m, const refs *R, const char *tag)
{
    char name[128];
    q36_engine *e = case_engine(m, 2, 4, tag, "keep_beside_saves", name, sizeof name);
    if (!e)
        return;
    q36_ckpt *c[3] = { 0 };
    q36_err err = { 0 };
    int rc = feed(e, R, 0, 0, 10, NULL, &err);
    const int pos[3] = { 17, 50, 12 }, kv[3] = { 0, 1, 1 };
    for (int i = 0; i < 3 && !rc; i++)
        rc = q36_ckpt_new(e, kv[i] ? pos[i] : 0, &c[i], &err);
    int32_t id[BATCH], s[BATCH], p[BATCH], o[1] = { 2 };
    for (int i = 0; i < 53; i++) {
        const int sl = i < 3 ? 0 : 1, at = i < 3 ? 10 + i : i - 3;
        id[i] = R->ids[sl][at];
        s[i] = sl;
        p[i] = at;
    }
    if (!rc)
        rc = q36_engine_keep_states(e, 0, &err);
    for (int i = 0; i < 2 && !rc; i++)
        rc = q36_engine_save_at(e, 1, pos[i], c[i], &err);
    float *lg = malloc(sizeof(float) * (size_t)R->V);
    q36_batch b = { 53, id, s, p, 1, o };
    if (!rc)
        rc = q36_engine_eval(e, &b, lg, NULL, &err);
    if (!rc)
        rc = q36_slot_rewind(e, 0, 2, &err);
    if (!rc)
        rc = q36_slot_save(e, 0, c[2], &err);
    const char *fail = NULL;
    if (!rc && memcmp(lg, R->ref[0] + (size_t)12 * R->V, sizeof(float) * (size_t)R->V))
        fail = "the verify row's logits differ";
    const int seq[3] = { 1, 1, 0 };
    for (int i = 0; i < 3 && !rc && !fail; i++) {
        uint8_t *want = ref_ckpt(m, R, seq[i], pos[i], kv[i], name);
        uint8_t *got = ckpt_bytes(e, c[i], kv[i] ? pos[i] : 0, &err);
        if (!want || !got || memcmp(want, got, q36_ckpt_bytes(e, kv[i] ? pos[i] : 0)))
            fail = i < 2 ? "a checkpoint saved inside the pass differs" : "the rewound state differs";
        free(want);
        free(got);
    }
    t_check(name, !rc && !fail, "%s", rc ? err.msg : fail);
    free(lg);
    for (int i = 0; i < 3; i++)
        q36_ckpt_free(c[i]);
    q36_engine_free(e);
}

/* Requests that do not fit are refused: at the call (checkpoint too small,
 * one too many: the requests before it are forgotten) or with the pass
 * (slot without rows, a position not after one of its rows, twice the
 * same); nothing is evaluated, the checkpoint stays unsaved, and the next
 * pass runs without the requests. */
static void run_refusals(const q36_model *m, const refs *R, const char *tag)
{
    char name[128];
    q36_engine *e = case_engine(m, SLOTS, 0, tag, "refusals", name, sizeof name);
    if (!e)
        return;
    q36_ckpt *c = NULL, *c2 = NULL, *small = NULL;
    q36_err err = { 0 };
    int rc = q36_ckpt_new(e, 0, &c, &err);
    if (!rc)
        rc = q36_ckpt_new(e, 0, &c2, &err);
    if (!rc)
        rc = q36_ckpt_new(e, 4, &small, &err);
    if (!rc)
        rc = feed(e, R, 0, 0, 5, NULL, &err);
    const char *fail = rc ? err.msg : NULL;
    /* slot 0: 8 rows at positions 5..12 */
    int32_t id[8], s[8], p[8];
    for (int i = 0; i < 8; i++) {
        id[i] = R->ids[0][5 + i];
        s[i] = 0;
        p[i] = 5 + i;
    }
    const q36_batch b = { 8, id, s, p, 0, NULL };
    struct { const char *what; int n; int slot[2], pos[2]; int two_c; } cs[] = {
        { "a slot without rows", 1, { 1 }, { 3 }, 0 },
        { "the slot's own position", 1, { 0 }, { 5 }, 0 },
        { "past the pass", 1, { 0 }, { 14 }, 0 },
        { "a position twice", 2, { 0, 0 }, { 7, 7 }, 1 },
        { "a checkpoint twice", 2, { 0, 0 }, { 7, 9 }, 0 },
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0] && !fail; i++) {
        q36_err e2 = { 0 };
        for (int k = 0; k < cs[i].n && !fail; k++)
            if (q36_engine_save_at(e, cs[i].slot[k], cs[i].pos[k], k && cs[i].two_c ? c2 : c, &e2))
                fail = e2.msg;
        if (!fail && (q36_engine_eval(e, &b, NULL, NULL, &e2) != Q36_E_ARG ||
                      q36_slot_pos(e, 0) != 5 || q36_ckpt_pos(c) != -1))
            fail = cs[i].what;
    }
    q36_err e3 = { 0 };
    if (!fail && q36_engine_save_at(e, 0, 9, small, &e3) != Q36_E_ARG)
        fail = "a checkpoint of 4 K/V rows taken for position 9";
    for (int i = 0; i < Q36_MAX_SAVES && !fail; i++)
        if (q36_engine_save_at(e, 0, 6, c, &e3))
            fail = "a request below the limit refused";
    if (!fail && q36_engine_save_at(e, 0, 6, c, &e3) != Q36_E_ARG)
        fail = "a request over the limit taken";
    /* forgotten (the refusal forgets the 64 before it too): the pass runs
     * now, and then goes on like the reference */
    float *lg = malloc(sizeof(float) * (size_t)R->V);
    int32_t o[1] = { 7 };
    const q36_batch b2 = { 8, id, s, p, 1, o };
    if (!fail && q36_engine_eval(e, &b2, lg, NULL, &e3))
        fail = e3.msg;
    if (!fail && (q36_slot_pos(e, 0) != 13 || q36_ckpt_pos(c) != -1 ||
                  memcmp(lg, R->ref[0] + (size_t)12 * R->V, sizeof(float) * (size_t)R->V)))
        fail = "the pass after the refusals is not the reference's";
    t_check(name, !fail, "%s", fail);
    free(lg);
    q36_ckpt_free(c);
    q36_ckpt_free(c2);
    q36_ckpt_free(small);
    q36_engine_free(e);
}

static void run_model(const char *tag, const char *path)
{
    q36_err err = { 0 };
    q36_model *m = NULL;
    char name[128];
    snprintf(name, sizeof name, "ckpt_pass.%s.open", tag);
    if (q36_model_open(path, &m, &err)) {
        t_fail(name, "%s", err.msg);
        return;
    }
    refs R;
    memset(&R, 0, sizeof R);
    if (make_refs(m, &R, tag)) {
        run_saves(m, &R, tag);
        run_keep(m, &R, tag);
        run_refusals(m, &R, tag);
    }
    free_refs(&R);
    q36_model_free(m);
}

int main(void)
{
    t_synth_pair("ckpt_pass", 7, 8, run_model);
    return t_exit();
}
