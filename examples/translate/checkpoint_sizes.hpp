// examples/translate/checkpoint_sizes.hpp — the sizes a checkpoint's metadata
// states, checked against the shapes of the weights in the same file before
// a model of those sizes is built.
//
// A model is built from its checkpoint's metadata (hidden size, vocabulary
// sizes, layers), and only then are the weights read into it. An edited or
// damaged metadata entry would otherwise decide how much memory is allocated:
// a hidden size of 100,000 asks for 120 GB before any check runs. So each
// size is first compared with the shape of a weight it determines, read from
// the header alone (nn::read_safetensors_header: no values). The data section
// holds exactly the bytes its shapes state and lies inside the file, so a
// model whose sizes agree with them is about as large as the file itself.
//
//   const CheckpointSizes sizes(path);                // the header only
//   sizes.require("hidden_size", H, "encoder.rnn.weight_hh_l0", 1);
//   sizes.require_layers("num_layers", L, "encoder.rnn.weight_ih_l{}");
//   sizes.require_dropout(p);
//
//   error: 'run/checkpoint.safetensors': the metadata says hidden_size 100000 but its
//   weight encoder.rnn.weight_hh_l0 has shape (96,32), size 32 on axis 1; the file was
//   edited or damaged: retrain, or restore the file
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "models/text/vocabulary.hpp"
#include "nn/safetensors.hpp"

namespace attograd::translate_checkpoint {

// The recipe that wrote a checkpoint, from its metadata: "tutorial" (a
// seq2seq.format entry), the batched and Transformer recipes' "recipe"
// entry, or "" for a file no recipe wrote.
std::string recipe_of(const nn::Metadata& metadata);

// Throws unless the checkpoint at `path` was written by `recipe`; the
// message names the recipe that did write it and the --recipe to use:
//
//   error: 'run/checkpoint.safetensors' is a checkpoint of the batched recipe, not the
//   tutorial one; use it with --recipe batched (translate eval --recipe batched --checkpoint …)
void require_recipe(const std::string& path, const nn::Metadata& metadata,
                    const std::string& recipe);

// Throws unless `vocabulary` (the checkpoint's metadata entry `key`) holds
// exactly the special tokens of `layout`, the ones the recipe uses.
void require_layout(const std::string& path, const char* key, const text::Vocabulary& vocabulary,
                    text::SpecialLayout layout, const char* recipe);

class CheckpointSizes {
 public:
  // Reads the header of the checkpoint at `path`; throws Error naming the
  // file if it cannot.
  explicit CheckpointSizes(std::string path);
  CheckpointSizes(const CheckpointSizes&) = delete;  // by_name_ points into header_
  CheckpointSizes& operator=(const CheckpointSizes&) = delete;

  const nn::Metadata& metadata() const { return header_.metadata; }

  // Throws unless the metadata size `key` (= value) is at least 1 and equals
  // axis `axis` of the tensor named `tensor`, which must exist.
  void require(const char* key, int64_t value, const std::string& tensor, size_t axis) const;
  // Throws unless `value` is at least 1 and the tensors `pattern` names
  // ("{}" stands for the layer number) exist for 0 … value − 1 and not for
  // value: the layer count the weights show.
  void require_layers(const char* key, int64_t value, const std::string& pattern) const;
  // Throws unless the dropout probability lies in [0, 1).
  void require_dropout(double dropout) const;

 private:
  const nn::TensorInfo* find(const std::string& name) const;

  std::string path_;
  nn::TensorFileHeader header_;
  std::unordered_map<std::string, const nn::TensorInfo*> by_name_;  // into header_.tensors
};

}  // namespace attograd::translate_checkpoint
