/* test_model_plan.c: the memory plan (q36_session_plan, q36_engine_plan)
 * counts the backend's scratch (be_cpu_scratch_bytes over the plan's batch
 * shape), whose attention part grows with the context, and the K/V and
 * state of every slot; q36_session_new and q36_engine_new hold an engine
 * to that plan's total. On a q36 synth model (qwen35, tiny), made with `$Q36
 * synth` (default ./q36) in a temporary folder. */
#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "include/q36.h"
#include "model/forward.h"
#include "backend/be_impl.h"

static void plan_case(const q36_model *m, int threads, int batch)
{
    char name[128];
    snprintf(name, sizeof name, "plan.backend_scratch_t%d_b%d", threads, batch);
    const model_hparams *hp = q36_model_hparams(m);
    q36_session_opts o = q36_session_opts_default();
    o.n_threads = threads;
    o.n_batch = batch;
    q36_mem_plan small, big;
    q36_err err = { 0 };
    if (q36_session_plan(m, 1000, &o, &small, &err) || q36_session_plan(m, 9000, &o, &big, &err)) {
        t_fail(name, "%s", err.msg);
        return;
    }
    /* everything else in the scratch is sized by the batch alone: what
     * the context adds to it is the attention's */
    plan_args a = { .n_ctx = 1000, .n_batch = batch, .n_slots = 1, .n_threads = threads,
                    .type_k = Q36_KV_F16, .type_v = Q36_KV_F16 };
    be_shape sh = model_plan_shape(hp, &a);
    const uint64_t a1 = be_cpu_scratch_bytes(&sh, threads);
    sh.n_ctx = 9000;
    const uint64_t a9 = be_cpu_scratch_bytes(&sh, threads);
    t_check(name,
            hp->n_attn_layers > 0 && a1 > 0 && a9 > a1 && small.scratch > a1 &&
                big.scratch - small.scratch == a9 - a1 && small.backend == a1 &&
                big.total == big.kv + big.recurrent + big.scratch,
            "attention layers %u, backend scratch %llu / %llu, plan scratch %llu / %llu",
            hp->n_attn_layers, (unsigned long long)a1, (unsigned long long)a9,
            (unsigned long long)small.scratch, (unsigned long long)big.scratch);
}

/* A session fits in exactly its plan's total and is refused one byte
 * below it. */
static void fit_case(const q36_model *m)
{
    q36_session_opts o = q36_session_opts_default();
    o.n_threads = 2;
    o.n_batch = 64;
    q36_mem_plan p;
    q36_err err = { 0 }, e2 = { 0 };
    if (q36_session_plan(m, 3000, &o, &p, &err)) {
        t_fail("plan.session_fits", "%s", err.msg);
        return;
    }
    q36_session *s = NULL, *s2 = NULL;
    o.max_bytes = p.total;
    int rc = q36_session_new(m, 3000, &o, &s, &err);
    o.max_bytes = p.total - 1;
    int rc2 = q36_session_new(m, 3000, &o, &s2, &e2);
    t_check("plan.session_fits", rc == 0 && s && rc2 == Q36_E_NOMEM && !s2, "rc %d (%s), %d (%s)",
            rc, err.msg, rc2, e2.msg);
    q36_session_free(s);
    q36_session_free(s2);
}

/* Slots multiply the K/V and the DeltaNet state and nothing else, and an
 * engine of 4 slots fits in its plan's total too. */
static void slots_case(const q36_model *m)
{
    q36_engine_opts o = q36_engine_opts_default();
    o.n_threads = 2;
    o.n_batch = 32;
    q36_mem_plan p1, p4;
    q36_err err = { 0 };
    o.n_slots = 1;
    int rc = q36_engine_plan(m, 500, &o, &p1, &err);
    o.n_slots = 4;
    rc |= q36_engine_plan(m, 500, &o, &p4, &err);
    t_check("plan.slots_multiply_state", rc == 0 && p4.kv == 4 * p1.kv &&
            p4.recurrent == 4 * p1.recurrent && p4.kv_per_token == p1.kv_per_token &&
            p4.scratch - p1.scratch == 3 * 4 * 4 /* the batch's runs: 3 more of 4 i32 */,
            "rc %d kv %llu / %llu, state %llu / %llu, scratch %llu / %llu", rc,
            (unsigned long long)p1.kv, (unsigned long long)p4.kv,
            (unsigned long long)p1.recurrent, (unsigned long long)p4.recurrent,
            (unsigned long long)p1.scratch, (unsigned long long)p4.scratch);
    q36_engine *e = NULL, *e2 = NULL;
    q36_err e2err = { 0 };
    o.max_bytes = p4.total;
    rc = q36_engine_new(m, 500, &o, &e, &err);
    o.max_bytes = p4.total - 1;
    int rc2 = q36_engine_new(m, 500, &o, &e2, &e2err);
    t_check("plan.engine_fits", rc == 0 && e && q36_engine_n_slots(e) == 4 && rc2 == Q36_E_NOMEM &&
            !e2, "rc %d (%s), %d (%s)", rc, err.msg, rc2, e2err.msg);
    q36_engine_free(e);
    q36_engine_free(e2);
}

/* The views a pass makes fit in what be_reserve set aside (max_views):
 * the view pool does not grow during a full pass with scattered rows out. */
static void views_case(const q36_model *m)
{
    q36_engine_opts o = q36_engine_opts_default();
    o.n_batch = 40;
    q36_engine *e = NULL;
    q36_err err = { 0 };
    if (q36_engine_new(m, 64, &o, &e, &err)) {
        t_fail("plan.views_reserved", "%s", err.msg);
        return;
    }
    int before = 0, after = 0;
    for (be_vblock *b = e->be->vblocks; b; b = b->next)
        before++;
    int32_t id[40], slot[40], pos[40], out[20];
    for (int i = 0; i < 40; i++) {
        id[i] = i % (int)e->hp->n_vocab;
        slot[i] = 0;
        pos[i] = i;
    }
    for (int i = 0; i < 20; i++)
        out[i] = 2 * i + 1;
    float *lg = malloc(sizeof(float) * 20 * e->hp->n_vocab);
    q36_batch b = { 40, id, slot, pos, 20, out };
    int rc = q36_engine_eval(e, &b, lg, NULL, &err);
    for (be_vblock *v = e->be->vblocks; v; v = v->next)
        after++;
    t_check("plan.views_reserved", rc == 0 && before > 0 && after == before,
            "rc %d (%s), view blocks %d before the pass, %d after", rc, err.msg, before, after);
    free(lg);
    q36_engine_free(e);
}

/* A backend that is not built in is refused by name, by the plan and by
 * engine creation. */
static void backend_case(const q36_model *m)
{
    q36_engine_opts o = q36_engine_opts_default();
    o.backend = "cuda9";
    q36_mem_plan p;
    q36_engine *e = NULL;
    q36_err e1 = { 0 }, e2 = { 0 };
    int rc1 = q36_engine_plan(m, 100, &o, &p, &e1);
    int rc2 = q36_engine_new(m, 100, &o, &e, &e2);
    o.backend = "cpu";
    q36_err e3 = { 0 };
    int rc3 = q36_engine_plan(m, 100, &o, &p, &e3);
    t_check("plan.unknown_backend", rc1 == Q36_E_ARG && rc2 == Q36_E_ARG && !e &&
            strstr(e1.msg, "cuda9") && strstr(e2.msg, "cuda9") && rc3 == 0,
            "rc %d (%s), %d (%s), cpu %d (%s)", rc1, e1.msg, rc2, e2.msg, rc3, e3.msg);
    q36_engine_free(e);
}

/* The mode's default: fast on a GPU, exact on the CPU; an explicit mode
 * stands whatever the device. */
static void mode_case(void)
{
    q36_engine_opts o = q36_engine_opts_default();
    const int dflt = o.fast;
    const int cpu = q36_opts_fast(&o);
    o.backend = "cpu";
    const int cpu2 = q36_opts_fast(&o);
    o.backend = "cuda";
    const int gpu = q36_opts_fast(&o);
    o.fast = 0;
    const int gpu_exact = q36_opts_fast(&o);
    o.backend = NULL;
    o.fast = 1;
    const int cpu_fast = q36_opts_fast(&o);
    t_check("plan.mode_default", dflt == -1 && !cpu && !cpu2 && gpu && !gpu_exact && cpu_fast,
            "default %d: cpu %d/%d, cuda %d, cuda exact %d, cpu fast %d", dflt, cpu, cpu2, gpu,
            gpu_exact, cpu_fast);
}

int main(void)
{
    mode_case();
    char dir[] = "/tmp/q36_plan_XXXXXX";
    if (!mkdtemp(dir)) {
        t_fail("plan.setup", "mkdtemp failed");
        return t_exit();
    }
    const char *q36 = getenv("Q36") ? getenv("Q36") : "./q36";
    char path[256], cmd[1024];
    snprintf(path, sizeof path, "%s/dense.gguf", dir);
    snprintf(cmd, sizeof cmd, "%s synth --arch qwen35 --preset tiny --seed 3 -o %s >/dev/null 2>&1",
             q36, path);
    q36_model *m = NULL;
    q36_err err = { 0 };
    if (system(cmd)) {
        t_fail("plan.setup", "q36 synth failed; is ./q36 built (or $Q36 set)?");
    } else if (q36_model_open(path, &m, &err)) {
        t_fail("plan.setup", "%s", err.msg);
    } else {
        plan_case(m, 1, 512);
        plan_case(m, 2, 512);
        plan_case(m, 2, 7);
        fit_case(m);
        slots_case(m);
        views_case(m);
        backend_case(m);
        q36_model_free(m);
    }
    unlink(path);
    rmdir(dir);
    return t_exit();
}
