/* cpu_deltanet_ref.c: plain references of the sequence kernels (cpu_deltanet.h):
 * the conv and the delta rule as they were first written, which the fast
 * kernels of cpu_deltanet.c and cpu_deltanet_rows.c must match bit for bit
 * (tests/test_cpu_deltanet.c). They read like the math and are not fast. */
#include "cpu_deltanet.h"

/* Products are rounded before they are added, as in ggml's build: GCC in
 * ISO C mode does not contract a * b + c into a fused multiply-add; clang
 * does unless told not to. */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#include <assert.h>
#include <math.h>

/* -------------------------------------------------------------------- conv */

/* ggml's ssm_conv is C++ (ops.cpp) built as GNU C++17: GCC vectorizes its
 * tap loop in blocks of whole vectors (each product rounded, then added to
 * the sum in order) and contracts sumf += s * c into a fused multiply-add
 * for the taps after the last block. The block is 8 floats in the AVX-512
 * variants (zen4, skylakex, ...), 4 in haswell (blocks of 8 then one of 4),
 * so with the models' 4 taps the AVX-512 builds fuse every tap and haswell
 * none; cpu_conv_nmul(Kc) counts the unfused taps of the variant llama.cpp
 * loads here (tests/test_ggml_conv.c checks both). */

void cpu_conv_ref(const be_tensor *x, be_tensor *tail, const float *w, int64_t Kc,
                  be_tensor *y, int64_t c0, int64_t c1)
{
    const int64_t T = x->rows, nt = Kc - 1, nmul = cpu_conv_nmul(Kc);
    for (int64_t t = 0; t < T; t++) {
        float *yr = cpu_row(y, t);
        for (int64_t c = c0; c < c1; c++) {
            const float *wc = w + c * Kc;
            const float *tl = cpu_row(tail, c);
            float s = 0.0f;
            for (int64_t i = 0; i < Kc; i++) {
                const int64_t k = t + i;       /* position in [tail | x] */
                const float v = k < nt ? tl[k] : cpu_row(x, k - nt)[c];
                if (i < nmul) {
                    const float p = v * wc[i];
                    s = s + p;
                } else {
                    s = fmaf(v, wc[i], s);
                }
            }
            yr[c] = s;
        }
    }
    /* the new tail: the last Kc-1 entries of [tail | x] */
    for (int64_t c = c0; c < c1; c++) {
        float *tl = cpu_row(tail, c);
        float keep[16];
        for (int64_t i = 0; i < nt; i++) {
            const int64_t k = T + i;
            keep[i] = k < nt ? tl[k] : cpu_row(x, k - nt)[c];
        }
        for (int64_t i = 0; i < nt; i++)
            tl[i] = keep[i];
    }
}

/* -------------------------------------------------------------- delta rule */

/* Row j through every token: decay, predict, correct, read. */
void cpu_deltanet_rows_ref(const cpu_deltanet_head *hd, float *S, int64_t j0, int64_t j1, int W)
{
    const int64_t n = hd->dk;
    for (int64_t j = j0; j < j1; j++) {
        float *s = S + j * n;
        for (int64_t t = 0; t < hd->T; t++) {
            const float *q = hd->q + t * hd->ld, *k = hd->k + t * hd->ld;
            const float dec = hd->decay[t * hd->dstride], b = hd->beta[t * hd->bstride];
            const float *si = t == 0 && hd->src ? hd->src + j * n : s;
            for (int64_t i = 0; i < n; i++)
                s[i] = si[i] * dec;
            const float delta = (hd->v[t * hd->ld + j] - cpu_dot_vec_ref(n, s, k, W)) * b;
            for (int64_t i = 0; i < n; i++)
                s[i] = fmaf(k[i], delta, s[i]);
            hd->out[t * hd->ldo + j] = cpu_dot_vec_ref(n, s, q, W) * hd->scale;
        }
    }
}

void cpu_deltanet_ref(const be_tensor *qkv, const be_tensor *g, const be_tensor *beta,
                      be_tensor *St, int64_t Hk, int64_t Hv, int64_t dk, be_tensor *out)
{
    const int64_t T = qkv->rows;
    const float scale = 1.0f / sqrtf((float)dk);
    float delta[1024];
    assert(dk <= 1024);
    for (int64_t h = 0; h < Hv; h++) {
        float *S = cpu_row(St, h);
        const int64_t kh = h % Hk;
        for (int64_t t = 0; t < T; t++) {
            const float *row = cpu_row(qkv, t);
            const float *q = row + kh * dk;
            const float *k = row + Hk * dk + kh * dk;
            const float *v = row + 2 * Hk * dk + h * dk;
            const float b = cpu_row(beta, t)[h];
            const float decay = expf(cpu_row(g, t)[h]);
            cpu_scale(dk * dk, S, decay);
            for (int64_t jj = 0; jj < dk; jj++)
                delta[jj] = (v[jj] - cpu_dot_vec(dk, S + jj * dk, k)) * b;
            float *o = cpu_row(out, t) + h * dk;
            for (int64_t jj = 0; jj < dk; jj++) {
                float *sr = S + jj * dk;
                cpu_axpy(dk, sr, k, delta[jj]);
                o[jj] = cpu_dot_vec(dk, sr, q) * scale;
            }
        }
    }
}
