// examples/translate/batched_checkpoint.hpp — the checkpoints of
// `translate --recipe batched`.
//
// A checkpoint is a safetensors file of the model's parameters whose metadata
// holds everything needed to rebuild it: the recipe name, the sizes, num_steps,
// both vocabularies (text form) and the data settings, so translate and eval
// need nothing but the file.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "examples/translate/batched_recipe.hpp"
#include "models/batched_seq2seq/batched_seq2seq.hpp"
#include "nn/checkpoint.hpp"

namespace attograd::translate_batched {

// The "recipe" entry of the metadata, which tells the two recipes' checkpoints apart.
inline constexpr const char* kRecipe = "batched";

// What the metadata says besides the tensors.
struct CheckpointInfo {
  batched_seq2seq::BatchedSeq2SeqOptions model{1, 1};
  text::Vocabulary source_vocabulary = text::make_batched_vocabulary({});
  text::Vocabulary target_vocabulary = text::make_batched_vocabulary({});
  int64_t num_steps = 10;
  std::string data;
  std::string direction;
  int64_t num_examples = 600;
};

// The metadata entry `key` of the checkpoint at `path`, as text, an integer
// or a number; throws naming the file and the key when it is missing or bad.
const std::string& metadata_field(const nn::Metadata& metadata, const std::string& path,
                                  const std::string& key);
// An integer must lie in [low, high] (by default: a size, at least 1).
int64_t metadata_integer(const nn::Metadata& metadata, const std::string& path,
                         const std::string& key, int64_t low = 1,
                         int64_t high = std::numeric_limits<int64_t>::max());
double metadata_number(const nn::Metadata& metadata, const std::string& path,
                       const std::string& key);
// A vocabulary entry, holding the special tokens of the batched layout
// (<pad> <bos> <eos> <unk>), which both recipes on d2l's data use.
text::Vocabulary vocabulary_field(const nn::Metadata& metadata, const std::string& path,
                                  const std::string& key, const char* recipe);
// The data a checkpoint was trained on: a non-empty path, eng-fra or
// fra-eng, and at least one pair.
void read_data_fields(const nn::Metadata& metadata, const std::string& path, std::string& data,
                      std::string& direction, int64_t& num_examples);

// `info` and the run's settings and result as checkpoint metadata.
nn::Metadata to_metadata(const CheckpointInfo& info, const BatchedTrainFlags& flags,
                         const translation::TrainingReport& report);

// Reads the metadata of the checkpoint at `path`; throws attograd::Error when
// it is not a checkpoint of the batched recipe or an entry is missing or bad.
CheckpointInfo read_checkpoint_info(const std::string& path);

// The model described by `info` with the checkpoint's parameters, in eval mode.
std::unique_ptr<batched_seq2seq::BatchedSeq2Seq> load_model(const std::string& path,
                                                            const CheckpointInfo& info);

}  // namespace attograd::translate_batched
