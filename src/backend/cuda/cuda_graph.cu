/* cuda_graph.cu: recorded passes of the CUDA backend (Q36_CUDA_GRAPHS):
 * a decode step's few hundred launches become one cudaGraphLaunch.
 *
 * The engine brackets each forward pass with be_pass_begin(key, rows) and
 * be_pass_end (backend.h, "passes"). The first pass of a key (of at most
 * graph_rows' rows: decode steps and small batches, whose matmuls are
 * the warp kernels; larger ones call cuBLAS and run op by op) runs op by
 * op, so that every kernel it launches is loaded (lazy module loading)
 * before any capture; the second is captured from the stream: its ops are recorded, not run, up to the first read,
 * write or sync of the pass (the "cut"), where the graph is instantiated
 * and launched. Later passes of the key skip their ops up to the cut and
 * launch the graph there instead. What follows the cut (the logits' read,
 * the head of a pass that also returns hidden rows) runs op by op.
 *
 * Safety. Every op's arguments (tensors' device pointers and shapes,
 * weights, the batch's device tensors, scalars) are folded into a
 * fingerprint as it is captured and again as it is skipped; a replay
 * whose ops or fingerprint differ from the recording fails the pass
 * (be_check) and drops the graph. Values that change between passes of a
 * key reach the kernels through device memory only: ids, positions and
 * runs (uploaded before the pass, cuda.cu queues those small uploads
 * through pinned staging without waiting), the MoE choices; attention
 * sizes its splits from the K/V capacity, not the current length
 * (cuda_seq.cu). Graphs are dropped when the scratch is reserved again
 * (their memory could move); a tensor freed while graphs are held keeps
 * its memory until they are dropped (cuda.cu, "tensors": the server's
 * prefix cache frees checkpoints all the time, and dropping every graph at
 * each cost a recording of each shape again). A capture that fails (an op
 * that cannot be captured) fails that pass and turns graphs off for the
 * context: the passes after it run op by op. */
#include "cuda.h"

#include <string.h>


/* The context whose pass this thread captures now (NULL: none): the
 * tensors its ops take are spans of its graph. */
static thread_local cuda_ctx *span_ctx;

void cuda_graph_drop(be_ctx *be)
{
    cuda_ctx *c = cuda_ctx_of(be);
    cuda_q8_drop(c);           /* memory may move (cuda.h: q8) */
    for (int i = 0; i < c->n_graphs; i++)
        if (c->graphs[i].exec)
            cudaGraphExecDestroy(c->graphs[i].exec);
    c->n_graphs = 0;
    c->gmode = GM_EAGER;
    c->n_span = 0;
    c->span_all = false;
    if (span_ctx == c)
        span_ctx = NULL;
}

void cuda_graph_span(const be_tensor *t)
{
    cuda_ctx *c = span_ctx;
    if (!c || !t->data || c->span_all)
        return;
    if (c->n_span == c->span_cap) {
        const int n = c->span_cap ? 2 * c->span_cap : 1024;
        uintptr_t *p = n <= (1 << 20) ? (uintptr_t *)realloc(c->span, 2 * (size_t)n * sizeof *p) : NULL;
        if (!p) {
            c->span_all = true;
            return;
        }
        c->span = p;
        c->span_cap = n;
    }
    const uintptr_t lo = (uintptr_t)t->data;
    const uintptr_t hi = lo + (uintptr_t)(t->rows > 0 ? t->rows : 1) * be_type_bytes(t->type, t->ld);
    c->span[2 * c->n_span] = lo;
    c->span[2 * c->n_span + 1] = hi > lo ? hi : lo + 1;
    c->n_span++;
}

static int span_cmp(const void *a, const void *b)
{
    const uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return (x > y) - (x < y);
}

/* the spans sorted by start and merged where they overlap */
static void span_merge(cuda_ctx *c)
{
    if (!c->n_span)
        return;
    qsort(c->span, (size_t)c->n_span, 2 * sizeof *c->span, span_cmp);
    int n = 1;
    for (int i = 1; i < c->n_span; i++) {
        uintptr_t *last = c->span + 2 * (n - 1), *cur = c->span + 2 * i;
        if (cur[0] <= last[1]) {
            if (cur[1] > last[1])
                last[1] = cur[1];
        } else {
            c->span[2 * n] = cur[0];
            c->span[2 * n + 1] = cur[1];
            n++;
        }
    }
    c->n_span = n;
}

bool cuda_graph_points_at(cuda_ctx *c, uintptr_t lo, uintptr_t hi)
{
    if (c->span_all)
        return true;
    /* the last span starting below hi (merged: sorted, disjoint) */
    int a = 0, b = c->n_span;
    while (a < b) {
        const int m = (a + b) / 2;
        if (c->span[2 * m] < hi)
            a = m + 1;
        else
            b = m;
    }
    return a > 0 && c->span[2 * (a - 1) + 1] > lo;
}

static int graph_find(cuda_ctx *c, uint64_t key)
{
    for (int i = 0; i < c->n_graphs; i++)
        if (c->graphs[i].key == key)
            return i;
    return -1;
}

/* A slot for a new key: a free one, or the least recently used. */
static cuda_graph *graph_slot(cuda_ctx *c)
{
    if (c->n_graphs < c->graphs_cap)
        return &c->graphs[c->n_graphs++];
    cuda_graph *g = &c->graphs[0];
    for (int i = 1; i < c->n_graphs; i++)
        if (c->graphs[i].used < g->used)
            g = &c->graphs[i];
    if (g->exec)
        cudaGraphExecDestroy(g->exec);
    return g;
}

/* The rows a recorded pass may have: the matvec kernels' limit (above it
 * fast mode calls cuBLAS), or in batch-invariant exact mode, whose products
 * above that take k_matvec_inv and whose other ops are the decode ones,
 * CUDA_GRAPH_ROWS_INV: the verify pass of several slots' drafts (4 slots
 * of 1 + 3 rows: 16) */
#define CUDA_GRAPH_ROWS_INV 64
static int64_t graph_rows(const cuda_ctx *c)
{
    return c->inv && c->mv_rows < CUDA_GRAPH_ROWS_INV ? CUDA_GRAPH_ROWS_INV : c->mv_rows;
}

void cuda_graph_begin(be_ctx *be, uint64_t key, int64_t n_rows)
{
    cuda_ctx *c = cuda_ctx_of(be);
    c->gmode = GM_EAGER;
    cuda_q8_drop(c);           /* a pass starts without kept int8 rows (cuda.h: q8) */
    cuda_copy_flush(be);       /* copies queued before the pass run before it */
    if (!c->graphs_on || c->prof_on || !key || n_rows < 1 || n_rows > graph_rows(c) ||
        be->err.kind)
        return;      /* op by op (a profiled pass too: cuda_prof.cu) */
    c->gkey = key;
    c->gfp = key;
    c->gops = 0;
    c->gcur = graph_find(c, key);
    if (c->gcur >= 0 && c->graphs[c->gcur].n_ops >= 0) {
        c->gmode = GM_REPLAY;
        return;
    }
    if (c->gcur < 0) {         /* first sighting: op by op, remembered */
        cuda_graph *g = graph_slot(c);
        *g = (cuda_graph){ key, 0, ++c->gtick, -1, 0, NULL };
        return;
    }
    if (cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        cudaGetLastError();
        c->graphs_on = false;  /* cannot capture here: op by op from now */
        return;
    }
    c->gmode = GM_CAPTURE;
    span_ctx = c;
}

bool cuda_graph_op(be_ctx *be, uint64_t h)
{
    cuda_ctx *c = cuda_ctx_of(be);
    c->gfp = (c->gfp ^ h) * 0x100000001B3u;
    c->gfp ^= c->gfp >> 29;
    c->gops++;
    return c->gmode == GM_REPLAY;
}

static void launch(be_ctx *be, cuda_graph *g)
{
    cuda_ctx *c = cuda_ctx_of(be);
    g->used = ++c->gtick;
    if (!g->exec)
        return;
    if (CUDA_OK(be, cudaGraphLaunch(g->exec, c->stream))) {
        c->stats.graph_launches++;
        c->stats.graph_nodes += g->nodes;
    }
}

static void cut_capture(be_ctx *be)
{
    cuda_ctx *c = cuda_ctx_of(be);
    cuda_copy_flush(be);       /* the copies queued last belong to the graph */
    c->gmode = GM_EAGER;
    span_ctx = NULL;
    span_merge(c);             /* kept even if the capture fails: harmless */
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(c->stream, &graph);
    if (e != cudaSuccess || !graph) {
        cudaGetLastError();
        if (graph)
            cudaGraphDestroy(graph);
        c->graphs_on = false;
        be_fail(be, Q36_E_IO, "cuda graphs (Q36_CUDA_GRAPHS): capturing a pass of %lld ops "
                "failed (%s); the pass did not run, graphs are off for this context from now",
                (long long)c->gops, cudaGetErrorString(e));
        return;
    }
    if (be->err.kind) {        /* an op failed while captured: the pass fails anyway */
        cudaGraphDestroy(graph);
        return;
    }
    cudaGraphExec_t exec = NULL;
    size_t nodes = 0;
    if (c->gops) {
        e = cudaGraphGetNodes(graph, NULL, &nodes);
        if (e == cudaSuccess)
            e = cudaGraphInstantiate(&exec, graph, 0);
    }
    cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
        cudaGetLastError();
        c->graphs_on = false;
        be_fail(be, Q36_E_IO, "cuda graphs (Q36_CUDA_GRAPHS): instantiating a pass of %lld "
                "ops failed (%s); the pass did not run, graphs are off for this context from now",
                (long long)c->gops, cudaGetErrorString(e));
        return;
    }
    cuda_graph *g = &c->graphs[c->gcur];    /* the key's entry, seen once */
    g->key = c->gkey;
    g->fp = c->gfp;
    g->n_ops = c->gops;
    g->nodes = nodes;
    g->exec = exec;
    c->stats.graphs_recorded++;
    launch(be, g);
}

static void cut_replay(be_ctx *be)
{
    cuda_ctx *c = cuda_ctx_of(be);
    c->gmode = GM_EAGER;
    cuda_graph *g = &c->graphs[c->gcur];
    if (g->fp != c->gfp || g->n_ops != c->gops) {
        be_fail(be, Q36_E_IO, "cuda graphs (Q36_CUDA_GRAPHS): a pass of key %016llx issued %lld "
                "ops (fingerprint %016llx) where the recording has %lld (%016llx); the pass did "
                "not run and the recording is dropped", (unsigned long long)c->gkey,
                (long long)c->gops, (unsigned long long)c->gfp, (long long)g->n_ops,
                (unsigned long long)g->fp);
        if (g->exec)
            cudaGraphExecDestroy(g->exec);
        *g = c->graphs[--c->n_graphs];
        return;
    }
    launch(be, g);
}

void cuda_graph_cut(be_ctx *be)
{
    cuda_ctx *c = cuda_ctx_of(be);
    cuda_side_close(be);       /* before a capture ends: it must hold the joins */
    cuda_prefetch_join(be);
    cuda_q8_drop(c);
    if (c->gmode == GM_CAPTURE)
        cut_capture(be);
    else if (c->gmode == GM_REPLAY)
        cut_replay(be);
}

void cuda_graph_pass_end(be_ctx *be)
{
    cuda_graph_cut(be);
}
