/* rtc.c — real-time chunking: guided inpainting of the flow (see rtc.h). */
#include "policy/rtc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy/family.h"

static const char *const SCHEDULES[] = {"exp", "linear", "ones", "zeros"};

vla_status vla_rtc_schedule_parse(const char *s, vla_rtc_schedule *out) {
    for (int i = 0; i < 4; i++)
        if (s && !strcmp(s, SCHEDULES[i])) return *out = (vla_rtc_schedule)i, VLA_OK;
    return vla_error(VLA_ERR_INVALID_ARG, "rtc: schedule '%s' is not one of exp, linear, ones, zeros", s ? s : "");
}

const char *vla_rtc_schedule_name(vla_rtc_schedule s) { return (unsigned)s < 4 ? SCHEDULES[s] : "?"; }

void vla_rtc_prefix_weights(vla_rtc_schedule s, int d, int end, int H, float *w) {
    if (end > H) end = H;
    if (end < 0) end = 0;
    if (d > end) d = end; /* committed steps beyond the previous chunk's end have nothing to hold to */
    if (d < 0) d = 0;
    for (int i = 0; i < H; i++) {
        double v = 0;
        if (i < d) v = 1;
        else if (i < end) {
            double c = (double)(end - i) / (double)(end - d + 1); /* Eq. 5: in (0, 1), falling with i */
            switch (s) {
            case VLA_RTC_EXP: v = c * expm1(c) / (M_E - 1.0); break;
            case VLA_RTC_LINEAR: v = c; break;
            case VLA_RTC_ONES: v = 1; break;
            case VLA_RTC_ZEROS: v = 0; break;
            }
        }
        w[i] = (float)v;
    }
}

double vla_rtc_guidance_weight(double tau, double beta) {
    if (tau <= 0) return beta;
    if (tau >= 1) return beta;
    double r = (1 - tau) / tau * (tau * tau + (1 - tau) * (1 - tau)) / ((1 - tau) * (1 - tau));
    return r < beta ? r : beta;
}

/* Backend scratch of the integrator: v, e, g and the guide uploaded once. */
typedef struct {
    float *v, *e, *gj, *w, *y;
} rtc_bufs;

static void rtc_bufs_free(const vla_ops *ops, rtc_bufs *b) {
    float *all[] = {b->v, b->e, b->gj, b->w, b->y};
    for (int i = 0; i < 5; i++)
        if (all[i]) ops->free(all[i]);
}

vla_status vla_rtc_integrate(const vla_flow *f, const vla_flow_field *field, const vla_rtc_guide *g, int64_t H,
                             int64_t A, float *x, int64_t n) {
    if (f->steps < 1) return vla_error(VLA_ERR_INVALID_ARG, "rtc: flow steps must be at least 1");
    if (H < 1 || A < 1 || n % (H * A) != 0)
        return vla_error(VLA_ERR_INVALID_ARG, "rtc: %lld floats are not whole chunks of %lld x %lld", (long long)n,
                         (long long)H, (long long)A);
    if (!g->no_jacobian && !field->vjp) return vla_error(VLA_ERR_UNSUPPORTED, "rtc: the velocity field has no VJP");
    if (!field->ops) return vla_error(VLA_ERR_INVALID_ARG, "rtc: the velocity field names no backend");
    const vla_ops *ops = field->ops;
    int64_t S = n / (H * A);
    /* sgn: the family's velocity in the paper's direction (flow.h conventions) */
    const bool pi05 = f->conv == VLA_FLOW_PI05;
    const float sgn = pi05 ? -1.0f : 1.0f;
    /* the guide's weights per entry (0 on padded dims) and target, on the host once, then uploaded */
    rtc_bufs b = {0};
    float *hw = malloc((size_t)n * sizeof(float));
    bool any_w = false;
    if (hw)
        for (int64_t s = 0; s < S; s++) {
            int64_t rd = g->real_dims ? g->real_dims[s] : A;
            if (rd > A) rd = A;
            for (int64_t h = 0; h < H; h++)
                for (int64_t d = 0; d < A; d++) {
                    float w = d < rd ? g->weights[s * H + h] : 0.0f;
                    hw[(s * H + h) * A + d] = w;
                    any_w |= w != 0;
                }
        }
    float **slots[] = {&b.v, &b.e, &b.gj, &b.w, &b.y};
    for (int i = 0; hw && i < 5; i++) *slots[i] = ops->alloc((size_t)n * sizeof(float));
    if (!hw || !b.v || !b.e || !b.gj || !b.w || !b.y) {
        free(hw);
        rtc_bufs_free(ops, &b);
        return vla_error(VLA_ERR_NOMEM, "rtc: out of memory");
    }
    ops->to_device(b.w, hw, (size_t)n * sizeof(float));
    ops->to_device(b.y, g->target, (size_t)n * sizeof(float));
    free(hw);
    vla_status st = VLA_OK;
    /* the same times vla_flow_euler visits, in the same float arithmetic */
    float dt = pi05 ? -1.0f / (float)f->steps : 1.0f / (float)f->steps, t = pi05 ? 1.0f : 0.0f;
    for (int64_t k = 0; k < f->steps && st == VLA_OK; k++) {
        if (!pi05) t = (float)((double)k / (double)f->steps);
        double tau = pi05 ? 1.0 - (double)t : (double)t;
        st = field->velocity(field->ctx, t, x, b.v, n);
        if (st != VLA_OK) break;
        double gw = vla_rtc_guidance_weight(tau, g->beta);
        if (any_w && gw > 0) {
            /* e = W ⊙ (Y − Â¹), Â¹ = x + (1 − τ)·v_paper (W is 0 on padded dims) */
            ops->copy(b.e, x, n);
            ops->axpy(b.e, (float)(1.0 - tau) * sgn, b.v, n);
            ops->sub(b.e, b.y, b.e, n);
            ops->mul(b.e, b.w, b.e, n);
            /* g = e + (1 − τ)·sgn·(∂v/∂x)ᵀe: the chain rule through Â¹ */
            if (g->no_jacobian) {
                ops->copy(b.gj, b.e, n);
            } else {
                st = field->vjp(field->ctx, b.e, b.gj, n);
                if (st != VLA_OK) break;
                ops->scale(b.gj, (float)(1.0 - tau) * sgn, n);
                ops->add(b.gj, b.e, b.gj, n);
            }
            /* v_paper += gw·g, i.e. v_family += sgn·gw·g */
            ops->axpy(b.v, sgn * (float)gw, b.gj, n);
        }
        ops->axpy(x, dt, b.v, n);
        if (pi05) t += dt;
    }
    rtc_bufs_free(ops, &b);
    return st;
}

bool vla_rtc_supported(const vla_policy *p) { return p && p->ops->sample_with; }

typedef struct {
    const vla_rtc_guide *g;
    int64_t H, A;
} rtc_user;

static vla_status integrate_cb(void *user, const vla_flow *f, const vla_flow_field *field, float *x, int64_t n) {
    const rtc_user *u = user;
    return vla_rtc_integrate(f, field, u->g, u->H, u->A, x, n);
}

vla_status vla_rtc_sample(vla_policy *p, const vla_observation *obs, const vla_rtc_guide *g, float *actions) {
    if (!vla_rtc_supported(p))
        return vla_error(VLA_ERR_UNSUPPORTED, "rtc: policy family '%s' has no velocity field for guided sampling",
                         p->ops->name);
    if (!g || !g->target || !g->weights || !(g->beta >= 0))
        return vla_error(VLA_ERR_INVALID_ARG, "rtc: a guide needs its target, weights and beta >= 0");
    /* guidance off for every sample: the family's own sampler (same noise, same result) */
    bool any = false;
    int64_t H = p->cfg.action.horizon, A = p->cfg.action.action_dim;
    for (int64_t i = 0; i < (int64_t)obs->n_samples * H && !any; i++) any = g->weights[i] != 0;
    if (!any || g->beta == 0) return vla_policy_sample_actions(p, obs, actions);
    rtc_user u = {g, H, A};
    vla_policy_weights_hold(p);
    vla_status st = p->ops->sample_with(p, obs, integrate_cb, &u, actions);
    vla_policy_weights_release(p);
    /* a family's field without a VJP reports it plainly */
    return st != VLA_OK ? vla_error_context(st, "rtc sampling (%s)", p->ops->name) : VLA_OK;
}

void vla_rtc_prefix_from_env(const vla_normalizer *action_norm, const float *prev, int n_prev, int width,
                             const double *ref, int64_t H, int64_t A, float *target) {
    memset(target, 0, (size_t)(H * A) * sizeof(float));
    if (n_prev > H) n_prev = (int)H;
    for (int h = 0; h < n_prev; h++)
        for (int d = 0; d < width; d++) target[h * A + d] = prev[h * width + d] - (ref ? (float)ref[d] : 0.0f);
    vla_normalize_chunk(action_norm, target, H, width, A);
    for (int64_t h = n_prev; h < H; h++) memset(target + h * A, 0, (size_t)A * sizeof(float));
    for (int h = 0; h < n_prev; h++)
        for (int64_t d = width; d < A; d++) target[h * A + d] = 0.0f; /* padding dims, as in training */
}
