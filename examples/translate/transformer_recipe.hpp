// examples/translate/transformer_recipe.hpp — `translate --recipe transformer`:
// d2l's Transformer on the batched recipe's English -> French data
// (models/transformer/transformer.hpp has the model, docs/attention.md the
// walk-through). The data, training loop, checkpoints, translate and eval are
// the batched recipe's (batched_recipe.hpp, "shared pieces").
//
//   translate train --recipe transformer                # 600 pairs, 200 epochs
//   translate train --recipe transformer --epochs 20 --threads 1
//   echo "i'm home ." | translate translate --recipe transformer --attention out/maps
//   translate eval --recipe transformer --offset 600    # BLEU on pairs never seen
//
// train writes, besides checkpoint.safetensors and loss.svg, one heatmap per
// head into attention/: encoder_block<i>_head<j>.svg (self-attention over the
// source), decoder_self_block<i>_head<j>.svg and decoder_cross_block<i>_head<j>.svg
// (encoder–decoder attention) for --attention-sentence.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <set>
#include <string>

#include "examples/common/cli.hpp"
#include "examples/translate/batched_recipe.hpp"

namespace attograd::translate_transformer {

struct TransformerTrainFlags {
  std::string data = "data/eng-fra.tsv";
  std::string direction = "eng-fra";
  int64_t num_examples = 600;
  int64_t min_freq = 2;
  int64_t num_steps = 10;
  int64_t hidden = 32;  // num_hiddens d
  int64_t blocks = 2;
  int64_t heads = 4;
  int64_t ffn = 64;  // the FFN's hidden size
  double dropout = 0.1;
  int64_t batch = 64;
  double lr = 0.005;
  std::string lr_schedule = "constant";  // see declare_training_flags
  int64_t epochs = 200;
  double clip = 1.0;
  int64_t seed = 0;
  int64_t threads = 0;  // 0: one per replica
  int64_t replicas = 1;
  int64_t print_every = 10;
  int64_t checkpoint_every = 0;  // epochs between checkpoints (0: only at the end)
  std::string resume;            // checkpoint to continue
  std::set<std::string> given;   // the flags named on the command line (as the batched recipe's)
  std::string attention_sentence = "i'm home .";
  std::string out = "out/translate_transformer";
  bool json = false;
};

struct TransformerTranslateFlags {
  std::string checkpoint = "out/translate_transformer/checkpoint.safetensors";
  std::string attention;  // folder for attention_<line>.svg, or "" for none
  std::string report;     // report.html of the sentences, or "" for none
  std::size_t report_maps =
      translate_report::kTransformerReportMaps;  // sentences whose maps it keeps
  translate_beam::BeamFlags beam;
};

void declare_transformer_train_flags(cli::Parser& parser, TransformerTrainFlags& flags);
void declare_transformer_translate_flags(cli::Parser& parser, TransformerTranslateFlags& flags);
// eval takes the batched recipe's flags, with this recipe's default checkpoint.
void declare_transformer_eval_flags(cli::Parser& parser,
                                    translate_batched::BatchedEvalFlags& flags);

int run_transformer_train(const TransformerTrainFlags& flags);
int run_transformer_translate(const TransformerTranslateFlags& flags, std::istream& in,
                              std::ostream& out, std::ostream& err);
int run_transformer_eval(const translate_batched::BatchedEvalFlags& flags);

}  // namespace attograd::translate_transformer
