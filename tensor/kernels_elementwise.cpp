// tensor/kernels_elementwise.cpp — elementwise kernels (unary, pow, binary,
// exp_nonpositive, accumulate): the scalar specification first, then the
// xsimd version that must agree with it. The unary functions' formulas are
// the entries of tensor/kernels_unary.hpp; the loops here apply them.
#include <cmath>
#include <limits>
#include <string>

#include "tensor/kernels.hpp"
#include "tensor/kernels_simd.hpp"
#include "tensor/kernels_unary.hpp"

namespace attograd::kernels {

namespace scalar {

// The formulas are the entries of tensor/kernels_unary.hpp; each loop below
// is compiled once per entry.
void unary_forward(Unary op, real* out, const real* x, int64_t n) {
  with_unary_kernel(op, [&](auto c) {
    using Kernel = UnaryKernel<decltype(c)::value>;
    for (int64_t i = 0; i < n; ++i) out[i] = Kernel::forward(x[i]);
  });
}

void unary_backward(Unary op, real* dx, const real* dy, const real* x, const real* y, int64_t n) {
  with_unary_kernel(op, [&](auto c) {
    using Kernel = UnaryKernel<decltype(c)::value>;
    for (int64_t i = 0; i < n; ++i) dx[i] = Kernel::backward(dy[i], x[i], y[i]);
  });
}

void pow_forward(real* out, const real* x, real p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = std::pow(x[i], p);
}

void pow_backward(real* dx, const real* dy, const real* x, real p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * p * std::pow(x[i], p - 1);
}

void binary_forward(Binary op, real* out, const real* a, int64_t a_step, const real* b,
                    int64_t b_step, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const real left = a[i * a_step];
    const real right = b[i * b_step];
    switch (op) {
      case Binary::add:
        out[i] = left + right;
        break;
      case Binary::sub:
        out[i] = left - right;
        break;
      case Binary::mul:
        out[i] = left * right;
        break;
      case Binary::div:
        out[i] = left / right;
        break;
    }
  }
}

void binary_rows_forward(Binary op, real* out, const real* a, int64_t a_row_step, const real* b,
                         int64_t b_row_step, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    scalar::binary_forward(op, out + r * n, a + r * a_row_step, 1, b + r * b_row_step, 1, n);
  }
}

void exp_nonpositive(real* out, const real* x, int64_t n) {
  // ln of the smallest normal number: (min_exponent − 1)·ln2, −87.34 in float.
  const real lowest =
      real(std::numeric_limits<real>::min_exponent - 1) * real(0.693147180559945309417);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] < lowest ? real(0) : std::exp(x[i]);
}

void accumulate(real* out, const real* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] += x[i];
}

}  // namespace scalar

#if ATTOGRAD_USE_SIMD

using namespace simd;

void exp_nonpositive(real* out, const real* x, int64_t n) {
  map(
      out, n, [](Batch v, Batch, Batch) { return exp_nonpositive<real>(v); }, x);
}

const char* simd_description() {
  static const std::string text = fmt::format("{} x{} {}", xsimd::default_arch::name(), W,
                                              sizeof(real) == 4 ? "float" : "double");
  return text.c_str();
}

void unary_forward(Unary op, real* out, const real* x, int64_t n) {
  with_unary_kernel(op, [&](auto c) {
    using Kernel = UnaryKernel<decltype(c)::value>;
    map(
        out, n, [](Batch v, Batch, Batch) { return Kernel::forward_simd(v); }, x);
  });
}

// Only the arrays the derivative reads are loaded; map passes 0 for the other.
void unary_backward(Unary op, real* dx, const real* dy, const real* x, const real* y, int64_t n) {
  with_unary_kernel(op, [&](auto c) {
    using Kernel = UnaryKernel<decltype(c)::value>;
    map(
        dx, n, [](Batch g, Batch in, Batch out) { return Kernel::backward_simd(g, in, out); }, dy,
        Kernel::derivative_uses_x ? x : nullptr, Kernel::derivative_uses_y ? y : nullptr);
  });
}

void pow_forward(real* out, const real* x, real p, int64_t n) {
  map(
      out, n, [p](Batch v, Batch, Batch) { return xsimd::pow(v, Batch(p)); }, x);
}

void pow_backward(real* dx, const real* dy, const real* x, real p, int64_t n) {
  map(
      dx, n, [p](Batch g, Batch v, Batch) { return g * Batch(p) * xsimd::pow(v, Batch(p - 1)); },
      dy, x);
}

// Calls run(f) with f the op on two batches, chosen once by a switch, so
// that the loops inside `run` are compiled once per op.
template <typename Run>
void with_batch_op(Binary op, Run&& run) {
  switch (op) {
    case Binary::add:
      run([](Batch x, Batch y) { return x + y; });
      break;
    case Binary::sub:
      run([](Batch x, Batch y) { return x - y; });
      break;
    case Binary::mul:
      run([](Batch x, Batch y) { return x * y; });
      break;
    case Binary::div:
      run([](Batch x, Batch y) { return simd::div(x, y); });
      break;
  }
}

void binary_forward(Binary op, real* out, const real* a, int64_t a_step, const real* b,
                    int64_t b_step, int64_t n) {
  // A step of 0 means "one value for every i": broadcast it into a batch.
  auto run = [&](auto f) {
    if (a_step == 1 && b_step == 1) {
      map(
          out, n, [&](Batch x, Batch y, Batch) { return f(x, y); }, a, b);
    } else if (a_step == 1) {
      const Batch y(*b);
      map(
          out, n, [&](Batch x, Batch, Batch) { return f(x, y); }, a);
    } else if (b_step == 1) {
      const Batch x(*a);
      map(
          out, n, [&](Batch y, Batch, Batch) { return f(x, y); }, b);
    } else {
      scalar::binary_forward(op, out, a, a_step, b, b_step, n);
    }
  };
  with_batch_op(op, run);
}

// The op is chosen once for all the rows, not once per row.
void binary_rows_forward(Binary op, real* out, const real* a, int64_t a_row_step, const real* b,
                         int64_t b_row_step, int64_t rows, int64_t n) {
  auto run = [&](auto f) {
    for (int64_t r = 0; r < rows; ++r) {
      map(
          out + r * n, n, [&](Batch x, Batch y, Batch) { return f(x, y); }, a + r * a_row_step,
          b + r * b_row_step);
    }
  };
  with_batch_op(op, run);
}

void accumulate(real* out, const real* x, int64_t n) {
  map(
      out, n, [](Batch o, Batch v, Batch) { return o + v; }, out, x);
}

#else  // ATTOGRAD_USE_SIMD off: kernels::f is scalar::f (tensor/kernels.hpp).

const char* simd_description() { return sizeof(real) == 4 ? "scalar float" : "scalar double"; }

#endif

}  // namespace attograd::kernels
