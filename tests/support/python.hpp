// tests/support/python.hpp — the Python the [torch] and [torch-double] tests
// drive, and whether it has torch.
#pragma once

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace attograd::testing {

inline const std::filesystem::path kPython = "/usr/bin/python3";

// Whether /usr/bin/python3 can import torch; if not, says so where it shows.
// With ATTOGRAD_REQUIRE_TORCH=1 in the environment (CI sets it), a missing
// torch fails the test instead of skipping it, so a CI log cannot show the
// [torch] tests passing without having run.
inline bool torch_installed() {
  static const bool installed =
      std::system((kPython.string() + " -c 'import torch' > /dev/null 2>&1").c_str()) == 0;
  if (!installed) {
    const char* required = std::getenv("ATTOGRAD_REQUIRE_TORCH");
    if (required != nullptr && std::string(required) == "1") {
      FAIL(
          "torch not installed (/usr/bin/python3 cannot import torch) and ATTOGRAD_REQUIRE_TORCH=1 "
          "forbids skipping: install it with `source scripts/setup.sh; attograd_install_torch`");
    }
    WARN("skipped: torch not installed (/usr/bin/python3 cannot import torch)");
  }
  return installed;
}

}  // namespace attograd::testing
