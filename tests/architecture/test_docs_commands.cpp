// tests/architecture/test_docs_commands.cpp — every test command the docs
// give a reader (`build/tests/attograd_tests "SPEC"`, or the _f64 binary)
// selects at least one test case. Catch2 exits 0 when a spec matches
// nothing, so a renamed test, or a name with a comma (which a test spec
// reads as "or"), would otherwise leave a tour step that silently checks
// nothing.
//
// Runs in the float binary only (it lists the cases of both binaries).
#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/shape.hpp"
#include "tests/support/program.hpp"

namespace test_docs_commands {

namespace fs = std::filesystem;

namespace {

// (binary name, spec) of every `build/tests/BINARY "SPEC"` in README.md and docs/*.md.
std::set<std::pair<std::string, std::string>> documented_test_commands() {
  const fs::path source(ATTOGRAD_SOURCE_DIR);
  std::vector<fs::path> pages = {source / "README.md"};
  for (const fs::directory_entry& entry : fs::directory_iterator(source / "docs")) {
    if (entry.path().extension() == ".md") pages.push_back(entry.path());
  }
  const std::regex command(R"re(build/tests/(attograd_tests(?:_f64)?) "([^"]+)")re");
  std::set<std::pair<std::string, std::string>> found;
  for (const fs::path& page : pages) {
    const std::string text = attograd::testing::read_file(page);
    for (std::sregex_iterator it(text.begin(), text.end(), command), end; it != end; ++it) {
      found.emplace((*it)[1].str(), (*it)[2].str());
    }
  }
  return found;
}

}  // namespace

TEST_CASE("every test command in the docs selects at least one test case", "[docs]") {
  if constexpr (!std::is_same_v<attograd::real, float>) return;
  const std::set<std::pair<std::string, std::string>> commands = documented_test_commands();
  // The tour alone gives more than five; finding none means the pattern broke.
  REQUIRE(commands.size() > 5);
  attograd::testing::TemporaryFolder scratch;
  for (const auto& [binary, spec] : commands) {
    // A build configured with ATTOGRAD_TEST_VARIANTS=f32 has no double binary to ask.
    if (binary == "attograd_tests_f64" && !ATTOGRAD_F64_TESTS_BUILT) continue;
    INFO("build/tests/" << binary << " \"" << spec << "\"");
    const attograd::testing::ProgramRun listed =
        attograd::testing::run_program(fs::path(ATTOGRAD_BINARY_DIR) / "tests" / binary,
                                       {spec, "--list-test-names-only"}, scratch.path);
    CHECK_FALSE(attograd::testing::lines_of(listed.out).empty());
  }
}

}  // namespace test_docs_commands
