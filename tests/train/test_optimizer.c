/* test_optimizer.c — the product's AdamW (distributed/zero1.h at world 1, segments
 * over a parameter buffer with frozen gaps), clipping and accumulation
 * against PyTorch goldens (tools/gen_train_goldens.py); the policy defaults
 * and decay rule (train/optimizer.h); NaN/Inf refusal, EMA, grad_mul, the
 * thread-invariant norm and the state round trip. */
#include "test_util.h"
#include "base/fsutil.h"
#include "distributed/comm.h"
#include "distributed/zero1.h"
#include "io/safetensors.h"
#include "train/optimizer.h"

#include <math.h>
#include <omp.h>
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

static vla_comm *single(void) {
    vla_comm_options o = {VLA_COMM_SINGLE, 0};
    vla_comm *c = NULL;
    assert_int_equal(vla_comm_init(&o, &c), VLA_OK);
    return c;
}

static vla_adamw_hparams hparams(const vla_adamw_config *cfg, double lr) {
    return (vla_adamw_hparams){.lr = lr, .beta1 = cfg->beta1, .beta2 = cfg->beta2, .eps = cfg->eps,
                               .weight_decay = cfg->weight_decay, .max_grad_norm = (float)cfg->clip_norm,
                               .grad_mul = 1.0};
}

/* parameter-layout gradient → compact (segment order) */
static void compact(const vla_zero1_segment *seg, int n, const float *g, float *out) {
    int64_t k = 0;
    for (int i = 0; i < n; i++) {
        memcpy(out + k, g + seg[i].offset, sizeof(float) * (size_t)seg[i].numel);
        k += seg[i].numel;
    }
}

static void test_adamw_matches_torch(void **state) {
    reader r = {0};
    size_t len;
    assert_int_equal(vla_read_file(test_source_path("tests/train/data/adamw_golden.txt"), &r.buf, &len), VLA_OK);
    r.p = r.buf;
    int cases = 0;
    const char *t;
    vla_comm *comm = single();
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
        vla_zero1_segment seg[3];
        for (int i = 0; i < 3; i++) {
            expect(&r, "param");
            next_tok(&r); /* name */
            seg[i].offset = (int64_t)num(&r);
            seg[i].numel = (int64_t)num(&r);
            seg[i].decay = (int)num(&r);
        }
        expect(&r, "layout");
        int total = (int)num(&r);
        float *w = calloc((size_t)total, 4), *g = calloc((size_t)total, 4), *micro = calloc((size_t)total, 4);
        float *want = calloc((size_t)total, 4), *init = calloc((size_t)total, 4), *gc = calloc((size_t)total, 4);
        expect(&r, "init");
        read_vec(&r, w, total);
        memcpy(init, w, (size_t)total * 4);
        vla_zero1 *z;
        assert_int_equal(vla_zero1_create_segments(comm, test_cpu_backend(), seg, 3, &z), VLA_OK);
        assert_int_equal(vla_zero1_numel(z), seg[0].numel + seg[1].numel + seg[2].numel);
        double max_rel = 0;
        for (int k = 0; k < steps; k++) {
            expect(&r, "step");
            assert_int_equal((int)num(&r), k);
            expect(&r, "lr");
            double lr = num(&r);
            const vla_ops *ops = test_cpu_backend(); /* host arrays */
            ops->fill(g, 0.0f, total);
            for (int mi = 0; mi < accum; mi++) {
                expect(&r, "grad");
                assert_int_equal((int)num(&r), mi);
                read_vec(&r, micro, total);
                ops->axpy(g, 1.0f, micro, total);
            }
            if (accum > 1) ops->scale(g, 1.0f / (float)accum, total);
            compact(seg, 3, g, gc);
            expect(&r, "norm");
            double want_norm = num(&r), norm = -1;
            vla_adamw_hparams hp = hparams(&cfg, lr);
            assert_int_equal(vla_zero1_step(z, w, gc, VLA_ZERO1_GRADS_AVERAGED, &hp, NULL, &norm), VLA_OK);
            if (!close_rel(norm, want_norm, 1e-6)) fail_msg("%s step %d: norm %.9g, torch %.9g", name, k, norm, want_norm);
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
        assert_int_equal(vla_zero1_step_count(z), steps);
        print_message("%s: %d steps, max relative difference to torch %.3g\n", name, steps, max_rel);
        vla_zero1_free(z);
        free(w), free(g), free(micro), free(want), free(init), free(gc);
        cases++;
    }
    assert_int_equal(cases, 3);
    vla_comm_finalize(comm);
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

    /* segment layouts: overlap and negative sizes are refused */
    vla_comm *c = single();
    vla_zero1 *z = NULL;
    vla_zero1_segment overlap[2] = {{9, 2, 1}, {0, 10, 1}};
    assert_int_equal(vla_zero1_create_segments(c, test_cpu_backend(), overlap, 2, &z), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "overlap"));
    vla_zero1_segment hidden[3] = {{0, 10, 1}, {2, 0, 1}, {5, 1, 0}}; /* an empty segment between */
    assert_int_equal(vla_zero1_create_segments(c, test_cpu_backend(), hidden, 3, &z), VLA_ERR_INVALID_ARG);
    vla_zero1_segment neg[1] = {{15, -1, 1}};
    assert_int_equal(vla_zero1_create_segments(c, test_cpu_backend(), neg, 1, &z), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_zero1_create_segments(c, test_cpu_backend(), neg, 0, &z), VLA_ERR_INVALID_ARG);
    assert_null(z);
    /* bad hyper-parameters are refused by the step, which then changes nothing */
    vla_zero1_segment ok[2] = {{0, 1, 1}, {1, 1, 1}};
    assert_int_equal(vla_zero1_create_segments(c, test_cpu_backend(), ok, 2, &z), VLA_OK);
    float p[2] = {1, 2}, g[2] = {1, 1};
    vla_adamw_defaults("groot", &cfg);
    vla_adamw_hparams hp = hparams(&cfg, 1e-3);
    hp.beta2 = 1.0;
    assert_int_equal(vla_zero1_step(z, p, g, VLA_ZERO1_GRADS_AVERAGED, &hp, NULL, NULL), VLA_ERR_INVALID_ARG);
    hp = hparams(&cfg, NAN);
    assert_int_equal(vla_zero1_step(z, p, g, VLA_ZERO1_GRADS_AVERAGED, &hp, NULL, NULL), VLA_ERR_INVALID_ARG);
    assert_true(p[0] == 1 && p[1] == 2 && vla_zero1_step_count(z) == 0);
    vla_zero1_free(z);
    vla_comm_finalize(c);

    /* LeRobot's param groups: one per decay setting, empty ones left out */
    const char *names[3] = {"enc.weight", "enc.bias", "dec.weight"};
    int decay[3] = {1, 0, 1};
    json_t *groups = vla_adamw_param_groups_json(&cfg, names, decay, 3, 5e-5);
    assert_int_equal(json_array_size(groups), 2);
    json_t *g0 = json_array_get(groups, 0), *g1 = json_array_get(groups, 1);
    assert_int_equal(json_array_size(json_object_get(g0, "params")), 2);
    assert_string_equal(json_string_value(json_array_get(json_object_get(g1, "params"), 0)), "enc.bias");
    assert_true(json_real_value(json_object_get(g0, "weight_decay")) == cfg.weight_decay);
    assert_true(json_real_value(json_object_get(g1, "weight_decay")) == 0.0);
    assert_true(json_real_value(json_object_get(g0, "lr")) == 5e-5);
    assert_true(json_real_value(json_object_get(g0, "initial_lr")) == cfg.lr);
    json_decref(groups);
    int all[3] = {1, 1, 1};
    groups = vla_adamw_param_groups_json(&cfg, names, all, 3, 5e-5);
    assert_int_equal(json_array_size(groups), 1);
    json_decref(groups);
}

/* Write a world-1 shard file by hand (to plant NaN in the moments). */
static void write_shard(const char *dir, int64_t n, const float *m, const float *v, int64_t step) {
    assert_int_equal(vla_mkdirs(dir), VLA_OK);
    vla_safetensors_writer *w;
    assert_int_equal(vla_safetensors_writer_new(&w), VLA_OK);
    int64_t shape[1] = {n};
    assert_int_equal(vla_safetensors_writer_add(w, "exp_avg", VLA_F32, 1, shape, m), VLA_OK);
    assert_int_equal(vla_safetensors_writer_add(w, "exp_avg_sq", VLA_F32, 1, shape, v), VLA_OK);
    const char *keys[] = {"rank", "world", "offset", "count", "numel", "step"};
    int64_t vals[] = {0, 1, 0, n, n, step};
    char buf[32], path[1200], file[64];
    vla_safetensors_writer_set_meta(w, "format", "vla-zero1-v1");
    for (int k = 0; k < 6; k++) {
        snprintf(buf, sizeof buf, "%lld", (long long)vals[k]);
        vla_safetensors_writer_set_meta(w, keys[k], buf);
    }
    vla_zero1_shard_file(0, file, sizeof file);
    assert_string_equal(file, "zero1-rank00000.safetensors");
    snprintf(path, sizeof path, "%s/%s", dir, file);
    assert_int_equal(vla_safetensors_writer_write(w, path), VLA_OK);
    vla_safetensors_writer_free(w);
}

static void test_nonfinite_refused(void **state) {
    vla_adamw_config cfg;
    vla_adamw_defaults("pi05", &cfg);
    vla_comm *c = single();
    /* two tensors with a frozen one between them */
    vla_zero1_segment seg[2] = {{0, 4, 1}, {6, 4, 0}};
    vla_zero1 *z, *twin;
    assert_int_equal(vla_zero1_create_segments(c, test_cpu_backend(), seg, 2, &z), VLA_OK);
    assert_int_equal(vla_zero1_create_segments(c, test_cpu_backend(), seg, 2, &twin), VLA_OK);
    float w[10] = {1, 2, 3, 4, -7, -7, 5, 6, 7, 8}, w2[10], ema[10] = {0}, ema0[10] = {0};
    assert_int_equal(vla_zero1_ema_enable(z, 0.9, w), VLA_OK);
    assert_int_equal(vla_zero1_ema_enable(twin, 0.9, w), VLA_OK);
    float g[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    vla_adamw_hparams hp = hparams(&cfg, 1e-2);
    /* one good step on both, so moments and EMA are not trivially zero */
    memcpy(w2, w, sizeof w);
    assert_int_equal(vla_zero1_step(z, w, g, VLA_ZERO1_GRADS_AVERAGED, &hp, NULL, NULL), VLA_OK);
    assert_int_equal(vla_zero1_step(twin, w2, g, VLA_ZERO1_GRADS_AVERAGED, &hp, NULL, NULL), VLA_OK);
    assert_memory_equal(w, w2, sizeof w);
    assert_int_equal(vla_zero1_ema_gather(z, ema0), VLA_OK);
    float before[10];
    memcpy(before, w, sizeof w);
    double norm;
    g[6] = NAN;
    assert_int_equal(vla_zero1_step(z, w, g, VLA_ZERO1_GRADS_AVERAGED, &hp, NULL, &norm), VLA_ERR_NUMERIC);
    assert_non_null(strstr(vla_error_message(), "NaN"));
    g[6] = INFINITY;
    hp.grad_mul = 2.0;
    assert_int_equal(vla_zero1_step(z, w, g, VLA_ZERO1_GRADS_AVERAGED, &hp, NULL, &norm), VLA_ERR_NUMERIC);
    assert_non_null(strstr(vla_error_message(), "Inf"));
    hp.grad_mul = 1.0;
    /* nothing changed: params, step count, EMA, and (seen through the next
     * step, which must equal the twin's) the moments */
    assert_true(g[0] == 1.0f);
    assert_memory_equal(w, before, sizeof w);
    assert_int_equal(vla_zero1_step_count(z), 1);
    assert_int_equal(vla_zero1_ema_gather(z, ema), VLA_OK);
    assert_memory_equal(ema, ema0, sizeof ema);
    g[6] = 7;
    assert_int_equal(vla_zero1_step(z, w, g, VLA_ZERO1_GRADS_AVERAGED, &hp, NULL, &norm), VLA_OK);
    assert_int_equal(vla_zero1_step(twin, w2, g, VLA_ZERO1_GRADS_AVERAGED, &hp, NULL, NULL), VLA_OK);
    assert_memory_equal(w, w2, sizeof w);
    assert_true(fabs(norm - sqrt(204.0)) < 1e-9);
    assert_true(w[4] == -7.0f && w[5] == -7.0f); /* the gap */
    vla_zero1_free(twin);

    /* clipping to max_norm 1 = no clipping of g·coef, torch's coefficient */
    vla_zero1 *a, *b;
    assert_int_equal(vla_zero1_create_segments(c, test_cpu_backend(), seg, 2, &a), VLA_OK);
    assert_int_equal(vla_zero1_create_segments(c, test_cpu_backend(), seg, 2, &b), VLA_OK);
    float pa[10] = {0}, pb[10] = {0}, gs[8];
    float coef = (float)(1.0 / (sqrt(204.0) + 1e-6));
    for (int i = 0; i < 8; i++) gs[i] = g[i] * coef;
    hp.max_grad_norm = 1.0f;
    assert_int_equal(vla_zero1_step(a, pa, g, VLA_ZERO1_GRADS_AVERAGED, &hp, NULL, &norm), VLA_OK);
    hp.max_grad_norm = 0;
    assert_int_equal(vla_zero1_step(b, pb, gs, VLA_ZERO1_GRADS_AVERAGED, &hp, NULL, NULL), VLA_OK);
    assert_memory_equal(pa, pb, sizeof pa);
    vla_zero1_free(a), vla_zero1_free(b);

    /* the guard before a checkpoint names the state, rank and index; save refuses */
    assert_int_equal(vla_zero1_check_finite(z), VLA_OK);
    float m[8] = {0}, v[8] = {0};
    v[6] = NAN;
    const char *dir = test_tmp_path("z1nan");
    write_shard(dir, 8, m, v, 3);
    vla_zero1 *bad;
    assert_int_equal(vla_zero1_create_segments(c, test_cpu_backend(), seg, 2, &bad), VLA_OK);
    assert_int_equal(vla_zero1_load(bad, dir), VLA_OK);
    assert_int_equal(vla_zero1_step_count(bad), 3);
    assert_int_equal(vla_zero1_check_finite(bad), VLA_ERR_NUMERIC);
    assert_non_null(strstr(vla_error_message(), "exp_avg_sq of rank 0 holds NaN at flat index 6 (segment 1, element 2)"));
    assert_int_not_equal(vla_zero1_save(bad, test_tmp_path("z1nan_out")), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "NaN"));
    char path[1200];
    snprintf(path, sizeof path, "%s/zero1-rank00000.safetensors", test_tmp_path("z1nan_out"));
    assert_false(vla_path_exists(path));
    vla_zero1_free(bad);
    vla_zero1_free(z);
    vla_comm_finalize(c);
}

static void test_ema_and_state_roundtrip(void **state) {
    vla_adamw_config cfg;
    vla_adamw_defaults("groot", &cfg);
    cfg.weight_decay = 0.1;
    vla_comm *c = single();
    vla_zero1_segment seg[2] = {{0, 300, 1}, {310, 7, 0}};
    enum { N = 317, F = 307 };
    float w[N], g[F], ref[N];
    for (int i = 0; i < N; i++) w[i] = sinf((float)i);
    vla_zero1 *a, *b;
    assert_int_equal(vla_zero1_create_segments(c, test_cpu_backend(), seg, 2, &a), VLA_OK);
    assert_true(vla_zero1_ema_decay(a) == 0);
    assert_int_equal(vla_zero1_ema_enable(a, 1.0, w), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_zero1_ema_enable(a, 0.9, w), VLA_OK);
    assert_true(vla_zero1_ema_decay(a) == 0.9);
    assert_int_equal(vla_zero1_state_bytes(a), 3 * 4 * F);
    memcpy(ref, w, sizeof w);
    vla_adamw_hparams hp = hparams(&cfg, 1e-3);
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < F; i++) g[i] = cosf((float)(i * (k + 1)));
        double norm;
        assert_int_equal(vla_zero1_step(a, w, g, VLA_ZERO1_GRADS_AVERAGED, &hp, NULL, &norm), VLA_OK);
        for (int i = 0; i < N; i++) ref[i] = 0.9f * ref[i] + 0.1f * w[i]; /* e ← d·e + (1−d)·w */
    }
    /* gather: segments written, the gap untouched */
    float out[N];
    memset(out, 0, sizeof out);
    assert_int_equal(vla_zero1_ema_gather(a, out), VLA_OK);
    assert_true(out[305] == 0.0f && out[0] != 0.0f);
    for (int i = 0; i < N; i++)
        if (!(i >= 300 && i < 310)) assert_true(out[i] == ref[i]);
    assert_true(memcmp(out, w, sizeof(float) * 300) != 0); /* the EMA is not the weights */

    const char *dir = test_tmp_path("z1ema");
    assert_int_equal(vla_zero1_save(a, dir), VLA_OK);
    assert_int_equal(vla_zero1_create_segments(c, test_cpu_backend(), seg, 2, &b), VLA_OK);
    float junk[N];
    for (int i = 0; i < N; i++) junk[i] = 5.0f;
    assert_int_equal(vla_zero1_ema_enable(b, 0.9, junk), VLA_OK);
    assert_int_equal(vla_zero1_load(b, dir), VLA_OK);
    assert_int_equal(vla_zero1_step_count(b), 3);
    float out2[N];
    memset(out2, 0, sizeof out2);
    assert_int_equal(vla_zero1_ema_gather(b, out2), VLA_OK);
    assert_memory_equal(out, out2, sizeof out);

    /* resumed and uninterrupted runs continue bit for bit (weights and EMA) */
    float w2[N];
    memcpy(w2, w, sizeof w);
    for (int k = 3; k < 5; k++) {
        for (int i = 0; i < F; i++) g[i] = cosf((float)(i * (k + 1)));
        assert_int_equal(vla_zero1_step(a, w, g, VLA_ZERO1_GRADS_AVERAGED, &hp, NULL, NULL), VLA_OK);
        assert_int_equal(vla_zero1_step(b, w2, g, VLA_ZERO1_GRADS_AVERAGED, &hp, NULL, NULL), VLA_OK);
    }
    assert_memory_equal(w, w2, sizeof w);
    assert_int_equal(vla_zero1_ema_gather(a, out), VLA_OK);
    assert_int_equal(vla_zero1_ema_gather(b, out2), VLA_OK);
    assert_memory_equal(out, out2, sizeof out);

    /* state saved without an EMA cannot resume one: the error names the file */
    vla_zero1 *plain, *e2;
    assert_int_equal(vla_zero1_create_segments(c, test_cpu_backend(), seg, 2, &plain), VLA_OK);
    const char *dir2 = test_tmp_path("z1plain");
    assert_int_equal(vla_zero1_save(plain, dir2), VLA_OK);
    assert_int_equal(vla_zero1_create_segments(c, test_cpu_backend(), seg, 2, &e2), VLA_OK);
    assert_int_equal(vla_zero1_ema_enable(e2, 0.5, w), VLA_OK);
    assert_int_equal(vla_zero1_load(e2, dir2), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "zero1-rank00000.safetensors"));
    assert_non_null(strstr(vla_error_message(), "'ema'"));
    /* ...while an EMA file loads into a run without one */
    assert_int_equal(vla_zero1_load(plain, dir), VLA_OK);
    assert_int_equal(vla_zero1_step_count(plain), 5 - 2);

    /* a different trainable layout with the same flat size is refused */
    vla_zero1_segment moved[2] = {{0, 300, 1}, {309, 7, 0}}, sizes[1] = {{0, 200, 1}};
    vla_zero1 *d;
    assert_int_equal(vla_zero1_create_segments(c, test_cpu_backend(), moved, 2, &d), VLA_OK);
    assert_int_equal(vla_zero1_load(d, dir), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "layout"));
    vla_zero1_free(d);
    assert_int_equal(vla_zero1_create_segments(c, test_cpu_backend(), sizes, 1, &d), VLA_OK);
    assert_int_not_equal(vla_zero1_load(d, dir), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "does not fit"));
    vla_zero1_free(d);
    vla_zero1_free(plain), vla_zero1_free(e2);
    vla_zero1_free(a), vla_zero1_free(b);
    vla_comm_finalize(c);
}

/* grad_mul = s is the same as multiplying the gradients by s first (norm,
 * clipping, update); 0 means 1. */
static void test_grad_mul(void **state) {
    vla_adamw_config cfg;
    vla_adamw_defaults("pi05", &cfg);
    cfg.clip_norm = 0.5; /* clipping active */
    vla_comm *c = single();
    vla_zero1_segment seg[2] = {{0, 50, 1}, {60, 20, 0}};
    enum { N = 80, F = 70 };
    for (int variant = 0; variant < 2; variant++) {
        const float s = variant ? 0.37f : 1.0f;
        vla_zero1 *a, *b;
        assert_int_equal(vla_zero1_create_segments(c, test_cpu_backend(), seg, 2, &a), VLA_OK);
        assert_int_equal(vla_zero1_create_segments(c, test_cpu_backend(), seg, 2, &b), VLA_OK);
        float wa[N], wb[N], g[F], gs[F];
        for (int i = 0; i < N; i++) wa[i] = wb[i] = cosf((float)i);
        for (int k = 0; k < 4; k++) {
            for (int i = 0; i < F; i++) g[i] = 3.0f * sinf((float)(i + 7 * k));
            memcpy(gs, g, sizeof g);
            test_cpu_backend()->scale(gs, s, F);
            vla_adamw_hparams hp = hparams(&cfg, 1e-2);
            hp.grad_mul = variant ? (double)s : 0.0;
            double na, nb;
            assert_int_equal(vla_zero1_step(a, wa, g, VLA_ZERO1_GRADS_AVERAGED, &hp, NULL, &na), VLA_OK);
            for (int i = 0; i < F; i++) assert_true(g[i] == 3.0f * sinf((float)(i + 7 * k))); /* grads untouched */
            hp.grad_mul = 1.0;
            assert_int_equal(vla_zero1_step(b, wb, gs, VLA_ZERO1_REDUCE_SCATTER, &hp, NULL, &nb), VLA_OK);
            assert_true(na == nb);
            assert_true(na > 0.5); /* so the clip factor took part */
        }
        assert_memory_equal(wa, wb, sizeof wa);
        vla_zero1_free(a), vla_zero1_free(b);
    }
    vla_comm_finalize(c);
}

static void test_sumsq_blocking_large(void **state) {
    /* Tensors larger than one reduction block: the norm equals a plain double
     * sum, and is the same bits for any thread count. */
    int64_t n = 200000;
    float *g = malloc((size_t)n * 4), *p = calloc((size_t)n + 10, 4);
    double want = 0;
    for (int64_t i = 0; i < n; i++) {
        g[i] = (float)((i % 97) - 48) * 0.01f;
        want += (double)g[i] * g[i];
    }
    vla_adamw_config cfg;
    vla_adamw_defaults("pi05", &cfg);
    vla_comm *c = single();
    vla_zero1_segment seg[2] = {{0, 130000, 1}, {130010, n - 130000, 1}};
    vla_adamw_hparams hp = hparams(&cfg, 0);
    double norms[2];
    int max_threads = omp_get_max_threads();
    for (int k = 0; k < 2; k++) {
        omp_set_num_threads(k == 0 ? 1 : (max_threads > 1 ? max_threads : 2));
        vla_zero1 *z;
        assert_int_equal(vla_zero1_create_segments(c, test_cpu_backend(), seg, 2, &z), VLA_OK);
        assert_int_equal(vla_zero1_step(z, p, g, VLA_ZERO1_GRADS_AVERAGED, &hp, NULL, &norms[k]), VLA_OK);
        vla_zero1_free(z);
    }
    omp_set_num_threads(max_threads);
    assert_true(fabs(norms[0] * norms[0] - want) <= 1e-12 * want);
    assert_memory_equal(&norms[0], &norms[1], sizeof(double));
    vla_comm_finalize(c);
    free(g), free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adamw_matches_torch),     cmocka_unit_test(test_layout_and_defaults),
        cmocka_unit_test(test_nonfinite_refused),       cmocka_unit_test(test_ema_and_state_roundtrip),
        cmocka_unit_test(test_grad_mul),                cmocka_unit_test(test_sumsq_blocking_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
