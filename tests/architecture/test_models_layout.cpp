// tests/architecture/test_models_layout.cpp — the layout rule of
// models/README.md, checked on the real tree and, to test the checker, on
// small invented trees:
//   - no source file sits directly in models/: each is in a folder;
//   - the recipe-neutral folders (models/translation/, models/text/) include
//     no recipe's folder;
//   - no include cycle joins two or more folders of models/.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/architecture/layering.hpp"

namespace test_models_layout {

using attograd::architecture::find_includes;
using attograd::architecture::load_source_tree;
using attograd::architecture::SourceFile;

namespace {

// The folders every recipe may use and that use no recipe.
const std::set<std::string> kNeutralFolders = {"translation", "text"};

// "models/seq2seq/model.hpp" -> "seq2seq"; "" for a file directly in models/
// or outside it.
std::string models_folder(const std::string& path) {
  if (!path.starts_with("models/")) return "";
  const std::string rest = path.substr(7);
  const size_t slash = rest.find('/');
  return slash == std::string::npos ? "" : rest.substr(0, slash);
}

// Each violation as "file:line: message", sorted; cycles as "cycle: a -> b -> a".
std::vector<std::string> find_models_layout_violations(const std::vector<SourceFile>& files) {
  std::vector<std::string> violations;
  std::map<std::string, std::set<std::string>> uses;  // folder -> folders it includes
  for (const SourceFile& file : files) {
    if (!file.path.starts_with("models/")) continue;
    const std::string folder = models_folder(file.path);
    if (folder.empty()) {
      violations.push_back(file.path +
                           ":1: sits directly in models/; move it into its recipe's folder, "
                           "or into models/translation/ when every recipe shares it");
      continue;
    }
    uses[folder];
    for (const auto& include : find_includes(file)) {
      const std::string target = models_folder(include.path);
      if (target.empty() || target == folder) continue;
      uses[folder].insert(target);
      if (kNeutralFolders.contains(folder) && !kNeutralFolders.contains(target))
        violations.push_back(file.path + ":" + std::to_string(include.line) + ": includes \"" +
                             include.written + "\" of the recipe folder models/" + target +
                             "/; models/" + folder +
                             "/ is shared by every recipe and includes none");
    }
  }
  // Cycles: a depth-first search from each folder, stepping only to folders
  // named after it, so each cycle is found once, from its smallest name.
  std::set<std::string> reported;
  for (const auto& [start, _] : uses) {
    std::vector<std::string> path = {start};
    std::vector<std::set<std::string>::const_iterator> next = {uses[start].begin()};
    while (!path.empty()) {
      const std::set<std::string>& targets = uses[path.back()];
      if (next.back() == targets.end()) {
        path.pop_back();
        next.pop_back();
        continue;
      }
      const std::string target = *next.back()++;
      if (target == start) {
        std::string cycle = "cycle: ";
        for (const std::string& folder : path) cycle += "models/" + folder + "/ -> ";
        cycle += "models/" + start + "/";
        if (reported.insert(cycle).second) violations.push_back(cycle);
      } else if (target > start && std::find(path.begin(), path.end(), target) == path.end()) {
        path.push_back(target);
        next.push_back(uses[target].begin());
      }
    }
  }
  std::sort(violations.begin(), violations.end());
  return violations;
}

}  // namespace

TEST_CASE("models/ keeps one folder per recipe, neutral folders and no cycles", "[architecture]") {
  const std::vector<SourceFile> files = load_source_tree(ATTOGRAD_SOURCE_DIR);
  std::set<std::string> folders;
  for (const SourceFile& file : files) {
    if (file.path.starts_with("models/")) folders.insert(models_folder(file.path));
  }
  // Guards against passing because the tree was not found.
  REQUIRE(folders.contains("translation"));
  REQUIRE(folders.contains("seq2seq"));
  const std::vector<std::string> violations = find_models_layout_violations(files);
  INFO("see models/README.md for the rule");
  REQUIRE(violations == std::vector<std::string>{});
}

TEST_CASE("the models layout checker finds each kind of violation", "[architecture]") {
  const std::vector<SourceFile> files = {
      {"models/loose.hpp", "#pragma once\n"},
      {"models/text/words.hpp", "#pragma once\n#include \"models/text/other.hpp\"\n"},
      {"models/translation/search.hpp",
       "#pragma once\n"
       "#include \"models/text/words.hpp\"\n"
       "// #include \"models/alpha/commented_out.hpp\"\n"
       "#include \"models/alpha/model.hpp\"\n"},
      {"models/alpha/model.hpp", "#pragma once\n#include \"models/beta/part.hpp\"\n"},
      {"models/beta/part.hpp", "#pragma once\n#include \"../alpha/model.hpp\"\n"},
      {"models/gamma/a.cpp", "#include \"models/translation/search.hpp\"\n"},
      {"nn/module.hpp", "#pragma once\n"},
  };
  REQUIRE(find_models_layout_violations(files) ==
          std::vector<std::string>{
              "cycle: models/alpha/ -> models/beta/ -> models/alpha/",
              "models/loose.hpp:1: sits directly in models/; move it into its recipe's folder, "
              "or into models/translation/ when every recipe shares it",
              "models/translation/search.hpp:4: includes \"models/alpha/model.hpp\" of the recipe "
              "folder models/alpha/; models/translation/ is shared by every recipe and includes "
              "none",
          });
}

TEST_CASE("the models layout checker accepts a tree that keeps the rule", "[architecture]") {
  const std::vector<SourceFile> files = {
      {"models/text/words.hpp", "#pragma once\n"},
      {"models/translation/search.hpp", "#pragma once\n#include \"models/text/words.hpp\"\n"},
      {"models/alpha/model.hpp",
       "#pragma once\n#include \"models/translation/search.hpp\"\n#include "
       "\"models/alpha/x.hpp\"\n"},
      {"models/beta/model.cpp", "#include \"models/alpha/model.hpp\"\n"},
  };
  REQUIRE(find_models_layout_violations(files) == std::vector<std::string>{});
}

}  // namespace test_models_layout
