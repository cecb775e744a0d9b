/* cpu_rope.c: the CPU backend's rotary position embedding (be_rope): the
 * partial NeoX rotation of each head with the multi-section angle rule of
 * Qwen3.5/3.6 text positions, each row at its own position (a batch mixes
 * sequences). Its bits are llama.cpp's (tests/test_ggml_rope.c). */
#include "cpu.h"

#include <assert.h>
#include <math.h>

/* The rotation of one head's n_rot/2 pairs (i, i + half). Each output is
 * one fused multiply-add over the other product rounded:
 * fma(x0, cos, -(x1 sin)) and fma(x0, sin, x1 cos). ggml's rope is C++
 * (ops.cpp) built as GNU C++17, where GCC contracts x0*cos - x1*sin so on
 * the FMA-capable x86 variants of libggml-cpu llama.cpp loads (zen4 here):
 * on llama.cpp's own rope input of a 16-token batch (Q, 4 heads) this gives
 * its outputs bit for bit, rounded products put 134 of the 1024 rotated
 * ones an ulp apart, and attention carried those into the logits
 * (tests/test_ggml_rope.c). The
 * hardware form where the CPU has FMA, libm's fmaf (same bits) where not. */
__attribute__((target("fma")))
static void rope_pairs_hw(float *v, int64_t half, const float *cs, const float *sn)
{
    for (int64_t i = 0; i < half; i++) {
        const float x0 = v[i], x1 = v[i + half];
        v[i] = __builtin_fmaf(x0, cs[i], -(x1 * sn[i]));
        v[i + half] = __builtin_fmaf(x0, sn[i], x1 * cs[i]);
    }
}

static void rope_pairs_libm(float *v, int64_t half, const float *cs, const float *sn)
{
    for (int64_t i = 0; i < half; i++) {
        const float x0 = v[i], x1 = v[i + half];
        v[i] = fmaf(x0, cs[i], -(x1 * sn[i]));
        v[i + half] = fmaf(x0, sn[i], x1 * cs[i]);
    }
}

void cpu_rope(be_ctx *be, be_tensor *x, int64_t head_dim, int64_t n_rot,
              const int32_t sections[4], float base, const be_tensor *pos)
{
    CPU_PROF_BEGIN(be);
    assert(!x->f16 && x->cols % head_dim == 0 && n_rot % 2 == 0 && n_rot <= head_dim);
    const int64_t half = n_rot / 2;
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    const int sect_dims = sections[0] + sections[1] + sections[2] + sections[3];
    assert(sect_dims > 0 && half <= 512);
    float cs[512], sn[512];
    __builtin_cpu_init();
    const bool hw = __builtin_cpu_supports("fma");
    for (int64_t r = 0; r < x->rows; r++) {
        /* text positions are (p, p, p, 0): the three first components share
         * one running theta; the fourth is always 0 (cos 1, sin 0) */
        float theta = (float)((const int32_t *)pos->data)[r * pos->ld];
        for (int64_t i = 0; i < half; i++) {
            const int sector = (int)(i % sect_dims);
            bool first3 = (sector % 3 == 1 && sector < 3 * sections[1]) ||
                          (sector % 3 == 2 && sector < 3 * sections[2]) ||
                          (sector % 3 == 0 && sector < 3 * sections[0]);
            const float th = first3 ? theta : 0.0f;
            cs[i] = cosf(th);
            sn[i] = sinf(th);
            theta *= theta_scale;
        }
        float *xr = cpu_row(x, r);
        for (int64_t h0 = 0; h0 < x->cols; h0 += head_dim) {
            if (hw)
                rope_pairs_hw(xr + h0, half, cs, sn);
            else
                rope_pairs_libm(xr + h0, half, cs, sn);
        }
    }
    CPU_PROF_END(be, BE_PROF_ROPE);
}

