// tests/nn/test_transformer_layers.cpp — positional encoding, FFN, AddNorm
// and the Transformer's encoder and decoder blocks (nn/transformer.hpp).
//
// Gradients by central differences in double ([f64], ε = 1e-6, passing when
// |analytic − numeric| ≤ 1e-6 + 1e-5·|numeric|). The FFN's relu has a kink
// at 0; with random inputs of this size no pre-activation lands within ε of
// it (a landing would show as a single failed element, not a pass).
#include <catch2/catch.hpp>
#include <cmath>
#include <type_traits>
#include <vector>

#include "autograd/gradcheck.hpp"
#include "autograd/ops.hpp"
#include "nn/transformer.hpp"
#include "tensor/factory.hpp"
#include "tests/support/tensor_checks.hpp"

namespace test_transformer_layers {

using namespace attograd;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

const double kClose = std::is_same_v<real, double> ? 1e-12 : 1e-5;

void check_close(const Tensor& a, const Tensor& b, double tolerance = kClose) {
  testing::check_close(a, b, tolerance);
}

}  // namespace

TEST_CASE("PositionalEncoding: the table is the sinusoid formula", "[transformer]") {
  for (const int64_t d : {1, 7, 8, 32}) {
    nn::PositionalEncoding encoding(d, 0.0, 60);
    const Tensor& P = encoding.table();
    REQUIRE(P.shape() == Shape{60, d});
    for (int64_t p = 0; p < 60; ++p) {
      for (int64_t i = 0; 2 * i < d; ++i) {
        const double angle = static_cast<double>(p) / std::pow(10000.0, 2.0 * i / d);
        INFO("d " << d << ", position " << p << ", pair " << i);
        CHECK(P.data()[p * d + 2 * i] == Approx(std::sin(angle)).margin(1e-6));
        if (2 * i + 1 < d)
          CHECK(P.data()[p * d + 2 * i + 1] == Approx(std::cos(angle)).margin(1e-6));
      }
    }
  }
}

TEST_CASE("PositionalEncoding: forward adds rows start … start + T − 1", "[transformer]") {
  nn::PositionalEncoding encoding(4, 0.5, 20);
  encoding.eval();  // no dropout
  Generator generator(1);
  const Tensor x = randn({2, 3, 4}, generator);
  check_close(encoding.forward(x), x + narrow(encoding.table(), 0, 0, 3));
  check_close(encoding.forward(x, 5), x + narrow(encoding.table(), 0, 5, 3));
  CHECK_THROWS_WITH(encoding.forward(x, 18),
                    StartsWith("PositionalEncoding: positions 18 … 20 are outside the table of "
                               "max_len = 20"));
  CHECK_THROWS_WITH(encoding.forward(zeros({2, 3, 5})),
                    StartsWith("PositionalEncoding: input of shape (2,3,5) must be (batch, "
                               "positions, 4)"));
}

TEST_CASE("PositionWiseFFN and AddNorm: the definitions and d2l's names", "[transformer]") {
  Generator generator(2);
  nn::PositionWiseFFN ffn(4, 8, 3, generator);
  const Tensor x = randn({2, 5, 4}, generator);
  check_close(ffn.forward(x), ffn.dense2->forward(relu(ffn.dense1->forward(x))));
  CHECK(ffn.forward(x).shape() == Shape{2, 5, 3});
  nn::AddNorm add_norm({4}, 0.5, generator);
  add_norm.eval();
  const Tensor y = randn({2, 5, 4}, generator);
  check_close(add_norm.forward(x, y), layer_norm(x + y, {4}, Tensor(), Tensor()));
  std::vector<std::string> names;
  for (const auto& [name, tensor] : add_norm.named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"ln.weight", "ln.bias"});
  CHECK_THROWS_WITH(add_norm.forward(x, zeros({2, 4, 4})),
                    StartsWith("AddNorm: the residual (2,5,4) and the sublayer's output "
                               "(2,4,4) must have the same shape"));
}

TEST_CASE("TransformerEncoderBlock: d2l's shapes and names, and padding changes nothing",
          "[transformer]") {
  Generator generator(3);
  nn::TransformerEncoderBlock block(nn::TransformerBlockOptions(24, 48, 8).dropout(0.5), generator);
  block.eval();
  Tensor x = randn({2, 100, 24}, generator);
  const Tensor y = block.forward(x, {3, 2});
  CHECK(y.shape() == Shape{2, 100, 24});  // d2l's example
  CHECK(block.named_parameters().front().first == "attention.W_q.weight");
  CHECK(block.named_parameters().back().first == "addnorm2.ln.bias");
  // Rows 0..2 of example 0 and 0..1 of example 1 only read the first 3 and 2 positions.
  for (int64_t t = 3; t < 100; ++t) x.data()[t * 24] = real(50);
  const Tensor changed = block.forward(x, {3, 2});
  check_close(narrow(narrow(changed, 0, 0, 1), 1, 0, 3), narrow(narrow(y, 0, 0, 1), 1, 0, 3));
}

TEST_CASE("TransformerDecoderBlock: cached step-by-step equals the whole prefix, causally",
          "[transformer]") {
  Generator generator(4);
  nn::TransformerDecoderBlock block(nn::TransformerBlockOptions(8, 16, 2).dropout(0.1), generator);
  block.eval();
  const int64_t B = 2, T = 5;
  const Tensor encoder_outputs = randn({B, 6, 8}, generator);
  Tensor x = randn({B, T, 8}, generator);
  nn::DecoderBlockMemory whole{encoder_outputs, {6, 3}, Tensor()};
  const Tensor all_at_once = block.forward(x, whole);
  REQUIRE(whole.past.shape() == Shape{B, T, 8});

  nn::DecoderBlockMemory cached{encoder_outputs, {6, 3}, Tensor()};
  std::vector<Tensor> steps;
  for (int64_t t = 0; t < T; ++t) steps.push_back(block.forward(narrow(x, 1, t, 1), cached));
  check_close(cat(steps, 1), all_at_once);
  check_close(cached.past, x, 0);

  // Changing the input at position 3 leaves positions 0..2 as they were.
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t j = 0; j < 8; ++j) x.data()[(b * T + 3) * 8 + j] = real(9);
  }
  nn::DecoderBlockMemory again{encoder_outputs, {6, 3}, Tensor()};
  const Tensor changed = block.forward(x, again);
  check_close(narrow(changed, 1, 0, 3), narrow(all_at_once, 1, 0, 3), 0);
  CHECK(changed.to_vector()[3 * 8] != all_at_once.to_vector()[3 * 8]);

  nn::DecoderBlockMemory wrong{encoder_outputs, {6, 3}, zeros({1, 2, 8})};
  CHECK_THROWS_WITH(block.forward(x, wrong),
                    Contains("the cached inputs have shape (1,2,8) but the input is (2,5,8)"));
}

TEST_CASE("Transformer blocks: gradcheck of inputs and a weight of every sublayer",
          "[transformer][f64]") {
  Generator generator(5);
  nn::TransformerEncoderBlock encoder(nn::TransformerBlockOptions(4, 6, 2), generator);
  nn::TransformerDecoderBlock decoder(nn::TransformerBlockOptions(4, 6, 2), generator);
  const GradcheckResult result = gradcheck(
      [&](const std::vector<Tensor>& in) {
        encoder.attention->W_k->weight = in[2];
        encoder.addnorm1->ln->weight = in[3];
        decoder.attention1->W_v->weight = in[4];
        decoder.attention2->W_q->weight = in[5];
        decoder.ffn->dense1->weight = in[6];
        const Tensor encoded = encoder.forward(in[0], {3, 2});
        nn::DecoderBlockMemory memory{encoded, {3, 2}, Tensor()};
        return decoder.forward(in[1], memory);
      },
      {randn({2, 3, 4}, generator), randn({2, 2, 4}, generator), encoder.attention->W_k->weight,
       encoder.addnorm1->ln->weight, decoder.attention1->W_v->weight,
       decoder.attention2->W_q->weight, decoder.ffn->dense1->weight});
  INFO(result.report);
  CHECK(result.passed);
}

}  // namespace test_transformer_layers
