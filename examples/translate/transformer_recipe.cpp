// examples/translate/transformer_recipe.cpp — the train, translate and eval
// commands of `translate --recipe transformer` (see transformer_recipe.hpp).
#include "examples/translate/transformer_recipe.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autograd/inspect/dot.hpp"
#include "autograd/inspect/graph_picture.hpp"
#include "autograd/ops.hpp"
#include "examples/common/output_folder.hpp"
#include "examples/translate/batched_checkpoint.hpp"
#include "examples/translate/batched_resume.hpp"
#include "examples/translate/checkpoint_sizes.hpp"
#include "examples/translate/report_parts.hpp"
#include "examples/translate/size_limits.hpp"
#include "models/transformer/transformer.hpp"
#include "nn/checkpoint.hpp"
#include "nn/safetensors_messages.hpp"
#include "plot/svg_graph.hpp"
#include "plot/svg_plot.hpp"
#include "tensor/error.hpp"
#include "tensor/parallel.hpp"

namespace attograd::translate_transformer {

using namespace attograd::translation;
using namespace attograd::translate_batched;
using transformer::Transformer;
using transformer::TransformerOptions;
namespace fs = std::filesystem;

namespace {

constexpr const char* kTransformerRecipe = "transformer";
constexpr const char* kMapTitle = "Encoder–decoder attention, last block, mean of the heads";

// ---------------------------------------------------------------- checkpoints

struct TransformerCheckpoint {
  TransformerOptions model{1, 1};
  TrainedOn trained;
};

nn::Metadata to_metadata(const TransformerCheckpoint& info, const TransformerTrainFlags& flags,
                         const TrainingReport& report) {
  const TransformerOptions& model = info.model;
  return {{"recipe", kTransformerRecipe},
          {"num_hiddens", std::to_string(model.num_hiddens())},
          {"num_blocks", std::to_string(model.num_blocks())},
          {"num_heads", std::to_string(model.num_heads())},
          {"ffn_num_hiddens", std::to_string(model.ffn_num_hiddens())},
          {"dropout", fmt::format("{}", model.dropout())},
          {"num_steps", std::to_string(info.trained.num_steps)},
          {"source_vocabulary", info.trained.source_vocabulary.serialize()},
          {"target_vocabulary", info.trained.target_vocabulary.serialize()},
          {"data", info.trained.data},
          {"direction", info.trained.direction},
          {"num_examples", std::to_string(info.trained.num_examples)},
          {"min_freq", std::to_string(flags.min_freq)},
          {"epochs", std::to_string(report.epochs.size())},
          {"seed", std::to_string(flags.seed)},
          {"replicas", std::to_string(flags.replicas)},
          {"final_loss", fmt::format("{}", report.final_loss)}};
}

TransformerCheckpoint read_checkpoint(const std::string& path) {
  const translate_checkpoint::CheckpointSizes sizes(path);  // the header only, no values yet
  const nn::Metadata& metadata = sizes.metadata();
  translate_checkpoint::require_recipe(path, metadata, kTransformerRecipe);
  TransformerCheckpoint info{
      TransformerOptions(1, 1),
      {kTransformerRecipe,
       vocabulary_field(metadata, path, "source_vocabulary", kTransformerRecipe),
       vocabulary_field(metadata, path, "target_vocabulary", kTransformerRecipe),
       metadata_integer(metadata, path, "num_steps"), "", "", 0}};
  read_data_fields(metadata, path, info.trained.data, info.trained.direction,
                   info.trained.num_examples);
  check_checkpoint_size(path, "num_steps", info.trained.num_steps, 2, kMaxSteps);
  // Every size that builds the model, against the weights it sizes.
  const int64_t hiddens = metadata_integer(metadata, path, "num_hiddens");
  const int64_t heads = metadata_integer(metadata, path, "num_heads");
  const double dropout = metadata_number(metadata, path, "dropout");
  sizes.require("source vocabulary size", info.trained.source_vocabulary.size(),
                "encoder.embedding.weight", 0);
  sizes.require("target vocabulary size", info.trained.target_vocabulary.size(),
                "decoder.embedding.weight", 0);
  sizes.require("num_hiddens", hiddens, "encoder.embedding.weight", 1);
  sizes.require("ffn_num_hiddens", metadata_integer(metadata, path, "ffn_num_hiddens"),
                "encoder.blks.block0.ffn.dense1.weight", 0);
  sizes.require_layers("num_blocks", metadata_integer(metadata, path, "num_blocks"),
                       "encoder.blks.block{}.ffn.dense1.weight");
  sizes.require_dropout(dropout);
  check(heads >= 1 && hiddens % heads == 0,
        "'{}': the metadata says num_heads {}, which does not divide num_hiddens {}; the file was "
        "edited or damaged: retrain, or restore the file",
        nn::printable(path, 300), heads, hiddens);
  info.model = TransformerOptions(info.trained.source_vocabulary.size(),
                                  info.trained.target_vocabulary.size())
                   .num_hiddens(hiddens)
                   .num_blocks(metadata_integer(metadata, path, "num_blocks"))
                   .num_heads(heads)
                   .ffn_num_hiddens(metadata_integer(metadata, path, "ffn_num_hiddens"))
                   .dropout(dropout);
  return info;
}

std::unique_ptr<Transformer> load_transformer(const std::string& path,
                                              const TransformerCheckpoint& info) {
  Generator unused(0);  // the values are replaced by the checkpoint's
  auto model = std::make_unique<Transformer>(info.model, unused);
  nn::load(*model, path);
  model->eval();
  return model;
}

// ---------------------------------------------------------------- pictures

// Head `head` of `weights` (h, rows, cols): only the labelled rows and
// columns (the valid source positions and the steps taken), row-major.
std::vector<double> head_cells(const Tensor& weights, int64_t head, size_t shown_rows,
                               size_t shown_cols) {
  const int64_t rows = weights.shape()[1], cols = weights.shape()[2];
  const std::vector<real> values = weights.contiguous_data().to_vector();
  std::vector<double> cells;
  for (int64_t r = 0; r < static_cast<int64_t>(shown_rows) && r < rows; ++r) {
    for (int64_t c = 0; c < static_cast<int64_t>(shown_cols) && c < cols; ++c) {
      cells.push_back(values[static_cast<size_t>((head * rows + r) * cols + c)]);
    }
  }
  return cells;
}

// One heatmap per head of `weights` (h, rows, cols) into folder/<stem>_head<j>.svg.
void save_head_maps(const fs::path& folder, const std::string& stem, const std::string& title,
                    const Tensor& weights, const std::vector<std::string>& row_labels,
                    const std::vector<std::string>& column_labels) {
  const int64_t heads = weights.shape()[0], rows = weights.shape()[1], cols = weights.shape()[2];
  const auto shown_rows = std::min(static_cast<int64_t>(row_labels.size()), rows);
  const auto shown_cols = std::min(static_cast<int64_t>(column_labels.size()), cols);
  for (int64_t head = 0; head < heads; ++head) {
    plot::Heatmap map(static_cast<size_t>(shown_rows), static_cast<size_t>(shown_cols),
                      head_cells(weights, head, static_cast<size_t>(shown_rows),
                                 static_cast<size_t>(shown_cols)));
    map.title(fmt::format("{}, head {}", title, head + 1))
        .row_labels(row_labels)
        .column_labels(column_labels)
        .x_label("Keys")
        .y_label("Queries")
        .value_limits(0, 1)
        .colormap(plot::Colormap::reds())
        .colorbar_label("weight");
    map.save(folder / fmt::format("{}_head{}.svg", stem, head + 1));
  }
}

// The words of the maps of `translation`: its source words and <eos> (the
// encoder's keys), and the decoder's inputs (<bos>, then the output of each
// step but the last).
struct MapWords {
  std::vector<std::string> source;
  std::vector<std::string> inputs;
};
MapWords map_words(const SentenceTranslation& translation) {
  MapWords words{translation.source_words, {"<bos>"}};
  words.source.push_back("<eos>");
  words.inputs.insert(words.inputs.end(), translation.output_words.begin(),
                      translation.output_words.end());
  words.inputs.resize(static_cast<size_t>(translation.best.length));
  return words;
}

// Every head of every block of every kind for `translation` (the last
// predict) into report.html, named `sentence` in its selector.
void report_all_heads(cli::RunReport& report, const Transformer& model, const std::string& sentence,
                      const SentenceTranslation& translation) {
  const MapWords words = map_words(translation);
  const std::vector<std::string>& source = words.source;
  const std::vector<std::string>& inputs = words.inputs;
  const transformer::AttentionMaps& maps = model.attention_maps();
  const auto add = [&](const char* kind, size_t block, const Tensor& weights,
                       const std::vector<std::string>& queries,
                       const std::vector<std::string>& keys) {
    const auto rows = std::min(queries.size(), static_cast<size_t>(weights.shape()[1]));
    const auto cols = std::min(keys.size(), static_cast<size_t>(weights.shape()[2]));
    for (int64_t head = 0; head < weights.shape()[0]; ++head) {
      report.attention({sentence, kind, static_cast<int>(block + 1), static_cast<int>(head + 1),
                        std::vector<std::string>(queries.begin(), queries.begin() + rows),
                        std::vector<std::string>(keys.begin(), keys.begin() + cols),
                        head_cells(weights, head, rows, cols)});
    }
  };
  for (size_t block = 0; block < maps.encoder.size(); ++block) {
    add("encoder self", block, maps.encoder[block], source, source);
    add("decoder self", block, maps.decoder_self[block], inputs, inputs);
    add("encoder–decoder", block, maps.decoder_cross[block], inputs, source);
  }
}

// Every head of every block for the sentence `translation` (the last predict).
void save_all_heads(const fs::path& folder, const Transformer& model,
                    const SentenceTranslation& translation) {
  fs::create_directories(folder);
  const auto [source, inputs] = map_words(translation);
  const transformer::AttentionMaps& maps = model.attention_maps();
  for (size_t block = 0; block < maps.encoder.size(); ++block) {
    const std::string number = std::to_string(block + 1);
    save_head_maps(folder, fmt::format("encoder_block{}", number),
                   fmt::format("Encoder self-attention, block {}", number), maps.encoder[block],
                   source, source);
    save_head_maps(folder, fmt::format("decoder_self_block{}", number),
                   fmt::format("Decoder self-attention, block {}", number),
                   maps.decoder_self[block], inputs, inputs);
    save_head_maps(folder, fmt::format("decoder_cross_block{}", number),
                   fmt::format("Encoder–decoder attention, block {}", number),
                   maps.decoder_cross[block], inputs, source);
  }
}

}  // namespace

// ---------------------------------------------------------------- flags

void declare_transformer_train_flags(cli::Parser& parser, TransformerTrainFlags& flags) {
  declare_data_flags(parser, flags);
  parser
      .flag("hidden", flags.hidden, "num_hiddens d of every position's vector",
            cli::size_at_most(kMaxHidden))
      .flag("blocks", flags.blocks, "Transformer blocks of encoder and of decoder",
            cli::size_at_most(kMaxLayers))
      .flag("heads", flags.heads, "attention heads (must divide --hidden)",
            cli::size_at_most(kMaxHidden))
      .flag("ffn", flags.ffn, "hidden size of the position-wise feed-forward network",
            cli::size_at_most(kMaxFfn))
      .flag("dropout", flags.dropout, "dropout in every AddNorm, the encodings and the attention",
            cli::in_range(0, 0.99));
  declare_training_flags(parser, flags,
                         "the sentence whose attention heads are drawn in attention/");
}

void declare_transformer_translate_flags(cli::Parser& parser, TransformerTranslateFlags& flags) {
  parser.flag("checkpoint", flags.checkpoint, "checkpoint written by train --recipe transformer")
      .flag("attention", flags.attention,
            "folder for one heatmap per sentence (attention_<line>.svg: the last block's "
            "encoder–decoder attention, averaged over the heads)");
  translate_report::declare_report_flags(parser, flags.report, flags.report_maps,
                                         "every head's attention maps");
  translate_beam::declare_beam_flags(parser, flags.beam);
}

void declare_transformer_eval_flags(cli::Parser& parser, BatchedEvalFlags& flags) {
  flags.checkpoint = TransformerTranslateFlags().checkpoint;
  declare_batched_eval_flags(parser, flags);
}

// ---------------------------------------------------------------- commands

int run_transformer_train(const TransformerTrainFlags& given) {
  std::ostream& out = given.json ? std::cerr : std::cout;  // with --json stdout holds one line
  // A resumed run takes its settings from the checkpoint (batched_resume.hpp).
  std::optional<ResumePoint> resumed;
  TransformerTrainFlags flags = given;
  if (!given.resume.empty()) {
    resumed = read_resume_point(given.resume, kTransformerRecipe);
    apply_resume_settings(given.resume, resumed->settings, flags);
    check_resume_epochs(given.resume, *resumed, flags.epochs);
  }
  use_threads(flags.threads, flags.replicas);
  check_train_paths_apart({.data = flags.data,
                           .data_from_checkpoint = resumed && !given.given.contains("data"),
                           .resume = flags.resume,
                           .out = flags.out,
                           .pictures = fs::path(flags.out) / "attention",
                           .pictures_pattern = "*_head*.svg"});
  check(flags.hidden % flags.heads == 0,
        "--heads {} does not divide --hidden {}; each head gets hidden / heads numbers",
        flags.heads, flags.hidden);
  check_attention_sentence(flags.attention_sentence);
  const text::PairSet set = read_data(flags.data, flags.direction);
  text::require_pairs(set.pairs, set.report, "to train on");
  const text::BatchedData data = prepare_data(
      set, {flags.data, flags.direction, flags.num_examples, flags.min_freq, flags.num_steps}, out);
  if (resumed) check_resume_vocabularies(flags.resume, *resumed, data);
  const TransformerCheckpoint info{
      TransformerOptions(data.source_vocabulary.size(), data.target_vocabulary.size())
          .num_hiddens(flags.hidden)
          .num_blocks(flags.blocks)
          .num_heads(flags.heads)
          .ffn_num_hiddens(flags.ffn)
          .dropout(flags.dropout),
      {kTransformerRecipe, data.source_vocabulary, data.target_vocabulary, flags.num_steps,
       flags.data, flags.direction, data.source.rows}};
  const BatchedTrainingOptions training = training_options(flags);

  Generator generator(static_cast<uint64_t>(flags.seed));
  Transformer model(info.model, generator);
  BatchedTrainer trainer(model, data, training);
  if (resumed) {
    nn::load_training_state(flags.resume, model, &trainer.optimizer());
    trainer.restore(resumed->position);
  }
  cli::prepare_output_folder("--out", flags.out);

  out << fmt::format(
      "Training {} parameters (d = {}, {} blocks, {} heads, FFN {}, dropout {}) for {} epochs, "
      "batch {}, lr {}, {}\n",
      model.parameter_count(), flags.hidden, flags.blocks, flags.heads, flags.ffn, flags.dropout,
      flags.epochs, flags.batch, flags.lr, threads_text(flags.replicas));
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
  outputs.recipe = kTransformerRecipe;
  if (graph.captured()) outputs.graph_svg = plot::graph_svg(graph.picture());
  outputs.folder = flags.out;
  outputs.num_steps = flags.num_steps;
  outputs.attention_sentence = flags.attention_sentence;
  outputs.json = flags.json;
  outputs.pictures = "attention/*.svg (every head)";
  outputs.draw_attention = [&model](const fs::path& folder, const SentenceTranslation& drawn) {
    save_all_heads(folder / "attention", model, drawn);
  };
  outputs.report_attention = [&model](cli::RunReport& report, const std::string& sentence,
                                      const SentenceTranslation& translation) {
    report_all_heads(report, model, sentence, translation);
  };
  outputs.settings = report_settings(flags,
                                     {{"num_hiddens d", std::to_string(flags.hidden)},
                                      {"blocks", std::to_string(flags.blocks)},
                                      {"heads", std::to_string(flags.heads)},
                                      {"ffn", std::to_string(flags.ffn)}},
                                     model.parameter_count());
  finish_training(model, set, data, trainer.report(), outputs, out);
  return 0;
}

int run_transformer_translate(const TransformerTranslateFlags& flags, std::istream& in,
                              std::ostream& out, std::ostream& err) {
  translate_report::check_paths_apart(
      {.checkpoint = flags.checkpoint, .attention = flags.attention, .report = flags.report});
  const TransformerCheckpoint info = read_checkpoint(flags.checkpoint);
  const std::unique_ptr<Transformer> model = load_transformer(flags.checkpoint, info);
  return translate_lines(
      *model, info.trained.source_vocabulary, info.trained.target_vocabulary,
      info.trained.num_steps, flags.beam, flags.attention,
      [](const fs::path& path, const SentenceTranslation& translation) {
        save_attention_map(path, translation, kMapTitle);
      },
      flags.report, flags.report_maps,
      [&model](cli::RunReport& report, const std::string& sentence,
               const SentenceTranslation& translation) {
        report_all_heads(report, *model, sentence, translation);
      },
      in, out, err);
}

int run_transformer_eval(const BatchedEvalFlags& flags) {
  const TransformerCheckpoint info = read_checkpoint(flags.checkpoint);
  const std::unique_ptr<Transformer> model = load_transformer(flags.checkpoint, info);
  return evaluate_checkpoint(*model, info.trained, flags);
}

}  // namespace attograd::translate_transformer
