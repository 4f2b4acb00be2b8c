/* status.c — thread-local error messages behind vla_error(). */
#include "base/status.h"

#include <stdio.h>
#include <string.h>

#define VLA_ERROR_MAX 1024

/* Messages longer than the buffer are cut; that is intended, not a bug. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

static _Thread_local char error_message[VLA_ERROR_MAX];

vla_status vla_verror(vla_status code, const char *fmt, va_list ap) {
    vsnprintf(error_message, sizeof error_message, fmt, ap);
    return code == VLA_OK ? VLA_ERR_INTERNAL : code;
}

vla_status vla_error(vla_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vla_status st = vla_verror(code, fmt, ap);
    va_end(ap);
    return st;
}

vla_status vla_error_context(vla_status code, const char *fmt, ...) {
    char prefix[VLA_ERROR_MAX];
    char old[VLA_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, error_message, sizeof old);
    if (old[0])
        snprintf(error_message, sizeof error_message, "%s: %s", prefix, old);
    else
        snprintf(error_message, sizeof error_message, "%s", prefix);
    return code;
}

const char *vla_error_message(void) { return error_message; }

void vla_error_clear(void) { error_message[0] = '\0'; }

const char *vla_status_name(vla_status code) {
    static const char *const names[VLA_STATUS_COUNT] = {
        [VLA_OK] = "ok",
        [VLA_ERR_INVALID_ARG] = "invalid argument",
        [VLA_ERR_IO] = "i/o error",
        [VLA_ERR_FORMAT] = "format error",
        [VLA_ERR_NOT_FOUND] = "not found",
        [VLA_ERR_UNSUPPORTED] = "unsupported",
        [VLA_ERR_NOMEM] = "out of memory",
        [VLA_ERR_NUMERIC] = "numeric error",
        [VLA_ERR_INTERNAL] = "internal error",
    };
    if ((unsigned)code >= VLA_STATUS_COUNT) return "unknown status";
    return names[code];
}

int vla_status_exit_code(vla_status code) {
    if (code == VLA_OK) return 0;
    return code == VLA_ERR_INVALID_ARG ? 2 : 1;
}
