// tensor/kernels_affine.cpp — x Wᵀ + b, the product every Linear and GRU
// projection makes, from the kernels it is made of.
#include "tensor/kernels.hpp"
#include "tensor/kernels_gemm.hpp"
#include "tensor/kernels_matvec.hpp"

namespace attograd::kernels {

// out: (B,N) = x (B,K) @ weightᵀ (K,N) + bias (N)
void affine_forward(real* out, const real* x, const real* weight, const real* bias, int64_t B,
                    int64_t K, int64_t N) {
  matmul_forward(out, x, Layout::normal, weight, Layout::transposed, B, K, N);
  if (bias == nullptr) return;
  for (int64_t b = 0; b < B; ++b) accumulate(out + b * N, bias, N);
}

// out: (B,N) = x (B,K) @ weightᵀ + bias, weight[j][k] at weight[j·ldw + k]
void affine_forward(real* out, const real* x, const real* weight, int64_t ldw, const real* bias,
                    int64_t B, int64_t K, int64_t N) {
  if (B == 1) {
    matvec_nt(out, x, weight, K, N, ldw);
  } else if (B <= kFewRows) {
    few_rows_nt(out, x, weight, B, K, N, ldw);
  } else {
    gemm(out, N, MatrixRef{x, Layout::normal, K}, MatrixRef{weight, Layout::transposed, ldw}, B, K,
         N);
  }
  if (bias == nullptr) return;
  for (int64_t b = 0; b < B; ++b) accumulate(out + b * N, bias, N);
}

// dx: (B,K) = dy (B,N) @ weight, weight[j][k] at weight[j·ldw + k]
void affine_backward_input(real* dx, const real* dy, const real* weight, int64_t ldw, int64_t B,
                           int64_t N, int64_t K) {
  if (B == 1) {
    vecmat(dx, dy, weight, N, K, ldw);
  } else {
    gemm(dx, K, MatrixRef{dy, Layout::normal, N}, MatrixRef{weight, Layout::normal, ldw}, B, N, K);
  }
}

}  // namespace attograd::kernels
