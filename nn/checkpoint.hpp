// nn/checkpoint.hpp — saving a model, and resuming training, with safetensors.
//
// A model checkpoint is a safetensors file (nn/safetensors.hpp) holding every
// parameter under its dotted name, so PyTorch reads it as a state dict:
//
//   nn::save(model, "model.safetensors", {{"epochs", "20"}});
//   …
//   Model copy;                               // the same architecture, built first
//   nn::load(copy, "model.safetensors");      // values copied into its parameters
//
// load() checks the whole file before it touches the model: if anything is
// wrong — a tensor missing, one the model does not have, a shape that differs,
// a damaged file — it throws one Error listing every problem, and the model
// keeps its values. docs/checkpoints.md lists the messages.
//
// A training checkpoint also holds the optimizer's state (under "optimizer.",
// e.g. "optimizer.exp_avg.out.weight") and whatever else a resumed run needs,
// as metadata strings:
//
//   nn::save_training_state(path, model, &adam, {{"iteration", "1200"}});
//   …
//   nn::Metadata metadata = nn::read_metadata(path);   // e.g. vocabularies to build the model
//   Model model(…);  nn::Adam adam(model.named_parameters(), options);
//   nn::load_training_state(path, model, &adam);        // continues exactly where it stopped
//
// Models made of several top-level modules pass their named parameters instead
// of a Module: nn::named_parameters({{"encoder", encoder}, {"decoder", decoder}}).
#pragma once

#include <filesystem>

#include "nn/module.hpp"
#include "nn/optim.hpp"
#include "nn/safetensors.hpp"

namespace attograd::nn {

// Saves every parameter of `module` (converted to float) with `metadata`.
// Metadata keys starting with "attograd." are reserved.
void save(const Module& module, const std::filesystem::path& path, const Metadata& metadata = {});
void save(const NamedTensors& parameters, const std::filesystem::path& path,
          const Metadata& metadata = {});

// Copies the file's tensors into the module's parameters, in place (the
// tensors keep their identity, so optimizers holding them are unaffected).
// Every parameter must be in the file with the same shape and the file must
// hold nothing else — except the optimizer state of a training checkpoint,
// which is ignored. On any problem nothing is changed.
void load(Module& module, const std::filesystem::path& path);
void load(const NamedTensors& parameters, const std::filesystem::path& path);

// Saves the parameters, the optimizer's state (if `optimizer` is not null)
// and `metadata` in one file.
void save_training_state(const std::filesystem::path& path, const Module& module,
                         const Optimizer* optimizer, const Metadata& metadata = {});
void save_training_state(const std::filesystem::path& path, const NamedTensors& parameters,
                         const Optimizer* optimizer, const Metadata& metadata = {});

// Loads the parameters and (if `optimizer` is not null) the optimizer state,
// checking both before changing either, and returns the metadata that was
// saved with them. The optimizer must be of the kind that was saved and built
// over the same parameter names.
Metadata load_training_state(const std::filesystem::path& path, Module& module,
                             Optimizer* optimizer);
Metadata load_training_state(const std::filesystem::path& path, const NamedTensors& parameters,
                             Optimizer* optimizer);

// The metadata saved in a checkpoint (without attograd's own keys), e.g. to
// read the vocabularies a model must be built with before loading it. The
// whole file is read and validated.
Metadata read_metadata(const std::filesystem::path& path);

}  // namespace attograd::nn
