// nn/safetensors_header.cpp — the structural scan and the linear parse of a
// safetensors header (see safetensors_header.hpp), and the message helpers.
#include "nn/safetensors_header.hpp"

#include <fmt/format.h>

#include <exception>
#include <new>
#include <set>

#include "tensor/error.hpp"

namespace attograd::nn {

namespace {

using Json = nlohmann::json;
using namespace safetensors_limits;

constexpr uint64_t kHeaderStart = 8;  // the header follows the 8-byte length

// What a JSON value starting with byte `c` is, for "found array".
std::string value_kind(char c) {
  switch (c) {
    case '[':
      return "array";
    case '"':
      return "string";
    case 't':
    case 'f':
      return "boolean";
    case 'n':
      return "null";
    default:
      if (c == '-' || (c >= '0' && c <= '9')) return "number";
      return fmt::format("the byte '{}'", printable(std::string_view(&c, 1)));
  }
}

// The scan over the header's bytes. It follows strings (and their escapes) so
// that brackets and commas inside them are not counted; everything else it
// leaves to the parser, which runs only if the scan passes.
class StructureScan {
 public:
  StructureScan(std::string_view file, std::string_view text, HeaderScan& scan)
      : file_(file), text_(text), scan_(scan) {}

  void run() {
    check(!text_.empty(),
          "read_safetensors: '{}': the header is empty (0 bytes at file byte 8); it must be a "
          "JSON object",
          file_);
    check(text_[0] == '{',
          "read_safetensors: '{}': the header (file bytes 8..{}) must be a JSON object, found {} "
          "at file byte 8",
          file_, kHeaderStart + text_.size(), value_kind(text_[0]));
    const size_t last = text_.find_last_not_of(' ');  // the object's last byte
    for (size_t i = 0; i < text_.size(); ++i) {
      scan_.bytes_scanned = i + 1;
      const char c = text_[i];
      check(c != '\0',
            "read_safetensors: '{}': file byte {} inside the header is a NUL byte (a header is "
            "JSON text padded with spaces; the file is damaged or not a safetensors file)",
            file_, kHeaderStart + i);
      if (in_string_) {
        if (escaped_) {
          escaped_ = false;
        } else if (c == '\\') {
          escaped_ = true;
        } else if (c == '"') {
          in_string_ = false;
        }
        continue;
      }
      if (c == '"') {
        in_string_ = true;
      } else if (c == '{' || c == '[') {
        open(i);
      } else if (c == '}' || c == ']') {
        if (--depth_ == 0) {
          refuse_trailing_bytes(i, last);
          return;
        }
      } else if (c == ',') {
        separate(i);
      }
    }
  }

 private:
  void open(size_t i) {
    ++depth_;
    count_value(i);
    check(depth_ <= kMaxDepth,
          "read_safetensors: '{}': the header nests {} levels deep at file byte {}; a "
          "safetensors header needs 3 (at most {} are read)",
          file_, depth_, kHeaderStart + i, kMaxDepth);
  }

  void separate(size_t i) {
    count_value(i);
    if (depth_ != 1) return;
    ++scan_.entries;
    check(scan_.entries < kMaxEntries,
          "read_safetensors: '{}': the header has more than {} entries (the {}th starts at file "
          "byte {}); attograd reads at most {} tensors from one file",
          file_, kMaxEntries, kMaxEntries + 1, kHeaderStart + i + 1, kMaxEntries);
  }

  void count_value(size_t i) {
    ++scan_.values;
    check(scan_.values <= kMaxValues,
          "read_safetensors: '{}': the header holds more than {} values (at file byte {}); a "
          "safetensors header needs about 8 per tensor",
          file_, kMaxValues, kHeaderStart + i);
  }

  // The object closed at `i`: everything after it must be padding.
  void refuse_trailing_bytes(size_t i, size_t last) const {
    if (i == last) return;
    const size_t first = text_.find_first_not_of(' ', i + 1);
    fail(
        "read_safetensors: '{}': the header's JSON object ends at file byte {}, but file byte {} "
        "after it is '{}', not a space (a header is one JSON object padded with spaces; the file "
        "is damaged or not a safetensors file)",
        file_, kHeaderStart + i, kHeaderStart + first, printable(text_.substr(first, 1)));
  }

  std::string_view file_;
  std::string_view text_;
  HeaderScan& scan_;
  int depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
};

// nlohmann's own DOM builder, told not to throw, that also refuses a key
// given twice in one object (JSON allows it, but the parser would keep only
// the last) and records where the parser stopped. One pass, no callback that
// revisits the values parsed so far.
class CheckedDomParser : public nlohmann::detail::json_sax_dom_parser<Json> {
  using Base = nlohmann::detail::json_sax_dom_parser<Json>;

 public:
  explicit CheckedDomParser(Json& root) : Base(root, false) {}

  bool start_object(std::size_t size) {
    keys_.emplace_back();
    return Base::start_object(size);
  }
  bool end_object() {
    keys_.pop_back();
    return Base::end_object();
  }
  bool key(std::string& name) {
    if (!keys_.back().insert(name).second) {
      duplicate = name;
      return false;
    }
    return Base::key(name);
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& error) {
    error_position = position;
    error_text = error.what();
    return false;
  }

  std::string duplicate;
  std::size_t error_position = 0;
  std::string error_text;

 private:
  std::vector<std::set<std::string>> keys_;
};

}  // namespace

Json parse_safetensors_header(std::string_view file, std::string_view text, HeaderScan* scan) {
  HeaderScan local;
  HeaderScan& work = scan ? *scan : local;
  StructureScan(file, text, work).run();

  Json header;
  CheckedDomParser parser(header);
  bool parsed = false;
  try {
    parsed = Json::sax_parse(text.begin(), text.end(), &parser);
  } catch (const std::bad_alloc&) {
    fail("read_safetensors: '{}': not enough memory to parse the {}-byte header", file,
         text.size());
  } catch (const std::exception& error) {
    fail("read_safetensors: '{}': the header (file bytes 8..{}) could not be parsed: {}", file,
         kHeaderStart + text.size(), printable(error.what(), 300));
  }
  check(parser.duplicate.empty(), "read_safetensors: '{}': the header names '{}' twice", file,
        printable(parser.duplicate));
  // The position counts the characters read, so the culprit is the last of them.
  check(parsed,
        "read_safetensors: '{}': the header (file bytes 8..{}) is not valid JSON; the parser "
        "stopped at file byte {}: {}",
        file, kHeaderStart + text.size(),
        kHeaderStart + (parser.error_position > 0 ? parser.error_position - 1 : 0),
        printable(parser.error_text, 300));
  return header;
}

}  // namespace attograd::nn
