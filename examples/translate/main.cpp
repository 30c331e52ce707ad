// examples/translate/main.cpp — French -> English translation with a GRU
// encoder and an attention decoder, the PyTorch seq2seq tutorial's recipe
// (models/seq2seq/seq2seq.hpp has the model, models/translation/ the data and the
// training loop, docs/translation.md the walk-through).
//
//   translate train                          # the full recipe: 75,000 iterations
//   translate train --iters 3000             # a short run: a minute or less
//   translate train --decoder bahdanau       # additive attention instead
//   translate train --resume out/translate/checkpoint.safetensors --iters 100000
//   echo "je suis fatigue ." | translate translate --attention out/maps
//   translate eval                           # BLEU on the held-out split
//   translate eval --beam 5                  # … decoded by beam search (beam_flags.hpp)
//   translate train --recipe batched         # d2l's batched recipe (batched_recipe.hpp)
//   translate train --recipe transformer     # d2l's Transformer (transformer_recipe.hpp)
//
// Every flag has a default (see --help). Bad input — a missing or empty data
// file, a checkpoint that does not fit, an unknown flag — ends with a one-line
// "error: …" and exit status 2, and leaves no half-written file behind.
//
// This file only builds the command line and picks the recipe; the commands
// are in tutorial_recipe.hpp (the default) and batched_recipe.hpp.
#include <iostream>
#include <string>
#include <vector>

#include "examples/common/cli.hpp"
#include "examples/translate/batched_recipe.hpp"
#include "examples/translate/transformer_recipe.hpp"
#include "examples/translate/tutorial_recipe.hpp"

using namespace attograd;

namespace {

// The recipe decides which flags the commands take, so it is read before the
// parser is built: the value after the last `--recipe` (or `--recipe=…`).
// Anything but "tutorial", "batched" or "transformer" is left to the parser's `choice` to
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
  translate_tutorial::TrainFlags train;
  translate_tutorial::TranslateFlags translate;
  translate_tutorial::EvalFlags eval;
  cli::Parser parser("translate",
                     "French -> English translation with a GRU encoder and an attention decoder\n"
                     "(the PyTorch seq2seq tutorial). Commands: train, translate, eval.");

  // `recipe` is what the parser checks and --help shows; `batched` is read
  // from argv beforehand because it decides which flags exist.
  std::string recipe = "tutorial";
  const bool batched = recipe_from_arguments(argc, argv) == "batched";
  const bool transformer = recipe_from_arguments(argc, argv) == "transformer";
  const std::vector<std::string> recipes = {"tutorial", "batched", "transformer"};
  const std::string recipe_help =
      "tutorial: one pair at a time, the PyTorch tutorial (default); batched: d2l's padded "
      "mini-batches with Bahdanau attention (English -> French); transformer: d2l's Transformer on "
      "the same data. Each recipe has its own flags: "
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
  translate_transformer::TransformerTrainFlags transformer_train;
  translate_transformer::TransformerTranslateFlags transformer_translate;
  if (transformer) {
    translate_transformer::declare_transformer_train_flags(train_parser, transformer_train);
    translate_transformer::declare_transformer_translate_flags(translate_parser,
                                                               transformer_translate);
    translate_transformer::declare_transformer_eval_flags(eval_parser, batched_eval);
  } else if (batched) {
    translate_batched::declare_batched_train_flags(train_parser, batched_train);
    translate_batched::declare_batched_translate_flags(translate_parser, batched_translate);
    translate_batched::declare_batched_eval_flags(eval_parser, batched_eval);
  } else {
    translate_tutorial::declare_train_flags(train_parser, train);
    translate_tutorial::declare_translate_flags(translate_parser, translate);
    translate_tutorial::declare_eval_flags(eval_parser, eval);
  }

  return cli::run_main(parser, argc, argv, [&] {
    if (transformer) {
      if (parser.command() == "train") {
        transformer_train.given = parser.given();
        return translate_transformer::run_transformer_train(transformer_train);
      }
      if (parser.command() == "translate") {
        return translate_transformer::run_transformer_translate(transformer_translate, std::cin,
                                                                std::cout, std::cerr);
      }
      return translate_transformer::run_transformer_eval(batched_eval);
    }
    if (batched) {
      if (parser.command() == "train") {
        batched_train.given = parser.given();
        return translate_batched::run_batched_train(batched_train);
      }
      if (parser.command() == "translate") {
        return translate_batched::run_batched_translate(batched_translate, std::cin, std::cout,
                                                        std::cerr);
      }
      return translate_batched::run_batched_eval(batched_eval);
    }
    if (parser.command() == "train") {
      train.given = parser.given();
      return translate_tutorial::run_train(train);
    }
    if (parser.command() == "translate") return translate_tutorial::run_translate(translate);
    return translate_tutorial::run_eval(eval);
  });
}
