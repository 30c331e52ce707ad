// autograd/ops_linear.hpp — y = x Wᵀ + b for steps that share one
// sequence's weights.
//
// A decoder runs the same layers at every word. Their weight gradients are
// sums over the steps, dW = Σ_t dy_tᵀ x_t. Built step by step (matmul, as
// nn::Linear::forward does), each step writes a fresh (out,in) matrix and the
// engine adds it into the running sum: T passes over the matrix for T rank-B
// updates. Here the steps hand their factors (dy_t, x_t) to the sequence's
// weights instead, and the weights' own node forms the gradient once, as one
// product (n,out)ᵀ @ (n,in) over the n rows the steps handed over: the same
// sum, in one pass. GRU steps do the same (autograd/ops_gru.hpp).
//
//   LinearWeights weights = linear_weights(W, b);  // once per sequence
//   y = linear(x_t, weights);                      // every step
//
// How: linear_weights records a node whose output is a one-element token;
// every step lists the token among its inputs and returns 0 as its gradient,
// so the engine runs the token's node after all the steps (it runs a node
// after everything that uses its output), when the factors are complete.
#pragma once

#include <memory>
#include <vector>

#include "tensor/tensor.hpp"

namespace attograd {

// The factors of one weight's gradient dW = dYᵀ @ X (out,in), one row per
// step and batch entry, in the order backward reached the steps.
struct WeightGradientRows {
  std::vector<real> dy;  // rows of out
  std::vector<real> x;   // rows of in
  int64_t rows = 0;

  // dy: (B,out), x: (B,in), both contiguous: B more rows.
  void append(const Tensor& dy, const Tensor& x);
  // dYᵀ @ X -> (out,in); zeros if no step handed anything over.
  Tensor product(int64_t out, int64_t in) const;
  // For the closure of the node that owns these rows, whose input `input` is
  // the weight: offered to the weight as factors first (plain SGD in
  // backward adds −lr·dYᵀX straight into it; autograd/engine.hpp), and
  // formed with product() only if refused. Undefined when taken.
  Tensor gradient(size_t input, int64_t out, int64_t in) const;
};

struct LinearWeights {
  Tensor weight;  // (out,in)
  Tensor bias;    // (out), or undefined for none
  // While recording (and the weight requires grad): the token, and where the
  // steps put their factors. Undefined/null otherwise, and linear() then
  // takes the plain path, matmul(x, Wᵀ) + b.
  Tensor token;
  std::shared_ptr<WeightGradientRows> factors;
};

// A Linear layer's weight and bias, prepared for one sequence of steps.
LinearWeights linear_weights(const Tensor& weight, const Tensor& bias);

// x: (B,in) -> (B,out) = x Wᵀ + b, one graph node. The values and the
// gradients of x and b are those of matmul(x, Wᵀ) + b; W's gradient goes
// through `weights` and reaches W once, when backward has passed every step.
//
//   y  = x Wᵀ + b        (B,in) @ (in,out) → (B,out)
//   dx = dy W            (B,out) @ (out,in) → (B,in)
//   db = Σ_batch dy      (out)
//   dW = Σ_steps dyᵀ x   formed by the token's node
Tensor linear(const Tensor& x, const LinearWeights& weights);

// linear(x, weights) for values computed already: y (B,out) must hold
// x Wᵀ + b, worked out earlier without recording — a greedy decoder computes
// each step's scores to choose its next word. Records the node linear()
// would, with y as its output, instead of computing the product again.
// Nothing but the shapes is checked: y must be those values.
Tensor linear_recorded(const Tensor& x, const LinearWeights& weights, const Tensor& y);

namespace detail {

// out: (B,N) = input (B,K) @ weightᵀ + bias, no recording. weight is stored
// (N,K), as a module keeps it (the kernel reads it transposed, no copy);
// bias is (N) or undefined for none. input, weight and bias are contiguous.
void affine_forward(real* out, const Tensor& input, const Tensor& weight, const Tensor& bias,
                    int64_t B, int64_t K, int64_t N);

}  // namespace detail

}  // namespace attograd
