/* groot.h — the GR00T-N1.5-style policy (Isaac-GR00T GR00T_N1_5: Eagle 2.5
 * backbone cut after language.depth Qwen3 layers, flow-matching DiT action
 * head; as ported in lerobot v0.5.1 policies/groot/). Everything else goes
 * through policy.h; this header adds the constructor and the test hooks.
 *
 * Conventions: SigLIP pixels 2x − 1 (vit.h); image rows of the LM input are
 * mlp1(ViT) with no scaling, text rows the token embedding (Qwen3 does not
 * scale); Qwen3 RMSNorm eps language.norm_eps, q_norm/k_norm before RoPE
 * (theta language.rope_theta, the batch's positions), causal by the batch's
 * groups; the VL features are the final RMSNorm of the last kept layer.
 * Action head LayerNorm eps 1e-5 (DiT norm_out 1e-6); flow time t, x_t,
 * target and the masked MSE (VLA_MSE_MEAN_REAL) as flow.h's GROOT
 * convention; the network sees the bucket int(t·1000) through diffusers
 * Timesteps(cos first, shift 1) for AdaLN and sin‖cos (shift 0) in the
 * action encoder. The decoder runs on the H action rows only. Dropout is not
 * implemented (training = the deterministic forward). */
#ifndef VLA_POLICY_GROOT_H
#define VLA_POLICY_GROOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

vla_status vla_groot_create(const vla_policy_config *cfg, const vla_ops *ops, vla_policy **out);

/* Sampling that recomputes the VL features (backbone + VL self-attention)
 * at every Euler step instead of once. Same noise and steps as
 * sample_actions; for tests. */
vla_status vla_groot_sample_actions_uncached(vla_policy *p, const vla_observation *obs, float *actions);

/* The flow time [S] and noise [S, horizon, action_dim] the last loss call
 * drew (valid until the next loss call); for exporting reference inputs. */
vla_status vla_groot_last_flow(vla_policy *p, const float **t, const float **noise, int32_t *n_samples);

/* Bytes the last loss call kept for its backward (activations, the packed
 * batch's index arrays, flow draws). A frozen backbone keeps nothing but its
 * output, so this shows what freezing saves. */
size_t vla_groot_saved_bytes(const vla_policy *p);

/* Shared prefixes (on by default): samples of a batch whose prefixes are
 * identical (no image, the same prompt: a one-task state-only dataset) run
 * the backbone and the VL adapter once per distinct prefix; the loss and
 * gradients are those of the unshared run up to summation order. Turning
 * it off is for tests; the count is the distinct prefixes the last loss
 * call ran (its sample count when nothing was shared). */
void vla_groot_set_share_prefixes(vla_policy *p, bool on);
int32_t vla_groot_last_prefix_count(const vla_policy *p);

#endif
