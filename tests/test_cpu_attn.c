/* test_cpu_attn.c: the tiled attention of the CPU backend (cpu_attn.c,
 * every kernel set this CPU runs, and be_attention itself) against the
 * plain reference cpu_attention_ref, bit for bit: f32 and f16 caches, GQA
 * groups 1, 2, 3, 4, 8, head sizes 64, 128, 256 and odd ones (80, 72, and
 * 60, not a whole number of 8-float vectors),
 * 1 to 600 query rows at cache depths 0 to 5000, 1 and 2 threads.
 *
 * Cache rows after the last query's position hold NaN, so a kernel that
 * reads a position it must skip poisons its output; positions between a
 * query's own and the tile's last are finite, and reading one of them
 * changes bits. Each case seeds its RNG from its name.
 *
 * Also: be_attention_reserve holds what be_attention then takes, and
 * be_attention_scratch_bytes says how much that is.
 *
 * The AVX2 kernels (cpu_attn_avx2.c) give the reference's bits at 8 lanes
 * only, so on an AVX-512 CPU the program runs itself again under
 * Q36_QUANT_PATH_MAX=avx2 (an AVX2-only CPU as the backend sees it: 8
 * lanes, the AVX2 exp), where they are the best path; those cases are
 * named cpu.attn_w8_*. */
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_attn.h"
#include "test_batch.h"
#include "quant/fp16.h"

static be_ctx *be_t[3];         /* by thread count (1, 2) */
static const char *g_tag = "";  /* "w8_" in the run capped at AVX2 */

/* Under ASan (make asan), an allocation that cannot be had returns NULL,
 * as it does without, instead of ending the program: the reserve cases
 * ask for one on purpose. Without ASan nothing reads this. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

static be_tensor *filled(be_ctx *be, t_rng *r, int64_t rows, int64_t valid, int64_t cols, int f16,
                         float scale)
{
    be_tensor *t = f16 ? be_tensor_new_f16(be, rows, cols) : be_tensor_new(be, rows, cols);
    float *x = malloc(sizeof(float) * (size_t)(rows * cols));
    for (int64_t i = 0; i < rows * cols; i++)
        x[i] = i < valid * cols ? t_gauss(r) * scale : NAN;
    be_write(be, t, 0, rows, x);
    free(x);
    return t;
}

/* First index where a and b differ in bits, or -1. */
static int64_t first_diff(const float *a, const float *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (quant_f32_bits(a[i]) != quant_f32_bits(b[i]))
            return i;
    return -1;
}

static void attn_case(int f16, int64_t group, int64_t n_kv_head, int64_t hd, int64_t T, int64_t pos0,
                      int threads)
{
    char name[128];
    snprintf(name, sizeof name, "cpu.attn_%s%s_g%lld_kv%lld_hd%lld_T%lld_p%lld_t%d", g_tag, f16 ? "f16" : "f32",
             (long long)group, (long long)n_kv_head, (long long)hd, (long long)T, (long long)pos0,
             threads);
    t_rng r = t_rng_named(name);
    be_ctx *be = be_t[threads];
    const int64_t Hq = group * n_kv_head, n = pos0 + T;
    /* keys of size ~2 give scores spread over several units: a peaked
     * softmax with tiny probabilities, f16 subnormals among them */
    be_tensor *kc = filled(be, &r, n + 19, n, n_kv_head * hd, f16, 2.0f);
    be_tensor *vc = filled(be, &r, n + 19, n, n_kv_head * hd, f16, 1.0f);
    be_tensor *q = filled(be, &r, T, T, Hq * hd, 0, 1.0f);
    be_tensor *out = be_tensor_new(be, T, Hq * hd);
    const size_t cnt = (size_t)(T * Hq * hd);
    float *want = malloc(cnt * sizeof(float)), *got = malloc(cnt * sizeof(float));
    const float scale = 1.0f / sqrtf((float)hd);

    cpu_attention_ref(be, q, kc, vc, pos0, Hq, n_kv_head, hd, scale, out);
    be_read(be, out, 0, T, want);
    int bad = 0;
    for (int64_t i = 0; i < (int64_t)cnt && !bad; i++)
        bad = !isfinite(want[i]);
    const char *fail = bad ? "reference not finite" : NULL;
    int64_t at = -1;
    const int paths[4] = { CPU_ATTN_GENERIC, CPU_ATTN_AVX512, CPU_ATTN_AVX2, -1 };
    static const char *const pname[4] = { "generic", "avx512", "avx2", "be_attention" };
    for (int k = 0; k < 4 && !fail; k++) {
        if (paths[k] > CPU_ATTN_GENERIC && cpu_attn_best_path() != paths[k])
            continue;
        be_zero(be, out);
        if (paths[k] < 0)
        {
            be_batch b = t_batch1(be, T, pos0, be_rows_of(kc), 0);
            be_attention(be, q, kc, vc, &b, Hq, n_kv_head, hd, scale, out);
            be_batch_free(be, &b);
        }
        else
            cpu_attention_path(be, paths[k], q, kc, vc, pos0, Hq, n_kv_head, hd, scale, out);
        be_read(be, out, 0, T, got);
        at = first_diff(got, want, (int64_t)cnt);
        if (at >= 0)
            fail = pname[k];
    }
    if (!fail)
        t_ok(name);
    else if (at < 0)
        t_fail(name, "%s", fail);
    else
        t_fail(name, "%s differs at row %lld col %lld: %.9g vs reference %.9g", fail,
               (long long)(at / (Hq * hd)), (long long)(at % (Hq * hd)), got[at], want[at]);
    free(want);
    free(got);
    be_tensor_free(be, kc);
    be_tensor_free(be, vc);
    be_tensor_free(be, q);
    be_tensor_free(be, out);
}

/* The vector f16 rounding of probabilities equals quant_f32_to_f16 over a
 * spread of bit patterns: subnormal results, ties, overflow. */
static void round_case(const char *name, int usable,
                       void (*scale_round)(int64_t n, float *x, float v, int f16))
{
    if (!usable) {
        t_skip(name, "this CPU lacks the instructions of the kernel under test");
        return;
    }
    enum { N = 4099 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    uint64_t bad = 0, seen = 0;
    for (uint64_t u0 = 0; u0 < 0x100000000ull && !bad; u0 += (uint64_t)N * 1021) {
        for (int i = 0; i < N; i++) {
            x[i] = quant_bits_f32((uint32_t)(u0 + (uint64_t)i * 1021));
            if (isnan(x[i]))
                x[i] = 0.5f;             /* NaN payloads are outside the contract */
            y[i] = x[i] * 0.75f;
            y[i] = quant_f16_to_f32(quant_f32_to_f16(y[i]));
        }
        scale_round(N, x, 0.75f, 1);
        for (int i = 0; i < N && !bad; i++, seen++)
            bad = quant_f32_bits(x[i]) != quant_f32_bits(y[i]) ? (uint64_t)i + 1 : 0;
    }
    t_check(name, !bad, "value %llu of %llu differs", (unsigned long long)bad,
            (unsigned long long)seen);
    free(x);
    free(y);
}

/* be_reserve takes what the largest attention calls of its shape need:
 * be_attention after it leaves the per-thread scratch where it was, at
 * every depth and batch size up to the reserved ones, and the bytes
 * be_cpu_scratch_bytes reports are what is held. */
static void reserve_case(int threads, int64_t group, int64_t n_kv_head, int64_t hd, int64_t n_ctx,
                         int64_t n_batch)
{
    char name[128];
    snprintf(name, sizeof name, "cpu.attn_reserve_g%lld_kv%lld_hd%lld_c%lld_b%lld_t%d",
             (long long)group, (long long)n_kv_head, (long long)hd, (long long)n_ctx,
             (long long)n_batch, threads);
    t_rng r = t_rng_named(name);
    q36_err err = { 0 };
    be_ctx *be = NULL;
    if (be_cpu_new(threads, &be, &err)) {
        t_fail(name, "%s", err.msg);
        return;
    }
    cpu_ctx *c = cpu_ctx_of(be);
    const int64_t Hq = group * n_kv_head;
    be_shape sh = { .n_rows = n_batch, .n_seq = 1, .n_ctx = n_ctx, .n_head = Hq,
                    .n_head_kv = n_kv_head, .head_dim = hd };
    const uint64_t bytes = be_cpu_scratch_bytes(&sh, threads);
    int rc = be_reserve(be, &sh, &err);
    const float *held = c->tscratch;
    const size_t held_n = c->tscratch_n;
    const void *shared = c->scratch;
    const size_t shared_cap = c->scratch_cap;
    const char *fail = rc ? err.msg : NULL;
    if (!fail && (uint64_t)held_n * (uint64_t)threads * sizeof(float) + shared_cap != bytes)
        fail = "the bytes reported are not the bytes held";
    be_tensor *kc = filled(be, &r, n_ctx, n_ctx, n_kv_head * hd, 1, 2.0f);
    be_tensor *vc = filled(be, &r, n_ctx, n_ctx, n_kv_head * hd, 1, 1.0f);
    be_tensor *q = filled(be, &r, n_batch, n_batch, Hq * hd, 0, 1.0f);
    be_tensor *out = be_tensor_new(be, n_batch, Hq * hd);
    /* (rows, first position): the whole batch last, one row last, a few
     * rows at depth 0, the batch at depth 0 */
    const int64_t calls[][2] = { { n_batch, n_ctx - n_batch }, { 1, n_ctx - 1 }, { 3, 0 },
                                 { n_batch, 0 } };
    for (int k = 0; k < 4 && !fail; k++) {
        be_tensor *qv = be_rows(be, q, 0, calls[k][0]);
        be_tensor *ov = be_rows(be, out, 0, calls[k][0]);
        be_batch b = t_batch1(be, calls[k][0], calls[k][1], n_ctx, 0);
        be_attention(be, qv, kc, vc, &b, Hq, n_kv_head, hd, 0.125f, ov);
        be_batch_free(be, &b);
        if (c->tscratch != held || c->tscratch_n != held_n)
            fail = "be_attention grew the per-thread scratch";
        if (c->scratch != shared || c->scratch_cap != shared_cap)
            fail = "be_attention grew the shared scratch";
        if (be_check(be, &err))
            fail = err.msg;
    }
    be_views_reset(be);
    /* a context whose scratch cannot be had (2^40 positions: petabytes)
     * is an error that leaves the scratch as it was */
    be_shape huge = sh;
    huge.n_ctx = (int64_t)1 << 40;
    if (!fail && (be_reserve(be, &huge, &err) != Q36_E_NOMEM || c->tscratch != held ||
                  c->tscratch_n != held_n))
        fail = "an impossible context was not refused as out of memory";
    /* past the reservation an op fails, through be_check, instead of growing */
    if (!fail) {
        be_batch b = t_batch1(be, n_batch, 4 * n_ctx - n_batch, 4 * n_ctx, 0);
        be_tensor *kc2 = filled(be, &r, 4 * n_ctx, 4 * n_ctx, n_kv_head * hd, 1, 2.0f);
        be_attention(be, q, kc2, kc2, &b, Hq, n_kv_head, hd, 0.125f, out);
        q36_err e2 = { 0 };
        if (be_check(be, &e2) != Q36_E_NOMEM || c->tscratch != held)
            fail = "an attention past the reservation did not fail as out of memory";
        be_batch_free(be, &b);
        be_tensor_free(be, kc2);
    }
    /* a shape that cannot be is an error, not an allocation */
    be_shape odd = sh;
    odd.n_head = Hq + 1;
    if (!fail && be_reserve(be, &odd, &err) != Q36_E_ARG)
        fail = "a group that does not divide was accepted";
    t_check(name, !fail, "%s", fail ? fail : "");
    be_tensor_free(be, kc);
    be_tensor_free(be, vc);
    be_tensor_free(be, q);
    be_tensor_free(be, out);
    be_free(be);
}

/* On an AVX-512 CPU, this program again as an AVX2-only CPU (the AVX2
 * kernels' cases); its ok and FAIL lines are this program's. */
static void capped_run(void)
{
    if (cpu_attn_best_path() != CPU_ATTN_AVX512)
        return;
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    if (pid == 0) {
        setenv("Q36_QUANT_PATH_MAX", "avx2", 1);
        setenv("Q36_TEST_ATTN_W8", "1", 1);
        execl("/proc/self/exe", "test_cpu_attn", (char *)NULL);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        t_fail("cpu.attn_w8_run", "could not run the capped copy");
    else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        t_fail("cpu.attn_w8_run", "the capped copy failed (wait status %d)", st);
}

int main(void)
{
    q36_err err = { 0 };
    const char *w8 = getenv("Q36_TEST_ATTN_W8");
    if (w8 && strcmp(w8, "1") == 0) {
        g_tag = "w8_";
        if (cpu_attn_best_path() != CPU_ATTN_AVX2) {
            t_fail("cpu.attn_w8_setup", "the capped copy does not run the AVX2 path");
            return t_exit();
        }
    }
    if (be_cpu_new(1, &be_t[1], &err) || be_cpu_new(2, &be_t[2], &err)) {
        t_fail("cpu.attn_setup", "%s", err.msg);
        return t_exit();
    }
    if (!*g_tag) {
        round_case("cpu.attn512_scale_round", cpu_attn_best_path() == CPU_ATTN_AVX512,
                   cpu_attn512_scale_round);
        round_case("cpu.attn256_scale_round", quant_path_available(QUANT_PATH_AVX2),
                   cpu_attn256_scale_round);
    }
    static const int64_t groups[] = { 1, 2, 3, 4, 8 };
    static const int64_t hds[] = { 64, 128, 256, 80, 72, 60 };
    static const int64_t small[][2] = { { 1, 0 }, { 1, 100 }, { 2, 1 }, { 7, 100 }, { 64, 1 } };
    int th = 1;
    for (int f16 = 0; f16 < 2; f16++)
        for (size_t g = 0; g < sizeof groups / sizeof *groups; g++)
            for (size_t h = 0; h < sizeof hds / sizeof *hds; h++)
                for (size_t s = 0; s < sizeof small / sizeof *small; s++, th = 3 - th)
                    attn_case(f16, groups[g], 2, hds[h], small[s][0], small[s][1], th);
    /* one KV head: decode splits the group over the threads */
    for (int f16 = 0; f16 < 2; f16++) {
        attn_case(f16, 8, 1, 256, 1, 100, 2);
        attn_case(f16, 3, 1, 72, 1, 33, 2);
    }
    /* the real shapes (Qwen3.5 0.8B: 8 heads over 2, MoE file: 16 over 2;
     * head 256) at long prompts and deep caches, and odd heads there too */
    for (int f16 = 0; f16 < 2; f16++) {
        attn_case(f16, 4, 2, 256, 600, 0, 2);
        attn_case(f16, 4, 2, 256, 1, 5000, 1);
        attn_case(f16, 8, 2, 256, 7, 5000, 2);
        attn_case(f16, 4, 2, 256, 64, 5000, 2);
        attn_case(f16, 2, 2, 80, 600, 100, 2);
        attn_case(f16, 1, 2, 72, 64, 5000, 1);
        /* decode-size tiles over several blocks: odd heads, queries
         * that stop at different positions of the last block */
        attn_case(f16, 3, 2, 72, 1, 300, 2);
        attn_case(f16, 1, 2, 80, 3, 257, 1);
        attn_case(f16, 2, 2, 256, 2, 1000, 1);
        attn_case(f16, 4, 2, 60, 9, 300, 2);
    }
    if (*g_tag) {               /* the capped copy: the attention cases only */
        be_free(be_t[1]);
        be_free(be_t[2]);
        return t_exit();
    }
    reserve_case(1, 4, 2, 256, 700, 512);
    reserve_case(2, 4, 2, 256, 300, 64);
    reserve_case(2, 8, 2, 80, 129, 7);
    reserve_case(2, 1, 3, 72, 50, 50);
    be_free(be_t[1]);
    be_free(be_t[2]);
    capped_run();
    return t_exit();
}
