// fuzz/checkpoint_loader.cpp — libFuzzer target: any bytes as a checkpoint
// loaded into a live model (an nn::Linear(3, 2)). A refused load must leave
// every parameter as it was; an accepted one must hold finite values only.
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz/fuzz_checks.hpp"
#include "nn/checkpoint.hpp"
#include "nn/linear.hpp"
#include "tensor/error.hpp"
#include "tensor/random.hpp"

namespace {

using namespace attograd;

std::vector<real> values_of(const nn::Module& model) {
  std::vector<real> values;
  for (const auto& [name, parameter] : model.named_parameters()) {
    for (real value : parameter.to_vector()) values.push_back(value);
  }
  return values;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Generator generator(1);
  static nn::Linear model(nn::LinearOptions(3, 2), generator);
  static const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("attograd_fuzz_checkpoint_" + std::to_string(::getpid()) + ".safetensors");
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  const std::vector<real> before = values_of(model);
  try {
    nn::load(model, path);
    for (real value : values_of(model)) {
      if (!std::isfinite(value)) std::abort();  // a non-finite weight was accepted
    }
  } catch (const Error& error) {
    fuzz::check_refusal(error.what());
    if (values_of(model) != before) std::abort();  // a refused load changed the model
  }
  return 0;
}
