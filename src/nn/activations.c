/* activations.c — GELU (tanh), SiLU and ReLU, forward and backward. */
#include "nn/activations.h"

#include "tensor/parallel.h"
#include "tensor/vecmath.h"

/* Loops are `omp simd` so the vecmath.h kernels vectorise. The team's `if`
 * names `parallel:` — a bare `if` on a combined `parallel for simd` also
 * applies to `simd`, and a false one turns vectorisation off. */
#define PAR_MIN VLA_PAR_MIN_ELEMS

static inline float gelu_value(float x) { return vla_gelu_tanhf(x); }
static inline float gelu_grad(float x) { return vla_gelu_tanh_gradf(x); }
static inline float sigmoid(float x) { return vla_sigmoidf(x); }
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
#pragma omp parallel for simd if (parallel : n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) out[i] = gelu_value(in[i]);
}
void vla_gelu_tanh_backward(float *d_in, const float *d_out, const float *in, int64_t n) {
#pragma omp parallel for simd if (parallel : n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) d_in[i] += d_out[i] * gelu_grad(in[i]);
}
void vla_silu_forward(float *out, const float *in, int64_t n) {
#pragma omp parallel for simd if (parallel : n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) out[i] = silu_value(in[i]);
}
void vla_silu_backward(float *d_in, const float *d_out, const float *in, int64_t n) {
#pragma omp parallel for simd if (parallel : n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) d_in[i] += d_out[i] * silu_grad(in[i]);
}
void vla_relu_forward(float *out, const float *in, int64_t n) {
#pragma omp parallel for simd if (parallel : n > PAR_MIN)
    for (int64_t i = 0; i < n; i++) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}
void vla_relu_backward(float *d_in, const float *d_out, const float *in, int64_t n) {
#pragma omp parallel for simd if (parallel : n > PAR_MIN)
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
