// tensor/kernels_matvec.hpp — matrix products with one row: matrix–vector.
//
// A model trained one sentence at a time multiplies a single row by each
// weight matrix at every step: Linear's and the GRU's x Wᵀ in forward, and
// dy W in backward. The general kernels (tensor/kernels.hpp) are blocked for
// many rows; with one row they run one short dependency chain at a time. These
// keep several independent chains in flight and read each weight once.
//
// Letters: K the length of the vector, N the entries of the result.
// Same conventions as tensor/kernels.hpp: outputs first, then inputs, then
// sizes; `kernels::scalar::` is the plain-loop specification and `kernels::`
// the xsimd version tested against it (tests/tensor/test_kernels_matvec.cpp).
#pragma once

#include <cstdint>

#include "tensor/kernels.hpp"
#include "tensor/shape.hpp"

namespace attograd::kernels {

// Each takes w's row stride ldw (w[r][c] = w[r·ldw + c]), so that a block of
// columns of a wider matrix is read in place: the overloads without it are
// for a whole matrix, ldw = its row length.
namespace scalar {
void matvec_nt(real* y, const real* x, const real* w, int64_t K, int64_t N, int64_t ldw);
void few_rows_nt(real* y, const real* x, const real* w, int64_t M, int64_t K, int64_t N,
                 int64_t ldw);
void vecmat(real* y, const real* x, const real* w, int64_t K, int64_t N, int64_t ldw);
inline void matvec_nt(real* y, const real* x, const real* w, int64_t K, int64_t N) {
  matvec_nt(y, x, w, K, N, K);
}
inline void few_rows_nt(real* y, const real* x, const real* w, int64_t M, int64_t K, int64_t N) {
  few_rows_nt(y, x, w, M, K, N, K);
}
inline void vecmat(real* y, const real* x, const real* w, int64_t K, int64_t N) {
  vecmat(y, x, w, K, N, N);
}
}  // namespace scalar

#if ATTOGRAD_USE_SIMD  // without it, kernels::f is scalar::f (tensor/kernels.hpp)
// y: (N); x: (K); w: (N,K).  y = x @ wᵀ, y[j] = Σ_k w[j][k] · x[k]
// (Linear's forward, the GRU's gate products). Several rows of w per pass
// share each load of x.
void matvec_nt(real* y, const real* x, const real* w, int64_t K, int64_t N, int64_t ldw);
inline void matvec_nt(real* y, const real* x, const real* w, int64_t K, int64_t N) {
  matvec_nt(y, x, w, K, N, K);
}

// y: (M,N); x: (M,K); w: (N,K).  y = x @ wᵀ for a few rows of x (a sentence's
// decoder outputs against an output layer): w streams in once for all M
// rows, where the packed matrix product would first copy all of w into
// transposed panels. Each row of y is summed exactly as matvec_nt sums it.
void few_rows_nt(real* y, const real* x, const real* w, int64_t M, int64_t K, int64_t N,
                 int64_t ldw);
inline void few_rows_nt(real* y, const real* x, const real* w, int64_t M, int64_t K, int64_t N) {
  few_rows_nt(y, x, w, M, K, N, K);
}

// y: (N); x: (K); w: (K,N).  y = x @ w, y[j] = Σ_k x[k] · w[k][j]
// (backward's dx = dy W). Reads w row by row, adding groups of up to 8 rows
// into y (kept in L1) per pass.
void vecmat(real* y, const real* x, const real* w, int64_t K, int64_t N, int64_t ldw);
inline void vecmat(real* y, const real* x, const real* w, int64_t K, int64_t N) {
  vecmat(y, x, w, K, N, N);
}
#endif

// The matmul_forward cases these kernels cover: a stored normally, and M = 1
// with b either way, or 2 ≤ M ≤ kFewRows with b stored transposed — c = a @ b
// with c (M,N), a (M,K), b (K,N) per b_layout. Returns false (and does
// nothing) for any other case.
inline constexpr int64_t kFewRows = 8;
bool matvec_forward(real* c, const real* a, Layout a_layout, const real* b, Layout b_layout,
                    int64_t M, int64_t K, int64_t N);

}  // namespace attograd::kernels
