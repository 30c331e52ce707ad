// tensor/shape.hpp — shapes, strides, broadcasting and axis arithmetic.
//
// A Shape is a list of sizes, outermost first: (B,T,H) is B blocks of T rows
// of H numbers. Strides say how far apart (in elements) neighbours along each
// axis are; a row-major contiguous (B,T,H) has strides (T·H, H, 1). A stride of
// 0 repeats the same element along an axis — that is how broadcasting views
// (expand) cost no memory.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <string>
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

class Shape : public std::vector<int64_t> {
 public:
  using std::vector<int64_t>::vector;
  Shape(std::initializer_list<int64_t> sizes) : std::vector<int64_t>(sizes) {}
  explicit Shape(const std::vector<int64_t>& sizes) : std::vector<int64_t>(sizes) {}

  int64_t ndim() const { return static_cast<int64_t>(size()); }
  // Number of elements: the product of the sizes (1 for a 0-d scalar).
  int64_t numel() const;
  // "(2,3)" — the form used in every error message.
  std::string str() const;
};

using Strides = std::vector<int64_t>;

// Row-major strides of a contiguous tensor of this shape.
Strides contiguous_strides(const Shape& shape);

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
