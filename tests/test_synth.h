/* test_synth.h: what the model tests share to make their models: `$Q36
 * synth FLAGS` (default ./q36) writing DIR/NAME.gguf. Returns system()'s
 * status (0 when the model was written). */
#ifndef Q36_TEST_SYNTH_H
#define Q36_TEST_SYNTH_H

#include <stdio.h>
#include <stdlib.h>

static inline int t_synth_model(const char *dir, const char *name, const char *flags, char *path,
                                size_t cap)
{
    const char *q36 = getenv("Q36") ? getenv("Q36") : "./q36";
    snprintf(path, cap, "%s/%s.gguf", dir, name);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s synth %s -o %s >/dev/null 2>&1", q36, flags, path);
    return system(cmd);
}

#endif
