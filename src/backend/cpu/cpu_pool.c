/* cpu_pool.c: the CPU backend's worker threads: a fixed set of pthreads
 * that share out the items of one parallel-for through an atomic counter.
 * The calling thread works too, so n_threads = 1 means no pool at all.
 *
 * Hand-off. Decode runs ~200 parallel-fors per token, a few tens of
 * microseconds apart, so the hand-off must cost about a microsecond, not
 * the tens of microseconds a mutex + condition variable round trip costs
 * on a VM. The hot path is lock-free: the caller publishes the job and
 * bumps a generation counter; workers that watch it start at once. After
 * an op a worker spins (pause) for CPU_POOL_SPIN_NS, then yields its core
 * until CPU_POOL_YIELD_NS, then sleeps on a futex on the generation
 * counter; dispatch makes the wake system call only when a worker sleeps.
 * An idle process thus stops using CPU after about a millisecond, which
 * matters on a machine whose few cores are shared with other jobs.
 *
 * Join. The caller waits for the items to be done, not for every worker to
 * have looked at the job: a worker that is asleep or descheduled when the
 * job is short never delays it. A worker enters a job (the `inside`
 * counter) before it reads the job's fields and leaves it after; the
 * caller closes the job (`open` = 0) once every item is done, then waits
 * for `inside` to drop to zero before it may write the next job. A worker
 * that enters a closed job leaves at once without touching it. Both sides
 * of each hand-shake are sequentially consistent atomics (store then load
 * on each side), so one of the two always sees the other.
 *
 * `make OPENMP=1` builds the same contract on OpenMP instead (the second
 * half of this file), so the two can be measured against each other:
 * bench/results/2026-11-29-cpu-threads/. */
#include "cpu_internal.h"

#include <stdatomic.h>
#include <stdlib.h>

/* Takes chunks of `grain` items from the shared counter until none is left:
 * the work loop of every thread, in both builds. Returns the items done. */
static int64_t take_items(atomic_llong *next, int64_t n, int64_t grain, cpu_task_fn fn,
                          void *arg, int tid)
{
    int64_t done = 0;
    for (;;) {
        int64_t i0 = atomic_fetch_add_explicit(next, grain, memory_order_relaxed);
        if (i0 >= n)
            return done;
        const int64_t i1 = i0 + grain < n ? i0 + grain : n;
        fn(arg, i0, i1, tid);
        done += i1 - i0;
    }
}

/* What every cpu_for does first, in both builds: nothing for no items, a
 * grain of at least 1, and the whole range on the caller when there is no
 * pool or one chunk covers it. True when the call is done. */
static bool run_on_caller(const cpu_pool *p, int64_t n, int64_t *grain, cpu_task_fn fn, void *arg)
{
    if (n <= 0)
        return true;
    if (*grain < 1)
        *grain = 1;
    if (!p || n <= *grain) {
        fn(arg, 0, n, 0);
        return true;
    }
    return false;
}

#ifndef Q36_OPENMP

#include <limits.h>
#include <sched.h>
#include <time.h>
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

/* How long a worker stays awake after its last job: spinning, then
 * yielding. Decode's ops come every 10-100 us and its tokens every few ms
 * of sampling at most, so 1 ms keeps the workers awake through a token
 * stream and costs an idle process at most 1 ms of CPU per worker. */
#define CPU_POOL_SPIN_NS   200000
#define CPU_POOL_YIELD_NS 1000000

struct cpu_pool {
    int           n;            /* workers, not counting the caller */
    pthread_t    *th;
    atomic_uint   gen;          /* bumped per job (and at quit); futex word */
    atomic_uint   open;         /* generation of the job still open, 0 = none */
    atomic_int    inside;       /* workers between entering and leaving a job */
    atomic_int    sleepers;     /* workers in (or about to enter) futex wait */
    atomic_bool   quit;
    /* the current job: written by the caller only while no worker is inside */
    cpu_task_fn   fn;
    void         *arg;
    int64_t       n_items, grain;
    _Alignas(64) atomic_llong next;   /* the next unclaimed item */
    _Alignas(64) atomic_llong done;   /* items finished */
};

typedef struct { cpu_pool *p; int tid; } worker_arg;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void gen_wait(atomic_uint *gen, unsigned seen)
{
#if defined(__linux__)
    syscall(SYS_futex, (unsigned *)gen, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
#else
    (void)gen; (void)seen;
    struct timespec ts = { 0, 100000 };
    nanosleep(&ts, NULL);
#endif
}

static void gen_wake(atomic_uint *gen)
{
#if defined(__linux__)
    syscall(SYS_futex, (unsigned *)gen, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
#else
    (void)gen;
#endif
}

/* Waits until the generation differs from `seen`: spin, yield, sleep. */
static unsigned wait_new_gen(cpu_pool *p, unsigned seen)
{
    unsigned g;
    uint64_t t0 = 0;
    for (unsigned i = 0;; i++) {
        for (int k = 0; k < 64; k++) {
            g = atomic_load_explicit(&p->gen, memory_order_acquire);
            if (g != seen)
                return g;
            cpu_relax();
        }
        const uint64_t t = now_ns();
        if (i == 0)
            t0 = t;
        else if (t - t0 > CPU_POOL_YIELD_NS)
            break;
        else if (t - t0 > CPU_POOL_SPIN_NS)
            sched_yield();
    }
    for (;;) {
        atomic_fetch_add(&p->sleepers, 1);
        g = atomic_load(&p->gen);
        if (g == seen && !atomic_load(&p->quit))
            gen_wait(&p->gen, seen);
        atomic_fetch_sub(&p->sleepers, 1);
        g = atomic_load(&p->gen);
        if (g != seen)
            return g;
    }
}

static void *worker(void *a)
{
    worker_arg wa = *(worker_arg *)a;
    free(a);
    cpu_pool *p = wa.p;
    /* gen starts at 0: a worker that starts late (after jobs, or after
     * cpu_pool_free bumped gen for quit) sees the change at once */
    unsigned seen = 0;
    for (;;) {
        seen = wait_new_gen(p, seen);
        if (atomic_load(&p->quit))
            return NULL;
        atomic_fetch_add(&p->inside, 1);
        if (atomic_load(&p->open) == seen) {
            const int64_t d = take_items(&p->next, p->n_items, p->grain, p->fn, p->arg, wa.tid);
            if (d)
                atomic_fetch_add_explicit(&p->done, d, memory_order_release);
        }
        atomic_fetch_sub_explicit(&p->inside, 1, memory_order_release);
    }
}

cpu_pool *cpu_pool_new(int n_threads)
{
    if (n_threads <= 1)
        return NULL;
    cpu_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n = n_threads - 1;
    p->th = calloc((size_t)p->n, sizeof *p->th);
    if (!p->th) {
        p->n = 0;
        goto fail;
    }
    for (int i = 0; i < p->n; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (!wa) {
            p->n = i;
            goto fail;
        }
        wa->p = p;
        wa->tid = i + 1;
        if (pthread_create(&p->th[i], NULL, worker, wa) != 0) {
            free(wa);
            p->n = i;
            goto fail;
        }
    }
    return p;
fail:
    cpu_pool_free(p);
    return NULL;
}

void cpu_pool_free(cpu_pool *p)
{
    if (!p)
        return;
    atomic_store(&p->quit, true);
    atomic_fetch_add(&p->gen, 1);
    gen_wake(&p->gen);
    for (int i = 0; i < p->n; i++)
        pthread_join(p->th[i], NULL);
    free(p->th);
    free(p);
}

void cpu_for(be_ctx *be, int64_t n, int64_t grain, cpu_task_fn fn, void *arg)
{
    cpu_pool *p = cpu_ctx_of(be)->pool;
    if (run_on_caller(p, n, &grain, fn, arg))
        return;
    /* publish: no worker is inside (the last join waited for that) */
    p->fn = fn;
    p->arg = arg;
    p->n_items = n;
    p->grain = grain;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    unsigned g = atomic_load_explicit(&p->gen, memory_order_relaxed) + 1;
    if (g == 0)
        g = 1;                              /* 0 means "no job open" */
    atomic_store(&p->open, g);
    atomic_store(&p->gen, g);
    if (atomic_load(&p->sleepers) > 0)
        gen_wake(&p->gen);
    /* work, then wait for the items the workers took */
    int64_t d = take_items(&p->next, n, grain, fn, arg, 0);
    for (unsigned i = 0; atomic_load_explicit(&p->done, memory_order_acquire) + d < n; i++) {
        cpu_relax();
        if (i > 4096)
            sched_yield();                  /* a worker with items lost its core */
    }
    /* close the job; wait for workers still reading its fields to leave */
    atomic_store(&p->open, 0);
    for (unsigned i = 0; atomic_load(&p->inside) > 0; i++) {
        cpu_relax();
        if (i > 4096)
            sched_yield();
    }
}

#else /* Q36_OPENMP: one parallel region per op, items shared the same way */

#include <omp.h>

struct cpu_pool {
    int          n_threads;
    atomic_llong next;
};

cpu_pool *cpu_pool_new(int n_threads)
{
    if (n_threads <= 1)
        return NULL;
    cpu_pool *p = calloc(1, sizeof *p);
    if (p)
        p->n_threads = n_threads;
    return p;
}

void cpu_pool_free(cpu_pool *p)
{
    free(p);
}

void cpu_for(be_ctx *be, int64_t n, int64_t grain, cpu_task_fn fn, void *arg)
{
    cpu_pool *p = cpu_ctx_of(be)->pool;
    if (run_on_caller(p, n, &grain, fn, arg))
        return;
    atomic_store(&p->next, 0);
#pragma omp parallel num_threads(p->n_threads)
    take_items(&p->next, n, grain, fn, arg, omp_get_thread_num());
}

#endif
