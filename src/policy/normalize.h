/* normalize.h — per-channel normalisation of state and action features
 * before the policy, and the inverse on the actions it predicts.
 *
 * Modes and formulas follow LeRobot's NormalizerProcessorStep (eps 1e-8 by
 * default), which π0.5 (QUANTILES) and GR00T ports use:
 *   MEAN_STD:  y = (x − mean) / (std + eps)
 *   MIN_MAX:   y = 2·(x − min) / d − 1,  d = max − min, or eps where d == 0
 *   QUANTILES: y = 2·(x − q01) / d − 1,  d = q99 − q01, or eps where d == 0
 *   IDENTITY:  y = x
 * and the exact inverses with the same d (openpi's inverse also uses
 * std + eps; LeRobot's MEAN_STD inverse multiplies by std alone, which
 * differs by a relative eps/std). Degenerate statistics (std 0, a
 * constant channel with min == max) therefore map the constant to 0 (or −1
 * for MIN_MAX/QUANTILES) instead of dividing by zero, and unnormalising
 * gives the constant back.
 * openpi's own transforms add the epsilon unconditionally instead
 * ((x − q01)/(q99 − q01 + 1e-6)·2 − 1, (x − mean)/(std + 1e-6));
 * VLA_NORM_EPS_OPENPI selects that form (with eps = 1e-6) to match openpi
 * checkpoints bit for bit. No clipping is done in either form.
 * Isaac-GR00T's Normalizer (gr00t/data/transform/state_action.py) has no
 * epsilon and treats a degenerate channel its own way; VLA_NORM_EPS_GROOT
 * follows it for GR00T fine-tunes read with their metadata.json:
 *   MIN_MAX:   2·(x − min)/(max − min) − 1; min == max → 0
 *   QUANTILES: 2·(x − q01)/(q99 − q01) − 1, then clipped to [−1, 1];
 *              q01 == q99 → x (clipped)
 *   MEAN_STD:  (x − mean)/std; std == 0 → x
 * with inverses (y + 1)/2·(hi − lo) + lo and y·std + mean (not exact on a
 * degenerate channel, as in GR00T). */
#ifndef VLA_POLICY_NORMALIZE_H
#define VLA_POLICY_NORMALIZE_H

#include <jansson.h>
#include <stdint.h>

#include "base/status.h"
#include "policy/config.h"

typedef enum {
    VLA_NORM_EPS_LEROBOT, /* eps only where the range is exactly 0; std + eps */
    VLA_NORM_EPS_OPENPI,  /* eps always added to the range / std */
    VLA_NORM_EPS_GROOT,   /* no eps; GR00T's handling of degenerate channels and quantile clipping */
} vla_norm_eps_style;

typedef struct {
    vla_norm_mode mode;
    vla_norm_eps_style style;
    int64_t dim;
    float eps;
    float *lo, *hi; /* MEAN_STD: mean, std; MIN_MAX: min, max; QUANTILES: q01, q99 (owned copies) */
} vla_normalizer;

/* Copies the statistics. `a`/`b` are the mode's pair (mean/std, min/max,
 * q01/q99) of `dim` floats each; both may be NULL for IDENTITY. eps ≤ 0
 * picks the style's default (1e-8 LeRobot, 1e-6 openpi). Fails, naming the
 * channel, on non-finite statistics, std < 0 or max < min. */
vla_status vla_normalizer_init(vla_normalizer *n, vla_norm_mode mode, vla_norm_eps_style style, int64_t dim,
                               const float *a, const float *b, float eps);
void vla_normalizer_free(vla_normalizer *n);
/* "lerobot", "openpi", "groot": the style's name in config.json. */
const char *vla_norm_style_name(vla_norm_eps_style s);

/* y = normalise(x) over `rows` rows of `dim` channels; y may alias x. */
void vla_normalize(const vla_normalizer *n, float *y, const float *x, int64_t rows);
void vla_unnormalize(const vla_normalizer *n, float *y, const float *x, int64_t rows);

/* An action chunk of H steps, step h's `width` channels at x + h·stride, in
 * place. n holds either `width` statistics, pooled over the chunk's steps
 * (every step normalised alike), or H·width, one set per step (step h uses
 * channels h·width … (h+1)·width − 1: per-horizon-step statistics, see
 * train/loader.h). Any other n->dim is a caller's bug and leaves x as is. */
void vla_normalize_chunk(const vla_normalizer *n, float *x, int64_t H, int64_t width, int64_t stride);
void vla_unnormalize_chunk(const vla_normalizer *n, float *x, int64_t H, int64_t width, int64_t stride);

/* ---- normaliser <-> JSON (for checkpoints) --------------------------------
 * {"mode": "quantiles", "style": "lerobot", "eps": 1e-8, "lo": [...], "hi": [...]} */
json_t *vla_norm_to_json(const vla_normalizer *n);
vla_status vla_norm_from_json(const char *what, const json_t *j, vla_normalizer *n);

#endif
