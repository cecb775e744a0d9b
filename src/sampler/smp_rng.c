/* smp_rng.c: the sampler's random stream: xoshiro256** (Blackman and Vigna,
 * 2018), its 256-bit state filled from the 32-bit seed by splitmix64, and
 * uniform doubles from its top 53 bits. A random seed comes from getrandom(),
 * or from the clock when that fails.
 */
#include "smp_internal.h"

#include <sys/random.h>
#include <time.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void smp_rng_seed(smp *s)
{
    uint32_t seed = s->par.seed;
    while (seed == SMP_SEED_RANDOM) {
        if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            seed = (uint32_t)(ts.tv_nsec ^ ts.tv_sec);
        }
    }
    s->seed = seed;
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        s->rng[i] = splitmix64(&x);   /* splitmix64 never yields an all-zero state here */
}

double smp_rng_uniform(smp *s)
{
    uint64_t *r = s->rng;
    const uint64_t out = rotl(r[1] * 5, 7) * 9;
    const uint64_t t = r[1] << 17;
    r[2] ^= r[0];
    r[3] ^= r[1];
    r[1] ^= r[2];
    r[0] ^= r[3];
    r[2] ^= t;
    r[3] = rotl(r[3], 45);
    return (double)(out >> 11) * 0x1.0p-53;
}
