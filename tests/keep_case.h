/* keep_case.h: what the CPU and CUDA backend tests share to check the
 * keeping ops (backend.h: be_ssm_conv_silu_keep, be_deltanet_keep)
 * against the plain ops run a row at a time with the tail and state read
 * after each row, on one backend. */
#ifndef Q36_TEST_KEEP_CASE_H
#define Q36_TEST_KEEP_CASE_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "gguf/gguf.h"
#include "quant/types.h"
#include "test.h"
#include "test_batch.h"

/* Case `name` on be: T rows of slot 1 of 2, Hk key and Hv value heads of
 * dk, a conv of Kc over the qkv width; every output, the final tails and
 * states and the kept ones, bit for bit. keyed: the backend keys bound
 * weights by their data (the CUDA backend), so the conv weight's data is
 * left allocated; else it is freed. */
static void keep_case(be_ctx *be, const char *name, int64_t T, int64_t Hk, int64_t Hv, int64_t dk,
                      int64_t Kc, bool keyed)
{
    t_rng r = t_rng_named(name);
    const int64_t W = (2 * Hk + Hv) * dk, C = W, SR = Hv * dk * dk, TR = C * (Kc - 1);
    float *x = t_randv(&r, T * C, 1), *tail0 = t_randv(&r, 2 * TR, 1);
    float *wv = t_randv(&r, C * Kc, 1), *S0 = t_randv(&r, 2 * SR, 0.1f);
    float *g = malloc(sizeof(float) * (size_t)(T * Hv)), *b = malloc(sizeof(float) * (size_t)(T * Hv));
    for (int64_t i = 0; i < T * Hv; i++) {
        g[i] = -t_uniform(&r);
        b[i] = t_uniform(&r);
    }
    /* the conv weight {Kc, C} */
    gguf_tensor *gw = calloc(1, sizeof *gw);
    *gw = (gguf_tensor){ .name = "conv", .type = QT_F32, .n_dims = 2,
                         .ne = { (uint64_t)Kc, (uint64_t)C, 1, 1 }, .data = wv,
                         .nbytes = (uint64_t)(C * Kc) * 4 };
    be_weight *bw = NULL;
    be_weight_bind(be, gw, &bw, NULL);
    /* [m]: 0 the keeping ops, 1 a row at a time; y, the rule's output, the
     * final tails and states, the kept tails and states of rows 0..T-2 */
    const size_t n_out = (size_t)(T * C + T * Hv * dk + 2 * TR + 2 * SR + (T - 1) * (TR + SR));
    float *got[2];
    for (int m = 0; m < 2; m++) {
        float *p = got[m] = calloc(n_out, sizeof(float));
        float *keep_t = p + T * C + T * Hv * dk + 2 * TR + 2 * SR, *keep_S = keep_t + (T - 1) * TR;
        be_tensor *xt = be_tensor_new(be, T, C), *tl = be_tensor_new(be, 2 * C, Kc - 1);
        be_tensor *yt = be_tensor_new(be, T, C), *ot = be_tensor_new(be, T, Hv * dk);
        be_tensor *gt = be_tensor_new(be, T, Hv), *bt = be_tensor_new(be, T, Hv);
        be_tensor *St = be_tensor_new(be, 2 * Hv, dk * dk);
        be_tensor *kt = be_tensor_new(be, T * C, Kc - 1), *kS = be_tensor_new(be, T * Hv, dk * dk);
        be_write(be, xt, 0, T, x);
        be_write(be, tl, 0, 2 * C, tail0);
        be_write(be, gt, 0, T, g);
        be_write(be, bt, 0, T, b);
        be_write(be, St, 0, 2 * Hv, S0);
        if (m == 0) {
            be_batch bb = t_batch1(be, T, 0, T, 1);
            be_ssm_conv_silu_keep(be, xt, tl, bw, &bb, yt, kt);
            be_deltanet_keep(be, yt, gt, bt, St, kS, Hk, Hv, dk, &bb, ot);
            if (T > 1) {
                be_read(be, kt, 0, (T - 1) * C, keep_t);
                be_read(be, kS, 0, (T - 1) * Hv, keep_S);
            }
            be_sync(be);
            be_batch_free(be, &bb);
        } else {
            for (int64_t t = 0; t < T; t++) {
                be_batch bb = t_batch1(be, 1, t, t + 1, 1);
                be_tensor *yr = be_rows(be, yt, t, 1);
                be_ssm_conv_silu(be, be_rows(be, xt, t, 1), tl, bw, &bb, yr);
                be_deltanet(be, yr, be_rows(be, gt, t, 1), be_rows(be, bt, t, 1), St, Hk, Hv, dk,
                            &bb, be_rows(be, ot, t, 1));
                if (t + 1 < T) {
                    be_read(be, tl, C, C, keep_t + t * TR);
                    be_read(be, St, Hv, Hv, keep_S + t * SR);
                }
                be_sync(be);
                be_batch_free(be, &bb);
            }
        }
        be_read(be, yt, 0, T, p);
        be_read(be, ot, 0, T, p + T * C);
        be_read(be, tl, 0, 2 * C, p + T * C + T * Hv * dk);
        be_read(be, St, 0, 2 * Hv, p + T * C + T * Hv * dk + 2 * TR);
        be_sync(be);
        q36_err err = { 0 };
        if (be_check(be, &err))
            t_fail(name, "%s", err.msg);
        be_views_reset(be);
        be_tensor *all[] = { xt, tl, yt, ot, gt, bt, St, kt, kS };
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            be_tensor_free(be, all[i]);
    }
    size_t bad = n_out;
    for (size_t i = 0; i < n_out && bad == n_out; i++)
        if (memcmp(&got[0][i], &got[1][i], sizeof(float)))
            bad = i;
    t_check(name, bad == n_out, "the keeping ops differ from the ops a row at a time at value %zu "
            "of %zu", bad, n_out);
    free(got[0]);
    free(got[1]);
    free(x); free(tail0); free(S0); free(g); free(b);
    if (!keyed) {
        free(gw);
        free(wv);
    }
}

#endif
