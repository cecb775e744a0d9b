/* quantize_act.c: activation quantization for CPU dot products: f32 rows
 * into Q8_0, Q8_1, Q8_K, F16, BF16 (MODEL.md 7.4), reproducing the bytes
 * ggml's x86 CPU backend writes (checked against its from_float in
 * tests/test_ggml_quant_dot.c).
 *
 * Rounding to the nearest integer uses the 1.5*2^23 trick: adding it puts
 * the integer part in the low mantissa bits with ties to even. It is exact
 * for |v| < 2^22, and every value rounded here is at most 127 in size. */
#include "quant.h"

#include <math.h>

#include "quant_impl.h"
#include "../util/err.h"

static inline int round_even(float v)
{
    float t = v + 12582912.f;
    return (int)(quant_f32_bits(t) & 0x7FFFFF) - 0x400000;
}

/* Q8_0 and Q8_1 blocks of 32: the x86 (AVX/AVX2) variant: the scale is
 * 127/amax, not 1/d, and ties go to even (the generic C build differs at
 * exact ties). Writes the 32 codes and returns d (before f16 rounding);
 * *sum gets the code sum. */
static float q8_block(const float *x, int8_t *q, int *sum)
{
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) {
        float a = fabsf(x[j]);
        amax = a > amax ? a : amax;
    }
    const float d = amax / 127.f;
    const float id = amax != 0.0f ? 127.f / amax : 0.0f;
    int s = 0;
    for (int j = 0; j < 32; j++) {
        int v = round_even(x[j] * id);
        q[j] = (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
        s += q[j];
    }
    *sum = s;
    return d;
}

static void act_q8_0(const float *x, uint8_t *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 32, y += 34) {
        int s;
        uint16_t h = quant_f32_to_f16(q8_block(x, (int8_t *)(y + 2), &s));
        memcpy(y, &h, 2);
    }
}

static void act_q8_1(const float *x, uint8_t *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 32, y += 36) {
        int s;
        const float d = q8_block(x, (int8_t *)(y + 4), &s);
        uint16_t h[2] = { quant_f32_to_f16(d), quant_f32_to_f16(d * (float)s) };
        memcpy(y, h, 4);
    }
}

/* Q8_K, 256 elements: ggml's reference algorithm, which its x86 backend
 * uses as is. The scale is negative: the largest element maps to -127. */
static void act_q8_K(const float *x, uint8_t *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 256, y += 292) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < 256; j++) {
            float a = fabsf(x[j]);
            if (a > amax) {
                amax = a;
                max = x[j];
            }
        }
        int8_t *q = (int8_t *)(y + 4);
        int16_t bs[16];
        float d = 0.0f;
        if (amax == 0.0f) {
            memset(q, 0, 256);
            memset(bs, 0, sizeof bs);
        } else {
            const float iscale = -127.f / max;
            for (int j = 0; j < 256; j++) {
                int v = round_even(iscale * x[j]);
                q[j] = (int8_t)(v < 127 ? v : 127);
            }
            for (int g = 0; g < 16; g++) {
                int s = 0;
                for (int l = 0; l < 16; l++)
                    s += q[16 * g + l];
                bs[g] = (int16_t)s;
            }
            d = 1 / iscale;
        }
        memcpy(y, &d, 4);
        memcpy(y + 260, bs, sizeof bs);
    }
}

int quant_act_quantize(uint32_t act_type, const float *x, void *out, int64_t n)
{
    const quant_type_info *t = quant_type_get(act_type);
    if (!t)
        return Q36_E_UNSUP;
    if (n < 0 || n % t->blck)
        return Q36_E_ARG;
    uint8_t *y = out;
    const int64_t nb = n / t->blck;
    switch (act_type) {
    case QT_F32:
        memcpy(y, x, (size_t)n * 4);
        return 0;
    case QT_F16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = quant_f32_to_f16(x[i]);
            memcpy(y + 2 * i, &h, 2);
        }
        return 0;
    case QT_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = quant_f32_to_bf16(x[i]);
            memcpy(y + 2 * i, &h, 2);
        }
        return 0;
    case QT_Q8_0: act_q8_0(x, y, nb); return 0;
    case QT_Q8_1: act_q8_1(x, y, nb); return 0;
    case QT_Q8_K: act_q8_K(x, y, nb); return 0;
    default:
        return Q36_E_UNSUP;
    }
}
