// tests/nn/test_checkpoint.cpp — safetensors files and checkpoints: round
// trips, the header's layout checked with a JSON parser, a file written byte
// by byte, every kind of damaged or mismatched file (the message names the file
// and the problem, and the model keeps its values), atomic writes, and
// training state that resumes exactly.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "nn/checkpoint.hpp"
#include "nn/module.hpp"
#include "nn/optim.hpp"
#include "nn/safetensors.hpp"
#include "tensor/error.hpp"
#include "tensor/factory.hpp"

namespace test_checkpoint {

using namespace attograd;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// A fresh folder for one test, removed afterwards.
class TemporaryFolder {
 public:
  TemporaryFolder() {
    static int counter = 0;
    path_ = fs::temp_directory_path() /
            fmt::format("attograd_test_checkpoint_{}_{}", static_cast<long>(::getpid()), counter++);
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    fs::permissions(path_, fs::perms::owner_all, ignored);
    fs::remove_all(path_, ignored);
  }
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;

  fs::path operator/(const std::string& name) const { return path_ / name; }
  const fs::path& path() const { return path_; }
  // The names of the files in the folder, sorted.
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(path_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  fs::path path_;
};

// y = x Wᵀ + b, with parameters made by hand (no dependency on nn::Linear).
struct Affine : nn::Module {
  Tensor weight, bias;
  Affine(int64_t in, int64_t out, Generator& generator) : nn::Module("Affine") {
    weight = register_parameter("weight", randn({out, in}, generator));
    bias = register_parameter("bias", randn({out}, generator));
  }
  // x: (N,in) -> (N,out)
  Tensor forward(const Tensor& x) { return matmul(x, transpose(weight, 0, 1)) + bias; }
};

// 1 → hidden → 1: "hidden.weight" (H,1), "hidden.bias" (H), "out.weight"
// (1,H), "out.bias" (1).
struct Net : nn::Module {
  std::shared_ptr<Affine> hidden, out;
  explicit Net(uint64_t seed, int64_t hidden_size = 3) : nn::Module("Net") {
    Generator generator(seed);
    hidden = register_module("hidden", std::make_shared<Affine>(1, hidden_size, generator));
    out = register_module("out", std::make_shared<Affine>(hidden_size, 1, generator));
  }
  // x: (N,1) -> (N,1)
  Tensor forward(const Tensor& x) { return out->forward(tanh(hidden->forward(x))); }
};

std::vector<std::vector<real>> values(const nn::Module& module) {
  std::vector<std::vector<real>> out;
  for (const auto& [name, tensor] : module.named_parameters()) out.push_back(tensor.to_vector());
  return out;
}

// What a value becomes after a trip through an F32 file.
real through_float(real value) { return static_cast<real>(static_cast<float>(value)); }

// The module's values as a checkpoint holds them (the same, in the float build).
std::vector<std::vector<real>> saved_values(const nn::Module& module) {
  std::vector<std::vector<real>> out = values(module);
  for (auto& tensor : out) {
    for (real& value : tensor) value = through_float(value);
  }
  return out;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

std::string little_endian_u64(uint64_t value) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  return out;
}

// A file's header (parsed) and data section.
struct Parts {
  Json header;
  std::string data;
};

Parts split(const std::string& bytes) {
  REQUIRE(bytes.size() >= 8);
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<unsigned char>(bytes[i]);
  REQUIRE(8 + length <= bytes.size());
  return {Json::parse(bytes.substr(8, length)), bytes.substr(8 + length)};
}

std::string assemble(const std::string& header_text, const std::string& data) {
  return little_endian_u64(header_text.size()) + header_text + data;
}

// Loading `path` into a fresh Net throws one Error that names the file and
// contains every one of `needles`; the net keeps its values.
void check_load_fails(const fs::path& path, const std::vector<std::string>& needles,
                      int64_t hidden_size = 3) {
  Net net(5, hidden_size);
  const auto before = values(net);
  try {
    nn::load(net, path);
    FAIL("load accepted " << path);
  } catch (const Error& error) {
    const std::string message = error.what();
    INFO(message);
    CHECK_THAT(message, Contains(path.string()));
    for (const std::string& needle : needles) CHECK_THAT(message, Contains(needle));
  }
  CHECK(values(net) == before);
}

// Loss of a Net on a fixed batch, for the training-state tests.
void backward_on_batch(Net& net) {
  const Tensor x = reshape(linspace(-1, 1, 8), {8, 1});
  const Tensor y = sin(x * 3.0);
  backward(mean(pow(net.forward(x) - y, 2)));
}

void train(nn::Optimizer& optimizer, Net& net, int steps) {
  for (int i = 0; i < steps; ++i) {
    optimizer.zero_grad();
    backward_on_batch(net);
    optimizer.step();
  }
}

}  // namespace

// ---- Round trips -------------------------------------------------------------

TEST_CASE("save then load copies every value into the existing parameters", "[checkpoint]") {
  TemporaryFolder folder;
  const fs::path path = folder / "net.safetensors";
  Net saved(1);
  nn::save(saved, path, {{"epochs", "20"}, {"note", "ünïcode\nand a newline"}});

  Net loaded(2);
  const Tensor weight_before = loaded.hidden->weight;
  REQUIRE(values(loaded) != values(saved));
  nn::load(loaded, path);
  CHECK(loaded.hidden->weight.same(weight_before));  // values copied in, not replaced
  CHECK(loaded.parameter("hidden.weight").same(weight_before));
  CHECK(values(loaded) == saved_values(saved));  // bit-identical in the float build
  const nn::Metadata metadata = nn::read_metadata(path);
  CHECK(metadata == nn::Metadata{{"epochs", "20"}, {"note", "ünïcode\nand a newline"}});
}

TEST_CASE("safetensors keeps every float bit, odd shapes and the tensors' order", "[checkpoint]") {
  TemporaryFolder folder;
  const fs::path path = folder / "values.safetensors";
  const std::vector<float> specials = {0.0f,
                                       -0.0f,
                                       1.0f / 3.0f,
                                       std::numeric_limits<float>::denorm_min(),
                                       std::numeric_limits<float>::max(),
                                       std::numeric_limits<float>::infinity(),
                                       -std::numeric_limits<float>::infinity(),
                                       std::numeric_limits<float>::quiet_NaN()};
  std::vector<real> as_real(specials.begin(), specials.end());
  nn::TensorFile file;
  file.tensors.emplace_back("z_specials", from_vector(as_real, {2, 4}));
  file.tensors.emplace_back("scalar", scalar(real(2.5)));
  file.tensors.emplace_back("empty", zeros({0, 3}));
  // A transposed view is written as its row-major values.
  file.tensors.emplace_back("a_transposed",
                            transpose(from_vector({1, 2, 3, 4, 5, 6}, {2, 3}), 0, 1));
  nn::write_safetensors(path, file);

  const nn::TensorFile read = nn::read_safetensors(path);
  REQUIRE(read.tensors.size() == 4);
  CHECK(read.tensors[0].first == "z_specials");  // data order, not alphabetical
  CHECK(read.tensors[1].first == "scalar");
  CHECK(read.tensors[2].first == "empty");
  CHECK(read.tensors[3].first == "a_transposed");
  CHECK(read.tensors[0].second.shape() == Shape{2, 4});
  const std::vector<real> got = read.tensors[0].second.to_vector();
  for (size_t i = 0; i < specials.size(); ++i) {
    const auto back = static_cast<float>(got[i]);
    INFO("value " << i);
    CHECK(std::memcmp(&back, &specials[i], sizeof(float)) == 0);
  }
  CHECK(read.tensors[1].second.shape() == Shape{});
  CHECK(read.tensors[1].second.item() == 2.5);
  CHECK(read.tensors[2].second.shape() == Shape{0, 3});
  CHECK(read.tensors[3].second.shape() == Shape{3, 2});
  CHECK(read.tensors[3].second.to_vector() == std::vector<real>{1, 4, 2, 5, 3, 6});
  CHECK(read.metadata.empty());
}

TEST_CASE("The header is JSON with F32 entries that tile the data section", "[checkpoint]") {
  TemporaryFolder folder;
  const fs::path path = folder / "net.safetensors";
  Net net(3);
  nn::save(net, path, {{"iteration", "12"}});
  const std::string bytes = read_bytes(path);

  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<unsigned char>(bytes[i]);
  CHECK((8 + length) % 8 == 0);  // the data section starts 8-aligned
  const Parts parts = split(bytes);
  REQUIRE(parts.header.is_object());
  CHECK(parts.header.at("__metadata__") == Json{{"iteration", "12"}});
  CHECK(parts.header.size() == 5);

  // Offsets follow the parameters' order, back to back, to the end of the file.
  uint64_t offset = 0;
  for (const auto& [name, tensor] : net.named_parameters()) {
    INFO(name);
    const Json& entry = parts.header.at(name);
    CHECK(entry.at("dtype") == "F32");
    CHECK(entry.at("shape").get<std::vector<int64_t>>() == tensor.shape().to_vector());
    const auto offsets = entry.at("data_offsets").get<std::vector<uint64_t>>();
    REQUIRE(offsets.size() == 2);
    CHECK(offsets[0] == offset);
    CHECK(offsets[1] == offset + 4 * uint64_t(tensor.numel()));
    // The bytes there are the values, little-endian floats.
    const std::vector<real> expected = tensor.to_vector();
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      float stored;
      std::memcpy(&stored, parts.data.data() + offsets[0] + 4 * i, 4);
      CHECK(stored == static_cast<float>(expected[i]));
    }
    offset = offsets[1];
  }
  CHECK(offset == parts.data.size());
}

TEST_CASE("A file written byte by byte loads, F32 and F64", "[checkpoint]") {
  TemporaryFolder folder;
  const fs::path path = folder / "by_hand.safetensors";
  // Unpadded header (readers must not insist on padding) and two tensors:
  // "a" = (1.5, −2) as F32 and "b" = 0.25 as a 0-d F64.
  const std::string header = R"({"__metadata__":{"format":"pt"},)"
                             R"("b":{"dtype":"F64","shape":[],"data_offsets":[8,16]},)"
                             R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::string bytes;
  bytes.push_back(static_cast<char>(header.size()));  // length < 256: one byte, then zeros
  for (int i = 0; i < 7; ++i) bytes.push_back('\0');
  bytes += header;
  for (unsigned char byte : {0x00, 0x00, 0xC0, 0x3F,  // 1.5f  = 0x3FC00000
                             0x00, 0x00, 0x00, 0xC0,  // −2.0f = 0xC0000000
                             0x00, 0x00, 0x00, 0x00,  // 0.25  = 0x3FD0000000000000
                             0x00, 0x00, 0xD0, 0x3F}) {
    bytes.push_back(static_cast<char>(byte));
  }
  write_bytes(path, bytes);

  const nn::TensorFile file = nn::read_safetensors(path);
  REQUIRE(file.tensors.size() == 2);
  CHECK(file.tensors[0].first == "a");
  CHECK(file.tensors[0].second.to_vector() == std::vector<real>{1.5, -2});
  CHECK(file.tensors[1].first == "b");
  CHECK(file.tensors[1].second.shape() == Shape{});
  CHECK(file.tensors[1].second.item() == 0.25);
  CHECK(file.metadata == nn::Metadata{{"format", "pt"}});

  // And into a module whose parameters have those names.
  struct Pair : nn::Module {
    Tensor a, b;
    Pair() : nn::Module("Pair") {
      a = register_parameter("a", zeros({2}));
      b = register_parameter("b", scalar(0));
    }
  } pair;
  nn::load(pair, path);
  CHECK(pair.a.to_vector() == std::vector<real>{1.5, -2});
  CHECK(pair.b.item() == 0.25);
}

// ---- Damaged files ---------------------------------------------------------------

TEST_CASE("Damaged files are refused with the file, the byte and the reason", "[checkpoint]") {
  TemporaryFolder folder;
  const fs::path good = folder / "good.safetensors";
  nn::save(Net(1), good);
  const std::string bytes = read_bytes(good);
  const Parts parts = split(bytes);
  const fs::path path = folder / "bad.safetensors";
  // Rewrites the good file's header with `edit` applied.
  auto with_header = [&](const std::function<void(Json&)>& edit) {
    Json header = parts.header;
    edit(header);
    write_bytes(path, assemble(header.dump(), parts.data));
  };

  SECTION("missing file") { check_load_fails(folder / "nowhere.safetensors", {"does not exist"}); }
  SECTION("shorter than the length field") {
    write_bytes(path, "abcde");
    check_load_fails(path, {"is 5 bytes long", "8-byte header length"});
  }
  SECTION("empty") {
    write_bytes(path, "");
    check_load_fails(path, {"is 0 bytes long"});
  }
  SECTION("header length beyond the end of the file") {
    write_bytes(path, little_endian_u64(1'000'000'000'000) + bytes.substr(8));
    check_load_fails(path, {"the header length at byte 0 says 1000000000000 bytes",
                            fmt::format("only {} bytes follow", bytes.size() - 8)});
  }
  SECTION("header is not JSON") {
    const std::string header = R"({"hidden.weight": {"dtype": "F32", oops}})";
    write_bytes(path, assemble(header, parts.data));
    const size_t culprit = 8 + header.find("oops");
    check_load_fails(path, {"is not valid JSON", fmt::format("stopped at file byte {}", culprit),
                            "parse error"});
  }
  SECTION("header is JSON but not an object") {
    write_bytes(path, assemble("[1, 2]", ""));
    check_load_fails(path, {"must be a JSON object, found array"});
  }
  SECTION("a key twice") {
    const std::string header = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                               R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
    write_bytes(path, assemble(header, std::string(4, '\0')));
    check_load_fails(path, {"names 'a' twice"});
  }
  SECTION("truncated in the data section") {
    write_bytes(path, bytes.substr(0, bytes.size() - 3));
    check_load_fails(path, {"tensor 'out.bias'", "truncated",
                            fmt::format("the file ends at byte {}", bytes.size() - 3)});
  }
  SECTION("offsets outside the file") {
    with_header([](Json& header) { header["hidden.bias"]["data_offsets"] = {1000, 1012}; });
    check_load_fails(path, {"tensor 'hidden.bias': data_offsets [1000, 1012] reach file byte"});
  }
  SECTION("offsets that do not match the shape") {
    with_header([](Json& header) {
      const uint64_t begin = header["out.bias"]["data_offsets"][0];
      header["out.bias"]["data_offsets"] = {begin - 4, begin + 4};
    });
    check_load_fails(path, {"tensor 'out.bias'", "hold 8 bytes, but shape [1] of F32 needs 4"});
  }
  SECTION("overlapping tensors") {
    // hidden.weight (3,1) and hidden.bias (3) are both 12 bytes: point both at the same bytes.
    with_header([](Json& header) {
      header["hidden.bias"]["data_offsets"] = header["hidden.weight"]["data_offsets"];
    });
    check_load_fails(path, {"overlap", "belong to no tensor"});
  }
  SECTION("unknown and unsupported dtypes, listed together") {
    with_header([](Json& header) {
      header["hidden.weight"]["dtype"] = "F33";
      header["out.weight"]["dtype"] = "BF16";
    });
    check_load_fails(path, {"2 problems", "tensor 'hidden.weight': unknown dtype 'F33'",
                            "tensor 'out.weight': dtype 'BF16' is not supported"});
  }
  SECTION("an entry without its shape") {
    with_header([](Json& header) { header["out.weight"].erase("shape"); });
    check_load_fails(path, {"tensor 'out.weight': the \"shape\" field is missing"});
  }
  SECTION("a negative size") {
    with_header([](Json& header) { header["out.bias"]["shape"] = {-1}; });
    check_load_fails(path, {"\"shape\" must be a list of non-negative integers, found [-1]"});
  }
  SECTION("metadata that is not strings") {
    with_header([](Json& header) { header["__metadata__"] = {{"iteration", 12}}; });
    check_load_fails(path, {"\"__metadata__\" must map strings to strings"});
  }
}

TEST_CASE("Loading names missing, unexpected and mismatched tensors all at once", "[checkpoint]") {
  TemporaryFolder folder;
  const fs::path path = folder / "net.safetensors";

  SECTION("missing") {
    nn::NamedTensors parameters = Net(1).named_parameters();
    parameters.pop_back();  // out.bias
    nn::save(parameters, path);
    check_load_fails(path, {"cannot load", "into Net", "1 problem,", "nothing was changed",
                            "missing tensor 'out.bias' (the model's has shape (1))"});
  }
  SECTION("unexpected") {
    nn::NamedTensors parameters = Net(1).named_parameters();
    parameters.emplace_back("extra.weight", zeros({2}));
    nn::save(parameters, path);
    check_load_fails(path, {"unexpected tensor 'extra.weight' of shape (2)"});
  }
  SECTION("shape mismatch") {
    nn::save(Net(1, 4), path);
    check_load_fails(path, {"3 problems",
                            "shape mismatch for 'hidden.weight': the file has (4,1), the model "
                            "has (3,1)",
                            "shape mismatch for 'hidden.bias': the file has (4), the model has (3)",
                            "shape mismatch for 'out.weight': the file has (1,4), the model "
                            "has (1,3)"});
  }
  SECTION("everything together") {
    nn::NamedTensors parameters = Net(1, 4).named_parameters();
    parameters.pop_back();
    parameters.emplace_back("extra", zeros({1}));
    nn::save(parameters, path);
    check_load_fails(path, {"5 problems", "missing tensor 'out.bias'", "unexpected tensor 'extra'",
                            "shape mismatch for 'hidden.weight'"});
  }
}

// ---- Writing --------------------------------------------------------------------

TEST_CASE("A failed write leaves the old file intact and no temporary files", "[checkpoint]") {
  TemporaryFolder folder;
  const fs::path path = folder / "net.safetensors";
  nn::save(Net(1), path);
  const std::string old_bytes = read_bytes(path);

  SECTION("missing folder") {
    const fs::path nowhere = folder / "missing" / "net.safetensors";
    CHECK_THROWS_WITH(nn::save(Net(2), nowhere), Contains(nowhere.string()));
    CHECK_FALSE(fs::exists(folder / "missing"));
  }
  SECTION("the target is a folder, so the final rename fails") {
    const fs::path taken = folder / "taken.safetensors";
    fs::create_directory(taken);
    fs::create_directory(taken / "inside");  // a non-empty folder cannot be replaced
    CHECK_THROWS_WITH(nn::save(Net(2), taken),
                      Contains("cannot write") && Contains(taken.string()));
    CHECK(fs::is_directory(taken / "inside"));
  }
  SECTION("a read-only folder") {
    if (::geteuid() == 0) {
      WARN("running as root, which may write into read-only folders: case skipped");
    } else {
      fs::permissions(folder.path(), fs::perms::owner_read | fs::perms::owner_exec);
      CHECK_THROWS_WITH(nn::save(Net(2), path), Contains(path.string()));
      fs::permissions(folder.path(), fs::perms::owner_all);
    }
  }
  SECTION("invalid contents are refused before anything is written") {
    nn::NamedTensors parameters = Net(2).named_parameters();
    parameters.emplace_back("hidden.weight", zeros({1}));
    CHECK_THROWS_WITH(nn::save(parameters, path), Contains("two parameters are named"));
    CHECK_THROWS_WITH(nn::save(Net(2), path, {{"attograd.optimizer", "SGD"}}),
                      Contains("is reserved"));
  }
  CHECK(read_bytes(path) == old_bytes);
  for (const std::string& name : folder.listing()) {
    CHECK(name.find(".attograd-tmp.") == std::string::npos);
  }
}

// ---- Training state ------------------------------------------------------------------

TEST_CASE("A training checkpoint resumes model and optimizer exactly", "[checkpoint]") {
  TemporaryFolder folder;
  const fs::path path = folder / "training.safetensors";
  const nn::AdamOptions options = nn::AdamOptions(0.05).weight_decay(1e-3);

  Net uninterrupted(11);
  nn::Adam adam(uninterrupted.named_parameters(), options);
  train(adam, uninterrupted, 6);

  Net first_half(11);
  nn::Adam first(first_half.named_parameters(), options);
  train(first, first_half, 3);
  const nn::Metadata metadata = {{"iteration", "3"}, {"source_vocabulary", "<pad>\nça\nva"}};
  nn::save_training_state(path, first_half, &first, metadata);

  Net resumed(12);  // another seed: everything must come from the file
  nn::Adam second(resumed.named_parameters(), options);
  CHECK(nn::load_training_state(path, resumed, &second) == metadata);
  CHECK(nn::read_metadata(path) == metadata);
  CHECK(second.step_count() == 3);
  train(second, resumed, 3);

  const auto expected = values(uninterrupted);
  const auto actual = values(resumed);
  if constexpr (sizeof(real) == sizeof(float)) {
    CHECK(actual == expected);  // the file holds exactly what memory held
  } else {
    // The double build rounds parameters and state to float in the file.
    for (size_t i = 0; i < expected.size(); ++i) {
      for (size_t j = 0; j < expected[i].size(); ++j) {
        CHECK(actual[i][j] == Approx(expected[i][j]).margin(1e-5));
      }
    }
  }

  // The file's tensors: the model's under their names, the optimizer's under "optimizer.".
  const nn::TensorFile file = nn::read_safetensors(path);
  std::vector<std::string> names;
  for (const auto& [name, tensor] : file.tensors) names.push_back(name);
  CHECK(names == std::vector<std::string>{
                     "hidden.weight", "hidden.bias", "out.weight", "out.bias", "optimizer.step",
                     "optimizer.exp_avg.hidden.weight", "optimizer.exp_avg_sq.hidden.weight",
                     "optimizer.step.hidden.weight", "optimizer.exp_avg.hidden.bias",
                     "optimizer.exp_avg_sq.hidden.bias", "optimizer.step.hidden.bias",
                     "optimizer.exp_avg.out.weight", "optimizer.exp_avg_sq.out.weight",
                     "optimizer.step.out.weight", "optimizer.exp_avg.out.bias",
                     "optimizer.exp_avg_sq.out.bias", "optimizer.step.out.bias"});
  CHECK(file.metadata.at("attograd.optimizer") == "Adam");

  // A plain load takes the model and ignores the optimizer's part.
  Net for_evaluation(13);
  nn::load(for_evaluation, path);
  CHECK(values(for_evaluation) == saved_values(first_half));
  // So does load_training_state without an optimizer.
  Net model_only(14);
  CHECK(nn::load_training_state(path, model_only, nullptr) == metadata);
  CHECK(values(model_only) == saved_values(first_half));
}

TEST_CASE("Training checkpoints refuse the wrong optimizer and change nothing", "[checkpoint]") {
  TemporaryFolder folder;
  const fs::path path = folder / "training.safetensors";
  Net saved(1, 4);
  nn::Adam saved_adam(saved.named_parameters(), nn::AdamOptions(0.05));
  train(saved_adam, saved, 2);
  nn::save_training_state(path, saved, &saved_adam, {{"iteration", "2"}});

  Net net(2);
  nn::Adam adam(net.named_parameters(), nn::AdamOptions(0.05));
  train(adam, net, 1);
  const auto net_before = values(net);
  const nn::NamedTensors adam_before = adam.state();
  auto check_unchanged = [&] {
    CHECK(values(net) == net_before);
    const nn::NamedTensors adam_after = adam.state();
    REQUIRE(adam_after.size() == adam_before.size());
    for (size_t i = 0; i < adam_before.size(); ++i) {
      CHECK(adam_after[i].second.to_vector() == adam_before[i].second.to_vector());
    }
  };

  SECTION("model and optimizer problems are reported together") {
    try {
      nn::load_training_state(path, net, &adam);
      FAIL("a (4)-hidden checkpoint loaded into a (3)-hidden net");
    } catch (const Error& error) {
      const std::string message = error.what();
      CHECK_THAT(message, Contains(path.string()) && Contains("Net and its Adam optimizer"));
      CHECK_THAT(message, Contains("shape mismatch for 'hidden.weight'"));
      CHECK_THAT(message, Contains("optimizer state 'exp_avg.hidden.weight' has shape (4,1), but "
                                   "parameter 'hidden.weight' has shape (3,1)"));
    }
  }
  SECTION("another kind of optimizer") {
    Net same_shape(3, 4);
    nn::SGD sgd(same_shape.named_parameters(), nn::SGDOptions(0.1).momentum(0.9));
    const auto before = values(same_shape);
    CHECK_THROWS_WITH(nn::load_training_state(path, same_shape, &sgd),
                      Contains("holds Adam optimizer state, but the optimizer is SGD"));
    CHECK(values(same_shape) == before);
  }
  SECTION("NaN or infinity in a weight or in the optimizer's state") {
    // A checkpoint that fits the net exactly but for one non-finite value.
    Net fitting(5);
    nn::Adam fitting_adam(fitting.named_parameters(), nn::AdamOptions(0.05));
    train(fitting_adam, fitting, 2);
    const fs::path pristine = folder / "fits.safetensors";
    nn::save_training_state(pristine, fitting, &fitting_adam, {});
    REQUIRE_NOTHROW(nn::load_training_state(pristine, fitting, &fitting_adam));
    const fs::path damaged = folder / "damaged.safetensors";
    for (const auto& [tensor, value] :
         {std::pair<std::string, real>{"out.bias", std::numeric_limits<real>::quiet_NaN()},
          {"optimizer.exp_avg_sq.hidden.weight", std::numeric_limits<real>::infinity()}}) {
      INFO(tensor);
      nn::TensorFile file = nn::read_safetensors(pristine);  // fresh tensors, not shared
      for (auto& [name, values] : file.tensors) {
        if (name == tensor) values.data()[0] = value;
      }
      nn::write_safetensors(damaged, file);
      CHECK_THROWS_WITH(nn::load_training_state(damaged, net, &adam),
                        Contains("1 problem, nothing was changed") &&
                            Contains("tensor '" + tensor + "'") && Contains("at flat index 0"));
      check_unchanged();
    }
  }
  SECTION("a model checkpoint has no optimizer state") {
    const fs::path model_only = folder / "model.safetensors";
    nn::save(Net(1), model_only);
    CHECK_THROWS_WITH(nn::load_training_state(model_only, net, &adam),
                      Contains("holds no optimizer state") && Contains("pass nullptr"));
  }
  check_unchanged();
}

}  // namespace test_checkpoint
