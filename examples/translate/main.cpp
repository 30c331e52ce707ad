// examples/translate/main.cpp — French -> English translation with a GRU
// encoder and an attention decoder, the PyTorch seq2seq tutorial's recipe
// (models/seq2seq.hpp has the model, models/translation/ the data and the
// training loop, docs/translation.md the walk-through).
//
//   translate train                          # the full recipe: 75,000 iterations
//   translate train --iters 3000             # a short run: a minute or less
//   translate train --decoder bahdanau       # additive attention instead
//   translate train --resume out/translate/checkpoint.safetensors --iters 100000
//   echo "je suis fatigue ." | translate translate --attention out/maps
//   translate eval                           # BLEU on the held-out split
//   translate train --recipe batched         # d2l's batched recipe (batched_recipe.hpp)
//
// Every flag has a default (see --help). Bad input — a missing or empty data
// file, a checkpoint that does not fit, an unknown flag — ends with a one-line
// "error: …" and exit status 2, and leaves no half-written file behind.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "examples/common/cli.hpp"
#include "examples/common/svg_plot.hpp"
#include "examples/translate/batched_recipe.hpp"
#include "models/seq2seq.hpp"
#include "models/text/normalize.hpp"
#include "models/translation/corpus.hpp"
#include "models/translation/training.hpp"
#include "tensor/error.hpp"
#include "tensor/parallel.hpp"

using namespace attograd;
using namespace attograd::seq2seq;
namespace fs = std::filesystem;

namespace {

constexpr const char* kCheckpointName = "checkpoint.safetensors";

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
};

struct TranslateFlags {
  std::string checkpoint = std::string("out/translate/") + kCheckpointName;
  std::string attention;
};

struct EvalFlags {
  std::string checkpoint = std::string("out/translate/") + kCheckpointName;
  std::string data;
  int64_t examples = 10;
  int64_t seed = 1;
  bool json = false;
};

// ---------------------------------------------------------------- Ctrl-C

// Set by the SIGINT handler; the training loop checks it before each
// iteration, so the handler does nothing but this one async-signal-safe write.
volatile std::sig_atomic_t interrupted = 0;

extern "C" void on_interrupt(int) { interrupted = 1; }

// Installs on_interrupt for the lifetime of the object. SA_RESETHAND puts the
// default action back after the first Ctrl-C, so a second one ends the
// program at once if saving ever hangs.
class InterruptHandler {
 public:
  InterruptHandler() {
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &action, &previous_);
  }
  ~InterruptHandler() { sigaction(SIGINT, &previous_, nullptr); }
  InterruptHandler(const InterruptHandler&) = delete;
  InterruptHandler& operator=(const InterruptHandler&) = delete;

 private:
  struct sigaction previous_ {};
};

// ---------------------------------------------------------------- printing

std::string duration_text(double seconds) {
  const auto total = static_cast<int64_t>(seconds + 0.5);
  if (total >= 3600) return fmt::format("{}h {:02}m", total / 3600, total % 3600 / 60);
  if (total >= 60) return fmt::format("{}m {:02}s", total / 60, total % 60);
  return fmt::format("{}s", total);
}

// Lines the reader skipped, with file:line, at most `limit` of them.
void print_skipped(std::ostream& out, const text::ReadReport& report, size_t limit = 10) {
  for (size_t i = 0; i < report.skipped.size() && i < limit; ++i) {
    out << "warning: " << report.skipped[i].message << " (line skipped)\n";
  }
  if (report.skipped.size() > limit) {
    out << fmt::format("warning: … and {} more skipped lines\n", report.skipped.size() - limit);
  }
}

// The attention of one translation as a heatmap: output words (EOS included)
// down, source words (EOS included) across. The location decoder also
// attends to the zero-padded slots after the source, so it gets a column for
// each of them.
void save_attention_map(const fs::path& path, const SentenceTranslation& translation,
                        DecoderKind decoder, int64_t max_length) {
  std::vector<std::string> columns = translation.source_words;
  columns.push_back("<EOS>");
  if (decoder == DecoderKind::location) {
    while (static_cast<int64_t>(columns.size()) < max_length) columns.push_back("<pad>");
  }
  std::vector<std::string> rows = translation.output_words;
  if (translation.decoded.reached_eos) rows.push_back("<EOS>");
  const size_t width = columns.size();
  std::vector<double> values;
  for (int64_t step = 0; step < translation.decoded.steps; ++step) {
    for (size_t column = 0; column < width; ++column) {
      values.push_back(
          translation.decoded.attention[static_cast<size_t>(step * max_length) + column]);
    }
  }
  plot::Heatmap map(rows.size(), width, values);
  map.title(fmt::format("Attention ({} decoder)", to_string(decoder)))
      .row_labels(rows)
      .column_labels(columns)
      .x_label("Input")
      .y_label("Output")
      .value_limits(0, 1)
      .colorbar_label("weight");
  map.save(path);
}

void save_loss_curve(const fs::path& path, const TrainingProgress& progress, int64_t plot_every) {
  std::vector<double> x, y;
  for (size_t i = 0; i < progress.plot_losses.size(); ++i) {
    x.push_back(static_cast<double>((static_cast<int64_t>(i) + 1) * plot_every));
    y.push_back(progress.plot_losses[i]);
  }
  plot::LineChart chart;
  chart.title(fmt::format("Training loss (NLL per target word, mean of {} iterations)", plot_every))
      .x_label("iteration")
      .y_label("loss")
      .legend(plot::LegendPosition::hidden)
      .line("loss", x, y);
  chart.save(path);
}

// ---------------------------------------------------------------- train

Seq2SeqOptions model_options(const TrainFlags& flags, const Corpus& corpus) {
  return Seq2SeqOptions(corpus.source_vocabulary.size(), corpus.target_vocabulary.size())
      .hidden_size(flags.hidden)
      .max_length(10)
      .dropout(flags.dropout)
      .decoder(decoder_kind_from_string(flags.decoder));
}

TrainingOptions training_options(const TrainFlags& flags) {
  return TrainingOptions()
      .iterations(flags.iters)
      .learning_rate(flags.lr)
      .teacher_forcing(flags.teacher_forcing)
      .seed(static_cast<uint64_t>(flags.seed))
      .print_every(flags.print_every)
      .plot_every(flags.plot_every)
      .sparse_embeddings(!flags.dense_embeddings);
}

// Prints `count` pairs picked at random from `pairs` as the tutorial's
// evaluateRandomly does: > source, = reference, < output.
void print_examples(std::ostream& out, Seq2Seq& model, const Corpus& corpus,
                    const std::vector<text::SentencePair>& pairs, int64_t count,
                    Generator& random) {
  for (int64_t i = 0; i < count && !pairs.empty(); ++i) {
    const text::SentencePair& pair = pairs[random.below(pairs.size())];
    const SentenceTranslation translation =
        translate_sentence(model, corpus.source_vocabulary, corpus.target_vocabulary, pair.source);
    out << "> " << pair.source << "\n= " << pair.target << "\n< "
        << text::join_words(translation.output_words) << "\n\n";
  }
}

int run_train(const TrainFlags& flags) {
  // One pair at a time is a chain of small products: threads mostly wait.
  parallel::set_num_threads(flags.threads);
  std::ostream& out = flags.json ? std::cerr : std::cout;  // with --json stdout holds one line

  // Everything that can fail on bad input happens before anything is written.
  std::optional<CheckpointInfo> resumed;
  if (!flags.resume.empty()) resumed = read_checkpoint_info(flags.resume);
  const CorpusOptions data = CorpusOptions()
                                 .path(flags.data)
                                 .reverse(flags.reverse)
                                 .max_length(resumed ? resumed->model.max_length() : 10)
                                 .validation_fraction(flags.validation)
                                 .split_seed(static_cast<uint64_t>(flags.split_seed));
  const Corpus corpus = load_corpus(data);
  print_skipped(std::cerr, corpus.report);
  const bool french_first = corpus.direction == text::Direction::kFrenchToEnglish;
  out << fmt::format("Read {} sentence pairs ({})\n", corpus.report.pairs_kept,
                     corpus.report.summary());
  out << fmt::format("Trimmed to {} sentence pairs ({} -> {}); {} for training, {} held out\n",
                     corpus.pairs.size(), french_first ? "French" : "English",
                     french_first ? "English" : "French", corpus.split.train.size(),
                     corpus.split.validation.size());
  out << fmt::format("Counted words: {} {}, {} {}\n", french_first ? "fra" : "eng",
                     corpus.source_vocabulary.size(), french_first ? "eng" : "fra",
                     corpus.target_vocabulary.size());

  Seq2SeqOptions options = model_options(flags, corpus);
  TrainingOptions training = training_options(flags);
  if (resumed) {
    check_vocabularies(flags.resume, *resumed, corpus.source_vocabulary, corpus.target_vocabulary);
    options = resumed->model;
    training = resumed->training;
    training.iterations(flags.iters);
    check(resumed->progress.iteration <= flags.iters,
          "{}: the checkpoint is at iteration {}, beyond --iters {}; pass a larger --iters to "
          "continue it",
          flags.resume, resumed->progress.iteration, flags.iters);
    out << fmt::format("Resuming {} at iteration {} (model, seed and rates from the checkpoint)\n",
                       flags.resume, resumed->progress.iteration);
  }

  Generator initial(training.seed());
  Seq2Seq model(options, initial);
  Trainer trainer(
      model, encode_pairs(corpus.split.train, corpus.source_vocabulary, corpus.target_vocabulary),
      training);
  if (resumed) load_training_state(flags.resume, trainer, *resumed);

  const fs::path folder = flags.out;
  fs::create_directories(folder);
  const fs::path checkpoint_path = folder / kCheckpointName;
  const fs::path loss_path = folder / "loss.svg";
  auto save = [&] {
    CheckpointInfo info{options,  corpus.source_vocabulary, corpus.target_vocabulary, data,
                        training, trainer.progress()};
    save_checkpoint(checkpoint_path, model, &trainer.optimizer(), info);
    save_loss_curve(loss_path, trainer.progress(), training.plot_every());
  };

  out << fmt::format("Training {} parameters ({} decoder, H = {}) for {} iterations\n",
                     model.parameter_count(), to_string(options.decoder()), options.hidden_size(),
                     training.iterations());
  out << std::flush;
  double last_loss =
      trainer.progress().interval_losses.empty() ? 0.0 : trainer.progress().interval_losses.back();
  Trainer::Hooks hooks;
  hooks.report = [&](const IntervalReport& report) {
    last_loss = report.average_loss;
    out << fmt::format("iter {:>6}/{} ({:5.1f}%)  loss {:.4f}  {:6.0f} it/s  ETA {}\n",
                       report.iteration, report.iterations,
                       100.0 * static_cast<double>(report.iteration) /
                           static_cast<double>(std::max<int64_t>(report.iterations, 1)),
                       report.average_loss, report.iterations_per_second,
                       duration_text(report.seconds_left))
        << std::flush;
  };
  hooks.checkpoint_every = flags.checkpoint_every;
  hooks.checkpoint = save;
  hooks.stop_requested = [] { return interrupted != 0; };

  const int64_t first_iteration = trainer.progress().iteration;
  const double seconds_before = trainer.progress().train_seconds;
  bool finished = false;
  {
    const InterruptHandler handler;
    finished = trainer.run(hooks);
  }
  save();
  if (!finished) {
    out << fmt::format("Interrupted at iteration {}; saved {} — continue with --resume {}\n",
                       trainer.progress().iteration, checkpoint_path.string(),
                       checkpoint_path.string());
    return 130;  // 128 + SIGINT, what a shell reports for Ctrl-C
  }
  const int64_t iterations_run = trainer.progress().iteration - first_iteration;
  const double ms_per_iteration =
      iterations_run > 0 ? 1000.0 * (trainer.progress().train_seconds - seconds_before) /
                               static_cast<double>(iterations_run)
                         : 0.0;

  // Results: the loss table, translations, attention maps, validation BLEU.
  out << "\nAverage loss per target word, per interval of " << training.print_every()
      << " iterations:\n";
  const std::vector<double>& table = trainer.progress().interval_losses;
  for (size_t i = 0; i < table.size(); ++i) {
    out << fmt::format("  {:>6}-{:<6} {:.4f}\n",
                       static_cast<int64_t>(i) * training.print_every() + 1,
                       static_cast<int64_t>(i + 1) * training.print_every(), table[i]);
  }
  out << fmt::format("{:.3f} ms per iteration ({} iterations this run)\n\n", ms_per_iteration,
                     iterations_run);

  Generator random(static_cast<uint64_t>(flags.seed) + 1000);
  out << "Training sentences:\n";
  print_examples(out, model, corpus, corpus.split.train, flags.examples, random);
  out << "Held-out sentences:\n";
  print_examples(out, model, corpus, corpus.split.validation, flags.examples, random);

  for (int64_t i = 0; i < std::min<int64_t>(flags.examples, 3) && !corpus.split.train.empty();
       ++i) {
    const text::SentencePair& pair = corpus.split.train[random.below(corpus.split.train.size())];
    const SentenceTranslation translation =
        translate_sentence(model, corpus.source_vocabulary, corpus.target_vocabulary, pair.source);
    save_attention_map(folder / fmt::format("attention_{}.svg", i + 1), translation,
                       options.decoder(), options.max_length());
  }

  const Evaluation validation =
      evaluate(model, corpus.source_vocabulary, corpus.target_vocabulary, corpus.split.validation);
  out << fmt::format(
      "Validation BLEU-4: {:.4f} over {} source sentences ({} unknown words mapped to <unk>)\n",
      validation.bleu.score, validation.examples.size(), validation.unknown_words);
  out << fmt::format("Wrote {}, {} and attention_*.svg in {}\n",
                     checkpoint_path.filename().string(), loss_path.filename().string(),
                     folder.string());

  if (flags.json) {
    const nlohmann::json summary = {{"pairs", corpus.pairs.size()},
                                    {"train_pairs", corpus.split.train.size()},
                                    {"validation_pairs", corpus.split.validation.size()},
                                    {"source_vocabulary", corpus.source_vocabulary.size()},
                                    {"target_vocabulary", corpus.target_vocabulary.size()},
                                    {"decoder", std::string(to_string(options.decoder()))},
                                    {"iterations", trainer.progress().iteration},
                                    {"ms_per_iteration", ms_per_iteration},
                                    {"final_loss", last_loss},
                                    {"validation_bleu", validation.bleu.score},
                                    {"validation_unknown_words", validation.unknown_words},
                                    {"checkpoint", checkpoint_path.string()}};
    std::cout << summary.dump() << std::endl;
  }
  return 0;
}

// ---------------------------------------------------------------- translate

int run_translate(const TranslateFlags& flags) {
  const CheckpointInfo info = read_checkpoint_info(flags.checkpoint);
  const std::unique_ptr<Seq2Seq> model = load_model(flags.checkpoint, info);
  if (!flags.attention.empty()) fs::create_directories(flags.attention);
  int64_t line_number = 0, translated = 0, unknown = 0;
  std::string line;
  while (std::getline(std::cin, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::optional<std::string> normalized = text::normalize_sentence(line);
    if (!normalized) {
      std::cerr << fmt::format(
          "warning: stdin:{}: invalid UTF-8 (byte {}); printed an empty line\n", line_number,
          text::first_invalid_utf8(line).value_or(0));
      std::cout << "\n";
      continue;
    }
    const SentenceTranslation translation =
        translate_sentence(*model, info.source_vocabulary, info.target_vocabulary, *normalized);
    if (!translation.unknown_words.empty()) {
      std::string words;
      for (const std::string& word : translation.unknown_words) {
        words += (words.empty() ? "'" : ", '") + word + "'";
      }
      std::cerr << fmt::format("warning: stdin:{}: {} unknown word{} mapped to <unk>: {}\n",
                               line_number, translation.unknown_words.size(),
                               translation.unknown_words.size() == 1 ? "" : "s", words);
      unknown += static_cast<int64_t>(translation.unknown_words.size());
    }
    if (translation.dropped_words > 0) {
      std::cerr << fmt::format(
          "warning: stdin:{}: the model reads at most {} words; the last {} were cut off\n",
          line_number, info.model.max_length() - 1, translation.dropped_words);
    }
    std::cout << text::join_words(translation.output_words) << "\n" << std::flush;
    if (!flags.attention.empty()) {
      save_attention_map(fs::path(flags.attention) / fmt::format("attention_{}.svg", line_number),
                         translation, info.model.decoder(), info.model.max_length());
    }
    ++translated;
  }
  std::cerr << fmt::format("translated {} sentence{}; {} unknown word{} mapped to <unk>\n",
                           translated, translated == 1 ? "" : "s", unknown,
                           unknown == 1 ? "" : "s");
  return 0;
}

// ---------------------------------------------------------------- eval

int run_eval(const EvalFlags& flags) {
  const CheckpointInfo info = read_checkpoint_info(flags.checkpoint);
  const std::unique_ptr<Seq2Seq> model = load_model(flags.checkpoint, info);
  std::vector<text::SentencePair> pairs;
  std::string name;
  if (flags.data.empty()) {
    // The held-out split of the training data, rebuilt from the checkpoint's settings.
    const Corpus corpus = load_corpus(info.data);
    check_vocabularies(flags.checkpoint, info, corpus.source_vocabulary, corpus.target_vocabulary);
    pairs = corpus.split.validation;
    name = fmt::format("the validation split of {}", info.data.path().string());
  } else {
    const text::PairSet set =
        text::read_pairs(flags.data, text::ReadOptions().reverse(info.data.reverse()));
    print_skipped(std::cerr, set.report);
    text::require_pairs(set.pairs, set.report, "to evaluate");
    pairs = set.pairs;
    name = flags.data;
  }
  const Evaluation evaluation =
      evaluate(*model, info.source_vocabulary, info.target_vocabulary, pairs);
  std::ostream& out = flags.json ? std::cerr : std::cout;
  const text::BleuDetails& bleu = evaluation.bleu;
  out << fmt::format(
      "BLEU-4 {:.4f} on {} ({} pairs, {} source sentences); precisions {:.3f} {:.3f} {:.3f} "
      "{:.3f}, brevity penalty {:.3f}\n",
      bleu.score, name, pairs.size(), evaluation.examples.size(), bleu.precisions[0],
      bleu.precisions[1], bleu.precisions[2], bleu.precisions[3], bleu.brevity_penalty);
  out << fmt::format("{} unknown source words mapped to <unk>, {} cut off beyond {} words\n\n",
                     evaluation.unknown_words, evaluation.dropped_words,
                     info.model.max_length() - 1);
  Generator random(static_cast<uint64_t>(flags.seed));
  for (int64_t i = 0; i < flags.examples && !evaluation.examples.empty(); ++i) {
    const EvaluationExample& example =
        evaluation.examples[random.below(evaluation.examples.size())];
    out << "> " << example.source << "\n";
    for (const std::string& reference : example.references) out << "= " << reference << "\n";
    out << "< " << example.output << "\n\n";
  }
  if (flags.json) {
    const nlohmann::json summary = {{"bleu", bleu.score},
                                    {"pairs", pairs.size()},
                                    {"sentences", evaluation.examples.size()},
                                    {"unknown_words", evaluation.unknown_words},
                                    {"dropped_words", evaluation.dropped_words}};
    std::cout << summary.dump() << std::endl;
  }
  return 0;
}

// The recipe decides which flags the commands take, so it is read before the
// parser is built: the value after the last `--recipe` (or `--recipe=…`).
// Anything but "tutorial" or "batched" is left to the parser's `choice` to
// reject with the usual message.
std::string recipe_from_arguments(int argc, char** argv) {
  std::string recipe = "tutorial";
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument == "--recipe" && i + 1 < argc) {
      recipe = argv[i + 1];
    } else if (argument.rfind("--recipe=", 0) == 0) {
      recipe = argument.substr(std::string("--recipe=").size());
    }
  }
  return recipe;
}

}  // namespace

int main(int argc, char** argv) {
  TrainFlags train;
  TranslateFlags translate;
  EvalFlags eval;
  cli::Parser parser("translate",
                     "French -> English translation with a GRU encoder and an attention decoder\n"
                     "(the PyTorch seq2seq tutorial). Commands: train, translate, eval.");

  // `recipe` is what the parser checks and --help shows; `batched` is read
  // from argv beforehand because it decides which flags exist.
  std::string recipe = "tutorial";
  const bool batched = recipe_from_arguments(argc, argv) == "batched";
  const std::vector<std::string> recipes = {"tutorial", "batched"};
  const std::string recipe_help =
      "tutorial: one pair at a time, the PyTorch tutorial (default); batched: d2l's padded "
      "mini-batches with Bahdanau attention (English -> French). Each recipe has its own flags: "
      "`translate train --recipe batched --help` lists the batched ones";
  translate_batched::BatchedTrainFlags batched_train;
  translate_batched::BatchedTranslateFlags batched_translate;
  translate_batched::BatchedEvalFlags batched_eval;

  cli::Parser& train_parser = parser.add_command(
      "train",
      "train on the Tatoeba pairs; writes a checkpoint, the loss curve and attention maps");
  cli::Parser& translate_parser = parser.add_command(
      "translate", "translate stdin, one sentence a line, with a trained checkpoint");
  cli::Parser& eval_parser =
      parser.add_command("eval", "corpus BLEU-4 of a checkpoint and a few example translations");
  for (cli::Parser* command : {&train_parser, &translate_parser, &eval_parser}) {
    command->choice("recipe", recipe, recipes, recipe_help);
  }
  if (batched) {
    translate_batched::declare_batched_train_flags(train_parser, batched_train);
    translate_batched::declare_batched_translate_flags(translate_parser, batched_translate);
    translate_batched::declare_batched_eval_flags(eval_parser, batched_eval);
  } else {
    train_parser.flag("data", train.data, "tab-separated English/French pairs (Tatoeba)")
        .flag("reverse", train.reverse, "translate English -> French instead")
        .flag("hidden", train.hidden, "hidden size H of embeddings and GRU states", cli::positive())
        .choice("decoder", train.decoder, {"location", "bahdanau"},
                "attention: location (the tutorial's AttnDecoderRNN) or bahdanau (additive)")
        .flag("dropout", train.dropout, "dropout on the decoder's embedded input",
              cli::in_range(0, 0.99))
        .flag("lr", train.lr, "SGD learning rate of encoder and decoder", cli::positive())
        .flag("teacher-forcing", train.teacher_forcing,
              "probability of teacher forcing for a pair (else greedy feeding)",
              cli::in_range(0, 1))
        .flag("iters", train.iters, "training iterations, one random pair each", cli::positive())
        .flag("seed", train.seed, "seed of the initial weights, the pairs, the coins and dropout",
              cli::non_negative())
        .flag("split-seed", train.split_seed, "seed of the train/validation split",
              cli::non_negative())
        .flag("validation", train.validation, "share of source sentences held out",
              cli::in_range(0, 0.9))
        .flag("print-every", train.print_every, "iterations per progress line and loss-table row",
              cli::positive())
        .flag("plot-every", train.plot_every, "iterations per point of the loss curve",
              cli::positive())
        .flag("checkpoint-every", train.checkpoint_every,
              "iterations between checkpoints (0: only at the end and on Ctrl-C)",
              cli::non_negative())
        .flag("out", train.out, "folder for the checkpoint and the pictures (created if missing)")
        .flag("resume", train.resume, "continue from this checkpoint (same data flags)")
        .flag("examples", train.examples, "translations printed at the end", cli::non_negative())
        .flag("json", train.json,
              "print one JSON summary line on stdout (the report goes to stderr)")
        .flag("dense-embeddings", train.dense_embeddings,
              "update the embeddings densely (slower; the same numbers)")
        .flag("threads", train.threads,
              "threads for the large matrix products (results do not depend on it)",
              cli::positive());

    translate_parser.flag("checkpoint", translate.checkpoint, "checkpoint written by train")
        .flag("attention", translate.attention,
              "folder for one attention heatmap per sentence (attention_<line>.svg)");

    eval_parser.flag("checkpoint", eval.checkpoint, "checkpoint written by train")
        .flag("data", eval.data, "pairs to score (default: the checkpoint's validation split)")
        .flag("examples", eval.examples, "random examples to print", cli::non_negative())
        .flag("seed", eval.seed, "seed for picking the examples", cli::non_negative())
        .flag("json", eval.json, "print one JSON summary line on stdout");
  }

  return cli::run_main(parser, argc, argv, [&] {
    if (batched) {
      if (parser.command() == "train") return translate_batched::run_batched_train(batched_train);
      if (parser.command() == "translate") {
        return translate_batched::run_batched_translate(batched_translate, std::cin, std::cout,
                                                        std::cerr);
      }
      return translate_batched::run_batched_eval(batched_eval);
    }
    if (parser.command() == "train") return run_train(train);
    if (parser.command() == "translate") return run_translate(translate);
    return run_eval(eval);
  });
}
