/* cuda_mma.h: the warp-level tensor-core steps the mma.sync kernels share
 * (cuda_fattn_mma.cu, cuda_moe_mma.cu, cuda_mmq.cu, cuda_matmul.cu):
 * shared-memory addresses, ldmatrix of four 8 x 8 tiles of halves (as they
 * lie, or transposed), the m16n8k16 product of halves into f32 sums, the
 * int8 products into s32 sums, tf32 products, and a pair of floats as the
 * halves of one register. Sources compiled for the host too (no __CUDA_ARCH__
 * of 800 or more) get empty bodies: the kernels run only on the device.
 * Included by CUDA sources only. */
#ifndef Q36_CUDA_MMA_H
#define Q36_CUDA_MMA_H

#include <cuda_fp16.h>
#include <stdint.h>

__device__ __forceinline__ unsigned mma_sa(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

/* r: four 8 x 8 tiles, lane l giving the address of row l % 8 of tile
 * l / 8; TRANS: each tile transposed (B fragments of a row-major K x N
 * operand) */
template <bool TRANS> __device__ __forceinline__ void mma_ldsm4(uint32_t r[4], unsigned addr)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(addr));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(addr));
#endif
}

/* c += a b: a 16 x 16 (row), b 16 x 8 (col), c 16 x 8 f32 */
__device__ __forceinline__ void mma_16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

/* c += a b on int8: a 16 x 32 (row), b 32 x 8 (col), c 16 x 8 s32 */
__device__ __forceinline__ void mma_s8_k32(int c[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                           uint32_t a3, uint32_t b0, uint32_t b1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}

/* c += a b on tf32: a 16 x 8 (row), b 8 x 8 (col), c 16 x 8 f32 */
__device__ __forceinline__ void mma_tf32(float c[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}

/* the int8 product with k 16: a 16 x 16, b 16 x 8 */
__device__ __forceinline__ void mma_s8_k16(int c[4], uint32_t a0, uint32_t a1, uint32_t b0)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 "
        "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a0), "r"(a1), "r"(b0));
#endif
}

__device__ __forceinline__ uint32_t mma_h2(float x, float y)
{
    const __half2 h = __floats2half2_rn(x, y);
    return *(const uint32_t *)&h;
}

#endif
