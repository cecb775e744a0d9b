/* buf.c: the growable byte string (buf.h). Capacity doubles from 256 bytes,
 * so building a text of n bytes copies it O(log n) times. */
#include "buf.h"

#include <stdlib.h>
#include <string.h>

void q36_buf_add(q36_buf *b, const char *t, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, t, n);
    b->n += n;
    b->p[b->n] = 0;
}

void q36_buf_str(q36_buf *b, const char *t) { q36_buf_add(b, t, strlen(t)); }

void q36_buf_drop(q36_buf *b, size_t n)
{
    if (n == 0)
        return;
    memmove(b->p, b->p + n, b->n - n);
    b->n -= n;
    b->p[b->n] = 0;
}

void q36_buf_free(q36_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}
