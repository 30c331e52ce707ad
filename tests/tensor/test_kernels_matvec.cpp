// tests/tensor/test_kernels_matvec.cpp — the xsimd matrix–vector kernels
// against the scalar specification, at sizes around the lane width (0, 1, 7,
// 8, 9, 15, 16, 17, 33) and a large one, in both dimensions, so full batches,
// tails and both together run; and matmul_forward's one-row products against
// the scalar matmul.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tensor/kernels.hpp"
#include "tensor/kernels_matvec.hpp"
#include "tensor/random.hpp"

namespace test_kernels_matvec {

using namespace attograd;
namespace k = attograd::kernels;

namespace {

std::vector<real> random_values(int64_t count, Generator& generator) {
  std::vector<real> values(count);
  for (real& v : values) v = static_cast<real>(generator.uniform(-1, 1));
  return values;
}

// Largest |a − b| / (1 + Σ|terms|): the versions differ only by the order in
// which the K products are summed, so the error is bounded by a few units in
// the last place of the sum of the terms' magnitudes.
double largest_difference(const std::vector<real>& a, const std::vector<real>& b,
                          const std::vector<double>& magnitude) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double difference = std::abs(double(a[i]) - double(b[i])) / (1 + magnitude[i]);
    worst = std::isnan(difference) ? INFINITY : std::max(worst, difference);
  }
  return worst;
}

const double kTolerance = 16 * std::numeric_limits<real>::epsilon();
const int64_t kSizes[] = {0, 1, 7, 8, 9, 15, 16, 17, 33, 1000};

}  // namespace

TEST_CASE("matvec_nt agrees with the scalar loop", "[kernels][matvec]") {
  Generator generator(11);
  for (const int64_t K : kSizes) {
    for (const int64_t N : kSizes) {
      INFO("K = " << K << ", N = " << N);
      const std::vector<real> x = random_values(K, generator), w = random_values(N * K, generator);
      std::vector<real> fast(N, real(7)), reference(N, real(7));
      std::vector<double> magnitude(N, 0);
      for (int64_t j = 0; j < N; ++j) {
        for (int64_t i = 0; i < K; ++i) magnitude[j] += std::abs(double(w[j * K + i] * x[i]));
      }
      k::matvec_nt(fast.data(), x.data(), w.data(), K, N);
      k::scalar::matvec_nt(reference.data(), x.data(), w.data(), K, N);
      CHECK(largest_difference(fast, reference, magnitude) <= kTolerance);
    }
  }
}

TEST_CASE("few_rows_nt agrees with the scalar loop and sums each row as matvec_nt",
          "[kernels][matvec]") {
  // Rows of x in pairs and a last single one (M odd), rows of w in blocks
  // and left over, K with and without a tail past the last full batch.
  Generator generator(14);
  for (const int64_t M : {1, 2, 3, 7, 8}) {
    for (const int64_t K : {0, 1, 7, 16, 17, 33, 261}) {
      for (const int64_t N : {0, 1, 7, 8, 9, 15, 16, 17, 33, 231}) {
        INFO("M = " << M << ", K = " << K << ", N = " << N);
        const std::vector<real> x = random_values(M * K, generator),
                                w = random_values(N * K, generator);
        std::vector<real> fast(M * N, real(7)), reference(M * N, real(7)), alone(M * N, real(7));
        std::vector<double> magnitude(M * N, 0);
        for (int64_t m = 0; m < M; ++m) {
          for (int64_t j = 0; j < N; ++j) {
            for (int64_t i = 0; i < K; ++i) {
              magnitude[m * N + j] += std::abs(double(w[j * K + i] * x[m * K + i]));
            }
          }
          k::matvec_nt(alone.data() + m * N, x.data() + m * K, w.data(), K, N);
        }
        k::few_rows_nt(fast.data(), x.data(), w.data(), M, K, N);
        k::scalar::few_rows_nt(reference.data(), x.data(), w.data(), M, K, N);
        CHECK(largest_difference(fast, reference, magnitude) <= kTolerance);
        CHECK(fast == alone);  // a row's bits do not depend on the rows beside it
      }
    }
  }
}

TEST_CASE("vecmat agrees with the scalar loop", "[kernels][matvec]") {
  Generator generator(12);
  for (const int64_t K : kSizes) {
    for (const int64_t N : kSizes) {
      INFO("K = " << K << ", N = " << N);
      const std::vector<real> x = random_values(K, generator), w = random_values(K * N, generator);
      std::vector<real> fast(N, real(7)), reference(N, real(7));
      std::vector<double> magnitude(N, 0);
      for (int64_t i = 0; i < K; ++i) {
        for (int64_t j = 0; j < N; ++j) magnitude[j] += std::abs(double(x[i] * w[i * N + j]));
      }
      k::vecmat(fast.data(), x.data(), w.data(), K, N);
      k::scalar::vecmat(reference.data(), x.data(), w.data(), K, N);
      CHECK(largest_difference(fast, reference, magnitude) <= kTolerance);
    }
  }
}

TEST_CASE("one-row matmul_forward goes through the matvec kernels", "[kernels][matvec]") {
  Generator generator(13);
  for (const k::Layout b_layout : {k::Layout::normal, k::Layout::transposed}) {
    for (const int64_t K : {0, 1, 9, 256}) {
      for (const int64_t N : {1, 7, 768}) {
        INFO("K = " << K << ", N = " << N << ", b transposed "
                    << (b_layout == k::Layout::transposed));
        const std::vector<real> a = random_values(K, generator),
                                b = random_values(K * N, generator);
        std::vector<real> c(N, real(7)), reference(N, real(7)), direct(N, real(7));
        k::matmul_forward(c.data(), a.data(), k::Layout::normal, b.data(), b_layout, 1, K, N);
        k::scalar::matmul_forward(reference.data(), a.data(), k::Layout::normal, b.data(), b_layout,
                                  1, K, N);
        REQUIRE(k::matvec_forward(direct.data(), a.data(), k::Layout::normal, b.data(), b_layout, 1,
                                  K, N));
        std::vector<double> magnitude(N, double(K));  // |a|, |b| ≤ 1
        CHECK(largest_difference(c, reference, magnitude) <= kTolerance);
        // Without SIMD, matmul_forward is the scalar triple loop: no dispatch.
#if ATTOGRAD_USE_SIMD
        CHECK(c == direct);  // the dispatch is exact: the same kernel
#endif
      }
    }
  }
#if ATTOGRAD_USE_SIMD
  // A few rows go to few_rows_nt when b is stored transposed (x Wᵀ).
  {
    const int64_t M = k::kFewRows, K = 40, N = 37;
    const std::vector<real> a = random_values(M * K, generator),
                            b = random_values(K * N, generator);
    std::vector<real> c(M * N), direct(M * N);
    k::matmul_forward(c.data(), a.data(), k::Layout::normal, b.data(), k::Layout::transposed, M, K,
                      N);
    k::few_rows_nt(direct.data(), a.data(), b.data(), M, K, N);
    CHECK(c == direct);
  }
#endif
  // Anything else is not theirs: more rows than kFewRows, several rows with
  // b stored normally, a stored transposed.
  std::vector<real> c(4 * (k::kFewRows + 1));
  const std::vector<real> a(4 * (k::kFewRows + 1), 1), b(4 * (k::kFewRows + 1), 1);
  CHECK_FALSE(k::matvec_forward(c.data(), a.data(), k::Layout::normal, b.data(),
                                k::Layout::transposed, k::kFewRows + 1, 2, 2));
  CHECK_FALSE(k::matvec_forward(c.data(), a.data(), k::Layout::normal, b.data(), k::Layout::normal,
                                2, 2, 2));
  CHECK_FALSE(k::matvec_forward(c.data(), a.data(), k::Layout::transposed, b.data(),
                                k::Layout::normal, 1, 2, 2));
}

TEST_CASE("the matvec kernels read a block of a wider matrix in place, as a copy of it",
          "[kernels][matvec]") {
  // w's block: columns [offset, offset + cols) of a matrix `width` wide.
  // Read in place with row stride `width`, each kernel gives the bits it
  // gives on a contiguous copy of the block, and the scalar loops agree.
  Generator generator(15);
  const int64_t offset = 3, pad = 5;
  for (const int64_t rows : {1, 7, 8, 9, 17, 33}) {
    for (const int64_t cols : {0, 1, 7, 8, 9, 15, 16, 17, 33, 261}) {
      INFO("rows = " << rows << ", cols = " << cols);
      const int64_t width = offset + cols + pad;
      const std::vector<real> wide = random_values(rows * width, generator);
      std::vector<real> block(rows * cols);
      for (int64_t r = 0; r < rows; ++r) {
        std::copy_n(wide.begin() + r * width + offset, cols, block.begin() + r * cols);
      }
      const real* in_place = wide.data() + offset;
      // matvec_nt and few_rows_nt: w (N,K) = (rows,cols), x of K = cols.
      for (const int64_t M : {1, 3}) {
        const std::vector<real> x = random_values(M * cols, generator);
        std::vector<real> strided(M * rows, real(7)), copied(M * rows, real(7)),
            reference(M * rows, real(7)), scalar_copied(M * rows, real(7));
        if (M == 1) {
          k::matvec_nt(strided.data(), x.data(), in_place, cols, rows, width);
          k::matvec_nt(copied.data(), x.data(), block.data(), cols, rows);
        } else {
          k::few_rows_nt(strided.data(), x.data(), in_place, M, cols, rows, width);
          k::few_rows_nt(copied.data(), x.data(), block.data(), M, cols, rows);
        }
        k::scalar::few_rows_nt(reference.data(), x.data(), in_place, M, cols, rows, width);
        k::scalar::few_rows_nt(scalar_copied.data(), x.data(), block.data(), M, cols, rows);
        CHECK(strided == copied);
        CHECK(reference == scalar_copied);
        std::vector<double> magnitude(M * rows, 0);
        for (int64_t m = 0; m < M; ++m) {
          for (int64_t j = 0; j < rows; ++j) {
            for (int64_t i = 0; i < cols; ++i) {
              magnitude[m * rows + j] += std::abs(double(block[j * cols + i] * x[m * cols + i]));
            }
          }
        }
        CHECK(largest_difference(strided, reference, magnitude) <= kTolerance);
      }
      // vecmat: w (K,N) = (rows,cols), x of K = rows.
      const std::vector<real> x = random_values(rows, generator);
      std::vector<real> strided(cols, real(7)), copied(cols, real(7)), reference(cols, real(7)),
          scalar_copied(cols, real(7));
      k::vecmat(strided.data(), x.data(), in_place, rows, cols, width);
      k::vecmat(copied.data(), x.data(), block.data(), rows, cols);
      k::scalar::vecmat(reference.data(), x.data(), in_place, rows, cols, width);
      k::scalar::vecmat(scalar_copied.data(), x.data(), block.data(), rows, cols);
      // One column stored contiguously is a row, summed as a dot product instead.
      if (cols != 1) CHECK(strided == copied);
      CHECK(reference == scalar_copied);
      std::vector<double> magnitude(cols, 0);
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j)
          magnitude[j] += std::abs(double(x[i] * block[i * cols + j]));
      }
      CHECK(largest_difference(strided, reference, magnitude) <= kTolerance);
    }
  }
}

}  // namespace test_kernels_matvec
