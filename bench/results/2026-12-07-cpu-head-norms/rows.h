/* rows.h: what lvl.c and early-study.c share: a model's final hidden rows of
 * a prompt's first tokens (ids, one a line), normalized by output_norm and
 * quantized to Q8_0 as the greedy head's input, and the head's Q8_0 rows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "include/q36.h"
#include "gguf/gguf.h"
#include "quant/fp16.h"

typedef struct head_rows {
    int            n, D, V;
    const uint8_t *W;       /* V rows of D / 32 blocks of 34 bytes */
    uint8_t       *act;     /* n rows of the same */
} head_rows;

static int head_rows_load(const char *mp, const char *idp, int max_n, head_rows *h)
{
    q36_err err = { 0 };
    FILE *f = fopen(idp, "r");
    static int32_t ids[8192];
    int n = 0;
    while (f && n < 8192 && n < max_n && fscanf(f, "%d", &ids[n]) == 1)
        n++;
    if (f)
        fclose(f);
    q36_model *m;
    q36_engine *e;
    q36_engine_opts o = q36_engine_opts_default();
    if (!n || q36_model_open(mp, &m, &err) || q36_engine_new(m, 4096, &o, &e, &err)) {
        fprintf(stderr, "%s: %s\n", mp, n ? err.msg : "no ids");
        return 1;
    }
    const int D = q36_engine_n_embd(e), V = q36_engine_n_vocab(e), B = 64;
    float *H = malloc(sizeof(float) * (size_t)n * D), *lg = malloc(sizeof(float) * (size_t)B * V);
    int32_t slot[64] = { 0 }, pos[64], out[64];
    for (int a = 0; a < n; a += B) {
        const int nb = n - a < B ? n - a : B;
        for (int j = 0; j < nb; j++)
            pos[j] = a + j, out[j] = j;
        q36_batch b = { nb, ids + a, slot, pos, nb, out };
        if (q36_engine_eval(e, &b, lg, H + (size_t)a * D, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
    }
    gguf_file *g;
    if (gguf_open(mp, &g, &err))
        return 1;
    const gguf_tensor *wn = gguf_find_tensor(g, "output_norm.weight");
    const gguf_tensor *wh = gguf_find_tensor(g, "output.weight");
    if (!wh)
        wh = gguf_find_tensor(g, "token_embd.weight");
    const float *nw = wn->data;
    const size_t rb = (size_t)D / 32 * 34;
    *h = (head_rows){ .n = n, .D = D, .V = V, .W = wh->data, .act = malloc(rb * (size_t)n) };
    for (int t = 0; t < n; t++) {
        const float *x = H + (size_t)t * D;
        double ss = 0;
        for (int i = 0; i < D; i++)
            ss += (double)x[i] * x[i];
        const float r = 1.0f / sqrtf((float)(ss / D) + 1e-6f);
        for (int b = 0; b < D / 32; b++) {
            float y[32], am = 0;
            for (int i = 0; i < 32; i++)
                y[i] = x[b * 32 + i] * r * nw[b * 32 + i], am = fmaxf(am, fabsf(y[i]));
            const float d = am / 127, id = d ? 1 / d : 0;
            const uint16_t d16 = quant_f32_to_f16(d);
            uint8_t *blk = h->act + (size_t)t * rb + (size_t)b * 34;
            memcpy(blk, &d16, 2);
            for (int i = 0; i < 32; i++)
                blk[2 + i] = (uint8_t)(int8_t)lrintf(y[i] * id);
        }
    }
    free(H), free(lg);
    return 0;
}
