// autograd/ops_index.cpp — picking entries by index or by mask, and the
// embedding lookup.
//
// The backward of a pick is a scatter: each picked entry's gradient is added
// back where it came from. Adding (not writing) makes a repeated index — the
// same word twice in a sentence — receive both gradients.
#include <algorithm>
#include <memory>

#include "autograd/op_helpers.hpp"
#include "autograd/ops.hpp"
#include "tensor/factory.hpp"

namespace attograd {

namespace {

struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};

AxisSplit split_at(const Shape& shape, int64_t axis) {
  AxisSplit split;
  for (int64_t i = 0; i < axis; ++i) split.outer *= shape[i];
  split.n = shape[axis];
  for (int64_t i = axis + 1; i < shape.ndim(); ++i) split.inner *= shape[i];
  return split;
}

// Row-major offsets into a tensor of `shape` of the entries where `mask`
// (broadcast to `shape`) is non-zero.
std::vector<int64_t> mask_positions(const char* op, const Tensor& mask, const Shape& shape) {
  check_defined(op, mask);
  check(broadcast_shapes(op, mask.shape(), shape) == shape,
        "{}: mask of shape {} does not broadcast to the tensor's shape {}", op, mask.shape(),
        shape);
  std::vector<int64_t> positions;
  const real* base = mask.storage()->data();
  for_each_offset(shape, detail::broadcast_strides(mask, shape), mask.offset(),
                  [&](int64_t i, int64_t position) {
                    if (base[position] != 0) positions.push_back(i);
                  });
  return positions;
}

// y[p] = x[sources[p]], y of shape `shape`, x read at row-major offsets
// dx = zeros shaped like x, with dy[p] added at sources[p]
// gather's forward and backward. dx is linear in dy, and the map it is the
// adjoint of is this pick, which a recorded backward applies (and records).
Tensor pick_at(const char* name, const Tensor& x,
               std::shared_ptr<const std::vector<int64_t>> sources, const Shape& shape) {
  const Tensor values = x.contiguous_data();
  Tensor y = Tensor::empty(shape);
  for (size_t p = 0; p < sources->size(); ++p) y.data()[p] = values.data()[(*sources)[p]];
  return record(name, y, {x}, [name, sources, x_shape = x.shape()](const Tensor& dy_in) {
    const Tensor dy = dy_in.contiguous_data();
    Tensor dx = zeros(x_shape);
    for (size_t p = 0; p < sources->size(); ++p) dx.data()[(*sources)[p]] += dy.data()[p];
    return Gradients{
        adjoint(name, dx, dy_in, [name, sources, y_shape = dy_in.shape()](const Tensor& g) {
          return pick_at(name, g, sources, y_shape);
        })};
  });
}

}  // namespace

// y = x with slices along `axis` picked by `indices`; y.shape[axis] = #indices
// dx[…, indices[i], …] += dy[…, i, …]   (the adjoint of index_select itself)
Tensor index_select(const Tensor& x, int64_t axis_in, const std::vector<int64_t>& indices) {
  check_defined("index_select", x);
  const int64_t axis = normalize_axis("index_select", axis_in, x.dim());
  const AxisSplit split = split_at(x.shape(), axis);
  for (int64_t index : indices) {
    check(0 <= index && index < split.n,
          "index_select: index {} out of range for axis {} of shape {} (valid: 0..{})", index, axis,
          x.shape(), split.n - 1);
  }
  const Tensor values = x.contiguous_data();
  const auto count = static_cast<int64_t>(indices.size());
  Shape shape = x.shape();
  shape[axis] = count;
  Tensor y = Tensor::empty(shape);
  for (int64_t o = 0; o < split.outer; ++o) {
    for (int64_t i = 0; i < count; ++i) {
      std::copy_n(values.data() + (o * split.n + indices[i]) * split.inner, split.inner,
                  y.data() + (o * count + i) * split.inner);
    }
  }
  return record("index_select", y, {x},
                [split, count, indices, axis, x_shape = x.shape()](const Tensor& dy_in) {
                  const Tensor dy = dy_in.contiguous_data();
                  Tensor dx = zeros(x_shape);
                  for (int64_t o = 0; o < split.outer; ++o) {
                    for (int64_t i = 0; i < count; ++i) {
                      kernels::accumulate(dx.data() + (o * split.n + indices[i]) * split.inner,
                                          dy.data() + (o * count + i) * split.inner, split.inner);
                    }
                  }
                  if (!grad_enabled()) return Gradients{dx};  // (no copy of indices)
                  return Gradients{adjoint(
                      "index_select", dx, dy_in,
                      [axis, indices](const Tensor& g) { return index_select(g, axis, indices); })};
                });
}

// y[p] = x[p with its `axis` coordinate replaced by index[p]]  (torch.gather)
// dx[that position] += dy[p]      (pick_at with those positions)
Tensor gather(const Tensor& x, int64_t axis_in, const std::vector<int64_t>& index,
              const Shape& index_shape) {
  check_defined("gather", x);
  const int64_t axis = normalize_axis("gather", axis_in, x.dim());
  check(index_shape.ndim() == x.dim(),
        "gather: index shape {} must have as many dims as the input {}", index_shape, x.shape());
  check(static_cast<int64_t>(index.size()) == index_shape.numel(),
        "gather: {} index values for index shape {}, which has {} entries; they must match",
        index.size(), index_shape, index_shape.numel());
  for (int64_t d = 0; d < x.dim(); ++d) {
    check(d == axis || index_shape[d] <= x.shape()[d],
          "gather: index shape {} is larger than input {} at axis {}", index_shape, x.shape(), d);
  }
  // Storage offsets (into a contiguous x) of every gathered entry.
  const Strides x_strides = contiguous_strides(x.shape());
  auto sources = std::make_shared<std::vector<int64_t>>(index.size());
  std::vector<int64_t> coordinate(x.dim(), 0);
  for (size_t p = 0; p < index.size(); ++p) {
    check(0 <= index[p] && index[p] < x.shape()[axis],
          "gather: index {} out of range for axis {} of shape {}", index[p], axis, x.shape());
    int64_t offset = 0;
    for (int64_t d = 0; d < x.dim(); ++d) {
      offset += (d == axis ? index[p] : coordinate[d]) * x_strides[d];
    }
    (*sources)[p] = offset;
    for (int64_t d = x.dim() - 1; d >= 0; --d) {  // next coordinate in index_shape
      if (++coordinate[d] < index_shape[d]) break;
      coordinate[d] = 0;
    }
  }
  return pick_at("gather", x, std::move(sources), index_shape);
}

// y = value where mask ≠ 0, else x        dx = dy where mask = 0, else 0
Tensor masked_fill(const Tensor& x, const Tensor& mask, real value) {
  check_defined("masked_fill", x);
  const std::vector<int64_t> positions = mask_positions("masked_fill", mask, x.shape());
  Tensor y = x.clone_data();
  Tensor keep = ones(x.shape());
  for (int64_t p : positions) {
    y.data()[p] = value;
    keep.data()[p] = 0;
  }
  return record("masked_fill", y, {x},
                [keep](const Tensor& dy) { return Gradients{mul(dy, keep)}; });
}

// y = the entries of x where mask ≠ 0, as 1-D     dx = zeros with dy put back
// (the adjoint of picking those entries: pick_at)
Tensor masked_select(const Tensor& x, const Tensor& mask) {
  check_defined("masked_select", x);
  auto positions =
      std::make_shared<std::vector<int64_t>>(mask_positions("masked_select", mask, x.shape()));
  const Tensor values = x.contiguous_data();
  Tensor y = Tensor::empty({static_cast<int64_t>(positions->size())});
  for (size_t i = 0; i < positions->size(); ++i) y.data()[i] = values.data()[(*positions)[i]];
  return record("masked_select", y, {x}, [positions, x_shape = x.shape()](const Tensor& dy_in) {
    const Tensor dy = dy_in.contiguous_data();
    Tensor dx = zeros(x_shape);
    for (size_t i = 0; i < positions->size(); ++i) dx.data()[(*positions)[i]] = dy.data()[i];
    return Gradients{adjoint("masked_select", dx, dy_in, [positions](const Tensor& g) {
      return pick_at("masked_select", g, positions, {static_cast<int64_t>(positions->size())});
    })};
  });
}

}  // namespace attograd

namespace attograd {

namespace {

// y[p, :] = table[ids[p], :], 0 where ids[p] = padding_idx     y: (*, D), y_shape
// The map whose adjoint is embedding's dweight, with ops (recorded).
Tensor rows_read(const Tensor& table, const std::vector<int64_t>& ids, const Shape& y_shape,
                 std::optional<int64_t> padding_idx) {
  const Shape ids_shape(Dims(y_shape.begin(), y_shape.end() - 1));
  const Tensor read = embedding(table, ids, ids_shape, padding_idx, /*sparse=*/false);
  if (!padding_idx) return read;
  Shape mask_shape = ids_shape;
  mask_shape.push_back(1);
  Tensor is_padding = zeros(mask_shape);
  for (size_t p = 0; p < ids.size(); ++p) is_padding.data()[p] = ids[p] == *padding_idx ? 1 : 0;
  return masked_fill(read, is_padding, real(0));
}

}  // namespace

// y[p, :] = weight[ids[p], :]                    ids: (*) -> y: (*, D)
// dweight[v, :] = Σ_{p : ids[p] = v} dy[p, :]    for every v ≠ padding_idx; 0 for padding_idx
//
// index_select along axis 0, except that the padding row's gradient is
// dropped. Masking there (rather than multiplying the output by a mask) keeps
// the forward exactly PyTorch's, which returns whatever the padding row holds.
// With `sparse` the table's gradient is named as rows (Gradient::rows), as
// PyTorch's nn.Embedding(sparse=True) does: the fast path then keeps only the
// rows read, instead of a (V,D) matrix of zeros with a few rows filled.
// dweight is linear in dy; the map it is the adjoint of looks rows up in a
// (V,D) tensor and reads 0 at the padding positions (rows_read), which a
// recorded backward applies.
Tensor embedding(const Tensor& weight, const std::vector<int64_t>& ids_in, const Shape& ids_shape,
                 std::optional<int64_t> padding_idx, bool sparse) {
  check_defined("embedding", weight);
  check(weight.dim() == 2, "embedding: the table has shape {}; it must be (V,D)", weight.shape());
  const int64_t V = weight.shape()[0], D = weight.shape()[1];
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
  return record(
      "embedding", y, {weight}, [ids, V, D, padding_idx, sparse](const Tensor& dy_in) -> Gradients {
        const Tensor dy = dy_in.contiguous_data();
        if (sparse) {
          // Recording, the rows are dy as given (n,D), with its history: Gradient::rows then
          // forms the table's gradient as a recorded scatter of them.
          const Tensor values =
              grad_enabled() ? reshape(dy_in, {static_cast<int64_t>(ids->size()), D}) : dy;
          return {Gradient::rows({V, D}, *ids, values, padding_idx)};
        }
        Tensor dweight = zeros({V, D});
        for (size_t p = 0; p < ids->size(); ++p) {
          const int64_t id = (*ids)[p];
          if (id == padding_idx) continue;
          kernels::accumulate(dweight.data() + id * D, dy.data() + static_cast<int64_t>(p) * D, D);
        }
        return {adjoint("embedding", dweight, dy_in,
                        [ids, padding_idx, y_shape = dy_in.shape()](const Tensor& g) {
                          return rows_read(g, *ids, y_shape, padding_idx);
                        })};
      });
}

}  // namespace attograd
