/* bench_smp.c: time of one smp_sample call on a 248,320-id vocabulary (the
 * Qwen3.5/3.6 size), for several settings, beside llama.cpp's chain with the
 * same stages (filling its llama_token_data array from the logits, as
 * common_sampler does each token, then llama_sampler_apply) in the same
 * process.
 *
 * Logits: normal with sd 3 ("peaky") and sd 1 ("flat"), fixed seed; 64
 * tokens accepted into the penalty window where penalties are on. Each row
 * is the median and minimum over REPS calls after WARM warm-up calls (wall
 * clock). Built and run by bench/sampler/run.sh; not a test.
 */
#include "llama.h"
#include "sampler/sampler.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

#define N_VOCAB 248320
#define REPS 101
#define WARM 5

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void quiet_log(enum ggml_log_level level, const char *text, void *ud)
{
    (void)level; (void)text; (void)ud;
}

typedef struct { const char *name; smp_params p; } setting;

static void row(const char *dist, const setting *st, const float *l, llama_token_data *buf)
{
    static double t[REPS];
    const smp_params *p = &st->p;
    smp *s = NULL;
    q36_err err = { 0 };
    if (smp_new(p, N_VOCAB, &s, &err)) {
        fprintf(stderr, "smp_new: %s\n", err.msg);
        exit(1);
    }
    struct llama_sampler *c = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(c, llama_sampler_init_penalties(N_VOCAB, p->penalty_last_n, p->repeat_penalty,
                                                            p->frequency_penalty, p->presence_penalty));
    llama_sampler_chain_add(c, llama_sampler_init_top_k(p->top_k));
    llama_sampler_chain_add(c, llama_sampler_init_top_p(p->top_p, 0));
    llama_sampler_chain_add(c, llama_sampler_init_min_p(p->min_p, 0));
    llama_sampler_chain_add(c, llama_sampler_init_temp_ext(p->temp, 0.0f, 1.0f));
    llama_sampler_chain_add(c, llama_sampler_init_dist(p->seed));
    t_rng r = t_rng_named("bench/sampler/history");
    for (int i = 0; i < 64; i++) {
        int32_t id = (int32_t)(t_next(&r) % 4096);   /* small ids hold the repeats */
        smp_accept(s, id);
        llama_sampler_accept(c, id);
    }
    volatile int32_t sink = 0;
    for (int i = 0; i < WARM + REPS; i++) {
        double t0 = now();
        sink += smp_sample(s, l, N_VOCAB);
        if (i >= WARM)
            t[i - WARM] = now() - t0;
    }
    qsort(t, REPS, sizeof *t, cmp_d);
    double q_med = t[REPS / 2] * 1e6, q_min = t[0] * 1e6;
    for (int i = 0; i < WARM + REPS; i++) {
        double t0 = now();
        for (int32_t j = 0; j < N_VOCAB; j++)
            buf[j] = (llama_token_data){ j, l[j], 0.0f };
        llama_token_data_array cur = { buf, N_VOCAB, -1, false };
        llama_sampler_apply(c, &cur);
        sink += cur.data[cur.selected].id;
        if (i >= WARM)
            t[i - WARM] = now() - t0;
    }
    qsort(t, REPS, sizeof *t, cmp_d);
    printf("%-6s %-34s %10.1f %10.1f %12.1f %10.1f\n", dist, st->name, q_med, q_min,
           t[REPS / 2] * 1e6, t[0] * 1e6);
    (void)sink;
    llama_sampler_free(c);
    smp_free(s);
}

int main(void)
{
    llama_log_set(quiet_log, NULL);
    float *l = malloc(N_VOCAB * sizeof *l);
    llama_token_data *buf = malloc(N_VOCAB * sizeof *buf);
    smp_params d = smp_defaults();
    d.seed = 1;
    setting st[7];
    int n = 0;
    st[n] = (setting){ "greedy (temp 0)", d };                 st[n++].p.temp = 0.0f;
    st[n++] = (setting){ "defaults k40 p.95 m.05 t.8", d };
    st[n] = (setting){ "defaults + penalties", d };
    st[n].p.repeat_penalty = 1.1f; st[n].p.presence_penalty = 0.5f; st[n++].p.frequency_penalty = 0.1f;
    st[n] = (setting){ "k0 p.95 m.05 t.8 (min_p filter)", d }; st[n++].p.top_k = 0;
    st[n] = (setting){ "k0 p.95 m0 t.8 (top_p prefix)", d };
    st[n].p.top_k = 0; st[n++].p.min_p = 0.0f;
    st[n] = (setting){ "k0 p1 m0 t1 (full softmax)", d };
    st[n].p.top_k = 0; st[n].p.min_p = 0.0f; st[n].p.top_p = 1.0f; st[n++].p.temp = 1.0f;
    st[n] = (setting){ "k1000 p.95 m.05 t.8", d };             st[n++].p.top_k = 1000;

    printf("# one call on %d ids; %d calls after %d warm-up; microseconds\n", N_VOCAB, REPS, WARM);
    printf("%-6s %-34s %10s %10s %12s %10s\n", "logits", "setting", "q36 med", "q36 min",
           "llama med", "llama min");
    for (int di = 0; di < 2; di++) {
        double sd = di ? 1.0 : 3.0;
        t_rng r = t_rng_named(di ? "bench/sampler/flat" : "bench/sampler/peaky");
        for (int32_t i = 0; i < N_VOCAB; i++) {
            double u1 = t_uniform(&r) + 1e-7, u2 = t_uniform(&r);
            l[i] = (float)(sd * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
        }
        for (int i = 0; i < n; i++)
            row(di ? "flat" : "peaky", &st[i], l, buf);
    }
    free(buf);
    free(l);
    return 0;
}
