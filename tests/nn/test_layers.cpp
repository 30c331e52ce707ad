// tests/nn/test_layers.cpp — Linear, Embedding, Dropout, the activations,
// Sequential and the init helpers: values by hand, gradients by finite
// differences ([f64]), and the statistics of the random parts.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <optional>

#include "attograd.hpp"

namespace test_layers {

using namespace attograd;
using Catch::Matchers::Contains;

namespace {

void require_gradcheck(const GradcheckFunction& fn, const std::vector<Tensor>& inputs) {
  const GradcheckResult result = gradcheck(fn, inputs);
  INFO(result.report);
  REQUIRE(result.passed);
}

double mean_of(const std::vector<real>& values) {
  double total = 0;
  for (real v : values) total += v;
  return total / static_cast<double>(values.size());
}

double variance_of(const std::vector<real>& values) {
  const double m = mean_of(values);
  double total = 0;
  for (real v : values) total += (v - m) * (v - m);
  return total / static_cast<double>(values.size());
}

}  // namespace

// ---- Linear ------------------------------------------------------------------

TEST_CASE("Linear forward matches a hand computation", "[nn][linear]") {
  nn::Linear fc(nn::LinearOptions(3, 2));
  fc.weight.copy_from(tensor({{1, 2, 3}, {-1, 0, 2}}));
  fc.bias.copy_from(tensor({0.5, -1}));
  const Tensor x = tensor({{1, 1, 1}, {2, -1, 0.5}});
  const Tensor y = fc.forward(x);
  REQUIRE(y.shape() == Shape{2, 2});
  // Row 0: (1+2+3)+0.5 = 6.5, (−1+0+2)−1 = 0.   Row 1: (2−2+1.5)+0.5 = 2, (−2+0+1)−1 = −2.
  CHECK(y.at({0, 0}) == Approx(6.5));
  CHECK(y.at({0, 1}) == Approx(0.0).margin(1e-6));
  CHECK(y.at({1, 0}) == Approx(2.0));
  CHECK(y.at({1, 1}) == Approx(-2.0));
}

TEST_CASE("Linear without bias has one parameter and computes x W^T", "[nn][linear]") {
  nn::Linear fc(nn::LinearOptions(2, 2).bias(false));
  CHECK_FALSE(fc.bias.defined());
  REQUIRE(fc.named_parameters().size() == 1);
  CHECK(fc.named_parameters()[0].first == "weight");
  fc.weight.copy_from(tensor({{1, 2}, {3, 4}}));
  const Tensor y = fc.forward(tensor({{1, -1}}));
  CHECK(y.at({0, 0}) == Approx(-1));
  CHECK(y.at({0, 1}) == Approx(-1));
}

TEST_CASE("Linear accepts 1-D, 3-D and non-contiguous inputs", "[nn][linear]") {
  Generator generator(3);
  nn::Linear fc(nn::LinearOptions(4, 3), generator);
  const Tensor x = randn({2, 5, 4}, generator);
  const Tensor y = fc.forward(x);
  REQUIRE(y.shape() == Shape{2, 5, 3});
  // Every (b, t) row is the 2-D forward of that row.
  const Tensor rows = fc.forward(reshape(x, {10, 4}));
  const std::vector<real> a = y.to_vector(), b = rows.to_vector();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]));

  const Tensor v = fc.forward(select(x, 0, 0) /* (5,4) */);
  CHECK(v.shape() == Shape{5, 3});
  const Tensor single = fc.forward(select(select(x, 0, 1), 0, 2));  // (4) -> (3)
  REQUIRE(single.shape() == Shape{3});
  for (int64_t j = 0; j < 3; ++j) CHECK(single.at({j}) == Approx(y.at({1, 2, j})));

  // A transposed view as input: (4,6)ᵀ is a non-contiguous (6,4).
  const Tensor xt = randn({4, 6}, generator);
  const Tensor from_view = fc.forward(transpose(xt, 0, 1));
  const Tensor from_copy = fc.forward(transpose(xt, 0, 1).clone_data());
  const std::vector<real> p = from_view.to_vector(), q = from_copy.to_vector();
  for (size_t i = 0; i < p.size(); ++i) CHECK(p[i] == Approx(q[i]));
}

TEST_CASE("Linear rejects an input whose last axis is not in_features", "[nn][linear]") {
  nn::Linear fc(nn::LinearOptions(4, 3));
  CHECK_THROWS_WITH(fc.forward(zeros({2, 5})), Contains("in_features = 4") && Contains("(2,5)"));
  CHECK_THROWS_AS(nn::Linear(nn::LinearOptions(0, 3)), Error);
}

TEST_CASE("Linear initialises weight and bias uniformly in ±1/sqrt(in)", "[nn][linear][init]") {
  Generator generator(11);
  nn::Linear fc(nn::LinearOptions(16, 256), generator);  // bound 1/4
  const double bound = 0.25;
  for (const Tensor& t : {fc.weight, fc.bias}) {
    const std::vector<real> values = t.to_vector();
    double low = 1, high = -1;
    for (real v : values) {
      low = std::min(low, double(v));
      high = std::max(high, double(v));
    }
    INFO("min " << low << " max " << high);
    CHECK(low >= -bound);
    CHECK(high <= bound);
    // Wide enough to be U[−1/4, 1/4], not something narrower.
    CHECK(low < -0.9 * bound);
    CHECK(high > 0.9 * bound);
  }
  // U[−a, a] has variance a²/3; 4096 samples pin it to a few percent.
  CHECK(variance_of(fc.weight.to_vector()) == Approx(bound * bound / 3).epsilon(0.08));
  CHECK(requires_grad(fc.weight));
  CHECK(requires_grad(fc.bias));

  // The same generator seed gives the same layer.
  Generator again(11);
  nn::Linear twin(nn::LinearOptions(16, 256), again);
  CHECK(twin.weight.to_vector() == fc.weight.to_vector());

  // reset_parameters draws weight, then bias, by the same rule, in place.
  Generator once_more(11);
  const Tensor weight = twin.weight;
  twin.reset_parameters(once_more);
  CHECK(twin.weight.same(weight));
  CHECK(twin.weight.to_vector() == fc.weight.to_vector());
  CHECK(twin.bias.to_vector() == fc.bias.to_vector());
}

TEST_CASE("options read back what their chainable setters set", "[nn][options]") {
  const nn::LinearOptions linear = nn::LinearOptions(5, 2).bias(false);
  CHECK(linear.in_features() == 5);
  CHECK(linear.out_features() == 2);
  CHECK_FALSE(linear.bias());
  CHECK(nn::LinearOptions(5, 2).bias());

  const nn::EmbeddingOptions embedding = nn::EmbeddingOptions(10, 4).padding_idx(-1).sparse(true);
  CHECK(embedding.num_embeddings() == 10);
  CHECK(embedding.embedding_dim() == 4);
  CHECK(embedding.padding_idx() == std::optional<int64_t>(-1));  // as given
  CHECK(embedding.sparse());
  CHECK_FALSE(nn::EmbeddingOptions(10, 4).padding_idx().has_value());
  nn::Embedding table(embedding);
  CHECK(table.padding_idx() == std::optional<int64_t>(9));  // counted from the end
  table.set_sparse(false);
  CHECK_FALSE(table.options().sparse());

  const nn::AdditiveAttentionOptions additive = nn::AdditiveAttentionOptions(2, 3, 4).dropout(0.5);
  CHECK(additive.key_size() == 2);
  CHECK(additive.query_size() == 3);
  CHECK(additive.hidden_size() == 4);
  CHECK(additive.dropout() == 0.5);
  CHECK(nn::DotProductAttentionOptions().dropout(0.25).dropout() == 0.25);
  CHECK(nn::DotProductAttentionOptions().dropout() == 0.0);
}

TEST_CASE("Linear gradients pass gradcheck", "[nn][linear][f64]") {
  Generator generator(5);
  SECTION("2-D input with bias") {
    nn::Linear fc(nn::LinearOptions(4, 3), generator);
    require_gradcheck(
        [&](const std::vector<Tensor>& in) {
          fc.weight = in[1];
          fc.bias = in[2];
          return fc.forward(in[0]);
        },
        {randn({5, 4}, generator), fc.weight, fc.bias});
  }
  SECTION("2-D input without bias") {
    nn::Linear fc(nn::LinearOptions(4, 3).bias(false), generator);
    require_gradcheck(
        [&](const std::vector<Tensor>& in) {
          fc.weight = in[1];
          return fc.forward(in[0]);
        },
        {randn({5, 4}, generator), fc.weight});
  }
  SECTION("3-D input with bias") {
    nn::Linear fc(nn::LinearOptions(4, 3), generator);
    require_gradcheck(
        [&](const std::vector<Tensor>& in) {
          fc.weight = in[1];
          fc.bias = in[2];
          return fc.forward(in[0]);
        },
        {randn({2, 3, 4}, generator), fc.weight, fc.bias});
  }
  SECTION("3-D input without bias") {
    nn::Linear fc(nn::LinearOptions(4, 2).bias(false), generator);
    require_gradcheck(
        [&](const std::vector<Tensor>& in) {
          fc.weight = in[1];
          return fc.forward(in[0]);
        },
        {randn({3, 2, 4}, generator), fc.weight});
  }
}

TEST_CASE("Linear backward gives dW = dy^T x and db = column sums of dy", "[nn][linear]") {
  nn::Linear fc(nn::LinearOptions(2, 1));
  const Tensor x = tensor({{1, 2}, {3, 4}});
  backward(sum(fc.forward(x)));  // dy = ones (2,1)
  CHECK(grad(fc.weight).at({0, 0}) == Approx(4));
  CHECK(grad(fc.weight).at({0, 1}) == Approx(6));
  CHECK(grad(fc.bias).at({0}) == Approx(2));
}

// ---- Linear steps sharing one weight (autograd/fast/deferred_gradient.hpp) ------

namespace {

// Three steps of one layer, each reading the previous output through tanh so
// the steps depend on one another; the result mixes every step's output.
Tensor three_steps(nn::Linear& fc, const Tensor& x0) {
  Tensor x = x0, total = zeros({});
  for (int step = 0; step < 3; ++step) {
    const Tensor y = fc.forward(x);
    total = total + sum(y * y) * real(step + 1);
    x = tanh(y);
  }
  return total;
}

}  // namespace

TEST_CASE("Linear steps sharing one weight pass gradcheck on both paths", "[nn][linear][f64]") {
  Generator generator(21);
  for (const bool reference_path : {false, true}) {
    std::optional<fast::ReferencePath> reference;
    if (reference_path) reference.emplace();
    for (const bool with_bias : {true, false}) {
      INFO("reference path " << reference_path << ", bias " << with_bias);
      // A square layer (out = in) so a step's output is the next step's input;
      // batches of 1 (a decoder's word) and 3 (odd).
      for (const int64_t batch : {int64_t{1}, int64_t{3}}) {
        INFO("batch " << batch);
        nn::Linear fc(nn::LinearOptions(5, 5).bias(with_bias), generator);
        std::vector<Tensor> inputs = {randn({batch, 5}, generator), fc.weight};
        if (with_bias) inputs.push_back(fc.bias);
        require_gradcheck(
            [&](const std::vector<Tensor>& in) {
              fc.weight = in[1];
              if (with_bias) fc.bias = in[2];
              return three_steps(fc, in[0]);
            },
            inputs);
      }
    }
  }
}

TEST_CASE("a Linear weight's gradient kept as factors equals the reference path's",
          "[nn][linear]") {
  Generator generator(22);
  nn::Linear fc(nn::LinearOptions(7, 7), generator);
  const Tensor x0 = requires_grad_(randn({2, 7}, generator));
  auto gradients = [&](bool reference_path) {
    std::optional<fast::ReferencePath> reference;
    if (reference_path) reference.emplace();
    for (const Tensor& t : {x0, fc.weight, fc.bias}) zero_grad(t);
    const Tensor total = three_steps(fc, x0);
    backward(total);
    // The fast path keeps the weight's gradient as its 3 steps × 2 rows of factors.
    const auto* deferred = fast::deferred_gradient_of(fc.weight);
    CHECK((deferred != nullptr) == !reference_path);
    if (deferred != nullptr) CHECK(deferred->product_rows() == 6);
    return std::vector<std::vector<real>>{total.to_vector(), grad(x0).to_vector(),
                                          grad(fc.weight).to_vector(), grad(fc.bias).to_vector()};
  };
  const auto reference = gradients(true);
  const auto fast_path = gradients(false);
  for (size_t i = 0; i < reference.size(); ++i) {
    INFO("value " << i << " (total, dx0, dW, db)");
    REQUIRE(fast_path[i].size() == reference[i].size());
    for (size_t j = 0; j < reference[i].size(); ++j) {
      // dW's sum over the 6 rows runs in another order: equal to float rounding.
      CHECK(fast_path[i][j] == Approx(reference[i][j]).epsilon(1e-5).margin(1e-6));
    }
  }
}

TEST_CASE("linear rejects a wrong input naming the shapes", "[nn][linear]") {
  Generator generator(24);
  const Tensor weight = randn({3, 4}, generator);
  CHECK_THROWS_WITH(linear(randn({2, 5}, generator), weight, Tensor()),
                    Contains("linear: x has shape (2,5) but the weight is (3,4)"));
  CHECK_THROWS_WITH(linear(randn({2, 4}, generator), weight, randn({4}, generator)),
                    Contains("linear: the bias has shape (4); with a weight of shape (3,4)"));
}

// ---- Embedding ----------------------------------------------------------------

TEST_CASE("Embedding picks rows and shapes the output like the ids", "[nn][embedding]") {
  Generator generator(2);
  nn::Embedding embed(nn::EmbeddingOptions(10, 4), generator);
  REQUIRE(embed.weight.shape() == Shape{10, 4});
  const Tensor flat = embed.forward({3, 7, 3});
  REQUIRE(flat.shape() == Shape{3, 4});
  const Tensor batched = embed.forward({1, 2, 3, 4, 5, 6}, {2, 3});
  REQUIRE(batched.shape() == Shape{2, 3, 4});
  for (int64_t d = 0; d < 4; ++d) {
    CHECK(flat.at({0, d}) == embed.weight.at({3, d}));
    CHECK(flat.at({1, d}) == embed.weight.at({7, d}));
    CHECK(flat.at({2, d}) == embed.weight.at({3, d}));
    CHECK(batched.at({1, 2, d}) == embed.weight.at({6, d}));
  }
  CHECK_THROWS_WITH(embed.forward({1, 2, 3}, {2, 2}), Contains("3 ids"));
}

TEST_CASE("Embedding weights start N(0,1)", "[nn][embedding][init]") {
  Generator generator(8);
  nn::Embedding embed(nn::EmbeddingOptions(200, 50), generator);
  const std::vector<real> values = embed.weight.to_vector();  // 10,000 draws
  CHECK(std::abs(mean_of(values)) < 4 * 0.01);
  CHECK(variance_of(values) == Approx(1.0).epsilon(0.05));
}

TEST_CASE("Embedding rejects out-of-range ids naming the id and the vocabulary",
          "[nn][embedding]") {
  nn::Embedding embed(nn::EmbeddingOptions(5, 2));
  CHECK_THROWS_WITH(embed.forward({0, 5}), Contains("id 5") && Contains("vocabulary of 5"));
  CHECK_THROWS_WITH(embed.forward({-1}), Contains("id -1"));
  CHECK_THROWS_AS(nn::Embedding(nn::EmbeddingOptions(5, 2).padding_idx(5)), Error);
}

TEST_CASE("Embedding padding row starts at zero and never gets a gradient", "[nn][embedding]") {
  Generator generator(4);
  nn::Embedding embed(nn::EmbeddingOptions(6, 3).padding_idx(0), generator);
  for (int64_t d = 0; d < 3; ++d) CHECK(embed.weight.at({0, d}) == 0);
  CHECK(embed.weight.at({1, 0}) != 0);

  // Ids 2 twice, 0 (padding) twice. The output is weighted so each position's
  // gradient differs: dy[p, d] = p + 1.
  const std::vector<int64_t> ids = {2, 0, 2, 4, 0};
  const Tensor y = embed.forward(ids);
  const Tensor weights = reshape(arange(1, 6), {5, 1});
  backward(sum(y * weights));
  const Tensor g = grad(embed.weight);
  for (int64_t d = 0; d < 3; ++d) {
    CHECK(g.at({0, d}) == 0);      // padding: exactly zero although used twice
    CHECK(g.at({2, d}) == 1 + 3);  // repeated: both contributions
    CHECK(g.at({4, d}) == 4);
    CHECK(g.at({1, d}) == 0);  // unused
  }

  // A negative padding_idx counts from the end, as in PyTorch.
  nn::Embedding last(nn::EmbeddingOptions(6, 3).padding_idx(-1));
  REQUIRE(last.padding_idx().has_value());
  CHECK(*last.padding_idx() == 5);
  for (int64_t d = 0; d < 3; ++d) CHECK(last.weight.at({5, d}) == 0);
}

TEST_CASE("Embedding gradient passes gradcheck with a repeated index", "[nn][embedding][f64]") {
  Generator generator(6);
  // The padding id (1) is set but not looked up: the other rows must still be exact.
  nn::Embedding embed(nn::EmbeddingOptions(5, 3).padding_idx(1), generator);
  require_gradcheck(
      [&](const std::vector<Tensor>& in) {
        embed.weight = in[0];
        return embed.forward({3, 0, 3, 4, 3, 2}, {2, 3});
      },
      {embed.weight});
}

// ---- Dropout ----------------------------------------------------------------------

TEST_CASE("Dropout zeroes a fraction p and preserves the mean", "[nn][dropout]") {
  const int64_t n = 40000;
  for (double p : {0.1, 0.5, 0.8}) {
    INFO("p = " << p);
    Generator generator(21);
    nn::Dropout dropout(p, generator);
    const std::vector<real> y = dropout.forward(ones({200, n / 200})).to_vector();
    int64_t dropped = 0;
    const double scale = 1.0 / (1.0 - p);
    for (real v : y) {
      if (v == 0) {
        ++dropped;
      } else {
        REQUIRE(v == Approx(scale));
      }
    }
    // Binomial(n, p): 5 standard deviations.
    const double fraction = static_cast<double>(dropped) / n;
    CHECK(std::abs(fraction - p) < 5 * std::sqrt(p * (1 - p) / n));
    // y_i = scale·Bernoulli(1−p) has mean 1 and variance p/(1−p).
    CHECK(std::abs(mean_of(y) - 1.0) < 5 * std::sqrt(p / (1 - p) / n));
  }
}

TEST_CASE("Dropout is the identity in eval mode and for p = 0", "[nn][dropout]") {
  const Tensor x = randn({50, 20});
  nn::Dropout dropout(0.5);
  dropout.eval();
  CHECK(dropout.forward(x).to_vector() == x.to_vector());
  dropout.train();
  CHECK(dropout.forward(x).to_vector() != x.to_vector());
  nn::Dropout none(0.0);
  CHECK(none.forward(x).to_vector() == x.to_vector());
}

TEST_CASE("Dropout rejects p outside 0 ≤ p < 1", "[nn][dropout]") {
  CHECK_THROWS_WITH(nn::Dropout(1.0), Contains("[0, 1)"));
  CHECK_THROWS_AS(nn::Dropout(-0.1), Error);
  CHECK_THROWS_AS(nn::Dropout(1.5), Error);
  CHECK_THROWS_AS(nn::Dropout(std::nan("")), Error);
}

TEST_CASE("Dropout passes gradient only through kept elements, scaled", "[nn][dropout]") {
  nn::Dropout dropout(0.25);
  const Tensor x = requires_grad_(randn({400}));
  const Tensor y = dropout.forward(x);
  backward(sum(y));
  const std::vector<real> values = y.to_vector(), inputs = x.to_vector(),
                          gradient = grad(x).to_vector();
  int64_t kept = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] == 0) {
      CHECK(gradient[i] == 0);
    } else {
      ++kept;
      CHECK(gradient[i] == Approx(1 / 0.75));
      CHECK(values[i] == Approx(inputs[i] / 0.75));
    }
  }
  CHECK(kept > 0);
  CHECK(kept < 400);
}

TEST_CASE("Dropout masks are fixed by the generator's seed", "[nn][dropout]") {
  const Tensor x = ones({1000});
  Generator a(9), b(9), c(10);
  nn::Dropout first(0.5, a), second(0.5, b), third(0.5, c);
  const std::vector<real> y1 = first.forward(x).to_vector();
  CHECK(y1 == second.forward(x).to_vector());
  CHECK(y1 != third.forward(x).to_vector());
  CHECK(y1 != first.forward(x).to_vector());  // a new mask every call
}

// ---- Activations and Sequential -----------------------------------------------------

TEST_CASE("Activation layers compute ReLU, tanh and sigmoid", "[nn][activation]") {
  const Tensor x = tensor({-2, -0.5, 0.5, 3});
  const std::vector<real> r = nn::ReLU().forward(x).to_vector();
  const std::vector<real> t = nn::Tanh().forward(x).to_vector();
  const std::vector<real> s = nn::Sigmoid().forward(x).to_vector();
  const std::vector<real> in = x.to_vector();
  for (size_t i = 0; i < in.size(); ++i) {
    CHECK(r[i] == Approx(std::max(in[i], real(0))));
    CHECK(t[i] == Approx(std::tanh(in[i])));
    CHECK(s[i] == Approx(1 / (1 + std::exp(-in[i]))));
  }
}

TEST_CASE("Sequential applies its layers in order", "[nn][sequential]") {
  Generator generator(12);
  nn::Sequential mlp;
  auto first = mlp.push_back(std::make_shared<nn::Linear>(nn::LinearOptions(3, 5), generator));
  mlp.push_back(std::make_shared<nn::Tanh>());
  auto last = mlp.push_back(std::make_shared<nn::Linear>(nn::LinearOptions(5, 2), generator));
  REQUIRE(mlp.size() == 3);
  CHECK(mlp.at(1)->type_name() == "Tanh");
  CHECK_THROWS_WITH(mlp.at(3), Contains("3 layers"));

  const Tensor x = randn({4, 3}, generator);
  const std::vector<real> chained = mlp.forward(x).to_vector();
  const std::vector<real> by_hand = last->forward(tanh(first->forward(x))).to_vector();
  REQUIRE(chained.size() == 8);
  for (size_t i = 0; i < chained.size(); ++i) CHECK(chained[i] == Approx(by_hand[i]));

  nn::Sequential empty;
  CHECK(empty.forward(x).same(x));

  nn::Sequential listed{std::make_shared<nn::ReLU>(), std::make_shared<nn::Sigmoid>()};
  CHECK(listed.size() == 2);
  CHECK(listed.children()[1].first == "1");
}

// ---- init helpers ----------------------------------------------------------------------

TEST_CASE("uniform_ and normal_ draw the requested distributions in place", "[nn][init]") {
  Generator generator(31);
  Tensor t = requires_grad_(zeros({100, 120}));
  const Tensor same = t;
  nn::uniform_(t, -2, 3, generator);
  CHECK(t.same(same));
  CHECK(requires_grad(t));
  const std::vector<real> u = t.to_vector();
  CHECK(*std::min_element(u.begin(), u.end()) >= -2);
  CHECK(*std::max_element(u.begin(), u.end()) < 3);
  // U[a,b): mean (a+b)/2 = 0.5, variance (b−a)²/12; n = 12,000.
  CHECK(std::abs(mean_of(u) - 0.5) < 5 * std::sqrt(25.0 / 12 / 12000));
  CHECK(variance_of(u) == Approx(25.0 / 12).epsilon(0.05));

  nn::normal_(t, 1.5, 0.5, generator);
  const std::vector<real> g = t.to_vector();
  CHECK(std::abs(mean_of(g) - 1.5) < 5 * 0.5 / std::sqrt(12000.0));
  CHECK(std::sqrt(variance_of(g)) == Approx(0.5).epsilon(0.03));

  nn::zeros_(t);
  for (real v : t.to_vector()) REQUIRE(v == 0);
  nn::ones_(t);
  for (real v : t.to_vector()) REQUIRE(v == 1);
  CHECK_THROWS_AS(nn::uniform_(t, 1, 0), Error);
}

TEST_CASE("init helpers write through a view and leave the rest alone", "[nn][init]") {
  Tensor t = zeros({4, 6});
  Tensor column = select(t, 1, 2);  // a strided view of (4)
  nn::constant_(column, 7);
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 6; ++j) CHECK(t.at({i, j}) == (j == 2 ? 7 : 0));
  }
}

TEST_CASE("xavier_uniform_ uses PyTorch's fans and bound", "[nn][init]") {
  Tensor w = zeros({300, 100});
  const nn::Fans fans = nn::compute_fans(w);
  CHECK(fans.fan_in == 100);
  CHECK(fans.fan_out == 300);
  const nn::Fans conv = nn::compute_fans(zeros({8, 3, 5, 5}));
  CHECK(conv.fan_in == 75);
  CHECK(conv.fan_out == 200);
  CHECK_THROWS_WITH(nn::compute_fans(zeros({5})), Contains("at least 2 dims"));

  Generator generator(17);
  const double gain = 2.0;
  nn::xavier_uniform_(w, gain, generator);
  const double bound = gain * std::sqrt(6.0 / 400);  // ≈ 0.2449
  const std::vector<real> values = w.to_vector();
  const double low = *std::min_element(values.begin(), values.end());
  const double high = *std::max_element(values.begin(), values.end());
  CHECK(low >= -bound);
  CHECK(high <= bound);
  CHECK(low < -0.99 * bound);
  CHECK(high > 0.99 * bound);
  // Glorot's variance: gain² · 2 / (fan_in + fan_out).
  CHECK(variance_of(values) == Approx(gain * gain * 2 / 400).epsilon(0.05));

  nn::xavier_normal_(w, 1.0, generator);
  CHECK(variance_of(w.to_vector()) == Approx(2.0 / 400).epsilon(0.05));
}

}  // namespace test_layers
