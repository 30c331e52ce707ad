// autograd/ops_gru.hpp — the GRU step, and a GRU over a whole sequence, each as
// one fused node (autograd/ops_gru.cpp).
//
// PyTorch's GRUCell, gates stacked r, z, n:
//   r = σ(x W_irᵀ + b_ir + h W_hrᵀ + b_hr),  z = σ(x W_izᵀ + b_iz + h W_hzᵀ + b_hz),
//   n = tanh(x W_inᵀ + b_in + r ⊙ (h W_hnᵀ + b_hn)),  h' = (1 − z) ⊙ n + z ⊙ h.
// The GRU layers of nn/ are built on these two ops. A backward pass that
// records (create_graph) takes the gradients of the same step written with
// linear, slice, sigmoid, tanh and mul instead of the fused kernels', so
// they can be differentiated again.
#pragma once

#include "tensor/tensor.hpp"

namespace attograd {

// x: (B,in), h: (B,H), weight_ih: (3H,in), weight_hh: (3H,H), biases: (3H) or
// undefined for none -> h': (B,H)
Tensor gru_cell(const Tensor& x, const Tensor& h, const Tensor& weight_ih, const Tensor& weight_hh,
                const Tensor& bias_ih, const Tensor& bias_hh);

// A whole sequence as one graph node (the GRU of nn/gru.cpp, one layer):
// h_t = GRUCell(x_t, h_{t−1}) for t = 1 … T, every h_t returned.
//   x: (T,B,in), h0: (B,H) or undefined for zeros, weight_ih: (3H,in),
//   weight_hh: (3H,H), biases: (3H) or undefined -> (T,B,H)
// The input's projection is one product over all T·B rows; backward runs the
// steps in reverse and forms dx, dW_ih and dW_hh as one product each over the
// sequence (autograd/ops_gru.cpp has the derivation).
Tensor gru_sequence(const Tensor& x, const Tensor& h0, const Tensor& weight_ih,
                    const Tensor& weight_hh, const Tensor& bias_ih, const Tensor& bias_hh);

}  // namespace attograd
