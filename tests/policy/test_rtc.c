/* test_rtc.c — real-time chunking (policy/rtc.h):
 *  - Eq. 5's prefix weights and the guidance weight against values worked
 *    out by hand from the paper's formulas;
 *  - the guided integrator against a second implementation of Algorithm 1
 *    written here in double precision, on a Gaussian data distribution whose
 *    optimal velocity field and Jacobian are known in closed form — in both
 *    families' time conventions;
 *  - each family's velocity field (GR00T's action head, π0.5's expert over
 *    the prefix's cached K/V): its VJP against central finite differences
 *    of the velocity, sampling through it equals sample_actions bit for
 *    bit, zero weights give sample_actions' chunk, and guidance pulls a
 *    chunk's committed steps onto the target. */
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "policy/flow.h"
#include "policy/policy.h"
#include "policy/rtc.h"

/* ---- the schedules ---- */

static void test_prefix_weights(void **state) {
    (void)state;
    float w[10];
    /* d = 2, end = 6, H = 10, linear: c_i = (6 − i)/5 on 2 ≤ i < 6 → 1 1 .8 .6 .4 .2 0 0 0 0 */
    vla_rtc_prefix_weights(VLA_RTC_LINEAR, 2, 6, 10, w);
    const float lin[10] = {1, 1, 0.8f, 0.6f, 0.4f, 0.2f, 0, 0, 0, 0};
    for (int i = 0; i < 10; i++) assert_float_equal(w[i], lin[i], 1e-6);
    /* exp: c·(e^c − 1)/(e − 1) */
    vla_rtc_prefix_weights(VLA_RTC_EXP, 2, 6, 10, w);
    for (int i = 0; i < 10; i++) {
        double c = lin[i], want = i < 2 ? 1.0 : c * (exp(c) - 1) / (exp(1.0) - 1);
        assert_float_equal(w[i], want, 1e-6);
    }
    vla_rtc_prefix_weights(VLA_RTC_ONES, 2, 6, 10, w);
    for (int i = 0; i < 10; i++) assert_float_equal(w[i], i < 6 ? 1 : 0, 0);
    vla_rtc_prefix_weights(VLA_RTC_ZEROS, 2, 6, 10, w);
    for (int i = 0; i < 10; i++) assert_float_equal(w[i], i < 2 ? 1 : 0, 0);
    /* d past the end: hold what there is, nothing beyond */
    vla_rtc_prefix_weights(VLA_RTC_EXP, 5, 3, 6, w);
    for (int i = 0; i < 6; i++) assert_float_equal(w[i], i < 3 ? 1 : 0, 0);
    /* guidance weight: β at τ = 0; (1−τ)/τ·(τ² + (1−τ)²)/(1−τ)² in between, capped */
    assert_float_equal(vla_rtc_guidance_weight(0.0, 5), 5, 0);
    assert_float_equal(vla_rtc_guidance_weight(0.5, 5), 1.0 * 0.5 / 0.25, 1e-12); /* = 2 */
    assert_float_equal(vla_rtc_guidance_weight(0.25, 100), 3.0 * (0.0625 + 0.5625) / 0.5625, 1e-12);
    assert_float_equal(vla_rtc_guidance_weight(0.9, 5), 5, 0);
    vla_rtc_schedule s;
    assert_int_equal(vla_rtc_schedule_parse("linear", &s), VLA_OK);
    assert_int_equal(s, VLA_RTC_LINEAR);
    assert_int_not_equal(vla_rtc_schedule_parse("cosine", &s), VLA_OK);
    assert_non_null(strstr(vla_error_message(), "cosine"));
}

/* ---- a Gaussian world: data y ~ N(m, s²) per entry, x_τ = (1 − τ)·z + τ·y ----
 * E[y | x_τ] = m + k(τ)·(x_τ − τ·m), k = τ s²/((1 − τ)² + τ² s²); the optimal
 * velocity (paper time) is (E[y|x] − x)/(1 − τ), and ∂Â¹/∂x = k·I. */
#define GH 6
#define GA 2
static const double GM[GA] = {0.7, -1.2}, GS = 0.5;

static double gk(double tau) { return tau * GS * GS / ((1 - tau) * (1 - tau) + tau * tau * GS * GS); }

typedef struct {
    bool pi05; /* the field in π0.5's convention: t = 1 − τ, v = −v_paper */
    double last_tau;
} gctx;

static vla_status g_velocity(void *vctx, float t, const float *x, float *v, int64_t n) {
    gctx *c = vctx;
    double tau = c->pi05 ? 1.0 - t : t;
    c->last_tau = tau;
    for (int64_t i = 0; i < n; i++) {
        double m = GM[i % GA], yhat = m + gk(tau) * (x[i] - tau * m);
        double vp = (yhat - x[i]) / (1 - tau);
        v[i] = (float)(c->pi05 ? -vp : vp);
    }
    return VLA_OK;
}

static vla_status g_vjp(void *vctx, const float *cot, float *out, int64_t n) {
    gctx *c = vctx; /* ∂v_paper/∂x = (k − 1)/(1 − τ); π0.5's v is its negative */
    double tau = c->last_tau, dv = (gk(tau) - 1) / (1 - tau);
    for (int64_t i = 0; i < n; i++) out[i] = (float)((c->pi05 ? -dv : dv) * cot[i]);
    return VLA_OK;
}

/* Algorithm 1 in the paper's own terms, double precision, with ∂Â¹/∂x = k·I. */
static void reference_guided(const double *noise, const double *Y, const double *W, double beta, int steps, double *out) {
    double x[GH * GA];
    memcpy(x, noise, sizeof x);
    for (int k = 0; k < steps; k++) {
        double tau = (double)k / steps, kk = gk(tau);
        double gw = tau == 0 ? beta : fmin(beta, (1 - tau) / tau * (tau * tau + (1 - tau) * (1 - tau)) / ((1 - tau) * (1 - tau)));
        for (int i = 0; i < GH * GA; i++) {
            double m = GM[i % GA], yhat = m + kk * (x[i] - tau * m), v = (yhat - x[i]) / (1 - tau);
            double e = W[i / GA] * (Y[i] - yhat);
            x[i] += (v + gw * e * kk) / steps;
        }
    }
    memcpy(out, x, sizeof x);
}

static void test_integrator_gaussian(void **state) {
    (void)state;
    double noise[GH * GA], Y[GH * GA], W[GH], ref[GH * GA], unguided[GH * GA], zero[GH] = {0};
    vla_rng r = vla_rng_stream(11, 0);
    for (int i = 0; i < GH * GA; i++) noise[i] = vla_rng_normal(&r), Y[i] = 3.0 + 0.1 * i; /* far from the data */
    float wf[GH], yf[GH * GA];
    vla_rtc_prefix_weights(VLA_RTC_EXP, 2, 5, GH, wf);
    for (int h = 0; h < GH; h++) W[h] = wf[h];
    for (int i = 0; i < GH * GA; i++) yf[i] = (float)Y[i];
    const int steps = 10;
    reference_guided(noise, Y, W, 5.0, steps, ref);
    reference_guided(noise, Y, zero, 5.0, steps, unguided);
    for (int conv = 0; conv < 2; conv++) {
        vla_flow f = {0};
        f.conv = conv ? VLA_FLOW_PI05 : VLA_FLOW_GROOT;
        f.steps = steps;
        gctx c = {conv == 1, 0};
        vla_flow_field field = {g_velocity, g_vjp, &c, test_cpu_backend()};
        vla_rtc_guide g = {yf, wf, NULL, 5.0, false};
        float x[GH * GA];
        for (int i = 0; i < GH * GA; i++) x[i] = (float)noise[i];
        assert_int_equal(vla_rtc_integrate(&f, &field, &g, GH, GA, x, GH * GA), VLA_OK);
        double worst = 0;
        for (int i = 0; i < GH * GA; i++) worst = fmax(worst, fabs(x[i] - ref[i]));
        printf("%s convention: max |vla.c − reference| = %.2e\n", conv ? "pi05" : "groot", worst);
        assert_true(worst < 2e-4);
        /* the committed steps moved onto the target, the free ones stayed where the data is */
        for (int i = 0; i < GH * GA; i++) {
            int h = i / GA;
            if (h < 2) assert_true(fabs(x[i] - Y[i]) < 0.5 * fabs(unguided[i] - Y[i]));
            if (h >= 5) assert_true(fabs(x[i] - unguided[i]) < 1e-4); /* independent entries: untouched */
        }
        /* no VJP: refused, unless asked for the identity approximation */
        vla_flow_field novjp = {g_velocity, NULL, &c, test_cpu_backend()};
        for (int i = 0; i < GH * GA; i++) x[i] = (float)noise[i];
        assert_int_equal(vla_rtc_integrate(&f, &novjp, &g, GH, GA, x, GH * GA), VLA_ERR_UNSUPPORTED);
        g.no_jacobian = true;
        assert_int_equal(vla_rtc_integrate(&f, &novjp, &g, GH, GA, x, GH * GA), VLA_OK);
    }
}

/* ---- GR00T's field ---- */

typedef struct {
    int mode;         /* 0: plain Euler; 1: VJP vs finite differences at one (t, x) */
    float t;
    double worst_rel; /* mode 1: the largest relative disagreement */
} probe;

static vla_status probe_integ(void *user, const vla_flow *f, const vla_flow_field *field, float *x, int64_t n) {
    probe *pr = user;
    if (pr->mode == 0) {
        float *v = malloc((size_t)n * sizeof(float));
        vla_status st = vla_flow_euler(field->ops, f, field->velocity, field->ctx, x, v, n);
        free(v);
        return st;
    }
    float *v = malloc((size_t)n * 4), *cot = malloc((size_t)n * 4), *vjp = malloc((size_t)n * 4);
    float *xp = malloc((size_t)n * 4), *vp = malloc((size_t)n * 4), *vm = malloc((size_t)n * 4);
    vla_rng r = vla_rng_stream(77, 1);
    for (int64_t i = 0; i < n; i++) cot[i] = (float)vla_rng_normal(&r);
    VLA_TRY(field->velocity(field->ctx, pr->t, x, v, n));
    VLA_TRY(field->vjp(field->ctx, cot, vjp, n));
    pr->worst_rel = 0;
    float *vp2 = malloc((size_t)n * 4), *vm2 = malloc((size_t)n * 4);
    for (int dir = 0; dir < 6; dir++) {
        /* <vjp, u> = <cot, J u>, J u by the fourth-order central difference
         * (8(v(x+h) − v(x−h)) − (v(x+2h) − v(x−2h)))/12h */
        double eps = 1e-2, lhs = 0, rhs = 0, scale = 0;
        float u[64];
        for (int64_t i = 0; i < n && i < 64; i++) u[i] = (float)vla_rng_normal(&r);
        float *outs[4] = {vp, vm, vp2, vm2};
        const double mult[4] = {1, -1, 2, -2};
        for (int k = 0; k < 4; k++) {
            for (int64_t i = 0; i < n; i++) xp[i] = x[i] + (float)(mult[k] * eps) * u[i];
            VLA_TRY(field->velocity(field->ctx, pr->t, xp, outs[k], n));
        }
        for (int64_t i = 0; i < n; i++) {
            lhs += (double)vjp[i] * u[i];
            rhs += (double)cot[i] * (8.0 * ((double)vp[i] - vm[i]) - ((double)vp2[i] - vm2[i])) / (12 * eps);
            scale += fabs((double)vjp[i] * u[i]);
        }
        double rel = fabs(lhs - rhs) / (scale > 1e-6 ? scale : 1e-6);
        printf("direction %d: <vjp,u> %.6f  FD %.6f  rel %.2e\n", dir, lhs, rhs, rel);
        if (rel > pr->worst_rel) pr->worst_rel = rel;
    }
    free(vp2), free(vm2);
    free(v), free(cot), free(vjp), free(xp), free(vp), free(vm);
    return VLA_OK;
}

static vla_policy *nano(const char *config) {
    vla_policy_config cfg;
    if (vla_policy_config_load(config, &cfg) != VLA_OK) fail_msg("config: %s", vla_error_message());
    vla_policy *p = NULL;
    if (vla_policy_create(&cfg, test_cpu_backend(), &p) != VLA_OK) fail_msg("create: %s", vla_error_message());
    assert_int_equal(vla_policy_init_weights(p, 7), VLA_OK);
    /* the published init (0.02·randn) makes a nearly constant field; widen
     * every matrix so the Jacobian is far from zero and the checks bite */
    for (int64_t i = 0; i < p->specs.n; i++) {
        const vla_param_spec *sp = &p->specs.items[i];
        bool random = sp->init == VLA_INIT_NORMAL || sp->init == VLA_INIT_UNIFORM;
        if (!random) { /* zero-initialised modulations (AdaRMS) would hide the time: move them off zero */
            vla_rng r = vla_rng_stream(8, (uint64_t)i);
            for (int64_t k = 0; k < sp->numel; k++) p->params[i].data[k] += (float)(0.1 * vla_rng_normal(&r));
        }
        if (sp->ndim < 2 || sp->init != VLA_INIT_NORMAL || sp->apply == VLA_APPLY_LOOKUP) continue;
        double fan_in = sp->ndim == 3 ? (double)sp->shape[1] : (double)(sp->numel / sp->shape[0]);
        for (int64_t k = 0; k < sp->numel; k++) p->params[i].data[k] *= (float)(1.0 / sqrt(fan_in) / sp->init_scale);
    }
    return p;
}

#define NS 2
typedef struct {
    float state[NS * 2], images[NS * 3 * 32 * 32];
    uint8_t valid[NS];
    int32_t emb[NS];
    uint64_t keys[NS];
    const char *tasks[NS];
} gobs;

static vla_observation make_obs(gobs *o) {
    vla_rng r = vla_rng_stream(5, 5);
    for (int i = 0; i < NS * 2; i++) o->state[i] = (float)vla_rng_normal(&r);
    for (int i = 0; i < NS * 3 * 32 * 32; i++) o->images[i] = vla_rng_uniform(&r);
    o->valid[0] = 1, o->valid[1] = 0; /* one with its camera, one state-only */
    o->emb[0] = 0, o->emb[1] = 1;
    o->keys[0] = 17, o->keys[1] = 99;
    o->tasks[0] = "push the T", o->tasks[1] = "go left";
    vla_observation ob = {.n_samples = NS, .task = o->tasks, .images = o->images, .image_valid = o->valid,
                          .state = o->state, .embodiment = o->emb, .seed = 3, .sample_keys = o->keys};
    return ob;
}

/* Both families' fields: GR00T's DiT head, π0.5's expert against the prefix's cached K/V. */
static void field_checks(const char *config) {
    printf("-- %s --\n", config);
    vla_policy *p = nano(config);
    assert_true(vla_rtc_supported(p));
    gobs go;
    vla_observation obs = make_obs(&go);
    const int64_t H = p->cfg.action.horizon, A = p->cfg.action.action_dim, n = NS * H * A;
    float a[NS * 16], b[NS * 16];
    assert_true(n <= NS * 16);
    assert_int_equal(vla_policy_sample_actions(p, &obs, a), VLA_OK);
    /* the field's velocity (cross K/V computed per step) integrates to the cached sampler's chunk */
    probe pr = {0, 0, 0};
    assert_int_equal(p->ops->sample_with(p, &obs, probe_integ, &pr, b), VLA_OK);
    assert_memory_equal(a, b, (size_t)n * sizeof(float));
    /* VJP vs finite differences at two flow times */
    for (int k = 0; k < 2; k++) {
        pr = (probe){1, k ? 0.75f : 0.25f, 0};
        assert_int_equal(p->ops->sample_with(p, &obs, probe_integ, &pr, b), VLA_OK);
        assert_true(pr.worst_rel < 1e-3);
    }
    /* zero weights: sample_actions' chunk */
    float target[NS * 16] = {0}, w[NS * 8] = {0};
    vla_rtc_guide g = {target, w, NULL, 5.0, false};
    assert_int_equal(vla_rtc_sample(p, &obs, &g, b), VLA_OK);
    assert_memory_equal(a, b, (size_t)n * sizeof(float));
    /* guidance: the committed steps land near a target far from the unguided chunk */
    for (int s = 0; s < NS; s++) {
        vla_rtc_prefix_weights(VLA_RTC_EXP, 2, (int)H, (int)H, w + s * H);
        for (int64_t i = 0; i < H * A; i++) target[s * H * A + i] = a[s * H * A + i] + 1.5f;
    }
    assert_int_equal(vla_rtc_sample(p, &obs, &g, b), VLA_OK);
    /* π0.5 takes 10 small Euler steps: β = 5 holds it less tightly than GR00T's 4 big ones */
    for (int s = 0; s < NS; s++)
        for (int64_t h = 0; h < 2; h++)
            for (int64_t d = 0; d < A; d++) {
                int64_t i = (s * H + h) * A + d;
                printf("sample %d step %lld dim %lld: unguided %.3f guided %.3f target %.3f\n", s, (long long)h,
                       (long long)d, a[i], b[i], target[i]);
                assert_true(fabsf(b[i] - target[i]) < 0.5f * fabsf(a[i] - target[i]));
            }
    vla_policy_free(p);
}

static void test_groot_field(void **state) {
    (void)state;
    field_checks("groot-nano");
}

static void test_pi05_field(void **state) {
    (void)state;
    field_checks("pi05-nano");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefix_weights),
        cmocka_unit_test(test_integrator_gaussian),
        cmocka_unit_test(test_groot_field),
        cmocka_unit_test(test_pi05_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
