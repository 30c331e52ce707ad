// nn/multihead_attention.hpp — multi-head attention (Vaswani et al., 2017), as
// d2l.ai builds it ("Multi-Head Attention", d2l §10.5).
//
// Legend: B batch, Tq queries, Tk key–value pairs, d num_hiddens, h num_heads,
// d/h the size of one head.
//
// One attention pooling sees one notion of "how well a key matches a query".
// Multi-head attention runs h of them side by side, each on its own learned
// projection of the queries, keys and values into d/h numbers, and mixes the
// h results with one more projection:
//
//   head_i = DotProductAttention(q W_q,i, k W_k,i, v W_v,i)        (B,Tq,d/h)
//   out    = [head_1 ; … ; head_h] W_o                            (B,Tq,d)
//
// The h projections of size d/h are one Linear to size d, split by
// transpose_qkv into B·h sequences, so all heads run as one batched
// DotProductAttention; transpose_output puts the heads back side by side.
//
//   nn::MultiHeadAttention attention(nn::MultiHeadAttentionOptions(32, 32, 32, 32, 4));
//   Tensor y = attention.forward(queries, keys, values, valid_lens);   // (B,Tq,32)
//   attention.attention_weights();                                     // (B,4,Tq,Tk)
//
// Valid lengths are as for DotProductAttention (nn/attention.hpp): none, one
// per example (B) or one per query (B·Tq); every head of an example uses its
// example's lengths.
//
// Parameters (d2l's names): W_q.weight (d,query_size), W_k.weight (d,key_size),
// W_v.weight (d,value_size), W_o.weight (d,d), and a .bias for each with bias(true).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/attention.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"
#include "tensor/random.hpp"

namespace attograd::nn {

// x: (B,T,d) -> (B·h,T,d/h): head i of example b is row b·h + i.
Tensor transpose_qkv(const Tensor& x, int64_t num_heads);
// x: (B·h,T,d/h) -> (B,T,d): the inverse of transpose_qkv.
Tensor transpose_output(const Tensor& x, int64_t num_heads);

struct MultiHeadAttentionOptions {
  MultiHeadAttentionOptions(int64_t key_size, int64_t query_size, int64_t value_size,
                            int64_t num_hiddens, int64_t num_heads)
      : key_size_(key_size),
        query_size_(query_size),
        value_size_(value_size),
        num_hiddens_(num_hiddens),
        num_heads_(num_heads) {}
  // Dropout on the attention weights, in training mode only (default 0).
  MultiHeadAttentionOptions& dropout(double p) {
    dropout_ = p;
    return *this;
  }
  // Biases on W_q, W_k, W_v and W_o (default false, as d2l).
  MultiHeadAttentionOptions& bias(bool on) {
    bias_ = on;
    return *this;
  }

  int64_t key_size() const { return key_size_; }
  int64_t query_size() const { return query_size_; }
  int64_t value_size() const { return value_size_; }
  int64_t num_hiddens() const { return num_hiddens_; }  // d: the output size, h heads of d/h
  int64_t num_heads() const { return num_heads_; }      // h: must divide d
  double dropout() const { return dropout_; }
  bool bias() const { return bias_; }

 private:
  int64_t key_size_;
  int64_t query_size_;
  int64_t value_size_;
  int64_t num_hiddens_;
  int64_t num_heads_;
  double dropout_ = 0.0;
  bool bias_ = false;
};

class MultiHeadAttention : public Module {
 public:
  explicit MultiHeadAttention(const MultiHeadAttentionOptions& options,
                              Generator& generator = default_generator());

  // queries: (B,Tq,query_size), keys: (B,Tk,key_size), values: (B,Tk,value_size),
  // valid_lens: {} or B or B·Tq -> (B,Tq,d)
  Tensor forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                 const std::vector<int64_t>& valid_lens = {});

  // (B,h,Tq,Tk): each head's weights in the last forward, before dropout,
  // without history. Undefined before the first forward.
  const Tensor& attention_weights() const { return attention_weights_; }
  const MultiHeadAttentionOptions& options() const { return options_; }

  std::shared_ptr<DotProductAttention> attention;
  std::shared_ptr<Linear> W_q;  // query_size -> d
  std::shared_ptr<Linear> W_k;  // key_size -> d
  std::shared_ptr<Linear> W_v;  // value_size -> d
  std::shared_ptr<Linear> W_o;  // d -> d

 protected:
  std::string extra_repr() const override;

 private:
  std::string describe() const;

  MultiHeadAttentionOptions options_;
  Tensor attention_weights_;
};

}  // namespace attograd::nn
