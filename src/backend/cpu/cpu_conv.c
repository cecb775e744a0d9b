/* cpu_conv.c: the CPU backend's short causal convolution (be_ssm_conv):
 * a depthwise conv of Kc taps over the rows of x, continuing from a tail of
 * the Kc-1 previous raw rows per channel, which it updates.
 *
 * Layout and order. Channels are independent, so 16 of them are one vector
 * (a GCC vector type: one register with AVX-512, two with AVX2, four with
 * SSE2) and every lane runs the reference's scalar sequence: taps in order
 * from 0, the first cpu_conv_nmul(Kc) as a rounded product and a rounded
 * sum, the rest fused (ggml's, see cpu_deltanet_ref.c): any width gives the bits
 * of cpu_conv_ref. The weights
 * ({Kc, C}: taps of a channel adjacent) and the tail (C x (Kc-1)) are
 * channel-major, so a block of channels is transposed
 * once into tap-major scratch (256 channels: 4 KB at Kc = 4); then tokens
 * run in order, each reading its window straight from the rows of x (the
 * previous rows are still in L1), which walks x and y row by row instead of
 * down their columns. For the models' shape (Kc = 4, a packed tail) the
 * transposes are AVX-512 lane permutations, or AVX2 shuffles, permutes and
 * blends; one token (decode) is mostly transposes (AVX2, one thread, 6144
 * channels, bench/results/2026-12-01-cpu-avx2-kernels2: 21-22 us with
 * scalar transposes, 5.7-6 us). */
#include "cpu_deltanet.h"
#include "cpu.h"

#include <assert.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>

/* the unfused taps' products are rounded before the sum, as in the
 * reference; clang would contract them unless told not to */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#define CONV_SUB 256               /* channels transposed at once */

int64_t cpu_conv_nmul(int64_t Kc)
{
    return cpu_lanes() == 16 ? Kc / 8 * 8 : Kc / 4 * 4;
}

typedef float v16 __attribute__((vector_size(64)));

/* ------------------------------------------------------------ transposes */

/* wt[i][l] = w[(c+l)*Kc + i], tt[i][l] = tail[c+l][i] for l < n. */
static void conv_in_scalar(const float *w, const be_tensor *tail, int64_t Kc, int64_t c, int64_t n,
                           float *wt, float *tt)
{
    for (int64_t i = 0; i < Kc; i++)
        for (int64_t l = 0; l < n; l++)
            wt[i * CONV_SUB + l] = w[(c + l) * Kc + i];
    for (int64_t i = 0; i < Kc - 1; i++)
        for (int64_t l = 0; l < n; l++)
            tt[i * CONV_SUB + l] = cpu_row(tail, c + l)[i];
}

/* Kc = 4, tail row stride 3: per 16 channels, the 64 weight floats and the
 * 48 tail floats are permuted into lanes. */
typedef struct {
    __m512i w[4], t[3], th[3];
    __mmask16 mt[3];
} conv4_perm;

static void conv4_perm_init(conv4_perm *p)
{
    int32_t iw[4][16], it[3][16], ith[3][16];
    for (int l = 0; l < 16; l++) {
        for (int i = 0; i < 4; i++)
            iw[i][l] = 4 * (l % 8) + i;          /* tap i of channel l mod 8 in 32 floats */
        for (int i = 0; i < 3; i++) {
            const int f = 3 * l + i;             /* tail float of channel l, slot i */
            it[i][l] = f & 31;
            ith[i][l] = f >= 32 ? f - 32 : 0;
        }
    }
    for (int i = 0; i < 3; i++) {
        p->mt[i] = 0;
        for (int l = 0; l < 16; l++)
            p->mt[i] |= (__mmask16)(3 * l + i >= 32 ? 1u << l : 0);
    }
    memcpy(p->w, iw, sizeof iw);
    memcpy(p->t, it, sizeof it);
    memcpy(p->th, ith, sizeof ith);
}

__attribute__((target("avx512f")))
static void conv4_in_avx512(const float *w, const be_tensor *tail, int64_t c, int64_t n,
                            float *wt, float *tt)
{
    conv4_perm p;
    conv4_perm_init(&p);
    for (int64_t b = 0; b < n; b += 16) {
        const float *wc = w + (c + b) * 4, *tl = cpu_row(tail, c + b);
        const __m512 a0 = _mm512_loadu_ps(wc), a1 = _mm512_loadu_ps(wc + 16);
        const __m512 a2 = _mm512_loadu_ps(wc + 32), a3 = _mm512_loadu_ps(wc + 48);
        for (int i = 0; i < 4; i++)
            _mm512_storeu_ps(wt + i * CONV_SUB + b,
                             _mm512_shuffle_f32x4(_mm512_permutex2var_ps(a0, p.w[i], a1),
                                                  _mm512_permutex2var_ps(a2, p.w[i], a3), 0x44));
        const __m512 b0 = _mm512_loadu_ps(tl), b1 = _mm512_loadu_ps(tl + 16);
        const __m512 b2 = _mm512_loadu_ps(tl + 32);
        for (int i = 0; i < 3; i++)
            _mm512_storeu_ps(tt + i * CONV_SUB + b,
                             _mm512_mask_permutexvar_ps(_mm512_permutex2var_ps(b0, p.t[i], b1),
                                                        p.mt[i], p.th[i], b2));
    }
}

/* The new tail from the rows src[i] (channel-contiguous), transposed back. */
static void conv_out_scalar(be_tensor *tail, int64_t nt, int64_t c, int64_t n,
                            const float *const *src)
{
    for (int64_t l = 0; l < n; l++)
        for (int64_t i = 0; i < nt; i++)
            cpu_row(tail, c + l)[i] = src[i][l];
}

__attribute__((target("avx512f")))
static void conv4_out_avx512(be_tensor *tail, int64_t c, int64_t n, const float *const *src)
{
    int32_t io[3][16], ioh[3][16];
    __mmask16 mo[3] = { 0 };
    for (int i = 0; i < 3; i++)
        for (int l = 0; l < 16; l++) {
            const int g = 16 * i + l, ch = g / 3, slot = g % 3;  /* tail float g of 48 */
            io[i][l] = ch + (slot == 1 ? 16 : 0);
            ioh[i][l] = ch;
            mo[i] |= (__mmask16)(slot == 2 ? 1u << l : 0);
        }
    __m512i vo[3], voh[3];
    for (int i = 0; i < 3; i++) {
        vo[i] = _mm512_loadu_si512(io[i]);
        voh[i] = _mm512_loadu_si512(ioh[i]);
    }
    for (int64_t b = 0; b < n; b += 16) {
        const __m512 n0 = _mm512_loadu_ps(src[0] + b), n1 = _mm512_loadu_ps(src[1] + b);
        const __m512 n2 = _mm512_loadu_ps(src[2] + b);
        float *tl = cpu_row(tail, c + b);
        for (int i = 0; i < 3; i++)
            _mm512_storeu_ps(tl + 16 * i,
                             _mm512_mask_permutexvar_ps(_mm512_permutex2var_ps(n0, vo[i], n1),
                                                        mo[i], voh[i], n2));
    }
}

/* The same two transposes with AVX2, 8 channels at a time. Weights: an
 * in-lane 4x4 transpose leaves tap i of channels 0, 2, 4, 6 | 1, 3, 5, 7,
 * which one permute puts in order. Tail slot s of channel c is float 3c + s
 * of 24: each of the 3 vectors permuted by (3c + s) mod 8, then lane c
 * taken from vector (3c + s) / 8 by two blends; the way back likewise. */
#define CONV_SEL(v0, v1, v2, idx, m1, m2)                                                      \
    _mm256_blend_ps(_mm256_blend_ps(_mm256_permutevar8x32_ps(v0, idx),                         \
                                    _mm256_permutevar8x32_ps(v1, idx), m1),                    \
                    _mm256_permutevar8x32_ps(v2, idx), m2)

__attribute__((target("avx2")))
static void conv4_in_avx2(const float *w, const be_tensor *tail, int64_t c, int64_t n,
                          float *wt, float *tt)
{
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m256i s0 = _mm256_setr_epi32(0, 3, 6, 1, 4, 7, 2, 5);
    const __m256i s1 = _mm256_setr_epi32(1, 4, 7, 2, 5, 0, 3, 6);
    const __m256i s2 = _mm256_setr_epi32(2, 5, 0, 3, 6, 1, 4, 7);
    for (int64_t b = 0; b < n; b += 8) {
        const float *wc = w + (c + b) * 4, *tl = cpu_row(tail, c + b);
        const __m256 a0 = _mm256_loadu_ps(wc), a1 = _mm256_loadu_ps(wc + 8);
        const __m256 a2 = _mm256_loadu_ps(wc + 16), a3 = _mm256_loadu_ps(wc + 24);
        const __m256 t0 = _mm256_unpacklo_ps(a0, a1), t1 = _mm256_unpackhi_ps(a0, a1);
        const __m256 t2 = _mm256_unpacklo_ps(a2, a3), t3 = _mm256_unpackhi_ps(a2, a3);
        const __m256 tap[4] = { _mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xEE),
                                _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xEE) };
        for (int i = 0; i < 4; i++)
            _mm256_storeu_ps(wt + i * CONV_SUB + b, _mm256_permutevar8x32_ps(tap[i], order));
        const __m256 b0 = _mm256_loadu_ps(tl), b1 = _mm256_loadu_ps(tl + 8);
        const __m256 b2 = _mm256_loadu_ps(tl + 16);
        _mm256_storeu_ps(tt + b, CONV_SEL(b0, b1, b2, s0, 0xF8, 0xC0));
        _mm256_storeu_ps(tt + CONV_SUB + b, CONV_SEL(b0, b1, b2, s1, 0xF8, 0xE0));
        _mm256_storeu_ps(tt + 2 * CONV_SUB + b, CONV_SEL(b0, b1, b2, s2, 0xFC, 0xE0));
    }
}

__attribute__((target("avx2")))
static void conv4_out_avx2(be_tensor *tail, int64_t c, int64_t n, const float *const *src)
{
    const __m256i k0 = _mm256_setr_epi32(0, 0, 0, 1, 1, 1, 2, 2);
    const __m256i k1 = _mm256_setr_epi32(2, 3, 3, 3, 4, 4, 4, 5);
    const __m256i k2 = _mm256_setr_epi32(5, 5, 6, 6, 6, 7, 7, 7);
    for (int64_t b = 0; b < n; b += 8) {
        const __m256 n0 = _mm256_loadu_ps(src[0] + b), n1 = _mm256_loadu_ps(src[1] + b);
        const __m256 n2 = _mm256_loadu_ps(src[2] + b);
        float *tl = cpu_row(tail, c + b);
        _mm256_storeu_ps(tl, CONV_SEL(n0, n1, n2, k0, 0x92, 0x24));
        _mm256_storeu_ps(tl + 8, CONV_SEL(n0, n1, n2, k1, 0x24, 0x49));
        _mm256_storeu_ps(tl + 16, CONV_SEL(n0, n1, n2, k2, 0x49, 0x92));
    }
}

/* ------------------------------------------------------- lane multiply-add */

/* *c += a b per lane: rounded once (the reference's fmaf) when fused, else
 * the product rounded and then the sum, in the ISA of the caller conv_sub
 * is inlined into. Pointers, not vector values: no 64-byte vector crosses a
 * call in a non-AVX-512 ABI. */
__attribute__((target("avx512f")))
static inline void fma16_avx512(const v16 *a, const v16 *b, v16 *c, bool fused)
{
    const __m512 va = (__m512)*a, vb = (__m512)*b, vc = (__m512)*c;
    *c = (v16)(fused ? _mm512_fmadd_ps(va, vb, vc) : _mm512_add_ps(vc, _mm512_mul_ps(va, vb)));
}

__attribute__((target("avx2,fma")))
static inline void fma16_avx2(const v16 *a, const v16 *b, v16 *c, bool fused)
{
    const float *pa = (const float *)a, *pb = (const float *)b;
    float *pc = (float *)c;
    for (int h = 0; h < 16; h += 8) {
        const __m256 va = _mm256_loadu_ps(pa + h), vb = _mm256_loadu_ps(pb + h),
                     vc = _mm256_loadu_ps(pc + h);
        _mm256_storeu_ps(pc + h, fused ? _mm256_fmadd_ps(va, vb, vc)
                                       : _mm256_add_ps(vc, _mm256_mul_ps(va, vb)));
    }
}

static inline void fma16_plain(const v16 *a, const v16 *b, v16 *c, bool fused)
{
    for (int l = 0; l < 16; l++) {
        if (fused) {
            (*c)[l] = fmaf((*a)[l], (*b)[l], (*c)[l]);
        } else {
            const float p = (*a)[l] * (*b)[l];
            (*c)[l] = (*c)[l] + p;
        }
    }
}

/* ------------------------------------------------------------ the kernel */

/* Channels [c, c+n), n a multiple of 16 and <= CONV_SUB. isa: 1 AVX-512,
 * 2 AVX2 + FMA, 3 plain (libm's fmaf). perm4: Kc = 4 with a packed tail
 * (the transposes of that isa: AVX-512 or AVX2). */
static inline __attribute__((always_inline))
void conv_sub(const be_tensor *x, be_tensor *tail, const float *w, int64_t Kc, be_tensor *y,
              int64_t c, int64_t n, int isa, bool perm4)
{
    const int64_t T = x->rows, nt = Kc - 1, nmul = cpu_conv_nmul(Kc);
    float wt[17 * CONV_SUB], tt[16 * CONV_SUB];
    if (perm4 && isa == 1)
        conv4_in_avx512(w, tail, c, n, wt, tt);
    else if (perm4 && isa == 2)
        conv4_in_avx2(w, tail, c, n, wt, tt);
    else
        conv_in_scalar(w, tail, Kc, c, n, wt, tt);
    /* position p of [tail | x]: a row of tt or of x, channels from c */
#define POS(p) ((p) < nt ? tt + (p) * CONV_SUB : cpu_row(x, (p) - nt) + c)
    for (int64_t t = 0; t < T; t++) {
        const float *src[17];
        for (int64_t i = 0; i < Kc; i++)
            src[i] = POS(t + i);
        float *yr = cpu_row(y, t) + c;
        for (int64_t b = 0; b < n; b += 16) {
            v16 s = { 0 }, v, wv;
            for (int64_t i = 0; i < Kc; i++) {
                memcpy(&v, src[i] + b, sizeof v);
                memcpy(&wv, wt + i * CONV_SUB + b, sizeof wv);
                if (isa == 1)
                    fma16_avx512(&v, &wv, &s, i >= nmul);
                else if (isa == 2)
                    fma16_avx2(&v, &wv, &s, i >= nmul);
                else
                    fma16_plain(&v, &wv, &s, i >= nmul);
            }
            memcpy(yr + b, &s, sizeof s);
        }
    }
    const float *src[16];
    for (int64_t i = 0; i < nt; i++)
        src[i] = POS(T + i);
#undef POS
    if (perm4 && isa == 1)
        conv4_out_avx512(tail, c, n, src);
    else if (perm4 && isa == 2)
        conv4_out_avx2(tail, c, n, src);
    else
        conv_out_scalar(tail, nt, c, n, src);
}

__attribute__((target("avx512f")))
static void conv_avx512(const be_tensor *x, be_tensor *tail, const float *w, int64_t Kc,
                        be_tensor *y, int64_t c0, int64_t c1)
{
    const bool perm4 = Kc == 4 && tail->ld == 3;
    for (int64_t c = c0; c < c1; c += CONV_SUB)
        conv_sub(x, tail, w, Kc, y, c, c1 - c < CONV_SUB ? c1 - c : CONV_SUB, 1, perm4);
}

__attribute__((target("avx2,fma")))
static void conv_avx2(const be_tensor *x, be_tensor *tail, const float *w, int64_t Kc,
                      be_tensor *y, int64_t c0, int64_t c1)
{
    const bool perm4 = Kc == 4 && tail->ld == 3;
    for (int64_t c = c0; c < c1; c += CONV_SUB)
        conv_sub(x, tail, w, Kc, y, c, c1 - c < CONV_SUB ? c1 - c : CONV_SUB, 2, perm4);
}

static void conv_plain(const be_tensor *x, be_tensor *tail, const float *w, int64_t Kc,
                       be_tensor *y, int64_t c0, int64_t c1)
{
    for (int64_t c = c0; c < c1; c += CONV_SUB)
        conv_sub(x, tail, w, Kc, y, c, c1 - c < CONV_SUB ? c1 - c : CONV_SUB, 3, false);
}

void cpu_conv_fast(const be_tensor *x, be_tensor *tail, const float *w, int64_t Kc,
                   be_tensor *y, int64_t c0, int64_t c1, int path)
{
    assert(Kc >= 1 && Kc <= 17);
    const int64_t cb = c0 + (c1 - c0) / 16 * 16;     /* whole blocks end */
    __builtin_cpu_init();
    const bool fma = __builtin_cpu_supports("fma");
    const bool a512 = fma && cpu_avx512_ok();
    const bool a2 = fma && __builtin_cpu_supports("avx2");
    if (path == 0)
        path = a512 ? 1 : a2 ? 2 : 3;
    if (path == 1 && a512)
        conv_avx512(x, tail, w, Kc, y, c0, cb);
    else if (path == 2 && a2)
        conv_avx2(x, tail, w, Kc, y, c0, cb);
    else
        conv_plain(x, tail, w, Kc, y, c0, cb);
    if (cb < c1)
        cpu_conv_ref(x, tail, w, Kc, y, cb, c1);
}

/* ---------------------------------------------------------------- the op */

typedef struct {
    const be_tensor *x, *tail, *y;
    const float *w;
    int64_t Kc;
} conv_job;

static void conv_task(void *arg, int64_t c0, int64_t c1, int tid)
{
    (void)tid;
    const conv_job *j = arg;
    cpu_conv_fast(j->x, (be_tensor *)j->tail, j->w, j->Kc, (be_tensor *)j->y, c0, c1, 0);
}

void cpu_ssm_conv(be_ctx *be, const be_tensor *x, be_tensor *tails, const be_weight *w,
                  const be_batch *b, be_tensor *y)
{
    CPU_PROF_BEGIN(be);
    const int64_t Kc = (int64_t)w->t->ne[0], C = (int64_t)w->t->ne[1];
    assert(w->type == 0 && x->cols == C && tails->rows % C == 0 && tails->cols == Kc - 1);
    assert(y->rows == x->rows && y->cols == C && !tails->f16);
    assert(Kc >= 1 && Kc <= 17);
    /* each run continues from its slot's tail: a rows view of each */
    for (int s = 0; s < b->n_seq; s++) {
        const be_seq *r = &b->seq[s];
        assert(((int64_t)r->slot + 1) * C <= tails->rows);
        be_tensor xr = *x, yr = *y, tr = *tails;
        xr.data = cpu_row(x, r->row0);
        yr.data = cpu_row(y, r->row0);
        xr.rows = yr.rows = r->n_rows;
        tr.data = cpu_row(tails, (int64_t)r->slot * C);
        tr.rows = C;
        conv_job j = { &xr, &tr, &yr, w->t->data, Kc };
        /* A few tokens (decode) are a few microseconds of work: less than
         * waking a worker costs, so they run on the caller. */
        const int64_t grain = xr.rows * C <= 32768 ? C : CONV_SUB;
        cpu_for(be, C, grain, conv_task, &j);
    }
    CPU_PROF_END(be, BE_PROF_CONV);
}

/* be_ssm_conv_silu_keep's tails: after row t of each run, the last Kc-1
 * raw values of each channel, positions t+1 .. t+Kc-1 of [tail | x] (the
 * slot's tail, then the run's rows), into the slot's kept row t (K a
 * slot), written before the conv moves the tail; a copy of values, no
 * arithmetic */
void cpu_ssm_conv_keep_tails(const be_tensor *x, const be_tensor *tails, int64_t Kc,
                             const be_batch *b, be_tensor *keep)
{
    const int64_t C = x->cols, nt = Kc - 1, kl = keep->ld, tld = tails->ld;
    const int64_t K = keep->rows / tails->rows;
    for (int s = 0; s < b->n_seq; s++) {
        const be_seq *r = &b->seq[s];
        const float *tl = cpu_row(tails, (int64_t)r->slot * C);
        for (int64_t t = 0; t + 1 < r->n_rows; t++) {
            float *k = cpu_row(keep, ((int64_t)r->slot * K + t) * C);
            for (int64_t i = 0; i < nt; i++) {
                const int64_t p = t + 1 + i;
                if (p < nt)
                    for (int64_t c = 0; c < C; c++)
                        k[c * kl + i] = tl[c * tld + p];
                else
                    for (int64_t c = 0, u = r->row0 + p - nt; c < C; c++)
                        k[c * kl + i] = cpu_row(x, u)[c];
            }
        }
    }
}
