/* cuda_side.cu: be_side_begin, be_side_end and be_side_join, ops that run
 * beside the pass's stream (Q36_CUDA_SIDE, on unless "0"). Measured on an
 * H100 (bench/results/2026-12-07-cuda-session44/, medians of 3): a
 * 35B-A3B decode step 2.895 ms with it against 2.972 without, 4 slots
 * 4.184 against 4.327; with the kept int8 rows of Q36_CUDA_Q8KEEP's
 * default, 2.821 and 4.151.
 *
 * A decode step is a chain of small kernels, each waiting for the one
 * before (under PDL: cuda.h, cuda_pdl_enter); a node of that chain costs a
 * few microseconds whatever its work (bench/results/2026-12-07-cuda-session42/,
 * run2: an empty node alone 0.77 us). Work that does not depend on the
 * chain's last results can leave it: ffn.c queues the shared expert's
 * SwiGLU and down product (two nodes) as a side, beside the routing and the
 * routed experts' products, and joins it before the sum that reads both.
 *
 * How. be_side_begin records an event on the pass's stream and has a
 * second stream wait for it, then makes that stream the context's
 * (c->stream: every launch takes it from there), so the side's ops queue
 * behind everything queued before; be_side_end records the side's end and
 * gives the context its stream back; be_side_join has that stream wait for
 * the side's end. Captured in a pass's graph (cuda_graph.cu) these are a
 * fork and a join of the graph's nodes; op by op they run as streams do.
 * The side's int8 rows (k_q8x) go to a scratch of their own (side_deq,
 * swapped with deq while the side is queued), since the main stream's
 * products write theirs to deq meanwhile; the rows kept in each (cuda.h:
 * q8) are swapped with it, so the main stream's stay its own.
 *
 * When. Only in passes of 1 to mv_rows rows (decode steps, verify passes:
 * their products are the matvec kernels, which take no cuBLAS handle, whose
 * stream is the main one), not while profiled (each op timed alone on the
 * main stream), and not with Q36_CUDA_MOEDOWN=1, whose fused op holds the
 * shared expert's down product (ffn.c calls it only when told false). The
 * answer is the same for every pass of a key, so recordings and replays
 * agree; each step is a graph op (cuda.cu). No result changes: the same
 * kernels on the same operands (tested bit for bit, cuda.model.*.side_same_bits). */
#include "cuda.h"

bool cuda_side_wanted(const cuda_ctx *c)
{
    return c->side_mode && !c->side_on && !c->side_pending && !c->prof_on && !c->moe_down &&
           c->pass_rows >= 1 && c->pass_rows <= c->mv_rows && c->side_deq;
}

/* deq and the rows kept there (q8) for the other stream's: a side
 * starts with none kept, and the main stream's kept ones (its products'
 * rows of x, Q36_CUDA_Q8KEEP) are its own again after it */
static void swap_scratch(cuda_ctx *c)
{
    float *d = c->deq;
    const size_t n = c->deq_floats;
    c->deq = c->side_deq;
    c->deq_floats = c->side_deq_floats;
    c->side_deq = d;
    c->side_deq_floats = n;
    const cuda_rows_kept k = c->q8;
    c->q8 = c->side_q8;
    c->side_q8 = k;
    c->h16.valid = false;
}

bool cuda_side(be_ctx *be, int step)
{
    cuda_ctx *c = cuda_ctx_of(be);
    switch (step) {
    case BE_SIDE_BEGIN:
        if (!cuda_side_wanted(c) || be->err.kind)
            return false;
        if (!CUDA_OK(be, cudaEventRecord(c->side_fork, c->stream)) ||
            !CUDA_OK(be, cudaStreamWaitEvent(c->side_stream, c->side_fork, 0)))
            return false;
        c->side_main = c->stream;
        c->stream = c->side_stream;
        c->side_q8.valid = false;
        swap_scratch(c);
        c->side_on = true;
        return true;
    case BE_SIDE_END:
        if (!c->side_on)
            return false;
        c->side_pending = CUDA_OK(be, cudaEventRecord(c->side_done, c->stream));
        c->stream = c->side_main;
        swap_scratch(c);
        c->side_on = false;
        return false;
    case BE_SIDE_JOIN:
        if (c->side_pending) {
            c->side_pending = false;
            CUDA_OK(be, cudaStreamWaitEvent(c->stream, c->side_done, 0));
        }
        return false;
    }
    return false;
}

void cuda_side_close(be_ctx *be)
{
    cuda_side(be, BE_SIDE_END);
    cuda_side(be, BE_SIDE_JOIN);
}

/* The side's scratch for passes of up to mv_rows rows of max_in columns:
 * cuda_q8_layout's need */
static size_t side_bytes(const be_shape *shape)
{
    const size_t R = (size_t)cuda_mv_rows(shape), K = (size_t)shape->max_in;
    return (R * K + R * (K / 32) * 8 + 16 + sizeof(float) - 1) / sizeof(float) * sizeof(float);
}

/* ... in the memory plan (cuda.cu, before any context) */
size_t cuda_side_scratch_bytes(const be_shape *shape)
{
    return cuda_env_on("Q36_CUDA_SIDE") ? side_bytes(shape) : 0;
}

/* ... at a reserve (the stream and its events came with the context).
 * false: no side (a hint, so nothing fails) */
bool cuda_side_reserve(be_ctx *be, const be_shape *shape)
{
    cuda_ctx *c = cuda_ctx_of(be);
    if (!c->side_mode)
        return false;
    const size_t floats = side_bytes(shape) / sizeof(float);
    if (floats <= c->side_deq_floats)
        return true;
    cudaFree(c->side_deq);              /* too small for this shape: no side without a new one */
    c->side_deq = NULL;
    c->side_deq_floats = 0;
    float *n = NULL;
    if (cudaMalloc(&n, floats * sizeof(float)) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    c->side_deq = n;
    c->side_deq_floats = floats;
    return true;
}
