/*
 * Error codes and messages shared by every loadtrace library.
 *
 * Libraries never print and never exit: a function that can fail returns a
 * negative LT_E* code and, when the caller passed a struct lt_err, fills it
 * with one human sentence that says what happened and where (file, record,
 * byte offset). Only the command-line layer prints and chooses exit codes.
 */
#ifndef LT_ERR_H
#define LT_ERR_H

enum lt_errcode {
    LT_OK = 0,
    LT_EIO = -1,      /* the operating system refused (open, read, write) */
    LT_EFORMAT = -2,  /* input is not what the format says */
    LT_ENOMEM = -3,   /* allocation failed */
    LT_EINVAL = -4,   /* the caller asked for something impossible */
    LT_ELIMIT = -5,   /* input exceeds a hard limit (size, length, depth) */
    LT_EVERSION = -6, /* written by a newer loadtrace */
    LT_ETRUNC = -7,   /* input ends in the middle of something */
    LT_EUSAGE = -8,   /* options that cannot apply to this input: the caller's to fix (a
                         command exits 2, a usage error) */
};

struct lt_err {
    int code;
    char msg[512];
};

/* Fill err (if not NULL) with a printf-style message; return code. A message
 * already in err is kept as context: the new text is put in front of it,
 * joined by ": ", so callers can add where an error happened. */
int lt_errf(struct lt_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Like lt_errf, but replaces whatever err held. */
int lt_errset(struct lt_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Clear err to the empty, no-error state. */
void lt_err_clear(struct lt_err *err);

/* Propagate a negative return: `LT_TRY(f(x));` inside a function that has an
 * `int rc` and an `out:` cleanup label. */
#define LT_TRY(expr)                                                                               \
    do {                                                                                           \
        int lt_try_rc_ = (expr);                                                                   \
        if (lt_try_rc_ < 0) {                                                                      \
            rc = lt_try_rc_;                                                                       \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

#endif
