/* test_util.c — helpers shared by the cmocka tests (see test_util.h). */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmp_dir[512];

static void remove_tmp_dir(void) {
    if (tmp_dir[0] && !getenv("VLA_KEEP_TMP")) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
        if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", tmp_dir);
    }
}

const char *test_source_path(const char *relative) {
    static char bufs[8][1024];
    static int next;
    const char *root = getenv("VLA_SOURCE_DIR");
    char *b = bufs[next++ & 7];
    snprintf(b, 1024, "%s/%s", root ? root : ".", relative);
    return b;
}

const char *test_tmp_dir(void) {
    if (!tmp_dir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(tmp_dir, sizeof tmp_dir, "%s/vla-test-XXXXXX", base ? base : "/tmp");
        if (!mkdtemp(tmp_dir)) {
            perror("mkdtemp");
            exit(1);
        }
        atexit(remove_tmp_dir);
    }
    return tmp_dir;
}

const char *test_tmp_path(const char *name) {
    static char bufs[8][1024];
    static int next;
    char *b = bufs[next++ & 7];
    snprintf(b, 1024, "%s/%s", test_tmp_dir(), name);
    return b;
}

const char *test_cli_path(void) {
    const char *p = getenv("VLA_CLI");
    return p ? p : "./vla";
}

int test_run(const char *cmd, char *out, size_t cap) {
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    size_t n = 0;
    if (out && cap) {
        n = fread(out, 1, cap - 1, f);
        out[n] = '\0';
    }
    char sink[4096];
    while (fread(sink, 1, sizeof sink, f) > 0) {
    }
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
