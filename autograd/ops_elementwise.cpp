// autograd/ops_elementwise.cpp — arithmetic and pointwise functions.
//
// Binary ops broadcast like NumPy. Their backward returns gradients in the
// broadcast (output) shape; the engine's sum_to folds them back to each
// input's shape, so the ops here need not think about broadcasting on the way
// back. (mul does for one common case, which it sums in one pass: see
// product_gradient.)
#include "autograd/op_helpers.hpp"
#include "autograd/ops.hpp"
#include "tensor/factory.hpp"

namespace attograd {

void check_defined(const char* op, const Tensor& x) {
  check(x.defined(), "{}: got an undefined tensor (default-constructed Tensor)", op);
}

namespace detail {

Strides broadcast_strides(const Tensor& t, const Shape& shape) {
  Strides strides(shape.size(), 0);
  const int64_t lead = shape.ndim() - t.dim();
  for (int64_t axis = lead; axis < shape.ndim(); ++axis) {
    if (t.shape()[axis - lead] != 1) strides[axis] = t.strides()[axis - lead];
  }
  return strides;
}

int64_t leading_broadcast_block(const Shape& shape, const Shape& full) {
  if (shape == full || shape.numel() == 0) return -1;
  int64_t kept = shape.ndim();  // shape's axes after its leading 1s
  while (kept > 0 && shape[shape.ndim() - kept] == 1) --kept;
  if (kept > full.ndim()) return -1;
  for (int64_t axis = 1; axis <= kept; ++axis) {
    if (shape[shape.ndim() - axis] != full[full.ndim() - axis]) return -1;
  }
  return shape.numel();
}

namespace {

// How an operand steps through the output's elements in row-major order: 1 if
// it is laid out exactly like the output (same shape, contiguous), 0 if it is
// one value repeated everywhere, −1 if it needs the row-by-row loop.
int64_t flat_step(const Tensor& t, const Shape& shape) {
  if (t.shape() == shape && t.is_contiguous()) return 1;
  return t.numel() == 1 ? 0 : -1;
}

}  // namespace

Tensor binary_values(kernels::Binary op, const char* name, const Tensor& a_in, const Tensor& b_in) {
  check_defined(name, a_in);
  check_defined(name, b_in);
  const Shape shape = broadcast_shapes(name, a_in.shape(), b_in.shape());
  Tensor out = Tensor::empty(shape);
  if (out.numel() == 0) return out;
  // Each operand contiguous in the output's shape, or a single number (x * 0.5,
  // a scalar weight): one kernel call covers the whole output.
  const int64_t a_flat_step = flat_step(a_in, shape);
  const int64_t b_flat_step = flat_step(b_in, shape);
  if (a_flat_step >= 0 && b_flat_step >= 0) {
    kernels::binary_forward(op, out.data(), a_in.data(), a_flat_step, b_in.data(), b_flat_step,
                            out.numel());
    return out;
  }
  // One operand laid out like the output, the other a contiguous block
  // repeated along the leading axes (a row of weights for every query): one
  // kernel call per block.
  const int64_t a_block = a_in.is_contiguous() ? leading_broadcast_block(a_in.shape(), shape) : -1;
  const int64_t b_block = b_in.is_contiguous() ? leading_broadcast_block(b_in.shape(), shape) : -1;
  if ((a_flat_step == 1 && b_block > 0) || (a_block > 0 && b_flat_step == 1)) {
    const int64_t block = a_flat_step == 1 ? b_block : a_block;
    kernels::binary_rows_forward(op, out.data(), a_in.data(), a_flat_step == 1 ? block : 0,
                                 b_in.data(), b_flat_step == 1 ? block : 0, out.numel() / block,
                                 block);
    return out;
  }
  // Row by row along the last axis; the kernel wants each operand's step
  // along a row to be 1 (contiguous) or 0 (broadcast), so copy any other view.
  auto row_ready = [&](const Tensor& t) {
    const Strides s = broadcast_strides(t, shape);
    const int64_t step = s.empty() ? 0 : s.back();
    return step == 0 || step == 1 ? t : t.contiguous_data();
  };
  const Tensor a = row_ready(a_in);
  const Tensor b = row_ready(b_in);
  const Strides a_strides = broadcast_strides(a, shape);
  const Strides b_strides = broadcast_strides(b, shape);
  const int64_t row = shape.ndim() == 0 ? 1 : shape.back();
  const int64_t a_step = a_strides.empty() ? 0 : a_strides.back();
  const int64_t b_step = b_strides.empty() ? 0 : b_strides.back();
  const real* a_base = a.storage()->data();
  const real* b_base = b.storage()->data();
  detail::for_each_row(shape, a, a_strides, b, b_strides,
                       [&](int64_t out_start, int64_t a_offset, int64_t b_offset) {
                         kernels::binary_forward(op, out.data() + out_start, a_base + a_offset,
                                                 a_step, b_base + b_offset, b_step, row);
                       });
  return out;
}

}  // namespace detail

using kernels::Binary;
using kernels::Unary;

// y = a + b          da = dy,  db = dy
Tensor add(const Tensor& a, const Tensor& b) {
  Tensor y = detail::binary_values(Binary::add, "add", a, b);
  return record("add", y, {a, b}, [](const Tensor& dy) { return Gradients{dy, dy}; });
}

// y = a − b          da = dy,  db = −dy
Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor y = detail::binary_values(Binary::sub, "sub", a, b);
  return record("sub", y, {a, b}, [need_b = requires_grad(b)](const Tensor& dy) {
    return Gradients{dy, need_b ? neg(dy) : Tensor()};
  });
}

namespace {

// dy ⊙ other, the gradient of mul's factor of shape `shape`. When that factor
// was broadcast along leading axes only — a single number, or a block repeated
// over the leading axes (the kernel regression's w² over every query) — the
// engine would sum dy ⊙ other down to `shape` anyway; one column_dots pass
// forms those sums without writing the full product. Otherwise the product
// is returned at dy's shape, and the engine's sum_to reduces it.
//
// Recording (create_graph), the sums are recorded as the bilinear op they
// are, g = Σ over the leading rows of dy ⊙ other, whose gradients are
// ∂/∂dy = g ⊙ other and ∂/∂other = g ⊙ dy (g broadcast back over the rows):
// the values stay column_dots' own (a sum of the products rounded one by one
// would differ where the kernel fuses multiply and add).
Tensor product_gradient(const Tensor& dy, const Tensor& other, const Shape& shape) {
  const Shape& full = dy.shape();
  const int64_t block = detail::leading_broadcast_block(shape, full);
  if (block < 0 || other.shape() != full) return mul(dy, other);
  Tensor gradient = Tensor::empty(shape);
  kernels::column_dots(gradient.data(), dy.contiguous_data().data(), other.contiguous_data().data(),
                       full.numel() / block, block);
  if (!grad_enabled()) return gradient;
  return record("mul_column_dots", gradient, {dy, other}, [dy, other](const Tensor& g) {
    return Gradients{mul(g, other), mul(g, dy)};
  });
}

}  // namespace

// y = a ⊙ b          da = dy ⊙ b,  db = dy ⊙ a
// (each summed down to its factor's shape where the factor was broadcast)
Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor y = detail::binary_values(Binary::mul, "mul", a, b);
  return record("mul", y, {a, b}, [a, b](const Tensor& dy) {
    if (a.same(b)) {
      // x ⊙ x: both gradients, dy ⊙ x twice, reach the same tensor, so they
      // go as one, dy ⊙ x doubled in place. Doubling is exact, so this is the
      // sum the engine would form (to the bit, unless the products are
      // subnormal). Recording, the doubling is an add of the product to itself.
      if (grad_enabled()) {
        const Tensor once = mul(dy, a);
        return Gradients{add(once, once), Tensor()};
      }
      Tensor twice = detail::binary_values(Binary::mul, "mul", dy, a);
      kernels::binary_forward(Binary::add, twice.data(), twice.data(), 1, twice.data(), 1,
                              twice.numel());
      return Gradients{twice, Tensor()};
    }
    return Gradients{requires_grad(a) ? product_gradient(dy, b, a.shape()) : Tensor(),
                     requires_grad(b) ? product_gradient(dy, a, b.shape()) : Tensor()};
  });
}

// y = a ⊘ b          da = dy ⊘ b,  db = −dy ⊙ a ⊘ b² = −dy ⊙ y ⊘ b
// (recording, y is recomputed as a ⊘ b: the saved y has no history)
Tensor div(const Tensor& a, const Tensor& b) {
  Tensor y = detail::binary_values(Binary::div, "div", a, b);
  return record("div", y, {a, b}, [a, b, y = saved_output(y)](const Tensor& dy) {
    const bool need_b = requires_grad(b);
    const Tensor quotient = need_b && grad_enabled() ? div(a, b) : y;
    return Gradients{requires_grad(a) ? div(dy, b) : Tensor(),
                     need_b ? neg(div(mul(dy, quotient), b)) : Tensor()};
  });
}

namespace {

// dx = dy · f'(x) written with ops, for a backward that is recorded
// (create_graph): each is the formula of f's kernel (tensor/kernels_unary.hpp)
// with its operations in the same order, so the values are the kernel's to the
// bit; where the kernel reads y, y is recomputed from x (the saved y has no
// history). relu's f' is a step, constant in x: dy where x > 0, else 0.
// tanh's and gelu's are recorded_kernel_gradient below.
Tensor unary_gradient(Unary op, const Tensor& dy, const Tensor& x) {
  switch (op) {
    case Unary::neg:
      return neg(dy);
    case Unary::exp:
      return mul(dy, exp(x));
    case Unary::log:
      return div(dy, x);
    case Unary::sqrt:
      return div(mul(dy, scalar(real(0.5))), sqrt(x));
    case Unary::sin:
      return mul(dy, cos(x));
    case Unary::cos:
      return mul(neg(dy), sin(x));
    case Unary::sigmoid: {
      const Tensor y = sigmoid(x);
      return mul(mul(dy, y), sub(scalar(real(1)), y));
    }
    case Unary::relu: {
      Tensor not_positive = x.clone_data();
      for (int64_t i = 0; i < not_positive.numel(); ++i) {
        not_positive.data()[i] = not_positive.data()[i] > 0 ? real(0) : real(1);
      }
      return masked_fill(dy, not_positive, real(0));
    }
    case Unary::softplus:
      return div(dy, add(scalar(real(1)), exp(neg(x))));
    case Unary::tanh:
    case Unary::gelu:
    case Unary::count:
      break;
  }
  check(false, "unary_gradient: no recorded gradient for this function");
  return Tensor();
}

// f' and f'' written with ops, for the functions whose kernel gradient is
// recorded as it is (recorded_kernel_gradient).
//   tanh:  f' = 1 − t²,  f'' = −2 t (1 − t²),  t = tanh x
//   gelu:  u = c (x + a x³), t = tanh u, u' = c (1 + 3 a x²), u'' = 6 c a x
//          f' = ½ (1 + t) + ½ x (1 − t²) u'
//          f'' = (1 − t²) (u' − x t u'² + ½ x u'')
struct Derivatives {
  Tensor slope;      // f'(x)
  Tensor curvature;  // f''(x)
};

Derivatives recorded_derivatives(Unary op, const Tensor& x) {
  constexpr real c = kernels::kGeluC, a = kernels::kGeluA;
  if (op == Unary::tanh) {
    const Tensor t = tanh(x);
    const Tensor slope = sub(scalar(real(1)), mul(t, t));
    return {slope, mul(scalar(real(-2)), mul(t, slope))};
  }
  check(op == Unary::gelu, "recorded_derivatives: no recorded derivatives for this function");
  const Tensor x2 = mul(x, x);
  const Tensor t = tanh(mul(scalar(c), add(x, mul(scalar(a), mul(x2, x)))));
  const Tensor one_minus_t2 = sub(scalar(real(1)), mul(t, t));
  const Tensor du = mul(scalar(c), add(scalar(real(1)), mul(scalar(real(3) * a), x2)));
  const Tensor d2u = mul(scalar(real(6) * c * a), x);
  const Tensor half = scalar(real(0.5));
  const Tensor slope =
      add(mul(half, add(scalar(real(1)), t)), mul(mul(mul(half, x), one_minus_t2), du));
  const Tensor curvature =
      mul(one_minus_t2, add(sub(du, mul(mul(x, t), mul(du, du))), mul(mul(half, x), d2u)));
  return {slope, curvature};
}

// dx = dy ⊙ f'(x) as the kernel formed it, recorded as the op it is:
//   ∂/∂dy = g ⊙ f'(x),   ∂/∂x = g ⊙ dy ⊙ f''(x).
// (The kernel forms 1 − y² with a fused multiply-add where the machine has
// one, so the ops 1 − y ⊙ y would round differently; kept, dx is the same bits
// with create_graph as without.) For tanh and gelu.
Tensor recorded_kernel_gradient(Unary op, const char* name, Tensor dx, const Tensor& dy,
                                const Tensor& x) {
  return record(name, std::move(dx), {dy, x}, [op, dy, x](const Tensor& g) {
    const Derivatives f = recorded_derivatives(op, x);
    return Gradients{mul(g, f.slope), mul(mul(g, dy), f.curvature)};
  });
}

bool gradient_is_recorded_kernel(Unary op) { return op == Unary::tanh || op == Unary::gelu; }

// y = f(x) elementwise; backward dx = dy · f'(x) by the fused kernel, which
// reads x or y as the derivative needs (e.g. tanh' = 1 − y²). x as given is
// the node's own input (backward_inputs()); the closure keeps, only when x
// was not contiguous, the contiguous copy the kernels read.
Tensor unary(Unary op, const char* name, const Tensor& x_in) {
  check_defined(name, x_in);
  const Tensor x = x_in.contiguous_data();
  Tensor y = Tensor::empty(x.shape());
  kernels::unary_forward(op, y.data(), x.data(), x.numel());
  Tensor x_copy = x_in.is_contiguous() ? Tensor() : x;
  return record(
      name, y, {x_in}, [op, x_copy = std::move(x_copy), y = saved_output(y)](const Tensor& dy_in) {
        const Tensor& x_in = backward_inputs()[0];
        const bool recording = grad_enabled();
        if (recording && !gradient_is_recorded_kernel(op)) {
          return Gradients{unary_gradient(op, dy_in, x_in)};
        }
        const Tensor& x = x_copy.defined() ? x_copy : x_in;
        const Tensor dy = dy_in.contiguous_data();
        Tensor dx = Tensor::empty(x.shape());
        kernels::unary_backward(op, dx.data(), dy.data(), x.data(), y.data(), x.numel());
        if (recording) {
          return Gradients{recorded_kernel_gradient(
              op, op == Unary::tanh ? "tanh_backward" : "gelu_backward", dx, dy_in, x_in)};
        }
        return Gradients{dx};
      });
}

}  // namespace

Tensor neg(const Tensor& x) { return unary(Unary::neg, "neg", x); }     // dx = −dy
Tensor exp(const Tensor& x) { return unary(Unary::exp, "exp", x); }     // dx = dy ⊙ y
Tensor log(const Tensor& x) { return unary(Unary::log, "log", x); }     // dx = dy ⊘ x
Tensor sqrt(const Tensor& x) { return unary(Unary::sqrt, "sqrt", x); }  // dx = dy ⊘ 2y
Tensor sin(const Tensor& x) { return unary(Unary::sin, "sin", x); }     // dx = dy ⊙ cos x
Tensor cos(const Tensor& x) { return unary(Unary::cos, "cos", x); }     // dx = −dy ⊙ sin x
Tensor tanh(const Tensor& x) { return unary(Unary::tanh, "tanh", x); }  // dx = dy ⊙ (1 − y²)
Tensor sigmoid(const Tensor& x) { return unary(Unary::sigmoid, "sigmoid", x); }  // dy ⊙ y(1 − y)
Tensor relu(const Tensor& x) { return unary(Unary::relu, "relu", x); }  // dy where x > 0, else 0
Tensor softplus(const Tensor& x) { return unary(Unary::softplus, "softplus", x); }  // dy ⊙ σ(x)
// ½ x (1 + tanh(√(2/π) (x + 0.044715 x³))), dx = dy ⊙ its slope (kernels_unary.hpp)
Tensor gelu(const Tensor& x) { return unary(Unary::gelu, "gelu", x); }

// y = x^p            dx = dy ⊙ p · x^(p−1)
// (recording: (dy · p) ⊙ pow(x, p − 1) with ops, the kernel's order)
Tensor pow(const Tensor& x_in, real exponent) {
  check_defined("pow", x_in);
  const Tensor x = x_in.contiguous_data();
  Tensor y = Tensor::empty(x.shape());
  kernels::pow_forward(y.data(), x.data(), exponent, x.numel());
  Tensor x_copy = x_in.is_contiguous() ? Tensor() : x;
  return record("pow", y, {x_in}, [x_copy = std::move(x_copy), exponent](const Tensor& dy_in) {
    const Tensor& x_in = backward_inputs()[0];
    if (grad_enabled()) {
      return Gradients{mul(mul(dy_in, scalar(exponent)), pow(x_in, exponent - 1))};
    }
    const Tensor& x = x_copy.defined() ? x_copy : x_in;
    const Tensor dy = dy_in.contiguous_data();
    Tensor dx = Tensor::empty(x.shape());
    kernels::pow_backward(dx.data(), dy.data(), x.data(), exponent, x.numel());
    return Gradients{dx};
  });
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& a, real b) { return add(a, scalar(b)); }
Tensor operator+(real a, const Tensor& b) { return add(scalar(a), b); }
Tensor operator-(const Tensor& a, real b) { return sub(a, scalar(b)); }
Tensor operator-(real a, const Tensor& b) { return sub(scalar(a), b); }
Tensor operator*(const Tensor& a, real b) { return mul(a, scalar(b)); }
Tensor operator*(real a, const Tensor& b) { return mul(scalar(a), b); }
Tensor operator/(const Tensor& a, real b) { return div(a, scalar(b)); }
Tensor operator/(real a, const Tensor& b) { return div(scalar(a), b); }

}  // namespace attograd
