/* cpu_deltanet.c: the CPU backend's gated delta rule (be_deltanet), the
 * DeltaNet op that runs along the sequence with a recurrent state, each
 * run of a batch on its slot's state (the short convolution is in
 * cpu_conv.c, K/V and attention in cpu_attn.c).
 *
 * The delta rule is the token-by-token recurrence of ggml's fused
 * GATED_DELTA_NET op, which llama.cpp runs for prompt batches as well as
 * for single tokens: per value head, decay the state, predict, correct,
 * read. Its kernels are in cpu_deltanet_rows.c; this file splits the work over
 * value heads, packs each head's vectors and computes the decays once. It
 * gives the bits of the plain reference in cpu_deltanet_ref.c
 * (tests/test_cpu_deltanet.c). */
#include "cpu_deltanet.h"
#include "cpu.h"

#include <assert.h>
#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- deltanet */

#define GDN_RB 16                  /* state rows per block: 8 KB at dk = 128 */
#define GDN_TC 32                  /* tokens packed at once: k, q 32 KB at dk = 128 */
#define DELTANET_CHUNK 64          /* tokens per chunk of the chunked form */

typedef struct {
    const be_tensor *qkv, *beta, *S, *out;
    const be_tensor *keep;         /* be_deltanet_keep's states after each row, or NULL */
    int64_t K;                     /* ... K rows a slot */
    const float *decay;            /* T x Hv: e^g */
    const be_batch *b;
    be_ctx *be;
    int64_t Hk, Hv, dk;
    int W;
} gdn_job;

/* One value head of one run per item. Its k, q and v of GDN_TC tokens are copied
 * into contiguous per-thread scratch first: in place they sit one qkv row
 * apart (24 KB in the 0.8B model), a stride that maps every token's vector
 * into the same few cache sets, so the blocks of rows that each read all
 * of them missed L2 (one layer of 512 tokens, one thread, noisy: ~25% of
 * the op's time). Outputs go through scratch the same way. Every block of
 * state rows then runs the chunk's tokens in order. */
static void gdn_task(void *arg, int64_t i0, int64_t i1, int tid)
{
    const gdn_job *j = arg;
    const int64_t dk = j->dk;
    const size_t vb = sizeof(float) * (size_t)dk;
    float *kp = cpu_tscratch(j->be, tid), *qp = kp + GDN_TC * dk, *vp = qp + GDN_TC * dk;
    float *op = vp + GDN_TC * dk;
    for (int64_t i = i0; i < i1; i++) {
        /* item i: head h of run i / Hv, rows [row0, row0+T) on its slot's state */
        const be_seq *run = &j->b->seq[i / j->Hv];
        const int64_t h = i % j->Hv, kh = h % j->Hk, T = run->n_rows;
        float *const S0 = cpu_row(j->S, (int64_t)run->slot * j->Hv + h), *S = S0;
        const float *src = NULL;
        /* keeping: a token at a time (the per-row sums do not depend on
         * how tokens are grouped), each reading the state the token
         * before it left and writing its own into the kept row of that
         * token, the last token's into the slot's state */
        const int64_t tc = j->keep ? 1 : GDN_TC;
        for (int64_t c0 = run->row0; c0 < run->row0 + T; c0 += tc) {
            const int64_t n = run->row0 + T - c0 < tc ? run->row0 + T - c0 : tc;
            if (j->keep) {
                src = S;
                S = c0 + 1 < run->row0 + T
                        ? cpu_row(j->keep, ((int64_t)run->slot * j->K + c0 - run->row0) * j->Hv + h)
                        : S0;
            }
            for (int64_t t = 0; t < n; t++) {
                const float *row = cpu_row(j->qkv, c0 + t);
                memcpy(qp + t * dk, row + kh * dk, vb);
                memcpy(kp + t * dk, row + (j->Hk + kh) * dk, vb);
                memcpy(vp + t * dk, row + (2 * j->Hk + h) * dk, vb);
            }
            const cpu_deltanet_head hd = {
                .q = qp, .k = kp, .v = vp, .ld = dk,
                .decay = j->decay + c0 * j->Hv + h, .dstride = j->Hv,
                .beta = cpu_row(j->beta, c0) + h, .bstride = j->beta->ld,
                .out = op, .ldo = dk, .T = n, .dk = dk, .scale = 1.0f / sqrtf((float)dk),
                .src = src != S ? src : NULL,
            };
            for (int64_t r0 = 0; r0 < dk; r0 += GDN_RB)
                cpu_deltanet_rows(&hd, S, r0, r0 + GDN_RB < dk ? r0 + GDN_RB : dk, j->W);
            for (int64_t t = 0; t < n; t++)
                memcpy(cpu_row(j->out, c0 + t) + h * dk, op + t * dk, vb);
        }
    }
}

/* be_deltanet, with keep (be_deltanet_keep) the state after each row of
 * each run but its last, in the slot's kept rows */
static void deltanet(be_ctx *be, const be_tensor *qkv, const be_tensor *g, const be_tensor *beta,
                     be_tensor *S, const be_tensor *keep, int64_t n_k_heads, int64_t n_v_heads,
                     int64_t dk, const be_batch *b, be_tensor *out)
{
    CPU_PROF_BEGIN(be);
    assert(qkv->cols == (2 * n_k_heads + n_v_heads) * dk);
    assert(g->cols == n_v_heads && beta->cols == n_v_heads && g->rows == qkv->rows);
    assert(S->rows % n_v_heads == 0 && S->cols == dk * dk && !S->f16);
    assert(out->rows == qkv->rows && out->cols == n_v_heads * dk);
    const int64_t T = qkv->rows, Hv = n_v_heads;
    float *decay = cpu_scratch(be, sizeof(float) * (size_t)(T * Hv));
    if ((!decay && T) || cpu_tscratch_reserve(be, (size_t)(4 * GDN_TC * dk))) {
        cpu_fail_scratch(be, "deltanet", sizeof(float) * (size_t)(T * Hv + 4 * GDN_TC * dk));
        return;
    }
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < Hv; h++)
            decay[t * Hv + h] = expf(cpu_row(g, t)[h]);
    for (int s = 0; s < b->n_seq; s++)
        assert(((int64_t)b->seq[s].slot + 1) * Hv <= S->rows);
    gdn_job j = { qkv, beta, S, out, keep, keep ? keep->rows / S->rows : 0, decay, b, be,
                  n_k_heads, Hv, dk, cpu_lanes() };
    cpu_for(be, (int64_t)b->n_seq * Hv, 1, gdn_task, &j);
    CPU_PROF_END(be, BE_PROF_DELTANET);
}

void cpu_deltanet(be_ctx *be, const be_tensor *qkv, const be_tensor *g, const be_tensor *beta,
                  be_tensor *S, int64_t n_k_heads, int64_t n_v_heads, int64_t dk,
                  const be_batch *b, be_tensor *out)
{
    deltanet(be, qkv, g, beta, S, NULL, n_k_heads, n_v_heads, dk, b, out);
}

void cpu_deltanet_keep(be_ctx *be, const be_tensor *qkv, const be_tensor *g,
                       const be_tensor *beta, be_tensor *S, be_tensor *keep_S, int64_t n_k_heads,
                       int64_t n_v_heads, int64_t dk, const be_batch *b, be_tensor *out)
{
    assert(!keep_S->f16 && keep_S->cols == dk * dk && keep_S->rows % S->rows == 0);
    deltanet(be, qkv, g, beta, S, keep_S, n_k_heads, n_v_heads, dk, b, out);
}

/* ------------------------------------------------------- deltanet, chunked */

/* The chunked form of the same rule (MODEL.md §2.6), per value head and
 * chunk of up to C tokens, in the head's transposed state layout
 * (St[j][i] = S[i][j]):
 *   G_t = g_0 + ... + g_t                      (within the chunk)
 *   A_ts = beta_t (k_t . k_s) e^(G_t - G_s)    s < t
 *   U_t = beta_t v_t - sum_{s<t} A_ts U_s      ((I + A) U = diag(beta) V)
 *   W_t = beta_t e^G_t k_t - sum_{s<t} A_ts W_s
 *   V'_t = U_t - S^T W_t                       (corrected values)
 *   o_t = e^G_t S^T q_t + sum_{s<=t} (q_t . k_s) e^(G_t - G_s) V'_s
 *   S  <- e^G_last S + sum_t e^(G_last - G_t) k_t V'_t^T
 * A trailing partial chunk needs no padding: padded tokens (g = beta = 0,
 * k = 0) would change nothing. The sums are ordered differently from the
 * recurrence, so results agree to float rounding, not bit for bit. */
typedef struct {
    const be_tensor *qkv, *g, *beta, *S, *out;
    int64_t Hk, Hv, dk, C;
    be_ctx *be;
    const be_batch *b;
} gdnc_job;

static void gdnc_task(void *arg, int64_t i0, int64_t i1, int tid)
{
    const gdnc_job *j = arg;
    const int64_t dk = j->dk, C = j->C;
    const float scale = 1.0f / sqrtf((float)dk);
    float *G = cpu_tscratch(j->be, tid);       /* C */
    float *A = G + C;                          /* C x C */
    float *U = A + C * C;                      /* C x dk (values) */
    float *Wk = U + C * dk;                    /* C x dk (keys) */
    for (int64_t it = i0; it < i1; it++) {
        /* item it: head h of run it / Hv, rows [row0, row0+n_rows) on its slot's state */
        const be_seq *run = &j->b->seq[it / j->Hv];
        const int64_t h = it % j->Hv, T = run->row0 + run->n_rows;
        float *St = cpu_row(j->S, (int64_t)run->slot * j->Hv + h);
        const int64_t kh = h % j->Hk;
        for (int64_t c0 = run->row0; c0 < T; c0 += C) {
            const int64_t n = T - c0 < C ? T - c0 : C;
#define QR(t) (cpu_row(j->qkv, c0 + (t)) + kh * dk)
#define KR(t) (cpu_row(j->qkv, c0 + (t)) + j->Hk * dk + kh * dk)
#define VR(t) (cpu_row(j->qkv, c0 + (t)) + 2 * j->Hk * dk + h * dk)
#define BT(t) (cpu_row(j->beta, c0 + (t))[h])
            float acc = 0.0f;
            for (int64_t t = 0; t < n; t++) {
                acc += cpu_row(j->g, c0 + t)[h];
                G[t] = acc;
            }
            for (int64_t t = 0; t < n; t++)
                for (int64_t s = 0; s < t; s++)
                    A[t * C + s] = BT(t) * cpu_dot_vec(dk, KR(t), KR(s)) * expf(G[t] - G[s]);
            for (int64_t t = 0; t < n; t++) {
                const float bt = BT(t), eg = expf(G[t]);
                float *u = U + t * dk, *w = Wk + t * dk;
                const float *v = VR(t), *k = KR(t);
                for (int64_t i = 0; i < dk; i++) {
                    u[i] = bt * v[i];
                    w[i] = bt * eg * k[i];
                }
                for (int64_t s = 0; s < t; s++) {
                    const float a = -A[t * C + s];
                    cpu_axpy(dk, u, U + s * dk, a);
                    cpu_axpy(dk, w, Wk + s * dk, a);
                }
            }
            /* V'_t = U_t - S^T W_t (after the substitution, which reads the
             * uncorrected U); value index jj reads row jj of St */
            for (int64_t t = 0; t < n; t++)
                for (int64_t jj = 0; jj < dk; jj++)
                    U[t * dk + jj] -= cpu_dot_vec(dk, St + jj * dk, Wk + t * dk);
            /* outputs, with the state as it was at the chunk start */
            for (int64_t t = 0; t < n; t++) {
                float *o = cpu_row(j->out, c0 + t) + h * dk;
                const float *q = QR(t);
                const float eg = expf(G[t]);
                for (int64_t jj = 0; jj < dk; jj++)
                    o[jj] = eg * cpu_dot_vec(dk, St + jj * dk, q);
                for (int64_t s = 0; s <= t; s++) {
                    const float w = cpu_dot_vec(dk, q, KR(s)) * expf(G[t] - G[s]);
                    cpu_axpy(dk, o, U + s * dk, w);
                }
                for (int64_t jj = 0; jj < dk; jj++)
                    o[jj] *= scale;
            }
            /* state: St[jj][i] = e^G_last St[jj][i] + sum_t e^(G_last-G_t) V'_t[jj] k_t[i] */
            const float gl = G[n - 1], el = expf(gl);
            for (int64_t i = 0; i < dk * dk; i++)
                St[i] *= el;
            for (int64_t t = 0; t < n; t++) {
                const float d = expf(gl - G[t]);
                const float *k = KR(t), *u = U + t * dk;
                for (int64_t jj = 0; jj < dk; jj++)
                    cpu_axpy(dk, St + jj * dk, k, d * u[jj]);
            }
#undef QR
#undef KR
#undef VR
#undef BT
        }
    }
}

void cpu_deltanet_chunked(be_ctx *be, const be_tensor *qkv, const be_tensor *g,
                          const be_tensor *beta, be_tensor *S, int64_t n_k_heads,
                          int64_t n_v_heads, int64_t dk, const be_batch *b, be_tensor *out)
{
    CPU_PROF_BEGIN(be);
    assert(qkv->cols == (2 * n_k_heads + n_v_heads) * dk);
    assert(g->cols == n_v_heads && beta->cols == n_v_heads && g->rows == qkv->rows);
    assert(S->rows % n_v_heads == 0 && S->cols == dk * dk && !S->f16);
    assert(out->rows == qkv->rows && out->cols == n_v_heads * dk);
    const int64_t C = DELTANET_CHUNK;
    if (cpu_tscratch_reserve(be, (size_t)(C + C * C + 2 * C * dk))) {
        cpu_fail_scratch(be, "deltanet (chunked)", sizeof(float) * (size_t)(C + C * C + 2 * C * dk));
        return;
    }
    for (int s = 0; s < b->n_seq; s++)
        assert(((int64_t)b->seq[s].slot + 1) * n_v_heads <= S->rows);
    gdnc_job j = { qkv, g, beta, S, out, n_k_heads, n_v_heads, dk, C, be, b };
    cpu_for(be, (int64_t)b->n_seq * n_v_heads, 1, gdnc_task, &j);
    CPU_PROF_END(be, BE_PROF_DELTANET_CHUNKED);
}

/* Both forms: the decays of a pass (shared) and the larger of the two
 * per-thread layouts. */
void cpu_deltanet_scratch(const be_shape *s, size_t *shared, size_t *thread_floats)
{
    const int64_t C = DELTANET_CHUNK, dk = s->ssm_dim;
    *shared = sizeof(float) * (size_t)(s->n_rows * s->ssm_v_heads);
    const int64_t a = 4 * GDN_TC * dk, c = C + C * C + 2 * C * dk;
    *thread_floats = dk > 0 ? (size_t)(a > c ? a : c) : 0;
}
