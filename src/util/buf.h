/* buf.h: a growable byte string: what the chat template, the output parser
 * and the server build their text in.
 *
 * The bytes are always NUL-terminated once anything was added (an add of
 * zero bytes allocates, so p is a valid empty string after it). An
 * allocation failure sets `oom`, after which adds do nothing: a caller
 * checks once at the end instead of after every add.
 *
 * Ownership: the buffer owns p; q36_buf_free releases it and zeroes the
 * struct. Zero-initialise to start. Not shared between threads.
 */
#ifndef Q36_BUF_H
#define Q36_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct q36_buf {
    char  *p;
    size_t n, cap;      /* bytes used (without the NUL), bytes allocated */
    bool   oom;
} q36_buf;

void q36_buf_add(q36_buf *b, const char *t, size_t n);
void q36_buf_str(q36_buf *b, const char *t);        /* a NUL-terminated string */
void q36_buf_drop(q36_buf *b, size_t n);            /* removes the first n bytes (n <= b->n) */
void q36_buf_free(q36_buf *b);                      /* accepts a zeroed buffer */

#endif
