/* ops_cpu_flow.c — the CPU backend's flow-matching pieces: the interpolant
 * x_t with its target velocity, and the masked MSE with its gradient
 * (policy/flow.h has the two conventions and the masking rule). */
#include "tensor/cpu/ops_cpu_internal.h"

#include <string.h>

void vla_cpu_flow_interpolate(vla_flow_convention conv, float *x_t, float *target, const float *actions,
                              const float *noise, const float *t, int64_t S, int64_t per) {
    for (int64_t s = 0; s < S; s++) {
        const float ts = t[s], *a = actions + s * per, *z = noise + s * per;
        float *x = x_t ? x_t + s * per : NULL, *u = target ? target + s * per : NULL;
        if (conv == VLA_FLOW_PI05) { /* t = 1 is noise */
            for (int64_t i = 0; i < per; i++) {
                if (x) x[i] = ts * z[i] + (1.0f - ts) * a[i];
                if (u) u[i] = z[i] - a[i];
            }
        } else { /* GR00T: t = 1 is data */
            for (int64_t i = 0; i < per; i++) {
                if (x) x[i] = (1.0f - ts) * z[i] + ts * a[i];
                if (u) u[i] = a[i] - z[i];
            }
        }
    }
}

double vla_cpu_masked_mse(const float *pred, const float *target, int64_t S, int64_t H, int64_t D,
                          const uint8_t *is_pad, const int32_t *real_dims, vla_mse_reduction red, double divisor,
                          float *d_pred) {
    double sum = 0, count = 0;
    for (int64_t s = 0; s < S; s++) {
        int64_t rd = real_dims ? real_dims[s] : D;
        if (rd > D) rd = D;
        if (rd < 0) rd = 0;
        for (int64_t h = 0; h < H; h++) {
            if (is_pad && is_pad[s * H + h]) continue;
            const float *p = pred + (s * H + h) * D, *t = target + (s * H + h) * D;
            for (int64_t d = 0; d < rd; d++) {
                double e = (double)p[d] - (double)t[d];
                sum += e * e;
            }
            count += (double)rd;
        }
    }
    double denom = divisor > 0 ? divisor : red == VLA_MSE_MEAN_REAL ? count : (double)(S * H * D);
    double loss = denom > 0 && count > 0 ? sum / denom : 0.0;
    if (d_pred) {
        memset(d_pred, 0, (size_t)(S * H * D) * sizeof(float));
        if (denom > 0 && count > 0) {
            double g = 2.0 / denom;
            for (int64_t s = 0; s < S; s++) {
                int64_t rd = real_dims ? real_dims[s] : D;
                if (rd > D) rd = D;
                for (int64_t h = 0; h < H; h++) {
                    if (is_pad && is_pad[s * H + h]) continue;
                    int64_t o = (s * H + h) * D;
                    for (int64_t d = 0; d < rd; d++)
                        d_pred[o + d] = (float)(g * ((double)pred[o + d] - (double)target[o + d]));
                }
            }
        }
    }
    return loss;
}

void vla_cpu_masked_mse_acc(const float *pred, const float *target, int64_t S, int64_t H, int64_t D,
                            const uint8_t *is_pad, const int32_t *real_dims, vla_mse_reduction red, double divisor,
                            float *d_pred, double *loss_sum) {
    *loss_sum += vla_cpu_masked_mse(pred, target, S, H, D, is_pad, real_dims, red, divisor, d_pred);
}
