/* cli_file.c: a whole input file read into memory, for the subcommands that
 * take a prompt, ids or a vocabulary from a file ("-" is standard input). */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *cli_read_file(const char *path, size_t *len, q36_err *err)
{
    int stdin_ = !strcmp(path, "-");
    FILE *f = stdin_ ? stdin : fopen(path, "rb");
    if (!f) {
        q36_err_set(err, Q36_E_IO, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0, k;
    char *b = malloc(cap);
    while (b && (k = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (n + 1 == cap) {
            char *c = realloc(b, cap *= 2);
            if (!c)
                free(b);
            b = c;
        }
    }
    int bad = ferror(f);
    if (!stdin_)
        fclose(f);
    if (!b) {
        q36_err_set(err, Q36_E_NOMEM, "%s: out of memory after %zu bytes", path, n);
        return NULL;
    }
    if (bad) {
        free(b);
        q36_err_set(err, Q36_E_IO, "%s: read error after %zu bytes", path, n);
        return NULL;
    }
    b[n] = 0;
    if (len)
        *len = n;
    return b;
}
