// autograd/fast/deferred_gradient.hpp — a gradient kept as what it is made
// of, formed only when someone reads it.
//
// Two gradients of a translator are far larger than what they are made of:
//
//   A weight used at T steps: dW = Σ_t dy_tᵀ x_t  (out,in). Formed step by
//   step, each step writes an (out,in) matrix and the engine adds it into the
//   sum — T passes over the largest matrices for T rank-1 updates. Kept as
//   its factors, the steps append their rows of dy and x (n rows in all), and
//   the whole sum is one product (n,out)ᵀ @ (n,in), formed once.
//
//   An embedding table read at a few ids: dE is zero but for those rows. Kept
//   as (ids, rows), nothing of the other V − n rows is ever written.
//
// And plain SGD never needs the dense gradient at all: W −= lr·dyᵀx goes
// straight into W (kernels::add_scaled_product_tn), and the table's rows are
// updated one by one (apply_scaled below). A DeferredGradient is the sum of
// both parts. It is a Gradient's unformed part (autograd/gradient.hpp): the
// engine adds it up and keeps it on a leaf like any other gradient, and
// grad(leaf) forms the dense tensor on request.
//
// Where it is reached: Gradient::product and Gradient::rows ask defer_product
// and defer_rows below first, and form the dense tensor when they say no.
// What it saves: with it off alone, a teacher-forced iteration of the
// tutorial's recipe takes 218 % longer and a greedy one 157 % (the "without
// deferred gradients" row of `build/bench/bench_seq2seq`, median of three
// runs; docs/fast_paths.md).
// Switch: fast::set_deferred_gradients(false), or a fast::ReferencePath guard
// (autograd/fast/fast.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "autograd/gradient.hpp"
#include "tensor/tensor.hpp"

namespace attograd::fast {

// Whether Gradient::product and Gradient::rows keep the deferred form (on by
// default). Per thread.
bool deferred_gradients();
void set_deferred_gradients(bool on);

class DeferredGradient;

// Gradient::product's deferred form: the factors of dyᵀ [0 x 0] (see
// Gradient::product), when the switch is on and they hold fewer numbers than
// the (out,in) matrix they stand for (a decoder step's one row against a
// 2231 × 256 output layer; a batch of 64 rows against a 96 × 32 weight is
// cheaper as the matrix, formed now, than as factors copied, stacked and
// formed later); else null.
std::shared_ptr<DeferredGradient> defer_product(const Tensor& dy, const Tensor& x,
                                                int64_t first_column, int64_t in);
// Gradient::rows' deferred form when the switch is on, else null.
std::shared_ptr<DeferredGradient> defer_rows(const Shape& shape, const std::vector<int64_t>& ids,
                                             const Tensor& values, std::optional<int64_t> skip);

class DeferredGradient final : public UnformedGradient {
 public:
  explicit DeferredGradient(Shape shape) : shape_(std::move(shape)) {}

  Shape shape() const override { return shape_; }

  // G += dyᵀ x: dy (n,out), x (n,in), contiguous; shape() must be (out,in).
  // With first_column f and x (n,w): G[:, f:f+w] += dyᵀ x, the gradient of a
  // layer applied to one block of its input (linear_columns); the blocks'
  // factors are kept apart, so no zeros are stored or multiplied.
  void add_product(const Tensor& dy, const Tensor& x, int64_t first_column = 0);
  // G[ids[p]] += values[p]: values (n,D) contiguous; ids equal to skip add nothing.
  void add_rows(const std::vector<int64_t>& ids, const Tensor& values, std::optional<int64_t> skip);
  // G += other (same shape): appends other's factors and rows.
  void add(const DeferredGradient& other);
  void add(const UnformedGradient& other) override;

  // dst += scale · G, where dst is a contiguous tensor of shape(): the
  // product part in one kernel call per column block (each entry summed as
  // the dense product would be, then added in one rounding), then the rows
  // in order.
  void apply_scaled(real* dst, real scale) const;
  // G as a dense tensor.
  Tensor to_dense() const override;

  // How many rows of factors, and of table rows, G is made of.
  int64_t product_rows() const { return product_rows_; }
  int64_t table_rows() const { return static_cast<int64_t>(row_ids_.size()); }

 private:
  // The factors of one add_product: dy (n,out), x (n,w) for columns
  // [first_column, first_column + w).
  struct Factors {
    Tensor dy, x;
    int64_t first_column = 0;
  };
  // The factors of each column block as two contiguous arrays, (n,out) and
  // (n,w), in the order the blocks first appear: the one add_product itself
  // when a block has one, else its add_products stacked in order.
  std::vector<Factors> stacked_factors() const;

  Shape shape_;
  // The factors, one entry per add_product: copies (from the storage
  // cache), so later writes to the op's tensors cannot change them; add()
  // shares the other gradient's factors rather than copying them again.
  std::vector<Factors> factors_;
  int64_t product_rows_ = 0;
  std::vector<int64_t> row_ids_;  // table rows: G[row_ids_[p]] += row_values_[p]
  std::vector<real> row_values_;
};

// The part of `leaf`'s gradient that backward() left deferred, taken off the
// leaf (so the leaf then holds only its dense part, grad(leaf) without it);
// null if there is none. For optimizers that can apply it directly.
std::shared_ptr<DeferredGradient> take_deferred_gradient(const Tensor& leaf);
// The part of `leaf`'s gradient that backward() left deferred, left in place
// (null if there is none). For tests.
const DeferredGradient* deferred_gradient_of(const Tensor& leaf);

}  // namespace attograd::fast
