/* test_policy_memory.c — the memory measurement (policy/memory.h) against
 * real steps: the meta backend's figures equal what the same steps
 * allocate on cpu and checked (the activation arenas' high-water mark and,
 * on checked, what stays mapped, to the byte), both families, each
 * precision, with and without gradient checkpointing, and inference as an
 * engine runs it; the meta table's own
 * contract; and that a ViT whose backward never runs keeps one layer. */
#include "test_util.h"

#include <string.h>
#include <unistd.h>

#include "policy/memory.h"
#include "policy/param_spec.h"
#include "policy/policy.h"
#include "policy/synth_batch.h"
#include "tensor/backend.h"
#include "tensor/checked/ops_checked.h"

static vla_policy_config load(const char *name) {
    vla_policy_config c;
    if (vla_policy_config_load(name, &c) != VLA_OK) fail_msg("%s: %s", name, vla_error_message());
    return c;
}

/* Two training steps of the longest-prompt synthetic batch on a real backend, as train/step.c runs the
 * policy's part: hold and refresh the weight copies, loss, backward, release. */
static size_t real_steps(const vla_policy_config *c, const char *device, vla_precision prec, int32_t S, bool remat,
                         size_t *mapped) {
    vla_policy *p = NULL;
    assert_int_equal(vla_policy_create(c, vla_backend_find(device), &p), VLA_OK);
    assert_int_equal(vla_policy_set_precision(p, prec, NULL), VLA_OK);
    p->recompute_layers = remat;
    vla_synth_batch sb = {0};
    assert_int_equal(vla_synth_batch_make(p, S, true, &sb), VLA_OK);
    for (int step = 0; step < 2; step++) {
        vla_policy_weights_hold(p);
        vla_policy_weights_refresh(p);
        vla_loss_info info;
        if (vla_policy_loss(p, &sb.b, true, &info) != VLA_OK || vla_policy_backward(p) != VLA_OK)
            fail_msg("%s on %s: %s", c->name, device, vla_error_message());
        vla_policy_weights_release(p);
        vla_policy_trainable_changed(p);
    }
    if (mapped) *mapped = vla_checked_mapped_bytes();
    size_t act = p->act_peak_bytes;
    vla_synth_batch_free(&sb);
    vla_policy_free(p);
    return act;
}

static void meta_equals_real(const char *config) {
    vla_policy_config c = load(config);
    const struct {
        const char *device;
        vla_precision prec;
    } runs[] = {{"cpu", VLA_PREC_FP32}, {"checked", VLA_PREC_BF16}, {"checked", VLA_PREC_FP8}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++)
        for (int remat = 0; remat < 2; remat++) {
            vla_memory_use u;
            vla_memory_opts o = {.sized_as = runs[i].device, .precision = runs[i].prec, .batch = 3,
                                 .recompute = remat};
            assert_int_equal(vla_policy_memory_measure(&c, &o, &u), VLA_OK);
            size_t before = vla_checked_mapped_bytes(), mapped = 0;
            size_t act = real_steps(&c, runs[i].device, runs[i].prec, 3, remat, &mapped);
            if (act != u.activations)
                fail_msg("%s %s %s%s: activations measured %zu, the real steps' arenas %zu", config, runs[i].device,
                         vla_precision_name(runs[i].prec), remat ? " checkpointed" : "", u.activations, act);
            assert_true(u.peak >= u.held && u.held >= u.params + u.activations);
            assert_true(u.tokens >= 3 * (c.language.max_tokens + c.action.horizon)); /* every prompt the longest */
            if (!strcmp(runs[i].device, "checked")) { /* held between steps: meta sized as checked counts pages */
                size_t held = mapped - before;
                if (held != u.held)
                    fail_msg("%s %s: held %zu (meta, %lld blocks) but checked maps %zu", config,
                             vla_precision_name(runs[i].prec), u.held, (long long)u.held_blocks, held);
            }
        }
}

static void test_pi05_meta_equals_real(void **state) { meta_equals_real("pi05-nano"); }
static void test_groot_meta_equals_real(void **state) { meta_equals_real("groot-nano"); }

/* A batch twice the size: the activations grow, what the weights hold does not. */
static void test_measure_scales_with_batch(void **state) {
    vla_policy_config c = load("pi05-nano");
    vla_memory_use a, b;
    vla_memory_opts o = {.sized_as = "cuda", .precision = VLA_PREC_BF16, .batch = 2};
    assert_int_equal(vla_policy_memory_measure(&c, &o, &a), VLA_OK);
    o.batch = 4;
    assert_int_equal(vla_policy_memory_measure(&c, &o, &b), VLA_OK);
    assert_true(b.activations > a.activations && b.params == a.params);
    assert_int_equal(b.tokens, 2 * a.tokens);
    /* cuda keeps 2-byte copies where checked keeps 4-byte ones: less activation memory in bf16 */
    vla_memory_use k;
    o.sized_as = "checked";
    assert_int_equal(vla_policy_memory_measure(&c, &o, &k), VLA_OK);
    assert_true(b.activations < k.activations);
    /* a name that is no backend, and a batch of none, are refused */
    o.sized_as = "tpu";
    assert_int_not_equal(vla_policy_memory_measure(&c, &o, &k), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "tpu"));
    o.sized_as = "cuda", o.batch = 0;
    assert_int_not_equal(vla_policy_memory_measure(&c, &o, &k), VLA_OK);
}

/* The meta table: shapes only, memory counted, nothing committed. */
static void test_meta_table(void **state) {
    const vla_ops *m;
    assert_int_equal(vla_backend_meta("cuda", &m), VLA_OK);
    assert_true(m->shapes_only && !m->host_memory);
    assert_null(vla_backend_find("meta")); /* not a --device */
    assert_int_equal(vla_ops_stat_of(m, VLA_STAT_DEVICE_USED_BYTES), 0);
    size_t big = (size_t)64 << 30; /* 64 GiB of address space on a 24 GiB machine: reserved, never touched */
    void *a = m->alloc(big), *b = m->alloc(1000);
    assert_non_null(a);
    assert_non_null(b);
    assert_true(((uintptr_t)a & 63) == 0 && ((uintptr_t)b & 63) == 0);
    assert_int_equal(vla_ops_stat_of(m, VLA_STAT_DEVICE_USED_BYTES), (int64_t)big + 1000);
    assert_int_equal(vla_ops_stat_of(m, VLA_STAT_DEVICE_BLOCKS), 2);
    m->free(a);
    assert_int_equal(vla_ops_stat_of(m, VLA_STAT_DEVICE_USED_BYTES), 1000);
    assert_int_equal(vla_ops_stat_of(m, VLA_STAT_DEVICE_PEAK_BYTES), (int64_t)big + 1000);
    m->free(b); /* nothing held: the next measurement's peak starts from zero */
    assert_int_equal(vla_ops_stat_of(m, VLA_STAT_DEVICE_PEAK_BYTES), 0);
    /* results the host reads are zeros, and no NaN is ever found */
    double host[2] = {1, 2};
    m->to_host(host, NULL, sizeof host);
    assert_true(host[0] == 0 && host[1] == 0);
    assert_int_equal(m->find_nonfinite(NULL, 10), -1);
    /* ready copies as the backend it stands for: cuda's bf16 (2 bytes, padded), checked's f32, cpu's none */
    vla_gemm_q g = {VLA_PREC_BF16, {0}, {0}, NULL, NULL};
    const vla_ops *k, *c;
    assert_int_equal(vla_backend_meta("checked", &k), VLA_OK);
    assert_int_equal(vla_backend_meta("cpu", &c), VLA_OK);
    assert_true(m->ready_bytes(&g, 64, 64) >= 2 * 64 * 64 && m->ready_bytes(&g, 64, 64) < 4 * 64 * 64);
    assert_int_equal(k->ready_bytes(&g, 64, 64), vla_backend_find("checked")->ready_bytes(&g, 64, 64));
    assert_int_equal(c->ready_bytes(&g, 64, 64), 0);
}

/* A ViT whose backward never runs (a frozen tower, GR00T's frozen backbone) keeps two residual buffers and
 * one layer's table: its step's memory does not grow with the tower's depth; a training tower's does. */
static void vit_depth_case(const char *config, bool frozen, size_t *shallow, size_t *deep) {
    vla_policy_config c = load(config);
    c.frozen[VLA_GROUP_VISION] = frozen;
    vla_memory_opts o = {.sized_as = "cuda", .precision = VLA_PREC_FP32, .batch = 2};
    vla_memory_use u;
    c.vision.depth = 1;
    assert_int_equal(vla_policy_memory_measure(&c, &o, &u), VLA_OK);
    *shallow = u.activations;
    c.vision.depth = 4;
    assert_int_equal(vla_policy_memory_measure(&c, &o, &u), VLA_OK);
    *deep = u.activations;
}

static void test_frozen_vit_keeps_one_layer(void **state) {
    const char *configs[] = {"pi05-nano", "groot-nano"};
    for (int i = 0; i < 2; i++) {
        size_t s, d;
        vit_depth_case(configs[i], true, &s, &d);
        if (s != d) fail_msg("%s, frozen vision: depth 1 %zu bytes, depth 4 %zu", configs[i], s, d);
        vit_depth_case(configs[i], false, &s, &d);
        if (!(d > s)) fail_msg("%s, training vision: depth 1 %zu bytes, depth 4 %zu", configs[i], s, d);
    }
}

/* Inference as an engine runs it (every group frozen, the weights held, two chunks): what stays resident
 * equals what the same calls leave mapped on checked, to the byte; no gradients. */
static void test_inference_meta_equals_real(void **state) {
    const char *configs[] = {"pi05-nano", "groot-nano"};
    for (int i = 0; i < 2; i++) {
        vla_policy_config c = load(configs[i]);
        vla_memory_opts o = {.sized_as = "checked", .precision = VLA_PREC_BF16, .batch = 2};
        vla_memory_use u;
        assert_int_equal(vla_policy_memory_measure_inference(&c, &o, &u), VLA_OK);
        vla_param_list l = {0};
        assert_int_equal(vla_param_specs(&c, &l), VLA_OK);
        vla_param_counts n;
        vla_param_count(&l, &n);
        vla_param_list_free(&l);
        size_t page = (size_t)sysconf(_SC_PAGESIZE), wb = 4 * (size_t)n.total_params;
        assert_int_equal(u.params, (wb + page - 1) / page * page); /* the weights alone (one block, in pages) */
        assert_true(u.peak >= u.held && u.held > u.params);
        /* the same on checked */
        for (int g = 0; g < VLA_GROUP_COUNT; g++) c.frozen[g] = true;
        c.tokenizer[0] = 0; /* byte-level, as the measurement's */
        size_t before = vla_checked_mapped_bytes();
        vla_policy *p = NULL;
        assert_int_equal(vla_policy_create(&c, vla_backend_find("checked"), &p), VLA_OK);
        assert_int_equal(vla_policy_set_precision(p, VLA_PREC_BF16, NULL), VLA_OK);
        vla_synth_batch sb = {0};
        assert_int_equal(vla_synth_batch_make(p, 2, true, &sb), VLA_OK);
        char *task = vla_synth_longest_task(&c); /* the longest prompts, as the measurement's */
        assert_non_null(task);
        const char *tasks[2] = {task, task};
        vla_observation ob = {.n_samples = 2, .task = tasks, .images = sb.images, .state = sb.state, .seed = 1};
        float act[2 * 64 * 32];
        assert_true((size_t)(2 * c.action.horizon * c.action.action_dim) <= sizeof act / sizeof act[0]);
        vla_policy_weights_hold(p);
        for (int k = 0; k < 2; k++) assert_int_equal(vla_policy_sample_actions(p, &ob, act), VLA_OK);
        size_t held = vla_checked_mapped_bytes() - before;
        if (p->act_peak_bytes != u.activations)
            fail_msg("%s inference: a chunk's arenas measured %zu, the real chunks' %zu", configs[i], u.activations,
                     p->act_peak_bytes);
        vla_policy_weights_release(p);
        vla_synth_batch_free(&sb);
        vla_policy_free(p);
        free(task);
        if (held != u.held)
            fail_msg("%s inference: held %zu (meta, %lld blocks) but checked maps %zu", configs[i], u.held,
                     (long long)u.held_blocks, held);
    }
}

/* Sampling's prefix-only forward keeps every layer's K and V (the cache the flow steps read) and one slot
 * for the rest: two more layers add two layers' K and V to a chunk's arenas, nothing else (it kept every
 * layer's q, attention output, norms and MLP activations, as a training forward does). */
static void test_prefix_cache_keeps_kv_alone(void **state) {
    vla_policy_config c = load("pi05-nano");
    size_t act[2];
    int64_t tokens = 0;
    for (int k = 0; k < 2; k++) {
        c.language.depth = c.expert.depth = 2 + 2 * k;
        vla_memory_opts o = {.sized_as = "cpu", .precision = VLA_PREC_FP32, .batch = 2};
        vla_memory_use u;
        assert_int_equal(vla_policy_memory_measure_inference(&c, &o, &u), VLA_OK);
        act[k] = u.activations, tokens = u.tokens;
    }
    size_t kv = 2 * 2 * (size_t)tokens * (size_t)(c.language.kv_heads * c.language.head_dim) * sizeof(float);
    if (!(act[1] > act[0] && act[1] - act[0] <= kv))
        fail_msg("two more layers added %zu bytes to a chunk's arenas; their K and V are at most %zu", act[1] - act[0],
                 kv);
    /* an inconsistent config is refused, not run */
    c.expert.depth = 3;
    vla_memory_opts o = {.sized_as = "cpu", .precision = VLA_PREC_FP32, .batch = 1};
    vla_memory_use u;
    assert_int_not_equal(vla_policy_memory_measure_inference(&c, &o, &u), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "expert.depth"));
}

/* The largest batch that fits a budget: it fits, one more does not — measured directly. */
static void test_largest_batch(void **state) {
    const char *configs[] = {"pi05-nano", "groot-nano"};
    for (int i = 0; i < 2; i++) {
        vla_policy_config c = load(configs[i]);
        vla_memory_opts o = {.sized_as = "cuda", .precision = VLA_PREC_BF16, .batch = 1};
        double peak[12];
        for (int b = 1; b <= 11; b++) {
            vla_memory_use u;
            o.batch = b;
            assert_int_equal(vla_policy_memory_measure(&c, &o, &u), VLA_OK);
            peak[b] = (double)u.peak;
            if (b > 1) assert_true(peak[b] >= peak[b - 1]);
        }
        const double other = 4096;
        for (int want = 1; want <= 10; want += 3) {
            if (peak[want + 1] == peak[want]) continue; /* no budget separates them */
            int32_t got = -1;
            assert_int_equal(vla_policy_memory_largest_batch(&c, &o, peak[want] + other, other, 1024, &got), VLA_OK);
            if (got != want) fail_msg("%s: a budget of batch %d's peak gives %d", configs[i], want, (int)got);
        }
        int32_t got = -1;
        assert_int_equal(vla_policy_memory_largest_batch(&c, &o, peak[1] - 1 + other, other, 1024, &got), VLA_OK);
        assert_int_equal(got, 0);
        assert_int_equal(vla_policy_memory_largest_batch(&c, &o, 1e18, other, 7, &got), VLA_OK);
        assert_int_equal(got, 7); /* the most searched */
    }
}

/* The trainer's check before a device allocates: fits or not against the free bytes, and what to do. */
static void test_fit_says_what_to_do(void **state) {
    vla_policy_config c = load("pi05-nano");
    vla_memory_opts o = {.sized_as = "cuda", .precision = VLA_PREC_BF16, .batch = 4};
    vla_memory_use u;
    assert_int_equal(vla_policy_memory_measure(&c, &o, &u), VLA_OK);
    char say[1024];
    bool fits = false;
    /* the optimizer's 2 bytes per trainable parameter beside the policy's peak */
    double need = (double)u.peak + 2.0 * (double)u.trainable;
    assert_true(u.trainable > 0);
    assert_int_equal(vla_policy_memory_fit(&c, &o, need, 2.0, "--batch_size", &fits, say, sizeof say), VLA_OK);
    assert_true(fits);
    assert_non_null(strstr(say, "pi05-nano at 4 samples per step in bf16 needs up to"));
    assert_null(strstr(say, "--batch_size"));
    assert_int_equal(vla_policy_memory_fit(&c, &o, need - 1, 2.0, "--batch", &fits, say, sizeof say), VLA_OK);
    assert_false(fits);
    assert_non_null(strstr(say, "--gradient_checkpointing needs"));
    assert_non_null(strstr(say, "--batch=3 fits;")); /* 4 samples miss by a byte: 3 fit (named as asked) */
    o.recompute = true; /* already checkpointing: nothing more to suggest of it */
    assert_int_equal(vla_policy_memory_fit(&c, &o, 1.0, 0, "--batch_size", &fits, say, sizeof say), VLA_OK);
    assert_false(fits);
    assert_non_null(strstr(say, "with gradient checkpointing needs up to"));
    assert_null(strstr(say, "--gradient_checkpointing needs"));
    assert_non_null(strstr(say, "not even one sample fits"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pi05_meta_equals_real),
        cmocka_unit_test(test_groot_meta_equals_real),
        cmocka_unit_test(test_measure_scales_with_batch),
        cmocka_unit_test(test_meta_table),
        cmocka_unit_test(test_frozen_vit_keeps_one_layer),
        cmocka_unit_test(test_fit_says_what_to_do),
        cmocka_unit_test(test_largest_batch),
        cmocka_unit_test(test_inference_meta_equals_real),
        cmocka_unit_test(test_prefix_cache_keeps_kv_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
