// nn/linear.cpp — y = x Wᵀ + b, built from matmul, transpose and add.
//
// The gradients come from those ops: dx = dy W, dW = dyᵀ x, db = Σ_rows dy
// (the add broadcasts b over the rows, and the engine's sum_to folds it back).
#include "nn/linear.hpp"

#include <cmath>

#include "autograd/ops.hpp"
#include "nn/init.hpp"
#include "tensor/error.hpp"

namespace attograd::nn {

Linear::Linear(const LinearOptions& options, Generator& generator)
    : Layer("Linear"), options_(options) {
  check(options.in_features > 0 && options.out_features > 0,
        "Linear: in_features ({}) and out_features ({}) must both be positive", options.in_features,
        options.out_features);
  // PyTorch's default (kaiming_uniform_ with a = √5 for the weight) comes to
  // U[−1/√in, 1/√in] for both weight and bias.
  const double bound = 1.0 / std::sqrt(static_cast<double>(options.in_features));
  weight = Tensor::empty({options.out_features, options.in_features});
  uniform_(weight, -bound, bound, generator);
  register_parameter("weight", weight);
  if (options.has_bias) {
    bias = Tensor::empty({options.out_features});
    uniform_(bias, -bound, bound, generator);
    register_parameter("bias", bias);
  }
}

// x: (*, in) -> (*, out)
Tensor Linear::forward(const Tensor& x) {
  check(x.defined(), "Linear: the input is undefined");
  check(x.dim() >= 1 && x.shape()[x.dim() - 1] == options_.in_features,
        "Linear: input of shape {} must end in in_features = {} (expected (*, {}))", x.shape(),
        options_.in_features, options_.in_features);
  // One op, y = x Wᵀ + b (autograd/ops_linear.hpp), whose weight gradient
  // dyᵀx is formed by its own node — or never formed, when plain SGD in
  // backward takes it as factors and adds it straight into W.
  if (x.dim() == 2) return linear(x, sequence_weights());  // (N, out)
  // Any other rank: fold the leading axes into rows, (*, in) -> (N, in), and
  // unfold the result.
  Shape out_shape = x.shape();
  out_shape.back() = options_.out_features;
  return reshape(linear(reshape(x, {-1, options_.in_features}), sequence_weights()), out_shape);
}

LinearWeights Linear::sequence_weights() const { return linear_weights(weight, bias); }

// x: (B,in) -> (B,out)
Tensor Linear::forward(const Tensor& x, const LinearWeights& weights) {
  check(weights.weight.defined() && weights.weight.same(weight),
        "Linear: the sequence weights passed to forward belong to another layer; take them "
        "from this layer's sequence_weights()");
  return linear(x, weights);
}

std::string Linear::extra_repr() const {
  return fmt::format("in_features={}, out_features={}, bias={}", options_.in_features,
                     options_.out_features, options_.has_bias);
}

}  // namespace attograd::nn
