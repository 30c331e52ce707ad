// bench/bench_batched.cpp — d2l's batched Bahdanau recipe (`translate train
// --recipe batched`) against the same recipe in PyTorch
// (bench/reference/batched.py), alternately in one run.
//
//   ./build/bench/bench_batched [--epochs 30] [--rounds 3] [--threads 1] [--replicas 1]
//
// --threads 2 --replicas 2: attograd splits each batch over two copies of
// the model on two threads (nn::DataParallel); PyTorch gets two threads.
//
// Prints target tokens per second, ms per epoch of the training loop and the
// final loss of each side, medians over the rounds, and attograd's speed over
// PyTorch's. Timings are for reading, never for pass/fail.
#include "bench/recipe_runs.hpp"

int main(int argc, char** argv) {
  return attograd::bench::recipe_main(argc, argv,
                                      {.recipe = "batched", .script = "batched.py", .epochs = 30});
}
