/* study: how many head rows / 16-row groups a k-bit code screen leaves */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "include/q36.h"
#include "gguf/gguf.h"
#include "quant/fp16.h"

int main(int argc, char **argv)
{
    const char *mp = argv[1], *idp = argv[2];
    int stride = atoi(argv[3]);
    q36_err err = { 0 };
    FILE *f = fopen(idp, "r");
    static int32_t ids[8192];
    int n = 0;
    while (n < 8192 && fscanf(f, "%d", &ids[n]) == 1) n++;
    fclose(f);
    q36_model *m;
    if (q36_model_open(mp, &m, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    q36_engine_opts o = q36_engine_opts_default();
    q36_engine *e;
    if (q36_engine_new(m, 4096, &o, &e, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    const int D = q36_engine_n_embd(e), V = q36_engine_n_vocab(e);
    float *H = malloc(sizeof(float) * (size_t)n * D);
    const int B = 64;
    float *lg = malloc(sizeof(float) * (size_t)B * V);
    int32_t slot[64] = { 0 }, pos[64], out[64];
    for (int a = 0; a < n; a += B) {
        int nb = n - a < B ? n - a : B;
        for (int j = 0; j < nb; j++) { pos[j] = a + j; out[j] = j; }
        q36_batch b = { nb, ids + a, slot, pos, nb, out };
        if (q36_engine_eval(e, &b, lg, H + (size_t)a * D, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    }
    gguf_file *g;
    if (gguf_open(mp, &g, &err)) return 1;
    const gguf_tensor *wn = gguf_find_tensor(g, "output_norm.weight");
    const gguf_tensor *wh = gguf_find_tensor(g, "output.weight");
    if (!wh) wh = gguf_find_tensor(g, "token_embd.weight");
    const float *nw = wn->data;
    const uint8_t *W = wh->data;
    const int nbk = D / 32;
    const size_t rb = (size_t)nbk * 34;
    int bits_list[3] = { 4, 5, 6 };
    double tot_c[3] = { 0 }, tot_g[3] = { 0 }, worst_g[3] = { 0 };
    int rows = 0;
    float wmax = 0;
    for (int v = 0; v < V; v++)
        for (int b = 0; b < nbk; b++) {
            uint16_t s16; memcpy(&s16, W + (size_t)v * rb + b * 34, 2);
            wmax = fmaxf(wmax, fabsf(quant_f16_to_f32(s16)));
        }
    const int uni = getenv("UNI") != NULL;
    float *L = malloc(sizeof(float) * V), *A = malloc(sizeof(float) * V * 3), *E = malloc(sizeof(float) * V * 3);
    for (int t = 0; t < n; t += stride, rows++) {
        const float *h = H + (size_t)t * D;
        double ss = 0;
        for (int i = 0; i < D; i++) ss += (double)h[i] * h[i];
        const float r = 1.0f / sqrtf((float)(ss / D) + 1e-6f);
        float x[4096], dx[128];
        int8_t xq[4096];
        for (int i = 0; i < D; i++) x[i] = h[i] * r * nw[i];
        for (int b = 0; b < nbk; b++) {
            float am = 0;
            for (int i = 0; i < 32; i++) am = fmaxf(am, fabsf(x[b * 32 + i]));
            float d = am / 127, id = d ? 1 / d : 0;
            for (int i = 0; i < 32; i++) xq[b * 32 + i] = (int8_t)lrintf(x[b * 32 + i] * id);
            dx[b] = quant_f16_to_f32(quant_f32_to_f16(d));
        }
        for (int v = 0; v < V; v++) {
            const uint8_t *row = W + (size_t)v * rb;
            double l = 0, a[3] = { 0 }, eb[3] = { 0 };
            for (int b = 0; b < nbk; b++) {
                uint16_t s16; memcpy(&s16, row + b * 34, 2);
                const float dw = quant_f16_to_f32(s16);
                const int8_t *c = (const int8_t *)(row + b * 34 + 2);
                const int8_t *q = xq + b * 32;
                int s8 = 0, sx = 0, sa = 0, sh[3] = { 0 };
                for (int i = 0; i < 32; i++) {
                    s8 += c[i] * q[i]; sx += q[i]; sa += abs(q[i]);
                    for (int k = 0; k < 3; k++) sh[k] += (c[i] >> (8 - bits_list[k])) * q[i];
                }
                const double s = (double)dw * dx[b];
                l += s * s8;
                for (int k = 0; k < 3; k++) {
                    const int u = 1 << (8 - bits_list[k]);       /* step */
                    a[k] += s * ((double)u * sh[k] + (u / 2) * (double)sx);
                    eb[k] += (uni ? (double)wmax * dx[b] : fabs(s)) * (u / 2) * sa;
                }
            }
            L[v] = (float)l;
            for (int k = 0; k < 3; k++) { A[k * V + v] = (float)a[k]; E[k * V + v] = (float)eb[k]; }
        }
        for (int k = 0; k < 3; k++) {
            double th = -1e30;
            for (int v = 0; v < V; v++) th = fmax(th, A[k * V + v] - E[k * V + v]);
            int nc = 0, ng = 0, lastg = -1;
            for (int v = 0; v < V; v++)
                if (A[k * V + v] + E[k * V + v] >= th) {
                    nc++;
                    if (v / 16 != lastg) { ng++; lastg = v / 16; }
                }
            tot_c[k] += nc; tot_g[k] += ng;
            if (ng > worst_g[k]) worst_g[k] = ng;
        }
    }
    for (int k = 0; k < 3; k++)
        printf("%d-bit codes: mean candidates %.1f rows, %.1f groups of %d (%.2f%%), worst %.0f groups\n",
               bits_list[k], tot_c[k] / rows, tot_g[k] / rows, (V + 15) / 16,
               100 * tot_g[k] / rows / ((V + 15) / 16), worst_g[k]);
    printf("rows studied %d\n", rows);
    return 0;
}
