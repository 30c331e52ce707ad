// tests/architecture/layering.hpp — the layering rule of STYLE.md, as a checker.
//
// The layers, lowest first: tensor/ (0) <- autograd/ (1) <- nn/ (2) <- models/ (3)
// <- plot/ (4) <- examples/ (5). A file may use its own layer and lower ones,
// never a higher one; a subfolder belongs to its top folder (autograd/fast/x.hpp
// is autograd). Files outside the six folders (attograd.hpp, tests/, bench/) are
// not checked.
//
// "Use" is checked three ways, each with file and line:
//   a. includes — `#include "nn/module.hpp"` in autograd/ (also "../nn/…");
//   b. qualified names — `nn::Optimizer`, `attograd::nn::Module`, in code, in
//      comments and in string literals alike. A namespace names a layer when
//      it is declared (inside `namespace attograd`) in that layer's headers and
//      in no other layer; shared ones (the root `attograd`, `detail`, …) and
//      foreign ones (`std`, `fmt`) name none;
//   c. type names — the classes, structs, enums, unions, using-aliases and
//      typedefs a layer's headers define at namespace scope belong to the
//      lowest layer defining them. A lower layer's code (comments and literals
//      blanked) naming one as a whole word is a violation; a forward
//      declaration `struct Node;` is such a use.
//
// Each violation reads like a compiler diagnostic, naming the use, where the
// name lives and what the file's layer may use:
//   tensor/tensor.hpp:42: names 'Node', declared in autograd/ (autograd/node.hpp);
//   tensor/ may use only tensor/
//
// Everything here but load_source_tree is a pure function of the file texts
// it is given, so the tests can feed it small invented trees as well as the
// real one.
#pragma once

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace attograd::architecture {

inline constexpr std::array<std::string_view, 6> kLayers = {"tensor", "autograd", "nn",
                                                            "models", "plot",     "examples"};

// One source file: its path relative to the repository root ("nn/optim.hpp")
// and its whole text.
struct SourceFile {
  std::string path;
  std::string text;
};

struct Violation {
  std::string file;
  int line = 0;  // 1-based
  std::string message;
  bool operator==(const Violation&) const = default;
};

// Every .hpp and .cpp under the six layer folders of the tree at `root`, with
// paths relative to it ("autograd/fast/fast.hpp"), sorted by path.
std::vector<SourceFile> load_source_tree(const std::string& root);

// One `#include "…"` of a file (commented-out ones are not includes): its
// 1-based line, the path as written, and that path resolved against the
// repository root ("../nn/module.hpp" in a file of autograd/ -> "nn/module.hpp").
struct Include {
  int line = 0;
  std::string written;
  std::string path;
};
std::vector<Include> find_includes(const SourceFile& file);

// "tensor/tensor.hpp:42: names 'Node', declared in autograd/ …"
std::string to_string(const Violation& violation);

// The layer of a repository-relative path: 0 for "tensor/…" up to 5 for
// "examples/…"; -1 for anything else ("attograd.hpp", "tests/…").
int layer_of(std::string_view path);

// `text` with every comment replaced by spaces (newlines kept, so offsets and
// line numbers stay those of `text`).
std::string blank_comments(std::string_view text);
// As blank_comments, and also the contents of every string and character
// literal (raw strings R"x(…)x" included) replaced by spaces; the quotes stay.
std::string blank_comments_and_literals(std::string_view text);

// What the checker learned from the headers: who owns which name.
struct Owner {
  int layer = -1;
  std::string header;  // the first header (by path) of that layer declaring it
};
struct LayerMap {
  std::map<std::string, Owner> types;       // "Node" -> autograd/, autograd/node.hpp
  std::map<std::string, Owner> namespaces;  // "nn" -> nn/, nn/module.hpp (only layer-naming ones)
};
LayerMap learn_layers(const std::vector<SourceFile>& files);

// Every upward use in `files`, sorted by file, then line. Files outside the
// six layers are read by nothing and checked by nothing.
std::vector<Violation> find_layering_violations(const std::vector<SourceFile>& files);

}  // namespace attograd::architecture
