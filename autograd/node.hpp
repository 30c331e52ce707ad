// autograd/node.hpp — one recorded operation in the graph.
//
// When an op runs on inputs that require grad, it returns an output whose
// grad_fn is a Node. The Node remembers the inputs (in order) and a closure
// that, given dL/d(output), returns dL/d(input) for each of them. The closure
// captures whatever the backward formula needs (inputs, the output's values);
// it must never capture the output tensor itself, which would make a cycle
// output → node → output and leak the graph.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/pool.hpp"
#include "tensor/tensor.hpp"

namespace attograd {

// A backward closure: what std::function<std::vector<Tensor>(const Tensor&)>
// would be, except that the lambda and everything it captures live in one
// block from the per-thread pool (tensor/pool.hpp) rather than in a heap
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

  std::vector<Tensor> operator()(const Tensor& grad_output) const {
    return callable_->call(grad_output);
  }
  explicit operator bool() const { return callable_ != nullptr; }

 private:
  struct Callable {
    virtual ~Callable() = default;
    virtual std::vector<Tensor> call(const Tensor& grad_output) = 0;
  };
  template <typename F>
  struct Holder final : Callable {
    explicit Holder(F function) : function(std::move(function)) {}
    std::vector<Tensor> call(const Tensor& grad_output) override { return function(grad_output); }
    F function;
  };

  std::shared_ptr<Callable> callable_;
};

struct Node {
  // grad_output has the output's shape, but not necessarily a contiguous
  // layout (it may be a transposed or broadcast view): read its raw data()
  // only through contiguous_data(). Returns one tensor per input: its
  // gradient, in the input's shape or any shape that broadcasts to it (the
  // engine sums broadcast axes away), or an undefined Tensor for "no gradient".
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
