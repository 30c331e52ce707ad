// tensor/kernels_unary.hpp — every elementwise function with a kernel of its
// own (kernels::Unary), one entry each: its formula, its SIMD formula and its
// derivative side by side.
//
// An entry is a specialisation UnaryKernel<Unary::f> holding
//   forward(x)               y = f(x) for one real: the specification
//   forward_simd(x)          the same on an xsimd batch of W lanes
//   backward(dy, x, y)       dx = dy · f'(x), written with x, y or both
//   backward_simd(dy, x, y)  the same on batches
// and what the derivative reads (derivative_uses_x / _y): the SIMD backward
// loads only those arrays and hands the formula 0 for the other, so a formula
// that reads an input it does not declare fails the kernel test. The flags
// of UnaryKernelDefaults hold unless an entry says otherwise.
//
// Everything else iterates over the entries with for_each_unary: the scalar
// loops and the SIMD loops of unary_forward / unary_backward
// (tensor/kernels_elementwise.cpp) and the kernel test
// (tests/tensor/test_kernels.cpp). An op missing its entry does not compile.
//
// The SIMD formulas call xsimd, so this header belongs to the kernels and the
// tests, like kernels_simd.hpp; it is not installed.
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>

#include "tensor/kernels.hpp"
#include "tensor/xsimd.hpp"

namespace attograd::kernels {

template <Unary op>
struct UnaryKernel;

struct UnaryKernelDefaults {
  static constexpr bool derivative_uses_x = false;
  static constexpr bool derivative_uses_y = false;
  // The kernel test draws x in [0.05, 5] instead of [−5, 5].
  static constexpr bool positive_inputs_only = false;
  // IEEE-754 rounds the formula exactly (+, −, ·, ÷, √, max), so the SIMD loop
  // must equal the scalar loop bit for bit; otherwise within a few ulp.
  static constexpr bool forward_rounds_exactly = false;
  static constexpr bool backward_rounds_exactly = false;
};

// y = −x                dx = −dy
template <>
struct UnaryKernel<Unary::neg> : UnaryKernelDefaults {
  static constexpr const char* name = "neg";
  static constexpr bool forward_rounds_exactly = true;
  static constexpr bool backward_rounds_exactly = true;
  static real forward(real x) { return -x; }
  template <typename B>
  static B forward_simd(B x) {
    return -x;
  }
  static real backward(real dy, real, real) { return -dy; }
  template <typename B>
  static B backward_simd(B dy, B, B) {
    return -dy;
  }
};

// y = eˣ                dx = dy · y
template <>
struct UnaryKernel<Unary::exp> : UnaryKernelDefaults {
  static constexpr const char* name = "exp";
  static constexpr bool derivative_uses_y = true;
  static real forward(real x) { return std::exp(x); }
  template <typename B>
  static B forward_simd(B x) {
    return xsimd::exp(x);
  }
  static real backward(real dy, real, real y) { return dy * y; }
  template <typename B>
  static B backward_simd(B dy, B, B y) {
    return dy * y;
  }
};

// y = ln x              dx = dy / x
template <>
struct UnaryKernel<Unary::log> : UnaryKernelDefaults {
  static constexpr const char* name = "log";
  static constexpr bool derivative_uses_x = true;
  static constexpr bool positive_inputs_only = true;
  static real forward(real x) { return std::log(x); }
  template <typename B>
  static B forward_simd(B x) {
    return xsimd::log(x);
  }
  static real backward(real dy, real x, real) { return dy / x; }
  template <typename B>
  static B backward_simd(B dy, B x, B) {
    return simd::div(dy, x);
  }
};

// y = √x                dx = dy · 0.5 / y
template <>
struct UnaryKernel<Unary::sqrt> : UnaryKernelDefaults {
  static constexpr const char* name = "sqrt";
  static constexpr bool derivative_uses_y = true;
  static constexpr bool positive_inputs_only = true;
  static constexpr bool forward_rounds_exactly = true;
  static real forward(real x) { return std::sqrt(x); }
  template <typename B>
  static B forward_simd(B x) {
    return simd::sqrt(x);
  }
  static real backward(real dy, real, real y) { return dy * real(0.5) / y; }
  template <typename B>
  static B backward_simd(B dy, B, B y) {
    return simd::div(dy * B(real(0.5)), y);
  }
};

// y = sin x             dx = dy · cos x
template <>
struct UnaryKernel<Unary::sin> : UnaryKernelDefaults {
  static constexpr const char* name = "sin";
  static constexpr bool derivative_uses_x = true;
  static real forward(real x) { return std::sin(x); }
  template <typename B>
  static B forward_simd(B x) {
    return xsimd::sin(x);
  }
  static real backward(real dy, real x, real) { return dy * std::cos(x); }
  template <typename B>
  static B backward_simd(B dy, B x, B) {
    return dy * xsimd::cos(x);
  }
};

// y = cos x             dx = −dy · sin x
template <>
struct UnaryKernel<Unary::cos> : UnaryKernelDefaults {
  static constexpr const char* name = "cos";
  static constexpr bool derivative_uses_x = true;
  static real forward(real x) { return std::cos(x); }
  template <typename B>
  static B forward_simd(B x) {
    return xsimd::cos(x);
  }
  static real backward(real dy, real x, real) { return -dy * std::sin(x); }
  template <typename B>
  static B backward_simd(B dy, B x, B) {
    return -dy * xsimd::sin(x);
  }
};

// y = tanh x            dx = dy · (1 − y²)
template <>
struct UnaryKernel<Unary::tanh> : UnaryKernelDefaults {
  static constexpr const char* name = "tanh";
  static constexpr bool derivative_uses_y = true;
  static real forward(real x) { return std::tanh(x); }
  template <typename B>
  static B forward_simd(B x) {
    return xsimd::tanh(x);
  }
  static real backward(real dy, real, real y) { return dy * (real(1) - y * y); }
  template <typename B>
  static B backward_simd(B dy, B, B y) {
    return dy * (B(real(1)) - y * y);
  }
};

// y = σ(x) = 1 / (1 + e⁻ˣ)    dx = dy · y (1 − y)
template <>
struct UnaryKernel<Unary::sigmoid> : UnaryKernelDefaults {
  static constexpr const char* name = "sigmoid";
  static constexpr bool derivative_uses_y = true;
  static real forward(real x) { return real(1) / (real(1) + std::exp(-x)); }
  template <typename B>
  static B forward_simd(B x) {
    return simd::div(B(real(1)), B(real(1)) + xsimd::exp(-x));
  }
  static real backward(real dy, real, real y) { return dy * y * (real(1) - y); }
  template <typename B>
  static B backward_simd(B dy, B, B y) {
    return dy * y * (B(real(1)) - y);
  }
};

// y = max(x, 0)         dx = dy where x > 0, else 0 (0 at the kink)
template <>
struct UnaryKernel<Unary::relu> : UnaryKernelDefaults {
  static constexpr const char* name = "relu";
  static constexpr bool derivative_uses_x = true;
  static constexpr bool forward_rounds_exactly = true;
  static constexpr bool backward_rounds_exactly = true;
  static real forward(real x) { return x > 0 ? x : real(0); }
  template <typename B>
  static B forward_simd(B x) {
    return xsimd::max(x, B(real(0)));
  }
  static real backward(real dy, real x, real) { return x > 0 ? dy : real(0); }
  template <typename B>
  static B backward_simd(B dy, B x, B) {
    return xsimd::select(x > B(real(0)), dy, B(real(0)));
  }
};

// y = ln(1 + eˣ), written ln(1 + e^−|x|) + max(x, 0) so that e^… never
// overflows and ln(1 + ·) keeps its digits when e^−|x| is tiny.
//                       dx = dy · σ(x) = dy / (1 + e⁻ˣ)
template <>
struct UnaryKernel<Unary::softplus> : UnaryKernelDefaults {
  static constexpr const char* name = "softplus";
  static constexpr bool derivative_uses_x = true;
  static real forward(real x) { return std::log1p(std::exp(-std::abs(x))) + std::max(x, real(0)); }
  template <typename B>
  static B forward_simd(B x) {
    return xsimd::log1p(xsimd::exp(-xsimd::abs(x))) + xsimd::max(x, B(real(0)));
  }
  static real backward(real dy, real x, real) { return dy / (real(1) + std::exp(-x)); }
  template <typename B>
  static B backward_simd(B dy, B x, B) {
    return simd::div(dy, B(real(1)) + xsimd::exp(-x));
  }
};

// GELU in its tanh form (GPT-2's, nanoGPT's):
//   y = ½ x (1 + t),  t = tanh u,  u = c (x + a x³),  c = √(2/π), a = 0.044715
//                       dx = dy · (½ (1 + t) + ½ x (1 − t²) c (1 + 3 a x²))
template <>
struct UnaryKernel<Unary::gelu> : UnaryKernelDefaults {
  static constexpr const char* name = "gelu";
  static constexpr bool derivative_uses_x = true;
  static constexpr real c = kGeluC;
  static constexpr real a = kGeluA;
  static real forward(real x) {
    const real t = std::tanh(c * (x + a * x * x * x));
    return real(0.5) * x * (real(1) + t);
  }
  template <typename B>
  static B forward_simd(B x) {
    const B t = xsimd::tanh(B(c) * (x + B(a) * x * x * x));
    return B(real(0.5)) * x * (B(real(1)) + t);
  }
  static real backward(real dy, real x, real) {
    const real t = std::tanh(c * (x + a * x * x * x));
    const real slope = real(0.5) * (real(1) + t) +
                       real(0.5) * x * (real(1) - t * t) * c * (real(1) + real(3) * a * x * x);
    return dy * slope;
  }
  template <typename B>
  static B backward_simd(B dy, B x, B) {
    const B t = xsimd::tanh(B(c) * (x + B(a) * x * x * x));
    const B slope = B(real(0.5)) * (B(real(1)) + t) + B(real(0.5)) * x * (B(real(1)) - t * t) *
                                                          B(c) *
                                                          (B(real(1)) + B(real(3) * a) * x * x);
    return dy * slope;
  }
};

// Calls f(std::integral_constant<Unary, op>()) for every op, in the order of
// the enum: f's body reaches the entry as UnaryKernel<decltype(c)::value>.
template <typename F, int... i>
void for_each_unary_of(F& f, std::integer_sequence<int, i...>) {
  (f(std::integral_constant<Unary, Unary(i)>()), ...);
}
template <typename F>
void for_each_unary(F&& f) {
  for_each_unary_of(f, std::make_integer_sequence<int, int(Unary::count)>());
}

// Calls f(std::integral_constant<Unary, op>()) for the one op given: a loop
// written inside f is compiled once per op, with op's formulas inlined.
template <typename F>
void with_unary_kernel(Unary op, F&& f) {
  for_each_unary([&](auto c) {
    if (decltype(c)::value == op) f(c);
  });
}

}  // namespace attograd::kernels
