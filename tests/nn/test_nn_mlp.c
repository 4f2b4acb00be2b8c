/* test_nn_mlp.c — activations (GELU-tanh, SiLU), MLP / GeGLU / SwiGLU,
 * RoPE and sinusoidal time embeddings: PyTorch goldens and finite differences. */
#include "nn/activations.h"
#include "nn/mlp.h"
#include "nn/rope.h"
#include "nn/time_embedding.h"
#include "nn_test.h"
#include "tensor/ops.h"

#define RTOL 1e-4
#define ATOL 2e-5

/* ---- activations ---- */
typedef struct {
    vla_act act;
    float *x, *y;
    const float *dy;
    int64_t n;
} act_ctx;

static double act_loss(void *p) {
    act_ctx *c = p;
    vla_act_forward(test_cpu_backend(), c->act, c->y, c->x, c->n);
    return dot_f32(c->y, c->dy, c->n);
}

static void test_activations(void **state) {
    (void)state;
    golden *g = golden_load("activations");
    int64_t n = 64;
    float *x = golden_f32(g, "x", n), *dy = golden_f32(g, "dy", n);
    const char *names[2][3] = {{"gelu", "dgelu", "gelu_tanh"}, {"silu", "dsilu", "silu"}};
    vla_act acts[2] = {VLA_ACT_GELU_TANH, VLA_ACT_SILU};
    for (int a = 0; a < 2; a++) {
        float *y = fzeros(n), *dx = fzeros(n);
        vla_act_forward(test_cpu_backend(), acts[a], y, x, n);
        check_close(names[a][2], y, golden_f32(g, names[a][0], -1), n, RTOL, ATOL);
        vla_act_backward(test_cpu_backend(), acts[a], dx, dy, x, n);
        check_close(names[a][1], dx, golden_f32(g, names[a][1], -1), n, RTOL, ATOL);
        act_ctx c = {acts[a], x, y, dy, n};
        fd_check(names[a][2], act_loss, &c, x, dx, n, 51 + a, 1e-3, 1e-2, abs_dot(y, dy, n));
        /* in place */
        float *z = fzeros(n);
        vla_act_forward(test_cpu_backend(), acts[a], y, x, n); /* fd_check left a perturbed output */
        memcpy(z, x, (size_t)n * 4);
        vla_act_forward(test_cpu_backend(), acts[a], z, z, n);
        check_close("in place", z, y, n, 0, 0);
    }
    golden_free(g);
}

/* ---- MLP ---- */
typedef struct {
    const vla_ops *ops;
    vla_mlp_config cfg;
    vla_mlp_weights w;
    float *x, *y, *acts;
    const float *dy;
    int64_t n;
} mlp_ctx;

static double mlp_loss(void *p) {
    mlp_ctx *c = p;
    vla_mlp_forward(c->ops, &c->cfg, c->y, c->acts, c->x, NULL, &c->w, c->n);
    return dot_f32(c->y, c->dy, c->n * c->cfg.dim);
}

static void test_mlp(void **state) {
    (void)state;
    const vla_ops *ops = test_cpu_backend();
    golden *g = golden_load("mlp");
    int64_t n = 5, d = 8, h = 12;
    float *x = golden_f32(g, "x", n * d), *dy = golden_f32(g, "dy", n * d);
    for (int kind = 0; kind < 3; kind++) {
        const char *tag = kind == 0 ? "p" : kind == 1 ? "geglu" : "swiglu";
        char key[64];
#define G(name, numel) (snprintf(key, sizeof key, "%s_%s", tag, name), golden_f32(g, key, numel))
        mlp_ctx c = {.ops = ops, .x = x, .dy = dy, .n = n};
        c.cfg = (vla_mlp_config){.gated = kind > 0, .act = kind == 2 ? VLA_ACT_SILU : VLA_ACT_GELU_TANH, .dim = d,
                                 .hidden = h};
        float *wu = G("wu", h * d), *wd = G("wd", d * h), *wg = NULL, *bu = NULL, *bd = NULL;
        if (kind == 0) {
            bu = G("bu", h);
            bd = G("bd", d);
        } else {
            wg = G("wg", h * d);
        }
        c.w = (vla_mlp_weights){.w_up = wu, .b_up = bu, .w_gate = wg, .w_down = wd, .b_down = bd};
        c.y = fzeros(n * d);
        c.acts = fzeros(vla_mlp_acts_floats(&c.cfg, n));
        mlp_loss(&c);
        check_close(tag, c.y, G("y", n * d), n * d, RTOL, ATOL);
        float *dx = fzeros(n * d), *scratch = fzeros(vla_mlp_scratch_floats(&c.cfg, n));
        vla_mlp_grads gr = {.w_up = fzeros(h * d), .w_down = fzeros(d * h)};
        if (kind == 0) {
            gr.b_up = fzeros(h);
            gr.b_down = fzeros(d);
        } else {
            gr.w_gate = fzeros(h * d);
        }
        vla_mlp_backward(ops, &c.cfg, dx, false, &gr, scratch, dy, x, NULL, c.acts, &c.w, n);
        check_close("mlp dx", dx, G("dx", n * d), n * d, RTOL, ATOL);
        check_close("mlp dwu", gr.w_up, G("dwu", h * d), h * d, RTOL, ATOL);
        check_close("mlp dwd", gr.w_down, G("dwd", d * h), d * h, RTOL, ATOL);
        if (kind == 0) {
            check_close("mlp dbu", gr.b_up, G("dbu", h), h, RTOL, ATOL);
            check_close("mlp dbd", gr.b_down, G("dbd", d), d, RTOL, ATOL);
        } else {
            check_close("mlp dwg", gr.w_gate, G("dwg", h * d), h * d, RTOL, ATOL);
        }
#undef G
        double s = abs_dot(c.y, dy, n * d);
        fd_check("mlp x", mlp_loss, &c, x, dx, n * d, 61 + kind, 1e-2, 1e-2, s);
        fd_check("mlp w_up", mlp_loss, &c, wu, gr.w_up, h * d, 64 + kind, 1e-2, 1e-2, s);
        fd_check("mlp w_down", mlp_loss, &c, wd, gr.w_down, d * h, 67 + kind, 1e-2, 1e-2, s);
        if (wg) fd_check("mlp w_gate", mlp_loss, &c, wg, gr.w_gate, h * d, 70 + kind, 1e-2, 1e-2, s);
    }
    golden_free(g);
}

/* ---- RoPE ---- */
typedef struct {
    float *x, *y;
    const float *dy;
    const int32_t *pos;
} rope_ctx;

static double rope_loss(void *p) {
    rope_ctx *c = p;
    vla_rope_forward(test_cpu_backend(), c->y, c->x, c->pos, 6, 2, 8, 10000.0);
    return dot_f32(c->y, c->dy, 6 * 2 * 8);
}

static void test_rope(void **state) {
    (void)state;
    golden *g = golden_load("rope");
    int64_t n = 6, heads = 2, hd = 8, m = n * heads * hd;
    int32_t *pos = golden_i32(g, "pos", n);
    float *x = golden_f32(g, "x", m), *dy = golden_f32(g, "dy", m), *y = fzeros(m), *dx = fzeros(m);
    vla_rope_forward(test_cpu_backend(), y, x, pos, n, heads, hd, 10000.0);
    check_close("rope y", y, golden_f32(g, "y", -1), m, RTOL, ATOL);
    vla_rope_backward(test_cpu_backend(), dx, dy, pos, n, heads, hd, 10000.0);
    check_close("rope dx", dx, golden_f32(g, "dx", -1), m, RTOL, ATOL);
    rope_ctx c = {x, y, dy, pos};
    fd_check("rope x", rope_loss, &c, x, dx, m, 81, 1e-2, 1e-2, abs_dot(y, dy, m));
    /* in place, and position 0 is the identity */
    float *z = fzeros(m);
    vla_rope_forward(test_cpu_backend(), y, x, pos, n, heads, hd, 10000.0); /* fd_check left a perturbed output */
    memcpy(z, x, (size_t)m * 4);
    vla_rope_forward(test_cpu_backend(), z, z, pos, n, heads, hd, 10000.0);
    check_close("rope in place", z, y, m, 0, 0);
    check_close("rope pos 0", y, x, heads * hd, 0, 0);
    golden_free(g);
}

/* ---- time embedding ---- */
typedef struct {
    vla_temb_config cfg;
    float *t, *y;
    const float *dy;
} temb_ctx;

static double temb_loss(void *p) {
    temb_ctx *c = p;
    vla_time_embedding_forward(test_cpu_backend(), &c->cfg, c->y, c->t, 3);
    return dot_f32(c->y, c->dy, 3 * c->cfg.dim);
}

static void test_time_embedding(void **state) {
    (void)state;
    golden *g = golden_load("time_embedding");
    int64_t dim = 16;
    float *dy = golden_f32(g, "g_dy", 3 * dim);
    const vla_temb_config cfgs[3] = {
        {.kind = VLA_TEMB_LOG, .dim = dim, .max_period = 10000.0, .shift = 0.0},                  /* GR00T encoder */
        {.kind = VLA_TEMB_LOG, .dim = dim, .max_period = 10000.0, .shift = 1.0, .cos_first = true}, /* diffusers */
        {.kind = VLA_TEMB_PERIODS, .dim = dim, .min_period = 4e-3, .max_period = 4.0},            /* openpi */
    };
    const char *tags[3] = {"g", "d", "p"};
    for (int i = 0; i < 3; i++) {
        char kt[16], ky[16], kd[16];
        snprintf(kt, sizeof kt, "%s_t", tags[i]);
        snprintf(ky, sizeof ky, "%s_y", tags[i]);
        snprintf(kd, sizeof kd, "%s_dt", tags[i]);
        float *t = golden_f32(g, kt, 3), *y = fzeros(3 * dim), *dt = fzeros(3);
        vla_time_embedding_forward(test_cpu_backend(), &cfgs[i], y, t, 3);
        /* t up to 999 rad: sin/cos of a large f32 angle, so an absolute tolerance */
        check_close(ky, y, golden_f32(g, ky, -1), 3 * dim, 0, 1e-5);
        vla_time_embedding_backward(test_cpu_backend(), &cfgs[i], dt, dy, t, 3);
        check_close(kd, dt, golden_f32(g, kd, -1), 3, 1e-4, 1e-4);
        if (i == 2) { /* smooth in t only where t·f is moderate: the openpi flow time in [0, 1] */
            temb_ctx c = {cfgs[i], t, y, dy};
            fd_check("temb t", temb_loss, &c, t, dt, 3, 91, 1e-4, 2e-2, abs_dot(y, dy, 3 * dim));
        }
    }
    golden_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_activations),
        cmocka_unit_test(test_mlp),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_time_embedding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
