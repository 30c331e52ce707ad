// examples/gpt/gpt_commands.hpp — the `gpt` program's two commands: train
// (nanoGPT's CPU recipe on characters) and sample (continue a prompt).
// The model is models/gpt/gpt.hpp; this is the training file.
#pragma once

#include <cstdint>
#include <string>

#include "examples/common/cli.hpp"
#include "examples/common/inspect_tools.hpp"

namespace attograd::gpt_program {

// nanoGPT's README, "I only have a macbook": block 64, batch 12, 4 layers,
// 4 heads, 128 channels, 2,000 iterations, no dropout; train.py's AdamW
// (lr 1e-3 here as in its Shakespeare-char config, β 0.9/0.99, weight decay
// 0.1 on matrices), 100 warm-up iterations, cosine decay to 1e-4 at the last
// iteration, gradients clipped at norm 1.
struct TrainFlags {
  std::string data;  // "" for the French side of data/eng-fra.tsv
  std::string out = "out/gpt";
  std::string resume;
  int64_t iters = 2000;
  int64_t batch = 12;
  int64_t block = 64;
  int64_t layers = 4;
  int64_t heads = 4;
  int64_t embd = 128;
  double lr = 1e-3;
  double min_lr = 1e-4;
  int64_t warmup = 100;
  int64_t decay_iters =
      0;  // where the cosine reaches min_lr (nanoGPT's lr_decay_iters); 0: --iters
  double weight_decay = 0.1;
  double grad_clip = 1.0;
  int64_t eval_every = 250;
  int64_t seed = 1337;
  int threads = 1;  // for the large matrix products
  bool json = false;
  cli::InspectFlags inspect;  // --dot, --detect-anomaly, --profile
};

struct SampleFlags {
  std::string checkpoint = "out/gpt/checkpoint.safetensors";
  std::string prompt = "\n";
  int64_t tokens = 500;
  double temperature = 0.8;
  int64_t top_k = 200;
  int64_t seed = 1337;
  bool no_kv_cache = false;
};

void declare_train_flags(cli::Parser& parser, TrainFlags& flags);
void declare_sample_flags(cli::Parser& parser, SampleFlags& flags);

int run_train(const TrainFlags& flags);
int run_sample(const SampleFlags& flags);

// nanoGPT's get_lr: linear warm-up over `warmup` iterations, then a cosine
// from lr down to min_lr at iteration decay_iters (--iters when 0), min_lr
// after it.
double learning_rate(int64_t iteration, const TrainFlags& flags);

}  // namespace attograd::gpt_program
