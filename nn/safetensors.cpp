// nn/safetensors.cpp — the safetensors writer and its validating reader.
//
// The reader trusts nothing: a checkpoint may be truncated by a full disk,
// written by another tool, or not a checkpoint at all. It checks the file in
// the order the bytes come — length, header, entries, data — and reports the
// header's problems all together, each with the file offsets involved.
#include "nn/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "nn/safetensors_header.hpp"
#include "tensor/atomic_file.hpp"
#include "tensor/error.hpp"
#include "tensor/input_file.hpp"

namespace attograd::nn {

// Values are copied byte for byte between memory and the file.
static_assert(std::endian::native == std::endian::little,
              "safetensors stores little-endian values and this code copies them as they are");

namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr uint64_t kLengthBytes = 8;  // the header length that opens every file
using safetensors_limits::kMaxHeaderBytes;
constexpr std::string_view kMetadataKey = "__metadata__";

// Every dtype the format defines; attograd reads two of them.
constexpr std::string_view kKnownDtypes[] = {"BOOL", "U8",  "I8",  "F8_E5M2", "F8_E4M3",
                                             "I16",  "U16", "F16", "BF16",    "I32",
                                             "U32",  "F32", "F64", "I64",     "U64"};

uint64_t bytes_per_value(std::string_view dtype) { return dtype == "F64" ? 8 : 4; }

uint64_t read_u64_little_endian(const char* bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}

void append_u64_little_endian(std::string& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// A value from the header as a message shows it: its JSON, cut short.
std::string brief(const Json& value) { return printable(value.dump()); }

// The file byte `offset` bytes into the data section, which starts at file
// byte `data_start`; an offset too large for the sum is shown as one.
std::string file_byte(uint64_t data_start, uint64_t offset) {
  if (offset > std::numeric_limits<uint64_t>::max() - data_start) {
    return fmt::format("{} + {}", data_start, offset);
  }
  return fmt::format("{}", data_start + offset);
}

// "[2, 3]" — shapes are shown as the header writes them.
std::string json_shape(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// One tensor as the header describes it; offsets count from the data section.
struct Entry {
  std::string name;
  std::string dtype;
  Shape shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

// Each check below looks at one field of a header entry, appends what is
// wrong with it to `problems` (as "tensor '<name>': …") and fills its part of
// `entry` when nothing is.
class EntryChecker {
 public:
  EntryChecker(const std::string& name, std::vector<std::string>& problems)
      : name_(printable(name)), problems_(problems) {}

  void problem(const std::string& text) {
    problems_.push_back(fmt::format("tensor '{}': {}", name_, text));
  }

  // "dtype": a string naming a dtype attograd reads.
  void dtype(const Json& dtype, Entry& entry) {
    if (!dtype.is_string()) {
      problem(fmt::format("\"dtype\" must be a string, found {}", dtype.type_name()));
      return;
    }
    entry.dtype = dtype.get<std::string>();
    const bool known = std::find(std::begin(kKnownDtypes), std::end(kKnownDtypes), entry.dtype) !=
                       std::end(kKnownDtypes);
    if (!known) {
      problem(fmt::format("unknown dtype '{}' (safetensors defines {}; attograd reads F32 and F64)",
                          printable(entry.dtype), fmt::join(kKnownDtypes, ", ")));
    } else if (entry.dtype != "F32" && entry.dtype != "F64") {
      problem(fmt::format("dtype '{}' is not supported (attograd reads F32 and F64)", entry.dtype));
    }
  }

  // "shape": non-negative integers (the parser keeps those as unsigned) that
  // each fit an int64_t.
  void shape(const Json& shape, Entry& entry) {
    const bool shape_ok =
        shape.is_array() && std::all_of(shape.begin(), shape.end(), [](const Json& size) {
          return size.is_number_unsigned() &&
                 size.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max());
        });
    if (!shape_ok) {
      problem(
          fmt::format("\"shape\" must be a list of non-negative integers, found {}", brief(shape)));
      return;
    }
    if (shape.size() > safetensors_limits::kMaxDims) {
      problem(fmt::format("\"shape\" has {} dimensions; attograd reads at most {}", shape.size(),
                          safetensors_limits::kMaxDims));
      return;
    }
    for (const Json& size : shape) entry.shape.push_back(size.get<int64_t>());
  }

  // "data_offsets": [begin, end] with begin <= end, inside the data section.
  void offsets(const Json& offsets, uint64_t data_start, uint64_t data_size, Entry& entry) {
    const bool offsets_ok = offsets.is_array() && offsets.size() == 2 &&
                            offsets[0].is_number_unsigned() && offsets[1].is_number_unsigned() &&
                            offsets[0].get<uint64_t>() <= offsets[1].get<uint64_t>();
    if (!offsets_ok) {
      problem(fmt::format("\"data_offsets\" must be [begin, end] with 0 <= begin <= end, found {}",
                          brief(offsets)));
      return;
    }
    entry.begin = offsets[0].get<uint64_t>();
    entry.end = offsets[1].get<uint64_t>();
    if (entry.end > data_size) {
      problem(fmt::format(
          "data_offsets [{}, {}] reach file byte {}, but the file ends at byte {} (the file is "
          "truncated, or the offsets are wrong)",
          entry.begin, entry.end, file_byte(data_start, entry.end), data_start + data_size));
    }
  }

  // The offsets hold exactly numel · bytes per value, refusing sizes that
  // overflow 64 bits. Returns whether they do.
  bool byte_count(const Entry& entry, uint64_t data_start) {
    uint64_t needed = bytes_per_value(entry.dtype);
    for (int64_t size : entry.shape) {
      const auto factor = static_cast<uint64_t>(size);
      if (factor != 0 && needed > std::numeric_limits<uint64_t>::max() / factor) {
        problem(fmt::format("shape {} is too large", json_shape(entry.shape)));
        return false;
      }
      needed *= factor;
    }
    if (entry.end - entry.begin != needed) {
      problem(fmt::format(
          "data_offsets [{}, {}] (file bytes {}..{}) hold {} bytes, but shape {} of {} needs {}",
          entry.begin, entry.end, data_start + entry.begin, data_start + entry.end,
          entry.end - entry.begin, json_shape(entry.shape), entry.dtype, needed));
      return false;
    }
    return true;
  }

 private:
  std::string name_;
  std::vector<std::string>& problems_;
};

// Checks one header entry against the data section [data_start, data_start +
// data_size) of the file. Appends what is wrong to `problems`; returns the
// entry only when nothing is.
std::optional<Entry> parse_entry(const std::string& name, const Json& value, uint64_t data_start,
                                 uint64_t data_size, std::vector<std::string>& problems) {
  const size_t problems_before = problems.size();
  EntryChecker checker(name, problems);
  if (!value.is_object()) {
    checker.problem(fmt::format("expected an object with dtype, shape and data_offsets, found {}",
                                value.type_name()));
    return std::nullopt;
  }
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!value.contains(field)) checker.problem(fmt::format("the \"{}\" field is missing", field));
  }
  if (problems.size() != problems_before) return std::nullopt;

  Entry entry;
  entry.name = name;
  checker.dtype(value["dtype"], entry);
  checker.shape(value["shape"], entry);
  checker.offsets(value["data_offsets"], data_start, data_size, entry);
  if (problems.size() != problems_before) return std::nullopt;
  if (!checker.byte_count(entry, data_start)) return std::nullopt;
  return entry;
}

// The tensors must tile the data section: sorted by offset, each begins where
// the previous one ended and the last ends at the end of the file.
void check_tiling(std::vector<Entry>& entries, uint64_t data_start, uint64_t data_size,
                  std::vector<std::string>& problems) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  uint64_t position = 0;
  const Entry* previous = nullptr;
  for (const Entry& entry : entries) {
    if (entry.begin < position) {
      problems.push_back(fmt::format("tensors '{}' (file bytes {}..{}) and '{}' ({}..{}) overlap",
                                     printable(previous->name), data_start + previous->begin,
                                     data_start + previous->end, printable(entry.name),
                                     data_start + entry.begin, data_start + entry.end));
    } else if (entry.begin > position) {
      problems.push_back(fmt::format("file bytes {}..{} (before tensor '{}') belong to no tensor",
                                     data_start + position, data_start + entry.begin,
                                     printable(entry.name)));
    }
    if (entry.end >= position) {
      position = entry.end;
      previous = &entry;
    }
  }
  if (position < data_size) {
    problems.push_back(fmt::format("file bytes {}..{} (the end of the file) belong to no tensor",
                                   data_start + position, data_start + data_size));
  }
}

// Copies `count` little-endian values of type Stored from `bytes` into `out`.
template <typename Stored>
void convert_values(real* out, const char* bytes, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    Stored value;
    std::memcpy(&value, bytes + i * int64_t(sizeof(Stored)), sizeof(Stored));
    out[i] = static_cast<real>(value);
  }
}

}  // namespace

void write_safetensors(const std::filesystem::path& path, const TensorFile& file) {
  std::set<std::string> names;
  for (const auto& [name, tensor] : file.tensors) {
    check(!name.empty() && name != kMetadataKey,
          "write_safetensors: '{}': tensor name '{}' is not allowed (names must be non-empty "
          "and not \"__metadata__\")",
          path.string(), name);
    check(names.insert(name).second,
          "write_safetensors: '{}': two tensors are named '{}'; names must be unique",
          path.string(), name);
    check(tensor.defined(), "write_safetensors: '{}': tensor '{}' is undefined", path.string(),
          name);
  }

  // Header: metadata first, then the tensors in data order.
  OrderedJson header = OrderedJson::object();
  if (!file.metadata.empty()) header[std::string(kMetadataKey)] = file.metadata;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : file.tensors) {
    const uint64_t size = uint64_t(tensor.numel()) * sizeof(float);
    header[name] = {{"dtype", "F32"},
                    {"shape", tensor.shape().to_vector()},
                    {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const OrderedJson::type_error& error) {
    fail("write_safetensors: '{}': a tensor name or metadata string is not valid UTF-8 ({})",
         path.string(), error.what());
  }
  text.append((kLengthBytes - text.size() % kLengthBytes) % kLengthBytes, ' ');

  std::string bytes;
  bytes.reserve(kLengthBytes + text.size() + offset);
  append_u64_little_endian(bytes, text.size());
  bytes += text;
  for (const auto& [name, tensor] : file.tensors) {
    const Tensor values = tensor.contiguous_data();
    if constexpr (std::is_same_v<real, float>) {
      bytes.append(reinterpret_cast<const char*>(values.data()),
                   size_t(values.numel()) * sizeof(float));
    } else {
      for (int64_t i = 0; i < values.numel(); ++i) {
        const auto value = static_cast<float>(values.data()[i]);
        bytes.append(reinterpret_cast<const char*>(&value), sizeof(float));
      }
    }
  }
  write_file_atomically(path, bytes);
}

namespace {

// Where the bytes of a file come from: the file itself, read piece by piece
// (so a huge file or /dev/zero is never read whole), or memory.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // Reads bytes [offset, offset + count), which the caller has checked lie
  // inside size().
  virtual void read(uint64_t offset, char* out, uint64_t count) = 0;
};

class FileSource : public ByteSource {
 public:
  // Only a regular file (tensor/input_file.hpp): a device or a pipe has no
  // size to check the header length against, and may never end.
  explicit FileSource(const std::filesystem::path& path)
      : file_(path, {"read_safetensors", "pass the path of a .safetensors file"}) {}
  uint64_t size() const override { return file_.size(); }
  void read(uint64_t offset, char* out, uint64_t count) override {
    file_.read_at(offset, out, count);
  }

 private:
  InputFile file_;
};

class MemorySource : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  void read(uint64_t offset, char* out, uint64_t count) override {
    std::memcpy(out, bytes_.data() + offset, count);
  }

 private:
  std::string_view bytes_;
};

// The checked header: its entries (sound and tiling the data section) and
// where the data section starts.
struct CheckedHeader {
  Metadata metadata;
  std::vector<Entry> entries;  // in data order
  uint64_t data_start = 0;
};

CheckedHeader read_header(ByteSource& source, const std::string& file) {
  const uint64_t file_size = source.size();
  check(file_size >= kLengthBytes,
        "read_safetensors: '{}' is {} bytes long; a safetensors file starts with an 8-byte "
        "header length (the file is truncated or not a safetensors file)",
        file, file_size);
  char length_bytes[kLengthBytes];
  source.read(0, length_bytes, kLengthBytes);
  const uint64_t header_size = read_u64_little_endian(length_bytes);
  check(header_size <= file_size - kLengthBytes,
        "read_safetensors: '{}': the header length at byte 0 says {} bytes, but only {} bytes "
        "follow it (the file is truncated or not a safetensors file)",
        file, header_size, file_size - kLengthBytes);
  check(header_size <= kMaxHeaderBytes,
        "read_safetensors: '{}': the header length at byte 0 says {} bytes, more than the "
        "format's limit of {} (the file is damaged or not a safetensors file)",
        file, header_size, kMaxHeaderBytes);
  std::string text(header_size, '\0');
  source.read(kLengthBytes, text.data(), header_size);

  CheckedHeader checked;
  checked.data_start = kLengthBytes + header_size;
  const uint64_t data_size = file_size - checked.data_start;
  const Json header = parse_safetensors_header(file, text);
  std::vector<std::string> problems;
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) {
      const bool strings_only =
          value.is_object() && std::all_of(value.begin(), value.end(),
                                           [](const Json& item) { return item.is_string(); });
      if (strings_only) {
        checked.metadata = value.get<Metadata>();
      } else {
        problems.push_back(
            fmt::format("\"__metadata__\" must map strings to strings, found {}", brief(value)));
      }
      continue;
    }
    if (auto entry = parse_entry(name, value, checked.data_start, data_size, problems)) {
      checked.entries.push_back(std::move(*entry));
    }
  }
  // Gaps and overlaps only mean something once every entry is sound.
  if (problems.empty()) check_tiling(checked.entries, checked.data_start, data_size, problems);
  check(problems.empty(),
        "read_safetensors: '{}': {} problem{} in the header (file bytes {}..{}):{}", file,
        problems.size(), problems.size() == 1 ? "" : "s", kLengthBytes, checked.data_start,
        problem_lines(problems));
  return checked;
}

// Values of one tensor are read in pieces of this many bytes, so converting
// F64 (or F32 into a double build) needs no second copy of the whole tensor.
constexpr uint64_t kChunkBytes = uint64_t(1) << 20;

Tensor read_values(ByteSource& source, const std::string& file, const Entry& entry,
                   uint64_t data_start) {
  Tensor tensor;
  try {
    tensor = Tensor::empty(entry.shape);
  } catch (const std::bad_alloc&) {
    fail("read_safetensors: '{}': not enough memory for tensor '{}' of shape {} ({} bytes)", file,
         printable(entry.name), json_shape(entry.shape), entry.end - entry.begin);
  }
  const uint64_t value_bytes = bytes_per_value(entry.dtype);
  const uint64_t values_per_chunk = kChunkBytes / value_bytes;
  std::string chunk;
  for (uint64_t first = 0; first < uint64_t(tensor.numel()); first += values_per_chunk) {
    const uint64_t count = std::min(values_per_chunk, uint64_t(tensor.numel()) - first);
    chunk.resize(count * value_bytes);
    source.read(data_start + entry.begin + first * value_bytes, chunk.data(), chunk.size());
    real* out = tensor.data() + first;
    if (entry.dtype == "F32") {
      convert_values<float>(out, chunk.data(), int64_t(count));
    } else {
      convert_values<double>(out, chunk.data(), int64_t(count));
    }
  }
  return tensor;
}

TensorFile read_tensor_file(ByteSource& source, const std::string& file) {
  const CheckedHeader header = read_header(source, file);
  TensorFile result;
  result.metadata = header.metadata;
  for (const Entry& entry : header.entries) {
    result.tensors.emplace_back(entry.name, read_values(source, file, entry, header.data_start));
  }
  return result;
}

}  // namespace

TensorFile read_safetensors(const std::filesystem::path& path) {
  FileSource source(path);
  return read_tensor_file(source, printable(path.string(), 300));
}

TensorFile read_safetensors_bytes(std::string_view bytes, const std::string& name) {
  MemorySource source(bytes);
  return read_tensor_file(source, printable(name, 300));
}

TensorFileHeader read_safetensors_header(const std::filesystem::path& path) {
  FileSource source(path);
  const CheckedHeader header = read_header(source, printable(path.string(), 300));
  TensorFileHeader result;
  result.metadata = header.metadata;
  for (const Entry& entry : header.entries) {
    result.tensors.push_back({entry.name, entry.dtype, entry.shape});
  }
  return result;
}

}  // namespace attograd::nn
