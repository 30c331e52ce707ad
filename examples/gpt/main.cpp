// examples/gpt/main.cpp — a character-level GPT, nanoGPT's CPU recipe
// (models/gpt/gpt.hpp has the model, gpt_commands.hpp the training loop and
// the sampler, docs/gpt.md the walk-through).
//
//   gpt train                                   # 2,000 iterations on French sentences
//   gpt train --data input.txt --iters 5000     # any UTF-8 text
//   gpt train --resume out/gpt/checkpoint.safetensors --iters 4000
//   gpt sample --prompt "Je " --tokens 300 --temperature 0.8 --top-k 200
//
// Bad input — an empty, binary or non-UTF-8 file, a text too short for the
// block, a prompt character the model never saw, a flag beyond its limit —
// ends with a one-line "error: …" and exit status 2.
#include "examples/common/cli.hpp"
#include "examples/gpt/gpt_commands.hpp"

using namespace attograd;

int main(int argc, char** argv) {
  gpt_program::TrainFlags train;
  gpt_program::SampleFlags sample;
  cli::Parser parser("gpt",
                     "A character-level GPT (nanoGPT's CPU recipe). Commands: train, sample.");
  gpt_program::declare_train_flags(
      parser.add_command("train", "train on a text; writes a checkpoint and the loss curve"),
      train);
  gpt_program::declare_sample_flags(
      parser.add_command("sample", "continue a prompt with a trained checkpoint"), sample);
  return cli::run_main(parser, argc, argv, [&] {
    return parser.command() == "train" ? gpt_program::run_train(train)
                                       : gpt_program::run_sample(sample);
  });
}
