// autograd/ops.hpp — every differentiable operation, one line each.
//
// Each op is a free function: it checks its inputs, computes the output with
// the kernels in tensor/kernels.hpp, and records how to send gradients back
// (see the .cpp next to the group it belongs to, where forward and backward
// sit side by side with the maths). Adding an op: write it in its group's
// .cpp, declare it here, and add a row to tests/autograd/test_gradcheck.cpp.
//
// Shapes use NumPy broadcasting for the elementwise binary ops: (3,1) + (4)
// gives (3,4), and the gradient of each input is summed back to its shape.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/ops_gru.hpp"
#include "autograd/ops_linear.hpp"
#include "autograd/ops_norm.hpp"
#include "tensor/tensor.hpp"

namespace attograd {

// ---- Elementwise (autograd/ops_elementwise.cpp) ------------------------------
Tensor add(const Tensor& a, const Tensor& b);  // a + b   (broadcast)
Tensor sub(const Tensor& a, const Tensor& b);  // a − b   (broadcast)
Tensor mul(const Tensor& a, const Tensor& b);  // a ⊙ b   (broadcast)
Tensor div(const Tensor& a, const Tensor& b);  // a ⊘ b   (broadcast)
Tensor neg(const Tensor& x);
Tensor pow(const Tensor& x, real exponent);  // x^p, p a constant
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor softplus(const Tensor& x);  // ln(1 + eˣ), a smooth relu
Tensor gelu(const Tensor& x);      // ½ x (1 + tanh(√(2/π)(x + 0.044715 x³))), GPT-2's

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, real b);
Tensor operator+(real a, const Tensor& b);
Tensor operator-(const Tensor& a, real b);
Tensor operator-(real a, const Tensor& b);
Tensor operator*(const Tensor& a, real b);
Tensor operator*(real a, const Tensor& b);
Tensor operator/(const Tensor& a, real b);
Tensor operator/(real a, const Tensor& b);

// ---- Reductions (autograd/ops_reduce.cpp) -------------------------------------
Tensor sum(const Tensor& x);  // over everything → 0-d
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim = false);
Tensor max(const Tensor& x);  // over everything → 0-d
Tensor max(const Tensor& x, int64_t axis, bool keepdim = false);
// Index of the largest entry along `axis` (no gradient): shape of x without that axis.
std::vector<int64_t> argmax(const Tensor& x, int64_t axis);

// ---- Linear algebra (autograd/ops_linalg.cpp) ----------------------------------
Tensor matmul(const Tensor& a, const Tensor& b);  // (M,K) @ (K,N) → (M,N)
Tensor bmm(const Tensor& a, const Tensor& b);     // (B,M,K) @ (B,K,N) → (B,M,N)

// ---- Shapes and views (autograd/ops_shape.cpp) ----------------------------------
Tensor reshape(const Tensor& x, const Shape& shape);  // one size may be −1
Tensor view(const Tensor& x, const Shape& shape);     // reshape that never copies
Tensor contiguous(const Tensor& x);
Tensor transpose(const Tensor& x, int64_t axis0, int64_t axis1);
Tensor permute(const Tensor& x, const std::vector<int64_t>& order);
Tensor squeeze(const Tensor& x, int64_t axis);
Tensor unsqueeze(const Tensor& x, int64_t axis);
Tensor expand(const Tensor& x, const Shape& shape);    // broadcast view, no copy
Tensor repeat(const Tensor& x, const Shape& repeats);  // tile, like torch.Tensor.repeat
Tensor repeat_interleave(const Tensor& x, int64_t repeats, int64_t axis);
Tensor narrow(const Tensor& x, int64_t axis, int64_t start, int64_t length);
Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end, int64_t step = 1);
Tensor select(const Tensor& x, int64_t axis, int64_t index);  // drops the axis
Tensor cat(const std::vector<Tensor>& tensors, int64_t axis);
Tensor stack(const std::vector<Tensor>& tensors, int64_t axis);

// ---- Indexing and masks (autograd/ops_index.cpp) ---------------------------------
// Rows (or slices along `axis`) picked by index: an embedding lookup is
// index_select(weight, 0, token_ids).
Tensor index_select(const Tensor& x, int64_t axis, const std::vector<int64_t>& indices);
// torch.gather: out[i][j] = x[i][index[i][j]] for axis 1 (index has the output's shape).
Tensor gather(const Tensor& x, int64_t axis, const std::vector<int64_t>& index,
              const Shape& index_shape);
// Where mask (broadcast to x's shape) is non-zero, the value; elsewhere x.
Tensor masked_fill(const Tensor& x, const Tensor& mask, real value);
// The entries of x where mask (broadcast to x's shape) is non-zero, as a 1-D tensor
// in row-major order.
Tensor masked_select(const Tensor& x, const Tensor& mask);

// ---- Softmax (autograd/ops_softmax.cpp) ---------------------------------------------
Tensor softmax(const Tensor& x, int64_t axis);
Tensor log_softmax(const Tensor& x, int64_t axis);
// Attention's softmax over each row's valid prefix (autograd/ops_softmax.cpp).
// scores: (B,Tq,Tk), valid_lens: {} or B or B·Tq lengths in [1, Tk] -> (B,Tq,Tk)
//
//   y[b,q,:n] = softmax(scores[b,q,:n]),  y[b,q,n:] = 0      with n the row's valid length
//   dx[b,q,:n] = y ⊙ (dy − Σ dy ⊙ y),     dx[b,q,n:] = 0
//
// One op (one graph node): the masked entries are never read, so they may be
// anything, even infinite.
Tensor masked_softmax(const Tensor& scores, const std::vector<int64_t>& valid_lens);
// The valid length of each of the B·Tq rows of (B,Tq,Tk) scores: valid_lens
// repeated over the queries (one per example), as given (one per query), or
// Tk everywhere (none). Checks them and throws naming `who` otherwise.
std::vector<int64_t> masked_softmax_row_lengths(const std::string& who, const Shape& scores,
                                                const std::vector<int64_t>& valid_lens);
// Attention pooling, softmax over the keys then the weighted sum of the
// values (autograd/ops_softmax.cpp): scores (B,Tq,Tk), values (B,Tk,dv),
// scale undefined, one number or (Tk) -> (B,Tq,dv)
//
//   α = softmax(scores ⊙ scale, 2)      out = bmm(α, values)
//
// The scale is an inverse temperature (Nadaraya–Watson's learned w², a
// Transformer's 1/√d). `weights`, when given, receives α (B,Tq,Tk) without
// history. Recorded as one fused node (autograd/fast/fused.hpp), or, with
// fast::set_fused_ops(false), as mul, softmax and bmm; the two agree to
// float rounding.
Tensor attention_pool(const Tensor& scores, const Tensor& values, const Tensor& scale = Tensor(),
                      Tensor* weights = nullptr);

// ---- Causal attention (autograd/ops_attention.cpp) ------------------------------------
// A decoder's self-attention over N = B·H heads at once (view (B,H,L,d) as
// (B·H,L,d)): query i sees keys 0 … i, scale = 1/√d.
// q, k, v: (N,L,d) -> (N,L,d)
//
//   y = softmax(q kᵀ · scale + causal mask) v
//   dS = P ⊙ (dP − D),  dP = dy vᵀ,  D = rowsum(dy ⊙ y)
//   dq = scale·dS k,  dk = scale·dSᵀ q,  dv = Pᵀ dy
//
// causal_attention is one fused node whose kernels never form the (L,L)
// weights P: the forward keeps y and each row's log-sum-exp (the online
// softmax), the backward recomputes P tile by tile (docs/attention_kernel.md).
// causal_attention_composed is the same function as bmm, masked_softmax and
// bmm, (N,L,L) tensors and all: the specification, and what a recording
// backward (create_graph) of causal_attention differentiates.
Tensor causal_attention(const Tensor& q, const Tensor& k, const Tensor& v);
Tensor causal_attention_composed(const Tensor& q, const Tensor& k, const Tensor& v);

// ---- Lookup (autograd/ops_index.cpp) -------------------------------------------------
// weight: (V,D), ids: ids_shape.numel() ids in [0, V) -> (ids_shape..., D).
// padding_idx's row gets no gradient; with `sparse` the table's gradient is
// named as the rows read (Gradient::rows), as nn.Embedding(sparse=True).
Tensor embedding(const Tensor& weight, const std::vector<int64_t>& ids, const Shape& ids_shape,
                 std::optional<int64_t> padding_idx, bool sparse);

// ---- Losses (autograd/ops_loss.cpp) --------------------------------------------------
// What to do with per-element losses: keep them, add them up, or average them.
enum class Reduction { none, mean, sum };

// input, target: the same shape (*) -> reduce((input − target)²): () for
// mean/sum, (*) for none. Either may require grad.
Tensor squared_errors(const Tensor& input, const Tensor& target, Reduction reduction);
// log_probs: (N,C), targets: N ids in [0, C) or ignore_index -> (N):
// ℓ_i = −log_probs[i, y_i], and 0 where y_i = ignore_index. Errors name
// `caller` (the loss that uses it).
Tensor negative_log_likelihood(const Tensor& log_probs, const std::vector<int64_t>& targets,
                               int64_t ignore_index, const char* caller = "nll_loss");

}  // namespace attograd
