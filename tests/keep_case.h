/* keep_case.h: what the CPU and CUDA backend tests share to check the
 * keeping ops (backend.h: be_ssm_conv_silu_keep, be_deltanet_keep)
 * against the plain ops run a row at a time with the tail and state read
 * after each row, on one backend. */
#ifndef Q36_TEST_KEEP_CASE_H
#define Q36_TEST_KEEP_CASE_H

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "gguf/gguf.h"
#include "quant/types.h"
#include "test.h"
#include "test_batch.h"

/* Case `name` on be: one batch of two runs, T rows of slot 2 then T0 =
 * max(1, T - 1) of slot 0 (3 slots, K = T kept rows a slot), Hk key and
 * Hv value heads of dk, a conv of Kc over the qkv width; every output, the
 * final tails and states of every slot and all the kept rows (those no row
 * writes stay zero), bit for bit against the plain ops a row at a time.
 * keyed: the backend keys bound weights by their data (the CUDA backend),
 * so the conv weight's data is left allocated; else it is freed. */
static void keep_case(be_ctx *be, const char *name, int64_t T, int64_t Hk, int64_t Hv, int64_t dk,
                      int64_t Kc, bool keyed)
{
    t_rng r = t_rng_named(name);
    enum { NS = 3 };
    const int64_t T0 = T > 1 ? T - 1 : 1, R = T + T0, K = T;
    const int sl[2] = { 2, 0 };
    const int64_t n[2] = { T, T0 }, r0[2] = { 0, T }, p0[2] = { 5, 0 };
    const int64_t W = (2 * Hk + Hv) * dk, C = W, SR = Hv * dk * dk, TR = C * (Kc - 1);
    float *x = t_randv(&r, R * C, 1), *tail0 = t_randv(&r, NS * TR, 1);
    float *wv = t_randv(&r, C * Kc, 1), *S0 = t_randv(&r, NS * SR, 0.1f);
    float *g = malloc(sizeof(float) * (size_t)(R * Hv)), *b = malloc(sizeof(float) * (size_t)(R * Hv));
    for (int64_t i = 0; i < R * Hv; i++) {
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
     * final tails and states, the kept tails and states (NS * K rows each) */
    const size_t n_out = (size_t)(R * C + R * Hv * dk + NS * TR + NS * SR + NS * K * (TR + SR));
    float *got[2];
    float *zt = calloc((size_t)(NS * K * TR), sizeof(float)), *zS = calloc((size_t)(NS * K * SR), sizeof(float));
    for (int m = 0; m < 2; m++) {
        float *p = got[m] = calloc(n_out, sizeof(float));
        float *keep_t = p + R * C + R * Hv * dk + NS * TR + NS * SR, *keep_S = keep_t + NS * K * TR;
        be_tensor *xt = be_tensor_new(be, R, C), *tl = be_tensor_new(be, NS * C, Kc - 1);
        be_tensor *yt = be_tensor_new(be, R, C), *ot = be_tensor_new(be, R, Hv * dk);
        be_tensor *gt = be_tensor_new(be, R, Hv), *bt = be_tensor_new(be, R, Hv);
        be_tensor *St = be_tensor_new(be, NS * Hv, dk * dk);
        be_tensor *kt = be_tensor_new(be, NS * K * C, Kc - 1), *kS = be_tensor_new(be, NS * K * Hv, dk * dk);
        be_write(be, xt, 0, R, x);
        be_write(be, tl, 0, NS * C, tail0);
        be_write(be, gt, 0, R, g);
        be_write(be, bt, 0, R, b);
        be_write(be, St, 0, NS * Hv, S0);
        be_write(be, kt, 0, NS * K * C, zt);
        be_write(be, kS, 0, NS * K * Hv, zS);
        if (m == 0) {
            be_batch bb;
            int rc = be_batch_init(be, &bb, R, 2, 64, NULL);
            assert(rc == 0);
            (void)rc;
            const be_seq runs[2] = { { sl[0], 0, (int32_t)n[0], (int32_t)p0[0] },
                                     { sl[1], (int32_t)r0[1], (int32_t)n[1], (int32_t)p0[1] } };
            be_batch_set(be, &bb, 2, runs);
            be_ssm_conv_silu_keep(be, xt, tl, bw, &bb, yt, kt);
            be_deltanet_keep(be, yt, gt, bt, St, kS, Hk, Hv, dk, &bb, ot);
            be_sync(be);
            be_batch_free(be, &bb);
        } else {
            for (int s = 0; s < 2; s++)
                for (int64_t t = 0; t < n[s]; t++) {
                    const int64_t row = r0[s] + t;
                    be_batch bb = t_batch1(be, 1, p0[s] + t, 64, sl[s]);
                    be_tensor *yr = be_rows(be, yt, row, 1);
                    be_ssm_conv_silu(be, be_rows(be, xt, row, 1), tl, bw, &bb, yr);
                    be_deltanet(be, yr, be_rows(be, gt, row, 1), be_rows(be, bt, row, 1), St, Hk,
                                Hv, dk, &bb, be_rows(be, ot, row, 1));
                    if (t + 1 < n[s]) {
                        be_copy(be, be_rows(be, tl, sl[s] * C, C),
                                be_rows(be, kt, (sl[s] * K + t) * C, C));
                        be_copy(be, be_rows(be, St, sl[s] * Hv, Hv),
                                be_rows(be, kS, (sl[s] * K + t) * Hv, Hv));
                    }
                    be_sync(be);
                    be_batch_free(be, &bb);
                }
        }
        be_read(be, yt, 0, R, p);
        be_read(be, ot, 0, R, p + R * C);
        be_read(be, tl, 0, NS * C, p + R * C + R * Hv * dk);
        be_read(be, St, 0, NS * Hv, p + R * C + R * Hv * dk + NS * TR);
        be_read(be, kt, 0, NS * K * C, keep_t);
        be_read(be, kS, 0, NS * K * Hv, keep_S);
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
    free(zt); free(zS);
    free(x); free(tail0); free(S0); free(g); free(b);
    if (!keyed) {
        free(gw);
        free(wv);
    }
}

#endif
