// bench/bench_transformer.cpp — d2l's Transformer recipe (`translate train
// --recipe transformer`) against the same recipe in PyTorch
// (bench/reference/transformer.py), alternately in one run.
//
//   ./build/bench/bench_transformer [--epochs 10] [--rounds 3] [--threads 1] [--replicas 1]
//
// --threads 2 --replicas 2: attograd splits each batch over two copies of
// the model on two threads (nn::DataParallel); PyTorch gets two threads.
//
// Prints target tokens per second, ms per epoch of the training loop and the
// final loss of each side, medians over the rounds, and attograd's speed over
// PyTorch's. Timings are for reading, never for pass/fail.
#include "bench/recipe_runs.hpp"

int main(int argc, char** argv) {
  return attograd::bench::recipe_main(
      argc, argv, {.recipe = "transformer", .script = "transformer.py", .epochs = 10});
}
