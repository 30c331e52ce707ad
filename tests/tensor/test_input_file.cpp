// tests/tensor/test_input_file.cpp — what the readers accept as input and
// what the writers' cleanup may remove:
//   - InputFile (tensor/input_file.hpp) reads regular files only: a device,
//     a FIFO, a socket or a folder is refused in one line naming it, before
//     a byte is read and without blocking; a size limit is checked first;
//   - temporary_file_writer (tensor/atomic_file.hpp) recognises the
//     project's temporaries by their whole name, never a user's look-alike;
//   - read_pairs counts skipped lines and keeps only a few of them, so a
//     million bad lines cost counters, not a million messages.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "models/text/pairs.hpp"
#include "tensor/atomic_file.hpp"
#include "tensor/error.hpp"
#include "tensor/input_file.hpp"
#include "tensor/printable.hpp"
#include "tests/support/socket_file.hpp"

namespace test_input_file {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

using attograd::testing::make_socket;

namespace {

struct Scratch {
  fs::path path;
  Scratch() {
    static int counter = 0;
    path = fs::temp_directory_path() / fmt::format("attograd_input_{}_{}", ::getpid(), counter++);
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// The message of the attograd::Error thrown by `action` ("" if none).
template <typename Action>
std::string error_message(Action action) {
  try {
    action();
  } catch (const attograd::Error& error) {
    return error.what();
  }
  return "";
}

const attograd::InputFileRules kRules{"reader", "pass a regular file"};

}  // namespace

TEST_CASE("InputFile refuses every file that is not regular, naming it, without blocking",
          "[inputs]") {
  Scratch scratch;
  const fs::path fifo = scratch.path / "pipe", socket = scratch.path / "socket";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);  // no writer: a blocking open would wait forever
  make_socket(socket);
  const struct {
    std::string path;
    std::string expected;
  } cases[] = {
      {"/dev/zero",
       "reader: '/dev/zero' is a character device, not a regular file; only "
       "regular files are read (pass a regular file)"},
      {"/dev/full", "reader: '/dev/full' is a character device, not a regular file"},
      {fifo.string(), "reader: '" + fifo.string() + "' is a FIFO (named pipe), not a regular file"},
      {socket.string(), "reader: '" + socket.string() + "' is a socket, not a regular file"},
      {scratch.path.string(),
       "reader: '" + scratch.path.string() + "' is a folder, not a file (pass a regular file)"},
      {(scratch.path / "nowhere").string(), "reader: '" + (scratch.path / "nowhere").string() +
                                                "' does not exist (pass a regular file)"},
  };
  for (const auto& each : cases) {
    INFO(each.path);
    const std::string message = error_message([&] { attograd::InputFile file(each.path, kRules); });
    CHECK_THAT(message, StartsWith(each.expected));
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("InputFile reads a regular file as a stream and at offsets", "[inputs]") {
  Scratch scratch;
  const fs::path path = scratch.path / "data.txt";
  std::string text;
  for (int i = 0; i < 50000; ++i) text += fmt::format("line {}\n", i);  // several buffers
  std::ofstream(path, std::ios::binary) << text;

  attograd::InputFile file(path, kRules);
  CHECK(file.size() == text.size());
  char piece[6] = {};
  file.read_at(5, piece, 5);
  CHECK(std::string(piece) == "0\nlin");
  CHECK_THAT(error_message([&] { file.read_at(text.size() - 2, piece, 5); }),
             Contains("reader: reading file bytes") && Contains("it ended early"));

  attograd::InputFile again(path, kRules);
  std::ostringstream copy;
  copy << again.stream().rdbuf();
  CHECK(copy.str() == text);
}

TEST_CASE("read_pairs refuses a file over its size limit before reading it", "[inputs]") {
  Scratch scratch;
  const fs::path path = scratch.path / "huge.tsv";
  {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0600);
    REQUIRE(fd >= 0);
    // Sparse: takes no disk space and is never read.
    REQUIRE(::ftruncate(fd, off_t(attograd::text::kMaxPairsFileBytes + 1)) == 0);
    ::close(fd);
  }
  CHECK_THAT(error_message([&] { attograd::text::read_pairs(path); }),
             StartsWith(fmt::format("read_pairs: '{}' is 268435457 bytes, more than this "
                                    "reader's limit of 268435456 bytes",
                                    path.string())));
  CHECK_THAT(error_message([&] { attograd::text::read_pairs("/dev/zero"); }),
             StartsWith("read_pairs: '/dev/zero' is a character device, not a regular file"));
}

TEST_CASE("read_pairs counts a million skipped lines but keeps only a few", "[inputs]") {
  using attograd::text::SkipReason;
  Scratch scratch;
  const fs::path path = scratch.path / "blank.tsv";
  std::ofstream(path, std::ios::binary) << std::string(1000000, '\n') << "no tab here\n"
                                        << "Hi.\tSalut.\n";
  const attograd::text::PairSet set = attograd::text::read_pairs(path);
  const attograd::text::ReadReport& report = set.report;
  CHECK(report.lines_read == 1000002);
  CHECK(report.pairs_kept == 1);
  CHECK(report.lines_skipped() == 1000001);
  CHECK(report.skipped_count(SkipReason::kEmptyLine) == 1000000);
  CHECK(report.skipped_count(SkipReason::kNoTab) == 1);
  // The memory of the report is bounded by counting what it holds.
  REQUIRE(report.skipped_examples.size() == attograd::text::kMaxSkippedExamples);
  CHECK(report.skipped_examples[0].message == path.string() + ":1: empty line");
  CHECK(report.skipped_examples.back().line_number ==
        std::int64_t(attograd::text::kMaxSkippedExamples));
  CHECK_THAT(report.summary(), Contains("1000002 lines read, 1 pairs kept, 1000001 skipped "
                                        "(1000000 empty line, 1 without a tab)"));
}

TEST_CASE("Only names of the project's own pattern are temporaries", "[inputs]") {
  using attograd::temporary_file_writer;
  CHECK(temporary_file_writer("checkpoint.safetensors.attograd-tmp.1234.5") == 1234L);
  CHECK(temporary_file_writer("loss.svg.attograd-tmp.77.set3") == 77L);
  CHECK(temporary_file_writer(".write_test.attograd-tmp.9.probe") == 9L);
  // (fmt, not "a" + std::string: GCC 12's -Wrestrict misfires on the latter.)
  CHECK(temporary_file_writer(fmt::format("a{}", attograd::temporary_suffix(4194305, "12"))) ==
        4194305L);
  for (const char* name :
       {"thesis.tmp.2023.docx", "IMG.tmp.31337.jpg", "budget.tmp.4242.xlsx",
        "checkpoint.safetensors.tmp.4194305.3",  // the pattern of older versions
        ".attograd-tmp.12.3",                    // no name before the marker
        "a.attograd-tmp.0.1", "a.attograd-tmp.012.1", "a.attograd-tmp.x12.1", "a.attograd-tmp.12.",
        "a.attograd-tmp.12", "a.attograd-tmp..3", "a.attograd-tmp.12.3.docx",
        "a.attograd-tmp.12.3 ", "a.attograd-tmp.12.A",
        "a.attograd-tmp.1234567890.1",  // more digits than any pid
        "notes.attograd-tmp.txt"}) {
    INFO(name);
    CHECK_FALSE(temporary_file_writer(name).has_value());
  }
}

TEST_CASE("write_file_atomically's temporary carries the marker and this process's pid",
          "[inputs]") {
  Scratch scratch;
  // The folder is missing, so creating the temporary fails and the message names it.
  const fs::path target = scratch.path / "missing" / "file.txt";
  const std::string message =
      error_message([&] { attograd::write_file_atomically(target, std::string_view("x")); });
  const std::string opening = "(while creating the temporary file '";
  const size_t start = message.find(opening);
  REQUIRE(start != std::string::npos);
  const std::string temporary =
      message.substr(start + opening.size(), message.rfind('\'') - start - opening.size());
  CHECK(fs::path(temporary).parent_path() == target.parent_path());
  CHECK(attograd::temporary_file_writer(fs::path(temporary).filename().string()) ==
        long(::getpid()));
}

TEST_CASE("printable escapes control characters and cuts long text", "[inputs]") {
  CHECK(attograd::printable("a\x1b[2Jb") == "a\\x1b[2Jb");
  CHECK(attograd::printable("tab\there\n") == "tab\\x09here\\x0a");
  CHECK(attograd::printable("d\xc3\xa9j\xc3\xa0") == "d\xc3\xa9j\xc3\xa0");  // UTF-8 is kept
  const std::string cut = attograd::printable(std::string(10'000'000, 'x'));
  CHECK(cut == std::string(attograd::kMaxQuotedChars, 'x') + "…");
}

}  // namespace test_input_file
