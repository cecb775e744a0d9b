/* cpu_attn_ref.c: the plain reference of be_attention, one (query row,
 * head) at a time, every K and V element converted where it is used. It
 * defines the bits the tiled attention of cpu_attn.c must reproduce, and
 * tests/test_cpu_attn.c compares the two.
 *
 * It follows ggml's non-flash path (what the strict-parity oracle runs):
 * scores in f32 (for an f16 cache the query is rounded to f16, as ggml's
 * mul_mat rounds src1 to the f16 vec_dot_type), scale, softmax with max
 * subtraction, double sum and a float 1/sum, then probabilities times V
 * (for an f16 V cache the probabilities are rounded to f16 too). */
#include "cpu_attn.h"

#include <assert.h>
#include <math.h>

#include "../../quant/fp16.h"
#include "cpu_gexp.h"
#include "cpu_vexp.h"

typedef struct {
    const be_tensor *q, *kc, *vc, *out;
    int64_t pos0, n_head, group, hd;
    float scale;
    be_ctx *be;
} ref_job;

/* One (query row, head): scores in ggml_vec_dot_f32's order, softmax with
 * per-vector-chunk tree sums added in double, and probabilities times V in
 * the f32 GEMM's lane order (cpu_fdot.c). Positions after the query's own
 * are masked in llama.cpp with probability exactly 0, which adds nothing
 * to any lane, so they are skipped here. */
static void ref_task(void *arg, int64_t i0, int64_t i1, int tid)
{
    const ref_job *j = arg;
    const int64_t hd = j->hd;
    const int W = cpu_lanes(), level = cpu_vexp_level();
    float *sc = cpu_tscratch(j->be, tid);          /* scores */
    float *qq = sc + j->pos0 + j->q->rows + 16;    /* hd: the query */
    float *kk = qq + hd;                           /* hd: one K row as f32 */
    float *acc = kk + hd;                          /* W x hd lane accumulators */
    for (int64_t it = i0; it < i1; it++) {
        const int64_t r = it / j->n_head, h = it % j->n_head;
        const int64_t kvh = h / j->group;
        const int64_t n_kv = j->pos0 + r + 1;
        const float *q = cpu_row(j->q, r) + h * hd;
        for (int64_t d = 0; d < hd; d++)
            qq[d] = j->kc->f16 ? quant_f16_to_f32(quant_f32_to_f16(q[d])) : q[d];
        float mx = -INFINITY;
        for (int64_t p = 0; p < n_kv; p++) {
            const float *kr;
            if (j->kc->f16) {
                const uint16_t *k16 = (const uint16_t *)j->kc->data + p * j->kc->ld + kvh * hd;
                for (int64_t d = 0; d < hd; d++)
                    kk[d] = quant_f16_to_f32(k16[d]);
                kr = kk;
            } else {
                kr = (const float *)j->kc->data + p * j->kc->ld + kvh * hd;
            }
            float s = cpu_dot_vec(hd, kr, qq) * j->scale;
            sc[p] = s;
            mx = s > mx ? s : mx;
        }
        double sum = 0.0;
        for (int64_t p0 = 0; p0 < n_kv; p0 += W) {
            float lanes[16];
            for (int l = 0; l < W; l++) {
                const int64_t p = p0 + l;
                lanes[l] = p < n_kv ? (sc[p] = cpu_gexp1(level, sc[p] - mx)) : 0.0f;
            }
            sum += (double)cpu_lane_sum(lanes, W);
        }
        const float inv = (float)(1.0 / sum);
        for (int64_t p = 0; p < n_kv; p++) {
            sc[p] *= inv;
            if (j->vc->f16)
                sc[p] = quant_f16_to_f32(quant_f32_to_f16(sc[p]));
        }
        for (int64_t a = 0; a < (int64_t)W * hd; a++)
            acc[a] = 0.0f;
        for (int64_t p = 0; p < n_kv; p++) {
            const float *vr;
            if (j->vc->f16) {
                const uint16_t *v16 = (const uint16_t *)j->vc->data + p * j->vc->ld + kvh * hd;
                for (int64_t d = 0; d < hd; d++)
                    kk[d] = quant_f16_to_f32(v16[d]);
                vr = kk;
            } else {
                vr = (const float *)j->vc->data + p * j->vc->ld + kvh * hd;
            }
            cpu_axpy(hd, acc + (p % W) * hd, vr, sc[p]);
        }
        float *o = cpu_row(j->out, r) + h * hd;
        for (int64_t d = 0; d < hd; d++) {
            float lanes[16];
            for (int l = 0; l < W; l++)
                lanes[l] = acc[l * hd + d];
            o[d] = cpu_lane_sum(lanes, W);
        }
    }
}

void cpu_attention_ref(be_ctx *be, const be_tensor *q, const be_tensor *kc, const be_tensor *vc,
                  int64_t pos0, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                  float scale, be_tensor *out)
{
    assert(q->cols == n_head * head_dim && out->cols == q->cols && out->rows == q->rows);
    assert(kc->cols == n_head_kv * head_dim && vc->cols == kc->cols);
    assert(n_head % n_head_kv == 0 && pos0 + q->rows <= kc->rows);
    int rc = cpu_tscratch_reserve(be, (size_t)(pos0 + q->rows + 16 + 18 * head_dim));
    assert(rc == 0);
    (void)rc;
    ref_job j = { q, kc, vc, out, pos0, n_head, n_head / n_head_kv, head_dim, scale, be };
    cpu_for(be, q->rows * n_head, 1, ref_task, &j);
}

