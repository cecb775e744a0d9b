/* cuda_attn_split.h: the end of a split-attention block (cuda_seq.cu's
 * k_attn_split_gqa, cuda_attn_q8.cu's k_attn_q8): each warp's online
 * softmax state for its G heads (max m, sum l, NPL accumulators a lane)
 * to shared memory, then the block's partial for each head: the maximum
 * M over the warps that saw keys, the sum and the accumulators rescaled
 * by exp(m - M), in warp order, to part_g(g) (M, sum, HD values). */
#ifndef Q36_CUDA_ATTN_SPLIT_H
#define Q36_CUDA_ATTN_SPLIT_H

template <int NW, int G, int NPL, int THREADS, class Out>
__device__ __forceinline__ void attn_split_out(float (*wm)[G], float (*wl)[G],
                                               float (*wacc)[G][NPL * 32], const float *m,
                                               const float *l, const float (*acc)[NPL],
                                               int lane, int wid, Out part_g)
{
    constexpr int HD = NPL * 32;
    #pragma unroll
    for (int g = 0; g < G; g++) {
        if (lane == 0) {
            wm[wid][g] = m[g];
            wl[wid][g] = l[g];
        }
        #pragma unroll
        for (int i = 0; i < NPL; i++)
            wacc[wid][g][lane * NPL + i] = acc[g][i];
    }
    __syncthreads();
    for (int g = 0; g < G; g++) {
        float M = -INFINITY;
        for (int w = 0; w < NW; w++)
            if (wl[w][g] > 0.0f)
                M = fmaxf(M, wm[w][g]);
        float *o = part_g(g);
        float Ls = 0.0f;
        for (int w = 0; w < NW; w++)
            if (wl[w][g] > 0.0f)
                Ls += wl[w][g] * expf(wm[w][g] - M);
        if (threadIdx.x == 0) {
            o[0] = M;
            o[1] = Ls;
        }
        for (int d = threadIdx.x; d < HD; d += THREADS) {
            float a = 0.0f;
            for (int w = 0; w < NW; w++)
                if (wl[w][g] > 0.0f)
                    a += wacc[w][g][d] * expf(wm[w][g] - M);
            o[2 + d] = a;
        }
    }
}

#endif
