// tests/tensor/test_atomic_file.cpp — write_file_atomically: the file gets
// exactly the bytes, an old file is replaced whole, and a failure throws an
// Error naming the path while leaving no temporary file behind.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor/atomic_file.hpp"
#include "tensor/error.hpp"

namespace test_atomic_file {

namespace fs = std::filesystem;

namespace {

// A fresh folder under the system's temporary folder, removed afterwards.
struct TemporaryFolder {
  fs::path path;
  TemporaryFolder() {
    path = fs::temp_directory_path() / fmt::format("attograd_atomic_test_{}", ::getpid());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> file_names(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

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

}  // namespace

TEST_CASE("write_file_atomically writes exactly the bytes", "[io]") {
  const TemporaryFolder folder;
  const fs::path path = folder.path / "data.bin";
  const std::string bytes("line 1\nline 2\0binary\xff", 21);
  attograd::write_file_atomically(path, bytes);
  CHECK(read_file(path) == bytes);
  CHECK(file_names(folder.path) == std::vector<std::string>{"data.bin"});

  attograd::write_file_atomically(folder.path / "empty.txt", "");
  CHECK(fs::exists(folder.path / "empty.txt"));
  CHECK(fs::file_size(folder.path / "empty.txt") == 0);
}

TEST_CASE("write_file_atomically replaces an existing file whole", "[io]") {
  const TemporaryFolder folder;
  const fs::path path = folder.path / "model.ckpt";
  attograd::write_file_atomically(path, std::string(10000, 'a'));
  attograd::write_file_atomically(path, "short");
  CHECK(read_file(path) == "short");
  for (int i = 0; i < 20; ++i) attograd::write_file_atomically(path, std::to_string(i));
  CHECK(read_file(path) == "19");
  CHECK(file_names(folder.path) == std::vector<std::string>{"model.ckpt"});
}

TEST_CASE("write_file_atomically streams through a callback", "[io]") {
  const TemporaryFolder folder;
  const fs::path path = folder.path / "numbers.txt";
  attograd::write_file_atomically(path, [](std::ostream& out) {
    for (int i = 1; i <= 3; ++i) out << i << '\n';
  });
  CHECK(read_file(path) == "1\n2\n3\n");

  // A callback that throws leaves the old file untouched.
  CHECK_THROWS_AS(attograd::write_file_atomically(path,
                                                  [](std::ostream& out) {
                                                    out << "half";
                                                    throw std::runtime_error("interrupted");
                                                  }),
                  std::runtime_error);
  CHECK(read_file(path) == "1\n2\n3\n");
  CHECK(file_names(folder.path) == std::vector<std::string>{"numbers.txt"});
}

TEST_CASE("write_file_atomically into a missing folder throws and names the path", "[io]") {
  const TemporaryFolder folder;
  const fs::path path = folder.path / "no_such_folder" / "plot.svg";
  const std::string message =
      error_message([&] { attograd::write_file_atomically(path, "<svg/>"); });
  INFO(message);
  CHECK(message.find(path.string()) != std::string::npos);
  CHECK(message.find("No such file or directory") != std::string::npos);
  CHECK(file_names(folder.path).empty());
}

TEST_CASE("a failed rename removes the temporary file", "[io]") {
  // The target is a non-empty folder, so the temporary file is written and
  // then cannot be renamed onto it.
  const TemporaryFolder folder;
  const fs::path target = folder.path / "occupied";
  fs::create_directories(target);
  attograd::write_file_atomically(target / "inside.txt", "x");
  const std::string message = error_message([&] { attograd::write_file_atomically(target, "y"); });
  INFO(message);
  CHECK(message.find(fmt::format("cannot write '{}'", target.string())) == 0);
  CHECK(message.find("renaming") != std::string::npos);
  CHECK(file_names(folder.path) == std::vector<std::string>{"occupied"});
  CHECK(read_file(target / "inside.txt") == "x");
}

}  // namespace test_atomic_file
