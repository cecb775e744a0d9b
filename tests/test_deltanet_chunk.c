/* test_deltanet_chunk.c: the chunked gated delta rule (MODEL.md §2.6)
 * against the true recurrence (double precision, tests/deltanet_ref.h,
 * which derives the bound B) on real and odd shapes: head dims 32 to 256,
 * runs shorter than a chunk, not a multiple of it, several runs in one
 * batch on their own slots, non-zero initial states, strong, weak and
 * mixed gates. Checked:
 *  - the CPU backend's be_deltanet_chunked;
 *  - in a build with CUDA, the host emulation of the CUDA backend's
 *    chunked kernels (cuda_chunk.h): the kernels' own phase functions run
 *    on the CPU, so their index arithmetic, scratch layout and algebra are
 *    checked on a machine without a GPU (the GPU itself runs them in
 *    tests/gpu/test_backend_cuda.c), including passes split at and off a
 *    chunk boundary, and the states the kernels write at every chunk
 *    boundary (what a prefix cache keeps); with the prep phases of
 *    k_chunk_prep and (cuda_emulated_pb) of k_chunk_prep_pb.
 * The f32 recurrence (be_deltanet) is reported beside them. */
#include "test.h"
#include "deltanet_ref.h"

#include <stdbool.h>

#include "backend/backend.h"
#ifdef Q36_CUDA
#include "backend/cuda/cuda_chunk.h"
#endif

static be_ctx *cpu;

enum impl { CPU_CHUNKED, CPU_RECURRENT, CUDA_EMULATED, CUDA_EMULATED_PB };
static const char *impl_name[] = { "cpu_chunked", "cpu_recurrent", "cuda_emulated",
                                   "cuda_emulated_pb" };

/* Runs one implementation over the case's rows with the given runs (for
 * the CPU backend: laid end to end from row 0), S in and out. */
static int run_impl(enum impl m, const dn_case *c, const int32_t *runs, int n_seq, float *out,
                    float *S)
{
    const int64_t T = c->T, Hv = c->Hv, dk = c->dk, nS = c->n_slots * Hv;
    if (m == CUDA_EMULATED || m == CUDA_EMULATED_PB) {
#ifdef Q36_CUDA
        return cuda_chunk_emulate(c->qkv, c->W, c->g, Hv, c->beta, Hv, S, dk * dk, c->Hk, Hv, dk,
                                  runs, n_seq, T, out, Hv * dk, NULL, m == CUDA_EMULATED_PB);
#else
        return -1;
#endif
    }
    be_tensor *qt = be_tensor_new(cpu, T, c->W), *gt = be_tensor_new(cpu, T, Hv);
    be_tensor *bt = be_tensor_new(cpu, T, Hv), *St = be_tensor_new(cpu, nS, dk * dk);
    be_tensor *ot = be_tensor_new(cpu, T, Hv * dk);
    be_write(cpu, qt, 0, T, c->qkv);
    be_write(cpu, gt, 0, T, c->g);
    be_write(cpu, bt, 0, T, c->beta);
    be_write(cpu, St, 0, nS, S);
    be_batch b;
    be_seq seq[DN_MAX_SEQ];
    for (int s = 0; s < n_seq; s++)
        seq[s] = (be_seq){ runs[4 * s], runs[4 * s + 1], runs[4 * s + 2], runs[4 * s + 3] };
    int rc = be_batch_init(cpu, &b, T, n_seq, 1 << 20, NULL);
    if (!rc) {
        be_batch_set(cpu, &b, n_seq, seq);
        if (m == CPU_CHUNKED)
            be_deltanet_chunked(cpu, qt, gt, bt, St, c->Hk, Hv, dk, &b, ot);
        else
            be_deltanet(cpu, qt, gt, bt, St, c->Hk, Hv, dk, &b, ot);
        be_read(cpu, ot, 0, T, out);
        be_read(cpu, St, 0, nS, S);
        be_batch_free(cpu, &b);
    }
    be_tensor *all[] = { qt, gt, bt, St, ot };
    for (int i = 0; i < 5; i++)
        be_tensor_free(cpu, all[i]);
    return rc;
}

static const char *gates_name(int gates)
{
    return gates == DN_GATES_STRONG ? "strong" : gates == DN_GATES_WEAK ? "weak" : "mixed";
}

static double *to_double(const float *x, int64_t n)
{
    double *d = malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++)
        d[i] = x[i];
    return d;
}

static float *copy_f(const float *x, int64_t n)
{
    float *f = malloc(sizeof(float) * (size_t)(n + 1));
    memcpy(f, x, sizeof(float) * (size_t)n);
    return f;
}

/* One case, every implementation, outputs and final states against B. */
static void test_case(int64_t Hk, int64_t Hv, int64_t dk, int n_seq, const int *len, int gates,
                      float s0)
{
    char name[160];
    int n = snprintf(name, sizeof name, "deltanet_chunk.hk%lld_hv%lld_dk%lld_%s_s%g_t", (long long)Hk,
                     (long long)Hv, (long long)dk, gates_name(gates), s0);
    for (int i = 0; i < n_seq && n < (int)sizeof name - 8; i++)
        n += snprintf(name + n, sizeof name - (size_t)n, i ? "+%d" : "%d", len[i]);
    dn_case c;
    dn_case_make(&c, name, Hk, Hv, dk, n_seq, len, gates, s0);
    const int64_t no = c.T * Hv * dk, ns = c.n_slots * Hv * dk * dk;
    double *out_t = calloc((size_t)no + 1, sizeof(double)), *S_t = to_double(c.S0, ns);
    const double M = dn_truth(&c, c.runs, n_seq, out_t, S_t);
    const double B = dn_bound(dk, dn_max_len(c.runs, n_seq), M);
#ifdef Q36_CUDA
    const int n_impl = 4;
#else
    const int n_impl = 2;
#endif
    for (int m = 0; m < n_impl; m++) {
        char nm[200];
        snprintf(nm, sizeof nm, "%s.%s", name, impl_name[m]);
        float *out = calloc((size_t)no + 1, sizeof(float)), *S = copy_f(c.S0, ns);
        const int rc = run_impl((enum impl)m, &c, c.runs, n_seq, out, S);
        int64_t io, is;
        const double wo = dn_worst(out, out_t, no, B, &io), ws = dn_worst(S, S_t, ns, B, &is);
        if (m == CPU_RECURRENT)
            printf("# %s (reported): worst output error %.3g of B, state %.3g of B\n", nm, wo, ws);
        else if (rc)
            t_fail(nm, "the implementation returned %d", rc);
        else
            t_check(nm, wo <= 1.0 && ws <= 1.0, "output %lld: %.9g, true %.9g (%.3g of B); state "
                    "%lld: %.9g, true %.9g (%.3g of B); B = %.3g, M = %.3g", (long long)io,
                    out[io], out_t[io], wo, (long long)is, S[is], S_t[is], ws, B, M);
        if (m != CPU_RECURRENT)
            printf("#   worst output error %.3g of B, state %.3g of B (B = %.3g, M = %.3g)\n", wo,
                   ws, B, M);
        free(out);
        free(S);
    }
    free(out_t);
    free(S_t);
    dn_case_free(&c);
}

#ifdef Q36_CUDA
/* One run of len rows as two passes cut at `cut` (the emulated CUDA
 * kernels): the state after the first pass against the true state at the
 * cut, then every output and the final state against one true pass. */
static void test_split(int64_t Hk, int64_t Hv, int64_t dk, int len, int cut, int gates)
{
    char name[160];
    snprintf(name, sizeof name, "deltanet_chunk.split_hk%lld_hv%lld_dk%lld_%s_t%d_at%d.cuda_emulated",
             (long long)Hk, (long long)Hv, (long long)dk, gates_name(gates), len, cut);
    dn_case c;
    dn_case_make(&c, name, Hk, Hv, dk, 1, &len, gates, 0.3f);
    const int64_t no = c.T * Hv * dk, ns = c.n_slots * Hv * dk * dk;
    const int32_t slot = c.runs[0];
    const int32_t r1[4] = { slot, 0, cut, 7 }, r2[4] = { slot, cut, len - cut, 7 + cut };
    double *out_t = calloc((size_t)no + 1, sizeof(double)), *S_t = to_double(c.S0, ns);
    double *out_c = calloc((size_t)no + 1, sizeof(double)), *S_c = to_double(c.S0, ns);
    const double M = dn_truth(&c, c.runs, 1, out_t, S_t);
    dn_truth(&c, r1, 1, out_c, S_c);
    const double B = dn_bound(dk, len, M);
    float *out = calloc((size_t)no + 1, sizeof(float)), *S = copy_f(c.S0, ns);
    int rc = cuda_chunk_emulate(c.qkv, c.W, c.g, Hv, c.beta, Hv, S, dk * dk, Hk, Hv, dk, r1, 1,
                                c.T, out, Hv * dk, NULL, 0);
    int64_t ic, io, is;
    const double wc = dn_worst(S, S_c, ns, B, &ic);
    rc = rc ? rc : cuda_chunk_emulate(c.qkv, c.W, c.g, Hv, c.beta, Hv, S, dk * dk, Hk, Hv, dk, r2,
                                      1, c.T, out, Hv * dk, NULL, 0);
    const double wo = dn_worst(out, out_t, no, B, &io), ws = dn_worst(S, S_t, ns, B, &is);
    if (rc)
        t_fail(name, "the emulation returned %d", rc);
    else
        t_check(name, wc <= 1.0 && wo <= 1.0 && ws <= 1.0, "state at the cut %.3g of B (element "
                "%lld), outputs %.3g (row-major element %lld), final state %.3g of B", wc,
                (long long)ic, wo, (long long)io, ws);
    printf("#   state at the cut %.3g of B, outputs %.3g, final state %.3g (B = %.3g)\n", wc, wo,
           ws, B);
    free(out); free(S); free(out_t); free(S_t); free(out_c); free(S_c);
    dn_case_free(&c);
}
#endif

#ifdef Q36_CUDA
/* Two runs in one batch through the emulated kernels with the
 * checkpoints on: the state after every chunk of each run against the
 * true state after that many rows. */
static void test_checkpoints(int64_t Hk, int64_t Hv, int64_t dk, int gates)
{
    char name[128];
    snprintf(name, sizeof name, "deltanet_chunk.checkpoints_hk%lld_hv%lld_dk%lld_%s_t200+70"
             ".cuda_emulated", (long long)Hk, (long long)Hv, (long long)dk, gates_name(gates));
    const int len[2] = { 200, 70 }, C_max = 4;
    dn_case c;
    dn_case_make(&c, name, Hk, Hv, dk, 2, len, gates, 0.3f);
    const int64_t no = c.T * Hv * dk, ns = c.n_slots * Hv * dk * dk, st = dk * dk;
    double *out_t = calloc((size_t)no + 1, sizeof(double)), *S_t = to_double(c.S0, ns);
    const double B = dn_bound(dk, 200, dn_truth(&c, c.runs, 2, out_t, S_t));
    float *out = calloc((size_t)no + 1, sizeof(float)), *S = copy_f(c.S0, ns);
    float *ck = malloc(sizeof(float) * (size_t)(2 * C_max * Hv * st));
    for (int64_t i = 0; i < 2 * C_max * Hv * st; i++)
        ck[i] = NAN;
    int rc = cuda_chunk_emulate(c.qkv, c.W, c.g, Hv, c.beta, Hv, S, st, Hk, Hv, dk, c.runs, 2, c.T,
                                out, Hv * dk, ck, 0);
    double worst = 0;
    int n_ck = 0;
    for (int s = 0; s < 2 && !rc; s++)
        for (int ch = 0; ch * 64 < len[s]; ch++) {
            const int rows = (ch + 1) * 64 < len[s] ? (ch + 1) * 64 : len[s];
            const int32_t r1[4] = { c.runs[4 * s], c.runs[4 * s + 1], rows, c.runs[4 * s + 3] };
            double *o = calloc((size_t)no + 1, sizeof(double)), *Sx = to_double(c.S0, ns);
            dn_truth(&c, r1, 1, o, Sx);
            int64_t at;
            for (int64_t h = 0; h < Hv; h++)
                worst = fmax(worst, dn_worst(ck + ((int64_t)(s * C_max + ch) * Hv + h) * st,
                                             Sx + ((int64_t)c.runs[4 * s] * Hv + h) * st, st, B, &at));
            n_ck++;
            free(o);
            free(Sx);
        }
    if (rc)
        t_fail(name, "the emulation returned %d", rc);
    else
        t_check(name, worst <= 1.0 && n_ck == 6, "%d checkpoints, worst %.3g of B", n_ck, worst);
    printf("#   %d checkpoints, worst error %.3g of B\n", n_ck, worst);
    free(out); free(S); free(ck); free(out_t); free(S_t);
    dn_case_free(&c);
}
#endif

int main(void)
{
    q36_err err = { 0 };
    if (be_cpu_new(1, &cpu, &err)) {
        t_fail("deltanet_chunk.cpu_new", "%s", err.msg);
        return t_exit();
    }
    const int l1[] = { 1 }, l5[] = { 5 }, l63[] = { 63 }, l64[] = { 64 }, l65[] = { 65 },
              l200[] = { 200 }, l3[] = { 7, 1, 130 }, l4[] = { 64, 3, 129, 40 };
    /* the Qwen3.5/3.6 geometry: 16 key heads, 32 value heads, dk 128 */
    test_case(16, 32, 128, 1, l65, DN_GATES_MIXED, 0.1f);
    /* lengths around a chunk */
    test_case(2, 4, 128, 1, l1, DN_GATES_MIXED, 0.1f);
    test_case(2, 4, 128, 1, l5, DN_GATES_MIXED, 0.1f);
    test_case(2, 4, 128, 1, l63, DN_GATES_MIXED, 0.1f);
    test_case(2, 4, 128, 1, l64, DN_GATES_MIXED, 0.1f);
    test_case(2, 2, 128, 1, l200, DN_GATES_MIXED, 0.1f);
    /* head dims, several runs, gates, initial states */
    test_case(2, 4, 64, 3, l3, DN_GATES_MIXED, 0.1f);
    test_case(1, 3, 64, 4, l4, DN_GATES_STRONG, 1.0f);
    test_case(1, 3, 64, 4, l4, DN_GATES_WEAK, 0.3f);
    test_case(3, 3, 32, 3, l3, DN_GATES_WEAK, 0.0f);
    test_case(1, 2, 256, 1, l65, DN_GATES_MIXED, 0.1f);
    test_case(2, 4, 128, 3, l3, DN_GATES_STRONG, 0.3f);
#ifdef Q36_CUDA
    test_split(2, 4, 128, 200, 128, DN_GATES_MIXED);
    test_split(2, 2, 64, 150, 100, DN_GATES_WEAK);
    test_split(1, 2, 128, 70, 64, DN_GATES_STRONG);
    test_checkpoints(2, 4, 128, DN_GATES_MIXED);
    test_checkpoints(1, 2, 64, DN_GATES_WEAK);
#else
    printf("# built without CUDA: the emulated CUDA kernels are not checked\n");
#endif
    be_free(cpu);
    return t_exit();
}
