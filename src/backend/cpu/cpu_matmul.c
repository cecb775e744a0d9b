/* cpu_matmul.c: the CPU backend's matrix products with GGUF weights:
 * be_matmul (one slab of a weight times every row of x), be_matmul_n
 * (several weights times the same x: one quantization and one parallel
 * region, their rows one stream of work) and be_matmul_id (per-token
 * expert choice). Both follow ggml's CPU path: each activation
 * row is quantized once to the weight's vec_dot_type (quant_act_quantize,
 * byte-exact with ggml), then every output element is one block dot
 * product (quant_vec_dot_fn) of a weight row with an activation row.
 *
 * Weight types with a tile kernel (cpu_gemm.h: Q4_K, Q5_K, Q6_K;
 * cpu_gemm_q8.h: Q8_0, F32; pick_tile) compute a tile of
 * weight rows x tokens per call instead, so a weight block is unpacked once
 * for several tokens and its scales once for several rows. For experts the
 * pairs routed to one expert form the tile: their activation rows are
 * quantized straight into expert order, and the tile's outputs go through
 * a per-thread buffer to the pairs' rows.
 *
 * Work is split over weight rows, so a weight row is read from memory once
 * per tile of tokens and stays in cache while it meets every token of the
 * tile; a one-token matmul is a stream of rows, handed out in long runs
 * (row_grain). */
#include "cpu.h"

#include <assert.h>
#include <string.h>

#include "cpu_gemm.h"
#include "cpu_gemm_q8.h"

#include "../../quant/quant.h"

#define TOK_TILE 64    /* activation rows that share one pass over a weight block */
#define ROW_GRAIN 16   /* weight rows per work item */
#define DECODE_ITEMS 2 /* work items per thread of a one-token matmul (row_grain) */
/* activation rows quantized per work item: a SIMD quantizer takes well under
 * a microsecond a row, a hand-off to the other thread several, so up to 32
 * rows (a decode step's, the pairs of one MoE token) stay on the caller */
#define Q_GRAIN 32

static void quantize_rows(be_ctx *be, const be_weight *w, const be_tensor *x, uint8_t *q);

static float dot_vec_f32(int64_t n, const void *x, const void *y)
{
    return cpu_dot_vec(n, x, y);
}

/* llama.cpp moves this weight into an AMX buffer (cpu_amx.c): a plain
 * matmul's 2-D weight of a shape that buffer takes. A tied head too: its
 * loader makes the output's copy of token_embd in the buffer chosen for
 * the output's matmul, apart from the one get_rows reads (llama.cpp's
 * llama-model-loader.cpp, TENSOR_DUPLICATED), and the matmul reads that
 * copy. */
bool cpu_amx_weight(const cpu_ctx *c, const gguf_tensor *t, bool expert)
{
    return c->amx && !expert && t->ne[2] * t->ne[3] == 1 &&
           cpu_amx_shape(t->type, (int64_t)t->ne[0], (int64_t)t->ne[1]);
}

/* The dot product for weight type `type` (K inputs, N outputs). The quant
 * module's kernels agree with ggml's within a rounding bound; where q36 has
 * a kernel with ggml's exact float order, it takes that one:
 *  - F32: the llamafile f32 GEMM's lanes when K is a multiple of the vector
 *    width and N of 4 (dense matmuls), ggml_vec_dot_f32's order otherwise
 *    and for experts (ggml's mul_mat_id does not use the GEMM);
 *  - Q8_0: llama.cpp's x86 kernels (vec_dot and the llamafile GEMM) keep 8
 *    float lanes per block even on AVX-512, which the quant module's AVX2
 *    kernel does too (same bits, measured);
 *  - Q6_K: cpu_qdot.c (not repacked by llama.cpp on x86, so vec_dot runs);
 *  - F16 (activations rounded to f16): as F32, the f16 GEMM's lanes or
 *    ggml_vec_dot_f16's order;
 *  - BF16 on CPUs with AVX-512 BF16 (where llama.cpp's kernels use
 *    vdpbf16ps) and on those without AVX-512 (haswell's 8-lane kernels):
 *    the llamafile GEMM's order for dense matmuls, vec_dot's for experts
 *    and odd shapes. For F16 and BF16 llama.cpp itself takes
 *    vec_dot for a one-token batch (measured: its one-token logits then differ from the
 *    same row of a longer batch); q36 keeps one order for every batch size
 *    so that its rows stay batch-invariant, and so matches llama.cpp's
 *    prompt batches bit for bit and its single-token steps to rounding.
 * On a CPU where llama.cpp keeps such a weight in an AMX buffer
 * (cpu_amx_weight) its quantized products take that order (cpu_amx.c).
 * be->dot_path >= 0 (Q36_DOT_PATH, a diagnostic switch read by be_cpu_new)
 * forces one quant-module family instead. */
static quant_dot_fn pick_dot(const cpu_ctx *be, const be_weight *w, int64_t K, int64_t N,
                             bool expert)
{
    const uint32_t type = w->type;
    if (be->dot_path >= 0) {
        quant_dot_fn f = quant_vec_dot_fn_path(type, (enum quant_path)be->dot_path);
        if (f)
            return f;
    }
    if (cpu_amx_weight(be, w->t, expert))
        return cpu_amx_dot(type);
    if (type == QT_F32)
        return !expert && K % cpu_lanes() == 0 && N % 4 == 0 ? cpu_dot_lanes : dot_vec_f32;
    if (type == QT_Q6_K)
        return cpu_dot_q6_K_ggml;
    if (type == QT_F16)
        return !expert && K % cpu_lanes() == 0 && N % 4 == 0 ? cpu_dot_f16_lanes : cpu_dot_f16_vec;
    if (type == QT_BF16 && (be->bf16_dp || cpu_lanes() == 8))
        return !expert && K % (be->bf16_dp ? 32 : 8) == 0 && N % 4 == 0 ? cpu_dot_bf16_lanes
                                                                          : cpu_dot_bf16_vec;
    if (type == QT_Q8_0) {
        quant_dot_fn f = quant_vec_dot_fn_path(type, QUANT_PATH_AVX2);
        if (f)
            return f;
    }
    return quant_vec_dot_fn(type);
}

/* The tile kernel of weight type `type`, or NULL where the matmul takes
 * pick_dot's per-output dot. Q8_0 and F32 (cpu_gemm_q8.h), Q6_K and Q5_K
 * (cpu_gemm.h) give pick_dot's bits exactly, so they go exactly where
 * pick_dot takes that order (for Q6_K everywhere, for Q5_K where the quant
 * module picks its AVX-512 or its AVX2 dot; experts included, as each output depends
 * on its own row and token alone); Q4_K (cpu_gemm.h) stays within the
 * quant module's rounding bound. None under a forced Q36_DOT_PATH. A weight
 * in llama.cpp's AMX order takes that order's tile (Q8_0) or pick_dot's
 * dot per output (the other types). */
static cpu_tile_fn pick_tile(const cpu_ctx *be, const be_weight *w, int64_t K, int64_t N,
                             bool expert)
{
    const uint32_t type = w->type;
    if (be->dot_path >= 0)
        return NULL;
    if (cpu_amx_weight(be, w->t, expert))
        return cpu_amx_tile(type);
    if (type == QT_Q4_K)
        return cpu_gemm_q4_K();
    if (type == QT_Q6_K)
        return cpu_gemm_q6_K();
    if (type == QT_Q5_K)
        return cpu_gemm_q5_K();     /* NULL where pick_dot's order is another */
    if (type == QT_Q8_0)
        return cpu_gemm_q8_0();
    if (type == QT_F32 && !expert && K % cpu_lanes() == 0 && N % 4 == 0)
        return cpu_gemm_f32_lanes();
    return NULL;
}

/* Weight rows per work item. With a few tokens (decode) each weight row is
 * read once from memory and the matmul is a stream: each thread must get
 * long runs of consecutive rows, or the hardware prefetchers lose the
 * stream (16-row items handed out alternately to 2 threads measured half
 * the decode speed: bench/results/2026-11-29-cpu/); 2 items per thread keep
 * the split a little dynamic (tg64, 2 threads, noisy: 8 items per thread
 * 72.7-72.9 t/s, 2 items 78.9-80.1, 1 item 79.8-81.4 on q08-q4_K; the MoE
 * file 79.4 -> 88.5, q8_0 51.8 -> 54.5 with 2). Prompt batches reuse each
 * row across a token tile and take small items. */
static int64_t row_grain(const cpu_ctx *be, int64_t N, int64_t R)
{
    if (R > 4)
        return ROW_GRAIN;
    int64_t g = N / (DECODE_ITEMS * (int64_t)be->n_threads);
    g -= g % ROW_GRAIN;
    return g > ROW_GRAIN ? g : ROW_GRAIN;
}

/* The prepared rows a prompt's tiles take (cpu_gemm.h: cpu_tile_prep),
 * made once per matmul as the rows are quantized, or NULL: where the
 * rows are few (a decode step) each meets its tiles once anyway. The
 * form of K elements plus their Q8_K row is under 2.3 bytes an element,
 * inside the 4 that cpu_matmul_scratch reserves per element of a row. */
#define PREP_ROWS 4
/* rows a prepared tile takes in one call: the kernel packs its weight rows
 * once a call (cpu_gemm_k4.c), and with the rows' forms made already a
 * larger call only saves packs (4.5% of a Q4_K pp512 pass in k4_tile's
 * own time at 64, mostly packing) */
#define PREP_TOK_TILE 512
static const cpu_tile_prep *pick_prep(cpu_tile_fn tile, uint32_t type, int64_t rows)
{
    if (!tile || rows <= PREP_ROWS)
        return NULL;
    if (type == QT_Q4_K)
        return cpu_gemm_q4_K_prep();
    if (type == QT_Q6_K)
        return cpu_gemm_q6_K_prep();
    if (type == QT_Q5_K)
        return cpu_gemm_q5_K_prep();
    return NULL;
}

static size_t pad64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

typedef struct {
    const be_weight *w;
    const uint8_t   *wbase;     /* the slab */
    const uint8_t   *act;       /* R quantized rows */
    const be_tensor *y;
    int64_t          R, K;
    quant_dot_fn     dot;
    cpu_tile_fn      tile;      /* NULL: dot per output */
    const cpu_tile_prep *prep;  /* non-NULL: the tile over the prepared rows at mix */
    const uint8_t   *mix;
    uint64_t         mrb;
    const float     *da8;       /* non-NULL: the AVX2 Q8_0 tile with these scales (cpu_q8_0_scales4) */
} mm_job;

/* The AVX2 Q8_0 prompt tile takes its activations' block scales made once
 * per matmul (cpu_gemm_q8.h: cpu_gemm_q8_0_avx2_da): floats after the
 * quantized rows (and their prepared forms) in the scratch, within the 4
 * bytes an element cpu_matmul_scratch reserves */
_Static_assert(TOK_TILE % 4 == 0, "a token tile starts a group of cpu_q8_0_scales4's table");
static bool q8_scales_once(cpu_tile_fn tile, int64_t R)
{
    return tile == cpu_gemm_q8_0_avx2 && R > PREP_ROWS;
}

static size_t q8_scales_bytes(bool once, int64_t K, int64_t R)
{
    return once ? sizeof(float) * (size_t)cpu_q8_0_scales4_len(K, R) : 0;
}

/* the table at at, made from the R quantized rows act (w's), or NULL when
 * no tile takes it */
static float *q8_scales_table(bool once, const be_weight *w, int64_t K, int64_t R,
                              const uint8_t *act, uint8_t *at)
{
    if (!once)
        return NULL;
    cpu_q8_0_scales4(K, act, w->act_row_bytes, R, (float *)at);
    return (float *)at;
}

static void mm_task(void *arg, int64_t n0, int64_t n1, int tid)
{
    (void)tid;
    const mm_job *j = arg;
    const uint64_t wrb = j->w->row_bytes, arb = j->w->act_row_bytes;
    const int64_t tt = j->prep ? PREP_TOK_TILE : TOK_TILE;
    for (int64_t r0 = 0; r0 < j->R; r0 += tt) {
        int64_t r1 = r0 + tt < j->R ? r0 + tt : j->R;
        if (j->prep) {
            j->prep->tile(j->K, j->wbase + (uint64_t)n0 * wrb, wrb, n1 - n0, j->act + (uint64_t)r0 * arb, arb,
                          j->mix + (uint64_t)r0 * j->mrb, j->mrb, r1 - r0, cpu_row(j->y, r0) + n0, j->y->ld);
            continue;
        }
        if (j->da8) {       /* r0 is a multiple of 4: its group's scales */
            cpu_gemm_q8_0_avx2_da(j->K, j->wbase + (uint64_t)n0 * wrb, wrb, n1 - n0,
                                  j->act + (uint64_t)r0 * arb, arb, j->da8 + r0 * (j->K / 32),
                                  r1 - r0, cpu_row(j->y, r0) + n0, j->y->ld);
            continue;
        }
        if (j->tile) {
            j->tile(j->K, j->wbase + (uint64_t)n0 * wrb, wrb, n1 - n0, j->act + (uint64_t)r0 * arb, arb,
                    r1 - r0, cpu_row(j->y, r0) + n0, j->y->ld);
            continue;
        }
        for (int64_t n = n0; n < n1; n++) {
            const uint8_t *wr = j->wbase + (uint64_t)n * wrb;
            for (int64_t r = r0; r < r1; r++)
                cpu_row(j->y, r)[n] = j->dot(j->K, wr, j->act + (uint64_t)r * arb);
        }
    }
}

typedef struct {
    const be_weight *w;
    const be_tensor *x;
    uint8_t         *q;
    const cpu_tile_prep *prep;  /* and each row's prepared form at mix, or NULL */
    uint8_t         *mix;
    uint64_t         mrb;
} q_job;

static void q_task(void *arg, int64_t r0, int64_t r1, int tid)
{
    (void)tid;
    const q_job *j = arg;
    for (int64_t r = r0; r < r1; r++) {
        uint8_t *q = j->q + (uint64_t)r * j->w->act_row_bytes;
        quant_act_quantize((uint32_t)j->w->act_type, cpu_row(j->x, r), q, j->x->cols);
        if (j->prep)
            j->prep->row(j->x->cols, q, j->mix + (uint64_t)r * j->mrb);
    }
}

static void quantize_prep_rows(be_ctx *be, const be_weight *w, const be_tensor *x, uint8_t *q,
                               const cpu_tile_prep *prep, uint8_t *mix)
{
    q_job j = { w, x, q, prep, mix, prep ? prep->bytes(x->cols) : 0 };
    cpu_for(be, x->rows, Q_GRAIN, q_task, &j);
}

static void quantize_rows(be_ctx *be, const be_weight *w, const be_tensor *x, uint8_t *q)
{
    quantize_prep_rows(be, w, x, q, NULL, NULL);
}

void cpu_quantize_rows(be_ctx *be, const be_weight *w, const be_tensor *x, uint8_t *q)
{
    quantize_rows(be, w, x, q);
}

void cpu_matmul(be_ctx *be, const be_weight *w, int64_t slab, const be_tensor *x, be_tensor *y)
{
    CPU_PROF_BEGIN(be);
    const gguf_tensor *t = w->t;
    const int64_t K = (int64_t)t->ne[0], N = (int64_t)t->ne[1];
    assert(x->cols == K && y->cols == N && y->rows == x->rows && !x->f16 && !y->f16);
    assert(slab >= 0 && (uint64_t)slab < t->ne[2] * t->ne[3]);
    const cpu_tile_fn tile = pick_tile(cpu_ctx_of(be), w, K, N, false);
    const cpu_tile_prep *prep = pick_prep(tile, w->type, x->rows);
    const size_t abytes = pad64((size_t)x->rows * w->act_row_bytes);
    const uint64_t mrb = prep ? prep->bytes(K) : 0;
    const size_t mbytes = pad64((size_t)x->rows * mrb);
    const bool once = q8_scales_once(tile, x->rows);
    const size_t need = abytes + mbytes + q8_scales_bytes(once, K, x->rows);
    uint8_t *act = cpu_scratch(be, need);
    if (!act) {
        cpu_fail_scratch(be, "matmul", need);
        return;
    }
    quantize_prep_rows(be, w, x, act, prep, act + abytes);
    const float *da8 = q8_scales_table(once, w, K, x->rows, act, act + abytes + mbytes);
    mm_job j = {
        .w = w, .wbase = (const uint8_t *)t->data + (uint64_t)slab * (uint64_t)N * w->row_bytes,
        .act = act, .y = y, .R = x->rows, .K = K, .dot = pick_dot(cpu_ctx_of(be), w, K, N, false),
        .tile = tile, .prep = prep, .mix = act + abytes, .mrb = mrb, .da8 = da8,
    };
    cpu_for(be, N, row_grain(cpu_ctx_of(be), N, x->rows), mm_task, &j);
    CPU_PROF_END(be, BE_PROF_MATMUL(w->type));
}

/* ------------------------------------------------------ several weights */

#define MM_NMAX 4

typedef struct {
    int     n;
    mm_job  jobs[MM_NMAX];
    int64_t end[MM_NMAX];       /* weight i owns the items [end[i-1], end[i]) */
} mmn_job;

/* Items are the weights' rows laid end to end; an item crossing from one
 * weight to the next is split. */
static void mmn_task(void *arg, int64_t i0, int64_t i1, int tid)
{
    const mmn_job *j = arg;
    for (int i = 0; i < j->n && i0 < i1; i++) {
        const int64_t begin = i ? j->end[i - 1] : 0;
        if (i0 >= j->end[i])
            continue;
        const int64_t e = i1 < j->end[i] ? i1 : j->end[i];
        mm_task((void *)&j->jobs[i], i0 - begin, e - begin, tid);
        i0 = e;
    }
}

void cpu_matmul_n(be_ctx *be, int n, const be_weight *const *w, const be_tensor *x, be_tensor *const *y)
{
    /* the longest prefix with one activation type shares one quantization */
    int m = 1;
    while (m < n && m < MM_NMAX && w[m]->act_type == w[0]->act_type)
        m++;
    if (m == 1) {
        cpu_matmul(be, w[0], 0, x, y[0]);
    } else {
        CPU_PROF_BEGIN(be);
        const int64_t K = x->cols;
        assert(!x->f16);
        /* one prepared form serves every weight whose tile takes it */
        cpu_tile_fn tiles[MM_NMAX];
        const cpu_tile_prep *preps[MM_NMAX], *prep = NULL;
        for (int i = 0; i < m; i++) {
            const int64_t N = (int64_t)w[i]->t->ne[1];
            tiles[i] = pick_tile(cpu_ctx_of(be), w[i], K, N, false);
            preps[i] = pick_prep(tiles[i], w[i]->type, x->rows);
            if (preps[i] && prep && preps[i]->row != prep->row)
                preps[i] = NULL;        /* another form: that weight takes its rows as they are */
            prep = prep ? prep : preps[i];
        }
        const size_t abytes = pad64((size_t)x->rows * w[0]->act_row_bytes);
        const uint64_t mrb = prep ? prep->bytes(K) : 0;
        const size_t mbytes = pad64((size_t)x->rows * mrb);
        bool once = false;          /* one table of Q8_0 scales serves each weight that takes it */
        for (int i = 0; i < m; i++)
            once |= q8_scales_once(tiles[i], x->rows);
        const size_t need = abytes + mbytes + q8_scales_bytes(once, K, x->rows);
        uint8_t *act = cpu_scratch(be, need);
        if (!act) {
            cpu_fail_scratch(be, "matmul", need);
            return;
        }
        quantize_prep_rows(be, w[0], x, act, prep, act + abytes);
        const float *da8 = q8_scales_table(once, w[0], K, x->rows, act, act + abytes + mbytes);
        mmn_job j = { .n = m };
        int64_t total = 0;
        for (int i = 0; i < m; i++) {
            const gguf_tensor *t = w[i]->t;
            const int64_t N = (int64_t)t->ne[1];
            assert((int64_t)t->ne[0] == K && y[i]->cols == N && y[i]->rows == x->rows && !y[i]->f16);
            j.jobs[i] = (mm_job){
                .w = w[i], .wbase = (const uint8_t *)t->data, .act = act, .y = y[i], .R = x->rows, .K = K,
                .dot = pick_dot(cpu_ctx_of(be), w[i], K, N, false), .tile = tiles[i],
                .prep = preps[i], .mix = act + abytes, .mrb = mrb,
                .da8 = q8_scales_once(tiles[i], x->rows) ? da8 : NULL,
            };
            total += N;
            j.end[i] = total;
        }
        cpu_for(be, total, row_grain(cpu_ctx_of(be), total, x->rows), mmn_task, &j);
        CPU_PROF_END(be, BE_PROF_MATMUL(w[0]->type));
    }
    if (n > m)
        cpu_matmul_n(be, n - m, w + m, x, y + m);
}

/* ------------------------------------------------------------ experts */

typedef struct {
    const be_weight *w;
    const uint8_t   *act;
    const be_tensor *y;
    int64_t          K, N;
    int64_t          n_used;     /* experts with at least one pair */
    const int32_t   *used;       /* their ids */
    const int64_t   *start;      /* pairs of used[u]: order[start[u] .. start[u+1]) */
    const int64_t   *order;      /* pair index t*k+i */
    const int64_t   *arow;       /* activation row of each pair (dot path) */
    quant_dot_fn     dot;
    cpu_tile_fn      tile;       /* NULL: dot per output; else act row s is pair order[s] */
    const cpu_tile_prep *prep;   /* non-NULL: the tile over the prepared rows at mix */
    const uint8_t   *mix;
    uint64_t         mrb;
    be_ctx          *be;
} mmid_job;

/* Rows [n0, n1) of expert used[u] against all of its pairs. */
static void mmid_rows(const mmid_job *j, int64_t u, int64_t n0, int64_t n1, float *yt)
{
    const uint64_t wrb = j->w->row_bytes, arb = j->w->act_row_bytes;
    const uint8_t *slab = (const uint8_t *)j->w->t->data + (uint64_t)j->used[u] * (uint64_t)j->N * wrb;
    if (j->tile) {
        for (int64_t s0 = j->start[u]; s0 < j->start[u + 1]; s0 += TOK_TILE) {
            const int64_t nt = j->start[u + 1] - s0 < TOK_TILE ? j->start[u + 1] - s0 : TOK_TILE;
            for (int64_t n = n0; n < n1; n += ROW_GRAIN) {
                const int64_t nr = n1 - n < ROW_GRAIN ? n1 - n : ROW_GRAIN;
                if (j->prep)
                    j->prep->tile(j->K, slab + (uint64_t)n * wrb, wrb, nr, j->act + (uint64_t)s0 * arb, arb,
                                  j->mix + (uint64_t)s0 * j->mrb, j->mrb, nt, yt, nr);
                else
                    j->tile(j->K, slab + (uint64_t)n * wrb, wrb, nr, j->act + (uint64_t)s0 * arb, arb, nt, yt, nr);
                for (int64_t t = 0; t < nt; t++)
                    memcpy(cpu_row(j->y, j->order[s0 + t]) + n, yt + t * nr, sizeof(float) * (size_t)nr);
            }
        }
        return;
    }
    for (int64_t n = n0; n < n1; n++) {
        const uint8_t *wr = slab + (uint64_t)n * wrb;
        for (int64_t p = j->start[u]; p < j->start[u + 1]; p++) {
            int64_t pair = j->order[p];
            cpu_row(j->y, pair)[n] = j->dot(j->K, wr, j->act + (uint64_t)j->arow[pair] * arb);
        }
    }
}

/* Items are rows of the used experts' slabs laid end to end (expert-major),
 * so an item is one run of consecutive weight rows, or two when it crosses
 * from one expert to the next. */
static void mmid_task(void *arg, int64_t i0, int64_t i1, int tid)
{
    const mmid_job *j = arg;
    float *yt = j->tile ? cpu_tscratch(j->be, tid) : NULL;     /* TOK_TILE x ROW_GRAIN */
    for (int64_t i = i0; i < i1;) {
        const int64_t u = i / j->N, n0 = i % j->N;
        const int64_t n1 = j->N - n0 < i1 - i ? j->N : n0 + (i1 - i);
        mmid_rows(j, u, n0, n1, yt);
        i += n1 - n0;
    }
}

/* Quantizes row r of x into slot pos[p] of q for each pair p that reads it
 * (p = r when every pair has its own row, else p = r*k .. r*k+k-1): the
 * activation rows in expert order for the tile kernels. */
typedef struct {
    const be_weight *w;
    const be_tensor *x;
    uint8_t         *q;
    const int64_t   *pos;
    int64_t          k;
    bool             per_pair;
    const cpu_tile_prep *prep;   /* and each slot's prepared form at mix, or NULL */
    uint8_t         *mix;
    uint64_t         mrb;
} qid_job;

static void qid_task(void *arg, int64_t r0, int64_t r1, int tid)
{
    (void)tid;
    const qid_job *j = arg;
    const uint64_t arb = j->w->act_row_bytes, mrb = j->mrb;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t p0 = j->per_pair ? r : r * j->k, np = j->per_pair ? 1 : j->k;
        uint8_t *first = j->q + (uint64_t)j->pos[p0] * arb;
        uint8_t *mfirst = j->prep ? j->mix + (uint64_t)j->pos[p0] * mrb : NULL;
        quant_act_quantize((uint32_t)j->w->act_type, cpu_row(j->x, r), first, j->x->cols);
        if (j->prep)
            j->prep->row(j->x->cols, first, mfirst);
        for (int64_t i = 1; i < np; i++) {
            memcpy(j->q + (uint64_t)j->pos[p0 + i] * arb, first, arb);
            if (j->prep)
                memcpy(j->mix + (uint64_t)j->pos[p0 + i] * mrb, mfirst, mrb);
        }
    }
}

void cpu_matmul_id(be_ctx *be, const be_weight *w, const be_tensor *x, const be_tensor *selt,
                   be_tensor *y)
{
    CPU_PROF_BEGIN(be);
    const int64_t n_tok = selt->rows, k = selt->cols;
    const int32_t *sel = selt->data;       /* host memory on the CPU: packed rows */
    assert(selt->ld == k);
    const gguf_tensor *t = w->t;
    const int64_t K = (int64_t)t->ne[0], N = (int64_t)t->ne[1], E = (int64_t)t->ne[2];
    const int64_t P = n_tok * k;
    const bool per_pair = x->rows == P && k > 1;
    assert(x->cols == K && y->cols == N && y->rows == P);
    assert(x->rows == n_tok || x->rows == P);
    const cpu_tile_fn tile = pick_tile(cpu_ctx_of(be), w, K, N, true);
    /* room for the prepared forms where some expert may meet more than
     * PREP_ROWS pairs; taken below only where one does */
    const cpu_tile_prep *prep = pick_prep(tile, w->type, P);
    const uint64_t mrb = prep ? prep->bytes(K) : 0;

    /* the quantized rows, their prepared forms, then the bucket tables */
    size_t qbytes = (size_t)(tile ? P : x->rows) * w->act_row_bytes;
    size_t qpad = pad64(qbytes) + pad64((size_t)P * mrb);
    size_t ibytes = sizeof(int64_t) * (size_t)(2 * P + 2 * (E + 1)) + sizeof(int32_t) * (size_t)E;
    uint8_t *buf = cpu_scratch(be, qpad + ibytes);
    if (!buf) {
        cpu_fail_scratch(be, "expert matmul", qpad + ibytes);
        return;
    }
    int64_t *order = (int64_t *)(buf + qpad);
    int64_t *arow = order + P;         /* dot path: activation row of each pair; tile path: its slot */
    int64_t *cnt = arow + P;           /* E+1 counters, then reused as start */
    int64_t *fill = cnt + E + 1;       /* E+1 entries */
    int32_t *used = (int32_t *)(fill + E + 1);

    for (int64_t e = 0; e <= E; e++)
        cnt[e] = 0;
    for (int64_t p = 0; p < P; p++) {
        assert(sel[p] >= 0 && sel[p] < E);
        cnt[sel[p] + 1]++;
        arow[p] = per_pair ? p : p / k;
    }
    /* a stable bucket sort of the pairs by expert */
    int64_t n_used = 0;
    for (int64_t e = 0; e < E; e++) {
        if (cnt[e + 1])
            used[n_used++] = (int32_t)e;
        cnt[e + 1] += cnt[e];
    }
    for (int64_t e = 0; e < E; e++)
        fill[e] = cnt[e];
    for (int64_t p = 0; p < P; p++)
        order[fill[sel[p]]++] = p;
    /* start[u] for the used experts, in place over cnt */
    int64_t *start = fill;             /* fill no longer needed */
    for (int64_t u = 0; u < n_used; u++)
        start[u] = cnt[used[u]];
    start[n_used] = P;
    int64_t most = 0;
    for (int64_t u = 0; u < n_used; u++)
        most = start[u + 1] - start[u] > most ? start[u + 1] - start[u] : most;
    if (most <= PREP_ROWS)      /* a decode step: each expert's rows meet its tiles once */
        prep = NULL;

    if (tile) {
        for (int64_t s = 0; s < P; s++)
            arow[order[s]] = s;
        qid_job q = { w, x, buf, arow, k, per_pair || k == 1, prep, buf + pad64(qbytes), mrb };
        cpu_for(be, x->rows, Q_GRAIN, qid_task, &q);
        if (cpu_tscratch_reserve(be, (size_t)TOK_TILE * ROW_GRAIN)) {
            cpu_fail_scratch(be, "expert matmul", sizeof(float) * TOK_TILE * ROW_GRAIN);
            return;
        }
    } else {
        quantize_rows(be, w, x, buf);
    }

    mmid_job j = {
        .w = w, .act = buf, .y = y, .K = K, .N = N, .n_used = n_used, .used = used,
        .start = start, .order = order, .arow = arow, .dot = pick_dot(cpu_ctx_of(be), w, K, N, true),
        .tile = tile, .prep = prep, .mix = buf + pad64(qbytes), .mrb = mrb, .be = be,
    };
    /* a decode step has one or two pairs per expert: long runs, as in be_matmul */
    cpu_for(be, n_used * N, row_grain(cpu_ctx_of(be), n_used * N, P / (n_used ? n_used : 1)), mmid_task, &j);
    CPU_PROF_END(be, BE_PROF_MATMUL_ID(w->type));
}

/* The largest activation row is f32 (4 bytes an element: F32 weights);
 * every other vec_dot_type is smaller. An expert matmul quantizes one row
 * per pair into expert order and keeps its bucket tables after them. */
void cpu_matmul_scratch(const be_shape *s, size_t *shared, size_t *thread_floats)
{
    const size_t arb = 4 * (size_t)s->max_in;
    size_t need = (size_t)s->n_rows * arb;
    if (s->n_expert > 0) {
        const size_t P = (size_t)(s->n_rows * s->n_expert_used), E = (size_t)s->n_expert;
        const size_t q = (P * 4 * (size_t)s->max_in_expert + 63) & ~(size_t)63;
        const size_t id = q + sizeof(int64_t) * (2 * P + 2 * (E + 1)) + sizeof(int32_t) * E;
        need = id > need ? id : need;
    }
    *shared = need;
    *thread_floats = s->n_expert > 0 ? (size_t)TOK_TILE * ROW_GRAIN : 0;
}
