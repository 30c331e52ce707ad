// nn/layer_norm.hpp — layer normalisation as a module, PyTorch's nn.LayerNorm.
//
//   nn::LayerNorm norm(nn::LayerNormOptions({32}));   // weight (32) = 1, bias (32) = 0
//   Tensor y = norm.forward(x);                       // x: (*,32) -> (*,32)
//
// Each row over the last axes is normalised to mean 0 and variance 1 and then
// scaled by `weight` and shifted by `bias` (the op and its backward are in
// autograd/ops_norm.hpp). Unlike batch normalisation it needs no running
// statistics and acts the same in training and evaluation.
#pragma once

#include <cstdint>

#include "nn/layer.hpp"

namespace attograd::nn {

struct LayerNormOptions {
  // The sizes of the last axes to normalise over, e.g. {num_hiddens}.
  explicit LayerNormOptions(Shape normalized_shape)
      : normalized_shape_(std::move(normalized_shape)) {}
  // Added to the variance before the square root (default 1e-5, PyTorch's).
  LayerNormOptions& eps(double value) {
    eps_ = value;
    return *this;
  }
  // Learn weight and bias (default true); without, y = x̂.
  LayerNormOptions& elementwise_affine(bool on) {
    elementwise_affine_ = on;
    return *this;
  }
  // With elementwise_affine, learn the bias too (default true; false gives
  // y = x̂ ⊙ weight, PyTorch 2.1's bias=False, nanoGPT's LayerNorm).
  LayerNormOptions& bias(bool on) {
    bias_ = on;
    return *this;
  }

  const Shape& normalized_shape() const { return normalized_shape_; }
  double eps() const { return eps_; }
  bool elementwise_affine() const { return elementwise_affine_; }
  bool bias() const { return bias_; }

 private:
  Shape normalized_shape_;
  double eps_ = 1e-5;
  bool elementwise_affine_ = true;
  bool bias_ = true;
};

class LayerNorm : public Layer {
 public:
  explicit LayerNorm(const LayerNormOptions& options);

  // x: (*, normalized_shape) -> (*, normalized_shape)
  Tensor forward(const Tensor& x) override;

  const LayerNormOptions& options() const { return options_; }

  Tensor weight;  // normalized_shape, starts at 1; undefined without elementwise_affine
  Tensor bias;    // normalized_shape, starts at 0; undefined without elementwise_affine or bias

 protected:
  std::string extra_repr() const override;

 private:
  LayerNormOptions options_;
};

}  // namespace attograd::nn
