/* test_safetensors.c — the safetensors reader and writer: files written by an
 * independent Python writer (tools/gen_safetensors_fixtures.py), byte-exact
 * agreement with the reference layout, round trips of every dtype, each class
 * of bad file, truncation at every length, single-bit flips of a file vla.c
 * wrote, and atomic writes under injected write faults. */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "io/safetensors.h"

#define DATA_DIR "tests/io/data/safetensors/"

static json_t *load_expected(void) {
    json_error_t err;
    json_t *j = json_load_file(test_source_path(DATA_DIR "expected.json"), 0, &err);
    if (!j) fail_msg("expected.json: %s", err.text);
    return j;
}

static uint64_t elem_bits(const void *data, size_t i, size_t es) {
    uint64_t v = 0;
    const uint8_t *p = (const uint8_t *)data + i * es;
    for (size_t k = 0; k < es; k++) v |= (uint64_t)p[k] << (8 * k);
    return v;
}

static uint64_t mask_bits(uint64_t v, size_t es) { return es == 8 ? v : v & ((UINT64_C(1) << (8 * es)) - 1); }

static void check_f32(const json_t *want, float got, const char *file, const char *name, size_t i) {
    if (json_is_string(want)) {
        const char *s = json_string_value(want);
        if (strcmp(s, "nan") == 0) {
            if (!isnan(got)) fail_msg("%s %s[%zu]: want nan, got %g", file, name, i, got);
        } else {
            float inf = strcmp(s, "inf") == 0 ? INFINITY : -INFINITY;
            if (got != inf) fail_msg("%s %s[%zu]: want %s, got %g", file, name, i, s, got);
        }
        return;
    }
    float w = (float)json_number_value(want);
    if (w != got || signbit(w) != signbit(got)) fail_msg("%s %s[%zu]: want %.9g, got %.9g", file, name, i, w, got);
}

/* Every file the Python writer made: metadata, names, dtypes, shapes,
 * offsets, every element's bits and its f32 value. */
static void test_python_written_files(void **state) {
    (void)state;
    json_t *exp = load_expected(), *valid = json_object_get(exp, "valid");
    assert_true(json_object_size(valid) >= 3);
    const char *file;
    json_t *fe;
    json_object_foreach(valid, file, fe) {
        char rel[256];
        snprintf(rel, sizeof rel, DATA_DIR "%s", file);
        vla_safetensors st;
        if (vla_safetensors_open(test_source_path(rel), &st) != VLA_OK) fail_msg("%s: %s", file, vla_error_message());

        json_t *meta = json_object_get(fe, "metadata");
        assert_int_equal(vla_safetensors_meta_count(&st), json_object_size(meta));
        const char *mk;
        json_t *mv;
        json_object_foreach(meta, mk, mv) {
            const char *got = vla_safetensors_meta_get(&st, mk);
            assert_non_null(got);
            assert_string_equal(got, json_string_value(mv));
        }
        for (size_t i = 0; i + 1 < vla_safetensors_meta_count(&st); i++) { /* iteration is in key order */
            const char *k0, *v0, *k1, *v1;
            assert_int_equal(vla_safetensors_meta_at(&st, i, &k0, &v0), VLA_OK);
            assert_int_equal(vla_safetensors_meta_at(&st, i + 1, &k1, &v1), VLA_OK);
            assert_true(strcmp(k0, k1) < 0);
        }

        json_t *tensors = json_object_get(fe, "tensors");
        assert_int_equal(vla_safetensors_count(&st), json_object_size(tensors));
        const char *name;
        json_t *te;
        json_object_foreach(tensors, name, te) {
            const vla_safetensors_tensor *t = vla_safetensors_find(&st, name);
            if (!t) fail_msg("%s: tensor '%s' missing", file, name);
            assert_string_equal(vla_dtype_safetensors_name(t->dtype), json_string_value(json_object_get(te, "dtype")));
            json_t *shape = json_object_get(te, "shape");
            assert_int_equal(t->ndim, json_array_size(shape));
            for (int d = 0; d < t->ndim; d++) assert_int_equal(t->shape[d], json_integer_value(json_array_get(shape, d)));
            json_t *offs = json_object_get(te, "data_offsets");
            assert_int_equal(t->begin, json_integer_value(json_array_get(offs, 0)));
            assert_int_equal(t->end, json_integer_value(json_array_get(offs, 1)));
            assert_int_equal(t->nbytes, t->end - t->begin);
            assert_ptr_equal(t->data, st.data + t->begin);

            json_t *bits = json_object_get(te, "bits"), *f32 = json_object_get(te, "f32");
            size_t n = json_array_size(bits), es = vla_dtype_size(t->dtype);
            assert_int_equal(t->numel, n);
            for (size_t i = 0; i < n; i++) {
                uint64_t want = mask_bits((uint64_t)json_integer_value(json_array_get(bits, i)), es);
                uint64_t got = elem_bits(t->data, i, es);
                if (want != got)
                    fail_msg("%s %s[%zu]: bits 0x%llx, want 0x%llx", file, name, i, (unsigned long long)got,
                             (unsigned long long)want);
            }
            float *vals = malloc((n ? n : 1) * sizeof *vals);
            assert_int_equal(vla_safetensors_load_f32(&st, name, vals, n), VLA_OK);
            for (size_t i = 0; i < n; i++) check_f32(json_array_get(f32, i), vals[i], file, name, i);
            free(vals);
        }
        /* Lookup by index walks names in order and agrees with lookup by name. */
        for (size_t i = 0; i < vla_safetensors_count(&st); i++) {
            const vla_safetensors_tensor *t = vla_safetensors_at(&st, i);
            assert_ptr_equal(vla_safetensors_find(&st, t->name), t);
            if (i) assert_true(strcmp(vla_safetensors_at(&st, i - 1)->name, t->name) < 0);
        }
        assert_null(vla_safetensors_at(&st, vla_safetensors_count(&st)));
        vla_safetensors_close(&st);
    }
    json_decref(exp);
}

/* The reference implementation's tests give exact bytes for a few files. */
static void test_reference_vectors(void **state) {
    (void)state;
    static const uint8_t attn[] = {
        64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100, 116, 121, 112, 101, 34, 58,
        34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34, 58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116,
        97, 95, 111, 102, 102, 115, 101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 0, 0, 0, 0, 0, 0, 128,
        63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64};
    static const uint8_t empty[] = {8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32};
    static const uint8_t empty_meta[] = {40, 0, 0, 0, 0, 0, 0, 0, 123, 34, 95, 95, 109, 101, 116, 97, 100, 97,
                                         116, 97, 95, 95, 34, 58, 123, 34, 102, 114, 97, 109, 101, 119, 111, 114,
                                         107, 34, 58, 34, 112, 116, 34, 125, 125, 32, 32, 32, 32, 32};
    const float v[6] = {0, 1, 2, 3, 4, 5};
    const int64_t shape[3] = {1, 2, 3};
    struct {
        const uint8_t *bytes;
        size_t n;
        int with_tensor, with_meta;
    } cases[] = {{attn, sizeof attn, 1, 0}, {empty, sizeof empty, 0, 0}, {empty_meta, sizeof empty_meta, 0, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        vla_safetensors_writer *w;
        assert_int_equal(vla_safetensors_writer_new(&w), VLA_OK);
        if (cases[c].with_tensor) assert_int_equal(vla_safetensors_writer_add(w, "attn.0", VLA_F32, 3, shape, v), VLA_OK);
        if (cases[c].with_meta) assert_int_equal(vla_safetensors_writer_set_meta(w, "framework", "pt"), VLA_OK);
        const char *path = test_tmp_path("ref.safetensors");
        assert_int_equal(vla_safetensors_writer_write(w, path), VLA_OK);
        vla_safetensors_writer_free(w);
        char *got;
        size_t n;
        assert_int_equal(vla_read_file(path, &got, &n), VLA_OK);
        assert_int_equal(n, cases[c].n);
        assert_memory_equal(got, cases[c].bytes, n);
        free(got);
        vla_safetensors st;
        assert_int_equal(vla_safetensors_parse(cases[c].bytes, cases[c].n, "ref", &st), VLA_OK);
        assert_int_equal(vla_safetensors_count(&st), cases[c].with_tensor);
        vla_safetensors_close(&st);
    }
}

/* vla's writer, given the Python file's tensors and metadata, writes the same
 * bytes as the independent writer that follows the reference layout. */
static void test_writer_matches_python_layout(void **state) {
    (void)state;
    json_t *exp = load_expected();
    json_t *fe = json_object_get(json_object_get(exp, "valid"), "all_dtypes.safetensors");
    assert_non_null(fe);
    vla_safetensors_writer *w;
    assert_int_equal(vla_safetensors_writer_new(&w), VLA_OK);
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(fe, "metadata"), key, v)
        assert_int_equal(vla_safetensors_writer_set_meta(w, key, json_string_value(v)), VLA_OK);
    json_t *tensors = json_object_get(fe, "tensors");
    uint8_t *bufs[32];
    size_t nb = 0;
    json_object_foreach(tensors, key, v) {
        vla_dtype dt;
        assert_int_equal(vla_dtype_from_safetensors_name(json_string_value(json_object_get(v, "dtype")), &dt), VLA_OK);
        json_t *bits = json_object_get(v, "bits"), *shape = json_object_get(v, "shape");
        size_t n = json_array_size(bits), es = vla_dtype_size(dt);
        uint8_t *buf = malloc(n * es + 1);
        for (size_t i = 0; i < n; i++) {
            uint64_t b = (uint64_t)json_integer_value(json_array_get(bits, i));
            for (size_t k = 0; k < es; k++) buf[i * es + k] = (uint8_t)(b >> (8 * k));
        }
        int64_t sh[8];
        int nd = (int)json_array_size(shape);
        for (int d = 0; d < nd; d++) sh[d] = json_integer_value(json_array_get(shape, d));
        assert_int_equal(vla_safetensors_writer_add(w, key, dt, nd, sh, n ? buf : NULL), VLA_OK);
        assert_true(nb < 32);
        bufs[nb++] = buf;
    }
    const char *path = test_tmp_path("all_dtypes.safetensors");
    assert_int_equal(vla_safetensors_writer_write(w, path), VLA_OK);
    vla_safetensors_writer_free(w);
    for (size_t i = 0; i < nb; i++) free(bufs[i]);
    char *got, *want;
    size_t ngot, nwant;
    assert_int_equal(vla_read_file(path, &got, &ngot), VLA_OK);
    assert_int_equal(vla_read_file(test_source_path(DATA_DIR "all_dtypes.safetensors"), &want, &nwant), VLA_OK);
    assert_int_equal(ngot, nwant);
    assert_memory_equal(got, want, nwant);
    free(got);
    free(want);
    json_decref(exp);
}

/* Round trip of every dtype, several ranks (scalar, empty, rank 8) and
 * metadata; every tensor comes back aligned to its element size. */
static void test_round_trip(void **state) {
    (void)state;
    enum { NT = VLA_DTYPE_COUNT * 3 };
    uint8_t *bufs[NT];
    char names[NT][32];
    int64_t shapes[NT][8];
    int ndims[NT];
    vla_dtype dts[NT];
    size_t sizes[NT];
    vla_safetensors_writer *w;
    assert_int_equal(vla_safetensors_writer_new(&w), VLA_OK);
    uint32_t seed = 12345;
    for (int i = 0; i < NT; i++) {
        dts[i] = (vla_dtype)(i % VLA_DTYPE_COUNT);
        int kind = i / VLA_DTYPE_COUNT; /* 0: 2-D, 1: scalar, 2: rank 8 (or empty for some) */
        if (kind == 0) {
            ndims[i] = 2, shapes[i][0] = 3, shapes[i][1] = 5 + i;
        } else if (kind == 1) {
            ndims[i] = 0;
        } else {
            ndims[i] = 8;
            for (int d = 0; d < 8; d++) shapes[i][d] = (d % 3) + 1;
            if (i % 2) shapes[i][5] = 0;
        }
        int64_t numel = 1;
        for (int d = 0; d < ndims[i]; d++) numel *= shapes[i][d];
        sizes[i] = (size_t)numel * vla_dtype_size(dts[i]);
        bufs[i] = malloc(sizes[i] + 1);
        for (size_t k = 0; k < sizes[i]; k++) {
            seed = seed * 1664525u + 1013904223u;
            bufs[i][k] = (uint8_t)(seed >> 24);
        }
        snprintf(names[i], sizeof names[i], "layer.%d.%s", i, vla_dtype_name(dts[i]));
        assert_int_equal(vla_safetensors_writer_add(w, names[i], dts[i], ndims[i], shapes[i], bufs[i]), VLA_OK);
    }
    assert_int_equal(vla_safetensors_writer_set_meta(w, "step", "100"), VLA_OK);
    assert_int_equal(vla_safetensors_writer_set_meta(w, "config", "{\"dim\": 64, \"name\": \"\xce\xbb\"}"), VLA_OK);
    assert_int_equal(vla_safetensors_writer_set_meta(w, "step", "200"), VLA_OK); /* replaces */
    const char *path = test_tmp_path("rt.safetensors");
    assert_int_equal(vla_safetensors_writer_write(w, path), VLA_OK);
    vla_safetensors_writer_free(w);

    vla_safetensors st;
    assert_int_equal(vla_safetensors_open(path, &st), VLA_OK);
    assert_int_equal(vla_safetensors_count(&st), NT);
    assert_int_equal((st.header_len + 8) % 8, 0);
    for (int i = 0; i < NT; i++) {
        const vla_safetensors_tensor *t;
        assert_int_equal(vla_safetensors_get(&st, names[i], &t), VLA_OK);
        assert_int_equal(t->dtype, dts[i]);
        assert_int_equal(t->ndim, ndims[i]);
        for (int d = 0; d < ndims[i]; d++) assert_int_equal(t->shape[d], shapes[i][d]);
        assert_int_equal(t->nbytes, sizes[i]);
        if (sizes[i]) assert_memory_equal(t->data, bufs[i], sizes[i]);
        assert_int_equal((uintptr_t)t->data % vla_dtype_size(t->dtype), 0);
        /* load_f32 agrees with vla_convert on the original buffer. */
        size_t n = (size_t)t->numel;
        float *a = malloc((n + 1) * sizeof *a), *b = malloc((n + 1) * sizeof *b);
        assert_int_equal(vla_safetensors_load_f32(&st, names[i], a, n), VLA_OK);
        vla_convert(b, VLA_F32, bufs[i], dts[i], n);
        assert_memory_equal(a, b, n * sizeof *a);
        free(a);
        free(b);
        free(bufs[i]);
    }
    assert_int_equal(vla_safetensors_meta_count(&st), 2);
    assert_string_equal(vla_safetensors_meta_get(&st, "step"), "200");
    assert_string_equal(vla_safetensors_meta_get(&st, "config"), "{\"dim\": 64, \"name\": \"\xce\xbb\"}");
    assert_null(vla_safetensors_meta_get(&st, "absent"));
    const char *k, *val;
    assert_int_equal(vla_safetensors_meta_at(&st, 0, &k, &val), VLA_OK);
    assert_string_equal(k, "config");
    assert_int_equal(vla_safetensors_meta_at(&st, 2, &k, &val), VLA_ERR_INVALID_ARG);

    /* Lookup errors. */
    const vla_safetensors_tensor *t;
    assert_int_equal(vla_safetensors_get(&st, "nope", &t), VLA_ERR_NOT_FOUND);
    assert_non_null(strstr(vla_error_message(), "no tensor named 'nope'"));
    float one;
    assert_int_equal(vla_safetensors_load_f32(&st, names[0], &one, 1), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "elements but the destination holds 1"));
    vla_safetensors_close(&st);
    vla_safetensors_close(&st); /* closing twice is harmless */
}

static void test_writer_rejects_bad_arguments(void **state) {
    (void)state;
    vla_safetensors_writer *w;
    assert_int_equal(vla_safetensors_writer_new(&w), VLA_OK);
    float x[4] = {0};
    int64_t s1[1] = {4}, s9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 4}, neg[1] = {-1}, huge[2] = {INT64_MAX, 4};
    assert_int_equal(vla_safetensors_writer_add(w, "a", VLA_F32, 1, s1, x), VLA_OK);
    assert_int_equal(vla_safetensors_writer_add(w, "a", VLA_F32, 1, s1, x), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "added twice"));
    assert_int_equal(vla_safetensors_writer_add(w, "__metadata__", VLA_F32, 1, s1, x), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_safetensors_writer_add(w, "b", VLA_F32, 9, s9, x), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_safetensors_writer_add(w, "c", VLA_F32, 1, neg, x), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_safetensors_writer_add(w, "d", VLA_F32, 2, huge, x), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_safetensors_writer_add(w, "e", VLA_F32, 1, s1, NULL), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_safetensors_writer_add(w, "bad\xff", VLA_F32, 1, s1, x), VLA_ERR_INVALID_ARG);
    assert_int_equal(vla_safetensors_writer_set_meta(w, "k", "\xc0\xaf"), VLA_ERR_INVALID_ARG);
    vla_safetensors_writer_free(w);
}

/* Each deliberately bad file fails with the listed status, and the message
 * names the file and the problem. */
static void test_bad_files(void **state) {
    (void)state;
    json_t *exp = load_expected(), *bad = json_object_get(exp, "bad");
    assert_true(json_array_size(bad) >= 15);
    size_t i;
    json_t *b;
    json_array_foreach(bad, i, b) {
        const char *file = json_string_value(json_object_get(b, "file"));
        const char *status = json_string_value(json_object_get(b, "status"));
        const char *msg = json_string_value(json_object_get(b, "message"));
        char rel[256];
        snprintf(rel, sizeof rel, DATA_DIR "%s", file);
        vla_safetensors st;
        vla_status s = vla_safetensors_open(test_source_path(rel), &st);
        const char *got = vla_error_message();
        if (s == VLA_OK) fail_msg("%s: opened without error", file);
        vla_status want = strcmp(status, "unsupported") == 0 ? VLA_ERR_UNSUPPORTED : VLA_ERR_FORMAT;
        if (s != want) fail_msg("%s: status '%s', want %s (%s)", file, vla_status_name(s), status, got);
        if (!strstr(got, msg)) fail_msg("%s: message '%s' lacks '%s'", file, got, msg);
        if (!strstr(got, file)) fail_msg("%s: message '%s' does not name the file", file, got);
        assert_null(st.tensors); /* left closed */
        vla_safetensors_close(&st);

        /* The same bytes through the buffer parser fail the same way. */
        char *bytes;
        size_t n;
        assert_int_equal(vla_read_file(test_source_path(rel), &bytes, &n), VLA_OK);
        assert_int_equal(vla_safetensors_parse(bytes, n, file, &st), s);
        free(bytes);
    }
    json_decref(exp);

    vla_safetensors st;
    assert_int_equal(vla_safetensors_open(test_tmp_path("does-not-exist"), &st), VLA_ERR_NOT_FOUND);
    assert_int_equal(vla_safetensors_open(test_tmp_dir(), &st), VLA_ERR_IO);
}

/* Every proper prefix of a valid file fails cleanly, both through the
 * buffer parser (exact-size heap copies, so ASan sees any overread) and
 * through open on a truncated file. */
static void test_truncated_at_every_length(void **state) {
    (void)state;
    const char *files[] = {DATA_DIR "all_dtypes.safetensors", DATA_DIR "unaligned.safetensors"};
    for (size_t f = 0; f < 2; f++) {
        char *full;
        size_t n;
        assert_int_equal(vla_read_file(test_source_path(files[f]), &full, &n), VLA_OK);
        const char *path = test_tmp_path("trunc.safetensors");
        for (size_t len = 0; len < n; len++) {
            uint8_t *copy = malloc(len ? len : 1);
            memcpy(copy, full, len);
            vla_safetensors st;
            vla_status s = vla_safetensors_parse(copy, len, "trunc", &st);
            if (s != VLA_ERR_FORMAT) fail_msg("%s cut to %zu bytes: status %d", files[f], len, (int)s);
            free(copy);
            FILE *fp = fopen(path, "wb");
            assert_non_null(fp);
            assert_int_equal(fwrite(full, 1, len, fp), len);
            fclose(fp);
            s = vla_safetensors_open(path, &st);
            if (s != VLA_ERR_FORMAT) fail_msg("%s cut to %zu bytes: open status %d", files[f], len, (int)s);
            assert_non_null(strstr(vla_error_message(), "trunc.safetensors"));
        }
        vla_safetensors st;
        assert_int_equal(vla_safetensors_parse(full, n, "full", &st), VLA_OK);
        vla_safetensors_close(&st);
        free(full);
    }
}

/* Parse and convert every tensor to f32 (touching all of its data). */
static vla_status read_all_tensors(const uint8_t *d, size_t n, void *user) {
    (void)user;
    vla_safetensors st;
    VLA_TRY(vla_safetensors_parse(d, n, "sweep.safetensors", &st));
    vla_status s = VLA_OK;
    for (size_t i = 0; s == VLA_OK && i < vla_safetensors_count(&st); i++) {
        const vla_safetensors_tensor *t = vla_safetensors_at(&st, i);
        float *f = malloc((size_t)(t->numel ? t->numel : 1) * sizeof *f);
        assert_non_null(f);
        s = vla_safetensors_tensor_to_f32(&st, t, f, (size_t)t->numel);
        free(f);
    }
    vla_safetensors_close(&st);
    return s;
}

/* A file written by vla.c's writer: every prefix is refused; every single
 * bit of the length and JSON header flipped is refused or parses (a name or
 * a metadata value changed), and a flipped data bit always parses (a value
 * changed: the format has no checksum); nothing crashes or reads out of
 * bounds (ASan build). */
static void test_written_file_sweeps(void **state) {
    (void)state;
    const char *path = test_tmp_path("sample.safetensors");
    test_write_sample_safetensors(path);
    size_t n;
    uint8_t *d = (uint8_t *)test_slurp(path, &n);
    assert_int_equal(read_all_tensors(d, n, NULL), VLA_OK);
    uint64_t hl;
    memcpy(&hl, d, 8); /* little-endian, as the host */
    size_t head = 8 + (size_t)hl;
    size_t marks[] = {8, head};
    test_sweep_prefixes("sample.safetensors", d, n, 1, marks, 2, read_all_tensors, NULL);
    int rejected = 0;
    for (size_t at = 0; at < head; at++)
        for (int bit = 0; bit < 8; bit++) {
            d[at] ^= (uint8_t)(1u << bit);
            uint8_t *copy = malloc(n);
            memcpy(copy, d, n);
            vla_error_clear();
            vla_status st = read_all_tensors(copy, n, NULL);
            free(copy);
            d[at] ^= (uint8_t)(1u << bit);
            if (st != VLA_OK) {
                rejected++;
                if (!vla_error_message()[0]) fail_msg("header bit %d of byte %zu: no message", bit, at);
            }
        }
    int data_rejected = test_sweep_bit_flips("sample.safetensors data", d, n, head, 500, 5, read_all_tensors, NULL);
    assert_int_equal(data_rejected, 0);
    printf("# %zu-byte header: %d of %zu bit flips refused, the rest parse; 500 data bit flips all parse\n", head,
           rejected, head * 8);
    free(d);
}

static int count_temp_files(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp-")) n++;
    closedir(d);
    return n;
}

static vla_status write_version(const char *path, float base) {
    float v[64];
    for (int i = 0; i < 64; i++) v[i] = base + (float)i;
    int64_t shape[2] = {8, 8};
    vla_safetensors_writer *w;
    VLA_TRY(vla_safetensors_writer_new(&w));
    vla_status s = vla_safetensors_writer_add(w, "w", VLA_F32, 2, shape, v);
    if (s == VLA_OK) s = vla_safetensors_writer_set_meta(w, "version", base == 0 ? "old" : "new");
    if (s == VLA_OK) s = vla_safetensors_writer_write(w, path);
    vla_safetensors_writer_free(w);
    return s;
}

/* A write that fails at any byte leaves the previous file intact and no
 * temporary file behind. */
static void test_writer_atomic_under_faults(void **state) {
    (void)state;
    const char *dir = test_tmp_path("atomic");
    assert_int_equal(vla_mkdirs(dir), VLA_OK);
    char path[1100];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    assert_int_equal(write_version(path, 0), VLA_OK);
    char *old;
    size_t nold;
    assert_int_equal(vla_read_file(path, &old, &nold), VLA_OK);
    for (int64_t k = 0; k < (int64_t)nold; k++) {
        vla_fault_inject_write(k);
        vla_status s = write_version(path, 1000);
        vla_fault_inject_write(-1);
        if (s != VLA_ERR_IO) fail_msg("fault after %lld bytes: status %d", (long long)k, (int)s);
        char *now;
        size_t nnow;
        assert_int_equal(vla_read_file(path, &now, &nnow), VLA_OK);
        assert_int_equal(nnow, nold);
        assert_memory_equal(now, old, nold);
        free(now);
        assert_int_equal(count_temp_files(dir), 0);
    }
    assert_int_equal(write_version(path, 1000), VLA_OK);
    vla_safetensors st;
    assert_int_equal(vla_safetensors_open(path, &st), VLA_OK);
    assert_string_equal(vla_safetensors_meta_get(&st, "version"), "new");
    float v[64];
    assert_int_equal(vla_safetensors_load_f32(&st, "w", v, 64), VLA_OK);
    assert_true(v[0] == 1000.0f && v[63] == 1063.0f);
    vla_safetensors_close(&st);
    assert_int_equal(count_temp_files(dir), 0);
    free(old);
}

/* Hand-made headers for cases the fixtures do not cover. */
static vla_status parse_header(const char *json, size_t data_len) {
    size_t hl = strlen(json), n = 8 + hl + data_len;
    uint8_t *buf = calloc(1, n);
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    memcpy(buf + 8, json, hl);
    vla_safetensors st;
    vla_status s = vla_safetensors_parse(buf, n, "hand.safetensors", &st);
    vla_safetensors_close(&st);
    free(buf);
    return s;
}

static void test_header_edge_cases(void **state) {
    (void)state;
    /* Padding with spaces (and leading whitespace) is fine; zero-size tensors
     * may sit anywhere between others; order in the header is free. */
    assert_int_equal(parse_header("  {\"b\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,4]},"
                                  "\"a\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[0,4]}}     ",
                                  4),
                     VLA_OK);
    assert_int_equal(parse_header("{}", 0), VLA_OK);
    assert_int_equal(parse_header("{}", 1), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "lists no tensors"));
    assert_int_equal(parse_header("", 0), VLA_ERR_FORMAT);
    assert_int_equal(parse_header("{} x", 0), VLA_ERR_FORMAT);
    assert_int_equal(parse_header("{}\n\t\r ", 0), VLA_OK);
    /* A zero-size tensor inside another tensor's bytes is an overlap. */
    assert_int_equal(parse_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                                  "\"b\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}",
                                  8),
                     VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "overlap"));
    assert_int_equal(parse_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", 4),
                     VLA_ERR_FORMAT);
    assert_int_equal(parse_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,4]}}", 4),
                     VLA_ERR_FORMAT);
    assert_int_equal(parse_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,99999999999999999999]}}", 4),
                     VLA_ERR_FORMAT);
    assert_int_equal(parse_header("{\"a\":[1]}", 0), VLA_ERR_FORMAT);
    assert_int_equal(parse_header("{\"__metadata__\":[],\"a\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}", 1),
                     VLA_ERR_FORMAT);
    assert_int_equal(parse_header("{\"__metadata__\":{\"k\":\"a\\u0000b\"}}", 0), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "NUL"));
    /* Escaped surrogate pairs and raw UTF-8 in names are fine; lone
     * surrogates are not. */
    assert_int_equal(parse_header("{\"\\ud83d\\ude00\xce\xbb\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1),
                     VLA_OK);
    assert_int_equal(parse_header("{\"\\ud83d\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1),
                     VLA_ERR_FORMAT);
    assert_int_equal(parse_header("{\"\xed\xa0\x80\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1),
                     VLA_ERR_FORMAT);
    /* Header length at the 100 MB limit but beyond the file: past-the-end. */
    uint8_t big[16] = {0x00, 0xe1, 0xf5, 0x05, 0, 0, 0, 0, '{', '}'}; /* 100000000 */
    vla_safetensors st;
    assert_int_equal(vla_safetensors_parse(big, sizeof big, "big", &st), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "runs past the end"));
    big[0] = 0x01; /* 100000001 */
    assert_int_equal(vla_safetensors_parse(big, sizeof big, "big", &st), VLA_ERR_FORMAT);
    assert_non_null(strstr(vla_error_message(), "exceeds the limit"));
    memset(big, 0xff, 8);
    assert_int_equal(vla_safetensors_parse(big, sizeof big, "big", &st), VLA_ERR_FORMAT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_python_written_files),     cmocka_unit_test(test_reference_vectors),
        cmocka_unit_test(test_writer_matches_python_layout), cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_writer_rejects_bad_arguments), cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_truncated_at_every_length), cmocka_unit_test(test_writer_atomic_under_faults),
        cmocka_unit_test(test_header_edge_cases), cmocka_unit_test(test_written_file_sweeps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
