/* cpu_screen_q8.h: a screen for the greedy choice over a Q8_0 head.
 *
 * A greedy step needs only the column holding each row's largest logit.
 * With several rows (a verify pass, several slots' steps) the exact Q8_0
 * product of a large head is compute-bound: exact mode keeps llama.cpp's
 * 8 float lanes per block (cpu_gemm_q8.h). The screen gets the same choice
 * with less arithmetic:
 *
 *  1. an approximation a_r of every output from the same exact integer
 *     block sums, combined in another float order: one fused multiply-add
 *     per block for 16 weight rows at once, from a copy of the weights in
 *     which lane j of a 64-byte vector holds 4 codes of row j (cpu_q8s);
 *  2. a rigorous bound E on |a_r - e_r|, e_r the exact kernel's output
 *     (cpu_q8s_token: both are sums of the same products p = d * isum,
 *     d = d_w * d_a exact, rounded along chains of at most nb and nb + 3
 *     additions, so |a - e| <= (gamma(nb) + gamma(nb + 3)) * sum |p|, and
 *     sum |p| <= wmax * sum_b |d_a,b| * 128 * sum_i |q_a,i|);
 *  3. only rows with a_r >= max_j a_j - 2E can hold the largest e_r
 *     (e_r <= a_r + E < max a - E <= e of the row of max a); their exact
 *     outputs are computed one by one and the first largest wins, as in
 *     be_argmax.
 *
 * The candidates are tracked while the screen runs (cpu_q8s_cand: a running
 * maximum and the rows within 2E of it), so no approximate row is stored.
 * A non-finite approximation, bound or maximum, or more near-ties than a
 * list holds, marks the token for the caller to compute exactly in full.
 *
 * Weight codes are stored + 128 (vpdpbusd takes them unsigned): the
 * integer sum is then dot(w + 128, a) - 128 * sum(a), still exact. Rows
 * past N in the last group are zero codes and scales, and never candidates.
 *  cpu_q8s_ref:        plain C, writes a_r for every row (tests);
 *  cpu_q8s_avx512vnni: AVX-512 VNNI, the same bits; writes a_r where y is
 *                      not NULL, tracks candidates where c is not NULL. */
#ifndef Q36_CPU_SCREEN_Q8_H
#define Q36_CPU_SCREEN_Q8_H

#include <stdbool.h>
#include <stdint.h>

#define CPU_Q8S_G   16                 /* weight rows in a group (one vector) */
#define CPU_Q8S_BLK (8 * 64 + 64)      /* a group's block: 8 x 64 code bytes, 16 f32 scales */

typedef struct cpu_q8s {
    int64_t  N, K;          /* weight rows, inputs (a multiple of 32) */
    int64_t  nb, ng;        /* blocks a row, groups of CPU_Q8S_G rows */
    uint8_t *data;          /* ng x nb x CPU_Q8S_BLK bytes, 64-byte aligned */
    float    wmax;          /* the largest |block scale|; NaN or inf if a scale is */
} cpu_q8s;

/* The screen's copy of N Q8_0 rows of K inputs (row r at w + r * wrb).
 * Returns 0, or -1 out of memory (s then holds nothing). */
int  cpu_q8s_build(cpu_q8s *s, const uint8_t *w, uint64_t wrb, int64_t N, int64_t K);
void cpu_q8s_free(cpu_q8s *s);
/* bytes cpu_q8s_build allocates for N rows of K inputs */
uint64_t cpu_q8s_bytes(int64_t N, int64_t K);
/* bytes for a screen's copy, 2 MiB aligned, in huge pages where the kernel
 * allows (free() releases it); NULL when out of memory */
void *cpu_q8s_alloc(uint64_t bytes);

/* One token's tables (from its Q8_0 activation row a of K inputs): dx[b]
 * the block scales as f32, cx[b] = 128 * the block's code sum, and the
 * return value 2E, twice the bound on |a_r - e_r| for every row; +inf
 * when that is not finite, or when a code is -128 (quant_act_quantize
 * gives it for a NaN input only; the exact kernels then differ among
 * themselves: the AVX2 order's sign trick does not negate -128). */
double cpu_q8s_token(const cpu_q8s *s, const uint8_t *a, float *dx, int32_t *cx);

/* A token's candidates, kept per thread, for its best row (k = 1): rows
 * whose approximation was within e2 of the running maximum when the screen
 * met them; for its k best rows (k > 1): rows within e2 of the k-th largest
 * approximation of the list when it was last compacted (every row of the
 * true k best has an approximation within 2E of the k-th largest one:
 * k rows are ahead of any other by more than that). */
typedef struct cpu_q8s_cand {
    float    max;           /* k = 1: the largest approximation seen (-inf at start) */
    float    thr;           /* a float at or below (max or the k-th) - e2 */
    double   e2;            /* 2E of the token */
    int      n, cap, k;     /* entries, room (<= CPU_Q8S_CAP_MAX), rows wanted */
    bool     bad;           /* a non-finite approximation, or the list overflowed */
    int32_t *idx;
    float   *val;
} cpu_q8s_cand;

#define CPU_Q8S_CAP_MAX 1024

void cpu_q8s_cand_init(cpu_q8s_cand *c, double e2, int32_t *idx, float *val, int cap, int k);
/* keeps the entries of idx/val (n of them) whose value is at least thr, in
 * order; returns how many */
static inline int cpu_q8s_keep(int32_t *idx, float *val, int n, float thr)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        if (val[i] >= thr) {
            idx[m] = idx[i];
            val[m++] = val[i];
        }
    return m;
}
/* the k-th largest of v[0..n) (1 <= k <= n <= CPU_Q8S_CAP_MAX) */
float cpu_q8s_kth(const float *v, int n, int k);

/* Groups [g0, g1) against nt tokens: token t's Q8_0 row at act + t * arb,
 * its tables at dx + t * nb and cx + t * nb. y (may be NULL): row r's
 * approximation for token t to y[t * ldy + r] (r < N). c (may be NULL):
 * nt candidate lists, c[t] for token t; the n_ban rows of ban (ascending)
 * are never candidates. */
void cpu_q8s_ref(const cpu_q8s *s, int64_t g0, int64_t g1, const uint8_t *act, uint64_t arb,
                 int nt, const float *dx, const int32_t *cx, float *y, int64_t ldy);
void cpu_q8s_avx512vnni(const cpu_q8s *s, int64_t g0, int64_t g1, const uint8_t *act,
                        uint64_t arb, int nt, const float *dx, const int32_t *cx,
                        cpu_q8s_cand *c, const int32_t *ban, int n_ban, float *y, int64_t ldy);

#endif
