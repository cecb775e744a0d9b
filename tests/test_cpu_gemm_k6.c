/* test_cpu_gemm_k6.c: the Q6_K tile kernels of cpu_gemm.h (cpu_gemm_k6.c)
 * give, for every output, the bits of cpu_dot_q6_K_ggml, the per-output
 * dot that cpu_matmul.c's pick_dot takes for Q6_K (ggml's x86 order):
 *
 *   gemm_k6.q6_K_K<K>_<nr>x<nt>[_padded|_extreme]_dot_ref
 *       the plain C order (cpu_dot_q6_K_ggml_ref) equals cpu_dot_q6_K_ggml
 *   ..._<kernel>   (ref, avx2, avx2_prep: the AVX2 tile over rows prepared
 *                  once as cpu_matmul.c makes them for prompts, avx512vnni,
 *                  picked)
 *       every output of the tile equals cpu_dot_q6_K_ggml of its row and
 *       token bit for bit (so also batch-invariant), and the padding of a
 *       wider output stride stays untouched
 *   gemm_k6.prep_pick
 *       cpu_gemm_q6_K_prep() is the AVX2 kernel's prepared form where that
 *       kernel is the pick, else NULL
 *
 * over the reduction lengths of the Qwen3.5/3.6 files (1024, 2048, 3584,
 * 512) and 256, tiles of 1..13 rows x 1..20 tokens that are not multiples
 * of any kernel's register block (one token included), padded weight,
 * activation and output strides, and an extreme case (every code 63,
 * scales -128 and 127, activations at +-127 and -128) at the integer
 * limits the kernels' 16-bit pair sums must hold. A kernel this CPU lacks
 * is a skip.
 *
 * `test_cpu_gemm_k6 bench` prints (does not assert) one-thread timings of
 * the tile kernel against the per-output dot on the FFN shapes, looped as
 * cpu_matmul.c's mm_task does (16-row items, 64-token tiles); noisy. */
#include "test.h"

#include "backend/cpu/cpu_internal.h"
#include "test_tile.h"

#define WB 210      /* Q6_K block */
#define AB 292      /* Q8_K block */

/* A Q6_K block of random bytes (every code and scale) gets an f16 scale
 * of either sign over five decades; extreme: every code 63, sub-block
 * scales alternately -128 and 127. */
static void fix_block(uint8_t *blk, t_rng *r, int extreme)
{
    if (extreme) {
        memset(blk, 0xFF, 192);
        for (int k = 0; k < 16; k++)
            blk[192 + k] = (uint8_t)(k & 1 ? 127 : 0x80);
    }
    const uint16_t h = rand_scale_f16(r);
    memcpy(blk + 208, &h, 2);
}

static uint8_t *w_rows(t_rng *r, int64_t K, int64_t n, uint64_t stride, int extreme)
{
    return weight_rows(r, K, n, stride, WB, fix_block, extreme);
}

static void avx2_prep(int64_t K, const uint8_t *w, uint64_t wrb, int64_t nr, const uint8_t *a,
                      uint64_t arb, int64_t nt, float *y, int64_t ldy)
{
    run_prep(cpu_gemm_q6_K_avx2_prep(), K, w, wrb, nr, a, arb, nt, y, ldy);
}

/* pad: extra bytes in the weight and activation row strides (odd, so rows
 * start unaligned); extreme: w_rows/q8k_rows' integer-limit data */
static void test_q6_K(int64_t K, int64_t nr, int64_t nt, int pad, int extreme)
{
    char name[128];
    snprintf(name, sizeof name, "gemm_k6.q6_K_K%lld_%lldx%lld%s%s", (long long)K, (long long)nr,
             (long long)nt, pad ? "_padded" : "", extreme ? "_extreme" : "");
    t_rng rng = t_rng_named(name);
    const uint64_t wrb = (uint64_t)K / 256 * WB + (uint64_t)pad * 7,
                   arb = (uint64_t)K / 256 * AB + (uint64_t)pad * 13;
    uint8_t *w = w_rows(&rng, K, nr, wrb, extreme), *a = q8k_rows(&rng, K, nt, arb, extreme);
    const kernel ks[] = {
        { "ref", cpu_gemm_q6_K_ref },
        { "avx2", quant_path_available(QUANT_PATH_AVX2) ? cpu_gemm_q6_K_avx2 : NULL },
        { "avx2_prep", quant_path_available(QUANT_PATH_AVX2) ? avx2_prep : NULL },
        { "avx512vnni", quant_path_available(QUANT_PATH_AVX512VNNI) ? cpu_gemm_q6_K_avx512vnni : NULL },
        { "picked", cpu_gemm_q6_K() },
    };
    check_case(name, K, w, wrb, nr, a, arb, nt, cpu_dot_q6_K_ggml, cpu_dot_q6_K_ggml_ref, ks,
               sizeof ks / sizeof ks[0]);
    free(w);
    free(a);
}

/* ------------------------------------------------------------ bench */

static void bench(int reps)
{
    static const int64_t shapes[][3] = {      /* K, N, tokens */
        { 1024, 3584, 64 }, { 3584, 1024, 64 }, { 1024, 3584, 512 }, { 3584, 1024, 512 },
        { 1024, 3584, 1 },  { 3584, 1024, 1 }, { 1024, 65536, 1 },
    };
    t_rng rng = t_rng_named("bench");
    const kernel ks[] = {
        { "avx2 tile", quant_path_available(QUANT_PATH_AVX2) ? cpu_gemm_q6_K_avx2 : NULL },
        { "avx512 tile", quant_path_available(QUANT_PATH_AVX512VNNI) ? cpu_gemm_q6_K_avx512vnni : NULL },
    };
    printf("one thread, best of %d (x20 for one token), noisy; ns per (weight block x token)\n", reps);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t K = shapes[s][0], N = shapes[s][1], T = shapes[s][2];
        const uint64_t wrb = (uint64_t)K / 256 * WB, arb = (uint64_t)K / 256 * AB;
        uint8_t *w = w_rows(&rng, K, N, wrb, 0), *a = q8k_rows(&rng, K, T, arb, 0);
        bench_shape("q6_K", K, N, T, T == 1 ? 20 * reps : reps, w, wrb, a, arb, cpu_dot_q6_K_ggml, ks,
                    sizeof ks / sizeof ks[0]);
        free(w);
        free(a);
    }
}

int main(int argc, char **argv)
{
    cpu_fdot_init();
    if (argc > 1 && strcmp(argv[1], "bench") == 0) {
        bench(argc > 2 ? atoi(argv[2]) : 5);
        return t_exit();
    }
    tile_cases(test_q6_K);
    const bool avx2 = cpu_gemm_q6_K() == cpu_gemm_q6_K_avx2;
    t_check("gemm_k6.prep_pick", cpu_gemm_q6_K_prep() == (avx2 ? cpu_gemm_q6_K_avx2_prep() : NULL),
            "cpu_gemm_q6_K_prep() is not the prepared form of the picked kernel");
    return t_exit();
}
