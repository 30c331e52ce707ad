// examples/translate/batched_checkpoint.cpp — writing and reading the
// metadata of a batched-recipe checkpoint (batched_checkpoint.hpp).
#include "examples/translate/batched_checkpoint.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "examples/translate/checkpoint_sizes.hpp"
#include "examples/translate/size_limits.hpp"
#include "nn/safetensors_messages.hpp"
#include "tensor/error.hpp"

namespace attograd::translate_batched {

using namespace attograd::batched_seq2seq;
using namespace attograd::translation;

const std::string& metadata_field(const nn::Metadata& metadata, const std::string& path,
                                  const std::string& key) {
  const auto found = metadata.find(key);
  check(found != metadata.end(),
        "{}: the checkpoint has no '{}' entry; was it written by translate train with the same "
        "--recipe?",
        path, key);
  return found->second;
}

namespace {

constexpr const char* kEdited = "the file was edited or damaged: retrain, or restore the file";

// Metadata text as a message quotes it: escaped and cut short.
std::string metadata_text(const std::string& text) { return nn::printable(text, 60); }

}  // namespace

int64_t metadata_integer(const nn::Metadata& metadata, const std::string& path,
                         const std::string& key, int64_t low, int64_t high) {
  const std::string& text = metadata_field(metadata, path, key);
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  check(error != std::errc::invalid_argument && stop == end,
        "'{}': the checkpoint's {} is '{}', not an integer; {}", nn::printable(path, 300), key,
        metadata_text(text), kEdited);
  check(error == std::errc(), "'{}': the checkpoint's {} is {}, beyond the 64-bit integers; {}",
        nn::printable(path, 300), key, metadata_text(text), kEdited);
  const bool unbounded = high == std::numeric_limits<int64_t>::max();
  check(low <= value && value <= high, "'{}': the checkpoint's {} is {}, {}; {}",
        nn::printable(path, 300), key, metadata_text(text),
        unbounded ? fmt::format("less than {}", low) : fmt::format("outside [{}, {}]", low, high),
        kEdited);
  return value;
}

double metadata_number(const nn::Metadata& metadata, const std::string& path,
                       const std::string& key) {
  const std::string& text = metadata_field(metadata, path, key);
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  check(error != std::errc::invalid_argument && stop == end,
        "'{}': the checkpoint's {} is '{}', not a number; {}", nn::printable(path, 300), key,
        metadata_text(text), kEdited);
  // from_chars reports both ends of the range alike; strtod tells them apart
  // (a value that underflows comes back as 0 or a subnormal, one that overflows as ±inf).
  check(error == std::errc(), "'{}': the checkpoint's {} is {}, a number {} for a double; {}",
        nn::printable(path, 300), key, metadata_text(text),
        std::isinf(std::strtod(text.c_str(), nullptr)) ? "too large" : "too close to 0", kEdited);
  return value;
}

text::Vocabulary vocabulary_field(const nn::Metadata& metadata, const std::string& path,
                                  const std::string& key, const char* recipe) {
  text::Vocabulary vocabulary = text::make_batched_vocabulary({});
  try {
    vocabulary = text::Vocabulary::deserialize(metadata_field(metadata, path, key));
  } catch (const Error& error) {
    // A missing entry's message stands; a damaged one is named.
    if (!metadata.contains(key)) throw;
    fail("'{}': the checkpoint's {} is damaged ({}); {}", nn::printable(path, 300), key,
         error.what(), kEdited);
  }
  translate_checkpoint::require_layout(path, key.c_str(), vocabulary, text::kBatchedLayout, recipe);
  return vocabulary;
}

void read_data_fields(const nn::Metadata& metadata, const std::string& path, std::string& data,
                      std::string& direction, int64_t& num_examples) {
  data = metadata_field(metadata, path, "data");
  check(!data.empty(), "'{}': the checkpoint's data is empty, not a path; {}",
        nn::printable(path, 300), kEdited);
  direction = metadata_field(metadata, path, "direction");
  check(direction == "eng-fra" || direction == "fra-eng",
        "'{}': the checkpoint's direction is '{}', not one of eng-fra|fra-eng; {}",
        nn::printable(path, 300), metadata_text(direction), kEdited);
  // The pairs training used: at least one (eval scores these by default).
  num_examples =
      metadata_integer(metadata, path, "num_examples", 1, std::numeric_limits<int64_t>::max());
}

nn::Metadata to_metadata(const CheckpointInfo& info, const BatchedTrainFlags& flags,
                         const TrainingReport& report) {
  return {{"recipe", kRecipe},
          {"embed_size", std::to_string(info.model.embed_size())},
          {"hidden_size", std::to_string(info.model.hidden_size())},
          {"num_layers", std::to_string(info.model.num_layers())},
          {"dropout", fmt::format("{}", info.model.dropout())},
          {"num_steps", std::to_string(info.num_steps)},
          {"source_vocabulary", info.source_vocabulary.serialize()},
          {"target_vocabulary", info.target_vocabulary.serialize()},
          {"data", info.data},
          {"direction", info.direction},
          {"num_examples", std::to_string(info.num_examples)},
          {"min_freq", std::to_string(flags.min_freq)},
          {"epochs", std::to_string(report.epochs.size())},
          {"seed", std::to_string(flags.seed)},
          {"replicas", std::to_string(flags.replicas)},
          {"final_loss", fmt::format("{}", report.final_loss)}};
}

CheckpointInfo read_checkpoint_info(const std::string& path) {
  const translate_checkpoint::CheckpointSizes sizes(path);  // the header only, no values yet
  const nn::Metadata& metadata = sizes.metadata();
  translate_checkpoint::require_recipe(path, metadata, kRecipe);
  CheckpointInfo info;
  info.source_vocabulary = vocabulary_field(metadata, path, "source_vocabulary", kRecipe);
  info.target_vocabulary = vocabulary_field(metadata, path, "target_vocabulary", kRecipe);
  // Every size that builds the model, against the weights it sizes.
  const double dropout = metadata_number(metadata, path, "dropout");
  sizes.require("source vocabulary size", info.source_vocabulary.size(), "encoder.embedding.weight",
                0);
  sizes.require("target vocabulary size", info.target_vocabulary.size(), "decoder.embedding.weight",
                0);
  sizes.require("embed_size", metadata_integer(metadata, path, "embed_size"),
                "encoder.embedding.weight", 1);
  sizes.require("hidden_size", metadata_integer(metadata, path, "hidden_size"),
                "encoder.rnn.weight_hh_l0", 1);
  sizes.require_layers("num_layers", metadata_integer(metadata, path, "num_layers"),
                       "encoder.rnn.weight_ih_l{}");
  sizes.require_dropout(dropout);
  info.model = BatchedSeq2SeqOptions(info.source_vocabulary.size(), info.target_vocabulary.size())
                   .embed_size(metadata_integer(metadata, path, "embed_size"))
                   .hidden_size(metadata_integer(metadata, path, "hidden_size"))
                   .num_layers(metadata_integer(metadata, path, "num_layers"))
                   .dropout(dropout);
  info.num_steps = metadata_integer(metadata, path, "num_steps");
  check_checkpoint_size(path, "num_steps", info.num_steps, 2, kMaxSteps);
  read_data_fields(metadata, path, info.data, info.direction, info.num_examples);
  return info;
}

std::unique_ptr<BatchedSeq2Seq> load_model(const std::string& path, const CheckpointInfo& info) {
  Generator unused(0);  // the values are replaced by the checkpoint's
  auto model = std::make_unique<BatchedSeq2Seq>(info.model, unused);
  nn::load(*model, path);
  model->eval();
  return model;
}

}  // namespace attograd::translate_batched
