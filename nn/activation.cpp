// nn/activation.cpp — the activation layers call the ops.
#include "nn/activation.hpp"

#include "autograd/ops.hpp"

namespace attograd::nn {

Tensor ReLU::forward(const Tensor& x) { return relu(x); }

Tensor Tanh::forward(const Tensor& x) { return tanh(x); }

Tensor Sigmoid::forward(const Tensor& x) { return sigmoid(x); }

}  // namespace attograd::nn
