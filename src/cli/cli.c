/* cli.c — dispatch, flag parsing and error reporting shared by all commands. */
#include "cli/cli.h"
#include "sim/env.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void print_command_list(const char *prefix, const vla_cli_command *cmds, int n, FILE *out) {
    fprintf(out, "usage: %s <command> [flags]\n\ncommands:\n", prefix);
    for (int i = 0; i < n; i++) fprintf(out, "  %-12s %s\n", cmds[i].name, cmds[i].summary);
    fprintf(out, "\nRun '%s <command> --help' for the flags of a command.\n", prefix);
}

int vla_cli_dispatch(const char *prefix, const vla_cli_command *cmds, int n, int argc, char **argv) {
    if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h") || !strcmp(argv[0], "help")) {
        print_command_list(prefix, cmds, n, argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    for (int i = 0; i < n; i++)
        if (!strcmp(argv[0], cmds[i].name)) return cmds[i].run(argc - 1, argv + 1);
    const char *best = NULL;
    int best_d = 1 << 30;
    for (int i = 0; i < n; i++) {
        int d = vla_flags_distance(argv[0], cmds[i].name);
        if (d < best_d) best_d = d, best = cmds[i].name;
    }
    if (best && best_d <= 2)
        fprintf(stderr, "%s: unknown command '%s'; did you mean '%s'?\n", prefix, argv[0], best);
    else
        fprintf(stderr, "%s: unknown command '%s'\n", prefix, argv[0]);
    print_command_list(prefix, cmds, n, stderr);
    return 2;
}

int vla_cli_parse(const vla_command_spec *spec, int argc, char **argv, vla_flags_result *res) {
    vla_status st = vla_flags_parse(spec, argc, argv, res);
    if (res->help) {
        vla_flags_print_help(spec, stdout);
        return 0;
    }
    if (st != VLA_OK) {
        fprintf(stderr, "vla: error: %s\n", vla_error_message());
        return 2;
    }
    return -1;
}

int vla_cli_fail(vla_status st) {
    fprintf(stderr, "vla: error: %s\n", vla_error_message());
    return vla_status_exit_code(st);
}

int vla_cli_env(const char **env, const char *task, const char *model) {
    const char *name;
    vla_status st = vla_env_resolve(*env, task, &name);
    if (st == VLA_OK && model) st = vla_env_set_model_file(name, model);
    if (st != VLA_OK) return vla_cli_fail(st);
    *env = name;
    return -1;
}

int vla_cli_image_size(const char *flag, const char *text, int *height, int *width) {
    int h = 0, w = 0, n = 0;
    if (!text || (sscanf(text, "%d,%d%n", &h, &w, &n) != 2 && (w = 0, sscanf(text, "%d%n", &h, &n) != 1)) ||
        text[n] != 0) {
        fprintf(stderr, "vla: error: --%s must be N (square) or H,W (got '%s')\n", flag, text ? text : "");
        return 2;
    }
    if (!w) w = h;
    if (h < 16 || w < 16 || h > 4096 || w > 4096 || (h & 1) || (w & 1)) {
        fprintf(stderr, "vla: error: --%s: %dx%d: each side must be even and in 16..4096\n", flag, w, h);
        return 2;
    }
    *height = h, *width = w;
    return -1;
}

/* Append `s` single-quoted for sh. */
void vla_cli_shell_quote(char *dst, size_t cap, const char *s) {
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

vla_status vla_cli_self_path(char *buf, size_t cap) {
    ssize_t l = cap > 1 ? readlink("/proc/self/exe", buf, cap - 1) : -1;
    if (l <= 0) return vla_error(VLA_ERR_IO, "cannot read /proc/self/exe (the running vla binary) to launch `vla` jobs");
    buf[l] = 0;
    return VLA_OK;
}

void vla_cli_find_source_file(const char *relpath, char *buf, size_t cap) {
    const char *src = getenv("VLA_SOURCE_DIR");
    snprintf(buf, cap, "%s/%s", src ? src : ".", relpath);
    if (access(buf, R_OK) == 0) return;
    char exe[900], alt[1100];
    if (vla_cli_self_path(exe, sizeof exe) != VLA_OK) return;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    snprintf(alt, sizeof alt, "%s/../%s", exe, relpath);
    if (access(alt, R_OK) == 0) snprintf(buf, cap, "%s", alt);
}

void vla_cli_print_json_chars(const char *s) {
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') putchar('\\');
        if ((unsigned char)*s >= 0x20) putchar(*s);
    }
}

bool vla_cli_run_peer(const char *cmd, const char *key, char *line, size_t line_cap, char *why, size_t why_cap) {
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

double vla_cli_peer_number(const char *line, const char *key) {
    const char *k = strstr(line, key);
    return k ? strtod(k + strlen(key), NULL) : NAN;
}
