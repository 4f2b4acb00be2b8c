/* cli.c — dispatch, flag parsing and error reporting shared by all commands. */
#include "cli/cli.h"
#include "sim/env.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "data/lerobot.h"

static void print_command_list(const char *prefix, const vla_cli_command *cmds, int n, FILE *out) {
    fprintf(out, "usage: %s <command> [flags]\n\ncommands:\n", prefix);
    for (int i = 0; i < n; i++) fprintf(out, "  %-12s %s\n", cmds[i].name, cmds[i].summary);
    fprintf(out, "\nRun '%s <command> --help' (or '%s help <command>') for the flags of a command.\n", prefix, prefix);
}

int vla_cli_dispatch(const char *prefix, const vla_cli_command *cmds, int n, int argc, char **argv) {
    /* `help CMD [SUB]`: what `CMD [SUB] --help` prints */
    if (argc >= 2 && argc <= 8 && !strcmp(argv[0], "help")) {
        char help[] = "--help";
        char *args[9];
        for (int i = 1; i < argc; i++) args[i - 1] = argv[i];
        args[argc - 1] = help;
        return vla_cli_dispatch(prefix, cmds, n, argc, args);
    }
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
    if (st != VLA_OK) { /* a name that is not one: a usage error, like any bad flag value */
        fprintf(stderr, "vla: error: %s\n", vla_error_message());
        return 2;
    }
    if (model && (st = vla_env_set_model_file(name, model)) != VLA_OK) return vla_cli_fail(st);
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

void vla_cli_print_json_chars(const char *s) {
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') putchar('\\');
        if ((unsigned char)*s >= 0x20) putchar(*s);
    }
}

/* ---- JSON on stdout never carries NaN or Inf --------------------------------
 * Commands print JSON lines with printf (%g of a value that may be NaN: a
 * loss of zero steps, a ratio to a peer that did not run). JSON has no such
 * numbers, so every stdout byte passes through this filter: on a line that
 * starts with '{' or '[', a bare token outside strings that reads as a
 * non-finite number (nan, -nan, inf, -inf, infinity) is written as null.
 * Other lines (human-readable output) pass unchanged. */
static struct {
    int fd;
    int line_start, json, in_str, esc;
    char tok[64];
    size_t ntok;
} guard = {1, 1, 0, 0, 0, {0}, 0};

static void guard_put(const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(guard.fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        p += w, n -= (size_t)w;
    }
}

static void guard_flush_token(void) {
    if (!guard.ntok) return;
    guard.tok[guard.ntok] = 0;
    char *end;
    double v = strtod(guard.tok, &end);
    bool bad = *end == 0 && !isfinite(v) && (strcasestr(guard.tok, "nan") || strcasestr(guard.tok, "inf"));
    if (bad) guard_put("null", 4);
    else guard_put(guard.tok, guard.ntok);
    guard.ntok = 0;
}

static ssize_t guard_write(void *cookie, const char *buf, size_t n) {
    (void)cookie;
    char out[4096];
    size_t no = 0;
#define EMIT(c) do { if (no == sizeof out) guard_put(out, no), no = 0; out[no++] = (c); } while (0)
    for (size_t i = 0; i < n; i++) {
        char c = buf[i];
        if (guard.line_start && c != ' ' && c != '\t') {
            guard.json = c == '{' || c == '[';
            guard.line_start = 0, guard.in_str = 0, guard.esc = 0;
        }
        bool tokch = guard.json && !guard.in_str &&
                     ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                      c == '+' || c == '.');
        if (tokch) {
            if (guard.ntok + 1 >= sizeof guard.tok) { /* too long to be a number: pass it on */
                guard_put(out, no), no = 0;
                guard_flush_token();
            }
            guard.tok[guard.ntok++] = c;
            continue;
        }
        if (guard.ntok) {
            guard_put(out, no), no = 0;
            guard_flush_token();
        }
        EMIT(c);
        if (guard.json && guard.in_str) {
            if (guard.esc) guard.esc = 0;
            else if (c == '\\') guard.esc = 1;
            else if (c == '"') guard.in_str = 0;
        } else if (guard.json && c == '"') {
            guard.in_str = 1;
        }
        if (c == '\n') guard.line_start = 1, guard.json = 0;
    }
#undef EMIT
    guard_put(out, no);
    return (ssize_t)n;
}

void vla_cli_guard_end(void) {
    fflush(stdout);
    guard_flush_token(); /* a line cut off at exit still gets its last token */
}

void vla_cli_guard_stdout(void) {
    fflush(stdout);
    cookie_io_functions_t io = {.read = NULL, .write = guard_write, .seek = NULL, .close = NULL};
    FILE *f = fopencookie(NULL, "w", io);
    if (!f) return; /* unguarded output is still output */
    guard.fd = fileno(stdout);
    setvbuf(f, NULL, _IOLBF, 1 << 14);
    stdout = f;
}

/* ---- shared argument checks ------------------------------------------------- */

bool vla_cli_int_in(const char *cmd, const char *flag, int64_t v, int64_t lo, int64_t hi) {
    if (v >= lo && v <= hi) return true;
    if (hi == INT64_MAX)
        fprintf(stderr, "vla: error: %s: --%s=%lld: must be at least %lld\n", cmd, flag, (long long)v, (long long)lo);
    else
        fprintf(stderr, "vla: error: %s: --%s=%lld: must be in %lld..%lld\n", cmd, flag, (long long)v, (long long)lo,
                (long long)hi);
    return false;
}

bool vla_cli_float_in(const char *cmd, const char *flag, double v, double lo, double hi, bool lo_open, bool hi_open) {
    bool ok = (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
    if (ok) return true;
    if (isinf(hi))
        fprintf(stderr, "vla: error: %s: --%s=%g: must be %s %g\n", cmd, flag, v, lo_open ? "above" : "at least", lo);
    else
        fprintf(stderr, "vla: error: %s: --%s=%g: must be in %s%g, %g%s\n", cmd, flag, v, lo_open ? "(" : "[", lo, hi,
                hi_open ? ")" : "]");
    return false;
}

int vla_cli_ignored(const char *cmd, const char *flag, const char *why) {
    fprintf(stderr, "vla: error: %s: --%s would be ignored: %s\n", cmd, flag, why);
    return 2;
}

int vla_cli_dataset_source(const char *cmd, const char *positional, const char *root, const char *repo_id, char *buf,
                           size_t cap, const char **out) {
    int n = (positional != NULL) + (root != NULL) + (repo_id != NULL);
    if (n == 0) {
        fprintf(stderr, "vla: error: %s: which dataset? give its directory (ROOT or --dataset.root=DIR) or its "
                        "LeRobot name (--dataset.repo_id=ORG/NAME, read from the LeRobot cache)\n", cmd);
        return 2;
    }
    if (n > 1) {
        fprintf(stderr, "vla: error: %s: give the dataset once: ROOT, --dataset.root=DIR or --dataset.repo_id=ORG/NAME\n",
                cmd);
        return 2;
    }
    if (!repo_id) {
        *out = positional ? positional : root;
        return -1;
    }
    vla_status st = vla_lerobot_repo_roots(repo_id, buf, cap);
    if (st != VLA_OK) return vla_cli_fail(st);
    *out = buf;
    return -1;
}
