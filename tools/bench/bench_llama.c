/* bench_llama.c: the llama.cpp side of `q36 bench --baseline llama.cpp`:
 * the bench_engine interface over the pinned prebuilt libllama, opened with
 * dlopen() so q36 neither links nor needs it unless asked.
 *
 * It owns the library handles, one llama_model, and between prepare and
 * release one llama_context, its ggml thread pool and the saved sequence
 * state at the filled depth. It is the only file that sees llama.h (q36's
 * gguf.h and ggml's gguf.h cannot meet in one file). The entry points are
 * typed from the real header with __typeof__, so a mismatch with the pinned
 * headers is a compile error, not a crash.
 *
 * Settings are llama-bench's defaults where q36 bench does not set them:
 * flash attention auto, the model loaded with llama_model_default_params
 * (mmap; weights repacked for the CPU kernels where llama.cpp can), a ggml
 * thread pool made with ggml_threadpool_params_default (poll 50) and
 * attached to the context, calls through llama_batch_get_one (llama.cpp
 * then outputs the last token's logits), llama_memory_clear between
 * repetitions and llama_state_seq_set_data to return to the filled depth.
 */
#include "bench.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef Q36_HAVE_LLAMA_H

/* Built without build/llama.cpp/include/llama.h: the baseline cannot run. */
int bench_llama_open(const char *lib_dir, const char *path, const bench_cfg *cfg, bench_engine **out,
                     q36_err *err)
{
    (void)lib_dir; (void)path; (void)cfg;
    *out = NULL;
    return q36_err_set(err, Q36_E_UNSUP, "q36 was built without build/llama.cpp/include/llama.h, so it "
                       "cannot run the llama.cpp baseline; run scripts/setup.sh, then make");
}

#else

#include "llama.h"
#include "../../src/include/q36.h"   /* enum q36_kv_type (no gguf.h) */
#include "ggml-backend.h"
#include "ggml-cpu.h"

/* The entry points used, each found with dlsym in libllama and the
 * libraries it depends on (libggml, libggml-base). */
#define LLAMA_FNS(X) \
    X(llama_log_set) X(llama_backend_init) X(llama_model_default_params) \
    X(llama_model_load_from_file) X(llama_model_free) X(llama_context_default_params) \
    X(llama_init_from_model) X(llama_free) X(llama_model_get_vocab) X(llama_vocab_n_tokens) \
    X(llama_model_desc) X(llama_model_size) X(llama_model_n_params) X(llama_get_memory) \
    X(llama_memory_clear) X(llama_batch_get_one) X(llama_decode) X(llama_synchronize) \
    X(llama_attach_threadpool) X(llama_state_seq_get_size) X(llama_state_seq_get_data) \
    X(llama_state_seq_set_data) X(ggml_backend_load_all_from_path) X(ggml_backend_dev_by_type) \
    X(ggml_backend_dev_backend_reg) X(ggml_backend_reg_get_proc_address) \
    X(ggml_backend_dev_description) X(ggml_threadpool_params_default)

typedef struct llama_api {
#define LLAMA_FIELD(f) __typeof__(&f) f;
    LLAMA_FNS(LLAMA_FIELD)
#undef LLAMA_FIELD
    __typeof__(&ggml_threadpool_new)  threadpool_new;    /* from the CPU backend */
    __typeof__(&ggml_threadpool_free) threadpool_free;
} llama_api;

typedef struct llama_engine {
    bench_engine base;        /* first: the interface */
    bench_cfg    cfg;
    llama_api    L;
    void        *lib;         /* dlopen handle of libllama; never closed (below) */
    struct llama_model   *model;
    struct llama_context *ctx;
    struct ggml_threadpool *tp;
    uint8_t     *state;       /* sequence 0 at the filled depth; NULL at depth 0 */
    size_t       state_len;
    char         last_log[256];   /* the last warning or error line llama.cpp logged */
    char         line[256];       /* the log line being assembled */
    int          line_level;
} llama_engine;

/* Keeps llama.cpp quiet, remembering its last warning or error line so a
 * failure can say why. Log pieces arrive with GGML_LOG_LEVEL_CONT. */
static void on_log(enum ggml_log_level level, const char *text, void *user)
{
    llama_engine *e = user;
    if (level != GGML_LOG_LEVEL_CONT) {
        e->line[0] = 0;
        e->line_level = level;
    }
    size_t n = strlen(e->line);
    snprintf(e->line + n, sizeof e->line - n, "%s", text);
    if (strchr(text, '\n') && e->line_level >= GGML_LOG_LEVEL_WARN) {
        e->line[strcspn(e->line, "\n")] = 0;
        snprintf(e->last_log, sizeof e->last_log, "%s", e->line);
    }
}

/* After the engine is freed: llama.cpp stays loaded and silent. */
static void on_log_quiet(enum ggml_log_level level, const char *text, void *user)
{
    (void)level; (void)text; (void)user;
}

static const char *why(const llama_engine *e)
{
    return e->last_log[0] ? e->last_log : "llama.cpp logged no reason";
}

static void l_release(bench_engine *be)
{
    llama_engine *e = (llama_engine *)be;
    if (e->ctx)
        e->L.llama_free(e->ctx);
    if (e->tp)
        e->L.threadpool_free(e->tp);
    free(e->state);
    e->ctx = NULL;
    e->tp = NULL;
    e->state = NULL;
    e->state_len = 0;
}

/* The libraries stay loaded: ggml's CPU backends are registered globally
 * and are not meant to be unloaded while the process runs. */
static void l_free(bench_engine *be)
{
    llama_engine *e = (llama_engine *)be;
    l_release(be);
    if (e->model)
        e->L.llama_model_free(e->model);
    if (e->lib)
        e->L.llama_log_set(on_log_quiet, NULL);
    free(e);
}

/* ids in llama_decode calls of n_batch tokens; llama_batch_get_one leaves
 * the output flags to llama.cpp, which outputs the last token. */
static int decode_calls(llama_engine *e, const int32_t *ids, int n, q36_err *err)
{
    for (int i = 0; i < n; i += e->cfg.n_batch) {
        int k = n - i < e->cfg.n_batch ? n - i : e->cfg.n_batch;
        int rc = e->L.llama_decode(e->ctx, e->L.llama_batch_get_one((llama_token *)(ids + i), k));
        if (rc)
            return q36_err_set(err, Q36_E_ARG, "llama.cpp: llama_decode of %d tokens failed (%d): %s", k, rc,
                               why(e));
    }
    e->L.llama_synchronize(e->ctx);
    return 0;
}

static int to_depth(llama_engine *e, q36_err *err)
{
    e->L.llama_memory_clear(e->L.llama_get_memory(e->ctx), false);
    if (e->state && e->L.llama_state_seq_set_data(e->ctx, e->state, e->state_len, 0) == 0)
        return q36_err_set(err, Q36_E_ARG, "llama.cpp: llama_state_seq_set_data refused the depth state: %s",
                           why(e));
    return 0;
}

static int l_prepare(bench_engine *be, int n_ctx, const int32_t *warm, int n_warm_prompt, int warm_gen,
                     const int32_t *depth_ids, int depth, q36_err *err)
{
    llama_engine *e = (llama_engine *)be;
    l_release(be);
    struct llama_context_params cp = e->L.llama_context_default_params();
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_batch = (uint32_t)e->cfg.n_batch;
    cp.n_ubatch = (uint32_t)e->cfg.n_ubatch;
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = e->cfg.n_threads;
    static const enum ggml_type kv[] = { [Q36_KV_F32] = GGML_TYPE_F32, [Q36_KV_F16] = GGML_TYPE_F16,
                                         [Q36_KV_Q8_0] = GGML_TYPE_Q8_0 };
    cp.type_k = kv[e->cfg.type_k];
    cp.type_v = kv[e->cfg.type_v];
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO;
    int rc;
    if (!(e->ctx = e->L.llama_init_from_model(e->model, cp))) {
        rc = q36_err_set(err, Q36_E_ARG, "llama.cpp: cannot make a context of %d positions: %s", n_ctx, why(e));
        goto fail;
    }
    struct ggml_threadpool_params tpp = e->L.ggml_threadpool_params_default(e->cfg.n_threads);
    if (!(e->tp = e->L.threadpool_new(&tpp))) {
        rc = q36_err_set(err, Q36_E_ARG, "llama.cpp: cannot make a thread pool of %d threads", e->cfg.n_threads);
        goto fail;
    }
    e->L.llama_attach_threadpool(e->ctx, e->tp, NULL);
    e->L.llama_memory_clear(e->L.llama_get_memory(e->ctx), false);
    if (n_warm_prompt > 0 && (rc = decode_calls(e, warm, n_warm_prompt, err)))
        goto fail;
    if (warm_gen && (rc = decode_calls(e, warm, 1, err)))
        goto fail;
    e->L.llama_memory_clear(e->L.llama_get_memory(e->ctx), false);
    if (depth > 0) {
        if ((rc = decode_calls(e, depth_ids, depth, err)))
            goto fail;
        e->state_len = e->L.llama_state_seq_get_size(e->ctx, 0);
        if (!(e->state = malloc(e->state_len))) {
            rc = q36_err_set(err, Q36_E_NOMEM, "llama.cpp: out of memory for a %zu-byte state", e->state_len);
            goto fail;
        }
        if (e->L.llama_state_seq_get_data(e->ctx, e->state, e->state_len, 0) != e->state_len) {
            rc = q36_err_set(err, Q36_E_ARG, "llama.cpp: llama_state_seq_get_data failed: %s", why(e));
            goto fail;
        }
    }
    return 0;
fail:
    l_release(be);
    return rc;
}

static int l_time_prompt(bench_engine *be, const int32_t *ids, int n, double *sec, q36_err *err)
{
    llama_engine *e = (llama_engine *)be;
    int rc = to_depth(e, err);
    if (rc)
        return rc;
    double t0 = bench_now();
    rc = decode_calls(e, ids, n, err);
    *sec = bench_now() - t0;
    return rc;
}

static int l_time_gen(bench_engine *be, const int32_t *ids, int n, double *sec, q36_err *err)
{
    llama_engine *e = (llama_engine *)be;
    int rc = to_depth(e, err);
    if (rc)
        return rc;
    double t0 = bench_now();
    for (int i = 0; i < n && !rc; i++)
        rc = decode_calls(e, ids + i, 1, err);
    *sec = bench_now() - t0;
    return rc;
}

/* libllama's file in dir: "libllama.so", a versioned "libllama.vX.Y.Z.so"
 * (the pinned npm build's name) or "libllama.so.X.Y.Z" (a CMake build's,
 * e.g. ../shared/llama-cuda). Writes the path and the version ("v0.5.0",
 * or "unknown") and returns 0, or -1 when there is none. */
static int find_lib(const char *dir, char *path, size_t cap, char *version, size_t vcap)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *de;
    int found = -1;
    while ((de = readdir(d))) {
        const char *nm = de->d_name;
        size_t n = strlen(nm);
        if (strncmp(nm, "libllama.", 9))
            continue;
        if (!strcmp(nm, "libllama.so")) {
            if (!found)     /* a versioned name was found first: it says more */
                continue;
            snprintf(version, vcap, "unknown");
        } else if (n > 12 && nm[9] == 'v' && !strcmp(nm + n - 3, ".so")) {
            snprintf(version, vcap, "%.*s", (int)(n - 12), nm + 9);
        } else if (n > 12 && !strncmp(nm + 9, "so.", 3) && strchr(nm + 12, '.')) {
            snprintf(version, vcap, "v%s", nm + 12);   /* X.Y.Z, not the soname's X */
        } else {
            continue;
        }
        snprintf(path, cap, "%s/%s", dir, nm);
        found = 0;
        if (strcmp(version, "unknown"))
            break;
    }
    closedir(d);
    return found;
}

int bench_llama_open(const char *lib_dir, const char *path, const bench_cfg *cfg, bench_engine **out,
                     q36_err *err)
{
    *out = NULL;
    char lib[4096], version[32];
    if (find_lib(lib_dir, lib, sizeof lib, version, sizeof version))
        return q36_err_set(err, Q36_E_IO, "--llama-lib %s: no libllama*.so there (the pinned llama.cpp "
                           "v0.5.0 libraries); run scripts/setup.sh or give --llama-lib DIR", lib_dir);
    llama_engine *e = calloc(1, sizeof *e);
    if (!e)
        return q36_err_set(err, Q36_E_NOMEM, "llama.cpp: out of memory");
    e->base.name = "llama.cpp";
    e->base.prepare = l_prepare;
    e->base.time_prompt = l_time_prompt;
    e->base.time_gen = l_time_gen;
    e->base.release = l_release;
    e->base.free = l_free;
    e->cfg = *cfg;
    int rc;
    /* Local symbols: nothing of ggml's can bind to q36's names or back. */
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        rc = q36_err_set(err, Q36_E_IO, "%s: dlopen failed: %s", lib, dlerror());
        goto fail;
    }
#define LLAMA_SYM(f)                                                                          \
    if (!(*(void **)&e->L.f = dlsym(h, #f))) {                                                \
        rc = q36_err_set(err, Q36_E_UNSUP, "%s: has no %s (expected llama.cpp %s's API)", lib, #f, "v0.5.0"); \
        goto fail;                                                                            \
    }
    LLAMA_FNS(LLAMA_SYM)
#undef LLAMA_SYM
    e->lib = h;
    e->L.llama_log_set(on_log, e);
    e->L.ggml_backend_load_all_from_path(lib_dir);
    ggml_backend_dev_t cpu = e->L.ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!cpu) {
        rc = q36_err_set(err, Q36_E_UNSUP, "--llama-lib %s: no libggml-cpu-*.so there loads on this CPU: %s",
                         lib_dir, why(e));
        goto fail;
    }
    ggml_backend_reg_t reg = e->L.ggml_backend_dev_backend_reg(cpu);
    *(void **)&e->L.threadpool_new = e->L.ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new");
    *(void **)&e->L.threadpool_free = e->L.ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_free");
    if (!e->L.threadpool_new || !e->L.threadpool_free) {
        rc = q36_err_set(err, Q36_E_UNSUP, "--llama-lib %s: the CPU backend has no ggml_threadpool_new", lib_dir);
        goto fail;
    }
    e->L.llama_backend_init();

    struct llama_model_params mp = e->L.llama_model_default_params();
    /* q36 bench -ngl: every layer on the GPU too (llama.cpp keeps them on the
     * CPU when the libraries have no GPU backend) */
    mp.n_gpu_layers = cfg->backend ? 99 : 0;
    if (!(e->model = e->L.llama_model_load_from_file(path, mp))) {
        rc = q36_err_set(err, Q36_E_FORMAT, "%s: llama.cpp cannot load it: %s", path, why(e));
        goto fail;
    }
    bench_desc *d = &e->base.desc;
    e->L.llama_model_desc(e->model, d->model_type, sizeof d->model_type);
    d->model_size = e->L.llama_model_size(e->model);
    d->model_n_params = e->L.llama_model_n_params(e->model);
    d->n_vocab = e->L.llama_vocab_n_tokens(e->L.llama_model_get_vocab(e->model));
    snprintf(d->build, sizeof d->build, "%s", version);
    snprintf(d->cpu_info, sizeof d->cpu_info, "%s", e->L.ggml_backend_dev_description(cpu));
    /* Which CPU variant ggml chose: the file that holds its thread pool. */
    Dl_info di;
    const char *variant = "?";
    if (dladdr(*(void **)&e->L.threadpool_new, &di) && di.dli_fname) {
        const char *s = strrchr(di.dli_fname, '/');
        variant = s ? s + 1 : di.dli_fname;
    }
    const char *base = strrchr(lib, '/');
    snprintf(d->detail, sizeof d->detail, "%.100s + %.100s, flash attention auto, -ngl %d",
             base ? base + 1 : lib, variant, mp.n_gpu_layers);
    *out = &e->base;
    return 0;
fail:
    if (!e->lib && h)
        dlclose(h);
    l_free(&e->base);
    return rc;
}

#endif
