// autograd/ops_norm.cpp — layer_norm, fused and composed (autograd/ops_norm.hpp).
//
// The backward, for one row of D numbers (r = rstd = 1/√(σ² + ε)):
//
//   x̂_j = (x_j − μ) r, and x reaches x̂_j three ways: directly, through μ, and
//   through σ² (∂σ²/∂x_i = 2(x_i − μ)/D, ∂r/∂σ² = −r³/2), so
//
//     ∂x̂_j/∂x_i = r (δ_ij − 1/D) − x̂_j x̂_i r / D
//
//   and with dx̂ = dy ⊙ w summed over j:
//
//     dx_i = r (dx̂_i − (1/D) Σ_j dx̂_j − x̂_i (1/D) Σ_j dx̂_j x̂_j)
//
// So backward needs x̂ (N,D) and r (N), both saved by forward, and w. The loops
// are kernels::layer_norm_forward and layer_norm_backward (tensor/kernels_norm.cpp).
#include "autograd/ops_norm.hpp"

#include <fmt/format.h>

#include <cmath>

#include "autograd/engine.hpp"
#include "autograd/op_helpers.hpp"
#include "autograd/ops.hpp"
#include "tensor/kernels.hpp"

namespace attograd {

namespace {

// The checks both forms share; returns D, the size of one normalised row.
int64_t check_layer_norm(const char* op, const Tensor& x, const Shape& normalized_shape,
                         const Tensor& weight, const Tensor& bias, real eps) {
  check_defined(op, x);
  const int64_t k = normalized_shape.ndim();
  bool trailing = k >= 1 && k <= x.dim();
  for (int64_t i = 0; trailing && i < k; ++i) {
    trailing = x.shape()[x.dim() - k + i] == normalized_shape[i];
  }
  check(trailing,
        "{}: input of shape {} does not end in normalized_shape {}; normalized_shape must be the "
        "input's last axes, e.g. ({}) for features on the last axis",
        op, x.shape(), normalized_shape, x.dim() >= 1 ? x.shape()[x.dim() - 1] : 0);
  check(normalized_shape.numel() >= 1, "{}: normalized_shape {} holds no elements", op,
        normalized_shape);
  for (const auto& [name, t] : {std::pair<const char*, const Tensor&>{"weight", weight},
                                std::pair<const char*, const Tensor&>{"bias", bias}}) {
    check(!t.defined() || t.shape() == normalized_shape,
          "{}: the {} has shape {}; it must be normalized_shape {}, or undefined for none", op,
          name, t.defined() ? t.shape() : Shape{}, normalized_shape);
  }
  check(eps > 0, "{}: eps is {}; it must be positive (PyTorch's default is 1e-5)", op, eps);
  return normalized_shape.numel();
}

Tensor values_of(const Tensor& t) { return t.defined() ? detach(t).contiguous_data() : t; }

}  // namespace

// x: (*, normalized_shape) -> (*, normalized_shape)
Tensor layer_norm(const Tensor& x_in, const Shape& normalized_shape, const Tensor& weight_in,
                  const Tensor& bias_in, real eps) {
  const int64_t D = check_layer_norm("layer_norm", x_in, normalized_shape, weight_in, bias_in, eps);
  const int64_t N = x_in.numel() / D;
  const Tensor x = values_of(x_in), weight = values_of(weight_in), bias = values_of(bias_in);
  Tensor y = Tensor::empty(x_in.shape());
  Tensor x_hat = Tensor::empty({N, D});
  Tensor rstd = Tensor::empty({N});
  kernels::layer_norm_forward(y.data(), x_hat.data(), rstd.data(), x.data(),
                              weight.defined() ? weight.data() : nullptr,
                              bias.defined() ? bias.data() : nullptr, N, D, eps);
  const bool need_x = requires_grad(x_in);
  const bool need_weight = weight_in.defined() && requires_grad(weight_in);
  const bool need_bias = bias_in.defined() && requires_grad(bias_in);
  // dy (*, normalized_shape) -> dx (*, normalized_shape), dweight, dbias normalized_shape
  // Recording (create_graph), the gradients of layer_norm_composed instead:
  // the same function as ops, so differentiable again.
  return record("layer_norm", y, {x_in, weight_in, bias_in},
                [eps, x_hat, rstd, weight, need_x, need_weight, need_bias, N, D,
                 x_shape = x_in.shape(), normalized_shape](const Tensor& dy_in) {
                  if (grad_enabled()) {
                    return composed_gradients(
                        [&](const std::vector<Tensor>& in) {
                          return layer_norm_composed(in[0], normalized_shape, in[1], in[2], eps);
                        },
                        {backward_inputs()[0], backward_inputs()[1], backward_inputs()[2]}, dy_in);
                  }
                  const Tensor dy = dy_in.contiguous_data();
                  Tensor dx, dweight, dbias;
                  if (need_x) dx = Tensor::empty(x_shape);
                  if (need_weight) dweight = Tensor::empty(normalized_shape);
                  if (need_bias) dbias = Tensor::empty(normalized_shape);
                  kernels::layer_norm_backward(
                      need_x ? dx.data() : nullptr, need_weight ? dweight.data() : nullptr,
                      need_bias ? dbias.data() : nullptr, dy.data(), x_hat.data(), rstd.data(),
                      weight.defined() ? weight.data() : nullptr, N, D);
                  return Gradients{dx, dweight, dbias};
                });
}

// The specification: μ and σ² by mean over the normalised axes, kept so they
// broadcast back over each row.
Tensor layer_norm_composed(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                           const Tensor& bias, real eps) {
  check_layer_norm("layer_norm_composed", x, normalized_shape, weight, bias, eps);
  std::vector<int64_t> axes;
  for (int64_t i = x.dim() - normalized_shape.ndim(); i < x.dim(); ++i) axes.push_back(i);
  const Tensor centred = x - mean(x, axes, /*keepdim=*/true);
  const Tensor variance = mean(centred * centred, axes, /*keepdim=*/true);
  Tensor y = centred / sqrt(variance + eps);
  if (weight.defined()) y = y * weight;
  if (bias.defined()) y = y + bias;
  return y;
}

}  // namespace attograd
