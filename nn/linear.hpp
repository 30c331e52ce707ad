// nn/linear.hpp — the fully connected layer y = x Wᵀ + b.
//
//   nn::Linear fc(nn::LinearOptions(5, 2));              // W: (2,5), b: (2)
//   nn::Linear no_bias(nn::LinearOptions(5, 2).bias(false));
//   Tensor y = fc.forward(x);                            // x: (*,5) -> (*,2)
//
// Names and layouts are PyTorch's, so `weight` is (out_features, in_features)
// and a state dict moves between the two without transposing.
#pragma once

#include <cstdint>

#include "nn/layer.hpp"
#include "tensor/random.hpp"

namespace attograd::nn {

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  // Whether to learn an additive bias (default true).
  LinearOptions& bias(bool on) {
    bias_ = on;
    return *this;
  }

  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  bool bias() const { return bias_; }

 private:
  int64_t in_features_;
  int64_t out_features_;
  bool bias_ = true;
};

class Linear : public Layer {
 public:
  // Weight and bias start uniform in ±1/√in_features, as in PyTorch.
  explicit Linear(const LinearOptions& options, Generator& generator = default_generator());

  // x: (*, in) -> (*, out); any number of leading axes, including none.
  Tensor forward(const Tensor& x) override;

  // Draws weight, then bias, afresh from `generator` with the constructor's
  // rule (PyTorch's reset_parameters), for a model that must create its
  // layers in one order but draw their values in another.
  void reset_parameters(Generator& generator);

  const LinearOptions& options() const { return options_; }

  Tensor weight;  // (out, in)
  Tensor bias;    // (out), or undefined when options.bias(false)

 protected:
  std::string extra_repr() const override;

 private:
  LinearOptions options_;
};

}  // namespace attograd::nn
