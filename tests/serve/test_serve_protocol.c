/* test_serve_protocol.c — openpi's wire values without a network:
 *  - request frames packed by an openpi-style client (tools/openpi_ref_client.py:
 *    Python's msgpack + NumPy, the encoding openpi_client/msgpack_numpy.py
 *    defines; committed goldens) decode to the values the generator recorded;
 *  - replies written by vla.c are byte for byte what Python packs from the
 *    same values;
 *  - broken frames (every prefix, bit flips, lying lengths, bad dtypes and
 *    shapes) fail with a message naming what is wrong, never crash;
 *  - the engine turns a request into the chunk a hand computation gives
 *    (normalise, sample, unnormalise per step, add the state back), maps
 *    client keys, refuses bad requests naming the key, and holds real-time
 *    chunking's committed actions. */
#include "test_util.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "policy/rtc.h"
#include "serve/engine.h"
#include "serve/msgpack_np.h"
#include "serve_fixture.h"

static uint8_t *golden(const char *name, size_t *n) {
    char rel[256];
    snprintf(rel, sizeof rel, "tests/serve/data/%s", name);
    return (uint8_t *)test_slurp(test_source_path(rel), n);
}

/* ---- decoding the goldens ---- */

static void check_golden(const char *base) {
    char name[128];
    size_t n;
    snprintf(name, sizeof name, "%s.msgpack", base);
    uint8_t *buf = golden(name, &n);
    snprintf(name, sizeof name, "tests/serve/data/%s.json", base);
    json_t *want;
    assert_int_equal(vla_json_load_file(test_source_path(name), &want), VLA_OK);
    vla_np_map m;
    if (vla_np_parse(buf, n, &m) != VLA_OK) fail_msg("%s: %s", base, vla_error_message());
    assert_int_equal(m.n, (int)json_object_size(want));
    const char *key;
    json_t *w;
    json_object_foreach(want, key, w) {
        const vla_np_field *f = vla_np_get(&m, key);
        if (!f) fail_msg("%s: key %s not decoded", base, key);
        const char *kind = json_string_value(json_object_get(w, "kind"));
        if (!strcmp(kind, "string")) {
            const char *text = json_string_value(json_object_get(w, "text"));
            assert_int_equal(f->kind, VLA_NP_STRING);
            assert_int_equal(f->len, strlen(text));
            assert_memory_equal(f->str, text, f->len);
            continue;
        }
        if (!strcmp(kind, "array")) {
            assert_int_equal(f->kind, VLA_NP_ARRAY);
            assert_string_equal(f->dtype.str, json_string_value(json_object_get(w, "dtype")));
            json_t *shape = json_object_get(w, "shape");
            assert_int_equal(f->ndim, (int)json_array_size(shape));
            for (int d = 0; d < f->ndim; d++) assert_int_equal(f->shape[d], json_integer_value(json_array_get(shape, d)));
        }
        if (!strcmp(kind, "scalar")) assert_string_equal(f->dtype.str, json_string_value(json_object_get(w, "dtype")));
        if (!strcmp(kind, "list")) assert_int_equal(f->kind, VLA_NP_LIST);
        json_t *vals = json_object_get(w, "values");
        assert_true(vla_np_is_numeric(f));
        assert_int_equal(vla_np_count(f), (int64_t)json_array_size(vals));
        for (size_t i = 0; i < json_array_size(vals); i++) {
            double a = vla_np_at(f, (int64_t)i), b = json_number_value(json_array_get(vals, i));
            if (a != b) fail_msg("%s: %s[%zu] = %.17g, Python has %.17g", base, key, i, a, b);
        }
    }
    json_decref(want);
    vla_np_map_free(&m);
    free(buf);
}

static void test_goldens_decode(void **state) {
    (void)state;
    check_golden("req_pusht");
    check_golden("req_libero");
    check_golden("req_aloha");   /* nested maps → "images/cam_high" */
    check_golden("req_scalars"); /* npgeneric, big-endian, f2, i2, u2, bool, lists, bigints */
}

/* ---- writing: byte-equal to Python's msgpack ---- */

static void test_writer_bytes(void **state) {
    (void)state;
    float actions[16];
    for (int i = 0; i < 16; i++) actions[i] = (float)i * 0.25f - 1.0f;
    int64_t shape[2] = {8, 2};
    vla_np_writer w;
    assert_int_equal(vla_np_writer_init(&w), VLA_OK);
    for (int k = 0; k < 3; k++) {
        vla_np_writer_reset(&w);
        const char *name = k == 0 ? "reply_first.msgpack" : k == 1 ? "reply_next.msgpack" : "reply_metadata.msgpack";
        if (k < 2) {
            vla_np_put_map(&w, 2);
            vla_np_put_str(&w, "actions"), vla_np_put_f32_array(&w, actions, shape, 2);
            vla_np_put_str(&w, "server_timing"), vla_np_put_map(&w, k + 1);
            vla_np_put_str(&w, "infer_ms"), vla_np_put_float(&w, k ? 3.0625 : 12.5);
            if (k) vla_np_put_str(&w, "prev_total_ms"), vla_np_put_float(&w, 20.25);
        } else {
            vla_np_put_map(&w, 8);
            vla_np_put_str(&w, "policy"), vla_np_put_str(&w, "groot");
            vla_np_put_str(&w, "action_dim"), vla_np_put_int(&w, 2);
            vla_np_put_str(&w, "action_horizon"), vla_np_put_int(&w, 8);
            vla_np_put_str(&w, "fps"), vla_np_put_float(&w, 10.0);
            vla_np_put_str(&w, "state_keys"), vla_np_put_list(&w, 2);
            vla_np_put_str(&w, "observation.state"), vla_np_put_str(&w, "observation.environment_state");
            vla_np_put_str(&w, "n_cameras"), vla_np_put_int(&w, 0);
            vla_np_put_str(&w, "image_size"), vla_np_put_int(&w, 0);
            vla_np_put_str(&w, "rtc"), vla_np_put_bool(&w, true);
        }
        size_t n, gn;
        const uint8_t *d = vla_np_writer_data(&w, &n);
        uint8_t *g = golden(name, &gn);
        if (n != gn || memcmp(d, g, n)) fail_msg("%s: vla.c wrote %zu bytes, Python %zu (or different bytes)", name, n, gn);
        /* and it reads back */
        vla_np_map m;
        assert_int_equal(vla_np_parse(d, n, &m), VLA_OK);
        if (k < 2) {
            const vla_np_field *a = vla_np_get(&m, "actions");
            assert_non_null(a);
            assert_int_equal(a->numel, 16);
            for (int i = 0; i < 16; i++) assert_true(vla_np_at(a, i) == actions[i]);
            assert_non_null(vla_np_get(&m, "server_timing/infer_ms"));
        }
        vla_np_map_free(&m);
        free(g);
    }
    /* integers take msgpack's smallest form, as Python's packer picks them */
    static const int64_t ints[] = {0, 127, 128, 255, 256, 65535, 65536, 4294967295LL, 4294967296LL, -1, -32, -33,
                                   -128, -129, -32768, -32769, -2147483648LL, -2147483649LL};
    static const uint8_t first[] = {0x00, 0x7f, 0xcc, 0xcc, 0xcd, 0xcd, 0xce, 0xce, 0xcf, 0xff, 0xe0, 0xd0,
                                    0xd0, 0xd1, 0xd1, 0xd2, 0xd2, 0xd3};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        vla_np_writer_reset(&w);
        vla_np_put_int(&w, ints[i]);
        size_t n;
        const uint8_t *d = vla_np_writer_data(&w, &n);
        if (d[0] != first[i]) fail_msg("%lld packed with 0x%02x, msgpack's smallest form is 0x%02x", (long long)ints[i], d[0], first[i]);
    }
    vla_np_writer_free(&w);
}

/* ---- broken frames ---- */

static vla_status parse_bytes(const uint8_t *d, size_t n, void *user) {
    (void)user;
    vla_np_map m;
    vla_status st = vla_np_parse(d, n, &m);
    vla_np_map_free(&m);
    return st;
}

static void expect_error(const uint8_t *d, size_t n, const char *needle) {
    vla_np_map m;
    vla_status st = vla_np_parse(d, n, &m);
    if (st == VLA_OK) fail_msg("parsed, expected an error containing '%s'", needle);
    if (!strstr(vla_error_message(), needle)) fail_msg("error '%s' does not say '%s'", vla_error_message(), needle);
    printf("refused: %s\n", vla_error_message());
}

static void test_broken_frames(void **state) {
    (void)state;
    size_t n;
    uint8_t *g = golden("req_libero.msgpack", &n);
    test_sweep_prefixes("req_libero.msgpack", g, n, 1, NULL, 0, parse_bytes, NULL);
    int rejected = test_sweep_bit_flips("req_libero.msgpack", g, n, 0, 2000, 9, parse_bytes, NULL);
    printf("bit flips rejected: %d of 2000\n", rejected);
    assert_true(rejected > 100);
    uint8_t *extra = malloc(n + 1);
    memcpy(extra, g, n);
    extra[n] = 0xc0;
    expect_error(extra, n + 1, "after the request's map");
    free(extra), free(g);
    /* not a map */
    const uint8_t arr[] = {0x92, 0x01, 0x02};
    expect_error(arr, sizeof arr, "a request is a map");
    /* an array claiming 2^32 - 1 elements in 6 bytes */
    const uint8_t liar[] = {0x81, 0xa1, 'k', 0xdd, 0xff, 0xff, 0xff, 0xff};
    expect_error(liar, sizeof liar, "claims 4294967295 values");
    const uint8_t longstr[] = {0x81, 0xa1, 'k', 0xdb, 0x7f, 0xff, 0xff, 0xff, 'x'};
    expect_error(longstr, sizeof longstr, "claims 2147483647 bytes");
    uint8_t deep[80];
    size_t dn = 0;
    deep[dn++] = 0x81, deep[dn++] = 0xa1, deep[dn++] = 'k';
    for (int i = 0; i < 40; i++) deep[dn++] = 0x91;
    deep[dn++] = 0x00;
    expect_error(deep, dn, "nested deeper");
    const uint8_t never[] = {0x81, 0xa1, 'k', 0xc1};
    expect_error(never, sizeof never, "0xc1");
    const uint8_t dup[] = {0x82, 0xa1, 'k', 0x01, 0xa1, 'k', 0x02};
    expect_error(dup, sizeof dup, "k: key appears twice");
    const uint8_t ext[] = {0x81, 0xa1, 'k', 0xd4, 0x01, 0x00};
    expect_error(ext, sizeof ext, "k: msgpack type");
    /* ndarrays that lie about themselves: built with the writer's pieces */
    vla_np_writer w;
    assert_int_equal(vla_np_writer_init(&w), VLA_OK);
    struct {
        const char *dtype;
        int64_t shape[2];
        int nd, bytes;
        const char *needle;
    } bad[] = {
        {"<f4", {3, 0}, 1, 8, "observation.state: shape [3] of <f4 needs 12 bytes, data has 8"},
        {"<c8", {1, 0}, 1, 8, "dtype '<c8' is not a number type"},
        {"|O", {1, 0}, 1, 8, "dtype '|O' is not a number type"},
        {"<f3", {2, 0}, 1, 6, "dtype '<f3' is not a number type"},
        {"float32", {2, 0}, 1, 8, "dtype 'float32' is not a NumPy type string"},
        {"<f4", {1LL << 40, 1LL << 40}, 2, 8, "needs more than 8 bytes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vla_np_writer_reset(&w);
        vla_np_put_map(&w, 1);
        vla_np_put_str(&w, "observation.state");
        vla_np_put_map(&w, 4);
        vla_np_put_str(&w, "__ndarray__"), vla_np_put_bool(&w, true);
        vla_np_put_str(&w, "data");
        uint8_t zeros[8] = {0};
        /* data as a str of `bytes` bytes is what a non-bin packer sends; read as bytes too */
        char tmp[16];
        memset(tmp, 'a', sizeof tmp);
        tmp[bad[i].bytes] = 0;
        vla_np_put_str(&w, tmp);
        (void)zeros;
        vla_np_put_str(&w, "dtype"), vla_np_put_str(&w, bad[i].dtype);
        vla_np_put_str(&w, "shape"), vla_np_put_list(&w, bad[i].nd);
        for (int d = 0; d < bad[i].nd; d++) vla_np_put_int(&w, bad[i].shape[d]);
        size_t wn;
        const uint8_t *d = vla_np_writer_data(&w, &wn);
        expect_error(d, wn, bad[i].needle);
    }
    vla_np_writer_free(&w);
}

/* ---- the engine ---- */

/* A request map built in C (the robot API builds its maps the same way). */
typedef struct {
    vla_np_field f[8];
    vla_np_map m;
} cmap;

static void cm_add_f32(cmap *c, const char *key, const float *v, int64_t n0, int64_t n1) {
    vla_np_field *f = &c->f[c->m.n++];
    memset(f, 0, sizeof *f);
    snprintf(f->key, sizeof f->key, "%s", key);
    f->kind = VLA_NP_ARRAY;
    assert_int_equal(vla_np_parse_dtype("<f4", 3, &f->dtype), VLA_OK);
    f->ndim = n1 ? 2 : 1, f->shape[0] = n0, f->shape[1] = n1, f->numel = n0 * (n1 ? n1 : 1);
    f->data = (const uint8_t *)v;
    c->m.fields = c->f;
}

static void cm_add_int(cmap *c, const char *key, int64_t v) {
    vla_np_field *f = &c->f[c->m.n++];
    memset(f, 0, sizeof *f);
    snprintf(f->key, sizeof f->key, "%s", key);
    f->kind = VLA_NP_INT, f->i = v, f->f = (double)v;
    c->m.fields = c->f;
}

static vla_engine *open_engine(const char *dir, const char *keys) {
    vla_engine_opts o;
    vla_engine_opts_default(&o);
    o.policy_path = dir, o.keys = keys, o.seed = 21;
    vla_engine *e = NULL;
    if (vla_engine_open(&o, &e) != VLA_OK) fail_msg("engine: %s", vla_error_message());
    return e;
}

static void run_one(vla_engine *e, vla_session *s, const vla_np_map *m, float *out) {
    vla_request *r = NULL;
    if (vla_request_prepare(e, s, m, &r) != VLA_OK) fail_msg("prepare: %s", vla_error_message());
    if (vla_engine_run(e, &r, 1) != VLA_OK) fail_msg("run: %s", vla_error_message());
    const vla_engine_info *in = vla_engine_get_info(e);
    memcpy(out, vla_request_actions(r), (size_t)(in->horizon * in->action_dim) * sizeof(float));
    vla_request_free(r);
}

static void test_engine_by_hand(void **state) {
    (void)state;
    const char *dir = fixture_checkpoint(test_tmp_path("pusht_ckpt"), false);
    vla_engine *e = open_engine(dir, NULL);
    const vla_engine_info *in = vla_engine_get_info(e);
    assert_int_equal(in->horizon, 8);
    assert_int_equal(in->action_dim, 2);
    assert_int_equal(in->state_frame, 18);
    assert_int_equal(in->n_obs_steps, 2);
    assert_true(in->relative_actions && in->rtc);
    /* the Python-packed PushT request */
    size_t n;
    uint8_t *g = golden("req_pusht.msgpack", &n);
    vla_np_map m;
    assert_int_equal(vla_np_parse(g, n, &m), VLA_OK);
    vla_session *s;
    assert_int_equal(vla_session_create(e, 5, &s), VLA_OK);
    float got[16];
    run_one(e, s, &m, got);
    /* by hand: the frame twice (history starts by repeating it), min-max to
     * [-1, 1] over [0, 512], sample with the key the session gives its first
     * request, then per step y·(std + eps) + mean, plus observation.state */
    vla_pretrained pm;
    assert_int_equal(vla_pretrained_load(dir, test_cpu_backend(), &pm), VLA_OK);
    float st[36];
    const vla_np_field *os = vla_np_get(&m, "observation.state"), *es = vla_np_get(&m, "observation.environment_state");
    for (int f = 0; f < 2; f++) {
        for (int i = 0; i < 2; i++) st[f * 18 + i] = (float)vla_np_at(os, i);
        for (int i = 0; i < 16; i++) st[f * 18 + 2 + i] = (float)vla_np_at(es, i);
    }
    for (int i = 0; i < 36; i++) st[i] = 2.0f * (st[i] - 0.0f) / 512.0f - 1.0f;
    uint64_t key = (uint64_t)5 << 24;
    int32_t emb = 0;
    uint8_t valid = 0;
    float img[3 * 96 * 96] = {0}, a[16];
    const char *task = FIX_TASK;
    vla_observation ob = {.n_samples = 1, .task = &task, .images = img, .image_valid = &valid, .state = st,
                          .embodiment = &emb, .seed = 21, .sample_keys = &key};
    assert_int_equal(vla_policy_sample_actions(pm.policy, &ob, a), VLA_OK);
    for (int h = 0; h < 8; h++)
        for (int d = 0; d < 2; d++) {
            float mean = (float)(d ? -h : h), sd = 5.0f + 3.0f * (float)h;
            float want = a[h * 2 + d] * (sd + 1e-8f) + mean + (float)vla_np_at(os, d);
            if (fabsf(got[h * 2 + d] - want) > 1e-4f * (1 + fabsf(want)))
                fail_msg("step %d dim %d: engine %.6f, by hand %.6f", h, d, got[h * 2 + d], want);
        }
    vla_pretrained_free(&pm);
    /* the history: a second request with another frame differs from the same frame sent fresh */
    float got2[16], fresh[16];
    run_one(e, s, &m, got2); /* same frame again: history [f, f], as the first */
    vla_session *s2;
    assert_int_equal(vla_session_create(e, 5, &s2), VLA_OK);
    cmap c = {0};
    float os2[2] = {100, 50}, es2[16];
    for (int i = 0; i < 16; i++) es2[i] = (float)vla_np_at(es, i);
    cm_add_f32(&c, "observation.state", os2, 2, 0);
    cm_add_f32(&c, "observation.environment_state", es2, 16, 0);
    cm_add_int(&c, "seed", 77);
    float h1[16], h2[16];
    run_one(e, s, &c.m, h1);  /* history [golden frame, new frame] */
    run_one(e, s2, &c.m, h2); /* a fresh session: [new, new] */
    assert_memory_not_equal(h1, h2, sizeof h1);
    /* the same two frames sent at once as [2, w] arrays equal the session's history */
    float os3[4] = {(float)vla_np_at(os, 0), (float)vla_np_at(os, 1), 100, 50}, es3[32];
    for (int i = 0; i < 16; i++) es3[i] = es2[i], es3[16 + i] = es2[i];
    cmap c3 = {0};
    cm_add_f32(&c3, "observation.state", os3, 2, 2);
    cm_add_f32(&c3, "observation.environment_state", es3, 2, 16);
    cm_add_int(&c3, "seed", 77);
    run_one(e, s2, &c3.m, fresh);
    assert_memory_equal(h1, fresh, sizeof h1);
    (void)got2;
    vla_session_free(s), vla_session_free(s2);
    vla_np_map_free(&m);
    free(g);
    vla_engine_free(e);
}

static void expect_refused(vla_engine *e, vla_session *s, const vla_np_map *m, const char *needle) {
    vla_request *r = NULL;
    vla_status st = vla_request_prepare(e, s, m, &r);
    if (st == VLA_OK) fail_msg("accepted; expected an error saying '%s'", needle);
    if (!strstr(vla_error_message(), needle)) fail_msg("error '%s' does not say '%s'", vla_error_message(), needle);
    printf("refused: %s\n", vla_error_message());
}

static void test_engine_refuses(void **state) {
    (void)state;
    const char *dir = fixture_checkpoint(test_tmp_path("cam_ckpt"), true);
    vla_engine *e = open_engine(dir, "observation/state:observation.state,observation/image:observation.images.top");
    vla_session *s;
    assert_int_equal(vla_session_create(e, 1, &s), VLA_OK);
    float st2[2] = {10, 20}, st3[3] = {1, 2, 3}, nanst[2] = {1, NAN};
    static uint8_t img[32 * 32 * 3], small[8 * 8 * 3];
    float fimg[32 * 32 * 3] = {0};
    /* a good one, with the client's own key names */
    cmap c = {0};
    cm_add_f32(&c, "observation/state", st2, 2, 0);
    vla_np_field *im = &c.f[c.m.n++];
    memset(im, 0, sizeof *im);
    snprintf(im->key, sizeof im->key, "observation/image");
    im->kind = VLA_NP_ARRAY, im->ndim = 3, im->shape[0] = 32, im->shape[1] = 32, im->shape[2] = 3, im->numel = 32 * 32 * 3;
    assert_int_equal(vla_np_parse_dtype("|u1", 3, &im->dtype), VLA_OK);
    im->data = img;
    float out[8];
    run_one(e, s, &c.m, out);
    /* missing state */
    cmap m0 = {0};
    m0.m.fields = m0.f;
    expect_refused(e, s, &m0.m, "observation.state: missing");
    /* wrong width */
    cmap m1 = c;
    m1.m.fields = m1.f;
    cm_add_f32(&m1, "x", st3, 3, 0);
    m1.f[0] = m1.f[--m1.m.n], snprintf(m1.f[0].key, sizeof m1.f[0].key, "observation/state");
    expect_refused(e, s, &m1.m, "observation.state [3] = 3 values per frame; the policy was trained on 2");
    /* NaN */
    cmap m2 = c;
    m2.m.fields = m2.f;
    m2.f[0].data = (const uint8_t *)nanst;
    expect_refused(e, s, &m2.m, "observation.state: element 1 is nan");
    /* image: float instead of uint8, wrong size, missing */
    cmap m3 = c;
    m3.m.fields = m3.f;
    assert_int_equal(vla_np_parse_dtype("<f4", 3, &m3.f[1].dtype), VLA_OK);
    m3.f[1].data = (const uint8_t *)fimg;
    expect_refused(e, s, &m3.m, "observation/image: an image is a uint8 array (|u1), not <f4");
    cmap m4 = c;
    m4.m.fields = m4.f;
    m4.f[1].shape[0] = m4.f[1].shape[1] = 8, m4.f[1].numel = 8 * 8 * 3, m4.f[1].data = small;
    expect_refused(e, s, &m4.m, "observation/image: shape [8, 8, 3]; the policy reads [32, 32, 3]");
    cmap m5 = c;
    m5.m.fields = m5.f;
    m5.m.n = 1;
    expect_refused(e, s, &m5.m, "the policy reads 1 camera(s)");
    /* task that is not a string; seed that is not an integer */
    cmap m6 = c;
    m6.m.fields = m6.f;
    cm_add_int(&m6, "prompt", 3);
    expect_refused(e, s, &m6.m, "prompt: the instruction is a string");
    cmap m7 = c;
    m7.m.fields = m7.f;
    cm_add_int(&m7, "seed", -4);
    expect_refused(e, s, &m7.m, "seed: an integer in [0,");
    /* RTC fields: delay without actions, wrong width, too long */
    cmap m8 = c;
    m8.m.fields = m8.f;
    cm_add_int(&m8, "inference_delay", 2);
    expect_refused(e, s, &m8.m, "inference_delay: given without prev_chunk_left_over");
    float prev[12] = {0};
    cmap m9 = c;
    m9.m.fields = m9.f;
    cm_add_f32(&m9, "prev_chunk_left_over", prev, 4, 3);
    expect_refused(e, s, &m9.m, "prev_chunk_left_over: shape [4, 3]; rows are actions of 2 dims");
    cmap m10 = c;
    m10.m.fields = m10.f;
    cm_add_f32(&m10, "prev_chunk_left_over", prev, 6, 2);
    expect_refused(e, s, &m10.m, "1 ≤ n ≤ 4 (the chunk length)");
    cmap m11 = c;
    m11.m.fields = m11.f;
    cm_add_f32(&m11, "prev_chunk_left_over", prev, 2, 2);
    cm_add_int(&m11, "inference_delay", 3);
    expect_refused(e, s, &m11.m, "inference_delay: an integer in [0, 2]");
    vla_session_free(s);
    vla_engine_free(e);
    /* a bad mapping is a usage error */
    vla_engine_opts o;
    vla_engine_opts_default(&o);
    o.policy_path = dir, o.keys = "observation/state=observation.state";
    assert_int_equal(vla_engine_open(&o, &e), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "is not CLIENT_KEY:LEROBOT_KEY"));
}

/* One PushT observation with its noise seed, the same every time. */
static void fixed_observation(cmap *c) {
    static float os[2] = {250, 260}, es[16];
    for (int i = 0; i < 16; i++) es[i] = (float)(30 * i % 500);
    cm_add_f32(c, "observation.state", os, 2, 0);
    cm_add_f32(c, "observation.environment_state", es, 16, 0);
    cm_add_int(c, "seed", 4);
}

static void test_engine_rtc(void **state) {
    (void)state;
    const char *dir = fixture_checkpoint(test_tmp_path("pusht_rtc"), false);
    vla_engine *e = open_engine(dir, NULL);
    vla_session *s;
    assert_int_equal(vla_session_create(e, 2, &s), VLA_OK);
    cmap c = {0};
    fixed_observation(&c);
    float free_[16], held[16];
    run_one(e, s, &c.m, free_);
    /* committed actions far from the free chunk: 6 left over, 3 of them run before the reply */
    float prev[12];
    for (int h = 0; h < 6; h++) prev[h * 2] = 300 + 2.0f * (float)h, prev[h * 2 + 1] = 200 - (float)h;
    vla_session_reset(s);
    cmap r = c;
    r.m.fields = r.f;
    cm_add_f32(&r, "prev_chunk_left_over", prev, 6, 2);
    cm_add_int(&r, "inference_delay", 3);
    run_one(e, s, &r.m, held);
    for (int h = 0; h < 3; h++)
        for (int d = 0; d < 2; d++) {
            int i = h * 2 + d;
            printf("step %d dim %d: free %.2f held %.2f committed %.2f\n", h, d, free_[i], held[i], prev[i]);
            assert_true(fabsf(held[i] - prev[i]) < 0.25f * fabsf(free_[i] - prev[i]));
        }
    vla_session_free(s);
    vla_engine_free(e);
}

/* The engine's precision: auto is fp32 on the CPU (said in the metadata),
 * bf16 on request (--precision or $VLA_PRECISION) — every chunk then runs
 * through the bf16 GEMMs with the weights held for the engine's life, near
 * the f32 chunk — and FP8 is refused, naming what to give. */
static void engine_with(const char *dir, const char *precision, vla_engine **e) {
    vla_engine_opts o;
    vla_engine_opts_default(&o);
    o.policy_path = dir, o.seed = 21, o.precision = precision;
    if (vla_engine_open(&o, e) != VLA_OK) fail_msg("engine: %s", vla_error_message());
}

static void chunk_of(vla_engine *e, float *out) {
    vla_session *s;
    assert_int_equal(vla_session_create(e, 3, &s), VLA_OK);
    cmap c = {0};
    fixed_observation(&c);
    for (int k = 0; k < 2; k++) { /* two chunks: the second on the held casts, the same answer */
        float a[16];
        run_one(e, s, &c.m, k ? a : out);
        vla_session_reset(s);
        if (k) assert_memory_equal(a, out, sizeof a);
    }
    vla_session_free(s);
}

static void test_engine_precision(void **state) {
    (void)state;
    const char *dir = fixture_checkpoint(test_tmp_path("pusht_prec"), false);
    unsetenv("VLA_PRECISION");
    vla_engine *e;
    float f32[16], b16[16];
    engine_with(dir, NULL, &e);
    assert_string_equal(vla_engine_get_info(e)->precision, "fp32");
    assert_string_equal(vla_engine_get_info(e)->device, test_backend()->name);
    chunk_of(e, f32);
    vla_np_writer w;
    assert_int_equal(vla_np_writer_init(&w), VLA_OK);
    vla_engine_write_metadata(e, &w);
    size_t wn;
    const uint8_t *wd = vla_np_writer_data(&w, &wn);
    vla_np_map m;
    assert_int_equal(vla_np_parse(wd, wn, &m), VLA_OK);
    const vla_np_field *pf = vla_np_get(&m, "precision");
    assert_non_null(pf);
    assert_true(pf->len == 4 && !memcmp(pf->str, "fp32", 4));
    vla_np_map_free(&m);
    vla_np_writer_free(&w);
    vla_engine_free(e);
    setenv("VLA_PRECISION", "bf16", 1);
    engine_with(dir, "auto", &e);
    unsetenv("VLA_PRECISION");
    assert_string_equal(vla_engine_get_info(e)->precision, "bf16");
    chunk_of(e, b16);
    vla_engine_free(e);
    double worst = 0, span = 0;
    for (int i = 0; i < 16; i++) worst = fmax(worst, fabs((double)b16[i] - f32[i])), span = fmax(span, fabs((double)f32[i]));
    print_message("bf16 vs fp32 chunk: max |diff| %.4g of max |a| %.4g\n", worst, span);
    assert_true(worst > 0);           /* the bf16 GEMMs ran */
    assert_true(worst < 0.05 * span); /* and stay near the f32 chunk */
    vla_engine_opts o;
    vla_engine_opts_default(&o);
    o.policy_path = dir, o.precision = "fp8";
    assert_int_equal(vla_engine_open(&o, &e), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "give auto, fp32 or bf16"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_engine_precision),
        cmocka_unit_test(test_goldens_decode),  cmocka_unit_test(test_writer_bytes),
        cmocka_unit_test(test_broken_frames),   cmocka_unit_test(test_engine_by_hand),
        cmocka_unit_test(test_engine_refuses),  cmocka_unit_test(test_engine_rtc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
