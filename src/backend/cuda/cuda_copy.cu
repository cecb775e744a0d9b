/* cuda_copy.cu: be_copy on the device. Small copies (a head's columns of
 * a row, a row of the residual stream) wait in a queue of the context and
 * run as one kernel when anything else is queued or read: a pass's
 * per-head splits of q and the gate then cost one launch instead of two
 * per head. Large copies (checkpoints, state rows) and copies that touch
 * what a waiting copy touches go to the copy engine in order, after the
 * queue. The queue keeps program order visible: every other op of the
 * table launches it first (cuda.cu). With Q36_CUDA_UPQ (on unless "0")
 * small uploads wait here too, read from the pinned staging through its
 * device address (cuda.h: up_dev). */
#include "cuda.h"

#define QUEUE_MAX_BYTES ((int64_t)1 << 20)   /* a copy above this goes straight */

typedef struct copy_batch {
    cuda_copy_job j[CUDA_COPY_QUEUE];
    int n;
} copy_batch;

/* Block (x, i) copies its share of job i: 4-byte words when every address,
 * pitch and the width allow, else bytes. */
__global__ void k_copies(copy_batch B)
{
    cuda_pdl_enter();
    const cuda_copy_job J = B.j[blockIdx.y];
    const bool words = (((uintptr_t)J.src | (uintptr_t)J.dst | J.spitch | J.dpitch | J.width) & 3) == 0;
    const int64_t unit = words ? 4 : 1, per = J.width / unit, n = per * J.rows;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = i / per, c = i % per;
        if (words)
            *(uint32_t *)(J.dst + r * J.dpitch + c * 4) = *(const uint32_t *)(J.src + r * J.spitch + c * 4);
        else
            J.dst[r * J.dpitch + c] = J.src[r * J.spitch + c];
    }
}

void cuda_copy_flush(be_ctx *be)
{
    cuda_ctx *c = cuda_ctx_of(be);
    if (!c->n_copies)
        return;
    copy_batch B;
    int64_t most = 0;
    for (int i = 0; i < c->n_copies; i++) {
        B.j[i] = c->copies[i];
        const int64_t n = B.j[i].width * B.j[i].rows;
        most = n > most ? n : most;
    }
    B.n = c->n_copies;
    c->n_copies = 0;
    const int64_t blocks = (most / 4 + 255) / 256;
    dim3 grid((unsigned)(blocks < 1 ? 1 : blocks > 1024 ? 1024 : blocks), (unsigned)B.n);
    cuda_launch(k_copies, grid, 256, 0, c->stream, B);
    CUDA_LAUNCHED(be, "k_copies");
}

/* [lo, hi) of the bytes a job reads (src) or writes (dst) */
static bool overlap(const char *a, int64_t apitch, int64_t w, int64_t rows, const char *b,
                    int64_t bpitch, int64_t bw, int64_t brows)
{
    const char *ahi = a + (rows - 1) * apitch + w, *bhi = b + (brows - 1) * bpitch + bw;
    return a < bhi && b < ahi;
}

void cuda_copy_queue_rows(be_ctx *be, const char *src, int64_t sp, char *dst, int64_t dp,
                          int64_t w, int64_t rows)
{
    cuda_ctx *c = cuda_ctx_of(be);
    if (!rows || !w)
        return;
    bool straight = w * rows > QUEUE_MAX_BYTES;
    for (int i = 0; i < c->n_copies && !straight; i++) {
        const cuda_copy_job *J = &c->copies[i];
        /* a new read of a waiting write, or a new write of a waiting read
         * or write: keep the order through a launch */
        straight = overlap(src, sp, w, rows, J->dst, J->dpitch, J->width, J->rows) ||
                   overlap(dst, dp, w, rows, J->src, J->spitch, J->width, J->rows) ||
                   overlap(dst, dp, w, rows, J->dst, J->dpitch, J->width, J->rows);
    }
    if (straight || c->n_copies == CUDA_COPY_QUEUE)
        cuda_copy_flush(be);
    if (straight) {
        cuda_count_as(c, "copy / memset: device (straight)");
        CUDA_OK(be, cudaMemcpy2DAsync(dst, (size_t)dp, src, (size_t)sp, (size_t)w, (size_t)rows,
                                      cudaMemcpyDefault, c->stream));
        return;
    }
    c->copies[c->n_copies++] = (cuda_copy_job){ src, dst, sp, dp, w, rows };
}

void cuda_copy_queue(be_ctx *be, const be_tensor *src, be_tensor *dst)
{
    cuda_copy_queue_rows(be, (const char *)src->data, (int64_t)be_type_bytes(src->type, src->ld),
                         (char *)dst->data, (int64_t)be_type_bytes(dst->type, dst->ld),
                         (int64_t)be_type_bytes(src->type, src->cols), src->rows);
}
