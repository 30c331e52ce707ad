// autograd/gradient.hpp — what a backward closure returns for one input.
//
// Almost always a tensor: `return {dx, dy};` reads as the maths. Two kinds of
// gradient have a shape worth naming, because the fast path can keep them in a
// cheaper form than the dense tensor (autograd/fast/deferred_gradient.hpp):
//
//   Gradient::product(dy, x)   dW = dyᵀ x, a weight's gradient      (out,in)
//                              (or of one block of its columns)
//   Gradient::rows(…)          zeros but for a few rows, an embedding table's
//
// With the fast path off (fast::ReferencePath) both are formed as dense
// tensors on the spot, exactly as written here; with it on (the default) they
// stay deferred, the engine adds deferred gradients by appending, and grad()
// forms the dense tensor only when asked.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "tensor/fast/pool.hpp"
#include "tensor/tensor.hpp"

namespace attograd {

namespace fast {
class DeferredGradient;  // autograd/fast/deferred_gradient.hpp
}  // namespace fast

class Gradient {
 public:
  Gradient() = default;                                 // no gradient for this input
  Gradient(Tensor dense) : dense_(std::move(dense)) {}  // NOLINT(google-explicit-constructor)
  explicit Gradient(std::shared_ptr<fast::DeferredGradient> deferred);

  // dyᵀ @ x: dy (n,out), x (n,in), both contiguous -> (out,in)
  static Gradient product(const Tensor& dy, const Tensor& x);
  // dyᵀ [0 x 0]: x (n,w) in columns [first_column, first_column + w) of an
  // (out,in) gradient, zeros elsewhere (a layer applied to one block of its
  // input). The fast path keeps the block's factors alone.
  static Gradient product(const Tensor& dy, const Tensor& x, int64_t first_column, int64_t in);
  // A (V,D) gradient that is zero but for rows ids[p] += values[p]
  // (values: (n,D) contiguous, n = ids.size()); an id equal to `skip` adds
  // nothing (an embedding's padding row).
  static Gradient rows(const Shape& shape, const std::vector<int64_t>& ids, const Tensor& values,
                       std::optional<int64_t> skip);

  bool defined() const { return dense_.defined() || deferred_ != nullptr; }
  // Exactly one of the two is set in a defined Gradient.
  const Tensor& dense() const { return dense_; }
  const std::shared_ptr<fast::DeferredGradient>& deferred() const { return deferred_; }
  // The gradient's shape, whichever form it has.
  Shape shape() const;
  // The dense tensor (formed from the deferred form if need be).
  Tensor to_dense() const;

 private:
  Tensor dense_;
  std::shared_ptr<fast::DeferredGradient> deferred_;
};

// One Gradient per input of a Node, in the inputs' order: `return {dx, dy};`.
// Its block comes from the per-thread pool (tensor/fast/pool.hpp), like the
// Node's list of inputs: every backward closure returns one.
using Gradients = std::vector<Gradient, pool::Allocator<Gradient>>;

}  // namespace attograd
