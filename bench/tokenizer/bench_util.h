/* bench_util.h: what the tokenizer benchmarks share: a monotonic clock, a
 * double comparator for medians, and the 1 MB text made of tests/corpus/
 * files (the same bytes for every benchmark). Header-only; include after
 * test_tok_util.h (tt_read_file). */
#ifndef Q36_BENCH_TOK_UTIL_H
#define Q36_BENCH_TOK_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPS 7

static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static inline char *corpus_1mb(size_t *len)
{
    static const char *const files[] = {
        "arabic.txt", "cjk_chinese.txt", "code_c.txt", "code_go_sql_sh.txt", "code_js.txt",
        "code_python.txt", "code_rust.txt", "combining.txt", "contractions.txt", "cyrillic.txt",
        "devanagari.txt", "emoji.txt", "greek.txt", "hangul.txt", "hebrew.txt", "japanese.txt",
        "json_markdown.txt", "latin_diacritics.txt", "mixed_scripts.txt", "numbers.txt", "specials.txt",
        "thai.txt", "whitespace.txt",
    };
    size_t cap = (1u << 20) + 65536, n = 0;
    char *buf = malloc(cap);
    while (n < (1u << 20)) {
        for (size_t i = 0; i < sizeof files / sizeof files[0] && n < (1u << 20); i++) {
            char path[256];
            size_t k;
            snprintf(path, sizeof path, "tests/corpus/%s", files[i]);
            char *t = tt_read_file(path, &k);
            if (!t) {
                fprintf(stderr, "cannot read %s\n", path);
                exit(1);
            }
            if (n + k > cap) k = cap - n;
            memcpy(buf + n, t, k);
            n += k;
            free(t);
        }
    }
    *len = n;
    return buf;
}

#endif
