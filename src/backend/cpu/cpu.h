/* cpu.h: the CPU backend's entries of the ops table (be_impl.h, filled in
 * cpu.c), by the file that holds them, and each op file's scratch needs
 * for be_reserve. The arguments are those of the be_* function of the same
 * name in backend.h. Private to src/backend/cpu/ and its tests. */
#ifndef Q36_CPU_H
#define Q36_CPU_H

#include "cpu_internal.h"

/* cpu_tensor.c */
be_tensor *cpu_tensor_new(be_ctx *be, enum be_type type, int64_t rows, int64_t cols);
void cpu_tensor_free(be_ctx *be, be_tensor *t);
void cpu_write(be_ctx *be, be_tensor *t, int64_t row0, int64_t nrows, const void *src);
void cpu_read(be_ctx *be, const be_tensor *t, int64_t row0, int64_t nrows, void *dst);
void cpu_save(be_ctx *be, const be_tensor *t, int64_t row0, int64_t nrows, void *dst);
void cpu_load(be_ctx *be, be_tensor *t, int64_t row0, int64_t nrows, const void *src);
void cpu_zero(be_ctx *be, be_tensor *t);
void cpu_copy(be_ctx *be, const be_tensor *src, be_tensor *dst);
int  cpu_weight_bind(be_ctx *be, const gguf_tensor *t, be_weight **out, q36_err *err);
void cpu_get_rows(be_ctx *be, const be_weight *w, const be_tensor *ids, be_tensor *out);

/* cpu_matmul.c */
void cpu_matmul(be_ctx *be, const be_weight *w, int64_t slab, const be_tensor *x, be_tensor *y);
void cpu_matmul_n(be_ctx *be, int n, const be_weight *const *w, const be_tensor *x,
                  be_tensor *const *y);
void cpu_matmul_id(be_ctx *be, const be_weight *w, const be_tensor *x, const be_tensor *sel,
                   be_tensor *y);
/* x's rows in w's activation type (act_row_bytes each) to q */
void cpu_quantize_rows(be_ctx *be, const be_weight *w, const be_tensor *x, uint8_t *q);

/* cpu_head.c: be_matmul_argmax; cpu_head_free frees what it keeps in a
 * weight's impl. cpu_head_screen(n): screen batches of at least n rows (0:
 * never; -1: cpu_head.c's default, 1 or 2 by the head's row length;
 * process-wide; be_cpu_new sets it from Q36_CPU_HEADSCREEN, tests set it);
 * cpu_head_screen_stats: tokens screened, tokens computed in full
 * after a screen, candidates computed exactly, since the process began. */
void cpu_matmul_argmax(be_ctx *be, const be_weight *w, const be_tensor *x, be_tensor *y,
                       be_tensor *ids, const int32_t *ban, int n_ban);
void cpu_matmul_topk(be_ctx *be, const be_weight *w, const be_tensor *x, be_tensor *y, int64_t k,
                     be_tensor *ids, be_tensor *vals);
bool cpu_head_cheap(const be_ctx *be, const gguf_tensor *head);
void cpu_head_free(void *impl);
void cpu_head_screen(int min_rows);
int  cpu_head_screen_env(void);     /* Q36_CPU_HEADSCREEN (0 and up), else -1 */
void cpu_head_screen_stats(long out[3]);
/* the nibble level (cpu_screen_nib.h) for greedy batches of at most n rows
 * (0: never; -1: the default, cpu_head.c's NIB_ROWS, NIB2_ROWS where it
 * precedes exact products (AVX2 without VNNI); be_cpu_new sets it
 * from Q36_CPU_HEADNIB); its stats: tokens it settled, tokens handed to
 * the whole int8 screen, groups it kept for the int8 screen */
void cpu_head_nib(int max_rows);
int  cpu_head_nib_env(void);        /* Q36_CPU_HEADNIB (0 and up), else -1 */
void cpu_head_nib_stats(long out[3]);
/* whether the nibble level passes over groups by their norms
 * (cpu_screen_nib.h): yes unless Q36_CPU_HEADNORM=0 (be_cpu_new); the ids
 * are the same either way */
void cpu_head_norms(bool on);

/* cpu_norm.c */
void cpu_rms_norm(be_ctx *be, const be_tensor *x, const be_weight *w, float eps, int64_t group,
                  be_tensor *y);
void cpu_l2_norm(be_ctx *be, const be_tensor *x, float eps, int64_t group, be_tensor *y);

/* cpu_ops.c */
void cpu_add(be_ctx *be, const be_tensor *a, const be_tensor *b, be_tensor *y);
void cpu_mul(be_ctx *be, const be_tensor *a, const be_tensor *b, be_tensor *y);
void cpu_mul_col(be_ctx *be, const be_tensor *a, const be_tensor *s, be_tensor *y);
void cpu_silu(be_ctx *be, const be_tensor *x, be_tensor *y);
void cpu_sigmoid(be_ctx *be, const be_tensor *x, be_tensor *y);
void cpu_hadamard(be_ctx *be, be_tensor *x, int64_t n);
void cpu_swiglu(be_ctx *be, const be_tensor *g, const be_tensor *u, be_tensor *y);
void cpu_deltanet_gates(be_ctx *be, const be_tensor *alpha, const be_weight *dt_bias,
                   const be_weight *a, const be_tensor *b, be_tensor *g, be_tensor *beta);

/* cpu_rope.c */
void cpu_rope(be_ctx *be, be_tensor *x, int64_t head_dim, int64_t n_rot,
              const int32_t sections[4], float base, const be_tensor *pos);

/* cpu_moe.c */
void cpu_moe_route(be_ctx *be, const be_tensor *logits, int64_t k, be_tensor *sel, be_tensor *w);
void cpu_argmax(be_ctx *be, const be_tensor *x, be_tensor *ids);
void cpu_topk(be_ctx *be, const be_tensor *x, int64_t k, be_tensor *ids, be_tensor *vals);
void cpu_moe_combine(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k,
                     be_tensor *out);

/* cpu_attn.c */
void cpu_kv_store(be_ctx *be, be_tensor *kc, be_tensor *vc, const be_tensor *k,
                  const be_tensor *v, const be_batch *b);
void cpu_attention(be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc,
                   const be_batch *b, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                   float scale, be_tensor *out);

/* cpu_conv.c */
void cpu_ssm_conv(be_ctx *be, const be_tensor *x, be_tensor *tails, const be_weight *w,
                  const be_batch *b, be_tensor *y);

/* cpu_deltanet.c */
void cpu_ssm_conv_keep_tails(const be_tensor *x, const be_tensor *tails, int64_t Kc,
                             const be_batch *b, be_tensor *keep);
void cpu_deltanet_keep(be_ctx *be, const be_tensor *qkv, const be_tensor *g,
                       const be_tensor *beta, be_tensor *S, be_tensor *keep_S, int64_t n_k_heads,
                       int64_t n_v_heads, int64_t dk, const be_batch *b, be_tensor *out);
void cpu_deltanet(be_ctx *be, const be_tensor *qkv, const be_tensor *g, const be_tensor *beta,
                  be_tensor *S, int64_t n_k_heads, int64_t n_v_heads, int64_t dk,
                  const be_batch *b, be_tensor *out);
void cpu_deltanet_chunked(be_ctx *be, const be_tensor *qkv, const be_tensor *g,
                          const be_tensor *beta, be_tensor *S, int64_t n_k_heads,
                          int64_t n_v_heads, int64_t dk, const be_batch *b, be_tensor *out);

/* cpu_prof.c */
void cpu_profile_enable(be_ctx *be, int on);
void cpu_profile_layer(be_ctx *be, enum be_layer_kind kind);
void cpu_profile_reset(be_ctx *be);
int  cpu_profile_ops(const be_ctx *be, be_prof_row *rows, int cap);
void cpu_profile_layers(const be_ctx *be, be_prof_row rows[BE_LAYER_N]);

/* Scratch each op family takes at most for batches up to `s`: bytes of
 * the shared buffer (cpu_scratch) and floats per thread (cpu_tscratch).
 * cpu.c reserves the largest of each. */
void cpu_matmul_scratch(const be_shape *s, size_t *shared, size_t *thread_floats);
void cpu_attention_scratch(const be_shape *s, size_t *shared, size_t *thread_floats);
void cpu_deltanet_scratch(const be_shape *s, size_t *shared, size_t *thread_floats);

#endif
