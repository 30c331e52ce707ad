// autograd/ops_gru.cpp — one GRU step as a single graph node.
//
// Composed from primitives, a GRU step would record about twenty nodes (two
// matmuls, bias adds, slices, two sigmoids, a tanh, products and sums), each
// with its own output buffer and its own pass over memory. Here forward is two
// matrix products and one fused gate kernel (tensor/kernels_gru.hpp), and
// backward is one fused gate kernel and the matrix products for the six
// gradients. tests/nn/test_gru.cpp keeps the composed version as the
// specification and checks the two agree, values and gradients. The weight
// gradients are named as products, dW = Σ dgᵀ x (Gradient::product), which
// the fast path keeps as factors over a whole sequence. A backward pass that
// records (create_graph) differentiates the composed step instead
// (gru_cell_composed below), so its gradients have a history.
#include "autograd/ops_gru.hpp"

#include <array>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/op_helpers.hpp"
#include "autograd/ops.hpp"
#include "tensor/factory.hpp"
#include "tensor/kernels_gru.hpp"

namespace attograd {

namespace {

using kernels::Layout;

// What backward needs, saved by name. The inputs are detached contiguous
// views, never the input handles themselves (see autograd/node.hpp).
struct GruSaved {
  Tensor x, h, weight_ih, weight_hh;  // (B,in), (B,H), (3H,in), (3H,H)
  Tensor r, z, n, gh_n;               // (B,H) each, from the forward pass
  // Which gradients to compute: only those of inputs that require grad.
  bool need_x, need_h, need_weight_ih, need_weight_hh, need_bias_ih, need_bias_hh;
  // The six inputs as given, with their history, for a backward pass that
  // records (create_graph).
  std::array<Tensor, 6> given;
};

Tensor saved_values(const Tensor& t) { return t.defined() ? detach(t).contiguous_data() : t; }

void check_gru_shapes(const Tensor& x, const Tensor& h, const Tensor& weight_ih,
                      const Tensor& weight_hh, const Tensor& bias_ih, const Tensor& bias_hh) {
  for (const Tensor* t : {&x, &h, &weight_ih, &weight_hh}) check_defined("gru_cell", *t);
  check(x.dim() == 2 && h.dim() == 2,
        "gru_cell: x {} and h {} must be 2-D, (batch, input) and (batch, hidden); for a "
        "sequence run one step per time step",
        x.shape(), h.shape());
  check(x.shape()[0] == h.shape()[0], "gru_cell: x {} and h {} have different batch sizes",
        x.shape(), h.shape());
  const int64_t input = x.shape()[1], hidden = h.shape()[1];
  const Shape weight_ih_shape{3 * hidden, input}, weight_hh_shape{3 * hidden, hidden};
  const Shape bias_shape{3 * hidden};
  check(weight_ih.shape() == weight_ih_shape,
        "gru_cell: weight_ih has shape {}; with x {} and h {} it must be (3·hidden,input) = {}",
        weight_ih.shape(), x.shape(), h.shape(), weight_ih_shape);
  check(weight_hh.shape() == weight_hh_shape,
        "gru_cell: weight_hh has shape {}; with h {} it must be (3·hidden,hidden) = {}",
        weight_hh.shape(), h.shape(), weight_hh_shape);
  for (const auto& [name, bias] :
       {std::pair{"bias_ih", &bias_ih}, std::pair{"bias_hh", &bias_hh}}) {
    if (!bias->defined()) continue;  // no bias; shape() of it would throw
    check(bias->shape() == bias_shape,
          "gru_cell: {} has shape {}; it must be (3·hidden) = {}, or undefined for no bias", name,
          bias->shape(), bias_shape);
  }
}

GruSaved make_saved(const Tensor& x, const Tensor& h, const Tensor& weight_ih,
                    const Tensor& weight_hh, const Tensor& bias_ih, const Tensor& bias_hh) {
  const int64_t B = x.shape()[0], H = h.shape()[1];
  return GruSaved{.x = saved_values(x),
                  .h = saved_values(h),
                  .weight_ih = saved_values(weight_ih),
                  .weight_hh = saved_values(weight_hh),
                  .r = Tensor::empty({B, H}),
                  .z = Tensor::empty({B, H}),
                  .n = Tensor::empty({B, H}),
                  .gh_n = Tensor::empty({B, H}),
                  .need_x = requires_grad(x),
                  .need_h = requires_grad(h),
                  .need_weight_ih = requires_grad(weight_ih),
                  .need_weight_hh = requires_grad(weight_hh),
                  .need_bias_ih = bias_ih.defined() && requires_grad(bias_ih),
                  .need_bias_hh = bias_hh.defined() && requires_grad(bias_hh),
                  .given = {x, h, weight_ih, weight_hh, bias_ih, bias_hh}};
}

// ---- The composition ---------------------------------------------------------------
//
// The step written with ops (linear, slice, sigmoid, tanh, mul, add): the
// specification, and what a backward pass that records (create_graph)
// differentiates instead of the fused kernels, so the gradients it returns
// have a history. The formulas are those of gru_cell below.
Tensor gru_cell_composed(const Tensor& x, const Tensor& h, const Tensor& weight_ih,
                         const Tensor& weight_hh, const Tensor& bias_ih, const Tensor& bias_hh) {
  const int64_t H = h.shape()[1];
  const Tensor gi = linear(x, weight_ih, bias_ih);  // (B,3H)
  const Tensor gh = linear(h, weight_hh, bias_hh);  // (B,3H)
  auto gate = [H](const Tensor& g, int64_t k) { return slice(g, 1, k * H, (k + 1) * H); };
  const Tensor r = sigmoid(gate(gi, 0) + gate(gh, 0));
  const Tensor z = sigmoid(gate(gi, 1) + gate(gh, 1));
  const Tensor n = tanh(gate(gi, 2) + r * gate(gh, 2));
  return (real(1) - z) * n + z * h;
}

// inputs: x, h, weight_ih, weight_hh, bias_ih, bias_hh as given -> their
// gradients at dh', as recorded tensors.
Gradients composed_cell_gradients(const std::array<Tensor, 6>& given, const Tensor& dh_new) {
  return composed_gradients(
      [](const std::vector<Tensor>& in) {
        return gru_cell_composed(in[0], in[1], in[2], in[3], in[4], in[5]);
      },
      std::vector<Tensor>(given.begin(), given.end()), dh_new);
}

}  // namespace

// One GRU step (PyTorch's GRUCell), gates stacked r, z, n:
//
//   gi = x W_ihᵀ + b_ih         (B,in) @ (in,3H) → (B,3H) = [gi_r | gi_z | gi_n]
//   gh = h W_hhᵀ + b_hh         (B,H)  @ (H,3H)  → (B,3H) = [gh_r | gh_z | gh_n]
//   r  = σ(gi_r + gh_r)                  reset gate
//   z  = σ(gi_z + gh_z)                  update gate
//   n  = tanh(gi_n + r ⊙ gh_n)           candidate; gh_n = W_hn h + b_hn
//   h' = (1 − z) ⊙ n + z ⊙ h
//
// Backward, given dh' (B,H). Name the pre-activations a_r = gi_r + gh_r,
// a_z = gi_z + gh_z, a_n = gi_n + r ⊙ gh_n:
//
//   dn   = dh' ⊙ (1 − z)                 from h' = (1 − z) ⊙ n + …
//   dz   = dh' ⊙ (h − n)                 ∂h'/∂z = h − n
//   da_n = dn ⊙ (1 − n²)                 tanh' = 1 − tanh²
//   dr   = da_n ⊙ gh_n                   a_n holds r ⊙ (W_hn h + b_hn)
//   da_r = dr ⊙ r ⊙ (1 − r)              σ' = σ(1 − σ)
//   da_z = dz ⊙ z ⊙ (1 − z)
//   dgi  = [da_r | da_z | da_n]          gi enters a_r, a_z, a_n with weight 1
//   dgh  = [da_r | da_z | r ⊙ da_n]      gh_n enters a_n multiplied by r
//
// and then the products, each reading a stored matrix transposed where needed:
//
//   dx    = dgi @ W_ih               (B,3H) @ (3H,in) → (B,in)
//   dh    = z ⊙ dh' + dgh @ W_hh     (B,3H) @ (3H,H)  → (B,H)
//   dW_ih = dgiᵀ @ x                 (3H,B) @ (B,in)  → (3H,in)
//   dW_hh = dghᵀ @ h                 (3H,B) @ (B,H)   → (3H,H)
//   db_ih = Σ_batch dgi,  db_hh = Σ_batch dgh          (3H)
//
// h reaches h' by four paths: directly through z ⊙ h (the first term of dh),
// and through gh into r, into z, and into n via r ⊙ (W_hn h + b_hn) — the
// three that dgh @ W_hh collects.
namespace {

// Forward of one step: fills saved.r, z, n, gh_n and returns h'.
Tensor gru_step_forward(GruSaved& saved, const Tensor& bias_ih, const Tensor& bias_hh, int64_t B,
                        int64_t input, int64_t H) {
  Tensor gi = Tensor::empty({B, 3 * H});
  const Tensor b_ih = saved_values(bias_ih);
  kernels::affine_forward(gi.data(), saved.x.data(), saved.weight_ih.data(),
                          b_ih.defined() ? b_ih.data() : nullptr, B, input, 3 * H);
  Tensor gh = Tensor::empty({B, 3 * H});
  const Tensor b_hh = saved_values(bias_hh);
  kernels::affine_forward(gh.data(), saved.h.data(), saved.weight_hh.data(),
                          b_hh.defined() ? b_hh.data() : nullptr, B, H, 3 * H);
  Tensor h_new = Tensor::empty({B, H});
  kernels::gru_gates_forward(h_new.data(), saved.r.data(), saved.z.data(), saved.n.data(),
                             saved.gh_n.data(), gi.data(), gh.data(), saved.h.data(), B, H);
  return h_new;
}

struct GruStepGradients {
  Tensor dgi, dgh;                    // (B,3H): the gate pre-activations' gradients
  Tensor dx, dh, dbias_ih, dbias_hh;  // undefined where not needed
};

// Backward of one step, all but the weight gradients (which need dgi, dgh).
GruStepGradients gru_step_backward(const GruSaved& saved, const Tensor& dh_new_in, int64_t B,
                                   int64_t input, int64_t H) {
  const Tensor dh_new = dh_new_in.contiguous_data();
  GruStepGradients g;
  g.dgi = Tensor::empty({B, 3 * H});
  g.dgh = Tensor::empty({B, 3 * H});
  Tensor dh_direct = Tensor::empty({B, H});
  kernels::gru_gates_backward(g.dgi.data(), g.dgh.data(), dh_direct.data(), dh_new.data(),
                              saved.r.data(), saved.z.data(), saved.n.data(), saved.gh_n.data(),
                              saved.h.data(), B, H);
  if (saved.need_x) {  // dgi @ W_ih
    g.dx = Tensor::empty({B, input});
    kernels::matmul_forward(g.dx.data(), g.dgi.data(), Layout::normal, saved.weight_ih.data(),
                            Layout::normal, B, 3 * H, input);
  }
  if (saved.need_h) {  // z ⊙ dh' + dgh @ W_hh
    g.dh = Tensor::empty({B, H});
    kernels::matmul_forward(g.dh.data(), g.dgh.data(), Layout::normal, saved.weight_hh.data(),
                            Layout::normal, B, 3 * H, H);
    kernels::accumulate(g.dh.data(), dh_direct.data(), B * H);
  }
  if (saved.need_bias_ih) {  // Σ over the batch
    g.dbias_ih = Tensor::empty({3 * H});
    kernels::sum_axis_forward(g.dbias_ih.data(), g.dgi.data(), 1, B, 3 * H);
  }
  if (saved.need_bias_hh) {
    g.dbias_hh = Tensor::empty({3 * H});
    kernels::sum_axis_forward(g.dbias_hh.data(), g.dgh.data(), 1, B, 3 * H);
  }
  return g;
}

}  // namespace

Tensor gru_cell(const Tensor& x_in, const Tensor& h_in, const Tensor& weight_ih_in,
                const Tensor& weight_hh_in, const Tensor& bias_ih_in, const Tensor& bias_hh_in) {
  check_gru_shapes(x_in, h_in, weight_ih_in, weight_hh_in, bias_ih_in, bias_hh_in);
  const int64_t B = x_in.shape()[0], input = x_in.shape()[1], H = h_in.shape()[1];
  GruSaved saved = make_saved(x_in, h_in, weight_ih_in, weight_hh_in, bias_ih_in, bias_hh_in);
  const Tensor h_new = gru_step_forward(saved, bias_ih_in, bias_hh_in, B, input, H);

  // dh' -> gradients of (x, h, W_ih, W_hh, b_ih, b_hh), by the formulas above;
  // dW_ih = dgiᵀ x and dW_hh = dghᵀ h are named as products (Gradient::product).
  auto gradients = [saved = std::move(saved), B, input, H](const Tensor& dh_new) {
    if (grad_enabled()) return composed_cell_gradients(saved.given, dh_new);
    const GruStepGradients g = gru_step_backward(saved, dh_new, B, input, H);
    return Gradients{g.dx,
                     g.dh,
                     saved.need_weight_ih ? Gradient::product(g.dgi, saved.x) : Gradient(),
                     saved.need_weight_hh ? Gradient::product(g.dgh, saved.h) : Gradient(),
                     g.dbias_ih,
                     g.dbias_hh};
  };
  return record("gru_cell", h_new, {x_in, h_in, weight_ih_in, weight_hh_in, bias_ih_in, bias_hh_in},
                std::move(gradients));
}

// ---- A whole sequence ----------------------------------------------------------
//
// The same step T times, as one node: h_t = cell(x_t, h_{t−1}), t = 1 … T.
//
// Forward:
//   GI = X W_ihᵀ + b_ih                  (T·B,in) @ (in,3H) → (T·B,3H), one product
//   for t = 1 … T:
//     gh_t = h_{t−1} W_hhᵀ + b_hh         (B,H) @ (H,3H) → (B,3H)
//     h_t, r_t, z_t, n_t, gh_n,t = gates(GI_t, gh_t, h_{t−1})
//
// Backward, given dY = dL/d(h_1 … h_T) (T,B,H). Each h_t reaches the loss
// directly (dY_t) and through h_{t+1}, so going back in time with
// dh = 0 after the last step:
//   for t = T … 1:
//     dh'_t = dY_t + dh
//     dGI_t, dGH_t, dh_direct = gates_backward(dh'_t, …)   as for one step
//     dh = dh_direct + dGH_t @ W_hh        (B,3H) @ (3H,H) → (B,H)
//   dh0   = dh
//   dX    = dGI @ W_ih                     (T·B,3H) @ (3H,in)  → (T·B,in)
//   dW_ih = dGIᵀ @ X                       (3H,T·B) @ (T·B,in) → (3H,in)
//   dW_hh = dGHᵀ @ H_prev                  (3H,T·B) @ (T·B,H)  → (3H,H)
//   db_ih = Σ_rows dGI,  db_hh = Σ_rows dGH
// where H_prev stacks h_0 … h_{T−1}. The weight gradients are one product
// each over the sequence (Gradient::product), not T products added up.
namespace {

struct GruSequenceSaved {
  Tensor x, h0, outputs, weight_ih, weight_hh;  // (T·B,in), (B,H), (T,B,H), (3H,in), (3H,H)
  Tensor r, z, n, gh_n;                         // (T,B,H) each, from the forward pass
  bool need_x, need_h0, need_weight_ih, need_weight_hh, need_bias_ih, need_bias_hh;
  std::array<Tensor, 6> given;  // x, h0, …, the inputs as given (create_graph)
};

// The sequence as T composed steps (h0 undefined: zeros) -> (T,B,H).
Tensor gru_sequence_composed(const std::vector<Tensor>& in) {
  const Tensor &x = in[0], &weight_hh = in[3];
  const int64_t T = x.shape()[0], B = x.shape()[1], H = weight_hh.shape()[1];
  Tensor h = in[1].defined() ? in[1] : zeros({B, H});
  std::vector<Tensor> outputs;
  for (int64_t t = 0; t < T; ++t) {
    h = gru_cell_composed(select(x, 0, t), h, in[2], weight_hh, in[4], in[5]);
    outputs.push_back(h);
  }
  return stack(outputs, 0);
}

void check_sequence_shapes(const Tensor& x, const Tensor& h0, const Tensor& weight_ih,
                           const Tensor& weight_hh, const Tensor& bias_ih, const Tensor& bias_hh) {
  for (const Tensor* t : {&x, &weight_ih, &weight_hh}) check_defined("gru_sequence", *t);
  check(x.dim() == 3 && weight_hh.dim() == 2,
        "gru_sequence: x {} must be (time, batch, input) and weight_hh {} (3·hidden, hidden)",
        x.shape(), weight_hh.shape());
  const int64_t B = x.shape()[1], input = x.shape()[2], H = weight_hh.shape()[1];
  check(weight_hh.shape() == Shape{3 * H, H} && weight_ih.shape() == Shape{3 * H, input},
        "gru_sequence: with x {} and weight_hh {}, weight_ih {} must be (3·hidden,input) = ({},{}) "
        "and weight_hh (3·hidden,hidden) = ({},{})",
        x.shape(), weight_hh.shape(), weight_ih.shape(), 3 * H, input, 3 * H, H);
  check(!h0.defined() || h0.shape() == Shape{B, H},
        "gru_sequence: h0 has shape {}; with x {} it must be (batch,hidden) = ({},{}), or "
        "undefined for zeros",
        h0.defined() ? h0.shape() : Shape{}, x.shape(), B, H);
  for (const auto& [name, bias] :
       {std::pair{"bias_ih", &bias_ih}, std::pair{"bias_hh", &bias_hh}}) {
    check(!bias->defined() || bias->shape() == Shape{3 * H},
          "gru_sequence: {} has shape {}; it must be ({}), or undefined for no bias", name,
          bias->defined() ? bias->shape() : Shape{}, 3 * H);
  }
}

}  // namespace

Tensor gru_sequence(const Tensor& x_in, const Tensor& h0_in, const Tensor& weight_ih_in,
                    const Tensor& weight_hh_in, const Tensor& bias_ih_in,
                    const Tensor& bias_hh_in) {
  check_sequence_shapes(x_in, h0_in, weight_ih_in, weight_hh_in, bias_ih_in, bias_hh_in);
  const int64_t T = x_in.shape()[0], B = x_in.shape()[1], input = x_in.shape()[2];
  const int64_t H = weight_hh_in.shape()[1], rows = T * B;
  const Tensor outputs = Tensor::empty({T, B, H});
  const Tensor x_values = saved_values(x_in);  // (T,B,in) row-major, read as (T·B,in)
  GruSequenceSaved saved{
      .x = x_values.as_strided({rows, input}, contiguous_strides({rows, input}), x_values.offset()),
      .h0 = h0_in.defined() ? saved_values(h0_in) : zeros({B, H}),
      .outputs = detach(outputs),  // not the handle: no cycle through the node
      .weight_ih = saved_values(weight_ih_in),
      .weight_hh = saved_values(weight_hh_in),
      .r = Tensor::empty({T, B, H}),
      .z = Tensor::empty({T, B, H}),
      .n = Tensor::empty({T, B, H}),
      .gh_n = Tensor::empty({T, B, H}),
      .need_x = requires_grad(x_in),
      .need_h0 = h0_in.defined() && requires_grad(h0_in),
      .need_weight_ih = requires_grad(weight_ih_in),
      .need_weight_hh = requires_grad(weight_hh_in),
      .need_bias_ih = bias_ih_in.defined() && requires_grad(bias_ih_in),
      .need_bias_hh = bias_hh_in.defined() && requires_grad(bias_hh_in),
      .given = {x_in, h0_in, weight_ih_in, weight_hh_in, bias_ih_in, bias_hh_in}};
  const Tensor b_ih = saved_values(bias_ih_in), b_hh = saved_values(bias_hh_in);

  Tensor gi = Tensor::empty({rows, 3 * H});  // every step's input projection, one product
  kernels::affine_forward(gi.data(), saved.x.data(), saved.weight_ih.data(),
                          b_ih.defined() ? b_ih.data() : nullptr, rows, input, 3 * H);
  Tensor gh = Tensor::empty({B, 3 * H});
  const int64_t step = B * H;
  for (int64_t t = 0; t < T; ++t) {
    const real* h = t == 0 ? saved.h0.data() : saved.outputs.data() + (t - 1) * step;
    kernels::affine_forward(gh.data(), h, saved.weight_hh.data(),
                            b_hh.defined() ? b_hh.data() : nullptr, B, H, 3 * H);
    kernels::gru_gates_forward(saved.outputs.data() + t * step, saved.r.data() + t * step,
                               saved.z.data() + t * step, saved.n.data() + t * step,
                               saved.gh_n.data() + t * step, gi.data() + t * B * 3 * H, gh.data(),
                               h, B, H);
  }

  // dY (T,B,H) -> gradients of (x, h0, W_ih, W_hh, b_ih, b_hh), by the formulas above.
  auto gradients = [saved = std::move(saved), T, B, input, H](const Tensor& d_outputs_in) {
    if (grad_enabled()) {  // the gradients of T composed steps, recorded
      return composed_gradients(gru_sequence_composed,
                                std::vector<Tensor>(saved.given.begin(), saved.given.end()),
                                d_outputs_in);
    }
    const Tensor d_outputs = d_outputs_in.contiguous_data();
    const int64_t rows = T * B, step = B * H;
    Tensor d_gi = Tensor::empty({rows, 3 * H}), d_gh = Tensor::empty({rows, 3 * H});
    Tensor dh = zeros({B, H}), dh_new = Tensor::empty({B, H}), dh_direct = Tensor::empty({B, H});
    for (int64_t t = T - 1; t >= 0; --t) {
      const real* h = t == 0 ? saved.h0.data() : saved.outputs.data() + (t - 1) * step;
      kernels::binary_forward(kernels::Binary::add, dh_new.data(), d_outputs.data() + t * step, 1,
                              dh.data(), 1, step);
      kernels::gru_gates_backward(d_gi.data() + t * B * 3 * H, d_gh.data() + t * B * 3 * H,
                                  dh_direct.data(), dh_new.data(), saved.r.data() + t * step,
                                  saved.z.data() + t * step, saved.n.data() + t * step,
                                  saved.gh_n.data() + t * step, h, B, H);
      if (t == 0 && !saved.need_h0) break;  // dh0 is the only use of the last dh
      kernels::matmul_forward(dh.data(), d_gh.data() + t * B * 3 * H, Layout::normal,
                              saved.weight_hh.data(), Layout::normal, B, 3 * H, H);
      kernels::accumulate(dh.data(), dh_direct.data(), step);
    }
    Tensor dx, dbias_ih, dbias_hh;
    if (saved.need_x) {  // dGI @ W_ih
      dx = Tensor::empty({T, B, input});
      kernels::matmul_forward(dx.data(), d_gi.data(), Layout::normal, saved.weight_ih.data(),
                              Layout::normal, rows, 3 * H, input);
    }
    if (saved.need_bias_ih) {
      dbias_ih = Tensor::empty({3 * H});
      kernels::sum_axis_forward(dbias_ih.data(), d_gi.data(), 1, rows, 3 * H);
    }
    if (saved.need_bias_hh) {
      dbias_hh = Tensor::empty({3 * H});
      kernels::sum_axis_forward(dbias_hh.data(), d_gh.data(), 1, rows, 3 * H);
    }
    Gradient dweight_hh;
    if (saved.need_weight_hh) {  // dGHᵀ @ H_prev, H_prev = [h0; h_1 … h_{T−1}]
      Tensor h_prev = Tensor::empty({rows, H});
      std::copy_n(saved.h0.data(), step, h_prev.data());
      std::copy_n(saved.outputs.data(), (T - 1) * step, h_prev.data() + step);
      dweight_hh = Gradient::product(d_gh, h_prev);
    }
    return Gradients{dx,
                     saved.need_h0 ? dh : Tensor(),
                     saved.need_weight_ih ? Gradient::product(d_gi, saved.x) : Gradient(),
                     std::move(dweight_hh),
                     dbias_ih,
                     dbias_hh};
  };
  return record("gru_sequence", outputs,
                {x_in, h0_in, weight_ih_in, weight_hh_in, bias_ih_in, bias_hh_in},
                std::move(gradients));
}

}  // namespace attograd
