// examples/translate/batched_recipe.cpp — the train, translate and eval
// commands of `translate --recipe batched` (see batched_recipe.hpp; the
// checkpoint format is in batched_checkpoint.hpp).
#include "examples/translate/batched_recipe.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "examples/common/divergence.hpp"
#include "examples/common/output_folder.hpp"
#include "examples/common/svg_plot.hpp"
#include "examples/translate/batched_checkpoint.hpp"
#include "examples/translate/size_limits.hpp"
#include "models/batched_seq2seq.hpp"
#include "models/text/normalize.hpp"
#include "models/text/pairs.hpp"
#include "nn/checkpoint.hpp"
#include "tensor/error.hpp"
#include "tensor/parallel.hpp"

namespace attograd::translate_batched {

using namespace attograd::batched_seq2seq;
namespace fs = std::filesystem;

namespace {

constexpr const char* kCheckpointName = "checkpoint.safetensors";

// ---------------------------------------------------------------- data

text::PairSet read_data(const std::string& path, const std::string& direction) {
  text::PairSet set = text::read_pairs(
      path,
      text::ReadOptions().reverse(direction == "eng-fra").normalization(text::Normalization::kD2l));
  for (size_t i = 0; i < set.report.skipped.size() && i < 10; ++i) {
    std::cerr << "warning: " << set.report.skipped[i].message << " (line skipped)\n";
  }
  if (set.report.skipped.size() > 10) {
    std::cerr << fmt::format("warning: … and {} more skipped lines\n",
                             set.report.skipped.size() - 10);
  }
  return set;
}

// pairs[offset, offset + count), or everything from offset when count is 0.
std::vector<text::SentencePair> take(const std::vector<text::SentencePair>& pairs, int64_t offset,
                                     int64_t count) {
  const auto begin = static_cast<size_t>(std::min<int64_t>(offset, std::ssize(pairs)));
  const size_t end =
      count <= 0 ? pairs.size() : std::min(pairs.size(), begin + static_cast<size_t>(count));
  return {pairs.begin() + static_cast<std::ptrdiff_t>(begin),
          pairs.begin() + static_cast<std::ptrdiff_t>(end)};
}

// ---------------------------------------------------------------- pictures

// Output words (and <eos> when reached) down, source words and <eos> across:
// only the valid source positions, as d2l draws it (the padding has weight 0).
void save_attention_map(const fs::path& path, const SentenceTranslation& translation) {
  std::vector<std::string> columns = translation.source_words;
  columns.push_back("<eos>");
  std::vector<std::string> rows = translation.output_words;
  if (translation.prediction.reached_eos) rows.push_back("<eos>");
  const Prediction& prediction = translation.prediction;
  std::vector<double> values;
  for (int64_t step = 0; step < prediction.steps; ++step) {
    for (size_t column = 0; column < columns.size(); ++column) {
      values.push_back(
          prediction.attention[static_cast<size_t>(step * prediction.source_positions) + column]);
    }
  }
  plot::Heatmap map(rows.size(), columns.size(), values);
  map.title("Bahdanau attention (batched recipe)")
      .row_labels(rows)
      .column_labels(columns)
      .x_label("Keys (source)")
      .y_label("Queries (output steps)")
      .colormap(plot::Colormap::reds())
      .colorbar_label("weight");
  map.save(path);
}

void save_loss_curve(const fs::path& path, const TrainingReport& report) {
  std::vector<double> x, y;
  for (const EpochReport& epoch : report.epochs) {
    x.push_back(static_cast<double>(epoch.epoch));
    y.push_back(epoch.loss);
  }
  plot::LineChart chart;
  chart.title("Training loss (d2l's masked cross-entropy)")
      .x_label("epoch")
      .y_label("loss")
      .legend(plot::LegendPosition::hidden)
      .line("loss", x, y);
  chart.save(path);
}

}  // namespace

// ---------------------------------------------------------------- flags

void declare_batched_train_flags(cli::Parser& parser, BatchedTrainFlags& flags) {
  parser.flag("data", flags.data, "tab-separated English/French pairs (Tatoeba)")
      .choice("direction", flags.direction, {"eng-fra", "fra-eng"},
              "source and target language (d2l: English -> French)")
      .flag("num-examples", flags.num_examples, "use the first N pairs of the file (0: all)",
            cli::non_negative())
      .flag("min-freq", flags.min_freq, "words seen fewer times become <unk>", cli::at_least(1))
      .flag("num-steps", flags.num_steps, "T: every sentence is cut or padded to T ids",
            cli::in_range(2, kMaxSteps))
      .flag("embed", flags.embed, "embedding size E", cli::size_at_most(kMaxHidden))
      .flag("hidden", flags.hidden, "hidden size H of the GRUs and the attention",
            cli::size_at_most(kMaxHidden))
      .flag("layers", flags.layers, "GRU layers of encoder and decoder",
            cli::size_at_most(kMaxLayers))
      .flag("dropout", flags.dropout, "dropout between GRU layers and on attention weights",
            cli::in_range(0, 0.99))
      .flag("batch", flags.batch, "sentence pairs per mini-batch", cli::size_at_most(kMaxBatch))
      .flag("lr", flags.lr, "Adam learning rate", cli::positive())
      .flag("epochs", flags.epochs, "passes over the pairs", cli::positive())
      .flag("clip", flags.clip, "clip the gradients to this global norm", cli::positive())
      .flag("seed", flags.seed, "seed of the weights, dropout masks and batch order",
            cli::non_negative())
      .flag("threads", flags.threads,
            "threads for large matrix products (0: ATTOGRAD_NUM_THREADS or every core)",
            cli::non_negative())
      .flag("print-every", flags.print_every, "epochs per progress line", cli::positive())
      .flag("attention-sentence", flags.attention_sentence,
            "the sentence whose attention is drawn in attention.svg")
      .flag("out", flags.out, "folder for the checkpoint and the pictures (created if missing)")
      .flag("json", flags.json,
            "print one JSON summary line on stdout (the report goes to stderr)");
}

void declare_batched_translate_flags(cli::Parser& parser, BatchedTranslateFlags& flags) {
  parser.flag("checkpoint", flags.checkpoint, "checkpoint written by train --recipe batched")
      .flag("attention", flags.attention,
            "folder for one attention heatmap per sentence (attention_<line>.svg)");
}

void declare_batched_eval_flags(cli::Parser& parser, BatchedEvalFlags& flags) {
  parser.flag("checkpoint", flags.checkpoint, "checkpoint written by train --recipe batched")
      .flag("data", flags.data, "pairs to score (default: the checkpoint's data file)")
      .flag("offset", flags.offset, "skip this many pairs of the file first", cli::non_negative())
      .flag("num-examples", flags.num_examples,
            "pairs to score after the offset (-1: as many as training used; 0: all)",
            cli::at_least(-1))
      .flag("examples", flags.examples, "translations to print", cli::non_negative())
      .flag("json", flags.json, "print one JSON summary line on stdout");
}

// ---------------------------------------------------------------- train

namespace {

// The pairs cut or padded to num_steps ids, with their vocabularies.
text::BatchedData prepare_data(const text::PairSet& set, const BatchedTrainFlags& flags,
                               std::ostream& out) {
  text::BatchedData data = text::prepare_batched_data(
      set.pairs,
      text::BatchedDataOptions()
          .num_steps(flags.num_steps)
          .num_examples(flags.num_examples > 0 ? std::optional<int64_t>(flags.num_examples)
                                               : std::nullopt)
          .min_frequency(flags.min_freq));
  out << fmt::format("Read {} ({}); training on the first {} pairs, {}\n", flags.data,
                     set.report.summary(), data.source.rows, flags.direction);
  out << fmt::format("Vocabularies (min frequency {}): {} source, {} target words\n",
                     flags.min_freq, data.source_vocabulary.size(), data.target_vocabulary.size());
  return data;
}

// The model's sizes and what a checkpoint needs to rebuild it.
CheckpointInfo checkpoint_info(const BatchedTrainFlags& flags, const text::BatchedData& data) {
  CheckpointInfo info;
  info.model = BatchedSeq2SeqOptions(data.source_vocabulary.size(), data.target_vocabulary.size())
                   .embed_size(flags.embed)
                   .hidden_size(flags.hidden)
                   .num_layers(flags.layers)
                   .dropout(flags.dropout);
  info.source_vocabulary = data.source_vocabulary;
  info.target_vocabulary = data.target_vocabulary;
  info.num_steps = flags.num_steps;
  info.data = flags.data;
  info.direction = flags.direction;
  info.num_examples = data.source.rows;
  return info;
}

// Trains for --epochs, printing a progress line every --print-every epochs
// and a summary at the end.
TrainingReport train_with_progress(BatchedSeq2Seq& model, const text::BatchedData& data,
                                   const BatchedTrainFlags& flags, std::ostream& out) {
  const BatchedTrainingOptions training = BatchedTrainingOptions()
                                              .epochs(flags.epochs)
                                              .lr(flags.lr)
                                              .batch_size(flags.batch)
                                              .clip_norm(flags.clip)
                                              .seed(static_cast<uint64_t>(flags.seed));
  out << fmt::format(
      "Training {} parameters (E = {}, H = {}, {} layers, dropout {}) for {} epochs, batch {}, "
      "lr {}, {} thread{}\n",
      model.parameter_count(), flags.embed, flags.hidden, flags.layers, flags.dropout, flags.epochs,
      flags.batch, flags.lr, parallel::num_threads(), parallel::num_threads() == 1 ? "" : "s");
  out << std::flush;
  const std::string checkpoint = (fs::path(flags.out) / kCheckpointName).string();
  const TrainingReport report = train(model, data, training, [&](const EpochReport& epoch) {
    // Stop at the first epoch that diverged, before anything is written.
    const std::string when = fmt::format("epoch {}", epoch.epoch);
    if (!std::isfinite(epoch.loss)) {
      cli::check_finite_training("loss", epoch.loss, when, flags.lr,
                                 cli::kept_text(checkpoint, fs::exists(checkpoint)));
    }
    cli::check_finite_parameters(model.named_parameters(), when, flags.lr,
                                 cli::kept_text(checkpoint, fs::exists(checkpoint)));
    if (epoch.epoch % flags.print_every == 0 || epoch.epoch == flags.epochs) {
      out << fmt::format("epoch {:>4}/{}  loss {:.4f}  {:8.0f} tokens/s  {:6.1f} ms/epoch\n",
                         epoch.epoch, flags.epochs, epoch.loss,
                         epoch.seconds > 0 ? static_cast<double>(epoch.tokens) / epoch.seconds : 0,
                         1000.0 * epoch.seconds)
          << std::flush;
    }
  });
  out << fmt::format(
      "loss {:.3f}, {:.1f} tokens/sec, {:.1f} ms per epoch ({} epochs in {:.1f} s)\n\n",
      report.final_loss, report.tokens_per_second(), report.ms_per_epoch(), report.epochs.size(),
      report.seconds);
  return report;
}

// d2l's four test sentences, each printed with its sentence BLEU (k = 2).
struct TestTranslations {
  nlohmann::json translations = nlohmann::json::array();  // for the --json summary
  int64_t perfect = 0;                                    // how many scored BLEU 1
};

TestTranslations translate_test_sentences(BatchedSeq2Seq& model, const text::BatchedData& data,
                                          int64_t num_steps, std::ostream& out) {
  TestTranslations tests;
  for (const ReferencePair& pair : textbook_test_pairs()) {
    const SentenceTranslation translation = translate_sentence(
        model, data.source_vocabulary, data.target_vocabulary, pair.source, num_steps);
    const std::string output = text::join_words(translation.output_words);
    const double bleu = text::d2l_sentence_bleu(output, pair.reference, 2);
    tests.perfect += bleu == 1.0 ? 1 : 0;
    out << fmt::format("{} => {}, bleu {:.3f}\n", pair.source, output, bleu);
    tests.translations.push_back({{"source", pair.source},
                                  {"output", output},
                                  {"reference", pair.reference},
                                  {"bleu", bleu},
                                  {"unknown_words", translation.unknown_words}});
  }
  return tests;
}

void print_train_summary(BatchedSeq2Seq& model, const text::BatchedData& data,
                         const TrainingReport& report, const TestTranslations& tests,
                         const Evaluation& evaluation, const fs::path& checkpoint_path) {
  const nlohmann::json summary = {{"recipe", kRecipe},
                                  {"pairs", data.source.rows},
                                  {"source_vocabulary", data.source_vocabulary.size()},
                                  {"target_vocabulary", data.target_vocabulary.size()},
                                  {"parameters", model.parameter_count()},
                                  {"epochs", report.epochs.size()},
                                  {"threads", parallel::num_threads()},
                                  {"final_loss", report.final_loss},
                                  {"tokens_per_second", report.tokens_per_second()},
                                  {"ms_per_epoch", report.ms_per_epoch()},
                                  {"train_seconds", report.seconds},
                                  {"translations", tests.translations},
                                  {"perfect_translations", tests.perfect},
                                  {"train_corpus_bleu", evaluation.corpus.score},
                                  {"train_mean_sentence_bleu", evaluation.mean_sentence_bleu},
                                  {"checkpoint", checkpoint_path.string()}};
  std::cout << summary.dump() << std::endl;
}

}  // namespace

int run_batched_train(const BatchedTrainFlags& flags) {
  std::ostream& out = flags.json ? std::cerr : std::cout;  // with --json stdout holds one line
  if (flags.threads > 0) parallel::set_num_threads(static_cast<int>(flags.threads));

  // Everything that can fail on bad input happens before anything is written,
  // and the output folder is known to be writable before training starts.
  const std::optional<std::string> drawn_text = text::preprocess_d2l(flags.attention_sentence);
  check(drawn_text.has_value() && !text::split_words(*drawn_text).empty(),
        "--attention-sentence '{}' has no words to translate; give a sentence such as \"i'm "
        "home .\"",
        flags.attention_sentence);
  const text::PairSet set = read_data(flags.data, flags.direction);
  text::require_pairs(set.pairs, set.report, "to train on");
  const text::BatchedData data = prepare_data(set, flags, out);
  const CheckpointInfo info = checkpoint_info(flags, data);

  const fs::path folder = flags.out;
  cli::prepare_output_folder("--out", folder);

  Generator generator(static_cast<uint64_t>(flags.seed));
  BatchedSeq2Seq model(info.model, generator);
  const TrainingReport report = train_with_progress(model, data, flags, out);

  // The checkpoint and the loss curve are one set: both new or both old.
  const fs::path checkpoint_path = folder / kCheckpointName;
  {
    cli::OutputSet set(folder);
    nn::save(model, set.staged(kCheckpointName), to_metadata(info, flags, report));
    save_loss_curve(set.staged("loss.svg"), report);
    set.commit();
  }

  const TestTranslations tests = translate_test_sentences(model, data, flags.num_steps, out);
  const SentenceTranslation drawn =
      translate_sentence(model, data.source_vocabulary, data.target_vocabulary,
                         flags.attention_sentence, flags.num_steps);
  save_attention_map(folder / "attention.svg", drawn);

  std::vector<text::SentencePair> training_pairs = take(set.pairs, 0, data.source.rows);
  const Evaluation evaluation = evaluate(model, data.source_vocabulary, data.target_vocabulary,
                                         training_pairs, flags.num_steps);
  out << fmt::format(
      "\nBLEU-4 on the {} training pairs ({} source sentences): {:.4f}; mean sentence BLEU "
      "(k = 2) {:.4f}\n",
      training_pairs.size(), evaluation.pairs.size(), evaluation.corpus.score,
      evaluation.mean_sentence_bleu);
  out << fmt::format("Wrote {}, loss.svg and attention.svg ('{}') in {}\n",
                     checkpoint_path.filename().string(), flags.attention_sentence,
                     folder.string());
  if (flags.json) print_train_summary(model, data, report, tests, evaluation, checkpoint_path);
  return 0;
}

// ---------------------------------------------------------------- translate

int run_batched_translate(const BatchedTranslateFlags& flags, std::istream& in, std::ostream& out,
                          std::ostream& err) {
  if (!flags.attention.empty()) cli::prepare_output_folder("--attention", flags.attention);
  const CheckpointInfo info = read_checkpoint_info(flags.checkpoint);
  const std::unique_ptr<BatchedSeq2Seq> model = load_model(flags.checkpoint, info);
  int64_t line_number = 0, translated = 0, unknown = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (text::first_invalid_utf8(line)) {
      err << fmt::format("warning: stdin:{}: invalid UTF-8 (byte {}); printed an empty line\n",
                         line_number, *text::first_invalid_utf8(line));
      out << "\n";
      continue;
    }
    if (text::count_words(line) == 0) {
      out << "\n";
      continue;
    }
    const SentenceTranslation translation = translate_sentence(
        *model, info.source_vocabulary, info.target_vocabulary, line, info.num_steps);
    if (translation.unknown_words > 0) {
      err << fmt::format("warning: stdin:{}: {} word{} not in the vocabulary became <unk>\n",
                         line_number, translation.unknown_words,
                         translation.unknown_words == 1 ? "" : "s");
      unknown += translation.unknown_words;
    }
    if (translation.dropped_words > 0) {
      err << fmt::format(
          "warning: stdin:{}: the model reads at most {} words; the last {} were cut off\n",
          line_number, info.num_steps - 1, translation.dropped_words);
    }
    out << text::join_words(translation.output_words) << "\n" << std::flush;
    if (!flags.attention.empty()) {
      save_attention_map(fs::path(flags.attention) / fmt::format("attention_{}.svg", line_number),
                         translation);
    }
    ++translated;
  }
  err << fmt::format("translated {} sentence{}; {} unknown word{} mapped to <unk>\n", translated,
                     translated == 1 ? "" : "s", unknown, unknown == 1 ? "" : "s");
  return 0;
}

// ---------------------------------------------------------------- eval

int run_batched_eval(const BatchedEvalFlags& flags) {
  const CheckpointInfo info = read_checkpoint_info(flags.checkpoint);
  const std::unique_ptr<BatchedSeq2Seq> model = load_model(flags.checkpoint, info);
  const std::string path = flags.data.empty() ? info.data : flags.data;
  const text::PairSet set = read_data(path, info.direction);
  const int64_t count = flags.num_examples < 0 ? info.num_examples : flags.num_examples;
  const std::vector<text::SentencePair> pairs = take(set.pairs, flags.offset, count);
  text::require_pairs(pairs, set.report, fmt::format("to evaluate from pair {}", flags.offset));
  const Evaluation evaluation =
      evaluate(*model, info.source_vocabulary, info.target_vocabulary, pairs, info.num_steps);
  std::ostream& out = flags.json ? std::cerr : std::cout;
  const text::BleuDetails& bleu = evaluation.corpus;
  out << fmt::format(
      "BLEU-4 {:.4f} on pairs {}..{} of {} ({} source sentences); precisions {:.3f} {:.3f} "
      "{:.3f} {:.3f}, brevity penalty {:.3f}; mean sentence BLEU (k = 2) {:.4f}\n",
      bleu.score, flags.offset, flags.offset + std::ssize(pairs), path, evaluation.pairs.size(),
      bleu.precisions[0], bleu.precisions[1], bleu.precisions[2], bleu.precisions[3],
      bleu.brevity_penalty, evaluation.mean_sentence_bleu);
  out << fmt::format("{} unknown source words mapped to <unk>, {} cut off beyond {} words\n\n",
                     evaluation.unknown_words, evaluation.dropped_words, info.num_steps - 1);
  const int64_t shown = std::min<int64_t>(flags.examples, std::ssize(evaluation.pairs));
  for (int64_t i = 0; i < shown; ++i) {
    // Spread over the range rather than the first few, which are all one-word sentences.
    const EvaluatedPair& pair =
        evaluation.pairs[static_cast<size_t>(i * std::ssize(evaluation.pairs) / shown)];
    out << "> " << pair.source << "\n";
    for (const std::string& reference : pair.references) out << "= " << reference << "\n";
    out << fmt::format("< {}   (bleu k=2: {:.3f})\n\n", pair.output, pair.sentence_bleu);
  }
  if (flags.json) {
    const nlohmann::json summary = {{"recipe", kRecipe},
                                    {"bleu", bleu.score},
                                    {"mean_sentence_bleu", evaluation.mean_sentence_bleu},
                                    {"pairs", pairs.size()},
                                    {"sentences", evaluation.pairs.size()},
                                    {"unknown_words", evaluation.unknown_words},
                                    {"dropped_words", evaluation.dropped_words}};
    std::cout << summary.dump() << std::endl;
  }
  return 0;
}

}  // namespace attograd::translate_batched
