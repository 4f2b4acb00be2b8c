/* test_backends.c — the backend seam itself (tensor/backend.h):
 *   - every backend in the registry fills every slot of the op table, and
 *     an unknown --device name lists the ones built in;
 *   - `checked` really traps: a host read or write of its memory outside an
 *     op call dies with SIGSEGV (in a forked child), while the same bytes
 *     through to_host / ops are fine — and a deliberate bypass in policy
 *     code (reading p->weights with the host) crashes the same way;
 *   - `checked` gives the cpu backend's numbers bit for bit (its declared
 *     rtol is 0): pi05-nano and groot-nano loss, every gradient and sampled
 *     actions from the same weights and batch, and a short `vla train` run's
 *     losses;
 *   - training steps on a device backend against cpu (test_device_training_step):
 *     three steps (loss, backward, the trainer's AdamW) from the same weights
 *     and batch, loss and gradient norm of each step within the backend's
 *     rtol, every gradient tensor normwise within 10·rtol, one JSON line per
 *     step on stdout. Here it runs `checked` on the nano presets (exact);
 *     scripts/gpu_check.sh runs it with VLA_EQUIV_DEVICE=cuda
 *     VLA_EQUIV_CONFIGS=pi05-small,groot-small (VLA_EQUIV_ONLY=1 runs it alone). */
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/rng.h"
#include "policy/config.h"
#include "policy/policy.h"
#include "tensor/backend.h"
#include "tensor/ops_checked.h"
#include "test_util.h"
#include "train/trainer.h"
#include "train/trainer_opt.h"

/* ---- the table ------------------------------------------------------------------ */

static void test_every_slot_filled(void **state) {
    (void)state;
    assert_true(vla_backend_count() >= 2);
    for (int i = 0; i < vla_backend_count(); i++) {
        const char *name = vla_backend_name(i);
        const vla_ops *ops = vla_backend_find(name);
        assert_non_null(ops);
        assert_string_equal(ops->name, name);
        assert_true(ops->rtol >= 0);
        /* from `alloc` to the end the table is function pointers only */
        const char *base = (const char *)ops;
        for (size_t off = offsetof(vla_ops, alloc); off + sizeof(void (*)(void)) <= sizeof(vla_ops);
             off += sizeof(void (*)(void))) {
            void (*fp)(void);
            memcpy(&fp, base + off, sizeof fp);
            if (!fp) fail_msg("backend %s: slot at byte %zu of vla_ops is empty", name, off);
        }
    }
    const vla_ops *ops;
    assert_int_equal(vla_backend_get("tpu", &ops), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "cpu, checked"));
    assert_non_null(vla_backend_find("cpu"));
    assert_true(vla_backend_find("cpu")->host_memory);
    assert_false(vla_backend_find("checked")->host_memory);
}

/* ---- checked traps host access ---------------------------------------------------------- */

/* Run fn in a child; returns the signal that ended it (0 after a normal exit,
 * whose status must be 0). */
static int child_signal(void (*fn)(void)) {
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        fn();
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status)) return WTERMSIG(status);
    assert_int_equal(WEXITSTATUS(status), 0);
    return 0;
}

static float *filled_buffer(const vla_ops *ops) {
    float *p = ops->alloc(64 * sizeof(float));
    if (!p) _exit(3);
    ops->fill(p, 1.5f, 64);
    return p;
}

static void read_through_ops(void) {
    const vla_ops *ops = vla_backend_find("checked");
    float *p = filled_buffer(ops), x = 0;
    ops->to_host(&x, p + 7, sizeof x);
    if (x != 1.5f || ops->sum(p, 64) != 96.0) _exit(4);
    ops->free(p);
}

static void read_directly(void) {
    const vla_ops *ops = vla_backend_find("checked");
    volatile float *p = filled_buffer(ops);
    volatile float x = p[7]; /* the bypass */
    (void)x;
}

static void write_directly(void) {
    const vla_ops *ops = vla_backend_find("checked");
    float *p = filled_buffer(ops);
    memset(p, 0, 16); /* the bypass */
}

static void test_checked_traps_host_access(void **state) {
    (void)state;
    assert_int_equal(child_signal(read_through_ops), 0);
    assert_int_equal(child_signal(read_directly), SIGSEGV);
    assert_int_equal(child_signal(write_directly), SIGSEGV);
    /* the same bypass on the cpu backend is legal (its memory is the host's) */
    const vla_ops *cpu = vla_backend_find("cpu");
    float *p = cpu->alloc(64 * sizeof(float));
    cpu->fill(p, 2.0f, 64);
    assert_true(p[3] == 2.0f);
    cpu->free(p);
    /* regions are released */
    int before = vla_checked_regions();
    const vla_ops *chk = vla_backend_find("checked");
    float *q = chk->alloc(10);
    assert_int_equal(vla_checked_regions(), before + 1);
    chk->free(q);
    assert_int_equal(vla_checked_regions(), before);
}

/* A deliberate bypass in model-level code: the host reading a weight of a
 * policy on the checked backend. */
static void policy_reads_weight_directly(void) {
    vla_policy_config c;
    if (vla_policy_config_load("pi05-nano", &c) != VLA_OK) _exit(5);
    vla_policy *p = NULL;
    if (vla_policy_create(&c, vla_backend_find("checked"), &p) != VLA_OK) _exit(6);
    volatile float x = p->weights[0];
    (void)x;
}

static void policy_reads_weight_through_table(void) {
    vla_policy_config c;
    if (vla_policy_config_load("pi05-nano", &c) != VLA_OK) _exit(5);
    vla_policy *p = NULL;
    if (vla_policy_create(&c, vla_backend_find("checked"), &p) != VLA_OK) _exit(6);
    float x = NAN;
    p->tops->to_host(&x, p->weights, sizeof x);
    if (!isfinite(x)) _exit(7);
    vla_policy_free(p);
}

static void test_checked_catches_a_policy_bypass(void **state) {
    (void)state;
    assert_int_equal(child_signal(policy_reads_weight_through_table), 0);
    assert_int_equal(child_signal(policy_reads_weight_directly), SIGSEGV);
}

/* ---- checked equals cpu ---------------------------------------------------------------- */

static const char *const TASKS[] = {"push the T", "pick it up", "", "go left"};

typedef struct {
    vla_observation obs;
    vla_obs_pack pack;
    float *images, *state, *actions;
    uint8_t *valid, *pad;
    uint64_t keys[4];
    int32_t emb[4];
} small_batch;

static void small_batch_make(const vla_policy *p, int32_t S, small_batch *b) {
    memset(b, 0, sizeof *b);
    const vla_policy_config *c = &p->cfg;
    int64_t cams = c->vision.cameras, img = c->vision.channels * c->vision.image_size * c->vision.image_size;
    int64_t SD = c->action.state_dim, H = c->action.horizon, A = c->action.action_dim;
    b->images = calloc((size_t)(S * cams * img + 1), sizeof(float));
    b->state = calloc((size_t)(S * SD), sizeof(float));
    b->actions = calloc((size_t)(S * H * A), sizeof(float));
    b->valid = calloc((size_t)(S * cams + 1), 1);
    b->pad = calloc((size_t)(S * H), 1);
    vla_rng r = vla_rng_stream(31, 0);
    for (int64_t i = 0; i < S * cams * img; i++) b->images[i] = vla_rng_uniform(&r);
    for (int64_t i = 0; i < S * SD; i++) b->state[i] = 2 * vla_rng_uniform(&r) - 1;
    for (int64_t i = 0; i < S * H * A; i++) b->actions[i] = (float)(0.5 * vla_rng_normal(&r));
    for (int64_t i = 0; i < S * cams; i++) b->valid[i] = i != 1; /* sample 1 lost its camera */
    for (int64_t h = 0; h < H; h++) b->pad[H + h] = h >= H - 1;
    for (int s = 0; s < S; s++) b->keys[s] = 40 + (uint64_t)s, b->emb[s] = 0;
    b->obs = (vla_observation){.n_samples = S, .task = TASKS, .images = b->images, .image_valid = b->valid,
                               .state = b->state, .embodiment = b->emb, .seed = 3, .sample_keys = b->keys};
    assert_int_equal(vla_obs_pack_build(p, &b->obs, true, &b->pack), VLA_OK);
    b->pack.b.actions = b->actions, b->pack.b.action_is_pad = b->pad, b->pack.b.seed = 9;
    b->pack.b.sample_keys = b->keys;
}

static void small_batch_free(small_batch *b) {
    vla_obs_pack_free(&b->pack);
    free(b->images), free(b->state), free(b->actions), free(b->valid), free(b->pad);
}

static void same_numbers(const char *preset) {
    vla_policy_config c;
    assert_int_equal(vla_policy_config_load(preset, &c), VLA_OK);
    memset(c.frozen, 0, sizeof c.frozen); /* every stage's backward runs */
    vla_policy *p[2];
    const char *names[2] = {"cpu", "checked"};
    double loss[2];
    float *g[2], *a[2];
    int32_t S = 3;
    int64_t na = S * c.action.horizon * c.action.action_dim;
    for (int k = 0; k < 2; k++) {
        assert_int_equal(vla_policy_create(&c, vla_backend_find(names[k]), &p[k]), VLA_OK);
        assert_int_equal(vla_policy_init_weights(p[k], 12), VLA_OK);
        small_batch b;
        small_batch_make(p[k], S, &b);
        vla_loss_info info;
        vla_policy_zero_grad(p[k]);
        if (vla_policy_loss(p[k], &b.pack.b, true, &info) != VLA_OK) fail_msg("%s: %s", preset, vla_error_message());
        assert_int_equal(vla_policy_backward(p[k]), VLA_OK);
        loss[k] = info.loss;
        g[k] = test_grads_get(p[k]);
        a[k] = calloc((size_t)na, sizeof(float));
        assert_int_equal(vla_policy_sample_actions(p[k], &b.obs, a[k]), VLA_OK);
        small_batch_free(&b);
    }
    print_message("%s: loss %.9g on cpu, %.9g on checked\n", preset, loss[0], loss[1]);
    assert_true(isfinite(loss[0]) && loss[0] > 0);
    assert_memory_equal(&loss[0], &loss[1], sizeof loss[0]);
    assert_int_equal(p[0]->n_grad_floats, p[1]->n_grad_floats);
    assert_memory_equal(g[0], g[1], (size_t)p[0]->n_grad_floats * sizeof(float));
    assert_memory_equal(a[0], a[1], (size_t)na * sizeof(float));
    for (int k = 0; k < 2; k++) free(g[k]), free(a[k]), vla_policy_free(p[k]);
}

static void test_checked_equals_cpu_policies(void **state) {
    (void)state;
    same_numbers("pi05-nano");
    same_numbers("groot-nano");
}

static void test_checked_equals_cpu_training(void **state) {
    (void)state;
    const char *ds = test_tmp_path("reach_ds");
    test_record_reach(ds, 6, 0, -1);
    char *losses[2];
    const char *devices[2] = {"cpu", "checked"};
    for (int k = 0; k < 2; k++) {
        char out[1024];
        snprintf(out, sizeof out, "%s", test_tmp_path(devices[k]));
        vla_train_opts o;
        vla_train_opts_default(&o);
        o.dataset_root = ds, o.policy_type = "groot", o.policy_config = "groot-nano", o.output_dir = out;
        o.batch_size = 4, o.steps = 4, o.seed = 3, o.num_workers = 1, o.log_freq = 1, o.save_freq = 2;
        o.progress = false, o.device = devices[k], o.ema_decay = 0.9;
        vla_train_result r;
        if (vla_train(&o, &r) != VLA_OK) fail_msg("train on %s: %s", devices[k], vla_error_message());
        losses[k] = test_losses_text(out);
    }
    assert_true(strlen(losses[0]) > 20);
    assert_string_equal(losses[0], losses[1]);
    free(losses[0]), free(losses[1]);
}

/* ---- a device's training steps against cpu ---------------------------------------------------- */

static vla_train_opt *make_opt(vla_policy *p, vla_comm *comm) {
    vla_train_opt_overrides ov = {-1, -1, -1, 0};
    vla_train_opt *opt = NULL;
    if (vla_train_opt_create_for_policy(comm, p, &ov, &opt) != VLA_OK) fail_msg("optimizer: %s", vla_error_message());
    return opt;
}

static double rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-30); }

static void device_steps(const char *preset, const char *device) {
    vla_policy_config c;
    assert_int_equal(vla_policy_config_load(preset, &c), VLA_OK);
    const char *names[2] = {"cpu", device};
    vla_policy *p[2];
    vla_train_opt *opt[2];
    small_batch b[2];
    const vla_ops *dev = vla_backend_find(device);
    if (!dev) fail_msg("VLA_EQUIV_DEVICE=%s: no such backend in this build", device);
    if (vla_backend_probe(device) != VLA_OK) fail_msg("%s", vla_error_message());
    double tol = dev->rtol;
    vla_comm *comm = NULL;
    assert_int_equal(vla_comm_init(&(vla_comm_options){VLA_COMM_SINGLE, 0}, &comm), VLA_OK);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(vla_policy_create(&c, vla_backend_find(names[k]), &p[k]), VLA_OK);
        assert_int_equal(vla_policy_init_weights(p[k], 12), VLA_OK);
        small_batch_make(p[k], 4, &b[k]);
        opt[k] = make_opt(p[k], comm);
    }
    for (int step = 0; step < 3; step++) {
        double loss[2], norm[2];
        float *g[2];
        for (int k = 0; k < 2; k++) {
            vla_loss_info info;
            vla_policy_zero_grad(p[k]);
            if (vla_policy_loss(p[k], &b[k].pack.b, true, &info) != VLA_OK)
                fail_msg("%s on %s: %s", preset, names[k], vla_error_message());
            assert_int_equal(vla_policy_backward(p[k]), VLA_OK);
            loss[k] = info.loss;
            g[k] = test_grads_get(p[k]);
            if (vla_train_opt_step(opt[k], p[k]->weights, p[k]->grads, 1e-4, 1.0, NULL, &norm[k]) != VLA_OK)
                fail_msg("%s step on %s: %s", preset, names[k], vla_error_message());
        }
        /* per tensor: normwise relative difference of the gradients */
        double worst = 0;
        const char *worst_name = "";
        for (int64_t i = 0; i < p[0]->specs.n; i++) {
            if (!p[0]->params[i].grad) continue;
            int64_t off = p[0]->params[i].grad - p[0]->grads, n = p[0]->params[i].spec->numel;
            double num = 0, den = 0;
            for (int64_t j = 0; j < n; j++) {
                double d = (double)g[1][off + j] - g[0][off + j];
                num += d * d, den += (double)g[0][off + j] * g[0][off + j];
            }
            double r = den > 0 ? sqrt(num / den) : sqrt(num);
            if (r > worst) worst = r, worst_name = p[0]->params[i].spec->name;
        }
        printf("{\"check\":\"train_step\",\"config\":\"%s\",\"device\":\"%s\",\"step\":%d,\"loss_cpu\":%.9g,"
               "\"loss_device\":%.9g,\"loss_rel\":%.3g,\"grad_norm_cpu\":%.9g,\"grad_norm_device\":%.9g,"
               "\"grad_norm_rel\":%.3g,\"grad_rel_max\":%.3g,\"grad_rel_max_tensor\":\"%s\",\"rtol\":%g}\n",
               preset, device, step, loss[0], loss[1], rel(loss[1], loss[0]), norm[0], norm[1], rel(norm[1], norm[0]),
               worst, worst_name, tol);
        fflush(stdout);
        assert_true(isfinite(loss[0]) && loss[0] > 0 && isfinite(norm[1]));
        if (rel(loss[1], loss[0]) > tol || rel(norm[1], norm[0]) > tol || worst > 10 * tol)
            fail_msg("%s step %d on %s: loss %.9g vs cpu %.9g, gradient norm %.9g vs %.9g, worst gradient %s off by "
                     "%.3g (rtol %g)", preset, step, device, loss[1], loss[0], norm[1], norm[0], worst_name, worst, tol);
        free(g[0]), free(g[1]);
    }
    for (int k = 0; k < 2; k++) vla_train_opt_free(opt[k]), small_batch_free(&b[k]), vla_policy_free(p[k]);
    vla_comm_finalize(comm);
}

static void test_device_training_step(void **state) {
    (void)state;
    const char *device = getenv("VLA_EQUIV_DEVICE"), *configs = getenv("VLA_EQUIV_CONFIGS");
    char list[256];
    snprintf(list, sizeof list, "%s", configs && *configs ? configs : "pi05-nano,groot-nano");
    char *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
        device_steps(t, device && *device ? device : "checked");
}

int main(void) {
    const char *only = getenv("VLA_EQUIV_ONLY");
    if (only && *only == '1') cmocka_set_test_filter("test_device_training_step");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_slot_filled),
        cmocka_unit_test(test_checked_traps_host_access),
        cmocka_unit_test(test_checked_catches_a_policy_bypass),
        cmocka_unit_test(test_checked_equals_cpu_policies),
        cmocka_unit_test(test_checked_equals_cpu_training),
        cmocka_unit_test(test_device_training_step),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_release_font_caches(); /* the training run drew plots */
    return rc;
}
