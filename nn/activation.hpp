// nn/activation.hpp — elementwise nonlinearities as layers, for Sequential.
//
// Each is a thin wrapper over the op of the same name in autograd/ops.hpp
// (where the derivative lives); in a custom module just call relu(x) etc.
//   ReLU:    y = max(x, 0)
//   Tanh:    y = tanh(x)
//   Sigmoid: y = 1 / (1 + e^−x)
#pragma once

#include "nn/layer.hpp"

namespace attograd::nn {

class ReLU : public Layer {
 public:
  ReLU() : Layer("ReLU") {}
  Tensor forward(const Tensor& x) override;  // x: (*) -> (*)
};

class Tanh : public Layer {
 public:
  Tanh() : Layer("Tanh") {}
  Tensor forward(const Tensor& x) override;  // x: (*) -> (*)
};

class Sigmoid : public Layer {
 public:
  Sigmoid() : Layer("Sigmoid") {}
  Tensor forward(const Tensor& x) override;  // x: (*) -> (*)
};

}  // namespace attograd::nn
