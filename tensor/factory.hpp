// tensor/factory.hpp — ways to make a tensor.
//
// All results are contiguous, own fresh storage and do not require grad; call
// requires_grad_(t) (autograd/engine.hpp) on the ones you want to train.
#pragma once

#include <initializer_list>
#include <type_traits>
#include <vector>

#include "tensor/random.hpp"
#include "tensor/tensor.hpp"

namespace attograd {

Tensor zeros(const Shape& shape);
Tensor ones(const Shape& shape);
Tensor full(const Shape& shape, real value);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
// 0-d tensor holding one value.
Tensor scalar(real value);
// start, start+step, … while < end (like torch.arange).
Tensor arange(double start, double end, double step = 1.0);
// `count` evenly spaced values from start to end inclusive.
Tensor linspace(double start, double end, int64_t count);
// n×n identity.
Tensor eye(int64_t n);
// Values in row-major order; values.size() must equal shape.numel().
Tensor from_vector(const std::vector<real>& values, const Shape& shape);
Tensor from_vector(const std::vector<real>& values);  // 1-D
// One entry of a 1-D tensor literal: any number, converted to real.
// Taking entries as this class rather than as real is what lets a column be
// written tensor({{1}, {2}}): a braced {1} becomes a row of reals by a
// standard conversion but a LiteralEntry only by this user-defined one, so the 2-D
// overload wins instead of the call being ambiguous.
struct LiteralEntry {
  template <typename Number>
  requires std::is_arithmetic_v<Number> LiteralEntry(Number number)
      : value(static_cast<real>(number)) {}
  real value;
};
// tensor({1, 2, 3}) is 1-D; tensor({{1, 2}, {3, 4}}) and tensor({{1}, {2}}) are 2-D.
Tensor tensor(std::initializer_list<LiteralEntry> values);
Tensor tensor(std::initializer_list<std::initializer_list<real>> rows);

// Random tensors. Without a generator they draw from default_generator().
Tensor rand(const Shape& shape, Generator& generator = default_generator());   // U[0,1)
Tensor randn(const Shape& shape, Generator& generator = default_generator());  // N(0,1)
Tensor uniform(const Shape& shape, double low, double high,
               Generator& generator = default_generator());
Tensor normal(const Shape& shape, double mean, double stddev,
              Generator& generator = default_generator());

}  // namespace attograd
