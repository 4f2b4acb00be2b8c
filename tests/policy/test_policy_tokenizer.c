/* test_policy_tokenizer.c — a policy config's "tokenizer" reaches the policy:
 * with "paligemma" a π0.5 policy's prompt ids are the published
 * vocabulary's (equal to vla_pi05_tokenize with the PaliGemma tokenizer,
 * whose own tests check it against Hugging Face), not bytes; the key
 * survives the config's JSON round trip (checkpoints); a vocabulary larger
 * than the embedding is refused. With "eagle" a GR00T policy reads Eagle's
 * chat template with each image's rows where the template's <IMG_CONTEXT>
 * tokens stand: the packed prefix, images read as <IMG_CONTEXT>, is
 * vla_eagle_tokenize's ids (checked against transformers.js's chat template
 * and tokenizer in test_tokenizer_hf.c) exactly. */
#include "test_util.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy/config.h"
#include "policy/policy.h"
#include "policy/tokenizer.h"
#include "tensor/ops.h"

/* pi05-nano's shapes with PaliGemma's vocabulary (the embedding is 257,152 × 16). */
static const char *CFG =
    "{\"policy\": \"pi05\", \"name\": \"pi05-nano-paligemma\", \"tokenizer\": \"paligemma\","
    " \"vision\": {\"image_size\": 32, \"patch\": 8, \"channels\": 3, \"width\": 16, \"depth\": 1, \"heads\": 2,"
    "   \"mlp\": 32, \"cameras\": 1},"
    " \"language\": {\"width\": 16, \"depth\": 1, \"heads\": 2, \"kv_heads\": 1, \"head_dim\": 8, \"mlp\": 32,"
    "   \"vocab\": %d, \"max_tokens\": 48},"
    " \"expert\": {\"width\": 16, \"depth\": 1, \"mlp\": 32},"
    " \"action\": {\"dim\": 2, \"horizon\": 4, \"state_dim\": 2},"
    " \"flow\": {\"steps\": 2, \"beta_alpha\": 1.5, \"beta_beta\": 1.0, \"time_scale\": 0.999,"
    "   \"time_min_period\": 0.004, \"time_max_period\": 4.0},"
    " \"normalization\": {\"state\": \"quantiles\", \"action\": \"quantiles\"}, \"frozen\": []}";

static void test_paligemma_prompt(void **state) {
    (void)state;
    char text[2048];
    snprintf(text, sizeof text, CFG, 257152);
    vla_policy_config cfg;
    assert_int_equal(vla_policy_config_parse("t", text, strlen(text), &cfg), VLA_OK);
    assert_string_equal(cfg.tokenizer, "paligemma");
    vla_policy *p;
    vla_status st = vla_policy_create(&cfg, test_cpu_backend(), &p);
    if (st != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(p->tokenizer->vocab_size, 257152);
    const float st2[2] = {0.25f, -0.5f};
    int32_t ids[48], want[48];
    bool mask[48];
    int64_t n = 0, m = 0;
    assert_int_equal(vla_policy_tokenize(p, "pick up the red cube", st2, 2, 1, ids, 48, &n), VLA_OK);
    vla_tokenizer *pg;
    assert_int_equal(vla_tokenizer_hf_load("paligemma", &pg), VLA_OK);
    assert_int_equal(vla_pi05_tokenize(pg, "pick up the red cube", st2, 2, 48, want, mask, &m, NULL), VLA_OK);
    assert_int_equal(n, m);
    assert_memory_equal(ids, want, (size_t)n * sizeof *ids);
    assert_int_equal(ids[0], 2); /* Gemma's <bos>, not the byte tokenizer's 256 */
    int above_bytes = 0;
    for (int64_t i = 0; i < n; i++) above_bytes += ids[i] >= VLA_BYTE_VOCAB;
    assert_true(above_bytes > n / 2);
    /* the key survives the JSON a checkpoint stores */
    json_t *j = NULL;
    assert_int_equal(vla_policy_config_to_json(&cfg, &j), VLA_OK);
    assert_string_equal(json_string_value(json_object_get(j, "tokenizer")), "paligemma");
    json_decref(j);
    vla_tokenizer_free(pg);
    vla_policy_free(p);
}

static void test_refusals(void **state) {
    (void)state;
    char text[2048];
    snprintf(text, sizeof text, CFG, 259); /* an embedding of 259 rows cannot take 257,152 ids */
    vla_policy_config cfg;
    assert_int_equal(vla_policy_config_parse("t", text, strlen(text), &cfg), VLA_OK);
    vla_policy *p;
    assert_int_equal(vla_policy_create(&cfg, test_cpu_backend(), &p), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "language.vocab is 259"));
    vla_policy_config g;
    assert_int_equal(vla_policy_config_load("groot-nano", &g), VLA_OK);
    snprintf(g.tokenizer, sizeof g.tokenizer, "eagle"); /* 151,680 ids, 259 rows */
    assert_int_equal(vla_policy_create(&g, test_cpu_backend(), &p), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "language.vocab is 259"));
    snprintf(g.tokenizer, sizeof g.tokenizer, "qwen3"); /* Qwen3 alone has no <img> */
    assert_int_equal(vla_policy_create(&g, test_cpu_backend(), &p), VLA_ERR_UNSUPPORTED);
    assert_non_null(strstr(vla_error_message(), "Eagle's chat template"));
    vla_error_clear();
}

/* groot-nano with Eagle's vocabulary and two cameras. */
static void test_groot_eagle_prompt(void **state) {
    (void)state;
    vla_policy_config g;
    assert_int_equal(vla_policy_config_load("groot-nano", &g), VLA_OK);
    snprintf(g.tokenizer, sizeof g.tokenizer, "eagle");
    g.language.vocab = 151680, g.vision.cameras = 2;
    vla_policy *p;
    vla_status st = vla_policy_create(&g, test_cpu_backend(), &p);
    if (st != VLA_OK) fail_msg("%s", vla_error_message());
    assert_int_equal(vla_policy_init_weights(p, 3), VLA_OK);
    enum { S = 3 };
    const int64_t img = 3 * 32 * 32, itok = vla_policy_image_tokens(&p->cfg);
    static float images[S * 2 * 3 * 32 * 32], state_v[S * 2];
    for (int64_t i = 0; i < S * 2 * img; i++) images[i] = (float)(i % 97) / 97.0f;
    const char *tasks[S] = {"pick up the red cube", "Stack the 2 blocks, then push the T ✋", ""};
    const uint8_t valid[S * 2] = {1, 1, 0, 1, 0, 0}; /* two cameras, the second only, none */
    vla_observation obs = {.n_samples = S, .task = tasks, .images = images, .image_valid = valid, .state = state_v};
    vla_obs_pack o;
    st = vla_obs_pack_build(p, &obs, false, &o);
    if (st != VLA_OK) fail_msg("%s", vla_error_message());
    for (int s = 0; s < S; s++) {
        int32_t n_img = valid[2 * s] + valid[2 * s + 1], *want = NULL;
        int64_t n_want = 0;
        assert_int_equal(vla_eagle_tokenize(p->tokenizer, tasks[s], n_img, itok, &want, &n_want), VLA_OK);
        int64_t len = o.cu[s + 1] - o.cu[s];
        assert_int_equal(len, n_want);
        for (int64_t t = 0; t < len; t++) {
            int64_t r = o.cu[s] + t;
            int32_t got = o.roles[r] == VLA_ROLE_IMAGE ? 151669 : o.ids[r]; /* an image row reads as <IMG_CONTEXT> */
            if (got != want[t]) fail_msg("sample %d token %lld: %d, Eagle's prompt has %d", s, (long long)t, got, want[t]);
            assert_int_equal(o.pos[r], t);  /* sequential positions, causal groups */
            assert_int_equal(o.grp[r], t);
        }
        free(want);
    }
    vla_obs_pack_free(&o);
    /* the network runs on the interleaved prefix */
    float actions[S * 4 * 2];
    st = vla_policy_sample_actions(p, &obs, actions);
    if (st != VLA_OK) fail_msg("%s", vla_error_message());
    for (int i = 0; i < S * 4 * 2; i++) assert_true(isfinite(actions[i]));
    vla_policy_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_paligemma_prompt), cmocka_unit_test(test_refusals),
                                       cmocka_unit_test(test_groot_eagle_prompt)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
