// autograd/inspect/hooks.cpp — the engine's hooks, passed on to the tools
// that are on.
#include "autograd/inspect/hooks.hpp"

namespace attograd::detail {

std::atomic<unsigned> inspect_bits{0};

// In anomaly.cpp and profiler.cpp.
void anomaly_on_record(const Node& node, const Tensor& output);
void anomaly_on_backward(const Node& node, const Tensor& grad_output, const Gradients& grads,
                         const GraphOrder& graph);
void profiler_on_forward(const char* name, InspectClock::time_point now);
void profiler_on_backward(const char* name, InspectClock::time_point started,
                          InspectClock::time_point now);
void profiler_mark(InspectClock::time_point now);
void graph_capture_backward(const Tensor& root);

void on_record(const Node& node, const Tensor& output) {
  const unsigned bits = inspect_bits.load(std::memory_order_relaxed);
  // Timed before the check, so the check's own time is not the op's.
  if (bits & kProfilerBit) profiler_on_forward(node.name, InspectClock::now());
  if (bits & kAnomalyBit) anomaly_on_record(node, output);
}

InspectedPass::InspectedPass(const Tensor& root) {
  if (inspect_bits.load(std::memory_order_relaxed) & kGraphCaptureBit) graph_capture_backward(root);
}

InspectedPass::~InspectedPass() {
  if (inspect_bits.load(std::memory_order_relaxed) & kProfilerBit) {
    profiler_mark(InspectClock::now());
  }
}

Gradients inspected_call(Node& node, const Tensor& grad_output, const GraphOrder& graph) {
  const InspectClock::time_point started = InspectClock::now();
  Gradients input_grads = node.backward(grad_output);
  const unsigned bits = inspect_bits.load(std::memory_order_relaxed);
  if (bits & kProfilerBit) profiler_on_backward(node.name, started, InspectClock::now());
  if (bits & kAnomalyBit) anomaly_on_backward(node, grad_output, input_grads, graph);
  return input_grads;
}

}  // namespace attograd::detail
