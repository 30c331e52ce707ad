// examples/translate/batched_resume.hpp — what a checkpoint of the batched
// and Transformer recipes holds so that `train --resume` continues exactly.
//
// Besides the parameters, Adam's state (nn::save_training_state, under
// "optimizer.") and the recipe's own description, two metadata entries:
//   "resume.settings"  the train flags that decide the run (data, model sizes,
//                      batch, lr, schedule, clip, seed, replicas), as JSON
//   "resume.progress"  translation::TrainingPosition as JSON: epochs and
//                      steps done, the batch order's and every dropout
//                      generator's state, the epoch in progress so far, and
//                      the loss of every complete epoch (for loss.svg)
// A resumed run takes its settings from the checkpoint and --epochs,
// --print-every, --checkpoint-every, --out, --threads and --json from the
// command line; it computes what the uninterrupted run would have.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "models/translation/batched_translator.hpp"
#include "nn/safetensors.hpp"

namespace attograd::translate_batched {

// The metadata entries above for `position` and the run's `settings`.
void add_resume_entries(nn::Metadata& metadata, const nlohmann::json& settings,
                        const translation::TrainingPosition& position);

// What --resume reads from a checkpoint of `recipe`.
struct ResumePoint {
  nlohmann::json settings;
  translation::TrainingPosition position;
  std::string source_vocabulary;  // the vocabularies' text forms, to compare with the data's
  std::string target_vocabulary;
};
// Throws attograd::Error naming the path (and the entry) when the file is
// not a checkpoint of `recipe` or has no resume entries, or they are damaged.
ResumePoint read_resume_point(const std::string& path, const std::string& recipe);

// The flags a resumed run takes from the checkpoint (see the top), shared by
// both recipes' flag structs; the model's sizes come along.
template <typename TrainFlags>
nlohmann::json resume_settings(const TrainFlags& flags) {
  nlohmann::json settings = {{"data", flags.data},
                             {"direction", flags.direction},
                             {"num_examples", flags.num_examples},
                             {"min_freq", flags.min_freq},
                             {"num_steps", flags.num_steps},
                             {"hidden", flags.hidden},
                             {"dropout", flags.dropout},
                             {"batch", flags.batch},
                             {"lr", flags.lr},
                             {"lr_schedule", flags.lr_schedule},
                             {"clip", flags.clip},
                             {"seed", flags.seed},
                             {"replicas", flags.replicas}};
  if constexpr (requires { flags.embed; }) {
    settings["embed"] = flags.embed;
    settings["layers"] = flags.layers;
  }
  if constexpr (requires { flags.blocks; }) {
    settings["blocks"] = flags.blocks;
    settings["heads"] = flags.heads;
    settings["ffn"] = flags.ffn;
  }
  return settings;
}

// Throws attograd::Error naming the checkpoint unless the data's vocabularies
// are the checkpoint's (the data file changed since).
void check_resume_vocabularies(const std::string& path, const ResumePoint& point,
                               const text::BatchedData& data);

// `value` (the flag's value on the command line) becomes settings[key].
// Throws attograd::Error naming the checkpoint and the key when the entry is
// missing or of another type, and naming --<flag> when the command line named
// the flag (`given`) with a value that is not the checkpoint's: a resumed run
// cannot change it.
void resume_setting(const std::string& path, const nlohmann::json& settings, const char* key,
                    const char* flag, int64_t& value, bool given);
void resume_setting(const std::string& path, const nlohmann::json& settings, const char* key,
                    const char* flag, double& value, bool given);
void resume_setting(const std::string& path, const nlohmann::json& settings, const char* key,
                    const char* flag, std::string& value, bool given);

// Sets the flags resume_settings saved.
template <typename TrainFlags>
void apply_resume_settings(const std::string& path, const nlohmann::json& settings,
                           TrainFlags& flags) {
#define ATTOGRAD_RESUME_SETTING(key, flag, member) \
  resume_setting(path, settings, key, flag, flags.member, flags.given.contains(flag))
  ATTOGRAD_RESUME_SETTING("data", "data", data);
  ATTOGRAD_RESUME_SETTING("direction", "direction", direction);
  ATTOGRAD_RESUME_SETTING("num_examples", "num-examples", num_examples);
  ATTOGRAD_RESUME_SETTING("min_freq", "min-freq", min_freq);
  ATTOGRAD_RESUME_SETTING("num_steps", "num-steps", num_steps);
  ATTOGRAD_RESUME_SETTING("hidden", "hidden", hidden);
  ATTOGRAD_RESUME_SETTING("dropout", "dropout", dropout);
  ATTOGRAD_RESUME_SETTING("batch", "batch", batch);
  ATTOGRAD_RESUME_SETTING("lr", "lr", lr);
  ATTOGRAD_RESUME_SETTING("lr_schedule", "lr-schedule", lr_schedule);
  ATTOGRAD_RESUME_SETTING("clip", "clip", clip);
  ATTOGRAD_RESUME_SETTING("seed", "seed", seed);
  ATTOGRAD_RESUME_SETTING("replicas", "replicas", replicas);
  if constexpr (requires { flags.embed; }) {
    ATTOGRAD_RESUME_SETTING("embed", "embed", embed);
    ATTOGRAD_RESUME_SETTING("layers", "layers", layers);
  }
  if constexpr (requires { flags.blocks; }) {
    ATTOGRAD_RESUME_SETTING("blocks", "blocks", blocks);
    ATTOGRAD_RESUME_SETTING("heads", "heads", heads);
    ATTOGRAD_RESUME_SETTING("ffn", "ffn", ffn);
  }
#undef ATTOGRAD_RESUME_SETTING
}

// Throws attograd::Error naming --epochs when the checkpoint has done more
// epochs than `epochs`.
void check_resume_epochs(const std::string& path, const ResumePoint& point, int64_t epochs);

}  // namespace attograd::translate_batched
