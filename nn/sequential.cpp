// nn/sequential.cpp — the chain.
#include "nn/sequential.hpp"

#include "tensor/error.hpp"

namespace attograd::nn {

Sequential::Sequential(std::initializer_list<std::shared_ptr<Layer>> layers) : Layer("Sequential") {
  for (const auto& layer : layers) push_back(layer);
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& layer : layers_) y = layer->forward(y);
  return y;
}

const std::shared_ptr<Layer>& Sequential::at(size_t i) const {
  check(i < layers_.size(), "Sequential: layer {} does not exist (it has {} layers)", i,
        layers_.size());
  return layers_[i];
}

}  // namespace attograd::nn
