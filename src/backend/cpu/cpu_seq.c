/* cpu_seq.c: the CPU backend's DeltaNet ops that run along the sequence:
 * the short convolution with its tail, and the gated delta rule (K/V and
 * attention are in cpu_attn.c).
 *
 * The delta rule is the token-by-token recurrence of ggml's fused
 * GATED_DELTA_NET op, which llama.cpp runs for prompt batches as well as
 * for single tokens: per value head, decay the state, predict, correct,
 * read. Work is split over value heads. */
#include "cpu_internal.h"

#include <assert.h>
#include <math.h>
#include <string.h>


/* -------------------------------------------------------------------- conv */

typedef struct {
    const be_tensor *x, *tail, *y;
    const float *w;
    int64_t Kc;
    be_ctx *be;
} conv_job;

/* Channels [c0, c1) of every token, token by token so that x is read a
 * row slice at a time; each output sums its Kc window terms in order
 * i = 0..Kc-1 (ggml's order). */
static void conv_task(void *arg, int64_t c0, int64_t c1, int tid)
{
    (void)tid;
    const conv_job *j = arg;
    const int64_t T = j->x->rows, Kc = j->Kc, nt = Kc - 1;
    for (int64_t t = 0; t < T; t++) {
        float *y = cpu_row(j->y, t);
        for (int64_t c = c0; c < c1; c++) {
            const float *wc = j->w + c * Kc;
            const float *tl = cpu_row(j->tail, c);
            float s = 0.0f;
            for (int64_t i = 0; i < Kc; i++) {
                const int64_t k = t + i;       /* position in [tail | x] */
                const float v = k < nt ? tl[k] : cpu_row(j->x, k - nt)[c];
                s += v * wc[i];
            }
            y[c] = s;
        }
    }
    /* the new tail: the last Kc-1 entries of [tail | x] */
    for (int64_t c = c0; c < c1; c++) {
        float *tl = cpu_row(j->tail, c);
        float keep[16];
        for (int64_t i = 0; i < nt; i++) {
            const int64_t k = T + i;
            keep[i] = k < nt ? tl[k] : cpu_row(j->x, k - nt)[c];
        }
        for (int64_t i = 0; i < nt; i++)
            tl[i] = keep[i];
    }
}

void be_ssm_conv(be_ctx *be, const be_tensor *x, be_tensor *tail, const be_weight *w,
                 be_tensor *y)
{
    CPU_PROF_BEGIN(be);
    const int64_t Kc = (int64_t)w->t->ne[0], C = (int64_t)w->t->ne[1];
    assert(w->type == 0 && x->cols == C && tail->rows == C && tail->cols == Kc - 1);
    assert(y->rows == x->rows && y->cols == C && !tail->f16);
    assert(Kc >= 1 && Kc <= 17);
    conv_job j = { x, tail, y, w->t->data, Kc, be };
    cpu_for(be, C, 256, conv_task, &j);
    CPU_PROF_END(be, BE_PROF_CONV);
}

/* ---------------------------------------------------------------- deltanet */

typedef struct {
    const be_tensor *qkv, *g, *beta, *S, *out;
    int64_t Hk, Hv, dk;
    be_ctx *be;
} gdn_job;

static void gdn_task(void *arg, int64_t h0, int64_t h1, int tid)
{
    const gdn_job *j = arg;
    const int64_t dk = j->dk, T = j->qkv->rows;
    const float scale = 1.0f / sqrtf((float)dk);
    float *delta = cpu_tscratch(j->be, tid);
    for (int64_t h = h0; h < h1; h++) {
        float *S = cpu_row(j->S, h);
        const int64_t kh = h % j->Hk;
        for (int64_t t = 0; t < T; t++) {
            const float *row = cpu_row(j->qkv, t);
            const float *q = row + kh * dk;
            const float *k = row + j->Hk * dk + kh * dk;
            const float *v = row + 2 * j->Hk * dk + h * dk;
            const float b = cpu_row(j->beta, t)[h];
            const float decay = expf(cpu_row(j->g, t)[h]);
            cpu_scale(dk * dk, S, decay);
            for (int64_t jj = 0; jj < dk; jj++)
                delta[jj] = (v[jj] - cpu_dot_vec(dk, S + jj * dk, k)) * b;
            float *o = cpu_row(j->out, t) + h * dk;
            for (int64_t jj = 0; jj < dk; jj++) {
                float *sr = S + jj * dk;
                cpu_axpy(dk, sr, k, delta[jj]);
                o[jj] = cpu_dot_vec(dk, sr, q) * scale;
            }
        }
    }
}

void be_deltanet(be_ctx *be, const be_tensor *qkv, const be_tensor *g, const be_tensor *beta,
                 be_tensor *S, int64_t n_k_heads, int64_t n_v_heads, int64_t dk,
                 be_tensor *out)
{
    CPU_PROF_BEGIN(be);
    assert(qkv->cols == (2 * n_k_heads + n_v_heads) * dk);
    assert(g->cols == n_v_heads && beta->cols == n_v_heads && g->rows == qkv->rows);
    assert(S->rows == n_v_heads && S->cols == dk * dk && !S->f16);
    assert(out->rows == qkv->rows && out->cols == n_v_heads * dk);
    int rc = cpu_tscratch_reserve(be, (size_t)dk);
    assert(rc == 0);
    (void)rc;
    gdn_job j = { qkv, g, beta, S, out, n_k_heads, n_v_heads, dk, be };
    cpu_for(be, n_v_heads, 1, gdn_task, &j);
    CPU_PROF_END(be, BE_PROF_DELTA);
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
} gdnc_job;

static void gdnc_task(void *arg, int64_t h0, int64_t h1, int tid)
{
    const gdnc_job *j = arg;
    const int64_t dk = j->dk, T = j->qkv->rows, C = j->C;
    const float scale = 1.0f / sqrtf((float)dk);
    float *G = cpu_tscratch(j->be, tid);       /* C */
    float *A = G + C;                          /* C x C */
    float *U = A + C * C;                      /* C x dk (values) */
    float *Wk = U + C * dk;                    /* C x dk (keys) */
    for (int64_t h = h0; h < h1; h++) {
        float *St = cpu_row(j->S, h);
        const int64_t kh = h % j->Hk;
        for (int64_t c0 = 0; c0 < T; c0 += C) {
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

void be_deltanet_chunked(be_ctx *be, const be_tensor *qkv, const be_tensor *g, const be_tensor *beta,
                         be_tensor *S, int64_t n_k_heads, int64_t n_v_heads, int64_t dk,
                         be_tensor *out)
{
    CPU_PROF_BEGIN(be);
    assert(qkv->cols == (2 * n_k_heads + n_v_heads) * dk);
    assert(g->cols == n_v_heads && beta->cols == n_v_heads && g->rows == qkv->rows);
    assert(S->rows == n_v_heads && S->cols == dk * dk && !S->f16);
    assert(out->rows == qkv->rows && out->cols == n_v_heads * dk);
    const int64_t C = 64;
    int rc = cpu_tscratch_reserve(be, (size_t)(C + C * C + 2 * C * dk));
    assert(rc == 0);
    (void)rc;
    gdnc_job j = { qkv, g, beta, S, out, n_k_heads, n_v_heads, dk, C, be };
    cpu_for(be, n_v_heads, 1, gdnc_task, &j);
    CPU_PROF_END(be, BE_PROF_DELTA_CHUNKED);
}
