/* dequant_fp.c: reference dequantizers of the float-coded formats: F32,
 * F16, BF16 (one element per "block") and the 4-bit float formats MXFP4
 * (E8M0 block scale) and NVFP4 (four UE4M3 sub-block scales). Layouts are
 * in MODEL.md 7.2; every result is bit-exact with ggml's to_float. */
#include "iq_tables.h"
#include "quant_impl.h"

void quant_dequant_f32_ref(const uint8_t *x, float *y, int64_t nb)
{
    memcpy(y, x, (size_t)nb * 4);
}

void quant_dequant_f16_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++)
        y[i] = quant_rdf16(x + 2 * i);
}

void quant_dequant_bf16_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++)
        y[i] = quant_bf16_to_f32(quant_rd16(x + 2 * i));
}

/* {u8 e; u8 qs[16]}: element j = 2^(e-128) * F[lo(qs[j])], j+16 uses hi. */
void quant_dequant_mxfp4_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 17, y += 32) {
        const float d = quant_e8m0_half(x[0]);
        for (int j = 0; j < 16; j++) {
            y[j] = quant_kvalues_fp4[x[1 + j] & 15] * d;
            y[j + 16] = quant_kvalues_fp4[x[1 + j] >> 4] * d;
        }
    }
}

/* {u8 d[4]; u8 qs[32]}: four 16-element sub-blocks, each with its own
 * UE4M3 scale and 8 bytes of packed codes (low nibbles first). */
void quant_dequant_nvfp4_ref(const uint8_t *x, float *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += 36) {
        for (int s = 0; s < 4; s++, y += 16) {
            const float d = quant_ue4m3_half(x[s]);
            const uint8_t *q = x + 4 + 8 * s;
            for (int j = 0; j < 8; j++) {
                y[j] = quant_kvalues_fp4[q[j] & 15] * d;
                y[j + 8] = quant_kvalues_fp4[q[j] >> 4] * d;
            }
        }
    }
}
