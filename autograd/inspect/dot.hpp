// autograd/inspect/dot.hpp — the graph behind a tensor as a Graphviz picture.
//
//   Tensor loss = …;
//   std::string text = to_dot(loss, DotOptions().names(model.named_parameters()));
//   // write text to graph.dot, then: dot -Tsvg graph.dot -o graph.svg
//   // or, without Graphviz: to_svg(loss, options) from plot/to_svg.hpp
//
// One box per op (its name and output shape), one ellipse per leaf (its name
// when `names` gives it one, its shape, and whether it requires grad), one
// arrow from each input to the op that used it — the arrows point the way
// the forward pass ran; backward() walks them the other way. Call it before
// backward(), or after backward(…, retain_graph=true): backward() frees the
// graph it walked.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.hpp"

namespace attograd {

class DotOptions {
 public:
  // Names for leaves, e.g. a module's named_parameters(): "decoder.out.weight".
  DotOptions& names(std::vector<std::pair<std::string, Tensor>> named) {
    names_ = std::move(named);
    return *this;
  }
  // Print each tensor's values and, once backward() has reached it, the
  // gradient of each leaf (and of each tensor marked retain_grad()), up to
  // `show_values_limit` numbers each.
  DotOptions& show_values(bool on) {
    show_values_ = on;
    return *this;
  }
  DotOptions& show_values_limit(int64_t count) {
    show_values_limit_ = count;
    return *this;
  }
  // Draw each module as one box: a leaf named "encoder.gru.weight_ih_l0"
  // belongs to module "encoder" at depth 1 ("encoder.gru" at depth 2). An op
  // belongs to the module of the parameters it takes; an op that takes none
  // belongs to the module of its inputs' ops. Either way, inputs of two
  // modules leave the op outside every box. 0: no boxes.
  DotOptions& collapse_depth(int depth) {
    collapse_depth_ = depth;
    return *this;
  }
  // Draw at most this many nodes, those nearest the root; a note says what
  // was left out. 0: no limit.
  DotOptions& max_nodes(int64_t count) {
    max_nodes_ = count;
    return *this;
  }

  const std::vector<std::pair<std::string, Tensor>>& names() const { return names_; }
  bool show_values() const { return show_values_; }
  int64_t show_values_limit() const { return show_values_limit_; }
  int collapse_depth() const { return collapse_depth_; }
  int64_t max_nodes() const { return max_nodes_; }

 private:
  std::vector<std::pair<std::string, Tensor>> names_;
  bool show_values_ = false;
  int64_t show_values_limit_ = 6;
  int collapse_depth_ = 0;
  int64_t max_nodes_ = 400;
};

// The graph that produced `root`, in Graphviz DOT text.
std::string to_dot(const Tensor& root, const DotOptions& options = DotOptions());

// GraphCapture (autograd/inspect/graph_picture.hpp) takes the graph of the
// first backward() while it is alive, as a picture or as this DOT text.

}  // namespace attograd
