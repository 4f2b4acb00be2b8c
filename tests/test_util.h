/* test_util.h — helpers shared by the cmocka tests: paths to the source tree
 * and a fresh temporary directory per test binary. */
#ifndef VLA_TEST_UTIL_H
#define VLA_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/status.h"
#include "policy/policy.h"
#include "tensor/ops.h"

/* TEST_SANITIZED: 1 in an AddressSanitizer build (make test-asan; GCC
 * defines __SANITIZE_ADDRESS__, clang answers __has_feature). A test whose
 * statistics need many repetitions runs its code once there — ASan checks
 * the memory, not the statistics — and in full in the optimised and checked
 * suites. */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_SANITIZED 1
#endif
#endif
#ifndef TEST_SANITIZED
#define TEST_SANITIZED 0
#endif

/* The backend a test runs on: $VLA_DEVICE (the checked_ ctest runs set
 * "checked"; the CLI and library defaults read it too), else "cpu". Tests that hand the table host buffers (the nn
 * and tensor layers' own tests) use test_cpu_backend() instead. */
const vla_ops *test_backend(void);
const vla_ops *test_cpu_backend(void);
/* `tol` widened by the backend's declared tolerance against the CPU (ops->rtol). */
double test_tol(double tol);
/* Backend memory holding a copy of n host floats (free with ops->free), and the way back. */
float *test_dev_copy(const vla_ops *ops, const float *host, int64_t n);
void test_dev_read(const vla_ops *ops, float *host, const float *dev, int64_t n);
/* n floats of backend memory read back into a malloc'd host array (free it). */
float *test_dev_dup(const vla_ops *ops, const float *dev, int64_t n);

/* A policy's weights and gradients seen from the host, through its backend:
 * malloc'd copies (free them), and the way back (which says the weights
 * changed: vla_policy_weights_changed). */
struct vla_policy;
float *test_weights_get(const struct vla_policy *p);
void test_weights_set(struct vla_policy *p, const float *host);
float *test_grads_get(const struct vla_policy *p);
/* weights[i] = v, one element */
void test_weight_set1(struct vla_policy *p, int64_t i, float v);
/* Parameter k's weights from a safetensors tensor `name` (converted to f32). */
void test_param_load(struct vla_policy *p, int64_t k, const void *safetensors, const char *name);

/* A packed training batch of S ≤ TEST_POLICY_BATCH_MAXS samples for policy p, built
 * through the policy's own tokenizer and layout (host arrays): sample s has
 * an image unless s == 2, random state and actions (seeded), a padded last
 * step in odd samples, one fewer real action dim in sample 0 and, for GR00T,
 * embodiments cycling through the config's. Free with test_policy_batch_free. */
#define TEST_POLICY_BATCH_MAXS 4
struct vla_policy;
typedef struct {
    vla_batch b;
    int32_t cu[TEST_POLICY_BATCH_MAXS + 1], cu_img[TEST_POLICY_BATCH_MAXS + 1], rd[TEST_POLICY_BATCH_MAXS], emb[TEST_POLICY_BATCH_MAXS];
    uint64_t keys[TEST_POLICY_BATCH_MAXS];
    uint8_t *roles, *pad;
    int32_t *pos, *grp, *ids;
    float *images, *state, *actions;
} test_policy_batch;
void test_policy_batch_make(struct vla_policy *p, int32_t S, test_policy_batch *t);
void test_policy_batch_free(test_policy_batch *t);
/* A policy of the preset on test_backend() (every group trainable when
 * all_trainable), initialised with seed 3 and moved off its zero/one inits
 * (norms, biases, AdaRMS) by N(0, perturb²) so every path carries gradient. */
struct vla_policy *test_policy_make(const char *preset, bool all_trainable, double perturb);

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

/* Free cairo's font caches and fontconfig's configuration at the end of a
 * test program that drew text (plots), so LeakSanitizer in the Debug+ASan
 * build sees no leaks of theirs: libvla's vla_plot_release_caches, which
 * does nothing where nothing drew (cairo never loaded) or in a
 * VLA_MEDIA=OFF build. */
void test_release_font_caches(void);

/* rm -rf path (fails the test when the shell says so). */
void test_rmrf(const char *path);
/* The whole file at path, NUL-terminated (*n its length); fails the test when unreadable. Free it. */
char *test_slurp(const char *path, size_t *n);
/* "step":N "loss":X of every line of a run's metrics.jsonl, as text (one line
 * per logged step), so two runs' losses compare with one string compare. Free it. */
char *test_losses_text(const char *output_dir);

/* Damaged-file sweeps. `read` parses a whole file given as bytes (it may
 * write them to disk first) and returns its status; the bytes are an
 * exact-size heap copy, so the ASan build sees any read past the end.
 *
 * Every prefix of data[0..n) — all of them when `stride` is 1, else every
 * stride-th plus the 64 around each offset in marks[0..n_marks) (structure
 * boundaries) and the last 64 — must make `read` fail with a message;
 * `what` names the file in failures. */
typedef vla_status (*test_read_fn)(const uint8_t *data, size_t n, void *user);
void test_sweep_prefixes(const char *what, const uint8_t *data, size_t n, size_t stride, const size_t *marks,
                         int n_marks, test_read_fn read, void *user);
/* `count` single-bit flips at offsets and bits drawn from `seed` (offsets
 * within [from, n)): each must either read (VLA_OK: the format cannot tell,
 * e.g. a value inside a page) or fail with a message, never crash. Returns
 * how many were rejected. */
int test_sweep_bit_flips(const char *what, const uint8_t *data, size_t n, size_t from, int count, uint64_t seed,
                         test_read_fn read, void *user);

/* Record `episodes` expert episodes of the Reach environment as a LeRobot
 * v3.0 dataset at `root` (episode e uses seed0 + e; at most 50 steps each):
 * observation.image (video, TEST_REACH_IMAGE_SIZE²), observation.state (4-D),
 * action (2-D). nan_frame ≥ 0 poisons that frame's action (global frame
 * count) to test that NaN data is refused. Fails the test on any error. */
#define TEST_REACH_IMAGE_SIZE 64
void test_record_reach(const char *root, int episodes, uint64_t seed0, int nan_frame);

/* A LeRobot-like Parquet file written by vla.c's writer (3 row groups of 40
 * rows, pages of ~256 bytes): index int64, timestamp float,
 * observation.state list<float>[4], task string (repeating: dictionary),
 * image binary (every 5th null), done bool, reward double (every 5th null);
 * `codec` VLA_PQ_*, `page_version` 1 or 2. Fails the test on any error. */
void test_write_sample_parquet(const char *path, int codec, int page_version);
/* A safetensors file written by vla.c's writer: f32 [6,5], bf16 [16],
 * i64 [3], u8 [7] and two metadata entries. */
void test_write_sample_safetensors(const char *path);

#endif
