// tensor/atomic_file.hpp — write a whole file so readers see either the old
// contents or the new, never half of each.
//
// A crash (or Ctrl-C) in the middle of writing a checkpoint or a plot must not
// leave a truncated file behind. The recipe is the usual POSIX one:
//
//   1. write everything to a temporary file in the *same* folder
//      ("<path>.attograd-tmp.<pid>.<counter>", so two writers never collide),
//   2. fsync it, so the bytes are on disk before the name points at them,
//   3. rename it onto the target — rename within one file system is atomic,
//   4. fsync the folder (best effort), so the rename itself is durable.
//
// On any failure the temporary file is removed and attograd::Error names the
// target path and the operating system's reason:
//
//   write_file_atomically("runs/loss.svg", svg);
//   write_file_atomically("model.ckpt", [&](std::ostream& out) { save(out); });
//
// The new file gets the default permissions (0666 minus the umask); the old
// file's permissions are not carried over.
//
// Every temporary file the project writes (here, and the staged sets of
// examples/common/output_folder.hpp) carries one marker, ".attograd-tmp.",
// that no user's file plausibly has. A killed writer leaves its temporary
// behind; the cleanup removes a file only if its whole name parses as
// "<name>.attograd-tmp.<pid>.<tag>" — so a user's "thesis.tmp.2023.docx" or
// "IMG.tmp.31337.jpg" is never touched.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>

#include "tensor/error.hpp"
#include "tensor/printable.hpp"

namespace attograd {

// ---------------------------------------------------------------- temporary names

// The marker in the name of every temporary file the project writes.
inline constexpr std::string_view kTemporaryMarker = ".attograd-tmp.";

// What follows a target's name to make its temporary: ".attograd-tmp.<pid>.<tag>".
// `tag` is letters and digits, e.g. a counter ("3") or a role ("set7").
inline std::string temporary_suffix(long pid, std::string_view tag) {
  return fmt::format("{}{}.{}", kTemporaryMarker, pid, tag);
}

// The writer pid of `file_name` if the whole name is one of our temporaries,
// "<name>.attograd-tmp.<pid>.<tag>" (non-empty name, a positive decimal pid,
// a tag of letters and digits); nothing for any other name.
inline std::optional<long> temporary_file_writer(std::string_view file_name) {
  const size_t marker = file_name.rfind(kTemporaryMarker);
  if (marker == std::string_view::npos || marker == 0) return std::nullopt;
  const std::string_view rest = file_name.substr(marker + kTemporaryMarker.size());
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 9 || dot + 1 == rest.size()) {
    return std::nullopt;
  }
  const std::string_view pid_digits = rest.substr(0, dot), tag = rest.substr(dot + 1);
  const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  const auto is_tag_char = [&](char c) { return is_digit(c) || (c >= 'a' && c <= 'z'); };
  long pid = 0;
  for (const char c : pid_digits) {
    if (!is_digit(c)) return std::nullopt;
    pid = pid * 10 + (c - '0');
  }
  for (const char c : tag) {
    if (!is_tag_char(c)) return std::nullopt;
  }
  if (pid <= 0 || pid_digits[0] == '0') return std::nullopt;
  return pid;
}

namespace atomic_file_detail {

// The operating system's description of errno `code`, e.g. "No such file or
// directory" (std::system_category is thread-safe, unlike strerror).
inline std::string os_reason(int code) { return std::system_category().message(code); }

// A name for the temporary file that no other writer — another thread of this
// process or another process — will pick at the same time.
inline std::filesystem::path temporary_path_for(const std::filesystem::path& path) {
  static std::atomic<unsigned long> counter{0};
  std::filesystem::path temporary = path;
  temporary += temporary_suffix(static_cast<long>(::getpid()), std::to_string(counter++));
  return temporary;
}

// Writes all of `bytes` to `fd`, retrying short writes and EINTR. Returns 0 or
// the errno of the failure.
inline int write_all(int fd, std::string_view bytes) {
  const char* data = bytes.data();
  std::size_t remaining = bytes.size();
  while (remaining > 0) {
    const ssize_t written = ::write(fd, data, remaining);
    if (written < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data += written;
    remaining -= static_cast<std::size_t>(written);
  }
  return 0;
}

// Makes a finished rename durable. Best effort: some file systems refuse to
// fsync a folder, and the file itself is already safely written.
inline void sync_folder(const std::filesystem::path& folder) {
  const std::string name = folder.empty() ? std::string(".") : folder.string();
  const int fd = ::open(name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace atomic_file_detail

// Replaces the file at `path` with exactly `bytes` (see the top of this file).
// Throws Error "cannot write '<path>': <reason>" when any step fails; the
// folder must already exist.
inline void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  namespace detail = atomic_file_detail;
  const std::filesystem::path temporary = detail::temporary_path_for(path);

  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int code = errno;
    fail("cannot write '{}': {} (while creating the temporary file '{}')",
         printable(path.string(), 300), detail::os_reason(code),
         printable(temporary.string(), 300));
  }

  // Each step runs only if the previous one succeeded; `step` names the first
  // that failed.
  int code = detail::write_all(fd, bytes);
  const char* step = "writing";
  if (code == 0 && ::fsync(fd) != 0) {
    code = errno;
    step = "flushing to disk";
  }
  if (::close(fd) != 0 && code == 0) {
    code = errno;
    step = "closing";
  }
  std::error_code rename_error;
  if (code == 0) {
    std::filesystem::rename(temporary, path, rename_error);
    if (rename_error) step = "renaming the temporary file onto it";
  }
  if (code != 0 || rename_error) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    fail("cannot write '{}': {} (while {})", printable(path.string(), 300),
         code != 0 ? detail::os_reason(code) : rename_error.message(), step);
  }
  detail::sync_folder(path.parent_path());
}

// The same, with the contents produced by `write`, which streams them into
// `out`. Nothing touches the disk until `write` has returned, so if it throws
// the old file is left exactly as it was.
inline void write_file_atomically(const std::filesystem::path& path,
                                  const std::function<void(std::ostream& out)>& write) {
  std::ostringstream buffer;
  write(buffer);
  check(!buffer.fail(), "cannot write '{}': the stream reported an error while it was filled",
        printable(path.string(), 300));
  write_file_atomically(path, std::string_view(buffer.view()));
}

}  // namespace attograd
