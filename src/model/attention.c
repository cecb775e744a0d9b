/* attention.c: the gated full-attention block of qwen35/qwen35moe
 * (MODEL.md §3): Q+gate / K / V projections (separate or fused), per-head
 * RMS norms of q and k, partial NeoX rope, the K/V cache write, causal GQA
 * attention, the sigmoid output gate and the output projection. Rope takes
 * each row's position, and the cache ops each slot's rows, from the batch. */
#include "forward.h"

#include <math.h>

/* The Walsh-Hadamard rotations llama.cpp gives quantized K/V caches (its
 * attn_rot_k / attn_rot_v): q and k by the largest power of two >= 64 that
 * divides the head size, v (and the output back) by 64; none for a head
 * size that 64 does not divide, or an f16/f32 cache. */
static int64_t rot_k(const be_tensor *kc, int64_t hd)
{
    if (be_type_of(kc) != BE_Q8_0 || hd % 64)
        return 0;
    int64_t n = 64;
    while (hd % (2 * n) == 0)
        n *= 2;
    return n;
}

static int64_t rot_v(const be_tensor *vc, int64_t hd)
{
    return be_type_of(vc) == BE_Q8_0 && hd % 64 == 0 ? 64 : 0;
}

void model_attention_kv(q36_engine *e, int il, int64_t T, be_tensor *h, be_tensor **qo,
                        be_tensor **gate_o)
{
    const model_hparams *hp = e->hp;
    const model_layer_w *L = &e->w.layer[il];
    be_ctx *be = e->be;
    model_scratch *sc = &e->sc;
    const int64_t Hq = hp->n_head, Hkv = hp->n_head_kv, hd = hp->head_dim;

    be_tensor *q = model_rows(e, sc->q, T);
    be_tensor *gate = model_rows(e, sc->gate, T);
    be_tensor *k, *v, *qg;
    if (L->wqkv) {
        be_tensor *all = model_rows(e, sc->qg, T);
        be_matmul(be, L->wqkv, 0, h, all);
        qg = be_view(be, all, 0, 2 * Hq * hd);
        k = be_view(be, all, 2 * Hq * hd, Hkv * hd);
        v = be_view(be, all, 2 * Hq * hd + Hkv * hd, Hkv * hd);
    } else {
        qg = be_view(be, model_rows(e, sc->qg, T), 0, 2 * Hq * hd);
        k = model_rows(e, sc->k, T);
        v = model_rows(e, sc->v, T);
        const be_weight *win[] = { L->wq, L->wk, L->wv };
        be_tensor *yin[] = { qg, k, v };
        be_matmul_n(be, 3, win, h, yin);
    }
    /* [q_h | gate_h] per head apart, the per-head norms of q and k, rope */
    be_tensor *pos = be_rows(be, e->batch.pos, 0, T);
    be_attn_prologue(be, qg, q, gate, k, L->q_norm, L->k_norm, hp->eps, hd, hp->n_rot,
                     hp->rope_sections, hp->rope_base, pos);
    const int64_t nk = rot_k(e->kc[il], hd), nv = rot_v(e->vc[il], hd);
    if (nk) {
        be_hadamard(be, q, nk);
        be_hadamard(be, k, nk);
    }
    if (nv)
        be_hadamard(be, v, nv);
    be_kv_store(be, e->kc[il], e->vc[il], k, v, &e->batch);
    *qo = q;
    *gate_o = gate;
}

void model_attention_out(q36_engine *e, int il, int64_t T, be_tensor *q, be_tensor *gate,
                         const be_batch *b, be_tensor *out)
{
    const model_hparams *hp = e->hp;
    be_ctx *be = e->be;
    const int64_t Hq = hp->n_head, Hkv = hp->n_head_kv, hd = hp->head_dim;
    be_tensor *att = model_rows(e, e->sc.att, T);
    be_attention(be, q, e->kc[il], e->vc[il], b, Hq, Hkv, hd, 1.0f / sqrtf((float)hd), att);
    const int64_t nv = rot_v(e->vc[il], hd);
    if (nv)
        be_hadamard(be, att, nv);
    be_sigmoid(be, gate, gate);
    be_mul(be, att, gate, att);
    be_matmul(be, e->w.layer[il].wo, 0, att, out);
}

void model_attention(q36_engine *e, int il, int64_t T, be_tensor *h, be_tensor *out)
{
    be_tensor *q, *gate;
    model_attention_kv(e, il, T, h, &q, &gate);
    model_attention_out(e, il, T, q, gate, &e->batch, out);
}
