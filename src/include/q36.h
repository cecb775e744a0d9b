/* q36.h: the public engine API of q36.
 *
 * An engine program opens a model file once (q36_model_open) and asks it
 * questions; later versions add sessions (one sequence each: its KV cache and
 * DeltaNet state), decoding and sampling on top of the same handle.
 *
 * Errors: every function that can fail returns 0 or a negative kind and fills
 * a q36_err (see util/err.h) with one line naming the file or field, what was
 * expected and what was found. Nothing here exits or prints.
 *
 * Threads: a q36_model is immutable after q36_model_open and may be shared by
 * any number of threads; q36_model_free must not race with other calls.
 */
#ifndef Q36_H
#define Q36_H

#include <stdint.h>

#include "../util/err.h"
#include "../gguf/gguf.h"
#include "../model/hparams.h"

#define Q36_VERSION "0.1.0"

typedef struct q36_model q36_model;

/* Maps `path` (weights stay in the mapping, never copied), validates the
 * GGUF and reads the geometry. *out is NULL on failure. */
int  q36_model_open(const char *path, q36_model **out, q36_err *err);
void q36_model_free(q36_model *m);                          /* accepts NULL */

/* Views valid until q36_model_free. */
const model_hparams *q36_model_hparams(const q36_model *m);
const gguf_file     *q36_model_gguf(const q36_model *m);

/* Elements of every tensor in the file (llama_model_n_params counts the same). */
uint64_t q36_model_n_params(const q36_model *m);
/* Bytes of tensor data. */
uint64_t q36_model_n_bytes(const q36_model *m);

#endif
