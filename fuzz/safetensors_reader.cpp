// fuzz/safetensors_reader.cpp — libFuzzer target: any bytes as a safetensors
// file. The reader must return tensors or throw attograd::Error with a short,
// printable message (fuzz_checks.hpp); scripts/fuzz.sh runs it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_checks.hpp"
#include "nn/safetensors.hpp"
#include "tensor/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const attograd::nn::TensorFile file =
        attograd::nn::read_safetensors_bytes(bytes, "fuzz.safetensors");
    (void)file;
  } catch (const attograd::Error& error) {
    attograd::fuzz::check_refusal(error.what());
  }
  return 0;
}
