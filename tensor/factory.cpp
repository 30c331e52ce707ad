#include "tensor/factory.hpp"

#include <algorithm>
#include <cmath>

namespace attograd {

Tensor full(const Shape& shape, real value) {
  Tensor t = Tensor::empty(shape);
  std::fill_n(t.data(), t.numel(), value);
  return t;
}

Tensor zeros(const Shape& shape) { return full(shape, real(0)); }
Tensor ones(const Shape& shape) { return full(shape, real(1)); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape()); }
Tensor scalar(real value) { return full(Shape{}, value); }

Tensor arange(double start, double end, double step) {
  check(step != 0.0, "arange: step must not be zero");
  // Same count rule as torch.arange: ceil((end - start) / step), at least 0.
  const auto count = static_cast<int64_t>(std::max(0.0, std::ceil((end - start) / step)));
  Tensor t = Tensor::empty({count});
  for (int64_t i = 0; i < count; ++i) t.data()[i] = static_cast<real>(start + step * i);
  return t;
}

Tensor linspace(double start, double end, int64_t count) {
  check(count >= 0, "linspace: count must be >= 0, got {}", count);
  Tensor t = Tensor::empty({count});
  for (int64_t i = 0; i < count; ++i) {
    const double fraction = count == 1 ? 0.0 : static_cast<double>(i) / (count - 1);
    t.data()[i] = static_cast<real>(start + (end - start) * fraction);
  }
  return t;
}

Tensor eye(int64_t n) {
  check(n >= 0, "eye: size must be >= 0, got {}", n);
  Tensor t = zeros({n, n});
  for (int64_t i = 0; i < n; ++i) t.data()[i * n + i] = 1;
  return t;
}

Tensor from_vector(const std::vector<real>& values, const Shape& shape) {
  check(static_cast<int64_t>(values.size()) == shape.numel(),
        "from_vector: {} values cannot fill shape {} ({} elements)", values.size(), shape,
        shape.numel());
  Tensor t = Tensor::empty(shape);
  std::copy(values.begin(), values.end(), t.data());
  return t;
}

Tensor from_vector(const std::vector<real>& values) {
  return from_vector(values, {static_cast<int64_t>(values.size())});
}

Tensor tensor(std::initializer_list<LiteralEntry> values) {
  std::vector<real> reals;
  for (const LiteralEntry& entry : values) reals.push_back(entry.value);
  return from_vector(reals);
}

Tensor tensor(std::initializer_list<std::initializer_list<real>> rows) {
  const auto row_count = static_cast<int64_t>(rows.size());
  const auto column_count = row_count == 0 ? 0 : static_cast<int64_t>(rows.begin()->size());
  std::vector<real> values;
  for (const auto& row : rows) {
    check(static_cast<int64_t>(row.size()) == column_count,
          "tensor: ragged rows ({} and {} values); every row needs the same length", column_count,
          row.size());
    values.insert(values.end(), row.begin(), row.end());
  }
  return from_vector(values, {row_count, column_count});
}

template <typename Draw>
static Tensor random_tensor(const Shape& shape, Draw&& draw) {
  Tensor t = Tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<real>(draw());
  return t;
}

Tensor rand(const Shape& shape, Generator& generator) {
  return random_tensor(shape, [&] { return generator.uniform(); });
}

Tensor randn(const Shape& shape, Generator& generator) {
  return random_tensor(shape, [&] { return generator.normal(); });
}

Tensor uniform(const Shape& shape, double low, double high, Generator& generator) {
  check(low <= high, "uniform: low {} is above high {}", low, high);
  return random_tensor(shape, [&] { return generator.uniform(low, high); });
}

Tensor normal(const Shape& shape, double mean, double stddev, Generator& generator) {
  check(stddev >= 0, "normal: standard deviation must be >= 0, got {}", stddev);
  return random_tensor(shape, [&] { return generator.normal(mean, stddev); });
}

}  // namespace attograd
