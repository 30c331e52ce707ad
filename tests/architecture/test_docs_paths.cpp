// tests/architecture/test_docs_paths.cpp — every repository path, `file`'s
// function and quoted excerpt in README.md, docs/ and the source comments
// exists (doc_references.hpp says what counts), tested on the real tree; and
// the checker itself tested on invented pages, and on the real tree with one
// file renamed, which it must report.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "tensor/shape.hpp"
#include "tests/architecture/doc_references.hpp"
#include "tests/support/program.hpp"

namespace test_docs_paths {

namespace fs = std::filesystem;
using attograd::architecture::BadReference;
using attograd::architecture::defines;
using attograd::architecture::find_bad_references;
using attograd::architecture::find_references;
using attograd::architecture::is_checked_text;
using attograd::architecture::kGeneratedFolders;
using attograd::architecture::References;
using attograd::architecture::Repository;
using attograd::architecture::SourceFile;

namespace {

// Paths a text names on purpose although they do not exist, each with why.
// Keep it short: a path that should exist belongs in the repository, not here.
struct AllowedReference {
  std::string file;
  std::string path;
  std::string reason;
};
const std::vector<AllowedReference> kAllowedReferences = {
    {"tests/architecture/layering.hpp", "autograd/fast/x.hpp",
     "an invented file, to say that a subfolder belongs to its top folder"},
    {"docs/autograd.md", "autograd/ops_activation.cpp",
     "the file \"Adding an op\" creates, shown as the reader will write it"},
};

bool is_generated_folder(const std::string& name) {
  for (const auto& generated : kGeneratedFolders) {
    const std::string pattern(generated.first_component);
    if (pattern.back() == '*' ? name.rfind(pattern.substr(0, pattern.size() - 1), 0) == 0
                              : name == pattern)
      return true;
  }
  return false;
}

// Every text of the real tree the checker reads, by path relative to the
// root; hidden folders (.git) but .ci/ and generated folders are skipped.
std::vector<SourceFile> load_repository_texts() {
  const fs::path root = ATTOGRAD_SOURCE_DIR;
  std::vector<SourceFile> files;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory()) {
      const bool top = it.depth() == 0;
      if ((name[0] == '.' && name != ".ci") || (top && is_generated_folder(name)))
        it.disable_recursion_pending();
      continue;
    }
    const std::string path = fs::relative(it->path(), root).generic_string();
    if (!it->is_regular_file() || !is_checked_text(path)) continue;
    files.push_back({path, attograd::testing::read_file(it->path())});
  }
  std::sort(files.begin(), files.end(),
            [](const SourceFile& a, const SourceFile& b) { return a.path < b.path; });
  return files;
}

Repository real_repository() {
  const fs::path root = ATTOGRAD_SOURCE_DIR;
  return {[root](const std::string& path) { return fs::is_regular_file(root / path); },
          [root](const std::string& path) { return fs::is_directory(root / path); },
          [root](const std::string& path) -> std::optional<std::string> {
            if (!fs::is_regular_file(root / path)) return std::nullopt;
            return attograd::testing::read_file(root / path);
          }};
}

// A repository of invented files (folders are the prefixes of their paths).
Repository invented_repository(const std::map<std::string, std::string>& files) {
  return {[files](const std::string& path) { return files.count(path) > 0; },
          [files](const std::string& path) {
            for (const auto& [file, text] : files)
              if (file.rfind(path + "/", 0) == 0) return true;
            return false;
          },
          [files](const std::string& path) -> std::optional<std::string> {
            const auto found = files.find(path);
            if (found == files.end()) return std::nullopt;
            return found->second;
          }};
}

std::vector<std::string> lines(const std::vector<BadReference>& bad) {
  std::vector<std::string> out;
  for (const BadReference& reference : bad) out.push_back(to_string(reference));
  return out;
}

std::vector<BadReference> without_allowed(std::vector<BadReference> bad) {
  bad.erase(
      std::remove_if(bad.begin(), bad.end(),
                     [](const BadReference& reference) {
                       for (const AllowedReference& allowed : kAllowedReferences)
                         if (reference.file == allowed.file &&
                             reference.message.find("`" + allowed.path + "`") != std::string::npos)
                           return true;
                       return false;
                     }),
      bad.end());
  return bad;
}

std::string report(const std::vector<BadReference>& bad) {
  std::string text = std::to_string(bad.size()) + " reference(s) to nothing:\n";
  for (const BadReference& reference : bad) text += to_string(reference) + "\n";
  return text;
}

const std::map<std::string, std::string> kInventedTree = {
    {"tensor/kernels_elementwise.cpp",
     "// binary_backward is not here: only named in a comment\n"
     "namespace attograd::kernels {\n"
     "void binary_forward(float* out, const float* a, const float* b, long n) {\n"
     "  const char* s = \"unary_forward(\";\n"
     "}\n"
     "}  // namespace attograd::kernels\n"},
    {"autograd/engine.cpp", "struct Node {};\nvoid add_pending(Node& node) {}\n"},
    {"docs/tour.md", "# tour\n"},
};

}  // namespace

TEST_CASE("README.md, docs/ and source comments name only paths and functions that exist",
          "[docs]") {
  if constexpr (!std::is_same_v<attograd::real, float>) return;
  const std::vector<SourceFile> texts = load_repository_texts();
  // README.md, docs/ and hundreds of sources: finding fewer means the walk broke.
  REQUIRE(texts.size() > 100);
  const std::vector<BadReference> bad =
      without_allowed(find_bad_references(texts, real_repository()));
  INFO(report(bad));
  CHECK(bad.empty());
  // Each allowance still names a path that is in its file and does not exist:
  // a stale one is removed, not kept.
  for (const AllowedReference& allowed : kAllowedReferences) {
    INFO(allowed.file << " names " << allowed.path << ": " << allowed.reason);
    CHECK_FALSE(fs::exists(fs::path(ATTOGRAD_SOURCE_DIR) / allowed.path));
    CHECK(attograd::testing::read_file(fs::path(ATTOGRAD_SOURCE_DIR) / allowed.file)
              .find(allowed.path) != std::string::npos);
  }
}

TEST_CASE("the docs-path check reports a renamed file in the real tree", "[docs]") {
  if constexpr (!std::is_same_v<attograd::real, float>) return;
  // README.md's tour names tensor/kernels_elementwise.cpp and its function
  // binary_forward; pretend the file was renamed.
  const std::string renamed = "tensor/kernels_elementwise.cpp";
  const fs::path root = ATTOGRAD_SOURCE_DIR;
  REQUIRE(fs::is_regular_file(root / renamed));
  Repository repository = real_repository();
  const auto real_is_file = repository.is_file;
  const auto real_read = repository.read;
  repository.is_file = [=](const std::string& path) {
    return path != renamed && real_is_file(path);
  };
  repository.read = [=](const std::string& path) -> std::optional<std::string> {
    if (path == renamed) return std::nullopt;
    return real_read(path);
  };
  const SourceFile readme = {"README.md", attograd::testing::read_file(root / "README.md")};
  const std::vector<std::string> reported = lines(find_bad_references({readme}, repository));
  REQUIRE_FALSE(reported.empty());
  for (const std::string& line : reported) {
    INFO(line);
    CHECK(line.rfind("README.md:", 0) == 0);
    CHECK(line.find("`" + renamed + "` does not exist") != std::string::npos);
  }
}

TEST_CASE("the docs-path check names each missing file and function with file and line", "[docs]") {
  const SourceFile page = {
      "docs/page.md",
      "# A page\n"
      "Open `tensor/kernels_scalar.cpp`, function `binary_forward`.\n"
      "Then `tensor/kernels_elementwise.cpp`, function `binary_backward`,\n"
      "and `add_pending` in `autograd/engine.cpp`, and `sum_to` (`autograd/engine.cpp`).\n"
      "See [the tour](tour.md) and [the missing](gone.md#anchor).\n"};
  CHECK(lines(find_bad_references({page}, invented_repository(kInventedTree))) ==
        std::vector<std::string>{
            "docs/page.md:2: `tensor/kernels_scalar.cpp` does not exist",
            "docs/page.md:3: `tensor/kernels_elementwise.cpp` does not define `binary_backward`",
            "docs/page.md:4: `autograd/engine.cpp` does not define `sum_to`",
            "docs/page.md:5: `docs/gone.md` does not exist",
        });
}

TEST_CASE("the docs-path check passes a page whose every reference exists", "[docs]") {
  const SourceFile page = {
      "docs/page.md",
      "Open `tensor/kernels_elementwise.cpp`, function `binary_forward`, the\n"
      "folder `tensor/` and `autograd/engine.cpp`, functions `add_pending` (which\n"
      "adds) and `Node`. `kernels::binary_forward` (`tensor/kernels_elementwise.cpp`).\n"
      "[tour](tour.md#stop-1), [up](../docs/tour.md), https://example.org/tensor/none.cpp,\n"
      "`build/tests/attograd_tests`, `out/micrograd.svg`, `tensor/kernels*` and\n"
      "`tensor/<name>.cpp` are not checked.\n"};
  const std::vector<BadReference> bad =
      find_bad_references({page}, invented_repository(kInventedTree));
  INFO(report(bad));
  CHECK(bad.empty());
}

TEST_CASE("the docs-path check reads only the comments of code", "[docs]") {
  const SourceFile source = {
      "nn/layer.cpp",
      "// nn/layer.cpp — uses tensor/missing.hpp, which is gone\n"
      "#include \"tensor/also_missing.hpp\"  // the compiler checks this one\n"
      "const char* kPath = \"tensor/in_a_string.cpp\";\n"
      "/* block: see `autograd/engine.cpp`, function `backward` */\n"};
  const SourceFile script = {"scripts/run.sh",
                             "#!/usr/bin/env bash\n"
                             "# runs scripts/missing.sh\n"
                             "echo \"# docs/not_a_comment.md\" scripts/code_not_comment.sh\n"};
  const Repository repository = invented_repository({{"nn/layer.cpp", source.text},
                                                     {"scripts/run.sh", script.text},
                                                     {"autograd/engine.cpp", ""}});
  CHECK(lines(find_bad_references({source, script}, repository)) ==
        std::vector<std::string>{
            "nn/layer.cpp:1: `tensor/missing.hpp` does not exist",
            "nn/layer.cpp:4: `autograd/engine.cpp` does not define `backward`",
            "scripts/run.sh:2: `scripts/missing.sh` does not exist",
        });
}

TEST_CASE("a quoted excerpt must be the code of the file it names", "[docs]") {
  const std::string page_text =
      "As the code has it:\n"  // not the marked form: not checked
      "\n"
      "as `tensor/kernels_elementwise.cpp` has it:\n"
      "\n"
      "```cpp\n"
      "void binary_forward(float* out, const float* a, const float* b, long n) {\n"
      "    const char* s = \"unary_forward(\";\n"
      "```\n"
      "and as `tensor/kernels_elementwise.cpp` has it:\n"
      "```cpp\n"
      "void binary_forward(float* out, const float* a, const float* b, long n) {\n"
      "  return;\n"
      "```\n"
      "and as `tensor/gone.cpp` has it:\n"
      "```cpp\n"
      "x\n"
      "```\n";
  const References found = find_references({"docs/page.md", page_text});
  REQUIRE(found.excerpts.size() == 3);
  CHECK(found.excerpts[0].line == 3);
  CHECK(found.excerpts[0].lines.size() == 2);
  CHECK(lines(find_bad_references({{"docs/page.md", page_text}},
                                  invented_repository(kInventedTree))) ==
        std::vector<std::string>{
            "docs/page.md:9: the excerpt of `tensor/kernels_elementwise.cpp` is not the code: "
            "the excerpt's line `return;` is not in it",
            "docs/page.md:14: `tensor/gone.cpp` does not exist",
            "docs/page.md:14: the excerpt's file `tensor/gone.cpp` does not exist",
        });
}

TEST_CASE("defines finds definitions, not mentions in comments or strings", "[docs]") {
  const std::string text = kInventedTree.at("tensor/kernels_elementwise.cpp");
  CHECK(defines(text, "binary_forward"));
  CHECK(defines(text, "kernels::binary_forward"));
  CHECK_FALSE(defines(text, "binary_backward"));  // in a comment only
  CHECK_FALSE(defines(text, "unary_forward"));    // in a string only
  CHECK_FALSE(defines(text, "other::binary_forward"));
  CHECK(defines("struct Node {};", "Node"));
  CHECK(defines("Tensor operator*(const Tensor& a, const Tensor& b);", "operator*"));
  CHECK_FALSE(defines("int binary_forward_all = 0;", "binary_forward"));
}

}  // namespace test_docs_paths
