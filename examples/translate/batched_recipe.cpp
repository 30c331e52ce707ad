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

#include "autograd/inspect/dot.hpp"
#include "autograd/inspect/graph_picture.hpp"
#include "examples/common/divergence.hpp"
#include "examples/common/output_folder.hpp"
#include "examples/common/paths_apart.hpp"
#include "examples/translate/batched_checkpoint.hpp"
#include "examples/translate/batched_resume.hpp"
#include "examples/translate/report_parts.hpp"
#include "examples/translate/shown_text.hpp"
#include "models/batched_seq2seq/batched_seq2seq.hpp"
#include "models/text/normalize.hpp"
#include "models/text/pairs.hpp"
#include "nn/checkpoint.hpp"
#include "nn/optim.hpp"
#include "plot/svg_graph.hpp"
#include "plot/svg_plot.hpp"
#include "tensor/error.hpp"
#include "tensor/parallel.hpp"

namespace attograd::translate_batched {

using namespace attograd::batched_seq2seq;
using namespace attograd::translation;
namespace fs = std::filesystem;

namespace {

constexpr const char* kCheckpointName = "checkpoint.safetensors";

}  // namespace

// ---------------------------------------------------------------- shared pieces

// ---------------------------------------------------------------- data

text::PairSet read_data(const std::string& path, const std::string& direction) {
  text::PairSet set = text::read_pairs(
      path,
      text::ReadOptions().reverse(direction == "eng-fra").normalization(text::Normalization::kD2l));
  size_t shown = 0;
  for (; shown < set.report.skipped_examples.size(); ++shown) {
    std::cerr << "warning: " << set.report.skipped_examples[shown].message << " (line skipped)\n";
  }
  const auto skipped = static_cast<size_t>(set.report.lines_skipped());
  if (skipped > shown) {
    std::cerr << fmt::format("warning: … and {} more skipped lines\n", skipped - shown);
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
void save_attention_map(const fs::path& path, const SentenceTranslation& translation,
                        const std::string& title) {
  std::vector<std::string> columns = translation.source_words;
  columns.push_back("<eos>");
  std::vector<std::string> rows = translation.output_words;
  const decoding::Hypothesis& best = translation.best;
  if (best.reached_end) rows.push_back("<eos>");
  std::vector<double> values;
  for (int64_t step = 0; step < best.length; ++step) {
    for (size_t column = 0; column < columns.size(); ++column) {
      values.push_back(best.attention[static_cast<size_t>(step * best.attention_width) + column]);
    }
  }
  plot::Heatmap map(rows.size(), columns.size(), values);
  map.title(title)
      .row_labels(rows)
      .column_labels(columns)
      .x_label("Keys (source)")
      .y_label("Queries (output steps)")
      .colormap(plot::Colormap::reds())
      .colorbar_label("weight");
  map.save(path);
}

plot::LineChart loss_chart(const TrainingReport& report) {
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
  return chart;
}

void save_loss_curve(const fs::path& path, const TrainingReport& report) {
  loss_chart(report).save(path);
}

void report_decoder_attention(cli::RunReport& report, const std::string& sentence,
                              const SentenceTranslation& translation) {
  std::vector<std::string> keys = translation.source_words;
  keys.push_back("<eos>");
  report.attention(translate_report::decoder_attention(
      translation, sentence, "decoder → encoder (Bahdanau)", keys, "<eos>"));
}

// ---------------------------------------------------------------- flags

void declare_batched_train_flags(cli::Parser& parser, BatchedTrainFlags& flags) {
  declare_data_flags(parser, flags);
  parser.flag("embed", flags.embed, "embedding size E", cli::size_at_most(kMaxHidden))
      .flag("hidden", flags.hidden, "hidden size H of the GRUs and the attention",
            cli::size_at_most(kMaxHidden))
      .flag("layers", flags.layers, "GRU layers of encoder and decoder",
            cli::size_at_most(kMaxLayers))
      .flag("dropout", flags.dropout, "dropout between GRU layers and on attention weights",
            cli::in_range(0, 0.99));
  declare_training_flags(parser, flags, "the sentence whose attention is drawn in attention.svg");
}

void declare_batched_translate_flags(cli::Parser& parser, BatchedTranslateFlags& flags) {
  parser.flag("checkpoint", flags.checkpoint, "checkpoint written by train --recipe batched")
      .flag("attention", flags.attention,
            "folder for one attention heatmap per sentence (attention_<line>.svg)");
  translate_report::declare_report_flags(parser, flags.report, flags.report_maps,
                                         "the decoder's attention maps");
  translate_beam::declare_beam_flags(parser, flags.beam);
}

void declare_batched_eval_flags(cli::Parser& parser, BatchedEvalFlags& flags) {
  parser.flag("checkpoint", flags.checkpoint, "checkpoint written by train with the same --recipe")
      .flag("data", flags.data, "pairs to score (default: the checkpoint's data file)")
      .flag("offset", flags.offset, "skip this many pairs of the file first", cli::non_negative())
      .flag("num-examples", flags.num_examples,
            "pairs to score after the offset (-1: as many as training used; 0: all)",
            cli::at_least(-1))
      .flag("examples", flags.examples,
            "translations to print, spread over the scored pairs (at most one per pair)",
            cli::count_at_most(kMaxExamples))
      .flag("json", flags.json, "print one JSON summary line on stdout");
  translate_beam::declare_beam_flags(parser, flags.beam);
}

// ---------------------------------------------------------------- train

text::BatchedData prepare_data(const text::PairSet& set, const DataSettings& settings,
                               std::ostream& out) {
  text::BatchedData data = text::prepare_batched_data(
      set.pairs,
      text::BatchedDataOptions()
          .num_steps(settings.num_steps)
          .num_examples(settings.num_examples > 0 ? std::optional<int64_t>(settings.num_examples)
                                                  : std::nullopt)
          .min_frequency(settings.min_freq));
  out << fmt::format("Read {} ({}); training on the first {} pairs, {}\n", settings.data,
                     set.report.summary(), data.source.rows, settings.direction);
  out << fmt::format("Vocabularies (min frequency {}): {} source, {} target words\n",
                     settings.min_freq, data.source_vocabulary.size(),
                     data.target_vocabulary.size());
  return data;
}

DataSettings data_settings(const BatchedTrainFlags& flags) {
  return {flags.data, flags.direction, flags.num_examples, flags.min_freq, flags.num_steps};
}

namespace {

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

}  // namespace

nn::LRSchedule lr_schedule_from_flag(const std::string& text, int64_t epochs) {
  const auto usage = [&text] {
    return cli::UsageError(
        fmt::format("--lr-schedule: '{}' is not one of constant, step:S:G, cosine, warmup:N, "
                    "warmup-cosine:N (S, N whole epochs ≥ 1, G > 0)",
                    text));
  };
  const auto count_after = [&](size_t start, size_t end) {
    const std::string digits = text.substr(start, end - start);
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos || std::stoll(digits) < 1) {
      throw usage();
    }
    return static_cast<int64_t>(std::stoll(digits));
  };
  if (text == "constant") return nn::LRSchedule::constant();
  if (text == "cosine") return nn::LRSchedule::cosine(epochs);
  if (text.rfind("step:", 0) == 0) {
    const size_t colon = text.find(':', 5);
    if (colon == std::string::npos) throw usage();
    const int64_t step_size = count_after(5, colon);
    char* end = nullptr;
    const double gamma = std::strtod(text.c_str() + colon + 1, &end);
    if (end == text.c_str() + colon + 1 || *end != '\0' || !(gamma > 0)) throw usage();
    return nn::LRSchedule::step(step_size, gamma);
  }
  for (const bool cosine : {false, true}) {
    const std::string prefix = cosine ? "warmup-cosine:" : "warmup:";
    if (text.rfind(prefix, 0) != 0) continue;
    const int64_t warmup = count_after(prefix.size(), text.size());
    const nn::LRSchedule linear =
        nn::LRSchedule::linear(1.0 / static_cast<double>(warmup), 1.0, warmup);
    if (!cosine) return linear;
    if (warmup >= epochs) {
      throw cli::UsageError(
          fmt::format("--lr-schedule: a warm-up of {} epochs leaves none of the {} for the cosine",
                      warmup, epochs));
    }
    return nn::LRSchedule::sequential({linear, nn::LRSchedule::cosine(epochs - warmup)}, {warmup});
  }
  throw usage();
}

bool train_reporting_progress(BatchedTrainer& trainer, BatchedTranslator& model,
                              const BatchedTrainingOptions& training,
                              const TrainingSession& session, std::ostream& out) {
  out << std::flush;
  const int64_t epochs = training.epochs();
  const std::string checkpoint = (fs::path(session.out_folder) / kCheckpointName).string();
  const auto kept = [&] { return cli::kept_text(checkpoint, fs::exists(checkpoint)); };
  // The first step's loss (epoch 1's first batch), which growth is measured against.
  double first_loss =
      trainer.report().epochs.empty() ? 0 : trainer.report().epochs.front().first_batch_loss;
  int64_t running = std::ssize(trainer.report().epochs) + 1;  // the epoch in progress
  const auto on_epoch = [&](const EpochReport& epoch) {
    // Stop at the first epoch that diverged, before anything is written.
    const std::string when = fmt::format("epoch {}", epoch.epoch);
    if (epoch.epoch == 1) first_loss = epoch.first_batch_loss;
    if (!std::isfinite(epoch.loss)) {
      cli::check_finite_training("loss", epoch.loss, when, training.lr(), kept());
    }
    cli::check_loss_growth(epoch.loss, first_loss, when, training.lr(), kept());
    cli::check_finite_parameters(model.named_parameters(), when, training.lr(), kept());
    running = epoch.epoch + 1;
    if (epoch.epoch % session.print_every == 0 || epoch.epoch == epochs) {
      out << fmt::format("epoch {:>4}/{}  loss {:.4f}  {:8.0f} tokens/s  {:6.1f} ms/epoch{}\n",
                         epoch.epoch, epochs, epoch.loss,
                         epoch.seconds > 0 ? static_cast<double>(epoch.tokens) / epoch.seconds : 0,
                         1000.0 * epoch.seconds,
                         training.lr_schedule().is_constant()
                             ? std::string()
                             : fmt::format("  lr {:.3g}", epoch.lr))
          << std::flush;
    }
    if (session.checkpoint_every > 0 && epoch.epoch % session.checkpoint_every == 0 &&
        epoch.epoch < epochs) {
      session.save();
    }
  };
  translation::BatchedTrainer::Hooks hooks;
  hooks.on_epoch = on_epoch;
  hooks.stop_requested = [&] { return session.interrupts->stop_requested(); };
  bool finished = false;
  try {
    finished = trainer.run(hooks);
  } catch (const nn::NonFiniteNormError& error) {  // thrown before that batch's step
    cli::fail_diverged(fmt::format("epoch {}", running),
                       fmt::format("the gradient norm is {}", error.norm()), training.lr(), kept());
  }
  if (!finished) return false;
  const TrainingReport& report = trainer.report();
  out << fmt::format(
      "loss {:.3f}, {:.1f} tokens/sec, {:.1f} ms per epoch ({} epochs in {:.1f} s)\n\n",
      report.final_loss, report.tokens_per_second(), report.ms_per_epoch(), report.epochs.size(),
      report.seconds);
  return true;
}

void save_training_set(const fs::path& folder, BatchedTranslator& model, BatchedTrainer& trainer,
                       nn::Metadata metadata, const nlohmann::json& settings,
                       const cli::InterruptGuard& interrupts) {
  add_resume_entries(metadata, settings, trainer.position());
  cli::OutputSet files(folder);
  nn::save_training_state(files.staged(kCheckpointName), model, &trainer.optimizer(), metadata);
  interrupts.during_save();
  save_loss_curve(files.staged("loss.svg"), trainer.report());
  files.commit();
}

std::string position_text(const translation::TrainingPosition& position, int64_t epochs) {
  if (position.batches_done == 0) {
    return fmt::format("after epoch {} of {}", position.epochs_done, epochs);
  }
  return fmt::format("in epoch {} of {}, after its step {}", position.epochs_done + 1, epochs,
                     position.batches_done);
}

std::optional<int> train_and_save(BatchedTrainer& trainer, BatchedTranslator& model,
                                  const BatchedTrainingOptions& training, const TrainingRun& run,
                                  const std::function<nn::Metadata()>& metadata,
                                  const nlohmann::json& settings, std::ostream& out) {
  // SIGINT and SIGTERM stop the run between two steps, until the last save is done.
  cli::InterruptGuard interrupts;
  const auto save = [&] {
    save_training_set(run.out_folder, model, trainer, metadata(), settings, interrupts);
  };
  const bool finished = train_reporting_progress(
      trainer, model, training,
      {run.print_every, run.checkpoint_every, run.out_folder, save, &interrupts}, out);
  save();
  if (finished) return std::nullopt;  // the guard ends here: a signal ends the program as usual
  print_interrupted(out, trainer, run.epochs, run.out_folder, interrupts);
  return interrupts.exit_status();
}

void print_interrupted(std::ostream& out, const BatchedTrainer& trainer, int64_t epochs,
                       const std::string& out_folder, const cli::InterruptGuard& interrupts) {
  const translation::TrainingPosition position = trainer.position();
  const std::string checkpoint = (fs::path(out_folder) / kCheckpointName).string();
  out << fmt::format(
             "Interrupted {}{} by {}; saved {} and loss.svg — continue with --resume {} "
             "--epochs {}\n",
             position_text(position, epochs), position.batches_done == 0 ? "" : ",",
             interrupts.what(), printable(checkpoint, 300), printable(checkpoint, 300), epochs)
      << std::flush;
}

TestTranslations translate_test_sentences(BatchedTranslator& model, const text::BatchedData& data,
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
                                  {"unknown_words", translation.unknown_words.size()}});
  }
  return tests;
}

void print_train_summary(const std::string& recipe, BatchedTranslator& model,
                         const text::BatchedData& data, const TrainingReport& report,
                         const TestTranslations& tests, const Evaluation& evaluation,
                         const fs::path& checkpoint_path) {
  const nlohmann::json summary = {{"recipe", recipe},
                                  {"pairs", data.source.rows},
                                  {"source_vocabulary", data.source_vocabulary.size()},
                                  {"target_vocabulary", data.target_vocabulary.size()},
                                  {"parameters", model.parameter_count()},
                                  {"epochs", report.epochs.size()},
                                  {"threads", parallel::num_threads()},
                                  {"replicas", report.replicas},
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

void use_threads(int64_t threads, int64_t replicas) {
  parallel::set_num_threads(static_cast<int>(threads > 0 ? threads : replicas));
}

std::string threads_text(int64_t replicas) {
  const int threads = parallel::num_threads();
  const std::string text = fmt::format("{} thread{}", threads, threads == 1 ? "" : "s");
  return replicas == 1 ? text : fmt::format("{}, {} replicas", text, replicas);
}

void check_attention_sentence(const std::string& sentence) {
  const std::optional<std::string> drawn_text = text::preprocess_d2l(sentence);
  check(drawn_text.has_value() && !text::split_words(*drawn_text).empty(),
        "--attention-sentence '{}' has no words to translate; give a sentence such as \"i'm "
        "home .\"",
        sentence);
}

void check_train_paths_apart(const TrainPaths& paths) {
  cli::PathsApart apart;
  apart
      .reads(paths.data_from_checkpoint ? "the data file of --resume's checkpoint" : "--data",
             paths.data)
      .reads("--resume", paths.resume)
      .writes_next("--out", paths.out / kCheckpointName, "--resume")
      .writes("--out", paths.out / "loss.svg")
      .writes("--out", paths.out / "report.html");
  if (paths.pictures_pattern.empty()) {
    apart.writes("--out", paths.pictures);
  } else {
    apart.writes_matching("--out", paths.pictures, paths.pictures_pattern);
  }
  apart.check();
}

void finish_training(BatchedTranslator& model, const text::PairSet& set,
                     const text::BatchedData& data, const TrainingReport& report,
                     const TrainOutputs& outputs, std::ostream& out) {
  // The checkpoint and loss.svg are saved (save_training_set); the folder
  // was prepared before training (prepare_output_folder).
  const fs::path folder = outputs.folder;
  const fs::path checkpoint_path = folder / kCheckpointName;

  cli::RunReport run_report(fmt::format("translate train --recipe {}", outputs.recipe));
  for (const auto& [name, value] : outputs.settings) run_report.setting(name, value);
  run_report.add_graph_svg(outputs.graph_svg);
  const TestTranslations tests = translate_test_sentences(model, data, outputs.num_steps, out);
  for (const ReferencePair& pair : textbook_test_pairs()) {
    const SentenceTranslation translation = translate_sentence(
        model, data.source_vocabulary, data.target_vocabulary, pair.source, outputs.num_steps);
    run_report.translation(
        translate_report::translation_row(translation, pair.source, pair.reference));
    outputs.report_attention(run_report, pair.source, translation);
  }
  const SentenceTranslation drawn =
      translate_sentence(model, data.source_vocabulary, data.target_vocabulary,
                         outputs.attention_sentence, outputs.num_steps);
  outputs.draw_attention(folder, drawn);
  const auto& tests_pairs = textbook_test_pairs();
  if (std::none_of(tests_pairs.begin(), tests_pairs.end(), [&](const ReferencePair& pair) {
        return pair.source == outputs.attention_sentence;
      })) {  // the default, "i'm home .", is a test sentence, already in the report
    run_report.translation(
        translate_report::translation_row(drawn, outputs.attention_sentence, ""));
    outputs.report_attention(run_report, outputs.attention_sentence, drawn);
  }

  std::vector<text::SentencePair> training_pairs = take(set.pairs, 0, data.source.rows);
  const Evaluation evaluation = evaluate(model, data.source_vocabulary, data.target_vocabulary,
                                         training_pairs, outputs.num_steps);
  out << fmt::format(
      "\nBLEU-4 on the {} training pairs ({} source sentences): {:.4f}; mean sentence BLEU "
      "(k = 2) {:.4f}\n",
      training_pairs.size(), evaluation.pairs.size(), evaluation.corpus.score,
      evaluation.mean_sentence_bleu);
  run_report.figure("final loss", fmt::format("{:.4f}", report.final_loss))
      .figure("epochs", std::to_string(report.epochs.size()))
      .figure(fmt::format("BLEU-4 on the {} training pairs", training_pairs.size()),
              fmt::format("{:.4f}", evaluation.corpus.score))
      .figure("mean sentence BLEU (k = 2)", fmt::format("{:.4f}", evaluation.mean_sentence_bleu))
      .figure("test sentences translated perfectly", fmt::format("{} of 4", tests.perfect))
      .picture("Training loss", loss_chart(report).to_svg());
  run_report.save(folder / "report.html");
  out << fmt::format("Wrote {}, loss.svg, report.html and {} ('{}') in {}\n",
                     checkpoint_path.filename().string(), outputs.pictures,
                     printable(outputs.attention_sentence), printable(folder.string(), 300));
  if (outputs.json) {
    print_train_summary(outputs.recipe, model, data, report, tests, evaluation, checkpoint_path);
  }
}

int run_batched_train(const BatchedTrainFlags& given) {
  std::ostream& out = given.json ? std::cerr : std::cout;  // with --json stdout holds one line
  // A resumed run takes its settings from the checkpoint (batched_resume.hpp).
  std::optional<ResumePoint> resumed;
  BatchedTrainFlags flags = given;
  if (!given.resume.empty()) {
    resumed = read_resume_point(given.resume, kRecipe);
    apply_resume_settings(given.resume, resumed->settings, flags);
    check_resume_epochs(given.resume, *resumed, flags.epochs);
  }
  use_threads(flags.threads, flags.replicas);

  // Everything that can fail on bad input happens before anything is written,
  // and the output folder is known to be writable before training starts.
  check_train_paths_apart({.data = flags.data,
                           .data_from_checkpoint = resumed && !given.given.contains("data"),
                           .resume = flags.resume,
                           .out = flags.out,
                           .pictures = fs::path(flags.out) / "attention.svg",
                           .pictures_pattern = ""});
  check_attention_sentence(flags.attention_sentence);
  const text::PairSet set = read_data(flags.data, flags.direction);
  text::require_pairs(set.pairs, set.report, "to train on");
  const text::BatchedData data = prepare_data(set, data_settings(flags), out);
  if (resumed) check_resume_vocabularies(flags.resume, *resumed, data);
  const CheckpointInfo info = checkpoint_info(flags, data);
  const BatchedTrainingOptions training = training_options(flags);

  Generator generator(static_cast<uint64_t>(flags.seed));
  BatchedSeq2Seq model(info.model, generator);
  BatchedTrainer trainer(model, data, training);
  if (resumed) {
    nn::load_training_state(flags.resume, model, &trainer.optimizer());
    trainer.restore(resumed->position);
  }
  cli::prepare_output_folder("--out", flags.out);

  out << fmt::format(
      "Training {} parameters (E = {}, H = {}, {} layers, dropout {}) for {} epochs, batch {}, "
      "lr {}, {}\n",
      model.parameter_count(), flags.embed, flags.hidden, flags.layers, flags.dropout, flags.epochs,
      flags.batch, flags.lr, threads_text(flags.replicas));
  if (resumed) {
    out << fmt::format("Resuming {} {} (data, model and settings from it)\n", flags.resume,
                       position_text(resumed->position, flags.epochs));
  }
  // The first step's graph, each module a box, for report.html.
  GraphCapture graph(DotOptions().names(model.named_parameters()).collapse_depth(1));
  if (const std::optional<int> stopped = train_and_save(
          trainer, model, training,
          {flags.print_every, flags.checkpoint_every, flags.out, flags.epochs},
          [&] { return to_metadata(info, flags, trainer.report()); }, resume_settings(flags),
          out)) {
    return *stopped;  // a signal stopped the run: 130 for SIGINT, 143 for SIGTERM
  }
  TrainOutputs outputs;
  outputs.recipe = kRecipe;
  if (graph.captured()) outputs.graph_svg = plot::graph_svg(graph.picture());
  outputs.folder = flags.out;
  outputs.num_steps = flags.num_steps;
  outputs.attention_sentence = flags.attention_sentence;
  outputs.json = flags.json;
  outputs.pictures = "attention.svg";
  outputs.draw_attention = [](const fs::path& folder, const SentenceTranslation& translation) {
    save_attention_map(folder / "attention.svg", translation,
                       "Bahdanau attention (batched recipe)");
  };
  outputs.report_attention = report_decoder_attention;
  outputs.settings = report_settings(flags,
                                     {{"embed E", std::to_string(flags.embed)},
                                      {"hidden H", std::to_string(flags.hidden)},
                                      {"layers", std::to_string(flags.layers)}},
                                     model.parameter_count());
  finish_training(model, set, data, trainer.report(), outputs, out);
  return 0;
}

// ---------------------------------------------------------------- translate

int translate_lines(BatchedTranslator& model, const text::Vocabulary& source_vocabulary,
                    const text::Vocabulary& target_vocabulary, int64_t num_steps,
                    const translate_beam::BeamFlags& beam, const std::string& attention_folder,
                    const DrawAttention& draw, const std::string& report_file,
                    std::size_t report_maps, const ReportAttention& report_attention,
                    std::istream& in, std::ostream& out, std::ostream& err) {
  if (!attention_folder.empty()) cli::prepare_output_folder("--attention", attention_folder);
  if (!report_file.empty()) translate_report::prepare_report_folder(report_file);
  cli::RunReport report("translate translate");
  report.keep_maps_of(report_maps, "--report-maps")
      .setting("decoding", translate_beam::describe(beam));
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
    const SentenceTranslation translation =
        translate_sentence(model, source_vocabulary, target_vocabulary, line, num_steps,
                           translate_beam::beam_options(beam));
    const auto unknown_words = static_cast<int64_t>(translation.unknown_words.size());
    if (unknown_words > 0) {
      err << fmt::format("warning: stdin:{}: {} word{} not in the vocabulary became <unk>\n",
                         line_number, unknown_words, unknown_words == 1 ? "" : "s");
      unknown += unknown_words;
    }
    if (translation.dropped_words > 0) {
      err << fmt::format(
          "warning: stdin:{}: the model reads at most {} words; the last {} were cut off\n",
          line_number, num_steps - 1, translation.dropped_words);
    }
    if (beam.nbest) {
      translate_beam::print_nbest_lines(out, line_number, translation.nbest);
    } else {
      out << text::join_words(translation.output_words) << "\n" << std::flush;
    }
    if (!attention_folder.empty()) {
      draw(fs::path(attention_folder) / fmt::format("attention_{}.svg", line_number), translation);
    }
    if (!report_file.empty()) {
      report.translation(translate_report::translation_row(translation, line, ""));
      report_attention(report, fmt::format("{}: {}", line_number, line), translation);
    }
    ++translated;
  }
  if (!report_file.empty()) {
    report.figure("sentences translated", std::to_string(translated));
    report.save(report_file);
  }
  err << fmt::format("translated {} sentence{}; {} unknown word{} mapped to <unk>\n", translated,
                     translated == 1 ? "" : "s", unknown, unknown == 1 ? "" : "s");
  return 0;
}

int run_batched_translate(const BatchedTranslateFlags& flags, std::istream& in, std::ostream& out,
                          std::ostream& err) {
  translate_report::check_paths_apart(
      {.checkpoint = flags.checkpoint, .attention = flags.attention, .report = flags.report});
  const CheckpointInfo info = read_checkpoint_info(flags.checkpoint);
  const std::unique_ptr<BatchedSeq2Seq> model = load_model(flags.checkpoint, info);
  return translate_lines(
      *model, info.source_vocabulary, info.target_vocabulary, info.num_steps, flags.beam,
      flags.attention,
      [](const fs::path& path, const SentenceTranslation& translation) {
        save_attention_map(path, translation, "Bahdanau attention (batched recipe)");
      },
      flags.report, flags.report_maps, report_decoder_attention, in, out, err);
}

// ---------------------------------------------------------------- eval

int evaluate_checkpoint(BatchedTranslator& model, const TrainedOn& trained,
                        const BatchedEvalFlags& flags) {
  const std::string path = flags.data.empty() ? trained.data : flags.data;
  const text::PairSet set = read_data(path, trained.direction);
  const int64_t count = flags.num_examples < 0 ? trained.num_examples : flags.num_examples;
  const std::vector<text::SentencePair> pairs = take(set.pairs, flags.offset, count);
  text::require_pairs(pairs, set.report, fmt::format("to evaluate from pair {}", flags.offset));
  const Evaluation evaluation =
      evaluate(model, trained.source_vocabulary, trained.target_vocabulary, pairs,
               trained.num_steps, translate_beam::beam_options(flags.beam));
  std::ostream& out = flags.json ? std::cerr : std::cout;
  const text::BleuDetails& bleu = evaluation.corpus;
  out << fmt::format(
      "BLEU-4 {:.4f} on pairs {}..{} of {} ({} source sentences); precisions {:.3f} {:.3f} "
      "{:.3f} {:.3f}, brevity penalty {:.3f}; mean sentence BLEU (k = 2) {:.4f}\n",
      bleu.score, flags.offset, flags.offset + std::ssize(pairs), printable(path, 300),
      evaluation.pairs.size(), bleu.precisions[0], bleu.precisions[1], bleu.precisions[2],
      bleu.precisions[3], bleu.brevity_penalty, evaluation.mean_sentence_bleu);
  out << fmt::format("{} unknown source words mapped to <unk>, {} cut off beyond {} words\n",
                     evaluation.unknown_words, evaluation.dropped_words, trained.num_steps - 1);
  out << "decoding: " << translate_beam::describe(flags.beam) << "\n\n";
  const int64_t shown = std::min<int64_t>(flags.examples, std::ssize(evaluation.pairs));
  for (int64_t i = 0; i < shown; ++i) {
    // Spread over the range rather than the first few, which are all one-word sentences.
    const EvaluatedPair& pair =
        evaluation.pairs[static_cast<size_t>(i * std::ssize(evaluation.pairs) / shown)];
    out << "> " << translate_text::shown_sentence(pair.source) << "\n";
    for (const std::string& reference : pair.references) {
      out << "= " << translate_text::shown_sentence(reference) << "\n";
    }
    out << fmt::format("< {}   (bleu k=2: {:.3f})\n", translate_text::shown_sentence(pair.output),
                       pair.sentence_bleu);
    if (flags.beam.nbest) translate_beam::print_nbest_block(out, pair.nbest);
    out << "\n";
  }
  if (flags.json) {
    const nlohmann::json summary = {{"recipe", trained.recipe},
                                    {"bleu", bleu.score},
                                    {"mean_sentence_bleu", evaluation.mean_sentence_bleu},
                                    {"pairs", pairs.size()},
                                    {"sentences", evaluation.pairs.size()},
                                    {"unknown_words", evaluation.unknown_words},
                                    {"dropped_words", evaluation.dropped_words},
                                    {"beam", flags.beam.beam},
                                    {"length_penalty", flags.beam.length_penalty}};
    std::cout << summary.dump() << std::endl;
  }
  return 0;
}

int run_batched_eval(const BatchedEvalFlags& flags) {
  const CheckpointInfo info = read_checkpoint_info(flags.checkpoint);
  const std::unique_ptr<BatchedSeq2Seq> model = load_model(flags.checkpoint, info);
  return evaluate_checkpoint(*model,
                             {kRecipe, info.source_vocabulary, info.target_vocabulary,
                              info.num_steps, info.data, info.direction, info.num_examples},
                             flags);
}

}  // namespace attograd::translate_batched
