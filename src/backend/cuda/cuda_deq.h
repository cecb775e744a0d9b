/* cuda_deq.h: the CUDA backend's dequantizer, shared by the files that
 * read weights in their GGUF block formats (cuda_matmul.cu, cuda_gemm.cu,
 * cuda_moe.cu): deq8 turns 8 consecutive elements of a row into floats
 * exactly as the quant module's reference does (the scale products first,
 * then the code), so every kernel sees the CPU's weight values; and
 * TYPE_SWITCH, which instantiates a kernel launch for each device type. */
#ifndef Q36_CUDA_DEQ_H
#define Q36_CUDA_DEQ_H

#include "cuda.h"

extern "C" {
#include "../../quant/types.h"
}

__device__ __forceinline__ float f16f(const uint8_t *p)
{
    return __half2float(__ushort_as_half((unsigned short)(p[0] | p[1] << 8)));
}

/* scale and min of sub-block j of the 12 packed K-quant scale bytes */
__device__ __forceinline__ void k4_scale_min(int j, const uint8_t *q, int *sc, int *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* k4_scale_min of sub-blocks 2c and 2c + 1 (c < 4, known at run time),
 * from a Q4_K block's first 16 bytes h (d, dmin, the 12 scale bytes)
 * loaded as one uint4: bytes q[0..3] of the scales are h.y's, q[4..7]
 * h.z's, q[8..11] h.w's; the same values as from memory byte by byte */
__device__ __forceinline__ void k4_scale_min2(uint4 h, int c, int *sc0, int *m0, int *sc1,
                                              int *m1)
{
    const int sh = 16 * (c & 1);
    const unsigned y = h.y >> sh, z = h.z >> sh, w = h.w >> sh;
    if (c < 2) {
        *sc0 = y & 63;
        *m0 = z & 63;
        *sc1 = (y >> 8) & 63;
        *m1 = (z >> 8) & 63;
    } else {
        *sc0 = (w & 0xF) | (((y >> 6) & 3) << 4);
        *m0 = ((w >> 4) & 0xF) | (((z >> 6) & 3) << 4);
        *sc1 = ((w >> 8) & 0xF) | (((y >> 14) & 3) << 4);
        *m1 = ((w >> 12) & 0xF) | (((z >> 14) & 3) << 4);
    }
}

/* the f16 in the low (hi = 0) or high half of a 32-bit word, as f32 */
__device__ __forceinline__ float f16w(unsigned v, int hi)
{
    return __half2float(__ushort_as_half((unsigned short)(hi ? v >> 16 : v & 0xFFFF)));
}

/* Elements i0..i0+7 of a row (i0 a multiple of 8); past K they are 0. */
template <int T>
__device__ __forceinline__ void deq8(const uint8_t *row, int64_t i0, int64_t K, float v[8])
{
    if constexpr (T == QT_F32) {
        const float *p = (const float *)row;
        #pragma unroll
        for (int j = 0; j < 8; j++)
            v[j] = i0 + j < K ? p[i0 + j] : 0.0f;
    } else if constexpr (T == QT_F16) {
        const __half *p = (const __half *)row;
        #pragma unroll
        for (int j = 0; j < 8; j++)
            v[j] = i0 + j < K ? __half2float(p[i0 + j]) : 0.0f;
    } else if constexpr (T == QT_BF16) {
        const __nv_bfloat16 *p = (const __nv_bfloat16 *)row;
        #pragma unroll
        for (int j = 0; j < 8; j++)
            v[j] = i0 + j < K ? __bfloat162float(p[i0 + j]) : 0.0f;
    } else if constexpr (T == QT_Q8_0) {
        /* 34-byte blocks: 2-byte aligned, the 8 codes as 4 halfwords */
        const uint8_t *b = row + (i0 / 32) * 34;
        const float d = f16f(b);
        const uint16_t *q = (const uint16_t *)(b + 2 + (i0 % 32));
        #pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint16_t u = q[j];
            v[2 * j] = d * (float)(int8_t)(u & 0xFF);
            v[2 * j + 1] = d * (float)(int8_t)(u >> 8);
        }
    } else if constexpr (T == QT_Q4_K) {
        /* 144-byte blocks, 16-byte aligned: the 8 code bytes as one uint2 */
        const uint8_t *b = row + (i0 / 256) * 144;
        const int i = (int)(i0 % 256), c = i / 64, w = i % 64;
        int sc, m;
        k4_scale_min(2 * c + (w >= 32), b + 4, &sc, &m);
        const float dl = f16f(b) * (float)sc, ml = f16f(b + 2) * (float)m;
        const uint2 u = *(const uint2 *)(b + 16 + 32 * c + (w & 31));
        const int sh = w >= 32 ? 4 : 0;
        #pragma unroll
        for (int j = 0; j < 8; j++)
            v[j] = dl * (float)((((j < 4 ? u.x : u.y) >> (8 * (j & 3))) >> sh) & 15) - ml;
    } else if constexpr (T == QT_Q5_K) {
        /* 176-byte blocks, 16-byte aligned */
        const uint8_t *b = row + (i0 / 256) * 176;
        const int i = (int)(i0 % 256), c = i / 64, w = i % 64, hi = w >= 32;
        int sc, m;
        k4_scale_min(2 * c + hi, b + 4, &sc, &m);
        const float dl = f16f(b) * (float)sc, ml = f16f(b + 2) * (float)m;
        const uint2 h = *(const uint2 *)(b + 16 + (w & 31));
        const uint2 u = *(const uint2 *)(b + 48 + 32 * c + (w & 31));
        const int sh = hi ? 4 : 0, hb = 2 * c + hi;
        #pragma unroll
        for (int j = 0; j < 8; j++) {
            const unsigned q = ((j < 4 ? u.x : u.y) >> (8 * (j & 3))) & 0xFF;
            const unsigned qh = ((j < 4 ? h.x : h.y) >> (8 * (j & 3))) & 0xFF;
            v[j] = dl * (float)(((q >> sh) & 15) | ((qh >> hb) & 1) << 4) - ml;
        }
    } else if constexpr (T == QT_Q6_K) {
        /* 210-byte blocks, 2-byte aligned: codes and high bits as halfwords */
        const uint8_t *b = row + (i0 / 256) * 210;
        const int i = (int)(i0 % 256), n = i / 128, r = i % 128, qu = r / 32, l = r % 32;
        const float d = f16f(b + 208);
        const float dl = d * (float)((const int8_t *)(b + 192))[8 * n + l / 16 + 2 * qu];
        const uint16_t *ql = (const uint16_t *)(b + 64 * n + l + (qu & 1) * 32);
        const uint16_t *qh = (const uint16_t *)(b + 128 + 32 * n + l);
        const int sh = (qu >> 1) * 4, hs = 2 * qu;
        #pragma unroll
        for (int j = 0; j < 4; j++) {
            const unsigned a = ql[j], h = qh[j];
            v[2 * j] = dl * (float)((int)(((a >> sh) & 15) | ((h >> hs) & 3) << 4) - 32);
            v[2 * j + 1] = dl * (float)((int)((((a >> 8) >> sh) & 15) | (((h >> 8) >> hs) & 3) << 4) - 32);
        }
    }
}

/* A launch (the __VA_ARGS__, naming the type TT) for each device type;
 * any other fails the context (needs `be` in scope). */
#define TYPE_SWITCH(type, ...)                                                   \
    switch (type) {                                                              \
    case QT_F32:  { constexpr int TT = QT_F32;  __VA_ARGS__; } break;            \
    case QT_F16:  { constexpr int TT = QT_F16;  __VA_ARGS__; } break;            \
    case QT_BF16: { constexpr int TT = QT_BF16; __VA_ARGS__; } break;            \
    case QT_Q8_0: { constexpr int TT = QT_Q8_0; __VA_ARGS__; } break;            \
    case QT_Q4_K: { constexpr int TT = QT_Q4_K; __VA_ARGS__; } break;            \
    case QT_Q5_K: { constexpr int TT = QT_Q5_K; __VA_ARGS__; } break;            \
    case QT_Q6_K: { constexpr int TT = QT_Q6_K; __VA_ARGS__; } break;            \
    default: be_fail(be, Q36_E_UNSUP, "cuda backend: weight type %u has no kernel", \
                     (unsigned)(type));                                          \
    }

/* 8 floats rounded to f16 (nearest), as one 16-byte word */
__device__ __forceinline__ uint4 cuda_half8(const float v[8])
{
    union { uint4 u; __half2 h[4]; } pk;
    #pragma unroll
    for (int j = 0; j < 4; j++)
        pk.h[j] = __floats2half2_rn(v[2 * j], v[2 * j + 1]);
    return pk.u;
}

/* Weight rows n0 .. n0+rows of W (row pitch rb bytes, K columns) to f16,
 * deq8's values rounded to nearest: out[r * K + i]. Groups of 8 columns
 * over the grid, each stored as one 16-byte word where K and out allow;
 * I, the index type: 32-bit when the groups fit (a 64-bit division per
 * group costs more than the dequantization). */
template <int T, typename I>
__global__ void k_dequant_h(const uint8_t *__restrict__ W, uint64_t rb, int64_t K, int64_t n0,
                            int64_t rows, __half *__restrict__ out)
{
    cuda_pdl_enter();
    const I per = (I)((K + 7) / 8), n = per * (I)rows;
    const bool vec = K % 8 == 0 && (uintptr_t)out % 16 == 0;
    for (I g = (I)blockIdx.x * blockDim.x + threadIdx.x; g < n; g += (I)gridDim.x * blockDim.x) {
        const I r = g / per, i0 = (g % per) * 8;
        float v[8];
        deq8<T>(W + (uint64_t)(n0 + (int64_t)r) * rb, (int64_t)i0, K, v);
        __half *o = out + (int64_t)r * K + (int64_t)i0;
        if (vec) {
            *(uint4 *)o = cuda_half8(v);
            continue;
        }
        #pragma unroll
        for (int j = 0; j < 8; j++)
            if ((int64_t)i0 + j < K)
                o[j] = __float2half_rn(v[j]);
    }
}

/* k_dequant_h of a weight of a device type, on the context's stream;
 * false when the launch failed (the context's error is set) */
static inline bool cuda_dequant_h(be_ctx *be, uint32_t type, const uint8_t *W, uint64_t rb,
                                  int64_t K, int64_t n0, int64_t rows, __half *out)
{
    cuda_ctx *c = cuda_ctx_of(be);
    const int64_t groups = (K + 7) / 8 * rows;
    const unsigned grid = cuda_blocks(groups, 256);
    if (groups + (int64_t)grid * 256 < ((int64_t)1 << 31))
        TYPE_SWITCH(type, cuda_launch(k_dequant_h<TT, uint32_t>, grid, 256, 0, c->stream, W, rb, K,
                                      n0, rows, out))
    else
        TYPE_SWITCH(type, cuda_launch(k_dequant_h<TT, int64_t>, grid, 256, 0, c->stream, W, rb, K,
                                      n0, rows, out));
    return CUDA_LAUNCHED(be, "k_dequant_h");
}

#endif
