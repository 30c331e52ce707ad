// tests/architecture/test_public_headers.cpp — attograd.hpp includes every
// public header of tensor/, autograd/ and nn/, directly or through another.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace test_public_headers {

namespace fs = std::filesystem;

namespace {

// Headers that are not part of the public API, and why.
const std::set<std::string> kInternalHeaders = {
    "tensor/xsimd.hpp",          // needs xsimd, which only the library's sources use; not installed
    "tensor/kernels_simd.hpp",   // the kernels' SIMD helpers, on xsimd; not installed
    "tensor/kernels_dot.hpp",    // a one-row product's summation order, on kernels_simd.hpp; not
                                 // installed
    "tensor/kernels_unary.hpp",  // the unary kernels' formulas, on xsimd; not installed
    "tensor/kernels_gemm.hpp",   // the packed product behind kernels.hpp's matmul_forward and
                                 // bmm_forward
    "autograd/graph_order.hpp",  // the engine's traversal order
    "autograd/fast/tensor_numbering.hpp",  // graph_order's table of tensor numbers
    "autograd/inspect/hooks.hpp",          // where the engine lets the inspection tools in
    "nn/safetensors_header.hpp",           // the reader's bounded parse, on nlohmann/json
    "nn/safetensors_messages.hpp",  // the reader's message helpers (the examples quote with them)
};

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every project header reachable from `start` through #include "…".
std::set<std::string> reachable_from(const fs::path& root, const std::string& start) {
  static const std::regex include(R"re(#include "([^"]+)")re");
  std::set<std::string> seen;
  std::vector<std::string> pending = {start};
  while (!pending.empty()) {
    const std::string header = pending.back();
    pending.pop_back();
    if (!fs::exists(root / header) || !seen.insert(header).second) continue;
    const std::string text = read(root / header);
    for (std::sregex_iterator it(text.begin(), text.end(), include), end; it != end; ++it)
      pending.push_back((*it)[1]);
  }
  return seen;
}

}  // namespace

TEST_CASE("attograd.hpp includes every public header of tensor/, autograd/ and nn/",
          "[architecture]") {
  const fs::path root = ATTOGRAD_SOURCE_DIR;
  const std::set<std::string> reached = reachable_from(root, "attograd.hpp");
  std::vector<std::string> missing;
  for (const char* folder : {"tensor", "autograd", "nn"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
      if (!entry.is_regular_file() || entry.path().extension() != ".hpp") continue;
      const std::string header = fs::relative(entry.path(), root).generic_string();
      if (!reached.contains(header) && !kInternalHeaders.contains(header))
        missing.push_back(header);
    }
  }
  INFO("add each to attograd.hpp, or to kInternalHeaders here with the reason");
  REQUIRE(missing == std::vector<std::string>{});
  for (const std::string& header : kInternalHeaders) REQUIRE(fs::exists(root / header));
}

}  // namespace test_public_headers
