/* test_nn_norms.c — LayerNorm, RMSNorm (plain and Gemma's 1 + w), AdaLN
 * (GR00T: SiLU → Linear → modulated LayerNorm) and π0.5's AdaRMSNorm with
 * its gated residual: PyTorch goldens and finite differences. */
#include "nn/activations.h"
#include "nn/adaln.h"
#include "nn/adarmsnorm.h"
#include "nn/layernorm.h"
#include "nn/linear.h"
#include "nn/rmsnorm.h"
#include "nn_test.h"
#include "tensor/ops.h"

#define RTOL 1e-4
#define ATOL 2e-5

/* ---- layernorm ---- */
typedef struct {
    float *x, *w, *b, *y, *mean, *rstd;
    const float *dy;
    int64_t n, dim;
} ln_ctx;

static double ln_loss(void *p) {
    ln_ctx *c = p;
    vla_layernorm_forward(test_cpu_backend(), c->y, c->mean, c->rstd, c->x, c->w, c->b, c->n, c->dim, 1e-5f);
    return dot_f32(c->y, c->dy, c->n * c->dim);
}

static void test_layernorm(void **state) {
    (void)state;
    golden *g = golden_load("layernorm");
    int64_t n = 4, d = 16;
    float *x = golden_f32(g, "x", n * d), *w = golden_f32(g, "w", d), *b = golden_f32(g, "b", d);
    float *dy = golden_f32(g, "dy", n * d), *y = fzeros(n * d), *mean = fzeros(n), *rstd = fzeros(n);
    vla_layernorm_forward(test_cpu_backend(), y, mean, rstd, x, w, b, n, d, 1e-5f);
    check_close("layernorm y", y, golden_f32(g, "y", -1), n * d, RTOL, ATOL);
    float *dx = fzeros(n * d), *dw = fzeros(d), *db = fzeros(d);
    vla_layernorm_backward(test_cpu_backend(), dx, dw, db, dy, x, w, mean, rstd, n, d);
    check_close("layernorm dx", dx, golden_f32(g, "dx", -1), n * d, RTOL, ATOL);
    check_close("layernorm dw", dw, golden_f32(g, "dw", -1), d, RTOL, ATOL);
    check_close("layernorm db", db, golden_f32(g, "db", -1), d, RTOL, ATOL);
    ln_ctx c = {x, w, b, y, mean, rstd, dy, n, d};
    double s = abs_dot(y, dy, n * d);
    fd_check("layernorm x", ln_loss, &c, x, dx, n * d, 11, 1e-2, 1e-2, s);
    fd_check("layernorm w", ln_loss, &c, w, dw, d, 12, 1e-2, 1e-2, s);
    fd_check("layernorm b", ln_loss, &c, b, db, d, 13, 1e-2, 1e-2, s);
    golden_free(g);
}

/* ---- rmsnorm ---- */
typedef struct {
    float *x, *w, *y, *rstd;
    const float *dy;
    bool one_plus;
    int64_t n, dim;
} rms_ctx;

static double rms_loss(void *p) {
    rms_ctx *c = p;
    vla_rmsnorm_forward(test_cpu_backend(), c->y, c->rstd, c->x, c->w, c->one_plus, c->n, c->dim, 1e-6f);
    return dot_f32(c->y, c->dy, c->n * c->dim);
}

static void test_rmsnorm(void **state) {
    (void)state;
    golden *g = golden_load("rmsnorm");
    int64_t n = 4, d = 16;
    float *x = golden_f32(g, "x", n * d), *w = golden_f32(g, "w", d), *dy = golden_f32(g, "dy", n * d);
    for (int one_plus = 0; one_plus <= 1; one_plus++) {
        float *y = fzeros(n * d), *rstd = fzeros(n), *dx = fzeros(n * d), *dw = fzeros(d);
        vla_rmsnorm_forward(test_cpu_backend(), y, rstd, x, w, one_plus, n, d, 1e-6f);
        check_close("rmsnorm y", y, golden_f32(g, one_plus ? "y1" : "y", -1), n * d, RTOL, ATOL);
        vla_rmsnorm_backward(test_cpu_backend(), dx, dw, dy, x, w, one_plus, rstd, n, d);
        check_close("rmsnorm dx", dx, golden_f32(g, one_plus ? "dx1" : "dx", -1), n * d, RTOL, ATOL);
        check_close("rmsnorm dw", dw, golden_f32(g, one_plus ? "dw1" : "dw", -1), d, RTOL, ATOL);
        rms_ctx c = {x, w, y, rstd, dy, one_plus, n, d};
        double s = abs_dot(y, dy, n * d);
        fd_check("rmsnorm x", rms_loss, &c, x, dx, n * d, 21 + one_plus, 1e-2, 1e-2, s);
        fd_check("rmsnorm w", rms_loss, &c, w, dw, d, 23 + one_plus, 1e-2, 1e-2, s);
    }
    golden_free(g);
}

/* ---- AdaLN, composed as GR00T does: mod = Linear(SiLU(temb)) ---- */
typedef struct {
    const vla_ops *ops;
    float *x, *temb, *lw, *lb;
    float *act, *mod, *y, *mean, *rstd;
    const float *dy;
    const int32_t *cu;
    int32_t n_seg;
    int64_t n, dim;
} adaln_ctx;

static double adaln_loss(void *p) {
    adaln_ctx *c = p;
    vla_silu_forward(test_cpu_backend(), c->act, c->temb, c->n_seg * c->dim);
    vla_linear_forward(c->ops, c->mod, c->act, c->lw, c->lb, c->n_seg, c->dim, 2 * c->dim);
    assert_int_equal(vla_adaln_forward(test_cpu_backend(), c->y, c->mean, c->rstd, c->x, c->mod, c->cu, c->n_seg, c->n, c->dim, 1e-5f, NULL),
                     VLA_OK);
    return dot_f32(c->y, c->dy, c->n * c->dim);
}

static void test_adaln(void **state) {
    (void)state;
    const vla_ops *ops = test_cpu_backend();
    golden *g = golden_load("adaln");
    int64_t n = 7, d = 8;
    int32_t S = 2;
    adaln_ctx c = {.ops = ops, .n_seg = S, .n = n, .dim = d};
    c.cu = golden_i32(g, "cu", S + 1);
    c.x = golden_f32(g, "x", n * d);
    c.temb = golden_f32(g, "temb", S * d);
    c.lw = golden_f32(g, "lw", 2 * d * d);
    c.lb = golden_f32(g, "lb", 2 * d);
    c.dy = golden_f32(g, "dy", n * d);
    c.act = fzeros(S * d);
    c.mod = fzeros(S * 2 * d);
    c.y = fzeros(n * d);
    c.mean = fzeros(n);
    c.rstd = fzeros(n);
    adaln_loss(&c);
    check_close("adaln y", c.y, golden_f32(g, "y", -1), n * d, RTOL, ATOL);
    /* backward: adaln → linear → silu */
    float *dx = fzeros(n * d), *dmod = fzeros(S * 2 * d), *dact = fzeros(S * d), *dtemb = fzeros(S * d);
    float *dlw = fzeros(2 * d * d), *dlb = fzeros(2 * d);
    assert_int_equal(vla_adaln_backward(test_cpu_backend(), dx, dmod, c.dy, c.x, c.mod, c.mean, c.rstd, c.cu, S, n, d), VLA_OK);
    vla_linear_backward(ops, dact, dlw, dlb, dmod, c.act, c.lw, S, d, 2 * d);
    vla_silu_backward(test_cpu_backend(), dtemb, dact, c.temb, S * d);
    check_close("adaln dx", dx, golden_f32(g, "dx", -1), n * d, RTOL, ATOL);
    check_close("adaln dtemb", dtemb, golden_f32(g, "dtemb", -1), S * d, RTOL, ATOL);
    check_close("adaln dlw", dlw, golden_f32(g, "dlw", -1), 2 * d * d, RTOL, ATOL);
    check_close("adaln dlb", dlb, golden_f32(g, "dlb", -1), 2 * d, RTOL, ATOL);
    double s = abs_dot(c.y, c.dy, n * d);
    fd_check("adaln x", adaln_loss, &c, c.x, dx, n * d, 31, 1e-2, 1e-2, s);
    fd_check("adaln temb", adaln_loss, &c, c.temb, dtemb, S * d, 32, 1e-2, 1e-2, s);
    fd_check("adaln lw", adaln_loss, &c, c.lw, dlw, 2 * d * d, 33, 1e-2, 1e-2, s);
    int32_t bad_cu[3] = {0, 3, 6};
    assert_int_equal(vla_adaln_forward(test_cpu_backend(), c.y, c.mean, c.rstd, c.x, c.mod, bad_cu, S, n, d, 1e-5f, NULL), VLA_ERR_INVALID_ARG);
    golden_free(g);
}

/* ---- AdaRMSNorm + gated residual, composed as openpi does: mod = Dense(cond) ---- */
typedef struct {
    const vla_ops *ops;
    float *x, *cond, *br, *lw, *lb;
    float *mod, *y, *res, *rstd;
    const float *dy, *dres;
    const int32_t *cu;
    int32_t n_seg;
    int64_t n, dim, cdim;
} adarms_ctx;

static double adarms_loss(void *p) {
    adarms_ctx *c = p;
    vla_linear_forward(c->ops, c->mod, c->cond, c->lw, c->lb, c->n_seg, c->cdim, 3 * c->dim);
    assert_int_equal(vla_adarmsnorm_forward(test_cpu_backend(), c->y, c->rstd, c->x, c->mod, c->cu, c->n_seg, c->n, c->dim, 1e-6f, NULL), VLA_OK);
    assert_int_equal(vla_gated_residual_forward(test_cpu_backend(), c->res, c->x, c->br, c->mod, c->cu, c->n_seg, c->n, c->dim), VLA_OK);
    return dot_f32(c->y, c->dy, c->n * c->dim) + dot_f32(c->res, c->dres, c->n * c->dim);
}

static void test_adarmsnorm(void **state) {
    (void)state;
    const vla_ops *ops = test_cpu_backend();
    golden *g = golden_load("adarmsnorm");
    int64_t n = 9, d = 8, cd = 6;
    int32_t S = 3;
    adarms_ctx c = {.ops = ops, .n_seg = S, .n = n, .dim = d, .cdim = cd};
    c.cu = golden_i32(g, "cu", S + 1);
    c.x = golden_f32(g, "x", n * d);
    c.cond = golden_f32(g, "cond", S * cd);
    c.br = golden_f32(g, "branch", n * d);
    c.lw = golden_f32(g, "lw", 3 * d * cd);
    c.lb = golden_f32(g, "lb", 3 * d);
    c.dy = golden_f32(g, "dy", n * d);
    c.dres = golden_f32(g, "dres", n * d);
    c.mod = fzeros(S * 3 * d);
    c.y = fzeros(n * d);
    c.res = fzeros(n * d);
    c.rstd = fzeros(n);
    adarms_loss(&c);
    check_close("adarms y", c.y, golden_f32(g, "y", -1), n * d, RTOL, ATOL);
    check_close("adarms res", c.res, golden_f32(g, "res", -1), n * d, RTOL, ATOL);
    float *dx = fzeros(n * d), *dbr = fzeros(n * d), *dmod = fzeros(S * 3 * d), *dcond = fzeros(S * cd);
    float *dlw = fzeros(3 * d * cd), *dlb = fzeros(3 * d);
    assert_int_equal(vla_gated_residual_backward(test_cpu_backend(), dx, dbr, dmod, c.dres, c.br, c.mod, c.cu, S, n, d), VLA_OK);
    assert_int_equal(vla_adarmsnorm_backward(test_cpu_backend(), dx, dmod, c.dy, c.x, c.mod, c.rstd, c.cu, S, n, d), VLA_OK);
    vla_linear_backward(ops, dcond, dlw, dlb, dmod, c.cond, c.lw, S, cd, 3 * d);
    check_close("adarms dx", dx, golden_f32(g, "dx", -1), n * d, RTOL, ATOL);
    check_close("adarms dbranch", dbr, golden_f32(g, "dbranch", -1), n * d, RTOL, ATOL);
    check_close("adarms dcond", dcond, golden_f32(g, "dcond", -1), S * cd, RTOL, ATOL);
    check_close("adarms dlw", dlw, golden_f32(g, "dlw", -1), 3 * d * cd, RTOL, ATOL);
    check_close("adarms dlb", dlb, golden_f32(g, "dlb", -1), 3 * d, RTOL, ATOL);
    double s = abs_dot(c.y, c.dy, n * d) + abs_dot(c.res, c.dres, n * d);
    fd_check("adarms x", adarms_loss, &c, c.x, dx, n * d, 41, 1e-2, 1e-2, s);
    fd_check("adarms cond", adarms_loss, &c, c.cond, dcond, S * cd, 42, 1e-2, 1e-2, s);
    fd_check("adarms branch", adarms_loss, &c, c.br, dbr, n * d, 43, 1e-2, 1e-2, s);
    fd_check("adarms lw", adarms_loss, &c, c.lw, dlw, 3 * d * cd, 44, 1e-2, 1e-2, s);
    fd_check("adarms lb", adarms_loss, &c, c.lb, dlb, 3 * d, 45, 1e-2, 1e-2, s);
    /* zero-initialised modulation: plain RMSNorm (g = 1) and an ungated (zero) branch */
    memset(c.lw, 0, (size_t)(3 * d * cd) * 4);
    memset(c.lb, 0, (size_t)(3 * d) * 4);
    adarms_loss(&c);
    float *plain = fzeros(n * d);
    vla_rmsnorm_forward(test_cpu_backend(), plain, NULL, c.x, NULL, false, n, d, 1e-6f);
    check_close("adarms zero-init = rmsnorm", c.y, plain, n * d, 1e-6, 1e-7);
    check_close("adarms zero-init residual = x", c.res, c.x, n * d, 0, 0);
    golden_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_adaln),
        cmocka_unit_test(test_adarmsnorm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
