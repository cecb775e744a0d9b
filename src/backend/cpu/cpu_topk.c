/* cpu_topk.c: be_topk on the CPU: each row scanned once in column order,
 * its k best so far kept sorted (best first) in the output row itself; a
 * value enters when it is above the k-th (so among equal values the lower
 * column, met first, stays ahead) and goes in after every value not below
 * it. After the first few thousand columns of a row of logits almost no
 * value passes the k-th, so the scan is one compare a column. */
#include "cpu.h"

#include <math.h>

typedef struct {
    const be_tensor *x, *ids, *vals;
    int64_t k;
} topk_job;

static void topk_rows(void *arg, int64_t r0, int64_t r1, int tid)
{
    (void)tid;
    const topk_job *j = arg;
    const int64_t n = j->x->cols, k = j->k;
    for (int64_t r = r0; r < r1; r++) {
        const float *x = cpu_row(j->x, r);
        int32_t *id = (int32_t *)j->ids->data + r * j->ids->ld;
        float *v = cpu_row(j->vals, r);
        int64_t m = 0;             /* values kept so far */
        for (int64_t c = 0; c < n; c++) {
            const float xc = x[c];
            if (isnan(xc) || (m == k && !(xc > v[k - 1])))
                continue;
            int64_t at = m < k ? m : k - 1;  /* the slot freed, then moved down to */
            for (; at > 0 && xc > v[at - 1]; at--) {
                v[at] = v[at - 1];
                id[at] = id[at - 1];
            }
            v[at] = xc;
            id[at] = (int32_t)c;
            m += m < k;
        }
        for (; m < k; m++) {
            v[m] = -INFINITY;
            id[m] = -1;
        }
    }
}

void cpu_topk(be_ctx *be, const be_tensor *x, int64_t k, be_tensor *ids, be_tensor *vals)
{
    CPU_PROF_BEGIN(be);
    topk_job j = { x, ids, vals, k };
    cpu_for(be, x->rows, 1, topk_rows, &j);
    CPU_PROF_END(be, BE_PROF_TOPK);
}
