/* cpu_attn_q8.c: attention over q8_0 K/V caches, in the order of ggml's
 * CPU flash attention (ggml_compute_forward_flash_attn_ext_f16_one_chunk,
 * the path llama.cpp takes for quantized caches, which need flash
 * attention there), so that `-ctk q8_0 -ctv q8_0` gives llama.cpp's bits.
 *
 * One (query row, head) at a time, keys in position order:
 *  - the query's head is quantized to q8_0 as ggml quantizes activations
 *    (quant_act_quantize), and each score is the q8_0 dot product of the
 *    key's row with it (the per-block integer sums and fused
 *    multiply-adds that cpu_matmul.c's Q8_0 products take: its tile
 *    kernel makes the scores of Q8_KB keys for every query of a tile at
 *    once), times the scale, plus the causal mask's 0;
 *  - an online softmax: a new maximum M rescales the accumulator and the
 *    sum by expf(M_old - M) (libm's expf, as ggml), any other key weighs
 *    by expf(s - M); the V row is dequantized to f32 and added with fused
 *    multiply-adds, element by element (ggml_vec_mad_f32), the sum becomes
 *    S * ms + vs;
 *  - at the end the accumulator times 1/S.
 * Each element's operations are independent of the others', so the vector
 * loops below give the scalar order's bits at any width; and each (query
 * row, head)'s operations are independent of the others', so the heads of
 * a KV head's group and a tile of rows share each V row's dequantization. */
#include "cpu_attn.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#include "../../quant/quant.h"
#include "cpu_gemm_q8.h"

#define Q8_BYTES(n) ((n) / 32 * 34)

typedef struct {
    const be_tensor *q, *kc, *vc;
    be_tensor *out;
    int64_t pos0, hd, group;
    int64_t n_head;
    int64_t gs;         /* heads of a group a tile takes (group / gs tiles a group) */
    float scale;
    cpu_tile_fn tile;   /* the Q8_0 products: pick_dot's bits (cpu_gemm_q8.h) */
    be_ctx *be;
    bool avx2;          /* AVX2, FMA and F16C: dequant_avx2 */
} q8_plan;

/* y = dequantized q8_0 row x of n values: each code times its block's
 * scale, one rounding, as quant_dequant_row (ggml's dequantize_row_q8_0) */
__attribute__((target("avx2,fma,f16c"))) static void dequant_avx2(int64_t n, const uint8_t *x, float *y)
{
    for (int64_t b = 0; b < n / 32; b++, x += 34, y += 32) {
        uint16_t h;
        memcpy(&h, x, 2);
        const __m256 d = _mm256_set1_ps(_cvtsh_ss(h));
        for (int j = 0; j < 32; j += 8) {
            const __m128i q = _mm_loadl_epi64((const __m128i *)(x + 2 + j));
            _mm256_storeu_ps(y + j, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d));
        }
    }
}

static void dequant_plain(int64_t n, const uint8_t *x, float *y)
{
    quant_dequant_row(QT_Q8_0, x, y, n);
}

/* The accumulators' element-wise ops are cpu_fdot.c's: cpu_scale (x *= v,
 * ggml_vec_scale_f32) and cpu_axpy (y = fma(x, v, y), ggml_vec_mad_f32
 * where it fuses: every element of a row whose length is a multiple of its
 * step, 32 or 64). */
/* Query rows r0 .. r0+nq-1 times heads h0 .. h0+gs-1 of one KV head's group
 * (nq * gs <= Q8_TILE (query row, head) entries but for a group that
 * large, entry e = row e / gs, head h0 + e % gs), into their out rows. The keys go in position order
 * for every entry at once, so each V row is dequantized once for the tile;
 * each entry's operations and their order are those of the entry alone.
 * w: cpu_attention_q8_floats(hd, group) floats. */
#define Q8_TILE 16
#define Q8_KB 64        /* keys whose scores one product makes */
static void q8_tile(const q8_plan *pl, int64_t r0, int64_t nq, int64_t h0, float *w)
{
    const int64_t hd = pl->hd, G = pl->gs, ne = nq * G, qb = (Q8_BYTES(hd) + 3) / 4;
    const int64_t kvh = h0 / pl->group;
    const int64_t E = pl->group > Q8_TILE ? pl->group : Q8_TILE;    /* entries the scratch holds */
    float *acc = w, *vrow = w + E * hd, *M = vrow + hd, *S = M + E, *sc = S + E;
    uint8_t *qq = (uint8_t *)(sc + E * Q8_KB);
    const uint64_t krb = be_type_bytes(BE_Q8_0, pl->kc->ld), vrb = be_type_bytes(BE_Q8_0, pl->vc->ld);
    const uint8_t *k0 = (const uint8_t *)pl->kc->data + Q8_BYTES(kvh * hd);
    const uint8_t *v0 = (const uint8_t *)pl->vc->data + Q8_BYTES(kvh * hd);
    void (*dequant)(int64_t, const uint8_t *, float *) = pl->avx2 ? dequant_avx2 : dequant_plain;
    for (int64_t e = 0; e < ne; e++) {
        quant_act_quantize(QT_Q8_0, cpu_row(pl->q, r0 + e / G) + (h0 + e % G) * hd,
                           qq + 4 * qb * e, hd);
        M[e] = -INFINITY;
        S[e] = 0.0f;
    }
    memset(acc, 0, (size_t)(ne * hd) * sizeof(float));
    const int64_t n = pl->pos0 + r0 + nq;          /* keys of the last row */
    for (int64_t p = 0; p < n; p++) {
        const int64_t pb = p % Q8_KB;
        if (pb == 0)    /* the scores of every entry for the next keys (some unseen) */
            pl->tile(hd, k0 + (uint64_t)p * krb, krb, n - p < Q8_KB ? n - p : Q8_KB, qq,
                     (uint64_t)(4 * qb), ne, sc, Q8_KB);
        dequant(hd, v0 + (uint64_t)p * vrb, vrow);
        /* row i sees keys up to pos0 + r0 + i */
        for (int64_t i = G * (p - pl->pos0 - r0 > 0 ? p - pl->pos0 - r0 : 0); i < ne; i++) {
            float *a = acc + i * hd;
            float s = sc[i * Q8_KB + pb];
            s = s * pl->scale;
            s += 0.0f;                        /* the causal mask's 0 */
            const float Mold = M[i];
            float ms = 1.0f, vs = 1.0f;
            if (s > M[i]) {
                M[i] = s;
                ms = expf(Mold - s);
                cpu_scale(hd, a, ms);
            } else {
                vs = expf(s - M[i]);
            }
            cpu_axpy(hd, a, vrow, vs);
            const volatile float sm = S[i] * ms;  /* rounded, then added: ggml's
                                                 * S*ms + vs is not fused */
            S[i] = sm + vs;
        }
    }
    for (int64_t e = 0; e < ne; e++) {
        const float inv = S[e] == 0.0f ? 0.0f : 1.0f / S[e];
        cpu_scale(hd, acc + e * hd, inv);
        memcpy(cpu_row(pl->out, r0 + e / G) + (h0 + e % G) * hd, acc + e * hd,
               (size_t)hd * sizeof(float));
    }
}

/* query rows a tile */
static int64_t tile_rows(const q8_plan *pl)
{
    return pl->gs < Q8_TILE ? Q8_TILE / pl->gs : 1;
}

/* items: (row tile, heads h0 .. h0+gs-1), the last tiles (most keys) first */
static void q8_task(void *arg, int64_t i0, int64_t i1, int tid)
{
    const q8_plan *pl = arg;
    float *w = cpu_tscratch(pl->be, tid);
    const int64_t R = tile_rows(pl), nt = (pl->q->rows + R - 1) / R, nh = pl->n_head / pl->gs;
    for (int64_t i = i0; i < i1; i++) {
        const int64_t r0 = (nt - 1 - i / nh) * R;
        q8_tile(pl, r0, pl->q->rows - r0 < R ? pl->q->rows - r0 : R, i % nh * pl->gs, w);
    }
}

/* a group of more than Q8_TILE heads takes one row of them a tile */
size_t cpu_attention_q8_floats(int64_t head_dim, int64_t group)
{
    const int64_t e = group > Q8_TILE ? group : Q8_TILE;
    return (size_t)((e + 1) * head_dim + (2 + Q8_KB) * e + e * ((Q8_BYTES(head_dim) + 3) / 4));
}

void cpu_attention_q8(be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc,
                      int64_t pos0, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                      float scale, be_tensor *out)
{
    assert(kc->type == BE_Q8_0 && vc->type == BE_Q8_0 && head_dim % 32 == 0);
    assert(q->cols == n_head * head_dim && out->cols == q->cols && out->rows == q->rows);
    assert(n_head % n_head_kv == 0 && pos0 + q->rows <= kc->rows && pos0 + q->rows <= vc->rows);
    const bool avx2 = quant_path_available(QUANT_PATH_AVX2);
    q8_plan pl = { .q = q, .kc = kc, .vc = vc, .out = out, .pos0 = pos0, .hd = head_dim,
                   .group = n_head / n_head_kv, .n_head = n_head, .scale = scale,
                   .tile = cpu_gemm_q8_0(), .be = be, .avx2 = avx2 };
    if (q->rows == 0)
        return;
    /* a group's heads share each V row's dequantization; split it (a
     * divisor of it) only where the threads would otherwise wait, as at
     * decode on more threads than KV heads */
    const int n_threads = cpu_ctx_of(be)->n_threads;
    int64_t split = 1;
    for (;;) {
        pl.gs = pl.group / split;
        const int64_t R = tile_rows(&pl);
        if ((q->rows + R - 1) / R * n_head_kv * split >= n_threads || split == pl.group)
            break;
        do
            split++;
        while (pl.group % split);
    }
    const size_t tf = cpu_attention_q8_floats(head_dim, n_head / n_head_kv);
    if (cpu_tscratch_reserve(be, tf)) {
        cpu_fail_scratch(be, "attention", tf * sizeof(float));
        return;
    }
    const int64_t R = tile_rows(&pl);
    cpu_for(be, (q->rows + R - 1) / R * (n_head / pl.gs), 1, q8_task, &pl);
}
