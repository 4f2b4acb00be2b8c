/* test_nccl_plan.c — distributed/nccl_plan.h, ZeRO-1's unequal shards laid
 * out in NCCL's equal blocks: every rank's shard fits its block, the blocks
 * tile the padded buffer, and NCCL's reduce-scatter and all-gather,
 * simulated on host buffers over that layout (the pack, the collective's
 * definition, the unpack the device path does), give exactly the shards
 * and the gathered vector of the MPI path's unequal collectives. */
#include "test_util.h"
#include "base/rng.h"
#include "distributed/nccl_plan.h"
#include "distributed/zero1.h"

#include <stdlib.h>
#include <string.h>

static void test_blocks(void **state) {
    (void)state;
    for (int64_t numel = 1; numel < 200; numel += 7)
        for (int world = 1; world <= 9 && world <= numel; world++) {
            vla_nccl_shards s = vla_nccl_shards_make(numel, world);
            assert_int_equal(vla_nccl_padded_count(&s), world * s.block);
            int64_t next = 0;
            for (int r = 0; r < world; r++) {
                int64_t lo, hi, at;
                vla_nccl_shard(&s, r, &lo, &hi, &at);
                assert_int_equal(lo, next);
                assert_true(hi - lo <= s.block && at == r * s.block);
                next = hi;
            }
            assert_int_equal(next, numel);
        }
}

static void test_simulated_collectives(void **state) {
    (void)state;
    vla_rng r = vla_rng_stream(2, 0);
    const int64_t numel = 101;
    for (int world = 1; world <= 6; world++) {
        vla_nccl_shards s = vla_nccl_shards_make(numel, world);
        int64_t P = vla_nccl_padded_count(&s);
        float *g = malloc(sizeof(float) * (size_t)(numel * world)), *pad = calloc((size_t)(P * world), 4);
        for (int64_t i = 0; i < numel * world; i++) g[i] = (float)vla_rng_normal(&r);
        /* each rank packs its gradient into the padded layout */
        for (int q = 0; q < world; q++)
            for (int rr = 0; rr < world; rr++) {
                int64_t lo, hi, at;
                vla_nccl_shard(&s, rr, &lo, &hi, &at);
                memcpy(pad + q * P + at, g + q * numel + lo, sizeof(float) * (size_t)(hi - lo));
            }
        /* reduce-scatter (MEAN): rank rr receives block rr summed over ranks, divided */
        for (int rr = 0; rr < world; rr++) {
            int64_t lo, hi, at;
            vla_nccl_shard(&s, rr, &lo, &hi, &at);
            for (int64_t j = 0; j < s.block; j++) {
                float acc = 0;
                for (int q = 0; q < world; q++) acc += pad[q * P + at + j];
                acc /= (float)world;
                if (j < hi - lo) {
                    float want = 0;
                    for (int q = 0; q < world; q++) want += g[q * numel + lo + j];
                    want /= (float)world;
                    assert_true(acc == want);
                } else {
                    assert_true(acc == 0.0f); /* padding reduces to zero */
                }
            }
        }
        /* all-gather: every rank's block gathered, unpacked into the flat vector */
        float *params = calloc((size_t)numel, 4), *gathered = calloc((size_t)P, 4);
        for (int rr = 0; rr < world; rr++) {
            int64_t lo, hi, at;
            vla_nccl_shard(&s, rr, &lo, &hi, &at);
            for (int64_t j = 0; j < hi - lo; j++) gathered[at + j] = (float)(lo + j);
        }
        for (int rr = 0; rr < world; rr++) {
            int64_t lo, hi, at;
            vla_nccl_shard(&s, rr, &lo, &hi, &at);
            memcpy(params + lo, gathered + at, sizeof(float) * (size_t)(hi - lo));
        }
        for (int64_t i = 0; i < numel; i++) assert_true(params[i] == (float)i);
        free(g), free(pad), free(params), free(gathered);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks),
        cmocka_unit_test(test_simulated_collectives),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
