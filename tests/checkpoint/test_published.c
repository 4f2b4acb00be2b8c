/* test_published.c — starting from published checkpoints (checkpoint/published.h).
 *
 * 1. The full-size configs against the published tensor listings
 *    (the .tsv files in tests/fixtures/checkpoints, reconstructed from the public model
 *    code): a checkpoint laid out exactly as each listing says — names,
 *    shapes, dtypes, LeRobot's prefix, GR00T's three shards and index — is
 *    written as a sparse file (its 5–14 GB of data are holes) and checked
 *    by the loader against pi05 / groot-n1.5 without reading a weight;
 *    `vla policy info --policy.pretrained_path` reports the same.
 * 2. Nano-sized checkpoints in the LeRobot, openpi and Isaac-GR00T
 *    conventions, written by tools/gen_published_fixtures.py (Python's own
 *    layout, torch's BF16 rounding): every tensor loads to the values torch
 *    decodes (sum, sum of squares and first element per tensor), config.json
 *    fields override the base preset, prefixes, the tie and its alias, the
 *    shards and the unused tensors are handled.
 * 3. Every way a checkpoint can be wrong is refused, naming the tensor or
 *    file: missing, mis-shaped, unknown extra, non-float, non-finite, a
 *    shard missing or holding the wrong tensors, no or foreign config.json,
 *    the other family's weights.
 * 4. `vla train --policy.pretrained_path` fine-tunes GR00T from the sharded
 *    fixture with the published freezing: the frozen VLM's weights leave
 *    training exactly as loaded, the action head's move. */
#include "test_util.h"

#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/dtype.h"
#include "base/fsutil.h"
#include "io/safetensors.h"
#include "policy/param_spec.h"
#include "policy/policy.h"
#include "tensor/ops.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/pretrained.h"
#include "checkpoint/published.h"
#include "train/trainer.h"

static const char *fixture(const char *name) {
    static char buf[4][1024];
    static int k;
    char rel[256];
    snprintf(rel, sizeof rel, "tests/checkpoint/data/published/%s", name);
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s", test_source_path(rel));
    return buf[k];
}

/* ---- 1. full-size listings, sparse files ------------------------------- */

typedef struct {
    char name[160];
    char dtype[8];
    int64_t shape[4];
    int ndim;
    int64_t bytes;
} listed;

static int read_listing(const char *tsv, listed **out) {
    char rel[256];
    snprintf(rel, sizeof rel, "tests/fixtures/checkpoints/%s", tsv);
    FILE *f = fopen(test_source_path(rel), "r");
    assert_non_null(f);
    listed *l = calloc(1000, sizeof *l);
    int n = 0;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        assert_true(n < 1000);
        char shape[128];
        assert_true(sscanf(line, "%159s\t%127s\t%7s", l[n].name, shape, l[n].dtype) == 3);
        int64_t numel = 1;
        for (char *p = shape + 1; *p && *p != ']';) {
            l[n].shape[l[n].ndim] = strtoll(p, &p, 10);
            numel *= l[n].shape[l[n].ndim++];
            if (*p == ',') p++;
        }
        l[n].bytes = numel * (!strcmp(l[n].dtype, "F32") ? 4 : 2);
        n++;
    }
    fclose(f);
    *out = l;
    return n;
}

/* A safetensors file holding listing entries [from, to), its data region a hole. */
static void write_sparse(const char *path, const listed *l, int from, int to) {
    json_t *h = json_object();
    int64_t off = 0;
    for (int i = from; i < to; i++) {
        json_t *shape = json_array();
        for (int d = 0; d < l[i].ndim; d++) json_array_append_new(shape, json_integer(l[i].shape[d]));
        json_object_set_new(h, l[i].name,
                            json_pack("{s:s, s:o, s:[I,I]}", "dtype", l[i].dtype, "shape", shape, "data_offsets",
                                      (json_int_t)off, (json_int_t)(off + l[i].bytes)));
        off += l[i].bytes;
    }
    char *text = json_dumps(h, JSON_COMPACT);
    size_t n = strlen(text), padded = (n + 7) / 8 * 8;
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    assert_true(fd >= 0);
    uint64_t len = padded;
    assert_int_equal(write(fd, &len, 8), 8);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    for (size_t i = n; i < padded; i++) assert_int_equal(write(fd, " ", 1), 1);
    assert_int_equal(ftruncate(fd, (off_t)(8 + padded + (size_t)off)), 0);
    close(fd);
    free(text);
    json_decref(h);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void check_full(const char *tsv, const char *dirname, const char *config_json, int shards,
                       int64_t expect_bound, int64_t expect_aliased, int64_t expect_unused, const char *family) {
    listed *l;
    int n = read_listing(tsv, &l);
    const char *dir = test_tmp_path(dirname);
    test_rmrf(dir);
    assert_int_equal(vla_mkdirs(dir), VLA_OK);
    char path[1200], cfgp[1200];
    if (shards == 1) {
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        write_sparse(path, l, 0, n);
    } else {
        json_t *map = json_object();
        int per = (n + shards - 1) / shards;
        for (int s = 0; s < shards; s++) {
            char fname[64];
            snprintf(fname, sizeof fname, "model-%05d-of-%05d.safetensors", s + 1, shards);
            snprintf(path, sizeof path, "%s/%s", dir, fname);
            int to = (s + 1) * per < n ? (s + 1) * per : n;
            write_sparse(path, l, s * per, to);
            for (int i = s * per; i < to; i++) json_object_set_new(map, l[i].name, json_string(fname));
        }
        json_t *idx = json_pack("{s:{s:i}, s:o}", "metadata", "total_size", 0, "weight_map", map);
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
        assert_int_equal(json_dump_file(idx, path, 0), 0);
        json_decref(idx);
    }
    snprintf(cfgp, sizeof cfgp, "%s/config.json", dir);
    write_text(cfgp, config_json);

    vla_policy_config cfg;
    vla_pub_format fmt;
    vla_status st = vla_published_config(dir, NULL, &cfg, &fmt);
    if (st != VLA_OK) fail_msg("%s", vla_error_message());
    assert_string_equal(vla_policy_config_family_name(&cfg), family);
    vla_param_list specs = {0};
    assert_int_equal(vla_param_specs(&cfg, &specs), VLA_OK);
    vla_published_report rep;
    st = vla_published_check(dir, &specs, &rep);
    if (st != VLA_OK) fail_msg("%s: %s", tsv, vla_error_message());
    assert_int_equal(rep.bound, specs.n);
    assert_int_equal(rep.bound, expect_bound);
    assert_int_equal(rep.aliased, expect_aliased);
    assert_int_equal(rep.unused, expect_unused);
    assert_int_equal(rep.file_tensors, n);
    assert_int_equal(rep.n_files, shards);
    vla_param_list_free(&specs);

    /* the CLI says the same, as JSON */
    char cmd[2048], out[65536];
    snprintf(cmd, sizeof cmd, "%s policy info --json --policy.pretrained_path=%s 2>&1", test_cli_path(), dir);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    json_error_t err;
    json_t *v = json_loads(out, 0, &err);
    if (!v) fail_msg("not JSON: %s", out);
    json_t *pre = json_object_get(v, "pretrained");
    assert_int_equal(json_integer_value(json_object_get(pre, "bound")), expect_bound);
    assert_int_equal(json_integer_value(json_object_get(pre, "unused")), expect_unused);
    json_decref(v);
    test_rmrf(dir);
    free(l);
}

static void test_full_size_listings(void **state) {
    (void)state;
    /* LeRobot: 812 stored = 811 policy tensors (embed_tokens read from lm_head) + the expert's lm_head */
    check_full("pi05_lerobot_pi05_base.tsv", "full_lerobot",
               "{\"type\": \"pi05\", \"chunk_size\": 50, \"max_state_dim\": 32, \"max_action_dim\": 32,"
               " \"tokenizer_max_length\": 200, \"num_inference_steps\": 10}",
               1, 811, 1, 1, "pi05");
    check_full("pi05_openpi_pytorch.tsv", "full_openpi",
               "{\"action_dim\": 32, \"action_horizon\": 50, \"max_token_len\": 200, \"pi05\": true,"
               " \"paligemma_variant\": \"gemma_2b\", \"action_expert_variant\": \"gemma_300m\"}",
               1, 811, 1, 1, "pi05");
    /* GR00T: 899 stored = 887 policy tensors + SigLIP's 11-tensor pooling head + Qwen3's lm_head */
    check_full("groot_n1.5_3b.tsv", "full_groot",
               "{\"model_type\": \"gr00t_n1_5\", \"architectures\": [\"GR00T_N1_5\"], \"action_horizon\": 16,"
               " \"backbone_cfg\": {\"select_layer\": 12}, \"action_head_cfg\": {\"action_dim\": 32,"
               " \"max_action_dim\": 32, \"max_state_dim\": 64, \"num_inference_timesteps\": 4}}",
               3, 887, 0, 12, "groot");
}

/* ---- 2. nano fixtures: values and config -------------------------------- */

static void check_fixture(const char *name, const char *base) {
    char path[1200];
    snprintf(path, sizeof path, "%s/expected.json", fixture(name));
    json_error_t err;
    json_t *ex = json_load_file(path, 0, &err);
    assert_non_null(ex);
    vla_policy_config cfg;
    vla_pub_format fmt;
    vla_status st = vla_published_config(fixture(name), base, &cfg, &fmt);
    if (st != VLA_OK) fail_msg("%s", vla_error_message());
    json_t *ec = json_object_get(ex, "config");
    assert_int_equal(cfg.action.horizon, json_integer_value(json_object_get(ec, "horizon")));
    assert_int_equal(cfg.flow.steps, json_integer_value(json_object_get(ec, "flow_steps")));
    assert_int_equal(cfg.vision.cameras, json_integer_value(json_object_get(ec, "cameras")));

    vla_policy *p = NULL;
    assert_int_equal(vla_policy_create(&cfg, test_backend(), &p), VLA_OK);
    assert_int_equal(vla_policy_init_weights(p, 5), VLA_OK);
    vla_published_report rep;
    st = vla_published_load_weights(p, fixture(name), &rep);
    if (st != VLA_OK) fail_msg("%s: %s", name, vla_error_message());
    assert_string_equal(rep.prefix, json_string_value(json_object_get(ex, "prefix")));
    assert_int_equal(rep.n_files, json_integer_value(json_object_get(ex, "files")));
    assert_int_equal(rep.unused, json_integer_value(json_object_get(ex, "extra_unused")));
    assert_int_equal(rep.aliased, json_is_true(json_object_get(ex, "tied")) ? 1 : 0);
    json_t *tensors = json_object_get(ex, "tensors");
    assert_int_equal((int64_t)json_object_size(tensors), p->specs.n);
    float *hw = test_weights_get(p);
    for (int64_t i = 0; i < p->specs.n; i++) {
        const vla_param_spec *sp = p->params[i].spec;
        json_t *e = json_object_get(tensors, sp->name);
        if (!e) fail_msg("%s: no expected values for %s", name, sp->name);
        double sum = 0, sq = 0;
        const float *w = hw + (p->params[i].data - p->weights);
        for (int64_t k = 0; k < sp->numel; k++) sum += w[k], sq += (double)w[k] * w[k];
        double esum = json_real_value(json_array_get(e, 0)), esq = json_real_value(json_array_get(e, 1));
        if (fabs(sum - esum) > 1e-9 * (1 + esq) || fabs(sq - esq) > 1e-9 * (1 + esq) ||
            (double)w[0] != json_real_value(json_array_get(e, 2)))
            fail_msg("%s: %s loaded sum %.17g sumsq %.17g first %.9g, torch decodes %.17g %.17g %.9g", name, sp->name,
                     sum, sq, (double)w[0], esum, esq, json_real_value(json_array_get(e, 2)));
    }
    free(hw);
    vla_policy_free(p);
    json_decref(ex);
}

static void test_nano_fixtures(void **state) {
    (void)state;
    check_fixture("lerobot_pi05", "pi05-nano");
    check_fixture("openpi_pi05", "pi05-nano");
    check_fixture("groot_sharded", "groot-nano");
}

/* ---- 3. wrong checkpoints ------------------------------------------------ */

/* A copy of the openpi fixture's tensors into dir/model.safetensors, with
 * `edit` applied: 'd' drop `name`, 's' swap its first two dims, 'x' add an
 * unknown tensor, 'n' store it as F32 with a NaN, 'i' store it as I32. */
static void write_variant(const char *dir, char edit, const char *name) {
    test_rmrf(dir);
    assert_int_equal(vla_mkdirs(dir), VLA_OK);
    char src[1200], dst[1200];
    snprintf(src, sizeof src, "%s/model.safetensors", fixture("openpi_pi05"));
    vla_safetensors st;
    assert_int_equal(vla_safetensors_open(src, &st), VLA_OK);
    vla_safetensors_writer *w;
    assert_int_equal(vla_safetensors_writer_new(&w), VLA_OK);
    static float f32[1 << 16];
    static int32_t i32[1 << 16];
    for (size_t i = 0; i < vla_safetensors_count(&st); i++) {
        const vla_safetensors_tensor *t = vla_safetensors_at(&st, i);
        int64_t shape[8];
        memcpy(shape, t->shape, sizeof shape);
        if (strcmp(t->name, name) != 0) {
            assert_int_equal(vla_safetensors_writer_add(w, t->name, t->dtype, t->ndim, shape, t->data), VLA_OK);
            continue;
        }
        if (edit == 'd') continue;
        if (edit == 's') {
            assert_true(t->ndim == 2 && t->shape[0] != t->shape[1]);
            shape[0] = t->shape[1], shape[1] = t->shape[0];
            assert_int_equal(vla_safetensors_writer_add(w, t->name, t->dtype, t->ndim, shape, t->data), VLA_OK);
        } else if (edit == 'n' || edit == 'i') {
            assert_true(t->numel <= (1 << 16));
            assert_int_equal(vla_safetensors_tensor_to_f32(&st, t, f32, (size_t)t->numel), VLA_OK);
            f32[t->numel / 2] = NAN;
            for (int64_t k = 0; k < t->numel; k++) i32[k] = (int32_t)k;
            assert_int_equal(vla_safetensors_writer_add(w, t->name, edit == 'n' ? VLA_F32 : VLA_I32, t->ndim, shape,
                                                        edit == 'n' ? (void *)f32 : (void *)i32),
                             VLA_OK);
        } else {
            assert_int_equal(vla_safetensors_writer_add(w, t->name, t->dtype, t->ndim, shape, t->data), VLA_OK);
        }
    }
    if (edit == 'x') {
        int64_t shape[1] = {4};
        assert_int_equal(vla_safetensors_writer_add(w, name, VLA_F32, 1, shape, f32), VLA_OK);
    }
    snprintf(dst, sizeof dst, "%s/model.safetensors", dir);
    assert_int_equal(vla_safetensors_writer_write(w, dst), VLA_OK);
    vla_safetensors_writer_free(w);
    vla_safetensors_close(&st);
    snprintf(src, sizeof src, "%s/config.json", fixture("openpi_pi05"));
    snprintf(dst, sizeof dst, "%s/config.json", dir);
    size_t n;
    char *text = test_slurp(src, &n);
    write_text(dst, text);
    free(text);
}

/* Load `dir` into a pi05-nano (base `base`): must fail with `code` and a
 * message holding both substrings. */
static void expect_refused(const char *dir, const char *base, vla_status code, const char *s1, const char *s2) {
    vla_policy_config cfg;
    vla_pub_format fmt;
    vla_status st = vla_published_config(dir, base, &cfg, &fmt);
    vla_policy *p = NULL;
    if (st == VLA_OK) {
        assert_int_equal(vla_policy_create(&cfg, test_backend(), &p), VLA_OK);
        vla_published_report rep;
        st = vla_published_load_weights(p, dir, &rep);
        vla_policy_free(p);
    }
    const char *msg = vla_error_message();
    if (st != code || !strstr(msg, s1) || (s2 && !strstr(msg, s2)))
        fail_msg("%s: got status %d '%s', want %d with '%s' / '%s'", dir, st, msg, code, s1, s2 ? s2 : "");
    vla_error_clear();
}

static void test_refusals(void **state) {
    (void)state;
    const char *dir = test_tmp_path("pub_bad");
    write_variant(dir, 'd', "action_out_proj.weight");
    expect_refused(dir, "pi05-nano", VLA_ERR_NOT_FOUND, "'action_out_proj.weight'", "missing");
    write_variant(dir, 's', "action_in_proj.weight");
    expect_refused(dir, "pi05-nano", VLA_ERR_FORMAT, "'action_in_proj.weight' has shape", "expects");
    write_variant(dir, 'x', "paligemma_with_expert.some_new_head.weight");
    expect_refused(dir, "pi05-nano", VLA_ERR_FORMAT, "'paligemma_with_expert.some_new_head.weight'", "not used");
    write_variant(dir, 'n', "action_out_proj.weight");
    expect_refused(dir, "pi05-nano", VLA_ERR_NUMERIC, "'action_out_proj.weight'", "non-finite");
    write_variant(dir, 'i', "action_out_proj.weight");
    expect_refused(dir, "pi05-nano", VLA_ERR_UNSUPPORTED, "'action_out_proj.weight' is I32", NULL);
    /* the other family's weights, and the other family's config */
    expect_refused(fixture("openpi_pi05"), "groot-nano", VLA_ERR_INVALID_ARG, "a π0.5 checkpoint", "'groot' policy");
    char cfgp[1200];
    snprintf(cfgp, sizeof cfgp, "%s/config.json", dir);
    write_text(cfgp, "{\"type\": \"groot\", \"max_state_dim\": 2, \"max_action_dim\": 2}");
    expect_refused(dir, "groot-nano", VLA_ERR_FORMAT, "holds none of this policy's", NULL);
    write_text(cfgp, "{\"type\": \"act\"}");
    expect_refused(dir, "pi05-nano", VLA_ERR_FORMAT, "config.json: not a LeRobot", NULL);
    unlink(cfgp);
    expect_refused(dir, "pi05-nano", VLA_ERR_NOT_FOUND, "no config.json", "--policy.config");

    /* shards: one missing, an index that misplaces a tensor */
    const char *sd = test_tmp_path("pub_shards");
    test_rmrf(sd);
    char cmd[4096], out[1024];
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", fixture("groot_sharded"), sd);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    char path[1200];
    snprintf(path, sizeof path, "%s/model-00002-of-00002.safetensors", sd);
    char moved[1300];
    snprintf(moved, sizeof moved, "%s.away", path);
    assert_int_equal(rename(path, moved), 0);
    expect_refused(sd, "groot-nano", VLA_ERR_NOT_FOUND, "model-00002-of-00002.safetensors", "is missing");
    assert_int_equal(rename(moved, path), 0);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", sd);
    json_error_t err;
    json_t *idx = json_load_file(path, 0, &err);
    json_t *map = json_object_get(idx, "weight_map");
    const char *key;
    json_t *val;
    const char *victim = NULL;
    json_object_foreach(map, key, val) if (!strcmp(json_string_value(val), "model-00001-of-00002.safetensors")) {
        victim = key;
        break;
    }
    assert_non_null(victim);
    char vname[256];
    snprintf(vname, sizeof vname, "%s", victim);
    json_object_set_new(map, vname, json_string("model-00002-of-00002.safetensors"));
    assert_int_equal(json_dump_file(idx, path, 0), 0);
    json_decref(idx);
    expect_refused(sd, "groot-nano", VLA_ERR_FORMAT, vname, "does not hold it");
    test_rmrf(sd);
    test_rmrf(dir);
}

/* ---- 4. a published fine-tune's own normalisation statistics ------------- */

/* max |a_i − b_i| / (1 + |b_i|) over a JSON array b. */
static double worst(const float *a, const json_t *b, int64_t n) {
    double w = 0;
    assert_int_equal((int64_t)json_array_size(b), n);
    for (int64_t i = 0; i < n; i++) {
        double e = json_number_value(json_array_get(b, (size_t)i));
        double d = fabs((double)a[i] - e) / (1 + fabs(e));
        if (d > w) w = d;
    }
    return w;
}

/* The statistics each fixture stores (LeRobot's processor files, openpi's
 * norm_stats.json, GR00T's metadata.json) give, on probe vectors inside and
 * outside the ranges, what each publisher's own formula gives (numpy, in
 * tools/gen_published_fixtures.py), with the widths, cameras and
 * embodiment its files describe. */
static void check_stats(const char *name, const char *base, const char *want, vla_pub_stats_source want_src) {
    char path[1200];
    snprintf(path, sizeof path, "%s/expected.json", fixture(name));
    json_error_t err;
    json_t *ex = json_load_file(path, 0, &err);
    assert_non_null(ex);
    json_t *en = json_object_get(ex, "norm");
    vla_policy_config cfg;
    vla_pub_format fmt;
    assert_int_equal(vla_published_config(fixture(name), base, &cfg, &fmt), VLA_OK);
    vla_normalizer ns, na;
    vla_pretrained_meta m;
    vla_pub_stats_source src;
    vla_status st = vla_published_stats(fixture(name), &cfg, want, &ns, &na, &m, &src);
    if (st != VLA_OK) fail_msg("%s: %s", name, vla_error_message());
    assert_int_equal(src, want_src);
    assert_int_equal(m.state_width, json_integer_value(json_object_get(en, "state_width")));
    assert_int_equal(m.action_width, json_integer_value(json_object_get(en, "action_width")));
    assert_int_equal(m.cameras, json_integer_value(json_object_get(en, "cameras")));
    assert_int_equal(m.embodiment, json_integer_value(json_object_get(en, "embodiment")));
    assert_int_equal(ns.dim, m.state_width);
    assert_int_equal(na.dim, m.action_width);
    float x[64], y[64];
    const json_t *xs = json_object_get(en, "state"), *xa = json_object_get(en, "action_normalized");
    for (int64_t i = 0; i < ns.dim; i++) x[i] = (float)json_number_value(json_array_get(xs, (size_t)i));
    vla_normalize(&ns, y, x, 1);
    double ws = worst(y, json_object_get(en, "state_normalized"), ns.dim);
    for (int64_t i = 0; i < na.dim; i++) x[i] = (float)json_number_value(json_array_get(xa, (size_t)i));
    vla_unnormalize(&na, y, x, 1);
    double wa = worst(y, json_object_get(en, "action"), na.dim);
    if (ws > 2e-6 || wa > 2e-6) fail_msg("%s: state off by %.3g, action by %.3g (relative)", name, ws, wa);
    /* GR00T's other two modes (quantiles with clipping, mean_std), which
     * its data configs may name per key: the same probe, GR00T's formulas */
    const char *mk;
    json_t *mv;
    json_object_foreach(json_object_get(en, "groot_modes"), mk, mv) {
        float lo[64], hi[64], z[64];
        int64_t d = ns.dim;
        for (int64_t i = 0; i < d; i++) {
            lo[i] = (float)json_number_value(json_array_get(json_object_get(mv, "lo"), (size_t)i));
            hi[i] = (float)json_number_value(json_array_get(json_object_get(mv, "hi"), (size_t)i));
            x[i] = (float)json_number_value(json_array_get(xs, (size_t)i));
        }
        vla_normalizer g;
        assert_int_equal(vla_normalizer_init(&g, (vla_norm_mode)vla_norm_mode_from_name(mk), VLA_NORM_EPS_GROOT, d, lo,
                                             hi, 0), VLA_OK);
        vla_normalize(&g, y, x, 1);
        vla_unnormalize(&g, z, x, 1);
        double wn = worst(y, json_object_get(mv, "normalized"), d), wu = worst(z, json_object_get(mv, "unnormalized"), d);
        if (wn > 2e-6 || wu > 2e-6) fail_msg("GR00T %s: off by %.3g / %.3g (relative)", mk, wn, wu);
        vla_normalizer_free(&g);
    }
    vla_normalizer_free(&ns), vla_normalizer_free(&na);
    json_decref(ex);
}

static void expect_stats_refused(const char *dir, const char *base, const char *want, vla_status code,
                                 const char *needle) {
    vla_policy_config cfg;
    vla_pub_format fmt;
    assert_int_equal(vla_published_config(dir, base, &cfg, &fmt), VLA_OK);
    vla_normalizer ns, na;
    vla_pretrained_meta m;
    vla_pub_stats_source src;
    vla_status st = vla_published_stats(dir, &cfg, want, &ns, &na, &m, &src);
    if (st != code || !strstr(vla_error_message(), needle))
        fail_msg("%s (want %s): expected code %d with '%s', got %d: %s", dir, want ? want : "-", code, needle, st,
                 vla_error_message());
    vla_error_clear();
}

static void test_published_stats(void **state) {
    (void)state;
    check_stats("lerobot_pi05", "pi05-nano", NULL, VLA_PUB_STATS_LEROBOT);
    check_stats("openpi_pi05", "pi05-nano", "pusht", VLA_PUB_STATS_OPENPI);
    check_stats("groot_sharded", "groot-nano", NULL, VLA_PUB_STATS_GROOT);
    check_stats("groot_sharded", "groot-nano", "new_embodiment", VLA_PUB_STATS_GROOT);
    /* several candidates, or one that is not there: refused, listing them */
    expect_stats_refused(fixture("openpi_pi05"), "pi05-nano", NULL, VLA_ERR_INVALID_ARG,
                         "several asset ids (physical-intelligence/libero, pusht)");
    expect_stats_refused(fixture("openpi_pi05"), "pi05-nano", "droid", VLA_ERR_NOT_FOUND, "pusht");
    expect_stats_refused(fixture("groot_sharded"), "groot-nano", "gr1", VLA_ERR_NOT_FOUND, "new_embodiment");

    /* damaged statistics: a missing tensor, a width that disagrees, an
     * unknown tag, a file wider than the policy */
    const char *d = test_tmp_path("pub_stats");
    test_rmrf(d);
    char cmd[4096], out[1024], file[1300];
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", fixture("lerobot_pi05"), d);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    snprintf(file, sizeof file, "%s/policy_preprocessor.json", d);
    json_error_t err;
    json_t *pp = json_load_file(file, 0, &err);
    json_t *feats = json_object_get(json_object_get(json_array_get(json_object_get(pp, "steps"), 2), "config"),
                                    "features");
    assert_non_null(feats);
    json_object_set_new(json_object_get(feats, "observation.state"), "shape", json_pack("[i]", 3));
    assert_int_equal(json_dump_file(pp, file, 0), 0);
    expect_stats_refused(d, "pi05-nano", NULL, VLA_ERR_FORMAT, "features.observation.state says 3");
    json_object_set_new(feats, "observation.environment_state", json_pack("{s:s, s:[i]}", "type", "STATE", "shape", 2));
    json_object_set_new(json_object_get(feats, "observation.state"), "shape", json_pack("[i]", 2));
    assert_int_equal(json_dump_file(pp, file, 0), 0);
    expect_stats_refused(d, "pi05-nano", NULL, VLA_ERR_NOT_FOUND, "observation.environment_state.q01");
    json_decref(pp);
    test_rmrf(d);

    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", fixture("groot_sharded"), d);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    snprintf(file, sizeof file, "%s/experiment_cfg/metadata.json", d);
    json_t *meta = json_load_file(file, 0, &err);
    json_t *entry = json_object_get(meta, "new_embodiment");
    json_incref(entry);
    json_object_del(meta, "new_embodiment");
    json_object_set_new(meta, "my_robot", entry);
    assert_int_equal(json_dump_file(meta, file, 0), 0);
    expect_stats_refused(d, "groot-nano", NULL, VLA_ERR_UNSUPPORTED, "'my_robot' is not one of");
    json_incref(entry);
    json_object_del(meta, "my_robot");
    json_object_set_new(meta, "new_embodiment", entry);
    json_t *grip = json_object_get(json_object_get(json_object_get(entry, "statistics"), "state"), "gripper");
    json_object_set_new(grip, "max", json_pack("[f, f]", 1.0, 2.0));
    assert_int_equal(json_dump_file(meta, file, 0), 0);
    expect_stats_refused(d, "groot-nano", NULL, VLA_ERR_FORMAT, "statistics.state.gripper: min and max hold 1 and 2");
    json_decref(meta);
    test_rmrf(d);

    /* a base checkpoint has none: vla eval refuses it, saying what to do */
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s/config.json' '%s/model.safetensors' '%s/'", d,
             fixture("lerobot_pi05"), fixture("lerobot_pi05"), d);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    vla_pretrained pm;
    assert_int_equal(vla_published_open(d, "pi05-nano", NULL, test_backend(), &pm), VLA_ERR_NOT_FOUND);
    assert_non_null(strstr(vla_error_message(), "fine-tune it first"));
    vla_error_clear();
    test_rmrf(d);

    /* vla eval runs a published fine-tune in closed loop with its own
     * statistics, exactly as it runs a vla.c checkpoint holding the same
     * weights, statistics and features: the same episodes, to the digit */
    const char *ev = test_tmp_path("pub_eval"), *native = test_tmp_path("pub_native");
    static const char *const runs[][3] = {{"lerobot_pi05", "pi05-nano", "pusht"}, {"groot_sharded", "groot-nano", "reach"}};
    for (int r = 0; r < 2; r++) {
        test_rmrf(native);
        assert_int_equal(vla_published_open(fixture(runs[r][0]), runs[r][1], NULL, test_backend(), &pm), VLA_OK);
        json_t *cj = vla_pretrained_config_json(pm.policy, &pm.state_norm, &pm.action_norm, &pm.meta);
        assert_int_equal(vla_pretrained_write_dir(native, pm.policy, NULL, cj), VLA_OK);
        json_decref(cj);
        vla_pretrained_free(&pm);
        char res[2][4096];
        for (int k = 0; k < 2; k++) {
            char cfgflag[64];
            snprintf(cfgflag, sizeof cfgflag, "--policy.config=%s", runs[r][1]);
            test_rmrf(ev); /* an eval writes into a directory of its own */
            snprintf(cmd, sizeof cmd, "%s eval --policy.path=%s %s --env.type=%s --eval.n_episodes=3 --max_steps=40 "
                     "--eval.n_videos=0 --output_dir=%s --json 2>/dev/null", test_cli_path(), k ? native : fixture(runs[r][0]),
                     k ? "" : cfgflag, runs[r][2], ev);
            if (test_run(cmd, res[k], sizeof res[k]) != 0) fail_msg("%s\n%s", cmd, res[k]);
            assert_non_null(strstr(res[k], "\"episodes\":3"));
            char *sec = strstr(res[k], ",\"seconds\""), *tail = strstr(res[k], ",\"eval_info\"");
            assert_true(sec && tail);
            memmove(sec, tail, strlen(tail) + 1); /* drop the timing */
        }
        assert_string_equal(res[0], res[1]);
    }
    test_rmrf(native);
    char res2[4096];
    /* policy info reports where the statistics come from and what they cover */
    snprintf(cmd, sizeof cmd, "%s policy info --json --config=groot-nano --policy.pretrained_path=%s 2>&1",
             test_cli_path(), fixture("groot_sharded"));
    if (test_run(cmd, res2, sizeof res2) != 0) fail_msg("%s\n%s", cmd, res2);
    assert_non_null(strstr(res2, "\"source\":\"GR00T experiment_cfg/metadata.json\",\"state_width\":4,"
                                 "\"action_width\":2,\"cameras\":1,\"embodiment\":31"));
    test_rmrf(ev);
    snprintf(cmd, sizeof cmd, "%s eval --policy.path=%s --policy.config=groot-nano --env.type=pusht --eval.n_episodes=1 "
             "--output_dir=%s 2>&1", test_cli_path(), fixture("groot_sharded"), ev);
    assert_int_not_equal(test_run(cmd, res2, sizeof res2), 0);
    assert_non_null(strstr(res2, "has 4 dims"));
    test_rmrf(ev);
}

/* ---- 5. fine-tuning GR00T from the sharded fixture ----------------------- */

static void test_train_from_pretrained(void **state) {
    (void)state;
    const char *ds = test_tmp_path("pub_reach_ds");
    if (!vla_is_dir(ds)) test_record_reach(ds, 4, 0, -1);
    const char *out = test_tmp_path("pub_train");
    test_rmrf(out);
    vla_train_opts o;
    vla_train_opts_default(&o);
    o.dataset_root = ds;
    o.policy_type = "groot";
    o.policy_config = "groot-nano";
    o.pretrained_path = fixture("groot_sharded");
    o.output_dir = out;
    o.batch_size = 4;
    o.steps = 3;
    o.seed = 3;
    o.num_workers = 0;
    o.lr = 1e-3;
    o.progress = false;
    vla_train_result r;
    vla_status st = vla_train(&o, &r);
    if (st != VLA_OK) fail_msg("%s", vla_error_message());

    vla_ckpt_info ck;
    assert_int_equal(vla_ckpt_find_last(out, &ck), VLA_OK);
    char path[4200], epath[1200];
    snprintf(path, sizeof path, "%s/%s/model.safetensors", ck.dir, VLA_CKPT_MODEL_DIR);
    snprintf(epath, sizeof epath, "%s/expected.json", fixture("groot_sharded"));
    json_error_t err;
    json_t *root = json_load_file(epath, 0, &err);
    json_t *ex = json_object_get(root, "tensors");
    assert_non_null(ex);
    vla_safetensors st2;
    assert_int_equal(vla_safetensors_open(path, &st2), VLA_OK);
    int frozen_same = 0, trained_moved = 0;
    for (size_t i = 0; i < vla_safetensors_count(&st2); i++) {
        const vla_safetensors_tensor *t = vla_safetensors_at(&st2, i);
        float *w = malloc((size_t)t->numel * sizeof(float));
        assert_int_equal(vla_safetensors_tensor_to_f32(&st2, t, w, (size_t)t->numel), VLA_OK);
        double sum = 0;
        for (int64_t k = 0; k < t->numel; k++) sum += w[k];
        free(w);
        double esum = json_real_value(json_array_get(json_object_get(ex, t->name), 0));
        bool frozen = !strncmp(t->name, "backbone.eagle_model.", 21);
        if (frozen) {
            if (fabs(sum - esum) > 1e-9 * (1 + fabs(esum))) fail_msg("frozen %s moved: %.17g vs %.17g", t->name, sum, esum);
            frozen_same++;
        } else if (!strncmp(t->name, "action_head.model.", 18) && strstr(t->name, ".weight")) {
            trained_moved += fabs(sum - esum) > 1e-7;
        }
    }
    vla_safetensors_close(&st2);
    json_decref(root);
    assert_true(frozen_same > 20);
    assert_true(trained_moved > 5);

    /* that checkpoint as a weights-only warm start with no --policy.type or
     * --policy.config: both come from the checkpoint (the default type, pi05,
     * must not refuse a groot checkpoint) */
    char warm[4200];
    snprintf(warm, sizeof warm, "%s/%s", ck.dir, VLA_CKPT_MODEL_DIR);
    const char *out2 = test_tmp_path("pub_train_warm");
    test_rmrf(out2);
    vla_train_opts w;
    vla_train_opts_default(&w);
    w.dataset_root = ds, w.pretrained_path = warm, w.output_dir = out2;
    w.batch_size = 4, w.steps = 1, w.seed = 3, w.num_workers = 0, w.lr = 1e-3, w.progress = false;
    if (vla_train(&w, &r) != VLA_OK) fail_msg("warm start from %s: %s", warm, vla_error_message());
    vla_ckpt_info ck2;
    assert_int_equal(vla_ckpt_find_last(out2, &ck2), VLA_OK);
    vla_pretrained pm;
    assert_int_equal(vla_pretrained_load(ck2.dir, test_backend(), &pm), VLA_OK);
    assert_string_equal(vla_policy_config_family_name(&pm.policy->cfg), "groot");
    assert_string_equal(pm.policy->cfg.name, "groot-nano");
    vla_pretrained_free(&pm);
    test_rmrf(out2);
    test_rmrf(out);
    test_release_font_caches(); /* the trainer draws its plots with cairo */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_size_listings),
        cmocka_unit_test(test_nano_fixtures),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_published_stats),
        cmocka_unit_test(test_train_from_pretrained),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
