// examples/common/output_folder.cpp — see output_folder.hpp.
#include "examples/common/output_folder.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <optional>
#include <string_view>
#include <system_error>

#include "nn/safetensors_messages.hpp"
#include "tensor/atomic_file.hpp"
#include "tensor/error.hpp"

namespace attograd::cli {

namespace fs = std::filesystem;

namespace {

// The first existing ancestor of `folder` that is not a folder, if any: the
// usual reason "cannot create" means "a parent is a file".
std::optional<fs::path> file_in_the_way(const fs::path& folder) {
  for (fs::path part = folder; !part.empty(); part = part.parent_path()) {
    std::error_code error;
    const fs::file_status status = fs::status(part, error);
    if (fs::exists(status) && !fs::is_directory(status)) return part;
    if (part == part.parent_path()) break;
  }
  return std::nullopt;
}

bool process_has_ended(long pid) {
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

}  // namespace

void prepare_output_folder(const std::string& flag, const fs::path& folder) {
  const std::string shown = nn::printable(folder.string(), 300);
  check(!folder.empty(), "{}: the output folder is empty; pass a folder name", flag);
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) {
    const std::optional<fs::path> blocker = file_in_the_way(folder);
    if (blocker) {
      fail("{} '{}': cannot create the folder: '{}' is a file, not a folder; pass another {}", flag,
           shown, nn::printable(blocker->string(), 300), flag);
    }
    fail("{} '{}': cannot create the folder: {}", flag, shown, error.message());
  }
  // Only writing shows whether writing works (permissions, a read-only or full disk).
  fs::path probe = folder / ".write_test";
  probe += temporary_suffix(long(::getpid()), "probe");
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int code = errno;
    fail("{} '{}': the folder cannot be written: {} (nothing was done; pass a writable {})", flag,
         shown, std::system_category().message(code), flag);
  }
  const bool written = ::write(fd, "x", 1) == 1;
  const int code = written ? 0 : errno;
  ::close(fd);
  fs::remove(probe, error);
  check(written, "{} '{}': the folder cannot be written: {} (nothing was done)", flag, shown,
        std::system_category().message(code));
  remove_stale_temporaries(folder);
}

size_t remove_stale_temporaries(const fs::path& folder) {
  size_t removed = 0;
  std::error_code error;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    if (!it->is_regular_file(error)) continue;
    const std::optional<long> writer = temporary_file_writer(it->path().filename().string());
    if (!writer || *writer == long(::getpid()) || !process_has_ended(*writer)) continue;
    std::error_code remove_error;
    if (fs::remove(it->path(), remove_error)) ++removed;
  }
  return removed;
}

OutputSet::OutputSet(fs::path folder) : folder_(std::move(folder)) {}

OutputSet::~OutputSet() {
  for (const auto& [staged, final_path] : files_) {
    std::error_code ignored;
    fs::remove(staged, ignored);
  }
}

fs::path OutputSet::staged(const std::string& name) {
  static std::atomic<unsigned long> counter{0};
  const fs::path final_path = folder_ / name;
  fs::path staged = final_path;
  staged += temporary_suffix(long(::getpid()), fmt::format("set{}", counter++));
  files_.emplace_back(staged, final_path);
  return staged;
}

void OutputSet::commit() {
  for (auto& [staged, final_path] : files_) {
    std::error_code error;
    if (!fs::exists(staged, error)) continue;
    fs::rename(staged, final_path, error);
    check(!error, "cannot write '{}': {} (while renaming '{}' onto it)",
          nn::printable(final_path.string(), 300), error.message(),
          nn::printable(staged.string(), 300));
  }
  files_.clear();
}

}  // namespace attograd::cli
