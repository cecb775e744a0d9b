/* cpu_prof.c: the per-op timing table of the CPU backend (backend.h,
 * "profiling"): the switch, the current layer kind, the clock and the
 * names of the table's rows. It owns no op; each op brackets itself with
 * CPU_PROF_BEGIN/END (cpu_internal.h). */
#include "cpu_internal.h"

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

void cpu_prof_add(be_ctx *be, int row, uint64_t t0)
{
    uint64_t dt = cpu_prof_now() - t0;
    be->prof_tab.calls[row]++;
    be->prof_tab.ns[row] += dt;
    be->prof_tab.layer_calls[be->prof_layer]++;
    be->prof_tab.layer_ns[be->prof_layer] += dt;
}

void be_profile_enable(be_ctx *be, int on) { be->prof = on != 0; }

void be_profile_layer(be_ctx *be, enum be_layer_kind kind) { be->prof_layer = (int)kind; }

const be_profile *be_profile_get(const be_ctx *be) { return &be->prof_tab; }

void be_profile_reset(be_ctx *be) { memset(&be->prof_tab, 0, sizeof be->prof_tab); }

void be_profile_op_name(int row, char *buf, size_t cap)
{
    static const char *const fixed[BE_PROF_FIXED] = {
        [BE_PROF_GET_ROWS] = "get rows (embedding)", [BE_PROF_COPY] = "copy",
        [BE_PROF_IO] = "read/write/zero", [BE_PROF_RMS_NORM] = "rms norm",
        [BE_PROF_L2_NORM] = "l2 norm", [BE_PROF_ADD_MUL] = "add/mul",
        [BE_PROF_ACT] = "silu/sigmoid/swiglu", [BE_PROF_GDN_GATES] = "deltanet gates",
        [BE_PROF_ROPE] = "rope", [BE_PROF_KV_STORE] = "kv store",
        [BE_PROF_ATTENTION] = "attention", [BE_PROF_CONV] = "ssm conv",
        [BE_PROF_DELTA] = "delta rule", [BE_PROF_DELTA_CHUNKED] = "delta rule (chunked)",
        [BE_PROF_ROUTE] = "moe route", [BE_PROF_COMBINE] = "moe combine",
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

const char *be_layer_name(enum be_layer_kind kind)
{
    static const char *const n[BE_LAYER_N] = { "head/embedding", "deltanet", "attention",
                                               "ffn/moe" };
    return (unsigned)kind < BE_LAYER_N ? n[kind] : "?";
}
