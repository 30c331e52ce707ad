// autograd/fast/fused.cpp — see the header.
#include "autograd/fast/fused.hpp"

#include "autograd/fast/fast.hpp"
#include "autograd/op_helpers.hpp"
#include "autograd/ops.hpp"

namespace attograd::fast {

namespace {
thread_local bool fused_on = true;
}  // namespace

bool fused_ops() { return fused_on; }
void set_fused_ops(bool on) { fused_on = on; }

namespace detail {

namespace {

// attention_pool as the reference path records it, mul, softmax and bmm: the
// composition whose gradients a recording backward (create_graph) takes.
Tensor composed(const std::vector<Tensor>& inputs) {
  Switches unfused = Switches::current();
  unfused.fused_ops = false;
  const UseSwitches guard(unfused);
  return attention_pool(inputs[0], inputs[1], inputs[2]);
}

}  // namespace

Tensor fused_attention_pool(const Tensor& scores, const Tensor& values, const Tensor& scale,
                            Tensor* weights) {
  const Shape& s = scores.shape();
  const int64_t B = s[0], Tq = s[1], Tk = s[2], dv = values.shape()[2];
  const int64_t scale_count = !scale.defined() ? 0 : scale.numel() == 1 ? 1 : Tk;
  // Row-major handles on the inputs' numbers: the inputs themselves when they
  // are laid out so already (the closure keeps only their values' storage
  // alive either way), else copies.
  auto row_major = [](const Tensor& t) {
    return !t.defined() || t.is_contiguous() ? t : t.contiguous_data();
  };
  const Tensor score_rows = row_major(scores);
  const Tensor value_rows = row_major(values);
  const Tensor factors = row_major(scale);
  Tensor alpha = Tensor::empty(s);
  Tensor out = Tensor::empty({B, Tq, dv});
  kernels::attention_pool_forward(out.data(), alpha.data(), score_rows.data(),
                                  scale_count > 0 ? factors.data() : nullptr, scale_count,
                                  value_rows.data(), B, Tq, Tk, dv);
  if (weights != nullptr) *weights = alpha;  // made here: it has no history
  const bool need_scores = requires_grad(scores), need_values = requires_grad(values);
  const bool need_scale = scale.defined() && requires_grad(scale);
  return record("attention_pool", out, {scores, values, scale},
                [alpha, value_rows, pooled = saved_output(out),
                 scores_kept = need_scale ? score_rows : Tensor(), factors,
                 scale_shape = scale.defined() ? scale.shape() : Shape{}, scale_count, need_scores,
                 need_values, need_scale, B, Tq, Tk, dv](const Tensor& dy) {
                  if (grad_enabled()) {  // recording: scores, values, scale as given
                    const Node::Inputs& given = backward_inputs();
                    return composed_gradients(composed, {given[0], given[1], given[2]}, dy);
                  }
                  const Tensor grad_out = dy.contiguous_data();
                  Tensor dscores = need_scores ? Tensor::empty(alpha.shape()) : Tensor();
                  Tensor dvalues = need_values ? Tensor::empty(value_rows.shape()) : Tensor();
                  Tensor dscale = need_scale ? Tensor::empty(scale_shape) : Tensor();
                  kernels::attention_pool_backward(
                      need_scores ? dscores.data() : nullptr, need_scale ? dscale.data() : nullptr,
                      need_values ? dvalues.data() : nullptr, grad_out.data(), alpha.data(),
                      need_scale ? scores_kept.data() : nullptr,
                      scale_count > 0 ? factors.data() : nullptr, scale_count, value_rows.data(),
                      pooled.data(), B, Tq, Tk, dv);
                  return Gradients{dscores, dvalues, dscale};
                });
}

}  // namespace detail

}  // namespace attograd::fast
