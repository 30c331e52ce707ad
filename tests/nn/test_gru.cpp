// tests/nn/test_gru.cpp — the fused gru_cell and gru_sequence ops, GRUCell and GRU.
//
// The specification is composed_gru_cell below: the cell's equations written
// with primitive ops (matmul, add, narrow, sigmoid, tanh, mul). The fused op
// must give the same values and the same gradients for every input; on top of
// that its backward is checked by central differences ([f64], ε = 1e-6,
// passing when |analytic − numeric| ≤ 1e-6 + 1e-5·|numeric|; the cell is
// smooth everywhere, so there are no kinks to avoid), and one small case is
// worked out by hand. gru_sequence's specification is gru_cell applied step
// by step. The modules are checked for PyTorch's names and shapes,
// batch_first, step(), dropout placement, and a 2000-step sequence.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "autograd/gradcheck.hpp"
#include "autograd/ops.hpp"
#include "nn/gru.hpp"
#include "tensor/factory.hpp"
#include "tensor/kernels.hpp"

namespace test_gru {

using namespace attograd;
using Catch::Matchers::Contains;

namespace {

// ---- The specification ---------------------------------------------------------

// One GRU step from primitive ops, line for line the equations of nn/gru.hpp:
//   gi = x W_ihᵀ + b_ih,  gh = h W_hhᵀ + b_hh        (B,3H), blocks r, z, n
//   r = σ(gi_r + gh_r),  z = σ(gi_z + gh_z),  n = tanh(gi_n + r ⊙ gh_n)
//   h' = (1 − z) ⊙ n + z ⊙ h
Tensor composed_gru_cell(const Tensor& x, const Tensor& h, const Tensor& weight_ih,
                         const Tensor& weight_hh, const Tensor& bias_ih, const Tensor& bias_hh) {
  const int64_t H = h.shape()[1];
  Tensor gi = matmul(x, transpose(weight_ih, 0, 1));
  Tensor gh = matmul(h, transpose(weight_hh, 0, 1));
  if (bias_ih.defined()) gi = gi + bias_ih;
  if (bias_hh.defined()) gh = gh + bias_hh;
  auto gate = [H](const Tensor& g, int64_t k) { return narrow(g, 1, k * H, H); };  // k: r, z, n
  const Tensor r = sigmoid(gate(gi, 0) + gate(gh, 0));
  const Tensor z = sigmoid(gate(gi, 1) + gate(gh, 1));
  const Tensor n = tanh(gate(gi, 2) + r * gate(gh, 2));
  return (real(1) - z) * n + z * h;
}

// ---- Helpers ---------------------------------------------------------------------

// Close at the precision of the build: the fused and composed versions differ
// only in rounding (an fma here, a summation order there).
const double kClose = std::is_same_v<real, double> ? 1e-12 : 2e-5;

// Largest |a − b| / (1 + |b|) over all elements; shapes must match.
double difference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.defined());
  REQUIRE(b.defined());
  REQUIRE(a.shape() == b.shape());
  const std::vector<real> x = a.to_vector(), y = b.to_vector();
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = std::abs(double(x[i]) - double(y[i])) / (1 + std::abs(double(y[i])));
    worst = std::isnan(d) ? INFINITY : std::max(worst, d);
  }
  return worst;
}

Tensor random_leaf(const Shape& shape, Generator& generator, double scale = 1.0) {
  return requires_grad_(uniform(shape, -scale, scale, generator));
}

bool all_finite(const Tensor& t) {
  const std::vector<real> values = t.to_vector();
  return std::all_of(values.begin(), values.end(), [](real v) { return std::isfinite(v); });
}

using CellFunction = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                const Tensor&, const Tensor&);

// Leaves for two steps of a cell that share weights: h1 = cell(x1, h0),
// h2 = cell(x2, h1), so the weights receive two contributions each.
struct TwoSteps {
  Tensor x1, x2, h0, weight_ih, weight_hh, bias_ih, bias_hh;
  Tensor projection1, projection2;  // constants weighting each output element

  TwoSteps(int64_t B, int64_t I, int64_t H, bool bias, Generator& generator)
      : x1(random_leaf({B, I}, generator)),
        x2(random_leaf({B, I}, generator)),
        h0(random_leaf({B, H}, generator)),
        weight_ih(random_leaf({3 * H, I}, generator)),
        weight_hh(random_leaf({3 * H, H}, generator)),
        bias_ih(bias ? random_leaf({3 * H}, generator) : Tensor()),
        bias_hh(bias ? random_leaf({3 * H}, generator) : Tensor()),
        projection1(randn({B, H}, generator)),
        projection2(randn({B, H}, generator)) {}

  std::vector<Tensor> leaves() const {
    return {x1, x2, h0, weight_ih, weight_hh, bias_ih, bias_hh};
  }

  // Runs both steps with `cell`, backpropagates L = Σ h1⊙R1 + Σ h2⊙R2 and
  // returns h2 and every leaf's gradient (undefined for absent biases).
  std::vector<Tensor> run(CellFunction cell) const {
    for (const Tensor& t : leaves()) {
      if (t.defined()) zero_grad(t);
    }
    const Tensor h1 = cell(x1, h0, weight_ih, weight_hh, bias_ih, bias_hh);
    const Tensor h2 = cell(x2, h1, weight_ih, weight_hh, bias_ih, bias_hh);
    backward(sum(h1 * projection1) + sum(h2 * projection2));
    std::vector<Tensor> results{detach(h2)};
    for (const Tensor& t : leaves()) results.push_back(t.defined() ? grad(t) : Tensor());
    return results;
  }
};

const char* const kTwoStepNames[] = {"h2",         "dx1",        "dx2",      "dh0",
                                     "dweight_ih", "dweight_hh", "dbias_ih", "dbias_hh"};

// A loss that sees every output of a GRU: Σ output ⊙ R1 + Σ h_n ⊙ R2.
struct ProjectedLoss {
  Tensor on_output, on_state;
  Tensor operator()(const nn::GRUOutput& out) const {
    return sum(out.output * on_output) + sum(out.h_n * on_state);
  }
};

}  // namespace

// ---- gru_cell: the op --------------------------------------------------------------

TEST_CASE("gru_cell passes gradcheck for all six inputs", "[gru][gradcheck][f64]") {
  Generator generator(101);
  struct Size {
    int64_t B, I, H;
  };
  // Odd sizes; H = 1 has a single element per gate; H = 17 puts whole SIMD
  // batches and a tail in every gate block.
  for (const Size s : {Size{3, 5, 7}, Size{1, 1, 1}, Size{2, 3, 17}}) {
    INFO("B = " << s.B << ", I = " << s.I << ", H = " << s.H);
    const std::vector<Tensor> inputs = {
        uniform({s.B, s.I}, -1, 1, generator),     uniform({s.B, s.H}, -1, 1, generator),
        uniform({3 * s.H, s.I}, -1, 1, generator), uniform({3 * s.H, s.H}, -1, 1, generator),
        uniform({3 * s.H}, -1, 1, generator),      uniform({3 * s.H}, -1, 1, generator)};
    const GradcheckResult result = gradcheck(
        [](const std::vector<Tensor>& in) {
          return gru_cell(in[0], in[1], in[2], in[3], in[4], in[5]);
        },
        inputs);
    INFO(result.report);
    CHECK(result.passed);
    CHECK(result.elements_checked == s.B * s.I + s.B * s.H + 3 * s.H * (s.I + s.H + 2));
  }
}

TEST_CASE("gru_cell without biases passes gradcheck", "[gru][gradcheck][f64]") {
  Generator generator(102);
  const std::vector<Tensor> inputs = {
      uniform({2, 4}, -1, 1, generator), uniform({2, 3}, -1, 1, generator),
      uniform({9, 4}, -1, 1, generator), uniform({9, 3}, -1, 1, generator)};
  const GradcheckResult result = gradcheck(
      [](const std::vector<Tensor>& in) {
        return gru_cell(in[0], in[1], in[2], in[3], Tensor(), Tensor());
      },
      inputs);
  INFO(result.report);
  CHECK(result.passed);
}

TEST_CASE("gru_cell equals the cell composed from primitive ops, values and gradients", "[gru]") {
  Generator generator(103);
  struct Case {
    int64_t B, I, H;
    bool bias;
  };
  for (const Case c : {Case{3, 5, 7, true}, Case{1, 1, 1, true}, Case{2, 4, 17, true},
                       Case{4, 6, 33, true}, Case{2, 3, 5, false}}) {
    INFO("B = " << c.B << ", I = " << c.I << ", H = " << c.H << ", bias = " << c.bias);
    const TwoSteps steps(c.B, c.I, c.H, c.bias, generator);
    const std::vector<Tensor> expected = steps.run(composed_gru_cell);
    const std::vector<Tensor> actual = steps.run(gru_cell);
    for (size_t i = 0; i < expected.size(); ++i) {
      INFO(kTwoStepNames[i]);
      REQUIRE(actual[i].defined() == expected[i].defined());
      if (expected[i].defined()) CHECK(difference(actual[i], expected[i]) <= kClose);
    }
  }
}

TEST_CASE("gru_sequence equals gru_cell step by step, values and gradients", "[gru]") {
  // The sequence node against its specification, the chain of cell nodes.
  // They agree to rounding: the input's projection is one product over T·B
  // rows against T products of B rows, which matmul may sum by different
  // kernels (a few rows go to few_rows_nt), and the weight gradients are one
  // product over T·B rows against T products added up.
  Generator generator(31);
  const int64_t T = 5, B = 3, I = 4, H = 7;
  for (bool with_h0 : {true, false}) {
    const Tensor x = requires_grad_(uniform({T, B, I}, -1, 1, generator));
    const Tensor h0 = requires_grad_(uniform({B, H}, -1, 1, generator));
    std::vector<Tensor> weights = {
        uniform({3 * H, I}, -0.5, 0.5, generator), uniform({3 * H, H}, -0.5, 0.5, generator),
        uniform({3 * H}, -0.5, 0.5, generator), uniform({3 * H}, -0.5, 0.5, generator)};
    for (Tensor& w : weights) requires_grad_(w);
    const Tensor upstream = uniform({T, B, H}, -1, 1, generator);  // a loss weighting every h_t

    auto gradients = [&](const Tensor& outputs) {
      for (const Tensor& t : {x, h0, weights[0], weights[1], weights[2], weights[3]}) zero_grad(t);
      backward(sum(outputs * upstream));
      std::vector<Tensor> result;
      for (const Tensor& t : {x, weights[0], weights[1], weights[2], weights[3]}) {
        result.push_back(grad(t).clone_data());
      }
      if (with_h0) result.push_back(grad(h0).clone_data());
      return result;
    };
    const Tensor h_start = with_h0 ? h0 : Tensor();
    const Tensor fused = gru_sequence(x, h_start, weights[0], weights[1], weights[2], weights[3]);
    const std::vector<Tensor> fused_grads = gradients(fused);

    std::vector<Tensor> steps;
    Tensor h = with_h0 ? h0 : zeros({B, H});
    for (int64_t t = 0; t < T; ++t) {
      h = gru_cell(select(x, 0, t), h, weights[0], weights[1], weights[2], weights[3]);
      steps.push_back(h);
    }
    const Tensor chained = stack(steps, 0);
    const std::vector<Tensor> chained_grads = gradients(chained);

    INFO("with h0: " << with_h0);
    CHECK(difference(fused, chained) <= kClose);
    REQUIRE(fused_grads.size() == chained_grads.size());
    for (size_t i = 0; i < fused_grads.size(); ++i) {
      INFO("gradient " << i << " of x, W_ih, W_hh, b_ih, b_hh, h0");
      CHECK(difference(fused_grads[i], chained_grads[i]) <= kClose);
    }
  }
}

TEST_CASE("gru_sequence is one graph node and rejects mismatched shapes", "[gru]") {
  Generator generator(32);
  const Tensor x = requires_grad_(uniform({4, 2, 3}, -1, 1, generator));
  const Tensor w_ih = requires_grad_(uniform({15, 3}, -1, 1, generator));
  const Tensor w_hh = requires_grad_(uniform({15, 5}, -1, 1, generator));
  const Tensor y = gru_sequence(x, Tensor(), w_ih, w_hh, Tensor(), Tensor());
  CHECK(y.shape() == Shape{4, 2, 5});
  CHECK(std::string(grad_fn(y)->name) == "gru_sequence");
  CHECK_THROWS_WITH(gru_sequence(x, zeros({3, 5}), w_ih, w_hh, Tensor(), Tensor()),
                    Contains("gru_sequence: h0 has shape (3,5)") && Contains("(2,5)"));
  CHECK_THROWS_WITH(
      gru_sequence(x, Tensor(), uniform({15, 4}, -1, 1, generator), w_hh, Tensor(), Tensor()),
      Contains("gru_sequence: with x (4,2,3)") && Contains("(15,3)"));
  CHECK_THROWS_WITH(gru_sequence(x, Tensor(), w_ih, w_hh, zeros({14}), Tensor()),
                    Contains("gru_sequence: bias_ih has shape (14)"));
  CHECK_THROWS_WITH(gru_sequence(select(x, 0, 0), Tensor(), w_ih, w_hh, Tensor(), Tensor()),
                    Contains("must be (time, batch, input)"));
}

TEST_CASE("gru_cell on a case worked out by hand", "[gru]") {
  // H = 1, I = 1, two batch rows. With
  //   W_ih = (w_ir, w_iz, w_in) = (0.5, 1, 0.25)     b_ih = (0, ln 3, ½ ln 3 − 1.5)
  //   W_hh = (w_hr, w_hz, w_hn) = (1, 2, 1)          b_hh = (0, 0, 3)
  // row 0, x = 2, h = −1:
  //   a_r  = 0.5·2 + 0 + 1·(−1) + 0 = 0             r = σ(0) = 1/2
  //   a_z  = 1·2 + ln 3 + 2·(−1) + 0 = ln 3         z = σ(ln 3) = 3/4
  //   gh_n = 1·(−1) + 3 = 2
  //   a_n  = 0.25·2 + ½ ln 3 − 1.5 + ½·2 = ½ ln 3   n = tanh(½ ln 3) = (3 − 1)/(3 + 1) = 1/2
  //   h'   = (1 − 3/4)·1/2 + 3/4·(−1) = −5/8
  // row 1, x = 0, h = 0: r = 1/2, z = 3/4, gh_n = 3, a_n = ½ ln 3, n = 1/2,
  //   h' = 1/4·1/2 + 0 = 1/8.
  // (Putting b_hn outside the reset product, or swapping r and z, changes both.)
  //
  // Gradients of h' by the chain rule, with σ' = σ(1 − σ) = 3/16 for z, 1/4 for
  // r, and tanh' = 1 − n² = 3/4:
  //   ∂h'/∂h = z + (h − n)·z(1−z)·w_hz + (1−z)(1−n²)·(r·w_hn + gh_n·r(1−r)·w_hr)
  //          row 0: 3/4 + (−3/2)(3/16)(2) + (3/16)(1/2 + 1/2)  = 3/4 − 9/16 + 3/16 = 3/8
  //          row 1: 3/4 + (−1/2)(3/16)(2) + (3/16)(1/2 + 3/4)  = 3/4 − 3/16 + 15/64 = 51/64
  //   ∂h'/∂x = (h − n)·z(1−z)·w_iz + (1−z)(1−n²)·(w_in + gh_n·r(1−r)·w_ir)
  //          row 0: (−3/2)(3/16) + (3/16)(1/4 + 1/4) = −9/32 + 3/32 = −3/16
  //          row 1: (−1/2)(3/16) + (3/16)(1/4 + 3/8) = −3/32 + 15/128 = 3/128
  const double ln3 = std::log(3.0);
  const Tensor x = requires_grad_(from_vector({2, 0}, {2, 1}));
  const Tensor h = requires_grad_(from_vector({-1, 0}, {2, 1}));
  const Tensor weight_ih = from_vector({0.5, 1, 0.25}, {3, 1});
  const Tensor weight_hh = from_vector({1, 2, 1}, {3, 1});
  const Tensor bias_ih = from_vector({0, real(ln3), real(0.5 * ln3 - 1.5)});
  const Tensor bias_hh = from_vector({0, 0, 3});
  const Tensor h_new = gru_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh);
  REQUIRE(h_new.shape() == Shape{2, 1});
  CHECK(h_new.at({0, 0}) == Approx(-5.0 / 8));
  CHECK(h_new.at({1, 0}) == Approx(1.0 / 8));
  backward(sum(h_new));
  CHECK(grad(h).at({0, 0}) == Approx(3.0 / 8));
  CHECK(grad(h).at({1, 0}) == Approx(51.0 / 64));
  CHECK(grad(x).at({0, 0}) == Approx(-3.0 / 16));
  CHECK(grad(x).at({1, 0}) == Approx(3.0 / 128));
}

TEST_CASE("gru_cell is one graph node and rejects mismatched shapes", "[gru]") {
  Generator generator(104);
  const Tensor x = random_leaf({2, 3}, generator);
  const Tensor h = random_leaf({2, 4}, generator);
  const Tensor weight_ih = random_leaf({12, 3}, generator);
  const Tensor weight_hh = random_leaf({12, 4}, generator);
  const Tensor bias = random_leaf({12}, generator);
  const Tensor h_new = gru_cell(x, h, weight_ih, weight_hh, bias, bias);
  REQUIRE(grad_fn(h_new) != nullptr);
  CHECK(std::string(grad_fn(h_new)->name) == "gru_cell");
  CHECK(grad_fn(h_new)->inputs.size() == 6);
  CHECK(grad_fn(h_new)->inputs[0].same(x));  // straight to the leaves: no nodes in between
  CHECK(grad_fn(h_new)->inputs[3].same(weight_hh));

  CHECK_THROWS_WITH(gru_cell(x, h, random_leaf({12, 4}, generator), weight_hh, bias, bias),
                    Contains("weight_ih has shape (12,4)") && Contains("(12,3)"));
  CHECK_THROWS_WITH(gru_cell(x, h, weight_ih, random_leaf({12, 3}, generator), bias, bias),
                    Contains("weight_hh has shape (12,3)") && Contains("(12,4)"));
  CHECK_THROWS_WITH(gru_cell(x, h, weight_ih, weight_hh, bias, random_leaf({4}, generator)),
                    Contains("bias_hh has shape (4)") && Contains("(12)"));
  CHECK_THROWS_WITH(gru_cell(x, random_leaf({3, 4}, generator), weight_ih, weight_hh, bias, bias),
                    Contains("different batch sizes"));
  CHECK_THROWS_WITH(gru_cell(x, Tensor(), weight_ih, weight_hh, bias, bias),
                    Contains("gru_cell") && Contains("undefined"));
}

// ---- GRUCell ----------------------------------------------------------------------

TEST_CASE("GRUCell: PyTorch's parameter names and shapes, forward through gru_cell", "[gru][nn]") {
  Generator generator(105);
  nn::GRUCell cell(nn::GRUCellOptions(5, 7), generator);
  const auto named = cell.named_parameters();
  REQUIRE(named.size() == 4);
  CHECK(named[0].first == "weight_ih");
  CHECK(named[0].second.shape() == Shape{21, 5});
  CHECK(named[1].first == "weight_hh");
  CHECK(named[1].second.shape() == Shape{21, 7});
  CHECK(named[2].first == "bias_ih");
  CHECK(named[2].second.shape() == Shape{21});
  CHECK(named[3].first == "bias_hh");
  CHECK(named[3].second.shape() == Shape{21});
  CHECK(cell.summary() == "GRUCell(5, 7)");

  const Tensor x = uniform({3, 5}, -1, 1, generator);
  const Tensor h = uniform({3, 7}, -1, 1, generator);
  const Tensor expected =
      composed_gru_cell(x, h, cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh);
  CHECK(difference(cell.forward(x, h), expected) <= kClose);
  // No state means a zero state.
  CHECK(difference(cell.forward(x), cell.forward(x, zeros({3, 7}))) == 0);
  CHECK_THROWS_WITH(cell.forward(uniform({3, 4}, -1, 1, generator)),
                    Contains("GRUCell(5, 7)") && Contains("(3,4)") && Contains("(B,5)"));
  CHECK_THROWS_WITH(cell.forward(x, zeros({3, 6})), Contains("(3,6)") && Contains("(3,7)"));

  nn::GRUCell plain(nn::GRUCellOptions(5, 7).bias(false), generator);
  REQUIRE(plain.named_parameters().size() == 2);
  CHECK(!plain.bias_ih.defined());
  CHECK(plain.summary() == "GRUCell(5, 7, bias=false)");
  CHECK(difference(plain.forward(x, h), composed_gru_cell(x, h, plain.weight_ih, plain.weight_hh,
                                                          Tensor(), Tensor())) <= kClose);
}

// ---- GRU ----------------------------------------------------------------------------

TEST_CASE("GRU: PyTorch's parameter names, shapes and initial range", "[gru][nn]") {
  Generator generator(106);
  nn::GRU gru(nn::GRUOptions(5, 7).num_layers(2), generator);
  const std::vector<std::pair<std::string, Shape>> expected = {
      {"weight_ih_l0", {21, 5}}, {"weight_hh_l0", {21, 7}}, {"bias_ih_l0", {21}},
      {"bias_hh_l0", {21}},      {"weight_ih_l1", {21, 7}}, {"weight_hh_l1", {21, 7}},
      {"bias_ih_l1", {21}},      {"bias_hh_l1", {21}}};
  const auto named = gru.named_parameters();
  REQUIRE(named.size() == expected.size());
  const double bound = 1 / std::sqrt(7.0);
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO(expected[i].first);
    CHECK(named[i].first == expected[i].first);
    CHECK(named[i].second.shape() == expected[i].second);
    CHECK(requires_grad(named[i].second));
    const std::vector<real> values = named[i].second.to_vector();
    const auto [low, high] = std::minmax_element(values.begin(), values.end());
    CHECK(*low >= -bound);
    CHECK(*high <= bound);
    CHECK(*high - *low > bound);  // spread over the range, not a constant
  }
  CHECK(gru.parameter("weight_hh_l1").same(gru.layers()[1].weight_hh));
  CHECK(gru.summary() == "GRU(5, 7, num_layers=2)");

  nn::GRU plain(nn::GRUOptions(5, 7).num_layers(3).bias(false).batch_first(true).dropout(0.25),
                generator);
  const auto plain_named = plain.named_parameters();
  REQUIRE(plain_named.size() == 6);
  CHECK(plain_named[5].first == "weight_hh_l2");
  CHECK(plain.summary() == "GRU(5, 7, num_layers=3, bias=false, batch_first=true, dropout=0.25)");

  CHECK_THROWS_WITH(nn::GRU(nn::GRUOptions(5, 7).num_layers(0)), Contains("num_layers"));
  CHECK_THROWS_WITH(nn::GRU(nn::GRUOptions(5, 7).dropout(1.0)), Contains("dropout"));
  CHECK_THROWS_WITH(nn::GRU(nn::GRUOptions(0, 7)), Contains("input_size"));
}

TEST_CASE("GRU with one layer is GRUCell applied step by step", "[gru][nn]") {
  // Same seed, same draw order: the two modules start with the same numbers.
  Generator generator_a(107), generator_b(107);
  nn::GRU gru(nn::GRUOptions(3, 4), generator_a);
  nn::GRUCell cell(nn::GRUCellOptions(3, 4), generator_b);
  Generator data(7);
  const Tensor x = uniform({5, 2, 3}, -1, 1, data);
  const Tensor h0 = uniform({1, 2, 4}, -1, 1, data);
  const nn::GRUOutput out = gru.forward(x, h0);
  REQUIRE(out.output.shape() == Shape{5, 2, 4});
  REQUIRE(out.h_n.shape() == Shape{1, 2, 4});
  Tensor h = select(h0, 0, 0);
  for (int64_t t = 0; t < 5; ++t) {
    h = cell.forward(select(x, 0, t), h);
    CHECK(difference(select(out.output, 0, t), h) <= kClose);
  }
  CHECK(difference(select(out.h_n, 0, 0), h) <= kClose);
}

TEST_CASE("GRU gradients over 4 steps and 2 layers match central differences",
          "[gru][gradcheck][f64]") {
  Generator generator(108);
  nn::GRU gru(nn::GRUOptions(3, 4).num_layers(2), generator);
  const Tensor x = uniform({4, 2, 3}, -1, 1, generator);
  const Tensor h0 = uniform({2, 2, 4}, -1, 1, generator);

  // The input and the initial state, through gradcheck. The output it checks
  // joins output (T,B,H) and h_n (L,B,H), so both are differentiated.
  const GradcheckResult result = gradcheck(
      [&gru](const std::vector<Tensor>& in) {
        const nn::GRUOutput out = gru.forward(in[0], in[1]);
        return cat({reshape(out.output, {-1}), reshape(out.h_n, {-1})}, 0);
      },
      {x, h0});
  INFO(result.report);
  CHECK(result.passed);

  // The parameters are the module's own tensors, so they are perturbed in
  // place: L(p ± ε) for every element of every parameter against backward's
  // gradient, with gradcheck's step and tolerance.
  const ProjectedLoss loss{randn({4, 2, 4}, generator), randn({2, 2, 4}, generator)};
  gru.zero_grad();
  backward(loss(gru.forward(x, h0)));
  const double epsilon = 1e-6;
  int64_t checked = 0;
  for (auto& [name, parameter] : gru.named_parameters()) {
    const Tensor analytic = grad(parameter);
    REQUIRE(analytic.defined());
    for (int64_t k = 0; k < parameter.numel(); ++k) {
      NoGradGuard no_grad;
      const real original = parameter.data()[k];
      parameter.data()[k] = original + epsilon;
      const double plus = loss(gru.forward(x, h0)).item();
      parameter.data()[k] = original - epsilon;
      const double minus = loss(gru.forward(x, h0)).item();
      parameter.data()[k] = original;
      const double numeric = (plus - minus) / (2 * epsilon);
      INFO(name << " element " << k << ": analytic " << analytic.data()[k] << ", numeric "
                << numeric);
      CHECK(std::abs(analytic.data()[k] - numeric) <= 1e-6 + 1e-5 * std::abs(numeric));
      ++checked;
    }
  }
  CHECK(checked == gru.parameter_count());
}

TEST_CASE("GRU batch_first gives the same numbers with the batch axis first", "[gru][nn]") {
  Generator generator_a(109), generator_b(109);
  nn::GRU seq_first(nn::GRUOptions(3, 5).num_layers(2), generator_a);
  nn::GRU batch_first(nn::GRUOptions(3, 5).num_layers(2).batch_first(true), generator_b);
  Generator data(9);
  const Tensor x = requires_grad_(uniform({4, 2, 3}, -1, 1, data));        // (T,B,I)
  const Tensor x_bf = requires_grad_(permute(x, {1, 0, 2}).clone_data());  // (B,T,I)
  const Tensor h0 = uniform({2, 2, 5}, -1, 1, data);
  const ProjectedLoss loss{randn({4, 2, 5}, data), randn({2, 2, 5}, data)};

  const nn::GRUOutput a = seq_first.forward(x, h0);
  const nn::GRUOutput b = batch_first.forward(x_bf, h0);
  REQUIRE(b.output.shape() == Shape{2, 4, 5});
  CHECK(difference(permute(b.output, {1, 0, 2}), a.output) <= kClose);
  CHECK(difference(b.h_n, a.h_n) <= kClose);  // the state stays (L,B,H)

  backward(loss(a));
  backward(sum(b.output * permute(loss.on_output, {1, 0, 2})) + sum(b.h_n * loss.on_state));
  CHECK(difference(permute(grad(x_bf), {1, 0, 2}), grad(x)) <= kClose);
  const auto named_a = seq_first.named_parameters(), named_b = batch_first.named_parameters();
  for (size_t i = 0; i < named_a.size(); ++i) {
    INFO(named_a[i].first);
    CHECK(difference(grad(named_b[i].second), grad(named_a[i].second)) <= kClose);
  }
}

TEST_CASE("GRU::step is forward on one time step, and copies nothing with one layer", "[gru][nn]") {
  Generator generator(110);
  nn::GRU gru(nn::GRUOptions(3, 4).num_layers(2), generator);
  const Tensor x = uniform({5, 2, 3}, -1, 1, generator);
  const Tensor h0 = uniform({2, 2, 4}, -1, 1, generator);
  const nn::GRUOutput whole = gru.forward(x, h0);
  Tensor state = h0;
  for (int64_t t = 0; t < 5; ++t) {
    const nn::GRUOutput out = gru.step(select(x, 0, t), state);
    REQUIRE(out.output.shape() == Shape{2, 4});
    REQUIRE(out.h_n.shape() == Shape{2, 2, 4});
    CHECK(difference(out.output, select(whole.output, 0, t)) <= kClose);
    state = out.h_n;
  }
  CHECK(difference(state, whole.h_n) <= kClose);
  // No state means zeros.
  CHECK(difference(gru.step(select(x, 0, 0)).h_n,
                   gru.step(select(x, 0, 0), zeros({2, 2, 4})).h_n) == 0);

  // One layer: h_n is a view of output, in step and in forward with T = 1.
  nn::GRU single(nn::GRUOptions(3, 4), generator);
  const nn::GRUOutput stepped = single.step(select(x, 0, 0));
  CHECK(stepped.h_n.storage() == stepped.output.storage());
  const nn::GRUOutput one_step = single.forward(narrow(x, 0, 0, 1));
  CHECK(one_step.h_n.storage() == one_step.output.storage());
  CHECK(difference(select(one_step.output, 0, 0), stepped.output) == 0);

  // T = 1 with the batch axis first: the same cells, the time axis put back second.
  Generator generator_bf(110);
  nn::GRU seq_first(nn::GRUOptions(3, 4).num_layers(2), generator_bf);
  Generator generator_bf2(110);
  nn::GRU batch_first(nn::GRUOptions(3, 4).num_layers(2).batch_first(true), generator_bf2);
  const nn::GRUOutput bf = batch_first.forward(permute(narrow(x, 0, 1, 1), {1, 0, 2}), h0);
  const nn::GRUOutput sf = seq_first.step(select(x, 0, 1), h0);
  REQUIRE(bf.output.shape() == Shape{2, 1, 4});
  CHECK(difference(select(bf.output, 1, 0), sf.output) == 0);
  CHECK(difference(bf.h_n, sf.h_n) == 0);
}

TEST_CASE("GRU dropout acts between layers, in training mode only", "[gru][nn]") {
  Generator generator_a(111), generator_b(111);
  const double p = 0.5;
  nn::GRU gru(nn::GRUOptions(3, 4).num_layers(2).dropout(p), generator_a);
  nn::GRU no_dropout(nn::GRUOptions(3, 4).num_layers(2), generator_b);  // same parameters
  Generator data(11);
  const Tensor x = uniform({5, 2, 3}, -1, 1, data);

  gru.eval();
  const nn::GRUOutput evaluated = gru.forward(x);
  const nn::GRUOutput reference = no_dropout.forward(x);
  CHECK(difference(evaluated.output, reference.output) == 0);
  CHECK(difference(evaluated.h_n, reference.h_n) == 0);

  gru.train();
  Generator masks = gru.dropout_generator();  // a copy: the masks the next forward will draw
  const nn::GRUOutput trained = gru.forward(x);
  // Layer 0 runs before any dropout; layer 1 sees dropped inputs.
  CHECK(difference(select(trained.h_n, 0, 0), select(reference.h_n, 0, 0)) == 0);
  CHECK(difference(select(trained.h_n, 0, 1), select(reference.h_n, 0, 1)) > 1e-3);
  // Nothing is dropped after the last layer: the top output at the last step is h_n.
  CHECK(difference(select(trained.output, 0, 4), select(trained.h_n, 0, 1)) == 0);

  // The same forward by hand: layer 0, then every step's output times an
  // inverted-dropout mask (0 with probability p, else 1/(1 − p)), then layer 1.
  // The mask covers the whole (T,B,H) sequence from one 64-bit draw: element
  // i is dropped when the hash of (draw, i) is below p·2^32
  // (kernels::scalar::mask_draw).
  const auto& layers = gru.layers();
  std::vector<Tensor> steps;
  Tensor h = zeros({2, 4});
  for (int64_t t = 0; t < 5; ++t) {
    h = gru_cell(select(x, 0, t), h, layers[0].weight_ih, layers[0].weight_hh, layers[0].bias_ih,
                 layers[0].bias_hh);
    steps.push_back(h);
  }
  int64_t dropped = 0;
  const uint64_t seed = masks.next_u64();
  for (int64_t t = 0; t < 5; ++t) {
    Tensor mask = Tensor::empty({2, 4});
    for (int64_t i = 0; i < mask.numel(); ++i) {
      const bool drop = kernels::scalar::mask_draw(seed, uint64_t(t * 8 + i)) < (1u << 31);
      dropped += drop;
      mask.data()[i] = drop ? real(0) : real(1 / (1 - p));
    }
    steps[t] = steps[t] * mask;
  }
  CHECK(dropped > 0);
  CHECK(dropped < 40);
  h = zeros({2, 4});
  for (int64_t t = 0; t < 5; ++t) {
    h = gru_cell(steps[t], h, layers[1].weight_ih, layers[1].weight_hh, layers[1].bias_ih,
                 layers[1].bias_hh);
    CHECK(difference(select(trained.output, 0, t), h) <= kClose);
  }

  // Fresh masks on the next call; with one layer there is nowhere to drop.
  CHECK(difference(gru.forward(x).output, trained.output) > 1e-3);
  Generator generator_c(111);
  nn::GRU single(nn::GRUOptions(3, 4).dropout(p), generator_c);
  CHECK(single.is_training());
  const Tensor train_output = single.forward(x).output;
  single.eval();
  CHECK(difference(train_output, single.forward(x).output) == 0);
}

TEST_CASE("GRU rejects inputs of the wrong size, naming the layer and the shapes", "[gru][nn]") {
  nn::GRU gru(nn::GRUOptions(5, 7).num_layers(2));
  CHECK_THROWS_WITH(gru.forward(zeros({4, 3, 6})),
                    Contains("layer 0") && Contains("input_size = 5") && Contains("(4,3,6)") &&
                        Contains("(time,batch,input_size)"));
  CHECK_THROWS_WITH(gru.forward(zeros({4, 5})), Contains("3-D") && Contains("(4,5)"));
  CHECK_THROWS_WITH(gru.forward(zeros({4, 3, 5}), zeros({1, 3, 7})),
                    Contains("(1,3,7)") && Contains("(2,3,7)"));
  CHECK_THROWS_WITH(gru.forward(zeros({0, 3, 5})), Contains("T = 0"));
  CHECK_THROWS_WITH(gru.step(zeros({3, 6})), Contains("layer 0") && Contains("(3,6)"));
  nn::GRU batch_first(nn::GRUOptions(5, 7).batch_first(true));
  CHECK_THROWS_WITH(batch_first.forward(zeros({3, 4, 6})),
                    Contains("(batch,time,input_size)") && Contains("(3,4,6)"));
}

TEST_CASE("GRU runs and backpropagates through 2000 steps", "[gru][nn]") {
  // 2000 steps × 2 layers is a graph thousands of nodes deep: backward and
  // the graph's destruction must both be free of recursion.
  Generator generator(112);
  nn::GRU gru(nn::GRUOptions(2, 3).num_layers(2), generator);
  const Tensor x = requires_grad_(uniform({2000, 2, 2}, -1, 1, generator));
  const nn::GRUOutput out = gru.forward(x);
  REQUIRE(out.output.shape() == Shape{2000, 2, 3});
  backward(sum(out.output) + sum(out.h_n));
  REQUIRE(grad(x).defined());
  CHECK(all_finite(grad(x)));
  // The first step still gets a gradient after 2000 steps (small, but not zero).
  CHECK(std::abs(grad(x).at({0, 0, 0})) > 0);
  for (const Tensor& parameter : gru.parameters()) {
    REQUIRE(grad(parameter).defined());
    CHECK(all_finite(grad(parameter)));
  }
  // A graph that is never backpropagated is freed as well.
  { const nn::GRUOutput discarded = gru.forward(x); }
}

}  // namespace test_gru
