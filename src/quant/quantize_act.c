/* quantize_act.c: activation quantization for CPU dot products: f32 rows
 * into Q8_0, Q8_1, Q8_K, F16, BF16 (MODEL.md 7.4), reproducing the bytes
 * ggml's x86 CPU backend writes (checked against its from_float in
 * tests/test_ggml_quant_dot.c).
 *
 * Rounding to the nearest integer uses the 1.5*2^23 trick: adding it puts
 * the integer part in the low mantissa bits with ties to even. It is exact
 * for |v| < 2^22, which every finite value rounded here is unless a whole
 * block lies below ~4e-37 (then 127/amax overflows); Q8_0/Q8_1 handle that
 * and inf/NaN inputs the way the AVX2 instructions do, Q8_K the way ggml's
 * scalar code does, so the bytes match ggml for every input.
 *
 * These scalar loops are the reference; quantize_act_simd.c has AVX2 and
 * AVX-512 twins of the Q8_0 and Q8_K ones (the formats of the K-quant and
 * Q8_0 weights) with the same bytes, taken on CPUs that run them. */
#include "quant.h"

#include <math.h>

#include "quant_impl.h"
#include "quantize_act_simd.h"
#include "../util/err.h"

static inline int round_even(float v)
{
    float t = v + 12582912.f;
    return (int)(quant_f32_bits(t) & 0x7FFFFF) - 0x400000;
}

/* vcvtps2dq then the saturating packs to int8: NaN and values outside the
 * int32 range give the "integer indefinite" INT32_MIN, so -128; in range,
 * round half to even, then clamp to [-128, 127]. *wide gets the int32 (the
 * Q8_1 sum is taken before the packs). */
static inline int8_t cvt_pack(float v, int32_t *wide)
{
    int32_t r;
    if (!(v > -2147483648.0f && v < 2147483648.0f))
        r = INT32_MIN;
    else if (fabsf(v) < 4194304.0f)
        r = round_even(v);
    else
        r = (int32_t)v;         /* |v| >= 2^22: .5 at most, and clamped below */
    *wide = r;
    return (int8_t)(r > 127 ? 127 : r < -128 ? -128 : r);
}

/* maxps returns its second operand when either is NaN; ggml's AVX2 code
 * reduces |x| over 4 vectors of 8, then halves 8 -> 4 -> 2 -> 1 lanes, and
 * this repeats that order so a NaN lands where it lands there. */
static inline float maxps(float a, float b)
{
    return a > b ? a : b;
}

static float amax_avx_order(const float *x)
{
    float m[8], t[4];
    for (int j = 0; j < 8; j++)
        m[j] = maxps(maxps(maxps(fabsf(x[j]), fabsf(x[8 + j])), fabsf(x[16 + j])), fabsf(x[24 + j]));
    for (int k = 0; k < 4; k++)
        t[k] = maxps(m[4 + k], m[k]);
    return maxps(maxps(t[0], t[2]), maxps(t[1], t[3]));
}

/* f32 -> f16 as F16C's vcvtps2ph does it: round to nearest even like
 * quant_f32_to_f16, but a NaN keeps the top bits of its payload. ggml's
 * CPU backend converts F16 activation rows with it in groups of 4 and
 * converts the rest (the tail, and the Q8_0/Q8_1 scales) in software. */
static inline uint16_t f16_cpu(float f)
{
    uint32_t u = quant_f32_bits(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((u >> 16 & 0x8000) | 0x7E00 | (u >> 13 & 0x3FF));
    return quant_f32_to_f16(f);
}

/* Q8_0 and Q8_1 blocks of 32: the x86 (AVX/AVX2) variant: the scale is
 * 127/amax, not 1/d, and ties go to even (the generic C build differs at
 * exact ties). Writes the 32 codes and returns d (before f16 rounding);
 * *sum gets the int32 sum of the unpacked codes (wrapping, as vpaddd). */
static float q8_block(const float *x, int8_t *q, int32_t *sum)
{
    const float amax = amax_avx_order(x);
    const float d = amax / 127.f;
    const float id = amax != 0.0f ? 127.f / amax : 0.0f;
    uint32_t s = 0;
    for (int j = 0; j < 32; j++) {
        int32_t wide;
        q[j] = cvt_pack(x[j] * id, &wide);
        s += (uint32_t)wide;
    }
    *sum = (int32_t)s;
    return d;
}

static void act_q8_0(const float *x, uint8_t *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 32, y += 34) {
        int32_t s;
        uint16_t h = quant_f32_to_f16(q8_block(x, (int8_t *)(y + 2), &s));
        memcpy(y, &h, 2);
    }
}

static void act_q8_1(const float *x, uint8_t *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 32, y += 36) {
        int32_t s;
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

typedef void (*act_block_fn)(const float *x, uint8_t *y, int64_t nb);

/* The Q8_0 / Q8_K block loop of path p: the fastest one at or below p
 * that this CPU runs (Q8_0 has no AVX-512 loop: the AVX2 one serves). */
static act_block_fn q8_fn(uint32_t act_type, enum quant_path p)
{
#if defined(__x86_64__)
    if (act_type == QT_Q8_K && p >= QUANT_PATH_AVX512 && quant_path_available(QUANT_PATH_AVX512))
        return quant_act_q8_K_avx512;
    if (p >= QUANT_PATH_AVX2 && quant_path_available(QUANT_PATH_AVX2))
        return act_type == QT_Q8_K ? quant_act_q8_K_avx2 : quant_act_q8_0_avx2;
#else
    (void)p;
#endif
    return act_type == QT_Q8_K ? act_q8_K : act_q8_0;
}

static int act_quantize(uint32_t act_type, const float *x, void *out, int64_t n,
                        enum quant_path p)
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
            uint16_t h = i < n - n % 4 ? f16_cpu(x[i]) : quant_f32_to_f16(x[i]);
            memcpy(y + 2 * i, &h, 2);
        }
        return 0;
    case QT_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = quant_f32_to_bf16(x[i]);
            memcpy(y + 2 * i, &h, 2);
        }
        return 0;
    case QT_Q8_0:
    case QT_Q8_K:
        q8_fn(act_type, p)(x, y, nb);
        return 0;
    case QT_Q8_1: act_q8_1(x, y, nb); return 0;
    default:
        return Q36_E_UNSUP;
    }
}

int quant_act_quantize_path(uint32_t act_type, const float *x, void *out, int64_t n,
                            enum quant_path p)
{
    if ((unsigned)p >= QUANT_PATH_COUNT || !quant_path_available(p))
        return Q36_E_UNSUP;
    return act_quantize(act_type, x, out, n, p);
}

int quant_act_quantize(uint32_t act_type, const float *x, void *out, int64_t n)
{
    return act_quantize(act_type, x, out, n, QUANT_PATH_COUNT - 1);
}
