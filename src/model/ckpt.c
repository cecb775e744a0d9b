/* ckpt.c: checkpoints of a slot (include/q36.h), held on the engine's
 * device, and slot-to-slot copies (forks): per DeltaNet layer a copy of the slot's conv tail and state
 * matrices, per attention layer (when made with kv_rows > 0) a copy of its
 * first K/V rows, and the position. Saving and loading are be_copy calls
 * between row views of the state tensors and the checkpoint's tensors: no
 * byte crosses to the host. A checkpoint belongs to its engine and is
 * freed before it. */
#include "forward.h"

#include <stdlib.h>

void q36_ckpt_free(q36_ckpt *c)
{
    if (!c)
        return;
    be_ctx *be = c->e->be;
    for (uint32_t il = 0; il < c->e->hp->n_layer; il++) {
        be_tensor_free(be, c->tail[il]);
        be_tensor_free(be, c->S[il]);
        be_tensor_free(be, c->kc[il]);
        be_tensor_free(be, c->vc[il]);
    }
    free(c);
}

int q36_ckpt_new(q36_engine *e, int kv_rows, q36_ckpt **out, q36_err *err)
{
    *out = NULL;
    if (kv_rows < 0 || kv_rows > e->n_ctx)
        return q36_err_set(err, Q36_E_ARG, "checkpoint of %d K/V rows: outside [0, %lld]",
                           kv_rows, (long long)e->n_ctx);
    q36_ckpt *c = calloc(1, sizeof *c);
    if (!c)
        return q36_err_set(err, Q36_E_NOMEM, "checkpoint: out of memory");
    c->e = e;
    c->kv_rows = kv_rows;
    c->pos = -1;
    bool oom = false;
    for (uint32_t il = 0; il < e->hp->n_layer; il++) {
        be_tensor *const *src[2];
        be_tensor **dst[2];
        int64_t rows[2];
        if (e->hp->recurrent[il]) {
            src[0] = &e->tail[il], dst[0] = &c->tail[il];
            src[1] = &e->S[il], dst[1] = &c->S[il];
            rows[0] = be_rows_of(e->tail[il]) / e->n_slots;
            rows[1] = be_rows_of(e->S[il]) / e->n_slots;
        } else {
            if (!kv_rows)
                continue;
            src[0] = &e->kc[il], dst[0] = &c->kc[il];
            src[1] = &e->vc[il], dst[1] = &c->vc[il];
            rows[0] = rows[1] = kv_rows;
        }
        for (int i = 0; i < 2; i++) {
            *dst[i] = be_tensor_new_type(e->be, be_type_of(*src[i]), rows[i], be_cols_of(*src[i]));
            oom |= !*dst[i];
        }
    }
    if (oom) {
        q36_ckpt_free(c);
        return q36_err_set(err, Q36_E_NOMEM, "checkpoint with %d K/V rows: out of memory", kv_rows);
    }
    *out = c;
    return 0;
}

int q36_ckpt_pos(const q36_ckpt *c) { return (int)c->pos; }

uint64_t q36_ckpt_bytes(const q36_engine *e, int kv_rows)
{
    uint64_t n = 0;
    for (uint32_t il = 0; il < e->hp->n_layer; il++) {
        if (e->hp->recurrent[il])
            n += (be_tensor_bytes(e->tail[il]) + be_tensor_bytes(e->S[il])) / (uint64_t)e->n_slots;
        else
            n += (uint64_t)kv_rows * (be_type_bytes(be_type_of(e->kc[il]), be_cols_of(e->kc[il])) +
                                      be_type_bytes(be_type_of(e->vc[il]), be_cols_of(e->vc[il])));
    }
    return n;
}

/* Copies between slot `slot` and the checkpoint (to_ckpt: slot -> c),
 * K/V rows [0, kv) where the checkpoint holds them. */
static void copy_state(q36_engine *e, int slot, q36_ckpt *c, int64_t kv, bool to_ckpt)
{
    be_ctx *be = e->be;
    be_views_reset(be);
    for (uint32_t il = 0; il < e->hp->n_layer; il++) {
        be_tensor *pairs[2][2];    /* [i] = { slot rows view, checkpoint tensor } */
        int n = 0;
        if (e->hp->recurrent[il]) {
            const int64_t tr = be_rows_of(c->tail[il]), sr = be_rows_of(c->S[il]);
            pairs[0][0] = be_rows(be, e->tail[il], slot * tr, tr), pairs[0][1] = c->tail[il];
            pairs[1][0] = be_rows(be, e->S[il], slot * sr, sr), pairs[1][1] = c->S[il];
            n = 2;
        } else if (c->kv_rows && kv) {
            const int64_t r0 = slot * e->n_ctx;
            pairs[0][0] = be_rows(be, e->kc[il], r0, kv), pairs[0][1] = be_rows(be, c->kc[il], 0, kv);
            pairs[1][0] = be_rows(be, e->vc[il], r0, kv), pairs[1][1] = be_rows(be, c->vc[il], 0, kv);
            n = 2;
        }
        for (int i = 0; i < n; i++) {
            if (to_ckpt)
                be_copy(be, pairs[i][0], pairs[i][1]);
            else
                be_copy(be, pairs[i][1], pairs[i][0]);
        }
    }
}

int q36_slot_save(q36_engine *e, int slot, q36_ckpt *c, q36_err *err)
{
    if (slot < 0 || slot >= e->n_slots || c->e != e)
        return q36_err_set(err, Q36_E_ARG, "checkpoint save: slot %d is outside [0, %d) or the "
                           "checkpoint is another engine's", slot, e->n_slots);
    const int64_t pos = e->pos[slot];
    if (c->kv_rows && c->kv_rows < pos)
        return q36_err_set(err, Q36_E_ARG, "checkpoint holds %lld K/V rows; slot %d is at "
                           "position %lld", (long long)c->kv_rows, slot, (long long)pos);
    copy_state(e, slot, c, pos, true);
    int rc = be_check(e->be, err);
    if (rc)
        return rc;
    c->pos = pos;
    c->slot = slot;
    return 0;
}

int q36_slot_load(q36_engine *e, int slot, const q36_ckpt *c, q36_err *err)
{
    if (slot < 0 || slot >= e->n_slots || c->e != e)
        return q36_err_set(err, Q36_E_ARG, "checkpoint load: slot %d is outside [0, %d) or the "
                           "checkpoint is another engine's", slot, e->n_slots);
    if (c->pos < 0)
        return q36_err_set(err, Q36_E_ARG, "checkpoint load: nothing was saved in it");
    if (slot != c->slot && !c->kv_rows && e->hp->n_attn_layers)
        return q36_err_set(err, Q36_E_ARG, "checkpoint of slot %d holds no K/V rows: it cannot "
                           "be loaded into slot %d", c->slot, slot);
    /* without K/V rows, the slot's own rows below pos are trusted to be
     * the ones saved with it (include/q36.h) */
    copy_state(e, slot, (q36_ckpt *)c, c->kv_rows ? c->pos : 0, false);
    int rc = be_check(e->be, err);
    if (rc)
        return rc;
    e->pos[slot] = c->pos;
    return 0;
}

int q36_slot_load_state(q36_engine *e, int slot, const q36_ckpt *c, q36_err *err)
{
    if (slot < 0 || slot >= e->n_slots || c->e != e)
        return q36_err_set(err, Q36_E_ARG, "checkpoint state load: slot %d is outside [0, %d) or "
                           "the checkpoint is another engine's", slot, e->n_slots);
    if (c->pos < 0)
        return q36_err_set(err, Q36_E_ARG, "checkpoint state load: nothing was saved in it");
    copy_state(e, slot, (q36_ckpt *)c, 0, false);
    int rc = be_check(e->be, err);
    if (rc)
        return rc;
    e->pos[slot] = c->pos;
    return 0;
}

int q36_slot_copy(q36_engine *e, int src, int dst, q36_err *err)
{
    if (src < 0 || src >= e->n_slots || dst < 0 || dst >= e->n_slots)
        return q36_err_set(err, Q36_E_ARG, "slot copy %d -> %d: outside [0, %d)", src, dst,
                           e->n_slots);
    if (src == dst)
        return 0;
    be_ctx *be = e->be;
    const int64_t pos = e->pos[src];
    be_views_reset(be);
    for (uint32_t il = 0; il < e->hp->n_layer; il++) {
        be_tensor *t[2];
        int64_t rows[2], stride[2];
        if (e->hp->recurrent[il]) {
            t[0] = e->tail[il], t[1] = e->S[il];
            for (int i = 0; i < 2; i++)
                rows[i] = stride[i] = be_rows_of(t[i]) / e->n_slots;
        } else {
            t[0] = e->kc[il], t[1] = e->vc[il];
            rows[0] = rows[1] = pos;
            stride[0] = stride[1] = e->n_ctx;
        }
        for (int i = 0; i < 2; i++)
            if (rows[i])
                be_copy(be, be_rows(be, t[i], src * stride[i], rows[i]),
                        be_rows(be, t[i], dst * stride[i], rows[i]));
    }
    int rc = be_check(be, err);
    if (rc)
        return rc;
    e->pos[dst] = pos;
    return 0;
}

/* Copies the checkpoint's tensors to or from host bytes, in layer order
 * (conv tail, state; or K, V), q36_ckpt_bytes(e, c->kv_rows) in all. */
static int host_copy(q36_engine *e, q36_ckpt *c, uint8_t *p, bool to_host, q36_err *err)
{
    for (uint32_t il = 0; il < e->hp->n_layer; il++) {
        be_tensor *t[4] = { c->tail[il], c->S[il], c->kc[il], c->vc[il] };
        for (int i = 0; i < 4; i++) {
            if (!t[i])
                continue;
            if (to_host)
                be_save(e->be, t[i], 0, be_rows_of(t[i]), p);
            else
                be_load(e->be, t[i], 0, be_rows_of(t[i]), p);
            p += be_tensor_bytes(t[i]);
        }
    }
    return be_check(e->be, err);
}

int q36_ckpt_get(q36_engine *e, const q36_ckpt *c, void *dst, q36_err *err)
{
    if (c->e != e || c->pos < 0)
        return q36_err_set(err, Q36_E_ARG, "checkpoint read: %s", c->e != e ? "another engine's" : "nothing saved in it");
    return host_copy(e, (q36_ckpt *)c, dst, true, err);
}

int q36_ckpt_put(q36_engine *e, q36_ckpt *c, int pos, const void *src, q36_err *err)
{
    if (c->e != e || pos < 0 || (c->kv_rows && pos > c->kv_rows))
        return q36_err_set(err, Q36_E_ARG, "checkpoint write: position %d with %lld K/V rows%s", pos,
                           (long long)c->kv_rows, c->e != e ? ", another engine's" : "");
    int rc = host_copy(e, c, (uint8_t *)src, false, err);
    if (rc)
        return rc;
    c->pos = pos;
    c->slot = -1;              /* without K/V rows: loads into no slot as a whole (q36_slot_load) */
    return 0;
}
