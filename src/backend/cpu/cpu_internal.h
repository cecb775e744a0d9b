/* cpu_internal.h: what the files of the CPU backend share: the CPU's
 * context (cpu_ctx, which starts with the generic be_ctx), the per-op
 * timing rows, the worker pool and the scratch. Nothing outside
 * src/backend/cpu/ and its tests includes it. */
#ifndef Q36_CPU_INTERNAL_H
#define Q36_CPU_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "../be_impl.h"
#include "../../quant/quant.h"
#include "../../quant/types.h"

/* AVX-512 kernels may run: the CPU has AVX-512 F/BW/VL and the OS saves its
 * state, and Q36_QUANT_PATH_MAX (a diagnostic switch, "avx2" to run as an
 * AVX2-only CPU would) does not cap the machine below it. Every AVX-512
 * choice of the CPU backend goes through this. */
static inline bool cpu_avx512_ok(void)
{
    return quant_path_available(QUANT_PATH_AVX512);
}

/* A parallel-for body: items [i0, i1) on worker `tid` (0 = the caller). */
typedef void (*cpu_task_fn)(void *arg, int64_t i0, int64_t i1, int tid);

typedef struct cpu_pool cpu_pool;

/* Per-op timing rows (cpu_prof.c): op families, then matmuls by weight
 * type, then expert matmuls by weight type. */
enum cpu_prof_op {
    BE_PROF_GET_ROWS, BE_PROF_COPY, BE_PROF_IO, BE_PROF_RMS_NORM, BE_PROF_L2_NORM,
    BE_PROF_ADD_MUL, BE_PROF_ACT, BE_PROF_DELTANET_GATES, BE_PROF_ROPE, BE_PROF_KV_STORE,
    BE_PROF_ATTENTION, BE_PROF_CONV, BE_PROF_DELTANET, BE_PROF_DELTANET_CHUNKED, BE_PROF_ROUTE,
    BE_PROF_COMBINE, BE_PROF_ARGMAX, BE_PROF_TOPK,
    BE_PROF_FIXED,                 /* then matmul rows, then expert matmul rows */
};
#define BE_PROF_NTYPES QT_COUNT
#define BE_PROF_MATMUL(type) (BE_PROF_FIXED + (type))
#define BE_PROF_MATMUL_ID(type) (BE_PROF_FIXED + BE_PROF_NTYPES + (type))
#define BE_PROF_ROWS (BE_PROF_FIXED + 2 * BE_PROF_NTYPES)

typedef struct cpu_profile {
    uint64_t calls[BE_PROF_ROWS];
    uint64_t ns[BE_PROF_ROWS];
    uint64_t layer_ns[BE_LAYER_N];
    uint64_t layer_calls[BE_LAYER_N];
} cpu_profile;

/* The CPU's context: the generic part first (be_impl.h). */
typedef struct cpu_ctx {
    be_ctx     base;
    int        n_threads;
    int        dot_path;      /* enum quant_path forced by Q36_DOT_PATH, or -1 */
    bool       bf16_dp;       /* the CPU has AVX-512 BF16 (llama.cpp's bf16 kernels use it) */
    bool       amx;           /* llama.cpp's AMX order for plain matmuls (cpu_amx.c; Q36_CPU_AMX) */
    cpu_pool  *pool;          /* NULL with one thread */
    be_weight *weights;       /* bound weights (freed with the ctx) */
    void      *scratch;       /* activation rows in vec_dot_type, and other per-op buffers */
    size_t     scratch_cap;
    float     *tscratch;      /* per-thread float scratch: n_threads * tscratch_n */
    size_t     tscratch_n;
    bool       reserved;      /* be_reserve ran: the scratch no longer grows */
    bool       prof;          /* per-op timing on (be_profile_enable) */
    int        prof_layer;    /* enum be_layer_kind the ops are charged to */
    cpu_profile prof_tab;
} cpu_ctx;

static inline cpu_ctx *cpu_ctx_of(const be_ctx *be)
{
    return (cpu_ctx *)be;
}

/* cpu_prof.c: per-op timing. An op opens with CPU_PROF_BEGIN(be) and ends
 * (no early return in between) with CPU_PROF_END(be, row): with profiling
 * off that is one predictable branch at each end. */
uint64_t cpu_prof_now(void);                            /* monotonic ns */
void     cpu_prof_add(be_ctx *be, int row, uint64_t t0);
/* the time since t0 to row's time (and its layer kind's) without a call:
 * work an op does once for later calls (cpu_head.c: the head's copies) */
void     cpu_prof_add_time(be_ctx *be, int row, uint64_t t0);
#define CPU_PROF_BEGIN(be) \
    const uint64_t prof_t0_ = __builtin_expect(cpu_ctx_of(be)->prof, 0) ? cpu_prof_now() : 0
#define CPU_PROF_END(be, row) \
    do { if (__builtin_expect(cpu_ctx_of(be)->prof, 0)) cpu_prof_add((be), (row), prof_t0_); } while (0)

/* Pool: n_threads-1 workers plus the caller. cpu_for splits [0, n) into
 * chunks of at least `grain` items handed out dynamically; it returns when
 * every item is done. */
cpu_pool *cpu_pool_new(int n_threads);
void      cpu_pool_free(cpu_pool *p);
void      cpu_for(be_ctx *be, int64_t n, int64_t grain, cpu_task_fn fn, void *arg);

/* Scratch of at least `bytes` (kept, grown until be_reserve, fixed after);
 * NULL when out of memory or beyond the reservation: the op then fails
 * with cpu_fail_scratch. */
void *cpu_scratch(be_ctx *be, size_t bytes);
/* Per-thread float scratch of n floats for thread tid; valid during an op
 * after cpu_tscratch_reserve(be, n) was called by the op before cpu_for. */
int    cpu_tscratch_reserve(be_ctx *be, size_t n);
float *cpu_tscratch(be_ctx *be, int tid);
/* Records "op needs N bytes of scratch, has M" in the context (be_check). */
void   cpu_fail_scratch(be_ctx *be, const char *op, size_t bytes);

static inline float *cpu_row(const be_tensor *t, int64_t r)
{
    return (float *)t->data + r * t->ld;
}



/* cpu_fdot.c: f32 sums in ggml's x86 accumulation orders. */
void  cpu_fdot_init(void);                               /* CPU feature flags, once */
int   cpu_lanes(void);                                   /* 16 (AVX-512) or 8 */
float cpu_lane_sum(float *l, int W);                     /* halving tree; clobbers l */
float cpu_dot_vec(int64_t n, const float *x, const float *y);  /* ggml_vec_dot_f32 order */
/* the same order for W = 16 or 8 lanes in plain C (W = cpu_lanes(): cpu_dot_vec's bits) */
float cpu_dot_vec_ref(int64_t n, const float *x, const float *y, int W);
void  cpu_axpy(int64_t n, float *y, const float *x, float v); /* y = fma(x, v, y) */
void  cpu_scale(int64_t n, float *x, float v);                /* x *= v */
/* llamafile's f32 GEMM order; n a multiple of cpu_lanes() (a quant_dot_fn) */
float cpu_dot_lanes(int64_t n, const void *x, const void *y);
/* llamafile's bf16 GEMM order and ggml_vec_dot_bf16's, of the llama.cpp
 * build this CPU loads: with AVX-512 BF16 (n a multiple of 32 for the
 * GEMM), else with 8 lanes (haswell; n a multiple of 8) */
float cpu_dot_bf16_lanes(int64_t n, const void *w, const void *a);
float cpu_dot_bf16_vec(int64_t n, const void *w, const void *a);
/* plain-C references of the two bf16 orders (vdpbf16ps emulated) */
float cpu_dot_bf16_lanes_ref(int64_t n, const void *w, const void *a);
float cpu_dot_bf16_vec_ref(int64_t n, const void *w, const void *a);
float cpu_dot_f16_vec(int64_t n, const void *w, const void *a);
float cpu_dot_f16_lanes(int64_t n, const void *w, const void *a);

/* cpu_ops.c: one activation row (kind 0 SiLU, 1 sigmoid, 2 SwiGLU with u)
 * on the vector level `level` at most (0 plain C, 1 AVX2, 2 AVX-512; the
 * CPU's own level caps it), for tests: every level gives the same bits. */
void cpu_act_row_level(int kind, int level, int64_t n, const float *g, const float *u, float *y);

/* cpu_qdot.c: K-quant dots in ggml's AVX2 float order (quant_dot_fn shape). */
float cpu_dot_q6_K_ggml(int64_t n, const void *w, const void *a);      /* AVX2 when present */
float cpu_dot_q6_K_ggml_ref(int64_t n, const void *w, const void *a);  /* plain C */

/* cpu_amx.c: the order of llama.cpp's AMX matmuls (CPUs with AMX-INT8):
 * whole block sums in one chain of fused multiply-adds. cpu_amx_detect:
 * does llama.cpp take its AMX buffers on this CPU; cpu_amx_shape: would it
 * for a plain matmul weight of this type, K inputs and N outputs;
 * cpu_amx_dot: the dot in that order (Q8_0, Q6_K, Q4_K, Q5_K, IQ4_XS,
 * Q4_0, Q4_1; NULL for the others: F16). */
bool cpu_amx_detect(void);
bool cpu_amx_shape(uint32_t type, int64_t K, int64_t N);
quant_dot_fn cpu_amx_dot(uint32_t type);
/* the Q8_0 tile in that order (NULL for the other types): every output
 * the bits of cpu_amx_dot's. The tile type is cpu_gemm.h's (C11 allows
 * the repeated typedef). */
typedef void (*cpu_tile_fn)(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr,
                            const uint8_t *a, uint64_t arb, int64_t nt, float *y, int64_t ldy);
cpu_tile_fn cpu_amx_tile(uint32_t type);
/* cpu_matmul.c: llama.cpp keeps this plain matmul weight in an AMX buffer
 * on this CPU (c->amx), so its products take cpu_amx_dot */
bool cpu_amx_weight(const cpu_ctx *c, const gguf_tensor *t, bool expert);
float cpu_dot_q8_0_amx_ref(int64_t n, const void *w, const void *a);
float cpu_dot_q6_K_amx_ref(int64_t n, const void *w, const void *a);
float cpu_dot_q4_K_amx_ref(int64_t n, const void *w, const void *a);
float cpu_dot_q5_K_amx_ref(int64_t n, const void *w, const void *a);
float cpu_dot_iq4_xs_amx_ref(int64_t n, const void *w, const void *a);
float cpu_dot_q4_0_amx_ref(int64_t n, const void *w, const void *a);
float cpu_dot_q4_1_amx_ref(int64_t n, const void *w, const void *a);
#endif
