// nn/safetensors_messages.hpp — keeping messages about untrusted input short
// and printable.
//
// A file or a command line can hold anything: escape sequences that would
// drive the terminal, names a megabyte long, thousands of problems. Every
// message that quotes such text goes through printable(), and every list of
// problems through problem_lines(), so a refusal is a few KB at most:
//
//   printable("conv\x1b[2J")       ->  conv\x1b[2J   (the ESC shown, not obeyed)
//   problem_lines(problems)       ->  "\n  first\n  second …\n  … and 7 more"
//
// The readers (nn/safetensors.hpp), the checkpoint loader (nn/checkpoint.hpp)
// and the example programs' error printer (examples/common/cli.hpp) use them.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <string>
#include <vector>

#include "tensor/printable.hpp"

namespace attograd::nn {

// printable() and kMaxQuotedChars live in tensor/printable.hpp; the readers
// and the examples call them as nn::printable too.
using attograd::kMaxQuotedChars;
using attograd::printable;

// Problems listed one per line in a refusal; the rest are counted.
inline constexpr size_t kMaxProblemsShown = 20;

// "\n  first\n  second …\n  … and 7 more": at most kMaxProblemsShown lines.
inline std::string problem_lines(const std::vector<std::string>& problems) {
  std::string lines;
  for (size_t i = 0; i < problems.size() && i < kMaxProblemsShown; ++i) {
    lines += "\n  " + problems[i];
  }
  if (problems.size() > kMaxProblemsShown) {
    lines += fmt::format("\n  … and {} more", problems.size() - kMaxProblemsShown);
  }
  return lines;
}

}  // namespace attograd::nn
