// autograd/ops_linalg.cpp — matrix products.
//
// The kernel reads either operand as stored or transposed, so a transposed
// view (Linear's Wᵀ, the backward's aᵀ and bᵀ) is multiplied without a copy.
#include "autograd/op_helpers.hpp"
#include "autograd/ops.hpp"

namespace attograd {

namespace {

struct MatrixOperand {
  Tensor holder;  // keeps a copy alive when one was needed
  const real* data;
  kernels::Layout layout;
  int64_t step;  // elements from one batch's matrix to the next
};

// How to hand the B matrices of the 3-D t, each with sizes (rows, cols), to
// the kernel: read in place when each is stored row-major or transposed (the
// strides are the same for every batch, so one look decides for all), else
// copied once, whole, into a contiguous tensor.
MatrixOperand as_operand(const Tensor& t, int64_t rows, int64_t cols) {
  const real* base = t.data();
  const int64_t row_stride = t.strides()[1], col_stride = t.strides()[2];
  const int64_t step = t.shape()[0] == 1 ? 0 : t.strides()[0];
  if ((col_stride == 1 || cols == 1) && (row_stride == cols || rows == 1)) {
    return {t, base, kernels::Layout::normal, step};
  }
  if ((row_stride == 1 || rows == 1) && (col_stride == rows || cols == 1)) {
    return {t, base, kernels::Layout::transposed, step};
  }
  Tensor copy = t.clone_data();
  return {copy, copy.data(), kernels::Layout::normal, rows * cols};
}

// (B,M,K) @ (B,K,N) → (B,M,N) values, for 3-D a and b (B = 1 for matmul).
// One kernel call for the whole batch (kernels::bmm_forward shares batches
// between threads, or the rows of a single product), so each entry is summed
// by one thread in a fixed order and the thread count changes no result.
Tensor batched_product(const Tensor& a, const Tensor& b) {
  const int64_t batches = a.shape()[0], M = a.shape()[1], K = a.shape()[2], N = b.shape()[2];
  Tensor out = Tensor::empty({batches, M, N});
  if (batches == 0) return out;
  const MatrixOperand left = as_operand(a, M, K);
  const MatrixOperand right = as_operand(b, K, N);
  kernels::bmm_forward(out.data(), left.data, left.layout, left.step, right.data, right.layout,
                       right.step, batches, M, K, N);
  return out;
}

}  // namespace

// y = a @ b              a: (M,K)  b: (K,N)  y: (M,N)
// da = dy @ bᵀ           (M,N) @ (N,K) → (M,K)
// db = aᵀ @ dy           (K,M) @ (M,N) → (K,N)
//
// When b is a transposed view of a row-major matrix W (Linear's x @ Wᵀ), db
// is computed as (dyᵀ @ a)ᵀ: the same sums in the same order, but laid out
// like W, so the gradient that reaches W needs no transposing copy.
Tensor matmul(const Tensor& a, const Tensor& b) {
  check_defined("matmul", a);
  check_defined("matmul", b);
  check(a.dim() == 2 && b.dim() == 2,
        "matmul: {} @ {}: both operands must be 2-D matrices (use bmm for batches of them)",
        a.shape(), b.shape());
  check(a.shape()[1] == b.shape()[0],
        "matmul: {} @ {}: inner sizes {} and {} differ (the columns of the left operand must "
        "equal the rows of the right one)",
        a.shape(), b.shape(), a.shape()[1], b.shape()[0]);
  const Tensor y3 = batched_product(unsqueeze(detach(a), 0), unsqueeze(detach(b), 0));
  Tensor y = y3.as_strided({a.shape()[0], b.shape()[1]},
                           contiguous_strides({a.shape()[0], b.shape()[1]}), 0);
  return record("matmul", y, {a, b},
                [a, b, need_a = requires_grad(a), need_b = requires_grad(b)](const Tensor& dy) {
                  Tensor db;
                  if (need_b) {
                    const bool b_transposed = b.strides()[0] == 1 && b.strides()[1] == b.shape()[0];
                    db = b_transposed ? transpose(matmul(transpose(dy, 0, 1), a), 0, 1)
                                      : matmul(transpose(a, 0, 1), dy);
                  }
                  return Gradients{need_a ? matmul(dy, transpose(b, 0, 1)) : Tensor(), db};
                });
}

// y = a @ b per batch     a: (B,M,K)  b: (B,K,N)  y: (B,M,N)
// da = dy @ bᵀ,  db = aᵀ @ dy, batch by batch
Tensor bmm(const Tensor& a, const Tensor& b) {
  check_defined("bmm", a);
  check_defined("bmm", b);
  check(a.dim() == 3 && b.dim() == 3,
        "bmm: {} @ {}: both operands must be 3-D (batch, rows, cols); use matmul for 2-D",
        a.shape(), b.shape());
  check(a.shape()[0] == b.shape()[0], "bmm: {} @ {}: batch sizes {} and {} differ", a.shape(),
        b.shape(), a.shape()[0], b.shape()[0]);
  check(a.shape()[2] == b.shape()[1], "bmm: {} @ {}: inner sizes {} and {} differ", a.shape(),
        b.shape(), a.shape()[2], b.shape()[1]);
  Tensor y = batched_product(a, b);
  return record("bmm", y, {a, b},
                [a, b, need_a = requires_grad(a), need_b = requires_grad(b)](const Tensor& dy) {
                  return Gradients{need_a ? bmm(dy, transpose(b, 1, 2)) : Tensor(),
                                   need_b ? bmm(transpose(a, 1, 2), dy) : Tensor()};
                });
}

}  // namespace attograd
