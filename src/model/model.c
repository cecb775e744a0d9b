/* model.c: the q36_model handle of the public API (include/q36.h): a
 * validated GGUF mapping plus the geometry read from it. The order of
 * operations lives in the other files of this folder. */
#include "model.h"

#include <stdlib.h>

struct q36_model {
    gguf_file    *f;
    model_hparams hp;
    uint64_t      n_params, n_bytes;
};

int q36_model_open(const char *path, q36_model **out, q36_err *err)
{
    *out = NULL;
    q36_model *m = calloc(1, sizeof *m);
    if (!m)
        return q36_err_set(err, Q36_E_NOMEM, "%s: out of memory", path);
    int rc = gguf_open(path, &m->f, err);
    if (rc == 0)
        rc = model_hparams_load(m->f, &m->hp, err);
    if (rc) {
        q36_model_free(m);
        return rc;
    }
    for (int64_t i = 0; i < gguf_n_tensors(m->f); i++) {
        const gguf_tensor *t = gguf_tensor_at(m->f, i);
        m->n_params += gguf_tensor_nelements(t);
        m->n_bytes += t->nbytes;
    }
    *out = m;
    return 0;
}

void q36_model_free(q36_model *m)
{
    if (!m)
        return;
    gguf_close(m->f);
    free(m);
}

const model_hparams *q36_model_hparams(const q36_model *m) { return &m->hp; }
const gguf_file *q36_model_gguf(const q36_model *m) { return m->f; }
uint64_t q36_model_n_params(const q36_model *m) { return m->n_params; }
uint64_t q36_model_n_bytes(const q36_model *m) { return m->n_bytes; }
