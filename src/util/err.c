/* err.c: the first-error-wins setter behind q36_err. */
#include "err.h"

#include <stdio.h>

int q36_err_vset(q36_err *err, int kind, const char *fmt, va_list ap)
{
    if (err && err->kind == 0) {
        err->kind = kind;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    }
    return kind;
}

int q36_err_set(q36_err *err, int kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    q36_err_vset(err, kind, fmt, ap);
    va_end(ap);
    return kind;
}

void q36_err_clear(q36_err *err)
{
    if (err) {
        err->kind = 0;
        err->msg[0] = 0;
    }
}
