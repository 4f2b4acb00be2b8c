/* mlp.c — plain / GeGLU / SwiGLU feed-forward, composed of linear layers
 * and the backend's pointwise activations. */
#include "nn/mlp.h"

#include "nn/linear.h"

static int64_t out_dim_of(const vla_mlp_config *cfg) { return cfg->out_dim > 0 ? cfg->out_dim : cfg->dim; }

/* acts layout: plain (pre, h); gated (gate_pre, up, h) — h is always last. An MLP keeping copies
 * (cfg->copies) keeps h as its bf16 copy alone, 64-byte aligned after what precedes it. */
static bool kept(const vla_mlp_config *cfg) { return cfg->copies != NULL; }
static int64_t h_offset(const vla_mlp_config *cfg, int64_t n) {
    int64_t before = (cfg->gated ? 2 : 1) * n * cfg->hidden;
    return kept(cfg) ? (before + 15) & ~(int64_t)15 : before;
}

int64_t vla_mlp_acts_floats(const vla_mlp_config *cfg, int64_t n) {
    int64_t nh = n * cfg->hidden;
    return h_offset(cfg, n) + (kept(cfg) ? vla_linear_kept_floats(cfg->copies, n, cfg->hidden) : nh);
}
int64_t vla_mlp_scratch_floats(const vla_mlp_config *cfg, int64_t n) { return (cfg->gated ? 3 : 2) * n * cfg->hidden; }

void vla_mlp_forward(const vla_ops *ops, const vla_mlp_config *cfg, float *out, float *acts, const float *in,
                     const void *in_ready, const vla_mlp_weights *w, int64_t n) {
    int64_t d = cfg->dim, hd = cfg->hidden, nh = n * hd;
    float *hs = acts + h_offset(cfg, n); /* h, or (kept) its copy */
    float *h = kept(cfg) ? NULL : hs;
    const vla_fp8_operand *h8 = NULL;
    if (!cfg->gated) {
        float *pre = acts;
        /* up's epilogue writes h's copy for the down projection, into a second buffer (up reads in_ready) —
         * kept, into acts: the GEMM writes pre and the copy, and nothing else (ops.h, KEPT COPIES) */
        void *hr = kept(cfg) ? (void *)hs : vla_linear_epilogue_ready_buffer(ops, w->q_down, n, hd, &h8);
        vla_linear_forward_act_x(ops, w->q_up, in_ready, hr, h8, h, pre, in, w->w_up, w->b_up, cfg->act, n, d, hd);
        vla_linear_forward_x(ops, w->q_down, hr, out, h, w->w_down, w->b_down, n, hd, out_dim_of(cfg));
        return;
    }
    float *gate = acts, *up = acts + nh;
    /* one cast for gate and up, unless the input's producer made it */
    const void *inr = in_ready ? in_ready : vla_linear_share_input(ops, w->q_gate, false, in, n, d);
    vla_linear_forward_x(ops, w->q_gate, inr, gate, in, w->w_gate, w->b_gate, n, d, hd);
    vla_linear_forward_x(ops, w->q_up, inr, up, in, w->w_up, w->b_up, n, d, hd);
    /* the GLU writes h's copy (bf16, or FP8: the down projection's input cast) for the down projection
     * (after gate's and up's GEMMs have read inr: issue order) — kept, into acts, and nothing else */
    void *hr = kept(cfg) ? (void *)hs : vla_linear_input_ready_fp8(ops, w->q_down, n, hd, &h8);
    ops->glu_forward(cfg->act, h, gate, up, n, hd, hr, h8);
    vla_linear_forward_x(ops, w->q_down, hr, out, h, w->w_down, w->b_down, n, hd, out_dim_of(cfg));
}

void vla_mlp_backward(const vla_ops *ops, const vla_mlp_config *cfg, float *d_in, bool d_in_fresh,
                      const vla_mlp_grads *g, float *scratch, const float *d_out, const float *in,
                      const void *in_ready, const float *acts, const vla_mlp_weights *w, int64_t n) {
    int64_t d = cfg->dim, hd = cfg->hidden, nh = n * hd;
    float *dh = scratch;
    /* down's dgrad writes dh (no fill first); the first linear's dgrad writes d_in when it is fresh. A kept h
     * is its copy: down's weight gradient reads it as the forward did, no cast. */
    const float *hs = acts + h_offset(cfg, n);
    const vla_linear_bwd down = {kept(cfg) ? (const void *)hs : NULL, NULL, true};
    vla_linear_backward_ex(ops, w->q_down, &down, dh, g->w_down, g->b_down, d_out, kept(cfg) ? NULL : hs, w->w_down,
                           n, hd, out_dim_of(cfg));
    if (!cfg->gated) {
        const float *pre = acts;
        float *dpre = scratch + nh;
        /* the activation's backward writes dpre and its copy, up's dy (after down's GEMMs read theirs: issue
         * order) */
        void *rp = vla_linear_dy_ready_buffer(ops, w->q_up, n, hd, false);
        ops->act_backward(cfg->act, dpre, dh, pre, n, hd, rp);
        const vla_linear_bwd bu = {in_ready, rp, d_in_fresh};
        vla_linear_backward_ex(ops, w->q_up, &bu, d_in, g->w_up, g->b_up, dpre, in, w->w_up, n, d, hd);
        return;
    }
    const float *gate = acts, *up = acts + nh;
    float *dgate = scratch + nh, *dup = scratch + 2 * nh;
    /* the GLU's backward writes dgate's and dup's copies: the gate and up linears' dy */
    void *rg = vla_linear_dy_ready_buffer(ops, w->q_gate, n, hd, false);
    void *ru = vla_linear_dy_ready_buffer(ops, w->q_up, n, hd, true);
    ops->glu_backward(cfg->act, dgate, dup, dh, gate, up, n, hd, rg, ru);
    const void *inr = !(g->w_gate || g->w_up) ? NULL
                      : in_ready             ? in_ready
                                             : vla_linear_share_input(ops, w->q_gate, true, in, n, d);
    const vla_linear_bwd bg = {inr, rg, d_in_fresh}, bu = {inr, ru, false};
    vla_linear_backward_ex(ops, w->q_gate, &bg, d_in, g->w_gate, g->b_gate, dgate, in, w->w_gate, n, d, hd);
    vla_linear_backward_ex(ops, w->q_up, &bu, d_in, g->w_up, g->b_up, dup, in, w->w_up, n, d, hd);
}
