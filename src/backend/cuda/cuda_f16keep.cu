/* cuda_f16keep.cu: f16 copies of weights kept on the device for prompt
 * products (Q36_CUDA_F16KEEP, fast mode, on unless "0"; cuda.h: f16keep).
 * Measured on the H200: 35B-A3B pp4096 17,875 -> 20,419 t/s (+14%, record
 * bench/results/2026-12-03-cuda-session16/). be_cuda_f16keep_bytes is
 * what a model's copies can take at most (q36 info's GPU memory plan).
 *
 * Fast mode's prompt products read f16 weights: cuda_gemm.cu dequantizes a
 * dense weight into the scratch before each cuBLAS product, cuda_moe_pre.cu
 * every expert of a layer before its grouped tiles. On the 35B-A3B a
 * pp4096 pass spent 30 ms of its 251 dequantizing (record
 * bench/results/2026-12-02-cuda-prefill/, run-f169360), the same values
 * every pass. With the switch, the first product of a weight region
 * dequantizes it once into memory of its own (deq8's values rounded to
 * nearest, the halves the scratch would hold) and later products read
 * that copy. It costs two bytes a weight: the 35B-A3B's experts alone
 * take 64 GB beside the file's 20. A region is kept only while the device
 * has room to spare (F16KEEP_MARGIN, or a twentieth of its memory, left
 * free); once one is refused no other is tried, and the scratch path runs
 * as before. Regions are never dropped before the context: weights live
 * as long as it (cuda_weight_bind) and their addresses name them. Not in
 * a graph capture (prompt passes above the matvec rows are not
 * captured). */
#include "cuda.h"
#include "cuda_deq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F16KEEP_MARGIN ((size_t)2 << 30)

struct cuda_kept {
    const uint8_t *W;
    int64_t K, rows;
    __half *h;
    struct cuda_kept *next;
};

const __half *cuda_f16_kept(be_ctx *be, uint32_t type, const uint8_t *W, uint64_t rb, int64_t K,
                            int64_t rows)
{
    cuda_ctx *c = cuda_ctx_of(be);
    if (!c->f16keep || c->gmode == GM_CAPTURE)
        return NULL;
    for (const cuda_kept *k = c->kept; k; k = k->next)
        if (k->W == W && k->K == K && k->rows == rows)
            return k->h;
    if (c->kept_full)
        return NULL;
    const size_t bytes = (size_t)rows * (size_t)K * sizeof(__half);
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) {
        cudaGetLastError();
        c->kept_full = true;
        return NULL;
    }
    const size_t margin = tot / 20 > F16KEEP_MARGIN ? tot / 20 : F16KEEP_MARGIN;
    cuda_kept *k = (cuda_kept *)calloc(1, sizeof *k);
    void *h = NULL;
    if (!k || fr < bytes + margin || cudaMalloc(&h, bytes) != cudaSuccess) {
        cudaGetLastError();
        free(k);
        c->kept_full = true;
        /* once a context: the prompt speed it costs should not be a mystery */
        fprintf(stderr,
                "q36: cuda: f16 weight copies stop at %.2f GiB kept (%.2f GiB free, a region of "
                "%.3f GiB, %.2f GiB left free): later prompt products dequantize each pass\n",
                c->kept_bytes / 1073741824.0, fr / 1073741824.0, bytes / 1073741824.0,
                margin / 1073741824.0);
        return NULL;
    }
    if (!cuda_dequant_h(be, type, W, rb, K, 0, rows, (__half *)h)) {
        cudaStreamSynchronize(c->stream);   /* nothing queued reads it any more */
        cudaFree(h);
        free(k);
        return NULL;                        /* the context's error is set */
    }
    *k = (cuda_kept){ W, K, rows, (__half *)h, c->kept };
    c->kept = k;
    c->kept_bytes += bytes;
    return k->h;
}

void cuda_f16_kept_free(cuda_ctx *c)
{
    for (cuda_kept *k = c->kept, *nx; k; k = nx) {
        nx = k->next;
        cudaFree(k->h);
        free(k);
    }
    c->kept = NULL;
    c->kept_bytes = 0;
    c->kept_full = false;
}

/* The bound for q36 info: two bytes an element of every matrix that the
 * prompt products read in a quantized type (F32 ones are multiplied as
 * they are), the token embedding aside (rows are looked up, never
 * multiplied). An upper bound: the output head's copy is made only when
 * a pass asks for the logits of more rows than a matrix-vector takes. */
extern "C" uint64_t be_cuda_f16keep_bytes(const gguf_tensor *t)
{
    if (!cuda_env_on("Q36_CUDA_F16KEEP") || t->n_dims < 2 || t->type == QT_F32 ||
        !cuda_type_native(t->type) || !strcmp(t->name, "token_embd.weight"))
        return 0;
    return gguf_tensor_nelements(t) * sizeof(__half);
}
