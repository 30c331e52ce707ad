// tests/autograd/test_errors.cpp — every user mistake gets a message that
// names the op, the shapes or values involved and what to do. Each message
// is asserted here word for word (or its leading words, when the rest is a
// hint that may be reworded), so a regression in wording is a test failure.
// They run in both binaries.
#include <catch2/catch.hpp>
#include <string>
#include <type_traits>

#include "attograd.hpp"

namespace test_errors {

using namespace attograd;
using Catch::Contains;
using Catch::StartsWith;

TEST_CASE("shape errors of the elementwise and linear-algebra ops", "[autograd][errors]") {
  REQUIRE_THROWS_AS(matmul(zeros({2, 3}), zeros({4, 5})), Error);
  REQUIRE_THROWS_WITH(matmul(zeros({2, 3}), zeros({4, 5})),
                      StartsWith("matmul: (2,3) @ (4,5): inner sizes 3 and 4 differ"));
  REQUIRE_THROWS_WITH(matmul(zeros({2, 3, 4}), zeros({4, 5})),
                      "matmul: (2,3,4) @ (4,5): both operands must be 2-D matrices (use bmm for "
                      "batches of them)");
  REQUIRE_THROWS_WITH(bmm(zeros({2, 3, 4}), zeros({3, 4, 5})),
                      "bmm: (2,3,4) @ (3,4,5): batch sizes 2 and 3 differ");
  REQUIRE_THROWS_WITH(bmm(zeros({2, 3, 4}), zeros({2, 5, 5})),
                      "bmm: (2,3,4) @ (2,5,5): inner sizes 4 and 5 differ");
  REQUIRE_THROWS_WITH(bmm(zeros({3, 4}), zeros({4, 5})),
                      StartsWith("bmm: (3,4) @ (4,5): both operands must be 3-D"));

  REQUIRE_THROWS_WITH(zeros({2, 3}) + zeros({4, 3}),
                      "add: shapes (2,3) and (4,3) cannot be broadcast: sizes 2 and 4 differ at "
                      "axis 0 of the result (each must match or be 1)");
  REQUIRE_THROWS_WITH(mul(zeros({5}), zeros({2, 4})),
                      "mul: shapes (5) and (2,4) cannot be broadcast: sizes 5 and 4 differ at "
                      "axis 1 of the result (each must match or be 1)");
  REQUIRE_THROWS_WITH(add(Tensor(), zeros({2})),
                      "add: got an undefined tensor (default-constructed Tensor)");
  REQUIRE_THROWS_WITH(exp(Tensor()), "exp: got an undefined tensor (default-constructed Tensor)");
}

TEST_CASE("axis errors", "[autograd][errors]") {
  REQUIRE_THROWS_WITH(softmax(zeros({2, 3}), 2),
                      StartsWith("softmax: axis 2 out of range for a tensor of 2 dims"));
  REQUIRE_THROWS_WITH(softmax(zeros({2, 3}), 2),
                      "softmax: axis 2 out of range for a tensor of 2 dims (use 0..1 or -2..-1)");
  REQUIRE_THROWS_WITH(log_softmax(zeros({2, 3}), -3),
                      StartsWith("log_softmax: axis -3 out of range for a tensor of 2 dims"));
  REQUIRE_THROWS_WITH(sum(zeros({2, 3}), {0, 5}),
                      StartsWith("sum: axis 5 out of range for a tensor of 2 dims"));
  REQUIRE_THROWS_WITH(sum(zeros({2, 3}), {1, -1}),
                      "sum: axes (1,-1) name axis 1 twice (a negative axis counts from the end); "
                      "list each axis once");
  REQUIRE_THROWS_WITH(max(zeros({2, 3}), 3),
                      StartsWith("max: axis 3 out of range for a tensor of 2 dims"));
  REQUIRE_THROWS_WITH(softmax(scalar(1), 0),
                      "softmax: axis 0 out of range for a tensor of 0 dims (a 0-d scalar has no "
                      "axes)");
  REQUIRE_THROWS_WITH(zeros({2, 3}).size(2), StartsWith("size: axis 2 out of range"));
}

TEST_CASE("reshape, view and shape-op errors", "[autograd][errors]") {
  REQUIRE_THROWS_WITH(reshape(zeros({2, 3}), {4, 2}),
                      "reshape: cannot reshape (2,3) (6 elements) into (4,2) (8 elements); the "
                      "counts must match");
  REQUIRE_THROWS_WITH(
      reshape(zeros({2, 3}), {4, -1}),
      "reshape: cannot reshape (2,3) (6 elements) into (4,-1): no size for -1 fits");
  REQUIRE_THROWS_WITH(reshape(zeros({2, 3}), {-1, -1}),
                      "reshape: (-1,-1) has more than one -1; only one size can be inferred");
  REQUIRE_THROWS_WITH(view(transpose(zeros({2, 3}), 0, 1), {6}),
                      "view: tensor of shape (3,2) is not contiguous (strides (1,3)), so it cannot "
                      "be viewed as (6) without a copy; call contiguous() first or use reshape()");
  REQUIRE_THROWS_WITH(squeeze(zeros({3, 4}), 1),
                      "squeeze: axis 1 of shape (3,4) has size 4, not 1; only size-1 axes can be "
                      "removed");
  REQUIRE_THROWS_WITH(permute(zeros({2, 3}), {0, 0}), "permute: axis 0 appears twice in the order");
  REQUIRE_THROWS_WITH(permute(zeros({2, 3}), {0}),
                      "permute: order has 1 axes but the tensor of shape (2,3) has 2");
  REQUIRE_THROWS_WITH(expand(zeros({2, 3}), {2, 4}),
                      "expand: cannot expand (2,3) to (2,4): axis 1 has size 3 (only size-1 axes "
                      "can grow)");
  REQUIRE_THROWS_WITH(expand(zeros({2, 3}), {3}),
                      "expand: cannot expand (2,3) to (3), which has fewer dims; expand can only "
                      "add leading axes");
  REQUIRE_THROWS_WITH(
      expand(zeros({3}), {-1, 3}),
      "expand: cannot expand (3) to (-1,3): new leading axis 0 needs a size, not -1");
  REQUIRE_THROWS_WITH(repeat(zeros({2, 3}), {2}),
                      "repeat: 1 repeats for a tensor of 2 dims; give at least one per axis");
  REQUIRE_THROWS_WITH(repeat(zeros({2}), {-1}), "repeat: repeat count -1 is negative");
  REQUIRE_THROWS_WITH(repeat_interleave(zeros({2}), -2, 0),
                      "repeat_interleave: repeat count -2 is negative");
}

TEST_CASE("index and range errors", "[autograd][errors]") {
  const Tensor x = zeros({3, 5});
  REQUIRE_THROWS_WITH(index_select(x, 0, {0, 3}),
                      "index_select: index 3 out of range for axis 0 of shape (3,5) (valid: 0..2)");
  REQUIRE_THROWS_WITH(
      index_select(x, 1, {-1}),
      "index_select: index -1 out of range for axis 1 of shape (3,5) (valid: 0..4)");
  REQUIRE_THROWS_WITH(gather(x, 1, {0, 5}, {1, 2}),
                      "gather: index 5 out of range for axis 1 of shape (3,5)");
  REQUIRE_THROWS_WITH(gather(x, 1, {0, 1, 2}, {1, 2}),
                      "gather: 3 index values for index shape (1,2), which has 2 entries; they "
                      "must match");
  REQUIRE_THROWS_WITH(gather(x, 1, {0, 1}, {2}),
                      "gather: index shape (2) must have as many dims as the input (3,5)");
  REQUIRE_THROWS_WITH(gather(x, 1, {0, 0, 0, 0}, {4, 1}),
                      "gather: index shape (4,1) is larger than input (3,5) at axis 0");
  REQUIRE_THROWS_WITH(select(x, 0, 3), "select: index 3 out of range for axis 0 of size 3");
  REQUIRE_THROWS_WITH(select(x, 1, -6), "select: index -6 out of range for axis 1 of size 5");
  REQUIRE_THROWS_WITH(slice(x, 1, 2, 9),
                      "slice: range [2, 9) does not fit axis 1 of shape (3,5): it needs 0 <= start "
                      "<= end <= 5 (negative values count from the end)");
  REQUIRE_THROWS_WITH(slice(x, 1, 0, 2, 0), "slice: step must be positive, got 0");
  REQUIRE_THROWS_WITH(narrow(x, 1, 3, 4),
                      "narrow: start 3 + length 4 runs past the end of axis 1 of shape (3,5) (size "
                      "5)");
  REQUIRE_THROWS_WITH(narrow(x, 1, -1, 2), "narrow: start -1 and length 2 must be >= 0");
  REQUIRE_THROWS_WITH(x.at({3, 0}), "at: index 3 out of range for axis 0 of size 3");
  REQUIRE_THROWS_WITH(x.at({0}),
                      "at: index has 1 entries but the tensor of shape (3,5) has 2 dims");
  REQUIRE_THROWS_WITH(x.item(),
                      "item: tensor of shape (3,5) has 15 elements; item() needs exactly one "
                      "(reduce it first, e.g. with sum)");
  REQUIRE_THROWS_WITH(masked_fill(x, zeros({2, 5}), 0),
                      StartsWith("masked_fill: shapes (2,5) and (3,5) cannot be broadcast"));
  REQUIRE_THROWS_WITH(masked_select(x, zeros({2, 3, 5})),
                      "masked_select: mask of shape (2,3,5) does not broadcast to the tensor's "
                      "shape (3,5)");
  REQUIRE_THROWS_WITH(x.as_strided({4, 5}, {5, 1}, 0),
                      "as_strided: a view of shape (4,5) with strides (5,1) at offset 0 reaches "
                      "elements 0..19, outside the storage of 15 elements");
}

TEST_CASE("joining errors", "[autograd][errors]") {
  REQUIRE_THROWS_WITH(cat({zeros({2, 3}), zeros({2, 4})}, 0),
                      "cat: tensor 1 has shape (2,4) but tensor 0 has shape (2,3); all sizes "
                      "except axis 0 must match");
  REQUIRE_THROWS_WITH(cat({zeros({2, 3}), zeros({6})}, 1),
                      "cat: tensor 1 has shape (6) but tensor 0 has shape (2,3); all sizes except "
                      "axis 1 must match");
  REQUIRE_THROWS_WITH(cat({}, 0), "cat: needs at least one tensor");
  REQUIRE_THROWS_WITH(stack({zeros({2}), zeros({3})}, 0),
                      "stack: tensor 1 has shape (3) but tensor 0 has shape (2); all must match");
}

TEST_CASE("reduction errors", "[autograd][errors]") {
  REQUIRE_THROWS_WITH(mean(zeros({0, 3})), "mean: cannot average an empty tensor of shape (0,3)");
  REQUIRE_THROWS_WITH(mean(zeros({0, 3}), {0}),
                      "mean: cannot average over an empty axis of shape (0,3)");
  REQUIRE_THROWS_WITH(max(zeros({0})),
                      "max: tensor of shape (0) is empty; a maximum needs an element");
  REQUIRE_THROWS_WITH(max(zeros({2, 0}), 1),
                      "max: axis 1 of shape (2,0) is empty; a maximum needs an element");
  REQUIRE_THROWS_WITH(argmax(zeros({2, 0}), 1), "argmax: axis 1 of shape (2,0) is empty");
}

TEST_CASE("backward errors", "[autograd][errors]") {
  Tensor x = requires_grad_(tensor({1, 2, 3}));
  REQUIRE_THROWS_WITH(backward(x * x),
                      "backward: the output has shape (3); without an output gradient it must be a "
                      "one-element tensor (reduce it first, e.g. sum), or pass a gradient of "
                      "shape (3)");
  REQUIRE_THROWS_WITH(backward(sum(tensor({1, 2}))),
                      "backward: the output does not require grad — none of its inputs had "
                      "requires_grad_(...) set, or it was computed under NoGradGuard");
  REQUIRE_THROWS_WITH(
      backward(x * x, ones({2})),
      "backward: the gradient given for the output has shape (2) but the output has "
      "shape (3); they must match");
  REQUIRE_THROWS_WITH(requires_grad_(x * x, false),
                      "requires_grad_: only leaf tensors can stop requiring grad; use detach() on "
                      "a result");
  REQUIRE_THROWS_WITH(retain_grad(tensor({1})),
                      "retain_grad: the tensor does not require grad, so it will never have a "
                      "gradient");

  // An op whose backward returns a gradient of the wrong shape is named.
  Tensor y = record("broken_op", x.clone_data(), {x},
                    [](const Tensor&) { return std::vector<Tensor>{zeros({2})}; });
  REQUIRE_THROWS_WITH(
      backward(sum(y)),
      "backward: op 'broken_op' returned a gradient of shape (2) for its input 0 of "
      "shape (3) (a bug in the op: the gradient must have the input's shape or "
      "broadcast from it)");
  Tensor z = record("two_for_one", x.clone_data(), {x}, [](const Tensor& dy) {
    return std::vector<Tensor>{dy, dy};
  });
  REQUIRE_THROWS_WITH(
      backward(sum(z)),
      "backward: op 'two_for_one' returned 2 gradients for 1 inputs (a bug in the op)");
  REQUIRE_THROWS_WITH(sum_to(zeros({3, 4}), {3, 5}),
                      "sum_to: gradient of shape (3,4) cannot be reduced to (3,5) ((3,5) does not "
                      "broadcast to (3,4))");
}

TEST_CASE("factory and tensor errors", "[autograd][errors]") {
  REQUIRE_THROWS_WITH(from_vector({1, 2, 3}, {2, 2}),
                      "from_vector: 3 values cannot fill shape (2,2) (4 elements)");
  REQUIRE_THROWS_WITH(tensor({{1, 2}, {3}}),
                      "tensor: ragged rows (2 and 1 values); every row needs the same length");
  REQUIRE_THROWS_WITH(arange(0, 1, 0), "arange: step must not be zero");
  REQUIRE_THROWS_WITH(linspace(0, 1, -1), "linspace: count must be >= 0, got -1");
  REQUIRE_THROWS_WITH(eye(-2), "eye: size must be >= 0, got -2");
  REQUIRE_THROWS_WITH(uniform({2}, 1, 0), "uniform: low 1 is above high 0");
  REQUIRE_THROWS_WITH(normal({2}, 0, -1), "normal: standard deviation must be >= 0, got -1");
  REQUIRE_THROWS_WITH(zeros({2, -1}), "empty: shape (2,-1) has a negative size");
  REQUIRE_THROWS_WITH(Tensor().shape(),
                      "Tensor: this tensor is undefined (default-constructed); create it with a "
                      "factory such as zeros() first");
  Tensor target = zeros({2, 2});
  REQUIRE_THROWS_WITH(target.copy_from(zeros({4})),
                      "copy_from: source shape (4) differs from destination shape (2,2)");
}

TEST_CASE("gradcheck refuses the float build", "[autograd][errors]") {
  if constexpr (std::is_same_v<real, float>) {
    REQUIRE_THROWS_WITH(gradcheck([](const std::vector<Tensor>& x) { return x[0]; }, {ones({1})}),
                        StartsWith("gradcheck: this library was built with float; finite "
                                   "differences need the double build"));
  } else {
    REQUIRE_THROWS_WITH(
        gradcheck([](const std::vector<Tensor>& x) { return detach(x[0]) * 2.0; }, {ones({1})}),
        "gradcheck: the function's output does not depend on any input that "
        "requires grad");
  }
}

}  // namespace test_errors
