/* test_model_batch.c: batch invariance of the engine (include/q36.h) in
 * exact mode, on q36 synth models (qwen35 and qwen35moe, tiny): a slot's
 * logits, and its hidden rows, are bit-identical whether its tokens run
 * alone, one pass per token, or in passes shared with up to 7 other slots
 * at other positions, as prompt chunks of any size or as single decode
 * rows, with the rows asked for in any order; checkpoints saved and loaded
 * on the device (into the same slot and into another) continue with the
 * same bits; a batch that breaks the rules is refused without touching
 * any slot; and in fast mode (f32 models) mixed batches stay within float
 * rounding of exact mode. Models are made with `$Q36 synth` (default
 * ./q36) in a temporary folder. */
#include "test.h"
#include "test_synth.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "include/q36.h"

enum { SLOTS = 8, LEN = 29, CTX = 48 };

static q36_engine *engine_mode(const q36_model *m, int slots, int batch, int threads, int kv,
                               int fast, const char *name)
{
    q36_engine_opts o = q36_engine_opts_default();
    o.fast = fast;
    o.n_slots = slots;
    o.n_batch = batch;
    o.n_threads = threads;
    o.type_k = o.type_v = kv;
    q36_engine *e = NULL;
    q36_err err = { 0 };
    if (q36_engine_new(m, CTX, &o, &e, &err))
        t_fail(name, "engine_new: %s", err.msg);
    return e;
}

static q36_engine *engine(const q36_model *m, int slots, int batch, int threads, int kv,
                          const char *name)
{
    return engine_mode(m, slots, batch, threads, kv, 0, name);
}

/* ||a - b|| / ||b|| over n floats. */
static double rel_l2(const float *a, const float *b, int n)
{
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

typedef struct {
    int32_t ids[SLOTS][LEN];
    float  *ref[SLOTS];        /* LEN x V logits of each sequence alone */
    float  *hid[SLOTS];        /* LEN x D hidden rows */
    int     V, D;
} refs;

/* Each sequence alone in slot 0 of a one-slot engine, one token a pass. */
static bool make_refs(const q36_model *m, int kv, refs *R, const char *tag)
{
    char name[128];
    snprintf(name, sizeof name, "batch.%s.reference", tag);
    q36_engine *e = engine(m, 1, 4, 1, kv, name);
    if (!e)
        return false;
    R->V = q36_engine_n_vocab(e);
    R->D = q36_engine_n_embd(e);
    t_rng r = t_rng_named(tag);
    q36_err err = { 0 };
    int rc = 0;
    for (int s = 0; s < SLOTS; s++) {
        for (int i = 0; i < LEN; i++)
            R->ids[s][i] = (int32_t)(t_next(&r) % (uint64_t)R->V);
        R->ref[s] = malloc(sizeof(float) * (size_t)(LEN * R->V));
        R->hid[s] = malloc(sizeof(float) * (size_t)(LEN * R->D));
        q36_slot_reset(e, 0);
        for (int i = 0; i < LEN && !rc; i++) {
            const int32_t slot = 0, pos = i, out = 0;
            q36_batch b = { 1, &R->ids[s][i], &slot, &pos, 1, &out };
            rc = q36_engine_eval(e, &b, R->ref[s] + (size_t)i * R->V, R->hid[s] + (size_t)i * R->D,
                                 &err);
        }
    }
    t_check(name, rc == 0, "rc %d: %s", rc, err.msg);
    q36_engine_free(e);
    return rc == 0;
}

static void free_refs(refs *R)
{
    for (int s = 0; s < SLOTS; s++) {
        free(R->ref[s]);
        free(R->hid[s]);
    }
}

/* All SLOTS sequences in one engine. Slot s joins at pass s (so positions
 * differ across the batch) and takes prompt chunks of sizes drawn from
 * `chunks` until its prompt of `prompt[s]` tokens is in, then one token a
 * pass. Rows come back in a shuffled order when `shuffle`. Every row's
 * logits and hidden row must equal the reference's bits (exact mode), or
 * be within `tol` of them in relative L2 (fast mode, tol > 0). */
static void run_mixed(const q36_model *m, int kv, const refs *R, const char *tag, const char *how,
                      int threads, const int *chunks, int n_chunks, bool shuffle, double tol)
{
    char name[160];
    snprintf(name, sizeof name, "batch.%s.%s", tag, how);
    q36_engine *e = engine_mode(m, SLOTS, SLOTS * 9, threads, kv, tol > 0, name);
    if (!e)
        return;
    const int V = R->V, D = R->D;
    int done[SLOTS] = { 0 }, prompt[SLOTS], pass = 0, left = SLOTS * LEN, bad = -1, rc = 0;
    for (int s = 0; s < SLOTS; s++)
        prompt[s] = 3 + 3 * s;
    int32_t id[SLOTS * 9], slot[SLOTS * 9], pos[SLOTS * 9], out[SLOTS * 9], who[SLOTS * 9];
    double num = 0, den = 0, worst = 0;     /* fast mode: the logits' distance */
    float *lg = malloc(sizeof(float) * (size_t)(SLOTS * 9 * V));
    float *hd = malloc(sizeof(float) * (size_t)(SLOTS * 9 * D));
    t_rng r = t_rng_named(name);
    q36_err err = { 0 };
    while (left > 0 && !rc && bad < 0) {
        int n = 0;
        /* slots in a rotating order, so that each sits at every place of a batch */
        for (int k = 0; k < SLOTS; k++) {
            const int s = (k + pass) % SLOTS;
            if (s > pass || done[s] == LEN)
                continue;
            int take = 1;
            if (done[s] < prompt[s]) {
                take = chunks[t_next(&r) % (uint64_t)n_chunks];
                take = take < prompt[s] - done[s] ? take : prompt[s] - done[s];
            }
            for (int i = 0; i < take; i++, n++) {
                id[n] = R->ids[s][done[s] + i];
                slot[n] = s;
                pos[n] = done[s] + i;
                who[n] = s * LEN + done[s] + i;
            }
            done[s] += take;
            left -= take;
        }
        pass++;
        if (!n)
            continue;
        for (int i = 0; i < n; i++)
            out[i] = i;
        if (shuffle)
            for (int i = n - 1; i > 0; i--) {
                int j = (int)(t_next(&r) % (uint64_t)(i + 1)), t = out[i];
                out[i] = out[j];
                out[j] = t;
            }
        q36_batch b = { n, id, slot, pos, n, out };
        rc = q36_engine_eval(e, &b, lg, hd, &err);
        for (int i = 0; i < n && !rc && bad < 0; i++) {
            const int w = who[out[i]], s = w / LEN, p = w % LEN;
            const float *l = lg + (size_t)i * V, *h = hd + (size_t)i * D;
            const float *rl = R->ref[s] + (size_t)p * V, *rh = R->hid[s] + (size_t)p * D;
            if (tol > 0) {
                for (int c = 0; c < V; c++) {
                    num += ((double)l[c] - rl[c]) * ((double)l[c] - rl[c]);
                    den += (double)rl[c] * rl[c];
                }
                worst = fmax(worst, rel_l2(l, rl, V));
            } else if (memcmp(l, rl, sizeof(float) * (size_t)V) ||
                       memcmp(h, rh, sizeof(float) * (size_t)D)) {
                bad = w;
            }
        }
    }
    const double rel = den > 0 ? sqrt(num / den) : 0;
    if (tol > 0 && !(rel <= tol))
        bad = 0;
    t_check(name, rc == 0 && bad < 0 && left == 0, "rc %d (%s); first row differing: slot %d "
            "position %d (pass %d); relative L2 %.3g (worst row %.3g)", rc, err.msg,
            bad < 0 ? -1 : bad / LEN, bad < 0 ? -1 : bad % LEN, pass, rel, worst);
    if (tol > 0)
        printf("# %s: relative L2 %.3g over all rows, worst row %.3g\n", name, rel, worst);
    free(lg);
    free(hd);
    q36_engine_free(e);
}

/* Checkpoints: slot 2 runs 11 tokens and is saved (with K/V rows), runs
 * on, is loaded back and continues; the checkpoint also goes into slot 5,
 * which continues the same sequence; slot 6 is saved without K/V and
 * loaded back into itself after running ahead; slot 2 is copied into slot
 * 7 and both continue. All rows as the reference's. */
static void run_ckpt(const q36_model *m, int kv, const refs *R, const char *tag)
{
    char name[160];
    snprintf(name, sizeof name, "batch.%s.checkpoints", tag);
    q36_engine *e = engine(m, SLOTS, 16, 2, kv, name);
    if (!e)
        return;
    const int V = R->V, K = 11;
    float *lg = malloc(sizeof(float) * (size_t)(16 * V));
    q36_ckpt *c = NULL, *c6 = NULL;
    q36_err err = { 0 };
    int rc = q36_ckpt_new(e, CTX, &c, &err);
    if (!rc)
        rc = q36_ckpt_new(e, 0, &c6, &err);
    const char *fail = NULL;
    /* n tokens of sequence `seq` into slot `sl` from its position; checks
     * every row against the reference */
#define FEED(sl, seq, n)                                                                      \
    do {                                                                                      \
        int32_t id_[16], s_[16], p_[16], o_[16];                                              \
        const int p0_ = q36_slot_pos(e, (sl));                                                \
        for (int i_ = 0; i_ < (n); i_++) {                                                    \
            id_[i_] = R->ids[(seq)][p0_ + i_];                                                \
            s_[i_] = (sl);                                                                    \
            p_[i_] = p0_ + i_;                                                                \
            o_[i_] = i_;                                                                      \
        }                                                                                     \
        q36_batch b_ = { (n), id_, s_, p_, (n), o_ };                                         \
        if (!rc && !fail && !(rc = q36_engine_eval(e, &b_, lg, NULL, &err)) &&               \
            memcmp(lg, R->ref[(seq)] + (size_t)p0_ * V, sizeof(float) * (size_t)((n) * V)))  \
            fail = "rows after a checkpoint differ";                                          \
    } while (0)
    FEED(2, 2, K);
    FEED(6, 6, K);
    if (!rc)
        rc = q36_slot_save(e, 2, c, &err);
    if (!rc)
        rc = q36_slot_save(e, 6, c6, &err);
    FEED(2, 2, 9);
    FEED(6, 6, 5);
    if (!rc)
        rc = q36_slot_load(e, 2, c, &err);
    if (!rc)
        rc = q36_slot_load(e, 6, c6, &err);
    if (!rc && (q36_slot_pos(e, 2) != K || q36_slot_pos(e, 6) != K))
        fail = "a loaded slot is not at the checkpoint's position";
    FEED(2, 2, 13);
    FEED(6, 6, 13);
    if (!rc)
        rc = q36_slot_load(e, 5, c, &err);
    FEED(5, 2, 13);
    /* a fork: slot 7 becomes a copy of slot 2 (at K + 13) and both go on
     * with sequence 2 */
    if (!rc)
        rc = q36_slot_copy(e, 2, 7, &err);
    if (!rc && q36_slot_pos(e, 7) != q36_slot_pos(e, 2))
        fail = "a copied slot is not at the source's position";
    FEED(7, 2, 4);
    FEED(2, 2, 4);
    /* the bytes it says are the state of one slot (f32 K/V: 4 B an element) */
    if (!rc && !fail) {
        q36_mem_plan p1;
        q36_engine_opts o = q36_engine_opts_default();
        o.n_slots = 1;
        o.type_k = o.type_v = kv;
        q36_engine_plan(m, CTX, &o, &p1, &err);
        if (q36_ckpt_bytes(e, CTX) != p1.kv + p1.recurrent ||
            q36_ckpt_bytes(e, 0) != p1.recurrent)
            fail = "q36_ckpt_bytes is not one slot's K/V and state";
    }
    /* a checkpoint without K/V rows does not go into another slot */
    q36_err e2 = { 0 };
    if (!rc && !fail && q36_slot_load(e, 4, c6, &e2) != Q36_E_ARG)
        fail = "a checkpoint without K/V rows was loaded into another slot";
#undef FEED
    t_check(name, rc == 0 && !fail, "rc %d (%s) %s", rc, err.msg, fail ? fail : "");
    q36_ckpt_free(c);
    q36_ckpt_free(c6);
    free(lg);
    q36_engine_free(e);
}

/* Batches that break the rules: refused with Q36_E_ARG, no slot moved. */
static void run_errors(const q36_model *m, const char *tag)
{
    char name[160];
    snprintf(name, sizeof name, "batch.%s.errors", tag);
    q36_engine *e = engine(m, 3, 8, 1, Q36_KV_F16, name);
    if (!e)
        return;
    const int32_t id[4] = { 1, 2, 3, 4 };
    static const struct {
        const char *what;
        int n;
        int32_t slot[4], pos[4];
        int n_out;
        int32_t out[2];
    } c[] = {
        { "slot out of range", 2, { 0, 3 }, { 0, 0 }, 0, { 0 } },
        { "not at the slot's position", 1, { 1 }, { 1 }, 0, { 0 } },
        { "positions not consecutive", 2, { 0, 0 }, { 0, 2 }, 0, { 0 } },
        { "a slot's rows split", 3, { 0, 1, 0 }, { 0, 0, 1 }, 0, { 0 } },
        { "output row out of range", 2, { 0, 1 }, { 0, 0 }, 1, { 2 } },
        { "too many rows", 9, { 0 }, { 0 }, 0, { 0 } },
    };
    const char *fail = NULL;
    for (size_t i = 0; i < sizeof c / sizeof c[0] && !fail; i++) {
        q36_err err = { 0 };
        q36_batch b = { c[i].n, id, c[i].slot, c[i].pos, c[i].n_out, c[i].out };
        float lg[1];
        if (q36_engine_eval(e, &b, c[i].n_out ? lg : NULL, NULL, &err) != Q36_E_ARG ||
            q36_slot_pos(e, 0) || q36_slot_pos(e, 1) || q36_slot_pos(e, 2))
            fail = c[i].what;
    }
    t_check(name, !fail, "accepted, or moved a slot: %s", fail ? fail : "");
    q36_engine_free(e);
}

/* The model at path, or NULL after a failed case batch.TAG.open. */
static q36_model *open_model(const char *tag, const char *path)
{
    char name[128];
    q36_err err = { 0 };
    q36_model *m = NULL;
    snprintf(name, sizeof name, "batch.%s.open", tag);
    if (q36_model_open(path, &m, &err))
        t_fail(name, "%s", err.msg);
    return m;
}

static void run_model(const char *tag, const char *path)
{
    q36_model *m = open_model(tag, path);
    if (!m)
        return;
    static const int one[] = { 1 }, mixed[] = { 1, 2, 3, 5, 8 }, big[] = { 7, 9 };
    const int kvs[2] = { Q36_KV_F16, Q36_KV_F32 };
    for (int k = 0; k < 2; k++) {
        char t2[64];
        snprintf(t2, sizeof t2, "%s.%s", tag, kvs[k] == Q36_KV_F16 ? "f16" : "f32");
        refs R;
        memset(&R, 0, sizeof R);
        if (make_refs(m, kvs[k], &R, t2)) {
            run_mixed(m, kvs[k], &R, t2, "token_by_token", 1, one, 1, false, 0);
            run_mixed(m, kvs[k], &R, t2, "chunks_t2", 2, mixed, 5, false, 0);
            run_mixed(m, kvs[k], &R, t2, "big_chunks_shuffled_t2", 2, big, 2, true, 0);
            run_ckpt(m, kvs[k], &R, t2);
        }
        free_refs(&R);
    }
    run_errors(m, tag);
    q36_model_free(m);
}

/* Fast mode (the chunked delta rule on prompt runs) in mixed batches stays
 * within float rounding of exact mode. On f32 weights: with quantized
 * activations one rounding difference can flip a code, and on random
 * weights a flip (a router's above all) moves whole rows (parity.test.sh
 * says by how much), which would test the model, not the engine. */
static void run_fast(const char *tag, const char *path)
{
    q36_model *m = open_model(tag, path);
    if (!m)
        return;
    static const int big[] = { 7, 9 };
    refs R;
    memset(&R, 0, sizeof R);
    if (make_refs(m, Q36_KV_F32, &R, tag))
        run_mixed(m, Q36_KV_F32, &R, tag, "fast_chunks_close", 2, big, 2, false, 1e-5);
    free_refs(&R);
    q36_model_free(m);
}

int main(void)
{
    char dir[] = "/tmp/q36_batch_XXXXXX";
    if (!mkdtemp(dir)) {
        t_fail("batch.setup", "mkdtemp failed");
        return t_exit();
    }
    char p1[256], p2[256], p3[256], p4[256];
    int r1 = t_synth_model(dir, "dense", "--arch qwen35 --preset tiny --seed 3", p1, sizeof p1);
    int r2 = t_synth_model(dir, "moe", "--arch qwen35moe --preset tiny --seed 4 --layers 5 --attn-interval 2",
                        p2, sizeof p2);
    int r3 = t_synth_model(dir, "dense32", "--arch qwen35 --preset tiny --seed 5 --type f32", p3,
                           sizeof p3);
    int r4 = t_synth_model(dir, "moe32", "--arch qwen35moe --preset tiny --seed 6 --layers 5 "
                           "--attn-interval 2 --type f32", p4, sizeof p4);
    if (r1 || r2 || r3 || r4) {
        t_fail("batch.setup", "q36 synth failed; is ./q36 built (or $Q36 set)?");
    } else {
        run_model("qwen35", p1);
        run_model("qwen35moe", p2);
        run_fast("qwen35_f32w", p3);
        run_fast("qwen35moe_f32w", p4);
    }
    unlink(p1);
    unlink(p2);
    unlink(p3);
    unlink(p4);
    rmdir(dir);
    return t_exit();
}
