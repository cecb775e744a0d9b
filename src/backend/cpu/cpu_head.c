/* cpu_head.c: be_matmul_argmax on the CPU, the greedy choice of a head.
 *
 * Where the weight is Q8_0, the CPU has AVX-512 VNNI, no Q36_DOT_PATH is
 * forced and the batch has at least cpu_head_screen's rows (1 by default:
 * one greedy row gains too, as its exact product does not reach the
 * memory's speed on one thread), the screen of cpu_screen_q8.h chooses: approximate products of every
 * row, exact products (the matmul's own tile kernel, so its bits) of the
 * rows that may hold the largest logit. The choice is be_argmax's of the
 * exact logits, always; only the arithmetic differs. Banned ids are never
 * candidates (be_matmul_argmax's contract). Otherwise, and for a token
 * whose screen found a non-finite value or too many near-ties, the op is
 * be_matmul then be_argmax, whose choice may be banned: its row of y then
 * holds the logits for the caller to choose again.
 *
 * The screen reads its own copy of the head (cpu_q8s: the codes of 16
 * rows interleaved, scales as f32, 6% more bytes than the Q8_0 rows), made
 * the first time the weight meets the screen and kept with the weight:
 * 42 MiB for the default model's tied head. A head over 1 GiB gets no copy
 * (the exact path). Measured in bench/results/2026-12-05-cpu-head-screen/. */
#include "cpu.h"

#include <assert.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_gemm_q8.h"
#include "cpu_screen_q8.h"

#define CAND_CAP   64                   /* near-ties a thread keeps per token */
#define COPY_MAX   (1ull << 30)         /* the largest head copied for the screen */

typedef struct cpu_head {
    cpu_q8s       s;
    bool          built;                /* s holds the copy (else the build failed or was refused) */
    int64_t       cap_rows;             /* tokens the tables below hold */
    int           cap_threads;
    float        *dx;                   /* cap_rows x nb */
    int32_t      *cx;
    double       *e2;                   /* cap_rows */
    cpu_q8s_cand *cand;                 /* cap_threads x cap_rows */
    bool         *full;                 /* cap_rows: tokens left to the exact path */
    int32_t      *idx;                  /* cap_threads x cap_rows x CAND_CAP */
    float        *val;
} cpu_head;

static _Atomic int g_min_rows = 1;
static _Atomic long g_stat[3];          /* screened tokens, tokens done in full, exact candidates */

void cpu_head_screen(int min_rows)
{
    atomic_store(&g_min_rows, min_rows < 0 ? 0 : min_rows);
}

void cpu_head_screen_stats(long out[3])
{
    for (int i = 0; i < 3; i++)
        out[i] = atomic_load(&g_stat[i]);
}

void cpu_head_free(void *impl)
{
    cpu_head *h = impl;
    if (!h)
        return;
    cpu_q8s_free(&h->s);
    free(h->dx), free(h->cx), free(h->e2), free(h->cand), free(h->full), free(h->idx);
    free(h->val);
    free(h);
}

int cpu_head_screen_env(void)
{
    const char *hs = getenv("Q36_CPU_HEADSCREEN");
    return hs && *hs ? atoi(hs) : 1;
}

uint64_t be_cpu_head_screen_bytes(const gguf_tensor *t)
{
    if (!t || t->type != QT_Q8_0 || t->ne[2] * t->ne[3] != 1 || cpu_head_screen_env() <= 0 ||
        !quant_path_available(QUANT_PATH_AVX512VNNI))
        return 0;
    const uint64_t b = cpu_q8s_bytes((int64_t)t->ne[1], (int64_t)t->ne[0]);
    return b <= COPY_MAX ? b : 0;
}

static bool screen_ok(const cpu_ctx *c, const be_weight *w, const be_tensor *x)
{
    const int min_rows = atomic_load(&g_min_rows);
    return min_rows > 0 && x->rows >= min_rows && w->type == QT_Q8_0 && c->dot_path < 0 &&
           w->t->ne[2] * w->t->ne[3] == 1 && quant_path_available(QUANT_PATH_AVX512VNNI) &&
           cpu_q8s_bytes((int64_t)w->t->ne[1], (int64_t)w->t->ne[0]) <= COPY_MAX;
}

/* The weight's screen with tables for R tokens and T threads, or NULL. */
static cpu_head *head_of(be_weight *w, int64_t R, int T)
{
    cpu_head *h = w->impl;
    if (!h) {
        h = calloc(1, sizeof *h);
        if (!h)
            return NULL;
        w->impl = h;
        h->built = cpu_q8s_build(&h->s, w->data, w->row_bytes, (int64_t)w->t->ne[1],
                                 (int64_t)w->t->ne[0]) == 0;
    }
    if (!h->built)
        return NULL;
    if (R > h->cap_rows || T > h->cap_threads) {
        const int64_t r = R > h->cap_rows ? R : h->cap_rows;
        const int t = T > h->cap_threads ? T : h->cap_threads;
        const size_t nb = (size_t)h->s.nb, slots = (size_t)t * (size_t)r;
        float *dx = realloc(h->dx, sizeof *dx * nb * (size_t)r);
        if (dx)
            h->dx = dx;
        int32_t *cx = realloc(h->cx, sizeof *cx * nb * (size_t)r);
        if (cx)
            h->cx = cx;
        double *e2 = realloc(h->e2, sizeof *e2 * (size_t)r);
        if (e2)
            h->e2 = e2;
        cpu_q8s_cand *cand = realloc(h->cand, sizeof *cand * slots);
        if (cand)
            h->cand = cand;
        bool *full = realloc(h->full, sizeof *full * (size_t)r);
        if (full)
            h->full = full;
        int32_t *idx = realloc(h->idx, sizeof *idx * slots * CAND_CAP);
        if (idx)
            h->idx = idx;
        float *val = realloc(h->val, sizeof *val * slots * CAND_CAP);
        if (val)
            h->val = val;
        if (!dx || !cx || !e2 || !cand || !full || !idx || !val)
            return NULL;        /* what grew is kept; the sizes stay the old ones */
        h->cap_rows = r;
        h->cap_threads = t;
    }
    return h;
}

typedef struct {
    const cpu_head *h;
    const uint8_t  *act;
    uint64_t        arb;
    int64_t         R;
    const int32_t  *ban;
    int             n_ban;
} head_job;

static void head_task(void *arg, int64_t g0, int64_t g1, int tid)
{
    const head_job *j = arg;
    cpu_q8s_avx512vnni(&j->h->s, g0, g1, j->act, j->arb, (int)j->R, j->h->dx, j->h->cx,
                       j->h->cand + (int64_t)tid * j->R, j->ban, j->n_ban, NULL, 0);
}

/* Token t's choice from its candidates; false when the screen cannot tell. */
static bool choose(const cpu_head *h, int T, int64_t R, int64_t t, const be_weight *w,
                   const uint8_t *a, cpu_tile_fn tile, int32_t *id)
{
    float amax = -INFINITY;
    for (int k = 0; k < T; k++) {
        const cpu_q8s_cand *c = &h->cand[(int64_t)k * R + t];
        if (c->bad)
            return false;
        amax = c->max > amax ? c->max : amax;
    }
    if (!isfinite(amax))
        return false;
    const double thr = (double)amax - h->e2[t];
    const int64_t K = (int64_t)w->t->ne[0];
    float best = -INFINITY;
    int32_t bi = -1;
    long n = 0;
    for (int k = 0; k < T; k++) {       /* threads' lists hold disjoint rows */
        const cpu_q8s_cand *c = &h->cand[(int64_t)k * R + t];
        for (int i = 0; i < c->n; i++) {
            if (!((double)c->val[i] >= thr))
                continue;
            const int32_t r = c->idx[i];
            float e;
            tile(K, (const uint8_t *)w->data + (uint64_t)r * w->row_bytes, w->row_bytes, 1, a,
                 w->act_row_bytes, 1, &e, 1);
            n++;
            if (e != e)
                return false;
            if (bi < 0 || e > best || (e == best && r < bi)) {
                best = e;
                bi = r;
            }
        }
    }
    if (bi < 0)
        return false;
    atomic_fetch_add(&g_stat[2], n);
    *id = bi;
    return true;
}

void cpu_matmul_argmax(be_ctx *be, const be_weight *w, const be_tensor *x, be_tensor *y,
                       be_tensor *ids, const int32_t *ban, int n_ban)
{
    cpu_ctx *c = cpu_ctx_of(be);
    const int64_t R = x->rows;
    cpu_head *h = screen_ok(c, w, x) ? head_of((be_weight *)w, R, c->n_threads) : NULL;
    if (!h) {
        cpu_matmul(be, w, 0, x, y);
        cpu_argmax(be, y, ids);
        return;
    }
    CPU_PROF_BEGIN(be);
    const uint64_t arb = w->act_row_bytes;
    uint8_t *act = cpu_scratch(be, (size_t)R * arb);
    if (!act) {
        cpu_fail_scratch(be, "matmul", (size_t)R * arb);
        return;
    }
    cpu_quantize_rows(be, w, x, act);
    const int64_t nb = h->s.nb;
    for (int64_t t = 0; t < R; t++)
        h->e2[t] = cpu_q8s_token(&h->s, act + (uint64_t)t * arb, h->dx + t * nb, h->cx + t * nb);
    for (int k = 0; k < c->n_threads; k++)
        for (int64_t t = 0; t < R; t++) {
            const int64_t slot = (int64_t)k * R + t;
            cpu_q8s_cand_init(&h->cand[slot], h->e2[t], h->idx + slot * CAND_CAP,
                              h->val + slot * CAND_CAP, CAND_CAP);
        }
    head_job j = { h, act, arb, R, ban, n_ban };
    /* long runs of groups per thread, as a decode matmul's rows (cpu_matmul.c) */
    int64_t grain = h->s.ng / (2 * (int64_t)c->n_threads);
    cpu_for(be, h->s.ng, grain > 1 ? grain : 1, head_task, &j);

    const cpu_tile_fn tile = cpu_gemm_q8_0();
    int32_t *out = ids->data;
    int64_t n_full = 0;
    for (int64_t t = 0; t < R; t++) {
        int32_t id;
        h->full[t] = !choose(h, c->n_threads, R, t, w, act + (uint64_t)t * arb, tile, &id);
        if (h->full[t])
            n_full++;
        else
            out[t * ids->ld] = id;
    }
    atomic_fetch_add(&g_stat[0], R - n_full);
    atomic_fetch_add(&g_stat[1], n_full);
    CPU_PROF_END(be, BE_PROF_MATMUL(w->type));
    /* the tokens the screen could not settle: their logits in full (this
     * reuses the scratch that held act) */
    for (int64_t t = 0; n_full && t < R; t++) {
        if (!h->full[t])
            continue;
        be_tensor xr = *x, yr = *y, ir = *ids;
        xr.data = cpu_row(x, t), xr.rows = 1, xr.view = true;
        yr.data = cpu_row(y, t), yr.rows = 1, yr.view = true;
        ir.data = (int32_t *)ids->data + t * ids->ld, ir.rows = 1, ir.view = true;
        cpu_matmul(be, w, 0, &xr, &yr);
        cpu_argmax(be, &yr, &ir);
    }
}
