// nn/safetensors_header.hpp — the bounded parse of a safetensors header, and
// the helpers that keep every message about a hostile file short and printable.
//
// A header is untrusted text of up to kMaxHeaderBytes. Before a JSON parser
// sees it, one linear scan over its bytes checks the structure the format
// allows (nn/safetensors.hpp): exactly one JSON object, then only spaces; no
// NUL byte; nesting at most kMaxDepth deep; at most kMaxEntries top-level
// entries and kMaxValues values in all. Only then is it parsed, in one linear
// pass that also refuses a key given twice. Every refusal is an Error that
// names the file and the byte offset:
//
//   read_safetensors: 'model.safetensors': the header nests 5 levels deep at
//   file byte 31; a safetensors header needs 3 (at most 4 are read)
//
// docs/checkpoints.md lists the limits and the messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "nn/safetensors_messages.hpp"

namespace attograd::nn::safetensors_limits {

// The reference implementation refuses larger headers; so do we, so that a
// corrupt length never makes us allocate gigabytes.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// Object -> entry -> shape is 3 levels; one spare for tools that nest metadata.
inline constexpr int kMaxDepth = 4;
// Tensors (and the metadata object) in one file. Large language models keep a
// few thousand tensors per file; a header of more is refused unparsed.
inline constexpr size_t kMaxEntries = 65'536;
// Values of any kind (strings, numbers, arrays, objects) in the whole header:
// bounds the parsed header's memory to a small multiple of its bytes.
inline constexpr size_t kMaxValues = 16 * kMaxEntries;
// Dimensions of one tensor.
inline constexpr size_t kMaxDims = 64;

}  // namespace attograd::nn::safetensors_limits

namespace attograd::nn {

// What the byte scan and the parse did, for tests that count work instead of
// timing it.
struct HeaderScan {
  size_t bytes_scanned = 0;  // bytes the structural scan looked at
  size_t entries = 0;        // top-level entries counted (up to the first refused)
  size_t values = 0;         // values counted
};

// Checks and parses the header `text`, which starts at file byte 8 of `file`
// (the name used in messages). Returns a JSON object; throws Error otherwise.
// `scan`, when given, receives the work done even when the header is refused.
nlohmann::json parse_safetensors_header(std::string_view file, std::string_view text,
                                        HeaderScan* scan = nullptr);

}  // namespace attograd::nn
