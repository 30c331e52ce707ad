// autograd/inspect/anomaly.cpp — the checks DetectAnomaly makes.
//
// Forward: after an op is recorded, its output must be finite. Backward:
// after a closure runs, every gradient it returns must be finite. A value is
// scanned in row-major order, so "element k" is the k-th value of the
// tensor read as a flat row-major array.
#include "autograd/inspect/anomaly.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <string>

#include "autograd/autograd_meta.hpp"
#include "autograd/inspect/hooks.hpp"
#include "tensor/error.hpp"

namespace attograd {

namespace {

std::mutex guards_mutex;
int live_guards = 0;                           // guarded by guards_mutex
std::atomic<int64_t> checked_tensors{0};       // DetectAnomaly::checks()
std::atomic<int64_t> recorded_since_start{0};  // numbers forward ops: "#k"

// The first element of t (row-major) that is NaN or ±Inf, or −1.
int64_t first_non_finite(const Tensor& t) {
  checked_tensors.fetch_add(1, std::memory_order_relaxed);
  const Tensor values = t.contiguous_data();
  const real* data = values.data();
  for (int64_t i = 0; i < values.numel(); ++i) {
    if (!std::isfinite(data[i])) return i;
  }
  return -1;
}

// The value at `index` as text: "nan" for any NaN (its sign bit says nothing), else "inf", "-inf".
std::string value_at(const Tensor& t, int64_t index) {
  const real value = t.contiguous_data().data()[index];
  return std::isnan(value) ? std::string("nan") : fmt::format("{}", value);
}

// "element k", and for a tensor of two or more axes its index: "element 7,
// index (1, 3)".
std::string element(const Shape& shape, int64_t flat) {
  if (shape.ndim() < 2) return fmt::format("element {}", flat);
  std::vector<int64_t> index(static_cast<size_t>(shape.ndim()));
  for (int64_t axis = shape.ndim() - 1, rest = flat; axis >= 0; --axis) {
    index[static_cast<size_t>(axis)] = rest % shape[axis];
    rest /= shape[axis];
  }
  return fmt::format("element {}, index ({})", flat, fmt::join(index, ", "));
}

std::string input_shapes(const Node& node) {
  std::string shapes;
  for (const Tensor& input : node.inputs) {
    if (!shapes.empty()) shapes += ", ";
    shapes += input.defined() ? fmt::format("{}", input.shape()) : std::string("undefined");
  }
  return "[" + shapes + "]";
}

// " All inputs were finite." or which one already held a non-finite value.
std::string inputs_verdict(const Node& node) {
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Tensor& input = node.inputs[i];
    if (!input.defined()) continue;
    const int64_t bad = first_non_finite(input);
    if (bad >= 0) {
      return fmt::format(
          " Input {} already held {} at {} (a leaf or a constant: "
          "DetectAnomaly checks only what ops produce).",
          i, value_at(input, bad), element(input.shape(), bad));
    }
  }
  return " All inputs were finite.";
}

// The node's place in the pass's forward order: (k, n) for the k-th of n ops.
std::pair<size_t, size_t> position_in(const Node& node, const detail::GraphOrder& graph) {
  size_t k = 0, n = 0;
  for (const auto& impl : graph.order) {
    const AutogradMeta* meta = autograd_meta(*impl);
    if (meta == nullptr || !meta->grad_fn) continue;
    ++n;
    if (meta->grad_fn.get() == &node) k = n;
  }
  return {k, n};
}

}  // namespace

DetectAnomaly::DetectAnomaly() {
  std::lock_guard<std::mutex> lock(guards_mutex);
  if (live_guards++ == 0) {
    recorded_since_start.store(0, std::memory_order_relaxed);
    detail::inspect_bits.fetch_or(detail::kAnomalyBit, std::memory_order_relaxed);
  }
}

DetectAnomaly::~DetectAnomaly() {
  std::lock_guard<std::mutex> lock(guards_mutex);
  if (--live_guards == 0) {
    detail::inspect_bits.fetch_and(~detail::kAnomalyBit, std::memory_order_relaxed);
  }
}

int64_t DetectAnomaly::checks() { return checked_tensors.load(std::memory_order_relaxed); }

namespace detail {

void anomaly_on_record(const Node& node, const Tensor& output) {
  const int64_t number = recorded_since_start.fetch_add(1, std::memory_order_relaxed) + 1;
  const int64_t bad = first_non_finite(output);
  if (bad < 0) return;
  fail(
      "DetectAnomaly: forward op '{}' (op #{} recorded since DetectAnomaly began) produced {} "
      "in its output of shape {}, at {}; its inputs had shapes {}.{} Look at the values "
      "reaching '{}': a log or sqrt of a negative number, 0/0, inf - inf, or an overflow "
      "(exp, a large product) makes NaN or Inf.",
      node.name, number, value_at(output, bad), output.shape(), element(output.shape(), bad),
      input_shapes(node), inputs_verdict(node), node.name);
}

void anomaly_on_backward(const Node& node, const Tensor& grad_output, const Gradients& grads,
                         const GraphOrder& graph) {
  for (size_t i = 0; i < grads.size(); ++i) {
    const Gradient& g = grads[i];
    // The engine drops gradients for inputs that need none (a constant
    // exponent's may well be NaN); so are they here.
    if (!g.defined() || i >= node.inputs.size() || !requires_grad(node.inputs[i])) continue;
    const Tensor dense = g.to_dense();
    const int64_t bad = first_non_finite(dense);
    if (bad < 0) continue;
    const auto [k, n] = position_in(node, graph);
    const int64_t bad_in = first_non_finite(grad_output);
    const std::string received =
        bad_in < 0
            ? std::string("was finite")
            : fmt::format("already held {} at {} (the grad_output passed to backward())",
                          value_at(grad_output, bad_in), element(grad_output.shape(), bad_in));
    fail(
        "DetectAnomaly: the backward of forward op '{}' (op {} of {} in the graph's forward "
        "order) produced {} in the gradient for its input {} of shape {}, at {}; the "
        "gradient it received, of shape {}, {}. The forward op '{}' took inputs of shapes {}. "
        "A derivative that is infinite where the value is finite (sqrt or log at 0, a power "
        "below 1 at 0) does this: move the input off that point (add an epsilon) or clamp it.",
        node.name, k, n, value_at(dense, bad), i, dense.shape(), element(dense.shape(), bad),
        grad_output.shape(), received, node.name, input_shapes(node));
  }
}

}  // namespace detail

}  // namespace attograd
