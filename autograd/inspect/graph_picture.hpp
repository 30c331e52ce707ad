// autograd/inspect/graph_picture.hpp — what a picture of the recorded graph
// shows, before anyone draws it.
//
//   GraphPicture picture = graph_picture(loss, DotOptions().names(model.named_parameters()));
//   std::string dot = dot_text(picture);   // the same text as to_dot(loss, …)
//   // and one layer up, plot/svg_graph.hpp draws it as SVG without Graphviz
//
// The nodes, their labels, the module boxes and the node cap are decided once,
// here (autograd/inspect/dot.cpp); to_dot writes them as Graphviz text and
// plot/svg_graph.hpp lays them out and draws them itself. This header names
// no element type (Tensor and DotOptions are only declared), so the plotting
// library, which is built once for float and double programs alike, can read
// a picture without linking the tensor library.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace attograd {

class Tensor;
class DotOptions;  // autograd/inspect/dot.hpp

// One drawn node: a tensor, a module box standing for many, or the note
// saying how many nodes the cap left out.
struct GraphNode {
  enum class Kind { op, leaf, module, note };
  std::string id;  // unique in its picture: "t0" (the root), "t7", "module0", "omitted"
  Kind kind = Kind::op;
  // The label, one entry per line: an op's name and output shape; a leaf's
  // parameter name (or "leaf" / "constant"), shape and "requires_grad"; a
  // module's name and "3 ops, 2 parameters"; then values when asked for.
  std::vector<std::string> lines;
  bool root = false;  // the tensor the picture was taken of
};

// One arrow, from an input to the node that used it (the way the forward
// pass ran).
struct GraphEdge {
  size_t from = 0;  // index into GraphPicture::nodes
  size_t to = 0;
  int count = 1;        // uses merged into this arrow (module boxes merge them)
  bool dashed = false;  // from the note to a node whose inputs were left out
};

struct GraphPicture {
  std::vector<GraphNode> nodes;  // nearest the root first; the note, if any, last
  std::vector<GraphEdge> edges;  // solid ones in first-seen order, then the dashed ones
};

// The picture of the graph that produced `root` (see DotOptions for labels,
// module boxes and the node cap). Throws when the graph was freed.
GraphPicture graph_picture(const Tensor& root, const DotOptions& options);

// The picture in Graphviz DOT text: to_dot(root, options) is
// dot_text(graph_picture(root, options)).
std::string dot_text(const GraphPicture& picture);

// The graph of the first backward() while it is alive, in any thread, taken
// just before that pass frees it: how a program that never sees its loss
// tensor (a trainer's loop) can still draw one step.
//
//   GraphCapture capture(DotOptions().collapse_depth(1));
//   trainer.run();                 // the first backward() is drawn
//   if (capture.captured()) write(capture.text());   // DOT; capture.picture() to draw
class GraphCapture {
 public:
  explicit GraphCapture(const DotOptions& options);
  ~GraphCapture();
  GraphCapture(const GraphCapture&) = delete;
  GraphCapture& operator=(const GraphCapture&) = delete;

  bool captured() const;
  // The picture; empty (no nodes) until captured().
  GraphPicture picture() const;
  // The picture as DOT text (dot_text); empty until captured().
  std::string text() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace attograd
