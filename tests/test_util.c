/* test_util.c — helpers shared by the cmocka tests (see test_util.h). */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/rng.h"
#include "io/safetensors.h"
#include "policy/policy.h"
#include "tensor/backend.h"
#include "train/plot.h"

static char tmp_dir[512];

static void remove_tmp_dir(void) {
    if (tmp_dir[0] && !getenv("VLA_KEEP_TMP")) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
        if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", tmp_dir);
    }
}

const char *test_source_path(const char *relative) {
    static char bufs[8][1024];
    static int next;
    const char *root = getenv("VLA_SOURCE_DIR");
    char *b = bufs[next++ & 7];
    snprintf(b, 1024, "%s/%s", root ? root : ".", relative);
    return b;
}

const char *test_tmp_dir(void) {
    if (!tmp_dir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(tmp_dir, sizeof tmp_dir, "%s/vla-test-XXXXXX", base ? base : "/tmp");
        if (!mkdtemp(tmp_dir)) {
            perror("mkdtemp");
            exit(1);
        }
        atexit(remove_tmp_dir);
    }
    return tmp_dir;
}

const char *test_tmp_path(const char *name) {
    static char bufs[8][1024];
    static int next;
    char *b = bufs[next++ & 7];
    snprintf(b, 1024, "%s/%s", test_tmp_dir(), name);
    return b;
}

const char *test_cli_path(void) {
    const char *p = getenv("VLA_CLI");
    return p ? p : "./vla";
}

int test_run(const char *cmd, char *out, size_t cap) {
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    size_t n = 0;
    if (out && cap) {
        n = fread(out, 1, cap - 1, f);
        out[n] = '\0';
    }
    char sink[4096];
    while (fread(sink, 1, sizeof sink, f) > 0) {
    }
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void test_rmrf(const char *path) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    assert_int_equal(system(cmd), 0);
}

char *test_slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    assert_non_null(buf);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
            assert_non_null(buf);
        }
    }
    fclose(f);
    buf[len] = '\0';
    if (n) *n = len;
    return buf;
}

char *test_losses_text(const char *output_dir) {
    char path[2048];
    snprintf(path, sizeof path, "%s/metrics.jsonl", output_dir);
    size_t n;
    char *data = test_slurp(path, &n);
    char *res = calloc(n + 1, 1), *save = NULL;
    assert_non_null(res);
    size_t k = 0;
    for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *l = strstr(line, "\"loss\":"), *s = strstr(line, "\"step\":");
        assert_non_null(l);
        assert_non_null(s);
        int m1 = (int)strcspn(s, ",}"), m2 = (int)strcspn(l, ",}");
        k += (size_t)sprintf(res + k, "%.*s %.*s\n", m1, s, m2, l);
    }
    free(data);
    return res;
}

void test_release_font_caches(void) { vla_plot_release_caches(); }

/* One read of a copy of data[0..n): exact size, so ASan catches overreads. */
static vla_status read_copy(const uint8_t *data, size_t n, test_read_fn read, void *user) {
    uint8_t *copy = malloc(n ? n : 1);
    assert_non_null(copy);
    if (n) memcpy(copy, data, n);
    vla_error_clear();
    vla_status st = read(copy, n, user);
    free(copy);
    return st;
}

static int near_mark(size_t len, size_t n, const size_t *marks, int n_marks) {
    if (len + 64 >= n) return 1;
    for (int i = 0; i < n_marks; i++)
        if (len + 64 >= marks[i] && len <= marks[i] + 64) return 1;
    return 0;
}

void test_sweep_prefixes(const char *what, const uint8_t *data, size_t n, size_t stride, const size_t *marks,
                         int n_marks, test_read_fn read, void *user) {
    if (stride < 1) stride = 1;
    for (size_t len = 0; len < n; len++) {
        if (len % stride && !near_mark(len, n, marks, n_marks)) continue;
        vla_status st = read_copy(data, len, read, user);
        if (st == VLA_OK) fail_msg("%s cut to %zu of %zu bytes was accepted", what, len, n);
        if (!vla_error_message()[0]) fail_msg("%s cut to %zu bytes: status %s without a message", what, len, vla_status_name(st));
    }
}

int test_sweep_bit_flips(const char *what, const uint8_t *data, size_t n, size_t from, int count, uint64_t seed,
                         test_read_fn read, void *user) {
    uint8_t *copy = malloc(n ? n : 1);
    assert_non_null(copy);
    memcpy(copy, data, n);
    vla_rng r = vla_rng_stream(seed, 0);
    int rejected = 0;
    for (int i = 0; i < count && from < n; i++) {
        size_t at = from + (size_t)(vla_rng_u32(&r) % (uint32_t)(n - from));
        uint8_t bit = (uint8_t)(1u << (vla_rng_u32(&r) % 8));
        copy[at] ^= bit;
        vla_status st = read_copy(copy, n, read, user);
        copy[at] ^= bit;
        if (st != VLA_OK) {
            rejected++;
            if (!vla_error_message()[0])
                fail_msg("%s with bit 0x%02x of byte %zu flipped: status %s without a message", what, bit, at,
                         vla_status_name(st));
        }
    }
    free(copy);
    return rejected;
}

/* ---- backends ----------------------------------------------------------------- */

const vla_ops *test_cpu_backend(void) { return vla_backend_find(VLA_BACKEND_DEFAULT); }

const vla_ops *test_backend(void) {
    const char *name = vla_backend_default_name();
    const vla_ops *ops = vla_backend_find(name);
    if (!ops) fail_msg("VLA_DEVICE=%s: no such backend in this build", name);
    if (vla_backend_probe(name) != VLA_OK) fail_msg("VLA_DEVICE=%s: %s", name, vla_error_message());
    return ops;
}

double test_tol(double tol) {
    double r = test_backend()->rtol;
    return r > tol ? r : tol;
}

float *test_dev_copy(const vla_ops *ops, const float *host, int64_t n) {
    float *d = ops->alloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!d) fail_msg("out of backend memory for %lld floats", (long long)n);
    if (n > 0) ops->to_device(d, host, (size_t)n * sizeof(float));
    return d;
}

void test_dev_read(const vla_ops *ops, float *host, const float *dev, int64_t n) {
    if (n > 0) ops->to_host(host, dev, (size_t)n * sizeof(float));
}

float *test_dev_dup(const vla_ops *ops, const float *dev, int64_t n) {
    float *h = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!h) fail_msg("out of memory for %lld floats", (long long)n);
    test_dev_read(ops, h, dev, n);
    return h;
}

float *test_weights_get(const vla_policy *p) { return test_dev_dup(p->tops, p->weights, p->n_weight_floats); }

void test_weights_set(vla_policy *p, const float *host) {
    p->tops->to_device(p->weights, host, (size_t)p->n_weight_floats * sizeof(float));
    vla_policy_weights_changed(p); /* as every writer of weights must: frozen weights' copies outlive holds */
}

float *test_grads_get(const vla_policy *p) { return test_dev_dup(p->tops, p->grads, p->n_grad_floats); }

void test_weight_set1(vla_policy *p, int64_t i, float v) { p->tops->to_device(p->weights + i, &v, sizeof v); }

void test_param_load(vla_policy *p, int64_t k, const void *safetensors, const char *name) {
    float *dst = vla_policy_param_stage(p, k);
    if (!dst) fail_msg("out of memory staging %s", name);
    vla_status st = vla_safetensors_load_f32((const vla_safetensors *)safetensors, name, dst,
                                             (size_t)p->params[k].spec->numel);
    if (vla_policy_param_commit(p, k, dst) >= 0 && st == VLA_OK) fail_msg("%s holds non-finite values", name);
    if (st != VLA_OK) fail_msg("%s: %s", name, vla_error_message());
}
