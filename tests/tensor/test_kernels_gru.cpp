// tests/tensor/test_kernels_gru.cpp — the xsimd GRU gate kernels against the
// scalar specification, at hidden sizes around the lane width (0, 1, 7, 8, 9,
// 15, 16, 17) and a large one, so full batches, tails and both together run.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tensor/kernels.hpp"
#include "tensor/kernels_gru.hpp"
#include "tensor/random.hpp"

namespace test_kernels_gru {

using namespace attograd;

namespace {

std::vector<real> random_values(int64_t count, double low, double high, Generator& generator) {
  std::vector<real> values(count);
  for (real& v : values) v = static_cast<real>(generator.uniform(low, high));
  return values;
}

// Largest |a − b| / (1 + |b|): the two versions differ only by the rounding
// of exp and tanh, a few units in the last place.
double largest_difference(const std::vector<real>& a, const std::vector<real>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double difference = std::abs(double(a[i]) - double(b[i])) / (1 + std::abs(double(b[i])));
    worst = std::isnan(difference) ? INFINITY : std::max(worst, difference);
  }
  return worst;
}

const double kTolerance = 64 * std::numeric_limits<real>::epsilon();

struct Size {
  int64_t B, H;
};

const Size kSizes[] = {{0, 5},  {3, 0},  {1, 1},  {2, 7},  {1, 8},    {3, 9},
                       {2, 15}, {1, 16}, {2, 17}, {4, 33}, {2, 10000}};

}  // namespace

TEST_CASE("gru_gates_forward: the SIMD kernel matches the scalar specification", "[kernels][gru]") {
  Generator generator(11);
  for (const Size size : kSizes) {
    const int64_t B = size.B, H = size.H;
    INFO("B = " << B << ", H = " << H << " (" << kernels::simd_description() << ")");
    // Pre-activations in ±4 reach both flat ends of σ and tanh.
    const std::vector<real> gi = random_values(B * 3 * H, -4, 4, generator);
    const std::vector<real> gh = random_values(B * 3 * H, -4, 4, generator);
    const std::vector<real> h = random_values(B * H, -1, 1, generator);

    struct Outputs {
      std::vector<real> h_new, r, z, n, gh_n;
      explicit Outputs(int64_t count) : h_new(count), r(count), z(count), n(count), gh_n(count) {}
    };
    Outputs expected(B * H), actual(B * H);
    kernels::scalar::gru_gates_forward(expected.h_new.data(), expected.r.data(), expected.z.data(),
                                       expected.n.data(), expected.gh_n.data(), gi.data(),
                                       gh.data(), h.data(), B, H);
    kernels::gru_gates_forward(actual.h_new.data(), actual.r.data(), actual.z.data(),
                               actual.n.data(), actual.gh_n.data(), gi.data(), gh.data(), h.data(),
                               B, H);
    CHECK(largest_difference(actual.h_new, expected.h_new) <= kTolerance);
    CHECK(largest_difference(actual.r, expected.r) <= kTolerance);
    CHECK(largest_difference(actual.z, expected.z) <= kTolerance);
    CHECK(largest_difference(actual.n, expected.n) <= kTolerance);
    CHECK(actual.gh_n == expected.gh_n);  // a plain copy of the n block of gh
    if (B > 0 && H > 0) {
      // The scalar loop itself, at one element: h' = (1 − z) n + z h.
      const int64_t last = B * H - 1;
      CHECK(expected.h_new[last] ==
            Approx((1 - expected.z[last]) * expected.n[last] + expected.z[last] * h[last]));
      CHECK(expected.gh_n[last] == gh[(B - 1) * 3 * H + 2 * H + (H - 1)]);
    }
  }
}

TEST_CASE("gru_gates_backward: the SIMD kernel matches the scalar specification",
          "[kernels][gru]") {
  Generator generator(12);
  for (const Size size : kSizes) {
    const int64_t B = size.B, H = size.H;
    INFO("B = " << B << ", H = " << H << " (" << kernels::simd_description() << ")");
    // Saved values as a forward pass would leave them: gates in (0,1), n in (−1,1).
    const std::vector<real> r = random_values(B * H, 0.01, 0.99, generator);
    const std::vector<real> z = random_values(B * H, 0.01, 0.99, generator);
    const std::vector<real> n = random_values(B * H, -0.99, 0.99, generator);
    const std::vector<real> gh_n = random_values(B * H, -3, 3, generator);
    const std::vector<real> h = random_values(B * H, -1, 1, generator);
    const std::vector<real> dh_new = random_values(B * H, -1, 1, generator);

    std::vector<real> dgi_expected(B * 3 * H), dgh_expected(B * 3 * H), dh_expected(B * H);
    std::vector<real> dgi_actual(B * 3 * H), dgh_actual(B * 3 * H), dh_actual(B * H);
    kernels::scalar::gru_gates_backward(dgi_expected.data(), dgh_expected.data(),
                                        dh_expected.data(), dh_new.data(), r.data(), z.data(),
                                        n.data(), gh_n.data(), h.data(), B, H);
    kernels::gru_gates_backward(dgi_actual.data(), dgh_actual.data(), dh_actual.data(),
                                dh_new.data(), r.data(), z.data(), n.data(), gh_n.data(), h.data(),
                                B, H);
    CHECK(largest_difference(dgi_actual, dgi_expected) <= kTolerance);
    CHECK(largest_difference(dgh_actual, dgh_expected) <= kTolerance);
    CHECK(largest_difference(dh_actual, dh_expected) <= kTolerance);
    if (B > 0 && H > 0) {
      // The r and z blocks of dgi and dgh are the same numbers; the n blocks
      // differ by the factor r.
      const int64_t j = H - 1, i = (B - 1) * H + j, row = (B - 1) * 3 * H;
      CHECK(dgi_expected[row + j] == dgh_expected[row + j]);
      CHECK(dgi_expected[row + H + j] == dgh_expected[row + H + j]);
      CHECK(dgh_expected[row + 2 * H + j] == Approx(dgi_expected[row + 2 * H + j] * r[i]));
      CHECK(dh_expected[i] == Approx(dh_new[i] * z[i]));
    }
  }
}

}  // namespace test_kernels_gru
