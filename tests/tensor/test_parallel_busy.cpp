// tests/tensor/test_parallel_busy.cpp — threaded products with the other core
// busy give the bits they give on one thread.
//
// A child process spins on the last CPU this process may use, so the pool's
// worker finds its core taken: it is late, or taken off its core in the middle
// of a chunk, and the pool runs whole stretches of jobs on the caller alone
// (tensor/parallel.cpp). Whichever thread runs which chunk, every product is
// the same, bit for bit, as on one thread. Speed under load is measured in
// bench/bench_threads.cpp, never asserted here.
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "autograd/ops.hpp"
#include "tensor/factory.hpp"
#include "tensor/kernels.hpp"
#include "tensor/parallel.hpp"
#include "tests/support/busy_cpu.hpp"
#include "tests/support/thread_settings.hpp"

namespace test_parallel_busy {

using namespace attograd;
using attograd::testing::BusyCpu;

namespace {

std::vector<real> random_values(int64_t n, Generator& generator) {
  std::vector<real> values(static_cast<size_t>(n));
  for (real& v : values) v = static_cast<real>(generator.uniform(-1, 1));
  return values;
}

struct Product {  // batches × (M,K) @ (K,N)
  int64_t batches, M, K, N;
};

// c = a @ b for each batch, on `threads` threads (every job split: threshold 0).
std::vector<real> products(int threads, const Product& s, const std::vector<real>& a,
                           const std::vector<real>& b) {
  const testing::ThreadSettings settings(threads, 0);
  std::vector<real> c(static_cast<size_t>(s.batches * s.M * s.N), real(-7));
  kernels::bmm_forward(c.data(), a.data(), kernels::Layout::normal, s.M * s.K, b.data(),
                       kernels::Layout::transposed, s.K * s.N, s.batches, s.M, s.K, s.N);
  return c;
}

}  // namespace

TEST_CASE("parallel: with the other core busy, two threads give one thread's bits",
          "[parallel][busy]") {
  // Square products split by column panels, a tall one by row tiles, a
  // batched one by batches; odd sizes leave partial tiles and chunks.
  const std::vector<Product> shapes = {
      {1, 128, 128, 128}, {1, 256, 256, 256}, {1, 301, 77, 45}, {1, 45, 77, 301}, {24, 33, 40, 29}};
  Generator generator(5);
  std::vector<std::vector<real>> as, bs, expected;
  for (const Product& s : shapes) {
    as.push_back(random_values(s.batches * s.M * s.K, generator));
    bs.push_back(random_values(s.batches * s.K * s.N, generator));
    expected.push_back(products(1, s, as.back(), bs.back()));
  }
  const BusyCpu busy;
  REQUIRE(busy.spinning());
  // Many rounds: jobs the worker joins late, joins on time, or misses, and
  // stretches the caller runs alone.
  const testing::ThreadSettings settings(2, 0);
  int differing = 0;
  for (int round = 0; round < 40; ++round) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      if (products(2, shapes[i], as[i], bs[i]) != expected[i]) ++differing;
    }
  }
  CHECK(differing == 0);

  // And an op's forward and backward (matmul, as Linear calls it).
  const Tensor x0 = randn({96, 64}, generator), w0 = randn({80, 64}, generator);
  auto gradients = [&](int threads) {
    const testing::ThreadSettings one_or_two(threads, 0);
    const Tensor x = requires_grad_(x0.clone_data()), w = requires_grad_(w0.clone_data());
    const Tensor y = matmul(x, transpose(w, 0, 1));
    backward(sum(y * y));
    return std::vector<std::vector<real>>{y.to_vector(), grad(x).to_vector(), grad(w).to_vector()};
  };
  const auto one = gradients(1);
  for (int round = 0; round < 10; ++round) CHECK(gradients(2) == one);
}

}  // namespace test_parallel_busy
