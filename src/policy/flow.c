/* flow.c — flow-matching time/noise draws (host) and Euler sampling (op
 * calls) for the π0.5 and GR00T conventions (see flow.h). */
#include "policy/flow.h"
#include "policy/family.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void vla_flow_from_config(vla_flow *f, const vla_policy_config *cfg) {
    memset(f, 0, sizeof *f);
    f->beta_alpha = cfg->flow.beta_alpha;
    f->beta_beta = cfg->flow.beta_beta;
    f->time_scale = cfg->flow.time_scale;
    f->steps = cfg->flow.steps;
    f->timestep_buckets = 1000;
    if (cfg->family) cfg->family->flow(cfg, f); /* the convention and its bucketing */
}

vla_rng vla_flow_rng(uint64_t seed, uint64_t sample_key, vla_flow_rng_purpose purpose) {
    /* Each purpose gets its own Philox key, so the draws of one purpose never
     * depend on how many numbers another consumed. */
    return vla_rng_stream(seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)purpose), sample_key);
}

float vla_flow_sample_time(const vla_flow *f, uint64_t seed, uint64_t sample_key) {
    vla_rng r = vla_flow_rng(seed, sample_key, VLA_FLOW_RNG_TIME);
    double b = vla_rng_beta(&r, f->beta_alpha, f->beta_beta);
    double s = f->time_scale;
    if (f->conv == VLA_FLOW_PI05) return (float)(b * s + (1.0 - s)); /* openpi: Beta·0.999 + 0.001 */
    return (float)((s - b) / s);                                     /* GR00T: (noise_s − Beta)/noise_s */
}

void vla_flow_sample_noise(uint64_t seed, uint64_t sample_key, vla_flow_rng_purpose purpose, float *noise,
                           int64_t n) {
    vla_rng r = vla_flow_rng(seed, sample_key, purpose);
    for (int64_t i = 0; i < n; i++) noise[i] = (float)vla_rng_normal(&r);
}

int32_t vla_flow_time_bucket(const vla_flow *f, float t) {
    return (int32_t)(t * (float)f->timestep_buckets); /* C's cast truncates toward zero, like Python int() */
}

vla_status vla_flow_euler(const vla_ops *ops, const vla_flow *f, vla_velocity_fn fn, void *ctx, float *x, float *v,
                          int64_t n) {
    if (f->steps < 1) return vla_error(VLA_ERR_INVALID_ARG, "flow sampling: steps must be at least 1");
    if (f->conv == VLA_FLOW_PI05) {
        /* openpi sample_actions: dt = −1/num_steps, time starts at 1 and is
         * accumulated in float32 while time >= −dt/2 (exactly `steps` passes). */
        float dt = -1.0f / (float)f->steps, t = 1.0f;
        for (int64_t k = 0; k < f->steps; k++) {
            VLA_TRY(fn(ctx, t, x, v, n));
            ops->axpy(x, dt, v, n);
            t += dt;
        }
    } else {
        /* GR00T get_action: t_cont = k/num_steps, dt = 1/num_steps. */
        float dt = 1.0f / (float)f->steps;
        for (int64_t k = 0; k < f->steps; k++) {
            float t = (float)((double)k / (double)f->steps);
            VLA_TRY(fn(ctx, t, x, v, n));
            ops->axpy(x, dt, v, n);
        }
    }
    return VLA_OK;
}

vla_status vla_flow_chunk_reserve(const vla_ops *ops, vla_flow_chunk *c, int64_t n) {
    if (n <= c->floats && c->x && c->v) return VLA_OK;
    vla_flow_chunk_free(ops, c);
    c->x = ops->alloc((size_t)n * sizeof(float));
    c->v = ops->alloc((size_t)n * sizeof(float));
    if (!c->x || !c->v) {
        vla_flow_chunk_free(ops, c);
        return vla_error(VLA_ERR_NOMEM, "sampling: out of backend memory for a chunk of %lld floats", (long long)n);
    }
    c->floats = n;
    return VLA_OK;
}

void vla_flow_chunk_free(const vla_ops *ops, vla_flow_chunk *c) {
    if (c->x) ops->free(c->x);
    if (c->v) ops->free(c->v);
    c->x = c->v = NULL, c->floats = 0;
}

typedef struct {
    const vla_ops *ops;
    const vla_flow *f;
    vla_velocity_fn fn;
    void *ctx;
    float *x, *v;
    int64_t n;
} euler_region;

static vla_status euler_body(void *vr) {
    const euler_region *r = vr;
    return vla_flow_euler(r->ops, r->f, r->fn, r->ctx, r->x, r->v, r->n);
}

vla_status vla_flow_euler_captured(const vla_ops *ops, const vla_flow *f, vla_velocity_fn fn, void *ctx,
                                   const vla_flow_chunk *c, int64_t n, vla_key *key) {
    euler_region r = {ops, f, fn, ctx, c->x, c->v, n};
    const void *bufs[2] = {c->x, c->v};
    vla_key_add(key, "euler1", 6);
    vla_key_add(key, f, sizeof *f); /* its padding as its maker left it: zeroed (vla_flow_from_config) */
    vla_key_add(key, &n, sizeof n);
    vla_key_add(key, bufs, sizeof bufs);
    /* no key, no region: the loop as it is */
    vla_status st = key->failed ? euler_body(&r) : vla_ops_run_captured(ops, key->b, key->n, euler_body, &r);
    vla_key_release(key);
    return st;
}
