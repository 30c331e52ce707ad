// tensor/shape.hpp — shapes, strides, broadcasting and axis arithmetic.
//
// A Shape is a list of sizes, outermost first: (B,T,H) is B blocks of T rows
// of H numbers. Strides say how far apart (in elements) neighbours along each
// axis are; a row-major contiguous (B,T,H) has strides (T·H, H, 1). A stride of
// 0 repeats the same element along an axis — that is how broadcasting views
// (expand) cost no memory.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "tensor/error.hpp"

namespace attograd {

// The element type of the library, chosen once at configure time
// (-DATTOGRAD_REAL=float|double). Users get float; the tests also build a
// double variant so gradients can be checked with finite differences.
#ifndef ATTOGRAD_REAL
#define ATTOGRAD_REAL float
#endif
using real = ATTOGRAD_REAL;

// One number per axis: the sizes of a shape, or the strides of a view. A
// tensor is rarely more than a few axes deep, so up to kInline numbers live
// inside the object itself; only a deeper list spills to the heap. Every op
// makes a few of these, and keeping them off the heap saves most of the
// allocations a small op would otherwise make. It behaves like the
// std::vector<int64_t> subset the library uses (iterators are pointers).
class Dims {
 public:
  static constexpr size_t kInline = 6;
  using value_type = int64_t;
  using iterator = int64_t*;
  using const_iterator = const int64_t*;

  Dims() = default;
  explicit Dims(size_t count, int64_t value = 0) { resize(count, value); }
  Dims(std::initializer_list<int64_t> values) { assign(values.begin(), values.end()); }
  explicit Dims(const std::vector<int64_t>& values) { assign(values.begin(), values.end()); }
  template <typename It, typename = decltype(*std::declval<It>())>
  Dims(It first, It last) {
    assign(first, last);
  }
  Dims(const Dims& other) { *this = other; }
  Dims& operator=(const Dims& other) {
    if (this == &other) return *this;
    if (other.spilled()) {
      heap_ = other.heap_;
    } else {
      heap_ = {};
      // The entries one at a time, unrolled: no memmove call, and no wide
      // moves, which would wait for values just stored one at a time (a
      // fresh shape's) instead of taking them from the store buffer. (The
      // min is other.size_ itself; it shows the compiler's bounds check that
      // the unrolled loop stays inside the array.)
      const size_t count = std::min(other.size_, kInline);
#pragma GCC unroll 6
      for (size_t i = 0; i < count; ++i) inline_[i] = other.inline_[i];
    }
    size_ = other.size_;
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return spilled() ? heap_.data() : inline_; }
  const int64_t* data() const { return spilled() ? heap_.data() : inline_; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t& front() { return data()[0]; }
  int64_t front() const { return data()[0]; }
  int64_t& back() { return data()[size_ - 1]; }
  int64_t back() const { return data()[size_ - 1]; }
  iterator begin() { return data(); }
  iterator end() { return data() + size_; }
  const_iterator begin() const { return data(); }
  const_iterator end() const { return data() + size_; }

  void clear() { resize(0); }
  void resize(size_t count, int64_t value = 0) {
    if (count <= kInline && !spilled()) {  // the usual case: stays inline
      // At most kInline plain stores, unrolled: no memset call, and no masked
      // vector store, which later loads of these entries could not forward
      // from. (The min is count itself, as for the copy above.)
      const size_t end = std::min(count, kInline);
#pragma GCC unroll 6
      for (size_t i = size_; i < end; ++i) inline_[i] = value;
      size_ = count;
    } else {
      resize_spilled(count, value);
    }
  }
  void push_back(int64_t value) { insert(end(), value); }
  void pop_back() { resize(size_ - 1); }
  iterator insert(const_iterator position, int64_t value) { return insert(position, {value}); }
  iterator insert(const_iterator position, std::initializer_list<int64_t> values);
  iterator erase(const_iterator position) { return erase(position, position + 1); }
  iterator erase(const_iterator first, const_iterator last);
  std::vector<int64_t> to_vector() const { return {begin(), end()}; }

  friend bool operator==(const Dims& a, const Dims& b) {
    if (a.size_ != b.size_) return false;
    for (size_t i = 0; i < a.size_; ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }
  friend bool operator!=(const Dims& a, const Dims& b) { return !(a == b); }

 private:
  bool spilled() const { return size_ > kInline; }
  void resize_spilled(size_t count, int64_t value);
  template <typename It>
  void assign(It first, It last) {
    resize(static_cast<size_t>(std::distance(first, last)));
    std::copy(first, last, begin());
  }

  size_t size_ = 0;
  int64_t inline_[kInline] = {};
  std::vector<int64_t> heap_;  // holds the numbers only while size_ > kInline
};

class Shape : public Dims {
 public:
  using Dims::Dims;
  Shape() = default;
  Shape(std::initializer_list<int64_t> sizes) : Dims(sizes) {}
  explicit Shape(const Dims& sizes) : Dims(sizes) {}

  int64_t ndim() const { return static_cast<int64_t>(size()); }
  // Number of elements: the product of the sizes (1 for a 0-d scalar).
  // Throws, naming the shape, when the product does not fit in int64_t
  // (e.g. (4611686018427387904,4), from a hostile file), instead of wrapping.
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t size : *this) {
      if (__builtin_mul_overflow(n, size, &n)) [[unlikely]] {
        return numel_overflowed();
      }
    }
    return n;
  }
  // "(2,3)" — the form used in every error message.
  std::string str() const;

 private:
  // numel() when a partial product overflowed: 0 if a size is 0, else throws.
  [[gnu::cold]] int64_t numel_overflowed() const;
};

using Strides = Dims;

// Row-major strides of a contiguous tensor of this shape.
Strides contiguous_strides(const Shape& shape);
// The same, written into `into` (resized to shape's rank) where it already
// lives, a new tensor's own strides: no second Strides built and copied
// over (Dims has no move assignment). Tensor::empty uses it; a one-element
// mul, forward and backward, takes about 50 ns less than with the copy.
void contiguous_strides(const Shape& shape, Strides& into);

// NumPy broadcasting: align trailing axes; sizes must match or one of them be 1.
// Throws "{op}: shapes (2,3) and (4,3) cannot be broadcast: axis 0 has sizes 2 and 4".
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);

// Maps a possibly negative axis (-1 = last) into [0, ndim); throws
// "{op}: axis 2 out of range for a tensor of 2 dims" otherwise.
int64_t normalize_axis(const char* op, int64_t axis, int64_t ndim);

}  // namespace attograd

template <>
struct fmt::formatter<attograd::Shape> : fmt::formatter<std::string> {
  auto format(const attograd::Shape& shape, format_context& ctx) const {
    return fmt::formatter<std::string>::format(shape.str(), ctx);
  }
};
