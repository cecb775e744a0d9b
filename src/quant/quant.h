/* quant.h: the public face of src/quant: turn quantized rows into floats,
 * quantize activation rows the way ggml's CPU backend does, and take dot
 * products of a quantized weight row with a quantized activation row.
 *
 * Types are ggml type ids (enum quant_type in types.h). Rows are arrays of
 * whole blocks; n counts elements and must be a multiple of the block size.
 * Every function is thread-safe (no state besides a CPU-feature choice made
 * once, under pthread_once) and never allocates.
 *
 * Supported for dequantization: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1
 * Q1_0 Q2_0 Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K TQ1_0 TQ2_0 IQ1_S IQ1_M IQ2_XXS
 * IQ2_XS IQ2_S IQ3_XXS IQ3_S IQ4_NL IQ4_XS MXFP4 NVFP4. Results are
 * bit-exact with ggml's to_float (tests/test_ggml_quant.c). Dot products
 * exist for all of them except the activation formats Q8_1 and Q8_K.
 *
 * A matrix-vector product as ggml's CPU backend computes it (W has rows
 * of n elements of type t, x has n floats):
 *
 *     int at = quant_vec_dot_type(t);              // -1: no dot product
 *     uint8_t *xq = malloc(quant_row_bytes(at, n));
 *     quant_act_quantize(at, x, xq, n);            // once per activation row
 *     quant_dot_fn dot = quant_vec_dot_fn(t);
 *     for (r = 0; r < rows; r++)
 *         y[r] = dot(n, W + r * quant_row_bytes(t, n), xq);
 */
#ifndef Q36_QUANT_H
#define Q36_QUANT_H

#include <stdbool.h>
#include <stdint.h>

#include "types.h"

/* Dequantizes n elements of `type` from src into dst.
 * Returns 0, Q36_E_UNSUP for a type without a dequantizer, or Q36_E_ARG
 * when n is negative or not a multiple of the block size. */
int quant_dequant_row(uint32_t type, const void *src, float *dst, int64_t n);

/* The activation format ggml's CPU backend pairs with weight `type` in a
 * dot product (MODEL.md 7.1: QT_Q8_0, QT_Q8_1, QT_Q8_K, QT_F16, QT_BF16 or
 * QT_F32), or -1 when q36 has no dot product for that weight type. */
int quant_vec_dot_type(uint32_t type);

/* Quantizes n floats x into the activation format `act_type` (one of the
 * values quant_vec_dot_type returns), byte for byte as ggml's x86 CPU
 * backends with AVX2 or better do (tested against every such
 * libggml-cpu variant the test machine runs; ggml's generic C and its
 * pre-AVX x86 builds round Q8_0/Q8_1 ties away from zero instead): Q8_0/Q8_1 take d = amax/127 stored as f16 and
 * q = round-half-even(x * 127/amax); Q8_K takes the first largest |x|,
 * iscale = -127/max, q = min(127, round-half-even(iscale*x)), d = 1/iscale
 * (f32) and 16 block sums (all 0 when the block is 0); F16/BF16 round to
 * nearest even. This holds for every input, inf, NaN and blocks too
 * small for 127/amax included. out holds quant_row_bytes(act_type, n)
 * bytes.
 * Returns 0, Q36_E_UNSUP or Q36_E_ARG (as quant_dequant_row). */
int quant_act_quantize(uint32_t act_type, const float *x, void *out, int64_t n);

/* A dot product of n elements: weight row w of some type with activation
 * row a already in that type's vec_dot_type. */
typedef float (*quant_dot_fn)(int64_t n, const void *w, const void *a);

/* The plain scalar reference: per block, exact integer sums combined with
 * the float block scales, accumulated in f32 in row order. Returns NaN for
 * a type without a dot product. n must be a multiple of the block size. */
float quant_vec_dot_ref(uint32_t type, int64_t n, const void *w, const void *a);

/* The fastest dot product this CPU has for `type`, or NULL for a type
 * without one. With AVX2+FMA+F16C every type has a vector kernel
 * (dot_avx2.c, dot_avx2_iq.c), and with AVX-512 F/BW/VL the float types,
 * Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 IQ4_NL MXFP4 Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_XS
 * take their AVX-512 one (dot_avx512.c; with AVX512-VNNI the seven
 * 32-element block types take dot_avx512_vnni.c's); elsewhere it is the
 * reference. The fast
 * kernels agree with the reference within the rounding bound derived
 * in tests/test_ggml_quant_dot.c, not bit for bit. */
quant_dot_fn quant_vec_dot_fn(uint32_t type);

/* The kernel families of the dot products. quant_vec_dot_fn takes, per
 * type, the kernel of the last path in this order that the CPU runs and
 * that has one for the type. */
enum quant_path {
    QUANT_PATH_REF,     /* dot_ref.c: every CPU */
    QUANT_PATH_AVX2,    /* AVX2 + FMA + F16C, YMM state enabled by the OS */
    QUANT_PATH_AVX512,  /* the AVX2 set + AVX-512 F/BW/VL, ZMM state enabled */
    QUANT_PATH_AVX512VNNI, /* AVX512 + AVX512-VNNI: the 32-element block types */
    QUANT_PATH_COUNT
};

/* "ref", "avx2", "avx512", "avx512vnni"; "?" for anything else. */
const char *quant_path_name(enum quant_path p);

/* Whether this CPU (and the OS) can run path p, and this build has it.
 * The environment variable Q36_QUANT_PATH_MAX (ref, avx2, avx512 or
 * avx512vnni), read once on first use, makes the paths after the one it
 * names unavailable, as if the CPU lacked them (an unknown name caps
 * nothing). */
bool quant_path_available(enum quant_path p);

/* The dot product of `type` on path p (for tests and benchmarks), or NULL
 * when the type has no dot product, the path no kernel for it, or the CPU
 * cannot run the path. QUANT_PATH_REF always has one for a dot type. */
quant_dot_fn quant_vec_dot_fn_path(uint32_t type, enum quant_path p);

/* quant_act_quantize with the kernels of path p at most (for tests and
 * benchmarks): the same bytes on every path. Q8_0 and Q8_K have AVX2 and
 * AVX-512 (Q8_K) loops; the other formats run the same code on every
 * path. Q36_E_UNSUP also when the CPU cannot run p. */
int quant_act_quantize_path(uint32_t act_type, const float *x, void *out, int64_t n,
                            enum quant_path p);

/* quant_vec_dot_fn(type)(n, w, a); NaN for a type without a dot product. */
float quant_vec_dot(uint32_t type, int64_t n, const void *w, const void *a);

#endif
