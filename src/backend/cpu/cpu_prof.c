/* cpu_prof.c: the per-op timing table of the CPU backend (backend.h,
 * "profiling"): the switch, the current layer kind, the clock and the
 * names of the table's rows (cpu_internal.h, enum cpu_prof_op). It owns no op; each op brackets itself with
 * CPU_PROF_BEGIN/END (cpu_internal.h). */
#include "cpu.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../../quant/types.h"

uint64_t cpu_prof_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void cpu_prof_add_time(be_ctx *be, int row, uint64_t t0)
{
    cpu_ctx *c = cpu_ctx_of(be);
    if (!c->prof)
        return;
    const uint64_t dt = cpu_prof_now() - t0;
    c->prof_tab.ns[row] += dt;
    c->prof_tab.layer_ns[c->prof_layer] += dt;
}

void cpu_prof_add(be_ctx *be, int row, uint64_t t0)
{
    cpu_ctx *c = cpu_ctx_of(be);
    cpu_prof_add_time(be, row, t0);
    c->prof_tab.calls[row]++;
    c->prof_tab.layer_calls[c->prof_layer]++;
}

void cpu_profile_enable(be_ctx *be, int on) { cpu_ctx_of(be)->prof = on != 0; }

void cpu_profile_layer(be_ctx *be, enum be_layer_kind kind) { cpu_ctx_of(be)->prof_layer = (int)kind; }

void cpu_profile_reset(be_ctx *be)
{
    memset(&cpu_ctx_of(be)->prof_tab, 0, sizeof cpu_ctx_of(be)->prof_tab);
}

static void op_name(int row, char *buf, size_t cap)
{
    static const char *const fixed[BE_PROF_FIXED] = {
        [BE_PROF_GET_ROWS] = "get rows (embedding)", [BE_PROF_COPY] = "copy",
        [BE_PROF_IO] = "read/write/zero", [BE_PROF_RMS_NORM] = "rms norm",
        [BE_PROF_L2_NORM] = "l2 norm", [BE_PROF_ADD_MUL] = "add/mul",
        [BE_PROF_ACT] = "silu/sigmoid/swiglu", [BE_PROF_DELTANET_GATES] = "deltanet gates",
        [BE_PROF_ROPE] = "rope", [BE_PROF_KV_STORE] = "kv store",
        [BE_PROF_ATTENTION] = "attention", [BE_PROF_CONV] = "ssm conv",
        [BE_PROF_DELTANET] = "deltanet", [BE_PROF_DELTANET_CHUNKED] = "deltanet (chunked)",
        [BE_PROF_ROUTE] = "moe route", [BE_PROF_COMBINE] = "moe combine",
        [BE_PROF_ARGMAX] = "argmax",
        [BE_PROF_TOPK] = "topk",
    };
    if (row < 0 || row >= BE_PROF_ROWS)
        snprintf(buf, cap, "?");
    else if (row < BE_PROF_FIXED)
        snprintf(buf, cap, "%s", fixed[row]);
    else if (row < BE_PROF_FIXED + BE_PROF_NTYPES)
        snprintf(buf, cap, "matmul %s", quant_type_name((uint32_t)(row - BE_PROF_FIXED)));
    else
        snprintf(buf, cap, "expert matmul %s",
                 quant_type_name((uint32_t)(row - BE_PROF_FIXED - BE_PROF_NTYPES)));
}

int cpu_profile_ops(const be_ctx *be, be_prof_row *rows, int cap)
{
    const cpu_profile *t = &cpu_ctx_of(be)->prof_tab;
    int n = 0;
    for (int r = 0; r < BE_PROF_ROWS && n < cap; r++) {
        if (!t->calls[r])
            continue;
        op_name(r, rows[n].name, sizeof rows[n].name);
        rows[n].calls = t->calls[r];
        rows[n].ns = t->ns[r];
        n++;
    }
    return n;
}

void cpu_profile_layers(const be_ctx *be, be_prof_row rows[BE_LAYER_N])
{
    const cpu_profile *t = &cpu_ctx_of(be)->prof_tab;
    for (int k = 0; k < BE_LAYER_N; k++) {
        snprintf(rows[k].name, sizeof rows[k].name, "%s", be_layer_name((enum be_layer_kind)k));
        rows[k].calls = t->layer_calls[k];
        rows[k].ns = t->layer_ns[k];
    }
}
