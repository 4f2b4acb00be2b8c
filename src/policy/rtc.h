/* rtc.h — real-time chunking (Black, Galliker, Levine 2025, "Real-Time
 * Execution of Action Chunking Flow Policies", arXiv 2506.07339): the next
 * chunk is sampled while the current one executes; its first d actions (the
 * inference delay, in control steps) are held to actions the robot has
 * already committed to, and the overlap with the rest of the previous chunk
 * is blended, by guided inpainting of the flow (the paper's Algorithm 1,
 * GUIDEDINFERENCE):
 *
 *   in the paper's time τ (0 = noise, 1 = data), with A the chunk being denoised,
 *     Â¹  = A + (1 − τ)·v(A, o, τ)                 the denoised estimate
 *     e   = W ⊙ (Y − Â¹)                             Y: the committed/previous actions
 *     g   = eᵀ·∂Â¹/∂A = e + (1 − τ)·(∂v/∂A)ᵀ·e       a vector-Jacobian product
 *     A  += (1/n)·(v + min(β, (1−τ)/τ · (τ² + (1−τ)²)/(1−τ)²)·g)
 *   W (Eq. 5): 1 on the first d steps, then c·(e^c − 1)/(e − 1) with
 *   c = (end − i)/(end − d + 1) on d ≤ i < end, 0 from `end` on (end = H − s,
 *   where the previous chunk's actions run out); β caps the guidance (5 in
 *   the paper; LeRobot's default 10).
 *
 * The families' own times differ (flow.h): GR00T's t is τ and its velocity
 * the paper's; π0.5 runs t = 1 − τ with v = noise − actions = −v_paper.
 * The integrator below works in τ and converts, so one derivation serves
 * both (the sign is where published ports disagree; see docs/serve.md,
 * "Real-time chunking"). The VJP comes from the family's velocity field
 * (flow.h vla_flow_field: a backward pass through the action side with the
 * observation's encoding held fixed); `no_jacobian` replaces it by the
 * identity (g = e), an ablation.
 *
 * Everything here works in the policy's normalised action space: callers
 * turn the committed actions (env units, maybe absolute while the policy
 * predicts relative actions) into that space first (vla_rtc_prefix_from_env). */
#ifndef VLA_POLICY_RTC_H
#define VLA_POLICY_RTC_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "policy/normalize.h"
#include "policy/policy.h"

typedef enum { VLA_RTC_EXP, VLA_RTC_LINEAR, VLA_RTC_ONES, VLA_RTC_ZEROS } vla_rtc_schedule;

/* "exp", "linear", "ones", "zeros". */
vla_status vla_rtc_schedule_parse(const char *s, vla_rtc_schedule *out);
const char *vla_rtc_schedule_name(vla_rtc_schedule s);

/* Eq. 5's soft mask for one chunk of H steps: d committed steps, the
 * previous chunk's actions reaching up to step `end` (exclusive). */
void vla_rtc_prefix_weights(vla_rtc_schedule s, int d, int end, int H, float *w);
/* The guidance weight at paper time τ: min(β, (1−τ)/τ · (τ² + (1−τ)²)/(1−τ)²) (β at τ = 0). */
double vla_rtc_guidance_weight(double tau, double beta);

typedef struct {
    const float *target;      /* [S, H, A] Y in normalised policy space (rows past `end` are ignored) */
    const float *weights;     /* [S, H] W (vla_rtc_prefix_weights); a row of zeros samples that sample unguided */
    const int32_t *real_dims; /* [S] action dims that count (the rest are padding), or NULL for all A */
    double beta;              /* max guidance weight β */
    bool no_jacobian;         /* g = e instead of the VJP (an ablation) */
} vla_rtc_guide;

/* Can this policy sample with guidance (its family fills sample_with)? */
bool vla_rtc_supported(const vla_policy *p);
/* sample_actions with guidance: obs and actions as vla_policy_sample_actions;
 * the starting noise is the same, so with all weights 0 the result equals
 * sample_actions'. Fails with VLA_ERR_UNSUPPORTED naming the family when it
 * has no velocity field, or no VJP (unless no_jacobian). */
vla_status vla_rtc_sample(vla_policy *p, const vla_observation *obs, const vla_rtc_guide *g, float *actions);

/* The guided integrator itself, on any velocity field (tests drive it with
 * closed-form fields): x [S·H·A] from noise to a sample, S = n / (H·A). */
vla_status vla_rtc_integrate(const vla_flow *f, const vla_flow_field *field, const vla_rtc_guide *g, int64_t H,
                             int64_t A, float *x, int64_t n);

/* Committed actions in env units → the guide's target rows in normalised
 * policy space, for one sample: `prev` holds n_prev rows of `width` env
 * dims (the previous chunk's actions from the new observation's step on);
 * with relative actions the policy predicts action − ref (ref: the
 * observation.state the new chunk is conditioned on, `width` values; NULL
 * for absolute actions); then normalised per step with the action
 * normaliser (vla_normalize_chunk: pooled or per-step statistics) into
 * rows of A (≥ width) dims, zero-padded; rows n_prev..H−1 are zero. */
void vla_rtc_prefix_from_env(const vla_normalizer *action_norm, const float *prev, int n_prev, int width,
                             const double *ref, int64_t H, int64_t A, float *target);

#endif
