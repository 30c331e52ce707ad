// nn/transformer.cpp — positional encoding, FFN, AddNorm and the Transformer's
// encoder and decoder blocks (nn/transformer.hpp). Compositions of ops and
// layers: their backward is the chain rule through them.
#include "nn/transformer.hpp"

#include <fmt/format.h>

#include <cmath>

#include "autograd/ops.hpp"
#include "tensor/error.hpp"

namespace attograd::nn {

// ---------------------------------------------------------------- positional encoding

PositionalEncoding::PositionalEncoding(int64_t num_hiddens, double dropout_p, int64_t max_len,
                                       Generator& generator)
    : Module("PositionalEncoding") {
  check(num_hiddens > 0 && max_len > 0,
        "PositionalEncoding: num_hiddens ({}) and max_len ({}) must both be positive", num_hiddens,
        max_len);
  dropout = register_module("dropout", std::make_shared<Dropout>(dropout_p, generator));
  table_ = Tensor::empty({max_len, num_hiddens});
  real* P = table_.data();
  for (int64_t p = 0; p < max_len; ++p) {
    for (int64_t column = 0; column < num_hiddens; ++column) {
      const int64_t even = column - column % 2;  // 2i of the pair the column belongs to
      const double angle =
          static_cast<double>(p) / std::pow(10000.0, static_cast<double>(even) / num_hiddens);
      P[p * num_hiddens + column] =
          static_cast<real>(column % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  }
}

// x: (B,T,d) -> (B,T,d)
Tensor PositionalEncoding::forward(const Tensor& x, int64_t start) {
  const int64_t max_len = table_.shape()[0], d = table_.shape()[1];
  check(x.defined() && x.dim() == 3 && x.shape()[2] == d,
        "PositionalEncoding: input of shape {} must be (batch, positions, {})",
        x.defined() ? x.shape() : Shape{}, d);
  const int64_t T = x.shape()[1];
  check(start >= 0 && start + T <= max_len,
        "PositionalEncoding: positions {} … {} are outside the table of max_len = {}; build the "
        "layer with a larger max_len",
        start, start + T - 1, max_len);
  return dropout->forward(x + narrow(table_, 0, start, T));  // (B,T,d) + (T,d)
}

std::string PositionalEncoding::extra_repr() const {
  return fmt::format("num_hiddens={}, max_len={}", table_.shape()[1], table_.shape()[0]);
}

// ---------------------------------------------------------------- feed-forward and add & norm

PositionWiseFFN::PositionWiseFFN(int64_t num_inputs, int64_t num_hiddens, int64_t num_outputs,
                                 Generator& generator)
    : Layer("PositionWiseFFN") {
  dense1 = register_module(
      "dense1", std::make_shared<Linear>(LinearOptions(num_inputs, num_hiddens), generator));
  dense2 = register_module(
      "dense2", std::make_shared<Linear>(LinearOptions(num_hiddens, num_outputs), generator));
}

Tensor PositionWiseFFN::forward(const Tensor& x) {
  return dense2->forward(relu(dense1->forward(x)));
}

AddNorm::AddNorm(const Shape& normalized_shape, double dropout_p, Generator& generator)
    : Module("AddNorm") {
  dropout = register_module("dropout", std::make_shared<Dropout>(dropout_p, generator));
  ln = register_module("ln", std::make_shared<LayerNorm>(LayerNormOptions(normalized_shape)));
}

// x, y: (*, normalized_shape) -> (*, normalized_shape)
Tensor AddNorm::forward(const Tensor& x, const Tensor& y) {
  check(x.defined() && y.defined() && x.shape() == y.shape(),
        "AddNorm: the residual {} and the sublayer's output {} must have the same shape",
        x.defined() ? x.shape() : Shape{}, y.defined() ? y.shape() : Shape{});
  return ln->forward(dropout->forward(y) + x);
}

// ---------------------------------------------------------------- blocks

namespace {

std::shared_ptr<MultiHeadAttention> make_attention(const TransformerBlockOptions& options,
                                                   Generator& generator) {
  const int64_t d = options.num_hiddens();
  return std::make_shared<MultiHeadAttention>(
      MultiHeadAttentionOptions(d, d, d, d, options.num_heads())
          .dropout(options.dropout())
          .bias(options.use_bias()),
      generator);
}

void check_block_input(const char* block, const Tensor& x, int64_t d) {
  check(x.defined() && x.dim() == 3 && x.shape()[2] == d,
        "{}: input of shape {} must be (batch, positions, num_hiddens = {})", block,
        x.defined() ? x.shape() : Shape{}, d);
}

}  // namespace

TransformerEncoderBlock::TransformerEncoderBlock(const TransformerBlockOptions& options,
                                                 Generator& generator)
    : Module("EncoderBlock") {
  const int64_t d = options.num_hiddens();
  attention = register_module("attention", make_attention(options, generator));
  addnorm1 = register_module("addnorm1",
                             std::make_shared<AddNorm>(Shape{d}, options.dropout(), generator));
  ffn = register_module(
      "ffn", std::make_shared<PositionWiseFFN>(d, options.ffn_num_hiddens(), d, generator));
  addnorm2 = register_module("addnorm2",
                             std::make_shared<AddNorm>(Shape{d}, options.dropout(), generator));
}

// x: (B,S,d) -> (B,S,d)
Tensor TransformerEncoderBlock::forward(const Tensor& x, const std::vector<int64_t>& valid_lens) {
  check_block_input("TransformerEncoderBlock", x, attention->options().num_hiddens());
  const Tensor y = addnorm1->forward(x, attention->forward(x, x, x, valid_lens));
  return addnorm2->forward(y, ffn->forward(y));
}

TransformerDecoderBlock::TransformerDecoderBlock(const TransformerBlockOptions& options,
                                                 Generator& generator)
    : Module("DecoderBlock") {
  const int64_t d = options.num_hiddens();
  attention1 = register_module("attention1", make_attention(options, generator));
  addnorm1 = register_module("addnorm1",
                             std::make_shared<AddNorm>(Shape{d}, options.dropout(), generator));
  attention2 = register_module("attention2", make_attention(options, generator));
  addnorm2 = register_module("addnorm2",
                             std::make_shared<AddNorm>(Shape{d}, options.dropout(), generator));
  ffn = register_module(
      "ffn", std::make_shared<PositionWiseFFN>(d, options.ffn_num_hiddens(), d, generator));
  addnorm3 = register_module("addnorm3",
                             std::make_shared<AddNorm>(Shape{d}, options.dropout(), generator));
}

// x: (B,T,d), memory.past: (B,P,d) or undefined -> (B,T,d)
Tensor TransformerDecoderBlock::forward(const Tensor& x, DecoderBlockMemory& memory) {
  const int64_t d = attention1->options().num_hiddens();
  check_block_input("TransformerDecoderBlock", x, d);
  const int64_t B = x.shape()[0], T = x.shape()[1];
  const int64_t P = memory.past.defined() ? memory.past.shape()[1] : 0;
  check(!memory.past.defined() || memory.past.shape() == Shape{B, P, d},
        "TransformerDecoderBlock: the cached inputs have shape {} but the input is {}; the cache "
        "must be (batch, positions so far, {}) for the same batch",
        memory.past.defined() ? memory.past.shape() : Shape{}, x.shape(), d);
  const Tensor key_values = P > 0 ? cat({memory.past, x}, 1) : x;  // (B,P+T,d)
  memory.past = key_values;
  // Query q of this call sits at position P + q and sees positions 0 … P + q.
  std::vector<int64_t> causal_lens(static_cast<size_t>(B * T));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t q = 0; q < T; ++q) causal_lens[b * T + q] = P + q + 1;
  }
  const Tensor y =
      addnorm1->forward(x, attention1->forward(x, key_values, key_values, causal_lens));
  const Tensor z = addnorm2->forward(
      y,
      attention2->forward(y, memory.encoder_outputs, memory.encoder_outputs, memory.encoder_lens));
  return addnorm3->forward(z, ffn->forward(z));
}

}  // namespace attograd::nn
