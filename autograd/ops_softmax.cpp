// autograd/ops_softmax.cpp — softmax and log_softmax along any axis, and the
// masked softmax attention uses.
//
// The kernels work on rows (the last axis). For another axis, the op moves it
// last with a transpose, runs the kernel, and moves it back; the backward does
// the same dance with the gradient.
#include <fmt/format.h>

#include <string>

#include "autograd/fast/fused.hpp"
#include "autograd/op_helpers.hpp"
#include "autograd/ops.hpp"

namespace attograd {

namespace {

using RowKernel = void (*)(real*, const real*, int64_t, int64_t);
using RowBackward = void (*)(real*, const real*, const real*, int64_t, int64_t);
// The same backward written with ops, for a backward pass that records
// (create_graph): x and dy as given -> dx, each with its history.
using RecordedBackward = Tensor (*)(const Tensor& x, const Tensor& dy, int64_t axis);

Tensor softmax_like(const char* name, const Tensor& x, int64_t axis_in, RowKernel forward,
                    RowBackward backward, RecordedBackward recorded_backward) {
  check_defined(name, x);
  const int64_t axis = normalize_axis(name, axis_in, x.dim());
  const int64_t last = x.dim() - 1;
  // The rows to normalise, contiguous: a view of x's own values when the axis
  // is already last and x is stored row-major (no copy), else a copy.
  const Tensor rows_in =
      axis == last ? x.contiguous_data() : transpose(detach(x), axis, last).contiguous_data();
  const int64_t cols = x.shape()[axis];
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  Tensor rows_out = Tensor::empty(rows_in.shape());
  forward(rows_out.data(), rows_in.data(), rows, cols);
  Tensor y = axis == last ? rows_out : transpose(rows_out, axis, last).contiguous_data();
  return record(name, y, {x}, [=, y_rows = saved_output(rows_out)](const Tensor& dy) {
    if (grad_enabled()) return Gradients{recorded_backward(backward_inputs()[0], dy, axis)};
    const Tensor dy_rows = axis != last         ? transpose(dy, axis, last).contiguous_data()
                           : dy.is_contiguous() ? dy
                                                : dy.contiguous_data();
    Tensor dx_rows = Tensor::empty(dy_rows.shape());
    backward(dx_rows.data(), y_rows.data(), dy_rows.data(), rows, cols);
    return Gradients{axis == last ? dx_rows : transpose(dx_rows, axis, last)};
  });
}

// The backwards below as ops of x and dy, y recomputed from x: recorded, so a
// gradient of them can be taken again.
Tensor softmax_backward_recorded(const Tensor& x, const Tensor& dy, int64_t axis) {
  const Tensor y = softmax(x, axis);
  return y * (dy - sum(dy * y, {axis}, /*keepdim=*/true));
}

Tensor log_softmax_backward_recorded(const Tensor& x, const Tensor& dy, int64_t axis) {
  return dy - softmax(x, axis) * sum(dy, {axis}, /*keepdim=*/true);
}

}  // namespace

// y = exp(x) / Σ exp(x) along axis        dx = y ⊙ (dy − Σ dy ⊙ y)
Tensor softmax(const Tensor& x, int64_t axis) {
  return softmax_like("softmax", x, axis, kernels::softmax_forward, kernels::softmax_backward,
                      softmax_backward_recorded);
}

// y = x − log Σ exp(x) along axis          dx = dy − softmax(x) ⊙ Σ dy
Tensor log_softmax(const Tensor& x, int64_t axis) {
  return softmax_like("log_softmax", x, axis, kernels::log_softmax_forward,
                      kernels::log_softmax_backward, log_softmax_backward_recorded);
}

// The valid length of each of the B·Tq rows of a (B,Tq,Tk) score tensor:
// valid_lens repeated over the queries when there is one per example, taken
// as is when there is one per query, Tk everywhere when there are none.
std::vector<int64_t> masked_softmax_row_lengths(const std::string& who, const Shape& scores,
                                                const std::vector<int64_t>& valid_lens) {
  const int64_t B = scores[0], Tq = scores[1], Tk = scores[2];
  const auto count = static_cast<int64_t>(valid_lens.size());
  if (count == 0) return std::vector<int64_t>(B * Tq, Tk);
  check(count == B || count == B * Tq,
        "{}: {} valid lengths [{}] for scores of shape {} (B = {}, Tq = {}); give one per "
        "example (B = {}), one per query (B·Tq = {}), or none",
        who, count, fmt::join(valid_lens, ", "), scores, B, Tq, B, B * Tq);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t n = valid_lens[i];
    check(1 <= n && n <= Tk,
          "{}: valid length {} at position {} is outside [1, Tk = {}] for scores of shape {} "
          "(valid lengths [{}]); a valid length counts the real keys of a row: at least one, "
          "at most all Tk of them",
          who, n, i, Tk, scores, fmt::join(valid_lens, ", "));
  }
  if (count == B * Tq) return valid_lens;
  std::vector<int64_t> rows;
  rows.reserve(B * Tq);
  for (int64_t b = 0; b < B; ++b) rows.insert(rows.end(), Tq, valid_lens[b]);
  return rows;
}

// ---- Masked softmax ---------------------------------------------------------------
//
// An op of its own: each row runs the softmax kernel over its valid prefix
// only, so the padding is never read and gets exactly zero weight and zero
// gradient — no "−1e6" fill value that a large score could beat.

// y[r, :n_r] = softmax(x[r, :n_r]), y[r, n_r:] = 0         rows r of (B·Tq, Tk)
// dx[r, :n_r] = y ⊙ (dy − Σ dy ⊙ y), dx[r, n_r:] = 0
Tensor masked_softmax(const Tensor& scores, const std::vector<int64_t>& valid_lens) {
  check(scores.defined(), "masked_softmax: the scores are undefined");
  check(scores.dim() == 3, "masked_softmax: scores of shape {} must be 3-D, (batch, queries, keys)",
        scores.shape());
  const int64_t Tk = scores.shape()[2];
  check(Tk >= 1, "masked_softmax: scores of shape {} have no keys (Tk = 0)", scores.shape());
  std::vector<int64_t> lengths =
      masked_softmax_row_lengths("masked_softmax", scores.shape(), valid_lens);
  const Tensor x = detach(scores).contiguous_data();
  Tensor y = Tensor::empty(scores.shape());
  y.fill_(real(0));
  for (size_t r = 0; r < lengths.size(); ++r) {
    const int64_t start = static_cast<int64_t>(r) * Tk;
    kernels::softmax_forward(y.data() + start, x.data() + start, 1, lengths[r]);
  }
  // Recording (create_graph), the same formula with ops: y recomputed from the
  // scores as given, with one valid length per row.
  return record("masked_softmax", y, {scores},
                [y = saved_output(y), lengths = std::move(lengths), Tk](const Tensor& dy) {
                  if (grad_enabled()) {
                    const Tensor weights = masked_softmax(backward_inputs()[0], lengths);
                    return Gradients{weights * (dy - sum(dy * weights, {2}, /*keepdim=*/true))};
                  }
                  const Tensor grad_out = dy.contiguous_data();
                  Tensor dx = Tensor::empty(y.shape());
                  dx.fill_(real(0));
                  for (size_t r = 0; r < lengths.size(); ++r) {
                    const int64_t start = static_cast<int64_t>(r) * Tk;
                    kernels::softmax_backward(dx.data() + start, y.data() + start,
                                              grad_out.data() + start, 1, lengths[r]);
                  }
                  return Gradients{dx};
                });
}

// scores (B,Tq,Tk), values (B,Tk,dv), scale: undefined, 1 or (Tk) -> (B,Tq,dv)
Tensor attention_pool(const Tensor& scores, const Tensor& values, const Tensor& scale,
                      Tensor* weights) {
  check_defined("attention_pool", scores);
  check_defined("attention_pool", values);
  const Shape& s = scores.shape();
  const Shape& v = values.shape();
  check(s.ndim() == 3 && v.ndim() == 3 && s[0] == v[0] && s[2] == v[1],
        "attention_pool: scores {} and values {} must be (B,Tq,Tk) and (B,Tk,dv), with the "
        "same batch B and one value per key (Tk)",
        s, v);
  const int64_t Tk = s[2];
  check(!scale.defined() || (scale.dim() <= 1 && (scale.numel() == 1 || scale.numel() == Tk)),
        "attention_pool: scale {} must be one number or one per key ({}) for scores {}",
        scale.defined() ? scale.shape() : Shape{}, Tk, s);
  if (fast::fused_ops()) return fast::detail::fused_attention_pool(scores, values, scale, weights);
  const Tensor alpha = softmax(scale.defined() ? scores * scale : scores, 2);
  if (weights != nullptr) *weights = detach(alpha);
  return bmm(alpha, values);
}

}  // namespace attograd
