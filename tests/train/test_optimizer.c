/* test_optimizer.c — AdamW, clipping and accumulation against PyTorch goldens
 * (tools/gen_train_goldens.py), EMA, layout checks, NaN/Inf refusal and the
 * state round trip through safetensors. */
#include "test_util.h"
#include "base/fsutil.h"
#include "io/safetensors.h"
#include "train/optimizer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A tiny token reader over the golden text. */
typedef struct {
    char *buf, *p;
} reader;

static const char *next_tok(reader *r) {
    for (;;) {
        while (*r->p == ' ' || *r->p == '\n' || *r->p == '\t') r->p++;
        if (*r->p == '#') {
            while (*r->p && *r->p != '\n') r->p++;
            continue;
        }
        break;
    }
    if (!*r->p) return NULL;
    char *start = r->p;
    while (*r->p && *r->p != ' ' && *r->p != '\n') r->p++;
    if (*r->p) *r->p++ = '\0';
    return start;
}

static void expect(reader *r, const char *word) {
    const char *t = next_tok(r);
    assert_non_null(t);
    assert_string_equal(t, word);
}

static double num(reader *r) {
    const char *t = next_tok(r);
    assert_non_null(t);
    char *end;
    double v = strtod(t, &end);
    assert_true(*end == '\0');
    return v;
}

static void read_vec(reader *r, float *dst, int n) {
    for (int i = 0; i < n; i++) dst[i] = (float)num(r);
}

static int close_rel(double got, double want, double rel) {
    return fabs(got - want) <= rel * fabs(want) + 1e-12;
}

static void test_adamw_matches_torch(void **state) {
    reader r = {0};
    size_t len;
    assert_int_equal(vla_read_file(test_source_path("tests/train/data/adamw_golden.txt"), &r.buf, &len), VLA_OK);
    r.p = r.buf;
    int cases = 0;
    const char *t;
    while ((t = next_tok(&r)) != NULL) {
        assert_string_equal(t, "case");
        char name[64];
        snprintf(name, sizeof name, "%s", next_tok(&r));
        vla_adamw_config cfg = {0};
        cfg.beta1 = num(&r);
        cfg.beta2 = num(&r);
        cfg.eps = num(&r);
        cfg.weight_decay = num(&r);
        cfg.clip_norm = num(&r);
        int accum = (int)num(&r), steps = (int)num(&r);
        vla_opt_param params[3];
        char pnames[3][32];
        for (int i = 0; i < 3; i++) {
            expect(&r, "param");
            snprintf(pnames[i], sizeof pnames[i], "%s", next_tok(&r));
            params[i].name = pnames[i];
            params[i].offset = (int64_t)num(&r);
            params[i].numel = (int64_t)num(&r);
            params[i].decay = (int)num(&r);
        }
        expect(&r, "layout");
        int total = (int)num(&r);
        float *w = calloc((size_t)total, 4), *g = calloc((size_t)total, 4), *micro = calloc((size_t)total, 4);
        float *want = calloc((size_t)total, 4), *init = calloc((size_t)total, 4);
        expect(&r, "init");
        read_vec(&r, w, total);
        memcpy(init, w, (size_t)total * 4);
        vla_adamw opt;
        assert_int_equal(vla_adamw_init(&opt, &cfg, params, 3, total), VLA_OK);
        double max_rel = 0;
        for (int k = 0; k < steps; k++) {
            expect(&r, "step");
            assert_int_equal((int)num(&r), k);
            expect(&r, "lr");
            double lr = num(&r);
            vla_grad_zero(g, total);
            for (int mi = 0; mi < accum; mi++) {
                expect(&r, "grad");
                assert_int_equal((int)num(&r), mi);
                read_vec(&r, micro, total);
                vla_grad_accumulate(g, micro, total);
            }
            if (accum > 1) vla_grad_scale(g, total, 1.0f / (float)accum);
            expect(&r, "norm");
            double want_norm = num(&r), norm;
            assert_int_equal(vla_adamw_clip_grads(&opt, g, &norm), VLA_OK);
            if (!close_rel(norm, want_norm, 1e-6)) fail_msg("%s step %d: norm %.9g, torch %.9g", name, k, norm, want_norm);
            assert_int_equal(vla_adamw_step(&opt, w, g, lr), VLA_OK);
            expect(&r, "weights");
            read_vec(&r, want, total);
            for (int i = 0; i < total; i++) {
                double rel = fabs((double)w[i] - want[i]) / (fabs(want[i]) + 1e-30);
                if (rel > max_rel) max_rel = rel;
                if (!close_rel(w[i], want[i], 1e-6))
                    fail_msg("%s step %d element %d: %.9g, torch %.9g", name, k, i, w[i], want[i]);
            }
        }
        /* the frozen gap [12, 14) is never touched */
        assert_true(w[12] == init[12] && w[13] == init[13]);
        assert_int_equal(opt.step, steps);
        print_message("%s: %d steps, max relative difference to torch %.3g\n", name, steps, max_rel);
        vla_adamw_free(&opt);
        free(w), free(g), free(micro), free(want), free(init);
        cases++;
    }
    assert_int_equal(cases, 3);
    free(r.buf);
}

static void test_layout_and_defaults(void **state) {
    vla_adamw_config cfg;
    assert_int_equal(vla_adamw_defaults("pi05", &cfg), VLA_OK);
    assert_true(cfg.lr == 2.5e-5 && cfg.beta1 == 0.9 && cfg.beta2 == 0.95 && cfg.clip_norm == 1.0);
    assert_int_equal(vla_adamw_defaults("groot", &cfg), VLA_OK);
    assert_true(cfg.lr == 1e-4 && cfg.beta1 == 0.95 && cfg.beta2 == 0.999 && cfg.weight_decay == 1e-5);
    assert_int_equal(vla_adamw_defaults("act", &cfg), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "unknown policy 'act'"));
    assert_true(vla_ema_default_decay("pi05") == 0.99 && vla_ema_default_decay("groot") == 0.0);

    assert_int_equal(vla_adamw_default_decay("groot", "dit.blocks.0.attn.to_q.bias", 1), 0);
    assert_int_equal(vla_adamw_default_decay("groot", "vlln.weight", 1), 1 - 0); /* no "norm" in name */
    assert_int_equal(vla_adamw_default_decay("groot", "blocks.0.norm1.weight", 1), 0);
    assert_int_equal(vla_adamw_default_decay("groot", "blocks.0.norm1.linear.weight", 2), 1);
    assert_int_equal(vla_adamw_default_decay("groot", "final_LayerNorm.weight", 1), 0);
    assert_int_equal(vla_adamw_default_decay("pi05", "x.bias", 1), 1);

    vla_adamw_defaults("groot", &cfg);
    vla_adamw opt;
    vla_opt_param overlap[2] = {{"a", 0, 10, 1}, {"b", 9, 2, 1}};
    assert_int_equal(vla_adamw_init(&opt, &cfg, overlap, 2, 20), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "overlap"));
    vla_opt_param outside[1] = {{"a", 15, 10, 1}};
    assert_int_equal(vla_adamw_init(&opt, &cfg, outside, 1, 20), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "'a'"));
    vla_opt_param dup[2] = {{"a", 0, 1, 1}, {"a", 1, 1, 1}};
    assert_int_equal(vla_adamw_init(&opt, &cfg, dup, 2, 20), VLA_ERR_INVALID_ARG);
    vla_adamw_config bad = cfg;
    bad.beta2 = 1.0;
    assert_int_equal(vla_adamw_init(&opt, &bad, dup, 1, 20), VLA_ERR_INVALID_ARG);
}

static void test_nonfinite_refused(void **state) {
    vla_adamw_config cfg;
    vla_adamw_defaults("pi05", &cfg);
    vla_opt_param p[2] = {{"a", 0, 4, 1}, {"b", 4, 4, 0}};
    vla_adamw opt;
    assert_int_equal(vla_adamw_init(&opt, &cfg, p, 2, 8), VLA_OK);
    float g[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    double norm;
    g[6] = NAN;
    assert_int_equal(vla_adamw_clip_grads(&opt, g, &norm), VLA_ERR_NUMERIC);
    assert_non_null(strstr(vla_error_message(), "NaN"));
    assert_true(g[0] == 1.0f); /* untouched */
    g[6] = INFINITY;
    assert_int_equal(vla_adamw_clip_grads(&opt, g, &norm), VLA_ERR_NUMERIC);
    assert_non_null(strstr(vla_error_message(), "Inf"));
    g[6] = 7;
    assert_int_equal(vla_adamw_clip_grads(&opt, g, &norm), VLA_OK);
    assert_true(fabs(norm - sqrt(204.0)) < 1e-9);
    double sumsq = 0;
    for (int i = 0; i < 8; i++) sumsq += (double)g[i] * g[i];
    assert_true(fabs(sqrt(sumsq) - 1.0) < 1e-5); /* clipped to 1 */
    float w[8] = {0};
    assert_int_equal(vla_adamw_step(&opt, w, g, NAN), VLA_ERR_INVALID_ARG);
    /* the guard before a checkpoint names the tensor */
    assert_int_equal(vla_adamw_check_finite(&opt, w), VLA_OK);
    w[5] = INFINITY;
    assert_int_equal(vla_adamw_check_finite(&opt, w), VLA_ERR_NUMERIC);
    assert_non_null(strstr(vla_error_message(), "weights of 'b' holds Inf at element 1"));
    opt.v[2] = NAN;
    vla_safetensors_writer *sw;
    assert_int_equal(vla_safetensors_writer_new(&sw), VLA_OK);
    assert_int_equal(vla_adamw_state_add(&opt, sw), VLA_ERR_NUMERIC);
    assert_non_null(strstr(vla_error_message(), "exp_avg_sq of 'a' holds NaN"));
    vla_safetensors_writer_free(sw);
    vla_adamw_free(&opt);
}

static void test_ema_and_state_roundtrip(void **state) {
    vla_adamw_config cfg;
    vla_adamw_defaults("groot", &cfg);
    cfg.weight_decay = 0.1;
    vla_opt_param p[2] = {{"enc.weight", 0, 300, 1}, {"enc.bias", 310, 7, 0}};
    enum { N = 317 };
    float w[N], g[N];
    for (int i = 0; i < N; i++) w[i] = sinf((float)i);
    vla_adamw a, b;
    assert_int_equal(vla_adamw_init(&a, &cfg, p, 2, N), VLA_OK);
    vla_ema ema;
    assert_int_equal(vla_ema_init(&ema, &a, w, 0.9), VLA_OK);
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < N; i++) g[i] = cosf((float)(i * (k + 1)));
        double norm;
        assert_int_equal(vla_adamw_clip_grads(&a, g, &norm), VLA_OK);
        assert_int_equal(vla_adamw_step(&a, w, g, 1e-3), VLA_OK);
        vla_ema_update(&ema, &a, w);
    }
    /* EMA after one update from e0 = w0: e = 0.9 e + 0.1 w */
    float out[N];
    memset(out, 0, sizeof out);
    vla_ema_copy_to(&ema, &a, out);
    assert_true(out[305] == 0.0f && out[0] != 0.0f);

    const char *path = test_tmp_path("optimizer_state.safetensors");
    vla_safetensors_writer *sw;
    assert_int_equal(vla_safetensors_writer_new(&sw), VLA_OK);
    assert_int_equal(vla_adamw_state_add(&a, sw), VLA_OK);
    assert_int_equal(vla_ema_state_add(&ema, &a, sw), VLA_OK);
    assert_int_equal(vla_safetensors_writer_write(sw, path), VLA_OK);
    vla_safetensors_writer_free(sw);

    assert_int_equal(vla_adamw_init(&b, &cfg, p, 2, N), VLA_OK);
    vla_ema ema2;
    assert_int_equal(vla_ema_init(&ema2, &b, w, 0.9), VLA_OK);
    vla_safetensors st;
    assert_int_equal(vla_safetensors_open(path, &st), VLA_OK);
    assert_int_equal(vla_adamw_state_load(&b, &st), VLA_OK);
    assert_int_equal(vla_ema_state_load(&ema2, &b, &st), VLA_OK);
    vla_safetensors_close(&st);
    assert_int_equal(b.step, 3);
    assert_memory_equal(a.m, b.m, sizeof(float) * 307);
    assert_memory_equal(a.v, b.v, sizeof(float) * 307);
    assert_memory_equal(ema.w, ema2.w, sizeof(float) * 307);

    /* resumed and uninterrupted runs continue bit for bit */
    float w2[N];
    memcpy(w2, w, sizeof w);
    for (int k = 3; k < 5; k++) {
        for (int i = 0; i < N; i++) g[i] = cosf((float)(i * (k + 1)));
        float g2[N];
        memcpy(g2, g, sizeof g);
        double n1, n2;
        vla_adamw_clip_grads(&a, g, &n1);
        vla_adamw_clip_grads(&b, g2, &n2);
        vla_adamw_step(&a, w, g, 1e-3);
        vla_adamw_step(&b, w2, g2, 1e-3);
    }
    assert_memory_equal(w, w2, sizeof w);

    json_t *groups = vla_adamw_param_groups_json(&a, 5e-4);
    assert_int_equal(json_array_size(groups), 2);
    json_decref(groups);

    /* a model with a different layout is refused with the tensor's name */
    vla_opt_param p3[1] = {{"enc.weight", 0, 200, 1}};
    vla_adamw c;
    assert_int_equal(vla_adamw_init(&c, &cfg, p3, 1, N), VLA_OK);
    assert_int_equal(vla_safetensors_open(path, &st), VLA_OK);
    assert_int_equal(vla_adamw_state_load(&c, &st), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "state.enc.weight.exp_avg"));
    vla_safetensors_close(&st);
    vla_adamw_free(&c);
    vla_ema_free(&ema);
    vla_ema_free(&ema2);
    vla_adamw_free(&a);
    vla_adamw_free(&b);
}

static void test_sumsq_blocking_large(void **state) {
    /* A tensor larger than one reduction block: norm equals a plain double sum. */
    int64_t n = 200000;
    float *g = malloc((size_t)n * 4);
    double want = 0;
    for (int64_t i = 0; i < n; i++) {
        g[i] = (float)((i % 97) - 48) * 0.01f;
        want += (double)g[i] * g[i];
    }
    vla_adamw_config cfg;
    vla_adamw_defaults("pi05", &cfg);
    vla_opt_param p[1] = {{"big", 0, n, 1}};
    vla_adamw opt;
    assert_int_equal(vla_adamw_init(&opt, &cfg, p, 1, n), VLA_OK);
    double got = vla_adamw_grad_sumsq(&opt, g);
    assert_true(fabs(got - want) <= 1e-12 * want);
    vla_adamw_free(&opt);
    free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adamw_matches_torch),     cmocka_unit_test(test_layout_and_defaults),
        cmocka_unit_test(test_nonfinite_refused),       cmocka_unit_test(test_ema_and_state_roundtrip),
        cmocka_unit_test(test_sumsq_blocking_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
