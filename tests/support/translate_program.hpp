// tests/support/translate_program.hpp — what the two command-line tests of
// the translate program share (test_translate_cli.cpp for the tutorial
// recipe, test_translate_batched_cli.cpp for the batched one): the built
// program, the shipped data, and the helpers of program.hpp and picture.hpp
// by their short names.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <type_traits>
#include <vector>

#include "tensor/shape.hpp"
#include "tests/support/picture.hpp"
#include "tests/support/program.hpp"

namespace attograd::testing::translate_program {

namespace fs = std::filesystem;

inline const fs::path kBinary = fs::path(ATTOGRAD_BINARY_DIR) / "examples" / "translate";
inline const fs::path kShippedData = fs::path(ATTOGRAD_SOURCE_DIR) / "data" / "eng-fra.tsv";
// The program is the float build; the double test binary skips these cases.
inline constexpr bool kFloatBuild = std::is_same_v<attograd::real, float>;

using testing::lines_of;
using testing::parse_picture;
using testing::Picture;
using testing::read_file;
using testing::require_one_line_error;
using testing::TemporaryFolder;
using testing::write_file;
using Run = testing::ProgramRun;
inline const testing::Program run(kBinary);

// A small pairs file in `folder`: the first `count` "I'm …" pairs of the
// shipped data with short English sides (the tutorial filter keeps them).
inline fs::path tutorial_data(const fs::path& folder, size_t count) {
  std::ifstream in(kShippedData);
  std::string text;
  size_t kept = 0;
  for (std::string line; kept < count && std::getline(in, line);) {
    const size_t tab = line.find('\t');
    if (line.rfind("I'm ", 0) != 0 || tab == std::string::npos || tab > 30) continue;
    text += line.substr(0, line.find('\t', tab + 1)) + "\n";
    ++kept;
  }
  const fs::path path = folder / "pairs.tsv";
  write_file(path, text);
  return path;
}

// A quick train command line: the first 64 pairs of the shipped file, a
// progress line every epoch, and `model`'s flags (a tiny model).
inline std::vector<std::string> quick_train_arguments(const std::string& recipe,
                                                      const fs::path& out, int epochs,
                                                      const std::vector<std::string>& model) {
  std::vector<std::string> arguments = {
      "train",      "--recipe",       recipe, "--data",   kShippedData.string(),  "--out",
      out.string(), "--num-examples", "64",   "--epochs", std::to_string(epochs), "--print-every",
      "1"};
  arguments.insert(arguments.end(), model.begin(), model.end());
  return arguments;
}
// The batched recipe's (Adam lr 0.02, the last argument) and the Transformer's.
inline std::vector<std::string> quick_batched_train(const fs::path& out, int epochs) {
  return quick_train_arguments("batched", out, epochs,
                               {"--embed", "8", "--hidden", "8", "--lr", "0.02"});
}
inline std::vector<std::string> quick_transformer_train(const fs::path& out, int epochs) {
  return quick_train_arguments("transformer", out, epochs,
                               {"--hidden", "8", "--heads", "2", "--ffn", "16"});
}

}  // namespace attograd::testing::translate_program
