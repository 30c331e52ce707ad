// nn/attention.hpp — attention scoring functions: masked softmax, scaled
// dot-product attention and additive (Bahdanau) attention, as in d2l.ai's
// "Attention Scoring Functions".
//
// Legend: B batch, Tq queries per example, Tk key–value pairs per example,
// d query/key size, dv value size, h hidden size of the additive score.
//
// Attention pools values by how well their keys match a query:
//
//   attention(q) = Σ_i α(q, k_i) v_i,   α(q, k_i) = exp a(q, k_i) / Σ_j exp a(q, k_j)
//
// and the two layers differ only in the score a(q, k):
//
//   DotProductAttention   a(q, k) = qᵀk / √d              q and k must both have size d
//   AdditiveAttention     a(q, k) = w_vᵀ tanh(W_q q + W_k k)   any sizes; learns W_q, W_k, w_v
//
//   nn::AdditiveAttention attention(nn::AdditiveAttentionOptions(/*key*/ 2, /*query*/ 20,
//                                                                /*hidden*/ 8));
//   Tensor context = attention.forward(queries, keys, values, {2, 6});  // (B,Tq,dv)
//   attention.attention_weights();                                      // (B,Tq,Tk)
//
// Valid lengths. Batches pad their sequences to a common Tk; a valid length
// n says only the first n keys of a row are real, and the rest get weight
// exactly 0 (and pass back a gradient of exactly 0). They come either one per
// example (B numbers, shared by all Tq queries of that example) or one per
// query (B·Tq numbers, row-major); an empty list means every key is valid.
// A valid length must be in [1, Tk]: a softmax over no keys at all has no
// meaning, so 0 is an error rather than a row of NaN (or, as in d2l, a
// silent uniform row over the padding).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/dropout.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"
#include "tensor/random.hpp"

namespace attograd::nn {

// masked_softmax(scores, valid_lens) is an op: autograd/ops.hpp.

// ---------------------------------------------------------------- dot product

struct DotProductAttentionOptions {
  // Dropout on the attention weights, in training mode only (default 0).
  DotProductAttentionOptions& dropout(double p) {
    dropout_ = p;
    return *this;
  }

  double dropout() const { return dropout_; }

 private:
  double dropout_ = 0.0;
};

// Scaled dot-product attention (Vaswani et al., 2017). No parameters: the
// division by √d keeps the scores' variance near 1 when q and k have
// unit-variance entries, so the softmax does not saturate as d grows.
class DotProductAttention : public Module {
 public:
  explicit DotProductAttention(const DotProductAttentionOptions& options = {},
                               Generator& generator = default_generator());

  // queries: (B,Tq,d), keys: (B,Tk,d), values: (B,Tk,dv), valid_lens as above -> (B,Tq,dv)
  //   scores = queries @ keysᵀ / √d,  weights = masked_softmax(scores),
  //   out = dropout(weights) @ values
  Tensor forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                 const std::vector<int64_t>& valid_lens = {});

  // (B,Tq,Tk): the weights of the last forward, before dropout, without
  // history (for heatmaps). Undefined before the first forward.
  const Tensor& attention_weights() const { return attention_weights_; }

  std::shared_ptr<Dropout> dropout;

 protected:
  std::string extra_repr() const override;

 private:
  Tensor attention_weights_;
};

// ---------------------------------------------------------------- additive

struct AdditiveAttentionOptions {
  AdditiveAttentionOptions(int64_t key_size, int64_t query_size, int64_t hidden_size)
      : key_size_(key_size), query_size_(query_size), hidden_size_(hidden_size) {}
  // Dropout on the attention weights, in training mode only (default 0).
  AdditiveAttentionOptions& dropout(double p) {
    dropout_ = p;
    return *this;
  }

  int64_t key_size() const { return key_size_; }        // size of each key
  int64_t query_size() const { return query_size_; }    // size of each query
  int64_t hidden_size() const { return hidden_size_; }  // h: the size W_q and W_k map into
  double dropout() const { return dropout_; }

 private:
  int64_t key_size_;
  int64_t query_size_;
  int64_t hidden_size_;
  double dropout_ = 0.0;
};

// Additive attention (Bahdanau et al., 2015): queries and keys are mapped
// into a common space of size h, added, squashed, and read out by w_v:
//
//   q' = W_q q  (B,Tq,h),   k' = W_k k  (B,Tk,h)
//   score[b,i,j] = w_vᵀ tanh(q'[b,i] + k'[b,j])     all Tq × Tk pairs, by broadcasting
//
// Parameters (PyTorch / d2l names, no biases): W_k.weight (h,key_size),
// W_q.weight (h,query_size), w_v.weight (1,h).
class AdditiveAttention : public Module {
 public:
  explicit AdditiveAttention(const AdditiveAttentionOptions& options,
                             Generator& generator = default_generator());

  // queries: (B,Tq,query_size), keys: (B,Tk,key_size), values: (B,Tk,dv) -> (B,Tq,dv)
  Tensor forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                 const std::vector<int64_t>& valid_lens = {});

  // A decoder asks the same keys at every step; W_k k can be computed once.
  // keys: (B,Tk,key_size) -> W_k keys: (B,Tk,h)
  Tensor project_keys(const Tensor& keys);
  // forward() with the keys already projected: queries (B,Tq,query_size),
  // projected_keys (B,Tk,h) from project_keys, values (B,Tk,dv) -> (B,Tq,dv).
  Tensor forward_projected(const Tensor& queries, const Tensor& projected_keys,
                           const Tensor& values, const std::vector<int64_t>& valid_lens = {});
  // The weights alone, with their history, for a caller that pools the values
  // itself: queries (B,Tq,query_size), projected_keys (B,Tk,h) -> α (B,Tq,Tk),
  // each row summing to 1 over its valid keys and exactly 0 beyond them. No
  // dropout: forward_projected is bmm(dropout(α), values).
  Tensor weights(const Tensor& queries, const Tensor& projected_keys,
                 const std::vector<int64_t>& valid_lens = {});

  // (B,Tq,Tk): the weights of the last forward (or weights()), before
  // dropout, without history.
  const Tensor& attention_weights() const { return attention_weights_; }
  const AdditiveAttentionOptions& options() const { return options_; }

  std::shared_ptr<Linear> W_k;  // key_size -> h
  std::shared_ptr<Linear> W_q;  // query_size -> h
  std::shared_ptr<Linear> w_v;  // h -> 1
  std::shared_ptr<Dropout> dropout;

 protected:
  std::string extra_repr() const override;

 private:
  // "AdditiveAttention(key_size=2, query_size=20, hidden_size=8)", for messages.
  std::string describe() const;
  // The last axes of queries and projected keys against the layer's sizes.
  void check_sizes(const std::string& who, const Tensor& queries,
                   const Tensor& projected_keys) const;
  // α = masked_softmax(w_vᵀ tanh(q' + k')) for checked inputs; kept in attention_weights_.
  Tensor score(const Tensor& queries, const Tensor& projected_keys,
               const std::vector<int64_t>& valid_lens);

  AdditiveAttentionOptions options_;
  Tensor attention_weights_;
};

}  // namespace attograd::nn
