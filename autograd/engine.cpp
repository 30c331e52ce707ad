#include "autograd/engine.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "autograd/ops.hpp"
#include "tensor/factory.hpp"
#include "tensor/kernels.hpp"
#include "tensor/pool.hpp"

namespace attograd {

// ---- Recording -------------------------------------------------------------

namespace {
thread_local bool grad_mode = true;
}  // namespace

bool grad_enabled() { return grad_mode; }

NoGradGuard::NoGradGuard() : previous_(grad_mode) { grad_mode = false; }
NoGradGuard::~NoGradGuard() { grad_mode = previous_; }

namespace {

bool any_requires_grad(const Tensor* first, const Tensor* last) {
  return grad_mode &&
         std::any_of(first, last, [](const Tensor& t) { return t.defined() && t.requires_grad(); });
}

}  // namespace

bool should_record(std::initializer_list<Tensor> inputs) {
  return any_requires_grad(inputs.begin(), inputs.end());
}

bool should_record(const std::vector<Tensor>& inputs) {
  return any_requires_grad(inputs.data(), inputs.data() + inputs.size());
}

Tensor record(const char* name, Tensor output, std::vector<Tensor> inputs,
              Node::BackwardFn backward) {
  if (!should_record(inputs)) return output;
  return attach_node(
      name, std::move(output),
      Node::Inputs(std::make_move_iterator(inputs.begin()), std::make_move_iterator(inputs.end())),
      std::move(backward));
}

Tensor attach_node(const char* name, Tensor output, Node::Inputs inputs,
                   Node::BackwardFn backward) {
  auto node = make_pooled<Node>();
  node->name = name;
  node->inputs = std::move(inputs);
  node->backward = std::move(backward);
  output.impl().requires_grad = true;
  output.impl().grad_fn = std::move(node);
  return output;
}

// A long chain (an unrolled RNN, a 100,000-step test) is a linked list
// tensor → node → tensor → node …; destroying it naively recurses once per
// link and overflows the stack. A node owns the rest of the graph through two
// members: its inputs and its backward closure (which may hold the very same
// input handles, as mul's does). So the outermost dying node becomes a
// collector: any node destroyed while it runs hands both members over and
// returns at once, and the collector releases them one at a time in a loop.
namespace {

// The lists one backward pass keeps. They are small for the graphs of small
// models (a dozen tensors), so their blocks come from the per-thread pool
// rather than from malloc; a large graph's lists outgrow the pool's sizes
// and take ordinary heap blocks.
template <typename T>
using PassList = std::vector<T, pool::Allocator<T>>;

struct GraphLeftovers {
  std::vector<Tensor> tensors;
  std::vector<Node::BackwardFn> closures;
};
thread_local GraphLeftovers* leftovers = nullptr;  // the collector's list, if one is running

}  // namespace

Node::~Node() {
  const bool collector = leftovers == nullptr;
  GraphLeftovers local;
  if (collector) leftovers = &local;
  for (Tensor& input : inputs) leftovers->tensors.push_back(std::move(input));
  inputs.clear();
  if (backward) leftovers->closures.push_back(std::move(backward));
  backward = nullptr;
  if (!collector) return;
  // Releasing one item may destroy further nodes, which append to `local`.
  while (!local.tensors.empty() || !local.closures.empty()) {
    if (!local.closures.empty()) {
      Node::BackwardFn closure = std::move(local.closures.back());
      local.closures.pop_back();
    } else {
      Tensor tensor = std::move(local.tensors.back());
      local.tensors.pop_back();
    }
  }
  leftovers = nullptr;
}

// ---- Leaves and gradients ---------------------------------------------------

Tensor requires_grad_(Tensor t, bool enabled) {
  check(t.is_leaf() || enabled,
        "requires_grad_: only leaf tensors can stop requiring grad; use detach() on a result");
  t.impl().requires_grad = enabled;
  return t;
}

Tensor grad(const Tensor& t) { return t.impl().grad ? Tensor(t.impl().grad) : Tensor(); }

void zero_grad(const Tensor& t) { t.impl().grad.reset(); }

void retain_grad(const Tensor& t) {
  check(t.requires_grad(),
        "retain_grad: the tensor does not require grad, so it will never have a gradient");
  t.impl().retains_grad = true;
}

namespace {

// Stores `hook` in the leaf's slot (an empty function clears it). `setter`
// and `needs` word the error for a tensor that is not a leaf requiring grad.
template <typename Argument>
void set_leaf_hook(const char* setter, const char* needs, const Tensor& leaf,
                   std::shared_ptr<const std::function<void(const Argument&)>> TensorImpl::*slot,
                   std::function<void(const Argument&)> hook) {
  check(leaf.defined(), "{}: the tensor is undefined", setter);
  if (!hook) {
    (leaf.impl().*slot).reset();
    return;
  }
  check(leaf.is_leaf() && leaf.requires_grad(), "{}: only a leaf that requires grad {}", setter,
        needs);
  leaf.impl().*slot = std::make_shared<const std::function<void(const Argument&)>>(std::move(hook));
}

}  // namespace

void set_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(const Tensor&)> hook) {
  set_leaf_hook("set_post_accumulate_grad_hook",
                "keeps a gradient to hook; call requires_grad_ on it first (a computed tensor "
                "has no grad to accumulate)",
                leaf, &TensorImpl::post_accumulate_grad_hook, std::move(hook));
}

void set_gradient_factors_hook(const Tensor& leaf,
                               std::function<void(const GradientFactors&)> hook) {
  set_leaf_hook("set_gradient_factors_hook", "takes gradients; call requires_grad_ on it first",
                leaf, &TensorImpl::gradient_factors_hook, std::move(hook));
}

Tensor detach(const Tensor& t) { return t.as_strided(t.shape(), t.strides(), t.offset()); }

namespace {

// Can a gradient of shape `from` be summed down to `to`? Only if `to`
// broadcasts to `from`: no more axes, and each trailing axis equal or 1 in `to`.
bool reducible(const Shape& from, const Shape& to) {
  const int64_t leading = from.ndim() - to.ndim();
  if (leading < 0) return false;
  for (int64_t axis = 0; axis < to.ndim(); ++axis) {
    if (to[axis] != 1 && to[axis] != from[axis + leading]) return false;
  }
  return true;
}

}  // namespace

Tensor sum_to(const Tensor& gradient, const Shape& shape) {
  if (gradient.shape() == shape) return gradient;
  check(reducible(gradient.shape(), shape),
        "sum_to: gradient of shape {} cannot be reduced to {} ({} does not broadcast to {})",
        gradient.shape(), shape, shape, gradient.shape());
  const int64_t leading = gradient.dim() - shape.ndim();
  std::vector<int64_t> axes;
  for (int64_t axis = 0; axis < gradient.dim(); ++axis) {
    const bool added = axis < leading;
    if (added || (shape[axis - leading] == 1 && gradient.shape()[axis] != 1)) axes.push_back(axis);
  }
  Tensor summed = axes.empty() ? gradient : sum(gradient, axes, /*keepdim=*/true);
  return reshape(summed, shape);
}

// ---- Backward -----------------------------------------------------------------

namespace {

// Whether `t` is the only way to reach its values — no other handle, view or
// closure shares them — and it fills its whole storage in row-major order:
// then it can be kept, and later written in place, without a copy (what
// PyTorch's AccumulateGrad calls stealing the gradient).
bool sole_contiguous_owner(const Tensor& t) {
  return t.impl_ptr().use_count() == 1 && t.storage().use_count() == 1 && t.offset() == 0 &&
         t.numel() == t.storage()->size() && t.is_contiguous();
}

// Adds `gradient` into the tensor slot `slot` (creating it on first use). The
// first gradient is copied, unless nothing else can see it, so that later
// in-place accumulation can never write into a tensor some closure still reads.
void accumulate_into(std::shared_ptr<TensorImpl>& slot, const Tensor& gradient) {
  if (!slot) {
    slot = sole_contiguous_owner(gradient) ? gradient.impl_ptr() : gradient.clone_data().impl_ptr();
    return;
  }
  Tensor target(slot);
  const Tensor source = gradient.contiguous_data();
  kernels::accumulate(target.data(), source.data(), target.numel());
}

// The gradient on its way to a non-leaf tensor, summed over the ops that use
// it. The first contribution is kept as the op returned it, without a copy:
// it may be a view another closure still reads (add hands the same dy to both
// of its inputs), so it is never written. Only when a second contribution
// arrives is a private copy made, which is then added to in place. Most
// tensors of a graph are used by one op, so most gradients are never copied,
// and a transposed gradient (a Linear weight's) keeps its layout on its way
// to the leaf.
struct PendingGradient {
  Tensor sum;
  bool owned = false;  // `sum` is our own copy and may be written
};

void add_pending(PendingGradient& slot, const Tensor& gradient) {
  if (!slot.sum.defined()) {
    slot.sum = gradient;
    return;
  }
  if (!slot.owned) {
    if (!sole_contiguous_owner(slot.sum)) slot.sum = slot.sum.clone_data();
    slot.owned = true;
  }
  const Tensor source = gradient.contiguous_data();
  kernels::accumulate(slot.sum.data(), source.data(), slot.sum.numel());
}

// Numbers the tensors of one backward pass 0, 1, 2, … in the order they are
// first seen, so that their pending gradients can live in a plain vector.
// An open-addressing hash table: one flat array of (tensor, number) slots,
// searched from the pointer's hash onwards to the first empty slot, and
// doubled when half full. Unlike std::unordered_map, which allocates one
// node per tensor, it allocates a handful of times per pass — in a graph of
// a few dozen small tensors those allocations cost more than the arithmetic.
class TensorNumbering {
 public:
  static constexpr size_t npos = static_cast<size_t>(-1);

  // t's number, or npos if it has none.
  size_t find(const TensorImpl* t) const {
    if (slots_.empty()) return npos;
    for (size_t i = home(t);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].tensor == t) return slots_[i].number;
      if (slots_[i].tensor == nullptr) return npos;
    }
  }

  // Gives t the next number; false (and no change) if it already has one.
  bool insert(const TensorImpl* t) {
    if (2 * (count_ + 1) > slots_.size()) grow();
    for (size_t i = home(t);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].tensor == t) return false;
      if (slots_[i].tensor == nullptr) {
        slots_[i] = {t, count_++};
        return true;
      }
    }
  }

  size_t size() const { return count_; }

 private:
  struct Slot {
    const TensorImpl* tensor = nullptr;
    size_t number = 0;
  };

  // Where t's search starts. Heap addresses share their low bits (alignment)
  // and high bits (the heap's region); multiplying by 2^64/φ (Fibonacci
  // hashing) mixes every bit into the top ones, which pick the slot.
  size_t home(const TensorImpl* t) const {
    const uint64_t mixed = reinterpret_cast<uintptr_t>(t) * uint64_t(0x9E3779B97F4A7C15);
    return static_cast<size_t>(mixed >> (64 - bits_));
  }

  void grow() {
    PassList<Slot> old = std::move(slots_);
    bits_ = old.empty() ? 5 : bits_ + 1;  // 32 slots (512 bytes, one pool block) hold 16 tensors
    slots_.assign(size_t(1) << bits_, Slot{});
    for (const Slot& slot : old) {
      if (slot.tensor == nullptr) continue;
      size_t i = home(slot.tensor);
      while (slots_[i].tensor != nullptr) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = slot;
    }
  }

  PassList<Slot> slots_;  // a power of two of them
  int bits_ = 0;          // log2(slots_.size())
  size_t count_ = 0;
};

// The tensors backward() visits: `order` is a post-order of the graph below
// the root without recursion (a tensor comes after every input it depends
// on); `numbers` numbers the same tensors for the pending gradients. Inputs
// are visited in order, so both are the same on every run.
struct GraphOrder {
  PassList<std::shared_ptr<TensorImpl>> order;
  TensorNumbering numbers;
  // For leaves with a factors hook: how many uses (node inputs) of each are
  // still to run their backward; zero for every other tensor. Empty when the
  // graph has no such leaf.
  PassList<uint32_t> uses_left;
};

GraphOrder topological_order(const Tensor& root) {
  // Room for a small graph from the start, rather than growing 1, 2, 4, 8 …
  // (16 handles or frames fit in the pool's blocks of at most 512 bytes).
  constexpr size_t kSmallGraph = 16;
  GraphOrder graph;
  graph.order.reserve(kSmallGraph);
  struct Frame {
    std::shared_ptr<TensorImpl> impl;
    size_t next_input;
  };
  PassList<Frame> stack;
  stack.reserve(kSmallGraph);
  std::vector<const TensorImpl*> factor_takers;  // one entry per use
  stack.push_back({root.impl_ptr(), 0});
  graph.numbers.insert(root.impl_ptr().get());
  while (!stack.empty()) {
    Frame& frame = stack.back();
    const auto& node = frame.impl->grad_fn;
    if (node && frame.next_input < node->inputs.size()) {
      const Tensor& input = node->inputs[frame.next_input++];
      if (!input.defined() || !input.requires_grad()) continue;
      if (input.impl().gradient_factors_hook) factor_takers.push_back(input.impl_ptr().get());
      if (graph.numbers.insert(input.impl_ptr().get())) {
        stack.push_back({input.impl_ptr(), 0});  // invalidates `frame`; loop re-reads it
      }
      continue;
    }
    graph.order.push_back(std::move(frame.impl));
    stack.pop_back();
  }
  if (!factor_takers.empty()) {
    graph.uses_left.assign(graph.numbers.size(), 0);
    for (const TensorImpl* leaf : factor_takers) ++graph.uses_left[graph.numbers.find(leaf)];
  }
  return graph;
}

// The node whose closure backward() is running on this thread, with the
// pass's bookkeeping: what offer_gradient_factors needs to decide.
struct RunningNode {
  const Node* node;
  const GraphOrder* graph;
  const PassList<PendingGradient>* pending;
};
thread_local const RunningNode* running_node = nullptr;

// Sets running_node for one closure call, and restores it even if it throws.
class RunningNodeScope {
 public:
  explicit RunningNodeScope(const RunningNode* running) : previous_(running_node) {
    running_node = running;
  }
  ~RunningNodeScope() { running_node = previous_; }
  RunningNodeScope(const RunningNodeScope&) = delete;
  RunningNodeScope& operator=(const RunningNodeScope&) = delete;

 private:
  const RunningNode* previous_;
};

}  // namespace

bool offer_gradient_factors(size_t input, const GradientFactors& factors) {
  const RunningNode* running = running_node;
  if (running == nullptr || input >= running->node->inputs.size()) return false;
  const Tensor& leaf = running->node->inputs[input];
  if (!leaf.defined() || !leaf.is_leaf() || !leaf.requires_grad()) return false;
  const auto hook = leaf.impl().gradient_factors_hook;  // a copy: the hook may remove itself
  if (!hook || leaf.impl().grad || running->graph->uses_left.empty()) return false;
  const size_t number = running->graph->numbers.find(&leaf.impl());
  // Other uses still to come would read the leaf's values, or add to its
  // gradient; a pending sum is gradient that came first.
  if (running->graph->uses_left[number] != 1 || (*running->pending)[number].sum.defined()) {
    return false;
  }
  (*hook)(factors);
  return true;
}

void backward(const Tensor& root, const Tensor& grad_output, bool retain_graph) {
  check(root.requires_grad(),
        "backward: this tensor does not require grad — none of its inputs had "
        "requires_grad_(...) set, or it was computed under NoGradGuard");
  Tensor seed = grad_output;
  if (!seed.defined()) {
    check(root.numel() == 1,
          "backward: output has shape {}; without an output gradient backward() needs a "
          "one-element tensor (reduce it first, e.g. sum), or pass grad_output of shape {}",
          root.shape(), root.shape());
    seed = ones(root.shape());
  } else {
    seed = seed.clone_data();  // the caller's tensor is never written
  }
  check(seed.shape() == root.shape(),
        "backward: grad_output has shape {} but the output has shape {}; they must match",
        seed.shape(), root.shape());

  NoGradGuard no_grad;  // the closures' own arithmetic is not recorded
  GraphOrder graph = topological_order(root);
  // pending[numbers.find(t)]: the gradient summed so far for tensor t.
  PassList<PendingGradient> pending(graph.numbers.size());
  pending[graph.numbers.find(root.impl_ptr().get())] = PendingGradient{seed, true};

  // Reverse post-order: each tensor is processed after everything that uses it.
  for (auto it = graph.order.rbegin(); it != graph.order.rend(); ++it) {
    TensorImpl& impl = **it;
    PendingGradient& slot = pending[graph.numbers.find(&impl)];
    if (!slot.sum.defined()) continue;            // no gradient reached it
    const Tensor gradient = std::move(slot.sum);  // any layout; closures must not assume contiguity

    if (!impl.grad_fn) {  // a leaf: this is where gradients are kept
      accumulate_into(impl.grad, gradient);
      // Its gradient is complete: `pending` summed every contribution first.
      // (A copy of the handle, so a hook may remove itself.)
      if (const auto hook = impl.post_accumulate_grad_hook) (*hook)(Tensor(*it));
      continue;
    }
    if (impl.retains_grad) accumulate_into(impl.grad, gradient);
    Node& node = *impl.grad_fn;
    check(!node.released,
          "backward: the graph behind '{}' was already freed by an earlier backward(); pass "
          "retain_graph=true to that first call to backpropagate through it twice",
          node.name);
    std::vector<Tensor> input_grads;
    {
      const RunningNode running{&node, &graph, &pending};
      const RunningNodeScope scope(&running);
      input_grads = node.backward(gradient);
    }
    if (!graph.uses_left.empty()) {  // this node's uses of factor-taking leaves are done
      for (const Tensor& input : node.inputs) {
        if (input.defined() && input.requires_grad() && input.impl().gradient_factors_hook) {
          uint32_t& left = graph.uses_left[graph.numbers.find(&input.impl())];
          if (left > 0) --left;  // 0: the hook was set during this pass, never counted
        }
      }
    }
    check(input_grads.size() == node.inputs.size(),
          "backward: op '{}' returned {} gradients for {} inputs (a bug in the op)", node.name,
          input_grads.size(), node.inputs.size());
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const Tensor& input = node.inputs[i];
      if (!input.defined() || !input.requires_grad() || !input_grads[i].defined()) continue;
      check(reducible(input_grads[i].shape(), input.shape()),
            "backward: op '{}' returned a gradient of shape {} for its input {} of shape {} (a "
            "bug in the op: the gradient must have the input's shape or broadcast from it)",
            node.name, input_grads[i].shape(), i, input.shape());
      add_pending(pending[graph.numbers.find(input.impl_ptr().get())],
                  sum_to(input_grads[i], input.shape()));
    }
    if (!retain_graph) {
      node.backward = nullptr;  // frees the saved tensors
      node.inputs.clear();
      node.released = true;
    }
  }
}

}  // namespace attograd
