/* test_fixtures.c — small datasets several tests train or load from,
 * recorded through the real simulator and the real dataset writer, and
 * small Parquet and safetensors files written by vla.c's own writers. */
#include "test_util.h"
#include "data/lerobot.h"
#include "io/parquet.h"
#include "io/safetensors.h"
#include "sim/env.h"
#include "base/rng.h"
#include "policy/policy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define IMG TEST_REACH_IMAGE_SIZE

/* Record `episodes` expert episodes of Reach (seed0 + e); nan_frame ≥ 0
 * poisons that frame's action. */
void test_record_reach(const char *root, int episodes, uint64_t seed0, int nan_frame) {
    vla_lr_feature_spec f[] = {
        {"observation.image", "video", 3, {IMG, IMG, 3}, NULL, 0},
        {"observation.state", "float32", 1, {4}, NULL, 0},
        {"action", "float32", 1, {2}, NULL, 0},
    };
    vla_lr_writer_opts o = {.fps = 10, .robot_type = "reach", .features = f, .n_features = 3};
    vla_lr_writer *w;
    assert_int_equal(vla_lr_writer_open(root, &o, &w), VLA_OK);
    vla_env *env;
    assert_int_equal(vla_env_make("reach", &env), VLA_OK);
    vla_sim_policy *pol;
    assert_int_equal(vla_sim_policy_make("expert", vla_env_get_spec(env), &pol), VLA_OK);
    uint8_t rgb[IMG * IMG * 3];
    int frame = 0;
    for (int e = 0; e < episodes; e++) {
        vla_env_info info;
        assert_int_equal(vla_env_reset(env, seed0 + (uint64_t)e, &info), VLA_OK);
        vla_sim_policy_reset(pol, env, seed0 + (uint64_t)e);
        for (int t = 0; t < 50; t++) {
            vla_env_obs ob;
            memset(&ob, 0, sizeof ob);
            ob.type = VLA_OBS_STATE;
            assert_int_equal(vla_env_observe(env, &ob), VLA_OK);
            assert_int_equal(vla_env_render(env, IMG, IMG, rgb, 0, false), VLA_OK);
            double a[2];
            assert_int_equal(vla_sim_policy_act(pol, env, a), VLA_OK);
            float s[4] = {(float)ob.state[0], (float)ob.state[1], (float)ob.state[2], (float)ob.state[3]};
            float af[2] = {(float)a[0], (float)a[1]};
            if (frame == nan_frame) af[1] = NAN;
            const float *vals[] = {s, af};
            const uint8_t *imgs[] = {rgb};
            assert_int_equal(vla_lr_writer_add_frame(w, vla_env_get_spec(env)->task, vals, imgs), VLA_OK);
            frame++;
            vla_env_step_result r;
            assert_int_equal(vla_env_step(env, a, &r), VLA_OK);
            if (r.terminated || r.truncated) break;
        }
        assert_int_equal(vla_lr_writer_save_episode(w), VLA_OK);
    }
    vla_sim_policy_free(pol);
    vla_env_free(env);
    assert_int_equal(vla_lr_writer_close(w), VLA_OK);
}

void test_write_sample_parquet(const char *path, int codec, int page_version) {
    static const vla_parquet_field f[] = {
        {"index", VLA_PQW_INT64, 0, 0},         {"timestamp", VLA_PQW_FLOAT, 0, 0},
        {"observation.state", VLA_PQW_FLOAT, 1, 0}, {"task", VLA_PQW_STRING, 0, 0},
        {"image", VLA_PQW_BINARY, 0, 1},        {"done", VLA_PQW_BOOLEAN, 0, 0},
        {"reward", VLA_PQW_DOUBLE, 0, 1},
    };
    enum { ROWS = 40, W = 4 };
    static const char *tasks[] = {"push the T", "reach the target"};
    int64_t index[ROWS], bo[ROWS + 1], io[ROWS + 1], lo[ROWS + 1];
    float ts[ROWS], state[ROWS * W];
    char tb[ROWS * 20];
    uint8_t img[ROWS * 8], done[ROWS], valid[ROWS];
    double reward[ROWS];
    vla_parquet_write_options o = vla_parquet_write_defaults();
    o.codec = codec;
    o.page_version = page_version;
    o.page_bytes = 256; /* several pages per chunk */
    vla_parquet_writer *w;
    assert_int_equal(vla_parquet_writer_open(path, f, 7, &o, &w), VLA_OK);
    assert_int_equal(vla_parquet_writer_add_kv(w, "huggingface", "{\"info\": {}}"), VLA_OK);
    for (int g = 0; g < 3; g++) {
        bo[0] = io[0] = lo[0] = 0;
        for (int r = 0; r < ROWS; r++) {
            int64_t i = g * ROWS + r;
            index[r] = i;
            ts[r] = (float)r / 10.0f;
            for (int k = 0; k < W; k++) state[r * W + k] = (float)(i * W + k) * 0.25f;
            const char *t = tasks[(r / 7) % 2];
            memcpy(tb + bo[r], t, strlen(t));
            bo[r + 1] = bo[r] + (int64_t)strlen(t);
            for (int k = 0; k < 8; k++) img[r * 8 + k] = (uint8_t)(i * 8 + k);
            io[r + 1] = io[r] + (r % 5 == 4 ? 0 : 8);
            valid[r] = r % 5 != 4;
            done[r] = r == ROWS - 1;
            reward[r] = r % 3 ? 0.5 * r : 0;
            lo[r + 1] = lo[r] + W;
        }
        /* image: rows r%5==4 are null and hold no bytes */
        uint8_t packed[ROWS * 8];
        for (int r = 0, at = 0; r < ROWS; r++)
            if (valid[r]) memcpy(packed + at, img + r * 8, 8), at += 8;
        vla_parquet_wcolumn c[] = {
            {.values = index}, {.values = ts}, {.values = state, .list_offsets = lo},
            {.byte_offsets = bo, .bytes = (const uint8_t *)tb}, {.byte_offsets = io, .bytes = packed, .valid = valid},
            {.values = done}, {.values = reward, .valid = valid},
        };
        assert_int_equal(vla_parquet_writer_write_row_group(w, ROWS, c), VLA_OK);
    }
    assert_int_equal(vla_parquet_writer_close(w), VLA_OK);
}

void test_write_sample_safetensors(const char *path) {
    float a[6 * 5];
    uint16_t b[16];
    int64_t c[3] = {-1, 0, INT64_MAX};
    uint8_t d[7] = {1, 2, 3, 4, 5, 6, 7};
    for (int i = 0; i < 30; i++) a[i] = (float)i * 0.5f - 3.0f;
    for (int i = 0; i < 16; i++) b[i] = (uint16_t)(0x3f80 + i); /* bf16 1.0, 1.0078, … */
    const int64_t sa[2] = {6, 5}, sb[1] = {16}, sc[1] = {3}, sd[1] = {7};
    vla_safetensors_writer *w;
    assert_int_equal(vla_safetensors_writer_new(&w), VLA_OK);
    assert_int_equal(vla_safetensors_writer_add(w, "layer.weight", VLA_F32, 2, sa, a), VLA_OK);
    assert_int_equal(vla_safetensors_writer_add(w, "layer.bias_bf16", VLA_BF16, 1, sb, b), VLA_OK);
    assert_int_equal(vla_safetensors_writer_add(w, "step", VLA_I64, 1, sc, c), VLA_OK);
    assert_int_equal(vla_safetensors_writer_add(w, "mask", VLA_U8, 1, sd, d), VLA_OK);
    assert_int_equal(vla_safetensors_writer_set_meta(w, "format", "pt"), VLA_OK);
    assert_int_equal(vla_safetensors_writer_set_meta(w, "note", "written by test_fixtures.c"), VLA_OK);
    assert_int_equal(vla_safetensors_writer_write(w, path), VLA_OK);
    vla_safetensors_writer_free(w);
}

/* ---- a packed policy batch (test_util.h) ------------------------------------------ */

static const char *const BATCH_TASKS[] = {"push the T block", "", "pick up the red cube", "go left"};

void test_policy_batch_free(test_policy_batch *t) {
    free(t->roles), free(t->pad), free(t->pos), free(t->grp), free(t->ids);
    free(t->images), free(t->state), free(t->actions);
}

void test_policy_batch_make(vla_policy *p, int32_t S, test_policy_batch *t) {
    memset(t, 0, sizeof *t);
    const vla_policy_config *c = &p->cfg;
    int64_t Hz = c->action.horizon, A = c->action.action_dim, SD = c->action.state_dim;
    int64_t img = c->vision.channels * c->vision.image_size * c->vision.image_size;
    int64_t maxt = c->language.max_tokens;
    int64_t cap = S * (c->vision.cameras * vla_policy_image_tokens(c) + maxt + Hz + 1);
    t->roles = calloc((size_t)cap, 1);
    t->pos = calloc((size_t)cap, sizeof(int32_t));
    t->grp = calloc((size_t)cap, sizeof(int32_t));
    t->ids = calloc((size_t)cap, sizeof(int32_t));
    t->images = calloc((size_t)(S * img), sizeof(float));
    t->state = calloc((size_t)(S * SD), sizeof(float));
    t->actions = calloc((size_t)(S * Hz * A), sizeof(float));
    t->pad = calloc((size_t)(S * Hz), 1);
    int32_t *tok = calloc((size_t)maxt, sizeof(int32_t));
    assert_non_null(t->roles), assert_non_null(tok);
    int64_t T = 0, n_img = 0;
    for (int32_t s = 0; s < S; s++) {
        vla_rng r = vla_rng_stream(21, (uint64_t)s);
        int32_t has_img = s != 2 && c->vision.cameras > 0;
        if (has_img)
            for (int64_t k = 0; k < img; k++) t->images[n_img * img + k] = vla_rng_uniform(&r);
        n_img += has_img;
        for (int64_t k = 0; k < SD; k++) t->state[s * SD + k] = 2 * vla_rng_uniform(&r) - 1;
        for (int64_t k = 0; k < Hz * A; k++) t->actions[s * Hz * A + k] = (float)(0.5 * vla_rng_normal(&r));
        /* padded steps; real entries not a power of two, so scaling by them rounds */
        for (int64_t h = 0; h < Hz; h++) t->pad[s * Hz + h] = s % 2 == 1 && h >= Hz - 1;
        t->rd[s] = s == 0 && A > 1 ? (int32_t)A - 1 : (int32_t)A;
        t->emb[s] = !strcmp(vla_policy_config_family_name(c), "groot") ? s % (int32_t)c->head.embodiments : 0;
        t->keys[s] = 500 + (uint64_t)s;
        int64_t nt = 0;
        assert_int_equal(vla_policy_tokenize(p, BATCH_TASKS[s % 4], t->state + s * SD, SD, has_img, tok, maxt, &nt), VLA_OK);
        int64_t len = vla_policy_sample_layout(p, has_img, tok, (int32_t)nt, t->roles + T, t->grp + T, t->pos + T);
        assert_true(T + len <= cap);
        for (int64_t k = 0, j = 0; k < len; k++)
            if (t->roles[T + k] == VLA_ROLE_TEXT) t->ids[T + k] = tok[j++];
        T += len;
        t->cu[s + 1] = (int32_t)T;
        t->cu_img[s + 1] = (int32_t)n_img;
    }
    free(tok);
    vla_batch *b = &t->b;
    b->n_samples = S, b->n_tokens = T, b->cu_seqlens = t->cu, b->roles = t->roles, b->positions = t->pos;
    b->groups = t->grp, b->token_ids = t->ids, b->n_images = (int32_t)n_img, b->cu_images = t->cu_img;
    b->images = t->images, b->state = t->state, b->actions = t->actions, b->action_is_pad = t->pad;
    b->real_action_dim = t->rd, b->embodiment = t->emb, b->seed = 9, b->sample_keys = t->keys;
}

vla_policy *test_policy_make(const char *preset, bool all_trainable, double perturb) {
    vla_policy_config c;
    if (vla_policy_config_load(preset, &c) != VLA_OK) fail_msg("config %s: %s", preset, vla_error_message());
    if (all_trainable) memset(c.frozen, 0, sizeof c.frozen);
    vla_policy *p = NULL;
    if (vla_policy_create(&c, test_backend(), &p) != VLA_OK) fail_msg("create %s: %s", preset, vla_error_message());
    assert_int_equal(vla_policy_init_weights(p, 3), VLA_OK);
    /* move off the zero/one inits (AdaRMS, norms, biases) so every path carries gradient */
    vla_rng r = vla_rng_stream(11, 0);
    float *w = test_weights_get(p);
    for (int64_t i = 0; i < p->n_weight_floats; i++) w[i] += (float)(perturb * vla_rng_normal(&r));
    test_weights_set(p, w);
    free(w);
    return p;
}
