/* cuda.cu: the CUDA backend as a whole: its context (one device, one
 * stream, one cuBLAS handle), the ops table backend.c dispatches through,
 * tensors in device memory, weights uploaded once in their GGUF block
 * formats, and the scratch reservation. The ops are in cuda_matmul.cu
 * (with cuda_gemm.cu and cuda_moe.cu; cuda_deq.h dequantizes), cuda_ops.cu,
 * cuda_seq.cu (with cuda_fattn.cu and cuda_chunk.cu), one op family each.
 *
 * Numerics. Matmuls multiply the dequantized weight by the f32 activation
 * row (no activation quantization, unlike the CPU's ggml recipe), sums in
 * f32; norms sum squares in double as the CPU does; softmaxes use expf.
 * Results match the CPU backend within float tolerance, not bit for bit
 * (tests/gpu/test_backend_cuda.c derives the bounds). Fast mode's prompt
 * paths round to f16 (Modes, below).
 *
 * Weights. Q4_K, Q5_K, Q6_K, Q8_0, F16, BF16 and F32 are uploaded as they
 * are in the file and read by the kernels in that form; every other type
 * (the slower, documented path) is dequantized to f32 on the host at bind
 * time by the quant module and uploaded as f32 (4 bytes a weight). A tied
 * head binds the same GGUF tensor twice: it is uploaded once (a weight's
 * `impl` holds the host address it came from, the key with the tensor).
 *
 * Modes. Exact mode (the default) keeps f32 products and the token-by-token
 * delta rule. Fast mode (be_shape.fast, `--fast`) switches prompt batches
 * to: the chunked delta rule (cuda_chunk.h), f16 tensor-core weight
 * products (cuda_gemm.cu), grouped expert products on f16 tensor cores
 * (cuda_moe.h) and tiles of query rows for attention (cuda_fattn.h).
 *
 * Environment, read when a context is made (the mode's switches when it
 * is reserved); every switch is on unless its variable is "0":
 * Q36_CUDA_DEVICE (an index, default 0) picks the device;
 * Q36_CUDA_GRAPHS records each decode step's ops once per shape and
 * replays them as one CUDA graph launch (cuda_graph.cu), with the small
 * uploads of a pass queued through pinned staging without a wait;
 * Q36_CUDA_FASTMV reads Q4_K weights 16 bytes a lane in the decode
 * matvecs (cuda_matmul.cu); Q36_CUDA_FUSED runs the contract's fused
 * entries (add + RMS norm, the DeltaNet gated norm, conv + SiLU, MoE
 * combine + shared expert) as one kernel each (cuda_ops.cu, cuda_seq.cu).
 * Q36_CUDA_PDL lets each kernel be scheduled while the one before it ends
 * (programmatic dependent launch, cuda.h: cuda_launch; Hopper and later).
 * Q36_CUDA_TPOOL takes tensors from a stream-ordered pool ("tensors",
 * below); Q36_CUDA_GRAPHCAP=N holds at most N recorded passes (cuda.h,
 * CUDA_GRAPHS_MAX) and Q36_CUDA_FREEDROP=1 drops them all at every free.
 * Q36_CUDA_FSWIGLU, Q36_CUDA_FDN and Q36_CUDA_FATTNPRO turn one of the
 * later fused entries off each, and Q36_CUDA_FGLU8 be_matmul_glu's
 * SwiGLU with its int8 rows (cuda.h). Q36_CUDA_NORMREG (on unless "0")
 * runs the norms with every load issued first (cuda_ops.cu: k_norm_reg),
 * and those of 64 or more groups of 64, 128 or 256 a warp a group
 * (k_norm_warp).
 * Q36_CUDA_MV8 (fast mode
 * only; on unless "0") runs Q4_K and Q6_K decode products on int8
 * activations (cuda_matmul.cu, k_matvec8). Q36_CUDA_EXACTINV (exact mode
 * only; on unless "0") makes exact mode batch-invariant (cuda.h: inv).
 * Q36_CUDA_ATTNGQA splits decode attention by K/V head instead of query
 * head, each block serving the query heads that share the K/V rows it
 * reads (cuda_seq.cu);
 * Q36_CUDA_MVMIXED lets decode projections of
 * different weight types share one launch (cuda_matmul.cu,
 * k_matvec<MV_ANY>).
 * In fast mode only: Q36_CUDA_CHUNKED (its state kernel on tensor cores in
 * TF32 unless Q36_CUDA_CHUNKTC=0, and with it, unless Q36_CUDA_CHUNKPREP=0,
 * the products of its prep kernel, as mma.sync steps unless
 * Q36_CUDA_CHUNKPREP=1 (WMMA), and unless Q36_CUDA_CHUNKSPLIT=0 its
 * states and outputs in two kernels, cuda_chunk.cu, the state kernel's
 * products as mma.sync steps on 16 value columns a block unless
 * Q36_CUDA_CHUNKBV=0 (WMMA, 16) or =32 (32 columns, cuda_chunk_wide.cu),
 * the output kernel's unless Q36_CUDA_CHUNKOUTM=0,
 * its grid reordered by Q36_CUDA_CHUNKOUTX=1: off, not yet run on a GPU),
 * Q36_CUDA_GEMM16,
 * Q36_CUDA_TF32 (prompt products of F32 weights, the routers and small
 * gates, on TF32 tensor cores: cuda_matmul.cu, gemm), Q36_CUDA_FATTN
 * (with Q36_CUDA_FATTNTC: f16 caches on tensor cores, in registers through
 * mma.sync, cuda_fattn_mma.cu, or with Q36_CUDA_FATTNMMA=0 through WMMA and
 * shared memory, cuda_fattn_tc.cu; head dim 256 on Hopper through
 * warpgroup products, cuda_fattn_wg.cu, unless Q36_CUDA_FATTNWG=0), and
 * Q36_CUDA_MOEGEMM (cuda_moe.h: 3, f16 tensor cores on weights
 * dequantized ahead, through mma.sync in tiles of 128 rows, stages of 64
 * columns, gate and up fused, cuda_moe_mma.cu, unless Q36_CUDA_MOEMMA=0
 * (WMMA, cuda_moe_pre.cu; Q36_CUDA_MOEBK=32: stages of 32 columns), on
 * Hopper through warpgroup products unless Q36_CUDA_MOEWG=0 (cuda_moe_wg.cu),
 * Q4_K experts there read in their blocks where they have no kept f16
 * copy (Q36_CUDA_F16KEEP=0, or no room for one), unless Q36_CUDA_MOEWQ=0,
 * and always with Q36_CUDA_MOEWQ=1 (cuda_moe_wq.cu); Q36_CUDA_MOEWGPIPE=1
 * (off by default: no faster, session 39) overlaps cuda_moe_wg.cu's stages;
 * 2, dequantized inside the product; unset, 3 for
 * large batches else 2; 1, f32 tiles; 0, the decode path's products).
 * tests/gpu/run.sh checks each either way.
 * Numbers, in fast mode: Q36_CUDA_MVROWS (batches of up to that many rows
 * on the matvec kernels and graphs, default 32: cuda.h, mv_rows),
 * Q36_CUDA_MOEROWS (expert batches grouped from that many rows an expert
 * on average; unset: 2, or 8 for expert weights within an eighth of L2:
 * cuda_moe.h). Q36_CUDA_Q8KEEP=1 (off by default)
 * keeps the int8 rows a norm writes (cuda.h, q8); Q36_CUDA_H16KEEP=0 rounds
 * a prompt's rows to f16 again for each f16 product of them (cuda.h, h16)
 * and Q36_CUDA_ROUTEKEEP=0 routes an expert product's rows again for each
 * product of the same selection (cuda.h, routed);
 * Q36_CUDA_MVNB=0 gives
 * batches' Q4_K products one output row a warp again (cuda.h, mv_nb);
 * Q36_CUDA_MVQ80=0 their Q8_0 products the f32 rows (cuda.h, mv_q80);
 * Q36_CUDA_MMQ=0 their Q4_K and Q6_K products the dp4a kernels instead of
 * the tensor cores, Q36_CUDA_MMQ=N the tensor cores from N rows (cuda.h,
 * mmq_min); Q36_CUDA_MMQGRP=N their expert products grouped by expert on
 * the tensor cores from N tokens (default 32; 0 off: cuda.h, mmq_grp_min),
 * Q36_CUDA_MMQGRPA=1 over the active experts only (cuda.h, mmq_grp_act);
 * Q36_CUDA_MVGRP=1 (off by default) groups the expert rows of decode-sized
 * batches by expert (cuda_matmul.cu, k_matvec8_grp); Q36_CUDA_MVPF (on
 * unless "0") has the matvec kernels prefetch their weight rows into L2
 * before the PDL wait (cuda_matmul.cu, mv_prefetch); Q36_CUDA_MVSX (on
 * unless "0") has each block of the Q4_K expert matvec copy its row of x
 * to shared memory once (cuda_matmul.cu, sx_stage); Q36_CUDA_MVYF (on
 * unless "0") dispatches a matvec's row groups fastest (mv_block).
 * Q36_CUDA_KNOCK (a timing diagnostic, wrong results) launches the listed
 * kernels with one block (cuda.h, cuda_knock), Q36_CUDA_DROP not at all
 * (cuda_drop); Q36_CUDA_PAD=N (a timing
 * diagnostic) follows every launch with N empty ones (cuda_pad). */
#include "cuda.h"
#include "cuda_chunk.h"
#include "cuda_moe.h"
#include "cuda_fattn.h"

bool cuda_pdl;      /* cuda.h: cuda_launch */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "../../quant/quant.h"
#include "../../quant/types.h"
#include "../../quant/fp16.h"
}

bool cuda_ok(be_ctx *be, cudaError_t e, const char *call, const char *file, int line)
{
    if (e == cudaSuccess)
        return true;
    be_fail(be, Q36_E_IO, "%s at %s:%d: %s (%s)", call, file, line, cudaGetErrorString(e),
            cudaGetErrorName(e));
    return false;
}

/* (kernel, device) pairs whose shared memory limit is set, and to what;
 * the contexts of a process may live on several threads */
#define SMEM_SET_MAX 64
static struct { const void *fn; int device, bytes; } smem_set[SMEM_SET_MAX];
static int smem_n;
static pthread_mutex_t smem_mu = PTHREAD_MUTEX_INITIALIZER;

bool cuda_smem_optin(be_ctx *be, const void *fn, size_t bytes)
{
    int dev = 0;
    if (!CUDA_OK(be, cudaGetDevice(&dev)))
        return false;
    pthread_mutex_lock(&smem_mu);
    int i = 0;
    while (i < smem_n && (smem_set[i].fn != fn || smem_set[i].device != dev))
        i++;
    bool ok = i < smem_n && (size_t)smem_set[i].bytes >= bytes;
    if (!ok) {
        ok = CUDA_OK(be, cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              (int)bytes));
        if (ok && i == smem_n && smem_n < SMEM_SET_MAX)
            smem_n++;
        if (ok && i < smem_n)
            smem_set[i] = { fn, dev, (int)bytes };
    }
    pthread_mutex_unlock(&smem_mu);
    return ok;
}

bool cuda_launched(be_ctx *be, const char *what, const char *file, int line)
{
    cuda_count_as(cuda_ctx_of(be), what);
    return cuda_ok(be, cudaGetLastError(), what, file, line);
}

bool cublas_ok(be_ctx *be, cublasStatus_t s, const char *call, const char *file, int line)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return true;
    be_fail(be, Q36_E_IO, "%s at %s:%d: cuBLAS status %d", call, file, line, (int)s);
    return false;
}

bool cuda_type_native(uint32_t type)
{
    switch (type) {
    case QT_F32: case QT_F16: case QT_BF16: case QT_Q8_0: case QT_Q4_K: case QT_Q5_K:
    case QT_Q6_K:
        return true;
    default:
        return false;
    }
}

/* ------------------------------------------------------------- lifecycle */

static void tensor_pool_trim(cuda_ctx *c);   /* tensors, below */

static void cuda_free(be_ctx *be)
{
    cuda_ctx *c = cuda_ctx_of(be);
    cudaSetDevice(c->device);
    cuda_side_close(be);                /* a side left open: the context's stream back */
    if (c->gmode == GM_CAPTURE) {       /* a pass left half captured */
        cuda_prefetch_join(be);
        cudaGraph_t g = NULL;
        if (cudaStreamEndCapture(c->stream, &g) == cudaSuccess && g)
            cudaGraphDestroy(g);
    }
    cuda_graph_drop(be);
    cuda_prof_free(c);
    if (c->stream)
        cudaStreamSynchronize(c->stream);
    if (c->pf_stream)
        cudaStreamSynchronize(c->pf_stream);
    if (c->side_stream)
        cudaStreamSynchronize(c->side_stream);
    be_base_free(be);
    tensor_pool_trim(c);
    for (be_weight *w = c->weights, *nx; w; w = nx) {
        nx = w->next;
        cudaFree((void *)w->data);
        free(w);
    }
    cuda_f16_kept_free(c);
    cudaFree(c->deq);
    cudaFree(c->side_deq);
    cudaFree(c->part);
    cudaFree(c->q8kv);
    cudaFree(c->q8runs);
    cudaFree(c->chunk);
    cudaFree(c->moe);
    cudaFree(c->moeh);
    cudaFreeHost(c->stage);
    cudaFreeHost(c->up);
    free(c->span);
    if (c->blas)
        cublasDestroy(c->blas);
    if (c->stream)
        cudaStreamDestroy(c->stream);
    cuda_stream_pair_free(&c->pf_stream, &c->pf_fork, &c->pf_join);
    cuda_stream_pair_free(&c->side_stream, &c->side_fork, &c->side_done);
    free(c);
}

void cuda_stream_pair_free(cudaStream_t *s, cudaEvent_t *fork, cudaEvent_t *join)
{
    if (*s)
        cudaStreamDestroy(*s);
    if (*fork)
        cudaEventDestroy(*fork);
    if (*join)
        cudaEventDestroy(*join);
    *s = NULL;
    *fork = *join = NULL;
}

bool cuda_stream_pair_new(cudaStream_t *s, cudaEvent_t *fork, cudaEvent_t *join)
{
    if (cudaStreamCreateWithFlags(s, cudaStreamNonBlocking) == cudaSuccess &&
        cudaEventCreateWithFlags(fork, cudaEventDisableTiming) == cudaSuccess &&
        cudaEventCreateWithFlags(join, cudaEventDisableTiming) == cudaSuccess)
        return true;
    cudaGetLastError();
    cuda_stream_pair_free(s, fork, join);
    return false;
}

/* Waits for the stream; the upload staging is free again after it. */
static bool stream_wait(be_ctx *be)
{
    cuda_ctx *c = cuda_ctx_of(be);
    if (c->up_q)
        cuda_copy_flush(be);   /* queued uploads read the staging the wait frees */
    const bool ok = CUDA_OK(be, cudaStreamSynchronize(c->stream));
    c->up_off = 0;
    return ok;
}

static void cuda_sync(be_ctx *be)
{
    stream_wait(be);
}

static size_t scratch_floats(const be_shape *s, size_t *deq, size_t *part)
{
    *deq = cuda_matmul_scratch(s);
    *part = cuda_attention_scratch(s);
    return *deq + *part;
}

static uint64_t scratch_bytes(const be_shape *shape, int n_threads)
{
    (void)n_threads;
    size_t d, p;
    return (uint64_t)(scratch_floats(shape, &d, &p) + cuda_chunk_scratch(shape)) * sizeof(float) +
           cuda_moe_scratch_bytes(shape) + cuda_side_scratch_bytes(shape);
}

/* The prompt paths of fast mode (the header's "Environment"): on in fast
 * mode unless their variable is "0", never in exact mode; set at each
 * reserve from the shape's mode. */
static void cuda_mode_switches(cuda_ctx *c, const be_shape *shape)
{
    c->chunked = cuda_chunk_enabled(shape);
    c->chunk_tc = c->chunked && !cuda_env_is("Q36_CUDA_CHUNKTC", "0");
    c->chunk_prep_tc = c->chunk_tc && cuda_env_on("Q36_CUDA_CHUNKPREP");
    c->chunk_prep_pb = c->chunk_tc && cuda_env_is("Q36_CUDA_CHUNKPREP", "2");
    c->chunk_prep_mma = c->chunk_prep_tc && !cuda_env_is("Q36_CUDA_CHUNKPREP", "1");
    c->chunk_split = c->chunk_tc && cuda_env_on("Q36_CUDA_CHUNKSPLIT");
    c->chunk_out_x = cuda_env_is("Q36_CUDA_CHUNKOUTX", "1");
    c->chunk_out_mma = cuda_env_on("Q36_CUDA_CHUNKOUTM");
    c->chunk_bv = cuda_env_is("Q36_CUDA_CHUNKBV", "0")    ? 0
                  : cuda_env_is("Q36_CUDA_CHUNKBV", "32") ? 32 : 16;
    c->gemm16 = cuda_gemm16_enabled(shape);
    c->tf32 = cuda_fast_path(shape, "Q36_CUDA_TF32");
    c->f16keep = cuda_fast_path(shape, "Q36_CUDA_F16KEEP");
    c->moegemm = cuda_moe_mode(shape);
    const char *mr = getenv("Q36_CUDA_MOEROWS");
    c->moe_per_expert = mr && *mr ? (atoi(mr) > 0 ? atoi(mr) : 0) : -1;
    c->moe_bn = cuda_env_is("Q36_CUDA_MOEBN", "256") ? 256 : 128;
    c->moe_mma = cuda_env_on("Q36_CUDA_MOEMMA");
    c->moe_bk = cuda_env_is("Q36_CUDA_MOEBK", "32") ? 32 : 64;
    c->moe_wg = c->moe_mma && cuda_env_on("Q36_CUDA_MOEWG");
    c->moe_wq = c->moe_wg && cuda_env_on("Q36_CUDA_MOEWQ");
    c->moe_wq_first = cuda_env_is("Q36_CUDA_MOEWQ", "1");
    c->moe_wg_pipe = cuda_env_is("Q36_CUDA_MOEWGPIPE", "1");
    c->fattn = cuda_fattn_enabled(shape);
    c->fattn_tc = c->fattn && cuda_env_on("Q36_CUDA_FATTNTC");
    c->fattn_mma = c->fattn_tc && cuda_env_on("Q36_CUDA_FATTNMMA");
    c->fattn_wg = c->fattn_mma && cuda_env_on("Q36_CUDA_FATTNWG");
    /* fast mode's int8 activations for Q4_K and Q6_K decode products */
    c->mv8 = shape->fast && cuda_env_on("Q36_CUDA_MV8");
    c->q8norm = cuda_env_is("Q36_CUDA_Q8KEEP", "1");
    c->q8keep = cuda_env_on("Q36_CUDA_Q8KEEP");     /* 2 unless "0" or "1" */
    c->cmb_norm = cuda_env_is("Q36_CUDA_CMBNORM", "1");
    c->h16keep = cuda_env_on("Q36_CUDA_H16KEEP");
    c->route_keep = cuda_env_on("Q36_CUDA_ROUTEKEEP");
    c->mv_rows = cuda_mv_rows(shape);
    c->mv_nb = cuda_env_on("Q36_CUDA_MVNB");
    c->mv_q80 = cuda_env_on("Q36_CUDA_MVQ80");
    c->free_drop = cuda_env_is("Q36_CUDA_FREEDROP", "1");
    {
        const char *v = getenv("Q36_CUDA_Q80TC");
        const int n = v && *v ? atoi(v) : 0;   /* off: slower (cuda.h) */
        c->q80tc = c->mv_q80 && c->cc_major >= 8 && n > 0 ? (n < 2 ? 2 : n) : 0;
    }
    {
        const char *v = getenv("Q36_CUDA_MMQ");
        const int n = v && *v ? atoi(v) : 2;
        c->mmq_min = c->cc_major < 8 || n <= 0 ? 0 : n < 2 ? 2 : n;
        const char *g = getenv("Q36_CUDA_MMQGRP");
        const int ng = g && *g ? atoi(g) : 32;
        c->mmq_grp_min = ng <= 0 ? 0 : ng < 2 ? 2 : ng;
        c->mmq_grp_act = cuda_env_is("Q36_CUDA_MMQGRPA", "1");
    }
    c->mv_nb1 = cuda_env_is("Q36_CUDA_MVNB1", "2") ? 2 : cuda_env_is("Q36_CUDA_MVNB1", "4") ? 4 : 0;
    c->mv_grp = shape->fast && cuda_env_is("Q36_CUDA_MVGRP", "1");
    c->mv_pf = cuda_env_on("Q36_CUDA_MVPF");
    c->mv_sx = cuda_env_on("Q36_CUDA_MVSX");
    c->mv_yf = cuda_env_on("Q36_CUDA_MVYF");
    cuda_q8_drop(c);
    c->inv = cuda_inv_enabled(shape);
}

static int cuda_reserve(be_ctx *be, const be_shape *shape, q36_err *err)
{
    cuda_ctx *c = cuda_ctx_of(be);
    if (shape->n_head && (shape->n_head_kv < 1 || shape->n_head % shape->n_head_kv))
        return q36_err_set(err, Q36_E_ARG, "cuda backend: %lld query heads over %lld KV heads",
                           (long long)shape->n_head, (long long)shape->n_head_kv);
    if (shape->head_dim > 512 || shape->ssm_dim > 256)
        return q36_err_set(err, Q36_E_UNSUP, "cuda backend: head dim %lld / DeltaNet dim %lld "
                           "above the kernels' 512 / 256", (long long)shape->head_dim,
                           (long long)shape->ssm_dim);
    cuda_mode_switches(c, shape);
    size_t d, p;
    scratch_floats(shape, &d, &p);
    if (d > c->deq_floats) {
        float *n = NULL;
        cudaError_t e = cudaMalloc(&n, d * sizeof(float));
        if (e != cudaSuccess)
            goto nomem;
        cudaFree(c->deq);
        c->deq = n;
        c->deq_floats = d;
    }
    if (p > c->part_floats) {
        float *n = NULL;
        cudaError_t e = cudaMalloc(&n, p * sizeof(float));
        if (e != cudaSuccess)
            goto nomem;
        cudaFree(c->part);
        c->part = n;
        c->part_floats = p;
    }
    if (cuda_chunk_reserve(be, shape, err) || cuda_moe_reserve(be, shape, err))
        return Q36_E_NOMEM;
    cuda_side_reserve(be, shape);   /* a hint: without its scratch, no side */
    c->reserved = true;
    return 0;
nomem:
    cudaGetLastError();
    {
        size_t fr = 0, tot = 0;
        cudaMemGetInfo(&fr, &tot);
        return q36_err_set(err, Q36_E_NOMEM, "cuda backend: cannot reserve %.1f MiB of scratch "
                           "(dequantized weight rows %.1f MiB, attention partials %.1f MiB) on "
                           "%s: %.1f MiB free of %.1f MiB", (d + p) * 4.0 / 1048576.0,
                           d * 4.0 / 1048576.0, p * 4.0 / 1048576.0, c->dev_name,
                           fr / 1048576.0, tot / 1048576.0);
    }
}

/* ---------------------------------------------------------------- tensors */

/* Tensors come from a stream-ordered memory pool of the device (one a
 * device for the process, made at the first tensor, keeping what is freed:
 * release threshold "all"), allocated and freed on the context's stream
 * without a wait. The server's prefix cache makes and frees checkpoints,
 * two tensors a layer each, all the time: with cudaMalloc each tensor cost
 * an allocation and a stream wait, and each free a wait for the whole
 * device. Every use of a tensor is on the context's stream (the prefetch
 * stream reads weights only), so stream order is all they need. A context
 * gives its pool's unused memory back when it is freed; an allocation that
 * fails gives it back and tries once more. Without pools (a device or
 * driver without them, or Q36_CUDA_TPOOL=0): cudaMalloc as before. */
#define POOL_DEVS 16
static cudaMemPool_t tpool[POOL_DEVS];
static int tpool_state[POOL_DEVS];          /* 0 not tried, 1 made, -1 none */
static pthread_mutex_t tpool_mu = PTHREAD_MUTEX_INITIALIZER;

static cudaMemPool_t tensor_pool(int dev)
{
    if (dev < 0 || dev >= POOL_DEVS)
        return NULL;
    pthread_mutex_lock(&tpool_mu);
    if (!tpool_state[dev]) {
        int ok = 0;
        cudaDeviceGetAttribute(&ok, cudaDevAttrMemoryPoolsSupported, dev);
        cudaMemPoolProps pr;
        memset(&pr, 0, sizeof pr);
        pr.allocType = cudaMemAllocationTypePinned;
        pr.location.type = cudaMemLocationTypeDevice;
        pr.location.id = dev;
        uint64_t keep = UINT64_MAX;
        tpool_state[dev] = -1;
        if (ok && cuda_env_on("Q36_CUDA_TPOOL") && cudaMemPoolCreate(&tpool[dev], &pr) == cudaSuccess) {
            if (cudaMemPoolSetAttribute(tpool[dev], cudaMemPoolAttrReleaseThreshold, &keep) == cudaSuccess)
                tpool_state[dev] = 1;
            else
                cudaMemPoolDestroy(tpool[dev]);
        }
        cudaGetLastError();
    }
    cudaMemPool_t p = tpool_state[dev] == 1 ? tpool[dev] : NULL;
    pthread_mutex_unlock(&tpool_mu);
    return p;
}

/* the context's pool: tensor_pool's lock taken once a context, not at
 * every tensor (each tensor's allocation and free asks) */
static cudaMemPool_t ctx_pool(cuda_ctx *c)
{
    if (!c->pool_known) {
        c->pool = tensor_pool(c->device);
        c->pool_known = true;
    }
    return c->pool;
}

/* the pool's unused memory back to the device, after the stream's frees */
static void tensor_pool_trim(cuda_ctx *c)
{
    cudaMemPool_t p = ctx_pool(c);
    if (p && c->stream && cudaStreamSynchronize(c->stream) == cudaSuccess)
        cudaMemPoolTrimTo(p, 0);
}

static bool tensor_alloc(cuda_ctx *c, void **d, size_t bytes)
{
    cudaMemPool_t p = ctx_pool(c);
    for (int i = 0; i < 2; i++) {
        if ((p ? cudaMallocFromPoolAsync(d, bytes, p, c->stream) : cudaMalloc(d, bytes)) == cudaSuccess)
            return true;
        cudaGetLastError();
        if (!i)
            tensor_pool_trim(c);
    }
    return false;
}

static void cuda_tensor_free(be_ctx *be, be_tensor *t);

static be_tensor *cuda_tensor_new(be_ctx *be, enum be_type type, int64_t rows, int64_t cols)
{
    be_tensor *t = (be_tensor *)calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->rows = rows;
    t->cols = cols;
    t->ld = cols;
    t->type = type;
    t->f16 = type == BE_F16;
    const size_t bytes = (size_t)rows * be_type_bytes(type, cols);
    if (bytes) {
        cuda_ctx *c = cuda_ctx_of(be);
        if (!tensor_alloc(c, &t->data, bytes)) {
            free(t);
            return NULL;
        }
        /* zero-filled by contract, in the stream's order (without a pool
         * the memory is the device's at once: wait for the zeros) */
        if (!CUDA_OK(be, cudaMemsetAsync(t->data, 0, bytes, c->stream)) ||
            (!ctx_pool(c) && !stream_wait(be))) {
            cuda_tensor_free(be, t);
            return NULL;
        }
    }
    return t;
}

/* A freed tensor's memory goes back at once (to the pool: in the stream's
 * order). A held graph that may point into it is dropped first, since
 * another tensor may take that memory; the others stay (the server's
 * prefix cache frees checkpoints all the time, which no graph touches:
 * dropping every graph at each free cost a recording of each shape
 * again). */
static void cuda_tensor_free(be_ctx *be, be_tensor *t)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const uintptr_t lo = (uintptr_t)t->data;
    const uintptr_t hi = lo + (uintptr_t)t->rows * be_type_bytes(t->type, t->ld);
    /* Q36_CUDA_FREEDROP=1: every free drops them (as before) */
    if (c->n_graphs && (c->free_drop || cuda_graph_points_at(c, lo, hi > lo ? hi : lo + 1)))
        cuda_graph_drop(be);
    if (t->data && ctx_pool(c))
        cudaFreeAsync(t->data, c->stream);
    else
        cudaFree(t->data);
    free(t);
}

/* bytes of one row's elements and the row pitch of a tensor */
static size_t row_bytes(const be_tensor *t) { return be_type_bytes(t->type, t->cols); }
static size_t pitch(const be_tensor *t) { return be_type_bytes(t->type, t->ld); }
static char *row_ptr(const be_tensor *t, int64_t r) { return (char *)t->data + (size_t)r * pitch(t); }

/* Raw rows between host (packed) and device (pitched), waiting. */
static void copy_rows(be_ctx *be, void *dst, size_t dpitch, const void *src, size_t spitch,
                      size_t width, int64_t nrows, cudaMemcpyKind kind)
{
    cuda_ctx *c = cuda_ctx_of(be);
    if (!nrows || !width)
        return;
    cuda_count_as(c, kind == cudaMemcpyDeviceToHost ? "copy / memset: read (waits)"
                                                    : "copy / memset: write (waits)");
    if (CUDA_OK(be, cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, (size_t)nrows, kind,
                                      c->stream)))
        stream_wait(be);
}

/* Device rows to the host through the pinned staging buffer (a pageable
 * destination copies at a fraction of the bus's rate: the logits of every
 * decode step come this way), in pieces of whole rows; rows wider than
 * the buffer go straight. */
#define STAGE_BYTES ((size_t)4 << 20)
static void cuda_save(be_ctx *be, const be_tensor *t, int64_t row0, int64_t nrows, void *dst)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const size_t rb = row_bytes(t);
    if (!c->stage || !rb || rb > STAGE_BYTES) {
        copy_rows(be, dst, rb, row_ptr(t, row0), pitch(t), rb, nrows, cudaMemcpyDeviceToHost);
        return;
    }
    const int64_t per = (int64_t)(STAGE_BYTES / rb);
    for (int64_t r = 0; r < nrows; r += per) {
        const int64_t n = nrows - r < per ? nrows - r : per;
        copy_rows(be, c->stage, rb, row_ptr(t, row0 + r), pitch(t), rb, n, cudaMemcpyDeviceToHost);
        memcpy((char *)dst + (size_t)r * rb, c->stage, (size_t)n * rb);
    }
}

/* Host rows to the device. With graphs on, a small upload (the ids and the
 * batch of a pass) is copied into the pinned staging and queued without a
 * wait: the caller's buffer is free on return, the staging until the
 * stream next waits (stream_wait). Otherwise, and when the staging is
 * full, the copy waits. */
#define UP_BYTES ((size_t)256 << 10)
#define UPQ_BYTES ((size_t)16 << 10)   /* Q36_CUDA_UPQ: k_copies reads these over the bus */
static void cuda_load(be_ctx *be, be_tensor *t, int64_t row0, int64_t nrows, const void *src)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const size_t rb = row_bytes(t), bytes = rb * (size_t)nrows;
    if (c->up && bytes && c->up_off <= UP_BYTES && bytes <= UP_BYTES - c->up_off) {
        const size_t off = c->up_off;
        memcpy(c->up + off, src, bytes);
        c->up_off += (bytes + 255) & ~(size_t)255;
        if (c->up_q && bytes <= UPQ_BYTES) {
            cuda_copy_queue_rows(be, c->up_dev + off, (int64_t)rb, row_ptr(t, row0),
                                 (int64_t)pitch(t), (int64_t)rb, nrows);
            return;
        }
        cuda_copy_flush(be);   /* queued copies first (f_cuda_load leaves them with UPQ) */
        cuda_count_as(c, "copy / memset: upload (staged)");
        CUDA_OK(be, cudaMemcpy2DAsync(row_ptr(t, row0), pitch(t), c->up + off, rb, rb, (size_t)nrows,
                                      cudaMemcpyHostToDevice, c->stream));
        return;
    }
    cuda_copy_flush(be);
    copy_rows(be, row_ptr(t, row0), pitch(t), src, row_bytes(t), row_bytes(t), nrows,
              cudaMemcpyHostToDevice);
}

static void cuda_write(be_ctx *be, be_tensor *t, int64_t row0, int64_t nrows, const void *src)
{
    if (t->type != BE_F16) {
        cuda_load(be, t, row0, nrows, src);
        return;
    }
    /* f16: the floats converted on the host (round to nearest even) */
    const size_t n = (size_t)nrows * (size_t)t->cols;
    uint16_t *h = (uint16_t *)malloc(n * 2 + 1);
    if (!h) {
        be_fail(be, Q36_E_NOMEM, "be_write: out of host memory for %zu f16 values", n);
        return;
    }
    const float *f = (const float *)src;
    for (size_t i = 0; i < n; i++)
        h[i] = quant_f32_to_f16(f[i]);
    cuda_load(be, t, row0, nrows, h);
    free(h);
}

static void cuda_read(be_ctx *be, const be_tensor *t, int64_t row0, int64_t nrows, void *dst)
{
    if (t->type != BE_F16) {
        cuda_save(be, t, row0, nrows, dst);
        return;
    }
    const size_t n = (size_t)nrows * (size_t)t->cols;
    uint16_t *h = (uint16_t *)malloc(n * 2 + 1);
    if (!h) {
        be_fail(be, Q36_E_NOMEM, "be_read: out of host memory for %zu f16 values", n);
        return;
    }
    cuda_save(be, t, row0, nrows, h);
    float *f = (float *)dst;
    for (size_t i = 0; i < n; i++)
        f[i] = quant_f16_to_f32(h[i]);
    free(h);
}

static void cuda_zero(be_ctx *be, be_tensor *t)
{
    if (!t->rows || !t->cols)
        return;
    cuda_count_as(cuda_ctx_of(be), "copy / memset: zero");
    CUDA_OK(be, cudaMemset2DAsync(t->data, pitch(t), 0, row_bytes(t), (size_t)t->rows,
                                  cuda_ctx_of(be)->stream));
}


/* ---------------------------------------------------------------- weights */

static int cuda_weight_bind(be_ctx *be, const gguf_tensor *t, be_weight **out, q36_err *err)
{
    cuda_ctx *c = cuda_ctx_of(be);
    *out = NULL;
    if (!t)
        return 0;
    /* the same tensor of the same mapping (impl keeps the host address) */
    for (be_weight *w = c->weights; w; w = w->next)
        if (w->t == t && w->impl == t->data) {
            *out = w;
            return 0;
        }
    const uint64_t ne0 = t->ne[0], nrows = gguf_tensor_nelements(t) / (ne0 ? ne0 : 1);
    const bool native = cuda_type_native(t->type);
    const uint32_t type = native ? t->type : (uint32_t)QT_F32;
    const uint64_t rb = quant_row_bytes(type, ne0);
    if (!rb)
        return q36_err_set(err, Q36_E_UNSUP, "cuda backend: tensor '%s' of type %s: no row size",
                           t->name, quant_type_name(t->type));
    const uint64_t bytes = rb * nrows;
    be_weight *w = (be_weight *)calloc(1, sizeof *w);
    if (!w)
        return q36_err_set(err, Q36_E_NOMEM, "cuda backend: out of memory");
    void *d = NULL;
    if (cudaMalloc(&d, bytes ? bytes : 1) != cudaSuccess) {
        cudaGetLastError();
        size_t fr = 0, tot = 0;
        cudaMemGetInfo(&fr, &tot);
        free(w);
        return q36_err_set(err, Q36_E_NOMEM, "cuda backend: tensor '%s' (%s, %.1f MiB on the "
                           "device) does not fit: %s has %.1f MiB free of %.1f MiB", t->name,
                           quant_type_name(type), bytes / 1048576.0, c->dev_name, fr / 1048576.0,
                           tot / 1048576.0);
    }
    cudaError_t e = cudaSuccess;
    if (native) {
        e = cudaMemcpy(d, t->data, bytes, cudaMemcpyHostToDevice);
    } else {
        /* the slower path: f32 rows dequantized on the host, a slab at a time */
        const uint64_t srb = quant_row_bytes(t->type, ne0);
        const uint64_t chunk = nrows < 4096 ? nrows : 4096;
        float *buf = (float *)malloc(chunk * rb);
        if (!buf || !srb) {
            free(buf);
            cudaFree(d);
            free(w);
            return q36_err_set(err, Q36_E_UNSUP, "cuda backend: tensor '%s': cannot dequantize "
                               "type %s", t->name, quant_type_name(t->type));
        }
        for (uint64_t r0 = 0; r0 < nrows && e == cudaSuccess; r0 += chunk) {
            const uint64_t n = nrows - r0 < chunk ? nrows - r0 : chunk;
            for (uint64_t r = 0; r < n; r++)
                if (quant_dequant_row(t->type, (const uint8_t *)t->data + (r0 + r) * srb,
                                      buf + r * ne0, (int64_t)ne0)) {
                    free(buf);
                    cudaFree(d);
                    free(w);
                    return q36_err_set(err, Q36_E_UNSUP, "cuda backend: tensor '%s': cannot "
                                       "dequantize type %s", t->name, quant_type_name(t->type));
                }
            e = cudaMemcpy((char *)d + r0 * rb, buf, n * rb, cudaMemcpyHostToDevice);
        }
        free(buf);
    }
    if (e != cudaSuccess) {
        cudaFree(d);
        free(w);
        return q36_err_set(err, Q36_E_IO, "cuda backend: uploading '%s': %s", t->name,
                           cudaGetErrorString(e));
    }
    w->t = t;
    w->type = type;
    w->act_type = (int)QT_F32;
    w->row_bytes = rb;
    w->act_row_bytes = ne0 * 4;
    w->data = d;
    w->impl = (void *)t->data;
    w->next = c->weights;
    c->weights = w;
    *out = w;
    return 0;
}

/* -------------------------------------------------------------- profiling */

/* Not timed yet on this backend: the rows stay empty. */

/* the chunked rule: the chunked kernels when switched on (cuda_chunk.h),
 * else the recurrence (same arguments, same results up to rounding,
 * independent of where chunks start) */
static void cuda_deltanet_chunked(be_ctx *be, const be_tensor *qkv, const be_tensor *g,
                                  const be_tensor *beta, be_tensor *S, int64_t n_k_heads,
                                  int64_t n_v_heads, int64_t dk, const be_batch *b, be_tensor *out)
{
    if (cuda_ctx_of(be)->chunked)
        cuda_deltanet_chunk(be, qkv, g, beta, S, n_k_heads, n_v_heads, dk, b, out);
    else
        cuda_deltanet(be, qkv, g, beta, S, n_k_heads, n_v_heads, dk, b, out);
}

/* Fingerprints of an op's arguments (cuda_graph.cu): what decides the work
 * an op queues: device pointers, shapes, scalars. */
static inline uint64_t fmix(uint64_t h, uint64_t v)
{
    h = (h ^ v) * 0x100000001B3u;
    return h ^ (h >> 29);
}
static inline uint64_t fp1(uint64_t h, be_ctx *) { return h; }
static inline uint64_t fp1(uint64_t h, int64_t v) { return fmix(h, (uint64_t)v); }
static inline uint64_t fp1(uint64_t h, int v) { return fmix(h, (uint64_t)(int64_t)v); }
static inline uint64_t fp1(uint64_t h, float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return fmix(h, u);
}
static inline uint64_t fp1(uint64_t h, const be_tensor *t)
{
    if (!t)
        return fmix(h, 0);
    cuda_graph_span(t);        /* a capture's graph may point at it */
    h = fmix(h, (uint64_t)(uintptr_t)t->data);
    h = fmix(fmix(h, (uint64_t)t->rows), (uint64_t)t->cols);
    return fmix(fmix(h, (uint64_t)t->ld), (uint64_t)t->type);
}
static inline uint64_t fp1(uint64_t h, const be_weight *w)
{
    return fmix(h, w ? (uint64_t)(uintptr_t)w->data : 0);
}
static inline uint64_t fp1(uint64_t h, const be_batch *b)
{
    h = fp1(fp1(h, b->pos), b->runs);
    return fmix(fmix(fmix(h, (uint64_t)b->n_seq), (uint64_t)b->n_rows), (uint64_t)b->kv_rows);
}
static inline uint64_t fp1(uint64_t h, const int32_t *sections)     /* rope's four */
{
    for (int i = 0; i < 4; i++)
        h = fmix(h, (uint64_t)(uint32_t)sections[i]);
    return h;
}
template <typename... A> static inline uint64_t fp_args(A... a)
{
    uint64_t h = 0;
    ((h = fp1(h, a)), ...);
    return h;
}

/* Every tensor an op may write (its non-const tensor arguments) drops the
 * kept int8 rows it overlaps (cuda.h: q8); be_matmul_n's outputs, an
 * array, are checked by cuda_matmul_n itself */
static inline void q8_out(cuda_ctx *c, be_tensor *t) { cuda_q8_written(c, t); }
template <typename T> static inline void q8_out(cuda_ctx *, T) {}
template <typename... A> static inline void q8_outs(be_ctx *be, A... a)
{
    cuda_ctx *c = cuda_ctx_of(be);
    (void)c;                            /* an op of no tensors */
    (q8_out(c, a), ...);
}

/* The table's entries. An op (OP): in a recorded pass its fingerprint is
 * folded and, in a replay, it is skipped; otherwise it launches the queued
 * copies (cuda_copy.cu) and does its work. A read, write or sync (CUT)
 * first ends the recorded part of a pass (cuda_graph.cu). */
#define OP(name, params, args)                                                          \
    static void f_##name params                                                         \
    {                                                                                   \
        q8_outs args;                                                                   \
        if (cuda_ctx_of(be)->gmode && cuda_graph_op(be, fmix(__LINE__, fp_args args))) { \
            cuda_q8_drop(cuda_ctx_of(be));   /* its kernels run in the graph */         \
            return;                                                                     \
        }                                                                               \
        cuda_copy_flush(be);                                                            \
        name args;                                                                      \
    }
#define CUT(name, params, args)                                                         \
    static void f_##name params                                                         \
    {                                                                                   \
        q8_outs args;                                                                   \
        cuda_graph_cut(be);                                                             \
        cuda_copy_flush(be);                                                            \
        name args;                                                                      \
    }
CUT(cuda_sync, (be_ctx *be), (be))
CUT(cuda_read, (be_ctx *be, const be_tensor *t, int64_t r0, int64_t n, void *dst), (be, t, r0, n, dst))
CUT(cuda_save, (be_ctx *be, const be_tensor *t, int64_t r0, int64_t n, void *dst), (be, t, r0, n, dst))
/* be_load ends the recorded part; with Q36_CUDA_UPQ a small upload joins
 * the copy queue (no flush before it, as be_copy), else cuda_load flushes */
static void f_cuda_load(be_ctx *be, be_tensor *t, int64_t r0, int64_t n, const void *src)
{
    q8_outs(be, t);
    cuda_graph_cut(be);
    cuda_load(be, t, r0, n, src);
}

static void f_cuda_write(be_ctx *be, be_tensor *t, int64_t r0, int64_t n, const void *src)
{
    q8_outs(be, t);
    cuda_graph_cut(be);
    cuda_write(be, t, r0, n, src);      /* cuda_load: the same */
}
OP(cuda_zero, (be_ctx *be, be_tensor *t), (be, t))
OP(cuda_get_rows, (be_ctx *be, const be_weight *w, const be_tensor *ids, be_tensor *out), (be, w, ids, out))
OP(cuda_matmul, (be_ctx *be, const be_weight *w, int64_t slab, const be_tensor *x, be_tensor *y), (be, w, slab, x, y))
OP(cuda_matmul_id, (be_ctx *be, const be_weight *w, const be_tensor *x, const be_tensor *sel, be_tensor *y), (be, w, x, sel, y))
OP(cuda_matmul_glu, (be_ctx *be, const be_weight *w, be_tensor *g, const be_tensor *u, be_tensor *y), (be, w, g, u, y))
OP(cuda_matmul_id_swiglu, (be_ctx *be, const be_weight *wg, const be_weight *wu, const be_tensor *x, const be_tensor *sel, be_tensor *tmp, be_tensor *y), (be, wg, wu, x, sel, tmp, y))
OP(cuda_rms_norm, (be_ctx *be, const be_tensor *x, const be_weight *w, float eps, int64_t g, be_tensor *y), (be, x, w, eps, g, y))
OP(cuda_add_rms_norm, (be_ctx *be, const be_tensor *o, be_tensor *x, const be_weight *w, float eps, int64_t g, be_tensor *y), (be, o, x, w, eps, g, y))
OP(cuda_l2_norm, (be_ctx *be, const be_tensor *x, float eps, int64_t g, be_tensor *y), (be, x, eps, g, y))
OP(cuda_rms_norm_gate, (be_ctx *be, const be_tensor *x, const be_weight *w, float eps, int64_t g, const be_tensor *z, be_tensor *y), (be, x, w, eps, g, z, y))
OP(cuda_add, (be_ctx *be, const be_tensor *a, const be_tensor *b, be_tensor *y), (be, a, b, y))
OP(cuda_mul, (be_ctx *be, const be_tensor *a, const be_tensor *b, be_tensor *y), (be, a, b, y))
OP(cuda_mul_col, (be_ctx *be, const be_tensor *a, const be_tensor *s, be_tensor *y), (be, a, s, y))
OP(cuda_silu, (be_ctx *be, const be_tensor *x, be_tensor *y), (be, x, y))
OP(cuda_sigmoid, (be_ctx *be, const be_tensor *x, be_tensor *y), (be, x, y))
OP(cuda_swiglu, (be_ctx *be, const be_tensor *g, const be_tensor *u, be_tensor *y), (be, g, u, y))
OP(cuda_deltanet_gates, (be_ctx *be, const be_tensor *al, const be_weight *dt, const be_weight *a, const be_tensor *b, be_tensor *g, be_tensor *bt), (be, al, dt, a, b, g, bt))
OP(cuda_rope, (be_ctx *be, be_tensor *x, int64_t hd, int64_t nr, const int32_t sec[4], float base, const be_tensor *pos), (be, x, hd, nr, sec, base, pos))
OP(cuda_attn_prologue, (be_ctx *be, const be_tensor *qg, be_tensor *q, be_tensor *gate, be_tensor *k, const be_weight *wq, const be_weight *wk, float eps, int64_t hd, int64_t nr, const int32_t sec[4], float base, const be_tensor *pos), (be, qg, q, gate, k, wq, wk, eps, hd, nr, sec, base, pos))
OP(cuda_hadamard, (be_ctx *be, be_tensor *x, int64_t n), (be, x, n))
OP(cuda_kv_store, (be_ctx *be, be_tensor *kc, be_tensor *vc, const be_tensor *k, const be_tensor *v, const be_batch *b), (be, kc, vc, k, v, b))
OP(cuda_attention, (be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc, const be_batch *b, int64_t hq, int64_t hkv, int64_t hd, float sc, be_tensor *out), (be, q, kc, vc, b, hq, hkv, hd, sc, out))
OP(cuda_ssm_conv, (be_ctx *be, const be_tensor *x, be_tensor *t, const be_weight *w, const be_batch *b, be_tensor *y), (be, x, t, w, b, y))
OP(cuda_ssm_conv_silu, (be_ctx *be, const be_tensor *x, be_tensor *t, const be_weight *w, const be_batch *b, be_tensor *y), (be, x, t, w, b, y))
OP(cuda_deltanet, (be_ctx *be, const be_tensor *qkv, const be_tensor *g, const be_tensor *bt, be_tensor *S, int64_t hk, int64_t hv, int64_t dk, const be_batch *b, be_tensor *out), (be, qkv, g, bt, S, hk, hv, dk, b, out))
OP(cuda_ssm_conv_silu_keep, (be_ctx *be, const be_tensor *x, be_tensor *t, const be_weight *w, const be_batch *b, be_tensor *y, be_tensor *k), (be, x, t, w, b, y, k))
OP(cuda_deltanet_keep, (be_ctx *be, const be_tensor *qkv, const be_tensor *g, const be_tensor *bt, be_tensor *S, be_tensor *k, int64_t hk, int64_t hv, int64_t dk, const be_batch *b, be_tensor *out), (be, qkv, g, bt, S, k, hk, hv, dk, b, out))
OP(cuda_deltanet_gated, (be_ctx *be, be_tensor *qkv, const be_tensor *al, const be_tensor *bi, const be_weight *dt, const be_weight *a, float eps, be_tensor *g, be_tensor *bt, be_tensor *S, int64_t hk, int64_t hv, int64_t dk, const be_batch *b, be_tensor *out), (be, qkv, al, bi, dt, a, eps, g, bt, S, hk, hv, dk, b, out))
OP(cuda_deltanet_gated_keep, (be_ctx *be, be_tensor *qkv, const be_tensor *al, const be_tensor *bi, const be_weight *dt, const be_weight *a, float eps, be_tensor *g, be_tensor *bt, be_tensor *S, be_tensor *k, int64_t hk, int64_t hv, int64_t dk, const be_batch *b, be_tensor *out), (be, qkv, al, bi, dt, a, eps, g, bt, S, k, hk, hv, dk, b, out))
OP(cuda_deltanet_chunked, (be_ctx *be, const be_tensor *qkv, const be_tensor *g, const be_tensor *bt, be_tensor *S, int64_t hk, int64_t hv, int64_t dk, const be_batch *b, be_tensor *out), (be, qkv, g, bt, S, hk, hv, dk, b, out))
OP(cuda_moe_route, (be_ctx *be, const be_tensor *l, int64_t k, be_tensor *sel, be_tensor *w), (be, l, k, sel, w))
OP(cuda_argmax, (be_ctx *be, const be_tensor *x, be_tensor *ids), (be, x, ids))
OP(cuda_topk, (be_ctx *be, const be_tensor *x, int64_t k, be_tensor *ids, be_tensor *vals), (be, x, k, ids, vals))
OP(cuda_moe_combine, (be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k, be_tensor *out), (be, y, w, k, out))
OP(cuda_moe_combine_shared, (be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k, be_tensor *g, be_tensor *s, be_tensor *out), (be, y, w, k, g, s, out))
OP(cuda_moe_combine_norm, (be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k, be_tensor *g, be_tensor *s, be_tensor *o, be_tensor *x, const be_weight *wn, float eps, int64_t grp, be_tensor *h), (be, y, w, k, g, s, o, x, wn, eps, grp, h))
OP(cuda_moe_down_shared, (be_ctx *be, const be_weight *wd, const be_tensor *x, const be_tensor *sel, const be_tensor *w, const be_weight *wds, be_tensor *g, const be_tensor *u, be_tensor *sg, be_tensor *ey, be_tensor *s, be_tensor *out), (be, wd, x, sel, w, wds, g, u, sg, ey, s, out))
#undef OP
#undef CUT

static void f_cuda_matmul_n(be_ctx *be, int n, const be_weight *const *w, const be_tensor *x,
                            be_tensor *const *y)
{
    if (cuda_ctx_of(be)->gmode) {
        uint64_t h = fp_args(n, x);
        for (int i = 0; i < n; i++)
            h = fp1(fp1(h, w[i]), y[i]);
        if (cuda_graph_op(be, fmix(__LINE__, h))) {
            cuda_q8_drop(cuda_ctx_of(be));
            return;
        }
    }
    cuda_copy_flush(be);
    cuda_matmul_n(be, n, w, x, y);
}

/* be_copy queues (cuda_copy.cu): no flush before it */
static void f_cuda_copy(be_ctx *be, const be_tensor *src, be_tensor *dst)
{
    cuda_q8_written(cuda_ctx_of(be), dst);
    if (cuda_ctx_of(be)->gmode && cuda_graph_op(be, fmix(__LINE__, fp_args(src, dst)))) {
        cuda_q8_drop(cuda_ctx_of(be));
        return;
    }
    cuda_copy_queue(be, src, dst);
}

/* What allocates, frees or uploads ends the recorded part first; what may
 * move memory a graph points at drops the graphs. */
static void f_cuda_free(be_ctx *be)
{
    cuda_copy_flush(be);
    cuda_free(be);
}

static void f_cuda_tensor_free(be_ctx *be, be_tensor *t)
{
    cuda_graph_cut(be);
    cuda_copy_flush(be);
    cuda_tensor_free(be, t);      /* drops the graphs that may point at it */
}

static be_tensor *f_cuda_tensor_new(be_ctx *be, enum be_type type, int64_t rows, int64_t cols)
{
    cuda_graph_cut(be);
    return cuda_tensor_new(be, type, rows, cols);
}

static int f_cuda_reserve(be_ctx *be, const be_shape *shape, q36_err *err)
{
    cuda_graph_cut(be);
    cuda_copy_flush(be);
    cuda_graph_drop(be);
    return cuda_reserve(be, shape, err);
}

static int f_cuda_weight_bind(be_ctx *be, const gguf_tensor *t, be_weight **out, q36_err *err)
{
    cuda_graph_cut(be);
    cuda_copy_flush(be);
    return cuda_weight_bind(be, t, out, err);
}

static void cuda_pass_begin(be_ctx *be, uint64_t key, int64_t n_rows)
{
    cuda_ctx_of(be)->pass_rows = n_rows;
    cuda_graph_begin(be, key, n_rows);
}

static void cuda_pass_end(be_ctx *be)
{
    cuda_graph_pass_end(be);
    cuda_ctx_of(be)->pass_rows = 0;
}

/* be_prefetch: a graph op like the others (its weights fingerprinted);
 * nothing at all when the switch is off (fixed for the context, so
 * recordings and replays agree) */
static void f_cuda_prefetch(be_ctx *be, int n, const be_weight *const *w, const be_tensor *sel)
{
    if (!cuda_ctx_of(be)->pf_mode)
        return;
    if (cuda_ctx_of(be)->gmode) {
        uint64_t h = fp_args(n, sel);
        for (int i = 0; i < n; i++)
            h = fp1(h, w[i]);
        if (cuda_graph_op(be, fmix(__LINE__, h)))
            return;
    }
    cuda_prefetch(be, n, w, sel);
}

/* be_side_*: graph ops like the others (the step and the answer
 * fingerprinted; a replay's answer is its recording's: cuda_side.cu) */
static bool f_cuda_side(be_ctx *be, int step)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const bool on = step == BE_SIDE_BEGIN && cuda_side_wanted(c);
    if (c->gmode && cuda_graph_op(be, fmix(__LINE__, (uint64_t)(2 * step + on))))
        return on;
    return cuda_side(be, step);
}

static void cuda_stats(const be_ctx *be, be_stats *out)
{
    *out = cuda_ctx_of((be_ctx *)be)->stats;
}

static const struct be_ops cuda_ops = {
    .name = "cuda",
    .free = f_cuda_free,
    .sync = f_cuda_sync,
    .reserve = f_cuda_reserve,
    .tensor_new = f_cuda_tensor_new,
    .tensor_free = f_cuda_tensor_free,
    .write = f_cuda_write,
    .read = f_cuda_read,
    .save = f_cuda_save,
    .load = f_cuda_load,
    .zero = f_cuda_zero,
    .copy = f_cuda_copy,
    .weight_bind = f_cuda_weight_bind,
    .get_rows = f_cuda_get_rows,
    .matmul = f_cuda_matmul,
    .matmul_n = f_cuda_matmul_n,
    .matmul_id = f_cuda_matmul_id,
    .matmul_glu = f_cuda_matmul_glu,
    .matmul_id_glu = NULL,
    .matmul_id_swiglu = f_cuda_matmul_id_swiglu,
    .rms_norm = f_cuda_rms_norm,
    .add_rms_norm = f_cuda_add_rms_norm,
    .l2_norm = f_cuda_l2_norm,
    .add = f_cuda_add,
    .mul = f_cuda_mul,
    .mul_col = f_cuda_mul_col,
    .silu = f_cuda_silu,
    .sigmoid = f_cuda_sigmoid,
    .swiglu = f_cuda_swiglu,
    .rms_norm_gate = f_cuda_rms_norm_gate,
    .deltanet_gates = f_cuda_deltanet_gates,
    .rope = f_cuda_rope,
    .attn_prologue = f_cuda_attn_prologue,
    .kv_store = f_cuda_kv_store,
    .attention = f_cuda_attention,
    .ssm_conv = f_cuda_ssm_conv,
    .ssm_conv_silu = f_cuda_ssm_conv_silu,
    .deltanet = f_cuda_deltanet,
    .ssm_conv_silu_keep = f_cuda_ssm_conv_silu_keep,
    .deltanet_keep = f_cuda_deltanet_keep,
    .deltanet_gated = f_cuda_deltanet_gated,
    .deltanet_gated_keep = f_cuda_deltanet_gated_keep,
    .deltanet_chunked = f_cuda_deltanet_chunked,
    .moe_route = f_cuda_moe_route,
    .moe_combine = f_cuda_moe_combine,
    .argmax = f_cuda_argmax,
    .matmul_argmax = nullptr,   /* be_matmul then be_argmax (backend.c) */
    .topk = f_cuda_topk,
    .matmul_topk = nullptr,     /* be_matmul then be_topk (backend.c) */
    .head_cheap = nullptr,      /* a GPU's head product is cheap: true (backend.c) */
    .moe_combine_shared = f_cuda_moe_combine_shared,
    .moe_combine_norm = f_cuda_moe_combine_norm,
    .moe_down_shared = f_cuda_moe_down_shared,
    .hadamard = f_cuda_hadamard,
    .prefetch = f_cuda_prefetch,
    .side = f_cuda_side,
    .pass_begin = cuda_pass_begin,
    .pass_end = cuda_pass_end,
    .stats = cuda_stats,
    .profile_enable = cuda_prof_enable,
    .profile_layer = cuda_prof_layer,
    .profile_reset = cuda_prof_reset,
    .profile_ops = cuda_prof_ops,
    .profile_layers = cuda_prof_layers,
};

int cuda_device_index(void)
{
    const char *s = getenv("Q36_CUDA_DEVICE");
    return s && *s ? atoi(s) : 0;
}

extern "C" int be_cuda_device_info(char *name, size_t name_n, uint64_t *free_b, uint64_t *total_b,
                                   q36_err *err)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        cudaGetLastError();
        return q36_err_set(err, Q36_E_UNSUP, "cuda backend: no CUDA device (%s)",
                           e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    }
    const int dev = cuda_device_index();
    if (dev < 0 || dev >= n)
        return q36_err_set(err, Q36_E_ARG, "cuda backend: Q36_CUDA_DEVICE=%d but %d device(s)",
                           dev, n);
    cudaDeviceProp p;
    size_t fr = 0, tot = 0;
    if ((e = cudaSetDevice(dev)) != cudaSuccess || (e = cudaGetDeviceProperties(&p, dev)) ||
        (e = cudaMemGetInfo(&fr, &tot)) != cudaSuccess) {
        cudaGetLastError();
        return q36_err_set(err, Q36_E_IO, "cuda backend: device %d: %s", dev,
                           cudaGetErrorString(e));
    }
    if (name)
        snprintf(name, name_n, "CUDA%d %s (sm_%d%d)", dev, p.name, p.major, p.minor);
    *free_b = fr;
    *total_b = tot;
    return 0;
}

extern "C" uint64_t be_cuda_weight_bytes(const gguf_tensor *t)
{
    const uint64_t ne0 = t->ne[0], nrows = gguf_tensor_nelements(t) / (ne0 ? ne0 : 1);
    return quant_row_bytes(cuda_type_native(t->type) ? t->type : (uint32_t)QT_F32, ne0) * nrows;
}

extern "C" uint64_t be_cuda_scratch_bytes(const be_shape *shape, int n_threads)
{
    return scratch_bytes(shape, n_threads);
}

extern "C" int be_cuda_new(int n_threads, be_ctx **out, q36_err *err)
{
    (void)n_threads;
    *out = NULL;
    uint64_t fr, tot;
    char name[160];
    int rc = be_cuda_device_info(name, sizeof name, &fr, &tot, err);
    if (rc)
        return rc;
    cuda_ctx *c = (cuda_ctx *)calloc(1, sizeof *c);
    if (!c)
        return q36_err_set(err, Q36_E_NOMEM, "cuda backend: out of memory");
    c->base.ops = &cuda_ops;
    c->device = cuda_device_index();
    snprintf(c->dev_name, sizeof c->dev_name, "%s", name);
    cudaDeviceGetAttribute(&c->n_sm, cudaDevAttrMultiProcessorCount, c->device);
    cudaDeviceGetAttribute(&c->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, c->device);
    int l2 = 0;
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, c->device);
    c->l2_bytes = l2 > 0 ? (uint64_t)l2 : 0;
    cudaError_t e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        free(c);
        return q36_err_set(err, Q36_E_IO, "cuda backend: cudaStreamCreate: %s",
                           cudaGetErrorString(e));
    }
    cublasStatus_t s = cublasCreate(&c->blas);
    if (s != CUBLAS_STATUS_SUCCESS || cublasSetStream(c->blas, c->stream) != CUBLAS_STATUS_SUCCESS) {
        cudaStreamDestroy(c->stream);
        free(c);
        return q36_err_set(err, Q36_E_IO, "cuda backend: cublasCreate: status %d", (int)s);
    }
    /* plain f32 products (no TF32): the CPU is the reference */
    cublasSetMathMode(c->blas, CUBLAS_PEDANTIC_MATH);
    if (cudaMallocHost(&c->stage, STAGE_BYTES) != cudaSuccess) {
        cudaGetLastError();
        c->stage = NULL;        /* reads go straight to pageable memory */
    }
    c->graphs_on = cuda_env_on("Q36_CUDA_GRAPHS");
    const char *gc = getenv("Q36_CUDA_GRAPHCAP");
    c->graphs_cap = gc ? atoi(gc) : CUDA_GRAPHS_MAX;
    if (c->graphs_cap < 1 || c->graphs_cap > CUDA_GRAPHS_MAX)
        c->graphs_cap = CUDA_GRAPHS_MAX;
    c->fast_mv = cuda_env_on("Q36_CUDA_FASTMV");
    c->fused = cuda_env_on("Q36_CUDA_FUSED");
    c->f_swiglu = c->fused && cuda_env_on("Q36_CUDA_FSWIGLU");
    c->f_dn = c->fused && cuda_env_on("Q36_CUDA_FDN");
    c->f_attn = c->fused && cuda_env_on("Q36_CUDA_FATTNPRO");
    c->f_glu8 = c->fused && cuda_env_on("Q36_CUDA_FGLU8");
    c->moe_down = c->fused && cuda_env_is("Q36_CUDA_MOEDOWN", "1");
    c->norm_reg = cuda_env_on("Q36_CUDA_NORMREG");
    c->attn_gqa = cuda_env_on("Q36_CUDA_ATTNGQA");
    c->mv_mixed = cuda_env_on("Q36_CUDA_MVMIXED");
    c->mv_wide_first = cuda_env_on("Q36_CUDA_MVWIDE");
    c->pf_mode = cuda_env_is("Q36_CUDA_PREFETCH", "1") ? 1 : cuda_env_is("Q36_CUDA_PREFETCH", "2") ? 2 : 0;
    /* hints both: none without their stream */
    if (c->pf_mode && !cuda_stream_pair_new(&c->pf_stream, &c->pf_fork, &c->pf_join))
        c->pf_mode = 0;
    c->side_mode = cuda_env_on("Q36_CUDA_SIDE") &&
                   cuda_stream_pair_new(&c->side_stream, &c->side_fork, &c->side_done);
    int cc = 0;
    cudaDeviceGetAttribute(&cc, cudaDevAttrComputeCapabilityMajor, c->device);
    c->cc_major = cc;
    cuda_pdl = cuda_env_on("Q36_CUDA_PDL") && cc >= 9;
    cuda_diag_init();
    cuda_matmul_switches();
    if (c->graphs_on && cudaMallocHost(&c->up, UP_BYTES) != cudaSuccess) {
        cudaGetLastError();
        c->up = NULL;           /* uploads wait */
    }
    if (c->up && cuda_env_on("Q36_CUDA_UPQ")) {
        void *d = NULL;
        c->up_q = cudaHostGetDevicePointer(&d, c->up, 0) == cudaSuccess && d;
        c->up_dev = (char *)d;
        cudaGetLastError();
    }
    *out = &c->base;
    return 0;
}
