/* activations.c — GELU (tanh), SiLU and ReLU, forward and backward. */
#include "nn/activations.h"

#include <math.h>

#define PAR_MIN (1 << 15)
#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_C 0.044715f

static inline float gelu_value(float x) {
    float u = GELU_K * (x + GELU_C * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
}

static inline float gelu_grad(float x) {
    float u = GELU_K * (x + GELU_C * x * x * x);
    float th = tanhf(u);
    float du = GELU_K * (1.0f + 3.0f * GELU_C * x * x);
    return 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
}

static inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
static inline float silu_value(float x) { return x * sigmoid(x); }
static inline float silu_grad(float x) {
    float s = sigmoid(x);
    return s * (1.0f + x * (1.0f - s));
}

float vla_act_value(vla_act act, float x) {
    switch (act) {
    case VLA_ACT_GELU_TANH: return gelu_value(x);
    case VLA_ACT_SILU: return silu_value(x);
    case VLA_ACT_RELU: return x > 0.0f ? x : 0.0f;
    default: return x;
    }
}

float vla_act_grad(vla_act act, float x) {
    switch (act) {
    case VLA_ACT_GELU_TANH: return gelu_grad(x);
    case VLA_ACT_SILU: return silu_grad(x);
    case VLA_ACT_RELU: return x > 0.0f ? 1.0f : 0.0f;
    default: return 1.0f;
    }
}

void vla_gelu_tanh_forward(float *out, const float *in, int64_t n) {
#pragma omp parallel for if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) out[i] = gelu_value(in[i]);
}
void vla_gelu_tanh_backward(float *d_in, const float *d_out, const float *in, int64_t n) {
#pragma omp parallel for if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) d_in[i] += d_out[i] * gelu_grad(in[i]);
}
void vla_silu_forward(float *out, const float *in, int64_t n) {
#pragma omp parallel for if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) out[i] = silu_value(in[i]);
}
void vla_silu_backward(float *d_in, const float *d_out, const float *in, int64_t n) {
#pragma omp parallel for if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) d_in[i] += d_out[i] * silu_grad(in[i]);
}
void vla_relu_forward(float *out, const float *in, int64_t n) {
#pragma omp parallel for if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}
void vla_relu_backward(float *d_in, const float *d_out, const float *in, int64_t n) {
#pragma omp parallel for if (n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) d_in[i] += in[i] > 0.0f ? d_out[i] : 0.0f;
}

void vla_act_forward(vla_act act, float *out, const float *in, int64_t n) {
    switch (act) {
    case VLA_ACT_GELU_TANH: vla_gelu_tanh_forward(out, in, n); return;
    case VLA_ACT_SILU: vla_silu_forward(out, in, n); return;
    case VLA_ACT_RELU: vla_relu_forward(out, in, n); return;
    default:
        if (out != in)
            for (int64_t i = 0; i < n; i++) out[i] = in[i];
        return;
    }
}

void vla_act_backward(vla_act act, float *d_in, const float *d_out, const float *in, int64_t n) {
    switch (act) {
    case VLA_ACT_GELU_TANH: vla_gelu_tanh_backward(d_in, d_out, in, n); return;
    case VLA_ACT_SILU: vla_silu_backward(d_in, d_out, in, n); return;
    case VLA_ACT_RELU: vla_relu_backward(d_in, d_out, in, n); return;
    default:
        for (int64_t i = 0; i < n; i++) d_in[i] += d_out[i];
        return;
    }
}
