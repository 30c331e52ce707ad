// nn/embedding.hpp — a lookup table from token ids to learned vectors.
//
//   nn::Embedding embed(nn::EmbeddingOptions(4345, 256).padding_idx(0));
//   Tensor x = embed.forward(ids, {B, T});   // ids: B·T ints -> x: (B,T,256)
//
// Row i of `weight` is the vector of token i. The forward picks rows; the
// backward adds each output row's gradient into the row it came from, so a
// token that appears twice receives both gradients. The row of padding_idx
// (if set) starts at zero and never receives a gradient, so padding stays a
// zero vector throughout training, as in PyTorch.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "nn/module.hpp"
#include "tensor/random.hpp"

namespace attograd::nn {

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  // The id whose row is kept at zero and gets no gradient. A negative value
  // counts from the end (−1 is the last id), as in PyTorch.
  EmbeddingOptions& padding_idx(int64_t id) {
    padding_idx_ = id;
    return *this;
  }
  // Name the table's gradient as the rows read (PyTorch's sparse=True): the
  // fast path then keeps just those rows and plain SGD updates just them
  // (autograd/fast/deferred_gradient.hpp). Default false.
  EmbeddingOptions& sparse(bool on) {
    sparse_ = on;
    return *this;
  }

  int64_t num_embeddings() const { return num_embeddings_; }  // vocabulary size V
  int64_t embedding_dim() const { return embedding_dim_; }    // vector size D
  // As given, before a negative id is counted from the end.
  std::optional<int64_t> padding_idx() const { return padding_idx_; }
  bool sparse() const { return sparse_; }

 private:
  int64_t num_embeddings_;
  int64_t embedding_dim_;
  std::optional<int64_t> padding_idx_;
  bool sparse_ = false;
};

class Embedding : public Module {
 public:
  // weight starts N(0, 1), with the padding row (if any) zeroed.
  explicit Embedding(const EmbeddingOptions& options, Generator& generator = default_generator());

  // ids: n ints in [0, V) -> (n, D)
  Tensor forward(const std::vector<int64_t>& ids);
  // ids: ids_shape.numel() ints, row-major -> (ids_shape..., D); e.g. (B,T) -> (B,T,D)
  Tensor forward(const std::vector<int64_t>& ids, const Shape& ids_shape);

  const EmbeddingOptions& options() const { return options_; }
  // Switch EmbeddingOptions::sparse after construction.
  void set_sparse(bool on) { options_.sparse(on); }
  // The padding id in [0, V), if one was set.
  std::optional<int64_t> padding_idx() const { return padding_idx_; }

  Tensor weight;  // (V, D)

 protected:
  std::string extra_repr() const override;

 private:
  EmbeddingOptions options_;
  std::optional<int64_t> padding_idx_;  // normalised into [0, V)
};

}  // namespace attograd::nn
