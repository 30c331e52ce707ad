// examples/translate/batched_recipe.hpp — `translate --recipe batched`: d2l's
// batched English -> French recipe with Bahdanau attention
// (models/batched_seq2seq.hpp has the model, docs/attention.md the walk-through).
//
//   translate train --recipe batched                 # 600 pairs, 250 epochs, about a minute
//   translate train --recipe batched --epochs 20 --threads 1
//   echo "i'm home ." | translate translate --recipe batched --attention out/maps
//   translate eval --recipe batched                  # BLEU on the training pairs
//   translate eval --recipe batched --offset 600     # … on the next 600, never seen
//
// Each command is a function of already-parsed flags, so main() only has to
// pick the recipe. declare_batched_*_flags bind the flags to a parser; their
// defaults are d2l's hyperparameters.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "examples/common/cli.hpp"
#include "examples/translate/beam_flags.hpp"

namespace attograd::translate_batched {

struct BatchedTrainFlags {
  std::string data = "data/eng-fra.tsv";
  std::string direction = "eng-fra";  // eng-fra (d2l) or fra-eng
  int64_t num_examples = 600;         // the first pairs of the file (0: all)
  int64_t min_freq = 2;               // rarer words become <unk>
  int64_t num_steps = 10;             // T: sentences cut or padded to T ids
  int64_t embed = 32;
  int64_t hidden = 32;
  int64_t layers = 2;
  double dropout = 0.1;
  int64_t batch = 64;
  double lr = 0.005;
  int64_t epochs = 250;
  double clip = 1.0;
  int64_t seed = 0;     // initial weights, dropout masks and batch order
  int64_t threads = 0;  // 0: ATTOGRAD_NUM_THREADS, else every core
  int64_t print_every = 10;
  std::string attention_sentence = "i'm home .";
  std::string out = "out/translate_batched";
  bool json = false;
};

struct BatchedTranslateFlags {
  std::string checkpoint = "out/translate_batched/checkpoint.safetensors";
  std::string attention;  // folder for attention_<line>.svg, or "" for none
  translate_beam::BeamFlags beam;
};

struct BatchedEvalFlags {
  std::string checkpoint = "out/translate_batched/checkpoint.safetensors";
  std::string data;           // default: the checkpoint's data file
  int64_t offset = 0;         // skip this many pairs of the file first
  int64_t num_examples = -1;  // pairs to score after the offset (-1: the checkpoint's; 0: all)
  int64_t examples = 10;      // translations to print
  bool json = false;
  translate_beam::BeamFlags beam;
};

// Bind the flags of each command to `parser` (a command's parser).
void declare_batched_train_flags(cli::Parser& parser, BatchedTrainFlags& flags);
void declare_batched_translate_flags(cli::Parser& parser, BatchedTranslateFlags& flags);
void declare_batched_eval_flags(cli::Parser& parser, BatchedEvalFlags& flags);

// train: read and batch the data, train, write checkpoint.safetensors,
// loss.svg and attention.svg into flags.out, translate d2l's four test
// sentences, and print (or, with --json, put on stdout as one line) the
// summary. Returns the exit status.
int run_batched_train(const BatchedTrainFlags& flags);
// translate: one sentence per line of `in`, one translation per line of `out`;
// warnings about unknown or cut-off words go to `err`.
int run_batched_translate(const BatchedTranslateFlags& flags, std::istream& in, std::ostream& out,
                          std::ostream& err);
// eval: corpus BLEU-4 and d2l's sentence BLEU (k = 2) on a range of pairs.
int run_batched_eval(const BatchedEvalFlags& flags);

}  // namespace attograd::translate_batched
