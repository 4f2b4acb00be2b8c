/* test_policy_config.c — policy configs: every preset in configs/ loads and
 * validates, presets resolve through VLA_CONFIG_DIR and relative to the
 * executable, and bad configs fail with messages that name the key. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "policy/config.h"

static void test_presets_load(void **state) {
    static const char *const names[] = {"pi05", "pi05-tiny", "pi05-nano", "groot-n1.5", "groot-tiny", "groot-nano"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        vla_policy_config c;
        vla_status st = vla_policy_config_load(names[i], &c);
        if (st != VLA_OK) fail_msg("%s: %s", names[i], vla_error_message());
        assert_string_equal(c.name, names[i]);
        assert_string_equal(vla_policy_config_family_name(&c), strncmp(names[i], "pi05", 4) ? "groot" : "pi05");
    }
}

static void test_published_values(void **state) {
    vla_policy_config c;
    assert_int_equal(vla_policy_config_load("pi05", &c), VLA_OK);
    /* openpi models/gemma.py get_config, siglip.py, pi0_config.py */
    assert_int_equal(c.vision.width, 1152);
    assert_int_equal(c.vision.depth, 27);
    assert_int_equal(c.vision.heads, 16);
    assert_int_equal(c.vision.mlp, 4304);
    assert_int_equal(vla_policy_image_tokens(&c), 256);
    assert_int_equal(c.language.width, 2048);
    assert_int_equal(c.language.depth, 18);
    assert_int_equal(c.language.heads, 8);
    assert_int_equal(c.language.kv_heads, 1);
    assert_int_equal(c.language.head_dim, 256);
    assert_int_equal(c.language.mlp, 16384);
    assert_int_equal(c.language.vocab, 257152);
    assert_int_equal(c.language.max_tokens, 200);
    assert_int_equal(c.expert.width, 1024);
    assert_int_equal(c.expert.mlp, 4096);
    assert_int_equal(c.action.horizon, 50);
    assert_int_equal(c.action.action_dim, 32);
    assert_int_equal(c.flow.steps, 10);
    assert_int_equal(vla_policy_prefix_tokens(&c), 968); /* 3·256 + 200 (openpi Pi0Config, derived) */
    assert_int_equal(c.norm_action, VLA_NORM_QUANTILES);
    for (int g = 0; g < VLA_GROUP_COUNT; g++) assert_false(c.frozen[g]);

    assert_int_equal(vla_policy_config_load("groot-n1.5", &c), VLA_OK);
    /* nvidia/GR00T-N1.5-3B config.json (Eagle 2.5 backbone, Qwen3-1.7B LLM) */
    assert_int_equal(c.language.depth, 12);
    assert_int_equal(c.language.heads, 16);
    assert_int_equal(c.language.kv_heads, 8);
    assert_int_equal(c.language.head_dim, 128);
    assert_int_equal(c.language.mlp, 6144);
    assert_int_equal(c.language.vocab, 151680);
    assert_true(c.language.qk_norm);
    assert_int_equal(c.head.dit_layers, 16);
    assert_int_equal(c.head.dit_heads * c.head.dit_head_dim, 1536);
    assert_int_equal(c.head.vl_heads * c.head.vl_head_dim, 2048);
    assert_int_equal(c.head.output_dim, 1024);
    assert_int_equal(c.head.future_tokens, 32);
    assert_int_equal(c.head.embodiments, 32);
    assert_int_equal(c.action.horizon, 16);
    assert_int_equal(c.action.state_dim, 64);
    assert_int_equal(c.flow.steps, 4);
    assert_true(c.frozen[VLA_GROUP_VISION] && c.frozen[VLA_GROUP_CONNECTOR] && c.frozen[VLA_GROUP_LANGUAGE]);
    assert_false(c.frozen[VLA_GROUP_EXPERT] || c.frozen[VLA_GROUP_ACTION_IO] || c.frozen[VLA_GROUP_VL_ADAPTER]);
}

static void test_find(void **state) {
    char path[1024];
    /* ctest runs in the build dir; the test binary sits in <build>/tests, so
     * the source tree's configs/ is found relative to the executable. */
    unsetenv("VLA_CONFIG_DIR");
    assert_int_equal(vla_policy_config_find("pi05-nano", path, sizeof path), VLA_OK);
    assert_non_null(strstr(path, "configs/pi05-nano.json"));

    /* VLA_CONFIG_DIR wins */
    const char *dir = test_tmp_dir();
    char src[1024], dst[1024], cmd[2200];
    snprintf(src, sizeof src, "%s", test_source_path("configs/pi05-nano.json"));
    snprintf(dst, sizeof dst, "%s/mine.json", dir);
    snprintf(cmd, sizeof cmd, "sed 's/\"pi05-nano\"/\"mine\"/' '%s' > '%s'", src, dst);
    assert_int_equal(system(cmd), 0);
    setenv("VLA_CONFIG_DIR", dir, 1);
    vla_policy_config c;
    assert_int_equal(vla_policy_config_load("mine", &c), VLA_OK);
    assert_string_equal(c.name, "mine");
    assert_non_null(strstr(c.path, "mine.json"));
    /* still falls through to the source tree for other names */
    assert_int_equal(vla_policy_config_load("groot-nano", &c), VLA_OK);
    unsetenv("VLA_CONFIG_DIR");

    /* a path works as is */
    assert_int_equal(vla_policy_config_load(dst, &c), VLA_OK);

    assert_int_equal(vla_policy_config_find("no-such-preset", path, sizeof path), VLA_ERR_NOT_FOUND);
    assert_non_null(strstr(vla_error_message(), "no-such-preset"));
    assert_int_equal(vla_policy_config_find("../etc/passwd", path, sizeof path), VLA_ERR_NOT_FOUND);
    assert_int_equal(vla_policy_config_find("a b", path, sizeof path), VLA_ERR_INVALID_ARG);
}

/* The nano config as text with one substitution applied. */
static const char *BASE =
    "{\"policy\":\"pi05\",\"name\":\"t\","
    "\"vision\":{\"image_size\":32,\"patch\":8,\"width\":32,\"depth\":1,\"heads\":2,\"mlp\":64},"
    "\"language\":{\"width\":32,\"depth\":2,\"heads\":2,\"kv_heads\":1,\"head_dim\":16,\"mlp\":64,\"vocab\":259,"
    "\"max_tokens\":48},"
    "\"expert\":{\"width\":16,\"depth\":2,\"mlp\":32},"
    "\"action\":{\"dim\":2,\"horizon\":4,\"state_dim\":2},"
    "\"flow\":{\"steps\":10},"
    "\"normalization\":{\"state\":\"quantiles\",\"action\":\"QUANTILES\"}}";

static vla_status parse_with(const char *from, const char *to, vla_policy_config *c) {
    static char text[4096];
    const char *at = from ? strstr(BASE, from) : NULL;
    if (from && !at) fail_msg("substitution '%s' not in the base text", from);
    if (!at) snprintf(text, sizeof text, "%s", BASE);
    else snprintf(text, sizeof text, "%.*s%s%s", (int)(at - BASE), BASE, to, at + strlen(from));
    return vla_policy_config_parse("t.json", text, strlen(text), c);
}

static void expect_error(const char *from, const char *to, const char *msg) {
    vla_policy_config c;
    vla_status st = parse_with(from, to, &c);
    if (st == VLA_OK) fail_msg("'%s' → '%s' was accepted", from, to);
    if (!strstr(vla_error_message(), msg)) fail_msg("message '%s' lacks '%s'", vla_error_message(), msg);
}

static void test_errors_name_the_key(void **state) {
    vla_policy_config c;
    assert_int_equal(parse_with(NULL, NULL, &c), VLA_OK);
    assert_int_equal(c.vision.channels, 3);     /* default */
    assert_int_equal(c.vision.cameras, 1);      /* default */
    assert_true(c.flow.beta_alpha == 1.5);      /* default */
    assert_int_equal(c.norm_action, VLA_NORM_QUANTILES); /* case-insensitive */

    expect_error("\"heads\":2,\"mlp\":64}", "\"mlp\":64}", "'vision.heads' is missing");
    expect_error("\"kv_heads\":1", "\"kv_heads\":1.5", "'language.kv_heads' must be an integer");
    expect_error("\"kv_heads\":1", "\"kv_heads\":3", "language.kv_heads (3) must divide language.heads (2)");
    expect_error("\"kv_heads\":1", "\"kv_heads\":0", "'language.kv_heads' is 0; it must be in [1,");
    expect_error("\"patch\":8", "\"patch\":7", "vision.image_size (32) must be a multiple of vision.patch (7)");
    expect_error("\"depth\":2,\"mlp\":32", "\"depth\":3,\"mlp\":32", "expert.depth (3) must equal language.depth (2)");
    expect_error("\"vocab\":259", "\"vocab\":259,\"vocabb\":1", "unknown key 'language.vocabb'; did you mean 'vocab'?");
    expect_error("\"name\":\"t\"", "\"name\":\"t\",\"extra\":1", "unknown key 'extra'");
    expect_error("\"policy\":\"pi05\"", "\"policy\":\"pi0\"", "'policy' must name a policy family (one of pi05, groot)");
    expect_error("\"state\":\"quantiles\"", "\"state\":\"quantile\"", "'normalization.state' must be one of");
    expect_error("\"flow\":{\"steps\":10}", "\"flow\":{}", "'flow.steps' is missing");
    expect_error("\"flow\":{\"steps\":10}", "\"flow\":{\"steps\":10},\"frozen\":[\"vison\"]", "'frozen[0]'");
    expect_error("\"expert\":", "\"experts\":", "unknown key 'experts'");
    expect_error("{\"policy\"", "[{\"policy\"", "invalid JSON");
    /* comments are ignored */
    assert_int_equal(parse_with("\"name\":\"t\"", "\"name\":\"t\",\"_note\":[1,2]", &c), VLA_OK);
    assert_int_equal(parse_with("\"flow\":{\"steps\":10}", "\"flow\":{\"steps\":10},\"frozen\":[\"vision\"]", &c),
                     VLA_OK);
    assert_true(c.frozen[VLA_GROUP_VISION]);
    assert_false(c.frozen[VLA_GROUP_LANGUAGE]);
}

static void test_groot_validation(void **state) {
    char *text;
    size_t n;
    assert_int_equal(vla_read_file(test_source_path("configs/groot-nano.json"), &text, &n), VLA_OK);
    vla_policy_config c;
    assert_int_equal(vla_policy_config_parse("groot-nano", text, n, &c), VLA_OK);
    /* vl_heads·vl_head_dim must be the LM width */
    char *at = strstr(text, "\"vl_head_dim\": 16");
    assert_non_null(at);
    memcpy(at, "\"vl_head_dim\": 15", 17);
    assert_int_not_equal(vla_policy_config_parse("groot-nano", text, n, &c), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "action_head.vl_heads·vl_head_dim (30) must equal language.width (32)"));
    free(text);
}

static void test_json_round_trip(void **state) {
    static const char *const names[] = {"pi05", "pi05-tiny", "pi05-nano", "groot-n1.5", "groot-tiny", "groot-nano"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        vla_policy_config a, b;
        assert_int_equal(vla_policy_config_load(names[i], &a), VLA_OK);
        json_t *j = NULL;
        assert_int_equal(vla_policy_config_to_json(&a, &j), VLA_OK);
        char *text = json_dumps(j, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        json_decref(j);
        assert_non_null(text);
        if (vla_policy_config_parse("round trip", text, strlen(text), &b) != VLA_OK)
            fail_msg("%s: %s\n%s", names[i], vla_error_message(), text);
        free(text);
        memset(a.path, 0, sizeof a.path);
        assert_memory_equal(&a, &b, sizeof a);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets_load),     cmocka_unit_test(test_published_values),
        cmocka_unit_test(test_find),             cmocka_unit_test(test_errors_name_the_key),
        cmocka_unit_test(test_groot_validation), cmocka_unit_test(test_json_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
