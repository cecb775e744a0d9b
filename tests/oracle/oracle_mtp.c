/* oracle_mtp.c: the `mtp` subcommand: llama.cpp's MTP ("nextn") head on a
 * prompt, as its draft-mtp speculative decoding feeds it (MODEL.md §5.3).
 *
 * The model is loaded with its MTP block (load_mtp). A target context
 * decodes the ids in one call and exports h_nextn, the post-output_norm
 * hidden row of every position; a second context of type MTP then decodes
 * row p = (id p at position p, h_nextn of p-1), with a zero row at p = 0
 * (llama.cpp's catch-up pairing), and returns the MTP head's logits of
 * every row, [n][n_vocab], in -o OUT.f32.
 *
 * h_nextn comes through llama.cpp's staging API (src/llama-ext.h:
 * llama_set_embeddings_nextn, llama_get_embeddings_nextn), C++ functions
 * the pinned libllama exports under their mangled names; they are declared
 * here by those names. */
#include "oracle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void orc_set_embeddings_nextn(struct llama_context *ctx, bool value, bool masked)
    __asm__("_Z26llama_set_embeddings_nextnP13llama_contextbb");
float *orc_get_embeddings_nextn(struct llama_context *ctx)
    __asm__("_Z26llama_get_embeddings_nextnP13llama_context");

int orc_cmd_mtp(const orc_opts *o)
{
    if (!o->out) return orc_usage(o->cmd, "-o OUT.f32 is required");
    orc_opts om = *o;
    om.mtp = true;
    struct llama_model *m = orc_load(&om, ORC_LOAD_FULL);
    if (!m) return ORC_ERROR;
    const int nv = llama_vocab_n_tokens(llama_model_get_vocab(m));
    const int D = llama_model_n_embd(m);
    int rc = ORC_ERROR;
    llama_token *ids = NULL;
    float *h = NULL, *rows = NULL;
    struct llama_context *tgt = NULL, *dft = NULL;
    struct llama_batch b = { 0 };
    bool have_batch = false;
    if (llama_model_n_layer_nextn(m) < 1) { orc_fail("%s: the model has no MTP block", o->model); goto done; }
    int n = orc_read_ids(o, nv, &ids);
    if (n < 0) goto done;
    const int n_ctx = o->n_ctx ? o->n_ctx : n + 16;
    if (!(tgt = orc_context(m, o, n_ctx, n, n))) goto done;
    orc_set_embeddings_nextn(tgt, true, false);
    if (orc_decode(tgt, ids, n, 0, n, true, NULL, nv)) goto done;
    const float *hn = orc_get_embeddings_nextn(tgt);
    if (!hn) { orc_fail("llama.cpp exported no h_nextn rows"); goto done; }
    h = calloc((size_t)n * (size_t)D, sizeof *h);
    rows = malloc((size_t)n * (size_t)nv * sizeof *rows);
    if (!h || !rows) { orc_fail("out of memory for %d rows", n); goto done; }
    memcpy(h + D, hn, (size_t)(n - 1) * (size_t)D * sizeof *h);

    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_batch = cp.n_ubatch = (uint32_t)n;
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = o->threads;
    cp.type_k = cp.type_v = o->kv;
    cp.flash_attn_type = o->fa;
    cp.no_perf = true;
    cp.ctx_type = LLAMA_CONTEXT_TYPE_MTP;
    if (!(dft = llama_init_from_model(m, cp))) {
        orc_fail("%s: llama.cpp cannot make an MTP context: %s", o->model, orc_last_log());
        goto done;
    }
    /* rows carry both the token and the hidden row (llama_batch_init gives
     * one of them; the token array is added as llama.cpp's own driver does) */
    b = llama_batch_init(n, D, 1);
    have_batch = true;
    b.token = malloc((size_t)n * sizeof *b.token);
    if (!b.token) { orc_fail("out of memory"); goto done; }
    b.n_tokens = n;
    for (int i = 0; i < n; i++) {
        b.token[i] = ids[i];
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = 1;
    }
    memcpy(b.embd, h, (size_t)n * (size_t)D * sizeof *h);
    if (llama_decode(dft, b)) { orc_fail("llama_decode of the MTP context failed: %s", orc_last_log()); goto done; }
    for (int i = 0; i < n; i++) {
        const float *l = llama_get_logits_ith(dft, i);
        if (!l) { orc_fail("no MTP logits for row %d", i); goto done; }
        memcpy(rows + (size_t)i * (size_t)nv, l, (size_t)nv * sizeof *rows);
    }
    if (orc_write_f32(o->out, rows, (size_t)n * (size_t)nv)) goto done;
    printf("%d %d\n", n, nv);
    rc = ORC_OK;
done:
    if (have_batch) {
        free(b.token);
        b.token = NULL;
        llama_batch_free(b);
    }
    free(h);
    free(rows);
    free(ids);
    llama_free(dft);
    llama_free(tgt);
    llama_model_free(m);
    return rc;
}
