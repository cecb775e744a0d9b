/* cuda_mmq.cu: Q4_K and Q6_K weights times a batch of up to 32 int8 rows
 * of x on the tensor cores (fast mode; Q36_CUDA_MMQ, cuda.h: mmq_min):
 * k_mmq for a group of projections (an f32 weight among them in 3xTF32),
 * k_mmq_grp for an expert product with its rows grouped by expert. On an
 * H100 the 35B-A3B's 16-slot decode step took 8.76 ms against 12.33 on
 * the dp4a kernels (bench/results/2026-12-05-cuda-mmq/).
 *
 * The int8 decode products (cuda_mv8.h) form every (weight row, x row)
 * sum with __dp4a, one x row at a time: a batch of 16 rows loads each x
 * block 16 times for each weight row, and a 16-slot 35B-A3B step spent
 * 5.6 of its 12.7 ms in those products while reading the weights once
 * (bench/results/2026-12-04-cuda-session24/, run-504c354). Here a warp
 * takes 16 weight rows and every x row in tiles of 8, and one
 * mma.sync.m16n8k32 (Q4_K: a sub-block of 32 codes, one scale) or
 * m16n8k16 (Q6_K: 16 codes a scale) forms the 16 x 8 integer sums of a
 * block at once; the block scales then go on in f32 as cuda_mv8.h's
 * kernels apply them:
 *   Q4_K: d sc d_x sum(q_w q_x) - dmin m (d_x sum(q_x))
 *   Q6_K: d sc d_x sum((q_w - 32) q_x)
 * The integer sums are exact; the f32 sums run in another order than the
 * dp4a kernels' (fast mode's freedom), so results agree to rounding.
 *
 * Which k of a sub-block a thread's fragment holds does not matter to a
 * sum over the sub-block, as long as A and B agree: for Q4_K, thread t's
 * k = 4t..4t+3 and 16+4t..16+4t+3 of the product are the codes at bytes
 * 8t..8t+7 of the sub-block's 32 (one 8-byte load of the weight row, one
 * of the x row); Q6_K's halves of 16 have scales of their own, so there
 * the k are the codes' own positions.
 *
 * A block: W warps (4, or 8 for a grid of fewer than two blocks an SM)
 * on one tile of 16 output rows of one job, warp w taking super-blocks
 * w, w + W, ... of K (so a 2,048-row weight still has 512 warps or
 * more), each warp's weight registers for the next super-blocks loaded
 * while it multiplies the current one (the first before the PDL wait:
 * weights are never written by a kernel). The warps' sums meet in shared
 * memory and warp 0 adds them in a fixed order. */
#include "cuda_mmq.h"
#include "cuda_deq.h"
#include "cuda_moe_tile.h"   /* mg_args: the expert products' routing */
#include "cuda_mma.h"      /* mma_s8_k32, mma_s8_k16 */
#include "cuda_mv8.h"

#define MMQ_Q4F (-2)     /* k_mmq's TS: Q4_K and F32 jobs */

/* What a lane multiplies: its weight rows (g and g + 8 of the tile: ra,
 * rb), and for each tile nt of 8 x rows the x row of its B fragment (row
 * nt * 8 + g) and the (scale, sum) rows of its two C columns (rows
 * nt * 8 + 2t and + 1); rows past R read row R - 1, never stored. */
template <int NT> struct mmq_lane {
    const uint8_t *ra, *rb;
    const int8_t  *qx;
    const float2  *dx;
    int            xb[NT], d0[NT], d1[NT];    /* offsets into qx and dx (32-bit: fewer registers) */
    int            t;
    int            nact;                      /* tiles of x rows with a row (k_mmq_grp's experts) */
};

/* ---------------------------------------------------------------- Q4_K */

struct q4_regs {
    uint4 hd[2];        /* d, dmin, the 12 scale bytes of each row's block */
    uint2 q[2][4];      /* codes 8t..8t+7 of each pair of sub-blocks (low nibbles: the first) */
};

__device__ __forceinline__ void q4_load(q4_regs &r, const uint8_t *ra, const uint8_t *rb,
                                        int64_t sb, int t)
{
    #pragma unroll
    for (int i = 0; i < 2; i++) {
        const uint8_t *blk = (i ? rb : ra) + sb * 144;
        r.hd[i] = __ldg((const uint4 *)blk);
        #pragma unroll
        for (int p = 0; p < 4; p++)
            r.q[i][p] = __ldg((const uint2 *)(blk + 16 + 32 * p + 8 * t));
    }
}

template <int NT>
__device__ __forceinline__ void q4_mul(const q4_regs &r, int64_t sb, const mmq_lane<NT> &L,
                                       float acc[NT][4])
{
    const float dA = f16w(r.hd[0].x, 0), mA = f16w(r.hd[0].x, 1);
    const float dB = f16w(r.hd[1].x, 0), mB = f16w(r.hd[1].x, 1);
    #pragma unroll
    for (int p = 0; p < 4; p++) {
        int sa[2], ma[2], sbs[2], mbs[2];
        k4_scale_min2(r.hd[0], p, &sa[0], &ma[0], &sa[1], &ma[1]);
        k4_scale_min2(r.hd[1], p, &sbs[0], &mbs[0], &sbs[1], &mbs[1]);
        #pragma unroll
        for (int h = 0; h < 2; h++) {
            const int sh = 4 * h, s = 2 * p + h;
            const uint32_t a0 = (r.q[0][p].x >> sh) & 0x0F0F0F0Fu, a2 = (r.q[0][p].y >> sh) & 0x0F0F0F0Fu;
            const uint32_t a1 = (r.q[1][p].x >> sh) & 0x0F0F0F0Fu, a3 = (r.q[1][p].y >> sh) & 0x0F0F0F0Fu;
            const float dlA = dA * (float)sa[h], mlA = mA * (float)ma[h];
            const float dlB = dB * (float)sbs[h], mlB = mB * (float)mbs[h];
            const int64_t blk = sb * 8 + s;
            #pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                if (nt >= L.nact)
                    break;
                const uint2 xb = __ldg((const uint2 *)(L.qx + L.xb[nt] + sb * 256 + 32 * s + 8 * L.t));
                int c[4] = { 0, 0, 0, 0 };
                mma_s8_k32(c, a0, a1, a2, a3, xb.x, xb.y);
                const float2 u = L.dx[L.d0[nt] + blk], v = L.dx[L.d1[nt] + blk];
                acc[nt][0] += dlA * u.x * (float)c[0] - mlA * u.y;
                acc[nt][1] += dlA * v.x * (float)c[1] - mlA * v.y;
                acc[nt][2] += dlB * u.x * (float)c[2] - mlB * u.y;
                acc[nt][3] += dlB * v.x * (float)c[3] - mlB * v.y;
            }
        }
    }
}

/* ---------------------------------------------------------------- Q6_K */

struct q6_regs {
    uint32_t ql[2][2][2][2];    /* [row][half n][h][qu & 1]: ql bytes 64n + 32(qu & 1) + 16h + 4t.. */
    uint32_t qh[2][2][2];       /* [row][n][h]: qh bytes 32n + 16h + 4t.. */
    uint32_t sc[2][4];          /* the 16 int8 scales */
    float    d[2];
};

/* blocks of 210 bytes: words only 2-byte aligned (ld_u32_a2) */
__device__ __forceinline__ void q6_load(q6_regs &r, const uint8_t *ra, const uint8_t *rb,
                                        int64_t sb, int t)
{
    #pragma unroll
    for (int i = 0; i < 2; i++) {
        const uint8_t *blk = (i ? rb : ra) + sb * 210;
        #pragma unroll
        for (int n = 0; n < 2; n++)
            #pragma unroll
            for (int h = 0; h < 2; h++) {
                r.ql[i][n][h][0] = ld_u32_a2(blk + 64 * n + 16 * h + 4 * t);
                r.ql[i][n][h][1] = ld_u32_a2(blk + 64 * n + 32 + 16 * h + 4 * t);
                r.qh[i][n][h] = ld_u32_a2(blk + 128 + 32 * n + 16 * h + 4 * t);
            }
        #pragma unroll
        for (int k = 0; k < 4; k++)
            r.sc[i][k] = ld_u32_a2(blk + 192 + 4 * k);
        r.d[i] = f16f(blk + 208);
    }
}

template <int NT>
__device__ __forceinline__ void q6_mul(const q6_regs &r, int64_t sb, const mmq_lane<NT> &L,
                                       float acc[NT][4])
{
    #pragma unroll
    for (int n = 0; n < 2; n++)
        #pragma unroll
        for (int qu = 0; qu < 4; qu++)
            #pragma unroll
            for (int h = 0; h < 2; h++) {
                const int j = 4 * n + qu, sh = 4 * (qu >> 1), hs = 2 * qu, si = 8 * n + h + 2 * qu;
                uint32_t a[2];
                float ds[2];
                #pragma unroll
                for (int i = 0; i < 2; i++) {
                    a[i] = __vsub4(((r.ql[i][n][h][qu & 1] >> sh) & 0x0F0F0F0Fu) |
                                       (((r.qh[i][n][h] >> hs) & 0x03030303u) << 4),
                                   0x20202020u);
                    ds[i] = r.d[i] * (float)(int8_t)(r.sc[i][si >> 2] >> (8 * (si & 3)));
                }
                const int64_t blk = sb * 8 + j;
                #pragma unroll
                for (int nt = 0; nt < NT; nt++) {
                    if (nt >= L.nact)
                        break;
                    const uint32_t xb =
                        __ldg((const uint32_t *)(L.qx + L.xb[nt] + sb * 256 + 32 * j + 16 * h + 4 * L.t));
                    int c[4] = { 0, 0, 0, 0 };
                    mma_s8_k16(c, a[0], a[1], xb);
                    const float u = L.dx[L.d0[nt] + blk].x, v = L.dx[L.d1[nt] + blk].x;
                    acc[nt][0] += ds[0] * u * (float)c[0];
                    acc[nt][1] += ds[0] * v * (float)c[1];
                    acc[nt][2] += ds[1] * u * (float)c[2];
                    acc[nt][3] += ds[1] * v * (float)c[3];
                }
            }
}

/* A warp's super-blocks w, w + W, ... < nb: REGS the register set
 * of one super-block (LOAD fills it, MUL multiplies it), D of them in
 * flight: each set is loaded again, D super-blocks on, as soon as it has
 * been multiplied; the first D before the PDL wait */
template <class REGS, int D, int W, int NT, class LOAD, class MUL>
__device__ __forceinline__ void mmq_run(int64_t nb, int w, float acc[NT][4], LOAD load, MUL mul)
{
    REGS buf[D];
    #pragma unroll
    for (int d = 0; d < D; d++)
        if (w + d * W < nb)
            load(buf[d], w + d * W);
    cuda_pdl_enter();
    for (int64_t sb = w; sb < nb; sb += D * W) {
        #pragma unroll
        for (int d = 0; d < D; d++) {
            const int64_t s = sb + d * W;
            if (s < nb) {
                mul(buf[d], s, acc);
                if (s + D * W < nb)
                    load(buf[d], s + D * W);
            }
        }
    }
}

/* ----------------------------------------------------------------- F32 */

/* An f32 job (a router or a DeltaNet gate weight beside the quantized
 * ones): the same tiles on the tensor cores, m16n8k8 in 3xTF32 on the
 * f32 rows of x, sums in f32: within the f32 kernels' bounds (one TF32
 * product a step was 4.8-6.1 times the bound of the op cases). A unit of
 * 64 of K: thread t's k = t and t + 4 of each step of 8 are elements 2t
 * and 2t + 1 (one 8-byte load of the weight row, one of the x row). */
struct f32_regs {
    float2 w[2][8];     /* [row][step]: elements 8 step + 2t, + 1 of the unit */
};

__device__ __forceinline__ uint32_t tf32(float v)
{
    uint32_t r;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(v));
#else
    r = __float_as_uint(v);
#endif
    return r;
}

/* v = big + small to about f32's precision (3xTF32: the product of two
 * splits, less small * small, is the f32 product to ~2^-22) */
__device__ __forceinline__ void tf32_split(float v, uint32_t *big, uint32_t *small)
{
    *big = tf32(v);
    *small = tf32(v - __uint_as_float(*big));
}

__device__ __forceinline__ void f32_load(f32_regs &r, const uint8_t *ra, const uint8_t *rb,
                                         int64_t u, int t)
{
    #pragma unroll
    for (int i = 0; i < 2; i++) {
        const float *row = (const float *)(i ? rb : ra) + u * 64 + 2 * t;
        #pragma unroll
        for (int s = 0; s < 8; s++)
            r.w[i][s] = __ldg((const float2 *)(row + 8 * s));
    }
}

/* xf[nt]: the f32 x row of the lane's B fragment in tile nt */
template <int NT>
__device__ __forceinline__ void f32_mul(const f32_regs &r, int64_t u, const float *const xf[NT],
                                        int t, float acc[NT][4])
{
    #pragma unroll
    for (int s = 0; s < 8; s++) {
        uint32_t a[4], as[4];
        tf32_split(r.w[0][s].x, &a[0], &as[0]);
        tf32_split(r.w[1][s].x, &a[1], &as[1]);
        tf32_split(r.w[0][s].y, &a[2], &as[2]);
        tf32_split(r.w[1][s].y, &a[3], &as[3]);
        #pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            const float2 xb = *(const float2 *)(xf[nt] + u * 64 + 8 * s + 2 * t);
            uint32_t b0, b1, bs0, bs1;
            tf32_split(xb.x, &b0, &bs0);
            tf32_split(xb.y, &b1, &bs1);
            mma_tf32(acc[nt], as[0], as[1], as[2], as[3], b0, b1);
            mma_tf32(acc[nt], a[0], a[1], a[2], a[3], bs0, bs1);
            mma_tf32(acc[nt], a[0], a[1], a[2], a[3], b0, b1);
        }
    }
}

/* TS: the jobs' one type (QT_Q4_K or QT_Q6_K), MMQ_Q4F (each tile its
 * job's: Q4_K or F32; the DeltaNet projections with their f32 gates) or
 * MV_ANY (Q4_K, Q6_K or F32). Two super-blocks in flight a warp; Q4_K
 * alone fits 16 warps an SM (128 registers), the others 12 (W = 4) or 8. */
template <int TS, int NT, int W>
__global__ void __launch_bounds__(32 * W, (TS == QT_Q4_K ? 16 : 12) / W)
k_mmq(mmq_jobs J, int64_t K, const int8_t *__restrict__ qx, const float2 *__restrict__ dx,
      int64_t R, const float *__restrict__ x, int64_t ldx)
{
    __shared__ float red[W - 1][NT * 4][32];
    const int lane = threadIdx.x & 31, w = threadIdx.x / 32, g = lane >> 2, t = lane & 3;
    int jb = 0;
    while (jb + 1 < J.n && (int64_t)blockIdx.x >= J.tile0[jb + 1])
        jb++;
    const int64_t N = J.N[jb], n0 = ((int64_t)blockIdx.x - J.tile0[jb]) * 16, nbx = K / Q8X_BLOCK;
    const uint32_t type = TS < 0 ? J.type[jb] : (uint32_t)TS;
    mmq_lane<NT> L;
    L.ra = J.W[jb] + (uint64_t)(n0 + g < N ? n0 + g : N - 1) * J.rb[jb];
    L.rb = J.W[jb] + (uint64_t)(n0 + g + 8 < N ? n0 + g + 8 : N - 1) * J.rb[jb];
    L.t = t;
    L.qx = qx;
    L.dx = dx;
    L.nact = NT;
    #pragma unroll
    for (int nt = 0; nt < NT; nt++) {
        const int64_t rx = nt * 8 + g, r0 = nt * 8 + 2 * t, r1 = r0 + 1;
        L.xb[nt] = (int)((rx < R ? rx : R - 1) * K);
        L.d0[nt] = (int)((r0 < R ? r0 : R - 1) * nbx);
        L.d1[nt] = (int)((r1 < R ? r1 : R - 1) * nbx);
    }
    float acc[NT][4];
    #pragma unroll
    for (int nt = 0; nt < NT; nt++)
        acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
    const int64_t nb = K / 256;
    if (TS < 0 && type == QT_F32) {
        const float *xf[NT];
        #pragma unroll
        for (int nt = 0; nt < NT; nt++)
            xf[nt] = x + (nt * 8 + g < R ? nt * 8 + g : R - 1) * ldx;
        mmq_run<f32_regs, 2, W, NT>(
            K / 64, w, acc, [&](f32_regs &r, int64_t u) { f32_load(r, L.ra, L.rb, u, t); },
            [&](const f32_regs &r, int64_t u, float a[NT][4]) { f32_mul<NT>(r, u, xf, t, a); });
    } else if (TS == QT_Q4_K || TS == MMQ_Q4F || (TS == MV_ANY && type == QT_Q4_K))
        mmq_run<q4_regs, 2, W, NT>(
            nb, w, acc, [&](q4_regs &r, int64_t sb) { q4_load(r, L.ra, L.rb, sb, t); },
            [&](const q4_regs &r, int64_t sb, float a[NT][4]) { q4_mul<NT>(r, sb, L, a); });
    else
        mmq_run<q6_regs, 2, W, NT>(
            nb, w, acc, [&](q6_regs &r, int64_t sb) { q6_load(r, L.ra, L.rb, sb, t); },
            [&](const q6_regs &r, int64_t sb, float a[NT][4]) { q6_mul<NT>(r, sb, L, a); });
    if (w > 0) {
        #pragma unroll
        for (int nt = 0; nt < NT; nt++)
            #pragma unroll
            for (int i = 0; i < 4; i++)
                red[w - 1][nt * 4 + i][lane] = acc[nt][i];
    }
    __syncthreads();
    if (w > 0)
        return;
    float *y = J.y[jb];
    const int64_t ldy = J.ldy[jb];
    #pragma unroll
    for (int nt = 0; nt < NT; nt++)
        #pragma unroll
        for (int i = 0; i < 4; i++) {
            float s = acc[nt][i];
            #pragma unroll
            for (int v = 0; v < W - 1; v++)
                s += red[v][nt * 4 + i][lane];
            const int64_t r = nt * 8 + 2 * t + (i & 1), n = n0 + g + 8 * (i >> 1);
            if (r < R && n < N)
                y[r * ldy + n] = s;
        }
}

/* ------------------------------------------------- expert products */

/* An expert product (be_matmul_id) of a batch of up to MMQ_ROWS tokens,
 * rows grouped by expert (cuda_moe_tile.h's routing: expert e's rows are
 * positions off[e] .. off[e] + cnt[e] of perm): block (x, e) takes rows
 * 16x .. 16x + 15 of expert e's weight and all of the expert's rows of x
 * (the row of x of position p: perm[p], or perm[p] / k with a row of x a
 * token), so that each expert weight is read once a step, not once for
 * each of its tokens. With GLU (W2: the up weight beside the gate W) both
 * products, and their swiglu goes out. Experts without rows return at
 * once, but their blocks are still scheduled: 256 experts make 8,192
 * blocks for a 35B-A3B gate product and 32,768 for its down product,
 * whatever the batch; on an H100 that made the step slower up to 16
 * tokens and faster at 32 (cuda.h: mmq_grp_min; a grid of the active
 * experts only is the next step). MMQ_GW warps a block, K split over
 * them as k_mmq's. */
#define MMQ_GW 4
/* With act (Q36_CUDA_MMQGRPA=1, off by default; written after the
 * session's device time was spent, not yet run on a GPU): the grid's y is
 * the active experts' rank, min(E, rows) of them, and each warp finds the
 * expert of its block's rank in a's counts (a ballot of 32 experts at a
 * time), so that a batch of 2 tokens over 256 experts launches blocks for
 * 16 experts, not 256. */
__device__ __forceinline__ int64_t grp_expert(const mg_args &a, int64_t rank, int lane)
{
    int64_t seen = 0;
    for (int64_t e0 = 0; e0 < a.E; e0 += 32) {
        const int64_t e = e0 + lane;
        const unsigned m = __ballot_sync(0xffffffffu, e < a.E && a.cnt[e] > 0);
        const int n = __popc(m);
        if (rank < seen + n)
            return e0 + (int64_t)__fns(m, 0, (int)(rank - seen) + 1);
        seen += n;
    }
    return -1;                         /* fewer active experts than ranks */
}

template <int TS, int NT, bool GLU>
__global__ void __launch_bounds__(32 * MMQ_GW, (TS == QT_Q4_K ? 16 : 12) / MMQ_GW)
k_mmq_grp(const uint8_t *__restrict__ W, const uint8_t *__restrict__ W2, uint64_t rb, int64_t K,
          int64_t N, mg_args a, const int8_t *__restrict__ qx, const float2 *__restrict__ dx,
          float *__restrict__ y, int64_t ldy, int act)
{
    __shared__ float red[MMQ_GW - 1][GLU ? 2 : 1][NT * 4][32];
    const int lane = threadIdx.x & 31, w = threadIdx.x / 32, g = lane >> 2, t = lane & 3;
    const int64_t n0 = (int64_t)blockIdx.x * 16, nbx = K / Q8X_BLOCK, nb = K / 256;
    cuda_pdl_enter();                  /* the routing is the kernel ahead's */
    const int64_t e = act ? grp_expert(a, blockIdx.y, lane) : (int64_t)blockIdx.y;
    if (e < 0)
        return;                        /* the whole block: every warp finds the same */
    const int cnt = a.cnt[e];
    const int64_t p0 = a.off[e];
    const uint64_t ra = ((uint64_t)e * (uint64_t)N + (uint64_t)(n0 + g < N ? n0 + g : N - 1)) * rb;
    const uint64_t rbo = ((uint64_t)e * (uint64_t)N + (uint64_t)(n0 + g + 8 < N ? n0 + g + 8 : N - 1)) * rb;
    for (int c0 = 0; c0 < cnt; c0 += NT * 8) {       /* one round unless rows repeat an expert */
        const int cn = cnt - c0 < NT * 8 ? cnt - c0 : NT * 8;
        auto xrow = [&](int i) -> int64_t {
            const int64_t q = a.perm[p0 + c0 + (i < cn ? i : cn - 1)];
            return a.x_per_tok ? q / a.k : q;
        };
        mmq_lane<NT> L;
        L.t = t;
        L.qx = qx;
        L.dx = dx;
        L.nact = (cn + 7) / 8;
        #pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            L.xb[nt] = (int)(xrow(nt * 8 + g) * K);
            L.d0[nt] = (int)(xrow(nt * 8 + 2 * t) * nbx);
            L.d1[nt] = (int)(xrow(nt * 8 + 2 * t + 1) * nbx);
        }
        float acc[GLU ? 2 : 1][NT][4];
        #pragma unroll
        for (int h = 0; h < (GLU ? 2 : 1); h++) {
            #pragma unroll
            for (int nt = 0; nt < NT; nt++)
                acc[h][nt][0] = acc[h][nt][1] = acc[h][nt][2] = acc[h][nt][3] = 0.0f;
            const uint8_t *Wh = h ? W2 : W;
            L.ra = Wh + ra;
            L.rb = Wh + rbo;
            if (TS == QT_Q4_K)
                mmq_run<q4_regs, 2, MMQ_GW, NT>(
                    nb, w, acc[h], [&](q4_regs &r, int64_t sb) { q4_load(r, L.ra, L.rb, sb, t); },
                    [&](const q4_regs &r, int64_t sb, float ac[NT][4]) { q4_mul<NT>(r, sb, L, ac); });
            else
                mmq_run<q6_regs, 2, MMQ_GW, NT>(
                    nb, w, acc[h], [&](q6_regs &r, int64_t sb) { q6_load(r, L.ra, L.rb, sb, t); },
                    [&](const q6_regs &r, int64_t sb, float ac[NT][4]) { q6_mul<NT>(r, sb, L, ac); });
        }
        if (w > 0) {
            #pragma unroll
            for (int h = 0; h < (GLU ? 2 : 1); h++)
                #pragma unroll
                for (int nt = 0; nt < NT; nt++)
                    #pragma unroll
                    for (int i = 0; i < 4; i++)
                        red[w - 1][h][nt * 4 + i][lane] = acc[h][nt][i];
        }
        __syncthreads();
        if (w == 0) {
            #pragma unroll
            for (int nt = 0; nt < NT; nt++)
                #pragma unroll
                for (int i = 0; i < 4; i++) {
                    float sg = acc[0][nt][i], su = GLU ? acc[GLU ? 1 : 0][nt][i] : 0.0f;
                    #pragma unroll
                    for (int v = 0; v < MMQ_GW - 1; v++) {
                        sg += red[v][0][nt * 4 + i][lane];
                        if (GLU)
                            su += red[v][GLU ? 1 : 0][nt * 4 + i][lane];
                    }
                    const int r = nt * 8 + 2 * t + (i & 1);
                    const int64_t n = n0 + g + 8 * (i >> 1);
                    if (r < cn && n < N)
                        y[(int64_t)a.perm[p0 + c0 + r] * ldy + n] = GLU ? cuda_swiglu1(sg, su) : sg;
                }
        }
        __syncthreads();               /* red is free again */
    }
}

bool cuda_mmq_grp(be_ctx *be, uint32_t type, const uint8_t *W, const uint8_t *W2, uint64_t rb,
                  int64_t K, int64_t N, int64_t E, const mg_args *a, const int8_t *qx,
                  const float2 *dx, int64_t T, float *y, int64_t ldy)
{
    cuda_ctx *c = cuda_ctx_of(be);
    if (c->cc_major < 8 || K % 256 || K <= 0 || N < 1 || E < 1 || T < 1 || T > MMQ_ROWS ||
        (type != QT_Q4_K && type != QT_Q6_K) || E > 65535)
        return false;
    const int act = c->mmq_grp_act;
    const dim3 grid((unsigned)((N + 15) / 16), (unsigned)(act && a->Q < E ? a->Q : E));
    const int nt = (int)((T + 7) / 8);
#define GRP(TS, NT) do { if (W2) cuda_launch(k_mmq_grp<TS, NT, true>, grid, 32 * MMQ_GW, 0, c->stream, \
        W, W2, rb, K, N, *a, qx, dx, y, ldy, act); else cuda_launch(k_mmq_grp<TS, NT, false>, grid,   \
        32 * MMQ_GW, 0, c->stream, W, W2, rb, K, N, *a, qx, dx, y, ldy, act); } while (0)
#define GRP_NT(TS) do { if (nt == 1) GRP(TS, 1); else if (nt == 2) GRP(TS, 2); \
                         else if (nt == 3) GRP(TS, 3); else GRP(TS, 4); } while (0)
    if (type == QT_Q4_K)
        GRP_NT(QT_Q4_K);
    else
        GRP_NT(QT_Q6_K);
#undef GRP_NT
#undef GRP
    return CUDA_LAUNCHED(be, "k_mmq_grp");
}

bool cuda_mmq(be_ctx *be, const mmq_jobs *J, int64_t K, const int8_t *qx, const float2 *dx,
              int64_t R, const float *x, int64_t ldx)
{
    cuda_ctx *c = cuda_ctx_of(be);
    if (c->cc_major < 8 || K % 256 || K <= 0 || R < 1 || R > MMQ_ROWS || J->n < 1 ||
        J->n > MMQ_JOBS)
        return false;
    mmq_jobs M = *J;                    /* with its tiles */
    int ts = (int)J->type[0];
    bool f32 = false, q6 = false;
    M.tile0[0] = 0;
    for (int j = 0; j < J->n; j++) {
        const uint32_t ty = J->type[j];
        if ((ty != QT_Q4_K && ty != QT_Q6_K && (ty != QT_F32 || !x)) || J->N[j] < 1 ||
            (ty == QT_F32 && J->rb[j] != (uint64_t)K * 4))
            return false;
        if ((int)ty != ts || ty == QT_F32)
            ts = MV_ANY;
        f32 = f32 || ty == QT_F32;
        q6 = q6 || ty == QT_Q6_K;
        M.tile0[j + 1] = M.tile0[j] + (J->N[j] + 15) / 16;
    }
    if (x && (((uintptr_t)x & 15) || (ldx & 3)))
        return false;
    if (ts == MV_ANY && f32 && !q6)
        ts = MMQ_Q4F;
    const int64_t tiles = M.tile0[M.n];
    const dim3 grid((unsigned)tiles);
    const int nt = (int)((R + 7) / 8);
    /* a grid of fewer than two blocks an SM (a 2,048-row product): K over 8 warps */
    const bool w8 = tiles < 2 * (int64_t)c->n_sm && K >= 8 * 256;
#define MMQ(TS, NT, W) cuda_launch(k_mmq<TS, NT, W>, grid, 32 * W, 0, c->stream, M, K, qx, dx, \
                                   R, x, ldx)
#define MMQ_W(TS, NT) do { if (w8) MMQ(TS, NT, 8); else MMQ(TS, NT, 4); } while (0)
#define MMQ_NT(TS) do { if (nt == 1) MMQ_W(TS, 1); else if (nt == 2) MMQ_W(TS, 2); \
                        else if (nt == 3) MMQ_W(TS, 3); else MMQ_W(TS, 4); } while (0)
    if (ts == QT_Q4_K)
        MMQ_NT(QT_Q4_K);
    else if (ts == QT_Q6_K)
        MMQ_NT(QT_Q6_K);
    else if (ts == MMQ_Q4F)
        MMQ_NT(MMQ_Q4F);
    else
        MMQ_NT(MV_ANY);
#undef MMQ_NT
#undef MMQ_W
#undef MMQ
    return CUDA_LAUNCHED(be, "k_mmq");
}
