// tests/nn/test_safetensors_hostile.cpp — files made to hurt the reader: deep
// nesting, a huge number of entries (work counted, not timed), numbers that
// overflow, bytes after the header, lengths and offsets near 2^64, devices,
// names that would drive the terminal, thousands of problems, and NaN
// weights. Each is refused with an attograd::Error that names the file and
// the byte, stays short and printable, and changes no model.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>

#include "nn/checkpoint.hpp"
#include "nn/linear.hpp"
#include "nn/safetensors.hpp"
#include "nn/safetensors_header.hpp"
#include "tensor/error.hpp"
#include "tensor/random.hpp"
#include "tests/support/program.hpp"

namespace test_safetensors_hostile {

using namespace attograd;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;
using attograd::testing::TemporaryFolder;

namespace {

std::string little_endian_u64(uint64_t value) {
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  return bytes;
}

// A file: the 8-byte length of `header`, the header, then `data`.
std::string file_bytes(const std::string& header, const std::string& data = "") {
  return little_endian_u64(header.size()) + header + data;
}

// The message read_safetensors_bytes throws for `bytes` ("" if none).
std::string refusal(const std::string& bytes) {
  try {
    nn::read_safetensors_bytes(bytes, "hostile.safetensors");
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

// A message fit for a terminal: no control bytes but the newlines between
// problems, and a few KB at most.
void check_short_and_printable(const std::string& message) {
  CHECK(message.size() < 4000);
  for (char c : message) {
    const auto byte = static_cast<unsigned char>(c);
    CHECK((byte >= 0x20 || byte == '\n'));
    CHECK(byte != 0x7f);
  }
}

const std::string kEntry = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";

}  // namespace

TEST_CASE("A deeply nested header is refused by depth, without recursion", "[safetensors]") {
  // 200 KB of nested arrays: the recursive serialiser of the JSON library
  // overflows the stack on it.
  const std::string header =
      R"({"a":)" + std::string(100'000, '[') + std::string(100'000, ']') + "}";
  const std::string message = refusal(file_bytes(header));
  CHECK_THAT(message, Contains("'hostile.safetensors': the header nests 5 levels deep at file "
                               "byte 16; a safetensors header needs 3 (at most 4 are read)"));
  check_short_and_printable(message);
}

TEST_CASE("100,000 entries are refused after a bounded scan, and 20,000 parse in one pass",
          "[safetensors]") {
  const auto header_of = [](size_t entries) {
    std::string header = "{";
    for (size_t i = 0; i < entries; ++i) {
      header += fmt::format(R"({}"t{}":{{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})",
                            i == 0 ? "" : ",", i);
    }
    return header + "}";
  };
  const std::string huge = header_of(100'000);
  nn::HeaderScan scan;
  CHECK_THROWS_WITH(nn::parse_safetensors_header("f", huge, &scan),
                    Contains("the header has more than 65536 entries"));
  // The scan stopped at the entry over the limit: it never looked at the rest,
  // and the parser never started.
  CHECK(scan.entries == nn::safetensors_limits::kMaxEntries);
  CHECK(scan.bytes_scanned < huge.size() * 2 / 3);

  const std::string large = header_of(20'000);
  nn::HeaderScan work;
  const nlohmann::json parsed = nn::parse_safetensors_header("f", large, &work);
  CHECK(parsed.size() == 20'000);
  CHECK(work.bytes_scanned == large.size());  // each byte looked at once
  CHECK(work.entries == 19'999);              // commas between the entries
  const nn::TensorFile file = nn::read_safetensors_bytes(file_bytes(large), "large");
  CHECK(file.tensors.size() == 20'000);
}

TEST_CASE("Numbers that overflow, NULs and trailing bytes name the file byte", "[safetensors]") {
  SECTION("1e999") {
    const std::string header = R"({"a":{"dtype":"F32","shape":[1e999],"data_offsets":[0,4]}})";
    const std::string message = refusal(file_bytes(header, std::string(4, '\0')));
    CHECK_THAT(message, Contains(fmt::format("'hostile.safetensors': the header (file bytes 8..{}) "
                                             "is not valid JSON; the parser stopped at file byte",
                                             8 + header.size())));
    CHECK_THAT(message, Contains("number overflow parsing '1e999'"));
  }
  SECTION("a NUL after the object, then more JSON") {
    const std::string header = R"({"a":)" + kEntry + "}" + std::string(1, '\0') + R"({"b":1})";
    const std::string message = refusal(file_bytes(header, std::string(4, '\0')));
    CHECK_THAT(message, Contains(fmt::format("the header's JSON object ends at file byte {}, but "
                                             "file byte {} after it is '\\x00', not a space",
                                             8 + kEntry.size() + 5, 8 + kEntry.size() + 6)));
    check_short_and_printable(message);
  }
  SECTION("a NUL inside the object") {
    std::string header = R"({"a":)" + kEntry + "}";
    header[2] = '\0';
    CHECK_THAT(refusal(file_bytes(header, std::string(4, '\0'))),
               Contains("file byte 10 inside the header is a NUL byte"));
  }
  SECTION("a second value after the object") {
    const std::string header = R"({"a":)" + kEntry + "}   []";
    CHECK_THAT(refusal(file_bytes(header, std::string(4, '\0'))),
               Contains("after it is '[', not a space"));
  }
  SECTION("spaces after the object are padding") {
    const std::string header = R"({"a":)" + kEntry + "}     ";
    CHECK(refusal(file_bytes(header, std::string(4, '\0'))).empty());
  }
}

TEST_CASE("Lengths and offsets near 2^64 are refused without wrapping", "[safetensors]") {
  SECTION("a header length of 2^64 - 1") {
    const std::string bytes = little_endian_u64(std::numeric_limits<uint64_t>::max()) + "{}";
    CHECK_THAT(refusal(bytes), Contains("the header length at byte 0 says 18446744073709551615 "
                                        "bytes, but only 2 bytes follow it"));
  }
  SECTION("offsets near 2^64") {
    const std::string header =
        R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[18446744073709551610,18446744073709551614]}})";
    const std::string message = refusal(file_bytes(header, std::string(4, '\0')));
    CHECK_THAT(message, Contains(fmt::format("reach file byte {} + 18446744073709551614",
                                             8 + header.size())));
  }
  SECTION("a shape whose byte count overflows") {
    const std::string header =
        R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})";
    CHECK_THAT(refusal(file_bytes(header, std::string(4, '\0'))),
               Contains("shape [4294967296, 4294967296] is too large"));
  }
  SECTION("more than 64 dimensions") {
    std::string shape = "[1";
    for (int i = 0; i < 64; ++i) shape += ",1";
    const std::string header =
        R"({"a":{"dtype":"F32","shape":)" + shape + R"(],"data_offsets":[0,4]}})";
    CHECK_THAT(refusal(file_bytes(header, std::string(4, '\0'))),
               Contains("\"shape\" has 65 dimensions; attograd reads at most 64"));
  }
}

TEST_CASE("Devices and pipes are refused before anything is read", "[safetensors]") {
  CHECK_THROWS_WITH(nn::read_safetensors("/dev/zero"),
                    Contains("'/dev/zero' is a character device, not a regular file"));
  CHECK_THROWS_WITH(nn::read_safetensors_header("/dev/null"), Contains("is a character device"));
}

TEST_CASE("Names with control characters are escaped, long lists are cut", "[safetensors]") {
  SECTION("escape sequences in a tensor name") {
    // Valid JSON: the escapes decode to ESC, CR and the C1 control U+009B.
    const std::string header =
        R"({"evil\u001b[2J\r\u009bname":{"dtype":"F99","shape":[1],"data_offsets":[0,4]}})";
    const std::string message = refusal(file_bytes(header, std::string(4, '\0')));
    CHECK_THAT(message, Contains("tensor 'evil\\x1b[2J\\x0d\\u009bname': unknown dtype 'F99'"));
    check_short_and_printable(message);
  }
  SECTION("a name of 10,000 characters") {
    const std::string name(10'000, 'n');
    const std::string header =
        R"({")" + name + R"(":{"dtype":"F99","shape":[1],"data_offsets":[0,4]}})";
    const std::string message = refusal(file_bytes(header, std::string(4, '\0')));
    CHECK_THAT(message, Contains(std::string(80, 'n') + "…"));
    check_short_and_printable(message);
  }
  SECTION("1,000 problems") {
    std::string header = "{";
    for (int i = 0; i < 1000; ++i) {
      header += fmt::format(R"({}"t{}":{{"dtype":"F99","shape":[1],"data_offsets":[0,4]}})",
                            i == 0 ? "" : ",", i);
    }
    const std::string message = refusal(file_bytes(header + "}", std::string(4, '\0')));
    CHECK_THAT(message, Contains("1000 problems in the header"));
    CHECK_THAT(message, Contains("… and 980 more"));
    check_short_and_printable(message);
  }
}

TEST_CASE("A checkpoint holding NaN or infinity is refused and the model kept",
          "[safetensors][checkpoint]") {
  TemporaryFolder folder;
  Generator generator(3);
  nn::Linear saved(nn::LinearOptions(3, 2), generator);
  Tensor weight = saved.named_parameters()[0].second;
  weight.data()[4] = std::numeric_limits<real>::quiet_NaN();
  const fs::path path = folder.path / "nan.safetensors";
  nn::save(saved, path);

  nn::Linear model(nn::LinearOptions(3, 2), generator);
  const std::vector<real> before = model.named_parameters()[0].second.to_vector();
  CHECK_THROWS_WITH(nn::load(model, path),
                    Contains("1 problem, nothing was changed:\n  tensor 'weight' of shape (2,3) "
                             "holds nan at flat index 4 (saved by a run that diverged? retrain "
                             "with a smaller learning rate)"));
  CHECK(model.named_parameters()[0].second.to_vector() == before);

  weight.data()[4] = 1;
  weight.data()[0] = -std::numeric_limits<real>::infinity();
  nn::save(saved, path);
  CHECK_THROWS_WITH(nn::load(model, path), Contains("holds -inf at flat index 0"));
  CHECK(model.named_parameters()[0].second.to_vector() == before);
}

}  // namespace test_safetensors_hostile
