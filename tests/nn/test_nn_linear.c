/* test_nn_linear.c — linear, embedding, per-embodiment linear and ViT patch
 * embedding: PyTorch goldens and finite-difference gradient checks; the
 * linear's bf16 / FP8 roles against a float64 reference. */
#include "base/dtype.h"
#include "nn/embedding.h"
#include "nn/embodiment_linear.h"
#include "nn/linear.h"
#include "nn/patch_embed.h"
#include "nn_test.h"
#include "tensor/ops.h"

#define RTOL 1e-4
#define ATOL 1e-5

/* ---- linear ---- */
typedef struct {
    const vla_ops *ops;
    float *x, *w, *b, *y;
    const float *dy;
    int64_t n, in, out;
} linear_ctx;

static double linear_loss(void *p) {
    linear_ctx *c = p;
    vla_linear_forward(c->ops, c->y, c->x, c->w, c->b, c->n, c->in, c->out);
    return dot_f32(c->y, c->dy, c->n * c->out);
}

static void test_linear(void **state) {
    (void)state;
    const vla_ops *ops = test_cpu_backend();
    golden *g = golden_load("linear");
    int64_t n = 5, in = 7, out = 4;
    float *x = golden_f32(g, "x", n * in), *w = golden_f32(g, "w", out * in), *b = golden_f32(g, "b", out);
    float *dy = golden_f32(g, "dy", n * out), *y = fzeros(n * out);
    vla_linear_forward(ops, y, x, w, b, n, in, out);
    check_close("linear y", y, golden_f32(g, "y", -1), n * out, RTOL, ATOL);
    float *dx = fzeros(n * in), *dw = fzeros(out * in), *db = fzeros(out);
    vla_linear_backward(ops, dx, dw, db, dy, x, w, n, in, out);
    check_close("linear dx", dx, golden_f32(g, "dx", -1), n * in, RTOL, ATOL);
    check_close("linear dw", dw, golden_f32(g, "dw", -1), out * in, RTOL, ATOL);
    check_close("linear db", db, golden_f32(g, "db", -1), out, RTOL, ATOL);
    /* gradients accumulate: a second backward doubles them */
    vla_linear_backward(ops, dx, dw, db, dy, x, w, n, in, out);
    float *dw2 = golden_f32(g, "dw", -1);
    for (int64_t i = 0; i < out * in; i++) dw2[i] *= 2.0f;
    check_close("linear dw accumulated", dw, dw2, out * in, RTOL, ATOL);
    /* finite differences, on fresh single gradients */
    memset(dx, 0, (size_t)(n * in) * 4);
    memset(dw, 0, (size_t)(out * in) * 4);
    memset(db, 0, (size_t)out * 4);
    vla_linear_backward(ops, dx, dw, db, dy, x, w, n, in, out);
    linear_ctx c = {ops, x, w, b, y, dy, n, in, out};
    double s = abs_dot(y, dy, n * out);
    fd_check("linear x", linear_loss, &c, x, dx, n * in, 1, 1e-2, 1e-2, s);
    fd_check("linear w", linear_loss, &c, w, dw, out * in, 2, 1e-2, 1e-2, s);
    fd_check("linear b", linear_loss, &c, b, db, out, 3, 1e-2, 1e-2, s);
    /* no bias */
    vla_linear_forward(ops, y, x, w, NULL, n, in, out);
    for (int64_t t = 0; t < n; t++)
        for (int64_t o = 0; o < out; o++) assert_true(fabsf(y[t * out + o] + b[o] - golden_f32(g, "y", -1)[t * out + o]) < 1e-4f);
    golden_free(g);
}

/* ---- embedding ---- */
/* The layer's precision wires each GEMM's operands to the right role and
 * format (TE's HYBRID): forward reads x and W as E4M3, dgrad reads dy as
 * E5M2 and W as E4M3, wgrad dy as E5M2 and x as E4M3, each with its own
 * scale; every role's amax is max |operand|; the bias stays f32. Against a
 * float64 loop over operands rounded by base/dtype.h's conversions (checked
 * exhaustively in tests/base/test_dtype.c); bf16 the same way. */
static float q8(int e5m2, float s, float v) {
    return (e5m2 ? vla_e5m2_to_f32(vla_f32_to_e5m2(v * s)) : vla_e4m3_to_f32(vla_f32_to_e4m3(v * s))) * (1.0f / s);
}

static float qread(vla_precision mode, int e5m2, float s, float v) {
    return mode == VLA_PREC_BF16 ? vla_bf16_to_f32(vla_f32_to_bf16(v)) : q8(e5m2, s, v);
}

static void test_linear_precision(void **state) {
    (void)state;
    const vla_ops *ops = test_cpu_backend();
    enum { N = 9, IN = 13, OUT = 6 };
    float x[N * IN], w[OUT * IN], b[OUT], dy[N * OUT];
    for (int i = 0; i < N * IN; i++) x[i] = 3.0f * sinf(0.37f * (float)i + 0.1f);
    for (int i = 0; i < OUT * IN; i++) w[i] = 0.05f * cosf(0.91f * (float)i);
    for (int i = 0; i < OUT; i++) b[i] = 0.1f * (float)i;
    for (int i = 0; i < N * OUT; i++) dy[i] = 1e-3f * sinf(1.7f * (float)i);
    for (int mode = VLA_PREC_BF16; mode <= VLA_PREC_FP8; mode++) {
        float scale[3] = {448.0f / 3.0f, 448.0f / 0.05f, 57344.0f / 1e-3f}, amax[3] = {0, 0, 0};
        vla_linear_prec q = {(vla_precision)mode,
                             {VLA_FP8_E4M3, &scale[0], &amax[0]},
                             {VLA_FP8_E4M3, &scale[1], &amax[1]},
                             {VLA_FP8_E5M2, &scale[2], &amax[2]},
                             NULL, NULL};
        float y[N * OUT], dx[N * IN] = {0}, dw[OUT * IN] = {0}, db[OUT] = {0};
        vla_linear_forward_q(ops, &q, y, x, w, b, N, IN, OUT);
        vla_linear_backward_q(ops, &q, dx, dw, db, dy, x, w, N, IN, OUT);
        vla_precision m = (vla_precision)mode;
        for (int i = 0; i < N; i++)
            for (int o = 0; o < OUT; o++) {
                double r = b[o], mag = fabs(b[o]);
                for (int k = 0; k < IN; k++) {
                    double t = (double)qread(m, 0, scale[0], x[i * IN + k]) * qread(m, 0, scale[1], w[o * IN + k]);
                    r += t, mag += fabs(t);
                }
                assert_true(fabs(y[i * OUT + o] - r) <= 1e-6 * mag + 1e-12);
            }
        for (int i = 0; i < N; i++)
            for (int k = 0; k < IN; k++) {
                double r = 0, mag = 0;
                for (int o = 0; o < OUT; o++) {
                    double t = (double)qread(m, 1, scale[2], dy[i * OUT + o]) * qread(m, 0, scale[1], w[o * IN + k]);
                    r += t, mag += fabs(t);
                }
                assert_true(fabs(dx[i * IN + k] - r) <= 1e-6 * mag + 1e-15);
            }
        for (int o = 0; o < OUT; o++) {
            double rb = 0;
            for (int i = 0; i < N; i++) rb += dy[i * OUT + o]; /* f32 operands: the bias gradient is not rounded */
            assert_true(fabs(db[o] - rb) <= 1e-6 * fabs(rb) + 1e-9);
            for (int k = 0; k < IN; k++) {
                double r = 0, mag = 0;
                for (int i = 0; i < N; i++) {
                    double t = (double)qread(m, 1, scale[2], dy[i * OUT + o]) * qread(m, 0, scale[0], x[i * IN + k]);
                    r += t, mag += fabs(t);
                }
                assert_true(fabs(dw[o * IN + k] - r) <= 1e-6 * mag + 1e-15);
            }
        }
        float mx = 0, mw = 0, md = 0;
        for (int i = 0; i < N * IN; i++) mx = fmaxf(mx, fabsf(x[i]));
        for (int i = 0; i < OUT * IN; i++) mw = fmaxf(mw, fabsf(w[i]));
        for (int i = 0; i < N * OUT; i++) md = fmaxf(md, fabsf(dy[i]));
        if (m == VLA_PREC_FP8) assert_true(amax[0] == mx && amax[1] == mw && amax[2] == md);
        else assert_true(amax[0] == 0 && amax[1] == 0 && amax[2] == 0); /* bf16 records nothing */
    }
}

static void test_embedding(void **state) {
    (void)state;
    golden *g = golden_load("embedding");
    int64_t n = 6, vocab = 10, dim = 5;
    int32_t *ids = golden_i32(g, "ids", n);
    float *table = golden_f32(g, "table", vocab * dim), *dy = golden_f32(g, "dy", n * dim), *y = fzeros(n * dim);
    assert_int_equal(vla_embedding_forward(test_cpu_backend(), y, ids, table, n, vocab, dim), VLA_OK);
    check_close("embedding y", y, golden_f32(g, "y", -1), n * dim, 0, 0);
    float *dt = fzeros(vocab * dim);
    vla_embedding_backward(test_cpu_backend(), dt, dy, ids, n, dim);
    check_close("embedding dtable", dt, golden_f32(g, "dtable", -1), vocab * dim, RTOL, ATOL);
    /* bad ids are refused */
    ids[2] = 10;
    assert_int_equal(vla_embedding_forward(test_cpu_backend(), y, ids, table, n, vocab, dim), VLA_ERR_INVALID_ARG);
    assert_non_null(strstr(vla_error_message(), "token 2"));
    ids[2] = -1;
    assert_int_equal(vla_embedding_forward(test_cpu_backend(), y, ids, table, n, vocab, dim), VLA_ERR_INVALID_ARG);
    golden_free(g);
}

/* ---- embodiment linear ---- */
typedef struct {
    const vla_ops *ops;
    vla_emb_linear_config cfg;
    float *x, *w, *b, *y;
    const float *dy;
    const int32_t *ids, *cu;
    int32_t n_seg;
    int64_t n;
} emb_ctx;

static double emb_loss(void *p) {
    emb_ctx *c = p;
    assert_int_equal(
        vla_embodiment_linear_forward(c->ops, &c->cfg, c->y, c->x, c->w, c->b, c->ids, c->cu, c->n_seg, c->n),
        VLA_OK);
    return dot_f32(c->y, c->dy, c->n * c->cfg.out_dim);
}

static void test_embodiment_linear(void **state) {
    (void)state;
    const vla_ops *ops = test_cpu_backend();
    golden *g = golden_load("embodiment_linear");
    vla_emb_linear_config cfg = {.n_emb = 4, .in_dim = 3, .out_dim = 5};
    int64_t n = 7;
    int32_t *cu = golden_i32(g, "cu", 4), *ids = golden_i32(g, "ids", 3);
    float *x = golden_f32(g, "x", n * 3), *w = golden_f32(g, "w", 4 * 3 * 5), *b = golden_f32(g, "b", 4 * 5);
    float *dy = golden_f32(g, "dy", n * 5), *y = fzeros(n * 5);
    assert_int_equal(vla_embodiment_linear_forward(ops, &cfg, y, x, w, b, ids, cu, 3, n), VLA_OK);
    check_close("emb_linear y", y, golden_f32(g, "y", -1), n * 5, RTOL, ATOL);
    float *dx = fzeros(n * 3), *dw = fzeros(60), *db = fzeros(20);
    assert_int_equal(vla_embodiment_linear_backward(ops, &cfg, dx, dw, db, dy, x, w, ids, cu, 3, n), VLA_OK);
    check_close("emb_linear dx", dx, golden_f32(g, "dx", -1), n * 3, RTOL, ATOL);
    check_close("emb_linear dw", dw, golden_f32(g, "dw", -1), 60, RTOL, ATOL);
    check_close("emb_linear db", db, golden_f32(g, "db", -1), 20, RTOL, ATOL);
    emb_ctx c = {ops, cfg, x, w, b, y, dy, ids, cu, 3, n};
    double s = abs_dot(y, dy, n * 5);
    fd_check("emb_linear x", emb_loss, &c, x, dx, n * 3, 4, 1e-2, 1e-2, s);
    fd_check("emb_linear w", emb_loss, &c, w, dw, 60, 5, 1e-2, 1e-2, s);
    fd_check("emb_linear b", emb_loss, &c, b, db, 20, 6, 1e-2, 1e-2, s);
    /* an embodiment id out of range and a bad cu_seqlens are refused */
    int32_t bad_ids[3] = {3, 4, 0};
    assert_int_equal(vla_embodiment_linear_forward(ops, &cfg, y, x, w, b, bad_ids, cu, 3, n), VLA_ERR_INVALID_ARG);
    int32_t bad_cu[4] = {0, 3, 2, 7};
    assert_int_equal(vla_embodiment_linear_forward(ops, &cfg, y, x, w, b, ids, bad_cu, 3, n), VLA_ERR_INVALID_ARG);
    golden_free(g);
}

/* ---- patch embedding ---- */
typedef struct {
    const vla_ops *ops;
    vla_patch_embed_config cfg;
    float *img, *w, *b, *y, *patches;
    const float *dy;
    int64_t n_img, ny;
} patch_ctx;

static double patch_loss(void *p) {
    patch_ctx *c = p;
    assert_int_equal(vla_patch_embed_forward(c->ops, &c->cfg, c->y, c->patches, c->img, c->w, c->b, c->n_img), VLA_OK);
    return dot_f32(c->y, c->dy, c->ny);
}

static void test_patch_embed(void **state) {
    (void)state;
    const vla_ops *ops = test_cpu_backend();
    golden *g = golden_load("patch_embed");
    vla_patch_embed_config cfg = {.channels = 3, .height = 8, .width = 8, .patch = 4, .dim = 5};
    int64_t n_img = 2, tokens = n_img * vla_patch_embed_tokens(&cfg), ny = tokens * 5;
    assert_int_equal(tokens, 8);
    int64_t npix = n_img * 3 * 8 * 8, nw = 5 * 3 * 4 * 4;
    float *img = golden_f32(g, "img", npix), *w = golden_f32(g, "w", nw), *b = golden_f32(g, "b", 5);
    float *dy = golden_f32(g, "dy", ny), *y = fzeros(ny);
    float *patches = fzeros(vla_patch_embed_patches_floats(&cfg, n_img));
    float *scratch = fzeros(vla_patch_embed_patches_floats(&cfg, n_img));
    assert_int_equal(vla_patch_embed_forward(ops, &cfg, y, patches, img, w, b, n_img), VLA_OK);
    check_close("patch y", y, golden_f32(g, "y", -1), ny, RTOL, ATOL);
    float *dimg = fzeros(npix), *dw = fzeros(nw), *db = fzeros(5);
    vla_patch_embed_backward(ops, &cfg, dimg, dw, db, scratch, dy, patches, w, n_img);
    check_close("patch dimg", dimg, golden_f32(g, "dimg", -1), npix, RTOL, ATOL);
    check_close("patch dw", dw, golden_f32(g, "dw", -1), nw, RTOL, ATOL);
    check_close("patch db", db, golden_f32(g, "db", -1), 5, RTOL, ATOL);
    patch_ctx c = {ops, cfg, img, w, b, y, patches, dy, n_img, ny};
    double s = abs_dot(y, dy, ny);
    fd_check("patch img", patch_loss, &c, img, dimg, npix, 7, 1e-2, 1e-2, s);
    fd_check("patch w", patch_loss, &c, w, dw, nw, 8, 1e-2, 1e-2, s);
    vla_patch_embed_config bad = cfg;
    bad.width = 10;
    assert_int_equal(vla_patch_embed_forward(ops, &bad, y, patches, img, w, b, n_img), VLA_ERR_INVALID_ARG);
    golden_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_linear_precision),
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_embodiment_linear),
        cmocka_unit_test(test_patch_embed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
