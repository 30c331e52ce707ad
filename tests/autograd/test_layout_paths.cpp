// tests/autograd/test_layout_paths.cpp — the mechanisms inside ops that
// change how a result is reached but not its bits (docs/fast_paths.md):
// binary_values' three layout paths and mul's x ⊙ x.
//
// binary_values (autograd/ops_elementwise.cpp) computes each output entry by
// the same formula from the same two numbers, whichever path it takes: one
// kernel call over the whole output (both operands laid out like it, or one
// a single number), one call per block (one operand a block repeated along
// the leading axes), or row by row (any other view). The plain algorithm is
// each operand broadcast to the output's shape and copied, then the formula
// over the whole output in one pass; every path must give its bits.
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "attograd.hpp"

namespace test_layout_paths {

using namespace attograd;

namespace {

// The plain algorithm: both operands broadcast and copied, then one call
// over the whole output.
Tensor plain(Tensor (*op)(const Tensor&, const Tensor&), const Tensor& a, const Tensor& b,
             const Shape& shape) {
  return op(expand(a, shape).contiguous_data(), expand(b, shape).contiguous_data());
}

void require_same_bits(const Tensor& got, const Tensor& expected) {
  REQUIRE(got.shape() == expected.shape());
  const std::vector<real> g = got.to_vector(), e = expected.to_vector();
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("entry " << i << ": " << g[i] << " against " << e[i]);
    REQUIRE(std::memcmp(&g[i], &e[i], sizeof(real)) == 0);
  }
}

}  // namespace

TEST_CASE("binary ops give the same bits on every layout path", "[autograd][fast]") {
  Generator generator(7);
  using Op = Tensor (*)(const Tensor&, const Tensor&);
  const std::vector<std::pair<const char*, Op>> ops = {
      {"add", &add}, {"sub", &sub}, {"mul", &mul}, {"div", &div}};
  for (const auto& [name, op] : ops) {
    INFO(name);
    for (int64_t n : {1, 7, 8, 9, 17}) {
      INFO("last axis " << n);
      const Tensor a = randn({3, 4, n}, generator);
      const Tensor b = add(randn({3, 4, n}, generator), full({3, 4, n}, 3.0));  // no zero divisor
      const Tensor row = add(randn({4, n}, generator), full({4, n}, 3.0));
      const Tensor one = full({1}, 1.5);
      // whole output at once: same layout, or a single number
      require_same_bits(op(a, b), plain(op, a, b, a.shape()));
      require_same_bits(op(a, one), plain(op, a, one, a.shape()));
      require_same_bits(op(one, b), plain(op, one, b, b.shape()));
      // one call per block: a (4,n) block repeated along the leading axis
      require_same_bits(op(a, row), plain(op, a, row, a.shape()));
      require_same_bits(op(row, b), plain(op, row, b, b.shape()));
      // row by row: a transposed view, a broadcast column, a sliced view
      const Tensor t = transpose(randn({3, n, 4}, generator), 1, 2);
      require_same_bits(op(t, b), plain(op, t, b, b.shape()));
      const Tensor column = add(randn({3, 4, 1}, generator), full({3, 4, 1}, 3.0));
      require_same_bits(op(a, column), plain(op, a, column, a.shape()));
    }
  }
}

TEST_CASE("mul's x ⊙ x gradient equals the sum of its two halves bit for bit", "[autograd][fast]") {
  // mul(x, x) returns one gradient, dy ⊙ x doubled, where the plain rule
  // returns dy ⊙ x twice and the engine adds them: the same bits.
  Generator generator(3);
  for (int64_t n : {1, 7, 8, 9, 33}) {
    const Tensor values = randn({2, n}, generator);
    const Tensor dy = randn({2, n}, generator);
    const Tensor x = requires_grad_(values.clone_data());
    backward(mul(x, x), dy);
    // The plain rule: two operands that are different tensors with x's values,
    // their gradients dy ⊙ x each, added.
    const Tensor x1 = requires_grad_(values.clone_data());
    const Tensor x2 = requires_grad_(values.clone_data());
    backward(mul(x1, x2), dy);
    require_same_bits(grad(x), add(grad(x1), grad(x2)));
  }
}

}  // namespace test_layout_paths
