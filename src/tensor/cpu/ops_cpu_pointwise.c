/* ops_cpu_pointwise.c — the CPU backend's per-element and per-row kernels
 * that are not norms: GELU (tanh) / SiLU / ReLU and the gated MLP's
 * act(gate)·up, RoPE, and the sinusoidal time embeddings.
 *
 * Loops are `omp simd` so the vecmath.h kernels vectorise. The team's `if`
 * names `parallel:` — a bare `if` on a combined `parallel for simd` also
 * applies to `simd`, and a false one turns vectorisation off. */
#include "tensor/cpu/ops_cpu_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/cpu/parallel.h"
#include "tensor/cpu/vecmath.h"

#define PAR_MIN VLA_PAR_MIN_ELEMS

/* ---- activations ------------------------------------------------------------ */

static inline float gelu_value(float x) { return vla_gelu_tanhf(x); }
static inline float gelu_grad(float x) { return vla_gelu_tanh_gradf(x); }
static inline float sigmoid(float x) { return vla_sigmoidf(x); }
static inline float silu_value(float x) { return x * sigmoid(x); }
static inline float silu_grad(float x) {
    float s = sigmoid(x);
    return s * (1.0f + x * (1.0f - s));
}

static float act_value(vla_act act, float x) {
    switch (act) {
    case VLA_ACT_GELU_TANH: return gelu_value(x);
    case VLA_ACT_SILU: return silu_value(x);
    case VLA_ACT_RELU: return x > 0.0f ? x : 0.0f;
    default: return x;
    }
}

static float act_grad(vla_act act, float x) {
    switch (act) {
    case VLA_ACT_GELU_TANH: return gelu_grad(x);
    case VLA_ACT_SILU: return silu_grad(x);
    case VLA_ACT_RELU: return x > 0.0f ? 1.0f : 0.0f;
    default: return 1.0f;
    }
}

static void gelu_tanh_forward(float *out, const float *in, int64_t n) {
#pragma omp parallel for simd if (parallel : n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) out[i] = gelu_value(in[i]);
}
static void gelu_tanh_backward(float *d_in, const float *d_out, const float *in, int64_t n) {
#pragma omp parallel for simd if (parallel : n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) d_in[i] = d_out[i] * gelu_grad(in[i]);
}
static void silu_forward(float *out, const float *in, int64_t n) {
#pragma omp parallel for simd if (parallel : n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) out[i] = silu_value(in[i]);
}
static void silu_backward(float *d_in, const float *d_out, const float *in, int64_t n) {
#pragma omp parallel for simd if (parallel : n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) d_in[i] = d_out[i] * silu_grad(in[i]);
}
static void relu_forward(float *out, const float *in, int64_t n) {
#pragma omp parallel for simd if (parallel : n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}
static void relu_backward(float *d_in, const float *d_out, const float *in, int64_t n) {
#pragma omp parallel for simd if (parallel : n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) d_in[i] = in[i] > 0.0f ? d_out[i] : 0.0f;
}

void vla_cpu_act_forward(vla_act act, float *out, const float *in, int64_t n) {
    switch (act) {
    case VLA_ACT_GELU_TANH: gelu_tanh_forward(out, in, n); return;
    case VLA_ACT_SILU: silu_forward(out, in, n); return;
    case VLA_ACT_RELU: relu_forward(out, in, n); return;
    default:
        if (out != in)
            for (int64_t i = 0; i < n; i++) out[i] = in[i];
        return;
    }
}

void vla_cpu_act_backward(vla_act act, float *d_in, const float *d_out, const float *in, int64_t rows, int64_t cols,
                          void *ready) {
    int64_t n = rows * cols;
    switch (act) {
    case VLA_ACT_GELU_TANH: gelu_tanh_backward(d_in, d_out, in, n); break;
    case VLA_ACT_SILU: silu_backward(d_in, d_out, in, n); break;
    case VLA_ACT_RELU: relu_backward(d_in, d_out, in, n); break;
    default:
        if (d_in != d_out) memcpy(d_in, d_out, sizeof(float) * (size_t)(n > 0 ? n : 0));
        break;
    }
    if (ready) vla_cpu_bf16_ready(ready, d_in, n);
}

/* ---- gated MLP ------------------------------------------------------------- */

/* h = act(gate)·up, the activation resolved outside the loop so it vectorises; then h's ready copy */
void vla_cpu_glu_forward(vla_act act, float *h, const float *gate, const float *up, int64_t rows, int64_t cols,
                         void *ready, const vla_fp8_operand *ready_fp8) {
    int64_t nh = rows * cols;
    float *out = h;
    h = vla_cpu_out_or_temp(out, nh); /* out NULL: the copy alone is kept (ops.h), made from a temporary */
    if (act == VLA_ACT_GELU_TANH) {
#pragma omp parallel for simd if (parallel : nh > PAR_MIN)
        for (int64_t i = 0; i < nh; i++) h[i] = vla_gelu_tanhf(gate[i]) * up[i];
    } else if (act == VLA_ACT_SILU) {
#pragma omp parallel for simd if (parallel : nh > PAR_MIN)
        for (int64_t i = 0; i < nh; i++) h[i] = gate[i] * vla_sigmoidf(gate[i]) * up[i];
    } else {
#pragma omp parallel for if (nh > PAR_MIN)
        for (int64_t i = 0; i < nh; i++) h[i] = act_value(act, gate[i]) * up[i];
    }
    if (ready && ready_fp8) vla_cpu_fp8_ready(ready, h, nh, ready_fp8);
    else if (ready) vla_cpu_bf16_ready(ready, h, nh);
    vla_cpu_temp_done(out, h);
}

void vla_cpu_glu_backward(vla_act act, float *dgate, float *dup, const float *dh, const float *gate, const float *up,
                          int64_t rows, int64_t cols, void *ready_dgate, void *ready_dup) {
    int64_t nh = rows * cols;
    if (act == VLA_ACT_GELU_TANH) {
#pragma omp parallel for simd if (parallel : nh > PAR_MIN)
        for (int64_t i = 0; i < nh; i++) {
            float v, gr = vla_gelu_tanh_value_gradf(gate[i], &v);
            dgate[i] = dh[i] * up[i] * gr;
            dup[i] = dh[i] * v;
        }
    } else if (act == VLA_ACT_SILU) { /* the same expressions as activations.c's silu_value/silu_grad */
#pragma omp parallel for simd if (parallel : nh > PAR_MIN)
        for (int64_t i = 0; i < nh; i++) {
            float g = gate[i], sg = vla_sigmoidf(g);
            dgate[i] = dh[i] * up[i] * (sg * (1.0f + g * (1.0f - sg)));
            dup[i] = dh[i] * (g * sg);
        }
    } else {
#pragma omp parallel for if (nh > PAR_MIN)
        for (int64_t i = 0; i < nh; i++) {
            dgate[i] = dh[i] * up[i] * act_grad(act, gate[i]);
            dup[i] = dh[i] * act_value(act, gate[i]);
        }
    }
    if (ready_dgate) vla_cpu_bf16_ready(ready_dgate, dgate, nh);
    if (ready_dup) vla_cpu_bf16_ready(ready_dup, dup, nh);
}

/* ---- RoPE (rotate-half, explicit positions) ----------------------------------- */

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

void vla_cpu_rope_forward(float *out, const float *in, const int32_t *pos, int64_t n, int64_t heads, int64_t head_dim,
                      double theta) {
    rope_apply(out, in, pos, n, heads, head_dim, theta, 1.0, 0);
}

void vla_cpu_rope_backward(float *d_in, const float *d_out, const int32_t *pos, int64_t n, int64_t heads,
                       int64_t head_dim, double theta) {
    rope_apply(d_in, d_out, pos, n, heads, head_dim, theta, -1.0, 0);
}

/* ---- time embeddings (GR00T, diffusers and openpi conventions) ----------------- */

static double freq(const vla_temb_config *cfg, int64_t k) {
    int64_t half = cfg->dim / 2;
    if (cfg->kind == VLA_TEMB_PERIODS) {
        double frac = half > 1 ? (double)k / (double)(half - 1) : 0.0;
        return 2.0 * M_PI / (cfg->min_period * pow(cfg->max_period / cfg->min_period, frac));
    }
    return exp(-log(cfg->max_period) * (double)k / ((double)half - cfg->shift));
}

void vla_cpu_time_embedding_forward(const vla_temb_config *cfg, float *out, const float *t, int64_t n) {
    int64_t half = cfg->dim / 2;
    int64_t sin_off = cfg->cos_first ? half : 0, cos_off = cfg->cos_first ? 0 : half;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < half; k++) {
            double a = (double)t[i] * freq(cfg, k);
            out[i * cfg->dim + sin_off + k] = (float)sin(a);
            out[i * cfg->dim + cos_off + k] = (float)cos(a);
        }
}

void vla_cpu_time_embedding_backward(const vla_temb_config *cfg, float *d_t, const float *d_out, const float *t,
                                 int64_t n) {
    int64_t half = cfg->dim / 2;
    int64_t sin_off = cfg->cos_first ? half : 0, cos_off = cfg->cos_first ? 0 : half;
    for (int64_t i = 0; i < n; i++) {
        double s = 0.0;
        for (int64_t k = 0; k < half; k++) {
            double f = freq(cfg, k), a = (double)t[i] * f;
            s += d_out[i * cfg->dim + sin_off + k] * f * cos(a) - d_out[i * cfg->dim + cos_off + k] * f * sin(a);
        }
        d_t[i] += (float)s;
    }
}
