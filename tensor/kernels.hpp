// tensor/kernels.hpp — the numeric loops, as plain functions on raw arrays.
//
// Conventions (after llm.c): outputs first, then inputs, then sizes; a `d`
// prefix marks a gradient; every function starts with the shapes it expects.
// All arrays are contiguous row-major unless a Layout says otherwise.
//
// Each kernel exists twice, declared once (tensor/kernels_declarations.hpp,
// with every kernel's shapes and formula). `kernels::scalar::f` is the plain
// loop: it is the specification, easy to read and obviously right.
// `kernels::f` is what the library calls: an xsimd version for the
// instruction set the library was compiled for (AVX-512, AVX2, SSE, NEON …),
// or the scalar loop itself when built with -DATTOGRAD_SIMD=OFF.
// tests/tensor/test_kernels.cpp checks that the two agree at sizes 0, 1, 7,
// 8, 9, 15, 16, 17, 49 and 10,000.
#pragma once

#include <cstdint>

#include "tensor/shape.hpp"

namespace attograd::kernels {

// The elementwise functions with a kernel of their own. Each has one entry,
// UnaryKernel<Unary::f> in tensor/kernels_unary.hpp, with its formula, its
// SIMD formula and its derivative; `count` ends the list and is no function.
enum class Unary { neg, exp, log, sqrt, sin, cos, tanh, sigmoid, relu, softplus, gelu, count };
// GELU's tanh form, y = ½ x (1 + tanh(c (x + a x³))): its two constants.
inline constexpr real kGeluC = real(0.7978845608028654);  // √(2/π)
inline constexpr real kGeluA = real(0.044715);
enum class Binary { add, sub, mul, div };
// How a matrix operand is stored: Normal means A[i][k] = a[i*K + k];
// Transposed means the array holds Aᵀ, so A[i][k] = a[k*M + i].
enum class Layout { normal, transposed };

// Adam's coefficients for one step t (adam_step below):
//   d = g + weight_decay·p
//   m ← m + (1 − β₁)(d − m)
//   v ← β₂ v + (1 − β₂) d²
//   p ← p − step_size · m / (√v / sqrt_correction2 + eps)
struct AdamStep {
  real step_size;         // lr / (1 − β₁ᵗ)
  real sqrt_correction2;  // √(1 − β₂ᵗ)
  real beta2;
  real one_minus_beta1;
  real one_minus_beta2;
  real eps;
  real weight_decay;
};

// Name of the lane width in use, e.g. "avx512bw x16 float" or "scalar".
const char* simd_description();

// The specification: plain loops (tensor/kernels_<family>.cpp, namespace scalar).
namespace scalar {
#include "tensor/kernels_declarations.hpp"

// The 32-bit draw of element `index` that dropout_mask compares with drop_below.
uint32_t mask_draw(uint64_t seed, uint64_t index);
}  // namespace scalar

#if ATTOGRAD_USE_SIMD
// What the library calls: the xsimd versions, same signatures and formulas.
#include "tensor/kernels_declarations.hpp"
#else
// Built without SIMD (-DATTOGRAD_SIMD=OFF, or a target without FMA),
// kernels::f is scalar::f itself: no forwarding functions.
using namespace scalar;
#endif

// out: (B,N); x: (B,K); weight: (N,K), stored as a Linear layer keeps it (read
// transposed, no copy); bias: (N) or null for none.  out = x @ weightᵀ + bias
// (tensor/kernels_affine.cpp: matmul_forward, then the bias row added to each row)
void affine_forward(real* out, const real* x, const real* weight, const real* bias, int64_t B,
                    int64_t K, int64_t N);
// The same, and its input gradient, with the weight a block of columns of a
// wider matrix read in place, weight[j][k] at weight[j·ldw + k] (a layer
// applied to one part of its input: autograd's linear_columns). Each entry is
// summed as the kernel for its row count sums it: matvec_nt for one row,
// few_rows_nt up to kFewRows, gemm beyond; vecmat or gemm for dx.
//   affine_forward:        out (B,N) = x (B,K) @ weightᵀ + bias
//   affine_backward_input: dx (B,K) = dy (B,N) @ weight
void affine_forward(real* out, const real* x, const real* weight, int64_t ldw, const real* bias,
                    int64_t B, int64_t K, int64_t N);
void affine_backward_input(real* dx, const real* dy, const real* weight, int64_t ldw, int64_t B,
                           int64_t N, int64_t K);

}  // namespace attograd::kernels
