/* test_model_plan.c: the session memory plan (q36_session_plan) counts
 * the attention's per-thread scratch (be_attention_scratch_bytes), which
 * grows with the context, and q36_session_new holds the session to that
 * plan's total. On a q36 synth model (qwen35, tiny), made with `$Q36
 * synth` (default ./q36) in a temporary folder. */
#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "include/q36.h"
#include "model/hparams.h"

static void plan_case(const q36_model *m, int threads, int batch)
{
    char name[128];
    snprintf(name, sizeof name, "plan.attn_scratch_t%d_b%d", threads, batch);
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
    const uint64_t a1 = be_attention_scratch_bytes(1000, batch, hp->n_head, hp->n_head_kv,
                                                   hp->head_dim, threads);
    const uint64_t a9 = be_attention_scratch_bytes(9000, batch, hp->n_head, hp->n_head_kv,
                                                   hp->head_dim, threads);
    t_check(name,
            hp->n_attn_layers > 0 && a1 > 0 && a9 > a1 && small.scratch > a1 &&
                big.scratch - small.scratch == a9 - a1 &&
                big.total == big.kv + big.recurrent + big.scratch,
            "attention layers %u, attention scratch %llu / %llu, plan scratch %llu / %llu",
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

int main(void)
{
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
        q36_model_free(m);
    }
    unlink(path);
    rmdir(dir);
    return t_exit();
}
