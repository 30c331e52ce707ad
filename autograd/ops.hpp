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
#include <vector>

#include "autograd/engine.hpp"
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

// ---- Recurrent (autograd/ops_gru.cpp) ------------------------------------------------
// One GRU step as a single fused node (PyTorch's GRUCell; gates stacked r, z, n):
//   r = σ(x W_irᵀ + b_ir + h W_hrᵀ + b_hr),  z = σ(x W_izᵀ + b_iz + h W_hzᵀ + b_hz),
//   n = tanh(x W_inᵀ + b_in + r ⊙ (h W_hnᵀ + b_hn)),  h' = (1 − z) ⊙ n + z ⊙ h.
// x: (B,in), h: (B,H), weight_ih: (3H,in), weight_hh: (3H,H), biases: (3H) or
// undefined for none → h': (B,H). nn::GRUCell and nn::GRU are built on it.
Tensor gru_cell(const Tensor& x, const Tensor& h, const Tensor& weight_ih, const Tensor& weight_hh,
                const Tensor& bias_ih, const Tensor& bias_hh);

}  // namespace attograd
