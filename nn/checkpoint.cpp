// nn/checkpoint.cpp — models and training state to and from safetensors files.
//
// Loading is two passes: first every problem is collected (read_safetensors
// has already refused a damaged file), then, only if there are none, values
// are copied into the existing tensors. So a failed load never leaves a model
// half old and half new.
#include "nn/checkpoint.hpp"

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "nn/safetensors_header.hpp"
#include "tensor/error.hpp"

namespace attograd::nn {

namespace {

// The optimizer's tensors share the file with the parameters under this
// prefix, and the optimizer's kind is recorded under this metadata key.
constexpr std::string_view kOptimizerPrefix = "optimizer.";
constexpr const char* kOptimizerKey = "attograd.optimizer";
constexpr std::string_view kReservedPrefix = "attograd.";

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

void check_parameters(const char* function, const std::filesystem::path& path,
                      const NamedTensors& parameters) {
  std::set<std::string> names;
  for (const auto& [name, tensor] : parameters) {
    check(names.insert(name).second,
          "{}: '{}': two parameters are named '{}'; prefix the names of different modules, "
          "e.g. nn::named_parameters({{\"encoder\", encoder}}, {{\"decoder\", decoder}})",
          function, path.string(), name);
    check(tensor.defined(), "{}: '{}': parameter '{}' is an undefined tensor", function,
          path.string(), name);
  }
}

TensorFile file_to_save(const char* function, const std::filesystem::path& path,
                        const NamedTensors& parameters, const Optimizer* optimizer,
                        const Metadata& metadata) {
  check_parameters(function, path, parameters);
  for (const auto& [key, value] : metadata) {
    check(!starts_with(key, kReservedPrefix),
          "{}: '{}': metadata key '{}' is reserved (keys starting with \"attograd.\" are "
          "attograd's own)",
          function, path.string(), key);
  }
  TensorFile file{parameters, metadata};
  if (optimizer) {
    for (const auto& [name, tensor] : parameters) {
      check(!starts_with(name, kOptimizerPrefix),
            "{}: '{}': parameter '{}' starts with \"optimizer.\", which a training checkpoint "
            "uses for the optimizer's state; rename the module",
            function, path.string(), name);
    }
    for (auto& [name, tensor] : optimizer->state()) {
      file.tensors.emplace_back(std::string(kOptimizerPrefix) + name, tensor);
    }
    file.metadata[kOptimizerKey] = optimizer->type_name();
  }
  return file;
}

// The flat index of the first NaN or infinity in `tensor`, if any.
std::optional<int64_t> first_non_finite(const Tensor& tensor) {
  const Tensor values = tensor.contiguous_data();
  for (int64_t i = 0; i < values.numel(); ++i) {
    if (!std::isfinite(values.data()[i])) return i;
  }
  return std::nullopt;
}

// A model never needs NaN or infinity: such a file was saved by a run that
// diverged, and loading it would make every output meaningless.
void add_non_finite_problems(const TensorFile& file, std::vector<std::string>& problems) {
  for (const auto& [name, tensor] : file.tensors) {
    if (const std::optional<int64_t> index = first_non_finite(tensor)) {
      problems.push_back(fmt::format(
          "tensor '{}' of shape {} holds {} at flat index {} (saved by a run that diverged? "
          "retrain with a smaller learning rate)",
          printable(name), tensor.shape(), tensor.contiguous_data().data()[*index], *index));
    }
  }
}

// The problems copying `file` into `parameters` would meet. A training
// checkpoint's optimizer tensors are not the parameters' business.
std::vector<std::string> parameter_problems(const NamedTensors& parameters,
                                            const TensorFile& file) {
  const bool has_optimizer_state = file.metadata.count(kOptimizerKey) > 0;
  std::map<std::string, const Tensor*> in_file;
  for (const auto& [name, tensor] : file.tensors) {
    if (has_optimizer_state && starts_with(name, kOptimizerPrefix)) continue;
    in_file[name] = &tensor;
  }
  std::vector<std::string> problems;
  std::set<std::string> wanted;
  for (const auto& [name, parameter] : parameters) {
    wanted.insert(name);
    const auto found = in_file.find(name);
    if (found == in_file.end()) {
      problems.push_back(fmt::format("missing tensor '{}' (the model's has shape {})",
                                     printable(name), parameter.shape()));
    } else if (found->second->shape() != parameter.shape()) {
      problems.push_back(fmt::format("shape mismatch for '{}': the file has {}, the model has {}",
                                     printable(name), found->second->shape(), parameter.shape()));
    }
  }
  for (const auto& [name, tensor] : file.tensors) {
    if (!in_file.count(name) || wanted.count(name)) continue;
    problems.push_back(
        fmt::format("unexpected tensor '{}' of shape {} (the model has no parameter of that name)",
                    printable(name), tensor.shape()));
  }
  add_non_finite_problems(file, problems);
  return problems;
}

// The optimizer's part of a training checkpoint, without the prefix.
NamedTensors optimizer_state_in(const TensorFile& file) {
  NamedTensors state;
  for (const auto& [name, tensor] : file.tensors) {
    if (starts_with(name, kOptimizerPrefix)) {
      state.emplace_back(name.substr(kOptimizerPrefix.size()), tensor);
    }
  }
  return state;
}

void fail_on_problems(const char* function, const std::filesystem::path& path,
                      const std::string& target, const std::vector<std::string>& problems) {
  check(problems.empty(), "{}: cannot load '{}' into {}: {} problem{}, nothing was changed:{}",
        function, printable(path.string(), 300), target, problems.size(),
        problems.size() == 1 ? "" : "s", problem_lines(problems));
}

void copy_values(const NamedTensors& parameters, const TensorFile& file) {
  std::map<std::string, const Tensor*> by_name;
  for (const auto& [name, tensor] : file.tensors) by_name[name] = &tensor;
  for (const auto& [name, parameter] : parameters) {
    Tensor target = parameter;
    target.copy_from(*by_name.at(name));
  }
}

Metadata user_metadata(Metadata metadata) {
  std::erase_if(metadata,
                [](const auto& item) { return starts_with(item.first, kReservedPrefix); });
  return metadata;
}

void load_into(const NamedTensors& parameters, const std::string& target,
               const std::filesystem::path& path) {
  check_parameters("load", path, parameters);
  const TensorFile file = read_safetensors(path);
  fail_on_problems("load", path, target, parameter_problems(parameters, file));
  copy_values(parameters, file);
}

Metadata load_training_state_into(const std::filesystem::path& path, const NamedTensors& parameters,
                                  const std::string& target, Optimizer* optimizer) {
  check_parameters("load_training_state", path, parameters);
  const TensorFile file = read_safetensors(path);
  std::vector<std::string> problems = parameter_problems(parameters, file);
  NamedTensors optimizer_state;
  if (optimizer) {
    const auto saved_kind = file.metadata.find(kOptimizerKey);
    if (saved_kind == file.metadata.end()) {
      problems.push_back(
          "the file holds no optimizer state (it was saved without an optimizer); pass nullptr "
          "as the optimizer to load only the model");
    } else if (saved_kind->second != optimizer->type_name()) {
      problems.push_back(fmt::format("the file holds {} optimizer state, but the optimizer is {}",
                                     saved_kind->second, optimizer->type_name()));
    } else {
      optimizer_state = optimizer_state_in(file);
      for (const std::string& problem : optimizer->state_problems(optimizer_state)) {
        problems.push_back(problem);
      }
    }
  }
  fail_on_problems(
      "load_training_state", path,
      optimizer ? fmt::format("{} and its {} optimizer", target, optimizer->type_name()) : target,
      problems);
  copy_values(parameters, file);
  if (optimizer) optimizer->load_state(optimizer_state);
  return user_metadata(file.metadata);
}

}  // namespace

void save(const Module& module, const std::filesystem::path& path, const Metadata& metadata) {
  save(module.named_parameters(), path, metadata);
}

void save(const NamedTensors& parameters, const std::filesystem::path& path,
          const Metadata& metadata) {
  write_safetensors(path, file_to_save("save", path, parameters, nullptr, metadata));
}

void load(Module& module, const std::filesystem::path& path) {
  load_into(module.named_parameters(), module.type_name(), path);
}

void load(const NamedTensors& parameters, const std::filesystem::path& path) {
  load_into(parameters, "the parameters", path);
}

void save_training_state(const std::filesystem::path& path, const Module& module,
                         const Optimizer* optimizer, const Metadata& metadata) {
  save_training_state(path, module.named_parameters(), optimizer, metadata);
}

void save_training_state(const std::filesystem::path& path, const NamedTensors& parameters,
                         const Optimizer* optimizer, const Metadata& metadata) {
  write_safetensors(path,
                    file_to_save("save_training_state", path, parameters, optimizer, metadata));
}

Metadata load_training_state(const std::filesystem::path& path, Module& module,
                             Optimizer* optimizer) {
  return load_training_state_into(path, module.named_parameters(), module.type_name(), optimizer);
}

Metadata load_training_state(const std::filesystem::path& path, const NamedTensors& parameters,
                             Optimizer* optimizer) {
  return load_training_state_into(path, parameters, "the parameters", optimizer);
}

Metadata read_metadata(const std::filesystem::path& path) {
  return user_metadata(read_safetensors(path).metadata);
}

}  // namespace attograd::nn
