/* activations.h — pointwise nonlinearities: GELU (tanh approximation, as
 * PyTorch's gelu(approximate="tanh") and Gemma/SigLIP's gelu_pytorch_tanh),
 * SiLU (swish) and ReLU, as op calls (the kernels are the backend's; the
 * vla_act enum is tensor/ops.h's). Forward may run in place (out == in);
 * backward writes d_in = d_out·f'(in) and needs the forward's input. */
#ifndef VLA_NN_ACTIVATIONS_H
#define VLA_NN_ACTIVATIONS_H

#include <stdint.h>

#include "tensor/ops.h"

static inline void vla_act_forward(const vla_ops *ops, vla_act act, float *out, const float *in, int64_t n) {
    ops->act_forward(act, out, in, n);
}
static inline void vla_act_backward(const vla_ops *ops, vla_act act, float *d_in, const float *d_out, const float *in,
                                    int64_t n) {
    ops->act_backward(act, d_in, d_out, in, n, 1, NULL);
}
static inline void vla_silu_forward(const vla_ops *ops, float *out, const float *in, int64_t n) {
    ops->act_forward(VLA_ACT_SILU, out, in, n);
}
static inline void vla_silu_backward(const vla_ops *ops, float *d_in, const float *d_out, const float *in, int64_t n) {
    ops->act_backward(VLA_ACT_SILU, d_in, d_out, in, n, 1, NULL);
}
static inline void vla_relu_forward(const vla_ops *ops, float *out, const float *in, int64_t n) {
    ops->act_forward(VLA_ACT_RELU, out, in, n);
}
static inline void vla_relu_backward(const vla_ops *ops, float *d_in, const float *d_out, const float *in, int64_t n) {
    ops->act_backward(VLA_ACT_RELU, d_in, d_out, in, n, 1, NULL);
}
static inline void vla_gelu_tanh_forward(const vla_ops *ops, float *out, const float *in, int64_t n) {
    ops->act_forward(VLA_ACT_GELU_TANH, out, in, n);
}
static inline void vla_gelu_tanh_backward(const vla_ops *ops, float *d_in, const float *d_out, const float *in,
                                          int64_t n) {
    ops->act_backward(VLA_ACT_GELU_TANH, d_in, d_out, in, n, 1, NULL);
}

#endif
