// tests/architecture/test_test_files.cpp — the rule that lets the test build
// compile several test files as one (tests/CMakeLists.txt, ATTOGRAD_UNITY):
// each test file holds everything after its includes in a namespace named
// after the file, so two files' helpers of the same name never meet.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace test_test_files {

namespace fs = std::filesystem;

namespace {

// What is wrong with a test file named `stem` whose text is `text`, or "".
std::string namespace_problem(const std::string& stem, const std::string& text) {
  const std::string open = "\nnamespace " + stem + " {\n";
  const std::string close = "}  // namespace " + stem + "\n";
  const size_t opened = text.find(open);
  if (opened == std::string::npos) return "has no line `namespace " + stem + " {`";
  const size_t last_include = text.rfind("\n#include");
  if (last_include != std::string::npos && last_include > opened) {
    return "includes a header inside `namespace " + stem + "`";
  }
  for (const char* code : {"\nTEST_CASE(", "\nusing ", "\nnamespace {"}) {
    const size_t at = text.find(code);
    if (at != std::string::npos && at < opened) {
      return std::string("has `") + (code + 1) + "` before `namespace " + stem + " {`";
    }
  }
  if (text.size() < close.size() || text.compare(text.size() - close.size(), close.size(), close)) {
    return "does not end with `" + close.substr(0, close.size() - 1) + "`";
  }
  return "";
}

}  // namespace

TEST_CASE("every test file holds its body in a namespace named after it", "[architecture]") {
  int checked = 0;
  for (const auto& entry :
       fs::recursive_directory_iterator(fs::path(ATTOGRAD_SOURCE_DIR) / "tests")) {
    const fs::path& path = entry.path();
    if (!entry.is_regular_file() || path.extension() != ".cpp") continue;
    const std::string stem = path.stem().string();
    if (stem.rfind("test_", 0) != 0) continue;  // main.cpp and the helpers' sources
    std::ifstream in(path, std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    INFO(fs::relative(path, ATTOGRAD_SOURCE_DIR).string());
    CHECK(namespace_problem(stem, text) == "");
    ++checked;
  }
  CHECK(checked > 60);
}

TEST_CASE("a test file without its namespace, or with code before it, is reported",
          "[architecture]") {
  const std::string includes = "#include <vector>\n\n";
  const std::string good =
      includes + "namespace test_x {\n\nTEST_CASE(\"a\") {}\n\n}  // namespace test_x\n";
  CHECK(namespace_problem("test_x", good) == "");
  CHECK(namespace_problem("test_y", good) == "has no line `namespace test_y {`");
  CHECK(namespace_problem("test_x",
                          includes + "namespace {\nint f();\n}\n" + good.substr(includes.size())) ==
        "has `namespace {` before `namespace test_x {`");
  CHECK(namespace_problem(
            "test_x", includes + "namespace test_x {\n#include <map>\n}  // namespace test_x\n") ==
        "includes a header inside `namespace test_x`");
  CHECK(namespace_problem("test_x", good.substr(0, good.size() - 1) + "\nint tail;\n") ==
        "does not end with `}  // namespace test_x`");
}

}  // namespace test_test_files
