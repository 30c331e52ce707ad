// tests/tensor/test_parallel.cpp — the thread pool and the threaded matrix products.
//
// parallel_for must cover every index exactly once with the documented
// chunks, run nested calls serially and pass exceptions on. The products it
// splits (kernels::matmul_forward by rows, bmm by batches) must give results
// that are *bitwise* equal for 1, 2 and 3 threads: each entry is summed by one
// thread in the single-threaded order, so not even rounding may differ. The
// work threshold is set to 0 so that small shapes (M not a multiple of 4,
// K past the kernels' blocking) are split too.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "autograd/ops.hpp"
#include "tensor/factory.hpp"
#include "tensor/kernels.hpp"
#include "tensor/parallel.hpp"
#include "tests/support/thread_settings.hpp"

namespace test_parallel {

using namespace attograd;
using Catch::Matchers::Contains;

namespace {

// Sets the thread count and threshold for one test, and restores them.
using testing::ThreadSettings;

std::vector<real> random_values(int64_t n, Generator& generator) {
  std::vector<real> values(static_cast<size_t>(n));
  for (real& v : values) v = static_cast<real>(generator.uniform(-1, 1));
  return values;
}

// c = a @ b with the given layouts on `threads` threads.
std::vector<real> product(int threads, const std::vector<real>& a, kernels::Layout a_layout,
                          const std::vector<real>& b, kernels::Layout b_layout, int64_t M,
                          int64_t K, int64_t N) {
  const ThreadSettings settings(threads, 0);
  std::vector<real> c(static_cast<size_t>(M * N), real(-7));
  kernels::matmul_forward(c.data(), a.data(), a_layout, b.data(), b_layout, M, K, N);
  return c;
}

}  // namespace

TEST_CASE("parallel: thread count from set_num_threads, bad counts rejected", "[parallel]") {
  REQUIRE(parallel::num_threads() >= 1);
  const ThreadSettings settings(3, 0);
  CHECK(parallel::num_threads() == 3);
  parallel::set_num_threads(1);
  CHECK(parallel::num_threads() == 1);
  CHECK_THROWS_WITH(parallel::set_num_threads(0), Contains("set_num_threads(0)"));
  CHECK_THROWS_WITH(parallel::set_min_parallel_work(-1), Contains("set_min_parallel_work(-1)"));
}

TEST_CASE("parallel: a job is cut into chunks by its size alone", "[parallel]") {
  using parallel::chunk_count;
  CHECK(chunk_count(0, 1) == 0);
  CHECK(chunk_count(1, int64_t{1} << 40) == 1);
  CHECK(chunk_count(100, 1) == 2);  // at least two
  CHECK(chunk_count(100, 5 * parallel::kChunkWork) == 5);
  CHECK(chunk_count(100, 5 * parallel::kChunkWork + 1) == 5);
  CHECK(chunk_count(3, int64_t{1} << 40) == 3);  // at most one index each
  CHECK(chunk_count(100000, int64_t{1} << 40) == parallel::kMaxChunks);
}

TEST_CASE("parallel: parallel_for covers every index once, in the documented chunks",
          "[parallel]") {
  for (int threads : {1, 2, 3}) {
    const ThreadSettings settings(threads, 0);
    for (int64_t count : {0, 1, 2, 3, 7, 100}) {
      for (int64_t work : {int64_t{1}, 5 * parallel::kChunkWork, int64_t{1} << 40}) {
        std::mutex mutex;
        std::vector<std::pair<int64_t, int64_t>> ranges;
        std::vector<int> visits(static_cast<size_t>(count), 0);
        parallel::parallel_for(count, work, [&](int64_t begin, int64_t end) {
          std::lock_guard lock(mutex);
          ranges.emplace_back(begin, end);
          for (int64_t i = begin; i < end; ++i) ++visits[static_cast<size_t>(i)];
        });
        CHECK(std::all_of(visits.begin(), visits.end(), [](int v) { return v == 1; }));
        std::sort(ranges.begin(), ranges.end());
        // One thread: the whole range at once. More: the chunks, whichever
        // thread ran each.
        std::vector<std::pair<int64_t, int64_t>> expected;
        const int64_t chunks =
            threads == 1 ? std::min<int64_t>(count, 1) : parallel::chunk_count(count, work);
        for (int64_t i = 0; i < chunks; ++i) {
          expected.emplace_back(count * i / chunks, count * (i + 1) / chunks);
        }
        INFO("threads " << threads << ", count " << count << ", work " << work);
        CHECK(ranges == expected);
      }
    }
  }
}

TEST_CASE("parallel: small work and nested calls run serially", "[parallel]") {
  const ThreadSettings settings(2, 1000);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> calls{0};
  parallel::parallel_for(10, 999, [&](int64_t begin, int64_t end) {
    ++calls;
    CHECK(begin == 0);
    CHECK(end == 10);
    CHECK(std::this_thread::get_id() == caller);
  });
  CHECK(calls == 1);

  std::atomic<int> inner_calls{0};
  parallel::parallel_for(2, 1000, [&](int64_t, int64_t) {
    parallel::parallel_for(8, 1000, [&](int64_t begin, int64_t end) {
      ++inner_calls;
      CHECK(begin == 0);
      CHECK(end == 8);
    });
  });
  CHECK(inner_calls == 2);  // one whole inner range per outer range
}

TEST_CASE("parallel: an exception in any range reaches the caller", "[parallel]") {
  const ThreadSettings settings(2, 0);
  CHECK_THROWS_WITH(parallel::parallel_for(10, 1,
                                           [](int64_t begin, int64_t) {
                                             if (begin > 0) throw std::runtime_error("range 2");
                                           }),
                    "range 2");
  // The pool still works afterwards.
  std::atomic<int64_t> total{0};
  parallel::parallel_for(10, 1, [&](int64_t begin, int64_t end) { total += end - begin; });
  CHECK(total == 10);
}

TEST_CASE("parallel: threaded matmul kernels equal single-threaded ones bit for bit",
          "[parallel]") {
  using kernels::Layout;
  struct Case {
    int64_t M, K, N;
  };
  // M = 1 (one row: matvec), 5 and 13 (a partial last share of rows), K past
  // the GEMM's K block (tensor/kernels_gemm.hpp), N off the SIMD width.
  const std::vector<Case> cases = {{1, 3, 5}, {5, 7, 9}, {13, 300, 17}, {64, 96, 33}, {9, 70, 1}};
  Generator generator(7);
  for (const Case& s : cases) {
    for (Layout a_layout : {Layout::normal, Layout::transposed}) {
      for (Layout b_layout : {Layout::normal, Layout::transposed}) {
        const std::vector<real> a = random_values(s.M * s.K, generator);
        const std::vector<real> b = random_values(s.K * s.N, generator);
        const std::vector<real> one = product(1, a, a_layout, b, b_layout, s.M, s.K, s.N);
        INFO("M " << s.M << " K " << s.K << " N " << s.N << " layouts "
                  << static_cast<int>(a_layout) << static_cast<int>(b_layout));
        CHECK(product(2, a, a_layout, b, b_layout, s.M, s.K, s.N) == one);
        CHECK(product(3, a, a_layout, b, b_layout, s.M, s.K, s.N) == one);
        // And the threaded result is the product (against the scalar specification).
        std::vector<real> reference(one.size());
        kernels::scalar::matmul_forward(reference.data(), a.data(), a_layout, b.data(), b_layout,
                                        s.M, s.K, s.N);
        for (size_t i = 0; i < one.size(); ++i) {
          CHECK(one[i] == Approx(reference[i]).margin(1e-4));
        }
      }
    }
  }
}

TEST_CASE("parallel: threaded matmul and bmm ops, forward and backward, equal single-threaded",
          "[parallel]") {
  Generator generator(3);
  const Tensor a0 = randn({6, 37, 20}, generator), b0 = randn({6, 20, 11}, generator);
  const Tensor x0 = randn({45, 30}, generator), w0 = randn({19, 30}, generator);
  struct Result {
    std::vector<real> bmm, da, db, matmul, dx, dw;
  };
  auto run = [&](int threads) {
    const ThreadSettings settings(threads, 0);
    const Tensor a = requires_grad_(a0.clone_data()), b = requires_grad_(b0.clone_data());
    const Tensor x = requires_grad_(x0.clone_data()), w = requires_grad_(w0.clone_data());
    const Tensor batched = bmm(a, b);
    const Tensor linear = matmul(x, transpose(w, 0, 1));  // Linear's x @ Wᵀ
    backward(sum(batched * batched) + sum(linear * linear));
    return Result{batched.to_vector(), grad(a).to_vector(), grad(b).to_vector(),
                  linear.to_vector(),  grad(x).to_vector(), grad(w).to_vector()};
  };
  const Result one = run(1);
  for (int threads : {2, 3}) {
    const Result many = run(threads);
    INFO(threads << " threads");
    CHECK(many.bmm == one.bmm);
    CHECK(many.da == one.da);
    CHECK(many.db == one.db);
    CHECK(many.matmul == one.matmul);
    CHECK(many.dx == one.dx);
    CHECK(many.dw == one.dw);
  }
}

}  // namespace test_parallel
