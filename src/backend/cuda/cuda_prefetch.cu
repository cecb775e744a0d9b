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
 * With Q36_CUDA_PREFETCH=2 the experts the router chose are asked for too,
 * as soon as the routing is queued (ffn.c): a kernel on the side stream
 * reads the choices once they are written and asks for each chosen
 * expert's slab of the gate, up and down weights, so that the down
 * products (after the gate and up ones) find theirs in L2. Only for
 * choices of up to PF_PAIRS (row, expert) pairs: larger batches group
 * their expert rows by expert anyway.
 *
 * Only passes of 1 to PF_ROWS rows prefetch (decode steps, verify passes:
 * a prompt pass reads each weight once for many rows), and not while
 * profiled (each op is timed alone there). Results never change: the
 * kernel only reads, and only asks. */
#include "cuda.h"

#define PF_RANGES 12           /* weights a call (be_prefetch's n beyond: later calls) */
#define PF_PIECE  (64u << 10)  /* bytes one prefetch instruction asks for */
#define PF_ROWS   64
#define PF_PAIRS  64           /* (row, chosen expert) pairs of an expert prefetch */

typedef struct pf_list {
    const char *p[PF_RANGES];
    uint64_t    bytes[PF_RANGES];
    int         n;
} pf_list;

/* The bytes [a, a + n) asked of L2: the bulk form wants 16-byte addresses
 * and sizes, so from a rounded down to 16 bytes (within the weight: its
 * allocation is 256-byte aligned) and a tail under 16 bytes with a line
 * prefetch (never past a + n) */
__device__ __forceinline__ void l2_ask(const char *a, uint32_t n)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const uint32_t lead = (uint32_t)((uintptr_t)a & 15u);
    const char *a0 = a - lead;
    const uint32_t n0 = n + lead, n16 = n0 & ~15u;
    if (n16)
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(a0), "r"(n16) : "memory");
    if (n16 < n0)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(a0 + n16));
#elif defined(__CUDA_ARCH__)
    for (uint32_t o = 0; o < n; o += 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(a + o));
#endif
}

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
            l2_ask(L.p[r] + off, (uint32_t)(left < PF_PIECE ? left : PF_PIECE));
        }
        base += pieces;
    }
}

/* Expert weights: expert e of weight i is the slab at p[i] + e * bytes[i]
 * (E experts each) */
typedef struct pf_experts {
    pf_list        w;
    int64_t        E;
    const int32_t *sel;
    int64_t        ldsel, rows, k;
} pf_experts;

/* Thread t: (row, rank) pair t / w.n's choice, slab of weight t % w.n, in
 * pieces; a choice outside [0, E) is skipped (the products clamp it) */
__global__ void k_l2_prefetch_id(pf_experts X)
{
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t pair = t / X.w.n, i = t % X.w.n;
    if (pair >= X.rows * X.k)
        return;
    const int32_t e = X.sel[(pair / X.k) * X.ldsel + pair % X.k];
    if (e < 0 || e >= X.E)
        return;
    const uint64_t bytes = X.w.bytes[i];
    const char *a = X.w.p[i] + (uint64_t)e * bytes;
    for (uint64_t off = 0; off < bytes; off += PF_PIECE) {
        const uint64_t left = bytes - off;
        l2_ask(a + off, (uint32_t)(left < PF_PIECE ? left : PF_PIECE));
    }
}

/* The side stream waits for what is queued on the main one */
static bool pf_fork_stream(be_ctx *be)
{
    cuda_ctx *c = cuda_ctx_of(be);
    return CUDA_OK(be, cudaEventRecord(c->pf_fork, c->stream)) &&
           CUDA_OK(be, cudaStreamWaitEvent(c->pf_stream, c->pf_fork, 0));
}

void cuda_prefetch(be_ctx *be, int n, const be_weight *const *w, const be_tensor *sel)
{
    cuda_ctx *c = cuda_ctx_of(be);
    if (!c->pf_mode || (sel && c->pf_mode < 2) || c->prof_on || c->pass_rows < 1 ||
        c->pass_rows > PF_ROWS || be->err.kind)
        return;
    if (sel && (sel->rows * sel->cols > PF_PAIRS || !sel->rows))
        return;
    pf_list L;
    L.n = 0;
    uint64_t total = 0;
    int64_t E = 0;
    for (int i = 0; i < n && L.n < PF_RANGES; i++) {
        if (!w[i] || !w[i]->data)
            continue;
        const gguf_tensor *t = w[i]->t;
        /* an expert's rows (ne[1]), or the whole weight */
        const uint64_t rows = sel ? t->ne[1] : t->ne[0] ? gguf_tensor_nelements(t) / t->ne[0] : 0;
        const uint64_t bytes = w[i]->row_bytes * rows;
        if (!bytes || (sel && E && (int64_t)t->ne[2] != E))
            continue;
        E = (int64_t)t->ne[2];
        L.p[L.n] = (const char *)w[i]->data;
        L.bytes[L.n++] = bytes;
        total += (bytes + PF_PIECE - 1) / PF_PIECE;
    }
    if (!L.n || !pf_fork_stream(be))
        return;
    const unsigned threads = 128;
    if (sel) {
        const pf_experts X = { L, E, (const int32_t *)sel->data, sel->ld, sel->rows, sel->cols };
        const int64_t tasks = sel->rows * sel->cols * L.n;
        k_l2_prefetch_id<<<(unsigned)((tasks + threads - 1) / threads), threads, 0,
                           c->pf_stream>>>(X);
    } else {
        k_l2_prefetch<<<(unsigned)((total + threads - 1) / threads), threads, 0, c->pf_stream>>>(L);
    }
    c->pf_pending = true;
    cuda_count_as(c, sel ? "k_l2_prefetch_id" : "k_l2_prefetch");
    CUDA_LAUNCHED(be, sel ? "k_l2_prefetch_id" : "k_l2_prefetch");
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
