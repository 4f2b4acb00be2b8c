/* flow.h — flow-matching pieces that do not depend on the network: the
 * time and noise draws, the interpolant and its target velocity, the masked
 * MSE loss with its gradient, and Euler integration at sampling time.
 *
 * The two families use opposite time conventions:
 *   π0.5  (openpi pi0.py): t = Beta(1.5, 1)·0.999 + 0.001, t = 1 is noise;
 *         x_t = t·noise + (1 − t)·actions, target u = noise − actions;
 *         sampling: Euler from t = 1 to 0, dt = −1/steps (10 steps).
 *   GR00T (lerobot v0.5.1 flow_matching_action_head.py):
 *         t = (0.999 − Beta(1.5, 1))/0.999, t = 1 is data;
 *         x_t = (1 − t)·noise + t·actions, target = actions − noise;
 *         the network sees the bucket int(t·1000);
 *         sampling: Euler at t_k = k/steps, k = 0..steps−1, dt = 1/steps (4 steps).
 *
 * Randomness is a pure function of (seed, sample_key, purpose): sample_key
 * is the *global* sample counter of the draw (the sampler's position in the
 * global stream, not the rank-local index or the dataset row), so the same
 * run split over 1 or 64 ranks, or resumed, draws the same t and noise for
 * every sample. */
#ifndef VLA_POLICY_FLOW_H
#define VLA_POLICY_FLOW_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/rng.h"
#include "base/status.h"
#include "policy/config.h"
#include "tensor/key_cache.h"
#include "tensor/ops.h"

/* vla_flow_convention and vla_mse_reduction are tensor/ops.h's: the
 * interpolant and the loss are backend ops (flow_interpolate, masked_mse).
 * The draws below run on the host (they are a few floats per sample, and
 * host draws give every backend the same noise); the policy uploads them. */

typedef struct {
    vla_flow_convention conv;
    double beta_alpha, beta_beta; /* t's Beta distribution (1.5, 1) */
    double time_scale;            /* 0.999 in both (openpi's factor; GR00T's noise_s) */
    int64_t steps;                /* Euler steps at sampling */
    int64_t timestep_buckets;     /* GR00T: 1000 */
} vla_flow;

/* The convention and constants of a config. */
void vla_flow_from_config(vla_flow *f, const vla_policy_config *cfg);

/* Independent streams per purpose for one sample. */
typedef enum { VLA_FLOW_RNG_TIME = 1, VLA_FLOW_RNG_NOISE = 2, VLA_FLOW_RNG_SAMPLING = 3 } vla_flow_rng_purpose;
vla_rng vla_flow_rng(uint64_t seed, uint64_t sample_key, vla_flow_rng_purpose purpose);

/* Training time of one sample (see the conventions above). */
float vla_flow_sample_time(const vla_flow *f, uint64_t seed, uint64_t sample_key);
/* n standard-normal floats for one sample (training noise, or the starting
 * point of sampling with purpose SAMPLING). */
void vla_flow_sample_noise(uint64_t seed, uint64_t sample_key, vla_flow_rng_purpose purpose, float *noise,
                           int64_t n);
/* GR00T's discretised timestep int(t·buckets) (truncation toward zero, as Python's int / .long()). */
int32_t vla_flow_time_bucket(const vla_flow *f, float t);

/* Masked MSE over S samples × H steps × D dims (row-major [S, H, D]),
 * through ops->masked_mse (pred, target, d_pred in backend memory).
 * An entry counts when its step is not padding (is_pad[s·H + h] == 0; is_pad
 * may be NULL) and its dim is below the sample's real action dim (real_dims[s];
 * NULL means all D); both are host arrays. The loss is Σ mask·err² over the
 * reduction's denominator, or over `divisor` when divisor > 0
 * (vla_batch.loss_divisor: the data-parallel trainer passes 1 and divides
 * by the global count itself). Returns the loss; when d_pred is not NULL it
 * is *overwritten* with ∂loss/∂pred (zero on masked entries). A batch with
 * no real entries has loss 0 and gradient 0. With loss_sum (backend memory,
 * vla_policy.loss_sum) the loss is added there instead, nothing is read
 * back, and the return is NaN. */
static inline double vla_flow_masked_mse(const vla_ops *ops, const float *pred, const float *target, int64_t S,
                                         int64_t H, int64_t D, const uint8_t *is_pad, const int32_t *real_dims,
                                         vla_mse_reduction red, double divisor, float *d_pred, double *loss_sum) {
    if (!loss_sum) return ops->masked_mse(pred, target, S, H, D, is_pad, real_dims, red, divisor, d_pred);
    ops->masked_mse_acc(pred, target, S, H, D, is_pad, real_dims, red, divisor, d_pred, loss_sum);
    return NAN;
}

/* Velocity callback for sampling: v = model(x, t) for the whole chunk (x, v
 * in backend memory). */
typedef vla_status (*vla_velocity_fn)(void *ctx, float t, const float *x, float *v, int64_t n);

/* Integrate x (n floats in backend memory, starting from noise) in place
 * with f->steps Euler steps in the family's direction (x += dt·v through
 * ops->axpy); `scratch` holds n floats for v. */
vla_status vla_flow_euler(const vla_ops *ops, const vla_flow *f, vla_velocity_fn fn, void *ctx, float *x,
                          float *scratch, int64_t n);

/* CHUNKS AS CAPTURED REGIONS. A policy's cached sampling integrates its
 * chunk in buffers it keeps (vla_flow_chunk: grown as needed, so their
 * addresses repeat), and runs the Euler loop — every flow step's ops, the
 * prefix's K/V read in place — as a captured region (tensor/ops.h,
 * run_captured): on cuda, recorded once per key and replayed as one CUDA
 * graph. The key is what the loop depends on: the flow (steps, direction),
 * n, the buffers' addresses, the weight copies' state (vla_policy_region_key_add),
 * where the step's activations start in the family's arena (arena_at: the
 * address of an allocation made at the step's arena mark) and the family's
 * own bytes (its token layout: whatever decides the ops and the host data
 * they upload). */
typedef struct {
    float *x, *v;
    int64_t floats;
} vla_flow_chunk;
/* x and v of at least n floats each (the old ones freed when they grow) */
vla_status vla_flow_chunk_reserve(const vla_ops *ops, vla_flow_chunk *c, int64_t n);
void vla_flow_chunk_free(const vla_ops *ops, vla_flow_chunk *c);
/* vla_flow_euler(ops, f, fn, ctx, c->x, c->v, n) as a captured region: key holds the family's parts
 * (its layout, vla_policy_region_key_add's, arena_at); the flow's are added here. Releases key. */
vla_status vla_flow_euler_captured(const vla_ops *ops, const vla_flow *f, vla_velocity_fn fn, void *ctx,
                                   const vla_flow_chunk *c, int64_t n, vla_key *key);

/* The velocity field of one sampling call, for integrators other than plain
 * Euler (real-time chunking, policy/rtc.h): `velocity` as above; `vjp`, when
 * not NULL, gives out = (∂v/∂x)ᵀ·cot at the (t, x) of the last velocity call
 * (a vector-Jacobian product through the network's action side: the
 * observation's encoding is a constant of the flow). */
typedef struct {
    vla_velocity_fn velocity;
    vla_status (*vjp)(void *ctx, const float *cot, float *out, int64_t n);
    void *ctx;
    const vla_ops *ops; /* the backend whose memory x, v, cot and out live in */
} vla_flow_field;

/* An integrator: x holds the starting noise on entry (n floats in the
 * field's backend memory, the samples' chunks end to end) and the sample on
 * return. */
typedef vla_status (*vla_flow_integrator)(void *user, const vla_flow *f, const vla_flow_field *field, float *x,
                                          int64_t n);

#endif
