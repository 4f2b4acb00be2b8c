/* test_policy_tokenizer.c — the byte-level tokenizer and π0.5's prompt:
 * openpi's 256-bin state discretisation at and around bin edges, task
 * cleaning, BOS/padding/truncation, with expectations worked out by hand. */
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy/tokenizer.h"

static void test_state_bins(void **state) {
    /* bin k holds [−1 + k/128, −1 + (k+1)/128) (np.linspace(-1, 1, 257)[:-1] edges) */
    assert_int_equal(vla_pi05_state_bin(-1.0f), 0);
    assert_int_equal(vla_pi05_state_bin(nextafterf(-1.0f, -2.0f)), -1); /* below the first edge: digitize → 0, −1 */
    assert_int_equal(vla_pi05_state_bin(-3.0f), -1);
    assert_int_equal(vla_pi05_state_bin(0.0f), 128);
    assert_int_equal(vla_pi05_state_bin(-0.0f), 128);
    assert_int_equal(vla_pi05_state_bin(nextafterf(0.0f, -1.0f)), 127); /* just below the edge at 0 */
    assert_int_equal(vla_pi05_state_bin(-1e-30f), 127);                 /* (x+1)·128 rounds to 128; still 127 */
    assert_int_equal(vla_pi05_state_bin(0.5f), 192);                    /* −1 + 192/128 = 0.5 exactly */
    assert_int_equal(vla_pi05_state_bin(nextafterf(0.5f, 0.0f)), 191);
    assert_int_equal(vla_pi05_state_bin(nextafterf(0.5f, 1.0f)), 192);
    assert_int_equal(vla_pi05_state_bin(-0.99f), 1);                    /* 0.01·128 = 1.28 */
    assert_int_equal(vla_pi05_state_bin(0.9921875f), 255);              /* the last edge, 1 − 1/128 */
    assert_int_equal(vla_pi05_state_bin(nextafterf(0.9921875f, 0.0f)), 254);
    assert_int_equal(vla_pi05_state_bin(1.0f), 255);
    assert_int_equal(vla_pi05_state_bin(5.0f), 255);
    assert_int_equal(vla_pi05_state_bin(INFINITY), 255);
    assert_int_equal(vla_pi05_state_bin(-INFINITY), -1);
    /* every edge maps to its own bin and the float just below it to the one before */
    for (int k = 1; k < 256; k++) {
        float e = (float)(-1.0 + k / 128.0);
        assert_int_equal(vla_pi05_state_bin(e), k);
        assert_int_equal(vla_pi05_state_bin(nextafterf(e, -2.0f)), k - 1);
    }
}

static void test_prompt_text(void **state) {
    float s[4] = {-1.0f, 0.0f, 1.0f, 0.5f};
    char *p = NULL;
    assert_int_equal(vla_pi05_prompt_text("  pick_up the\ncube \n", s, 4, &p), VLA_OK);
    /* strip, '_' → ' ', '\n' → ' ', case kept (openpi does not lowercase) */
    assert_string_equal(p, "Task: pick up the cube, State: 0 128 255 192;\nAction: ");
    free(p);
    assert_int_equal(vla_pi05_prompt_text("Push The T", s, 0, &p), VLA_OK);
    assert_string_equal(p, "Task: Push The T, State: ;\nAction: ");
    free(p);
    float neg[2] = {-1.5f, 0.25f}; /* 0.25 → (1.25·128) = 160 */
    assert_int_equal(vla_pi05_prompt_text("\t", neg, 2, &p), VLA_OK);
    assert_string_equal(p, "Task: , State: -1 160;\nAction: ");
    free(p);
    float bad[2] = {0.0f, NAN};
    assert_int_equal(vla_pi05_prompt_text("x", bad, 2, &p), VLA_ERR_NUMERIC);
    assert_null(p);
    assert_non_null(strstr(vla_error_message(), "state[1] is NaN"));
}

static void test_bytes_and_tokenize(void **state) {
    const vla_tokenizer *tok = vla_tokenizer_bytes();
    assert_int_equal(tok->vocab_size, 259);
    int32_t ids[128];
    int64_t n = 0;
    assert_int_equal(tok->ops->encode(tok, "A\xc3\xa9", 3, ids, 128, &n), VLA_OK); /* "Aé" in UTF-8 */
    assert_int_equal(n, 3);
    assert_int_equal(ids[0], 65);
    assert_int_equal(ids[1], 0xc3);
    assert_int_equal(ids[2], 0xa9);
    assert_int_equal(tok->ops->encode(tok, "hello", 5, ids, 0, &n), VLA_OK); /* sizing call */
    assert_int_equal(n, 5);

    float s[2] = {0.0f, 1.0f};
    const char *expect = "Task: go, State: 128 255;\nAction: "; /* 34 bytes */
    bool mask[64];
    int64_t n_real = 0;
    bool trunc = true;
    assert_int_equal(vla_pi05_tokenize(tok, "go", s, 2, 64, ids, mask, &n_real, &trunc), VLA_OK);
    assert_int_equal(n_real, 35);
    assert_false(trunc);
    assert_int_equal(ids[0], VLA_BYTE_BOS);
    for (int i = 0; i < 34; i++) assert_int_equal(ids[1 + i], (unsigned char)expect[i]);
    for (int i = 35; i < 64; i++) {
        assert_int_equal(ids[i], VLA_BYTE_PAD);
        assert_false(mask[i]);
    }
    assert_true(mask[0] && mask[34]);
    char text[128];
    size_t len = 0;
    assert_int_equal(tok->ops->decode(tok, ids, 64, text, sizeof text, &len), VLA_OK);
    assert_string_equal(text, expect); /* BOS and PAD are skipped */
    assert_int_equal(len, 34);

    /* truncation keeps BOS and the first max_len − 1 bytes */
    assert_int_equal(vla_pi05_tokenize(tok, "go", s, 2, 10, ids, mask, &n_real, &trunc), VLA_OK);
    assert_int_equal(n_real, 10);
    assert_true(trunc);
    assert_int_equal(ids[9], (unsigned char)expect[8]);
    assert_true(mask[9]);

    int32_t bad[2] = {65, 300};
    assert_int_equal(tok->ops->decode(tok, bad, 2, text, sizeof text, &len), VLA_ERR_INVALID_ARG);
    /* a too-small output buffer still NUL-terminates and reports the full length */
    assert_int_equal(tok->ops->decode(tok, ids, 10, text, 4, &len), VLA_OK);
    assert_string_equal(text, "Tas");
    assert_int_equal(len, 9);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_bins),
        cmocka_unit_test(test_prompt_text),
        cmocka_unit_test(test_bytes_and_tokenize),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
