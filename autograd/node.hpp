// autograd/node.hpp — one recorded operation in the graph.
//
// When an op runs on inputs that require grad, it returns an output whose
// grad_fn is a Node. The Node remembers the inputs (in order) and a closure
// that, given dL/d(output), returns dL/d(input) for each of them (a Gradient,
// autograd/gradient.hpp: a tensor, or a weight's or a table's gradient by
// name). The closure
// captures whatever the backward formula needs (inputs, the output's values);
// it must never capture the output tensor itself, which would make a cycle
// output → node → output and leak the graph.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "autograd/gradient.hpp"
#include "tensor/fast/pool.hpp"
#include "tensor/tensor.hpp"

namespace attograd {

// A backward closure: what std::function<Gradients(const Tensor&)> would be,
// except that the lambda and everything it captures live in one
// block from the per-thread pool (tensor/fast/pool.hpp) rather than in a heap
// block of their own. Every recorded op makes one, so that is one malloc and
// one free fewer per op. Copies share the same closure.
class BackwardFn {
 public:
  BackwardFn() = default;
  BackwardFn(std::nullptr_t) {}  // NOLINT(google-explicit-constructor): `backward = nullptr`
  template <typename F,
            typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, BackwardFn> &&
                                        !std::is_same_v<std::decay_t<F>, std::nullptr_t>>>
  BackwardFn(F&& f)  // NOLINT(google-explicit-constructor): a lambda converts, as to std::function
      : callable_(make_pooled<Holder<std::decay_t<F>>>(std::forward<F>(f))) {}

  Gradients operator()(const Tensor& grad_output) const { return callable_->call(grad_output); }
  explicit operator bool() const { return callable_ != nullptr; }

 private:
  struct Callable {
    virtual ~Callable() = default;
    virtual Gradients call(const Tensor& grad_output) = 0;
  };
  // A closure may return Gradients or, as a layer written outside this
  // library may, a std::vector<Tensor>.
  template <typename F>
  struct Holder final : Callable {
    explicit Holder(F function) : function(std::move(function)) {}
    Gradients call(const Tensor& grad_output) override {
      if constexpr (std::is_convertible_v<decltype(function(grad_output)), Gradients>) {
        return function(grad_output);
      } else {
        auto tensors = function(grad_output);
        return Gradients(tensors.begin(), tensors.end());
      }
    }
    F function;
  };

  std::shared_ptr<Callable> callable_;
};

struct Node {
  // grad_output has the output's shape, but not necessarily a contiguous
  // layout (it may be a transposed or broadcast view): read its raw data()
  // only through contiguous_data(). Returns one Gradient per input: a tensor
  // in the input's shape or any shape that broadcasts to it (the engine sums
  // broadcast axes away), a deferred gradient of exactly the input's shape,
  // or an undefined one for "no gradient".
  using BackwardFn = attograd::BackwardFn;
  // The inputs, in a list whose block comes from the per-thread pool.
  using Inputs = std::vector<Tensor, pool::Allocator<Tensor>>;

  const char* name = "";  // the op, e.g. "matmul"; shown in error messages
  Inputs inputs;          // what this node's gradients flow into
  BackwardFn backward;
  bool released = false;  // set when backward() frees the graph

  ~Node();
};

}  // namespace attograd
