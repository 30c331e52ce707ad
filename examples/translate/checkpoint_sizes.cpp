// examples/translate/checkpoint_sizes.cpp — metadata sizes against weight
// shapes (checkpoint_sizes.hpp).
#include "examples/translate/checkpoint_sizes.hpp"

#include <fmt/format.h>

#include <optional>
#include <utility>

#include "nn/safetensors_messages.hpp"
#include "tensor/error.hpp"

namespace attograd::translate_checkpoint {

namespace {

constexpr const char* kRemedy = "the file was edited or damaged: retrain, or restore the file";

}  // namespace

std::string recipe_of(const nn::Metadata& metadata) {
  if (metadata.contains("seq2seq.format")) return "tutorial";
  const auto recipe = metadata.find("recipe");
  return recipe == metadata.end() ? "" : recipe->second;
}

void require_recipe(const std::string& path, const nn::Metadata& metadata,
                    const std::string& recipe) {
  const std::string found = recipe_of(metadata);
  if (found == recipe) return;
  const std::string file = nn::printable(path, 300);
  check(!found.empty(),
        "'{}' is not a translation checkpoint (it has neither a 'seq2seq.format' nor a 'recipe' "
        "entry in its metadata); make one with `translate train`",
        file);
  check(found == "tutorial" || found == "batched" || found == "transformer",
        "'{}': the checkpoint's 'recipe' entry is '{}', not one of tutorial|batched|transformer; "
        "{}",
        file, nn::printable(found, 80), kRemedy);
  fail("'{}' is a checkpoint of the {} recipe, not the {} one; use it with --recipe {}{}", file,
       found, recipe, found, found == "tutorial" ? " (the default: leave --recipe out)" : "");
}

void require_layout(const std::string& path, const char* key, const text::Vocabulary& vocabulary,
                    text::SpecialLayout layout, const char* recipe) {
  if (const std::optional<std::string> difference = text::layout_difference(vocabulary, layout)) {
    fail("'{}': the checkpoint's {} does not hold the {} recipe's special tokens: {}; {}",
         nn::printable(path, 300), key, recipe, *difference, kRemedy);
  }
}

CheckpointSizes::CheckpointSizes(std::string path)
    : path_(std::move(path)), header_(nn::read_safetensors_header(path_)) {
  for (const nn::TensorInfo& tensor : header_.tensors) by_name_.emplace(tensor.name, &tensor);
}

const nn::TensorInfo* CheckpointSizes::find(const std::string& name) const {
  const auto found = by_name_.find(name);
  return found == by_name_.end() ? nullptr : found->second;
}

void CheckpointSizes::require(const char* key, int64_t value, const std::string& tensor,
                              size_t axis) const {
  const std::string file = nn::printable(path_, 300);
  check(value >= 1, "'{}': the metadata says {} {}, not a positive size; {}", file, key, value,
        kRemedy);
  const nn::TensorInfo* found = find(tensor);
  check(found != nullptr,
        "'{}': the metadata says {} {} but the file has no weight {} to confirm it; {}", file, key,
        value, tensor, kRemedy);
  const int64_t actual =
      axis < found->shape.size() ? found->shape[axis] : int64_t{-1};  // -1: no such axis
  check(actual == value,
        "'{}': the metadata says {} {} but its weight {} has shape {}, size {} on axis {}; {}",
        file, key, value, tensor, found->shape, actual, axis, kRemedy);
}

void CheckpointSizes::require_layers(const char* key, int64_t value,
                                     const std::string& pattern) const {
  const std::string file = nn::printable(path_, 300);
  check(value >= 1, "'{}': the metadata says {} {}, not a positive count; {}", file, key, value,
        kRemedy);
  // Counting the layers the weights have bounds the loop by the file, not by `value`.
  int64_t layers = 0;
  while (find(fmt::format(fmt::runtime(pattern), layers)) != nullptr) ++layers;
  check(layers == value, "'{}': the metadata says {} {} but the file holds weights for {} ({}); {}",
        file, key, value, layers, fmt::format(fmt::runtime(pattern), "<k>"), kRemedy);
}

void CheckpointSizes::require_dropout(double dropout) const {
  check(dropout >= 0 && dropout < 1, "'{}': the metadata says dropout {}, outside [0, 1); {}",
        nn::printable(path_, 300), dropout, kRemedy);
}

}  // namespace attograd::translate_checkpoint
