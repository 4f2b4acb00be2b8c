/* status.h — status codes and the thread-local error message that says what
 * went wrong and where.
 *
 * Every function that can fail on input returns a vla_status. On failure it
 * first records a message with vla_error(), which also returns the code, so
 * the idiom is `return vla_error(VLA_ERR_FORMAT, "%s: bad magic", path);`.
 * Callers that add context (file, column, row) wrap the message with
 * vla_error_context(), which prefixes it: "model.safetensors: tensor 'w': …".
 * The message lives in thread-local storage so loader threads do not
 * clobber each other. */
#ifndef VLA_BASE_STATUS_H
#define VLA_BASE_STATUS_H

#include <stdarg.h>

typedef enum {
    VLA_OK = 0,
    VLA_ERR_INVALID_ARG, /* the caller (or the user's flags) asked for something impossible */
    VLA_ERR_IO,          /* the operating system refused: open, read, write, fsync, rename */
    VLA_ERR_FORMAT,      /* a file's bytes do not follow its format */
    VLA_ERR_NOT_FOUND,   /* a named file, key, column or tensor does not exist */
    VLA_ERR_UNSUPPORTED, /* valid input that this build cannot handle */
    VLA_ERR_NOMEM,       /* an allocation failed */
    VLA_ERR_NUMERIC,     /* NaN/Inf or overflow where a finite value was required */
    VLA_ERR_INTERNAL,    /* a library we call failed in a way we cannot attribute to input */
    VLA_STATUS_COUNT
} vla_status;

/* Record a message for the current thread and return `code` (never VLA_OK). */
vla_status vla_error(vla_status code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
vla_status vla_verror(vla_status code, const char *fmt, va_list ap);

/* Prefix the current message with context: "<context>: <old message>".
 * Returns `code` unchanged so it can wrap a failing call's result. */
vla_status vla_error_context(vla_status code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The message of the last failure on this thread ("" if none). */
const char *vla_error_message(void);
void vla_error_clear(void);

/* A stable short name for a code: "format", "io", … */
const char *vla_status_name(vla_status code);

/* Exit code convention of the CLI: 0 ok, 2 usage errors, 1 everything else. */
int vla_status_exit_code(vla_status code);

/* Propagate a failure: `VLA_TRY(vla_foo(...));` */
#define VLA_TRY(expr)                          \
    do {                                       \
        vla_status vla_try_st_ = (expr);       \
        if (vla_try_st_ != VLA_OK) return vla_try_st_; \
    } while (0)

#endif
