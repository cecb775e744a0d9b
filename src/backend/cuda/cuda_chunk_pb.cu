/* cuda_chunk_pb.cu: the chunked delta rule's prep kernel in f32, blocked
 * (k_chunk_prep_pb; cuda_chunk.cu runs it with Q36_CUDA_CHUNKPREP=2 and
 * the state kernel on tensor cores). Its phases, and why, are in
 * cuda_chunk_pb.h; here they run between the block's barriers. */
#include "cuda.h"
#include "cuda_chunk_pb.h"

template <int DK>
__global__ void __launch_bounds__(CK_THREADS) k_chunk_prep_pb(ck_args a)
{
    cuda_pdl_enter();
#ifdef __CUDA_ARCH__
    using L = pb_sh<DK>;
    extern __shared__ __align__(16) float sm[];
    const ck_blk b = { (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z };
    const ck_chunk c = chunk_of(a.runs, b.z, (int64_t)b.x * CK_C);
    if (!c.nc)                         /* the whole block: before any barrier */
        return;
    const int tid = threadIdx.x, nt = CK_THREADS;
    pb_load<DK>(a, b, tid, nt, sm);
    __syncthreads();
    pb_gsum<DK>(a, b, tid, nt, sm);
    __syncthreads();
    pb_gram<DK>(a, b, tid, nt, sm);
    __syncthreads();
    pb_inv_diag<DK>(a, b, tid, nt, sm);
    __syncthreads();
    for (int d = 1; d < 4; d++) {
        pb_inv_r<DK>(a, b, tid, nt, sm, d);
        __syncthreads();
        pb_inv_t<DK>(a, b, tid, nt, sm, d);
        __syncthreads();
    }
    pb_scale<DK>(a, b, tid, nt, sm);
    __syncthreads();
    /* V's rows into K^T's place (pb_load_v's values) while W is formed */
    tc_cp_rows<DK, L::LR>(sm + L::oK, a.qkv, a.ldq, 2 * a.Hk * DK + b.y * DK, c, tid);
    cp_commit();
    pb_solve<DK>(a, b, tid, nt, sm, L::oT, L::oQ, a.W);
    cp_wait<0>();
    __syncthreads();
    pb_solve<DK>(a, b, tid, nt, sm, L::oM, L::oK, a.U);
#endif
}

template <int DK> bool ck_launch_prep_pb(be_ctx *be, const ck_args &a, dim3 grid)
{
    const size_t bytes = pb_sh<DK>::floats * sizeof(float);
    if (!cuda_smem_optin(be, (const void *)k_chunk_prep_pb<DK>, bytes))
        return false;
    cuda_launch(k_chunk_prep_pb<DK>, grid, CK_THREADS, bytes, cuda_ctx_of(be)->stream, a);
    return CUDA_LAUNCHED(be, "k_chunk_prep_pb");
}

template bool ck_launch_prep_pb<32>(be_ctx *, const ck_args &, dim3);
template bool ck_launch_prep_pb<64>(be_ctx *, const ck_args &, dim3);
template bool ck_launch_prep_pb<128>(be_ctx *, const ck_args &, dim3);
template bool ck_launch_prep_pb<256>(be_ctx *, const ck_args &, dim3);
