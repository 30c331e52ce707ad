// tests/nn/test_attention.cpp — masked_softmax, DotProductAttention and
// AdditiveAttention.
//
// Values are checked against small cases worked out from the definitions
// (softmax over a row's valid prefix, qᵀk/√d, w_vᵀ tanh(W_q q + W_k k)) and
// d2l's own examples (queries against keys of ones give uniform weights over
// the valid keys). Gradients are checked by central differences ([f64],
// ε = 1e-6, passing when |analytic − numeric| ≤ 1e-6 + 1e-5·|numeric|; every
// function here is smooth, so there are no kinks to avoid). Padding is
// checked to have no influence at all: changing a masked key or value changes
// no output, and masked positions receive a gradient of exactly 0.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "autograd/gradcheck.hpp"
#include "autograd/ops.hpp"
#include "nn/attention.hpp"
#include "tensor/factory.hpp"

namespace test_attention {

using namespace attograd;
using Catch::Matchers::Contains;

namespace {

const double kClose = std::is_same_v<real, double> ? 1e-12 : 1e-5;

void require_gradcheck(const GradcheckFunction& fn, const std::vector<Tensor>& inputs) {
  const GradcheckResult result = gradcheck(fn, inputs);
  INFO(result.report);
  REQUIRE(result.passed);
}

// softmax of the first n entries of `row`, zeros after: the definition.
std::vector<double> prefix_softmax(const std::vector<double>& row, int64_t n) {
  std::vector<double> out(row.size(), 0.0);
  double total = 0;
  for (int64_t i = 0; i < n; ++i) total += std::exp(row[i]);
  for (int64_t i = 0; i < n; ++i) out[i] = std::exp(row[i]) / total;
  return out;
}

void check_values(const Tensor& t, const std::vector<double>& expected) {
  const std::vector<real> values = t.to_vector();
  REQUIRE(values.size() == expected.size());
  for (size_t i = 0; i < values.size(); ++i) {
    INFO("element " << i);
    CHECK(values[i] == Approx(expected[i]).margin(kClose));
  }
}

Tensor from_doubles(const std::vector<double>& values, const Shape& shape) {
  return from_vector(std::vector<real>(values.begin(), values.end()), shape);
}

// d2l's example: values are arange(40) as (10,4), the same for both examples.
Tensor d2l_values() { return contiguous(expand(reshape(arange(0, 40), {1, 10, 4}), {2, 10, 4})); }

// Largest |a − b| over all elements.
double max_difference(const Tensor& a, const Tensor& b) {
  const std::vector<real> x = a.to_vector(), y = b.to_vector();
  REQUIRE(x.size() == y.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(double(x[i]) - y[i]));
  return worst;
}

}  // namespace

// ---------------------------------------------------------------- masked_softmax

TEST_CASE("masked_softmax: softmax over each row's valid prefix, zeros after", "[attention]") {
  const std::vector<double> raw = {0.3,  -1.2, 0.8, 2.0, 1.0, 0.5, -0.4, 0.1,
                                   -0.7, 0.9,  1.5, 0.2, 0.0, 0.0, 0.6,  -2.0};
  const Tensor scores = from_doubles(raw, {2, 2, 4});
  // The expected (2,2,4) result when row r keeps lens[r] entries.
  auto expected = [&](const std::vector<int64_t>& lens) {
    std::vector<double> all;
    for (int r = 0; r < 4; ++r) {
      const std::vector<double> y = prefix_softmax(
          std::vector<double>(raw.begin() + 4 * r, raw.begin() + 4 * r + 4), lens[r]);
      all.insert(all.end(), y.begin(), y.end());
    }
    return all;
  };

  SECTION("one valid length per example, shared by its queries") {
    check_values(masked_softmax(scores, {2, 3}), expected({2, 2, 3, 3}));
  }
  SECTION("one valid length per query") {
    const Tensor y = masked_softmax(scores, {1, 3, 2, 4});
    check_values(y, expected({1, 3, 2, 4}));
    CHECK(y.at({0, 0, 0}) == real(1));  // a single valid key takes all the weight
  }
  SECTION("no valid lengths: every key counts") {
    check_values(masked_softmax(scores, {}), expected({4, 4, 4, 4}));
  }
}

TEST_CASE("masked_softmax: masked entries are never read, even when infinite or NaN",
          "[attention]") {
  const real inf = std::numeric_limits<real>::infinity();
  const real nan = std::numeric_limits<real>::quiet_NaN();
  const Tensor scores = from_vector({1, 2, inf, nan, 0, 0, 0, -inf}, {2, 1, 4});
  const double e = std::exp(1.0);
  check_values(masked_softmax(scores, {2, 3}),
               {1 / (1 + e), e / (1 + e), 0, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0});
}

TEST_CASE("masked_softmax: masked positions get a gradient of exactly 0", "[attention]") {
  Generator generator(2);
  const Tensor scores = requires_grad_(randn({2, 3, 5}, generator));
  const Tensor weights = randn({2, 3, 5}, generator);
  backward(sum(masked_softmax(scores, {2, 4}) * weights));
  const Tensor g = grad(scores);
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t q = 0; q < 3; ++q) {
      for (int64_t k = b == 0 ? 2 : 4; k < 5; ++k) CHECK(g.at({b, q, k}) == real(0));
      CHECK(g.at({b, q, 0}) != real(0));
    }
  }
}

TEST_CASE("masked_softmax: gradcheck with per-example and per-query lengths", "[attention][f64]") {
  Generator generator(1);
  require_gradcheck(
      [](const std::vector<Tensor>& in) {
        return masked_softmax(in[0], {3, 1});
      },
      {randn({2, 3, 4}, generator)});
  require_gradcheck(
      [](const std::vector<Tensor>& in) {
        return masked_softmax(in[0], {1, 2, 3, 4, 4, 2});
      },
      {randn({2, 3, 4}, generator)});
  // A non-contiguous input (a transposed view).
  require_gradcheck(
      [](const std::vector<Tensor>& in) {
        return masked_softmax(transpose(in[0], 1, 2), {2, 3});
      },
      {randn({2, 9, 3}, generator)});
}

TEST_CASE("masked_softmax: bad valid lengths are errors naming the values and the shape",
          "[attention]") {
  const Tensor scores = zeros({2, 3, 4});
  CHECK_THROWS_WITH(masked_softmax(scores, {2, 0}),
                    Contains("valid length 0 at position 1") && Contains("(2,3,4)"));
  CHECK_THROWS_WITH(masked_softmax(scores, {-1, 2}), Contains("valid length -1"));
  CHECK_THROWS_WITH(masked_softmax(scores, {2, 5}),
                    Contains("valid length 5") && Contains("Tk = 4"));
  CHECK_THROWS_WITH(masked_softmax(scores, {1, 2, 3}),
                    Contains("3 valid lengths [1, 2, 3]") && Contains("B·Tq = 6"));
  CHECK_THROWS_WITH(masked_softmax(zeros({3, 4}), {1, 2, 3}),
                    Contains("masked_softmax") && Contains("(3,4)"));
}

// ---------------------------------------------------------------- dot product

TEST_CASE("DotProductAttention: keys of ones give uniform weights over the valid keys (d2l)",
          "[attention]") {
  Generator generator(0);
  nn::DotProductAttention attention(nn::DotProductAttentionOptions().dropout(0.5), generator);
  attention.eval();
  const Tensor queries = randn({2, 1, 2}, generator);
  const Tensor out = attention.forward(queries, ones({2, 10, 2}), d2l_values(), {2, 6});
  REQUIRE(out.shape() == Shape{2, 1, 4});
  check_values(out, {2, 3, 4, 5, 10, 11, 12, 13});  // the mean of the first 2 and 6 value rows
  const Tensor& weights = attention.attention_weights();
  REQUIRE(weights.shape() == Shape{2, 1, 10});
  for (int64_t k = 0; k < 10; ++k) {
    CHECK(weights.at({0, 0, k}) == Approx(k < 2 ? 0.5 : 0.0).margin(kClose));
    CHECK(weights.at({1, 0, k}) == Approx(k < 6 ? 1.0 / 6 : 0.0).margin(kClose));
  }
}

TEST_CASE("DotProductAttention: a hand-computed case", "[attention]") {
  // One query (1, 0) against the keys (1,0), (0,1), (2,0) with d = 2: scores
  // (1, 0, 2)/√2. Values 1, 2, 3 are averaged with the softmax of the scores.
  nn::DotProductAttention attention;
  const Tensor out =
      attention.forward(from_vector({1, 0}, {1, 1, 2}), from_vector({1, 0, 0, 1, 2, 0}, {1, 3, 2}),
                        from_vector({1, 2, 3}, {1, 3, 1}));
  const double s = 1 / std::sqrt(2.0);
  const std::vector<double> w = prefix_softmax({s, 0, 2 * s}, 3);
  check_values(attention.attention_weights(), w);
  check_values(out, {w[0] * 1 + w[1] * 2 + w[2] * 3});
  // With valid length 2 the third key is ignored.
  const Tensor masked =
      attention.forward(from_vector({1, 0}, {1, 1, 2}), from_vector({1, 0, 0, 1, 2, 0}, {1, 3, 2}),
                        from_vector({1, 2, 3}, {1, 3, 1}), {2});
  const std::vector<double> w2 = prefix_softmax({s, 0, 2 * s}, 2);
  check_values(masked, {w2[0] * 1 + w2[1] * 2});
}

TEST_CASE("DotProductAttention: gradcheck of queries, keys and values", "[attention][f64]") {
  Generator generator(4);
  nn::DotProductAttention attention;
  require_gradcheck(
      [&](const std::vector<Tensor>& in) {
        return attention.forward(in[0], in[1], in[2], {3, 1, 4, 2, 2, 4});  // one per query
      },
      {randn({2, 3, 5}, generator), randn({2, 4, 5}, generator), randn({2, 4, 3}, generator)});
  require_gradcheck(
      [&](const std::vector<Tensor>& in) {
        return attention.forward(in[0], in[1], in[2], {2, 4});
      },
      {randn({2, 1, 2}, generator), randn({2, 4, 2}, generator), randn({2, 4, 6}, generator)});
}

// ---------------------------------------------------------------- additive

TEST_CASE("AdditiveAttention: keys of ones give uniform weights over the valid keys (d2l)",
          "[attention]") {
  Generator generator(0);
  nn::AdditiveAttention attention(nn::AdditiveAttentionOptions(2, 20, 8).dropout(0.1), generator);
  attention.eval();
  const Tensor queries = randn({2, 1, 20}, generator);
  const Tensor out = attention.forward(queries, ones({2, 10, 2}), d2l_values(), {2, 6});
  REQUIRE(out.shape() == Shape{2, 1, 4});
  check_values(out, {2, 3, 4, 5, 10, 11, 12, 13});
  const Tensor& weights = attention.attention_weights();
  REQUIRE(weights.shape() == Shape{2, 1, 10});
  CHECK(weights.at({0, 0, 1}) == Approx(0.5).margin(kClose));
  CHECK(weights.at({0, 0, 2}) == real(0));
  CHECK(weights.at({1, 0, 5}) == Approx(1.0 / 6).margin(kClose));
  CHECK(weights.at({1, 0, 6}) == real(0));
}

TEST_CASE("AdditiveAttention: a hand-computed case, and PyTorch's parameter names", "[attention]") {
  nn::AdditiveAttention attention(nn::AdditiveAttentionOptions(2, 2, 2));
  std::vector<std::string> names;
  for (const auto& [name, tensor] : attention.named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"W_k.weight", "W_q.weight", "w_v.weight"});
  CHECK(attention.W_k->weight.shape() == Shape{2, 2});
  CHECK(attention.w_v->weight.shape() == Shape{1, 2});
  // W_q = W_k = I and w_v = (1, 1): score(q, k) = tanh(q₁ + k₁) + tanh(q₂ + k₂).
  attention.W_q->weight.copy_from(eye(2));
  attention.W_k->weight.copy_from(eye(2));
  attention.w_v->weight.fill_(1);
  const Tensor out =
      attention.forward(from_vector({0.5, -0.5}, {1, 1, 2}), from_vector({1, 0, 0, 1}, {1, 2, 2}),
                        from_vector({10, 20}, {1, 2, 1}));
  const double first = std::tanh(1.5) + std::tanh(-0.5);
  const double second = std::tanh(0.5) + std::tanh(0.5);
  const std::vector<double> w = prefix_softmax({first, second}, 2);
  check_values(attention.attention_weights(), w);
  check_values(out, {10 * w[0] + 20 * w[1]});
}

TEST_CASE("AdditiveAttention: W_q acts on queries and W_k on keys, by hand", "[attention]") {
  // Different maps for queries and keys, so a swap of the two shows:
  // W_q = 2·I, W_k = [[0, 1], [1, 0]], w_v = (1, −0.5).
  nn::AdditiveAttention attention(nn::AdditiveAttentionOptions(2, 2, 2));
  attention.W_q->weight.copy_from(eye(2) * real(2));
  attention.W_k->weight.copy_from(from_vector({0, 1, 1, 0}, {2, 2}));
  attention.w_v->weight.copy_from(from_vector({1, -0.5}, {1, 2}));
  const std::vector<double> q = {0.3, -0.2};
  const std::vector<std::vector<double>> keys = {{1, 0}, {0.5, -1}, {-0.4, 0.8}};
  std::vector<double> scores;
  for (const std::vector<double>& k : keys) {
    // W_q q = (0.6, −0.4); W_k k = (k₂, k₁).
    scores.push_back(std::tanh(2 * q[0] + k[1]) - 0.5 * std::tanh(2 * q[1] + k[0]));
  }
  const Tensor out = attention.forward(from_doubles(q, {1, 1, 2}),
                                       from_doubles({1, 0, 0.5, -1, -0.4, 0.8}, {1, 3, 2}),
                                       from_doubles({1, 10, 100}, {1, 3, 1}), {3});
  const std::vector<double> w = prefix_softmax(scores, 3);
  check_values(attention.attention_weights(), w);
  check_values(out, {w[0] + 10 * w[1] + 100 * w[2]});
}

TEST_CASE("AdditiveAttention: project_keys once gives the same as forward", "[attention]") {
  Generator generator(6);
  nn::AdditiveAttention attention(nn::AdditiveAttentionOptions(3, 5, 4), generator);
  const Tensor queries = randn({2, 2, 5}, generator), keys = randn({2, 6, 3}, generator);
  const Tensor values = randn({2, 6, 2}, generator);
  const Tensor direct = attention.forward(queries, keys, values, {6, 3});
  const Tensor projected =
      attention.forward_projected(queries, attention.project_keys(keys), values, {6, 3});
  CHECK(max_difference(direct, projected) == 0);

  // weights() gives the same α, with history, and exactly 0 past each valid length.
  const Tensor weights = attention.weights(queries, attention.project_keys(keys), {6, 3});
  REQUIRE(weights.shape() == Shape{2, 2, 6});
  CHECK(max_difference(weights, attention.attention_weights()) == 0);
  CHECK(max_difference(bmm(weights, values), direct) == 0);
  CHECK(requires_grad(weights));
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 3; j < 6; ++j) CHECK(weights.at({1, i, j}) == 0);
  }
  CHECK_THROWS_WITH(attention.weights(queries, keys, {6, 3}),
                    Contains("hidden_size = 4") && Contains("(2,6,3)"));
}

TEST_CASE("AdditiveAttention: gradcheck of inputs and parameters", "[attention][f64]") {
  Generator generator(5);
  nn::AdditiveAttention attention(nn::AdditiveAttentionOptions(3, 4, 5), generator);
  require_gradcheck(
      [&](const std::vector<Tensor>& in) {
        attention.W_k->weight = in[3];
        attention.W_q->weight = in[4];
        attention.w_v->weight = in[5];
        return attention.forward(in[0], in[1], in[2], {4, 2});
      },
      {randn({2, 3, 4}, generator), randn({2, 5, 3}, generator), randn({2, 5, 2}, generator),
       attention.W_k->weight, attention.W_q->weight, attention.w_v->weight});
}

// ---------------------------------------------------------------- both layers

TEST_CASE("Attention: masked keys and values have no influence and get no gradient",
          "[attention]") {
  Generator generator(8);
  nn::DotProductAttention dot;
  nn::AdditiveAttention additive(nn::AdditiveAttentionOptions(4, 4, 6), generator);
  const Tensor queries = randn({2, 3, 4}, generator);
  const Tensor keys = randn({2, 5, 4}, generator), values = randn({2, 5, 3}, generator);
  // Change every key and value at or after each example's valid length.
  Tensor other_keys = keys.clone_data(), other_values = values.clone_data();
  const std::vector<int64_t> lens = {2, 4};
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t k = lens[b]; k < 5; ++k) {
      for (int64_t i = 0; i < 4; ++i) other_keys.set({b, k, i}, real(100) + real(i));
      for (int64_t i = 0; i < 3; ++i) other_values.set({b, k, i}, real(-50));
    }
  }
  auto check_layer = [&](auto& layer) {
    const Tensor k = requires_grad_(keys.clone_data()), v = requires_grad_(values.clone_data());
    const Tensor out = layer.forward(queries, k, v, lens);
    CHECK(max_difference(out, layer.forward(queries, other_keys, other_values, lens)) == 0);
    backward(sum(out * out));
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t j = lens[b]; j < 5; ++j) {
        CHECK(grad(k).at({b, j, 0}) == real(0));
        CHECK(grad(v).at({b, j, 0}) == real(0));
      }
      CHECK(grad(v).at({b, 0, 0}) != real(0));
    }
  };
  check_layer(dot);
  check_layer(additive);
}

TEST_CASE("Attention: dropout acts on the weights in training only, kept weights are before it",
          "[attention]") {
  Generator generator(9);
  nn::DotProductAttention attention(nn::DotProductAttentionOptions().dropout(0.5), generator);
  const Tensor queries = randn({4, 3, 8}, generator), keys = randn({4, 6, 8}, generator);
  const Tensor values = randn({4, 6, 5}, generator);
  attention.eval();
  const Tensor expected = attention.forward(queries, keys, values);
  attention.train();
  const Tensor dropped = attention.forward(queries, keys, values);
  CHECK(max_difference(expected, dropped) > 0.1);
  // The kept weights still sum to 1 on every row: they are taken before dropout.
  const Tensor row_sums = sum(attention.attention_weights(), {2});
  for (real total : row_sums.to_vector()) CHECK(total == Approx(1).margin(1e-5));
}

TEST_CASE("Attention: bad shapes and lengths name the layer, the shapes and the values",
          "[attention]") {
  Generator generator(10);
  nn::DotProductAttention dot;
  nn::AdditiveAttention additive(nn::AdditiveAttentionOptions(2, 20, 8), generator);
  const Tensor queries = zeros({2, 1, 20}), keys = zeros({2, 10, 2}), values = zeros({2, 10, 4});

  // Batch sizes that differ.
  CHECK_THROWS_WITH(additive.forward(queries, zeros({3, 10, 2}), values),
                    Contains("AdditiveAttention(key_size=2, query_size=20, hidden_size=8)") &&
                        Contains("batch sizes differ") && Contains("(3,10,2)"));
  CHECK_THROWS_WITH(
      dot.forward(zeros({2, 1, 2}), keys, zeros({1, 10, 4})),
      Contains("DotProductAttention") && Contains("batch sizes differ") && Contains("(1,10,4)"));
  // Key and query sizes that do not fit the layer.
  CHECK_THROWS_WITH(
      additive.forward(queries, zeros({2, 10, 3}), values),
      Contains("AdditiveAttention") && Contains("(2,10,3)") && Contains("key_size = 2"));
  CHECK_THROWS_WITH(additive.forward(zeros({2, 1, 7}), keys, values),
                    Contains("(2,1,7)") && Contains("query_size = 20"));
  CHECK_THROWS_WITH(dot.forward(zeros({2, 1, 3}), keys, values),
                    Contains("DotProductAttention") && Contains("(2,1,3)") && Contains("(2,10,2)"));
  // Keys and values that do not pair up, and inputs that are not 3-D.
  CHECK_THROWS_WITH(additive.forward(queries, keys, zeros({2, 9, 4})),
                    Contains("10 keys but 9 values"));
  CHECK_THROWS_WITH(dot.forward(zeros({2, 2}), keys, values),
                    Contains("DotProductAttention") && Contains("queries of shape (2,2)"));
  // Valid lengths longer than the sequence, or negative.
  CHECK_THROWS_WITH(
      additive.forward(queries, keys, values, {2, 11}),
      Contains("AdditiveAttention") && Contains("valid length 11") && Contains("Tk = 10"));
  CHECK_THROWS_WITH(
      dot.forward(zeros({2, 1, 2}), keys, values, {-3, 2}),
      Contains("DotProductAttention") && Contains("valid length -3") && Contains("[-3, 2]"));
  CHECK_THROWS_WITH(dot.forward(zeros({2, 1, 2}), keys, values, {0, 2}),
                    Contains("valid length 0"));
  CHECK_THROWS_WITH(nn::AdditiveAttention(nn::AdditiveAttentionOptions(0, 2, 2)),
                    Contains("must all be positive"));
}

}  // namespace test_attention
