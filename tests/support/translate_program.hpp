// tests/support/translate_program.hpp — what the two command-line tests of
// the translate program share (test_translate_cli.cpp for the tutorial
// recipe, test_translate_batched_cli.cpp for the batched one): the built
// program, the shipped data, and the helpers of program.hpp and picture.hpp
// by their short names.
#pragma once

#include <filesystem>
#include <type_traits>

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

}  // namespace attograd::testing::translate_program
