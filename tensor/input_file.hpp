// tensor/input_file.hpp — open a file to read as data only if it is a
// regular file.
//
// A path from a flag or from a checkpoint's metadata may name anything:
// /dev/zero (endless bytes, memory fills), /dev/full, a FIFO (an open blocks
// until someone writes), a socket, a folder. Every reader of data — the
// sentence pairs (models/text/pairs.hpp), safetensors files
// (nn/safetensors.hpp) — opens its file through InputFile, which refuses
// anything but a regular file in one line naming the path, before a byte is
// read and without ever blocking: the file is opened with O_NONBLOCK (so a
// FIFO's open returns at once) and checked with fstat on the open
// descriptor, so the file checked is the file read.
//
//   InputFile file("data/eng-fra.tsv", {"read_pairs", "pass a TSV file", 256 << 20});
//   std::istream& in = file.stream();      // read it line by line, or
//   file.read_at(offset, buffer, count);   // piece by piece
//
// Refusals (attograd::Error), each "<reader>: '<path>' …" with the path
// escaped and cut (tensor/printable.hpp):
//   … does not exist (<remedy>)
//   … is a folder, not a file (<remedy>)
//   … is a character device, not a regular file; only regular files are read (<remedy>)
//   … is N bytes, more than the limit of M bytes for this reader (<remedy>)
#pragma once

#include <cstdint>
#include <filesystem>
#include <istream>
#include <memory>
#include <string>

namespace attograd {

// Who reads the file, and what to tell the user when it is refused.
struct InputFileRules {
  std::string reader;  // "read_pairs", named first in every message
  std::string remedy;  // "pass a TSV file of english<TAB>french lines"
  // Larger files are refused (0: no limit); a reader that keeps the whole
  // file in memory sets one.
  std::uint64_t max_bytes = 0;
};

class InputFile {
 public:
  // Opens `path` for reading; throws attograd::Error (see the top) unless it
  // is a regular file that can be opened.
  InputFile(const std::filesystem::path& path, InputFileRules rules);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // The size when the file was opened.
  std::uint64_t size() const { return size_; }
  // The path, escaped and cut for a message.
  const std::string& shown_path() const { return shown_path_; }

  // Reads exactly bytes [offset, offset + count); throws Error naming the
  // file if it has shrunk or the disk reports an error.
  void read_at(std::uint64_t offset, char* out, std::uint64_t count);

  // The file from its start as a stream (for sequential reading; do not mix
  // with read_at). A read error sets the stream's badbit.
  std::istream& stream();

 private:
  class Buffer;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::string shown_path_;
  std::string reader_;
  std::unique_ptr<Buffer> buffer_;
  std::unique_ptr<std::istream> stream_;
};

}  // namespace attograd
