// tests/architecture/test_core_mechanisms.cpp — the engine's core files hold
// the algorithm; every speed mechanism is reached through one named seam.
//
// The core: where storage is allocated (tensor/tensor.*), a node is recorded
// (autograd/node.*), a graph is ordered (autograd/graph_order.*), gradients
// are summed and kept (autograd/gradient.*, autograd/autograd_meta.hpp) and
// backward() runs (autograd/engine.*). Each mechanism of docs/fast_paths.md
// that the core reaches is named here by the words a line uses when it
// names it — its header, its functions, the word for what it does — and may
// be named by at most the lines its seam needs: the #include that brings
// the seam in, and the call or type that is the seam. Every line counts,
// comments included, so a core file cannot grow a second explanation of a
// mechanism that belongs in the mechanism's own file.
//
// Not mechanisms: `thread_local` names per-thread state the algorithm itself
// needs (NoGradGuard's flag in engine.cpp, node.cpp's collector of a dying
// graph), and `make_object`, `ObjectVector` and `SharedFunction` are the
// pool's seams, named as the plain things they stand for (make_shared,
// std::vector, std::function; tensor/fast/pool.hpp).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace test_core_mechanisms {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kCoreFiles = {
    "tensor/tensor.hpp",     "tensor/tensor.cpp",          "autograd/node.hpp",
    "autograd/node.cpp",     "autograd/graph_order.hpp",   "autograd/graph_order.cpp",
    "autograd/engine.hpp",   "autograd/engine.cpp",        "autograd/gradient.hpp",
    "autograd/gradient.cpp", "autograd/autograd_meta.hpp",
};

struct Mechanism {
  std::string name;
  std::string pattern;  // ECMAScript regex, case-insensitive, matched per line
  int budget;           // lines of the core that may name it
  std::string seam;     // what those lines are
};

const std::vector<Mechanism> kMechanisms = {
    {"storage cache", R"(cache|thread front)", 1,
     "tensor.cpp includes tensor/fast/storage_cache.hpp; Storage calls storage::allocate"},
    {"pooled objects and closures", R"(\bpool)", 1,
     "tensor.hpp includes tensor/fast/pool.hpp for make_object, ObjectVector, SharedFunction"},
    {"graph-order table", R"(tensor_numbering|TensorNumbering|hash)", 2,
     "graph_order.hpp includes it and GraphOrder holds one"},
    {"gradient stealing", R"(steal)", 2, "gradient.cpp includes it and own() asks steal()"},
    {"deferred gradients", R"(defer)", 4,
     "gradient.hpp says where unformed parts come from; gradient.cpp includes it, and "
     "product() and rows() each ask it once"},
    {"reused forward values", R"(forward_values|with_values)", 0, "reached from ops, not the core"},
    {"fused ops", R"(fused)", 0, "reached from ops, not the core"},
    {"sentence products", R"(sentence)", 0, "reached from ops, not the core"},
    {"prefetching", R"(prefetch)", 0, "none"},
    {"fast switches", R"(fast::(Switches|UseSwitches|ReferencePath|set_))", 0,
     "each mechanism reads its own switch"},
    {"inspection hooks", R"(inspect|on_record|hook)", 4,
     "engine.cpp includes autograd/inspect/hooks.hpp and has three hook points: an op "
     "recorded, a pass begun and ended, a node run"},
};
constexpr int kTotalBudget = 20;

struct Hit {
  std::string file;
  int line;
  std::string text;
};

std::vector<Hit> lines_naming(const Mechanism& mechanism, const std::string& file,
                              const std::string& text) {
  const std::regex pattern(mechanism.pattern, std::regex::ECMAScript | std::regex::icase);
  std::vector<Hit> hits;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (std::regex_search(line, pattern)) hits.push_back({file, number, line});
  }
  return hits;
}

// Each mechanism over budget, with the lines that name it; empty if none is.
std::string over_budget(const std::vector<std::pair<std::string, std::string>>& files) {
  std::ostringstream report;
  int total = 0;
  for (const Mechanism& mechanism : kMechanisms) {
    std::vector<Hit> hits;
    for (const auto& [path, text] : files) {
      for (Hit& hit : lines_naming(mechanism, path, text)) hits.push_back(std::move(hit));
    }
    total += static_cast<int>(hits.size());
    if (static_cast<int>(hits.size()) <= mechanism.budget) continue;
    report << mechanism.name << ": " << hits.size() << " lines of the core name it, "
           << mechanism.budget << " allowed (" << mechanism.seam << ")\n";
    for (const Hit& hit : hits)
      report << "  " << hit.file << ":" << hit.line << ": " << hit.text << "\n";
  }
  if (total > kTotalBudget) {
    report << total << " lines of the core name a mechanism; at most " << kTotalBudget << "\n";
  }
  return report.str();
}

std::vector<std::pair<std::string, std::string>> read_core() {
  std::vector<std::pair<std::string, std::string>> files;
  for (const std::string& path : kCoreFiles) {
    std::ifstream in(fs::path(ATTOGRAD_SOURCE_DIR) / path);
    REQUIRE(in);
    std::ostringstream text;
    text << in.rdbuf();
    files.emplace_back(path, text.str());
  }
  return files;
}

}  // namespace

TEST_CASE("the engine's core names each speed mechanism only at its seam", "[architecture]") {
  const auto files = read_core();
  const std::string report = over_budget(files);
  INFO(report);
  CHECK(report.empty());
}

TEST_CASE("the core-mechanism count fails when a core file explains a mechanism",
          "[architecture]") {
  auto files = read_core();
  REQUIRE(over_budget(files).empty());
  SECTION("a second line naming the storage cache") {
    files[1].second += "\n// blocks come back from the cache's per-thread front\n";
    const std::string report = over_budget(files);
    CHECK_THAT(report, Catch::Contains("storage cache: 2 lines"));
    CHECK_THAT(report, Catch::Contains("tensor/tensor.cpp:"));
  }
  SECTION("the engine reading a deferred gradient itself") {
    files[7].second += "\nif (auto d = fast::take_deferred_gradient(leaf)) apply(*d);\n";
    CHECK_THAT(over_budget(files), Catch::Contains("deferred gradients: 5 lines"));
  }
  SECTION("a mechanism the core must not reach at all") {
    files[6].second += "\n#include \"autograd/fast/fused.hpp\"\n";
    CHECK_THAT(over_budget(files), Catch::Contains("fused ops: 1 lines of the core name it, 0"));
  }
}

}  // namespace test_core_mechanisms
