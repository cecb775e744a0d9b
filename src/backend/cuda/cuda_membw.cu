/* cuda_membw.cu: the device memory's read bandwidth, for `q36 bench -ngl
 * --bandwidth` (the ceiling a decode step's bytes are set against): a
 * kernel reads a buffer several times larger than the L2 with 16-byte
 * loads, four in flight per thread, and folds them into a value it stores
 * only on an impossible match (so the loads stay). One untimed pass, then
 * each timed pass between two events on the stream. Reading only: a
 * decode step reads its weights and writes almost nothing. */
#include "cuda.h"

__global__ void k_read(const uint4 *__restrict__ p, size_t n, unsigned *sink)
{
    cuda_pdl_enter();
    cuda_pdl_enter();
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned acc = 0;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const uint4 a = p[i], b = p[i + stride], c = p[i + 2 * stride], d = p[i + 3 * stride];
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^
               d.y ^ d.z ^ d.w;
    }
    for (; i < n; i += stride) {
        const uint4 a = p[i];
        acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (acc == 0x9E3779B9u)
        *sink = acc;
}

extern "C" int be_cuda_read_bandwidth(uint64_t bytes, int passes, double *gbps, q36_err *err)
{
    const int dev = cuda_device_index();
    int sms = 0;
    void *buf = NULL;
    unsigned *sink = NULL;
    cudaStream_t st = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    const size_t n = (size_t)(bytes / 16);
    cudaError_t e = cudaSetDevice(dev);
    if (!e) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (!e) e = cudaMalloc(&buf, n * 16 + 16);
    if (!e) e = cudaMalloc((void **)&sink, sizeof *sink);
    if (!e) e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    if (!e) e = cudaEventCreate(&e0);
    if (!e) e = cudaEventCreate(&e1);
    if (!e) e = cudaMemsetAsync(buf, 0x5a, n * 16, st);
    for (int pass = -1; pass < passes && !e; pass++) {
        float ms = 0.0f;
        e = cudaEventRecord(e0, st);
        if (!e) {
            cuda_launch(k_read, (unsigned)(sms > 0 ? sms : 1) * 8, 256, 0, st, (const uint4 *)buf, n, sink);
            e = cudaGetLastError();
        }
        if (!e) e = cudaEventRecord(e1, st);
        if (!e) e = cudaEventSynchronize(e1);
        if (!e) e = cudaEventElapsedTime(&ms, e0, e1);
        if (!e && pass >= 0)
            gbps[pass] = ms > 0.0f ? (double)(n * 16) / ((double)ms * 1e6) : 0.0;
    }
    const cudaError_t first = e;
    cudaGetLastError();
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (st) cudaStreamDestroy(st);
    cudaFree(buf);
    cudaFree(sink);
    if (first)
        return q36_err_set(err, Q36_E_IO, "cuda read bandwidth over %.1f MiB on device %d: %s",
                           bytes / 1048576.0, dev, cudaGetErrorString(first));
    return 0;
}
