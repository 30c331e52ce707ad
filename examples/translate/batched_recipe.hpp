// examples/translate/batched_recipe.hpp — `translate --recipe batched`: d2l's
// batched English -> French recipe with Bahdanau attention
// (models/batched_seq2seq/batched_seq2seq.hpp has the model, docs/attention.md the walk-through).
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

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "examples/common/cli.hpp"
#include "examples/common/divergence.hpp"
#include "examples/common/interrupt.hpp"
#include "examples/common/run_report.hpp"
#include "examples/translate/beam_flags.hpp"
#include "examples/translate/report_parts.hpp"
#include "examples/translate/size_limits.hpp"
#include "models/text/pairs.hpp"
#include "models/translation/batched_translator.hpp"
#include "nn/checkpoint.hpp"
#include "plot/svg_line_plot.hpp"

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
  std::string lr_schedule = "constant";  // see declare_batched_train_flags
  int64_t epochs = 250;
  double clip = 1.0;
  int64_t seed = 0;      // initial weights, dropout masks and batch order
  int64_t threads = 0;   // 0: one per replica
  int64_t replicas = 1;  // copies of the model sharing each batch (nn::DataParallel)
  int64_t print_every = 10;
  int64_t checkpoint_every = 0;  // epochs between checkpoints (0: only at the end)
  std::string resume;            // checkpoint to continue
  // The flags named on the command line (cli::Parser::given()): with
  // --resume, one that disagrees with the checkpoint is an error.
  std::set<std::string> given;
  std::string attention_sentence = "i'm home .";
  std::string out = "out/translate_batched";
  bool json = false;
};

struct BatchedTranslateFlags {
  std::string checkpoint = "out/translate_batched/checkpoint.safetensors";
  std::string attention;  // folder for attention_<line>.svg, or "" for none
  std::string report;     // report.html of the sentences, or "" for none
  std::size_t report_maps = translate_report::kReportMaps;  // sentences whose maps it keeps
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

// train: read and batch the data (or resume a checkpoint: batched_resume.hpp),
// train, write checkpoint.safetensors, loss.svg and attention.svg into
// flags.out, translate d2l's four test sentences, and print (or, with --json,
// put on stdout as one line) the summary. The checkpoint and loss.svg are also
// written every --checkpoint-every epochs, and on SIGINT or SIGTERM, which
// stop the run between two steps. Returns the exit status: 0, or 130 / 143
// when a signal stopped it.
int run_batched_train(const BatchedTrainFlags& flags);
// translate: one sentence per line of `in`, one translation per line of `out`;
// warnings about unknown or cut-off words go to `err`.
int run_batched_translate(const BatchedTranslateFlags& flags, std::istream& in, std::ostream& out,
                          std::ostream& err);
// eval: corpus BLEU-4 and d2l's sentence BLEU (k = 2) on a range of pairs.
int run_batched_eval(const BatchedEvalFlags& flags);

// ---------------------------------------------------------------- shared pieces
//
// The steps every recipe on d2l's batched data takes, whatever its model
// (translation::BatchedTranslator): the Transformer recipe
// (transformer_recipe.hpp) is these with another model and other pictures.

// The data settings of a train command.
struct DataSettings {
  std::string data;       // the pairs file
  std::string direction;  // eng-fra or fra-eng
  int64_t num_examples;   // the first pairs of the file (0: all)
  int64_t min_freq;       // rarer words become <unk>
  int64_t num_steps;      // T
};

// The flags both recipes' train commands share, bound to the members of the
// same names: --data … --num-steps, and --batch … --json.
template <typename TrainFlags>
void declare_data_flags(cli::Parser& parser, TrainFlags& flags) {
  parser.flag("data", flags.data, "tab-separated English/French pairs (Tatoeba)")
      .choice("direction", flags.direction, {"eng-fra", "fra-eng"},
              "source and target language (d2l: English -> French)")
      .flag("num-examples", flags.num_examples, "use the first N pairs of the file (0: all)",
            cli::non_negative())
      .flag("min-freq", flags.min_freq, "words seen fewer times become <unk>", cli::at_least(1))
      .flag("num-steps", flags.num_steps, "T: every sentence is cut or padded to T ids",
            cli::in_range(2, kMaxSteps));
}
// report.html's configuration: the data flags, `model` (the recipe's own
// sizes), the training flags both recipes share, and the parameter count.
template <typename TrainFlags>
std::vector<std::pair<std::string, std::string>> report_settings(
    const TrainFlags& flags, const std::vector<std::pair<std::string, std::string>>& model,
    int64_t parameters) {
  std::vector<std::pair<std::string, std::string>> rows = {
      {"data", flags.data},
      {"direction", flags.direction},
      {"num_examples", std::to_string(flags.num_examples)},
      {"num_steps", std::to_string(flags.num_steps)}};
  rows.insert(rows.end(), model.begin(), model.end());
  rows.insert(rows.end(), {{"dropout", fmt::format("{:g}", flags.dropout)},
                           {"epochs", std::to_string(flags.epochs)},
                           {"batch", std::to_string(flags.batch)},
                           {"lr", fmt::format("{:g}", flags.lr)},
                           {"seed", std::to_string(flags.seed)},
                           {"parameters", std::to_string(parameters)}});
  return rows;
}
template <typename TrainFlags>
void declare_training_flags(cli::Parser& parser, TrainFlags& flags,
                            const std::string& attention_sentence_help) {
  parser.flag("batch", flags.batch, "sentence pairs per mini-batch", cli::size_at_most(kMaxBatch))
      .flag("lr", flags.lr, cli::learning_rate_help("Adam learning rate"), cli::positive())
      .flag("lr-schedule", flags.lr_schedule,
            "the rate per epoch (PyTorch's schedulers): constant, step:S:G (times G every S "
            "epochs), cosine (to 0 over --epochs), warmup:N (linear from lr/N over N epochs), "
            "warmup-cosine:N (then cosine)")
      .flag("epochs", flags.epochs, "passes over the pairs", cli::size_at_most(kMaxEpochs))
      .flag("clip", flags.clip, "clip the gradients to this global norm", cli::positive())
      .flag("seed", flags.seed, "seed of the weights, dropout masks and batch order",
            cli::non_negative())
      .flag("threads", flags.threads,
            "threads for the replicas and for large matrix products (0: one per replica); "
            "results do not depend on it",
            cli::count_at_most(kMaxThreads))
      .flag("replicas", flags.replicas,
            "copies of the model that share each mini-batch, each on its own thread: faster on "
            "two cores or more; the training then depends on this count (dropout masks, the "
            "order of the gradient's sums)",
            cli::size_at_most(kMaxReplicas))
      .flag("print-every", flags.print_every, "epochs per progress line", cli::positive())
      .flag("attention-sentence", flags.attention_sentence, attention_sentence_help)
      .flag("out", flags.out, "folder for the checkpoint and the pictures (created if missing)")
      .flag("json", flags.json,
            "print one JSON summary line on stdout (the report goes to stderr)");
  parser
      .flag("checkpoint-every", flags.checkpoint_every,
            "epochs between checkpoints (0: only at the end and on Ctrl-C or SIGTERM)",
            cli::non_negative())
      .flag("resume", flags.resume,
            "continue from this checkpoint, with its data, model and training settings");
}

// The pairs of `path` with d2l's preprocessing, source first for `direction`;
// skipped lines are warned about on stderr.
text::PairSet read_data(const std::string& path, const std::string& direction);
// pairs[offset, offset + count), or everything from offset when count is 0.
std::vector<text::SentencePair> take(const std::vector<text::SentencePair>& pairs, int64_t offset,
                                     int64_t count);
// The pairs cut or padded to num_steps ids, with their vocabularies; says so on `out`.
text::BatchedData prepare_data(const text::PairSet& set, const DataSettings& settings,
                               std::ostream& out);
// The --lr-schedule value as a schedule over `epochs` epochs; throws
// cli::UsageError naming the flag for anything else.
nn::LRSchedule lr_schedule_from_flag(const std::string& text, int64_t epochs);
// The training loop's options from the flags declare_training_flags declared.
template <typename TrainFlags>
translation::BatchedTrainingOptions training_options(const TrainFlags& flags) {
  return translation::BatchedTrainingOptions()
      .epochs(flags.epochs)
      .lr(flags.lr)
      .batch_size(flags.batch)
      .clip_norm(flags.clip)
      .seed(static_cast<uint64_t>(flags.seed))
      .replicas(flags.replicas)
      .lr_schedule(lr_schedule_from_flag(flags.lr_schedule, flags.epochs));
}
// Sets parallel::num_threads() from --threads, or to one per replica when it
// is 0. (Splitting the recipes' products, which take microseconds each,
// costs more than a second thread gives: docs/performance.md.)
void use_threads(int64_t threads, int64_t replicas);
// "1 thread", "2 threads", "2 threads, 2 replicas": the training line's account
// of parallel::num_threads() and --replicas.
std::string threads_text(int64_t replicas);
// Throws unless the sentence has a word to translate.
void check_attention_sentence(const std::string& sentence);

// The files a batched or Transformer training run reads and writes.
struct TrainPaths {
  std::string data;                   // the pairs file
  bool data_from_checkpoint = false;  // --data left out with --resume: the checkpoint names it
  std::string resume;                 // --resume, or ""
  std::filesystem::path out;          // --out
  std::filesystem::path pictures;     // the attention picture in --out, or the folder of them
  std::string pictures_pattern;       // the pictures' names in that folder; "" for one file
};
// Before any work: nothing train writes into --out (the checkpoint, loss.svg,
// report.html, the pictures) is the data file, the checkpoint resumed (the
// new checkpoint excepted: it continues that one) or another output
// (cli::PathsApart); UsageError naming both otherwise.
void check_train_paths_apart(const TrainPaths& paths);

// How train_reporting_progress reports and saves.
struct TrainingSession {
  int64_t print_every = 10;      // epochs per progress line
  int64_t checkpoint_every = 0;  // epochs between saves (0: none during training)
  std::string out_folder;        // where the checkpoint goes (named by divergence messages)
  // Writes the checkpoint and loss.svg as one set (save_training_set).
  std::function<void()> save;
  cli::InterruptGuard* interrupts = nullptr;  // stops the run between two steps
};

// trainer.run with a progress line every print_every epochs, a save every
// checkpoint_every epochs, and a summary at the end. Returns false when a
// signal stopped it (the caller saves and exits). Stops with an Error at the
// first epoch whose loss, gradient norm or weights are not finite, or whose
// loss is over 100 times the first step's, saying that out_folder's checkpoint
// (if any) keeps the last good state (examples/common/divergence.hpp).
bool train_reporting_progress(translation::BatchedTrainer& trainer,
                              translation::BatchedTranslator& model,
                              const translation::BatchedTrainingOptions& training,
                              const TrainingSession& session, std::ostream& out);

// What train_and_save needs of the command line.
struct TrainingRun {
  int64_t print_every = 10;
  int64_t checkpoint_every = 0;
  std::string out_folder;
  int64_t epochs = 0;
};

// A batched or Transformer training run: train_reporting_progress under a
// SIGINT/SIGTERM guard, then the checkpoint and loss.svg saved as one set
// (`metadata` gives the checkpoint's entries when it is called, `settings`
// the resume settings). Returns the exit status (130 or 143) after printing
// where the run stopped when a signal stopped it; otherwise nothing, and
// from then on a signal ends the program as usual.
std::optional<int> train_and_save(translation::BatchedTrainer& trainer,
                                  translation::BatchedTranslator& model,
                                  const translation::BatchedTrainingOptions& training,
                                  const TrainingRun& run,
                                  const std::function<nn::Metadata()>& metadata,
                                  const nlohmann::json& settings, std::ostream& out);

// checkpoint.safetensors (the parameters, Adam's state, `metadata` and the
// resume entries of batched_resume.hpp) and loss.svg into `folder`, renamed
// into place together.
void save_training_set(const std::filesystem::path& folder, translation::BatchedTranslator& model,
                       translation::BatchedTrainer& trainer, nn::Metadata metadata,
                       const nlohmann::json& settings, const cli::InterruptGuard& interrupts);

// "after epoch 2 of 10", or "in epoch 3 of 10, after its step 4".
std::string position_text(const translation::TrainingPosition& position, int64_t epochs);

// The closing line of a run a signal stopped: where, what was saved, how to resume.
void print_interrupted(std::ostream& out, const translation::BatchedTrainer& trainer,
                       int64_t epochs, const std::string& out_folder,
                       const cli::InterruptGuard& interrupts);

// The loss per epoch (loss.svg, and the report's loss curve).
plot::LineChart loss_chart(const translation::TrainingReport& report);
void save_loss_curve(const std::filesystem::path& path, const translation::TrainingReport& report);
// Output steps down, valid source positions across (prediction.attention).
void save_attention_map(const std::filesystem::path& path,
                        const translation::SentenceTranslation& translation,
                        const std::string& title);

// Draws the attention of one translation into the file `path` (or folder).
using DrawAttention =
    std::function<void(const std::filesystem::path& path, const translation::SentenceTranslation&)>;

// Adds the attention maps of one translated sentence (named `sentence` in
// the report's selector) to report.html.
using ReportAttention = std::function<void(cli::RunReport& report, const std::string& sentence,
                                           const translation::SentenceTranslation&)>;

// The Bahdanau decoder's one map per sentence.
void report_decoder_attention(cli::RunReport& report, const std::string& sentence,
                              const translation::SentenceTranslation& translation);

// What finish_training writes and prints.
struct TrainOutputs {
  std::string recipe;  // the "recipe" of the --json summary
  std::string folder;  // --out
  int64_t num_steps = 10;
  std::string attention_sentence;  // drawn by draw_attention(folder, its translation)
  bool json = false;
  std::string pictures;  // what draw_attention writes, for the closing line
  DrawAttention draw_attention;
  ReportAttention report_attention;                           // the maps of report.html
  std::vector<std::pair<std::string, std::string>> settings;  // report.html's configuration
  std::string graph_svg;  // report.html's picture of the first step's graph (empty: none ran)
};

// d2l's four test sentences, each printed with its sentence BLEU (k = 2).
struct TestTranslations {
  nlohmann::json translations = nlohmann::json::array();  // for the --json summary
  int64_t perfect = 0;                                    // how many scored BLEU 1
};
TestTranslations translate_test_sentences(translation::BatchedTranslator& model,
                                          const text::BatchedData& data, int64_t num_steps,
                                          std::ostream& out);

// After training (and save_training_set): the four test sentences, the attention picture, BLEU on
// the training pairs, report.html (all of these, with the attention of the
// test sentences and of the drawn one), and the --json summary line.
void finish_training(translation::BatchedTranslator& model, const text::PairSet& set,
                     const text::BatchedData& data, const translation::TrainingReport& report,
                     const TrainOutputs& outputs, std::ostream& out);

// The translate command for any model: one sentence per line of `in`, one
// translation per line of `out` (the K best with --nbest), warnings to `err`, and with a non-empty
// attention_folder a picture per line (attention_<line>.svg) by `draw`; with
// a non-empty report_file, one report.html-style page of every sentence, its
// hypotheses and the maps (by `report_attention`) of the first report_maps.
int translate_lines(translation::BatchedTranslator& model,
                    const text::Vocabulary& source_vocabulary,
                    const text::Vocabulary& target_vocabulary, int64_t num_steps,
                    const translate_beam::BeamFlags& beam, const std::string& attention_folder,
                    const DrawAttention& draw, const std::string& report_file,
                    std::size_t report_maps, const ReportAttention& report_attention,
                    std::istream& in, std::ostream& out, std::ostream& err);

// What a checkpoint says about the data it was trained on.
struct TrainedOn {
  std::string recipe;
  text::Vocabulary source_vocabulary;
  text::Vocabulary target_vocabulary;
  int64_t num_steps;
  std::string data;
  std::string direction;
  int64_t num_examples;
};

// The eval command for any model: corpus BLEU-4 and d2l's sentence BLEU.
int evaluate_checkpoint(translation::BatchedTranslator& model, const TrainedOn& trained,
                        const BatchedEvalFlags& flags);

}  // namespace attograd::translate_batched
