/* rope.c — rotary position embedding (rotate-half form), forward and backward. */
#include "nn/rope.h"

#include <math.h>

#define PAR_MIN (1 << 14)

/* sign +1 rotates by +a (forward), −1 by −a (the transpose, for backward);
 * accumulate adds into out instead of storing. */
static void rope_apply(float *out, const float *in, const int32_t *pos, int64_t n, int64_t heads, int64_t hd,
                       double theta, double sign, int accumulate) {
    int64_t half = hd / 2;
#pragma omp parallel for if (n * heads * hd > PAR_MIN)
    for (int64_t t = 0; t < n; t++) {
        for (int64_t i = 0; i < half; i++) {
            double a = (double)pos[t] * pow(theta, -2.0 * (double)i / (double)hd);
            float c = (float)cos(a), s = (float)(sign * sin(a));
            for (int64_t h = 0; h < heads; h++) {
                const float *x = in + (t * heads + h) * hd;
                float *y = out + (t * heads + h) * hd;
                float x1 = x[i], x2 = x[i + half];
                float y1 = x1 * c - x2 * s, y2 = x2 * c + x1 * s;
                if (accumulate) {
                    y[i] += y1;
                    y[i + half] += y2;
                } else {
                    y[i] = y1;
                    y[i + half] = y2;
                }
            }
        }
    }
}

void vla_rope_forward(float *out, const float *in, const int32_t *pos, int64_t n, int64_t heads, int64_t head_dim,
                      double theta) {
    rope_apply(out, in, pos, n, heads, head_dim, theta, 1.0, 0);
}

void vla_rope_backward(float *d_in, const float *d_out, const int32_t *pos, int64_t n, int64_t heads,
                       int64_t head_dim, double theta) {
    rope_apply(d_in, d_out, pos, n, heads, head_dim, theta, -1.0, 1);
}
