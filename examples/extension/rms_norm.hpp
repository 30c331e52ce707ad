// rms_norm.hpp — RMSNorm, a layer attograd does not have, written outside it.
//
// Root-mean-square normalisation (Zhang and Sennrich, "Root Mean Square Layer
// Normalization"): each row is divided by its root mean square and scaled by
// a learned gain, with no mean subtracted and no bias.
//
//   y = x / r ⊙ g,   r = √(mean(x², last axis) + ε)
//
// Shapes: x (*, C), g (C), y like x. It is written twice:
//   rms_norm_composed  from the library's ops; autograd derives its backward
//   rms_norm           an op of its own: one loop forward, one loop backward
// and check_rms_norm.cpp proves both gradients right and the two equal.
#pragma once

#include <cstdint>
#include <string>

#include "attograd.hpp"

namespace extension {

using attograd::Tensor;

attograd::Tensor rms_norm_composed(const Tensor& x, const Tensor& gain, double eps);
attograd::Tensor rms_norm(const Tensor& x, const Tensor& gain, double eps);

// Options in the library's style: chainable named setters with getters.
struct RMSNormOptions {
  explicit RMSNormOptions(int64_t features) : features_(features) {}
  // Added to the mean square before the root (default 1e-6).
  RMSNormOptions& eps(double value) {
    eps_ = value;
    return *this;
  }
  // Use the op with its own backward (default) or the composed one.
  RMSNormOptions& fused(bool on) {
    fused_ = on;
    return *this;
  }

  int64_t features() const { return features_; }
  double eps() const { return eps_; }
  bool fused() const { return fused_; }

 private:
  int64_t features_;
  double eps_ = 1e-6;
  bool fused_ = true;
};

// The layer: one parameter, "weight" (C), starting at ones, as PyTorch's
// torch.nn.RMSNorm names and initialises it.
class RMSNorm : public attograd::nn::Layer {
 public:
  explicit RMSNorm(const RMSNormOptions& options);
  Tensor forward(const Tensor& x) override;  // x: (*, C) -> (*, C)

  Tensor weight;

 protected:
  std::string extra_repr() const override;

 private:
  RMSNormOptions options_;
};

}  // namespace extension
