// bench/pytorch.hpp — running a PyTorch reference script from a benchmark, in
// the same run, so that the ratio printed is measured under the same load.
//
// The scripts live in bench/reference/ and print one JSON object on their
// last line (bench/reference/*.py say what each times). They run under
// Debian's /usr/bin/python3 with python3-torch and libopenblas0-pthread;
// without torch the benchmarks print attograd's figures alone.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace attograd::bench {

// The repository, for the scripts and the data (a compile definition).
inline std::string source_dir() { return ATTOGRAD_SOURCE_DIR; }

inline bool have_pytorch() {
  return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
}

// The last JSON line `command` prints on its standard output, run in the
// repository folder; nothing when it fails or prints none.
inline std::optional<nlohmann::json> last_json_line(const std::string& command) {
  const std::string shell = "cd '" + source_dir() + "' && " + command + " 2>/dev/null";
  FILE* pipe = popen(shell.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string line, last;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) {
    line += buffer;
    if (line.empty() || line.back() != '\n') continue;  // a longer line continues
    if (line.front() == '{') last = line;
    line.clear();
  }
  if (!line.empty() && line.front() == '{') last = line;
  if (pclose(pipe) != 0 || last.empty()) return std::nullopt;
  nlohmann::json parsed = nlohmann::json::parse(last, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) return std::nullopt;
  return parsed;
}

// `/usr/bin/python3 bench/reference/<script> <arguments>`'s JSON.
inline std::optional<nlohmann::json> run_reference(const std::string& script,
                                                   const std::string& arguments) {
  return last_json_line("/usr/bin/python3 bench/reference/" + script + " " + arguments);
}

}  // namespace attograd::bench
