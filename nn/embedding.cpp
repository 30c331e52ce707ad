// nn/embedding.cpp — the lookup as one op, forward and backward side by side.
//
// It is index_select along axis 0 with one difference in the backward: the
// padding row's gradient is dropped. Masking there (rather than multiplying
// the output by a mask) keeps the forward exactly PyTorch's, which returns
// whatever the padding row holds.
#include "nn/embedding.hpp"

#include <algorithm>
#include <memory>

#include "nn/init.hpp"
#include "tensor/error.hpp"
#include "tensor/factory.hpp"
#include "tensor/kernels.hpp"

namespace attograd::nn {

Embedding::Embedding(const EmbeddingOptions& options, Generator& generator)
    : Module("Embedding"), options_(options) {
  const int64_t V = options.num_embeddings, D = options.embedding_dim;
  check(V > 0 && D > 0, "Embedding: num_embeddings ({}) and embedding_dim ({}) must be positive", V,
        D);
  if (options.padding_index) {
    const int64_t id = *options.padding_index;
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

// y[p, :] = weight[ids[p], :]                 ids: (*) -> y: (*, D)
// dweight[v, :] = Σ_{p : ids[p] = v} dy[p, :]   for every v ≠ padding_idx; 0 for padding_idx
Tensor Embedding::forward(const std::vector<int64_t>& ids_in, const Shape& ids_shape) {
  const int64_t V = options_.num_embeddings, D = options_.embedding_dim;
  check(static_cast<int64_t>(ids_in.size()) == ids_shape.numel(),
        "Embedding: {} ids do not fill the ids shape {} ({} ids)", ids_in.size(), ids_shape,
        ids_shape.numel());
  for (size_t p = 0; p < ids_in.size(); ++p) {
    check(0 <= ids_in[p] && ids_in[p] < V,
          "Embedding: id {} (at position {}) is out of range for a vocabulary of {} entries "
          "(valid ids: 0..{}); was the vocabulary built from the same data?",
          ids_in[p], p, V, V - 1);
  }
  auto ids = std::make_shared<const std::vector<int64_t>>(ids_in);
  const Tensor table = weight.contiguous_data();
  Shape out_shape = ids_shape;
  out_shape.push_back(D);
  Tensor y = Tensor::empty(out_shape);
  for (size_t p = 0; p < ids->size(); ++p) {
    std::copy_n(table.data() + (*ids)[p] * D, D, y.data() + static_cast<int64_t>(p) * D);
  }
  return record("embedding", y, {weight}, [ids, V, D, padding = padding_idx_](const Tensor& dy_in) {
    const Tensor dy = dy_in.contiguous_data();
    Tensor dweight = zeros({V, D});
    for (size_t p = 0; p < ids->size(); ++p) {
      const int64_t id = (*ids)[p];
      if (id == padding) continue;
      kernels::accumulate(dweight.data() + id * D, dy.data() + static_cast<int64_t>(p) * D, D);
    }
    return std::vector<Tensor>{dweight};
  });
}

std::string Embedding::extra_repr() const {
  std::string out = fmt::format("{}, {}", options_.num_embeddings, options_.embedding_dim);
  if (padding_idx_) out += fmt::format(", padding_idx={}", *padding_idx_);
  return out;
}

}  // namespace attograd::nn
