/* test_stage_ring.c — tensor/cuda/stage_ring.h, the staging ring's bookkeeping:
 * a simulated stream of uploads of random sizes, with the caller's duties
 * (record an event when the ring leaves a chunk, wait for it before writing
 * into the chunk again) played by the test, must never hand out a region
 * that overlaps one still in flight: a region is in flight from its take
 * until the event of its chunk has been waited for. Oversized requests are
 * refused (−1), regions are aligned and inside the ring. */
#include "test_util.h"
#include "base/rng.h"
#include "tensor/cuda/stage_ring.h"

#include <stdlib.h>

typedef struct {
    int64_t off;
    size_t len;
    int chunk;
    bool live;
} region;

static void test_ring_never_overlaps(void **state) {
    (void)state;
    vla_stage_ring r;
    const size_t chunk = 4096;
    vla_stage_ring_init(&r, chunk, 4);
    region *regs = calloc(20000, sizeof *regs);
    int n = 0, recorded[4] = {0}, entered = 0;
    vla_rng rng = vla_rng_stream(4, 0);
    for (int i = 0; i < 20000; i++) {
        size_t bytes = (size_t)(vla_rng_uniform(&rng) * 1500);
        vla_stage_take t = vla_stage_ring_take(&r, bytes);
        assert_true(t.offset >= 0);
        if (t.left >= 0) recorded[t.left] = 1;
        if (t.entered >= 0) {
            entered++;
            assert_int_equal(t.entered, (t.left + 1) % 4);
            /* waiting for the chunk's event retires everything taken from it */
            for (int j = 0; j < n; j++)
                if (regs[j].chunk == t.entered) regs[j].live = false;
        }
        assert_true(t.offset % VLA_STAGE_ALIGN == 0);
        int c = (int)(t.offset / (int64_t)chunk);
        assert_true(t.offset + (int64_t)bytes <= (int64_t)chunk * (c + 1));
        for (int j = 0; j < n; j++)
            if (regs[j].live && t.offset < regs[j].off + (int64_t)regs[j].len && regs[j].off < t.offset + (int64_t)bytes)
                fail_msg("upload %d overlaps live upload %d", i, j);
        regs[n++] = (region){t.offset, bytes ? bytes : 1, c, true};
    }
    assert_true(entered > 100);
    assert_true(recorded[0] && recorded[3]);
    free(regs);
}

static void test_ring_refuses_oversized(void **state) {
    (void)state;
    vla_stage_ring r;
    vla_stage_ring_init(&r, 1000, 3); /* rounded down to 768 */
    assert_int_equal(r.chunk_bytes, 768);
    assert_true(vla_stage_ring_take(&r, 769).offset == -1);
    vla_stage_take t = vla_stage_ring_take(&r, 768);
    assert_true(t.offset == 0 && t.left == -1);
    t = vla_stage_ring_take(&r, 1);
    assert_true(t.offset == 768 && t.left == 0 && t.entered == 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_never_overlaps),
        cmocka_unit_test(test_ring_refuses_oversized),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
