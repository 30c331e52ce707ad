// tests/nn/test_multihead_attention.cpp — MultiHeadAttention against a loop
// over heads written with primitive ops, masks, gradients and errors.
//
// Gradients by central differences in double ([f64], ε = 1e-6, passing when
// |analytic − numeric| ≤ 1e-6 + 1e-5·|numeric|); attention is smooth, so
// there are no kinks to avoid.
#include <catch2/catch.hpp>
#include <cmath>
#include <type_traits>
#include <vector>

#include "autograd/gradcheck.hpp"
#include "autograd/ops.hpp"
#include "nn/multihead_attention.hpp"
#include "tensor/factory.hpp"
#include "tests/support/tensor_checks.hpp"

namespace test_multihead_attention {

using namespace attograd;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

const double kClose = std::is_same_v<real, double> ? 1e-12 : 1e-5;

void check_close(const Tensor& a, const Tensor& b, double tolerance = kClose) {
  testing::check_close(a, b, tolerance);
}

// The definition, one head and one example at a time: head i uses rows
// i·d/h … (i+1)·d/h − 1 of W_q, W_k, W_v, softmax over the valid keys of
// each query, and the heads side by side go through W_o.
Tensor per_head_reference(nn::MultiHeadAttention& layer, const Tensor& queries, const Tensor& keys,
                          const Tensor& values, const std::vector<int64_t>& lens_per_query) {
  const int64_t B = queries.shape()[0], Tq = queries.shape()[1];
  const int64_t h = layer.options().num_heads(), d = layer.options().num_hiddens(), dh = d / h;
  std::vector<Tensor> examples;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<Tensor> heads;
    for (int64_t i = 0; i < h; ++i) {
      const Tensor q =
          matmul(select(queries, 0, b), transpose(narrow(layer.W_q->weight, 0, i * dh, dh), 0, 1));
      const Tensor k =
          matmul(select(keys, 0, b), transpose(narrow(layer.W_k->weight, 0, i * dh, dh), 0, 1));
      const Tensor v =
          matmul(select(values, 0, b), transpose(narrow(layer.W_v->weight, 0, i * dh, dh), 0, 1));
      std::vector<Tensor> rows;
      for (int64_t t = 0; t < Tq; ++t) {
        const int64_t n = lens_per_query[b * Tq + t];
        const Tensor scores = matmul(narrow(q, 0, t, 1), transpose(narrow(k, 0, 0, n), 0, 1)) /
                              real(std::sqrt(static_cast<double>(dh)));  // (1,n)
        rows.push_back(matmul(softmax(scores, 1), narrow(v, 0, 0, n)));  // (1,dh)
      }
      heads.push_back(cat(rows, 0));  // (Tq,dh)
    }
    examples.push_back(matmul(cat(heads, 1), transpose(layer.W_o->weight, 0, 1)));  // (Tq,d)
  }
  return stack(examples, 0);
}

}  // namespace

TEST_CASE("transpose_qkv splits heads and transpose_output joins them", "[multihead]") {
  const Tensor x = reshape(arange(0, 2 * 3 * 8), {2, 3, 8});
  const Tensor split = nn::transpose_qkv(x, 4);
  REQUIRE(split.shape() == Shape{8, 3, 2});
  // Head 1 of example 0 is columns 2..3 of example 0: row 1 of the split.
  CHECK(split.to_vector()[1 * 6 + 0] == 2);
  CHECK(split.to_vector()[1 * 6 + 1] == 3);
  CHECK(split.to_vector()[1 * 6 + 2] == 10);
  check_close(nn::transpose_output(split, 4), x, 0);
  CHECK_THROWS_WITH(nn::transpose_qkv(x, 3),
                    StartsWith("transpose_qkv: input of shape (2,3,8) cannot be split into 3 "
                               "heads"));
}

TEST_CASE("MultiHeadAttention equals a loop over heads of primitive ops", "[multihead]") {
  Generator generator(7);
  // key, query and value sizes all differ; 4 heads of 3 numbers.
  nn::MultiHeadAttention layer(nn::MultiHeadAttentionOptions(5, 6, 7, 12, 4), generator);
  const Tensor queries = randn({2, 3, 6}, generator);
  const Tensor keys = randn({2, 4, 5}, generator);
  const Tensor values = randn({2, 4, 7}, generator);
  SECTION("lengths per example, repeated over queries and heads") {
    const Tensor out = layer.forward(queries, keys, values, {2, 4});
    REQUIRE(out.shape() == Shape{2, 3, 12});
    check_close(out, per_head_reference(layer, queries, keys, values, {2, 2, 2, 4, 4, 4}));
  }
  SECTION("lengths per query") {
    const std::vector<int64_t> lens = {1, 3, 2, 4, 1, 4};
    check_close(layer.forward(queries, keys, values, lens),
                per_head_reference(layer, queries, keys, values, lens));
  }
  SECTION("no lengths, and the kept weights") {
    check_close(layer.forward(queries, keys, values),
                per_head_reference(layer, queries, keys, values, std::vector<int64_t>(6, 4)));
    const Tensor& weights = layer.attention_weights();
    REQUIRE(weights.shape() == Shape{2, 4, 3, 4});
    CHECK_FALSE(requires_grad(weights));
    const Tensor row_sums = sum(weights, {3});
    for (real total : row_sums.to_vector()) CHECK(total == Approx(1).margin(kClose));
  }
}

TEST_CASE("MultiHeadAttention: masked keys and values change nothing and get zero weight",
          "[multihead]") {
  Generator generator(8);
  nn::MultiHeadAttention layer(nn::MultiHeadAttentionOptions(4, 4, 4, 8, 2), generator);
  const Tensor queries = randn({2, 3, 4}, generator);
  Tensor keys = randn({2, 5, 4}, generator), values = randn({2, 5, 4}, generator);
  const std::vector<int64_t> lens = {2, 5};
  const Tensor before = layer.forward(queries, keys, values, lens);
  const std::vector<real> weights = layer.attention_weights().to_vector();
  for (int64_t head = 0; head < 2; ++head) {  // example 0: keys 2..4 are padding
    for (int64_t q = 0; q < 3; ++q) {
      for (int64_t k = 2; k < 5; ++k) CHECK(weights[((0 * 2 + head) * 3 + q) * 5 + k] == 0);
    }
  }
  for (int64_t k = 2; k < 5; ++k) {  // change the padding of example 0 only
    for (int64_t j = 0; j < 4; ++j) {
      keys.data()[k * 4 + j] = real(1e3);
      values.data()[k * 4 + j] = real(-1e3);
    }
  }
  check_close(layer.forward(queries, keys, values, lens), before, 0);
}

TEST_CASE("MultiHeadAttention: gradcheck with masks, parameters included", "[multihead][f64]") {
  Generator generator(9);
  nn::MultiHeadAttention layer(nn::MultiHeadAttentionOptions(3, 4, 5, 6, 3).bias(true), generator);
  for (const std::vector<int64_t>& lens :
       {std::vector<int64_t>{3, 1}, std::vector<int64_t>{1, 2, 3, 3, 2, 1}}) {
    const GradcheckResult result = gradcheck(
        [&](const std::vector<Tensor>& in) {
          layer.W_q->weight = in[3];
          layer.W_k->weight = in[4];
          layer.W_v->weight = in[5];
          layer.W_o->weight = in[6];
          layer.W_o->bias = in[7];
          return layer.forward(in[0], in[1], in[2], lens);
        },
        {randn({2, 3, 4}, generator), randn({2, 3, 3}, generator), randn({2, 3, 5}, generator),
         layer.W_q->weight, layer.W_k->weight, layer.W_v->weight, layer.W_o->weight,
         layer.W_o->bias});
    INFO(result.report);
    CHECK(result.passed);
  }
}

TEST_CASE("MultiHeadAttention: names, and bad input names the layer and the values",
          "[multihead]") {
  nn::MultiHeadAttention layer(nn::MultiHeadAttentionOptions(2, 3, 4, 8, 2));
  std::vector<std::string> names;
  for (const auto& [name, tensor] : layer.named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"W_q.weight", "W_k.weight", "W_v.weight", "W_o.weight"});
  CHECK_THROWS_WITH(nn::MultiHeadAttention(nn::MultiHeadAttentionOptions(8, 8, 8, 10, 4)),
                    StartsWith("MultiHeadAttention(key_size=8, query_size=8, value_size=8, "
                               "num_hiddens=10, num_heads=4): num_heads = 4 does not divide "
                               "num_hiddens = 10"));
  CHECK_THROWS_WITH(layer.forward(zeros({1, 2, 3}), zeros({1, 4, 3}), zeros({1, 4, 4})),
                    Contains("keys of shape (1,4,3) must be 3-D and end in 2"));
  CHECK_THROWS_WITH(layer.forward(zeros({1, 2, 3}), zeros({1, 4, 2}), zeros({1, 5, 4})),
                    Contains("keys and values must pair up"));
  CHECK_THROWS_WITH(layer.forward(zeros({1, 2, 3}), zeros({1, 4, 2}), zeros({1, 4, 4}), {5}),
                    Contains("valid length 5 at position 0 is outside [1, Tk = 4]"));
}

}  // namespace test_multihead_attention
