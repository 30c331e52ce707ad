// autograd/gradient.hpp — what flows backward into one tensor.
//
// A backward closure returns one Gradient per input, almost always a tensor,
// so `return {dx, dy};` reads as the maths. The engine adds up everything
// that reaches a tensor with += and hands a node's closure the sum as one
// dense tensor. Two gradients have a shape worth naming, because they are far
// larger than what they are made of:
//
//   Gradient::product(dy, x)   dW = dyᵀ x, a weight's gradient      (out,in)
//                              (or of one block of its columns)
//   Gradient::rows(…)          zeros but for a few rows, an embedding table's
//
// Formed at once they are dense tensors like any other. A Gradient may also
// hold a part kept unformed — the products and rows it was made of — which is
// formed only when someone reads it; only the fast path makes such parts
// (autograd/fast/deferred_gradient.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "tensor/tensor.hpp"

namespace attograd {

// A gradient not formed as a tensor yet: it knows its shape, takes in
// another part of its own kind, and forms itself into a dense tensor.
struct UnformedGradient {
  virtual ~UnformedGradient() = default;
  virtual Shape shape() const = 0;
  virtual void add(const UnformedGradient& other) = 0;  // this += other, same shape
  virtual Tensor to_dense() const = 0;
};

class Gradient {
 public:
  Gradient() = default;                                 // no gradient for this input
  Gradient(Tensor dense) : dense_(std::move(dense)) {}  // NOLINT(google-explicit-constructor)
  explicit Gradient(std::shared_ptr<UnformedGradient> unformed) : unformed_(std::move(unformed)) {}
  // A copy shares the parts but owns none of them: only one Gradient may
  // write a dense part in place.
  Gradient(const Gradient& other) : dense_(other.dense_), unformed_(other.unformed_) {}
  Gradient& operator=(const Gradient& other) {
    if (this != &other) *this = Gradient(other);
    return *this;
  }
  Gradient(Gradient&&) noexcept = default;
  Gradient& operator=(Gradient&&) noexcept = default;
  ~Gradient() = default;

  // dyᵀ @ x: dy (n,out), x (n,in), both contiguous -> (out,in)
  static Gradient product(const Tensor& dy, const Tensor& x);
  // dyᵀ [0 x 0]: x (n,w) in columns [first_column, first_column + w) of an
  // (out,in) gradient, zeros elsewhere (a layer applied to one block of its
  // input).
  static Gradient product(const Tensor& dy, const Tensor& x, int64_t first_column, int64_t in);
  // A (V,D) gradient that is zero but for rows ids[p] += values[p]
  // (values: (n,D) contiguous, n = ids.size()); an id equal to `skip` adds
  // nothing (an embedding's padding row).
  static Gradient rows(const Shape& shape, const std::vector<int64_t>& ids, const Tensor& values,
                       std::optional<int64_t> skip);

  bool defined() const { return dense_.defined() || unformed_ != nullptr; }
  // The gradient's shape, whichever parts it has.
  Shape shape() const;
  // The dense part (undefined if there is none) and the unformed part (null
  // if there is none); the gradient is their sum.
  const Tensor& dense() const { return dense_; }
  const std::shared_ptr<UnformedGradient>& unformed() const { return unformed_; }
  // The whole gradient as one dense tensor.
  Tensor to_dense() const;

  // this += other (the same shape). The first dense part is kept as it was
  // given, without a copy: it may be a tensor some closure still reads (add
  // hands the same dy to both of its inputs), so it is never written. Only
  // when a second one arrives does the sum become a tensor of its own, added
  // to in place from then on. Unformed parts are added to each other.
  Gradient& operator+=(Gradient other);
  // Makes the dense part a tensor of this gradient's own, which can be
  // written in place (a leaf's .grad is: an optimizer scales it).
  void own();
  // Forms the unformed part and adds it into the dense one.
  void form();
  // The unformed part, taken out of this gradient (null if there is none).
  std::shared_ptr<UnformedGradient> take_unformed();

 private:
  Tensor dense_;
  bool owned_ = false;  // dense_ is this gradient's own tensor: it may be written
  std::shared_ptr<UnformedGradient> unformed_;
};

// One Gradient per input of a Node, in the inputs' order: `return {dx, dy};`.
using Gradients = ObjectVector<Gradient>;

}  // namespace attograd
