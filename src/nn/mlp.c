/* mlp.c — plain / GeGLU / SwiGLU feed-forward, composed of linear layers
 * and the pointwise activations. */
#include "nn/mlp.h"

#include "nn/linear.h"
#include "tensor/parallel.h"
#include "tensor/vecmath.h"

#define PAR_MIN VLA_PAR_MIN_ELEMS

/* h = act(gate)·up, the activation resolved outside the loop so it vectorises */
static void glu_forward(vla_act act, float *h, const float *gate, const float *up, int64_t nh) {
    if (act == VLA_ACT_GELU_TANH) {
#pragma omp parallel for simd if (parallel : nh > PAR_MIN)
        for (int64_t i = 0; i < nh; i++) h[i] = vla_gelu_tanhf(gate[i]) * up[i];
    } else if (act == VLA_ACT_SILU) {
#pragma omp parallel for simd if (parallel : nh > PAR_MIN)
        for (int64_t i = 0; i < nh; i++) h[i] = gate[i] * vla_sigmoidf(gate[i]) * up[i];
    } else {
#pragma omp parallel for if (nh > PAR_MIN)
        for (int64_t i = 0; i < nh; i++) h[i] = vla_act_value(act, gate[i]) * up[i];
    }
}

static void glu_backward(vla_act act, float *dgate, float *dup, const float *dh, const float *gate, const float *up,
                         int64_t nh) {
    if (act == VLA_ACT_GELU_TANH) {
#pragma omp parallel for simd if (parallel : nh > PAR_MIN)
        for (int64_t i = 0; i < nh; i++) {
            float v, gr = vla_gelu_tanh_value_gradf(gate[i], &v);
            dgate[i] = dh[i] * up[i] * gr;
            dup[i] = dh[i] * v;
        }
    } else if (act == VLA_ACT_SILU) { /* the same expressions as activations.c's silu_value/silu_grad */
#pragma omp parallel for simd if (parallel : nh > PAR_MIN)
        for (int64_t i = 0; i < nh; i++) {
            float g = gate[i], sg = vla_sigmoidf(g);
            dgate[i] = dh[i] * up[i] * (sg * (1.0f + g * (1.0f - sg)));
            dup[i] = dh[i] * (g * sg);
        }
    } else {
#pragma omp parallel for if (nh > PAR_MIN)
        for (int64_t i = 0; i < nh; i++) {
            dgate[i] = dh[i] * up[i] * vla_act_grad(act, gate[i]);
            dup[i] = dh[i] * vla_act_value(act, gate[i]);
        }
    }
}

static int64_t out_dim_of(const vla_mlp_config *cfg) { return cfg->out_dim > 0 ? cfg->out_dim : cfg->dim; }

int64_t vla_mlp_acts_floats(const vla_mlp_config *cfg, int64_t n) { return (cfg->gated ? 3 : 2) * n * cfg->hidden; }
int64_t vla_mlp_scratch_floats(const vla_mlp_config *cfg, int64_t n) { return (cfg->gated ? 3 : 2) * n * cfg->hidden; }

/* acts layout: plain (pre, h); gated (gate_pre, up, h) — h is always last */
void vla_mlp_forward(const vla_ops *ops, const vla_mlp_config *cfg, float *out, float *acts, const float *in,
                     const vla_mlp_weights *w, int64_t n) {
    int64_t d = cfg->dim, hd = cfg->hidden, nh = n * hd;
    if (!cfg->gated) {
        float *pre = acts, *h = acts + nh;
        vla_linear_forward(ops, pre, in, w->w_up, w->b_up, n, d, hd);
        vla_act_forward(cfg->act, h, pre, nh);
        vla_linear_forward(ops, out, h, w->w_down, w->b_down, n, hd, out_dim_of(cfg));
        return;
    }
    float *gate = acts, *up = acts + nh, *h = acts + 2 * nh;
    vla_linear_forward(ops, gate, in, w->w_gate, w->b_gate, n, d, hd);
    vla_linear_forward(ops, up, in, w->w_up, w->b_up, n, d, hd);
    glu_forward(cfg->act, h, gate, up, nh);
    vla_linear_forward(ops, out, h, w->w_down, w->b_down, n, hd, out_dim_of(cfg));
}

void vla_mlp_backward(const vla_ops *ops, const vla_mlp_config *cfg, float *d_in, const vla_mlp_grads *g,
                      float *scratch, const float *d_out, const float *in, const float *acts,
                      const vla_mlp_weights *w, int64_t n) {
    int64_t d = cfg->dim, hd = cfg->hidden, nh = n * hd;
    float *dh = scratch;
    ops->fill(dh, 0.0f, nh);
    if (!cfg->gated) {
        const float *pre = acts, *h = acts + nh;
        float *dpre = scratch + nh;
        vla_linear_backward(ops, dh, g->w_down, g->b_down, d_out, h, w->w_down, n, hd, out_dim_of(cfg));
        ops->fill(dpre, 0.0f, nh);
        vla_act_backward(cfg->act, dpre, dh, pre, nh);
        vla_linear_backward(ops, d_in, g->w_up, g->b_up, dpre, in, w->w_up, n, d, hd);
        return;
    }
    const float *gate = acts, *up = acts + nh, *h = acts + 2 * nh;
    float *dgate = scratch + nh, *dup = scratch + 2 * nh;
    vla_linear_backward(ops, dh, g->w_down, g->b_down, d_out, h, w->w_down, n, hd, out_dim_of(cfg));
    glu_backward(cfg->act, dgate, dup, dh, gate, up, nh);
    vla_linear_backward(ops, d_in, g->w_gate, g->b_gate, dgate, in, w->w_gate, n, d, hd);
    vla_linear_backward(ops, d_in, g->w_up, g->b_up, dup, in, w->w_up, n, d, hd);
}
