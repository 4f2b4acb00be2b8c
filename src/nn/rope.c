/* rope.c — rotary position embedding (rotate-half form), forward and backward. */
#include "nn/rope.h"

#include <math.h>
#include <stdlib.h>

#include "tensor/parallel.h"

#define PAR_MIN VLA_PAR_MIN_ELEMS

/* cos and sin of pos·θ^(−2i/hd) for i < half, computed in double exactly as
 * the per-token formula (so a table row is bitwise what that would give). */
static void angles(float *c, float *s, int32_t pos, const double *inv_freq, int64_t half, double sign) {
    for (int64_t i = 0; i < half; i++) {
        double a = (double)pos * inv_freq[i];
        c[i] = (float)cos(a);
        s[i] = (float)(sign * sin(a));
    }
}

/* sign +1 rotates by +a (forward), −1 by −a (the transpose, for backward);
 * accumulate adds into out instead of storing. Packed positions repeat per
 * sample, so cos/sin come from a table over the distinct positions 0..max
 * when that is smaller than the token count (pow, sin and cos per token
 * were ~5% of a pi05-tiny training step). */
static void rope_apply(float *out, const float *in, const int32_t *pos, int64_t n, int64_t heads, int64_t hd,
                       double theta, double sign, int accumulate) {
    int64_t half = hd / 2;
    if (n <= 0 || half <= 0) return;
    double *inv_freq = malloc((size_t)half * sizeof(double));
    int32_t pmin = pos[0], pmax = pos[0];
    for (int64_t t = 1; t < n; t++) {
        if (pos[t] < pmin) pmin = pos[t];
        if (pos[t] > pmax) pmax = pos[t];
    }
    int64_t npos = (int64_t)pmax - pmin + 1;
    float *table = inv_freq && npos <= n ? malloc((size_t)(npos * 2 * half) * sizeof(float)) : NULL;
    if (inv_freq)
        for (int64_t i = 0; i < half; i++) inv_freq[i] = pow(theta, -2.0 * (double)i / (double)hd);
    if (table)
        for (int64_t p = 0; p < npos; p++)
            angles(table + p * 2 * half, table + p * 2 * half + half, (int32_t)(pmin + p), inv_freq, half, sign);
#pragma omp parallel if (n * heads * hd > PAR_MIN)
    {
        float *cs_local = table ? NULL : malloc((size_t)(2 * half) * sizeof(float));
#pragma omp for
        for (int64_t t = 0; t < n; t++) {
            const float *c, *s;
            if (table) {
                c = table + (int64_t)(pos[t] - pmin) * 2 * half;
            } else if (inv_freq && cs_local) {
                angles(cs_local, cs_local + half, pos[t], inv_freq, half, sign);
                c = cs_local;
            } else { /* out of memory for 8·half bytes: the slow path, one angle at a time */
                for (int64_t i = 0; i < half; i++) {
                    double a = (double)pos[t] * pow(theta, -2.0 * (double)i / (double)hd);
                    float ci = (float)cos(a), si = (float)(sign * sin(a));
                    for (int64_t h = 0; h < heads; h++) {
                        const float *x = in + (t * heads + h) * hd;
                        float *y = out + (t * heads + h) * hd;
                        float x1 = x[i], x2 = x[i + half];
                        float y1 = x1 * ci - x2 * si, y2 = x2 * ci + x1 * si;
                        if (accumulate) y[i] += y1, y[i + half] += y2;
                        else y[i] = y1, y[i + half] = y2;
                    }
                }
                continue;
            }
            s = c + half;
            for (int64_t h = 0; h < heads; h++) {
                const float *x = in + (t * heads + h) * hd;
                float *y = out + (t * heads + h) * hd;
                if (accumulate) {
                    for (int64_t i = 0; i < half; i++) {
                        float x1 = x[i], x2 = x[i + half];
                        y[i] += x1 * c[i] - x2 * s[i];
                        y[i + half] += x2 * c[i] + x1 * s[i];
                    }
                } else {
                    for (int64_t i = 0; i < half; i++) {
                        float x1 = x[i], x2 = x[i + half];
                        y[i] = x1 * c[i] - x2 * s[i];
                        y[i + half] = x2 * c[i] + x1 * s[i];
                    }
                }
            }
        }
        free(cs_local);
    }
    free(table);
    free(inv_freq);
}

void vla_rope_forward(float *out, const float *in, const int32_t *pos, int64_t n, int64_t heads, int64_t head_dim,
                      double theta) {
    rope_apply(out, in, pos, n, heads, head_dim, theta, 1.0, 0);
}

void vla_rope_backward(float *d_in, const float *d_out, const int32_t *pos, int64_t n, int64_t heads,
                       int64_t head_dim, double theta) {
    rope_apply(d_in, d_out, pos, n, heads, head_dim, theta, -1.0, 1);
}
