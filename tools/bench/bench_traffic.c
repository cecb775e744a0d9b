/* bench_traffic.c: the bytes one decode step must move between memory and
 * the cores, from the model file alone, so that a measured tg speed can be
 * set against the machine's measured read bandwidth (bench_membw.c).
 *
 * A single-token step reads every trunk weight once (the MTP block is not
 * run), of the expert tensors only the n_expert_used slabs the router picks
 * (a fraction n_expert_used / n_expert of their bytes), one row of the
 * token embedding (the whole of it when it is also the head), the K and V
 * rows of every position attended to, and reads and writes the DeltaNet
 * state (conv tails and state matrices). Activations and logits are small
 * beside these and are left out. These are lower bounds on traffic: they
 * count each byte once and assume nothing of it is in a cache from the
 * previous step (on a machine whose last-level cache holds the DeltaNet
 * state, that part may never reach memory). */
#include "bench_traffic.h"

#include <stdio.h>
#include <string.h>


/* Trunk layer of a "blk.N." name, or -1 for a tensor outside the blocks. */
static int block_of(const char *name)
{
    int il, n = 0;
    if (sscanf(name, "blk.%d.%n", &il, &n) == 1 && n > 0)
        return il;
    return -1;
}

int bench_traffic_of(const q36_model *m, int type_k, int type_v, double ctx_positions,
                     bench_traffic *out, q36_err *err)
{
    const model_hparams *hp = q36_model_hparams(m);
    const gguf_file *f = q36_model_gguf(m);
    memset(out, 0, sizeof *out);
    for (int64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        const int il = block_of(t->name);
        double bytes = (double)t->nbytes;
        if (il >= (int)hp->n_layer)
            continue;                                   /* MTP */
        if (il < 0 && !strcmp(t->name, "token_embd.weight") && !hp->tied_head)
            bytes /= (double)t->ne[1];                  /* one row */
        else if (il >= 0 && strstr(t->name, "_exps.") && hp->n_expert)
            bytes = bytes * hp->n_expert_used / hp->n_expert;
        out->weights += bytes;
    }
    q36_session_opts o = q36_session_opts_default();
    o.type_k = type_k;
    o.type_v = type_v;
    o.n_batch = 1;
    q36_mem_plan plan;
    int rc = q36_session_plan(m, 1, &o, &plan, err);
    if (rc)
        return rc;
    out->kv = (double)plan.kv_per_token * ctx_positions;
    out->state = 2.0 * (double)plan.recurrent;
    out->total = out->weights + out->kv + out->state;
    return 0;
}
