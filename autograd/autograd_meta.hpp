// autograd/autograd_meta.hpp — what autograd keeps on a tensor.
//
// tensor/ gives every TensorImpl one opaque slot, `attachment`
// (tensor/tensor.hpp); autograd is the only layer that fills it, with an
// AutogradMeta: whether the tensor needs a gradient, its gradient once
// backward() has reached it, and the graph Node that produced it. A plain
// tensor — a constant, anything computed under NoGradGuard — has none, and
// costs nothing.
#pragma once

#include <memory>
#include <string>

#include "autograd/gradient.hpp"
#include "tensor/tensor.hpp"

namespace attograd {

struct Node;  // autograd/node.hpp

struct AutogradMeta final : TensorAttachment {
  bool requires_grad = false;
  bool retains_grad = false;      // keep the gradient of a non-leaf after backward
  Gradient grad;                  // the sum of what backward() brought here; undefined before
  std::shared_ptr<Node> grad_fn;  // the op that produced it; null for leaves

  std::string describe() const override {
    return requires_grad ? ", requires_grad=true" : std::string();
  }
};

// t's AutogradMeta, or null when nothing is attached. autograd attaches only
// AutogradMeta, so the cast needs no check.
inline AutogradMeta* autograd_meta(const TensorImpl& impl) {
  return static_cast<AutogradMeta*>(impl.attachment.get());
}
inline AutogradMeta* autograd_meta(const Tensor& t) { return autograd_meta(t.impl()); }

// t's AutogradMeta, attached first if t has none.
AutogradMeta& attach_autograd_meta(const Tensor& t);

// Does t need a gradient (a trainable leaf, or computed from one)?
inline bool requires_grad(const Tensor& t) {
  const AutogradMeta* meta = autograd_meta(t);
  return meta != nullptr && meta->requires_grad;
}

// The Node that produced t; null for leaves and constants.
inline Node* grad_fn(const Tensor& t) {
  const AutogradMeta* meta = autograd_meta(t);
  return meta != nullptr ? meta->grad_fn.get() : nullptr;
}

// A leaf: made by the user (or a factory), not by an op that recorded itself.
inline bool is_leaf(const Tensor& t) { return grad_fn(t) == nullptr; }

}  // namespace attograd
