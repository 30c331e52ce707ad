// autograd/ops_attention.cpp — causal attention of many heads, fused and
// composed (autograd/ops.hpp).
//
// Legend: N heads (B·H: a (B,H,L,d) tensor viewed as (B·H,L,d)), L positions,
// d the size of one head; scale = 1/√d.
//
//   S = Q Kᵀ · scale (N,L,L),  P = softmax over the keys j ≤ i of row i,  Y = P V (N,L,d)
//
// Backward, quoting the forward line each gradient differentiates:
//   Y = P V          →  dV = Pᵀ dY,  dP = dY Vᵀ
//   P = softmax(S)   →  dS = P ⊙ (dP − D),  D_i = Σ_j P_ij dP_ij = dY_i · Y_i
//   S = Q Kᵀ·scale   →  dQ = scale · dS K,  dK = scale · dSᵀ Q
//
// causal_attention runs that as one kernel pair (tensor/kernels_causal_attention.cpp):
// the forward keeps Y and the log-sum-exp of each row (L numbers per head),
// the backward recomputes P from them tile by tile, so no (L,L) array exists
// on either side. causal_attention_composed is the same function as bmm,
// masked_softmax and bmm: the specification the fused op is tested against
// (tests/autograd/test_causal_attention.cpp), and what a backward pass that
// records (create_graph) differentiates instead of the kernel.
#include <cmath>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/op_helpers.hpp"
#include "autograd/ops.hpp"
#include "tensor/kernels.hpp"

namespace attograd {

namespace {

// The checks both forms share: q, k, v defined, (N,L,d) each, the same
// shape, at least one position and one number per head.
void check_causal_attention(const char* op, const Tensor& q, const Tensor& k, const Tensor& v) {
  check_defined(op, q);
  check_defined(op, k);
  check_defined(op, v);
  check(q.dim() == 3 && k.dim() == 3 && v.dim() == 3,
        "{}: q {}, k {} and v {} must each be 3-D, (heads, positions, head size); view a "
        "(B,H,L,d) tensor as (B·H,L,d) first",
        op, q.shape(), k.shape(), v.shape());
  check(q.shape() == k.shape() && q.shape() == v.shape(),
        "{}: q {}, k {} and v {} must have the same shape (N,L,d)", op, q.shape(), k.shape(),
        v.shape());
  check(q.shape()[1] >= 1 && q.shape()[2] >= 1,
        "{}: q, k and v of shape {} need at least one position (L) and one number per head (d)", op,
        q.shape());
}

real scale_of(int64_t d) { return real(1) / std::sqrt(real(d)); }

}  // namespace

// q, k, v: (N,L,d) -> (N,L,d)
//   y = softmax(q kᵀ · scale + causal mask) v              forward: y and lse (N,L) kept
//   dq, dk, dv from the kernel's recomputed P              create_graph: composed's gradients
Tensor causal_attention(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in) {
  check_causal_attention("causal_attention", q_in, k_in, v_in);
  const int64_t N = q_in.shape()[0], L = q_in.shape()[1], d = q_in.shape()[2];
  const real scale = scale_of(d);
  const Tensor q = detach(q_in).contiguous_data();
  const Tensor k = detach(k_in).contiguous_data();
  const Tensor v = detach(v_in).contiguous_data();
  Tensor y = Tensor::empty(q_in.shape());
  Tensor lse = Tensor::empty({N, L});
  kernels::causal_attention_forward(y.data(), lse.data(), q.data(), k.data(), v.data(), scale, N, L,
                                    d);
  return record("causal_attention", y, {q_in, k_in, v_in},
                [q, k, v, lse, y_saved = saved_output(y), scale, N, L, d](const Tensor& dy_in) {
                  if (grad_enabled()) {  // recording: the composition's gradients, differentiable
                    const Node::Inputs& given = backward_inputs();
                    return composed_gradients(
                        [](const std::vector<Tensor>& in) {
                          return causal_attention_composed(in[0], in[1], in[2]);
                        },
                        {given[0], given[1], given[2]}, dy_in);
                  }
                  const Tensor dy = dy_in.contiguous_data();
                  Tensor dq = Tensor::empty({N, L, d});
                  Tensor dk = Tensor::empty({N, L, d});
                  Tensor dv = Tensor::empty({N, L, d});
                  kernels::causal_attention_backward(dq.data(), dk.data(), dv.data(), dy.data(),
                                                     q.data(), k.data(), v.data(), y_saved.data(),
                                                     lse.data(), scale, N, L, d);
                  return Gradients{dq, dk, dv};
                });
}

// The specification, with the (N,L,L) scores and weights as tensors: row i
// of the weights is the softmax of its first i + 1 scores (masked_softmax,
// one valid length per query) and exactly 0 after them.
Tensor causal_attention_composed(const Tensor& q, const Tensor& k, const Tensor& v) {
  check_causal_attention("causal_attention_composed", q, k, v);
  const int64_t N = q.shape()[0], L = q.shape()[1], d = q.shape()[2];
  std::vector<int64_t> seen(static_cast<size_t>(N * L));  // query i sees i + 1 keys
  for (int64_t r = 0; r < N * L; ++r) seen[r] = r % L + 1;
  const Tensor scores = bmm(q, transpose(k, 1, 2)) * scale_of(d);
  return bmm(masked_softmax(scores, seen), v);
}

}  // namespace attograd
