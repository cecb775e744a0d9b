/* cpu_screen_q8.c: the screen of cpu_screen_q8.h (a Q8_0 head's greedy
 * choice from approximate products and a bound, exact products for the
 * near-ties only). */
#include "cpu_screen_q8.h"

#include "../../quant/fp16.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

enum { QB = 34 };      /* a Q8_0 block: f16 scale, 32 codes */

/* a block's f16 scale as f32 (exact) */
static float h2f(const uint8_t *p)
{
    return quant_f16_to_f32((uint16_t)(p[0] | p[1] << 8));
}

uint64_t cpu_q8s_bytes(int64_t N, int64_t K)
{
    return (uint64_t)((N + CPU_Q8S_G - 1) / CPU_Q8S_G) * (uint64_t)(K / 32) * CPU_Q8S_BLK;
}

void *cpu_q8s_alloc(uint64_t bytes)
{
    /* 2 MiB aligned and advised into huge pages where the kernel allows:
     * the screen streams the whole copy each step, and the build touches it
     * all once (both far from free in 4 KiB pages) */
    const size_t huge = (size_t)2 << 20, alloc = ((size_t)bytes + huge - 1) / huge * huge;
    void *mem = NULL;
    if (posix_memalign(&mem, huge, alloc))
        return NULL;
#if defined(MADV_HUGEPAGE)
    madvise(mem, alloc, MADV_HUGEPAGE);
#endif
    return mem;
}

int cpu_q8s_build(cpu_q8s *s, const uint8_t *w, uint64_t wrb, int64_t N, int64_t K)
{
    memset(s, 0, sizeof *s);
    const int64_t nb = K / 32, ng = (N + CPU_Q8S_G - 1) / CPU_Q8S_G;
    uint8_t *d = cpu_q8s_alloc(cpu_q8s_bytes(N, K));
    if (!d)
        return -1;
    float wmax = 0;
    bool nan = false;
    /* rows past N (the last group's): zero codes (+128) and zero scales */
    for (int64_t b = 0; N % CPU_Q8S_G && b < nb; b++) {
        uint8_t *q = d + ((uint64_t)(ng - 1) * (uint64_t)nb + (uint64_t)b) * CPU_Q8S_BLK;
        memset(q, 0x80, 512);
        memset(q + 512, 0, 64);
    }
    for (int64_t r = 0; r < N; r++) {
        const int64_t g = r / CPU_Q8S_G, j = r % CPU_Q8S_G;
        const uint8_t *row = w + (uint64_t)r * wrb;
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = row + (uint64_t)b * QB;
            uint8_t *q = d + ((uint64_t)g * (uint64_t)nb + (uint64_t)b) * CPU_Q8S_BLK;
            const float sc = h2f(blk);
            memcpy(q + 512 + 4 * j, &sc, 4);
            const float m = fabsf(sc);
            if (m != m)
                nan = true;
            else if (m > wmax)
                wmax = m;
            for (int k = 0; k < 8; k++) {
                uint32_t v;
                memcpy(&v, blk + 2 + 4 * k, 4);
                v ^= 0x80808080u;
                memcpy(q + 64 * k + 4 * j, &v, 4);
            }
        }
    }
    *s = (cpu_q8s){ .N = N, .K = K, .nb = nb, .ng = ng, .data = d, .wmax = nan ? NAN : wmax };
    return 0;
}

void cpu_q8s_free(cpu_q8s *s)
{
    free(s->data);
    memset(s, 0, sizeof *s);
}

/* gamma(n) = n u / (1 - n u), u = 2^-24: the bound on n roundings */
static double gamma_n(double n)
{
    const double u = 0x1p-24;
    return n * u / (1 - n * u);
}

double cpu_q8s_token(const cpu_q8s *s, const uint8_t *a, float *dx, int32_t *cx)
{
    double c = 0;
    bool odd = false;
    for (int64_t b = 0; b < s->nb; b++) {
        const uint8_t *blk = a + b * QB;
        dx[b] = h2f(blk);
        int32_t sum = 0, abs = 0;
        for (int i = 0; i < 32; i++) {
            const int v = (int8_t)blk[2 + i];
            sum += v;
            abs += v < 0 ? -v : v;
            odd |= v == -128;
        }
        cx[b] = 128 * sum;
        c += fabs((double)dx[b]) * 128.0 * abs;
    }
    const double nb = (double)s->nb;
    /* the two chains' bound, a margin for this double arithmetic */
    const double e2 = 2.0 * (gamma_n(nb) + gamma_n(nb + 3)) * (double)s->wmax * c * (1 + 0x1p-40);
    return isfinite(e2) && !odd ? e2 : INFINITY;
}

/* the largest float at or below t */
static float float_at_or_below(double t)
{
    float f = (float)t;
    if ((double)f > t)
        f = nextafterf(f, -INFINITY);
    return f;
}

void cpu_q8s_cand_init(cpu_q8s_cand *c, double e2, int32_t *idx, float *val, int cap, int k)
{
    *c = (cpu_q8s_cand){ .max = -INFINITY, .thr = -INFINITY, .e2 = e2,
                         .cap = cap < CPU_Q8S_CAP_MAX ? cap : CPU_Q8S_CAP_MAX, .k = k,
                         .bad = !isfinite(e2) || k < 1 || k > cap, .idx = idx, .val = val };
}

float cpu_q8s_kth(const float *v, int n, int k)
{
    float a[CPU_Q8S_CAP_MAX];
    memcpy(a, v, sizeof(float) * (size_t)n);
    int lo = 0, hi = n - 1;
    const int want = k - 1;             /* descending order's index */
    while (lo < hi) {                   /* quickselect, largest first (values are finite) */
        const float p = a[(lo + hi) / 2];
        int i = lo, j = hi;
        while (i <= j) {
            while (a[i] > p)
                i++;
            while (a[j] < p)
                j--;
            if (i <= j) {
                const float t = a[i];
                a[i++] = a[j];
                a[j--] = t;
            }
        }
        if (want <= j)
            hi = j;
        else if (want >= i)
            lo = i;
        else
            break;
    }
    return a[want];
}

/* k > 1: a full list keeps what is within e2 of its k-th largest value */
static void cand_compact(cpu_q8s_cand *c)
{
    if (c->n < c->k)
        return;
    c->thr = float_at_or_below((double)cpu_q8s_kth(c->val, c->n, c->k) - c->e2);
    c->n = cpu_q8s_keep(c->idx, c->val, c->n, c->thr);
}

/* k > 1: as cand_push */
static void cand_push_k(cpu_q8s_cand *c, int64_t base, const float *v, uint32_t mask)
{
    for (int l = 0; l < CPU_Q8S_G; l++) {
        if (!(mask >> l & 1) || !(v[l] >= c->thr))
            continue;
        if (c->n == c->cap) {
            cand_compact(c);
            if (!(v[l] >= c->thr))
                continue;
            if (c->n == c->cap) {
                c->bad = true;
                return;
            }
        }
        c->idx[c->n] = (int32_t)(base + l);
        c->val[c->n++] = v[l];
    }
}

/* Lanes of `mask` (rows base + lane, values v[lane]) met the threshold. */
static void cand_push(cpu_q8s_cand *c, int64_t base, const float *v, uint32_t mask)
{
    if (c->k > 1) {
        cand_push_k(c, base, v, mask);
        return;
    }
    for (int l = 0; l < CPU_Q8S_G; l++) {
        if (!(mask >> l & 1))
            continue;
        if (v[l] > c->max) {
            c->max = v[l];
            c->thr = float_at_or_below((double)c->max - c->e2);
        }
        if (!(v[l] >= c->thr))
            continue;
        if (c->n == c->cap) {           /* drop what the threshold has passed */
            c->n = cpu_q8s_keep(c->idx, c->val, c->n, c->thr);
            if (c->n == c->cap) {
                c->bad = true;
                return;
            }
        }
        c->idx[c->n] = (int32_t)(base + l);
        c->val[c->n++] = v[l];
    }
}

void cpu_q8s_ref(const cpu_q8s *s, int64_t g0, int64_t g1, const uint8_t *act, uint64_t arb,
                 int nt, const float *dx, const int32_t *cx, float *y, int64_t ldy)
{
    const int64_t nb = s->nb;
    for (int64_t g = g0; g < g1; g++)
        for (int j = 0; j < CPU_Q8S_G && g * CPU_Q8S_G + j < s->N; j++)
            for (int t = 0; t < nt; t++) {
                float acc = 0;
                for (int64_t b = 0; b < nb; b++) {
                    const uint8_t *q = s->data + ((uint64_t)g * (uint64_t)nb + (uint64_t)b) * CPU_Q8S_BLK;
                    const uint8_t *x = act + (uint64_t)t * arb + (uint64_t)b * QB + 2;
                    int32_t isum = 0;
                    for (int i = 0; i < 32; i++)
                        isum += q[64 * (i / 4) + 4 * j + i % 4] * (int8_t)x[i];
                    isum -= cx[t * nb + b];
                    const float d = ((const float *)(q + 512))[j] * dx[t * nb + b];
                    acc = fmaf((float)isum, d, acc);
                }
                y[t * ldy + g * CPU_Q8S_G + j] = acc;
            }
}

#if defined(__x86_64__)
#define VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

VNNI static inline __m512i bc4(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* token T's exact block sum against the group's 8 code vectors */
#define Q8S_ISUM(S, T) do {                                                         \
        const uint8_t *x_ = act + (uint64_t)(T) * arb + (uint64_t)b * QB + 2;      \
        __m512i s0_ = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w0, bc4(x_));    \
        __m512i s1_ = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w1, bc4(x_ + 4)); \
        s0_ = _mm512_dpbusd_epi32(s0_, w2, bc4(x_ + 8));                            \
        s1_ = _mm512_dpbusd_epi32(s1_, w3, bc4(x_ + 12));                           \
        s0_ = _mm512_dpbusd_epi32(s0_, w4, bc4(x_ + 16));                           \
        s1_ = _mm512_dpbusd_epi32(s1_, w5, bc4(x_ + 20));                           \
        s0_ = _mm512_dpbusd_epi32(s0_, w6, bc4(x_ + 24));                           \
        s1_ = _mm512_dpbusd_epi32(s1_, w7, bc4(x_ + 28));                           \
        S = _mm512_sub_epi32(_mm512_add_epi32(s0_, s1_),                            \
                             _mm512_set1_epi32(cx[(T) * nb + b]));                  \
    } while (0)
#define Q8S_ACC(A, S, T) \
    A = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S), _mm512_mul_ps(dw, _mm512_set1_ps(dx[(T) * nb + b])), A)

/* One group against nt <= 4 tokens (t0 ..): the approximations to a[0..nt). */
VNNI static inline __attribute__((always_inline)) void grp(const uint8_t *q, int64_t nb,
                                                          const uint8_t *act, uint64_t arb,
                                                          const float *dx, const int32_t *cx,
                                                          const int nt, __m512 *a)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t b = 0; b < nb; b++, q += CPU_Q8S_BLK) {
        const __m512i w0 = _mm512_load_si512(q), w1 = _mm512_load_si512(q + 64),
                      w2 = _mm512_load_si512(q + 128), w3 = _mm512_load_si512(q + 192),
                      w4 = _mm512_load_si512(q + 256), w5 = _mm512_load_si512(q + 320),
                      w6 = _mm512_load_si512(q + 384), w7 = _mm512_load_si512(q + 448);
        const __m512 dw = _mm512_load_ps((const float *)(q + 512));
        __m512i s0, s1, s2, s3;
        Q8S_ISUM(s0, 0);
        if (nt > 1)
            Q8S_ISUM(s1, 1);
        if (nt > 2)
            Q8S_ISUM(s2, 2);
        if (nt > 3)
            Q8S_ISUM(s3, 3);
        Q8S_ACC(a0, s0, 0);
        if (nt > 1)
            Q8S_ACC(a1, s1, 1);
        if (nt > 2)
            Q8S_ACC(a2, s2, 2);
        if (nt > 3)
            Q8S_ACC(a3, s3, 3);
    }
    a[0] = a0;
    if (nt > 1)
        a[1] = a1;
    if (nt > 2)
        a[2] = a2;
    if (nt > 3)
        a[3] = a3;
}

VNNI void cpu_q8s_avx512vnni(const cpu_q8s *s, int64_t g0, int64_t g1, const uint8_t *act,
                             uint64_t arb, int nt, const float *dx, const int32_t *cx,
                             cpu_q8s_cand *c, const int32_t *ban, int n_ban, float *y,
                             int64_t ldy)
{
    const int64_t nb = s->nb;
    int bi = 0;                         /* the first banned row at or past the group */
    while (bi < n_ban && ban[bi] < g0 * CPU_Q8S_G)
        bi++;
    __m512 z = _mm512_setzero_ps();     /* 0 * every approximation, summed: NaN if one is not finite */
    for (int64_t g = g0; g < g1; g++) {
        const uint8_t *q = s->data + (uint64_t)g * (uint64_t)nb * CPU_Q8S_BLK;
        const int64_t base = g * CPU_Q8S_G;
        const int64_t live = s->N - base < CPU_Q8S_G ? s->N - base : CPU_Q8S_G;
        const __mmask16 valid = (__mmask16)(live == CPU_Q8S_G ? 0xffff : (1u << live) - 1);
        __mmask16 open = valid;         /* lanes that may be candidates */
        for (; bi < n_ban && ban[bi] < base + CPU_Q8S_G; bi++)
            open &= (__mmask16) ~(1u << (ban[bi] - base));
        /* the group's 4.5 KiB (at 256 inputs) stay in L1 across the tokens */
        for (int t0 = 0; t0 < nt; t0 += 4) {
            const int n = nt - t0 < 4 ? nt - t0 : 4;
            const uint8_t *at = act + (uint64_t)t0 * arb;
            const float *dt = dx + t0 * nb;
            const int32_t *ct = cx + t0 * nb;
            __m512 a[4];
            switch (n) {
            case 1: grp(q, nb, at, arb, dt, ct, 1, a); break;
            case 2: grp(q, nb, at, arb, dt, ct, 2, a); break;
            case 3: grp(q, nb, at, arb, dt, ct, 3, a); break;
            default: grp(q, nb, at, arb, dt, ct, 4, a); break;
            }
            for (int t = 0; t < n; t++) {
                if (y)
                    _mm512_mask_storeu_ps(y + (int64_t)(t0 + t) * ldy + base, valid, a[t]);
                if (!c)
                    continue;
                cpu_q8s_cand *ck = &c[t0 + t];
                z = _mm512_fmadd_ps(a[t], _mm512_setzero_ps(), z);
                const __mmask16 m = _mm512_mask_cmp_ps_mask(open, a[t], _mm512_set1_ps(ck->thr),
                                                            _CMP_GE_OQ);
                if (m) {
                    float v[CPU_Q8S_G];
                    _mm512_storeu_ps(v, a[t]);
                    cand_push(ck, base, v, m);
                }
            }
        }
    }
    if (c && _mm512_cmp_ps_mask(z, z, _CMP_UNORD_Q))
        for (int t = 0; t < nt; t++)
            c[t].bad = true;
}
#else
void cpu_q8s_avx512vnni(const cpu_q8s *s, int64_t g0, int64_t g1, const uint8_t *act,
                        uint64_t arb, int nt, const float *dx, const int32_t *cx,
                        cpu_q8s_cand *c, const int32_t *ban, int n_ban, float *y, int64_t ldy)
{
    (void)s, (void)g0, (void)g1, (void)act, (void)arb, (void)nt, (void)dx, (void)cx, (void)c;
    (void)ban, (void)n_ban, (void)y, (void)ldy;
    abort();        /* never chosen off x86-64 */
}
#endif
