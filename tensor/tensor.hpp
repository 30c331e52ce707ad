// tensor/tensor.hpp — the Tensor handle: shared storage seen through a view.
//
// A Tensor is a cheap handle (a shared pointer) to a TensorImpl. Copying a
// Tensor shares it, exactly like `b = a` in PyTorch. The numbers live in a
// 64-byte-aligned Storage that several views may share; a view is
// (storage, offset, shape, strides), so reshape, transpose, slice and expand
// can be made without copying (see autograd/ops_shape.cpp).
//
// A TensorImpl has one slot, `attachment`, where a higher layer keeps state
// of its own for that tensor (autograd keeps whether it needs a gradient, the
// gradient, and the graph link there). tensor/ never looks inside it: it only
// keeps it alive with the tensor and asks it for a few words when printing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensor/fast/pool.hpp"  // make_object, ObjectVector, SharedFunction
#include "tensor/shape.hpp"

namespace attograd {

class Tensor;

// A block of `size` reals aligned to 64 bytes (the width of an AVX-512
// register), so SIMD loads from the start of a storage are aligned.
// Its values are not initialised (zeros() and friends fill them). The block
// comes from storage::allocate and goes back to storage::deallocate.
class Storage {
 public:
  explicit Storage(int64_t size);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  real* data() { return data_; }
  const real* data() const { return data_; }
  int64_t size() const { return size_; }

 private:
  real* data_ = nullptr;
  int64_t size_ = 0;
};

// State a higher layer attaches to one tensor (see TensorImpl::attachment).
struct TensorAttachment {
  virtual ~TensorAttachment() = default;
  // Words print() adds after the shape, e.g. ", requires_grad=true".
  virtual std::string describe() const { return {}; }
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements, from storage->data()
  Shape shape;
  Strides strides;
  // Null for a plain tensor. A new view or copy starts without one.
  std::shared_ptr<TensorAttachment> attachment;
};

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor (no storage): defined() is false
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // A new contiguous tensor of this shape; its values are not initialised.
  // When it cannot be allocated, the Error names the function asking
  // (`caller`: "full" for zeros and ones, "batched_product" for matmul), the
  // shape and the bytes. `__builtin_FUNCTION()` (GCC and Clang) is the
  // calling function's plain name; std::source_location would say the same
  // but Clang 14, which builds the fuzzers, lacks it.
  static Tensor empty(const Shape& shape, const char* caller = __builtin_FUNCTION());

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  const Strides& strides() const { return impl().strides; }
  int64_t size(int64_t axis) const;  // negative axes count from the end
  int64_t dim() const { return shape().ndim(); }
  int64_t numel() const { return shape().numel(); }
  int64_t offset() const { return impl().offset; }
  bool is_contiguous() const;

  // Pointer to element (0,…,0). Writing through data() of a view writes the
  // storage the view shares.
  real* data() { return impl().storage->data() + impl().offset; }
  const real* data() const { return impl().storage->data() + impl().offset; }
  const std::shared_ptr<Storage>& storage() const { return impl().storage; }

  // Element access by index, e.g. t.at({1, 2}). Bounds are checked.
  real at(const std::vector<int64_t>& index) const;
  void set(const std::vector<int64_t>& index, real value);
  // The single value of a one-element tensor.
  real item() const;
  // All values in row-major order (works for any view).
  std::vector<real> to_vector() const;

  // A contiguous tensor with the same values: this one if already contiguous
  // (the same handle when it has no attachment, else a view of the same
  // storage without it), otherwise a copy. No gradient flows (see autograd's
  // contiguous()).
  Tensor contiguous_data() const;
  // A contiguous copy of the values with no autograd history.
  Tensor clone_data() const;
  // Another view of the same storage. Only checked against the storage bounds
  // (throws if the view could reach outside them).
  Tensor as_strided(const Shape& shape, const Strides& strides, int64_t offset) const;
  // Fill every element (through the view).
  void fill_(real value);
  // Copy src's values into this view, element by element; shapes must match.
  void copy_from(const Tensor& src);

  // The state behind the handle; throws if the tensor is undefined.
  TensorImpl& impl() const {
    if (impl_ == nullptr) throw_undefined();
    return *impl_;
  }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool same(const Tensor& other) const { return impl_ == other.impl_; }

 private:
  [[noreturn]] static void throw_undefined();

  std::shared_ptr<TensorImpl> impl_;
};

// Calls fn(linear_index, storage_offset, count, stride) for every row of a
// view — the runs along its last axis — in row-major order: the row's
// elements are linear_index … + count − 1 in row-major order and sit at
// storage_offset + j · stride, j < count. A 0-d view is one row of one
// element. The workhorse for strided (non-contiguous) loops: the odometer
// moves once per row, and the row itself is a plain loop (a memcpy when the
// stride is 1).
template <typename Fn>
void for_each_row(const Shape& shape, const Strides& strides, int64_t offset, Fn&& fn) {
  const int64_t n = shape.numel();
  if (n == 0) return;
  const int64_t ndim = shape.ndim();
  if (ndim == 0) {
    fn(int64_t{0}, offset, int64_t{1}, int64_t{1});
    return;
  }
  const int64_t count = shape[ndim - 1], stride = strides[ndim - 1];
  if (ndim == 1) {
    fn(int64_t{0}, offset, count, stride);
    return;
  }
  // The rows of the second-to-last axis in a plain loop (a permuted
  // attention tensor has rows of 8 values: an odometer step per row would
  // cost more than the row), the odometer over the axes before it.
  const int64_t rows = shape[ndim - 2], row_stride = strides[ndim - 2];
  Dims index(static_cast<size_t>(ndim), 0);
  int64_t position = offset;
  for (int64_t linear = 0; linear < n; linear += rows * count) {
    for (int64_t r = 0; r < rows; ++r)
      fn(linear + r * count, position + r * row_stride, count, stride);
    // Odometer increment over the outer axes, innermost first.
    for (int64_t axis = ndim - 3; axis >= 0; --axis) {
      if (++index[axis] < shape[axis]) {
        position += strides[axis];
        break;
      }
      position -= strides[axis] * (shape[axis] - 1);
      index[axis] = 0;
    }
  }
}

// Calls fn(linear_index, storage_offset) for every element of a view, in
// row-major order.
template <typename Fn>
void for_each_offset(const Shape& shape, const Strides& strides, int64_t offset, Fn&& fn) {
  for_each_row(shape, strides, offset,
               [&](int64_t linear, int64_t position, int64_t count, int64_t stride) {
                 for (int64_t j = 0; j < count; ++j) fn(linear + j, position + j * stride);
               });
}

}  // namespace attograd
