/* q36_err.h: the error value every library function of q36 returns through
 * (public: q36.h includes it; src/util/err.h is its internal name).
 *
 * A function that can fail takes a `q36_err *` (may be NULL when the caller
 * does not want the text) and returns 0 on success or a negative kind.
 * The message names the file or field, what was expected, what was found
 * and, for files, the byte offset. The first error wins: helpers that set an
 * error never overwrite one that is already set.
 */
#ifndef Q36_ERR_PUBLIC_H
#define Q36_ERR_PUBLIC_H

#include <stdarg.h>

typedef struct q36_err {
    int  kind;       /* 0 = no error; otherwise a module's negative kind */
    char msg[512];   /* one line, no trailing newline */
} q36_err;

/* Generic kinds shared by modules; a module adds its own below -100. */
enum {
    Q36_OK        = 0,
    Q36_E_IO      = -1,   /* open/read/write/mmap failed (errno text in msg) */
    Q36_E_NOMEM   = -2,   /* allocation failed */
    Q36_E_ARG     = -3,   /* caller passed an invalid value (flag, option) */
    Q36_E_FORMAT  = -4,   /* input is not what was expected (generic) */
    Q36_E_UNSUP   = -5,   /* valid input q36 does not support (yet) */
};

/* Sets err (if non-NULL and not already set) and returns kind. */
int q36_err_set(q36_err *err, int kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int q36_err_vset(q36_err *err, int kind, const char *fmt, va_list ap);
void q36_err_clear(q36_err *err);

#endif
