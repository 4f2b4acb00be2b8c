/* alloc_fail.h — allocation-failure sweeps for tests, in the manner of
 * SQLite's malloc tests: a scenario (open a dataset, load a checkpoint, set
 * up training, …) runs once to count its allocations, then once for each N
 * with the N-th allocation failing, and must end every time with an error
 * status and a message — no crash, no leak (LeakSanitizer in the ASan
 * build), no half-written file.
 *
 * Only vla.c's own allocations fail. The test programs named
 * test_*_alloc_fail are linked with -Wl,--wrap=malloc,calloc,realloc,
 * strdup,strndup,posix_memalign,aligned_alloc (CMakeLists.txt), which
 * redirects the calls made from their own objects and from libvla.a's
 * members to the __wrap_* functions in alloc_fail.c. Shared libraries
 * (FFmpeg, jansson, cairo, OpenBLAS, libc itself) are not relinked, so their
 * internal allocations never fail: how they behave out of memory is not
 * ours to test. The wrappers call __real_*, which the linker binds to the
 * plain symbol — in the ASan build that is ASan's interceptor, so every
 * block is still tracked and leak-checked.
 *
 * make test sweeps a sample of N per scenario; VLA_ALLOC_SWEEP=full (make
 * fuzz-long) sweeps every N, each both as a single failure and as "the N-th
 * and every later allocation fails". */
#ifndef VLA_TESTS_ALLOC_FAIL_H
#define VLA_TESTS_ALLOC_FAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* Count allocations from now on; fail the n-th (1-based), and every later
 * one too when `sticky`. n == 0 only counts. */
void test_alloc_arm(int64_t n, bool sticky);
/* Stop counting and failing. */
void test_alloc_disarm(void);
/* Refuse every allocation larger than `bytes` (a device with little memory;
 * 0: no cap), armed or not; test_alloc_fired() reports a refusal. */
void test_alloc_cap(size_t bytes);
/* Allocations counted since the last arm. */
int64_t test_alloc_count(void);
/* Whether an allocation was refused since the last arm. */
bool test_alloc_fired(void);

typedef struct {
    const char *name;
    /* The code under test; returns its status. Must allocate only through
     * vla.c (the test's own buffers are made by setup). */
    vla_status (*run)(void *user);
    /* Undo what a run left (close handles, remove outputs); called with
     * failures disarmed after every run. May be NULL. */
    void (*reset)(void *user);
    /* Checks after a failed run (e.g. the old file is intact); may be NULL. */
    void (*check_failed)(void *user);
    /* Where the code absorbs a refused allocation by design (best-effort
     * output such as plots, a kernel's slower fallback), say so here: a run
     * that then returns OK is accepted if check_ok (required with it)
     * finds the result complete. NULL: every refused allocation must end
     * in an error. */
    const char *absorbs;
    void (*check_ok)(void *user);
    /* Directory whose tree must hold no temporary file (".tmp-" in a name)
     * after any run; NULL for read-only scenarios. */
    const char *out_dir;
    /* N values swept by make test (0: a default); VLA_ALLOC_SAMPLES
     * overrides, VLA_ALLOC_SWEEP=full sweeps all. */
    int samples;
    void *user;
} test_alloc_scenario;

/* Run the sweep (cmocka assertions). Prints the allocation count, the N
 * swept and the time taken. */
void test_alloc_sweep(const test_alloc_scenario *s);

/* Fails the test when a name under `dir` (recursively) contains ".tmp-". */
void test_assert_no_tmp_files(const char *dir);

#endif
