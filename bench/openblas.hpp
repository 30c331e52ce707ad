// bench/openblas.hpp — OpenBLAS's GEMM for the same product, when CMake found
// OpenBLAS (ATTOGRAD_BENCH_OPENBLAS; the benchmark only, never the library).
//
// bench_kernels times it beside kernels::matmul_forward in the same run, so
// the ratio between the two is measured under the same load on a shared host.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/kernels.hpp"

#if ATTOGRAD_BENCH_OPENBLAS
#include <cblas.h>
#endif

namespace attograd::bench {

#if ATTOGRAD_BENCH_OPENBLAS
constexpr bool kHaveOpenblas = true;

// c (M,N) = a @ b with the operands stored as kernels::matmul_forward takes
// them; one overload per element type (cblas_sgemm, cblas_dgemm).
struct BlasProduct {
  CBLAS_TRANSPOSE ta, tb;
  blasint m, n, k, lda, ldb;
  BlasProduct(kernels::Layout a_layout, kernels::Layout b_layout, int64_t M, int64_t K, int64_t N)
      : ta(a_layout == kernels::Layout::normal ? CblasNoTrans : CblasTrans),
        tb(b_layout == kernels::Layout::normal ? CblasNoTrans : CblasTrans),
        m(blasint(M)),
        n(blasint(N)),
        k(blasint(K)),
        lda(a_layout == kernels::Layout::normal ? k : m),
        ldb(b_layout == kernels::Layout::normal ? n : k) {}
};
inline void openblas_matmul(float* c, const float* a, kernels::Layout a_layout, const float* b,
                            kernels::Layout b_layout, int64_t M, int64_t K, int64_t N) {
  const BlasProduct p(a_layout, b_layout, M, K, N);
  cblas_sgemm(CblasRowMajor, p.ta, p.tb, p.m, p.n, p.k, 1.0f, a, p.lda, b, p.ldb, 0.0f, c, p.n);
}
inline void openblas_matmul(double* c, const double* a, kernels::Layout a_layout, const double* b,
                            kernels::Layout b_layout, int64_t M, int64_t K, int64_t N) {
  const BlasProduct p(a_layout, b_layout, M, K, N);
  cblas_dgemm(CblasRowMajor, p.ta, p.tb, p.m, p.n, p.k, 1.0, a, p.lda, b, p.ldb, 0.0, c, p.n);
}

inline void openblas_threads(int n) { openblas_set_num_threads(n); }

// Which of its kernels OpenBLAS chose for this CPU ("Haswell", "SkylakeX", …;
// OPENBLAS_CORETYPE overrides the choice) and its build configuration.
inline std::string openblas_description() {
  return std::string(openblas_get_corename()) + " kernels; " + openblas_get_config();
}
#else
constexpr bool kHaveOpenblas = false;
inline void openblas_matmul(real*, const real*, kernels::Layout, const real*, kernels::Layout,
                            int64_t, int64_t, int64_t) {}
inline void openblas_threads(int) {}
inline std::string openblas_description() { return ""; }
#endif

}  // namespace attograd::bench
