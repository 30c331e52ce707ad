// nn/data_parallel.hpp — one training step's batch split over copies of a
// model, each copy on its own thread.
//
// A small model (d2l's recipes: hidden 32, batch 64) spends most of a step on
// the bookkeeping of its ops — making tensors, recording nodes, walking the
// graph back — not on arithmetic, so splitting each product over two threads
// (tensor/parallel.hpp) gains nothing. Splitting the batch does: each of N
// replicas of the model takes 1/N of the batch and runs its own forward and
// its own backward on its own thread, and their gradients are then added into
// the model's, which the optimizer steps as usual.
//
//   nn::DataParallel parallel(model, {copy});  // copy: the same layers, built apart
//   optimizer.zero_grad();
//   parallel.run([&](int64_t replica, nn::Module& module) {  // replica 0 is model itself
//     backward(loss_of(module, part_of_batch[replica]));
//   });
//   optimizer.step();
//
// For a loss that is a sum over the batch's examples, the sum of the parts'
// gradients is the whole batch's gradient, added in another order (each
// replica's sums, then replica 0 + replica 1 + …): equal up to float rounding.
// A replica draws its own dropout masks. So a training depends on the replica
// count, never on the thread count or on timing: which rows a replica takes
// and the order of the final sums are fixed
// (tests/nn/test_data_parallel.cpp checks both).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "nn/module.hpp"

namespace attograd::nn {

class DataParallel {
 public:
  // copies: modules with model's named parameters (same names, same shapes,
  // same order), built apart from it; their values are overwritten with
  // model's before every step. model must outlive this object.
  DataParallel(Module& model, std::vector<std::shared_ptr<Module>> copies);

  // 1 + the number of copies.
  int64_t replicas() const { return static_cast<int64_t>(copies_.size()) + 1; }

  // One step: copies model's parameter values and training mode into every
  // copy and forgets the copies' gradients; then calls step(r, replica r) for
  // every r < replicas() on the threads of parallel::parallel_for (each
  // replica on whichever thread claims it, the caller's included; with fewer
  // threads than replicas a thread runs several in turn), each with the
  // caller's fast-path switches
  // and grad mode, and forms its deferred gradient parts there; then adds the
  // copies' gradients into model's, copy 1 first.
  // Products inside a step run on its thread alone. An exception thrown by a
  // step is rethrown once every step has ended, before anything is added.
  void run(const std::function<void(int64_t replica, Module& module)>& step);

  // The [begin, end) rows of a batch of `rows` that replica r takes: N
  // contiguous parts that differ in size by at most one, in replica order.
  static std::pair<int64_t, int64_t> part(int64_t rows, int64_t replica, int64_t replicas);

 private:
  Module& model_;
  std::vector<std::shared_ptr<Module>> copies_;
  std::vector<Tensor> model_parameters_;
  std::vector<std::vector<Tensor>> copy_parameters_;  // [copy][parameter]
};

}  // namespace attograd::nn
