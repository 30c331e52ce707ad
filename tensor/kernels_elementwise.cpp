// tensor/kernels_elementwise.cpp — elementwise kernels (unary, pow, binary,
// exp_nonpositive, accumulate): the scalar
// specification first, then the xsimd version that must agree with it.
#include <cmath>
#include <limits>
#include <string>

#include "tensor/kernels.hpp"
#include "tensor/kernels_simd.hpp"

namespace attograd::kernels {

namespace scalar {

namespace {
real sigmoid(real x) { return real(1) / (real(1) + std::exp(-x)); }
}  // namespace

void unary_forward(Unary op, real* out, const real* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    switch (op) {
      case Unary::neg:
        out[i] = -x[i];
        break;
      case Unary::exp:
        out[i] = std::exp(x[i]);
        break;
      case Unary::log:
        out[i] = std::log(x[i]);
        break;
      case Unary::sqrt:
        out[i] = std::sqrt(x[i]);
        break;
      case Unary::sin:
        out[i] = std::sin(x[i]);
        break;
      case Unary::cos:
        out[i] = std::cos(x[i]);
        break;
      case Unary::tanh:
        out[i] = std::tanh(x[i]);
        break;
      case Unary::sigmoid:
        out[i] = sigmoid(x[i]);
        break;
      case Unary::relu:
        out[i] = x[i] > 0 ? x[i] : real(0);
        break;
    }
  }
}

void unary_backward(Unary op, real* dx, const real* dy, const real* x, const real* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    switch (op) {
      case Unary::neg:
        dx[i] = -dy[i];
        break;  // d(−x) = −1
      case Unary::exp:
        dx[i] = dy[i] * y[i];
        break;  // d eˣ = eˣ
      case Unary::log:
        dx[i] = dy[i] / x[i];
        break;  // d ln x = 1/x
      case Unary::sqrt:
        dx[i] = dy[i] * real(0.5) / y[i];
        break;  // d √x = 1/(2√x)
      case Unary::sin:
        dx[i] = dy[i] * std::cos(x[i]);
        break;  // d sin = cos
      case Unary::cos:
        dx[i] = -dy[i] * std::sin(x[i]);
        break;  // d cos = −sin
      case Unary::tanh:
        dx[i] = dy[i] * (real(1) - y[i] * y[i]);
        break;  // 1 − tanh²
      case Unary::sigmoid:
        dx[i] = dy[i] * y[i] * (real(1) - y[i]);
        break;  // σ(1 − σ)
      case Unary::relu:
        dx[i] = x[i] > 0 ? dy[i] : real(0);
        break;  // 1 if x > 0 (0 at 0)
    }
  }
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
  auto apply = [&](auto f) {
    map(
        out, n, [&](Batch v, Batch, Batch) { return f(v); }, x);
  };
  switch (op) {
    case Unary::neg:
      apply([](Batch v) { return -v; });
      break;
    case Unary::exp:
      apply([](Batch v) { return xsimd::exp(v); });
      break;
    case Unary::log:
      apply([](Batch v) { return xsimd::log(v); });
      break;
    case Unary::sqrt:
      apply([](Batch v) { return xsimd::sqrt(v); });
      break;
    case Unary::sin:
      apply([](Batch v) { return xsimd::sin(v); });
      break;
    case Unary::cos:
      apply([](Batch v) { return xsimd::cos(v); });
      break;
    case Unary::tanh:
      apply([](Batch v) { return xsimd::tanh(v); });
      break;
    case Unary::sigmoid:
      apply([](Batch v) { return sigmoid(v); });
      break;
    case Unary::relu:
      apply([](Batch v) { return xsimd::max(v, Batch(real(0))); });
      break;
  }
}

void unary_backward(Unary op, real* dx, const real* dy, const real* x, const real* y, int64_t n) {
  const Batch one(real(1));
  switch (op) {
    case Unary::neg:
      map(
          dx, n, [](Batch g, Batch, Batch) { return -g; }, dy);
      break;
    case Unary::exp:
      map(
          dx, n, [](Batch g, Batch out, Batch) { return g * out; }, dy, y);
      break;
    case Unary::log:
      map(
          dx, n, [](Batch g, Batch in, Batch) { return g / in; }, dy, x);
      break;
    case Unary::sqrt:
      map(
          dx, n, [](Batch g, Batch out, Batch) { return g * Batch(real(0.5)) / out; }, dy, y);
      break;
    case Unary::sin:
      map(
          dx, n, [](Batch g, Batch in, Batch) { return g * xsimd::cos(in); }, dy, x);
      break;
    case Unary::cos:
      map(
          dx, n, [](Batch g, Batch in, Batch) { return -g * xsimd::sin(in); }, dy, x);
      break;
    case Unary::tanh:
      map(
          dx, n, [&](Batch g, Batch out, Batch) { return g * (one - out * out); }, dy, y);
      break;
    case Unary::sigmoid:
      map(
          dx, n, [&](Batch g, Batch out, Batch) { return g * out * (one - out); }, dy, y);
      break;
    case Unary::relu:
      map(
          dx, n,
          [](Batch g, Batch in, Batch) {
            return xsimd::select(in > Batch(real(0)), g, Batch(real(0)));
          },
          dy, x);
      break;
  }
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
      run([](Batch x, Batch y) { return x / y; });
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

#else  // ATTOGRAD_USE_SIMD off: the library runs the reference loops.

const char* simd_description() { return sizeof(real) == 4 ? "scalar float" : "scalar double"; }
void exp_nonpositive(real* out, const real* x, int64_t n) { scalar::exp_nonpositive(out, x, n); }
void unary_forward(Unary op, real* out, const real* x, int64_t n) {
  scalar::unary_forward(op, out, x, n);
}
void unary_backward(Unary op, real* dx, const real* dy, const real* x, const real* y, int64_t n) {
  scalar::unary_backward(op, dx, dy, x, y, n);
}
void pow_forward(real* out, const real* x, real p, int64_t n) { scalar::pow_forward(out, x, p, n); }
void pow_backward(real* dx, const real* dy, const real* x, real p, int64_t n) {
  scalar::pow_backward(dx, dy, x, p, n);
}
void binary_forward(Binary op, real* out, const real* a, int64_t a_step, const real* b,
                    int64_t b_step, int64_t n) {
  scalar::binary_forward(op, out, a, a_step, b, b_step, n);
}
void binary_rows_forward(Binary op, real* out, const real* a, int64_t a_row_step, const real* b,
                         int64_t b_row_step, int64_t rows, int64_t n) {
  scalar::binary_rows_forward(op, out, a, a_row_step, b, b_row_step, rows, n);
}
void accumulate(real* out, const real* x, int64_t n) { scalar::accumulate(out, x, n); }

#endif

}  // namespace attograd::kernels
