/* bench_stats.c: the small shared pieces of the bench module: statistics
 * of repeated timings, seeded token ids, the clock, K/V type names and the
 * engine destructor. */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void bench_stats_of(const double *v, int n, bench_stats *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    if (n <= 0)
        return;
    /* The sample is a handful of repetitions: a sorted copy on the stack. */
    double s[n];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    out->min = s[0];
    out->max = s[n - 1];
    out->median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += s[i];
    out->mean = sum / n;
    if (n > 1) {
        double ss = 0;
        for (int i = 0; i < n; i++)
            ss += (s[i] - out->mean) * (s[i] - out->mean);
        out->stddev = sqrt(ss / (n - 1));
    }
}

void bench_random_ids(int32_t *ids, int n, int32_t n_vocab, uint64_t seed)
{
    /* splitmix64: a fixed, portable stream; the ids only need to be
     * reproducible and spread over the vocabulary. */
    uint64_t x = seed;
    for (int i = 0; i < n; i++) {
        uint64_t z = (x += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        ids[i] = (int32_t)(z % (uint64_t)n_vocab);
    }
}

void bench_engine_free(bench_engine *e)
{
    if (e)
        e->free(e);
}
