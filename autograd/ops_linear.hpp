// autograd/ops_linear.hpp — the fully connected layer's op, y = x Wᵀ + b.
//
// One node rather than matmul, transpose and add: the weight stays in the
// (out,in) layout a module keeps it in (PyTorch's), the kernel reads it
// transposed without a copy, and the backward names the weight's gradient
// dyᵀx as a product (Gradient::product), which the fast path keeps as its
// factors when the same weight serves many steps
// (autograd/fast/deferred_gradient.hpp).
#pragma once

#include "tensor/tensor.hpp"

namespace attograd {

// x: (B,in), weight: (out,in), bias: (out) or undefined for none -> (B,out)
//
//   y  = x Wᵀ + b        (B,in) @ (in,out) → (B,out)
//   dx = dy W            (B,out) @ (out,in) → (B,in)
//   dW = dyᵀ x           (out,B) @ (B,in)   → (out,in)
//   db = Σ_batch dy      (out)
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

namespace detail {

// Records linear(x, weight, bias) with `y` as its output: the values must
// already be x Wᵀ + b (autograd/fast/forward_values.hpp; only shapes are checked).
Tensor record_linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor y);

}  // namespace detail

}  // namespace attograd
