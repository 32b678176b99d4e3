#include "base/lt_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

__attribute__((format(printf, 4, 0))) static int verrf(struct lt_err *err, int code, int keep,
                                                      const char *fmt, va_list ap)
{
    if (!err)
        return code;
    char old[sizeof err->msg];
    old[0] = '\0';
    if (keep && err->msg[0])
        memcpy(old, err->msg, sizeof old);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    if (old[0]) {
        size_t n = strlen(err->msg);
        snprintf(err->msg + n, sizeof err->msg - n, ": %s", old);
    }
    err->code = code;
    return code;
}

int lt_errf(struct lt_err *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verrf(err, code, 1, fmt, ap);
    va_end(ap);
    return code;
}

int lt_errset(struct lt_err *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verrf(err, code, 0, fmt, ap);
    va_end(ap);
    return code;
}

void lt_err_clear(struct lt_err *err)
{
    if (err) {
        err->code = 0;
        err->msg[0] = '\0';
    }
}
