/* peer.c — what the benchmarks share for running other processes (bench.h):
 * a peer benchmark and its result line, `vla` jobs from the running binary,
 * files of the source tree. */
#include "bench/bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Append `s` single-quoted for sh. */
void vla_bench_shell_quote(char *dst, size_t cap, const char *s) {
    size_t n = strlen(dst);
    if (n + 3 >= cap) return;
    dst[n++] = '\'';
    for (; *s && n + 6 < cap; s++) {
        if (*s == '\'') {
            memcpy(dst + n, "'\\''", 4);
            n += 4;
        } else {
            dst[n++] = *s;
        }
    }
    dst[n++] = '\'';
    dst[n++] = ' ';
    dst[n] = '\0';
}

vla_status vla_bench_self_path(char *buf, size_t cap) {
    ssize_t l = cap > 1 ? readlink("/proc/self/exe", buf, cap - 1) : -1;
    if (l <= 0) return vla_error(VLA_ERR_IO, "cannot read /proc/self/exe (the running vla binary) to launch `vla` jobs");
    buf[l] = 0;
    return VLA_OK;
}

void vla_bench_source_file(const char *relpath, char *buf, size_t cap) {
    const char *src = getenv("VLA_SOURCE_DIR");
    snprintf(buf, cap, "%s/%s", src ? src : ".", relpath);
    if (access(buf, R_OK) == 0) return;
    char exe[900], alt[1100];
    if (vla_bench_self_path(exe, sizeof exe) != VLA_OK) return;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    snprintf(alt, sizeof alt, "%s/../%s", exe, relpath);
    if (access(alt, R_OK) == 0) snprintf(buf, cap, "%s", alt);
}

bool vla_bench_run_peer(const char *cmd, const char *key, char *line, size_t line_cap, char *why, size_t why_cap) {
    char buf[4096], last[4096] = "";
    line[0] = 0;
    FILE *f = popen(cmd, "r");
    if (!f) {
        snprintf(why, why_cap, "cannot run: %.200s", cmd);
        return false;
    }
    while (fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\r\n")] = 0;
        if (strstr(buf, key)) snprintf(line, line_cap, "%s", buf);
        if (buf[0]) snprintf(last, sizeof last, "%s", buf);
    }
    int status = pclose(f), rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (rc == 0 && line[0]) return true;
    snprintf(why, why_cap, "peer failed (exit %d): %.200s", rc, last);
    return false;
}

double vla_bench_peer_number(const char *line, const char *key) {
    const char *k = strstr(line, key);
    return k ? strtod(k + strlen(key), NULL) : NAN;
}
