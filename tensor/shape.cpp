#include "tensor/shape.hpp"

#include <algorithm>

namespace attograd {

// resize() when the list is or becomes longer than kInline.
void Dims::resize_spilled(size_t count, int64_t value) {
  if (count > kInline) {
    if (!spilled()) heap_.assign(inline_, inline_ + size_);
    heap_.resize(count, value);
  } else {  // spilled, and back within kInline: the first `count` move inline
    std::copy(heap_.begin(), heap_.begin() + static_cast<std::ptrdiff_t>(count), inline_);
    heap_.clear();
    heap_.shrink_to_fit();
  }
  size_ = count;
}

Dims::iterator Dims::insert(const_iterator position, std::initializer_list<int64_t> values) {
  const size_t at = static_cast<size_t>(position - begin());
  const size_t old_size = size_;
  resize(old_size + values.size());
  int64_t* first = begin() + at;
  std::move_backward(first, begin() + old_size, end());
  std::copy(values.begin(), values.end(), first);
  return first;
}

Dims::iterator Dims::erase(const_iterator first_in, const_iterator last_in) {
  const size_t first = static_cast<size_t>(first_in - begin());
  const size_t last = static_cast<size_t>(last_in - begin());
  std::move(begin() + last, end(), begin() + first);
  resize(size_ - (last - first));
  return begin() + first;
}

std::string Shape::str() const {
  std::string out = "(";
  for (size_t i = 0; i < size(); ++i) {
    if (i > 0) out += ",";
    out += std::to_string((*this)[i]);
  }
  return out + ")";
}

int64_t Shape::numel_overflowed() const {
  if (std::find(begin(), end(), 0) != end()) return 0;  // a zero size empties any product
  std::string product;                                  // "4611686018427387904 × 4"
  for (size_t i = 0; i < size(); ++i) {
    product += (i > 0 ? " × " : "") + std::to_string((*this)[i]);
  }
  fail(
      "shape {}: its {} elements overflow a 64-bit count; no tensor can hold them (a size came "
      "from a damaged file or an unchecked computation)",
      str(), product);
}

void contiguous_strides(const Shape& shape, Strides& into) {
  into.resize(shape.size());
  int64_t step = 1;
  for (int64_t axis = shape.ndim() - 1; axis >= 0; --axis) {
    into[axis] = step;
    if (__builtin_mul_overflow(step, shape[axis], &step)) {
      std::fill(into.begin(), into.end(), shape.numel());  // numel() throws, or is 0
      break;
    }
  }
}

// One object returned on every path, so that it is built in the caller's
// slot: a second return statement made the compiler build it here and copy
// it out, reading back as 16-byte moves what it had just stored 8 bytes at a
// time (a stalled store forwarding, a third of this function's time).
Strides contiguous_strides(const Shape& shape) {
  Strides strides;
  contiguous_strides(shape, strides);
  return strides;
}

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  const int64_t ndim = std::max(a.ndim(), b.ndim());
  Shape out(ndim);
  for (int64_t i = 0; i < ndim; ++i) {
    // Align from the right: axis i of the result is axis i - (ndim - a.ndim()) of a.
    const int64_t ia = i - (ndim - a.ndim());
    const int64_t ib = i - (ndim - b.ndim());
    const int64_t sa = ia >= 0 ? a[ia] : 1;
    const int64_t sb = ib >= 0 ? b[ib] : 1;
    check(sa == sb || sa == 1 || sb == 1,
          "{}: shapes {} and {} cannot be broadcast: sizes {} and {} differ at axis {} of the "
          "result (each must match or be 1)",
          op, a, b, sa, sb, i);
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

int64_t normalize_axis(const char* op, int64_t axis, int64_t ndim) {
  const int64_t normalized = axis < 0 ? axis + ndim : axis;
  check(ndim > 0, "{}: axis {} out of range for a tensor of 0 dims (a 0-d scalar has no axes)", op,
        axis);
  check(normalized >= 0 && normalized < ndim,
        "{}: axis {} out of range for a tensor of {} dims (use 0..{} or -{}..-1)", op, axis, ndim,
        ndim - 1, ndim);
  return normalized;
}

}  // namespace attograd
