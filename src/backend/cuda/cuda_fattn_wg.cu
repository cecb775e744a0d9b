/* cuda_fattn_wg.cu: prompt attention for f16 K/V caches at head dim 256
 * on Hopper's warpgroup products (wgmma.mma_async, sm_90a), in place of
 * cuda_fattn_mma.cu's mma.sync kernel unless Q36_CUDA_FATTNWG=0.
 *
 * Why. At depth 32768 the 35B-A3B's pp4096 spends ~95 ms of a ~208 ms
 * pass in its 10 attention layers (bench/results/2026-12-04-cuda-session21/,
 * 23 TFLOP at ~240 TFLOP/s): mma.sync's fragments are loaded by every warp
 * from shared memory (ldmatrix: each K and V tile read once per warp) and a
 * block of 64 query rows reads each K/V tile from L2. A warpgroup product
 * reads its shared operands once for 64 rows, and a block here holds 128
 * query rows, so each K/V tile leaves L2 half as often.
 *
 * One block of 2 warpgroups per (tile of 128 query rows of a run, query
 * head, run); warpgroup g owns rows 64 g .. + 64, its warp w rows 16 w ..
 * + 16 of those, and a lane two of them (lane / 4 and + 8: the
 * accumulator layout of wgmma). Tiles are scheduled longest first. The
 * query rows are rounded to f16 once into shared memory; then the tiles of
 * FW_BC keys up to the last position the block's rows see are copied in
 * two buffers (cp.async: the next tile's copies fly while this one's
 * products run), and for each tile, by each warpgroup that has rows which
 * see it:
 *  1. S = Q K^T: 16 products m64n64k16, both operands K-major in shared
 *     memory (128-byte swizzle, as cuda_wgmma.h's tiles);
 *  2. the online softmax in registers (scale, causal mask, the running max
 *     over the lanes of a row, p = 2^(s log2 e - max) rounded to f16 and
 *     its f32 value summed, the earlier outputs rescaled);
 *  3. O += P V: 4 products m64n256k16 with P from registers (the
 *     accumulator layout of S is the A fragment's) and V from shared memory
 *     read N-major (the cache's rows are keys, its columns the outputs).
 * Each operand tile in shared memory: 64-column slices (128 bytes a row),
 * row r's 16-byte chunk c at chunk c ^ (r % 8), slices 1024-byte aligned.
 * Numerics as cuda_fattn_mma.cu's (q and p rounded to f16, scores, sums
 * and outputs in f32); the order of the sums is the warpgroup products'.
 * Three other schedules were tried and removed: the warpgroups taking turns
 * through named barriers (slower: 23,106 against 25,690 t/s at depth
 * 32768), and each tile's scores issued with the tile before's outputs,
 * its softmax run while those products ran (FA3's overlap inside a
 * warpgroup; Q36_CUDA_FATTNWGOV). Its first form (session 23) gave wrong
 * outputs (bench/results/2026-12-04-cuda-session24/); the second (session
 * 39, K and V tiles copied on their own schedules, the same bits as this
 * kernel) was slower on an H100: the kernel 58.4 against 55.8 ms of a
 * pp4096 pass at depth 32768, the pass 25,457 against 25,857 t/s, at
 * 255 registers, issuing about a third more instructions (Nsight Compute) to
 * keep two tiles' scores live (bench/results/2026-12-07-cuda-session40/).
 * And a third warpgroup that copied the tiles (setmaxnreg 24, the two
 * computing ones 240), each computing warpgroup meeting only it through
 * named barriers instead of the two block barriers a tile (Q36_CUDA_FATTNWS,
 * session 40, the same bits): slower, 24,637 against 25,733 t/s at depth
 * 32768 on an H100 (the kernel 63.3 ms a pass, 55.8 in an earlier
 * call). Nsight Compute has both forms' warps waiting at barriers most
 * (29% and 31% of their cycles): with two tile buffers the copier
 * can start a tile only when both warpgroups are done with the one two
 * before, the lead this kernel's own copies have (same record).
 * And one block barrier a tile instead of two (Q36_CUDA_FATTNWG1B, session
 * 40; the barrier after a tile's copies land also freeing the buffer of
 * the tile before, the next tile's copies issued after it): the same bits,
 * but those copies then start only once this tile's have landed, where
 * here they fly beside its wait; slower on an H100, the kernel 63.9
 * against 56.1 ms of a pp4096 pass at depth 32768, the pass 24,582 against
 * 25,760 t/s (bench/results/2026-12-07-cuda-session42/).
 * Device only, sm_90a (elsewhere the kernel is empty and never launched:
 * it is taken only on compute capability 9). */
#include "cuda.h"
#include "cuda_fattn_sm.h"
#include "cuda_wgmma.h"

#include <math.h>
#include <stdint.h>

#define FW_HD      256                           /* head dim */
#define FW_BR      128                           /* query rows of a block */
#define FW_BC      64                            /* keys a tile */
#define FW_THREADS 256                           /* 2 warpgroups */
#define FW_QSLICE  (FW_BR * 128)                 /* bytes of Q's 64-column slice */
#define FW_TSLICE  (FW_BC * 128)                 /* bytes of a K or V tile's slice */
#define FW_TILE    (FW_HD / 64 * FW_TSLICE)      /* bytes of a K or V tile: 32 KB */

#if WG_ON
/* the descriptor of an N-major operand (V: rows are the product's K, its
 * 64-column slices FW_TSLICE bytes apart), 128-byte swizzle: the leading
 * offset steps to the next 64 outputs, the stride to the next 8 keys */
__device__ __forceinline__ uint64_t fw_desc_n(const void *p)
{
    const uint32_t a = mma_sa(p);
    return (uint64_t)((a & 0x3FFFF) >> 4) | (uint64_t)(FW_TSLICE >> 4) << 16 |
           (uint64_t)(1024 >> 4) << 32 | (uint64_t)1 << 62;
}

/* d (64 rows by 64 keys) = (acc ? d : 0) + A B^T, A and B K-major */
__device__ __forceinline__ void fw_mma_s(float d[32], uint64_t da, uint64_t db, int acc)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "r"(acc));
}

/* d (64 rows by 256 outputs) += A B, A (64 rows by 16 keys) in registers
 * in the m16n8k16 A layout per warp, B N-major at descriptor db */
__device__ __forceinline__ void fw_mma_o(float d[128], const uint32_t a[4], uint64_t db)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}
#endif

#define FW_SMEM (FW_HD / 64 * FW_QSLICE + 4 * FW_TILE + 1024)

__global__ void __launch_bounds__(FW_THREADS, 1) k_fattn_wg(fa_args a)
{
    cuda_pdl_enter();
#if WG_ON
    extern __shared__ __align__(128) unsigned char fw_smem[];
    fa_tile t;
    if (!fa_tile_of<FW_BR>(a, &t))
        return;
    const int rows = t.rows;
    const int64_t slot = t.slot, r0 = t.r0, p0 = t.p0, nkeys = t.nkeys;
    const int64_t h = blockIdx.y, hk = h / a.group;
    unsigned char *Qs = (unsigned char *)(((uintptr_t)fw_smem + 1023) & ~(uintptr_t)1023);
    unsigned char *Ks = Qs + FW_HD / 64 * FW_QSLICE, *Vs = Ks + 2 * FW_TILE;
    const int tid = threadIdx.x, g = tid / 128, w = (tid / 32) % 4, lane = tid % 32;
    const int qr = lane / 4, t4 = lane % 4;

    /* K and V rows j0 .. j0 + FW_BC into K buffer kb and V buffer vb
     * (zeros past nkeys) */
    auto load = [&](int64_t j0, int kb, int vb) {
        #pragma unroll
        for (int i = 0; i < FW_BC * FW_HD / 8 / FW_THREADS; i++) {
            const int e = tid + i * FW_THREADS, j = e / (FW_HD / 8), c8 = e % (FW_HD / 8);
            const bool in = j0 + j < nkeys;
            const int64_t row = slot * a.kv_rows + (in ? j0 + j : 0);
            const int off = c8 / 8 * FW_TSLICE + wg_swz(j, c8 % 8);
            cp16(Ks + kb * FW_TILE + off, (const __half *)a.kc + row * a.ldk + hk * FW_HD + 8 * c8, in);
            cp16(Vs + vb * FW_TILE + off, (const __half *)a.vc + row * a.ldv + hk * FW_HD + 8 * c8, in);
        }
    };
    load(0, 0, 0);
    cp_commit();
    for (int e = tid; e < FW_BR * FW_HD / 8; e += FW_THREADS) {
        const int r = e / (FW_HD / 8), c8 = e % (FW_HD / 8);
        float4 v0 = make_float4(0.0f, 0.0f, 0.0f, 0.0f), v1 = v0;
        if (r < rows) {
            const float *src = a.q + (r0 + r) * a.ldq + h * FW_HD + 8 * c8;
            v0 = *(const float4 *)src;
            v1 = *(const float4 *)(src + 4);
        }
        uint4 u;
        u.x = mma_h2(v0.x, v0.y);
        u.y = mma_h2(v0.z, v0.w);
        u.z = mma_h2(v1.x, v1.y);
        u.w = mma_h2(v1.z, v1.w);
        *(uint4 *)(Qs + c8 / 8 * FW_QSLICE + wg_swz(r, c8 % 8)) = u;
    }

    float o[128];
    #pragma unroll
    for (int i = 0; i < 128; i++)
        o[i] = 0.0f;
    float mx[2] = { -INFINITY, -INFINITY }, sum[2] = { 0.0f, 0.0f };
    const float sl2 = a.scale * 1.44269504088896340736f;
    const int64_t pos[2] = { p0 + 64 * g + 16 * w + qr, p0 + 64 * g + 16 * w + qr + 8 };
    /* the warpgroup's rows: whether it has any, the last position they see */
    const bool busy = 64 * g < rows;
    const int64_t last = p0 + (64 * g + 63 < rows ? 64 * g + 63 : rows - 1);

    /* S = Q K^T of the tile in K buffer kb into s (issued, not waited for) */
    auto scores = [&](float *s, int kb) {
        #pragma unroll
        for (int kk = 0; kk < FW_HD / 16; kk++) {   /* 32 bytes a step: 2 in the descriptor */
            const uint64_t da = wg_desc(Qs + kk / 4 * FW_QSLICE + 64 * 128 * g) + 2 * (kk % 4);
            const uint64_t db = wg_desc(Ks + kb * FW_TILE + kk / 4 * FW_TSLICE) + 2 * (kk % 4);
            fw_mma_s(s, da, db, kk > 0);
        }
    };
    /* O += P V of the tile in V buffer vb, 16 keys (2048 bytes of V's
     * slices) a step (issued, not waited for) */
    auto outputs = [&](const uint32_t (*pa)[4], int vb) {
        #pragma unroll
        for (int kk = 0; kk < FW_BC / 16; kk++)
            fw_mma_o(o, pa[kk], fw_desc_n(Vs + vb * FW_TILE + kk * 16 * 128));
    };

    /* each tile: its scores, their softmax, its outputs, in turn */
    int buf = 0;
    for (int64_t j0 = 0; j0 < nkeys; j0 += FW_BC, buf ^= 1) {
        if (j0 + FW_BC < nkeys)
            load(j0 + FW_BC, buf ^ 1, buf ^ 1);
        cp_commit();
        cp_wait<1>();              /* this thread's copies of tile j0 have landed */
        wg_proxy_fence();          /* ... the query rows' stores too: visible to the products */
        __syncthreads();
        if (busy && j0 <= last) {
            /* 1. scores: s[4 j ..] covers keys j0 + 8 j .. + 8 */
            float s[32];
            wg_fence();
            scores(s, buf);
            wg_commit();
            wg_wait0();
            /* 2. the online softmax of rows qr (e = 0, 1) and qr + 8 (e = 2, 3) */
            uint32_t pa[FW_BC / 16][4];
            float f[2];
            fa_online<FW_BC / 8>(s, j0 + FW_BC - 1 > p0 + 64 * g + 16 * w, j0, pos, sl2, mx,
                                 sum, pa, f);
            fa_rescale<32>(o, f);
            /* 3. O += P V */
            wg_fence();
            outputs(pa, buf);
            wg_commit();
            wg_wait0();
        }
        __syncthreads();           /* before this buffer takes the tile after next */
    }
    cp_wait<0>();
    if (!busy)
        return;

    fa_row_sums(sum);
    #pragma unroll
    for (int i = 0; i < 2; i++) {
        const int r = 64 * g + 16 * w + qr + 8 * i;
        if (r >= rows)
            continue;
        float *out = a.out + (r0 + r) * a.ldo + h * FW_HD + 2 * t4;
        const float inv = 1.0f / sum[i];
        #pragma unroll
        for (int d = 0; d < 32; d++)
            *(float2 *)(out + 8 * d) = make_float2(o[4 * d + 2 * i] * inv, o[4 * d + 2 * i + 1] * inv);
    }
#endif
}

bool cuda_fattn_wg(be_ctx *be, const fa_args *a, int64_t max_rows, int64_t n_head, int n_seq,
                   int64_t head_dim)
{
    const cuda_ctx *c = cuda_ctx_of(be);
    if (head_dim != FW_HD || c->cc_major != 9)
        return false;
    const dim3 grid((unsigned)((max_rows + FW_BR - 1) / FW_BR), (unsigned)n_head, (unsigned)n_seq);
    return fa_launch(be, k_fattn_wg, grid, FW_THREADS, FW_SMEM, *a, "k_fattn_wg");
}
