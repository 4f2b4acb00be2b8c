/* test_readme.c — the README runs: every command of its shell code blocks
 * and of its command table is run on small data, and every flag the table
 * names must be one its command takes, so the docs cannot drift from the
 * tool (issue 34).
 *
 * How a command is made small and concrete (the rules, kept here):
 *  - code blocks (```sh): each line (backslash continuations joined,
 *    `# comments` cut) runs in order in one scratch directory. `make demo`
 *    runs scripts/demo.sh on this build with its own knobs turned down
 *    (DEMO_EPISODES=2, DEMO_STEPS=10, …); `make test` is this test's own
 *    runner and is skipped; any other line must start with `vla `.
 *  - the command table (the "Commands" section, rows starting `vla …`):
 *    optional `[...]` parts are dropped, of `a|b` alternatives the first is
 *    taken, `…` is dropped, and the placeholders (DIR, OUT, N, …) become
 *    fixtures made here — a 2-episode PushT dataset and a 2-step run on it —
 *    or fresh paths where the command writes (--out, --output_dir of a new
 *    run, DST, --png, --video); `vla bench` gets --quick.
 *  - in both: --steps 4, --episodes and --eval.n_episodes 2, --batch_size 4,
 *    --dagger.rounds 1, --dagger.rollouts 2 (the tool's own knobs); `vla
 *    eval` gets --max_steps=100.
 * A command fails the test when it exits non-zero; the message shows the
 * README line, the command run and its output's end. */
#include "test_util.h"

#include "base/timer.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char out[1 << 18];
static char scratch[1024], data[1200], run[1200], parquet[1400];
static int fresh_n;

/* Run `cmd` in the scratch directory; fail with its output's end when it exits non-zero. */
static void must_run(const char *readme_line, const char *cmd) {
    char full[16384];
    snprintf(full, sizeof full, "cd '%s' && %s 2>&1", scratch, cmd);
    double t0 = vla_now_s();
    int rc = test_run(full, out, sizeof out);
    fprintf(stderr, "%6.1f s  %.150s\n", vla_now_s() - t0, readme_line); /* where the test's time goes */
    if (rc != 0) {
        size_t n = strlen(out);
        fail_msg("README line failed (exit %d):\n  %s\nran:\n  %s\noutput's end:\n%s", rc, readme_line, cmd,
                 out + (n > 3000 ? n - 3000 : 0));
    }
}

/* The tool's own knobs, turned down: --steps=X → --steps=4 and so on (both = and space forms). */
static void shrink(char *cmd, size_t cap) {
    static const struct { const char *flag, *value; } K[] = {
        {"--steps", "4"}, {"--episodes", "2"}, {"--eval.n_episodes", "2"}, {"--batch_size", "4"},
        {"--dagger.rounds", "1"}, {"--dagger.rollouts", "2"}, {"--dagger.expert_episodes", "2"}};
    char res[16384] = "";
    const char *p = cmd;
    while (*p) {
        size_t tok = strcspn(p, " ");
        const char *done = NULL;
        for (size_t k = 0; k < sizeof K / sizeof *K && !done; k++) {
            size_t fl = strlen(K[k].flag);
            if (tok > fl && !strncmp(p, K[k].flag, fl) && p[fl] == '=') {
                snprintf(res + strlen(res), sizeof res - strlen(res), "%s=%s", K[k].flag, K[k].value);
                done = p + tok;
            } else if (tok == fl && !strncmp(p, K[k].flag, fl) && p[tok] == ' ') {
                const char *v = p + tok + 1;
                snprintf(res + strlen(res), sizeof res - strlen(res), "%s %s", K[k].flag, K[k].value);
                done = v + strcspn(v, " ");
            }
        }
        if (!done) {
            snprintf(res + strlen(res), sizeof res - strlen(res), "%.*s", (int)tok, p);
            done = p + tok;
        }
        p = done;
        while (*p == ' ') {
            strncat(res, " ", sizeof res - strlen(res) - 1);
            p++;
        }
    }
    snprintf(cmd, cap, "%s", res);
}

/* `vla …` → the built binary; an evaluation's episodes cut at 100 steps. */
static void with_binary(const char *line, char *cmd, size_t cap) {
    snprintf(cmd, cap, "'%s' %s%s", test_cli_path(), line + 4,
             !strncmp(line, "vla eval ", 9) && !strstr(line, "--max_steps") ? " --max_steps=100" : "");
    shrink(cmd, cap);
}

/* ---- code blocks ------------------------------------------------------------------- */

static void run_block_line(const char *line) {
    char cmd[16384];
    if (!strncmp(line, "make ", 5)) {
        if (!strcmp(line, "make test")) return; /* this test's own runner */
        if (!strcmp(line, "make demo")) {
            /* what `make demo` runs after installing and building: scripts/demo.sh on this build, small */
            const char *bin = getenv("VLA_BINARY_DIR");
            snprintf(cmd, sizeof cmd,
                     "DEMO_OUT=demo DEMO_EPISODES=2 DEMO_STEPS=10 DEMO_EVAL_EPISODES=2 DEMO_BATCH=4 "
                     "VLA_CONFIG_DIR='%s' bash '%s' '%s'",
                     test_source_path("configs"), test_source_path("scripts/demo.sh"), bin ? bin : "build");
            must_run(line, cmd);
            if (!strstr(out, "== summary ==") || !strstr(out, "reproduce"))
                fail_msg("make demo: no summary in its output:\n%s", out);
            return;
        }
        fail_msg("README code block: the test does not know how to run `%s` small; teach tests/cli/test_readme.c", line);
    }
    if (strncmp(line, "vla ", 4))
        fail_msg("README code block: `%s` is neither `vla …` nor a known make target; teach tests/cli/test_readme.c",
                 line);
    with_binary(line, cmd, sizeof cmd);
    must_run(line, cmd);
}

/* Every line of every ```sh / ```bash block, continuations joined, comments cut. */
static int run_code_blocks(const char *readme) {
    int n = 0;
    bool in = false;
    char cur[16384] = "";
    for (const char *p = readme; *p;) {
        size_t len = strcspn(p, "\n");
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line - 1 ? len : sizeof line - 1), p);
        p += len + (p[len] == '\n');
        if (!strncmp(line, "```", 3)) {
            in = !in && (!strcmp(line, "```sh") || !strcmp(line, "```bash"));
            continue;
        }
        if (!in) continue;
        char *hash = strstr(line, " #"); /* a comment after the command */
        if (hash) *hash = 0;
        char *s = line;
        while (*s == ' ') s++;
        if (*s == '#') continue;
        size_t l = strlen(s);
        while (l && s[l - 1] == ' ') s[--l] = 0;
        bool cont = l && s[l - 1] == '\\';
        if (cont) s[--l] = 0;
        strncat(cur, s, sizeof cur - strlen(cur) - 1);
        if (cont) continue;
        /* squeeze runs of spaces left by joined lines */
        char sq[16384];
        size_t k = 0;
        for (const char *c = cur; *c && k + 1 < sizeof sq; c++)
            if (!(*c == ' ' && k && sq[k - 1] == ' ')) sq[k++] = *c;
        sq[k] = 0;
        if (sq[0]) {
            run_block_line(sq);
            n++;
        }
        cur[0] = 0;
    }
    return n;
}

/* ---- the command table ---------------------------------------------------------------- */

/* A fresh path in the scratch directory for a command to write. */
static const char *fresh(const char *ext) {
    static char buf[4][1400];
    char *b = buf[fresh_n % 4];
    snprintf(b, sizeof buf[0], "%s/new-%d%s", scratch, ++fresh_n, ext);
    return b;
}

/* The value of placeholder `ph` after flag `flag` ("" for a positional) in command `cmd`. */
static const char *placeholder(const char *cmd, const char *flag, const char *ph, int pos) {
    bool writes = !strcmp(flag, "--out") || (!strcmp(flag, "--output_dir") && !strstr(cmd, "--resume=true"));
    if (!strcmp(ph, "OUT") && !strcmp(flag, "--png")) return fresh(".png");
    if (!strcmp(ph, "OUT") && !strcmp(flag, "--video")) return fresh(".mp4");
    if (writes || !strcmp(ph, "DST") || !strcmp(ph, "SHARDS")) return fresh("");
    if (!strcmp(ph, "OUT") || !strcmp(ph, "CKPT")) return run; /* a run to read, resume or serve */
    if (!strcmp(ph, "DIR") || !strcmp(ph, "ROOT") || !strcmp(ph, "SRC")) return data;
    if (!strcmp(ph, "FILE")) return parquet;
    if (!strcmp(ph, "TEXT")) return "'pick up the cube'";
    if (!strcmp(ph, "KEY")) return "observation.image";
    if (!strcmp(ph, "S")) return "0";
    if (!strcmp(ph, "P")) return "1e9";
    if (!strcmp(ph, "R")) return "1";
    if (!strcmp(ph, "G")) return "8";
    if (!strcmp(ph, "B")) return !strcmp(flag, "--gbps") ? "100" : "4";
    if (!strcmp(ph, "N")) {
        if (!strcmp(flag, "--index")) return "0";
        if (!strcmp(flag, "--gpus")) return "16";
        return "2";
    }
    fail_msg("README table: no value for placeholder %s after '%s' in: %s", ph, flag, cmd);
    (void)pos;
    return "";
}

/* One table row's synopsis → a command to run (rules at the top of the file). */
static void instantiate(const char *syn, char *cmd, size_t cap) {
    /* drop [optional] parts (also inside a value: DIR[,DIR2…]) and … */
    char a[4096];
    size_t k = 0;
    int depth = 0;
    for (const char *c = syn; *c && k + 1 < sizeof a; c++) {
        if (*c == '[') depth++;
        else if (*c == ']') depth--;
        else if (depth == 0) a[k++] = *c;
    }
    a[k] = 0;
    char res[8192] = "";
    int pos = 0;
    for (char *tok = strtok(a, " "); tok; tok = strtok(NULL, " ")) {
        if (!strcmp(tok, "…") || !strcmp(tok, "--")) {
            if (!strcmp(tok, "--")) strncat(res, "-- ", sizeof res - strlen(res) - 1);
            continue;
        }
        char *bar = strchr(tok, '|'); /* first alternative */
        if (bar) *bar = 0;
        /* the flag this value belongs to: --flag=VALUE, or the previous token --flag VALUE */
        char flag[128] = "";
        const char *val = tok;
        if (!strncmp(tok, "--", 2)) {
            char *eq = strchr(tok, '=');
            snprintf(flag, sizeof flag, "%.*s", (int)(eq ? eq - tok : (long)strlen(tok)), tok);
            val = eq ? eq + 1 : NULL;
            strncat(res, flag, sizeof res - strlen(res) - 1);
            if (eq) strncat(res, "=", sizeof res - strlen(res) - 1);
        } else {
            size_t rl = strlen(res);
            const char *prev = res + rl;
            while (prev > res && prev[-1] == ' ') prev--;
            const char *start = prev;
            while (start > res && start[-1] != ' ') start--;
            if (!strncmp(start, "--", 2) && !strchr(start, '=')) snprintf(flag, sizeof flag, "%.*s", (int)(prev - start), start);
            else pos++;
        }
        for (const char *c = val; c && *c;) { /* UPPERCASE words are placeholders */
            if (isupper((unsigned char)*c) && (c == val || !isalnum((unsigned char)c[-1]))) {
                size_t n = 0;
                while (isupper((unsigned char)c[n]) || isdigit((unsigned char)c[n]) || c[n] == '_') n++;
                char ph[64];
                snprintf(ph, sizeof ph, "%.*s", (int)n, c);
                strncat(res, placeholder(syn, flag, ph, pos), sizeof res - strlen(res) - 1);
                c += n;
            } else {
                char one[2] = {*c, 0};
                strncat(res, one, sizeof res - strlen(res) - 1);
                c++;
            }
        }
        strncat(res, " ", sizeof res - strlen(res) - 1);
    }
    if (!strncmp(res, "vla bench ", 10)) strncat(res, "--quick", sizeof res - strlen(res) - 1);
    with_binary(res, cmd, cap);
}

/* Every --flag a row names (optional ones too) must be in its command's --help. */
static void check_flags(const char *syn) {
    char cmdname[256] = "";
    const char *p = syn + 4; /* after "vla " */
    for (int words = 0; words < 2 && *p && *p != '-' && !isupper((unsigned char)*p);) {
        size_t n = strcspn(p, " ");
        char w[64];
        snprintf(w, sizeof w, "%.*s", (int)n, p);
        char *bar = strchr(w, '|');
        if (bar) *bar = 0;
        snprintf(cmdname + strlen(cmdname), sizeof cmdname - strlen(cmdname), " %s", w);
        words++;
        p += n;
        while (*p == ' ') p++;
        if (!strcmp(w, "train") || !strcmp(w, "eval") || !strcmp(w, "dagger") || !strcmp(w, "tokenize") ||
            !strcmp(w, "plan") || !strcmp(w, "version"))
            break; /* commands without subcommands */
    }
    char help_cmd[2048], help[1 << 16];
    snprintf(help_cmd, sizeof help_cmd, "'%s'%s --help 2>&1", test_cli_path(), cmdname);
    if (test_run(help_cmd, help, sizeof help) != 0) fail_msg("`vla%s --help` failed: %s", cmdname, help);
    for (const char *f = strstr(syn, "--"); f; f = strstr(f + 2, "--")) {
        if (f > syn && f[-1] != ' ' && f[-1] != '[' && f[-1] != '|') continue;
        size_t n = 2;
        while (f[n] && (isalnum((unsigned char)f[n]) || f[n] == '.' || f[n] == '_' || f[n] == '-')) n++;
        if (n == 2) continue; /* `--` before positional text */
        char flag[128];
        snprintf(flag, sizeof flag, "%.*s", (int)n, f);
        char want[160];
        snprintf(want, sizeof want, "  %s", flag);
        bool found = false; /* "  --flag" then '=', ' ' or the line's end: --env is not --env.type */
        for (const char *h = strstr(help, want); h && !found; h = strstr(h + 1, want)) {
            char next = h[strlen(want)];
            found = next == '=' || next == ' ' || next == '\n';
        }
        if (!found) fail_msg("README table names %s, which `vla%s` does not take:\n  %s", flag, cmdname, syn);
    }
}

/* The rows of the "## Commands" section whose first cell is `vla …`. */
static int run_table(const char *readme) {
    const char *sec = strstr(readme, "\n## Commands");
    assert_non_null(sec);
    const char *end = strstr(sec + 5, "\n## ");
    int n = 0;
    for (const char *p = sec; p && (!end || p < end);) {
        p = strstr(p, "\n| `vla ");
        if (!p || (end && p > end)) break;
        p += 4; /* past "\n| `" */
        /* the first backticked span; \| is a | */
        char syn[4096];
        size_t k = 0;
        for (; *p && *p != '`' && k + 1 < sizeof syn; p++) {
            if (*p == '\\' && p[1] == '|') continue;
            syn[k++] = *p;
        }
        syn[k] = 0;
        check_flags(syn);
        char cmd[16384];
        instantiate(syn, cmd, sizeof cmd);
        if (!strncmp(syn, "vla serve", 9)) {
            /* a server runs until stopped: any free port, Ctrl-C after 3 s (its clean stop exits 0) */
            char wrapped[16500];
            snprintf(wrapped, sizeof wrapped, "timeout --preserve-status -s INT 3 %s --port=0", cmd);
            must_run(syn, wrapped);
            if (!strstr(out, "listening on ws://")) fail_msg("vla serve: never listened:\n%s", out);
        } else {
            must_run(syn, cmd);
        }
        n++;
    }
    return n;
}

static void test_readme_runs(void **state) {
    (void)state;
    snprintf(scratch, sizeof scratch, "%s", test_tmp_path("readme"));
    mkdir(scratch, 0755);
    size_t len;
    char *readme = test_slurp(test_source_path("README.md"), &len);
    /* fixtures for the table's placeholders: a 2-episode PushT dataset, a 2-step run on it */
    snprintf(data, sizeof data, "%s/fixture-data", scratch);
    snprintf(run, sizeof run, "%s/fixture-run", scratch);
    snprintf(parquet, sizeof parquet, "%s/data/chunk-000/file-000.parquet", data);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' sim record --env=pusht --episodes=2 --out='%s'", test_cli_path(), data);
    must_run("(fixture)", cmd);
    snprintf(cmd, sizeof cmd, "'%s' train --dataset.root='%s' --policy.config=groot-nano --dataset.image_keys= "
             "--steps=2 --batch_size=4 --quiet --output_dir='%s'", test_cli_path(), data, run);
    must_run("(fixture)", cmd);
    int blocks = run_code_blocks(readme), rows = run_table(readme);
    fprintf(stderr, "README: %d code-block commands and %d table rows ran\n", blocks, rows);
    assert_true(blocks >= 5);
    assert_true(rows >= 15);
    free(readme);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_readme_runs)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
