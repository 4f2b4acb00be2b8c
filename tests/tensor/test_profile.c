/* test_profile.c — the profiling table (tensor/profile.h): a known sequence
 * of ops gives exactly its calls and GEMM FLOPs per row; nothing is recorded
 * while profiling is off; the ops' time lies inside the span; slots the
 * backend lacks stay NULL; one backend at a time; regions run op by op
 * while profiling (checked compares no replay then), or whole, one row per
 * call, when asked; ops from another
 * thread count; launches are counted per op where the backend counts them;
 * ops are summed by the calling thread's phase too; attention's FLOPs come
 * from the pairs the group rule allows; memory-bound ops their bytes;
 * the JSON it prints parses (jansson). That every slot is
 * forwarded unchanged is test_conformance's "profiled:" runs. */
#include "test_util.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/backend.h"
#include "tensor/profile.h"

static const vla_profile_row *row(const vla_profile *p, const char *op) {
    for (int i = 0; i < p->n_rows; i++)
        if (!strcmp(p->rows[i].op, op)) return &p->rows[i];
    return NULL;
}

typedef struct {
    const vla_ops *ops;
    float *x;
} thread_arg;

static void *scale_twice(void *va) {
    thread_arg *a = va;
    a->ops->scale(a->x, 2.0f, 64);
    a->ops->scale(a->x, 0.5f, 64);
    return NULL;
}

static void test_counts_and_flops(void **state) {
    (void)state;
    const vla_ops *cpu = vla_backend_find("cpu"), *ops = NULL;
    assert_int_equal(vla_profile_wrap(cpu, &ops), VLA_OK);
    /* the slots cpu lacks stay NULL: no regions, no marks (the host's clock) */
    assert_null(ops->run_captured);
    assert_null(ops->mark);
    const int64_t m = 24, n = 16, k = 40;
    float *a = ops->alloc(sizeof(float) * m * k), *b = ops->alloc(sizeof(float) * k * n);
    float *c = ops->alloc(sizeof(float) * m * n), *w = ops->alloc(sizeof(float) * 3 * 8 * 5);
    float *x = ops->alloc(sizeof(float) * 64), *y = ops->alloc(sizeof(float) * 10 * 5);
    ops->fill(a, 0.25f, m * k), ops->fill(b, -0.5f, k * n), ops->fill(w, 0.125f, 3 * 8 * 5), ops->fill(x, 1, 64);
    ops->sgemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n); /* off: not recorded */

    vla_profile_start();
    vla_gemm_q bf = {.mode = VLA_PREC_BF16};
    vla_profile_phase("alpha");
    for (int i = 0; i < 3; i++) ops->sgemm_q(&bf, false, false, m, n, k, 1, a, k, b, n, 0, c, n);
    vla_profile_phase("beta");
    ops->sgemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n);
    vla_profile_phase(NULL);
    ops->sgemm(false, false, m, n, k, 1, a, k, b, n, 1, c, n);
    int32_t ids[2] = {2, 0}, cu[3] = {0, 4, 10};
    ops->segment_linear_forward(y, x, w, NULL, ids, cu, 2, 8, 5);
    float h[4];
    ops->to_host(h, c, sizeof h);
    pthread_t th;
    thread_arg ta = {ops, x};
    assert_int_equal(pthread_create(&th, NULL, scale_twice, &ta), 0);
    pthread_join(th, NULL);
    vla_profile p;
    assert_int_equal(vla_profile_stop(&p), VLA_OK);
    ops->fill(x, 3, 64); /* stopped: not recorded */

    assert_false(p.device_clock);
    assert_int_equal(p.calls, 3 + 2 + 1 + 1 + 2);
    assert_int_equal(p.unmarked + p.dropped, 0);
    const vla_profile_row *q = row(&p, "sgemm_q.bf16"), *s = row(&p, "sgemm.fp32");
    const vla_profile_row *seg = row(&p, "segment_linear_forward"), *th_row = row(&p, "scale");
    assert_non_null(q), assert_non_null(s), assert_non_null(seg), assert_non_null(th_row);
    assert_non_null(row(&p, "to_host"));
    assert_null(row(&p, "fill"));
    assert_int_equal(q->calls, 3), assert_int_equal(s->calls, 2), assert_int_equal(th_row->calls, 2);
    assert_true(q->flops == 3 * 2.0 * m * n * k);
    assert_true(s->flops == 2 * 2.0 * m * n * k);
    assert_true(seg->flops == 2.0 * 10 * 8 * 5); /* every packed row through its segment's 8×5 matrix */
    assert_true(th_row->flops == 0);
    /* the bytes a memory-bound op must move: scale reads and writes 64 floats, twice; to_host its 16 */
    assert_true(th_row->bytes == 2 * 8.0 * 64);
    assert_true(row(&p, "to_host")->bytes == sizeof h);
    assert_true(q->bytes == 0); /* GEMMs are judged by their FLOPs */
    assert_int_equal(p.launches, 0); /* cpu counts no launches */
    /* phases in the order first seen; the other thread's ops are in none (a phase is per thread) */
    assert_int_equal(p.n_phases, 3);
    assert_string_equal(p.phases[0].name, "alpha");
    assert_int_equal(p.phases[0].calls, 3);
    assert_string_equal(p.phases[1].name, "beta");
    assert_int_equal(p.phases[1].calls, 1);
    assert_string_equal(p.phases[2].name, "(none)");
    assert_int_equal(p.phases[2].calls, 1 + 1 + 1 + 2); /* sgemm, segment_linear, to_host, the thread's two */
    assert_true(p.phases[0].ms + p.phases[1].ms + p.phases[2].ms == p.op_ms ||
                fabs(p.phases[0].ms + p.phases[1].ms + p.phases[2].ms - p.op_ms) < 1e-9);
    double sum = 0;
    for (int i = 0; i < p.n_rows; i++) {
        assert_true(p.rows[i].ms >= 0);
        if (i) assert_true(p.rows[i].ms <= p.rows[i - 1].ms);
        sum += p.rows[i].ms;
    }
    assert_true(sum == p.op_ms);
    assert_true(p.op_ms <= p.span_ms + 1e-9);

    /* the table for people, and the JSON members inside an object (jansson reads them) */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    vla_profile_print_table(f, &p, 2, "step", 3);
    fclose(f);
    assert_non_null(strstr(buf, "per step"));
    assert_non_null(strstr(buf, "(the other ops)")); /* five rows, three shown */
    free(buf);
    f = open_memstream(&buf, &len);
    fputc('{', f);
    vla_profile_print_json_members(f, &p, 2, 10);
    fputc('}', f);
    fclose(f);
    json_error_t err;
    json_t *j = json_loads(buf, 0, &err);
    if (!j) fail_msg("profile JSON does not parse: %s in %s", err.text, buf);
    assert_string_equal(json_string_value(json_object_get(j, "clock")), "host");
    assert_true(json_real_value(json_object_get(j, "calls_per")) == 4.5);
    json_t *arr = json_object_get(j, "ops");
    assert_int_equal(json_array_size(arr), p.n_rows);
    int found = 0;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *o = json_array_get(arr, i);
        if (strcmp(json_string_value(json_object_get(o, "op")), "sgemm_q.bf16")) continue;
        found = 1;
        assert_true(json_real_value(json_object_get(o, "calls")) == 1.5);
        assert_non_null(json_object_get(o, "tflops"));
    }
    assert_true(found);
    json_decref(j);
    free(buf);
    vla_profile_free(&p);

    ops->free(a), ops->free(b), ops->free(c), ops->free(w), ops->free(x), ops->free(y);
    vla_profile_unwrap();
}

static void test_one_backend_at_a_time(void **state) {
    (void)state;
    const vla_ops *cpu = vla_backend_find("cpu"), *chk = vla_backend_find("checked"), *a = NULL, *b = NULL;
    assert_int_equal(vla_profile_wrap(cpu, &a), VLA_OK);
    assert_int_equal(vla_profile_wrap(cpu, &b), VLA_OK);
    assert_ptr_equal(a, b);
    b = NULL;
    assert_int_equal(vla_profile_wrap(chk, &b), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "already profiled"));
    vla_error_clear();
    assert_null(b);
    vla_profile_unwrap();
    assert_int_equal(vla_profile_wrap(chk, &b), VLA_OK);
    assert_string_equal(b->name, "checked");
    vla_profile_unwrap();
    vla_profile p;
    assert_int_equal(vla_profile_stop(&p), VLA_ERR_INVALID_ARG); /* nothing wrapped */
    vla_error_clear();
}

/* A region through the profiling table: forwarded while not profiling
 * (checked compares the later calls: replays counted), op by op while
 * profiling (its ops recorded, nothing compared). */
typedef struct {
    const vla_ops *ops;
    float *x;
    int calls;
} region;

static vla_status body(void *vr) {
    region *r = vr;
    r->ops->scale(r->x, 1.5f, 32);
    r->ops->axpy(r->x, -0.25f, r->x, 32);
    r->calls++;
    return VLA_OK;
}

static void test_regions_op_by_op(void **state) {
    (void)state;
    const vla_ops *chk = vla_backend_find("checked"), *ops = NULL;
    assert_int_equal(vla_profile_wrap(chk, &ops), VLA_OK);
    assert_non_null(ops->run_captured);
    region r = {ops, ops->alloc(sizeof(float) * 32), 0};
    ops->fill(r.x, 1, 32);
    static const char key[] = "test_profile region";
    int64_t r0 = ops->stat(VLA_STAT_CAPTURED_REPLAYS);
    for (int i = 0; i < 3; i++) assert_int_equal(vla_ops_run_captured(ops, key, sizeof key, body, &r), VLA_OK);
    int64_t r1 = ops->stat(VLA_STAT_CAPTURED_REPLAYS);
    assert_true(r1 > r0); /* forwarded: checked compared the third call with the second */
    vla_profile_start();
    for (int i = 0; i < 3; i++) assert_int_equal(vla_ops_run_captured(ops, key, sizeof key, body, &r), VLA_OK);
    vla_profile p;
    assert_int_equal(vla_profile_stop(&p), VLA_OK);
    assert_int_equal(ops->stat(VLA_STAT_CAPTURED_REPLAYS), r1); /* op by op: no replay */
    assert_int_equal(r.calls, 6);
    assert_int_equal(row(&p, "scale")->calls, 3);
    assert_int_equal(row(&p, "axpy")->calls, 3);
    assert_int_equal(row(&p, "scale")->launches, 3); /* checked counts one launch per op call */
    assert_int_equal(p.launches, 6);
    vla_profile_free(&p);
    /* timed whole: one row per region call, run the backend's way (checked compares it: a replay), its
     * ops inside it (their launches the row's), none of them a row of its own */
    vla_profile_start_whole_regions();
    for (int i = 0; i < 3; i++) assert_int_equal(vla_ops_run_captured(ops, key, sizeof key, body, &r), VLA_OK);
    assert_int_equal(vla_profile_stop(&p), VLA_OK);
    assert_true(ops->stat(VLA_STAT_CAPTURED_REPLAYS) > r1);
    assert_int_equal(row(&p, "run_captured")->calls, 3);
    assert_int_equal(row(&p, "run_captured")->launches, 6);
    assert_null(row(&p, "scale"));
    assert_null(row(&p, "axpy"));
    assert_int_equal(r.calls, 9);
    vla_profile_free(&p);
    ops->free(r.x);
    vla_profile_unwrap();
}

/* Attention's FLOPs from the pairs the group rule allows: two samples of 3 and 2 tokens, groups
 * {0, 0, 1} and {0, 1} (a prefix and a suffix each): 2 + 2 + 3 and 1 + 2 pairs. */
static void test_attention_flops(void **state) {
    (void)state;
    const vla_ops *cpu = vla_backend_find("cpu"), *ops = NULL;
    assert_int_equal(vla_profile_wrap(cpu, &ops), VLA_OK);
    int32_t cu[3] = {0, 3, 5}, grp[5] = {0, 0, 1, 0, 1};
    vla_attn_seqs qs = {2, cu, grp};
    vla_attn_config cfg = {.n_heads = 2, .n_kv_heads = 1, .head_dim = 4};
    const int64_t n = 5;
    float *q = ops->alloc(sizeof(float) * n * 8), *k = ops->alloc(sizeof(float) * n * 4);
    float *v = ops->alloc(sizeof(float) * n * 4), *o = ops->alloc(sizeof(float) * n * 8);
    float *lse = ops->alloc(sizeof(float) * n * 2), *dq = ops->alloc(sizeof(float) * n * 8);
    float *dk = ops->alloc(sizeof(float) * n * 4), *dv = ops->alloc(sizeof(float) * n * 4);
    ops->fill(q, 0.1f, n * 8), ops->fill(k, 0.2f, n * 4), ops->fill(v, 0.3f, n * 4);
    ops->fill(dq, 0, n * 8), ops->fill(dk, 0, n * 4), ops->fill(dv, 0, n * 4);
    vla_profile_start();
    assert_int_equal(ops->attention_forward(&cfg, o, lse, q, k, v, &qs, &qs, NULL, NULL), VLA_OK);
    assert_int_equal(ops->attention_backward(&cfg, dq, dk, dv, o, q, k, v, o, lse, &qs, &qs, NULL), VLA_OK);
    vla_profile p;
    assert_int_equal(vla_profile_stop(&p), VLA_OK);
    const double pairs = 10, hd = 2 * 4;
    assert_true(row(&p, "attention_forward.fp32")->flops == 4 * pairs * hd);
    assert_true(row(&p, "attention_backward.fp32")->flops == 10 * pairs * hd);
    vla_profile_free(&p);
    ops->free(q), ops->free(k), ops->free(v), ops->free(o), ops->free(lse), ops->free(dq), ops->free(dk), ops->free(dv);
    vla_profile_unwrap();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_and_flops),
        cmocka_unit_test(test_one_backend_at_a_time),
        cmocka_unit_test(test_regions_op_by_op),
        cmocka_unit_test(test_attention_flops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
