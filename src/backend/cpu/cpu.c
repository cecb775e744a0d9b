/* cpu.c: the CPU backend as a whole: its context (threads, the kernel
 * choices made once), the ops table that backend.c dispatches through,
 * and the scratch reservation. The ops themselves are in the other cpu_*
 * files, one op family each (cpu.h lists them).
 *
 * Numerics (MODEL.md §9). Every matmul first quantizes each activation row
 * to the weight type's vec_dot_type exactly as ggml's CPU backend does,
 * then takes block dot products; everything else is float32 with ggml's
 * accumulation choices where they matter (double sums in norms and
 * softmax). Bit for bit with llama.cpp's x86 CPU run (tests/
 * test_ggml_backend.c against libggml-cpu, the logits of tests/
 * parity.test.sh): activation quantization; Q8_0 and Q6_K block dots;
 * ggml_vec_dot_f32's order (attention scores, the delta rule); the f32
 * GEMM's lane order for probabilities x V; RMS norms; the conv; rope with
 * its repeated-product angles; ggml's lane exp in SiLU, SwiGLU and the
 * softmaxes; MoE routing. Within a rounding bound of ggml's, not equal:
 * Q4_0/Q4_K/IQ4_NL/MXFP4 weights that llama.cpp repacks into its own
 * interleaved GEMV/GEMM, and the K-quant/f16/bf16 kernels of the quant
 * module. Q4_K matmuls run the tile kernels of cpu_gemm.h (several rows x
 * tokens per call): the same exact integer block sums, another f32 order
 * than the quant module's dot, within the same bound. Q8_0 and f32 tiles
 * (cpu_gemm_q8.h) keep the per-output dot's bits. On CPUs with AMX, where
 * llama.cpp keeps plain matmul weights in AMX buffers, their quantized
 * products take that buffer's order instead (cpu_amx.c).
 *
 * Batch invariance (exact mode). A row's bits never depend on the batch it
 * is in: matmul tiles give each output from its own weight row and token
 * alone, and the sequence ops run each run of a batch on its own slot in
 * the same order as alone (tests/test_model_batch.c). A backend for
 * another device matches the CPU within float tolerance, not bits.
 *
 * Scratch. Ops take their buffers from two pools in the context: one
 * shared buffer (quantized activations, a matmul's expert tables, the delta
 * rule's decays, attention's one-row scores) and a float slice per thread.
 * They grow on demand until be_reserve sizes both for the largest batch
 * (cpu_*_scratch, the same functions be_cpu_scratch_bytes adds up for the
 * memory plan) and fixes them; an op that would need more then fails
 * (be_check) instead of allocating. */
#include "cpu.h"
#include "cpu_gemm_q8.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int threads_of(int n_threads)
{
    if (n_threads > 0)
        return n_threads;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static void cpu_free(be_ctx *be)
{
    cpu_ctx *c = cpu_ctx_of(be);
    be_base_free(be);
    cpu_pool_free(c->pool);
    for (be_weight *w = c->weights, *nx; w; w = nx) {
        nx = w->next;
        cpu_head_free(w->impl);
        free(w);
    }
    free(c->scratch);
    free(c->tscratch);
    free(c);
}

static void cpu_sync(be_ctx *be) { (void)be; }

/* The largest shared bytes and per-thread floats over the op families. */
static void scratch_need(const be_shape *s, size_t *shared, size_t *tfloats)
{
    void (*const fam[])(const be_shape *, size_t *, size_t *) = {
        cpu_matmul_scratch, cpu_attention_scratch, cpu_deltanet_scratch,
    };
    *shared = 0;
    *tfloats = 0;
    for (size_t i = 0; i < sizeof fam / sizeof fam[0]; i++) {
        size_t sh = 0, tf = 0;
        fam[i](s, &sh, &tf);
        *shared = sh > *shared ? sh : *shared;
        *tfloats = tf > *tfloats ? tf : *tfloats;
    }
    *tfloats = (*tfloats + 15) & ~(size_t)15;     /* as cpu_tscratch_reserve */
}

uint64_t be_cpu_scratch_bytes(const be_shape *shape, int n_threads)
{
    size_t sh, tf;
    scratch_need(shape, &sh, &tf);
    return (uint64_t)sh + (uint64_t)tf * sizeof(float) * (uint64_t)threads_of(n_threads);
}

/* Both pools to exactly what the shape needs (or left larger), then fixed:
 * be_cpu_scratch_bytes is then what a fresh context holds. A failure
 * leaves them as they were. */
static int cpu_reserve(be_ctx *be, const be_shape *shape, q36_err *err)
{
    cpu_ctx *c = cpu_ctx_of(be);
    if (shape->n_head && (shape->n_head_kv < 1 || shape->n_head % shape->n_head_kv))
        return q36_err_set(err, Q36_E_ARG, "cpu backend: %lld query heads over %lld KV heads",
                           (long long)shape->n_head, (long long)shape->n_head_kv);
    size_t sh, tf;
    scratch_need(shape, &sh, &tf);
    const size_t tbytes = tf * sizeof(float) * (size_t)c->n_threads;
    void *p = sh > c->scratch_cap ? realloc(c->scratch, sh) : c->scratch;
    if (!p && sh)
        goto nomem;
    if (sh > c->scratch_cap) {
        c->scratch = p;
        c->scratch_cap = sh;
    }
    if (tf > c->tscratch_n) {
        float *t = realloc(c->tscratch, tbytes);
        if (!t)
            goto nomem;
        c->tscratch = t;
        c->tscratch_n = tf;
    }
    c->reserved = true;
    return 0;
nomem:
    return q36_err_set(err, Q36_E_NOMEM, "cpu backend: out of memory reserving %.1f MiB of "
                       "scratch (%.1f MiB shared, %d threads x %.1f MiB)",
                       ((double)sh + (double)tbytes) / 1048576.0, sh / 1048576.0, c->n_threads,
                       tf * sizeof(float) / 1048576.0);
}

/* The contract's fused entries, op by op here (the same calls as the
 * separate ops, so the same bits). */
static void cpu_add_rms_norm(be_ctx *be, const be_tensor *o, be_tensor *x, const be_weight *w,
                             float eps, int64_t group, be_tensor *y)
{
    cpu_add(be, o, x, x);
    cpu_rms_norm(be, x, w, eps, group, y);
}

static void cpu_moe_combine_shared(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k,
                                   be_tensor *g, be_tensor *s, be_tensor *out)
{
    cpu_sigmoid(be, g, g);
    cpu_mul_col(be, s, g, s);
    cpu_moe_combine(be, y, w, k, out);
    cpu_add(be, out, s, out);
}

static void cpu_rms_norm_gate(be_ctx *be, const be_tensor *x, const be_weight *w, float eps,
                              int64_t group, const be_tensor *z, be_tensor *y)
{
    cpu_rms_norm(be, x, w, eps, group, y);
    cpu_swiglu(be, z, y, y);
}

static void cpu_ssm_conv_silu(be_ctx *be, const be_tensor *x, be_tensor *tails, const be_weight *w,
                              const be_batch *b, be_tensor *y)
{
    cpu_ssm_conv(be, x, tails, w, b, y);
    cpu_silu(be, y, y);
}

static void cpu_ssm_conv_silu_keep(be_ctx *be, const be_tensor *x, be_tensor *tails,
                                   const be_weight *w, const be_batch *b, be_tensor *y,
                                   be_tensor *keep)
{
    CPU_PROF_BEGIN(be);
    cpu_ssm_conv_keep_tails(x, tails, (int64_t)w->t->ne[0], b, keep);
    CPU_PROF_END(be, BE_PROF_CONV);
    cpu_ssm_conv_silu(be, x, tails, w, b, y);
}

/* Passes run op by op here: nothing to record, nothing counted. */
static void cpu_pass_begin(be_ctx *be, uint64_t key, int64_t n_rows)
{
    (void)be; (void)key; (void)n_rows;
}
static void cpu_pass_end(be_ctx *be) { (void)be; }
static void cpu_stats(const be_ctx *be, be_stats *out)
{
    (void)be;
    memset(out, 0, sizeof *out);
}

static const struct be_ops cpu_ops = {
    .name = "cpu",
    .free = cpu_free,
    .sync = cpu_sync,
    .reserve = cpu_reserve,
    .tensor_new = cpu_tensor_new,
    .tensor_free = cpu_tensor_free,
    .write = cpu_write,
    .read = cpu_read,
    .save = cpu_save,
    .load = cpu_load,
    .zero = cpu_zero,
    .copy = cpu_copy,
    .weight_bind = cpu_weight_bind,
    .get_rows = cpu_get_rows,
    .matmul = cpu_matmul,
    .matmul_n = cpu_matmul_n,
    .matmul_id = cpu_matmul_id,
    .rms_norm = cpu_rms_norm,
    .add_rms_norm = cpu_add_rms_norm,
    .l2_norm = cpu_l2_norm,
    .add = cpu_add,
    .mul = cpu_mul,
    .mul_col = cpu_mul_col,
    .silu = cpu_silu,
    .sigmoid = cpu_sigmoid,
    .hadamard = cpu_hadamard,
    .swiglu = cpu_swiglu,
    .rms_norm_gate = cpu_rms_norm_gate,
    .deltanet_gates = cpu_deltanet_gates,
    .rope = cpu_rope,
    .kv_store = cpu_kv_store,
    .attention = cpu_attention,
    .ssm_conv = cpu_ssm_conv,
    .ssm_conv_silu = cpu_ssm_conv_silu,
    .deltanet = cpu_deltanet,
    .ssm_conv_silu_keep = cpu_ssm_conv_silu_keep,
    .deltanet_keep = cpu_deltanet_keep,
    .deltanet_chunked = cpu_deltanet_chunked,
    .moe_route = cpu_moe_route,
    .moe_combine = cpu_moe_combine,
    .argmax = cpu_argmax,
    .matmul_argmax = cpu_matmul_argmax,
    .head_cheap = cpu_head_cheap,
    .matmul_topk = cpu_matmul_topk,
    .topk = cpu_topk,
    .moe_combine_shared = cpu_moe_combine_shared,
    .pass_begin = cpu_pass_begin,
    .pass_end = cpu_pass_end,
    .stats = cpu_stats,
    .profile_enable = cpu_profile_enable,
    .profile_layer = cpu_profile_layer,
    .profile_reset = cpu_profile_reset,
    .profile_ops = cpu_profile_ops,
    .profile_layers = cpu_profile_layers,
};

int be_cpu_new(int n_threads, be_ctx **out, q36_err *err)
{
    *out = NULL;
    n_threads = threads_of(n_threads);
    if (n_threads > 256)
        return q36_err_set(err, Q36_E_ARG, "cpu backend: %d threads is more than 256", n_threads);
    cpu_fdot_init();
    {   /* one-token Q8_0 products on the AVX-512 kernels (cpu_gemm_q8.h) */
        const char *d5 = getenv("Q36_Q8_DECODE512");
        cpu_gemm_q8_decode512(d5 && !strcmp(d5, "1"));
    }
    {   /* the greedy head's screen (cpu_head.c); Q36_CPU_HEADSCREEN=0
         * turns it off, =N takes it from N rows */
        cpu_head_screen(cpu_head_screen_env());
        cpu_head_nib(cpu_head_nib_env());     /* Q36_CPU_HEADNIB=0: no nibble level */
        const char *hn = getenv("Q36_CPU_HEADNORM");
        cpu_head_norms(!(hn && !strcmp(hn, "0")));
    }
    {   /* the lazy CPU flag of cpu_qdot.c, set here on one thread */
        float z[8] = { 0 };
        uint8_t blk[292] = { 0 };
        (void)cpu_dot_q6_K_ggml(0, blk, z);
    }
    cpu_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return q36_err_set(err, Q36_E_NOMEM, "cpu backend: out of memory");
    c->base.ops = &cpu_ops;
    c->n_threads = n_threads;
    /* Q36_DOT_PATH=ref|avx2|avx512: a diagnostic switch that makes every
     * matmul use one family of the quant module's kernels */
    __builtin_cpu_init();
    c->bf16_dp = cpu_avx512_ok() && __builtin_cpu_supports("avx512bf16");
    /* Q36_CPU_AMX=0|1 forces llama.cpp's AMX order off or on (tests; the
     * order needs only AVX2), else it follows cpu_amx_detect */
    const char *amx = getenv("Q36_CPU_AMX");
    c->amx = amx && (!strcmp(amx, "0") || !strcmp(amx, "1")) ? amx[0] == '1' : cpu_amx_detect();
    const char *dp = getenv("Q36_DOT_PATH");
    c->dot_path = !dp ? -1 : !strcmp(dp, "ref") ? QUANT_PATH_REF
                : !strcmp(dp, "avx2") ? QUANT_PATH_AVX2
                : !strcmp(dp, "avx512") ? QUANT_PATH_AVX512 : -1;
    if (n_threads > 1) {
        c->pool = cpu_pool_new(n_threads);
        if (!c->pool) {
            free(c);
            return q36_err_set(err, Q36_E_NOMEM, "cpu backend: cannot start %d threads", n_threads);
        }
    }
    *out = &c->base;
    return 0;
}
