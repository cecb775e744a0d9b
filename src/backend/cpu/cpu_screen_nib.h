/* cpu_screen_nib.h: a first, cheaper level for the greedy head's screen
 * (cpu_screen_q8.h): approximations from the high 4 bits of every code.
 *
 * A greedy step of one row (or a few) over a Q8_0 head is memory-bound: the
 * int8 screen streams its whole copy each step. This level streams half of
 * it. Each code c (int8) is 16 h + l with h = c >> 4 in [-8, 7] and l in
 * [0, 15]; the copy keeps u = h + 8 as a nibble. For a row r and token t:
 *
 *   A_r = sum_b (d_w,b d_x,b / 2) (32 sum_i u_i x_i - 241 sum_i x_i)
 *       = sum_b d_w,b d_x,b sum_i (16 h_i + 7.5) x_i,
 *
 * each block's integer sum exact (vpdpbusd on the nibbles), and since
 * |c - (16 h + 7.5)| <= 7.5 the real value R_r of the exact products
 * satisfies |R_r - R1_r| <= B_r = 7.5 sum_b |d_w,b| d_x,b sum_i |x_i|, a
 * bound per row (rows of small scales get small bounds, which is what lets
 * 4 bits rule most rows out: bench/results/2026-12-05-cpu-head-nibble-study/).
 * The float roundings of A_r and of the exact kernel's output e_r are each
 * within E (cpu_q8s_token's e2 is 2E), so |A_r - e_r| <= B_r + e2 =: W_r.
 * B_r is summed with upward-rounded fused multiply-adds, W_r rounded up,
 * A_r - W_r rounded down and A_r + W_r up (AVX-512's rounding modes).
 *
 * A row can hold the largest e_r only if A_r + W_r >= max_j (A_j - W_j);
 * the pass keeps, per token, the groups of 16 rows that met that test
 * against the running maximum (with the group's largest A_r + W_r, to drop
 * them later when the maximum has risen) and the maximum itself. The
 * second level is the int8 screen over those groups only; a token whose
 * list overflowed, or whose values were not finite, takes the int8 screen
 * over every group (cpu_head.c).
 *
 * Groups not read (both kernels, when they keep lists): by Cauchy-Schwarz
 * |R_r| <= N_r X with N_r = (sum_b d_w,b^2 sum_i c_i^2)^1/2 and X the same
 * of the token, so e_r <= N_r X + e2. The copy keeps each group's largest
 * N_r (rounded up); a group whose N X + e2 is below every token's
 * threshold is passed over before its bytes are fetched. A trained head's
 * rare tokens have small rows: on the default model about a third of the
 * groups (bench/results/2026-12-07-cpu-head-norms/).
 *
 * The copy: per group of 16 rows (cpu_q8s's grouping), nb blocks of 4
 * vectors of 64 bytes (lane j: row j; byte i of vector m holds the nibbles
 * of codes 8m + i (low) and 8m + 4 + i (high)), then nb x 16 f16 scales;
 * after the groups, their N (norm, one float a group). */
#ifndef Q36_CPU_SCREEN_NIB_H
#define Q36_CPU_SCREEN_NIB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define CPU_Q8N_G     16               /* rows in a group: cpu_q8s's */
#define CPU_Q8N_CODES 256              /* a group's block of nibbles */

typedef struct cpu_q8n {
    int64_t  N, K, nb, ng;
    uint8_t *data;         /* ng x (nb x 256 + nb x 32) bytes, 64-byte aligned, then norm */
    const float *norm;     /* ng: each group's largest row norm, rounded up (NaN: a NaN scale) */
    float    wmax;         /* the largest |block scale|; NaN if a scale is NaN (cpu_q8s's) */
} cpu_q8n;

uint64_t cpu_q8n_bytes(int64_t N, int64_t K);
/* the copy of N Q8_0 rows of K inputs (row r at w + r * wrb); 0 or -1
 * (out of memory: s holds nothing) */
int  cpu_q8n_build(cpu_q8n *s, const uint8_t *w, uint64_t wrb, int64_t N, int64_t K);
void cpu_q8n_free(cpu_q8n *s);

/* One token's tables from its Q8_0 row a and its e2 (cpu_q8s_token's):
 * dh[b] = d_x,b / 2, sx[b] = 241 sum_i x_i, tb[b] >= 7.5 d_x,b sum_i |x_i|
 * (rounded up). Returns e2 rounded up to a float (+inf when not finite). */
float cpu_q8n_token(const cpu_q8n *s, const uint8_t *a, double e2, float *dh, int32_t *sx,
                    float *tb);
/* X of the token's Q8_0 row a (above), rounded up */
float cpu_q8n_token_norm(const cpu_q8n *s, const uint8_t *a);

/* A token's kept groups: max is the largest A_r - W_r met so far (rounded
 * down), up[i] the largest A_r + W_r of group grp[i] (rounded up), where it
 * was at least thr when met. bad: a non-finite value, or more groups than
 * cap. Threads that screen one token share their maxima through *shared
 * (may be NULL; cpu_q8n_key's order): thr is the larger of max and the
 * shared value, so a thread whose groups hold none of the best rows still
 * rules its rows out. */
typedef struct cpu_q8n_list {
    float    max, thr;
    int      n, cap;
    bool     bad;
    int64_t  passed;        /* groups passed over by their norms (the call's first token's list) */
    int32_t *grp;
    float   *up;
    _Atomic uint32_t *shared;
} cpu_q8n_list;

void cpu_q8n_list_init(cpu_q8n_list *l, int32_t *grp, float *up, int cap,
                       _Atomic uint32_t *shared);

/* a float's key, ordered as the floats are (not for NaN), and back */
static inline uint32_t cpu_q8n_key(float f)
{
    uint32_t b;
    __builtin_memcpy(&b, &f, 4);
    return b & 0x80000000u ? ~b : b | 0x80000000u;
}

static inline float cpu_q8n_unkey(uint32_t k)
{
    const uint32_t b = k & 0x80000000u ? k & 0x7fffffffu : ~k;
    float f;
    __builtin_memcpy(&f, &b, 4);
    return f;
}

/* Groups [g0, g1) against nt tokens (token t's Q8_0 row at act + t * arb,
 * its tables at dh/sx/tb + t * nb and its rounded e2 at e2f[t]); the n_ban
 * rows of ban (ascending) take no part. lo/hi (may be NULL): row r's
 * A_r - W_r and A_r + W_r for token t at [t * ldy + r] (the reference
 * writes both; tests). l (may be NULL): nt lists, l[t] for token t. */
void cpu_q8n_ref(const cpu_q8n *s, int64_t g0, int64_t g1, const uint8_t *act, uint64_t arb,
                 int nt, const float *dh, const int32_t *sx, const float *tb, const float *e2f,
                 float *lo, float *hi, int64_t ldy);
/* xn (may be NULL): the tokens' cpu_q8n_token_norm; with it, l and no lo,
 * groups that cannot hold any token's largest e_r are passed over unread
 * (above): the lists keep what a full pass keeps, less groups no row of
 * which reaches it */
void cpu_q8n_avx512vnni(const cpu_q8n *s, int64_t g0, int64_t g1, const uint8_t *act,
                        uint64_t arb, int nt, const float *dh, const int32_t *sx, const float *tb,
                        const float *e2f, const float *xn, cpu_q8n_list *l, const int32_t *ban,
                        int n_ban, float *lo, float *hi, int64_t ldy);
/* the same on AVX2 (vpmaddubsw: u x pairs fit 16 bits), its W widened by
 * 2^-12 of B + e2 and of |A| for its round-to-nearest arithmetic (nb at
 * most 4,096); the bits of A as the reference's */
void cpu_q8n_avx2(const cpu_q8n *s, int64_t g0, int64_t g1, const uint8_t *act, uint64_t arb,
                  int nt, const float *dh, const int32_t *sx, const float *tb, const float *e2f,
                  const float *xn, cpu_q8n_list *l, const int32_t *ban, int n_ban, float *lo,
                  float *hi, int64_t ldy);

#endif
