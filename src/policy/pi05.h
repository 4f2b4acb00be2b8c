/* pi05.h — the π0.5-style policy (openpi pi0.py / pi0_pytorch.py with
 * pi05=True): SigLIP-style ViT → projector → Gemma-style LM over the
 * prefix (image + text tokens), and a Gemma-style action expert with
 * AdaRMSNorm on the flow time over the action tokens, the two joined in one
 * prefix-LM attention per layer (mixture of transformers). Everything else
 * goes through policy.h; this header adds the constructor and the
 * reference sampler the tests compare the KV-cached one with.
 *
 * Conventions (openpi models/pi0.py, gemma.py): text embeddings ×sqrt(width);
 * image tokens are projector(ViT) with no scaling (openpi's JAX path);
 * RMSNorm (1 + w), eps language.norm_eps for LM and expert; RoPE theta
 * language.rope_theta on every token with the batch's positions; GeGLU MLPs;
 * time embedding sin‖cos with periods geometric in [time_min_period,
 * time_max_period], then time_mlp_in → swish → time_mlp_out → swish = the
 * AdaRMS condition; loss MSE over real entries (not action_is_pad, d <
 * real_action_dim), mean over those entries (VLA_MSE_MEAN_REAL). The LM's
 * final norm (language_model.norm) is kept in the inventory for checkpoints
 * but feeds nothing (openpi discards the prefix output), so its gradient
 * is 0. */
#ifndef VLA_POLICY_PI05_H
#define VLA_POLICY_PI05_H

#include "policy/policy.h"

vla_status vla_pi05_create(const vla_policy_config *cfg, const vla_ops *ops, vla_policy **out);

/* Sampling without the KV cache: every Euler step reruns the whole packed
 * sequence (prefix + action tokens) through the training forward. Slow; for
 * tests. Same initial noise and steps as sample_actions. */
vla_status vla_pi05_sample_actions_uncached(vla_policy *p, const vla_observation *obs, float *actions);

/* The policy's ViT (tests of the shared vision tower); NULL for other families. */
struct vla_vit;
struct vla_vit *vla_pi05_vit(vla_policy *p);

#endif
