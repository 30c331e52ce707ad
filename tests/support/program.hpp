// tests/support/program.hpp — running a built example program from a test:
// a scratch folder that cleans up after itself, the program's exit status,
// stdout and stderr, and small file helpers. Shared by the CLI tests in
// tests/examples/.
//
//   const Program run(binary);
//   const TemporaryFolder scratch;
//   const ProgramRun result = run({"train", "--iters", "10"}, scratch.path);
//   CHECK(result.status == 0);
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace attograd::testing {

// A fresh, empty folder under the system's temporary directory, named
// <prefix>_<pid>_<counter>, removed with everything in it at the end of scope.
class TemporaryFolder {
 public:
  explicit TemporaryFolder(const std::string& prefix = "attograd_test") {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;

  std::filesystem::path path;
};

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// `text` as one single-quoted shell word.
inline std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out.append(c == '\'' ? std::string("'\\''") : std::string(1, c));
  return out.append("'");
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The words that start a built program: the program itself, or, in a
// cross-build, the emulator first (CMAKE_CROSSCOMPILING_EMULATOR, e.g.
// qemu-aarch64; tests/CMakeLists.txt passes it as ATTOGRAD_TEST_EMULATOR).
inline std::vector<std::string> program_command(const std::filesystem::path& binary) {
  std::vector<std::string> words;
#ifdef ATTOGRAD_TEST_EMULATOR
  std::istringstream emulator(ATTOGRAD_TEST_EMULATOR);
  for (std::string word; emulator >> word;) words.push_back(word);
#endif
  words.push_back(binary.string());
  return words;
}

struct ProgramRun {
  int status = -1;  // the exit status, or -1 if the program did not exit normally
  std::string out;
  std::string err;
};

// Runs `binary` with `arguments` and `input` on stdin, through files in
// `scratch` (removed again afterwards). Fails the test with a hint when the
// program has not been built.
inline ProgramRun run_program(const std::filesystem::path& binary,
                              const std::vector<std::string>& arguments,
                              const std::filesystem::path& scratch, const std::string& input = "") {
  INFO("the example binary " << binary.string() << " is missing: build the "
                             << binary.filename().string() << " target before the tests");
  REQUIRE(std::filesystem::exists(binary));
  const std::filesystem::path in = scratch / "stdin.txt", out = scratch / "stdout.txt",
                              err = scratch / "stderr.txt";
  write_file(in, input);
  std::string command;
  for (const std::string& word : program_command(binary)) {
    command.append(command.empty() ? "" : " ").append(shell_quoted(word));
  }
  for (const std::string& argument : arguments) command.append(" ").append(shell_quoted(argument));
  command.append(" < ").append(shell_quoted(in.string()));
  command.append(" > ").append(shell_quoted(out.string()));
  command.append(" 2> ").append(shell_quoted(err.string()));
  const int raw = std::system(command.c_str());
  ProgramRun result;
  result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  result.out = read_file(out);
  result.err = read_file(err);
  for (const std::filesystem::path& file : {in, out, err}) std::filesystem::remove(file);
  return result;
}

// What every refused input must give: exit status 2 and exactly one line on
// stderr, starting "error: ".
inline void require_one_line_error(const ProgramRun& result) {
  INFO("stderr: " << result.err);
  CHECK(result.status == 2);
  const std::vector<std::string> lines = lines_of(result.err);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rfind("error: ", 0) == 0);
}

// run_program bound to one binary: `run(arguments, scratch, input)`.
class Program {
 public:
  explicit Program(std::filesystem::path binary) : binary_(std::move(binary)) {}
  ProgramRun operator()(const std::vector<std::string>& arguments,
                        const std::filesystem::path& scratch, const std::string& input = "") const {
    return run_program(binary_, arguments, scratch, input);
  }

 private:
  std::filesystem::path binary_;
};

// Sets ATTOGRAD_TEST_INTERRUPT (examples/common/interrupt.hpp) for the
// programs this scope runs: they raise that signal to themselves at a step.
class ScopedInterrupt {
 public:
  explicit ScopedInterrupt(const std::string& value) {
    ::setenv("ATTOGRAD_TEST_INTERRUPT", value.c_str(), 1);
  }
  ~ScopedInterrupt() { ::unsetenv("ATTOGRAD_TEST_INTERRUPT"); }
  ScopedInterrupt(const ScopedInterrupt&) = delete;
  ScopedInterrupt& operator=(const ScopedInterrupt&) = delete;
};

}  // namespace attograd::testing
