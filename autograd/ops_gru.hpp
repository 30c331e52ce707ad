// autograd/ops_gru.hpp — the GRU step as one fused node (autograd/ops_gru.cpp).
//
// PyTorch's GRUCell, gates stacked r, z, n:
//   r = σ(x W_irᵀ + b_ir + h W_hrᵀ + b_hr),  z = σ(x W_izᵀ + b_iz + h W_hzᵀ + b_hz),
//   n = tanh(x W_inᵀ + b_in + r ⊙ (h W_hnᵀ + b_hn)),  h' = (1 − z) ⊙ n + z ⊙ h.
// The GRU layers of nn/ are built on these two ops.
#pragma once

#include "tensor/tensor.hpp"

namespace attograd {

// x: (B,in), h: (B,H), weight_ih: (3H,in), weight_hh: (3H,H), biases: (3H) or
// undefined for none -> h': (B,H)
Tensor gru_cell(const Tensor& x, const Tensor& h, const Tensor& weight_ih, const Tensor& weight_hh,
                const Tensor& bias_ih, const Tensor& bias_hh);

// The same step with the input's projection gi = x W_ihᵀ + b_ih made
// beforehand (for a whole sequence at once, by linear()): gi: (B,3H), h: (B,H),
// weight_hh: (3H,H), bias_hh: (3H) or undefined -> h': (B,H)
Tensor gru_cell_projected(const Tensor& gi, const Tensor& h, const Tensor& weight_hh,
                          const Tensor& bias_hh);

}  // namespace attograd
