/* test_schedule.c — learning-rate schedules against values computed by
 * tools/gen_train_goldens.py (optax's formulas for openpi, torch LambdaLR with
 * the HF cosine for GR00T). */
#include "test_util.h"
#include "base/fsutil.h"
#include "train/schedule.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_schedule_goldens(void **state) {
    char *buf;
    size_t len;
    assert_int_equal(vla_read_file(test_source_path("tests/train/data/schedule_golden.txt"), &buf, &len), VLA_OK);
    int lines = 0;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#') continue;
        char policy[16];
        long long total, step;
        double want;
        assert_int_equal(sscanf(line, "%15s %lld %lld %lf", policy, &total, &step, &want), 4);
        vla_schedule s;
        assert_int_equal(vla_schedule_defaults(policy, total, &s), VLA_OK);
        assert_int_equal(vla_schedule_validate(&s), VLA_OK);
        double got = vla_schedule_lr(&s, step);
        if (!(fabs(got - want) <= 1e-12 * fabs(want) + 1e-20))
            fail_msg("%s total %lld step %lld: lr %.17g, reference %.17g", policy, total, step, got, want);
        lines++;
    }
    assert_true(lines > 60);
    free(buf);
}

static void test_schedule_shapes(void **state) {
    vla_schedule s;
    assert_int_equal(vla_schedule_defaults("pi05", 0, &s), VLA_OK);
    assert_int_equal(s.warmup_steps, 1000);
    assert_int_equal(s.decay_steps, 30000);
    assert_true(vla_schedule_lr(&s, 1000) == 2.5e-5);
    assert_true(fabs(vla_schedule_lr(&s, 30000) - 2.5e-6) < 1e-18);
    assert_true(fabs(vla_schedule_lr(&s, 1000000) - 2.5e-6) < 1e-18);
    /* monotone up in warmup, down after */
    for (int64_t k = 1; k < 1000; k += 37) assert_true(vla_schedule_lr(&s, k) > vla_schedule_lr(&s, k - 1));
    for (int64_t k = 1001; k < 30000; k += 997) assert_true(vla_schedule_lr(&s, k) < vla_schedule_lr(&s, k - 1));
    assert_int_equal(vla_schedule_defaults("groot", 10000, &s), VLA_OK);
    assert_int_equal(s.warmup_steps, 500);
    assert_true(vla_schedule_lr(&s, 0) == 0.0);
    assert_true(vla_schedule_lr(&s, 500) == 1e-4);
    assert_true(vla_schedule_lr(&s, 10000) == 0.0);
    assert_int_equal(vla_schedule_defaults("groot", 0, &s), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_schedule_defaults("diffusion", 10, &s), VLA_ERR_INVALID_ARG);
    vla_schedule c = {.kind = VLA_SCHED_CONSTANT, .peak_lr = 3e-4};
    assert_int_equal(vla_schedule_validate(&c), VLA_OK);
    assert_true(vla_schedule_lr(&c, 12345) == 3e-4);
    vla_schedule bad = {.kind = VLA_SCHED_WARMUP_COSINE, .peak_lr = 1e-4, .warmup_steps = 10, .decay_steps = 5};
    assert_int_equal(vla_schedule_validate(&bad), VLA_ERR_INVALID_ARG);
    /* no warmup, zero-length decay: floor right away */
    vla_schedule z = {.kind = VLA_SCHED_WARMUP_COSINE, .peak_lr = 1e-4, .end_lr = 1e-5};
    assert_true(vla_schedule_lr(&z, 0) == 1e-5);
    char buf[160];
    assert_int_equal(vla_schedule_defaults("groot", 10000, &s), VLA_OK);
    assert_non_null(strstr(vla_schedule_describe(&s, buf, sizeof buf), "warmup=500"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schedule_goldens),
        cmocka_unit_test(test_schedule_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
