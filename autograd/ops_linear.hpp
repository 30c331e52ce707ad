// autograd/ops_linear.hpp — the fully connected layer's op, y = x Wᵀ + b.
//
// One node rather than matmul, transpose and add: the weight stays in the
// (out,in) layout a module keeps it in (PyTorch's), the kernel reads it
// transposed without a copy, and the backward names the weight's gradient
// dyᵀx as a product (Gradient::product), which the fast path keeps as its
// factors when the same weight serves many steps
// (autograd/fast/deferred_gradient.hpp). A backward pass that records
// (create_graph) forms the same three gradients with matmul, transpose and
// sum of x, W and dy as given, so they can be differentiated again.
#pragma once

#include <vector>

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

// A layer applied at each step t of a sentence to [a_t; b_t], where every
// a_t (1,n_a) is known before the first step and b_t (1,n_b) is not (a
// teacher-forced decoder's embedded word and its attention context):
//
//   y_t = [a_t b_t] Wᵀ + bias     (1,n_a+n_b) @ (n_a+n_b,out) → (1,out)
//
// step(t, b_t) is linear(cat({a_t, b_t}, 1), weight, bias). With the fast
// path's sentence products on (autograd/fast/sentence_products.hpp) the
// a_t's block of W takes all T of them in one product when this is built,
// P = linear_columns(A, W, 0, bias) (T,out), and step t takes only b_t
// through the other block, linear_columns(b_t, W, n_a, P[t]): the same sums
// in another order.
class KnownInputsLinear {
 public:
  // known: T tensors a_t of (1,n_a); weight: (out,n_a+n_b); bias: (out) or undefined.
  KnownInputsLinear(std::vector<Tensor> known, Tensor weight, Tensor bias);
  // b: (1,n_b) -> y_t (1,out)
  Tensor step(int64_t t, const Tensor& b) const;

 private:
  std::vector<Tensor> known_;
  Tensor weight_, bias_;
  Tensor known_part_;  // P (T,out) when sentence products are on, else undefined
};

}  // namespace attograd
