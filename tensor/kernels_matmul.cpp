// tensor/kernels_matmul.cpp — matrix products (matmul in its layouts,
// add_scaled_product_tn, bmm): the scalar
// specification first, then the xsimd version that must agree with it.
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "tensor/kernels.hpp"
#include "tensor/kernels_dot.hpp"
#include "tensor/kernels_gemm.hpp"
#include "tensor/kernels_matvec.hpp"
#include "tensor/kernels_simd.hpp"
#include "tensor/parallel.hpp"

namespace attograd::kernels {

namespace scalar {

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

}  // namespace scalar

#if ATTOGRAD_USE_SIMD

using namespace simd;

namespace {

// Rows [i0, i1) of c = a @ b, c (M,N), by the kernel that sums this product:
//   M = 1, a stored normally   matvec_nt or vecmat (tensor/kernels_matvec.hpp)
//   N = 1                      matvec_nt (a normal) or vecmat (a transposed):
//                              c is a's rows (columns) against the vector b
//   otherwise                  gemm (tensor/kernels_gemm.hpp), on this thread
//                              when `threaded` is false
// A bmm sends each of its products here, and add_scaled_product_tn its
// product, so every caller sums an entry exactly as matmul_forward does.
void product(real* c, const real* a, Layout a_layout, const real* b, Layout b_layout, int64_t M,
             int64_t K, int64_t N, bool threaded) {
  if (matvec_forward(c, a, a_layout, b, b_layout, M, K, N)) return;
  if (N == 1) {  // b (K,1) is a contiguous vector in either layout
    if (a_layout == Layout::normal) {
      matvec_nt(c, b, a, K, M);  // c[i] = Σ_k a[i][k] · b[k]
    } else {
      vecmat(c, b, a, K, M);  // a stored (K,M): c[i] = Σ_k b[k] · a[k][i]
    }
    return;
  }
  const MatrixRef left{a, a_layout, a_layout == Layout::normal ? K : M};
  const MatrixRef right{b, b_layout, b_layout == Layout::normal ? N : K};
  if (threaded) {
    gemm(c, N, left, right, M, K, N);
  } else {
    gemm_serial(c, N, left, right, M, K, N);
  }
}

}  // namespace

void matmul_forward(real* c, const real* a, Layout a_layout, const real* b, Layout b_layout,
                    int64_t M, int64_t K, int64_t N) {
  product(c, a, a_layout, b, b_layout, M, K, N, true);
}

// c += α · aᵀ @ b, a stored (K,M): the product summed as matmul_forward sums
// it, then added into c with one rounding per entry. gemm does both at once;
// a product of one column (N = 1) is formed apart first.
void add_scaled_product_tn(real* c, real alpha, const real* a, const real* b, int64_t M, int64_t K,
                           int64_t N) {
  if (M == 0 || N == 0) return;
  if (N == 1) {
    std::vector<real> t(static_cast<size_t>(M));
    product(t.data(), a, Layout::transposed, b, Layout::normal, M, K, N, false);
    for (int64_t i = 0; i < M; ++i) c[i] = std::fma(alpha, t[i], c[i]);
    return;
  }
  gemm(c, N, MatrixRef{a, Layout::transposed, M}, MatrixRef{b, Layout::normal, N}, M, K, N,
       GemmInto{true, alpha});
}

namespace {

// c[i] = Σ_k a_i[k] · b_i[k] for `batches` pairs of K-vectors (a_i at a + i·a_step,
// b_i likewise): a batch of (1,K) @ (K,1) products, attention pooling's
// Σ_k α_k v_k. matmul_forward hands such a product to matvec_nt, so each is
// summed exactly as matvec_nt sums one row (tensor/kernels_matvec.cpp):
// dot_batches' four chains over the whole batches (tensor/kernels_dot.hpp),
// the lanes summed as reduce_sum's pairwise tree, then the last K mod W
// products one at a time.
void batched_dots(real* c, const real* a, int64_t a_step, const real* b, int64_t b_step,
                  int64_t batches, int64_t K) {
  const int64_t k_full = K - K % W;
  for (int64_t i = 0; i < batches; ++i) {
    const real* x = a + i * a_step;
    const real* w = b + i * b_step;
    Batch sum;
    dot_batches<1>(w, x, K, k_full, &sum);
    real total = reduce_sum(sum);
    for (int64_t k = k_full; k < K; ++k) total += w[k] * x[k];
    c[i] = total;
  }
}

}  // namespace

// One product alone shares its rows between threads (matmul_forward above); a
// batch shares whole products, each computed on one thread by the same
// kernel, so every entry is summed in the same order either way — and many
// tiny products cost one dispatch instead of one each.
void bmm_forward(real* c, const real* a, Layout a_layout, int64_t a_step, const real* b,
                 Layout b_layout, int64_t b_step, int64_t batches, int64_t M, int64_t K,
                 int64_t N) {
  if (batches == 1) {
    matmul_forward(c, a, a_layout, b, b_layout, M, K, N);
    return;
  }
  if (M == 1 && N == 1 && a_layout == Layout::normal) {
    batched_dots(c, a, a_step, b, b_step, batches, K);
    return;
  }
  if (K == 1) {
    // Outer products, (M,1) @ (1,N): c[i][m][n] = a[i][m] · b[i][n], one rounded
    // product per entry as every matmul kernel makes it (attention pooling's
    // backward dα = df ⊗ v). a and b are plain vectors in either layout.
    for (int64_t i = 0; i < batches; ++i) {
      for (int64_t m = 0; m < M; ++m) {
        const Batch scale(a[i * a_step + m]);
        map(
            c + (i * M + m) * N, N, [&](Batch v, Batch, Batch) { return scale * v; },
            b + i * b_step);
      }
    }
    return;
  }
  parallel::parallel_for(batches, batches * M * K * N, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      product(c + i * M * N, a + i * a_step, a_layout, b + i * b_step, b_layout, M, K, N, false);
    }
  });
}

#endif  // ATTOGRAD_USE_SIMD; without it kernels::f is scalar::f (tensor/kernels.hpp)

}  // namespace attograd::kernels
