/* alloc_fail.c — the allocator wrappers (--wrap, see alloc_fail.h) that
 * refuse the N-th allocation, and the sweep that runs a scenario for each N
 * and checks it fails cleanly. */
#include "alloc_fail.h"

#include "test_util.h"

#include <errno.h>
#include <execinfo.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the wrappers ------------------------------------------------------- */

/* Allocations happen on loader and OpenMP threads too, hence atomics. */
static atomic_bool armed, sticky, fired;
static atomic_llong counted, fail_at;
static atomic_size_t cap; /* test_alloc_cap: refuse larger blocks (0: no cap) */
static _Thread_local bool in_backtrace;

static bool refuse_n(size_t bytes) {
    size_t c = atomic_load_explicit(&cap, memory_order_relaxed);
    if (c > 0 && bytes > c) {
        atomic_store(&fired, true);
        errno = ENOMEM;
        return true;
    }
    if (!atomic_load_explicit(&armed, memory_order_relaxed) || in_backtrace) return false;
    long long k = atomic_fetch_add(&counted, 1) + 1, n = atomic_load(&fail_at);
    if (n <= 0 || k < n || (k > n && !atomic_load(&sticky))) return false;
    atomic_store(&fired, true);
    /* VLA_ALLOC_BACKTRACE=1: where the refused allocation was (to find the
     * code that mishandles it; symbols need -rdynamic or addr2line) */
    if (k == n && getenv("VLA_ALLOC_BACKTRACE")) {
        in_backtrace = true;
        void *frames[32];
        fprintf(stderr, "alloc-fail: refusing allocation %lld at:\n", k);
        backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
        in_backtrace = false;
    }
    errno = ENOMEM;
    return true;
}

void test_alloc_arm(int64_t n, bool fail_later_too) {
    atomic_store(&armed, false);
    atomic_store(&counted, 0);
    atomic_store(&fail_at, n);
    atomic_store(&sticky, fail_later_too);
    atomic_store(&fired, false);
    atomic_store(&armed, true);
}

void test_alloc_disarm(void) { atomic_store(&armed, false); }
void test_alloc_cap(size_t bytes) {
    atomic_store(&fired, false);
    atomic_store(&cap, bytes);
}
int64_t test_alloc_count(void) { return atomic_load(&counted); }
bool test_alloc_fired(void) { return atomic_load(&fired); }

/* The linker binds __real_x to x: libc's, or ASan's interceptor. */
void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);

void *__wrap_malloc(size_t n) { return refuse_n(n) ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t k, size_t n) { return refuse_n(k * n) ? NULL : __real_calloc(k, n); }
/* A refused realloc leaves the old block as it was, as the real one does. */
void *__wrap_realloc(void *p, size_t n) { return refuse_n(n) ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { return refuse_n(0) ? NULL : __real_strdup(s); }
char *__wrap_strndup(const char *s, size_t n) { return refuse_n(0) ? NULL : __real_strndup(s, n); }
int __wrap_posix_memalign(void **p, size_t align, size_t n) {
    return refuse_n(n) ? ENOMEM : __real_posix_memalign(p, align, n);
}
void *__wrap_aligned_alloc(size_t align, size_t n) { return refuse_n(n) ? NULL : __real_aligned_alloc(align, n); }

/* ---- the sweep ---------------------------------------------------------- */

/* Present in ASan builds (LeakSanitizer), NULL otherwise. */
int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int tmp_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag;
    return strstr(path + ftw->base, ".tmp-") ? 1 : 0;
}

void test_assert_no_tmp_files(const char *dir) {
    if (nftw(dir, tmp_entry, 16, FTW_PHYS) == 1) {
        char cmd[4200], out[2048] = "";
        snprintf(cmd, sizeof cmd, "find '%s' -name '*.tmp-*' | head -5", dir);
        test_run(cmd, out, sizeof out);
        fail_msg("temporary files left under %s:\n%s", dir, out);
    }
}

/* Which N make test tries: the first few (setup paths), the last, and the
 * rest evenly spaced. */
static bool sampled(int64_t n, int64_t total, int64_t samples) {
    if (total <= samples || n <= 8 || n == total) return true;
    int64_t spread = samples - 9, span = total - 9; /* over 9 .. total-1 */
    if (spread <= 0) return false;
    int64_t i = n - 9;
    return (i * spread) / span != ((i + 1) * spread) / span;
}

/* Failures found in this sweep; with VLA_ALLOC_KEEP_GOING set each is
 * printed and the sweep goes on (to list them all), else the first fails
 * the test. */
static int problems;
/* Refused allocations the scenario absorbed as it declares (absorbs). */
static int64_t absorbed;

static void problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void problem(const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    problems++;
    if (!getenv("VLA_ALLOC_KEEP_GOING")) fail_msg("%s", msg);
    fprintf(stderr, "alloc-fail PROBLEM: %s\n", msg);
}

static void one_run(const test_alloc_scenario *s, int64_t n, bool fail_later_too, int verbose) {
    vla_error_clear();
    test_alloc_arm(n, fail_later_too);
    vla_status st = s->run(s->user);
    bool hit = test_alloc_fired();
    test_alloc_disarm();
    const char *how = fail_later_too ? "and every later one" : "alone";
    if (hit && st == VLA_OK && s->absorbs) {
        absorbed++;
        if (verbose) fprintf(stderr, "  %s N=%lld %s: absorbed (%s)\n", s->name, (long long)n, how, s->absorbs);
        s->check_ok(s->user);
    } else if (hit && st == VLA_OK) problem("%s: allocation %lld (%s) failed but the run returned OK", s->name, (long long)n, how);
    else if (hit && !vla_error_message()[0])
        problem("%s: allocation %lld (%s) failed: status %s without a message", s->name, (long long)n, how,
                vla_status_name(st));
    else if (!hit && st != VLA_OK)
        problem("%s: run with allocation %lld armed failed without it firing: %s", s->name, (long long)n,
                vla_error_message());
    if (verbose && hit) fprintf(stderr, "  %s N=%lld %s: %s: %s\n", s->name, (long long)n, how, vla_status_name(st), vla_error_message());
    if (hit && s->check_failed) s->check_failed(s->user);
    if (s->out_dir) test_assert_no_tmp_files(s->out_dir);
    if (s->reset) s->reset(s->user);
}

void test_alloc_sweep(const test_alloc_scenario *s) {
    const char *mode = getenv("VLA_ALLOC_SWEEP");
    bool full = mode && strcmp(mode, "full") == 0;
    const char *env_samples = getenv("VLA_ALLOC_SAMPLES");
    int verbose = getenv("VLA_ALLOC_VERBOSE") != NULL;
    int64_t samples = env_samples ? atoll(env_samples) : s->samples > 0 ? s->samples : 96;
    /* VLA_ALLOC_ONLY=N: that N alone (with VLA_ALLOC_BACKTRACE, to debug it) */
    int64_t only = getenv("VLA_ALLOC_ONLY") ? atoll(getenv("VLA_ALLOC_ONLY")) : 0;

    double t0 = now_s();
    vla_error_clear();
    test_alloc_arm(0, false);
    vla_status st = s->run(s->user);
    int64_t total = test_alloc_count();
    test_alloc_disarm();
    if (st != VLA_OK) fail_msg("%s: the run without failures failed: %s", s->name, vla_error_message());
    if (s->out_dir) test_assert_no_tmp_files(s->out_dir);
    if (s->reset) s->reset(s->user);
    double t_clean = now_s() - t0;

    int64_t runs = 0;
    problems = 0;
    absorbed = 0;
    for (int64_t n = 1; n <= total; n++) {
        if (only ? n != only : !full && !sampled(n, total, samples)) continue;
        one_run(s, n, false, verbose);
        /* everything failing from N on exercises the cleanup paths' own
         * allocations; all of them in the full sweep, every third here */
        if (full || runs % 3 == 2) one_run(s, n, true, verbose), runs++;
        runs++;
        /* checked after every N, so a leak names the N that caused it */
        if (__lsan_do_recoverable_leak_check && __lsan_do_recoverable_leak_check())
            problem("%s: leak after allocation %lld failed (report above)", s->name, (long long)n);
    }
    fprintf(stderr, "alloc-fail %s: %lld allocations, %lld failing runs (%s, %lld absorbed), clean run %.3f s, sweep %.1f s\n",
            s->name, (long long)total, (long long)runs, full ? "full" : "sampled", (long long)absorbed, t_clean, now_s() - t0);
    if (problems) fail_msg("%s: %d problems (above)", s->name, problems);
}
