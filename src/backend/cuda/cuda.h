/* cuda.h: the inside of the CUDA backend (not a public header): its
 * context, the error helpers every .cu file uses, and the op entries of
 * each op family file. The table itself is in cuda.cu.
 *
 * Streams and sync. Every op is queued on the context's one stream and
 * returns without waiting; be_read, be_save and be_sync wait. Host to
 * device writes (be_write, be_load: the ids and the batch, once a pass)
 * wait too, since the caller's buffer is pageable and may go away; with
 * graphs on (Q36_CUDA_GRAPHS) small ones go through pinned staging
 * instead and do not wait. Every entry counts what it queues (be_stats).
 *
 * Errors. A CUDA call that fails records "call at file:line: message"
 * in the context (be_fail, the first one winning) through CUDA_OK; a
 * kernel launch is checked with cudaGetLastError right after it; errors
 * raised while a kernel runs surface at the next sync, which be_check
 * does once per pass. A sticky device error (an illegal address) makes
 * every later call fail, so the first message is the one that counts. */
#ifndef Q36_CUDA_H
#define Q36_CUDA_H

#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "../be_impl.h"
#include "cuda_moe.h"       /* cuda_moe_rows_for */
}

/* A device copy waiting in the queue (cuda_copy.cu): rows of `width`
 * bytes, each row at its pitch. */
#define CUDA_COPY_QUEUE 32
typedef struct cuda_copy_job {
    const char *src;
    char       *dst;
    int64_t     spitch, dpitch, width, rows;
} cuda_copy_job;

/* A recorded pass (cuda_graph.cu): the graph of the ops of its first part
 * (up to the first read, write or sync), the key the engine gave, and the
 * fingerprint and count of the ops that were recorded. */
/* At most this many keys are held (least recently used goes), at most
 * graphs_cap of them (Q36_CUDA_GRAPHCAP, default all): the server's MTP
 * passes of several slots have ~90 shapes (keep flags, rows a slot,
 * padded draft rows); with 16 held, 3% of its passes were recorded again
 * and 5% ran op by op (2026-12-06) */
#define CUDA_GRAPHS_MAX 128
typedef struct cuda_graph {
    uint64_t        key, fp, used;
    int64_t         n_ops;         /* -1: seen once, not recorded yet */
    size_t          nodes;
    cudaGraphExec_t exec;          /* NULL when the part had no op */
} cuda_graph;

enum cuda_gmode { GM_EAGER = 0, GM_CAPTURE, GM_REPLAY };

/* Rows of x (pitch ld, R rows of K) whose converted form is in a scratch,
 * while valid (cuda_ctx: q8, h16) */
typedef struct cuda_rows_kept {
    const void *x;
    int64_t     R, ld, K;
    bool        valid;
} cuda_rows_kept;

typedef struct cuda_prof cuda_prof;   /* cuda_prof.cu */

struct cuda_ctx {
    be_ctx          base;          /* first: backend.c sees this */
    int             device;
    cudaStream_t    stream;
    cublasHandle_t  blas;
    be_weight      *weights;       /* bound weights, a list */
    /* scratch, reserved once (be_reserve): the f32 rows of a dequantized
     * weight for cuBLAS, attention's split partials */
    float          *deq;           /* deq_floats */
    size_t          deq_floats;
    float          *part;          /* attention partials */
    size_t          part_floats;
    /* q8_0 caches' prompt attention (cuda_attn_q8.cu): f16 copies of the
     * runs' K and V rows, and the runs renumbered, grown when a pass
     * needs more (never while a pass is recorded) */
    void           *q8kv;
    size_t          q8kv_bytes;
    int32_t        *q8runs;
    int             q8runs_n;
    void           *stage;         /* pinned host bytes for reads (STAGE_BYTES) */
    cuda_copy_job   copies[CUDA_COPY_QUEUE];   /* be_copy calls not yet launched */
    int             n_copies;
    bool            fast_mv;       /* Q36_CUDA_FASTMV: cuda_matmul.cu's dot_q4k */
    bool            fused;         /* Q36_CUDA_FUSED: cuda_ops.cu's fused entries */
    /* the fused entries added later, each also with a switch of its own
     * (off with Q36_CUDA_FUSED=0): Q36_CUDA_FSWIGLU (be_matmul_id_swiglu),
     * Q36_CUDA_FDN (be_deltanet_gated), Q36_CUDA_FATTNPRO
     * (be_attn_prologue), on unless "0". be_matmul_id_glu is left to
     * backend.c (the SwiGLU, then the product). A kernel that formed
     * silu(g) * u in shared memory before reading a weight cost more than
     * the launch it saved on the 0.8B's dense down product (K 3584;
     * 2026-12-02: 473 t/s with it, 649 without) and was neutral on the
     * 35B-A3B, so it was removed; be_matmul_glu now forms the SwiGLU in
     * the launch that rounds the product's rows to int8 (f_glu8) */
    bool            f_swiglu, f_dn, f_attn;
    /* Q36_CUDA_FGLU8 (on unless "0", off with Q36_CUDA_FUSED=0):
     * be_matmul_glu's SwiGLU and the int8 rows of its product in one
     * launch (cuda_matmul.cu: cuda_matmul_glu, k_q8x with u); the product
     * itself is the plain decode matvec */
    bool            f_glu8;
    /* Q36_CUDA_MOEDOWN=1 (off by default; off with Q36_CUDA_FUSED=0): an
     * expert block's down products, its shared expert's and their sum as
     * one kernel for decode rows on int8 activations (cuda_moe_down.cu), the
     * same bits as the three ops; measured slower (2026-12-04 session 24) */
    bool            moe_down;
    /* Q36_CUDA_NORMREG (on unless "0"): the norms hold each thread's
     * elements in registers, every load issued first (cuda_ops.cu:
     * k_norm_reg), the same bits as k_norm's loop */
    bool            norm_reg;
    bool            attn_gqa;      /* Q36_CUDA_ATTNGQA=1: cuda_seq.cu's grouped decode attention */
    bool            mv_mixed;      /* Q36_CUDA_MVMIXED=1: cuda_matmul.cu's k_matvec<MV_ANY> */
    bool            mv_wide_first; /* and its jobs by row bytes, widest first (unless Q36_CUDA_MVWIDE=0) */
    /* be_prefetch (cuda_prefetch.cu): pf_mode 0 off, 1 dense weights
     * (Q36_CUDA_PREFETCH=1), 2 also the chosen experts' (=2); the side
     * stream its L2 requests run on, the events of its fork from and join
     * to the main stream, whether a fork is not yet joined; pass_rows: the
     * rows of the pass be_pass_begin opened (0 outside one) */
    int             pf_mode;
    bool            pf_pending;
    cudaStream_t    pf_stream;
    cudaEvent_t     pf_fork, pf_join;
    int64_t         pass_rows;
    /* be_side_* (cuda_side.cu, Q36_CUDA_SIDE): its stream and the events
     * of its fork and its end; side_on while a side's ops are queued (the
     * main stream then in side_main, c->stream the side's), side_pending
     * from its end to its join; side_deq (side_deq_floats): the scratch a
     * side's ops take for their int8 rows while the main stream's take deq */
    bool            side_mode, side_on, side_pending;
    cudaStream_t    side_stream, side_main;
    cudaEvent_t     side_fork, side_done;
    float          *side_deq;
    size_t          side_deq_floats;
    cuda_rows_kept  side_q8;       /* q8 of the stream that is not c->stream now */
    bool            mv8;           /* Q36_CUDA_MV8 (on unless "0") in fast mode: cuda_matmul.cu's k_matvec8 */
    /* Weight products of at most this many rows take the matvec kernels
     * (each weight row read once for every MATVEC_RB rows, from L2 after
     * the first), larger batches the GEMM paths; passes of at most this
     * many rows are recorded as graphs (cuda_graph.cu). Exact mode: 8
     * (cuda_matmul.cu's MATVEC_ROWS; above it batch-invariant exact mode
     * has k_matvec_inv). Fast mode: Q36_CUDA_MVROWS (8 to 64, default 32):
     * the decode steps of up to 32 slots, a verify pass of several slots,
     * without dequantizing every weight to f16 for cuBLAS. */
    int             mv_rows;
    /* Q36_CUDA_MVNB (on unless "0"): Q4_K products of batches above 4 rows
     * on int8 rows take 4 output rows a warp (cuda_matmul.cu,
     * k_matvec8_nb), so that each load of x serves 4 weight rows */
    bool            mv_nb;
    /* Q36_CUDA_MVQ80 (on unless "0"): Q8_0 products of batches of rows on
     * int8 rows (fast mode, cuda_matmul.cu, k_matvec8_q80) */
    bool            mv_q80;
    /* Q36_CUDA_Q80TC (fast mode; a number N: from N rows; unset or "0":
     * off): one Q8_0 job of that many rows of x and up to 16 (K <= 1,024)
     * on the int8 tensor cores with k_matvec8_q80's bits (cuda_matmul.cu,
     * k_mv_q80_tc); 0 when off. Off by default: as it stands it made the
     * trained model's 16-row step 0.918 ms against 0.528 on the dp4a
     * kernel (H100, record 2026-12-06-cuda-session35 run7) */
    int             q80tc;
    /* Q36_CUDA_MMQ (fast mode; "0" off, a number N: from N rows, unset:
     * 2): Q4_K and Q6_K products of batches of that many rows or more
     * (up to 32) on the tensor cores (cuda_mmq.cu, k_mmq); 0 when off */
    int             mmq_min;
    /* Q36_CUDA_MMQGRP (with mmq_min; "0" off, N: from N tokens, unset:
     * 32): expert products of that many tokens or more on the tensor
     * cores, rows grouped by expert (cuda_mmq.cu, k_mmq_grp); below it
     * k_matvec8_id. Its grid has a block for every expert, active or not:
     * on an H100 the 35B-A3B step was slower with it at 2-16 tokens (6.17
     * against 3.61 ms at 2, 8.98 against 8.76 at 16) and faster at 32
     * (14.2-14.3 against 15.3; bench/results/2026-12-05-cuda-mmq/) */
    int             mmq_grp_min;
    /* Q36_CUDA_MMQGRPA=1 (off by default): k_mmq_grp's grid over the
     * active experts only (cuda_mmq.cu, grp_expert); with grouping from 2
     * rows it made a 4-slot 35B-A3B step 5.355 ms against 4.255 without
     * either (H100, bench/results/2026-12-06-cuda-session33/) */
    int             mmq_grp_act;
    /* Q36_CUDA_MVNB1 (2 or 4; unset: 0, off): a one-row Q4_K product
     * takes that many output rows a warp too (cuda_matmul.cu) */
    int             mv_nb1;
    /* The int8 rows in the scratch (c->deq) of the decode rows q8.x (R
     * rows, pitch ld, K wide): what k_q8x or a norm (cuda_ops.cu) last
     * wrote there, kept for the next products of the same rows
     * (Q36_CUDA_Q8KEEP, q8keep: on unless "0", as =2 below since
     * session 44, bench/results/2026-12-07-cuda-session44/). Dropped when an op writes a tensor
     * over those rows (the OP wrapper, cuda.cu), when anything else uses
     * the scratch, when an op is skipped in a replayed pass, at a pass's
     * start and its cut, and when tensors are freed or the scratch is
     * reserved again (cuda_q8_drop). */
    cuda_rows_kept  q8;
    bool            q8keep;
    /* Q36_CUDA_Q8KEEP=1 only: the decode rows' norms write their int8
     * rows too (cuda_ops.cu). Off by default: on the H200 on 2026-12-02
     * the decode step was 3-4% slower with it, 767 vs 789 t/s on the
     * 0.8B, 282 vs 293 on the 35B-A3B, though it cut the 35B step's graph
     * nodes from 835 to 714. The default (=2) keeps only the rows k_q8x
     * makes for the next products of the same rows (a MoE block's
     * router-time products and its routed gate and up products read the
     * same rows): with Q36_CUDA_SIDE, a 35B-A3B step on an H100 2.821 ms
     * against 2.972 with neither and 2.895 with the side alone (medians
     * of 3, bench/results/2026-12-07-cuda-session44/). */
    bool            q8norm;
    /* Q36_CUDA_CMBNORM=1 (off by default): be_moe_combine_norm as one
     * norm kernel for decode rows (cuda_ops.cu); with the defaults above
     * it made the 35B-A3B step slower, 3.090 against 2.821 ms (same
     * record). ffn.c reaches it only with a side (or no shared expert):
     * otherwise be_moe_down_shared ends the block */
    bool            cmb_norm;
    /* The f16 rows at the scratch's start (cuda_gemm.cu, k_to_half) of
     * the rows h16.x (R, ld, K as q8's), kept for the next f16 products
     * of the same rows (a DeltaNet block's qkv and z products, an
     * attention block's q, k and v, the shared expert's up and gate:
     * 90 of the 250 conversions of a 35B-A3B prompt pass; and the fused
     * expert gate/up product, cuda_moe_pre.cu). Dropped where
     * q8 is, and when int8 rows are laid out in the scratch
     * (Q36_CUDA_H16KEEP, on unless "0"). */
    cuda_rows_kept  h16;
    bool            h16keep;
    /* The routing in the expert products' scratch (cuda_moe.cu, route:
     * moe's counts, offsets and perm) is that of the selection `sel`
     * (pitch ldsel, k ranks, Q rows, E experts, tiles of bm rows), kept
     * for the next product of the same selection (a MoE block's fused
     * gate and up product, then its down product: one routing instead of
     * two, 2 of a 35B-A3B prompt pass's 4.3 ms of routing). Dropped where
     * q8 is, and when an op writes over sel (Q36_CUDA_ROUTEKEEP, on
     * unless "0"). */
    struct { const void *sel; int64_t ldsel, k, Q, E; int bm; bool valid; } routed;
    bool            route_keep;
#define CUDA_Q8_NORM_ROWS 8        /* cuda_matmul.cu's MATVEC_ROWS: rows a norm writes int8 for */
    /* Q36_CUDA_EXACTINV in exact mode (on unless "0"; checked on the H200
     * on 2026-12-02): a row's bits do not depend on its batch. Weight products take the
     * decode matvec kernels for every batch size (each output row sums
     * in the same order whatever the other rows), attention splits keys at
     * fixed multiples (cuda_seq.cu); the other ops already give each row
     * the same arithmetic alone or batched. */
    bool            inv;
    /* graphs (Q36_CUDA_GRAPHS, cuda_graph.cu) */
    bool            graphs_on;
    int             gmode;         /* enum cuda_gmode: what the ops of a pass do now */
    int             gcur;          /* the graph replayed (GM_REPLAY) */
    uint64_t        gkey, gfp, gtick;
    int64_t         gops;
    cuda_graph      graphs[CUDA_GRAPHS_MAX];
    int             n_graphs, graphs_cap;
    /* the device memory the held graphs point at through their ops'
     * tensors (cuda_graph.cu, cuda_graph_span): [lo, hi) pairs, sorted and
     * merged when a capture ends; freeing a tensor outside them keeps the
     * graphs */
    uintptr_t      *span;          /* 2 x span_cap */
    int             n_span, span_cap;
    bool            span_all;      /* could not grow: every free drops */
    char           *up;            /* pinned staging of uploads queued without a wait */
    size_t          up_off;        /* bytes of it in use since the stream last waited */
    /* Q36_CUDA_UPQ (on unless "0"; since session 35): small staged uploads
     * join the copy queue (cuda_copy.cu), read by k_copies from up_dev,
     * the device's address of the pinned staging, so that a pass's uploads
     * cost one launch with its other queued copies, not one copy each */
    char           *up_dev;
    bool            up_q;
    /* the device's tensor pool (cuda.cu, tensor_pool), looked up once a
     * context (pool_known): NULL without one; Q36_CUDA_FREEDROP=1 read
     * when the context is made */
    cudaMemPool_t   pool;
    bool            pool_known, free_drop;
    be_stats        stats;
    bool            reserved;
    bool            chunked;       /* fast mode's chunked delta rule (cuda_chunk.h) */
    bool            chunk_tc;      /* its state kernel on tensor cores (Q36_CUDA_CHUNKTC) */
    bool            chunk_prep_tc; /* and its prep kernel (unless Q36_CUDA_CHUNKPREP=0) */
    bool            chunk_prep_pb; /* or its prep in f32, blocked (Q36_CUDA_CHUNKPREP=2) */
    bool            chunk_prep_mma; /* its prep's products as mma.sync steps (unless
                                     * Q36_CUDA_CHUNKPREP=1: WMMA's; cuda_chunk_prep.cu) */
    bool            chunk_split;   /* its states and outputs in two kernels (cuda_chunk.cu,
                                    * unless Q36_CUDA_CHUNKSPLIT=0) */
    bool            chunk_out_x;   /* k_chunk_out's blocks of one chunk's columns, and of the
                                    * value heads of one key head, launched together
                                    * (Q36_CUDA_CHUNKOUTX=1, off: not yet run on a GPU) */
    bool            chunk_out_mma; /* k_chunk_out's products as mma.sync steps (unless
                                    * Q36_CUDA_CHUNKOUTM=0: WMMA's; cuda_chunk.cu) */
    int             chunk_bv;      /* its split state kernel (Q36_CUDA_CHUNKBV, cuda_chunk.cu:
                                    * state_bv): 0 k_chunk_state_split, 16 (the default)
                                    * or 32 k_chunk_state_wide's columns a block */
    bool            mv_grp;        /* grouped expert matvecs (Q36_CUDA_MVGRP, cuda_matmul.cu) */
    /* Q36_CUDA_F16KEEP (fast mode, on unless "0"): prompt products keep each weight
     * region's f16 dequantization (cuda_f16keep.cu): the regions, their
     * bytes, and whether one was refused (no other is tried) */
    bool            f16keep;
    struct cuda_kept *kept;
    size_t          kept_bytes;
    bool            kept_full;
    bool            mv_pf;         /* matvec weights prefetched before the PDL wait (Q36_CUDA_MVPF, on) */
    bool            mv_sx;         /* expert matvecs read x from shared memory (Q36_CUDA_MVSX) */
    bool            mv_yf;         /* matvec row groups dispatched fastest (Q36_CUDA_MVYF, on) */
    bool            gemm16;        /* fast mode's f16 products (cuda_gemm.cu) */
    bool            tf32;          /* fast mode's products of F32 weights on TF32 tensor cores
                                    * (cuda_matmul.cu: gemm; Q36_CUDA_TF32, on unless "0") */
    int             moegemm;       /* Q36_CUDA_MOEGEMM at reserve: 0 or an MG_MODE_* (cuda_moe.h) */
    int             moe_per_expert; /* Q36_CUDA_MOEROWS, -1 when unset: cuda_moe.h's
                                     * cuda_moe_rows_for, through cuda_moe_rows */
    uint64_t        l2_bytes;      /* the device's L2 (cuda_moe_rows) */
    int             moe_bn;        /* Q36_CUDA_MOEBN: cuda_moe_pre.cu's outputs a block */
    bool            moe_mma;       /* the f16 slabs' products through mma.sync (cuda_moe_mma.cu;
                                    * Q36_CUDA_MOEMMA, on unless "0") */
    int             moe_bk;        /* their columns a stage: 64, or Q36_CUDA_MOEBK=32 */
    bool            moe_wg;        /* ... through Hopper's warpgroup products instead
                                    * (cuda_moe_wg.cu; Q36_CUDA_MOEWG, on unless "0") */
    bool            moe_wq;        /* ... and Q4_K experts read in their blocks, no f16 copy,
                                    * when none is kept (cuda_moe_wq.cu; Q36_CUDA_MOEWQ, on
                                    * unless "0") */
    bool            moe_wq_first;  /* ... even where one could be (Q36_CUDA_MOEWQ=1) */
    bool            moe_wg_pipe;   /* cuda_moe_wg.cu's stages overlapped (Q36_CUDA_MOEWGPIPE=1,
                                    * off by default: not yet run on a GPU) */
    int             cc_major;      /* the device's compute capability, major */
    bool            fattn;         /* fast mode's tiled attention (cuda_fattn.h) */
    bool            fattn_tc;      /* its f16 caches on tensor cores (cuda_fattn_tc.cu) */
    bool            fattn_mma;     /* those through mma.sync, outputs in registers (cuda_fattn_mma.cu) */
    bool            fattn_wg;      /* head dim 256 through wgmma instead (cuda_fattn_wg.cu) */
    int32_t        *moe;           /* the grouped expert products' routing scratch */
    size_t          moe_ints;
    __half         *moeh;          /* their f16 rows and weight slabs (cuda_moe_pre.cu) */
    size_t          moeh_halves;
    float          *chunk;         /* the chunked delta rule's scratch (cuda_chunk.cu) */
    size_t          chunk_floats;
    int             n_sm;
    int             smem_optin;    /* shared memory a block may opt in to, bytes */
    char            dev_name[160];
    cuda_prof      *prof;          /* the per-op profile (cuda_prof.cu), made when first on */
    bool            prof_on;
};

static inline cuda_ctx *cuda_ctx_of(be_ctx *be) { return (cuda_ctx *)be; }

/* cuda_moe.h's cuda_moe_rows_for for the expert weight w (E experts of
 * ne1 rows) */
static inline int cuda_moe_rows(const cuda_ctx *c, const be_weight *w)
{
    return cuda_moe_rows_for(c->moe_per_expert, w->row_bytes * w->t->ne[1] * w->t->ne[2],
                             c->l2_bytes);
}

/* The environment variable `name` is `value` (the backend's switches). */
static inline bool cuda_env_is(const char *name, const char *value)
{
    const char *s = getenv(name);
    return s && !strcmp(s, value);
}
/* A switch that is on unless its variable is "0" (cuda.cu, "Environment") */
static inline bool cuda_env_on(const char *name) { return !cuda_env_is(name, "0"); }
/* A prompt path of fast mode: on for a shape in fast mode unless its
 * variable is "0" (cuda.cu, "Modes"). */
static inline bool cuda_fast_path(const be_shape *s, const char *name)
{
    return s->fast && cuda_env_on(name);
}

/* Batch-invariant exact mode for a context reserved for `s` (cuda.h: inv) */
static inline bool cuda_inv_enabled(const be_shape *s)
{
    return !s->fast && cuda_env_on("Q36_CUDA_EXACTINV");
}

/* Records a failing CUDA runtime call; returns true when `e` is success. */
bool cuda_ok(be_ctx *be, cudaError_t e, const char *call, const char *file, int line);
bool cublas_ok(be_ctx *be, cublasStatus_t s, const char *call, const char *file, int line);
#define CUDA_OK(be, call) cuda_ok((be), (call), #call, __FILE__, __LINE__)
#define CUBLAS_OK(be, call) cublas_ok((be), (call), #call, __FILE__, __LINE__)
/* After a kernel launch: counts it (be_stats) and records a launch error. */
bool cuda_launched(be_ctx *be, const char *what, const char *file, int line);
#define CUDA_LAUNCHED(be, what) cuda_launched((be), (what), __FILE__, __LINE__)
void cuda_prof_mark(cuda_ctx *c, const char *what);
/* Q36_CUDA_LOOSE=1, a diagnostic (results and, nearly, times right): every
 * launch and copy queued outside a recorded pass's graph (what
 * be_stats counts as launches) is counted by its label, process-wide, and
 * the table goes to stderr at exit: which ops a step still runs one by
 * one (cuda_prof.cu). */
extern bool cuda_loose;
void cuda_loose_count(const char *what);
/* Counts a launch or copy `what` queued on the stream (and profiles it). */
static inline void cuda_count_as(cuda_ctx *c, const char *what)
{
    if (c->gmode != GM_CAPTURE) {
        c->stats.launches++;
        if (cuda_loose)
            cuda_loose_count(what);
    }
    if (c->prof_on)
        cuda_prof_mark(c, what);
}

/* The grid-stride 1-D launch size for n items. */
static inline unsigned cuda_blocks(int64_t n, int threads)
{
    int64_t b = (n + threads - 1) / threads;
    return (unsigned)(b < 1 ? 1 : b > 65535 * 8 ? 65535 * 8 : b);
}

/* Programmatic dependent launch (Hopper and later; Q36_CUDA_PDL, on unless
 * "0"): every kernel is launched through cuda_launch, which lets the next
 * kernel in the stream be scheduled while this one finishes, and every
 * kernel opens with cuda_pdl_enter: it waits until the kernel before it has
 * finished and its writes are visible (griddepcontrol.wait), then lets the
 * one after it be scheduled. The wait comes before any read, write or early
 * return (only the weights, which no kernel writes, may be read before it:
 * cuda_matmul.cu, mv_prefetch), so a kernel never sees its predecessor's
 * work half done, and a grid's completion implies its predecessor's; without
 * the launch attribute the wait returns at once. What it saves is the gap
 * between dependent kernels, most of a small decode kernel's cost. The
 * switch is process-wide: the last context made sets it. */
extern bool cuda_pdl;
__device__ __forceinline__ void cuda_pdl_enter(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
/* The run of batch row r in a batch's runs tensor (slot, first row, rows,
 * first position), or slot -1 when no run holds it. */
__device__ __forceinline__ int4 run_of(const int32_t *runs, int n_seq, int64_t r)
{
    for (int s = 0; s < n_seq; s++) {
        const int4 q = make_int4(runs[4 * s], runs[4 * s + 1], runs[4 * s + 2], runs[4 * s + 3]);
        if (r >= q.y && r < q.y + q.z)
            return q;
    }
    return make_int4(-1, 0, 0, 0);
}

/* 16 bytes global -> shared, asynchronous (cp.async, sm_80 and later; a
 * plain copy before): zeros when !full (src unread). cp_commit closes this
 * thread's group of copies; cp_wait<N> waits until at most N of its groups
 * are still in flight (the copies of other threads need a barrier too). */
__device__ __forceinline__ void cp16(void *dst, const void *src, bool full)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                 "r"(full ? 16 : 0));
#else
    *(uint4 *)dst = full ? *(const uint4 *)src : make_uint4(0, 0, 0, 0);
#endif
}

__device__ __forceinline__ void cp_commit(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

/* until at most N of this thread's committed groups are still in flight */
template <int N> __device__ __forceinline__ void cp_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

/* The int8 form of a block of 32 values, one a lane of a full warp (the
 * decode products' input rows, cuda_matmul.cu: k_q8x): d = max|v| / 127,
 * q = round(v / d) (0 when the block is all zero); returns this lane's q,
 * and in *ds (every lane) the block's pair (d, d * sum of q) */
__device__ __forceinline__ int cuda_q8_lane(float v, float2 *ds)
{
    float amax = fabsf(v);
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float d = amax / 127.0f;
    const int q = amax > 0.0f ? __float2int_rn(v / d) : 0;
    int s = q;
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    *ds = make_float2(d, d * (float)s);
    return q;
}

/* silu(g) * u as every kernel forms it (k_ew's swiglu, the products'
 * fused input), so fused and unfused paths give the same bits */
__device__ __forceinline__ float cuda_swiglu1(float g, float u)
{
    return g / (1.0f + expf(-g)) * u;
}

/* The kernel fn may take `bytes` of dynamic shared memory (above the
 * default 48 KB: cudaFuncSetAttribute), set once per (kernel, device) and
 * size, not at every launch; a failure lands in be (CUDA_OK) */
bool cuda_smem_optin(be_ctx *be, const void *fn, size_t bytes);

/* Q36_CUDA_KNOCK, a diagnostic whose results are wrong: the kernels named
 * in its comma-separated list ("all" for every one) launch one block
 * instead of their grid, so that a timed step shows what those kernels
 * cost beyond their launch and dependency wait (test_backend_cuda
 * --bench-batch, device.sh's batch step). NULL when unset (cuda.cu). */
extern const char *cuda_knock;
bool cuda_knocked(const void *fn);
/* Q36_CUDA_DROP: the same list (cuda_knock) not launched at all, so that a
 * timed step shows what those kernels cost in the graph, launch, wait and
 * work (results wrong; dropped routing leaves earlier or zero ids, which
 * the expert products clamp) */
extern bool cuda_drop;
/* Q36_CUDA_PAD=N, a diagnostic (results right, time wrong): every launch
 * is followed by N empty kernels of one warp on the same terms (PDL), so
 * that a timed step shows what a node of the chain costs by itself. */
extern int cuda_pad;
/* Reads Q36_CUDA_KNOCK, Q36_CUDA_DROP, Q36_CUDA_PAD and Q36_CUDA_LOOSE
 * (cuda_prof.cu) */
void cuda_diag_init(void);
static __global__ void k_pad(void) { cuda_pdl_enter(); }

template <typename T> struct cuda_same { typedef T type; };   /* no deduction through it */
template <typename... KA>
static inline void cuda_launch(void (*k)(KA...), dim3 grid, dim3 block, size_t smem,
                               cudaStream_t st, typename cuda_same<KA>::type... args)
{
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = st;
    cfg.attrs = at;
    cfg.numAttrs = cuda_pdl ? 1 : 0;
    if (cuda_knock && cuda_knocked((const void *)k)) {
        if (cuda_drop)
            return;
        cfg.gridDim = dim3(1, 1, 1);
    }
    void *argv[] = { (void *)&args... };
    (void)cudaLaunchKernelExC(&cfg, (const void *)k, argv);   /* checked by CUDA_LAUNCHED */
    for (int i = 0; i < cuda_pad; i++) {
        cfg.gridDim = dim3(1, 1, 1);
        cfg.blockDim = dim3(32, 1, 1);
        cfg.dynamicSmemBytes = 0;
        (void)cudaLaunchKernelExC(&cfg, (const void *)k_pad, NULL);
    }
}

/* The device Q36_CUDA_DEVICE names (default 0). */
int cuda_device_index(void);

/* Quantized types with device kernels (matvec and dequantization); any
 * other type is dequantized to f32 on the host at bind time. */
bool cuda_type_native(uint32_t type);

/* Floats of scratch each family reserves for batches up to `s`. */
size_t cuda_matmul_scratch(const be_shape *s);
/* The matvec kernels' row limit for a context reserved for s (cuda_ctx.mv_rows) */
int cuda_mv_rows(const be_shape *s);
size_t cuda_attention_scratch(const be_shape *s);

/* ---- cuda_copy.cu: be_copy calls queue small copies, and every other
 * entry of the table launches the queue first (cuda.cu's wrappers), so
 * that the per-head splits of a pass cost one launch, not 2 x heads. */
void cuda_copy_queue(be_ctx *be, const be_tensor *src, be_tensor *dst);
/* the same for raw rows (src may be mapped host memory: up_dev) */
void cuda_copy_queue_rows(be_ctx *be, const char *src, int64_t spitch, char *dst, int64_t dpitch,
                          int64_t width, int64_t rows);
void cuda_copy_flush(be_ctx *be);

/* ---- cuda_graph.cu: recorded passes (be_pass_begin). In a pass whose key
 * has a graph, the ops are skipped (their arguments folded into a
 * fingerprint) and the graph is launched where the recorded part ended;
 * in a pass whose key has none, the ops are captured into a new one. */
void cuda_graph_begin(be_ctx *be, uint64_t key, int64_t n_rows);
/* An op of the pass: folds its fingerprint h; true when it must not run
 * (a replay). Called only when c->gmode != GM_EAGER. */
bool cuda_graph_op(be_ctx *be, uint64_t h);
/* Ends the recorded part of a pass (before a read, write or sync): the
 * captured graph is made and launched, or the replayed one launched. */
void cuda_graph_cut(be_ctx *be);
void cuda_graph_pass_end(be_ctx *be);
/* Forgets every graph (tensors freed, scratch moved). */
void cuda_graph_drop(be_ctx *be);

/* ---- cuda_matmul.cu (cuda_matmul_switches: its process-wide switches,
 * Q36_CUDA_MVF32, read when a context is made) */
void cuda_matmul_switches(void);

/* The kept int8 rows (cuda_ctx.q8) and f16 rows (h16): forgotten;
 * forgotten when t overlaps their rows */
void cuda_q8_drop(cuda_ctx *c);
/* While a pass is captured: the memory of a tensor its op takes, one the
 * graph may point at (fp1's tensors in cuda.cu). cuda_graph_points_at:
 * whether a held graph may point into [lo, hi). */
void cuda_graph_span(const be_tensor *t);
bool cuda_graph_points_at(cuda_ctx *c, uintptr_t lo, uintptr_t hi);
void cuda_q8_written(cuda_ctx *c, const be_tensor *t);
/* Where R int8 rows of K and their block scales go in the scratch; false
 * when the int8 products are off or the rows do not fit */
bool cuda_q8_layout(cuda_ctx *c, int64_t R, int64_t K, int8_t **qx, float2 **dx);
/* The int8 rows just written for x (R rows, K wide) are kept */
void cuda_q8_kept(cuda_ctx *c, const be_tensor *x);

void cuda_get_rows(be_ctx *be, const be_weight *w, const be_tensor *ids, be_tensor *out);
void cuda_matmul(be_ctx *be, const be_weight *w, int64_t slab, const be_tensor *x, be_tensor *y);
void cuda_matmul_glu(be_ctx *be, const be_weight *w, be_tensor *g, const be_tensor *u, be_tensor *y);
/* k_q8x's launch: x's rows (with u, silu(x) * u, also stored over x) as
 * int8 rows at qx (x->cols bytes each) with their blocks' (scale, sum)
 * pairs at dx (x->cols / 32 each), as the decode products round them;
 * false when the launch failed (the error is in be) */
bool cuda_q8x(be_ctx *be, const be_tensor *x, const be_tensor *u, int8_t *qx, float2 *dx,
              const char *what);
void cuda_matmul_id_swiglu(be_ctx *be, const be_weight *wg, const be_weight *wu,
                           const be_tensor *x, const be_tensor *sel, be_tensor *tmp, be_tensor *y);
void cuda_matmul_n(be_ctx *be, int n, const be_weight *const *w, const be_tensor *x,
                   be_tensor *const *y);
void cuda_matmul_id(be_ctx *be, const be_weight *w, const be_tensor *x, const be_tensor *sel,
                    be_tensor *y);

/* ---- cuda_ops.cu */
void cuda_rms_norm(be_ctx *be, const be_tensor *x, const be_weight *w, float eps, int64_t group,
                   be_tensor *y);
void cuda_add_rms_norm(be_ctx *be, const be_tensor *o, be_tensor *x, const be_weight *w,
                       float eps, int64_t group, be_tensor *y);
void cuda_l2_norm(be_ctx *be, const be_tensor *x, float eps, int64_t group, be_tensor *y);
void cuda_rms_norm_gate(be_ctx *be, const be_tensor *x, const be_weight *w, float eps,
                        int64_t group, const be_tensor *z, be_tensor *y);
void cuda_add(be_ctx *be, const be_tensor *a, const be_tensor *b, be_tensor *y);
void cuda_mul(be_ctx *be, const be_tensor *a, const be_tensor *b, be_tensor *y);
void cuda_mul_col(be_ctx *be, const be_tensor *a, const be_tensor *s, be_tensor *y);
void cuda_silu(be_ctx *be, const be_tensor *x, be_tensor *y);
void cuda_sigmoid(be_ctx *be, const be_tensor *x, be_tensor *y);
void cuda_swiglu(be_ctx *be, const be_tensor *g, const be_tensor *u, be_tensor *y);
void cuda_deltanet_gates(be_ctx *be, const be_tensor *alpha, const be_weight *dt_bias,
                         const be_weight *a, const be_tensor *b, be_tensor *g, be_tensor *beta);
void cuda_rope(be_ctx *be, be_tensor *x, int64_t head_dim, int64_t n_rot, const int32_t sections[4],
               float base, const be_tensor *pos);
void cuda_attn_prologue(be_ctx *be, const be_tensor *qg, be_tensor *q, be_tensor *gate,
                        be_tensor *k, const be_weight *wq, const be_weight *wk, float eps,
                        int64_t hd, int64_t n_rot, const int32_t sections[4], float base,
                        const be_tensor *pos);
void cuda_moe_route(be_ctx *be, const be_tensor *logits, int64_t k, be_tensor *sel, be_tensor *w);
void cuda_argmax(be_ctx *be, const be_tensor *x, be_tensor *ids);
void cuda_topk(be_ctx *be, const be_tensor *x, int64_t k, be_tensor *ids, be_tensor *vals);
void cuda_moe_combine(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k,
                      be_tensor *out);
void cuda_moe_combine_shared(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k,
                             be_tensor *g, be_tensor *s, be_tensor *out);
void cuda_moe_combine_norm(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k,
                           be_tensor *g, be_tensor *s, be_tensor *o, be_tensor *x,
                           const be_weight *wn, float eps, int64_t group, be_tensor *h);

/* ---- cuda_moe_down.cu */
void cuda_moe_down_shared(be_ctx *be, const be_weight *wd, const be_tensor *x,
                          const be_tensor *sel, const be_tensor *w, const be_weight *wds,
                          be_tensor *g, const be_tensor *u, be_tensor *sg, be_tensor *ey,
                          be_tensor *s, be_tensor *out);

/* ---- cuda_attn_q8.cu: q8_0 K/V caches (be_hadamard; be_kv_store and
 * be_attention's splits for them, cuda_seq.cu's entries call these) */
void cuda_hadamard(be_ctx *be, be_tensor *x, int64_t n);
void cuda_kv_store_q8(be_ctx *be, be_tensor *kc, be_tensor *vc, const be_tensor *k,
                      const be_tensor *v, const be_batch *b);
/* A prompt batch's attention over q8_0 caches in fast mode through the
 * tiled kernels (cuda_fattn): each run's K/V rows [0, pos0+n) converted to
 * f16 copies, the runs renumbered onto them. false: not taken (the caller
 * runs the splits) */
bool cuda_fattn_q8(be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc,
                   const be_batch *b, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                   float scale, be_tensor *out);
/* the partials of rows r0 .. r0+T (as cuda_seq.cu's splits write them;
 * false: not queued, the context's error set) */
bool cuda_attn_q8_split(be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc,
                        const be_batch *b, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                        float scale, int64_t chunk, int64_t nsplit, int64_t r0, int64_t T);

/* ---- cuda_prefetch.cu: be_prefetch, and the join of its side stream
 * (cuda_graph_cut calls it first) */
void cuda_prefetch(be_ctx *be, int n, const be_weight *const *w, const be_tensor *sel);
void cuda_prefetch_join(be_ctx *be);
/* ---- cuda_side.cu: be_side_* (cuda_side_wanted: what be_side_begin
 * would answer now); cuda_side_close ends and joins a side left open
 * (before a pass's cut, and when the context is freed) */
bool cuda_side_wanted(const cuda_ctx *c);
bool cuda_side(be_ctx *be, int step);
void cuda_side_close(be_ctx *be);
bool cuda_side_reserve(be_ctx *be, const be_shape *shape);
/* cuda.cu: a second stream and the events of its fork from and its join
 * to the context's (be_prefetch's, a side's); false when one cannot be
 * made (what was made is freed); _free destroys those made, NULLs all */
bool cuda_stream_pair_new(cudaStream_t *s, cudaEvent_t *fork, cudaEvent_t *join);
void cuda_stream_pair_free(cudaStream_t *s, cudaEvent_t *fork, cudaEvent_t *join);
size_t cuda_side_scratch_bytes(const be_shape *shape);

/* ---- cuda_seq.cu */
void cuda_kv_store(be_ctx *be, be_tensor *kc, be_tensor *vc, const be_tensor *k,
                   const be_tensor *v, const be_batch *b);
void cuda_attention(be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc,
                    const be_batch *b, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                    float scale, be_tensor *out);
void cuda_ssm_conv(be_ctx *be, const be_tensor *x, be_tensor *tails, const be_weight *w,
                   const be_batch *b, be_tensor *y);
void cuda_ssm_conv_silu(be_ctx *be, const be_tensor *x, be_tensor *tails, const be_weight *w,
                        const be_batch *b, be_tensor *y);
void cuda_deltanet(be_ctx *be, const be_tensor *qkv, const be_tensor *g, const be_tensor *beta,
                   be_tensor *S, int64_t n_k_heads, int64_t n_v_heads, int64_t dk,
                   const be_batch *b, be_tensor *out);
/* be_ssm_conv_silu_keep, be_deltanet_keep: k_conv and k_deltanet write the
 * tail and state after each row of the one run but its last (keep NULL:
 * the plain ops) */
void cuda_ssm_conv_silu_keep(be_ctx *be, const be_tensor *x, be_tensor *tails, const be_weight *w,
                             const be_batch *b, be_tensor *y, be_tensor *keep);
void cuda_deltanet_keep(be_ctx *be, const be_tensor *qkv, const be_tensor *g,
                        const be_tensor *beta, be_tensor *S, be_tensor *keep, int64_t n_k_heads,
                        int64_t n_v_heads, int64_t dk, const be_batch *b, be_tensor *out);
void cuda_deltanet_gated(be_ctx *be, be_tensor *qkv, const be_tensor *alpha,
                         const be_tensor *b_in, const be_weight *dt_bias, const be_weight *a,
                         float eps, be_tensor *g, be_tensor *beta, be_tensor *S,
                         int64_t n_k_heads, int64_t n_v_heads, int64_t dk, const be_batch *b,
                         be_tensor *out);
/* be_deltanet_gated_keep: k_deltanet from raw gates writing the kept rows
 * (with Q36_CUDA_FDN; else the gates, the norms and cuda_deltanet_keep) */
void cuda_deltanet_gated_keep(be_ctx *be, be_tensor *qkv, const be_tensor *alpha,
                              const be_tensor *b_in, const be_weight *dt_bias, const be_weight *a,
                              float eps, be_tensor *g, be_tensor *beta, be_tensor *S,
                              be_tensor *keep, int64_t n_k_heads, int64_t n_v_heads, int64_t dk,
                              const be_batch *b, be_tensor *out);

/* ---- cuda_gemm.cu: on for a shape in fast mode unless Q36_CUDA_GEMM16 is
 * "0"; y = x W^T through f16 tiles on tensor cores, or false when not
 * taken (F32 weights, no room) */
bool cuda_gemm16_enabled(const be_shape *s);
bool cuda_gemm16(be_ctx *be, uint32_t type, const uint8_t *W, uint64_t rb, int64_t K, int64_t N,
                 const be_tensor *x, be_tensor *y);
/* The kept f16 rows (cuda_ctx.h16): where an op that forms R rows of K
 * (more than the matvec rows, in fast mode with f16 products and
 * Q36_CUDA_H16KEEP on) may write their f16 rows for the products that
 * follow, with room left for the weight slabs, else NULL; that x's rows
 * are now the kept ones (whatever else the scratch held is gone); whether
 * the kept rows are those of x (R rows of K, pitch ld) */
__half *cuda_h16_room(cuda_ctx *c, int64_t R, int64_t K);
void cuda_h16_kept(cuda_ctx *c, const be_tensor *x);
bool cuda_h16_is(const cuda_ctx *c, const void *x, int64_t R, int64_t ld, int64_t K);
/* be_matmul_glu's SwiGLU of prompt rows with their f16 rows kept (h16)
 * for its product on a weight of `type`; false: not taken */
bool cuda_swiglu_h16(be_ctx *be, uint32_t type, be_tensor *g, const be_tensor *u);

/* ---- cuda_moe.cu: grouped expert products for prompt batches (when switched
 * on); false when not taken (too few rows, no scratch): the caller's
 * matrix-vector path runs */
size_t cuda_moe_scratch_bytes(const be_shape *s);
int  cuda_moe_reserve(be_ctx *be, const be_shape *s, q36_err *err);
/* be_matmul_id_swiglu's grouped form: the gate and up products and their
 * swiglu in one kernel (cuda_moe_mma.cu) when Q36_CUDA_MOEMMA is on, the
 * batch takes the f16 slabs and both weights have kept f16 copies; false
 * when not taken (nothing queued) */
bool cuda_moe_gemm_glu(be_ctx *be, const be_weight *wg, const be_weight *wu, const be_tensor *x,
                       const be_tensor *sel, be_tensor *y);
bool cuda_moe_gemm(be_ctx *be, const be_weight *w, const be_tensor *x, const be_tensor *sel,
                   be_tensor *y);

/* ---- cuda_fattn.cu: tiled attention for prompt batches (when switched on);
 * false when not taken (a head dim other than 64, 128, 256). Its kernels'
 * arguments (the caches' rows: f32, or f16 for f16 caches): */
typedef struct fa_args {
    const float *q;
    int64_t ldq;
    const void *kc, *vc;
    int64_t ldk, ldv;
    const int32_t *runs;     /* per run: slot, first batch row, rows, first position */
    int64_t kv_rows, group;
    float scale;
    float *out;
    int64_t ldo;
} fa_args;
bool cuda_fattn(be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc,
                const be_batch *b, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                float scale, be_tensor *out);

/* ---- cuda_fattn_tc.cu: the same on tensor cores, f16 caches (kv_f16; max_rows:
 * the longest run's rows); false when not taken (f32 caches, rows not
 * 16-byte aligned, shared memory too small) */
bool cuda_fattn_tc(be_ctx *be, const fa_args *a, bool kv_f16, int64_t max_rows, int64_t n_head,
                   int n_seq, int64_t head_dim);
/* ---- cuda_fattn_mma.cu: the same with the outputs in registers (mma.sync),
 * called by cuda_fattn_tc once its checks pass, when fattn_mma; false when
 * not taken (head dim, shared memory) */
bool cuda_fattn_mma(be_ctx *be, const fa_args *a, int64_t max_rows, int64_t n_head, int n_seq,
                    int64_t head_dim);
/* ---- cuda_fattn_wg.cu: the same on warpgroup products (Hopper, head dim
 * 256; the default there), called by cuda_fattn_tc before cuda_fattn_mma when fattn_wg; false
 * when not taken (head dim, compute capability, shared memory) */
bool cuda_fattn_wg(be_ctx *be, const fa_args *a, int64_t max_rows, int64_t n_head, int n_seq,
                   int64_t head_dim);

/* ---- cuda_f16keep.cu: the kept f16 copy of a weight region (rows x K
 * halves, deq8's values rounded to nearest, row n of the region at n K),
 * made on its first use when switched on and the device has room; NULL
 * otherwise (the caller dequantizes into its scratch). */
const __half *cuda_f16_kept(be_ctx *be, uint32_t type, const uint8_t *W, uint64_t rb, int64_t K,
                            int64_t rows);
void cuda_f16_kept_free(cuda_ctx *c);

/* ---- cuda_chunk.cu: the chunked delta rule (fast mode's prompt runs, when
 * switched on) and its scratch, reserved beside the others */
size_t cuda_chunk_scratch(const be_shape *s);
int  cuda_chunk_reserve(be_ctx *be, const be_shape *s, q36_err *err);
void cuda_deltanet_chunk(be_ctx *be, const be_tensor *qkv, const be_tensor *g,
                         const be_tensor *beta, be_tensor *S, int64_t n_k_heads, int64_t n_v_heads,
                         int64_t dk, const be_batch *b, be_tensor *out);

/* ---- cuda_prof.cu: the per-op profile (be_profile_*) */
void cuda_prof_enable(be_ctx *be, int on);
void cuda_prof_layer(be_ctx *be, enum be_layer_kind kind);
void cuda_prof_reset(be_ctx *be);
int  cuda_prof_ops(const be_ctx *be, be_prof_row *rows, int cap);
void cuda_prof_layers(const be_ctx *be, be_prof_row rows[BE_LAYER_N]);
void cuda_prof_free(cuda_ctx *c);

#endif
