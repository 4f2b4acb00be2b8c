/* serve_fixture.h — checkpoints the serve tests stand a server on, written
 * in milliseconds instead of trained (header-only: static functions for the
 * tests/serve programs that include it).
 *
 *   pusht: the demo's shape — groot-pusht, state keys observation.state (2)
 *          + observation.environment_state (16), 2 frames of history,
 *          relative actions with per-step statistics, chunks of 8, no camera;
 *   cam:   groot-nano with one 32×32 camera, observation.state alone,
 *          absolute actions pooled over the chunk.
 * Weights are the family's initialisation with every matrix widened to
 * std 1/sqrt(fan_in), so different inputs give clearly different chunks
 * (the published 0.02 init makes nearly constant ones). */
#ifndef VLA_TESTS_SERVE_FIXTURE_H
#define VLA_TESTS_SERVE_FIXTURE_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"
#include "checkpoint/pretrained.h"

#define FIX_TASK "Push the T-shaped block onto the T-shaped target."

static void fixture_widen(vla_policy *p) {
    for (int64_t i = 0; i < p->specs.n; i++) {
        const vla_param_spec *sp = &p->specs.items[i];
        if (sp->ndim < 2 || sp->init != VLA_INIT_NORMAL || sp->apply == VLA_APPLY_LOOKUP) continue;
        double fan_in = sp->ndim == 3 ? (double)sp->shape[1] : (double)(sp->numel / sp->shape[0]);
        for (int64_t k = 0; k < sp->numel; k++) p->params[i].data[k] *= (float)(1.0 / sqrt(fan_in) / sp->init_scale);
    }
}

/* Writes the checkpoint into dir (a pretrained_model layout) and returns dir. */
static const char *fixture_checkpoint(const char *dir, bool camera) {
    vla_policy_config cfg;
    if (vla_policy_config_load(camera ? "groot-nano" : "groot-pusht", &cfg) != VLA_OK) fail_msg("%s", vla_error_message());
    const int K = camera ? 1 : 2, frame = camera ? 2 : 18;
    const int64_t H = cfg.action.horizon;
    cfg.action.state_dim = K * frame;
    vla_policy *p = NULL;
    if (vla_policy_create(&cfg, test_cpu_backend(), &p) != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(vla_policy_init_weights(p, 11), VLA_OK);
    fixture_widen(p);
    float lo[64], hi[64];
    for (int i = 0; i < K * frame; i++) lo[i] = 0, hi[i] = 512;
    vla_normalizer ns, na;
    assert_int_equal(vla_normalizer_init(&ns, VLA_NORM_MIN_MAX, VLA_NORM_EPS_LEROBOT, K * frame, lo, hi, 0), VLA_OK);
    if (camera) {
        float amin[2] = {-1, -2}, amax[2] = {3, 2};
        assert_int_equal(vla_normalizer_init(&na, VLA_NORM_MIN_MAX, VLA_NORM_EPS_LEROBOT, 2, amin, amax, 0), VLA_OK);
    } else { /* per-step mean/std of action − state: the further ahead, the wider */
        float mean[64], sd[64];
        for (int h = 0; h < H; h++)
            for (int d = 0; d < 2; d++) mean[h * 2 + d] = (float)(d ? -h : h), sd[h * 2 + d] = 5.0f + 3.0f * (float)h;
        assert_int_equal(vla_normalizer_init(&na, VLA_NORM_MEAN_STD, VLA_NORM_EPS_LEROBOT, 2 * H, mean, sd, 0), VLA_OK);
    }
    vla_pretrained_meta m;
    memset(&m, 0, sizeof m);
    m.state_width = K * frame, m.action_width = 2, m.cameras = camera ? 1 : 0, m.fps = 10, m.n_obs_steps = K;
    snprintf(m.task, sizeof m.task, "%s", FIX_TASK);
    snprintf(m.state_keys, sizeof m.state_keys, "%s", camera ? "" : "observation.state,observation.environment_state");
    m.relative_actions = !camera, m.action_stats_per_step = !camera;
    snprintf(m.embodiment_name, sizeof m.embodiment_name, "pusht");
    json_t *cj = vla_pretrained_config_json(p, &ns, &na, &m);
    if (!cj || vla_pretrained_write_dir(dir, p, NULL, cj) != VLA_OK) fail_msg("fixture: %s", vla_error_message());
    json_decref(cj);
    vla_normalizer_free(&ns), vla_normalizer_free(&na);
    vla_policy_free(p);
    return dir;
}

#endif
