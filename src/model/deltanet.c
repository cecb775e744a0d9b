/* deltanet.c: the Gated DeltaNet block of qwen35/qwen35moe (MODEL.md §2):
 * input projections (qkv, z, beta, alpha), the causal conv with its tail,
 * SiLU, per-head L2 norms of q and k, decay and beta, the delta rule
 * (llama.cpp's fused recurrence, which it runs for batches too; the chunked
 * form for batches in fast mode), the gated RMS norm and the output
 * projection. */
#include "forward.h"

void model_deltanet(q36_session *s, int il, int64_t T, be_tensor *h, be_tensor *out)
{
    const model_hparams *hp = s->hp;
    const model_layer_w *L = &s->w.layer[il];
    be_ctx *be = s->be;
    model_scratch *sc = &s->sc;
    const int64_t Hk = hp->ssm_group, Hv = hp->ssm_dt_rank, dk = hp->ssm_state;

    be_tensor *mixed = model_rows(s, sc->mixed, T);
    be_tensor *conv = model_rows(s, sc->conv, T);
    be_tensor *z = model_rows(s, sc->z, T);
    be_tensor *alpha = model_rows(s, sc->alpha, T);
    be_tensor *bin = model_rows(s, sc->beta_in, T);
    be_tensor *g = model_rows(s, sc->g, T);
    be_tensor *beta = model_rows(s, sc->beta, T);
    be_tensor *core = model_rows(s, sc->core, T);

    const be_weight *win[] = { L->ssm_qkv, L->ssm_gate, L->ssm_beta, L->ssm_alpha };
    be_tensor *yin[] = { mixed, z, bin, alpha };
    be_matmul_n(be, 4, win, h, yin);
    be_gdn_gates(be, alpha, L->ssm_dt, L->ssm_a, bin, g, beta);

    be_ssm_conv(be, mixed, s->tail[il], L->ssm_conv, conv);
    be_silu(be, conv, conv);
    be_tensor *qk = be_view(be, conv, 0, 2 * Hk * dk);
    be_l2_norm(be, qk, hp->eps, dk, qk);

    if (s->fast && T > 1)
        be_deltanet_chunked(be, conv, g, beta, s->S[il], Hk, Hv, dk, core);
    else
        be_deltanet(be, conv, g, beta, s->S[il], Hk, Hv, dk, core);

    be_rms_norm(be, core, L->ssm_norm, hp->eps, dk, core);
    be_gate_silu(be, core, z, core);
    be_matmul(be, L->ssm_out, 0, core, out);
}
