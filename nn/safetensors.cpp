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
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "tensor/atomic_file.hpp"
#include "tensor/error.hpp"

namespace attograd::nn {

// Values are copied byte for byte between memory and the file.
static_assert(std::endian::native == std::endian::little,
              "safetensors stores little-endian values and this code copies them as they are");

namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr uint64_t kLengthBytes = 8;  // the header length that opens every file
// The reference implementation refuses larger headers; so do we, so that a
// corrupt length never makes us allocate gigabytes.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
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

// "[2, 3]" — shapes are shown as the header writes them.
std::string json_shape(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::string read_whole_file(const std::filesystem::path& path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  check(std::filesystem::exists(status), "read_safetensors: '{}' does not exist", path.string());
  check(!std::filesystem::is_directory(status), "read_safetensors: '{}' is a folder, not a file",
        path.string());
  std::ifstream in(path, std::ios::binary);
  check(in.is_open(), "read_safetensors: cannot open '{}' for reading (check its permissions)",
        path.string());
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  check(!in.bad(), "read_safetensors: reading '{}' failed part way", path.string());
  return bytes;
}

// Parses the header, refusing a key that appears twice in one object: JSON
// allows it, but the parser would silently keep only the last one.
Json parse_header(const std::filesystem::path& path, std::string_view text) {
  std::vector<std::set<std::string>> keys_by_depth;
  std::optional<std::string> duplicate;
  auto watch_keys = [&](int, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) keys_by_depth.emplace_back();
    if (event == Json::parse_event_t::object_end) keys_by_depth.pop_back();
    if (event == Json::parse_event_t::key && !keys_by_depth.back().insert(parsed).second) {
      if (!duplicate) duplicate = parsed.get<std::string>();
    }
    return true;
  };
  Json header;
  try {
    header = Json::parse(text.begin(), text.end(), watch_keys);
  } catch (const Json::parse_error& error) {
    // error.byte counts the characters read, so the culprit is the last of them.
    fail(
        "read_safetensors: '{}': the header (file bytes {}..{}) is not valid JSON; the parser "
        "stopped at file byte {}: {}",
        path.string(), kLengthBytes, kLengthBytes + text.size(),
        kLengthBytes + (error.byte > 0 ? error.byte - 1 : 0), error.what());
  }
  check(!duplicate, "read_safetensors: '{}': the header names '{}' twice", path.string(),
        duplicate.value_or(""));
  check(header.is_object(),
        "read_safetensors: '{}': the header (file bytes {}..{}) must be a JSON object, found {}",
        path.string(), kLengthBytes, kLengthBytes + text.size(), header.type_name());
  return header;
}

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
      : name_(name), problems_(problems) {}

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
                          entry.dtype, fmt::join(kKnownDtypes, ", ")));
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
          fmt::format("\"shape\" must be a list of non-negative integers, found {}", shape.dump()));
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
                          offsets.dump()));
      return;
    }
    entry.begin = offsets[0].get<uint64_t>();
    entry.end = offsets[1].get<uint64_t>();
    if (entry.end > data_size) {
      problem(fmt::format(
          "data_offsets [{}, {}] reach file byte {}, but the file ends at byte {} (the file is "
          "truncated, or the offsets are wrong)",
          entry.begin, entry.end, data_start + entry.end, data_start + data_size));
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
  const std::string& name_;
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
                                     previous->name, data_start + previous->begin,
                                     data_start + previous->end, entry.name,
                                     data_start + entry.begin, data_start + entry.end));
    } else if (entry.begin > position) {
      problems.push_back(fmt::format("file bytes {}..{} (before tensor '{}') belong to no tensor",
                                     data_start + position, data_start + entry.begin, entry.name));
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

TensorFile read_safetensors(const std::filesystem::path& path) {
  const std::string bytes = read_whole_file(path);
  const uint64_t file_size = bytes.size();
  check(file_size >= kLengthBytes,
        "read_safetensors: '{}' is {} bytes long; a safetensors file starts with an 8-byte "
        "header length (the file is truncated or not a safetensors file)",
        path.string(), file_size);
  const uint64_t header_size = read_u64_little_endian(bytes.data());
  check(header_size <= file_size - kLengthBytes,
        "read_safetensors: '{}': the header length at byte 0 says {} bytes, but only {} bytes "
        "follow it (the file is truncated or not a safetensors file)",
        path.string(), header_size, file_size - kLengthBytes);
  check(header_size <= kMaxHeaderBytes,
        "read_safetensors: '{}': the header length at byte 0 says {} bytes, more than the "
        "format's limit of {} (the file is damaged or not a safetensors file)",
        path.string(), header_size, kMaxHeaderBytes);
  const uint64_t data_start = kLengthBytes + header_size;
  const uint64_t data_size = file_size - data_start;

  const Json header = parse_header(path, std::string_view(bytes).substr(kLengthBytes, header_size));
  TensorFile file;
  std::vector<std::string> problems;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) {
      const bool strings_only =
          value.is_object() && std::all_of(value.begin(), value.end(),
                                           [](const Json& item) { return item.is_string(); });
      if (strings_only) {
        file.metadata = value.get<Metadata>();
      } else {
        problems.push_back(
            fmt::format("\"__metadata__\" must map strings to strings, found {}", value.dump()));
      }
      continue;
    }
    if (auto entry = parse_entry(name, value, data_start, data_size, problems)) {
      entries.push_back(std::move(*entry));
    }
  }
  // Gaps and overlaps only mean something once every entry is sound.
  if (problems.empty()) check_tiling(entries, data_start, data_size, problems);
  check(problems.empty(),
        "read_safetensors: '{}': {} problem{} in the header (file bytes {}..{}):\n  {}",
        path.string(), problems.size(), problems.size() == 1 ? "" : "s", kLengthBytes, data_start,
        fmt::join(problems, "\n  "));

  for (const Entry& entry : entries) {
    Tensor tensor = Tensor::empty(entry.shape);
    const char* source = bytes.data() + data_start + entry.begin;
    if (entry.dtype == "F32") {
      convert_values<float>(tensor.data(), source, tensor.numel());
    } else {
      convert_values<double>(tensor.data(), source, tensor.numel());
    }
    file.tensors.emplace_back(entry.name, std::move(tensor));
  }
  return file;
}

}  // namespace attograd::nn
