// examples/translate/tutorial_train.cpp — `translate train` with the tutorial
// recipe (see tutorial_recipe.hpp), in named steps: read the data and the
// checkpoint to resume, settle the model and training settings, build the
// model, train until done or SIGINT / SIGTERM, save, then report.
//
// Everything that can fail on bad input (a missing or empty data file, a
// checkpoint that does not fit) happens before anything is written.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "examples/common/divergence.hpp"
#include "examples/common/interrupt.hpp"
#include "examples/common/output_folder.hpp"
#include "examples/common/paths_apart.hpp"
#include "examples/translate/tutorial_recipe.hpp"
#include "models/seq2seq/corpus.hpp"
#include "models/seq2seq/seq2seq.hpp"
#include "models/seq2seq/training.hpp"
#include "models/text/normalize.hpp"
#include "plot/svg_plot.hpp"
#include "tensor/error.hpp"
#include "tensor/parallel.hpp"
#include "tensor/printable.hpp"

namespace attograd::translate_tutorial {

using namespace attograd::seq2seq;
namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------- data and settings

// How the corpus is read and split. A resumed run reads the checkpoint's
// data the checkpoint's way, so its vocabularies and split come out the
// same; only --data may name another path (a moved file: the vocabularies
// are compared with the checkpoint's).
CorpusOptions corpus_options(const TrainFlags& flags,
                             const std::optional<CheckpointInfo>& resumed) {
  if (resumed) {
    CorpusOptions data = resumed->data;
    if (flags.given.contains("data")) data.path(flags.data);
    return data;
  }
  return CorpusOptions()
      .path(flags.data)
      .reverse(flags.reverse)
      .max_length(10)
      .validation_fraction(flags.validation)
      .split_seed(static_cast<uint64_t>(flags.split_seed));
}

// With --resume, the model, the rates, the seed and the data split are the
// checkpoint's: a flag given for one of them that disagrees is an error
// naming the flag and the checkpoint's value, not a silent no-op.
void check_resume_flags(const TrainFlags& flags, const CheckpointInfo& resumed) {
  const auto conflict = [&](const char* flag, const auto& given, const auto& saved) {
    if (!flags.given.contains(flag) || given == saved) return;
    throw cli::UsageError(fmt::format(
        "--{} {} conflicts with the checkpoint being resumed, {}, which was trained with --{} "
        "{}; leave --{} out to continue it (a resumed run keeps the checkpoint's model, rates, "
        "seed and data split), or train a new model without --resume",
        flag, given, flags.resume, flag, saved, flag));
  };
  const Seq2SeqOptions& model = resumed.model;
  const TrainingOptions& training = resumed.training;
  const CorpusOptions& data = resumed.data;
  conflict("hidden", flags.hidden, model.hidden_size());
  conflict("decoder", flags.decoder, std::string(to_string(model.decoder())));
  conflict("dropout", flags.dropout, model.dropout());
  conflict("lr", flags.lr, training.learning_rate());
  conflict("teacher-forcing", flags.teacher_forcing, training.teacher_forcing());
  conflict("seed", static_cast<uint64_t>(flags.seed), training.seed());
  conflict("print-every", flags.print_every, training.print_every());
  conflict("plot-every", flags.plot_every, training.plot_every());
  conflict("dense-embeddings", flags.dense_embeddings, !training.sparse_embeddings());
  conflict("reverse", flags.reverse, data.reverse());
  conflict("validation", flags.validation, data.validation_fraction());
  conflict("split-seed", static_cast<uint64_t>(flags.split_seed), data.split_seed());
}

void print_corpus_summary(std::ostream& out, const Corpus& corpus) {
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
}

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

// What the run trains: the model and the training schedule.
struct RunSettings {
  Seq2SeqOptions model;
  TrainingOptions training;
};

// The settings from the flags; when resuming, the checkpoint's (all but the
// iteration count), after checking that the checkpoint fits the data.
RunSettings run_settings(const TrainFlags& flags, const Corpus& corpus,
                         const std::optional<CheckpointInfo>& resumed, std::ostream& out) {
  RunSettings settings{model_options(flags, corpus), training_options(flags)};
  if (!resumed) return settings;
  check_vocabularies(flags.resume, *resumed, corpus.source_vocabulary, corpus.target_vocabulary);
  settings.model = resumed->model;
  settings.training = resumed->training;
  settings.training.iterations(flags.iters);
  check(resumed->progress.iteration <= flags.iters,
        "{}: the checkpoint is at iteration {}, beyond --iters {}; pass a larger --iters to "
        "continue it",
        flags.resume, resumed->progress.iteration, flags.iters);
  out << fmt::format("Resuming {} at iteration {} (model, seed and rates from the checkpoint)\n",
                     flags.resume, resumed->progress.iteration);
  return settings;
}

// ---------------------------------------------------------------- training

std::string duration_text(double seconds) {
  const auto total = static_cast<int64_t>(seconds + 0.5);
  if (total >= 3600) return fmt::format("{}h {:02}m", total / 3600, total % 3600 / 60);
  if (total >= 60) return fmt::format("{}m {:02}s", total / 60, total % 60);
  return fmt::format("{}s", total);
}

// What one session of training (one run of the program) did.
struct Session {
  bool finished = false;        // all iterations done (false: stopped by a signal)
  double last_loss = 0;         // the latest interval's average loss
  int64_t iterations_run = 0;   // in this session
  double ms_per_iteration = 0;  // in this session
};

// Where a run writes, inside --out (created here).
struct OutputFiles {
  fs::path folder;
  fs::path checkpoint;
  fs::path loss_curve;
};

// Checks, before any work, that no file the run writes is one it reads
// (cli::PathsApart): the data, the checkpoint resumed, each other.
void check_paths_apart(const TrainFlags& flags, const CorpusOptions& data) {
  const fs::path folder = flags.out;
  const bool data_from_checkpoint = !flags.resume.empty() && !flags.given.contains("data");
  cli::PathsApart paths;
  paths
      .reads(data_from_checkpoint ? "the data file of --resume's checkpoint" : "--data",
             data.path())
      .reads("--resume", flags.resume)
      .writes_next("--out", folder / kCheckpointName, "--resume")
      .writes("--out", folder / "loss.svg")
      .writes("--out", folder / "report.html")
      .writes_matching("--out", folder, "attention_*.svg");
  cli::add_dot_outputs(paths, flags.inspect.dot);
  paths.check();
}

// Creates --out and checks it can be written, before any work.
OutputFiles prepare_output(const std::string& out) {
  const fs::path folder = out;
  cli::prepare_output_folder("--out", folder);
  return {folder, folder / kCheckpointName, folder / "loss.svg"};
}

// What a divergence leaves untouched.
std::string kept_files(const OutputFiles& files) {
  return cli::kept_text(files.checkpoint.string(), fs::exists(files.checkpoint));
}

// Throws when the run has diverged: a loss since the last check, or (with
// `weights`) a parameter, is NaN or infinite. Each step's loss goes into the
// running totals, and stays there (NaN never goes away), so checking them
// after every iteration names the first bad one.
void check_not_diverged(Trainer& trainer, const OutputFiles& files, bool weights) {
  const TrainingProgress& progress = trainer.progress();
  const std::string when = fmt::format("iteration {}", progress.iteration);
  const double lr = trainer.options().learning_rate();
  double loss = progress.print_loss_total + progress.plot_loss_total;
  if (!progress.interval_losses.empty()) loss += progress.interval_losses.back();
  if (!progress.plot_losses.empty()) loss += progress.plot_losses.back();
  if (!std::isfinite(loss)) cli::check_finite_training("loss", loss, when, lr, kept_files(files));
  if (weights) {
    cli::check_finite_parameters(trainer.model().named_parameters(), when, lr, kept_files(files));
  }
}

// Trains until the iterations are done or a signal (SIGINT, SIGTERM) stops it
// between two iterations, printing a progress line after each interval and
// calling `save` every `checkpoint_every` iterations; stops with an Error at the first non-finite
// loss, or at a reported average over 100 times the first iteration's loss (before the save that
// follows it).
Session train_session(Trainer& trainer, int64_t checkpoint_every, const std::function<void()>& save,
                      const OutputFiles& files, cli::InterruptGuard& interrupts,
                      std::ostream& out) {
  Session session;
  session.last_loss =
      trainer.progress().interval_losses.empty() ? 0.0 : trainer.progress().interval_losses.back();
  Trainer::Hooks hooks;
  hooks.report = [&](const IntervalReport& report) {
    session.last_loss = report.average_loss;
    cli::check_loss_growth(report.average_loss, trainer.progress().first_loss,
                           fmt::format("iteration {}", report.iteration),
                           trainer.options().learning_rate(), kept_files(files));
    out << fmt::format("iter {:>6}/{} ({:5.1f}%)  loss {:.4f}  {:6.0f} it/s  ETA {}\n",
                       report.iteration, report.iterations,
                       100.0 * static_cast<double>(report.iteration) /
                           static_cast<double>(std::max<int64_t>(report.iterations, 1)),
                       report.average_loss, report.iterations_per_second,
                       duration_text(report.seconds_left))
        << std::flush;
  };
  hooks.checkpoint_every = checkpoint_every;
  hooks.checkpoint = save;
  hooks.stop_requested = [&] {
    check_not_diverged(trainer, files, false);
    return interrupts.stop_requested();
  };

  const int64_t first_iteration = trainer.progress().iteration;
  const double seconds_before = trainer.progress().train_seconds;
  session.finished = trainer.run(hooks);
  session.iterations_run = trainer.progress().iteration - first_iteration;
  session.ms_per_iteration = session.iterations_run > 0
                                 ? 1000.0 * (trainer.progress().train_seconds - seconds_before) /
                                       static_cast<double>(session.iterations_run)
                                 : 0.0;
  return session;
}

// ---------------------------------------------------------------- saving

plot::LineChart loss_chart(const TrainingProgress& progress, int64_t plot_every) {
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
  return chart;
}

// The checkpoint (model, optimizer and all a resumed run needs) and the loss
// curve so far, written as one set, and only from a run that has not diverged.
void save_run(const OutputFiles& files, const Seq2Seq& model, Trainer& trainer,
              const CheckpointInfo& info, const cli::InterruptGuard& interrupts) {
  check_not_diverged(trainer, files, true);
  cli::OutputSet set(files.folder);
  save_checkpoint(set.staged(files.checkpoint.filename().string()), model, &trainer.optimizer(),
                  info);
  interrupts.during_save();
  loss_chart(trainer.progress(), info.training.plot_every())
      .save(set.staged(files.loss_curve.filename().string()));
  set.commit();
}

// ---------------------------------------------------------------- reporting

// The loss table (one row per print_every iterations) and the session's speed.
void print_loss_table(std::ostream& out, const TrainingProgress& progress, int64_t print_every,
                      const Session& session) {
  out << "\nAverage loss per target word, per interval of " << print_every << " iterations:\n";
  const std::vector<double>& table = progress.interval_losses;
  for (size_t i = 0; i < table.size(); ++i) {
    out << fmt::format("  {:>6}-{:<6} {:.4f}\n", static_cast<int64_t>(i) * print_every + 1,
                       static_cast<int64_t>(i + 1) * print_every, table[i]);
  }
  out << fmt::format("{:.3f} ms per iteration ({} iterations this run)\n\n",
                     session.ms_per_iteration, session.iterations_run);
}

// Prints `count` pairs picked at random from `pairs` as the tutorial's
// evaluateRandomly does (> source, = reference, < output), each pair at most once.
void print_examples(std::ostream& out, Seq2Seq& model, const Corpus& corpus,
                    const std::vector<text::SentencePair>& pairs, int64_t count,
                    Generator& random) {
  for (const size_t index : draw_without_replacement(pairs.size(), count, random)) {
    const text::SentencePair& pair = pairs[index];
    const SentenceTranslation translation =
        translate_sentence(model, corpus.source_vocabulary, corpus.target_vocabulary, pair.source);
    out << "> " << pair.source << "\n= " << pair.target << "\n< "
        << text::join_words(translation.output_words) << "\n\n";
  }
}

// Example translations of training and held-out sentences, then the attention
// maps of up to three more training sentences (in `report` too).
void show_examples(std::ostream& out, Seq2Seq& model, const Seq2SeqOptions& options,
                   const Corpus& corpus, const TrainFlags& flags, const fs::path& folder,
                   cli::RunReport& report) {
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
    report_sentence(report, pair.source, pair.target, translation, options.decoder(),
                    options.max_length());
  }
}

// report.html: the settings, the final figures, the loss curve, the maps
// show_examples added and the first step's graph (`graph_svg`).
void save_report(cli::RunReport& report, const TrainFlags& flags, const Seq2SeqOptions& options,
                 const Corpus& corpus, const Trainer& trainer, const Session& session,
                 const Evaluation& validation, const OutputFiles& files,
                 const std::string& graph_svg) {
  const TrainingOptions& training = trainer.options();
  report.setting("data", flags.data)
      .setting("decoder", std::string(to_string(options.decoder())))
      .setting("hidden H", std::to_string(options.hidden_size()))
      .setting("max_length", std::to_string(options.max_length()))
      .setting("iterations", std::to_string(training.iterations()))
      .setting("learning rate", fmt::format("{:g}", training.learning_rate()))
      .setting("seed", std::to_string(training.seed()))
      .setting("pairs (train / held out)",
               fmt::format("{} / {}", corpus.split.train.size(), corpus.split.validation.size()));
  report.figure("final loss (last interval)", fmt::format("{:.4f}", session.last_loss))
      .figure("validation BLEU-4", fmt::format("{:.4f}", validation.corpus.score))
      .figure("validation unknown words", std::to_string(validation.unknown_words))
      .picture("Training loss", loss_chart(trainer.progress(), training.plot_every()).to_svg());
  report.add_graph_svg(graph_svg);
  report.save(files.folder / "report.html");
}

void print_json_summary(const Corpus& corpus, const Seq2SeqOptions& options,
                        const TrainingProgress& progress, const Session& session,
                        const Evaluation& validation, const OutputFiles& files) {
  const nlohmann::json summary = {{"pairs", corpus.pairs.size()},
                                  {"train_pairs", corpus.split.train.size()},
                                  {"validation_pairs", corpus.split.validation.size()},
                                  {"source_vocabulary", corpus.source_vocabulary.size()},
                                  {"target_vocabulary", corpus.target_vocabulary.size()},
                                  {"decoder", std::string(to_string(options.decoder()))},
                                  {"iterations", progress.iteration},
                                  {"ms_per_iteration", session.ms_per_iteration},
                                  {"final_loss", session.last_loss},
                                  {"validation_bleu", validation.corpus.score},
                                  {"validation_unknown_words", validation.unknown_words},
                                  {"checkpoint", files.checkpoint.string()}};
  std::cout << summary.dump() << std::endl;
}

}  // namespace

// ---------------------------------------------------------------- the command

int run_train(const TrainFlags& flags) {
  // One pair at a time is a chain of small products: threads mostly wait.
  parallel::set_num_threads(flags.threads);
  std::ostream& out = flags.json ? std::cerr : std::cout;  // with --json stdout holds one line

  // Read and check: the checkpoint to resume, the data, the settings.
  std::optional<CheckpointInfo> resumed;
  if (!flags.resume.empty()) {
    resumed = read_checked_checkpoint_info(flags.resume);
    check_resume_flags(flags, *resumed);
  }
  const CorpusOptions data = corpus_options(flags, resumed);
  check_paths_apart(flags, data);
  const Corpus corpus = load_corpus(data);
  print_skipped(std::cerr, corpus.report);
  print_corpus_summary(out, corpus);
  const RunSettings settings = run_settings(flags, corpus, resumed, out);
  const Seq2SeqOptions& options = settings.model;
  const TrainingOptions& training = settings.training;

  // The output folder before any training: a run must not find out at the
  // end that it cannot write (bad input, found above, leaves no folder).
  const OutputFiles files = prepare_output(flags.out);

  // Build the model and its trainer, or restore them from the checkpoint.
  Generator initial(training.seed());
  Seq2Seq model(options, initial);
  Trainer trainer(
      model, encode_pairs(corpus.split.train, corpus.source_vocabulary, corpus.target_vocabulary),
      training);
  if (resumed) load_training_state(flags.resume, trainer, *resumed);

  // Train, saving every checkpoint_every iterations, at the end and on SIGINT
  // or SIGTERM (Ctrl-C, kill): the guard lasts until the last save is done.
  std::optional<cli::InterruptGuard> guard;
  cli::InterruptGuard& interrupts = guard.emplace();
  const auto save = [&] {
    const CheckpointInfo info{options,  corpus.source_vocabulary, corpus.target_vocabulary, data,
                              training, trainer.progress()};
    save_run(files, model, trainer, info, interrupts);
  };
  out << fmt::format("Training {} parameters ({} decoder, H = {}) for {} iterations\n",
                     model.parameter_count(), to_string(options.decoder()), options.hidden_size(),
                     training.iterations());
  out << std::flush;
  // One iteration's graph is drawn with each module (encoder, decoder) as a box.
  cli::InspectSession inspect(flags.inspect,
                              DotOptions().names(model.named_parameters()).collapse_depth(1));
  const Session session =
      train_session(trainer, flags.checkpoint_every, save, files, interrupts, out);
  inspect.finish(out);
  save();
  if (!session.finished) {
    out << fmt::format(
               "Interrupted at iteration {} of {} by {}; saved {} and {} — continue with --resume "
               "{}\n",
               trainer.progress().iteration, training.iterations(), interrupts.what(),
               printable(files.checkpoint.string(), 300), files.loss_curve.filename().string(),
               printable(files.checkpoint.string(), 300))
        << std::flush;
    return interrupts.exit_status();  // 130 for SIGINT, 143 for SIGTERM, as a shell reports them
  }
  guard.reset();  // from here on a signal ends the program as usual

  // Results: the loss table, translations, attention maps, validation BLEU.
  print_loss_table(out, trainer.progress(), training.print_every(), session);
  cli::RunReport report("translate train (the tutorial recipe)");
  show_examples(out, model, options, corpus, flags, files.folder, report);
  const Evaluation validation =
      evaluate(model, corpus.source_vocabulary, corpus.target_vocabulary, corpus.split.validation);
  out << fmt::format(
      "Validation BLEU-4: {:.4f} over {} source sentences ({} unknown words mapped to <unk>)\n",
      validation.corpus.score, validation.pairs.size(), validation.unknown_words);
  save_report(report, flags, options, corpus, trainer, session, validation, files,
              inspect.graph_svg());
  out << fmt::format("Wrote {}, {}, report.html and attention_*.svg in {}\n",
                     files.checkpoint.filename().string(), files.loss_curve.filename().string(),
                     printable(files.folder.string(), 300));
  if (flags.json)
    print_json_summary(corpus, options, trainer.progress(), session, validation, files);
  return 0;
}

}  // namespace attograd::translate_tutorial
