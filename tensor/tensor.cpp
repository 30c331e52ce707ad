#include "tensor/tensor.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

namespace attograd {

Storage::Storage(int64_t size) : size_(size) {
  check(size >= 0, "Storage: negative size {}", size);
  // aligned_alloc wants a size that is a multiple of the alignment.
  const size_t bytes = ((static_cast<size_t>(size) * sizeof(real) + 63) / 64) * 64;
  if (bytes > 0) {
    data_ = static_cast<real*>(std::aligned_alloc(64, bytes));
    if (data_ == nullptr) throw std::bad_alloc();
  }
}

Storage::~Storage() { std::free(data_); }

Tensor Tensor::empty(const Shape& shape) {
  for (int64_t size : shape) {
    check(size >= 0, "empty: shape {} has a negative size", shape);
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(shape.numel());
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  return Tensor(std::move(impl));
}

TensorImpl& Tensor::impl() const {
  check(impl_ != nullptr,
        "Tensor: this tensor is undefined (default-constructed); create it with a factory "
        "such as zeros() first");
  return *impl_;
}

int64_t Tensor::size(int64_t axis) const {
  return shape()[normalize_axis("size", axis, dim())];
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int64_t axis = dim() - 1; axis >= 0; --axis) {
    if (shape()[axis] != 1 && strides()[axis] != expected) return false;
    expected *= shape()[axis];
  }
  return true;
}

static int64_t element_offset(const Tensor& t, const std::vector<int64_t>& index) {
  check(static_cast<int64_t>(index.size()) == t.dim(),
        "at: index has {} entries but the tensor of shape {} has {} dims", index.size(), t.shape(),
        t.dim());
  int64_t position = t.offset();
  for (int64_t axis = 0; axis < t.dim(); ++axis) {
    const int64_t i = index[axis];
    check(i >= 0 && i < t.shape()[axis], "at: index {} out of range for axis {} of size {}", i,
          axis, t.shape()[axis]);
    position += i * t.strides()[axis];
  }
  return position;
}

real Tensor::at(const std::vector<int64_t>& index) const {
  return storage()->data()[element_offset(*this, index)];
}

void Tensor::set(const std::vector<int64_t>& index, real value) {
  storage()->data()[element_offset(*this, index)] = value;
}

real Tensor::item() const {
  check(numel() == 1,
        "item: tensor of shape {} has {} elements; item() needs exactly one (reduce it first, "
        "e.g. with sum)",
        shape(), numel());
  return *data();
}

std::vector<real> Tensor::to_vector() const {
  std::vector<real> values(numel());
  const real* base = storage()->data();
  for_each_offset(shape(), strides(), offset(),
                  [&](int64_t i, int64_t position) { values[i] = base[position]; });
  return values;
}

Tensor Tensor::contiguous_data() const {
  if (is_contiguous()) {
    // Share the data, but not the autograd identity.
    auto view = std::make_shared<TensorImpl>();
    view->storage = impl().storage;
    view->offset = impl().offset;
    view->shape = shape();
    view->strides = contiguous_strides(shape());
    return Tensor(std::move(view));
  }
  return clone_data();
}

Tensor Tensor::clone_data() const {
  Tensor out = empty(shape());
  real* dst = out.data();
  const real* base = storage()->data();
  if (is_contiguous()) {
    if (numel() > 0) std::memcpy(dst, data(), sizeof(real) * numel());
  } else {
    for_each_offset(shape(), strides(), offset(),
                    [&](int64_t i, int64_t position) { dst[i] = base[position]; });
  }
  return out;
}

Tensor Tensor::as_strided(const Shape& new_shape, const Strides& new_strides,
                          int64_t new_offset) const {
  check(new_shape.size() == new_strides.size(), "as_strided: shape {} has {} dims but {} strides",
        new_shape, new_shape.size(), new_strides.size());
  if (new_shape.numel() > 0) {
    // The first and last elements the view can reach must lie inside the storage.
    int64_t lowest = new_offset, highest = new_offset;
    for (size_t axis = 0; axis < new_shape.size(); ++axis) {
      const int64_t reach = (new_shape[axis] - 1) * new_strides[axis];
      (reach < 0 ? lowest : highest) += reach;
    }
    check(lowest >= 0 && highest < storage()->size(),
          "as_strided: a view of shape {} with strides {} at offset {} reaches elements {}..{}, "
          "outside the storage of {} elements",
          new_shape, Shape(new_strides), new_offset, lowest, highest, storage()->size());
  }
  auto view = std::make_shared<TensorImpl>();
  view->storage = impl().storage;
  view->offset = new_offset;
  view->shape = new_shape;
  view->strides = new_strides;
  return Tensor(std::move(view));
}

void Tensor::fill_(real value) {
  real* base = storage()->data();
  for_each_offset(shape(), strides(), offset(),
                  [&](int64_t, int64_t position) { base[position] = value; });
}

void Tensor::copy_from(const Tensor& src) {
  check(src.shape() == shape(), "copy_from: source shape {} differs from destination shape {}",
        src.shape(), shape());
  const std::vector<real> values = src.to_vector();
  real* base = storage()->data();
  for_each_offset(shape(), strides(), offset(),
                  [&](int64_t i, int64_t position) { base[position] = values[i]; });
}

}  // namespace attograd
