// tests/autograd/test_sum_axes.cpp — sum over several axes gives the values
// of the plain loop, whether the axes are adjacent (summed in one pass, as one
// axis of their combined size) or not (one pass each), and a scalar operand
// broadcast in one pass (or a block repeated along leading axes, one pass
// per block) gives the values of the row-by-row loop. The entries
// are small integers, so every sum is exact in float and compared exactly.
// These run in both binaries.
#include <catch2/catch.hpp>
#include <vector>

#include "attograd.hpp"

namespace test_sum_axes {

using namespace attograd;

namespace {

// x: (2,3,4) with x[i][j][k] = 12i + 4j + k.
Tensor counting() { return reshape(arange(0, 24), {2, 3, 4}); }

// Σ of x[i][j][k] over the axes in `summed`, by loops, as a flat row-major list.
std::vector<real> loop_sum(const std::vector<bool>& summed) {
  const int64_t sizes[3] = {2, 3, 4};
  int64_t out_sizes[3];
  for (int a = 0; a < 3; ++a) out_sizes[a] = summed[a] ? 1 : sizes[a];
  std::vector<real> out(out_sizes[0] * out_sizes[1] * out_sizes[2], 0);
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      for (int64_t k = 0; k < 4; ++k) {
        const int64_t oi = summed[0] ? 0 : i, oj = summed[1] ? 0 : j, ok = summed[2] ? 0 : k;
        out[(oi * out_sizes[1] + oj) * out_sizes[2] + ok] += real(12 * i + 4 * j + k);
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("sum over adjacent and separate axes equals the loop", "[autograd][reduce]") {
  const Tensor x = counting();
  CHECK(sum(x, {0, 1}, true).to_vector() == loop_sum({true, true, false}));
  CHECK(sum(x, {1, 2}, true).to_vector() == loop_sum({false, true, true}));
  CHECK(sum(x, {0, 2}, true).to_vector() == loop_sum({true, false, true}));
  CHECK(sum(x, {0, 1, 2}, true).to_vector() == loop_sum({true, true, true}));
  CHECK(sum(x, {-1, 0, 1}, false).shape() == Shape{});
  CHECK(sum(x, {1, 2}, false).shape() == Shape{2});
}

TEST_CASE("a one-element operand broadcasts like the row-by-row loop", "[autograd][elementwise]") {
  const Tensor x = counting();
  const Tensor half = tensor({0.5});  // shape (1): one value, not a 0-d scalar
  std::vector<real> expected;
  for (real v : x.to_vector()) expected.push_back(v * real(0.5));
  CHECK((x * half).to_vector() == expected);
  CHECK((half * x).to_vector() == expected);
  CHECK((x * real(0.5)).to_vector() == expected);
  // A transposed view is not in the output's layout: it takes the row loop.
  const Tensor xt = transpose(x, 1, 2);
  std::vector<real> expected_t;
  for (real v : xt.to_vector()) expected_t.push_back(v - real(0.5));
  CHECK((xt - half).to_vector() == expected_t);
}

TEST_CASE("a block repeated along leading axes broadcasts like the row-by-row loop",
          "[autograd][elementwise]") {
  const Tensor x = counting();                             // (2,3,4)
  const Tensor row = tensor({1, -2, 3, 5});                // (4): one block per (i, j)
  const Tensor plane = reshape(arange(1, 13), {1, 3, 4});  // (1,3,4): one block per i
  auto loop = [&](const Tensor& b, int64_t block, bool b_first, bool subtract) {
    const std::vector<real> xs = x.to_vector(), bs = b.to_vector();
    std::vector<real> out;
    for (size_t e = 0; e < xs.size(); ++e) {
      const real bv = bs[e % size_t(block)];
      const real l = b_first ? bv : xs[e], r = b_first ? xs[e] : bv;
      out.push_back(subtract ? l - r : l * r);
    }
    return out;
  };
  CHECK((x * row).to_vector() == loop(row, 4, false, false));
  CHECK((row * x).to_vector() == loop(row, 4, true, false));
  CHECK((x - plane).to_vector() == loop(plane, 12, false, true));
  CHECK((plane - x).to_vector() == loop(plane, 12, true, true));
  // A (3,1) column is not a leading-axis block of (2,3,4): the row loop, same values.
  const Tensor column = reshape(tensor({1, 2, 3}), {3, 1});
  std::vector<real> expected;
  const std::vector<real> xs = x.to_vector();
  for (size_t e = 0; e < xs.size(); ++e) expected.push_back(xs[e] * real(1 + (e / 4) % 3));
  CHECK((x * column).to_vector() == expected);
}

}  // namespace test_sum_axes
