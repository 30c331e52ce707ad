// nn/transformer.hpp — the pieces of the Transformer (Vaswani et al., 2017),
// as d2l.ai builds them ("Self-Attention and Positional Encoding" §10.6 and
// "Transformer" §10.7): positional encoding, the position-wise feed-forward
// network, the residual-plus-layer-norm step, and the encoder and decoder
// blocks made of them. models/transformer/ stacks the blocks into a translator.
//
// Legend: B batch, T positions (of the block's input), S source positions,
// d num_hiddens, f the feed-forward network's hidden size, h heads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/dropout.hpp"
#include "nn/layer_norm.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"
#include "nn/multihead_attention.hpp"
#include "tensor/random.hpp"

namespace attograd::nn {

// ---------------------------------------------------------------- positional encoding

// Self-attention is blind to order: permuting its inputs permutes its outputs.
// The sinusoidal encoding adds to position p a fixed vector whose pair of
// columns (2i, 2i+1) turns at its own frequency 1/10000^(2i/d):
//
//   P[p, 2i] = sin(p / 10000^(2i/d)),   P[p, 2i+1] = cos(p / 10000^(2i/d))
//
// so P[p + k] is a rotation of P[p] that depends on k alone.
class PositionalEncoding : public Module {
 public:
  // P for positions 0 … max_len − 1 (d2l: 1000).
  PositionalEncoding(int64_t num_hiddens, double dropout, int64_t max_len = 1000,
                     Generator& generator = default_generator());

  // x: (B,T,d) -> dropout(x + P[start : start + T]) (B,T,d). start is the
  // position of x's first row: 0 for a whole sequence, t for the step-t
  // token of a decoder that predicts one token at a time.
  Tensor forward(const Tensor& x, int64_t start = 0);

  // (max_len,d): the table P, a constant.
  const Tensor& table() const { return table_; }

  std::shared_ptr<Dropout> dropout;

 protected:
  std::string extra_repr() const override;

 private:
  Tensor table_;
};

// ---------------------------------------------------------------- feed-forward and add & norm

// The same two-layer MLP applied to every position on its own:
//   y = dense2(relu(dense1(x)))     x: (*,in) -> (*,f) -> (*,out)
class PositionWiseFFN : public Layer {
 public:
  PositionWiseFFN(int64_t num_inputs, int64_t num_hiddens, int64_t num_outputs,
                  Generator& generator = default_generator());

  Tensor forward(const Tensor& x) override;  // (*,in) -> (*,out)

  std::shared_ptr<Linear> dense1;  // in -> f
  std::shared_ptr<Linear> dense2;  // f -> out
};

// The residual connection and layer normalisation around every sublayer:
//   AddNorm(x, y) = LayerNorm(dropout(y) + x)       x, y: (*, normalized_shape)
class AddNorm : public Module {
 public:
  AddNorm(const Shape& normalized_shape, double dropout,
          Generator& generator = default_generator());

  Tensor forward(const Tensor& x, const Tensor& y);

  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<LayerNorm> ln;
};

// ---------------------------------------------------------------- blocks

// The sizes of one block; queries, keys and values all have size d.
struct TransformerBlockOptions {
  TransformerBlockOptions(int64_t num_hiddens, int64_t ffn_num_hiddens, int64_t num_heads)
      : num_hiddens_(num_hiddens), ffn_num_hiddens_(ffn_num_hiddens), num_heads_(num_heads) {}
  // Dropout in every AddNorm and on the attention weights (default 0).
  TransformerBlockOptions& dropout(double p) {
    dropout_ = p;
    return *this;
  }
  // Biases on the attention projections (default false, as d2l).
  TransformerBlockOptions& use_bias(bool on) {
    use_bias_ = on;
    return *this;
  }

  int64_t num_hiddens() const { return num_hiddens_; }
  int64_t ffn_num_hiddens() const { return ffn_num_hiddens_; }
  int64_t num_heads() const { return num_heads_; }
  double dropout() const { return dropout_; }
  bool use_bias() const { return use_bias_; }

 private:
  int64_t num_hiddens_;
  int64_t ffn_num_hiddens_;
  int64_t num_heads_;
  double dropout_ = 0.0;
  bool use_bias_ = false;
};

// Self-attention over the source, then the FFN, each wrapped in AddNorm:
//   y = AddNorm1(x, MultiHeadAttention(x, x, x, valid_lens))
//   z = AddNorm2(y, FFN(y))                                   x, y, z: (B,S,d)
class TransformerEncoderBlock : public Module {
 public:
  explicit TransformerEncoderBlock(const TransformerBlockOptions& options,
                                   Generator& generator = default_generator());

  // x: (B,S,d), valid_lens: (B) or {} -> (B,S,d)
  Tensor forward(const Tensor& x, const std::vector<int64_t>& valid_lens);

  std::shared_ptr<MultiHeadAttention> attention;
  std::shared_ptr<AddNorm> addnorm1;
  std::shared_ptr<PositionWiseFFN> ffn;
  std::shared_ptr<AddNorm> addnorm2;
};

// What a decoder block reads besides its input: the encoder's output, and the
// inputs it has seen at earlier positions (the cache of its self-attention's
// keys and values).
struct DecoderBlockMemory {
  Tensor encoder_outputs;             // (B,S,d)
  std::vector<int64_t> encoder_lens;  // (B): source valid lengths
  Tensor past;  // (B,P,d): the block's inputs at positions 0 … P−1, or undefined
};

// Causal self-attention, encoder–decoder attention, then the FFN:
//   kv = [memory.past ; x]                                      (B,P+T,d)
//   y  = AddNorm1(x, MultiHeadAttention(x, kv, kv, causal))     row q sees kv[: P + q + 1]
//   z  = AddNorm2(y, MultiHeadAttention(y, enc, enc, encoder_lens))
//   out = AddNorm3(z, FFN(z))                                   (B,T,d)
// and memory.past becomes kv. In training P = 0 and x is the whole target
// sequence, so position q sees positions 0 … q (per-query valid lengths 1 … T);
// in prediction x is one token and the past holds the tokens before it. Both
// compute the same thing, which is what makes caching exact.
class TransformerDecoderBlock : public Module {
 public:
  explicit TransformerDecoderBlock(const TransformerBlockOptions& options,
                                   Generator& generator = default_generator());

  // x: (B,T,d) -> (B,T,d); memory.past grows by T positions.
  Tensor forward(const Tensor& x, DecoderBlockMemory& memory);

  std::shared_ptr<MultiHeadAttention> attention1;  // causal self-attention
  std::shared_ptr<AddNorm> addnorm1;
  std::shared_ptr<MultiHeadAttention> attention2;  // encoder–decoder attention
  std::shared_ptr<AddNorm> addnorm2;
  std::shared_ptr<PositionWiseFFN> ffn;
  std::shared_ptr<AddNorm> addnorm3;
};

}  // namespace attograd::nn
