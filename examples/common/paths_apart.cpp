// examples/common/paths_apart.cpp — see paths_apart.hpp.
#include "examples/common/paths_apart.hpp"

#include <fmt/format.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include <optional>
#include <system_error>
#include <utility>

#include "examples/common/cli.hpp"
#include "tensor/printable.hpp"

namespace attograd::cli {

namespace fs = std::filesystem;

namespace {

// Paths quoted in a message: long enough to recognise, short however long.
constexpr size_t kQuotedPathChars = 160;

std::string quoted(const fs::path& path) { return printable(path.string(), kQuotedPathChars); }

// What decides whether two paths are one file: the device and inode the path
// reaches (links followed) when it exists, else its resolved absolute form.
struct FileKey {
  std::optional<std::pair<dev_t, ino_t>> inode;
  fs::path resolved;
};

FileKey key_of(const fs::path& path) {
  FileKey key;
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) key.inode = std::pair{info.st_dev, info.st_ino};
  std::error_code error;
  const fs::path absolute = fs::absolute(path, error).lexically_normal();
  key.resolved = fs::weakly_canonical(absolute, error);
  if (error) key.resolved = absolute;
  return key;
}

bool same_file(const FileKey& a, const FileKey& b) {
  if (a.inode && b.inode) return *a.inode == *b.inode;
  return !a.inode && !b.inode && a.resolved == b.resolved;
}

// Whether `file` is, or will be, one of the files matching `pattern` in
// `folder`: its resolved form lies in the folder under a matching name, or it
// is the same file as one of the folder's matching entries (a hard link).
bool among_matching(const fs::path& file, const fs::path& folder, const std::string& pattern) {
  const FileKey target = key_of(file);
  const FileKey place = key_of(folder);
  const fs::path name = target.resolved.filename();
  if (same_file(key_of(target.resolved.parent_path()), place) &&
      ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0) {
    return true;
  }
  if (!target.inode || !place.inode) return false;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, error)) {
    const std::string entry_name = entry.path().filename().string();
    if (::fnmatch(pattern.c_str(), entry_name.c_str(), 0) != 0) continue;
    if (same_file(key_of(entry.path()), target)) return true;
  }
  return false;
}

}  // namespace

PathsApart& PathsApart::reads(std::string flag, fs::path file) {
  if (!file.empty()) inputs_.push_back({std::move(flag), std::move(file), "", ""});
  return *this;
}

PathsApart& PathsApart::writes(std::string flag, fs::path file) {
  if (!file.empty()) outputs_.push_back({std::move(flag), std::move(file), "", ""});
  return *this;
}

PathsApart& PathsApart::writes_next(std::string flag, fs::path file, std::string continues) {
  if (!file.empty()) {
    outputs_.push_back({std::move(flag), std::move(file), "", std::move(continues)});
  }
  return *this;
}

PathsApart& PathsApart::writes_matching(std::string flag, fs::path folder, std::string pattern) {
  if (!folder.empty()) {
    outputs_.push_back({std::move(flag), std::move(folder), std::move(pattern), ""});
  }
  return *this;
}

void PathsApart::check() const {
  for (const Use& output : outputs_) {
    for (const Use& input : inputs_) {
      if (output.pattern.empty()) {
        if (input.flag == output.continues) continue;
        if (!same_file(key_of(output.path), key_of(input.path))) continue;
        throw UsageError(fmt::format(
            "{} '{}' is an input ({}{}): writing it would replace it; give {} another path",
            output.flag, quoted(output.path), input.flag,
            input.path == output.path ? "" : fmt::format(" '{}'", quoted(input.path)),
            output.flag));
      }
      if (among_matching(input.path, output.path, output.pattern)) {
        throw UsageError(fmt::format(
            "{} '{}' would write its {} files over '{}', an input ({}); give {} another folder",
            output.flag, quoted(output.path), output.pattern, quoted(input.path), input.flag,
            output.flag));
      }
    }
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    for (size_t j = i + 1; j < outputs_.size(); ++j) {
      const Use& a = outputs_[i];
      const Use& b = outputs_[j];
      bool clash = false;
      if (a.pattern.empty() && b.pattern.empty()) {
        clash = same_file(key_of(a.path), key_of(b.path));
      } else if (!a.pattern.empty() && !b.pattern.empty()) {
        // Two families of names learnt while running may meet in one folder.
        clash = same_file(key_of(a.path), key_of(b.path));
      } else {
        const Use& family = a.pattern.empty() ? b : a;
        const Use& file = a.pattern.empty() ? a : b;
        if (among_matching(file.path, family.path, family.pattern)) {
          throw UsageError(fmt::format(
              "{} '{}' is one of the {} files {} '{}' writes: one would overwrite the other; "
              "give them different paths",
              file.flag, quoted(file.path), family.pattern, family.flag, quoted(family.path)));
        }
      }
      if (clash) {
        throw UsageError(fmt::format(
            "{} '{}' and {} '{}' are one {}: one would overwrite the other; give them different "
            "paths",
            a.flag, quoted(a.path), b.flag, quoted(b.path), a.pattern.empty() ? "file" : "folder"));
      }
    }
  }
}

}  // namespace attograd::cli
