// nn/linear.cpp — y = x Wᵀ + b: the linear op (autograd/ops_linear.cpp) on
// the layer's weight and bias, whose backward gives dx = dy W, dW = dyᵀ x and
// db = Σ_rows dy.
#include "nn/linear.hpp"

#include <cmath>

#include "autograd/ops.hpp"
#include "nn/init.hpp"
#include "tensor/error.hpp"

namespace attograd::nn {

Linear::Linear(const LinearOptions& options, Generator& generator)
    : Layer("Linear"), options_(options) {
  check(options.in_features() > 0 && options.out_features() > 0,
        "Linear: in_features ({}) and out_features ({}) must both be positive",
        options.in_features(), options.out_features());
  weight = Tensor::empty({options.out_features(), options.in_features()});
  if (options.bias()) bias = Tensor::empty({options.out_features()});
  reset_parameters(generator);
  register_parameter("weight", weight);
  if (options.bias()) register_parameter("bias", bias);
}

// PyTorch's default (kaiming_uniform_ with a = √5 for the weight) comes to
// U[−1/√in, 1/√in] for both weight and bias.
void Linear::reset_parameters(Generator& generator) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(options_.in_features()));
  uniform_(weight, -bound, bound, generator);
  if (bias.defined()) uniform_(bias, -bound, bound, generator);
}

// x: (*, in) -> (*, out)
Tensor Linear::forward(const Tensor& x) {
  check(x.defined(), "Linear: the input is undefined");
  check(x.dim() >= 1 && x.shape()[x.dim() - 1] == options_.in_features(),
        "Linear: input of shape {} must end in in_features = {} (expected (*, {}))", x.shape(),
        options_.in_features(), options_.in_features());
  // One op, y = x Wᵀ + b (autograd/ops_linear.hpp), on rows: any leading
  // axes are folded into the rows, (*, in) -> (N, in), and unfolded after.
  if (x.dim() == 2) return linear(x, weight, bias);  // (N, out)
  Shape out_shape = x.shape();
  out_shape.back() = options_.out_features();
  return reshape(linear(reshape(x, {-1, options_.in_features()}), weight, bias), out_shape);
}

std::string Linear::extra_repr() const {
  return fmt::format("in_features={}, out_features={}, bias={}", options_.in_features(),
                     options_.out_features(), options_.bias());
}

}  // namespace attograd::nn
