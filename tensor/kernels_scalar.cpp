// tensor/kernels_scalar.cpp — the reference loops. Read these first: each is
// the definition of what its SIMD twin in kernels_simd.cpp must compute.
#include <cmath>
#include <limits>

#include "tensor/kernels.hpp"

namespace attograd::kernels::scalar {

static real sigmoid(real x) { return real(1) / (real(1) + std::exp(-x)); }

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

void exp_nonpositive(real* out, const real* x, int64_t n) {
  // ln of the smallest normal number: (min_exponent − 1)·ln2, −87.34 in float.
  const real lowest =
      real(std::numeric_limits<real>::min_exponent - 1) * real(0.693147180559945309417);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] < lowest ? real(0) : std::exp(x[i]);
}

void accumulate(real* out, const real* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] += x[i];
}

void sum_axis_forward(real* out, const real* x, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      real total = 0;
      for (int64_t k = 0; k < n; ++k) total += x[(o * n + k) * inner + j];
      out[o * inner + j] = total;
    }
  }
}

void column_dots(real* out, const real* a, const real* b, int64_t rows, int64_t cols) {
  for (int64_t j = 0; j < cols; ++j) out[j] = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j) out[j] += a[r * cols + j] * b[r * cols + j];
  }
}

void max_axis_forward(real* out, int64_t* argmax, const real* x, int64_t outer, int64_t n,
                      int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      real best = -std::numeric_limits<real>::infinity();
      int64_t best_index = 0;
      for (int64_t k = 0; k < n; ++k) {
        const real value = x[(o * n + k) * inner + j];
        if (value > best) {
          best = value;
          best_index = k;
        }
      }
      out[o * inner + j] = best;
      argmax[o * inner + j] = best_index;
    }
  }
}

void softmax_forward(real* out, const real* x, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const real* in = x + r * cols;
    real* y = out + r * cols;
    // Subtracting the row maximum changes nothing mathematically and keeps
    // exp() from overflowing.
    real largest = -std::numeric_limits<real>::infinity();
    for (int64_t c = 0; c < cols; ++c) largest = std::max(largest, in[c]);
    real total = 0;
    for (int64_t c = 0; c < cols; ++c) {
      y[c] = std::exp(in[c] - largest);
      total += y[c];
    }
    for (int64_t c = 0; c < cols; ++c) y[c] /= total;
  }
}

void softmax_backward(real* dx, const real* y, const real* dy, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    real dot = 0;
    for (int64_t c = 0; c < cols; ++c) dot += dy[r * cols + c] * y[r * cols + c];
    for (int64_t c = 0; c < cols; ++c)
      dx[r * cols + c] = y[r * cols + c] * (dy[r * cols + c] - dot);
  }
}

void log_softmax_forward(real* out, const real* x, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const real* in = x + r * cols;
    real largest = -std::numeric_limits<real>::infinity();
    for (int64_t c = 0; c < cols; ++c) largest = std::max(largest, in[c]);
    real total = 0;
    for (int64_t c = 0; c < cols; ++c) total += std::exp(in[c] - largest);
    const real log_total = largest + std::log(total);
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = in[c] - log_total;
  }
}

void log_softmax_backward(real* dx, const real* y, const real* dy, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    real total = 0;
    for (int64_t c = 0; c < cols; ++c) total += dy[r * cols + c];
    for (int64_t c = 0; c < cols; ++c) {
      dx[r * cols + c] = dy[r * cols + c] - std::exp(y[r * cols + c]) * total;
    }
  }
}

void matmul_forward(real* c, const real* a, Layout a_layout, const real* b, Layout b_layout,
                    int64_t M, int64_t K, int64_t N) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      real total = 0;
      for (int64_t k = 0; k < K; ++k) {
        const real left = a_layout == Layout::normal ? a[i * K + k] : a[k * M + i];
        const real right = b_layout == Layout::normal ? b[k * N + j] : b[j * K + k];
        total += left * right;
      }
      c[i * N + j] = total;
    }
  }
}

void bmm_forward(real* c, const real* a, Layout a_layout, int64_t a_step, const real* b,
                 Layout b_layout, int64_t b_step, int64_t batches, int64_t M, int64_t K,
                 int64_t N) {
  for (int64_t i = 0; i < batches; ++i) {
    scalar::matmul_forward(c + i * M * N, a + i * a_step, a_layout, b + i * b_step, b_layout, M, K,
                           N);
  }
}

void add_scaled_product_tn(real* c, real alpha, const real* a, const real* b, int64_t M, int64_t K,
                           int64_t N) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      real total = 0;
      for (int64_t k = 0; k < K; ++k) total += a[k * M + i] * b[k * N + j];
      c[i * N + j] = std::fma(alpha, total, c[i * N + j]);
    }
  }
}

}  // namespace attograd::kernels::scalar
