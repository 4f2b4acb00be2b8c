/* test_util.h — helpers shared by the cmocka tests: paths to the source tree
 * and a fresh temporary directory per test binary. */
#ifndef VLA_TEST_UTIL_H
#define VLA_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* Absolute path of a file in the source tree (VLA_SOURCE_DIR set by ctest). */
const char *test_source_path(const char *relative);
/* A directory created fresh for this process under $TMPDIR; removed at exit. */
const char *test_tmp_dir(void);
/* Path inside test_tmp_dir(). Returns a static rotating buffer (8 slots). */
const char *test_tmp_path(const char *name);
/* Path of the built `vla` CLI (VLA_CLI set by ctest). */
const char *test_cli_path(void);
/* Run a shell command, capture stdout (up to cap bytes) and return the exit status. */
int test_run(const char *cmd, char *out, size_t cap);

/* For programs ctest also runs under other OpenBLAS kernels (CMakeLists.txt):
 * when OPENBLAS_CORETYPE names an AVX-512 kernel this CPU cannot run (it
 * would stop with SIGILL), print why and exit 77, which ctest counts as
 * skipped. Call first thing in main. */
void test_skip_unrunnable_openblas_core(void);

/* Free cairo's font caches and fontconfig's configuration at the end of a
 * test program that drew text (plots), so LeakSanitizer in the Debug+ASan
 * build sees no leaks of theirs. fontconfig is cairo's dependency, not
 * ours, so it is looked up rather than linked. */
void test_release_font_caches(void);

/* rm -rf path (fails the test when the shell says so). */
void test_rmrf(const char *path);
/* The whole file at path, NUL-terminated (*n its length); fails the test when unreadable. Free it. */
char *test_slurp(const char *path, size_t *n);
/* "step":N "loss":X of every line of a run's metrics.jsonl, as text (one line
 * per logged step), so two runs' losses compare with one string compare. Free it. */
char *test_losses_text(const char *output_dir);

/* Record `episodes` expert episodes of the Reach environment as a LeRobot
 * v3.0 dataset at `root` (episode e uses seed0 + e; at most 50 steps each):
 * observation.image (video, TEST_REACH_IMAGE_SIZE²), observation.state (4-D),
 * action (2-D). nan_frame ≥ 0 poisons that frame's action (global frame
 * count) to test that NaN data is refused. Fails the test on any error. */
#define TEST_REACH_IMAGE_SIZE 64
void test_record_reach(const char *root, int episodes, uint64_t seed0, int nan_frame);

#endif
