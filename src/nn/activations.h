/* activations.h — pointwise nonlinearities: GELU (tanh approximation, as
 * PyTorch's gelu(approximate="tanh") and Gemma/SigLIP's gelu_pytorch_tanh),
 * SiLU (swish) and ReLU. Forward may run in place (out == in); backward
 * adds d_out·f'(in) into d_in and needs the forward's input. */
#ifndef VLA_NN_ACTIVATIONS_H
#define VLA_NN_ACTIVATIONS_H

#include <stdint.h>

typedef enum { VLA_ACT_GELU_TANH, VLA_ACT_SILU, VLA_ACT_RELU, VLA_ACT_IDENTITY } vla_act;

void vla_gelu_tanh_forward(float *out, const float *in, int64_t n);
void vla_gelu_tanh_backward(float *d_in, const float *d_out, const float *in, int64_t n);
void vla_silu_forward(float *out, const float *in, int64_t n);
void vla_silu_backward(float *d_in, const float *d_out, const float *in, int64_t n);
void vla_relu_forward(float *out, const float *in, int64_t n);
void vla_relu_backward(float *d_in, const float *d_out, const float *in, int64_t n);

/* Dispatch on a vla_act. */
void vla_act_forward(vla_act act, float *out, const float *in, int64_t n);
void vla_act_backward(vla_act act, float *d_in, const float *d_out, const float *in, int64_t n);
/* One scalar, for fused loops elsewhere in nn (value and derivative). */
float vla_act_value(vla_act act, float x);
float vla_act_grad(vla_act act, float x);

#endif
