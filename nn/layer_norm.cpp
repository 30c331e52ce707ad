// nn/layer_norm.cpp — the layer_norm op (autograd/ops_norm.cpp) on the
// module's weight and bias.
#include "nn/layer_norm.hpp"

#include <fmt/format.h>

#include "autograd/ops.hpp"
#include "nn/init.hpp"
#include "tensor/error.hpp"

namespace attograd::nn {

LayerNorm::LayerNorm(const LayerNormOptions& options) : Layer("LayerNorm"), options_(options) {
  const Shape& shape = options.normalized_shape();
  check(shape.ndim() >= 1 && shape.numel() >= 1,
        "LayerNorm: normalized_shape {} must name at least one axis of positive size, e.g. {{32}}",
        shape);
  check(options.eps() > 0, "LayerNorm: eps = {} must be positive (PyTorch's default is 1e-5)",
        options.eps());
  if (options.elementwise_affine()) {
    weight = Tensor::empty(shape);
    ones_(weight);
    register_parameter("weight", weight);
    if (options.bias()) {
      bias = Tensor::empty(shape);
      zeros_(bias);
      register_parameter("bias", bias);
    }
  }
}

// x: (*, normalized_shape) -> (*, normalized_shape)
Tensor LayerNorm::forward(const Tensor& x) {
  return layer_norm(x, options_.normalized_shape(), weight, bias,
                    static_cast<real>(options_.eps()));
}

std::string LayerNorm::extra_repr() const {
  return fmt::format("{}, eps={}, elementwise_affine={}{}", options_.normalized_shape(),
                     options_.eps(), options_.elementwise_affine(),
                     options_.bias() ? "" : ", bias=false");
}

}  // namespace attograd::nn
