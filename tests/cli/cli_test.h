/* cli_test.h — what every tests/cli test of the built `vla` binary shares:
 * running it in the test's temp dir (or another) with stdout and stderr — a
 * pipe, never a terminal, so progress prints plain lines — into `out`, and
 * the checks on that output that print it whole when they fail. Included by
 * one test file each (its statics are that file's). */
#ifndef VLA_TESTS_CLI_TEST_H
#define VLA_TESTS_CLI_TEST_H

#include "test_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static char out[1 << 17];

/* `vla ARGS` in directory `cwd` (NULL: the test's temp dir), one thread,
 * VLA_PROGRESS cleared (it decides from the pipe); the exit code. */
static inline int vla_in(const char *cwd, const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd '%s' && OMP_NUM_THREADS=1 VLA_PROGRESS= %s %s 2>&1", cwd ? cwd : test_tmp_dir(),
             test_cli_path(), args);
    return test_run(cmd, out, sizeof out);
}

static inline int vla(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int vla(const char *fmt, ...) {
    char args[6144];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return vla_in(NULL, args);
}

/* The whole output, on stderr: cmocka's failure message cuts long text. */
static inline void cli_fail_output(void) {
    fprintf(stderr, "---- output ----\n%s\n---- end of output ----\n", out);
}
#define EXPECT(rc, want)                                                                                           \
    do {                                                                                                           \
        int rc_ = (rc);                                                                                            \
        if (rc_ != (want)) { cli_fail_output(); fail_msg("exit %d, expected %d (its output above)", rc_, (want)); }\
    } while (0)
#define SAYS(s)                                                                                                    \
    do {                                                                                                           \
        if (!strstr(out, (s))) { cli_fail_output(); fail_msg("output lacks \"%s\" (the output above)", (s)); }\
    } while (0)
#define NEVER(s)                                                                                                   \
    do {                                                                                                           \
        if (strstr(out, (s))) { cli_fail_output(); fail_msg("output has \"%s\" (the output above)", (s)); }\
    } while (0)

#endif
