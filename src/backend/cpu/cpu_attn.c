/* cpu_attn.c: the CPU backend's K/V cache write and causal attention over
 * the cache, tiled.
 *
 * The numerics are the reference's (cpu_attn_ref.c, ggml's non-flash
 * path): scores in ggml_vec_dot_f32's order, softmax with max subtraction
 * and per-chunk tree sums added in double, probabilities times V in the f32
 * GEMM's lane order, f16 rounding of the query and the probabilities for
 * f16 caches. What changes is the loop order. A work item is one KV head,
 * the query heads of its group (or a part of them) and a tile of query
 * rows, about 32 query vectors (64 on the AVX2 path): each K and V row is
 * read from memory once for all of them (once per query head and row
 * before, and widened from f16 each time), scores for the whole tile are
 * kept, and the vector kernels (cpu_attn_avx512.c, cpu_attn_avx2.c on CPUs
 * without AVX-512) read V rows as they are into the reference's
 * accumulator layout (pv_rows); the generic kernels, and the AVX2 ones for
 * a tile of more than 4 queries, widen a block of rows to f32 first
 * (exact), the generic ones then using cpu_fdot's dot and axpy.
 * Items run over (row tile, KV head), the last rows (most keys) first;
 * when they are fewer than the threads (decode with one KV head) the
 * group is split over items.
 * One query row (decode, vector kernels) first takes a keys' pass: items over
 * ranges of positions, each scoring every head over whole cache rows (the
 * cache is memory-bound there, and one KV head's part of each row streams
 * at about half the bandwidth); the items per KV head then start from
 * those scores. Scores do not depend on which keys are computed together,
 * so the bits are the same.
 * The per-thread scratch of a tile (scores of its queries over every key,
 * about 32 x n_ctx floats) is the most a call takes; the engine reserves
 * it up front (be_reserve, from cpu_attention_scratch). A batch runs each
 * sequence's rows over its slot's cache rows as one call. */
#include "cpu_attn.h"
#include "cpu.h"

#include <assert.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "../../quant/fp16.h"
#include "../../quant/quant.h"
#include "cpu_gexp.h"
#include "cpu_vexp.h"

/* The rows of one run into its slot's cache rows [dst0, dst0+n). */
static void kv_store_run(be_tensor *kc, be_tensor *vc, const be_tensor *k, const be_tensor *v,
                         int64_t row0, int64_t n, int64_t dst0)
{
    const be_tensor *src[2] = { k, v };
    be_tensor *dst[2] = { kc, vc };
    for (int s = 0; s < 2; s++) {
        for (int64_t r = row0; r < row0 + n; r++) {
            const float *x = cpu_row(src[s], r);
            if (dst[s]->f16) {
                uint16_t *d = (uint16_t *)dst[s]->data + (dst0 + r - row0) * dst[s]->ld;
                for (int64_t c = 0; c < dst[s]->cols; c++)
                    d[c] = quant_f32_to_f16(x[c]);
            } else if (dst[s]->type == BE_Q8_0) {   /* as ggml's set_rows quantizes */
                quant_act_quantize(QT_Q8_0, x, (char *)dst[s]->data + (size_t)(dst0 + r - row0) *
                                   be_type_bytes(BE_Q8_0, dst[s]->ld), dst[s]->cols);
            } else {
                memcpy(cpu_row(dst[s], dst0 + r - row0), x, (size_t)dst[s]->cols * sizeof(float));
            }
        }
    }
}

void cpu_kv_store(be_ctx *be, be_tensor *kc, be_tensor *vc, const be_tensor *k,
                  const be_tensor *v, const be_batch *b)
{
    CPU_PROF_BEGIN(be);
    assert(k->cols == kc->cols && v->cols == vc->cols && k->rows == v->rows);
    for (int s = 0; s < b->n_seq; s++) {
        const be_seq *q = &b->seq[s];
        const int64_t dst0 = (int64_t)q->slot * b->kv_rows + q->pos0;
        assert(dst0 + q->n_rows <= kc->rows && dst0 + q->n_rows <= vc->rows);
        kv_store_run(kc, vc, k, v, q->row0, q->n_rows, dst0);
    }
    CPU_PROF_END(be, BE_PROF_KV_STORE);
}

/* --------------------------------------------------------------- attention */

typedef struct {
    const be_tensor *q, *kc, *vc;
    be_tensor *out;
    int64_t pos0, T, hd, group, n_kv_head;
    int64_t rows;        /* query rows per tile */
    int64_t n_tiles;     /* row tiles */
    int64_t n_split;     /* parts of a group, each hsub query heads */
    int64_t hsub;
    int64_t sld;         /* scores row stride: pos0 + T rounded up to a block */
    float scale;
    int path, W;
    const cpu_attn_kernels *ks;   /* the path's vector kernels, NULL for generic */
    be_ctx *be;
    float *Qs, *Ss;      /* one query row (rows == 1): every head's query and
                            scores, filled by the keys' pass (or NULL) */
} attn_plan;

/* n rows of hd f16 values (ld apart) widened to f32 rows hd apart. */
__attribute__((target("avx,f16c")))
static void f16_rows_f16c(int64_t n, int64_t hd, const uint16_t *src, int64_t ld, float *dst)
{
    for (int64_t r = 0; r < n; r++) {
        int64_t c = 0;
        if (r + 8 < n)      /* the row 8 ahead, which the prefetchers ask for late */
            for (int64_t b = 0; b < hd * 2; b += 64)
                _mm_prefetch((const char *)(src + (r + 8) * ld) + b, _MM_HINT_T0);
        for (; c + 8 <= hd; c += 8)
            _mm256_storeu_ps(dst + r * hd + c,
                             _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + r * ld + c))));
        for (; c < hd; c++)
            dst[r * hd + c] = quant_f16_to_f32(src[r * ld + c]);
    }
}

/* Row p0 of KV head kvh in a cache (f16 or f32 elements). */
static const void *cache_at(const attn_plan *pl, const be_tensor *c, int64_t kvh, int64_t p0)
{
    const int64_t off = p0 * c->ld + kvh * pl->hd;
    return c->f16 ? (const void *)((const uint16_t *)c->data + off)
                  : (const void *)((const float *)c->data + off);
}

/* Rows [p0, p0+n) of one KV head of a cache as f32 rows hd apart. */
static void cache_rows(const attn_plan *pl, const be_tensor *c, int64_t kvh, int64_t p0, int64_t n,
                       float *dst)
{
    const int64_t hd = pl->hd;
    if (c->f16) {
        const uint16_t *s = cache_at(pl, c, kvh, p0);
        if (quant_path_available(QUANT_PATH_AVX2))      /* AVX2, FMA, F16C */
            f16_rows_f16c(n, hd, s, c->ld, dst);
        else
            for (int64_t r = 0; r < n; r++)
                for (int64_t d = 0; d < hd; d++)
                    dst[r * hd + d] = quant_f16_to_f32(s[r * c->ld + d]);
    } else {
        for (int64_t r = 0; r < n; r++)
            memcpy(dst + r * hd, cpu_row(c, p0 + r) + kvh * hd, (size_t)hd * sizeof(float));
    }
}

/* Scores to probabilities in place, the reference's softmax: max, ggml's
 * lane exp (cpu_gexp.h; llama.cpp's softmax runs it on every position of
 * its padded rows) by chunks of W positions each summed
 * as a tree into a double, one float 1/sum, then rounded to f16 for an
 * f16 V cache. */
static void softmax_row(const attn_plan *pl, float *s, int64_t n)
{
    if (pl->ks) {
        pl->ks->softmax(n, s, pl->vc->f16);
        return;
    }
    const int W = pl->W;
    float mx = -INFINITY;
    for (int64_t p = 0; p < n; p++)
        mx = s[p] > mx ? s[p] : mx;
    for (int64_t p = 0; p < n; p++)
        s[p] = s[p] - mx;
    cpu_gexp_row(cpu_vexp_level(), n, s, s);
    double sum = 0.0;
    for (int64_t p0 = 0; p0 < n; p0 += W) {
        float lanes[16];
        for (int l = 0; l < W; l++)
            lanes[l] = p0 + l < n ? s[p0 + l] : 0.0f;
        sum += (double)cpu_lane_sum(lanes, W);
    }
    const float inv = (float)(1.0 / sum);
    for (int64_t p = 0; p < n; p++) {
        s[p] *= inv;
        if (pl->vc->f16)
            s[p] = quant_f16_to_f32(quant_f32_to_f16(s[p]));
    }
}

/* Query rows per tile for T rows and a group of query heads: about 32
 * query vectors, 64 on the AVX2 path. Measured (one thread, T=512 at depth
 * 4096, head 256, 4 heads per KV head, noisy shared machine, AVX-512):
 * 16 -> 22.6-28.3 ns/score, 24 -> 18.0-20.0, 32 -> 18.3-22.5. On an AVX2
 * Zen 1 with K and V blocks widened (widen below; two threads, 512 rows
 * at depth 4096): 32 -> 22.0-22.2 ns/score, 64 -> 21.1-21.2, 128 ->
 * 20.7-21.1 (bench/results/2026-12-06-cpu-zen1-attn/tiles.txt); 128
 * would double the scores' scratch (query vectors x n_ctx floats a
 * thread) for 1-2%. */
static int64_t tile_rows(int path, int64_t group, int64_t T)
{
    const int64_t v = path == CPU_ATTN_AVX2 ? 64 : 32;
    const int64_t rows = group >= v ? 1 : v / group;
    return rows < T ? rows : T;
}

/* Whether a tile of nq query vectors has the AVX2 kernels read a block of
 * an f16 cache widened to f32 rows once (cache_rows) rather than widen
 * each row where they read it, once per group of 4 queries: part of the
 * 1.36x of bench/results/2026-12-06-cpu-zen1-attn (a Zen 1, 512 rows at
 * depth 4096). Not on the AVX-512 path (not measured there)
 * nor for a tile of 4 or fewer, where each row is read once anyway. */
static int widen(const attn_plan *pl, const be_tensor *c, int64_t nq)
{
    return pl->path == CPU_ATTN_AVX2 && c->f16 && nq > 4;
}

/* Score row stride for n keys: a whole block longer than the keys, plus
 * 16 floats so that the rows of a tile do not start on the same L1 sets. */
static int64_t score_ld(int64_t n)
{
    return (n + CPU_ATTN_KB - 1) / CPU_ATTN_KB * CPU_ATTN_KB + 16;
}

/* Per-thread scratch, in floats, of a tile of nq query vectors of hd
 * values with score rows sld apart: the queries, their scores, one block
 * of K or V rows as f32, the lane accumulators. */
static size_t scratch_floats(int64_t hd, int64_t nq, int64_t sld)
{
    const int64_t hd16 = (hd + 15) / 16 * 16;
    return (size_t)(nq * hd + nq * sld + CPU_ATTN_KB * hd16 + nq * hd * 16);
}

/* Bytes of the shared scratch of one query row (the keys' pass): every
 * head's query and scores. */
static size_t shared_bytes(int64_t n_head, int64_t hd, int64_t sld)
{
    return (size_t)(n_head * (hd + sld)) * sizeof(float);
}

/* The most scratch_floats a call takes with at most n_batch query rows
 * over at most n_ctx positions: every term grows with the rows of a tile,
 * the heads of a part (at most the group) and the keys. */
static size_t scratch_floats_max(int64_t n_ctx, int64_t n_batch, int64_t n_head,
                                 int64_t n_head_kv, int64_t head_dim)
{
    const int64_t group = n_head / n_head_kv, T = n_batch < n_ctx ? n_batch : n_ctx;
    return scratch_floats(head_dim, tile_rows(cpu_attn_best_path(), group, T) * group,
                          score_ld(n_ctx));
}

/* Positions query vector i of a tile starting at row r0 sees. */
static inline int64_t n_kv_of(const attn_plan *pl, int64_t r0, int64_t i)
{
    return pl->pos0 + r0 + i / pl->hsub + 1;
}

/* The queries of a tile (rows r0.., heads h0.., nq vectors) into Q, as
 * the scores read them, and their scores over keys [0, n_max) of KV head
 * kvh into S; B takes a block of K rows (generic kernels). */
static void tile_scores(const attn_plan *pl, int64_t kvh, int64_t r0, int64_t h0, int64_t nq,
                        int64_t n_max, float *Q, float *S, float *B)
{
    const int64_t hd = pl->hd, KB = CPU_ATTN_KB;
    const cpu_attn_kernels *ks = pl->ks;
    for (int64_t i = 0; i < nq; i++) {
        const int64_t r = r0 + i / pl->hsub, h = h0 + i % pl->hsub;
        const float *q = cpu_row(pl->q, r) + h * hd;
        if (ks) {
            memcpy(Q + i * hd, q, (size_t)hd * sizeof(float));
            ks->scale_round(hd, Q + i * hd, 1.0f, pl->kc->f16);   /* x * 1 = x */
            continue;
        }
        for (int64_t d = 0; d < hd; d++)
            Q[i * hd + d] = pl->kc->f16 ? quant_f16_to_f32(quant_f32_to_f16(q[d])) : q[d];
    }

    /* a block of K rows, every query of the tile over it */
    for (int64_t p0 = 0; p0 < n_max; p0 += KB) {
        const int64_t nb = n_max - p0 < KB ? n_max - p0 : KB;
        if (ks && !widen(pl, pl->kc, nq)) {
            ks->scores(hd, nq, Q, cache_at(pl, pl->kc, kvh, p0), pl->kc->ld, pl->kc->f16, nb,
                       pl->scale, S + p0, pl->sld);
            continue;
        }
        cache_rows(pl, pl->kc, kvh, p0, nb, B);
        if (ks) {
            ks->scores(hd, nq, Q, B, hd, 0, nb, pl->scale, S + p0, pl->sld);
            continue;
        }
        for (int64_t i = 0; i < nq; i++) {
            const int64_t n = n_kv_of(pl, r0, i) - p0 < nb ? n_kv_of(pl, r0, i) - p0 : nb;
            for (int64_t k = 0; k < n; k++)
                S[i * pl->sld + p0 + k] = cpu_dot_vec(hd, B + k * hd, Q + i * hd) * pl->scale;
        }
    }
}

static void attn_tile(const attn_plan *pl, int64_t it, float *scratch)
{
    const int64_t hd = pl->hd, KB = CPU_ATTN_KB, W = pl->W;
    const int64_t per_tile = pl->n_kv_head * pl->n_split;
    const int64_t rt = pl->n_tiles - 1 - it / per_tile;
    const int64_t kvh = it % per_tile / pl->n_split, part = it % pl->n_split;
    const int64_t r0 = rt * pl->rows, r1 = r0 + pl->rows < pl->T ? r0 + pl->rows : pl->T;
    const int64_t h0 = kvh * pl->group + part * pl->hsub, nq = (r1 - r0) * pl->hsub;
    const int64_t n_max = pl->pos0 + r1;
    const cpu_attn_kernels *ks = pl->ks;

    float *Q = scratch;
    float *S = Q + nq * hd;
    float *B = S + nq * pl->sld;
    float *A = B + KB * ((hd + 15) / 16 * 16);

    if (pl->Ss)         /* the keys' pass left this item's scores there */
        S = pl->Ss + h0 * pl->sld;
    else
        tile_scores(pl, kvh, r0, h0, nq, n_max, Q, S, B);
    for (int64_t i = 0; i < nq; i++)
        softmax_row(pl, S + i * pl->sld, n_kv_of(pl, r0, i));

    /* probabilities times V, a block of V rows at a time */
    memset(A, 0, (size_t)(nq * hd * (ks ? ks->lanes : W)) * sizeof(float));
    for (int64_t p0 = 0; p0 < n_max; p0 += KB) {
        const int64_t nb = n_max - p0 < KB ? n_max - p0 : KB;
        if (ks) {
            int64_t nv[64];
            const int wv = widen(pl, pl->vc, nq);
            if (wv)
                cache_rows(pl, pl->vc, kvh, p0, nb, B);
            for (int64_t i0 = 0; i0 < nq; i0 += 64) {
                const int64_t m = nq - i0 < 64 ? nq - i0 : 64;
                for (int64_t i = 0; i < m; i++) {
                    const int64_t n = n_kv_of(pl, r0, i0 + i) - p0;
                    nv[i] = n < 0 ? 0 : n < nb ? n : nb;
                }
                ks->pv_rows(m, hd, S + i0 * pl->sld + p0, pl->sld, nv,
                            wv ? B : cache_at(pl, pl->vc, kvh, p0), wv ? hd : pl->vc->ld,
                            wv ? 0 : pl->vc->f16, A + i0 * ks->lanes * hd);
            }
        } else {
            cache_rows(pl, pl->vc, kvh, p0, nb, B);
            for (int64_t k = 0; k < nb; k++) {
                const int64_t p = p0 + k;
                for (int64_t i = 0; i < nq; i++)
                    if (p < n_kv_of(pl, r0, i))
                        cpu_axpy(hd, A + (i * W + p % W) * hd, B + k * hd, S[i * pl->sld + p]);
            }
        }
    }
    for (int64_t i = 0; i < nq; i++) {
        const int64_t r = r0 + i / pl->hsub, h = h0 + i % pl->hsub;
        float *o = cpu_row(pl->out, r) + h * hd;
        if (ks) {
            ks->out(hd, A + i * ks->lanes * hd, nq, o);
            continue;
        }
        for (int64_t d = 0; d < hd; d++) {
            float lanes[16];
            for (int l = 0; l < W; l++)
                lanes[l] = A[(i * W + l) * hd + d];
            o[d] = cpu_lane_sum(lanes, (int)W);
        }
    }
}

/* Keys per item of the keys' pass, and per step inside it. */
#define KEYS_ITEM 256
#define KEYS_STEP 16

/* The keys' pass of one query row (decode): scores of every head over
 * positions [KEYS_ITEM * it, +KEYS_ITEM), all KV heads of a cache row one
 * after the other, so that a thread reads whole rows in position order
 * (one KV head's part of each row, as the tiles read it, streams at about
 * half the bandwidth). A score does not depend on the keys beside it:
 * the same kernel gives the tiles' bits. */
static void keys_task(void *arg, int64_t i0, int64_t i1, int tid)
{
    const attn_plan *pl = arg;
    const int64_t n = pl->pos0 + 1, hd = pl->hd, g = pl->group;
    const size_t es = pl->kc->f16 ? 2 : 4, row = (size_t)pl->kc->ld * es;
    const size_t used = (size_t)(pl->n_kv_head * hd) * es;
    for (int64_t it = i0; it < i1; it++) {
        const int64_t p1 = (it + 1) * KEYS_ITEM < n ? (it + 1) * KEYS_ITEM : n;
        for (int64_t p0 = it * KEYS_ITEM; p0 < p1; p0 += KEYS_STEP) {
            const int64_t nb = p1 - p0 < KEYS_STEP ? p1 - p0 : KEYS_STEP;
            /* the rows of the step after the next */
            const int64_t f0 = p0 + 2 * KEYS_STEP, f1 = f0 + KEYS_STEP < n ? f0 + KEYS_STEP : n;
            for (int64_t f = f0; f < f1; f++)
                for (size_t b = 0; b < used; b += 64)
                    _mm_prefetch((const char *)pl->kc->data + (size_t)f * row + b, _MM_HINT_T0);
            for (int64_t kvh = 0; kvh < pl->n_kv_head; kvh++)
                pl->ks->scores(hd, g, pl->Qs + kvh * g * hd, cache_at(pl, pl->kc, kvh, p0),
                               pl->kc->ld, pl->kc->f16, nb, pl->scale,
                               pl->Ss + kvh * g * pl->sld + p0, pl->sld);
        }
    }
    (void)tid;
}

static void attn_task(void *arg, int64_t i0, int64_t i1, int tid)
{
    const attn_plan *pl = arg;
    float *scratch = cpu_tscratch(pl->be, tid);
    for (int64_t it = i0; it < i1; it++)
        attn_tile(pl, it, scratch);
}

static const cpu_attn_kernels attn512_kernels = {
    16, cpu_attn512_scores, cpu_attn512_softmax, cpu_attn512_scale_round, cpu_attn512_pv_rows,
    cpu_attn512_out,
};

int cpu_attn_best_path(void)
{
    /* QUANT_PATH_AVX512: AVX-512 F/BW/VL with F16C and FMA, ZMM state
     * enabled by the OS (cpuid, as clang's builtin has no "f16c");
     * QUANT_PATH_AVX2: AVX2, FMA and F16C */
    __builtin_cpu_init();
    if (cpu_lanes() == 16 && quant_path_available(QUANT_PATH_AVX512) &&
        cpu_avx512_ok() && __builtin_cpu_supports("avx512dq") && cpu_vexp_level() == 2)
        return CPU_ATTN_AVX512;
    if (cpu_lanes() == 8 && !cpu_avx512_ok() && quant_path_available(QUANT_PATH_AVX2) &&
        cpu_vexp_level() == 1)
        return CPU_ATTN_AVX2;
    return CPU_ATTN_GENERIC;
}

void cpu_attention_path(be_ctx *be, int path, const be_tensor *q, const be_tensor *kc,
                        const be_tensor *vc, int64_t pos0, int64_t n_head, int64_t n_head_kv,
                        int64_t head_dim, float scale, be_tensor *out)
{
    assert(q->cols == n_head * head_dim && out->cols == q->cols && out->rows == q->rows);
    assert(kc->cols == n_head_kv * head_dim && vc->cols == kc->cols);
    assert(n_head % n_head_kv == 0 && pos0 + q->rows <= kc->rows && pos0 + q->rows <= vc->rows);
    attn_plan pl = { .q = q, .kc = kc, .vc = vc, .out = out, .pos0 = pos0, .T = q->rows,
                     .hd = head_dim, .group = n_head / n_head_kv, .n_kv_head = n_head_kv,
                     .scale = scale, .path = path, .W = cpu_lanes(), .be = be,
                     .ks = path == CPU_ATTN_AVX512 ? &attn512_kernels
                         : path == CPU_ATTN_AVX2 ? &cpu_attn256_kernels : NULL };
    if (pl.T == 0)
        return;
    /* each K/V row streamed from memory serves the whole tile */
    pl.rows = tile_rows(path, pl.group, pl.T);
    pl.n_tiles = (pl.T + pl.rows - 1) / pl.rows;
    pl.n_split = 1;
    while (n_head_kv * pl.n_split * pl.n_tiles < cpu_ctx_of(be)->n_threads && pl.n_split < pl.group) {
        int64_t d = pl.n_split + 1;
        while (pl.group % d)
            d++;
        pl.n_split = d;
    }
    pl.hsub = pl.group / pl.n_split;
    pl.sld = score_ld(pos0 + pl.T);
    /* the engine reserved the most this can take (be_reserve): then this
     * never allocates, and past it the op fails */
    const size_t tf = scratch_floats(pl.hd, pl.rows * pl.hsub, pl.sld);
    if (cpu_tscratch_reserve(be, tf)) {
        cpu_fail_scratch(be, "attention", tf * sizeof(float));
        return;
    }
    if (pl.rows == 1 && pl.T == 1 && pl.ks) {
        /* one query row: the keys' pass over position ranges first */
        pl.Qs = cpu_scratch(be, shared_bytes(n_head, head_dim, pl.sld));
        if (!pl.Qs) {
            cpu_fail_scratch(be, "attention", shared_bytes(n_head, head_dim, pl.sld));
            return;
        }
        pl.Ss = pl.Qs + n_head * head_dim;
        memcpy(pl.Qs, cpu_row(q, 0), (size_t)(n_head * head_dim) * sizeof(float));
        pl.ks->scale_round(n_head * head_dim, pl.Qs, 1.0f, kc->f16);   /* x * 1 = x */
        cpu_for(be, (pos0 + KEYS_ITEM) / KEYS_ITEM, 1, keys_task, &pl);
    }
    cpu_for(be, pl.n_tiles * n_head_kv * pl.n_split, 1, attn_task, &pl);
}

/* Each run over its slot's rows of the caches: the same call, and so the
 * same bits, as the run alone. */
void cpu_attention(be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc,
                   const be_batch *b, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                   float scale, be_tensor *out)
{
    CPU_PROF_BEGIN(be);
    const int path = cpu_attn_best_path();
    for (int s = 0; s < b->n_seq; s++) {
        const be_seq *r = &b->seq[s];
        be_tensor qr = *q, orow = *out, kr = *kc, vr = *vc;
        qr.data = cpu_row(q, r->row0);
        qr.rows = r->n_rows;
        orow.data = cpu_row(out, r->row0);
        orow.rows = r->n_rows;
        const int64_t c0 = (int64_t)r->slot * b->kv_rows;
        kr.data = (char *)kc->data + (size_t)c0 * (size_t)be_type_bytes(kc->type, kc->ld);
        vr.data = (char *)vc->data + (size_t)c0 * (size_t)be_type_bytes(vc->type, vc->ld);
        kr.rows = vr.rows = b->kv_rows;
        if (kc->type == BE_Q8_0)
            cpu_attention_q8(be, &qr, &kr, &vr, r->pos0, n_head, n_head_kv, head_dim, scale, &orow);
        else
            cpu_attention_path(be, path, &qr, &kr, &vr, r->pos0, n_head, n_head_kv, head_dim,
                               scale, &orow);
    }
    CPU_PROF_END(be, BE_PROF_ATTENTION);
}

static int shape_ok(int64_t n_ctx, int64_t n_batch, int64_t n_head, int64_t n_head_kv,
                    int64_t head_dim)
{
    return n_ctx >= 1 && n_batch >= 1 && n_head >= 1 && n_head_kv >= 1 &&
           n_head % n_head_kv == 0 && head_dim >= 1;
}

/* A run has at most n_rows query rows over at most n_ctx positions. */
void cpu_attention_scratch(const be_shape *s, size_t *shared, size_t *thread_floats)
{
    *shared = *thread_floats = 0;
    if (!shape_ok(s->n_ctx, s->n_rows, s->n_head, s->n_head_kv, s->head_dim))
        return;
    *thread_floats = scratch_floats_max(s->n_ctx, s->n_rows, s->n_head, s->n_head_kv,
                                        s->head_dim);
    const size_t q8 = cpu_attention_q8_floats(s->head_dim, s->n_head / s->n_head_kv);
    if (*thread_floats < q8)     /* q8_0 caches */
        *thread_floats = q8;
    *shared = shared_bytes(s->n_head, s->head_dim, score_ld(s->n_ctx));
}
