// examples/translate/tutorial_recipe.cpp — the flags of the tutorial recipe,
// its translate and eval commands, and the helpers all three commands share
// (see tutorial_recipe.hpp; the train command is in tutorial_train.cpp).
#include "examples/translate/tutorial_recipe.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "examples/common/divergence.hpp"
#include "examples/common/output_folder.hpp"
#include "examples/translate/checkpoint_sizes.hpp"
#include "examples/translate/report_parts.hpp"
#include "examples/translate/shown_text.hpp"
#include "examples/translate/size_limits.hpp"
#include "models/seq2seq/seq2seq.hpp"
#include "models/seq2seq/training.hpp"
#include "models/text/normalize.hpp"
#include "plot/svg_plot.hpp"
#include "tensor/printable.hpp"

namespace attograd::translate_tutorial {

using namespace attograd::seq2seq;
namespace fs = std::filesystem;

// ---------------------------------------------------------------- flags

void declare_train_flags(cli::Parser& parser, TrainFlags& flags) {
  parser.flag("data", flags.data, "tab-separated English/French pairs (Tatoeba)")
      .flag("reverse", flags.reverse, "translate English -> French instead")
      .flag("hidden", flags.hidden, "hidden size H of embeddings and GRU states",
            cli::size_at_most(kMaxHidden))
      .choice("decoder", flags.decoder, {"location", "bahdanau"},
              "attention: location (the tutorial's AttnDecoderRNN) or bahdanau (additive)")
      .flag("dropout", flags.dropout, "dropout on the decoder's embedded input",
            cli::in_range(0, 0.99))
      .flag("lr", flags.lr, cli::learning_rate_help("SGD learning rate of encoder and decoder"),
            cli::positive())
      .flag("teacher-forcing", flags.teacher_forcing,
            "probability of teacher forcing for a pair (else greedy feeding)", cli::in_range(0, 1))
      .flag("iters", flags.iters, "training iterations, one random pair each",
            cli::size_at_most(kMaxIterations))
      .flag("seed", flags.seed, "seed of the initial weights, the pairs, the coins and dropout",
            cli::non_negative())
      .flag("split-seed", flags.split_seed, "seed of the train/validation split",
            cli::non_negative())
      .flag("validation", flags.validation, "share of source sentences held out",
            cli::in_range(0, 0.9))
      .flag("print-every", flags.print_every, "iterations per progress line and loss-table row",
            cli::positive())
      .flag("plot-every", flags.plot_every, "iterations per point of the loss curve",
            cli::positive())
      .flag("checkpoint-every", flags.checkpoint_every,
            "iterations between checkpoints (0: only at the end and on Ctrl-C or SIGTERM)",
            cli::non_negative())
      .flag("out", flags.out, "folder for the checkpoint and the pictures (created if missing)")
      .flag("resume", flags.resume,
            "continue from this checkpoint, with its model, rates, seed and data split (a flag "
            "that disagrees with it is an error); --iters is the new total")
      .flag("examples", flags.examples,
            "translations printed at the end, of training and of held-out pairs (each drawn "
            "without replacement, so at most the split's size)",
            cli::count_at_most(kMaxExamples))
      .flag("json", flags.json, "print one JSON summary line on stdout (the report goes to stderr)")
      .flag("dense-embeddings", flags.dense_embeddings,
            "update the embeddings densely (slower; the same numbers)")
      .flag("threads", flags.threads,
            "threads for the large matrix products (results do not depend on it)",
            cli::size_at_most(kMaxThreads));
  cli::declare_inspect_flags(parser, flags.inspect);
}

void declare_translate_flags(cli::Parser& parser, TranslateFlags& flags) {
  parser.flag("checkpoint", flags.checkpoint, "checkpoint written by train")
      .flag("attention", flags.attention,
            "folder for one attention heatmap per sentence (attention_<line>.svg)");
  translate_report::declare_report_flags(parser, flags.report, flags.report_maps,
                                         "the decoder's attention maps");
  translate_beam::declare_beam_flags(parser, flags.beam);
}

void declare_eval_flags(cli::Parser& parser, EvalFlags& flags) {
  parser.flag("checkpoint", flags.checkpoint, "checkpoint written by train")
      .flag("data", flags.data, "pairs to score (default: the checkpoint's validation split)")
      .flag("examples", flags.examples,
            "examples to print, drawn by --seed without replacement (at most one per source "
            "sentence)",
            cli::count_at_most(kMaxExamples))
      .flag("seed", flags.seed, "seed for picking the examples", cli::non_negative())
      .flag("json", flags.json, "print one JSON summary line on stdout");
  translate_beam::declare_beam_flags(parser, flags.beam);
}

// ---------------------------------------------------------------- shared

CheckpointInfo read_checked_checkpoint_info(const std::string& path) {
  const translate_checkpoint::CheckpointSizes sizes(path);  // the header only, no values yet
  translate_checkpoint::require_recipe(path, sizes.metadata(), "tutorial");
  CheckpointInfo info = read_checkpoint_info(path);
  // Every size that builds the model, against the weights it sizes.
  const Seq2SeqOptions& model = info.model;
  sizes.require("source_vocabulary", model.source_vocabulary(), "encoder.embedding.weight", 0);
  sizes.require("target_vocabulary", model.target_vocabulary(), "decoder.embedding.weight", 0);
  sizes.require("hidden_size", model.hidden_size(), "encoder.embedding.weight", 1);
  if (model.decoder() == DecoderKind::location) {
    sizes.require("max_length", model.max_length(), "decoder.attn.weight", 0);
  }
  check_checkpoint_size(path, "max_length", model.max_length(), 2, kMaxSteps);
  sizes.require_dropout(model.dropout());
  return info;
}

std::vector<size_t> draw_without_replacement(size_t population, int64_t count, Generator& random) {
  const size_t drawn = std::min(population, static_cast<size_t>(std::max<int64_t>(count, 0)));
  std::vector<size_t> order(population);
  for (size_t i = 0; i < population; ++i) order[i] = i;
  for (size_t i = 0; i < drawn; ++i) std::swap(order[i], order[i + random.below(population - i)]);
  order.resize(drawn);
  return order;
}

void print_skipped(std::ostream& out, const text::ReadReport& report, size_t limit) {
  size_t shown = 0;
  for (; shown < report.skipped_examples.size() && shown < limit; ++shown) {
    out << "warning: " << report.skipped_examples[shown].message << " (line skipped)\n";
  }
  const auto skipped = static_cast<size_t>(report.lines_skipped());
  if (skipped > shown) {
    out << fmt::format("warning: … and {} more skipped lines\n", skipped - shown);
  }
}

namespace {

// The columns of a map: the source words, <EOS>, and for the location
// decoder the padded slots up to max_length.
std::vector<std::string> map_columns(const SentenceTranslation& translation, DecoderKind decoder,
                                     int64_t max_length) {
  std::vector<std::string> columns = translation.source_words;
  columns.push_back("<EOS>");
  if (decoder == DecoderKind::location) {
    while (static_cast<int64_t>(columns.size()) < max_length) columns.push_back("<pad>");
  }
  return columns;
}

}  // namespace

void report_sentence(cli::RunReport& report, const std::string& sentence,
                     const std::string& reference, const SentenceTranslation& translation,
                     DecoderKind decoder, int64_t max_length) {
  report.translation(translate_report::translation_row(translation, sentence, reference));
  report.attention(translate_report::decoder_attention(
      translation, sentence, fmt::format("decoder → encoder ({})", to_string(decoder)),
      map_columns(translation, decoder, max_length), "<EOS>"));
}

void save_attention_map(const fs::path& path, const SentenceTranslation& translation,
                        DecoderKind decoder, int64_t max_length) {
  const std::vector<std::string> columns = map_columns(translation, decoder, max_length);
  std::vector<std::string> rows = translation.output_words;
  if (translation.best.reached_end) rows.push_back("<EOS>");
  const size_t width = columns.size();
  std::vector<double> values;
  for (int64_t step = 0; step < translation.best.length; ++step) {
    for (size_t column = 0; column < width; ++column) {
      values.push_back(translation.best.attention[static_cast<size_t>(step * max_length) + column]);
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

// ---------------------------------------------------------------- translate

namespace {

// Unknown words quoted in one warning; the rest are counted.
constexpr size_t kMaxUnknownWordsShown = 10;

// Warns on stderr about the words of stdin line `line_number` that the model
// could not read: unknown ones (returns how many) and those cut off. The
// words are quoted escaped and cut (printable), at most kMaxUnknownWordsShown
// of them, so the warning stays short however long the line.
int64_t warn_about_unread_words(const SentenceTranslation& translation, int64_t line_number,
                                int64_t max_length) {
  int64_t unknown = 0;
  if (!translation.unknown_words.empty()) {
    std::string words;
    const size_t count = translation.unknown_words.size();
    for (size_t i = 0; i < count && i < kMaxUnknownWordsShown; ++i) {
      words += (words.empty() ? "'" : ", '") + printable(translation.unknown_words[i]) + "'";
    }
    if (count > kMaxUnknownWordsShown) {
      words += fmt::format(" and {} more", count - kMaxUnknownWordsShown);
    }
    std::cerr << fmt::format("warning: stdin:{}: {} unknown word{} mapped to <unk>: {}\n",
                             line_number, translation.unknown_words.size(),
                             translation.unknown_words.size() == 1 ? "" : "s", words);
    unknown = static_cast<int64_t>(translation.unknown_words.size());
  }
  if (translation.dropped_words > 0) {
    std::cerr << fmt::format(
        "warning: stdin:{}: the model reads at most {} words; the last {} were cut off\n",
        line_number, max_length - 1, translation.dropped_words);
  }
  return unknown;
}

}  // namespace

int run_translate(const TranslateFlags& flags) {
  translate_report::check_paths_apart(
      {.checkpoint = flags.checkpoint, .attention = flags.attention, .report = flags.report});
  if (!flags.attention.empty()) cli::prepare_output_folder("--attention", flags.attention);
  if (!flags.report.empty()) translate_report::prepare_report_folder(flags.report);
  cli::RunReport report("translate translate");
  report.keep_maps_of(flags.report_maps, "--report-maps")
      .setting("checkpoint", flags.checkpoint)
      .setting("decoding", translate_beam::describe(flags.beam));
  const CheckpointInfo info = read_checked_checkpoint_info(flags.checkpoint);
  const std::unique_ptr<Seq2Seq> model = load_model(flags.checkpoint, info);
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
        translate_sentence(*model, info.source_vocabulary, info.target_vocabulary, *normalized,
                           translate_beam::beam_options(flags.beam));
    unknown += warn_about_unread_words(translation, line_number, info.model.max_length());
    if (flags.beam.nbest) {
      translate_beam::print_nbest_lines(std::cout, line_number, translation.nbest);
    } else {
      std::cout << text::join_words(translation.output_words) << "\n" << std::flush;
    }
    if (!flags.attention.empty()) {
      save_attention_map(fs::path(flags.attention) / fmt::format("attention_{}.svg", line_number),
                         translation, info.model.decoder(), info.model.max_length());
    }
    if (!flags.report.empty()) {
      report_sentence(report, fmt::format("{}: {}", line_number, *normalized), "", translation,
                      info.model.decoder(), info.model.max_length());
    }
    ++translated;
  }
  if (!flags.report.empty()) {
    report.figure("sentences translated", std::to_string(translated));
    report.save(flags.report);
  }
  std::cerr << fmt::format("translated {} sentence{}; {} unknown word{} mapped to <unk>\n",
                           translated, translated == 1 ? "" : "s", unknown,
                           unknown == 1 ? "" : "s");
  return 0;
}

// ---------------------------------------------------------------- eval

int run_eval(const EvalFlags& flags) {
  const CheckpointInfo info = read_checked_checkpoint_info(flags.checkpoint);
  const std::unique_ptr<Seq2Seq> model = load_model(flags.checkpoint, info);
  std::vector<text::SentencePair> pairs;
  std::string name;
  if (flags.data.empty()) {
    // The held-out split of the training data, rebuilt from the checkpoint's settings.
    const Corpus corpus = load_corpus(info.data);
    check_vocabularies(flags.checkpoint, info, corpus.source_vocabulary, corpus.target_vocabulary);
    pairs = corpus.split.validation;
    name = fmt::format("the validation split of {}", printable(info.data.path().string(), 300));
  } else {
    const text::PairSet set =
        text::read_pairs(flags.data, text::ReadOptions().reverse(info.data.reverse()));
    print_skipped(std::cerr, set.report);
    text::require_pairs(set.pairs, set.report, "to evaluate");
    pairs = set.pairs;
    name = printable(flags.data, 300);
  }
  const Evaluation evaluation = evaluate(*model, info.source_vocabulary, info.target_vocabulary,
                                         pairs, translate_beam::beam_options(flags.beam));
  std::ostream& out = flags.json ? std::cerr : std::cout;
  const text::BleuDetails& bleu = evaluation.corpus;
  out << fmt::format(
      "BLEU-4 {:.4f} on {} ({} pairs, {} source sentences); precisions {:.3f} {:.3f} {:.3f} "
      "{:.3f}, brevity penalty {:.3f}\n",
      bleu.score, name, pairs.size(), evaluation.pairs.size(), bleu.precisions[0],
      bleu.precisions[1], bleu.precisions[2], bleu.precisions[3], bleu.brevity_penalty);
  out << fmt::format("{} unknown source words mapped to <unk>, {} cut off beyond {} words\n",
                     evaluation.unknown_words, evaluation.dropped_words,
                     info.model.max_length() - 1);
  out << "decoding: " << translate_beam::describe(flags.beam) << "\n\n";
  Generator random(static_cast<uint64_t>(flags.seed));
  for (const size_t index :
       draw_without_replacement(evaluation.pairs.size(), flags.examples, random)) {
    const translation::EvaluatedPair& example = evaluation.pairs[index];
    out << "> " << translate_text::shown_sentence(example.source) << "\n";
    for (const std::string& reference : example.references) {
      out << "= " << translate_text::shown_sentence(reference) << "\n";
    }
    out << "< " << translate_text::shown_sentence(example.output) << "\n";
    if (flags.beam.nbest) translate_beam::print_nbest_block(out, example.nbest);
    out << "\n";
  }
  if (flags.json) {
    const nlohmann::json summary = {{"bleu", bleu.score},
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

}  // namespace attograd::translate_tutorial
