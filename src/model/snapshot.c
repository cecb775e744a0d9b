/* snapshot.c: a session's slot as one self-describing byte string on the
 * host (q36_session_snapshot / _restore, include/q36.h), for disk: a
 * header, then per layer the slot's conv tail and DeltaNet matrices, or its
 * K/V rows [0, pos), as the device holds them. Checkpoints that stay on
 * the device are in ckpt.c. */
#include "session.h"

#include <string.h>

#define SNAP_MAGIC   0x53363351u   /* "Q36S" little-endian */
#define SNAP_VERSION 1u

typedef struct snap_header {
    uint32_t magic, version;
    uint32_t n_layer, n_vocab;
    uint32_t type_k, type_v;
    uint64_t pos;
    uint64_t body;            /* bytes after the header */
} snap_header;

/* Row ranges of one slot in the state tensors of layer il. */
static int64_t tail_rows(const q36_engine *e, uint32_t il)
{
    return be_rows_of(e->tail[il]) / e->n_slots;
}

static uint64_t row_bytes(const be_tensor *t)
{
    return be_type_bytes(be_type_of(t), be_cols_of(t));
}

static uint64_t body_size(const q36_engine *e, uint64_t pos)
{
    uint64_t n = 0;
    for (uint32_t il = 0; il < e->hp->n_layer; il++) {
        if (e->hp->recurrent[il])
            n += (uint64_t)tail_rows(e, il) * row_bytes(e->tail[il]) +
                 (uint64_t)e->hp->ssm_dt_rank * row_bytes(e->S[il]);
        else
            n += pos * (row_bytes(e->kc[il]) + row_bytes(e->vc[il]));
    }
    return n;
}

uint64_t q36_session_state_size(const q36_session *s)
{
    return sizeof(snap_header) + body_size(s->e, (uint64_t)s->e->pos[s->slot]);
}

/* Saves (dir 0) or loads (dir 1) the slot's state rows through p. */
static void state_io(q36_engine *e, int slot, uint64_t pos, uint8_t *p, int dir)
{
    be_ctx *be = e->be;
    const int64_t Hv = e->hp->ssm_dt_rank;
    for (uint32_t il = 0; il < e->hp->n_layer; il++) {
        be_tensor *t[2];
        int64_t r0[2], n[2];
        if (e->hp->recurrent[il]) {
            t[0] = e->tail[il], r0[0] = slot * tail_rows(e, il), n[0] = tail_rows(e, il);
            t[1] = e->S[il], r0[1] = slot * Hv, n[1] = Hv;
        } else {
            t[0] = e->kc[il], r0[0] = slot * e->n_ctx, n[0] = (int64_t)pos;
            t[1] = e->vc[il], r0[1] = slot * e->n_ctx, n[1] = (int64_t)pos;
        }
        for (int i = 0; i < 2; i++) {
            if (dir == 0)
                be_save(be, t[i], r0[i], n[i], p);
            else
                be_load(be, t[i], r0[i], n[i], p);
            p += (uint64_t)n[i] * row_bytes(t[i]);
        }
    }
}

int q36_session_snapshot(const q36_session *s, void *buf, uint64_t cap, uint64_t *written,
                         q36_err *err)
{
    q36_engine *e = s->e;
    uint64_t need = q36_session_state_size(s);
    if (written)
        *written = 0;
    if (cap < need)
        return q36_err_set(err, Q36_E_ARG, "snapshot needs %llu bytes, the buffer has %llu",
                           (unsigned long long)need, (unsigned long long)cap);
    const uint64_t pos = (uint64_t)e->pos[s->slot];
    snap_header hd = { SNAP_MAGIC, SNAP_VERSION, e->hp->n_layer, e->hp->n_vocab,
                       (uint32_t)e->type_k, (uint32_t)e->type_v, pos, need - sizeof(snap_header) };
    memcpy(buf, &hd, sizeof hd);
    state_io(e, s->slot, pos, (uint8_t *)buf + sizeof hd, 0);
    int rc = be_check(e->be, err);
    if (rc)
        return rc;
    if (written)
        *written = need;
    return 0;
}

int q36_session_restore(q36_session *s, const void *buf, uint64_t n, q36_err *err)
{
    q36_engine *e = s->e;
    snap_header hd;
    if (n < sizeof hd)
        return q36_err_set(err, Q36_E_FORMAT, "snapshot of %llu bytes is shorter than its header",
                           (unsigned long long)n);
    memcpy(&hd, buf, sizeof hd);
    if (hd.magic != SNAP_MAGIC || hd.version != SNAP_VERSION)
        return q36_err_set(err, Q36_E_FORMAT, "not a q36 session snapshot (magic %08x version %u)",
                           hd.magic, hd.version);
    if (hd.n_layer != e->hp->n_layer || hd.n_vocab != e->hp->n_vocab ||
        hd.type_k != (uint32_t)e->type_k || hd.type_v != (uint32_t)e->type_v)
        return q36_err_set(err, Q36_E_FORMAT,
                           "snapshot is of another model or cache type (layers %u vocab %u K/V %u/%u; "
                           "this session: %u %u %d/%d)", hd.n_layer, hd.n_vocab, hd.type_k, hd.type_v,
                           e->hp->n_layer, e->hp->n_vocab, e->type_k, e->type_v);
    if (hd.pos > (uint64_t)e->n_ctx)
        return q36_err_set(err, Q36_E_ARG, "snapshot at position %llu does not fit a context of %lld",
                           (unsigned long long)hd.pos, (long long)e->n_ctx);
    if (hd.body != body_size(e, hd.pos) || n != sizeof hd + hd.body)
        return q36_err_set(err, Q36_E_FORMAT, "snapshot is %llu bytes; position %llu needs %llu",
                           (unsigned long long)n, (unsigned long long)hd.pos,
                           (unsigned long long)(sizeof hd + body_size(e, hd.pos)));
    state_io(e, s->slot, hd.pos, (uint8_t *)buf + sizeof hd, 1);
    int rc = be_check(e->be, err);
    if (rc)
        return rc;
    e->pos[s->slot] = (int64_t)hd.pos;
    return 0;
}
