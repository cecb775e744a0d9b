/* rewind.c: kept per-row states (include/q36.h, q36_engine_keep_states,
 * q36_slot_rewind): a rollback of a slot to any row of its last pass
 * without evaluating anything again. A pass that keeps states runs the
 * conv and the delta rule of each DeltaNet layer row by row, on a one-row
 * batch of the slot, and copies the slot's conv tail and state matrices
 * after each row into the engine's kept-state tensors (rows n_keep x the
 * slot's rows, from the plan). The other ops of the pass run on the whole
 * batch as usual. The fused recurrence steps one token at a time in any
 * case, so the rows come out with the same bits; the cost is the copies
 * (per row but the last, whose state stays the slot's: every DeltaNet
 * layer's state, Hv x dk x dv floats) and the per-row calls. Rewinding
 * copies one kept row back: no replay. */
#include "forward.h"

int q36_engine_keep_states(q36_engine *e, int slot, q36_err *err)
{
    if (!e->n_keep)
        return q36_err_set(err, Q36_E_ARG, "keep states: the engine was made with n_keep 0");
    if (slot < 0 || slot >= e->n_slots)
        return q36_err_set(err, Q36_E_ARG, "keep states: slot %d is outside [0, %d)", slot,
                           e->n_slots);
    e->keep_slot = slot;
    return 0;
}

int model_keep_check(q36_engine *e, int n_seq, q36_err *err)
{
    const int slot = e->keep_slot;
    e->keep_slot = -1;      /* one pass only, refused or not */
    if (n_seq != 1 || e->seq[0].slot != slot || e->seq[0].n_rows > e->n_keep)
        return q36_err_set(err, Q36_E_ARG, "keep states: the pass must be slot %d's rows alone, "
                           "at most %d of them", slot, e->n_keep);
    e->keep_slot = slot;
    return 0;
}

void model_keep_done(q36_engine *e, int n_seq)
{
    for (int s = 0; s < n_seq; s++)
        if (e->seq[s].slot == e->kept_slot)
            e->kept_slot = -1;          /* a later pass moved that slot on */
    if (e->keep_slot >= 0 && n_seq == 1) {
        e->kept_slot = e->keep_slot;
        e->kept_pos0 = e->seq[0].pos0;
        e->kept_rows = e->seq[0].n_rows;
    }
    e->keep_slot = -1;
}

void model_deltanet_rows(q36_engine *e, int il, int64_t T, be_tensor *mixed, be_tensor *conv,
                         be_tensor *g, be_tensor *beta, be_tensor *core)
{
    const model_hparams *hp = e->hp;
    const model_layer_w *L = &e->w.layer[il];
    be_ctx *be = e->be;
    const int64_t Hk = hp->ssm_group, Hv = hp->ssm_dt_rank, dk = hp->ssm_state;
    const int slot = e->keep_slot;
    const int64_t Cc = be_rows_of(e->tail[il]) / e->n_slots;
    be_tensor *tail = be_rows(be, e->tail[il], slot * Cc, Cc);
    be_tensor *S = be_rows(be, e->S[il], slot * Hv, Hv);
    for (int64_t t = 0; t < T; t++) {
        be_batch_set(be, &e->row_batch, 1,
                     &(be_seq){ slot, 0, 1, (int32_t)(e->seq[0].pos0 + t) });
        be_tensor *ct = be_rows(be, conv, t, 1);
        be_ssm_conv(be, be_rows(be, mixed, t, 1), e->tail[il], L->ssm_conv, &e->row_batch, ct);
        be_silu(be, ct, ct);
        be_tensor *qk = be_view(be, ct, 0, 2 * Hk * dk);
        be_l2_norm(be, qk, hp->eps, dk, qk);
        be_deltanet(be, ct, be_rows(be, g, t, 1), be_rows(be, beta, t, 1), e->S[il], Hk, Hv, dk,
                    &e->row_batch, be_rows(be, core, t, 1));
        if (t + 1 == T)
            break;         /* the last row's state is the slot's own */
        be_copy(be, tail, be_rows(be, e->keep_tail[il], t * Cc, Cc));
        be_copy(be, S, be_rows(be, e->keep_S[il], t * Hv, Hv));
    }
}

int q36_slot_rewind(q36_engine *e, int slot, int rows, q36_err *err)
{
    if (slot < 0 || slot >= e->n_slots || slot != e->kept_slot)
        return q36_err_set(err, Q36_E_ARG, "rewind: slot %d has no kept states (its last pass "
                           "did not keep them)", slot);
    if (rows < 1 || rows > e->kept_rows)
        return q36_err_set(err, Q36_E_ARG, "rewind: %d rows is outside [1, %lld]", rows,
                           (long long)e->kept_rows);
    if (rows == e->kept_rows) {
        e->pos[slot] = e->kept_pos0 + rows;     /* the state is the pass's own */
        return 0;
    }
    be_ctx *be = e->be;
    const model_hparams *hp = e->hp;
    const int64_t Hv = hp->ssm_dt_rank, t = rows - 1;
    be_views_reset(be);
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        if (!hp->recurrent[il])
            continue;      /* K/V rows beyond the position are never read */
        const int64_t Cc = be_rows_of(e->tail[il]) / e->n_slots;
        be_copy(be, be_rows(be, e->keep_tail[il], t * Cc, Cc),
                be_rows(be, e->tail[il], slot * Cc, Cc));
        be_copy(be, be_rows(be, e->keep_S[il], t * Hv, Hv),
                be_rows(be, e->S[il], slot * Hv, Hv));
    }
    int rc = be_check(be, err);
    if (rc)
        return rc;
    e->pos[slot] = e->kept_pos0 + rows;
    return 0;
}
