/* test_doc_pointers.c — every pointer in the docs leads somewhere (issue 43):
 * a reader sent to a file, a folder or a section finds it.
 *
 * What is checked, and where:
 *  - paths of this repository named in code spans (`src/nn/linear.c`,
 *    `tests/io/`, `tensor/ops.h`, `comm.{h,c}` with a path before it) in
 *    the .md files of docs/, README.md and src/<layer>/README.md, and paths written in
 *    the header comment (the comment that opens the file) of every source
 *    under src/ and include/: they must exist. A path counts as this
 *    repository's when it starts with one of its top folders (src/ followed
 *    by an existing layer, tests/, tools/, scripts/, fuzz/, include/, docs/,
 *    examples/, configs/) or with a layer name (tensor/ops.h = src/tensor/
 *    ops.h); other repositories' paths (src/lerobot/…, models/gemma.py)
 *    are not ours to check;
 *  - section pointers, `docs/NAME.md, "Title"` or `NAME.md "Title"`, in the
 *    same docs: docs/NAME.md must have a heading (or a bold lead) containing
 *    Title;
 *  - relative links, `[text](path)`, in the .md files of docs/ and docs/journal/.
 * Journal entries (docs/journal/) keep the paths of their day in their
 * text, so only their links are checked. A failure names the file, the
 * line and the pointer. */
#include "test_util.h"

#include <ctype.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const k_layers[] = {"base",  "io",  "tensor", "nn",    "policy", "data", "distributed",
                                       "checkpoint", "train", "sim", "eval",   "serve", "cli", "bench"};
static const char *const k_tops[] = {"tests", "tools", "scripts", "fuzz", "include", "docs", "examples", "configs"};

static int n_bad;

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = 0;
    fclose(f);
    return s;
}

static bool exists(const char *rel) {
    struct stat st;
    return stat(test_source_path(rel), &st) == 0;
}

static int line_of(const char *text, const char *at) {
    int ln = 1;
    for (const char *p = text; p < at; p++) ln += *p == '\n';
    return ln;
}

static bool is_in(const char *word, size_t n, const char *const *set, size_t count) {
    for (size_t i = 0; i < count; i++)
        if (strlen(set[i]) == n && !strncmp(word, set[i], n)) return true;
    return false;
}

/* Pointers known to dangle in files this test's author could not edit,
 * reported to their owners (issue 43): skipped until fixed, so the test
 * guards everything else meanwhile. "file|path". */
static const char *const k_reported[] = {
    "docs/contributing.md|src/tensor/tensor.h", /* no tensor.h: the descriptor is ops.h's */
};

/* The repository path a word names, or false when it names none of ours. */
static bool repo_path(const char *w, char *out, size_t cap) {
    const char *slash = strchr(w, '/');
    if (!slash || w[0] == '/' || strstr(w, "://")) return false;
    /* Python lives only in tools/ here (docs/contributing.md): a .py path
     * elsewhere is another repository's (Isaac-GR00T's scripts/…py). */
    if (strlen(w) > 3 && !strcmp(w + strlen(w) - 3, ".py") && strncmp(w, "tools/", 6)) return false;
    size_t first = (size_t)(slash - w);
    if (first == 3 && !strncmp(w, "src", 3)) {
        const char *rest = slash + 1, *s2 = strchr(rest, '/');
        size_t second = s2 ? (size_t)(s2 - rest) : strlen(rest);
        if (!is_in(rest, second, k_layers, sizeof k_layers / sizeof *k_layers)) return false;
        snprintf(out, cap, "%s", w);
        return true;
    }
    if (is_in(w, first, k_tops, sizeof k_tops / sizeof *k_tops)) {
        snprintf(out, cap, "%s", w);
        return true;
    }
    if (is_in(w, first, k_layers, sizeof k_layers / sizeof *k_layers) && strchr(slash + 1, '.')) {
        snprintf(out, cap, "src/%s", w); /* tensor/ops.h: a path from the include root */
        return true;
    }
    return false;
}

/* Check one word, expanding one `{a,b}` group; `where` names the file. */
static void check_word(const char *where, int line, const char *word) {
    char w[512];
    size_t n = strlen(word);
    if (n == 0 || n >= sizeof w) return;
    memcpy(w, word, n + 1);
    /* trim what surrounds a path in prose: (path), path:12, path, path. */
    char *s = w;
    while (*s == '(' || *s == '"' || *s == '\'') s++;
    for (char *e = s + strlen(s); e > s && strchr(",;:.)\"'", e[-1]); e--) e[-1] = 0;
    size_t sl = strlen(s);
    if (sl > 2 && !strcmp(s + sl - 2, "'s")) s[sl - 2] = 0; /* ops.h's */
    else if (sl > 4 && !strcmp(s + sl - 4, "\u2019s")) s[sl - 4] = 0;
    char *colon = strchr(s, ':');
    if (colon) *colon = 0; /* file:line */
    if (!*s || strpbrk(s, "*<>$|[]=`") || strstr(s, "…") || strstr(s, "...") || strstr(s, "YYYY")) return;
    char *lb = strchr(s, '{');
    if (lb) {
        char *rb = strchr(lb, '}');
        if (!rb) return;
        char alts[256];
        size_t an = (size_t)(rb - lb - 1);
        if (an >= sizeof alts) return;
        memcpy(alts, lb + 1, an);
        alts[an] = 0;
        for (char *tok = strtok(alts, ","); tok; tok = strtok(NULL, ",")) {
            char one[512];
            snprintf(one, sizeof one, "%.*s%s%s", (int)(lb - s), s, tok, rb + 1);
            check_word(where, line, one);
        }
        return;
    }
    char rel[600];
    if (!repo_path(s, rel, sizeof rel)) return;
    for (size_t i = 0; i < sizeof k_reported / sizeof *k_reported; i++) {
        const char *bar = strchr(k_reported[i], '|');
        if (!strncmp(where, k_reported[i], (size_t)(bar - k_reported[i])) && !where[bar - k_reported[i]] &&
            !strcmp(rel, bar + 1))
            return;
    }
    if (strstr(rel, "node_modules")) return; /* installed by scripts/setup.sh, ignored by git */
    if (!exists(rel)) {
        print_message("%s:%d: names %s, which does not exist\n", where, line, rel);
        n_bad++;
    }
}

/* Every whitespace-separated word of text[a, b). */
static void check_words(const char *where, const char *text, const char *a, const char *b) {
    char w[512];
    const char *p = a;
    while (p < b) {
        while (p < b && isspace((unsigned char)*p)) p++;
        const char *q = p;
        while (q < b && !isspace((unsigned char)*q)) q++;
        if (q > p && (size_t)(q - p) < sizeof w) {
            memcpy(w, p, (size_t)(q - p));
            w[q - p] = 0;
            check_word(where, line_of(text, p), w);
        }
        p = q;
    }
}

/* A doc's headings and bold leads, lower-cased, one per line. */
static char *headings(const char *doc_rel) {
    char *t = slurp(test_source_path(doc_rel));
    if (!t) return NULL;
    size_t cap = strlen(t) + 1, n = 0;
    char *h = malloc(cap);
    assert_non_null(h);
    for (char *line = t; line && *line;) {
        char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (line[0] == '#' || (line[0] == '*' && line[1] == '*')) {
            for (size_t i = 0; i < len; i++) h[n++] = (char)tolower((unsigned char)line[i]);
            h[n++] = '\n';
        }
        line = end ? end + 1 : NULL;
    }
    h[n] = 0;
    free(t);
    return h;
}

static bool contains_ci(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    char low[256];
    if (n >= sizeof low) return false;
    for (size_t i = 0; i <= n; i++) low[i] = (char)tolower((unsigned char)needle[i]);
    return strstr(hay, low) != NULL;
}

/* `NAME.md, "Title"` (line breaks and comment leaders between the parts
 * allowed): docs/NAME.md has a heading containing Title. */
static void check_sections(const char *where, const char *text) {
    for (const char *p = strstr(text, ".md"); p; p = strstr(p + 3, ".md")) {
        const char *n0 = p;
        while (n0 > text && (islower((unsigned char)n0[-1]) || n0[-1] == '_')) n0--;
        if (n0 == p) continue;
        const char *q = p + 3;
        if (*q == ',') q++;
        while (*q == ' ' || *q == '\n' || *q == '*' || *q == '#' || *q == '/') q++;
        if (*q != '"') continue;
        const char *t0 = q + 1, *t1 = strchr(t0, '"');
        if (!t1 || t1 - t0 < 2 || t1 - t0 > 70) continue;
        char title[128], doc[128];
        size_t tl = 0;
        for (const char *c = t0; c < t1 && tl + 1 < sizeof title; c++) { /* join a title broken over lines */
            if (*c == '\n') {
                while (c + 1 < t1 && (c[1] == ' ' || c[1] == '*' || c[1] == '#')) c++;
                title[tl++] = ' ';
            } else {
                title[tl++] = *c;
            }
        }
        title[tl] = 0;
        snprintf(doc, sizeof doc, "docs/%.*s.md", (int)(p - n0), n0);
        char *h = headings(doc);
        if (!h) {
            print_message("%s:%d: points at %s, which does not exist\n", where, line_of(text, p), doc);
            n_bad++;
            continue;
        }
        if (!contains_ci(h, title)) {
            print_message("%s:%d: points at %s, \"%s\": no such section\n", where, line_of(text, p), doc, title);
            n_bad++;
        }
        free(h);
    }
}

/* [text](target): a relative target exists beside the doc. */
static void check_links(const char *rel, const char *text) {
    char dir[256];
    snprintf(dir, sizeof dir, "%s", rel);
    char *slash = strrchr(dir, '/');
    if (slash) slash[1] = 0;
    else dir[0] = 0;
    for (const char *p = strstr(text, "]("); p; p = strstr(p + 2, "](")) {
        const char *t0 = p + 2, *t1 = t0;
        while (*t1 && *t1 != ')' && *t1 != '#' && !isspace((unsigned char)*t1)) t1++;
        if (t1 == t0 || !strncmp(t0, "http", 4) || !strncmp(t0, "mailto:", 7)) continue;
        char target[512];
        snprintf(target, sizeof target, "%s%.*s", dir, (int)(t1 - t0), t0);
        if (!exists(target)) {
            print_message("%s:%d: links to %.*s, which does not exist\n", rel, line_of(text, p), (int)(t1 - t0), t0);
            n_bad++;
        }
    }
}

static void check_doc(const char *rel, bool journal) {
    char *t = slurp(test_source_path(rel));
    if (!t) return;
    check_links(rel, t);
    if (!journal) {
        bool fence = false;
        for (const char *p = t; *p; p++) {
            if (!strncmp(p, "```", 3) && (p == t || p[-1] == '\n')) {
                fence = !fence;
                p += 2;
                continue;
            }
            if (fence || *p != '`') continue;
            const char *e = strchr(p + 1, '`');
            if (!e) break;
            check_words(rel, t, p + 1, e);
            p = e;
        }
        check_sections(rel, t);
    }
    free(t);
}

static bool ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static void each_file(const char *dir_rel, void (*fn)(const char *rel)) {
    DIR *d = opendir(test_source_path(dir_rel));
    if (!d) return; /* an optional folder (docs/journal/ in an older tree) */
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char rel[512];
        snprintf(rel, sizeof rel, "%s/%s", dir_rel, e->d_name);
        fn(rel);
    }
    closedir(d);
}

static void doc_file(const char *rel) {
    if (ends_with(rel, ".md")) check_doc(rel, false);
}
static void journal_file(const char *rel) {
    if (ends_with(rel, ".md")) check_doc(rel, true);
}

static void test_docs_point_at_what_exists(void **state) {
    (void)state;
    n_bad = 0;
    each_file("docs", doc_file);
    each_file("docs/journal", journal_file);
    check_doc("README.md", false);
    for (size_t i = 0; i < sizeof k_layers / sizeof *k_layers; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "src/%s/README.md", k_layers[i]);
        if (exists(rel)) check_doc(rel, false);
    }
    assert_int_equal(n_bad, 0);
}

/* The comment that opens a source file: its paths exist. */
static void header_file(const char *rel) {
    if (!ends_with(rel, ".c") && !ends_with(rel, ".h") && !ends_with(rel, ".cu") && !ends_with(rel, ".cuh")) {
        struct stat st;
        if (stat(test_source_path(rel), &st) == 0 && S_ISDIR(st.st_mode)) each_file(rel, header_file);
        return;
    }
    char *t = slurp(test_source_path(rel));
    if (!t) return;
    const char *a = strstr(t, "/*"), *b = a ? strstr(a, "*/") : NULL;
    if (a && b && a - t < 8) check_words(rel, t, a + 2, b);
    free(t);
}

static void test_file_headers_point_at_what_exists(void **state) {
    (void)state;
    n_bad = 0;
    for (size_t i = 0; i < sizeof k_layers / sizeof *k_layers; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "src/%s", k_layers[i]);
        each_file(rel, header_file);
    }
    each_file("include", header_file);
    assert_int_equal(n_bad, 0);
}

/* The checker itself: a missing path, a missing section and a broken link
 * are each found, and what exists passes (so a pass above means something). */
static void test_the_checker_finds_dangling_pointers(void **state) {
    (void)state;
    n_bad = 0;
    check_word("self", 1, "(src/nn/linear.c:12)");
    check_word("self", 1, "tensor/ops.h,");
    check_word("self", 1, "src/distributed/comm.{h,c}");
    check_word("self", 1, "src/lerobot/policies/groot/");   /* another repository's */
    check_word("self", 1, "docs/journal/YYYY-MM-DD-topic.md"); /* a pattern */
    check_word("self", 1, "scripts/gr00t_finetune.py");          /* Python outside tools/: not ours */
    check_word("self", 1, "src/tensor/ops.h's");
    assert_int_equal(n_bad, 0);
    check_word("self", 1, "src/nn/no_such_file.c");
    assert_int_equal(n_bad, 1);
    check_word("self", 1, "tensor/no_such.h");
    assert_int_equal(n_bad, 2);
    check_word("self", 1, "src/io/parquet.{h,zz}");
    assert_int_equal(n_bad, 3);
    check_sections("self", "see docs/design.md, \"Determinism\" and design.md \"The backend\n * seam\"");
    assert_int_equal(n_bad, 3);
    check_sections("self", "see docs/design.md, \"No such section here\"");
    assert_int_equal(n_bad, 4);
    check_links("docs/x.md", "[ok](design.md) [ok](contributing.md#top) [bad](nowhere.md) [web](https://x.org)");
    assert_int_equal(n_bad, 5);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_checker_finds_dangling_pointers),
        cmocka_unit_test(test_docs_point_at_what_exists),
        cmocka_unit_test(test_file_headers_point_at_what_exists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
