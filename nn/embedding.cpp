// nn/embedding.cpp — the lookup table module; the lookup itself is the
// embedding op (autograd/ops_index.cpp).
#include "nn/embedding.hpp"

#include <algorithm>
#include <memory>

#include "autograd/ops.hpp"
#include "nn/init.hpp"
#include "tensor/error.hpp"
#include "tensor/factory.hpp"
#include "tensor/kernels.hpp"

namespace attograd::nn {

Embedding::Embedding(const EmbeddingOptions& options, Generator& generator)
    : Module("Embedding"), options_(options) {
  const int64_t V = options.num_embeddings(), D = options.embedding_dim();
  check(V > 0 && D > 0, "Embedding: num_embeddings ({}) and embedding_dim ({}) must be positive", V,
        D);
  if (options.padding_idx()) {
    const int64_t id = *options.padding_idx();
    check(-V <= id && id < V,
          "Embedding: padding_idx {} is out of range for {} embeddings (valid: {}..{})", id, V, -V,
          V - 1);
    padding_idx_ = id < 0 ? id + V : id;
  }
  weight = Tensor::empty({V, D});
  normal_(weight, 0.0, 1.0, generator);
  if (padding_idx_) std::fill_n(weight.data() + *padding_idx_ * D, D, real(0));
  register_parameter("weight", weight);
}

Tensor Embedding::forward(const std::vector<int64_t>& ids) {
  return forward(ids, Shape{static_cast<int64_t>(ids.size())});
}

// ids: ids_shape.numel() ids -> (ids_shape..., D): the embedding op (autograd/ops.hpp)
Tensor Embedding::forward(const std::vector<int64_t>& ids, const Shape& ids_shape) {
  return embedding(weight, ids, ids_shape, padding_idx_, options_.sparse());
}

std::string Embedding::extra_repr() const {
  std::string out = fmt::format("{}, {}", options_.num_embeddings(), options_.embedding_dim());
  if (padding_idx_) out += fmt::format(", padding_idx={}", *padding_idx_);
  return out;
}

}  // namespace attograd::nn
