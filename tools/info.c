/* info.c: `q36 info`: what a GGUF holds: architecture, the geometry with the
 * key (or default) behind each value, the parameter count as an exact integer
 * (llama.cpp's llama_model_n_params counts the same elements), the tensor
 * table and, with -c N, the memory plan for a context of N tokens. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "../src/backend/backend.h"
#include "../src/gguf/gguf.h"
#include "../src/include/q36.h"
#include "../src/model/model.h"
#include "../src/model/hparams.h"
#include "../src/quant/quant.h"
#include "../src/quant/types.h"

static void usage(FILE *o)
{
    fprintf(o,
"usage: q36 info [-m MODEL.gguf] [-c N] [-np N] [-ctk T -ctv T] [-ngl N] [--device D] [--tensors]\n"
"                [--keys] [--dump TENSOR -o OUT.f32]\n"
"\n"
"Prints the architecture, the geometry (each value with the GGUF key it came\n"
"from, or the default used when the key is absent), the parameter count, the\n"
"tensor types and total bytes, and the memory an engine of N slots of a\n"
"context of N tokens each needs (what q36_engine_new allocates).\n"
"\n"
"  -m FILE     model (default: the embedded default model, build/default.gguf)\n"
"  -c N        context length of a slot, for the memory plan (default: 4096)\n"
"  -np N       slots (sequences held at once) for the memory plan (default: 1)\n"
"  -ctk T -ctv T  K/V cache types for the memory plan: f16 (default), f32, q8_0\n"
"  --tensors   list every tensor (name, type, shape, bytes)\n"
"  --keys      list every metadata key with its type and value (arrays abbreviated)\n"
"  --dump T    write tensor T dequantized to float32 (row-major, ne0 fastest) to -o OUT;\n"
"              prints its shape and type and nothing else\n"
"%s"
"              with a GPU: the GPU memory plan too (weights uploaded, K/V, state,\n"
"              scratch against the device's free memory)\n", cli_device_help);
}

static void print_value(const gguf_file *f, const gguf_value *v)
{
    int64_t i;
    double d;
    uint64_t n;
    const char *s;
    switch (v->type) {
    case GGUF_T_STR:
        s = gguf_value_str(v, &n);
        printf("\"%.*s%s\"", (int)(n > 60 ? 60 : n), s, n > 60 ? "..." : "");
        break;
    case GGUF_T_F32: case GGUF_T_F64:
        gguf_value_float(v, &d);
        printf("%g", d);
        break;
    case GGUF_T_ARR:
        printf("%s[%" PRIu64 "]", gguf_vtype_name(v->elem), v->n);
        if (v->elem != GGUF_T_STR && v->elem != GGUF_T_ARR && v->n <= 8) {
            printf(" =");
            for (uint64_t k = 0; k < v->n; k++) {
                if (gguf_arr_int(f, v, k, &i) == 0)
                    printf(" %" PRId64, i);
                else if (gguf_arr_float(f, v, k, &d) == 0)
                    printf(" %g", d);
            }
        }
        break;
    default:
        if (gguf_value_int(v, &i) == 0)
            printf("%" PRId64, i);
        else
            printf("?");
    }
}

/* The memory plan of an engine of n_slots slots of n_ctx tokens, as
 * q36_engine_new computes, checks and allocates it (K/V types tk, tv, the
 * default batch). */
static void memory_plan(const q36_model *m, uint64_t n_ctx, int64_t n_slots, int tk, int tv)
{
    q36_err err = { 0 };
    q36_mem_plan p;
    q36_engine_opts o = q36_engine_opts_default();
    o.n_slots = (int)n_slots;
    o.type_k = tk;
    o.type_v = tv;
    if (q36_engine_plan(m, (int)n_ctx, &o, &p, &err)) {
        printf("memory plan: %s\n", err.msg);
        return;
    }
    const model_hparams *hp = q36_model_hparams(m);
    printf("memory plan for -c %" PRIu64 " -np %" PRId64 " (K %s, V %s, q36_engine_plan):\n", n_ctx,
           n_slots, q36_kv_type_name(tk), q36_kv_type_name(tv));
    printf("  weights (mmap, not copied) %10.1f MiB\n", p.weights / 1048576.0);
    printf("  K/V cache                  %10.1f MiB  (%" PRIu64 " B/token a slot, %u attention layers)\n",
           p.kv / 1048576.0, p.kv_per_token, hp->n_attn_layers);
    printf("  DeltaNet state             %10.1f MiB  (%u layers: conv tails + state matrices)\n",
           p.recurrent / 1048576.0, hp->n_layer - hp->n_attn_layers);
    printf("  scratch                    %10.1f MiB  (of which the backend's own %.1f MiB)\n",
           p.scratch / 1048576.0, p.backend / 1048576.0);
    printf("  allocated in total         %10.1f MiB  (+ the mapped weights)\n", p.total / 1048576.0);
    const gguf_file *f = q36_model_gguf(m);
    const gguf_tensor *head = gguf_find_tensor(f, "output.weight");
    const uint64_t hs = be_cpu_head_screen_bytes(head ? head : gguf_find_tensor(f, "token_embd.weight"));
    if (hs)
        printf("  + on the CPU, when greedy or top-k steps first take the screen: %.1f MiB (a copy "
               "of the Q8_0 head: src/backend/cpu/cpu_head.c; Q36_CPU_HEADSCREEN=0 makes none)\n",
               hs / 1048576.0);
}

/* Writes tensor `name` of f as float32 rows to `out`, one row at a time. */
static int dump_tensor(const gguf_file *f, const char *name, const char *out, q36_err *err)
{
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t)
        return q36_err_set(err, Q36_E_ARG, "%s: no tensor named '%s' (q36 info --tensors lists them)",
                           gguf_path(f), name);
    uint64_t ne0 = t->ne[0], rows = gguf_tensor_nelements(t) / ne0;
    uint64_t row_bytes = quant_row_bytes(t->type, ne0);
    float *row = malloc(ne0 * sizeof *row);
    FILE *fp = fopen(out, "wb");
    int rc = 0;
    if (!row || !fp) {
        rc = q36_err_set(err, Q36_E_IO, "%s: cannot write: %s", out, !fp ? strerror(errno) : "out of memory");
        goto done;
    }
    for (uint64_t r = 0; r < rows && rc == 0; r++) {
        if (quant_dequant_row(t->type, (const uint8_t *)t->data + r * row_bytes, row, (int64_t)ne0))
            rc = q36_err_set(err, Q36_E_UNSUP, "%s: tensor '%s': q36 cannot dequantize type %s",
                             gguf_path(f), name, quant_type_name(t->type));
        else if (fwrite(row, sizeof *row, ne0, fp) != ne0)
            rc = q36_err_set(err, Q36_E_IO, "%s: write failed: %s", out, strerror(errno));
    }
    if (rc == 0)
        printf("%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %s\n", t->ne[0], t->ne[1], t->ne[2],
               t->ne[3], quant_type_name(t->type));
done:
    if (fp && fclose(fp) != 0 && rc == 0)
        rc = q36_err_set(err, Q36_E_IO, "%s: write failed: %s", out, strerror(errno));
    if (rc && fp)
        remove(out);
    free(row);
    return rc;
}

int cmd_info(int argc, char **argv)
{
    const char *path = NULL, *dump = NULL, *out = NULL;
    int64_t n_ctx = 4096, n_slots = 1;
    int tk = Q36_KV_F16, tv = Q36_KV_F16;
    int list_tensors = 0, list_keys = 0, rc, fast = -1;
    const char *backend = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const int dv = cli_device_flag("info", argc, argv, &i, &backend);
        if (dv < 0)
            return CLI_USAGE;
        if (dv)
            continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-m")) {
            if (!v)
                return cli_usage("info", "-m needs a file");
            path = v;
            i++;
        } else if (!strcmp(a, "-c")) {
            if ((rc = cli_int("info", "-c", v, 1, 1 << 24, &n_ctx)))
                return rc;
            i++;
        } else if (!strcmp(a, "-np")) {
            if ((rc = cli_int("info", "-np", v, 1, 4096, &n_slots)))
                return rc;
            i++;
        } else if (!strcmp(a, "-ctk") || !strcmp(a, "-ctv")) {
            const int t = q36_kv_type_parse(v);
            if (t < 0)
                return cli_usage("info", "%s expects f16, f32 or q8_0, got '%s'", a, v ? v : "(nothing)");
            *(a[3] == 'k' ? &tk : &tv) = t;
            i++;
        } else if (!strcmp(a, "--dump") || !strcmp(a, "-o")) {
            if (!v)
                return cli_usage("info", "%s needs a value", a);
            *(a[1] == 'o' ? &out : &dump) = v;
            i++;
        } else if (!strcmp(a, "--tensors")) {
            list_tensors = 1;
        } else if (!strcmp(a, "--keys")) {
            list_keys = 1;
        } else if (cli_mode_flag(a, &fast)) {
            /* the GPU plan's mode: its f16 weight copies are fast mode's */
        } else {
            return cli_usage("info", "unknown flag '%s'", a);
        }
    }
    if (!path)
        path = cli_default_model();
    if (!dump != !out)
        return cli_usage("info", "--dump TENSOR and -o OUT go together");

    /* One mapping: the model when q36 can run the file, else the bare GGUF
     * (info still lists the tensors of architectures q36 cannot run). */
    q36_err err = { 0 }, model_err = { 0 };
    q36_model *m = NULL;
    gguf_file *own = NULL;
    const gguf_file *f;
    if (q36_model_open(path, &m, &model_err) == 0) {
        f = q36_model_gguf(m);
    } else {
        if (gguf_open(path, &own, &err))
            return cli_fail(&err);
        f = own;
    }
    if (dump) {
        rc = dump_tensor(f, dump, out, &err);
        q36_model_free(m);
        gguf_close(own);
        return rc ? cli_fail(&err) : 0;
    }

    printf("file %s\n", path);
    printf("gguf v%u, %" PRId64 " keys, %" PRId64 " tensors, alignment %u, data at byte %" PRIu64 ", %" PRIu64 " bytes\n",
           gguf_version(f), gguf_n_kv(f), gguf_n_tensors(f), gguf_alignment(f),
           gguf_data_offset(f), gguf_file_size(f));

    /* The parameter count and per-type totals come from the tensor table
     * alone, so they are printed even for architectures q36 cannot run. */
    uint64_t params = 0, bytes = 0, type_n[QT_COUNT] = { 0 }, type_b[QT_COUNT] = { 0 };
    for (int64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        params += gguf_tensor_nelements(t);
        bytes += t->nbytes;
        type_n[t->type]++;
        type_b[t->type] += t->nbytes;
    }

    if (m) {
        const model_hparams *hp = q36_model_hparams(m);
        printf("architecture %s: %u trunk layers (%u DeltaNet, %u full attention)%s, %s head\n",
               hp->arch_name, hp->n_layer, hp->n_layer - hp->n_attn_layers, hp->n_attn_layers,
               hp->n_nextn ? " + MTP" : "", hp->tied_head ? "tied" : "separate");
        printf("geometry:\n");
        for (int i = 0; i < hp->n_src; i++)
            printf("  %-18s %-14s %s%s\n", hp->src[i].what, hp->src[i].value, hp->src[i].key,
                   hp->src[i].defaulted ? "  (absent: default)" : "");
        printf("  %-18s %-14s", "layer types", "");
        for (uint32_t i = 0; i < hp->n_block; i++)
            putchar(i >= hp->n_layer ? 'M' : hp->recurrent[i] ? 'D' : 'A');
        printf("  (D DeltaNet, A attention, M MTP)\n");
    } else {
        printf("geometry: not a runnable model: %s\n", model_err.msg);
    }

    printf("params %" PRIu64 " (%.3f B)\n", params, params / 1e9);
    printf("tensor bytes %" PRIu64 " (%.2f GiB, %.3f bits per parameter)\n", bytes,
           bytes / 1073741824.0, params ? 8.0 * bytes / params : 0.0);
    printf("tensor types:");
    for (int t = 0; t < QT_COUNT; t++)
        if (type_n[t])
            printf(" %s %" PRIu64 " (%.1f MiB)", quant_type_name(t), type_n[t], type_b[t] / 1048576.0);
    printf("\n");

    if (list_keys) {
        printf("keys:\n");
        for (int64_t i = 0; i < gguf_n_kv(f); i++) {
            const gguf_value *v = gguf_kv_value(f, i);
            printf("  %-48s %-6s ", gguf_kv_key(f, i), gguf_vtype_name(v->type));
            print_value(f, v);
            printf("\n");
        }
    }
    if (list_tensors) {
        printf("tensors:\n");
        for (int64_t i = 0; i < gguf_n_tensors(f); i++) {
            const gguf_tensor *t = gguf_tensor_at(f, i);
            char shape[96];
            int n = snprintf(shape, sizeof shape, "[%" PRIu64, t->ne[0]);
            for (uint32_t d = 1; d < t->n_dims && n < (int)sizeof shape; d++)
                n += snprintf(shape + n, sizeof shape - n, ", %" PRIu64, t->ne[d]);
            snprintf(shape + n, sizeof shape - n, "]");
            printf("  %5" PRId64 " %-44s %-7s %-22s %12" PRIu64 "\n", i, t->name,
                   quant_type_name(t->type), shape, t->nbytes);
        }
    }
    if (m)
        memory_plan(m, (uint64_t)n_ctx, n_slots, tk, tv);
    if (m && backend) {
        q36_engine_opts o = q36_engine_opts_default();
        o.n_slots = (int)n_slots;
        o.type_k = tk;
        o.type_v = tv;
        o.backend = backend;
        o.fast = fast;
        if (cli_device_check(m, (int)n_ctx, &o, 1, &err))
            printf("GPU memory plan: %s\n", err.msg);
    }
    q36_model_free(m);
    gguf_close(own);
    return 0;
}
