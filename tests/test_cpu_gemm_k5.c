/* test_cpu_gemm_k5.c: the Q5_K tile kernels of cpu_gemm.h (cpu_gemm_k5.c)
 * give, for every output, the bits of the quant module's AVX-512 Q5_K dot,
 * the per-output dot that cpu_matmul.c's pick_dot takes for Q5_K on
 * AVX-512 CPUs:
 *
 *   gemm_k5.q5_K_K<K>_<nr>x<nt>[_padded|_extreme]_dot_ref
 *       the plain C order (cpu_dot_q5_K_lanes_ref) equals that dot
 *   ..._<kernel>   (ref, avx512vnni, picked)
 *       every output of the tile equals the dot of its row and token bit
 *       for bit (so also batch-invariant); the padding of a wider output
 *       stride stays untouched
 *   gemm_k5.pick   cpu_gemm_q5_K() is the AVX-512 kernel exactly where the
 *                  quant module's pick for Q5_K is its AVX-512 dot and VNNI
 *                  is there, the AVX2 kernel where the pick is its AVX2
 *                  dot, else NULL
 *   gemm_k5.prep_pick  cpu_gemm_q5_K_prep() is the AVX2 kernel's prepared
 *                  form where that kernel is the pick, else NULL
 *   gemm_k5avx2.q5_K_K<K>_<nr>x<nt>[_padded|_extreme]_<kernel> (avx2,
 *       avx2_prep: the AVX2 tile over rows prepared once as cpu_matmul.c
 *       makes them for prompts, picked where the pick is the AVX2 dot):
 *       every output of the tile
 *       equals the quant module's AVX2 Q5_K dot bit for bit (that order
 *       has no plain C form); run wherever AVX2 is, AVX-512 CPUs included
 *
 * over the Qwen3.5/3.6 reduction lengths (1024, 2048, 3584, 512) and 256,
 * tiles of 1..13 rows x 1..20 tokens (one token included), padded strides,
 * and an extreme case (every code 31, scales and mins 63, activations at
 * +-127 and -128). On a CPU without the AVX-512 dot (or under
 * Q36_QUANT_PATH_MAX=avx2) every case but the pick is a skip: the order
 * under test is that kernel's.
 *
 * `test_cpu_gemm_k5 bench` prints (does not assert) one-thread timings of
 * the tile kernel against the per-output dot, looped as mm_task; noisy. */
#include "test.h"

#include "test_tile.h"

#define WB 176      /* Q5_K block */
#define AB 292      /* Q8_K block */

/* A Q5_K block of random bytes (every code, scale and min) gets f16 d and
 * dmin of either sign over five decades; extreme: every byte of scales and
 * codes 0xFF (codes 31, scales and mins 63). */
static void fix_block(uint8_t *blk, t_rng *r, int extreme)
{
    if (extreme)
        memset(blk + 4, 0xFF, WB - 4);
    const uint16_t h[2] = { rand_scale_f16(r), rand_scale_f16(r) };
    memcpy(blk, h, 4);
}

static uint8_t *w_rows(t_rng *r, int64_t K, int64_t n, uint64_t stride, int extreme)
{
    return weight_rows(r, K, n, stride, WB, fix_block, extreme);
}

static quant_dot_fn dot_avx512(void)
{
    return quant_vec_dot_fn_path(QT_Q5_K, QUANT_PATH_AVX512);
}

/* pad: extra bytes in the row strides (odd: unaligned rows) */
static void test_q5_K(int64_t K, int64_t nr, int64_t nt, int pad, int extreme)
{
    char name[128];
    snprintf(name, sizeof name, "gemm_k5.q5_K_K%lld_%lldx%lld%s%s", (long long)K, (long long)nr,
             (long long)nt, pad ? "_padded" : "", extreme ? "_extreme" : "");
    if (!dot_avx512()) {
        t_skip(name, "this CPU has no AVX-512 Q5_K dot: the order under test is that kernel's");
        return;
    }
    t_rng rng = t_rng_named(name);
    const uint64_t wrb = (uint64_t)K / 256 * WB + (uint64_t)pad * 7,
                   arb = (uint64_t)K / 256 * AB + (uint64_t)pad * 13;
    uint8_t *w = w_rows(&rng, K, nr, wrb, extreme), *a = q8k_rows(&rng, K, nt, arb, extreme);
    const kernel ks[] = {
        { "ref", cpu_gemm_q5_K_ref },
        { "avx512vnni", quant_path_available(QUANT_PATH_AVX512VNNI) ? cpu_gemm_q5_K_avx512vnni : NULL },
        { "picked", cpu_gemm_q5_K() },
    };
    check_case(name, K, w, wrb, nr, a, arb, nt, dot_avx512(), cpu_dot_q5_K_lanes_ref, ks,
               sizeof ks / sizeof ks[0]);
    free(w);
    free(a);
}

static quant_dot_fn dot_avx2(void)
{
    return quant_vec_dot_fn_path(QT_Q5_K, QUANT_PATH_AVX2);
}

static void avx2_prep(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr, const uint8_t *a,
                      uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    run_prep(cpu_gemm_q5_K_avx2_prep(), K, w, wrb, nr, a, arb, nt, y, ldy);
}

/* the AVX2 kernel (plain and over prepared rows) against the AVX2 dot's bits */
static void test_q5_K_avx2(int64_t K, int64_t nr, int64_t nt, int pad, int extreme)
{
    char name[128];
    snprintf(name, sizeof name, "gemm_k5avx2.q5_K_K%lld_%lldx%lld%s%s", (long long)K, (long long)nr,
             (long long)nt, pad ? "_padded" : "", extreme ? "_extreme" : "");
    if (!dot_avx2()) {
        t_skip(name, "this CPU has no AVX2 Q5_K dot: the order under test is that kernel's");
        return;
    }
    t_rng rng = t_rng_named(name);
    const uint64_t wrb = (uint64_t)K / 256 * WB + (uint64_t)pad * 7,
                   arb = (uint64_t)K / 256 * AB + (uint64_t)pad * 13;
    uint8_t *w = w_rows(&rng, K, nr, wrb, extreme), *a = q8k_rows(&rng, K, nt, arb, extreme);
    const bool picked = dot_avx2() == quant_vec_dot_fn(QT_Q5_K);
    const kernel ks[] = {
        { "avx2", cpu_gemm_q5_K_avx2 },
        { "avx2_prep", avx2_prep },
        { "picked", picked ? cpu_gemm_q5_K() : NULL },
    };
    check_case(name, K, w, wrb, nr, a, arb, nt, dot_avx2(), NULL, ks, picked ? 3 : 2);
    free(w);
    free(a);
}

static void test_pick(void)
{
    const bool want = dot_avx512() && dot_avx512() == quant_vec_dot_fn(QT_Q5_K) &&
                      quant_path_available(QUANT_PATH_AVX512VNNI);
    const bool want2 = !want && dot_avx2() && dot_avx2() == quant_vec_dot_fn(QT_Q5_K);
    const cpu_tile_fn got = cpu_gemm_q5_K();
    t_check("gemm_k5.pick", want ? got == cpu_gemm_q5_K_avx512vnni : want2 ? got == cpu_gemm_q5_K_avx2 : got == NULL,
            "cpu_gemm_q5_K() is %s, want %s", got ? "a kernel" : "NULL",
            want ? "the AVX-512 kernel" : want2 ? "the AVX2 kernel" : "NULL");
    t_check("gemm_k5.prep_pick", cpu_gemm_q5_K_prep() == (want2 ? cpu_gemm_q5_K_avx2_prep() : NULL),
            "cpu_gemm_q5_K_prep() is not the prepared form of the picked kernel");
}

/* ------------------------------------------------------------ bench */

static void bench(int reps)
{
    static const int64_t shapes[][3] = {      /* K, N, tokens */
        { 1024, 3584, 64 }, { 3584, 1024, 64 }, { 1024, 3584, 512 }, { 3584, 1024, 512 },
    };
    t_rng rng = t_rng_named("bench");
    const kernel ks[] = { { "tile", cpu_gemm_q5_K() } };
    printf("one thread, best of %d, noisy; ns per (weight block x token)\n", reps);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t K = shapes[s][0], N = shapes[s][1], T = shapes[s][2];
        const uint64_t wrb = (uint64_t)K / 256 * WB, arb = (uint64_t)K / 256 * AB;
        uint8_t *w = w_rows(&rng, K, N, wrb, 0), *a = q8k_rows(&rng, K, T, arb, 0);
        bench_shape("q5_K", K, N, T, reps, w, wrb, a, arb, quant_vec_dot_fn(QT_Q5_K), ks, 1);
        free(w);
        free(a);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "bench") == 0) {
        bench(argc > 2 ? atoi(argv[2]) : 5);
        return t_exit();
    }
    test_pick();
    tile_cases(test_q5_K);
    tile_cases(test_q5_K_avx2);
    return t_exit();
}
