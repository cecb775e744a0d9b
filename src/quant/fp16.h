/* fp16.h: scalar conversions between f32 and the small float formats the
 * quant blocks use: IEEE binary16 (f16), bfloat16 (bf16), the E8M0 power of
 * two of MXFP4 and the unsigned E4M3 scale of NVFP4. Pure bit arithmetic, no
 * tables, no dependence on the FPU rounding mode or on F16C.
 *
 * Contracts (each checked against libggml by tests/test_ggml_quant.c):
 *   quant_f16_to_f32   exact for all 65536 inputs; subnormals kept; inf kept;
 *                      NaN keeps sign and payload and gets the quiet bit.
 *   quant_f32_to_f16   round to nearest, ties to even; overflow -> inf;
 *                      results below the smallest subnormal round like any
 *                      other value; NaN -> sign | 0x7E00.
 *   quant_bf16_to_f32  exact (bf16 is the top half of an f32).
 *   quant_f32_to_bf16  round to nearest even on the bit pattern; NaN is kept
 *                      (top half) and made quiet.
 *   quant_e8m0_half    2^(e-128) as f32 (half the E8M0 value; MXFP4 uses it
 *                      with its doubled E2M1 levels); e = 0, 1 give f32
 *                      subnormals, e = 255 gives 2^127 (no NaN).
 *   quant_ue4m3_half   half the value of an unsigned E4M3 byte (bit 7 is
 *                      ignored); 0x00 and 0x7F decode to 0.
 */
#ifndef Q36_QUANT_FP16_H
#define Q36_QUANT_FP16_H

#include <stdint.h>
#include <string.h>

static inline float quant_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint32_t quant_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float quant_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 31;
    uint32_t man = h & 0x3FF;
    if (exp == 31)                       /* inf, NaN (made quiet) */
        return quant_bits_f32(sign | 0x7F800000u | man << 13 |
                              (man ? 0x00400000u : 0));
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24, a product that is exact in f32 */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return quant_bits_f32(sign | (exp + 112) << 23 | man << 13);
}

static inline uint16_t quant_f32_to_f16(float f)
{
    uint32_t u = quant_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u)
        return sign | 0x7E00;
    if (a >= 0x47800000u)                 /* >= 65536 or inf: overflow */
        return sign | 0x7C00;
    int e = (int)(a >> 23) - 127;         /* unbiased exponent */
    if (e < -25)                          /* below half the smallest subnormal */
        return sign;
    uint32_t man = (a & 0x7FFFFFu) | (e > -127 ? 0x800000u : 0);
    /* shift so that the f16 ulp is bit 0: normal f16 keep 11 bits,
     * subnormals (e < -14) keep fewer */
    int shift = e >= -14 ? 13 : 13 + (-14 - e);
    uint32_t q = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++;
    /* q holds the implicit bit for normals; adding the exponent field as a
     * sum lets a mantissa carry bump the exponent (and reach inf) */
    uint32_t r = e >= -14 ? ((uint32_t)(e + 14) << 10) + q : q;
    return sign | (uint16_t)r;
}

static inline float quant_bf16_to_f32(uint16_t h)
{
    return quant_bits_f32((uint32_t)h << 16);
}

static inline uint16_t quant_f32_to_bf16(float f)
{
    uint32_t u = quant_f32_bits(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1)) >> 16);
}

static inline float quant_e8m0_half(uint8_t e)
{
    /* 2^(e-128): f32 exponent field e-1; e < 2 are the subnormals 2^-128,
     * 2^-127 (mantissa bits 21, 22). */
    return quant_bits_f32(e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23);
}

static inline float quant_ue4m3_half(uint8_t b)
{
    if (b == 0 || b == 0x7F)
        return 0.0f;
    int e = (b >> 3) & 15, m = b & 7;
    /* value/2 = m * 2^-10 (e = 0) or (8 + m) * 2^(e-11); both exact in f32 */
    float v = e == 0 ? (float)m : (float)(8 + m);
    int p = e == 0 ? -10 : e - 11;
    return v * quant_bits_f32((uint32_t)(127 + p) << 23);
}

#endif
