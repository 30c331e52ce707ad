// nn/layer.hpp — the interface of layers that map one tensor to one tensor.
//
// Module (nn/module.hpp) has no virtual forward, because layers differ in what
// they take: an Embedding takes token ids, a GRU a sequence and a state. The
// many layers that take one tensor and return one derive from Layer instead,
// which is what lets Sequential chain them without knowing their types.
#pragma once

#include "nn/module.hpp"

namespace attograd::nn {

class Layer : public Module {
 public:
  using Module::Module;
  virtual Tensor forward(const Tensor& x) = 0;
};

}  // namespace attograd::nn
