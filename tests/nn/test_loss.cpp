// tests/nn/test_loss.cpp — the losses against hand computations, against
// each other, at extreme logits, and by finite differences ([f64]).
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "attograd.hpp"

namespace test_loss {

using namespace attograd;
using Catch::Matchers::Contains;
using nn::Reduction;

namespace {

void require_gradcheck(const GradcheckFunction& fn, const std::vector<Tensor>& inputs) {
  const GradcheckResult result = gradcheck(fn, inputs);
  INFO(result.report);
  REQUIRE(result.passed);
}

// log Σ_c e^{z_c} − z_y, computed in double from plain numbers.
double cross_entropy_by_hand(const std::vector<double>& z, int64_t y) {
  double total = 0;
  for (double v : z) total += std::exp(v);
  return std::log(total) - z[y];
}

}  // namespace

// ---- mse_loss -------------------------------------------------------------------

TEST_CASE("mse_loss with each reduction", "[nn][loss]") {
  const Tensor input = tensor({{1, 2}, {3, 4}});
  const Tensor target = tensor({{0, 2}, {5, 1}});
  // Squared differences 1, 0, 4, 9.
  const Tensor none = nn::mse_loss(input, target, Reduction::none);
  REQUIRE(none.shape() == Shape{2, 2});
  CHECK(none.to_vector() == std::vector<real>{1, 0, 4, 9});
  CHECK(nn::mse_loss(input, target, Reduction::sum).item() == Approx(14));
  CHECK(nn::mse_loss(input, target).item() == Approx(3.5));
  CHECK(nn::mse_loss(input, target).dim() == 0);
}

TEST_CASE("mse_loss refuses shapes that differ instead of broadcasting", "[nn][loss]") {
  CHECK_THROWS_WITH(nn::mse_loss(zeros({4, 1}), zeros({4})),
                    Contains("(4,1)") && Contains("(4)") && Contains("same shape"));
}

TEST_CASE("mse_loss gradients pass gradcheck", "[nn][loss][f64]") {
  Generator generator(1);
  // mse_loss is its own op (squared errors in one node): both inputs, odd sizes.
  for (const Shape& shape : {Shape{1}, Shape{7}, Shape{3, 4}, Shape{2, 3, 5}, Shape{9, 1, 1}}) {
    for (Reduction reduction : {Reduction::none, Reduction::sum, Reduction::mean}) {
      INFO(fmt::format("shape {} reduction {}", shape, static_cast<int>(reduction)));
      require_gradcheck(
          [&](const std::vector<Tensor>& in) { return nn::mse_loss(in[0], in[1], reduction); },
          {randn(shape, generator), randn(shape, generator)});
    }
  }
}

// ---- nll_loss -------------------------------------------------------------------------

TEST_CASE("nll_loss picks the targets' log-probabilities", "[nn][loss]") {
  const Tensor log_probs = tensor({{-0.1, -2.0, -3.0}, {-1.5, -0.5, -2.5}, {-4.0, -0.2, -1.0}});
  const std::vector<int64_t> targets = {0, 2, 1};
  CHECK(nn::nll_loss(log_probs, targets, Reduction::sum).item() == Approx(0.1 + 2.5 + 0.2));
  CHECK(nn::nll_loss(log_probs, targets).item() == Approx((0.1 + 2.5 + 0.2) / 3));
  const Tensor none = nn::nll_loss(log_probs, targets, Reduction::none);
  REQUIRE(none.shape() == Shape{3});
  CHECK(none.at({1}) == Approx(2.5));
}

TEST_CASE("nll_loss skips ignore_index and averages over the rest", "[nn][loss]") {
  const Tensor log_probs = requires_grad_(tensor({{-0.1, -2.0}, {-1.5, -0.5}, {-4.0, -0.2}}));
  const std::vector<int64_t> targets = {1, -100, 0};
  const Tensor none = nn::nll_loss(log_probs, targets, Reduction::none);
  CHECK(none.to_vector() == std::vector<real>{2.0, 0.0, 4.0});
  const Tensor mean = nn::nll_loss(log_probs, targets);
  CHECK(mean.item() == Approx(3.0));  // (2 + 4) / 2, not / 3
  backward(mean);
  const Tensor g = grad(log_probs);
  CHECK(g.to_vector() == std::vector<real>{0, -0.5, 0, 0, -0.5, 0});
  // A custom ignore_index.
  CHECK(nn::nll_loss(log_probs, {1, 0, 1}, Reduction::sum, 1).item() == Approx(1.5));
}

TEST_CASE("nll_loss rejects bad targets and shapes", "[nn][loss]") {
  const Tensor log_probs = zeros({2, 3});
  CHECK_THROWS_WITH(nn::nll_loss(log_probs, {0, 3}), Contains("target 3") && Contains("3 classes"));
  CHECK_THROWS_WITH(nn::nll_loss(log_probs, {0, -1}), Contains("target -1"));
  CHECK_THROWS_WITH(nn::nll_loss(log_probs, {0}), Contains("1 targets"));
  CHECK_THROWS_WITH(nn::nll_loss(zeros({6}), {0}), Contains("(N,C)"));
}

TEST_CASE("nll_loss gradients pass gradcheck", "[nn][loss][f64]") {
  Generator generator(2);
  const std::vector<int64_t> targets = {2, -100, 0, 3, 2};
  for (Reduction reduction : {Reduction::none, Reduction::sum, Reduction::mean}) {
    require_gradcheck(
        [&](const std::vector<Tensor>& in) { return nn::nll_loss(in[0], targets, reduction); },
        {randn({5, 4}, generator)});
  }
}

// ---- cross_entropy -----------------------------------------------------------------------

TEST_CASE("cross_entropy equals nll_loss of log_softmax", "[nn][loss]") {
  Generator generator(3);
  const Tensor logits = randn({6, 5}, generator);
  const std::vector<int64_t> targets = {4, 0, -100, 2, 2, 1};
  for (Reduction reduction : {Reduction::none, Reduction::sum, Reduction::mean}) {
    const std::vector<real> fused = nn::cross_entropy(logits, targets, reduction).to_vector();
    const std::vector<real> composed =
        nn::nll_loss(log_softmax(logits, 1), targets, reduction).to_vector();
    REQUIRE(fused.size() == composed.size());
    for (size_t i = 0; i < fused.size(); ++i) CHECK(fused[i] == Approx(composed[i]));
  }
  // And both match the formula log Σ e^z − z_y.
  const Tensor none = nn::cross_entropy(logits, targets, Reduction::none);
  std::vector<double> row0;
  for (int64_t c = 0; c < 5; ++c) row0.push_back(logits.at({0, c}));
  CHECK(none.at({0}) == Approx(cross_entropy_by_hand(row0, 4)));
}

TEST_CASE("cross_entropy is stable for huge logits", "[nn][loss]") {
  const Tensor logits = requires_grad_(tensor({{1000, 0, -1000}, {1000, 0, -1000}}));
  const Tensor losses = nn::cross_entropy(logits, {0, 1}, Reduction::none);
  // Row 0: log(1 + e^−1000 + e^−2000) ≈ 0.  Row 1: 1000 + log(1 + …) ≈ 1000.
  CHECK(std::isfinite(losses.at({0})));
  CHECK(losses.at({0}) == Approx(0).margin(1e-6));
  CHECK(losses.at({1}) == Approx(1000));
  backward(sum(losses));
  // d/dz = softmax(z) − onehot(y): (0,0,0) for row 0, (1,−1,0) for row 1.
  const std::vector<real> g = grad(logits).to_vector();
  const std::vector<real> expected = {0, 0, 0, 1, -1, 0};
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == Approx(expected[i]).margin(1e-6));

  // Adding a constant to every logit changes nothing, even a very large one.
  const Tensor shifted = tensor({{3.0 + 5000, 1.0 + 5000, -2.0 + 5000}});
  CHECK(nn::cross_entropy(shifted, {1}).item() ==
        Approx(cross_entropy_by_hand({3, 1, -2}, 1)).epsilon(1e-4));
}

TEST_CASE("cross_entropy gradients pass gradcheck", "[nn][loss][f64]") {
  Generator generator(4);
  const std::vector<int64_t> targets = {1, 0, -100, 3};
  for (Reduction reduction : {Reduction::none, Reduction::sum, Reduction::mean}) {
    require_gradcheck(
        [&](const std::vector<Tensor>& in) { return nn::cross_entropy(in[0], targets, reduction); },
        {randn({4, 5}, generator)});
  }
}

// ---- sequence_cross_entropy ----------------------------------------------------------------

TEST_CASE("sequence_cross_entropy averages valid tokens' losses over T", "[nn][loss]") {
  Generator generator(5);
  const int64_t B = 3, T = 4, V = 6;
  const Tensor logits = randn({B, T, V}, generator);
  const std::vector<int64_t> targets = {1, 2, 3, 4, 5, 0, 1, 2, 3, 3, 3, 3};
  const std::vector<int64_t> valid_lens = {4, 2, 0};
  const Tensor loss = nn::sequence_cross_entropy(logits, targets, valid_lens);
  REQUIRE(loss.shape() == Shape{B});
  for (int64_t b = 0; b < B; ++b) {
    double total = 0;
    for (int64_t t = 0; t < valid_lens[b]; ++t) {
      std::vector<double> row;
      for (int64_t v = 0; v < V; ++v) row.push_back(logits.at({b, t, v}));
      total += cross_entropy_by_hand(row, targets[b * T + t]);
    }
    INFO("sequence " << b);
    CHECK(loss.at({b}) == Approx(total / T));  // d2l divides by T, not by valid_len
  }
  CHECK(loss.at({2}) == 0);
}

TEST_CASE("sequence_cross_entropy ignores everything in the padding", "[nn][loss]") {
  Generator generator(6);
  const int64_t B = 2, T = 3, V = 4;
  const std::vector<int64_t> valid_lens = {2, 1};
  const Tensor logits = requires_grad_(randn({B, T, V}, generator));
  const std::vector<int64_t> targets = {0, 1, 2, 3, 0, 1};
  const Tensor loss = nn::sequence_cross_entropy(logits, targets, valid_lens);
  backward(sum(loss));
  const Tensor g = grad(logits);

  // Padded positions: (0,2), (1,1), (1,2). Their logits get exactly zero gradient…
  for (auto [b, t] : {std::pair{0, 2}, std::pair{1, 1}, std::pair{1, 2}}) {
    for (int64_t v = 0; v < V; ++v) CHECK(g.at({b, t, v}) == 0);
  }
  CHECK(g.at({1, 0, 3}) != 0);

  // …and changing their logits or targets (even to ids outside [0, V)) changes nothing.
  Tensor other_logits = logits.clone_data();
  for (int64_t v = 0; v < V; ++v) {
    other_logits.set({0, 2, v}, 100 * (v + 1));
    other_logits.set({1, 1, v}, -50);
  }
  const std::vector<int64_t> other_targets = {0, 1, 99, 3, -7, 2};
  const std::vector<real> before = loss.to_vector();
  CHECK(nn::sequence_cross_entropy(other_logits, other_targets, valid_lens).to_vector() == before);

  // Changing a valid target does change the loss (the test above can fail).
  CHECK(nn::sequence_cross_entropy(logits, {0, 2, 2, 3, 0, 1}, valid_lens).to_vector() != before);
}

TEST_CASE("sequence_cross_entropy checks its inputs", "[nn][loss]") {
  const Tensor logits = zeros({2, 3, 4});
  const std::vector<int64_t> targets(6, 0);
  CHECK_THROWS_WITH(nn::sequence_cross_entropy(logits, targets, {1, 4}),
                    Contains("valid length 4"));
  CHECK_THROWS_WITH(nn::sequence_cross_entropy(logits, targets, {1}), Contains("B = 2"));
  CHECK_THROWS_WITH(nn::sequence_cross_entropy(logits, {0, 0, 0}, {1, 1}), Contains("B·T = 6"));
  CHECK_THROWS_WITH(nn::sequence_cross_entropy(logits, {0, 0, 0, 4, 0, 0}, {3, 3}),
                    Contains("target 4"));
  CHECK_THROWS_WITH(nn::sequence_cross_entropy(zeros({6, 4}), targets, {1, 1}),
                    Contains("(B,T,V)"));
}

TEST_CASE("sequence_cross_entropy gradients pass gradcheck", "[nn][loss][f64]") {
  Generator generator(7);
  const std::vector<int64_t> targets = {1, 0, 4, 2, 3, 3, 0, 1};
  require_gradcheck(
      [&](const std::vector<Tensor>& in) {
        return nn::sequence_cross_entropy(in[0], targets, {3, 1});
      },
      {randn({2, 4, 5}, generator)});
}

}  // namespace test_loss
