/* cpu_screen_nib.c: the high-nibble level of the greedy head's screen
 * (cpu_screen_nib.h). */
#include "cpu_screen_nib.h"
#include "cpu_screen_q8.h"

#include "../../quant/fp16.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

enum { QB = 34 };      /* a Q8_0 block: f16 scale, 32 codes */

static uint64_t group_bytes(int64_t nb)
{
    return (uint64_t)nb * (CPU_Q8N_CODES + 2 * CPU_Q8N_G);
}

/* the groups' bytes, where their norms start */
static uint64_t groups_bytes(int64_t N, int64_t K)
{
    const uint64_t g = group_bytes(K / 32);
    /* groups start on 64-byte boundaries */
    return (uint64_t)((N + CPU_Q8N_G - 1) / CPU_Q8N_G) * ((g + 63) / 64 * 64);
}

uint64_t cpu_q8n_bytes(int64_t N, int64_t K)
{
    const uint64_t ng = (uint64_t)((N + CPU_Q8N_G - 1) / CPU_Q8N_G);
    return groups_bytes(N, K) + (ng * 4 + 63) / 64 * 64;
}

static uint64_t group_stride(int64_t nb)
{
    return (group_bytes(nb) + 63) / 64 * 64;
}

/* the smallest float at or above t */
static float float_up(double t)
{
    float f = (float)t;
    if ((double)f < t)
        f = nextafterf(f, INFINITY);
    return f;
}

/* a float at or above the square root of s, a double sum of nb products
 * that are exact in double (so within (nb + 1) 2^-53 of its value); NaN
 * and infinity stay */
static float norm_up(double s, int64_t nb)
{
    return float_up(sqrt(s * (1.0 + (double)(nb + 2) * 0x1p-52)) * (1.0 + 0x1p-52));
}

/* (sum_b d_b^2 sum_i c_i^2)^1/2 of a Q8_0 row of nb blocks, rounded up */
static float row_norm(const uint8_t *row, int64_t nb)
{
    double s = 0;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = row + (uint64_t)b * QB;
        const double d = quant_f16_to_f32((uint16_t)(blk[0] | blk[1] << 8));
        int32_t q2 = 0;
        for (int i = 0; i < 32; i++)
            q2 += (int8_t)blk[2 + i] * (int8_t)blk[2 + i];
        s += d * d * q2;
    }
    return norm_up(s, nb);
}

int cpu_q8n_build(cpu_q8n *s, const uint8_t *w, uint64_t wrb, int64_t N, int64_t K)
{
    memset(s, 0, sizeof *s);
    const int64_t nb = K / 32, ng = (N + CPU_Q8N_G - 1) / CPU_Q8N_G;
    const uint64_t gs = group_stride(nb);
    uint8_t *d = cpu_q8s_alloc(cpu_q8n_bytes(N, K));
    if (!d)
        return -1;
    /* rows past N: code 0 (nibble 8) and scale 0 (never read: not valid lanes) */
    memset(d + (uint64_t)(ng - 1) * gs, 0x88, (uint64_t)nb * CPU_Q8N_CODES);
    memset(d + (uint64_t)(ng - 1) * gs + (uint64_t)nb * CPU_Q8N_CODES, 0, (uint64_t)nb * 32);
    float wmax = 0, *norm = (float *)(d + groups_bytes(N, K));
    bool nan = false;
    for (int64_t r = 0; r < N; r++) {
        const int64_t g = r / CPU_Q8N_G, j = r % CPU_Q8N_G;
        uint8_t *gp = d + (uint64_t)g * gs;
        const uint8_t *row = w + (uint64_t)r * wrb;
        const float rn = row_norm(row, nb);
        if (j == 0 || (norm[g] == norm[g] && !(rn <= norm[g])))    /* a NaN stays */
            norm[g] = rn;
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = row + (uint64_t)b * QB;
            uint8_t *q = gp + (uint64_t)b * CPU_Q8N_CODES;
            memcpy(gp + (uint64_t)nb * CPU_Q8N_CODES + (uint64_t)(b * 32 + 2 * j), blk, 2);
            const float am = fabsf(quant_f16_to_f32((uint16_t)(blk[0] | blk[1] << 8)));
            if (am != am)
                nan = true;
            else if (am > wmax)
                wmax = am;
            for (int m = 0; m < 4; m++)
                for (int i = 0; i < 4; i++) {
                    const int lo = ((int8_t)blk[2 + 8 * m + i] >> 4) + 8;
                    const int hi = ((int8_t)blk[2 + 8 * m + 4 + i] >> 4) + 8;
                    q[64 * m + 4 * j + i] = (uint8_t)(lo | hi << 4);
                }
        }
    }
    *s = (cpu_q8n){ .N = N, .K = K, .nb = nb, .ng = ng, .data = d, .norm = norm,
                    .wmax = nan ? NAN : wmax };
    return 0;
}

void cpu_q8n_free(cpu_q8n *s)
{
    free(s->data);
    memset(s, 0, sizeof *s);
}

/* the largest float at or below t */
static float float_down(double t)
{
    float f = (float)t;
    if ((double)f > t)
        f = nextafterf(f, -INFINITY);
    return f;
}

float cpu_q8n_token(const cpu_q8n *s, const uint8_t *a, double e2, float *dh, int32_t *sx,
                    float *tb)
{
    bool ok = isfinite(e2);
    for (int64_t b = 0; b < s->nb; b++) {
        const uint8_t *blk = a + b * QB;
        const float dx = quant_f16_to_f32((uint16_t)(blk[0] | blk[1] << 8));
        int32_t sum = 0, abs = 0;
        for (int i = 0; i < 32; i++) {
            const int v = (int8_t)blk[2 + i];
            sum += v;
            abs += v < 0 ? -v : v;
        }
        dh[b] = dx * 0.5f;
        sx[b] = 241 * sum;
        tb[b] = float_up(7.5 * fabs((double)dx) * abs);
        ok &= isfinite(tb[b]);
    }
    return ok ? float_up(e2) : INFINITY;
}

float cpu_q8n_token_norm(const cpu_q8n *s, const uint8_t *a)
{
    return row_norm(a, s->nb);
}

void cpu_q8n_list_init(cpu_q8n_list *l, int32_t *grp, float *up, int cap,
                       _Atomic uint32_t *shared)
{
    *l = (cpu_q8n_list){ .max = -INFINITY, .thr = -INFINITY, .cap = cap, .grp = grp, .up = up,
                         .shared = shared };
}

/* the list's max, which has just risen, into thr and the shared value */
static void publish(cpu_q8n_list *l)
{
    if (l->max > l->thr)
        l->thr = l->max;
    if (!l->shared || l->max != l->max)
        return;
    const uint32_t k = cpu_q8n_key(l->max);
    uint32_t cur = atomic_load_explicit(l->shared, memory_order_relaxed);
    while (cur < k && !atomic_compare_exchange_weak_explicit(l->shared, &cur, k,
                                                              memory_order_relaxed,
                                                              memory_order_relaxed))
        ;
}

/* thr raised to the shared value where that is larger */
static void refresh(cpu_q8n_list *l)
{
    if (!l->shared)
        return;
    const float s = cpu_q8n_unkey(atomic_load_explicit(l->shared, memory_order_relaxed));
    if (s > l->thr)
        l->thr = s;
}

/* g's codes and scales */
static const uint8_t *grp_codes(const cpu_q8n *s, int64_t g)
{
    return s->data + (uint64_t)g * group_stride(s->nb);
}

void cpu_q8n_ref(const cpu_q8n *s, int64_t g0, int64_t g1, const uint8_t *act, uint64_t arb,
                 int nt, const float *dh, const int32_t *sx, const float *tb, const float *e2f,
                 float *lo, float *hi, int64_t ldy)
{
    const int64_t nb = s->nb;
    for (int64_t g = g0; g < g1; g++) {
        const uint8_t *q = grp_codes(s, g), *sc = q + (uint64_t)nb * CPU_Q8N_CODES;
        for (int j = 0; j < CPU_Q8N_G && g * CPU_Q8N_G + j < s->N; j++)
            for (int t = 0; t < nt; t++) {
                float A = 0;
                double B = 0;
                for (int64_t b = 0; b < nb; b++) {
                    const uint8_t *x = act + (uint64_t)t * arb + (uint64_t)b * QB + 2;
                    const uint8_t *c = q + (uint64_t)b * CPU_Q8N_CODES;
                    int32_t D = 0;
                    for (int m = 0; m < 4; m++)
                        for (int i = 0; i < 4; i++) {
                            const uint8_t v = c[64 * m + 4 * j + i];
                            D += (v & 15) * (int8_t)x[8 * m + i] + (v >> 4) * (int8_t)x[8 * m + 4 + i];
                        }
                    const float dw = quant_f16_to_f32(
                        (uint16_t)(sc[b * 32 + 2 * j] | sc[b * 32 + 2 * j + 1] << 8));
                    A = fmaf((float)(32 * D - sx[t * nb + b]), dw * dh[t * nb + b], A);
                    B += fabs((double)dw) * (double)tb[t * nb + b];
                }
                const double W = B + (double)e2f[t];
                const int64_t o = t * ldy + g * CPU_Q8N_G + j;
                lo[o] = float_down((double)A - W);
                hi[o] = float_up((double)A + W);
            }
    }
}

/* a group pushed: when full, drop what the threshold has passed, then append */
static void list_push(cpu_q8n_list *l, int32_t g, float up)
{
    if (l->n == l->cap) {
        refresh(l);
        l->n = cpu_q8s_keep(l->grp, l->up, l->n, l->thr);
        if (l->n == l->cap) {
            l->bad = true;
            return;
        }
    }
    l->grp[l->n] = g;
    l->up[l->n++] = up;
}

/* Whether group g may hold a token's largest e_r: N X + e2 >= thr for
 * some token (or NaN), each product and add within 2^-24 of its value, which
 * the factor 1 + 2^-12 covers. Thresholds only rise, so a group ruled out
 * when it is prefetched stays out. */
static inline bool grp_open(const cpu_q8n *s, int64_t g, int nt, const float *xn,
                            const float *e2f, cpu_q8n_list *l)
{
    const float n = s->norm[g], k = 1.0f + 0x1p-12f;
    for (int t = 0; t < nt; t++) {
        refresh(&l[t]);
        if (!((n * xn[t]) * k + e2f[t] * k < l[t].thr))
            return true;
    }
    return false;
}

#if defined(__x86_64__)
#define VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define RUP (_MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC)
#define RDN (_MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)

VNNI static inline __m512i bc4(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* One group against nt <= 4 tokens: A and B of each */
VNNI static inline __attribute__((always_inline)) void grp(const uint8_t *q, const uint8_t *sc,
                                                          int64_t nb, const uint8_t *act,
                                                          uint64_t arb, const float *dh,
                                                          const int32_t *sx, const float *tb,
                                                          const int nt, __m512 *A, __m512 *B)
{
    const __m512i m4 = _mm512_set1_epi8(15);
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++)
        A[t] = B[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++, q += CPU_Q8N_CODES) {
        __m512i l[4], h[4];
#pragma GCC unroll 4
        for (int m = 0; m < 4; m++) {
            const __m512i v = _mm512_load_si512(q + 64 * m);
            l[m] = _mm512_and_si512(v, m4);
            h[m] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(sc + b * 32)));
        const __m512 adw = _mm512_abs_ps(dw);
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const uint8_t *x = act + (uint64_t)t * arb + (uint64_t)b * QB + 2;
            __m512i s0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), l[0], bc4(x));
            __m512i s1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), h[0], bc4(x + 4));
            s0 = _mm512_dpbusd_epi32(s0, l[1], bc4(x + 8));
            s1 = _mm512_dpbusd_epi32(s1, h[1], bc4(x + 12));
            s0 = _mm512_dpbusd_epi32(s0, l[2], bc4(x + 16));
            s1 = _mm512_dpbusd_epi32(s1, h[2], bc4(x + 20));
            s0 = _mm512_dpbusd_epi32(s0, l[3], bc4(x + 24));
            s1 = _mm512_dpbusd_epi32(s1, h[3], bc4(x + 28));
            const __m512i I = _mm512_sub_epi32(_mm512_slli_epi32(_mm512_add_epi32(s0, s1), 5),
                                               _mm512_set1_epi32(sx[t * nb + b]));
            A[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I),
                                   _mm512_mul_ps(dw, _mm512_set1_ps(dh[t * nb + b])), A[t]);
            B[t] = _mm512_fmadd_round_ps(adw, _mm512_set1_ps(tb[t * nb + b]), B[t], RUP);
        }
    }
}

VNNI void cpu_q8n_avx512vnni(const cpu_q8n *s, int64_t g0, int64_t g1, const uint8_t *act,
                             uint64_t arb, int nt, const float *dh, const int32_t *sx,
                             const float *tb, const float *e2f, const float *xn,
                             cpu_q8n_list *l, const int32_t *ban, int n_ban, float *lo, float *hi,
                             int64_t ldy)
{
    if (!l || lo)       /* groups are passed over for lists; the intervals are every row's */
        xn = NULL;
    const int64_t nb = s->nb;
    const uint64_t gs = group_stride(nb);
    int bi = 0;
    while (bi < n_ban && ban[bi] < g0 * CPU_Q8N_G)
        bi++;
    __m512 z = _mm512_setzero_ps();     /* NaN once a value is not finite */
    for (int64_t g = g0; g < g1; g++) {
        const uint8_t *q = s->data + (uint64_t)g * gs, *sc = q + (uint64_t)nb * CPU_Q8N_CODES;
        const int64_t base = g * CPU_Q8N_G;
        const int64_t live = s->N - base < CPU_Q8N_G ? s->N - base : CPU_Q8N_G;
        const __mmask16 valid = (__mmask16)(live == CPU_Q8N_G ? 0xffff : (1u << live) - 1);
        __mmask16 open = valid;
        for (; bi < n_ban && ban[bi] < base + CPU_Q8N_G; bi++)
            open &= (__mmask16) ~(1u << (ban[bi] - base));
        if (xn && !grp_open(s, g, nt, xn, e2f, l)) {
            l[0].passed++;
            continue;
        }
        for (int t0 = 0; t0 < nt; t0 += 4) {
            const int n = nt - t0 < 4 ? nt - t0 : 4;
            const uint8_t *at = act + (uint64_t)t0 * arb;
            const float *dt = dh + t0 * nb, *bt = tb + t0 * nb;
            const int32_t *st = sx + t0 * nb;
            __m512 A[4], B[4];
            switch (n) {
            case 1: grp(q, sc, nb, at, arb, dt, st, bt, 1, A, B); break;
            case 2: grp(q, sc, nb, at, arb, dt, st, bt, 2, A, B); break;
            case 3: grp(q, sc, nb, at, arb, dt, st, bt, 3, A, B); break;
            default: grp(q, sc, nb, at, arb, dt, st, bt, 4, A, B); break;
            }
            for (int u = 0; u < n; u++) {
                const int t = t0 + u;
                const __m512 W = _mm512_add_round_ps(B[u], _mm512_set1_ps(e2f[t]), RUP);
                const __m512 vl = _mm512_sub_round_ps(A[u], W, RDN);
                const __m512 vh = _mm512_add_round_ps(A[u], W, RUP);
                if (lo) {
                    _mm512_mask_storeu_ps(lo + (int64_t)t * ldy + base, valid, vl);
                    _mm512_mask_storeu_ps(hi + (int64_t)t * ldy + base, valid, vh);
                }
                if (!l || !open)
                    continue;
                cpu_q8n_list *lt = &l[t];
                /* NaN where either end is (or W is infinite) */
                z = _mm512_mask3_fmadd_ps(_mm512_add_ps(vl, vh), _mm512_setzero_ps(), z, valid);
                if (_mm512_mask_cmp_ps_mask(open, vl, _mm512_set1_ps(lt->max), _CMP_GT_OQ)) {
                    lt->max = _mm512_mask_reduce_max_ps(open, vl);
                    publish(lt);
                }
                __mmask16 m = _mm512_mask_cmp_ps_mask(open, vh, _mm512_set1_ps(lt->thr), _CMP_GE_OQ);
                if (m && lt->shared) {  /* another thread's maximum may rule the group out */
                    refresh(lt);
                    m = _mm512_mask_cmp_ps_mask(open, vh, _mm512_set1_ps(lt->thr), _CMP_GE_OQ);
                }
                if (m)
                    list_push(lt, (int32_t)g, _mm512_mask_reduce_max_ps(m, vh));
            }
        }
        /* every token's list overflowed: the rest of the groups would not
         * be read (the caller takes the int8 screen) */
        bool all_bad = l != NULL;
        for (int t = 0; all_bad && t < nt; t++)
            all_bad = l[t].bad;
        if (all_bad)
            return;
    }
    if (l && _mm512_cmp_ps_mask(z, z, _CMP_UNORD_Q))
        for (int t = 0; t < nt; t++)
            l[t].bad = true;
}

/* ------------------------------------------------------------- AVX2 */

#define AVX2F __attribute__((target("avx2,fma,f16c")))
#define NIB_PF_GROUPS 4        /* how far ahead cpu_q8n_avx2 prefetches, in groups */

AVX2F static inline __m256i bc4y(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* x's codes as maddubs wants them beside the copy's lanes: xb[(t nb + b) 8
 * + k] holds bytes 4k .. 4k + 3 of token t's block b in every lane. Made
 * once a call, so that the products read them as plain 32-byte loads, not
 * as a broadcast from memory per 32 products (as the kernel did before
 * session 43; on a Zen 3 those broadcasts cost about as much as the
 * products: bench/results/2026-12-07-cpu-zen3-mtp/). */
AVX2F static void x_bcast(const uint8_t *act, uint64_t arb, int nt, int64_t nb, __m256i *xb)
{
    for (int t = 0; t < nt; t++)
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *x = act + (uint64_t)t * arb + (uint64_t)b * QB + 2;
            for (int k = 0; k < 8; k++)
                _mm256_store_si256(xb + ((int64_t)t * nb + b) * 8 + k, bc4y(x + 4 * k));
        }
}

/* Rows 8 hf .. 8 hf + 7 of one group against nt <= 4 tokens (their xb
 * vectors from x_bcast's xt): A and B of each. u x pairs are at most 2 *
 * 15 * 128 = 3,840 in magnitude, so the 8 vpmaddubsw results of a block
 * sum exactly in 16 bits (30,720) before one vpmaddwd: the same integer
 * sums as vpdpbusd. The codes are taken a vector (two of x's 4-byte
 * groups) at a time for every token, so that few registers are live. B
 * in round-to-nearest (AVX2 has no embedded rounding): cpu_q8n_avx2
 * widens W for it; its chain runs after A's, in the same block order. */
AVX2F static inline __attribute__((always_inline)) void grp_half(const uint8_t *q,
                                                                const uint8_t *sc, int64_t nb,
                                                                int hf, const __m256i *xt,
                                                                const float *dh,
                                                                const int32_t *sx,
                                                                const float *tb, const int nt,
                                                                __m256 *A, __m256 *B)
{
    /* vpmaddwd by 32 (not 1): the pairs' sums and the shift by 5 in one */
    const __m256i m4 = _mm256_set1_epi8(15), k32 = _mm256_set1_epi16(32);
    const __m256 sign = _mm256_set1_ps(-0.0f);
#pragma GCC unroll 4
    for (int t = 0; t < nt; t++)
        A[t] = B[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, q += CPU_Q8N_CODES) {
        __m256i s[4];
#pragma GCC unroll 4
        for (int m = 0; m < 4; m++) {
            const __m256i v = _mm256_load_si256((const __m256i *)(q + 64 * m + 32 * hf));
            const __m256i l = _mm256_and_si256(v, m4);
            const __m256i h = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
#pragma GCC unroll 4
            for (int t = 0; t < nt; t++) {
                const __m256i *x = xt + ((int64_t)t * nb + b) * 8 + 2 * m;
                const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(l, x[0]),
                                                   _mm256_maddubs_epi16(h, x[1]));
                s[t] = m ? _mm256_add_epi16(s[t], p) : p;
                /* each sum in a register as written: else GCC regroups the
                 * adds of a block and keeps its 32 products live, spilled */
                __asm__("" : "+x"(s[t]));
            }
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(sc + b * 32 + 16 * hf)));
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++) {
            const __m256i I = _mm256_sub_epi32(_mm256_madd_epi16(s[t], k32),
                                               _mm256_set1_epi32(sx[t * nb + b]));
            A[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(I),
                                   _mm256_mul_ps(dw, _mm256_set1_ps(dh[t * nb + b])), A[t]);
        }
    }
    for (int64_t b = 0; b < nb; b++) {
        const __m256 adw = _mm256_andnot_ps(
            sign, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(sc + b * 32 + 16 * hf))));
#pragma GCC unroll 4
        for (int t = 0; t < nt; t++)
            B[t] = _mm256_fmadd_ps(adw, _mm256_set1_ps(tb[t * nb + b]), B[t]);
    }
}

/* one token's ends of a group from both halves' A and B: lo/hi of 16 rows */
AVX2F static inline void ends(const __m256 *A, const __m256 *B, float e2f, float *lo, float *hi)
{
    /* W = (B + e2)(1 + 2^-12) + |A| 2^-12 in round-to-nearest: B's chain
     * of at most 4,096 roundings (K <= 131,072) is within 2^-12 of its
     * value, and every rounding of these lines and of A -+ W within 2^-24
     * of |A| + W */
    const __m256 sign = _mm256_set1_ps(-0.0f), g = _mm256_set1_ps(0x1p-12f);
    const __m256 one = _mm256_set1_ps(1.0f + 0x1p-12f), e = _mm256_set1_ps(e2f);
    for (int hf = 0; hf < 2; hf++) {
        const __m256 W = _mm256_fmadd_ps(_mm256_andnot_ps(sign, A[hf]), g,
                                         _mm256_mul_ps(_mm256_add_ps(B[hf], e), one));
        _mm256_storeu_ps(lo + 8 * hf, _mm256_sub_ps(A[hf], W));
        _mm256_storeu_ps(hi + 8 * hf, _mm256_add_ps(A[hf], W));
    }
}

/* the largest of 16 lanes (v0, v1) whose mask lanes (m0, m1) are set,
 * NaN lanes left out; -inf if none */
AVX2F static inline float max_open(__m256 v0, __m256 v1, __m256 m0, __m256 m1)
{
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    /* vmaxps gives its second operand where either is NaN */
    const __m256 x = _mm256_max_ps(_mm256_max_ps(_mm256_blendv_ps(ninf, v0, m0), ninf),
                                   _mm256_max_ps(_mm256_blendv_ps(ninf, v1, m1), ninf));
    __m128 r = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    r = _mm_max_ps(r, _mm_movehl_ps(r, r));
    return _mm_cvtss_f32(_mm_max_ss(r, _mm_movehdup_ps(r)));
}

AVX2F void cpu_q8n_avx2(const cpu_q8n *s, int64_t g0, int64_t g1, const uint8_t *act,
                        uint64_t arb, int nt, const float *dh, const int32_t *sx, const float *tb,
                        const float *e2f, const float *xn, cpu_q8n_list *l, const int32_t *ban,
                        int n_ban, float *lo, float *hi, int64_t ldy)
{
    if (!l || lo)       /* groups are passed over for lists; the intervals are every row's */
        xn = NULL;
    const int64_t nb = s->nb;
    const uint64_t gs = group_stride(nb);
    __m256i *xb = aligned_alloc(32, (size_t)nt * (size_t)nb * 8 * sizeof(__m256i));
    if (!xb) {          /* out of memory: intervals that rule nothing out, lists that give up */
        for (int t = 0; t < nt; t++) {
            if (l)
                l[t].bad = true;
            for (int64_t r = g0 * CPU_Q8N_G; lo && r < g1 * CPU_Q8N_G && r < s->N; r++) {
                lo[(int64_t)t * ldy + r] = -INFINITY;
                hi[(int64_t)t * ldy + r] = INFINITY;
            }
        }
        return;
    }
    x_bcast(act, arb, nt, nb, xb);
    int bi = 0;
    while (bi < n_ban && ban[bi] < g0 * CPU_Q8N_G)
        bi++;
    bool nan = false;
    for (int64_t g = g0; g < g1; g++) {
        const uint8_t *q = s->data + (uint64_t)g * gs, *sc = q + (uint64_t)nb * CPU_Q8N_CODES;
        const int64_t base = g * CPU_Q8N_G;
        /* the copy streams through once a step: fetched ahead and marked
         * not to be kept (prefetchnta), so that it does not push the
         * trunk's weights out of the caches */
        if (g + NIB_PF_GROUPS < g1 && (!xn || grp_open(s, g + NIB_PF_GROUPS, nt, xn, e2f, l)))
            for (uint64_t o = 0; o < gs; o += 64)
                _mm_prefetch((const char *)q + NIB_PF_GROUPS * gs + o, _MM_HINT_NTA);
        const int64_t live = s->N - base < CPU_Q8N_G ? s->N - base : CPU_Q8N_G;
        const uint32_t valid = live == CPU_Q8N_G ? 0xffffu : (1u << live) - 1;
        uint32_t open = valid;
        for (; bi < n_ban && ban[bi] < base + CPU_Q8N_G; bi++)
            open &= ~(1u << (ban[bi] - base));
        if (xn && !grp_open(s, g, nt, xn, e2f, l)) {
            l[0].passed++;
            continue;
        }
        const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
        const __m256 om0 = _mm256_castsi256_ps(
            _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)open), bit), bit));
        const __m256 om1 = _mm256_castsi256_ps(
            _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)(open >> 8)), bit), bit));
        for (int t0 = 0; t0 < nt; t0 += 4) {
            const int n = nt - t0 < 4 ? nt - t0 : 4;
            const __m256i *at = xb + (int64_t)t0 * nb * 8;
            const float *dt = dh + t0 * nb, *bt = tb + t0 * nb;
            const int32_t *st = sx + t0 * nb;
            __m256 A[2][4], B[2][4];
            for (int hf = 0; hf < 2; hf++)
                switch (n) {
                case 1: grp_half(q, sc, nb, hf, at, dt, st, bt, 1, A[hf], B[hf]); break;
                case 2: grp_half(q, sc, nb, hf, at, dt, st, bt, 2, A[hf], B[hf]); break;
                case 3: grp_half(q, sc, nb, hf, at, dt, st, bt, 3, A[hf], B[hf]); break;
                default: grp_half(q, sc, nb, hf, at, dt, st, bt, 4, A[hf], B[hf]); break;
                }
            for (int u = 0; u < n; u++) {
                const int t = t0 + u;
                const __m256 a2[2] = { A[0][u], A[1][u] }, b2[2] = { B[0][u], B[1][u] };
                float vl[16], vh[16];
                ends(a2, b2, e2f[t], vl, vh);
                if (lo)
                    for (int j = 0; j < live; j++) {
                        lo[(int64_t)t * ldy + base + j] = vl[j];
                        hi[(int64_t)t * ldy + base + j] = vh[j];
                    }
                if (!l || !open)
                    continue;
                cpu_q8n_list *lt = &l[t];
                /* in vectors: this ran as scalar loops over the 16 rows for a
                 * fifth of a verify pass's time (4 tokens, the default model) */
                const __m256 l0 = _mm256_loadu_ps(vl), l1 = _mm256_loadu_ps(vl + 8);
                const __m256 h0 = _mm256_loadu_ps(vh), h1 = _mm256_loadu_ps(vh + 8);
                const __m256 s0 = _mm256_add_ps(l0, h0), s1 = _mm256_add_ps(l1, h1);
                /* NaN where either end is, or W is infinite */
                nan |= (((uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(s0, s0, _CMP_UNORD_Q)) |
                         (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(s1, s1, _CMP_UNORD_Q)) << 8) &
                        valid) != 0;
                const float gmax = max_open(l0, l1, om0, om1);
                if (gmax > lt->max) {
                    lt->max = gmax;
                    publish(lt);
                }
                /* the usual case: no open row reaches the threshold */
                if (!(max_open(h0, h1, om0, om1) >= lt->thr))
                    continue;
                float up = -INFINITY;
                for (int k = 0; k < 2; k++) {
                    if (k) {                /* another thread's maximum may rule the group out */
                        if (up == -INFINITY || !lt->shared)
                            break;
                        refresh(lt);
                        up = -INFINITY;
                    }
                    for (int j = 0; j < live; j++)
                        if (open >> j & 1 && vh[j] >= lt->thr && vh[j] > up)
                            up = vh[j];
                }
                if (up != -INFINITY)
                    list_push(lt, (int32_t)g, up);
            }
        }
        bool all_bad = l != NULL;
        for (int t = 0; all_bad && t < nt; t++)
            all_bad = l[t].bad;
        if (all_bad)
            break;
    }
    free(xb);
    if (l && nan)
        for (int t = 0; t < nt; t++)
            l[t].bad = true;
}
#else
void cpu_q8n_avx512vnni(const cpu_q8n *s, int64_t g0, int64_t g1, const uint8_t *act,
                        uint64_t arb, int nt, const float *dh, const int32_t *sx, const float *tb,
                        const float *e2f, const float *xn, cpu_q8n_list *l, const int32_t *ban,
                        int n_ban, float *lo, float *hi, int64_t ldy)
{
    (void)s, (void)g0, (void)g1, (void)act, (void)arb, (void)nt, (void)dh, (void)sx, (void)tb;
    (void)e2f, (void)xn, (void)l, (void)ban, (void)n_ban, (void)lo, (void)hi, (void)ldy;
    abort();        /* never chosen off x86-64 */
}
void cpu_q8n_avx2(const cpu_q8n *s, int64_t g0, int64_t g1, const uint8_t *act, uint64_t arb,
                  int nt, const float *dh, const int32_t *sx, const float *tb, const float *e2f,
                  const float *xn, cpu_q8n_list *l, const int32_t *ban, int n_ban, float *lo,
                  float *hi, int64_t ldy)
{
    cpu_q8n_avx512vnni(s, g0, g1, act, arb, nt, dh, sx, tb, e2f, xn, l, ban, n_ban, lo, hi, ldy);
}
#endif
