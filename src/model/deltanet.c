/* deltanet.c: the Gated DeltaNet block of qwen35/qwen35moe (MODEL.md §2):
 * input projections (qkv, z, beta, alpha), the causal conv with its tail,
 * SiLU, per-head L2 norms of q and k, decay and beta, the delta rule
 * (llama.cpp's fused recurrence, which it runs for batches too; the chunked
 * form in fast mode for batches with a run of at least DN_CHUNK_ROWS rows),
 * the gated RMS norm and the output
 * projection. The conv and the delta rule run each slot's rows of the
 * batch on that slot's tail and state. */
#include "forward.h"

/* Fast mode takes the chunked rule for a batch with a run this long (a
 * prompt chunk); runs of a few rows each (the decode steps of many slots,
 * a verify pass) take the recurrence, whose work is a step a row where the
 * chunked form pays for whole chunks of 64 (on the H200, 16 slots' decode
 * rows on the 35B-A3B: the chunked kernels 5.3 ms a step;
 * bench/results/2026-12-02-cuda-argmax/bb-1237cef.txt). */
#define DN_CHUNK_ROWS 32

static bool long_run(const be_batch *b)
{
    for (int s = 0; s < b->n_seq; s++)
        if (b->seq[s].n_rows >= DN_CHUNK_ROWS)
            return true;
    return false;
}

void model_deltanet(q36_engine *e, int il, int64_t T, be_tensor *h, be_tensor *out)
{
    const model_hparams *hp = e->hp;
    const model_layer_w *L = &e->w.layer[il];
    be_ctx *be = e->be;
    model_scratch *sc = &e->sc;
    const int64_t Hk = hp->ssm_group, Hv = hp->ssm_dt_rank, dk = hp->ssm_state;

    be_tensor *mixed = model_rows(e, sc->mixed, T);
    be_tensor *conv = model_rows(e, sc->conv, T);
    be_tensor *z = model_rows(e, sc->z, T);
    be_tensor *alpha = model_rows(e, sc->alpha, T);
    be_tensor *bin = model_rows(e, sc->beta_in, T);
    be_tensor *g = model_rows(e, sc->g, T);
    be_tensor *beta = model_rows(e, sc->beta, T);
    be_tensor *core = model_rows(e, sc->core, T);

    const be_weight *win[] = { L->ssm_qkv, L->ssm_gate, L->ssm_beta, L->ssm_alpha };
    be_tensor *yin[] = { mixed, z, bin, alpha };
    be_matmul_n(be, 4, win, h, yin);

    if (e->keeping && !e->n_saves && e->keep_ready && e->keep_fuse &&
        e->n_keep_lead == e->batch.n_seq) {
        /* a pass whose runs all keep their states in one call of each
         * keeping op (rewind.c: every slot's verify rows): the gates and
         * the norms in the rule's op too */
        be_ssm_conv_silu_keep(be, mixed, e->tail[il], L->ssm_conv, &e->keep_lead_b, conv,
                              e->keep_tail[il]);
        be_deltanet_gated_keep(be, conv, alpha, bin, L->ssm_dt, L->ssm_a, hp->eps, g, beta,
                               e->S[il], e->keep_S[il], Hk, Hv, dk, &e->keep_lead_b, core);
    } else if (e->keeping || e->n_saves) {
        /* a pass that keeps the state after each row or saves checkpoints
         * inside it (rewind.c) */
        be_deltanet_gates(be, alpha, L->ssm_dt, L->ssm_a, bin, g, beta);
        model_deltanet_rows(e, il, T, mixed, conv, g, beta, core);
    } else if (e->fast && T > 1 && long_run(&e->batch)) {
        be_deltanet_gates(be, alpha, L->ssm_dt, L->ssm_a, bin, g, beta);
        be_ssm_conv_silu(be, mixed, e->tail[il], L->ssm_conv, &e->batch, conv);
        be_tensor *qk = be_view(be, conv, 0, 2 * Hk * dk);
        be_l2_norm(be, qk, hp->eps, dk, qk);
        be_deltanet_chunked(be, conv, g, beta, e->S[il], Hk, Hv, dk, &e->batch, core);
    } else {
        /* the gates, the norms of q and k and the rule: one op */
        be_ssm_conv_silu(be, mixed, e->tail[il], L->ssm_conv, &e->batch, conv);
        be_deltanet_gated(be, conv, alpha, bin, L->ssm_dt, L->ssm_a, hp->eps, g, beta, e->S[il],
                          Hk, Hv, dk, &e->batch, core);
    }

    be_rms_norm_gate(be, core, L->ssm_norm, hp->eps, dk, z, core);
    be_matmul(be, L->ssm_out, 0, core, out);
}
