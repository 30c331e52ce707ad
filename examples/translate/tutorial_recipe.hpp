// examples/translate/tutorial_recipe.hpp — `translate` with the default
// recipe: the PyTorch seq2seq tutorial, one sentence pair at a time, French
// -> English with a GRU encoder and an attention decoder (models/seq2seq/seq2seq.hpp
// has the model, models/translation/ the data and the training loop,
// docs/translation.md the walk-through).
//
// Each command is a function of already-parsed flags, as in
// batched_recipe.hpp, so main() only has to pick the recipe. declare_*_flags
// bind the flags to a parser; their defaults are the tutorial's
// hyperparameters. run_train lives in tutorial_train.cpp, the rest in
// tutorial_recipe.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <set>
#include <string>
#include <vector>

#include "examples/common/cli.hpp"
#include "examples/common/inspect_tools.hpp"
#include "examples/common/run_report.hpp"
#include "examples/translate/beam_flags.hpp"
#include "examples/translate/report_parts.hpp"
#include "models/seq2seq/corpus.hpp"
#include "models/seq2seq/training.hpp"

namespace attograd::translate_tutorial {

// The file name of the checkpoint in a train run's --out folder.
inline constexpr const char* kCheckpointName = "checkpoint.safetensors";

struct TrainFlags {
  std::string data = "data/eng-fra.tsv";
  bool reverse = false;
  int64_t hidden = 256;
  std::string decoder = "location";
  double dropout = 0.1;
  double lr = 0.01;
  double teacher_forcing = 0.5;
  int64_t iters = 75000;
  int64_t seed = 1;
  int64_t split_seed = 1;
  double validation = 0.05;
  int64_t print_every = 5000;
  int64_t plot_every = 100;
  int64_t checkpoint_every = 5000;
  std::string out = "out/translate";
  std::string resume;
  int64_t examples = 5;
  bool json = false;
  bool dense_embeddings = false;
  int threads = 1;
  cli::InspectFlags inspect;  // --dot, --detect-anomaly, --profile
  // The flags named on the command line (cli::Parser::given()): with
  // --resume, one that disagrees with the checkpoint is an error, and the
  // data flags left out take the checkpoint's values.
  std::set<std::string> given;
};

struct TranslateFlags {
  std::string checkpoint = std::string("out/translate/") + kCheckpointName;
  std::string attention;
  std::string report;  // report.html of the sentences, or "" for none
  std::size_t report_maps = translate_report::kReportMaps;  // sentences whose maps it keeps
  translate_beam::BeamFlags beam;
};

struct EvalFlags {
  std::string checkpoint = std::string("out/translate/") + kCheckpointName;
  std::string data;
  int64_t examples = 10;
  int64_t seed = 1;
  bool json = false;
  translate_beam::BeamFlags beam;
};

// Bind the flags of each command to `parser` (a command's parser).
void declare_train_flags(cli::Parser& parser, TrainFlags& flags);
void declare_translate_flags(cli::Parser& parser, TranslateFlags& flags);
void declare_eval_flags(cli::Parser& parser, EvalFlags& flags);

// train: read the data (or resume a checkpoint), train until --iters or
// SIGINT / SIGTERM, write checkpoint.safetensors, loss.svg and attention_*.svg
// into flags.out, then print the loss table, example translations and the
// validation BLEU (with --json, a summary line on stdout). Returns the exit
// status: 0, or 130 (SIGINT) or 143 (SIGTERM) when interrupted (after saving
// the checkpoint and loss.svg).
int run_train(const TrainFlags& flags);
// translate: one sentence per line of stdin, one translation per line of
// stdout (with --nbest, the K best, one a line: beam_flags.hpp); warnings
// about unknown or cut-off words go to stderr.
int run_translate(const TranslateFlags& flags);
// eval: corpus BLEU-4 of a checkpoint and a few example translations,
// greedy or with --beam K.
int run_eval(const EvalFlags& flags);

// ---------------------------------------------------------------- shared by the commands

// read_checkpoint_info, then the sizes its metadata states checked against
// the limits of size_limits.hpp, before any model of those sizes is built.
seq2seq::CheckpointInfo read_checked_checkpoint_info(const std::string& path);

// `count` distinct indices of [0, population) in the order drawn by `random`
// (a partial Fisher–Yates shuffle): the examples eval and train print, so a
// count above the population prints each pair once, and a seed always
// draws the same ones.
std::vector<size_t> draw_without_replacement(size_t population, int64_t count, Generator& random);

// Prints the lines the reader skipped, with file:line, at most `limit` of them.
void print_skipped(std::ostream& out, const text::ReadReport& report, size_t limit = 10);

// The attention of one translation as a heatmap: output words (EOS included)
// down, source words (EOS included) across. The location decoder also
// attends to the zero-padded slots after the source, so it gets a column for
// each of them.
void save_attention_map(const std::filesystem::path& path,
                        const seq2seq::SentenceTranslation& translation,
                        seq2seq::DecoderKind decoder, int64_t max_length);
// The same map, with the sentence's translation, into report.html (named
// `sentence` in its selector).
void report_sentence(cli::RunReport& report, const std::string& sentence,
                     const std::string& reference, const seq2seq::SentenceTranslation& translation,
                     seq2seq::DecoderKind decoder, int64_t max_length);

}  // namespace attograd::translate_tutorial
