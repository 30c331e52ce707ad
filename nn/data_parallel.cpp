#include "nn/data_parallel.hpp"

#include <limits>
#include <optional>
#include <utility>

#include "autograd/fast/fast.hpp"
#include "tensor/error.hpp"
#include "tensor/parallel.hpp"

namespace attograd::nn {

DataParallel::DataParallel(Module& model, std::vector<std::shared_ptr<Module>> copies)
    : model_(model), copies_(std::move(copies)) {
  const std::vector<std::pair<std::string, Tensor>> named = model_.named_parameters();
  for (const auto& [name, parameter] : named) model_parameters_.push_back(parameter);
  for (size_t c = 0; c < copies_.size(); ++c) {
    check(copies_[c] != nullptr && copies_[c].get() != &model_,
          "DataParallel: copy {} is {}; give modules built apart from the model", c + 1,
          copies_[c] == nullptr ? "null" : "the model itself");
    const std::vector<std::pair<std::string, Tensor>> theirs = copies_[c]->named_parameters();
    check(theirs.size() == named.size(),
          "DataParallel: copy {} has {} parameters and the model {}; build the copies with the "
          "model's options",
          c + 1, theirs.size(), named.size());
    std::vector<Tensor> parameters;
    for (size_t i = 0; i < named.size(); ++i) {
      check(
          theirs[i].first == named[i].first && theirs[i].second.shape() == named[i].second.shape(),
          "DataParallel: copy {}'s parameter {} is '{}' {}, the model's is '{}' {}; build the "
          "copies with the model's options",
          c + 1, i, theirs[i].first, theirs[i].second.shape(), named[i].first,
          named[i].second.shape());
      parameters.push_back(theirs[i].second);
    }
    copy_parameters_.push_back(std::move(parameters));
  }
}

std::pair<int64_t, int64_t> DataParallel::part(int64_t rows, int64_t replica, int64_t replicas) {
  check(replicas >= 1 && replica >= 0 && replica < replicas && rows >= 0,
        "DataParallel::part: replica {} of {} (rows {}) is not a part; replica must be in [0, {})",
        replica, replicas, rows, replicas);
  return {rows * replica / replicas, rows * (replica + 1) / replicas};
}

void DataParallel::run(const std::function<void(int64_t replica, Module& module)>& step) {
  // Every thread steps as the caller would: the same fast-path switches, the
  // same grad mode (both are per thread), the same training mode.
  const fast::Switches switches = fast::Switches::current();
  const bool recording = grad_enabled();
  const bool training = model_.is_training();
  parallel::parallel_for(
      replicas(), std::numeric_limits<int64_t>::max(), [&](int64_t begin, int64_t end) {
        const fast::UseSwitches same_switches(switches);
        for (int64_t replica = begin; replica < end; ++replica) {
          const bool is_copy = replica > 0;
          Module& module = is_copy ? *copies_[static_cast<size_t>(replica - 1)] : model_;
          std::vector<Tensor>& parameters =
              is_copy ? copy_parameters_[static_cast<size_t>(replica - 1)] : model_parameters_;
          if (is_copy) {
            // A copy's values are copied in, and its gradients made, formed
            // and freed, on the thread that runs it: its blocks stay in that
            // thread's caches and free lists (tensor/fast/pool.hpp, the
            // storage cache), not handed from one thread to the other.
            const NoGradGuard no_grad;
            module.train(training);
            for (size_t i = 0; i < parameters.size(); ++i) {
              parameters[i].copy_from(model_parameters_[i]);
              zero_grad(parameters[i]);
            }
          }
          {
            std::optional<NoGradGuard> no_grad;
            if (!recording) no_grad.emplace();
            step(replica, module);
          }
          // With copies, every replica's deferred gradient parts
          // (autograd/fast/deferred_gradient.hpp) are formed on its thread:
          // the copies' to be added below, the model's because the optimizer
          // would form them anyway, later and on one thread.
          if (!copies_.empty()) {
            const NoGradGuard no_grad;
            for (const Tensor& parameter : parameters) grad(parameter);
          }
        }
      });
  const NoGradGuard no_grad;
  for (const std::vector<Tensor>& parameters : copy_parameters_) {
    for (size_t i = 0; i < parameters.size(); ++i) {
      const Tensor gradient = grad(parameters[i]);
      if (gradient.defined()) add_to_grad(model_parameters_[i], gradient);
    }
  }
}

}  // namespace attograd::nn
