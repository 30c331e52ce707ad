// examples/translate/batched_checkpoint.cpp — writing and reading the
// metadata of a batched-recipe checkpoint (batched_checkpoint.hpp).
#include "examples/translate/batched_checkpoint.hpp"

#include <fmt/format.h>

#include <exception>
#include <stdexcept>

#include "examples/translate/checkpoint_sizes.hpp"
#include "examples/translate/size_limits.hpp"
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

int64_t metadata_integer(const nn::Metadata& metadata, const std::string& path,
                         const std::string& key) {
  const std::string& text = metadata_field(metadata, path, key);
  try {
    size_t used = 0;
    const int64_t value = std::stoll(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  fail("{}: the checkpoint's '{}' is '{}', not an integer", path, key, text);
}

double metadata_number(const nn::Metadata& metadata, const std::string& path,
                       const std::string& key) {
  const std::string& text = metadata_field(metadata, path, key);
  try {
    size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  fail("{}: the checkpoint's {} '{}' is not a number", path, key, text);
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
  const auto recipe = metadata.find("recipe");
  check(recipe != metadata.end() && recipe->second == kRecipe,
        "{}: not a checkpoint of the batched recipe (recipe '{}'); use the command with "
        "--recipe {} for it",
        path, recipe == metadata.end() ? "" : recipe->second,
        recipe == metadata.end() ? "tutorial" : recipe->second);
  CheckpointInfo info;
  info.source_vocabulary =
      text::Vocabulary::deserialize(metadata_field(metadata, path, "source_vocabulary"));
  info.target_vocabulary =
      text::Vocabulary::deserialize(metadata_field(metadata, path, "target_vocabulary"));
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
  info.data = metadata_field(metadata, path, "data");
  info.direction = metadata_field(metadata, path, "direction");
  info.num_examples = metadata_integer(metadata, path, "num_examples");
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
