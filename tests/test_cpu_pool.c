/* test_cpu_pool.c: the CPU backend's parallel-for (cpu_for in
 * src/backend/cpu/cpu_pool.c): every item runs exactly once and the
 * caller returns only after all of them ran, for n_threads 1..4, counts
 * below, at and above the grain, long sequences of tiny calls (the
 * decode pattern, where a lost wake-up or a job read by a late worker
 * shows), calls after the workers fell asleep, the thread ids a body
 * sees, and that an idle pool stops using CPU. It prints the cost of one
 * small cpu_for (a timing, not asserted: the machine is shared). */
#include "test.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_internal.h"

typedef struct {
    atomic_int *hits;       /* per item */
    int64_t     n, grain;
    int         n_threads;
    atomic_int  bad;        /* a range outside [0, n) or a bad tid */
    atomic_int  calls;
} job;

static void count_task(void *arg, int64_t i0, int64_t i1, int tid)
{
    job *j = arg;
    atomic_fetch_add(&j->calls, 1);
    if (i0 < 0 || i1 > j->n || i0 >= i1 || tid < 0 || tid >= j->n_threads)
        atomic_fetch_add(&j->bad, 1);
    for (int64_t i = i0; i0 >= 0 && i < i1 && i < j->n; i++)
        atomic_fetch_add(&j->hits[i], 1);
}

/* One cpu_for over n items; returns a reason or NULL. */
static const char *run_once(be_ctx *be, int nt, int64_t n, int64_t grain, atomic_int *hits)
{
    static char why[160];
    for (int64_t i = 0; i < n; i++)
        atomic_store(&hits[i], 0);
    job j = { .hits = hits, .n = n, .grain = grain, .n_threads = nt };
    cpu_for(be, n, grain, count_task, &j);
    if (atomic_load(&j.bad)) {
        snprintf(why, sizeof why, "n %lld grain %lld: a range or tid out of bounds",
                 (long long)n, (long long)grain);
        return why;
    }
    for (int64_t i = 0; i < n; i++)
        if (atomic_load(&hits[i]) != 1) {
            snprintf(why, sizeof why, "n %lld grain %lld: item %lld ran %d times",
                     (long long)n, (long long)grain, (long long)i, atomic_load(&hits[i]));
            return why;
        }
    if (n > 0 && n <= (grain < 1 ? 1 : grain) && atomic_load(&j.calls) != 1) {
        snprintf(why, sizeof why, "n %lld <= grain %lld: %d calls, want 1 on the caller",
                 (long long)n, (long long)grain, atomic_load(&j.calls));
        return why;
    }
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ~1 us of dependent arithmetic per item; counts items, and the items
 * the workers (tid > 0) ran */
static void busy_task(void *arg, int64_t i0, int64_t i1, int tid)
{
    atomic_int *c = arg;
    volatile uint64_t sink;
    for (int64_t i = i0; i < i1; i++) {
        uint64_t h = (uint64_t)i + 1;
        for (int k = 0; k < 1000; k++)
            h = h * 6364136223846793005ull + 1442695040888963407ull;
        sink = h;
    }
    (void)sink;
    atomic_fetch_add(&c[0], (int)(i1 - i0));
    if (tid > 0)
        atomic_fetch_add(&c[1], (int)(i1 - i0));
}

static void test_threads(int nt)
{
    char name[96];
    be_ctx *be = NULL;
    q36_err err = { 0 };
    snprintf(name, sizeof name, "cpu_for t%d: context", nt);
    if (be_cpu_new(nt, &be, &err) != 0) {
        t_fail(name, "be_cpu_new failed");
        return;
    }
    atomic_int *hits = calloc(70000, sizeof *hits);

    /* counts and grains around each other */
    static const int64_t ns[] = { 0, 1, 2, 3, 7, 16, 31, 33, 255, 257, 1000, 65536 };
    static const int64_t gs[] = { 0, 1, 4, 16, 256, 1 << 20 };
    const char *why = NULL;
    for (size_t a = 0; a < sizeof ns / sizeof *ns && !why; a++)
        for (size_t b = 0; b < sizeof gs / sizeof *gs && !why; b++)
            why = run_once(be, nt, ns[a], gs[b], hits);
    snprintf(name, sizeof name, "cpu_for t%d: every item once, n and grain 0..65536", nt);
    t_check(name, !why, "%s", why);

    /* the decode pattern: many tiny calls back to back */
    why = NULL;
    t_rng r = t_rng_named("cpu_for tiny sequence");
    for (int k = 0; k < 20000 && !why; k++) {
        const int64_t n = 1 + (int64_t)(t_next(&r) % 40), g = 1 + (int64_t)(t_next(&r) % 4);
        why = run_once(be, nt, n, g, hits);
    }
    snprintf(name, sizeof name, "cpu_for t%d: 20000 tiny calls in a row", nt);
    t_check(name, !why, "%s", why);

    /* after the workers went to sleep (their spin ends after ~1 ms) */
    why = NULL;
    for (int k = 0; k < 5 && !why; k++) {
        struct timespec ts = { 0, 3000000 };
        nanosleep(&ts, NULL);
        why = run_once(be, nt, 1000, 1, hits);
    }
    snprintf(name, sizeof name, "cpu_for t%d: calls after the workers slept", nt);
    t_check(name, !why, "%s", why);

    /* an idle process stops using CPU: after a call, the workers spin and
     * yield for about a millisecond, then sleep. Over 200 ms of idling the
     * process's CPU time must stay far below one spinning thread's 200 ms
     * (the bound, 25 ms, leaves room for a slow machine; a worker that
     * never sleeps fails it whatever the load). */
    {
        run_once(be, nt, 1000, 1, hits);
        struct timespec c0, c1, idle = { 0, 200000000 };
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
        nanosleep(&idle, NULL);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
        const double ms = (double)(c1.tv_sec - c0.tv_sec) * 1e3 + (double)(c1.tv_nsec - c0.tv_nsec) * 1e-6;
        printf("# cpu_for t%d: %.2f ms of CPU over 200 ms idle\n", nt, ms);
        snprintf(name, sizeof name, "cpu_for t%d: an idle pool sleeps", nt);
        t_check(name, ms < 25.0, "%.1f ms of CPU used in 200 ms of idling", ms);
    }

    /* cost of one small call with the workers awake: printed only. The
     * same items run inline give the work's own time. */
    atomic_int items[2] = { 0, 0 }, inl[2] = { 0, 0 };
    const int reps = 20000;
    double t0 = now_s();
    for (int k = 0; k < reps; k++)
        busy_task(inl, 0, 2 * nt, 0);
    const double us_work = (now_s() - t0) / reps * 1e6;
    t0 = now_s();
    for (int k = 0; k < reps; k++)
        cpu_for(be, 2 * nt, 1, busy_task, items);
    const double us = (now_s() - t0) / reps * 1e6;
    printf("# cpu_for t%d: %.2f us per call of %d ~1 us items (%.2f us inline), %.0f%% of "
           "them on workers (timings on a shared machine are noisy)\n", nt, us, 2 * nt,
           us_work, 100.0 * atomic_load(&items[1]) / (reps * 2.0 * nt));
    snprintf(name, sizeof name, "cpu_for t%d: timing loop ran every item", nt);
    t_check(name, atomic_load(&items[0]) == reps * 2 * nt, "%d items, want %d",
            atomic_load(&items[0]), reps * 2 * nt);
    free(hits);
    be_free(be);
}

/* Pools made, used and freed at once, many times: a worker thread that
 * starts only after the caller ran its jobs (or after cpu_pool_free) must
 * still see them and the quit. A hang here is the failure (the alarm in
 * main ends the program). */
static void test_short_lived(void)
{
    atomic_int *hits = calloc(64, sizeof *hits);
    const char *why = NULL;
    for (int k = 0; k < 300 && !why; k++) {
        be_ctx *be = NULL;
        q36_err err = { 0 };
        const int nt = 2 + k % 3;
        if (be_cpu_new(nt, &be, &err) != 0) {
            why = "be_cpu_new failed";
            break;
        }
        for (int c = 0; c < k % 4 && !why; c++)
            why = run_once(be, nt, 64, 1, hits);
        be_free(be);
    }
    t_check("cpu_for: 300 pools made, used 0-3 times and freed at once", !why, "%s", why);
    free(hits);
}

int main(void)
{
    alarm(120);     /* a lost wake-up hangs: end the test loudly instead */
    test_short_lived();
    for (int nt = 1; nt <= 4; nt++)
        test_threads(nt);
    return t_exit();
}
