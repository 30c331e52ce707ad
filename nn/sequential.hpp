// nn/sequential.hpp — layers applied one after another.
//
//   auto mlp = std::make_shared<nn::Sequential>();
//   mlp->push_back(std::make_shared<nn::Linear>(nn::LinearOptions(2, 16)));
//   mlp->push_back(std::make_shared<nn::Tanh>());
//   mlp->push_back(std::make_shared<nn::Linear>(nn::LinearOptions(16, 1)));
//   Tensor y = mlp->forward(x);   // x: (N,2) -> (N,1)
//
// Children are named "0", "1", … as in PyTorch, so the parameters above are
// "0.weight", "0.bias", "2.weight", "2.bias". Any Layer (nn/layer.hpp) can be
// pushed, including another Sequential.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "nn/layer.hpp"

namespace attograd::nn {

class Sequential : public Layer {
 public:
  Sequential() : Layer("Sequential") {}
  // Sequential{std::make_shared<Linear>(…), std::make_shared<ReLU>()}
  Sequential(std::initializer_list<std::shared_ptr<Layer>> layers);

  // Appends `layer` as child "<size()>" and returns it (typed, for later use).
  template <class L>
  std::shared_ptr<L> push_back(std::shared_ptr<L> layer) {
    static_assert(std::is_base_of_v<Layer, L>,
                  "Sequential::push_back takes layers: types derived from nn::Layer");
    register_module(std::to_string(layers_.size()), layer);
    layers_.push_back(layer);
    return layer;
  }

  // x -> layer_{n−1}(… layer_1(layer_0(x))); the identity when empty.
  Tensor forward(const Tensor& x) override;

  size_t size() const { return layers_.size(); }
  bool empty() const { return layers_.empty(); }
  // The i-th layer; throws when i is out of range.
  const std::shared_ptr<Layer>& at(size_t i) const;

 private:
  std::vector<std::shared_ptr<Layer>> layers_;
};

}  // namespace attograd::nn
