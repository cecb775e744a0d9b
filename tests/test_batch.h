/* test_batch.h: what the backend tests share to call the sequence ops
 * (backend.h, "Batches and slots") on one sequence: a batch of one run,
 * and i32 tensors from host arrays. */
#ifndef Q36_TEST_BATCH_H
#define Q36_TEST_BATCH_H

#include <assert.h>

#include "backend/backend.h"

/* T rows of slot `slot` at positions pos0.., over kv_rows cache rows a
 * slot (at least pos0 + T); free with be_batch_free. */
static inline be_batch t_batch1(be_ctx *be, int64_t T, int64_t pos0, int64_t kv_rows, int slot)
{
    be_batch b;
    int rc = be_batch_init(be, &b, T, 1, kv_rows, NULL);
    assert(rc == 0);
    (void)rc;
    be_seq s = { slot, 0, (int32_t)T, (int32_t)pos0 };
    be_batch_set(be, &b, 1, &s);
    return b;
}

/* A rows x cols i32 tensor holding v (packed rows). */
static inline be_tensor *t_i32(be_ctx *be, const int32_t *v, int64_t rows, int64_t cols)
{
    be_tensor *t = be_tensor_new_type(be, BE_I32, rows, cols);
    be_write(be, t, 0, rows, v);
    return t;
}

#endif
