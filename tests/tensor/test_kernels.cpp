// tests/tensor/test_kernels.cpp — every SIMD kernel (kernels::f) against its
// scalar specification (kernels::scalar::f), at sizes 0, 1, 7, 8, 9, 15, 16,
// 17, 49 and 10,000: empty, one lane, just under/at/over one register of 8
// floats or two of 4 doubles, the same around 16, a row of attention pooling's
// 49 keys (6 batches and a tail that overlaps the last), and a long run.
//
// Tolerances. Operations IEEE-754 rounds exactly (+, −, ·, ÷, √, max, neg,
// relu) must agree bit for bit. Transcendentals (exp, log, tanh, …) may differ
// by a few units in the last place: |simd − scalar| ≤ tol·(|scalar| + 1),
// where the +1 covers results near zero (sin near π). Sums and dot products
// are added in a different order, so their tolerance scales with the sum of
// the magnitudes of the terms: tol·Σ|term|. tol is 1e-5 in float (~80 ulp)
// and 1e-12 in double. These tests run in both binaries.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tensor/kernels.hpp"
#include "tensor/kernels_unary.hpp"
#include "tensor/random.hpp"

namespace test_kernels {

using namespace attograd;
namespace k = attograd::kernels;

namespace {

constexpr double kTolerance = sizeof(real) == 4 ? 1e-5 : 1e-12;
const std::vector<int64_t> kSizes = {0, 1, 7, 8, 9, 15, 16, 17, 49, 10000};
// Every size up to two registers of 16 floats and one past (so every remainder
// n mod W and every short row for any W ≤ 16), then 49 and 10,000.
const std::vector<int64_t> kEverySize = [] {
  std::vector<int64_t> sizes;
  for (int64_t n = 0; n <= 33; ++n) sizes.push_back(n);
  sizes.push_back(49);
  sizes.push_back(10000);
  return sizes;
}();

using Values = std::vector<real>;

Values draw(int64_t n, double low, double high, Generator& generator) {
  Values v(n);
  for (real& x : v) x = static_cast<real>(generator.uniform(low, high));
  return v;
}

// Compares every element; on failure names the worst one.
template <typename Allowed>
void check_close(const std::string& what, const Values& simd, const Values& reference,
                 Allowed allowed) {
  REQUIRE(simd.size() == reference.size());
  int64_t failures = 0, worst = -1;
  double worst_excess = 0;
  for (size_t i = 0; i < simd.size(); ++i) {
    // Equal values (including equal infinities) differ by 0, not by ∞ − ∞.
    const double difference =
        simd[i] == reference[i] ? 0.0 : std::abs(double(simd[i]) - double(reference[i]));
    const double limit = allowed(i);
    if (!(difference <= limit)) {  // also catches NaN
      ++failures;
      const double excess = std::isnan(difference) ? INFINITY : difference - limit;
      if (worst < 0 || excess > worst_excess) {
        worst = static_cast<int64_t>(i);
        worst_excess = excess;
      }
    }
  }
  INFO(what << ": " << failures << " of " << simd.size() << " elements differ"
            << (worst >= 0 ? fmt::format("; worst at {}: simd {} vs scalar {} (allowed {})", worst,
                                         simd[worst], reference[worst], allowed(worst))
                           : std::string()));
  CHECK(failures == 0);
}

void check_equal(const std::string& what, const Values& simd, const Values& reference) {
  check_close(what, simd, reference, [](size_t) { return 0.0; });
}

const char* name_of(k::Binary op) {
  switch (op) {
    case k::Binary::add:
      return "add";
    case k::Binary::sub:
      return "sub";
    case k::Binary::mul:
      return "mul";
    case k::Binary::div:
      return "div";
  }
  return "?";
}

}  // namespace

TEST_CASE("the SIMD kernels describe their lane width", "[kernels]") {
  const std::string description = k::simd_description();
  CHECK_FALSE(description.empty());
  CHECK(description.find(sizeof(real) == 4 ? "float" : "double") != std::string::npos);
}

// Every entry of tensor/kernels_unary.hpp at every size of kEverySize: the
// entry's flags say which inputs it takes and where it must agree bit for bit.
TEST_CASE("unary kernels: SIMD equals scalar, forward and backward", "[kernels]") {
  Generator generator(1);
  k::for_each_unary([&](auto c) {
    constexpr k::Unary op = decltype(c)::value;
    using Kernel = k::UnaryKernel<op>;
    for (int64_t n : kEverySize) {
      const std::string what = fmt::format("{} n={}", Kernel::name, n);
      const Values x =
          Kernel::positive_inputs_only ? draw(n, 0.05, 5, generator) : draw(n, -5, 5, generator);
      Values y_simd(n), y_scalar(n);
      k::unary_forward(op, y_simd.data(), x.data(), n);
      k::scalar::unary_forward(op, y_scalar.data(), x.data(), n);
      if (Kernel::forward_rounds_exactly) {
        check_equal(what + " forward", y_simd, y_scalar);
      } else {
        check_close(what + " forward", y_simd, y_scalar,
                    [&](size_t i) { return kTolerance * (std::abs(y_scalar[i]) + 1); });
      }

      const Values dy = draw(n, -2, 2, generator);
      Values dx_simd(n), dx_scalar(n);
      k::unary_backward(op, dx_simd.data(), dy.data(), x.data(), y_scalar.data(), n);
      k::scalar::unary_backward(op, dx_scalar.data(), dy.data(), x.data(), y_scalar.data(), n);
      if (Kernel::backward_rounds_exactly) {
        check_equal(what + " backward", dx_simd, dx_scalar);
      } else {
        check_close(what + " backward", dx_simd, dx_scalar, [&](size_t i) {
          return kTolerance * (std::abs(dx_scalar[i]) + std::abs(dy[i]));
        });
      }
    }
  });
}

// softplus's stable form: no overflow where e^x does, ln 2 at 0, and the
// textbook ln(1 + eˣ) where that is exact enough. The slope σ(x) saturates
// to 0 and 1.
TEST_CASE("softplus stays finite where ln(1 + eˣ) overflows", "[kernels]") {
  const Values x = {-1000, -30, -1, 0, 1, 30, 1000};
  for (bool simd : {true, false}) {
    INFO((simd ? "SIMD" : "scalar"));
    Values y(x.size()), dx(x.size());
    const Values dy(x.size(), real(1));
    const auto forward = simd ? k::unary_forward : k::scalar::unary_forward;
    const auto backward = simd ? k::unary_backward : k::scalar::unary_backward;
    forward(k::Unary::softplus, y.data(), x.data(), int64_t(x.size()));
    backward(k::Unary::softplus, dx.data(), dy.data(), x.data(), y.data(), int64_t(x.size()));
    CHECK(y[0] == 0);
    CHECK(y[6] == 1000);
    CHECK(dx[0] == 0);
    CHECK(dx[6] == 1);
    CHECK(y[3] == Approx(std::log(2.0)).epsilon(kTolerance));
    for (size_t i : {size_t(1), size_t(2), size_t(4), size_t(5)}) {
      CHECK(y[i] == Approx(std::log1p(std::exp(double(x[i])))).epsilon(kTolerance));
      CHECK(dx[i] == Approx(1 / (1 + std::exp(-double(x[i])))).epsilon(kTolerance));
    }
  }
}

TEST_CASE("pow kernels: SIMD equals scalar", "[kernels]") {
  Generator generator(2);
  for (real p : {real(2), real(3), real(0.5), real(-1.5)}) {
    for (int64_t n : kSizes) {
      const std::string what = fmt::format("pow p={} n={}", p, n);
      const Values x = draw(n, 0.1, 3, generator);
      Values y_simd(n), y_scalar(n);
      k::pow_forward(y_simd.data(), x.data(), p, n);
      k::scalar::pow_forward(y_scalar.data(), x.data(), p, n);
      check_close(what + " forward", y_simd, y_scalar,
                  [&](size_t i) { return kTolerance * (std::abs(y_scalar[i]) + 1); });
      const Values dy = draw(n, -2, 2, generator);
      Values dx_simd(n), dx_scalar(n);
      k::pow_backward(dx_simd.data(), dy.data(), x.data(), p, n);
      k::scalar::pow_backward(dx_scalar.data(), dy.data(), x.data(), p, n);
      check_close(what + " backward", dx_simd, dx_scalar,
                  [&](size_t i) { return kTolerance * (std::abs(dx_scalar[i]) + 1); });
    }
  }
}

TEST_CASE("binary kernels: SIMD equals scalar for every step pattern", "[kernels]") {
  Generator generator(3);
  struct Steps {
    int64_t a, b;
  };
  for (k::Binary op : {k::Binary::add, k::Binary::sub, k::Binary::mul, k::Binary::div}) {
    for (Steps steps : {Steps{1, 1}, Steps{1, 0}, Steps{0, 1}}) {
      for (int64_t n : kSizes) {
        // A step-0 operand is one value (at least one element even when n = 0).
        const Values a = draw(steps.a == 0 ? 1 : n, -3, 3, generator);
        const Values b = draw(steps.b == 0 ? 1 : n, 0.5, 3, generator);  // ÷ away from 0
        Values out_simd(n), out_scalar(n);
        k::binary_forward(op, out_simd.data(), a.data(), steps.a, b.data(), steps.b, n);
        k::scalar::binary_forward(op, out_scalar.data(), a.data(), steps.a, b.data(), steps.b, n);
        check_equal(fmt::format("{} steps ({},{}) n={}", name_of(op), steps.a, steps.b, n),
                    out_simd, out_scalar);
      }
    }
  }
}

TEST_CASE("binary_rows_forward: SIMD equals scalar, either operand a repeated row", "[kernels]") {
  Generator generator(13);
  for (k::Binary op : {k::Binary::add, k::Binary::sub, k::Binary::mul, k::Binary::div}) {
    for (const bool a_repeated : {false, true}) {
      for (int64_t rows : {1, 3}) {
        for (int64_t n : kSizes) {
          const Values a = draw((a_repeated ? 1 : rows) * n, -3, 3, generator);
          const Values b = draw((a_repeated ? rows : 1) * n, 0.5, 3, generator);
          Values out_simd(rows * n), out_scalar(rows * n);
          const int64_t a_step = a_repeated ? 0 : n, b_step = a_repeated ? n : 0;
          k::binary_rows_forward(op, out_simd.data(), a.data(), a_step, b.data(), b_step, rows, n);
          k::scalar::binary_rows_forward(op, out_scalar.data(), a.data(), a_step, b.data(), b_step,
                                         rows, n);
          check_equal(
              fmt::format("{} rows {} n={} a repeated {}", name_of(op), rows, n, a_repeated),
              out_simd, out_scalar);
        }
      }
    }
  }
}

TEST_CASE("accumulate: SIMD equals scalar", "[kernels]") {
  Generator generator(4);
  for (int64_t n : kSizes) {
    const Values x = draw(n, -3, 3, generator);
    Values out_simd = draw(n, -3, 3, generator);
    Values out_scalar = out_simd;
    k::accumulate(out_simd.data(), x.data(), n);
    k::scalar::accumulate(out_scalar.data(), x.data(), n);
    check_equal(fmt::format("accumulate n={}", n), out_simd, out_scalar);
  }
}

TEST_CASE("sum_axis and max_axis: SIMD equals scalar", "[kernels]") {
  Generator generator(5);
  struct Split {
    int64_t outer, inner;
  };
  for (int64_t n : kSizes) {
    for (Split split : {Split{3, 1}, Split{1, 1}, Split{2, 5}, Split{1, 17}, Split{2, 8},
                        Split{1, 9}, Split{2, 49}}) {
      const int64_t outer = split.outer, inner = split.inner;
      const std::string what = fmt::format("(outer {}, n {}, inner {})", outer, n, inner);
      const Values x = draw(outer * n * inner, -2, 2, generator);

      Values sum_simd(outer * inner), sum_scalar(outer * inner);
      k::sum_axis_forward(sum_simd.data(), x.data(), outer, n, inner);
      k::scalar::sum_axis_forward(sum_scalar.data(), x.data(), outer, n, inner);
      check_close("sum_axis " + what, sum_simd, sum_scalar, [&](size_t i) {
        const int64_t o = static_cast<int64_t>(i) / inner, j = static_cast<int64_t>(i) % inner;
        double magnitude = 0;
        for (int64_t m = 0; m < n; ++m) magnitude += std::abs(x[(o * n + m) * inner + j]);
        return kTolerance * magnitude;
      });

      Values max_simd(outer * inner), max_scalar(outer * inner);
      std::vector<int64_t> argmax_simd(outer * inner, -1), argmax_scalar(outer * inner, -2);
      k::max_axis_forward(max_simd.data(), argmax_simd.data(), x.data(), outer, n, inner);
      k::scalar::max_axis_forward(max_scalar.data(), argmax_scalar.data(), x.data(), outer, n,
                                  inner);
      check_equal("max_axis " + what, max_simd, max_scalar);
      INFO("argmax " << what);
      CHECK(argmax_simd == argmax_scalar);
    }
  }
}

TEST_CASE("column_dots: SIMD equals scalar, and the scalar sums each column's products",
          "[kernels]") {
  // a = [[1, 2], [3, 4], [5, 6]], b = [[1, -1], [2, 0.5], [-1, 1]]:
  // column 0: 1 + 6 − 5 = 2; column 1: −2 + 2 + 6 = 6.
  const Values a = {1, 2, 3, 4, 5, 6}, b = {1, -1, 2, 0.5, -1, 1};
  Values by_hand(2, -7);
  k::scalar::column_dots(by_hand.data(), a.data(), b.data(), 3, 2);
  check_equal("column_dots by hand", by_hand, Values{2, 6});

  Generator generator(12);
  for (int64_t rows : kSizes) {
    // cols 1 is one dot product; the others fall short of, meet and pass one
    // register of 8 or 16 floats (4 or 8 doubles).
    for (int64_t cols : {1, 3, 4, 5, 8, 9, 16, 17, 49}) {
      if (rows * cols > 100000) continue;
      const Values x = draw(rows * cols, -2, 2, generator);
      const Values y = draw(rows * cols, -2, 2, generator);
      Values simd(cols, -7), scalar(cols, -9);
      k::column_dots(simd.data(), x.data(), y.data(), rows, cols);
      k::scalar::column_dots(scalar.data(), x.data(), y.data(), rows, cols);
      check_close(fmt::format("column_dots rows {} cols {}", rows, cols), simd, scalar,
                  [&](size_t j) {
                    double magnitude = 0;
                    for (int64_t r = 0; r < rows; ++r) {
                      magnitude += std::abs(double(x[r * cols + j]) * y[r * cols + j]);
                    }
                    return kTolerance * magnitude;
                  });
    }
  }
}

TEST_CASE("max_axis picks the first of tied maxima in both versions", "[kernels]") {
  // Row 0 ties at 1 and 3; row 1 is constant; row 2 peaks in the tail lane.
  const Values x = {0, 5, 1, 5, 2, 2, 2, 2, 2, 2, -1, -1, -1, -1, 4};
  for (bool simd : {true, false}) {
    Values out(3);
    std::vector<int64_t> argmax(3);
    (simd ? k::max_axis_forward : k::scalar::max_axis_forward)(out.data(), argmax.data(), x.data(),
                                                               3, 5, 1);
    CHECK(out == Values{5, 2, 4});
    CHECK(argmax == std::vector<int64_t>{1, 0, 4});
  }
}

TEST_CASE("exp_nonpositive: SIMD equals scalar, within 1 ulp of std::exp", "[kernels]") {
  Generator generator(9);
  for (int64_t n : kSizes) {
    const Values x = draw(n, -100, 0, generator);
    Values out_simd(n), out_scalar(n);
    k::exp_nonpositive(out_simd.data(), x.data(), n);
    k::scalar::exp_nonpositive(out_scalar.data(), x.data(), n);
    check_close(fmt::format("exp_nonpositive n={}", n), out_simd, out_scalar,
                [&](size_t i) { return kTolerance * std::abs(double(out_scalar[i])); });
  }

  // A dense sweep of [−110, 0]: 2^22 + 1 evenly spaced points (every float
  // step of 2.6e-5), then 0, −0, tiny arguments and −∞. Where e^x is a normal
  // number the SIMD exp is within 1 ulp of std::exp (2 in double, xsimd::exp's);
  // below that it is 0 or within the smallest normal number of e^x, never NaN.
  constexpr int64_t kSteps = int64_t(1) << 22;
  Values x(kSteps + 1);
  for (int64_t i = 0; i <= kSteps; ++i) x[i] = static_cast<real>(-110.0 * double(i) / kSteps);
  const real infinity = std::numeric_limits<real>::infinity();
  for (real v : {real(0), real(-0.0), real(-1e-30), real(-1e-7), real(-0.5), -infinity}) {
    x.push_back(v);
  }
  Values out(x.size());
  k::exp_nonpositive(out.data(), x.data(), static_cast<int64_t>(x.size()));
  const double max_ulp = sizeof(real) == 4 ? 1 : 2;
  const real smallest_normal = std::numeric_limits<real>::min();
  int64_t failures = 0, worst = -1;
  double worst_ulp = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const real expected = std::exp(x[i]);
    bool ok;
    if (expected >= smallest_normal) {
      const double ulp = double(std::nextafter(expected, infinity) - expected);
      const double ulps = std::abs(double(out[i]) - double(expected)) / ulp;
      ok = ulps <= max_ulp;
      if (ulps > worst_ulp || !ok) worst_ulp = std::isnan(ulps) ? INFINITY : ulps;
    } else {
      ok = out[i] >= 0 && out[i] <= smallest_normal;  // false for NaN
    }
    if (!ok) {
      ++failures;
      worst = static_cast<int64_t>(i);
    }
  }
  INFO("largest error " << worst_ulp << " ulp; " << failures << " failures"
                        << (worst >= 0 ? fmt::format(", e.g. exp({}) = {} vs std::exp {}", x[worst],
                                                     out[worst], std::exp(x[worst]))
                                       : std::string()));
  CHECK(failures == 0);
  CHECK(out[kSteps + 1] == 1);  // e^0
  CHECK(out[kSteps + 2] == 1);  // e^−0
  CHECK(out.back() == 0);       // e^−∞

  const Values not_a_number = {std::numeric_limits<real>::quiet_NaN()};
  Values result(1);
  k::exp_nonpositive(result.data(), not_a_number.data(), 1);
  CHECK(std::isnan(result[0]));
}

TEST_CASE("softmax and log_softmax kernels: SIMD equals scalar", "[kernels]") {
  Generator generator(6);
  struct Rows {
    int64_t rows, cols;
  };
  std::vector<Rows> cases;
  for (int64_t n : kSizes) cases.push_back({3, n});
  cases.push_back({1000, 7});
  cases.push_back({17, 9});
  cases.push_back({50, 49});  // attention pooling: 50 queries over 49 keys
  // Rows either side of the kernels' switch from short rows (one e^x pass
  // over a group of rows) to long rows (e^x and Σ per row) at 4W values, W
  // being 8 or 16 floats; long rows grouped to fit L1 (1000 floats: several
  // groups); an output layer's row.
  for (int64_t cols : {31, 32, 33, 63, 64, 65}) cases.push_back({5, cols});
  cases.push_back({13, 1000});
  cases.push_back({2, 2297});
  for (Rows c : cases) {
    const int64_t count = c.rows * c.cols;
    const std::string what = fmt::format("({} rows, {} cols)", c.rows, c.cols);
    const Values x = draw(count, -6, 6, generator);
    const Values dy = draw(count, -2, 2, generator);
    // Σ_j |a_j b_j| over each row (b empty: Σ_j |a_j|), the scale of a row's
    // dot product; element i's row is i / cols.
    auto row_magnitudes = [&](const Values& a, const Values& b) {
      std::vector<double> totals(static_cast<size_t>(c.rows), 0.0);
      for (int64_t j = 0; j < count; ++j) {
        totals[j / c.cols] += std::abs(double(a[j]) * (b.empty() ? 1.0 : double(b[j])));
      }
      return totals;
    };

    Values y_simd(count), y(count);
    k::softmax_forward(y_simd.data(), x.data(), c.rows, c.cols);
    k::scalar::softmax_forward(y.data(), x.data(), c.rows, c.cols);
    check_close("softmax forward " + what, y_simd, y,
                [&](size_t i) { return kTolerance * std::abs(y[i]); });

    Values dx_simd(count), dx(count);
    k::softmax_backward(dx_simd.data(), y.data(), dy.data(), c.rows, c.cols);
    k::scalar::softmax_backward(dx.data(), y.data(), dy.data(), c.rows, c.cols);
    const std::vector<double> dy_y_magnitude = row_magnitudes(dy, y);
    check_close("softmax backward " + what, dx_simd, dx, [&](size_t i) {
      return kTolerance * (std::abs(dx[i]) + std::abs(y[i]) * dy_y_magnitude[i / c.cols]);
    });

    Values log_y_simd(count), log_y(count);
    k::log_softmax_forward(log_y_simd.data(), x.data(), c.rows, c.cols);
    k::scalar::log_softmax_forward(log_y.data(), x.data(), c.rows, c.cols);
    check_close("log_softmax forward " + what, log_y_simd, log_y,
                [&](size_t i) { return kTolerance * (std::abs(log_y[i]) + 1); });

    Values log_dx_simd(count), log_dx(count);
    k::log_softmax_backward(log_dx_simd.data(), log_y.data(), dy.data(), c.rows, c.cols);
    k::scalar::log_softmax_backward(log_dx.data(), log_y.data(), dy.data(), c.rows, c.cols);
    const std::vector<double> dy_magnitude = row_magnitudes(dy, {});
    check_close("log_softmax backward " + what, log_dx_simd, log_dx, [&](size_t i) {
      return kTolerance * (std::abs(dy[i]) + std::exp(double(log_y[i])) * dy_magnitude[i / c.cols]);
    });
  }
}

TEST_CASE("attention pooling kernels: SIMD equals scalar", "[kernels]") {
  Generator generator(16);
  // Differences below the smallest normal number are the SIMD kernels'
  // flushed subnormals.
  constexpr double kSmallest = std::numeric_limits<real>::min();
  struct Case {
    int64_t B, Tq, Tk, dv;
  };
  std::vector<Case> cases;
  // Every size for the keys, with scalar values (the register rows, up to 4W
  // keys, then the softmax kernel and a dot product) and with values of 5 and
  // 17 numbers (row by row, dot products and axpys over dv, with their tails).
  for (int64_t Tk : kSizes) {
    for (int64_t dv : {1, 5, 17}) cases.push_back({2, 3, Tk, dv});
  }
  // Either side of the register rows' limit at 4W keys, W being 8 or 16
  // floats, and of each batch count within it; Nadaraya–Watson's 50 × 49;
  // row counts that end the R-at-a-time rows with 1, 2 or 3 left; empty
  // batches and values.
  for (int64_t Tk : {23, 24, 25, 31, 32, 33, 47, 48, 63, 64, 65}) cases.push_back({3, 1, Tk, 1});
  cases.push_back({50, 1, 49, 1});
  cases.push_back({7, 1, 15, 1});
  cases.push_back({1, 5, 9, 1});
  cases.push_back({0, 2, 5, 1});
  cases.push_back({2, 0, 5, 1});
  cases.push_back({2, 2, 5, 0});
  // Scores scaled down to −120: weights below the smallest normal number,
  // which the SIMD kernels flush to 0 (kernels_simd.hpp, FlushSubnormals).
  cases.push_back({50, 1, 49, 1});
  const size_t subnormal_case = cases.size() - 1;
  for (size_t case_index = 0; case_index < cases.size(); ++case_index) {
    const Case c = cases[case_index];
    const bool deep = case_index == subnormal_case;
    // No scale, one factor for every score (negative: the padding past a
    // row's end must stay −∞ after scaling), one factor per key.
    for (const int64_t scale_count : {int64_t(0), int64_t(1), c.Tk}) {
      const std::string what = fmt::format("(B {}, Tq {}, Tk {}, dv {}, {} scale factors)", c.B,
                                           c.Tq, c.Tk, c.dv, scale_count);
      const int64_t rows = c.B * c.Tq;
      const Values scores = draw(rows * c.Tk, -6, deep ? 0 : 6, generator);
      const Values values = draw(c.B * c.Tk * c.dv, -2, 2, generator);
      const Values dout = draw(rows * c.dv, -2, 2, generator);
      const Values scale =
          scale_count == 1 ? Values{real(-0.7)} : draw(scale_count, -1.5, 1.5, generator);
      auto factor = [&](int64_t k) {
        return scale_count == 0 ? 1.0 : double(scale[scale_count == 1 ? 0 : size_t(k)]);
      };

      Values out_simd(rows * c.dv), out(rows * c.dv);
      Values weights_simd(rows * c.Tk), weights(rows * c.Tk);
      k::attention_pool_forward(out_simd.data(), weights_simd.data(), scores.data(), scale.data(),
                                scale_count, values.data(), c.B, c.Tq, c.Tk, c.dv);
      k::scalar::attention_pool_forward(out.data(), weights.data(), scores.data(), scale.data(),
                                        scale_count, values.data(), c.B, c.Tq, c.Tk, c.dv);
      // A row's Σ e^z, summed in another order: its rounding grows with Tk.
      check_close("attention_pool weights " + what, weights_simd, weights, [&](size_t i) {
        return kTolerance * std::abs(weights[i]) * (1 + double(c.Tk) / 1000) + kSmallest;
      });
      // Σ_k |α_k v_k[d]|: the scale of output element i's sum.
      auto pooled_magnitude = [&](size_t i) {
        const int64_t row = static_cast<int64_t>(i) / c.dv, d = static_cast<int64_t>(i) % c.dv;
        const int64_t b = row / c.Tq;
        double total = 0;
        for (int64_t key = 0; key < c.Tk; ++key) {
          total += std::abs(double(weights[row * c.Tk + key]) *
                            double(values[(b * c.Tk + key) * c.dv + d]));
        }
        return total;
      };
      check_close("attention_pool out " + what, out_simd, out, [&](size_t i) {
        return kTolerance * (std::abs(out[i]) + pooled_magnitude(i)) + kSmallest;
      });

      // dz_k = α_k (g·v_k − g·out): its terms' scale is α_k Σ_d |g_d| (|v_kd| + |out_d|).
      auto dz_magnitude = [&](int64_t row, int64_t key) {
        const int64_t b = row / c.Tq;
        double total = 0;
        for (int64_t d = 0; d < c.dv; ++d) {
          total += std::abs(double(dout[row * c.dv + d])) *
                   (std::abs(double(values[(b * c.Tk + key) * c.dv + d])) +
                    std::abs(double(out[row * c.dv + d])));
        }
        return std::abs(double(weights[row * c.Tk + key])) * total;
      };
      // dscale = Σ over rows (and keys, for one factor) of dz ⊙ scores: the
      // scale of factor f's sum, over the same terms in the same order.
      std::vector<double> dscale_magnitude(scale.size(), 0.0);
      for (int64_t row = 0; row < rows && scale_count > 0; ++row) {
        for (int64_t key = 0; key < c.Tk; ++key) {
          const double term = dz_magnitude(row, key) * std::abs(double(scores[row * c.Tk + key]));
          dscale_magnitude[scale_count == 1 ? 0 : size_t(key)] += term;
        }
      }
      // Every combination of the three gradients asked for (bits: scores,
      // scale, values); one not asked for is not written.
      for (int wanted = 0; wanted < 8; ++wanted) {
        const bool want_scores = (wanted & 4) != 0;
        const bool want_scale = (wanted & 2) != 0 && scale_count > 0;
        const bool want_values = (wanted & 1) != 0;
        const std::string asked = fmt::format("{} gradients {}{}{}", what, want_scores ? "s" : "-",
                                              want_scale ? "c" : "-", want_values ? "v" : "-");
        const real untouched = 7;
        Values dscores_simd(rows * c.Tk, untouched), dscores(rows * c.Tk, untouched);
        Values dvalues_simd(values.size(), untouched), dvalues(values.size(), untouched);
        Values dscale_simd(scale.size(), untouched), dscale(scale.size(), untouched);
        k::attention_pool_backward(
            want_scores ? dscores_simd.data() : nullptr, want_scale ? dscale_simd.data() : nullptr,
            want_values ? dvalues_simd.data() : nullptr, dout.data(), weights.data(), scores.data(),
            scale.data(), scale_count, values.data(), out.data(), c.B, c.Tq, c.Tk, c.dv);
        k::scalar::attention_pool_backward(
            want_scores ? dscores.data() : nullptr, want_scale ? dscale.data() : nullptr,
            want_values ? dvalues.data() : nullptr, dout.data(), weights.data(), scores.data(),
            scale.data(), scale_count, values.data(), out.data(), c.B, c.Tq, c.Tk, c.dv);
        // Not asked for: the 7s stay (in the scalar loop's arrays as well).
        if (!want_scores) CHECK(dscores_simd == Values(dscores_simd.size(), untouched));
        if (!want_scale) CHECK(dscale_simd == Values(dscale_simd.size(), untouched));
        if (!want_values) CHECK(dvalues_simd == Values(dvalues_simd.size(), untouched));
        check_close("attention_pool dscale " + asked, dscale_simd, dscale, [&](size_t i) {
          return kTolerance * (std::abs(dscale[i]) + dscale_magnitude[i]) + kSmallest;
        });
        check_close("attention_pool dscores " + asked, dscores_simd, dscores, [&](size_t i) {
          const int64_t row = static_cast<int64_t>(i) / c.Tk, key = static_cast<int64_t>(i) % c.Tk;
          return kTolerance *
                     (std::abs(dscores[i]) + dz_magnitude(row, key) * std::abs(factor(key))) +
                 kSmallest;
        });
        // dvalues[b][k][d] = Σ_q α_qk g_qd: Tq products.
        check_close("attention_pool dvalues " + asked, dvalues_simd, dvalues, [&](size_t i) {
          return kTolerance * (std::abs(dvalues[i]) + double(c.Tq) * 2) + kSmallest;
        });
      }
    }
  }
}

TEST_CASE("attention pooling kernels: the subnormal mode is restored after them", "[kernels]") {
  const real scores[3] = {0, -1, -2}, values[3] = {1, 2, 3};
  real out[1], weights[3], dscores[3];
  const real dout[1] = {1};
  k::attention_pool_forward(out, weights, scores, nullptr, 0, values, 1, 1, 3, 1);
  k::attention_pool_backward(dscores, nullptr, nullptr, dout, weights, scores, nullptr, 0, values,
                             out, 1, 1, 3, 1);
  volatile real tiny = std::numeric_limits<real>::min();
  volatile real half = 0.5;
  CHECK(tiny * half > 0);  // still a subnormal, not flushed to 0
}

TEST_CASE("matmul kernels: SIMD equals scalar in all four layouts", "[kernels]") {
  Generator generator(7);
  using k::Layout;
  struct Sizes {
    int64_t M, K, N;
  };
  std::vector<Sizes> cases;
  const std::vector<int64_t> small = {0, 1, 7, 8, 9, 15, 16, 17};
  for (int64_t M : small) {
    for (int64_t K : small) {
      for (int64_t N : small) cases.push_back({M, K, N});
    }
  }
  // Long products: K past the GEMM's K block, and a 10,000-long side.
  for (Sizes s : {Sizes{1, 10000, 17}, Sizes{17, 10000, 1}, Sizes{2, 17, 10000}, Sizes{10000, 7, 9},
                  Sizes{9, 600, 40}, Sizes{33, 257, 31}}) {
    cases.push_back(s);
  }
  for (Layout a_layout : {Layout::normal, Layout::transposed}) {
    for (Layout b_layout : {Layout::normal, Layout::transposed}) {
      for (Sizes s : cases) {
        const Values a = draw(s.M * s.K, -1, 1, generator);
        const Values b = draw(s.K * s.N, -1, 1, generator);
        Values c_simd(s.M * s.N, real(99)), c_scalar(s.M * s.N, real(-99));
        k::matmul_forward(c_simd.data(), a.data(), a_layout, b.data(), b_layout, s.M, s.K, s.N);
        k::scalar::matmul_forward(c_scalar.data(), a.data(), a_layout, b.data(), b_layout, s.M, s.K,
                                  s.N);
        auto a_at = [&](int64_t i, int64_t kk) {
          return a_layout == Layout::normal ? a[i * s.K + kk] : a[kk * s.M + i];
        };
        auto b_at = [&](int64_t kk, int64_t j) {
          return b_layout == Layout::normal ? b[kk * s.N + j] : b[j * s.K + kk];
        };
        check_close(fmt::format("matmul {}{} ({},{},{})", a_layout == Layout::normal ? "N" : "T",
                                b_layout == Layout::normal ? "N" : "T", s.M, s.K, s.N),
                    c_simd, c_scalar, [&](size_t index) {
                      const int64_t i = static_cast<int64_t>(index) / s.N;
                      const int64_t j = static_cast<int64_t>(index) % s.N;
                      double magnitude = 0;
                      for (int64_t kk = 0; kk < s.K; ++kk) {
                        magnitude += std::abs(double(a_at(i, kk)) * double(b_at(kk, j)));
                      }
                      return kTolerance * magnitude;
                    });
      }
    }
  }
}

TEST_CASE("add_scaled_product_tn: SIMD equals scalar, and adds exactly what matmul sums",
          "[kernels]") {
  Generator generator(11);
  using k::Layout;
  struct Sizes {
    int64_t M, K, N;
  };
  std::vector<Sizes> cases;
  const std::vector<int64_t> small = {0, 1, 7, 8, 9, 17};
  for (int64_t M : small) {
    for (int64_t K : small) {
      for (int64_t N : small) cases.push_back({M, K, N});
    }
  }
  // Past the GEMM's K block, and long sides.
  for (Sizes s : {Sizes{33, 257, 31}, Sizes{9, 600, 40}, Sizes{10000, 7, 9}, Sizes{2, 17, 10000}}) {
    cases.push_back(s);
  }
  const real alpha = real(-0.37);
  for (Sizes s : cases) {
    const std::string name = fmt::format("add_scaled_product_tn ({},{},{})", s.M, s.K, s.N);
    const Values a = draw(s.K * s.M, -1, 1, generator);  // (K,M), read as aᵀ
    const Values b = draw(s.K * s.N, -1, 1, generator);
    const Values c0 = draw(s.M * s.N, -2, 2, generator);
    Values c_simd = c0, c_scalar = c0;
    k::add_scaled_product_tn(c_simd.data(), alpha, a.data(), b.data(), s.M, s.K, s.N);
    k::scalar::add_scaled_product_tn(c_scalar.data(), alpha, a.data(), b.data(), s.M, s.K, s.N);
    check_close(name, c_simd, c_scalar, [&](size_t index) {
      const int64_t i = static_cast<int64_t>(index) / s.N;
      const int64_t j = static_cast<int64_t>(index) % s.N;
      double magnitude = std::abs(double(c0[index]));
      for (int64_t kk = 0; kk < s.K; ++kk) {
        magnitude += std::abs(double(alpha) * a[kk * s.M + i] * b[kk * s.N + j]);
      }
      return kTolerance * magnitude;
    });
    // The SGD step it stands for, made in two passes: the product formed by
    // matmul_forward, then c = c + α·t with one rounding. The same bits.
    Values product(s.M * s.N);
    k::matmul_forward(product.data(), a.data(), Layout::transposed, b.data(), Layout::normal, s.M,
                      s.K, s.N);
    Values two_passes = c0;
    for (size_t i = 0; i < two_passes.size(); ++i) {
      two_passes[i] = std::fma(alpha, product[i], two_passes[i]);
    }
    INFO(name);
    CHECK(c_simd == two_passes);
  }
}

TEST_CASE("dropout_mask: SIMD equals scalar bit for bit", "[kernels][dropout]") {
  for (const uint64_t seed : {uint64_t{0}, uint64_t{1}, uint64_t{0x0123456789ABCDEF}}) {
    for (const uint32_t drop_below : {0u, 1u, 429496730u, 2147483648u, 4294967295u}) {
      for (const int64_t n : kSizes) {
        INFO("seed " << seed << ", drop below " << drop_below << ", n = " << n);
        Values simd(static_cast<size_t>(n) + 1, real(99)),
            plain(static_cast<size_t>(n) + 1, real(99));
        k::dropout_mask(simd.data(), n, drop_below, real(1.25), seed);
        k::scalar::dropout_mask(plain.data(), n, drop_below, real(1.25), seed);
        CHECK(simd == plain);  // the element past n untouched in both
      }
    }
  }
}

TEST_CASE("dropout_mask drops with probability p, independently, and differs by seed",
          "[kernels][dropout]") {
  constexpr int64_t n = 1'000'000;
  Values mask(n);
  for (const double p : {0.1, 0.5, 0.9}) {
    const auto drop_below = static_cast<uint32_t>(p * 0x1.0p32);
    k::dropout_mask(mask.data(), n, drop_below, real(2), 12345);
    int64_t dropped = 0, both = 0;
    for (int64_t i = 0; i < n; ++i) {
      dropped += mask[i] == 0;
      if (i + 1 < n) both += mask[i] == 0 && mask[i + 1] == 0;
    }
    INFO("p = " << p);
    // 5 standard deviations of a binomial count; neighbours drop together
    // with probability p².
    const double spread = 5 * std::sqrt(n * p * (1 - p));
    CHECK(std::abs(double(dropped) - n * p) < spread);
    CHECK(std::abs(double(both) - (n - 1) * p * p) < 5 * std::sqrt(n * p * p * (1 - p * p)));
    CHECK(std::count(mask.begin(), mask.end(), real(2)) == n - dropped);  // the rest keep 1/(1 − p)
  }
  Values other(n);
  k::dropout_mask(mask.data(), n, 1u << 31, real(2), 1);
  k::dropout_mask(other.data(), n, 1u << 31, real(2), 2);
  int64_t same = 0;
  for (int64_t i = 0; i < n; ++i) same += mask[i] == other[i];
  CHECK(std::abs(double(same) - n / 2.0) <
        5 * std::sqrt(n / 4.0));  // unrelated masks agree half the time
}

TEST_CASE("adam_step: SIMD equals scalar bit for bit, over several steps", "[kernels][optim]") {
  Generator generator(11);
  const k::AdamStep plain{.step_size = real(0.01 / (1 - 0.9)),
                          .sqrt_correction2 = real(std::sqrt(1 - 0.999)),
                          .beta2 = real(0.999),
                          .one_minus_beta1 = real(0.1),
                          .one_minus_beta2 = real(0.001),
                          .eps = real(1e-8),
                          .weight_decay = real(0)};
  k::AdamStep decayed = plain;
  decayed.weight_decay = real(0.05);
  for (const k::AdamStep& step : {plain, decayed}) {
    for (const int64_t n : kSizes) {
      INFO("n = " << n << ", weight decay " << step.weight_decay);
      // One element past n in every array, which neither version may touch.
      Values p = draw(n + 1, -2, 2, generator), m = draw(n + 1, -0.1, 0.1, generator);
      Values v = draw(n + 1, 0, 0.01, generator);
      Values p_plain = p, m_plain = m, v_plain = v;
      for (int t = 0; t < 3; ++t) {
        const Values g = draw(n + 1, -1, 1, generator);
        k::adam_step(p.data(), m.data(), v.data(), g.data(), n, step);
        k::scalar::adam_step(p_plain.data(), m_plain.data(), v_plain.data(), g.data(), n, step);
      }
      check_equal("p", p, p_plain);
      check_equal("m", m, m_plain);
      check_equal("v", v, v_plain);
    }
  }
}

TEST_CASE("adam_step's scalar loop is Adam's update", "[kernels][optim]") {
  // One element from zero moments: m = 0.1 d, v = 0.001 d², and with the bias
  // corrections of step 1 the update is lr · d / (|d| + eps): lr · sign(d).
  real p = 1, m = 0, v = 0;
  const real g = real(0.5);
  const k::AdamStep first{.step_size = real(0.01 / 0.1),
                          .sqrt_correction2 = real(std::sqrt(0.001)),
                          .beta2 = real(0.999),
                          .one_minus_beta1 = real(0.1),
                          .one_minus_beta2 = real(0.001),
                          .eps = real(0),
                          .weight_decay = real(0)};
  k::scalar::adam_step(&p, &m, &v, &g, 1, first);
  CHECK(m == Approx(0.05));
  CHECK(v == Approx(0.00025));
  CHECK(p == Approx(0.99).epsilon(1e-5));
}

TEST_CASE("sum_of_squares: SIMD equals scalar to a double sum's rounding", "[kernels][optim]") {
  Generator generator(12);
  for (const int64_t n : kSizes) {
    const Values x = draw(n, -3, 3, generator);
    const double simd = k::sum_of_squares(x.data(), n);
    const double plain = k::scalar::sum_of_squares(x.data(), n);
    double exact = 0;  // long double: a third value both must be near
    long double wide = 0;
    for (const real value : x) wide += static_cast<long double>(value) * value;
    exact = static_cast<double>(wide);
    INFO("n = " << n << ": simd " << simd << ", scalar " << plain << ", long double " << exact);
    // Both add n non-negative doubles, each rounding within 2⁻⁵³ of the total.
    const double allowed = double(n + 1) * 0x1p-52 * exact;
    CHECK(std::abs(simd - exact) <= allowed);
    CHECK(std::abs(plain - exact) <= allowed);
  }
}

TEST_CASE("layer_norm kernels: SIMD equals scalar, forward and backward", "[kernels][layer_norm]") {
  // μ, σ² and the backward's two sums are double sums of D terms in another
  // order, so they agree to D·2⁻⁵³ relative. In float every output is one
  // rounding of real from doubles that close: at most one ulp of float apart,
  // or near 0 an absolute error of that size (x − μ subtracts terms of order
  // 1, the scale of every value here). In double the outputs carry that error itself: 1000
  // ulp of double covers D up to 1000. dweight and dbias add the rows in the
  // same order with the same FMAs: equal.
  Generator generator(13);
  const double ulp = sizeof(real) == 4 ? 0x1p-23 : 1000 * 0x1p-52;
  auto within_one_rounding = [&](const Values& reference) {
    return [&reference, ulp](size_t i) { return ulp * (std::abs(double(reference[i])) + 1); };
  };
  for (const int64_t N : {1, 3, 5}) {
    for (const int64_t D : {1, 2, 7, 8, 9, 15, 16, 17, 32, 49, 1000}) {
      for (const bool affine : {true, false}) {
        INFO("N = " << N << ", D = " << D << (affine ? ", with weight and bias" : ", no weight"));
        const Values x = draw(N * D, -3, 3, generator), dy = draw(N * D, -1, 1, generator);
        const Values weight = draw(D, 0.5, 1.5, generator), bias = draw(D, -1, 1, generator);
        const real* w = affine ? weight.data() : nullptr;
        const real* b = affine ? bias.data() : nullptr;
        Values y(N * D), hat(N * D), rstd(N), y_plain(N * D), hat_plain(N * D), rstd_plain(N);
        k::layer_norm_forward(y.data(), hat.data(), rstd.data(), x.data(), w, b, N, D, real(1e-5));
        k::scalar::layer_norm_forward(y_plain.data(), hat_plain.data(), rstd_plain.data(), x.data(),
                                      w, b, N, D, real(1e-5));
        check_close("y", y, y_plain, within_one_rounding(y_plain));
        check_close("x_hat", hat, hat_plain, within_one_rounding(hat_plain));
        check_close("rstd", rstd, rstd_plain, within_one_rounding(rstd_plain));

        Values dx(N * D), dweight(D, 7), dbias(D, 7), dx_plain(N * D), dweight_plain(D, 9),
            dbias_plain(D, 9);
        k::layer_norm_backward(dx.data(), dweight.data(), dbias.data(), dy.data(), hat_plain.data(),
                               rstd_plain.data(), w, N, D);
        k::scalar::layer_norm_backward(dx_plain.data(), dweight_plain.data(), dbias_plain.data(),
                                       dy.data(), hat_plain.data(), rstd_plain.data(), w, N, D);
        check_close("dx", dx, dx_plain, within_one_rounding(dx_plain));
        check_equal("dweight", dweight, dweight_plain);
        check_equal("dbias", dbias, dbias_plain);
      }
    }
  }
}

TEST_CASE("layer_norm's scalar forward normalises each row", "[kernels][layer_norm]") {
  // The row (1, 2, 3, 6): μ = 3, σ² = (4 + 1 + 0 + 9)/4 = 3.5.
  const Values x = {1, 2, 3, 6};
  const Values weight = {1, 2, 1, 1}, bias = {0, 0, 10, 0};
  Values y(4), hat(4), rstd(1);
  k::scalar::layer_norm_forward(y.data(), hat.data(), rstd.data(), x.data(), weight.data(),
                                bias.data(), 1, 4, real(0.5));
  const double r = 1 / std::sqrt(3.5 + 0.5);  // 0.5
  CHECK(rstd[0] == Approx(r));
  CHECK(hat[0] == Approx(-2 * r));
  CHECK(y[1] == Approx(2 * (-1 * r)));
  CHECK(y[2] == Approx(10));
  CHECK(y[3] == Approx(3 * r));
}

}  // namespace test_kernels
