// examples/common/inspect_tools.hpp — the trainers' --dot, --detect-anomaly
// and --profile flags (autograd/inspect/ has the tools themselves).
//
//   cli::InspectFlags inspect;
//   cli::declare_inspect_flags(parser, inspect);
//   …
//   cli::InspectSession session(inspect, DotOptions().names(model.named_parameters()));
//   train();                           // the tools watch every step
//   session.finish(std::cout);         // writes the graph, prints the profile
//
// Header only, unlike the rest of examples/common: it uses the tensor library,
// which the shared helpers do not, so each program compiles it at its own
// element type.
#pragma once

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>

#include "attograd.hpp"
#include "examples/common/cli.hpp"
#include "tensor/atomic_file.hpp"
#include "tensor/printable.hpp"

extern char** environ;

namespace attograd::cli {

struct InspectFlags {
  std::string dot;
  bool detect_anomaly = false;
  bool profile = false;
};

// --dot FILE; with `tools`, --detect-anomaly and --profile as well.
inline void declare_inspect_flags(Parser& parser, InspectFlags& flags, bool tools = true) {
  parser.flag("dot", flags.dot,
              "write the graph of the first training step to this file in Graphviz DOT (and an "
              "SVG beside it when Graphviz's `dot` is installed)");
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

// Runs `dot -Tsvg` on the file when Graphviz is installed: true if it wrote
// the SVG (through a temporary file of the project's pattern,
// "<svg>.attograd-tmp.<pid>.render", so a failed render leaves none and a
// user's file is never overwritten).
inline bool render_svg(const std::filesystem::path& dot, const std::filesystem::path& svg) {
  const std::filesystem::path temporary =
      svg.string() + temporary_suffix(static_cast<long>(::getpid()), "render");
  const std::string input = dot.string(), output = temporary.string();
  char* argv[] = {const_cast<char*>("dot"),          const_cast<char*>("-Tsvg"),
                  const_cast<char*>(input.c_str()),  const_cast<char*>("-o"),
                  const_cast<char*>(output.c_str()), nullptr};
  pid_t child = 0;
  int status = 0;
  const bool ran = ::posix_spawnp(&child, "dot", nullptr, nullptr, argv, environ) == 0 &&
                   ::waitpid(child, &status, 0) == child && WIFEXITED(status) &&
                   WEXITSTATUS(status) == 0;
  std::error_code error;
  if (ran) std::filesystem::rename(temporary, svg, error);
  if (!ran || error) std::filesystem::remove(temporary, error);
  return ran && !error;
}

// Writes `text` to `path` (atomically), renders it if it can, and says what it wrote.
inline void write_dot_file(const std::filesystem::path& path, const std::string& text,
                           std::ostream& out) {
  write_file_atomically(path, text);
  const std::filesystem::path svg = svg_path_for(path);
  if (render_svg(path, svg)) {
    out << fmt::format("Wrote the graph to {} and {}\n", printable(path.string(), 300),
                       printable(svg.string(), 300));
  } else {
    const std::string shown = printable(path.string(), 300);
    out << fmt::format("Wrote the graph to {} (render it with: dot -Tsvg {} -o {})\n", shown, shown,
                       printable(svg.string(), 300));
  }
}

// The tools the flags ask for, alive from construction to finish().
class InspectSession {
 public:
  InspectSession(const InspectFlags& flags, DotOptions dot_options = DotOptions()) : flags_(flags) {
    if (!flags.dot.empty()) capture_.emplace(std::move(dot_options));
    if (flags.detect_anomaly) anomaly_.emplace();
    if (flags.profile) profiler_.emplace();
  }

  // Writes the captured graph and prints the profile to `out`.
  void finish(std::ostream& out) {
    anomaly_.reset();
    if (capture_) {
      check(capture_->captured(), "--dot {}: the run ended before its first backward()",
            flags_.dot);
      write_dot_file(flags_.dot, capture_->text(), out);
      capture_.reset();
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
  std::optional<DotCapture> capture_;
  std::optional<DetectAnomaly> anomaly_;
  std::optional<Profiler> profiler_;
};

}  // namespace attograd::cli
