/* step_guard.h — a training step's guard as one function for host and
 * device (base/hd.h): torch.nn.utils.clip_grad_norm_'s coefficient, or NaN
 * when the step must not update. The op table's clip_coef (cpu and cuda)
 * and ZeRO-1's host path (distributed/zero1.c) all compute it here, so the
 * two paths give the same f32 bits. */
#ifndef VLA_TENSOR_STEP_GUARD_H
#define VLA_TENSOR_STEP_GUARD_H

#include <math.h>
#include <stdbool.h>

#include "base/hd.h"

/* norm = sqrt(sumsq). NaN when norm is not finite or (check_also) `also`
 * is not finite; else min(1, max_norm/(norm + 1e−6)) computed in double and
 * rounded to f32 once, 1 when max_norm <= 0 (no clipping). */
VLA_HD float vla_step_guard(double sumsq, bool check_also, double also, double max_norm) {
    double norm = sqrt(sumsq);
    if (!isfinite(norm) || (check_also && !isfinite(also))) return NAN;
    float clip = 1.0f;
    if (max_norm > 0) {
        double c = max_norm / (norm + 1e-6);
        if (c < 1.0) clip = (float)c;
    }
    return clip;
}

#endif
