// tests/support/python.hpp — the Python the [torch] and [torch-double] tests
// drive, and whether it has torch.
#pragma once

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/program.hpp"

namespace attograd::testing {

inline const std::filesystem::path kPython = "/usr/bin/python3";

// Whether /usr/bin/python3 has torch; if not, says so where it shows. Python
// looks for the package without importing it (importing takes 1.5 s, once
// per test process): a torch that is there but broken fails the test that
// uses it, with Python's own message.
// With ATTOGRAD_REQUIRE_TORCH=1 in the environment (CI sets it), a missing
// torch fails the test instead of skipping it, so a CI log cannot show the
// [torch] tests passing without having run.
inline bool torch_installed() {
  static const bool installed =
      std::system((kPython.string() +
                   " -c 'import importlib.util, sys;"
                   " sys.exit(importlib.util.find_spec(\"torch\") is None)' > /dev/null 2>&1")
                      .c_str()) == 0;
  if (!installed) {
    const char* required = std::getenv("ATTOGRAD_REQUIRE_TORCH");
    if (required != nullptr && std::string(required) == "1") {
      FAIL(
          "torch not installed (/usr/bin/python3 has no torch package) and "
          "ATTOGRAD_REQUIRE_TORCH=1 "
          "forbids skipping: install it with `source scripts/setup.sh; attograd_install_torch`");
    }
    WARN("skipped: torch not installed (/usr/bin/python3 has no torch package)");
  }
  return installed;
}

// Each (arguments, expected) run of the Python `script` exits 2 with one
// error line that holds `expected`.
using Refusals = std::vector<std::pair<std::vector<std::string>, std::string>>;
inline void require_refusals(const std::filesystem::path& script, const Refusals& refusals,
                             const TemporaryFolder& scratch) {
  for (const auto& [arguments, expected] : refusals) {
    std::vector<std::string> command = {script.string()};
    command.insert(command.end(), arguments.begin(), arguments.end());
    std::string shown = script.filename().string();
    for (const std::string& argument : arguments) shown += " " + argument;
    INFO(shown);
    const ProgramRun refused = run_program(kPython, command, scratch.path);
    require_one_line_error(refused);
    CHECK(refused.err.find(expected) != std::string::npos);
  }
}

}  // namespace attograd::testing
