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
 *   - training steps on a device backend against cpu (test_device_training_step,
 *     "equiv"): N steps (loss, backward, the trainer's AdamW) from the same
 *     weights and batch in each precision mode (fp32, bf16, fp8), the loss
 *     of every step within the mode's loss rtol, every gradient tensor t
 *     within max(rtol·‖g_t‖, floor·‖g‖) — a floor on the global norm, so a
 *     tensor whose true gradient is zero passes on rounding noise (the
 *     per-mode tolerances and why: equiv_mode_for, docs/cuda.md) — one JSON
 *     line per step on stdout. Here it runs `checked` on the nano presets,
 *     3 steps, bit for bit in every mode; scripts/gpu_check.sh runs it with
 *     VLA_EQUIV_DEVICE=cuda VLA_EQUIV_CONFIGS=pi05-small,groot-small
 *     VLA_EQUIV_STEPS=20 (VLA_EQUIV_MODES picks modes; VLA_EQUIV_ONLY=1 runs
 *     it alone);
 *   - the criterion can fail for the right reason only (test_equiv_criterion):
 *     rounding noise on a zero-gradient key bias passes, a 1% error planted
 *     in one gradient tensor fails, naming it. */
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nn/linear.h"
#include "base/fsutil.h"
#include "base/rng.h"
#include "policy/config.h"
#include "policy/policy.h"
#include "policy/precision.h"
#include "policy/region.h"
#include "tensor/backend.h"
#include "tensor/checked/ops_checked.h"
#include "test_util.h"
#include "train/step.h"
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

static void small_batch_make_tasks(const vla_policy *p, int32_t S, const char *const *tasks, small_batch *b);
static void small_batch_make(const vla_policy *p, int32_t S, small_batch *b) { small_batch_make_tasks(p, S, TASKS, b); }

/* with the samples' prompts from tasks[0..S) */
static void small_batch_make_tasks(const vla_policy *p, int32_t S, const char *const *tasks, small_batch *b) {
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
    b->obs = (vla_observation){.n_samples = S, .task = tasks, .images = b->images, .image_valid = b->valid,
                               .state = b->state, .embodiment = b->emb, .seed = 3, .sample_keys = b->keys};
    assert_int_equal(vla_obs_pack_build(p, &b->obs, true, &b->pack), VLA_OK);
    b->pack.b.actions = b->actions, b->pack.b.action_is_pad = b->pad, b->pack.b.seed = 9;
    b->pack.b.sample_keys = b->keys;
}

static void small_batch_free(small_batch *b) {
    vla_obs_pack_free(&b->pack);
    free(b->images), free(b->state), free(b->actions), free(b->valid), free(b->pad);
}

/* min_dim: FP8's recipe.min_dim (policy/precision.h): 32 mixes FP8 and bf16 linears in one block */
/* checked's operand casts (ops.h, VLA_STAT_OPERAND_CASTS) in the last same_numbers' loss and backward */
static int64_t last_step_casts;

/* cpu and checked give the same loss, gradients and actions; returns the bf16 copies checked's producers
 * were handed (nn/linear.h, producer casts) */
static int64_t same_numbers(const char *preset, vla_precision mode, int64_t min_dim) {
    vla_policy_config c;
    assert_int_equal(vla_policy_config_load(preset, &c), VLA_OK);
    memset(c.frozen, 0, sizeof c.frozen); /* every stage's backward runs */
    vla_policy *p[2];
    const char *names[2] = {"cpu", "checked"};
    double loss[2];
    float *g[2], *a[2];
    int64_t copies = 0;
    int32_t S = 3;
    int64_t na = S * c.action.horizon * c.action.action_dim;
    for (int k = 0; k < 2; k++) {
        assert_int_equal(vla_policy_create(&c, vla_backend_find(names[k]), &p[k]), VLA_OK);
        assert_int_equal(vla_policy_init_weights(p[k], 12), VLA_OK);
        vla_fp8_recipe r;
        vla_fp8_recipe_default(&r);
        r.min_dim = min_dim;
        if (vla_policy_set_precision(p[k], mode, &r) != VLA_OK) fail_msg("%s", vla_error_message());
        /* kept copies (nn/linear.h): bf16, on the backend that keeps copies (checked), with both switches on */
        bool kept = k == 1 && mode == VLA_PREC_BF16 && vla_linear_kept_copies_on() && vla_linear_input_ready_on();
        assert_true(vla_policy_kept_copies(p[k]) == (kept ? p[k]->tops : NULL));
        small_batch b;
        small_batch_make(p[k], S, &b);
        vla_loss_info info;
        int64_t c0 = vla_linear_producer_copies(), k0 = p[k]->tops->stat(VLA_STAT_OPERAND_CASTS);
        vla_policy_zero_grad(p[k]);
        /* held as a training step holds them: checked casts each weight once (ops.h, ready_bytes), cpu at
         * every GEMM — the same bits */
        vla_policy_weights_hold(p[k]);
        if (vla_policy_loss(p[k], &b.pack.b, true, &info) != VLA_OK) fail_msg("%s: %s", preset, vla_error_message());
        assert_int_equal(vla_policy_backward(p[k]), VLA_OK);
        vla_policy_weights_release(p[k]);
        if (k == 1) last_step_casts = p[k]->tops->stat(VLA_STAT_OPERAND_CASTS) - k0;
        loss[k] = info.loss;
        g[k] = test_grads_get(p[k]);
        a[k] = calloc((size_t)na, sizeof(float));
        assert_int_equal(vla_policy_sample_actions(p[k], &b.obs, a[k]), VLA_OK);
        if (k == 0) assert_int_equal(vla_linear_producer_copies(), c0); /* cpu keeps no copies */
        else copies = vla_linear_producer_copies() - c0;
        small_batch_free(&b);
    }
    print_message("%s %s (min_dim %lld): loss %.9g on cpu, %.9g on checked\n", preset, vla_precision_name(mode),
                  (long long)min_dim, loss[0], loss[1]);
    assert_true(isfinite(loss[0]) && loss[0] > 0);
    assert_memory_equal(&loss[0], &loss[1], sizeof loss[0]);
    assert_int_equal(p[0]->n_grad_floats, p[1]->n_grad_floats);
    assert_memory_equal(g[0], g[1], (size_t)p[0]->n_grad_floats * sizeof(float));
    assert_memory_equal(a[0], a[1], (size_t)na * sizeof(float));
    for (int k = 0; k < 2; k++) free(g[k]), free(a[k]), vla_policy_free(p[k]);
    return copies;
}

static void test_checked_equals_cpu_policies(void **state) {
    (void)state;
    int64_t casts_on[2][2] = {{0}}, casts_off[2][2] = {{0}}; /* [bf16, fp8][preset] */
    const char *presets[2] = {"pi05-nano", "groot-nano"};
    for (int m = VLA_PREC_FP32; m <= VLA_PREC_FP8; m++) {
        int64_t c = 0;
        for (int i = 0; i < 2; i++) {
            c += same_numbers(presets[i], (vla_precision)m, 0);
            if (m == VLA_PREC_FP32) assert_int_equal(last_step_casts, 0); /* f32 GEMMs cast nothing */
            else casts_on[m - VLA_PREC_BF16][i] = last_step_casts;
        }
        /* bf16: the norms, the GLU and GELU's epilogue wrote the GEMMs' copies (at least the norms' two and
         * the MLP hidden's one per block); FP8: the norms (two per block, TE's LayerNormLinear) — and the
         * bits above are cpu's, which casts at every GEMM */
        if (m == VLA_PREC_BF16) assert_true(c >= 3 * 4);
        else if (m == VLA_PREC_FP8) assert_true(c >= 2 * 4);
        else assert_int_equal(c, 0);
    }
    /* kept copies off (nn/linear.h): h1, h2 and the gated MLPs' hidden kept as f32 again, their weight
     * gradients casting them — the same bits (cpu's), and more casts */
    vla_linear_set_kept_copies(false);
    for (int i = 0; i < 2; i++) {
        same_numbers(presets[i], VLA_PREC_BF16, 0);
        print_message("%s bf16 loss + backward on checked: %lld operand casts keeping the copies, %lld keeping f32\n",
                      presets[i], (long long)casts_on[0][i], (long long)last_step_casts);
        assert_true(casts_on[0][i] < last_step_casts);
    }
    vla_linear_set_kept_copies(true);
    /* the producers' copies off: the GEMMs cast again, the same bits — and more casts (ops.h, OPERAND_CASTS) */
    vla_linear_set_producer_casts(false);
    for (int m = VLA_PREC_BF16; m <= VLA_PREC_FP8; m++)
        for (int i = 0; i < 2; i++) {
            assert_int_equal(same_numbers(presets[i], (vla_precision)m, 0), 0);
            int64_t on = casts_on[m - VLA_PREC_BF16][i], off = casts_off[m - VLA_PREC_BF16][i] = last_step_casts;
            print_message("%s %s loss + backward on checked: %lld operand casts with the producers' copies, %lld "
                          "without\n", presets[i], vla_precision_name((vla_precision)m), (long long)on,
                          (long long)off);
            assert_true(on > 0 && on < off);
        }
    vla_linear_set_producer_casts(true);
    same_numbers("pi05-nano", VLA_PREC_FP8, 32);
    same_numbers("groot-nano", VLA_PREC_FP8, 32);
    /* FP8's shared input casts (nn/linear.h): off, each linear casts its own input — the same bits, and
     * more casts; on, with --fp8.min_dim mixing FP8 and bf16 readers of one input, cpu's bits too */
    for (int i = 0; i < 2; i++) {
        same_numbers(presets[i], VLA_PREC_FP8, 0);
        int64_t shared = last_step_casts;
        vla_linear_set_fp8_shared_casts(false);
        same_numbers(presets[i], VLA_PREC_FP8, 0);
        vla_linear_set_fp8_shared_casts(true);
        print_message("%s fp8 loss + backward on checked: %lld operand casts sharing input casts, %lld "
                      "without\n", presets[i], (long long)shared, (long long)last_step_casts);
        assert_true(shared > 0 && shared < last_step_casts);
    }
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

/* The gradient criterion (docs/cuda.md, "Equivalence"). Tensor t passes when
 *     ‖g_dev,t − g_cpu,t‖ ≤ max(rtol · ‖g_cpu,t‖, floor · ‖g_cpu‖)
 * (2-norms; ‖g_cpu‖ is the whole gradient's). The first term is the usual
 * normwise relative check. The second is why: rounding noise in a gradient
 * entry scales with the terms summed to make it, not with the result, so a
 * tensor whose true gradient is zero — a key bias, under softmax's shift
 * invariance Σ_j dS_ij = 0 — comes back as rounding noise on both backends,
 * unrelated noise, "off by 1.39" relatively although both are right. Judged
 * against the global norm that noise is ~1e-6 and passes, while a wrong
 * kernel on any tensor carrying a real share of the gradient still fails:
 * the smallest relative error caught on tensor t is
 * max(rtol, floor·‖g‖/‖g_t‖) (test_equiv_criterion plants one). An exact
 * backend (rtol 0, `checked`) gets 0 for both: bit for bit. */
typedef struct {
    double worst;            /* max over tensors of error / allowed (≤ 1 passes; INFINITY: an exact check missed) */
    double worst_rel;        /* that tensor's ‖error‖ / ‖g_cpu,t‖ */
    const char *worst_name;
    double old_worst;        /* the per-tensor relative criterion alone, for the record */
} grad_verdict;

static grad_verdict grad_check(const vla_policy *p, const float *ref, const float *got, double rtol, double floor) {
    grad_verdict v = {0, 0, "", 0};
    double global = 0;
    for (int64_t j = 0; j < p->n_grad_floats; j++) global += (double)ref[j] * ref[j];
    global = sqrt(global);
    for (int64_t i = 0; i < p->specs.n; i++) {
        if (!p->params[i].grad) continue;
        int64_t off = p->params[i].grad - p->grads, n = p->params[i].spec->numel;
        double num = 0, den = 0;
        for (int64_t j = 0; j < n; j++) {
            double d = (double)got[off + j] - ref[off + j];
            num += d * d, den += (double)ref[off + j] * ref[off + j];
        }
        num = sqrt(num), den = sqrt(den);
        double allowed = fmax(rtol * den, floor * global);
        double r = num == 0 ? 0 : allowed > 0 ? num / allowed : INFINITY;
        double rel_own = den > 0 ? num / den : num;
        if (rel_own > v.old_worst) v.old_worst = rel_own;
        if (r > v.worst || (r == v.worst && r > 0 && !*v.worst_name))
            v.worst = r, v.worst_rel = rel_own, v.worst_name = p->params[i].spec->name;
    }
    return v;
}

/* One precision mode's tolerances against cpu. An exact backend (rtol 0)
 * gets 0 everywhere. Otherwise (cuda, rtol 2e-4 in fp32):
 *   fp32: gradients rtol = floor = 10·rtol at every step; loss rtol per step.
 *         Both sides round the same f32 operations in other orders.
 *   bf16: gradients 1e-2 (rtol and floor) at step 0; loss 1e-2 per step.
 *   fp8:  gradients 5e-2 at step 0; loss 3e-2 per step.
 * In bf16/FP8 both backends round the same f32 values to the format, but a
 * value computed in another summation order can land on the other side of a
 * rounding boundary, one step of the format's resolution (2^-8 for bf16,
 * 2^-4 for E4M3), so elementwise agreement is not expected; normwise, such
 * flips are rare and the error is a fraction of that step. After step 0 the
 * master weights differ by an ulp and the flips fall elsewhere: the
 * gradients are compared where both sides start from the same weights
 * (step 0) and the loss curve over every step. These bf16/FP8 figures are
 * first estimates from the formats' resolution; each device run records the
 * measured worst per mode (the JSON lines), the evidence to tighten them. */
typedef struct {
    const char *name;
    vla_precision mode;
    double grad_rtol, grad_floor, loss_rtol;
    bool grads_every_step;
} equiv_mode;

static equiv_mode equiv_mode_for(vla_precision mode, double rtol) {
    equiv_mode m = {vla_precision_name(mode), mode, 0, 0, 0, mode == VLA_PREC_FP32};
    if (rtol == 0) return m;
    if (mode == VLA_PREC_FP32) m.grad_rtol = m.grad_floor = 10 * rtol, m.loss_rtol = rtol;
    else if (mode == VLA_PREC_BF16) m.grad_rtol = m.grad_floor = 1e-2, m.loss_rtol = 1e-2;
    else m.grad_rtol = m.grad_floor = 5e-2, m.loss_rtol = 3e-2;
    return m;
}

/* A planted error (tests only): gradient tensor `tensor` of the device side
 * gets `rel`·‖g_t‖ added (a fixed random direction) at step 0 before the
 * check, as a wrong kernel would; or, with `abs_of_global` > 0, noise of
 * norm abs_of_global·‖g‖, as rounding would. tensor < 0: none. */
typedef struct {
    int64_t tensor;
    double rel, abs_of_global;
    uint64_t seed; /* the direction's random stream */
} equiv_plant;

static void plant_apply(const vla_policy *p, const float *ref, float *got, const equiv_plant *pl) {
    if (!pl || pl->tensor < 0) return;
    int64_t off = p->params[pl->tensor].grad - p->grads, n = p->params[pl->tensor].spec->numel;
    double own = 0, global = 0, dn = 0;
    for (int64_t j = 0; j < n; j++) own += (double)ref[off + j] * ref[off + j];
    for (int64_t j = 0; j < p->n_grad_floats; j++) global += (double)ref[j] * ref[j];
    double *d = malloc((size_t)n * sizeof(double));
    assert_non_null(d);
    vla_rng r = vla_rng_stream(77 + pl->seed, (uint64_t)pl->tensor);
    for (int64_t j = 0; j < n; j++) d[j] = vla_rng_normal(&r), dn += d[j] * d[j];
    double scale = (pl->abs_of_global > 0 ? pl->abs_of_global * sqrt(global) : pl->rel * sqrt(own)) / sqrt(dn);
    for (int64_t j = 0; j < n; j++) got[off + j] = (float)(got[off + j] + scale * d[j]);
    free(d);
}

static vla_train_opt *make_opt(vla_policy *p, vla_comm *comm) {
    vla_train_opt_overrides ov = {-1, -1, -1, 0};
    vla_train_opt *opt = NULL;
    if (vla_train_opt_create_for_policy(comm, p, &ov, &opt) != VLA_OK) fail_msg("optimizer: %s", vla_error_message());
    return opt;
}

static double rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-30); }

/* `steps` training steps of `preset` in mode m on cpu and on `device` from
 * the same weights and batch; one JSON line per step on stdout. Returns true
 * when every check passed, else false with why in msg. */
static bool device_steps(const char *preset, const char *device, const equiv_mode *m, int steps,
                         const equiv_plant *plant, char *msg, size_t cap) {
    vla_policy_config c;
    assert_int_equal(vla_policy_config_load(preset, &c), VLA_OK);
    const char *names[2] = {"cpu", device};
    vla_policy *p[2];
    vla_train_opt *opt[2];
    small_batch b[2];
    const vla_ops *dev = vla_backend_find(device);
    if (!dev) fail_msg("VLA_EQUIV_DEVICE=%s: no such backend in this build", device);
    if (vla_backend_probe(device) != VLA_OK) fail_msg("%s", vla_error_message());
    vla_comm *comm = NULL;
    assert_int_equal(vla_comm_init(&(vla_comm_options){VLA_COMM_SINGLE, 0}, &comm), VLA_OK);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(vla_policy_create(&c, vla_backend_find(names[k]), &p[k]), VLA_OK);
        assert_int_equal(vla_policy_init_weights(p[k], 12), VLA_OK);
        if (vla_policy_set_precision(p[k], m->mode, NULL) != VLA_OK)
            fail_msg("%s %s on %s: %s", preset, m->name, names[k], vla_error_message());
        small_batch_make(p[k], 4, &b[k]);
        opt[k] = make_opt(p[k], comm);
    }
    bool ok = true;
    msg[0] = 0;
    for (int step = 0; step < steps && ok; step++) {
        double loss[2], norm[2];
        float *g[2];
        for (int k = 0; k < 2; k++) {
            vla_loss_info info;
            vla_policy_zero_grad(p[k]);
            vla_policy_weights_hold(p[k]); /* as vla_train_step holds them: each weight cast once, */
            vla_policy_weights_refresh(p[k]); /* ahead of the step's captured regions (a device replays them) */
            if (vla_policy_loss(p[k], &b[k].pack.b, true, &info) != VLA_OK)
                fail_msg("%s on %s: %s", preset, names[k], vla_error_message());
            assert_int_equal(vla_policy_backward(p[k]), VLA_OK);
            vla_policy_weights_release(p[k]);
            loss[k] = info.loss;
            g[k] = test_grads_get(p[k]);
            if (vla_train_opt_step(opt[k], p[k]->weights, p[k]->grads, 1e-4, 1.0, NULL, &norm[k]) != VLA_OK)
                fail_msg("%s step on %s: %s", preset, names[k], vla_error_message());
            vla_policy_fp8_update(p[k]); /* one rank: this step's amaxes are the all-reduced ones */
        }
        if (step == 0) plant_apply(p[0], g[0], g[1], plant);
        bool check_grads = step == 0 || m->grads_every_step;
        grad_verdict v = {0, 0, "", 0};
        if (check_grads) v = grad_check(p[0], g[0], g[1], m->grad_rtol, m->grad_floor);
        double lr = rel(loss[1], loss[0]);
        printf("{\"check\":\"train_step\",\"config\":\"%s\",\"device\":\"%s\",\"precision\":\"%s\",\"step\":%d,"
               "\"loss_cpu\":%.9g,\"loss_device\":%.9g,\"loss_rel\":%.3g,\"loss_rtol\":%g,\"grad_norm_cpu\":%.9g,"
               "\"grad_norm_device\":%.9g,\"grad_norm_rel\":%.3g,\"grads_checked\":%s,\"grad_worst\":%.3g,"
               "\"grad_worst_tensor\":\"%s\",\"grad_worst_rel\":%.3g,\"grad_rel_max_per_tensor\":%.3g,"
               "\"grad_rtol\":%g,\"grad_floor\":%g}\n",
               preset, device, m->name, step, loss[0], loss[1], lr, m->loss_rtol, norm[0], norm[1],
               rel(norm[1], norm[0]), check_grads ? "true" : "false", v.worst, v.worst_name, v.worst_rel,
               v.old_worst, m->grad_rtol, m->grad_floor);
        fflush(stdout);
        assert_true(isfinite(loss[0]) && loss[0] > 0 && isfinite(norm[1]));
        if (lr > m->loss_rtol) {
            ok = false;
            snprintf(msg, cap, "%s %s step %d on %s: loss %.9g vs cpu %.9g (rtol %g)", preset, m->name, step, device,
                     loss[1], loss[0], m->loss_rtol);
        } else if (v.worst > 1) {
            ok = false;
            snprintf(msg, cap, "%s %s step %d on %s: gradient %s off by %.3g of its norm, %.3g times what is allowed "
                     "(rtol %g, floor %g of the global norm)", preset, m->name, step, device, v.worst_name,
                     v.worst_rel, v.worst, m->grad_rtol, m->grad_floor);
        }
        /* an exact backend's FP8 scaling state is cpu's too, every scale and amax history byte for byte:
         * what a checkpoint keeps, and what a resume elsewhere continues from (a linear reading a shared
         * FP8 cast takes its amax: nn/linear.h) */
        if (ok && m->loss_rtol == 0 && m->mode == VLA_PREC_FP8) {
            int64_t n0 = 0, n1 = 0;
            float *s0 = vla_policy_fp8_state_to_host(p[0], &n0), *s1 = vla_policy_fp8_state_to_host(p[1], &n1);
            assert_non_null(s0), assert_non_null(s1);
            assert_int_equal(n0, n1);
            for (int64_t t = 0; t < n0 && ok; t++)
                if (memcmp(&s0[t], &s1[t], sizeof(float))) {
                    ok = false;
                    snprintf(msg, cap, "%s fp8 step %d on %s: scaling state float %lld is %.9g, cpu's %.9g", preset,
                             step, device, (long long)t, s1[t], s0[t]);
                }
            free(s0), free(s1);
        }
        free(g[0]), free(g[1]);
    }
    for (int k = 0; k < 2; k++) vla_train_opt_free(opt[k]), small_batch_free(&b[k]), vla_policy_free(p[k]);
    vla_comm_finalize(comm);
    return ok;
}

/* VLA_EQUIV_DEVICE (default checked), VLA_EQUIV_CONFIGS (pi05-nano,groot-nano),
 * VLA_EQUIV_MODES (fp32,bf16,fp8), VLA_EQUIV_STEPS (3; gpu_check runs 20). */
/* A frozen weight's bf16 copy outlives the hold (nn/linear.h, vla_weight_scope): groot-nano's frozen
 * VLM on checked (which keeps copies) is cast at the first step only, its trainable linears every step,
 * and the losses stay cpu's bit for bit (cpu keeps no copies, so a stale copy would show); a frozen
 * weight written through the commit path is cast again, and its new value is what both compute with. */
static void test_frozen_copies_last(void **state) {
    (void)state;
    vla_policy_config c;
    assert_int_equal(vla_policy_config_load("groot-nano", &c), VLA_OK);
    const char *names[2] = {"cpu", "checked"};
    vla_policy *p[2];
    vla_train_opt *opt[2];
    small_batch b[2];
    vla_comm *comm = NULL;
    assert_int_equal(vla_comm_init(&(vla_comm_options){VLA_COMM_SINGLE, 0}, &comm), VLA_OK);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(vla_policy_create(&c, vla_backend_find(names[k]), &p[k]), VLA_OK);
        assert_int_equal(vla_policy_init_weights(p[k], 12), VLA_OK);
        assert_int_equal(vla_policy_set_precision(p[k], VLA_PREC_BF16, NULL), VLA_OK);
        small_batch_make(p[k], 3, &b[k]);
        opt[k] = make_opt(p[k], comm);
    }
    /* a frozen lowered linear's weight: the one written before the last step */
    int64_t frozen = -1, n_frozen = 0;
    for (int64_t l = 0; l < p[1]->prec->n_linears; l++) {
        int64_t i = p[1]->prec->ready[l].param;
        assert_true(i >= 0);
        if (!p[1]->params[i].grad) n_frozen++, frozen = frozen < 0 ? i : frozen;
    }
    assert_true(n_frozen > 0 && n_frozen < p[1]->prec->n_linears);
    int64_t casts[4];
    for (int step = 0; step < 4; step++) {
        if (step == 3) /* a frozen weight written outside the optimizer, on both backends */
            for (int k = 0; k < 2; k++) {
                float *owned = NULL;
                const float *all = vla_policy_weights_on_host(p[k], &owned);
                int64_t off = p[k]->params[frozen].data - p[k]->weights, n = p[k]->params[frozen].spec->numel;
                float *old = malloc(sizeof(float) * (size_t)n), *stage;
                memcpy(old, all + off, sizeof(float) * (size_t)n);
                free(owned);
                assert_non_null(stage = vla_policy_param_stage(p[k], frozen));
                for (int64_t j = 0; j < n; j++) stage[j] = 1.5f * old[j];
                assert_int_equal(vla_policy_param_commit(p[k], frozen, stage), -1);
                free(old);
            }
        double loss[2];
        int64_t c0 = vla_policy_weight_casts(p[1]);
        for (int k = 0; k < 2; k++) {
            vla_loss_info info;
            double norm;
            vla_policy_zero_grad(p[k]);
            vla_policy_weights_hold(p[k]);
            assert_int_equal(vla_policy_loss(p[k], &b[k].pack.b, true, &info), VLA_OK);
            assert_int_equal(vla_policy_backward(p[k]), VLA_OK);
            vla_policy_weights_release(p[k]);
            loss[k] = info.loss;
            assert_int_equal(vla_train_opt_step(opt[k], p[k]->weights, p[k]->grads, 1e-3, 1.0, NULL, &norm), VLA_OK);
            vla_policy_trainable_changed(p[k]); /* as vla_train_step does after the update */
        }
        casts[step] = vla_policy_weight_casts(p[1]) - c0;
        assert_memory_equal(&loss[0], &loss[1], sizeof loss[0]);
    }
    assert_int_equal(casts[0], p[1]->prec->n_linears);           /* every weight once (one bf16 layout) */
    assert_int_equal(casts[1], p[1]->prec->n_linears - n_frozen); /* the frozen ones not again */
    assert_int_equal(casts[2], casts[1]);
    assert_int_equal(casts[3], casts[0]); /* the commit made every copy stale */
    assert_int_equal(vla_policy_weight_casts(p[0]), 0); /* cpu keeps none */
    for (int k = 0; k < 2; k++) vla_train_opt_free(opt[k]), small_batch_free(&b[k]), vla_policy_free(p[k]);
    vla_comm_finalize(comm);
}

/* ---- a training step's captured regions (policy/groot.c, policy/pi05.c) -------------------------
 * A loss call's trainable part and its backward run as two captured regions per micro-batch, which a
 * device replays once recorded. On checked every call after a key's first two is traced and compared
 * with the recording (the op names, addresses, scalars, uploads and index maps), so a key that misses
 * something the batch changes fails here; emulating replays (policy/region.h) forgets and restores the
 * host state the forward region leaves (its activations' addresses, π0.5's FLOPs). */

typedef struct {
    double loss[12];
    float *weights;
    int64_t replays, weight_casts;
} region_run;

/* preset on checked (weights from seed 12, every stage trained when `all`) in mode m, one rank, and its
 * optimizer */
static vla_policy *checked_trainer(const char *preset, vla_precision m, bool all, vla_comm **comm,
                                   vla_train_opt **opt) {
    vla_policy_config c;
    assert_int_equal(vla_policy_config_load(preset, &c), VLA_OK);
    if (all) memset(c.frozen, 0, sizeof c.frozen);
    vla_policy *p;
    assert_int_equal(vla_policy_create(&c, vla_backend_find("checked"), &p), VLA_OK);
    assert_int_equal(vla_policy_init_weights(p, 12), VLA_OK);
    assert_int_equal(vla_policy_set_precision(p, m, NULL), VLA_OK);
    *comm = NULL;
    assert_int_equal(vla_comm_init(&(vla_comm_options){VLA_COMM_SINGLE, 0}, comm), VLA_OK);
    *opt = make_opt(p, *comm);
    return p;
}

/* `steps` steps of `preset` (all stages trained when `all`) on checked in mode m, regions on or off;
 * the batches change every step — actions, flow draws, padding — and two layouts of 3 samples
 * alternate (GR00T: two embodiment layouts; π0.5: the prompts in another order — the same sizes, other
 * token ids and ranges) */
static region_run region_steps(const char *preset, vla_precision m, bool all, bool regions, int steps) {
    region_run out = {{0}, NULL, 0, 0};
    bool groot = strncmp(preset, "groot", 5) == 0;
    vla_comm *comm;
    vla_train_opt *opt;
    vla_policy *p = checked_trainer(preset, m, all, &comm, &opt);
    small_batch b[2];
    static const char *const shuffled[] = {"pick it up", "push the T", ""}; /* the same sizes, other tokens */
    for (int k = 0; k < 2; k++) small_batch_make_tasks(p, 3, k == 1 && !groot ? shuffled : TASKS, &b[k]);
    if (groot) {
        int32_t *emb = (int32_t *)b[1].pack.b.embodiment;
        assert_non_null(emb);
        emb[0] = emb[2] = 1;
    }
    vla_train_regions_set(regions);
    vla_region_emulate_replays(regions);
    int64_t r0 = p->tops->stat(VLA_STAT_CAPTURED_REPLAYS), w0 = vla_policy_weight_casts(p);
    int64_t H = p->cfg.action.horizon, A = p->cfg.action.action_dim;
    for (int step = 0; step < steps; step++) {
        small_batch *sb = &b[step % 2];
        int32_t S = sb->pack.b.n_samples;
        for (int64_t i = 0; i < S * H * A; i++) sb->actions[i] += 0.01f * (float)(step + 1) * (float)(i % 7 - 3);
        for (int64_t h = 0; h < H; h++) sb->pad[(S - 1) * H + h] = step % 3 == 0 && h >= H - 2;
        sb->pack.b.seed = 9 + (uint64_t)step;
        vla_train_step_in in = {.policy = p, .opt = opt, .batches = &sb->pack.b, .n_batches = 1, .lr = 1e-3,
                                .step = step};
        vla_train_step_out o;
        if (vla_train_step(&in, &o) != VLA_OK) fail_msg("%s step %d: %s", preset, step, vla_error_message());
        out.loss[step] = o.loss;
    }
    out.replays = p->tops->stat(VLA_STAT_CAPTURED_REPLAYS) - r0;
    out.weight_casts = vla_policy_weight_casts(p) - w0;
    out.weights = test_weights_get(p);
    vla_train_regions_set(true);
    vla_region_emulate_replays(false);
    for (int k = 0; k < 2; k++) small_batch_free(&b[k]);
    vla_train_opt_free(opt);
    vla_policy_free(p);
    vla_comm_finalize(comm);
    return out;
}

/* vla_policy_weights_refresh casts the stale copies ahead of the ops that read them: the casts the
 * uses would have made (as many, the same bits), after which a loss and backward make none. */
static void test_weight_refresh(void **state) {
    (void)state;
    vla_policy_config c;
    assert_int_equal(vla_policy_config_load("groot-nano", &c), VLA_OK);
    vla_policy *p[2];
    vla_train_opt *opt[2];
    small_batch b[2];
    vla_comm *comm = NULL;
    assert_int_equal(vla_comm_init(&(vla_comm_options){VLA_COMM_SINGLE, 0}, &comm), VLA_OK);
    double loss[2];
    float *g[2];
    int64_t lazy = 0;
    for (int k = 0; k < 2; k++) {
        assert_int_equal(vla_policy_create(&c, vla_backend_find("checked"), &p[k]), VLA_OK);
        assert_int_equal(vla_policy_init_weights(p[k], 12), VLA_OK);
        assert_int_equal(vla_policy_set_precision(p[k], VLA_PREC_BF16, NULL), VLA_OK);
        small_batch_make(p[k], 3, &b[k]);
        opt[k] = make_opt(p[k], comm);
        vla_train_step_in in = {.policy = p[k], .opt = opt[k], .batches = &b[k].pack.b, .n_batches = 1, .lr = 1e-3};
        vla_train_step_out o;
        assert_int_equal(vla_train_step(&in, &o), VLA_OK); /* the copies exist, the update made them stale */
        vla_policy_zero_grad(p[k]);
        vla_policy_weights_hold(p[k]);
        int64_t c0 = vla_policy_weight_casts(p[k]);
        if (k == 1) vla_policy_weights_refresh(p[k]);
        int64_t c1 = vla_policy_weight_casts(p[k]);
        vla_loss_info info;
        assert_int_equal(vla_policy_loss(p[k], &b[k].pack.b, true, &info), VLA_OK);
        assert_int_equal(vla_policy_backward(p[k]), VLA_OK);
        int64_t c2 = vla_policy_weight_casts(p[k]);
        vla_policy_weights_release(p[k]);
        if (k == 0) lazy = c2 - c1;
        else assert_int_equal(c2, c1), assert_int_equal(c1 - c0, lazy); /* all ahead, as many */
        loss[k] = info.loss;
        g[k] = test_grads_get(p[k]);
    }
    assert_true(lazy > 0);
    assert_memory_equal(&loss[0], &loss[1], sizeof loss[0]);
    assert_memory_equal(g[0], g[1], (size_t)p[0]->n_grad_floats * sizeof(float));
    for (int k = 0; k < 2; k++) free(g[k]), vla_train_opt_free(opt[k]), small_batch_free(&b[k]), vla_policy_free(p[k]);
    vla_comm_finalize(comm);
}

/* Layouts that do not repeat give the regions up: sixteen batches of sixteen embodiment layouts, then
 * one layout again and again — no recording is replayed, and the bits are those without regions. */
static void test_training_regions_give_up(void **state) {
    (void)state;
    double loss[2][22];
    for (int on = 0; on < 2; on++) {
        vla_comm *comm;
        vla_train_opt *opt;
        vla_policy *p = checked_trainer("groot-nano", VLA_PREC_FP32, false, &comm, &opt);
        small_batch b;
        small_batch_make(p, 4, &b);
        int32_t *emb = (int32_t *)b.pack.b.embodiment;
        assert_non_null(emb);
        vla_train_regions_set(on);
        int64_t r0 = p->tops->stat(VLA_STAT_CAPTURED_REPLAYS);
        for (int step = 0; step < 22; step++) {
            for (int s = 0; s < 4; s++) emb[s] = step < 16 ? (step >> s) & 1 : 0;
            vla_train_step_in in = {.policy = p, .opt = opt, .batches = &b.pack.b, .n_batches = 1, .lr = 1e-3,
                                    .step = step};
            vla_train_step_out o;
            if (vla_train_step(&in, &o) != VLA_OK) fail_msg("step %d: %s", step, vla_error_message());
            loss[on][step] = o.loss;
        }
        assert_int_equal(p->tops->stat(VLA_STAT_CAPTURED_REPLAYS) - r0, 0);
        vla_train_regions_set(true);
        small_batch_free(&b);
        vla_train_opt_free(opt);
        vla_policy_free(p);
        vla_comm_finalize(comm);
    }
    assert_memory_equal(loss[0], loss[1], sizeof loss[0]);
}

/* A prompt per batch — sixteen prompts of one length, then the first again and again: the frozen
 * backbone's region (keyed by the token ids) gives up, and the head's (keyed by the layout) replays all
 * along; the bits are those without regions. */
static void test_training_regions_many_prompts(void **state) {
    (void)state;
    double loss[2][22];
    int64_t replays = 0;
    for (int on = 0; on < 2; on++) {
        vla_comm *comm;
        vla_train_opt *opt;
        vla_policy *p = checked_trainer("groot-nano", VLA_PREC_FP32, false, &comm, &opt);
        vla_train_regions_set(on);
        int64_t r0 = p->tops->stat(VLA_STAT_CAPTURED_REPLAYS);
        for (int step = 0; step < 22; step++) {
            char task[32];
            snprintf(task, sizeof task, "task %c%c", 'a' + (step < 16 ? step : 0), 'q');
            const char *const tasks[3] = {task, task, task};
            small_batch b;
            small_batch_make_tasks(p, 3, tasks, &b);
            b.pack.b.seed = 9 + (uint64_t)step;
            vla_train_step_in in = {.policy = p, .opt = opt, .batches = &b.pack.b, .n_batches = 1, .lr = 1e-3,
                                    .step = step};
            vla_train_step_out o;
            if (vla_train_step(&in, &o) != VLA_OK) fail_msg("step %d: %s", step, vla_error_message());
            loss[on][step] = o.loss;
            small_batch_free(&b);
        }
        if (on) replays = p->tops->stat(VLA_STAT_CAPTURED_REPLAYS) - r0;
        vla_train_regions_set(true);
        vla_train_opt_free(opt);
        vla_policy_free(p);
        vla_comm_finalize(comm);
    }
    assert_memory_equal(loss[0], loss[1], sizeof loss[0]);
    /* the head's forward and backward: one key, 22 calls, the first three not compared */
    assert_int_equal(replays, 2 * (22 - 3));
}

static void test_training_regions_replay(void **state) {
    (void)state;
    const int steps = 10;
    const struct {
        const char *preset;
        vla_precision m;
        bool all;
    } runs[] = {{"groot-nano", VLA_PREC_FP32, false}, {"groot-nano", VLA_PREC_BF16, false},
                {"groot-nano", VLA_PREC_BF16, true},  {"groot-nano", VLA_PREC_FP8, false},
                {"pi05-nano", VLA_PREC_FP32, false},  {"pi05-nano", VLA_PREC_BF16, false},
                {"pi05-nano", VLA_PREC_FP8, false}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        region_run off = region_steps(runs[i].preset, runs[i].m, runs[i].all, false, steps);
        region_run on = region_steps(runs[i].preset, runs[i].m, runs[i].all, true, steps);
        print_message("%s %s%s: %lld regions compared with their recordings over %d steps, %lld weight casts\n",
                      runs[i].preset, vla_precision_name(runs[i].m), runs[i].all ? " (every stage trained)" : "",
                      (long long)on.replays, steps, (long long)on.weight_casts);
        assert_memory_equal(on.loss, off.loss, sizeof on.loss);
        vla_policy_config c;
        assert_int_equal(vla_policy_config_load(runs[i].preset, &c), VLA_OK);
        vla_policy *p;
        assert_int_equal(vla_policy_create(&c, vla_backend_find("cpu"), &p), VLA_OK);
        assert_memory_equal(on.weights, off.weights, (size_t)p->n_weight_floats * sizeof(float));
        vla_policy_free(p);
        assert_int_equal(off.replays, 0);
        assert_int_equal(on.weight_casts, off.weight_casts); /* the refresh casts what the uses would have */
        /* two keys (the layouts), five calls each: the first plain, the second the device's warm-up, the
         * third the recording, two compared — per region: forward, backward and GR00T's frozen backbone.
         * In bf16 the very first step's key is its own (no weight copies exist yet): one compare fewer
         * per region. */
        int regions = !strncmp(runs[i].preset, "groot", 5) && !runs[i].all ? 3 : 2;
        /* bf16's refresh (train/step.c) is one region more, one key from the second step on (the
         * trainable copies stale after every update): steps − 1 calls, the first plain, the second
         * recorded, the rest compared */
        int refresh = runs[i].m == VLA_PREC_BF16 ? steps - 1 - 2 : 0;
        assert_int_equal(on.replays, regions * (runs[i].m == VLA_PREC_FP32 ? 2 * 2 : 3) + refresh);
        free(on.weights), free(off.weights);
    }
}


static void test_device_training_step(void **state) {
    (void)state;
    const char *device = getenv("VLA_EQUIV_DEVICE"), *configs = getenv("VLA_EQUIV_CONFIGS");
    const char *modes = getenv("VLA_EQUIV_MODES"), *steps_s = getenv("VLA_EQUIV_STEPS");
    device = device && *device ? device : "checked";
    int steps = steps_s && *steps_s ? atoi(steps_s) : 3;
    if (steps < 1) fail_msg("VLA_EQUIV_STEPS=%s: want a step count >= 1", steps_s);
    const vla_ops *dev = vla_backend_find(device);
    if (!dev) fail_msg("VLA_EQUIV_DEVICE=%s: no such backend in this build", device);
    char mlist[64], list[256], msg[512];
    snprintf(mlist, sizeof mlist, "%s", modes && *modes ? modes : "fp32,bf16,fp8");
    int failures = 0;
    char *msave = NULL;
    for (char *mt = strtok_r(mlist, ",", &msave); mt; mt = strtok_r(NULL, ",", &msave)) {
        vla_precision pm;
        if (vla_precision_parse(mt, &pm) != VLA_OK) fail_msg("VLA_EQUIV_MODES: %s", vla_error_message());
        equiv_mode m = equiv_mode_for(pm, dev->rtol);
        snprintf(list, sizeof list, "%s", configs && *configs ? configs : "pi05-nano,groot-nano");
        char *save = NULL;
        for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
            if (!device_steps(t, device, &m, steps, NULL, msg, sizeof msg)) {
                print_error("%s\n", msg);
                failures++;
            }
    }
    if (failures) fail_msg("%d of the configuration × precision runs disagree with cpu (above)", failures);
}

/* The criterion itself, on the CPU (cpu vs checked, bit for bit, judged with
 * the cuda backend's fp32 tolerances): rounding noise on a tensor whose true
 * gradient is zero passes — where the per-tensor relative check fails — and
 * a 1% error planted in one tensor fails, naming it. */
static void test_equiv_criterion(void **state) {
    (void)state;
    const double cuda_rtol = 2e-4; /* src/tensor/cuda/context.cu's tbl.rtol */
    equiv_mode m = equiv_mode_for(VLA_PREC_FP32, cuda_rtol);
    vla_policy_config c;
    assert_int_equal(vla_policy_config_load("pi05-nano", &c), VLA_OK);
    vla_policy *p = NULL;
    assert_int_equal(vla_policy_create(&c, vla_backend_find("cpu"), &p), VLA_OK);
    assert_int_equal(vla_policy_init_weights(p, 12), VLA_OK);
    small_batch b;
    small_batch_make(p, 4, &b);
    vla_loss_info info;
    vla_policy_zero_grad(p);
    assert_int_equal(vla_policy_loss(p, &b.pack.b, true, &info), VLA_OK);
    assert_int_equal(vla_policy_backward(p), VLA_OK);
    float *g = test_grads_get(p);
    /* the key bias with the smallest gradient relative to the global norm,
     * and the tensor with the largest gradient */
    double global = 0;
    for (int64_t j = 0; j < p->n_grad_floats; j++) global += (double)g[j] * g[j];
    global = sqrt(global);
    int64_t kb = -1, big = -1;
    double kb_norm = INFINITY, big_norm = 0;
    for (int64_t i = 0; i < p->specs.n; i++) {
        if (!p->params[i].grad) continue;
        int64_t off = p->params[i].grad - p->grads, n = p->params[i].spec->numel;
        double s = 0;
        for (int64_t j = 0; j < n; j++) s += (double)g[off + j] * g[off + j];
        s = sqrt(s);
        if (strstr(p->params[i].spec->name, "k_proj.bias") && s < kb_norm) kb = i, kb_norm = s;
        if (s > big_norm) big = i, big_norm = s;
    }
    assert_true(kb >= 0 && big >= 0);
    print_message("pi05-nano: |g| %.3g; %s |g_t| %.3g (%.2g of it); largest %s |g_t| %.3g\n", global,
                  p->params[kb].spec->name, kb_norm, kb_norm / global, p->params[big].spec->name, big_norm);
    /* softmax's shift invariance: the key bias's gradient is zero, or rounding noise */
    assert_true(kb_norm < 1e-5 * global);
    float *got = malloc((size_t)p->n_grad_floats * sizeof(float));
    assert_non_null(got);

    /* 1. identical gradients pass, exactly */
    memcpy(got, g, (size_t)p->n_grad_floats * sizeof(float));
    grad_verdict v = grad_check(p, g, got, m.grad_rtol, m.grad_floor);
    assert_true(v.worst == 0);

    /* 2. rounding noise on the zero-gradient key bias, unrelated on the two
     *    sides (1e-6 of the global norm each, as on the H200): passes; the
     *    per-tensor relative check fails it, as it did there */
    float *ref = malloc((size_t)p->n_grad_floats * sizeof(float));
    assert_non_null(ref);
    memcpy(ref, g, (size_t)p->n_grad_floats * sizeof(float));
    plant_apply(p, g, ref, &(equiv_plant){kb, 0, 1e-6, 1});
    plant_apply(p, g, got, &(equiv_plant){kb, 0, 1e-6, 2});
    v = grad_check(p, ref, got, m.grad_rtol, m.grad_floor);
    print_message("noise on %s: %.3g of allowed; per-tensor relative %.3g\n", p->params[kb].spec->name, v.worst,
                  v.old_worst);
    assert_true(v.worst <= 1);
    assert_true(v.old_worst > 10 * m.grad_rtol); /* the old criterion's spurious failure */

    /* 3. a wrong kernel: 1% of the largest tensor's gradient norm, on top:
     *    fails, naming the tensor */
    plant_apply(p, g, got, &(equiv_plant){big, 1e-2, 0, 0});
    v = grad_check(p, ref, got, m.grad_rtol, m.grad_floor);
    print_message("1%% planted on %s: %.3g of allowed\n", p->params[big].spec->name, v.worst);
    assert_true(v.worst > 1);
    assert_string_equal(v.worst_name, p->params[big].spec->name);

    /* 4. the same through the whole equivalence run (cpu vs checked, exact):
     *    passes clean, fails with the error planted at step 0 */
    char msg[512];
    equiv_mode exact = equiv_mode_for(VLA_PREC_FP32, 0);
    assert_true(device_steps("pi05-nano", "checked", &exact, 1, NULL, msg, sizeof msg));
    assert_false(device_steps("pi05-nano", "checked", &m, 1, &(equiv_plant){big, 1e-2, 0, 0}, msg, sizeof msg));
    assert_non_null(strstr(msg, p->params[big].spec->name));
    assert_true(device_steps("pi05-nano", "checked", &m, 1, &(equiv_plant){kb, 0, 1e-6, 2}, msg, sizeof msg));
    free(got), free(g), free(ref);
    small_batch_free(&b);
    vla_policy_free(p);
}

/* ---- captured regions: checked holds callers to run_captured's promise (ops.h) ---------------------- */

typedef struct {
    const vla_ops *ops;
    float *buf, *other; /* backend memory made before the region */
    float value;        /* fill's scalar */
    uint8_t upload[8];  /* to_device's bytes */
    bool scratch;       /* allocate, use and free a buffer inside */
    bool wait;          /* read a result back inside */
    bool free_other;    /* free memory made before the region (and allocate its successor) */
    int32_t rows[4];    /* copy_rows' index map (host metadata) */
} region_ctx;

static vla_status region_body(void *vctx) {
    region_ctx *c = vctx;
    const vla_ops *ops = c->ops;
    ops->fill(c->buf, c->value, 16);
    ops->to_device(c->buf + 16, c->upload, sizeof c->upload);
    if (c->scratch) {
        float *t = ops->alloc(64 * sizeof(float));
        if (!t) return vla_error(VLA_ERR_NOMEM, "scratch");
        ops->copy(t, c->buf, 16);
        ops->axpy(c->buf, 0.5f, t, 16);
        ops->free(t);
    }
    ops->copy_rows(c->buf + 32, 4, c->rows, c->buf, 4, NULL, 4, 4, 1.0f);
    if (c->wait) (void)ops->sum(c->buf, 16);
    if (c->free_other) ops->free(c->other), c->other = ops->alloc(64); /* and leaves one allocated */
    return VLA_OK;
}

/* One key run three times (plain, recorded, compared), the last call changed by `change`. */
static vla_status region_three(region_ctx *c, int key, void (*change)(region_ctx *)) {
    vla_status st = VLA_OK;
    for (int call = 0; call < 3 && st == VLA_OK; call++) {
        if (call == 2 && change) change(c);
        st = c->ops->run_captured(&key, sizeof key, region_body, c);
    }
    return st;
}
static void change_value(region_ctx *c) { c->value = 2.0f; }
static void change_upload(region_ctx *c) { c->upload[3] ^= 1; }
static void change_rows(region_ctx *c) { c->rows[0] = 3, c->rows[3] = 0; }
static void change_buffer(region_ctx *c) { /* a buffer allocated per call: another address */
    float *fresh = c->ops->alloc(64 * sizeof(float));
    c->ops->free(c->buf);
    c->buf = fresh;
}

static void test_checked_holds_captured_regions(void **state) {
    (void)state;
    const vla_ops *ops = vla_backend_find("checked");
    assert_non_null(ops->run_captured);
    assert_null(vla_backend_find("cpu")->run_captured); /* cpu calls the body: vla_ops_run_captured */
    region_ctx c0 = {ops,   ops->alloc(64 * sizeof(float)), ops->alloc(64), 1.0f, {1, 2, 3, 4, 5, 6, 7, 8},
                     false, false, false, {0, 1, 2, 3}};
    region_ctx c = c0;
    /* the same ops on the same memory: fine, and region-owned scratch may move between calls */
    assert_int_equal(region_three(&c, 1, NULL), VLA_OK);
    c.scratch = true;
    assert_int_equal(region_three(&c, 2, NULL), VLA_OK);
    float back[24];
    ops->to_host(back, c.buf, sizeof back);
    assert_true(back[0] == 1.5f && back[15] == 1.5f); /* the body ran every time (fill, then + 0.5·copy) */
    /* what a replay would get wrong: a scalar, the uploaded bytes, an op's index map, a buffer allocated per call */
    struct {
        void (*change)(region_ctx *);
        const char *names, *at;
    } wrong[] = {{change_value, "chk_fill", "op 0 of"}, {change_upload, "chk_to_device", "op 1 of"},
                 {change_rows, "chk_copy_rows", "op 2 of"}, {change_buffer, "chk_fill", "op 0 of"}};
    for (int i = 0; i < 4; i++) {
        c = c0, c.buf = ops->alloc(64 * sizeof(float));
        assert_int_equal(region_three(&c, 10 + i, wrong[i].change), VLA_ERR_INTERNAL);
        print_message("refused: %s\n", vla_error_message());
        assert_non_null(strstr(vla_error_message(), wrong[i].names));
        assert_non_null(strstr(vla_error_message(), wrong[i].at));
        ops->free(c.buf);
    }
    /* what a device cannot record: a wait for results, freeing older memory */
    c = c0, c.wait = true;
    assert_int_equal(region_three(&c, 20, NULL), VLA_ERR_INTERNAL);
    assert_non_null(strstr(vla_error_message(), "waits for results"));
    c = c0, c.free_other = true, c.other = ops->alloc(64);
    assert_int_equal(region_three(&c, 21, NULL), VLA_ERR_INTERNAL);
    assert_non_null(strstr(vla_error_message(), "allocated before the region"));
    ops->free(c.other), ops->free(c0.buf), ops->free(c0.other);
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
        cmocka_unit_test(test_frozen_copies_last),
        cmocka_unit_test(test_checked_holds_captured_regions),
        cmocka_unit_test(test_weight_refresh),
        cmocka_unit_test(test_training_regions_replay),
        cmocka_unit_test(test_training_regions_give_up),
        cmocka_unit_test(test_training_regions_many_prompts),
        cmocka_unit_test(test_device_training_step),
        cmocka_unit_test(test_equiv_criterion),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_release_font_caches(); /* the training run drew plots */
    return rc;
}
