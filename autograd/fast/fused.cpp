// autograd/fast/fused.cpp — see the header.
#include "autograd/fast/fused.hpp"

#include "autograd/op_helpers.hpp"
#include "autograd/ops.hpp"

namespace attograd::fast {

namespace {
thread_local bool fused_on = true;
}  // namespace

bool fused_ops() { return fused_on; }
void set_fused_ops(bool on) { fused_on = on; }

Tensor attention_pool(const Tensor& scores, const Tensor& values, Tensor* weights) {
  check_defined("attention_pool", scores);
  check_defined("attention_pool", values);
  const Shape& s = scores.shape();
  const Shape& v = values.shape();
  check(s.ndim() == 3 && v.ndim() == 3 && s[0] == v[0] && s[2] == v[1],
        "attention_pool: scores {} and values {} must be (B,Tq,Tk) and (B,Tk,dv), with the "
        "same batch B and one value per key (Tk)",
        s, v);
  if (!fused_on) {  // the composed twin
    const Tensor alpha = softmax(scores, 2);
    if (weights != nullptr) *weights = detach(alpha);
    return bmm(alpha, values);
  }
  const int64_t B = s[0], Tq = s[1], Tk = s[2], dv = v[2];
  const Tensor score_rows = scores.contiguous_data();  // without history, row-major
  const Tensor value_rows = values.contiguous_data();
  Tensor alpha = Tensor::empty(s);
  Tensor out = Tensor::empty({B, Tq, dv});
  kernels::attention_pool_forward(out.data(), alpha.data(), score_rows.data(), value_rows.data(), B,
                                  Tq, Tk, dv);
  if (weights != nullptr) *weights = alpha;  // made here: it has no history
  return record("attention_pool", out, {scores, values},
                [alpha, value_rows, pooled = saved_output(out), need_values = requires_grad(values),
                 B, Tq, Tk, dv](const Tensor& dy) {
                  const Tensor grad_out = dy.contiguous_data();
                  Tensor dscores = Tensor::empty(alpha.shape());
                  Tensor dvalues = need_values ? Tensor::empty(value_rows.shape()) : Tensor();
                  kernels::attention_pool_backward(
                      dscores.data(), need_values ? dvalues.data() : nullptr, grad_out.data(),
                      alpha.data(), value_rows.data(), pooled.data(), B, Tq, Tk, dv);
                  return Gradients{dscores, dvalues};
                });
}

}  // namespace attograd::fast
