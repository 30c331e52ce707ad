// nn/safetensors.hpp — named tensors in the safetensors file format.
//
// safetensors (https://github.com/huggingface/safetensors) is the format
// PyTorch and Hugging Face use for weights: no code runs when it is read, and
// `safetensors.torch.load_file` opens our checkpoints as they are. A file is
//
//   bytes 0..8        N, the header length, a little-endian uint64
//   bytes 8..8+N      a JSON object, padded with spaces so that 8 + N is a
//                     multiple of 8:
//                       {"__metadata__": {"iteration": "1200"},
//                        "hidden.weight": {"dtype": "F32", "shape": [32, 1],
//                                          "data_offsets": [0, 128]}, …}
//   bytes 8+N..end    the data section: each tensor's values, row-major and
//                     little-endian, at [begin, end) counted from 8+N. The
//                     tensors tile the section exactly: no gaps, no overlaps.
//
// attograd always writes F32 (a double build converts), and reads F32 and F64.
// Reading checks everything a damaged or foreign file can get wrong and names
// the file and the byte offset in the message; docs/checkpoints.md lists the
// errors. Writing goes through a temporary file and a rename, so a crash never
// leaves a half-written file behind.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensor/tensor.hpp"

namespace attograd::nn {

// Free-form string pairs stored with the tensors ("__metadata__" in the header):
// an iteration count, a vocabulary, the command line of a run.
using Metadata = std::map<std::string, std::string>;

struct TensorFile {
  std::vector<std::pair<std::string, Tensor>> tensors;  // in the file's data order
  Metadata metadata;
};

// Writes `file` to `path` atomically. Names must be unique, non-empty and not
// "__metadata__". Throws Error naming the path if the folder is missing or not
// writable; an existing file at `path` is then left as it was.
void write_safetensors(const std::filesystem::path& path, const TensorFile& file);

// Reads and validates a whole file. The tensors are fresh, contiguous and do
// not require grad. Throws Error naming the file, the byte offset and the
// problems found in the header (at most 20 listed). Only the header is held
// in memory as bytes: the 8-byte length is checked against the file's size
// before anything else is read, the header against the limits in
// nn/safetensors_header.hpp, and the tensors are read straight into place.
// Only regular files are read (not devices or pipes).
TensorFile read_safetensors(const std::filesystem::path& path);

// The same for a file already in memory; `name` stands for it in messages.
TensorFile read_safetensors_bytes(std::string_view bytes, const std::string& name);

// One tensor as the header describes it.
struct TensorInfo {
  std::string name;
  std::string dtype;  // "F32" or "F64"
  Shape shape;
};
struct TensorFileHeader {
  std::vector<TensorInfo> tensors;  // in the file's data order
  Metadata metadata;
};

// Reads and validates the header only (all the checks of read_safetensors
// but the values): what a file holds, without reading its data.
TensorFileHeader read_safetensors_header(const std::filesystem::path& path);

}  // namespace attograd::nn
