// tests/tensor/test_bmm_kernel.cpp — kernels::bmm_forward, the batched product.
//
// bmm_forward promises that each product of the batch is summed exactly as
// matmul_forward sums it alone, so these comparisons are bit for bit: the
// batch loop moved into one kernel call must not change a single number,
// whatever the layouts, the batch steps (0 = one matrix for every batch) or
// the thread count. (SIMD against scalar is tests/tensor/test_kernels.cpp.)
#include <catch2/catch.hpp>
#include <vector>

#include "tensor/kernels.hpp"
#include "tensor/parallel.hpp"
#include "tensor/random.hpp"

namespace test_bmm_kernel {

using namespace attograd;
namespace k = attograd::kernels;

namespace {

std::vector<real> draw(int64_t n, Generator& generator) {
  std::vector<real> v(static_cast<size_t>(n));
  for (real& x : v) x = static_cast<real>(generator.uniform(-1, 1));
  return v;
}

struct Case {
  int64_t batches, M, K, N;
  bool shared_a, shared_b;  // step 0: the same matrix for every batch
};

const std::vector<Case> kCases = {
    {50, 1, 49, 1, false, false},  // attention pooling's forward
    {50, 1, 1, 49, false, false},  // and its backward
    {3, 7, 9, 17, false, false},
    {4, 17, 8, 1, false, true},
    {5, 1, 300, 9, true, false},
    {1, 33, 257, 31, false, false},
    {2, 0, 3, 4, false, false},
    {3, 4, 0, 5, false, false},
    {64, 8, 16, 8, false, false},
    // outer products (K = 1) and single dot products, as bmm_forward's own loops do them
    {4, 7, 1, 9, false, false},
    {3, 1, 1, 1, false, false},
    {5, 1, 1, 7, true, false},
    {6, 2, 1, 17, false, true},
    {7, 1, 8, 1, false, false},
    {7, 1, 9, 1, true, false},
    {2, 1, 7, 1, false, false},
    {2, 1, 0, 1, false, false},
    // dot products four at a time, and the rest one by one
    {33, 1, 17, 1, false, false},
    {16, 1, 16, 1, false, true},
    {17, 1, 15, 1, true, false},
};

}  // namespace

TEST_CASE("bmm_forward equals one matmul_forward per batch, bit for bit", "[kernels][bmm]") {
  Generator generator(11);
  using k::Layout;
  for (Layout a_layout : {Layout::normal, Layout::transposed}) {
    for (Layout b_layout : {Layout::normal, Layout::transposed}) {
      for (const Case& c : kCases) {
        const int64_t a_step = c.shared_a ? 0 : c.M * c.K;
        const int64_t b_step = c.shared_b ? 0 : c.K * c.N;
        const std::vector<real> a = draw(c.shared_a ? c.M * c.K : c.batches * c.M * c.K, generator);
        const std::vector<real> b = draw(c.shared_b ? c.K * c.N : c.batches * c.K * c.N, generator);
        const size_t out = static_cast<size_t>(c.batches * c.M * c.N);
        std::vector<real> batched(out, real(99)), one_by_one(out, real(-99));
        std::vector<real> batched_scalar(out, real(98)), scalar_one_by_one(out, real(-98));
        k::bmm_forward(batched.data(), a.data(), a_layout, a_step, b.data(), b_layout, b_step,
                       c.batches, c.M, c.K, c.N);
        k::scalar::bmm_forward(batched_scalar.data(), a.data(), a_layout, a_step, b.data(),
                               b_layout, b_step, c.batches, c.M, c.K, c.N);
        for (int64_t i = 0; i < c.batches; ++i) {
          k::matmul_forward(one_by_one.data() + i * c.M * c.N, a.data() + i * a_step, a_layout,
                            b.data() + i * b_step, b_layout, c.M, c.K, c.N);
          k::scalar::matmul_forward(scalar_one_by_one.data() + i * c.M * c.N, a.data() + i * a_step,
                                    a_layout, b.data() + i * b_step, b_layout, c.M, c.K, c.N);
        }
        INFO("batches " << c.batches << " (" << c.M << "," << c.K << "," << c.N << ") layouts "
                        << int(a_layout) << int(b_layout));
        CHECK(batched == one_by_one);
        CHECK(batched_scalar == scalar_one_by_one);
        // With K = 1 every entry is one rounded product, so SIMD and scalar agree exactly.
        if (c.K == 1) CHECK(batched == batched_scalar);
      }
    }
  }
}

TEST_CASE("bmm_forward gives the same bits on one thread and on two", "[kernels][bmm][parallel]") {
  Generator generator(12);
  const int threads = parallel::num_threads();
  const int64_t min_work = parallel::min_parallel_work();
  const int64_t batches = 64, M = 9, K = 33, N = 17;
  const std::vector<real> a = draw(batches * M * K, generator);
  const std::vector<real> b = draw(batches * K * N, generator);
  std::vector<real> serial(static_cast<size_t>(batches * M * N));
  std::vector<real> shared(serial.size());
  parallel::set_num_threads(1);
  k::bmm_forward(serial.data(), a.data(), k::Layout::normal, M * K, b.data(), k::Layout::normal,
                 K * N, batches, M, K, N);
  parallel::set_num_threads(2);
  parallel::set_min_parallel_work(1);  // split even this small job
  k::bmm_forward(shared.data(), a.data(), k::Layout::normal, M * K, b.data(), k::Layout::normal,
                 K * N, batches, M, K, N);
  parallel::set_num_threads(threads);
  parallel::set_min_parallel_work(min_work);
  CHECK(serial == shared);
}

}  // namespace test_bmm_kernel
