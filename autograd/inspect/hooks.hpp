// autograd/inspect/hooks.hpp — where the engine lets the inspection tools in
// (used by autograd/engine.cpp; not public API).
//
// DetectAnomaly and Profiler (autograd/inspect/) see every op the engine
// records and every backward closure it runs; GraphCapture sees the root of
// each backward() before the pass frees its graph. The engine asks one question
// before each: is any tool on? That is one relaxed load of one atomic word,
// so with every tool off (the default) recording and backward pay a load and
// a branch per op and nothing else.
#pragma once

#include <atomic>
#include <chrono>

#include "autograd/gradient.hpp"
#include "autograd/graph_order.hpp"
#include "autograd/node.hpp"
#include "tensor/tensor.hpp"

namespace attograd::detail {

// One bit per tool that is on (any number of guards of that tool are alive).
enum InspectBit : unsigned { kAnomalyBit = 1u, kProfilerBit = 2u, kGraphCaptureBit = 4u };
extern std::atomic<unsigned> inspect_bits;

inline bool inspecting() { return inspect_bits.load(std::memory_order_relaxed) != 0; }

using InspectClock = std::chrono::steady_clock;

// After record() has attached `node` to `output` (forward).
void on_record(const Node& node, const Tensor& output);
// node.backward(grad_output), timed and checked by the tools that are on;
// `graph` is the pass the node belongs to.
Gradients inspected_call(Node& node, const Tensor& grad_output, const GraphOrder& graph);
// Alive for one backward(root): shows the root to GraphCapture before the pass
// frees its graph, and when it ends tells the Profiler that what runs next
// (an optimizer step, the next forward pass) is not part of the last closure.
class InspectedPass {
 public:
  explicit InspectedPass(const Tensor& root);
  ~InspectedPass();
  InspectedPass(const InspectedPass&) = delete;
  InspectedPass& operator=(const InspectedPass&) = delete;
};

}  // namespace attograd::detail
