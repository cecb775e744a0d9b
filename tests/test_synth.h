/* test_synth.h: what the model tests share to make their models: `$Q36
 * synth FLAGS` (default ./q36) writing DIR/NAME.gguf (t_synth_model
 * returns system()'s status: 0 when the model was written), and the tiny
 * dense and MoE pair most model tests run on (t_synth_pair). */
#ifndef Q36_TEST_SYNTH_H
#define Q36_TEST_SYNTH_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "test.h"

static inline int t_synth_model(const char *dir, const char *name, const char *flags, char *path,
                                size_t cap)
{
    const char *q36 = getenv("Q36") ? getenv("Q36") : "./q36";
    snprintf(path, cap, "%s/%s.gguf", dir, name);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s synth %s -o %s >/dev/null 2>&1", q36, flags, path);
    return system(cmd);
}

/* The pair most model tests run on, made in a fresh temporary folder
 * /tmp/q36_NAME_XXXXXX: tiny qwen35 (seed sd) and tiny qwen35moe (seed sm,
 * 5 layers, attention every 2nd); fn(tag, path) runs on each ("qwen35",
 * "qwen35moe"), then the folder goes. A model that cannot be made fails
 * the case NAME.setup. */
static inline void t_synth_pair(const char *name, int sd, int sm,
                                void (*fn)(const char *tag, const char *path))
{
    char dir[256], p1[300], p2[300], f1[128], f2[128];
    snprintf(dir, sizeof dir, "/tmp/q36_%s_XXXXXX", name);
    if (!mkdtemp(dir)) {
        snprintf(f1, sizeof f1, "%s.setup", name);
        t_fail(f1, "mkdtemp failed");
        return;
    }
    snprintf(f1, sizeof f1, "--arch qwen35 --preset tiny --seed %d", sd);
    snprintf(f2, sizeof f2, "--arch qwen35moe --preset tiny --seed %d --layers 5 --attn-interval 2", sm);
    int r1 = t_synth_model(dir, "dense", f1, p1, sizeof p1);
    int r2 = t_synth_model(dir, "moe", f2, p2, sizeof p2);
    if (r1 || r2) {
        snprintf(f1, sizeof f1, "%s.setup", name);
        t_fail(f1, "q36 synth failed (%d, %d); is ./q36 built (or $Q36 set)?", r1, r2);
    } else {
        fn("qwen35", p1);
        fn("qwen35moe", p2);
    }
    unlink(p1);
    unlink(p2);
    rmdir(dir);
}

#endif
