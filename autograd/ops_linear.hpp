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

// x: (B,n), weight: (out,in), first_column f with f + n ≤ in, bias: (out) or
// undefined -> (B,out): the layer applied to one part of its input, x in
// columns [f, f+n) and zeros elsewhere — linear(cat(0, x, 0), weight, bias)
// without the zeros. W's block is read in place.
//
//   y  = x W[:, f:f+n]ᵀ + b      (B,n) @ (n,out) → (B,out)
//   dx = dy W[:, f:f+n]          (B,out) @ (out,n) → (B,n)
//   dW = dyᵀ [0 x 0]             (out,B) @ (B,in) → (out,in), zero outside columns f…f+n−1
//   db = Σ_batch dy              (out)
//
// So a layer over [a_t; b_t] at every step t of a sentence, where the a_t
// are known before the first step, can take all the a_t through their block
// of W in one product, P = linear_columns(A, W, 0, bias) (T,out), and each
// step only its b_t through the other, linear_columns(b_t, W, n_a, P[t]),
// with its row of P as the bias: the sums of linear(cat(a_t, b_t), W, bias)
// in another order.
Tensor linear_columns(const Tensor& x, const Tensor& weight, int64_t first_column,
                      const Tensor& bias);

// linear(x, weight, bias) whose values y (B,out) were computed already,
// without recording: a greedy decoder computes each step's output layer to
// choose its next word, and the loss then needs the same values recorded.
// y is recorded as linear's output, so the product is made once rather than
// twice; nothing but the shapes is checked, so y must be those values. With
// the fast path's value reuse off (fast::set_reuse_forward_values(false),
// autograd/fast/forward_values.hpp) this is linear(x, weight, bias) and y is
// not read. Same gradients as linear.
Tensor linear_with_values(const Tensor& x, const Tensor& weight, const Tensor& bias,
                          const Tensor& y);

}  // namespace attograd
