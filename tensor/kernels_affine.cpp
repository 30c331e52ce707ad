// tensor/kernels_affine.cpp — x Wᵀ + b, the product every Linear and GRU
// projection makes, from the kernels it is made of.
#include "tensor/kernels.hpp"

namespace attograd::kernels {

// out: (B,N) = x (B,K) @ weightᵀ (K,N) + bias (N)
void affine_forward(real* out, const real* x, const real* weight, const real* bias, int64_t B,
                    int64_t K, int64_t N) {
  matmul_forward(out, x, Layout::normal, weight, Layout::transposed, B, K, N);
  if (bias == nullptr) return;
  for (int64_t b = 0; b < B; ++b) accumulate(out + b * N, bias, N);
}

}  // namespace attograd::kernels
