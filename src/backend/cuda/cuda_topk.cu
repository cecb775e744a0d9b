/* cuda_topk.cu: be_topk, one block a row. Each value becomes an unsigned
 * key that orders as the floats do (-0 as +0; NaN left out). A radix
 * select finds the k-th largest key T a byte at a time, most significant
 * first: each of 4 passes counts in a 256-bin shared histogram the keys
 * that match the bytes found so far, and the bin where the running count
 * from the top reaches k is the next byte. Then one pass over each
 * thread's own contiguous columns takes every key above T and, in column
 * order (a prefix sum over the threads' counts), the first `want` equal
 * to T; the at most 64 candidates are ranked by (value, column) in
 * shared memory and written best first. A row with at most k values
 * takes them all and pads with column -1 and -inf.
 *
 * As in cuda_fattn.cu, the kernel is phase functions that also run on the
 * host: cuda_topk_emulate checks its logic on the CPU. */
#include "cuda.h"
#include "cuda_topk.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#define TOPK_THREADS 256
#define HD_ __host__ __device__ inline

typedef struct tk_args {
    const float *x;
    int64_t      ldx, n;
    int          k;
    int32_t     *ids;
    int64_t      ldi;
    float       *vals;
    int64_t      ldv;
} tk_args;

/* The block's shared memory: the histogram, the threads' counts (then
 * their prefix sums), the select's state, the candidates. */
typedef struct tk_sh {
    unsigned hist[256], gt[TOPK_THREADS], eq[TOPK_THREADS];
    unsigned prefix, mask, want, total;
    int      all;
    unsigned ck[BE_TOPK_MAX];
    int      cc[BE_TOPK_MAX];
    float    cv[BE_TOPK_MAX];
} tk_sh;

/* the float's order as an unsigned key: larger float, larger key */
HD_ unsigned tk_key(float v)
{
    unsigned u;
    memcpy(&u, &v, sizeof u);
    if (u == 0x80000000u)
        u = 0;                                 /* -0 is +0 */
    return u & 0x80000000u ? ~u : u | 0x80000000u;
}

HD_ void tk_inc(unsigned *p)
{
#ifdef __CUDA_ARCH__
    atomicAdd(p, 1u);
#else
    (*p)++;
#endif
}

HD_ void tk_begin(int tid, tk_sh *s, int k)
{
    if (tid == 0) {
        s->prefix = s->mask = 0;
        s->want = (unsigned)k;
        s->all = 0;
        s->total = 0;
    }
}

HD_ void tk_clear(int tid, tk_sh *s) { s->hist[tid] = 0; }

/* this thread's columns c = tid, tid + TOPK_THREADS, ... that match the
 * bytes found so far, counted by their byte at shift */
HD_ void tk_count(const tk_args &a, int64_t r, int tid, int shift, tk_sh *s)
{
    const float *row = a.x + r * a.ldx;
    const unsigned mask = s->mask, prefix = s->prefix;
    for (int64_t c = tid; c < a.n; c += TOPK_THREADS) {
        const float v = row[c];
        if (isnan(v))
            continue;
        const unsigned key = tk_key(v);
        if ((key & mask) == prefix)
            tk_inc(&s->hist[(key >> shift) & 255u]);
    }
}

/* thread 0: the byte at shift whose bin holds the want-th largest */
HD_ void tk_pick(int tid, int shift, int k, tk_sh *s)
{
    if (tid)
        return;
    if (shift == 24) {
        unsigned t = 0;
        for (int b = 0; b < 256; b++)
            t += s->hist[b];
        s->total = t;
        s->all = t <= (unsigned)k;             /* every value is taken */
    }
    unsigned cum = 0;
    int b = 255;
    for (; b > 0 && cum + s->hist[b] < s->want; b--)
        cum += s->hist[b];
    s->want -= cum;
    s->prefix |= (unsigned)b << shift;
    s->mask |= 255u << shift;
}

/* this thread's contiguous columns [c0, c1) */
HD_ void tk_span(const tk_args &a, int tid, int64_t *c0, int64_t *c1)
{
    const int64_t per = (a.n + TOPK_THREADS - 1) / TOPK_THREADS;
    *c0 = tid * per < a.n ? tid * per : a.n;
    *c1 = *c0 + per < a.n ? *c0 + per : a.n;
}

/* counts of this thread's keys above T and equal to it */
HD_ void tk_tally(const tk_args &a, int64_t r, int tid, tk_sh *s)
{
    const float *row = a.x + r * a.ldx;
    int64_t c0, c1;
    tk_span(a, tid, &c0, &c1);
    unsigned n_gt = 0, n_eq = 0;
    for (int64_t c = c0; c < c1; c++) {
        const float v = row[c];
        if (isnan(v))
            continue;
        const unsigned key = tk_key(v);
        n_gt += s->all || key > s->prefix;
        n_eq += !s->all && key == s->prefix;
    }
    s->gt[tid] = n_gt;
    s->eq[tid] = n_eq;
}

/* thread 0: exclusive prefix sums of the counts */
HD_ void tk_scan(int tid, tk_sh *s)
{
    if (tid)
        return;
    unsigned g = 0, e = 0;
    for (int i = 0; i < TOPK_THREADS; i++) {
        const unsigned vg = s->gt[i], ve = s->eq[i];
        s->gt[i] = g;
        s->eq[i] = e;
        g += vg;
        e += ve;
    }
}

/* this thread's candidates into ck/cc/cv: keys above T at their prefix
 * sum, the equal ones of rank below want after all of those */
HD_ void tk_place(const tk_args &a, int64_t r, int tid, tk_sh *s)
{
    const float *row = a.x + r * a.ldx;
    int64_t c0, c1;
    tk_span(a, tid, &c0, &c1);
    const unsigned above = s->all ? s->total : (unsigned)a.k - s->want;
    unsigned pg = s->gt[tid], pe = s->eq[tid];
    for (int64_t c = c0; c < c1; c++) {
        const float v = row[c];
        if (isnan(v))
            continue;
        const unsigned key = tk_key(v);
        int at = -1;
        if (s->all || key > s->prefix)
            at = (int)pg++;
        else if (key == s->prefix && pe++ < s->want)
            at = (int)(above + pe - 1);
        if (at >= 0) {
            s->ck[at] = key;
            s->cc[at] = (int)c;
            s->cv[at] = v;
        }
    }
}

/* thread tid < k: its candidate at its rank, or the padding */
HD_ void tk_write(const tk_args &a, int64_t r, int tid, const tk_sh *s)
{
    if (tid >= a.k)
        return;
    const unsigned n_take = s->all ? s->total : (unsigned)a.k;
    if ((unsigned)tid < n_take) {
        int rank = 0;
        for (unsigned j = 0; j < n_take; j++)
            rank += s->ck[j] > s->ck[tid] || (s->ck[j] == s->ck[tid] && s->cc[j] < s->cc[tid]);
        a.ids[r * a.ldi + rank] = s->cc[tid];
        a.vals[r * a.ldv + rank] = s->cv[tid];
    } else {
        a.ids[r * a.ldi + tid] = -1;
        a.vals[r * a.ldv + tid] = -INFINITY;
    }
}

__global__ void __launch_bounds__(TOPK_THREADS) k_topk(tk_args a)
{
    cuda_pdl_enter();
    __shared__ tk_sh s;
    const int tid = threadIdx.x;
    const int64_t r = blockIdx.x;
    tk_begin(tid, &s, a.k);
    for (int shift = 24; shift >= 0; shift -= 8) {
        tk_clear(tid, &s);
        __syncthreads();
        tk_count(a, r, tid, shift, &s);
        __syncthreads();
        tk_pick(tid, shift, a.k, &s);
        __syncthreads();
        if (s.all)
            break;
    }
    tk_tally(a, r, tid, &s);
    __syncthreads();
    tk_scan(tid, &s);
    __syncthreads();
    tk_place(a, r, tid, &s);
    __syncthreads();
    tk_write(a, r, tid, &s);
}

void cuda_topk(be_ctx *be, const be_tensor *x, int64_t k, be_tensor *ids, be_tensor *vals)
{
    assert(k >= 1 && k <= BE_TOPK_MAX);
    if (!x->rows)
        return;
    const tk_args a = { (const float *)x->data, x->ld, x->cols, (int)k, (int32_t *)ids->data,
                        ids->ld, (float *)vals->data, vals->ld };
    cuda_launch(k_topk, (unsigned)x->rows, TOPK_THREADS, 0, cuda_ctx_of(be)->stream, a);
    CUDA_LAUNCHED(be, "k_topk");
}

/* -------------------------------------------------------- host emulation */

extern "C" int cuda_topk_emulate(const float *x, int64_t ldx, int64_t rows, int64_t n, int k,
                                 int32_t *ids, int64_t ldi, float *vals, int64_t ldv)
{
    if (k < 1 || k > BE_TOPK_MAX)
        return -1;
    const tk_args a = { x, ldx, n, k, ids, ldi, vals, ldv };
    tk_sh s;
    const int nt = TOPK_THREADS;
    for (int64_t r = 0; r < rows; r++) {
        memset(&s, 0xA5, sizeof s);
        for (int tid = 0; tid < nt; tid++)
            tk_begin(tid, &s, k);
        for (int shift = 24; shift >= 0; shift -= 8) {
            for (int tid = 0; tid < nt; tid++)
                tk_clear(tid, &s);
            for (int tid = 0; tid < nt; tid++)
                tk_count(a, r, tid, shift, &s);
            for (int tid = 0; tid < nt; tid++)
                tk_pick(tid, shift, k, &s);
            if (s.all)
                break;
        }
        for (int tid = 0; tid < nt; tid++)
            tk_tally(a, r, tid, &s);
        for (int tid = 0; tid < nt; tid++)
            tk_scan(tid, &s);
        for (int tid = 0; tid < nt; tid++)
            tk_place(a, r, tid, &s);
        for (int tid = 0; tid < nt; tid++)
            tk_write(a, r, tid, &s);
    }
    return 0;
}
