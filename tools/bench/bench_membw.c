/* bench_membw.c: the machine's memory read bandwidth as a decode step sees
 * it: n threads each stream a disjoint part of one buffer several times
 * larger than any cache, with wide loads and several independent sums (the
 * way a GEMV reads its weights), and the bandwidth of a pass is the buffer
 * size over the wall time from a common start until the last thread is
 * done. The first pass only faults the pages in and is not counted.
 *
 * Reading, not copying: a decode step reads weights and writes almost
 * nothing, so a STREAM "copy" or "triad" figure (which also pays for the
 * writes and their read-for-ownership) would understate what reads alone
 * can reach. With -ngl the device's memory is measured instead
 * (bench_membw_device: the backend's own read kernel). */
#include "bench.h"
#include "../../src/backend/backend.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define AVX2 __attribute__((target("avx2")))
#endif

typedef struct membw_share {
    const uint64_t   *p;
    size_t            n;          /* uint64_t words */
    atomic_int       *go;         /* set by the caller once every reader exists */
    uint64_t          sum;        /* kept so the loads are not optimized away */
    double            t_end;
} membw_share;

static uint64_t sum_plain(const uint64_t *p, size_t n)
{
    uint64_t a = 0, b = 0, c = 0, d = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        a += p[i];
        b += p[i + 1];
        c += p[i + 2];
        d += p[i + 3];
    }
    for (; i < n; i++)
        a += p[i];
    return a + b + c + d;
}

#if defined(__x86_64__)
/* Four 256-bit streams in flight; xor keeps each load on the critical path
 * of nothing but its own accumulator. */
AVX2 static uint64_t sum_avx2(const uint64_t *p, size_t n)
{
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a = _mm256_xor_si256(a, _mm256_loadu_si256((const __m256i *)(p + i)));
        b = _mm256_xor_si256(b, _mm256_loadu_si256((const __m256i *)(p + i + 4)));
        c = _mm256_xor_si256(c, _mm256_loadu_si256((const __m256i *)(p + i + 8)));
        d = _mm256_xor_si256(d, _mm256_loadu_si256((const __m256i *)(p + i + 12)));
    }
    a = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
    uint64_t l[4];
    _mm256_storeu_si256((__m256i *)l, a);
    return (l[0] ^ l[1] ^ l[2] ^ l[3]) + sum_plain(p + i, n - i);
}
#endif

static uint64_t sum_words(const uint64_t *p, size_t n)
{
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2"))
        return sum_avx2(p, n);
#endif
    return sum_plain(p, n);
}

static void *reader(void *arg)
{
    membw_share *s = arg;
    while (!atomic_load(s->go))
        sched_yield();
    s->sum += sum_words(s->p, s->n);
    s->t_end = bench_now();
    return NULL;
}

int bench_membw(int n_threads, size_t bytes, int passes, bench_stats *gbps, q36_err *err)
{
    if (n_threads < 1 || n_threads > 1024 || passes < 1 || passes > 1000 || bytes < ((size_t)1 << 20))
        return q36_err_set(err, Q36_E_ARG, "memory bandwidth: bad arguments (%d threads, %zu bytes, %d passes)",
                           n_threads, bytes, passes);
    const size_t words = bytes / 8;
    uint64_t *buf = NULL;
    if (posix_memalign((void **)&buf, 4096, words * 8))
        return q36_err_set(err, Q36_E_NOMEM, "memory bandwidth: cannot allocate %zu MiB", bytes >> 20);
    for (size_t i = 0; i < words; i++)
        buf[i] = i * 0x9E3779B97F4A7C15ull;
    membw_share *sh = calloc((size_t)n_threads, sizeof *sh);
    pthread_t *th = calloc((size_t)n_threads, sizeof *th);
    double *v = calloc((size_t)passes, sizeof *v);
    int rc = 0;
    if (!sh || !th || !v) {
        rc = q36_err_set(err, Q36_E_NOMEM, "memory bandwidth: out of memory");
        goto out;
    }
    const size_t per = (words / (size_t)n_threads) & ~(size_t)7;
    for (int pass = 0; pass <= passes && !rc; pass++) {
        atomic_int go = 0;
        int started = 0;
        for (int k = 0; k < n_threads; k++) {
            sh[k].p = buf + per * (size_t)k;
            sh[k].n = k == n_threads - 1 ? words - per * (size_t)k : per;
            sh[k].go = &go;
            if (pthread_create(&th[k], NULL, reader, &sh[k]) != 0) {
                rc = q36_err_set(err, Q36_E_IO, "memory bandwidth: cannot start thread %d", k);
                break;
            }
            started++;
        }
        const double t0 = bench_now();
        atomic_store(&go, 1);
        double t1 = t0;
        for (int k = 0; k < started; k++) {
            pthread_join(th[k], NULL);
            t1 = sh[k].t_end > t1 ? sh[k].t_end : t1;
        }
        if (pass > 0 && !rc)
            v[pass - 1] = (double)(words * 8) / (t1 - t0) / 1e9;
    }
    if (!rc)
        bench_stats_of(v, passes, gbps);
out:
    free(v);
    free(th);
    free(sh);
    free(buf);
    return rc;
}

int bench_membw_device(const char *backend, size_t bytes, int passes, bench_stats *gbps,
                       q36_err *err)
{
    double *v = calloc((size_t)(passes > 0 ? passes : 1), sizeof *v);
    if (!v)
        return q36_err_set(err, Q36_E_NOMEM, "memory bandwidth: out of memory");
    int rc = be_device_read_bandwidth(backend, bytes, passes, v, err);
    if (!rc)
        bench_stats_of(v, passes, gbps);
    free(v);
    return rc;
}
