// examples/common/inspect_tools.hpp — the trainers' --dot, --detect-anomaly
// and --profile flags (autograd/inspect/ has the tools themselves).
//
//   cli::InspectFlags inspect;
//   cli::declare_inspect_flags(parser, inspect);
//   …
//   cli::InspectSession session(inspect, DotOptions().names(model.named_parameters()));
//   train();                           // the tools watch every step
//   session.finish(std::cout);         // writes the graph (.dot and .svg), prints the profile
//   report.add_graph_svg(session.graph_svg());  // the first step's graph, --dot or not
//
// Header only, unlike the rest of examples/common: it uses the tensor library,
// which the shared helpers do not, so each program compiles it at its own
// element type.
#pragma once

#include <fmt/format.h>

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>

#include "attograd.hpp"
#include "autograd/inspect/graph_picture.hpp"
#include "examples/common/cli.hpp"
#include "examples/common/paths_apart.hpp"
#include "plot/svg_graph.hpp"
#include "tensor/atomic_file.hpp"
#include "tensor/printable.hpp"

namespace attograd::cli {

struct InspectFlags {
  std::string dot;
  bool detect_anomaly = false;
  bool profile = false;
};

// --dot FILE; with `tools`, --detect-anomaly and --profile as well.
inline void declare_inspect_flags(Parser& parser, InspectFlags& flags, bool tools = true) {
  parser.flag("dot", flags.dot,
              "write the graph of the first training step to this file in Graphviz DOT, and as an "
              "SVG picture beside it (FILE.svg; drawn without Graphviz)");
  if (!tools) return;
  parser
      .flag("detect-anomaly", flags.detect_anomaly,
            "check every op's output and every gradient for NaN or Inf; the first one ends the "
            "run with an error naming the op")
      .flag(
          "profile", flags.profile,
          "print a table of calls and time per op (forward, backward, optimizer step) at the end");
}

// Where the SVG of a DOT file goes: graph.dot -> graph.svg, else FILE.svg.
inline std::filesystem::path svg_path_for(const std::filesystem::path& dot) {
  return dot.extension() == ".dot" ? std::filesystem::path(dot).replace_extension(".svg")
                                   : std::filesystem::path(dot.string() + ".svg");
}

// The files --dot FILE writes (FILE and its SVG), for the program's
// PathsApart; none when `dot` is "".
inline void add_dot_outputs(PathsApart& paths, const std::string& dot) {
  if (dot.empty()) return;
  paths.writes("--dot", dot).writes("--dot", svg_path_for(dot));
}

// Writes `picture` as DOT text to `path` and as SVG beside it (both
// atomically), says what it wrote, and returns the SVG text. The SVG is laid
// out by plot/svg_graph.cpp, so it needs no Graphviz; the DOT file is for
// those who want Graphviz's own layout (dot -Tsvg FILE.dot -o FILE.svg
// overwrites ours).
inline std::string write_graph_files(const std::filesystem::path& path, const GraphPicture& picture,
                                     std::ostream& out) {
  const std::filesystem::path svg = svg_path_for(path);
  std::string svg_text = plot::graph_svg(picture);
  write_file_atomically(path, dot_text(picture));
  write_file_atomically(svg, svg_text);
  out << fmt::format("Wrote the graph to {} and {}\n", printable(path.string(), 300),
                     printable(svg.string(), 300));
  return svg_text;
}

// The tools the flags ask for, alive from construction to finish().
class InspectSession {
 public:
  InspectSession(const InspectFlags& flags, const DotOptions& dot_options = DotOptions())
      : flags_(flags) {
    capture_.emplace(dot_options);  // --dot's files, and the run report's graph
    if (flags.detect_anomaly) anomaly_.emplace();
    if (flags.profile) profiler_.emplace();
  }

  // The first step's graph as SVG, after finish(): laid out once, by
  // finish() for --dot or here on the first call; empty when no step ran (a
  // run resumed at its end).
  const std::string& graph_svg() {
    if (graph_svg_.empty() && picture_) graph_svg_ = plot::graph_svg(*picture_);
    return graph_svg_;
  }

  // Writes the captured graph and prints the profile to `out`.
  void finish(std::ostream& out) {
    anomaly_.reset();
    if (capture_) {
      if (capture_->captured()) picture_ = capture_->picture();
      capture_.reset();
      if (!flags_.dot.empty()) {
        check(picture_.has_value(), "--dot {}: the run ended before its first backward()",
              flags_.dot);
        graph_svg_ = write_graph_files(flags_.dot, *picture_, out);
      }
    }
    if (profiler_) {
      out << "\nProfile (per op name; forward: time since the previous op, see "
             "autograd/inspect/profiler.hpp):\n"
          << profiler_->table();
      profiler_.reset();
    }
  }

 private:
  InspectFlags flags_;
  std::optional<GraphCapture> capture_;
  std::optional<DetectAnomaly> anomaly_;
  std::optional<Profiler> profiler_;
  std::optional<GraphPicture> picture_;  // the first step's, once finish() has run
  std::string graph_svg_;                // its SVG, once laid out
};

}  // namespace attograd::cli
