// tests/architecture/test_layering.cpp — the layering rule of STYLE.md, tested
// on the real source tree, and the checker itself tested on small invented
// trees (each expected violation spelled out with its file and line) and on a
// real file with a violation injected into it.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <tuple>
#include <vector>

#include "tests/architecture/layering.hpp"

namespace test_layering {

namespace fs = std::filesystem;
using attograd::architecture::blank_comments;
using attograd::architecture::blank_comments_and_literals;
using attograd::architecture::find_layering_violations;
using attograd::architecture::kLayers;
using attograd::architecture::layer_of;
using attograd::architecture::LayerMap;
using attograd::architecture::learn_layers;
using attograd::architecture::SourceFile;
using attograd::architecture::Violation;

namespace {

std::vector<SourceFile> load_source_tree() {
  return attograd::architecture::load_source_tree(ATTOGRAD_SOURCE_DIR);
}

std::vector<std::string> lines(const std::vector<Violation>& violations) {
  std::vector<std::string> out;
  for (const Violation& violation : violations) out.push_back(to_string(violation));
  return out;
}

std::vector<std::string> check(const std::vector<SourceFile>& files) {
  return lines(find_layering_violations(files));
}

std::string report(const std::vector<Violation>& violations) {
  std::string text = std::to_string(violations.size()) + " layering violation(s):\n";
  for (const Violation& violation : violations) text += to_string(violation) + "\n";
  return text;
}

// Headers of a small invented tree the tests below build on.
const SourceFile kNodeHeader = {"autograd/node.hpp",
                                "#pragma once\n"
                                "#include \"tensor/tensor.hpp\"\n"
                                "namespace attograd {\n"
                                "struct Node {\n"
                                "  int inputs = 0;\n"
                                "};\n"
                                "struct GradientFactors {};\n"
                                "}  // namespace attograd\n"};
const SourceFile kOptimizerHeader = {"nn/optim.hpp",
                                     "#pragma once\n"
                                     "namespace attograd {\n"
                                     "namespace nn {\n"
                                     "class Optimizer {\n"
                                     " public:\n"
                                     "  void step_in_backward();\n"
                                     "};\n"
                                     "}  // namespace nn\n"
                                     "}  // namespace attograd\n"};
const SourceFile kModuleHeader = {"nn/module.hpp",
                                  "#pragma once\n"
                                  "namespace attograd::nn {\n"
                                  "class Module {};\n"
                                  "}  // namespace attograd::nn\n"};

}  // namespace

TEST_CASE("the source tree's layers use only their own and lower layers", "[architecture]") {
  const std::vector<SourceFile> files = load_source_tree();
  REQUIRE(files.size() > 50);  // the tree was found
  const std::vector<Violation> violations = find_layering_violations(files);
  // One unwrapped `file:line: message` per line (Catch would wrap them at 80
  // columns), so an editor or grep can jump to each.
  if (!violations.empty()) std::cout << report(violations) << std::flush;
  INFO(violations.size() << " layering violation(s), listed above as file:line: message");
  REQUIRE(violations.empty());
}

TEST_CASE("the checker learns the real layers' names from their headers", "[architecture]") {
  // Guards the test above against passing because it learned nothing.
  const LayerMap map = learn_layers(load_source_tree());
  REQUIRE(map.types.at("Tensor").layer == 0);
  REQUIRE(map.types.at("Tensor").header == "tensor/tensor.hpp");
  REQUIRE(map.types.at("Node").layer == 1);
  REQUIRE(map.types.at("Node").header == "autograd/node.hpp");
  REQUIRE(map.types.at("Optimizer").layer == 2);
  REQUIRE(map.types.at("Module").layer == 2);
  REQUIRE(map.namespaces.at("nn").layer == 2);
  REQUIRE(map.namespaces.at("text").layer == 3);
  REQUIRE_FALSE(map.namespaces.contains("attograd"));
  REQUIRE_FALSE(map.namespaces.contains("std"));
}

TEST_CASE("an upward include is reported with its line, a downward one is not", "[architecture]") {
  const std::vector<SourceFile> files = {
      {"tensor/a.hpp",
       "#pragma once\n"
       "\n"
       "#include \"autograd/b.hpp\"\n"
       "#include \"tensor/c.hpp\"\n"
       "// #include \"nn/commented_out.hpp\"\n"
       "#include <vector>\n"},
      {"autograd/b.hpp",
       "#pragma once\n"
       "#include \"tensor/a.hpp\"\n"
       "#include \"autograd/fast/d.hpp\"\n"},
      {"autograd/x.cpp",
       "#include \"b.hpp\"\n"
       "  #  include \"../nn/module.hpp\"\n"},
      {"models/m.cpp", "#include \"examples/common/cli.hpp\"\n#include \"nn/module.hpp\"\n"},
  };
  REQUIRE(check(files) ==
          std::vector<std::string>{
              "autograd/x.cpp:2: includes \"../nn/module.hpp\", in nn/; autograd/ may use only "
              "tensor/ and autograd/",
              "models/m.cpp:1: includes \"examples/common/cli.hpp\", in examples/; models/ may use "
              "only tensor/, autograd/, nn/ and models/",
              "tensor/a.hpp:3: includes \"autograd/b.hpp\", in autograd/; tensor/ may use only "
              "tensor/",
          });
}

TEST_CASE("an upward qualified name is reported in code and in comments", "[architecture]") {
  const std::vector<SourceFile> files = {
      kOptimizerHeader,
      kModuleHeader,
      {"autograd/x.cpp",
       "namespace attograd {\n"
       "void run(nn::Optimizer* optimizer);\n"
       "// nn::Optimizer::step_in_backward calls this once per parameter.\n"
       "using Root = attograd::nn::Module;\n"
       "/* several lines\n"
       "   of nn::Module */\n"
       "const char* kHint = \"use nn::clip_gradients\";\n"
       "}  // namespace attograd\n"},
      // nn using its own namespace, models using a lower one: both fine.
      {"nn/optim.cpp", "void attograd::nn::Optimizer::step_in_backward() {}\n"},
      {"models/m.cpp", "attograd::nn::Module model;  // an nn::Module\n"},
  };
  REQUIRE(check(files) ==
          std::vector<std::string>{
              "autograd/x.cpp:2: names 'nn::Optimizer', declared in nn/ (nn/optim.hpp); "
              "autograd/ may use only tensor/ and autograd/",
              "autograd/x.cpp:3: names 'nn::Optimizer::step_in_backward', declared in nn/ "
              "(nn/optim.hpp); autograd/ may use only tensor/ and autograd/",
              "autograd/x.cpp:4: names 'attograd::nn::Module', declared in nn/ (nn/module.hpp); "
              "autograd/ may use only tensor/ and autograd/",
              "autograd/x.cpp:6: names 'nn::Module', declared in nn/ (nn/module.hpp); autograd/ "
              "may use only tensor/ and autograd/",
              "autograd/x.cpp:7: names 'nn::clip_gradients', declared in nn/ (namespace nn, "
              "nn/module.hpp); autograd/ may use only tensor/ and autograd/",
          });
}

TEST_CASE("an upward type name and a forward declaration are reported", "[architecture]") {
  const std::vector<SourceFile> files = {
      kNodeHeader,
      kOptimizerHeader,
      {"tensor/t.hpp",
       "#pragma once\n"
       "namespace attograd {\n"
       "struct Node;\n"
       "class TensorImpl {\n"
       "  friend class Optimizer;\n"
       "};\n"
       "}  // namespace attograd\n"},
      {"tensor/t.cpp",
       "namespace attograd {\n"
       "void f() {\n"
       "  GradientFactors factors;  GradientFactors again;\n"
       "  attograd::Node* node = nullptr;\n"
       "}\n"
       "}  // namespace attograd\n"},
  };
  REQUIRE(check(files) ==
          std::vector<std::string>{
              "tensor/t.cpp:3: names 'GradientFactors', declared in autograd/ "
              "(autograd/node.hpp); tensor/ may use only tensor/",
              "tensor/t.cpp:4: names 'Node', declared in autograd/ (autograd/node.hpp); tensor/ "
              "may use only tensor/",
              "tensor/t.hpp:3: names 'Node', declared in autograd/ (autograd/node.hpp); tensor/ "
              "may use only tensor/",
              "tensor/t.hpp:5: names 'Optimizer', declared in nn/ (nn/optim.hpp); tensor/ may use "
              "only tensor/",
          });
}

TEST_CASE("comments, literals, lower definitions, std names and longer words are not upward uses",
          "[architecture]") {
  const std::vector<SourceFile> files = {
      kNodeHeader,
      kOptimizerHeader,
      {"nn/shape.hpp",
       "#pragma once\n"
       "namespace std {\n"
       "template <> struct hash<attograd::nn::Optimizer> {};\n"
       "}  // namespace std\n"
       "namespace attograd::nn {\n"
       "struct Shape {};  // also tensor's: belongs to tensor/\n"
       "struct Options {};\n"
       "using vector = int;\n"
       "class Tensor;  // a forward declaration of a lower name\n"
       "}  // namespace attograd::nn\n"},
      {"tensor/shape.hpp",
       "#pragma once\n"
       "#include <vector>\n"
       "#include \"tensor/error.hpp\"\n"
       "namespace attograd {\n"
       "class Tensor {};\n"
       "struct Shape {\n"
       "  struct Options {};  // nested, tensor's own\n"
       "};\n"
       "template <typename Node>  // a template parameter is the layer's own name\n"
       "Node pick(Node node) { return node; }\n"
       "}  // namespace attograd\n"},
      {"tensor/shape.cpp",
       "#include \"tensor/shape.hpp\"\n"
       "// Not a Node, and no GradientFactors here: comments are free text.\n"
       "/* Optimizer */\n"
       "namespace attograd {\n"
       "const char* kWord = \"Node GradientFactors\";\n"
       "const char* kRaw = R\"x(Node \" GradientFactors)x\";\n"
       "const char kLetter = 'N';\n"
       "int NodeCount = 1'000'000;\n"
       "int node_count = NodeCount;\n"
       "std::vector<int> sizes;\n"
       "std::hash<int> hasher;\n"
       "Shape shape;\n"
       "Shape::Options options;\n"
       "int Tensor_size = sizes.size();\n"
       "}  // namespace attograd\n"},
      {"autograd/engine.cpp",
       "#include \"tensor/shape.hpp\"\n"
       "namespace attograd {\n"
       "Shape shape;  // tensor's, a lower layer\n"
       "Tensor tensor;\n"
       "Node node;\n"
       "}  // namespace attograd\n"},
  };
  REQUIRE(check(files).empty());

  // The template parameter hides Node in its own file only.
  std::vector<SourceFile> more = files;
  more.push_back({"tensor/storage.hpp", "namespace attograd {\nstruct Node;\n}\n"});
  REQUIRE(check(more) == std::vector<std::string>{
                             "tensor/storage.hpp:2: names 'Node', declared in autograd/ "
                             "(autograd/node.hpp); tensor/ may use only tensor/",
                         });

  const LayerMap map = learn_layers(files);
  REQUIRE(map.types.at("Shape").layer == 0);    // defined in tensor/ and nn/: the lowest
  REQUIRE(map.types.at("Tensor").layer == 0);   // nn/'s forward declaration does not move it
  REQUIRE(map.types.at("Options").layer == 2);  // tensor's is nested: not collected
  REQUIRE_FALSE(map.types.contains("hash"));    // a specialization, not a definition
  REQUIRE_FALSE(map.namespaces.contains("std"));
}

TEST_CASE("a namespace several layers declare names none of them", "[architecture]") {
  const std::vector<SourceFile> files = {
      {"tensor/atomic.hpp",
       "namespace attograd {\n"
       "inline void write() {\n"
       "  namespace detail = atomic_detail;\n"
       "  detail::write_all();\n"
       "  kernels::scalar::add();\n"
       "  fast::forward();\n"
       "  attograd::kernels::fast::add();  // looked through: kernels says nothing\n"
       "  std::fast::add();  // another library's\n"
       "}\n"
       "}  // namespace attograd\n"},
      {"tensor/kernels.hpp", "namespace attograd::kernels {\nnamespace scalar {}\n}\n"},
      {"autograd/helpers.hpp", "namespace attograd::detail {}\nnamespace attograd::fast {}\n"},
      {"nn/helpers.hpp", "namespace attograd::kernels {}\n"},
  };
  // detail: tensor/ (an alias) and autograd/; kernels: tensor/ and nn/;
  // scalar: tensor/'s own; fast: autograd/'s alone.
  REQUIRE(check(files) ==
          std::vector<std::string>{
              "tensor/atomic.hpp:6: names 'fast::forward', declared in autograd/ (namespace fast, "
              "autograd/helpers.hpp); tensor/ may use only tensor/",
              "tensor/atomic.hpp:7: names 'attograd::kernels::fast::add', declared in autograd/ "
              "(namespace fast, autograd/helpers.hpp); tensor/ may use only tensor/",
          });
}

TEST_CASE("subfolders belong to their top folder, and other folders are not checked",
          "[architecture]") {
  REQUIRE(layer_of("tensor/tensor.hpp") == 0);
  REQUIRE(layer_of("autograd/fast/x.hpp") == 1);
  REQUIRE(layer_of("nn/optim.cpp") == 2);
  REQUIRE(layer_of("models/text/vocabulary.cpp") == 3);
  REQUIRE(layer_of("plot/svg_plot.hpp") == 4);
  REQUIRE(layer_of("examples/common/cli.hpp") == 5);
  REQUIRE(layer_of("attograd.hpp") == -1);
  REQUIRE(layer_of("tests/nn/test_optim.cpp") == -1);
  REQUIRE(layer_of("bench/bench_seq2seq.cpp") == -1);
  REQUIRE(layer_of("tensorflow/x.hpp") == -1);

  const std::vector<SourceFile> files = {
      {"models/text/vocabulary.hpp", "namespace attograd::text {\nstruct Vocabulary {};\n}\n"},
      {"examples/common/cli.hpp", "namespace attograd::cli {\nstruct Flags {};\n}\n"},
      {"autograd/fast/fast.cpp",
       "#include \"models/text/vocabulary.hpp\"\n"
       "text::Vocabulary* vocabulary;\n"},
      {"models/text/batching.cpp", "attograd::cli::Flags flags;\n"},
      {"plot/svg_line_plot.cpp", "#include \"examples/common/cli.hpp\"\n"},
      // Outside the rule: may use anything, and are not read for names.
      {"attograd.hpp", "#include \"examples/common/cli.hpp\"\nstruct Tensor {};\n"},
      {"tests/models/test_text.cpp", "#include \"examples/common/cli.hpp\"\ncli::Flags flags;\n"},
      {"bench/bench.cpp", "text::Vocabulary vocabulary;\n"},
  };
  REQUIRE(check(files) ==
          std::vector<std::string>{
              "autograd/fast/fast.cpp:1: includes \"models/text/vocabulary.hpp\", in models/; "
              "autograd/ may use only tensor/ and autograd/",
              "autograd/fast/fast.cpp:2: names 'text::Vocabulary', declared in models/ "
              "(models/text/vocabulary.hpp); autograd/ may use only tensor/ and autograd/",
              "models/text/batching.cpp:1: names 'attograd::cli::Flags', declared in examples/ "
              "(examples/common/cli.hpp); models/ may use only tensor/, autograd/, nn/ and "
              "models/",
              "plot/svg_line_plot.cpp:1: includes \"examples/common/cli.hpp\", in examples/; "
              "plot/ may use only tensor/, autograd/, nn/, models/ and plot/",
          });
}

TEST_CASE("comments and literals are blanked, lines and offsets kept", "[architecture]") {
  const std::string text =
      "int a = 1'000; // Node\n"
      "const char* s = \"Node \\\" x\"; char c = '\\'';\n"
      "/* Node\n"
      "   Node */ auto r = R\"d(Node )\" still)d\"; int b;\n";
  const std::string blanked = blank_comments_and_literals(text);
  REQUIRE(blanked.size() == text.size());
  REQUIRE(blanked ==
          "int a = 1'000;        \n"
          "const char* s = \"         \"; char c = '  ';\n"
          "       \n"
          "           auto r =  \"                 \"; int b;\n");
  REQUIRE(blank_comments(text) ==
          "int a = 1'000;        \n"
          "const char* s = \"Node \\\" x\"; char c = '\\'';\n"
          "       \n"
          "           auto r = R\"d(Node )\" still)d\"; int b;\n");
}

TEST_CASE("a violation injected into a copy of a real file is caught", "[architecture]") {
  // The test of the test on real code: whatever the tree's state, adding
  // these lines to tensor/tensor.hpp must add exactly these violations.
  std::vector<SourceFile> files = load_source_tree();
  const auto tensor_header = std::find_if(files.begin(), files.end(), [](const SourceFile& file) {
    return file.path == "tensor/tensor.hpp";
  });
  REQUIRE(tensor_header != files.end());
  const std::vector<Violation> before = find_layering_violations(files);

  std::string& text = tensor_header->text;
  if (!text.empty() && text.back() != '\n') text += '\n';
  const int first = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
  text +=
      "#include \"autograd/node.hpp\"\n"
      "namespace attograd {\n"
      "struct Node;  // the graph link, for TensorImpl\n"
      "// Freed early by nn::Optimizer::step_in_backward.\n"
      "}  // namespace attograd\n";
  const std::vector<Violation> after = find_layering_violations(files);

  std::vector<Violation> added;
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                      std::back_inserter(added), [](const Violation& a, const Violation& b) {
                        return std::tie(a.file, a.line, a.message) <
                               std::tie(b.file, b.line, b.message);
                      });
  REQUIRE(after.size() == before.size() + 3);
  REQUIRE(lines(added) ==
          std::vector<std::string>{
              fmt::format("tensor/tensor.hpp:{}: includes \"autograd/node.hpp\", in autograd/; "
                          "tensor/ may use only tensor/",
                          first),
              fmt::format("tensor/tensor.hpp:{}: names 'Node', declared in autograd/ "
                          "(autograd/node.hpp); tensor/ may use only tensor/",
                          first + 2),
              fmt::format("tensor/tensor.hpp:{}: names 'nn::Optimizer::step_in_backward', "
                          "declared in nn/ ({}); tensor/ may use only tensor/",
                          first + 3, learn_layers(files).types.at("Optimizer").header),
          });
}

}  // namespace test_layering
