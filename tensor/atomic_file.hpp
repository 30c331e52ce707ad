// tensor/atomic_file.hpp — write a whole file so readers see either the old
// contents or the new, never half of each.
//
// A crash (or Ctrl-C) in the middle of writing a checkpoint or a plot must not
// leave a truncated file behind. The recipe is the usual POSIX one:
//
//   1. write everything to a temporary file in the *same* folder
//      ("<path>.tmp.<pid>.<counter>", so two writers never collide),
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
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>

#include "tensor/error.hpp"

namespace attograd {

namespace atomic_file_detail {

// The operating system's description of errno `code`, e.g. "No such file or
// directory" (std::system_category is thread-safe, unlike strerror).
inline std::string os_reason(int code) { return std::system_category().message(code); }

// A name for the temporary file that no other writer — another thread of this
// process or another process — will pick at the same time.
inline std::filesystem::path temporary_path_for(const std::filesystem::path& path) {
  static std::atomic<unsigned long> counter{0};
  std::filesystem::path temporary = path;
  temporary += fmt::format(".tmp.{}.{}", static_cast<long>(::getpid()), counter++);
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
    fail("cannot write '{}': {} (while creating the temporary file '{}')", path.string(),
         detail::os_reason(code), temporary.string());
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
    fail("cannot write '{}': {} (while {})", path.string(),
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
        path.string());
  write_file_atomically(path, std::string_view(buffer.view()));
}

}  // namespace attograd
