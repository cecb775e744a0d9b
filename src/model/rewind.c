/* rewind.c: kept per-row states (include/q36.h, q36_engine_keep_states,
 * q36_slot_rewind): a rollback of a slot to any row of its last pass
 * without evaluating anything again. A pass that keeps states runs the
 * conv and the delta rule of each DeltaNet layer run by run: a kept slot's
 * run row by row, on a one-row batch of the slot, copying the slot's conv
 * tail and state matrices after each row into the slot's part of the
 * engine's kept-state tensors (n_keep rows per slot, from the plan); any
 * other run (another slot's prompt chunk or decode row) as a batch of its
 * own. The other ops of the pass run on the whole batch as usual. The
 * fused recurrence steps one token at a time in any case, so every row
 * comes out with the same bits; the cost is the copies (per row but the
 * last, whose state stays the slot's: every DeltaNet layer's state,
 * Hv x dk x dv floats) and the per-row calls. The runs' one-run and
 * one-row batches are set before the pass begins (model_keep_batches), so
 * the pass uploads nothing and a backend can record it as a decode step
 * (engine.c: pass_key; the CUDA graphs). Rewinding copies one kept row
 * back: no replay. Several slots keep their states in one pass (the
 * server's verify rows). A backend with the keeping ops (be_can_keep: the
 * CPU and CUDA backends) runs a kept slot's run whole instead, the ops writing each row's
 * state into the kept rows as they go: no per-row calls, no copies (an MTP
 * verify pass of the default model: 0.08-0.10 ms of 2.7 less, record
 * 2026-12-02-cpu-keep); the kept runs that lead the pass (the server puts
 * its verify rows first) go in one call of each op, so that the kernels
 * of a verify pass of several slots are as many as of one slot's. The same run-by-run path serves a pass that saves
 * checkpoints inside it (ckpt_pass.c): a slot with saves runs in pieces
 * that end at their positions, each state copied into its checkpoint. */
#include "forward.h"

#include <string.h>

int q36_engine_keep_states(q36_engine *e, int slot, q36_err *err)
{
    if (!e->n_keep)
        return q36_err_set(err, Q36_E_ARG, "keep states: the engine was made with n_keep 0");
    if (slot < 0 || slot >= e->n_slots)
        return q36_err_set(err, Q36_E_ARG, "keep states: slot %d is outside [0, %d)", slot,
                           e->n_slots);
    if (!e->keep[slot]) {
        e->keep[slot] = 1;
        e->n_keep_req++;
    }
    return 0;
}

static void keep_clear(q36_engine *e)
{
    memset(e->keep, 0, (size_t)e->n_slots * sizeof *e->keep);
    e->n_keep_req = 0;
}

int model_keep_check(q36_engine *e, int n_seq, q36_err *err)
{
    int found = 0;
    for (int s = 0; s < n_seq; s++) {
        const int sl = e->seq[s].slot;
        if (!e->keep[sl])
            continue;
        if (e->seq[s].n_rows > e->n_keep) {
            keep_clear(e);      /* one pass only, refused or not */
            return q36_err_set(err, Q36_E_ARG, "keep states: slot %d has %lld rows in the pass; "
                               "at most %d keep their states", sl, (long long)e->seq[s].n_rows,
                               e->n_keep);
        }
        found++;
    }
    if (found != e->n_keep_req) {
        keep_clear(e);
        return q36_err_set(err, Q36_E_ARG, "keep states: %d slot(s) asked to keep their states "
                           "have no rows in the pass", e->n_keep_req - found);
    }
    e->keeping = true;
    return 0;
}

void model_keep_batches(q36_engine *e, int n_seq)
{
    be_ctx *be = e->be;
    /* the kept runs that lead the pass: one call of each keeping op; a
     * one-row run of a slot that keeps nothing may join them (a one-row run
     * writes no kept row, and the rule for one row is the same either way:
     * a slot that drafts nothing this step beside slots that do) */
    int lead = 0;
    while (be_can_keep(be) && lead < n_seq &&
           (e->keep[e->seq[lead].slot] || (e->keep_fuse && e->seq[lead].n_rows == 1)))
        lead++;
    e->n_keep_lead = lead;
    if (lead)
        be_batch_set(be, &e->keep_lead_b, lead, e->seq);
    for (int s = lead; s < n_seq; s++) {
        const be_seq r = e->seq[s];
        if (e->keep[r.slot] && !be_can_keep(be))     /* a kept slot row by row */
            for (int32_t t = 0; t < r.n_rows; t++)
                be_batch_set(be, &e->keep_b[(int64_t)s * e->n_keep + t], 1,
                             &(be_seq){ r.slot, 0, 1, r.pos0 + t });
        else                                          /* the run whole */
            be_batch_set(be, &e->keep_run_b[s], 1, &(be_seq){ r.slot, 0, r.n_rows, r.pos0 });
    }
    e->keep_ready = true;
}

void model_keep_done(q36_engine *e, int n_seq, bool ok)
{
    for (int s = 0; s < n_seq && e->n_keep; s++) {
        const be_seq *r = &e->seq[s];
        e->kept_rows[r->slot] = ok && e->keeping && e->keep[r->slot] ? r->n_rows : 0;
        e->kept_pos0[r->slot] = r->pos0;
    }
    e->keeping = false;
    e->keep_ready = false;
    if (e->n_keep_req)
        keep_clear(e);
}

/* One DeltaNet layer's conv and delta rule for the run rows [a, a+n) of
 * slot sl at positions p0.., on batch b: set here to that run alone, or
 * with set false, already so (model_keep_batches). In fast mode a piece
 * of several rows takes the chunked rule, as a pass of those rows would.
 * With keep (be_can_keep: kept slots' whole runs, b holding one or, for
 * the runs leading the pass, several), the ops that also write the state
 * after each row but the last into each slot's kept rows: no per-row
 * calls, no copies. */
static void dn_run(q36_engine *e, int il, be_batch *b, bool set, int sl, int64_t a, int64_t n,
                   int64_t p0, be_tensor *mixed, be_tensor *conv, be_tensor *g, be_tensor *beta,
                   be_tensor *core, bool keep)
{
    const model_hparams *hp = e->hp;
    const int64_t Hk = hp->ssm_group, Hv = hp->ssm_dt_rank, dk = hp->ssm_state;
    be_ctx *be = e->be;
    if (set)
        be_batch_set(be, b, 1, &(be_seq){ sl, 0, (int32_t)n, (int32_t)p0 });
    be_tensor *ct = be_rows(be, conv, a, n), *xr = be_rows(be, mixed, a, n);
    be_tensor *gr = be_rows(be, g, a, n), *br = be_rows(be, beta, a, n), *cr = be_rows(be, core, a, n);
    const be_weight *cw = e->w.layer[il].ssm_conv;
    if (keep)
        be_ssm_conv_silu_keep(be, xr, e->tail[il], cw, b, ct, e->keep_tail[il]);
    else
        be_ssm_conv_silu(be, xr, e->tail[il], cw, b, ct);
    be_tensor *qk = be_view(be, ct, 0, 2 * Hk * dk);
    be_l2_norm(be, qk, hp->eps, dk, qk);
    if (keep)
        be_deltanet_keep(be, ct, gr, br, e->S[il], e->keep_S[il], Hk, Hv, dk, b, cr);
    else if (e->fast && n > 1)
        be_deltanet_chunked(be, ct, gr, br, e->S[il], Hk, Hv, dk, b, cr);
    else
        be_deltanet(be, ct, gr, br, e->S[il], Hk, Hv, dk, b, cr);
}

void model_deltanet_rows(q36_engine *e, int il, int64_t T, be_tensor *mixed, be_tensor *conv,
                         be_tensor *g, be_tensor *beta, be_tensor *core)
{
    (void)T;
    const model_hparams *hp = e->hp;
    be_ctx *be = e->be;
    const int64_t Hv = hp->ssm_dt_rank, K = e->n_keep;
    const int64_t Cc = be_rows_of(e->tail[il]) / e->n_slots;
    int s0 = 0;
    if (e->keep_ready && e->n_keep_lead && !e->n_saves) {
        /* the kept runs leading the pass, together: rows [0, their rows) */
        const be_seq *last = &e->seq[e->n_keep_lead - 1];
        dn_run(e, il, &e->keep_lead_b, false, last->slot, 0, last->row0 + last->n_rows, 0, mixed,
               conv, g, beta, core, true);
        s0 = e->n_keep_lead;
    }
    for (int s = s0; s < e->batch.n_seq; s++) {
        const be_seq r = e->seq[s];
        const bool kept = e->keeping && e->keep[r.slot];
        const int n_sv = e->n_saves ? e->save_n[r.slot] : 0;
        if (!n_sv && (!kept || be_can_keep(be))) {
            dn_run(e, il, e->keep_ready ? &e->keep_run_b[s] : &e->run_batch, !e->keep_ready,
                   r.slot, r.row0, r.n_rows, r.pos0, mixed, conv, g, beta, core, kept);
            continue;
        }
        /* pieces: one row each for a kept slot, else up to each save's position */
        const model_save *sv = &e->saves[n_sv ? e->save0[r.slot] : 0], *sv_end = sv + n_sv;
        for (int64_t t = 0; t < r.n_rows;) {
            const int64_t end = kept ? t + 1 : sv < sv_end ? sv->pos - r.pos0 : r.n_rows;
            const bool ready = kept && e->keep_ready;
            dn_run(e, il, ready ? &e->keep_b[(int64_t)s * K + t] : kept ? &e->row_batch
                                                                          : &e->run_batch,
                   !ready, r.slot, r.row0 + t, end - t, r.pos0 + t, mixed, conv, g, beta, core,
                   false);
            for (; sv < sv_end && sv->pos == r.pos0 + end; sv++)
                model_save_layer(e, il, r.slot, sv->c);
            if (kept && end < r.n_rows) {    /* the last row's state is the slot's own */
                const int64_t k = (int64_t)r.slot * K + t;
                be_copy(be, be_rows(be, e->tail[il], (int64_t)r.slot * Cc, Cc),
                        be_rows(be, e->keep_tail[il], k * Cc, Cc));
                be_copy(be, be_rows(be, e->S[il], (int64_t)r.slot * Hv, Hv),
                        be_rows(be, e->keep_S[il], k * Hv, Hv));
            }
            t = end;
        }
    }
}

int q36_slot_rewind(q36_engine *e, int slot, int rows, q36_err *err)
{
    if (slot < 0 || slot >= e->n_slots || !e->n_keep || !e->kept_rows[slot])
        return q36_err_set(err, Q36_E_ARG, "rewind: slot %d has no kept states (its last pass "
                           "did not keep them)", slot);
    if (rows < 1 || rows > e->kept_rows[slot])
        return q36_err_set(err, Q36_E_ARG, "rewind: %d rows is outside [1, %lld]", rows,
                           (long long)e->kept_rows[slot]);
    if (rows == e->kept_rows[slot]) {
        e->pos[slot] = e->kept_pos0[slot] + rows;     /* the state is the pass's own */
        return 0;
    }
    be_ctx *be = e->be;
    const model_hparams *hp = e->hp;
    const int64_t Hv = hp->ssm_dt_rank, t = (int64_t)slot * e->n_keep + rows - 1;
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
    e->pos[slot] = e->kept_pos0[slot] + rows;
    e->kept_rows[slot] = 0;      /* the state after `rows` is the slot's now */
    return 0;
}
