/* cuda_prof.cu: the CUDA backend's per-op profile (be_profile_*, shown by
 * `q36 bench --profile -ngl 99`). While it is on, every kernel launch and
 * queued copy (CUDA_LAUNCHED, cuda_count_as) records an event on the stream
 * right after itself. The stream runs its work in order, so an op is
 * charged the device time from the event before it to its own: its run
 * time plus any idle gap the host left before it (inside a pass nothing
 * waits, the queue runs ahead of the device, and what gaps remain are the
 * launch latency that op cost). Events are read back when the table
 * fills and when profiling stops (the end of each profiled pass). A
 * profiled pass runs op by op: cuda_graph_begin records and replays no
 * graph while the profile is on. Rows are the kernels' launch names. */
#include "cuda.h"

#include <stdio.h>

#define PROF_EV  4096
#define PROF_OPS 64

struct cuda_prof {
    cudaEvent_t ev[PROF_EV];       /* ev[0]: the base (no op) */
    int16_t     op[PROF_EV];
    uint8_t     layer[PROF_EV];
    int         n, n_created;
    const char *name[PROF_OPS];
    uint64_t    calls[PROF_OPS], ns[PROF_OPS];
    int         n_ops;
    uint64_t    layer_ns[BE_LAYER_N];
    int         cur_layer;
};

static int op_index(cuda_prof *p, const char *what)
{
    for (int i = 0; i < p->n_ops; i++)
        if (p->name[i] == what || !strcmp(p->name[i], what))
            return i;
    if (p->n_ops == PROF_OPS)
        return PROF_OPS - 1;       /* the last row takes the rest */
    p->name[p->n_ops] = what;
    return p->n_ops++;
}

static bool record(cuda_ctx *c, int op)
{
    cuda_prof *p = c->prof;
    if (p->n == p->n_created) {
        if (cudaEventCreate(&p->ev[p->n]) != cudaSuccess) {
            cudaGetLastError();
            return false;
        }
        p->n_created++;
    }
    if (cudaEventRecord(p->ev[p->n], c->stream) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    p->op[p->n] = (int16_t)op;
    p->layer[p->n] = (uint8_t)p->cur_layer;
    p->n++;
    return true;
}

/* Charges the recorded events and keeps the last one as the new base. */
static void flush(cuda_ctx *c)
{
    cuda_prof *p = c->prof;
    if (p->n < 2)
        return;
    if (cudaEventSynchronize(p->ev[p->n - 1]) != cudaSuccess) {
        cudaGetLastError();
        p->n = 0;
        return;
    }
    for (int i = 1; i < p->n; i++) {
        float ms = 0;
        if (cudaEventElapsedTime(&ms, p->ev[i - 1], p->ev[i]) != cudaSuccess) {
            cudaGetLastError();
            continue;
        }
        const uint64_t ns = (uint64_t)((double)ms * 1e6);
        p->calls[p->op[i]]++;
        p->ns[p->op[i]] += ns;
        p->layer_ns[p->layer[i]] += ns;
    }
    cudaEvent_t last = p->ev[p->n - 1];
    p->ev[p->n - 1] = p->ev[0];
    p->ev[0] = last;
    p->n = 1;
}

void cuda_prof_mark(cuda_ctx *c, const char *what)
{
    if (c->gmode == GM_CAPTURE || !c->prof)
        return;
    if (c->prof->n == PROF_EV)
        flush(c);
    record(c, op_index(c->prof, what));
}

void cuda_prof_free(cuda_ctx *c)
{
    if (!c->prof)
        return;
    for (int i = 0; i < c->prof->n_created; i++)
        cudaEventDestroy(c->prof->ev[i]);
    free(c->prof);
    c->prof = NULL;
}

void cuda_prof_enable(be_ctx *be, int on)
{
    cuda_ctx *c = cuda_ctx_of(be);
    if (on && !c->prof && !(c->prof = (cuda_prof *)calloc(1, sizeof *c->prof)))
        return;                    /* no memory: no profile */
    if (on && !c->prof_on) {
        c->prof->n = 0;
        record(c, -1);             /* the base */
    } else if (!on && c->prof_on) {
        flush(c);
        c->prof->n = 0;            /* the time between passes is not charged */
    }
    c->prof_on = on != 0;
}

void cuda_prof_layer(be_ctx *be, enum be_layer_kind kind)
{
    cuda_ctx *c = cuda_ctx_of(be);
    if (c->prof)
        c->prof->cur_layer = (int)kind;
}

void cuda_prof_reset(be_ctx *be)
{
    cuda_ctx *c = cuda_ctx_of(be);
    if (!c->prof)
        return;
    memset(c->prof->calls, 0, sizeof c->prof->calls);
    memset(c->prof->ns, 0, sizeof c->prof->ns);
    memset(c->prof->layer_ns, 0, sizeof c->prof->layer_ns);
}

int cuda_prof_ops(const be_ctx *be, be_prof_row *rows, int cap)
{
    const cuda_prof *p = cuda_ctx_of((be_ctx *)be)->prof;
    int n = 0;
    for (int i = 0; p && i < p->n_ops && n < cap; i++) {
        if (!p->calls[i])
            continue;
        snprintf(rows[n].name, sizeof rows[n].name, "%s", p->name[i]);
        rows[n].calls = p->calls[i];
        rows[n].ns = p->ns[i];
        n++;
    }
    return n;
}

void cuda_prof_layers(const be_ctx *be, be_prof_row rows[BE_LAYER_N])
{
    const cuda_prof *p = cuda_ctx_of((be_ctx *)be)->prof;
    for (int i = 0; i < BE_LAYER_N; i++) {
        memset(&rows[i], 0, sizeof rows[i]);
        snprintf(rows[i].name, sizeof rows[i].name, "%s", be_layer_name((enum be_layer_kind)i));
        rows[i].ns = p ? p->layer_ns[i] : 0;
    }
}

/* ---- Q36_CUDA_KNOCK (cuda.h): which kernels launch one block. A kernel's
 * name is its identifier (the mangled name's first part: "k_matvec8" for
 * every instance of that template), matched whole against the list's
 * words; a word ~PART matches any kernel whose mangled name holds PART
 * ("~k_matvec8ILi14E": the Q6_K instances of k_matvec8). Answers are
 * kept per kernel; launches come from one thread a context, but contexts
 * may live on several, hence the lock. */
#include <pthread.h>
#include <string.h>

const char *cuda_knock;
bool cuda_drop;
int cuda_pad;
bool cuda_loose;

/* Q36_CUDA_LOOSE's table: labels (string constants, compared by text) and
 * their counts; labels past LOOSE_MAX fall into one "(other)" row */
#define LOOSE_MAX 96
static struct { const char *what; unsigned long long n; } loose[LOOSE_MAX];
static int n_loose;
static unsigned long long loose_other;
static pthread_mutex_t loose_mu = PTHREAD_MUTEX_INITIALIZER;

void cuda_loose_count(const char *what)
{
    pthread_mutex_lock(&loose_mu);
    int i = 0;
    while (i < n_loose && strcmp(loose[i].what, what))
        i++;
    if (i < n_loose)
        loose[i].n++;
    else if (n_loose < LOOSE_MAX)
        loose[n_loose].what = what, loose[n_loose++].n = 1;
    else
        loose_other++;
    pthread_mutex_unlock(&loose_mu);
}

static void loose_print(void)
{
    pthread_mutex_lock(&loose_mu);
    unsigned long long all = loose_other;
    for (int i = 0; i < n_loose; i++)
        all += loose[i].n;
    fprintf(stderr, "q36: Q36_CUDA_LOOSE: %llu launches and copies outside recorded passes\n", all);
    for (int i = 0; i < n_loose; i++)
        fprintf(stderr, "q36:   %12llu  %s\n", loose[i].n, loose[i].what);
    if (loose_other)
        fprintf(stderr, "q36:   %12llu  (other)\n", loose_other);
    pthread_mutex_unlock(&loose_mu);
}

static bool knock_listed(const char *name)
{
    const size_t nn = strlen(name);
    const char *id = name;                  /* _Z <length> <identifier> ...: the identifier */
    size_t idn = nn;
    if (!strncmp(name, "_Z", 2)) {
        char *end;
        const unsigned long len = strtoul(name + 2, &end, 10);
        if (end != name + 2 && len <= strlen(end))
            id = end, idn = len;
    }
    for (const char *w = cuda_knock; *w;) {
        const size_t m = strcspn(w, ",");
        if ((m == 3 && !strncmp(w, "all", 3)) || (m == idn && !strncmp(w, id, idn)) ||
            (*w == '~' && m > 1 && memmem(name, nn, w + 1, m - 1)))
            return true;
        w += m + (w[m] == ',');
    }
    return false;
}

/* The switches of cuda.h's diagnostics, read when a context is made
 * (process-wide, as cuda_pdl) */
void cuda_diag_init(void)
{
    const char *kn = getenv("Q36_CUDA_KNOCK"), *dr = getenv("Q36_CUDA_DROP");
    cuda_drop = dr && *dr;
    if (cuda_drop)
        kn = dr;
    cuda_knock = kn && *kn ? kn : NULL;
    if (cuda_knock)
        fprintf(stderr, "q36: %s=%s: those kernels %s, results are wrong\n",
                cuda_drop ? "Q36_CUDA_DROP" : "Q36_CUDA_KNOCK", kn,
                cuda_drop ? "are not launched" : "run one block");
    const char *pad = getenv("Q36_CUDA_PAD");
    cuda_pad = pad ? atoi(pad) : 0;
    cuda_pad = cuda_pad < 0 ? 0 : cuda_pad > 16 ? 16 : cuda_pad;
    static bool loose_at_exit;
    cuda_loose = cuda_env_is("Q36_CUDA_LOOSE", "1");
    if (cuda_loose && !loose_at_exit)
        loose_at_exit = atexit(loose_print) == 0;
}

bool cuda_knocked(const void *fn)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static const void *seen[256];
    static bool ans[256];
    static int n_seen;
    bool r = false;
    pthread_mutex_lock(&mu);
    int i = 0;
    while (i < n_seen && seen[i] != fn)
        i++;
    if (i < n_seen) {
        r = ans[i];
    } else {
        const char *name = NULL;
        r = cudaFuncGetName(&name, fn) == cudaSuccess && name && knock_listed(name);
        cudaGetLastError();
        if (n_seen < 256)
            seen[n_seen] = fn, ans[n_seen++] = r;
    }
    pthread_mutex_unlock(&mu);
    return r;
}
