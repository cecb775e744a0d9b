/* device.c: the device flags of q36 run, chat, logits, bench and info,
 * spelled as llama.cpp spells them, and the GPU memory check made before
 * an engine is created (cli.h).
 *
 * -ngl N (--gpu-layers, --n-gpu-layers): N > 0 runs the model on the GPU,
 * N = 0 on the CPU. Every layer goes to the GPU whatever N > 0 is: q36
 * does not split a model between devices (llama.cpp's -ngl 99 is the
 * usual spelling). -dev / --device NAME: none or cpu, cuda or CUDAi (the
 * device index, as Q36_CUDA_DEVICE=i). The CPU is the default. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/backend/backend.h"
#include "../src/gguf/gguf.h"
#include "../src/include/q36.h"
#include "../src/model/model.h"

const char cli_device_help[] = CLI_DEVICE_HELP;

int cli_mode_flag(const char *a, int *fast)
{
    if (!strcmp(a, "--fast") || !strcmp(a, "--exact")) {
        *fast = a[2] == 'f';
        return 1;
    }
    return 0;
}

int cli_device_flag(const char *cmd, int argc, char **argv, int *i, const char **backend)
{
    const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!strcmp(a, "-ngl") || !strcmp(a, "--gpu-layers") || !strcmp(a, "--n-gpu-layers")) {
        int64_t n;
        if (cli_int(cmd, a, v, 0, 1 << 20, &n))
            return -1;
        *backend = n > 0 ? "cuda" : NULL;
        ++*i;
        return 1;
    }
    if (!strcmp(a, "-dev") || !strcmp(a, "--device")) {
        if (!v) {
            cli_usage(cmd, "%s needs a device (none, cpu, cuda, CUDA0, ...)", a);
            return -1;
        }
        if (!strcmp(v, "none") || !strcmp(v, "cpu") || !strcmp(v, "CPU")) {
            *backend = NULL;
        } else if (!strcmp(v, "cuda")) {
            *backend = "cuda";
        } else if (!strncmp(v, "CUDA", 4) && v[4] >= '0' && v[4] <= '9') {
            char *end;
            long d = strtol(v + 4, &end, 10);
            if (*end || d > 255) {
                cli_usage(cmd, "%s: '%s' is not a device (CUDA0, CUDA1, ...)", a, v);
                return -1;
            }
            char buf[24];
            snprintf(buf, sizeof buf, "%ld", d);
            setenv("Q36_CUDA_DEVICE", buf, 1);
            *backend = "cuda";
        } else {
            cli_usage(cmd, "%s: unknown device '%s' (none, cpu, cuda, CUDA0, ...)", a, v);
            return -1;
        }
        ++*i;
        return 1;
    }
    return 0;
}

/* Device bytes of the model's weights: the file's, with the types the
 * backend dequantizes at load counted as f32. */
static uint64_t weight_bytes(const q36_model *m)
{
#ifdef Q36_CUDA
    const gguf_file *f = q36_model_gguf(m);
    uint64_t b = 0;
    for (int64_t i = 0; i < gguf_n_tensors(f); i++)
        b += be_cuda_weight_bytes(gguf_tensor_at(f, i));
    return b;
#else
    return q36_model_n_bytes(m);
#endif
}

/* Device bytes fast mode's kept f16 weight copies may take at most
 * (be_cuda_f16keep_bytes): taken at the first prompts only from memory
 * to spare, so not part of what must fit. */
static uint64_t f16keep_bytes(const q36_model *m)
{
    uint64_t b = 0;
#ifdef Q36_CUDA
    const gguf_file *f = q36_model_gguf(m);
    for (int64_t i = 0; i < gguf_n_tensors(f); i++)
        b += be_cuda_f16keep_bytes(gguf_tensor_at(f, i));
#else
    (void)m;
#endif
    return b;
}

int cli_device_check(const q36_model *m, int n_ctx, const q36_engine_opts *o, int print,
                     q36_err *err)
{
    if (!o->backend || !strcmp(o->backend, "cpu"))
        return 0;
    q36_mem_plan p;
    int rc = q36_engine_plan(m, n_ctx, o, &p, err);
    if (rc)
        return rc;
    char dev[160];
    uint64_t fr = 0, tot = 0;
    if ((rc = be_device_info(o->backend, dev, sizeof dev, &fr, &tot, err)))
        return rc;
    const uint64_t w = weight_bytes(m), need = w + p.total;
    if (print) {
        printf("GPU memory plan on %s (-c %d -np %d):\n", dev, n_ctx, o->n_slots);
        printf("  weights (uploaded)         %10.1f MiB\n", w / 1048576.0);
        printf("  K/V cache                  %10.1f MiB\n", p.kv / 1048576.0);
        printf("  DeltaNet state             %10.1f MiB\n", p.recurrent / 1048576.0);
        printf("  scratch                    %10.1f MiB  (of which the backend's own %.1f MiB)\n",
               p.scratch / 1048576.0, p.backend / 1048576.0);
        printf("  on the device in total     %10.1f MiB  of %.1f MiB free (%.1f MiB total): %s\n",
               need / 1048576.0, fr / 1048576.0, tot / 1048576.0, need <= fr ? "fits" : "DOES NOT FIT");
        const uint64_t keep = q36_opts_fast(o) ? f16keep_bytes(m) : 0;
        if (keep)
            printf("  and f16 weight copies for prompts, up to %.1f MiB, made at first use only while\n"
                   "    max(2 GiB, 5%%) of the device stays free (fast mode; Q36_CUDA_F16KEEP=0: none)\n",
                   keep / 1048576.0);
    }
    if (need > fr)
        return q36_err_set(err, Q36_E_NOMEM, "the model and a context of %d tokens in %d slot(s) "
                           "need %.1f MiB on %s (weights %.1f MiB, K/V %.1f MiB, DeltaNet state "
                           "%.1f MiB, scratch %.1f MiB) but %.1f MiB of %.1f MiB are free", n_ctx,
                           o->n_slots, need / 1048576.0, dev, w / 1048576.0, p.kv / 1048576.0,
                           p.recurrent / 1048576.0, p.scratch / 1048576.0, fr / 1048576.0,
                           tot / 1048576.0);
    return 0;
}
