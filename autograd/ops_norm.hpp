// autograd/ops_norm.hpp — layer normalisation (Ba, Kiros and Hinton, 2016),
// as PyTorch's nn.LayerNorm computes it.
//
// Legend: N rows (every leading axis folded together), D the normalised size
// (the product of the last axes, `normalized_shape`).
//
// Each row of D numbers is shifted to mean 0 and scaled to variance 1, then
// given a learned gain and bias:
//
//   μ = (1/D) Σ x,   σ² = (1/D) Σ (x − μ)²   (the biased variance, as PyTorch)
//   x̂ = (x − μ) / √(σ² + ε),   y = x̂ ⊙ weight + bias
//
// layer_norm is one fused op with its own backward; layer_norm_composed is
// the same function written with mean, sub, mul, sqrt, div and add, so its
// gradient is the chain rule through them: the readable specification, which
// tests/nn/test_layer_norm.cpp proves the fused op equal to. A backward
// pass that records (create_graph) takes layer_norm_composed's gradients in
// place of the kernel's, so they can be differentiated again.
#pragma once

#include "tensor/tensor.hpp"

namespace attograd {

// x: (*, normalized_shape), weight, bias: normalized_shape or undefined (no
// gain / no bias) -> (*, normalized_shape)
//
//   y  = x̂ ⊙ w + b                                            x̂ = (x − μ) · rstd
//   dx = rstd · (dx̂ − mean(dx̂) − x̂ ⊙ mean(dx̂ ⊙ x̂))            dx̂ = dy ⊙ w, means over D
//   dw = Σ_rows dy ⊙ x̂,   db = Σ_rows dy
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, real eps = real(1e-5));

// The same values and gradients from primitive ops (autograd/ops_norm.cpp).
Tensor layer_norm_composed(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                           const Tensor& bias, real eps = real(1e-5));

}  // namespace attograd
