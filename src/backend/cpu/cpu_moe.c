/* cpu_moe.c: the CPU backend's MoE router and combine: softmax over every
 * expert (ggml_vec_soft_max_f32's lane exp and sums), the top k by
 * selection, renormalized weights, and the rank-ordered weighted sum of
 * the experts' outputs. The choices stay in an i32 tensor that
 * be_matmul_id reads (no host round trip). Also be_argmax, the greedy
 * choice of a row of logits (a top 1 without the softmax). */
#include "cpu.h"

#if defined(__SSE2__)
#include <immintrin.h>
#endif
#include "cpu_gexp.h"
#include "cpu_vexp.h"

#include <assert.h>
#include <math.h>
#include <string.h>

void cpu_moe_route(be_ctx *be, const be_tensor *logits, int64_t k, be_tensor *sel, be_tensor *w)
{
    CPU_PROF_BEGIN(be);
    const int64_t E = logits->cols;
    assert(k >= 1 && k <= E && E <= 4096 && w->rows == logits->rows && w->cols == k);
    float p[4096];
    const int level = cpu_vexp_level(), gw = level == 2 ? 16 : level == 1 ? 8 : 0;
    for (int64_t r = 0; r < logits->rows; r++) {
        const float *l = cpu_row(logits, r);
        float mx = -INFINITY;
        for (int64_t e = 0; e < E; e++)
            mx = l[e] > mx ? l[e] : mx;
        /* ggml_vec_soft_max_f32: full vectors of the lane exp, each
         * summed as a tree into the double; the tail by libm, one by one */
        double sum = 0.0;
        const int64_t nv = gw ? E / gw * gw : 0;
        for (int64_t e = 0; e < nv; e++)
            p[e] = l[e] - mx;
        cpu_gexp_row(level, nv, p, p);
        for (int64_t e0 = 0; e0 < nv; e0 += gw) {
            float lanes[16];
            memcpy(lanes, p + e0, sizeof(float) * (size_t)gw);
            sum += (double)cpu_lane_sum(lanes, gw);
        }
        for (int64_t e = nv; e < E; e++) {
            p[e] = expf(l[e] - mx);
            sum += (double)p[e];
        }
        const float inv = (float)(1.0 / sum);
        for (int64_t e = 0; e < E; e++)
            p[e] *= inv;
        /* top k by selection: largest first, lower index on exact ties */
        int32_t *s = (int32_t *)sel->data + r * sel->ld;
        for (int64_t i = 0; i < k; i++) {
            int64_t best = -1;
            for (int64_t e = 0; e < E; e++) {
                bool taken = false;
                for (int64_t j = 0; j < i; j++)
                    if (s[j] == e) { taken = true; break; }
                if (!taken && (best < 0 || p[e] > p[best]))
                    best = e;
            }
            s[i] = (int32_t)best;
        }
        double ws = 0.0;
        for (int64_t i = 0; i < k; i++)
            ws += (double)p[s[i]];
        float wsum = (float)ws;
        if (wsum < 6.103515625e-5f)
            wsum = 6.103515625e-5f;
        float *wr = cpu_row(w, r);
        for (int64_t i = 0; i < k; i++)
            wr[i] = p[s[i]] / wsum;
    }
    CPU_PROF_END(be, BE_PROF_ROUTE);
}

/* The index a scan of v[0..n) in order gives when it keeps a value above
 * every one before it: the first of equals, and never a NaN unless v[0] is
 * one. Two passes of 16 lanes (SSE2, every x86-64): the largest value
 * (maxps(v, m) keeps m when v is NaN or not above it: the scan's >
 * compare), then the first element equal to it. -0 and +0 compare equal,
 * as in the scan. A 151,680-wide row (the default model's head) in cache,
 * one thread, Zen 5 (record 2026-12-02-cpu-argmax, argmax-bench.txt): the
 * scan's compare chain 67 us, one pass keeping each lane's value and
 * first index 31 us, these two passes 8 us. */
static int64_t argmax_row(const float *v, int64_t n)
{
    if (n <= 1 || v[0] != v[0])
        return 0;
    float m = v[0];
    int64_t c = 0;
#if defined(__SSE2__)
    __m128 m0 = _mm_set1_ps(m), m1 = m0, m2 = m0, m3 = m0;
    for (; c + 16 <= n; c += 16) {
        m0 = _mm_max_ps(_mm_loadu_ps(v + c), m0);
        m1 = _mm_max_ps(_mm_loadu_ps(v + c + 4), m1);
        m2 = _mm_max_ps(_mm_loadu_ps(v + c + 8), m2);
        m3 = _mm_max_ps(_mm_loadu_ps(v + c + 12), m3);
    }
    float l[16];
    _mm_storeu_ps(l, m0);
    _mm_storeu_ps(l + 4, m1);
    _mm_storeu_ps(l + 8, m2);
    _mm_storeu_ps(l + 12, m3);
    for (int k = 0; k < 16; k++)
        m = l[k] > m ? l[k] : m;
#endif
    for (; c < n; c++)
        m = v[c] > m ? v[c] : m;
    c = 0;
#if defined(__SSE2__)
    const __m128 mm = _mm_set1_ps(m);
    for (; c + 16 <= n; c += 16) {
        const __m128 e = _mm_or_ps(_mm_or_ps(_mm_cmpeq_ps(_mm_loadu_ps(v + c), mm),
                                             _mm_cmpeq_ps(_mm_loadu_ps(v + c + 4), mm)),
                                   _mm_or_ps(_mm_cmpeq_ps(_mm_loadu_ps(v + c + 8), mm),
                                             _mm_cmpeq_ps(_mm_loadu_ps(v + c + 12), mm)));
        if (_mm_movemask_ps(e))
            break;
    }
#endif
    while (v[c] != m)
        c++;
    return c;
}

/* be_argmax: argmax_row of each row */
void cpu_argmax(be_ctx *be, const be_tensor *x, be_tensor *ids)
{
    CPU_PROF_BEGIN(be);
    for (int64_t r = 0; r < x->rows; r++)
        ((int32_t *)ids->data)[r * ids->ld] = (int32_t)argmax_row(cpu_row(x, r), x->cols);
    CPU_PROF_END(be, BE_PROF_ARGMAX);
}

void cpu_moe_combine(be_ctx *be, const be_tensor *y, const be_tensor *w, int64_t k,
                    be_tensor *out)
{
    CPU_PROF_BEGIN(be);
    (void)be;
    assert(y->rows == out->rows * k && y->cols == out->cols && w->cols == k);
    for (int64_t t = 0; t < out->rows; t++) {
        float *o = cpu_row(out, t);
        const float *wr = cpu_row(w, t);
        const float *y0 = cpu_row(y, t * k);
        for (int64_t c = 0; c < out->cols; c++)
            o[c] = y0[c] * wr[0];
        for (int64_t i = 1; i < k; i++) {
            const float *yi = cpu_row(y, t * k + i);
            for (int64_t c = 0; c < out->cols; c++) {
                const float prod = yi[c] * wr[i];
                o[c] = o[c] + prod;
            }
        }
    }
    CPU_PROF_END(be, BE_PROF_COMBINE);
}
