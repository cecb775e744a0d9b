/* model.h: the inside of a q36_model for the rest of q36 (the model layer,
 * tools, tests): its GGUF and its geometry. Not a public header: q36.h
 * keeps both opaque. */
#ifndef Q36_MODEL_MODEL_H
#define Q36_MODEL_MODEL_H

#include "../include/q36.h"
#include "../gguf/gguf.h"
#include "hparams.h"

/* Views valid until q36_model_free. */
const model_hparams *q36_model_hparams(const q36_model *m);
const gguf_file     *q36_model_gguf(const q36_model *m);

#endif
