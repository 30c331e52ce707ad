// tests/autograd/test_causal_attention.cpp — the fused causal attention op
// (autograd/ops_attention.cpp) against its composed twin, bmm → masked
// softmax → bmm, and the errors it names. Its gradcheck and gradgradcheck
// rows are in tests/autograd/test_gradcheck.cpp, with the other ops'.
//
// Tolerance. The two forms compute the same sums in different orders (the
// kernel scales q before the dot product, adds the keys in tiles of 32 with
// the online softmax's rescaling, and divides by the row's sum once at the
// end), so they agree to rounding, not bit for bit: each output and gradient
// within tol · (1 + max |composed|) of the composed one's, the max taken
// over the whole tensor, with tol = 1e-12 in double and 2e-5 in float. Both
// have margin: the largest differences measured on these shapes were
// 9e-16 (double) and 5.4e-7 (float), for entries of up to 2.8.
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "attograd.hpp"

namespace test_causal_attention {

using namespace attograd;

namespace {

using Inputs = std::vector<Tensor>;

constexpr double kTolerance = sizeof(real) == 8 ? 1e-12 : 2e-5;

Generator& generator() {
  static Generator g(41);
  return g;
}

// Outputs and gradients of Σ f(q, k, v) ⊙ R, R fixed: y, dq, dk, dv.
Inputs run(Tensor (*f)(const Tensor&, const Tensor&, const Tensor&), const Inputs& values,
           const Tensor& R) {
  Inputs leaves;
  for (const Tensor& v : values) leaves.push_back(requires_grad_(v.clone_data()));
  const Tensor y = f(leaves[0], leaves[1], leaves[2]);
  const Inputs grads = autograd::grad({sum(y * R)}, leaves);
  return {detach(y), grads[0], grads[1], grads[2]};
}

void check_close(const std::string& what, const Tensor& fused, const Tensor& composed) {
  REQUIRE(fused.shape() == composed.shape());
  const Tensor a = fused.contiguous_data(), b = composed.contiguous_data();
  double largest = 0, worst = 0;
  for (int64_t e = 0; e < b.numel(); ++e)
    largest = std::max(largest, std::abs(double(b.data()[e])));
  for (int64_t e = 0; e < b.numel(); ++e) {
    worst = std::max(worst, std::abs(double(a.data()[e]) - double(b.data()[e])));
  }
  INFO(what << ": largest difference " << worst << ", largest entry " << largest);
  CHECK(worst <= kTolerance * (1 + largest));
}

}  // namespace

TEST_CASE("causal_attention equals bmm, masked softmax and bmm, forward and every gradient",
          "[autograd][attention]") {
  // (N, L, d): one position, the SIMD tails of d, a 32-key tile and one past
  // it, several tiles of a typical head.
  for (const auto& [N, L, d] : std::vector<std::array<int64_t, 3>>{{1, 1, 1},
                                                                   {3, 7, 8},
                                                                   {1, 8, 9},
                                                                   {3, 9, 7},
                                                                   {2, 32, 16},
                                                                   {2, 33, 5},
                                                                   {1, 70, 9},
                                                                   {2, 64, 32}}) {
    const std::string what = fmt::format("(N,L,d) = ({},{},{})", N, L, d);
    const Inputs values = {uniform({N, L, d}, -2.0, 2.0, generator()),
                           uniform({N, L, d}, -2.0, 2.0, generator()),
                           uniform({N, L, d}, -1.0, 1.0, generator())};
    const Tensor R = uniform({N, L, d}, -1.0, 1.0, generator());
    const Inputs fused = run(causal_attention, values, R);
    const Inputs composed = run(causal_attention_composed, values, R);
    const char* names[] = {"y", "dq", "dk", "dv"};
    for (int t = 0; t < 4; ++t) check_close(what + " " + names[t], fused[t], composed[t]);
  }
}

// The causal mask: a query's output does not move when a later key or value
// does, and the first query's output is its own value.
TEST_CASE("causal_attention: query i sees keys 0 … i only", "[autograd][attention]") {
  const Tensor q = uniform({1, 9, 4}, -2.0, 2.0, generator());
  Tensor k = uniform({1, 9, 4}, -2.0, 2.0, generator());
  Tensor v = uniform({1, 9, 4}, -1.0, 1.0, generator());
  const Tensor before = causal_attention(q, k, v).contiguous_data();
  for (int64_t c = 0; c < 4; ++c) CHECK(before.data()[c] == Approx(v.data()[c]).epsilon(1e-6));
  k = k.clone_data();
  v = v.clone_data();
  for (int64_t c = 0; c < 4; ++c) {  // position 6 changed: rows 0 … 5 are the same bits
    k.data()[6 * 4 + c] += real(1);
    v.data()[6 * 4 + c] -= real(1);
  }
  const Tensor after = causal_attention(q, k, v).contiguous_data();
  for (int64_t e = 0; e < 6 * 4; ++e) CHECK(after.data()[e] == before.data()[e]);
  CHECK(after.data()[6 * 4] != before.data()[6 * 4]);
}

// A view of (B,H,L,d) as (B·H,L,d), and transposed inputs (read through a
// copy), give the same numbers as contiguous ones.
TEST_CASE("causal_attention reads views", "[autograd][attention]") {
  const Tensor q = uniform({2, 3, 5, 4}, -2.0, 2.0, generator());
  const Tensor k = uniform({2, 3, 5, 4}, -2.0, 2.0, generator());
  const Tensor v = uniform({2, 3, 4, 5}, -1.0, 1.0, generator());  // stored (…, d, L)
  const Tensor vt = transpose(reshape(v, {6, 4, 5}), 1, 2);
  const Tensor y = causal_attention(reshape(q, {6, 5, 4}), reshape(k, {6, 5, 4}), vt);
  const Tensor expected =
      causal_attention(reshape(q, {6, 5, 4}), reshape(k, {6, 5, 4}), contiguous(vt));
  CHECK(y.shape() == Shape{6, 5, 4});
  const Tensor a = y.contiguous_data(), b = expected.contiguous_data();
  for (int64_t e = 0; e < a.numel(); ++e) CHECK(a.data()[e] == b.data()[e]);
}

TEST_CASE("causal_attention names the op and the shapes in its errors", "[autograd][attention]") {
  const Tensor x = zeros({2, 5, 4});
  CHECK_THROWS_WITH(causal_attention(x, Tensor(), x),
                    Catch::Contains("causal_attention: got an undefined tensor"));
  CHECK_THROWS_WITH(causal_attention(zeros({5, 4}), zeros({5, 4}), zeros({5, 4})),
                    Catch::Contains("causal_attention: q (5,4), k (5,4) and v (5,4) must each "
                                    "be 3-D, (heads, positions, head size)"));
  CHECK_THROWS_WITH(causal_attention(x, zeros({2, 6, 4}), x),
                    Catch::Contains("causal_attention: q (2,5,4), k (2,6,4) and v (2,5,4) "
                                    "must have the same shape (N,L,d)"));
  CHECK_THROWS_WITH(causal_attention(zeros({2, 0, 4}), zeros({2, 0, 4}), zeros({2, 0, 4})),
                    Catch::Contains("need at least one position (L) and one number per head (d)"));
  CHECK_THROWS_WITH(causal_attention_composed(x, x, zeros({2, 5})),
                    Catch::Contains("causal_attention_composed: q (2,5,4)"));
}

// The gradcheck rows of causal_attention (tests/autograd/test_gradcheck.cpp)
// would catch a gradient 1 % off in one element: the kernels' gradients
// pass, and the same gradients with one element of dk scaled by 1.01 fail
// at that element.
TEST_CASE("gradcheck catches a causal_attention gradient 1% off in one element",
          "[autograd][attention][gradcheck][f64]") {
  // y = causal_attention(q, k, v) by the op's kernels, with the gradient of
  // input `input` scaled by `factor` at element `bad`.
  auto with_scaled_gradient = [](int64_t input, int64_t bad, real factor) {
    return [=](const Inputs& x) {
      const Tensor q = x[0].contiguous_data(), k = x[1].contiguous_data(),
                   v = x[2].contiguous_data();
      const int64_t N = q.shape()[0], L = q.shape()[1], d = q.shape()[2];
      const real scale = real(1) / std::sqrt(real(d));
      Tensor y = Tensor::empty(q.shape()), lse = Tensor::empty({N, L});
      kernels::causal_attention_forward(y.data(), lse.data(), q.data(), k.data(), v.data(), scale,
                                        N, L, d);
      return record("causal_attention_scaled_gradient", y, {x[0], x[1], x[2]},
                    [=, y = saved_output(y)](const Tensor& dy_in) {
                      const Tensor dy = dy_in.contiguous_data();
                      Inputs g = {Tensor::empty(q.shape()), Tensor::empty(q.shape()),
                                  Tensor::empty(q.shape())};
                      kernels::causal_attention_backward(g[0].data(), g[1].data(), g[2].data(),
                                                         dy.data(), q.data(), k.data(), v.data(),
                                                         y.data(), lse.data(), scale, N, L, d);
                      g[input].data()[bad] *= factor;
                      return Gradients{g[0], g[1], g[2]};
                    });
    };
  };
  const Inputs inputs = {uniform({3, 9, 7}, -2.0, 2.0, generator()),
                         uniform({3, 9, 7}, -2.0, 2.0, generator()),
                         uniform({3, 9, 7}, -1.0, 1.0, generator())};
  constexpr int64_t kBad = 100;  // head 1, position 5, entry 2 of dk
  const GradcheckResult right = gradcheck(with_scaled_gradient(1, kBad, real(1)), inputs);
  INFO(right.report);
  CHECK(right.passed);
  const GradcheckResult wrong = gradcheck(with_scaled_gradient(1, kBad, real(1.01)), inputs);
  INFO(wrong.report);
  CHECK_FALSE(wrong.passed);
  CHECK(wrong.input == 1);
  CHECK(wrong.element == kBad);
}

}  // namespace test_causal_attention
