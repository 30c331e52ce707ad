// nn/init.cpp — the initialisers: write values through the view, draw in
// row-major order.
#include "nn/init.hpp"

#include <cmath>

#include "tensor/error.hpp"

namespace attograd::nn {

namespace {

// Calls value() once per element in row-major order and stores the result
// through t's view. Writing the storage directly leaves the tensor's identity
// and autograd state alone, which is what an initialiser must do.
template <typename Fn>
void fill_with(Tensor& t, const char* op, Fn&& value) {
  check(t.defined(), "{}: the tensor is undefined", op);
  real* base = t.storage()->data();
  for_each_offset(t.shape(), t.strides(), t.offset(),
                  [&](int64_t, int64_t position) { base[position] = static_cast<real>(value()); });
}

}  // namespace

void uniform_(Tensor& tensor, double low, double high, Generator& generator) {
  check(low <= high, "uniform_: low {} is above high {}", low, high);
  fill_with(tensor, "uniform_", [&] { return generator.uniform(low, high); });
}

void normal_(Tensor& tensor, double mean, double stddev, Generator& generator) {
  check(stddev >= 0, "normal_: stddev {} must be non-negative", stddev);
  fill_with(tensor, "normal_", [&] { return generator.normal(mean, stddev); });
}

void constant_(Tensor& tensor, double value) {
  fill_with(tensor, "constant_", [&] { return value; });
}

void zeros_(Tensor& tensor) { constant_(tensor, 0.0); }

void ones_(Tensor& tensor) { constant_(tensor, 1.0); }

Fans compute_fans(const Tensor& tensor) {
  check(tensor.defined(), "compute_fans: the tensor is undefined");
  check(tensor.dim() >= 2,
        "compute_fans: a tensor of shape {} has no fan in/out; it needs at least 2 dims "
        "(out, in, …) — use uniform_ or normal_ for biases",
        tensor.shape());
  int64_t receptive_field = 1;
  for (int64_t axis = 2; axis < tensor.dim(); ++axis) receptive_field *= tensor.shape()[axis];
  return {tensor.shape()[1] * receptive_field, tensor.shape()[0] * receptive_field};
}

void xavier_uniform_(Tensor& tensor, double gain, Generator& generator) {
  const Fans fans = compute_fans(tensor);
  // Var U[−a, a] = a²/3, and Glorot wants Var = gain² · 2 / (fan_in + fan_out).
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fans.fan_in + fans.fan_out));
  uniform_(tensor, -bound, bound, generator);
}

void xavier_normal_(Tensor& tensor, double gain, Generator& generator) {
  const Fans fans = compute_fans(tensor);
  const double stddev = gain * std::sqrt(2.0 / static_cast<double>(fans.fan_in + fans.fan_out));
  normal_(tensor, 0.0, stddev, generator);
}

}  // namespace attograd::nn
