/* cpu_pool.c: the CPU backend's worker threads: a fixed set of pthreads
 * that sleep on a condition variable between ops and share out the items
 * of one parallel-for through an atomic counter. The calling thread works
 * too, so n_threads = 1 means no pool at all.
 *
 * Why a pool and not OpenMP: the build stays plain C11 + pthreads, and the
 * workers sleep (no spinning) between ops, which matters on a machine whose
 * few cores are shared with other jobs. `make OPENMP=1` builds the same
 * contract on OpenMP instead (the second half of this file), so the two can
 * be measured against each other: bench/results/2026-11-29-cpu-threads/. */
#include "cpu_internal.h"

#include <stdatomic.h>
#include <stdlib.h>

/* Takes chunks of `grain` items from the shared counter until none is left:
 * the work loop of every thread, in both builds. */
static void take_items(atomic_llong *next, int64_t n, int64_t grain, cpu_task_fn fn,
                       void *arg, int tid)
{
    for (;;) {
        int64_t i0 = atomic_fetch_add(next, grain);
        if (i0 >= n)
            return;
        fn(arg, i0, i0 + grain < n ? i0 + grain : n, tid);
    }
}

#ifndef Q36_OPENMP

struct cpu_pool {
    int              n;          /* workers, not counting the caller */
    pthread_t       *th;
    pthread_mutex_t  mu;
    pthread_cond_t   wake, done;
    uint64_t         gen;        /* incremented per job */
    int              busy;       /* workers still in the current job */
    bool             quit;
    /* the current job */
    cpu_task_fn      fn;
    void            *arg;
    int64_t          n_items, grain;
    atomic_llong     next;
};

typedef struct { cpu_pool *p; int tid; } worker_arg;

static void run_items(cpu_pool *p, int tid)
{
    take_items(&p->next, p->n_items, p->grain, p->fn, p->arg, tid);
}

static void *worker(void *a)
{
    worker_arg wa = *(worker_arg *)a;
    free(a);
    cpu_pool *p = wa.p;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->gen == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->quit)
            break;
        seen = p->gen;
        pthread_mutex_unlock(&p->mu);
        run_items(p, wa.tid);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
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
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    if (!p->th)
        goto fail;
    for (int i = 0; i < p->n; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (!wa)
            goto fail;
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
    pthread_mutex_lock(&p->mu);
    p->quit = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n; i++)
        pthread_join(p->th[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p->th);
    free(p);
}

void cpu_for(be_ctx *be, int64_t n, int64_t grain, cpu_task_fn fn, void *arg)
{
    if (n <= 0)
        return;
    if (grain < 1)
        grain = 1;
    cpu_pool *p = be->pool;
    if (!p || n <= grain) {
        fn(arg, 0, n, 0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->n_items = n;
    p->grain = grain;
    atomic_store(&p->next, 0);
    p->busy = p->n;
    p->gen++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    run_items(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->busy > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
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
    if (n <= 0)
        return;
    if (grain < 1)
        grain = 1;
    cpu_pool *p = be->pool;
    if (!p || n <= grain) {
        fn(arg, 0, n, 0);
        return;
    }
    atomic_store(&p->next, 0);
#pragma omp parallel num_threads(p->n_threads)
    take_items(&p->next, n, grain, fn, arg, omp_get_thread_num());
}

#endif
