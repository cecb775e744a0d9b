/* cuda_prefetch.cu: be_prefetch, weights asked of L2 ahead of their
 * products (Q36_CUDA_PREFETCH).
 *
 * A decode step is a chain of small kernels, most of them bound by
 * latency: a one-row product of a few MB of weights starts its DRAM reads
 * only when it runs (or, under PDL, while the kernel ahead finishes:
 * cuda_mv8.h, mv_prefetch). The model names the weights of the block after
 * the one it is about to run (forward.c); this queues, on a second stream
 * forked from the pass's stream, one small kernel whose threads ask L2 for
 * those bytes in pieces (cp.async.bulk.prefetch on Hopper: the copy engine
 * fetches them and the thread moves on). The main stream does not wait for
 * it: the reads overlap the block that runs meanwhile, and the products
 * after it find their weights in L2 (50 MB on an H100: a 35B-A3B DeltaNet
 * block's projections are 19 MB). The side stream joins the main one at
 * the pass's cut (cuda_graph.cu), so a recorded pass holds the fork and
 * the join, and nothing outlives a sync.
 *
 * Only passes of 1 to PF_ROWS rows prefetch (decode steps, verify passes:
 * a prompt pass reads each weight once for many rows), and not while
 * profiled (each op is timed alone there). Results never change: the
 * kernel only reads, and only asks. */
#include "cuda.h"

#define PF_RANGES 12           /* weights a call (be_prefetch's n beyond: later calls) */
#define PF_PIECE  (64u << 10)  /* bytes one prefetch instruction asks for */
#define PF_ROWS   64

typedef struct pf_list {
    const char *p[PF_RANGES];
    uint64_t    bytes[PF_RANGES];
    int         n;
} pf_list;

/* Thread t of the grid takes pieces t, t + threads, ... of the ranges
 * laid end to end */
__global__ void k_l2_prefetch(pf_list L)
{
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x, base = 0;
    for (int r = 0; r < L.n; r++) {
        const uint64_t pieces = (L.bytes[r] + PF_PIECE - 1) / PF_PIECE;
        for (; t < base + pieces; t += stride) {
            const uint64_t off = (t - base) * PF_PIECE;
            const uint64_t left = L.bytes[r] - off;
            const uint32_t n = (uint32_t)(left < PF_PIECE ? left : PF_PIECE);
            const char *a = L.p[r] + off;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
            /* the bulk form wants 16-byte addresses and sizes: weights are
             * cudaMalloc'd (256-byte aligned); a tail under 16 bytes
             * goes with the line prefetch below */
            const uint32_t n16 = n & ~15u;
            if (n16)
                asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(a), "r"(n16)
                             : "memory");
            if (n16 < n)
                asm volatile("prefetch.global.L2 [%0];" ::"l"(a + n16));
#elif defined(__CUDA_ARCH__)
            for (uint32_t o = 0; o < n; o += 128)
                asm volatile("prefetch.global.L2 [%0];" ::"l"(a + o));
#endif
        }
        base += pieces;
    }
}

void cuda_prefetch(be_ctx *be, int n, const be_weight *const *w)
{
    cuda_ctx *c = cuda_ctx_of(be);
    if (!c->pf_on || c->prof_on || c->pass_rows < 1 || c->pass_rows > PF_ROWS || be->err.kind)
        return;
    pf_list L;
    L.n = 0;
    uint64_t total = 0;
    for (int i = 0; i < n && L.n < PF_RANGES; i++) {
        if (!w[i] || !w[i]->data)
            continue;
        const gguf_tensor *t = w[i]->t;
        const uint64_t rows = t->ne[0] ? gguf_tensor_nelements(t) / t->ne[0] : 0;
        const uint64_t bytes = w[i]->row_bytes * rows;
        if (!bytes)
            continue;
        L.p[L.n] = (const char *)w[i]->data;
        L.bytes[L.n++] = bytes;
        total += (bytes + PF_PIECE - 1) / PF_PIECE;
    }
    if (!L.n)
        return;
    /* fork: the side stream waits for what is queued on the main one */
    if (!CUDA_OK(be, cudaEventRecord(c->pf_fork, c->stream)) ||
        !CUDA_OK(be, cudaStreamWaitEvent(c->pf_stream, c->pf_fork, 0)))
        return;
    const unsigned threads = 128;
    const unsigned blocks = (unsigned)((total + threads - 1) / threads);
    k_l2_prefetch<<<blocks, threads, 0, c->pf_stream>>>(L);
    c->pf_pending = true;
    cuda_count_as(c, "k_l2_prefetch");
    CUDA_LAUNCHED(be, "k_l2_prefetch");
}

void cuda_prefetch_join(be_ctx *be)
{
    cuda_ctx *c = cuda_ctx_of(be);
    if (!c->pf_pending)
        return;
    c->pf_pending = false;
    if (CUDA_OK(be, cudaEventRecord(c->pf_join, c->pf_stream)))
        CUDA_OK(be, cudaStreamWaitEvent(c->stream, c->pf_join, 0));
}
