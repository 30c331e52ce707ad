// tests/architecture/doc_references.hpp — rule 12 of STYLE.md ("docs are
// code"), as a checker: every repository path, every `file`'s function and
// every quoted excerpt that README.md, docs/ or a source comment names must
// exist.
//
// What counts as a reference, in a text:
//   a. a path — a word whose first component is a folder of the repository
//      (kRepositoryFolders: `tensor/shape.cpp`, `models/`, `docs/tour.md`),
//      or, in Markdown, a link target (`[tour](tour.md)`, relative to the
//      page). A path with an extension, or none, must name a file or a
//      folder (or, without one, a .cpp or .hpp: `plot/svg_plot`); one
//      ending in `/` a folder. A glob or placeholder cuts the path where it
//      starts (`tensor/kernels*` checks `tensor/`); a file the reader is to
//      create ("a new `autograd/ops_x.cpp`") is not checked. URLs are
//      not paths, and the generated folders (kGeneratedFolders: build
//      trees, out/) are skipped, each with its reason;
//   b. a function of a file, in the three forms the docs use:
//        `tensor/kernels_elementwise.cpp`, function `binary_forward`
//        (also "functions `a` (…) and `b`", up to the end of the sentence)
//        `run_node` in `autograd/engine.cpp`
//        `record` (`autograd/engine.cpp`)
//      The file must define the name: with comments and literals blanked, the
//      name followed by `(`, `{`, `<` or `=`, or preceded by struct, class,
//      enum, union, using, namespace or #define. `A::b` needs `b` so and `A`
//      somewhere in the file's code;
//   c. an excerpt — a line ending "as `autograd/ops_elementwise.cpp` has it:"
//      followed by a fenced code block, whose lines must appear in that file
//      in the same order and next to each other (leading and trailing
//      spaces and blank lines ignored).
// In Markdown the whole text is read; in C++ only comments; in shell,
// Python and CMake only `#` comments. Any other file is not read.
//
// Each bad reference reads like a compiler diagnostic:
//   docs/tour.md:64: `tensor/<gone>.cpp` does not exist
//
// Everything here is a pure function of the texts and of the Repository it
// is given, so the tests can feed it an invented page and tree.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/architecture/layering.hpp"

namespace attograd::architecture {

// A path whose first component is one of these is a reference to check.
inline constexpr std::array<std::string_view, 14> kRepositoryFolders = {
    ".ci",  "autograd", "bench", "cmake", "data",    "docs",   "examples",
    "fuzz", "models",   "nn",    "plot",  "scripts", "tensor", "tests"};

// Paths under these are written by a build or a run, not kept in the
// repository; a reference to them is not checked.
struct GeneratedFolder {
  std::string_view first_component;  // a trailing '*' matches any ending
  std::string_view reason;
};
inline constexpr std::array<GeneratedFolder, 2> kGeneratedFolders = {{
    {"build*", "CMake build trees (build/, build-ci/, build-asan/, …): made by a build"},
    {"out", "what the example programs write (--out, --dot): made by a run"},
}};

// What the checker may ask about the repository; paths are relative to its
// root ("docs/tour.md", "models").
struct Repository {
  std::function<bool(const std::string&)> is_file;
  std::function<bool(const std::string&)> is_folder;
  std::function<std::optional<std::string>(const std::string&)> read;  // a file's text
};

struct BadReference {
  std::string file;
  int line = 0;  // 1-based
  std::string message;
  bool operator==(const BadReference&) const = default;
};

// "docs/tour.md:64: `tensor/<gone>.cpp` does not exist"
std::string to_string(const BadReference& bad);

// The references of one text, by kind (see the top of this file).
struct PathReference {
  int line = 0;
  std::string path;  // relative to the repository root, without a trailing '/'
  bool folder = false;
  bool operator==(const PathReference&) const = default;
};
struct NameReference {
  int line = 0;
  std::string file;
  std::string name;
  bool operator==(const NameReference&) const = default;
};
struct Excerpt {
  int line = 0;  // the line that names the file
  std::string file;
  std::vector<std::string> lines;  // the code block, as written
};
struct References {
  std::vector<PathReference> paths;
  std::vector<NameReference> names;
  std::vector<Excerpt> excerpts;
};

// True when the checker reads `path` at all (Markdown, C++, shell, Python,
// CMake, and the extensionless scripts of .ci/).
bool is_checked_text(std::string_view path);

// `text` reduced to what the checker reads: a Markdown page whole, a C++ file's
// comments, a script's `#` comments; everything else becomes spaces (newlines
// kept, so offsets and line numbers stay those of `text`).
std::string readable_part(std::string_view path, std::string_view text);

References find_references(const SourceFile& file);

// True when `file_text` defines `name` (rule b above).
bool defines(std::string_view file_text, std::string_view name);

// Every reference of `files` that `repository` does not hold, sorted by file,
// then line.
std::vector<BadReference> find_bad_references(const std::vector<SourceFile>& files,
                                              const Repository& repository);

}  // namespace attograd::architecture
