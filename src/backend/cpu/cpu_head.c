/* cpu_head.c: be_matmul_argmax on the CPU, the greedy choice of a head.
 *
 * Where the weight is Q8_0, the CPU has AVX-512 VNNI, no Q36_DOT_PATH is
 * forced and the batch has at least cpu_head_screen's rows (by default 2,
 * and 1 for heads of at most SHORT_K inputs: there one greedy row gains
 * too, as its exact product is far from the memory's speed, where a
 * 0.8B-geometry head of 1,024 inputs measured no change, its copy 273 MiB
 * for nothing), the screen of cpu_screen_q8.h chooses: approximate products
 * of every row, exact products (the matmul's own tile kernel, so its bits) of the
 * rows that may hold the largest logit. The choice is be_argmax's of the
 * exact logits, always; only the arithmetic differs. Banned ids are never
 * candidates (be_matmul_argmax's contract). Otherwise, and for a token
 * whose screen found a non-finite value or too many near-ties, the op is
 * be_matmul then be_argmax, whose choice may be banned: its row of y then
 * holds the logits for the caller to choose again.
 *
 * be_matmul_topk (a sampled step's k best logits, k <= 64) takes the same
 * screen with lists kept within 2E of their k-th largest approximation:
 * the k best rows' exact values and columns, be_topk's order.
 *
 * The screen reads its own copy of the head (cpu_q8s: the codes of 16
 * rows interleaved, scales as f32, 6% more bytes than the Q8_0 rows), made
 * the first time the weight meets the screen and kept with the weight:
 * 42 MiB for the default model's tied head. A head over 1 GiB gets no copy
 * (the exact path). Measured in bench/results/2026-12-05-cpu-head-screen/.
 *
 * A greedy batch of at most cpu_head_nib's rows (by default NIB_ROWS; the
 * screen is memory-bound there) first takes the high-nibble level of
 * cpu_screen_nib.h, from a second copy of half the bytes: it keeps the
 * groups of 16 rows that may hold a token's best row, and the int8 screen
 * then runs over those groups only. A token whose nibble level cannot
 * tell (too many groups kept, a non-finite value) takes the int8 screen
 * over every group, as without the level.
 *
 * CPUs with AVX2 but no AVX-512 VNNI have no int8 screen; there greedy
 * batches of at most NIB2_ROWS rows by default (under the screen's switch
 * and row rule) take the nibble level's AVX2 kernel and then the exact
 * products of the kept groups' rows, and a token it cannot settle sends
 * the batch to the full product. The level costs half the full product's
 * multiplies there, a batch of any size (test_cpu_head bench on a Zen 3,
 * one thread: 4 rows 3.70 against 6.34 ms, 16 rows 10.34 against 21.18;
 * bench/results/2026-12-07-cpu-zen3-mtp/out/kernel-bench.txt), and a
 * server's MTP verify pass of 4 slots has 16 rows. */
#include "cpu.h"

#include <assert.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_gemm_q8.h"
#include "cpu_screen_nib.h"
#include "cpu_screen_q8.h"

#define CAND_CAP   256                  /* list entries a thread keeps per token */
#define ARGMAX_CAP 64                   /* of which a greedy choice uses (near-ties of the best) */
#define COPY_MAX   (1ull << 30)         /* the largest head copied for the screen */
#define SHORT_K    512                  /* the longest rows screened one row at a time by default */
#define NIB_ROWS   4                    /* the largest batch taking the nibble level by default */
#define NIB2_ROWS  16                   /* ... where it precedes exact products (AVX2 alone) */
#define NIB_CAP    2048                 /* groups a thread keeps per token at the nibble level */
#define NIB_MISS   4                    /* batches in a row handed on ... */
#define NIB_SKIP   256                  /* ... skip the level for this many */

typedef struct cpu_head {
    cpu_q8s       s;
    bool          built;                /* s holds the copy (else the build failed or was refused) */
    bool          tried;                /* the copy was asked for */
    int64_t       cap_rows;             /* tokens the tables below hold */
    int           cap_threads;
    float        *dx;                   /* cap_rows x nb */
    int32_t      *cx;
    double       *e2;                   /* cap_rows */
    cpu_q8s_cand *cand;                 /* cap_threads x cap_rows */
    bool         *full;                 /* cap_rows: tokens left to the exact path */
    int32_t      *idx;                  /* cap_threads x cap_rows x CAND_CAP */
    float        *val;
    int32_t      *gi;                   /* cap_threads x CAND_CAP: one token's lists gathered */
    float        *gv;
    /* the nibble level (cpu_screen_nib.h), made the first time a batch takes it */
    cpu_q8n       n;
    int           nib;                  /* 0 not tried, 1 built, -1 failed */
    int           nib_miss;             /* batches in a row the level handed on */
    int           nib_skip;             /* batches left to skip the level for */
    int64_t       ncap_rows;
    int           ncap_threads;
    float        *dh, *tb, *e2f;        /* ncap_rows x nb, x nb, x 1 */
    float        *xn;                   /* ncap_rows: the tokens' norms (cpu_q8n_token_norm) */
    int32_t      *sx;                   /* ncap_rows x nb */
    cpu_q8n_list *nl;                   /* ncap_threads x ncap_rows */
    int32_t      *ngrp;                 /* ncap_threads x ncap_rows x NIB_CAP */
    float        *nup;
    _Atomic uint32_t *nshared;          /* ncap_rows: the threads' shared maxima */
    int32_t      *pairs;                /* ncap_threads x ncap_rows x NIB_CAP x 2: (token, group) */
    float        *pexact;               /* pexact_cap x 16: the pairs' rows' exact products */
    int64_t       pexact_cap;
} cpu_head;

static _Atomic int g_min_rows = -1;     /* < 0: the default rule above */
static _Atomic long g_stat[3];          /* screened tokens, tokens done in full, exact candidates */
static _Atomic int g_nib_rows = -1;     /* < 0: NIB_ROWS, or NIB2_ROWS on AVX2 alone */
static _Atomic long g_nstat[3];         /* tokens the nibble level settled, handed on, groups kept */
static _Atomic bool g_norms = true;     /* the nibble level passes over groups by their norms */

void cpu_head_nib(int max_rows)
{
    atomic_store(&g_nib_rows, max_rows < 0 ? -1 : max_rows);
}

/* the largest batch the nibble level takes: before the int8 screen, or
 * (avx2) before exact products */
static int64_t nib_rows(bool avx2)
{
    const int n = atomic_load(&g_nib_rows);
    return n >= 0 ? n : avx2 ? NIB2_ROWS : NIB_ROWS;
}

/* a row count from the environment: 0 and up, or -1 when unset */
static int env_rows(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return -1;
    const int n = atoi(v);
    return n < 0 ? 0 : n;
}

void cpu_head_norms(bool on)
{
    atomic_store(&g_norms, on);
}

int cpu_head_nib_env(void)
{
    return env_rows("Q36_CPU_HEADNIB");
}

void cpu_head_nib_stats(long out[3])
{
    for (int i = 0; i < 3; i++)
        out[i] = atomic_load(&g_nstat[i]);
}

void cpu_head_screen(int min_rows)
{
    atomic_store(&g_min_rows, min_rows < 0 ? -1 : min_rows);
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
    cpu_q8n_free(&h->n);
    free(h->dx), free(h->cx), free(h->e2), free(h->cand), free(h->full), free(h->idx);
    free(h->val), free(h->gi), free(h->gv);
    free(h->dh), free(h->tb), free(h->e2f), free(h->xn), free(h->sx), free(h->nl);
    free(h->ngrp), free(h->nup);
    free((void *)h->nshared), free(h->pairs), free(h->pexact);
    free(h);
}

int cpu_head_screen_env(void)
{
    return env_rows("Q36_CPU_HEADSCREEN");
}

uint64_t be_cpu_head_screen_bytes(const gguf_tensor *t)
{
    if (!t || t->type != QT_Q8_0 || t->ne[2] * t->ne[3] != 1 || cpu_head_screen_env() == 0)
        return 0;
    const uint64_t nib = cpu_head_nib_env() == 0 ? 0 : cpu_q8n_bytes((int64_t)t->ne[1], (int64_t)t->ne[0]);
    if (!quant_path_available(QUANT_PATH_AVX512VNNI))     /* AVX2: the nibble copy alone */
        return quant_path_available(QUANT_PATH_AVX2) && t->ne[0] / 32 <= 4096 && nib <= COPY_MAX
                   ? nib : 0;
    const uint64_t b = cpu_q8s_bytes((int64_t)t->ne[1], (int64_t)t->ne[0]);
    if (b > COPY_MAX)
        return 0;
    return b + nib;
}

/* the screen's switch and row rule (cpu_head_screen) for a batch of R
 * rows, the weight's kind (not a head in llama.cpp's AMX order: the
 * screen's exact products are the Q8_0 tile's) */
static bool rows_ok(const cpu_ctx *c, const gguf_tensor *t, int64_t R)
{
    int min_rows = atomic_load(&g_min_rows);
    if (min_rows < 0)
        min_rows = t->ne[0] <= SHORT_K ? 1 : 2;
    return min_rows > 0 && R >= min_rows && t->type == QT_Q8_0 && c->dot_path < 0 &&
           t->ne[2] * t->ne[3] == 1 && !cpu_amx_weight(c, t, false);
}

static bool screen_ok(const cpu_ctx *c, const gguf_tensor *t, int64_t R)
{
    return rows_ok(c, t, R) && quant_path_available(QUANT_PATH_AVX512VNNI) &&
           cpu_q8s_bytes((int64_t)t->ne[1], (int64_t)t->ne[0]) <= COPY_MAX;
}

/* be_head_cheap: a draft's one row takes the int8 screen */
bool cpu_head_cheap(const be_ctx *be, const gguf_tensor *t)
{
    return t && screen_ok(cpu_ctx_of(be), t, 1);
}

/* *pp (a pointer to any table) reallocated to bytes; false, *pp unchanged,
 * when out of memory */
static bool grow(void *pp, size_t bytes)
{
    void **p = pp, *n = realloc(*p, bytes);
    if (!n)
        return false;
    *p = n;
    return true;
}

/* s's sizes without its copy (the AVX2 nibble path: cpu_q8s_token reads
 * nb and wmax only; nib_of sets wmax from the nibble copy's build) */
static void head_meta(cpu_head *h, const be_weight *w)
{
    const int64_t N = (int64_t)w->t->ne[1], K = (int64_t)w->t->ne[0];
    h->s = (cpu_q8s){ .N = N, .K = K, .nb = K / 32, .ng = (N + CPU_Q8S_G - 1) / CPU_Q8S_G,
                      .wmax = NAN };
}

/* The weight's screen with tables for R tokens and T threads, or NULL;
 * q8s: with the int8 copy (else its sizes and bound only). The copy's
 * build (the first call's) counts in the profile as the head's product
 * time. */
static cpu_head *head_of(be_ctx *be, be_weight *w, int64_t R, int T, bool q8s)
{
    cpu_head *h = w->impl;
    if (!h) {
        h = calloc(1, sizeof *h);
        if (!h)
            return NULL;
        w->impl = h;
    }
    if (q8s && !h->tried) {
        const uint64_t t0 = cpu_prof_now();
        h->tried = true;
        h->built = cpu_q8s_build(&h->s, w->data, w->row_bytes, (int64_t)w->t->ne[1],
                                 (int64_t)w->t->ne[0]) == 0;
        cpu_prof_add_time(be, BE_PROF_MATMUL(w->type), t0);
    }
    if (q8s && !h->built)
        return NULL;
    if (!q8s && !h->s.nb)
        head_meta(h, w);
    if (R > h->cap_rows || T > h->cap_threads) {
        const int64_t r = R > h->cap_rows ? R : h->cap_rows;
        const int t = T > h->cap_threads ? T : h->cap_threads;
        const size_t nb = (size_t)h->s.nb, slots = (size_t)t * (size_t)r;
        /* every table is tried; what grew is kept, the sizes stay the old ones on failure */
        const bool ok = grow(&h->dx, sizeof *h->dx * nb * (size_t)r) &
                        grow(&h->cx, sizeof *h->cx * nb * (size_t)r) &
                        grow(&h->e2, sizeof *h->e2 * (size_t)r) &
                        grow(&h->cand, sizeof *h->cand * slots) &
                        grow(&h->full, sizeof *h->full * (size_t)r) &
                        grow(&h->idx, sizeof *h->idx * slots * CAND_CAP) &
                        grow(&h->val, sizeof *h->val * slots * CAND_CAP) &
                        grow(&h->gi, sizeof *h->gi * (size_t)t * CAND_CAP) &
                        grow(&h->gv, sizeof *h->gv * (size_t)t * CAND_CAP);
        if (!ok)
            return NULL;
        h->cap_rows = r;
        h->cap_threads = t;
    }
    return h;
}

/* h's nibble level with tables for R tokens and T threads; false when it
 * is off for this batch, or its copy or tables could not be made. timed:
 * the copy's build (the first call's) counts in the profile as the head's
 * product time (false: the caller's timed op holds it already). */
static bool nib_of(be_ctx *be, cpu_head *h, const be_weight *w, int64_t R, int T, bool timed)
{
    if (R > nib_rows(!quant_path_available(QUANT_PATH_AVX512VNNI)))
        return false;
    if (!h->nib) {
        const uint64_t t0 = cpu_prof_now();
        h->nib = cpu_q8n_build(&h->n, w->data, w->row_bytes, (int64_t)w->t->ne[1],
                               (int64_t)w->t->ne[0]) == 0 ? 1 : -1;
        if (timed)      /* else inside the caller's timed op */
            cpu_prof_add_time(be, BE_PROF_MATMUL(w->type), t0);
        if (h->nib > 0 && !h->s.data)   /* the build read every scale: the bound's */
            h->s.wmax = h->n.wmax;
    }
    if (h->nib < 0)
        return false;
    if (h->nib_skip > 0) {      /* a head the level does not settle (random weights) */
        h->nib_skip--;
        return false;
    }
    if (R > h->ncap_rows || T > h->ncap_threads) {
        const int64_t r = R > h->ncap_rows ? R : h->ncap_rows;
        const int t = T > h->ncap_threads ? T : h->ncap_threads;
        const size_t nb = (size_t)h->n.nb, slots = (size_t)t * (size_t)r;
        const bool ok = grow(&h->dh, sizeof *h->dh * nb * (size_t)r) &
                        grow(&h->tb, sizeof *h->tb * nb * (size_t)r) &
                        grow(&h->e2f, sizeof *h->e2f * (size_t)r) &
                        grow(&h->xn, sizeof *h->xn * (size_t)r) &
                        grow(&h->sx, sizeof *h->sx * nb * (size_t)r) &
                        grow(&h->nl, sizeof *h->nl * slots) &
                        grow(&h->ngrp, sizeof *h->ngrp * slots * NIB_CAP) &
                        grow(&h->nup, sizeof *h->nup * slots * NIB_CAP) &
                        grow(&h->nshared, sizeof *h->nshared * (size_t)r) &
                        grow(&h->pairs, sizeof *h->pairs * slots * NIB_CAP * 2);
        if (!ok)
            return false;
        h->ncap_rows = r;
        h->ncap_threads = t;
    }
    return true;
}

typedef struct {
    const cpu_head *h;
    const uint8_t  *act;
    uint64_t        arb;
    int64_t         R;
    const int32_t  *ban;
    int             n_ban;
    bool            avx2;           /* the nibble level's AVX2 kernel (no int8 screen) */
} head_job;

static void nib_task(void *arg, int64_t g0, int64_t g1, int tid)
{
    const head_job *j = arg;
    const cpu_head *h = j->h;
    (j->avx2 ? cpu_q8n_avx2 : cpu_q8n_avx512vnni)(
        &h->n, g0, g1, j->act, j->arb, (int)j->R, h->dh, h->sx, h->tb, h->e2f,
        atomic_load(&g_norms) ? h->xn : NULL, h->nl + (int64_t)tid * j->R, j->ban, j->n_ban,
        NULL, NULL, 0);
}

static void pair_task(void *arg, int64_t i0, int64_t i1, int tid)
{
    const head_job *j = arg;
    const cpu_head *h = j->h;
    const int64_t nb = h->s.nb;
    for (int64_t i = i0; i < i1; i++) {
        const int64_t t = h->pairs[2 * i], g = h->pairs[2 * i + 1];
        cpu_q8s_avx512vnni(&h->s, g, g + 1, j->act + (uint64_t)t * j->arb, j->arb, 1,
                           h->dx + t * nb, h->cx + t * nb, h->cand + (int64_t)tid * j->R + t,
                           j->ban, j->n_ban, NULL, 0);
    }
}

/* After the level: each token's kept (token, group) pairs into h->pairs;
 * their count, or -1 when a token cannot be settled */
static int64_t nib_pairs(cpu_head *h, int64_t R, int T)
{
    int64_t n = 0;
    for (int64_t t = 0; t < R; t++) {
        float M = cpu_q8n_unkey(atomic_load(&h->nshared[t]));
        for (int th = 0; th < T; th++) {
            const cpu_q8n_list *l = &h->nl[(int64_t)th * R + t];
            if (l->bad)
                return -1;
            M = l->max > M ? l->max : M;
        }
        if (!isfinite(M) || !isfinite(h->e2f[t]))
            return -1;
        for (int th = 0; th < T; th++) {        /* threads' groups are disjoint */
            const cpu_q8n_list *l = &h->nl[(int64_t)th * R + t];
            for (int i = 0; i < l->n; i++)
                if (l->up[i] >= M) {
                    h->pairs[2 * n] = (int32_t)t;
                    h->pairs[2 * n++ + 1] = l->grp[i];
                }
        }
    }
    return n;
}

static void nib_missed(cpu_head *h, int64_t R)
{
    atomic_fetch_add(&g_nstat[1], R);
    if (++h->nib_miss >= NIB_MISS) {
        h->nib_miss = 0;
        h->nib_skip = NIB_SKIP;
    }
}

/* the level's tables for the batch and its pass over every group */
static void nib_level(be_ctx *be, cpu_head *h, const head_job *j)
{
    cpu_ctx *c = cpu_ctx_of(be);
    const int64_t R = j->R, nb = h->n.nb;
    const int T = c->n_threads;
    for (int64_t t = 0; t < R; t++) {
        const uint8_t *a = j->act + (uint64_t)t * j->arb;
        h->e2f[t] = cpu_q8n_token(&h->n, a, h->e2[t], h->dh + t * nb, h->sx + t * nb,
                                  h->tb + t * nb);
        h->xn[t] = cpu_q8n_token_norm(&h->n, a);
    }
    for (int64_t t = 0; t < R; t++)
        atomic_store(&h->nshared[t], cpu_q8n_key(-INFINITY));
    for (int th = 0; th < T; th++)
        for (int64_t t = 0; t < R; t++) {
            const int64_t slot = (int64_t)th * R + t;
            cpu_q8n_list_init(&h->nl[slot], h->ngrp + slot * NIB_CAP, h->nup + slot * NIB_CAP,
                              NIB_CAP, &h->nshared[t]);
        }
    int64_t grain = h->n.ng / (2 * (int64_t)T);
    cpu_for(be, h->n.ng, grain > 1 ? grain : 1, nib_task, (void *)j);
}

/* The nibble level for every token of the batch, then the int8 screen over
 * each token's kept groups; false when a token needs the int8 screen over
 * every group (the candidate lists are then to be made again). */
static bool screen_nib(be_ctx *be, cpu_head *h, const head_job *j)
{
    const int64_t R = j->R;
    const int T = cpu_ctx_of(be)->n_threads;
    nib_level(be, h, j);
    const int64_t n = nib_pairs(h, R, T);
    if (n < 0)
        goto whole;
    /* spread over the threads: a pair's group is one scattered read of a
     * few KiB, and a token's candidates go to the list of the thread that
     * met them (choose() reads every thread's) */
    cpu_for(be, n, n / (2 * (int64_t)T) > 1 ? n / (2 * (int64_t)T) : 1, pair_task, (void *)j);
    atomic_fetch_add(&g_nstat[0], R);
    atomic_fetch_add(&g_nstat[2], n);
    h->nib_miss = 0;
    return true;
whole:
    nib_missed(h, R);
    return false;
}

static void head_task(void *arg, int64_t g0, int64_t g1, int tid)
{
    const head_job *j = arg;
    cpu_q8s_avx512vnni(&j->h->s, g0, g1, j->act, j->arb, (int)j->R, j->h->dx, j->h->cx,
                       j->h->cand + (int64_t)tid * j->R, j->ban, j->n_ban, NULL, 0);
}

/* x's rows quantized to the scratch and screened for their k best rows:
 * the activation rows, or NULL when the scratch failed (recorded). */
static void cand_init_all(const cpu_ctx *c, cpu_head *h, int64_t R, int k)
{
    for (int th = 0; th < c->n_threads; th++)
        for (int64_t t = 0; t < R; t++) {
            const int64_t slot = (int64_t)th * R + t;
            cpu_q8s_cand_init(&h->cand[slot], h->e2[t], h->idx + slot * CAND_CAP,
                              h->val + slot * CAND_CAP, k == 1 ? ARGMAX_CAP : CAND_CAP, k);
        }
}

static const uint8_t *screen(be_ctx *be, cpu_head *h, const be_weight *w, const be_tensor *x,
                             int k, const int32_t *ban, int n_ban)
{
    cpu_ctx *c = cpu_ctx_of(be);
    const int64_t R = x->rows;
    const uint64_t arb = w->act_row_bytes;
    uint8_t *act = cpu_scratch(be, (size_t)R * arb);
    if (!act) {
        cpu_fail_scratch(be, "matmul", (size_t)R * arb);
        return NULL;
    }
    cpu_quantize_rows(be, w, x, act);
    const int64_t nb = h->s.nb;
    for (int64_t t = 0; t < R; t++)
        h->e2[t] = cpu_q8s_token(&h->s, act + (uint64_t)t * arb, h->dx + t * nb, h->cx + t * nb);
    cand_init_all(c, h, R, k);
    head_job j = { h, act, arb, R, ban, n_ban, false };
    if (k == 1 && nib_of(be, h, w, R, c->n_threads, false)) {
        if (screen_nib(be, h, &j))
            return act;
        cand_init_all(c, h, R, k);
    }
    /* long runs of groups per thread, as a decode matmul's rows (cpu_matmul.c) */
    int64_t grain = h->s.ng / (2 * (int64_t)c->n_threads);
    cpu_for(be, h->s.ng, grain > 1 ? grain : 1, head_task, &j);
    return act;
}

/* row r's exact product with activation row a: the matmul's own tile */
static float exact(const be_weight *w, int32_t r, const uint8_t *a)
{
    float e;
    cpu_gemm_q8_0()((int64_t)w->t->ne[0], (const uint8_t *)w->data + (uint64_t)r * w->row_bytes,
                    w->row_bytes, 1, a, w->act_row_bytes, 1, &e, 1);
    return e;
}

/* Token t's choice from its candidates; false when the screen cannot tell. */
static bool choose(const cpu_head *h, int T, int64_t R, int64_t t, const be_weight *w,
                   const uint8_t *a, int32_t *id)
{
    float amax = -INFINITY;
    for (int th = 0; th < T; th++) {
        const cpu_q8s_cand *c = &h->cand[(int64_t)th * R + t];
        if (c->bad)
            return false;
        amax = c->max > amax ? c->max : amax;
    }
    if (!isfinite(amax))
        return false;
    const double thr = (double)amax - h->e2[t];
    float best = -INFINITY;
    int32_t bi = -1;
    long n = 0;
    for (int th = 0; th < T; th++) {    /* threads' lists hold disjoint rows */
        const cpu_q8s_cand *c = &h->cand[(int64_t)th * R + t];
        for (int i = 0; i < c->n; i++) {
            if (!((double)c->val[i] >= thr))
                continue;
            const int32_t r = c->idx[i];
            const float e = exact(w, r, a);
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

/* Token t's k best rows, best first (the larger value, the lower row among
 * equal ones), to id[0..k) and v[0..k); false when the screen cannot tell. */
static bool choose_k(cpu_head *h, int T, int64_t R, int64_t t, int k, const be_weight *w,
                     const uint8_t *a, int32_t *id, float *v)
{
    int n = 0;
    for (int th = 0; th < T; th++) {
        const cpu_q8s_cand *c = &h->cand[(int64_t)th * R + t];
        if (c->bad)
            return false;
        memcpy(h->gi + n, c->idx, sizeof(int32_t) * (size_t)c->n);
        memcpy(h->gv + n, c->val, sizeof(float) * (size_t)c->n);
        n += c->n;
    }
    if (n < k)
        return false;
    float kth;
    if (n <= CPU_Q8S_CAP_MAX) {
        kth = cpu_q8s_kth(h->gv, n, k);
    } else {            /* more than a selection holds: a thread's k-th is at or below the k-th */
        kth = -INFINITY;
        for (int th = 0, o = 0; th < T; th++) {
            const cpu_q8s_cand *c = &h->cand[(int64_t)th * R + t];
            if (c->n >= k) {
                const float q = cpu_q8s_kth(h->gv + o, c->n, k);
                kth = q > kth ? q : kth;
            }
            o += c->n;
        }
    }
    if (!isfinite(kth))
        return false;
    const double thr = (double)kth - h->e2[t];
    int m = 0;          /* the best so far, sorted, in id/v */
    long cnt = 0;
    for (int i = 0; i < n; i++) {
        if (!((double)h->gv[i] >= thr))
            continue;
        const int32_t r = h->gi[i];
        const float e = exact(w, r, a);
        cnt++;
        if (e != e)
            return false;
        if (m == k && !(e > v[k - 1] || (e == v[k - 1] && r < id[k - 1])))
            continue;
        int at = m < k ? m : k - 1;
        for (; at > 0 && (e > v[at - 1] || (e == v[at - 1] && r < id[at - 1])); at--) {
            v[at] = v[at - 1];
            id[at] = id[at - 1];
        }
        v[at] = e;
        id[at] = r;
        m += m < k;
    }
    if (m < k)
        return false;
    atomic_fetch_add(&g_stat[2], cnt);
    return true;
}

/* CPUs with AVX2 but no AVX-512 VNNI (no int8 screen): greedy batches of
 * at most cpu_head_nib's rows take the nibble level (its AVX2 kernel) and
 * then the exact products of the kept groups' rows, under the screen's
 * switch and row rule */
static bool nib2_ok(const cpu_ctx *c, const be_weight *w, const be_tensor *x)
{
    return rows_ok(c, w->t, x->rows) && x->rows <= nib_rows(true) &&
           !quant_path_available(QUANT_PATH_AVX512VNNI) &&
           quant_path_available(QUANT_PATH_AVX2) && w->t->ne[0] / 32 <= 4096 &&
           cpu_q8n_bytes((int64_t)w->t->ne[1], (int64_t)w->t->ne[0]) <= COPY_MAX;
}

static bool banned(const int32_t *ban, int n_ban, int64_t r)
{
    for (int i = 0; i < n_ban && ban[i] <= r; i++)
        if (ban[i] == r)
            return true;
    return false;
}

typedef struct {
    const cpu_head  *h;
    const be_weight *w;
    const uint8_t   *act;
} exact_job;

/* pairs [i0, i1): the exact products of a kept (token, group) pair's rows,
 * one tile call a group (its bits are the one-row call's), to pexact */
static void exact_task(void *arg, int64_t i0, int64_t i1, int tid)
{
    (void)tid;
    const exact_job *j = arg;
    const be_weight *w = j->w;
    const int64_t N = (int64_t)w->t->ne[1];
    for (int64_t i = i0; i < i1; i++) {
        const int64_t t = j->h->pairs[2 * i], r0 = (int64_t)j->h->pairs[2 * i + 1] * CPU_Q8N_G;
        const int64_t m = N - r0 < CPU_Q8N_G ? N - r0 : CPU_Q8N_G;
        const uint8_t *rows = (const uint8_t *)w->data + (uint64_t)r0 * w->row_bytes;
        cpu_gemm_q8_0()((int64_t)w->t->ne[0], rows, w->row_bytes, m,
                        j->act + (uint64_t)t * w->act_row_bytes, w->act_row_bytes, 1,
                        j->h->pexact + i * CPU_Q8N_G, CPU_Q8N_G);
    }
}

/* The AVX2 path of nib2_ok; false when it cannot tell (the caller takes
 * the full product). */
static bool argmax_nib2(be_ctx *be, const be_weight *w, const be_tensor *x, be_tensor *ids,
                        const int32_t *ban, int n_ban)
{
    cpu_ctx *c = cpu_ctx_of(be);
    const int64_t R = x->rows;
    const int T = c->n_threads;
    cpu_head *h = head_of(be, (be_weight *)w, R, T, false);
    if (!h || !nib_of(be, h, w, R, T, true))
        return false;
    const uint64_t arb = w->act_row_bytes;
    uint8_t *act = cpu_scratch(be, (size_t)R * arb);
    if (!act)
        return false;
    CPU_PROF_BEGIN(be);
    cpu_quantize_rows(be, w, x, act);
    const int64_t nb = h->s.nb, N = h->s.N;
    for (int64_t t = 0; t < R; t++)
        h->e2[t] = cpu_q8s_token(&h->s, act + (uint64_t)t * arb, h->dx + t * nb, h->cx + t * nb);
    head_job j = { h, act, arb, R, ban, n_ban, true };
    nib_level(be, h, &j);
    const int64_t n = nib_pairs(h, R, T);
    bool ok = n >= 0;
    if (ok && n > h->pexact_cap) {
        ok = grow(&h->pexact, sizeof *h->pexact * (size_t)n * CPU_Q8N_G);
        h->pexact_cap = ok ? n : h->pexact_cap;
    }
    int32_t *out = ids->data;
    long exact_rows = 0;
    if (ok) {       /* a pass the level hardly settles keeps hundreds of groups */
        exact_job ej = { h, w, act };
        cpu_for(be, n, n / (2 * (int64_t)T) > 4 ? n / (2 * (int64_t)T) : 4, exact_task, &ej);
    }
    for (int64_t i = 0, t = 0; ok && t < R; t++) {     /* pairs come token by token */
        float best = -INFINITY;
        int64_t bi = -1;
        for (; i < n && h->pairs[2 * i] == t; i++)
            for (int64_t r = (int64_t)h->pairs[2 * i + 1] * CPU_Q8N_G;
                 r < N && r < ((int64_t)h->pairs[2 * i + 1] + 1) * CPU_Q8N_G; r++) {
                if (banned(ban, n_ban, r))
                    continue;
                const float e = h->pexact[i * CPU_Q8N_G + r % CPU_Q8N_G];
                exact_rows++;
                if (e != e) {
                    ok = false;
                    break;
                }
                if (bi < 0 || e > best || (e == best && r < bi)) {
                    best = e;
                    bi = r;
                }
            }
        ok &= bi >= 0;
        if (ok)
            out[t * ids->ld] = (int32_t)bi;
    }
    CPU_PROF_END(be, BE_PROF_MATMUL(w->type));
    if (!ok) {
        nib_missed(h, R);
        return false;
    }
    atomic_fetch_add(&g_nstat[0], R);
    atomic_fetch_add(&g_nstat[2], n);
    atomic_fetch_add(&g_stat[2], exact_rows);
    h->nib_miss = 0;
    return true;
}

/* a one-row view of row t of a (rows of a->ld elements of 4 bytes) */
static be_tensor row_view(const be_tensor *a, int64_t t)
{
    be_tensor v = *a;
    v.data = (uint8_t *)a->data + (size_t)(t * a->ld) * 4;
    v.rows = 1;
    v.view = true;
    return v;
}

void cpu_matmul_argmax(be_ctx *be, const be_weight *w, const be_tensor *x, be_tensor *y,
                       be_tensor *ids, const int32_t *ban, int n_ban)
{
    cpu_ctx *c = cpu_ctx_of(be);
    const int64_t R = x->rows;
    cpu_head *h = screen_ok(c, w->t, x->rows) ? head_of(be, (be_weight *)w, R, c->n_threads, true) : NULL;
    if (!h) {
        if (nib2_ok(c, w, x) && argmax_nib2(be, w, x, ids, ban, n_ban))
            return;
        cpu_matmul(be, w, 0, x, y);
        cpu_argmax(be, y, ids);
        return;
    }
    CPU_PROF_BEGIN(be);
    const uint8_t *act = screen(be, h, w, x, 1, ban, n_ban);
    if (!act)
        return;
    int32_t *out = ids->data;
    int64_t n_full = 0;
    for (int64_t t = 0; t < R; t++) {
        int32_t id;
        h->full[t] = !choose(h, c->n_threads, R, t, w, act + (uint64_t)t * w->act_row_bytes, &id);
        if (h->full[t])
            n_full++;
        else
            out[t * ids->ld] = id;
    }
    atomic_fetch_add(&g_stat[0], R - n_full);
    atomic_fetch_add(&g_stat[1], n_full);
    CPU_PROF_END(be, BE_PROF_MATMUL(w->type));
    if (!n_full)
        return;
    /* the tokens the screen could not settle: the product of the whole
     * batch, as be_matmul would take it (a batch of one row takes another
     * kernel, whose bits differ for a NaN input), then their choices */
    cpu_matmul(be, w, 0, x, y);
    for (int64_t t = 0; t < R; t++)
        if (h->full[t]) {
            be_tensor yr = row_view(y, t), ir = row_view(ids, t);
            cpu_argmax(be, &yr, &ir);
        }
}

void cpu_matmul_topk(be_ctx *be, const be_weight *w, const be_tensor *x, be_tensor *y, int64_t k,
                     be_tensor *ids, be_tensor *vals)
{
    cpu_ctx *c = cpu_ctx_of(be);
    const int64_t R = x->rows;
    cpu_head *h = k >= 1 && k * 4 <= CAND_CAP && k <= (int64_t)w->t->ne[1] && screen_ok(c, w->t, x->rows)
                      ? head_of(be, (be_weight *)w, R, c->n_threads, true) : NULL;
    if (!h) {
        cpu_matmul(be, w, 0, x, y);
        cpu_topk(be, y, k, ids, vals);
        return;
    }
    CPU_PROF_BEGIN(be);
    const uint8_t *act = screen(be, h, w, x, (int)k, NULL, 0);
    if (!act)
        return;
    int64_t n_full = 0;
    for (int64_t t = 0; t < R; t++) {
        h->full[t] = !choose_k(h, c->n_threads, R, t, (int)k, w, act + (uint64_t)t * w->act_row_bytes,
                               (int32_t *)ids->data + t * ids->ld, cpu_row(vals, t));
        n_full += h->full[t];
    }
    atomic_fetch_add(&g_stat[0], R - n_full);
    atomic_fetch_add(&g_stat[1], n_full);
    CPU_PROF_END(be, BE_PROF_MATMUL(w->type));
    if (!n_full)
        return;
    cpu_matmul(be, w, 0, x, y);         /* as in cpu_matmul_argmax */
    for (int64_t t = 0; t < R; t++)
        if (h->full[t]) {
            be_tensor yr = row_view(y, t), ir = row_view(ids, t), vr = row_view(vals, t);
            cpu_topk(be, &yr, k, &ir, &vr);
        }
}
