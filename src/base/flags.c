/* flags.c — parsing of LeRobot-style flags (see flags.h). */
#include "base/flags.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static char norm(char c) { return c == '-' ? '_' : c; }

static bool name_eq(const char *a, const char *b, size_t blen) {
    size_t i = 0;
    for (; i < blen && a[i]; i++)
        if (norm(a[i]) != norm(b[i])) return false;
    return i == blen && a[i] == '\0';
}

/* Damerau–Levenshtein distance (optimal string alignment): insertions,
 * deletions, substitutions and transpositions of two adjacent characters
 * each cost one, so --stpes is one edit from --steps. */
int vla_flags_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    int pp[64], prev[64], cur[64]; /* rows i-2, i-1, i */
    for (size_t j = 0; j <= lb; j++) prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cost = norm(a[i - 1]) == norm(b[j - 1]) ? 0 : 1;
            int best = prev[j - 1] + cost;
            if (prev[j] + 1 < best) best = prev[j] + 1;
            if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && norm(a[i - 1]) == norm(b[j - 2]) && norm(a[i - 2]) == norm(b[j - 1]) &&
                pp[j - 2] + 1 < best)
                best = pp[j - 2] + 1;
            cur[j] = best;
        }
        memcpy(pp, prev, sizeof(int) * (lb + 1));
        memcpy(prev, cur, sizeof(int) * (lb + 1));
    }
    return prev[lb];
}

static const char *last_part(const char *s) {
    const char *dot = strrchr(s, '.');
    return dot ? dot + 1 : s;
}

/* `a` begins with `p` (dashes and underscores equal). */
static bool starts_with(const char *a, const char *p) {
    for (; *p; a++, p++)
        if (!*a || norm(*a) != norm(*p)) return false;
    return true;
}

bool vla_flags_close(const char *typed, const char *known) {
    const char *tl = last_part(typed), *kl = last_part(known);
    size_t tn = strlen(tl);
    int thr = tn / 3 > 1 ? (int)(tn / 3) : 1; /* a few edits for the word the user typed */
    if (vla_flags_distance(typed, known) <= thr) return true;
    /* --root for --dataset.root, --lr for --optimizer.lr */
    if (tl == typed && vla_flags_distance(typed, kl) <= (tn < 4 ? 0 : thr)) return true;
    /* a cut-off name: --policy.pretrained for --policy.pretrained_path */
    size_t tp = (size_t)(tl - typed), kp = (size_t)(kl - known);
    return tn >= 4 && tp == kp && !strncmp(typed, known, tp) && starts_with(kl, tl);
}

/* Append "--name" (or "--group.*") to a comma-separated list, "…" once it is full. */
static void list_add(char *list, size_t cap, size_t *used, bool *full, const char *fmt, int len, const char *name) {
    if (*full) return;
    char item[160];
    snprintf(item, sizeof item, fmt, len, name);
    if (*used + strlen(item) + 8 >= cap) {
        *used += (size_t)snprintf(list + *used, cap - *used, ", …");
        *full = true;
        return;
    }
    *used += (size_t)snprintf(list + *used, cap - *used, "%s%s", *used ? ", " : "", item);
}

/* The first glen characters of a and b agree (dashes and underscores equal). */
static bool name_prefix(const char *a, const char *b, size_t glen) {
    for (size_t i = 0; i < glen; i++)
        if (!a[i] || !b[i] || norm(a[i]) != norm(b[i])) return false;
    return true;
}

/* The flags under `group.` (group of length glen), comma-separated into list. */
static size_t group_flags(const vla_command_spec *spec, const char *group, size_t glen, char *list, size_t cap) {
    size_t used = 0;
    bool full = false;
    list[0] = 0;
    for (int i = 0; i < spec->n_flags; i++) {
        const char *n = spec->flags[i].name;
        if (strlen(n) > glen && n[glen] == '.' && name_prefix(n, group, glen))
            list_add(list, cap, &used, &full, "--%.*s", (int)strlen(n), n);
    }
    return used;
}

/* An unknown flag --name (given with `value`, or NULL): the closest spelling
 * (Damerau–Levenshtein, a few edits for its length); a bare group name
 * (--env where --env.type exists) points at the group's flag; otherwise the
 * flags of its group, or the command's flag groups, so the user sees where
 * to look without scrolling through --help. */
static vla_status unknown_flag(const vla_command_spec *spec, const char *name, const char *value) {
    const char *cmd = spec->command;
    size_t nlen = strlen(name);
    char list[1024];
    /* a group's name alone: --env=pusht for --env.type=pusht */
    const char *target = NULL;
    int in_group = 0;
    for (int i = 0; i < spec->n_flags; i++) {
        const char *n = spec->flags[i].name;
        if (strlen(n) <= nlen || n[nlen] != '.' || !name_prefix(n, name, nlen)) continue;
        in_group++;
        if (!target || !strcmp(n + nlen + 1, "type")) target = n;
    }
    if (in_group) {
        group_flags(spec, name, nlen, list, sizeof list);
        bool one = in_group == 1 || !strcmp(target + nlen + 1, "type");
        if (one)
            return vla_error(VLA_ERR_INVALID_ARG, "%s: unknown flag --%s; did you mean --%s%s%s? (the --%s.* flags: %s; "
                             "see --help)", cmd, name, target, value ? "=" : "", value ? value : "", name, list);
        return vla_error(VLA_ERR_INVALID_ARG, "%s: unknown flag --%s; it names a group: its flags are %s (see --help)",
                         cmd, name, list);
    }
    const char *best = NULL;
    int best_d = 1 << 30;
    for (int i = 0; i < spec->n_flags; i++) {
        if (!vla_flags_close(name, spec->flags[i].name)) continue;
        int d = vla_flags_distance(name, spec->flags[i].name);
        if (d < best_d) best_d = d, best = spec->flags[i].name;
    }
    if (best)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: unknown flag --%s; did you mean --%s? (see --help)", cmd, name,
                         best);
    /* no close spelling: the flags of the same group (--policy.*), which is what the user was after */
    const char *dot = strrchr(name, '.');
    size_t group = dot ? (size_t)(dot - name) : 0;
    if (group && group_flags(spec, name, group, list, sizeof list))
        return vla_error(VLA_ERR_INVALID_ARG, "%s: unknown flag --%s; its --%.*s.* flags are: %s (see --help)", cmd,
                         name, (int)group, name, list);
    /* else the command's flags, a group as one entry (--policy.*) */
    size_t used = 0;
    bool full = false;
    list[0] = 0;
    for (int i = 0; i < spec->n_flags; i++) {
        const char *n = spec->flags[i].name, *d = strchr(n, '.');
        bool seen = false;
        for (int k = 0; d && k < i && !seen; k++)
            seen = name_prefix(spec->flags[k].name, n, (size_t)(d - n) + 1);
        if (seen) continue;
        if (d) list_add(list, sizeof list, &used, &full, "--%.*s.*", (int)(d - n), n);
        else list_add(list, sizeof list, &used, &full, "--%.*s", (int)strlen(n), n);
    }
    if (!spec->n_flags) return vla_error(VLA_ERR_INVALID_ARG, "%s: unknown flag --%s; %s takes no flags", cmd, name, cmd);
    return vla_error(VLA_ERR_INVALID_ARG, "%s: unknown flag --%s; the flags of %s: %s (see --help)", cmd, name, cmd,
                     list);
}

static vla_status set_value(const vla_command_spec *spec, const vla_flag *f, const char *v) {
    char *end = NULL;
    switch (f->type) {
    case VLA_FLAG_STRING: *(const char **)f->dest = v; return VLA_OK;
    case VLA_FLAG_INT: {
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (errno || end == v || *end)
            return vla_error(VLA_ERR_INVALID_ARG, "%s: --%s expects an integer, got '%s'", spec->command,
                             f->name, v);
        *(int64_t *)f->dest = x;
        return VLA_OK;
    }
    case VLA_FLAG_FLOAT: {
        errno = 0;
        double x = strtod(v, &end);
        if (errno || end == v || *end || !isfinite(x))
            return vla_error(VLA_ERR_INVALID_ARG, "%s: --%s expects a finite number, got '%s'",
                             spec->command, f->name, v);
        *(double *)f->dest = x;
        return VLA_OK;
    }
    case VLA_FLAG_BOOL:
        if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes")) *(bool *)f->dest = true;
        else if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no")) *(bool *)f->dest = false;
        else
            return vla_error(VLA_ERR_INVALID_ARG, "%s: --%s expects true or false, got '%s'", spec->command,
                             f->name, v);
        return VLA_OK;
    }
    return vla_error(VLA_ERR_INTERNAL, "bad flag type");
}

vla_status vla_flags_parse(const vla_command_spec *spec, int argc, char **argv, vla_flags_result *out) {
    memset(out, 0, sizeof *out);
    bool only_positional = false;
    /* a flag takes one value: a repeated one is refused rather than the earlier value silently dropped */
    enum { MAX_SEEN = VLA_FLAGS_MAX };
    bool *seen = out->given;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!only_positional && (!strcmp(arg, "--help") || !strcmp(arg, "-h"))) {
            out->help = true;
            continue;
        }
        if (!only_positional && !strcmp(arg, "--")) {
            only_positional = true;
            continue;
        }
        if (only_positional || arg[0] != '-' || arg[1] == '\0') {
            if (out->n_positional >= spec->max_positional || out->n_positional >= 16)
                return vla_error(VLA_ERR_INVALID_ARG, "%s: unexpected argument '%s' (see --help)",
                                 spec->command, arg);
            out->positional[out->n_positional++] = arg;
            continue;
        }
        if (arg[1] != '-')
            return vla_error(VLA_ERR_INVALID_ARG, "%s: flags take two dashes: --%s (see --help)",
                             spec->command, arg + 1);
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const vla_flag *f = NULL;
        for (int k = 0; k < spec->n_flags; k++)
            if (name_eq(spec->flags[k].name, name, nlen)) f = &spec->flags[k];
        if (!f) {
            char buf[128];
            snprintf(buf, sizeof buf, "%.*s", (int)nlen, name);
            return unknown_flag(spec, buf, eq ? eq + 1 : NULL);
        }
        int fi = (int)(f - spec->flags);
        if (fi < MAX_SEEN && seen[fi])
            return vla_error(VLA_ERR_INVALID_ARG, "%s: --%s is given twice; a flag takes one value (see --help)", spec->command,
                             f->name);
        if (fi < MAX_SEEN) seen[fi] = true;
        const char *value;
        if (eq) {
            value = eq + 1;
        } else if (f->type == VLA_FLAG_BOOL) {
            value = "true";
        } else {
            if (i + 1 >= argc)
                return vla_error(VLA_ERR_INVALID_ARG, "%s: --%s needs a value (--%s=%s)", spec->command,
                                 f->name, f->name, f->metavar ? f->metavar : "VALUE");
            value = argv[++i];
        }
        VLA_TRY(set_value(spec, f, value));
    }
    if (!out->help && out->n_positional < spec->min_positional)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: missing argument %s (usage: %s %s)", spec->command,
                         spec->args ? spec->args : "", spec->command, spec->args ? spec->args : "");
    return VLA_OK;
}

static void print_default(const vla_flag *f, FILE *out) {
    switch (f->type) {
    case VLA_FLAG_STRING:
        if (*(const char **)f->dest) fprintf(out, " (default: %s)", *(const char **)f->dest);
        break;
    case VLA_FLAG_INT: fprintf(out, " (default: %lld)", (long long)*(int64_t *)f->dest); break;
    case VLA_FLAG_FLOAT: fprintf(out, " (default: %g)", *(double *)f->dest); break;
    case VLA_FLAG_BOOL:
        if (*(bool *)f->dest) fprintf(out, " (default: true)");
        break;
    }
}

bool vla_flags_given(const vla_command_spec *spec, const vla_flags_result *res, const char *name) {
    for (int i = 0; i < spec->n_flags && i < VLA_FLAGS_MAX; i++)
        if (!strcmp(spec->flags[i].name, name)) return res->given[i];
    return false;
}

void vla_flags_print_help(const vla_command_spec *spec, FILE *out) {
    fprintf(out, "usage: %s%s%s%s\n\n%s\n", spec->command, spec->args ? " " : "", spec->args ? spec->args : "",
            spec->n_flags ? " [flags]" : "", spec->summary);
    if (spec->description) fprintf(out, "\n%s\n", spec->description);
    fprintf(out, "\nflags:\n");
    for (int i = 0; i < spec->n_flags; i++) {
        const vla_flag *f = &spec->flags[i];
        char left[96];
        if (f->type == VLA_FLAG_BOOL)
            snprintf(left, sizeof left, "--%s", f->name);
        else
            snprintf(left, sizeof left, "--%s=%s", f->name, f->metavar ? f->metavar : "VALUE");
        fprintf(out, "  %-30s %s", left, f->help);
        /* one rule, so no line states its default twice: a help text that
         * speaks of its default itself ("default: the checkpoint's") says it
         * better than the flag's initial value would */
        if (!strcasestr(f->help, "default")) print_default(f, out);
        fputc('\n', out);
    }
    fprintf(out, "  %-30s %s\n", "--help", "show this help");
}
